//! Saying that the API server cannot be reached once per outage, not once per failed
//! request: the first failure of a quiet period is a warning, the failures after it
//! are debug lines, and the first success after them is one "recovered" line with how
//! long it lasted and how many requests failed meanwhile. Refusals that retrying cannot
//! change ([`Refusals`]: an event the API server rejects) are said the same way, once
//! per kind of refusal until a request goes through again.

use std::collections::{BTreeMap, BTreeSet};
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

/// Requests the API server refused for good (a 403, a 422: retrying cannot help), by
/// kind of refusal: the first of a kind is a warning, the others of that kind debug
/// lines, until a request of the same traffic succeeds; then one line says how many
/// were refused meanwhile.
#[derive(Debug)]
pub(crate) struct Refusals {
    what: &'static str,
    /// The refusals since the last success, by kind.
    kinds: Mutex<BTreeMap<String, u64>>,
}

impl Refusals {
    pub(crate) fn new(what: &'static str) -> Refusals {
        Refusals {
            what,
            kinds: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
        self.kinds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The API server refused the request about `subject` with a refusal of `kind` (its
    /// code and reason); returns whether this was said as a warning (the first of its
    /// kind since the last success).
    pub(crate) fn refused(&self, kind: &str, subject: &str, error: &dyn std::fmt::Display) -> bool {
        let mut kinds = self.lock();
        let count = kinds.entry(kind.to_string()).or_insert(0);
        *count += 1;
        let first = *count == 1;
        drop(kinds);
        if first {
            tracing::warn!(what = self.what, %kind, %subject, error = %error, "server refused the write (will not retry; said once per kind until a write succeeds)");
        } else {
            tracing::debug!(what = self.what, %kind, %subject, error = %error, "server refused the write");
        }
        first
    }

    /// A request went through: the refusals since the last one, if any, are summed up
    /// in one line.
    pub(crate) fn succeeded(&self) {
        let mut kinds = self.lock();
        if kinds.is_empty() {
            return;
        }
        let refused = std::mem::take(&mut *kinds);
        drop(kinds);
        for (kind, count) in refused {
            tracing::info!(what = self.what, %kind, refused_requests = count, "writes go through again");
        }
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

    #[test]
    fn a_refusal_is_said_once_per_kind_until_a_write_succeeds() {
        let r = Refusals::new("events");
        assert!(r.refused("422 Invalid", "e1", &"note too long"));
        assert!(!r.refused("422 Invalid", "e2", &"note too long"));
        assert!(r.refused("403 Forbidden", "e3", &"forbidden"));
        assert!(!r.refused("403 Forbidden", "e4", &"forbidden"));
        r.succeeded();
        assert!(
            r.refused("422 Invalid", "e5", &"note too long"),
            "said again"
        );
    }
}
