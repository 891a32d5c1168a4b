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
//! When every plugin that can refuse the pod treats it node by node (no required pod
//! affinity, no DoNotSchedule spread, no claims: [`Plugin::node_local`]), the copies
//! after the first are not scheduled one by one: each node is filled with as many as
//! its Filter plugins accept ([`Scheduler::fill_nodes`]), which is where one-by-one
//! scheduling ends whatever order the scores pick, and then the next copy is attempted
//! in full for the answer's failed attempt. Memory then grows by a pointer per copy,
//! and a plain count has no limit.
//!
//! [`Plugin::node_local`]: kubesched_framework::Plugin::node_local
//! [`Scheduler::fill_nodes`]: kubesched_framework::Scheduler::fill_nodes
//!
//! The copies are named `NAME-1`, `NAME-2`, ... (a name taken by a pod of the scenario
//! gets a further `-N` suffix); they have the pod's labels, so they count for each
//! other's affinity and topology spreading, as identical replicas do.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::{NoFill, PodInfo, Registry};
use serde_json::{Value, json};

use crate::scenario::Scenario;
use crate::simulate::{Detail, PodOutcome, PodResult, SimulationError, SimulationOptions, prepare};

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

/// How [`capacity`] places copies, and how many at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    /// At most this many copies (cluster-capacity's `--max-limit`); `None` counts
    /// every copy that fits.
    pub limit: Option<usize>,
    /// At most this many copies when they are scheduled one at a time (a plugin does
    /// not treat the pod node by node), so that no input runs for long.
    pub one_at_a_time_limit: Option<usize>,
    /// Fill the nodes when the plugins allow it (the module doc); `false` schedules
    /// every copy in full, which gives the same answer, slowly.
    pub fill_nodes: bool,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            limit: None,
            one_at_a_time_limit: None,
            fill_nodes: true,
        }
    }
}

/// How the copies were placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Each node filled at once ([`kubesched_framework::Scheduler::fill_nodes`]).
    NodeByNode,
    /// One copy at a time, each scheduled in full; why.
    OneAtATime(String),
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
    /// The scenario's own pending pods, scheduled first: their outcomes, without
    /// per-node detail.
    pub pending: Vec<PodResult>,
    /// Where the configuration came from.
    pub config_source: String,
    /// Warnings from the configuration.
    pub warnings: Vec<String>,
    /// How the copies were placed.
    pub placement: Placement,
    /// The options it ran with.
    pub copies: CopyOptions,
}

/// Schedules copies of `pod` into `scenario` (see the module doc), as `copies` says.
pub fn capacity(
    scenario: &Scenario,
    pod: &Pod,
    options: &SimulationOptions,
    registry: &Registry,
    copies: CopyOptions,
) -> Result<Capacity, SimulationError> {
    let mut prepared = prepare(scenario, options, registry)?;
    let node_order = prepared.node_order();
    let queue = std::mem::take(&mut prepared.queue);
    // Only the pending pods' outcomes are kept, and only the rejections of the copies
    // (for the failed attempt): per-node detail of thousands of attempts over
    // thousands of nodes would take gigabytes. A scheduled pod's result is read for
    // its node only, and a failed attempt's detail comes whole, so incremental cycles
    // may choose from kept totals.
    prepared.detail = Detail::None;
    prepared.scheduler.set_decisions_only(true);
    let pending: Vec<PodResult> = queue
        .iter()
        .map(|q| prepared.attempt(&q.pod_info, &node_order))
        .collect();
    prepared.detail = Detail::Rejected;
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
    // Copy number `n` (from 1), named as no pod of the scenario is.
    let copy = |n: usize| -> Result<Arc<PodInfo>, SimulationError> {
        let mut name = format!("{base}-{n}");
        while taken.contains(&(namespace.clone(), name.clone())) {
            name.push_str(&format!("-{n}"));
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
        Ok(Arc::new(info))
    };
    let position: HashMap<&str, usize> = node_order
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut per_node = vec![0usize; node_order.len()];
    let mut count = 0;
    let mut placement = None;
    let mut limit = copies.limit;
    let stop = loop {
        if limit.is_some_and(|l| count >= l) {
            break Stop::LimitReached(count);
        }
        let next = copy(count + 1)?;
        // After the first copy fits (the pod is ours, not gated, and fits somewhere),
        // fill the nodes with the rest if the plugins allow it.
        if count == 1 && placement.is_none() {
            let remaining = limit.map(|l| l - count);
            let filled = if copies.fill_nodes {
                prepared.scheduler.fill_nodes(&next, remaining)
            } else {
                Err(NoFill::Declined)
            };
            placement = Some(match filled {
                Ok(filled) => {
                    for (i, n) in filled.into_iter().enumerate() {
                        per_node[i] += n;
                        count += n;
                    }
                    Placement::NodeByNode
                }
                Err(why) => {
                    if let Some(cap) = copies.one_at_a_time_limit {
                        limit = Some(limit.map_or(cap, |l| l.min(cap)));
                    }
                    Placement::OneAtATime(why.to_string())
                }
            });
            continue;
        }
        let result = prepared.attempt(&next, &node_order);
        match &result.outcome {
            PodOutcome::Scheduled(node) => {
                if let Some(&i) = position.get(node.as_str()) {
                    per_node[i] += 1;
                }
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
        per_node: node_order.iter().cloned().zip(per_node).collect(),
        stop,
        pending,
        config_source: prepared.config_source,
        warnings: prepared.warnings,
        placement: placement.unwrap_or(Placement::OneAtATime(
            "fewer than two copies were scheduled".into(),
        )),
        copies,
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
            Stop::LimitReached(l) => match (&self.placement, self.copies.limit) {
                (Placement::OneAtATime(why), None) => {
                    let _ = writeln!(
                        out,
                        "Stopped at {l} copies, the most scheduled one at a time without --max-limit ({why}); give --max-limit N to go further"
                    );
                }
                _ => {
                    let _ = writeln!(out, "Stopped at the limit of {l} copies (--max-limit N)");
                }
            },
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
        let placement = match &self.placement {
            Placement::NodeByNode => json!({"how": "NodeByNode"}),
            Placement::OneAtATime(why) => json!({"how": "OneAtATime", "why": why}),
        };
        json!({"pod": self.pod, "config": self.config_source, "count": self.count,
               "nodes": nodes, "stop": stop, "placement": placement})
    }
}
