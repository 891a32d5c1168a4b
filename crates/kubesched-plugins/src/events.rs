//! The cluster events each in-tree plugin registers
//! ([`Plugin::events_to_register`](kubesched_framework::Plugin::events_to_register)):
//! kube-scheduler v1.35's `EventsToRegister`, with queueing hints always on (the
//! `SchedulerQueueingHints` gate is locked on since v1.34), so without the extra node
//! events kube-scheduler registers only when hints are off.
//!
//! kube-scheduler then asks a queueing-hint function whether the event helps the pod (a
//! node added that is too small, a deleted pod in another namespace, ...); kubesched
//! stops at the kind of event, so it retries a pod in every case where kube-scheduler
//! may, and in a few where its hint would have said no.
//!
//! | plugin | pod events | node events | other |
//! | --- | --- | --- | --- |
//! | NodeResourcesFit | Delete, UpdatePodScaleDown | Add, UpdateNodeAllocatable | |
//! | NodeUnschedulable | UpdatePodToleration | Add, UpdateNodeTaint | |
//! | TaintToleration | UpdatePodToleration | Add, UpdateNodeTaint | |
//! | NodeAffinity | | Add, UpdateNodeLabel | |
//! | NodeName | | Add | |
//! | NodePorts | Delete | Add | |
//! | InterPodAffinity | Add, UpdatePodLabel, Delete | Add, UpdateNodeLabel | |
//! | PodTopologySpread | Add, UpdatePodLabel, UpdatePodToleration, Delete | Add, Delete, UpdateNodeLabel, UpdateNodeTaint | |
//! | SchedulingGates | UpdatePodSchedulingGatesEliminated | | |
//! | VolumeRestrictions | Delete | Add | PersistentVolumeClaim Add, Update |
//! | NodeVolumeLimits | Delete | | CSINode Add, Update; PersistentVolumeClaim Add; VolumeAttachment Delete |
//! | VolumeBinding | | Add, UpdateNodeLabel | StorageClass, PersistentVolumeClaim, PersistentVolume, CSINode, CSIStorageCapacity Add, Update; CSIDriver Update |
//! | VolumeZone | | Add, UpdateNodeLabel | StorageClass Add; PersistentVolumeClaim, PersistentVolume Add, Update |
//! | DynamicResources | UpdatePodGeneratedResourceClaim | Add, UpdateNodeLabel, UpdateNodeAllocatable | ResourceClaim, DeviceClass, ResourceSlice Add, Update |
//! | GangScheduling (v1.35) | Add | | Workload Add (kubesched has no Workload event: an Add of anything stands for it) |
//! | PrioritySort, ImageLocality, NodeResourcesBalancedAllocation, DefaultBinder, DefaultPreemption | none: they never reject a pod | | |
//!
//! kubesched's runtime watches pods and nodes only among these resources, so the
//! volume and resource-claim events never come; the pods those plugins reject (pods
//! kubesched does not support yet) are retried on their node and pod events and after
//! `podMaxInUnschedulablePodsDuration`.

use kubesched_framework::events::{
    ActionType, ClusterEvent, EventObject, EventObjects, EventResource, QueueingHint,
};
use kubesched_framework::{NodeInfo, PodInfo};

fn event(resource: EventResource, action: ActionType) -> ClusterEvent {
    ClusterEvent::new(resource, action)
}

/// NodeResourcesFit: a bound pod deleted or scaled down frees resources; a new node, or
/// more allocatable on one, adds them.
pub fn node_resources_fit() -> Vec<ClusterEvent> {
    vec![
        event(
            EventResource::Pod,
            ActionType::DELETE | ActionType::UPDATE_POD_SCALE_DOWN,
        ),
        event(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
        ),
    ]
}

/// NodeUnschedulable and TaintToleration: a new node, a node's taints (or its
/// `spec.unschedulable`) lifted, or a toleration added to the pod.
pub fn taints() -> Vec<ClusterEvent> {
    vec![
        event(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_TAINT,
        ),
        event(EventResource::Pod, ActionType::UPDATE_POD_TOLERATION),
    ]
}

/// NodeAffinity: a new node, or new labels on one.
pub fn node_affinity() -> Vec<ClusterEvent> {
    vec![event(
        EventResource::Node,
        ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
    )]
}

/// The shape of kube-scheduler's node hint functions (`isSchedulableAfterNodeChange`):
/// `decide(old, new)` answers for a node event that carries the node (and, for an
/// update, the node before it); any other event, or one without the node, may help.
pub(crate) fn node_change_hint(
    event: &ClusterEvent,
    objects: &EventObjects,
    decide: impl FnOnce(Option<&NodeInfo>, &NodeInfo) -> QueueingHint,
) -> QueueingHint {
    match objects.new_node() {
        Some(modified) if event.resource == EventResource::Node => {
            decide(objects.old_node(), modified)
        }
        _ => QueueingHint::Queue,
    }
}

/// The shape of kube-scheduler's `isSchedulableAfterPodTolerationChange` (TaintToleration,
/// NodeUnschedulable): a toleration change helps only the pod that changed, and only
/// if `helps(modified)`; `None` for any other event, or one without the pod.
pub(crate) fn toleration_change_hint(
    pod: &PodInfo,
    event: &ClusterEvent,
    objects: &EventObjects,
    helps: impl FnOnce(&PodInfo) -> bool,
) -> Option<QueueingHint> {
    match &objects.new {
        Some(EventObject::Pod(modified)) if event.resource == EventResource::Pod => Some(
            QueueingHint::queue_if(modified.uid() == pod.uid() && helps(modified)),
        ),
        _ => None,
    }
}

/// Whether a deleted pod held a place: it was on a node or nominated to one
/// (kube-scheduler's hints skip a deleted pod with neither `spec.nodeName` nor
/// `status.nominatedNodeName`).
pub(crate) fn held_a_place(deleted: &PodInfo) -> bool {
    let nominated = deleted
        .pod()
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref());
    deleted.node_name().is_some() || nominated.is_some_and(|n| !n.is_empty())
}

/// NodeName: a new node (the one the pod names).
pub fn node_name() -> Vec<ClusterEvent> {
    vec![ClusterEvent::NODE_ADD]
}

/// NodePorts: a bound pod deleted frees its host ports; a new node has all of them.
pub fn node_ports() -> Vec<ClusterEvent> {
    vec![
        event(EventResource::Pod, ActionType::DELETE),
        ClusterEvent::NODE_ADD,
    ]
}

/// InterPodAffinity: pods added, relabelled or deleted change which terms hold; new
/// nodes or node labels change the topology domains.
pub fn inter_pod_affinity() -> Vec<ClusterEvent> {
    vec![
        event(
            EventResource::Pod,
            ActionType::ADD | ActionType::UPDATE_POD_LABEL | ActionType::DELETE,
        ),
        event(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
        ),
    ]
}

/// PodTopologySpread: pods added, relabelled or deleted change the skew, a toleration
/// changes which nodes count (`nodeTaintsPolicy: Honor`); nodes added, deleted,
/// relabelled or retainted change the domains.
pub fn pod_topology_spread() -> Vec<ClusterEvent> {
    vec![
        event(
            EventResource::Pod,
            ActionType::ADD
                | ActionType::UPDATE_POD_LABEL
                | ActionType::UPDATE_POD_TOLERATION
                | ActionType::DELETE,
        ),
        event(
            EventResource::Node,
            ActionType::ADD
                | ActionType::DELETE
                | ActionType::UPDATE_NODE_LABEL
                | ActionType::UPDATE_NODE_TAINT,
        ),
    ]
}

/// SchedulingGates: the pod's last gate removed.
pub fn scheduling_gates() -> Vec<ClusterEvent> {
    vec![event(
        EventResource::Pod,
        ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    )]
}

/// VolumeRestrictions: a pod deleted releases its volumes; a new node; the claim created
/// or changed.
pub fn volume_restrictions() -> Vec<ClusterEvent> {
    vec![
        event(EventResource::Pod, ActionType::DELETE),
        ClusterEvent::NODE_ADD,
        event(
            EventResource::PersistentVolumeClaim,
            ActionType::ADD | ActionType::UPDATE,
        ),
    ]
}

/// NodeVolumeLimits: a CSINode added or updated (its limits), a pod deleted or a
/// VolumeAttachment deleted (an attachment freed), a claim created.
pub fn node_volume_limits() -> Vec<ClusterEvent> {
    vec![
        event(EventResource::CsiNode, ActionType::ADD | ActionType::UPDATE),
        event(EventResource::Pod, ActionType::DELETE),
        event(EventResource::PersistentVolumeClaim, ActionType::ADD),
        event(EventResource::VolumeAttachment, ActionType::DELETE),
    ]
}

/// VolumeBinding: storage classes, claims, volumes, CSI nodes and capacities added or
/// changed, a CSI driver changed, a new node or new node labels.
pub fn volume_binding() -> Vec<ClusterEvent> {
    let add_or_update = ActionType::ADD | ActionType::UPDATE;
    vec![
        event(EventResource::StorageClass, add_or_update),
        event(EventResource::PersistentVolumeClaim, add_or_update),
        event(EventResource::PersistentVolume, add_or_update),
        event(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
        ),
        event(EventResource::CsiNode, add_or_update),
        event(EventResource::CsiDriver, ActionType::UPDATE),
        event(EventResource::CsiStorageCapacity, add_or_update),
    ]
}

/// VolumeZone: a storage class added, a new node or new node labels, claims and volumes
/// added or changed.
pub fn volume_zone() -> Vec<ClusterEvent> {
    let add_or_update = ActionType::ADD | ActionType::UPDATE;
    vec![
        event(EventResource::StorageClass, ActionType::ADD),
        event(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
        ),
        event(EventResource::PersistentVolumeClaim, add_or_update),
        event(EventResource::PersistentVolume, add_or_update),
    ]
}

/// DynamicResources: new nodes or node labels or allocatable, claims, device classes and
/// resource slices added or changed, the pod's generated claims.
pub fn dynamic_resources() -> Vec<ClusterEvent> {
    let add_or_update = ActionType::ADD | ActionType::UPDATE;
    vec![
        event(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL | ActionType::UPDATE_NODE_ALLOCATABLE,
        ),
        event(EventResource::ResourceClaim, add_or_update),
        event(
            EventResource::Pod,
            ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM,
        ),
        event(EventResource::DeviceClass, add_or_update),
        event(EventResource::ResourceSlice, add_or_update),
    ]
}

/// The plugins that never reject a pod (QueueSort, Score, Bind, PostFilter only): no
/// event.
pub fn none() -> Vec<ClusterEvent> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use kubesched_framework::events::{ActionType, ClusterEvent, EventResource};
    use kubesched_framework::{Framework, Handle, QueueingHints};

    /// The default profile's hints, as the runtime builds them.
    fn default_hints() -> QueueingHints {
        let config = kubesched_config::KubeSchedulerConfiguration::from_yaml_str(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
            "t.yaml",
        )
        .unwrap()
        .config;
        let registry = crate::in_tree_registry();
        let handle = Handle {
            profile_name: String::new(),
            binder: None,
            ..Handle::default()
        };
        let fwk = Framework::new(&config.profiles[0], &registry, &handle).unwrap();
        QueueingHints::from_frameworks([&fwk])
    }

    fn by(plugin: &str) -> BTreeSet<String> {
        BTreeSet::from([plugin.to_string()])
    }

    #[test]
    fn every_default_plugin_registers_its_events() {
        let hints = default_hints();
        let label = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL);
        let taint = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT);
        let allocatable =
            ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_ALLOCATABLE);
        let worth = |plugin: &str, e: &ClusterEvent| {
            hints.worth_requeuing("default-scheduler", &by(plugin), e)
        };
        assert!(!worth("NodeResourcesFit", &label));
        assert!(worth("NodeResourcesFit", &allocatable));
        assert!(worth(
            "NodeResourcesFit",
            &ClusterEvent::ASSIGNED_POD_DELETE
        ));
        assert!(!worth("NodeResourcesFit", &ClusterEvent::ASSIGNED_POD_ADD));
        assert!(worth("NodeAffinity", &label));
        assert!(!worth("NodeAffinity", &taint));
        assert!(worth("TaintToleration", &taint));
        assert!(worth("NodeUnschedulable", &taint));
        assert!(!worth("NodeUnschedulable", &label));
        assert!(worth("NodeName", &ClusterEvent::NODE_ADD));
        assert!(!worth("NodeName", &label));
        assert!(worth("NodePorts", &ClusterEvent::ASSIGNED_POD_DELETE));
        assert!(worth("InterPodAffinity", &ClusterEvent::ASSIGNED_POD_ADD));
        assert!(worth("PodTopologySpread", &ClusterEvent::NODE_DELETE));
        assert!(!worth("InterPodAffinity", &ClusterEvent::NODE_DELETE));
        // A status-only update of a bound pod helps nobody.
        let other_update = ClusterEvent::new(EventResource::AssignedPod, ActionType::UPDATE);
        for plugin in [
            "NodeResourcesFit",
            "InterPodAffinity",
            "PodTopologySpread",
            "NodePorts",
            "TaintToleration",
        ] {
            assert!(!worth(plugin, &other_update), "{plugin}");
        }
    }
}
