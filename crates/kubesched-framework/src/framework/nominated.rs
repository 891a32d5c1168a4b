//! [`NominatedPods`]: the pods preemption nominated to a node, which Filter treats as
//! already there for pods of lower or equal priority.

use crate::pod_info::PodInfo;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Pods nominated to nodes by an earlier preemption and not bound yet: kube-scheduler's
/// `PodNominator`. While victims terminate, a nominated pod waits for its node; meanwhile
/// the Filter plugins treat it as already there when they check a pod of lower or equal
/// priority on that node ([`Framework::run_filter_plugins_with_nominated_pods`](super::Framework::run_filter_plugins_with_nominated_pods)), so the
/// space preemption freed is not taken by a less important pod.
///
/// Pods are identified by UID ([`PodInfo::uid`]); a pod is nominated to one node at a
/// time, and the pods of a node keep their nomination order.
#[derive(Clone, Debug, Default)]
pub struct NominatedPods {
    by_node: BTreeMap<String, Vec<Arc<PodInfo>>>,
    node_of: BTreeMap<String, String>,
}

impl NominatedPods {
    /// No nominated pods.
    pub fn new() -> NominatedPods {
        NominatedPods::default()
    }

    /// Nominates `pod` to `node`, replacing any earlier nomination of the same pod.
    pub fn add(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.remove(pod.uid());
        self.node_of.insert(pod.uid().to_string(), node.to_string());
        self.by_node.entry(node.to_string()).or_default().push(pod);
    }

    /// Removes the nomination of the pod with this UID (when it is bound, deleted, or
    /// its nomination is cleared); returns the node it was nominated to.
    pub fn remove(&mut self, uid: &str) -> Option<String> {
        let node = self.node_of.remove(uid)?;
        if let Some(pods) = self.by_node.get_mut(&node) {
            pods.retain(|p| p.uid() != uid);
            if pods.is_empty() {
                self.by_node.remove(&node);
            }
        }
        Some(node)
    }

    /// The node the pod with this UID is nominated to.
    pub fn node_of(&self, uid: &str) -> Option<&str> {
        self.node_of.get(uid).map(String::as_str)
    }

    /// The pods nominated to `node`, in nomination order.
    pub fn for_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// The number of nominated pods.
    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// `true` when no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }
}
