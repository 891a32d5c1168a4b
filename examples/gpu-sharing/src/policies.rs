//! The six policies of the FGD paper as Score plugins, each scoring 0..100 in integers
//! as the paper's simulator does (its Go arithmetic: truncation toward zero, integer
//! division where it divides integers), reading the GPU state of [`crate::model`]:
//!
//! | plugin | the node it prefers |
//! | --- | --- |
//! | `FGDScore` | the one whose fragmentation the pod lowers most (or raises least): `⌊100·sigmoid((frag before − frag after)/1000)⌋`, for a share the best GPU's |
//! | `BestFitScore` | the least free cpu and GPU left after the pod, each over the largest node's (128 cores, 8 GPUs), weighted ½ each; normalised min–max over the feasible nodes |
//! | `DotProductScore` | the smallest dot product of the free (cpu, GPU) and the pod's demand, each over the largest node's |
//! | `GpuPackingScore` | partly used GPUs first, then nodes with partly used GPUs, then idle nodes |
//! | `GpuClusteringScore` | nodes already running pods of the same GPU shape, then the fullest |
//! | `RandomScore` | one feasible node drawn at NormalizeScore (seeded): 100 there, 0 elsewhere |

use std::sync::{Arc, Mutex};

use kubesched::framework::signature::SignFragment;
use kubesched::framework::{
    CycleState, NodeInfo, NodeScore, Normalization, Plugin, PodInfo, ScoreExtensions, ScorePlugin,
    Snapshot, Status, extension_points, min_max_score,
};

use crate::frag::TypicalPods;
use crate::model::{GpuDemand, GpuState, MAX_GPUS, MILLI, NodeGpus, gpu_fragments, pod_cpu};
use crate::rng::SplitMix64;

/// kube-scheduler's highest node score.
const MAX: i64 = 100;
/// The largest node's cpu and GPU milli, the simulator's `MaxSpecCpu` and `MaxSpecGpu`.
const MAX_SPEC_CPU: f64 = 128_000.0;
const MAX_SPEC_GPU: i64 = 8000;

/// The config names of the six policies, in the paper's order.
pub const POLICIES: [&str; 6] = [
    "RandomScore",
    "DotProductScore",
    "GpuClusteringScore",
    "GpuPackingScore",
    "BestFitScore",
    "FGDScore",
];

fn node_state<'a>(nodes: &'a [NodeGpus], node: &NodeInfo) -> Result<&'a NodeGpus, Status> {
    nodes
        .get(node.index())
        .filter(|s| s.name == node.name())
        .ok_or_else(|| {
            Status::error(format!(
                "node {} is not in the GPU state (enable GpuShare at PreFilter)",
                node.name()
            ))
        })
}

fn cpu_left(node: &NodeInfo) -> i64 {
    node.allocatable().milli_cpu - node.requested().milli_cpu
}

fn sigmoid_score(frag_drop: f64) -> i64 {
    let s = 1.0 / (1.0 + (-frag_drop / 1000.0).exp());
    (s * MAX as f64) as i64
}

/// FGD's choice for a share of `milli` on a node: the fitting GPU whose share gives
/// the highest score (the first in index order among equals), and that score.
pub fn fgd_share_choice(
    typical: &TypicalPods,
    cpu_left: i64,
    left: &[u32],
    model: Option<&str>,
    cpu: i64,
    milli: u32,
) -> Option<(i64, usize)> {
    let allowed = typical.allowed(model);
    let before = typical.frag_allowed(&allowed, cpu_left, left);
    let mut after = [0u32; MAX_GPUS];
    let after = &mut after[..left.len()];
    after.copy_from_slice(left);
    let mut best: Option<(i64, usize)> = None;
    for (i, l) in left.iter().enumerate() {
        // A GPU with as much free as one before it scores the same, and the first wins.
        if *l < milli || left[..i].contains(l) {
            continue;
        }
        after[i] -= milli;
        let score = sigmoid_score(before - typical.frag_allowed(&allowed, cpu_left - cpu, after));
        after[i] += milli;
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, i));
        }
    }
    best
}

/// FGD's score of a node for a pod.
pub fn fgd_score(typical: &TypicalPods, node: &NodeGpus, cpu_left: i64, pod: &PodInfo) -> i64 {
    let demand = GpuDemand::of(pod);
    let cpu = pod_cpu(pod);
    let model = node.model.as_deref();
    if demand.is_share() {
        return fgd_share_choice(typical, cpu_left, &node.left, model, cpu, demand.milli)
            .map_or(0, |(s, _)| s);
    }
    let allowed = typical.allowed(model);
    let before = typical.frag_allowed(&allowed, cpu_left, &node.left);
    let mut after = [0u32; MAX_GPUS];
    let after = &mut after[..node.left.len()];
    after.copy_from_slice(&node.left);
    // The simulator's `NodeResource.Sub`: the fitting GPUs with the least free first.
    let mut order: Vec<usize> = (0..after.len()).collect();
    order.sort_by_key(|i| after[*i]);
    let mut wanted = demand.count;
    for i in order {
        if wanted == 0 {
            break;
        }
        if after[i] >= demand.milli {
            after[i] -= demand.milli;
            wanted -= 1;
        }
    }
    sigmoid_score(before - typical.frag_allowed(&allowed, cpu_left - cpu, after))
}

/// Scores each node with `f` under one read of the GPU state.
fn score_each(
    state: &GpuState,
    nodes: &[&NodeInfo],
    out: &mut [i64],
    f: impl Fn(&NodeGpus, &NodeInfo) -> i64,
) -> Result<(), Status> {
    state.read(|gpus| {
        for (node, out) in nodes.iter().zip(out) {
            *out = f(node_state(gpus, node)?, node);
        }
        Ok(())
    })
}

macro_rules! gpu_score_plugin {
    ($ty:ident, $name:literal, $node_scoped:literal) => {
        impl Plugin for $ty {
            fn name(&self) -> &str {
                $name
            }
            extension_points!(Score);
            fn sign_pod(&self, pod: &PodInfo) -> Result<Vec<SignFragment>, Status> {
                Ok(gpu_fragments(pod))
            }
            fn node_scoped(&self, _: &PodInfo, _: &Snapshot) -> bool {
                $node_scoped
            }
        }
    };
}

/// `FGDScore`: Fragmentation Gradient Descent.
pub struct FgdScore {
    /// The GPU state.
    pub state: Arc<GpuState>,
    /// The workload's typical pods.
    pub typical: Arc<TypicalPods>,
}
gpu_score_plugin!(FgdScore, "FGDScore", true);

impl ScorePlugin for FgdScore {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.state.read(|gpus| {
            Ok(fgd_score(
                &self.typical,
                node_state(gpus, node)?,
                cpu_left(node),
                pod,
            ))
        })
    }
    fn score_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        score_each(&self.state, nodes, out, |g, n| {
            fgd_score(&self.typical, g, cpu_left(n), pod)
        })
    }
}

/// `BestFitScore`: the least cpu and GPU left.
pub struct BestFitScore {
    /// The GPU state.
    pub state: Arc<GpuState>,
}
gpu_score_plugin!(BestFitScore, "BestFitScore", true);

fn best_fit(g: &NodeGpus, cpu_left: i64, pod: &PodInfo) -> i64 {
    let demand = GpuDemand::of(pod);
    let free_cpu = (cpu_left - pod_cpu(pod)) as f64;
    let free_gpu = f64::from(g.total_left()) - f64::from(demand.total());
    let spare = free_cpu / MAX_SPEC_CPU * 0.5 + free_gpu / MAX_SPEC_GPU as f64 * 0.5;
    ((1.0 - spare) * MAX as f64) as i64
}

impl ScorePlugin for BestFitScore {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.state
            .read(|gpus| Ok(best_fit(node_state(gpus, node)?, cpu_left(node), pod)))
    }
    fn score_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        score_each(&self.state, nodes, out, |g, n| {
            best_fit(g, cpu_left(n), pod)
        })
    }
    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for BestFitScore {
    /// The simulator's min–max normalisation: lowest to 0, highest to 100; all 0 when
    /// every node scores the same.
    fn normalize_score(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let lo = scores.iter().map(|s| s.score).min().unwrap_or(0);
        let hi = scores.iter().map(|s| s.score).max().unwrap_or(0);
        for s in scores.iter_mut() {
            s.score = min_max_score(s.score, lo, hi);
        }
        Status::success()
    }

    // Declared, so that incremental scheduling keeps the totals from cycle to cycle.
    fn normalization(&self, _: &CycleState) -> Normalization {
        Normalization::MinMax
    }
}

/// `DotProductScore`: the smallest dot product of free resources and demand (the
/// simulator's `merge` dimensions, `max` normalisation).
pub struct DotProductScore {
    /// The GPU state.
    pub state: Arc<GpuState>,
}
gpu_score_plugin!(DotProductScore, "DotProductScore", true);

fn dot_product(g: &NodeGpus, cpu_left: i64, pod: &PodInfo) -> i64 {
    let cpu = pod_cpu(pod);
    if cpu_left < cpu {
        return 0;
    }
    let gpu = f64::from(GpuDemand::of(pod).total()) / MAX_SPEC_GPU as f64;
    let dot = cpu_left as f64 / MAX_SPEC_CPU * (cpu as f64 / MAX_SPEC_CPU)
        + f64::from(g.total_left()) / MAX_SPEC_GPU as f64 * gpu;
    (MAX as f64 * (1.0 - dot / 2.0)) as i64
}

impl ScorePlugin for DotProductScore {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.state
            .read(|gpus| Ok(dot_product(node_state(gpus, node)?, cpu_left(node), pod)))
    }
    fn score_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        score_each(&self.state, nodes, out, |g, n| {
            dot_product(g, cpu_left(n), pod)
        })
    }
}

/// `GpuPackingScore`: partly used GPUs, then partly used nodes, then idle nodes.
pub struct GpuPackingScore {
    /// The GPU state.
    pub state: Arc<GpuState>,
}
gpu_score_plugin!(GpuPackingScore, "GpuPackingScore", true);

fn gpu_packing(g: &NodeGpus, pod: &PodInfo) -> i64 {
    let demand = GpuDemand::of(pod);
    if demand.is_none() {
        return 0;
    }
    let idle = g.fully_free() as i64;
    if idle == g.left.len() as i64 {
        return (MAX / 3 - idle).max(idle);
    }
    let mut order: Vec<usize> = (0..g.left.len()).collect();
    order.sort_by_key(|i| g.left[*i]);
    let mut wanted = demand.count;
    let mut idle_used = 0;
    let mut free_on_used = 0i64;
    for i in order {
        if wanted == 0 {
            break;
        }
        if g.left[i] >= demand.milli {
            wanted -= 1;
            if g.left[i] == MILLI {
                idle_used += 1;
            }
            free_on_used += i64::from(g.left[i]) * 100 / i64::from(MILLI);
        }
    }
    if wanted != 0 {
        return 0;
    }
    if idle_used > 0 {
        return (MAX / 2 - idle_used).max(MAX / 3);
    }
    (MAX - free_on_used / 10).max(MAX / 2)
}

impl ScorePlugin for GpuPackingScore {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.state
            .read(|gpus| Ok(gpu_packing(node_state(gpus, node)?, pod)))
    }
    fn score_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        score_each(&self.state, nodes, out, |g, _| gpu_packing(g, pod))
    }
}

/// `GpuClusteringScore`: pods of one GPU shape together (a share, or `n` whole GPUs).
pub struct GpuClusteringScore {
    /// The GPU state.
    pub state: Arc<GpuState>,
}
gpu_score_plugin!(GpuClusteringScore, "GpuClusteringScore", true);

/// A pod's GPU shape for clustering: `None` for a CPU pod, `Some(0)` for a share,
/// `Some(n)` for `n` whole GPUs.
fn affinity(d: GpuDemand) -> Option<u32> {
    if d.is_none() {
        None
    } else if d.is_share() {
        Some(0)
    } else {
        Some(d.count)
    }
}

fn gpu_clustering(g: &NodeGpus, node: &NodeInfo, pod: &PodInfo) -> i64 {
    let Some(mine) = affinity(GpuDemand::of(pod)) else {
        return 0;
    };
    let mut kinds: [Option<u32>; 2] = [None, None];
    let mut distinct = 0;
    let mut same = false;
    for p in node.pods() {
        if let Some(a) = affinity(GpuDemand::of(p)) {
            same |= a == mine;
            if kinds[0] != Some(a) && kinds[1] != Some(a) {
                distinct += 1;
                if distinct <= 2 {
                    kinds[distinct - 1] = Some(a);
                }
            }
        }
    }
    let base = MAX / 4 * (MAX_SPEC_GPU - i64::from(g.total_left())) / MAX_SPEC_GPU;
    match (same, distinct) {
        (true, 1) => base + MAX * 3 / 4,
        (true, _) => base + MAX * 2 / 4,
        (false, 0) => base + MAX / 4,
        (false, _) => base,
    }
}

impl ScorePlugin for GpuClusteringScore {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.state
            .read(|gpus| Ok(gpu_clustering(node_state(gpus, node)?, node, pod)))
    }
    fn score_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        score_each(&self.state, nodes, out, |g, n| gpu_clustering(g, n, pod))
    }
}

/// `RandomScore`: one feasible node at random (seeded). Its NormalizeScore, which sees
/// every feasible node in node order, draws one; Score is 0 everywhere, so that a node's
/// raw score reads nothing and incremental scheduling may keep it.
pub struct RandomScore {
    rng: Mutex<SplitMix64>,
}

impl RandomScore {
    /// The plugin, drawing from `seed`.
    pub fn new(seed: u64) -> RandomScore {
        RandomScore {
            rng: Mutex::new(SplitMix64::new(seed)),
        }
    }
}

impl Plugin for RandomScore {
    fn name(&self) -> &str {
        "RandomScore"
    }
    extension_points!(Score);
    // Its raw score is the same for every pod.
    fn sign_pod(&self, _: &PodInfo) -> Result<Vec<SignFragment>, Status> {
        Ok(Vec::new())
    }
    fn node_scoped(&self, _: &PodInfo, _: &Snapshot) -> bool {
        true
    }
}

impl ScorePlugin for RandomScore {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }
    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for RandomScore {
    /// The draw: 100 on one feasible node, 0 elsewhere. Its rule stays opaque (the
    /// default): it draws in every cycle.
    fn normalize_score(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        if scores.is_empty() {
            return Status::success();
        }
        let drawn = self
            .rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .below(scores.len());
        for (i, s) in scores.iter_mut().enumerate() {
            s.score = if i == drawn { MAX } else { 0 };
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frag::TypicalPod;

    fn gpus(left: &[u32]) -> NodeGpus {
        let node = kubesched::framework::build::NodeBuilder::new("n")
            .cpu_millis(64_000)
            .node();
        let mut g = NodeGpus::idle(&NodeInfo::new(node).unwrap());
        g.left = left.to_vec();
        g
    }

    #[test]
    fn packing_prefers_partly_used_gpus_then_partly_used_nodes_then_idle_ones() {
        let mut pod = (*kubesched::framework::build::PodBuilder::new("default", "p")
            .cpu_millis(1000)
            .pod())
        .clone();
        pod.metadata.annotations = Some(
            [
                (
                    kubesched::replay::import::GPU_COUNT.to_string(),
                    "1".to_string(),
                ),
                (
                    kubesched::replay::import::GPU_MILLI.to_string(),
                    "500".to_string(),
                ),
            ]
            .into(),
        );
        let pod = PodInfo::new(Arc::new(pod)).unwrap();
        // Idle node of 8: max(33 - 8, 8) = 25.
        assert_eq!(gpu_packing(&gpus(&[1000; 8]), &pod), 25);
        // A partly used node whose share would take an idle GPU: max(50 - 1, 33).
        assert_eq!(gpu_packing(&gpus(&[1000, 0]), &pod), 49);
        // A GPU with 600 free takes it: 100 - 60/10 = 94.
        assert_eq!(gpu_packing(&gpus(&[600, 1000]), &pod), 94);
    }

    #[test]
    fn fgd_puts_a_share_where_it_leaves_the_least_fragment() {
        // Everyone wants half a GPU: a GPU with 500 free is fully usable, one with 700
        // leaves 200 no typical pod can use.
        let typical = TypicalPods {
            pods: vec![TypicalPod {
                cpu_milli: 0,
                gpu_count: 1,
                gpu_milli: 500,
                gpu_models: None,
                weight: 1.0,
            }],
        };
        let (_, gpu) = fgd_share_choice(&typical, 64_000, &[1000, 700], None, 0, 300).unwrap();
        // On the 700 GPU: 400 left, still fits a half; on the idle one 700 left. Either
        // leaves no fragment, so the first wins.
        assert_eq!(gpu, 0);
        let (s, gpu) = fgd_share_choice(&typical, 64_000, &[1000, 700], None, 0, 200).unwrap();
        // 200 on the 700 GPU leaves 500 (usable); on the idle one 800 and 700 both usable.
        assert_eq!((s, gpu), (50, 0));
        let (_, gpu) = fgd_share_choice(&typical, 64_000, &[600, 1000], None, 0, 500).unwrap();
        // 500 on the 600 GPU leaves 100 (fragment); on the idle one 500 and 600 (none).
        assert_eq!(gpu, 1);
    }
}
