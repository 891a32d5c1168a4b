//! Following the snapshot's node moves
//! ([`Snapshot::moves_since`](crate::snapshot::Snapshot::moves_since): nodes added at
//! the end, nodes removed) with what is kept per node: the columns' answers, an entry's
//! verdicts, a ranking's totals. Each keeps its own side effects; the walk, and where it
//! cannot go on, is here. It imports nothing of the incremental module.

use crate::snapshot::Move;

/// Walks `moves` over something kept per node that was of `len` nodes before them:
/// `apply` gets each move in turn, a removal only when it names a position there is
/// then. `false`, stopping there, at the first removal that names none (the moves
/// cannot be followed).
pub(super) fn follow_moves(mut len: usize, moves: &[Move], mut apply: impl FnMut(Move)) -> bool {
    for &one in moves {
        match one {
            Move::Appended => len += 1,
            Move::Removed(i) if i < len => len -= 1,
            Move::Removed(_) => return false,
        }
        apply(one);
    }
    true
}
