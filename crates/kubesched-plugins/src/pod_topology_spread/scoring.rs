//! PodTopologySpread's scoring half (kube-scheduler's `scoring.go`): the PreScore
//! state with the matching pods per domain of the feasible nodes and each topology's
//! normalizing weight, PreScore, Score's `count * ln(domains + 2) + maxSkew - 1` sum and
//! NormalizeScore.

use std::collections::HashMap;

use kubesched_framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreScorePlugin, ScoreExtensions,
    ScorePlugin, Snapshot, Status,
};

use super::{
    Constraint, LABEL_HOSTNAME, PodTopologySpread, SCHEDULE_ANYWAY, count_pods_match_selector,
    has_own_constraints, node_has_all_keys,
};
use crate::node_affinity::RequiredNodeAffinity;

const INVALID_SCORE: i64 = -1;

/// What PreScore computes for Score and NormalizeScore.
#[derive(Clone, Debug)]
struct PreScoreState {
    constraints: Vec<Constraint>,
    /// Whether nodes missing a topology key are ignored (score 0).
    require_all_topologies: bool,
    /// Node-order indices of the ignored feasible nodes, sorted.
    ignored_nodes: Vec<usize>,
    /// Per constraint (non-hostname keys): matching pods per domain of the feasible nodes.
    value_to_pod_counts: Vec<HashMap<String, i64>>,
    /// Per constraint: `ln(domains + 2)`.
    normalizing_weights: Vec<f64>,
}

/// `ln(size + 2)`: the weight of a topology with `size` domains.
fn topology_normalizing_weight(size: usize) -> f64 {
    (size as f64 + 2.0).ln()
}

/// `cnt * weight + maxSkew - 1`.
fn score_for_count(cnt: i64, max_skew: i32, weight: f64) -> f64 {
    cnt as f64 * weight + f64::from(max_skew.saturating_sub(1))
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        if snapshot.num_nodes() == 0 {
            return Status::skip();
        }
        let has_own = has_own_constraints(pod);
        let require_all_topologies = has_own || !self.system_defaulted;
        let constraints = match self.constraints(pod, SCHEDULE_ANYWAY, snapshot.objects()) {
            Ok(c) => c,
            Err(e) => {
                let what = if has_own {
                    "obtaining pod's soft topology spread constraints"
                } else {
                    "setting default soft topology spread constraints"
                };
                return Status::error(format!("calculating preScoreState: {what}: {e}"));
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }

        let mut value_to_pod_counts: Vec<HashMap<String, i64>> =
            vec![HashMap::new(); constraints.len()];
        let mut topo_size = vec![0usize; constraints.len()];
        let mut ignored_nodes = Vec::new();
        for node in nodes {
            if require_all_topologies && !node_has_all_keys(node, &constraints) {
                if let Some(i) = snapshot.index_of(node.name()) {
                    ignored_nodes.push(i);
                }
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                // Per-node counts of the hostname key are made in Score.
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                let value = node.label(&c.topology_key).unwrap_or("");
                if !value_to_pod_counts[i].contains_key(value) {
                    value_to_pod_counts[i].insert(value.to_string(), 0);
                    topo_size[i] += 1;
                }
            }
        }
        ignored_nodes.sort_unstable();
        ignored_nodes.dedup();
        let normalizing_weights = constraints
            .iter()
            .zip(&topo_size)
            .map(|(c, &size)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    nodes.len().saturating_sub(ignored_nodes.len())
                } else {
                    size
                };
                topology_normalizing_weight(size)
            })
            .collect();

        let affinity = RequiredNodeAffinity::from_pod(pod);
        for node in snapshot.nodes() {
            if require_all_topologies && !node_has_all_keys(node, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.includes_node(pod, &affinity, node) {
                    continue;
                }
                let value = node.label(&c.topology_key).unwrap_or("");
                // Only domains of feasible nodes are counted (never the hostname key's).
                if let Some(count) = value_to_pod_counts[i].get_mut(value) {
                    *count += count_pods_match_selector(node.pods(), &c.selector, pod.namespace());
                }
            }
        }

        state.write(PreScoreState {
            constraints,
            require_all_topologies,
            ignored_nodes,
            value_to_pod_counts,
            normalizing_weights,
        });
        Status::success()
    }
}

impl ScorePlugin for PodTopologySpread {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let s = state.read::<PreScoreState>().ok_or_else(|| {
            Status::error("error reading \"PreScorePodTopologySpread\" from cycleState: not found")
        })?;
        if s.require_all_topologies && !node_has_all_keys(node, &s.constraints) {
            return Ok(0);
        }
        let mut score = 0.0;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = node.label(&c.topology_key) else {
                continue;
            };
            let cnt = if c.topology_key == LABEL_HOSTNAME {
                count_pods_match_selector(node.pods(), &c.selector, pod.namespace())
            } else {
                s.value_to_pod_counts
                    .get(i)
                    .and_then(|m| m.get(value))
                    .copied()
                    .unwrap_or(0)
            };
            let weight = s.normalizing_weights.get(i).copied().unwrap_or(0.0);
            score += score_for_count(cnt, c.max_skew, weight);
        }
        Ok(score.round() as i64)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for PodTopologySpread {
    fn normalize_score(&self, state: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let Some(s) = state.read::<PreScoreState>() else {
            return Status::error(
                "reading \"PreScorePodTopologySpread\" from cycleState: not found",
            );
        };
        let mut min_score = i64::MAX;
        let mut max_score = 0;
        for ns in scores.iter_mut() {
            if s.ignored_nodes.binary_search(&ns.node_index).is_ok() {
                ns.score = INVALID_SCORE;
                continue;
            }
            min_score = min_score.min(ns.score);
            max_score = max_score.max(ns.score);
        }
        for ns in scores.iter_mut() {
            if ns.score == INVALID_SCORE {
                ns.score = 0;
            } else if max_score == 0 {
                ns.score = MAX_NODE_SCORE;
            } else {
                ns.score = MAX_NODE_SCORE * (max_score + min_score - ns.score) / max_score;
            }
        }
        Status::success()
    }
}
