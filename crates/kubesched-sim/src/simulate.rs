//! Runs a [`Scenario`] by FORMAT.md's rules: every pending pod once, in queue order,
//! through the profile named by its `schedulerName`, with all profiles sharing one
//! cluster state.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::{
    ClusterObjects, CustomObject, DraState, Features, Framework, Handle, HostSelection, NodeSearch,
    NominationCandidate, Outcome, PodGroupCondition, PodInfo, QueuedPodInfo, Registry,
    ScheduleError, Scheduler, SchedulerOptions, ScoreTable, Snapshot,
};

use crate::attempt::{Attempt, NodeNames};
use crate::pod_groups::QueueGroups;
use crate::scenario::{DraObjects, OtherObject, Scenario};

/// How a simulation runs.
#[derive(Clone, Debug)]
pub struct SimulationOptions {
    /// Run PostFilter plugins (preemption) when no node fits.
    pub preemption: bool,
    /// Which nodes are evaluated: every node (FORMAT.md) or kube-scheduler's search.
    pub node_search: NodeSearch,
    /// The pick among equal best scores.
    pub host_selection: HostSelection,
    /// How much per-node detail each [`PodResult`] records.
    pub detail: Detail,
    /// The kube-scheduler version and feature gates the plugins follow (the newest
    /// version's defaults unless set).
    pub features: Features,
    /// With the exhaustive search, keep verdicts and scores per pod signature and
    /// evaluate again only the nodes that changed ([`Scheduler::set_incremental`]):
    /// the same results, much faster for runs of identical pods, and as fast for pods
    /// that rarely repeat (see docs/architecture.md). On by default; off evaluates
    /// every node for every pod.
    pub incremental: bool,
    /// How many bytes (estimated) incremental scheduling may keep; past it, the
    /// signatures used least recently are dropped (and computed again if they come
    /// back). `None`, the default, for
    /// [`default_budget`](kubesched_framework::incremental::default_budget) of the
    /// cluster ([`Scheduler::set_incremental_budget`]).
    pub incremental_budget: Option<usize>,
}

/// How much per-node detail a [`PodResult`] records. Every node's scores and reasons
/// make a result as large as the cluster; a caller that does not print them can leave
/// them out, and the simulation then does not gather them at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Scores of the feasible nodes and reasons of the rejected ones (FORMAT.md).
    #[default]
    All,
    /// Only the rejected nodes' reasons; `scores` stays empty.
    Rejected,
    /// Neither: only the outcome (`scores` and `rejected` stay empty).
    None,
}

impl Default for SimulationOptions {
    fn default() -> Self {
        SimulationOptions {
            preemption: false,
            node_search: NodeSearch::Exhaustive,
            host_selection: HostSelection::FirstInNodeOrder,
            detail: Detail::All,
            features: Features::default(),
            incremental: true,
            incremental_budget: None,
        }
    }
}

/// A simulation could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimulationError {
    /// The KubeSchedulerConfiguration is invalid.
    #[error("{0}")]
    Config(#[from] kubesched_config::ConfigError),
    /// A profile could not be built (unknown plugin, bad args, ...).
    #[error("{source_name}: {error}")]
    Framework {
        /// Where the configuration came from.
        source_name: String,
        /// What is wrong.
        error: kubesched_framework::FrameworkError,
    },
    /// The profiles do not fit together.
    #[error("{source_name}: {error}")]
    Scheduler {
        /// Where the configuration came from.
        source_name: String,
        /// What is wrong.
        error: kubesched_framework::SchedulerError,
    },
    /// A pod's resources do not parse.
    #[error("Pod {pod}: {error}")]
    Pod {
        /// `namespace/name`.
        pod: String,
        /// What is wrong.
        error: kubesched_framework::resource::PodQuantityError,
    },
    /// The nodes are invalid.
    #[error("{0}")]
    Snapshot(#[from] kubesched_framework::SnapshotError),
    /// An object that plugins read (Service, ReplicaSet, Namespace, ...) does not decode.
    #[error("{source_name}: {kind} {name}: {message}")]
    Object {
        /// Where it came from.
        source_name: String,
        /// Its kind.
        kind: String,
        /// `namespace/name` or `name`.
        name: String,
        /// What is wrong, with the field path.
        message: String,
    },
}

/// Decodes the scenario's objects that plugins read into [`ClusterObjects`]; other kinds
/// go to [`ClusterObjects::custom`] as they are (a namespace of `default` when none),
/// for plugins of other crates to decode.
pub fn cluster_objects(scenario: &Scenario) -> Result<ClusterObjects, SimulationError> {
    fn decode<T: serde::de::DeserializeOwned>(o: &OtherObject) -> Result<Arc<T>, SimulationError> {
        let mut value = o.value.clone();
        let namespaced = o.kind != "Namespace";
        if namespaced
            && o.namespace.is_none()
            && let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut())
        {
            meta.insert("namespace".into(), "default".into());
        }
        serde_path_to_error::deserialize(value)
            .map(Arc::new)
            .map_err(|e| SimulationError::Object {
                source_name: o.source.clone(),
                kind: kubesched_config::echo(&o.kind).into_owned(),
                name: match &o.namespace {
                    Some(ns) if namespaced => {
                        format!(
                            "{}/{}",
                            kubesched_config::echo(ns),
                            kubesched_config::echo(&o.name)
                        )
                    }
                    _ if namespaced => format!("default/{}", kubesched_config::echo(&o.name)),
                    _ => kubesched_config::echo(&o.name).into_owned(),
                },
                message: format!("{}: {}", crate::scenario::render_path(e.path()), e.inner()),
            })
    }
    let mut objects = ClusterObjects::default();
    for o in &scenario.objects {
        let group = o.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        match (group, o.kind.as_str()) {
            ("", "Service") => objects.services.push(decode(o)?),
            ("", "ReplicationController") => objects.replication_controllers.push(decode(o)?),
            ("", "Namespace") => objects.namespaces.push(decode(o)?),
            ("apps", "ReplicaSet") => objects.replica_sets.push(decode(o)?),
            ("apps", "StatefulSet") => objects.stateful_sets.push(decode(o)?),
            ("policy", "PodDisruptionBudget") => objects.pod_disruption_budgets.push(decode(o)?),
            _ => objects.custom.push(Arc::new(CustomObject {
                api_version: o.api_version.clone(),
                kind: o.kind.clone(),
                namespace: Some(o.namespace.clone().unwrap_or_else(|| "default".into())),
                name: o.name.clone(),
                value: o.value.clone(),
            })),
        }
    }
    Ok(objects)
}

/// The scenario's DRA objects as the state DynamicResources shares across profiles
/// and pods.
pub fn dra_state(dra: &DraObjects) -> DraState {
    DraState::new(
        dra.device_classes.iter().cloned(),
        dra.slices.iter().cloned(),
        dra.claims.iter().cloned(),
        dra.templates.iter().cloned(),
    )
}

/// Why one node was rejected: the plugin and its reasons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The Filter (or PreFilter) plugin that rejected the node, when known.
    pub plugin: Option<String>,
    /// Its reasons, in order.
    pub reasons: Vec<String>,
    /// What the plugin added for people (which claim or volume stopped the node),
    /// when the attempt was explained (see `Scheduler::set_explained_pod`); never
    /// part of the reasons.
    pub notes: Vec<String>,
}

/// One node's scores: per plugin (weighted, in profile order) and the total.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeScores {
    /// (plugin, weighted score).
    pub plugins: Vec<(String, i64)>,
    /// The sum.
    pub total: i64,
}

/// What happened to one pending pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodOutcome {
    /// No profile has the pod's scheduler name.
    Ignored,
    /// The pod has scheduling gates.
    Gated(Vec<String>),
    /// The pod went to a node.
    Scheduled(String),
    /// No node: the FailedScheduling message.
    Unschedulable(String),
    /// PostFilter nominated a node; the victims were removed.
    Nominated {
        /// The FailedScheduling message of the attempt.
        message: String,
        /// The nominated node.
        node: String,
        /// The evicted pods, `namespace/name`, in eviction order.
        victims: Vec<String>,
        /// Every candidate node the PostFilter plugin considered, in node order.
        candidates: Vec<NominationCandidate>,
        /// Why the nominated node won, in words.
        selection_reason: Option<String>,
    },
}

/// One attempt's full record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodResult {
    /// `namespace/name`.
    pub pod: String,
    /// The scheduler name after defaulting.
    pub scheduler: String,
    /// What happened.
    pub outcome: PodOutcome,
    /// Scores of the nodes that passed the filters (empty when scoring was skipped, or
    /// when [`SimulationOptions::detail`] leaves them out).
    pub scores: BTreeMap<String, NodeScores>,
    /// The nodes that failed, with the rejecting plugin and reasons (empty when
    /// [`SimulationOptions::detail`] is [`Detail::None`]).
    pub rejected: BTreeMap<String, Rejection>,
    /// Node names in node order, to print in that order (shared by every result).
    pub node_order: Arc<Vec<String>>,
}

/// The results of a simulation and the configuration it used.
#[derive(Debug)]
pub struct Simulation {
    /// One result per attempt, in attempt order.
    pub results: Vec<PodResult>,
    /// Warnings from the configuration.
    pub warnings: Vec<String>,
    /// Where the configuration came from (`built-in default` when none).
    pub config_source: String,
}

/// Builds one [`Framework`] per profile of `config`.
pub fn build_frameworks(
    config: &KubeSchedulerConfiguration,
    registry: &Registry,
    source_name: &str,
) -> Result<Vec<Framework>, SimulationError> {
    build_frameworks_with(config, registry, source_name, &Handle::default())
}

/// Builds one [`Framework`] per profile of `config`, each with `handle` (the shared
/// DRA state of the scenario, ...).
pub fn build_frameworks_with(
    config: &KubeSchedulerConfiguration,
    registry: &Registry,
    source_name: &str,
    handle: &Handle,
) -> Result<Vec<Framework>, SimulationError> {
    config
        .profiles
        .iter()
        .map(|p| {
            Framework::new(p, registry, handle).map_err(|error| SimulationError::Framework {
                source_name: source_name.to_string(),
                error,
            })
        })
        .collect()
}

/// Runs the scenario with the in-tree plugins and collects every result. Each result
/// holds every node's verdict (unless [`SimulationOptions::detail`] leaves it out), so
/// for a large cluster prefer [`simulate_each`], which hands the results over one by
/// one.
pub fn simulate(
    scenario: &Scenario,
    options: &SimulationOptions,
) -> Result<Simulation, SimulationError> {
    simulate_with(scenario, options, &kubesched_plugins::in_tree_registry())
}

/// Runs the scenario with the plugins of `registry` (in-tree and your own).
pub fn simulate_with(
    scenario: &Scenario,
    options: &SimulationOptions,
    registry: &Registry,
) -> Result<Simulation, SimulationError> {
    Ok(prepare(scenario, options, registry)?.run())
}

/// Runs the scenario with the in-tree plugins and hands each result to `sink` as soon as
/// the pod is decided, keeping none: memory stays that of one result, however many pods
/// there are. Stops at the first error `sink` returns, and returns it. Returns the
/// configuration's warnings and source (as [`Simulation`] has them) and the number of
/// results.
///
/// ```
/// # use kubesched_sim::{scenario, simulate_each, SimulationOptions};
/// # let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: nginx}]}\n";
/// # let s = scenario::load(&[scenario::Source { name: "doc.yaml".into(), text: text.into() }]).unwrap();
/// let mut placed = Vec::new();
/// let summary = simulate_each(&s, &SimulationOptions::default(), |r| {
///     placed.push(r.pod);
///     Ok::<(), std::convert::Infallible>(())
/// })
/// .unwrap()
/// .unwrap();
/// assert_eq!((placed, summary.results), (vec!["default/web".to_string()], 1));
/// ```
pub fn simulate_each<E>(
    scenario: &Scenario,
    options: &SimulationOptions,
    sink: impl FnMut(PodResult) -> Result<(), E>,
) -> Result<Result<RunSummary, E>, SimulationError> {
    let prepared = prepare(scenario, options, &kubesched_plugins::in_tree_registry())?;
    let warnings = prepared.warnings.clone();
    let config_source = prepared.config_source.clone();
    Ok(prepared.run_each(sink).map(|results| RunSummary {
        results,
        warnings,
        config_source,
    }))
}

/// What [`simulate_each`] returns besides the results it handed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// How many results (attempts) there were.
    pub results: usize,
    /// Warnings from the configuration.
    pub warnings: Vec<String>,
    /// Where the configuration came from (`built-in default` when none).
    pub config_source: String,
}

/// A scenario made ready to run: the scheduler over the cluster, and the pending pods
/// in queue order. [`prepare`] does the parsing and building; [`Prepared::run`] is the
/// scheduling loop alone, so it can be timed on its own.
pub struct Prepared {
    /// The profiles and the cluster.
    pub scheduler: Scheduler,
    /// The pending pods, in queue order.
    pub queue: Vec<QueuedPodInfo>,
    /// Warnings from the configuration.
    pub warnings: Vec<String>,
    /// Where the configuration came from.
    pub config_source: String,
    /// How much per-node detail each result records.
    pub detail: Detail,
    /// Whether the `GenericWorkload` gate is on: the pods that name a PodGroup are
    /// attempted together, in one PodGroup cycle (kube-scheduler v1.36).
    pub generic_workload: bool,
    /// The `PodGroupScheduled` condition each PodGroup cycle wrote, by the group's
    /// `namespace/name`, in the order the cycles ran.
    pub pod_groups: Vec<(String, PodGroupCondition)>,
    /// The handle the profiles were built with (its objects, DRA state and waiting
    /// map): a replay builds the profiles again from it over newer objects
    /// ([`Scheduler::set_profiles`](kubesched_framework::Scheduler::set_profiles)).
    pub handle: Handle,
}

/// What happened to one pod, without the per-node details (for benchmarks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No profile has the pod's scheduler name.
    Ignored,
    /// The pod has scheduling gates.
    Gated,
    /// The pod went to the node at this position in node order.
    Scheduled(usize),
    /// No node fits (or binding failed).
    Unschedulable,
}

/// Loads the configuration, builds the profiles, the snapshot and the queue.
pub fn prepare(
    scenario: &Scenario,
    options: &SimulationOptions,
    registry: &Registry,
) -> Result<Prepared, SimulationError> {
    let (config, warnings, config_source) = match &scenario.config {
        Some(doc) => {
            let loaded = KubeSchedulerConfiguration::from_value(doc.value.clone(), &doc.source)?;
            (loaded.config, loaded.warnings, doc.source.clone())
        }
        None => (
            KubeSchedulerConfiguration::default_config(),
            Vec::new(),
            "built-in default".to_string(),
        ),
    };
    let mut pod_infos = Vec::with_capacity(scenario.pods.len());
    for pod in &scenario.pods {
        let info = PodInfo::new(pod.clone()).map_err(|error| SimulationError::Pod {
            pod: format!(
                "{}/{}",
                pod.metadata.namespace.as_deref().unwrap_or("default"),
                pod.metadata.name.as_deref().unwrap_or("")
            ),
            error,
        })?;
        pod_infos.push(Arc::new(info));
    }
    let mut objects = cluster_objects(scenario)?;
    objects.pods = pod_infos.clone();
    let objects = Arc::new(objects);
    // One waiting-pods map for every profile, as kube-scheduler shares one.
    let handle = Handle {
        dra: Some(Arc::new(dra_state(&scenario.dra))),
        features: options.features.clone(),
        objects: Some(objects.clone()),
        // One instant: nothing a plugin keeps expires while the simulation runs.
        clock: Some(Arc::new(kubesched_framework::queue::FakeClock::new())),
        ..Handle::default()
    };
    let profiles = build_frameworks_with(&config, registry, &config_source, &handle)?;
    let kept_handle = handle.clone();
    let (bound, pending): (Vec<_>, Vec<_>) =
        pod_infos.into_iter().partition(|p| p.node_name().is_some());
    let (mut snapshot, _orphans) = Snapshot::new(scenario.nodes.iter().cloned(), bound)?;
    snapshot.set_objects(objects);
    snapshot.set_storage(Some(Arc::new(scenario.storage.index())));
    let scheduler_options = SchedulerOptions {
        host_selection: options.host_selection,
        node_search: options.node_search,
        percentage_of_nodes_to_score: config.percentage_of_nodes_to_score,
        run_post_filter: options.preemption,
        // kube-scheduler's batching belongs to its own search; the exhaustive search
        // evaluates every node, as FORMAT.md's results need.
        batching: options.node_search == NodeSearch::Adaptive
            && options.features.enabled("OpportunisticBatching"),
    };
    let mut scheduler = Scheduler::new(profiles, snapshot, scheduler_options).map_err(|error| {
        SimulationError::Scheduler {
            source_name: config_source.clone(),
            error,
        }
    })?;
    scheduler.set_incremental_budget(options.incremental_budget);
    scheduler.set_incremental(options.incremental && options.node_search == NodeSearch::Exhaustive);
    let mut queue: Vec<QueuedPodInfo> = pending
        .into_iter()
        .enumerate()
        .map(|(i, pod_info)| QueuedPodInfo {
            pod_info,
            timestamp: i as u64,
            attempts: 0,
        })
        .collect();
    scheduler.sort_queue(&mut queue);
    Ok(Prepared {
        scheduler,
        queue,
        warnings,
        config_source,
        detail: options.detail,
        generic_workload: options.features.generic_workload(),
        pod_groups: Vec::new(),
        handle: kept_handle,
    })
}

impl Prepared {
    /// Attempts every pending pod once, in queue order, recording every node's verdict
    /// (as far as [`Prepared::detail`] asks). With preemption, an attempt that
    /// nominates a node deletes the victims at once and the pod is attempted again
    /// immediately (FORMAT.md rule 9): one more result.
    pub fn run(self) -> Simulation {
        let mut results = Vec::with_capacity(self.queue.len());
        let warnings = self.warnings.clone();
        let config_source = self.config_source.clone();
        let pushed: Result<usize, std::convert::Infallible> = self.run_each(|r| {
            results.push(r);
            Ok(())
        });
        let _ = pushed;
        Simulation {
            results,
            warnings,
            config_source,
        }
    }

    /// Runs as [`Prepared::run`] does, but hands each result to `sink` as soon as the
    /// pod is decided instead of collecting them; stops at the first error `sink`
    /// returns. Returns the number of results.
    pub fn run_each<E>(self, mut sink: impl FnMut(PodResult) -> Result<(), E>) -> Result<usize, E> {
        let detail = self.detail;
        self.run_each_attempt(|a| sink(a.to_result(detail)))
    }

    /// Runs as [`Prepared::run_each`] does, but hands `sink` each [`Attempt`] with its
    /// per-node detail unconverted: the way to print results of a large cluster
    /// ([`output::write_jsonl_attempt`](crate::output::write_jsonl_attempt)) without a
    /// string per node. Returns the number of attempts.
    pub fn run_each_attempt<E>(
        mut self,
        sink: impl FnMut(Attempt) -> Result<(), E>,
    ) -> Result<usize, E> {
        self.run_attempts(sink)
    }

    /// Runs as [`Prepared::run_each_attempt`] does, but keeps the scheduler: afterwards
    /// its snapshot holds the cluster as the simulation left it (every scheduled pod on
    /// its node, every preemption victim gone), for callers that report on the cluster
    /// after the run. The queue is emptied. Returns the number of attempts.
    pub fn run_attempts<E>(
        &mut self,
        mut sink: impl FnMut(Attempt) -> Result<(), E>,
    ) -> Result<usize, E> {
        let names = Arc::new(NodeNames::new(self.node_order()));
        let queue = std::mem::take(&mut self.queue);
        let mut count = 0;
        // Attempts in attempt order; a pod waiting at Permit holds its line (and every
        // line after it) until it is allowed or rejected.
        let mut held: VecDeque<(Attempt, Option<String>)> = VecDeque::new();
        let mut groups = self.generic_workload.then(|| QueueGroups::new(&queue));
        for (position, queued) in queue.iter().enumerate() {
            if let Some(groups) = &mut groups {
                if groups.done(position) {
                    continue;
                }
                if let Some(members) = groups.take_pending(position) {
                    count += self.attempt_pod_group(&queue, &members, &names, &mut held);
                    flush(&mut held, &mut sink)?;
                    continue;
                }
            }
            loop {
                let (attempt, waiting) = self.attempt_inner(&queued.pod_info, &names);
                let evicted = match &attempt.outcome {
                    PodOutcome::Nominated { node, victims, .. } => self.evict(node, victims),
                    _ => 0,
                };
                count += 1;
                held.push_back((attempt, waiting.then(|| queued.pod_info.uid().to_string())));
                let resolved = self.scheduler.resolve_waiting();
                settle(&mut held, resolved);
                flush(&mut held, &mut sink)?;
                if evicted == 0 {
                    break;
                }
            }
        }
        // The instant ends: what still waits times out.
        let resolved = self.scheduler.time_out_waiting();
        settle(&mut held, resolved);
        flush(&mut held, &mut sink)?;
        Ok(count)
    }

    /// Attempts every pending pod once, in queue order, keeping only the decisions.
    pub fn run_decisions(&mut self) -> Vec<Decision> {
        // The loop runs on a rayon worker, so each cycle's parallel Filter and Score
        // are forked from inside the pool instead of being injected into it (and the
        // calling thread put to sleep and woken) twice per pod.
        // Nothing but the decisions is read, which lets incremental scheduling skip
        // the score tables.
        let details = !self.scheduler.decisions_only();
        self.scheduler.set_decisions_only(true);
        let decisions = rayon::scope(|_| self.run_decisions_in_pool());
        self.scheduler.set_decisions_only(!details);
        decisions
    }

    fn run_decisions_in_pool(&mut self) -> Vec<Decision> {
        let queue = std::mem::take(&mut self.queue);
        let mut groups = self.generic_workload.then(|| QueueGroups::new(&queue));
        let mut decisions: Vec<Option<Decision>> = vec![None; queue.len()];
        for (position, queued) in queue.iter().enumerate() {
            if decisions[position].is_some() {
                continue;
            }
            if let Some(members) = groups.as_mut().and_then(|g| g.take_pending(position)) {
                self.decide_pod_group(&queue, &members, &mut decisions);
                continue;
            }
            decisions[position] = Some(self.decide_one(&queued.pod_info));
        }
        // Every position is decided: a group's cycle decides each of its pods.
        decisions
            .into_iter()
            .map(|d| d.unwrap_or(Decision::Unschedulable))
            .collect()
    }

    /// Attempts one pod outside any PodGroup cycle, keeping only the decision.
    fn decide_one(&mut self, pod: &Arc<PodInfo>) -> Decision {
        if self.scheduler.framework_for(pod.scheduler_name()).is_none() {
            return Decision::Ignored;
        }
        if pod
            .spec()
            .scheduling_gates
            .as_ref()
            .is_some_and(|g| !g.is_empty())
        {
            return Decision::Gated;
        }
        loop {
            match self.scheduler.schedule_one(pod) {
                Outcome::NotOurs => return Decision::Ignored,
                Outcome::Gated(_) => return Decision::Gated,
                // A pod that waits at Permit counts where it is assumed; a
                // wait decided later is not told here (decisions are for
                // benchmarks, whose plugins do not wait).
                Outcome::Scheduled { result, .. } | Outcome::Waiting { result, .. } => {
                    return Decision::Scheduled(result.suggested_host);
                }
                Outcome::Unschedulable {
                    nominated: Some(n), ..
                } => {
                    let node = n.nominated_node_name.unwrap_or_default();
                    if self.evict(&node, &n.victims) == 0 {
                        return Decision::Unschedulable;
                    }
                }
                Outcome::Unschedulable { .. } | Outcome::BindingFailed { .. } => {
                    return Decision::Unschedulable;
                }
            }
        }
    }

    /// Deletes preemption victims (`namespace/name`) from `node` at once (no graceful
    /// termination), as FORMAT.md rule 9 does after a nomination; returns how many were
    /// there. A nomination that removes nothing is not retried, so a loop over attempts
    /// always ends.
    pub fn evict(&mut self, node: &str, victims: &[String]) -> usize {
        victims
            .iter()
            .filter(|key| {
                self.scheduler
                    .snapshot_mut()
                    .remove_pod(node, key)
                    .is_some()
            })
            .count()
    }

    /// The node names in node order, shared by every [`PodResult`] of this cluster.
    pub fn node_order(&self) -> Arc<Vec<String>> {
        Arc::new(
            self.scheduler
                .snapshot()
                .nodes()
                .iter()
                .map(|n| n.name().to_string())
                .collect(),
        )
    }

    /// Attempts one pod (pending or not in the queue at all) through its profile, exactly
    /// as [`Prepared::run`] attempts each queued pod: on success the pod is on its node
    /// for every later attempt. `node_order` is [`Prepared::node_order`]. Used by the
    /// what-if tools (capacity, rollout) to schedule pods one at a time.
    pub fn attempt(&mut self, pod: &Arc<PodInfo>, node_order: &Arc<Vec<String>>) -> PodResult {
        let names = Arc::new(NodeNames::new(node_order.clone()));
        self.attempt_raw(pod, &names).to_result(self.detail)
    }

    /// Attempts one pod as [`Prepared::attempt`] does, but leaves the per-node detail as
    /// the scheduler made it (see [`Attempt`]). A pod that a Permit plugin makes wait
    /// is reported on the node it is assumed on unless the wait is decided within the
    /// attempt; [`Prepared::run_attempts`] holds its line until it is decided.
    pub fn attempt_raw(&mut self, pod: &Arc<PodInfo>, names: &Arc<NodeNames>) -> Attempt {
        let (mut attempt, waiting) = self.attempt_inner(pod, names);
        if waiting {
            for (p, outcome) in self.scheduler.resolve_waiting() {
                if p.uid() == pod.uid() {
                    apply(&mut attempt, outcome);
                }
            }
        }
        attempt
    }

    /// Attempts one pod as [`Prepared::attempt_raw`] does, but leaves a wait at Permit
    /// undecided: `true` with the attempt when the pod waits (the attempt then reads as
    /// if it were scheduled where it is assumed, until [`apply`] gives it the outcome
    /// that [`Scheduler::resolve_waiting`](kubesched_framework::Scheduler::resolve_waiting)
    /// or a timeout reports). For a caller with a clock, such as a replay.
    pub fn attempt_waiting(
        &mut self,
        pod: &Arc<PodInfo>,
        names: &Arc<NodeNames>,
    ) -> (Attempt, bool) {
        self.attempt_inner(pod, names)
    }

    /// Attempts one pod; `true` with it when the pod waits at Permit (the attempt then
    /// reads as if it were scheduled where it is assumed).
    fn attempt_inner(&mut self, pod: &Arc<PodInfo>, names: &Arc<NodeNames>) -> (Attempt, bool) {
        let scheduler = &mut self.scheduler;
        let mut attempt = Attempt::new(
            pod.key().to_string(),
            pod.scheduler_name().to_string(),
            names.clone(),
        );
        if scheduler.framework_for(pod.scheduler_name()).is_none() {
            return (attempt, false);
        }
        let gates = kubesched_plugins::scheduling_gates::gate_names(pod);
        if !gates.is_empty() {
            attempt.outcome = PodOutcome::Gated(gates);
            return (attempt, false);
        }
        let outcome = scheduler.schedule_one(pod);
        if let Outcome::Gated(_) = outcome {
            attempt.outcome =
                PodOutcome::Gated(kubesched_plugins::scheduling_gates::gate_names(pod));
            return (attempt, false);
        }
        let waiting = matches!(outcome, Outcome::Waiting { .. });
        apply(&mut attempt, outcome);
        (attempt, waiting)
    }
}

/// Writes a scheduler outcome into an attempt: the node and scores of a pod placed
/// (or waiting at Permit, where it is assumed), the message and per-node reasons of
/// one turned down, the nomination of one that preempts.
pub fn apply(attempt: &mut Attempt, outcome: Outcome) {
    match outcome {
        Outcome::NotOurs => {}
        Outcome::Gated(_) => attempt.outcome = PodOutcome::Gated(Vec::new()),
        Outcome::Scheduled { node, result: r } | Outcome::Waiting { node, result: r } => {
            attempt.scores = r.scores;
            attempt.diagnosis = Some(r.diagnosis);
            attempt.chosen = Some(r.suggested_host);
            attempt.outcome = PodOutcome::Scheduled(node);
        }
        Outcome::Unschedulable { error, nominated } => {
            let message = error.to_string();
            match error {
                ScheduleError::Unfit(fit) => attempt.diagnosis = Some(fit.diagnosis),
                ScheduleError::FailedAfterFilter { diagnosis, .. } => {
                    attempt.diagnosis = Some(*diagnosis)
                }
                _ => {}
            }
            attempt.outcome = match nominated {
                Some(n) => PodOutcome::Nominated {
                    message,
                    node: n.nominated_node_name.unwrap_or_default(),
                    victims: n.victims,
                    candidates: n.candidates,
                    selection_reason: n.selection_reason,
                },
                None => PodOutcome::Unschedulable(message),
            };
        }
        Outcome::BindingFailed { status, .. } => {
            // As for any binding failure: the message alone, no per-node detail.
            attempt.scores = ScoreTable::default();
            attempt.diagnosis = None;
            attempt.chosen = None;
            attempt.outcome = PodOutcome::Unschedulable(status.message());
        }
    }
}

/// Gives each held attempt whose pod was decided at Permit its final outcome.
pub(crate) fn settle(
    held: &mut VecDeque<(Attempt, Option<String>)>,
    resolved: Vec<(Arc<PodInfo>, Outcome)>,
) {
    for (pod, outcome) in resolved {
        if let Some((attempt, waiting)) = held
            .iter_mut()
            .find(|(_, w)| w.as_deref() == Some(pod.uid()))
        {
            apply(attempt, outcome);
            *waiting = None;
        }
    }
}

/// Hands the held attempts to `sink` up to the first that still waits.
fn flush<E>(
    held: &mut VecDeque<(Attempt, Option<String>)>,
    sink: &mut impl FnMut(Attempt) -> Result<(), E>,
) -> Result<(), E> {
    while held.front().is_some_and(|(_, w)| w.is_none()) {
        if let Some((attempt, _)) = held.pop_front() {
            sink(attempt)?;
        }
    }
    Ok(())
}
