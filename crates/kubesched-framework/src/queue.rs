//! The scheduling queue, as kube-scheduler's `PriorityQueue`
//! (`pkg/scheduler/backend/queue/scheduling_queue.go`), without Kubernetes:
//!
//! - the **active queue** holds the pods ready to be tried, in QueueSort order;
//! - the **backoff queue** holds pods that failed and wait out their exponential backoff
//!   (`podInitialBackoffSeconds` doubled per attempt, at most `podMaxBackoffSeconds`);
//! - the **unschedulable set** holds pods no node fitted; a [`ClusterEvent`] that could
//!   make them schedulable (a node added or changed, a pod deleted, ...) moves them back
//!   (to backoff while their backoff lasts), and so does staying there longer than
//!   `podMaxInUnschedulablePodsDuration` (5 minutes by default).
//!
//! Time comes from a [`Clock`], so tests drive it with a [`FakeClock`]. The queue never
//! blocks: [`SchedulingQueue::pop`] returns `None` when nothing is ready and
//! [`SchedulingQueue::next_wakeup`] says when something will be.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::Pod;
//! use kubesched_framework::queue::{FakeClock, QueueOptions, SchedulingQueue};
//! use kubesched_framework::PodInfo;
//!
//! let clock = Arc::new(FakeClock::new());
//! let mut q = SchedulingQueue::new(QueueOptions::default(), clock.clone(), |a, b| a.timestamp < b.timestamp);
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("p".into());
//! q.add(Arc::new(PodInfo::new(Arc::new(pod)).unwrap()));
//! let popped = q.pop().unwrap();
//! assert_eq!(popped.info.attempts, 1);
//! // The attempt failed with an error: one second of backoff.
//! q.add_backoff(popped);
//! assert!(q.pop().is_none());
//! clock.advance(Duration::from_secs(1));
//! assert_eq!(q.pop().unwrap().info.attempts, 2);
//! ```

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::plugin::QueuedPodInfo;
use crate::pod_info::PodInfo;

/// Where the queue gets the time from.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Instant;
}

/// The real, monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that only moves when told to: for tests.
#[derive(Debug)]
pub struct FakeClock {
    now: Mutex<Instant>,
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::new()
    }
}

impl FakeClock {
    /// A fake clock at the current instant.
    pub fn new() -> FakeClock {
        FakeClock {
            now: Mutex::new(Instant::now()),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// kube-scheduler's default `podMaxInUnschedulablePodsDuration`.
pub const DEFAULT_MAX_IN_UNSCHEDULABLE_PODS_DURATION: Duration = Duration::from_secs(5 * 60);

/// The queue's timings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueOptions {
    /// The backoff after the first failed attempt (`podInitialBackoffSeconds`, 1 s).
    pub initial_backoff: Duration,
    /// The longest backoff (`podMaxBackoffSeconds`, 10 s).
    pub max_backoff: Duration,
    /// How long a pod stays unschedulable before it is retried anyway (5 min).
    pub max_in_unschedulable: Duration,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            max_in_unschedulable: DEFAULT_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        }
    }
}

impl QueueOptions {
    /// The options of a configuration's `podInitialBackoffSeconds` and
    /// `podMaxBackoffSeconds` (negative values count as 0).
    pub fn from_seconds(initial: i64, max: i64) -> QueueOptions {
        QueueOptions {
            initial_backoff: Duration::from_secs(initial.max(0) as u64),
            max_backoff: Duration::from_secs(max.max(0) as u64),
            ..QueueOptions::default()
        }
    }
}

/// A cluster change that may make unschedulable pods schedulable (kube-scheduler's
/// `ClusterEvent`s the default plugins register for, and its internal ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterEvent {
    /// A node was added.
    NodeAdd,
    /// A node changed (labels, taints, allocatable, schedulability).
    NodeUpdate,
    /// A pod bound to a node was deleted: its resources are free.
    AssignedPodDelete,
    /// A pod was bound to a node (pod affinity may now be satisfied).
    AssignedPodAdd,
    /// A bound pod changed (its labels or requests).
    AssignedPodUpdate,
    /// The pod itself was updated.
    UnscheduledPodUpdate,
    /// The pod stayed unschedulable longer than `podMaxInUnschedulablePodsDuration`.
    UnschedulableTimeout,
    /// Everything is retried (kube-scheduler's `ForceActivate`).
    ForceActivate,
}

impl ClusterEvent {
    /// The `event` label of `scheduler_queue_incoming_pods_total`, as kube-scheduler
    /// spells it.
    pub fn label(self) -> &'static str {
        match self {
            ClusterEvent::NodeAdd => "NodeAdd",
            ClusterEvent::NodeUpdate => "NodeUpdate",
            ClusterEvent::AssignedPodDelete => "AssignedPodDelete",
            ClusterEvent::AssignedPodAdd => "AssignedPodAdd",
            ClusterEvent::AssignedPodUpdate => "AssignedPodUpdate",
            ClusterEvent::UnscheduledPodUpdate => "UnscheduledPodUpdate",
            ClusterEvent::UnschedulableTimeout => "UnschedulableTimeout",
            ClusterEvent::ForceActivate => "ForceActivate",
        }
    }
}

/// Which part of the queue a pod is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueName {
    /// Ready to be tried.
    Active,
    /// Waiting out its backoff.
    Backoff,
    /// Waiting for a cluster event.
    Unschedulable,
    /// Kept out by a PreEnqueue plugin (scheduling gates).
    Gated,
}

impl QueueName {
    /// The `queue` label of kube-scheduler's queue metrics.
    pub fn label(self) -> &'static str {
        match self {
            QueueName::Active => "active",
            QueueName::Backoff => "backoff",
            QueueName::Unschedulable => "unschedulable",
            QueueName::Gated => "gated",
        }
    }
}

/// A pod the queue handed out, or holds: the [`QueuedPodInfo`] the QueueSort plugin
/// sees, with the queue's own bookkeeping.
#[derive(Clone, Debug)]
pub struct QueuedPod {
    /// The pod, its enqueue order and attempt count.
    pub info: QueuedPodInfo,
    /// When the pod last entered the queue or last failed (backoff starts here).
    pub last_update: Instant,
    /// When the pod first entered the queue (for the attempt-duration metrics).
    pub initial_attempt: Instant,
    /// The scheduling cycle of the attempt that popped it (0 before any).
    pub scheduling_cycle: u64,
    /// The plugins that rejected the pod in its last attempt.
    pub unschedulable_plugins: BTreeSet<String>,
}

impl QueuedPod {
    /// `namespace/name`.
    pub fn key(&self) -> &str {
        self.info.pod_info.key()
    }
}

/// Counts of the pods in each part of the queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PendingCounts {
    /// In the active queue.
    pub active: usize,
    /// In the backoff queue.
    pub backoff: usize,
    /// In the unschedulable set.
    pub unschedulable: usize,
    /// Gated by PreEnqueue plugins.
    pub gated: usize,
}

/// Called for every pod that enters part of the queue: the queue and the event.
pub type IncomingHook = Arc<dyn Fn(QueueName, &str) + Send + Sync>;

type LessFn = Arc<dyn Fn(&QueuedPodInfo, &QueuedPodInfo) -> bool + Send + Sync>;

/// kube-scheduler's scheduling queue: active, backoff and unschedulable.
pub struct SchedulingQueue {
    options: QueueOptions,
    clock: Arc<dyn Clock>,
    less: LessFn,
    /// A binary heap ordered by `less` (the root is the next pod).
    active: Vec<QueuedPod>,
    backoff: HashMap<String, QueuedPod>,
    unschedulable: HashMap<String, QueuedPod>,
    gated: HashMap<String, QueuedPod>,
    /// Pods popped and not yet done.
    in_flight: HashSet<String>,
    next_timestamp: u64,
    scheduling_cycle: u64,
    move_request_cycle: u64,
    incoming: Option<IncomingHook>,
}

impl fmt::Debug for SchedulingQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulingQueue")
            .field("options", &self.options)
            .field("pending", &self.pending())
            .field("in_flight", &self.in_flight.len())
            .finish()
    }
}

impl SchedulingQueue {
    /// An empty queue ordered by `less` (usually [`crate::Framework::queue_less`] of
    /// the profiles' shared QueueSort plugin).
    pub fn new<F>(options: QueueOptions, clock: Arc<dyn Clock>, less: F) -> SchedulingQueue
    where
        F: Fn(&QueuedPodInfo, &QueuedPodInfo) -> bool + Send + Sync + 'static,
    {
        SchedulingQueue {
            options,
            clock,
            less: Arc::new(less),
            active: Vec::new(),
            backoff: HashMap::new(),
            unschedulable: HashMap::new(),
            gated: HashMap::new(),
            in_flight: HashSet::new(),
            next_timestamp: 0,
            scheduling_cycle: 0,
            move_request_cycle: 0,
            incoming: None,
        }
    }

    /// Calls `hook` for every pod entering a part of the queue (metrics).
    pub fn set_incoming_hook(&mut self, hook: IncomingHook) {
        self.incoming = Some(hook);
    }

    /// The queue's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The current scheduling cycle (the number of pops so far).
    pub fn scheduling_cycle(&self) -> u64 {
        self.scheduling_cycle
    }

    fn note(&self, queue: QueueName, event: &str) {
        if let Some(h) = &self.incoming {
            h(queue, event);
        }
    }

    /// `true` when the pod (by key) is anywhere in the queue or in flight.
    pub fn contains(&self, key: &str) -> bool {
        self.in_flight.contains(key)
            || self.backoff.contains_key(key)
            || self.unschedulable.contains_key(key)
            || self.gated.contains_key(key)
            || self.active.iter().any(|p| p.key() == key)
    }

    /// `true` when the pod was popped and is not done yet.
    pub fn is_in_flight(&self, key: &str) -> bool {
        self.in_flight.contains(key)
    }

    /// The number of pods in each part.
    pub fn pending(&self) -> PendingCounts {
        PendingCounts {
            active: self.active.len(),
            backoff: self.backoff.len(),
            unschedulable: self.unschedulable.len(),
            gated: self.gated.len(),
        }
    }

    /// Adds a new pending pod to the active queue (kube-scheduler's `Add`). A pod
    /// already queued is updated instead.
    pub fn add(&mut self, pod: Arc<PodInfo>) {
        if self.contains(pod.key()) {
            self.update(pod);
            return;
        }
        let now = self.clock.now();
        self.next_timestamp += 1;
        let qp = QueuedPod {
            info: QueuedPodInfo {
                pod_info: pod,
                timestamp: self.next_timestamp,
                attempts: 0,
            },
            last_update: now,
            initial_attempt: now,
            scheduling_cycle: 0,
            unschedulable_plugins: BTreeSet::new(),
        };
        self.push_active(qp, "PodAdd");
    }

    /// Adds a pod that a PreEnqueue plugin keeps out; it moves to the active queue
    /// when it is updated.
    pub fn add_gated(&mut self, mut pod: QueuedPod) {
        self.in_flight.remove(pod.key());
        pod.last_update = self.clock.now();
        self.note(QueueName::Gated, "PodAdd");
        self.gated.insert(pod.key().to_string(), pod);
    }

    /// Replaces a queued pod's object (kube-scheduler's `Update`): a pod waiting in
    /// the unschedulable set or gated is moved back, since the change may make it
    /// schedulable. A pod in flight keeps its place.
    pub fn update(&mut self, pod: Arc<PodInfo>) {
        let key = pod.key().to_string();
        if let Some(p) = self.active.iter_mut().find(|p| p.key() == key) {
            p.info.pod_info = pod;
            self.heapify();
            return;
        }
        if let Some(p) = self.backoff.get_mut(&key) {
            p.info.pod_info = pod;
            return;
        }
        let waiting = self
            .unschedulable
            .remove(&key)
            .or_else(|| self.gated.remove(&key));
        if let Some(mut p) = waiting {
            p.info.pod_info = pod;
            self.requeue(p, ClusterEvent::UnscheduledPodUpdate.label());
        }
    }

    /// Removes a pod everywhere (it was deleted, or bound by someone else).
    pub fn delete(&mut self, key: &str) {
        self.in_flight.remove(key);
        self.backoff.remove(key);
        self.unschedulable.remove(key);
        self.gated.remove(key);
        if let Some(i) = self.active.iter().position(|p| p.key() == key) {
            self.active.swap_remove(i);
            self.heapify();
        }
    }

    /// The next pod to schedule, or `None` when no pod is ready. Moves pods whose
    /// backoff is over, and pods unschedulable for too long, first. The pod counts an
    /// attempt and is in flight until [`SchedulingQueue::done`] or a requeue.
    pub fn pop(&mut self) -> Option<QueuedPod> {
        self.flush();
        let mut p = self.pop_active()?;
        self.scheduling_cycle += 1;
        p.info.attempts += 1;
        p.scheduling_cycle = self.scheduling_cycle;
        self.in_flight.insert(p.key().to_string());
        Some(p)
    }

    /// The pod is done (bound, or dropped): it leaves the in-flight set.
    pub fn done(&mut self, key: &str) {
        self.in_flight.remove(key);
    }

    /// Puts back a pod that no node fitted (kube-scheduler's
    /// `AddUnschedulableIfNotPresent`): to the unschedulable set, or to backoff when a
    /// cluster event came while it was being scheduled.
    pub fn add_unschedulable(&mut self, mut pod: QueuedPod, plugins: BTreeSet<String>) {
        let key = pod.key().to_string();
        if !self.in_flight.remove(&key) && self.contains(&key) {
            return;
        }
        pod.last_update = self.clock.now();
        pod.unschedulable_plugins = plugins;
        if self.move_request_cycle >= pod.scheduling_cycle && pod.scheduling_cycle > 0 {
            self.note(QueueName::Backoff, "ScheduleAttemptFailure");
            self.backoff.insert(key, pod);
        } else {
            self.note(QueueName::Unschedulable, "ScheduleAttemptFailure");
            self.unschedulable.insert(key, pod);
        }
    }

    /// Puts back a pod whose attempt failed with an error (a plugin error, a binding
    /// failure, a bind conflict): to the backoff queue.
    pub fn add_backoff(&mut self, mut pod: QueuedPod) {
        let key = pod.key().to_string();
        if !self.in_flight.remove(&key) && self.contains(&key) {
            return;
        }
        pod.last_update = self.clock.now();
        self.note(QueueName::Backoff, "ScheduleAttemptFailure");
        self.backoff.insert(key, pod);
    }

    /// Moves every unschedulable pod back to the active queue, or to backoff while
    /// its backoff lasts (kube-scheduler's `MoveAllToActiveOrBackoffQueue`).
    pub fn move_all_to_active_or_backoff(&mut self, event: ClusterEvent) {
        self.move_request_cycle = self.scheduling_cycle;
        let pods: Vec<QueuedPod> = self.unschedulable.drain().map(|(_, p)| p).collect();
        for p in pods {
            self.requeue(p, event.label());
        }
    }

    /// The backoff of a pod after its attempts (kube-scheduler's
    /// `calculateBackoffDuration`): none before any attempt, then the initial backoff
    /// doubled per further attempt, at most the maximum.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let max = self.options.max_backoff;
        let mut d = self.options.initial_backoff;
        for _ in 1..attempts {
            if d > max.saturating_sub(d) {
                return max;
            }
            d += d;
        }
        d
    }

    /// When the pod's backoff ends.
    pub fn backoff_expiry(&self, pod: &QueuedPod) -> Instant {
        pod.last_update + self.backoff_duration(pod.info.attempts)
    }

    /// When the queue next has something to do on its own (a backoff ending, an
    /// unschedulable pod timing out); `None` when nothing waits.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let backoff = self.backoff.values().map(|p| self.backoff_expiry(p)).min();
        let unsched = self
            .unschedulable
            .values()
            .map(|p| p.last_update + self.options.max_in_unschedulable)
            .min();
        match (backoff, unsched) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves the pods whose backoff is over to the active queue, and the pods
    /// unschedulable for longer than `max_in_unschedulable` to active or backoff.
    pub fn flush(&mut self) {
        let now = self.clock.now();
        let done: Vec<String> = self
            .backoff
            .iter()
            .filter(|(_, p)| self.backoff_expiry(p) <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in done {
            if let Some(p) = self.backoff.remove(&k) {
                self.push_active(p, "BackoffComplete");
            }
        }
        let max = self.options.max_in_unschedulable;
        let stale: Vec<String> = self
            .unschedulable
            .iter()
            .filter(|(_, p)| now.saturating_duration_since(p.last_update) > max)
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            if let Some(p) = self.unschedulable.remove(&k) {
                self.requeue(p, ClusterEvent::UnschedulableTimeout.label());
            }
        }
    }

    /// Every pod waiting in the queue (not in flight), in no particular order.
    pub fn pending_pods(&self) -> Vec<&QueuedPod> {
        self.active
            .iter()
            .chain(self.backoff.values())
            .chain(self.unschedulable.values())
            .chain(self.gated.values())
            .collect()
    }

    fn requeue(&mut self, p: QueuedPod, event: &str) {
        if self.backoff_expiry(&p) > self.clock.now() {
            self.note(QueueName::Backoff, event);
            self.backoff.insert(p.key().to_string(), p);
        } else {
            self.push_active(p, event);
        }
    }

    fn push_active(&mut self, p: QueuedPod, event: &str) {
        self.note(QueueName::Active, event);
        self.active.push(p);
        let mut i = self.active.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if (self.less)(&self.active[i].info, &self.active[parent].info) {
                self.active.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    fn pop_active(&mut self) -> Option<QueuedPod> {
        if self.active.is_empty() {
            return None;
        }
        let last = self.active.len() - 1;
        self.active.swap(0, last);
        let top = self.active.pop();
        self.sift_down(0);
        top
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.active.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && (self.less)(&self.active[l].info, &self.active[best].info) {
                best = l;
            }
            if r < n && (self.less)(&self.active[r].info, &self.active[best].info) {
                best = r;
            }
            if best == i {
                return;
            }
            self.active.swap(i, best);
            i = best;
        }
    }

    fn heapify(&mut self) {
        for i in (0..self.active.len() / 2).rev() {
            self.sift_down(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodSpec};

    fn pod(name: &str, priority: i32) -> Arc<PodInfo> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.spec = Some(PodSpec {
            priority: Some(priority),
            ..Default::default()
        });
        Arc::new(PodInfo::new(Arc::new(p)).unwrap())
    }

    fn priority_sort(a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }

    fn queue() -> (SchedulingQueue, Arc<FakeClock>) {
        let clock = Arc::new(FakeClock::new());
        let q = SchedulingQueue::new(QueueOptions::default(), clock.clone(), priority_sort);
        (q, clock)
    }

    fn names(q: &mut SchedulingQueue) -> Vec<String> {
        std::iter::from_fn(|| q.pop())
            .map(|p| p.info.pod_info.name().to_string())
            .collect()
    }

    #[test]
    fn active_queue_pops_in_queue_sort_order() {
        let (mut q, _) = queue();
        for (n, prio) in [("a", 1), ("b", 10), ("c", 1), ("d", 5), ("e", 10)] {
            q.add(pod(n, prio));
        }
        assert_eq!(names(&mut q), ["b", "e", "d", "a", "c"]);
        assert_eq!(q.scheduling_cycle(), 5);
    }

    #[test]
    fn backoff_duration_doubles_up_to_the_maximum() {
        let (q, _) = queue();
        let secs: Vec<u64> = (0..7).map(|a| q.backoff_duration(a).as_secs()).collect();
        assert_eq!(secs, [0, 1, 2, 4, 8, 10, 10]);
        let q2 = SchedulingQueue::new(
            QueueOptions::from_seconds(3, 20),
            Arc::new(SystemClock),
            priority_sort,
        );
        assert_eq!(q2.backoff_duration(3), Duration::from_secs(12));
        assert_eq!(q2.backoff_duration(4), Duration::from_secs(20));
    }

    #[test]
    fn failed_pod_waits_out_its_backoff() {
        let (mut q, clock) = queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_backoff(p);
        assert_eq!(q.pending().backoff, 1);
        assert!(q.pop().is_none());
        assert_eq!(q.next_wakeup(), Some(clock.now() + Duration::from_secs(1)));
        clock.advance(Duration::from_millis(999));
        assert!(q.pop().is_none());
        clock.advance(Duration::from_millis(1));
        let p = q.pop().unwrap();
        assert_eq!(p.info.attempts, 2);
        q.add_backoff(p);
        clock.advance(Duration::from_secs(1));
        assert!(q.pop().is_none(), "second backoff is 2s");
        clock.advance(Duration::from_secs(1));
        assert!(q.pop().is_some());
    }

    #[test]
    fn unschedulable_pod_moves_on_cluster_event() {
        let (mut q, clock) = queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, BTreeSet::from(["NodeResourcesFit".to_string()]));
        assert_eq!(q.pending().unschedulable, 1);
        clock.advance(Duration::from_secs(30));
        assert!(q.pop().is_none(), "no event: it stays");
        q.move_all_to_active_or_backoff(ClusterEvent::NodeAdd);
        assert_eq!(q.pending().active, 1);
        assert_eq!(names(&mut q), ["a"]);
    }

    #[test]
    fn event_during_backoff_goes_to_backoff_queue() {
        let (mut q, clock) = queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, BTreeSet::new());
        q.move_all_to_active_or_backoff(ClusterEvent::NodeUpdate);
        assert_eq!(q.pending().backoff, 1);
        clock.advance(Duration::from_secs(1));
        assert_eq!(names(&mut q), ["a"]);
    }

    #[test]
    fn event_while_in_flight_sends_pod_to_backoff_not_unschedulable() {
        let (mut q, _) = queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.move_all_to_active_or_backoff(ClusterEvent::AssignedPodDelete);
        q.add_unschedulable(p, BTreeSet::new());
        assert_eq!(q.pending().backoff, 1);
        assert_eq!(q.pending().unschedulable, 0);
    }

    #[test]
    fn unschedulable_pods_are_retried_after_the_maximum_duration() {
        let (mut q, clock) = queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, BTreeSet::new());
        assert_eq!(
            q.next_wakeup(),
            Some(clock.now() + DEFAULT_MAX_IN_UNSCHEDULABLE_PODS_DURATION)
        );
        clock.advance(Duration::from_secs(299));
        assert!(q.pop().is_none());
        clock.advance(Duration::from_secs(2));
        assert_eq!(names(&mut q), ["a"]);
    }

    #[test]
    fn update_and_delete() {
        let (mut q, _) = queue();
        q.add(pod("a", 0));
        q.add(pod("b", 0));
        q.update(pod("b", 100));
        q.delete("default/a");
        assert!(!q.contains("default/a"));
        let p = q.pop().unwrap();
        assert_eq!(p.info.pod_info.priority(), 100);
        q.add_unschedulable(p, BTreeSet::new());
        q.update(pod("b", 7));
        assert_eq!(q.pending().backoff, 1, "updated within its backoff");
        q.add(pod("b", 7));
        assert_eq!(q.pending().backoff + q.pending().active, 1, "no duplicate");
    }

    #[test]
    fn gated_pod_moves_when_updated() {
        let (mut q, _) = queue();
        q.add(pod("g", 0));
        let mut p = q.pop().unwrap();
        p.info.attempts = 0;
        q.add_gated(p);
        assert_eq!(q.pending().gated, 1);
        assert!(q.pop().is_none());
        q.update(pod("g", 0));
        assert_eq!(names(&mut q), ["g"]);
    }

    #[test]
    fn incoming_hook_counts_events() {
        let (mut q, _) = queue();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        q.set_incoming_hook(Arc::new(move |queue, event| {
            s.lock().unwrap().push(format!("{}:{event}", queue.label()));
        }));
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, BTreeSet::new());
        assert_eq!(
            *seen.lock().unwrap(),
            ["active:PodAdd", "unschedulable:ScheduleAttemptFailure"]
        );
    }
}
