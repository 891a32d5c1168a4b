//! The typed model a report is rendered from: the cluster before the simulation, and
//! for each configuration (a "run") the cluster after it, every attempt, the per-node
//! detail of the attempts the budget allows, and the cluster-level figures.
//!
//! The model is built by [`crate::build()`] from the simulator's own results; the HTML
//! page ([`crate::html`]) and the JSON Lines figures ([`crate::jsonl`]) only read it.
//! It serialises to the JSON the page's script reads (short field names: the page of a
//! 5,000-node cluster carries it inline).

use serde::Serialize;

/// A whole report: one cluster, one or more configurations run over it.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// What was simulated: the scenario files (or the built-in demo).
    pub title: String,
    /// The kube-scheduler version whose behaviour the plugins followed (`1.36`); the
    /// versions in run order, `, `-separated, when the runs compare versions.
    pub version: String,
    /// Every node, in node order, as it was before the simulation.
    pub nodes: Vec<Node>,
    /// The zones of the nodes (`topology.kubernetes.io/zone`), in order of first
    /// appearance; nodes without one are in a zone named `""`.
    pub zones: Vec<String>,
    /// One run per configuration, in the order they were given.
    pub runs: Vec<Run>,
    /// The pod whose copies measure fragmentation, when there is one.
    pub reference: Option<ReferencePod>,
    /// The pods whose final node (or outcome) differs between runs; empty with one run.
    pub differences: Vec<Difference>,
    /// How many attempts have their per-node detail in the report, of how many went
    /// through the filters (the rest are over the detail budget).
    pub detailed: (usize, usize),
}

/// cpu, memory and pods of a node: allocatable, or requested by its pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// cpu in millicores.
    pub cpu: i64,
    /// memory in bytes.
    pub mem: i64,
    /// pods (allocatable: how many the node allows; requested: how many are on it).
    pub pods: i64,
}

impl Usage {
    /// The sum of two usages.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            cpu: self.cpu + other.cpu,
            mem: self.mem + other.mem,
            pods: self.pods + other.pods,
        }
    }
}

/// One node before the simulation.
#[derive(Clone, Debug, Serialize)]
pub struct Node {
    /// Its name.
    pub name: String,
    /// Index into [`Report::zones`].
    pub zone: usize,
    /// Its taints as kubectl prints them (`key=value:Effect`).
    pub taints: Vec<String>,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// What it offers.
    pub alloc: Usage,
    /// What its bound pods request before the simulation.
    pub before: Usage,
}

/// One configuration's simulation over the cluster.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// A short name: the configuration file, or `scenario` for the scenario's own.
    pub name: String,
    /// Where the configuration came from, as the simulator says it.
    pub config: String,
    /// The kube-scheduler version whose behaviour this run followed (`1.36`).
    pub version: String,
    /// The configuration's warnings.
    pub warnings: Vec<String>,
    /// Each node's requested resources after the simulation, in node order.
    pub after: Vec<Usage>,
    /// Every attempt, in attempt order: one line of `simulate --format jsonl` each.
    pub attempts: Vec<Attempt>,
    /// The per-node detail of some attempts ([`Attempt::detail`] points here).
    pub details: Vec<Detail>,
    /// Cluster-level figures after the run.
    pub figures: Figures,
}

/// What one attempt ended in (the kinds of `simulate`'s table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeKind {
    /// Bound to a node.
    Scheduled,
    /// No node fits.
    Unschedulable,
    /// No node fits; preemption nominated a node and evicted victims.
    Nominated,
    /// Held by scheduling gates.
    Gated,
    /// No profile has the pod's scheduler name.
    Ignored,
}

/// One attempt, as one JSON Line of `simulate --format jsonl` has it, plus the pod's
/// requests.
#[derive(Clone, Debug, Serialize)]
pub struct Attempt {
    /// `namespace/name`.
    pub pod: String,
    /// The namespace.
    pub ns: String,
    /// The scheduler name.
    pub scheduler: String,
    /// What happened.
    pub outcome: OutcomeKind,
    /// The node it was scheduled on.
    pub node: Option<String>,
    /// The FailedScheduling message.
    pub message: Option<String>,
    /// The node preemption nominated.
    pub nominated: Option<String>,
    /// The pods preemption evicted, `namespace/name`.
    pub victims: Vec<String>,
    /// Every node preemption considered, in node order (when it nominated one).
    pub candidates: Vec<Candidate>,
    /// Why the nominated node won, in words.
    pub why: Option<String>,
    /// The scheduling gates holding it.
    pub gates: Vec<String>,
    /// Which attempt of this pod it is (1, or 2 after a preemption).
    pub nth: usize,
    /// The pod's priority.
    pub priority: i32,
    /// What the pod requests (pods: 1).
    pub req: Usage,
    /// Index into [`Run::details`], when the detail is in the report.
    pub detail: Option<usize>,
}

/// A node preemption considered.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// The node.
    pub node: String,
    /// The pods that would have to go, in eviction order.
    pub victims: Vec<String>,
    /// The values DefaultPreemption compared, in words.
    pub details: String,
}

/// Every node's verdict for one attempt: the heat map of the page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Detail {
    /// The score plugins, in profile order (the heat map's columns).
    pub plugins: Vec<String>,
    /// The feasible nodes in node order: node index, weighted score per plugin (in
    /// [`Detail::plugins`] order), total.
    pub scored: Vec<(usize, Vec<i64>, i64)>,
    /// The rejected nodes, grouped by rejecting plugin and reasons, in order of the
    /// first node of each group.
    pub rejected: Vec<RejectGroup>,
    /// The chosen node's index.
    pub winner: Option<usize>,
    /// The nodes sharing the best total, in node order, when more than one does (the
    /// first in node order wins: FORMAT.md rule 6).
    pub ties: Vec<usize>,
}

/// Nodes one filter rejected for the same reasons.
#[derive(Clone, Debug, Serialize)]
pub struct RejectGroup {
    /// The Filter (or PreFilter) plugin.
    pub plugin: String,
    /// Its reasons.
    pub reasons: Vec<String>,
    /// The nodes (indices), in node order.
    pub nodes: Vec<usize>,
}

/// The spread of one resource's utilisation over the nodes, in percent of allocatable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// The least utilised node.
    pub min: f64,
    /// The most utilised node.
    pub max: f64,
    /// The mean over the nodes.
    pub mean: f64,
    /// The population standard deviation.
    pub stddev: f64,
}

/// A run's cluster-level figures (the comparison table, and `--format jsonl`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Distinct pending pods attempted.
    pub pods: usize,
    /// Of them, bound to a node by their last attempt.
    pub scheduled: usize,
    /// Of them, without a node after their last attempt (unschedulable, nominated or
    /// gated).
    pub pending: usize,
    /// Of them, ignored (no profile of their scheduler name).
    pub ignored: usize,
    /// Pods evicted by preemption.
    pub evicted: usize,
    /// Nodes with at least one pod after the run.
    pub nodes_used: usize,
    /// Nodes that received at least one of the simulated pods.
    pub nodes_receiving: usize,
    /// cpu requested / allocatable per node after the run (nodes with cpu).
    pub cpu: Spread,
    /// memory requested / allocatable per node after the run (nodes with memory).
    pub memory: Spread,
    /// How many copies of the reference pod still fit after the run, by free
    /// resources on the nodes whose taints it tolerates.
    pub fit: Option<i64>,
    /// Histogram of the nodes' cpu utilisation after the run: 10 buckets of 10%
    /// (the last one includes 100% and above).
    pub cpu_histogram: [usize; 10],
}

/// The pod whose copies measure fragmentation.
#[derive(Clone, Debug, Serialize)]
pub struct ReferencePod {
    /// `namespace/name`.
    pub pod: String,
    /// Where it came from (`--reference-pod FILE`, or the first pending pod in queue
    /// order).
    pub source: String,
    /// What one copy requests.
    pub req: Usage,
}

/// A pod placed differently by the runs.
#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    /// `namespace/name`.
    pub pod: String,
    /// Per run, the node of its last attempt, or `None` when it has none.
    pub nodes: Vec<Option<String>>,
}
