//! kube-scheduler's OpportunisticBatching (feature gate `OpportunisticBatching`, beta
//! and on by default in v1.35 and v1.36; `pkg/scheduler/framework/runtime/batch.go`),
//! one [`OpportunisticBatch`] per profile.
//!
//! After a cycle that scored several nodes for a pod with a signature
//! ([`crate::signature`]), the batch keeps that signature and the other scored nodes,
//! best first. The next pod gets the head of that list as a hint when:
//!
//! - it is the very next scheduling cycle, and the previous one chose a node;
//! - the pod has the same signature;
//! - the kept list is younger than [`MAX_BATCH_AGE`];
//! - the node chosen last no longer passes the pod's filters: the pods go one per
//!   node, so the other nodes' scores are unchanged and the next best is the next in
//!   the list. (Were the chosen node still feasible, its new score is unknown.)
//!
//! The cycle then filters only the hinted node; if it passes, the pod goes there
//! without a search or scoring, and the list (one node shorter) stays for the next
//! pod. If not, the cycle searches as usual and keeps its own results instead.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::cycle_state::CycleState;
use crate::framework::Framework;
use crate::pod_info::PodInfo;
use crate::signature::PodSignature;
use crate::snapshot::Snapshot;

/// How long kept results may be used: kube-scheduler's `maxBatchAge`.
pub const MAX_BATCH_AGE: Duration = Duration::from_millis(500);

/// The `result` label values of `scheduler_batch_attempts_total`.
pub mod attempt {
    /// No hint could be given.
    pub const NO_HINT: &str = "no_hint";
    /// The hinted node was chosen.
    pub const HINT_USED: &str = "hint_used";
    /// A hint was given but another node was chosen.
    pub const HINT_NOT_USED: &str = "hint_not_used";
}

/// The `reason` label values of `scheduler_batch_cache_flushed_total`.
pub mod flush {
    /// The previous cycle failed.
    pub const POD_FAILED: &str = "pod_failed";
    /// A cycle came in between (another profile's, or one that chose no node).
    pub const POD_SKIPPED: &str = "pod_skipped";
    /// The node chosen last is gone.
    pub const NODE_MISSING: &str = "node_missing";
    /// The node chosen last still fits the pod.
    pub const NODE_NOT_FULL: &str = "node_not_full";
    /// The cycle left no other scored node to keep.
    pub const EMPTY_LIST: &str = "empty_list";
    /// The kept results are older than [`MAX_BATCH_AGE`](super::MAX_BATCH_AGE).
    pub const EXPIRED: &str = "expired";
    /// The pod's signature differs from the kept one (or it has none).
    pub const POD_INCOMPATIBLE: &str = "pod_incompatible";
    /// The pod has no signature, so its results are not kept.
    pub const POD_NOT_BATCHABLE: &str = "pod_not_batchable";
}

struct Kept {
    signature: PodSignature,
    /// The other scored nodes of the cycle that kept them, best first.
    sorted_nodes: VecDeque<String>,
    created: Instant,
}

struct LastCycle {
    cycle: u64,
    chosen_node: String,
    succeeded: bool,
}

/// One profile's batching state: kube-scheduler's `OpportunisticBatch`.
#[derive(Default)]
pub struct OpportunisticBatch {
    kept: Option<Kept>,
    last_cycle: Option<LastCycle>,
    batched_pods: u64,
}

impl std::fmt::Debug for OpportunisticBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpportunisticBatch")
            .field(
                "kept_nodes",
                &self.kept.as_ref().map(|k| k.sorted_nodes.len()),
            )
            .field("batched_pods", &self.batched_pods)
            .finish()
    }
}

/// What [`OpportunisticBatch::get_node_hint`] found: the hinted node, if any, and the
/// pod's signature, which the cycle hands back to
/// [`OpportunisticBatch::store_schedule_results`].
#[derive(Clone, Debug, Default)]
pub struct NodeHint {
    /// The node to try first.
    pub node: Option<String>,
    /// The pod's signature (`None`: unbatchable).
    pub signature: Option<PodSignature>,
}

impl OpportunisticBatch {
    /// How many pods went to their hinted node.
    pub fn batched_pods(&self) -> u64 {
        self.batched_pods
    }

    /// Signs the pod and, when the kept results apply to it, takes the next node from
    /// them as its hint (kube-scheduler's `GetNodeHint`). Runs after PreFilter: the
    /// check of the node chosen last uses the cycle's state.
    #[allow(clippy::too_many_arguments)]
    pub fn get_node_hint(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        cycle: u64,
        now: Instant,
    ) -> NodeHint {
        let start = fwk.observer().map(|_| Instant::now());
        let signature = fwk.sign_pod(state, pod);
        let node = if self.compatible(fwk, state, pod, signature.as_ref(), cycle, snapshot, now) {
            self.kept.as_mut().and_then(|k| k.sorted_nodes.pop_front())
        } else {
            if let Some(o) = fwk.observer() {
                o.batch_attempt(fwk.profile_name(), attempt::NO_HINT);
            }
            None
        };
        if let (Some(o), Some(start)) = (fwk.observer(), start) {
            o.observe_node_hint(fwk.profile_name(), node.is_some(), start.elapsed());
        }
        NodeHint { node, signature }
    }

    /// Records a cycle that chose `chosen` (kube-scheduler's `StoreScheduleResults`):
    /// when the hint was taken the kept results stay; otherwise the pod's own results
    /// replace them, if it has a signature and other scored nodes. `other_nodes` makes
    /// the cycle's other scored nodes, best first (called only when they are kept);
    /// `other_len` is how many there are.
    #[allow(clippy::too_many_arguments)]
    pub fn store_schedule_results(
        &mut self,
        fwk: &Framework,
        hint: NodeHint,
        chosen: &str,
        other_len: usize,
        other_nodes: impl FnOnce() -> VecDeque<String>,
        cycle: u64,
        now: Instant,
    ) {
        let start = fwk.observer().map(|_| Instant::now());
        let profile = fwk.profile_name();
        self.last_cycle = Some(LastCycle {
            cycle,
            chosen_node: chosen.to_string(),
            succeeded: true,
        });
        if hint.node.as_deref() == Some(chosen) {
            if let Some(o) = fwk.observer() {
                o.batch_attempt(profile, attempt::HINT_USED);
            }
            self.batched_pods += 1;
        } else {
            if hint.node.is_some()
                && let Some(o) = fwk.observer()
            {
                o.batch_attempt(profile, attempt::HINT_NOT_USED);
            }
            match hint.signature {
                Some(signature) if other_len > 0 => {
                    self.kept = Some(Kept {
                        signature,
                        sorted_nodes: other_nodes(),
                        created: now,
                    });
                }
                signature => {
                    let reason = if other_len == 0 {
                        flush::EMPTY_LIST
                    } else {
                        debug_assert!(signature.is_none());
                        flush::POD_NOT_BATCHABLE
                    };
                    self.flushed(fwk, reason);
                    self.kept = None;
                }
            }
        }
        if let (Some(o), Some(start)) = (fwk.observer(), start) {
            o.observe_store_schedule_results(profile, start.elapsed());
        }
    }

    fn flushed(&self, fwk: &Framework, reason: &'static str) {
        if let Some(o) = fwk.observer() {
            o.batch_cache_flushed(fwk.profile_name(), reason);
        }
    }

    /// Whether the kept results give this pod a hint (kube-scheduler's
    /// `batchStateCompatible`). A reason not to is counted as a flush, but (as in
    /// kube-scheduler) the kept results stay until the next stored cycle replaces them.
    #[allow(clippy::too_many_arguments)]
    fn compatible(
        &self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        signature: Option<&PodSignature>,
        cycle: u64,
        snapshot: &Snapshot,
        now: Instant,
    ) -> bool {
        let Some(kept) = self.kept.as_ref().filter(|k| !k.sorted_nodes.is_empty()) else {
            return false;
        };
        let (last, last_chosen, succeeded) = match &self.last_cycle {
            Some(l) => (l.cycle, l.chosen_node.as_str(), l.succeeded),
            None => (0, "", false),
        };
        let reason = if cycle != last.wrapping_add(1) {
            flush::POD_SKIPPED
        } else if !succeeded {
            flush::POD_FAILED
        } else if signature != Some(&kept.signature) {
            flush::POD_INCOMPATIBLE
        } else if now > kept.created + MAX_BATCH_AGE {
            flush::EXPIRED
        } else {
            match snapshot.index_of(last_chosen) {
                None => flush::NODE_MISSING,
                Some(i) => {
                    let status = fwk.run_filter_plugins(state, pod, snapshot.node_at(i));
                    if status.is_rejected() {
                        return true;
                    }
                    flush::NODE_NOT_FULL
                }
            }
        };
        self.flushed(fwk, reason);
        false
    }
}
