//! The framework filters and scores nodes in runs, one plugin call per run
//! (`FilterPlugin::filter_nodes`, `ScorePlugin::score_nodes`). These tests check that a
//! run gives every node the status and score that the per-node calls give, with
//! plugins that reject and fail on different nodes, and that a search over a large
//! cluster (the parallel path) agrees with a node-by-node scan.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, Framework, Handle, NodeInfo, NodeSearch, Outcome, Plugin,
    PodInfo, Scheduler, SchedulerOptions, ScorePlugin, Snapshot, Status,
};
use support::{number, numbered_nodes};

/// Rejects nodes whose number is a multiple of `every`, with `code`.
struct RejectEvery {
    name: &'static str,
    every: usize,
    code: Code,
}

impl Plugin for RejectEvery {
    fn name(&self) -> &str {
        self.name
    }
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        Some(self)
    }
}

impl FilterPlugin for RejectEvery {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        if number(node).is_multiple_of(self.every) {
            Status::new(self.code, format!("{} rejects {}", self.name, node.name()))
        } else {
            Status::success()
        }
    }
}

/// Scores a node by its number modulo 101.
struct ByNumber;

impl Plugin for ByNumber {
    fn name(&self) -> &str {
        "ByNumber"
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        Some(self)
    }
}

impl ScorePlugin for ByNumber {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok((number(node) % 101) as i64)
    }
}

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeUnschedulable}, {name: ThreeOut},
                {name: FiveOut}, {name: SevenFails}, {name: ByNumber}, {name: DefaultBinder}]
      disabled: [{name: '*'}]
";

/// The profile of CONFIG; SevenFails errs on multiples of `fails_every`.
fn framework(fails_every: usize) -> Framework {
    let mut registry = kubesched_plugins::in_tree_registry();
    for (name, every, code) in [
        ("ThreeOut", 3, Code::Unschedulable),
        ("FiveOut", 5, Code::UnschedulableAndUnresolvable),
        // Not a rejection: the framework turns it into an error naming the plugin.
        ("SevenFails", fails_every, Code::Error),
    ] {
        registry
            .register(name, move |_, _| {
                Ok(Arc::new(RejectEvery { name, every, code }))
            })
            .expect("a new name");
    }
    registry
        .register("ByNumber", |_, _| Ok(Arc::new(ByNumber)))
        .expect("a new name");
    let loaded = KubeSchedulerConfiguration::from_yaml_str(CONFIG, "test").expect("config");
    Framework::new(&loaded.config.profiles[0], &registry, &Handle::default()).expect("framework")
}

fn pod() -> Arc<PodInfo> {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            namespace: Some("default".into()),
            uid: Some("p".into()),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        ..Default::default()
    };
    Arc::new(PodInfo::new(Arc::new(pod)).expect("pod"))
}

#[test]
fn a_run_gives_each_node_what_the_per_node_call_gives() {
    let fwk = framework(7);
    let (snapshot, _) = Snapshot::new(numbered_nodes(60), []).expect("snapshot");
    let pod = pod();
    let mut state = CycleState::new();
    let pre = fwk.run_pre_filter_plugins(&mut state, &pod, &snapshot);
    assert!(pre.status.is_success());
    let infos: Vec<&NodeInfo> = snapshot.nodes().iter().collect();
    // A run that does not start at the first node, so positions differ from numbers.
    let run = &infos[5..47];
    let mut rejected = Vec::new();
    fwk.run_filter_plugins_on_nodes(&state, &pod, run, &mut rejected);
    let expected: Vec<(usize, Status)> = run
        .iter()
        .enumerate()
        .map(|(i, node)| (i, fwk.run_filter_plugins(&state, &pod, node)))
        .filter(|(_, s)| !s.is_success())
        .collect();
    assert_eq!(rejected, expected);
    // The first plugin in order wins: node-15 is rejected by ThreeOut, not FiveOut;
    // node-35 by FiveOut; node-49 fails with an error naming SevenFails.
    let status_of = |n: usize| rejected.iter().find(|(i, _)| *i == n - 5).map(|(_, s)| s);
    assert_eq!(status_of(15).and_then(Status::plugin), Some("ThreeOut"));
    assert_eq!(status_of(35).and_then(Status::plugin), Some("FiveOut"));
    let seven = status_of(7).expect("node-7 fails");
    assert!(seven.is_error());
    assert_eq!(seven.plugin(), Some("SevenFails"));
    assert!(status_of(8).is_none());
}

#[test]
fn a_large_cluster_is_searched_as_a_node_by_node_scan_would() {
    // More nodes than the parallel cut-off, so the search runs in parallel pieces.
    let count = 5000;
    let scheduler = |fails_every| {
        let (snapshot, _) = Snapshot::new(numbered_nodes(count), []).expect("snapshot");
        Scheduler::new(
            vec![framework(fails_every)],
            snapshot,
            SchedulerOptions {
                node_search: NodeSearch::Exhaustive,
                ..Default::default()
            },
        )
        .expect("scheduler")
    };
    let pod = pod();
    // Every multiple of 7 that is not one of 3 or 5 fails with an error, which aborts
    // the attempt as kube-scheduler does.
    let outcome = scheduler(7).schedule_one(&pod);
    assert!(
        !matches!(outcome, Outcome::Scheduled { .. }),
        "an error from a filter must not let the pod be placed"
    );
    // Without errors the feasible nodes are exactly the numbers that are multiples of
    // neither 3 nor 5, and the best is the highest score (number modulo 101) that
    // comes first in node order.
    let mut scheduler = scheduler(usize::MAX);
    let mut state = CycleState::new();
    let result = scheduler
        .schedule_pod(0, &mut state, &pod)
        .expect("feasible nodes");
    let feasible: Vec<usize> = (1..count)
        .filter(|n| !n.is_multiple_of(3) && !n.is_multiple_of(5))
        .collect();
    assert_eq!(result.feasible_nodes, feasible.len());
    assert_eq!(result.scores.node_indices, feasible);
    let rejected: BTreeMap<usize, Option<String>> = result
        .diagnosis
        .node_to_status
        .statuses
        .iter()
        .map(|(i, s)| (*i, s.plugin().map(str::to_string)))
        .collect();
    assert_eq!(rejected.len(), count - feasible.len());
    assert_eq!(rejected[&0], Some("ThreeOut".to_string()));
    assert_eq!(rejected[&10], Some("FiveOut".to_string()));
    let best = feasible
        .iter()
        .copied()
        .max_by_key(|n| ((n % 101), std::cmp::Reverse(*n)))
        .expect("some node");
    assert_eq!(result.suggested_host, best);
}

/// Scores every node 100, except node-4321, which it scores 101 (out of range).
struct OutOfRangeOn4321;

impl Plugin for OutOfRangeOn4321 {
    fn name(&self) -> &str {
        "OutOfRange"
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        Some(self)
    }
}

impl ScorePlugin for OutOfRangeOn4321 {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(if number(node) == 4321 { 101 } else { 100 })
    }
}

/// A profile scoring with ByNumber (weight 2), TaintToleration (normalised, weight 3)
/// and, when `out_of_range`, OutOfRange.
fn scoring_framework(out_of_range: bool) -> Framework {
    let mut registry = kubesched_plugins::in_tree_registry();
    registry
        .register("ByNumber", |_, _| Ok(Arc::new(ByNumber)))
        .expect("a new name");
    registry
        .register("OutOfRange", |_, _| Ok(Arc::new(OutOfRangeOn4321)))
        .expect("a new name");
    let extra = if out_of_range {
        ", {name: OutOfRange}"
    } else {
        ""
    };
    let config = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{{name: PrioritySort}}, {{name: ByNumber, weight: 2}},
                {{name: TaintToleration, weight: 3}}, {{name: DefaultBinder}}{extra}]
      disabled: [{{name: '*'}}]
"
    );
    let loaded = KubeSchedulerConfiguration::from_yaml_str(&config, "test").expect("config");
    Framework::new(&loaded.config.profiles[0], &registry, &Handle::default()).expect("framework")
}

#[test]
fn scores_are_checked_and_weighed_the_same_in_parallel_runs() {
    for count in [60, 5000] {
        let (snapshot, _) = Snapshot::new(numbered_nodes(count), []).expect("snapshot");
        let options = SchedulerOptions::default();
        let mut scheduler =
            Scheduler::new(vec![scoring_framework(false)], snapshot, options).expect("scheduler");
        let mut state = CycleState::new();
        let result = scheduler
            .schedule_pod(0, &mut state, &pod())
            .expect("feasible nodes");
        let table = &result.scores;
        assert_eq!(table.plugins.len(), 2);
        for (row, &n) in table.node_indices.iter().enumerate() {
            // ByNumber is weighed where it is scored, TaintToleration after it is
            // normalised (no taints: 100 everywhere).
            let by_number = 2 * (n % 101) as i64;
            assert_eq!(table.column(0)[row], by_number, "node-{n}");
            assert_eq!(table.column(1)[row], 300, "node-{n}");
            assert_eq!(table.totals[row], by_number + 300, "node-{n}");
        }
    }
    // A score out of range on one node fails the attempt, naming the plugin, in
    // kube-scheduler's wording (RunScorePlugins' weighing phase).
    let (snapshot, _) = Snapshot::new(numbered_nodes(5000), []).expect("snapshot");
    let mut scheduler = Scheduler::new(
        vec![scoring_framework(true)],
        snapshot,
        SchedulerOptions::default(),
    )
    .expect("scheduler");
    let mut state = CycleState::new();
    let error = scheduler
        .schedule_pod(0, &mut state, &pod())
        .expect_err("an out-of-range score is an error");
    assert_eq!(
        error.to_string(),
        "applying score defaultWeights on Score plugins: plugin \"OutOfRange\" returns an invalid score 101, it should in the range of [0, 100] after normalizing"
    );
}
