//! NodeUnschedulable: rejects nodes with `spec.unschedulable`, unless the pod tolerates
//! the `node.kubernetes.io/unschedulable:NoSchedule` taint.

use k8s_openapi::api::core::v1::Taint;
use kubesched_framework::events::QueueingHint;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, Status, filter_where,
};

use crate::helper::tolerations_tolerate;

/// The plugin's name.
pub const NAME: &str = "NodeUnschedulable";
/// The reason it gives.
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// The taint key that stands for `spec.unschedulable`.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// Filters out cordoned nodes.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &str {
        NAME
    }
    // The Filter reads only the pod's tolerations (of the unschedulable taint).
    /// The verdict reads the pod's tolerations and the node only.
    fn node_local(&self, _pod: &PodInfo) -> bool {
        true
    }
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
    }
    // Reads the node's `spec.unschedulable` and taint only.
    fn reads_node_pods(&self, _pod: &PodInfo) -> bool {
        false
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![kubesched_framework::signature::tolerations_fragment(
            pod,
        )])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::taints()
    }
    kubesched_framework::extension_points!(Filter);

    /// kube-scheduler's `isSchedulableAfterNodeChange`: a node added schedulable, or
    /// updated from unschedulable to schedulable, helps; any other node event does not.
    /// Pod events always help.
    fn queueing_hint(
        &self,
        _: &PodInfo,
        event: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> QueueingHint {
        crate::events::node_change_hint(event, objects, |original, modified| {
            let was_unschedulable = original.is_none_or(NodeInfo::unschedulable);
            QueueingHint::queue_if(was_unschedulable && !modified.unschedulable())
        })
    }
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.unschedulable() {
            return Status::success();
        }
        let taint = Taint {
            key: TAINT_NODE_UNSCHEDULABLE.to_string(),
            effect: "NoSchedule".to_string(),
            ..Default::default()
        };
        let tolerations = pod.spec().tolerations.as_deref().unwrap_or(&[]);
        if tolerations_tolerate(tolerations, &taint) {
            Status::success()
        } else {
            Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_UNSCHEDULABLE)
        }
    }

    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        filter_where(self, state, pod, nodes, rejected, NodeInfo::unschedulable);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesched_framework::build::{NodeBuilder, PodBuilder};
    use kubesched_framework::events::{ActionType, EventResource};
    use kubesched_framework::{ClusterEvent, EventObjects};

    #[test]
    fn a_node_event_helps_only_when_the_node_becomes_schedulable() {
        let pod = PodBuilder::new("default", "p").pod_info().unwrap();
        let node = |cordoned: bool| NodeBuilder::new("n").unschedulable(cordoned);
        let hint = |old: Option<bool>, new: bool| {
            let event = match old {
                None => ClusterEvent::NODE_ADD,
                Some(_) => ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT),
            };
            let objects = EventObjects::node_change(old.map(|c| node(c).node()), node(new).node());
            NodeUnschedulable.queueing_hint(&pod, &event, &objects)
        };
        assert_eq!(hint(None, false), QueueingHint::Queue);
        assert_eq!(hint(None, true), QueueingHint::QueueSkip);
        assert_eq!(hint(Some(true), false), QueueingHint::Queue);
        assert_eq!(hint(Some(false), false), QueueingHint::QueueSkip);
        assert_eq!(hint(Some(false), true), QueueingHint::QueueSkip);
    }
}
