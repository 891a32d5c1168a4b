//! Replays by behaviour: the queue's timing in simulated time (backoff, the events a
//! rejecting plugin registered, the 5-minute flush), run times, drains, preemption, the
//! settled mode, and the check that refuses a bad trace before anything is applied.

use kubesched_replay::{
    Eviction, Mode, Record, ReplayOptions, Summary, TraceReader, check, replay,
};
use kubesched_sim::PodOutcome;
use kubesched_sim::scenario::{self, Scenario, Source};
use serde_json::{Value, json};

fn node(name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}})
}

fn pod(name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}})
}

fn bound(name: &str, cpu: &str, node: &str) -> Value {
    let mut p = pod(name, cpu);
    p["spec"]["nodeName"] = json!(node);
    p
}

fn scenario(docs: &[Value]) -> Scenario {
    let text: String = docs.iter().map(|d| format!("---\n{d}\n")).collect();
    scenario::load(&[Source {
        name: "cluster.yaml".into(),
        text,
    }])
    .unwrap()
}

fn trace(events: &[Value]) -> String {
    let mut text = "{\"kubeschedTrace\": 1}\n".to_string();
    for e in events {
        text.push_str(&format!("{e}\n"));
    }
    text
}

/// (time, pod, node or message) of every attempt, and the evictions as (time, pod,
/// "evicted"), and the summary.
fn run(
    docs: &[Value],
    events: &[Value],
    options: &ReplayOptions,
) -> (Vec<(f64, String, String)>, Summary) {
    let s = scenario(docs);
    let text = trace(events);
    let mut checked = TraceReader::new("t.jsonl", text.as_bytes());
    check(&s, &mut checked).unwrap();
    let mut seen = Vec::new();
    let summary = replay(
        &s,
        TraceReader::new("t.jsonl", text.as_bytes()),
        options,
        &kubesched_plugins::in_tree_registry(),
        |record| {
            match record {
                Record::Attempt { time, attempt } => {
                    let attempt = *attempt;
                    let what = match attempt.outcome {
                        PodOutcome::Scheduled(n) => n,
                        PodOutcome::Unschedulable(m) => m,
                        PodOutcome::Nominated { node, .. } => format!("nominated {node}"),
                        other => format!("{other:?}"),
                    };
                    seen.push((time, attempt.pod, what));
                }
                Record::Evicted {
                    time, pod, reason, ..
                } => {
                    let why = match reason {
                        Eviction::Preempted(by) => format!("preempted by {by}"),
                        Eviction::Drained => "drained".into(),
                        Eviction::NodeDeleted => "node deleted".into(),
                    };
                    seen.push((time, pod, why));
                }
                Record::State { .. } | Record::Final { .. } => {}
            }
            Ok::<(), std::convert::Infallible>(())
        },
    )
    .unwrap();
    (seen, summary)
}

fn timed() -> ReplayOptions {
    ReplayOptions::default()
}

fn at(seen: &[(f64, String, String)]) -> Vec<(f64, &str)> {
    seen.iter().map(|(t, p, _)| (*t, p.as_str())).collect()
}

#[test]
fn a_node_that_comes_retries_the_pod_after_its_backoff() {
    // The pod fails at 0 (no node); the node at 0.25 moves it to backoff, which ends 1 s
    // after the failure.
    let (seen, summary) = run(
        &[],
        &[
            json!({"time": 0, "apply": pod("p", "1")}),
            json!({"time": 0.25, "apply": node("n1", "2")}),
        ],
        &timed(),
    );
    assert_eq!(at(&seen), [(0.0, "default/p"), (1.0, "default/p")]);
    assert_eq!(seen[0].2, "no nodes available to schedule pods");
    assert_eq!(seen[1].2, "n1");
    assert_eq!(summary.waited.unwrap().max, 1.0);
}

#[test]
fn an_event_the_rejecting_plugin_did_not_register_leaves_the_pod_until_the_flush() {
    // Insufficient cpu: an annotation on the node helps nothing, so the pod waits for the
    // 5-minute flush, which runs every 30 s: at 330 s, not at 20 s.
    let mut annotated = node("n1", "2");
    annotated["metadata"]["annotations"] = json!({"team": "a"});
    let (seen, summary) = run(
        &[node("n1", "2"), bound("big", "2", "n1")],
        &[
            json!({"time": 0, "apply": pod("p", "1")}),
            json!({"time": 20, "apply": annotated}),
        ],
        &timed(),
    );
    assert_eq!(at(&seen), [(0.0, "default/p"), (330.0, "default/p")]);
    assert_eq!(summary.pending, 1);
    assert_eq!(summary.scheduled, 0);
}

#[test]
fn a_node_too_small_for_the_pod_does_not_retry_it() {
    // Insufficient cpu at 0 s. The 2-cpu node at 5 s matches NodeResourcesFit's Node/Add,
    // but its hint (isSchedulableAfterNodeChange) sees the 4-cpu pod would not fit it
    // empty: no attempt (without the hint, one at 5 s that fails again). The 8-cpu
    // node at 6 s retries it, its 1-s backoff long over.
    let (seen, _) = run(
        &[node("n1", "2")],
        &[
            json!({"time": 0, "apply": pod("p", "4")}),
            json!({"time": 5, "apply": node("n2", "2")}),
            json!({"time": 6, "apply": node("n3", "8")}),
        ],
        &timed(),
    );
    assert_eq!(
        at(&seen),
        [(0.0, "default/p"), (6.0, "default/p")],
        "{seen:?}"
    );
    assert_eq!(seen[1].2, "n3");
}

#[test]
fn a_pod_that_finishes_frees_its_node_for_the_next() {
    let mut job = pod("job", "2");
    job["metadata"]["annotations"] = json!({"kubesched.io/duration": "1m"});
    let (seen, summary) = run(
        &[node("n1", "2")],
        &[
            json!({"time": 0, "apply": job}),
            json!({"time": 10, "apply": pod("next", "2")}),
        ],
        &timed(),
    );
    assert_eq!(
        at(&seen),
        [
            (0.0, "default/job"),
            (10.0, "default/next"),
            (60.0, "default/next")
        ]
    );
    assert_eq!(seen[2].2, "n1");
    assert_eq!(
        (summary.finished, summary.scheduled, summary.pending),
        (1, 2, 0)
    );
    assert_eq!(summary.waited.unwrap().max, 50.0);
    // The cpu was fully requested from 0 to the end (60 s): job, then next.
    assert_eq!(summary.allocation["cpu"].mean, 1.0);
}

#[test]
fn a_drain_evicts_and_cordons() {
    let (seen, _) = run(
        &[node("a", "2"), node("b", "2"), bound("x", "1", "a")],
        &[
            json!({"time": 5, "drain": "a"}),
            json!({"time": 6, "apply": pod("y", "1")}),
        ],
        &timed(),
    );
    assert_eq!(seen[0], (5.0, "default/x".into(), "drained".into()));
    assert_eq!(seen[1], (6.0, "default/y".into(), "b".into()));
}

#[test]
fn a_node_deleted_takes_its_pods_and_the_rest_keep_their_names() {
    // b (8 cpu) is the emptiest, then c (4), then a (2).
    let (seen, summary) = run(
        &[node("a", "2"), node("b", "8"), node("c", "4")],
        &[
            json!({"time": 0, "apply": pod("x", "1")}),
            json!({"time": 5, "delete": {"kind": "Node", "name": "b"}}),
            json!({"time": 6, "apply": pod("y", "1")}),
            json!({"time": 7, "delete": {"kind": "Node", "name": "a"}}),
            json!({"time": 8, "apply": pod("z", "1")}),
            json!({"time": 9, "apply": node("b", "16")}),
            json!({"time": 10, "apply": pod("w", "1")}),
        ],
        &timed(),
    );
    let placed: Vec<(f64, &str, &str)> = seen
        .iter()
        .map(|(t, p, n)| (*t, p.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        placed,
        [
            (0.0, "default/x", "b"),
            (5.0, "default/x", "node deleted"),
            (6.0, "default/y", "c"),
            (8.0, "default/z", "c"),
            (10.0, "default/w", "b"),
        ]
    );
    // From 8 s to 9 s c is the only node, with y and z: 2 of its 4 cpu.
    assert_eq!(summary.allocation["cpu"].peak, 0.5);
}

#[test]
fn preemption_evicts_at_once_and_the_idle_queue_takes_the_preemptor_again() {
    // The victim's deletion moves the preemptor to backoff; with nothing else to
    // schedule, SchedulerPopFromBackoffQ (on by default) takes it at once. With the
    // gate off it waits its 1-second backoff out.
    for (gates, bound_at) in [(vec![], 3.0), (vec!["SchedulerPopFromBackoffQ=false"], 4.0)] {
        let mut high = pod("high", "2");
        high["spec"]["priority"] = json!(1000);
        let options = ReplayOptions {
            simulation: kubesched_sim::SimulationOptions {
                preemption: true,
                features: kubesched_framework::Features::with_gates(
                    kubesched_framework::KubernetesVersion::V1_36,
                    gates.clone(),
                )
                .unwrap(),
                ..Default::default()
            },
            ..ReplayOptions::default()
        };
        let (seen, summary) = run(
            &[node("n1", "2"), bound("low", "2", "n1")],
            &[json!({"time": 3, "apply": high})],
            &options,
        );
        assert_eq!(seen[0], (3.0, "default/high".into(), "nominated n1".into()));
        assert_eq!(
            seen[1],
            (
                3.0,
                "default/low".into(),
                "preempted by default/high".into()
            )
        );
        assert_eq!(
            seen[2],
            (bound_at, "default/high".into(), "n1".into()),
            "{gates:?}"
        );
        assert_eq!((summary.preemptions, summary.evicted), (1, 1));
    }
}

#[test]
fn the_settled_mode_tries_every_pending_pod_again_until_nothing_fits() {
    let options = ReplayOptions {
        mode: Mode::Settle,
        ..ReplayOptions::default()
    };
    let (seen, summary) = run(
        &[node("n1", "2")],
        &[
            json!({"time": 0, "apply": pod("a", "2")}),
            json!({"time": 0, "apply": pod("b", "2")}),
            json!({"time": 7, "apply": node("n2", "2")}),
        ],
        &options,
    );
    // At 0: a fits, b does not (one pass places a, a second pass places nothing); at 7
    // the new node takes b.
    assert_eq!(
        at(&seen),
        [
            (0.0, "default/a"),
            (0.0, "default/b"),
            (0.0, "default/b"),
            (7.0, "default/b")
        ]
    );
    assert_eq!(seen[3].2, "n2");
    assert_eq!(summary.scheduled, 2);
}

#[test]
fn the_timeline_holds_pending_pods_and_allocation_at_every_step() {
    let options = ReplayOptions {
        occupancy_at: vec![5.0, 0.0, 100.0],
        tail: std::time::Duration::ZERO,
        ..ReplayOptions::default()
    };
    // n1 has 2 cpu. a (1 cpu) runs 0..10; b (2 cpu) arrives at 3 and waits for a.
    let mut a = pod("a", "1");
    a["metadata"]["annotations"] = json!({"kubesched.io/duration": "10s"});
    let (_, summary) = run(
        &[node("n1", "2")],
        &[
            json!({"time": 0, "apply": a}),
            json!({"time": 3, "apply": pod("b", "2")}),
        ],
        &options,
    );
    let t = &summary.timeline;
    assert_eq!(t.step, 1.0);
    let at = |time: f64| t.points.iter().find(|p| p.time == time).unwrap();
    assert_eq!((at(0.0).pending, at(0.0).allocation["cpu"]), (0, 0.5));
    assert_eq!((at(2.0).pending, at(3.0).pending), (0, 1));
    assert_eq!(at(9.0).allocation["cpu"], 0.5);
    // At 10 a finishes and b is bound at once: the point shows the state after.
    assert_eq!((at(10.0).pending, at(10.0).allocation["cpu"]), (0, 1.0));
    assert_eq!(t.points.last().unwrap().time, summary.end);
    // Each instant asked for, in time order, with the nodes as they stood.
    let occupancy: Vec<(f64, usize, i128)> = summary
        .occupancy
        .iter()
        .map(|o| (o.time, o.nodes[0].pods, o.nodes[0].load.resources["cpu"].1))
        .collect();
    // 100 s is after the end (10 s: nothing happens after b is bound): the end.
    assert_eq!(occupancy, [(0.0, 1, 1000), (5.0, 1, 1000), (10.0, 1, 2000)]);
}

#[test]
fn a_long_timeline_keeps_at_most_its_maximum_of_points() {
    let events: Vec<Value> = (0..50)
        .map(|i| json!({"time": i * 1000, "apply": pod(&format!("p{i}"), "10m")}))
        .collect();
    let (_, summary) = run(&[node("n1", "2")], &events, &ReplayOptions::default());
    let t = &summary.timeline;
    assert!(
        t.points.len() <= kubesched_replay::Timeline::MAX_POINTS,
        "{}",
        t.points.len()
    );
    assert!(t.points.len() >= kubesched_replay::Timeline::MAX_POINTS / 2 - 1);
    assert!(t.points.windows(2).all(|w| w[0].time < w[1].time));
    assert_eq!(t.points.last().unwrap().time, summary.end);
    assert_eq!(t.points.last().unwrap().allocation["cpu"], 0.25);
}

fn check_error(docs: &[Value], events: &[Value]) -> String {
    let text = trace(events);
    check(
        &scenario(docs),
        &mut TraceReader::new("t.jsonl", text.as_bytes()),
    )
    .unwrap_err()
    .to_string()
}

#[test]
fn a_bad_trace_is_refused_before_anything_is_applied() {
    assert_eq!(
        check_error(
            &[],
            &[json!({"time": 1, "delete": {"kind": "Pod", "name": "ghost"}})]
        ),
        "t.jsonl: line 2: delete: Pod ghost: no such object"
    );
    assert_eq!(
        check_error(&[node("n1", "1")], &[json!({"time": 1, "drain": "n2"})]),
        "t.jsonl: line 2: drain: n2: no such node"
    );
    assert_eq!(
        check_error(&[], &[json!({"time": 1, "finish": {"name": "ghost"}})]),
        "t.jsonl: line 2: finish: default/ghost: no such pod"
    );
    let mut typo = pod("p", "1");
    typo["spec"]["schdulerName"] = json!("x");
    let e = check_error(&[], &[json!({"time": 1, "apply": typo})]);
    assert!(
        e.starts_with("t.jsonl: line 2: apply: t.jsonl line 2: ")
            && e.contains("did you mean schedulerName?"),
        "{e}"
    );
    // A pod deleted once can be deleted no more; one created again can.
    let events = [
        json!({"time": 1, "apply": pod("p", "1")}),
        json!({"time": 2, "delete": {"kind": "Pod", "namespace": "default", "name": "p"}}),
        json!({"time": 3, "delete": {"kind": "Pod", "namespace": "default", "name": "p"}}),
    ];
    assert_eq!(
        check_error(&[], &events),
        "t.jsonl: line 4: delete: Pod default/p: no such object"
    );
}

#[test]
fn a_recorded_binding_is_another_schedulers_decision_and_is_ignored() {
    // `big` fits nowhere here; the recording shows it bound (by the recorded cluster's
    // scheduler) at 5 s: the replay keeps it pending. `p` was bound by the replay to
    // n1; the recording's binding to n2 does not move it.
    let mut big_bound = bound("big", "8", "n2");
    big_bound["metadata"]["labels"] = json!({"recorded": "yes"});
    let (seen, summary) = run(
        &[node("n1", "2"), node("n2", "2")],
        &[
            json!({"time": 0, "apply": pod("big", "8")}),
            json!({"time": 1, "apply": pod("p", "1")}),
            json!({"time": 5, "apply": big_bound}),
            json!({"time": 6, "apply": bound("p", "1", "elsewhere")}),
        ],
        &timed(),
    );
    assert_eq!(summary.pending, 1, "{seen:?}");
    assert_eq!(summary.scheduled, 1);
    assert!(
        seen.iter()
            .all(|(_, pod, what)| pod != "default/big" || what.contains("Insufficient cpu")),
        "{seen:?}"
    );
}

/// Nodes deleted, added and cordoned between pods of a few shapes: what exact
/// incremental scheduling kept follows the nodes as their places move, and every
/// attempt is what the full pass gives, with per-node detail and with decisions only.
#[test]
fn kept_verdicts_follow_nodes_deleted_and_added() {
    // Zones, which pods may prefer, give NodeAffinity's scaled scores a highest one
    // that moves as nodes come and go.
    const ZONES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
    let zoned = |name: &str, cpu: &str, zone: u64| {
        let mut n = node(name, cpu);
        n["metadata"]["labels"]["zone"] = json!(ZONES[zone as usize]);
        n
    };
    let nodes: Vec<Value> = (0..24)
        .map(|i| zoned(&format!("n{i:02}"), ["2", "4", "8"][i % 3], (i % 6) as u64))
        .collect();
    let mut events = Vec::new();
    let mut next_node = 24;
    let mut live: Vec<String> = (0..24).map(|i| format!("n{i:02}")).collect();
    let mut seed: u64 = 7;
    let mut draw = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for i in 0..300 {
        let time = f64::from(i);
        let cpu = ["250m", "500m", "1"][draw(3) as usize];
        let mut p = pod(&format!("p{i:03}"), cpu);
        if draw(2) == 0 {
            let term = |zone: u64, weight: u64| {
                json!({"weight": weight, "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": [ZONES[zone as usize]]}]}})
            };
            let (first, second) = (draw(6), draw(6));
            p["spec"]["affinity"] = json!({"nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution":
                    [term(first, 80), term(second, 30)]}});
        }
        events.push(json!({"time": time, "apply": p, "duration": 5 + draw(40)}));
        match draw(6) {
            0 if live.len() > 8 => {
                let gone = live.remove(draw(live.len() as u64) as usize);
                events.push(json!({"time": time + 0.5, "delete": {"kind": "Node", "name": gone}}));
            }
            1 => {
                let name = format!("n{next_node:02}");
                next_node += 1;
                let n = zoned(&name, "4", draw(6));
                events.push(json!({"time": time + 0.5, "apply": n}));
                live.push(name);
            }
            2 => {
                let name = &live[draw(live.len() as u64) as usize];
                events.push(json!({"time": time + 0.5, "cordon": name}));
            }
            _ => {}
        }
    }
    for detail in [kubesched_sim::Detail::All, kubesched_sim::Detail::None] {
        let options = |incremental: bool| ReplayOptions {
            simulation: kubesched_sim::SimulationOptions {
                incremental,
                detail,
                ..Default::default()
            },
            ..ReplayOptions::default()
        };
        let (kept, summary) = run(&nodes, &events, &options(true));
        let (full, _) = run(&nodes, &events, &options(false));
        assert_eq!(kept, full, "{detail:?}");
        assert!(summary.scheduled > 250, "{summary:?}");
    }
}

#[test]
fn a_kept_ranking_forgets_the_highest_score_of_a_node_deleted() {
    // NodeAffinity scales its scores to the highest one among the feasible nodes.
    // `x` alone is in the zone the pods prefer most: once it is deleted, the zone
    // they prefer next scales to 100, which outweighs the `z` nodes' emptiness; a
    // ranking that still counted `x`'s score would scale it to 37 and pick `z0`.
    let zoned = |name: &str, zone: &str| {
        let mut n = node(name, "8");
        n["metadata"]["labels"]["zone"] = json!(zone);
        n
    };
    // Enough nodes that the cycle after the deletion finds them changed one by one.
    let mut docs: Vec<Value> = (0..8).map(|i| zoned(&format!("z{i}"), "c")).collect();
    docs.extend([zoned("x", "a"), zoned("y", "b"), {
        let mut load = bound("load", "7", "y");
        load["spec"]["containers"][0]["resources"]["requests"]["memory"] = json!("7Gi");
        load
    }]);
    let preferring = |name: &str| {
        let mut p = pod(name, "100m");
        let term = |zone: &str, weight: u64| {
            json!({"weight": weight, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [zone]}]}})
        };
        p["spec"]["affinity"] = json!({"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [term("a", 80), term("b", 30)]}});
        p
    };
    let events = vec![
        json!({"time": 0, "apply": preferring("p0")}),
        json!({"time": 1, "apply": preferring("p1")}),
        json!({"time": 2, "delete": {"kind": "Node", "name": "x"}}),
        json!({"time": 3, "apply": preferring("p2")}),
    ];
    let options = |incremental: bool| ReplayOptions {
        simulation: kubesched_sim::SimulationOptions {
            incremental,
            detail: kubesched_sim::Detail::None,
            ..Default::default()
        },
        ..ReplayOptions::default()
    };
    let (kept, _) = run(&docs, &events, &options(true));
    let (full, _) = run(&docs, &events, &options(false));
    assert_eq!(kept, full);
    assert_eq!(kept.last().map(|k| k.2.as_str()), Some("y"), "{kept:?}");
}
