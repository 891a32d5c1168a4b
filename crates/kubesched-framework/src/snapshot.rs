//! [`Snapshot`]: the cluster as one scheduling cycle sees it: every node's
//! [`NodeInfo`] in node order, looked up by name, updated in place when a pod is
//! assumed or removed (no rebuild).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::node_info::{ImageStateSummary, NodeInfo, NodeInfoError};
use crate::pod_info::PodInfo;
use crate::storage::StorageObjects;

/// Why a snapshot could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Two nodes have the same name.
    #[error("node {0}: metadata.name: duplicate node name")]
    DuplicateNode(String),
    /// A node's allocatable resources do not parse.
    #[error(transparent)]
    NodeInfo(#[from] NodeInfoError),
}

/// The cluster's objects other than nodes and pods that plugins read: workload
/// selectors (PodTopologySpread's system defaults), namespaces (InterPodAffinity's
/// `namespaceSelector`) and PodDisruptionBudgets (preemption).
#[derive(Clone, Debug, Default)]
pub struct ClusterObjects {
    /// Services.
    pub services: Vec<Arc<Service>>,
    /// ReplicationControllers.
    pub replication_controllers: Vec<Arc<ReplicationController>>,
    /// ReplicaSets.
    pub replica_sets: Vec<Arc<ReplicaSet>>,
    /// StatefulSets.
    pub stateful_sets: Vec<Arc<StatefulSet>>,
    /// Namespaces (with their labels).
    pub namespaces: Vec<Arc<Namespace>>,
    /// PodDisruptionBudgets.
    pub pod_disruption_budgets: Vec<Arc<PodDisruptionBudget>>,
    /// Objects of kinds no in-tree plugin reads (scheduler-plugins' PodGroup, ...),
    /// as they were given, for the plugins of other crates to decode.
    pub custom: Vec<Arc<CustomObject>>,
    /// Every pod the scheduler knows, pending or bound (kube-scheduler's pod
    /// informer), where a plugin lists pods that are not on a node yet; empty where
    /// nothing fills it.
    pub pods: Vec<Arc<PodInfo>>,
}

/// An object of a kind the framework does not know (see [`ClusterObjects::custom`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CustomObject {
    /// `group/version` (`scheduling.x-k8s.io/v1alpha1`).
    pub api_version: String,
    /// The kind (`PodGroup`).
    pub kind: String,
    /// The namespace, for a namespaced object (`default` when the document had none).
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
    /// The whole object.
    pub value: serde_json::Value,
}

impl ClusterObjects {
    /// The custom objects of this API group and kind, in the order they were given.
    pub fn custom_of<'a>(
        &'a self,
        group: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Arc<CustomObject>> + 'a {
        self.custom.iter().filter(move |o| {
            o.kind == kind && o.api_version.rsplit_once('/').map_or("", |(g, _)| g) == group
        })
    }
}

/// A point in a snapshot's history of node changes
/// ([`Snapshot::nodes_changed_since`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeMark {
    log: u64,
    len: usize,
}

/// A log of what happened to the snapshot's nodes, in order, so that what was computed
/// per node finds what happened since without comparing every node: which nodes'
/// generations changed ([`Snapshot::nodes_changed_since`]), how positions moved
/// ([`Snapshot::moves_since`]). A clone starts logs of its own (its history diverges
/// from the original's).
#[derive(Debug)]
struct History<T> {
    /// Unique among logs, so that a mark from another log is not read here.
    id: u64,
    items: Vec<T>,
}

impl<T> History<T> {
    fn new() -> History<T> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        History {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            items: Vec::new(),
        }
    }

    /// Records `item`; a log grown far beyond the number of nodes starts again (older
    /// marks then read nothing, and their holders compare generations once).
    fn record(&mut self, item: T, nodes: usize) {
        if self.items.len() >= 4 * nodes + 1024 {
            *self = History::new();
        }
        self.items.push(item);
    }

    fn mark(&self) -> ChangeMark {
        ChangeMark {
            log: self.id,
            len: self.items.len(),
        }
    }

    /// What was recorded since `mark`, when it is a mark of this log still kept.
    fn since(&self, mark: ChangeMark) -> Option<&[T]> {
        (mark.log == self.id)
            .then(|| self.items.get(mark.len..))
            .flatten()
    }
}

/// The log of which nodes' generations changed, with every position in the snapshot's
/// node order of now: when a node is removed, the positions logged before it are
/// numbered again (the removed node's become [`ChangeLog::GONE`]), so that a reader
/// that follows the moves ([`Snapshot::moves_since`]) keeps reading the log across a
/// removal instead of comparing every node again.
#[derive(Clone, Debug, Default)]
struct ChangeLog {
    log: History<usize>,
    /// The log's length just after the last removal: a mark taken before it reads
    /// positions of another order through [`Snapshot::nodes_changed_since`].
    removed_at: usize,
}

impl ChangeLog {
    /// What a removed node's positions read as, in [`ChangeLog::since_in_order`].
    const GONE: usize = usize::MAX;

    fn record(&mut self, node: usize, nodes: usize) {
        let id = self.log.id;
        self.log.record(node, nodes);
        if self.log.id != id {
            self.removed_at = 0;
        }
    }

    /// Numbers the logged positions again for the removal of the node at `removed`.
    fn node_removed(&mut self, removed: usize, nodes: usize) {
        for at in &mut self.log.items {
            if *at == removed {
                *at = Self::GONE;
            } else if *at > removed && *at != Self::GONE {
                *at -= 1;
            }
        }
        self.record(Self::GONE, nodes);
        self.removed_at = self.log.items.len();
    }

    fn mark(&self) -> ChangeMark {
        self.log.mark()
    }

    /// The positions logged since `mark`, `None` when a node was removed since.
    fn since(&self, mark: ChangeMark) -> Option<&[usize]> {
        (mark.len >= self.removed_at)
            .then(|| self.log.since(mark))
            .flatten()
    }

    /// The positions logged since `mark`, in the node order of now; removed nodes'
    /// positions read as [`ChangeLog::GONE`].
    fn since_in_order(&self, mark: ChangeMark) -> Option<&[usize]> {
        self.log.since(mark)
    }
}

impl<T> Default for History<T> {
    fn default() -> Self {
        History::new()
    }
}

impl<T> Clone for History<T> {
    fn clone(&self) -> Self {
        History::new()
    }
}

/// How a node's position moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Move {
    /// A node was added at the end of the node order.
    Appended,
    /// The node at this position was removed; the ones after it moved up one place.
    Removed(usize),
}

/// The nodes of the cluster with their pods.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    nodes: Vec<NodeInfo>,
    /// Each node's generation, in node order (kept beside the nodes so that a pass
    /// over all of them reads one contiguous slice).
    generations: Vec<u64>,
    /// Each node's object generation ([`NodeInfo::object_generation`]), in node order.
    object_generations: Vec<u64>,
    /// Which nodes' generations changed, in order.
    changes: ChangeLog,
    /// How positions moved (nodes added and removed), in order.
    moves: History<Move>,
    /// How many pods on the nodes have pod affinity or anti-affinity terms.
    affinity_pods: usize,
    index: HashMap<String, usize>,
    /// Image name → (summary, the nodes that report it, in node order).
    images: HashMap<String, (ImageStateSummary, Arc<[usize]>)>,
    objects: Arc<ClusterObjects>,
    /// `None` when the caller does not track storage objects (the volume plugins then
    /// refuse pods that need them rather than pass them silently).
    storage: Option<Arc<StorageObjects>>,
}

impl Snapshot {
    /// Builds a snapshot from nodes (their order is the node order) and the pods bound
    /// to them. Pods whose `spec.nodeName` names no node use no node; they are returned
    /// so the caller can say so.
    pub fn new(
        nodes: impl IntoIterator<Item = Arc<Node>>,
        pods: impl IntoIterator<Item = Arc<PodInfo>>,
    ) -> Result<(Snapshot, Vec<Arc<PodInfo>>), SnapshotError> {
        let mut snapshot = Snapshot::default();
        for node in nodes {
            let mut info = NodeInfo::new(node)?;
            info.set_index(snapshot.nodes.len());
            let name = info.name().to_string();
            if snapshot.index.contains_key(&name) {
                return Err(SnapshotError::DuplicateNode(name));
            }
            snapshot.index.insert(name, snapshot.nodes.len());
            snapshot.nodes.push(info);
        }
        snapshot.refresh_image_states();
        let mut orphans = Vec::new();
        for pod in pods {
            match pod.node_name().and_then(|n| snapshot.index.get(n).copied()) {
                Some(i) => snapshot.nodes[i].add_pod(pod),
                None => orphans.push(pod),
            }
        }
        snapshot.generations = snapshot.nodes.iter().map(NodeInfo::generation).collect();
        snapshot.object_generations = snapshot
            .nodes
            .iter()
            .map(NodeInfo::object_generation)
            .collect();
        snapshot.affinity_pods = snapshot
            .nodes
            .iter()
            .map(|n| n.pods_with_affinity().len())
            .sum();
        Ok((snapshot, orphans))
    }

    /// Recomputes every node's image states: an image name's size is the size reported
    /// by the first node (in node order) that has it, and its node count is the number
    /// of nodes that report it, as kube-scheduler's cache keeps them.
    fn refresh_image_states(&mut self) {
        let mut global: HashMap<&str, ImageStateSummary> = HashMap::new();
        for info in &self.nodes {
            let mut seen_here = std::collections::HashSet::new();
            for image in info
                .node()
                .status
                .iter()
                .flat_map(|s| s.images.iter().flatten())
            {
                for name in image.names.iter().flatten() {
                    if !seen_here.insert(name.as_str()) {
                        continue;
                    }
                    global
                        .entry(name.as_str())
                        .and_modify(|s| s.num_nodes += 1)
                        .or_insert(ImageStateSummary {
                            size: image.size_bytes.unwrap_or(0),
                            num_nodes: 1,
                        });
                }
            }
        }
        let per_node: Vec<HashMap<String, ImageStateSummary>> = self
            .nodes
            .iter()
            .map(|info| {
                info.node()
                    .status
                    .iter()
                    .flat_map(|s| s.images.iter().flatten())
                    .flat_map(|image| image.names.iter().flatten())
                    .map(|name| (name.clone(), global[name.as_str()]))
                    .collect()
            })
            .collect();
        let mut images: HashMap<String, (ImageStateSummary, Vec<usize>)> = HashMap::new();
        for (i, states) in per_node.iter().enumerate() {
            for (name, summary) in states {
                images
                    .entry(name.clone())
                    .or_insert_with(|| (*summary, Vec::new()))
                    .1
                    .push(i);
            }
        }
        for (info, states) in self.nodes.iter_mut().zip(per_node) {
            info.set_image_states(states);
        }
        self.images = images
            .into_iter()
            .map(|(name, (summary, holders))| (name, (summary, holders.into())))
            .collect();
    }

    /// The cluster's other objects.
    pub fn objects(&self) -> &ClusterObjects {
        &self.objects
    }

    /// Replaces the cluster's other objects.
    pub fn set_objects(&mut self, objects: Arc<ClusterObjects>) {
        self.objects = objects;
    }

    /// The cluster's storage objects, when the caller tracks them.
    pub fn storage(&self) -> Option<&Arc<StorageObjects>> {
        self.storage.as_ref()
    }

    /// Sets (or, with `None`, forgets) the cluster's storage objects.
    pub fn set_storage(&mut self, storage: Option<Arc<StorageObjects>>) {
        self.storage = storage;
    }

    /// An image name's summary (size, node count) and the positions of the nodes that
    /// report it, in node order (shared, so that a plugin may keep them for a cycle).
    pub fn image(&self, name: &str) -> Option<(ImageStateSummary, &Arc<[usize]>)> {
        self.images.get(name).map(|(s, nodes)| (*s, nodes))
    }

    /// The number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Every node, in node order.
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// A node by name.
    pub fn get(&self, name: &str) -> Option<&NodeInfo> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    /// A node's position in node order.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The node at a position in node order.
    pub fn node_at(&self, index: usize) -> &NodeInfo {
        &self.nodes[index]
    }

    /// Adds a pod to the node it is bound to; returns `false` when that node is not in
    /// the snapshot.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) -> bool {
        match pod.node_name().and_then(|n| self.index.get(n).copied()) {
            Some(i) => {
                self.affinity_pods += usize::from(pod.has_affinity());
                self.nodes[i].add_pod(pod);
                self.generations[i] = self.nodes[i].generation();
                self.changes.record(i, self.nodes.len());
                true
            }
            None => false,
        }
    }

    /// Each node's generation ([`NodeInfo::generation`]), in node order.
    pub fn generations(&self) -> &[u64] {
        &self.generations
    }

    /// Each node's object generation ([`NodeInfo::object_generation`]), in node order.
    pub fn object_generations(&self) -> &[u64] {
        &self.object_generations
    }

    /// The point in this snapshot's history that [`Snapshot::nodes_changed_since`]
    /// reads from.
    pub fn change_mark(&self) -> ChangeMark {
        self.changes.mark()
    }

    /// The positions of the nodes whose generation changed since `mark` was taken
    /// from this snapshot (a node may come more than once), or `None` when the
    /// snapshot cannot say: the mark is from another snapshot (a clone included) or
    /// from history it no longer keeps, or a node was removed since (positions
    /// moved). Then compare every node's generation.
    pub fn nodes_changed_since(&self, mark: ChangeMark) -> Option<&[usize]> {
        self.changes.since(mark)
    }

    /// The positions of the nodes whose generation changed since `mark`, as
    /// [`Snapshot::nodes_changed_since`] but across removals too: every position is
    /// one of the node order of now (the log is numbered again at each removal), and
    /// a removed node's reads as [`Snapshot::GONE`]. For readers that follow the moves
    /// ([`Snapshot::moves_since`]) before they read it.
    pub(crate) fn nodes_changed_in_order_since(&self, mark: ChangeMark) -> Option<&[usize]> {
        self.changes.since_in_order(mark)
    }

    /// A removed node's position in [`Snapshot::nodes_changed_in_order_since`].
    pub(crate) const GONE: usize = ChangeLog::GONE;

    /// The point in this snapshot's history of moves that [`Snapshot::moves_since`]
    /// reads from.
    pub(crate) fn moves_mark(&self) -> ChangeMark {
        self.moves.mark()
    }

    /// How node positions moved since `mark` was taken from this snapshot, in order;
    /// `None` when the snapshot cannot say (the mark is from another snapshot or from
    /// history it no longer keeps).
    pub(crate) fn moves_since(&self, mark: ChangeMark) -> Option<&[Move]> {
        self.moves.since(mark)
    }

    /// Adds a node at the end of the node order, without pods (kube-scheduler's cache
    /// on a node added): what was computed for the other nodes stays right.
    pub fn add_node(&mut self, node: Arc<Node>) -> Result<(), SnapshotError> {
        let mut info = NodeInfo::new(node)?;
        let name = info.name().to_string();
        if self.index.contains_key(&name) {
            return Err(SnapshotError::DuplicateNode(name));
        }
        let i = self.nodes.len();
        info.set_index(i);
        let has_images = has_images(info.node());
        self.index.insert(name, i);
        self.generations.push(info.generation());
        self.object_generations.push(info.object_generation());
        self.nodes.push(info);
        self.changes.record(i, self.nodes.len());
        self.moves.record(Move::Appended, self.nodes.len());
        if has_images {
            self.images_changed();
        }
        Ok(())
    }

    /// Replaces a node's object (its labels, taints, allocatable, conditions, ...),
    /// keeping its place in the node order and its pods; returns `false` when there is
    /// no node of that name. Only that node's generations change, so what was computed
    /// for the others stays right.
    pub fn update_node(&mut self, node: Arc<Node>) -> Result<bool, SnapshotError> {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let Some(&i) = self.index.get(name) else {
            return Ok(false);
        };
        let mut info = NodeInfo::new(node)?;
        info.set_index(i);
        for pod in self.nodes[i].pods() {
            info.add_pod(pod.clone());
        }
        let images = has_images(info.node()) || has_images(self.nodes[i].node());
        self.generations[i] = info.generation();
        self.object_generations[i] = info.object_generation();
        self.nodes[i] = info;
        self.changes.record(i, self.nodes.len());
        if images {
            self.images_changed();
        }
        Ok(true)
    }

    /// Removes a node with its pods (kube-scheduler's cache on a node deleted); the
    /// nodes after it move up one place, keeping their order. Returns the node as it
    /// was, or `None` when there is no node of that name.
    ///
    /// The moved nodes keep their generations, and a generation is never given twice,
    /// so what was computed per position is found stale where a different node now
    /// stands, unless it follows the move (the snapshot logs it). Marks taken before
    /// read nothing from [`Snapshot::nodes_changed_since`] (its positions moved).
    pub fn remove_node(&mut self, name: &str) -> Option<NodeInfo> {
        let i = self.index.remove(name)?;
        let removed = self.nodes.remove(i);
        self.generations.remove(i);
        self.object_generations.remove(i);
        for (j, info) in self.nodes.iter_mut().enumerate().skip(i) {
            info.set_index(j);
        }
        // Every position after `i` moves up one: no name needs hashing to find it.
        for at in self.index.values_mut().filter(|at| **at > i) {
            *at -= 1;
        }
        self.affinity_pods -= removed.pods().iter().filter(|p| p.has_affinity()).count();
        self.changes.node_removed(i, self.nodes.len());
        self.moves.record(Move::Removed(i), self.nodes.len());
        // The image holders are positions: every image with a holder after `i` moved.
        if has_images(removed.node()) || !self.images.is_empty() {
            self.images_changed();
        }
        Some(removed)
    }

    /// The image states of every node computed again (an image's node count spans the
    /// cluster), which gives every node a new generation: the change log starts again,
    /// so that its readers compare every generation once.
    fn images_changed(&mut self) {
        self.refresh_image_states();
        self.generations = self.nodes.iter().map(NodeInfo::generation).collect();
        self.object_generations = self.nodes.iter().map(NodeInfo::object_generation).collect();
        self.changes = ChangeLog::default();
    }

    /// Removes a pod (by `namespace/name`) from a node.
    pub fn remove_pod(&mut self, node: &str, key: &str) -> Option<Arc<PodInfo>> {
        let i = *self.index.get(node)?;
        let removed = self.nodes[i].remove_pod(key);
        self.generations[i] = self.nodes[i].generation();
        self.changes.record(i, self.nodes.len());
        if removed.as_ref().is_some_and(|p| p.has_affinity()) {
            self.affinity_pods -= 1;
        }
        removed
    }

    /// Whether any pod on the nodes has pod affinity or anti-affinity terms (in
    /// constant time).
    pub fn has_affinity_pods(&self) -> bool {
        self.affinity_pods > 0
    }

    /// The nodes that have pods with pod affinity or anti-affinity.
    pub fn nodes_with_affinity_pods(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes_if_affinity_pods()
            .iter()
            .filter(|n| !n.pods_with_affinity().is_empty())
    }

    /// The nodes that have pods with required pod anti-affinity.
    pub fn nodes_with_required_anti_affinity_pods(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes_if_affinity_pods()
            .iter()
            .filter(|n| !n.pods_with_required_anti_affinity().is_empty())
    }

    /// Every node when some pod has pod affinity or anti-affinity terms, else none: a
    /// cycle then looks at no node for them (a look at every node of a large cluster
    /// costs a cache miss each).
    fn nodes_if_affinity_pods(&self) -> &[NodeInfo] {
        if self.has_affinity_pods() {
            &self.nodes
        } else {
            &[]
        }
    }
}

/// Whether a node reports any image (then every node's image states are computed again).
fn has_images(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.images.as_ref())
        .is_some_and(|i| !i.is_empty())
}
