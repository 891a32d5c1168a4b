//! One scheduling attempt as the scheduler left it: the outcome, and the per-node detail
//! still in the scheduler's own shape (the column-major score table and the node-index
//! statuses), with node names borrowed from one list shared by every attempt.
//!
//! A [`PodResult`] owns a string per node and per plugin; at tens of thousands of nodes
//! building one costs far more than deciding the pod. The streaming output
//! ([`output::write_jsonl_attempt`](crate::output::write_jsonl_attempt),
//! [`output::Table::push_attempt`](crate::output::Table::push_attempt)) reads an
//! [`Attempt`] directly; [`Attempt::to_result`] builds the owned record for callers
//! that keep results.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use kubesched_framework::{Diagnosis, ScoreTable, Status};

use crate::simulate::{Detail, NodeScores, PodOutcome, PodResult, Rejection};

/// The cluster's node names in node order, and the same positions sorted by name (the
/// order the output prints nodes in), computed once and shared by every attempt.
#[derive(Debug)]
pub struct NodeNames {
    order: Arc<Vec<String>>,
    by_name: OnceLock<Vec<usize>>,
}

impl NodeNames {
    /// The names of `order` (node order).
    pub fn new(order: Arc<Vec<String>>) -> NodeNames {
        NodeNames {
            order,
            by_name: OnceLock::new(),
        }
    }

    /// A node added at the end of the node order (as
    /// [`Snapshot::add_node`](kubesched_framework::Snapshot::add_node) adds it).
    pub fn push(&mut self, name: String) {
        Arc::make_mut(&mut self.order).push(name);
        self.by_name = OnceLock::new();
    }

    /// The node at `index` removed, the ones after it moved up (as
    /// [`Snapshot::remove_node`](kubesched_framework::Snapshot::remove_node) does).
    pub fn remove(&mut self, index: usize) {
        Arc::make_mut(&mut self.order).remove(index);
        self.by_name = OnceLock::new();
    }

    /// The names in node order.
    pub fn order(&self) -> &Arc<Vec<String>> {
        &self.order
    }

    /// The name of the node at `index` in node order.
    pub fn name(&self, index: usize) -> &str {
        &self.order[index]
    }

    /// Node positions sorted by name, byte-wise (as a `BTreeMap<String, _>` orders them).
    pub fn by_name(&self) -> &[usize] {
        self.by_name.get_or_init(|| {
            let mut by_name: Vec<usize> = (0..self.order.len()).collect();
            by_name.sort_by(|&a, &b| self.order[a].cmp(&self.order[b]));
            by_name
        })
    }
}

/// One attempt: the pod, its outcome, and the scheduler's per-node verdicts unconverted.
#[derive(Debug)]
pub struct Attempt {
    /// `namespace/name`.
    pub pod: String,
    /// The scheduler name after defaulting.
    pub scheduler: String,
    /// What happened.
    pub outcome: PodOutcome,
    pub(crate) names: Arc<NodeNames>,
    /// The feasible nodes' scores (empty when scoring was skipped or did not run).
    pub(crate) scores: ScoreTable,
    /// The rejected nodes, when the filters ran.
    pub(crate) diagnosis: Option<Diagnosis>,
    /// The chosen node's position, when one was chosen.
    pub(crate) chosen: Option<usize>,
}

impl Attempt {
    pub(crate) fn new(pod: String, scheduler: String, names: Arc<NodeNames>) -> Attempt {
        Attempt {
            pod,
            scheduler,
            outcome: PodOutcome::Ignored,
            names,
            scores: ScoreTable::default(),
            diagnosis: None,
            chosen: None,
        }
    }

    /// The node names this attempt's positions refer to.
    pub fn names(&self) -> &NodeNames {
        &self.names
    }

    /// The plugins that rejected the pod (kube-scheduler's `UnschedulablePlugins`): the
    /// cluster events they registered are the ones that retry it. Empty when no filter
    /// ran or none rejected it (an error, which is retried after its backoff).
    pub fn unschedulable_plugins(&self) -> std::collections::BTreeSet<String> {
        self.diagnosis
            .as_ref()
            .map(|d| d.unschedulable_plugins.clone())
            .unwrap_or_default()
    }

    /// The score table's columns sorted by plugin name; of columns with the same name
    /// only the last is kept (as a map keyed by name keeps the last insert).
    pub(crate) fn plugin_columns(&self) -> Vec<usize> {
        let plugins = &self.scores.plugins;
        let mut columns: Vec<usize> = (0..plugins.len()).collect();
        columns.sort_by(|&a, &b| plugins[a].cmp(&plugins[b]).then(b.cmp(&a)));
        columns.dedup_by(|later, kept| plugins[*later] == plugins[*kept]);
        columns
    }

    /// For each node position, its row in the score table (the last row when a node
    /// repeats), `usize::MAX` for none.
    pub(crate) fn rows_by_node(&self) -> Vec<usize> {
        let mut rows = vec![usize::MAX; self.names.order.len()];
        for (row, &node) in self.scores.node_indices.iter().enumerate() {
            rows[node] = row;
        }
        rows
    }

    /// For each node position, the status that rejected it: its own (the last one when a
    /// node repeats) or, for a node that was not evaluated at all, the absent nodes'.
    pub(crate) fn rejections_by_node(&self) -> Vec<Option<&Status>> {
        let mut statuses: Vec<Option<&Status>> = vec![None; self.names.order.len()];
        let Some(diagnosis) = &self.diagnosis else {
            return statuses;
        };
        let explicit = &diagnosis.node_to_status.statuses;
        for (index, status) in explicit {
            statuses[*index] = Some(status);
        }
        if let Some(absent) = &diagnosis.node_to_status.absent_nodes_status {
            let mut evaluated = vec![false; statuses.len()];
            for &i in explicit
                .iter()
                .map(|(i, _)| i)
                .chain(&self.scores.node_indices)
                .chain(&self.chosen)
            {
                evaluated[i] = true;
            }
            for (status, evaluated) in statuses.iter_mut().zip(evaluated) {
                if !evaluated {
                    *status = Some(absent);
                }
            }
        }
        statuses
    }

    /// The chosen node's total and the number of scored nodes, when the pod was
    /// scheduled on a scored node.
    pub(crate) fn chosen_score(&self) -> Option<(i64, usize)> {
        let PodOutcome::Scheduled(node) = &self.outcome else {
            return None;
        };
        let row = (0..self.scores.len())
            .rev()
            .find(|&r| self.names.name(self.scores.node_indices[r]) == node)?;
        // Distinct nodes, as the owned result's map counts them (the scheduler scores a
        // node once, so this is the row count).
        let mut seen = vec![false; self.names.order.len()];
        let scored = self
            .scores
            .node_indices
            .iter()
            .filter(|&&i| !std::mem::replace(&mut seen[i], true))
            .count();
        Some((self.scores.totals[row], scored))
    }

    /// The owned record, with as much per-node detail as `detail` asks.
    pub fn to_result(&self, detail: Detail) -> PodResult {
        let mut result = PodResult {
            pod: self.pod.clone(),
            scheduler: self.scheduler.clone(),
            outcome: self.outcome.clone(),
            scores: BTreeMap::new(),
            rejected: BTreeMap::new(),
            node_order: self.names.order.clone(),
        };
        if detail == Detail::None {
            return result;
        }
        if detail == Detail::All {
            for (node_index, plugins, total) in self.scores.rows() {
                result.scores.insert(
                    self.names.name(node_index).to_string(),
                    NodeScores {
                        plugins: plugins
                            .into_iter()
                            .map(|(p, v)| (p.to_string(), v))
                            .collect(),
                        total,
                    },
                );
            }
        }
        for (index, status) in self.rejections_by_node().into_iter().enumerate() {
            if let Some(status) = status {
                result.rejected.insert(
                    self.names.name(index).to_string(),
                    Rejection {
                        plugin: status.plugin().map(str::to_string),
                        reasons: status.reasons().iter().map(|r| r.to_string()).collect(),
                        notes: status.notes().to_vec(),
                    },
                );
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output;
    use kubesched_framework::{Code, NodeToStatus};

    /// An attempt with the shapes the conformance cases rarely make: a plugin name twice,
    /// node names out of name order, an explicit rejection, nodes left to the absent
    /// status, and a node scored twice.
    fn awkward() -> Attempt {
        let names = Arc::new(NodeNames::new(Arc::new(
            ["n3", "n1", "n10", "n2", "a"].map(String::from).to_vec(),
        )));
        let mut a = Attempt::new("default/p".into(), "default-scheduler".into(), names);
        a.outcome = PodOutcome::Scheduled("n1".into());
        a.scores = ScoreTable {
            plugins: vec!["B".into(), "A".into(), "B".into()],
            node_indices: vec![1, 0, 1],
            scores: vec![1, 2, 3, 10, 20, 30, 100, 200, 300],
            totals: vec![111, 222, 333],
        };
        let mut rejected = Status::with_reasons(Code::Unschedulable, ["too small", "no \"x\""]);
        rejected.set_plugin("Fit".into());
        let mut absent = Status::new(Code::UnschedulableAndUnresolvable, "not in PreFilter");
        absent.set_plugin("Affinity".into());
        a.diagnosis = Some(Diagnosis {
            node_to_status: NodeToStatus {
                statuses: vec![(2, rejected)],
                absent_nodes_status: Some(absent),
            },
            ..Default::default()
        });
        a.chosen = Some(1);
        a
    }

    #[test]
    fn an_attempt_prints_what_its_result_prints() {
        let a = awkward();
        for detail in [Detail::All, Detail::Rejected, Detail::None] {
            let mut direct = Vec::new();
            output::write_jsonl_attempt(&mut direct, &a, detail).unwrap();
            let mut owned = Vec::new();
            output::write_jsonl(&mut owned, &a.to_result(Detail::All), detail).unwrap();
            assert_eq!(
                String::from_utf8(direct).unwrap(),
                String::from_utf8(owned).unwrap(),
                "{detail:?}"
            );
        }
        let mut table = output::Table::default();
        table.push_attempt(&a);
        assert_eq!(table.render(), output::table(&[a.to_result(Detail::All)]));
    }

    #[test]
    fn the_last_of_a_repeated_column_or_row_counts() {
        let a = awkward();
        let line = {
            let mut out = Vec::new();
            output::write_jsonl_attempt(&mut out, &a, Detail::All).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(
            line.contains(r#""scores":{"n1":{"A":30,"B":300},"n3":{"A":20,"B":200}}"#),
            "{line}"
        );
        assert!(
            line.contains(r#""rejected":{"a":["not in PreFilter"],"n10":["too small","no \"x\""],"n2":["not in PreFilter"]}"#),
            "{line}"
        );
        assert_eq!(a.chosen_score(), Some((333, 2)));
    }
}
