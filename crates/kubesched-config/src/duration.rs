//! Go duration strings (`time.ParseDuration` and `time.Duration.String`), as used by
//! `metav1.Duration` fields such as `leaderElection.leaseDuration`.

use std::time::Duration;

const NS: i128 = 1;
const US: i128 = 1_000;
const MS: i128 = 1_000_000;
const S: i128 = 1_000_000_000;
const MIN: i128 = 60 * S;
const H: i128 = 60 * MIN;

fn unit(u: &str) -> Option<i128> {
    Some(match u {
        "ns" => NS,
        "us" | "µs" | "μs" => US,
        "ms" => MS,
        "s" => S,
        "m" => MIN,
        "h" => H,
        _ => return None,
    })
}

/// Parse a Go duration string into signed nanoseconds, with Go's error wording.
pub fn parse_go_duration(text: &str) -> Result<i128, String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let mut s = text;
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        negative = true;
        s = rest;
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !s.is_empty() {
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &s[..int_len];
        s = &s[int_len..];
        let mut frac_part = "";
        if let Some(rest) = s.strip_prefix('.') {
            let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &rest[..frac_len];
            s = &rest[frac_len..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = s
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map(|(i, _)| i)
            .unwrap_or(s.len());
        let u = &s[..unit_len];
        s = &s[unit_len..];
        if u.is_empty() {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        let scale =
            unit(u).ok_or_else(|| format!("time: unknown unit {u:?} in duration {text:?}"))?;
        let int_value: i128 = if int_part.is_empty() {
            0
        } else if int_part.len() > 30 {
            return Err(invalid());
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = int_value.checked_mul(scale).ok_or_else(invalid)?;
        // Fractional part, truncated to nanoseconds as Go does.
        let mut frac_scale = scale;
        for d in frac_part.bytes().take(30) {
            frac_scale /= 10;
            value += i128::from(d - b'0') * frac_scale;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) {
            return Err(invalid());
        }
    }
    Ok(if negative { -total } else { total })
}

fn frac(value: i128, digits: u32) -> String {
    if value == 0 {
        return String::new();
    }
    let s = format!("{:0width$}", value, width = digits as usize);
    format!(".{}", s.trim_end_matches('0'))
}

/// Format signed nanoseconds as Go's `time.Duration.String` does (`10m0s`, `100ms`, `1h0m0s`).
pub fn format_go_duration(nanos: i128) -> String {
    if nanos == 0 {
        return "0s".to_string();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.abs();
    if u < S {
        return if u < US {
            format!("{sign}{u}ns")
        } else if u < MS {
            format!("{sign}{}{}µs", u / US, frac(u % US, 3))
        } else {
            format!("{sign}{}{}ms", u / MS, frac(u % MS, 6))
        };
    }
    let secs = u / S;
    let h = secs / 3600;
    let m = (secs / 60) % 60;
    let sec = secs % 60;
    let mut out = sign.to_string();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{sec}{}s", frac(u % S, 9)));
    out
}

/// Signed nanoseconds to a `Duration`, negative values saturating at zero.
pub(crate) fn to_std(nanos: i128) -> Duration {
    if nanos <= 0 {
        Duration::ZERO
    } else {
        let n = u64::try_from(nanos).unwrap_or(u64::MAX);
        Duration::from_nanos(n)
    }
}

/// A `Duration` as signed nanoseconds.
pub(crate) fn from_std(d: Duration) -> i128 {
    i128::try_from(d.as_nanos()).unwrap_or(i128::MAX)
}

/// Serde helpers for `Option<Duration>` written as Go duration strings; negative values are
/// rejected.
pub(crate) mod opt_serde {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(d) => s.serialize_str(&format_go_duration(from_std(*d))),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text {
            None => Ok(None),
            Some(t) => {
                let n = parse_go_duration(&t).map_err(serde::de::Error::custom)?;
                if n < 0 {
                    return Err(serde::de::Error::custom(format!(
                        "Invalid value: {t:?}: must be zero or positive"
                    )));
                }
                Ok(Some(to_std(n)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_like_go() {
        assert_eq!(parse_go_duration("15s"), Ok(15 * S));
        assert_eq!(parse_go_duration("1m30s"), Ok(90 * S));
        assert_eq!(parse_go_duration("100ms"), Ok(100 * MS));
        assert_eq!(parse_go_duration("1.5h"), Ok(90 * MIN));
        assert_eq!(parse_go_duration("-2s"), Ok(-2 * S));
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration("3µs"), Ok(3 * US));
        assert!(parse_go_duration("").is_err());
        assert!(
            parse_go_duration("15")
                .unwrap_err()
                .contains("missing unit")
        );
        assert!(
            parse_go_duration("15x")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_go_duration(".s").is_err());
        assert!(parse_go_duration("99999999999999999999999h").is_err());
        assert!(parse_go_duration("9999999999h").is_err());
    }

    #[test]
    fn format_like_go() {
        assert_eq!(format_go_duration(600 * S), "10m0s");
        assert_eq!(format_go_duration(10 * S), "10s");
        assert_eq!(format_go_duration(H), "1h0m0s");
        assert_eq!(format_go_duration(100 * MS), "100ms");
        assert_eq!(format_go_duration(1500 * US), "1.5ms");
        assert_eq!(format_go_duration(-90 * S), "-1m30s");
        assert_eq!(format_go_duration(0), "0s");
    }
}
