//! The same scenario under two kube-scheduler versions (or two sets of feature gates):
//! which pods change node, message or nomination, and the scores that made the
//! difference. "What changes if I upgrade kube-scheduler", as `simulate
//! --compare-versions 1.35,1.36` prints it.
//!
//! A pod's attempts are paired in order (its first attempt under one version with its
//! first under the other, ...); a pair whose outcomes differ is a change. For the nodes
//! either side picked (or nominated), the change keeps both sides' scores, so a reader
//! sees which plugin moved and by how much.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kubesched_framework::{Features, Registry};

use crate::scenario::Scenario;
use crate::simulate::{
    NodeScores, PodOutcome, PodResult, SimulationError, SimulationOptions, prepare,
};

/// One attempt of one pod that ends differently under the two versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// `namespace/name`.
    pub pod: String,
    /// Which attempt of the pod (1 for the first).
    pub attempt: usize,
    /// The outcome under the first version; `None` when the pod had fewer attempts.
    pub before: Option<PodOutcome>,
    /// The outcome under the second version.
    pub after: Option<PodOutcome>,
    /// The nodes either side chose or nominated, in node order, with their scores under
    /// each version (`None` where the node was not scored).
    pub nodes: Vec<NodeChange>,
}

/// One node's scores under both versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeChange {
    /// The node.
    pub node: String,
    /// Its scores under the first version.
    pub before: Option<NodeScores>,
    /// Its scores under the second version.
    pub after: Option<NodeScores>,
}

impl NodeChange {
    /// The plugins whose weighted score differs between the versions: (plugin, before,
    /// after), in profile order.
    pub fn differing_plugins(&self) -> Vec<(String, Option<i64>, Option<i64>)> {
        let get = |s: &Option<NodeScores>, p: &str| {
            s.as_ref()
                .and_then(|s| s.plugins.iter().find(|(n, _)| n == p).map(|(_, v)| *v))
        };
        let mut names: Vec<&str> = Vec::new();
        for s in [&self.before, &self.after].into_iter().flatten() {
            for (p, _) in &s.plugins {
                if !names.contains(&p.as_str()) {
                    names.push(p);
                }
            }
        }
        names
            .into_iter()
            .filter_map(|p| {
                let (b, a) = (get(&self.before, p), get(&self.after, p));
                (b != a).then(|| (p.to_string(), b, a))
            })
            .collect()
    }
}

/// What [`compare_versions`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// The first version's description ([`Features::describe`]).
    pub before: String,
    /// The second's.
    pub after: String,
    /// How many pending pods were attempted (under either version).
    pub pods: usize,
    /// The attempts that differ, in the order the pods were first attempted.
    pub changes: Vec<Change>,
}

/// Runs `scenario` with `options` under `before` and then `after`, and pairs the
/// results.
pub fn compare_versions(
    scenario: &Scenario,
    options: &SimulationOptions,
    before: &Features,
    after: &Features,
    registry: &Registry,
) -> Result<Comparison, SimulationError> {
    let run = |features: &Features| -> Result<Vec<PodResult>, SimulationError> {
        let options = SimulationOptions {
            features: features.clone(),
            ..options.clone()
        };
        Ok(prepare(scenario, &options, registry)?.run().results)
    };
    let (a, b) = (run(before)?, run(after)?);
    let mut order: Vec<&str> = Vec::new();
    let mut by_pod: BTreeMap<&str, (Vec<&PodResult>, Vec<&PodResult>)> = BTreeMap::new();
    for (side, results) in [(0, &a), (1, &b)] {
        for r in results {
            let entry = by_pod.entry(&r.pod).or_insert_with(|| {
                order.push(&r.pod);
                (Vec::new(), Vec::new())
            });
            if side == 0 {
                &mut entry.0
            } else {
                &mut entry.1
            }
            .push(r);
        }
    }
    let mut changes = Vec::new();
    for pod in &order {
        let (xs, ys) = &by_pod[pod];
        for i in 0..xs.len().max(ys.len()) {
            let (x, y) = (xs.get(i).copied(), ys.get(i).copied());
            let (ox, oy) = (x.map(|r| &r.outcome), y.map(|r| &r.outcome));
            if ox == oy {
                continue;
            }
            let mut picked: Vec<&str> = Vec::new();
            for o in [ox, oy].into_iter().flatten() {
                if let Some(n) = chosen_node(o)
                    && !picked.contains(&n)
                {
                    picked.push(n);
                }
            }
            let node_order = x.or(y).map(|r| r.node_order.clone()).unwrap_or_default();
            picked.sort_by_key(|n| node_order.iter().position(|m| m == n));
            let nodes = picked
                .into_iter()
                .map(|n| NodeChange {
                    node: n.to_string(),
                    before: x.and_then(|r| r.scores.get(n).cloned()),
                    after: y.and_then(|r| r.scores.get(n).cloned()),
                })
                .collect();
            changes.push(Change {
                pod: pod.to_string(),
                attempt: i + 1,
                before: ox.cloned(),
                after: oy.cloned(),
                nodes,
            });
        }
    }
    Ok(Comparison {
        before: before.describe(),
        after: after.describe(),
        pods: order.len(),
        changes,
    })
}

fn chosen_node(outcome: &PodOutcome) -> Option<&str> {
    match outcome {
        PodOutcome::Scheduled(n) => Some(n),
        PodOutcome::Nominated { node, .. } => Some(node),
        _ => None,
    }
}

/// An outcome in a few words: `node-1`, `nominated node-1 (evicts a/b)`,
/// `unschedulable: MESSAGE`, `gated`, `ignored`, `not attempted`.
pub fn outcome_words(outcome: Option<&PodOutcome>) -> String {
    match outcome {
        None => "not attempted".into(),
        Some(PodOutcome::Scheduled(n)) => n.clone(),
        Some(PodOutcome::Nominated { node, victims, .. }) => {
            format!("nominated {node} (evicts {})", victims.join(", "))
        }
        Some(PodOutcome::Unschedulable(m)) => format!("unschedulable: {m}"),
        Some(PodOutcome::Gated(g)) => format!("gated ({})", g.join(", ")),
        Some(PodOutcome::Ignored) => "ignored (no profile has its schedulerName)".into(),
    }
}

impl Comparison {
    /// The comparison for people: a header, then per changed attempt the two outcomes
    /// and, per node either side picked, the totals and the plugins that moved.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} -> {}: {} of {} pod(s) change",
            self.before,
            self.after,
            self.changes
                .iter()
                .map(|c| &c.pod)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            self.pods
        );
        for c in &self.changes {
            let attempt = if c.attempt > 1 {
                format!(" (attempt {})", c.attempt)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "{}{attempt}: {} -> {}",
                c.pod,
                outcome_words(c.before.as_ref()),
                outcome_words(c.after.as_ref())
            );
            if !c.nodes.is_empty()
                && c.nodes
                    .iter()
                    .all(|n| n.before.is_none() && n.after.is_none())
            {
                let _ = writeln!(
                    out,
                    "  no scores on either side: one node passed the filters (the cluster differs by then, or the filters do)"
                );
                continue;
            }
            for n in &c.nodes {
                let total = |s: &Option<NodeScores>| {
                    s.as_ref().map_or("-".to_string(), |s| s.total.to_string())
                };
                let mut line = format!(
                    "  {}: total {} -> {}",
                    n.node,
                    total(&n.before),
                    total(&n.after)
                );
                for (p, b, a) in n.differing_plugins() {
                    let v = |x: Option<i64>| x.map_or("-".to_string(), |x| x.to_string());
                    let _ = write!(line, "; {p} {} -> {}", v(b), v(a));
                }
                let _ = writeln!(out, "{line}");
            }
        }
        out
    }
}
