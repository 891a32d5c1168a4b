//! DynamicResources' PostFilter, as kube-scheduler's: when Filter found an allocated
//! claim unavailable on some node and no other pod has it reserved, the claim is
//! deallocated through the API so that the next attempt may allocate it anew; the pod's
//! extended resource claim from an earlier attempt is deleted; otherwise the pod stays
//! unschedulable.

use futures_executor::block_on;
use kubesched_framework::{
    Code, CycleState, NodeToStatus, PodInfo, PostFilterContext, PostFilterPlugin, PostFilterResult,
    Status,
};

use super::state::{CycleData, pre_filter_state_missing};
use super::{DynamicResources, extended};

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        _: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        if let Some(missing) = pre_filter_state_missing(state) {
            return (None, missing);
        }
        let data = match state.read::<CycleData>() {
            Some(CycleData(data)) if !data.claims.is_empty() || data.extended.is_some() => data,
            _ => {
                return (
                    None,
                    Status::new(Code::Unschedulable, "no new claims to deallocate"),
                );
            }
        };
        let unavailable = data
            .unavailable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        // kube-scheduler picks among several such claims at random (map order); the
        // lowest index is one of its choices.
        for index in unavailable {
            let claim = &data.claims[index];
            let reserved = claim
                .status
                .as_ref()
                .and_then(|s| s.reserved_for.as_deref())
                .unwrap_or_default();
            if !(reserved.is_empty() || reserved.len() == 1 && reserved[0].uid == pod.uid()) {
                continue;
            }
            let mut freed = (**claim).clone();
            if let Some(status) = freed.status.as_mut() {
                status.allocation = None;
                status.reserved_for = None;
            }
            // Only the API server learns of it: kube-scheduler assumes nothing here, so
            // its claim cache changes when the watch brings the update, and in a
            // simulation (no writer, the world does not move) never.
            if let Some(writer) = &self.writer
                && let Err(e) = block_on(writer.update_resource_claim_status(&freed))
            {
                return (None, Status::error(e.to_string()));
            }
            return (
                None,
                Status::new(
                    Code::Unschedulable,
                    "deallocation of ResourceClaim completed",
                ),
            );
        }
        if let Some(claim) = data.extended.as_ref().and_then(|e| e.existing.as_ref()) {
            // The pod's extended resource claim from an earlier attempt: deleted, so that
            // the next attempt starts anew (in a simulation nothing moves).
            if let Some(writer) = &self.writer
                && let Err(e) = block_on(extended::delete_claim(writer.as_ref(), claim))
            {
                return (None, Status::error(e));
            }
            return (
                None,
                Status::new(Code::Unschedulable, "deletion of ResourceClaim completed"),
            );
        }
        (
            None,
            Status::new(Code::Unschedulable, "still not schedulable"),
        )
    }
}
