//! NodeAffinity's unit tests: Filter, PreFilter and Score against kube-scheduler's
//! cases, the enforced `addedAffinity`, and name and value validation.

use super::selector::{is_label_value, is_qualified_name};
use super::*;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

fn pod(spec: serde_json::Value) -> PodInfo {
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap();
    PodInfo::new(Arc::new(pod)).unwrap()
}

fn node(name: &str, labels: serde_json::Value) -> NodeInfo {
    let node: Node =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    NodeInfo::new(Arc::new(node)).unwrap()
}

fn required(terms: serde_json::Value) -> serde_json::Value {
    json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}})
}

fn expr(key: &str, op: &str, values: &[&str]) -> serde_json::Value {
    json!({"key": key, "operator": op, "values": values})
}

/// Runs PreFilter then Filter, as the framework does; `None` for success.
fn run_filter(pl: &NodeAffinity, pod: &PodInfo, node: &NodeInfo) -> Option<String> {
    let mut state = CycleState::new();
    let (_, s) = pl.pre_filter(&mut state, pod, &Snapshot::default());
    if s.is_skip() {
        return None;
    }
    if !s.is_success() {
        return Some(s.message());
    }
    let s = pl.filter(&state, pod, node);
    assert!(s.is_success() || s.code() == Code::UnschedulableAndUnresolvable);
    (!s.is_success()).then(|| s.message())
}

// Named after kube-scheduler's TestNodeAffinity cases.
#[test]
fn filter_matches_kube_scheduler() {
    let foo_bar = json!({"foo": "bar"});
    let cases: Vec<(&str, serde_json::Value, serde_json::Value, bool)> = vec![
        ("no selector", json!({"containers": []}), json!({}), true),
        (
            "missing labels",
            json!({"containers": [], "nodeSelector": {"foo": "bar"}}),
            json!({}),
            false,
        ),
        (
            "same labels",
            json!({"containers": [], "nodeSelector": {"foo": "bar"}}),
            foo_bar.clone(),
            true,
        ),
        (
            "node labels are superset",
            json!({"containers": [], "nodeSelector": {"foo": "bar"}}),
            json!({"foo": "bar", "baz": "blah"}),
            true,
        ),
        (
            "node labels are subset",
            json!({"containers": [], "nodeSelector": {"foo": "bar", "baz": "blah"}}),
            foo_bar.clone(),
            false,
        ),
        (
            "Pod with matchExpressions using In operator that matches the existing node",
            required(json!([{"matchExpressions": [expr("foo", "In", &["bar", "value2"])]}])),
            foo_bar.clone(),
            true,
        ),
        (
            "Pod with matchExpressions using Gt operator that matches the existing node",
            required(json!([{"matchExpressions": [expr("kernel-version", "Gt", &["0204"])]}])),
            json!({"kernel-version": "0206"}),
            true,
        ),
        (
            "Pod with matchExpressions using Gt operator on a non-numeric label",
            required(json!([{"matchExpressions": [expr("kernel-version", "Gt", &["0204"])]}])),
            json!({"kernel-version": "6.1"}),
            false,
        ),
        (
            "Pod with matchExpressions using Lt operator",
            required(json!([{"matchExpressions": [expr("gen", "Lt", &["5"])]}])),
            json!({"gen": "4"}),
            true,
        ),
        (
            "Pod with matchExpressions using Gt with a non-integer value never matches",
            required(json!([{"matchExpressions": [expr("gen", "Gt", &["a"])]}])),
            json!({"gen": "4"}),
            false,
        ),
        (
            "Pod with matchExpressions using NotIn operator that matches the existing node",
            required(json!([{"matchExpressions": [expr("mem-type", "NotIn", &["DDR", "DDR2"])]}])),
            json!({"mem-type": "DDR3"}),
            true,
        ),
        (
            "NotIn matches a node without the label",
            required(json!([{"matchExpressions": [expr("mem-type", "NotIn", &["DDR"])]}])),
            json!({}),
            true,
        ),
        (
            "Pod with matchExpressions using Exists operator that matches the existing node",
            required(json!([{"matchExpressions": [expr("GPU", "Exists", &[])]}])),
            json!({"GPU": "NVIDIA-GRID-K1"}),
            true,
        ),
        (
            "DoesNotExist matches a node without the label",
            required(json!([{"matchExpressions": [expr("GPU", "DoesNotExist", &[])]}])),
            json!({"foo": "bar"}),
            true,
        ),
        (
            "Pod with affinity that don't match node's labels won't schedule onto the node",
            required(json!([{"matchExpressions": [expr("foo", "NotIn", &["value1", "bar"])]}])),
            foo_bar.clone(),
            false,
        ),
        (
            "Pod with an empty []NodeSelectorTerm in affinity, can't schedule onto the node",
            required(json!([])),
            foo_bar.clone(),
            false,
        ),
        (
            "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
            required(json!([{"matchExpressions": []}])),
            foo_bar.clone(),
            false,
        ),
        (
            "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
            required(
                json!([{"matchExpressions": [expr("GPU", "Exists", &[]), expr("GPU", "NotIn", &["AMD", "INTER"])]}]),
            ),
            json!({"GPU": "AMD"}),
            false,
        ),
        (
            "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
            required(json!([
                {"matchExpressions": [expr("foo", "In", &["bar", "value2"])]},
                {"matchExpressions": [expr("diffkey", "In", &["wrong", "value2"])]}
            ])),
            foo_bar.clone(),
            true,
        ),
        (
            "an invalid term does not match but a valid one still can",
            required(json!([
                {"matchExpressions": [expr("foo", "Exists", &["x"])]},
                {"matchExpressions": [expr("foo", "In", &["bar"])]}
            ])),
            foo_bar.clone(),
            true,
        ),
        (
            "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
            json!({"containers": [], "nodeSelector": {"foo": "bar"}, "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [expr("foo", "In", &["bar"])]}]}}}}),
            json!({"foo": "barrrrrr"}),
            false,
        ),
        (
            "Pod with matchFields using In operator that matches the existing node",
            required(json!([{"matchFields": [expr("metadata.name", "In", &["node1"])]}])),
            json!({}),
            true,
        ),
        (
            "Pod with matchFields using In operator that does not match the existing node",
            required(json!([{"matchFields": [expr("metadata.name", "In", &["node2"])]}])),
            json!({}),
            false,
        ),
        (
            "Pod with two terms: matchFields does not match, but matchExpressions matches",
            required(json!([
                {"matchFields": [expr("metadata.name", "In", &["node2"])]},
                {"matchExpressions": [expr("foo", "In", &["bar"])]}
            ])),
            foo_bar.clone(),
            true,
        ),
        (
            "Pod with one term: both matchFields and matchExpressions match",
            required(json!([{
                "matchFields": [expr("metadata.name", "In", &["node1"])],
                "matchExpressions": [expr("foo", "In", &["bar"])]
            }])),
            foo_bar.clone(),
            true,
        ),
        (
            "matchFields In with two values does not parse, so it never matches",
            required(json!([{"matchFields": [expr("metadata.name", "In", &["node1", "node2"])]}])),
            json!({}),
            false,
        ),
    ];
    let pl = NodeAffinity::default();
    for (name, spec, labels, want) in cases {
        let got = run_filter(&pl, &pod(spec), &node("node1", labels));
        match (want, got) {
            (true, None) => {}
            (false, Some(m)) => assert_eq!(m, ERR_REASON_POD, "{name}"),
            (w, g) => panic!("{name}: want fit {w}, got {g:?}"),
        }
    }
}

#[test]
fn pre_filter_skips_and_narrows() {
    let pl = NodeAffinity::default();
    let snapshot = Snapshot::default();
    let run = |spec| {
        let mut state = CycleState::new();
        let (r, s) = pl.pre_filter(&mut state, &pod(spec), &snapshot);
        (r, s)
    };
    let (_, s) = run(json!({"containers": []}));
    assert!(s.is_skip());
    let (r, s) = run(json!({"containers": [], "nodeSelector": {}}));
    assert!(s.is_success() && r.is_none());
    let (r, s) = run(required(json!([
        {"matchFields": [expr("metadata.name", "In", &["n1", "n2"]), expr("metadata.name", "In", &["n2", "n3"])]},
        {"matchFields": [expr("metadata.name", "In", &["n4"])]}
    ])));
    assert!(s.is_success());
    assert_eq!(r, Some(PreFilterResult::only(["n2", "n4"])));
    let (r, s) = run(required(json!([
        {"matchFields": [expr("metadata.name", "In", &["n1"])]},
        {"matchExpressions": [expr("foo", "Exists", &[])]}
    ])));
    assert!(s.is_success() && r.is_none());
    let (r, s) = run(required(json!([
        {"matchFields": [expr("metadata.name", "In", &["n1"]), expr("metadata.name", "In", &["n2"])]}
    ])));
    assert!(r.is_none());
    assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(s.message(), ERR_REASON_CONFLICT);
}

fn added(v: serde_json::Value) -> NodeAffinity {
    NodeAffinity::new(serde_json::from_value(json!({ "addedAffinity": v })).unwrap()).unwrap()
}

#[test]
fn added_affinity_is_enforced_first() {
    let pl = added(
        json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [expr("zone", "In", &["foo"])]}]}}),
    );
    let p = pod(json!({"containers": []}));
    assert_eq!(
        run_filter(&pl, &p, &node("n", json!({"zone": "foo"}))),
        None
    );
    assert_eq!(
        run_filter(&pl, &p, &node("n", json!({"zone": "bar"}))).as_deref(),
        Some(ERR_REASON_ENFORCED)
    );
    let p = pod(json!({"containers": [], "nodeSelector": {"foo": "bar"}}));
    assert_eq!(
        run_filter(&pl, &p, &node("n", json!({"zone": "foo"}))).as_deref(),
        Some(ERR_REASON_POD)
    );
}

fn scores(pl: &NodeAffinity, p: &PodInfo, nodes: &[NodeInfo]) -> Option<Vec<i64>> {
    let mut state = CycleState::new();
    let refs: Vec<&NodeInfo> = nodes.iter().collect();
    if pl
        .pre_score(&mut state, p, &refs, &Snapshot::default())
        .is_skip()
    {
        return None;
    }
    let mut s: Vec<NodeScore> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeScore {
            node_index: i,
            score: pl.score(&state, p, n).unwrap(),
        })
        .collect();
    assert!(pl.normalize_score(&state, p, &mut s).is_success());
    Some(s.into_iter().map(|s| s.score).collect())
}

// kube-scheduler's TestNodeAffinityPriority.
#[test]
fn score_sums_weights_and_normalizes() {
    let pref = json!({"containers": [], "affinity": {"nodeAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", &["bar"])]}},
        {"weight": 4, "preference": {"matchExpressions": [expr("key", "In", &["value"])]}},
        {"weight": 5, "preference": {"matchExpressions": [
            expr("foo", "In", &["bar"]), expr("key", "In", &["value"]), expr("az", "In", &["az1"])]}},
        {"weight": 0, "preference": {"matchExpressions": [expr("az", "Exists", &[])]}}
    ]}}});
    let nodes = [
        node("n1", json!({"foo": "bar"})),
        node("n2", json!({"key": "value"})),
        node("n3", json!({"foo": "bar", "key": "value", "az": "az1"})),
        node("n4", json!({"az": "az2"})),
    ];
    let pl = NodeAffinity::default();
    // raw 2, 4, 11, 0
    assert_eq!(scores(&pl, &pod(pref), &nodes), Some(vec![18, 36, 100, 0]));
    assert_eq!(scores(&pl, &pod(json!({"containers": []})), &nodes), None);
    let empty = json!({"containers": [], "affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": []}}});
    assert_eq!(scores(&pl, &pod(empty), &nodes), Some(vec![0, 0, 0, 0]));
    let pl = added(json!({"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [expr("az", "Exists", &[])]}}]}));
    assert_eq!(
        scores(&pl, &pod(json!({"containers": []})), &nodes),
        Some(vec![0, 0, 100, 100])
    );
}

#[test]
fn helper_ignores_added_affinity() {
    let p = pod(required(
        json!([{"matchExpressions": [expr("foo", "In", &["bar"])]}]),
    ));
    assert!(pod_matches_node_selector_and_affinity(
        &p,
        &node("n", json!({"foo": "bar"}))
    ));
    assert!(!pod_matches_node_selector_and_affinity(
        &p,
        &node("n", json!({}))
    ));
    assert!(pod_matches_node_selector_and_affinity(
        &pod(json!({"containers": []})),
        &node("n", json!({}))
    ));
}

#[test]
fn names_and_values_are_validated() {
    assert!(is_qualified_name("kubernetes.io/hostname"));
    assert!(is_qualified_name("GPU"));
    assert!(!is_qualified_name(""));
    assert!(!is_qualified_name("/a"));
    assert!(!is_qualified_name("a/b/c"));
    assert!(!is_qualified_name("Upper.io/a"));
    assert!(is_label_value(""));
    assert!(is_label_value("0204"));
    assert!(!is_label_value("-5"));
    assert!(!is_label_value(&"a".repeat(64)));
}

#[test]
fn a_node_event_helps_only_when_the_node_comes_to_match_the_pod() {
    use kubesched_framework::events::{ActionType, EventResource};
    use kubesched_framework::{ClusterEvent, EventObjects};
    let p = pod(json!({"containers": [], "nodeSelector": {"disk": "ssd"}}));
    let plugin = NodeAffinity::default();
    let labelled = |disk: &str| node("n", json!({"disk": disk})).node_arc().clone();
    let hint = |plugin: &NodeAffinity, old: Option<&str>, new: &str| {
        let event = match old {
            None => ClusterEvent::NODE_ADD,
            Some(_) => ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL),
        };
        let objects = EventObjects::node_change(old.map(labelled), labelled(new));
        plugin.queueing_hint(&p, &event, &objects)
    };
    assert_eq!(hint(&plugin, None, "ssd"), QueueingHint::Queue);
    assert_eq!(hint(&plugin, None, "hdd"), QueueingHint::QueueSkip);
    assert_eq!(hint(&plugin, Some("hdd"), "ssd"), QueueingHint::Queue);
    // It matched before: the pod was not turned down for this node's labels.
    assert_eq!(hint(&plugin, Some("ssd"), "ssd"), QueueingHint::QueueSkip);
    // The profile's addedAffinity is asked first.
    let enforced: kubesched_config::args::NodeAffinityArgs = serde_json::from_value(json!({
        "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr("disk", "In", &["nvme"])]}]}}
    }))
    .unwrap();
    let enforced = NodeAffinity::new(enforced).unwrap();
    assert_eq!(hint(&enforced, None, "ssd"), QueueingHint::QueueSkip);
}
