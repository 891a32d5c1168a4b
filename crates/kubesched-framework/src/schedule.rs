//! The scheduling cycle of one pod, as kube-scheduler's `schedulePod` and
//! `scheduleOne`: PreFilter → Filter → PreScore → Score → select host → assume →
//! Reserve → Permit → PreBind → Bind → PostBind, unreserving and forgetting the pod
//! when a step after assume fails. [`Scheduler`] holds the profiles and the cluster
//! [`Snapshot`] that all of them share.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use crate::batch::{NodeHint, OpportunisticBatch};
use crate::cycle_state::{CycleState, PodsToActivate};
use crate::framework::{Framework, NominatedPods, PARALLEL_THRESHOLD, ScoreTable};
use crate::incremental::{Changed, Cycle, IncrementalCache, Key};
use crate::node_info::NodeInfo;
use crate::observer::RecordPluginMetrics;
use crate::plugin::{NodeToStatus, PostFilterResult, QueuedPodInfo};
use crate::pod_info::PodInfo;
use crate::queue::{Clock, SystemClock};
use crate::snapshot::Snapshot;
use crate::status::{Code, Status};

mod filtering;
mod placements;
mod pod_group;
mod selection;

pub use placements::{
    NO_FEASIBLE_PLACEMENTS, PlacementChoice, PlacementTrial, PlacementTrials, choose_placement,
};
pub use pod_group::{
    PodGroupCondition, PodGroupCycle, PodGroupVerdict, VerdictSoFar, mixed_schedulers_message,
    other_pod_failed_message, pod_group_unschedulable_message,
};

use selection::sorted_other_nodes;

/// kube-scheduler never searches fewer nodes than this (unless the cluster is smaller).
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// The adaptive percentage of nodes to score never goes below this.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// How the chosen node is picked among the nodes with the highest total score.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostSelection {
    /// The first in node order: deterministic, as FORMAT.md and tests want.
    FirstInNodeOrder,
    /// Uniformly at random among the best, from a seed (reproducible).
    Random {
        /// The seed of the generator.
        seed: u64,
    },
}

/// Which nodes are evaluated for a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeSearch {
    /// Every node is filtered and every feasible node scored.
    Exhaustive,
    /// kube-scheduler's search: from a round-robin start node, stop once
    /// `percentageOfNodesToScore` (or the adaptive formula) feasible nodes are found.
    Adaptive,
}

/// How a [`Scheduler`] runs.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// The pick among equal best scores.
    pub host_selection: HostSelection,
    /// Which nodes are evaluated.
    pub node_search: NodeSearch,
    /// The configuration's global `percentageOfNodesToScore` (profiles may override).
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Run PostFilter plugins (preemption) when no node fits.
    pub run_post_filter: bool,
    /// kube-scheduler's OpportunisticBatching ([`crate::batch`]): a pod with the
    /// signature of the previous one may go to the next node of the previous cycle's
    /// scores without a search. Set it where kube-scheduler's behaviour is wanted and
    /// the `OpportunisticBatching` gate is on; never for results that must evaluate
    /// every node (FORMAT.md).
    pub batching: bool,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        SchedulerOptions {
            host_selection: HostSelection::FirstInNodeOrder,
            node_search: NodeSearch::Exhaustive,
            percentage_of_nodes_to_score: None,
            run_post_filter: false,
            batching: false,
        }
    }
}

/// Why the nodes were rejected, as kube-scheduler's `Diagnosis`.
#[derive(Clone, Debug, Default)]
pub struct Diagnosis {
    /// Each rejected node's status.
    pub node_to_status: NodeToStatus,
    /// The plugins that rejected some node.
    pub unschedulable_plugins: BTreeSet<String>,
    /// The message of a failed PreFilter.
    pub pre_filter_msg: Option<String>,
    /// The message of the PostFilter plugins.
    pub post_filter_msg: Option<String>,
}

impl Diagnosis {
    fn add_plugin_status(&mut self, status: &Status) {
        // Looked up before it is inserted: a diagnosis meets the same plugin on most
        // of the rejected nodes, and only the first needs its name copied.
        if status.is_rejected()
            && let Some(p) = status.plugin()
            && !self.unschedulable_plugins.contains(p)
        {
            self.unschedulable_plugins.insert(p.to_string());
        }
    }
}

/// No node fits the pod.
#[derive(Clone, Debug)]
pub struct FitError {
    /// The number of nodes in the cluster.
    pub num_all_nodes: usize,
    /// Why.
    pub diagnosis: Diagnosis,
}

impl FitError {
    /// What kube-scheduler reports when Reserve, Permit or the wait at Permit rejects
    /// a pod on the node chosen for it (`host`, its index): a FitError over that one
    /// node with the plugin's status (`0/1 nodes are available: 1 rejected due to
    /// timeout after waiting 5m0s at plugin GangScheduling.`).
    pub fn on_chosen_node(host: usize, status: Status) -> FitError {
        let mut diagnosis = Diagnosis::default();
        diagnosis.add_plugin_status(&status);
        diagnosis.node_to_status.statuses.push((host, status));
        FitError {
            num_all_nodes: 1,
            diagnosis,
        }
    }
}

impl fmt::Display for FitError {
    /// kube-scheduler's `FitError.Error()`: "0/N nodes are available: " with the
    /// PreFilter message, or the reasons histogram sorted as strings, then the
    /// PostFilter message as the plugins wrote it (no period added).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available:", self.num_all_nodes)?;
        let d = &self.diagnosis;
        match &d.pre_filter_msg {
            Some(msg) => write!(f, " {msg}.")?,
            None => {
                let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
                for (_, status) in &d.node_to_status.statuses {
                    for r in status.reasons() {
                        *counts.entry(r).or_default() += 1;
                    }
                }
                let absent = self.num_all_nodes.saturating_sub(d.node_to_status.len());
                if absent > 0
                    && let Some(status) = &d.node_to_status.absent_nodes_status
                {
                    for r in status.reasons() {
                        *counts.entry(r).or_default() += absent;
                    }
                }
                let mut histogram: Vec<String> = counts
                    .into_iter()
                    .map(|(r, n)| format!("{n} {r}"))
                    .collect();
                histogram.sort();
                if !histogram.is_empty() {
                    write!(f, " {}.", histogram.join(", "))?;
                }
            }
        }
        if let Some(msg) = &d.post_filter_msg {
            write!(f, " {msg}")?;
        }
        Ok(())
    }
}

/// The pod could not be scheduled.
#[derive(Clone, Debug)]
pub enum ScheduleError {
    /// The cluster has no nodes.
    NoNodesAvailable,
    /// No node fits.
    Unfit(Box<FitError>),
    /// A plugin failed with an error.
    Internal(Status),
    /// A plugin failed with an error once Filter had run: in Filter on some node, or in
    /// PreScore or Score. `diagnosis` holds the nodes the attempt's Filter calls
    /// rejected, which kube-scheduler reports with the error (it evaluates the nodes in
    /// parallel, so the other Filter calls complete).
    FailedAfterFilter {
        /// The error.
        status: Status,
        /// The nodes rejected in the same attempt.
        diagnosis: Box<Diagnosis>,
    },
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::NoNodesAvailable => f.write_str("no nodes available to schedule pods"),
            ScheduleError::Unfit(e) => e.fmt(f),
            ScheduleError::Internal(s) | ScheduleError::FailedAfterFilter { status: s, .. } => {
                f.write_str(&s.message())
            }
        }
    }
}

impl std::error::Error for ScheduleError {}

/// Where a pod should go, and what was found on the way.
#[derive(Clone, Debug)]
pub struct ScheduleResult {
    /// The chosen node's position in node order.
    pub suggested_host: usize,
    /// How many nodes were evaluated.
    pub evaluated_nodes: usize,
    /// How many nodes passed the filters.
    pub feasible_nodes: usize,
    /// The feasible nodes' scores (empty when scoring was skipped: one feasible node).
    pub scores: ScoreTable,
    /// The nodes that were rejected, and why.
    pub diagnosis: Diagnosis,
}

/// What happened to one pod.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// No profile has the pod's scheduler name.
    NotOurs,
    /// A PreEnqueue plugin (SchedulingGates) keeps the pod out of the queue.
    Gated(Status),
    /// The pod was bound to `node`.
    Scheduled {
        /// The node's name.
        node: String,
        /// The details of the decision.
        result: ScheduleResult,
    },
    /// No node fits (or a plugin failed).
    Unschedulable {
        /// Why.
        error: ScheduleError,
        /// What PostFilter proposed, when it ran and nominated a node.
        nominated: Option<PostFilterResult>,
    },
    /// A Permit plugin asked the pod to wait: it stays assumed on `node` (its
    /// resources count for later pods) until a plugin allows or rejects it or its
    /// wait runs out ([`Scheduler::resolve_waiting`], [`Scheduler::time_out_waiting`]
    /// give its final outcome).
    Waiting {
        /// The node it is assumed on.
        node: String,
        /// The details of the decision.
        result: ScheduleResult,
    },
    /// A node was chosen but Reserve or Permit failed with an error, or the binding
    /// cycle failed (PreBind, Bind, or a rejection or timeout while the pod waited at
    /// Permit); the pod was unreserved and forgotten. (A Reserve or Permit rejection
    /// in the scheduling cycle is [`Outcome::Unschedulable`], a FitError over the
    /// chosen node, as kube-scheduler reports it.)
    BindingFailed {
        /// The node that had been chosen.
        node: String,
        /// The failure.
        status: Status,
    },
}

/// A small, fast, seedable generator (SplitMix64) for the random host pick.
#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Why a scheduler could not be assembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    /// Two profiles have the same scheduler name.
    #[error("duplicate profile for scheduler name {0:?}")]
    DuplicateProfile(String),
    /// Profiles disagree on the QueueSort plugin (one queue serves them all).
    #[error("all profiles must use the same queue sort plugin: {0:?} uses {1:?}, {2:?} uses {3:?}")]
    QueueSortMismatch(String, String, String, String),
    /// There is no profile.
    #[error("at least one profile is required")]
    NoProfiles,
    /// [`Scheduler::set_profiles`] was given profiles other than the scheduler's (by
    /// number or scheduler name).
    #[error("the new profiles must have the scheduler names of the old ones, in order")]
    ProfilesChanged,
}

/// Profiles sharing one cluster snapshot and one queue order: kube-scheduler's
/// `Scheduler` without the API server.
///
/// ```
/// use std::sync::Arc;
/// use kubesched_config::{KubeSchedulerConfiguration, PluginRef};
/// use kubesched_framework::build::{NodeBuilder, PodBuilder};
/// use kubesched_framework::*;
///
/// // A one-plugin profile: a QueueSort, a Filter and a Bind of our own.
/// struct Fits;
/// impl Plugin for Fits {
///     fn name(&self) -> &str { "Fits" }
///     extension_points!(QueueSort, Filter, Bind);
/// }
/// impl BindPlugin for Fits {
///     fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status { Status::success() }
/// }
/// impl QueueSortPlugin for Fits {
///     fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool { a.timestamp < b.timestamp }
/// }
/// impl FilterPlugin for Fits {
///     fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
///         if pod.requests().milli_cpu <= node.allocatable().milli_cpu - node.requested().milli_cpu {
///             Status::success()
///         } else {
///             Status::new(Code::Unschedulable, "Insufficient cpu")
///         }
///     }
/// }
/// let mut registry = Registry::new();
/// registry.register("Fits", |_, _| Ok(Arc::new(Fits))).unwrap();
/// let mut config = KubeSchedulerConfiguration::default_config();
/// let profile = &mut config.profiles[0];
/// profile.user_plugins = None; // not over kube-scheduler's defaults
/// profile.plugins = Default::default();
/// profile.plugins.queue_sort.enabled.push(PluginRef::new("Fits"));
/// profile.plugins.filter.enabled.push(PluginRef::new("Fits"));
/// profile.plugins.bind.enabled.push(PluginRef::new("Fits"));
/// let framework = Framework::new(profile, &registry, &Handle::default()).unwrap();
///
/// let nodes = [NodeBuilder::new("small").cpu_millis(1000), NodeBuilder::new("big").cpu_millis(8000)];
/// let (snapshot, _) = Snapshot::new(nodes.map(|n| n.node()), []).unwrap();
/// let mut scheduler = Scheduler::new(vec![framework], snapshot, SchedulerOptions::default()).unwrap();
/// let pod = PodBuilder::new("default", "web").cpu_millis(2000).pod_info().unwrap();
/// match scheduler.schedule_one(&pod) {
///     Outcome::Scheduled { node, .. } => assert_eq!(node, "big"),
///     other => panic!("{other:?}"),
/// }
/// ```
pub struct Scheduler {
    profiles: Vec<Arc<Framework>>,
    snapshot: Snapshot,
    options: SchedulerOptions,
    nominated_pods: NominatedPods,
    next_start_node_index: usize,
    /// The placement a PodGroup cycle is trying (v1.36's placements): its pods see
    /// only these nodes.
    placement: Option<crate::placement::Placement>,
    rng: SplitMix64,
    /// The pod (`namespace/name`) whose cycles are explained (see
    /// [`Scheduler::set_explained_pod`]).
    explained_pod: Option<String>,
    /// Each profile's batching state (used when [`SchedulerOptions::batching`]).
    batches: Vec<OpportunisticBatch>,
    /// The current scheduling cycle (see [`Scheduler::set_scheduling_cycle`]).
    cycle: u64,
    /// Where batching reads the time (the age of its kept results).
    clock: Arc<dyn Clock>,
    /// The kept verdicts and scores, when scheduling incrementally
    /// ([`Scheduler::set_incremental`]).
    incremental: Option<IncrementalCache>,
    /// The budget of [`Scheduler::set_incremental_budget`].
    incremental_budget: Option<usize>,
    /// Only the decision of a cycle is read ([`Scheduler::set_decisions_only`]).
    decisions_only: bool,
    /// The pods waiting at Permit, with their binding cycles paused.
    parked: VecDeque<Parked>,
    /// The time the waits are measured in (nanoseconds; see
    /// [`Scheduler::set_permit_time`]).
    permit_time: u64,
    /// The pods the last cycle's plugins asked to retry now (see
    /// [`Scheduler::pods_to_activate`]).
    to_activate: Vec<String>,
}

/// A binding cycle paused at Permit (kube-scheduler's binding goroutine blocked in
/// `WaitOnPermit`).
struct Parked {
    profile: usize,
    state: CycleState,
    pod: Arc<PodInfo>,
    assumed: Arc<PodInfo>,
    node: String,
    result: ScheduleResult,
    /// Permit's status: Wait for a parked pod; Success or Wait for a [`PastPermit`].
    wait: Status,
}

/// Where a scheduling cycle stopped ([`Scheduler::cycle_to_permit`]). Returned once
/// per cycle and taken apart at once: boxing the larger variant would cost an
/// allocation per pod on the hot path for nothing.
#[allow(clippy::large_enum_variant)]
enum ToPermit {
    /// The pod's final outcome.
    Decided(Outcome),
    /// Past Permit, not bound yet.
    Past(PastPermit),
}

/// A pod that passed Permit or waits there ([`Parked::wait`] says which), assumed on
/// its node, not bound yet.
struct PastPermit {
    parked: Parked,
    /// For a PodGroup cycle's pod that PostFilter nominated a node for (and that was
    /// assumed there): its failure and the nomination.
    preempting: Option<(ScheduleError, PostFilterResult)>,
}

/// The nodes that passed Filter.
enum Passed {
    /// Their indices: in node order for an exhaustive search, in search order
    /// otherwise.
    Listed(Vec<usize>),
    /// Their indices in node order, from the verdicts incremental scheduling kept:
    /// every node was evaluated, and the rejected ones are not listed, since only the
    /// decision is read ([`Scheduler::set_decisions_only`]) and some node passed.
    Unlisted(Vec<usize>),
    /// Kept by incremental scheduling under the cycle's `key`, which may rank them
    /// ([`IncrementalCache::may_rank`]); `changed` are the nodes that changed since
    /// the key's last cycle.
    Kept { key: Key, changed: Changed },
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("profiles", &self.profiles)
            .field("nodes", &self.snapshot.num_nodes())
            .field("options", &self.options)
            .finish()
    }
}

impl Scheduler {
    /// A scheduler over `snapshot` with these profiles.
    pub fn new(
        profiles: Vec<Framework>,
        snapshot: Snapshot,
        options: SchedulerOptions,
    ) -> Result<Scheduler, SchedulerError> {
        let first = profiles.first().ok_or(SchedulerError::NoProfiles)?;
        let mut seen = BTreeSet::new();
        for p in &profiles {
            if !seen.insert(p.profile_name()) {
                return Err(SchedulerError::DuplicateProfile(
                    p.profile_name().to_string(),
                ));
            }
            if p.queue_sort().name != first.queue_sort().name {
                return Err(SchedulerError::QueueSortMismatch(
                    first.profile_name().to_string(),
                    first.queue_sort().name.to_string(),
                    p.profile_name().to_string(),
                    p.queue_sort().name.to_string(),
                ));
            }
        }
        let seed = match options.host_selection {
            HostSelection::Random { seed } => seed,
            HostSelection::FirstInNodeOrder => 0,
        };
        let batches = profiles
            .iter()
            .map(|_| OpportunisticBatch::default())
            .collect();
        Ok(Scheduler {
            batches,
            cycle: 0,
            clock: Arc::new(SystemClock),
            profiles: profiles.into_iter().map(Arc::new).collect(),
            snapshot,
            options,
            nominated_pods: NominatedPods::new(),
            next_start_node_index: 0,
            placement: None,
            rng: SplitMix64(seed),
            explained_pod: None,
            incremental: None,
            incremental_budget: None,
            decisions_only: false,
            parked: VecDeque::new(),
            permit_time: 0,
            to_activate: Vec::new(),
        })
    }

    /// The profiles.
    pub fn profiles(&self) -> &[Arc<Framework>] {
        &self.profiles
    }

    /// The index of the profile for a scheduler name.
    pub fn profile_index(&self, scheduler_name: &str) -> Option<usize> {
        self.profiles
            .iter()
            .position(|p| p.profile_name() == scheduler_name)
    }

    /// The profile for a scheduler name.
    pub fn framework_for(&self, scheduler_name: &str) -> Option<&Framework> {
        self.profiles
            .iter()
            .find(|p| p.profile_name() == scheduler_name)
            .map(|p| &**p)
    }

    /// The cluster as the scheduler sees it.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Mutable access to the cluster (to add or remove pods and nodes between cycles).
    pub fn snapshot_mut(&mut self) -> &mut Snapshot {
        &mut self.snapshot
    }

    /// The pods nominated to nodes by earlier preemptions. The Filter plugins treat
    /// them as on their node for pods of lower or equal priority.
    pub fn nominated_pods(&self) -> &NominatedPods {
        &self.nominated_pods
    }

    /// Mutable access to the nominated pods: a runtime records a PostFilter nomination
    /// here (and clears it when the pod is deleted); [`Scheduler::schedule_one`]
    /// removes a pod's nomination once it is bound.
    pub fn nominated_pods_mut(&mut self) -> &mut NominatedPods {
        &mut self.nominated_pods
    }

    /// The options.
    pub fn options(&self) -> &SchedulerOptions {
        &self.options
    }

    /// Sorts pods in queue order with the (shared) QueueSort plugin; pods equal for it
    /// keep their order.
    pub fn sort_queue(&self, pods: &mut [QueuedPodInfo]) {
        let qs = &self.profiles[0];
        pods.sort_by(|a, b| {
            if qs.queue_less(a, b) {
                std::cmp::Ordering::Less
            } else if qs.queue_less(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
    }

    /// Sets the number of the scheduling cycle that the next [`Scheduler::schedule_pod`]
    /// runs: a runtime with its own queue passes the cycle that popped the pod
    /// (kube-scheduler's `SchedulingQueue.SchedulingCycle()`); batching uses a pod's
    /// kept results only in the very next cycle. [`Scheduler::schedule_one`] counts
    /// its cycles itself.
    pub fn set_scheduling_cycle(&mut self, cycle: u64) {
        self.cycle = cycle;
    }

    /// The clock batching reads to age its kept results (the system clock unless
    /// set; tests set a [`FakeClock`](crate::FakeClock)).
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// Schedules incrementally ([`crate::incremental`]): with the exhaustive search and
    /// no batching, a pod whose plugins all answer node by node is filtered and scored
    /// again only on the nodes that changed since a pod of the same signature was, with
    /// the same results as a full pass. Off by default; turning it off drops what was
    /// kept.
    pub fn set_incremental(&mut self, on: bool) {
        let budget = self.incremental_budget;
        self.incremental = on.then(|| {
            let mut cache = IncrementalCache::default();
            cache.budget = budget;
            cache
        });
    }

    /// How many bytes (estimated) incremental scheduling may keep; `None`, the default,
    /// for [`crate::incremental::default_budget`] of the cluster's size. Past it, the
    /// signatures used least recently are dropped (and computed again when they come
    /// back). Applies now and to a cache that [`Scheduler::set_incremental`] starts later.
    pub fn set_incremental_budget(&mut self, bytes: Option<usize>) {
        self.incremental_budget = bytes;
        if let Some(cache) = &mut self.incremental {
            cache.budget = bytes;
        }
    }

    /// Says that only the decision of each cycle is read (the chosen node, or the error
    /// of a pod that does not fit), as `kubesched bench` and capacity counts read it:
    /// with incremental scheduling, a cycle may then choose from kept totals without
    /// building a score table. A scheduled pod's [`ScheduleResult`] then has an empty
    /// [`ScheduleResult::scores`] and no rejected nodes in its diagnosis (its counts
    /// stay right). Off by default.
    pub fn set_decisions_only(&mut self, on: bool) {
        self.decisions_only = on;
    }

    /// Whether only decisions are read ([`Scheduler::set_decisions_only`]).
    pub fn decisions_only(&self) -> bool {
        self.decisions_only
    }

    /// What incremental scheduling saved so far; `None` when it is off.
    pub fn incremental_stats(&self) -> Option<crate::incremental::IncrementalStats> {
        self.incremental.as_ref().map(|c| c.stats)
    }

    /// The key a cycle of `pod` keeps its verdicts and scores under, when it may
    /// (see [`Scheduler::set_incremental`]).
    fn incremental_key(
        &mut self,
        profile: usize,
        state: &CycleState,
        pod: &PodInfo,
    ) -> Option<Key> {
        self.incremental.as_ref()?;
        let plain = self.options.node_search == NodeSearch::Exhaustive
            && !self.options.batching
            && self.nominated_pods.is_empty()
            && !state.explain()
            && state.read::<RecordPluginMetrics>().is_none();
        let fwk = &self.profiles[profile];
        let candidate = if plain && fwk.scoped_to_nodes(pod, &self.snapshot) {
            fwk.sign_pod_exact(pod)
                .map(|signature| Key { profile, signature })
        } else {
            None
        };
        self.incremental.as_mut()?.admit(candidate)
    }

    /// How many pods of the profile at `profile` went to their batching hint.
    pub fn batched_pods(&self, profile: usize) -> u64 {
        self.batches.get(profile).map_or(0, |b| b.batched_pods())
    }

    /// Makes the cycles of one pod (`namespace/name`) explained: their
    /// [`CycleState::explain`] is set, so plugins add notes to their rejections
    /// (`kubesched simulate --explain`). `None` explains nothing (the default).
    pub fn set_explained_pod(&mut self, pod: Option<String>) {
        self.explained_pod = pod;
    }

    /// Runs one full cycle for `pod`: scheduling, then (on success) assume, Reserve,
    /// Permit and binding. On success the pod is on its node in the snapshot.
    ///
    /// This is the simulation's cycle, with no controllers beside it: a pod that mounts
    /// a PersistentVolumeClaim (directly or through an ephemeral volume) stops after
    /// Permit, assumed, as the conformance oracle's does (FORMAT-volumes.md rules 13 and
    /// 17), since its volumes' PreBind would wait for a PV controller. The runtime runs
    /// its own binding cycle.
    pub fn schedule_one(&mut self, pod: &Arc<PodInfo>) -> Outcome {
        match self.cycle_to_permit(pod, false) {
            ToPermit::Decided(outcome) => outcome,
            ToPermit::Past(past) => self.after_permit(past.parked),
        }
    }

    /// A pod's scheduling cycle up to Permit: PreEnqueue, the scheduling algorithm
    /// (and PostFilter when it fails), assume, Reserve, Permit. A pod that Permit let
    /// through or made wait is returned assumed on its node, not bound; anything else
    /// is its final outcome.
    ///
    /// With `assume_nominated` (a PodGroup cycle's pod, `podGroupPodSchedulingAlgorithm`)
    /// a pod that PostFilter nominated a node for goes on as if that node were chosen,
    /// so that the group's later pods see it there; its failure and nomination come
    /// back with it.
    fn cycle_to_permit(&mut self, pod: &Arc<PodInfo>, assume_nominated: bool) -> ToPermit {
        let Some(index) = self
            .profiles
            .iter()
            .position(|p| p.profile_name() == pod.scheduler_name())
        else {
            return ToPermit::Decided(Outcome::NotOurs);
        };
        let gate = self.profiles[index].run_pre_enqueue_plugins(pod);
        if !gate.is_success() {
            return ToPermit::Decided(Outcome::Gated(gate));
        }
        // The queue's pop: one scheduling cycle per pod that reaches it.
        self.cycle += 1;
        self.to_activate.clear();
        let mut state = CycleState::new();
        state.set_explain(self.explained_pod.as_deref() == Some(pod.key()));
        let result = self.schedule_pod(index, &mut state, pod);
        let fwk = &self.profiles[index];
        let mut preempting = None;
        let result = match result {
            Ok(r) => r,
            Err(error) => {
                let mut error = error;
                let mut nominated = None;
                if let ScheduleError::Unfit(fit) = &mut error
                    && self.options.run_post_filter
                    && fwk.has_post_filter_plugins()
                {
                    let (r, s) = fwk.run_post_filter_plugins(
                        &state,
                        pod,
                        &self.snapshot,
                        &self.nominated_pods,
                        &fit.diagnosis.node_to_status,
                    );
                    if s.is_success() {
                        nominated = r.filter(|r| r.nominated_node_name.is_some());
                    } else if !s.message().is_empty() {
                        fit.diagnosis.post_filter_msg = Some(s.message());
                    }
                }
                let host = nominated
                    .as_ref()
                    .and_then(|n| n.nominated_node_name.as_deref())
                    .and_then(|node| self.snapshot.index_of(node))
                    .filter(|_| assume_nominated);
                let Some(host) = host else {
                    return ToPermit::Decided(Outcome::Unschedulable { error, nominated });
                };
                let diagnosis = match &error {
                    ScheduleError::Unfit(fit) => fit.diagnosis.clone(),
                    _ => Diagnosis::default(),
                };
                preempting = nominated.map(|n| (error, n));
                ScheduleResult {
                    suggested_host: host,
                    evaluated_nodes: 0,
                    feasible_nodes: 0,
                    scores: ScoreTable::default(),
                    diagnosis,
                }
            }
        };
        let node = self
            .snapshot
            .node_at(result.suggested_host)
            .name()
            .to_string();
        let assumed = Arc::new(pod.bound_to(&node));
        self.snapshot.add_pod(assumed.clone());
        let fwk = self.profiles[index].clone();
        let s = fwk.run_reserve_plugins_reserve(&mut state, &assumed, &node);
        if !s.is_success() {
            let host = result.suggested_host;
            return ToPermit::Decided(
                self.fail_scheduling_cycle(index, &mut state, &assumed, &node, host, s),
            );
        }
        let (s, waits) = fwk.run_permit_plugins_waits(&mut state, &assumed, &node);
        // At the end of a scheduling cycle that Permit let through (or made wait),
        // the pods its plugins asked for are retried now (schedulingCycle's
        // `Activate`).
        if (s.is_success() || s.is_wait())
            && let Some(activate) = state.read_mut::<PodsToActivate>()
        {
            self.to_activate = std::mem::take(&mut activate.keys).into_iter().collect();
        }
        if s.is_wait() {
            fwk.waiting_pods()
                .add(assumed.clone(), &node, waits, self.permit_time);
        } else if !s.is_success() {
            let host = result.suggested_host;
            return ToPermit::Decided(
                self.fail_scheduling_cycle(index, &mut state, &assumed, &node, host, s),
            );
        }
        ToPermit::Past(PastPermit {
            parked: Parked {
                profile: index,
                state,
                pod: pod.clone(),
                assumed,
                node,
                result,
                wait: s,
            },
            preempting,
        })
    }

    /// A pod past Permit: parked while it waits there, else bound.
    fn after_permit(&mut self, parked: Parked) -> Outcome {
        if parked.wait.is_wait() {
            let (node, result) = (parked.node.clone(), parked.result.clone());
            self.parked.push_back(parked);
            return Outcome::Waiting { node, result };
        }
        let Parked {
            profile,
            state,
            pod,
            assumed,
            node,
            result,
            ..
        } = parked;
        self.bind_after_permit(profile, state, &pod, &assumed, node, result)
    }

    /// Unreserves and forgets a pod that Reserve or Permit turned down in its
    /// scheduling cycle. A rejection is reported as kube-scheduler's
    /// `schedulingCycle` reports it: a FitError over one node, the chosen one, with
    /// the plugin's status (`0/1 nodes are available: 1 PodGroup not found.`); an
    /// error stays a binding failure.
    fn fail_scheduling_cycle(
        &mut self,
        profile: usize,
        state: &mut CycleState,
        assumed: &Arc<PodInfo>,
        node: &str,
        host: usize,
        status: Status,
    ) -> Outcome {
        if !status.is_rejected() {
            return self.fail_binding(profile, state, assumed, node, status);
        }
        self.profiles[profile].run_reserve_plugins_unreserve(state, assumed, node);
        self.snapshot.remove_pod(node, assumed.key());
        Outcome::Unschedulable {
            error: ScheduleError::Unfit(Box::new(FitError::on_chosen_node(host, status))),
            nominated: None,
        }
    }

    /// Unreserves and forgets a pod whose binding cycle failed.
    fn fail_binding(
        &mut self,
        profile: usize,
        state: &mut CycleState,
        assumed: &Arc<PodInfo>,
        node: &str,
        status: Status,
    ) -> Outcome {
        self.profiles[profile].run_reserve_plugins_unreserve(state, assumed, node);
        self.snapshot.remove_pod(node, assumed.key());
        Outcome::BindingFailed {
            node: node.to_string(),
            status,
        }
    }

    /// The binding cycle after Permit allowed the pod: PreBind, Bind, PostBind.
    fn bind_after_permit(
        &mut self,
        profile: usize,
        mut state: CycleState,
        pod: &Arc<PodInfo>,
        assumed: &Arc<PodInfo>,
        node: String,
        result: ScheduleResult,
    ) -> Outcome {
        let fwk = self.profiles[profile].clone();
        // A pod with claim volumes stays assumed after Permit, as in the conformance
        // oracle (FORMAT-volumes rules 13 and 17): with no PV controller, its volumes'
        // PreBind would wait for ever, so the binding cycle stops there, and what its
        // other plugins hold (DynamicResources' allocations in flight) stays held.
        if !assumed.has_claim_volumes() {
            let s = fwk.run_pre_bind_plugins(&mut state, assumed, &node);
            if !s.is_success() {
                return self.fail_binding(profile, &mut state, assumed, &node, s);
            }
            let s = fwk.run_bind_plugins(&mut state, assumed, &node);
            if !s.is_success() {
                return self.fail_binding(profile, &mut state, assumed, &node, s);
            }
            fwk.run_post_bind_plugins(&mut state, assumed, &node);
        }
        self.nominated_pods.remove(pod.uid());
        Outcome::Scheduled { node, result }
    }

    /// The pods (`namespace/name`) that the plugins of the last
    /// [`Scheduler::schedule_one`] asked to retry at once, through the cycle state's
    /// [`PodsToActivate`] (Coscheduling's `ActivateSiblings`), when its Permit let the
    /// pod through or made it wait: a caller with a queue moves them to its active
    /// queue ([`SchedulingQueue::activate`](crate::queue::SchedulingQueue::activate)),
    /// as kube-scheduler's `schedulingCycle` does. Empty after any other cycle.
    pub fn pods_to_activate(&self) -> &[String] {
        &self.to_activate
    }

    /// How many pods wait at Permit.
    pub fn waiting_count(&self) -> usize {
        self.parked.len()
    }

    /// Sets the time Permit waits are measured in (nanoseconds since any fixed
    /// origin; 0 unless set): a pod that starts waiting now has its deadlines counted
    /// from it. A one-instant simulation leaves it at 0; a replay moves it with its
    /// clock.
    pub fn set_permit_time(&mut self, nanos: u64) {
        self.permit_time = nanos;
    }

    /// Goes on with every waiting pod that a plugin allowed or rejected since the
    /// last call, in the order they started waiting (and with pods decided on the
    /// way, as an Unreserve rejects a pod's siblings): an allowed pod goes through
    /// PreBind, Bind and PostBind; a rejected one is unreserved and forgotten, with
    /// the rejection as its status (kube-scheduler's `WaitOnPermit` returning into
    /// the binding cycle). Returns each pod (as given to
    /// [`Scheduler::schedule_one`]) with its final outcome.
    pub fn resolve_waiting(&mut self) -> Vec<(Arc<PodInfo>, Outcome)> {
        let mut done = Vec::new();
        loop {
            let decided = self
                .profiles
                .iter()
                .find_map(|p| p.waiting_pods().take_decided());
            let Some((pod, _, status)) = decided else {
                break;
            };
            let parked = self
                .parked
                .iter()
                .position(|p| p.assumed.uid() == pod.uid())
                .and_then(|i| self.parked.remove(i));
            let Some(Parked {
                profile,
                mut state,
                pod,
                assumed,
                node,
                result,
                ..
            }) = parked
            else {
                continue;
            };
            let outcome = if status.is_success() {
                self.bind_after_permit(profile, state, &pod, &assumed, node, result)
            } else {
                self.fail_binding(profile, &mut state, &assumed, &node, status)
            };
            done.push((pod, outcome));
        }
        done
    }

    /// Lets the waits run out, earliest deadline first: each pod still waiting is
    /// rejected at the plugin whose wait ends first, with kube-scheduler's
    /// `rejected due to timeout after waiting %v at plugin %v`, and resolved (its
    /// Unreserve may reject others) before the next deadline. What a one-instant
    /// simulation does at its end. Returns every resolved pod with its outcome.
    pub fn time_out_waiting(&mut self) -> Vec<(Arc<PodInfo>, Outcome)> {
        let mut done = self.resolve_waiting();
        while let Some(at) = self
            .profiles
            .iter()
            .find_map(|p| p.waiting_pods().time_out_first())
        {
            self.permit_time = self.permit_time.max(at);
            done.extend(self.resolve_waiting());
        }
        done
    }

    /// When the first wait at Permit runs out (in permit-time nanoseconds, see
    /// [`Scheduler::set_permit_time`]); `None` when no pod waits undecided.
    pub fn next_permit_deadline(&self) -> Option<u64> {
        self.profiles
            .iter()
            .filter_map(|p| p.waiting_pods().next_deadline())
            .min()
    }

    /// As [`Scheduler::time_out_waiting`], but only the waits that end by `nanos`
    /// (permit time), earliest first, each resolved before the next: what a replay
    /// does when its clock reaches a deadline. The permit time is then `nanos` (or
    /// later, if it was). Returns every resolved pod with its outcome.
    pub fn time_out_waiting_until(&mut self, nanos: u64) -> Vec<(Arc<PodInfo>, Outcome)> {
        let mut done = self.resolve_waiting();
        while self.next_permit_deadline().is_some_and(|at| at <= nanos) {
            let Some(at) = self
                .profiles
                .iter()
                .find_map(|p| p.waiting_pods().time_out_first())
            else {
                break;
            };
            self.permit_time = self.permit_time.max(at);
            done.extend(self.resolve_waiting());
        }
        self.permit_time = self.permit_time.max(nanos);
        done
    }

    /// Replaces the profiles with `profiles`, built again from the same configuration
    /// (the same scheduler names, in the same order) over newer objects, e.g. by a
    /// replay whose PodGroups changed; the snapshot, the nominated pods and the pods
    /// waiting at Permit stay (build the new profiles with the old handle's
    /// [`Framework::waiting_pods`] so that they share the map). Kept incremental
    /// verdicts are dropped, since the plugins' inputs changed.
    pub fn set_profiles(&mut self, profiles: Vec<Framework>) -> Result<(), SchedulerError> {
        let same = profiles.len() == self.profiles.len()
            && profiles
                .iter()
                .zip(&self.profiles)
                .all(|(a, b)| a.profile_name() == b.profile_name());
        if !same {
            return Err(SchedulerError::ProfilesChanged);
        }
        self.profiles = profiles.into_iter().map(Arc::new).collect();
        if self.incremental.is_some() {
            self.set_incremental(true);
        }
        Ok(())
    }

    /// The scheduling part of the cycle (kube-scheduler's `schedulePod`): finds the
    /// feasible nodes, scores them and picks one. Changes nothing in the snapshot.
    /// Restricted to a placement ([`Scheduler::set_placement`]), it sees only the
    /// placement's nodes and writes [`InPlacement`](crate::InPlacement) in `state`.
    pub fn schedule_pod(
        &mut self,
        profile: usize,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> Result<ScheduleResult, ScheduleError> {
        if let Some(placement) = self.placement.as_ref().filter(|p| !p.name.is_empty()) {
            state.write(crate::placement::InPlacement {
                name: placement.name.clone(),
            });
        }
        let num_nodes = self
            .placement
            .as_ref()
            .map_or(self.snapshot.num_nodes(), |p| p.nodes.len());
        if num_nodes == 0 {
            return Err(ScheduleError::NoNodesAvailable);
        }
        let key = self.incremental_key(profile, state, pod);
        let (passed, diagnosis, hint) =
            self.find_nodes_that_fit(profile, state, pod, key.as_ref())?;
        let fwk = self.profiles[profile].clone();
        let (feasible, unlisted) = match passed {
            Passed::Listed(feasible) => (feasible, false),
            Passed::Unlisted(feasible) => (feasible, true),
            Passed::Kept { key, changed } => {
                if let Some(result) = self.schedule_ranked(profile, state, pod, &key, &changed) {
                    return Ok(ScheduleResult {
                        diagnosis,
                        ..result
                    });
                }
                // The full pass over what was kept (some node passed, none failed:
                // `may_rank`), whose rejections are not read.
                let cache = self.incremental.as_ref().ok_or_else(|| {
                    ScheduleError::Internal(Status::error("incremental scheduling is off"))
                })?;
                (cache.feasible(&key), true)
            }
        };
        if feasible.is_empty() {
            return Err(ScheduleError::Unfit(Box::new(FitError {
                num_all_nodes: num_nodes,
                diagnosis,
            })));
        }
        // Every node was evaluated when the rejected ones are not listed.
        let evaluated = if unlisted {
            num_nodes
        } else {
            feasible.len() + diagnosis.node_to_status.len()
        };
        if feasible.len() == 1 {
            if let Some(hint) = hint {
                let chosen = self.snapshot.node_at(feasible[0]).name().to_string();
                let now = self.clock.now();
                self.batches[profile].store_schedule_results(
                    &fwk,
                    hint,
                    &chosen,
                    0,
                    VecDeque::new,
                    self.cycle,
                    now,
                );
            }
            return Ok(ScheduleResult {
                suggested_host: feasible[0],
                evaluated_nodes: evaluated,
                feasible_nodes: 1,
                scores: ScoreTable::default(),
                diagnosis,
            });
        }
        let scores = if fwk.has_score_plugins() {
            let nodes: Vec<&NodeInfo> =
                feasible.iter().map(|&i| self.snapshot.node_at(i)).collect();
            let s = fwk.run_pre_score_plugins(state, pod, &nodes, &self.snapshot);
            let scored = match (&key, self.incremental.as_mut()) {
                _ if !s.is_success() => Err(s),
                (Some(key), Some(cache)) => {
                    let snapshot = &self.snapshot;
                    fwk.timed_point(
                        "Score",
                        |r: &Result<ScoreTable, Status>| {
                            r.as_ref().map_or_else(Status::code, |_| Code::Success)
                        },
                        || {
                            let cycle = Cycle {
                                fwk: &fwk,
                                state,
                                pod,
                                snapshot,
                            };
                            cache.score(key, cycle, &feasible)
                        },
                    )
                }
                _ => {
                    let indexed: Vec<(usize, &NodeInfo)> =
                        feasible.iter().copied().zip(nodes).collect();
                    fwk.run_score_plugins(state, pod, &indexed)
                }
            };
            match scored {
                Ok(scores) => scores,
                Err(status) => {
                    let diagnosis = match (unlisted, &key) {
                        (true, Some(key)) => self.with_kept_rejections(key, diagnosis)?,
                        _ => diagnosis,
                    };
                    return Err(ScheduleError::FailedAfterFilter {
                        status,
                        diagnosis: Box::new(diagnosis),
                    });
                }
            }
        } else {
            ScoreTable::uniform(feasible.clone(), 1)
        };
        let suggested_host = self.select_host(&scores);
        if let Some(hint) = hint {
            let chosen = self.snapshot.node_at(suggested_host).name().to_string();
            let now = self.clock.now();
            let snapshot = &self.snapshot;
            let other = || sorted_other_nodes(&scores, suggested_host, snapshot);
            self.batches[profile].store_schedule_results(
                &fwk,
                hint,
                &chosen,
                scores.len() - 1,
                other,
                self.cycle,
                now,
            );
        }
        Ok(ScheduleResult {
            suggested_host,
            evaluated_nodes: evaluated,
            feasible_nodes: feasible.len(),
            scores,
            diagnosis,
        })
    }

    /// The number of feasible nodes after which the adaptive search stops
    /// (kube-scheduler's `numFeasibleNodesToFind`).
    pub fn num_feasible_nodes_to_find(percentage: Option<i32>, num_all_nodes: usize) -> usize {
        if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
            return num_all_nodes;
        }
        let mut percentage = i64::from(percentage.unwrap_or(0));
        if percentage == 0 {
            percentage =
                (50 - num_all_nodes as i64 / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
        }
        let n = (num_all_nodes as i64 * percentage / 100) as usize;
        n.max(MIN_FEASIBLE_NODES_TO_FIND)
    }
}
