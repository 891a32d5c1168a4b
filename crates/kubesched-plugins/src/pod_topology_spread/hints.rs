//! PodTopologySpread's queueing hints (kube-scheduler's `isSchedulableAfterPodChange`
//! and `isSchedulableAfterNodeChange`): which pod and node events may let a pod the
//! plugin turned down through.
//!
//! The hints read the pod's `DoNotSchedule` constraints. A pod without constraints of
//! its own takes the default ones, whose selector comes from the Services and
//! workloads that select it; a hint sees no such objects, so for a pod with default
//! `DoNotSchedule` constraints (a `List` of them in the args) every registered event
//! helps (kube-scheduler's answer when a hint cannot decide).

use std::collections::BTreeMap;

use kubesched_framework::events::{ClusterEvent, EventObjects, EventResource};
use kubesched_framework::{PodInfo, QueueingHint};

use super::{
    Constraint, DO_NOT_SCHEDULE, PodTopologySpread, filter_constraints, node_has_all_keys,
    pod_labels,
};

impl PodTopologySpread {
    /// The hint for `event` about `pod` (see the module doc).
    pub(super) fn hint(
        &self,
        pod: &PodInfo,
        event: &ClusterEvent,
        objects: &EventObjects,
    ) -> QueueingHint {
        let Some(constraints) = self.own_constraints(pod) else {
            return QueueingHint::Queue;
        };
        if event.resource == EventResource::Node {
            return node_hint(&constraints, objects);
        }
        pod_hint(pod, &constraints, objects)
    }

    /// The pod's `DoNotSchedule` constraints when the hint can know them: its own, or,
    /// when it has none, the default ones if none of them is `DoNotSchedule` (the
    /// system defaults are all `ScheduleAnyway`). `None` when they would take their
    /// selector from the cluster's objects, or do not compile.
    fn own_constraints(&self, pod: &PodInfo) -> Option<Vec<Constraint>> {
        let labels = pod_labels(pod);
        match pod.spec().topology_spread_constraints.as_deref() {
            Some(own) if !own.is_empty() => filter_constraints(own, labels, DO_NOT_SCHEDULE).ok(),
            _ => filter_constraints(&self.default_constraints, labels, DO_NOT_SCHEDULE)
                .ok()
                .filter(Vec::is_empty),
        }
    }
}

/// `involvedInTopologySpreading`: the pod itself, or a pod on a node in its namespace.
fn involved(incoming: &PodInfo, pod: &PodInfo) -> bool {
    incoming.uid() == pod.uid()
        || (incoming.node_name().is_some() && incoming.namespace() == pod.namespace())
}

/// `podLabelsMatchSpreadConstraints`: some constraint's selector matches `labels`.
fn matches_some(constraints: &[Constraint], labels: &BTreeMap<String, String>) -> bool {
    constraints.iter().any(|c| c.selector.matches(labels))
}

/// `isSchedulableAfterPodChange`: a pod added, updated or deleted helps only when it is
/// involved in the pod's spreading and its labels count for (or stopped counting for)
/// a constraint; the pod itself, when it gained a toleration and a constraint honours
/// taints.
fn pod_hint(pod: &PodInfo, constraints: &[Constraint], objects: &EventObjects) -> QueueingHint {
    let (original, modified) = (objects.old_pod(), objects.new_pod());
    if modified.is_some_and(|m| !involved(m, pod)) || original.is_some_and(|o| !involved(o, pod)) {
        return QueueingHint::QueueSkip;
    }
    match (original, modified) {
        (Some(original), Some(modified)) => {
            let tolerations = |p: &PodInfo| p.spec().tolerations.clone().unwrap_or_default();
            if modified.uid() == pod.uid()
                && tolerations(modified) != tolerations(original)
                && constraints.iter().any(|c| c.honor_node_taints)
            {
                return QueueingHint::Queue;
            }
            let (was, now) = (pod_labels(original), pod_labels(modified));
            if was == now {
                return QueueingHint::QueueSkip;
            }
            QueueingHint::queue_if(
                constraints
                    .iter()
                    .any(|c| c.selector.matches(was) != c.selector.matches(now)),
            )
        }
        (None, Some(added)) => QueueingHint::queue_if(matches_some(constraints, pod_labels(added))),
        (Some(deleted), None) => {
            QueueingHint::queue_if(matches_some(constraints, pod_labels(deleted)))
        }
        (None, None) => QueueingHint::Queue,
    }
}

/// `isSchedulableAfterNodeChange` (`nodeLabelsMatchSpreadConstraints` is
/// [`node_has_all_keys`]): a node added helps when it has every topology key;
/// an update when it gains or loses one, or, having them all, changes a key's value or
/// its taints. (A node deleted reaches here without the node, and helps.)
fn node_hint(constraints: &[Constraint], objects: &EventObjects) -> QueueingHint {
    let Some(modified) = objects.new_node() else {
        return QueueingHint::Queue;
    };
    let now = node_has_all_keys(modified, constraints);
    let Some(original) = objects.old_node() else {
        return QueueingHint::queue_if(now);
    };
    if node_has_all_keys(original, constraints) != now {
        return QueueingHint::Queue;
    }
    let key_changed = constraints
        .iter()
        .any(|c| original.label(&c.topology_key) != modified.label(&c.topology_key));
    QueueingHint::queue_if(now && (key_changed || original.taints() != modified.taints()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kubesched_framework::events::{
        ActionType, ClusterEvent, EventObject, EventObjects, EventResource,
    };
    use kubesched_framework::{NodeInfo, PodInfo, QueueingHint};
    use serde_json::{Value, json};

    use super::PodTopologySpread;

    /// A pod in `namespace` with `labels`, on `node` when given, spread over `zone`
    /// (`foo` exists, DoNotSchedule) when `spread`.
    fn pod(
        name: &str,
        namespace: &str,
        labels: Value,
        node: Option<&str>,
        spread: bool,
    ) -> Arc<PodInfo> {
        let mut pod = json!({
            "metadata": {"name": name, "namespace": namespace, "uid": name, "labels": labels},
            "spec": {"containers": [{"name": "c"}]},
        });
        if let Some(node) = node {
            pod["spec"]["nodeName"] = node.into();
        }
        if spread {
            pod["spec"]["topologySpreadConstraints"] = json!([{
                "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
            }]);
        }
        Arc::new(PodInfo::new(Arc::new(serde_json::from_value(pod).unwrap())).unwrap())
    }

    fn node(labels: Value, taints: Value) -> EventObject {
        let node = json!({"metadata": {"name": "n", "labels": labels}, "spec": {"taints": taints}});
        EventObject::Node(Arc::new(
            NodeInfo::new(Arc::new(serde_json::from_value(node).unwrap())).unwrap(),
        ))
    }

    fn hint(
        target: &PodInfo,
        event: ClusterEvent,
        old: Option<EventObject>,
        new: Option<EventObject>,
    ) -> QueueingHint {
        PodTopologySpread::default().hint(target, &event, &EventObjects { old, new })
    }

    // After kube-scheduler's Test_isSchedulableAfterPodChange.
    #[test]
    fn pod_events_help_only_when_they_change_a_count() {
        use QueueingHint::{Queue, QueueSkip};
        let target = pod("p", "ns", json!({"foo": ""}), None, true);
        let add = ClusterEvent::ASSIGNED_POD_ADD;
        let update = ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_LABEL);
        let delete = ClusterEvent::ASSIGNED_POD_DELETE;
        let p = |labels: Value, node: Option<&str>, ns: &str| {
            Some(EventObject::Pod(pod("q", ns, labels, node, false)))
        };
        let cases = [
            (
                "a matching pod added on a node",
                add,
                None,
                p(json!({"foo": ""}), Some("n"), "ns"),
                Queue,
            ),
            (
                "an unscheduled pod added",
                add,
                None,
                p(json!({"foo": ""}), None, "ns"),
                QueueSkip,
            ),
            (
                "a pod added in another namespace",
                add,
                None,
                p(json!({"foo": ""}), Some("n"), "other"),
                QueueSkip,
            ),
            (
                "a pod that does not match added",
                add,
                None,
                p(json!({"bar": ""}), Some("n"), "ns"),
                QueueSkip,
            ),
            (
                "a label that starts matching",
                update,
                p(json!({"bar": ""}), Some("n"), "ns"),
                p(json!({"foo": ""}), Some("n"), "ns"),
                Queue,
            ),
            (
                "a label that stops matching",
                update,
                p(json!({"foo": ""}), Some("n"), "ns"),
                p(json!({}), Some("n"), "ns"),
                Queue,
            ),
            (
                "an unrelated label",
                update,
                p(json!({"foo": ""}), Some("n"), "ns"),
                p(json!({"foo": "", "bar": ""}), Some("n"), "ns"),
                QueueSkip,
            ),
            (
                "a matching pod deleted",
                delete,
                p(json!({"foo": ""}), Some("n"), "ns"),
                None,
                Queue,
            ),
            (
                "a pod that did not match deleted",
                delete,
                p(json!({"bar": ""}), Some("n"), "ns"),
                None,
                QueueSkip,
            ),
            ("no object", delete, None, None, Queue),
        ];
        for (name, event, old, new, want) in cases {
            assert_eq!(hint(&target, event, old, new), want, "{name}");
        }
    }

    #[test]
    fn a_toleration_change_helps_the_pod_only_under_honored_taints() {
        let toleration = ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_TOLERATION);
        let with_policy = |policy: &str, tolerations: Value| {
            let mut p = pod("p", "ns", json!({"foo": ""}), None, true).pod().clone();
            let spec = p.spec.as_mut().unwrap();
            spec.topology_spread_constraints.as_mut().unwrap()[0].node_taints_policy =
                Some(policy.into());
            spec.tolerations = serde_json::from_value(tolerations).unwrap();
            Arc::new(PodInfo::new(Arc::new(p)).unwrap())
        };
        let tolerates = json!([{"key": "k", "operator": "Exists"}]);
        for (policy, want) in [
            ("Honor", QueueingHint::Queue),
            ("Ignore", QueueingHint::QueueSkip),
        ] {
            let (before, after) = (
                with_policy(policy, json!([])),
                with_policy(policy, tolerates.clone()),
            );
            let got = hint(
                &before,
                toleration,
                Some(EventObject::Pod(before.clone())),
                Some(EventObject::Pod(after)),
            );
            assert_eq!(got, want, "{policy}");
        }
    }

    // After kube-scheduler's Test_isSchedulableAfterNodeChange.
    #[test]
    fn node_events_help_only_nodes_with_the_topology_keys() {
        use QueueingHint::{Queue, QueueSkip};
        let target = pod("p", "ns", json!({"foo": ""}), None, true);
        let add = ClusterEvent::NODE_ADD;
        let label = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL);
        let taint = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT);
        let taints = json!([{"key": "k", "effect": "NoSchedule"}]);
        let cases = [
            (
                "a node with the key added",
                add,
                None,
                node(json!({"zone": "a"}), json!([])),
                Queue,
            ),
            (
                "a node without it added",
                add,
                None,
                node(json!({"other": "a"}), json!([])),
                QueueSkip,
            ),
            (
                "the key's value changed",
                label,
                Some(node(json!({"zone": "a"}), json!([]))),
                node(json!({"zone": "b"}), json!([])),
                Queue,
            ),
            (
                "the key added",
                label,
                Some(node(json!({}), json!([]))),
                node(json!({"zone": "a"}), json!([])),
                Queue,
            ),
            (
                "the key removed",
                label,
                Some(node(json!({"zone": "a"}), json!([]))),
                node(json!({}), json!([])),
                Queue,
            ),
            (
                "another label changed",
                label,
                Some(node(json!({"zone": "a", "x": "1"}), json!([]))),
                node(json!({"zone": "a", "x": "2"}), json!([])),
                QueueSkip,
            ),
            (
                "taints of a node with the key",
                taint,
                Some(node(json!({"zone": "a"}), json!([]))),
                node(json!({"zone": "a"}), taints.clone()),
                Queue,
            ),
            (
                "taints of a node without it",
                taint,
                Some(node(json!({}), json!([]))),
                node(json!({}), taints.clone()),
                QueueSkip,
            ),
        ];
        for (name, event, old, new, want) in cases {
            assert_eq!(hint(&target, event, old, Some(new)), want, "{name}");
        }
    }

    #[test]
    fn a_pod_with_default_constraints_from_a_list_is_always_retried() {
        use kubesched_config::args::{DefaultingType, PodTopologySpreadArgs};
        let args: PodTopologySpreadArgs = serde_json::from_value(json!({
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
        }))
        .unwrap();
        assert_eq!(args.defaulting_type, DefaultingType::List);
        let plugin = PodTopologySpread::new(args);
        let target = pod("p", "ns", json!({"foo": ""}), None, false);
        let unrelated = EventObject::Pod(pod("q", "other", json!({}), None, false));
        let objects = EventObjects {
            old: None,
            new: Some(unrelated),
        };
        let got = plugin.hint(&target, &ClusterEvent::ASSIGNED_POD_ADD, &objects);
        assert_eq!(got, QueueingHint::Queue);
    }
}
