//! CapacityScheduling: scheduler-plugins' elastic quotas
//! (pkg/capacityscheduling/capacity_scheduling.go and elasticquota.go). A
//! `scheduling.x-k8s.io/v1alpha1` ElasticQuota gives its namespace a `min` (what the
//! namespace is guaranteed) and a `max` (what its pods may request at most). PreFilter
//! refuses a pod whose namespace would pass its max, or that would take the quotas
//! together past the sum of their mins; a namespace may so borrow the min another one
//! leaves unused. PostFilter preempts with kube-scheduler's evaluator
//! ([`kubesched_plugins::default_preemption::preempt`]) and the plugin's own victim
//! rules ([`preemption`]): pods of lower priority in the same quota when the preemptor's
//! quota is over its min, else pods of other quotas that borrow (are over their min).
//!
//! Each function below says which Go function it follows. Where the simulator
//! differs from a running scheduler: the plugin's informers (ElasticQuota and assigned
//! pods) are replayed from the snapshot at each PreFilter (a pod on a node is counted,
//! a counted pod no longer on a node is forgotten, as the pod informer's add and
//! delete events would), and PreFilter sees no nominated pods (the simulator retries
//! a nominated pod at once, after evicting its victims, so no other pod waits
//! nominated).
//!
//! Floor: `kubesched-framework` and `kubesched-plugins` (the preemption evaluator);
//! ElasticQuotas come from [`Handle::objects`].

pub mod preemption;
pub mod quota;

use std::sync::{Arc, Mutex, MutexGuard};

use kubesched_framework::{
    ClusterObjects, Code, CycleState, Handle, LiveCursor, NodeInfo, NodeToStatus, Plugin,
    PluginError, PodInfo, PostFilterContext, PostFilterPlugin, PostFilterResult,
    PreFilterExtensions, PreFilterPlugin, PreFilterResult, ReservePlugin, Snapshot, Status,
    extension_points,
};

use crate::api::{self, ElasticQuota};
use kubesched_framework::events::{ActionType, ClusterEvent, EventResource};
use kubesched_framework::resource::Resource;
pub use quota::{ElasticQuotaInfo, ElasticQuotaInfos};

/// The plugin's name in a KubeSchedulerConfiguration.
pub const NAME: &str = "CapacityScheduling";

/// The plugin: the quotas and the pods counted in them (`elasticQuotaInfos`).
#[derive(Debug)]
pub struct CapacityScheduling {
    infos: Mutex<ElasticQuotaInfos>,
    /// Where a running scheduler keeps the ElasticQuotas as they change (a
    /// simulation's are read once).
    live: LiveCursor,
}

/// `ElasticQuotaSnapshotState`: the quotas as PreFilter copied them, changed by the
/// AddPod/RemovePod extensions during preemption's dry run.
#[derive(Clone, Debug)]
pub struct ElasticQuotaSnapshotState {
    /// The quotas by namespace.
    pub infos: ElasticQuotaInfos,
}

/// `PreFilterState`: the pod's request and the sums PreFilter compared.
#[derive(Clone, Debug, Default)]
pub struct PreFilterState {
    /// `podReq` (`computePodResourceRequest`).
    pub pod_req: Resource,
    /// `nominatedPodsReqInEQWithPodReq`: the pod's request plus the nominated pods of
    /// its quota at least as important.
    pub nominated_in_eq_with_pod_req: Resource,
    /// `nominatedPodsReqWithPodReq`: the above plus the nominated pods of other quotas
    /// under their min.
    pub nominated_with_pod_req: Resource,
}

/// The factory (`New`): the plugin takes no args.
pub fn new(
    _args: Option<&serde_json::Value>,
    handle: &Handle,
) -> Result<Arc<dyn Plugin>, PluginError> {
    CapacityScheduling::new(handle).map(|p| Arc::new(p) as Arc<dyn Plugin>)
}

impl CapacityScheduling {
    /// The plugin over `handle`'s ElasticQuotas (the first of a namespace is kept, as
    /// `addElasticQuota` keeps it) and its bound pods (the pod informer's `addPod`).
    pub fn new(handle: &Handle) -> Result<CapacityScheduling, PluginError> {
        let (live, objects) = LiveCursor::new(handle);
        let infos = match objects {
            Some(objects) => quota_infos(&objects)?,
            None => ElasticQuotaInfos::new(),
        };
        Ok(CapacityScheduling {
            infos: Mutex::new(infos),
            live,
        })
    }

    /// In a running scheduler, the quotas as the live objects hold them now (their
    /// pods are replayed from the snapshot next); a quota that does not decode keeps
    /// the quotas as they were.
    fn follow_live_quotas(&self) {
        let mut infos = self.lock();
        if let Some(objects) = self.live.changed()
            && let Ok(fresh) = quota_infos(&objects)
        {
            *infos = fresh;
        }
    }

    fn lock(&self) -> MutexGuard<'_, ElasticQuotaInfos> {
        self.infos.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `snapshotElasticQuota`, after replaying the pod informer from `snapshot`: pods
    /// on a node are added (`addPod`), counted pods on no node deleted (`deletePod`).
    fn snapshot_elastic_quota(&self, snapshot: &Snapshot) -> ElasticQuotaInfos {
        self.follow_live_quotas();
        let mut infos = self.lock();
        let mut on_nodes = std::collections::BTreeSet::new();
        for node in snapshot.nodes() {
            for pod in node.pods() {
                if let Some(info) = infos.get_mut(pod.namespace()) {
                    on_nodes.insert(pod.uid().to_string());
                    info.add_pod_if_not_present(pod);
                }
            }
        }
        for info in infos.values_mut() {
            let gone: Vec<String> = info
                .pod_uids()
                .filter(|uid| !on_nodes.contains(*uid))
                .cloned()
                .collect();
            for uid in gone {
                info.delete_uid(&uid);
            }
        }
        infos.clone()
    }
}

/// The ElasticQuotas of `objects` (the first of a namespace is kept, as
/// `addElasticQuota` keeps it) with their bound pods (the pod informer's `addPod`).
fn quota_infos(objects: &ClusterObjects) -> Result<ElasticQuotaInfos, PluginError> {
    let mut infos = ElasticQuotaInfos::new();
    for o in objects.custom_of(api::GROUP, "ElasticQuota") {
        let mut eq: ElasticQuota = serde_json::from_value(o.value.clone())
            .map_err(|e| PluginError::new(format!("ElasticQuota {}: {e}", o.name)))?;
        eq.metadata.namespace = o.namespace.clone();
        let ns = eq.namespace().to_string();
        infos.entry(ns.clone()).or_insert_with(|| {
            ElasticQuotaInfo::new(&ns, eq.spec.min.as_ref(), eq.spec.max.as_ref())
        });
    }
    for pod in objects.pods.iter().filter(|p| p.node_name().is_some()) {
        if let Some(info) = infos.get_mut(pod.namespace()) {
            info.add_pod_if_not_present(pod);
        }
    }
    Ok(infos)
}

impl Plugin for CapacityScheduling {
    fn name(&self) -> &str {
        NAME
    }
    extension_points!(PreFilter, PostFilter, Reserve);

    /// `EventsToRegister`: Pod/Delete (a pod's quota usage freed), and any change of
    /// an ElasticQuota (`elasticquotas.v1alpha1.scheduling.x-k8s.io`).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::DELETE),
            ClusterEvent::new(EventResource::ELASTIC_QUOTA, ActionType::ALL),
        ]
    }
}

impl PreFilterPlugin for CapacityScheduling {
    /// `PreFilter`: the pod's quota plus its request must stay within max
    /// (`usedOverMaxWith`), and every quota's used plus the request within the sum of
    /// the mins (`aggregatedUsedOverMinWith`); a pod of a namespace without quota
    /// passes.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let infos = self.snapshot_elastic_quota(snapshot);
        let pod_req = quota::compute_pod_resource_request(pod);
        let eq = infos.get(pod.namespace()).cloned();
        state.write(ElasticQuotaSnapshotState {
            infos: infos.clone(),
        });
        let Some(eq) = eq else {
            state.write(PreFilterState {
                pod_req,
                ..PreFilterState::default()
            });
            return (None, Status::success());
        };
        // No pod is nominated in a simulation's PreFilter (see the module doc): both
        // sums are the pod's request.
        let pre = PreFilterState {
            nominated_in_eq_with_pod_req: pod_req.clone(),
            nominated_with_pod_req: pod_req.clone(),
            pod_req,
        };
        let over_max = eq.used_over_max_with(&pre.nominated_in_eq_with_pod_req);
        let over_min = quota::aggregated_used_over_min_with(&infos, &pre.nominated_with_pod_req);
        state.write(pre);
        if over_max {
            let message = format!(
                "Pod {}/{} is rejected in PreFilter because ElasticQuota {} is more than Max",
                pod.namespace(),
                pod.name(),
                eq.namespace
            );
            return (None, Status::new(Code::Unschedulable, message));
        }
        if over_min {
            let message = format!(
                "Pod {}/{} is rejected in PreFilter because total ElasticQuota used is more than min",
                pod.namespace(),
                pod.name()
            );
            return (None, Status::new(Code::Unschedulable, message));
        }
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for CapacityScheduling {
    /// `AddPod`: counts the pod in its quota of the cycle's copy.
    fn add_pod(&self, state: &mut CycleState, _: &PodInfo, add: &PodInfo, _: &NodeInfo) -> Status {
        let Some(snap) = state.read_mut::<ElasticQuotaSnapshotState>() else {
            return Status::error(format!(
                "error reading {:?} from cycleState: not found",
                ELASTIC_QUOTA_SNAPSHOT_KEY
            ));
        };
        if let Some(info) = snap.infos.get_mut(add.namespace()) {
            info.add_pod_if_not_present(add);
        }
        Status::success()
    }

    /// `RemovePod`: forgets the pod in its quota of the cycle's copy.
    fn remove_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        remove: &PodInfo,
        _: &NodeInfo,
    ) -> Status {
        let Some(snap) = state.read_mut::<ElasticQuotaSnapshotState>() else {
            return Status::error(format!(
                "error reading {:?} from cycleState: not found",
                ELASTIC_QUOTA_SNAPSHOT_KEY
            ));
        };
        if let Some(info) = snap.infos.get_mut(remove.namespace()) {
            info.delete_pod_if_present(remove);
        }
        Status::success()
    }
}

/// `ElasticQuotaSnapshotKey`.
pub const ELASTIC_QUOTA_SNAPSHOT_KEY: &str = "ElasticQuotaSnapshot";

impl PostFilterPlugin for CapacityScheduling {
    /// `PostFilter`: kube-scheduler's `Evaluator.Preempt` with this plugin's rules; its
    /// status is returned as it is (no "preemption: " prefix, unlike DefaultPreemption).
    fn post_filter(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        kubesched_plugins::default_preemption::preempt(self, ctx, state, pod, filtered)
    }
}

impl ReservePlugin for CapacityScheduling {
    /// `Reserve`: counts the pod in its quota.
    fn reserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
        if let Some(info) = self.lock().get_mut(pod.namespace()) {
            info.add_pod_if_not_present(pod);
        }
        Status::success()
    }

    /// `Unreserve`: forgets the pod in its quota.
    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        if let Some(info) = self.lock().get_mut(pod.namespace()) {
            info.delete_pod_if_present(pod);
        }
    }
}

#[cfg(test)]
mod tests;
