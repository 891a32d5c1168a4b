//! The points before a node is chosen, up to PostFilter: PreEnqueue, the queue's order,
//! PreFilter (and its AddPod/RemovePod extensions), Filter on one node, on many nodes
//! and with nominated pods, and PostFilter.

use super::{Framework, NominatedPods, rejection_or_error};
use crate::cycle_state::CycleState;
use crate::node_info::NodeInfo;
use crate::observer::{evaluated, sampled, timed};
use crate::plugin::*;
use crate::pod_info::PodInfo;
use crate::snapshot::Snapshot;
use crate::status::{Code, Status};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What [`Framework::run_pre_filter_plugins`] found.
#[derive(Clone, Debug, Default)]
pub struct PreFilterOutcome {
    /// The merged node subset (all nodes when no plugin narrowed it).
    pub result: PreFilterResult,
    /// Success, or the rejection that ends the attempt.
    pub status: Status,
    /// The plugins that narrowed the node set.
    pub narrowing_plugins: BTreeSet<String>,
}

impl Framework {
    /// Runs PreEnqueue plugins; the first that does not succeed keeps the pod out.
    pub fn run_pre_enqueue_plugins(&self, pod: &PodInfo) -> Status {
        self.timed_point("PreEnqueue", Status::code, || self.pre_enqueue_untimed(pod))
    }

    fn pre_enqueue_untimed(&self, pod: &PodInfo) -> Status {
        for w in &self.pre_enqueue {
            let s = w.plugin.pre_enqueue(pod);
            if !s.is_success() {
                return s.with_plugin(w.name.clone());
            }
        }
        Status::success()
    }

    /// `true` when `a` goes before `b` in the queue.
    pub fn queue_less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        self.queue_sort.plugin.less(a, b)
    }

    /// Runs PreFilter plugins in order, as kube-scheduler's `RunPreFilterPlugins`:
    /// Skip marks the plugin's Filter to be skipped; UnschedulableAndUnresolvable stops
    /// at once; Unschedulable is remembered while the others still run; node subsets
    /// are intersected, and an empty intersection rejects every node.
    pub fn run_pre_filter_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        self.timed_point(
            "PreFilter",
            |o: &PreFilterOutcome| o.status.code(),
            || self.pre_filter_untimed(state, pod, snapshot),
        )
    }

    fn pre_filter_untimed(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        let mut result = PreFilterResult::all_nodes();
        let mut narrowing = BTreeSet::new();
        let mut skip = BTreeSet::new();
        let mut returned = Status::success();
        let obs = sampled(&self.observer, state);
        for w in &self.pre_filter {
            evaluated(&self.observer, &self.profile_name, &w.name, "PreFilter", 1);
            let (r, s) = timed(
                obs,
                &w.name,
                "PreFilter",
                |r: &(_, Status)| r.1.code(),
                || w.plugin.pre_filter(state, pod, snapshot),
            );
            if s.is_skip() {
                skip.insert(w.name.to_string());
                continue;
            }
            if !s.is_success() {
                let s = s.with_plugin(w.name.clone());
                match s.code() {
                    Code::UnschedulableAndUnresolvable => {
                        self.set_skip_filter(state, skip);
                        return PreFilterOutcome {
                            result: PreFilterResult::all_nodes(),
                            status: s,
                            narrowing_plugins: BTreeSet::new(),
                        };
                    }
                    Code::Unschedulable => {
                        returned = s;
                        continue;
                    }
                    _ => {
                        self.set_skip_filter(state, skip);
                        let status = Status::error(format!(
                            "running PreFilter plugin {:?}: {}",
                            &*w.name,
                            s.message()
                        ))
                        .with_plugin(w.name.clone());
                        return PreFilterOutcome {
                            result: PreFilterResult::all_nodes(),
                            status,
                            narrowing_plugins: BTreeSet::new(),
                        };
                    }
                }
            }
            let r = r.unwrap_or_default();
            if !r.is_all_nodes() {
                narrowing.insert(w.name.to_string());
            }
            result = result.merge(r);
            if result.node_names.as_ref().is_some_and(BTreeSet::is_empty) {
                let message = if narrowing.len() == 1 {
                    format!(
                        "node(s) didn't satisfy plugin {}",
                        narrowing.first().unwrap()
                    )
                } else {
                    format!(
                        "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                        narrowing.iter().cloned().collect::<Vec<_>>().join(" ")
                    )
                };
                self.set_skip_filter(state, skip);
                return PreFilterOutcome {
                    result,
                    status: Status::new(Code::UnschedulableAndUnresolvable, message),
                    narrowing_plugins: narrowing,
                };
            }
        }
        self.set_skip_filter(state, skip);
        PreFilterOutcome {
            result,
            status: returned,
            narrowing_plugins: narrowing,
        }
    }

    /// Records the plugins whose PreFilter skipped, by name and as flags over the Filter
    /// list.
    fn set_skip_filter(&self, state: &mut CycleState, skip: BTreeSet<String>) {
        let mask = self
            .filter
            .iter()
            .map(|w| skip.contains(&*w.name))
            .collect();
        state.set_skip_filter_plugins(skip, mask);
    }

    /// Runs the PreFilter AddPod extensions (preemption's what-if evaluation).
    pub fn run_pre_filter_extension_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extensions(state, "AddPod", |ext, state| {
            ext.add_pod(state, pod, pod_to_add, node)
        })
    }

    /// Runs the PreFilter RemovePod extensions (preemption's what-if evaluation).
    pub fn run_pre_filter_extension_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extensions(state, "RemovePod", |ext, state| {
            ext.remove_pod(state, pod, pod_to_remove, node)
        })
    }

    /// Calls one PreFilter extension of every PreFilter plugin that did not skip this
    /// cycle; the first failure is an error naming the plugin.
    fn run_pre_filter_extensions(
        &self,
        state: &mut CycleState,
        operation: &str,
        call: impl Fn(&dyn PreFilterExtensions, &mut CycleState) -> Status,
    ) -> Status {
        for w in &self.pre_filter {
            if state.skip_filter_plugins().contains(&*w.name) {
                continue;
            }
            if let Some(ext) = w.plugin.pre_filter_extensions() {
                let s = call(ext, state);
                if !s.is_success() {
                    return Status::error(format!(
                        "running {operation} on PreFilter plugin {:?}: {}",
                        &*w.name,
                        s.message()
                    ));
                }
            }
        }
        Status::success()
    }

    /// Runs the Filter plugins on one node, stopping at the first that does not
    /// succeed; its status carries the plugin's name.
    pub fn run_filter_plugins(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let obs = sampled(&self.observer, state);
        for (i, w) in self.filter.iter().enumerate() {
            if state.skips_filter(i) {
                continue;
            }
            evaluated(&self.observer, &self.profile_name, &w.name, "Filter", 1);
            let s = timed(obs, &w.name, "Filter", Status::code, || {
                w.plugin.filter(state, pod, node)
            });
            if !s.is_success() {
                let s = rejection_or_error(s, || format!("running {:?} filter plugin", &*w.name));
                return s.with_plugin(w.name.clone());
            }
        }
        Status::success()
    }

    /// Runs the Filter plugins on a run of nodes: pushes `(i, status)` onto `rejected`
    /// for each `nodes[i]` that [`Framework::run_filter_plugins`] rejects, with the
    /// status it gives, in increasing `i`; the nodes not listed are feasible.
    ///
    /// Plugin by plugin rather than node by node: each plugin sees, in one call, the
    /// nodes that every plugin before it let through
    /// ([`FilterPlugin::filter_nodes`]). Filters
    /// are independent per node, so each node's status is the same as node by node. In
    /// a sampled cycle (an observer timing each plugin call) it runs node by node.
    pub fn run_filter_plugins_on_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let first = rejected.len();
        if sampled(&self.observer, state).is_some() {
            for (i, node) in nodes.iter().enumerate() {
                let status = self.run_filter_plugins(state, pod, node);
                if !status.is_success() {
                    rejected.push((i, status));
                }
            }
            return;
        }
        // The nodes still feasible, with their positions in `nodes`.
        let mut alive: Vec<&NodeInfo> = nodes.to_vec();
        let mut positions: Vec<usize> = (0..nodes.len()).collect();
        let mut verdicts = Vec::new();
        for (i, w) in self.filter.iter().enumerate() {
            if alive.is_empty() {
                break;
            }
            if state.skips_filter(i) {
                continue;
            }
            evaluated(
                &self.observer,
                &self.profile_name,
                &w.name,
                "Filter",
                alive.len(),
            );
            w.plugin.filter_nodes(state, pod, &alive, &mut verdicts);
            if verdicts.is_empty() {
                continue;
            }
            let mut dropped = verdicts.drain(..).peekable();
            let mut kept = 0;
            for j in 0..alive.len() {
                if let Some((_, status)) = dropped.next_if(|(at, _)| *at == j) {
                    let status = rejection_or_error(status, || {
                        format!("running {:?} filter plugin", &*w.name)
                    });
                    rejected.push((positions[j], status.with_plugin(w.name.clone())));
                } else {
                    alive[kept] = alive[j];
                    positions[kept] = positions[j];
                    kept += 1;
                }
            }
            debug_assert!(
                dropped.next().is_none(),
                "{} rejected nodes out of order or out of range",
                w.name
            );
            drop(dropped);
            alive.truncate(kept);
            positions.truncate(kept);
        }
        rejected[first..].sort_by_key(|(i, _)| *i);
    }

    /// The Filter plugin at `position` in the profile's Filter list alone, on `nodes`
    /// (`position` is one PreFilter did not skip): pushes `(i, status)` onto
    /// `rejected` for each `nodes[i]` it does not pass, in increasing `i`, with the
    /// status [`Framework::run_filter_plugins_on_nodes`] would give when this plugin is
    /// the first to reject the node (the plugin named; an error in its context). Exact
    /// incremental scheduling keeps each plugin's verdicts apart
    /// ([`crate::incremental`]); the first rejection in the profile's order is then the
    /// node's, as in a pass over all of them.
    pub(crate) fn filter_with_plugin(
        &self,
        position: usize,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let Some(w) = self.filter.get(position) else {
            return;
        };
        evaluated(
            &self.observer,
            &self.profile_name,
            &w.name,
            "Filter",
            nodes.len(),
        );
        let name = |status: Status| {
            rejection_or_error(status, || format!("running {:?} filter plugin", &*w.name))
                .with_plugin(w.name.clone())
        };
        if nodes.len() < super::PLUGIN_PARALLEL_THRESHOLD {
            let first = rejected.len();
            w.plugin.filter_nodes(state, pod, nodes, rejected);
            for (_, status) in &mut rejected[first..] {
                *status = name(std::mem::take(status));
            }
            return;
        }
        use rayon::prelude::*;
        let piece = nodes.len().div_ceil(rayon::current_num_threads() * 4);
        let pieces: Vec<Vec<(usize, Status)>> = nodes
            .par_chunks(piece)
            .enumerate()
            .map(|(k, run)| {
                let mut found = Vec::new();
                w.plugin.filter_nodes(state, pod, run, &mut found);
                for (i, status) in &mut found {
                    *i += k * piece;
                    *status = name(std::mem::take(status));
                }
                found
            })
            .collect();
        rejected.extend(pieces.into_iter().flatten());
    }

    /// Runs the Filter plugins on one node with the pods nominated to it, as
    /// kube-scheduler's `RunFilterPluginsWithNominatedPods`. When pods of priority
    /// greater than or equal to `pod`'s are nominated to the node, the filters run
    /// first with those pods added (to a copy of the node and of `state`, through the
    /// PreFilter AddPod extensions) and, if that passes, again without them: the pod
    /// must fit whether or not the nominated pods end up there. Without such pods this
    /// is [`Framework::run_filter_plugins`].
    pub fn run_filter_plugins_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        nominated: &NominatedPods,
    ) -> Status {
        let more_important: Vec<&Arc<PodInfo>> = nominated
            .for_node(node.name())
            .iter()
            .filter(|p| p.priority() >= pod.priority() && p.uid() != pod.uid())
            .collect();
        if more_important.is_empty() {
            return self.run_filter_plugins(state, pod, node);
        }
        let mut state_with = state.clone();
        let mut node_with = node.clone();
        for p in more_important {
            let added = if p.node_name() == Some(node.name()) {
                p.clone()
            } else {
                Arc::new(p.bound_to(node.name()))
            };
            node_with.add_pod(added.clone());
            let s = self.run_pre_filter_extension_add_pod(&mut state_with, pod, &added, &node_with);
            if !s.is_success() {
                return s;
            }
        }
        let s = self.run_filter_plugins(&state_with, pod, &node_with);
        if !s.is_success() {
            return s;
        }
        self.run_filter_plugins(state, pod, node)
    }

    /// Runs the PostFilter plugins, as kube-scheduler's `RunPostFilterPlugins`: the
    /// first success or UnschedulableAndUnresolvable ends the run; otherwise the
    /// reasons of all are joined.
    ///
    /// The plugins get a [`PostFilterContext`] with this framework, `snapshot` and
    /// `nominated`.
    pub fn run_post_filter_plugins(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated: &NominatedPods,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        self.timed_point(
            "PostFilter",
            |r: &(_, Status)| r.1.code(),
            || self.post_filter_untimed(state, pod, snapshot, nominated, filtered),
        )
    }

    fn post_filter_untimed(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated: &NominatedPods,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let ctx = PostFilterContext {
            framework: self,
            snapshot,
            nominated_pods: nominated,
        };
        let mut result = None;
        let mut reasons = Vec::new();
        let mut rejector: Option<Arc<str>> = None;
        let obs = sampled(&self.observer, state);
        for w in &self.post_filter {
            let (r, s) = timed(
                obs,
                &w.name,
                "PostFilter",
                |r: &(_, Status)| r.1.code(),
                || w.plugin.post_filter(&ctx, state, pod, filtered),
            );
            if s.is_success() {
                return (r, s);
            }
            if s.code() == Code::UnschedulableAndUnresolvable {
                return (r, s.with_plugin(w.name.clone()));
            }
            if !s.is_rejected() {
                return (None, s.with_plugin(w.name.clone()));
            }
            if r.is_some() {
                result = r;
            }
            reasons.extend(s.reasons().iter().cloned());
            rejector.get_or_insert_with(|| w.name.clone());
        }
        let mut status = Status::with_reasons(Code::Unschedulable, reasons);
        if let Some(r) = rejector {
            status.set_plugin(r);
        }
        (result, status)
    }
}
