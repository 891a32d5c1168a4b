//! Gangs in a replay: Permit waits on the replay's clock (a waiting pod holds its node
//! while time passes, binds when a later pod's Permit allows it, times out at its
//! deadline with kube-scheduler's message), PodGroup cycles (kube-scheduler v1.36), and
//! PodGroups applied by the trace; in the timed and the settled mode.

use kubesched_framework::features::{Features, KubernetesVersion};
use kubesched_replay::{Mode, Record, ReplayOptions, Summary, TraceReader, check, replay};
use kubesched_sim::PodOutcome;
use kubesched_sim::scenario::{self, Source};
use serde_json::{Value, json};
use std::time::Duration;

fn node(name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}})
}

/// A pod of scheduler-plugins' PodGroup `group` (Coscheduling's label).
fn sigs_pod(name: &str, cpu: &str, group: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
            "labels": {"scheduling.x-k8s.io/pod-group": group}},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}})
}

/// `object` with a label added: a change its kind's watchers see.
fn relabelled(mut object: Value) -> Value {
    object["metadata"]["labels"] = json!({"changed": "yes"});
    object
}

fn sigs_group(name: &str, min_member: u32) -> Value {
    json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member}})
}

/// A pod of kube-scheduler v1.36's PodGroup `group` (`spec.schedulingGroup`).
fn gang_pod(name: &str, cpu: &str, group: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}})
}

fn gang_group(name: &str, min_count: u32) -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}})
}

/// Coscheduling at every point it implements, NodeResourcesFit and the binder, as
/// `conformance/cases-sigs/` configure it (the args' default wait, 60 s).
fn coscheduling_config() -> Value {
    let only = |name: &str| json!({"enabled": [{"name": name}], "disabled": [{"name": "*"}]});
    json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {
            "multiPoint": {"disabled": [{"name": "*"}]},
            "queueSort": only("Coscheduling"),
            "preFilter": only("Coscheduling"),
            "filter": only("NodeResourcesFit"),
            "postFilter": only("Coscheduling"),
            "reserve": only("Coscheduling"),
            "permit": only("Coscheduling"),
            "bind": only("DefaultBinder")}}]})
}

fn trace(events: &[Value]) -> String {
    let mut text = "{\"kubeschedTrace\": 1}\n".to_string();
    for e in events {
        text.push_str(&format!("{e}\n"));
    }
    text
}

/// (time, pod, node or message) of every attempt, and the summary.
fn run(
    docs: &[Value],
    events: &[Value],
    options: &ReplayOptions,
) -> (Vec<(f64, String, String)>, Summary) {
    let text: String = docs.iter().map(|d| format!("---\n{d}\n")).collect();
    let s = scenario::load(&[Source {
        name: "cluster.yaml".into(),
        text,
    }])
    .unwrap();
    let text = trace(events);
    let mut checked = TraceReader::new("t.jsonl", text.as_bytes());
    check(&s, &mut checked).unwrap();
    let mut registry = kubesched_plugins::in_tree_registry();
    registry.merge(kubesched_plugins_sigs::registry()).unwrap();
    let mut seen = Vec::new();
    let summary = replay(
        &s,
        TraceReader::new("t.jsonl", text.as_bytes()),
        options,
        &registry,
        |record| {
            if let Record::Attempt { time, attempt } = record {
                let attempt = *attempt;
                let what = match attempt.outcome {
                    PodOutcome::Scheduled(n) => n,
                    PodOutcome::Unschedulable(m) => m,
                    other => format!("{other:?}"),
                };
                seen.push((time, attempt.pod, what));
            }
            Ok::<(), std::convert::Infallible>(())
        },
    )
    .unwrap();
    (seen, summary)
}

fn options(mode: Mode, tail: u64) -> ReplayOptions {
    ReplayOptions {
        mode,
        tail: Duration::from_secs(tail),
        ..ReplayOptions::default()
    }
}

/// v1.36 with `GenericWorkload` and `GangScheduling` on.
fn gang_options(mode: Mode) -> ReplayOptions {
    let mut o = options(mode, 600);
    o.simulation.features = Features::with_gates(
        KubernetesVersion::LATEST,
        ["GenericWorkload=true,GangScheduling=true"],
    )
    .unwrap();
    o
}

/// v1.35 with `GenericWorkload` and `GangScheduling` on.
fn v1_35_options(mode: Mode) -> ReplayOptions {
    let mut o = options(mode, 600);
    o.simulation.features = Features::with_gates(
        KubernetesVersion::V1_35,
        ["GenericWorkload=true,GangScheduling=true"],
    )
    .unwrap();
    o
}

/// A pod of v1.35's Workload `workload`, group `workers`.
fn workload_pod(name: &str, cpu: &str, workload: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"workloadRef": {"name": workload, "podGroup": "workers"},
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}})
}

fn lines<'a>(seen: &'a [(f64, String, String)], pod: &str) -> Vec<(f64, &'a str)> {
    seen.iter()
        .filter(|(_, p, _)| p == pod)
        .map(|(t, _, w)| (*t, w.as_str()))
        .collect()
}

const TIMEOUT: &str = "rejected due to timeout after waiting 1m0s at plugin Coscheduling";

#[test]
fn a_waiting_gang_pod_holds_its_node_and_binds_when_the_last_one_is_placed() {
    // g-1 is placed on n1 at 0 and waits for a second pod of its group; g-2 fits
    // nowhere while g-1 holds n1. n2 joins at 30 s: g-2 goes there, its Permit
    // allows g-1, and both bind at 30 s, g-1 having waited 30 s.
    let docs = [
        coscheduling_config(),
        node("n1", "2"),
        sigs_group("g", 2),
        sigs_pod("g-1", "2", "g"),
        sigs_pod("g-2", "2", "g"),
    ];
    let events = [json!({"time": 30, "apply": node("n2", "2")})];
    let (seen, summary) = run(&docs, &events, &options(Mode::Timed, 600));
    assert_eq!(
        lines(&seen, "default/g-1"),
        [(30.0, "n1")],
        "g-1 binds when g-2 is placed, not before: {seen:?}"
    );
    assert_eq!(
        lines(&seen, "default/g-2"),
        [
            (0.0, "0/1 nodes are available: 1 Insufficient cpu."),
            (30.0, "n2")
        ],
        "{seen:?}"
    );
    assert_eq!((summary.scheduled, summary.pending), (2, 0));
    assert_eq!(summary.waited.map(|w| w.max), Some(30.0));
}

#[test]
fn a_gang_one_pod_short_times_out_at_its_deadline_and_nothing_stays_bound() {
    // g-1 and g-2 wait on n1 and n2; g-3 never fits. At 60 s (the default wait)
    // g-1's wait runs out; its Unreserve rejects g-2 with it.
    let docs = [
        coscheduling_config(),
        node("n1", "2"),
        node("n2", "2"),
        sigs_group("g", 3),
        sigs_pod("g-1", "2", "g"),
        sigs_pod("g-2", "2", "g"),
        sigs_pod("g-3", "3", "g"),
    ];
    // An event at 100 s keeps the replay going past the deadline.
    let events = [json!({"time": 100, "cordon": "n2"})];
    let (seen, summary) = run(&docs, &events, &options(Mode::Timed, 10));
    assert_eq!(lines(&seen, "default/g-1")[0], (60.0, TIMEOUT), "{seen:?}");
    assert_eq!(
        lines(&seen, "default/g-2")[0],
        (60.0, "rejection in Unreserve"),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|(_, _, w)| w == "n1" || w == "n2"),
        "nothing binds: {seen:?}"
    );
    assert_eq!((summary.scheduled, summary.pending), (0, 3));
}

#[test]
fn what_still_waits_when_the_replay_ends_times_out_then() {
    // The replay's last input is at 0 and its tail 10 s: the 60-second wait is cut
    // when the replay ends, with the same message, and nothing stays bound.
    let docs = [
        coscheduling_config(),
        node("n1", "2"),
        sigs_group("g", 2),
        sigs_pod("g-1", "2", "g"),
        sigs_pod("g-2", "3", "g"),
    ];
    let (seen, summary) = run(&docs, &[], &options(Mode::Timed, 10));
    assert_eq!(lines(&seen, "default/g-1"), [(0.0, TIMEOUT)], "{seen:?}");
    assert_eq!((summary.scheduled, summary.pending), (0, 2));
}

#[test]
fn a_waiting_pod_deleted_frees_its_node_and_writes_no_line() {
    // g-1 waits on n1; g-2 fits nowhere. g-1 is deleted at 10 s: n1 is free, and
    // g-2, tried again, is one pod short of its group.
    let docs = [
        coscheduling_config(),
        node("n1", "2"),
        sigs_group("g", 2),
        sigs_pod("g-1", "2", "g"),
        sigs_pod("g-2", "2", "g"),
    ];
    let events = [json!({"time": 10, "delete": {"kind": "Pod", "name": "g-1"}})];
    let (seen, summary) = run(&docs, &events, &options(Mode::Timed, 10));
    assert_eq!(lines(&seen, "default/g-1"), [], "{seen:?}");
    assert_eq!(
        lines(&seen, "default/g-2"),
        [
            (0.0, "0/1 nodes are available: 1 Insufficient cpu."),
            (
                10.0,
                "0/1 nodes are available: pre-filter pod g-2 cannot find enough sibling pods, current pods number: 1, minMember of group: 2."
            )
        ],
        "{seen:?}"
    );
    assert_eq!(
        (summary.scheduled, summary.pending, summary.deleted),
        (0, 1, 1)
    );
}

#[test]
fn a_node_deleted_under_a_waiting_pod_turns_it_down() {
    let docs = [
        coscheduling_config(),
        node("n1", "2"),
        node("n2", "2"),
        sigs_group("g", 2),
        sigs_pod("g-1", "2", "g"),
        sigs_pod("g-2", "3", "g"),
    ];
    let events = [json!({"time": 10, "delete": {"kind": "Node", "name": "n1"}})];
    let (seen, summary) = run(&docs, &events, &options(Mode::Timed, 30));
    assert_eq!(
        lines(&seen, "default/g-1")[0],
        (
            10.0,
            "node \"n1\" was deleted while the pod waited at Permit"
        ),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|(_, _, w)| w == "n1"), "{seen:?}");
    assert_eq!(summary.scheduled, 0);
}

#[test]
fn settled_a_gang_whose_last_pod_arrives_later_binds_then() {
    // The PodGroup and g-1 come at 0: too few pods for the group. g-2 comes at 20 s:
    // the pass places both, g-1's wait allowed by g-2's Permit within the pass.
    let docs = [coscheduling_config(), node("n1", "2"), node("n2", "2")];
    let events = [
        json!({"time": 0, "apply": sigs_group("g", 2)}),
        json!({"time": 0, "apply": sigs_pod("g-1", "2", "g")}),
        json!({"time": 20, "apply": sigs_pod("g-2", "2", "g")}),
    ];
    let (seen, summary) = run(&docs, &events, &options(Mode::Settle, 600));
    assert_eq!(
        lines(&seen, "default/g-1"),
        [
            (
                0.0,
                "0/2 nodes are available: pre-filter pod g-1 cannot find enough sibling pods, current pods number: 1, minMember of group: 2."
            ),
            (20.0, "n1")
        ],
        "{seen:?}"
    );
    assert_eq!(lines(&seen, "default/g-2"), [(20.0, "n2")], "{seen:?}");
    assert_eq!((summary.scheduled, summary.pending), (2, 0));
}

#[test]
fn settled_a_gang_one_pod_short_times_out_in_its_pass() {
    let docs = [
        coscheduling_config(),
        node("n1", "2"),
        node("n2", "2"),
        sigs_group("g", 3),
        sigs_pod("g-1", "2", "g"),
        sigs_pod("g-2", "2", "g"),
        sigs_pod("g-3", "3", "g"),
    ];
    let (seen, summary) = run(&docs, &[], &options(Mode::Settle, 600));
    assert_eq!(lines(&seen, "default/g-1"), [(0.0, TIMEOUT)], "{seen:?}");
    assert_eq!(
        lines(&seen, "default/g-2"),
        [(0.0, "rejection in Unreserve")],
        "{seen:?}"
    );
    assert_eq!((summary.scheduled, summary.pending), (0, 3));
}

#[test]
fn a_pod_group_applied_after_its_pods_lets_them_in() {
    // v1.36: c-1 and c-2 are held at PreEnqueue until their PodGroup exists; it comes
    // at 10 s and one PodGroup cycle places both.
    for mode in [Mode::Timed, Mode::Settle] {
        let docs = [node("n1", "2"), node("n2", "2")];
        let events = [
            json!({"time": 0, "apply": gang_pod("c-1", "1500m", "c")}),
            json!({"time": 0, "apply": gang_pod("c-2", "1500m", "c")}),
            json!({"time": 10, "apply": gang_group("c", 2)}),
        ];
        let (seen, summary) = run(&docs, &events, &gang_options(mode));
        let placed: Vec<_> = seen.iter().filter(|(t, _, _)| *t == 10.0).collect();
        assert_eq!(placed.len(), 2, "{mode:?}: {seen:?}");
        assert!(
            placed.iter().all(|(_, _, w)| w == "n1" || w == "n2"),
            "{mode:?}: {seen:?}"
        );
        assert_eq!((summary.scheduled, summary.pending), (2, 0), "{mode:?}");
    }
}

#[test]
fn a_pod_group_cycle_takes_the_group_pods_that_came_earlier() {
    // v1.36: c-1 comes at 0 and is held at PreEnqueue (one pod of a gang of 2); c-2
    // comes at 20 s and the PodGroup cycle attempts both, in queue order. One node of
    // 2 cpu takes one 1.5-cpu pod: the group is not placed, and nothing of it stays, at
    // once (not after GangScheduling's 5-minute wait).
    for mode in [Mode::Timed, Mode::Settle] {
        let docs = [node("n1", "2"), gang_group("c", 2)];
        let events = [
            json!({"time": 0, "apply": gang_pod("c-1", "1500m", "c")}),
            json!({"time": 20, "apply": gang_pod("c-2", "1500m", "c")}),
        ];
        let (seen, summary) = run(&docs, &events, &gang_options(mode));
        let at_20: Vec<(&str, &str)> = seen
            .iter()
            .filter(|(t, _, _)| *t == 20.0)
            .map(|(_, p, w)| (p.as_str(), w.as_str()))
            .collect();
        assert_eq!(
            at_20,
            [
                (
                    "default/c-1",
                    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more plugins asked to wait and no plugin rejected pod"
                ),
                (
                    "default/c-2",
                    "0/1 nodes are available: 1 Insufficient cpu."
                )
            ],
            "{mode:?}: {seen:?}"
        );
        assert_eq!((summary.scheduled, summary.pending), (0, 2), "{mode:?}");
    }
}

#[test]
fn v1_35_a_gang_pod_waits_across_time_and_a_late_sibling_lets_it_in() {
    // v1.35's GangScheduling: a-1 waits on n1 from 0 s; a-2 fits nowhere until n2
    // joins at 30 s, and its Permit allows a-1 then. b-1, of another gang of two
    // whose Workload comes at 40 s with b-2, is held at PreEnqueue until then.
    let docs = [
        node("n1", "2"),
        json!({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]}}),
        workload_pod("a-1", "2", "a"),
        workload_pod("a-2", "2", "a"),
        workload_pod("b-1", "1", "b"),
    ];
    let events = [
        json!({"time": 30, "apply": node("n2", "2")}),
        json!({"time": 35, "apply": node("n3", "2")}),
        json!({"time": 40, "apply": {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": "b", "namespace": "default"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]}}}),
        json!({"time": 40, "apply": workload_pod("b-2", "1", "b")}),
    ];
    let (seen, summary) = run(&docs, &events, &v1_35_options(Mode::Timed));
    assert_eq!(lines(&seen, "default/a-1"), [(30.0, "n1")], "{seen:?}");
    assert_eq!(
        lines(&seen, "default/a-2"),
        [
            (0.0, "0/1 nodes are available: 1 Insufficient cpu."),
            (30.0, "n2")
        ],
        "{seen:?}"
    );
    let b: Vec<(f64, &str)> = seen
        .iter()
        .filter(|(_, p, _)| p.starts_with("default/b-"))
        .map(|(t, _, w)| (*t, w.as_str()))
        .filter(|(t, _)| *t > 0.0)
        .collect();
    assert_eq!(b, [(40.0, "n3"), (40.0, "n3")], "{seen:?}");
    assert_eq!((summary.scheduled, summary.pending), (4, 0));
}

#[test]
fn a_waiting_gang_pod_retries_its_siblings_at_once() {
    // g-2 comes first and is one pod short. g-1 comes at 0.5 s: the event sends g-2
    // to back off until 1 s, but g-1's Permit, waiting, activates its sibling
    // (ActivateSiblings), so g-2 is tried at 0.5 s and lets both in then.
    let docs = [
        coscheduling_config(),
        node("n1", "4"),
        sigs_group("g", 2),
        sigs_pod("g-2", "1", "g"),
    ];
    let events = [json!({"time": 0.5, "apply": sigs_pod("g-1", "1", "g")})];
    let (seen, summary) = run(&docs, &events, &options(Mode::Timed, 10));
    let g2 = lines(&seen, "default/g-2");
    assert_eq!(g2.len(), 2, "{seen:?}");
    assert!(
        g2[0].1.contains("cannot find enough sibling pods"),
        "{seen:?}"
    );
    assert_eq!(g2[1], (0.5, "n1"), "{seen:?}");
    assert_eq!(lines(&seen, "default/g-1"), [(0.5, "n1")], "{seen:?}");
    assert_eq!((summary.scheduled, summary.pending), (2, 0));
}

#[test]
fn a_backed_off_group_is_refused_until_its_backoff_has_passed_on_the_replay_clock() {
    // podGroupBackoffSeconds 20. At 0, g-2 fits nowhere and PostFilter rejects the
    // group (g-1 waited on n1) and backs it off. n2 and a third pod of the group at
    // 5 s: the plugin keeps its backed-off groups across the new pod (as its informer
    // would), and the new pod is refused at PreFilter (the others, turned down by
    // Coscheduling, wait for an event it registered). n3 and a change to the PodGroup
    // (an event Coscheduling registers; a node added is not) at 25 s, past the
    // backoff: all three are placed.
    let mut config = coscheduling_config();
    config["profiles"][0]["pluginConfig"] =
        json!([{"name": "Coscheduling", "args": {"podGroupBackoffSeconds": 20}}]);
    let docs = [
        config,
        node("n1", "2"),
        sigs_group("g", 2),
        sigs_pod("g-1", "1", "g"),
        sigs_pod("g-2", "3", "g"),
    ];
    let events = [
        json!({"time": 5, "apply": node("n2", "4")}),
        json!({"time": 5, "apply": sigs_pod("g-3", "1", "g")}),
        json!({"time": 25, "apply": node("n3", "4")}),
        json!({"time": 25, "apply": relabelled(sigs_group("g", 2))}),
    ];
    // PostFilter runs with preemption on.
    let mut options = options(Mode::Timed, 10);
    options.simulation.preemption = true;
    let (seen, summary) = run(&docs, &events, &options);
    let at = |pod: &str, t: f64| {
        lines(&seen, pod)
            .into_iter()
            .find(|(time, _)| *time == t)
            .map(|(_, w)| w.to_string())
            .unwrap_or_default()
    };
    assert!(
        at("default/g-3", 5.0).contains("podGroup default/g failed recently"),
        "g-3 at 5 s: {seen:?}"
    );
    for pod in ["default/g-1", "default/g-2"] {
        assert_eq!(at(pod, 5.0), "", "{pod} at 5 s: {seen:?}");
    }
    for pod in ["default/g-1", "default/g-2", "default/g-3"] {
        assert!(at(pod, 25.0).starts_with('n'), "{pod} at 25 s: {seen:?}");
    }
    assert_eq!((summary.scheduled, summary.pending), (3, 0));
}

#[test]
fn an_elastic_quota_changed_by_the_trace_retries_the_pods_it_turned_down() {
    // Namespace team may use 1 cpu; its 2-cpu pod is turned down at PreFilter. At
    // 10 s the trace raises the quota to 4: the change moves the pod (as `run` does
    // on the quota's watch event), and it is placed then, not at the flush.
    let only = |name: &str| json!({"enabled": [{"name": name}], "disabled": [{"name": "*"}]});
    let config = json!({"apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {
            "multiPoint": {"disabled": [{"name": "*"}]},
            "queueSort": only("PrioritySort"),
            "preFilter": only("CapacityScheduling"),
            "filter": only("NodeResourcesFit"),
            "reserve": only("CapacityScheduling"),
            "bind": only("DefaultBinder")}}]});
    let quota = |cpu: &str| {
        json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": "q", "namespace": "team"},
            "spec": {"min": {"cpu": cpu}, "max": {"cpu": cpu}}})
    };
    let mut pod = sigs_pod("p", "2", "none");
    pod["metadata"] = json!({"name": "p", "namespace": "team"});
    let docs = [config, node("n1", "4"), quota("1"), pod];
    let events = [json!({"time": 10, "apply": quota("4")})];
    let (seen, summary) = run(&docs, &events, &options(Mode::Timed, 10));
    let l = lines(&seen, "team/p");
    assert_eq!(l.len(), 2, "{seen:?}");
    assert_eq!(l[1], (10.0, "n1"), "{seen:?}");
    assert_eq!((summary.scheduled, summary.pending), (1, 0));
}

#[test]
fn v1_35_a_later_pod_of_a_gang_waits_only_what_is_left_of_the_groups_deadline() {
    // a-1 waits on n1 from 0 s: the group's deadline is 300 s. a-2 fits once n2
    // joins at 100 s and waits the 200 s left; a-3 never fits. Both time out at
    // 300 s (SchedulingTimeout), not a-2 at 400 s.
    let docs = [
        node("n1", "2"),
        json!({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": "a", "namespace": "default"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 3}}}]}}),
        workload_pod("a-1", "2", "a"),
        workload_pod("a-2", "2", "a"),
        workload_pod("a-3", "3", "a"),
    ];
    let events = [json!({"time": 100, "apply": node("n2", "2")})];
    let (seen, summary) = run(&docs, &events, &v1_35_options(Mode::Timed));
    let first_timeout = |pod: &str| {
        lines(&seen, pod)
            .into_iter()
            .find(|(_, w)| w.contains("timeout"))
            .map(|(t, w)| (t, w.to_string()))
    };
    assert_eq!(
        first_timeout("default/a-1"),
        Some((
            300.0,
            "rejected due to timeout after waiting 5m0s at plugin GangScheduling".into()
        )),
        "{seen:?}"
    );
    assert_eq!(
        first_timeout("default/a-2"),
        Some((
            300.0,
            "rejected due to timeout after waiting 3m20s at plugin GangScheduling".into()
        )),
        "{seen:?}"
    );
    assert_eq!(summary.scheduled, 0);
}

#[test]
fn v1_35_a_pod_added_to_another_gang_does_not_retry_a_timed_out_gang() {
    // a-1 waits on n1 from 0 s for a-2, which fits nowhere; at 300 s GangScheduling's
    // deadline turns a-1 down. At 310 s a pod of another Workload comes: the event
    // matches GangScheduling's Pod/Add, but its hint (isSchedulableAfterPodAdded)
    // says it is not a-1's gang, so a-1 stays until podMaxInUnschedulablePodsDuration
    // (5 min, at the queue's 30-second flush: 630 s) retries it, and only then waits
    // and times out again (930 s). Moved by the pod at 310 s, it would time out at 610.
    let workload = |name: &str| {
        json!({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]}})
    };
    let docs = [
        node("n1", "2"),
        workload("a"),
        workload_pod("a-1", "1", "a"),
        workload_pod("a-2", "4", "a"),
    ];
    let events = [
        json!({"time": 310, "apply": workload_pod("b-1", "1", "b")}),
        json!({"time": 1500, "cordon": "n1"}),
    ];
    let (seen, _) = run(&docs, &events, &v1_35_options(Mode::Timed));
    let timeout = "rejected due to timeout after waiting 5m0s at plugin GangScheduling";
    let a1 = lines(&seen, "default/a-1");
    assert_eq!(a1[0], (300.0, timeout), "{seen:?}");
    assert_eq!(
        a1[1],
        (930.0, timeout),
        "a-1 is not retried at 310 s: {seen:?}"
    );
}

#[test]
fn a_group_waiting_for_its_preemption_keeps_the_nodes_of_the_pods_that_fit() {
    // v1.36: on n1 (4 cpu) `low` holds 3. The gang p (two 1-cpu pods, priority 1000)
    // is attempted first: p-1 fits, p-2 preempts `low`, and the group waits for the
    // preemption with both pods nominated to n1 (submitPodGroupAlgorithmResult). `x`
    // (3 cpu, priority 500) comes next: the nominated pods hold 2 of n1's 4 free cpu
    // against lower priorities, so x does not fit, and the gang lands on n1.
    let with_priority = |mut pod: Value, priority: i32| {
        pod["spec"]["priority"] = json!(priority);
        pod
    };
    let mut low = with_priority(gang_pod("low", "3", "none"), 0);
    low["spec"] = json!({"nodeName": "n1", "priority": 0,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}]});
    let mut x = with_priority(gang_pod("x", "3", "none"), 500);
    x["spec"].as_object_mut().unwrap().remove("schedulingGroup");
    let docs = [
        node("n1", "4"),
        low,
        gang_group("p", 2),
        with_priority(gang_pod("p-1", "1", "p"), 1000),
        with_priority(gang_pod("p-2", "1", "p"), 1000),
        x,
    ];
    let mut options = gang_options(Mode::Timed);
    options.simulation.preemption = true;
    let (seen, summary) = run(&docs, &[], &options);
    let last = |pod: &str| lines(&seen, pod).last().map(|(_, w)| w.to_string());
    assert_eq!(last("default/p-1").as_deref(), Some("n1"), "{seen:?}");
    assert_eq!(last("default/p-2").as_deref(), Some("n1"), "{seen:?}");
    assert_ne!(last("default/x").as_deref(), Some("n1"), "{seen:?}");
    assert_eq!(summary.scheduled, 2, "{seen:?}");
}

/// A node in rack `rack`.
fn rack_node(name: &str, cpu: &str, rack: &str) -> Value {
    let mut n = node(name, cpu);
    n["metadata"]["labels"]["rack"] = json!(rack);
    n
}

/// With `TopologyAwareWorkloadScheduling`, a PodGroup applied by the trace is placed
/// in one rack (the fuller one: NodeResourcesFit's placement score is MostAllocated),
/// and a pod that joins the group later is held to that rack, as kube-scheduler's
/// TopologyPlacementGenerator keeps a group with scheduled pods in their domain. The
/// plugin reads the PodGroups the trace applies from the live objects.
#[test]
fn a_pod_group_with_a_topology_constraint_stays_in_its_rack() {
    let busy = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "busy", "namespace": "default"},
        "spec": {"nodeName": "a1", "containers": [{"name": "c", "image": "i",
            "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}]}});
    let docs = [rack_node("a1", "8", "ra"), rack_node("b1", "8", "rb"), busy];
    let mut group = gang_group("g", 2);
    group["spec"]["schedulingConstraints"] = json!({"topology": [{"key": "rack"}]});
    let events = [
        json!({"time": 0, "apply": gang_pod("g-1", "1", "g")}),
        json!({"time": 0, "apply": gang_pod("g-2", "1", "g")}),
        json!({"time": 1, "apply": group}),
        json!({"time": 5, "apply": gang_pod("g-3", "1", "g")}),
        // Fits only rb's empty node; the group is held to ra.
        json!({"time": 6, "apply": gang_pod("g-4", "5", "g")}),
    ];
    let mut options = options(Mode::Timed, 30);
    options.simulation.preemption = true;
    options.simulation.features = Features::with_gates(
        KubernetesVersion::V1_36,
        ["GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"],
    )
    .unwrap();
    let (seen, _) = run(&docs, &events, &options);
    for pod in ["default/g-1", "default/g-2"] {
        assert!(lines(&seen, pod).contains(&(1.0, "a1")), "{seen:?}");
    }
    assert_eq!(lines(&seen, "default/g-3"), [(5.0, "a1")]);
    assert_eq!(
        lines(&seen, "default/g-4")[0],
        (
            6.0,
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to placement-based pod group scheduling limitation"
        )
    );
}
