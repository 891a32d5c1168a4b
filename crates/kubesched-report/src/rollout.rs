//! `kubesched rollout --html FILE`: the rollout as a page of charts. A typed
//! [`RolloutModel`] is taken from the simulator's [`Rollout`] (the numbers `rollout`
//! prints, plus the nodes and the cluster's utilisation after each step), drawn through
//! the shared [`crate::chart`] piece (the Deployment's pods per step, the nodes they
//! occupy, the cluster's cpu and memory requested, the pods per node before and after)
//! with a table of the steps, and embedded as JSON for scripts (a `<script
//! type="application/json">` block: data, nothing runs). No network.

use std::collections::BTreeMap;

use askama::Template;
use kubesched_sim::PodOutcome;
use kubesched_sim::rollout::{ClusterLoad, Ending, Rollout};
use serde::Serialize;

use crate::chart::{Chart, Drawing, Kind, Series};

const STYLE: &str = include_str!("../assets/report.css");

/// The most nodes in the per-node chart (those with the most of the Deployment's pods).
const MAX_NODES: usize = 50;

/// The state after one step (step 0: before the first).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFigures {
    /// The step's number; 0 is the start.
    pub step: usize,
    /// Old pods deleted in the step.
    pub deleted: usize,
    /// New pods created in the step.
    pub created: usize,
    /// New pods the step's scheduling bound.
    pub scheduled: usize,
    /// Old pods left.
    pub old: usize,
    /// New pods bound.
    pub new_running: usize,
    /// New pods without a node.
    pub new_pending: usize,
    /// Nodes holding at least one of the Deployment's pods.
    pub nodes_used: usize,
    /// cpu requested by every pod on the cluster, in % of the cluster's allocatable.
    pub cpu: f64,
    /// memory requested, in % of allocatable.
    pub memory: f64,
}

/// The Deployment's pods on one node at the start and at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodePods {
    /// The node.
    pub node: String,
    /// Old pods on it at the start.
    pub before: usize,
    /// Pods (old and new) on it at the end.
    pub after: usize,
}

/// What the rollout page shows.
#[derive(Clone, Debug, Serialize)]
pub struct RolloutModel {
    /// `namespace/name`.
    pub deployment: String,
    /// `spec.replicas`.
    pub replicas: usize,
    /// The strategy in words.
    pub strategy: String,
    /// Where the configuration came from.
    pub config: String,
    /// `Complete` or `Stalled`.
    pub result: &'static str,
    /// The start, then every step.
    pub steps: Vec<StepFigures>,
    /// Every node that holds one of the Deployment's pods at the start or the end, most
    /// pods first (then node name).
    pub nodes: Vec<NodePods>,
    /// For a stalled rollout, the last attempt's pod and why it has no node.
    pub stall: Option<String>,
}

fn percent(part: i64, whole: i64) -> f64 {
    if whole > 0 {
        (part as f64 * 10000.0 / whole as f64).round() / 100.0
    } else {
        0.0
    }
}

impl RolloutModel {
    /// The model of `rollout`'s answer.
    pub fn of(r: &Rollout) -> RolloutModel {
        let load = |l: ClusterLoad| {
            (
                percent(l.cpu, r.allocatable.cpu),
                percent(l.memory, r.allocatable.memory),
            )
        };
        let mut before: BTreeMap<&str, usize> = BTreeMap::new();
        for p in &r.old_pods {
            if let Some(n) = &p.node {
                *before.entry(n).or_default() += 1;
            }
        }
        let (cpu, memory) = load(r.requested_before);
        let mut steps = vec![StepFigures {
            step: 0,
            deleted: 0,
            created: 0,
            scheduled: 0,
            old: r.old_pods.len(),
            new_running: 0,
            new_pending: 0,
            nodes_used: before.len(),
            cpu,
            memory,
        }];
        let mut after = before.clone();
        for s in &r.steps {
            for d in &s.deleted {
                if let Some(n) = &d.node
                    && let Some(count) = after.get_mut(n.as_str())
                {
                    *count -= 1;
                }
            }
            let mut scheduled = 0;
            for (n, count) in &s.scheduled {
                *after.entry(n).or_default() += count;
                scheduled += count;
            }
            let (cpu, memory) = load(s.requested);
            steps.push(StepFigures {
                step: s.number,
                deleted: s.deleted.len(),
                created: s.created.len(),
                scheduled,
                old: s.old_left,
                new_running: s.new_ready,
                new_pending: s.new_pending,
                nodes_used: s.nodes_used,
                cpu,
                memory,
            });
        }
        let mut nodes: Vec<NodePods> = before
            .keys()
            .chain(after.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|n| NodePods {
                node: n.to_string(),
                before: before.get(n).copied().unwrap_or(0),
                after: after.get(n).copied().unwrap_or(0),
            })
            .filter(|n| n.before + n.after > 0)
            .collect();
        nodes.sort_by(|a, b| {
            (b.before.max(b.after))
                .cmp(&a.before.max(a.after))
                .then_with(|| a.node.cmp(&b.node))
        });
        let stall = match r.ending {
            Ending::Complete => None,
            Ending::Stalled => r.last_attempt.as_ref().map(|a| match &a.outcome {
                PodOutcome::Unschedulable(m) | PodOutcome::Nominated { message: m, .. } => {
                    format!("{} cannot be scheduled: {m}", a.pod)
                }
                PodOutcome::Gated(g) => {
                    format!("{} is held by scheduling gates {}", a.pod, g.join(", "))
                }
                PodOutcome::Ignored => {
                    format!("{} is not ours: no profile named {:?}", a.pod, a.scheduler)
                }
                PodOutcome::Scheduled(n) => format!("{} -> {n}", a.pod),
            }),
        };
        RolloutModel {
            deployment: r.deployment.clone(),
            replicas: r.replicas,
            strategy: r.strategy.clone(),
            config: r.config_source.clone(),
            result: match r.ending {
                Ending::Complete => "Complete",
                Ending::Stalled => "Stalled",
            },
            steps,
            nodes,
            stall,
        }
    }

    /// The charts of the page, in page order.
    pub fn charts(&self) -> Vec<Chart> {
        let categories: Vec<String> = self
            .steps
            .iter()
            .map(|s| match s.step {
                0 => "start".to_string(),
                n => format!("step {n}"),
            })
            .collect();
        let series = |name: &str, f: &dyn Fn(&StepFigures) -> f64| Series {
            name: name.to_string(),
            values: self.steps.iter().map(f).collect(),
        };
        let highest = self
            .steps
            .iter()
            .map(|s| s.cpu.max(s.memory))
            .fold(0.0, f64::max);
        let shown = self.nodes.len().min(MAX_NODES);
        let mut charts = vec![
            Chart {
                id: "rollout-pods",
                title: "The Deployment's pods after each step".into(),
                unit: "pods",
                kind: Kind::Columns,
                categories: categories.clone(),
                series: vec![
                    series("old", &|s| s.old as f64),
                    series("new running", &|s| s.new_running as f64),
                    series("new pending", &|s| s.new_pending as f64),
                ],
                max: None,
            },
            Chart {
                id: "rollout-nodes",
                title: "Nodes holding the Deployment's pods".into(),
                unit: "nodes",
                kind: Kind::Columns,
                categories: categories.clone(),
                series: vec![series("nodes", &|s| s.nodes_used as f64)],
                max: None,
            },
            Chart {
                id: "rollout-utilisation",
                title: "Cluster requested / allocatable".into(),
                unit: "%",
                kind: Kind::Lines,
                categories,
                series: vec![series("cpu", &|s| s.cpu), series("memory", &|s| s.memory)],
                max: (highest <= 100.0).then_some(100.0),
            },
            Chart {
                id: "rollout-per-node",
                title: if shown < self.nodes.len() {
                    format!(
                        "The Deployment's pods per node (the {shown} nodes with the most, of {})",
                        self.nodes.len()
                    )
                } else {
                    "The Deployment's pods per node".to_string()
                },
                unit: "pods",
                kind: Kind::Bars,
                categories: self.nodes[..shown].iter().map(|n| n.node.clone()).collect(),
                series: vec![
                    Series {
                        name: "at the start".into(),
                        values: self.nodes[..shown]
                            .iter()
                            .map(|n| n.before as f64)
                            .collect(),
                    },
                    Series {
                        name: "at the end".into(),
                        values: self.nodes[..shown].iter().map(|n| n.after as f64).collect(),
                    },
                ],
                max: None,
            },
        ];
        if self.nodes.is_empty() {
            // No pod of the Deployment on any node, at the start or the end.
            charts.pop();
        }
        charts
    }
}

/// The page.
#[derive(Template)]
#[template(path = "rollout.html")]
struct Page<'a> {
    style: &'static str,
    title: &'a str,
    model: &'a RolloutModel,
    charts: Vec<Drawing>,
    /// The model as JSON, safe inside `<script>`.
    data: String,
}

/// The rollout as a self-contained page; `title` names what was simulated.
pub fn render(title: &str, rollout: &Rollout) -> String {
    let model = RolloutModel::of(rollout);
    let page = Page {
        style: STYLE,
        title,
        charts: model.charts().iter().map(Chart::draw).collect(),
        data: crate::html::script_safe_json(&model),
        model: &model,
    };
    page.render()
        .unwrap_or_else(|e| format!("template error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesched_sim::rollout::{Step, StepPod};

    fn rollout(node: &str) -> Rollout {
        Rollout {
            deployment: "default/<i>web</i>".into(),
            replicas: 1,
            strategy: "Recreate".into(),
            old_pods: vec![StepPod {
                pod: "default/old".into(),
                node: Some(node.into()),
            }],
            pending: Vec::new(),
            steps: vec![Step {
                number: 1,
                deleted: vec![StepPod {
                    pod: "default/old".into(),
                    node: Some(node.into()),
                }],
                created: Vec::new(),
                attempted: 0,
                attempts: Vec::new(),
                scheduled: Default::default(),
                pending: Vec::new(),
                old_left: 0,
                new_ready: 0,
                new_pending: 0,
                nodes_used: 0,
                requested: ClusterLoad { cpu: 0, memory: 0 },
            }],
            allocatable: ClusterLoad {
                cpu: 4000,
                memory: 1 << 30,
            },
            requested_before: ClusterLoad {
                cpu: 1000,
                memory: 1 << 29,
            },
            last_attempt: None,
            ending: Ending::Stalled,
            config_source: "built-in default".into(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn names_are_escaped_in_the_charts_and_the_model() {
        let page = render("t", &rollout("<script>alert(1)</script>"));
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(!page.contains("<i>web"), "{page}");
        assert!(
            page.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
            "{page}"
        );
        // The embedded model keeps the name, escaped for the script element.
        assert!(page.contains(r#""node":"\u003cscript\u003ealert(1)\u003c/script\u003e""#));
    }

    #[test]
    fn the_model_replays_the_steps() {
        let m = RolloutModel::of(&rollout("n1"));
        assert_eq!(m.steps.len(), 2);
        assert_eq!((m.steps[0].old, m.steps[0].nodes_used), (1, 1));
        assert_eq!((m.steps[0].cpu, m.steps[0].memory), (25.0, 50.0));
        assert_eq!((m.steps[1].old, m.steps[1].deleted), (0, 1));
        assert_eq!(
            m.nodes,
            vec![NodePods {
                node: "n1".into(),
                before: 1,
                after: 0
            }]
        );
        assert_eq!(m.charts().len(), 4);
        assert_eq!(m.result, "Stalled");
        assert_eq!(m.stall, None, "no attempt to say why");
    }
}
