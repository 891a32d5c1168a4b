//! GangScheduling: kube-scheduler v1.36's all-or-nothing scheduling of the pods of a
//! `scheduling.k8s.io/v1alpha2` PodGroup with a `gang` policy
//! (pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go). Pods join a
//! group with `spec.schedulingGroup.podGroupName`. The plugin is in the default
//! profile when the `GangScheduling` gate is on (which needs `GenericWorkload`).
//!
//! - **PreEnqueue** keeps a pod out of the queue until its PodGroup exists and, for a
//!   gang, until the scheduler knows `minCount` pods of the group.
//! - **Permit** makes a pod wait (5 minutes, `permitTimeoutDuration`) until
//!   `minCount` pods of the group are scheduled (bound or assumed), then allows the
//!   group's waiting pods.
//!
//! v1.36's plugin has no Reserve: the pods a group has scheduled are the cache's
//! (`PodGroupState.ScheduledPodsCount`). Here they are the group's pods bound when the
//! plugin was built, those this plugin allowed, and those waiting at Permit (the
//! assumed ones). The PodGroup scheduling cycle that runs these pods together is the
//! scheduler's (`Scheduler::schedule_pod_group` in kubesched-framework).
//!
//! Under `--kubernetes-version 1.35` the registry's factory builds v1.35's plugin
//! instead ([`v1_35`]: `scheduling.k8s.io/v1alpha1` Workloads, `spec.workloadRef`,
//! Reserve and Permit without a PodGroup cycle). Each version reads only its own API:
//! the other version's objects are loaded but, as on a server that does not serve
//! them, nothing reads them.
//!
//! Floor: `kubesched-framework`; PodGroups and the pod list come from
//! [`Handle::objects`] in a simulation, and from [`Handle::live_objects`] in a running
//! scheduler, where the plugin derives its view again whenever they change.

pub mod api;
pub mod v1_35;
pub mod v1alpha1;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kubesched_framework::events::{
    ActionType, ClusterEvent, EventObjects, EventResource, QueueingHint,
};
use kubesched_framework::waiting::WaitingPods;
use kubesched_framework::{
    ClusterObjects, Code, CycleState, Handle, LiveCursor, PermitPlugin, Plugin, PluginError,
    PodInfo, PreEnqueuePlugin, ReservePlugin, Status, extension_points,
};

use api::PodGroup;

/// The plugin's name.
pub const NAME: &str = "GangScheduling";

/// `permitTimeoutDuration`: how long a gang's pods wait at Permit for the quorum.
pub const PERMIT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Permit's Wait reason.
pub const WAIT_MESSAGE: &str = "waiting for minCount pods from a gang to be scheduled";

/// PreEnqueue's reason while the gang has fewer than `minCount` pods.
pub const QUORUM_MESSAGE: &str =
    "waiting for minCount pods from a gang to appear in scheduling queue";

/// The PodGroup a pod names (`spec.schedulingGroup.podGroupName`), when it names one.
pub fn pod_group_name(pod: &PodInfo) -> Option<&str> {
    pod.pod_group_name()
}

/// The pods of `group` the snapshot holds (bound or assumed: kube-scheduler's
/// `PodGroupState.ScheduledPods`), with their node's index.
pub fn scheduled_pods_of_group<'a>(
    snapshot: &'a kubesched_framework::Snapshot,
    group: kubesched_framework::PodGroupRef<'a>,
) -> impl Iterator<Item = (usize, &'a PodInfo)> + 'a {
    snapshot
        .nodes()
        .iter()
        .enumerate()
        .flat_map(|(i, node)| node.pods().iter().map(move |p| (i, &**p)))
        .filter(move |(_, p)| {
            p.namespace() == group.namespace && pod_group_name(p) == Some(group.name)
        })
}

/// The PodGroups of `handle.objects`, by `namespace/name`; an object that does not
/// decode is an error naming it.
pub fn pod_groups(handle: &Handle) -> Result<HashMap<String, Arc<PodGroup>>, PluginError> {
    match &handle.objects {
        Some(objects) => pod_groups_of(objects),
        None => Ok(HashMap::new()),
    }
}

/// The v1alpha2 PodGroups among `objects`, by `namespace/name`.
pub(crate) fn pod_groups_of(
    objects: &ClusterObjects,
) -> Result<HashMap<String, Arc<PodGroup>>, PluginError> {
    let mut groups = HashMap::new();
    for o in objects.custom_of(api::GROUP, "PodGroup") {
        if o.api_version != api::API_VERSION {
            continue;
        }
        let mut group: PodGroup = serde_json::from_value(o.value.clone())
            .map_err(|e| PluginError::new(format!("PodGroup {}: {e}", o.name)))?;
        group.metadata.namespace = o.namespace.clone();
        groups.insert(group.full_name(), Arc::new(group));
    }
    Ok(groups)
}

/// The plugin.
pub struct GangScheduling {
    waiting: Arc<WaitingPods>,
    /// Where a running scheduler keeps the PodGroups and pods as they change (a
    /// simulation's objects `view` holds from the start).
    live: LiveCursor,
    /// The PodGroups and how many pods name each.
    view: Mutex<GroupView>,
    /// The pods of each group bound, or allowed at Permit, by uid.
    scheduled: Mutex<HashMap<String, HashSet<String>>>,
    /// The pods of each group this plugin made wait and has not allowed yet.
    made_to_wait: Mutex<HashMap<String, MadeToWait>>,
}

/// What the plugin derives from the objects.
#[derive(Debug, Default)]
struct GroupView {
    /// PodGroups by `namespace/name`.
    groups: HashMap<String, Arc<PodGroup>>,
    /// How many pods name each group (`PodGroupState.AllPodsCount`).
    all_pods: HashMap<String, usize>,
}

impl GroupView {
    /// Derives the view of `objects`, adding the group pods bound there to
    /// `scheduled` and taking out of it the pods that are gone (the workload
    /// manager's `DeletePod`: a deleted pod no longer counts toward its gang).
    fn of(
        objects: &ClusterObjects,
        scheduled: &mut HashMap<String, HashSet<String>>,
    ) -> Result<GroupView, PluginError> {
        let groups = pod_groups_of(objects)?;
        let mut all_pods: HashMap<String, usize> = HashMap::new();
        let mut present: HashSet<&str> = HashSet::new();
        for pod in &objects.pods {
            let Some(key) = group_key(pod) else { continue };
            present.insert(pod.uid());
            if pod.node_name().is_some() {
                scheduled
                    .entry(key.clone())
                    .or_default()
                    .insert(pod.uid().to_string());
            }
            *all_pods.entry(key).or_default() += 1;
        }
        scheduled.retain(|_, uids| {
            uids.retain(|uid| present.contains(uid.as_str()));
            !uids.is_empty()
        });
        Ok(GroupView { groups, all_pods })
    }
}

/// The pods of one gang that Permit answered `Wait`, kept so that each Permit counts
/// the gang's waiting pods in O(1) amortized instead of going over every waiting pod
/// (a gang of n pods would cost O(n²)).
#[derive(Debug, Default)]
struct MadeToWait {
    /// Their uids, oldest first; some may have stopped waiting since.
    uids: Vec<String>,
    /// How many of `uids`, from the front, were seen waiting when the waiting pods'
    /// departures were `departures`: no pod has left since, so they still wait.
    checked: usize,
    departures: u64,
}

impl MadeToWait {
    /// How many of the pods made to wait still wait, `except` left out.
    fn still_waiting(&mut self, waiting: &WaitingPods, except: &str) -> usize {
        let departures = waiting.departures();
        if departures != self.departures || waiting.contains(except) {
            self.checked = 0;
            self.departures = departures;
        }
        let mut kept = self.checked;
        for i in self.checked..self.uids.len() {
            if self.uids[i] != except && waiting.contains(&self.uids[i]) {
                self.uids.swap(kept, i);
                kept += 1;
            }
        }
        self.uids.truncate(kept);
        self.checked = kept;
        kept
    }
}

impl std::fmt::Debug for GangScheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GangScheduling")
            .field("groups", &self.view().groups.len())
            .field("live", &self.live)
            .finish()
    }
}

/// The factory: reads the PodGroups and pods of `handle.objects` (v1.36), or the
/// Workloads and pods ([`v1_35::GangScheduling`]) under v1.35.
pub fn new(_: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, PluginError> {
    if handle.features.version < kubesched_framework::KubernetesVersion::V1_36 {
        return v1_35::GangScheduling::new(handle).map(|p| Arc::new(p) as Arc<dyn Plugin>);
    }
    GangScheduling::new(handle).map(|p| Arc::new(p) as Arc<dyn Plugin>)
}

/// `namespace/name` of the group `pod` names.
fn group_key(pod: &PodInfo) -> Option<String> {
    pod_group_name(pod).map(|g| format!("{}/{g}", pod.namespace()))
}

/// Whether `other` names the same PodGroup as `pod`, which names `name`: compared
/// without building keys, as Permit asks it of every waiting pod.
fn same_group(other: &PodInfo, pod: &PodInfo, name: &str) -> bool {
    pod_group_name(other) == Some(name) && other.namespace() == pod.namespace()
}

impl GangScheduling {
    /// The plugin over `handle`'s objects: its live objects in a running scheduler,
    /// else the simulation's.
    pub fn new(handle: &Handle) -> Result<GangScheduling, PluginError> {
        let mut scheduled = HashMap::new();
        let (live, objects) = LiveCursor::new(handle);
        let view = match objects {
            Some(objects) => GroupView::of(&objects, &mut scheduled)?,
            None => GroupView::default(),
        };
        Ok(GangScheduling {
            waiting: handle.waiting_pods.clone(),
            live,
            view: Mutex::new(view),
            scheduled: Mutex::new(scheduled),
            made_to_wait: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, HashSet<String>>> {
        self.scheduled.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The view, derived again first if the live objects changed since. A PodGroup
    /// that does not decode (the API server validated it, so it should not happen)
    /// keeps the view as it was.
    fn view(&self) -> MutexGuard<'_, GroupView> {
        let mut view = self.view.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(objects) = self.live.changed()
            && let Ok(fresh) = GroupView::of(&objects, &mut self.lock())
        {
            *view = fresh;
        }
        view
    }
}

impl Plugin for GangScheduling {
    fn name(&self) -> &str {
        NAME
    }
    extension_points!(PreEnqueue, Reserve, Permit);

    /// `EventsToRegister`: Pod/Add (a pod that completes a gang) and PodGroup/Add (the
    /// group a waiting pod names; v1alpha2 PodGroups are immutable, so no Update).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::ADD),
            ClusterEvent::new(EventResource::PodGroup, ActionType::ADD),
        ]
    }

    /// `isSchedulableAfterPodAdded`: a pod added moves only the pods of its own
    /// group (same namespace, same `podGroupName`); `isSchedulableAfterPodGroupAdded`:
    /// a PodGroup added moves only the pods that name it.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &ClusterEvent,
        objects: &EventObjects,
    ) -> QueueingHint {
        gang_hint(
            pod,
            event,
            objects,
            EventResource::PodGroup,
            |name| pod_group_name(pod) == Some(name),
            |added| pod_group_name(pod).is_some() && pod_group_name(pod) == pod_group_name(added),
        )
    }
}

/// The hint both versions' GangScheduling give, in the shape of their hint functions:
/// an event about the group kind (`group_kind`: v1.35's Workload, v1.36's PodGroup)
/// helps `pod` when the object, in the pod's namespace, is the one it names
/// (`names_its_group`); a pod added helps it when it is of the same gang, in the same
/// namespace (`same_gang`); an event without the object it needs may always help.
fn gang_hint(
    pod: &PodInfo,
    event: &ClusterEvent,
    objects: &EventObjects,
    group_kind: EventResource,
    names_its_group: impl Fn(&str) -> bool,
    same_gang: impl Fn(&PodInfo) -> bool,
) -> QueueingHint {
    let helps = match (event.resource, objects.new_pod(), objects.new_named()) {
        (resource, _, Some((namespace, name))) if resource == group_kind => {
            pod.namespace() == namespace && names_its_group(name)
        }
        (resource, _, None) if resource == group_kind => true,
        (_, None, _) => true,
        (_, Some(added), _) => pod.namespace() == added.namespace() && same_gang(added),
    };
    QueueingHint::queue_if(helps)
}

impl PreEnqueuePlugin for GangScheduling {
    /// `PreEnqueue`.
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let (Some(name), Some(key)) = (pod_group_name(pod), group_key(pod)) else {
            return Status::success();
        };
        let view = self.view();
        let Some(group) = view.groups.get(&key) else {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                format!("waiting for pods's pod group {name:?} to appear in scheduling queue"),
            );
        };
        let Some(min_count) = group.spec.scheduling_policy.gang_min_count() else {
            return Status::success();
        };
        let all = view.all_pods.get(&key).copied().unwrap_or(0);
        if (all as i64) < i64::from(min_count) {
            return Status::new(Code::UnschedulableAndUnresolvable, QUORUM_MESSAGE);
        }
        Status::success()
    }
}

/// kube-scheduler v1.36's plugin has no Reserve: it reads the group's scheduled pods
/// off the cache, where a pod unreserved and forgotten no longer counts. This plugin
/// counts them itself, so its Unreserve takes the pod out again: a pod a PodGroup cycle
/// tried on a placement and undid, or whose binding failed, is not scheduled.
impl ReservePlugin for GangScheduling {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }

    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        let Some(key) = group_key(pod) else {
            return;
        };
        if let Some(set) = self.lock().get_mut(&key) {
            set.remove(pod.uid());
        }
    }
}

impl PermitPlugin for GangScheduling {
    /// `Permit`: waits until `minCount` pods of the gang are scheduled, then allows
    /// every waiting pod of the gang.
    fn permit(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> (Status, Duration) {
        let (Some(name), Some(key)) = (pod_group_name(pod), group_key(pod)) else {
            return (Status::success(), Duration::ZERO);
        };
        let Some(min_count) = ({
            let view = self.view();
            let Some(group) = view.groups.get(&key) else {
                return (
                    Status::error(format!(
                        "failed to get podGroup {key}: podgroup.scheduling.k8s.io {name:?} not found"
                    )),
                    Duration::ZERO,
                );
            };
            group.spec.scheduling_policy.gang_min_count()
        }) else {
            return (Status::success(), Duration::ZERO);
        };
        let mut made_to_wait = self.made_to_wait.lock().unwrap_or_else(|e| e.into_inner());
        let waits = made_to_wait.entry(key.clone()).or_default();
        let waiting = waits.still_waiting(&self.waiting, pod.uid());
        let mut state = self.lock();
        let set = state.entry(key).or_default();
        let scheduled = set.len() + waiting + 1;
        if (scheduled as i64) < i64::from(min_count) {
            waits.uids.push(pod.uid().to_string());
            return (Status::new(Code::Wait, WAIT_MESSAGE), PERMIT_TIMEOUT);
        }
        set.extend(waits.uids.drain(..));
        set.insert(pod.uid().to_string());
        waits.checked = 0;
        drop(state);
        drop(made_to_wait);
        self.waiting.iterate(|w| {
            if same_group(w.pod(), pod, name) {
                w.allow(NAME);
            }
        });
        (Status::success(), Duration::ZERO)
    }
}

#[cfg(test)]
mod tests;
