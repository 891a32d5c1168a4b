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
    /// `isSchedulableAfterPodTolerationChange`: a toleration change helps only the pod
    /// that changed, once it tolerates `node.kubernetes.io/unschedulable:NoSchedule`.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> QueueingHint {
        let tolerates = |p: &PodInfo| {
            let tolerations = p.spec().tolerations.as_deref().unwrap_or(&[]);
            tolerations_tolerate(tolerations, &unschedulable_taint())
        };
        if let Some(hint) = crate::events::toleration_change_hint(pod, event, objects, tolerates) {
            return hint;
        }
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
        let tolerations = pod.spec().tolerations.as_deref().unwrap_or(&[]);
        if tolerations_tolerate(tolerations, &unschedulable_taint()) {
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

/// `node.kubernetes.io/unschedulable:NoSchedule`, the taint a cordoned node is
/// treated as having.
fn unschedulable_taint() -> Taint {
    Taint {
        key: TAINT_NODE_UNSCHEDULABLE.to_string(),
        effect: "NoSchedule".to_string(),
        ..Default::default()
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

    /// node_unschedulable_test.go's `TestIsSchedulableAfterPodTolerationChange`: only the
    /// pod itself, and only once it tolerates the unschedulable taint.
    #[test]
    fn a_toleration_helps_only_the_pod_that_now_tolerates_a_cordoned_node() {
        let pod = PodBuilder::new("default", "p")
            .uid("uid")
            .pod_info()
            .unwrap();
        let event = ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_TOLERATION);
        let hint = |uid: &str, key: &str| {
            let modified = PodBuilder::new("default", "p")
                .uid(uid)
                .toleration(key, "", kubesched_framework::build::TaintEffect::NoSchedule)
                .pod_info()
                .unwrap();
            let objects = EventObjects {
                old: None,
                new: Some(kubesched_framework::EventObject::Pod(modified)),
            };
            NodeUnschedulable.queueing_hint(&pod, &event, &objects)
        };
        assert_eq!(hint("uid", TAINT_NODE_UNSCHEDULABLE), QueueingHint::Queue);
        assert_eq!(hint("uid", "unrelated-key"), QueueingHint::QueueSkip);
        assert_eq!(
            hint("different-uid", TAINT_NODE_UNSCHEDULABLE),
            QueueingHint::QueueSkip
        );
    }
}
