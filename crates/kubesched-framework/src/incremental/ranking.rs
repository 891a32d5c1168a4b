//! One signature's feasible nodes ranked by weighted total, with the best at hand: the
//! tournament tree that finds it again in O(log n) per changed node, and per scaled
//! column the count of each raw score, which says at once when the highest one (that
//! scales every node's score) or, for a min–max column, the lowest one moved.

use std::cmp::Reverse;

use super::columns::Column;
use super::moves::follow_moves;
use crate::plugin::{
    MAX_NODE_SCORE, MIN_NODE_SCORE, Normalization, min_max_score, scale_to_max_score,
};
use crate::snapshot::Move;

/// A node's weighted total. Sixteen bits hold the totals of every profile whose weights
/// sum to at most 327 (the default profile's sum to 15): half the memory of 32
/// bits, in every kept ranking. A profile past that ranks from the score table.
type Total = i16;

/// The feasible nodes' weighted totals, with the best of them at hand.
#[derive(Clone)]
pub(super) struct Ranking {
    /// Each column's weight and NormalizeScore rule (none opaque).
    pub(super) rules: Vec<(i64, Normalization)>,
    /// Per scaled column ([`Normalization::ScaledToMax`] or [`Normalization::MinMax`]),
    /// how many ranked nodes have each raw score (empty for the other columns).
    counts: Vec<Counts>,
    /// Per scaled column whose plugin reads the pods on a node, the raw score each
    /// ranked node was counted with (empty for the other columns): the score kept for
    /// the node may have been computed again since, for another signature that shares
    /// the column, so it is not the one to uncount. A column that reads only the node
    /// object keeps its score while the snapshot's history does (a ranking is started
    /// afresh when every node changed), so its node's score now is the one counted.
    counted: Vec<Vec<i64>>,
    /// The raw scores each scaled column's scores are normalised against, as the
    /// totals were computed with ([`Counts::extremes`]).
    extremes: Vec<Extremes>,
    /// Each ranked node's total (a node is ranked when it passed the filters; the
    /// others are [`Tournament::OUT`]), with the best of them at hand.
    best: Tournament,
}

impl Ranking {
    /// The ranking of the nodes that are `ranked` (they passed the filters), with
    /// their raw scores in `scores` (one column each, under `rules`; `reads_pods` says
    /// of each whether its plugin reads the pods on a node), in one pass per column.
    /// `None` when it cannot rank: a normalised score is out of 0..=100 (the full pass
    /// reports that error), or the weights are so large that a total may not fit the
    /// tournament's [`Total`] (the score table then ranks, as without a ranking).
    pub(super) fn build(
        rules: Vec<(i64, Normalization)>,
        ranked: Vec<bool>,
        scores: &[&Column],
        reads_pods: &[bool],
    ) -> Option<Ranking> {
        let weights = rules.iter().try_fold(0i64, |sum, &(weight, _)| {
            (weight >= 0).then(|| sum.checked_add(weight)).flatten()
        })?;
        if weights.checked_mul(MAX_NODE_SCORE)? > i64::from(Total::MAX) {
            return None;
        }
        let mut ranking = Ranking {
            counts: rules.iter().map(|_| Counts::default()).collect(),
            counted: vec![Vec::new(); rules.len()],
            extremes: vec![Extremes::default(); rules.len()],
            best: Tournament::default(),
            rules,
        };
        for (c, column) in scores.iter().enumerate() {
            if !ranking.scaled(c) {
                continue;
            }
            let raws = column.raws();
            if reads_pods[c] {
                ranking.counted[c] = raws.to_vec();
            }
            ranking.counts[c].add_ranked(raws, ranked.iter().copied());
        }
        let mut totals: Vec<Total> = (ranked.iter())
            .map(|&r| if r { 0 } else { Tournament::OUT })
            .collect();
        ranking.retotal_into(scores, &mut totals).then_some(())?;
        ranking.best.fill(totals);
        Some(ranking)
    }

    pub(super) fn bytes(&self) -> usize {
        self.best.bytes() + self.counted.iter().map(|c| c.len() * 8).sum::<usize>()
    }

    /// Per-node bytes of a ranking with `counted` scaled columns whose plugin reads
    /// the pods on a node.
    pub(super) fn bytes_per_node(counted: usize) -> usize {
        Tournament::BYTES_PER_NODE + 8 * counted
    }

    /// Whether `node` is ranked (it passed the filters).
    fn is_ranked(&self, node: usize) -> bool {
        self.best.total(node) != Tournament::OUT
    }

    /// Ranks `node` (it passed the filters, and is not ranked), with its raw scores in
    /// `scores` (one column each); its total, held at 0 until then, is set by
    /// [`Ranking::settle`] or [`Ranking::retotal`].
    pub(super) fn add(&mut self, node: usize, scores: &[&Column]) {
        for (c, column) in scores.iter().enumerate() {
            if self.scaled(c) {
                let raw = column.raw(node);
                if let Some(counted) = self.counted[c].get_mut(node) {
                    *counted = raw;
                }
                self.counts[c].add(raw);
            }
        }
        self.best.set_total(node, Some(0));
    }

    /// Takes `node` out of the ranking (`scores` are the columns it was ranked from).
    pub(super) fn remove(&mut self, node: usize, scores: &[&Column]) {
        if !self.is_ranked(node) {
            return;
        }
        for (c, column) in scores.iter().enumerate() {
            if self.scaled(c) {
                let raw = match self.counted[c].get(node) {
                    Some(&counted) => counted,
                    None => column.raw(node),
                };
                self.counts[c].remove(raw);
            }
        }
        self.best.set_total(node, None);
    }

    /// Moves each node's total with its node as `moves` moved the nodes (`scores`,
    /// the ranking's columns, have followed them): an added node is not ranked; a
    /// removed ranked node's raw scores leave the counts, which are counted again from
    /// the columns (the totals are then computed again if an extreme moved:
    /// [`Ranking::extremes_moved`]). `false` when a move names a position the ranking
    /// does not have.
    pub(super) fn follow(&mut self, moves: &[Move], scores: &[&Column]) -> bool {
        let mut totals = std::mem::take(&mut self.best).into_totals();
        let mut ranked_removed = false;
        let followed = follow_moves(totals.len(), moves, |one| match one {
            Move::Appended => {
                totals.push(Tournament::OUT);
                for counted in self.counted.iter_mut().filter(|c| !c.is_empty()) {
                    counted.push(0);
                }
            }
            Move::Removed(i) => {
                ranked_removed |= totals.remove(i) != Tournament::OUT;
                for counted in self.counted.iter_mut().filter(|c| !c.is_empty()) {
                    counted.remove(i);
                }
            }
        });
        if !followed {
            return false;
        }
        // With no node left, a column that reads pods would keep no counted scores.
        if totals.is_empty() {
            return false;
        }
        if ranked_removed {
            for (c, column) in scores.iter().enumerate() {
                if !self.scaled(c) {
                    continue;
                }
                let raws = match self.counted[c].as_slice() {
                    [] => column.raws(),
                    counted => counted,
                };
                if raws.len() != totals.len() {
                    return false;
                }
                self.counts[c] = Counts::default();
                let ranked = totals.iter().map(|&t| t != Tournament::OUT);
                self.counts[c].add_ranked(raws, ranked);
            }
        }
        self.best.fill(totals);
        true
    }

    /// Whether a scaled column's extreme raw scores differ from the ones the totals
    /// were computed with.
    pub(super) fn extremes_moved(&self) -> bool {
        (0..self.rules.len()).any(|c| self.current_extremes(c) != self.extremes[c])
    }

    /// Column `c`'s extreme raw scores as counted now.
    fn current_extremes(&self, c: usize) -> Extremes {
        self.counts[c].extremes(self.rules[c].1)
    }

    /// Whether column `c` is scaled ([`Normalization::ScaledToMax`] or
    /// [`Normalization::MinMax`]): its raw scores are counted.
    fn scaled(&self, c: usize) -> bool {
        matches!(
            self.rules[c].1,
            Normalization::ScaledToMax { .. } | Normalization::MinMax
        )
    }

    /// Column `c`'s score of a raw score, normalised as its rule says (before the
    /// weight).
    fn normalized(&self, c: usize, raw: i64) -> i64 {
        normalize(self.rules[c].1, raw, self.extremes[c])
    }

    /// Replaces the columns at `differing` (`old`, the columns the ranking was made
    /// from) by those of `new` in every ranked node's total (their raw scores current
    /// on every ranked node; the other columns are the same in both), counting the
    /// scaled ones' raw scores again; `false` when a score is out of range.
    pub(super) fn replace(
        &mut self,
        differing: &[usize],
        old: &[&Column],
        new: &[&Column],
    ) -> bool {
        if differing.is_empty() {
            return true;
        }
        let mut totals = std::mem::take(&mut self.best).into_totals();
        for &c in differing {
            let (weight, rule) = self.rules[c];
            let old_extremes = self.extremes[c];
            let new_raws = new[c].raws();
            if self.scaled(c) {
                self.counts[c] = Counts::default();
                let ranked = totals.iter().map(|&t| t != Tournament::OUT);
                self.counts[c].add_ranked(new_raws, ranked);
                self.extremes[c] = self.current_extremes(c);
            }
            // The raw scores the totals were made with: as counted, for a column whose
            // plugin reads pods, else the old column's, unchanged on a ranked node.
            let old_raws = match self.counted[c].as_slice() {
                [] => old[c].raws(),
                counted => counted,
            };
            for (total, (&before, &after)) in totals.iter_mut().zip(old_raws.iter().zip(new_raws)) {
                if *total == Tournament::OUT {
                    continue;
                }
                let after = normalize(rule, after, self.extremes[c]);
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&after) {
                    return false;
                }
                let before = normalize(rule, before, old_extremes);
                *total = match Total::try_from(i64::from(*total) + (after - before) * weight) {
                    Ok(total) => total,
                    Err(_) => return false,
                };
            }
            if !self.counted[c].is_empty() {
                self.counted[c].copy_from_slice(new_raws);
            }
        }
        self.best.fill(totals);
        true
    }

    /// A node's total from its raw scores in `scores`, `None` when a normalised score
    /// is out of 0..=100 (the full pass reports that error).
    fn total(&self, node: usize, scores: &[&Column]) -> Option<Total> {
        let mut total = 0;
        for (c, column) in scores.iter().enumerate() {
            let score = self.normalized(c, column.raw(node));
            if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&score) {
                return None;
            }
            total += score * self.rules[c].0;
        }
        // The weights were checked to keep every total within a Total.
        Total::try_from(total).ok()
    }

    /// Sets the totals of `touched` (in node order; raw scores in `scores`) and plays
    /// their matches again; `false` when a score is out of range.
    pub(super) fn settle(&mut self, touched: &[usize], scores: &[&Column]) -> bool {
        for &i in touched {
            if !self.is_ranked(i) {
                continue;
            }
            match self.total(i, scores) {
                Some(total) => self.best.set_total(i, Some(total)),
                None => return false,
            }
        }
        self.best.refresh(touched);
        true
    }

    /// Every ranked node's total again (raw scores in `scores`), with the scaled
    /// columns' current extremes; `false` when a score is out of range.
    pub(super) fn retotal(&mut self, scores: &[&Column]) -> bool {
        let mut totals = std::mem::take(&mut self.best).into_totals();
        let ok = self.retotal_into(scores, &mut totals);
        self.best.fill(totals);
        ok
    }

    /// Sets the scaled columns' extremes from their counts, and each ranked node's total
    /// in `totals` (the others are [`Tournament::OUT`]) from its raw scores in
    /// `scores`, column by column; `false` when a score is out of range.
    fn retotal_into(&mut self, scores: &[&Column], totals: &mut [Total]) -> bool {
        for c in 0..self.extremes.len() {
            self.extremes[c] = self.current_extremes(c);
        }
        for total in totals.iter_mut().filter(|t| **t != Tournament::OUT) {
            *total = 0;
        }
        for (c, column) in scores.iter().enumerate() {
            let weight = self.rules[c].0 as Total;
            let rows = totals.iter_mut().zip(column.raws());
            if !self.scaled(c) {
                // The raw score is the score: added at every ranked node and checked,
                // without a branch.
                let mut out_of_range = false;
                for (total, &raw) in rows {
                    let ranked = *total != Tournament::OUT;
                    out_of_range |= ranked & !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&raw);
                    let score = if ranked {
                        (raw as Total).wrapping_mul(weight)
                    } else {
                        0
                    };
                    *total = total.wrapping_add(score);
                }
                if out_of_range {
                    return false;
                }
                continue;
            }
            // Most nodes have the same raw score as the node before: its score is
            // normalised once.
            let mut last: Option<(i64, Total)> = None;
            for (total, &raw) in rows {
                if *total == Tournament::OUT {
                    continue;
                }
                let score = match last {
                    Some((r, score)) if r == raw => score,
                    _ => {
                        let score = self.normalized(c, raw);
                        if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&score) {
                            return false;
                        }
                        let score = score as Total;
                        last = Some((raw, score));
                        score
                    }
                };
                *total += score * weight;
            }
        }
        true
    }

    /// The best node: the highest total, the first in node order among equals.
    pub(super) fn best(&self) -> Option<usize> {
        self.best.best()
    }
}

/// The raw scores a scaled column's scores are normalised against: the lowest and the
/// highest over the ranked nodes for [`Normalization::MinMax`]; for
/// [`Normalization::ScaledToMax`], the highest (at least 0) alone, the lowest left at 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Extremes {
    lowest: i64,
    highest: i64,
}

/// A raw score normalised as `rule` says, given the column's extreme raw scores.
fn normalize(rule: Normalization, raw: i64, extremes: Extremes) -> i64 {
    match rule {
        Normalization::ScaledToMax { reverse } => {
            scale_to_max_score(raw, extremes.highest, reverse)
        }
        Normalization::MinMax => min_max_score(raw, extremes.lowest, extremes.highest),
        _ => raw,
    }
}

/// How many ranked nodes have each raw score of one column, in a vector sorted by
/// score: a column has few distinct scores, and a short vector is searched faster than
/// a tree is walked.
#[derive(Clone, Default)]
struct Counts(Vec<(i64, u32)>);

impl Counts {
    /// Counts the raw score of every node that is `ranked` (a flag per node, in node
    /// order).
    fn add_ranked(&mut self, raws: &[i64], ranked: impl Iterator<Item = bool>) {
        // Runs of equal scores are counted at once: most nodes score alike.
        let mut run: Option<(i64, u32)> = None;
        for (&raw, _) in raws.iter().zip(ranked).filter(|(_, r)| *r) {
            run = match run {
                Some((value, n)) if value == raw => Some((value, n + 1)),
                Some((value, n)) => {
                    self.add_n(value, n);
                    Some((raw, 1))
                }
                None => Some((raw, 1)),
            };
        }
        if let Some((value, n)) = run {
            self.add_n(value, n);
        }
    }

    fn add(&mut self, raw: i64) {
        self.add_n(raw, 1);
    }

    fn add_n(&mut self, raw: i64, n: u32) {
        match self.0.binary_search_by_key(&raw, |&(r, _)| r) {
            Ok(at) => self.0[at].1 += n,
            Err(at) => self.0.insert(at, (raw, n)),
        }
    }

    fn remove(&mut self, raw: i64) {
        if let Ok(at) = self.0.binary_search_by_key(&raw, |&(r, _)| r) {
            self.0[at].1 -= 1;
            if self.0[at].1 == 0 {
                self.0.remove(at);
            }
        }
    }

    /// The highest counted raw score, at least 0 (the max that kube-scheduler's
    /// `DefaultNormalizeScore` scales with).
    fn maximum(&self) -> i64 {
        self.0.last().map_or(0, |&(raw, _)| raw).max(0)
    }

    /// What a column of `rule` normalises against ([`Extremes`]); both 0 when nothing
    /// is counted.
    fn extremes(&self, rule: Normalization) -> Extremes {
        match rule {
            Normalization::MinMax => Extremes {
                lowest: self.0.first().map_or(0, |&(raw, _)| raw),
                highest: self.0.last().map_or(0, |&(raw, _)| raw),
            },
            _ => Extremes {
                lowest: 0,
                highest: self.maximum(),
            },
        }
    }
}

/// A tournament tree over the nodes' totals: the winner is the highest total, the
/// first in node order among equals (FORMAT.md's pick); updating one node costs
/// O(log n). The leaves are blocks of [`Tournament::BLOCK`] nodes, whose winner is found
/// by looking at each, and each match keeps its winner's total, so that the tree takes
/// one byte per node and a climb reads only the tree (which stays in cache when the
/// totals of 50,000 nodes do not).
#[derive(Clone, Default)]
pub(super) struct Tournament {
    /// Each node's total; [`Tournament::OUT`] for a node out of the running.
    totals: Vec<Total>,
    /// The winner of each match: block `b`'s winner is at `blocks + b`, and the match
    /// at `k` is between `2k` and `2k + 1`, so that every block plays up to the final
    /// at 1 whatever the number of blocks.
    tree: Vec<Seat>,
}

/// A node and its total, as a match of the [`Tournament`] keeps its winner.
#[derive(Clone, Copy, Debug, Default)]
struct Seat {
    total: Total,
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
    const OUT: Total = Total::MIN;

    /// How many nodes a leaf of the tree holds: a block of totals is one cache line.
    const BLOCK: usize = 16;

    /// A total per node, and two seats per block.
    const BYTES_PER_NODE: usize =
        std::mem::size_of::<Total>() + 2 * std::mem::size_of::<Seat>() / Self::BLOCK;

    /// An empty tournament of `nodes` nodes, none in the running.
    #[cfg(test)]
    fn new(nodes: usize) -> Tournament {
        let mut best = Tournament::default();
        best.fill(vec![Self::OUT; nodes]);
        best
    }

    /// The totals, to be filled again.
    fn into_totals(self) -> Vec<Total> {
        self.totals
    }

    fn bytes(&self) -> usize {
        self.totals.len() * 4 + self.tree.len() * std::mem::size_of::<Seat>()
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

    /// Sets every node's total at once ([`Tournament::OUT`] for a node out of the
    /// running), in O(n).
    pub(super) fn fill(&mut self, totals: Vec<Total>) {
        self.totals = totals;
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

    /// A node's total, [`Tournament::OUT`] when it is out of the running.
    fn total(&self, node: usize) -> Total {
        self.totals[node]
    }

    /// Sets a node's total; [`Tournament::refresh`] then brings the matches up to date.
    pub(super) fn set_total(&mut self, node: usize, total: Option<Total>) {
        self.totals[node] = total.unwrap_or(Self::OUT);
    }

    /// Plays again the matches of `nodes` (in node order), whose totals changed: each
    /// match once per round however many of them it holds, so that the upper rounds,
    /// shared by all, are played once.
    pub(super) fn refresh(&mut self, nodes: &[usize]) {
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

    pub(super) fn best(&self) -> Option<usize> {
        // With one block, its leaf is at 1.
        let winner = self.tree.get(1)?;
        (winner.total != Self::OUT).then_some(winner.node as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::{Counts, Extremes, Ranking, Total, Tournament, normalize};
    use crate::plugin::Normalization;

    #[test]
    fn weights_whose_totals_may_not_fit_16_bits_are_not_ranked() {
        let rules = |weight| vec![(weight, Normalization::Identity); 2];
        // 2 * 100 * 163 = 32,600 fits; one more each does not.
        assert!(Ranking::build(rules(163), vec![false; 3], &[], &[]).is_some());
        assert!(Ranking::build(rules(164), vec![false; 3], &[], &[]).is_none());
        assert!(Ranking::build(rules(-1), vec![false; 3], &[], &[]).is_none());
    }

    /// The first node with the highest total, by looking at every node.
    fn first_best(totals: &[Option<Total>]) -> Option<usize> {
        let best = totals.iter().flatten().max()?;
        totals.iter().position(|t| t.as_ref() == Some(best))
    }

    #[test]
    fn tournament_picks_the_first_best_whatever_the_number_of_nodes() {
        for nodes in 0..90usize {
            let mut totals: Vec<Option<Total>> = (0..nodes)
                .map(|i| (i % 3 != 0).then_some((i as Total * 7) % 5))
                .collect();
            let mut best = Tournament::new(nodes);
            assert_eq!(best.best(), None, "{nodes} empty nodes");
            best.fill(
                totals
                    .iter()
                    .map(|t| t.unwrap_or(Tournament::OUT))
                    .collect(),
            );
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
                    let total = ((step + k) % 4 != 3).then_some(((step * 13 + k) % 9) as Total);
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

    #[test]
    fn counts_know_the_highest_score_as_scores_come_and_go() {
        let mut counts = Counts::default();
        assert_eq!(counts.maximum(), 0);
        for raw in [3, -2, 7, 3, 7] {
            counts.add(raw);
        }
        assert_eq!(counts.maximum(), 7);
        counts.remove(7);
        assert_eq!(counts.maximum(), 7);
        counts.remove(7);
        assert_eq!(counts.maximum(), 3);
        counts.remove(3);
        counts.remove(3);
        // Only a negative score left: the max is 0, as DefaultNormalizeScore takes it.
        assert_eq!(counts.maximum(), 0);
        counts.remove(-2);
        assert!(counts.0.is_empty());
    }

    #[test]
    fn min_max_columns_normalise_against_the_lowest_and_the_highest_score() {
        let mut counts = Counts::default();
        let rule = Normalization::MinMax;
        assert_eq!(counts.extremes(rule), Extremes::default());
        for raw in [40, -10, 90] {
            counts.add(raw);
        }
        let extremes = counts.extremes(rule);
        assert_eq!((extremes.lowest, extremes.highest), (-10, 90));
        assert_eq!(normalize(rule, -10, extremes), 0);
        assert_eq!(normalize(rule, 40, extremes), 50);
        assert_eq!(normalize(rule, 90, extremes), 100);
        // A scaled-to-max column leaves the lowest alone.
        let scaled = counts.extremes(Normalization::ScaledToMax { reverse: false });
        assert_eq!((scaled.lowest, scaled.highest), (0, 90));
        // Every node alike: all score the lowest.
        counts.remove(-10);
        counts.remove(90);
        assert_eq!(normalize(rule, 40, counts.extremes(rule)), 0);
    }
}
