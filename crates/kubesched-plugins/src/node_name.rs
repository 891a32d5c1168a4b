//! NodeName: a pod that names a node in `spec.nodeName` fits only that node.

use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, Status, filter_where,
};

/// The plugin's name.
pub const NAME: &str = "NodeName";
/// The reason it gives.
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// Filters out every node but the one the pod names.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler: NodeName reads spec.nodeName.
    /// NodeName's verdict reads the pod and the node only.
    fn node_local(&self, _pod: &PodInfo) -> bool {
        true
    }
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
    }
    // Reads the node's name only.
    fn reads_node_pods(&self, _pod: &PodInfo) -> bool {
        false
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        use kubesched_framework::signature::{SignFragment, signers};
        Ok(vec![SignFragment::json(
            signers::NODE_NAME,
            &pod.node_name().unwrap_or(""),
        )])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::node_name()
    }
    kubesched_framework::extension_points!(Filter);
}

impl FilterPlugin for NodeName {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match pod.node_name() {
            None => Status::success(),
            Some(name) if name == node.name() => Status::success(),
            Some(_) => Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON),
        }
    }

    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        // A pod that names no node fits every node.
        if pod.node_name().is_some() {
            filter_where(self, state, pod, nodes, rejected, |_| true);
        }
    }
}
