//! InterPodAffinity's unit tests: Filter and Score against kube-scheduler's cases,
//! namespace selectors, AddPod/RemovePod and NormalizeScore.

use super::filtering::PreFilterState;
use super::scoring::normalize_min_max;
use super::*;
use k8s_openapi::api::core::v1::{Node, Pod};
use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, NodeScore, PreFilterExtensions, PreFilterPlugin,
    PreScorePlugin, ScoreExtensions, ScorePlugin,
};
use serde_json::json;

/// A Filter case: name, incoming pod, existing pods, expected result per node.
type FilterCase = (
    &'static str,
    PodInfo,
    Vec<PodInfo>,
    Vec<Option<(Code, String)>>,
);
/// A Score case: name, args, incoming pod, existing pods, expected scores (None: Skip).
type ScoreCase = (
    &'static str,
    InterPodAffinityArgs,
    PodInfo,
    Vec<PodInfo>,
    Option<Vec<i64>>,
);

fn node(name: &str, labels: serde_json::Value) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        }))
        .unwrap(),
    )
}

/// A pod `ns/name` with `labels`, optionally bound to `node`, with `affinity`.
fn pod(
    ns: &str,
    name: &str,
    labels: serde_json::Value,
    node: Option<&str>,
    affinity: serde_json::Value,
) -> PodInfo {
    let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    if !affinity.is_null() {
        spec["affinity"] = affinity;
    }
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec
    }))
    .unwrap();
    PodInfo::new(Arc::new(p)).unwrap()
}

fn term(selector: serde_json::Value, key: &str) -> serde_json::Value {
    json!({"labelSelector": selector, "topologyKey": key})
}

fn zone_nodes() -> Vec<Arc<Node>> {
    vec![
        node("n1", json!({"zone": "a", "host": "n1"})),
        node("n2", json!({"zone": "a", "host": "n2"})),
        node("n3", json!({"zone": "b", "host": "n3"})),
        node("n4", json!({"host": "n4"})),
    ]
}

fn snapshot(nodes: Vec<Arc<Node>>, pods: Vec<PodInfo>) -> Snapshot {
    Snapshot::new(nodes, pods.into_iter().map(Arc::new))
        .unwrap()
        .0
}

/// Runs PreFilter and Filter over every node: `None` for a pass, or the reason.
fn run_filter(
    plugin: &InterPodAffinity,
    incoming: &PodInfo,
    snap: &Snapshot,
) -> Vec<Option<(Code, String)>> {
    let mut state = CycleState::new();
    let (_, status) = plugin.pre_filter(&mut state, incoming, snap);
    if status.is_skip() {
        return snap.nodes().iter().map(|_| None).collect();
    }
    assert!(status.is_success(), "{status}");
    snap.nodes()
        .iter()
        .map(|n| {
            let s = plugin.filter(&state, incoming, n);
            (!s.is_success()).then(|| (s.code(), s.message()))
        })
        .collect()
}

/// Runs PreScore, Score and NormalizeScore over every node: `None` on Skip.
fn run_score(plugin: &InterPodAffinity, incoming: &PodInfo, snap: &Snapshot) -> Option<Vec<i64>> {
    let mut state = CycleState::new();
    let nodes: Vec<&NodeInfo> = snap.nodes().iter().collect();
    let status = plugin.pre_score(&mut state, incoming, &nodes, snap);
    if status.is_skip() {
        return None;
    }
    assert!(status.is_success(), "{status}");
    let mut scores: Vec<NodeScore> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeScore {
            node_index: i,
            score: plugin.score(&state, incoming, n).unwrap(),
        })
        .collect();
    assert!(
        plugin
            .normalize_score(&state, incoming, &mut scores)
            .is_success()
    );
    Some(scores.into_iter().map(|s| s.score).collect())
}

fn affinity_fail() -> Option<(Code, String)> {
    Some((
        Code::UnschedulableAndUnresolvable,
        ERR_REASON_AFFINITY_RULES_NOT_MATCH.into(),
    ))
}
fn anti_fail() -> Option<(Code, String)> {
    Some((
        Code::Unschedulable,
        ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH.into(),
    ))
}
fn existing_fail() -> Option<(Code, String)> {
    Some((
        Code::Unschedulable,
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH.into(),
    ))
}

#[test]
fn filter_cases() {
    let sel_web = json!({"matchLabels": {"app": "web"}});
    let cases: Vec<FilterCase> = vec![
        (
            "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
            pod("default", "p", json!({}), None, serde_json::Value::Null),
            vec![],
            vec![None, None, None, None],
        ),
        (
            "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
            pod(
                "default",
                "p",
                json!({}),
                None,
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
            ),
            vec![pod(
                "default",
                "w",
                json!({"app": "web"}),
                Some("n1"),
                serde_json::Value::Null,
            )],
            vec![None, None, affinity_fail(), affinity_fail()],
        ),
        (
            "existing pod in another namespace does not satisfy affinity",
            pod(
                "default",
                "p",
                json!({}),
                None,
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
            ),
            vec![pod(
                "other",
                "w",
                json!({"app": "web"}),
                Some("n1"),
                serde_json::Value::Null,
            )],
            vec![
                affinity_fail(),
                affinity_fail(),
                affinity_fail(),
                affinity_fail(),
            ],
        ),
        (
            "first pod of a self-affine group may go wherever the topology key exists",
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
            ),
            vec![],
            vec![None, None, None, affinity_fail()],
        ),
        (
            "anti-affinity against an existing pod in the same zone",
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
            ),
            vec![pod(
                "default",
                "w",
                json!({"app": "web"}),
                Some("n2"),
                serde_json::Value::Null,
            )],
            vec![anti_fail(), anti_fail(), None, None],
        ),
        (
            "existing pod's anti-affinity rejects the incoming pod",
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                serde_json::Value::Null,
            ),
            vec![pod(
                "default",
                "db",
                json!({"app": "db"}),
                Some("n3"),
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "host")]}}),
            )],
            vec![None, None, existing_fail(), None],
        ),
        (
            "affinity failure wins over anti-affinity failure",
            pod(
                "default",
                "p",
                json!({}),
                None,
                json!({
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(json!({"matchLabels": {"app": "db"}}), "zone")]},
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}
                }),
            ),
            vec![
                pod(
                    "default",
                    "w",
                    json!({"app": "web"}),
                    Some("n1"),
                    serde_json::Value::Null,
                ),
                pod(
                    "default",
                    "d",
                    json!({"app": "db"}),
                    Some("n1"),
                    serde_json::Value::Null,
                ),
            ],
            vec![anti_fail(), anti_fail(), affinity_fail(), affinity_fail()],
        ),
        (
            "empty namespaceSelector matches every namespace",
            pod(
                "tools",
                "p",
                json!({}),
                None,
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": sel_web.clone(), "topologyKey": "zone", "namespaceSelector": {}}
                ]}}),
            ),
            vec![pod(
                "monitoring",
                "w",
                json!({"app": "web"}),
                Some("n3"),
                serde_json::Value::Null,
            )],
            vec![affinity_fail(), affinity_fail(), None, affinity_fail()],
        ),
    ];
    let plugin = InterPodAffinity::default();
    for (name, incoming, existing, want) in cases {
        let snap = snapshot(zone_nodes(), existing);
        assert_eq!(run_filter(&plugin, &incoming, &snap), want, "{name}");
    }
}

#[test]
fn pre_filter_skips_without_terms() {
    let snap = snapshot(zone_nodes(), vec![]);
    let mut state = CycleState::new();
    let p = pod("default", "p", json!({}), None, serde_json::Value::Null);
    let (_, s) = InterPodAffinity::default().pre_filter(&mut state, &p, &snap);
    assert!(s.is_skip());
}

#[test]
fn bad_selector_fails_pre_filter() {
    let snap = snapshot(zone_nodes(), vec![]);
    let mut state = CycleState::new();
    let p = pod(
        "default",
        "p",
        json!({}),
        None,
        json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            term(json!({"matchExpressions": [{"key": "a", "operator": "Like"}]}), "zone")
        ]}}),
    );
    let (_, s) = InterPodAffinity::default().pre_filter(&mut state, &p, &snap);
    assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
    assert!(
        s.message()
            .starts_with("parsing pod: requiredAffinityTerms: "),
        "{}",
        s.message()
    );
}

#[test]
fn namespace_selector_uses_namespace_objects() {
    let mut snap = snapshot(
        zone_nodes(),
        vec![
            pod(
                "prod",
                "w",
                json!({"app": "web"}),
                Some("n1"),
                serde_json::Value::Null,
            ),
            pod(
                "dev",
                "w",
                json!({"app": "web"}),
                Some("n3"),
                serde_json::Value::Null,
            ),
        ],
    );
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}}))
            .unwrap();
    snap.set_objects(Arc::new(kubesched_framework::ClusterObjects {
        namespaces: vec![Arc::new(ns)],
        ..Default::default()
    }));
    let incoming = pod(
        "default",
        "p",
        json!({}),
        None,
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone", "namespaceSelector": {"matchLabels": {"env": "prod"}}}
        ]}}),
    );
    let got = run_filter(&InterPodAffinity::default(), &incoming, &snap);
    assert_eq!(got, vec![anti_fail(), anti_fail(), None, None]);
}

#[test]
fn add_and_remove_pod_update_counts() {
    let plugin = InterPodAffinity::default();
    let incoming = pod(
        "default",
        "p",
        json!({"app": "web"}),
        None,
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(json!({"matchLabels": {"app": "web"}}), "zone")]}}),
    );
    let victim = pod(
        "default",
        "w",
        json!({"app": "web"}),
        Some("n1"),
        serde_json::Value::Null,
    );
    let snap = snapshot(zone_nodes(), vec![victim.clone()]);
    let mut state = CycleState::new();
    let (_, s) = plugin.pre_filter(&mut state, &incoming, &snap);
    assert!(s.is_success());
    let n1 = &snap.nodes()[0];
    assert!(!plugin.filter(&state, &incoming, n1).is_success());
    assert!(
        plugin
            .remove_pod(&mut state, &incoming, &victim, n1)
            .is_success()
    );
    assert!(plugin.filter(&state, &incoming, n1).is_success());
    assert!(
        state
            .read::<PreFilterState>()
            .unwrap()
            .anti_affinity_counts
            .is_empty()
    );
    assert!(
        plugin
            .add_pod(&mut state, &incoming, &victim, n1)
            .is_success()
    );
    assert!(!plugin.filter(&state, &incoming, n1).is_success());
    // An added pod with anti-affinity against the incoming pod counts too.
    let hater = pod(
        "default",
        "h",
        json!({}),
        Some("n3"),
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(json!({"matchLabels": {"app": "web"}}), "host")]}}),
    );
    let n3 = &snap.nodes()[2];
    assert!(plugin.filter(&state, &incoming, n3).is_success());
    assert!(
        plugin
            .add_pod(&mut state, &incoming, &hater, n3)
            .is_success()
    );
    assert_eq!(
        plugin.filter(&state, &incoming, n3).message(),
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
    );
}

#[test]
fn score_cases() {
    let sel_web = json!({"matchLabels": {"app": "web"}});
    let preferred = |w: i32, key: &str| json!({"weight": w, "podAffinityTerm": term(json!({"matchLabels": {"app": "web"}}), key)});
    let cases: Vec<ScoreCase> = vec![
        (
            "no affinity anywhere: skip",
            InterPodAffinityArgs::default(),
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                serde_json::Value::Null,
            ),
            vec![pod(
                "default",
                "w",
                json!({"app": "web"}),
                Some("n1"),
                serde_json::Value::Null,
            )],
            None,
        ),
        (
            "preferred affinity of the incoming pod",
            InterPodAffinityArgs::default(),
            pod(
                "default",
                "p",
                json!({}),
                None,
                json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "zone")]}}),
            ),
            vec![pod(
                "default",
                "w",
                json!({"app": "web"}),
                Some("n3"),
                serde_json::Value::Null,
            )],
            Some(vec![0, 0, 100, 0]),
        ),
        (
            "preferred anti-affinity of the incoming pod: raw scores are negative",
            InterPodAffinityArgs::default(),
            pod(
                "default",
                "p",
                json!({}),
                None,
                json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "zone")]}}),
            ),
            vec![pod(
                "default",
                "w",
                json!({"app": "web"}),
                Some("n3"),
                serde_json::Value::Null,
            )],
            Some(vec![100, 100, 0, 100]),
        ),
        (
            "existing pod's required affinity with hard weight",
            InterPodAffinityArgs::default(),
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                serde_json::Value::Null,
            ),
            vec![pod(
                "default",
                "s",
                json!({}),
                Some("n1"),
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
            )],
            Some(vec![100, 100, 0, 0]),
        ),
        (
            "hard weight 0 ignores existing required affinity: skip",
            InterPodAffinityArgs {
                hard_pod_affinity_weight: 0,
                ..Default::default()
            },
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                serde_json::Value::Null,
            ),
            vec![pod(
                "default",
                "s",
                json!({}),
                Some("n1"),
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
            )],
            None,
        ),
        (
            "existing pods' preferred terms both ways",
            InterPodAffinityArgs::default(),
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                serde_json::Value::Null,
            ),
            vec![
                pod(
                    "default",
                    "likes",
                    json!({}),
                    Some("n1"),
                    json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(40, "zone")]}}),
                ),
                pod(
                    "default",
                    "hates",
                    json!({}),
                    Some("n3"),
                    json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(60, "zone")]}}),
                ),
            ],
            // raw: 40, 40, -60, 0 → (s+60)/100*100
            Some(vec![100, 100, 0, 60]),
        ),
        (
            "ignorePreferredTermsOfExistingPods without incoming preferred terms: skip",
            InterPodAffinityArgs {
                ignore_preferred_terms_of_existing_pods: true,
                ..Default::default()
            },
            pod(
                "default",
                "p",
                json!({"app": "web"}),
                None,
                serde_json::Value::Null,
            ),
            vec![pod(
                "default",
                "likes",
                json!({}),
                Some("n1"),
                json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(40, "zone")]}}),
            )],
            None,
        ),
        (
            "matching terms that sum to zero still score (all 0)",
            InterPodAffinityArgs::default(),
            pod(
                "default",
                "p",
                json!({}),
                None,
                json!({
                    "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "host")]},
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "host")]}
                }),
            ),
            vec![pod(
                "default",
                "w",
                json!({"app": "web"}),
                Some("n1"),
                serde_json::Value::Null,
            )],
            Some(vec![0, 0, 0, 0]),
        ),
    ];
    for (name, args, incoming, existing, want) in cases {
        let plugin = InterPodAffinity::new(args);
        let snap = snapshot(zone_nodes(), existing);
        assert_eq!(run_score(&plugin, &incoming, &snap), want, "{name}");
    }
}

#[test]
fn normalize_truncates() {
    let mut s: Vec<NodeScore> = [-3, 0, 4]
        .iter()
        .enumerate()
        .map(|(i, &score)| NodeScore {
            node_index: i,
            score,
        })
        .collect();
    normalize_min_max(&mut s);
    assert_eq!(
        s.iter().map(|s| s.score).collect::<Vec<_>>(),
        vec![0, 42, 100]
    );
}
