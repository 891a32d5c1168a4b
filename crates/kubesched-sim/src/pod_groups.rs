//! PodGroup cycles in `simulate` (kube-scheduler v1.36 with the `GenericWorkload`
//! gate): when the queue reaches a pod that names a PodGroup, every pending pod of the
//! group is attempted in one cycle ([`Scheduler::schedule_pod_group`]), in queue
//! order, and their lines follow one another there. The cycle's `PodGroupScheduled`
//! condition is kept in [`Prepared::pod_groups`].
//!
//! [`Scheduler::schedule_pod_group`]: kubesched_framework::Scheduler::schedule_pod_group

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use kubesched_framework::{Outcome, PodInfo, QueuedPodInfo};
use kubesched_plugins::gang_scheduling::pod_group_name;

use crate::attempt::{Attempt, NodeNames};
use crate::simulate::PodOutcome;
use crate::simulate::{Prepared, apply, settle};

/// The `namespace/name` of the PodGroup `pod` names.
fn group_key(pod: &PodInfo) -> Option<String> {
    pod_group_name(pod).map(|g| format!("{}/{g}", pod.namespace()))
}

impl Prepared {
    /// Runs the PodGroup cycle of `first`'s group over the group's pods of `queue` not
    /// attempted yet (marked in `done`), and pushes one held attempt per pod onto
    /// `held`. Returns the number of attempts.
    pub(crate) fn attempt_pod_group(
        &mut self,
        queue: &[QueuedPodInfo],
        first: &QueuedPodInfo,
        names: &Arc<NodeNames>,
        done: &mut HashSet<String>,
        held: &mut VecDeque<(Attempt, Option<String>)>,
    ) -> usize {
        let key = group_key(&first.pod_info);
        let members: Vec<Arc<PodInfo>> = queue
            .iter()
            .filter(|q| !done.contains(q.pod_info.uid()) && group_key(&q.pod_info) == key)
            .map(|q| q.pod_info.clone())
            .collect();
        for m in &members {
            done.insert(m.uid().to_string());
        }
        let cycle = self.scheduler.schedule_pod_group(&members);
        let mut attempts: Vec<(Attempt, Option<String>)> = members
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
        let mut others = Vec::new();
        for (pod, outcome) in cycle.outcomes {
            let Some((attempt, waiting)) = attempts
                .iter_mut()
                .find(|(_, w)| w.as_deref() == Some(pod.uid()))
            else {
                others.push((pod, outcome));
                continue;
            };
            match outcome {
                Outcome::Gated(_) => {
                    attempt.outcome =
                        PodOutcome::Gated(kubesched_plugins::scheduling_gates::gate_names(&pod));
                }
                outcome => apply(attempt, outcome),
            }
            *waiting = None;
        }
        let count = attempts.len();
        held.extend(attempts);
        settle(held, others);
        if let (Some(key), Some(condition)) = (key, cycle.condition) {
            self.pod_groups.push((key, condition));
        }
        count
    }
}
