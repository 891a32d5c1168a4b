//! GPU sharing inside a node: each GPU has its own free milli (1000 when idle), a pod
//! takes `gpu-count` whole GPUs or one GPU's `gpu-milli` share, and the `GpuShare`
//! plugin (PreFilter, Filter, Reserve) keeps that per-GPU state in step with the
//! cluster, as the `Open-Gpu-Share` plugin of the paper's simulator does.
//!
//! The state ([`GpuState`]) is shared by every plugin of this crate built from one
//! [`registry`](crate::registry): the policies read it to score, `GpuShare` writes it
//! at Reserve and Unreserve. At PreFilter, `GpuShare` brings it up to date with the
//! snapshot: a node it has not seen is added with idle GPUs, and on a node whose pods
//! changed since (a deletion in a replay, a pod bound by the trace) the pods that left
//! give back their GPUs and the pods it does not know take theirs (best fit).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use kubesched::framework::signature::SignFragment;
use kubesched::framework::{
    ChangeMark, Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, ReservePlugin, Snapshot, Status, extension_points,
};
use kubesched::replay::import::{GPU_COUNT, GPU_MILLI, GPU_MODEL};

use crate::frag::TypicalPods;
use crate::rng::SplitMix64;

/// Thousandths of one GPU: an idle GPU has this much free.
pub const MILLI: u32 = 1000;
/// The most GPUs a node may have in this model (the trace's nodes have at most 8).
pub const MAX_GPUS: usize = 16;

/// What a pod asks of GPUs: `count` GPUs with `milli` each (a share when `count` is 1
/// and `milli` below [`MILLI`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GpuDemand {
    /// How many GPUs.
    pub count: u32,
    /// Thousandths of each.
    pub milli: u32,
}

impl GpuDemand {
    /// The pod's demand, from its annotations (`alibabacloud.com/gpu-count` and
    /// `alibabacloud.com/gpu-milli`, as the openb importer writes them); none when it
    /// has no GPU count or no milli.
    pub fn of(pod: &PodInfo) -> GpuDemand {
        let read = |key| {
            pod.annotation(key)
                .and_then(|v| v.trim().parse::<u32>().ok())
                .unwrap_or(0)
        };
        let (count, milli) = (read(GPU_COUNT), read(GPU_MILLI).min(MILLI));
        if count == 0 || milli == 0 {
            GpuDemand::default()
        } else {
            GpuDemand { count, milli }
        }
    }

    /// Whether the pod asks for no GPU.
    pub fn is_none(&self) -> bool {
        self.count == 0
    }

    /// Whether the pod asks for a share of one GPU.
    pub fn is_share(&self) -> bool {
        self.count == 1 && self.milli < MILLI
    }

    /// All the milli it asks for.
    pub fn total(&self) -> u32 {
        self.count * self.milli
    }
}

/// Whether a node of GPU model `node_model` may host a pod allowed `pod_models`
/// (`A|B`; none or empty allows any model, and a node without GPUs allows none that
/// names one), the simulator's `IsNodeAccessibleToPodByType`.
pub fn model_allows(pod_models: Option<&str>, node_model: Option<&str>) -> bool {
    let Some(models) = pod_models.filter(|m| !m.is_empty()) else {
        return true;
    };
    let Some(node_model) = node_model.filter(|m| !m.is_empty()) else {
        return false;
    };
    let mut named = false;
    for m in models.split('|').filter(|m| !m.is_empty()) {
        named = true;
        if m == node_model {
            return true;
        }
    }
    !named
}

/// The pod's allowed GPU models (`alibabacloud.com/gpu-card-model`).
pub fn pod_models(pod: &PodInfo) -> Option<&str> {
    pod.annotation(GPU_MODEL)
}

/// The pod's cpu in milli as the simulator counts it (a pod asking none counts
/// kube-scheduler's non-zero default, 100m).
pub fn pod_cpu(pod: &PodInfo) -> i64 {
    match pod.requests().milli_cpu {
        0 => 100,
        c => c,
    }
}

/// One node's GPUs: the free milli of each, the model, and which pod holds what.
#[derive(Clone, Debug)]
pub struct NodeGpus {
    /// The node's name.
    pub name: String,
    /// Its GPU model, if it has GPUs and a model label.
    pub model: Option<String>,
    /// Free milli per GPU, in GPU index order.
    pub left: Vec<u32>,
    /// The node's free cpu (allocatable minus requested) when it was last brought up to
    /// date (at PreFilter, before this cycle's pod).
    pub cpu_left: i64,
    /// The node's allocatable cpu.
    pub cpu_capacity: i64,
    generation: u64,
    /// (pod key, GPU indices, milli per GPU) of the pods holding GPUs here.
    holders: Vec<(String, Vec<usize>, u32)>,
}

impl NodeGpus {
    /// The node's GPUs, all idle: as many as its `alibabacloud.com/gpu-count`
    /// annotation says (or its `alibabacloud.com/gpu-milli` allocatable / 1000), at
    /// most [`MAX_GPUS`].
    pub fn idle(node: &NodeInfo) -> NodeGpus {
        let annotated = node
            .node()
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(GPU_COUNT))
            .and_then(|v| v.trim().parse::<usize>().ok());
        let count = annotated
            .or_else(|| {
                node.allocatable()
                    .scalar_resources
                    .get(GPU_MILLI)
                    .map(|m| (*m / i64::from(MILLI)) as usize)
            })
            .unwrap_or(0)
            .min(MAX_GPUS);
        NodeGpus {
            name: node.name().to_string(),
            model: node.label(GPU_MODEL).map(str::to_string),
            left: vec![MILLI; count],
            cpu_left: node.allocatable().milli_cpu - node.requested().milli_cpu,
            cpu_capacity: node.allocatable().milli_cpu,
            generation: u64::MAX,
            holders: Vec::new(),
        }
    }

    /// All free milli.
    pub fn total_left(&self) -> u32 {
        self.left.iter().sum()
    }

    /// All milli held by pods.
    pub fn allocated(&self) -> u32 {
        self.left.len() as u32 * MILLI - self.total_left()
    }

    /// How many GPUs are idle.
    pub fn fully_free(&self) -> usize {
        self.left.iter().filter(|l| **l == MILLI).count()
    }

    /// Whether `demand` fits: `count` GPUs with `milli` free each.
    pub fn fits(&self, demand: GpuDemand) -> bool {
        demand.is_none()
            || self.left.iter().filter(|l| **l >= demand.milli).count() >= demand.count as usize
    }

    /// The GPUs of the pods this node's state knows, by pod key.
    pub fn holders(&self) -> impl Iterator<Item = (&str, &[usize], u32)> {
        self.holders
            .iter()
            .map(|(k, g, m)| (k.as_str(), g.as_slice(), *m))
    }

    fn take(&mut self, key: &str, gpus: Vec<usize>, milli: u32) {
        for g in &gpus {
            self.left[*g] -= milli;
        }
        self.holders.push((key.to_string(), gpus, milli));
    }

    fn give_back(&mut self, key: &str) -> bool {
        let Some(i) = self.holders.iter().position(|(k, _, _)| k == key) else {
            return false;
        };
        let (_, gpus, milli) = self.holders.swap_remove(i);
        for g in gpus {
            self.left[g] += milli;
        }
        true
    }

    /// Brings the node's GPUs up to date with `info`, the same node in the snapshot,
    /// when its pods changed since: the pods that left give back their GPUs, and the
    /// pods it does not know take theirs (best fit).
    fn follow(&mut self, info: &NodeInfo) {
        if self.generation == info.generation() {
            return;
        }
        let pods = info.pods();
        let gone: Vec<String> = self
            .holders
            .iter()
            .filter(|(k, _, _)| !pods.iter().any(|p| p.key() == k))
            .map(|(k, _, _)| k.clone())
            .collect();
        for k in gone {
            self.give_back(&k);
        }
        for pod in pods {
            let demand = GpuDemand::of(pod);
            if demand.is_none() || self.holders.iter().any(|(k, _, _)| k == pod.key()) {
                continue;
            }
            let gpus = if demand.is_share() {
                best_fit_gpu(&self.left, demand.milli).map(|g| vec![g])
            } else {
                first_idle_gpus(&self.left, demand.count)
            };
            if let Some(gpus) = gpus {
                self.take(pod.key(), gpus, demand.milli);
            }
        }
        self.cpu_left = info.allocatable().milli_cpu - info.requested().milli_cpu;
        self.cpu_capacity = info.allocatable().milli_cpu;
        self.generation = info.generation();
    }
}

/// The fitting GPU with the least free milli (the first such in index order): the
/// simulator's best-fit choice for a share.
pub fn best_fit_gpu(left: &[u32], milli: u32) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, l) in left.iter().enumerate() {
        if *l >= milli && best.is_none_or(|b| *l < left[b]) {
            best = Some(i);
        }
    }
    best
}

/// The first `count` idle GPUs in index order (whole-GPU pods), if there are as many.
pub fn first_idle_gpus(left: &[u32], count: u32) -> Option<Vec<usize>> {
    let idle: Vec<usize> = left
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == MILLI)
        .map(|(i, _)| i)
        .take(count as usize)
        .collect();
    (idle.len() == count as usize).then_some(idle)
}

/// Which GPU a share goes to (the simulator's `-gpusel`; whole GPUs always go to the
/// first idle ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuSelection {
    /// The fitting GPU with the least left (`best`, the default).
    BestFit,
    /// A fitting GPU at random (`random`, Random's).
    Random,
    /// The GPU whose share lowers the node's fragmentation most (FGD's own choice);
    /// needs the `FGDScore` plugin's typical pods.
    Fgd,
}

/// The GPU state of a cluster, shared by the plugins of one registry.
#[derive(Debug, Default)]
pub struct GpuState {
    nodes: RwLock<Vec<NodeGpus>>,
    /// Node name to index in `nodes` (Reserve is given a name).
    index: RwLock<HashMap<String, usize>>,
    /// Where the snapshot's history of node changes stood at the last
    /// [`GpuState::sync`], so that the next one visits only the nodes changed since.
    synced: Mutex<Option<ChangeMark>>,
    typical: RwLock<Option<Arc<TypicalPods>>>,
}

impl GpuState {
    /// An empty state: nodes are added as `GpuShare`'s PreFilter first sees them.
    pub fn new() -> GpuState {
        GpuState::default()
    }

    /// Reads the nodes' GPUs, indexed as the snapshot's nodes.
    pub fn read<R>(&self, f: impl FnOnce(&[NodeGpus]) -> R) -> R {
        f(&self.nodes.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The typical pods FGD measures fragmentation against, once `FGDScore` is built.
    pub fn typical_pods(&self) -> Option<Arc<TypicalPods>> {
        self.typical
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets the typical pods (the `FGDScore` factory does).
    pub fn set_typical_pods(&self, typical: Arc<TypicalPods>) {
        *self.typical.write().unwrap_or_else(|e| e.into_inner()) = Some(typical);
    }

    fn index_of(&self, node: &str) -> Option<usize> {
        self.index
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(node)
            .copied()
    }

    /// Brings the state up to date with `snapshot` (see the module doc): the nodes
    /// changed since the last call, from the snapshot's log of changes when it has
    /// them (pods placed and removed, node objects replaced), else every node.
    pub fn sync(&self, snapshot: &Snapshot) {
        let mut synced = self.synced.lock().unwrap_or_else(|e| e.into_inner());
        let mut nodes = self.nodes.write().unwrap_or_else(|e| e.into_inner());
        // A node added or removed changes the count, or starts the log afresh.
        let changed = synced
            .and_then(|mark| snapshot.nodes_changed_since(mark))
            .filter(|_| nodes.len() == snapshot.num_nodes());
        match changed {
            Some(changed) => {
                for &i in changed {
                    nodes[i].follow(snapshot.node_at(i));
                }
            }
            None => self.sync_all(&mut nodes, snapshot),
        }
        *synced = Some(snapshot.change_mark());
    }

    /// Brings every node up to date, taking the snapshot's nodes in its order (a node
    /// new to the state with idle GPUs).
    fn sync_all(&self, nodes: &mut Vec<NodeGpus>, snapshot: &Snapshot) {
        let same_nodes = nodes.len() == snapshot.num_nodes()
            && nodes
                .iter()
                .enumerate()
                .all(|(i, n)| n.name == snapshot.node_at(i).name());
        if !same_nodes {
            let mut old: Vec<NodeGpus> = std::mem::take(nodes);
            *nodes = snapshot
                .nodes()
                .iter()
                .map(
                    |info| match old.iter().position(|n| n.name == info.name()) {
                        Some(i) => old.swap_remove(i),
                        None => NodeGpus::idle(info),
                    },
                )
                .collect();
            *self.index.write().unwrap_or_else(|e| e.into_inner()) = nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.clone(), i))
                .collect();
        }
        for (i, state) in nodes.iter_mut().enumerate() {
            state.follow(snapshot.node_at(i));
        }
    }

    /// Takes the GPUs `selection` picks on `node` for `pod`; `false` if they do not fit.
    fn reserve(
        &self,
        pod: &PodInfo,
        node: &str,
        selection: GpuSelection,
        rng: &Mutex<SplitMix64>,
    ) -> bool {
        let demand = GpuDemand::of(pod);
        if demand.is_none() {
            return true;
        }
        let typical = match selection {
            GpuSelection::Fgd => self.typical_pods(),
            _ => None,
        };
        let Some(i) = self.index_of(node) else {
            return false;
        };
        let mut nodes = self.nodes.write().unwrap_or_else(|e| e.into_inner());
        let Some(state) = nodes.get_mut(i) else {
            return false;
        };
        if state.holders.iter().any(|(k, _, _)| k == pod.key()) {
            return true;
        }
        let gpus = if demand.is_share() {
            let pick = match (selection, &typical) {
                (GpuSelection::BestFit, _) | (GpuSelection::Fgd, None) => {
                    best_fit_gpu(&state.left, demand.milli)
                }
                (GpuSelection::Random, _) => {
                    // Reservoir sampling over the fitting GPUs, as the simulator's
                    // random fit.
                    let mut rng = rng.lock().unwrap_or_else(|e| e.into_inner());
                    let mut seen = 0;
                    let mut pick = None;
                    for (i, l) in state.left.iter().enumerate() {
                        if *l >= demand.milli {
                            seen += 1;
                            if rng.below(seen) == 0 {
                                pick = Some(i);
                            }
                        }
                    }
                    pick
                }
                (GpuSelection::Fgd, Some(typical)) => crate::policies::fgd_share_choice(
                    typical,
                    state.cpu_left,
                    &state.left,
                    state.model.as_deref(),
                    pod_cpu(pod),
                    demand.milli,
                )
                .map(|(_, gpu)| gpu),
            };
            pick.map(|g| vec![g])
        } else {
            first_idle_gpus(&state.left, demand.count)
        };
        match gpus {
            Some(gpus) => {
                state.take(pod.key(), gpus, demand.milli);
                true
            }
            None => false,
        }
    }

    fn unreserve(&self, pod: &PodInfo, node: &str) {
        let Some(i) = self.index_of(node) else {
            return;
        };
        let mut nodes = self.nodes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(state) = nodes.get_mut(i) {
            state.give_back(pod.key());
        }
    }
}

/// The fragments of a pod that this crate's plugins read: its GPU demand and models,
/// and its cpu.
pub fn gpu_fragments(pod: &PodInfo) -> Vec<SignFragment> {
    let d = GpuDemand::of(pod);
    vec![SignFragment::json(
        "gpu-sharing.gpu",
        &(d.count, d.milli, pod_models(pod), pod_cpu(pod)),
    )]
}

/// The GPU-sharing Filter, PreFilter and Reserve plugin (the simulator's
/// `Open-Gpu-Share`): a node passes when it has the pod's GPU model and `count` GPUs
/// with `milli` free each; Reserve takes them (see [`GpuSelection`]).
pub struct GpuShare {
    state: Arc<GpuState>,
    selection: GpuSelection,
    rng: Mutex<SplitMix64>,
}

/// `GpuShare`'s name in a configuration.
pub const GPU_SHARE: &str = "GpuShare";

impl GpuShare {
    /// The plugin over `state`.
    pub fn new(state: Arc<GpuState>, selection: GpuSelection, seed: u64) -> GpuShare {
        GpuShare {
            state,
            selection,
            rng: Mutex::new(SplitMix64::new(seed)),
        }
    }
}

impl Plugin for GpuShare {
    fn name(&self) -> &str {
        GPU_SHARE
    }
    extension_points!(PreFilter, Filter, Reserve);

    fn sign_pod(&self, pod: &PodInfo) -> Result<Vec<SignFragment>, Status> {
        Ok(gpu_fragments(pod))
    }

    // Its verdict on a node reads that node's GPUs, which change only with the pods
    // placed on or removed from it.
    fn node_scoped(&self, _: &PodInfo, _: &Snapshot) -> bool {
        true
    }
}

impl PreFilterPlugin for GpuShare {
    fn pre_filter(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        self.state.sync(snapshot);
        (None, Status::success())
    }
}

impl GpuShare {
    fn verdict(nodes: &[NodeGpus], pod: &PodInfo, demand: GpuDemand, node: &NodeInfo) -> Status {
        let Some(state) = nodes.get(node.index()).filter(|s| s.name == node.name()) else {
            return Status::error(format!(
                "GpuShare: node {} is not in the GPU state (enable GpuShare at PreFilter)",
                node.name()
            ));
        };
        if state.left.is_empty() {
            return Status::new(Code::UnschedulableAndUnresolvable, "node(s) had no GPU");
        }
        if !model_allows(pod_models(pod), state.model.as_deref()) {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                "node(s) had no GPU of the pod's model",
            );
        }
        if !state.fits(demand) {
            return Status::new(Code::Unschedulable, "node(s) had not enough free GPU");
        }
        Status::success()
    }
}

impl FilterPlugin for GpuShare {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let demand = GpuDemand::of(pod);
        if demand.is_none() {
            return Status::success();
        }
        self.state
            .read(|nodes| GpuShare::verdict(nodes, pod, demand, node))
    }

    fn filter_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let demand = GpuDemand::of(pod);
        if demand.is_none() {
            return;
        }
        self.state.read(|gpus| {
            for (i, node) in nodes.iter().enumerate() {
                if let Some(status) = GpuShare::verdict(gpus, pod, demand, node).into_failure() {
                    rejected.push((i, status));
                }
            }
        });
    }
}

impl ReservePlugin for GpuShare {
    fn reserve(&self, _: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        if self.state.reserve(pod, node, self.selection, &self.rng) {
            Status::success()
        } else {
            Status::error(format!(
                "GpuShare: the pod's GPUs do not fit on node {node}"
            ))
        }
    }

    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, node: &str) {
        self.state.unreserve(pod, node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesched::framework::build::{NodeBuilder, PodBuilder};

    fn gpu_node(name: &str, gpus: u32) -> Arc<kubesched::framework::NodeInfo> {
        let mut node = (*NodeBuilder::new(name).cpu_millis(64_000).node()).clone();
        node.metadata.annotations = Some([(GPU_COUNT.to_string(), gpus.to_string())].into());
        node.metadata.labels = Some([(GPU_MODEL.to_string(), "V100M32".to_string())].into());
        Arc::new(NodeInfo::new(Arc::new(node)).unwrap())
    }

    fn gpu_pod(name: &str, count: u32, milli: u32, node: Option<&str>) -> Arc<PodInfo> {
        let mut b = PodBuilder::new("default", name).cpu_millis(1000);
        if let Some(n) = node {
            b = b.bound_to(n);
        }
        let mut pod = (*b.pod()).clone();
        pod.metadata.annotations = Some(
            [
                (GPU_COUNT.to_string(), count.to_string()),
                (GPU_MILLI.to_string(), milli.to_string()),
            ]
            .into(),
        );
        Arc::new(PodInfo::new(Arc::new(pod)).unwrap())
    }

    fn left(state: &GpuState) -> Vec<u32> {
        state.read(|n| n[0].left.clone())
    }

    #[test]
    fn a_share_goes_to_the_best_fit_gpu_and_unreserve_gives_it_back() {
        let node = gpu_node("n1", 2);
        let (mut snapshot, _) = Snapshot::new([node.node_arc().clone()], []).unwrap();
        let state = Arc::new(GpuState::new());
        let plugin = GpuShare::new(state.clone(), GpuSelection::BestFit, 0);
        let mut cycle = CycleState::new();
        let first = gpu_pod("a", 1, 600, Some("n1"));
        plugin.pre_filter(&mut cycle, &first, &snapshot);
        assert!(plugin.reserve(&mut cycle, &first, "n1").is_success());
        assert_eq!(left(&state), [400, 1000]);
        // 300 fits both GPUs; the one with 400 left is the best fit.
        let second = gpu_pod("b", 1, 300, None);
        assert!(plugin.reserve(&mut cycle, &second, "n1").is_success());
        assert_eq!(left(&state), [100, 1000]);
        // Two whole GPUs no longer fit; one does.
        let whole = gpu_pod("c", 2, 1000, None);
        assert!(
            !plugin
                .filter(&cycle, &whole, snapshot.node_at(0))
                .is_success()
        );
        plugin.unreserve(&mut cycle, &second, "n1");
        plugin.unreserve(&mut cycle, &second, "n1");
        assert_eq!(left(&state), [400, 1000]);
        // A pod the trace bound, and then a deletion, reach the state at PreFilter.
        snapshot.add_pod(gpu_pod("d", 1, 1000, Some("n1")));
        snapshot.add_pod(first.clone());
        plugin.pre_filter(&mut cycle, &whole, &snapshot);
        assert_eq!(left(&state), [400, 0]);
        snapshot.remove_pod("n1", "default/d");
        plugin.pre_filter(&mut cycle, &whole, &snapshot);
        assert_eq!(left(&state), [400, 1000]);
    }

    #[test]
    fn a_node_without_the_pods_model_or_gpus_is_rejected() {
        assert!(model_allows(None, None));
        assert!(model_allows(Some("A|B"), Some("B")));
        assert!(!model_allows(Some("A|B"), Some("C")));
        assert!(!model_allows(Some("A"), None));
        assert!(model_allows(Some("|"), Some("C")));
    }
}
