//! Kubernetes resource quantities (`500m`, `1.5Gi`, `2e9`), parsed by apimachinery's rules
//! and stored the way the API server stores them.
//!
//! The grammar is apimachinery's `ParseQuantity` (`resource/quantity.go`, `suffix.go`):
//! an optional sign, digits with an optional `.` and fraction (`5.`, `.5` and even a bare
//! `.` are numbers), then one suffix: a decimal SI suffix (`n u m "" k M G T P E`), a binary
//! one (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent (`e3`, `E-3`, `e+3`). The scanner is more
//! permissive than the regular expression it quotes in its error: a missing number is 0, so
//! `"Gi"`, `"m"`, `"+"` and `"."` parse as zero, exactly as they do in Go, while `"Pi"` and
//! `"e-10"` fail with the "numeric" error because Go takes its big-decimal path for them.
//! Nothing is trimmed: `" 1"` is an error for [`Quantity::parse`];
//! [`Quantity::parse_json_string`] reads a value as the API server decodes it from JSON.
//!
//! Length: Go parses a quantity of any length (through `math/big` beyond 18 digits); the API server
//! never sees one longer than its 3 MiB write-request limit. Here a longer string is an error
//! ([`MAX_QUANTITY_LEN`]), and parsing is linear: only the digits that can reach the result
//! are accumulated, the rest are only scanned for the rounding.
//!
//! Values: Go keeps a parsed quantity exact to nano units (rounding a finer magnitude up,
//! away from zero) and caps binary-suffixed magnitudes at 2^63-1; the API server's defaulting
//! (`SetDefaults_ResourceList`) then rounds every resource-list value up to milli units,
//! again away from zero (`RoundUp(-3)`). The scheduler only ever sees that milli-rounded value,
//! so a [`Quantity`] is a single `i128` count of milli units. Sums are exact (saturating at the
//! `i128` range, far beyond anything Go represents as a valid request), and the integer
//! accessors round like Go's `Value()` / `MilliValue()`: away from zero, so `128m` bytes is
//! 1 byte and `-1500m` is -2.

use std::fmt;
use std::ops::{Add, AddAssign};
use std::str::FromStr;

/// A resource quantity, stored exactly as the API server stores it: rounded up (away from
/// zero) to milli units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Quantity {
    milli: i128,
}

/// Which of apimachinery's three parse errors a [`QuantityError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantityErrorKind {
    /// `ErrFormatWrong`: the text is not a number followed by a suffix (also the empty string).
    Format,
    /// `ErrNumeric`: the number has no digit where Go needs one (`"e-10"`, `"Pi"`).
    Numeric,
    /// `ErrSuffix`: the suffix is not one Kubernetes knows (`"1i"`, `"1ki"`, `"1e"`).
    Suffix,
    /// Longer than [`MAX_QUANTITY_LEN`]: no object the API server accepts can hold it.
    /// (apimachinery has no such error; the API server's request size limit stands in.)
    TooLong,
}

impl QuantityErrorKind {
    /// The message apimachinery's error carries.
    pub fn message(self) -> &'static str {
        match self {
            QuantityErrorKind::Format => {
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            }
            QuantityErrorKind::Numeric => "unable to parse numeric part of quantity",
            QuantityErrorKind::Suffix => "unable to parse quantity's suffix",
            QuantityErrorKind::TooLong => {
                "quantity is longer than 3145728 bytes, the largest write request the API server accepts"
            }
        }
    }
}

/// Why a quantity string could not be parsed; displays as apimachinery's error message.
///
/// apimachinery has no out-of-range error: too large values are capped (binary suffixes) or
/// kept exact (decimal ones); here they saturate, see [`Quantity::parse`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .kind.message())]
pub struct QuantityError {
    kind: QuantityErrorKind,
}

impl QuantityError {
    /// An error of the given kind.
    pub fn new(kind: QuantityErrorKind) -> QuantityError {
        QuantityError { kind }
    }

    /// Which error this is.
    pub fn kind(&self) -> QuantityErrorKind {
        self.kind
    }
}

/// The longest quantity string [`Quantity::parse`] accepts: 3 MiB, kube-apiserver's limit on
/// the body of a write request (`MaxRequestBodyBytes`, fixed at 3 * 1024 * 1024 and not
/// exposed as a flag), so no object the API server stores can carry a longer one.
/// apimachinery's `ParseQuantity` itself has no limit.
pub const MAX_QUANTITY_LEN: usize = 3 * 1024 * 1024;

/// 2^63-1, the magnitude apimachinery caps binary-suffixed quantities at.
const MAX_INT64: u64 = i64::MAX as u64;

impl Quantity {
    /// Zero.
    pub const ZERO: Quantity = Quantity { milli: 0 };

    /// Parses a quantity as the API server decodes it from a JSON string
    /// (`Quantity.UnmarshalJSON`): `strings.TrimSpace` runs on the raw JSON text between
    /// the quotes, where control characters and U+2028/U+2029 are still escapes
    /// (`\n`, `\u2028`), so only the white space JSON writes as itself is trimmed: `" 4"`
    /// and `"4\u{a0}"` are 4, while `"4\n"` is an error, as it is for the API server.
    pub fn parse_json_string(s: &str) -> Result<Quantity, QuantityError> {
        let trimmed_by_go =
            |c: char| c.is_whitespace() && c >= ' ' && c != '\u{2028}' && c != '\u{2029}';
        Quantity::parse(s.trim_matches(trimmed_by_go))
    }

    /// Parses a quantity string as apimachinery's `ParseQuantity` does, then rounds it up to
    /// milli units as the API server's defaulting does.
    ///
    /// Magnitudes beyond the `i128` milli range (about 1.7e35 units, only reachable with
    /// decimal suffixes or exponents, which Go keeps exact) saturate. A string longer than
    /// [`MAX_QUANTITY_LEN`] is an error. Parsing takes time linear in the length.
    pub fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let bytes = s.as_bytes();
        if bytes.is_empty() {
            return Err(QuantityError::new(QuantityErrorKind::Format));
        }
        if bytes.len() > MAX_QUANTITY_LEN {
            return Err(QuantityError::new(QuantityErrorKind::TooLong));
        }
        let scanned = scan(bytes)?;
        let suffix = interpret_suffix(scanned.suffix)
            .ok_or(QuantityError::new(QuantityErrorKind::Suffix))?;

        // Go parses with an int64 fast path and falls back to inf.Dec, whose SetString needs
        // at least one digit. The values agree; only that fallback can fail.
        if !scanned.has_digit && !fast_path_applies(&scanned, suffix) {
            return Err(QuantityError::new(QuantityErrorKind::Numeric));
        }

        let magnitude = milli_magnitude(&scanned, suffix);
        let milli = if scanned.negative {
            -magnitude
        } else {
            magnitude
        };
        Ok(Quantity { milli })
    }

    /// A quantity of `milli` thousandths.
    pub fn from_milli(milli: i128) -> Quantity {
        Quantity { milli }
    }

    /// A quantity of `value` whole units.
    pub fn from_value(value: i64) -> Quantity {
        Quantity {
            milli: i128::from(value) * 1000,
        }
    }

    /// The exact value in milli units.
    pub fn milli(&self) -> i128 {
        self.milli
    }

    /// apimachinery's `MilliValue()`: the value in milli units (exact, since quantities are
    /// milli-rounded), saturating at the `i64` range.
    pub fn milli_value(&self) -> i64 {
        saturate_i64(self.milli)
    }

    /// apimachinery's `Value()`: the value in whole units, a fractional part rounded away
    /// from zero (memory `128m` is 1 byte, `-1500m` is -2), saturating at the `i64` range.
    pub fn value(&self) -> i64 {
        let whole = self.milli / 1000;
        let rounded = if self.milli % 1000 == 0 {
            whole
        } else if self.milli > 0 {
            whole + 1
        } else {
            whole - 1
        };
        saturate_i64(rounded)
    }

    /// `true` when the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.milli == 0
    }
}

fn saturate_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

impl Add for Quantity {
    type Output = Quantity;
    fn add(self, rhs: Quantity) -> Quantity {
        Quantity {
            milli: self.milli.saturating_add(rhs.milli),
        }
    }
}

impl AddAssign for Quantity {
    fn add_assign(&mut self, rhs: Quantity) {
        *self = *self + rhs;
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Quantity, QuantityError> {
        Quantity::parse(s)
    }
}

/// A canonical form that parses back to the same value: a plain integer when the value is
/// whole (`2`, `1073741824`), otherwise milli units (`1500m`). (Not Go's `String()`, which
/// also picks suffixes.)
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.milli % 1000 == 0 {
            write!(f, "{}", self.milli / 1000)
        } else {
            write!(f, "{}m", self.milli)
        }
    }
}

/// What Go's scanner (`parseQuantityString`) splits a quantity into.
struct Scanned<'a> {
    negative: bool,
    /// Integer digits without leading zeros (may be empty: Go then uses "0").
    num: &'a [u8],
    /// Fraction digits (may be empty).
    denom: &'a [u8],
    /// Whether the number part has any digit at all (leading zeros included).
    has_digit: bool,
    suffix: &'a str,
}

fn is_suffix_letter(b: u8) -> bool {
    b"eEinumkKMGTP".contains(&b)
}

/// Splits sign, integer digits, fraction digits and suffix the way Go's scanner does.
fn scan(s: &[u8]) -> Result<Scanned<'_>, QuantityError> {
    let end = s.len();
    let mut pos = 0;
    let mut negative = false;
    match s[0] {
        b'-' => {
            negative = true;
            pos = 1;
        }
        b'+' => pos = 1,
        _ => {}
    }
    let mut out = Scanned {
        negative,
        num: &[],
        denom: &[],
        has_digit: false,
        suffix: "",
    };

    // Leading zeros; nothing after them means the quantity is zero.
    while pos < end && s[pos] == b'0' {
        out.has_digit = true;
        pos += 1;
    }
    if pos == end {
        return Ok(out);
    }

    let num_start = pos;
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    out.num = &s[num_start..pos];
    out.has_digit |= pos > num_start;
    if pos == end {
        return Ok(out);
    }

    if s[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && s[pos].is_ascii_digit() {
            pos += 1;
        }
        out.denom = &s[denom_start..pos];
        out.has_digit |= pos > denom_start;
        if pos == end {
            return Ok(out);
        }
    }

    let suffix_start = pos;
    while pos < end && is_suffix_letter(s[pos]) {
        pos += 1;
    }
    if pos < end && (s[pos] == b'+' || s[pos] == b'-') {
        pos += 1;
    }
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::new(QuantityErrorKind::Format));
    }
    // Only ASCII bytes were consumed from suffix_start, so this cannot split a character.
    out.suffix = std::str::from_utf8(&s[suffix_start..]).unwrap_or("");
    Ok(out)
}

/// The base and format a suffix stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Suffix {
    /// `n u m "" k M G T P E`: times 10^exp.
    DecimalSi(i32),
    /// `Ki .. Ei`: times 2^exp.
    BinarySi(u32),
    /// `e<int>` / `E<int>`: times 10^exp (the exponent wraps to 32 bits as in Go).
    DecimalExponent(i32),
}

fn interpret_suffix(s: &str) -> Option<Suffix> {
    let decimal = match s {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(exp) = decimal {
        return Some(Suffix::DecimalSi(exp));
    }
    let binary = match s {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(exp) = binary {
        return Some(Suffix::BinarySi(exp));
    }
    if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) {
        // strconv.ParseInt(s[1:], 10, 64), then int32(...): Go truncates to 32 bits.
        let parsed: i64 = s[1..].parse().ok()?;
        return Some(Suffix::DecimalExponent(parsed as i32));
    }
    None
}

/// Whether Go's int64 fast path handles the quantity (else it uses inf.Dec, which fails on a
/// number without digits).
fn fast_path_applies(q: &Scanned<'_>, suffix: Suffix) -> bool {
    let num_len = q.num.len().max(1) as i64; // Go substitutes "0" for an empty num
    let denom_len = q.denom.len() as i64;
    match suffix {
        Suffix::DecimalSi(exp) | Suffix::DecimalExponent(exp) => {
            let precision = 18 - (num_len + denom_len);
            precision >= 0 && i64::from(exp) - denom_len >= -9
        }
        Suffix::BinarySi(exp) => {
            if denom_len != 0 {
                return false;
            }
            let precision = 15 - num_len - i64::from(exp) * 3 / 10 - 1;
            if precision < 0 {
                return false;
            }
            // The product num * 2^exp must fit an int64 (num has at most 14 digits here).
            let num: u128 = std::str::from_utf8(q.num)
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            (num << exp) <= u128::from(MAX_INT64)
        }
    }
}

/// The significant digits of a scanned number: the integer digits followed by the fraction
/// digits, without leading zeros, as two slices (no copy of a possibly huge input).
#[derive(Clone, Copy)]
struct Digits<'a> {
    head: &'a [u8],
    tail: &'a [u8],
}

impl<'a> Digits<'a> {
    fn of(q: &Scanned<'a>) -> Digits<'a> {
        if q.num.is_empty() {
            // `num` never has leading zeros; without it, the fraction's leading zeros go.
            let first = q
                .denom
                .iter()
                .position(|&d| d != b'0')
                .unwrap_or(q.denom.len());
            Digits {
                head: &[],
                tail: &q.denom[first..],
            }
        } else {
            Digits {
                head: q.num,
                tail: q.denom,
            }
        }
    }

    fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// The digits in `range` (positions from the first significant digit).
    fn iter(&self, range: std::ops::Range<usize>) -> impl DoubleEndedIterator<Item = u8> + 'a {
        let split = self.head.len();
        let head = &self.head[range.start.min(split)..range.end.min(split)];
        let tail = &self.tail[range.start.max(split) - split..range.end.max(split) - split];
        head.iter().chain(tail.iter()).map(|&d| d - b'0')
    }

    /// The integer the digits in `range` spell, or `None` past `u128`.
    fn value(&self, range: std::ops::Range<usize>) -> Option<u128> {
        self.iter(range).try_fold(0u128, |acc, d| {
            acc.checked_mul(10)?.checked_add(u128::from(d))
        })
    }
}

/// More significant digits than this always overflow the `i128` milli range (10^39 > 2^127).
const I128_DIGITS: usize = 39;

/// |value| in milli units, rounded up; binary magnitudes capped at 2^63-1 units first;
/// saturating at `i128::MAX`.
///
/// Linear in the input: every digit is looked at a constant number of times, and only the
/// digits that can reach the `i128` result are ever accumulated (a number with more
/// significant digits than that saturates or caps without being read).
fn milli_magnitude(q: &Scanned<'_>, suffix: Suffix) -> i128 {
    let digits = Digits::of(q);
    let len = digits.len();
    if len == 0 {
        return 0;
    }
    let denom_len = q.denom.len() as i64;
    match suffix {
        Suffix::DecimalSi(exp) | Suffix::DecimalExponent(exp) => {
            // value = digits * 10^shift milli units.
            let shift = i64::from(exp) - denom_len + 3;
            decimal_milli(digits, shift)
        }
        Suffix::BinarySi(exp) => binary_milli(digits, exp, denom_len),
    }
}

/// `digits * 10^shift`, rounded up, saturating at `i128::MAX`.
fn decimal_milli(digits: Digits<'_>, shift: i64) -> i128 {
    let len = digits.len();
    if shift >= 0 {
        // digits >= 10^(len-1), so the value is at least 10^(len-1+shift).
        if len as i64 + shift > I128_DIGITS as i64 {
            return i128::MAX;
        }
        let scaled = digits
            .value(0..len)
            .and_then(|v| v.checked_mul(10u128.pow(shift as u32)));
        return scaled.map_or(i128::MAX, saturate_i128);
    }
    // The last `dropped` digits are below one milli unit: any non-zero one rounds up.
    let dropped = usize::try_from(shift.unsigned_abs())
        .unwrap_or(usize::MAX)
        .min(len);
    let kept = len - dropped;
    if kept > I128_DIGITS {
        return i128::MAX;
    }
    let Some(whole) = digits.value(0..kept) else {
        return i128::MAX;
    };
    let round_up = digits.iter(kept..len).any(|d| d != 0);
    saturate_i128(whole).saturating_add(i128::from(round_up))
}

/// `digits * 2^exp / 10^denom_len` units in milli units, rounded up, capped at 2^63-1 units
/// (apimachinery's cap for binary suffixes, applied after its rounding to nano units, which
/// cannot move a value across that integer).
fn binary_milli(digits: Digits<'_>, exp: u32, denom_len: i64) -> i128 {
    const CAP_MILLI: u128 = MAX_INT64 as u128 * 1000;
    let len = digits.len();
    let factor = 1u128 << exp; // exp <= 60
    // milli = digits * 2^exp * 10^(3 - denom_len).
    let (floor, inexact) = if denom_len <= 3 {
        // 38 digits are more than 10^37 * 2^10 / 1000 > 2^63 units: capped either way.
        if len > I128_DIGITS - 1 {
            return CAP_MILLI as i128;
        }
        let exact = digits
            .value(0..len)
            .and_then(|v| v.checked_mul(factor))
            .and_then(|v| v.checked_mul(10u128.pow((3 - denom_len) as u32)));
        match exact {
            Some(v) => (v, false),
            None => return CAP_MILLI as i128,
        }
    } else {
        // The last `scale` digits are divided away: whole = head * 2^exp, plus
        // tail * 2^exp / 10^scale computed digit by digit from the right (Horner), keeping
        // the floor and whether anything was dropped. The running value stays below 2^exp.
        let scale = (denom_len - 3) as usize;
        let dropped = scale.min(len);
        let kept = len - dropped;
        if kept > I128_DIGITS - 1 {
            return CAP_MILLI as i128;
        }
        let mut carry = 0u128;
        let mut inexact = false;
        for d in digits.iter(kept..len).rev() {
            let t = u128::from(d) * factor + carry;
            inexact |= !t.is_multiple_of(10);
            carry = t / 10;
        }
        // Leading zeros of the divided part (only when the number has fewer digits than
        // `scale`): keep dividing until nothing is left.
        let mut zeros = scale - dropped;
        while zeros > 0 && carry != 0 {
            inexact |= !carry.is_multiple_of(10);
            carry /= 10;
            zeros -= 1;
        }
        let whole = digits
            .value(0..kept)
            .and_then(|v| v.checked_mul(factor))
            .and_then(|v| v.checked_add(carry));
        match whole {
            Some(v) => (v, inexact),
            None => return CAP_MILLI as i128,
        }
    };
    if floor > CAP_MILLI || (floor == CAP_MILLI && inexact) {
        return CAP_MILLI as i128;
    }
    (floor + u128::from(inexact)) as i128
}

fn saturate_i128(v: u128) -> i128 {
    i128::try_from(v).unwrap_or(i128::MAX)
}

#[cfg(test)]
mod tests;
