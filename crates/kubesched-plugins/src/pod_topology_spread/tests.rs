//! PodTopologySpread's unit tests: Filter and Score against kube-scheduler's cases,
//! AddPod/RemovePod, critical paths, and the default constraints and selectors.

use super::filtering::CriticalPaths;
use super::*;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeScore, PreFilterExtensions, PreFilterPlugin,
    PreScorePlugin, ScoreExtensions, ScorePlugin, Snapshot,
};
use serde_json::{Value, json};

fn node(name: &str, labels: Value) -> Arc<Node> {
    node_with_taints(name, labels, json!([]))
}

fn node_with_taints(name: &str, labels: Value, taints: Value) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .unwrap(),
    )
}

/// A pod `ns/name` with `labels`, bound to `node` when given, with extra `spec` fields.
fn pod(ns: &str, name: &str, labels: Value, node: Option<&str>, spec: Value) -> Arc<PodInfo> {
    let mut s = json!({"containers": [{"name": "c", "image": "i"}]});
    if let Some(n) = node {
        s["nodeName"] = json!(n);
    }
    if let Value::Object(extra) = spec {
        for (k, v) in extra {
            s[k] = v;
        }
    }
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": s
    }))
    .unwrap();
    Arc::new(PodInfo::new(Arc::new(p)).unwrap())
}

fn constraint(max_skew: i32, key: &str, action: &str, selector: Value) -> Value {
    json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action, "labelSelector": selector})
}

fn foo_exists() -> Value {
    json!({"matchExpressions": [{"key": "foo", "operator": "Exists"}]})
}

/// The incoming pod: labelled foo, with these constraints.
fn incoming(constraints: Value, extra: Value) -> Arc<PodInfo> {
    let mut spec = json!({"topologySpreadConstraints": constraints});
    if let Value::Object(e) = extra {
        for (k, v) in e {
            spec[k] = v;
        }
    }
    pod("default", "p", json!({"foo": ""}), None, spec)
}

/// `n` pods labelled foo in `ns` on `node`.
fn foo_pods(ns: &str, node: &str, n: usize) -> Vec<Arc<PodInfo>> {
    (0..n)
        .map(|i| {
            pod(
                ns,
                &format!("p-{node}-{i}"),
                json!({"foo": ""}),
                Some(node),
                json!({}),
            )
        })
        .collect()
}

fn zone_nodes() -> Vec<Arc<Node>> {
    vec![
        node("node-a", json!({"zone": "zone1", "node": "node-a"})),
        node("node-b", json!({"zone": "zone1", "node": "node-b"})),
        node("node-x", json!({"zone": "zone2", "node": "node-x"})),
        node("node-y", json!({"zone": "zone2", "node": "node-y"})),
    ]
}

fn snapshot(nodes: Vec<Arc<Node>>, pods: Vec<Arc<PodInfo>>) -> Snapshot {
    Snapshot::new(nodes, pods).unwrap().0
}

/// Runs PreFilter and Filter on every node: `None` for a pass, else (code, reason).
fn run_filter(
    pl: &PodTopologySpread,
    pod: &PodInfo,
    snap: &Snapshot,
) -> Vec<Option<(Code, String)>> {
    let mut state = CycleState::new();
    let (_, s) = pl.pre_filter(&mut state, pod, snap);
    assert!(s.is_success(), "{s}");
    snap.nodes()
        .iter()
        .map(|n| {
            let s = pl.filter(&state, pod, n);
            (!s.is_success()).then(|| (s.code(), s.message()))
        })
        .collect()
}

/// A Filter outcome: `None` for a pass, else (code, reason).
type Outcome = Option<(Code, String)>;
/// name, nodes, incoming pod, existing pods, expected outcome per node.
type FilterCase = (
    &'static str,
    Vec<Arc<Node>>,
    Arc<PodInfo>,
    Vec<Arc<PodInfo>>,
    Vec<Outcome>,
);
/// name, nodes, incoming pod, existing pods, feasible nodes, expected scores.
type ScoreCase = (
    &'static str,
    Vec<Arc<Node>>,
    Arc<PodInfo>,
    Vec<Arc<PodInfo>>,
    Vec<&'static str>,
    Option<Vec<i64>>,
);

fn pass() -> Option<(Code, String)> {
    None
}
fn skew() -> Option<(Code, String)> {
    Some((
        Code::Unschedulable,
        ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string(),
    ))
}
fn no_label() -> Option<(Code, String)> {
    Some((
        Code::UnschedulableAndUnresolvable,
        ERR_REASON_NODE_LABEL_NOT_MATCH.to_string(),
    ))
}

#[test]
fn single_constraint_filter() {
    let zone = |skew: i32| json!([constraint(skew, "zone", "DoNotSchedule", foo_exists())]);
    let host = |skew: i32| json!([constraint(skew, "node", "DoNotSchedule", foo_exists())]);
    let counts = |a, b, x, y| {
        [("node-a", a), ("node-b", b), ("node-x", x), ("node-y", y)]
            .into_iter()
            .flat_map(|(n, c)| foo_pods("default", n, c))
            .collect::<Vec<_>>()
    };
    let cases: Vec<FilterCase> = vec![
        (
            "no existing pods",
            zone_nodes(),
            incoming(zone(1), json!({})),
            vec![],
            vec![pass(); 4],
        ),
        (
            "no existing pods, incoming pod doesn't match itself",
            zone_nodes(),
            pod(
                "default",
                "p",
                json!({"bar": ""}),
                None,
                json!({"topologySpreadConstraints": zone(1)}),
            ),
            vec![],
            vec![pass(); 4],
        ),
        (
            "existing pods in a different namespace do not count",
            zone_nodes(),
            incoming(zone(1), json!({})),
            [foo_pods("ns1", "node-a", 2), foo_pods("ns2", "node-b", 1)].concat(),
            vec![pass(); 4],
        ),
        (
            "pods spread across zones as 3/3, all nodes fit",
            zone_nodes(),
            incoming(zone(1), json!({})),
            counts(2, 1, 1, 2),
            vec![pass(); 4],
        ),
        (
            "pods spread across zones as 3/4, only zone1 fits",
            zone_nodes(),
            incoming(zone(1), json!({})),
            counts(2, 1, 2, 2),
            vec![pass(), pass(), skew(), skew()],
        ),
        (
            "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            vec![
                node("node-a", json!({"zone": "zone1", "node": "node-a"})),
                node("node-b", json!({"zon": "zone1", "node": "node-b"})),
                node("node-x", json!({"zone": "zone2", "node": "node-x"})),
                node("node-y", json!({"zone": "zone2", "node": "node-y"})),
            ],
            incoming(zone(1), json!({})),
            counts(1, 1, 1, 1),
            vec![pass(), no_label(), skew(), skew()],
        ),
        (
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            zone_nodes(),
            incoming(host(1), json!({})),
            counts(2, 1, 0, 3),
            vec![skew(), skew(), pass(), skew()],
        ),
        (
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            zone_nodes(),
            incoming(host(2), json!({})),
            counts(2, 1, 0, 3),
            vec![skew(), pass(), pass(), skew()],
        ),
        (
            "terminating pods are not counted",
            zone_nodes(),
            incoming(zone(1), json!({})),
            {
                let mut p = (*foo_pods("default", "node-a", 1)[0].pod()).clone();
                p.metadata.deletion_timestamp =
                    Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        "2024-01-01T00:00:00Z".parse().unwrap(),
                    ));
                vec![Arc::new(PodInfo::new(Arc::new(p)).unwrap())]
            },
            vec![pass(); 4],
        ),
        (
            // v1.35 counts no pod for an empty selector, but the pod matches it itself.
            "empty selector counts no pods",
            zone_nodes(),
            incoming(
                json!([constraint(1, "node", "DoNotSchedule", json!({}))]),
                json!({}),
            ),
            counts(3, 0, 0, 0),
            vec![pass(); 4],
        ),
        (
            "pods spread across nodes as 2/2/1, the number of domains < minDomains, only the third node fits",
            zone_nodes()[..3].to_vec(),
            incoming(
                json!([{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": foo_exists(), "minDomains": 4}]),
                json!({}),
            ),
            counts(2, 2, 1, 0),
            vec![skew(), skew(), pass()],
        ),
        (
            "pods spread across nodes as 2/2/1, the number of domains >= minDomains, every node fits",
            zone_nodes()[..3].to_vec(),
            incoming(
                json!([{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": foo_exists(), "minDomains": 3}]),
                json!({}),
            ),
            counts(2, 2, 1, 0),
            vec![pass(); 3],
        ),
        (
            "NodeAffinityPolicy honored: only zone2 nodes are domains",
            zone_nodes(),
            incoming(zone(1), json!({"nodeSelector": {"zone": "zone2"}})),
            counts(0, 0, 1, 1),
            // zone1 is no domain: the only domain zone2 has 2, self 1, min 2.
            vec![pass(), pass(), pass(), pass()],
        ),
        (
            "NodeAffinityPolicy ignored: zone1 is a domain with 0 pods",
            zone_nodes(),
            incoming(
                json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": foo_exists(), "nodeAffinityPolicy": "Ignore"}]),
                json!({"nodeSelector": {"zone": "zone2"}}),
            ),
            counts(0, 0, 1, 1),
            vec![pass(), pass(), skew(), skew()],
        ),
        (
            "matchLabelKeys narrow the selector to the pod's value",
            zone_nodes(),
            pod(
                "default",
                "p",
                json!({"foo": "", "rev": "2"}),
                None,
                json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": foo_exists(),
                    "matchLabelKeys": ["rev"]}]}),
            ),
            // rev=1 pods do not count: zone1 0, zone2 0.
            [
                foo_pods("default", "node-a", 2),
                vec![pod(
                    "default",
                    "r2",
                    json!({"foo": "", "rev": "2"}),
                    Some("node-x"),
                    json!({}),
                )],
            ]
            .concat(),
            vec![pass(), pass(), skew(), skew()],
        ),
    ];
    let pl = PodTopologySpread::default();
    for (name, nodes, p, pods, want) in cases {
        let snap = snapshot(nodes, pods);
        assert_eq!(run_filter(&pl, &p, &snap), want, "{name}");
    }
}

#[test]
fn node_taints_policy() {
    let nodes = vec![
        node("a0", json!({"zone": "zone-a"})),
        node("b0", json!({"zone": "zone-b"})),
        node_with_taints(
            "c0",
            json!({"zone": "zone-c"}),
            json!([{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]),
        ),
    ];
    let pods = [foo_pods("default", "a0", 1), foo_pods("default", "b0", 1)].concat();
    let snap = snapshot(nodes, pods);
    let pl = PodTopologySpread::default();
    let honor = incoming(
        json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": foo_exists(), "nodeTaintsPolicy": "Honor"}]),
        json!({}),
    );
    // c0 is no domain; its own count (0) is then compared with the minimum (1) of
    // the others, so the spread check lets it through (TaintToleration rejects it).
    assert_eq!(run_filter(&pl, &honor, &snap), vec![pass(), pass(), pass()]);
    let ignore = incoming(
        json!([constraint(1, "zone", "DoNotSchedule", foo_exists())]),
        json!({}),
    );
    assert_eq!(
        run_filter(&pl, &ignore, &snap),
        vec![skew(), skew(), pass()]
    );
}

#[test]
fn pre_filter_skips_without_hard_constraints() {
    let pl = PodTopologySpread::default();
    let snap = snapshot(zone_nodes(), vec![]);
    for p in [
        pod("default", "p", json!({"foo": ""}), None, json!({})),
        incoming(
            json!([constraint(1, "zone", "ScheduleAnyway", foo_exists())]),
            json!({}),
        ),
    ] {
        let (_, s) = pl.pre_filter(&mut CycleState::new(), &p, &snap);
        assert!(s.is_skip());
    }
    let bad = incoming(
        json!([constraint(
            1,
            "zone",
            "DoNotSchedule",
            json!({"matchExpressions": [{"key": "foo", "operator": "Like"}]})
        )]),
        json!({}),
    );
    let (_, s) = pl.pre_filter(&mut CycleState::new(), &bad, &snap);
    assert!(s.is_error());
}

#[test]
fn add_and_remove_pod_update_counts() {
    let pl = PodTopologySpread::default();
    let p = incoming(
        json!([constraint(1, "zone", "DoNotSchedule", foo_exists())]),
        json!({}),
    );
    let pods = [
        foo_pods("default", "node-a", 1),
        foo_pods("default", "node-x", 2),
    ]
    .concat();
    let snap = snapshot(zone_nodes(), pods.clone());
    let mut state = CycleState::new();
    assert!(pl.pre_filter(&mut state, &p, &snap).1.is_success());
    let x = snap.get("node-x").unwrap();
    let a = snap.get("node-a").unwrap();
    assert!(!pl.filter(&state, &p, x).is_success());
    // Removing one zone2 pod makes zone2 fit (1 + 1 - 1 <= 1).
    let mut removed = state.clone();
    assert!(pl.remove_pod(&mut removed, &p, &pods[1], x).is_success());
    assert!(pl.filter(&removed, &p, x).is_success());
    // Removing the zone1 pod makes the minimum 0: zone2 is then 3 over it.
    let mut removed_a = state.clone();
    assert!(pl.remove_pod(&mut removed_a, &p, &pods[0], a).is_success());
    assert!(pl.filter(&removed_a, &p, a).is_success());
    assert!(!pl.filter(&removed_a, &p, x).is_success());
    // Adding one to zone1 evens it out; the original state is untouched.
    let mut added = state.clone();
    let extra = pod(
        "default",
        "new",
        json!({"foo": ""}),
        Some("node-a"),
        json!({}),
    );
    assert!(pl.add_pod(&mut added, &p, &extra, a).is_success());
    assert!(pl.filter(&added, &p, x).is_success());
    assert!(!pl.filter(&state, &p, x).is_success());
    // Pods of other namespaces are ignored.
    let mut other = state.clone();
    let foreign = pod(
        "other",
        "new",
        json!({"foo": ""}),
        Some("node-a"),
        json!({}),
    );
    assert!(pl.add_pod(&mut other, &p, &foreign, a).is_success());
    assert!(!pl.filter(&other, &p, x).is_success());
}

#[test]
fn critical_paths_track_the_two_smallest() {
    let mut p = CriticalPaths::new();
    for (v, n) in [("a", 3), ("b", 1), ("c", 2), ("d", 5)] {
        p.update(v, n);
    }
    assert_eq!(p.0[0], ("b".to_string(), 1));
    assert_eq!(p.0[1], ("c".to_string(), 2));
    p.update("b", 3);
    assert_eq!(p.0[0], ("c".to_string(), 2));
    p.update("d", 0);
    assert_eq!(p.0[0], ("d".to_string(), 0));
    assert_eq!(p.0[1], ("c".to_string(), 2));
}

/// Runs PreScore, Score and NormalizeScore over the nodes (all feasible), or `None`
/// when PreScore skips.
fn run_score(
    pl: &PodTopologySpread,
    pod: &PodInfo,
    snap: &Snapshot,
    feasible: &[&str],
) -> Option<Vec<i64>> {
    let mut state = CycleState::new();
    let nodes: Vec<&NodeInfo> = feasible.iter().map(|n| snap.get(n).unwrap()).collect();
    let s = pl.pre_score(&mut state, pod, &nodes, snap);
    if s.is_skip() {
        return None;
    }
    assert!(s.is_success(), "{s}");
    let mut scores: Vec<NodeScore> = nodes
        .iter()
        .map(|n| NodeScore {
            node_index: snap.index_of(n.name()).unwrap(),
            score: pl.score(&state, pod, n).unwrap(),
        })
        .collect();
    assert!(pl.normalize_score(&state, pod, &mut scores).is_success());
    Some(scores.into_iter().map(|s| s.score).collect())
}

#[test]
fn pod_topology_spread_score() {
    let soft_host = json!([constraint(1, "node", "ScheduleAnyway", foo_exists())]);
    let soft_zone = json!([constraint(1, "zone", "ScheduleAnyway", foo_exists())]);
    let all = ["node-a", "node-b", "node-x", "node-y"];
    let cases: Vec<ScoreCase> = vec![
        (
            "one constraint on node, no existing pods",
            zone_nodes(),
            incoming(soft_host.clone(), json!({})),
            vec![],
            all.to_vec(),
            Some(vec![100, 100, 100, 100]),
        ),
        (
            "one constraint on node, all nodes have the same number of matching pods",
            zone_nodes(),
            incoming(soft_host.clone(), json!({})),
            [
                foo_pods("default", "node-a", 1),
                foo_pods("default", "node-b", 1),
            ]
            .concat(),
            vec!["node-a", "node-b"],
            Some(vec![100, 100]),
        ),
        (
            // ln(4+2) = 1.79: raw 4, 2, 0, 0 -> 100*(4+0-s)/4.
            "one constraint on node, all 4 nodes are candidates",
            zone_nodes(),
            incoming(soft_host.clone(), json!({})),
            [
                foo_pods("default", "node-a", 2),
                foo_pods("default", "node-b", 1),
            ]
            .concat(),
            all.to_vec(),
            Some(vec![0, 50, 100, 100]),
        ),
        (
            // zone1 has 3 (node-b is not feasible but counts), zone2 1; ln(2+2) = 1.39:
            // raw round(4.16) = 4, round(1.39) = 1 -> 100*(5-s)/4.
            "one constraint on zone, pods on infeasible nodes count",
            zone_nodes(),
            incoming(soft_zone.clone(), json!({})),
            [
                foo_pods("default", "node-a", 1),
                foo_pods("default", "node-b", 2),
                foo_pods("default", "node-y", 1),
            ]
            .concat(),
            vec!["node-a", "node-x"],
            Some(vec![25, 100]),
        ),
        (
            "nodes missing the topology key are ignored and score 0",
            vec![
                node("node-a", json!({"zone": "zone1", "node": "node-a"})),
                node("node-b", json!({"node": "node-b"})),
                node("node-x", json!({"zone": "zone2", "node": "node-x"})),
            ],
            incoming(soft_zone.clone(), json!({})),
            foo_pods("default", "node-a", 1),
            vec!["node-a", "node-b", "node-x"],
            // ln(4) = 1.39: raw 1, -, 0 -> 100*(1+0-1)/1 = 0 and 100.
            Some(vec![0, 0, 100]),
        ),
        (
            "no soft constraints: skip",
            zone_nodes(),
            incoming(
                json!([constraint(1, "zone", "DoNotSchedule", foo_exists())]),
                json!({}),
            ),
            vec![],
            all.to_vec(),
            None,
        ),
        (
            "no constraints and no selecting workload: skip",
            zone_nodes(),
            pod("default", "p", json!({"foo": ""}), None, json!({})),
            vec![],
            all.to_vec(),
            None,
        ),
        (
            // maxSkew 3: raw = cnt * ln(6) + 2: 6, 4, 2, 2 -> 100*(8-s)/6.
            "maxSkew waters down the differences",
            zone_nodes(),
            incoming(
                json!([constraint(3, "node", "ScheduleAnyway", foo_exists())]),
                json!({}),
            ),
            [
                foo_pods("default", "node-a", 2),
                foo_pods("default", "node-b", 1),
            ]
            .concat(),
            all.to_vec(),
            Some(vec![33, 66, 100, 100]),
        ),
    ];
    let pl = PodTopologySpread::default();
    for (name, nodes, p, pods, feasible, want) in cases {
        let snap = snapshot(nodes, pods);
        assert_eq!(run_score(&pl, &p, &snap, &feasible), want, "{name}");
    }
}

fn service(ns: &str, selector: Value) -> Arc<Service> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "svc", "namespace": ns},
            "spec": {"selector": selector}
        }))
        .unwrap(),
    )
}

#[test]
fn system_default_constraints_apply_to_pods_selected_by_a_service() {
    let nodes = vec![
        node(
            "n1",
            json!({LABEL_HOSTNAME: "n1", LABEL_TOPOLOGY_ZONE: "z1"}),
        ),
        node(
            "n2",
            json!({LABEL_HOSTNAME: "n2", LABEL_TOPOLOGY_ZONE: "z2"}),
        ),
        // No zone: still scored on hostname under the system defaults.
        node("n3", json!({LABEL_HOSTNAME: "n3"})),
    ];
    let web = |name: &str, node: Option<&str>| {
        pod("default", name, json!({"app": "web"}), node, json!({}))
    };
    let mut snap = snapshot(
        nodes,
        vec![
            web("w1", Some("n1")),
            web("w2", Some("n1")),
            web("w3", Some("n2")),
        ],
    );
    let pl = PodTopologySpread::default();
    let p = web("new", None);
    // Without a Service the pod has no default constraint.
    assert_eq!(run_score(&pl, &p, &snap, &["n1", "n2", "n3"]), None);
    // A Service in another namespace does not select it.
    snap.set_objects(Arc::new(ClusterObjects {
        services: vec![service("other", json!({"app": "web"}))],
        ..Default::default()
    }));
    assert_eq!(run_score(&pl, &p, &snap, &["n1", "n2", "n3"]), None);
    snap.set_objects(Arc::new(ClusterObjects {
        services: vec![service("default", json!({"app": "web"}))],
        ..Default::default()
    }));
    // hostname: ln(3+2) = 1.61, maxSkew 3 -> cnt*1.61 + 2; zone: domains z1, z2 and
    // "" (n3) -> ln(5) = 1.61, maxSkew 5 -> cnt*1.61 + 4 for nodes with a zone.
    // n1: 2*1.61+2 + 2*1.61+4 = 12.44 -> 12; n2: 3.61 + 5.61 = 9.22 -> 9; n3: 2.
    // -> 100*(12+2-s)/12: 16, 41, 100.
    assert_eq!(
        run_score(&pl, &p, &snap, &["n1", "n2", "n3"]),
        Some(vec![16, 41, 100])
    );
    // Hard constraints: none among the system defaults.
    let (_, s) = pl.pre_filter(&mut CycleState::new(), &p, &snap);
    assert!(s.is_skip());
}

#[test]
fn list_defaulting_requires_every_key() {
    let args: PodTopologySpreadArgs = serde_json::from_value(json!({
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    }))
    .unwrap();
    let pl = PodTopologySpread::new(args);
    let mut snap = snapshot(
        vec![
            node("a", json!({"zone": "z1"})),
            node("b", json!({"zone": "z2"})),
            node("c", json!({})),
        ],
        vec![pod(
            "default",
            "w1",
            json!({"app": "web"}),
            Some("a"),
            json!({}),
        )],
    );
    snap.set_objects(Arc::new(ClusterObjects {
        services: vec![service("default", json!({"app": "web"}))],
        ..Default::default()
    }));
    let p = pod("default", "new", json!({"app": "web"}), None, json!({}));
    assert_eq!(run_filter(&pl, &p, &snap), vec![skew(), pass(), no_label()]);
}

#[test]
fn default_selector_from_controllers() {
    use k8s_openapi::api::apps::v1::ReplicaSet;
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "rs1", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web", "tier": "fe"}}}
    }))
    .unwrap();
    let objects = ClusterObjects {
        replica_sets: vec![Arc::new(rs)],
        ..Default::default()
    };
    let owned = |api: &str, kind: &str| {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web", "tier": "fe"},
                "ownerReferences": [{"apiVersion": api, "kind": kind, "name": "rs1", "uid": "u", "controller": true}]},
            "spec": {"containers": []}
        }))
        .unwrap();
        PodInfo::new(Arc::new(p)).unwrap()
    };
    let sel = default_selector(&owned("apps/v1", "ReplicaSet"), &objects);
    assert!(!sel.is_everything());
    assert!(sel.matches(&BTreeMap::from([
        ("app".into(), "web".into()),
        ("tier".into(), "fe".into())
    ])));
    assert!(!sel.matches(&BTreeMap::from([("app".into(), "web".into())])));
    assert!(default_selector(&owned("extensions/v1beta1", "ReplicaSet"), &objects).is_everything());
    assert!(default_selector(&owned("apps/v1", "StatefulSet"), &objects).is_everything());
    assert_eq!(parse_group_version("v1"), Some(("", "v1")));
    assert_eq!(parse_group_version("apps/v1"), Some(("apps", "v1")));
    assert_eq!(parse_group_version("a/b/c"), None);
}

#[test]
fn normalize_gives_100_when_every_score_is_0() {
    let pl = PodTopologySpread::default();
    let snap = snapshot(zone_nodes(), vec![]);
    let p = incoming(
        json!([constraint(1, "zone", "ScheduleAnyway", foo_exists())]),
        json!({}),
    );
    assert_eq!(
        run_score(&pl, &p, &snap, &["node-a", "node-x"]),
        Some(vec![100, 100])
    );
}
