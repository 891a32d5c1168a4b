//! kube-scheduler's adaptive search (a round-robin start node, stop after enough
//! feasible nodes) over the candidate nodes a PreFilter result leaves, checked against
//! the exhaustive search: pods whose `matchFields metadata.name In [...]` narrows the
//! candidates to subsets of every size, one after another, so the round-robin index
//! (which counts every node of the cluster) runs past the end of shorter subsets.
//! The adaptive search must never panic, must only evaluate candidates, must find
//! exactly the nodes the exhaustive search finds when it searches them all, and
//! otherwise a subset of them with the same rejection reasons.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::{
    CycleState, Framework, Handle, NodeSearch, PodInfo, ScheduleError, Scheduler, SchedulerOptions,
    Snapshot,
};
use serde_json::json;

/// `count` nodes `n0`..; every fourth is cordoned, so Filter rejects some candidates.
fn nodes(count: usize) -> Vec<Arc<Node>> {
    (0..count)
        .map(|i| {
            let node = json!({
                "metadata": {"name": format!("n{i}"), "labels": {"kubernetes.io/hostname": format!("n{i}")}},
                "spec": {"unschedulable": i % 4 == 3},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            });
            Arc::new(serde_json::from_value(node).expect("node"))
        })
        .collect()
}

/// A pod that requires its node's name to be one of `names`: one term per name, as
/// a DaemonSet pod's `matchFields` has, since kube-scheduler never matches a
/// `metadata.name In` with more than one value (PreFilter still narrows to them all).
fn pod(uid: usize, names: &[String]) -> Arc<PodInfo> {
    let terms: Vec<_> = names
        .iter()
        .map(
            |n| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}),
        )
        .collect();
    pod_with_terms(uid, terms)
}

fn pod_with_terms(uid: usize, terms: Vec<serde_json::Value>) -> Arc<PodInfo> {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("p{uid}"), "namespace": "default", "uid": format!("uid-{uid}")},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": terms
            }}}
        }
    }))
    .expect("pod");
    Arc::new(PodInfo::new(Arc::new(pod)).expect("pod info"))
}

fn scheduler(count: usize, node_search: NodeSearch) -> Scheduler {
    let config = KubeSchedulerConfiguration::default_config();
    let registry = kubesched_plugins::in_tree_registry();
    let fwk =
        Framework::new(&config.profiles[0], &registry, &Handle::default()).expect("framework");
    let (snapshot, _) = Snapshot::new(nodes(count), []).expect("snapshot");
    let options = SchedulerOptions {
        node_search,
        ..Default::default()
    };
    Scheduler::new(vec![fwk], snapshot, options).expect("scheduler")
}

/// What one search found: the feasible nodes, and each rejected node's reasons.
#[derive(Debug, PartialEq)]
enum Found {
    Feasible {
        nodes: BTreeSet<usize>,
        rejected: BTreeMap<usize, Vec<String>>,
    },
    Unfit(String),
}

fn search(scheduler: &mut Scheduler, pod: &PodInfo) -> Found {
    let mut state = CycleState::new();
    match scheduler.schedule_pod(0, &mut state, pod) {
        Ok(result) => {
            let nodes: BTreeSet<usize> = if result.feasible_nodes == 1 {
                BTreeSet::from([result.suggested_host])
            } else {
                result.scores.node_indices.iter().copied().collect()
            };
            assert_eq!(nodes.len(), result.feasible_nodes);
            assert!(nodes.contains(&result.suggested_host));
            let rejected = result
                .diagnosis
                .node_to_status
                .statuses
                .iter()
                .map(|(i, s)| (*i, s.reasons().iter().map(|r| r.to_string()).collect()))
                .collect();
            Found::Feasible { nodes, rejected }
        }
        Err(ScheduleError::Unfit(fit)) => Found::Unfit(fit.to_string()),
        Err(other) => panic!("{}: unexpected error {other}", pod.name()),
    }
}

/// Subsets of every size from 1 to `count`, in an order that makes the round-robin
/// start index run past short subsets: growing sizes, then shrinking ones, each
/// subset starting at a different node.
fn subsets(count: usize) -> Vec<Vec<usize>> {
    let sizes = (1..=count).chain((1..=count).rev());
    sizes
        .enumerate()
        .map(|(k, size)| (0..size).map(|j| (k * 7 + j * 3) % count).collect())
        .map(|mut v: Vec<usize>| {
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

fn check(count: usize) {
    let mut adaptive = scheduler(count, NodeSearch::Adaptive);
    let mut exhaustive = scheduler(count, NodeSearch::Exhaustive);
    let mut placed = 0;
    let pods = subsets(count);
    for (uid, subset) in pods.iter().enumerate() {
        let names: Vec<String> = subset.iter().map(|i| format!("n{i}")).collect();
        let pod = pod(uid, &names);
        let expected = search(&mut exhaustive, &pod);
        let found = search(&mut adaptive, &pod);
        let to_find = Scheduler::num_feasible_nodes_to_find(None, subset.len());
        match (&expected, &found) {
            (
                Found::Feasible {
                    nodes: all,
                    rejected: all_rejected,
                },
                Found::Feasible { nodes, rejected },
            ) => {
                placed += 1;
                let candidates: BTreeSet<usize> = subset.iter().copied().collect();
                assert!(nodes.is_subset(all), "{count} nodes, pod {uid}: {nodes:?}");
                assert_eq!(nodes.len(), all.len().min(to_find), "pod {uid}");
                for (node, reasons) in rejected {
                    assert!(candidates.contains(node), "pod {uid}: n{node} evaluated");
                    assert_eq!(Some(reasons), all_rejected.get(node), "pod {uid}: n{node}");
                }
                if to_find >= subset.len() {
                    assert_eq!(&found, &expected, "pod {uid} searches every candidate");
                }
            }
            _ => assert_eq!(found, expected, "{count} nodes, pod {uid}"),
        }
    }
    // Only a subset of cordoned nodes leaves a pod with nowhere to go.
    assert!(
        placed > pods.len() * 3 / 4,
        "{placed} of {} placed",
        pods.len()
    );
}

#[test]
fn prefilter_subsets_of_every_size_in_a_small_cluster() {
    check(7);
}

#[test]
fn prefilter_subsets_of_every_size_past_the_minimum_to_find() {
    // Past 100 candidates the adaptive search stops early, from a start index that
    // wraps around the subset.
    check(130);
}

/// The smallest form of the bug report: three nodes, a pod that requires
/// `metadata.name In [n0, n1]` (PreFilter narrows to both, Filter matches neither:
/// kube-scheduler takes no multi-value field selector), then one narrowed to n2 (the
/// start index is 2, past the one-node subset).
#[test]
fn a_start_index_past_a_shorter_subset_wraps() {
    let mut adaptive = scheduler(3, NodeSearch::Adaptive);
    let two = json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0", "n1"]}]});
    let first = search(&mut adaptive, &pod_with_terms(0, vec![two]));
    assert_eq!(
        first,
        Found::Unfit(
            "0/3 nodes are available: 1 node(s) didn't satisfy plugin(s) [NodeAffinity], \
             2 node(s) didn't match Pod's node affinity/selector."
                .into()
        )
    );
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let second = search(&mut adaptive, &pod(1, &names(&["n2"])));
    assert_eq!(
        second,
        Found::Feasible {
            nodes: BTreeSet::from([2]),
            rejected: BTreeMap::new(),
        }
    );
}
