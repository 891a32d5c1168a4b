//! The fuzz targets' checks, shared by the libFuzzer entry points (`fuzz_targets/`, run
//! with `cargo fuzz` on nightly) and the stable driver (`examples/mutate.rs`). Each
//! function takes any bytes and panics when kubesched misbehaves on them: a panic inside
//! kubesched, an error or warning that is not one line or does not name the file, a
//! quantity that does not round-trip or disagrees with the exact model.

use kubesched_framework::NodeSearch;
use kubesched_framework::quantity::{MAX_QUANTITY_LEN, Quantity};
use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate};

/// The file name the scenario target gives its input; every message must name it.
pub const FILE: &str = "fuzz-input.yaml";

/// Scenario inputs longer than this are skipped (the point is the loader's logic, not the
/// YAML parser's speed on megabytes).
pub const MAX_SCENARIO_BYTES: usize = 64 * 1024;

/// A scenario is simulated only when it has at most this many nodes and pods each, so one
/// input stays within milliseconds.
pub const MAX_SIMULATED_OBJECTS: usize = 40;

/// Loads `data` as a scenario file; when it loads and is small, simulates it three ways
/// (every node, with preemption, and kube-scheduler's adaptive search).
pub fn scenario(data: &[u8]) {
    if data.len() > MAX_SCENARIO_BYTES {
        return;
    }
    // The CLI reads files as UTF-8 and says so when they are not.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let source = Source {
        name: FILE.to_string(),
        text: text.to_string(),
    };
    let loaded = match scenario::load(&[source]) {
        Ok(loaded) => loaded,
        Err(e) => {
            check_message("load error", &e.to_string());
            return;
        }
    };
    for warning in &loaded.warnings {
        check_message("load warning", warning);
    }
    if loaded.nodes.len() > MAX_SIMULATED_OBJECTS || loaded.pods.len() > MAX_SIMULATED_OBJECTS {
        return;
    }
    let modes = [
        SimulationOptions::default(),
        SimulationOptions {
            preemption: true,
            ..SimulationOptions::default()
        },
        SimulationOptions {
            node_search: NodeSearch::Adaptive,
            ..SimulationOptions::default()
        },
    ];
    for options in &modes {
        match simulate(&loaded, options) {
            Ok(sim) => {
                for warning in &sim.warnings {
                    check_message("simulation warning", warning);
                }
                for result in &sim.results {
                    let line = output::to_json(result).to_string();
                    assert!(!line.contains('\n'), "jsonl line with a newline: {line:?}");
                }
            }
            Err(e) => check_message("simulation error", &e.to_string()),
        }
    }
}

/// An error or warning must be one line that names the input file.
fn check_message(what: &str, text: &str) {
    assert!(
        !text.contains('\n') && !text.contains('\r'),
        "{what} is not one line: {text:?}"
    );
    assert!(
        text.contains(FILE),
        "{what} does not name the file: {text:?}"
    );
}

/// Parses `data` as a quantity: no panic; an error is one line; a value round-trips through
/// its canonical string, keeps its value with a leading zero and negates with a `-`; and
/// well-formed quantities agree with [`model_milli`].
pub fn quantity(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Quantity::parse(text) {
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains('\n'), "error not one line: {message:?}");
        }
        Ok(q) => {
            let canonical = q.to_string();
            assert_eq!(
                Quantity::parse(&canonical),
                Ok(q),
                "{text:?} -> {canonical:?} does not round-trip"
            );
            let unsigned = text.starts_with(|c: char| c.is_ascii_digit() || c == '.');
            if unsigned && text.len() < MAX_QUANTITY_LEN {
                assert_eq!(Quantity::parse(&format!("0{text}")), Ok(q), "0{text:?}");
                assert_eq!(
                    Quantity::parse(&format!("-{text}")).map(|n| n.milli()),
                    Ok(-q.milli()),
                    "-{text:?}"
                );
            }
            if let Some(want) = model_milli(text) {
                assert_eq!(q.milli(), want, "{text:?} disagrees with the exact model");
            }
        }
    }
}

/// The value of a plain well-formed quantity (`[+-]digits[.digits]suffix`, at least one
/// digit, a decimal exponent of at most 300 in magnitude once wrapped to 32 bits as Go
/// does) in milli units by apimachinery's rules, computed with exact rational arithmetic on
/// decimal digit strings; `None` for anything else.
pub fn model_milli(text: &str) -> Option<i128> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let int_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (int, rest) = rest.split_at(int_end);
    let (frac, suffix) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            r.split_at(end)
        }
        None => ("", rest),
    };
    if int.is_empty() && frac.is_empty() || int.len() + frac.len() > 4000 {
        return None;
    }
    let (binary, exp10): (u32, i64) = match suffix {
        "" => (0, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        s if (s.starts_with('e') || s.starts_with('E')) && s.len() > 1 => {
            // Go parses 64 bits, then keeps the low 32 (`int32(...)`).
            let e = i64::from(s[1..].parse::<i64>().ok()? as i32);
            if e.unsigned_abs() > 300 {
                return None;
            }
            (0, e)
        }
        _ => return None,
    };
    // value = digits * 2^binary * 10^(exp10 + 3 - frac.len()) milli units.
    let digits = Decimal::parse(&format!("{int}{frac}"));
    let mut num = digits;
    for _ in 0..binary {
        num = num.mul_small(2);
    }
    let shift = exp10 + 3 - frac.len() as i64;
    if binary > 0 {
        // Units = num / 10^frac.len() are capped at 2^63-1.
        let max = Decimal::parse(&i64::MAX.to_string()).shift_left(frac.len());
        if num.cmp(&max) == std::cmp::Ordering::Greater {
            let cap = i128::from(i64::MAX) * 1000;
            return Some(if negative { -cap } else { cap });
        }
    }
    let magnitude = if shift >= 0 {
        num.shift_left(shift as usize).to_i128_saturating()
    } else {
        let (whole, remainder) = num.shift_right((-shift) as usize);
        whole
            .to_i128_saturating()
            .saturating_add(i128::from(remainder))
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A non-negative integer as decimal digits, most significant first, no leading zeros: slow
/// and obviously right, for the model only.
#[derive(Clone, PartialEq, Eq)]
struct Decimal(Vec<u8>);

impl Decimal {
    fn parse(digits: &str) -> Decimal {
        let d: Vec<u8> = digits.bytes().map(|b| b - b'0').collect();
        let first = d.iter().position(|&x| x != 0).unwrap_or(d.len());
        Decimal(d[first..].to_vec())
    }

    fn mul_small(&self, m: u8) -> Decimal {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut carry = 0u32;
        for &d in self.0.iter().rev() {
            let v = u32::from(d) * u32::from(m) + carry;
            out.push((v % 10) as u8);
            carry = v / 10;
        }
        while carry > 0 {
            out.push((carry % 10) as u8);
            carry /= 10;
        }
        out.reverse();
        let first = out.iter().position(|&x| x != 0).unwrap_or(out.len());
        Decimal(out[first..].to_vec())
    }

    fn shift_left(&self, k: usize) -> Decimal {
        if self.0.is_empty() {
            return self.clone();
        }
        let mut d = self.0.clone();
        d.extend(std::iter::repeat_n(0, k));
        Decimal(d)
    }

    /// Divides by 10^k: the quotient and whether a non-zero digit was dropped.
    fn shift_right(&self, k: usize) -> (Decimal, bool) {
        let keep = self.0.len().saturating_sub(k);
        let dropped = self.0[keep..].iter().any(|&d| d != 0);
        (Decimal(self.0[..keep].to_vec()), dropped)
    }

    fn cmp(&self, other: &Decimal) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.cmp(&other.0))
    }

    fn to_i128_saturating(&self) -> i128 {
        let mut v: i128 = 0;
        for &d in &self.0 {
            v = match v.checked_mul(10).and_then(|v| v.checked_add(i128::from(d))) {
                Some(v) => v,
                None => return i128::MAX,
            };
        }
        v
    }
}
