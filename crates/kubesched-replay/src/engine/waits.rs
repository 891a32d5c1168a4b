//! Gangs in the timed mode: Permit waits on the replay's clock, PodGroup cycles
//! (kube-scheduler v1.36 with `GenericWorkload`), and the gang objects the plugins read
//! kept in step with the trace.
//!
//! - A pod a Permit plugin makes wait stays popped (in flight) and assumed on its node,
//!   holding what it requests, while the clock moves. Its line is handed to the sink
//!   when the wait is decided, at that time: bound when a later pod's Permit allows it,
//!   or turned down when a plugin rejects it or its wait runs out (the framework's
//!   `WaitingPods` times it out with kube-scheduler's message,
//!   `rejected due to timeout after waiting 1m0s at plugin Coscheduling`). A turned-down
//!   pod is unreserved (which may reject its siblings) and goes back to the queue as
//!   kube-scheduler's binding-cycle failure sends it: unschedulable for the plugin that
//!   rejected it, the others moved by an assigned pod's deletion. The next deadline is
//!   an event on the clock; what still waits when the replay ends is timed out then.
//! - When the queue hands out a pod that names a PodGroup (`spec.schedulingGroup`, the
//!   gate on), the group's other pods waiting anywhere in the queue are taken with it
//!   and attempted in one PodGroup cycle, as `simulate` does
//!   ([`Prepared::attempt_group`](kubesched_sim::simulate::Prepared::attempt_group)).
//! - The gang plugins (GangScheduling, Coscheduling, CapacityScheduling) read the
//!   PodGroups, Workloads, ElasticQuotas and pods from the handle's live objects, as
//!   in `run`: a trace that applies or deletes such an object, or a pod of a group,
//!   has those objects replaced with the cluster as it stands before the next attempt
//!   (the waiting pods as assumed), and the gated pods of groups are checked against
//!   their PreEnqueue again. The plugins keep what they hold (Coscheduling's failed
//!   and backed-off groups, the groups' deadlines) across those changes, as their
//!   informers' handlers do. The profiles are built once, before the first attempt,
//!   over the replay's clock and live objects.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::queue::QueuedPod;
use kubesched_framework::{
    ClusterEvent, EventObject, EventObjects, Outcome, PodInfo, QueueingHints,
};
use kubesched_plugins::gang_scheduling::v1alpha1::WORKLOAD_REF_ANNOTATION;
use kubesched_sim::attempt::Attempt;
use kubesched_sim::pod_groups::group_key;
use kubesched_sim::simulate::{
    PodOutcome, SimulationError, apply, build_frameworks_with, cluster_objects,
};

use super::{Engine, Record, ReplayError, secs};

/// scheduler-plugins' PodGroup label (Coscheduling).
const SIGS_POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// The kinds the gang and quota plugins read when they are built.
pub(super) fn is_gang_kind(kind: &str) -> bool {
    matches!(kind, "PodGroup" | "Workload" | "ElasticQuota")
}

/// Whether `pod` belongs to a gang of any of the three APIs (v1.36's
/// `spec.schedulingGroup`, v1.35's `workloadRef`, scheduler-plugins' label).
pub(super) fn names_group(pod: &Pod) -> bool {
    let has = |m: &Option<std::collections::BTreeMap<String, String>>, k: &str| {
        m.as_ref().is_some_and(|m| m.contains_key(k))
    };
    has(&pod.metadata.labels, SIGS_POD_GROUP_LABEL)
        || has(&pod.metadata.annotations, WORKLOAD_REF_ANNOTATION)
        || pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduling_group.as_ref())
            .is_some_and(|g| g.pod_group_name.is_some())
}

/// A pod waiting at Permit: as the queue handed it out, and its attempt so far.
pub(super) struct Waiter {
    qp: QueuedPod,
    attempt: Attempt,
}

/// Nanoseconds of a duration, for the framework's permit time.
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl<'r, E, F: FnMut(Record) -> Result<(), E>> Engine<'r, F> {
    /// The pod of `qp` waits at Permit after `attempt`: it holds its node's resources
    /// until the wait is decided.
    pub(super) fn park(&mut self, qp: QueuedPod, attempt: Attempt) {
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        let pod = qp.info.pod_info.clone();
        timed.load.request(pod.requests(), 1);
        timed
            .waiting
            .insert(pod.uid().to_string(), Waiter { qp, attempt });
    }

    /// Gives each pod whose wait was decided its outcome: bound now, or back to the
    /// queue; its line goes to the sink now.
    pub(super) fn resolve(
        &mut self,
        resolved: Vec<(Arc<PodInfo>, Outcome)>,
    ) -> Result<(), ReplayError<E>> {
        for (pod, outcome) in resolved {
            let Some(timed) = self.timed.as_mut() else {
                return Ok(());
            };
            let Some(Waiter { qp, mut attempt }) = timed.waiting.remove(pod.uid()) else {
                continue;
            };
            let placed = matches!(outcome, Outcome::Scheduled { .. });
            let plugin = match &outcome {
                Outcome::BindingFailed { status, .. } if status.is_rejected() => status
                    .plugin()
                    .filter(|p| !p.is_empty())
                    .map(str::to_string),
                _ => None,
            };
            apply(&mut attempt, outcome);
            let key = pod.key().to_string();
            let live = self.cluster.pod(&key).is_some();
            match &attempt.outcome {
                PodOutcome::Scheduled(node) if placed => {
                    let node = node.clone();
                    timed.queue.done(&key);
                    let objects = EventObjects::added(EventObject::Pod(pod.clone()));
                    timed
                        .queue
                        .move_with_objects(ClusterEvent::ASSIGNED_POD_ADD, &objects, |_| true);
                    self.bound(&key, &node);
                }
                _ => {
                    timed.load.request(pod.requests(), -1);
                    if live {
                        timed
                            .queue
                            .add_unschedulable(qp, plugin.into_iter().collect());
                    } else {
                        timed.queue.done(&key);
                    }
                    // handleBindingCycleError: forgetting an assumed pod is an
                    // assigned pod's deletion, for every pod but this one.
                    timed
                        .queue
                        .move_to_active_or_backoff_if(ClusterEvent::ASSIGNED_POD_DELETE, |p| {
                            p.key() != key
                        });
                }
            }
            if live {
                self.emit(Record::Attempt {
                    time: secs(self.now),
                    attempt: Box::new(attempt),
                })?;
            }
        }
        Ok(())
    }

    /// Goes on with the pods whose waits plugins decided since the last look.
    pub(super) fn resolve_decided(&mut self) -> Result<(), ReplayError<E>> {
        let Some(timed) = self.timed.as_mut() else {
            return Ok(());
        };
        let mut resolved = std::mem::take(&mut timed.decided_later);
        if !timed.waiting.is_empty() || !resolved.is_empty() {
            resolved.extend(timed.prepared.scheduler.resolve_waiting());
        }
        self.resolve(resolved)
    }

    /// Times out the waits whose deadline the clock has reached, earliest first.
    pub(super) fn time_out_due(&mut self) -> Result<(), ReplayError<E>> {
        let now = nanos(self.now);
        let Some(timed) = self.timed.as_mut() else {
            return Ok(());
        };
        if timed.waiting.is_empty() {
            return Ok(());
        }
        let resolved = timed.prepared.scheduler.time_out_waiting_until(now);
        self.resolve(resolved)
    }

    /// The replay ends: what still waits times out now.
    pub(super) fn time_out_all(&mut self) -> Result<(), ReplayError<E>> {
        let Some(timed) = self.timed.as_mut() else {
            return Ok(());
        };
        if timed.waiting.is_empty() && timed.decided_later.is_empty() {
            return Ok(());
        }
        let mut resolved = std::mem::take(&mut timed.decided_later);
        resolved.extend(timed.prepared.scheduler.time_out_waiting());
        self.resolve(resolved)
    }

    /// When the first wait at Permit runs out.
    pub(super) fn next_deadline(&self) -> Option<Duration> {
        let timed = self.timed.as_ref()?;
        if timed.waiting.is_empty() {
            return None;
        }
        timed
            .prepared
            .scheduler
            .next_permit_deadline()
            .map(Duration::from_nanos)
    }

    /// A pod that waits at Permit is gone (deleted, or its node): it is rejected, and
    /// its Unreserve may reject its siblings, whose lines follow before the next
    /// attempt.
    pub(super) fn release_waiting(&mut self, pod: &Pod) {
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        let Ok(info) = PodInfo::new(Arc::new(pod.clone())) else {
            return;
        };
        if !timed.waiting.contains_key(info.uid()) {
            return;
        }
        for p in timed.prepared.scheduler.profiles() {
            p.waiting_pods()
                .get(info.uid(), |w| w.reject("", "pod was deleted"));
        }
        let resolved = timed.prepared.scheduler.resolve_waiting();
        timed.decided_later.extend(resolved);
    }

    /// Rejects the pods waiting at Permit on `node` (it is being deleted), with
    /// kubesched's words: kube-scheduler would fail their binding later.
    pub(super) fn reject_waiting_on(&mut self, node: &str) {
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        if timed.waiting.is_empty() {
            return;
        }
        let message = format!("node {node:?} was deleted while the pod waited at Permit");
        for p in timed.prepared.scheduler.profiles() {
            p.waiting_pods().iterate(|w| {
                if w.node() == node && w.decision().is_none() {
                    w.reject("", &message);
                }
            });
        }
    }

    /// Attempts `qp`'s pod with the pods of its PodGroup `group` waiting in the queue,
    /// in one PodGroup cycle: the popped pod first, then queue order.
    pub(super) fn attempt_group(
        &mut self,
        qp: QueuedPod,
        group: &str,
    ) -> Result<(), ReplayError<E>> {
        let Some(timed) = self.timed.as_mut() else {
            return Ok(());
        };
        let mut rest = timed
            .queue
            .take_where(|p| group_key(&p.info.pod_info).as_deref() == Some(group));
        let fwk = timed.prepared.scheduler.profiles()[0].clone();
        // An insertion sort by the QueueSort plugin's less (no total order is assumed).
        for i in 1..rest.len() {
            let mut j = i;
            while j > 0 && fwk.queue_less(&rest[j].info, &rest[j - 1].info) {
                rest.swap(j, j - 1);
                j -= 1;
            }
        }
        let mut members = vec![qp];
        members.extend(rest);
        let pods: Vec<Arc<PodInfo>> = members.iter().map(|q| q.info.pod_info.clone()).collect();
        let names = timed.names.clone();
        let group = timed.prepared.attempt_group(&pods, &names);
        // The cycles' conditions are not reported by a replay: not kept either.
        timed.prepared.pod_groups.clear();
        self.stats.attempts += members.len();
        self.resolve(group.others)?;
        let nominated: HashMap<usize, String> = group.nominated.into_iter().collect();
        for (i, (qp, (attempt, waiting))) in members.into_iter().zip(group.attempts).enumerate() {
            if waiting.is_some() {
                self.park(qp, attempt);
                continue;
            }
            // submitPodGroupAlgorithmResult: a pod that fit a group waiting for its
            // preemption is nominated to its node until the group's next cycle; every
            // other pod's nomination is cleared (a pod that needed preemption gets its
            // own again from its outcome).
            if let Some(timed) = self.timed.as_mut() {
                let pod = qp.info.pod_info.clone();
                let nominations = timed.prepared.scheduler.nominated_pods_mut();
                nominations.remove(pod.uid());
                if let Some(node) = nominated.get(&i) {
                    nominations.add(pod, node);
                }
            }
            self.decided(qp, attempt)?;
        }
        self.resolve_decided()
    }

    /// Builds the profiles over the replay's clock and live objects, before the first
    /// attempt (the live objects hold the start's objects until the trace changes
    /// them).
    pub(super) fn build_profiles_once(&mut self) -> Result<(), ReplayError<E>> {
        let Some(timed) = self.timed.as_mut() else {
            return Ok(());
        };
        if timed.profiles_built {
            return Ok(());
        }
        timed.profiles_built = true;
        let source = timed.prepared.config_source.clone();
        let profiles = build_frameworks_with(
            &timed.config,
            self.registry,
            &source,
            &timed.prepared.handle,
        )?;
        timed
            .prepared
            .scheduler
            .set_profiles(profiles)
            .map_err(|error| SimulationError::Scheduler {
                source_name: source,
                error,
            })?;
        let profiles = timed.prepared.scheduler.profiles();
        *timed.queue_sort.write().unwrap_or_else(|e| e.into_inner()) = profiles[0].clone();
        timed
            .queue
            .set_queueing_hints(QueueingHints::from_frameworks(
                profiles.iter().map(|f| &**f),
            ));
        Ok(())
    }

    /// Hands the gang plugins the cluster as it stands, when the objects they read
    /// changed (see the module doc).
    pub(super) fn refresh_gang_objects(&mut self) -> Result<(), ReplayError<E>> {
        let Some(timed) = self.timed.as_mut() else {
            return Ok(());
        };
        if !timed.gang_objects_stale {
            return Ok(());
        }
        timed.gang_objects_stale = false;
        let scenario = self.cluster.to_scenario();
        let mut objects = cluster_objects(&scenario)?;
        // The waiting pods as assumed on their nodes, as the plugins' informers and
        // caches see them.
        let mut assumed: HashMap<&str, Arc<PodInfo>> = HashMap::new();
        if !timed.waiting.is_empty() {
            for p in timed
                .prepared
                .scheduler
                .snapshot()
                .nodes()
                .iter()
                .flat_map(|n| n.pods())
            {
                if timed.waiting.contains_key(p.uid()) {
                    assumed.insert(p.uid(), p.clone());
                }
            }
        }
        objects.pods = scenario
            .pods
            .iter()
            .filter_map(|p| PodInfo::new(p.clone()).ok().map(Arc::new))
            .map(|info| assumed.get(info.uid()).cloned().unwrap_or(info))
            .collect();
        drop(assumed);
        let objects = Arc::new(objects);
        timed.live.replace(objects.clone());
        timed.prepared.handle.objects = Some(objects.clone());
        timed.prepared.scheduler.snapshot_mut().set_objects(objects);
        // The gated pods of groups are checked against PreEnqueue again (an update
        // moves a gated pod back; an unchanged one elsewhere stays where it is).
        let gang_pods: Vec<Arc<PodInfo>> = timed
            .queue
            .pending_pods()
            .into_iter()
            .filter(|p| names_group(p.info.pod_info.pod()))
            .map(|p| p.info.pod_info.clone())
            .collect();
        for p in gang_pods {
            timed.queue.update(p);
        }
        Ok(())
    }
}
