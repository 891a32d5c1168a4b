//! Exact integer division by a divisor that many nodes share, as a multiplication.
//!
//! Scoring divides by a node's allocatable (NodeResourcesFit) and by a sum of weights,
//! and a hardware division is the slowest step of the per-node loop. Nodes of one pool
//! have the same allocatable, so [`RecentDivisor`] keeps the multiplier of the last
//! divisor it saw and computes a new one only when the divisor changes. The quotient
//! is always exactly Go's (and Rust's) integer division, truncating toward zero.

/// Division by a fixed positive divisor through a 64×64→128-bit multiplication by
/// `⌊(2^64 − 1) / d⌋` and one correction step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    d: u64,
    multiplier: u64,
}

impl Divisor {
    /// The divisor `d`, or `None` when `d` is not positive.
    pub fn new(d: i64) -> Option<Divisor> {
        let d = u64::try_from(d).ok().filter(|&d| d > 0)?;
        Some(Divisor {
            d,
            multiplier: u64::MAX / d,
        })
    }

    /// `n / d`, truncated toward zero.
    #[inline(always)]
    pub fn divide(&self, n: i64) -> i64 {
        let Ok(n) = u64::try_from(n) else {
            return n / self.d as i64;
        };
        // With m = ⌊(2^64 − 1) / d⌋ = 2^64 / d − e, 0 < e ≤ 1, n·m / 2^64 lies in
        // (n / d − 1, n / d] because n < 2^64: the estimate is the quotient or one less.
        let q = ((u128::from(n) * u128::from(self.multiplier)) >> 64) as u64;
        // n < 2^63 and d < 2^63, so (q + 1)·d ≤ n + d does not overflow.
        if (q + 1) * self.d <= n {
            q as i64 + 1
        } else {
            q as i64
        }
    }
}

/// Divides by divisors that repeat from one node to the next, keeping the last one's
/// multiplier. A divisor that is not positive is divided by directly.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecentDivisor {
    last: Option<Divisor>,
}

impl RecentDivisor {
    /// `n / d`, truncated toward zero (wrapping as Go does for `i64::MIN / -1`).
    #[inline(always)]
    pub fn divide(&mut self, n: i64, d: i64) -> i64 {
        match self.last {
            Some(last) if last.d as i64 == d => last.divide(n),
            _ => match Divisor::new(d) {
                Some(divisor) => {
                    self.last = Some(divisor);
                    divisor.divide(n)
                }
                None => n.wrapping_div(d),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift generator whose values are spread over every magnitude.
    fn magnitudes(seed: u64) -> impl Iterator<Item = i64> {
        let mut x = seed;
        std::iter::from_fn(move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Some((x >> (x % 64)) as i64)
        })
    }

    #[test]
    fn divides_exactly_as_the_hardware_does() {
        let edges = [
            1,
            2,
            3,
            7,
            100,
            4_000,
            34_359_738_368,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            (1 << 53) + 1,
            i64::MAX - 1,
            i64::MAX,
        ];
        let mut cases: Vec<(i64, i64)> = edges
            .iter()
            .flat_map(|&n| edges.iter().map(move |&d| (n, d)))
            .chain([0, -1, -100, i64::MIN + 1, i64::MIN].map(|n| (n, 3)))
            .collect();
        cases.extend(
            magnitudes(0x2545_f491_4f6c_dd1d)
                .zip(magnitudes(7))
                .take(200_000),
        );
        // Numerators just below and at multiples of the divisor.
        for d in magnitudes(99).filter(|&d| d > 0).take(2_000) {
            let k = i64::MAX / d;
            for n in [k * d - 1, k * d, (k / 2) * d - 1, (k / 2) * d, d - 1, d] {
                cases.push((n, d));
            }
        }
        let mut recent = RecentDivisor::default();
        for (n, d) in cases {
            if d == 0 {
                continue;
            }
            let expected = n.wrapping_div(d);
            if let Some(divisor) = Divisor::new(d) {
                assert_eq!(divisor.divide(n), expected, "{n} / {d}");
            }
            assert_eq!(recent.divide(n, d), expected, "{n} / {d} (recent)");
            assert_eq!(recent.divide(n, d), expected, "{n} / {d} (again)");
        }
    }

    #[test]
    fn divisors_that_are_not_positive_are_refused() {
        assert_eq!(Divisor::new(0), None);
        assert_eq!(Divisor::new(-5), None);
        let mut recent = RecentDivisor::default();
        assert_eq!(recent.divide(10, -3), -3);
        assert_eq!(recent.divide(i64::MIN, -1), i64::MIN);
    }
}
