//! Property tests for [`Quantity::parse`]: generated quantities agree with an exact
//! big-integer model of apimachinery's rules (rounding up to milli units, binary suffixes
//! capped at 2^63-1 units, decimal suffixes and exponents exact), values round-trip through
//! the canonical string, and no input of any bytes panics or gives a multi-line error.
//!
//! Runs are reproducible: a fixed seed (override with `PROPTEST_RNG_SEED`) and a bounded
//! number of cases per property (override with `PROPTEST_CASES` for a longer run by hand).
//! Each property prints how many inputs it tried (`cargo test -- --nocapture`).

use kubesched_framework::quantity::{MAX_QUANTITY_LEN, Quantity, QuantityErrorKind};
use num_bigint::BigInt;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

const SEED: u64 = 0x6b75_6265_7363_6864;

fn runner(default_cases: u32) -> TestRunner {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    TestRunner::new(Config {
        cases: env("PROPTEST_CASES").map_or(default_cases, |n| n as u32),
        rng_seed: RngSeed::Fixed(env("PROPTEST_RNG_SEED").unwrap_or(SEED)),
        failure_persistence: None,
        ..Config::default()
    })
}

/// Runs `test` on `cases` inputs from `strategy` and reports how many were tried.
fn check<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let tried = std::cell::Cell::new(0u64);
    let result = runner(default_cases).run(&strategy, |input| {
        tried.set(tried.get() + 1);
        test(input)
    });
    eprintln!("{name}: tried {} generated inputs", tried.get());
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

/// The parts of a well-formed quantity.
#[derive(Debug, Clone)]
struct Parts {
    negative: Option<bool>,
    int: String,
    frac: Option<String>,
    suffix: String,
}

impl Parts {
    fn text(&self) -> String {
        let sign = match self.negative {
            None => "",
            Some(true) => "-",
            Some(false) => "+",
        };
        match &self.frac {
            Some(frac) => format!("{sign}{}.{frac}{}", self.int, self.suffix),
            None => format!("{sign}{}{}", self.int, self.suffix),
        }
    }

    /// The value in milli units by apimachinery's rules, computed exactly with big integers
    /// (independent of the parser's own arithmetic).
    fn model_milli(&self) -> i128 {
        let frac = self.frac.clone().unwrap_or_default();
        let digits = format!("{}{frac}", self.int);
        let n: BigInt = if digits.is_empty() {
            BigInt::from(0)
        } else {
            digits.parse().unwrap()
        };
        let d = frac.len() as u32;
        let ten = BigInt::from(10);
        let (mut num, mut den) = (n, ten.pow(d));
        let binary = match self.suffix.as_str() {
            "Ki" => Some(10),
            "Mi" => Some(20),
            "Gi" => Some(30),
            "Ti" => Some(40),
            "Pi" => Some(50),
            "Ei" => Some(60),
            _ => None,
        };
        let exp10: i64 = match self.suffix.as_str() {
            "" => 0,
            "n" => -9,
            "u" => -6,
            "m" => -3,
            "k" => 3,
            "M" => 6,
            "G" => 9,
            "T" => 12,
            "P" => 15,
            "E" => 18,
            _ if binary.is_some() => 0,
            s => s[1..].parse().unwrap(),
        };
        if let Some(b) = binary {
            num <<= b;
            // Units num/den are capped at 2^63-1.
            let max = BigInt::from(i64::MAX);
            if num > &max * &den {
                return self.signed(i128::from(i64::MAX) * 1000);
            }
        }
        let shift = exp10 + 3;
        if shift >= 0 {
            num *= ten.pow(shift as u32);
        } else {
            den *= ten.pow((-shift) as u32);
        }
        // Round up (away from zero on the magnitude).
        let milli = (&num + &den - 1) / &den;
        let milli = i128::try_from(milli).unwrap_or(i128::MAX);
        self.signed(milli)
    }

    fn signed(&self, magnitude: i128) -> i128 {
        if self.negative == Some(true) {
            -magnitude
        } else {
            magnitude
        }
    }
}

fn digits(max: usize) -> impl Strategy<Value = String> {
    let spell = |v: Vec<u8>| v.iter().map(|d| char::from(b'0' + d)).collect::<String>();
    prop_oneof![
        // Short numbers, where a single dropped digit decides the rounding.
        proptest::collection::vec(0u8..10, 0..6).prop_map(spell),
        proptest::collection::vec(0u8..10, 0..max).prop_map(spell),
        // Runs of zeros and nines, where carries and rounding happen.
        (0usize..max, 0usize..max, 0u8..10).prop_map(|(z, n, d)| format!(
            "{}{}{}",
            "0".repeat(z),
            "9".repeat(n),
            d
        )),
    ]
}

fn suffix() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ])
        .prop_map(str::to_string),
        (
            prop::sample::select(vec!["e", "E"]),
            prop::sample::select(vec!["", "+", "-"]),
            0u32..60
        )
            .prop_map(|(e, sign, n)| format!("{e}{sign}{n}")),
    ]
}

fn parts() -> impl Strategy<Value = Parts> {
    (
        prop::option::of(any::<bool>()),
        digits(30),
        prop::option::of(digits(30)),
        suffix(),
    )
        .prop_filter("at least one digit", |(_, int, frac, _)| {
            !int.is_empty() || frac.as_ref().is_some_and(|f| !f.is_empty())
        })
        .prop_map(|(negative, int, frac, suffix)| Parts {
            negative,
            int,
            frac,
            suffix,
        })
}

/// Well-formed quantities parse to the exact model value.
#[test]
fn parse_agrees_with_exact_model() {
    check("parse_agrees_with_exact_model", 2000, parts(), |p| {
        let text = p.text();
        let q = Quantity::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(q.milli(), p.model_milli(), "{}", text);
        Ok(())
    });
}

/// Leading zeros and trailing fraction zeros change nothing, however many there are.
#[test]
fn padding_changes_nothing() {
    check(
        "padding_changes_nothing",
        300,
        (parts(), 0usize..5000, 0usize..5000),
        |(p, lead, trail)| {
            let base = Quantity::parse(&p.text()).unwrap();
            let padded = Parts {
                int: format!("{}{}", "0".repeat(lead), p.int),
                frac: Some(format!(
                    "{}{}",
                    p.frac.clone().unwrap_or_default(),
                    "0".repeat(trail)
                )),
                ..p.clone()
            };
            prop_assert_eq!(
                Quantity::parse(&padded.text()).unwrap(),
                base,
                "{}",
                p.text()
            );
            Ok(())
        },
    );
}

/// parse -> canonical string -> parse gives the same value, and the canonical string is
/// stable.
#[test]
fn canonical_string_round_trips() {
    check("canonical_string_round_trips", 1000, parts(), |p| {
        let q = Quantity::parse(&p.text()).unwrap();
        let canonical = q.to_string();
        let again = Quantity::parse(&canonical)
            .map_err(|e| TestCaseError::fail(format!("{canonical}: {e}")))?;
        prop_assert_eq!(again, q, "{} -> {}", p.text(), canonical);
        prop_assert_eq!(again.to_string(), canonical);
        Ok(())
    });
    // Milli values of every size round-trip too.
    check(
        "canonical_string_round_trips(milli)",
        500,
        any::<i128>(),
        |m| {
            let q = Quantity::from_milli(m);
            prop_assert_eq!(Quantity::parse(&q.to_string()).unwrap(), q);
            Ok(())
        },
    );
}

/// apimachinery's canonical forms (`Quantity.String()`, from its TestQuantityParse and
/// TestQuantityString tables) name the same value as what they canonicalize.
#[test]
fn apimachinery_canonical_forms_agree() {
    let table = [
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1000m", "1"),
        ("1024Ki", "1Mi"),
        ("1.5", "1500m"),
        ("100.035k", "100035"),
        ("0.001", "1m"),
        ("0.0005k", "500m"),
        ("1e3", "1e3"),
        ("1.3E+6", "1300e3"),
        ("10.035M", "10035k"),
        ("0.5Mi", "512Ki"),
        ("0.05Gi", "53687091200m"),
        ("100.035Ki", "102435840m"),
        ("8Ki", "8Ki"),
        ("7Mi", "7Mi"),
        ("1.2e3", "1200"),
        ("1.7E18", "1700e15"),
        ("9.01", "9010m"),
        ("-1.5Gi", "-1536Mi"),
        ("1.", "1"),
        (".5", "500m"),
        ("5n", "5n"),
        ("4u", "4u"),
    ];
    for (input, canonical) in table {
        assert_eq!(
            Quantity::parse(input).unwrap(),
            Quantity::parse(canonical).unwrap(),
            "{input} vs {canonical}"
        );
    }
}

/// Arbitrary bytes (as text) and strings over the quantity alphabet never panic; an error
/// is one line.
#[test]
fn any_text_parses_or_errors_cleanly() {
    let alphabet: Vec<char> = "0123456789.+-eEinumkKMGTP xµ−\n".chars().collect();
    let near = proptest::collection::vec(prop::sample::select(alphabet), 0..40)
        .prop_map(|v| v.into_iter().collect::<String>());
    let strategy = prop_oneof![near, any::<String>(), ".{0,64}"];
    check("any_text_parses_or_errors_cleanly", 2000, strategy, |s| {
        match Quantity::parse(&s) {
            Ok(q) => {
                prop_assert_eq!(Quantity::parse(&q.to_string()).unwrap(), q, "{:?}", s);
            }
            Err(e) => {
                let text = e.to_string();
                prop_assert!(!text.contains('\n') && !text.is_empty(), "{:?}", text);
            }
        }
        Ok(())
    });
}

/// The length limit: exactly [`MAX_QUANTITY_LEN`] bytes is parsed, one more is the TooLong
/// error, whatever the bytes are.
#[test]
fn length_limit_is_exact() {
    for filler in ["1", "0", "9"] {
        let at = filler.repeat(MAX_QUANTITY_LEN);
        assert!(Quantity::parse(&at).is_ok(), "{filler}");
        let over = filler.repeat(MAX_QUANTITY_LEN + 1);
        assert_eq!(
            Quantity::parse(&over).unwrap_err().kind(),
            QuantityErrorKind::TooLong
        );
    }
}
