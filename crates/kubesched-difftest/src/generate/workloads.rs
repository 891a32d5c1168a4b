//! The workload objects of a generated scenario: Services, ReplicaSets, StatefulSets and
//! ReplicationControllers (their selectors feed PodTopologySpread's system default
//! constraints) and PodDisruptionBudgets (preemption's victim order and
//! `minAvailable`/`maxUnavailable` budgets), with empty selectors, selectors that match
//! nothing and namespaces of their own.

use serde_json::{Value, json};

use super::{APPS, NAMESPACES};
use crate::rng::Rng;

fn label_selector(r: &mut Rng, app: &str) -> Value {
    match r.below(10) {
        0 => json!({}),
        1 => {
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": [app, *r.pick(APPS)]}]})
        }
        2 => json!({"matchLabels": {"app": app, "version": r.pick(&["v1", "v2"])}}),
        _ => json!({"matchLabels": {"app": app}}),
    }
}

/// Services, controllers and budgets, in file order.
pub(super) fn workloads(r: &mut Rng) -> Vec<Value> {
    let mut docs = Vec::new();
    for i in 0..r.range(0, 2) {
        if !r.chance(45) {
            continue;
        }
        let app = *r.pick(APPS);
        let ns = *r.pick(NAMESPACES);
        // A Service's selector is a plain map; an empty one selects nothing.
        let selector = if r.chance(8) {
            json!({})
        } else {
            json!({"app": app})
        };
        docs.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc-{i}"), "namespace": ns},
            "spec": {"selector": selector, "ports": [{"port": 80}]}
        }));
    }
    for (i, kind) in ["ReplicaSet", "StatefulSet", "ReplicationController"]
        .iter()
        .enumerate()
    {
        if !r.chance(if i == 0 { 30 } else { 10 }) {
            continue;
        }
        let app = *r.pick(APPS);
        let ns = *r.pick(NAMESPACES);
        let name = format!("{}-{app}", kind.to_lowercase());
        let doc = if *kind == "ReplicationController" {
            json!({
                "apiVersion": "v1", "kind": kind,
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": 3, "selector": {"app": app},
                         "template": {"metadata": {"labels": {"app": app}},
                                      "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}
            })
        } else {
            let mut selector = label_selector(r, app);
            if selector.as_object().is_some_and(|o| o.is_empty()) {
                // apps/v1 requires a non-empty selector that matches the template.
                selector = json!({"matchLabels": {"app": app}});
            }
            let mut template_labels = json!({"app": app});
            if let Some(v) = selector["matchLabels"]["version"].as_str() {
                template_labels["version"] = json!(v);
            }
            let mut spec = json!({
                "replicas": 3, "selector": selector,
                "template": {"metadata": {"labels": template_labels},
                             "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}
            });
            if *kind == "StatefulSet" {
                spec["serviceName"] = json!(format!("svc-{app}"));
            }
            json!({"apiVersion": "apps/v1", "kind": kind,
                   "metadata": {"name": name, "namespace": ns}, "spec": spec})
        };
        docs.push(doc);
    }
    for i in 0..r.range(0, 2) {
        if !r.chance(40) {
            continue;
        }
        let app = *r.pick(APPS);
        let mut spec = if r.chance(50) {
            json!({"minAvailable": r.range(0, 2)})
        } else {
            json!({"maxUnavailable": r.range(0, 1)})
        };
        spec["selector"] = label_selector(r, app);
        docs.push(json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": format!("pdb-{i}"), "namespace": if r.chance(80) { "default" } else { "team" }},
            "spec": spec,
            "status": {"disruptionsAllowed": r.range(0, 2), "currentHealthy": 1,
                       "desiredHealthy": 1, "expectedPods": 1}
        }));
    }
    docs
}
