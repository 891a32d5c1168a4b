//! # kubesched-framework
//!
//! The core of kubesched: kube-scheduler's scheduling framework as a Rust library.
//!
//! - [`plugin`]: one small object-safe trait per extension point (QueueSort,
//!   PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit, PreBind, Bind,
//!   PostBind; and v1.36's [`placement`] points, PlacementGenerate and PlacementScore,
//!   for PodGroup cycles), all `Send + Sync`;
//! - [`Status`] with kube-scheduler's codes and reasons, [`CycleState`] for typed
//!   per-cycle data;
//! - [`NodeInfo`] and [`Snapshot`]: the cluster with exact resource accounting
//!   ([`quantity`] follows apimachinery's rules, [`resource`] kube-scheduler's request
//!   arithmetic);
//! - [`StorageObjects`]: the storage API objects the volume plugins read;
//! - [`Registry`] (plugin name → factory) and [`Framework`] (one per profile, built from
//!   a `kubesched_config::Profile`);
//! - [`Scheduler`]: the scheduling cycle over profiles that share one snapshot;
//! - [`SchedulingQueue`] (`queue`) and [`events`]: kube-scheduler's scheduling queue,
//!   which retries an unschedulable pod only on the cluster events that the plugins
//!   that rejected it registered.
//!
//! Sibling crates: `kubesched-config` (KubeSchedulerConfiguration),
//! `kubesched-plugins` (the in-tree plugins), `kubesched-sim` (the `kubesched` CLI).
//!
//! ```
//! use std::sync::Arc;
//! use kubesched_framework::{Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, Status};
//!
//! struct OnlyLinux;
//! impl Plugin for OnlyLinux {
//!     fn name(&self) -> &str { "OnlyLinux" }
//!     fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> { Some(self) }
//! }
//! impl FilterPlugin for OnlyLinux {
//!     fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
//!         match node.label("kubernetes.io/os") {
//!             Some("linux") => Status::success(),
//!             _ => Status::new(Code::UnschedulableAndUnresolvable, "node(s) are not linux"),
//!         }
//!     }
//! }
//! ```

// Not API: the exact-search engine's internals, public for the sibling crates only
// (docs/api-stability.md).
#[doc(hidden)]
pub mod batch;
pub mod build;
pub mod cycle_state;
pub mod dra;
pub mod events;
pub mod features;
pub mod fill;
pub mod framework;
// Not API: the exact-search engine's internals, public for the sibling crates only
// (docs/api-stability.md).
#[doc(hidden)]
pub mod incremental;
pub mod live;
pub mod node_info;
pub mod observer;
pub mod placement;
pub mod plugin;
pub mod pod_info;
pub mod quantity;
pub mod queue;
pub mod registry;
pub mod resource;
pub mod schedule;
pub mod signature;
pub mod snapshot;
pub mod status;
pub mod storage;
pub mod waiting;
pub mod writer;

pub use cycle_state::{CycleState, PodsToActivate, StateData};
pub use dra::{AllocatedDevices, DeviceId, DraCatalog, DraState};
pub use events::{
    ActionType, ClusterEvent, EventObject, EventObjects, EventResource, QueueingHint, QueueingHints,
};
pub use features::{Features, KubernetesVersion};
pub use fill::NoFill;
pub use framework::{Framework, FrameworkError, NominatedPods, ScoreTable};
pub use live::{LiveCursor, LiveObjects};
pub use node_info::{BaseResources, HostPortInfo, ImageStateSummary, NodeCounts, NodeInfo};
pub use observer::{PluginObserver, RecordPluginMetrics};
pub use placement::{
    InPlacement, Placement, PlacementGeneratePlugin, PlacementScorePlugin, PodGroupAssignments,
    PodGroupRef,
};
pub use plugin::*;
pub use pod_info::{DEFAULT_SCHEDULER_NAME, HostPort, PodInfo};
pub use queue::{
    Clock, FakeClock, QueueName, QueueOptions, QueuedPod, SchedulingQueue, SystemClock,
};
pub use registry::{BindFuture, Handle, PluginError, PluginFactory, PodBinder, Registry};
pub use schedule::{
    Diagnosis, FitError, HostSelection, NO_FEASIBLE_PLACEMENTS, NodeSearch, Outcome,
    PlacementChoice, PlacementTrial, PlacementTrials, PodGroupCondition, PodGroupCycle,
    PodGroupVerdict, ScheduleError, ScheduleResult, Scheduler, SchedulerError, SchedulerOptions,
    VerdictSoFar, choose_placement, mixed_schedulers_message, other_pod_failed_message,
    pod_group_unschedulable_message,
};
pub use snapshot::{ChangeMark, ClusterObjects, CustomObject, Snapshot, SnapshotError};
pub use status::{Code, Reason, Status};
pub use storage::StorageObjects;
pub use waiting::{WaitingPod, WaitingPods};
pub use writer::{BindingCheck, BindingView, ClusterWriter, WriteError, WriteFuture};
