//! Filling nodes with copies of a pod, node by node: what scheduling the copies one at
//! a time until none fits would leave, without the one-at-a-time cycles
//! (`kubesched capacity` counts hundreds of thousands of copies so).
//!
//! When every plugin that can refuse or remember the pod treats it node by node
//! ([`Plugin::node_local`](crate::Plugin::node_local)), a copy's verdict on a node
//! depends on that node and the copies already on it, and on nothing placed elsewhere.
//! Scheduling copies one at a time then adds copies to each node until its Filter
//! plugins refuse the next one, and stops when every node refuses: whatever the scores
//! (which only choose the order), each node ends with the number of copies that
//! filling it alone gives. The fill computes exactly that, each node on its own copy
//! of the node's state (in parallel), and then adds the copies to the snapshot. Only
//! a limit smaller than the total makes the order matter; the fill then declines.

use std::sync::Arc;

use rayon::prelude::*;

use crate::cycle_state::CycleState;
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::schedule::Scheduler;

/// Why [`Scheduler::fill_nodes`] did not fill: the copies must be scheduled one at a
/// time (or not at all), through [`Scheduler::schedule_one`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoFill {
    /// No profile has the pod's scheduler name.
    NotOurs,
    /// A PreEnqueue plugin holds the pod back.
    Gated,
    /// This plugin does not treat the pod node by node.
    NotNodeLocal(String),
    /// PreFilter did not pass: the one-at-a-time cycle says why.
    PreFilter,
    /// More copies than the limit fit: where the limit stops depends on the scores.
    OverLimit,
    /// The caller chose not to fill.
    Declined,
}

impl std::fmt::Display for NoFill {
    /// Why the copies go one at a time, as `kubesched capacity` says it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoFill::NotOurs => f.write_str("no profile has the pod's scheduler name"),
            NoFill::Gated => f.write_str("a PreEnqueue plugin holds the pod back"),
            NoFill::NotNodeLocal(plugin) => {
                write!(f, "{plugin} does not treat the pod node by node")
            }
            NoFill::PreFilter => f.write_str("the pod does not pass PreFilter"),
            NoFill::OverLimit => f.write_str("more copies fit than the limit"),
            NoFill::Declined => f.write_str("asked to"),
        }
    }
}

impl Scheduler {
    /// Fills every node with copies of `pod` (see the module doc), adds them to the
    /// snapshot, and returns the number of copies per node, in node order. All copies
    /// on a node share one [`PodInfo`] (bound to the node), so memory grows by a
    /// pointer per copy. Changes nothing when it declines ([`NoFill`]), including when
    /// more than `limit` copies would fit.
    pub fn fill_nodes(
        &mut self,
        pod: &Arc<PodInfo>,
        limit: Option<usize>,
    ) -> Result<Vec<usize>, NoFill> {
        let index = self
            .profile_index(pod.scheduler_name())
            .ok_or(NoFill::NotOurs)?;
        let fwk = self.profiles()[index].clone();
        if !fwk.run_pre_enqueue_plugins(pod).is_success() {
            return Err(NoFill::Gated);
        }
        if let Some(name) = fwk.first_not_node_local(pod) {
            return Err(NoFill::NotNodeLocal(name));
        }
        let mut state = CycleState::new();
        let pre = fwk.run_pre_filter_plugins(&mut state, pod, self.snapshot());
        if !pre.status.is_success() {
            return Err(NoFill::PreFilter);
        }
        let snapshot = self.snapshot();
        let candidates: Vec<usize> = match &pre.result.node_names {
            None => (0..snapshot.num_nodes()).collect(),
            Some(names) => names.iter().filter_map(|n| snapshot.index_of(n)).collect(),
        };
        let nominated = self.nominated_pods();
        // A node that takes more than the limit settles the answer: stop filling it.
        let most = limit.map_or(usize::MAX, |l| l.saturating_add(1));
        let fill_one = |i: usize| -> (usize, usize, Option<Arc<PodInfo>>) {
            let mut node: NodeInfo = snapshot.node_at(i).clone();
            let copy = Arc::new(pod.bound_to(node.name()));
            let mut placed = 0;
            while placed < most
                && fwk
                    .run_filter_plugins_with_nominated_pods(&state, pod, &node, nominated)
                    .is_success()
            {
                node.add_pod(copy.clone());
                placed += 1;
            }
            (i, placed, (placed > 0).then_some(copy))
        };
        let filled: Vec<(usize, usize, Option<Arc<PodInfo>>)> =
            candidates.into_par_iter().map(fill_one).collect();
        let total = filled
            .iter()
            .fold(0usize, |sum, (_, n, _)| sum.saturating_add(*n));
        if limit.is_some_and(|l| total > l) {
            return Err(NoFill::OverLimit);
        }
        let mut per_node = vec![0; self.snapshot().num_nodes()];
        for (i, placed, copy) in filled {
            per_node[i] = placed;
            if let Some(copy) = copy {
                for _ in 0..placed {
                    self.snapshot_mut().add_pod(copy.clone());
                }
            }
        }
        Ok(per_node)
    }
}
