//! The scheduling queue, as kube-scheduler's `PriorityQueue`
//! (`pkg/scheduler/backend/queue/scheduling_queue.go`), without Kubernetes:
//!
//! - the **active queue** holds the pods ready to be tried, in QueueSort order;
//! - the **backoff queue** holds pods that failed and wait out their exponential backoff
//!   (`podInitialBackoffSeconds` doubled per attempt, at most `podMaxBackoffSeconds`);
//! - the **unschedulable set** holds pods no node fitted, with the plugins that
//!   rejected them; a [`ClusterEvent`] moves a pod back (to backoff while its backoff
//!   lasts) only when one of those plugins registered it
//!   ([`Plugin::events_to_register`](crate::Plugin::events_to_register), gathered in
//!   the [`QueueingHints`] given to [`SchedulingQueue::set_queueing_hints`]): a node
//!   label change does not retry a pod rejected by NodeResourcesFit, a node whose
//!   allocatable grew does. Staying there longer than `podMaxInUnschedulablePodsDuration`
//!   (5 minutes by default) moves any pod back. A queue without hints moves every pod on
//!   every event.
//!
//! As in kube-scheduler v1.35 (whose queueing hints are always on), the events that
//! arrive while a pod is being scheduled are kept, and a pod that comes back
//! unschedulable goes to backoff at once when one of them could have helped it; a pod
//! that comes back unschedulable with no rejecting plugin (an unexpected failure) is
//! always retried after its backoff.
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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::events::ClusterEvent;
use crate::events::{QueueingHints, pod_update_events};
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
    /// Pods popped and not yet done, by key.
    in_flight: HashMap<String, InFlight>,
    /// The events that came while some pod was in flight, oldest first (kube-scheduler's
    /// `inFlightEvents`): only those since the oldest in-flight pod's pop are kept.
    in_flight_events: Vec<InFlightEvent>,
    hints: QueueingHints,
    next_timestamp: u64,
    scheduling_cycle: u64,
    incoming: Option<IncomingHook>,
}

/// A pod being scheduled.
struct InFlight {
    /// The scheduling cycle that popped it.
    cycle: u64,
    /// The pod's latest object: the popped one, or the last update.
    latest: Arc<PodInfo>,
    /// `true` when `latest` came from an update while in flight: it replaces the popped
    /// object when the pod comes back.
    updated: bool,
}

/// An event that came while pods were in flight.
struct InFlightEvent {
    /// The scheduling cycle when it came: pods popped at this cycle or before saw it
    /// while in flight.
    cycle: u64,
    event: ClusterEvent,
    /// `Some(key)` for an update of that pod itself, which concerns no other pod.
    only_for: Option<String>,
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
            in_flight: HashMap::new(),
            in_flight_events: Vec::new(),
            hints: QueueingHints::new(),
            next_timestamp: 0,
            scheduling_cycle: 0,
            incoming: None,
        }
    }

    /// Moves an unschedulable pod only on the events that the plugins that rejected it
    /// registered, as `hints` say (usually [`QueueingHints::from_frameworks`] of the
    /// scheduler's profiles). Without hints every event moves every pod.
    pub fn set_queueing_hints(&mut self, hints: QueueingHints) {
        self.hints = hints;
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
        self.in_flight.contains_key(key)
            || self.backoff.contains_key(key)
            || self.unschedulable.contains_key(key)
            || self.gated.contains_key(key)
            || self.active.iter().any(|p| p.key() == key)
    }

    /// `true` when the pod was popped and is not done yet.
    pub fn is_in_flight(&self, key: &str) -> bool {
        self.in_flight.contains_key(key)
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
        self.push_active(qp, &ClusterEvent::UNSCHEDULABLE_POD_ADD.label());
    }

    /// Adds a pod that a PreEnqueue plugin keeps out; it moves to the active queue
    /// when it is updated.
    pub fn add_gated(&mut self, mut pod: QueuedPod) {
        if let Some(latest) = self.leave_flight(pod.key()) {
            pod.info.pod_info = latest;
        }
        pod.last_update = self.clock.now();
        self.note(
            QueueName::Gated,
            &ClusterEvent::UNSCHEDULABLE_POD_ADD.label(),
        );
        self.gated.insert(pod.key().to_string(), pod);
    }

    /// Replaces a queued pod's object (kube-scheduler's `Update`). The update is
    /// classified ([`pod_update_events`]) and, for a pod waiting in the unschedulable
    /// set, moves it back only when one of those events can help it (a pod rejected by
    /// NodeResourcesFit moves when its requests go down, not when its labels change). A
    /// gated pod moves back on any update, to be checked against its gates again. A pod
    /// in flight keeps its place: its update is remembered, the new object replaces the
    /// popped one when it comes back, and the update counts among the events it saw.
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
        if let Some(flight) = self.in_flight.get_mut(&key) {
            let events = pod_update_events(flight.latest.pod(), pod.pod());
            flight.latest = pod;
            flight.updated = true;
            for event in events {
                self.in_flight_events.push(InFlightEvent {
                    cycle: self.scheduling_cycle,
                    event,
                    only_for: Some(key.clone()),
                });
            }
            return;
        }
        if let Some(mut p) = self.gated.remove(&key) {
            p.info.pod_info = pod;
            self.requeue(p, &ClusterEvent::UNSCHEDULABLE_POD_UPDATE.label());
            return;
        }
        if let Some(p) = self.unschedulable.get_mut(&key) {
            let events = pod_update_events(p.info.pod_info.pod(), pod.pod());
            p.info.pod_info = pod;
            let helpful = events.into_iter().find(|e| {
                self.hints.worth_requeuing(
                    p.info.pod_info.scheduler_name(),
                    &p.unschedulable_plugins,
                    e,
                )
            });
            if let Some(event) = helpful
                && let Some(p) = self.unschedulable.remove(&key)
            {
                self.requeue(p, &event.label());
            }
        }
    }

    /// Removes a pod everywhere (it was deleted, or bound by someone else).
    pub fn delete(&mut self, key: &str) {
        self.leave_flight(key);
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
        self.in_flight.insert(
            p.key().to_string(),
            InFlight {
                cycle: self.scheduling_cycle,
                latest: p.info.pod_info.clone(),
                updated: false,
            },
        );
        Some(p)
    }

    /// The pod is done (bound, or dropped): it leaves the in-flight set.
    pub fn done(&mut self, key: &str) {
        self.leave_flight(key);
    }

    /// Puts back a pod that `plugins` rejected (kube-scheduler's
    /// `AddUnschedulableIfNotPresent` with queueing hints): to the unschedulable set,
    /// unless an event that came while it was being scheduled could help it, or no
    /// plugin rejected it (an unexpected failure); then to backoff. A pod updated while
    /// in flight comes back as its latest object.
    pub fn add_unschedulable(&mut self, mut pod: QueuedPod, plugins: BTreeSet<String>) {
        let key = pod.key().to_string();
        let was_in_flight = self.in_flight.contains_key(&key);
        if !was_in_flight && self.contains(&key) {
            return;
        }
        let retry = plugins.is_empty()
            || self
                .in_flight_events
                .iter()
                .filter(|e| e.cycle >= pod.scheduling_cycle && pod.scheduling_cycle > 0)
                .filter(|e| e.only_for.as_ref().is_none_or(|k| *k == key))
                .any(|e| {
                    self.hints.worth_requeuing(
                        pod.info.pod_info.scheduler_name(),
                        &plugins,
                        &e.event,
                    )
                });
        if let Some(latest) = self.leave_flight(&key) {
            pod.info.pod_info = latest;
        }
        pod.last_update = self.clock.now();
        pod.unschedulable_plugins = plugins;
        if retry {
            self.requeue(pod, "ScheduleAttemptFailure");
        } else {
            self.note(QueueName::Unschedulable, "ScheduleAttemptFailure");
            self.unschedulable.insert(key, pod);
        }
    }

    /// Puts back a pod whose attempt failed with an error (a plugin error, a binding
    /// failure, a bind conflict): to the backoff queue, as its latest object.
    pub fn add_backoff(&mut self, mut pod: QueuedPod) {
        let key = pod.key().to_string();
        if !self.in_flight.contains_key(&key) && self.contains(&key) {
            return;
        }
        if let Some(latest) = self.leave_flight(&key) {
            pod.info.pod_info = latest;
        }
        pod.last_update = self.clock.now();
        self.note(QueueName::Backoff, "ScheduleAttemptFailure");
        self.backoff.insert(key, pod);
    }

    /// `event` happened: moves every unschedulable pod it can help (as the queueing
    /// hints say) back to the active queue, or to backoff while its backoff lasts
    /// (kube-scheduler's `MoveAllToActiveOrBackoffQueue`). The pods in flight will see
    /// the event when they come back.
    pub fn move_all_to_active_or_backoff(&mut self, event: ClusterEvent) {
        self.move_to_active_or_backoff_if(event, |_| true);
    }

    /// As [`SchedulingQueue::move_all_to_active_or_backoff`], for the unschedulable pods
    /// `eligible` accepts only (kube-scheduler's `preCheck`: the pods of lower or equal
    /// priority when a nominated pod goes, every pod but the one that just failed, ...).
    pub fn move_to_active_or_backoff_if(
        &mut self,
        event: ClusterEvent,
        eligible: impl Fn(&QueuedPod) -> bool,
    ) {
        if !self.in_flight.is_empty() {
            self.in_flight_events.push(InFlightEvent {
                cycle: self.scheduling_cycle,
                event,
                only_for: None,
            });
        }
        let moving: Vec<String> = self
            .unschedulable
            .iter()
            .filter(|(_, p)| {
                eligible(p)
                    && self.hints.worth_requeuing(
                        p.info.pod_info.scheduler_name(),
                        &p.unschedulable_plugins,
                        &event,
                    )
            })
            .map(|(k, _)| k.clone())
            .collect();
        let label = event.label();
        for k in moving {
            if let Some(p) = self.unschedulable.remove(&k) {
                self.requeue(p, &label);
            }
        }
    }

    /// The pods waiting in the unschedulable set (gated ones included, as in
    /// kube-scheduler's `unschedulablePods`), counted once for each plugin that rejected
    /// them, by `(scheduler name, plugin)`: kube-scheduler's
    /// `scheduler_unschedulable_pods` gauge.
    pub fn unschedulable_by_plugin(&self) -> BTreeMap<(String, String), usize> {
        let mut counts = BTreeMap::new();
        for p in self.unschedulable.values().chain(self.gated.values()) {
            for plugin in &p.unschedulable_plugins {
                *counts
                    .entry((p.info.pod_info.scheduler_name().to_string(), plugin.clone()))
                    .or_insert(0) += 1;
            }
        }
        counts
    }

    /// What kube-scheduler's `inFlightEvents` list holds, by the `event` label of its
    /// `scheduler_inflight_events` gauge: one `PodPopped` per pod being scheduled, and
    /// the cluster events kept for them.
    pub fn in_flight_event_counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        if !self.in_flight.is_empty() {
            counts.insert("PodPopped".to_string(), self.in_flight.len());
        }
        for e in &self.in_flight_events {
            *counts.entry(e.event.label().into_owned()).or_insert(0) += 1;
        }
        counts
    }

    /// Takes a pod out of the in-flight set and forgets the events no pod in flight
    /// can still see; returns the pod's object if it was updated in flight.
    fn leave_flight(&mut self, key: &str) -> Option<Arc<PodInfo>> {
        let flight = self.in_flight.remove(key)?;
        match self.in_flight.values().map(|f| f.cycle).min() {
            None => self.in_flight_events.clear(),
            Some(oldest) => self.in_flight_events.retain(|e| e.cycle >= oldest),
        }
        flight.updated.then_some(flight.latest)
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
        let label = ClusterEvent::UNSCHEDULABLE_TIMEOUT.label();
        for k in stale {
            if let Some(p) = self.unschedulable.remove(&k) {
                self.requeue(p, &label);
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
    use crate::events::{ActionType, EventResource};
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

    fn rejected_by(plugins: &[&str]) -> BTreeSet<String> {
        plugins.iter().map(|p| p.to_string()).collect()
    }

    /// kube-scheduler v1.35's registrations of NodeResourcesFit and NodeAffinity, for a
    /// profile named like the pods' scheduler (`default-scheduler`).
    fn hints() -> QueueingHints {
        let mut h = QueueingHints::new();
        h.set_plugin_events(
            "default-scheduler",
            "NodeResourcesFit",
            vec![
                ClusterEvent::new(
                    EventResource::Pod,
                    ActionType::DELETE | ActionType::UPDATE_POD_SCALE_DOWN,
                ),
                ClusterEvent::new(
                    EventResource::Node,
                    ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
                ),
            ],
        );
        h.set_plugin_events(
            "default-scheduler",
            "NodeAffinity",
            vec![ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
            )],
        );
        h
    }

    fn hinted_queue() -> (SchedulingQueue, Arc<FakeClock>) {
        let (mut q, clock) = queue();
        q.set_queueing_hints(hints());
        (q, clock)
    }

    fn node_update(action: ActionType) -> ClusterEvent {
        ClusterEvent::new(EventResource::Node, action)
    }

    /// A pod of the default scheduler asking for `cpu`, labelled `labels`.
    fn pod_with(name: &str, cpu: &str, labels: &[(&str, &str)]) -> Arc<PodInfo> {
        use k8s_openapi::api::core::v1::{Container, ResourceRequirements};
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        p.spec = Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(
                        [("cpu".to_string(), Quantity(cpu.into()))]
                            .into_iter()
                            .collect(),
                    ),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        });
        Arc::new(PodInfo::new(Arc::new(p)).unwrap())
    }

    #[test]
    fn gauges_count_unschedulable_pods_by_plugin_and_events_in_flight() {
        let (mut q, _clock) = queue();
        q.add(pod("a", 0));
        q.add(pod("b", 0));
        let a = q.pop().unwrap();
        let b = q.pop().unwrap();
        assert_eq!(
            q.in_flight_event_counts(),
            BTreeMap::from([("PodPopped".to_string(), 2)])
        );
        q.move_all_to_active_or_backoff(ClusterEvent::NODE_ADD);
        q.add_unschedulable(a, rejected_by(&["NodeResourcesFit", "NodeAffinity"]));
        // b is still in flight: the event stays for it.
        assert_eq!(
            q.in_flight_event_counts(),
            BTreeMap::from([("NodeAdd".to_string(), 1), ("PodPopped".to_string(), 1)])
        );
        q.add_unschedulable(b, rejected_by(&["NodeResourcesFit"]));
        assert!(q.in_flight_event_counts().is_empty());
        // Both saw NodeAdd while in flight, which may help them: they went to backoff.
        assert!(q.unschedulable_by_plugin().is_empty());
        q.add(pod("c", 0));
        let c = q.pop().unwrap();
        q.add_unschedulable(c, rejected_by(&["NodeResourcesFit", "NodeAffinity"]));
        let scheduler = pod("x", 0).scheduler_name().to_string();
        assert_eq!(
            q.unschedulable_by_plugin(),
            BTreeMap::from([
                ((scheduler.clone(), "NodeAffinity".to_string()), 1),
                ((scheduler, "NodeResourcesFit".to_string()), 1),
            ])
        );
        q.delete("default/c");
        assert!(q.unschedulable_by_plugin().is_empty());
    }

    #[test]
    fn unschedulable_pod_moves_on_cluster_event() {
        let (mut q, clock) = queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        assert_eq!(q.pending().unschedulable, 1);
        clock.advance(Duration::from_secs(30));
        assert!(q.pop().is_none(), "no event: it stays");
        // Without hints, any event moves it.
        q.move_all_to_active_or_backoff(ClusterEvent::NODE_ADD);
        assert_eq!(q.pending().active, 1);
        assert_eq!(names(&mut q), ["a"]);
    }

    #[test]
    fn pod_rejected_by_node_resources_fit_moves_only_on_events_that_can_free_resources() {
        let (mut q, clock) = hinted_queue();
        for name in ["a", "b", "c"] {
            q.add(pod(name, 0));
            let p = q.pop().unwrap();
            q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        }
        clock.advance(Duration::from_secs(30));
        // A node's labels, taints or conditions change nothing for it.
        for action in [
            ActionType::UPDATE_NODE_LABEL,
            ActionType::UPDATE_NODE_TAINT,
            ActionType::UPDATE_NODE_CONDITION,
        ] {
            q.move_all_to_active_or_backoff(node_update(action));
        }
        q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_ADD);
        q.move_all_to_active_or_backoff(ClusterEvent::NODE_DELETE);
        assert_eq!(q.pending().unschedulable, 3);
        assert!(q.pop().is_none());
        // More allocatable on a node may make it fit: every such pod moves.
        q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_ALLOCATABLE));
        assert_eq!(q.pending().active, 3);
        let mut again = names(&mut q);
        again.sort();
        assert_eq!(again, ["a", "b", "c"]);
    }

    #[test]
    fn a_bound_pod_deleted_or_a_node_added_moves_a_pod_that_did_not_fit() {
        let (mut q, clock) = hinted_queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        clock.advance(Duration::from_secs(30));
        q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
        assert_eq!(names(&mut q), ["a"]);
        q.add(pod("b", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        clock.advance(Duration::from_secs(30));
        q.move_all_to_active_or_backoff(ClusterEvent::NODE_ADD);
        assert_eq!(names(&mut q), ["b"]);
    }

    #[test]
    fn any_rejecting_plugin_can_vouch_for_an_event() {
        let (mut q, clock) = hinted_queue();
        q.add(pod("fit", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        q.add(pod("both", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeAffinity", "NodeResourcesFit"]));
        clock.advance(Duration::from_secs(30));
        q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
        assert_eq!(names(&mut q), ["both"]);
        assert_eq!(q.pending().unschedulable, 1);
    }

    #[test]
    fn pod_with_no_rejecting_plugin_is_retried_whatever_happens() {
        let (mut q, clock) = hinted_queue();
        // kube-scheduler does not park it: an unexpected failure is retried after the
        // backoff, without waiting for an event.
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, BTreeSet::new());
        assert_eq!(q.pending().unschedulable, 0);
        assert_eq!(q.pending().backoff, 1);
        clock.advance(Duration::from_secs(1));
        assert_eq!(names(&mut q), ["a"]);
        // And any event is one that can help it.
        let h = hints();
        for event in [
            node_update(ActionType::UPDATE_NODE_LABEL),
            ClusterEvent::ASSIGNED_POD_ADD,
            ClusterEvent::new(EventResource::StorageClass, ActionType::ADD),
        ] {
            assert!(h.worth_requeuing("default-scheduler", &BTreeSet::new(), &event));
        }
    }

    #[test]
    fn event_during_backoff_goes_to_backoff_queue() {
        let (mut q, clock) = hinted_queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeAffinity"]));
        q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
        assert_eq!(q.pending().backoff, 1);
        assert!(q.pop().is_none());
        clock.advance(Duration::from_secs(1));
        assert_eq!(names(&mut q), ["a"]);
    }

    #[test]
    fn only_a_helpful_event_while_in_flight_sends_pod_to_backoff() {
        let (mut q, _) = hinted_queue();
        q.add(pod("a", 0));
        q.add(pod("b", 0));
        let a = q.pop().unwrap();
        // A label change while a is being scheduled cannot help NodeResourcesFit.
        q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
        q.add_unschedulable(a, rejected_by(&["NodeResourcesFit"]));
        assert_eq!(q.pending().unschedulable, 1);
        // A pod deleted while b is being scheduled can.
        let b = q.pop().unwrap();
        q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
        assert_eq!(q.pending().backoff, 1, "a moved");
        q.add_unschedulable(b, rejected_by(&["NodeResourcesFit"]));
        assert_eq!(q.pending().backoff, 2, "b saw the event in flight");
        assert_eq!(q.pending().unschedulable, 0);
    }

    #[test]
    fn events_before_a_pods_attempt_do_not_count_for_it() {
        let (mut q, _) = hinted_queue();
        q.add(pod("a", 0));
        q.add(pod("b", 0));
        let a = q.pop().unwrap();
        q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
        q.add_unschedulable(a, rejected_by(&["NodeResourcesFit"]));
        assert_eq!(q.pending().backoff, 1);
        // b was popped after the event: it does not see it.
        let b = q.pop().unwrap();
        q.add_unschedulable(b, rejected_by(&["NodeResourcesFit"]));
        assert_eq!(q.pending().unschedulable, 1);
    }

    #[test]
    fn unschedulable_pods_are_retried_after_the_maximum_duration() {
        let (mut q, clock) = hinted_queue();
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        assert_eq!(
            q.next_wakeup(),
            Some(clock.now() + DEFAULT_MAX_IN_UNSCHEDULABLE_PODS_DURATION)
        );
        clock.advance(Duration::from_secs(150));
        q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
        clock.advance(Duration::from_secs(149));
        assert!(q.pop().is_none(), "no helpful event, not yet 5 minutes");
        clock.advance(Duration::from_secs(2));
        assert_eq!(names(&mut q), ["a"]);
    }

    #[test]
    fn a_pods_own_update_moves_it_only_when_it_can_help() {
        let (mut q, clock) = hinted_queue();
        q.add(pod_with("a", "2", &[]));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        clock.advance(Duration::from_secs(30));
        // New labels do not make it fit.
        q.update(pod_with("a", "2", &[("app", "web")]));
        assert_eq!(q.pending().unschedulable, 1);
        assert_eq!(
            q.pending_pods()[0].info.pod_info.pod().metadata.labels,
            Some([("app".to_string(), "web".to_string())].into())
        );
        // Asking for less may.
        q.update(pod_with("a", "1", &[("app", "web")]));
        assert_eq!(q.pending().active, 1);
        let p = q.pop().unwrap();
        assert_eq!(p.info.pod_info.requests().milli_cpu, 1000);
    }

    #[test]
    fn a_pod_updated_in_flight_comes_back_as_its_latest_object() {
        let (mut q, _) = hinted_queue();
        q.add(pod_with("a", "2", &[]));
        let p = q.pop().unwrap();
        q.update(pod_with("a", "1", &[]));
        assert!(q.is_in_flight("default/a"), "it keeps its place");
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        assert_eq!(q.pending().backoff, 1, "its own scale-down can help it");
        let back = &q.pending_pods()[0];
        assert_eq!(back.info.pod_info.requests().milli_cpu, 1000);
    }

    #[test]
    fn eligible_pods_only() {
        let (mut q, clock) = hinted_queue();
        for (name, prio) in [("low", 0), ("high", 10)] {
            q.add(pod(name, prio));
            let p = q.pop().unwrap();
            q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
        }
        clock.advance(Duration::from_secs(30));
        q.move_to_active_or_backoff_if(ClusterEvent::ASSIGNED_POD_DELETE, |p| {
            p.info.pod_info.priority() <= 5
        });
        assert_eq!(names(&mut q), ["low"]);
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
        q.add_unschedulable(p, rejected_by(&["Custom"]));
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
        let (mut q, clock) = hinted_queue();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        q.set_incoming_hook(Arc::new(move |queue, event| {
            s.lock().unwrap().push(format!("{}:{event}", queue.label()));
        }));
        q.add(pod("a", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeAffinity"]));
        clock.advance(Duration::from_secs(30));
        q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "active:UnschedulablePodAdd",
                "unschedulable:ScheduleAttemptFailure",
                "active:NodeUpdateNodeLabel"
            ]
        );
    }
}
