//! Pods that a Permit plugin asked to wait: kube-scheduler's `waitingPodsMap`
//! (pkg/scheduler/framework/runtime/waiting_pods_map.go), without goroutines.
//!
//! When Permit returns `Wait`, the pod stays assumed on its node (its resources count
//! for every later pod) and an entry goes into the [`WaitingPods`] map that every
//! profile's [`Handle`](crate::Handle) shares. Plugins find the entries with
//! [`WaitingPods::iterate`] or [`WaitingPods::get`] and decide them with
//! [`WaitingPod::allow`] (every plugin that asked to wait must allow) or
//! [`WaitingPod::reject`] (the first decision wins, as on kube-scheduler's one-slot
//! channel). Nothing blocks: the scheduler that parked the pod reads the decision
//! after each cycle ([`Scheduler::resolve_waiting`](crate::Scheduler::resolve_waiting))
//! and goes on with the binding cycle or unreserves the pod; when its clock says a
//! plugin's wait is over, it rejects the pod with kube-scheduler's
//! `rejected due to timeout after waiting %v at plugin %v`
//! ([`Scheduler::time_out_waiting`](crate::Scheduler::time_out_waiting)).
//!
//! Floor: the framework's own; it reads only [`PodInfo`] and [`Status`].

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::pod_info::PodInfo;
use crate::status::{Code, Status};

/// The longest a Permit plugin may make a pod wait (kube-scheduler's `maxTimeout`,
/// 15 minutes); a longer wait is cut to it.
pub const MAX_PERMIT_WAIT: Duration = Duration::from_secs(15 * 60);

/// One pod waiting at Permit (kube-scheduler's `waitingPod`).
#[derive(Debug)]
pub struct WaitingPod {
    pod: Arc<PodInfo>,
    node: String,
    /// The plugins that asked to wait and have not allowed yet, with their wait.
    pending: BTreeMap<String, Duration>,
    /// Every plugin's wait, as asked (for the deadline).
    waits: BTreeMap<String, Duration>,
    /// When the pod started waiting, in the scheduler clock's nanoseconds.
    since: u64,
    decision: Option<Status>,
}

impl WaitingPod {
    /// The pod (as assumed on its node).
    pub fn pod(&self) -> &Arc<PodInfo> {
        &self.pod
    }

    /// The node the pod is assumed on.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The plugins that asked the pod to wait and have not allowed it yet, in name
    /// order (kube-scheduler's `GetPendingPlugins`).
    pub fn pending_plugins(&self) -> Vec<String> {
        self.pending.keys().cloned().collect()
    }

    /// `plugin` allows the pod; once every plugin that asked to wait has allowed it,
    /// the pod is allowed (unless it was rejected first).
    pub fn allow(&mut self, plugin: &str) {
        self.pending.remove(plugin);
        if self.pending.is_empty() && self.decision.is_none() {
            self.decision = Some(Status::success());
        }
    }

    /// `plugin` rejects the pod with `message` (an `Unschedulable` status naming the
    /// plugin); the first decision wins.
    pub fn reject(&mut self, plugin: &str, message: &str) {
        if self.decision.is_none() {
            self.decision = Some(
                Status::new(Code::Unschedulable, message.to_string())
                    .with_plugin(Arc::from(plugin)),
            );
        }
        self.pending.clear();
    }

    /// The decision, once there is one: `Success` or the rejection.
    pub fn decision(&self) -> Option<&Status> {
        self.decision.as_ref()
    }

    /// When the first plugin's wait ends (clock nanoseconds), and that plugin and its
    /// wait; `None` once decided.
    fn deadline(&self) -> Option<(u64, &str, Duration)> {
        if self.decision.is_some() {
            return None;
        }
        self.waits
            .iter()
            .filter(|(p, _)| self.pending.contains_key(*p))
            .map(|(p, d)| {
                let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                (self.since.saturating_add(nanos), p.as_str(), *d)
            })
            .min_by_key(|(at, _, _)| *at)
    }
}

/// The pods waiting at Permit, in the order they started waiting; shared by every
/// profile of a scheduler through [`Handle::waiting_pods`](crate::Handle::waiting_pods).
#[derive(Debug, Default)]
pub struct WaitingPods {
    inner: Mutex<Inner>,
}

/// The map's contents. A gang of n pods puts n pods here one by one and asks about
/// them after each, so what is asked after every cycle is O(1): whether a pod waits
/// (`uids`), whether any is decided (`decided`), whether any left (`departures`).
#[derive(Debug, Default)]
struct Inner {
    pods: VecDeque<WaitingPod>,
    uids: HashSet<String>,
    /// How many of `pods` have a decision.
    decided: usize,
    /// How many pods have left the map since it was made.
    departures: u64,
}

impl Inner {
    /// Calls `f` on `w`, counting the decision `f` makes.
    fn decide<R>(
        decided: &mut usize,
        w: &mut WaitingPod,
        f: impl FnOnce(&mut WaitingPod) -> R,
    ) -> R {
        let before = w.decision.is_some();
        let result = f(w);
        if !before && w.decision.is_some() {
            *decided += 1;
        }
        result
    }

    fn remove(&mut self, i: usize) -> Option<WaitingPod> {
        let w = self.pods.remove(i)?;
        self.uids.remove(w.pod.uid());
        if w.decision.is_some() {
            self.decided -= 1;
        }
        self.departures += 1;
        Some(w)
    }
}

impl WaitingPods {
    /// An empty map.
    pub fn new() -> WaitingPods {
        WaitingPods::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `pod`, assumed on `node`, waiting for each plugin of `waits` (each wait
    /// already cut to [`MAX_PERMIT_WAIT`]) since `since` (clock nanoseconds).
    pub fn add(
        &self,
        pod: Arc<PodInfo>,
        node: &str,
        waits: BTreeMap<String, Duration>,
        since: u64,
    ) {
        let mut inner = self.lock();
        if inner.uids.contains(pod.uid())
            && let Some(i) = inner.pods.iter().position(|w| w.pod.uid() == pod.uid())
        {
            inner.remove(i);
        }
        inner.uids.insert(pod.uid().to_string());
        inner.pods.push_back(WaitingPod {
            pod,
            node: node.to_string(),
            pending: waits.clone(),
            waits,
            since,
            decision: None,
        });
    }

    /// Calls `f` on every waiting pod, in the order they started waiting (plugins
    /// allow or reject them there: kube-scheduler's `IterateOverWaitingPods`).
    pub fn iterate(&self, mut f: impl FnMut(&mut WaitingPod)) {
        let mut inner = self.lock();
        let Inner { pods, decided, .. } = &mut *inner;
        for w in pods.iter_mut() {
            Inner::decide(decided, w, &mut f);
        }
    }

    /// Calls `f` on the waiting pod with this uid, if it waits (kube-scheduler's
    /// `GetWaitingPod`); returns what `f` returned.
    pub fn get<R>(&self, uid: &str, f: impl FnOnce(&mut WaitingPod) -> R) -> Option<R> {
        let mut inner = self.lock();
        if !inner.uids.contains(uid) {
            return None;
        }
        let Inner { pods, decided, .. } = &mut *inner;
        let w = pods.iter_mut().find(|w| w.pod.uid() == uid)?;
        Some(Inner::decide(decided, w, f))
    }

    /// Whether the pod with this uid waits (decided or not, until the scheduler takes
    /// it out), in O(1).
    pub fn contains(&self, uid: &str) -> bool {
        self.lock().uids.contains(uid)
    }

    /// How many pods have left the map since it was made (taken out decided, or
    /// replaced by a new wait of the same pod). While it stays the same, every pod
    /// that was waiting still is: a plugin may keep what it counted until then.
    pub fn departures(&self) -> u64 {
        self.lock().departures
    }

    /// How many pods wait (decided or not, until the scheduler takes them out).
    pub fn len(&self) -> usize {
        self.lock().pods.len()
    }

    /// `true` when no pod waits.
    pub fn is_empty(&self) -> bool {
        self.lock().pods.is_empty()
    }

    /// Takes the pod with this uid out, decided or not (a PodGroup cycle that reverts
    /// the pods it assumed); `true` when it was there.
    pub fn remove(&self, uid: &str) -> bool {
        let mut inner = self.lock();
        if !inner.uids.contains(uid) {
            return false;
        }
        let Some(i) = inner.pods.iter().position(|w| w.pod.uid() == uid) else {
            return false;
        };
        inner.remove(i).is_some()
    }

    /// Takes out the first pod (in waiting order) that has a decision, with it.
    pub fn take_decided(&self) -> Option<(Arc<PodInfo>, String, Status)> {
        let mut inner = self.lock();
        if inner.decided == 0 {
            return None;
        }
        let i = inner.pods.iter().position(|w| w.decision.is_some())?;
        let w = inner.remove(i)?;
        let status = w.decision.unwrap_or_else(Status::success);
        Some((w.pod, w.node, status))
    }

    /// When the wait of the pod with this uid ends (clock nanoseconds): the earliest
    /// deadline of the plugins it still waits for. `None` when it does not wait or is
    /// decided.
    pub fn deadline_of(&self, uid: &str) -> Option<u64> {
        let inner = self.lock();
        if !inner.uids.contains(uid) {
            return None;
        }
        let w = inner.pods.iter().find(|w| w.pod.uid() == uid)?;
        w.deadline().map(|(at, _, _)| at)
    }

    /// Rejects the pod with this uid with kube-scheduler's timeout message if, at
    /// `now` (clock nanoseconds), the wait of a plugin it still waits for has ended:
    /// what that plugin's timer does in a running scheduler. Returns whether it did.
    pub fn time_out_if_due(&self, uid: &str, now: u64) -> bool {
        let mut inner = self.lock();
        if !inner.uids.contains(uid) {
            return false;
        }
        let Inner { pods, decided, .. } = &mut *inner;
        let Some(w) = pods.iter_mut().find(|w| w.pod.uid() == uid) else {
            return false;
        };
        let Some((at, plugin, wait)) = w.deadline().map(|(at, p, d)| (at, p.to_string(), d)) else {
            return false;
        };
        if at > now {
            return false;
        }
        Inner::decide(decided, w, |w| {
            w.reject(&plugin, &timeout_message(wait, &plugin))
        });
        true
    }

    /// When the first undecided pod's wait ends (clock nanoseconds), without
    /// deciding anything; `None` when no pod is undecided. A replay makes it an event
    /// on its clock.
    pub fn next_deadline(&self) -> Option<u64> {
        self.lock()
            .pods
            .iter()
            .filter_map(|w| w.deadline().map(|(at, _, _)| at))
            .min()
    }

    /// Rejects the undecided pod whose wait ends first (ties: the one that waited
    /// first) with kube-scheduler's timeout message, as its timer would; returns the
    /// time its wait ended (clock nanoseconds), or `None` when no pod is undecided.
    pub fn time_out_first(&self) -> Option<u64> {
        let mut inner = self.lock();
        let (i, at, plugin, wait) = inner
            .pods
            .iter()
            .enumerate()
            .filter_map(|(i, w)| w.deadline().map(|(at, p, d)| (i, at, p.to_string(), d)))
            .min_by_key(|(i, at, _, _)| (*at, *i))?;
        let Inner { pods, decided, .. } = &mut *inner;
        Inner::decide(decided, &mut pods[i], |w| {
            w.reject(&plugin, &timeout_message(wait, &plugin))
        });
        Some(at)
    }
}

/// kube-scheduler's message for a pod whose wait at `plugin` ran out:
/// `rejected due to timeout after waiting 10s at plugin Coscheduling`.
pub fn timeout_message(wait: Duration, plugin: &str) -> String {
    format!(
        "rejected due to timeout after waiting {} at plugin {plugin}",
        go_duration(wait)
    )
}

/// A duration as Go's `time.Duration.String` writes it: `0s`, `1.5s`, `1m0s`, `2h3m4s`,
/// `250ms`, `3µs`, `7ns`.
pub fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_string();
    }
    fn frac(value: u128, unit: u128) -> String {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            return whole.to_string();
        }
        let width = unit.ilog10() as usize;
        let digits = format!("{rest:0width$}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", frac(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", frac(nanos, 1_000_000));
    }
    let secs = nanos / 1_000_000_000;
    let sub = nanos % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let s = frac(s * 1_000_000_000 + sub, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_prints_them() {
        for (d, s) in [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(10), "10s"),
            (Duration::from_secs(60), "1m0s"),
            (Duration::from_secs(3725), "1h2m5s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::from_micros(3), "3µs"),
        ] {
            assert_eq!(go_duration(d), s);
        }
    }

    #[test]
    fn the_first_decision_wins_and_every_waiting_plugin_must_allow() {
        let pod = crate::build::PodBuilder::new("default", "p")
            .pod_info()
            .unwrap();
        let map = WaitingPods::new();
        let waits = BTreeMap::from([
            ("A".to_string(), Duration::from_secs(5)),
            ("B".to_string(), Duration::from_secs(3)),
        ]);
        map.add(pod.clone(), "n1", waits, 0);
        map.iterate(|w| w.allow("A"));
        assert!(map.take_decided().is_none());
        assert_eq!(map.time_out_first(), Some(3_000_000_000));
        map.iterate(|w| w.allow("B"));
        let (_, node, status) = map.take_decided().unwrap();
        assert_eq!(node, "n1");
        assert_eq!(
            status.message(),
            "rejected due to timeout after waiting 3s at plugin B"
        );
        assert_eq!(status.code(), Code::Unschedulable);
        assert!(map.is_empty());
    }

    #[test]
    fn one_pod_times_out_at_the_deadline_of_a_plugin_it_still_waits_for() {
        let pod = crate::build::PodBuilder::new("default", "p")
            .pod_info()
            .unwrap();
        let map = WaitingPods::new();
        let waits = BTreeMap::from([
            ("A".to_string(), Duration::from_secs(2)),
            ("B".to_string(), Duration::from_secs(5)),
        ]);
        map.add(pod.clone(), "n1", waits, 1_000);
        assert_eq!(map.deadline_of(pod.uid()), Some(2_000_001_000));
        assert!(!map.time_out_if_due(pod.uid(), 2_000_000_999));
        // A allowed: the wait now ends at B's deadline.
        map.get(pod.uid(), |w| w.allow("A"));
        assert_eq!(map.deadline_of(pod.uid()), Some(5_000_001_000));
        assert!(!map.time_out_if_due(pod.uid(), 3_000_000_000));
        assert!(map.time_out_if_due(pod.uid(), 5_000_001_000));
        assert_eq!(map.deadline_of(pod.uid()), None, "decided");
        assert!(!map.time_out_if_due(pod.uid(), u64::MAX), "decided once");
        let (_, _, status) = map.take_decided().unwrap();
        assert_eq!(
            status.message(),
            "rejected due to timeout after waiting 5s at plugin B"
        );
        assert!(!map.time_out_if_due("nobody", u64::MAX));
    }

    #[test]
    fn the_next_deadline_is_the_earliest_undecided_wait_and_decides_nothing() {
        let pod = |name| {
            crate::build::PodBuilder::new("default", name)
                .pod_info()
                .unwrap()
        };
        let map = WaitingPods::new();
        assert_eq!(map.next_deadline(), None);
        let wait = |s| BTreeMap::from([("P".to_string(), Duration::from_secs(s))]);
        map.add(pod("a"), "n1", wait(60), 10);
        map.add(pod("b"), "n1", wait(5), 20);
        assert_eq!(map.next_deadline(), Some(5_000_000_020));
        assert!(map.take_decided().is_none());
        map.iterate(|w| {
            if w.pod().name() == "b" {
                w.allow("P");
            }
        });
        assert_eq!(map.next_deadline(), Some(60_000_000_010));
    }
}
