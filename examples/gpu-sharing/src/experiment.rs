//! The FGD paper's main experiment (its Fig. 7 and 9 on the default trace): the
//! trace's GPU nodes and pods, the pods shuffled with a seed and resampled up to
//! `tune` times the cluster's GPU capacity, scheduled one by one with no departures
//! under one policy, and the cluster's allocated and fragmented GPU reported per
//! integer percent of GPU arrived.
//!
//! As the paper's simulator (hkust-adsl/kubernetes-scheduler-simulator) does it:
//! - the pods are sorted by name, then shuffled; the resampled pods (copies of pods
//!   drawn at random from the whole trace, named `<name>-tuned-<i>`) follow them, drawn
//!   until the next one's GPU milli *per GPU* would pass `tune` × capacity (its
//!   `tuneUpPods`, which adds the pod's whole milli but tests its per-GPU milli);
//! - the profile has the default Filter plugins and `GpuShare`, every Score plugin
//!   disabled but the policy's, `percentageOfNodesToScore: 100`, and among the
//!   best-scored nodes the one with the smallest name (the simulator's vendored
//!   kube-scheduler changed `selectHost` so, "for reproducibility");
//! - after the initial state and after every pod (scheduled or not), a row: arrived GPU
//!   milli (failed pods too), allocated GPU milli, fragmented GPU milli; the point of
//!   percent `P` is the mean over the rows whose arrived percent rounds to `P` (or,
//!   when none does, to `P ± 1`) of the allocated percent rounded to 2 places (its
//!   `merge_alloc_discrete.py`).
//!
//! The draws come from [`SplitMix64`], not Go's `math/rand`: a seed gives another
//! order than the simulator's, so the figures agree in distribution, not bit for bit.

use std::sync::Arc;

use kubesched::config::KubeSchedulerConfiguration;
use kubesched::framework::{
    Handle, HostSelection, NodeSearch, Outcome, PodInfo, Scheduler, SchedulerOptions, Snapshot,
};
use kubesched::replay::import::{OpenbOptions, openb};
use kubesched::sim::scenario::{self, Scenario, Source};
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::frag::TypicalPods;
use crate::model::{GpuDemand, GpuState, MILLI, NodeGpus, pod_cpu, pod_models};
use crate::rng::SplitMix64;

/// What stops an experiment.
#[derive(Debug)]
pub enum ExperimentError {
    /// The CSVs could not be imported.
    Import(String),
    /// The imported trace did not load as a scenario.
    Scenario(String),
    /// The profile did not build (a plugin's args, the configuration).
    Profile(String),
    /// A pod could not be read.
    Pod(String),
}

impl std::fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExperimentError::Import(m) => write!(f, "importing the trace: {m}"),
            ExperimentError::Scenario(m) => write!(f, "loading the imported trace: {m}"),
            ExperimentError::Profile(m) => write!(f, "building the profile: {m}"),
            ExperimentError::Pod(m) => write!(f, "reading a pod: {m}"),
        }
    }
}

impl std::error::Error for ExperimentError {}

/// The six policies, in the paper's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// `RandomScore`, shares on a random fitting GPU.
    Random,
    /// `DotProductScore`.
    DotProduct,
    /// `GpuClusteringScore`.
    GpuClustering,
    /// `GpuPackingScore`.
    GpuPacking,
    /// `BestFitScore`.
    BestFit,
    /// `FGDScore`, shares on FGD's GPU.
    Fgd,
}

impl Policy {
    /// All six.
    pub const ALL: [Policy; 6] = [
        Policy::Random,
        Policy::DotProduct,
        Policy::GpuClustering,
        Policy::GpuPacking,
        Policy::BestFit,
        Policy::Fgd,
    ];

    /// The name the reports use (the paper's).
    pub fn name(self) -> &'static str {
        match self {
            Policy::Random => "Random",
            Policy::DotProduct => "DotProduct",
            Policy::GpuClustering => "GpuClustering",
            Policy::GpuPacking => "GpuPacking",
            Policy::BestFit => "BestFit",
            Policy::Fgd => "FGD",
        }
    }

    /// The Score plugin's name in a configuration.
    pub fn plugin(self) -> &'static str {
        crate::policies::POLICIES[self as usize]
    }

    /// The policy named `name` (its report name or its plugin's, any case).
    pub fn parse(name: &str) -> Option<Policy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name) || p.plugin().eq_ignore_ascii_case(name))
    }

    fn gpu_selection(self) -> &'static str {
        match self {
            Policy::Random => "random",
            Policy::Fgd => "FGD",
            _ => "best",
        }
    }
}

/// The trace, loaded once for any number of runs.
pub struct Trace {
    scenario: Scenario,
    /// The pods, sorted by name.
    workload: Vec<Arc<PodInfo>>,
    /// The workload's typical pods.
    pub typical: Arc<TypicalPods>,
    /// The cluster's GPUs.
    pub gpus: u64,
}

impl Trace {
    /// The nodes and pods of the openb CSVs, through kubesched's importer (each node
    /// with room for 1001 pods, as the simulator's node list has).
    pub fn load(
        nodes_csv: &str,
        nodes_name: &str,
        pods_csv: &str,
        pods_name: &str,
    ) -> Result<Trace, ExperimentError> {
        let options = OpenbOptions {
            max_pods: 1001,
            ..OpenbOptions::default()
        };
        let text = openb(nodes_csv, nodes_name, pods_csv, pods_name, &options)
            .map_err(|e| ExperimentError::Import(e.to_string()))?;
        let mut scenario = scenario::load(&[Source {
            name: format!("openb: {nodes_name} and {pods_name}"),
            text: objects_list(&text)?,
        }])
        .map_err(|e| ExperimentError::Scenario(e.to_string()))?;
        // In name order: among nodes of equal score the first wins (see `run`).
        scenario
            .nodes
            .sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut workload = scenario
            .pods
            .iter()
            .map(|p| PodInfo::new(p.clone()).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ExperimentError::Pod(e.to_string()))?;
        workload.sort_by(|a, b| a.key().cmp(b.key()));
        let typical = Arc::new(TypicalPods::from_workload(
            workload.iter().map(|p| {
                let d = GpuDemand::of(p);
                (
                    pod_cpu(p),
                    d.count,
                    d.milli,
                    pod_models(p).map(str::to_string),
                )
            }),
            95.0,
        ));
        let (snapshot, _) = Snapshot::new(scenario.nodes.iter().cloned(), [])
            .map_err(|e| ExperimentError::Scenario(e.to_string()))?;
        let gpus = snapshot
            .nodes()
            .iter()
            .map(|n| NodeGpus::idle(n).left.len() as u64)
            .sum();
        Ok(Trace {
            scenario,
            workload,
            typical,
            gpus,
        })
    }

    /// How many pods the trace has.
    pub fn pods(&self) -> usize {
        self.workload.len()
    }

    /// How many nodes.
    pub fn nodes(&self) -> usize {
        self.scenario.nodes.len()
    }
}

/// One line of the importer's trace: only the object it applies is read, as its text.
#[derive(Deserialize)]
struct TraceLine<'a> {
    #[serde(borrow)]
    apply: Option<&'a RawValue>,
}

/// The objects the trace applies (nodes, then pods) as one scenario document, a List
/// in JSON, which the loader parses several times faster than YAML documents; their
/// times do not matter here, nothing departs.
fn objects_list(trace: &str) -> Result<String, ExperimentError> {
    let mut list = String::with_capacity(trace.len());
    list.push_str(r#"{"apiVersion":"v1","kind":"List","items":["#);
    let mut first = true;
    for line in trace.lines() {
        let line: TraceLine =
            serde_json::from_str(line).map_err(|e| ExperimentError::Import(e.to_string()))?;
        if let Some(object) = line.apply {
            if !first {
                list.push(',');
            }
            list.push_str(object.get());
            first = false;
        }
    }
    list.push_str("]}");
    Ok(list)
}

/// One point of a run: at `arrived` percent of the cluster's GPU milli arrived, the
/// percent allocated and the percent fragmented.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Arrived GPU milli, in integer percent of all.
    pub arrived: u32,
    /// Allocated GPU milli, in percent of all.
    pub allocated: f64,
    /// Fragmented GPU milli (FGD's measure), in percent of all.
    pub fragmented: f64,
}

/// One run's outcome.
#[derive(Clone, Debug)]
pub struct Run {
    /// The policy.
    pub policy: Policy,
    /// The seed.
    pub seed: u64,
    /// The points, by arrived percent.
    pub points: Vec<Point>,
    /// Pods attempted (the shuffled and resampled arrivals).
    pub attempted: usize,
    /// Pods scheduled.
    pub scheduled: usize,
    /// GPU milli allocated at the end, per the plugin's per-GPU state.
    pub allocated_milli: u64,
    /// GPU milli of the pods the scheduler placed, counted from its outcomes alone.
    pub placed_milli: u64,
    /// The inconsistencies found in the final per-GPU state (none when it is right):
    /// each node's missing GPU milli against the GPU milli of the pods the snapshot has
    /// on it, each GPU's free milli against 0..=1000, the pods the plugin says hold GPUs
    /// against the GPUs, the running total against the state's.
    pub state_problems: Vec<String>,
}

impl Run {
    /// The point at `arrived` percent, if the run reached it.
    pub fn at(&self, arrived: u32) -> Option<&Point> {
        self.points.iter().find(|p| p.arrived == arrived)
    }

    /// The JSON lines of the run, one per point.
    pub fn json_lines(&self) -> impl Iterator<Item = String> + '_ {
        // Written by hand to keep the fields in the issue's order.
        let policy = serde_json::Value::from(self.policy.name());
        self.points.iter().map(move |p| {
            format!(
                r#"{{"policy":{policy},"seed":{},"arrived":{},"allocated":{},"fragmented":{}}}"#,
                self.seed,
                p.arrived,
                serde_json::Value::from(p.allocated),
                serde_json::Value::from(p.fragmented)
            )
        })
    }
}

/// The profile of a run, as a KubeSchedulerConfiguration document.
pub fn config(policy: Policy, seed: u64, typical: &TypicalPods) -> serde_json::Value {
    let mut plugin_config = vec![json!({
        "name": "GpuShare",
        "args": {"gpuSelection": policy.gpu_selection(), "seed": seed},
    })];
    match policy {
        Policy::Fgd => plugin_config.push(json!({
            "name": "FGDScore",
            "args": {"typicalPods": typical.pods},
        })),
        Policy::Random => {
            plugin_config.push(json!({"name": "RandomScore", "args": {"seed": seed}}));
        }
        _ => {}
    }
    json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {
                "preFilter": {"enabled": [{"name": "GpuShare"}]},
                "filter": {"enabled": [{"name": "GpuShare"}]},
                "reserve": {"enabled": [{"name": "GpuShare"}]},
                "preScore": {"disabled": [{"name": "*"}]},
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": policy.plugin(), "weight": 1}]},
            },
            "pluginConfig": plugin_config,
        }],
    })
}

/// The pods of a run in arrival order: the workload shuffled, then resampled copies up
/// to `tune` × the cluster's GPU milli (see the module doc); `tune` ≤ 0 keeps the
/// workload as it is.
pub fn arrivals(trace: &Trace, seed: u64, tune: f64) -> Result<Vec<Arc<PodInfo>>, ExperimentError> {
    let mut rng = SplitMix64::new(seed);
    let mut pods = trace.workload.clone();
    rng.shuffle(&mut pods);
    if tune <= 0.0 {
        return Ok(pods);
    }
    let target = tune * (trace.gpus * u64::from(MILLI)) as f64;
    let mut total: u64 = pods
        .iter()
        .map(|p| u64::from(GpuDemand::of(p).total()))
        .sum();
    // Too much: drop pods at random until it is not.
    while total as f64 > target && !pods.is_empty() {
        let i = rng.below(pods.len());
        total -= u64::from(GpuDemand::of(&pods.remove(i)).total());
    }
    let mut i = 0;
    while (total as f64) < target {
        let drawn = &trace.workload[rng.below(trace.workload.len())];
        let demand = GpuDemand::of(drawn);
        if (total + u64::from(demand.milli)) as f64 > target {
            break;
        }
        let mut pod = drawn.pod().clone();
        pod.metadata.name = Some(format!(
            "{}-tuned-{i}",
            pod.metadata.name.unwrap_or_default()
        ));
        pod.metadata.uid = None;
        let info = PodInfo::new(Arc::new(pod)).map_err(|e| ExperimentError::Pod(e.to_string()))?;
        pods.push(Arc::new(info));
        total += u64::from(demand.total());
        i += 1;
    }
    Ok(pods)
}

/// Python's `round(x, 2)` on the simulator's figures (ties to even).
fn round2(x: f64) -> f64 {
    (x * 100.0).round_ties_even() / 100.0
}

/// Runs `policy` with `seed` over the trace.
pub fn run(trace: &Trace, policy: Policy, seed: u64, tune: f64) -> Result<Run, ExperimentError> {
    let state = Arc::new(GpuState::new());
    let mut registry = kubesched::plugins::in_tree_registry();
    registry
        .merge(crate::registry_with(state.clone()))
        .map_err(|e| ExperimentError::Profile(format!("plugin {} registered twice", e.0)))?;
    let source = format!("the {} profile", policy.name());
    let loaded =
        KubeSchedulerConfiguration::from_value(config(policy, seed, &trace.typical), &source)
            .map_err(|e| ExperimentError::Profile(e.to_string()))?;
    // The paper's cluster has no DRA: with DRAExtendedResource off, NodeResourcesFit
    // answers node by node for pods with an extended resource (the importer's
    // `alibabacloud.com/gpu-milli`), and incremental scheduling keeps its answers.
    let mut handle = Handle::default();
    handle
        .features
        .set("DRAExtendedResource", false)
        .map_err(ExperimentError::Profile)?;
    let profiles = kubesched::sim::simulate::build_frameworks_with(
        &loaded.config,
        &registry,
        &source,
        &handle,
    )
    .map_err(|e| ExperimentError::Profile(e.to_string()))?;
    let (snapshot, _) = Snapshot::new(trace.scenario.nodes.iter().cloned(), [])
        .map_err(|e| ExperimentError::Scenario(e.to_string()))?;
    let options = SchedulerOptions {
        // The simulator's kube-scheduler picks, among the best, the node with the
        // smallest name (its vendored `selectHost`), not one at random; the nodes are in
        // name order.
        host_selection: HostSelection::FirstInNodeOrder,
        node_search: NodeSearch::Exhaustive,
        percentage_of_nodes_to_score: Some(100),
        run_post_filter: false,
        batching: false,
    };
    let mut scheduler = Scheduler::new(profiles, snapshot, options)
        .map_err(|e| ExperimentError::Profile(e.to_string()))?;
    // Exact, and only the decisions are read: a cycle re-evaluates only the nodes that
    // changed since a pod of the same shape.
    scheduler.set_incremental(true);
    scheduler.set_decisions_only(true);
    let pods = arrivals(trace, seed, tune)?;

    let typical = &trace.typical;
    // Each node's fragment and allocated milli, kept up to date as pods land.
    let (mut frag, mut allocated): (Vec<f64>, Vec<u64>) = scheduler
        .snapshot()
        .nodes()
        .iter()
        .map(|n| {
            let g = NodeGpus::idle(n);
            (typical.frag(g.cpu_left, &g.left, g.model.as_deref()), 0)
        })
        .unzip();
    let capacity = (trace.gpus * u64::from(MILLI)) as f64;
    let (mut arrived, mut placed) = (0u64, 0u64);
    let mut frag_total: f64 = frag.iter().sum();
    let mut allocated_total = 0u64;
    // (arrived %, allocated %, fragmented %) per row.
    let mut rows: Vec<(f64, f64, f64)> = Vec::with_capacity(pods.len() + 1);
    let row = |arrived: u64, allocated: u64, frag: f64| {
        (
            (arrived as f64 / capacity * 100.0).round_ties_even(),
            round2(allocated as f64 / capacity * 100.0),
            round2(frag / capacity * 100.0),
        )
    };
    rows.push(row(0, 0, frag_total));
    let mut scheduled = 0;
    for pod in &pods {
        let demand = GpuDemand::of(pod);
        arrived += u64::from(demand.total());
        let outcome = scheduler.schedule_one(pod);
        if let Outcome::Scheduled { node, .. } = outcome {
            scheduled += 1;
            placed += u64::from(demand.total());
            let snapshot = scheduler.snapshot();
            if let Some(i) = snapshot.index_of(&node) {
                let info = snapshot.node_at(i);
                let cpu_left = info.allocatable().milli_cpu - info.requested().milli_cpu;
                let (f, a) = state.read(|nodes| {
                    let g = &nodes[i];
                    (
                        typical.frag(cpu_left, &g.left, g.model.as_deref()),
                        u64::from(g.allocated()),
                    )
                });
                frag_total += f - frag[i];
                allocated_total = allocated_total + a - allocated[i];
                frag[i] = f;
                allocated[i] = a;
            }
        }
        rows.push(row(arrived, allocated_total, frag_total));
    }

    let mut points = Vec::new();
    for p in 0..=130u32 {
        let at = |lo: f64, hi: f64| -> Vec<&(f64, f64, f64)> {
            rows.iter().filter(|r| r.0 >= lo && r.0 <= hi).collect()
        };
        let mut near = at(f64::from(p), f64::from(p));
        if near.is_empty() {
            near = at(f64::from(p) - 1.0, f64::from(p) + 1.0);
        }
        if near.is_empty() {
            continue;
        }
        let n = near.len() as f64;
        points.push(Point {
            arrived: p,
            allocated: round2(near.iter().map(|r| r.1).sum::<f64>() / n),
            fragmented: round2(near.iter().map(|r| r.2).sum::<f64>() / n),
        });
    }

    let mut problems = Vec::new();
    let snapshot = scheduler.snapshot();
    let allocated_milli = state.read(|nodes| {
        if nodes.len() != snapshot.num_nodes() {
            problems.push(format!(
                "the state has {} nodes, the snapshot {}",
                nodes.len(),
                snapshot.num_nodes()
            ));
        }
        for (i, n) in nodes.iter().enumerate().take(snapshot.num_nodes()) {
            // Counted from the pods the snapshot has on the node, not from the plugin.
            let on_node: u32 = snapshot
                .node_at(i)
                .pods()
                .iter()
                .map(|p| GpuDemand::of(p).total())
                .sum();
            if on_node != n.allocated() {
                problems.push(format!(
                    "{}: its pods ask {on_node} GPU milli, its GPUs miss {}",
                    n.name,
                    n.allocated()
                ));
            }
            if n.left.iter().any(|l| *l > MILLI) {
                problems.push(format!("{}: a GPU has more than {MILLI} free", n.name));
            }
            let held: u32 = n.holders().map(|(_, g, m)| g.len() as u32 * m).sum();
            if held != n.allocated() {
                problems.push(format!(
                    "{}: pods hold {held} milli, the GPUs miss {}",
                    n.name,
                    n.allocated()
                ));
            }
        }
        nodes.iter().map(|n| u64::from(n.allocated())).sum()
    });
    if allocated_milli != allocated_total {
        problems.push(format!(
            "the running total {allocated_total} is not the state's {allocated_milli}"
        ));
    }
    Ok(Run {
        policy,
        seed,
        points,
        attempted: pods.len(),
        scheduled,
        allocated_milli,
        placed_milli: placed,
        state_problems: problems,
    })
}

/// Every (policy, seed) run, in parallel, in the order given.
pub fn run_all(
    trace: &Trace,
    policies: &[Policy],
    seeds: &[u64],
    tune: f64,
) -> Result<Vec<Run>, ExperimentError> {
    let jobs: Vec<(Policy, u64)> = policies
        .iter()
        .flat_map(|p| seeds.iter().map(move |s| (*p, *s)))
        .collect();
    jobs.par_iter()
        .map(|(p, s)| run(trace, *p, *s, tune))
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}
