//! InterPodAffinity's queueing hints (kube-scheduler's `isSchedulableAfterPodChange`
//! and `isSchedulableAfterNodeChange`): which pod and node events may let a pod the
//! plugin turned down through. They read the pod's required affinity and
//! anti-affinity terms; a pod whose terms do not compile is retried on every event.

use kubesched_framework::events::{EventObjects, EventResource};
use kubesched_framework::{ClusterEvent, PodInfo, QueueingHint};

use super::{
    AffinityTerm, InterPodAffinity, pod_matches_all_terms, required_affinity_terms,
    required_anti_affinity_terms,
};

impl InterPodAffinity {
    /// The hint for `event` about `pod` (see the module doc).
    pub(super) fn hint(
        &self,
        pod: &PodInfo,
        event: &ClusterEvent,
        objects: &EventObjects,
    ) -> QueueingHint {
        let (Ok(terms), Ok(anti_terms)) = (
            required_affinity_terms(pod),
            required_anti_affinity_terms(pod),
        ) else {
            return QueueingHint::Queue;
        };
        if event.resource == EventResource::Node {
            return node_hint(&terms, &anti_terms, objects);
        }
        pod_hint(&terms, &anti_terms, objects)
    }
}

/// `isSchedulableAfterPodChange`: only pods on a node count. One added helps when it
/// matches every affinity term; one deleted when it matched every anti-affinity term;
/// one relabelled when it came to match the affinity terms or stopped matching the
/// anti-affinity terms.
fn pod_hint(
    terms: &[AffinityTerm],
    anti_terms: &[AffinityTerm],
    objects: &EventObjects,
) -> QueueingHint {
    let (original, modified) = (objects.old_pod(), objects.new_pod());
    let unscheduled = |p: Option<&PodInfo>| p.is_some_and(|p| p.node_name().is_none());
    if unscheduled(modified) || unscheduled(original) {
        return QueueingHint::QueueSkip;
    }
    match (original, modified) {
        (Some(original), Some(modified)) => QueueingHint::queue_if(
            (!pod_matches_all_terms(terms, original) && pod_matches_all_terms(terms, modified))
                || (pod_matches_all_terms(anti_terms, original)
                    && !pod_matches_all_terms(anti_terms, modified)),
        ),
        (None, Some(added)) => QueueingHint::queue_if(pod_matches_all_terms(terms, added)),
        (Some(deleted), None) => QueueingHint::queue_if(pod_matches_all_terms(anti_terms, deleted)),
        (None, None) => QueueingHint::Queue,
    }
}

/// `isSchedulableAfterNodeChange`: a node added helps when it has an affinity term's
/// topology key, or whenever the pod has anti-affinity terms; an update when it gains
/// an affinity term's key, loses an anti-affinity term's key, or moves either to
/// another value.
fn node_hint(
    terms: &[AffinityTerm],
    anti_terms: &[AffinityTerm],
    objects: &EventObjects,
) -> QueueingHint {
    let Some(modified) = objects.new_node() else {
        return QueueingHint::Queue;
    };
    let Some(original) = objects.old_node() else {
        let keyed = terms
            .iter()
            .any(|t| modified.label(&t.topology_key).is_some());
        return QueueingHint::queue_if(keyed || !anti_terms.is_empty());
    };
    // A term's domain on the node before and after the update.
    let domain = |t: &AffinityTerm| {
        (
            original.label(&t.topology_key),
            modified.label(&t.topology_key),
        )
    };
    let affinity_helped = terms.iter().any(|t| match domain(t) {
        (None, Some(_)) => true,
        (Some(was), Some(now)) => was != now,
        _ => false,
    });
    let anti_affinity_helped = anti_terms.iter().any(|t| match domain(t) {
        (Some(_), None) => true,
        (Some(was), Some(now)) => was != now,
        _ => false,
    });
    QueueingHint::queue_if(affinity_helped || anti_affinity_helped)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kubesched_framework::events::{ActionType, EventObject, EventObjects, EventResource};
    use kubesched_framework::{ClusterEvent, NodeInfo, PodInfo, QueueingHint};
    use serde_json::{Value, json};

    use super::InterPodAffinity;

    /// A term over `zone` selecting pods with label `key`.
    fn term(key: &str) -> Value {
        json!({"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]}})
    }

    fn pod(name: &str, labels: Value, node: Option<&str>, affinity: Value) -> Arc<PodInfo> {
        let mut pod = json!({
            "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels},
            "spec": {"containers": [{"name": "c"}], "affinity": affinity},
        });
        if let Some(node) = node {
            pod["spec"]["nodeName"] = node.into();
        }
        Arc::new(PodInfo::new(Arc::new(serde_json::from_value(pod).unwrap())).unwrap())
    }

    fn node(labels: Value) -> EventObject {
        let node = json!({"metadata": {"name": "n", "labels": labels}});
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
        InterPodAffinity::default().hint(target, &event, &EventObjects { old, new })
    }

    // After kube-scheduler's Test_isSchedulableAfterPodChange.
    #[test]
    fn pod_events_help_only_pods_that_meet_or_free_the_terms() {
        use QueueingHint::{Queue, QueueSkip};
        let affinity = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("aaa")]}});
        let anti = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("bbb")]}});
        let wants = pod("p", json!({}), None, affinity);
        let hates = pod("p", json!({}), None, anti);
        let p = |labels: Value, node: Option<&str>| {
            Some(EventObject::Pod(pod("q", labels, node, json!({}))))
        };
        let add = ClusterEvent::ASSIGNED_POD_ADD;
        let update = ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_LABEL);
        let delete = ClusterEvent::ASSIGNED_POD_DELETE;
        let cases = [
            (
                "a matching pod added",
                &wants,
                add,
                None,
                p(json!({"aaa": ""}), Some("n")),
                Queue,
            ),
            (
                "an unscheduled matching pod added",
                &wants,
                add,
                None,
                p(json!({"aaa": ""}), None),
                QueueSkip,
            ),
            (
                "a pod that does not match added",
                &wants,
                add,
                None,
                p(json!({"bbb": ""}), Some("n")),
                QueueSkip,
            ),
            (
                "a pod relabelled to match",
                &wants,
                update,
                p(json!({}), Some("n")),
                p(json!({"aaa": ""}), Some("n")),
                Queue,
            ),
            (
                "a pod relabelled, still not matching",
                &wants,
                update,
                p(json!({}), Some("n")),
                p(json!({"ccc": ""}), Some("n")),
                QueueSkip,
            ),
            (
                "a hated pod relabelled away",
                &hates,
                update,
                p(json!({"bbb": ""}), Some("n")),
                p(json!({}), Some("n")),
                Queue,
            ),
            (
                "a hated pod deleted",
                &hates,
                delete,
                p(json!({"bbb": ""}), Some("n")),
                None,
                Queue,
            ),
            (
                "another pod deleted",
                &hates,
                delete,
                p(json!({"ccc": ""}), Some("n")),
                None,
                QueueSkip,
            ),
            (
                "a pod deleted, no anti-affinity",
                &wants,
                delete,
                p(json!({"aaa": ""}), Some("n")),
                None,
                QueueSkip,
            ),
            ("no object", &wants, add, None, None, Queue),
        ];
        for (name, target, event, old, new, want) in cases {
            assert_eq!(hint(target, event, old, new), want, "{name}");
        }
    }

    // After kube-scheduler's Test_isSchedulableAfterNodeChange.
    #[test]
    fn node_events_help_only_when_a_term_s_domain_changes() {
        use QueueingHint::{Queue, QueueSkip};
        let affinity = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("aaa")]}});
        let anti = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("bbb")]}});
        let wants = pod("p", json!({}), None, affinity);
        let hates = pod("p", json!({}), None, anti);
        let add = ClusterEvent::NODE_ADD;
        let label = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL);
        let cases = [
            (
                "a node with the key added",
                &wants,
                add,
                None,
                node(json!({"zone": "a"})),
                Queue,
            ),
            (
                "a node without it added",
                &wants,
                add,
                None,
                node(json!({})),
                QueueSkip,
            ),
            (
                "any node added, anti-affinity",
                &hates,
                add,
                None,
                node(json!({})),
                Queue,
            ),
            (
                "the affinity key gained",
                &wants,
                label,
                Some(node(json!({}))),
                node(json!({"zone": "a"})),
                Queue,
            ),
            (
                "the affinity key moved",
                &wants,
                label,
                Some(node(json!({"zone": "a"}))),
                node(json!({"zone": "b"})),
                Queue,
            ),
            (
                "the affinity key lost",
                &wants,
                label,
                Some(node(json!({"zone": "a"}))),
                node(json!({})),
                QueueSkip,
            ),
            (
                "the anti-affinity key lost",
                &hates,
                label,
                Some(node(json!({"zone": "a"}))),
                node(json!({})),
                Queue,
            ),
            (
                "the anti-affinity key gained",
                &hates,
                label,
                Some(node(json!({}))),
                node(json!({"zone": "a"})),
                QueueSkip,
            ),
            (
                "another label",
                &hates,
                label,
                Some(node(json!({"zone": "a"}))),
                node(json!({"zone": "a", "x": "y"})),
                QueueSkip,
            ),
        ];
        for (name, target, event, old, new, want) in cases {
            assert_eq!(hint(target, event, old, Some(new)), want, "{name}");
        }
    }
}
