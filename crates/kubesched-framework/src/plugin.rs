//! The extension points: one small object-safe trait each, as in kube-scheduler's
//! framework. A plugin implements [`Plugin`] and the point traits it needs, and names
//! them with [`extension_points!`](crate::extension_points) in its `impl Plugin`. The
//! macro writes the `as_*` methods, which the framework calls once when a profile is
//! built (never in the scheduling loop).
//!
//! ```
//! use kubesched_framework::{CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, Status, Code};
//!
//! /// Rejects nodes labelled `maintenance=true`.
//! struct NoMaintenance;
//! impl Plugin for NoMaintenance {
//!     fn name(&self) -> &str { "NoMaintenance" }
//!     kubesched_framework::extension_points!(Filter);
//! }
//! impl FilterPlugin for NoMaintenance {
//!     fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
//!         if node.label("maintenance") == Some("true") {
//!             Status::new(Code::UnschedulableAndUnresolvable, "node(s) are in maintenance")
//!         } else {
//!             Status::success()
//!         }
//!     }
//! }
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::cycle_state::CycleState;
use crate::events::{ClusterEvent, EventObjects, QueueingHint};
use crate::framework::{Framework, NominatedPods};
use crate::node_info::NodeInfo;
use crate::pod_info::PodInfo;
use crate::snapshot::Snapshot;
use crate::status::{Code, Status};

/// The highest score a Score plugin may give a node after normalisation.
pub const MAX_NODE_SCORE: i64 = 100;
/// The lowest score a Score plugin may give a node after normalisation.
pub const MIN_NODE_SCORE: i64 = 0;

/// Every plugin: a name, and the extension points it implements.
///
/// Each `as_*` method returns `Some(self)` in a plugin that implements that point's
/// trait; the defaults return `None`. [`extension_points!`](crate::extension_points)
/// writes them from the points' names.
pub trait Plugin: Send + Sync {
    /// The plugin's name, exactly as a KubeSchedulerConfiguration spells it.
    fn name(&self) -> &str;

    /// This plugin as a PreEnqueue plugin.
    fn as_pre_enqueue(self: Arc<Self>) -> Option<Arc<dyn PreEnqueuePlugin>> {
        None
    }
    /// This plugin as a QueueSort plugin.
    fn as_queue_sort(self: Arc<Self>) -> Option<Arc<dyn QueueSortPlugin>> {
        None
    }
    /// This plugin as a PreFilter plugin.
    fn as_pre_filter(self: Arc<Self>) -> Option<Arc<dyn PreFilterPlugin>> {
        None
    }
    /// This plugin as a Filter plugin.
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        None
    }
    /// This plugin as a PostFilter plugin.
    fn as_post_filter(self: Arc<Self>) -> Option<Arc<dyn PostFilterPlugin>> {
        None
    }
    /// This plugin as a PreScore plugin.
    fn as_pre_score(self: Arc<Self>) -> Option<Arc<dyn PreScorePlugin>> {
        None
    }
    /// This plugin as a Score plugin.
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        None
    }
    /// This plugin as a Reserve plugin.
    fn as_reserve(self: Arc<Self>) -> Option<Arc<dyn ReservePlugin>> {
        None
    }
    /// This plugin as a Permit plugin.
    fn as_permit(self: Arc<Self>) -> Option<Arc<dyn PermitPlugin>> {
        None
    }
    /// This plugin as a PreBind plugin.
    fn as_pre_bind(self: Arc<Self>) -> Option<Arc<dyn PreBindPlugin>> {
        None
    }
    /// This plugin as a Bind plugin.
    fn as_bind(self: Arc<Self>) -> Option<Arc<dyn BindPlugin>> {
        None
    }
    /// This plugin as a PostBind plugin.
    fn as_post_bind(self: Arc<Self>) -> Option<Arc<dyn PostBindPlugin>> {
        None
    }
    /// This plugin as a PlacementGenerate plugin (v1.36's PodGroup placements).
    fn as_placement_generate(
        self: Arc<Self>,
    ) -> Option<Arc<dyn crate::placement::PlacementGeneratePlugin>> {
        None
    }
    /// This plugin as a PlacementScore plugin (v1.36's PodGroup placements).
    fn as_placement_score(
        self: Arc<Self>,
    ) -> Option<Arc<dyn crate::placement::PlacementScorePlugin>> {
        None
    }

    /// The cluster events that may make schedulable a pod this plugin rejected
    /// (kube-scheduler's `EnqueueExtensions.EventsToRegister`). The scheduling queue
    /// moves a pod out of its unschedulable set only on an event that one of the
    /// plugins that rejected it registered (or after
    /// `podMaxInUnschedulablePodsDuration`); see [`crate::events`].
    ///
    /// It matters for the plugins that can reject a pod (PreEnqueue, PreFilter, Filter,
    /// Reserve, Permit). The default is every event
    /// ([`ClusterEvent::WILDCARD`]): a plugin that says nothing is retried on anything,
    /// which costs cycles but never strands a pod. Register too much rather than too
    /// little, and nothing when the plugin never rejects.
    ///
    /// ```
    /// use kubesched_framework::events::{ActionType, ClusterEvent, EventResource};
    /// use kubesched_framework::Plugin;
    ///
    /// /// Rejects nodes without the label `disk=ssd`.
    /// struct SsdOnly;
    /// impl Plugin for SsdOnly {
    ///     fn name(&self) -> &str { "SsdOnly" }
    ///     // Only a new node, or new labels on a node, can help a pod it rejected.
    ///     fn events_to_register(&self) -> Vec<ClusterEvent> {
    ///         vec![ClusterEvent::new(
    ///             EventResource::Node,
    ///             ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
    ///         )]
    ///     }
    /// }
    /// ```
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::WILDCARD]
    }

    /// Whether `event`, which matched one of this plugin's
    /// [registrations](Plugin::events_to_register), may make `pod` schedulable,
    /// judged from the event's `objects` (kube-scheduler's `QueueingHintFn`). Asked
    /// only for pods this plugin rejected. The default, [`QueueingHint::Queue`], is
    /// kube-scheduler's for a registration without a hint function; a plugin that
    /// needs an object the runtime did not pass answers `Queue` too.
    ///
    /// ```
    /// use kubesched_framework::events::{ActionType, ClusterEvent, EventObjects, EventResource};
    /// use kubesched_framework::{Plugin, PodInfo, QueueingHint};
    ///
    /// /// Waits for a pod with the same `app` label (say, a sidecar's peer).
    /// struct WaitsForPeer;
    /// impl Plugin for WaitsForPeer {
    ///     fn name(&self) -> &str { "WaitsForPeer" }
    ///     fn events_to_register(&self) -> Vec<ClusterEvent> {
    ///         vec![ClusterEvent::new(EventResource::Pod, ActionType::ADD)]
    ///     }
    ///     fn queueing_hint(&self, pod: &PodInfo, _: &ClusterEvent, objects: &EventObjects) -> QueueingHint {
    ///         let app = |p: &PodInfo| p.pod().metadata.labels.as_ref().and_then(|l| l.get("app").cloned());
    ///         match objects.new_pod() {
    ///             Some(added) if app(added) != app(pod) => QueueingHint::QueueSkip,
    ///             _ => QueueingHint::Queue,
    ///         }
    ///     }
    /// }
    /// ```
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &ClusterEvent,
        objects: &EventObjects,
    ) -> QueueingHint {
        let _ = (pod, event, objects);
        QueueingHint::Queue
    }

    /// This plugin's part of the pod's signature (kube-scheduler's
    /// `SignPlugin.SignPod`, for OpportunisticBatching; see [`crate::signature`]):
    /// the fragments of the pod that this plugin's PreFilter, Filter, PreScore and
    /// Score read, such that two pods with equal fragments get the same verdict and
    /// score from it on every node. An error status says the plugin cannot sign this
    /// pod (its answers depend on more than the pod and the node, say), which makes the
    /// pod unbatchable; `Ok(vec![])` says the pod does not matter to the plugin.
    ///
    /// Asked only of the PreFilter, Filter, PreScore and Score plugins. The default
    /// cannot sign, so a profile with a plugin that says nothing never batches:
    /// correct, just not faster. A plugin opts in by naming what it reads:
    ///
    /// ```
    /// use kubesched_framework::signature::SignFragment;
    /// use kubesched_framework::{Plugin, PodInfo, Status};
    ///
    /// /// Filters on the pod's `team` label only.
    /// struct TeamNodes;
    /// impl Plugin for TeamNodes {
    ///     fn name(&self) -> &str { "TeamNodes" }
    ///     fn sign_pod(&self, pod: &PodInfo) -> Result<Vec<SignFragment>, Status> {
    ///         Ok(vec![SignFragment::json("example.com/TeamNodes.team", &pod.label("team"))])
    ///     }
    /// }
    /// ```
    fn sign_pod(&self, pod: &PodInfo) -> Result<Vec<crate::signature::SignFragment>, Status> {
        let _ = pod;
        Err(crate::signature::unsignable(format!(
            "plugin {} does not sign pods",
            self.name()
        )))
    }

    /// Whether this plugin treats `pod` node by node, so that copies of it can be
    /// placed one node at a time (`kubesched capacity` fills each node with copies
    /// instead of scheduling them one by one; see [`crate::Scheduler::fill_nodes`]):
    /// placing pods identical to `pod` on some nodes changes neither this plugin's
    /// PreFilter result for `pod` nor its Filter verdict for `pod` on any other node,
    /// and its Reserve, Permit and binding steps accept `pod` wherever its Filter
    /// does and keep nothing that a later cycle reads.
    ///
    /// Asked of the plugins at PreFilter, Filter, Reserve, Permit, PreBind, Bind and
    /// PostBind (scores do not change where copies end up once every node is full).
    /// The default says no, so a profile with a plugin that says nothing places
    /// copies one at a time: correct, just not faster. A plugin whose verdict reads
    /// only the pod and the node opts in:
    ///
    /// ```
    /// use kubesched_framework::{Plugin, PodInfo};
    ///
    /// /// Filters on the node's labels only.
    /// struct GpuNodes;
    /// impl Plugin for GpuNodes {
    ///     fn name(&self) -> &str { "GpuNodes" }
    ///     fn node_local(&self, _pod: &PodInfo) -> bool { true }
    /// }
    /// ```
    fn node_local(&self, pod: &PodInfo) -> bool {
        let _ = pod;
        false
    }

    /// Whether this plugin's answers for `pod` depend on each node alone, so that the
    /// exact scheduler may keep them per node and recompute only the nodes that changed
    /// ([`crate::Scheduler::set_incremental`]): its PreFilter, PreScore and Score
    /// preparation for `pod` read nothing that placing or removing pods changes (nor
    /// the feasible nodes they are given: a cycle that chooses from kept totals gives
    /// none), and its Filter verdict and Score (before NormalizeScore) on a node read
    /// only that node's [`NodeInfo`]. NormalizeScore may read every node's score: it
    /// runs over every feasible node in every cycle, unless it declares its rule
    /// ([`ScoreExtensions::normalization`]).
    /// `snapshot` is the cluster as it is now (a plugin that reads other nodes' pods may
    /// say yes while none of them matter, as InterPodAffinity does when no pod has
    /// affinity terms).
    ///
    /// Asked of the PreFilter, Filter, PreScore and Score plugins, with the pod's
    /// signature ([`Plugin::sign_pod`]), which must also be given. The default says no:
    /// the profile's pods are then evaluated on every node in every cycle: correct,
    /// just not faster.
    fn node_scoped(&self, pod: &PodInfo, snapshot: &crate::Snapshot) -> bool {
        let _ = (pod, snapshot);
        false
    }

    /// Whether this plugin's Filter verdict or Score for `pod` on a node reads the pods
    /// on that node (their requests, ports, volumes, labels), asked when
    /// [`Plugin::node_scoped`] says yes. Exact incremental scheduling keeps each
    /// plugin's answers apart, under the plugin's own part of the signature: the
    /// answers of a plugin that says no are computed once per node and part, and stay
    /// right while the node object does
    /// ([`NodeInfo::object_generation`](crate::NodeInfo::object_generation)), however
    /// many pods are placed; the others are computed again on a node after every
    /// placement there. The default says yes: correct, just not faster. A plugin that
    /// reads only the node object (labels, taints, images) opts out:
    ///
    /// ```
    /// use kubesched_framework::{Plugin, PodInfo};
    ///
    /// /// Filters on the node's labels only.
    /// struct GpuNodes;
    /// impl Plugin for GpuNodes {
    ///     fn name(&self) -> &str { "GpuNodes" }
    ///     fn reads_node_pods(&self, _pod: &PodInfo) -> bool { false }
    /// }
    /// ```
    fn reads_node_pods(&self, pod: &PodInfo) -> bool {
        let _ = pod;
        true
    }

    /// This plugin's part of the pod's signature for exact incremental scheduling,
    /// asked when [`Plugin::node_scoped`] says yes: the same contract as
    /// [`Plugin::sign_pod`], which it defaults to. A plugin whose batching signature
    /// refuses pods it ignores anyway signs them here (PodTopologySpread refuses every
    /// pod of a profile with default constraints, as kube-scheduler's batching does,
    /// even one that no constraint applies to).
    fn sign_pod_exact(&self, pod: &PodInfo) -> Result<Vec<crate::signature::SignFragment>, Status> {
        self.sign_pod(pod)
    }
}

/// Declares, inside an `impl Plugin`, the extension points the plugin implements: it
/// writes one `as_*` method per point, returning the plugin as that point's trait
/// object. The names are kube-scheduler's: `PreEnqueue`, `QueueSort`, `PreFilter`,
/// `Filter`, `PostFilter`, `PreScore`, `Score`, `Reserve`, `Permit`, `PreBind`, `Bind`,
/// `PostBind`.
///
/// ```
/// use kubesched_framework::{
///     CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, ScorePlugin, Status,
///     extension_points,
/// };
///
/// struct PreferSsd;
/// impl Plugin for PreferSsd {
///     fn name(&self) -> &str {
///         "PreferSsd"
///     }
///     extension_points!(Filter, Score);
/// }
/// impl FilterPlugin for PreferSsd {
///     fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
///         Status::success()
///     }
/// }
/// impl ScorePlugin for PreferSsd {
///     fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
///         Ok(if node.label("disktype") == Some("ssd") { 100 } else { 0 })
///     }
/// }
/// ```
///
/// A point the plugin does not implement the trait of is a compile error naming the
/// trait (`the trait bound `PreferSsd: PreScorePlugin` is not satisfied`), and a name
/// that is no extension point is one listing the points.
#[macro_export]
macro_rules! extension_points {
    ($($point:ident),+ $(,)?) => {
        $( $crate::__extension_point!($point); )+
    };
}

/// One `as_*` method of [`extension_points!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __extension_point {
    (PreEnqueue) => { $crate::__extension_point!(@as as_pre_enqueue PreEnqueuePlugin); };
    (QueueSort) => { $crate::__extension_point!(@as as_queue_sort QueueSortPlugin); };
    (PreFilter) => { $crate::__extension_point!(@as as_pre_filter PreFilterPlugin); };
    (Filter) => { $crate::__extension_point!(@as as_filter FilterPlugin); };
    (PostFilter) => { $crate::__extension_point!(@as as_post_filter PostFilterPlugin); };
    (PreScore) => { $crate::__extension_point!(@as as_pre_score PreScorePlugin); };
    (Score) => { $crate::__extension_point!(@as as_score ScorePlugin); };
    (Reserve) => { $crate::__extension_point!(@as as_reserve ReservePlugin); };
    (Permit) => { $crate::__extension_point!(@as as_permit PermitPlugin); };
    (PreBind) => { $crate::__extension_point!(@as as_pre_bind PreBindPlugin); };
    (Bind) => { $crate::__extension_point!(@as as_bind BindPlugin); };
    (PostBind) => { $crate::__extension_point!(@as as_post_bind PostBindPlugin); };
    (PlacementGenerate) => { $crate::__extension_point!(@as as_placement_generate PlacementGeneratePlugin); };
    (PlacementScore) => { $crate::__extension_point!(@as as_placement_score PlacementScorePlugin); };
    (@as $method:ident $tr:ident) => {
        fn $method(
            self: ::std::sync::Arc<Self>,
        ) -> ::core::option::Option<::std::sync::Arc<dyn $crate::$tr>> {
            ::core::option::Option::Some(self)
        }
    };
    ($other:ident) => {
        ::core::compile_error!(::core::concat!(
            "extension_points!: `",
            ::core::stringify!($other),
            "` is not an extension point; the points are PreEnqueue, QueueSort, PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit, PreBind, Bind, PostBind, PlacementGenerate and PlacementScore"
        ));
    };
}

/// A pod in the scheduling queue.
#[derive(Clone, Debug)]
pub struct QueuedPodInfo {
    /// The pod.
    pub pod_info: Arc<PodInfo>,
    /// When the pod entered the queue, as a monotonically increasing number (the
    /// simulator uses the pod's position in the file).
    pub timestamp: u64,
    /// How many times scheduling was attempted.
    pub attempts: u32,
}

/// PreEnqueue: decides whether a pod may enter the active queue at all.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct NeedsTeam;
/// impl Plugin for NeedsTeam {
///     fn name(&self) -> &str { "NeedsTeam" }
///     extension_points!(PreEnqueue);
/// }
/// impl PreEnqueuePlugin for NeedsTeam {
///     fn pre_enqueue(&self, pod: &PodInfo) -> Status {
///         match pod.label("team") {
///             Some(_) => Status::success(),
///             None => Status::new(Code::UnschedulableAndUnresolvable, "pod has no team label"),
///         }
///     }
/// }
/// assert!(!NeedsTeam.pre_enqueue(&pod).is_success());
/// ```
pub trait PreEnqueuePlugin: Plugin {
    /// `Success` lets the pod in; anything else keeps it out, with a reason.
    fn pre_enqueue(&self, pod: &PodInfo) -> Status;
}

/// QueueSort: orders pending pods. A profile has exactly one, and every profile of a
/// scheduler must use the same one.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct Fifo;
/// impl Plugin for Fifo {
///     fn name(&self) -> &str { "Fifo" }
///     extension_points!(QueueSort);
/// }
/// impl QueueSortPlugin for Fifo {
///     fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool { a.timestamp < b.timestamp }
/// }
/// let queued = |timestamp| QueuedPodInfo { pod_info: pod.clone(), timestamp, attempts: 0 };
/// assert!(Fifo.less(&queued(1), &queued(2)));
/// ```
pub trait QueueSortPlugin: Plugin {
    /// `true` when `a` should be scheduled before `b`.
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool;
}

/// The node names a PreFilter plugin narrows the search to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    /// `None` means every node; `Some(set)` only these nodes.
    pub node_names: Option<BTreeSet<String>>,
}

impl PreFilterResult {
    /// Every node.
    pub fn all_nodes() -> PreFilterResult {
        PreFilterResult { node_names: None }
    }

    /// Only these nodes.
    pub fn only<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> PreFilterResult {
        PreFilterResult {
            node_names: Some(names.into_iter().map(Into::into).collect()),
        }
    }

    /// `true` when every node may be used.
    pub fn is_all_nodes(&self) -> bool {
        self.node_names.is_none()
    }

    /// The intersection of two results (kube-scheduler's `Merge`).
    pub fn merge(self, other: PreFilterResult) -> PreFilterResult {
        match (self.node_names, other.node_names) {
            (None, b) => PreFilterResult { node_names: b },
            (a, None) => PreFilterResult { node_names: a },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.intersection(&b).cloned().collect()),
            },
        }
    }
}

/// PreFilter: per-pod work done once before Filter runs on each node.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// #[derive(Clone)]
/// struct WantsCpu(i64);
/// struct CpuGate;
/// impl Plugin for CpuGate {
///     fn name(&self) -> &str { "CpuGate" }
///     extension_points!(PreFilter);
/// }
/// impl PreFilterPlugin for CpuGate {
///     fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot)
///         -> (Option<PreFilterResult>, Status) {
///         state.write(WantsCpu(pod.requests().milli_cpu)); // once per pod, read per node
///         (None, Status::success())
///     }
/// }
/// let mut state = CycleState::new();
/// let (_, status) = CpuGate.pre_filter(&mut state, &pod, &Snapshot::default());
/// assert!(status.is_success());
/// assert_eq!(state.read::<WantsCpu>().unwrap().0, 500);
/// ```
pub trait PreFilterPlugin: Plugin {
    /// Computes what Filter needs, storing it in `state`. May narrow the node set, or
    /// return `Skip` to have this plugin's Filter skipped for the pod.
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status);

    /// AddPod/RemovePod, for plugins whose pre-computed state depends on other pods
    /// (used when preemption simulates removing victims).
    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        None
    }
}

/// Incremental updates of a PreFilter plugin's state when pods are added to or
/// removed from a node during a what-if evaluation.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct Nothing;
/// impl PreFilterExtensions for Nothing {
///     fn add_pod(&self, _: &mut CycleState, _: &PodInfo, _: &PodInfo, _: &NodeInfo) -> Status { Status::success() }
///     fn remove_pod(&self, _: &mut CycleState, _: &PodInfo, _: &PodInfo, _: &NodeInfo) -> Status { Status::success() }
/// }
/// assert!(Nothing.add_pod(&mut CycleState::new(), &pod, &pod, &node).is_success());
/// ```
pub trait PreFilterExtensions: Send + Sync {
    /// `pod_to_add` is now on `node`.
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
    /// `pod_to_remove` is no longer on `node`.
    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
}

/// Filter: can the pod run on this node? Runs in parallel over nodes.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct SsdOnly;
/// impl Plugin for SsdOnly {
///     fn name(&self) -> &str { "SsdOnly" }
///     extension_points!(Filter);
/// }
/// impl FilterPlugin for SsdOnly {
///     fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
///         if node.label("disk") == Some("ssd") { Status::success() }
///         else { Status::new(Code::Unschedulable, "node(s) had no SSD") }
///     }
/// }
/// assert!(SsdOnly.filter(&CycleState::new(), &pod, &node).is_success());
/// ```
pub trait FilterPlugin: Plugin {
    /// `Success`, or `Unschedulable`/`UnschedulableAndUnresolvable` with reasons.
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;

    /// Filters several nodes at once: pushes `(i, status)` onto `rejected` for each
    /// `nodes[i]` that [`FilterPlugin::filter`] does not pass, in increasing `i`, and
    /// nothing for the nodes that pass.
    ///
    /// The framework calls this in its per-node loop, once per plugin for a run of
    /// nodes, so a plugin pays one dynamic call per run rather than per node. The
    /// default loops over `filter`, dispatched statically so it can be inlined;
    /// override it only to hoist per-pod work (such as reading the cycle state) out of
    /// the loop or to skip, with [`filter_where`], nodes that surely pass, and keep the
    /// answer node for node the same as `filter`'s.
    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        filter_where(self, state, pod, nodes, rejected, |_| true);
    }
}

/// [`FilterPlugin::filter_nodes`] for a plugin that can tell, with a test cheap enough
/// to inline, which nodes it might reject: runs `plugin.filter` on the nodes for which
/// `may_reject` is `true` and records the failures. Every other node must be one that
/// `filter` passes.
#[inline]
pub fn filter_where<P: FilterPlugin + ?Sized>(
    plugin: &P,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    rejected: &mut Vec<(usize, Status)>,
    may_reject: impl Fn(&NodeInfo) -> bool,
) {
    for (i, node) in nodes.iter().enumerate() {
        if may_reject(node)
            && let Some(status) = plugin.filter(state, pod, node).into_failure()
        {
            rejected.push((i, status));
        }
    }
}

/// The statuses of the nodes that failed a scheduling attempt, in node order.
#[derive(Clone, Debug, Default)]
pub struct NodeToStatus {
    /// (node index in node order, status) for every node that was evaluated and failed.
    pub statuses: Vec<(usize, Status)>,
    /// The status of every node that is not in `statuses` and was not evaluated
    /// (left out by a PreFilter result, or every node when PreFilter failed).
    pub absent_nodes_status: Option<Status>,
}

impl NodeToStatus {
    /// The status of the node at `index`, explicit or absent.
    pub fn get(&self, index: usize) -> Option<&Status> {
        self.statuses
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, s)| s)
            .or(self.absent_nodes_status.as_ref())
    }

    /// The number of nodes with an explicit status.
    pub fn len(&self) -> usize {
        self.statuses.len()
    }

    /// `true` when no node has an explicit status.
    pub fn is_empty(&self) -> bool {
        self.statuses.is_empty()
    }

    /// The nodes (indices in node order, ascending) among the first `num_nodes` whose
    /// status has `code`, as kube-scheduler's `NodesForStatusCode`: a node without an
    /// explicit status has the absent nodes' status, which is
    /// `UnschedulableAndUnresolvable` when none was set.
    pub fn nodes_for_status_code(&self, num_nodes: usize, code: Code) -> Vec<usize> {
        let absent = self
            .absent_nodes_status
            .as_ref()
            .map_or(Code::UnschedulableAndUnresolvable, Status::code);
        let mut codes = vec![absent; num_nodes];
        for (i, s) in &self.statuses {
            if let Some(c) = codes.get_mut(*i) {
                *c = s.code();
            }
        }
        codes
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == code)
            .map(|(i, _)| i)
            .collect()
    }
}

/// One node where a PostFilter plugin (preemption) could make the pod fit, as the
/// plugin reports it for explanations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NominationCandidate {
    /// The node's name.
    pub node: String,
    /// The pods (`namespace/name`) that would have to go, in eviction order.
    pub victims: Vec<String>,
    /// How many of the victims' evictions would violate a PodDisruptionBudget.
    pub num_pdb_violations: i64,
    /// The values the plugin compared, in words (for `--explain`).
    pub details: String,
}

/// What a PostFilter plugin proposes: a node for the pod to be nominated to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostFilterResult {
    /// The nominated node's name.
    pub nominated_node_name: Option<String>,
    /// Pods (`namespace/name`) that must go for the pod to fit there.
    pub victims: Vec<String>,
    /// Every candidate the plugin considered, in node order (empty when the plugin
    /// does not report them).
    pub candidates: Vec<NominationCandidate>,
    /// Why the nominated node won among the candidates, in words.
    pub selection_reason: Option<String>,
}

/// What a PostFilter plugin may use besides the pod and the filter statuses: the
/// cluster as the failed attempt saw it, the pods nominated to nodes, and the profile's
/// own [`Framework`], whose PreFilter extensions and Filter plugins a what-if evaluation
/// (preemption's dry run) re-runs on a copy of a node.
#[derive(Clone, Copy)]
pub struct PostFilterContext<'a> {
    /// The profile's framework.
    pub framework: &'a Framework,
    /// The cluster.
    pub snapshot: &'a Snapshot,
    /// Pods nominated to nodes and not bound yet.
    pub nominated_pods: &'a NominatedPods,
}

impl std::fmt::Debug for PostFilterContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostFilterContext")
            .field("profile", &self.framework.profile_name())
            .field("nodes", &self.snapshot.num_nodes())
            .field("nominated_pods", &self.nominated_pods.len())
            .finish()
    }
}

/// PostFilter: runs when no node fits (preemption lives here).
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct GiveUp;
/// impl Plugin for GiveUp {
///     fn name(&self) -> &str { "GiveUp" }
///     extension_points!(PostFilter);
/// }
/// impl PostFilterPlugin for GiveUp {
///     fn post_filter(&self, _: &PostFilterContext<'_>, _: &CycleState, _: &PodInfo,
///         _: &NodeToStatus) -> (Option<PostFilterResult>, Status) {
///         (None, Status::new(Code::Unschedulable, "no preemption here"))
///     }
/// }
/// // Wired once, when a profile is built: the framework asks each plugin for its points.
/// assert!(Arc::new(GiveUp).as_post_filter().is_some());
/// ```
pub trait PostFilterPlugin: Plugin {
    /// Tries to make the pod schedulable; the status message joins the FailedScheduling
    /// message. `state` is the failed attempt's state (after PreFilter); `filtered`
    /// holds every node's Filter status.
    fn post_filter(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status);
}

/// PreScore: per-pod work done once before Score runs on each feasible node.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct SkipWhenSmall;
/// impl Plugin for SkipWhenSmall {
///     fn name(&self) -> &str { "SkipWhenSmall" }
///     extension_points!(PreScore);
/// }
/// impl PreScorePlugin for SkipWhenSmall {
///     fn pre_score(&self, _: &mut CycleState, pod: &PodInfo, _: &[&NodeInfo], _: &Snapshot) -> Status {
///         if pod.requests().milli_cpu < 1000 { Status::new(Code::Skip, "") } else { Status::success() }
///     }
/// }
/// let status = SkipWhenSmall.pre_score(&mut CycleState::new(), &pod, &[&node], &Snapshot::default());
/// assert_eq!(status.code(), Code::Skip);
/// ```
pub trait PreScorePlugin: Plugin {
    /// Computes what Score needs, or returns `Skip` to leave this plugin's Score out.
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status;
}

/// A node's score from one plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeScore {
    /// The node's position in node order.
    pub node_index: usize,
    /// The score.
    pub score: i64,
}

/// Score: ranks a feasible node. Runs in parallel over nodes.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct PreferSsd;
/// impl Plugin for PreferSsd {
///     fn name(&self) -> &str { "PreferSsd" }
///     extension_points!(Score);
/// }
/// impl ScorePlugin for PreferSsd {
///     fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
///         Ok(if node.label("disk") == Some("ssd") { MAX_NODE_SCORE } else { 0 })
///     }
/// }
/// assert_eq!(PreferSsd.score(&CycleState::new(), &pod, &node), Ok(100));
/// ```
pub trait ScorePlugin: Plugin {
    /// The node's raw score.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// Scores several nodes at once: sets `out[i]` to what [`ScorePlugin::score`] gives
    /// for `nodes[i]` (the slices have the same length), or returns the first error.
    ///
    /// As with [`FilterPlugin::filter_nodes`], the default loops over `score`; override
    /// it to read the cycle state once per run of nodes instead of once per node.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        for (node, out) in nodes.iter().zip(out) {
            *out = self.score(state, pod, node)?;
        }
        Ok(())
    }

    /// NormalizeScore, for plugins whose raw scores need rescaling to 0..=100.
    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        None
    }

    /// Work done once per pod before its nodes are scored, where the plugin it mirrors
    /// does that work inside Score (kubesched's ImageLocality sums image sizes over the
    /// snapshot once instead of per node). Not an extension point: it runs for every
    /// Score plugin that will score, after the PreScore plugins, whatever the profile
    /// enables at PreScore, and it cannot fail. The default does nothing; work that can
    /// fail, or that the profile may turn off, belongs in [`PreScorePlugin::pre_score`].
    fn prepare(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _nodes: &[&NodeInfo],
        _snapshot: &Snapshot,
    ) {
    }
}

/// NormalizeScore: rescales all the feasible nodes' raw scores of one plugin at once.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct Halve;
/// impl ScoreExtensions for Halve {
///     fn normalize_score(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
///         scores.iter_mut().for_each(|s| s.score /= 2);
///         Status::success()
///     }
/// }
/// let mut scores = [NodeScore { node_index: 0, score: 80 }];
/// Halve.normalize_score(&CycleState::new(), &pod, &mut scores);
/// assert_eq!(scores[0].score, 40);
/// ```
pub trait ScoreExtensions: Send + Sync {
    /// Rewrites `scores` in place.
    fn normalize_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        scores: &mut [NodeScore],
    ) -> Status;

    /// What [`ScoreExtensions::normalize_score`] does in this cycle (PreScore has run),
    /// when it is one of the rules of [`Normalization`]: incremental scheduling then
    /// keeps the normalised scores from cycle to cycle and recomputes them only when a
    /// node changed or the highest raw score moved. The default,
    /// [`Normalization::Opaque`], is always right; a plugin that declares a rule must
    /// normalise exactly as it says.
    fn normalization(&self, _state: &CycleState) -> Normalization {
        Normalization::Opaque
    }
}

/// How a plugin's NormalizeScore turns raw scores into final ones
/// ([`ScoreExtensions::normalization`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalization {
    /// The scores stay as Score gave them.
    Identity,
    /// kube-scheduler's `DefaultNormalizeScore(MaxNodeScore, reverse, scores)`: each
    /// score scaled against the highest over the feasible nodes
    /// ([`scale_to_max_score`]).
    ScaledToMax {
        /// Whether the scaled score is taken from [`MAX_NODE_SCORE`] (lower is better).
        reverse: bool,
    },
    /// The lowest raw score over the feasible nodes to [`MIN_NODE_SCORE`], the
    /// highest to [`MAX_NODE_SCORE`], linearly in integers ([`min_max_score`]): the
    /// normalisation of the GPU-sharing simulators' policies (open-simulator's, the
    /// FGD paper's).
    MinMax,
    /// Anything else: NormalizeScore runs over every feasible node in every cycle.
    Opaque,
}

/// One score normalised min–max ([`Normalization::MinMax`]), given the lowest and the
/// highest raw score over the feasible nodes: `(raw - lowest) * MaxNodeScore /
/// (highest - lowest)` in integers, [`MIN_NODE_SCORE`] for every node when they are
/// equal.
pub fn min_max_score(raw: i64, lowest: i64, highest: i64) -> i64 {
    if highest == lowest {
        return MIN_NODE_SCORE;
    }
    (raw - lowest) * MAX_NODE_SCORE / (highest - lowest)
}

/// One score of kube-scheduler's `DefaultNormalizeScore(MaxNodeScore, reverse)`, given
/// the highest raw score over the feasible nodes (`max`, at least 0): `MaxNodeScore *
/// raw / max` in integers, taken from `MaxNodeScore` when `reverse`; when `max` is 0,
/// every score is `MaxNodeScore` if `reverse`, else stays as it was.
pub fn scale_to_max_score(raw: i64, max: i64, reverse: bool) -> i64 {
    if max == 0 {
        return if reverse { MAX_NODE_SCORE } else { raw };
    }
    let scaled = MAX_NODE_SCORE * raw / max;
    if reverse {
        MAX_NODE_SCORE - scaled
    } else {
        scaled
    }
}

/// Reserve/Unreserve: claim or release what the pod will use on its node.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// #[derive(Default)]
/// struct Ledger(std::sync::Mutex<Vec<String>>);
/// impl Plugin for Ledger {
///     fn name(&self) -> &str { "Ledger" }
///     extension_points!(Reserve);
/// }
/// impl ReservePlugin for Ledger {
///     fn reserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
///         self.0.lock().unwrap().push(pod.key().to_string());
///         Status::success()
///     }
///     fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
///         self.0.lock().unwrap().retain(|k| k != pod.key());
///     }
/// }
/// let ledger = Ledger::default();
/// ledger.reserve(&mut CycleState::new(), &pod, "n1");
/// ledger.unreserve(&mut CycleState::new(), &pod, "n1");
/// assert!(ledger.0.lock().unwrap().is_empty());
/// ```
pub trait ReservePlugin: Plugin {
    /// Called when the pod is assumed on `node`.
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;
    /// Called when a later step fails; must undo `reserve` and be idempotent.
    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str);
}

/// Permit: approve, deny or delay the binding.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct Approve;
/// impl Plugin for Approve {
///     fn name(&self) -> &str { "Approve" }
///     extension_points!(Permit);
/// }
/// impl PermitPlugin for Approve {
///     fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> (Status, Duration) {
///         (Status::success(), Duration::ZERO)
///     }
/// }
/// assert!(Approve.permit(&mut CycleState::new(), &pod, "n1").0.is_success());
/// ```
pub trait PermitPlugin: Plugin {
    /// `Success`, a rejection, or `Wait` with the longest time to wait (cut to
    /// [`MAX_PERMIT_WAIT`](crate::waiting::MAX_PERMIT_WAIT)). A waiting pod stays
    /// assumed on `node` until every plugin that asked to wait allows it, one
    /// rejects it, or a wait runs out; plugins decide it through
    /// [`Handle::waiting_pods`](crate::Handle::waiting_pods).
    fn permit(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> (Status, Duration);
}

/// PreBind: work before the pod is bound (attach volumes, ...).
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct Ready;
/// impl Plugin for Ready {
///     fn name(&self) -> &str { "Ready" }
///     extension_points!(PreBind);
/// }
/// impl PreBindPlugin for Ready {
///     fn pre_bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status { Status::success() }
/// }
/// assert!(Ready.pre_bind(&mut CycleState::new(), &pod, "n1").is_success());
/// ```
pub trait PreBindPlugin: Plugin {
    /// Anything but `Success` aborts the binding.
    fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;

    /// kube-scheduler's `PreBindPreFlight`: whether [`PreBindPlugin::pre_bind`] has
    /// work for `pod` on `node`, asked before it runs. `Success`: it may have (it runs);
    /// `Skip`: it has none (it would return `Success` without writing or waiting), and
    /// is not called this cycle; `Error` fails the binding. Any other code is an
    /// error. Must be cheap and must not block.
    ///
    /// A runtime binds a pod whose PreBind plugins all skip without a blocking thread
    /// ([`Framework::run_pre_bind_pre_flights`](crate::Framework::run_pre_bind_pre_flights)).
    /// The default, `Success`, is always correct.
    fn pre_bind_pre_flight(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        let _ = (state, pod, node);
        Status::success()
    }

    /// The same work as [`PreBindPlugin::pre_bind`] as a future that holds no thread
    /// while it writes or waits, or `None` (the default) when the plugin only has the
    /// synchronous form. The plugin reads what it needs from `state` now; nothing is
    /// written before the future is first polled.
    ///
    /// A runtime awaits these in a task when every PreBind plugin with work this
    /// cycle offers one ([`Framework::pre_bind_async`](crate::Framework::pre_bind_async));
    /// otherwise it runs [`PreBindPlugin::pre_bind`] on a blocking thread. A plugin
    /// whose `pre_bind` blocks (an API write, a wait) should offer it.
    fn pre_bind_async(
        &self,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        node: &str,
    ) -> Option<PreBindFuture> {
        let _ = (state, pod, node);
        None
    }
}

/// A PreBind plugin's work in flight ([`PreBindPlugin::pre_bind_async`]): it resolves
/// to what [`PreBindPlugin::pre_bind`] would return.
pub type PreBindFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Status> + Send + 'static>>;

/// Bind: writes the binding. The first Bind plugin that does not return `Skip` decides.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct NotMine;
/// impl Plugin for NotMine {
///     fn name(&self) -> &str { "NotMine" }
///     extension_points!(Bind);
/// }
/// impl BindPlugin for NotMine {
///     // Leaves the pod to the next Bind plugin (DefaultBinder).
///     fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status { Status::new(Code::Skip, "") }
/// }
/// assert_eq!(NotMine.bind(&mut CycleState::new(), &pod, "n1").code(), Code::Skip);
/// ```
pub trait BindPlugin: Plugin {
    /// Binds the pod to the node.
    fn bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status;

    /// The [`PodBinder`](crate::PodBinder) this plugin binds through, when its
    /// [`BindPlugin::bind`] is exactly that binder's `bind` (`Ok` as `Success`, `Err`
    /// as an `Error` with its message) and nothing else, as DefaultBinder's is. A
    /// runtime may then await the binder's [`PodBinder::bind_async`](crate::PodBinder::bind_async)
    /// instead of calling `bind` on a blocking thread ([`Framework::bind_async`](crate::Framework::bind_async)).
    /// `None` (the default) for any other Bind plugin.
    fn pod_binder(&self) -> Option<&Arc<dyn crate::PodBinder>> {
        None
    }
}

/// PostBind: informational, after a successful bind.
///
/// # Example
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use kubesched_framework::*;
/// # use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// # let node = NodeInfo::new(NodeBuilder::new("n1").cpu_millis(4000).label("disk", "ssd").node()).unwrap();
/// # let pod = PodBuilder::new("default", "web").cpu_millis(500).pod_info().unwrap();
/// struct Log;
/// impl Plugin for Log {
///     fn name(&self) -> &str { "Log" }
///     extension_points!(PostBind);
/// }
/// impl PostBindPlugin for Log {
///     fn post_bind(&self, _: &mut CycleState, pod: &PodInfo, node: &str) {
///         println!("{} bound to {node}", pod.key());
///     }
/// }
/// Log.post_bind(&mut CycleState::new(), &pod, "n1");
/// ```
pub trait PostBindPlugin: Plugin {
    /// Called once the pod is bound.
    fn post_bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str);
}
