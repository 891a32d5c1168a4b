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
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::events::ClusterEvent;
use crate::events::{EventObject, EventObjects, QueueingHints, pod_update_events};
use crate::plugin::QueuedPodInfo;
use crate::pod_info::PodInfo;

mod clock;
mod timed;

use timed::TimedPods;
#[cfg(test)]
mod tests;

pub use clock::{Clock, FakeClock, SystemClock};

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
    /// Whether a new pending pod is also an `UnschedulablePodAdd` event for the pods
    /// waiting unschedulable, so that a gang's rejected pods see the sibling that may
    /// complete it: kube-scheduler's `addPodToSchedulingQueue` with the
    /// `GangScheduling` gate on (off by default).
    pub pending_adds_move_pods: bool,
    /// Whether [`SchedulingQueue::pop`], with no pod active, takes the pod that backs
    /// off after a rejection whose backoff ends first, without waiting for it
    /// (kube-scheduler's `SchedulerPopFromBackoffQ` gate, on by default since v1.33).
    /// A pod backing off after an error (no plugin rejected it) still waits.
    pub pop_from_backoff: bool,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            max_in_unschedulable: DEFAULT_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
            pending_adds_move_pods: false,
            pop_from_backoff: true,
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
///
/// ```
/// use std::sync::Arc;
/// use kubesched_framework::build::PodBuilder;
/// use kubesched_framework::queue::{FakeClock, QueueOptions, SchedulingQueue};
///
/// // Highest priority first, as PrioritySort orders the active queue.
/// let by_priority = |a: &kubesched_framework::QueuedPodInfo, b: &kubesched_framework::QueuedPodInfo| {
///     a.pod_info.priority() > b.pod_info.priority()
/// };
/// let mut queue = SchedulingQueue::new(QueueOptions::default(), Arc::new(FakeClock::new()), by_priority);
/// queue.add(PodBuilder::new("default", "low").priority(1).pod_info().unwrap());
/// queue.add(PodBuilder::new("default", "high").priority(10).pod_info().unwrap());
/// assert_eq!(queue.pop().unwrap().info.pod_info.name(), "high");
/// ```
pub struct SchedulingQueue {
    options: QueueOptions,
    clock: Arc<dyn Clock>,
    less: LessFn,
    /// A binary heap ordered by `less` (the root is the next pod).
    active: Vec<QueuedPod>,
    /// By when each pod's backoff ends.
    backoff: TimedPods,
    /// By when each pod last failed.
    unschedulable: TimedPods,
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
    /// The event's objects, for the queueing hints.
    objects: EventObjects,
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
            backoff: TimedPods::default(),
            unschedulable: TimedPods::default(),
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

    /// Adds a new pending pod to the active queue (kube-scheduler's `Add`), then, when
    /// [`QueueOptions::pending_adds_move_pods`] says so, moves the unschedulable pods
    /// an `UnschedulablePodAdd` event can help. A pod already queued is updated
    /// instead.
    pub fn add(&mut self, pod: Arc<PodInfo>) {
        if self.contains(pod.key()) {
            self.update(pod);
            return;
        }
        let now = self.clock.now();
        self.next_timestamp += 1;
        let qp = QueuedPod {
            info: QueuedPodInfo {
                pod_info: pod.clone(),
                timestamp: self.next_timestamp,
                attempts: 0,
            },
            last_update: now,
            initial_attempt: now,
            scheduling_cycle: 0,
            unschedulable_plugins: BTreeSet::new(),
        };
        self.push_active(qp, &ClusterEvent::UNSCHEDULABLE_POD_ADD.label());
        if self.options.pending_adds_move_pods {
            let objects = EventObjects::added(EventObject::Pod(pod));
            self.move_with_objects(ClusterEvent::UNSCHEDULABLE_POD_ADD, &objects, |_| true);
        }
    }

    /// Adds a pod that a PreEnqueue plugin keeps out; it moves to the active queue
    /// when it is updated, or when [`SchedulingQueue::move_gated_if`] says an event may
    /// let it in. A pod popped and then kept out does not count that attempt:
    /// kube-scheduler runs PreEnqueue before a pod enters the active queue, so a pod it
    /// keeps out is never popped, and comes in without a backoff.
    pub fn add_gated(&mut self, mut pod: QueuedPod) {
        if self.in_flight.contains_key(pod.key()) {
            pod.info.attempts = pod.info.attempts.saturating_sub(1);
        }
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
            let objects = EventObjects {
                old: Some(EventObject::Pod(flight.latest.clone())),
                new: Some(EventObject::Pod(pod.clone())),
            };
            flight.latest = pod;
            flight.updated = true;
            for event in events {
                self.in_flight_events.push(InFlightEvent {
                    cycle: self.scheduling_cycle,
                    event,
                    objects: objects.clone(),
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
            let objects = EventObjects {
                old: Some(EventObject::Pod(p.info.pod_info.clone())),
                new: Some(EventObject::Pod(pod.clone())),
            };
            p.info.pod_info = pod;
            let helpful = events.into_iter().find(|e| {
                self.hints.worth_requeuing_pod(
                    &p.info.pod_info,
                    &p.unschedulable_plugins,
                    e,
                    &objects,
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
        let mut p = match self.pop_active() {
            Some(p) => p,
            None if self.options.pop_from_backoff => self.pop_backoff()?,
            None => return None,
        };
        self.scheduling_cycle += 1;
        self.start_flight(&mut p);
        Some(p)
    }

    /// Counts `p`'s attempt and puts it in flight in the current scheduling cycle.
    fn start_flight(&mut self, p: &mut QueuedPod) {
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
    }

    /// Moves the gated pods `eligible` accepts back to be checked against their
    /// PreEnqueue plugins again, after `event` that may let them in (a gang's PodGroup
    /// created, its quorum's last pod added).
    pub fn move_gated_if(&mut self, event: ClusterEvent, eligible: impl Fn(&QueuedPod) -> bool) {
        let moving: Vec<String> = self
            .gated
            .iter()
            .filter(|(_, p)| eligible(p))
            .map(|(k, _)| k.clone())
            .collect();
        let label = event.label();
        for k in moving {
            if let Some(p) = self.gated.remove(&k) {
                self.requeue(p, &label);
            }
        }
    }

    /// Takes out every pod waiting anywhere in the queue (active, backoff,
    /// unschedulable or gated; not in flight) that `f` accepts, as [`SchedulingQueue::pop`]
    /// would hand it out in the current scheduling cycle: each counts an attempt and is
    /// in flight until [`SchedulingQueue::done`] or a requeue. For a PodGroup cycle,
    /// which attempts the popped pod's group with it. In no particular order.
    pub fn take_where(&mut self, f: impl Fn(&QueuedPod) -> bool) -> Vec<QueuedPod> {
        let mut taken = Vec::new();
        let mut i = 0;
        let mut heap_changed = false;
        while i < self.active.len() {
            if f(&self.active[i]) {
                taken.push(self.active.swap_remove(i));
                heap_changed = true;
            } else {
                i += 1;
            }
        }
        if heap_changed {
            self.heapify();
        }
        taken.extend(self.backoff.take_where(&f));
        taken.extend(self.unschedulable.take_where(&f));
        let gated: Vec<String> = self
            .gated
            .iter()
            .filter(|(_, p)| f(p))
            .map(|(k, _)| k.clone())
            .collect();
        taken.extend(gated.iter().filter_map(|k| self.gated.remove(k)));
        for p in &mut taken {
            self.start_flight(p);
        }
        taken
    }

    /// Moves the pods with these keys that wait unschedulable or back off to the
    /// active queue at once (kube-scheduler's `Activate`, after a cycle whose plugins
    /// asked it through [`PodsToActivate`](crate::PodsToActivate)); other pods are left
    /// where they are.
    pub fn activate<'a>(&mut self, keys: impl IntoIterator<Item = &'a String>) {
        let label = ClusterEvent::FORCE_ACTIVATE.label();
        for key in keys {
            let pod = self
                .unschedulable
                .remove(key)
                .or_else(|| self.backoff.remove(key));
            if let Some(p) = pod {
                self.push_active(p, &label);
            }
        }
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
                    self.hints.worth_requeuing_pod(
                        &pod.info.pod_info,
                        &plugins,
                        &e.event,
                        &e.objects,
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
            let at = pod.last_update;
            self.unschedulable.insert(key, pod, at);
        }
    }

    /// Puts back a pod whose attempt failed with an error (a plugin error, a binding
    /// failure, a bind conflict): to the backoff queue, as its latest object, with no
    /// rejecting plugin (kube-scheduler's error backoff, which waits out its time).
    pub fn add_backoff(&mut self, mut pod: QueuedPod) {
        let key = pod.key().to_string();
        if !self.in_flight.contains_key(&key) && self.contains(&key) {
            return;
        }
        pod.unschedulable_plugins.clear();
        if let Some(latest) = self.leave_flight(&key) {
            pod.info.pod_info = latest;
        }
        pod.last_update = self.clock.now();
        self.note(QueueName::Backoff, "ScheduleAttemptFailure");
        let at = self.backoff_expiry(&pod);
        self.backoff.insert(key, pod, at);
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
        self.move_with_objects(event, &EventObjects::NONE, eligible);
    }

    /// As [`SchedulingQueue::move_to_active_or_backoff_if`], with the event's objects,
    /// which the rejecting plugins' queueing hints look at
    /// ([`Plugin::queueing_hint`](crate::Plugin::queueing_hint)): a pod added to
    /// another gang, say, moves none of this gang's pods.
    pub fn move_with_objects(
        &mut self,
        event: ClusterEvent,
        objects: &EventObjects,
        eligible: impl Fn(&QueuedPod) -> bool,
    ) {
        // kube-scheduler has no informer for a kind no plugin registered.
        if !self.hints.reports(&event) {
            return;
        }
        if !self.in_flight.is_empty() {
            self.in_flight_events.push(InFlightEvent {
                cycle: self.scheduling_cycle,
                event,
                objects: objects.clone(),
                only_for: None,
            });
        }
        let moving: Vec<String> = self
            .unschedulable
            .values()
            .filter(|p| {
                eligible(p)
                    && self.hints.worth_requeuing_pod(
                        &p.info.pod_info,
                        &p.unschedulable_plugins,
                        &event,
                        objects,
                    )
            })
            .map(|p| p.key().to_string())
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

    /// When the first backoff ends; `None` when no pod backs off.
    pub fn next_backoff_end(&self) -> Option<Instant> {
        self.backoff.first_instant()
    }

    /// When the first unschedulable pod has waited `max_in_unschedulable`: a
    /// [`SchedulingQueue::flush`] strictly after it moves the pod (kube-scheduler's
    /// `flushUnschedulablePodsLeftover`, which runs every 30 s); `None` when no pod is
    /// unschedulable.
    pub fn next_unschedulable_timeout(&self) -> Option<Instant> {
        self.unschedulable
            .first_instant()
            .map(|at| at + self.options.max_in_unschedulable)
    }

    /// When the queue next has something to do on its own (a backoff ending, an
    /// unschedulable pod timing out); `None` when nothing waits.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let backoff = self.next_backoff_end();
        let unsched = self.next_unschedulable_timeout();
        match (backoff, unsched) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves the pods whose backoff is over to the active queue, and the pods
    /// unschedulable for longer than `max_in_unschedulable` to active or backoff.
    pub fn flush(&mut self) {
        let now = self.clock.now();
        for p in self.backoff.take_due(|expiry| expiry <= now) {
            self.push_active(p, "BackoffComplete");
        }
        let max = self.options.max_in_unschedulable;
        let stale = self
            .unschedulable
            .take_due(|failed| now.saturating_duration_since(failed) > max);
        let label = ClusterEvent::UNSCHEDULABLE_TIMEOUT.label();
        for p in stale {
            self.requeue(p, &label);
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
            let at = self.backoff_expiry(&p);
            self.backoff.insert(p.key().to_string(), p, at);
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

    /// The pod backing off after a rejection whose backoff ends first (ties in
    /// QueueSort order), taken out before it ends (`popBackoff`; a pod backing off
    /// after an error is in kube-scheduler's error backoff queue, which is not popped).
    fn pop_backoff(&mut self) -> Option<QueuedPod> {
        let mut rejected = self
            .backoff
            .by_instant()
            .filter(|(_, p)| !p.unschedulable_plugins.is_empty());
        let (first_expiry, mut best) = rejected.next()?;
        for (expiry, p) in rejected {
            if expiry != first_expiry {
                break;
            }
            if (self.less)(&p.info, &best.info) {
                best = p;
            }
        }
        let key = best.key().to_string();
        let p = self.backoff.remove(&key)?;
        self.note(QueueName::Active, "PopFromBackoffQ");
        Some(p)
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
