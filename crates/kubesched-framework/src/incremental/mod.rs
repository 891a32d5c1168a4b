//! Exact incremental scheduling: every node filtered and scored, as the exhaustive
//! search does (FORMAT.md), without calling the plugins again on the nodes that did not
//! change.
//!
//! Two pods with the same signature ([`crate::signature`]) get the same Filter verdicts
//! and the same scores on the same nodes in the same state. When every PreFilter,
//! Filter, PreScore and Score plugin of the profile also answers for the pod node by
//! node ([`Plugin::node_scoped`](crate::Plugin::node_scoped): a node's verdict and raw
//! score read that node only), what was computed on a node stays right while the node
//! is unchanged.
//!
//! What is kept is split by plugin (`columns.rs`): each Filter plugin's verdicts and each
//! Score plugin's raw scores, node by node, under that plugin's own part of the
//! signature ([`Plugin::sign_pod_exact`](crate::Plugin::sign_pod_exact)), shared by
//! every signature with that part, each answer with the generation of the node it was
//! computed at. A plugin that reads the pods on a node
//! ([`Plugin::reads_node_pods`](crate::Plugin::reads_node_pods)) is asked again on a
//! node after a placement there; one that reads only the node object (taints, labels,
//! images) is not. So a pod of a shape never seen before costs only the plugins whose
//! part is new (with pods alike but for their requests, NodeResourcesFit's), and a
//! cycle after a placement asks only the plugins that read pods, on the nodes that
//! changed.
//!
//! Per profile and signature, an entry keeps which columns make it up, each node's
//! verdict (the first rejection in the profile's order, as a pass over every plugin
//! gives it) and where the snapshot's history of changes stood at its last cycle; a
//! cycle brings the verdicts of the nodes changed since up to date, then runs
//! NormalizeScore and the weights over every feasible node, as every cycle does, so the
//! score table, the choice and the reasons are the full pass's.
//!
//! When only the decision is wanted ([`crate::Scheduler::set_decisions_only`]) and every
//! active Score plugin declares its NormalizeScore rule
//! ([`ScoreExtensions::normalization`](crate::ScoreExtensions::normalization)), a cycle
//! does not even visit the nodes that did not change: the entry keeps each feasible
//! node's weighted total and a tournament tree over the totals (`ranking.rs`: the best
//! total, the first in node order among equals, in O(log n) per changed node), and per
//! [`Normalization::ScaledToMax`] or [`Normalization::MinMax`] column a count of each raw
//! score, so that the highest raw score (and the lowest, for min–max), which scales
//! every node's score, is known at once; when it moves, every total is computed again.
//!
//! A signature is kept from its second pod, wherever it comes
//! (`IncrementalCache::admit`): pods whose signature was not seen before cost what they
//! cost without the cache. Once most pods have come with a signature seen before, a new
//! signature is kept from its first pod, since it will likely come back (unless the
//! memory budget has had to drop an entry). Memory is bounded: entries beyond the
//! budget ([`default_budget`] unless [`crate::Scheduler::set_incremental_budget`] sets
//! one; estimated bytes) are dropped, least recently used first, and a column with the
//! last entry that uses it.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::framework::ScoreTable;
use crate::node_info::NodeInfo;
use crate::plugin::Normalization;
use crate::signature::PodSignature;
use crate::snapshot::{ChangeMark, Move, Snapshot};
use crate::status::Status;

mod columns;
mod moves;
mod ranking;

pub(crate) use columns::Cycle;
use columns::{Column, ColumnKey, Columns, NodeSet, Point, Verdict};
use moves::follow_moves;
use ranking::Ranking;

/// The least memory the kept verdicts and scores may take by default, in bytes.
pub const MEMORY_BUDGET: usize = 128 << 20;

/// The default bytes per node of the budget beyond [`MEMORY_BUDGET`]: room for more
/// than 1,000 signatures (an entry takes 4 bytes per node, and the columns it shares
/// with others more).
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

/// Columns that no kept signature uses may take one in this many bytes of the budget,
/// for the pods to come.
const IDLE_SHARE: usize = 4;

/// Transient entries (of signatures seen once) may take one in this many bytes of the
/// budget, for the second pods to come.
const TRANSIENT_SHARE: usize = 4;

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

/// The nodes [`IncrementalCache::filter`] found changed since the entry's last cycle.
#[derive(Debug)]
pub(crate) enum Changed {
    /// Every node: the entry is new, or the snapshot's history could not say which.
    Every,
    /// These nodes, in node order.
    Nodes(Vec<usize>),
}

/// One signature's verdicts and the columns they come from.
struct Entry {
    /// The Filter plugins the signature's pods run (PreFilter did not skip them):
    /// their positions in the profile's Filter list and their columns, in that order.
    filters: Vec<(usize, usize)>,
    /// Each node's verdict, from the filter columns.
    verdicts: Vec<Verdict>,
    /// How many nodes passed.
    feasible: usize,
    /// How many nodes a filter failed on.
    errors: usize,
    /// Where the snapshot's history stood when the verdicts were last brought up to
    /// date.
    mark: Option<ChangeMark>,
    /// Where the snapshot's history of moves stood when the verdicts and the ranking
    /// were last put in its node order ([`Entry::follow`]).
    layout: Option<ChangeMark>,
    /// The Score plugins that score the signature's pods (PreScore did not skip them),
    /// as the score table names them.
    plugins: Vec<Arc<str>>,
    /// Their positions in the profile's Score list and their columns, in that order.
    scores: Vec<(usize, usize)>,
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
    /// Built for a pod whose signature was seen for the first time, and not used by a
    /// second pod yet: one of the cache's transient entries.
    transient: bool,
    /// In the entry's first cycle, when it took its verdicts from a sibling (an entry
    /// with the same Filter columns): the sibling's key and the mark it had, so that
    /// the cycle may take the sibling's ranking too.
    sibling: Option<(Key, ChangeMark)>,
}

impl Entry {
    fn new(nodes: usize, filters: Vec<(usize, usize)>) -> Entry {
        Entry {
            filters,
            verdicts: vec![Verdict::Unknown; nodes],
            feasible: 0,
            errors: 0,
            mark: None,
            layout: None,
            plugins: Vec::new(),
            scores: Vec::new(),
            ranking: None,
            synced: false,
            rankable: false,
            opaque: false,
            last_used: 0,
            transient: false,
            sibling: None,
        }
    }

    /// A new entry with the same Filter columns as `sibling` (`filters`), with its
    /// verdicts as of its last cycle.
    fn after(sibling: &Entry, filters: Vec<(usize, usize)>) -> Entry {
        Entry {
            verdicts: sibling.verdicts.clone(),
            feasible: sibling.feasible,
            errors: sibling.errors,
            mark: sibling.mark,
            layout: sibling.layout,
            ..Entry::new(0, filters)
        }
    }

    /// The bytes an entry of `nodes` nodes takes once ranked (with no scaled column
    /// that reads pods, as in-tree profiles have), before the columns it shares.
    fn base_bytes(nodes: usize) -> usize {
        nodes * (1 + Ranking::bytes_per_node(0))
    }

    fn bytes(&self) -> usize {
        self.verdicts.len() + self.ranking.as_ref().map_or(0, Ranking::bytes)
    }

    /// Puts the verdicts and the ranking in the snapshot's node order: when nodes
    /// were added or removed since the entry was last in it, each verdict and total
    /// moves with its node (an added node's verdict is unknown, and the change log
    /// lists it), as the entry's columns do. Where the moves are not known, or a
    /// column could not follow them, the entry starts again from its columns: every
    /// verdict unknown, no ranking, every node to be found stale.
    fn follow(&mut self, columns: &mut Columns, snapshot: &Snapshot) {
        let now = snapshot.moves_mark();
        if self.layout == Some(now) {
            return;
        }
        let mut followed = true;
        for &(_, c) in self.filters.iter().chain(&self.scores) {
            followed &= columns.follow(c, snapshot);
        }
        let moves = self.layout.and_then(|mark| snapshot.moves_since(mark));
        let followed = followed && moves.is_some_and(|moves| self.apply_moves(moves, columns));
        if !followed {
            let nodes = snapshot.num_nodes();
            self.verdicts.clear();
            self.verdicts.resize(nodes, Verdict::Unknown);
            self.feasible = 0;
            self.errors = 0;
            self.mark = None;
            self.ranking = None;
            self.synced = false;
        }
        self.layout = Some(now);
    }

    /// Moves the verdicts and the ranking as `moves` moved the nodes; `false` when a
    /// move names a position the entry does not have.
    fn apply_moves(&mut self, moves: &[Move], columns: &Columns) -> bool {
        let followed = follow_moves(self.verdicts.len(), moves, |one| match one {
            Move::Appended => self.verdicts.push(Verdict::Unknown),
            Move::Removed(i) => match self.verdicts.remove(i) {
                Verdict::Passed => self.feasible -= 1,
                Verdict::Failed => self.errors -= 1,
                _ => {}
            },
        });
        if !followed {
            return false;
        }
        let scores = self.score_columns(columns);
        if let Some(ranking) = &mut self.ranking
            && !ranking.follow(moves, &scores)
        {
            self.ranking = None;
        }
        true
    }

    fn passed(&self, node: usize) -> bool {
        self.verdicts[node] == Verdict::Passed
    }

    /// Whether every column the entry uses is of `nodes` nodes, as the entry is.
    fn fits(&self, columns: &Columns, nodes: usize) -> bool {
        self.verdicts.len() == nodes
            && (self.filters.iter().chain(&self.scores))
                .all(|&(_, c)| columns.get(c).len() == nodes)
    }

    /// The entry's filter columns, in the profile's order.
    fn filter_columns<'a>(&self, columns: &'a Columns) -> Vec<&'a Column> {
        self.filters.iter().map(|&(_, c)| columns.get(c)).collect()
    }

    /// Every node's verdict again from `filters` (the entry's filter columns), column
    /// by column: a node's is the first rejection in the profile's order.
    fn derive_all_verdicts(&mut self, filters: &[&Column]) {
        let rest = match filters.split_first() {
            Some((first, rest)) => {
                self.verdicts.copy_from_slice(first.verdicts());
                rest
            }
            None => {
                self.verdicts.fill(Verdict::Passed);
                &[]
            }
        };
        for column in rest {
            for (verdict, &answer) in self.verdicts.iter_mut().zip(column.verdicts()) {
                if *verdict == Verdict::Passed {
                    *verdict = answer;
                }
            }
        }
        let (mut feasible, mut errors) = (0, 0);
        for &verdict in &self.verdicts {
            feasible += usize::from(verdict == Verdict::Passed);
            errors += usize::from(verdict == Verdict::Failed);
        }
        (self.feasible, self.errors) = (feasible, errors);
    }

    /// The entry's score columns, in the score table's order.
    fn score_columns<'a>(&self, columns: &'a Columns) -> Vec<&'a Column> {
        self.scores.iter().map(|&(_, c)| columns.get(c)).collect()
    }

    /// Makes the Score columns those of the plugins that score this cycle (PreScore
    /// has run), dropping what was kept for others; `None` when a plugin cannot sign
    /// the pod (its columns then stay empty).
    fn use_score_plugins(
        &mut self,
        columns: &mut Columns,
        profile: usize,
        cycle: Cycle,
    ) -> Option<()> {
        let Cycle {
            fwk, state, pod, ..
        } = cycle;
        let positions = fwk.active_score_positions(state);
        if self.scores.len() == positions.len()
            && self.scores.iter().zip(&positions).all(|(s, &p)| s.0 == p)
        {
            return Some(());
        }
        for (_, c) in self.scores.drain(..) {
            columns.release(c);
        }
        self.plugins.clear();
        self.ranking = None;
        for p in positions {
            let name = fwk.score_plugins()[p].wired.name.clone();
            let (part, reads_pods) = fwk.plugin_part(&name, pod)?;
            let key = ColumnKey {
                profile,
                point: Point::Score,
                position: p,
                part,
                reads_pods,
            };
            self.scores.push((p, columns.acquire(key, cycle.snapshot)));
            self.plugins.push(name);
        }
        Some(())
    }

    /// Brings the raw scores of `nodes` that passed up to date in every Score column.
    fn rescore(
        &self,
        columns: &mut Columns,
        cycle: Cycle,
        nodes: &[usize],
        scratch: &mut Scratch,
    ) -> Result<(), Status> {
        for &(position, c) in &self.scores {
            let column: &mut Column = columns.get_mut(c);
            let passed = nodes.iter().copied().filter(|&i| self.passed(i));
            let stale = column.stale(cycle.snapshot, passed);
            column.score(cycle, position, &stale, &mut scratch.scores)?;
        }
        Ok(())
    }

    /// Brings the raw scores of every node that passed up to date in every Score
    /// column.
    fn rescore_all(
        &self,
        columns: &mut Columns,
        cycle: Cycle,
        scratch: &mut Scratch,
    ) -> Result<(), Status> {
        self.rescore_all_in(&self.scores, columns, cycle, scratch)
    }

    /// Brings the raw scores of every node that passed up to date in `scores` (some
    /// of the entry's Score columns).
    fn rescore_all_in(
        &self,
        scores: &[(usize, usize)],
        columns: &mut Columns,
        cycle: Cycle,
        scratch: &mut Scratch,
    ) -> Result<(), Status> {
        for &(position, c) in scores {
            let column: &mut Column = columns.get_mut(c);
            let passed = self.verdicts.iter().map(|v| *v == Verdict::Passed);
            let stale = column.stale_where(cycle.snapshot, passed, &mut scratch.nodes);
            column.score(
                cycle,
                position,
                &scratch.nodes[..stale],
                &mut scratch.scores,
            )?;
        }
        Ok(())
    }

    /// Makes `ranking` (a sibling's, as of the mark the entry took its verdicts with,
    /// from the Score columns `sibling_scores`) the entry's, as of that mark less the
    /// nodes `changed` since, which the cycle ranks again: the columns the sibling
    /// shares are as they were, and the others are scored on every node that passed
    /// and replace the sibling's in the totals. `None` when it cannot (other Score
    /// plugins or rules, or a score out of range): the cycle then ranks anew.
    #[allow(clippy::too_many_arguments)]
    fn adopt(
        &self,
        mut ranking: Ranking,
        sibling_scores: &[(usize, usize)],
        rules: &[(i64, Normalization)],
        changed: &[usize],
        columns: &mut Columns,
        cycle: Cycle,
        scratch: &mut Scratch,
    ) -> Result<Option<Ranking>, Status> {
        for &(_, c) in sibling_scores {
            columns.follow(c, cycle.snapshot);
        }
        let alike = ranking.rules == rules
            && sibling_scores.len() == self.scores.len()
            && (sibling_scores.iter().zip(&self.scores)).all(|(s, e)| {
                s.0 == e.0 && columns.get(s.1).reads_pods() == columns.get(e.1).reads_pods()
            });
        if !alike {
            return Ok(None);
        }
        let sibling: Vec<&Column> = sibling_scores
            .iter()
            .map(|&(_, c)| columns.get(c))
            .collect();
        for &i in changed {
            ranking.remove(i, &sibling);
        }
        let differing: Vec<usize> = (0..self.scores.len())
            .filter(|&c| self.scores[c].1 != sibling_scores[c].1)
            .collect();
        let own: Vec<(usize, usize)> = differing.iter().map(|&c| self.scores[c]).collect();
        self.rescore_all_in(&own, columns, cycle, scratch)?;
        let sibling: Vec<&Column> = sibling_scores
            .iter()
            .map(|&(_, c)| columns.get(c))
            .collect();
        let scores = self.score_columns(columns);
        Ok(ranking
            .replace(&differing, &sibling, &scores)
            .then_some(ranking))
    }

    /// Gives back every column the entry uses.
    fn release(self, columns: &mut Columns) {
        for &(_, c) in self.filters.iter().chain(&self.scores) {
            columns.release(c);
        }
    }
}

/// The rejection of a node by `filters` (an entry's filter columns, in the profile's
/// order): the first one's, as a pass over every plugin gives it; `None` when it passed.
fn rejection<'a>(filters: &[&'a Column], node: usize) -> Option<&'a Status> {
    filters.iter().find_map(|column| column.rejection(node))
}

/// Buffers a cycle's scoring reuses.
#[derive(Default)]
struct Scratch {
    /// Raw scores on their way into a column.
    scores: Vec<i64>,
    /// Nodes to score.
    nodes: Vec<usize>,
}

/// How much the kept verdicts and scores saved ([`crate::Scheduler::incremental_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IncrementalStats {
    /// Cycles that filtered from what was kept.
    pub cycles: u64,
    /// Nodes those cycles filtered again: some Filter plugin was asked about them
    /// (their generation, or their object's, had changed since that plugin's answer
    /// was kept).
    pub nodes_filtered: u64,
    /// Nodes whose verdict those cycles took from what was kept.
    pub nodes_reused: u64,
    /// Cycles that chose from kept totals, without a score table.
    pub ranked: u64,
}

/// The kept verdicts and scores of a [`crate::Scheduler`] (see the module doc).
#[derive(Default)]
pub(crate) struct IncrementalCache {
    entries: FxHashMap<Key, Entry>,
    /// The plugins' answers the entries are made of.
    columns: Columns,
    /// The keys seen once and not kept, for [`IncrementalCache::admit`].
    seen: FxHashSet<Key>,
    /// The columns a transient entry did not build, for the next one with the same part.
    seen_parts: FxHashSet<ColumnKey>,
    /// The keys of the transient entries, oldest first (a key whose entry was dropped
    /// or kept since may still be listed).
    transients: VecDeque<Key>,
    /// The key [`IncrementalCache::admit`] returned last was seen for the first time
    /// and not kept: its cycle builds a transient entry.
    first_sighting: bool,
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
    /// Buffers for a cycle's scoring.
    scratch: Scratch,
    /// Sorts the nodes the snapshot's history lists.
    sorter: NodeSet,
    pub(crate) stats: IncrementalStats,
}

impl IncrementalCache {
    /// The key a cycle keeps its verdicts under, from the key it may use
    /// (`candidate`, `None` for a pod that cannot be kept). A signature is kept from its
    /// second pod (the next of a run, as a ReplicaSet's come, or one that comes back
    /// after others, as pods of a few shapes do) and used whenever it comes back after
    /// that. A pod whose signature was not seen before gets a transient entry, kept
    /// while the transient entries take at most a share of the memory budget (the
    /// oldest goes first), so that a second pod that comes soon finds the first one's
    /// entry, yet pods that never repeat take little memory; a transient entry is built
    /// only from columns kept or of parts seen before ([`IncrementalCache::filter`]),
    /// so that it shares the columns of the kept signatures. While more than half of
    /// the pods so far came with a signature seen before, a new one is kept at once
    /// (its second pod would build the entry anyway), unless the memory budget has
    /// already made the cache drop an entry.
    pub(crate) fn admit(&mut self, candidate: Option<Key>) -> Option<Key> {
        self.first_sighting = false;
        let key = candidate?;
        self.sightings += 1;
        let seen = self.seen.remove(&key);
        if let Some(entry) = self.entries.get_mut(&key) {
            entry.transient = false;
            self.repeats += 1;
            return Some(key);
        }
        if seen {
            self.repeats += 1;
            return Some(key);
        }
        if self.repeats * 2 > self.sightings && !self.full {
            return Some(key);
        }
        if self.seen.len() >= SEEN_CAPACITY {
            self.seen.clear();
        }
        self.seen.insert(key.clone());
        self.first_sighting = true;
        Some(key)
    }

    /// Lists `key`'s new entry among the transient ones and drops the oldest others
    /// while they take more than their share of `budget`.
    fn keep_transient(&mut self, key: &Key, budget: usize) {
        let entries = &mut self.entries;
        if let Some(entry) = entries.get_mut(key) {
            entry.transient = true;
        }
        self.transients
            .retain(|k| entries.get(k).is_some_and(|e| e.transient) && k != key);
        let mut bytes: usize = (self.transients.iter())
            .filter_map(|k| entries.get(k))
            .map(Entry::bytes)
            .sum::<usize>()
            + entries.get(key).map_or(0, Entry::bytes);
        while bytes > budget / TRANSIENT_SHARE
            && let Some(oldest) = self.transients.pop_front()
        {
            if let Some(entry) = entries.remove(&oldest) {
                bytes -= entry.bytes();
                entry.release(&mut self.columns);
            }
        }
        self.transients.push_back(key.clone());
    }

    /// Brings `key`'s verdicts up to date (PreFilter has run and kept every node): the
    /// Filter plugins the pod runs are asked again about the nodes whose answer they
    /// kept is of another generation than the node's now, among the nodes that changed
    /// since the entry's last cycle (for a new entry, every node, or those changed since
    /// the last cycle of the sibling it took its verdicts from); the others keep their
    /// verdict. Returns the nodes that changed, or `None` when the cycle is to take the
    /// full pass: a plugin cannot sign the pod, or the pod's signature is seen for the
    /// first time and one of its Filter columns would be of a part never seen before.
    pub(crate) fn filter(&mut self, key: &Key, cycle: Cycle) -> Option<Changed> {
        let Cycle {
            fwk,
            state,
            pod,
            snapshot,
        } = cycle;
        let nodes = snapshot.num_nodes();
        self.uses += 1;
        let budget = self.budget.unwrap_or_else(|| default_budget(nodes));
        self.columns.trim_idle(budget / IDLE_SHARE);
        let positions: Vec<usize> = (0..fwk.filter_plugins().len())
            .filter(|&p| !state.skips_filter(p))
            .collect();
        if let Some(entry) = self.entries.get_mut(key) {
            entry.follow(&mut self.columns, snapshot);
        }
        let kept = self.entries.get(key).is_some_and(|e| {
            e.fits(&self.columns, nodes)
                && e.filters.len() == positions.len()
                && e.filters.iter().zip(&positions).all(|(f, &p)| f.0 == p)
        });
        if !kept {
            if let Some(stale) = self.entries.remove(key) {
                stale.release(&mut self.columns);
            }
            let mut parts = Vec::with_capacity(positions.len());
            for &p in &positions {
                let (part, reads_pods) = fwk.plugin_part(&fwk.filter_plugins()[p].name, pod)?;
                parts.push(ColumnKey {
                    profile: key.profile,
                    point: Point::Filter,
                    position: p,
                    part,
                    reads_pods,
                });
            }
            // A transient entry is worth building from kept columns, and from parts seen
            // before, which will likely come again: computing a column for one pod costs
            // more than the full pass.
            if self.first_sighting {
                let mut new_part = false;
                for column in parts.iter().filter(|c| !self.columns.contains(c)) {
                    if self.seen_parts.len() >= SEEN_CAPACITY {
                        self.seen_parts.clear();
                    }
                    new_part |= self.seen_parts.insert(column.clone());
                }
                if new_part {
                    return None;
                }
            }
            self.make_room(nodes);
            let filters: Vec<(usize, usize)> = parts
                .into_iter()
                .map(|column| (column.position, self.columns.acquire(column, snapshot)))
                .collect();
            // A signature whose Filter columns are another's (pods alike but for what
            // only Score reads, such as their images) has its verdicts: they are taken
            // as they were at that one's last cycle, and the nodes changed since are
            // filtered below.
            let sibling = (self.entries.iter())
                .filter(|(_, e)| e.filters == filters && e.verdicts.len() == nodes)
                .filter_map(|(k, e)| Some((k, e, e.mark?)))
                .max_by_key(|(_, e, _)| e.last_used);
            let entry = match sibling {
                Some((sibling_key, sibling, mark)) => Entry {
                    sibling: Some((sibling_key.clone(), mark)),
                    ..Entry::after(sibling, filters)
                },
                None => Entry::new(nodes, filters),
            };
            self.entries.insert(key.clone(), entry);
            if self.first_sighting {
                self.keep_transient(key, budget);
            }
        }
        let uses = self.uses;
        let entry = self.entries.get_mut(key)?;
        if kept {
            entry.sibling = None;
        }
        entry.follow(&mut self.columns, snapshot);
        entry.last_used = uses;
        entry.rankable = std::mem::take(&mut entry.synced);
        // The nodes that changed: from the snapshot's log of changes when it has them,
        // else every node.
        // The entry follows the moves, so it reads the log across removals.
        let changed = match entry
            .mark
            .and_then(|m| snapshot.nodes_changed_in_order_since(m))
        {
            Some(logged) if logged.len() < nodes => {
                let logged = logged.iter().copied().filter(|&i| i != Snapshot::GONE);
                Changed::Nodes(self.sorter.sorted(nodes, logged))
            }
            _ => Changed::Every,
        };
        entry.mark = Some(snapshot.change_mark());
        // A column asked about every node finds its own stale nodes, from where it was
        // last current everywhere.
        let mut asked = Vec::with_capacity(entry.filters.len());
        for &(position, c) in &entry.filters {
            self.columns.follow(c, snapshot);
            let column = self.columns.get(c);
            let stale = match &changed {
                Changed::Every => column.stale_everywhere(snapshot, &mut self.sorter),
                Changed::Nodes(changed) => column.stale(snapshot, changed.iter().copied()),
            };
            self.columns.filter(c, cycle, position, &stale);
            if let Changed::Every = changed {
                self.columns.get_mut(c).set_current_everywhere(snapshot);
            }
            asked.push(stale);
        }
        // Each node some Filter plugin was asked about, counted once.
        let filtered = (self.sorter)
            .sorted(nodes, asked.into_iter().flatten())
            .len();
        self.stats.cycles += 1;
        self.stats.nodes_filtered += filtered as u64;
        self.stats.nodes_reused += (nodes - filtered) as u64;
        let filters = entry.filter_columns(&self.columns);
        match &changed {
            Changed::Every => entry.derive_all_verdicts(&filters),
            Changed::Nodes(changed) => {
                for &i in changed {
                    let verdict = (filters.iter())
                        .map(|column| column.verdict(i))
                        .find(|v| *v != Verdict::Passed)
                        .unwrap_or(Verdict::Passed);
                    match entry.verdicts[i] {
                        Verdict::Passed => entry.feasible -= 1,
                        Verdict::Failed => entry.errors -= 1,
                        _ => {}
                    }
                    match verdict {
                        Verdict::Passed => entry.feasible += 1,
                        Verdict::Failed => entry.errors += 1,
                        _ => {}
                    }
                    entry.verdicts[i] = verdict;
                }
            }
        }
        Some(changed)
    }

    /// `key`'s verdicts ([`IncrementalCache::filter`] has run in this cycle): the
    /// feasible nodes in node order and the rejected ones with their status.
    pub(crate) fn verdicts(&self, key: &Key) -> (Vec<usize>, Vec<(usize, Status)>) {
        let Some(entry) = self.entries.get(key) else {
            return (Vec::new(), Vec::new());
        };
        let mut feasible = Vec::with_capacity(entry.feasible);
        let mut rejected = Vec::new();
        let filters = entry.filter_columns(&self.columns);
        for i in 0..entry.verdicts.len() {
            match rejection(&filters, i) {
                None => feasible.push(i),
                Some(status) => rejected.push((i, status.clone())),
            }
        }
        (feasible, rejected)
    }

    /// `key`'s feasible nodes in node order ([`IncrementalCache::filter`] has run in
    /// this cycle), without the rejections of [`IncrementalCache::verdicts`].
    pub(crate) fn feasible(&self, key: &Key) -> Vec<usize> {
        let Some(entry) = self.entries.get(key) else {
            return Vec::new();
        };
        let mut feasible = Vec::with_capacity(entry.feasible);
        feasible.extend((0..entry.verdicts.len()).filter(|&i| entry.passed(i)));
        feasible
    }

    /// Whether a filter failed (rather than rejected) on some node in `key`'s last
    /// cycle.
    pub(crate) fn failed(&self, key: &Key) -> bool {
        self.entries.get(key).is_some_and(|e| e.errors > 0)
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
    /// [`IncrementalCache::filter`] found changed in this cycle): the node the full
    /// pass picks with [`crate::HostSelection::FirstInNodeOrder`]. Only the changed
    /// nodes are scored and totalled again, unless the ranking was not kept in the
    /// previous cycle or a scaled column's highest raw score moved. `Ok(None)` when it
    /// cannot say: a NormalizeScore rule is opaque, a plugin cannot sign the pod, or a
    /// score is out of range (the full pass reports that error).
    pub(crate) fn rank(
        &mut self,
        key: &Key,
        cycle: Cycle,
        changed: &Changed,
    ) -> Result<Option<usize>, Status> {
        let Cycle { fwk, state, .. } = cycle;
        let IncrementalCache {
            entries,
            columns,
            scratch,
            stats,
            ..
        } = self;
        let Some(entry) = entries.get_mut(key) else {
            return Ok(None);
        };
        // A sibling's ranking, as of the mark this entry took with its verdicts, while
        // the sibling has not changed since and is in the node order of now.
        let layout = entry.layout;
        let inherited = entry.sibling.take().and_then(|(sibling, mark)| {
            let sibling = entries.get(&sibling)?;
            (sibling.synced && sibling.mark == Some(mark) && sibling.layout == layout)
                .then(|| Some((sibling.ranking.clone()?, sibling.scores.clone())))
                .flatten()
        });
        let Some(entry) = entries.get_mut(key) else {
            return Ok(None);
        };
        let rules = fwk.score_rules(state);
        if rules.iter().any(|(_, r)| *r == Normalization::Opaque) {
            entry.opaque = true;
            entry.ranking = None;
            return Ok(None);
        }
        if entry
            .use_score_plugins(columns, key.profile, cycle)
            .is_none()
        {
            return Ok(None);
        }
        for &(_, c) in &entry.scores {
            columns.follow(c, cycle.snapshot);
        }
        let kept = (entry.ranking.take()).filter(|r| entry.rankable && r.rules == rules);
        // Only the nodes that changed in this cycle are scored and totalled again when
        // the ranking was kept, or taken from a sibling; else every node is, in a new
        // ranking (also when every node changed, as after a new snapshot, whose node
        // objects may differ).
        let kept = match (kept, changed, inherited) {
            (Some(ranking), Changed::Nodes(_), _) => Some(ranking),
            (None, Changed::Nodes(changed), Some((ranking, sibling_scores))) => entry.adopt(
                ranking,
                &sibling_scores,
                &rules,
                changed,
                columns,
                cycle,
                scratch,
            )?,
            _ => None,
        };
        let ranking = match (kept, changed) {
            (Some(mut ranking), Changed::Nodes(changed)) => {
                let scores = entry.score_columns(columns);
                for &i in changed {
                    ranking.remove(i, &scores);
                }
                entry.rescore(columns, cycle, changed, scratch)?;
                let scores = entry.score_columns(columns);
                for &i in changed {
                    if entry.passed(i) {
                        ranking.add(i, &scores);
                    }
                }
                let ok = if ranking.extremes_moved() {
                    ranking.retotal(&scores)
                } else {
                    ranking.settle(changed, &scores)
                };
                ok.then_some(ranking)
            }
            _ => {
                entry.rescore_all(columns, cycle, scratch)?;
                let scores = entry.score_columns(columns);
                let reads_pods: Vec<bool> = scores.iter().map(|c| c.reads_pods()).collect();
                let ranked = entry
                    .verdicts
                    .iter()
                    .map(|v| *v == Verdict::Passed)
                    .collect();
                Ranking::build(rules, ranked, &scores, &reads_pods)
            }
        };
        let Some(ranking) = ranking else {
            return Ok(None);
        };
        let best = ranking.best();
        entry.ranking = Some(ranking);
        entry.synced = true;
        stats.ranked += 1;
        Ok(best)
    }

    /// The score table of `feasible` (in node order; PreScore has run): raw scores of
    /// the nodes that changed since their column kept them are computed again, as the
    /// full pass computes them; then NormalizeScore and the weights run over every
    /// feasible node, as in every cycle.
    pub(crate) fn score(
        &mut self,
        key: &Key,
        cycle: Cycle,
        feasible: &[usize],
    ) -> Result<ScoreTable, Status> {
        let Cycle {
            fwk,
            state,
            pod,
            snapshot,
        } = cycle;
        let IncrementalCache {
            entries,
            columns,
            scratch,
            ..
        } = self;
        let kept = match entries.get_mut(key) {
            Some(entry) => entry
                .use_score_plugins(columns, key.profile, cycle)
                .map(|()| entry),
            None => None,
        };
        let Some(entry) = kept else {
            let nodes: Vec<(usize, &NodeInfo)> =
                feasible.iter().map(|&i| (i, snapshot.node_at(i))).collect();
            return fwk.run_score_plugins(state, pod, &nodes);
        };
        entry.rescore(columns, cycle, feasible, scratch)?;
        let width = entry.scores.len();
        let rows = feasible.len();
        let mut table = ScoreTable {
            plugins: entry.plugins.clone(),
            node_indices: feasible.to_vec(),
            scores: vec![0; rows * width],
            totals: vec![0; rows],
        };
        for (column, &(_, c)) in entry.scores.iter().enumerate() {
            let kept = columns.get(c);
            for (row, &i) in feasible.iter().enumerate() {
                table.scores[column * rows + row] = kept.raw(i);
            }
        }
        fwk.normalize_and_weigh(state, pod, &mut table)?;
        Ok(table)
    }

    /// Drops idle columns, then the least recently used entries, until one more entry
    /// of `nodes` nodes fits the budget (an entry dropped is seen anew).
    fn make_room(&mut self, nodes: usize) {
        let one = Entry::base_bytes(nodes).max(1);
        let budget = self.budget.unwrap_or_else(|| default_budget(nodes));
        let mut entries: usize = self.entries.values().map(Entry::bytes).sum();
        while entries + self.columns.bytes() + one > budget {
            if self.columns.drop_idle() {
                continue;
            }
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                return;
            };
            if let Some(dropped) = self.entries.remove(&oldest) {
                entries -= dropped.bytes();
                dropped.release(&mut self.columns);
                self.full = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Entry, IncrementalCache, Key};
    use crate::signature::{PodSignature, SignFragment};

    /// Whether a pod of `shape` is kept for good (not in a transient entry); its
    /// entry is made as its cycle's filter makes it, of one node.
    fn kept(cache: &mut IncrementalCache, shape: u32) -> bool {
        let Some(key) = cache.admit(Some(key_of(shape))) else {
            return false;
        };
        if !cache.entries.contains_key(&key) {
            cache.entries.insert(key.clone(), Entry::new(1, Vec::new()));
            if cache.first_sighting {
                let budget = cache.budget.unwrap_or(usize::MAX);
                cache.keep_transient(&key, budget);
            }
        }
        !cache.entries[&key].transient
    }

    #[test]
    fn a_signature_is_kept_from_its_second_pod_until_most_pods_repeat_one() {
        let mut cache = IncrementalCache {
            // Room for three transient entries of one node.
            budget: Some(3 * super::TRANSIENT_SHARE),
            ..IncrementalCache::default()
        };
        assert!(cache.admit(None).is_none());
        // Pods that never repeat keep only the last three transient entries.
        for shape in 0..10 {
            assert!(!kept(&mut cache, shape), "shape {shape}");
            assert_eq!(
                cache.entries.len(),
                (shape as usize + 1).min(3),
                "shape {shape}"
            );
        }
        // The second pod of a signature keeps it, wherever it comes: from its transient
        // entry when it is still there (9), else anew (3).
        assert!(cache.entries.contains_key(&key_of(9)));
        assert!(kept(&mut cache, 9));
        assert!(kept(&mut cache, 3));
        assert!(kept(&mut cache, 0));
        // A kept entry is not dropped for a transient one.
        assert!(!kept(&mut cache, 11));
        assert!(!kept(&mut cache, 12));
        assert!(!kept(&mut cache, 13));
        assert!(!kept(&mut cache, 14));
        for shape in [9, 3, 0] {
            assert!(cache.entries.contains_key(&key_of(shape)), "shape {shape}");
        }
        // Repeats until they are most of the pods so far (15 new, 15 repeats is not
        // yet more than half with the next)...
        for _ in 0..12 {
            assert!(kept(&mut cache, 3));
        }
        assert!(!kept(&mut cache, 15));
        assert!(kept(&mut cache, 3));
        assert!(kept(&mut cache, 3));
        // ... and then a new signature is kept from its first pod (16 new, 17 repeats).
        assert!(kept(&mut cache, 100));
        // Not once the memory budget has dropped an entry.
        cache.full = true;
        assert!(!kept(&mut cache, 101));
        assert!(kept(&mut cache, 101));
    }

    fn key_of(shape: u32) -> Key {
        Key {
            profile: 0,
            signature: PodSignature::from_fragments([SignFragment {
                key: "shape",
                value: shape.to_string(),
            }]),
        }
    }
}
