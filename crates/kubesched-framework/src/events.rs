//! Cluster events and queueing hints: which change in the cluster may make a pod that
//! a plugin rejected schedulable, so that the [`SchedulingQueue`](crate::SchedulingQueue)
//! retries an unschedulable pod only when an event could help it.
//!
//! This is kube-scheduler v1.35's design (`EnqueueExtensions`, `ClusterEvent`,
//! `ActionType`, `QueueingHintFn`):
//!
//! - each plugin registers the [`ClusterEvent`]s that may resolve its rejections
//!   ([`Plugin::events_to_register`]; the default,
//!   every event, keeps a plugin that says nothing correct), and may look closer at
//!   the objects of an event that matches
//!   ([`Plugin::queueing_hint`], kube-scheduler's
//!   `QueueingHintFn`; the default answers [`QueueingHint::Queue`]);
//! - the runtime turns what it sees (a node added, a node's labels changed, a bound pod
//!   deleted, ...) into incoming [`ClusterEvent`]s ([`node_update_events`],
//!   [`pod_update_events`]);
//! - [`QueueingHints`] (one map per profile, plugin name → events) decides whether an
//!   incoming event can help a pod, given the plugins that rejected it.
//!
//! ```
//! use std::collections::BTreeSet;
//! use kubesched_framework::events::{ActionType, ClusterEvent, EventResource, QueueingHints};
//!
//! let mut hints = QueueingHints::new();
//! hints.set_plugin_events(
//!     "default-scheduler",
//!     "NodeResourcesFit",
//!     vec![
//!         ClusterEvent::new(EventResource::Pod, ActionType::DELETE | ActionType::UPDATE_POD_SCALE_DOWN),
//!         ClusterEvent::new(EventResource::Node, ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE),
//!     ],
//! );
//! let rejected_by = BTreeSet::from(["NodeResourcesFit".to_string()]);
//! let label_change = ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_LABEL);
//! assert!(!hints.worth_requeuing("default-scheduler", &rejected_by, &label_change));
//! assert!(hints.worth_requeuing("default-scheduler", &rejected_by, &ClusterEvent::ASSIGNED_POD_DELETE));
//! assert_eq!(ClusterEvent::ASSIGNED_POD_DELETE.label(), "AssignedPodDelete");
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::{BitOr, BitOrAssign};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::framework::Framework;
use crate::node_info::NodeInfo;
use crate::plugin::Plugin;
use crate::pod_info::PodInfo;
use crate::resource::{PodRequestOptions, parse_resource_list, pod_requests_with_status};

/// The kind of object an event is about (kube-scheduler's `EventResource`, with its
/// spelling).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventResource {
    /// Any pod: what plugins register. It matches [`EventResource::AssignedPod`] and
    /// [`EventResource::UnschedulablePod`] events.
    Pod,
    /// A pod bound to a node (incoming events only, as in kube-scheduler).
    AssignedPod,
    /// A pod not bound yet (incoming events only): the updates of a pending pod itself.
    UnschedulablePod,
    /// A node.
    Node,
    /// A PersistentVolume.
    PersistentVolume,
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim,
    /// A StorageClass.
    StorageClass,
    /// A CSINode.
    CsiNode,
    /// A CSIDriver.
    CsiDriver,
    /// A CSIStorageCapacity.
    CsiStorageCapacity,
    /// A VolumeAttachment.
    VolumeAttachment,
    /// A ResourceClaim (dynamic resource allocation).
    ResourceClaim,
    /// A ResourceSlice (dynamic resource allocation).
    ResourceSlice,
    /// A DeviceClass (dynamic resource allocation).
    DeviceClass,
    /// A `scheduling.k8s.io` Workload (kube-scheduler v1.35's gang scheduling).
    Workload,
    /// A `scheduling.k8s.io` PodGroup (kube-scheduler v1.36's gang scheduling).
    PodGroup,
    /// A kind kube-scheduler has no name for, as an out-of-tree plugin registers it:
    /// `<plural>.<version>.<group>` (`podgroups.v1alpha1.scheduling.x-k8s.io`), the
    /// form kube-scheduler watches through a dynamic informer.
    Custom(&'static str),
    /// Every resource.
    WildCard,
}

/// The gang and quota kinds kubesched reads, each with the resource its events are
/// about: `(apiVersion, kind, resource)`.
const GANG_AND_QUOTA_KINDS: [(&str, &str, EventResource); 4] = [
    (
        "scheduling.k8s.io/v1alpha1",
        "Workload",
        EventResource::Workload,
    ),
    (
        "scheduling.k8s.io/v1alpha2",
        "PodGroup",
        EventResource::PodGroup,
    ),
    (
        "scheduling.x-k8s.io/v1alpha1",
        "PodGroup",
        EventResource::SIGS_POD_GROUP,
    ),
    (
        "scheduling.x-k8s.io/v1alpha1",
        "ElasticQuota",
        EventResource::ELASTIC_QUOTA,
    ),
];

impl EventResource {
    /// kube-scheduler's name of the resource (`Pod`, `Node`,
    /// `storage.k8s.io/CSINode`, ..., `*`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventResource::Pod => "Pod",
            EventResource::AssignedPod => "AssignedPod",
            EventResource::UnschedulablePod => "UnschedulablePod",
            EventResource::Node => "Node",
            EventResource::PersistentVolume => "PersistentVolume",
            EventResource::PersistentVolumeClaim => "PersistentVolumeClaim",
            EventResource::StorageClass => "storage.k8s.io/StorageClass",
            EventResource::CsiNode => "storage.k8s.io/CSINode",
            EventResource::CsiDriver => "storage.k8s.io/CSIDriver",
            EventResource::CsiStorageCapacity => "storage.k8s.io/CSIStorageCapacity",
            EventResource::VolumeAttachment => "storage.k8s.io/VolumeAttachment",
            EventResource::ResourceClaim => "resource.k8s.io/ResourceClaim",
            EventResource::ResourceSlice => "resource.k8s.io/ResourceSlice",
            EventResource::DeviceClass => "resource.k8s.io/DeviceClass",
            EventResource::Workload => "scheduling.k8s.io/Workload",
            EventResource::PodGroup => "scheduling.k8s.io/PodGroup",
            EventResource::Custom(gvk) => gvk,
            EventResource::WildCard => "*",
        }
    }

    /// scheduler-plugins' PodGroup, as Coscheduling registers it.
    pub const SIGS_POD_GROUP: EventResource =
        EventResource::Custom("podgroups.v1alpha1.scheduling.x-k8s.io");
    /// scheduler-plugins' ElasticQuota, as CapacityScheduling registers it.
    pub const ELASTIC_QUOTA: EventResource =
        EventResource::Custom("elasticquotas.v1alpha1.scheduling.x-k8s.io");

    /// The resources of the gang and quota kinds kubesched reads (v1.35's Workload,
    /// v1.36's PodGroup, scheduler-plugins' PodGroup and ElasticQuota) called `kind`,
    /// of `api_version` when it is given, else of every version.
    ///
    /// ```
    /// use kubesched_framework::events::EventResource;
    ///
    /// assert_eq!(
    ///     EventResource::of_gang_kind(Some("scheduling.x-k8s.io/v1alpha1"), "PodGroup"),
    ///     vec![EventResource::SIGS_POD_GROUP]
    /// );
    /// assert_eq!(EventResource::of_gang_kind(None, "PodGroup").len(), 2);
    /// assert!(EventResource::of_gang_kind(None, "Node").is_empty());
    /// ```
    pub fn of_gang_kind(api_version: Option<&str>, kind: &str) -> Vec<EventResource> {
        GANG_AND_QUOTA_KINDS
            .iter()
            .filter(|(v, k, _)| *k == kind && api_version.is_none_or(|a| a == *v))
            .map(|(_, _, r)| *r)
            .collect()
    }

    /// `true` for the resources kube-scheduler always watches (pods and nodes): it
    /// reports their events whatever the plugins registered. Every other resource
    /// has an informer only when some plugin registered an event about it
    /// ([`QueueingHints::reports`]).
    pub fn always_watched(self) -> bool {
        matches!(
            self,
            EventResource::Pod
                | EventResource::AssignedPod
                | EventResource::UnschedulablePod
                | EventResource::Node
                | EventResource::WildCard
        )
    }

    /// `true` when a plugin registered for `self` is interested in an event about
    /// `incoming` (kube-scheduler's `matchEventResources`).
    pub fn matches(self, incoming: EventResource) -> bool {
        self == EventResource::WildCard
            || self == incoming
            || (self == EventResource::Pod
                && matches!(
                    incoming,
                    EventResource::AssignedPod | EventResource::UnschedulablePod
                ))
    }
}

impl fmt::Display for EventResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened to the object: a set of kube-scheduler's `ActionType` bits (`Add`,
/// `Delete`, and one bit per kind of update). Combine them with `|`.
///
/// The bits are kube-scheduler's, in its order, so that matching
/// ([`ClusterEvent::matches`]) compares them exactly as it does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ActionType(u32);

impl ActionType {
    /// Nothing.
    pub const NONE: ActionType = ActionType(0);
    /// The object was created.
    pub const ADD: ActionType = ActionType(1);
    /// The object was deleted.
    pub const DELETE: ActionType = ActionType(1 << 1);
    /// A node's `status.allocatable` changed.
    pub const UPDATE_NODE_ALLOCATABLE: ActionType = ActionType(1 << 2);
    /// A node's labels changed.
    pub const UPDATE_NODE_LABEL: ActionType = ActionType(1 << 3);
    /// A node's taints changed, or the node stopped being `spec.unschedulable`.
    pub const UPDATE_NODE_TAINT: ActionType = ActionType(1 << 4);
    /// The status of one of a node's conditions changed.
    pub const UPDATE_NODE_CONDITION: ActionType = ActionType(1 << 5);
    /// A node's annotations changed.
    pub const UPDATE_NODE_ANNOTATION: ActionType = ActionType(1 << 6);
    /// A node's `status.declaredFeatures` changed (NodeDeclaredFeatures registers it).
    pub const UPDATE_NODE_DECLARED_FEATURE: ActionType = ActionType(1 << 7);
    /// A pod's labels changed.
    pub const UPDATE_POD_LABEL: ActionType = ActionType(1 << 8);
    /// A pod's resource requests went down (or one went away).
    pub const UPDATE_POD_SCALE_DOWN: ActionType = ActionType(1 << 9);
    /// A pod got a toleration (they can only be added).
    pub const UPDATE_POD_TOLERATION: ActionType = ActionType(1 << 10);
    /// A pod's last scheduling gate was removed.
    pub const UPDATE_POD_SCHEDULING_GATES_ELIMINATED: ActionType = ActionType(1 << 11);
    /// The ResourceClaims generated for a pod changed (its status).
    pub const UPDATE_POD_GENERATED_RESOURCE_CLAIM: ActionType = ActionType(1 << 12);
    /// Every action.
    pub const ALL: ActionType = ActionType((1 << 13) - 1);
    /// Any update: every bit but `ADD` and `DELETE`. As an incoming event, an update
    /// that none of the specific bits describes.
    pub const UPDATE: ActionType = ActionType(((1 << 13) - 1) & !0b11);

    const NAMES: [(ActionType, &'static str); 13] = [
        (ActionType::ADD, "Add"),
        (ActionType::DELETE, "Delete"),
        (ActionType::UPDATE_NODE_ALLOCATABLE, "UpdateNodeAllocatable"),
        (ActionType::UPDATE_NODE_LABEL, "UpdateNodeLabel"),
        (ActionType::UPDATE_NODE_TAINT, "UpdateNodeTaint"),
        (ActionType::UPDATE_NODE_CONDITION, "UpdateNodeCondition"),
        (ActionType::UPDATE_NODE_ANNOTATION, "UpdateNodeAnnotation"),
        (
            ActionType::UPDATE_NODE_DECLARED_FEATURE,
            "UpdateNodeDeclaredFeature",
        ),
        (ActionType::UPDATE_POD_LABEL, "UpdatePodLabel"),
        (ActionType::UPDATE_POD_SCALE_DOWN, "UpdatePodScaleDown"),
        (ActionType::UPDATE_POD_TOLERATION, "UpdatePodToleration"),
        (
            ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
            "UpdatePodSchedulingGatesEliminated",
        ),
        (
            ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM,
            "UpdatePodGeneratedResourceClaim",
        ),
    ];

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Both sets' actions.
    pub const fn union(self, other: ActionType) -> ActionType {
        ActionType(self.0 | other.0)
    }

    /// `true` when the sets share an action.
    pub const fn intersects(self, other: ActionType) -> bool {
        self.0 & other.0 != 0
    }

    /// `true` when every action of `other` is in `self`.
    pub const fn contains(self, other: ActionType) -> bool {
        self.0 & other.0 == other.0
    }

    /// `true` for the empty set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// kube-scheduler's name (`Add`, `UpdateNodeLabel`, `Update`, `All`, ...); a
    /// combination kube-scheduler has no name for is written `Add|Delete`.
    pub fn name(self) -> Cow<'static, str> {
        if self == ActionType::ALL {
            return Cow::Borrowed("All");
        }
        if self == ActionType::UPDATE {
            return Cow::Borrowed("Update");
        }
        if self.is_empty() {
            return Cow::Borrowed("None");
        }
        let names: Vec<&str> = ActionType::NAMES
            .iter()
            .filter(|(a, _)| self.contains(*a))
            .map(|(_, n)| *n)
            .collect();
        match names.as_slice() {
            [one] => Cow::Borrowed(*one),
            _ => Cow::Owned(names.join("|")),
        }
    }
}

impl BitOr for ActionType {
    type Output = ActionType;
    fn bitor(self, other: ActionType) -> ActionType {
        self.union(other)
    }
}

impl BitOrAssign for ActionType {
    fn bitor_assign(&mut self, other: ActionType) {
        *self = self.union(other);
    }
}

impl fmt::Debug for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActionType({})", self.name())
    }
}

impl fmt::Display for ActionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A change in the cluster (kube-scheduler's `ClusterEvent`): what kind of object, and
/// what happened to it.
///
/// A plugin registers the events that may make a pod it rejected schedulable; the
/// runtime reports the events it sees, as specifically as it can (one event per kind of
/// node update, for instance).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterEvent {
    /// The kind of object.
    pub resource: EventResource,
    /// What happened to it.
    pub action: ActionType,
    custom_label: Option<&'static str>,
}

impl ClusterEvent {
    /// A node was added.
    pub const NODE_ADD: ClusterEvent = ClusterEvent::new(EventResource::Node, ActionType::ADD);
    /// A node was deleted.
    pub const NODE_DELETE: ClusterEvent =
        ClusterEvent::new(EventResource::Node, ActionType::DELETE);
    /// A pod was bound to a node (or a bound pod appeared).
    pub const ASSIGNED_POD_ADD: ClusterEvent =
        ClusterEvent::new(EventResource::AssignedPod, ActionType::ADD);
    /// A bound pod was deleted, or its place was freed otherwise (an assumed pod
    /// forgotten, a nominated pod deleted).
    pub const ASSIGNED_POD_DELETE: ClusterEvent =
        ClusterEvent::new(EventResource::AssignedPod, ActionType::DELETE);
    /// A pending pod was added to the queue.
    pub const UNSCHEDULABLE_POD_ADD: ClusterEvent =
        ClusterEvent::new(EventResource::UnschedulablePod, ActionType::ADD);
    /// A pending pod was updated in a way no specific action describes.
    pub const UNSCHEDULABLE_POD_UPDATE: ClusterEvent =
        ClusterEvent::new(EventResource::UnschedulablePod, ActionType::UPDATE);
    /// Every event at once: what a plugin that registers nothing specific is
    /// interested in.
    pub const WILDCARD: ClusterEvent = ClusterEvent::new(EventResource::WildCard, ActionType::ALL);
    /// A pod stayed unschedulable longer than `podMaxInUnschedulablePodsDuration`: it is
    /// retried whatever rejected it.
    pub const UNSCHEDULABLE_TIMEOUT: ClusterEvent = ClusterEvent {
        resource: EventResource::WildCard,
        action: ActionType::ALL,
        custom_label: Some("UnschedulableTimeout"),
    };
    /// Every unschedulable pod is retried (kube-scheduler's `ForceActivate`).
    pub const FORCE_ACTIVATE: ClusterEvent = ClusterEvent {
        resource: EventResource::WildCard,
        action: ActionType::ALL,
        custom_label: Some("ForceActivate"),
    };

    /// An event about `resource`.
    pub const fn new(resource: EventResource, action: ActionType) -> ClusterEvent {
        ClusterEvent {
            resource,
            action,
            custom_label: None,
        }
    }

    /// `true` for an event about every resource and every action: it moves every
    /// unschedulable pod, and, registered by a plugin, it matches every event.
    pub fn is_wildcard(&self) -> bool {
        self.resource == EventResource::WildCard && self.action == ActionType::ALL
    }

    /// The `event` label of `scheduler_queue_incoming_pods_total`, as kube-scheduler
    /// writes it: the resource then the action (`NodeAdd`, `NodeUpdateNodeLabel`,
    /// `AssignedPodDelete`), or the event's own name (`UnschedulableTimeout`).
    pub fn label(&self) -> Cow<'static, str> {
        match self.custom_label {
            Some(l) => Cow::Borrowed(l),
            None => Cow::Owned(format!("{}{}", self.resource, self.action)),
        }
    }

    /// `true` when a plugin that registered `self` is interested in `incoming`
    /// (kube-scheduler's `MatchClusterEvents`): `self` is the wildcard, or the
    /// resources match and `incoming`'s action is as specific as one of `self`'s. A
    /// general update (`UPDATE`) only matches a registration of every update; an
    /// incoming wildcard matches only a registered wildcard (the queue moves every pod
    /// on a wildcard anyway).
    pub fn matches(&self, incoming: &ClusterEvent) -> bool {
        self.is_wildcard()
            || (self.resource.matches(incoming.resource)
                && self.action.intersects(incoming.action)
                && incoming.action.bits() <= self.action.bits())
    }
}

impl fmt::Display for ClusterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// The events a node update is, as kube-scheduler's `NodeSchedulingPropertiesChange`
/// reports them, one per kind of change, in this order: the node stopped being
/// unschedulable (reported as `UPDATE_NODE_TAINT`), allocatable, labels, taints,
/// condition statuses, annotations, declared features. Empty when nothing the scheduler
/// reads changed (a heartbeat, a status timestamp), or when the node became
/// unschedulable.
pub fn node_update_events(old: &Node, new: &Node) -> Vec<ClusterEvent> {
    let mut actions = Vec::new();
    let unschedulable = |n: &Node| n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
    if unschedulable(old) && !unschedulable(new) {
        actions.push(ActionType::UPDATE_NODE_TAINT);
    }
    if !same_allocatable(old, new) {
        actions.push(ActionType::UPDATE_NODE_ALLOCATABLE);
    }
    if non_empty(&old.metadata.labels) != non_empty(&new.metadata.labels) {
        actions.push(ActionType::UPDATE_NODE_LABEL);
    }
    let taints = |n: &Node| {
        n.spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
    };
    if taints(old) != taints(new) {
        actions.push(ActionType::UPDATE_NODE_TAINT);
    }
    if condition_statuses(old) != condition_statuses(new) {
        actions.push(ActionType::UPDATE_NODE_CONDITION);
    }
    if non_empty(&old.metadata.annotations) != non_empty(&new.metadata.annotations) {
        actions.push(ActionType::UPDATE_NODE_ANNOTATION);
    }
    let declared = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.declared_features.clone())
            .unwrap_or_default()
    };
    if declared(old) != declared(new) {
        actions.push(ActionType::UPDATE_NODE_DECLARED_FEATURE);
    }
    actions
        .into_iter()
        .map(|a| ClusterEvent::new(EventResource::Node, a))
        .collect()
}

/// The events an update of `old` to `new` is, as kube-scheduler's
/// `PodSchedulingPropertiesChange` reports them: about an
/// [`EventResource::AssignedPod`] when `new` is bound, an
/// [`EventResource::UnschedulablePod`] otherwise; one per kind of change (labels,
/// requests scaled down, scheduling gates all removed, tolerations added, generated
/// resource claims), or a general `UPDATE` when none applies.
pub fn pod_update_events(old: &Pod, new: &Pod) -> Vec<ClusterEvent> {
    let bound = new
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let resource = if bound {
        EventResource::AssignedPod
    } else {
        EventResource::UnschedulablePod
    };
    let mut actions = Vec::new();
    if non_empty(&old.metadata.labels) != non_empty(&new.metadata.labels) {
        actions.push(ActionType::UPDATE_POD_LABEL);
    }
    if scaled_down(old, new) {
        actions.push(ActionType::UPDATE_POD_SCALE_DOWN);
    }
    let gates = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.scheduling_gates.as_ref())
            .map_or(0, Vec::len)
    };
    if gates(new) == 0 && gates(old) != 0 {
        actions.push(ActionType::UPDATE_POD_SCHEDULING_GATES_ELIMINATED);
    }
    let tolerations = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.tolerations.as_ref())
            .map_or(0, Vec::len)
    };
    if tolerations(new) != tolerations(old) {
        actions.push(ActionType::UPDATE_POD_TOLERATION);
    }
    let claim_statuses = |p: &Pod| {
        let status = p.status.as_ref();
        (
            status
                .and_then(|s| s.resource_claim_statuses.clone())
                .unwrap_or_default(),
            status.and_then(|s| s.extended_resource_claim_status.clone()),
        )
    };
    if claim_statuses(old) != claim_statuses(new) {
        actions.push(ActionType::UPDATE_POD_GENERATED_RESOURCE_CLAIM);
    }
    if actions.is_empty() {
        actions.push(ActionType::UPDATE);
    }
    actions
        .into_iter()
        .map(|a| ClusterEvent::new(resource, a))
        .collect()
}

/// A map that is absent or empty is the same as an empty one (Go's semantic equality of
/// nil and empty maps).
fn non_empty<K, V>(m: &Option<BTreeMap<K, V>>) -> Option<&BTreeMap<K, V>> {
    m.as_ref().filter(|m| !m.is_empty())
}

/// `status.allocatable` compared by value (`1` equals `1000m`); a quantity that does not
/// parse is compared as text.
fn same_allocatable(old: &Node, new: &Node) -> bool {
    let empty = BTreeMap::new();
    let allocatable = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .unwrap_or(&empty)
            .clone()
    };
    let (a, b) = (allocatable(old), allocatable(new));
    match (parse_resource_list(&a), parse_resource_list(&b)) {
        (Ok(pa), Ok(pb)) => pa == pb,
        _ => a == b,
    }
}

/// Each condition type's status (kube-scheduler ignores the timestamps and messages).
fn condition_statuses(n: &Node) -> BTreeMap<String, String> {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| (c.type_.clone(), c.status.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// `true` when some resource request of `old` is gone or smaller in `new`
/// (kube-scheduler's `extractPodScaleDown`, on the status-aware requests). When the
/// requests cannot be read, it says yes: a needless retry is harmless, a missed one is
/// not.
fn scaled_down(old: &Pod, new: &Pod) -> bool {
    let opts = PodRequestOptions::default();
    let (Ok(before), Ok(after)) = (
        pod_requests_with_status(old, &opts),
        pod_requests_with_status(new, &opts),
    ) else {
        return true;
    };
    before
        .iter()
        .any(|(name, q)| after.get(name).is_none_or(|n| n.milli() < q.milli()))
}

/// A plugin's answer about an event that matched one of its registrations
/// (kube-scheduler's `QueueingHint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueingHint {
    /// The event may make the pod schedulable: retry it.
    Queue,
    /// The event cannot help the pod: leave it where it is.
    QueueSkip,
}

impl QueueingHint {
    /// [`QueueingHint::Queue`] when `helps`, else [`QueueingHint::QueueSkip`].
    pub fn queue_if(helps: bool) -> QueueingHint {
        if helps {
            QueueingHint::Queue
        } else {
            QueueingHint::QueueSkip
        }
    }
}

/// An object an event is about, as far as the runtime hands it to the
/// [queueing hints](crate::Plugin::queueing_hint).
#[derive(Clone, Debug)]
pub enum EventObject {
    /// A pod (the pod added, updated or deleted).
    Pod(Arc<PodInfo>),
    /// A node (the node added, or the node before and after an update), parsed once
    /// per event into a [`NodeInfo`] of its own, without pods: what kube-scheduler's
    /// hints read (its `isFit` checks the pod against the node empty).
    Node(Arc<NodeInfo>),
    /// An object of another kind, by its identity: kubesched passes the namespace
    /// and name of the gang and quota kinds (Workload, PodGroup, ElasticQuota).
    Named {
        /// The namespace; empty for a cluster-scoped object.
        namespace: String,
        /// The name.
        name: String,
    },
}

impl EventObject {
    /// `node` as an event object; `None` when its quantities do not parse (a hint
    /// then has no node to look at and answers [`QueueingHint::Queue`]).
    pub fn node(node: Arc<Node>) -> Option<EventObject> {
        NodeInfo::new(node)
            .ok()
            .map(|info| EventObject::Node(Arc::new(info)))
    }

    /// A namespaced object by `namespace/name` (or a cluster-scoped one by `name`).
    pub fn from_key(key: &str) -> EventObject {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        EventObject::Named {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// The objects of an incoming event: the object before the change and after it
/// (kube-scheduler's `oldObj`, `newObj`). Either is `None` where the runtime does not
/// have it (an add has no old object, a delete no new one) or does not pass it (a node
/// deleted, the nodes of a relist); a hint that needs a missing object answers
/// [`QueueingHint::Queue`], as kube-scheduler's do when the object is not what they
/// expect.
#[derive(Clone, Debug, Default)]
pub struct EventObjects {
    /// The object before the change.
    pub old: Option<EventObject>,
    /// The object after the change.
    pub new: Option<EventObject>,
}

impl EventObjects {
    /// No object at all: every hint answers [`QueueingHint::Queue`].
    pub const NONE: EventObjects = EventObjects {
        old: None,
        new: None,
    };

    /// An object added (or the object after an update, when the old one does not
    /// matter).
    pub fn added(object: EventObject) -> EventObjects {
        EventObjects {
            old: None,
            new: Some(object),
        }
    }

    /// An object deleted: the object as it was.
    pub fn deleted(object: EventObject) -> EventObjects {
        EventObjects {
            old: Some(object),
            new: None,
        }
    }

    /// The old object, when it is a pod (the pod deleted, or before an update).
    pub fn old_pod(&self) -> Option<&PodInfo> {
        match &self.old {
            Some(EventObject::Pod(p)) => Some(p),
            _ => None,
        }
    }

    /// The new object, when it is a pod.
    pub fn new_pod(&self) -> Option<&PodInfo> {
        match &self.new {
            Some(EventObject::Pod(p)) => Some(p),
            _ => None,
        }
    }

    /// A node added (`old` is `None`) or updated, each parsed once for every hint
    /// asked ([`EventObject::node`]).
    pub fn node_change(old: Option<Arc<Node>>, new: Arc<Node>) -> EventObjects {
        EventObjects {
            old: old.and_then(EventObject::node),
            new: EventObject::node(new),
        }
    }

    /// The new object, when it is a node.
    pub fn new_node(&self) -> Option<&NodeInfo> {
        match &self.new {
            Some(EventObject::Node(n)) => Some(n),
            _ => None,
        }
    }

    /// The old object, when it is a node.
    pub fn old_node(&self) -> Option<&NodeInfo> {
        match &self.old {
            Some(EventObject::Node(n)) => Some(n),
            _ => None,
        }
    }

    /// The new object's `(namespace, name)`, when it is a named object.
    pub fn new_named(&self) -> Option<(&str, &str)> {
        match &self.new {
            Some(EventObject::Named { namespace, name }) => Some((namespace, name)),
            _ => None,
        }
    }
}

/// Which events may make a pod rejected by each plugin schedulable, for each profile:
/// kube-scheduler's `QueueingHintMapPerProfile`. An event helps a pod when it matches
/// what a plugin that rejected the pod registered, and that plugin's
/// [`queueing_hint`](crate::Plugin::queueing_hint) answers [`QueueingHint::Queue`].
#[derive(Clone, Default)]
pub struct QueueingHints {
    profiles: BTreeMap<String, BTreeMap<String, Vec<ClusterEvent>>>,
    /// The plugin instances whose hints are asked, by profile then name (none for
    /// events set with [`QueueingHints::set_plugin_events`]).
    plugins: BTreeMap<String, BTreeMap<String, Arc<dyn Plugin>>>,
}

impl fmt::Debug for QueueingHints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueingHints")
            .field("profiles", &self.profiles)
            .finish_non_exhaustive()
    }
}

impl QueueingHints {
    /// No profile: every event is worth requeuing every pod (the queue's behaviour
    /// before hints).
    pub fn new() -> QueueingHints {
        QueueingHints::default()
    }

    /// The hints of these profiles: each plugin's
    /// [`events_to_register`](crate::Plugin::events_to_register).
    pub fn from_frameworks<'a>(
        frameworks: impl IntoIterator<Item = &'a Framework>,
    ) -> QueueingHints {
        let mut hints = QueueingHints::new();
        for fwk in frameworks {
            let profile = fwk.profile_name().to_string();
            let events = hints.profiles.entry(profile.clone()).or_default();
            let instances = hints.plugins.entry(profile).or_default();
            for (plugin, registered) in fwk.events_by_plugin() {
                events.insert(plugin.clone(), registered.clone());
                if let Some(p) = fwk.plugin(plugin) {
                    instances.insert(plugin.clone(), p.clone());
                }
            }
        }
        hints
    }

    /// Sets one plugin of one profile: its
    /// [`events_to_register`](crate::Plugin::events_to_register), and the plugin
    /// itself, whose [`queueing_hint`](crate::Plugin::queueing_hint) is asked.
    pub fn set_plugin(&mut self, profile: impl Into<String>, plugin: Arc<dyn Plugin>) {
        let profile = profile.into();
        let name = plugin.name().to_string();
        self.profiles
            .entry(profile.clone())
            .or_default()
            .insert(name.clone(), plugin.events_to_register());
        self.plugins
            .entry(profile)
            .or_default()
            .insert(name, plugin);
    }

    /// Sets the events of one plugin of one profile (no hint is asked: each event
    /// that matches counts).
    pub fn set_plugin_events(
        &mut self,
        profile: impl Into<String>,
        plugin: impl Into<String>,
        events: Vec<ClusterEvent>,
    ) {
        let (profile, plugin) = (profile.into(), plugin.into());
        if let Some(instances) = self.plugins.get_mut(&profile) {
            instances.remove(&plugin);
        }
        self.profiles
            .entry(profile)
            .or_default()
            .insert(plugin, events);
    }

    /// `true` when kube-scheduler would report `event` at all: pods and nodes always
    /// ([`EventResource::always_watched`]); any other resource only for the actions
    /// some plugin of some profile registered on exactly that resource, since
    /// kube-scheduler watches a kind only for those (`unionedGVKs`, then
    /// `buildEvtResHandler`). A plugin registered for every event does not make a kind
    /// watched. Hints that know no profile report everything.
    ///
    /// ```
    /// use kubesched_framework::events::{ActionType, ClusterEvent, EventResource, QueueingHints};
    ///
    /// let mut hints = QueueingHints::new();
    /// hints.set_plugin_events(
    ///     "default-scheduler",
    ///     "Coscheduling",
    ///     vec![ClusterEvent::new(EventResource::SIGS_POD_GROUP, ActionType::ADD | ActionType::UPDATE)],
    /// );
    /// hints.set_plugin_events("default-scheduler", "Other", vec![ClusterEvent::WILDCARD]);
    /// let pg = |action| ClusterEvent::new(EventResource::SIGS_POD_GROUP, action);
    /// assert!(hints.reports(&pg(ActionType::UPDATE)));
    /// assert!(!hints.reports(&pg(ActionType::DELETE)));
    /// assert!(!hints.reports(&ClusterEvent::new(EventResource::ELASTIC_QUOTA, ActionType::ADD)));
    /// assert!(hints.reports(&ClusterEvent::NODE_ADD));
    /// ```
    pub fn reports(&self, event: &ClusterEvent) -> bool {
        if event.resource.always_watched() || self.profiles.is_empty() {
            return true;
        }
        let registered = self
            .profiles
            .values()
            .flat_map(|plugins| plugins.values().flatten())
            .filter(|r| r.resource == event.resource)
            .fold(ActionType::NONE, |all, r| all | r.action);
        registered.intersects(event.action)
    }

    /// `true` when `event` may make schedulable a pod of `profile` that `rejected_by`
    /// rejected (kube-scheduler's `isPodWorthRequeuing`, with every hint answering
    /// "queue" once the event matches):
    ///
    /// - a pod that no plugin rejected (an unexpected failure) is worth retrying on
    ///   any event;
    /// - a wildcard event moves every pod;
    /// - otherwise one of the plugins that rejected the pod must have registered a
    ///   matching event ([`ClusterEvent::matches`]).
    ///
    /// A profile or a plugin these hints do not know counts as interested in every
    /// event: retrying too often costs a cycle, never retrying strands the pod.
    ///
    /// This asks no plugin's [`queueing_hint`](crate::Plugin::queueing_hint); see
    /// [`QueueingHints::worth_requeuing_pod`].
    pub fn worth_requeuing(
        &self,
        profile: &str,
        rejected_by: &BTreeSet<String>,
        event: &ClusterEvent,
    ) -> bool {
        self.requeue_check(profile, rejected_by, event, |_| QueueingHint::Queue)
    }

    /// As [`QueueingHints::worth_requeuing`] for `pod` (of the profile it names), and
    /// then each rejecting plugin whose registration matches is asked about the
    /// event's `objects` ([`Plugin::queueing_hint`]):
    /// the pod moves when one answers [`QueueingHint::Queue`] (kube-scheduler's
    /// `isPodWorthRequeuing`).
    pub fn worth_requeuing_pod(
        &self,
        pod: &PodInfo,
        rejected_by: &BTreeSet<String>,
        event: &ClusterEvent,
        objects: &EventObjects,
    ) -> bool {
        let profile = pod.scheduler_name();
        let instances = self.plugins.get(profile);
        self.requeue_check(profile, rejected_by, event, |plugin| {
            match instances.and_then(|i| i.get(plugin)) {
                Some(p) => p.queueing_hint(pod, event, objects),
                None => QueueingHint::Queue,
            }
        })
    }

    fn requeue_check(
        &self,
        profile: &str,
        rejected_by: &BTreeSet<String>,
        event: &ClusterEvent,
        hint: impl Fn(&str) -> QueueingHint,
    ) -> bool {
        if rejected_by.is_empty() || event.is_wildcard() {
            return true;
        }
        let Some(plugins) = self.profiles.get(profile) else {
            return true;
        };
        rejected_by.iter().any(|plugin| match plugins.get(plugin) {
            None => true,
            Some(registered) => {
                registered.iter().any(|r| r.matches(event)) && hint(plugin) == QueueingHint::Queue
            }
        })
    }
}

#[cfg(test)]
mod tests;
