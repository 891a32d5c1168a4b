//! kube-scheduler's OpportunisticBatching with the in-tree plugins: a run of identical
//! one-per-node pods (required anti-affinity on `kubernetes.io/hostname`) takes the
//! previous cycle's next-best node as a hint, each hinted pod filtering one node and
//! landing where the full search would have put it; a changed pod, a pod that still
//! fits the node chosen last, a skipped cycle and a batch older than 500 ms fall back
//! to the full search; a profile with PodTopologySpread's system defaults, or with a
//! plugin that does not sign, never batches.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::batch::{attempt, flush};
use kubesched_framework::{
    CycleState, FakeClock, Features, FilterPlugin, Framework, Handle, HostSelection,
    KubernetesVersion, NodeInfo, NodeSearch, Outcome, Plugin, PluginObserver, PodInfo, Registry,
    ScheduleResult, Scheduler, SchedulerOptions, Snapshot, Status,
};
use serde_json::json;

/// kube-scheduler's default profile with PodTopologySpread's defaults cleared (as
/// kube-scheduler's own batching tests do: the system defaults make every pod
/// unbatchable).
const NO_SPREAD_DEFAULTS: &str = "
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
";

/// Nodes `n0`..: `n{i}` has `2 + i` cpus, so the least allocated (the last) scores best.
fn nodes(count: usize) -> Vec<Arc<Node>> {
    (0..count)
        .map(|i| {
            let node = json!({
                "metadata": {"name": format!("n{i}"), "labels": {"kubernetes.io/hostname": format!("n{i}")}},
                "status": {"allocatable": {"cpu": format!("{}", 2 + i), "memory": "8Gi", "pods": "110"}},
            });
            Arc::new(serde_json::from_value(node).expect("node"))
        })
        .collect()
}

/// A `web` pod asking `cpu`; `one_per_node` adds a required anti-affinity to other
/// `web` pods on the same hostname.
fn pod(i: usize, cpu: &str, one_per_node: bool) -> Arc<PodInfo> {
    let mut spec = json!({
        "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}],
    });
    if one_per_node {
        spec["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "web"}},
            "topologyKey": "kubernetes.io/hostname",
        }]}});
    }
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("web-{i}"), "namespace": "default", "uid": format!("uid-{i}"), "labels": {"app": "web"}},
        "spec": spec,
    }))
    .expect("pod");
    Arc::new(PodInfo::new(Arc::new(pod)).expect("pod info"))
}

/// Records the batch attempts and flushes, as `attempt:...` and `flush:...`.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl PluginObserver for Recorder {
    fn observe(&self, _: &str, _: &'static str, _: kubesched_framework::Code, _: Duration) {}
    fn batch_attempt(&self, _: &str, result: &'static str) {
        self.0.lock().unwrap().push(format!("attempt:{result}"));
    }
    fn batch_cache_flushed(&self, _: &str, reason: &'static str) {
        self.0.lock().unwrap().push(format!("flush:{reason}"));
    }
}

/// A Filter plugin that lets every node through and says nothing of signatures.
struct Unsigned;
impl Plugin for Unsigned {
    fn name(&self) -> &str {
        "Unsigned"
    }
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        Some(self)
    }
}
impl FilterPlugin for Unsigned {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        Status::success()
    }
}

struct Setup {
    sched: Scheduler,
    clock: Arc<FakeClock>,
    recorder: Arc<Recorder>,
}

fn setup(config_yaml: Option<&str>, batching: bool, node_count: usize) -> Setup {
    let config = match config_yaml {
        Some(text) => {
            KubeSchedulerConfiguration::from_yaml_str(text, "config.yaml")
                .expect("config")
                .config
        }
        None => KubeSchedulerConfiguration::default_config(),
    };
    let mut registry: Registry = kubesched_plugins::in_tree_registry();
    registry
        .register("Unsigned", |_, _| Ok(Arc::new(Unsigned) as Arc<dyn Plugin>))
        .expect("new plugin");
    let mut fwk =
        Framework::new(&config.profiles[0], &registry, &Handle::default()).expect("framework");
    let recorder = Arc::new(Recorder::default());
    fwk.set_plugin_observer(recorder.clone());
    let (snapshot, _) = Snapshot::new(nodes(node_count), []).expect("snapshot");
    let options = SchedulerOptions {
        node_search: NodeSearch::Adaptive,
        host_selection: HostSelection::FirstInNodeOrder,
        batching,
        ..Default::default()
    };
    let mut sched = Scheduler::new(vec![fwk], snapshot, options).expect("scheduler");
    let clock = Arc::new(FakeClock::new());
    sched.set_clock(clock.clone());
    Setup {
        sched,
        clock,
        recorder,
    }
}

fn scheduled(sched: &mut Scheduler, pod: &Arc<PodInfo>) -> (String, ScheduleResult) {
    match sched.schedule_one(pod) {
        Outcome::Scheduled { node, result } => (node, result),
        other => panic!("{} not scheduled: {other:?}", pod.name()),
    }
}

#[test]
fn identical_one_per_node_pods_take_hints_and_land_where_the_full_search_would() {
    let count = 10;
    let mut with = setup(Some(NO_SPREAD_DEFAULTS), true, count);
    let mut without = setup(Some(NO_SPREAD_DEFAULTS), false, count);
    for i in 0..count {
        let p = pod(i, "500m", true);
        let (node, result) = scheduled(&mut with.sched, &p);
        let (expected, full) = scheduled(&mut without.sched, &p);
        assert_eq!(node, expected, "pod {i}");
        assert_eq!(
            full.evaluated_nodes, count,
            "the full search evaluates every node"
        );
        if i == 0 {
            assert_eq!(result.evaluated_nodes, count);
        } else {
            // The hinted node alone was filtered, and nothing was scored.
            assert_eq!(result.evaluated_nodes, 1, "pod {i}");
            assert!(result.scores.is_empty(), "pod {i}");
        }
        with.clock.advance(Duration::from_millis(10));
    }
    assert_eq!(with.sched.batched_pods(0), count as u64 - 1);
    assert_eq!(without.sched.batched_pods(0), 0);
    // The first pod finds nothing kept; each next one takes the next kept node.
    let mut want = vec![format!("attempt:{}", attempt::NO_HINT)];
    want.extend(vec![format!("attempt:{}", attempt::HINT_USED); count - 1]);
    assert_eq!(with.recorder.take(), want);
    assert!(
        without.recorder.take().is_empty(),
        "no batching, no metrics"
    );
}

#[test]
fn a_changed_pod_falls_back_to_the_full_search() {
    let mut s = setup(Some(NO_SPREAD_DEFAULTS), true, 6);
    scheduled(&mut s.sched, &pod(0, "500m", true));
    let (_, hinted) = scheduled(&mut s.sched, &pod(1, "500m", true));
    assert_eq!(hinted.evaluated_nodes, 1);
    s.recorder.take();
    // Another cpu request: another signature.
    let (node, result) = scheduled(&mut s.sched, &pod(2, "600m", true));
    assert_eq!(node, "n3");
    assert_eq!(result.evaluated_nodes, 6);
    assert_eq!(
        s.recorder.take(),
        [
            format!("flush:{}", flush::POD_INCOMPATIBLE),
            format!("attempt:{}", attempt::NO_HINT)
        ]
    );
    // Its results are kept in turn: a pod like it takes the next hint.
    let (node, result) = scheduled(&mut s.sched, &pod(3, "600m", true));
    assert_eq!((node.as_str(), result.evaluated_nodes), ("n2", 1));
    assert_eq!(s.sched.batched_pods(0), 2);
}

#[test]
fn a_pod_that_still_fits_the_node_chosen_last_falls_back_to_the_full_search() {
    let mut s = setup(Some(NO_SPREAD_DEFAULTS), true, 6);
    // No anti-affinity: the node chosen last still fits the next pod, whose score
    // there changed, so the kept order says nothing.
    let (first, _) = scheduled(&mut s.sched, &pod(0, "500m", false));
    let (_, result) = scheduled(&mut s.sched, &pod(1, "500m", false));
    assert_eq!(first, "n5");
    assert_eq!(result.evaluated_nodes, 6);
    assert_eq!(s.sched.batched_pods(0), 0);
    let seen = s.recorder.take();
    assert!(
        seen.contains(&format!("flush:{}", flush::NODE_NOT_FULL)),
        "{seen:?}"
    );
}

#[test]
fn a_batch_older_than_500ms_falls_back_to_the_full_search() {
    let mut s = setup(Some(NO_SPREAD_DEFAULTS), true, 6);
    scheduled(&mut s.sched, &pod(0, "500m", true));
    // Exactly 500 ms is still young enough (kube-scheduler: now after creation + 500ms).
    s.clock.advance(Duration::from_millis(500));
    let (_, result) = scheduled(&mut s.sched, &pod(1, "500m", true));
    assert_eq!(result.evaluated_nodes, 1);
    // The batch dates from the first pod's cycle, not from the hint.
    s.clock.advance(Duration::from_millis(1));
    s.recorder.take();
    let (node, result) = scheduled(&mut s.sched, &pod(2, "500m", true));
    assert_eq!(node, "n3");
    assert_eq!(result.evaluated_nodes, 6, "the full search again");
    assert_eq!(
        s.recorder.take(),
        [
            format!("flush:{}", flush::EXPIRED),
            format!("attempt:{}", attempt::NO_HINT)
        ]
    );
    assert_eq!(s.sched.batched_pods(0), 1);
}

#[test]
fn a_skipped_cycle_falls_back_to_the_full_search() {
    let mut s = setup(Some(NO_SPREAD_DEFAULTS), true, 6);
    s.sched.set_scheduling_cycle(7);
    let mut state = CycleState::new();
    let p = pod(0, "500m", true);
    let result = s.sched.schedule_pod(0, &mut state, &p).expect("fits");
    let node = s
        .sched
        .snapshot()
        .node_at(result.suggested_host)
        .name()
        .to_string();
    s.sched.snapshot_mut().add_pod(Arc::new(p.bound_to(&node)));
    // Cycle 9, not 8: some other pod's cycle came in between.
    s.sched.set_scheduling_cycle(9);
    s.recorder.take();
    let result = s
        .sched
        .schedule_pod(0, &mut CycleState::new(), &pod(1, "500m", true))
        .expect("fits");
    assert_eq!(result.evaluated_nodes, 6);
    assert_eq!(
        s.recorder.take()[0],
        format!("flush:{}", flush::POD_SKIPPED)
    );
}

#[test]
fn unsignable_profiles_never_batch() {
    // kube-scheduler's default profile: PodTopologySpread's system default constraints
    // make every pod unbatchable.
    let mut s = setup(None, true, 6);
    for i in 0..4 {
        let (_, result) = scheduled(&mut s.sched, &pod(i, "500m", true));
        // The full search each time (the rejected nodes count as evaluated).
        assert_eq!(result.evaluated_nodes, 6, "pod {i}");
    }
    assert_eq!(s.sched.batched_pods(0), 0);
    let seen = s.recorder.take();
    assert!(
        seen.contains(&format!("flush:{}", flush::POD_NOT_BATCHABLE)),
        "{seen:?}"
    );

    // A plugin that does not sign (the default of Plugin::sign_pod) turns batching off
    // for its profile.
    let with_unsigned = format!(
        "{NO_SPREAD_DEFAULTS}  plugins:\n    filter:\n      enabled:\n      - name: Unsigned\n"
    );
    let mut s = setup(Some(&with_unsigned), true, 6);
    for i in 0..4 {
        let (_, result) = scheduled(&mut s.sched, &pod(i, "500m", true));
        assert_eq!(result.evaluated_nodes, 6, "pod {i}");
    }
    assert_eq!(s.sched.batched_pods(0), 0);
}

#[test]
fn a_hinted_node_that_no_longer_fits_falls_back_to_the_full_search() {
    let mut s = setup(Some(NO_SPREAD_DEFAULTS), true, 6);
    let mut twin = setup(Some(NO_SPREAD_DEFAULTS), false, 6);
    scheduled(&mut s.sched, &pod(0, "500m", true));
    scheduled(&mut twin.sched, &pod(0, "500m", true));
    // Where the next pod would go, so the hint: take it first with another web pod.
    let (hint, _) = scheduled(&mut twin.sched, &pod(1, "500m", true));
    let other = pod(100, "500m", true).bound_to(&hint);
    s.sched.snapshot_mut().add_pod(Arc::new(other));
    s.recorder.take();
    let (node, result) = scheduled(&mut s.sched, &pod(1, "500m", true));
    assert_ne!(node, hint);
    assert_eq!(result.evaluated_nodes, 6);
    let hint_index = s.sched.snapshot().index_of(&hint).expect("node");
    assert!(
        result.diagnosis.node_to_status.get(hint_index).is_some(),
        "the hinted node's rejection is in the diagnosis"
    );
    assert_eq!(
        s.recorder.take(),
        [format!("attempt:{}", attempt::HINT_NOT_USED)]
    );
    assert_eq!(s.sched.batched_pods(0), 0);
}

/// The real kube-scheduler v1.36.1 batches pods with DRAExtendedResource on (its
/// default): `OpportunisticBatch set batch information` for plain cpu pods under a
/// profile without default spreading, with the gate on as with it off (later sources
/// refuse to sign every pod with the gate on; v1.36.1 does not).
#[test]
fn pods_are_signed_with_dra_extended_resource_on_or_off() {
    let config = KubeSchedulerConfiguration::from_yaml_str(NO_SPREAD_DEFAULTS, "config.yaml")
        .expect("config")
        .config;
    let registry = kubesched_plugins::in_tree_registry();
    for gate in ["DRAExtendedResource=true", "DRAExtendedResource=false"] {
        let handle = Handle {
            features: Features::with_gates(KubernetesVersion::V1_36, [gate]).expect("gates"),
            ..Handle::default()
        };
        let fwk = Framework::new(&config.profiles[0], &registry, &handle).expect("framework");
        let signature = fwk.sign_pod(&CycleState::new(), &pod(0, "500m", true));
        assert!(signature.is_some(), "{gate}");
    }
}

#[test]
fn signatures_follow_what_the_plugins_read() {
    let s = setup(Some(NO_SPREAD_DEFAULTS), true, 1);
    let fwk = s.sched.profiles()[0].clone();
    let sign = |patch: serde_json::Value| {
        let mut value = serde_json::to_value(pod(0, "500m", true).pod()).expect("json");
        json_patch(&mut value, patch);
        let p: Pod = serde_json::from_value(value).expect("pod");
        fwk.sign_pod(
            &CycleState::new(),
            &PodInfo::new(Arc::new(p)).expect("info"),
        )
    };
    let base = sign(json!({})).expect("signable");
    // Names, uids and ConfigMap or Secret volumes matter to no plugin.
    let same = sign(
        json!({"metadata": {"name": "other", "uid": "u2"}, "spec": {"volumes": [
            {"name": "cfg", "configMap": {"name": "c"}}, {"name": "s", "secret": {"secretName": "s"}}
        ]}}),
    );
    assert_eq!(same.as_ref(), Some(&base));
    for (what, patch) in [
        ("labels", json!({"metadata": {"labels": {"app": "db"}}})),
        (
            "tolerations",
            json!({"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}}),
        ),
        (
            "node selector",
            json!({"spec": {"nodeSelector": {"disk": "ssd"}}}),
        ),
        (
            "image",
            json!({"spec": {"containers": [{"name": "c", "image": "redis", "resources": {"requests": {"cpu": "500m", "memory": "100Mi"}}}]}}),
        ),
        (
            "host port",
            json!({"spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 80}], "resources": {"requests": {"cpu": "500m", "memory": "100Mi"}}}]}}),
        ),
        (
            "volume",
            json!({"spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}}),
        ),
    ] {
        let other = sign(patch).unwrap_or_else(|| panic!("{what}: signable"));
        assert_ne!(other, base, "{what} is signed");
    }
    let spread = json!({"spec": {"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}
    }]}});
    assert_eq!(sign(spread), None, "a spread cannot be signed");
    let claim = json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]}});
    assert_eq!(sign(claim), None, "DRA claims cannot be signed");
}

/// Merges `patch` into `value` (objects key by key, anything else replaced).
fn json_patch(value: &mut serde_json::Value, patch: serde_json::Value) {
    match (value, patch) {
        (serde_json::Value::Object(v), serde_json::Value::Object(p)) => {
            for (k, pv) in p {
                json_patch(v.entry(k).or_insert(serde_json::Value::Null), pv);
            }
        }
        (v, p) => *v = p,
    }
}
