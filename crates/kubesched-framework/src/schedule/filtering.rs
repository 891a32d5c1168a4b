//! Finding the nodes that fit a pod: PreFilter, then Filter over the candidate nodes
//! (kube-scheduler's `findNodesThatFitPod` and `findNodesThatPassFilters`), from the
//! hint of a batch, from the verdicts exact incremental scheduling kept, or by a pass
//! over the nodes; and the cycle that ranks from kept totals.

use rayon::prelude::*;

use super::*;

/// How many nodes a sequential search filters in one run before checking whether it
/// has found enough: large enough to amortise a plugin call over many nodes, small
/// enough that an adaptive search that stops early wastes little.
const SEQUENTIAL_RUN: usize = 64;

impl Scheduler {
    /// PreFilter, then Filter over the candidate nodes. Returns the feasible nodes'
    /// indices (in node order for an exhaustive search, in search order otherwise), and
    /// when batching, what batching said of the pod. With a hinted node that passes the
    /// filters, that node alone, as kube-scheduler does.
    #[allow(clippy::type_complexity)]
    pub(super) fn find_nodes_that_fit(
        &mut self,
        profile: usize,
        state: &mut CycleState,
        pod: &PodInfo,
        key: Option<&Key>,
    ) -> Result<(Passed, Diagnosis, Option<NodeHint>), ScheduleError> {
        let fwk = self.profiles[profile].clone();
        let fwk = &*fwk;
        let mut diagnosis = Diagnosis::default();
        let pre = fwk.run_pre_filter_plugins(state, pod, &self.snapshot);
        diagnosis.unschedulable_plugins = pre.narrowing_plugins.clone();
        if !pre.status.is_success() {
            if !pre.status.is_rejected() {
                return Err(ScheduleError::Internal(pre.status));
            }
            diagnosis.pre_filter_msg = Some(pre.status.message());
            diagnosis.add_plugin_status(&pre.status);
            diagnosis.node_to_status.absent_nodes_status = Some(pre.status);
            return Ok((Passed::Listed(Vec::new()), diagnosis, None));
        }
        let hint = if self.options.batching {
            let now = self.clock.now();
            let hint = self.batches[profile].get_node_hint(
                fwk,
                state,
                pod,
                &self.snapshot,
                self.cycle,
                now,
            );
            Some(hint)
        } else {
            None
        };
        // kube-scheduler filters a hinted node first (whatever PreFilter narrowed the
        // nodes to), as it does a nominated one, and takes it if it passes. A rejection
        // stays in the diagnosis, which the search below shares.
        let mut hint_rejection = None;
        let in_placement = |i: &usize| {
            self.placement
                .as_ref()
                .is_none_or(|p| p.nodes.binary_search(i).is_ok())
        };
        if let Some(index) = hint
            .as_ref()
            .and_then(|h| h.node.as_deref())
            .and_then(|n| self.snapshot.index_of(n))
            .filter(in_placement)
        {
            let state: &CycleState = state;
            let snapshot = &self.snapshot;
            let nominated = &self.nominated_pods;
            let (feasible, rejected) = fwk.timed_point("Filter", filter_pass_code, || {
                if fwk.has_filter_plugins() {
                    filter_nodes(fwk, state, pod, snapshot, nominated, &[index], 0, 1)
                } else {
                    (vec![index], Vec::new())
                }
            });
            if !feasible.is_empty() {
                return Ok((Passed::Listed(feasible), diagnosis, hint));
            }
            // A failed filter is logged and forgotten by kube-scheduler; a rejection
            // is recorded.
            if let Some((i, status)) = rejected.into_iter().find(|(_, s)| s.is_rejected()) {
                diagnosis.add_plugin_status(&status);
                hint_rejection = Some((i, status));
            }
        }
        let snapshot = &self.snapshot;
        // The nodes PreFilter left, when it narrowed them; `None` is every node, not
        // listed, since a cycle on kept verdicts reads none of them.
        let listed: Option<Vec<usize>> = match &pre.result.node_names {
            None => None,
            Some(names) => {
                let mut v: Vec<usize> = names.iter().filter_map(|n| snapshot.index_of(n)).collect();
                v.sort_unstable();
                diagnosis.node_to_status.absent_nodes_status = Some(Status::new(
                    Code::UnschedulableAndUnresolvable,
                    format!(
                        "node(s) didn't satisfy plugin(s) [{}]",
                        pre.narrowing_plugins
                            .iter()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                ));
                Some(v)
            }
        };
        // A PodGroup cycle trying a placement sees only its nodes.
        let listed = match (&self.placement, listed) {
            (None, listed) => listed,
            (Some(p), None) => Some(p.nodes.clone()),
            (Some(p), Some(v)) => Some(
                v.into_iter()
                    .filter(|i| p.nodes.binary_search(i).is_ok())
                    .collect(),
            ),
        };
        let total = listed.as_ref().map_or(snapshot.num_nodes(), Vec::len);
        let candidate = |i: usize| listed.as_ref().map_or(i, |v| v[i]);
        let (to_find, start) = match self.options.node_search {
            NodeSearch::Exhaustive => (total, 0),
            NodeSearch::Adaptive => {
                let percentage = fwk
                    .percentage_of_nodes_to_score()
                    .or(self.options.percentage_of_nodes_to_score);
                let mut n = Self::num_feasible_nodes_to_find(percentage, total);
                if !fwk.has_score_plugins() {
                    n = 1;
                }
                (n, self.next_start_node_index)
            }
        };
        // The round-robin index counts every node of the snapshot, but a PreFilter
        // result can leave fewer candidates: like kube-scheduler's
        // findNodesThatPassFilters, start at the index modulo the candidates searched.
        let start = if total == 0 { 0 } else { start % total };
        let state: &CycleState = state;
        let (feasible, mut rejected) = if !fwk.has_filter_plugins() {
            let feasible = (0..to_find.min(total))
                .map(|i| candidate((start + i) % total))
                .collect();
            (feasible, Vec::new())
        } else if let (Some(key), Some(cache), true) = (
            key,
            self.incremental.as_mut(),
            total == snapshot.num_nodes() && to_find >= total,
        ) && let Some((changed, _)) = fwk.timed_point(
            "Filter",
            |r: &Option<(Changed, bool)>| match r {
                Some((_, true)) => Code::Error,
                _ => Code::Success,
            },
            || {
                let cycle = Cycle {
                    fwk,
                    state,
                    pod,
                    snapshot,
                };
                let changed = cache.filter(key, cycle)?;
                Some((changed, cache.failed(key)))
            },
        ) {
            // Every node, the unchanged ones from what was kept.
            if self.decisions_only
                && self.options.host_selection == HostSelection::FirstInNodeOrder
                && hint_rejection.is_none()
                && cache.may_rank(key)
            {
                let key = key.clone();
                return Ok((Passed::Kept { key, changed }, diagnosis, None));
            }
            // A decision needs the rejections only when no node passed or a filter
            // failed: then the error reports them.
            if self.decisions_only
                && hint_rejection.is_none()
                && !cache.failed(key)
                && cache.feasible_count(key) > 0
            {
                return Ok((Passed::Unlisted(cache.feasible(key)), diagnosis, None));
            }
            cache.verdicts(key)
        } else {
            let every_node: Vec<usize>;
            let candidates = match &listed {
                Some(listed) => listed.as_slice(),
                None => {
                    every_node = (0..total).collect();
                    &every_node
                }
            };
            // kube-scheduler times the whole pass over the nodes as the Filter
            // extension point: Error when a filter failed, else Success.
            fwk.timed_point("Filter", filter_pass_code, || {
                filter_nodes(
                    fwk,
                    state,
                    pod,
                    snapshot,
                    &self.nominated_pods,
                    candidates,
                    start,
                    to_find,
                )
            })
        };
        if let Some((i, status)) = hint_rejection
            && !rejected.iter().any(|(j, _)| *j == i)
        {
            rejected.push((i, status));
        }
        if self.options.node_search == NodeSearch::Adaptive && self.snapshot.num_nodes() > 0 {
            let processed = feasible.len() + rejected.len();
            self.next_start_node_index =
                (self.next_start_node_index + processed) % self.snapshot.num_nodes();
        }
        let diagnosis = with_rejections(diagnosis, rejected)?;
        Ok((Passed::Listed(feasible), diagnosis, hint))
    }

    /// The decision of a cycle whose feasible nodes incremental scheduling kept
    /// ([`Passed::Kept`]): PreScore, then the best of the kept totals. `None` when the
    /// cache cannot rank this cycle (a NormalizeScore without a declared rule, a score
    /// out of range, a failed Score): the full pass then runs over the kept verdicts,
    /// with the same result as without the cache. The diagnosis is left to the caller.
    pub(super) fn schedule_ranked(
        &mut self,
        profile: usize,
        state: &mut CycleState,
        pod: &PodInfo,
        key: &Key,
        changed: &Changed,
    ) -> Option<ScheduleResult> {
        let fwk = self.profiles[profile].clone();
        let cache = self.incremental.as_mut()?;
        let snapshot = &self.snapshot;
        let feasible_nodes = cache.feasible_count(key);
        // Node-scoped plugins read nothing of the feasible nodes in PreScore
        // (`Plugin::node_scoped`), so none are listed.
        if !fwk
            .run_pre_score_plugins(state, pod, &[], snapshot)
            .is_success()
        {
            return None;
        }
        let state: &CycleState = state;
        let best = fwk.timed_point(
            "Score",
            |r: &Result<Option<usize>, Status>| {
                r.as_ref().map_or_else(Status::code, |_| Code::Success)
            },
            || {
                let cycle = Cycle {
                    fwk: &fwk,
                    state,
                    pod,
                    snapshot,
                };
                cache.rank(key, cycle, changed)
            },
        );
        Some(ScheduleResult {
            suggested_host: best.ok()??,
            evaluated_nodes: snapshot.num_nodes(),
            feasible_nodes,
            scores: ScoreTable::default(),
            diagnosis: Diagnosis::default(),
        })
    }
}

impl Scheduler {
    /// Completes a diagnosis with the rejections incremental scheduling kept for `key`
    /// in this cycle: what a cycle that did not list them ([`Passed::Unlisted`]) reports
    /// when it fails after Filter, as the full pass does.
    pub(super) fn with_kept_rejections(
        &self,
        key: &Key,
        diagnosis: Diagnosis,
    ) -> Result<Diagnosis, ScheduleError> {
        let rejected = match &self.incremental {
            Some(cache) => cache.verdicts(key).1,
            None => Vec::new(),
        };
        with_rejections(diagnosis, rejected)
    }
}

/// Completes a diagnosis with the nodes a Filter pass rejected, as kube-scheduler's
/// findNodesThatPassFilters does: a filter that failed (rather than rejected) aborts
/// the attempt with its error; the rejections are kept in node order.
fn with_rejections(
    mut diagnosis: Diagnosis,
    mut rejected: Vec<(usize, Status)>,
) -> Result<Diagnosis, ScheduleError> {
    let error = rejected
        .iter()
        .position(|(_, s)| !s.is_rejected())
        .map(|pos| rejected.swap_remove(pos).1);
    rejected.retain(|(_, s)| s.is_rejected());
    // Kept rejections are mostly copies of one another (the columns share equal
    // ones): a copy of the last status names the same plugin.
    let mut last: Option<&Status> = None;
    for (_, status) in &rejected {
        if !last.is_some_and(|l| l.is_copy_of(status)) {
            diagnosis.add_plugin_status(status);
            last = Some(status);
        }
    }
    rejected.sort_by_key(|(i, _)| *i);
    diagnosis.node_to_status.statuses = rejected;
    match error {
        Some(status) => Err(ScheduleError::FailedAfterFilter {
            status,
            diagnosis: Box::new(diagnosis),
        }),
        None => Ok(diagnosis),
    }
}

/// Filters `candidates` starting at `start` (wrapping), until `to_find` feasible nodes
/// are found or all were checked. The result is that of a sequential scan that stops
/// at the `to_find`-th feasible node, whatever the number of threads: nodes are
/// filtered in runs (in parallel for large clusters), and what a run found beyond that
/// node is dropped as not evaluated.
#[allow(clippy::too_many_arguments)]
fn filter_nodes(
    fwk: &Framework,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    nominated: &NominatedPods,
    candidates: &[usize],
    start: usize,
    to_find: usize,
) -> (Vec<usize>, Vec<(usize, Status)>) {
    // (scan position, node index) of feasible nodes; the same plus the status of
    // rejected ones.
    type Passed = Vec<(usize, usize)>;
    type Failed = Vec<(usize, usize, Status)>;
    let total = candidates.len();
    let node_index = |i: usize| {
        let at = start + i;
        candidates[if at < total { at } else { at - total }]
    };
    // Scan positions `from..to`, one Filter plugin at a time over the run.
    let scan = |from: usize, to: usize| -> (Passed, Failed) {
        let indices: Vec<usize> = (from..to).map(node_index).collect();
        let nodes: Vec<&NodeInfo> = indices.iter().map(|&n| snapshot.node_at(n)).collect();
        let mut rejected = Vec::new();
        if nominated.is_empty() {
            fwk.run_filter_plugins_on_nodes(state, pod, &nodes, &mut rejected);
        } else {
            for (j, node) in nodes.iter().enumerate() {
                let status =
                    fwk.run_filter_plugins_with_nominated_pods(state, pod, node, nominated);
                if !status.is_success() {
                    rejected.push((j, status));
                }
            }
        }
        let mut passed = Vec::with_capacity(nodes.len() - rejected.len());
        let mut failed = Vec::with_capacity(rejected.len());
        let mut rejected = rejected.into_iter().peekable();
        for (j, index) in indices.into_iter().enumerate() {
            match rejected.next_if(|(at, _)| *at == j) {
                Some((_, status)) => failed.push((from + j, index, status)),
                None => passed.push((from + j, index)),
            }
        }
        (passed, failed)
    };
    let parallel = total >= PARALLEL_THRESHOLD && to_find >= PARALLEL_THRESHOLD;
    // A parallel round covers every candidate when all are wanted, else at least half
    // of what is wanted, split into a few pieces per thread (one rayon task per node
    // costs more than filtering it); a sequential round is a short run, so an early
    // stop wastes little.
    let round = if parallel && to_find >= total {
        total
    } else if parallel {
        PARALLEL_THRESHOLD.max(to_find / 2)
    } else {
        SEQUENTIAL_RUN
    };
    let mut feasible = Vec::new();
    let mut rejected = Vec::new();
    let mut next = 0;
    while next < total && feasible.len() < to_find {
        let end = (next + round).min(total);
        let (passed, failed) = if parallel {
            let piece = (end - next)
                .div_ceil(rayon::current_num_threads() * 4)
                .max(64);
            let pieces: Vec<(Passed, Failed)> = (next..end)
                .step_by(piece)
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(|from| scan(from, (from + piece).min(end)))
                .collect();
            let mut passed = Vec::with_capacity(end - next);
            let mut failed = Vec::new();
            for (p, f) in pieces {
                passed.extend(p);
                failed.extend(f);
            }
            (passed, failed)
        } else {
            scan(next, end)
        };
        let wanted = to_find - feasible.len();
        // The scan position of the last feasible node still wanted: nodes after it
        // count as not evaluated, as in a sequential scan that stops there.
        let cut = if passed.len() > wanted {
            passed[wanted - 1].0
        } else {
            usize::MAX
        };
        feasible.extend(passed.iter().take(wanted).map(|&(_, index)| index));
        rejected.extend(
            failed
                .into_iter()
                .filter(|(i, _, _)| *i <= cut)
                .map(|(_, index, status)| (index, status)),
        );
        next = end;
    }
    (feasible, rejected)
}

/// The code kube-scheduler records for a Filter pass over nodes: Error when a filter
/// failed (not a rejection), else Success.
fn filter_pass_code((_, rejected): &(Vec<usize>, Vec<(usize, Status)>)) -> Code {
    if rejected.iter().any(|(_, s)| !s.is_rejected()) {
        Code::Error
    } else {
        Code::Success
    }
}
