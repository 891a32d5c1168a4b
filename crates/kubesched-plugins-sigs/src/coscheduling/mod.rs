//! Coscheduling: scheduler-plugins' gang scheduling (pkg/coscheduling/coscheduling.go
//! and core/core.go). Pods labelled `scheduling.x-k8s.io/pod-group: NAME` belong to
//! the `scheduling.x-k8s.io/v1alpha1` PodGroup NAME of their namespace; none of them
//! is bound until `minMember` of them have passed Permit: the others wait there,
//! holding their nodes, and are allowed together, or rejected together when one of
//! them fails or their wait runs out.
//!
//! Each function below says which Go function it follows. `ActivateSiblings` asks,
//! through the cycle state's [`PodsToActivate`], that the group's other pods be
//! retried at once; a running scheduler's queue does it, and a timed replay's (a
//! one-instant simulation attempts every pod once anyway). The `permittedPG` and
//! `backedOffPG` caches expire as go-cache's do, on [`Handle::clock`]: the system's
//! in a running scheduler, the replay's in a replay, one that stands still in a
//! simulation.
//!
//! Floor: `kubesched-framework` and `kubesched-config`; PodGroups and the pod list
//! come from [`Handle::objects`] in a simulation and from [`Handle::live_objects`] in
//! a running scheduler, read again whenever they change.

mod resources;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use kubesched_framework::events::{ActionType, ClusterEvent, EventResource};
use kubesched_framework::queue::Clock;
use kubesched_framework::waiting::WaitingPods;
use kubesched_framework::{
    ClusterObjects, Code, CycleState, Handle, LiveCursor, NodeToStatus, PermitPlugin, Plugin,
    PluginError, PodInfo, PodsToActivate, PostFilterContext, PostFilterPlugin, PostFilterResult,
    PreFilterPlugin, PreFilterResult, QueueSortPlugin, QueuedPodInfo, ReservePlugin, Snapshot,
    Status, extension_points,
};
use serde::Deserialize;

use crate::api::{self, POD_GROUP_LABEL, PodGroup};

/// The plugin's name in a KubeSchedulerConfiguration.
pub const NAME: &str = "Coscheduling";

/// `util.DefaultWaitTime`: the wait when neither the group nor the args set one.
pub const DEFAULT_WAIT_TIME: Duration = Duration::from_secs(60);

/// The `permittedPG` cache's default expiry (`gocache.New(3*time.Second, ...)`): what
/// an entry added with a zero `permitWaitingTimeSeconds` lives (go-cache reads a zero
/// duration as its default).
const PERMITTED_DEFAULT_EXPIRY: Duration = Duration::from_secs(3);

/// `CoschedulingArgs` (apis/config/v1), defaulted as `SetDefaults_CoschedulingArgs`
/// does: 60 s, 0 s and 10 %.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CoschedulingArgs {
    /// How long a group's pods wait at Permit when the PodGroup sets no
    /// `scheduleTimeoutSeconds` (default 60).
    #[serde(default)]
    pub permit_waiting_time_seconds: Option<i64>,
    /// How long a group that failed is refused at PreFilter (default 0: never).
    #[serde(default)]
    pub pod_group_backoff_seconds: Option<i64>,
    /// The share (0-100) of `minMember` still unplaced at or under which PostFilter
    /// does not reject the whole group (default 10).
    #[serde(default)]
    pub pod_group_reject_percentage: Option<i32>,
}

impl CoschedulingArgs {
    /// `SetDefaults_CoschedulingArgs`.
    pub fn apply_defaults(&mut self) {
        self.permit_waiting_time_seconds.get_or_insert(60);
        self.pod_group_backoff_seconds.get_or_insert(0);
        self.pod_group_reject_percentage.get_or_insert(10);
    }

    /// `ValidateCoschedulingArgs`, with its words (`field.ErrorList.ToAggregate`: one
    /// error alone, several in brackets).
    pub fn validate(&self) -> Result<(), String> {
        let mut errors = Vec::new();
        let wait = self.permit_waiting_time_seconds.unwrap_or(0);
        if wait < 0 {
            errors.push(format!(
                "permitWaitingTimeSeconds: Invalid value: {wait}: must be greater than 0"
            ));
        }
        let backoff = self.pod_group_backoff_seconds.unwrap_or(0);
        if backoff < 0 {
            errors.push(format!(
                "podGroupBackoffSeconds: Invalid value: {backoff}: must be greater than 0"
            ));
        }
        let percentage = self.pod_group_reject_percentage.unwrap_or(0);
        if !(0..=100).contains(&percentage) {
            errors.push(format!(
                "podGroupRejectPercentage: Invalid value: {percentage}: must be between 0 and 100"
            ));
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }
}

/// The plugin (`Coscheduling` with its `PodGroupManager`).
pub struct Coscheduling {
    waiting: Arc<WaitingPods>,
    /// Where a running scheduler keeps the PodGroups and pods as they change (a
    /// simulation's objects `view` holds from the start).
    live: LiveCursor,
    /// The PodGroups and pods.
    view: Mutex<Arc<View>>,
    /// `permitWaitingTimeSeconds` (`scheduleTimeout`).
    schedule_timeout: Duration,
    /// `podGroupBackoffSeconds`, when above 0.
    backoff: Option<Duration>,
    /// `podGroupRejectPercentage / 100`.
    reject_threshold: f64,
    /// What the caches' expiries are read against.
    clock: Arc<dyn Clock>,
    state: Mutex<Groups>,
}

/// The PodGroup and pod listers' contents.
#[derive(Debug, Default)]
struct View {
    /// PodGroups by `namespace/name`.
    groups: HashMap<String, Arc<PodGroup>>,
    /// Every pod the scheduler knows (the pod informer's lister).
    pods: Vec<Arc<PodInfo>>,
}

impl View {
    fn of(objects: &ClusterObjects) -> Result<View, PluginError> {
        let mut groups = HashMap::new();
        for o in objects.custom_of(api::GROUP, "PodGroup") {
            let mut group: PodGroup = serde_json::from_value(o.value.clone())
                .map_err(|e| PluginError::new(format!("PodGroup {}: {e}", o.name)))?;
            group.metadata.namespace = o.namespace.clone();
            groups.insert(group.full_name(), Arc::new(group));
        }
        Ok(View {
            groups,
            pods: objects.pods.clone(),
        })
    }
}

/// The manager's mutable part.
#[derive(Debug, Default)]
struct Groups {
    /// `assignedPodsByPG`: pod names assumed or bound, by group full name.
    assigned: HashMap<String, BTreeSet<String>>,
    /// `permittedPG`: groups whose minResources passed, until when.
    permitted: Expiring,
    /// `backedOffPG`: groups refused at PreFilter, until when.
    backed_off: Expiring,
    /// `lastFailedSchedulePG`: groups that failed, and when they last did.
    failed: HashMap<String, Instant>,
}

/// A go-cache of names: each entry lives until its expiry (and is gone once the clock
/// is past it, as go-cache's `Get` reads it).
#[derive(Debug, Default)]
struct Expiring(HashMap<String, Instant>);

impl Expiring {
    /// `Get`: whether `key` is there and not expired at `now`.
    fn contains(&self, key: &str, now: Instant) -> bool {
        self.0.get(key).is_some_and(|&until| now <= until)
    }

    /// `Add`: keeps `key` for `ttl` from `now`, unless it is there and not expired
    /// (go-cache's `Add` then refuses, and the first expiry stands).
    fn add(&mut self, key: &str, now: Instant, ttl: Duration) {
        if !self.contains(key, now) {
            self.0.insert(key.to_string(), now + ttl);
        }
    }

    /// `Delete`.
    fn remove(&mut self, key: &str) {
        self.0.remove(key);
    }
}

impl std::fmt::Debug for Coscheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coscheduling")
            .field("groups", &self.view().groups.len())
            .field("schedule_timeout", &self.schedule_timeout)
            .field("reject_threshold", &self.reject_threshold)
            .finish()
    }
}

/// The factory: decodes and validates the args (`New`), reads the PodGroups and pods
/// of `handle.objects`, and counts the group pods already bound (the pod informer's
/// `AddFunc`).
pub fn new(
    args: Option<&serde_json::Value>,
    handle: &Handle,
) -> Result<Arc<dyn Plugin>, PluginError> {
    let mut args: CoschedulingArgs = match args {
        None => CoschedulingArgs::default(),
        Some(v) => {
            kubesched_config::decode_args(NAME, v).map_err(|e| PluginError::new(e.to_string()))?
        }
    };
    args.apply_defaults();
    args.validate().map_err(PluginError::new)?;
    Coscheduling::new(&args, handle).map(|p| Arc::new(p) as Arc<dyn Plugin>)
}

impl Coscheduling {
    /// The plugin over `handle`'s objects, with defaulted and valid `args`.
    pub fn new(args: &CoschedulingArgs, handle: &Handle) -> Result<Coscheduling, PluginError> {
        let (live, objects) = LiveCursor::new(handle);
        let view = match objects {
            Some(objects) => View::of(&objects)?,
            None => View::default(),
        };
        let seconds = |s: Option<i64>| Duration::from_secs(s.unwrap_or(0).max(0).unsigned_abs());
        let backoff = seconds(args.pod_group_backoff_seconds);
        let plugin = Coscheduling {
            waiting: handle.waiting_pods.clone(),
            live,
            view: Mutex::new(Arc::new(view)),
            schedule_timeout: seconds(args.permit_waiting_time_seconds),
            backoff: (!backoff.is_zero()).then_some(backoff),
            reject_threshold: f64::from(args.pod_group_reject_percentage.unwrap_or(0)) / 100.0,
            clock: handle.clock(),
            state: Mutex::new(Groups::default()),
        };
        let view = plugin.view();
        plugin.count_bound(&view);
        Ok(plugin)
    }

    /// Counts the group pods bound in `view` as assigned (the pod informer's
    /// `AddFunc`).
    fn count_bound(&self, view: &View) {
        let mut state = self.lock();
        for pod in view.pods.iter().filter(|p| p.node_name().is_some()) {
            if let Some(full) = group_full_name(pod) {
                state
                    .assigned
                    .entry(full)
                    .or_default()
                    .insert(pod.name().to_string());
            }
        }
    }

    /// The listers' contents, read again first if the live objects changed since. A
    /// PodGroup that does not decode (the API server validated it) keeps the groups
    /// as they were.
    fn view(&self) -> Arc<View> {
        let mut view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(objects) = self.live.changed() {
            let fresh = View::of(&objects).unwrap_or_else(|_| View {
                groups: view.groups.clone(),
                pods: objects.pods.clone(),
            });
            *view = Arc::new(fresh);
            let fresh = view.clone();
            drop(view);
            self.count_bound(&fresh);
            return fresh;
        }
        view.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Groups> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `GetPodGroup`: the group's full name (when the pod has the label) and the
    /// group (when it exists).
    fn pod_group(&self, pod: &PodInfo) -> (Option<String>, Option<Arc<PodGroup>>) {
        match group_full_name(pod) {
            None => (None, None),
            Some(full) => {
                let group = self.view().groups.get(&full).cloned();
                (Some(full), group)
            }
        }
    }

    /// The pods of `pod`'s namespace with the same group label (the pod lister).
    fn siblings(&self, pod: &PodInfo, group: &str) -> Vec<Arc<PodInfo>> {
        self.view()
            .pods
            .iter()
            .filter(|p| p.namespace() == pod.namespace() && group_label(p) == Some(group))
            .cloned()
            .collect()
    }

    /// `GetCreationTimestamp`, on one time line: a PodGroup's `creationTimestamp`
    /// first, then PodGroups that have none (created at the simulation's instant,
    /// before their pods), then each pod's queue time, then groups that failed, by
    /// when they last did (`lastFailedSchedulePG`: the failure is later than all the
    /// rest, which were in the past when it happened).
    fn creation(&self, q: &QueuedPodInfo) -> Creation {
        let pod = &q.pod_info;
        let Some(label) = group_label(pod) else {
            return Creation::Queued(q.timestamp);
        };
        let full = format!("{}/{label}", pod.namespace());
        if let Some(&at) = self.lock().failed.get(&full) {
            return Creation::Failed(at);
        }
        match self.view().groups.get(&full) {
            None => Creation::Queued(q.timestamp),
            Some(g) => match &g.metadata.creation_timestamp {
                Some(t) => Creation::Stamped(t.0),
                None => Creation::Instant,
            },
        }
    }

    /// `PodGroupManager.PreFilter`.
    fn check_pre_filter(&self, pod: &PodInfo, snapshot: &Snapshot) -> Result<(), String> {
        let (Some(full), Some(group)) = self.pod_group(pod) else {
            return Ok(());
        };
        if self.lock().backed_off.contains(&full, self.clock.now()) {
            return Err(format!("podGroup {full} failed recently"));
        }
        let label = group_label(pod).unwrap_or_default();
        let pods = self.siblings(pod, label);
        let min_member = group.min_member();
        let mut quorum_gap = i64::from(min_member) - pods.len() as i64;
        if quorum_gap > 0 {
            return Err(format!(
                "pre-filter pod {} cannot find enough sibling pods, current pods number: {}, minMember of group: {}",
                pod.name(),
                pods.len(),
                min_member
            ));
        }
        for p in &pods {
            if p.spec()
                .scheduling_gates
                .as_ref()
                .is_some_and(|g| !g.is_empty())
            {
                quorum_gap += 1;
            }
            if quorum_gap > 0 {
                return Err(format!(
                    "pre-filter pod {} cannot proceed due to gated pods in the same PodGroup",
                    pod.name()
                ));
            }
        }
        let Some(min_resources) = &group.spec.min_resources else {
            return Ok(());
        };
        if self.lock().permitted.contains(&full, self.clock.now()) {
            return Ok(());
        }
        resources::check_cluster_resource(snapshot, min_resources, min_member, &full)?;
        let ttl = if self.schedule_timeout.is_zero() {
            PERMITTED_DEFAULT_EXPIRY
        } else {
            self.schedule_timeout
        };
        self.lock().permitted.add(&full, self.clock.now(), ttl);
        Ok(())
    }

    /// Rejects every waiting pod of `group` (namespace and label) with `message`.
    fn reject_waiting(&self, namespace: &str, group: &str, message: &str) {
        self.waiting.iterate(|w| {
            if w.pod().namespace() == namespace && group_label(w.pod()) == Some(group) {
                w.reject(NAME, message);
            }
        });
    }
}

/// A point on [`Coscheduling::creation`]'s time line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Creation {
    Stamped(Timestamp),
    Instant,
    Queued(u64),
    Failed(Instant),
}

/// `util.GetPodGroupLabel`: the label's value, when set and not empty.
fn group_label(pod: &PodInfo) -> Option<&str> {
    pod.pod()
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_GROUP_LABEL))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// `util.GetPodGroupFullName`: `namespace/label`, when the pod has the label.
fn group_full_name(pod: &PodInfo) -> Option<String> {
    group_label(pod).map(|l| format!("{}/{l}", pod.namespace()))
}

impl Plugin for Coscheduling {
    fn name(&self) -> &str {
        NAME
    }
    extension_points!(QueueSort, PreFilter, PostFilter, Reserve, Permit);

    /// `EventsToRegister`: Pod/Add, and a PodGroup (`podgroups.v1alpha1.scheduling.x-k8s.io`)
    /// added or updated.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::ADD),
            ClusterEvent::new(
                EventResource::SIGS_POD_GROUP,
                ActionType::ADD | ActionType::UPDATE,
            ),
        ]
    }
}

impl QueueSortPlugin for Coscheduling {
    /// `Less`: higher priority first; then the earlier of the PodGroup's creation (or
    /// the pod's queue time); then `namespace/name` of the pods.
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (p1, p2) = (a.pod_info.priority(), b.pod_info.priority());
        if p1 != p2 {
            return p1 > p2;
        }
        let (t1, t2) = (self.creation(a), self.creation(b));
        if t1 == t2 {
            return a.pod_info.key() < b.pod_info.key();
        }
        t1 < t2
    }
}

impl PreFilterPlugin for Coscheduling {
    /// `PreFilter`: the manager's checks; a failure is `UnschedulableAndUnresolvable`
    /// (no preemption for it).
    fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match self.check_pre_filter(pod, snapshot) {
            Ok(()) => (None, Status::success()),
            Err(message) => (
                None,
                Status::new(Code::UnschedulableAndUnresolvable, message),
            ),
        }
    }
}

impl PostFilterPlugin for Coscheduling {
    /// `PostFilter`: rejects the whole group when too few of its pods are placed.
    fn post_filter(
        &self,
        _: &PostFilterContext<'_>,
        _: &CycleState,
        pod: &PodInfo,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let none = || Some(PostFilterResult::default());
        let (full, group) = self.pod_group(pod);
        let (Some(full), Some(group)) = (full, group) else {
            return (
                none(),
                Status::new(Code::Unschedulable, "can not find pod group"),
            );
        };
        let assigned = self.lock().assigned.get(&full).map_or(0, BTreeSet::len);
        let min_member = group.min_member();
        if assigned as i64 >= i64::from(min_member) {
            return (none(), Status::with_code(Code::Unschedulable));
        }
        let not_assigned = f64::from(min_member - assigned as i32) / f64::from(min_member);
        if not_assigned <= self.reject_threshold {
            return (none(), Status::with_code(Code::Unschedulable));
        }
        let label = group_label(pod).unwrap_or_default();
        self.reject_waiting(pod.namespace(), label, "optimistic rejection in PostFilter");
        let mut state = self.lock();
        if let Some(backoff) = self.backoff
            && self.siblings(pod, label).len() as i64 >= i64::from(min_member)
        {
            state.backed_off.add(&full, self.clock.now(), backoff);
        }
        state.permitted.remove(&full);
        state.failed.insert(full.clone(), self.clock.now());
        let message = format!(
            "PodGroup {full} gets rejected due to Pod {} is unschedulable even after PostFilter",
            pod.name()
        );
        (none(), Status::new(Code::Unschedulable, message))
    }
}

impl ReservePlugin for Coscheduling {
    /// `Reserve`: nothing.
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }

    /// `Unreserve`: forgets the pod and rejects every waiting pod of its group.
    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        let (Some(full), Some(_)) = self.pod_group(pod) else {
            return;
        };
        {
            let mut state = self.lock();
            if let Some(assigned) = state.assigned.get_mut(&full) {
                assigned.remove(pod.name());
                if assigned.is_empty() {
                    state.assigned.remove(&full);
                }
            }
        }
        let label = group_label(pod).unwrap_or_default();
        self.reject_waiting(pod.namespace(), label, "rejection in Unreserve");
        let mut state = self.lock();
        state.permitted.remove(&full);
        state.failed.insert(full, self.clock.now());
    }
}

impl PermitPlugin for Coscheduling {
    /// `Permit`: waits until `minMember` pods of the group are assumed, then allows
    /// them all.
    fn permit(&self, cycle: &mut CycleState, pod: &PodInfo, _: &str) -> (Status, Duration) {
        let (full, group) = self.pod_group(pod);
        let Some(full) = full else {
            return (Status::success(), Duration::ZERO);
        };
        let Some(group) = group else {
            return (
                Status::new(Code::Unschedulable, "PodGroup not found"),
                Duration::ZERO,
            );
        };
        let assigned = {
            let mut state = self.lock();
            let assigned = state.assigned.entry(full.clone()).or_default();
            assigned.insert(pod.name().to_string());
            assigned.len()
        };
        if assigned as i64 >= i64::from(group.min_member()) {
            let mut state = self.lock();
            state.failed.remove(&full);
            drop(state);
            self.waiting.iterate(|w| {
                if group_full_name(w.pod()).as_deref() == Some(full.as_str()) {
                    w.allow(NAME);
                }
            });
            return (Status::success(), Duration::ZERO);
        }
        // util.GetWaitTimeDuration, then Permit's `if wait != 0`.
        let wait = match group.spec.schedule_timeout_seconds {
            Some(s) => Duration::from_secs(u64::try_from(s).unwrap_or(0)),
            None if !self.schedule_timeout.is_zero() => self.schedule_timeout,
            None => DEFAULT_WAIT_TIME,
        };
        let wait = if wait.is_zero() {
            self.schedule_timeout
        } else {
            wait
        };
        // ActivateSiblings: the group's first pod to wait asks the queue to retry its
        // siblings now (PermitState.Activate is set when it is the first assigned).
        if assigned == 1
            && let Some(label) = group_label(pod)
        {
            for sibling in self.siblings(pod, label) {
                if sibling.uid() != pod.uid() {
                    PodsToActivate::add(cycle, sibling.key());
                }
            }
        }
        (Status::with_code(Code::Wait), wait)
    }
}

#[cfg(test)]
mod tests;
