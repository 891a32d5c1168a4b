//! Choosing among the scored nodes: the host (kube-scheduler's `selectHost`, or the
//! first in node order among the best, as FORMAT.md says), and the other nodes in the
//! order batching keeps them.

use super::*;

impl Scheduler {
    /// The node of the highest total, as [`SchedulerOptions::host_selection`] breaks
    /// ties.
    pub(super) fn select_host(&mut self, scores: &ScoreTable) -> usize {
        let rows = scores.totals.iter().copied();
        self.select_best(rows.zip(scores.node_indices.iter().copied()))
    }

    /// The index of the highest total among `(total, index)` rows, ties broken as
    /// [`SchedulerOptions::host_selection`] says: the lowest index, or one of the best
    /// at random. Nodes and PodGroup placements are chosen alike. 0 when there is none.
    pub(super) fn select_best(
        &mut self,
        rows: impl Iterator<Item = (i64, usize)> + Clone,
    ) -> usize {
        match self.options.host_selection {
            // One pass: the highest total, the lowest index among equals.
            HostSelection::FirstInNodeOrder => rows
                .map(|(total, index)| (total, std::cmp::Reverse(index)))
                .max()
                .map_or(0, |(_, std::cmp::Reverse(index))| index),
            HostSelection::Random { .. } => {
                let best = rows.clone().map(|(t, _)| t).max().unwrap_or(0);
                let ties = rows.filter(|(t, _)| *t == best).map(|(_, i)| i);
                let mut chosen = 0;
                for (seen, index) in ties.enumerate() {
                    if self.rng.next().is_multiple_of(seen as u64 + 1) {
                        chosen = index;
                    }
                }
                chosen
            }
        }
    }
}

/// The scored nodes other than `chosen`, best total first, for batching. Equal totals
/// keep the order of the score table (node order for an exhaustive search, search
/// order otherwise).
pub(super) fn sorted_other_nodes(
    scores: &ScoreTable,
    chosen: usize,
    snapshot: &Snapshot,
) -> VecDeque<String> {
    let mut rows: Vec<(i64, usize)> = scores
        .totals
        .iter()
        .zip(&scores.node_indices)
        .filter(|(_, i)| **i != chosen)
        .map(|(&t, &i)| (t, i))
        .collect();
    rows.sort_by_key(|&(t, _)| std::cmp::Reverse(t));
    rows.into_iter()
        .map(|(_, i)| snapshot.node_at(i).name().to_string())
        .collect()
}
