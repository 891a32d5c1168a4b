//! `kubesched capacity`: how many more copies of a pod fit in the cluster, as
//! kubernetes-sigs/cluster-capacity answers it, with kube-scheduler's exact rules.
//!
//! The scenario is prepared as `kubesched simulate` prepares it, and its own pending
//! pods are scheduled first, exactly as `simulate` schedules them (they are already
//! waiting for a node). Then copies of the pod are attempted one at a time, each
//! through the same code path as a pending pod of the scenario, each assumed on its
//! node before the next one, until a copy does not fit (or the limit is reached). The
//! answer is the number of copies that fit, how they spread over the nodes, and the
//! first failed attempt: its FailedScheduling message and, per Filter plugin, the nodes
//! it rejected and why.
//!
//! The copies are named `NAME-1`, `NAME-2`, ... (a name taken by a pod of the scenario
//! gets a further `-N` suffix); they have the pod's labels, so they count for each
//! other's affinity and topology spreading, as identical replicas do.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::{PodInfo, Registry};
use serde_json::{Value, json};

use crate::scenario::Scenario;
use crate::simulate::{PodOutcome, PodResult, SimulationError, SimulationOptions, prepare};

/// Why the copies stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The next copy does not fit: its full attempt.
    Unschedulable(Box<PodResult>),
    /// The limit of copies was reached.
    LimitReached(usize),
    /// No profile has the pod's scheduler name: no copy would ever be scheduled.
    NotOurs,
    /// The pod has scheduling gates: no copy would be attempted.
    Gated(Vec<String>),
}

/// The answer of [`capacity`].
#[derive(Clone, Debug)]
pub struct Capacity {
    /// The pod the copies are made of, `namespace/name`.
    pub pod: String,
    /// How many copies fit.
    pub count: usize,
    /// Copies per node, every node in node order (0 included).
    pub per_node: Vec<(String, usize)>,
    /// Why the copies stopped.
    pub stop: Stop,
    /// The scenario's own pending pods, scheduled first.
    pub pending: Vec<PodResult>,
    /// Where the configuration came from.
    pub config_source: String,
    /// Warnings from the configuration.
    pub warnings: Vec<String>,
}

/// Schedules copies of `pod` into `scenario` (see the module doc), at most `limit` of
/// them when given.
pub fn capacity(
    scenario: &Scenario,
    pod: &Pod,
    options: &SimulationOptions,
    registry: &Registry,
    limit: Option<usize>,
) -> Result<Capacity, SimulationError> {
    let mut prepared = prepare(scenario, options, registry)?;
    let node_order = prepared.node_order();
    let queue = std::mem::take(&mut prepared.queue);
    let pending: Vec<PodResult> = queue
        .iter()
        .map(|q| prepared.attempt(&q.pod_info, &node_order))
        .collect();
    let namespace = pod
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let base = pod.metadata.name.clone().unwrap_or_else(|| "pod".into());
    let taken: HashSet<(String, String)> = scenario
        .pods
        .iter()
        .map(|p| {
            (
                p.metadata.namespace.clone().unwrap_or_default(),
                p.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    let mut count = 0;
    let stop = loop {
        if limit.is_some_and(|l| count >= l) {
            break Stop::LimitReached(count);
        }
        let mut name = format!("{base}-{}", count + 1);
        while taken.contains(&(namespace.clone(), name.clone())) {
            name.push_str(&format!("-{}", count + 1));
        }
        let mut copy = pod.clone();
        copy.metadata.name = Some(name.clone());
        copy.metadata.namespace = Some(namespace.clone());
        if let Some(spec) = copy.spec.as_mut() {
            spec.node_name = None;
        }
        let info = PodInfo::new(Arc::new(copy)).map_err(|error| SimulationError::Pod {
            pod: format!("{namespace}/{name}"),
            error,
        })?;
        let result = prepared.attempt(&Arc::new(info), &node_order);
        match &result.outcome {
            PodOutcome::Scheduled(node) => {
                *per_node.entry(node.clone()).or_default() += 1;
                count += 1;
            }
            PodOutcome::Ignored => break Stop::NotOurs,
            PodOutcome::Gated(g) => break Stop::Gated(g.clone()),
            PodOutcome::Unschedulable(_) | PodOutcome::Nominated { .. } => {
                break Stop::Unschedulable(Box::new(result));
            }
        }
    };
    Ok(Capacity {
        pod: format!("{namespace}/{base}"),
        count,
        per_node: node_order
            .iter()
            .map(|n| (n.clone(), per_node.get(n).copied().unwrap_or(0)))
            .collect(),
        stop,
        pending,
        config_source: prepared.config_source,
        warnings: prepared.warnings,
    })
}

/// The rejecting plugins of a failed attempt: plugin -> (nodes, reasons), in the order
/// the plugins first appear in node order.
pub fn rejections_by_plugin(result: &PodResult) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for node in result.node_order.iter() {
        let Some(r) = result.rejected.get(node) else {
            continue;
        };
        let plugin = r.plugin.clone().unwrap_or_else(|| "a filter".into());
        let entry = match out.iter_mut().position(|(p, _, _)| *p == plugin) {
            Some(i) => &mut out[i],
            None => {
                out.push((plugin, Vec::new(), Vec::new()));
                let last = out.len() - 1;
                &mut out[last]
            }
        };
        entry.1.push(node.clone());
        for reason in &r.reasons {
            if !entry.2.contains(reason) {
                entry.2.push(reason.clone());
            }
        }
    }
    out
}

impl Capacity {
    /// The answer for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Configuration: {}", self.config_source);
        if !self.pending.is_empty() {
            let placed = self
                .pending
                .iter()
                .filter(|r| matches!(r.outcome, PodOutcome::Scheduled(_)))
                .count();
            let _ = writeln!(
                out,
                "Scheduled first: the scenario's {} pending pod(s): {placed} placed, {} not",
                self.pending.len(),
                self.pending.len() - placed
            );
        }
        let _ = writeln!(out, "{} more copies of {} fit", self.count, self.pod);
        let width = self
            .per_node
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(out, "  {:<width$}  COPIES", "NODE");
        for (node, n) in &self.per_node {
            let _ = writeln!(out, "  {node:<width$}  {n}");
        }
        match &self.stop {
            Stop::LimitReached(l) => {
                let _ = writeln!(
                    out,
                    "Stopped at the limit of {l} copies (--max-limit N sets it; 0, the default, is 100000)"
                );
            }
            Stop::NotOurs => {
                let _ = writeln!(
                    out,
                    "Stopped: no profile schedules the pod's schedulerName; no copy is ever scheduled"
                );
            }
            Stop::Gated(g) => {
                let _ = writeln!(
                    out,
                    "Stopped: the pod has scheduling gates ({}); no copy is attempted",
                    g.join(", ")
                );
            }
            Stop::Unschedulable(result) => {
                let message = match &result.outcome {
                    PodOutcome::Unschedulable(m) | PodOutcome::Nominated { message: m, .. } => {
                        m.clone()
                    }
                    _ => String::new(),
                };
                let _ = writeln!(out, "Copy {} does not fit: {message}", self.count + 1);
                for (plugin, nodes, reasons) in rejections_by_plugin(result) {
                    let _ = writeln!(
                        out,
                        "  {plugin}: {} on {}",
                        reasons.join("; "),
                        nodes.join(", ")
                    );
                }
            }
        }
        out
    }

    /// The answer for scripts: one JSON object.
    pub fn json(&self) -> Value {
        let nodes: serde_json::Map<String, Value> = self
            .per_node
            .iter()
            .map(|(n, c)| (n.clone(), json!(c)))
            .collect();
        let stop = match &self.stop {
            Stop::LimitReached(l) => json!({"reason": "LimitReached", "limit": l}),
            Stop::NotOurs => json!({"reason": "NotOurs"}),
            Stop::Gated(g) => json!({"reason": "Gated", "gates": g}),
            Stop::Unschedulable(result) => {
                let line = crate::output::to_json(result);
                let plugins: serde_json::Map<String, Value> = rejections_by_plugin(result)
                    .into_iter()
                    .map(|(p, nodes, reasons)| (p, json!({"nodes": nodes, "reasons": reasons})))
                    .collect();
                json!({"reason": "Unschedulable", "message": line["message"],
                       "rejected": line["rejected"], "plugins": plugins})
            }
        };
        json!({"pod": self.pod, "config": self.config_source, "count": self.count,
               "nodes": nodes, "stop": stop})
    }
}
