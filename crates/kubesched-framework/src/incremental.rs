//! Exact incremental scheduling: every node filtered and scored, as the exhaustive
//! search does (FORMAT.md), without calling the plugins again on the nodes that did not
//! change.
//!
//! Two pods with the same signature ([`crate::signature`]) get the same Filter verdicts
//! and the same scores on the same nodes in the same state. When every PreFilter,
//! Filter, PreScore and Score plugin of the profile also answers for the pod node by
//! node ([`Plugin::node_scoped`](crate::Plugin::node_scoped): a node's verdict and raw
//! score read that node only), what was computed on a node stays right while the node's
//! generation ([`NodeInfo::generation`](crate::NodeInfo::generation)) is unchanged. The
//! cache keeps, per profile and signature, each node's verdict and raw scores with the
//! generation they were computed at; a cycle recomputes the nodes whose generation
//! changed (after a placement, one node) with the same plugin calls as a full pass, then
//! runs NormalizeScore and the weights over every feasible node, as every cycle does,
//! so the score table, the choice and the reasons are the full pass's.
//!
//! A signature is kept from the second pod of a run of it (`IncrementalCache::admit`):
//! pods that come alone cost what they cost without the cache. Memory is bounded:
//! entries beyond [`MEMORY_BUDGET`] bytes (estimated) are dropped,
//! least recently used first.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cycle_state::CycleState;
use crate::framework::{Framework, ScoreTable};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::signature::PodSignature;
use crate::snapshot::Snapshot;
use crate::status::Status;

/// About how many bytes the kept verdicts and scores may take.
pub const MEMORY_BUDGET: usize = 128 << 20;

/// What a cycle's verdicts and scores are kept under.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) profile: usize,
    pub(crate) signature: PodSignature,
}

/// One signature's verdicts and raw scores, per node (in node order).
struct Entry {
    /// The generation each node's verdict was computed at; 0 for never.
    filtered: Vec<u64>,
    /// Each node's rejection, `None` when it passed.
    rejected: Vec<Option<Box<Status>>>,
    /// The Score plugins the raw scores are of (those PreScore did not skip).
    plugins: Vec<Arc<str>>,
    /// The generation each node's raw scores were computed at; 0 for never.
    scored: Vec<u64>,
    /// Raw scores, node-major: `raw[node * plugins.len() + column]`.
    raw: Vec<i64>,
    /// When it was last used (the cache's use counter).
    last_used: u64,
}

impl Entry {
    fn new(nodes: usize) -> Entry {
        Entry {
            filtered: vec![0; nodes],
            rejected: vec![None; nodes],
            plugins: Vec::new(),
            scored: vec![0; nodes],
            raw: Vec::new(),
            last_used: 0,
        }
    }

    fn bytes(&self) -> usize {
        self.filtered.len() * (8 + 8 + 8) + self.raw.len() * 8
    }
}

/// How much the kept verdicts and scores saved ([`crate::Scheduler::incremental_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IncrementalStats {
    /// Cycles that filtered from what was kept.
    pub cycles: u64,
    /// Nodes those cycles filtered again (their generation had changed).
    pub nodes_filtered: u64,
    /// Nodes whose verdict those cycles took from what was kept.
    pub nodes_reused: u64,
}

/// The kept verdicts and scores of a [`crate::Scheduler`] (see the module doc).
#[derive(Default)]
pub(crate) struct IncrementalCache {
    entries: HashMap<Key, Entry>,
    /// The previous cycle's key, for [`IncrementalCache::admit`].
    previous: Option<Key>,
    uses: u64,
    pub(crate) stats: IncrementalStats,
}

impl IncrementalCache {
    /// The key a cycle keeps its verdicts under, from the key it may use
    /// (`candidate`, `None` for a pod that cannot be kept): a signature is kept from the
    /// second pod of a run (two pods of it one after the other, as a ReplicaSet's come)
    /// and used whenever it comes back after that. A pod whose signature comes alone
    /// runs the full pass and keeps nothing, so it costs what it did without the cache.
    pub(crate) fn admit(&mut self, candidate: Option<Key>) -> Option<Key> {
        let previous = std::mem::replace(&mut self.previous, candidate.clone());
        let key = candidate?;
        (self.entries.contains_key(&key) || previous.as_ref() == Some(&key)).then_some(key)
    }

    /// Filters every node (PreFilter has run and kept every node): the nodes whose
    /// generation changed since `key`'s last cycle are filtered again by
    /// `filter_nodes`, the full pass's filter; the others keep their verdict. Returns the feasible
    /// nodes in node order and the rejected ones with their status.
    pub(crate) fn filter(
        &mut self,
        key: &Key,
        snapshot: &Snapshot,
        filter_nodes: impl FnOnce(&[usize]) -> (Vec<usize>, Vec<(usize, Status)>),
    ) -> (Vec<usize>, Vec<(usize, Status)>) {
        let nodes = snapshot.num_nodes();
        self.uses += 1;
        let uses = self.uses;
        if self
            .entries
            .get(key)
            .is_none_or(|e| e.filtered.len() != nodes)
        {
            self.make_room(nodes);
        }
        let entry = self
            .entries
            .entry(key.clone())
            .or_insert_with(|| Entry::new(nodes));
        if entry.filtered.len() != nodes {
            *entry = Entry::new(nodes);
        }
        entry.last_used = uses;
        let generations = snapshot.generations();
        let changed: Vec<usize> = (0..nodes)
            .filter(|&i| entry.filtered[i] != generations[i])
            .collect();
        self.stats.cycles += 1;
        self.stats.nodes_filtered += changed.len() as u64;
        self.stats.nodes_reused += (nodes - changed.len()) as u64;
        if !changed.is_empty() {
            let (_, rejected) = filter_nodes(&changed);
            for &i in &changed {
                entry.filtered[i] = generations[i];
                entry.rejected[i] = None;
            }
            for (i, status) in rejected {
                entry.rejected[i] = Some(Box::new(status));
            }
        }
        let mut feasible = Vec::new();
        let mut rejected = Vec::new();
        for (i, r) in entry.rejected.iter().enumerate() {
            match r {
                None => feasible.push(i),
                Some(status) => rejected.push((i, (**status).clone())),
            }
        }
        (feasible, rejected)
    }

    /// The score table of `feasible` (in node order; PreScore has run): raw scores of
    /// the nodes that changed since `key`'s last cycle are computed again, as the full
    /// pass computes them; then NormalizeScore and the weights run over every feasible
    /// node, as in every cycle.
    pub(crate) fn score(
        &mut self,
        key: &Key,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[usize],
    ) -> Result<ScoreTable, Status> {
        let plugins = fwk.active_score_plugins(state);
        let width = plugins.len();
        let nodes = snapshot.num_nodes();
        let entry = self
            .entries
            .entry(key.clone())
            .or_insert_with(|| Entry::new(nodes));
        if entry.plugins != plugins || entry.scored.len() != nodes {
            entry.plugins = plugins.clone();
            entry.scored = vec![0; nodes];
            entry.raw = vec![0; nodes * width];
        }
        let generations = snapshot.generations();
        let stale: Vec<(usize, &NodeInfo)> = feasible
            .iter()
            .filter(|&&i| entry.scored[i] != generations[i])
            .map(|&i| (i, snapshot.node_at(i)))
            .collect();
        if !stale.is_empty() {
            let fresh = fwk.raw_scores(state, pod, &stale)?;
            let rows = fresh.len();
            for (row, &(i, _)) in stale.iter().enumerate() {
                for column in 0..width {
                    entry.raw[i * width + column] = fresh.scores[column * rows + row];
                }
                entry.scored[i] = generations[i];
            }
        }
        let rows = feasible.len();
        let mut table = ScoreTable {
            plugins,
            node_indices: feasible.to_vec(),
            scores: vec![0; rows * width],
            totals: vec![0; rows],
        };
        for (row, &i) in feasible.iter().enumerate() {
            for column in 0..width {
                table.scores[column * rows + row] = entry.raw[i * width + column];
            }
        }
        fwk.normalize_and_weigh(state, pod, &mut table)?;
        Ok(table)
    }

    /// Drops the least recently used entries until one more of `nodes` nodes fits the
    /// budget (an entry dropped is seen anew).
    fn make_room(&mut self, nodes: usize) {
        let one = Entry::new(nodes).bytes().max(1);
        loop {
            let used: usize = self.entries.values().map(Entry::bytes).sum();
            if used + one <= MEMORY_BUDGET || self.entries.is_empty() {
                return;
            }
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.entries.remove(&k);
            }
        }
    }
}
