//! [`NodeInfo`]: a node and what is on it, pre-computed for the plugins: allocatable
//! and requested resources as integers, pods, used host ports, image states.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::{Node, Taint};

use crate::pod_info::{DEFAULT_BIND_ALL_HOST_IP, HostPort, PodInfo};
use crate::quantity::QuantityError;
use crate::resource::{Resource, parse_resource_list};

static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// A generation no [`NodeInfo`] had before (kube-scheduler's `nextGeneration`).
fn next_generation() -> u64 {
    NEXT_GENERATION.fetch_add(1, Ordering::Relaxed)
}

/// What the cluster knows of one image name: its size and on how many nodes it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ImageStateSummary {
    /// Size in bytes (as first reported, see [`crate::Snapshot`]).
    pub size: i64,
    /// How many nodes report the image.
    pub num_nodes: usize,
}

/// The host ports in use on a node: a set of (ip, protocol, port), as kube-scheduler's
/// `HostPortInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPortInfo {
    ports: BTreeSet<HostPort>,
}

impl HostPortInfo {
    /// Marks a port as used.
    pub fn add(&mut self, port: &HostPort) {
        if port.port > 0 {
            self.ports.insert(port.clone());
        }
    }

    /// Frees a port.
    pub fn remove(&mut self, port: &HostPort) {
        self.ports.remove(port);
    }

    /// `true` when `port` conflicts with a used port: `0.0.0.0` conflicts with every IP
    /// for the same protocol and port.
    pub fn conflicts(&self, port: &HostPort) -> bool {
        if port.port <= 0 {
            return false;
        }
        if port.ip == DEFAULT_BIND_ALL_HOST_IP {
            return self
                .ports
                .iter()
                .any(|p| p.port == port.port && p.protocol == port.protocol);
        }
        self.ports.iter().any(|p| {
            p.port == port.port
                && p.protocol == port.protocol
                && (p.ip == port.ip || p.ip == DEFAULT_BIND_ALL_HOST_IP)
        })
    }

    /// The number of used (ip, protocol, port) entries.
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// `true` when no port is used.
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }
}

/// A node's allocatable resources could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node {node}: status.allocatable.{resource}: {source}")]
pub struct NodeInfoError {
    /// The node's name.
    pub node: String,
    /// The resource whose quantity is bad.
    pub resource: String,
    /// Why.
    pub source: QuantityError,
}

/// cpu, memory and ephemeral-storage: the resources every node and pod has as fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct BaseResources {
    /// cpu, in milli cores.
    pub milli_cpu: i64,
    /// memory, in bytes.
    pub memory: i64,
    /// ephemeral-storage, in bytes.
    pub ephemeral_storage: i64,
}

impl BaseResources {
    fn of(r: &Resource) -> BaseResources {
        BaseResources {
            milli_cpu: r.milli_cpu,
            memory: r.memory,
            ephemeral_storage: r.ephemeral_storage,
        }
    }
}

/// The integers that every node's Filter and Score read, kept together at the start of
/// a [`NodeInfo`] so that the per-node loop finds them in its first two cache lines.
/// They are the numbers [`NodeInfo::allocatable`], [`NodeInfo::requested`],
/// [`NodeInfo::non_zero_requested`] and [`NodeInfo::pods`] give, without the scalar
/// resources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct NodeCounts {
    /// Allocatable.
    pub allocatable: BaseResources,
    /// How many pods the node allows.
    pub allowed_pod_number: i64,
    /// The sum of the pods' requests.
    pub requested: BaseResources,
    /// The sum of the pods' requests with the non-zero cpu/memory defaults, as scoring
    /// reads them (ephemeral-storage as requested).
    pub non_zero_requested: BaseResources,
    /// How many pods are on the node.
    pub pods: i64,
}

/// A node and the pods on it.
// `repr(C)` and cache-line aligned, with the fields every node's Filter and Score read
// first (the counts, index, taints and `unschedulable`: two cache lines): the per-node
// loop streams through thousands of these, and a line it does not touch is a cache
// miss it does not take.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct NodeInfo {
    counts: NodeCounts,
    index: usize,
    taints: Vec<Taint>,
    unschedulable: bool,
    pods: Vec<Arc<PodInfo>>,
    allocatable: Resource,
    requested: Resource,
    node: Arc<Node>,
    pods_with_affinity: Vec<Arc<PodInfo>>,
    pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    used_ports: HostPortInfo,
    image_states: HashMap<String, ImageStateSummary>,
    generation: u64,
    object_generation: u64,
}

impl NodeInfo {
    /// A node with no pods. Image states are filled in by the [`crate::Snapshot`],
    /// which sees every node.
    pub fn new(node: Arc<Node>) -> Result<NodeInfo, NodeInfoError> {
        let allocatable = match node.status.as_ref().and_then(|s| s.allocatable.as_ref()) {
            Some(map) => {
                let list =
                    parse_resource_list(map).map_err(|(resource, source)| NodeInfoError {
                        node: node.metadata.name.clone().unwrap_or_default(),
                        resource,
                        source,
                    })?;
                Resource::from_list(&list)
            }
            None => Resource::default(),
        };
        Ok(NodeInfo {
            counts: NodeCounts {
                allocatable: BaseResources::of(&allocatable),
                allowed_pod_number: allocatable.allowed_pod_number,
                ..Default::default()
            },
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            used_ports: HostPortInfo::default(),
            requested: Resource::default(),
            allocatable,
            image_states: HashMap::new(),
            generation: next_generation(),
            object_generation: next_generation(),
            index: 0,
            unschedulable: node
                .spec
                .as_ref()
                .and_then(|s| s.unschedulable)
                .unwrap_or(false),
            taints: node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default(),
            node,
        })
    }

    /// The node object.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The node object, shared.
    pub fn node_arc(&self) -> &Arc<Node> {
        &self.node
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        self.node.metadata.name.as_deref().unwrap_or("")
    }

    /// The node's labels (empty when none).
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.node
            .metadata
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// One label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.node
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    }

    /// The node's taints.
    pub fn taints(&self) -> &[Taint] {
        &self.taints
    }

    /// `spec.unschedulable`.
    pub fn unschedulable(&self) -> bool {
        self.unschedulable
    }

    /// The node's position in the snapshot's node order.
    pub fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn set_index(&mut self, index: usize) {
        self.index = index;
    }

    /// The pods on the node, bound and assumed.
    pub fn pods(&self) -> &[Arc<PodInfo>] {
        &self.pods
    }

    /// The pods on the node that have pod affinity or anti-affinity.
    pub fn pods_with_affinity(&self) -> &[Arc<PodInfo>] {
        &self.pods_with_affinity
    }

    /// The pods on the node that have required pod anti-affinity.
    pub fn pods_with_required_anti_affinity(&self) -> &[Arc<PodInfo>] {
        &self.pods_with_required_anti_affinity
    }

    /// The host ports in use.
    pub fn used_ports(&self) -> &HostPortInfo {
        &self.used_ports
    }

    /// The sum of the pods' requests.
    pub fn requested(&self) -> &Resource {
        &self.requested
    }

    /// The sum of the pods' requests with the non-zero cpu/memory defaults, as scoring
    /// reads it (ephemeral-storage as requested).
    pub fn non_zero_requested(&self) -> &BaseResources {
        &self.counts.non_zero_requested
    }

    /// The node's allocatable resources.
    pub fn allocatable(&self) -> &Resource {
        &self.allocatable
    }

    /// Allocatable, requested and non-zero requested cpu, memory and ephemeral-storage,
    /// and the pod count and limit: what [`NodeInfo::allocatable`],
    /// [`NodeInfo::requested`] and [`NodeInfo::non_zero_requested`] give, read from
    /// the node's first cache lines. Per-node loops should read these.
    pub fn counts(&self) -> &NodeCounts {
        &self.counts
    }

    /// The image states of the node, by image name as the node reports it.
    pub fn image_states(&self) -> &HashMap<String, ImageStateSummary> {
        &self.image_states
    }

    /// The node's generation: a new one on every change of its pods or image states,
    /// never the same for two different states of any nodes (a copy keeps it while it
    /// is unchanged), so what was computed on a node stays right while its generation
    /// is unchanged.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The generation of what the node is apart from its pods (the Node object and
    /// its image states): a new one on every change of those, none when pods come and
    /// go, so what was computed from the node object alone stays right while it is
    /// unchanged.
    pub fn object_generation(&self) -> u64 {
        self.object_generation
    }

    pub(crate) fn set_image_states(&mut self, states: HashMap<String, ImageStateSummary>) {
        self.image_states = states;
        self.generation = next_generation();
        self.object_generation = next_generation();
    }

    /// Adds a pod: its requests, ports and affinity count from now on.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.update(&pod, 1);
        if pod.has_affinity() {
            self.pods_with_affinity.push(pod.clone());
        }
        if pod.has_required_anti_affinity() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
        self.counts.pods = self.pods.len() as i64;
    }

    /// Removes the pod with this key (`namespace/name`); returns it when it was there.
    pub fn remove_pod(&mut self, key: &str) -> Option<Arc<PodInfo>> {
        // kube-scheduler's NodeInfo.RemovePod moves the last pod into the removed one's
        // place, in each list: the order of the pods, which preemption reads its
        // potential victims in, follows.
        let index = self.pods.iter().position(|p| p.key() == key)?;
        let pod = self.pods.swap_remove(index);
        for list in [
            &mut self.pods_with_affinity,
            &mut self.pods_with_required_anti_affinity,
        ] {
            if let Some(index) = list.iter().position(|p| p.key() == key) {
                list.swap_remove(index);
            }
        }
        self.update(&pod, -1);
        self.counts.pods = self.pods.len() as i64;
        Some(pod)
    }

    fn update(&mut self, pod: &PodInfo, sign: i64) {
        let res = pod.resources();
        if sign > 0 {
            self.requested.add(&res.requests);
            for port in pod.host_ports() {
                self.used_ports.add(port);
            }
        } else {
            self.requested.sub(&res.requests);
            for port in pod.host_ports() {
                self.used_ports.remove(port);
            }
        }
        let non_zero = &mut self.counts.non_zero_requested;
        non_zero.milli_cpu += sign * res.non_zero_milli_cpu;
        non_zero.memory += sign * res.non_zero_memory;
        non_zero.ephemeral_storage = self.requested.ephemeral_storage;
        self.counts.requested = BaseResources::of(&self.requested);
        self.generation = next_generation();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
        serde_json::from_value(value).expect("a valid object")
    }

    fn pod(name: &str, requests: serde_json::Value) -> Arc<PodInfo> {
        let pod = parse(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}
        }));
        Arc::new(PodInfo::new(Arc::new(pod)).expect("pod"))
    }

    /// What `counts()` must say: the full resources' numbers, and the non-zero sums
    /// from the pods on the node.
    fn expected_counts(node: &NodeInfo) -> NodeCounts {
        let non_zero = |each: fn(&PodInfo) -> i64| node.pods().iter().map(|p| each(p)).sum();
        NodeCounts {
            allocatable: BaseResources::of(node.allocatable()),
            allowed_pod_number: node.allocatable().allowed_pod_number,
            requested: BaseResources::of(node.requested()),
            non_zero_requested: BaseResources {
                milli_cpu: non_zero(|p| p.resources().non_zero_milli_cpu),
                memory: non_zero(|p| p.resources().non_zero_memory),
                ephemeral_storage: node.requested().ephemeral_storage,
            },
            pods: node.pods().len() as i64,
        }
    }

    #[test]
    fn counts_follow_pods_added_and_removed() {
        let node = parse(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"allocatable": {
                "cpu": "4", "memory": "32Gi", "ephemeral-storage": "100Gi", "pods": "110"
            }}
        }));
        let mut info = NodeInfo::new(Arc::new(node)).expect("node");
        assert_eq!(info.counts().allocatable.milli_cpu, 4000);
        assert_eq!(info.counts().allowed_pod_number, 110);
        assert_eq!(*info.counts(), expected_counts(&info));
        info.add_pod(pod(
            "a",
            serde_json::json!({"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"}),
        ));
        // No requests: the non-zero sums count 100m and 200Mi for it.
        info.add_pod(pod("b", serde_json::json!({})));
        assert_eq!(info.counts().pods, 2);
        assert_eq!(info.counts().requested.milli_cpu, 500);
        assert_eq!(info.counts().non_zero_requested.milli_cpu, 600);
        assert_eq!(*info.counts(), expected_counts(&info));
        info.remove_pod("default/a").expect("a was there");
        assert_eq!(info.counts().pods, 1);
        assert_eq!(info.counts().requested.ephemeral_storage, 0);
        assert_eq!(*info.counts(), expected_counts(&info));
    }

    fn port(ip: &str, proto: &str, p: i32) -> HostPort {
        HostPort::new(Some(ip), Some(proto), p)
    }

    #[test]
    fn wildcard_ip_conflicts_with_every_ip() {
        let mut used = HostPortInfo::default();
        used.add(&port("127.0.0.1", "TCP", 80));
        assert!(used.conflicts(&port("", "", 80)));
        assert!(used.conflicts(&port("127.0.0.1", "TCP", 80)));
        assert!(!used.conflicts(&port("127.0.0.2", "TCP", 80)));
        assert!(!used.conflicts(&port("127.0.0.1", "UDP", 80)));
        used.add(&port("0.0.0.0", "UDP", 53));
        assert!(used.conflicts(&port("10.0.0.1", "UDP", 53)));
        assert!(!used.conflicts(&port("10.0.0.1", "UDP", 0)));
    }
}
