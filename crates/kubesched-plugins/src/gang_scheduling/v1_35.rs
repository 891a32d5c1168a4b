//! GangScheduling as kube-scheduler v1.35.4 has it
//! (pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go, with the
//! workload manager of pkg/scheduler/backend/workloadmanager): all-or-nothing for the
//! pods of a `scheduling.k8s.io/v1alpha1` Workload's pod group with a `gang` policy.
//! Pods join a group with `spec.workloadRef` (`name`, `podGroup`,
//! `podGroupReplicaKey`; each replica key is its own gang). v1.35 has no PodGroup
//! cycle: the pods are scheduled one at a time and wait at Permit.
//!
//! - **PreEnqueue** keeps a pod out of the queue until its Workload exists, names the
//!   pod's group and, for a gang, until the scheduler knows `minCount` pods of the
//!   group (`AllPods`).
//! - **Reserve** / **Unreserve** mark the pod assumed / not assumed (`AssumePod`,
//!   `ForgetPod`).
//! - **Permit** makes a pod wait until `minCount` of the group's pods are assumed or
//!   bound, then allows every assumed pod of the group. A pod that waits is given what
//!   is left of the group's deadline (`SchedulingTimeout`: set 5 minutes,
//!   `DefaultSchedulingTimeoutDuration`, ahead at the first wait, and again once it
//!   has passed), read on [`Handle::clock`], and asks that the group's unscheduled
//!   pods be retried at once (`Activate`, through the cycle state's
//!   [`PodsToActivate`]).
//! - **Events**: a pod added (the one that completes a gang) and a Workload added.
//!
//! In a one-instant simulation the clock stands still, so every wait is the full 5
//! minutes, and the activations are moot (every pod is attempted once, in queue
//! order); a timed replay moves both. The Workloads and each pod's group come from
//! [`Handle::objects`], or from [`Handle::live_objects`] where they change (a timed
//! replay), followed as the workload manager's `AddPod`, `UpdatePod` and `DeletePod`
//! follow them; bound pods count as assigned.
//!
//! Floor: `kubesched-framework`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kubesched_framework::events::{
    ActionType, ClusterEvent, EventObjects, EventResource, QueueingHint,
};
use kubesched_framework::queue::Clock;
use kubesched_framework::waiting::WaitingPods;
use kubesched_framework::{
    ClusterObjects, Code, CycleState, Handle, LiveCursor, PermitPlugin, Plugin, PluginError,
    PodInfo, PodsToActivate, PreEnqueuePlugin, ReservePlugin, Status, extension_points,
};

use super::NAME;
use super::v1alpha1::{self, Workload, WorkloadReference, workload_ref};

/// `DefaultSchedulingTimeoutDuration`: how long a gang's pods wait at Permit for the
/// quorum, from the first wait.
pub const SCHEDULING_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Permit's Wait reason.
pub const WAIT_MESSAGE: &str = "waiting for minCount pods from a gang to be waiting on permit";

/// PreEnqueue's reason while the gang has fewer than `minCount` pods.
pub const QUORUM_MESSAGE: &str =
    "waiting for minCount pods from a gang to appear in scheduling queue";

/// `podGroupKey`: namespace, Workload, pod group and replica key.
type GroupKey = (String, WorkloadReference);

/// `podGroupInfo`: the group's pods by state (uids).
#[derive(Debug, Default)]
struct GroupInfo {
    /// Every pod of the group the scheduler knows: its key (`namespace/name`) by uid.
    all: HashMap<String, String>,
    /// Pods past Reserve, not yet bound.
    assumed: HashSet<String>,
    /// Pods bound to a node.
    assigned: HashSet<String>,
    /// `schedulingDeadline`: when the group's waits end, from its first wait.
    deadline: Option<Instant>,
}

impl GroupInfo {
    /// `SchedulingTimeout`: what is left of the group's deadline at `now`, a new one
    /// [`SCHEDULING_TIMEOUT`] ahead when there is none or it has passed.
    fn scheduling_timeout(&mut self, now: Instant) -> Duration {
        let deadline = match self.deadline {
            Some(d) if d >= now => d,
            _ => *self.deadline.insert(now + SCHEDULING_TIMEOUT),
        };
        deadline - now
    }

    /// `UnscheduledPods`: the keys of the pods neither assumed nor bound.
    fn unscheduled(&self) -> impl Iterator<Item = &String> {
        self.all
            .iter()
            .filter(|(uid, _)| !self.assumed.contains(*uid) && !self.assigned.contains(*uid))
            .map(|(_, key)| key)
    }
}

/// The plugin.
pub struct GangScheduling {
    waiting: Arc<WaitingPods>,
    /// Where a running scheduler (or a timed replay) keeps the Workloads and pods as
    /// they change; a simulation's are read once.
    live: LiveCursor,
    /// The Workloads and the workload manager's groups.
    manager: Mutex<Manager>,
    /// What the groups' deadlines are read on.
    clock: Arc<dyn Clock>,
}

/// The Workload lister and the workload manager.
#[derive(Debug, Default)]
struct Manager {
    /// Workloads by `namespace/name`.
    workloads: HashMap<String, Arc<Workload>>,
    /// The groups.
    groups: HashMap<GroupKey, GroupInfo>,
}

impl Manager {
    /// The Workloads and groups of `objects`; the bound pods count as assigned.
    fn of(objects: &ClusterObjects) -> Result<Manager, PluginError> {
        let mut manager = Manager {
            workloads: workloads_of(objects)?,
            groups: HashMap::new(),
        };
        manager.follow_pods(objects);
        Ok(manager)
    }

    /// The groups as `objects`' pods make them now (`AddPod`, `UpdatePod`,
    /// `DeletePod`): each group's pods and bound pods again; its assumed pods that
    /// are still there and not bound, and its deadline, kept. A group left with no
    /// pod is gone.
    fn follow_pods(&mut self, objects: &ClusterObjects) {
        let mut groups: HashMap<GroupKey, GroupInfo> = HashMap::new();
        for pod in &objects.pods {
            let Some(key) = key_of(pod) else { continue };
            let info = groups.entry(key).or_default();
            info.all
                .insert(pod.uid().to_string(), pod.key().to_string());
            if pod.node_name().is_some() {
                info.assigned.insert(pod.uid().to_string());
            }
        }
        for (key, info) in &mut groups {
            if let Some(old) = self.groups.get(key) {
                info.assumed = old
                    .assumed
                    .iter()
                    .filter(|uid| info.all.contains_key(*uid) && !info.assigned.contains(*uid))
                    .cloned()
                    .collect();
                info.deadline = old.deadline;
            }
        }
        self.groups = groups;
    }
}

impl std::fmt::Debug for GangScheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GangScheduling")
            .field("version", &"v1.35")
            .field("workloads", &self.lock().workloads.len())
            .finish()
    }
}

/// The Workloads of `handle.objects`, by `namespace/name`; an object that does not
/// decode is an error naming it. Objects of another version are not read (the
/// v1alpha2 API does not exist in v1.35).
pub fn workloads(handle: &Handle) -> Result<HashMap<String, Arc<Workload>>, PluginError> {
    match &handle.objects {
        Some(objects) => workloads_of(objects),
        None => Ok(HashMap::new()),
    }
}

/// The v1alpha1 Workloads among `objects`, by `namespace/name`.
fn workloads_of(objects: &ClusterObjects) -> Result<HashMap<String, Arc<Workload>>, PluginError> {
    let mut workloads = HashMap::new();
    for o in objects.custom_of(v1alpha1::GROUP, "Workload") {
        if o.api_version != v1alpha1::API_VERSION {
            continue;
        }
        let mut workload: Workload = serde_json::from_value(o.value.clone())
            .map_err(|e| PluginError::new(format!("Workload {}: {e}", o.name)))?;
        workload.metadata.namespace = o.namespace.clone();
        workloads.insert(workload.full_name(), Arc::new(workload));
    }
    Ok(workloads)
}

fn key_of(pod: &PodInfo) -> Option<GroupKey> {
    workload_ref(pod).map(|r| (pod.namespace().to_string(), r))
}

impl GangScheduling {
    /// The plugin over `handle`'s objects: the Workloads and every pod's group.
    pub fn new(handle: &Handle) -> Result<GangScheduling, PluginError> {
        let (live, objects) = LiveCursor::new(handle);
        let manager = match objects {
            Some(objects) => Manager::of(&objects)?,
            None => Manager::default(),
        };
        Ok(GangScheduling {
            waiting: handle.waiting_pods.clone(),
            live,
            manager: Mutex::new(manager),
            clock: handle.clock(),
        })
    }

    /// The manager, following the live objects first if they changed since. A
    /// Workload that does not decode (the API server validated it) keeps the
    /// Workloads as they were.
    fn lock(&self) -> MutexGuard<'_, Manager> {
        let mut manager = self.manager.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(objects) = self.live.changed() {
            if let Ok(workloads) = workloads_of(&objects) {
                manager.workloads = workloads;
            }
            manager.follow_pods(&objects);
        }
        manager
    }

    fn workload(&self, pod: &PodInfo, name: &str) -> Option<Arc<Workload>> {
        self.lock()
            .workloads
            .get(&format!("{}/{name}", pod.namespace()))
            .cloned()
    }
}

/// `PodGroupInfo`'s error when the manager has no state for the pod's group.
const NO_GROUP_STATE: &str = "internal pod group state doesn't exist for a pod's workload";

impl Plugin for GangScheduling {
    fn name(&self) -> &str {
        NAME
    }
    extension_points!(PreEnqueue, Reserve, Permit);

    /// `EventsToRegister`: Pod/Add (a pod that completes a gang) and Workload/Add
    /// (the workload a waiting gang names).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::ADD),
            ClusterEvent::new(EventResource::Workload, ActionType::ADD),
        ]
    }

    /// `isSchedulableAfterPodAdded`: a pod added moves only the pods with the same
    /// `workloadRef` (`matchingWorkloadReference`: namespace, workload, pod group and
    /// replica key); `isSchedulableAfterWorkloadAdded`: a Workload added moves only
    /// the pods whose `workloadRef` names it.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &ClusterEvent,
        objects: &EventObjects,
    ) -> QueueingHint {
        let reference = workload_ref(pod);
        super::gang_hint(
            pod,
            event,
            objects,
            EventResource::Workload,
            |name| reference.as_ref().is_some_and(|r| r.name == name),
            |added| reference.is_some() && reference == workload_ref(added),
        )
    }
}

impl PreEnqueuePlugin for GangScheduling {
    /// `PreEnqueue`.
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let Some((namespace, r)) = key_of(pod) else {
            return Status::success();
        };
        let Some(workload) = self.workload(pod, &r.name) else {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                format!(
                    "waiting for pods's workload {:?} to appear in scheduling queue",
                    r.name
                ),
            );
        };
        let Some(policy) = workload.pod_group_policy(&r.pod_group) else {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                format!(
                    "pod group {:?} doesn't exist for a workload {:?}",
                    r.pod_group,
                    workload.metadata.name.as_deref().unwrap_or("")
                ),
            );
        };
        let Some(min_count) = policy.gang_min_count() else {
            return Status::success();
        };
        let all = self
            .lock()
            .groups
            .get(&(namespace, r))
            .map_or(0, |g| g.all.len());
        if (all as i64) < i64::from(min_count) {
            return Status::new(Code::UnschedulableAndUnresolvable, QUORUM_MESSAGE);
        }
        Status::success()
    }
}

impl ReservePlugin for GangScheduling {
    /// `Reserve`: `AssumePod`.
    fn reserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
        let Some(key) = key_of(pod) else {
            return Status::success();
        };
        match self.lock().groups.get_mut(&key) {
            Some(info) => {
                info.assumed.insert(pod.uid().to_string());
                Status::success()
            }
            None => Status::error(NO_GROUP_STATE),
        }
    }

    /// `Unreserve`: `ForgetPod`.
    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        if let Some(key) = key_of(pod)
            && let Some(info) = self.lock().groups.get_mut(&key)
        {
            info.assumed.remove(pod.uid());
        }
    }
}

impl PermitPlugin for GangScheduling {
    /// `Permit`: waits until `minCount` pods of the gang are assumed or bound (what is
    /// left of the group's deadline, its unscheduled pods activated), then allows
    /// every assumed pod of the gang.
    fn permit(&self, cycle: &mut CycleState, pod: &PodInfo, _: &str) -> (Status, Duration) {
        let Some(key) = key_of(pod) else {
            return (Status::success(), Duration::ZERO);
        };
        let r = &key.1;
        let Some(workload) = self.workload(pod, &r.name) else {
            return (
                Status::error(format!(
                    "failed to get workload {}/{}: workload.scheduling.k8s.io {:?} not found",
                    pod.namespace(),
                    r.name,
                    r.name
                )),
                Duration::ZERO,
            );
        };
        let Some(policy) = workload.pod_group_policy(&r.pod_group) else {
            return (
                Status::error(format!(
                    "pod group {:?} doesn't exist for a workload {:?}",
                    r.pod_group,
                    workload.metadata.name.as_deref().unwrap_or("")
                )),
                Duration::ZERO,
            );
        };
        let Some(min_count) = policy.gang_min_count() else {
            return (Status::success(), Duration::ZERO);
        };
        let assumed: Vec<String> = {
            let mut manager = self.lock();
            let Some(info) = manager.groups.get_mut(&key) else {
                return (Status::error(NO_GROUP_STATE), Duration::ZERO);
            };
            let scheduled = info.assumed.union(&info.assigned).count();
            if (scheduled as i64) < i64::from(min_count) {
                for key in info.unscheduled() {
                    PodsToActivate::add(cycle, key);
                }
                let timeout = info.scheduling_timeout(self.clock.now());
                return (Status::new(Code::Wait, WAIT_MESSAGE), timeout);
            }
            info.assumed.iter().cloned().collect()
        };
        for uid in assumed {
            self.waiting.get(&uid, |w| w.allow(NAME));
        }
        (Status::success(), Duration::ZERO)
    }
}
