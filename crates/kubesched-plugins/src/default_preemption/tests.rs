//! DefaultPreemption's unit tests: candidate selection, PodDisruptionBudgets, the number
//! of candidates, eligibility, and whole PostFilter runs against kube-scheduler's cases.

use super::*;
use k8s_openapi::api::core::v1::{Node, Pod};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::{
    Framework, Handle, NominatedPods, Outcome, ScheduleError, Scheduler, SchedulerOptions,
};
use serde_json::{Value, json};

/// A pod `default/name` with `priority`, a cpu request in millicores, optional node,
/// start time and labels.
fn pod(
    name: &str,
    priority: i32,
    milli_cpu: i64,
    node: Option<&str>,
    start: Option<&str>,
    labels: Value,
) -> Arc<PodInfo> {
    let mut spec = json!({
        "priority": priority,
        "containers": [{"name": "c", "image": "i",
            "resources": {"requests": {"cpu": format!("{milli_cpu}m")}}}]
    });
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    let mut p = json!({"metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": spec, "status": {}});
    if let Some(t) = start {
        p["status"]["startTime"] = json!(t);
    }
    let p: Pod = serde_json::from_value(p).unwrap();
    Arc::new(PodInfo::new(Arc::new(p)).unwrap())
}

fn node(name: &str, cpu: &str) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}
        }))
        .unwrap(),
    )
}

fn pdb(name: &str, app: &str, allowed: i32, disrupted: &[&str]) -> Arc<PodDisruptionBudget> {
    let disrupted: serde_json::Map<String, Value> = disrupted
        .iter()
        .map(|p| (p.to_string(), json!("2025-03-01T08:00:00Z")))
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted,
                "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}
        }))
        .unwrap(),
    )
}

/// The core plugin set with DefaultPreemption, as the `-core` conformance cases.
fn framework(args: Value) -> Framework {
    let config = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {
                "enabled": [{"name": "PrioritySort"}, {"name": "NodeUnschedulable"},
                    {"name": "TaintToleration"}, {"name": "NodeResourcesFit"},
                    {"name": "NodePorts"}, {"name": "DefaultPreemption"},
                    {"name": "DefaultBinder"}],
                "disabled": [{"name": "*"}]}},
            "pluginConfig": [{"name": "DefaultPreemption", "args": args}]
        }]
    });
    let loaded = KubeSchedulerConfiguration::from_value(config, "test").unwrap();
    Framework::new(
        &loaded.config.profiles[0],
        &crate::in_tree_registry(),
        &Handle::default(),
    )
    .unwrap()
}

fn scheduler(
    nodes: Vec<Arc<Node>>,
    pods: Vec<Arc<PodInfo>>,
    pdbs: Vec<Arc<PodDisruptionBudget>>,
) -> Scheduler {
    let (mut snapshot, _) = Snapshot::new(nodes, pods).unwrap();
    snapshot.set_objects(Arc::new(kubesched_framework::ClusterObjects {
        pod_disruption_budgets: pdbs,
        ..Default::default()
    }));
    let options = SchedulerOptions {
        run_post_filter: true,
        ..Default::default()
    };
    Scheduler::new(vec![framework(json!({}))], snapshot, options).unwrap()
}

/// Runs one attempt: `Ok((node, victims))` for a nomination, `Err(message)` otherwise.
fn preempt(s: &mut Scheduler, p: &Arc<PodInfo>) -> Result<(String, Vec<String>), String> {
    match s.schedule_one(p) {
        Outcome::Unschedulable {
            nominated: Some(r), ..
        } => Ok((r.nominated_node_name.unwrap_or_default(), r.victims)),
        Outcome::Unschedulable {
            error: ScheduleError::Unfit(e),
            ..
        } => Err(e.to_string()),
        other => Err(format!("{other:?}")),
    }
}

fn candidate(index: usize, victims: Vec<Arc<PodInfo>>, pdb_violations: i64) -> Candidate {
    Candidate {
        node_index: index,
        node: format!("node{index}"),
        victims,
        num_pdb_violations: pdb_violations,
    }
}

fn v(name: &str, priority: i32, start: &str) -> Arc<PodInfo> {
    pod(name, priority, 100, None, Some(start), json!({}))
}

const T0: &str = "2025-03-01T08:00:00Z";
const T1: &str = "2025-03-01T09:00:00Z";

#[test]
fn select_best_candidate_node_with_min_highest_priority_pod_is_picked() {
    let cs = vec![
        candidate(0, vec![v("a", 20, T0), v("b", 5, T0)], 0),
        candidate(1, vec![v("c", 10, T0), v("d", 10, T0), v("e", 10, T0)], 0),
    ];
    let (i, why) = pick_one_node_for_preemption(&cs).unwrap();
    assert_eq!(i, 1);
    assert!(
        why.starts_with("lowest highest-victim priority (10)"),
        "{why}"
    );
}

#[test]
fn select_best_candidate_min_pdb_violations_first() {
    let cs = vec![
        candidate(0, vec![v("a", 5, T0)], 1),
        candidate(1, vec![v("b", 500, T0), v("c", 400, T0)], 0),
    ];
    assert_eq!(pick_one_node_for_preemption(&cs).unwrap().0, 1);
}

#[test]
fn select_best_candidate_when_highest_priorities_are_the_same_minimum_sum_is_picked() {
    let cs = vec![
        candidate(0, vec![v("a", 300, T0), v("b", 200, T0)], 0),
        candidate(1, vec![v("c", 300, T0), v("d", 10, T0)], 0),
    ];
    assert_eq!(pick_one_node_for_preemption(&cs).unwrap().0, 1);
}

#[test]
fn select_best_candidate_sum_of_adjusted_priorities_is_considered() {
    // Each victim counts priority + 2^31: one victim of -5 is better than two of -5.
    let cs = vec![
        candidate(0, vec![v("a", -5, T0), v("b", -5, T0)], 0),
        candidate(1, vec![v("c", -5, T0)], 0),
    ];
    let (i, why) = pick_one_node_for_preemption(&cs).unwrap();
    assert_eq!(i, 1);
    assert!(why.starts_with("lowest sum of victim priorities"), "{why}");
}

#[test]
fn select_best_candidate_minimum_number_of_pods_when_sums_tie() {
    let cs = vec![
        candidate(0, vec![v("a", 50, T0), v("b", i32::MIN, T0)], 0),
        candidate(1, vec![v("c", 50, T0)], 0),
    ];
    let (i, why) = pick_one_node_for_preemption(&cs).unwrap();
    assert_eq!(i, 1);
    assert!(why.starts_with("fewest victims (1)"), "{why}");
}

#[test]
fn select_best_candidate_same_priority_same_victims_different_start_time() {
    let cs = vec![
        candidate(0, vec![v("a", 10, T0)], 0),
        candidate(1, vec![v("b", 10, T1)], 0),
        candidate(2, vec![v("c", 10, "2025-03-01T08:30:00Z")], 0),
    ];
    assert_eq!(pick_one_node_for_preemption(&cs).unwrap().0, 1);
}

#[test]
fn select_best_candidate_full_tie_is_first_in_node_order() {
    let cs = vec![
        candidate(3, vec![v("a", 10, T0)], 0),
        candidate(1, vec![v("b", 10, T0)], 0),
    ];
    let (i, why) = pick_one_node_for_preemption(&cs).unwrap();
    assert_eq!(cs[i].node_index, 1);
    assert!(why.starts_with("first in node order"), "{why}");
    assert!(pick_one_node_for_preemption(&[]).is_none());
}

/// Victims that have not started are compared by the clock, which kube-scheduler reads
/// once per candidate in order (`GetPodStartTime`): each reading is later than the one
/// before and than any recorded start, so the last such candidate in node order wins
/// (kube-scheduler v1.35.4's own code picks the later of two in a trace the
/// differential test generated: seed 9100000107).
#[test]
fn select_best_candidate_victims_not_started_last_reading_wins() {
    let not_started = |name: &str| pod(name, 10, 100, None, None, json!({}));
    let cs = vec![
        candidate(0, vec![not_started("a")], 0),
        candidate(1, vec![v("b", 10, T1)], 0),
        candidate(2, vec![not_started("c")], 0),
    ];
    let (i, why) = pick_one_node_for_preemption(&cs).unwrap();
    assert_eq!(cs[i].node_index, 2);
    assert!(why.starts_with("last in node order"), "{why}");
    // A recorded start and a victim not started: "now" is later.
    let cs = vec![
        candidate(0, vec![v("b", 10, T1)], 0),
        candidate(1, vec![not_started("a")], 0),
    ];
    assert_eq!(pick_one_node_for_preemption(&cs).unwrap().0, 1);
}

#[test]
fn filter_pods_with_pdb_violation_uses_budgets_in_order() {
    let a = pod("kafka-1", 45, 100, None, None, json!({"app": "kafka"}));
    let b = pod("kafka-0", 35, 100, None, None, json!({"app": "kafka"}));
    let c = pod("other", 1, 100, None, None, json!({"app": "web"}));
    let budgets = [Budget::new(&pdb("kafka", "kafka", 1, &[]))];
    let (violating, ok) =
        filter_pods_with_pdb_violation(&[a.clone(), b.clone(), c.clone()], &budgets);
    let keys = |v: &[Arc<PodInfo>]| v.iter().map(|p| p.name().to_string()).collect::<Vec<_>>();
    assert_eq!(keys(&violating), ["kafka-0"]);
    assert_eq!(keys(&ok), ["kafka-1", "other"]);
}

#[test]
fn preemption_with_violation_of_the_pdb_with_pod_whose_eviction_was_processed() {
    // A pod in the budget's disruptedPods does not use the budget again.
    let a = pod("p1", 1, 100, None, None, json!({"app": "foo"}));
    let b = pod("p2", 1, 100, None, None, json!({"app": "foo"}));
    let budgets = [Budget::new(&pdb("foo", "foo", 1, &["p1"]))];
    let (violating, ok) = filter_pods_with_pdb_violation(&[a, b], &budgets);
    assert!(violating.is_empty());
    assert_eq!(ok.len(), 2);
}

#[test]
fn pdb_with_empty_selector_matches_nothing() {
    let mut p = (*pdb("all", "x", 0, &[])).clone();
    p.spec.as_mut().unwrap().selector = Some(Default::default());
    let a = pod("p1", 1, 100, None, None, json!({"app": "foo"}));
    let (violating, _) = filter_pods_with_pdb_violation(&[a], &[Budget::new(&p)]);
    assert!(violating.is_empty());
}

#[test]
fn calculate_num_candidates() {
    let pl = |pct, abs| {
        DefaultPreemption::new(DefaultPreemptionArgs {
            min_candidate_nodes_percentage: pct,
            min_candidate_nodes_absolute: abs,
        })
    };
    assert_eq!(pl(10, 100).calculate_num_candidates(10), 10);
    assert_eq!(pl(10, 100).calculate_num_candidates(5000), 500);
    assert_eq!(pl(10, 1).calculate_num_candidates(30), 3);
    assert_eq!(pl(0, 1).calculate_num_candidates(30), 1);
    assert_eq!(pl(100, 0).calculate_num_candidates(7), 7);
    assert_eq!(pl(10, 100).calculate_num_candidates(0), 0);
}

#[test]
fn pod_eligible_to_preempt_others_pod_with_preempt_never_preemption_policy() {
    let mut p = (*pod("p", 100, 100, None, None, json!({}))).pod().clone();
    p.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
    let p = PodInfo::new(Arc::new(p)).unwrap();
    let (snapshot, _) = Snapshot::new(vec![node("n1", "1")], vec![]).unwrap();
    assert_eq!(
        pod_eligible_to_preempt_others(&p, &snapshot, &NodeToStatus::default()),
        Err(NOT_ELIGIBLE_POLICY_NEVER)
    );
}

#[test]
fn pod_eligible_to_preempt_others_pod_with_nominated_node_and_victims_terminating() {
    let mut preemptor = (*pod("p", 100, 100, None, None, json!({}))).pod().clone();
    preemptor
        .status
        .get_or_insert_with(Default::default)
        .nominated_node_name = Some("n1".into());
    let preemptor = PodInfo::new(Arc::new(preemptor)).unwrap();
    let victim: Pod = serde_json::from_value(json!({
        "metadata": {"name": "v", "namespace": "default",
            "deletionTimestamp": "2025-03-01T08:00:00Z"},
        "spec": {"priority": 1, "nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
        "status": {"conditions": [{"type": "DisruptionTarget", "status": "True",
            "reason": "PreemptionByScheduler"}]}
    }))
    .unwrap();
    let victim = Arc::new(PodInfo::new(Arc::new(victim)).unwrap());
    let (snapshot, _) = Snapshot::new(vec![node("n1", "1")], vec![victim]).unwrap();
    let unschedulable = NodeToStatus {
        statuses: vec![(0, Status::new(Code::Unschedulable, "Insufficient cpu"))],
        absent_nodes_status: None,
    };
    assert_eq!(
        pod_eligible_to_preempt_others(&preemptor, &snapshot, &unschedulable),
        Err(NOT_ELIGIBLE_TERMINATING)
    );
    // The nominated node is now UnschedulableAndUnresolvable: preempt again.
    let unresolvable = NodeToStatus {
        statuses: vec![(0, Status::new(Code::UnschedulableAndUnresolvable, "x"))],
        absent_nodes_status: None,
    };
    assert_eq!(
        pod_eligible_to_preempt_others(&preemptor, &snapshot, &unresolvable),
        Ok(())
    );
}

#[test]
fn post_filter_a_pod_that_fits_on_one_node_with_preemption() {
    let mut s = scheduler(
        vec![node("n1", "2"), node("n2", "2")],
        vec![
            pod("low", 1, 2000, Some("n1"), Some(T0), json!({})),
            pod("high", 1000, 2000, Some("n2"), Some(T0), json!({})),
        ],
        vec![],
    );
    let p = pod("p", 100, 1000, None, None, json!({}));
    assert_eq!(
        preempt(&mut s, &p),
        Ok(("n1".to_string(), vec!["default/low".to_string()]))
    );
}

#[test]
fn post_filter_medium_priority_pod_is_preempted_but_lower_priority_one_stays_as_it_is_small() {
    let mut s = scheduler(
        vec![node("n1", "3")],
        vec![
            pod("small-low", 1, 500, Some("n1"), Some(T0), json!({})),
            pod("big-medium", 50, 2000, Some("n1"), Some(T0), json!({})),
        ],
        vec![],
    );
    let p = pod("p", 100, 1500, None, None, json!({}));
    assert_eq!(
        preempt(&mut s, &p),
        Ok(("n1".to_string(), vec!["default/big-medium".to_string()]))
    );
}

#[test]
fn post_filter_pdb_violating_pods_are_reprieved_first() {
    // One of the two pods must go. The budget-covered (violating) pod is reprieved
    // first although it has the lower priority, so the other one is the victim.
    let mut s = scheduler(
        vec![node("n1", "2")],
        vec![
            pod(
                "guarded",
                1,
                1000,
                Some("n1"),
                Some(T0),
                json!({"app": "g"}),
            ),
            pod("plain", 5, 1000, Some("n1"), Some(T0), json!({"app": "p"})),
        ],
        vec![pdb("g", "g", 0, &[])],
    );
    let p = pod("p", 100, 1000, None, None, json!({}));
    assert_eq!(
        preempt(&mut s, &p),
        Ok(("n1".to_string(), vec!["default/plain".to_string()]))
    );
}

#[test]
fn post_filter_no_preemption_victims_found_and_not_helpful() {
    let unschedulable: Node = serde_json::from_value(json!({
        "metadata": {"name": "n2"}, "spec": {"unschedulable": true},
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}}
    }))
    .unwrap();
    let mut s = scheduler(
        vec![node("n1", "2"), Arc::new(unschedulable)],
        vec![pod("peer", 100, 2000, Some("n1"), Some(T0), json!({}))],
        vec![],
    );
    let p = pod("p", 100, 1000, None, None, json!({}));
    assert_eq!(
        preempt(&mut s, &p),
        Err(
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. \
             preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, \
             1 Preemption is not helpful for scheduling."
                .to_string()
        )
    );
}

#[test]
fn run_filter_plugins_with_nominated_pods_counts_more_important_nominated_pods() {
    let fwk = framework(json!({}));
    let (snapshot, _) = Snapshot::new(vec![node("n1", "2")], vec![]).unwrap();
    let mut nominated = NominatedPods::new();
    nominated.add(pod("nominee", 50, 1500, None, None, json!({})), "n1");
    let node = snapshot.node_at(0);
    let mut state = CycleState::new();
    let low = pod("low", 10, 1000, None, None, json!({}));
    fwk.run_pre_filter_plugins(&mut state, &low, &snapshot);
    let s = fwk.run_filter_plugins_with_nominated_pods(&state, &low, node, &nominated);
    assert_eq!(s.message(), "Insufficient cpu");
    let mut state = CycleState::new();
    let high = pod("high", 60, 1000, None, None, json!({}));
    fwk.run_pre_filter_plugins(&mut state, &high, &snapshot);
    let s = fwk.run_filter_plugins_with_nominated_pods(&state, &high, node, &nominated);
    assert!(s.is_success(), "{s}");
    assert_eq!(nominated.remove("default/nominee").as_deref(), Some("n1"));
    assert!(nominated.is_empty());
}

#[test]
fn preemption_policy_never_is_reported_with_prefix() {
    let mut s = scheduler(
        vec![node("n1", "1")],
        vec![pod("low", 1, 1000, Some("n1"), Some(T0), json!({}))],
        vec![],
    );
    let mut p = (*pod("p", 100, 1000, None, None, json!({}))).pod().clone();
    p.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
    let p = Arc::new(PodInfo::new(Arc::new(p)).unwrap());
    assert_eq!(
        preempt(&mut s, &p),
        Err("0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.".to_string())
    );
}
