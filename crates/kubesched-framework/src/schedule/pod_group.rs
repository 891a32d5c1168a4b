//! The PodGroup scheduling cycle of kube-scheduler v1.36 (`scheduleOnePodGroup` in
//! pkg/scheduler/schedule_one_podgroup.go), run when the `GenericWorkload` gate is on
//! for the pods that name a PodGroup: the group's pending pods are attempted one after
//! the other on one cluster state, each later pod seeing the earlier ones assumed, and
//! the group is placed only if some pod's Permit succeeds
//! (`podGroupSchedulingDefaultAlgorithm`). Otherwise every pod that found a node goes
//! back unschedulable with `pod group is unschedulable, ` and its Permit message, and
//! nothing of the group stays assumed (`submitPodGroupAlgorithmResult`). The cycle
//! reports the PodGroup's `PodGroupScheduled` condition as kube-scheduler writes it.
//!
//! A pod that no node fits and that PostFilter nominates a node for is assumed there,
//! as if chosen, and goes through Reserve and Permit, so that the group's later pods
//! see it (`requiresPreemption`). The last pod whose own Permit succeeds decides: the
//! group is placed, or, when some pod so far needed preemption, it waits for it: every
//! pod goes back, the ones that needed preemption with their failure and nomination,
//! the others with `pod group is unschedulable, pod group is waiting for preemption to
//! complete`, which is also the condition's message. The caller evicts the victims.
//!
//! kube-scheduler evaluates the group, reverts it, and then assumes the feasible pods
//! again for their binding cycles on the nodes found; here the pods stay assumed until
//! the group is decided, then are bound (a pod still waiting for another Permit plugin
//! stays parked) or reverted, which places the same pods on the same nodes.
//!
//! When the profile has PlacementGenerate plugins (v1.36's
//! `TopologyAwareWorkloadScheduling`), the group is tried on each placement alone and
//! undone, and the best placement it fits is tried again and submitted
//! (`podGroupSchedulingPlacementAlgorithm`, `findBestPlacement`). Not modelled: v1.36's
//! alpha gate `WorkloadAwarePreemption`, which kubesched refuses to turn on.

use std::sync::Arc;

use super::placements::{PlacementChoice, PlacementTrial, PlacementTrials, choose_placement};
use super::{Outcome, Parked, PastPermit, ScheduleError, Scheduler, ToPermit};
use crate::framework::Framework;
use crate::placement::PodGroupRef;
use crate::pod_info::PodInfo;
use crate::status::{Code, Status};

/// `errPodGroupUnschedulable`.
const POD_GROUP_UNSCHEDULABLE: &str = "pod group is unschedulable";

/// How a PodGroup cycle ends (`podGroupAlgorithmResult`'s status and
/// `waitingOnPreemption`), when no pod failed with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodGroupVerdict {
    /// Some pod's Permit succeeded and no pod needed preemption: the group binds.
    Placed,
    /// No pod's Permit succeeded.
    Unschedulable,
    /// Some pod's Permit succeeded, but some pod needed preemption: every pod goes
    /// back, nominated, until its victims are gone.
    WaitingOnPreemption,
}

/// The verdict of a PodGroup cycle so far, folded over its pods in the order they
/// are attempted (`podGroupSchedulingDefaultAlgorithm`): the last pod whose own Permit
/// succeeds decides; the group is placed, or waits for preemption when some pod up to
/// that one needed it. Shared by [`Scheduler::schedule_pod_group`] and runtimes that
/// run the cycle's pods themselves.
///
/// ```
/// use kubesched_framework::{PodGroupVerdict, VerdictSoFar};
///
/// let mut v = VerdictSoFar::default();
/// v.pod_past_permit(false, false); // waits for its gang
/// assert_eq!(v.verdict(), PodGroupVerdict::Unschedulable);
/// v.pod_past_permit(false, true); // assumed on a node its preemption frees
/// v.pod_past_permit(true, false); // its Permit reaches the quorum
/// assert_eq!(v.verdict(), PodGroupVerdict::WaitingOnPreemption);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct VerdictSoFar {
    requires_preemption: bool,
    decided: Option<PodGroupVerdict>,
}

impl VerdictSoFar {
    /// One more pod got past Reserve: `permit_succeeded` when its own Permit said
    /// yes (not Wait), `needed_preemption` when it was assumed on the node its
    /// PostFilter nominated.
    pub fn pod_past_permit(&mut self, permit_succeeded: bool, needed_preemption: bool) {
        self.requires_preemption |= needed_preemption;
        if permit_succeeded {
            self.decided = Some(if self.requires_preemption {
                PodGroupVerdict::WaitingOnPreemption
            } else {
                PodGroupVerdict::Placed
            });
        }
    }

    /// The verdict if the cycle ended now.
    pub fn verdict(&self) -> PodGroupVerdict {
        self.decided.unwrap_or(PodGroupVerdict::Unschedulable)
    }
}

/// `pod group is unschedulable, pod group is waiting for preemption to complete`:
/// the status of a group that waits for its preemption, as kube-scheduler reports
/// it for the pods that fit and on the PodGroup.
fn waiting_on_preemption_message() -> String {
    Status::with_reasons(
        Code::Unschedulable,
        vec![
            POD_GROUP_UNSCHEDULABLE.to_string(),
            "pod group is waiting for preemption to complete".to_string(),
        ],
    )
    .message()
}

/// v1.36's RunPermitPlugins' own Wait reason (v1.35's names the pod).
const WAIT_REASON: &str = "one or more plugins asked to wait and no plugin rejected pod";

/// The `PodGroupScheduled` condition a cycle writes on its PodGroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodGroupCondition {
    /// `True` (placed) or `False`.
    pub status: bool,
    /// `Scheduled`, `Unschedulable` or `SchedulerError`.
    pub reason: String,
    /// Empty when placed; `pod group is unschedulable` otherwise.
    pub message: String,
}

impl PodGroupCondition {
    /// `True`, `Scheduled`: the group was placed.
    pub fn scheduled() -> PodGroupCondition {
        PodGroupCondition {
            status: true,
            reason: "Scheduled".into(),
            message: String::new(),
        }
    }

    /// `False`, `Unschedulable`, `pod group is unschedulable`.
    pub fn unschedulable() -> PodGroupCondition {
        PodGroupCondition {
            status: false,
            reason: "Unschedulable".into(),
            message: POD_GROUP_UNSCHEDULABLE.into(),
        }
    }

    /// `False`, `Unschedulable`, `pod group is unschedulable, pod group is waiting for
    /// preemption to complete`: the group fits once its pods' victims are gone.
    pub fn waiting_on_preemption() -> PodGroupCondition {
        PodGroupCondition {
            status: false,
            reason: "Unschedulable".into(),
            message: waiting_on_preemption_message(),
        }
    }

    /// `False`, `SchedulerError`, with the error's message.
    pub fn scheduler_error(message: &str) -> PodGroupCondition {
        PodGroupCondition {
            status: false,
            reason: "SchedulerError".into(),
            message: message.to_string(),
        }
    }
}

/// What one PodGroup scheduling cycle did.
#[derive(Debug, Default)]
pub struct PodGroupCycle {
    /// Every pod decided during the cycle, with its outcome, in the order decided
    /// (pods held by PreEnqueue included, as [`Outcome::Gated`]).
    pub outcomes: Vec<(Arc<PodInfo>, Outcome)>,
    /// The pods that still wait at Permit after the cycle (a group placed while some
    /// pod waits for another plugin); [`Scheduler::resolve_waiting`] and
    /// [`Scheduler::time_out_waiting`] decide them later.
    pub waiting: Vec<Arc<PodInfo>>,
    /// The condition written on the PodGroup; `None` when no pod entered the cycle
    /// (all held by PreEnqueue, or not this scheduler's) or the pods name different
    /// schedulers.
    pub condition: Option<PodGroupCondition>,
}

impl PodGroupCycle {
    /// Records `pod`'s outcome. A pod decided after it waited stays in `waiting` until
    /// [`PodGroupCycle::finish`], so that a gang of n pods costs O(n), not O(n²).
    fn decide(&mut self, pod: Arc<PodInfo>, outcome: Outcome) {
        self.outcomes.push((pod, outcome));
    }

    /// Leaves in `waiting` only the pods that were not decided.
    fn finish(mut self) -> PodGroupCycle {
        if !self.waiting.is_empty() {
            let decided: std::collections::HashSet<&str> =
                self.outcomes.iter().map(|(p, _)| p.uid()).collect();
            let waiting = std::mem::take(&mut self.waiting)
                .into_iter()
                .filter(|p| !decided.contains(p.uid()))
                .collect();
            self.waiting = waiting;
        }
        self
    }
}

/// One run of `podGroupSchedulingDefaultAlgorithm` over the group's queued pods, not
/// submitted yet: its pods stay assumed until [`Scheduler::submit_group`] or
/// [`Scheduler::forget_attempt`].
struct GroupAttempt {
    /// The pods that found no node (or were not attempted), with their outcome, in
    /// the order attempted.
    decided: Vec<(Arc<PodInfo>, Outcome)>,
    /// The pods past Permit (or waiting there), assumed on their node.
    held: Vec<PastPermit>,
    verdict: VerdictSoFar,
    /// The position of the pod that failed with an error, and the message the other
    /// pods get.
    failed: Option<(usize, String)>,
}

impl GroupAttempt {
    /// Whether the group fits: no error, and placed or waiting for its preemption
    /// (`result.status.IsSuccess() || result.waitingOnPreemption`).
    fn fits(&self) -> bool {
        self.failed.is_none() && self.verdict.verdict() != PodGroupVerdict::Unschedulable
    }
}

/// Every pod of the group turned down with `status` before any was attempted (its
/// placements could not be made or ranked), and the group's `condition`.
fn fail_all(
    mut cycle: PodGroupCycle,
    queued: &[Arc<PodInfo>],
    status: &Status,
    condition: PodGroupCondition,
) -> PodGroupCycle {
    for pod in queued {
        let error = ScheduleError::Internal(status.clone());
        cycle.decide(
            pod.clone(),
            Outcome::Unschedulable {
                error,
                nominated: None,
            },
        );
    }
    cycle.condition = Some(condition);
    cycle
}

/// The simulator's tries of a group on a placement: its own attempt, undone.
struct GroupTrials<'a> {
    sched: &'a mut Scheduler,
    queued: &'a [Arc<PodInfo>],
}

impl PlacementTrials for GroupTrials<'_> {
    fn scheduler(&mut self) -> &mut Scheduler {
        self.sched
    }

    fn try_group(&mut self) -> PlacementTrial {
        let attempt = self.sched.attempt_group(self.queued);
        let trial = PlacementTrial {
            fits: attempt.fits(),
            failed: attempt.failed.is_some(),
            proposed: if attempt.fits() {
                let held = attempt.held.iter();
                held.map(|p| (p.parked.pod.clone(), p.parked.result.suggested_host))
                    .collect()
            } else {
                Vec::new()
            },
        };
        self.sched.forget_attempt(attempt);
        trial
    }
}

impl Scheduler {
    /// Runs one PodGroup scheduling cycle over `pods`, the group's pending pods in
    /// the order kube-scheduler attempts them (the popped pod first, then by priority
    /// and queue time).
    pub fn schedule_pod_group(&mut self, pods: &[Arc<PodInfo>]) -> PodGroupCycle {
        self.run_pod_group_cycle(pods).finish()
    }

    fn run_pod_group_cycle(&mut self, pods: &[Arc<PodInfo>]) -> PodGroupCycle {
        let mut cycle = PodGroupCycle::default();
        // frameworkForPodGroup: one scheduler name for the group's queued pods.
        let mut queued = Vec::new();
        for pod in pods {
            let Some(index) = self
                .profiles
                .iter()
                .position(|p| p.profile_name() == pod.scheduler_name())
            else {
                cycle.decide(pod.clone(), Outcome::NotOurs);
                continue;
            };
            let gate = self.profiles[index].run_pre_enqueue_plugins(pod);
            if !gate.is_success() {
                cycle.decide(pod.clone(), Outcome::Gated(gate));
                continue;
            }
            queued.push(pod.clone());
        }
        if let Some(other) = queued
            .iter()
            .find(|p| p.scheduler_name() != queued[0].scheduler_name())
        {
            let message = mixed_schedulers_message(other, &queued[0]);
            for pod in queued {
                let error = ScheduleError::Internal(Status::error(message.clone()));
                cycle.decide(
                    pod,
                    Outcome::Unschedulable {
                        error,
                        nominated: None,
                    },
                );
            }
            return cycle;
        }
        if queued.is_empty() {
            return cycle;
        }
        let fwk = self
            .profile_index(queued[0].scheduler_name())
            .map(|i| self.profiles[i].clone());
        if let Some(fwk) = fwk.filter(|f| f.has_placement_generate_plugins())
            && let Some(name) = queued[0].pod_group_name()
        {
            let group = PodGroupRef {
                namespace: queued[0].namespace(),
                name,
            };
            return self.run_placement_algorithm(cycle, &queued, &fwk, group);
        }
        let attempt = self.attempt_group(&queued);
        self.submit_group(&mut cycle, &queued, attempt);
        cycle
    }

    /// `podGroupSchedulingDefaultAlgorithm`: each pod up to Permit, later pods seeing
    /// the earlier ones assumed (a pod PostFilter nominated a node for, on that node).
    /// The last pod whose own Permit succeeds decides: the group is placed, or, if
    /// some pod so far needed preemption, it waits for the preemption. A pod failing
    /// with an error (not a rejection) stops it there.
    fn attempt_group(&mut self, queued: &[Arc<PodInfo>]) -> GroupAttempt {
        let mut attempt = GroupAttempt {
            decided: Vec::new(),
            held: Vec::new(),
            verdict: VerdictSoFar::default(),
            failed: None,
        };
        for (i, pod) in queued.iter().enumerate() {
            match self.cycle_to_permit(pod, true) {
                ToPermit::Decided(outcome) => {
                    if let Outcome::Unschedulable { error, .. } = &outcome
                        && matches!(
                            error,
                            ScheduleError::Internal(_) | ScheduleError::FailedAfterFilter { .. }
                        )
                    {
                        attempt.failed = Some((i, other_pod_failed_message(error)));
                        attempt.decided.push((pod.clone(), outcome));
                        return attempt;
                    }
                    attempt.decided.push((pod.clone(), outcome));
                }
                ToPermit::Past(past) => {
                    attempt
                        .verdict
                        .pod_past_permit(past.parked.wait.is_success(), past.preempting.is_some());
                    attempt.held.push(past);
                }
            }
        }
        attempt
    }

    /// `podGroupSchedulingPlacementAlgorithm` (v1.36, `TopologyAwareWorkloadScheduling`):
    /// the placement [`choose_placement`] chooses, attempted and submitted. When the
    /// group does not fit there, its condition reads `0/N placements are available,
    /// first placement status: ...`.
    fn run_placement_algorithm(
        &mut self,
        mut cycle: PodGroupCycle,
        queued: &[Arc<PodInfo>],
        fwk: &Framework,
        group: PodGroupRef<'_>,
    ) -> PodGroupCycle {
        let mut trials = GroupTrials {
            sched: self,
            queued,
        };
        let (placement, count) = match choose_placement(&mut trials, fwk, group) {
            PlacementChoice::Attempt { placement, count } => (placement, count),
            PlacementChoice::FailAll { status, condition } => {
                return fail_all(cycle, queued, &status, condition);
            }
        };
        self.placement = Some(placement);
        let attempt = self.attempt_group(queued);
        self.placement = None;
        let unavailable = !attempt.fits() && attempt.failed.is_none();
        self.submit_group(&mut cycle, queued, attempt);
        if unavailable && let Some(condition) = cycle.condition.take() {
            cycle.condition = Some(condition.no_placement_available(count));
        }
        cycle
    }

    /// Undoes an attempt that only measured a placement: every pod it assumed is
    /// unreserved and forgotten.
    fn forget_attempt(&mut self, attempt: GroupAttempt) {
        for past in attempt.held {
            self.revert(past);
        }
    }

    /// `submitPodGroupAlgorithmResult`: the attempt's pods bound, waiting or back in
    /// the queue, and the group's condition.
    fn submit_group(
        &mut self,
        cycle: &mut PodGroupCycle,
        queued: &[Arc<PodInfo>],
        attempt: GroupAttempt,
    ) {
        let GroupAttempt {
            decided,
            held,
            verdict,
            failed,
        } = attempt;
        for (pod, outcome) in decided {
            cycle.decide(pod, outcome);
        }
        if let Some((i, message)) = failed {
            self.fail_group(cycle, held, &queued[i + 1..], &message);
            return;
        }
        match verdict.verdict() {
            PodGroupVerdict::Placed => {
                for past in held {
                    let pod = past.parked.pod.clone();
                    if past.preempting.is_some() {
                        // It needed preemption after the group's last Permit success:
                        // back with the group's message, its nomination dropped.
                        let wait = past.parked.wait.clone();
                        let (pod, node, _) = self.revert(past);
                        let status = Status::new(
                            Code::Unschedulable,
                            pod_group_unschedulable_message(&wait),
                        );
                        cycle.decide(pod, Outcome::BindingFailed { node, status });
                        continue;
                    }
                    match self.after_permit(past.parked) {
                        Outcome::Waiting { .. } => cycle.waiting.push(pod),
                        outcome => cycle.decide(pod, outcome),
                    }
                }
                for (p, outcome) in self.resolve_waiting() {
                    cycle.decide(p, outcome);
                }
                cycle.condition = Some(PodGroupCondition::scheduled());
            }
            PodGroupVerdict::Unschedulable => {
                // No Permit succeeded, so every pod assumed waits there: each goes
                // back with the group's message and its Permit message (a pod that
                // needed preemption too, its nomination dropped).
                for past in held {
                    let pod = past.parked.pod.clone();
                    if let Outcome::Waiting { .. } = self.after_permit(past.parked) {
                        cycle.waiting.push(pod);
                    }
                }
                self.reject_waiting(cycle, group_message);
                cycle.condition = Some(PodGroupCondition::unschedulable());
            }
            PodGroupVerdict::WaitingOnPreemption => {
                // Every pod goes back: one that needed preemption with its failure and
                // nomination, one that fit with the group's status.
                let message = waiting_on_preemption_message();
                for past in held {
                    let (pod, node, preempting) = self.revert(past);
                    let outcome = match preempting {
                        Some((error, nominated)) => Outcome::Unschedulable {
                            error,
                            nominated: Some(nominated),
                        },
                        None => Outcome::BindingFailed {
                            node,
                            status: Status::new(Code::Unschedulable, message.clone()),
                        },
                    };
                    cycle.decide(pod, outcome);
                }
                cycle.condition = Some(PodGroupCondition::waiting_on_preemption());
            }
        }
    }

    /// Unreserves and forgets a pod the cycle assumed and takes it out of the waiting
    /// pods; its pod, node and what it needed preemption for.
    fn revert(
        &mut self,
        past: PastPermit,
    ) -> (
        Arc<PodInfo>,
        String,
        Option<(ScheduleError, crate::plugin::PostFilterResult)>,
    ) {
        let PastPermit {
            parked:
                Parked {
                    profile,
                    mut state,
                    pod,
                    assumed,
                    node,
                    ..
                },
            preempting,
        } = past;
        let fwk = self.profiles[profile].clone();
        fwk.waiting_pods().remove(assumed.uid());
        fwk.run_reserve_plugins_unreserve(&mut state, &assumed, &node);
        self.snapshot.remove_pod(&node, assumed.key());
        (pod, node, preempting)
    }

    /// A pod of the group failed with an error (not a rejection): the cycle stops
    /// there, and every other pod of the group, assumed or not attempted yet, fails
    /// with `failed to schedule other pod from a pod group: ` and that error; the
    /// condition is False, `SchedulerError` (podGroupSchedulingDefaultAlgorithm,
    /// submitPodGroupAlgorithmResult).
    fn fail_group(
        &mut self,
        cycle: &mut PodGroupCycle,
        held: Vec<PastPermit>,
        rest: &[Arc<PodInfo>],
        message: &str,
    ) {
        let failed = |message: &str| Outcome::Unschedulable {
            error: ScheduleError::Internal(Status::error(message.to_string())),
            nominated: None,
        };
        for past in held {
            let (pod, node, _) = self.revert(past);
            let status = Status::error(message.to_string());
            cycle.decide(pod, Outcome::BindingFailed { node, status });
        }
        for pod in rest {
            cycle.decide(pod.clone(), failed(message));
        }
        cycle.condition = Some(PodGroupCondition::scheduler_error(message));
    }

    /// The group is not placed: each of its pods still waiting at Permit is
    /// unreserved and forgotten, unschedulable with `message` (by default `pod group
    /// is unschedulable, ` and its Permit status' message).
    fn reject_waiting(&mut self, cycle: &mut PodGroupCycle, message: impl Fn(&Parked) -> String) {
        for pod in std::mem::take(&mut cycle.waiting) {
            let Some(parked) = self.parked.iter().find(|p| p.pod.uid() == pod.uid()) else {
                continue;
            };
            let message = message(parked);
            let profile = parked.profile;
            let uid = parked.assumed.uid().to_string();
            self.profiles[profile]
                .waiting_pods()
                .get(&uid, |w| w.reject("", &message));
            for (p, outcome) in self.resolve_waiting() {
                cycle.decide(p, outcome);
            }
        }
    }
}

/// `pod group is unschedulable, <Permit's Wait message>`, the Wait message as v1.36's
/// RunPermitPlugins words it.
fn group_message(parked: &Parked) -> String {
    pod_group_unschedulable_message(&parked.wait)
}

/// What kube-scheduler v1.36 reports for a pod of a PodGroup cycle that found a node
/// and waited at Permit with `wait` when the group is not placed: `pod group is
/// unschedulable, ` and the Wait status' reasons as its RunPermitPlugins words them.
pub fn pod_group_unschedulable_message(wait: &Status) -> String {
    let reasons = wait.reasons();
    let mut parts = vec![POD_GROUP_UNSCHEDULABLE.to_string()];
    parts.extend(
        reasons[..reasons.len().saturating_sub(1)]
            .iter()
            .map(|r| r.to_string()),
    );
    parts.push(WAIT_REASON.into());
    let status = Status::with_reasons(Code::Unschedulable, parts);
    status.message()
}

/// `frameworkForPodGroup`'s error for a group whose pods name two schedulers.
pub fn mixed_schedulers_message(other: &PodInfo, first: &PodInfo) -> String {
    format!(
        "all pods in a single pod group should have the same .spec.schedulerName set, got: {:?} and {:?}",
        other.scheduler_name(),
        first.scheduler_name()
    )
}

/// `podGroupSchedulingDefaultAlgorithm`'s error when a pod of the group failed with
/// an error (not a rejection).
pub fn other_pod_failed_message(error: &impl std::fmt::Display) -> String {
    format!("failed to schedule other pod from a pod group: {error}")
}
