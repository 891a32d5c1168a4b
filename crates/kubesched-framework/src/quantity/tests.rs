//! The quantity parser's tests: Kubernetes' suffixes, rounding and canonical forms.

use super::*;

const KI: i128 = 1024;
const MI: i128 = 1024 * KI;
const GI: i128 = 1024 * MI;
const TI: i128 = 1024 * GI;
const PI: i128 = 1024 * TI;
const EI: i128 = 1024 * PI;

fn milli(s: &str) -> i128 {
    match Quantity::parse(s) {
        Ok(q) => q.milli(),
        Err(e) => panic!("{s:?}: unexpected error {e}"),
    }
}

/// apimachinery's TestQuantityParse table (values as the API server stores them: milli
/// units, rounded up), plus the `-` and `+` variants it also runs.
#[test]
fn test_quantity_parse() {
    let table: &[(&str, i128)] = &[
        ("0", 0),
        ("0n", 0),
        ("0u", 0),
        ("0m", 0),
        ("0Ki", 0),
        ("0k", 0),
        ("0Mi", 0),
        ("0M", 0),
        ("0Gi", 0),
        ("0G", 0),
        ("0Ti", 0),
        ("0T", 0),
        // Quantity-less numbers are allowed.
        ("1", 1000),
        // Binary suffixes.
        ("1Ki", KI * 1000),
        ("8Ki", 8 * KI * 1000),
        ("7Mi", 7 * MI * 1000),
        ("6Gi", 6 * GI * 1000),
        ("5Ti", 5 * TI * 1000),
        ("4Pi", 4 * PI * 1000),
        ("3Ei", 3 * EI * 1000),
        ("10Ti", 10 * TI * 1000),
        ("100Ti", 100 * TI * 1000),
        // Decimal suffixes (n and u round up to 1m).
        ("5n", 1),
        ("4u", 1),
        ("3m", 3),
        ("9", 9000),
        ("8k", 8_000_000),
        ("50k", 50_000_000),
        ("7M", 7_000_000_000),
        ("6G", 6_000_000_000_000),
        ("5T", 5_000_000_000_000_000),
        ("40T", 40_000_000_000_000_000),
        ("300T", 300_000_000_000_000_000),
        ("2P", 2_000_000_000_000_000_000),
        ("1E", 1_000_000_000_000_000_000_000),
        // Decimal exponents.
        ("1E-3", 1),
        ("1e3", 1_000_000),
        ("1E6", 1_000_000_000),
        ("1e9", 1_000_000_000_000),
        ("1E12", 1_000_000_000_000_000),
        ("1e15", 1_000_000_000_000_000_000),
        ("1E18", 1_000_000_000_000_000_000_000),
        // Nonstandard but still parsable.
        ("1e14", 100_000_000_000_000_000),
        ("1e13", 10_000_000_000_000_000),
        ("100.035k", 100_035_000),
        // Things that look like floating point.
        ("0.001", 1),
        ("0.0005k", 500),
        ("0.005", 5),
        ("0.05", 50),
        ("0.5", 500),
        ("0.00050k", 500),
        ("0.00500", 5),
        ("0.05000", 50),
        ("0.50000", 500),
        ("0.5e0", 500),
        ("0.5e-1", 50),
        ("0.5e-2", 5),
        ("10.035M", 10_035_000_000),
        ("1.2e3", 1_200_000),
        ("1.3E+6", 1_300_000_000),
        ("1.40e9", 1_400_000_000_000),
        ("1.53E12", 1_530_000_000_000_000),
        ("1.6e15", 1_600_000_000_000_000_000),
        ("1.7E18", 1_700_000_000_000_000_000_000),
        ("9.01", 9010),
        ("8.1k", 8_100_000),
        ("7.123456M", 7_123_456_000),
        ("6.987654321G", 6_987_654_321_000),
        ("5.444T", 5_444_000_000_000_000),
        ("40.1T", 40_100_000_000_000_000),
        ("300.2T", 300_200_000_000_000_000),
        ("2.5P", 2_500_000_000_000_000_000),
        ("1.01E", 1_010_000_000_000_000_000_000),
        // Things that saturate/round (Go: nano; the API server then rounds to milli).
        ("3.001n", 1),
        ("1.1E-9", 1),
        ("0.0000000001", 1),
        ("0.0000000005", 1),
        ("0.00000000050", 1),
        ("0.5e-9", 1),
        ("0.9n", 1),
        ("0.00000012345", 1),
        ("0.00000012354", 1),
        ("9Ei", i128::from(i64::MAX) * 1000),
        ("9223372036854775807Ki", i128::from(i64::MAX) * 1000),
        ("12E", 12_000_000_000_000_000_000_000),
        // Fractional binary.
        ("100.035Ki", 102_435_840),
        ("0.5Mi", 524_288_000),
        ("0.05Gi", 53_687_091_200),
        ("0.025Ti", 27_487_790_694_400),
        // Things written by trolls.
        ("0.000000000001Ki", 1),
        (".001", 1),
        (".0001k", 100),
        ("1.", 1000),
        ("1.G", 1_000_000_000_000),
    ];
    for &(input, want) in table {
        assert_eq!(milli(input), want, "{input}");
        assert_eq!(milli(&format!("+{input}")), want, "+{input}");
        assert_eq!(milli(&format!("-{input}")), -want, "-{input}");
    }
}

/// The brief's examples and the memory typo the conformance notes mention.
#[test]
fn test_common_requests() {
    let table: &[(&str, i128, i64, i64)] = &[
        // input, milli, MilliValue, Value
        ("500m", 500, 500, 1),
        ("0.5", 500, 500, 1),
        ("1.25", 1250, 1250, 2),
        ("1G", 1_000_000_000_000, 1_000_000_000_000, 1_000_000_000),
        ("1Gi", GI * 1000, (GI * 1000) as i64, GI as i64),
        ("7.5Gi", GI * 7500, (GI * 7500) as i64, (GI * 15 / 2) as i64),
        ("2e9", 2_000_000_000_000, 2_000_000_000_000, 2_000_000_000),
        (
            "15896300Ki",
            15_896_300 * KI * 1000,
            (15_896_300 * KI * 1000) as i64,
            (15_896_300 * KI) as i64,
        ),
        ("128m", 128, 128, 1),
        (
            "1E",
            1_000_000_000_000_000_000_000,
            i64::MAX,
            1_000_000_000_000_000_000,
        ),
        ("+1", 1000, 1000, 1),
        ("-1", -1000, -1000, -1),
        (".5", 500, 500, 1),
        ("5.", 5000, 5000, 5),
        ("1e-3", 1, 1, 1),
        ("100m", 100, 100, 1),
        (
            "200Mi",
            200 * MI * 1000,
            (200 * MI * 1000) as i64,
            (200 * MI) as i64,
        ),
    ];
    for &(input, m, mv, v) in table {
        let q = Quantity::parse(input).unwrap();
        assert_eq!(q.milli(), m, "{input} milli");
        assert_eq!(q.milli_value(), mv, "{input} MilliValue");
        assert_eq!(q.value(), v, "{input} Value");
    }
}

/// Every suffix, once.
#[test]
fn test_every_suffix() {
    let table: &[(&str, i128)] = &[
        ("2n", 1),
        ("2u", 1),
        ("2m", 2),
        ("2", 2000),
        ("2k", 2_000_000),
        ("2M", 2_000_000_000),
        ("2G", 2_000_000_000_000),
        ("2T", 2_000_000_000_000_000),
        ("2P", 2_000_000_000_000_000_000),
        ("2E", 2_000_000_000_000_000_000_000),
        ("2Ki", 2 * KI * 1000),
        ("2Mi", 2 * MI * 1000),
        ("2Gi", 2 * GI * 1000),
        ("2Ti", 2 * TI * 1000),
        ("2Pi", 2 * PI * 1000),
        ("2Ei", 2 * EI * 1000),
        ("2e2", 200_000),
        ("2E2", 200_000),
        ("2e+2", 200_000),
        ("2e-2", 20),
        ("2e0", 2000),
    ];
    for &(input, want) in table {
        assert_eq!(milli(input), want, "{input}");
    }
}

/// apimachinery's invalid list plus the brief's; the error kind follows Go's path.
#[test]
fn test_quantity_parse_errors() {
    use QuantityErrorKind::*;
    let table: &[(&str, QuantityErrorKind)] = &[
        ("", Format),
        ("1.1.M", Format),
        ("1+1.0M", Format),
        ("0.1mi", Suffix),
        ("0.1am", Format),
        ("aoeu", Format),
        (".5i", Suffix),
        ("1i", Suffix),
        ("-3.01i", Suffix),
        ("-3.01e-", Suffix),
        (" 1", Format),
        ("1 ", Format),
        ("2Gb", Format),
        ("1.5.0", Format),
        ("1 Gi", Format),
        ("1ki", Suffix),
        ("1KI", Format),
        ("1KiB", Format),
        ("1K", Suffix),
        ("1e", Suffix),
        ("1e+", Suffix),
        ("1e3k", Format),
        ("1e+-3", Format),
        ("1e1.5", Format),
        ("++1", Suffix),
        ("1-", Suffix),
        ("1,5", Format),
        ("0x10", Format),
        ("1µ", Format),
        ("−1", Format),
        ("Non-Numeric", Format),
        ("1e99999999999999999999", Suffix),
        // Go's big-decimal path needs a digit.
        ("e-10", Numeric),
        (".e-10", Numeric),
        ("Pi", Numeric),
        ("Ei", Numeric),
    ];
    for &(input, kind) in table {
        match Quantity::parse(input) {
            Ok(q) => panic!("{input:?} parsed unexpectedly as {q}"),
            Err(e) => assert_eq!(e.kind(), kind, "{input:?}: {e}"),
        }
    }
    assert_eq!(
        Quantity::parse("1.5.0").unwrap_err().to_string(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        Quantity::parse("1i").unwrap_err().to_string(),
        "unable to parse quantity's suffix"
    );
    assert_eq!(
        Quantity::parse("e-10").unwrap_err().to_string(),
        "unable to parse numeric part of quantity"
    );
}

/// Go's scanner treats a missing number as 0 (TestParseQuantityString has "." and "-.").
#[test]
fn test_missing_number_is_zero() {
    for input in [
        "+", "-", ".", "-.", "+.", "m", "Gi", "Ki", "Ti", "k", "E", "e5", "000", "-0",
    ] {
        assert_eq!(milli(input), 0, "{input}");
    }
}

/// Rounding to milli is up, away from zero (TestQuantityRoundUp's -9.01 cases).
#[test]
fn test_quantity_round_up() {
    let table: &[(&str, i128)] = &[
        ("0.1m", 1),
        ("1.0001m", 2),
        ("100.5u", 1),
        ("1001u", 2),
        ("-0.1m", -1),
        ("-1001u", -2),
        ("1.0000001", 1001),
        ("-1.0000001", -1001),
        ("1e-100", 1),
        ("-1e-100", -1),
        ("0.000000000000000000000000000000000000000001", 1),
        ("1.5Ki", 1_536_000),
        ("0.001Ki", 1024),
        ("0.0001Ki", 103),
        // int32 wrap of the exponent: 9223372036854775807 as int32 is -1.
        ("1e9223372036854775807", 100),
        // From the fuzzer: i64::MIN and 2^32 wrap to an exponent of 0.
        (".0000006E-9223372036854775808", 1),
        ("5e-9223372036854775808", 5000),
        ("5e4294967296", 5000),
        ("5e4294967295", 500),
        // Digits shifted far left and right still round correctly.
        ("123456789012345678901234567890e-27", 123_457),
        ("00000000000000000000000000000000001", 1000),
    ];
    for &(input, want) in table {
        assert_eq!(milli(input), want, "{input}");
    }
}

/// Huge values: binary capped at 2^63-1 units like Go, decimal kept exact up to the i128
/// range, then saturated.
#[test]
fn test_quantity_large_values() {
    assert_eq!(milli("8Ei"), i128::from(i64::MAX) * 1000);
    assert_eq!(milli("-8Ei"), -i128::from(i64::MAX) * 1000);
    assert_eq!(milli("7.99999Ei"), (7_999_990 * EI + 999) / 1000); // below the cap
    assert_eq!(
        milli("100000000000000000000Ki"),
        i128::from(i64::MAX) * 1000
    );
    assert_eq!(milli("1e40"), i128::MAX);
    assert_eq!(milli("-1e40"), -i128::MAX);
    assert_eq!(milli("1e2147483647"), i128::MAX);
    let big = Quantity::parse("10E").unwrap();
    assert_eq!(big.value(), i64::MAX);
    assert_eq!(big.milli_value(), i64::MAX);
    assert_eq!(Quantity::parse("-10E").unwrap().value(), i64::MIN);
    assert_eq!(milli("9223372036854775807"), i128::from(i64::MAX) * 1000);
}

/// Issue 14: a quantity longer than the API server's 3 MiB write limit is an error, and
/// a long one within it (1,000,000 digits, which a default API server stores) parses.
#[test]
fn json_strings_are_trimmed_of_the_white_space_json_writes_as_itself() {
    for input in [" 4", "4 ", "\u{a0}4", "4\u{3000}", "\u{85}4"] {
        assert_eq!(
            Quantity::parse_json_string(input).unwrap().value(),
            4,
            "{input:?}"
        );
    }
    // Escaped in JSON, so Go's TrimSpace never sees them as white space.
    for input in ["4\n", "\t4", "4\r", "4\u{2028}"] {
        assert!(Quantity::parse_json_string(input).is_err(), "{input:?}");
    }
    assert!(Quantity::parse(" 4").is_err());
}

#[test]
fn test_length_limit() {
    let million = "9".repeat(1_000_000);
    assert_eq!(milli(&million), i128::MAX);
    assert_eq!(milli(&format!("{million}Ki")), i128::from(i64::MAX) * 1000);
    let longest = "1".repeat(MAX_QUANTITY_LEN);
    assert_eq!(milli(&longest), i128::MAX);
    for too_long in [
        "1".repeat(MAX_QUANTITY_LEN + 1),
        format!("{longest}m"),
        format!("-{longest}"),
        "x".repeat(MAX_QUANTITY_LEN + 1),
    ] {
        let err = Quantity::parse(&too_long).unwrap_err();
        assert_eq!(err.kind(), QuantityErrorKind::TooLong);
    }
    let message = Quantity::parse(&"1".repeat(MAX_QUANTITY_LEN + 1))
        .unwrap_err()
        .to_string();
    assert!(message.contains(&MAX_QUANTITY_LEN.to_string()), "{message}");
    assert!(!message.contains('\n'));
}

/// Inputs of the longest allowed length through every path of the value computation,
/// with exact expected values. A parser that accumulates every digit into a big number
/// (quadratic: about 10^13 limb operations here) would not finish this test.
#[test]
fn test_longest_inputs_are_exact() {
    let n = MAX_QUANTITY_LEN;
    let zeros = |k: usize| "0".repeat(k);
    let table: Vec<(String, i128)> = vec![
        // One significant digit at the far end of a long fraction rounds up to 1m.
        (format!("0.{}1", zeros(n - 3)), 1),
        (format!("-0.{}1", zeros(n - 4)), -1),
        (format!(".{}1Ki", zeros(n - 4)), 1),
        // Long fractions that are exact.
        (format!("1.{}", zeros(n - 2)), 1000),
        (format!("1.{}Ki", zeros(n - 4)), 1_024_000),
        (format!("0.5{}Mi", zeros(n - 5)), 524_288_000),
        // Leading zeros count for nothing.
        (format!("{}1500m", zeros(n - 5)), 1500),
        (format!("{}7Gi", zeros(n - 3)), 7 * GI * 1000),
        // A long integer shifted back down by an exponent.
        (format!("1{}e-{}", zeros(n - 10), n - 10), 1000),
        (format!("1{}1e-{}", zeros(n - 11), n - 10), 1001),
        (format!("25{}e-{}", zeros(n - 11), n - 10), 2500),
        // Fraction digits beyond nano still round binary values up (Go: RoundUp to nano).
        (format!("1.{}1Ki", zeros(n - 5)), 1_024_001),
        // Many digits, all significant: saturates (decimal) or caps (binary).
        ("7".repeat(n), i128::MAX),
        (
            format!("{}Ei", "7".repeat(n - 2)),
            i128::from(i64::MAX) * 1000,
        ),
        (format!("{}e-9", "7".repeat(n - 3)), i128::MAX),
    ];
    for (input, want) in table {
        assert_eq!(input.len(), MAX_QUANTITY_LEN, "{}", &input[..20]);
        assert_eq!(milli(&input), want, "{}...", &input[..20]);
    }
}

/// Rounding and capping of binary values with long fractions (expected values computed
/// with exact rational arithmetic).
#[test]
fn test_binary_fraction_edges() {
    let cap = i128::from(i64::MAX) * 1000;
    // (2^63-1) / 2^30 written out exactly: 2^63-1 units, at the cap but not over it.
    assert_eq!(milli("8589934591.999999999068677425384521484375Gi"), cap);
    assert_eq!(milli("8589934591.9999999990686774253845214843751Gi"), cap);
    assert_eq!(milli("7.999999999999999999132638262011596452794Ei"), cap);
    assert_eq!(milli("8191.999999999999Pi"), 9_223_372_036_854_774_682_101);
    assert_eq!(milli("0.0001Ki"), 103);
    assert_eq!(milli("0.00000000000000000000000000000000001Ei"), 1);
    assert_eq!(milli("0.0009765625Ki"), 1000);
    assert_eq!(milli("0.00097656250000000000000000001Ki"), 1001);
}

/// Value() / MilliValue() round away from zero (apimachinery's negativeScaleInt64).
#[test]
fn test_value_rounding() {
    let table: &[(i128, i64)] = &[
        (0, 0),
        (1, 1),
        (999, 1),
        (1000, 1),
        (1001, 2),
        (-1, -1),
        (-500, -1),
        (-1000, -1),
        (-1500, -2),
    ];
    for &(m, v) in table {
        assert_eq!(Quantity::from_milli(m).value(), v, "{m}m");
        assert_eq!(Quantity::from_milli(m).milli_value(), m as i64, "{m}m");
    }
    assert_eq!(Quantity::from_value(3).milli(), 3000);
    assert_eq!(Quantity::from_value(i64::MIN).value(), i64::MIN);
}

/// Sums are exact in milli units: two 128m memory requests are 1 byte, not 2.
#[test]
fn test_add_is_exact() {
    let a = Quantity::parse("128m").unwrap();
    let mut sum = a + a;
    assert_eq!(sum.milli(), 256);
    assert_eq!(sum.value(), 1);
    assert_eq!(a.value() + a.value(), 2);
    sum += Quantity::parse("744m").unwrap();
    assert_eq!(sum.value(), 1);
    sum += Quantity::from_milli(1);
    assert_eq!(sum.value(), 2);
    let max = Quantity::from_milli(i128::MAX);
    assert_eq!((max + max).milli(), i128::MAX);
    assert!(Quantity::ZERO.is_zero());
    assert!(!a.is_zero());
    assert!(Quantity::parse("0.0").unwrap().is_zero());
}

#[test]
fn test_display_and_from_str() {
    let table: &[(&str, &str)] = &[
        ("0", "0"),
        ("1", "1"),
        ("1500m", "1500m"),
        ("1.5", "1500m"),
        ("1Gi", "1073741824"),
        ("0.1m", "1m"),
        ("-1.5", "-1500m"),
        ("-2", "-2"),
        ("128m", "128m"),
    ];
    for &(input, want) in table {
        let q: Quantity = input.parse().unwrap();
        assert_eq!(q.to_string(), want, "{input}");
        assert_eq!(want.parse::<Quantity>().unwrap(), q, "round trip {input}");
    }
}

#[test]
fn test_ordering() {
    let q = |s: &str| Quantity::parse(s).unwrap();
    assert!(q("100m") > q("50m"));
    assert!(q("10000T") > q("100Gi"));
    assert!(q("-1") < q("0"));
    assert_eq!(q("1000m"), q("1"));
}
