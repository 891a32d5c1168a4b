//! PodTopologySpread's filtering half (kube-scheduler's `filtering.go`): the
//! PreFilter state with each constraint's matching pods per domain and its critical
//! paths, PreFilter, the AddPod/RemovePod extensions used by preemption, and Filter's
//! skew check.

use std::collections::HashMap;
use std::sync::Arc;

use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterExtensions, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};

use super::{
    Constraint, DO_NOT_SCHEDULE, ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread, count_pods_match_selector, has_own_constraints, node_has_all_keys,
    pod_labels,
};
use crate::node_affinity::RequiredNodeAffinity;

/// The two domains with the fewest matching pods (kube-scheduler's `criticalPaths`):
/// `paths[0].1` is always the global minimum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CriticalPaths(pub(super) [(String, i64); 2]);

impl CriticalPaths {
    pub(super) fn new() -> CriticalPaths {
        CriticalPaths([
            (String::new(), i64::from(i32::MAX)),
            (String::new(), i64::from(i32::MAX)),
        ])
    }

    pub(super) fn update(&mut self, value: &str, num: i64) {
        let p = &mut self.0;
        let existing = if p[0].0 == value {
            Some(0)
        } else if p[1].0 == value {
            Some(1)
        } else {
            None
        };
        match existing {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None => {
                if num < p[0].1 {
                    p[1] = p[0].clone();
                    p[0] = (value.to_string(), num);
                } else if num < p[1].1 {
                    p[1] = (value.to_string(), num);
                }
            }
        }
    }
}

/// What PreFilter computes for Filter and the AddPod/RemovePod extensions.
#[derive(Clone, Debug)]
struct PreFilterState {
    constraints: Arc<Vec<Constraint>>,
    affinity: Arc<RequiredNodeAffinity>,
    /// Per constraint: the two smallest domains.
    critical_paths: Vec<CriticalPaths>,
    /// Per constraint: matching pods per eligible domain (topology value).
    tp_value_to_match_num: Vec<HashMap<String, i64>>,
}

impl PreFilterState {
    /// The global minimum, 0 when there are fewer eligible domains than `minDomains`.
    fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        let domains = self.tp_value_to_match_num.get(i).map_or(0, HashMap::len);
        if (domains as i64) < i64::from(min_domains) {
            return 0;
        }
        self.critical_paths.get(i).map_or(0, |p| p.0[0].1)
    }

    /// kube-scheduler's `updateWithPod`: `delta` more (or fewer) matching pods on `node`.
    fn update_with_pod(
        &mut self,
        updated: &PodInfo,
        preemptor: &PodInfo,
        node: &NodeInfo,
        delta: i64,
    ) {
        if updated.namespace() != preemptor.namespace()
            || !node_has_all_keys(node, &self.constraints)
        {
            return;
        }
        let labels = pod_labels(updated);
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(labels) || !c.includes_node(preemptor, &self.affinity, node) {
                continue;
            }
            let value = node.label(&c.topology_key).unwrap_or("");
            let (Some(counts), Some(paths)) = (
                self.tp_value_to_match_num.get_mut(i),
                self.critical_paths.get_mut(i),
            ) else {
                continue;
            };
            let n = counts.entry(value.to_string()).or_insert(0);
            *n += delta;
            paths.update(value, *n);
        }
    }
}

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let constraints = match self.constraints(pod, DO_NOT_SCHEDULE, snapshot.objects()) {
            Ok(c) => c,
            Err(e) => {
                let what = if has_own_constraints(pod) {
                    "obtaining pod's hard topology spread constraints"
                } else {
                    "setting default hard topology spread constraints"
                };
                return (
                    None,
                    Status::error(format!("get constraints from pod: {what}: {e}")),
                );
            }
        };
        if constraints.is_empty() {
            return (None, Status::skip());
        }
        let affinity = RequiredNodeAffinity::from_pod(pod);
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        for node in snapshot.nodes() {
            if !node_has_all_keys(node, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.includes_node(pod, &affinity, node) {
                    continue;
                }
                let value = node.label(&c.topology_key).unwrap_or("");
                let n = count_pods_match_selector(node.pods(), &c.selector, pod.namespace());
                match counts[i].get_mut(value) {
                    Some(total) => *total += n,
                    None => {
                        counts[i].insert(value.to_string(), n);
                    }
                }
            }
        }
        let critical_paths = counts
            .iter()
            .map(|m| {
                let mut p = CriticalPaths::new();
                for (v, &n) in m {
                    p.update(v, n);
                }
                p
            })
            .collect();
        state.write(PreFilterState {
            constraints: Arc::new(constraints),
            affinity: Arc::new(affinity),
            critical_paths,
            tp_value_to_match_num: counts,
        });
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for PodTopologySpread {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_add, pod_to_schedule, node, 1);
                Status::success()
            }
            None => {
                Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found")
            }
        }
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_remove, pod_to_schedule, node, -1);
                Status::success()
            }
            None => {
                Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found")
            }
        }
    }
}

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::error(
                "reading \"PreFilterPodTopologySpread\" from cycleState: not found",
            );
        };
        let labels = pod_labels(pod);
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = node.label(&c.topology_key) else {
                return Status::new(
                    Code::UnschedulableAndUnresolvable,
                    ERR_REASON_NODE_LABEL_NOT_MATCH,
                );
            };
            let min = s.min_match_num(i, c.min_domains);
            let self_match = i64::from(c.selector.matches(labels));
            let match_num = s
                .tp_value_to_match_num
                .get(i)
                .and_then(|m| m.get(value))
                .copied()
                .unwrap_or(0);
            if match_num + self_match - min > i64::from(c.max_skew) {
                return Status::new(Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}
