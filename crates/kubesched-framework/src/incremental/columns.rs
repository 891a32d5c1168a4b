//! One plugin's answers node by node, kept under the plugin's own part of the pod's
//! signature: a Filter plugin's verdicts or a Score plugin's raw scores. Every
//! signature with that part shares the column, so a pod of a new shape computes only
//! the plugins whose part is new to the cache, and each answer records the generation
//! of the node it was computed at: the node's ([`crate::NodeInfo::generation`]) when
//! the plugin reads the pods on the node, else the node object's
//! ([`crate::NodeInfo::object_generation`]), which placements leave alone.

use rustc_hash::FxHashMap;

use super::moves::follow_moves;
use crate::cycle_state::CycleState;
use crate::framework::Framework;
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::signature::PodSignature;
use crate::snapshot::{ChangeMark, Move, Snapshot};
use crate::status::Status;

/// What a cycle computes a column's answers with: the profile, the cycle's state
/// (PreFilter and PreScore have run), the pod and the cluster.
#[derive(Clone, Copy)]
pub(crate) struct Cycle<'a> {
    pub(crate) fwk: &'a Framework,
    pub(crate) state: &'a CycleState,
    pub(crate) pod: &'a PodInfo,
    pub(crate) snapshot: &'a Snapshot,
}

impl<'a> Cycle<'a> {
    /// The nodes at `positions`.
    fn nodes(&self, positions: &[usize]) -> Vec<&'a NodeInfo> {
        positions
            .iter()
            .map(|&i| self.snapshot.node_at(i))
            .collect()
    }
}

/// A node's verdict: one Filter plugin's, or the first of an entry's Filter plugins
/// not to pass it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Verdict {
    Passed,
    Rejected,
    /// A filter failed (an error rather than a rejection).
    Failed,
    /// Not filtered yet.
    Unknown,
}

/// The extension point a column answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Point {
    Filter,
    Score,
}

/// What a column is kept under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct ColumnKey {
    pub(super) profile: usize,
    pub(super) point: Point,
    /// The plugin's position in the profile's list for the point.
    pub(super) position: usize,
    /// The plugin's part of the signature ([`crate::Plugin::sign_pod_exact`]).
    pub(super) part: PodSignature,
    /// The plugin reads the pods on the node ([`crate::Plugin::reads_node_pods`]).
    pub(super) reads_pods: bool,
}

/// One plugin's answers for one part, per node (in node order).
pub(super) struct Column {
    point: Point,
    /// The plugin reads the pods on the node ([`crate::Plugin::reads_node_pods`]).
    reads_pods: bool,
    /// Where the snapshot's history of moves stood when the answers were last put in
    /// its node order ([`Column::follow`]).
    layout: Option<ChangeMark>,
    /// The generation each node's answer was computed at; 0 for never.
    at: Vec<u64>,
    /// A Filter column's verdict on each node, and the rejections of the nodes that did
    /// not pass, by node (most nodes pass: a map takes no memory for them, where a slot
    /// per node took 8 bytes and a write on every node filtered).
    verdicts: Vec<Verdict>,
    rejected: FxHashMap<u32, Status>,
    /// A Score column's raw score of each node.
    raw: Vec<i64>,
    /// Where the snapshot's history stood when every node's answer was last current
    /// (a Filter column answers every node it is asked about; a Score column only the
    /// feasible ones, so it keeps none).
    current_everywhere: Option<ChangeMark>,
    /// How many kept signatures use the column.
    users: usize,
    /// When it was last acquired or released (the store's clock).
    last_used: u64,
}

impl Column {
    fn new(point: Point, reads_pods: bool, nodes: usize) -> Column {
        Column {
            point,
            reads_pods,
            layout: None,
            at: vec![0; nodes],
            verdicts: match point {
                Point::Filter => vec![Verdict::Unknown; nodes],
                Point::Score => Vec::new(),
            },
            rejected: FxHashMap::default(),
            raw: match point {
                Point::Filter => Vec::new(),
                Point::Score => vec![0; nodes],
            },
            current_everywhere: None,
            users: 0,
            last_used: 0,
        }
    }

    fn bytes(&self) -> usize {
        // A rejection takes its key, its status and a control byte, at the map's load.
        let rejection = std::mem::size_of::<(u32, Status)>() + 1;
        self.at.len() * 8
            + self.verdicts.len()
            + self.rejected.capacity() * rejection
            + self.raw.len() * 8
    }

    /// Puts the answers in the snapshot's node order: when nodes were added or removed
    /// since the column was last in it, each answer moves with its node. Where the
    /// moves are not known (another snapshot, or history it no longer keeps), answers
    /// stay where they are: each records its node's generation, and a generation is
    /// never given twice, so one at the wrong place is only found stale. A column of
    /// another number of nodes then starts empty. Returns whether every answer moved
    /// with its node (or none had to).
    fn follow(&mut self, snapshot: &Snapshot) -> bool {
        let now = snapshot.moves_mark();
        if self.layout == Some(now) {
            return true;
        }
        let moves = self.layout.and_then(|mark| snapshot.moves_since(mark));
        let followed = moves.is_some_and(|moves| self.apply(moves));
        if !followed {
            // The change log's positions are of the order of now, which the answers
            // may not be in.
            self.current_everywhere = None;
        }
        if self.at.len() != snapshot.num_nodes() {
            *self = Column {
                users: self.users,
                last_used: self.last_used,
                ..Column::new(self.point, self.reads_pods, snapshot.num_nodes())
            };
        }
        self.layout = Some(now);
        followed
    }

    /// Moves the answers as `moves` moved the nodes; `false` (the column emptied) when
    /// one names a position the column does not have.
    fn apply(&mut self, moves: &[Move]) -> bool {
        let followed = follow_moves(self.at.len(), moves, |one| match one {
            Move::Appended => {
                self.at.push(0);
                match self.point {
                    Point::Filter => self.verdicts.push(Verdict::Unknown),
                    Point::Score => self.raw.push(0),
                }
            }
            Move::Removed(i) => {
                self.at.remove(i);
                match self.point {
                    Point::Filter => {
                        self.verdicts.remove(i);
                        let gone = i as u32;
                        self.rejected = std::mem::take(&mut self.rejected)
                            .into_iter()
                            .filter(|(node, _)| *node != gone)
                            .map(|(node, status)| (node - u32::from(node > gone), status))
                            .collect();
                    }
                    Point::Score => {
                        self.raw.remove(i);
                    }
                }
            }
        });
        if !followed {
            self.at.clear();
        }
        followed
    }

    /// How many nodes the column is of.
    pub(super) fn len(&self) -> usize {
        self.at.len()
    }

    /// Whether the plugin reads the pods on a node.
    pub(super) fn reads_pods(&self) -> bool {
        self.reads_pods
    }

    /// The generations the column's answers follow, in node order.
    fn generations<'a>(&self, snapshot: &'a Snapshot) -> &'a [u64] {
        if self.reads_pods {
            snapshot.generations()
        } else {
            snapshot.object_generations()
        }
    }

    /// The nodes among `nodes` whose answer is not of their current generation.
    pub(super) fn stale(
        &self,
        snapshot: &Snapshot,
        nodes: impl IntoIterator<Item = usize>,
    ) -> Vec<usize> {
        let now = self.generations(snapshot);
        nodes
            .into_iter()
            .filter(|&i| self.at[i] != now[i])
            .collect()
    }

    /// The nodes whose answer is not of their current generation among those that
    /// `wanted` says (one flag per node, in node order), in node order: the first
    /// of `into` (grown to one more than the nodes if shorter), whose length is
    /// returned.
    pub(super) fn stale_where(
        &self,
        snapshot: &Snapshot,
        wanted: impl Iterator<Item = bool>,
        into: &mut Vec<usize>,
    ) -> usize {
        let now = self.generations(snapshot);
        if into.len() <= self.at.len() {
            into.resize(self.at.len() + 1, 0);
        }
        // Written at every node and kept where stale, without a branch to mispredict.
        let mut kept = 0;
        for (i, ((at, now), wanted)) in self.at.iter().zip(now).zip(wanted).enumerate() {
            into[kept] = i;
            kept += usize::from(wanted & (at != now));
        }
        kept
    }

    /// Every node whose answer is not of its current generation, in node order: from
    /// the snapshot's log of changes since the column was last current everywhere
    /// ([`Column::set_current_everywhere`]), else by comparing every node.
    pub(super) fn stale_everywhere(&self, snapshot: &Snapshot, sorter: &mut NodeSet) -> Vec<usize> {
        let now = self.generations(snapshot);
        match self
            .current_everywhere
            .and_then(|mark| snapshot.nodes_changed_in_order_since(mark))
        {
            Some(logged) => {
                let logged = (logged.iter().copied())
                    .filter(|&i| i != Snapshot::GONE && self.at[i] != now[i]);
                sorter.sorted(now.len(), logged)
            }
            None => (0..self.at.len())
                .filter(|&i| self.at[i] != now[i])
                .collect(),
        }
    }

    /// Records that every node's answer is current now (the stale ones were computed
    /// again).
    pub(super) fn set_current_everywhere(&mut self, snapshot: &Snapshot) {
        self.current_everywhere = Some(snapshot.change_mark());
    }

    /// Every node's verdict from the Filter plugin, in node order.
    pub(super) fn verdicts(&self) -> &[Verdict] {
        &self.verdicts
    }

    /// Node `node`'s verdict from the Filter plugin.
    pub(super) fn verdict(&self, node: usize) -> Verdict {
        self.verdicts[node]
    }

    /// Node `node`'s rejection by the Filter plugin, `None` when it passed.
    pub(super) fn rejection(&self, node: usize) -> Option<&Status> {
        match self.verdicts[node] {
            Verdict::Passed | Verdict::Unknown => None,
            Verdict::Rejected | Verdict::Failed => self.rejected.get(&(node as u32)),
        }
    }

    /// Node `node`'s raw score from the Score plugin.
    pub(super) fn raw(&self, node: usize) -> i64 {
        self.raw[node]
    }

    /// Every node's raw score from the Score plugin, in node order.
    pub(super) fn raws(&self) -> &[i64] {
        &self.raw
    }

    /// Filters `stale` again with the Filter plugin at `position` (through
    /// [`Columns::filter`], which counts the bytes its rejections take).
    fn filter(&mut self, cycle: Cycle, position: usize, stale: &[usize]) {
        if stale.is_empty() {
            return;
        }
        let nodes = cycle.nodes(stale);
        let mut rejected = Vec::new();
        (cycle.fwk).filter_with_plugin(position, cycle.state, cycle.pod, &nodes, &mut rejected);
        let now = self.generations(cycle.snapshot);
        for &i in stale {
            if matches!(self.verdicts[i], Verdict::Rejected | Verdict::Failed) {
                self.rejected.remove(&(i as u32));
            }
            self.verdicts[i] = Verdict::Passed;
            self.at[i] = now[i];
        }
        // A plugin rejects most nodes alike: equal rejections share one status, so that
        // a diagnosis copies and drops them without touching one allocation per node.
        let mut last: Option<Status> = None;
        for (k, mut status) in rejected {
            match &last {
                Some(same) if *same == status => status = same.clone(),
                _ => last = Some(status.clone()),
            }
            let node = stale[k];
            self.verdicts[node] = if status.is_rejected() {
                Verdict::Rejected
            } else {
                Verdict::Failed
            };
            self.rejected.insert(node as u32, status);
        }
    }

    /// Scores `stale` again with the Score plugin at `position` (`scratch` holds the
    /// scores on the way).
    pub(super) fn score(
        &mut self,
        cycle: Cycle,
        position: usize,
        stale: &[usize],
        scratch: &mut Vec<i64>,
    ) -> Result<(), Status> {
        if stale.is_empty() {
            return Ok(());
        }
        let nodes = cycle.nodes(stale);
        (cycle.fwk).score_with_plugin(position, cycle.state, cycle.pod, &nodes, scratch)?;
        let now = self.generations(cycle.snapshot);
        for (&i, &raw) in stale.iter().zip(scratch.iter()) {
            self.raw[i] = raw;
            self.at[i] = now[i];
        }
        Ok(())
    }
}

/// Sorts node positions and drops repeats through a bitset of the nodes, in O(k + n / 64)
/// for k positions of n nodes.
#[derive(Default)]
pub(super) struct NodeSet {
    words: Vec<u64>,
}

impl NodeSet {
    /// `positions` (each below `nodes`) in node order, each once.
    pub(super) fn sorted(
        &mut self,
        nodes: usize,
        positions: impl IntoIterator<Item = usize>,
    ) -> Vec<usize> {
        self.words.resize(nodes.div_ceil(64), 0);
        let mut count = 0;
        for i in positions {
            self.words[i / 64] |= 1 << (i % 64);
            count += 1;
        }
        let mut sorted = Vec::with_capacity(count);
        for (w, word) in self.words.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                sorted.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        sorted
    }
}

/// Every kept column, shared by the signatures that use it. A column that none uses any
/// more stays idle, for the next pod whose part it is (a pod of a new shape shares most
/// of its plugins' parts with pods before it), until the cache trims the idle ones
/// ([`Columns::trim_idle`]) or the memory budget wants it.
#[derive(Default)]
pub(super) struct Columns {
    slots: Vec<Option<(ColumnKey, Column)>>,
    /// Slots whose column was dropped, for the next one.
    free: Vec<usize>,
    index: FxHashMap<ColumnKey, usize>,
    /// The bytes the kept columns take.
    bytes: usize,
    /// The bytes of the kept columns that no signature uses.
    idle_bytes: usize,
    /// Counts acquisitions and releases, to find the least recently used idle column.
    clock: u64,
}

impl Columns {
    /// The column kept under `key`, for one more user: the one kept, in the
    /// snapshot's node order ([`Columns::follow`]), or a new one of the snapshot's
    /// nodes. Returns its id.
    pub(super) fn acquire(&mut self, key: ColumnKey, snapshot: &Snapshot) -> usize {
        self.clock += 1;
        let reads_pods = key.reads_pods;
        if let Some(&id) = self.index.get(&key)
            && self.slots[id].is_some()
        {
            self.follow(id, snapshot);
            let Some((_, column)) = &mut self.slots[id] else {
                unreachable!("column {id} was just found");
            };
            if column.users == 0 {
                self.idle_bytes -= column.bytes();
            }
            column.users += 1;
            column.last_used = self.clock;
            return id;
        }
        let mut column = Column::new(key.point, reads_pods, snapshot.num_nodes());
        column.follow(snapshot);
        column.users = 1;
        column.last_used = self.clock;
        self.bytes += column.bytes();
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.index.insert(key.clone(), id);
        self.slots[id] = Some((key, column));
        id
    }

    /// Whether a column is kept under `key`.
    pub(super) fn contains(&self, key: &ColumnKey) -> bool {
        self.index.contains_key(key)
    }

    /// One user fewer for column `id`; the last leaves it idle.
    pub(super) fn release(&mut self, id: usize) {
        self.clock += 1;
        let Some(Some((_, column))) = self.slots.get_mut(id) else {
            return;
        };
        column.users -= 1;
        column.last_used = self.clock;
        if column.users == 0 {
            self.idle_bytes += column.bytes();
        }
    }

    /// Drops the least recently used idle column; `false` when none is idle.
    pub(super) fn drop_idle(&mut self) -> bool {
        let oldest = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(id, slot)| slot.as_ref().map(|(_, column)| (id, column)))
            .filter(|(_, column)| column.users == 0)
            .min_by_key(|(_, column)| column.last_used)
            .map(|(id, _)| id);
        let Some((key, column)) = oldest.and_then(|id| self.slots[id].take()) else {
            return false;
        };
        self.bytes -= column.bytes();
        self.idle_bytes -= column.bytes();
        if let Some(id) = self.index.remove(&key) {
            self.free.push(id);
        }
        true
    }

    /// Drops idle columns, least recently used first, until they take at most `limit`
    /// bytes.
    pub(super) fn trim_idle(&mut self, limit: usize) {
        while self.idle_bytes > limit && self.drop_idle() {}
    }

    /// Column `id`, which a kept signature uses.
    pub(super) fn get(&self, id: usize) -> &Column {
        match &self.slots[id] {
            Some((_, column)) => column,
            None => unreachable!("column {id} is used, so it is kept"),
        }
    }

    pub(super) fn get_mut(&mut self, id: usize) -> &mut Column {
        match &mut self.slots[id] {
            Some((_, column)) => column,
            None => unreachable!("column {id} is used, so it is kept"),
        }
    }

    /// The bytes the kept columns take.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Puts column `id`'s answers in the snapshot's node order ([`Column::follow`]),
    /// counting the bytes they take now.
    /// Returns whether every answer moved with its node (or none had to).
    pub(super) fn follow(&mut self, id: usize, snapshot: &Snapshot) -> bool {
        let Some(Some((_, column))) = self.slots.get_mut(id) else {
            return false;
        };
        let before = column.bytes();
        let followed = column.follow(snapshot);
        let after = column.bytes();
        self.bytes = self.bytes - before + after;
        if column.users == 0 {
            self.idle_bytes = self.idle_bytes - before + after;
        }
        followed
    }

    /// Filters `stale` again in column `id` (a kept signature uses it) with the Filter
    /// plugin at `position`, counting the bytes its rejections take now.
    pub(super) fn filter(&mut self, id: usize, cycle: Cycle, position: usize, stale: &[usize]) {
        let column = self.get_mut(id);
        let before = column.bytes();
        column.filter(cycle, position, stale);
        let after = column.bytes();
        self.bytes = self.bytes - before + after;
    }
}

#[cfg(test)]
mod tests {
    use super::NodeSet;

    #[test]
    fn a_node_set_sorts_and_drops_repeats_and_starts_empty_again() {
        let mut set = NodeSet::default();
        assert_eq!(
            set.sorted(130, [129, 3, 64, 3, 0, 63, 129]),
            [0, 3, 63, 64, 129]
        );
        assert_eq!(set.sorted(130, [5]), [5]);
        assert_eq!(set.sorted(10, []), Vec::<usize>::new());
        assert_eq!(set.sorted(200, [199, 7]), [7, 199]);
    }
}
