//! PodGroup cycles in `simulate` (kube-scheduler v1.36 with the `GenericWorkload`
//! gate): when the queue reaches a pod that names a PodGroup, every pending pod of the
//! group is attempted in one cycle ([`Scheduler::schedule_pod_group`]), in queue
//! order, and their lines follow one another there. The cycle's `PodGroupScheduled`
//! condition is kept in [`Prepared::pod_groups`]. [`Prepared::run_decisions`] runs the
//! same cycles and keeps only the decisions. [`Prepared::attempt_group`] is the cycle
//! with its attempts, for `simulate` and for a replay, which takes a group's pods out
//! of its own queue ([`group_key`] names the group).
//!
//! [`Scheduler::schedule_pod_group`]: kubesched_framework::Scheduler::schedule_pod_group

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use kubesched_framework::{Outcome, PodGroupCondition, PodGroupCycle, PodInfo, QueuedPodInfo};
use kubesched_plugins::gang_scheduling::pod_group_name;

use crate::attempt::{Attempt, NodeNames};
use crate::simulate::{Decision, PodOutcome};
use crate::simulate::{Prepared, apply, settle};

/// The queue's pods grouped by the PodGroup they name, found in one pass over the
/// queue so that each cycle does not scan it again.
pub(crate) struct QueueGroups {
    /// For each queue position, the group it belongs to (an index into `members`).
    group_of: Vec<Option<usize>>,
    /// Each group's queue positions, in queue order.
    members: Vec<Vec<usize>>,
    /// Whether each queue position has been attempted (in a group's cycle).
    done: Vec<bool>,
}

impl QueueGroups {
    /// Groups `queue`'s pods by the `namespace/name` of the PodGroup they name.
    pub(crate) fn new(queue: &[QueuedPodInfo]) -> QueueGroups {
        let mut index: HashMap<(&str, &str), usize> = HashMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let group_of = queue
            .iter()
            .enumerate()
            .map(|(position, queued)| {
                let pod = &queued.pod_info;
                let group = pod_group_name(pod)?;
                let next = members.len();
                let g = *index.entry((pod.namespace(), group)).or_insert(next);
                if g == next {
                    members.push(Vec::new());
                }
                members[g].push(position);
                Some(g)
            })
            .collect();
        QueueGroups {
            group_of,
            members,
            done: vec![false; queue.len()],
        }
    }

    /// Whether the pod at `position` was already attempted in its group's cycle.
    pub(crate) fn done(&self, position: usize) -> bool {
        self.done[position]
    }

    /// The queue positions of the pending pods of the group of the pod at `position`,
    /// in queue order, marked attempted; `None` when that pod names no PodGroup.
    pub(crate) fn take_pending(&mut self, position: usize) -> Option<Vec<usize>> {
        let group = self.group_of[position]?;
        let pending: Vec<usize> = self.members[group]
            .iter()
            .copied()
            .filter(|&p| !self.done[p])
            .collect();
        for &p in &pending {
            self.done[p] = true;
        }
        Some(pending)
    }
}

/// The attempts of one PodGroup cycle ([`Prepared::attempt_group`]).
#[derive(Debug, Default)]
pub struct GroupAttempts {
    /// One attempt per pod of the cycle, in the order given, each with the pod's uid
    /// while it still waits at Permit (its outcome is then not written yet:
    /// [`apply`] gives it the one the wait ends with).
    pub attempts: Vec<(Attempt, Option<String>)>,
    /// Pods outside the cycle decided during it (pods that waited at Permit from
    /// earlier attempts, allowed or rejected by this cycle's plugins), with their
    /// outcomes.
    pub others: Vec<(Arc<PodInfo>, Outcome)>,
    /// When the group waits for its preemption: each pod of the cycle that found a node
    /// without preemption (by its index in `attempts`) and that node, which
    /// kube-scheduler nominates it to until the group's next cycle
    /// (`submitPodGroupAlgorithmResult`). The pods that needed preemption are
    /// [`PodOutcome::Nominated`] already.
    pub nominated: Vec<(usize, String)>,
}

/// The `namespace/name` of the PodGroup `pod` names (`spec.schedulingGroup`, v1.36),
/// the key its PodGroup cycle gathers the group's pending pods by.
pub fn group_key(pod: &PodInfo) -> Option<String> {
    pod_group_name(pod).map(|g| format!("{}/{g}", pod.namespace()))
}

impl Prepared {
    /// Runs the PodGroup cycle of the pods of `queue` at `members` (one group's pending
    /// pods, in queue order), keeping the cycle's condition.
    fn run_pod_group(&mut self, queue: &[QueuedPodInfo], members: &[usize]) -> PodGroupCycle {
        let pods: Vec<Arc<PodInfo>> = members.iter().map(|&p| queue[p].pod_info.clone()).collect();
        self.run_pod_group_of(&pods)
    }

    /// Runs the PodGroup cycle of `pods`, keeping the cycle's condition.
    fn run_pod_group_of(&mut self, pods: &[Arc<PodInfo>]) -> PodGroupCycle {
        let cycle = self.scheduler.schedule_pod_group(pods);
        if let (Some(key), Some(condition)) = (group_key(&pods[0]), &cycle.condition) {
            self.pod_groups.push((key, condition.clone()));
        }
        cycle
    }

    /// Runs the PodGroup cycle of the pods of `queue` at `members` and pushes one held
    /// attempt per pod onto `held`. Returns the number of attempts.
    pub(crate) fn attempt_pod_group(
        &mut self,
        queue: &[QueuedPodInfo],
        members: &[usize],
        names: &Arc<NodeNames>,
        held: &mut VecDeque<(Attempt, Option<String>)>,
    ) -> usize {
        let pods: Vec<Arc<PodInfo>> = members.iter().map(|&p| queue[p].pod_info.clone()).collect();
        let mut count = 0;
        loop {
            let group = self.attempt_group(&pods, names);
            count += group.attempts.len();
            let victims: Vec<(String, Vec<String>)> = group
                .attempts
                .iter()
                .filter_map(|(attempt, _)| match &attempt.outcome {
                    PodOutcome::Nominated { node, victims, .. } => {
                        Some((node.clone(), victims.clone()))
                    }
                    _ => None,
                })
                .collect();
            held.extend(group.attempts);
            settle(held, group.others);
            // The group waits for its preemption: once the victims are gone it is
            // attempted again, as a pod that nominated a node is (FORMAT.md rule 9).
            if self.evict_all(&victims) == 0 {
                return count;
            }
        }
    }

    /// Deletes the victims of each `(node, victims)` nomination at once; how many
    /// were there.
    fn evict_all(&mut self, nominations: &[(String, Vec<String>)]) -> usize {
        nominations
            .iter()
            .map(|(node, victims)| self.evict(node, victims))
            .sum()
    }

    /// Runs one PodGroup cycle over `pods` (one group's pending pods, in the order
    /// kube-scheduler attempts them: the popped pod first, then queue order) with
    /// kube-scheduler v1.36's `scheduleOnePodGroup`, keeping the cycle's condition in
    /// [`Prepared::pod_groups`]: one attempt per pod, as `simulate` prints them.
    pub fn attempt_group(
        &mut self,
        pods: &[Arc<PodInfo>],
        names: &Arc<NodeNames>,
    ) -> GroupAttempts {
        if pods.is_empty() {
            return GroupAttempts::default();
        }
        let cycle = self.run_pod_group_of(pods);
        let waits_for_preemption =
            cycle.condition == Some(PodGroupCondition::waiting_on_preemption());
        let mut nominated = Vec::new();
        let mut attempts: Vec<(Attempt, Option<String>)> = pods
            .iter()
            .map(|m| {
                let attempt = Attempt::new(
                    m.key().to_string(),
                    m.scheduler_name().to_string(),
                    names.clone(),
                );
                (attempt, Some(m.uid().to_string()))
            })
            .collect();
        let position: HashMap<&str, usize> =
            pods.iter().enumerate().map(|(i, p)| (p.uid(), i)).collect();
        let mut others = Vec::new();
        for (pod, outcome) in cycle.outcomes {
            let Some((attempt, waiting)) = position
                .get(pod.uid())
                .and_then(|&i| attempts.get_mut(i))
                .filter(|(_, w)| w.is_some())
            else {
                others.push((pod, outcome));
                continue;
            };
            match outcome {
                Outcome::Gated(_) => {
                    attempt.outcome =
                        PodOutcome::Gated(kubesched_plugins::scheduling_gates::gate_names(&pod));
                }
                Outcome::BindingFailed { node, status } if waits_for_preemption => {
                    nominated.push((position[pod.uid()], node.clone()));
                    apply(attempt, Outcome::BindingFailed { node, status });
                }
                outcome => apply(attempt, outcome),
            }
            *waiting = None;
        }
        GroupAttempts {
            attempts,
            others,
            nominated,
        }
    }

    /// Runs the PodGroup cycle of the pods of `queue` at `members` and writes each
    /// one's decision at its queue position in `decisions`.
    pub(crate) fn decide_pod_group(
        &mut self,
        queue: &[QueuedPodInfo],
        members: &[usize],
        decisions: &mut [Option<Decision>],
    ) {
        let mut cycle = self.run_pod_group(queue, members);
        loop {
            let nominations: Vec<(String, Vec<String>)> = cycle
                .outcomes
                .iter()
                .filter_map(|(_, outcome)| match outcome {
                    Outcome::Unschedulable {
                        nominated: Some(n), ..
                    } => Some((n.nominated_node_name.clone()?, n.victims.clone())),
                    _ => None,
                })
                .collect();
            if self.evict_all(&nominations) == 0 {
                break;
            }
            cycle = self.run_pod_group(queue, members);
        }
        let position: HashMap<&str, usize> = members
            .iter()
            .map(|&p| (queue[p].pod_info.uid(), p))
            .collect();
        for (pod, outcome) in &cycle.outcomes {
            let Some(&p) = position.get(pod.uid()) else {
                continue;
            };
            decisions[p] = Some(match outcome {
                Outcome::NotOurs => Decision::Ignored,
                Outcome::Gated(_) => Decision::Gated,
                Outcome::Scheduled { result, .. } | Outcome::Waiting { result, .. } => {
                    Decision::Scheduled(result.suggested_host)
                }
                Outcome::Unschedulable { .. } | Outcome::BindingFailed { .. } => {
                    Decision::Unschedulable
                }
            });
        }
        // A pod the group placed that still waits for another Permit plugin counts
        // where it is assumed, as a waiting pod outside a group does.
        for pod in &cycle.waiting {
            let Some(&p) = position.get(pod.uid()) else {
                continue;
            };
            let node = self
                .scheduler
                .snapshot()
                .nodes()
                .iter()
                .position(|n| n.pods().iter().any(|q| q.uid() == pod.uid()));
            decisions[p] = Some(node.map_or(Decision::Unschedulable, Decision::Scheduled));
        }
    }
}
