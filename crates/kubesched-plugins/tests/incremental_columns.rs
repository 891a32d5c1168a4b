//! Exact incremental scheduling keeps each plugin's answers apart, under the plugin's
//! own part of the signature (`kubesched_framework::incremental`). These tests count
//! the calls of two plugins: one that reads only the node object
//! (`Plugin::reads_node_pods` is false) is asked about each node once for all pods,
//! whatever their shape; one that reads the pods on the node is asked again only about
//! the node a placement changed, and once per node for each new part. The decisions
//! are those of the full pass, and so are the rejections a failed Score reports when
//! only decisions are read.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::signature::SignFragment;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, Framework, Handle, NodeInfo, NodeSearch, Outcome, Plugin,
    PodInfo, ScheduleError, Scheduler, SchedulerOptions, ScorePlugin, Snapshot, Status,
};
use support::{number, numbered_nodes};

/// Rejects every fourth node and scores by node number: reads the node object only.
struct NodeObject(Arc<AtomicUsize>);

impl Plugin for NodeObject {
    fn name(&self) -> &str {
        "NodeObject"
    }
    fn node_scoped(&self, _: &PodInfo, _: &Snapshot) -> bool {
        true
    }
    fn reads_node_pods(&self, _: &PodInfo) -> bool {
        false
    }
    fn sign_pod(&self, _: &PodInfo) -> Result<Vec<SignFragment>, Status> {
        Ok(Vec::new())
    }
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        Some(self)
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        Some(self)
    }
}

impl FilterPlugin for NodeObject {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        self.0.fetch_add(1, Ordering::Relaxed);
        if number(node) % 4 == 3 {
            Status::new(Code::Unschedulable, "every fourth node")
        } else {
            Status::success()
        }
    }
}

impl ScorePlugin for NodeObject {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok((number(node) % 7 * 10) as i64)
    }
}

/// Takes at most `size` pods per node (the pod's `size` label, its part of the
/// signature with its `fail` label) and prefers emptier nodes: reads the pods on the
/// node. Its Score fails for a pod labelled `fail`.
struct PodsOnNode(Arc<AtomicUsize>);

fn size(pod: &PodInfo) -> usize {
    pod.label("size").and_then(|s| s.parse().ok()).unwrap_or(1)
}

impl Plugin for PodsOnNode {
    fn name(&self) -> &str {
        "PodsOnNode"
    }
    fn node_scoped(&self, _: &PodInfo, _: &Snapshot) -> bool {
        true
    }
    fn sign_pod(&self, pod: &PodInfo) -> Result<Vec<SignFragment>, Status> {
        let fails = pod.label("fail").is_some();
        Ok(vec![SignFragment::json("test/size", &(size(pod), fails))])
    }
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        Some(self)
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        Some(self)
    }
}

impl FilterPlugin for PodsOnNode {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        self.0.fetch_add(1, Ordering::Relaxed);
        if node.pods().len() >= size(pod) {
            Status::new(Code::Unschedulable, "node full")
        } else {
            Status::success()
        }
    }
}

impl ScorePlugin for PodsOnNode {
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        self.0.fetch_add(1, Ordering::Relaxed);
        if pod.label("fail").is_some() {
            return Err(Status::error("score failed"));
        }
        Ok(100 - 10 * node.pods().len().min(10) as i64)
    }
}

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeObject}, {name: PodsOnNode},
                {name: DefaultBinder}]
      disabled: [{name: '*'}]
";

const NODES: usize = 40;

/// A scheduler over NODES empty nodes with the two plugins, counting their calls.
fn scheduler(incremental: bool) -> (Scheduler, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let object_calls = Arc::new(AtomicUsize::new(0));
    let pods_calls = Arc::new(AtomicUsize::new(0));
    let mut registry = kubesched_plugins::in_tree_registry();
    let calls = object_calls.clone();
    registry
        .register("NodeObject", move |_, _| {
            Ok(Arc::new(NodeObject(calls.clone())))
        })
        .expect("a new name");
    let calls = pods_calls.clone();
    registry
        .register("PodsOnNode", move |_, _| {
            Ok(Arc::new(PodsOnNode(calls.clone())))
        })
        .expect("a new name");
    let loaded = KubeSchedulerConfiguration::from_yaml_str(CONFIG, "test").expect("config");
    let fwk = Framework::new(&loaded.config.profiles[0], &registry, &Handle::default())
        .expect("framework");
    let (snapshot, _) = Snapshot::new(numbered_nodes(NODES), []).expect("snapshot");
    let mut scheduler = Scheduler::new(
        vec![fwk],
        snapshot,
        SchedulerOptions {
            node_search: NodeSearch::Exhaustive,
            ..Default::default()
        },
    )
    .expect("scheduler");
    scheduler.set_incremental(incremental);
    (scheduler, object_calls, pods_calls)
}

fn pod(name: &str, size: usize) -> Arc<PodInfo> {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(name.into()),
            labels: Some([("size".to_string(), size.to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        ..Default::default()
    };
    Arc::new(PodInfo::new(Arc::new(pod)).expect("pod"))
}

/// Schedules `pod`, returning the node it went to.
fn place(scheduler: &mut Scheduler, pod: &Arc<PodInfo>) -> Option<usize> {
    match scheduler.schedule_one(pod) {
        Outcome::Scheduled { node, .. } => scheduler.snapshot().index_of(&node),
        _ => None,
    }
}

#[test]
fn a_plugin_that_reads_the_node_object_is_asked_once_per_node_and_part() {
    let (mut incremental, object_calls, pods_calls) = scheduler(true);
    let (mut full, _, _) = scheduler(false);
    let calls = || {
        (
            object_calls.load(Ordering::Relaxed),
            pods_calls.load(Ordering::Relaxed),
        )
    };
    let mut placed = 0;
    let mut schedule = |pod: Arc<PodInfo>| {
        let at = place(&mut incremental, &pod);
        assert_eq!(at, place(&mut full, &pod), "{} placed apart", pod.key());
        assert!(at.is_some(), "{} fits", pod.key());
        placed += 1;
        calls()
    };
    // The first pod of a shape takes the full pass; the second keeps its answers.
    schedule(pod("a-0", 2));
    let kept = schedule(pod("a-1", 2));
    // From then on, NodeObject is never asked again, and PodsOnNode only about the
    // node the last placement changed (to filter it, and to score it if it still fits).
    let mut last = kept;
    for i in 2..12 {
        let now = schedule(pod(&format!("a-{i}"), 2));
        assert_eq!(now.0, kept.0, "a-{i}: NodeObject asked again");
        // Scored too unless it is now full.
        assert!(
            (1..=2).contains(&(now.1 - last.1)),
            "a-{i}: PodsOnNode asked {} times",
            now.1 - last.1
        );
        last = now;
    }
    // A shape new to PodsOnNode only: its first pod takes the full pass (one of its
    // columns would be new), its second computes PodsOnNode's new column and takes
    // NodeObject's answers as they are.
    let first = schedule(pod("b-0", 3));
    let second = schedule(pod("b-1", 3));
    assert_eq!(second.0, first.0, "NodeObject asked again for a new shape");
    let feasible = NODES - NODES / 4;
    assert!(
        second.1 - first.1 <= NODES + feasible,
        "PodsOnNode asked {} times for its new column",
        second.1 - first.1
    );
    // The shapes come in turn: each cycle asks PodsOnNode again only about the nodes
    // placed on since its shape's last pod, and NodeObject never.
    for i in 2..8 {
        let before = calls();
        let after = schedule(pod(&format!("a-{}", 10 + i), 2));
        assert_eq!(after.0, before.0);
        let b = schedule(pod(&format!("b-{i}"), 3));
        assert_eq!(b.0, before.0);
        assert!(
            b.1 - before.1 <= 2 * 2 * 2,
            "PodsOnNode asked about more than two nodes"
        );
    }
    assert_eq!(placed, 26);
}

/// The rejections and the plugins behind them that a Score failure reports, as text.
fn failure(outcome: Outcome) -> String {
    match outcome {
        Outcome::Unschedulable {
            error: ScheduleError::FailedAfterFilter { status, diagnosis },
            ..
        } => format!(
            "{status:?} {:?} {:?}",
            diagnosis.node_to_status.statuses, diagnosis.unschedulable_plugins
        ),
        other => panic!("not a failure after Filter: {other:?}"),
    }
}

#[test]
fn a_score_failure_reports_the_rejections_of_the_full_pass_when_only_decisions_are_read() {
    let (mut decisions, _, _) = scheduler(true);
    decisions.set_decisions_only(true);
    let (mut full, _, _) = scheduler(false);
    for i in 0..6 {
        let p = pod(&format!("a-{i}"), 1);
        assert_eq!(place(&mut decisions, &p), place(&mut full, &p));
    }
    // The first pod of the shape takes the full pass, the second the kept verdicts.
    for i in 0..2 {
        let mut p = (*pod(&format!("f-{i}"), 1).pod()).clone();
        p.metadata
            .labels
            .get_or_insert_default()
            .insert("fail".into(), "yes".into());
        let p = Arc::new(PodInfo::new(Arc::new(p)).expect("pod"));
        let (kept, passed) = (decisions.schedule_one(&p), full.schedule_one(&p));
        assert_eq!(failure(kept), failure(passed), "f-{i}");
    }
}
