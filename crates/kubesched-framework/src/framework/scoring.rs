//! PreScore and Score: every feasible node's score from each plugin, normalised and
//! weighted, in a [`ScoreTable`].

use super::{Framework, PARALLEL_THRESHOLD, PLUGIN_PARALLEL_THRESHOLD, WeightedScore};
use crate::cycle_state::CycleState;
use crate::node_info::NodeInfo;
use crate::observer::{evaluated, sampled, timed};
use crate::plugin::*;
use crate::pod_info::PodInfo;
use crate::snapshot::Snapshot;
use crate::status::{Code, Status};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The feasible nodes' final scores: every plugin's score on every node, normalised and
/// multiplied by its weight, and each node's total. Stored as one flat column-major
/// table (no allocation per node; each plugin's scores are contiguous, as the plugins
/// compute them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScoreTable {
    /// The Score plugins that ran, in the profile's order (one column each).
    pub plugins: Vec<Arc<str>>,
    /// The scored nodes' positions in node order (one row each).
    pub node_indices: Vec<usize>,
    /// `scores[column * node_indices.len() + row]`: column `c` is plugin `c`'s scores.
    pub scores: Vec<i64>,
    /// Each row's total.
    pub totals: Vec<i64>,
}

impl ScoreTable {
    /// A table where every node gets total `total` and no plugin score (a profile
    /// without Score plugins: kube-scheduler gives every node 1).
    pub fn uniform(node_indices: Vec<usize>, total: i64) -> ScoreTable {
        let totals = vec![total; node_indices.len()];
        ScoreTable {
            plugins: Vec::new(),
            node_indices,
            scores: Vec::new(),
            totals,
        }
    }

    /// The number of scored nodes.
    pub fn len(&self) -> usize {
        self.node_indices.len()
    }

    /// `true` when no node was scored.
    pub fn is_empty(&self) -> bool {
        self.node_indices.is_empty()
    }

    /// Plugin `column`'s scores, one per row.
    pub fn column(&self, column: usize) -> &[i64] {
        let rows = self.len();
        &self.scores[column * rows..(column + 1) * rows]
    }

    /// The scores of row `row`, one per plugin, in [`ScoreTable::plugins`]' order.
    pub fn row(&self, row: usize) -> impl Iterator<Item = i64> + '_ {
        (0..self.plugins.len()).map(move |c| self.column(c)[row])
    }

    /// `(node index, [(plugin, score)], total)` for every row.
    pub fn rows(&self) -> impl Iterator<Item = (usize, Vec<(&str, i64)>, i64)> {
        (0..self.len()).map(move |r| {
            let scores = self
                .plugins
                .iter()
                .zip(self.row(r))
                .map(|(p, s)| (&**p, s))
                .collect();
            (self.node_indices[r], scores, self.totals[r])
        })
    }
}

impl Framework {
    /// Runs the PreScore plugins; Skip leaves the plugin's Score out of this cycle.
    pub fn run_pre_score_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        self.timed_point("PreScore", Status::code, || {
            self.pre_score_untimed(state, pod, nodes, snapshot)
        })
    }

    fn pre_score_untimed(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        let mut skip = BTreeSet::new();
        let obs = sampled(&self.observer, state);
        for w in &self.pre_score {
            evaluated(&self.observer, &self.profile_name, &w.name, "PreScore", 1);
            let s = timed(obs, &w.name, "PreScore", Status::code, || {
                w.plugin.pre_score(state, pod, nodes, snapshot)
            });
            if s.is_skip() {
                skip.insert(w.name.to_string());
                continue;
            }
            if !s.is_success() {
                return Status::error(format!(
                    "running PreScore plugin {:?}: {}",
                    &*w.name,
                    s.message()
                ))
                .with_plugin(w.name.clone());
            }
        }
        for s in self.score.iter().filter(|s| !skip.contains(&*s.wired.name)) {
            s.wired.plugin.prepare(state, pod, nodes, snapshot);
        }
        state.set_skip_score_plugins(skip);
        Status::success()
    }

    /// Runs the Score plugins on the feasible nodes (given with their node-order
    /// indices), normalises each plugin's scores, checks they are in 0..=100 and applies
    /// the weights. The result is in the order of `nodes`.
    pub fn run_score_plugins(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[(usize, &NodeInfo)],
    ) -> Result<ScoreTable, Status> {
        self.timed_point(
            "Score",
            |r: &Result<ScoreTable, Status>| {
                r.as_ref().map_or_else(Status::code, |_| Code::Success)
            },
            || self.score_untimed(state, pod, nodes),
        )
    }

    fn score_untimed(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[(usize, &NodeInfo)],
    ) -> Result<ScoreTable, Status> {
        let mut table = self.raw_scores(state, pod, nodes)?;
        self.normalize_and_weigh(state, pod, &mut table)?;
        Ok(table)
    }

    /// The active Score plugins (those PreScore did not skip), in the profile's order.
    fn active_scores(&self, state: &CycleState) -> Vec<&WeightedScore> {
        let skip = state.skip_score_plugins();
        self.score
            .iter()
            .filter(|s| skip.is_empty() || !skip.contains(&*s.wired.name))
            .collect()
    }

    /// The names of the Score plugins that score in this cycle (PreScore has run), in
    /// the profile's order: the columns of its [`ScoreTable`].
    pub(crate) fn active_score_plugins(&self, state: &CycleState) -> Vec<Arc<str>> {
        self.active_scores(state)
            .iter()
            .map(|s| s.wired.name.clone())
            .collect()
    }

    /// The positions in the profile's Score list of the Score plugins that score in
    /// this cycle (PreScore has run), in the order of
    /// [`Framework::active_score_plugins`].
    pub(crate) fn active_score_positions(&self, state: &CycleState) -> Vec<usize> {
        let skip = state.skip_score_plugins();
        (0..self.score.len())
            .filter(|&i| skip.is_empty() || !skip.contains(&*self.score[i].wired.name))
            .collect()
    }

    /// The Score plugin at `position` in the profile's Score list alone: its raw
    /// scores of `nodes` into `scores` (one per node), before NormalizeScore and
    /// weights, with the error [`Framework::raw_scores`] would give. Exact incremental
    /// scheduling keeps each plugin's scores apart ([`crate::incremental`]).
    pub(crate) fn score_with_plugin(
        &self,
        position: usize,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        scores: &mut Vec<i64>,
    ) -> Result<(), Status> {
        scores.clear();
        scores.resize(nodes.len(), 0);
        let Some(s) = self.score.get(position) else {
            return Ok(());
        };
        evaluated(
            &self.observer,
            &self.profile_name,
            &s.wired.name,
            "Score",
            nodes.len(),
        );
        let run = |column: &mut [i64], run: &[&NodeInfo]| {
            s.wired
                .plugin
                .score_nodes(state, pod, run, column)
                .map_err(|e| score_failed("running Score plugins", s, e))
        };
        if nodes.len() < PLUGIN_PARALLEL_THRESHOLD {
            return run(scores, nodes);
        }
        let piece = nodes.len().div_ceil(rayon::current_num_threads() * 4);
        scores
            .par_chunks_mut(piece)
            .zip(nodes.par_chunks(piece))
            .try_for_each(|(column, nodes)| run(column, nodes))
    }

    /// Each active Score plugin's weight and NormalizeScore rule in this cycle
    /// (PreScore has run), in the order of [`Framework::active_score_plugins`]: a plugin
    /// without NormalizeScore keeps its scores ([`Normalization::Identity`]).
    pub(crate) fn score_rules(&self, state: &CycleState) -> Vec<(i64, Normalization)> {
        self.active_scores(state)
            .iter()
            .map(|s| {
                let rule = s
                    .wired
                    .plugin
                    .score_extensions()
                    .map_or(Normalization::Identity, |e| e.normalization(state));
                (s.weight, rule)
            })
            .collect()
    }

    /// Every active Score plugin's score on `nodes`, before NormalizeScore and weights:
    /// a table whose totals are still 0.
    pub(crate) fn raw_scores(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[(usize, &NodeInfo)],
    ) -> Result<ScoreTable, Status> {
        let mut table = ScoreTable {
            plugins: self.active_score_plugins(state),
            node_indices: nodes.iter().map(|&(i, _)| i).collect(),
            scores: Vec::new(),
            totals: vec![0; nodes.len()],
        };
        self.raw_scores_into(state, pod, nodes, &mut table.scores)?;
        Ok(table)
    }

    /// [`Framework::raw_scores`] into `scores`, one column of `nodes.len()` rows per
    /// active Score plugin (as [`Framework::active_score_plugins`] lists them): a caller
    /// that scores again and again reuses one buffer rather than fresh memory each time.
    pub(crate) fn raw_scores_into(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[(usize, &NodeInfo)],
        scores: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let obs = sampled(&self.observer, state);
        let active = self.active_scores(state);
        let width = active.len();
        let rows = nodes.len();
        for s in &active {
            evaluated(
                &self.observer,
                &self.profile_name,
                &s.wired.name,
                "Score",
                rows,
            );
        }
        scores.clear();
        scores.resize(rows * width, 0);
        if width == 0 || rows == 0 {
            return Ok(());
        }
        // Scores for a run of nodes, given each plugin's column for the run: one
        // plugin at a time over the run (one call per plugin, not per node), or, in a
        // sampled cycle, one call per node and plugin so that each is timed.
        let score_run = |columns: &mut [&mut [i64]], run: &[(usize, &NodeInfo)]| {
            let run_nodes: Vec<&NodeInfo> = run.iter().map(|&(_, node)| node).collect();
            for (column, s) in columns.iter_mut().zip(&active) {
                if obs.is_some() {
                    for (cell, &(_, node)) in column.iter_mut().zip(run) {
                        *cell = timed(
                            obs,
                            &s.wired.name,
                            "Score",
                            |r: &Result<i64, Status>| {
                                r.as_ref().map_or_else(Status::code, |_| Code::Success)
                            },
                            || s.wired.plugin.score(state, pod, node),
                        )
                        .map_err(|e| score_failed("running Score plugins", s, e))?;
                    }
                } else {
                    s.wired
                        .plugin
                        .score_nodes(state, pod, &run_nodes, column)
                        .map_err(|e| score_failed("running Score plugins", s, e))?;
                }
            }
            Ok::<(), Status>(())
        };
        // A few contiguous runs per thread for large clusters (one rayon task per node
        // costs more than scoring the node), else one run.
        let piece = if rows >= PARALLEL_THRESHOLD {
            rows.div_ceil(rayon::current_num_threads() * 4)
        } else {
            rows
        };
        let mut runs: Vec<Vec<&mut [i64]>> = (0..rows.div_ceil(piece))
            .map(|_| Vec::with_capacity(width))
            .collect();
        for column in scores.chunks_mut(rows) {
            for (run, part) in runs.iter_mut().zip(column.chunks_mut(piece)) {
                run.push(part);
            }
        }
        if runs.len() > 1 {
            runs.into_par_iter()
                .zip(nodes.par_chunks(piece))
                .try_for_each(|(mut columns, run)| score_run(&mut columns, run))?;
        } else {
            for (mut columns, run) in runs.into_iter().zip(nodes.chunks(piece)) {
                score_run(&mut columns, run)?;
            }
        }
        Ok(())
    }

    /// Finishes a table of raw scores ([`Framework::raw_scores`]): normalises the
    /// columns of the plugins with NormalizeScore over all the table's nodes, then
    /// checks every score, multiplies it by its plugin's weight and adds it to the
    /// node's total.
    pub(crate) fn normalize_and_weigh(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        table: &mut ScoreTable,
    ) -> Result<(), Status> {
        let obs = sampled(&self.observer, state);
        let active = self.active_scores(state);
        let rows = table.len();
        if active.is_empty() || rows == 0 {
            return Ok(());
        }
        // Checks a plugin's final scores, multiplies them by its weight and adds them
        // to the nodes' totals.
        let weigh = |s: &WeightedScore, column: &mut [i64], totals: &mut [i64]| {
            for (cell, total) in column.iter_mut().zip(totals) {
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(cell) {
                    return Err(Status::error(format!(
                        "applying score defaultWeights on Score plugins: plugin {:?} returns an invalid score {cell}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        &*s.wired.name
                    )));
                }
                *cell *= s.weight;
                *total += *cell;
            }
            Ok(())
        };
        // As kube-scheduler's RunScorePlugins: every NormalizeScore first, then the
        // weights, plugin by plugin.
        for (column, s) in table.scores.chunks_mut(rows).zip(&active) {
            let Some(ext) = s.wired.plugin.score_extensions() else {
                continue;
            };
            let mut normalized: Vec<NodeScore> = table
                .node_indices
                .iter()
                .zip(column.iter())
                .map(|(&node_index, &score)| NodeScore { node_index, score })
                .collect();
            let status = timed(
                obs,
                &s.wired.name,
                "ScoreExtensionNormalize",
                Status::code,
                || ext.normalize_score(state, pod, &mut normalized),
            );
            if !status.is_success() {
                return Err(score_failed(
                    "running Normalize on Score plugins",
                    s,
                    status,
                ));
            }
            for (cell, ns) in column.iter_mut().zip(&normalized) {
                *cell = ns.score;
            }
        }
        for (column, s) in table.scores.chunks_mut(rows).zip(&active) {
            weigh(s, column, &mut table.totals)?;
        }
        Ok(())
    }
}

/// kube-scheduler's `RunScorePlugins` wraps a plugin's error in the phase it failed in:
/// Score, NormalizeScore, or the weights' range check.
fn score_failed(phase: &str, s: &WeightedScore, e: Status) -> Status {
    Status::error(format!(
        "{phase}: plugin {:?} failed with: {}",
        &*s.wired.name,
        e.message()
    ))
}
