//! The event kinds, their matching and labels, the node and pod update events, and
//! the queueing hints' requeue rule.

use super::*;
use k8s_openapi::api::core::v1::{
    Container, NodeCondition, NodeSpec, NodeStatus, PodSpec, ResourceRequirements, Taint,
    Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

fn node(cpu: &str, labels: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.name = Some("n".into());
    n.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    n.status = Some(NodeStatus {
        allocatable: Some(BTreeMap::from([(
            "cpu".to_string(),
            ApiQuantity(cpu.into()),
        )])),
        ..Default::default()
    });
    n
}

fn actions(events: &[ClusterEvent]) -> Vec<String> {
    events.iter().map(|e| e.label().into_owned()).collect()
}

#[test]
fn matching_follows_kube_scheduler() {
    let fit_nodes = ClusterEvent::new(
        EventResource::Node,
        ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
    );
    assert!(fit_nodes.matches(&ClusterEvent::NODE_ADD));
    assert!(fit_nodes.matches(&ClusterEvent::new(
        EventResource::Node,
        ActionType::UPDATE_NODE_ALLOCATABLE
    )));
    assert!(!fit_nodes.matches(&ClusterEvent::new(
        EventResource::Node,
        ActionType::UPDATE_NODE_LABEL
    )));
    assert!(!fit_nodes.matches(&ClusterEvent::NODE_DELETE));
    // A general update matches only a registration of every update.
    let general = ClusterEvent::new(EventResource::Node, ActionType::UPDATE);
    assert!(!fit_nodes.matches(&general));
    assert!(ClusterEvent::new(EventResource::Node, ActionType::ALL).matches(&general));
    // Pod matches both kinds of pod; the kinds do not match each other.
    let pod_delete = ClusterEvent::new(EventResource::Pod, ActionType::DELETE);
    assert!(pod_delete.matches(&ClusterEvent::ASSIGNED_POD_DELETE));
    assert!(!pod_delete.matches(&ClusterEvent::NODE_DELETE));
    assert!(ClusterEvent::WILDCARD.matches(&ClusterEvent::NODE_ADD));
    // An incoming wildcard only matches a registered one.
    assert!(!pod_delete.matches(&ClusterEvent::FORCE_ACTIVATE));
}

#[test]
fn labels_are_kube_schedulers() {
    assert_eq!(ClusterEvent::NODE_ADD.label(), "NodeAdd");
    assert_eq!(
        ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL).label(),
        "NodeUpdateNodeLabel"
    );
    assert_eq!(
        ClusterEvent::ASSIGNED_POD_DELETE.label(),
        "AssignedPodDelete"
    );
    assert_eq!(
        ClusterEvent::UNSCHEDULABLE_POD_ADD.label(),
        "UnschedulablePodAdd"
    );
    assert_eq!(
        ClusterEvent::UNSCHEDULABLE_POD_UPDATE.label(),
        "UnschedulablePodUpdate"
    );
    assert_eq!(
        ClusterEvent::UNSCHEDULABLE_TIMEOUT.label(),
        "UnschedulableTimeout"
    );
    assert_eq!((ActionType::ADD | ActionType::DELETE).name(), "Add|Delete");
    assert_eq!(ActionType::ALL.name(), "All");
}

#[test]
fn node_updates_are_classified() {
    let old = node("4", &[("zone", "a")]);
    let mut new = old.clone();
    assert!(node_update_events(&old, &new).is_empty(), "nothing changed");
    new.metadata.labels = Some(BTreeMap::from([("zone".into(), "b".into())]));
    assert_eq!(
        actions(&node_update_events(&old, &new)),
        ["NodeUpdateNodeLabel"]
    );
    // 4 and 4000m are the same allocatable.
    let same = node("4000m", &[("zone", "a")]);
    assert!(node_update_events(&old, &same).is_empty());
    let mut bigger = node("8", &[("zone", "a")]);
    bigger.spec = Some(NodeSpec {
        taints: Some(vec![Taint {
            key: "k".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    bigger.status.as_mut().unwrap().conditions = Some(vec![NodeCondition {
        type_: "Ready".into(),
        status: "True".into(),
        ..Default::default()
    }]);
    assert_eq!(
        actions(&node_update_events(&old, &bigger)),
        [
            "NodeUpdateNodeAllocatable",
            "NodeUpdateNodeTaint",
            "NodeUpdateNodeCondition"
        ]
    );
    // Becoming schedulable is a taint update; becoming unschedulable is nothing.
    let mut cordoned = old.clone();
    cordoned.spec = Some(NodeSpec {
        unschedulable: Some(true),
        ..Default::default()
    });
    assert!(node_update_events(&old, &cordoned).is_empty());
    assert_eq!(
        actions(&node_update_events(&cordoned, &old)),
        ["NodeUpdateNodeTaint"]
    );
    let mut declaring = old.clone();
    declaring.status.get_or_insert_default().declared_features =
        Some(vec!["RestartAllContainersOnContainerExits".into()]);
    assert_eq!(
        actions(&node_update_events(&old, &declaring)),
        ["NodeUpdateNodeDeclaredFeature"]
    );
}

fn pod(cpu: &str, node: Option<&str>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some("p".into());
    p.spec = Some(PodSpec {
        node_name: node.map(String::from),
        containers: vec![Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "cpu".to_string(),
                    ApiQuantity(cpu.into()),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    });
    p
}

#[test]
fn pod_updates_are_classified() {
    let old = pod("2", Some("n1"));
    assert_eq!(
        actions(&pod_update_events(&old, &old.clone())),
        ["AssignedPodUpdate"]
    );
    let mut labelled = old.clone();
    labelled.metadata.labels = Some(BTreeMap::from([("app".into(), "web".into())]));
    assert_eq!(
        actions(&pod_update_events(&old, &labelled)),
        ["AssignedPodUpdatePodLabel"]
    );
    assert_eq!(
        actions(&pod_update_events(&old, &pod("1", Some("n1")))),
        ["AssignedPodUpdatePodScaleDown"]
    );
    assert_eq!(
        actions(&pod_update_events(&pod("1", Some("n1")), &old)),
        ["AssignedPodUpdate"],
        "scaling up is no scale-down"
    );
    let pending = pod("2", None);
    let mut tolerant = pending.clone();
    tolerant.spec.as_mut().unwrap().tolerations = Some(vec![Toleration::default()]);
    assert_eq!(
        actions(&pod_update_events(&pending, &tolerant)),
        ["UnschedulablePodUpdatePodToleration"]
    );
}

#[test]
fn hints_need_a_matching_registration_of_a_rejecting_plugin() {
    let mut hints = QueueingHints::new();
    hints.set_plugin_events(
        "p",
        "NodeAffinity",
        vec![ClusterEvent::new(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
        )],
    );
    hints.set_plugin_events("p", "ImageLocality", vec![]);
    let label = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL);
    let by = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert!(hints.worth_requeuing("p", &by(&["NodeAffinity"]), &label));
    assert!(!hints.worth_requeuing(
        "p",
        &by(&["NodeAffinity"]),
        &ClusterEvent::ASSIGNED_POD_DELETE
    ));
    assert!(!hints.worth_requeuing("p", &by(&["ImageLocality"]), &label));
    // Any rejecting plugin may vouch for the event.
    assert!(hints.worth_requeuing("p", &by(&["ImageLocality", "NodeAffinity"]), &label));
    // No rejecting plugin, an unknown plugin or profile, a wildcard: always.
    assert!(hints.worth_requeuing("p", &by(&[]), &ClusterEvent::ASSIGNED_POD_DELETE));
    assert!(hints.worth_requeuing("p", &by(&["Custom"]), &ClusterEvent::ASSIGNED_POD_DELETE));
    assert!(hints.worth_requeuing("other", &by(&["ImageLocality"]), &label));
    assert!(hints.worth_requeuing(
        "p",
        &by(&["ImageLocality"]),
        &ClusterEvent::UNSCHEDULABLE_TIMEOUT
    ));
}
