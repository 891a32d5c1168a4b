//! Saying that the API server cannot be reached once per outage, not once per failed
//! request: the first failure of a quiet period is a warning, the failures after it
//! are debug lines, and the first success after them is one "recovered" line with how
//! long it lasted and how many requests failed meanwhile.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Instant;

/// Failures of one kind of traffic (the watches, the scheduling client's writes, the
/// event writes), each by a key (the watched kind, or one key for all).
#[derive(Debug)]
pub(crate) struct Outage {
    what: &'static str,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    failing: BTreeSet<String>,
    since: Option<Instant>,
    failures: u64,
}

impl Outage {
    pub(crate) fn new(what: &'static str) -> Outage {
        Outage {
            what,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request for `key` failed; the first failure while nothing else fails is a
    /// warning.
    pub(crate) fn failed(&self, key: &str, error: &dyn std::fmt::Display) {
        let mut s = self.lock();
        s.failures += 1;
        let first = s.since.is_none();
        if first {
            s.since = Some(Instant::now());
        }
        s.failing.insert(key.to_string());
        drop(s);
        if first {
            tracing::warn!(what = self.what, %key, error = %error, "API server requests failing; retrying with backoff (said once until they recover)");
        } else {
            tracing::debug!(what = self.what, %key, error = %error, "request failed");
        }
    }

    /// A request for `key` succeeded; when it was the last key failing, the outage is
    /// over: one line says so.
    pub(crate) fn succeeded(&self, key: &str) {
        let mut s = self.lock();
        if s.since.is_none() || !s.failing.remove(key) || !s.failing.is_empty() {
            return;
        }
        let since = s.since.take();
        let failures = std::mem::take(&mut s.failures);
        drop(s);
        let lasted = since.map(|t| t.elapsed().as_secs_f64()).unwrap_or(0.0);
        tracing::info!(
            what = self.what,
            lasted_seconds = format!("{lasted:.1}"),
            failed_requests = failures,
            "API server requests recovered"
        );
    }

    /// Whether requests are failing now (per-request lines are then debug).
    pub(crate) fn active(&self) -> bool {
        self.lock().since.is_some()
    }
}

/// client-go's reflector backoff (`NewExponentialBackoffManager(800ms, 30s, 2m, 2.0,
/// 1.0)`): 800 ms doubling up to 30 s, each wait plus up to as much again at random,
/// and back to 800 ms after 2 minutes without a failure.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: std::time::Duration,
    last_failure: Option<Instant>,
}

impl Backoff {
    const INITIAL: std::time::Duration = std::time::Duration::from_millis(800);
    const MAX: std::time::Duration = std::time::Duration::from_secs(30);
    const RESET: std::time::Duration = std::time::Duration::from_secs(120);

    pub(crate) fn new() -> Backoff {
        Backoff {
            next: Self::INITIAL,
            last_failure: None,
        }
    }

    /// The wait before the next try, after a failure.
    pub(crate) fn next_wait(&mut self) -> std::time::Duration {
        if self
            .last_failure
            .is_some_and(|t| t.elapsed() >= Self::RESET)
        {
            self.next = Self::INITIAL;
        }
        self.last_failure = Some(Instant::now());
        let base = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        base + base.mul_f64(jitter())
    }
}

/// A number in [0, 1), different on each call (for jitter; not for anything that
/// needs real randomness).
pub(crate) fn jitter() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ nanos;
    // splitmix64
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn backoff_doubles_from_800ms_to_30s_with_up_to_as_much_jitter() {
        let mut b = Backoff::new();
        let mut base = Duration::from_millis(800);
        for _ in 0..10 {
            let w = b.next_wait();
            assert!(w >= base && w < base * 2, "{w:?} for {base:?}");
            base = (base * 2).min(Duration::from_secs(30));
        }
    }

    #[test]
    fn an_outage_is_active_until_every_failing_key_succeeds() {
        let o = Outage::new("watches");
        o.failed("Pod", &"refused");
        o.failed("Node", &"refused");
        o.succeeded("Pod");
        assert!(o.active());
        o.succeeded("Node");
        assert!(!o.active());
        // A success of a key that was not failing ends nothing and starts nothing.
        o.succeeded("Service");
        assert!(!o.active());
    }
}
