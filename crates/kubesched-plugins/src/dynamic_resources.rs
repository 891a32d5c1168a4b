//! DynamicResources (DRA). kubesched does not model ResourceClaims, DeviceClasses or
//! ResourceSlices yet. For a pod without resource claims it behaves as kube-scheduler
//! v1.35 does: PreFilter skips, Score gives every node 0, and PostFilter answers "no
//! new claims to deallocate". A pod with resource claims is rejected with a message
//! naming the pod and the claim: never a silent pass.

use std::sync::Arc;

use kubesched_framework::{
    Code, CycleState, NodeInfo, NodeToStatus, Plugin, PodInfo, PostFilterContext, PostFilterPlugin,
    PostFilterResult, PreFilterPlugin, PreFilterResult, ScorePlugin, Snapshot, Status,
};

/// The plugin's name.
pub const NAME: &str = "DynamicResources";

/// Dynamic resource allocation, for pods without claims.
#[derive(Debug, Default, Clone, Copy)]
pub struct DynamicResources;

impl Plugin for DynamicResources {
    fn name(&self) -> &str {
        NAME
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::dynamic_resources()
    }
    fn as_pre_filter(self: Arc<Self>) -> Option<Arc<dyn PreFilterPlugin>> {
        Some(self)
    }
    fn as_post_filter(self: Arc<Self>) -> Option<Arc<dyn PostFilterPlugin>> {
        Some(self)
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        Some(self)
    }
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match pod.spec().resource_claims.iter().flatten().next() {
            None => (None, Status::skip()),
            Some(claim) => (
                None,
                Status::new(
                    Code::UnschedulableAndUnresolvable,
                    format!(
                        "pod {} uses resource claim {:?}: dynamic resource allocation is not supported by kubesched yet",
                        pod.key(),
                        claim.name
                    ),
                ),
            ),
        }
    }
}

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        _: &PostFilterContext<'_>,
        _: &CycleState,
        _: &PodInfo,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        (
            None,
            Status::new(Code::Unschedulable, "no new claims to deallocate"),
        )
    }
}

impl ScorePlugin for DynamicResources {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }
}
