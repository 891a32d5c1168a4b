//! `kubesched rollout`: will a Deployment's rollout find room, step by step?
//!
//! The Deployment (its template changed) is rolled out over the scenario as the
//! Deployment controller and kube-scheduler would do it:
//!
//! 1. The scenario's own pending pods are scheduled first, as `simulate` does.
//! 2. The *old pods* are the pods of the Deployment's namespace whose labels match its
//!    `spec.selector` (after step 1: bound ones are available, pending ones are not).
//! 3. Each step is one sync of the controller followed by the scheduler:
//!    * RollingUpdate: `maxSurge` is scaled against `spec.replicas` rounding up,
//!      `maxUnavailable` rounding down (both 0 makes `maxUnavailable` 1), as
//!      `ResolveFenceposts` does. A sync either scales up or, when it cannot, scales
//!      down (`rolloutRolling`). New pods are created up to `replicas + maxSurge` pods
//!      in all (and `replicas` new ones); old pods are deleted as
//!      `reconcileOldReplicaSets` allows: first the unavailable ones, then available
//!      ones while more than `replicas - maxUnavailable` pods are available, counting a
//!      new pod that has no node yet as unavailable.
//!    * Recreate: every old pod is deleted in the first step, the new pods are created
//!      in the next.
//!    * Then every new pod without a node is attempted (in creation order) and bound
//!      where it fits; a bound pod counts as available from the next step on (it is
//!      taken to be ready at once: no readiness probes, no `minReadySeconds`).
//! 4. The rollout is done when `replicas` new pods are bound and no old pod is left; it
//!    *stalls* when a step changes nothing, and then the new pods still pending say why
//!    (their FailedScheduling message).
//!
//! Which old pod goes first follows the ReplicaSet controller's ranking where the dump
//! can tell: pods without a node, then the lower `controller.kubernetes.io/pod-deletion-cost`,
//! then pods on a node with more pods of the Deployment (old and new), then the newer
//! `creationTimestamp`; remaining ties go to the pod later in the scenario.
//! New pods are named as the controller names them (see [`crate::workloads`]).
//!
//! Memory is bounded by the cluster and the number of pods, never by their product: a
//! [`Step`] keeps counts (the pods bound per node, the pods left pending per distinct
//! message, as kube-scheduler's FailedScheduling events effectively summarise them)
//! and the first [`LISTED_ATTEMPTS`] attempts without per-node detail. Whoever wants
//! every attempt with every node's verdict gets them from [`rollout_each`] one at a
//! time, as they are decided, and drops them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::{PodInfo, Registry};
use kubesched_plugins::label_selector::Selector;
use serde_json::{Value, json};

use crate::attempt::{Attempt, NodeNames};
use crate::scenario::{self, OtherObject, Scenario, Source};
use crate::simulate::{Detail, PodOutcome, PodResult, SimulationError, SimulationOptions, prepare};
use crate::whatif::WhatIfError;
use crate::workloads::{Strategy, Workload, WorkloadKind, scaled_value};

/// Why a rollout could not be simulated.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    /// The Deployment file or the Deployment is unusable.
    #[error("{0}")]
    Input(#[from] WhatIfError),
    /// The simulation could not start.
    #[error("{0}")]
    Simulation(#[from] SimulationError),
    /// The observer of [`rollout_each`] failed (writing the output): the rollout stops.
    #[error("{0}")]
    Observer(#[from] std::io::Error),
}

/// How many attempts of a step [`Step::attempts`] keeps (the first ones); a step that
/// attempts more is described by its counts.
pub const LISTED_ATTEMPTS: usize = 10;

/// What [`rollout_each`] hands its observer while the rollout runs.
#[derive(Debug)]
pub enum Event<'a> {
    /// One new pod's scheduling attempt, with the scheduler's per-node detail, in the
    /// step numbered `step`; it is dropped once the observer returns.
    Attempt {
        /// The step's number (from 1).
        step: usize,
        /// The attempt.
        attempt: &'a Attempt,
    },
    /// A step has ended.
    Step(&'a Step),
}

/// New pods of one step that are left without a node for the same reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingGroup {
    /// Their outcome: the FailedScheduling message (or the gates, or no profile), the
    /// same for each of them.
    pub outcome: PodOutcome,
    /// The scheduler name of the first of them.
    pub scheduler: String,
    /// How many pods.
    pub pods: usize,
    /// The first of them, `namespace/name`.
    pub first: String,
}

impl PendingGroup {
    /// The message: the FailedScheduling message, or why the pod was not attempted.
    pub fn message(&self) -> String {
        match &self.outcome {
            PodOutcome::Unschedulable(m) | PodOutcome::Nominated { message: m, .. } => m.clone(),
            PodOutcome::Gated(g) => format!("held by scheduling gates {}", g.join(", ")),
            PodOutcome::Ignored => format!("not ours: no profile named {:?}", self.scheduler),
            PodOutcome::Scheduled(n) => format!("-> {n}"),
        }
    }
}

/// A pod the rollout deletes or creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepPod {
    /// `namespace/name`.
    pub pod: String,
    /// Its node, if it has one.
    pub node: Option<String>,
}

/// One sync of the controller and the scheduling that follows it.
#[derive(Clone, Debug)]
pub struct Step {
    /// From 1.
    pub number: usize,
    /// Old pods deleted in this step.
    pub deleted: Vec<StepPod>,
    /// New pods created in this step.
    pub created: Vec<String>,
    /// How many new pods without a node were attempted.
    pub attempted: usize,
    /// The first [`LISTED_ATTEMPTS`] attempts, in order, without per-node detail
    /// ([`Detail::None`]); every attempt when the step made no more.
    pub attempts: Vec<PodResult>,
    /// The new pods bound in this step, per node (by node name).
    pub scheduled: BTreeMap<String, usize>,
    /// The new pods left without a node, grouped by outcome (by FailedScheduling
    /// message), in the order each group first appeared.
    pub pending: Vec<PendingGroup>,
    /// Old pods left after the step.
    pub old_left: usize,
    /// New pods bound after the step.
    pub new_ready: usize,
    /// New pods without a node after the step.
    pub new_pending: usize,
    /// Nodes holding at least one of the Deployment's pods (old or new) after the step.
    pub nodes_used: usize,
    /// What every pod on the cluster requests after the step.
    pub requested: ClusterLoad,
}

/// cpu and memory summed over every node of the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterLoad {
    /// Millicores.
    pub cpu: i64,
    /// Bytes.
    pub memory: i64,
}

impl ClusterLoad {
    /// What the cluster's pods request (`requested`) or its nodes offer.
    fn of(nodes: &[kubesched_framework::NodeInfo], requested: bool) -> ClusterLoad {
        nodes.iter().fold(ClusterLoad::default(), |sum, n| {
            let r = if requested {
                n.requested()
            } else {
                n.allocatable()
            };
            ClusterLoad {
                cpu: sum.cpu + r.milli_cpu,
                memory: sum.memory + r.memory,
            }
        })
    }

    fn json(self) -> Value {
        json!({"cpu": self.cpu, "memory": self.memory})
    }
}

/// How the rollout ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every new pod is bound and no old pod is left.
    Complete,
    /// A step changed nothing: the rollout waits for room that never comes.
    Stalled,
}

/// The answer of [`rollout`].
#[derive(Clone, Debug)]
pub struct Rollout {
    /// `namespace/name` of the Deployment.
    pub deployment: String,
    /// `spec.replicas`.
    pub replicas: usize,
    /// The strategy, described (e.g. `RollingUpdate, maxSurge 25% = 1, maxUnavailable 25% = 0`).
    pub strategy: String,
    /// The old pods at the start, `namespace/name` with their node.
    pub old_pods: Vec<StepPod>,
    /// The scenario's own pending pods, scheduled first, without per-node detail.
    pub pending: Vec<PodResult>,
    /// Every step.
    pub steps: Vec<Step>,
    /// What the cluster's nodes offer.
    pub allocatable: ClusterLoad,
    /// What the cluster's pods request before the first step (the scenario's pending
    /// pods placed).
    pub requested_before: ClusterLoad,
    /// The last attempt of the last step, without per-node detail: for a stalled
    /// rollout, why a new pod has no node.
    pub last_attempt: Option<PodResult>,
    /// How it ends.
    pub ending: Ending,
    /// Where the configuration came from.
    pub config_source: String,
    /// Warnings (configuration, workload).
    pub warnings: Vec<String>,
}

/// Steps are capped so that no input can loop for long: a rollout needs at most about
/// two steps per replica.
const MAX_STEPS_PER_REPLICA: usize = 4;

struct OldPod {
    key: String,
    node: Option<String>,
    deletion_cost: i64,
    created: String,
    position: usize,
}

/// A new pod. Its [`PodInfo`] (a copy of the template, some kilobytes) is made again
/// for each attempt rather than kept: 100,000 pending pods would hold gigabytes.
struct NewPod {
    name: String,
    node: Option<String>,
    available: bool,
}

/// Reads the Deployment of `source` (the first `apps/v1` Deployment in the file).
pub fn read_deployment(source: &Source) -> Result<Workload, WhatIfError> {
    let loaded = scenario::load(std::slice::from_ref(source))?;
    let deployment: Option<&OtherObject> = loaded
        .objects
        .iter()
        .find(|o| o.api_version == "apps/v1" && o.kind == "Deployment");
    let Some(object) = deployment else {
        return Err(WhatIfError::Input {
            file: source.name.clone(),
            problem: "no Deployment (apiVersion: apps/v1, kind: Deployment) in the file".into(),
        });
    };
    Workload::from_object(object)?
        .filter(|w| w.kind == WorkloadKind::Deployment)
        .ok_or_else(|| WhatIfError::Input {
            file: source.name.clone(),
            problem: "no Deployment in the file".into(),
        })
}

/// Simulates the rollout of `deployment` over `scenario` (see the module doc).
///
/// A rollout whose peak (`replicas + maxSurge` pods) is more than `max_pods` is refused
/// before anything is built (see [`crate::workloads::DEFAULT_MAX_PODS`]).
pub fn rollout(
    scenario: &Scenario,
    deployment: &Workload,
    options: &SimulationOptions,
    registry: &Registry,
    max_pods: usize,
) -> Result<Rollout, RolloutError> {
    rollout_each(
        scenario,
        deployment,
        options,
        registry,
        max_pods,
        |_| Ok(()),
    )
}

/// Simulates the rollout as [`rollout`] does, and hands `observer` each attempt (with
/// every node's verdict) as it is decided and each step as it ends, so that they can be
/// written out without being kept. An error of the observer stops the rollout and is
/// returned as [`RolloutError::Observer`].
pub fn rollout_each(
    scenario: &Scenario,
    deployment: &Workload,
    options: &SimulationOptions,
    registry: &Registry,
    max_pods: usize,
    mut observer: impl FnMut(Event<'_>) -> std::io::Result<()>,
) -> Result<Rollout, RolloutError> {
    let input_error = |field: &str, problem: String| {
        RolloutError::Input(WhatIfError::Input {
            file: deployment.source.clone(),
            problem: format!(
                "Deployment {}/{}: {field}: {problem}",
                kubesched_config::echo(&deployment.namespace),
                kubesched_config::echo(&deployment.name)
            ),
        })
    };
    let desired = deployment.replicas;
    let (surge, unavailable, strategy) = match &deployment.strategy {
        Some(Strategy::RollingUpdate {
            max_surge,
            max_unavailable,
        }) => {
            let surge = scaled_value(max_surge, desired, true)
                .map_err(|e| input_error("spec.strategy.rollingUpdate.maxSurge", e))?;
            let mut unavailable = scaled_value(max_unavailable, desired, false)
                .map_err(|e| input_error("spec.strategy.rollingUpdate.maxUnavailable", e))?;
            if surge == 0 && unavailable == 0 {
                unavailable = 1;
            }
            let unavailable = unavailable.min(desired);
            (
                surge,
                unavailable,
                format!(
                    "RollingUpdate, maxSurge {max_surge} = {surge} (rounded up), maxUnavailable {max_unavailable} = {unavailable} (rounded down)"
                ),
            )
        }
        _ => (0, desired, "Recreate".to_string()),
    };
    let recreate = matches!(deployment.strategy, Some(Strategy::Recreate));
    deployment
        .check_pod_count(desired, max_pods)
        .map_err(|e| RolloutError::Input(e.into()))?;
    let peak = desired.saturating_add(surge);
    if peak > max_pods {
        return Err(input_error(
            "spec.strategy.rollingUpdate.maxSurge",
            format!(
                "the rollout peaks at {peak} pods, more than kubesched expands (at most {max_pods}); raise the cap with --max-pods N"
            ),
        ));
    }

    // The new ReplicaSet exists for the scheduler's default spreading.
    let mut scenario = scenario.clone();
    for value in deployment.owned_objects() {
        scenario.objects.push(OtherObject {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            namespace: Some(deployment.namespace.clone()),
            name: deployment.owner_name(),
            value,
            source: deployment.source.clone(),
        });
    }
    let mut prepared = prepare(&scenario, options, registry)?;
    // Per-node detail is never kept (the module doc): the observer reads it from each
    // attempt before it is dropped.
    prepared.detail = Detail::None;
    let node_order = prepared.node_order();
    let node_names = Arc::new(NodeNames::new(node_order.clone()));
    let queue = std::mem::take(&mut prepared.queue);
    let pending: Vec<PodResult> = queue
        .iter()
        .map(|q| prepared.attempt(&q.pod_info, &node_order))
        .collect();
    let placed: BTreeMap<String, String> = pending
        .iter()
        .filter_map(|r| match &r.outcome {
            PodOutcome::Scheduled(n) => Some((r.pod.clone(), n.clone())),
            _ => None,
        })
        .collect();

    let selector = Selector::from_label_selector(deployment.selector.as_ref())
        .map_err(|e| input_error("spec.selector", e))?;
    let mut old: Vec<OldPod> = Vec::new();
    for (position, pod) in scenario.pods.iter().enumerate() {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        if namespace != deployment.namespace || !selector.matches(&labels) {
            continue;
        }
        let key = format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or(""));
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty() && node_order.contains(n))
            .or_else(|| placed.get(&key).cloned());
        let deletion_cost = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("controller.kubernetes.io/pod-deletion-cost"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let created = pod
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default();
        old.push(OldPod {
            key,
            node,
            deletion_cost,
            created,
            position,
        });
    }
    let old_pods: Vec<StepPod> = old
        .iter()
        .map(|o| StepPod {
            pod: o.key.clone(),
            node: o.node.clone(),
        })
        .collect();

    // The template pod, decoded strictly once; the new pods are copies of it.
    let mut taken: HashSet<String> = scenario
        .pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    let names = deployment.pod_names(0, desired, &taken);
    taken.extend(names.iter().cloned());
    let template = match names.first() {
        Some(first) => {
            let generated = Source {
                name: format!(
                    "{} (Deployment {}/{})",
                    deployment.source, deployment.namespace, deployment.name
                ),
                text:
                    json!({"apiVersion": "v1", "kind": "List", "items": [deployment.pod(0, first)]})
                        .to_string(),
            };
            scenario::load(&[generated])
                .map_err(|e| RolloutError::Input(e.into()))?
                .pods
                .first()
                .cloned()
        }
        None => None,
    };

    // New pod `name`: a copy of the template with its name and uid.
    let new_pod = |template: &Pod, name: &str| -> Result<Arc<PodInfo>, SimulationError> {
        let mut pod = template.clone();
        pod.metadata.name = Some(name.to_string());
        pod.metadata.uid = Some(crate::workloads::uid_for(&format!(
            "Pod/{}/{name}",
            deployment.namespace
        )));
        PodInfo::new(Arc::new(pod))
            .map(Arc::new)
            .map_err(|error| SimulationError::Pod {
                pod: format!("{}/{name}", deployment.namespace),
                error,
            })
    };
    let allocatable = ClusterLoad::of(prepared.scheduler.snapshot().nodes(), false);
    let requested_before = ClusterLoad::of(prepared.scheduler.snapshot().nodes(), true);
    let mut new: Vec<NewPod> = Vec::new();
    let mut steps = Vec::new();
    let mut last_attempt: Option<PodResult> = None;
    let max_steps = MAX_STEPS_PER_REPLICA * (desired + old.len()) + 4;
    let ending = loop {
        let done = old.is_empty() && new.len() == desired && new.iter().all(|p| p.node.is_some());
        if done {
            break Ending::Complete;
        }
        if steps.len() >= max_steps {
            break Ending::Stalled;
        }
        last_attempt = None;
        let mut step = Step {
            number: steps.len() + 1,
            deleted: Vec::new(),
            created: Vec::new(),
            attempted: 0,
            attempts: Vec::new(),
            scheduled: BTreeMap::new(),
            pending: Vec::new(),
            old_left: 0,
            new_ready: 0,
            new_pending: 0,
            nodes_used: 0,
            requested: ClusterLoad::default(),
        };
        let available_new = new.iter().filter(|p| p.available).count();
        let available_old = old.iter().filter(|p| p.node.is_some()).count();
        // The controller's sync: scale up, then scale down.
        let scale_up = if recreate {
            if old.is_empty() {
                desired - new.len().min(desired)
            } else {
                0
            }
        } else {
            let total = old.len() + new.len();
            let max_total = desired + surge;
            if total >= max_total {
                0
            } else {
                (max_total - total).min(desired.saturating_sub(new.len()))
            }
        };
        // rolloutRolling returns after a scale-up: a sync scales up or down, not both.
        let mut delete = if recreate {
            old.len()
        } else if old.is_empty() || scale_up > 0 {
            0
        } else {
            let all = old.len() + new.len();
            let min_available = desired - unavailable;
            let new_unavailable = new.len() - available_new;
            let max_scaled_down = all as i64 - min_available as i64 - new_unavailable as i64;
            if max_scaled_down <= 0 {
                0
            } else {
                let max_scaled_down = max_scaled_down as usize;
                let unhealthy = old.len() - available_old;
                let cleanup = unhealthy.min(max_scaled_down);
                let available = available_old + available_new;
                let scale_down = if available <= min_available {
                    0
                } else {
                    (available - min_available).min(available_old)
                };
                cleanup + scale_down
            }
        };
        delete = delete.min(old.len());
        // Which old pods go first: the ReplicaSet controller's ranking.
        // The ranking counts the Deployment's pods, old and new, on each node.
        let per_node = |old: &[OldPod], new: &[NewPod]| {
            let mut m: BTreeMap<String, usize> = BTreeMap::new();
            let nodes = old
                .iter()
                .map(|o| &o.node)
                .chain(new.iter().map(|p| &p.node));
            for n in nodes.flatten() {
                *m.entry(n.clone()).or_default() += 1;
            }
            m
        };
        for _ in 0..delete {
            let counts = per_node(&old, &new);
            let rank = |o: &OldPod| {
                (
                    o.node.is_some(),
                    o.deletion_cost,
                    std::cmp::Reverse(
                        o.node
                            .as_ref()
                            .map_or(0, |n| counts.get(n).copied().unwrap_or(0)),
                    ),
                    std::cmp::Reverse(o.created.clone()),
                    std::cmp::Reverse(o.position),
                )
            };
            let Some(index) = (0..old.len()).min_by_key(|&i| rank(&old[i])) else {
                break;
            };
            let gone = old.remove(index);
            if let Some(node) = &gone.node {
                prepared
                    .scheduler
                    .snapshot_mut()
                    .remove_pod(node, &gone.key);
            }
            step.deleted.push(StepPod {
                pod: gone.key,
                node: gone.node,
            });
        }
        if let Some(template) = &template {
            for _ in 0..scale_up {
                let index = new.len();
                let name = names
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| format!("{}-{index}", deployment.owner_name()));
                let info = new_pod(template, &name)?;
                step.created.push(info.key().to_string());
                new.push(NewPod {
                    name,
                    node: None,
                    available: false,
                });
            }
        }
        // The scheduler: every new pod without a node, in creation order.
        let mut bound = 0;
        let mut groups: HashMap<String, usize> = HashMap::new();
        for p in new.iter_mut().filter(|p| p.node.is_none()) {
            let Some(template) = &template else {
                break;
            };
            let info = new_pod(template, &p.name)?;
            let attempt = prepared.attempt_raw(&info, &node_names);
            observer(Event::Attempt {
                step: step.number,
                attempt: &attempt,
            })?;
            step.attempted += 1;
            if let PodOutcome::Scheduled(node) = &attempt.outcome {
                p.node = Some(node.clone());
                bound += 1;
                *step.scheduled.entry(node.clone()).or_default() += 1;
            } else {
                let key = pending_message(&attempt.scheduler, &attempt.outcome);
                match groups.get(&key) {
                    Some(&i) => step.pending[i].pods += 1,
                    None => {
                        groups.insert(key, step.pending.len());
                        step.pending.push(PendingGroup {
                            outcome: attempt.outcome.clone(),
                            scheduler: attempt.scheduler.clone(),
                            pods: 1,
                            first: attempt.pod.clone(),
                        });
                    }
                }
            }
            let result = attempt.to_result(Detail::None);
            if step.attempts.len() < LISTED_ATTEMPTS {
                step.attempts.push(result.clone());
            }
            last_attempt = Some(result);
        }
        for p in new.iter_mut() {
            p.available = p.node.is_some();
        }
        step.old_left = old.len();
        step.new_ready = new.iter().filter(|p| p.node.is_some()).count();
        step.new_pending = new.len() - step.new_ready;
        step.nodes_used = per_node(&old, &new).len();
        step.requested = ClusterLoad::of(prepared.scheduler.snapshot().nodes(), true);
        let changed = !step.deleted.is_empty() || !step.created.is_empty() || bound > 0;
        observer(Event::Step(&step))?;
        steps.push(step);
        if !changed {
            break Ending::Stalled;
        }
    };
    let mut warnings = prepared.warnings;
    warnings.extend(deployment.warnings.iter().cloned());
    Ok(Rollout {
        deployment: format!("{}/{}", deployment.namespace, deployment.name),
        replicas: desired,
        strategy,
        old_pods,
        pending,
        steps,
        allocatable,
        requested_before,
        last_attempt,
        ending,
        config_source: prepared.config_source,
        warnings,
    })
}

fn message(r: &PodResult) -> String {
    pending_message(&r.scheduler, &r.outcome)
}

/// An outcome in words, after the pod's name: `-> node`, `cannot be scheduled: ...`.
fn pending_message(scheduler: &str, outcome: &PodOutcome) -> String {
    match outcome {
        PodOutcome::Scheduled(n) => format!("-> {n}"),
        PodOutcome::Unschedulable(m) | PodOutcome::Nominated { message: m, .. } => {
            format!("cannot be scheduled: {m}")
        }
        PodOutcome::Ignored => format!("not ours: no profile named {scheduler:?}"),
        PodOutcome::Gated(g) => format!("held by scheduling gates {}", g.join(", ")),
    }
}

impl Rollout {
    /// The answer for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Configuration: {}", self.config_source);
        let _ = writeln!(
            out,
            "Deployment {}: {} replica(s), {}",
            self.deployment, self.replicas, self.strategy
        );
        let _ = writeln!(out, "Old pods: {}", self.old_pods.len());
        for p in &self.old_pods {
            let _ = writeln!(
                out,
                "  {} on {}",
                p.pod,
                p.node.as_deref().unwrap_or("(no node)")
            );
        }
        for step in &self.steps {
            let _ = writeln!(out, "Step {}:", step.number);
            for d in &step.deleted {
                let _ = writeln!(
                    out,
                    "  delete old {} (from {})",
                    d.pod,
                    d.node.as_deref().unwrap_or("no node")
                );
            }
            match step.created.as_slice() {
                created if created.len() <= LISTED_ATTEMPTS => {
                    for c in created {
                        let _ = writeln!(out, "  create new {c}");
                    }
                }
                [first, .., last] => {
                    let _ = writeln!(
                        out,
                        "  create {} new pods: {first} ... {last}",
                        step.created.len()
                    );
                }
                _ => {}
            }
            if step.attempted <= step.attempts.len() {
                for a in &step.attempts {
                    let _ = writeln!(out, "  schedule {} {}", a.pod, message(a));
                }
            } else {
                // Too many pods to list: where they went, and why the others did not.
                if !step.scheduled.is_empty() {
                    let per_node: Vec<String> = step
                        .scheduled
                        .iter()
                        .map(|(node, n)| format!("{node} {n}"))
                        .collect();
                    let _ = writeln!(
                        out,
                        "  schedule {} new pod(s) on {} node(s): {}",
                        step.scheduled.values().sum::<usize>(),
                        step.scheduled.len(),
                        per_node.join(", ")
                    );
                }
                for g in &step.pending {
                    let _ = writeln!(
                        out,
                        "  {} new pod(s) {}",
                        g.pods,
                        pending_message(&g.scheduler, &g.outcome)
                    );
                }
            }
            let _ = writeln!(
                out,
                "  now: {} old, {} new running, {} new pending",
                step.old_left, step.new_ready, step.new_pending
            );
        }
        match self.ending {
            Ending::Complete => {
                let _ = writeln!(
                    out,
                    "Rollout complete in {} step(s): every new pod is scheduled",
                    self.steps.len()
                );
            }
            Ending::Stalled => {
                let last = self.steps.last();
                let _ = writeln!(
                    out,
                    "Rollout stalls at step {}: {} old pod(s) left, {} of {} new pod(s) running",
                    last.map_or(0, |s| s.number),
                    last.map_or(0, |s| s.old_left),
                    last.map_or(0, |s| s.new_ready),
                    self.replicas
                );
                if let Some(a) = &self.last_attempt {
                    let _ = writeln!(out, "  {} {}", a.pod, message(a));
                }
            }
        }
        out
    }

    /// The last line of `--format jsonl`: the rollout's figures and how it ends
    /// (`steps` is the number of steps; each step has its own line, [`Step::json`]).
    pub fn json(&self) -> Value {
        json!({
            "deployment": self.deployment, "config": self.config_source,
            "replicas": self.replicas, "strategy": self.strategy,
            "oldPods": self.old_pods.iter().map(|d| json!({"pod": d.pod, "node": d.node})).collect::<Vec<_>>(),
            "steps": self.steps.len(),
            "allocatable": self.allocatable.json(), "requestedBefore": self.requested_before.json(),
            "result": match self.ending { Ending::Complete => "Complete", Ending::Stalled => "Stalled" },
        })
    }

    /// Every step's line then [`Rollout::json`]'s, as `--format jsonl` prints them
    /// without per-pod lines.
    pub fn jsonl(&self) -> String {
        let mut out = String::new();
        for s in self.steps.iter().map(Step::json).chain([self.json()]) {
            let _ = writeln!(out, "{s}");
        }
        out
    }
}

impl Step {
    /// The step's line of `--format jsonl`: what the controller did (the old pods
    /// deleted, by name; the new pods created, counted), the new pods bound per node,
    /// the new pods left pending counted per message, and the state after the step. Its
    /// size is bounded by the cluster (nodes, distinct messages, old pods), not by the
    /// number of new pods.
    pub fn json(&self) -> Value {
        let pending: Vec<Value> = self
            .pending
            .iter()
            .map(|g| json!({"message": g.message(), "pods": g.pods, "first": g.first}))
            .collect();
        json!({
            "step": self.number,
            "deleted": self.deleted.iter().map(|d| json!({"pod": d.pod, "node": d.node})).collect::<Vec<_>>(),
            "created": self.created.len(),
            "attempted": self.attempted,
            "scheduled": self.scheduled,
            "pending": pending,
            "old": self.old_left, "newRunning": self.new_ready, "newPending": self.new_pending,
            "nodesUsed": self.nodes_used, "requested": self.requested.json(),
        })
    }
}
