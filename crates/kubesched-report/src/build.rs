//! Builds a [`Report`] from the simulator's own results: each configuration's scenario
//! is prepared and run exactly as `kubesched simulate` runs it (the same
//! [`Prepared`](kubesched_sim::Prepared), attempt by attempt), and the model takes the
//! nodes from the scheduler's snapshot before and after the run and each attempt from
//! its [`PodResult`].
//!
//! Every node's verdict for every pod is as large as nodes x pods, so the per-node
//! detail (the heat map) is kept for as many attempts as a budget of cells allows:
//! attempts that left the pod pending and pods asked for by name first, scheduled
//! pods while less than half of the budget is used.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::{NodeInfo, PodInfo};
use kubesched_sim::scenario::Scenario;
use kubesched_sim::{PodOutcome, PodResult, SimulationError, SimulationOptions, prepare};

use crate::figures;
use crate::model::{
    Attempt, Candidate, Detail, Difference, Node, OutcomeKind, ReferencePod, RejectGroup, Report,
    Run, Usage,
};

/// The zone label, then the deprecated one.
const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];

/// Cells of per-node detail kept by default: about 25 attempts at 5,000 nodes, 4 MB of
/// page.
pub const DEFAULT_DETAIL_BUDGET: usize = 1_000_000;

/// A node's zone from its labels (`label(key)`): `topology.kubernetes.io/zone`, then the
/// deprecated `failure-domain.beta.kubernetes.io/zone`; `""` for none.
pub fn zone_of<'a>(label: impl Fn(&str) -> Option<&'a str>) -> String {
    ZONE_LABELS
        .iter()
        .find_map(|l| label(l))
        .unwrap_or("")
        .to_string()
}

/// One configuration (or Kubernetes version) to run: its name in the report, the
/// scenario with that configuration in place, and the version's features when they
/// are not [`Options::simulation`]'s.
pub struct Variant {
    /// A short name (the configuration file, or the version: `v1.35`).
    pub name: String,
    /// The scenario, its configuration replaced (or the scenario's own).
    pub scenario: Scenario,
    /// The Kubernetes version and feature gates to run under; `None`: those of
    /// [`Options::simulation`].
    pub features: Option<kubesched_framework::Features>,
}

/// How the report is built.
pub struct Options {
    /// How each run simulates (version, feature gates, preemption); the detail level
    /// is the report's own.
    pub simulation: SimulationOptions,
    /// The pod whose copies measure fragmentation and where it came from; `None` takes
    /// the first pending pod in queue order (by priority, then scenario order).
    pub reference: Option<(Arc<Pod>, String)>,
    /// Cells of per-node detail to keep (an attempt costs its node count x 8).
    pub detail_budget: usize,
    /// Pods (`namespace/name`) whose detail is kept whatever the budget.
    pub detail_pods: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            simulation: SimulationOptions::default(),
            reference: None,
            detail_budget: DEFAULT_DETAIL_BUDGET,
            detail_pods: Vec::new(),
        }
    }
}

/// Runs every variant with the in-tree plugins and builds the report. `title` names
/// what was simulated.
pub fn build(
    title: &str,
    variants: &[Variant],
    options: &Options,
) -> Result<Report, SimulationError> {
    build_with(
        title,
        variants,
        options,
        &kubesched_plugins::in_tree_registry(),
    )
}

/// [`build()`] with the plugins of `registry` (the in-tree ones and an embedder's own).
pub fn build_with(
    title: &str,
    variants: &[Variant],
    options: &Options,
    registry: &kubesched_framework::Registry,
) -> Result<Report, SimulationError> {
    let mut report = Report {
        title: title.to_string(),
        version: String::new(),
        nodes: Vec::new(),
        zones: Vec::new(),
        runs: Vec::new(),
        reference: None,
        differences: Vec::new(),
        detailed: (0, 0),
    };
    let mut reference: Option<Arc<PodInfo>> = None;
    for (i, variant) in variants.iter().enumerate() {
        let mut sim = options.simulation.clone();
        sim.detail = kubesched_sim::Detail::All;
        if let Some(features) = &variant.features {
            sim.features = features.clone();
        }
        let mut prepared = prepare(&variant.scenario, &sim, registry)?;
        if i == 0 {
            (report.nodes, report.zones) = nodes_before(prepared.scheduler.snapshot().nodes());
            let (info, source) = match &options.reference {
                Some((pod, source)) => (Some(pod_info(pod)?), source.clone()),
                None => (
                    prepared.queue.first().map(|q| q.pod_info.clone()),
                    "the first pending pod in queue order".to_string(),
                ),
            };
            if let Some(info) = &info {
                report.reference = Some(ReferencePod {
                    pod: info.key().to_string(),
                    source,
                    req: requests(info),
                });
            }
            reference = info;
        }
        let pods: HashMap<String, (i32, Usage)> = prepared
            .queue
            .iter()
            .map(|q| {
                let p = &q.pod_info;
                (p.key().to_string(), (p.priority(), requests(p)))
            })
            .collect();
        let mut budget = Budget {
            cells: options.detail_budget,
            used: 0,
            always: &options.detail_pods,
        };
        let mut attempts = Vec::new();
        let mut details = Vec::new();
        let mut attempted = 0;
        let mut nth: HashMap<String, usize> = HashMap::new();
        let names = prepared.node_order();
        let index: HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let _ = prepared.run_attempts(|a| {
            let went_through_filters = matches!(
                a.outcome,
                PodOutcome::Scheduled(_)
                    | PodOutcome::Unschedulable(_)
                    | PodOutcome::Nominated { .. }
            );
            attempted += usize::from(went_through_filters);
            let keep = went_through_filters && budget.take(&a.pod, &a.outcome, names.len());
            let result = a.to_result(if keep {
                kubesched_sim::Detail::All
            } else {
                kubesched_sim::Detail::None
            });
            let count = nth.entry(result.pod.clone()).or_default();
            *count += 1;
            let (priority, req) = pods.get(&result.pod).copied().unwrap_or_default();
            let mut attempt = attempt_of(&result, *count, priority, req);
            if keep {
                attempt.detail = Some(details.len());
                details.push(detail_of(&result, &index));
            }
            attempts.push(attempt);
            Ok::<(), std::convert::Infallible>(())
        });
        report.detailed.0 += details.len();
        report.detailed.1 += attempted;
        let after_nodes = prepared.scheduler.snapshot().nodes();
        let after: Vec<Usage> = after_nodes.iter().map(requested).collect();
        let fit = reference
            .as_ref()
            .map(|pod| figures::copies_that_fit(after_nodes, pod));
        let figures = figures::figures(&report.nodes, &after, &attempts, fit);
        report.runs.push(Run {
            name: variant.name.clone(),
            version: sim.features.version.to_string(),
            config: prepared.config_source.clone(),
            warnings: prepared.warnings.clone(),
            after,
            attempts,
            details,
            figures,
        });
    }
    report.differences = differences(&report.runs);
    let mut versions: Vec<&str> = Vec::new();
    for run in &report.runs {
        if !versions.contains(&run.version.as_str()) {
            versions.push(&run.version);
        }
    }
    report.version = versions.join(", ");
    Ok(report)
}

/// Which attempts keep their per-node detail.
struct Budget<'a> {
    cells: usize,
    used: usize,
    always: &'a [String],
}

impl Budget<'_> {
    /// Whether an attempt over `nodes` nodes keeps its detail, and if so counts it.
    fn take(&mut self, pod: &str, outcome: &PodOutcome, nodes: usize) -> bool {
        // A node's row: its verdict and a handful of plugin scores.
        let cost = nodes * 8;
        let keep = if self.always.iter().any(|p| p == pod) {
            true
        } else if matches!(outcome, PodOutcome::Scheduled(_)) {
            self.used + cost <= self.cells / 2
        } else {
            self.used + cost <= self.cells
        };
        if keep {
            self.used += cost;
        }
        keep
    }
}

fn pod_info(pod: &Arc<Pod>) -> Result<Arc<PodInfo>, SimulationError> {
    PodInfo::new(pod.clone())
        .map(Arc::new)
        .map_err(|error| SimulationError::Pod {
            pod: format!(
                "{}/{}",
                pod.metadata.namespace.as_deref().unwrap_or("default"),
                pod.metadata.name.as_deref().unwrap_or("")
            ),
            error,
        })
}

fn requests(pod: &PodInfo) -> Usage {
    let r = pod.requests();
    Usage {
        cpu: r.milli_cpu,
        mem: r.memory,
        pods: 1,
    }
}

fn requested(node: &NodeInfo) -> Usage {
    let c = node.counts();
    Usage {
        cpu: c.requested.milli_cpu,
        mem: c.requested.memory,
        pods: c.pods,
    }
}

/// The nodes as the snapshot has them before the run, and their zones.
fn nodes_before(nodes: &[NodeInfo]) -> (Vec<Node>, Vec<String>) {
    let mut zones: Vec<String> = Vec::new();
    let mut zone_index: HashMap<String, usize> = HashMap::new();
    let nodes = nodes
        .iter()
        .map(|n| {
            let zone = zone_of(|key| n.label(key));
            let zone = *zone_index.entry(zone.clone()).or_insert_with(|| {
                zones.push(zone);
                zones.len() - 1
            });
            let c = n.counts();
            Node {
                name: n.name().to_string(),
                zone,
                taints: n
                    .taints()
                    .iter()
                    .map(kubesched_plugins::taint_toleration::taint_string)
                    .collect(),
                unschedulable: n.unschedulable(),
                alloc: Usage {
                    cpu: c.allocatable.milli_cpu,
                    mem: c.allocatable.memory,
                    pods: c.allowed_pod_number,
                },
                before: requested(n),
            }
        })
        .collect();
    (nodes, zones)
}

fn attempt_of(r: &PodResult, nth: usize, priority: i32, req: Usage) -> Attempt {
    let mut a = Attempt {
        pod: r.pod.clone(),
        ns: r.pod.split_once('/').map_or("", |(ns, _)| ns).to_string(),
        scheduler: r.scheduler.clone(),
        outcome: OutcomeKind::Ignored,
        node: None,
        message: None,
        nominated: None,
        victims: Vec::new(),
        candidates: Vec::new(),
        why: None,
        gates: Vec::new(),
        nth,
        priority,
        req,
        detail: None,
    };
    match &r.outcome {
        PodOutcome::Ignored => {}
        PodOutcome::Gated(gates) => {
            a.outcome = OutcomeKind::Gated;
            a.gates = gates.clone();
        }
        PodOutcome::Scheduled(node) => {
            a.outcome = OutcomeKind::Scheduled;
            a.node = Some(node.clone());
        }
        PodOutcome::Unschedulable(message) => {
            a.outcome = OutcomeKind::Unschedulable;
            a.message = Some(message.clone());
        }
        PodOutcome::Nominated {
            message,
            node,
            victims,
            candidates,
            selection_reason,
        } => {
            a.outcome = OutcomeKind::Nominated;
            a.message = Some(message.clone());
            a.nominated = Some(node.clone());
            a.victims = victims.clone();
            a.candidates = candidates
                .iter()
                .map(|c| Candidate {
                    node: c.node.clone(),
                    victims: c.victims.clone(),
                    details: c.details.clone(),
                })
                .collect();
            a.why = selection_reason.clone();
        }
    }
    a
}

/// The heat map of one result: scored nodes in node order, rejections grouped.
fn detail_of(r: &PodResult, index: &HashMap<&str, usize>) -> Detail {
    let mut d = Detail::default();
    let mut scored: Vec<(usize, &kubesched_sim::NodeScores)> = r
        .scores
        .iter()
        .filter_map(|(name, s)| index.get(name.as_str()).map(|&i| (i, s)))
        .collect();
    scored.sort_by_key(|(i, _)| *i);
    for (_, s) in &scored {
        for (plugin, _) in &s.plugins {
            if !d.plugins.contains(plugin) {
                d.plugins.push(plugin.clone());
            }
        }
    }
    d.scored = scored
        .iter()
        .map(|(i, s)| {
            let by_plugin = d
                .plugins
                .iter()
                .map(|p| {
                    s.plugins
                        .iter()
                        .rev()
                        .find(|(q, _)| q == p)
                        .map_or(0, |(_, v)| *v)
                })
                .collect();
            (*i, by_plugin, s.total)
        })
        .collect();
    let mut rejected: Vec<(usize, &kubesched_sim::Rejection)> = r
        .rejected
        .iter()
        .filter_map(|(name, rej)| index.get(name.as_str()).map(|&i| (i, rej)))
        .collect();
    rejected.sort_by_key(|(i, _)| *i);
    let mut groups: HashMap<(String, &[String]), usize> = HashMap::new();
    for (i, rej) in rejected {
        let plugin = rej.plugin.clone().unwrap_or_else(|| "a filter".into());
        let g = *groups
            .entry((plugin.clone(), rej.reasons.as_slice()))
            .or_insert_with(|| {
                d.rejected.push(RejectGroup {
                    plugin,
                    reasons: rej.reasons.clone(),
                    nodes: Vec::new(),
                });
                d.rejected.len() - 1
            });
        d.rejected[g].nodes.push(i);
    }
    if let PodOutcome::Scheduled(node) = &r.outcome {
        d.winner = index.get(node.as_str()).copied();
        if let Some(best) = r.scores.get(node).map(|s| s.total) {
            let tied: Vec<usize> = d
                .scored
                .iter()
                .filter(|(_, _, total)| *total == best)
                .map(|(i, _, _)| *i)
                .collect();
            if tied.len() > 1 {
                d.ties = tied;
            }
        }
    }
    d
}

/// The node of each pod's last attempt in each run, for the pods where they differ.
fn differences(runs: &[Run]) -> Vec<Difference> {
    if runs.len() < 2 {
        return Vec::new();
    }
    let finals: Vec<HashMap<&str, Option<&String>>> = runs
        .iter()
        .map(|run| {
            run.attempts
                .iter()
                .map(|a| (a.pod.as_str(), a.node.as_ref()))
                .collect()
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for a in &runs[0].attempts {
        if !seen.insert(a.pod.as_str()) {
            continue;
        }
        let nodes: Vec<Option<String>> = finals
            .iter()
            .map(|f| f.get(a.pod.as_str()).copied().flatten().cloned())
            .collect();
        if nodes.iter().any(|n| *n != nodes[0]) {
            out.push(Difference {
                pod: a.pod.clone(),
                nodes,
            });
        }
    }
    out
}
