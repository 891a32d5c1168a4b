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
//! When only the decision is wanted ([`crate::Scheduler::set_decisions_only`]) and every
//! active Score plugin declares its NormalizeScore rule
//! ([`ScoreExtensions::normalization`](crate::ScoreExtensions::normalization)), a cycle
//! does not even visit the nodes that did not change: the entry keeps each feasible
//! node's weighted total and a tournament tree over the totals (the best total, the
//! first in node order among equals, in O(log n) per changed node), and per
//! [`Normalization::ScaledToMax`] column a count of each raw score, so that the highest
//! raw score, which scales every node's score, is known at once; when it moves, every
//! total is computed again.
//!
//! A signature is kept from its second pod, wherever it comes
//! (`IncrementalCache::admit`): pods whose signature was not seen before cost what they
//! cost without the cache. Once most pods have come with a signature seen before, a new
//! signature is kept from its first pod, since it will likely come back (unless the
//! memory budget has had to drop an entry). Memory is bounded: entries beyond the
//! budget ([`default_budget`] unless [`crate::Scheduler::set_incremental_budget`] sets
//! one; estimated bytes) are dropped, least recently used first.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::cycle_state::CycleState;
use crate::framework::{Framework, ScoreTable};
use crate::node_info::NodeInfo;
use crate::plugin::{MAX_NODE_SCORE, MIN_NODE_SCORE, Normalization, scale_to_max_score};
use crate::pod_info::PodInfo;
use crate::signature::PodSignature;
use crate::snapshot::{ChangeMark, Snapshot};
use crate::status::Status;

/// The least memory the kept verdicts and scores may take by default, in bytes.
pub const MEMORY_BUDGET: usize = 128 << 20;

/// The default bytes per node of the budget beyond [`MEMORY_BUDGET`]: room for about
/// 400 signatures of a profile with three Score plugins (an entry takes about 51 bytes
/// per node with three raw scores, 8 more per Score plugin).
pub const BUDGET_PER_NODE: usize = 20 << 10;

/// How many bytes the kept verdicts and scores may take by default for a cluster of
/// `nodes` nodes: [`MEMORY_BUDGET`], or [`BUDGET_PER_NODE`] per node when that is more.
/// The budget grows with the cluster because an entry does: a fixed one holds fewer
/// signatures the more nodes there are, and signatures that no longer fit are computed
/// again and again (at 50,000 nodes, 128 MiB held about 50 of 315 and made a run 20
/// times slower).
pub fn default_budget(nodes: usize) -> usize {
    MEMORY_BUDGET.max(nodes.saturating_mul(BUDGET_PER_NODE))
}

/// How many signatures seen once are remembered, so that the second pod of one is
/// kept however many other pods came between (the memory of the first sightings
/// starts afresh when full).
const SEEN_CAPACITY: usize = 1 << 14;

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
    /// Each node's rejection, `None` when it passed (or was never filtered).
    rejected: Vec<Option<Box<Status>>>,
    /// How many filtered nodes passed.
    feasible: usize,
    /// How many kept statuses are errors rather than rejections.
    errors: usize,
    /// Where the snapshot's history stood when the verdicts were last brought up to
    /// date.
    mark: Option<ChangeMark>,
    /// The Score plugins the raw scores are of (those PreScore did not skip).
    plugins: Vec<Arc<str>>,
    /// Whether each node's raw scores were computed at the generation of its verdict.
    scored: Vec<bool>,
    /// Raw scores, node-major: `raw[node * plugins.len() + column]`.
    raw: Vec<i64>,
    /// The feasible nodes' totals, when a cycle ranked them.
    ranking: Option<Ranking>,
    /// The ranking was up to date when the previous cycle of this entry ended.
    synced: bool,
    /// This cycle may bring the ranking up to date from the nodes it filtered again
    /// (it was in sync when the cycle began).
    rankable: bool,
    /// Some active Score plugin's NormalizeScore has no declared rule for this
    /// signature: its cycles rank nothing.
    opaque: bool,
    /// When it was last used (the cache's use counter).
    last_used: u64,
}

impl Entry {
    fn new(nodes: usize) -> Entry {
        Entry {
            filtered: vec![0; nodes],
            rejected: vec![None; nodes],
            feasible: 0,
            errors: 0,
            mark: None,
            plugins: Vec::new(),
            scored: vec![false; nodes],
            raw: Vec::new(),
            ranking: None,
            synced: false,
            rankable: false,
            opaque: false,
            last_used: 0,
        }
    }

    /// The bytes of a new entry of `nodes` nodes: a generation, a verdict and a
    /// scores flag per node.
    fn base_bytes(nodes: usize) -> usize {
        nodes * (8 + 8 + 1)
    }

    fn bytes(&self) -> usize {
        Entry::base_bytes(self.filtered.len())
            + self.raw.len() * 8
            + self.ranking.as_ref().map_or(0, Ranking::bytes)
    }

    /// Node `node`'s raw scores, one per plugin.
    fn raw_of(&self, node: usize) -> &[i64] {
        let width = self.plugins.len();
        &self.raw[node * width..(node + 1) * width]
    }

    fn passed(&self, node: usize) -> bool {
        self.filtered[node] != 0 && self.rejected[node].is_none()
    }

    /// Computes the raw scores of `stale` nodes again, as the full pass does
    /// (`scratch` holds them on the way).
    fn rescore(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        stale: &[usize],
        scratch: &mut Vec<i64>,
    ) -> Result<(), Status> {
        if stale.is_empty() {
            return Ok(());
        }
        let width = self.plugins.len();
        let nodes: Vec<(usize, &NodeInfo)> =
            stale.iter().map(|&i| (i, snapshot.node_at(i))).collect();
        fwk.raw_scores_into(state, pod, &nodes, scratch)?;
        let rows = nodes.len();
        for (row, &i) in stale.iter().enumerate() {
            for column in 0..width {
                self.raw[i * width + column] = scratch[column * rows + row];
            }
            self.scored[i] = true;
        }
        Ok(())
    }

    /// Makes the raw scores those of `plugins`, dropping what was kept for others.
    fn use_plugins(&mut self, plugins: Vec<Arc<str>>) {
        if self.plugins != plugins {
            self.raw = vec![0; self.scored.len() * plugins.len()];
            self.scored.fill(false);
            self.plugins = plugins;
            self.ranking = None;
        }
    }
}

/// The feasible nodes' weighted totals, with the best of them at hand.
struct Ranking {
    /// Each column's weight and NormalizeScore rule (none opaque).
    rules: Vec<(i64, Normalization)>,
    /// Per [`Normalization::ScaledToMax`] column, how many ranked nodes have each raw
    /// score (empty for the other columns).
    counts: Vec<BTreeMap<i64, u32>>,
    /// The highest raw score (at least 0) of each scaled column, as the totals were
    /// computed with.
    maxima: Vec<i64>,
    /// Whether each node is ranked (it passed the filters and has a total).
    ranked: Vec<bool>,
    /// The best total and its node.
    best: Tournament,
}

impl Ranking {
    /// An empty ranking of `nodes` nodes under `rules` (one per column).
    fn new(rules: Vec<(i64, Normalization)>, nodes: usize) -> Ranking {
        let width = rules.len();
        Ranking {
            counts: vec![BTreeMap::new(); width],
            maxima: vec![0; width],
            ranked: vec![false; nodes],
            best: Tournament::new(nodes),
            rules,
        }
    }

    fn bytes(&self) -> usize {
        self.ranked.len() + self.best.bytes()
    }

    /// The highest raw score of column `c` among the ranked nodes, at least 0 (the max
    /// that kube-scheduler's `DefaultNormalizeScore` scales with).
    fn maximum(&self, c: usize) -> i64 {
        self.counts[c]
            .last_key_value()
            .map_or(0, |(&raw, _)| raw)
            .max(0)
    }

    fn count(&mut self, raw: &[i64], sign: i32) {
        for (c, (_, rule)) in self.rules.iter().enumerate() {
            if let Normalization::ScaledToMax { .. } = rule {
                let n = self.counts[c].entry(raw[c]).or_default();
                if sign > 0 {
                    *n += 1;
                } else {
                    *n -= 1;
                    if *n == 0 {
                        self.counts[c].remove(&raw[c]);
                    }
                }
            }
        }
    }

    /// A node's total from its raw scores, `None` when a normalised score is out of
    /// 0..=100 (the full pass reports that error).
    fn total(&self, raw: &[i64]) -> Option<i64> {
        let mut total = 0;
        for (c, &(weight, rule)) in self.rules.iter().enumerate() {
            let score = match rule {
                Normalization::ScaledToMax { reverse } => {
                    scale_to_max_score(raw[c], self.maxima[c], reverse)
                }
                _ => raw[c],
            };
            if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&score) {
                return None;
            }
            total += score * weight;
        }
        Some(total)
    }
}

/// A tournament tree over the nodes' totals: the winner is the highest total, the
/// first in node order among equals (FORMAT.md's pick); updating one node costs
/// O(log n). The leaves are blocks of [`Tournament::BLOCK`] nodes, whose winner is found
/// by looking at each, and each match keeps its winner's total, so that the tree takes
/// four bytes per node and a climb reads only the tree (which stays in cache when the
/// totals of 50,000 nodes do not).
struct Tournament {
    /// Each node's total; [`Tournament::OUT`] for a node out of the running.
    totals: Vec<i64>,
    /// The winner of each match: block `b`'s winner is at `blocks + b`, and the match
    /// at `k` is between `2k` and `2k + 1`, so that every block plays up to the final
    /// at 1 whatever the number of blocks.
    tree: Vec<Seat>,
}

/// A node and its total, as a match of the [`Tournament`] keeps its winner.
#[derive(Clone, Copy, Debug, Default)]
struct Seat {
    total: i64,
    node: u32,
}

impl Seat {
    /// The winner of a match: the higher total, the first in node order among equals.
    fn winner(self, other: Seat) -> Seat {
        if (other.total, Reverse(other.node)) > (self.total, Reverse(self.node)) {
            other
        } else {
            self
        }
    }
}

impl Tournament {
    /// The total of a node out of the running, below every real total (scores are
    /// within 0..=100 and weights positive).
    const OUT: i64 = i64::MIN;

    /// How many nodes a leaf of the tree holds.
    const BLOCK: usize = 8;

    fn new(nodes: usize) -> Tournament {
        let mut best = Tournament {
            totals: Vec::new(),
            tree: Vec::new(),
        };
        best.fill(std::iter::repeat_n(None, nodes));
        best
    }

    fn bytes(&self) -> usize {
        self.totals.len() * 8 + self.tree.len() * std::mem::size_of::<Seat>()
    }

    fn blocks(&self) -> usize {
        self.totals.len().div_ceil(Self::BLOCK)
    }

    /// The winner among block `b`'s nodes.
    fn block_winner(&self, b: usize) -> Seat {
        let start = b * Self::BLOCK;
        let end = (start + Self::BLOCK).min(self.totals.len());
        let node = (start + 1..end).fold(start, |best, i| {
            if self.totals[i] > self.totals[best] {
                i
            } else {
                best
            }
        });
        Seat {
            total: self.totals[node],
            node: node as u32,
        }
    }

    /// Sets every node's total at once (`None` for a node out of the running), in O(n).
    fn fill(&mut self, totals: impl Iterator<Item = Option<i64>>) {
        self.totals.clear();
        self.totals.extend(totals.map(|t| t.unwrap_or(Self::OUT)));
        let blocks = self.blocks();
        self.tree.clear();
        self.tree.resize(blocks, Seat::default());
        for b in 0..blocks {
            let winner = self.block_winner(b);
            self.tree.push(winner);
        }
        for at in (1..blocks).rev() {
            self.tree[at] = self.tree[2 * at].winner(self.tree[2 * at + 1]);
        }
    }

    /// Sets a node's total; [`Tournament::refresh`] then brings the matches up to date.
    fn set_total(&mut self, node: usize, total: Option<i64>) {
        self.totals[node] = total.unwrap_or(Self::OUT);
    }

    /// Plays again the matches of `nodes` (in node order), whose totals changed: each
    /// match once per round however many of them it holds, so that the upper rounds,
    /// shared by all, are played once.
    fn refresh(&mut self, nodes: &[usize]) {
        let blocks = self.blocks();
        let mut round: Vec<usize> = nodes.iter().map(|&i| blocks + i / Self::BLOCK).collect();
        round.dedup();
        for &at in &round {
            self.tree[at] = self.block_winner(at - blocks);
        }
        // The leaves span two depths when the blocks are not a power of two, so a
        // round may hold a match and its parent; the parent, played before its child,
        // is played again in the next round, the child's parent.
        while round.last().is_some_and(|&at| at > 1) {
            for at in &mut round {
                *at /= 2;
            }
            round.dedup();
            for &at in round.iter().filter(|&&at| at >= 1) {
                self.tree[at] = self.tree[2 * at].winner(self.tree[2 * at + 1]);
            }
        }
    }

    fn best(&self) -> Option<usize> {
        // With one block, its leaf is at 1.
        let winner = self.tree.get(1)?;
        (winner.total != Self::OUT).then_some(winner.node as usize)
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
    /// Cycles that chose from kept totals, without a score table.
    pub ranked: u64,
}

/// The kept verdicts and scores of a [`crate::Scheduler`] (see the module doc).
#[derive(Default)]
pub(crate) struct IncrementalCache {
    entries: HashMap<Key, Entry>,
    /// The keys seen once and not kept, for [`IncrementalCache::admit`].
    seen: HashSet<Key>,
    /// How many pods [`IncrementalCache::admit`] was asked about, and how many of them
    /// came with a signature seen before.
    sightings: u64,
    repeats: u64,
    /// The memory budget has made the cache drop an entry: signatures are then kept
    /// from their second pod only, since an entry kept at the first may be dropped
    /// before its second comes.
    full: bool,
    /// The memory budget in bytes; `None` for [`default_budget`] of the cluster.
    pub(crate) budget: Option<usize>,
    uses: u64,
    /// The raw scores of a cycle's stale nodes on their way into an entry.
    scratch: Vec<i64>,
    pub(crate) stats: IncrementalStats,
}

impl IncrementalCache {
    /// The key a cycle keeps its verdicts under, from the key it may use
    /// (`candidate`, `None` for a pod that cannot be kept): a signature is kept from its
    /// second pod (the next of a run, as a ReplicaSet's come, or one that comes back
    /// after others, as pods of a few shapes do) and used whenever it comes back after
    /// that. A pod whose signature was not seen before runs the full pass and keeps
    /// nothing, so pods that never repeat cost what they did without the cache; but
    /// while more than half of the pods so far came with a signature seen before, a new
    /// one is kept at once (building an entry costs about two full passes, and its
    /// second pod would build it anyway), unless the memory budget has already made
    /// the cache drop an entry.
    pub(crate) fn admit(&mut self, candidate: Option<Key>) -> Option<Key> {
        let key = candidate?;
        self.sightings += 1;
        if self.entries.contains_key(&key) || self.seen.remove(&key) {
            self.repeats += 1;
            return Some(key);
        }
        if self.repeats * 2 > self.sightings && !self.full {
            return Some(key);
        }
        if self.seen.len() >= SEEN_CAPACITY {
            self.seen.clear();
        }
        self.seen.insert(key);
        None
    }

    /// Brings `key`'s verdicts up to date (PreFilter has run and kept every node): the
    /// nodes whose generation changed since its last cycle are filtered again by
    /// `filter_nodes`, the full pass's filter (called even when none changed); the
    /// others keep their verdict. Returns the nodes filtered again.
    pub(crate) fn filter(
        &mut self,
        key: &Key,
        snapshot: &Snapshot,
        filter_nodes: impl FnOnce(&[usize]) -> (Vec<usize>, Vec<(usize, Status)>),
    ) -> Vec<usize> {
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
        entry.rankable = std::mem::take(&mut entry.synced);
        let generations = snapshot.generations();
        // The nodes whose generation changed: from the snapshot's log of changes when
        // it has them, else by comparing every node's.
        let logged = entry.mark.and_then(|m| snapshot.nodes_changed_since(m));
        let changed: Vec<usize> = match logged {
            Some(logged) => {
                let mut changed: Vec<usize> = logged
                    .iter()
                    .copied()
                    .filter(|&i| entry.filtered[i] != generations[i])
                    .collect();
                changed.sort_unstable();
                changed.dedup();
                changed
            }
            None => entry
                .filtered
                .iter()
                .zip(generations)
                .enumerate()
                .filter(|(_, (kept, now))| kept != now)
                .map(|(i, _)| i)
                .collect(),
        };
        entry.mark = Some(snapshot.change_mark());
        self.stats.cycles += 1;
        self.stats.nodes_filtered += changed.len() as u64;
        self.stats.nodes_reused += (nodes - changed.len()) as u64;
        let (_, rejected) = filter_nodes(&changed);
        for &i in &changed {
            if entry.passed(i) {
                entry.feasible -= 1;
            }
            if let Some(status) = entry.rejected[i].take()
                && !status.is_rejected()
            {
                entry.errors -= 1;
            }
            entry.filtered[i] = generations[i];
            entry.scored[i] = false;
        }
        for (i, status) in rejected {
            if !status.is_rejected() {
                entry.errors += 1;
            }
            entry.rejected[i] = Some(Box::new(status));
        }
        entry.feasible += changed.iter().filter(|&&i| entry.passed(i)).count();
        changed
    }

    /// `key`'s verdicts ([`IncrementalCache::filter`] has run in this cycle): the
    /// feasible nodes in node order and the rejected ones with their status.
    pub(crate) fn verdicts(&self, key: &Key) -> (Vec<usize>, Vec<(usize, Status)>) {
        let Some(entry) = self.entries.get(key) else {
            return (Vec::new(), Vec::new());
        };
        let mut feasible = Vec::with_capacity(entry.feasible);
        let mut rejected = Vec::new();
        for (i, r) in entry.rejected.iter().enumerate() {
            match r {
                None => feasible.push(i),
                Some(status) => rejected.push((i, (**status).clone())),
            }
        }
        (feasible, rejected)
    }

    /// Whether this cycle of `key` may choose from kept totals
    /// ([`IncrementalCache::rank`]): more than one node passed, no filter failed, and
    /// its Score plugins' NormalizeScore rules are known.
    pub(crate) fn may_rank(&self, key: &Key) -> bool {
        self.entries
            .get(key)
            .is_some_and(|e| e.feasible > 1 && e.errors == 0 && !e.opaque)
    }

    /// How many nodes passed `key`'s filters.
    pub(crate) fn feasible_count(&self, key: &Key) -> usize {
        self.entries.get(key).map_or(0, |e| e.feasible)
    }

    /// The best feasible node of `key` (PreScore has run; `changed` are the nodes
    /// [`IncrementalCache::filter`] filtered again in this cycle): the node the full
    /// pass picks with [`crate::HostSelection::FirstInNodeOrder`]. Only the changed
    /// nodes are scored and totalled again, unless the ranking was not kept in the
    /// previous cycle or a scaled column's highest raw score moved. `Ok(None)` when it
    /// cannot say: a NormalizeScore rule is opaque, or a score is out of range (the
    /// full pass reports that error).
    pub(crate) fn rank(
        &mut self,
        key: &Key,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        changed: &[usize],
    ) -> Result<Option<usize>, Status> {
        let Some(entry) = self.entries.get_mut(key) else {
            return Ok(None);
        };
        let rules = fwk.score_rules(state);
        if rules.iter().any(|(_, r)| *r == Normalization::Opaque) {
            entry.opaque = true;
            entry.ranking = None;
            return Ok(None);
        }
        entry.use_plugins(fwk.active_score_plugins(state));
        let width = entry.plugins.len();
        let nodes = entry.filtered.len();
        let kept = entry
            .ranking
            .take()
            .filter(|r| entry.rankable && r.rules == rules);
        // The nodes to score and total again: those filtered again in this cycle when
        // the ranking was kept, else all (a new ranking).
        let fresh = kept.is_none();
        let (mut ranking, touched) = match kept {
            Some(mut ranking) => {
                // Out with the changed nodes' old scores.
                for &i in changed {
                    if ranking.ranked[i] {
                        ranking.count(entry.raw_of(i), -1);
                        ranking.ranked[i] = false;
                    }
                }
                (ranking, changed.to_vec())
            }
            None => (Ranking::new(rules, nodes), (0..nodes).collect()),
        };
        let stale: Vec<usize> = touched
            .iter()
            .copied()
            .filter(|&i| entry.passed(i) && !entry.scored[i])
            .collect();
        entry.rescore(fwk, state, pod, snapshot, &stale, &mut self.scratch)?;
        for &i in &touched {
            if entry.passed(i) {
                ranking.count(entry.raw_of(i), 1);
                ranking.ranked[i] = true;
            }
        }
        let moved = (0..width).any(|c| ranking.maximum(c) != ranking.maxima[c]);
        let ok = if fresh || moved {
            retotal(&mut ranking, entry)
        } else {
            let ok = touched.iter().all(|&i| {
                let total = ranking.ranked[i].then(|| ranking.total(entry.raw_of(i)));
                if total == Some(None) {
                    return false;
                }
                ranking.best.set_total(i, total.flatten());
                true
            });
            ranking.best.refresh(&touched);
            ok
        };
        let result = ok.then_some(ranking);
        let Some(ranking) = result else {
            return Ok(None);
        };
        let best = ranking.best.best();
        entry.ranking = Some(ranking);
        entry.synced = true;
        self.stats.ranked += 1;
        Ok(best)
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
        let nodes = snapshot.num_nodes();
        let entry = self
            .entries
            .entry(key.clone())
            .or_insert_with(|| Entry::new(nodes));
        entry.use_plugins(fwk.active_score_plugins(state));
        let stale: Vec<usize> = feasible
            .iter()
            .copied()
            .filter(|&i| !entry.scored[i])
            .collect();
        entry.rescore(fwk, state, pod, snapshot, &stale, &mut self.scratch)?;
        let width = entry.plugins.len();
        let rows = feasible.len();
        let mut table = ScoreTable {
            plugins: entry.plugins.clone(),
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
        let one = Entry::base_bytes(nodes).max(1);
        let budget = self.budget.unwrap_or_else(|| default_budget(nodes));
        let mut used: usize = self.entries.values().map(Entry::bytes).sum();
        while used + one > budget {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                return;
            };
            if let Some(dropped) = self.entries.remove(&oldest) {
                used -= dropped.bytes();
                self.full = true;
            }
        }
    }
}

/// Every ranked node's total again, from `entry`'s raw scores with the scaled columns'
/// current maxima; `false` when a score is out of range.
fn retotal(ranking: &mut Ranking, entry: &Entry) -> bool {
    for c in 0..ranking.maxima.len() {
        ranking.maxima[c] = ranking.maximum(c);
    }
    let mut totals = Vec::with_capacity(ranking.ranked.len());
    for (i, &ranked) in ranking.ranked.iter().enumerate() {
        if !ranked {
            totals.push(None);
            continue;
        }
        match ranking.total(entry.raw_of(i)) {
            Some(t) => totals.push(Some(t)),
            None => return false,
        }
    }
    ranking.best.fill(totals.into_iter());
    true
}

#[cfg(test)]
mod tests {
    use super::{Entry, IncrementalCache, Key, Tournament};
    use crate::signature::{PodSignature, SignFragment};

    /// Whether a pod of `shape` is kept; a kept one gets its entry, as its cycle's
    /// filter makes it.
    fn kept(cache: &mut IncrementalCache, shape: u32) -> bool {
        let signature = PodSignature::from_fragments([SignFragment {
            key: "shape",
            value: shape.to_string(),
        }]);
        let key = Key {
            profile: 0,
            signature,
        };
        let Some(key) = cache.admit(Some(key)) else {
            return false;
        };
        cache.entries.entry(key).or_insert_with(|| Entry::new(1));
        true
    }

    #[test]
    fn a_signature_is_kept_from_its_second_pod_until_most_pods_repeat_one() {
        let mut cache = IncrementalCache::default();
        assert!(cache.admit(None).is_none());
        // Pods that never repeat keep nothing.
        for shape in 0..10 {
            assert!(!kept(&mut cache, shape), "shape {shape}");
        }
        // The second pod of a signature keeps it, wherever it comes.
        assert!(kept(&mut cache, 3));
        assert!(kept(&mut cache, 0));
        assert!(!kept(&mut cache, 11));
        // Repeats until they are most of the pods so far (11 new, 12 repeats is not
        // yet more than half with the next)...
        for _ in 0..10 {
            assert!(kept(&mut cache, 3));
        }
        assert!(!kept(&mut cache, 12));
        assert!(kept(&mut cache, 3));
        assert!(kept(&mut cache, 3));
        // ... and then a new signature is kept from its first pod (12 new, 14 repeats).
        assert!(kept(&mut cache, 100));
        // Not once the memory budget has dropped an entry.
        cache.full = true;
        assert!(!kept(&mut cache, 101));
        assert!(kept(&mut cache, 101));
    }

    /// The first node with the highest total, by looking at every node.
    fn first_best(totals: &[Option<i64>]) -> Option<usize> {
        let best = totals.iter().flatten().max()?;
        totals.iter().position(|t| t.as_ref() == Some(best))
    }

    #[test]
    fn tournament_picks_the_first_best_whatever_the_number_of_nodes() {
        for nodes in 0..90usize {
            let mut totals: Vec<Option<i64>> = (0..nodes)
                .map(|i| (i % 3 != 0).then_some((i as i64 * 7) % 5))
                .collect();
            let mut best = Tournament::new(nodes);
            assert_eq!(best.best(), None, "{nodes} empty nodes");
            best.fill(totals.iter().copied());
            assert_eq!(best.best(), first_best(&totals), "{nodes} nodes filled");
            // Updates a few nodes at a time (one, then two, ...), raising, lowering and
            // dropping totals.
            for step in 0..3 * nodes {
                let mut batch: Vec<usize> = (0..step % 5 + 1)
                    .map(|k| (step * 11 + k * 7) % nodes)
                    .collect();
                batch.sort_unstable();
                batch.dedup();
                for (k, &node) in batch.iter().enumerate() {
                    let total = ((step + k) % 4 != 3).then_some(((step * 13 + k) % 9) as i64);
                    totals[node] = total;
                    best.set_total(node, total);
                }
                best.refresh(&batch);
                assert_eq!(
                    best.best(),
                    first_best(&totals),
                    "{nodes} nodes, step {step}"
                );
            }
        }
    }
}
