//! NodeResourcesBalancedAllocation: Score prefers nodes whose resource utilisation
//! fractions (with the pod on them) are close to each other.
//!
//! As in kube-scheduler v1.35:
//!
//! - requests are the ACTUAL requests (no 100m / 200Mi defaults), the pod's and the
//!   node's;
//! - PreScore returns Skip when the pod requests none of the configured resources
//!   (every request 0: a best-effort pod for the default cpu and memory);
//! - each fraction `requested / allocatable` is capped at 1; resources the node has
//!   none of are left out (so are extended resources the pod does not ask for);
//! - with two fractions the standard deviation is `|f1 - f2| / 2`, with more the
//!   population standard deviation, with fewer 0; the balance is
//!   `int64((1 - std) * 100)`, in float64 arithmetic in Go's order, truncated.
//!
//! v1.35 scores the balance with the pod on the node. v1.36 (kubernetes PR #135573)
//! scores the change the pod makes: `50 + (50 + with - without) / 2` in integer
//! arithmetic, `with` and `without` the balance with and without the pod (an empty
//! node's 99 becomes 74), so a pod that evens a node out scores above one that
//! unbalances it whatever the node's history. [`Features`] picks which.

use std::sync::Arc;

use kubesched_config::args::{NodeResourcesBalancedAllocationArgs, ResourceSpec};
use kubesched_framework::{
    CycleState, Features, MAX_NODE_SCORE, NodeInfo, Plugin, PodInfo, PreScorePlugin, ScorePlugin,
    Snapshot, Status,
};

use crate::resource_allocation::{
    PodLevelResources, Requests, ResourceColumn, ResourceKind, pod_resource_requests,
    resource_columns,
};

/// The plugin's name.
pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// Balanced resource allocation scoring.
#[derive(Clone, Debug)]
pub struct BalancedAllocation {
    resources: Vec<ResourceSpec>,
    kinds: Vec<ResourceKind>,
    /// v1.36's score: the balance the pod adds, not the balance with it.
    weighs_change: bool,
}

/// The pod's actual request per configured resource, computed once in PreScore.
#[derive(Clone, Debug)]
struct PodRequests(Arc<[i64]>);

impl BalancedAllocation {
    /// Builds the plugin from its (defaulted, validated) args, for the version of
    /// `features`.
    pub fn new(
        args: NodeResourcesBalancedAllocationArgs,
        features: &Features,
    ) -> BalancedAllocation {
        BalancedAllocation {
            kinds: ResourceKind::of(&args.resources),
            resources: args.resources,
            weighs_change: features.balanced_allocation_weighs_change(),
        }
    }

    /// The node's score for a pod with these requests (one per configured resource).
    pub fn score_node(&self, node: &NodeInfo, pod_requests: &[i64]) -> i64 {
        let columns = resource_columns(&self.kinds, pod_requests, Requests::Actual);
        self.score_columns(node, &columns)
    }

    /// The node's score for the resolved resources.
    fn score_columns(&self, node: &NodeInfo, columns: &[ResourceColumn<'_>]) -> i64 {
        let (with_pod, without_pod) = balances(node, columns, self.weighs_change);
        if !self.weighs_change {
            return with_pod;
        }
        let half = MAX_NODE_SCORE / 2;
        // Integer division truncates toward zero, as Go's does.
        half + (half + with_pod - without_pod) / 2
    }
}

/// The node's balance, `int64((1 - std) * 100)`, with the pod on it, and without it
/// when `also_without` (else 100, unused), in one pass over the resources: the two
/// sets of divisions are independent, and the processor overlaps them.
fn balances(node: &NodeInfo, columns: &[ResourceColumn<'_>], also_without: bool) -> (i64, i64) {
    let (mut with, mut without) = (Fractions::default(), Fractions::default());
    for column in columns {
        let (alloc, req) = column.read(node);
        if alloc == 0 {
            continue;
        }
        with.add(req, alloc);
        if also_without {
            without.add(req - column.pod_request(), alloc);
        }
    }
    (with.balance(), without.balance())
}

/// The utilisation fractions of the resources a node has, in configured order.
#[derive(Default)]
struct Fractions {
    /// At most a few resources are configured: a small inline buffer avoids allocating.
    each: smallvec::SmallVec<[f64; 4]>,
    total: f64,
}

impl Fractions {
    /// Adds `requested / allocatable`, capped at 1.
    fn add(&mut self, requested: i64, allocatable: i64) {
        let fraction = (requested as f64 / allocatable as f64).min(1.0);
        self.total += fraction;
        self.each.push(fraction);
    }

    fn balance(&self) -> i64 {
        balanced_score(&self.each, self.total)
    }
}

/// `int64((1 - std) * 100)` over the fractions, as kube-scheduler computes it.
fn balanced_score(fractions: &[f64], total: f64) -> i64 {
    let std = match fractions {
        [a, b] => ((a - b) / 2.0).abs(),
        [] | [_] => 0.0,
        _ => {
            let n = fractions.len() as f64;
            let mean = total / n;
            let mut sum = 0f64;
            for f in fractions {
                sum += (f - mean) * (f - mean);
            }
            (sum / n).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler v1.36.1: the requests with overheads, DRAExtendedResource or not.
    /// The score reads the pod's requests and the node's; a scored extended resource
    /// that DeviceClasses may back is left to a full pass.
    fn node_scoped(&self, pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        let scores_extended = self.kinds.iter().any(|kind| {
            matches!(kind, ResourceKind::Other { name, .. }
                if kubesched_framework::resource::is_extended_resource_name(name))
        });
        !scores_extended || !crate::helper::requests_extended_resources(pod)
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![kubesched_framework::signature::resources_fragment(
            pod,
        )])
    }
    fn sign_pod_exact(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        crate::resource_allocation::with_scoring_requests(
            self.sign_pod(pod)?,
            "kubesched.io/NodeResourcesBalancedAllocation.scoringRequests",
            pod,
            &self.resources,
            Requests::Actual,
            PodLevelResources::Honoured,
        )
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::none()
    }
    kubesched_framework::extension_points!(PreScore, Score);
}

impl PreScorePlugin for BalancedAllocation {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        let requests = match pod_resource_requests(
            pod,
            &self.resources,
            Requests::Actual,
            PodLevelResources::Honoured,
        ) {
            Ok(r) => r,
            Err(s) => return s,
        };
        if requests.iter().all(|&r| r == 0) {
            return Status::skip();
        }
        state.write(PodRequests(requests.into()));
        Status::success()
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let mut score = [0];
        self.score_nodes(state, pod, &[node], &mut score)?;
        Ok(score[0])
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let computed;
        let requests: &[i64] = match state.read::<PodRequests>() {
            Some(r) => &r.0,
            // PreScore disabled: compute the requests here, scoring best-effort pods 0.
            None => {
                computed = pod_resource_requests(
                    pod,
                    &self.resources,
                    Requests::Actual,
                    PodLevelResources::Honoured,
                )?;
                if computed.iter().all(|&r| r == 0) {
                    out.fill(0);
                    return Ok(());
                }
                &computed
            }
        };
        let columns = resource_columns(&self.kinds, requests, Requests::Actual);
        for (node, out) in nodes.iter().zip(out) {
            *out = self.score_columns(node, &columns);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    fn pod(node: Option<&str>, requests: &[serde_json::Value]) -> PodInfo {
        let containers: Vec<_> = requests
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"name": format!("c{i}"), "resources": {"requests": r}}))
            .collect();
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"nodeName": node, "containers": containers}
        }))
        .unwrap();
        PodInfo::new(Arc::new(pod)).unwrap()
    }

    fn node(name: &str, allocatable: serde_json::Value, pods: Vec<PodInfo>) -> NodeInfo {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name}, "status": {"allocatable": allocatable}
        }))
        .unwrap();
        let mut n = NodeInfo::new(Arc::new(node)).unwrap();
        for p in pods {
            n.add_pod(Arc::new(p));
        }
        n
    }

    fn default_plugin() -> BalancedAllocation {
        BalancedAllocation::new(
            NodeResourcesBalancedAllocationArgs::default(),
            &Features::new(kubesched_framework::KubernetesVersion::V1_35),
        )
    }

    fn scores(pl: &BalancedAllocation, p: &PodInfo, nodes: &[NodeInfo]) -> Option<Vec<i64>> {
        let mut state = CycleState::new();
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let s = pl.pre_score(&mut state, p, &refs, &Snapshot::default());
        if s.is_skip() {
            return None;
        }
        assert!(s.is_success());
        Some(
            nodes
                .iter()
                .map(|n| pl.score(&state, p, n).unwrap())
                .collect(),
        )
    }

    // Named after kube-scheduler's TestNodeResourcesBalancedAllocation.
    #[test]
    fn nothing_scheduled_nothing_requested_skip_scoring() {
        let nodes = [node(
            "node1",
            json!({"cpu": "4", "memory": "10000"}),
            vec![],
        )];
        assert_eq!(
            scores(&default_plugin(), &pod(None, &[json!({})]), &nodes),
            None
        );
        // Limits-only or extended-only requests are still best-effort for cpu/memory.
        assert_eq!(
            scores(
                &default_plugin(),
                &pod(None, &[json!({"example.com/gpu": "1"})]),
                &nodes
            ),
            None
        );
    }

    #[test]
    fn nothing_scheduled_resources_requested_differently_sized_nodes() {
        let nodes = [
            node("node1", json!({"cpu": "4", "memory": "10000"}), vec![]),
            node("node2", json!({"cpu": "6", "memory": "10000"}), vec![]),
        ];
        let p = pod(
            None,
            &[
                json!({"cpu": "1", "memory": "2000"}),
                json!({"cpu": "2", "memory": "3000"}),
            ],
        );
        // node1: cpu 3/4, memory 5000/10000: std 0.125 -> 87; node2: 0.5 and 0.5 -> 100.
        assert_eq!(scores(&default_plugin(), &p, &nodes), Some(vec![87, 100]));
    }

    #[test]
    fn requested_resources_at_node_capacity_and_over_are_capped() {
        let existing = pod(Some("node1"), &[json!({"cpu": "6", "memory": "0"})]);
        let nodes = [node(
            "node1",
            json!({"cpu": "4", "memory": "10000"}),
            vec![existing],
        )];
        // cpu fraction 7/4 capped at 1, memory 5000/10000: std 0.25 -> 75.
        let p = pod(None, &[json!({"cpu": "1", "memory": "5000"})]);
        assert_eq!(scores(&default_plugin(), &p, &nodes), Some(vec![75]));
    }

    #[test]
    fn v1_36_scores_the_balance_the_pod_adds() {
        let v1_36 = BalancedAllocation::new(
            NodeResourcesBalancedAllocationArgs::default(),
            &Features::new(kubesched_framework::KubernetesVersion::V1_36),
        );
        let alloc = json!({"cpu": "4", "memory": "10000"});
        let lopsided = pod(Some("n2"), &[json!({"cpu": "4", "memory": "0"})]);
        let even = pod(Some("n3"), &[json!({"cpu": "2", "memory": "5000"})]);
        let nodes = [
            node("n1", alloc.clone(), vec![]),
            node("n2", alloc.clone(), vec![lopsided]),
            node("n3", alloc, vec![even]),
        ];
        // n1 empty: 87 with the pod (0.25 / 0.5), 100 without: 50 + (50 - 13) / 2 = 68.
        let p = pod(None, &[json!({"cpu": "1", "memory": "5000"})]);
        // n2: cpu 1 (capped) / memory 0.5 -> 75, without 50: 50 + 75 / 2 = 87.
        // n3: 0.75 / 1 -> 87, without 100: 68.
        assert_eq!(scores(&v1_36, &p, &nodes), Some(vec![68, 87, 68]));
        // A pod that evens n2 out earns the most; one that tips n3 over, less.
        let q = pod(None, &[json!({"cpu": "2", "memory": "0"})]);
        // n1: 0.5 / 0 -> 75: 62; n2: 1 / 0 -> 50, without 50: 75; n3: 1 / 0.5 -> 75: 62.
        assert_eq!(scores(&v1_36, &q, &nodes), Some(vec![62, 75, 62]));
    }

    #[test]
    fn existing_pods_count_with_actual_requests() {
        // An existing best-effort pod adds nothing (no 100m / 200Mi defaults).
        let existing = pod(Some("node1"), &[json!({})]);
        let nodes = [node(
            "node1",
            json!({"cpu": "4", "memory": "10000"}),
            vec![existing],
        )];
        let p = pod(None, &[json!({"cpu": "2"})]);
        // cpu 0.5, memory 0: std 0.25 -> 75.
        assert_eq!(scores(&default_plugin(), &p, &nodes), Some(vec![75]));
    }

    #[test]
    fn three_resources_use_population_std() {
        let pl = BalancedAllocation::new(
            NodeResourcesBalancedAllocationArgs {
                resources: vec![
                    ResourceSpec::new("cpu", 1),
                    ResourceSpec::new("memory", 1),
                    ResourceSpec::new("nvidia.com/gpu", 1),
                ],
            },
            &Features::new(kubesched_framework::KubernetesVersion::V1_35),
        );
        let nodes = [
            node(
                "node1",
                json!({"cpu": "4", "memory": "10000", "nvidia.com/gpu": "4"}),
                vec![],
            ),
            node("node2", json!({"cpu": "4", "memory": "10000"}), vec![]),
        ];
        let p = pod(
            None,
            &[json!({"cpu": "1", "memory": "5000", "nvidia.com/gpu": "4"})],
        );
        // node1: 0.25, 0.5, 1: mean 7/12, std ~0.3118 -> 68; node2 has no gpu: 0.25, 0.5 -> 87.
        assert_eq!(scores(&pl, &p, &nodes), Some(vec![68, 87]));
        // A gpu resource the pod does not ask for is left out.
        let p = pod(None, &[json!({"cpu": "1", "memory": "5000"})]);
        assert_eq!(scores(&pl, &p, &nodes), Some(vec![87, 87]));
    }

    #[test]
    fn float_rounding_follows_go() {
        // (1 - |0.5 - 0.68| / 2) * 100 = 90.99999999999999 in float64: truncated to 90.
        assert_eq!(balanced_score(&[1.0 / 2.0, 17.0 / 25.0], 0.0), 90);
        assert_eq!(balanced_score(&[0.5], 0.5), 100);
        assert_eq!(balanced_score(&[], 0.0), 100);
    }
}
