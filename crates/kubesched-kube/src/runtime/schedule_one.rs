//! The scheduling loop (one pod at a time, on its own thread), the binding cycles
//! (concurrent tasks), preemption's writes and the failure reports (as kube-scheduler's
//! schedule_one.go).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kubesched_framework::queue::QueuedPod;
use kubesched_framework::{
    ClusterEvent, CycleState, FitError, Framework, PodInfo, PodsToActivate, RecordPluginMetrics,
    ScheduleError, Snapshot, Status,
};

use crate::events::EventSpec;
use crate::metrics::AttemptResult;

use super::{Assumed, Inner, Shared, lock};

/// How one pod's scheduling cycle ended ([`Shared::attempt`]).
pub(super) enum Attempt {
    /// No profile of ours schedules it.
    NotOurs,
    /// A PreEnqueue plugin keeps it out.
    Gated,
    /// It failed (reported, and back in the queue); `error` is the message when it
    /// failed with an error rather than a rejection.
    Failed { error: Option<String> },
    /// It passed Permit, or waits there: its binding cycle is next.
    Bind(Box<BindingJob>),
}

/// Which cycle a pod is attempted in ([`Shared::attempt`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CycleKind {
    /// Its own scheduling cycle.
    Single,
    /// A PodGroup cycle (`podGroupPodSchedulingAlgorithm`): a pod PostFilter nominates
    /// a node for is assumed there.
    Group,
    /// A PodGroup cycle's try of a placement, undone afterwards: as `Group`, but
    /// nothing is reported, requeued, evicted or activated, and no metric is counted.
    Trial,
}

/// A pod assumed on its node after Permit, and what its binding cycle needs.
pub(super) struct BindingJob {
    pub(super) fwk: Arc<Framework>,
    pub(super) state: CycleState,
    pub(super) assumed: Arc<PodInfo>,
    pub(super) node: String,
    /// The node's index in the snapshot.
    pub(super) host: usize,
    pub(super) qp: QueuedPod,
    /// Where its decision comes, when Permit made it wait.
    pub(super) wait: Option<oneshot::Receiver<Status>>,
    /// Permit's Wait status, when it waits.
    pub(super) wait_status: Option<Status>,
    /// A PodGroup cycle's pod that no node fit and that PostFilter nominated `node`
    /// for (its victims evicted): its failure message. It is assumed there only for
    /// the group's later pods to see it.
    pub(super) preempting: Option<String>,
    pub(super) start: Instant,
}

impl Shared {
    /// Runs scheduling cycles until stopping, on the calling (dedicated) thread.
    pub(crate) fn scheduling_loop(self: &Arc<Self>) {
        let mut inner = lock(&self.inner);
        loop {
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            if !self.leading.load(Ordering::SeqCst) {
                inner = self
                    .wake
                    .wait_timeout(inner, Duration::from_millis(200))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            self.expire_assumed(&mut inner);
            if inner.dirty {
                self.rebuild(&mut inner);
            }
            if inner.storage.changed() {
                Self::storage_objects(&mut inner);
            }
            match inner.queue.pop() {
                Some(qp) => {
                    self.update_pending_metrics(&inner);
                    self.schedule_one(&mut inner, qp);
                    // Plugins may have decided waiting pods in the cycle (a Permit
                    // reaching a gang's quorum, a PostFilter rejecting a group).
                    self.waiting.deliver();
                }
                None => {
                    let wait = inner
                        .queue
                        .next_wakeup()
                        .map(|t| t.saturating_duration_since(Instant::now()))
                        .unwrap_or(Duration::from_secs(1))
                        .clamp(Duration::from_millis(1), Duration::from_secs(1));
                    inner = self
                        .wake
                        .wait_timeout(inner, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }

    fn rebuild(&self, inner: &mut Inner) {
        let nodes: Vec<Arc<Node>> = inner.nodes.values().cloned().collect();
        match Snapshot::new(nodes, inner.pods.values().cloned()) {
            Ok((snapshot, _orphans)) => {
                let objects = inner.sched.snapshot().objects().clone();
                let storage = inner.storage.objects();
                *inner.sched.snapshot_mut() = snapshot;
                inner.sched.snapshot_mut().set_objects(Arc::new(objects));
                inner.sched.snapshot_mut().set_storage(Some(storage));
                inner.dirty = false;
            }
            Err(e) => tracing::error!(error = %e, "cannot build the cluster snapshot"),
        }
    }

    fn expire_assumed(&self, inner: &mut Inner) {
        let now = Instant::now();
        let expired: Vec<String> = inner
            .assumed
            .iter()
            .filter(|(_, a)| a.expires.is_some_and(|t| t <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            tracing::warn!(pod = %key, "assumed pod expired: the API server never confirmed its binding");
            if let Some(a) = inner.assumed.remove(&key) {
                inner.pods.remove(&key);
                inner.sched.snapshot_mut().remove_pod(&a.node, &key);
            }
        }
    }

    pub(super) fn forget(inner: &mut Inner, key: &str) {
        if let Some(a) = inner.assumed.remove(key) {
            inner.pods.remove(key);
            inner.sched.snapshot_mut().remove_pod(&a.node, key);
        }
    }

    fn schedule_one(self: &Arc<Self>, inner: &mut Inner, qp: QueuedPod) {
        if self.in_pod_group(&qp) {
            self.schedule_pod_group(inner, qp);
        } else if let Attempt::Bind(job) = self.attempt(inner, qp, CycleKind::Single) {
            self.spawn_binding(*job);
        }
    }

    /// A popped pod, checked again before its cycle: [`Attempt::NotOurs`] (done with
    /// it) when no profile of ours schedules it, [`Attempt::Gated`] (back among the
    /// gated pods) when a PreEnqueue plugin keeps it out.
    pub(super) fn admit(inner: &mut Inner, qp: QueuedPod) -> Result<QueuedPod, Attempt> {
        let pod = &qp.info.pod_info;
        let Some(index) = inner.sched.profile_index(pod.scheduler_name()) else {
            inner.queue.done(pod.key());
            return Err(Attempt::NotOurs);
        };
        let gate = inner.sched.profiles()[index].run_pre_enqueue_plugins(pod);
        if !gate.is_success() {
            inner.queue.add_gated(qp);
            return Err(Attempt::Gated);
        }
        Ok(qp)
    }

    /// One pod's scheduling cycle, up to Permit: a failure is reported and the pod
    /// requeued here; a pod that passed Permit (or waits there) is returned assumed,
    /// for its binding cycle. A pod PostFilter nominated a node for has its victims
    /// evicted; in a PodGroup cycle (`kind` not `Single`) it is then assumed on that
    /// node and goes through Reserve and Permit, so that the group's later pods see it
    /// there, and is returned marked [`BindingJob::preempting`]: the group decides
    /// what becomes of it. In a [`CycleKind::Trial`] a failure is only returned.
    pub(super) fn attempt(
        self: &Arc<Self>,
        inner: &mut Inner,
        qp: QueuedPod,
        kind: CycleKind,
    ) -> Attempt {
        let in_group = kind != CycleKind::Single;
        let trial = kind == CycleKind::Trial;
        // A try's pods were admitted once, before the first try.
        let qp = if trial {
            qp
        } else {
            match Self::admit(inner, qp) {
                Ok(qp) => qp,
                Err(attempt) => return attempt,
            }
        };
        let pod = qp.info.pod_info.clone();
        let key = pod.key().to_string();
        let Some(index) = inner.sched.profile_index(pod.scheduler_name()) else {
            return Attempt::NotOurs;
        };
        let fwk: Arc<Framework> = inner.sched.profiles()[index].clone();
        let profile = fwk.profile_name().to_string();
        let start = Instant::now();
        let mut state = CycleState::new();
        // Spread the sampled cycles evenly: cycle n is sampled when n * percent
        // crosses a multiple of 100.
        let n = self.cycles.fetch_add(1, Ordering::Relaxed);
        if !trial && (n + 1) * self.sample_percent / 100 > n * self.sample_percent / 100 {
            state.write(RecordPluginMetrics);
        }
        inner.sched.set_scheduling_cycle(qp.scheduling_cycle);
        let result = inner.sched.schedule_pod(index, &mut state, &pod);
        let (host, preempting) = match result {
            Ok(r) => (r.suggested_host, None),
            Err(mut error) => {
                // PostFilter (preemption), as kube-scheduler runs it after a failed
                // filter pass.
                let mut nomination = None;
                if let ScheduleError::Unfit(fit) = &mut error
                    && fwk.has_post_filter_plugins()
                {
                    let (r, s) = fwk.run_post_filter_plugins(
                        &state,
                        &pod,
                        inner.sched.snapshot(),
                        inner.sched.nominated_pods(),
                        &fit.diagnosis.node_to_status,
                    );
                    if s.is_success() {
                        nomination = r.and_then(|r| {
                            let node = r.nominated_node_name?;
                            Some((node, r.victims))
                        });
                    } else if !s.message().is_empty() {
                        fit.diagnosis.post_filter_msg = Some(s.message());
                    }
                }
                let took = start.elapsed();
                let message = error.to_string();
                let nominated_host = nomination
                    .as_ref()
                    .and_then(|(node, _)| inner.sched.snapshot().index_of(node));
                if in_group
                    && let (Some((node, victims)), Some(host)) = (&nomination, nominated_host)
                {
                    if !trial {
                        self.metrics.algorithm(took);
                        self.preempt(inner, &pod, &profile, node, victims);
                        tracing::info!(pod = %key, profile = %profile, %message, node = %node, "needs preemption in its pod group's cycle");
                    }
                    (host, Some(message))
                } else if trial {
                    return Attempt::Failed {
                        error: failed_with_error(&error),
                    };
                } else {
                    self.metrics.algorithm(took);
                    let nomination = nomination.filter(|_| !in_group);
                    return self.fail_unfit(inner, qp, &profile, error, nomination, took);
                }
            }
        };
        if preempting.is_none() && !trial {
            self.metrics.algorithm(start.elapsed());
        }
        let node = inner.sched.snapshot().node_at(host).name().to_string();
        // Assume (which ends the pod's nomination, as kube-scheduler's assume does).
        inner.sched.nominated_pods_mut().remove(pod.uid());
        let assumed = Arc::new(pod.bound_to(&node));
        inner.sched.snapshot_mut().add_pod(assumed.clone());
        inner.pods.insert(key.clone(), assumed.clone());
        inner.assumed.insert(
            key.clone(),
            Assumed {
                node: node.clone(),
                expires: None,
            },
        );
        let s = fwk.run_reserve_plugins_reserve(&mut state, &assumed, &node);
        if !s.is_success() {
            fwk.run_reserve_plugins_unreserve(&mut state, &assumed, &node);
            Self::forget(inner, &key);
            if trial {
                let error = (!s.is_rejected()).then(|| s.message());
                return Attempt::Failed { error };
            }
            return self.fail_after_assume(inner, qp, &profile, s, host, start);
        }
        let (s, waits) = fwk.run_permit_plugins_waits(&mut state, &assumed, &node);
        if !s.is_success() && !s.is_wait() {
            fwk.run_reserve_plugins_unreserve(&mut state, &assumed, &node);
            Self::forget(inner, &key);
            // Unreserve may have rejected pods waiting for this one (a gang's).
            self.waiting.deliver();
            if trial {
                let error = (!s.is_rejected()).then(|| s.message());
                return Attempt::Failed { error };
            }
            return self.fail_after_assume(inner, qp, &profile, s, host, start);
        }
        // A pod that waits stays assumed (its reservation holds) while its binding task
        // waits for the decision; this Permit may also have allowed pods that waited
        // for it.
        let wait = s
            .is_wait()
            .then(|| self.waiting.park(assumed.clone(), &node, waits));
        self.waiting.deliver();
        // Pods a plugin asked to retry now (Coscheduling's ActivateSiblings).
        if !trial && let Some(activate) = state.read::<PodsToActivate>() {
            inner.queue.activate(&activate.keys);
        }
        Attempt::Bind(Box::new(BindingJob {
            fwk,
            state,
            assumed,
            node,
            host,
            qp,
            wait_status: wait.is_some().then_some(s),
            preempting,
            wait,
            start,
        }))
    }

    /// A pod no node fits, or whose scheduling failed with an error: back in the
    /// queue (unschedulable for the plugins that rejected it, or to backoff), its
    /// victims evicted and its nomination written when PostFilter nominated a node,
    /// and its failure reported.
    fn fail_unfit(
        self: &Arc<Self>,
        inner: &mut Inner,
        qp: QueuedPod,
        profile: &str,
        error: ScheduleError,
        nomination: Option<(String, Vec<String>)>,
        took: std::time::Duration,
    ) -> Attempt {
        let pod = qp.info.pod_info.clone();
        let message = error.to_string();
        let failed_with_error = failed_with_error(&error);
        match &error {
            ScheduleError::Unfit(fit) => {
                self.metrics
                    .attempt(profile, AttemptResult::Unschedulable, took);
                let plugins = fit.diagnosis.unschedulable_plugins.clone();
                inner.queue.add_unschedulable(qp, plugins);
            }
            ScheduleError::NoNodesAvailable => {
                self.metrics
                    .attempt(profile, AttemptResult::Unschedulable, took);
                inner.queue.add_unschedulable(qp, BTreeSet::new());
            }
            ScheduleError::Internal(_) | ScheduleError::FailedAfterFilter { .. } => {
                self.metrics.attempt(profile, AttemptResult::Error, took);
                inner.queue.add_backoff(qp);
            }
        }
        tracing::info!(pod = %pod.key(), profile = %profile, %message, "unable to schedule pod; waiting");
        let nominated_node = nomination.map(|(node, victims)| {
            self.preempt(inner, &pod, profile, &node, &victims);
            node
        });
        self.report_failure(
            pod.pod_arc().clone(),
            profile.to_string(),
            message,
            nominated_node,
        );
        Attempt::Failed {
            error: failed_with_error,
        }
    }

    /// Starts the binding cycle of a pod that passed (or waits at) Permit, as a task.
    pub(super) fn spawn_binding(self: &Arc<Self>, job: BindingJob) {
        let BindingJob {
            fwk,
            state,
            assumed,
            node,
            host,
            qp,
            wait,
            start,
            ..
        } = job;
        let me = self.clone();
        let metrics = self.metrics.clone();
        metrics.binding_tasks(1);
        self.rt.spawn(async move {
            me.binding_cycle(fwk, state, assumed, (node, host), qp, wait, start)
                .await;
            metrics.binding_tasks(-1);
        });
    }

    /// A pod that Reserve or Permit turned down in its scheduling cycle (already
    /// unreserved and forgotten): reported as kube-scheduler's `schedulingCycle` does,
    /// a rejection as a FitError over the chosen node.
    fn fail_after_assume(
        self: &Arc<Self>,
        inner: &mut Inner,
        qp: QueuedPod,
        profile: &str,
        status: Status,
        host: usize,
        start: Instant,
    ) -> Attempt {
        let message = if status.is_rejected() {
            FitError::on_chosen_node(host, status.clone()).to_string()
        } else {
            status.message()
        };
        let error = (!status.is_rejected()).then(|| message.clone());
        self.requeue_and_report(inner, qp, profile, &status, message, None, start);
        Attempt::Failed { error }
    }

    /// Puts a pod that failed in its scheduling cycle after it was popped back in the
    /// queue (unschedulable when `status` is a rejection, else to backoff) and reports
    /// `message`, with
    /// `nominated` as its nominated node when given.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn requeue_and_report(
        self: &Arc<Self>,
        inner: &mut Inner,
        qp: QueuedPod,
        profile: &str,
        status: &Status,
        message: String,
        nominated: Option<String>,
        start: Instant,
    ) {
        if status.is_rejected() {
            self.metrics
                .attempt(profile, AttemptResult::Unschedulable, start.elapsed());
            let plugins = status.plugin().map(|p| p.to_string()).into_iter().collect();
            inner.queue.add_unschedulable(qp.clone(), plugins);
        } else {
            self.metrics
                .attempt(profile, AttemptResult::Error, start.elapsed());
            inner.queue.add_backoff(qp.clone());
        }
        // No AssignedPodDelete for the place the pod held: kube-scheduler moves the
        // other pods so only when a binding cycle fails (handleBindingCycleError), not
        // when Reserve or Permit turns a pod down in its scheduling cycle, nor when a
        // PodGroup cycle sends its pods back. (With SchedulerPopFromBackoffQ, such an
        // event, kept as in flight, would send a pod of the group that failed back to
        // backoff, and an idle queue would take it again at once, for ever.)
        self.report_failure(
            qp.info.pod_info.pod_arc().clone(),
            profile.to_string(),
            message,
            nominated,
        );
    }

    /// kube-scheduler's `WaitOnPermit`: waits for the pod's decision, and times it out
    /// at the deadline of a plugin it still waits for; records how long it waited in
    /// `scheduler_permit_wait_duration_seconds`.
    async fn wait_on_permit(&self, uid: &str, mut decision: oneshot::Receiver<Status>) -> Status {
        let started = Instant::now();
        let status = loop {
            let Some(left) = self.waiting.time_left(uid) else {
                // Decided: hand the decision over (if its maker has not yet).
                self.waiting.deliver();
                break decision.await;
            };
            match tokio::time::timeout(left, &mut decision).await {
                Ok(answer) => break answer,
                Err(_) => self.waiting.time_out_if_due(uid),
            }
        };
        let status = status.unwrap_or_else(|_| Status::error("the waiting pod was dropped"));
        self.metrics.permit_wait(status.code(), started.elapsed());
        status
    }

    #[allow(clippy::too_many_arguments)]
    async fn binding_cycle(
        self: Arc<Self>,
        fwk: Arc<Framework>,
        mut state: CycleState,
        assumed: Arc<PodInfo>,
        (node, host): (String, usize),
        qp: QueuedPod,
        wait: Option<oneshot::Receiver<Status>>,
        start: Instant,
    ) {
        let profile = fwk.profile_name().to_string();
        let key = assumed.key().to_string();
        let mut status = Status::success();
        // Whether the wait at Permit (rather than PreBind or Bind) failed.
        let mut at_permit = false;
        if let Some(decision) = wait {
            status = self.wait_on_permit(assumed.uid(), decision).await;
            at_permit = !status.is_success();
        }
        // Whether PreBind (rather than Permit or Bind) failed, and whether it was its
        // pre-flight.
        let mut at_pre_bind = false;
        let mut at_pre_flight = false;
        let pre_flight = if status.is_success() {
            fwk.run_pre_bind_pre_flights(&mut state, &assumed, &node)
        } else {
            Status::skip()
        };
        let pre_flight_passed = pre_flight.is_success() || pre_flight.is_skip();
        let binding_async = if status.is_success() && pre_flight_passed {
            fwk.pre_bind_async(&state, &assumed, &node)
                .zip(fwk.bind_async(&state, &assumed, &node))
        } else {
            None
        };
        let (state, status) = if !status.is_success() {
            (state, status)
        } else if !pre_flight_passed {
            at_pre_flight = true;
            (state, pre_flight)
        } else if let Some((pre_bind, bind)) = binding_async {
            // Every PreBind plugin with work writes and waits as a future (VolumeBinding,
            // DynamicResources), and Bind is DefaultBinder's POST: the task awaits them,
            // holding no thread (kube-scheduler's binding goroutine).
            let s = pre_bind.await;
            if s.is_success() {
                (state, bind.await)
            } else {
                at_pre_bind = true;
                (state, s)
            }
        } else {
            let (fwk2, assumed2, node2) = (fwk.clone(), assumed.clone(), node.clone());
            // A PreBind plugin without a future may block: on a blocking thread of its
            // own, never the scheduling loop's.
            let r = tokio::task::spawn_blocking(move || {
                let s = fwk2.run_pre_bind_plugins(&mut state, &assumed2, &node2);
                if !s.is_success() {
                    return (state, s, true);
                }
                let s = fwk2.run_bind_plugins(&mut state, &assumed2, &node2);
                (state, s, false)
            })
            .await;
            match r {
                Ok((state, s, pre_bind)) => {
                    at_pre_bind = pre_bind;
                    (state, s)
                }
                Err(e) => (
                    CycleState::new(),
                    Status::error(format!("binding task: {e}")),
                ),
            }
        };
        let mut state = state;
        if status.is_success() || status.is_skip() {
            fwk.run_post_bind_plugins(&mut state, &assumed, &node);
            self.metrics
                .attempt(&profile, AttemptResult::Scheduled, start.elapsed());
            self.metrics
                .pod_scheduled(qp.info.attempts, qp.initial_attempt.elapsed());
            {
                let mut inner = lock(&self.inner);
                if let Some(a) = inner.assumed.get_mut(&key) {
                    a.expires = Some(Instant::now() + self.assumed_ttl);
                }
                inner.queue.done(&key);
            }
            tracing::info!(pod = %key, node = %node, profile = %profile, "successfully bound pod to node");
            let message = format!("Successfully assigned {key} to {node}");
            self.emit_event(
                assumed.pod_arc().clone(),
                profile,
                "Normal",
                "Scheduled",
                "Binding",
                message,
                None,
            );
            return;
        }
        // Failure: unreserve, forget, requeue with backoff (unless the pod got bound
        // or deleted meanwhile). Unreserve may write (DynamicResources takes the pod
        // out of its claims' reservedFor): on a blocking thread too.
        {
            let (fwk2, assumed2, node2) = (fwk.clone(), assumed.clone(), node.clone());
            let _ = tokio::task::spawn_blocking(move || {
                fwk2.run_reserve_plugins_unreserve(&mut state, &assumed2, &node2);
            })
            .await;
            // Unreserve may have rejected pods waiting with this one (a gang's).
            self.waiting.deliver();
        }
        let message = if at_permit && status.is_rejected() {
            // bindingCycle reports a pod rejected while it waited as a FitError over
            // its node.
            FitError::on_chosen_node(host, status.clone()).to_string()
        } else if at_permit {
            format!("waiting on permit for pod: {}", status.message())
        } else if at_pre_flight || (at_pre_bind && status.is_rejected()) {
            // RunPreBindPreFlights words its own errors.
            status.message()
        } else if at_pre_bind {
            // kube-scheduler's RunPreBindPlugins wraps a plugin's error so.
            format!(
                "running PreBind plugin {:?}: {}",
                status.plugin().unwrap_or_default(),
                status.message()
            )
        } else {
            format!("Binding rejected: {}", status.message())
        };
        // The API server refuses a binding of a pod that is bound already: one of our
        // bindings whose answer an outage lost, or another scheduler, bound it. Read the
        // pod now, as the watch would show it (the watch may still be backing off), so
        // it is not retried and its Scheduled event is written.
        let already_bound = status.message().contains(" is already assigned to node ");
        if already_bound {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), assumed.namespace());
            if let Ok(pod) = api.get(assumed.name()).await {
                Self::forget(&mut lock(&self.inner), &key);
                self.pod_changed(pod);
            }
        }
        if self.write_outage.active() || already_bound {
            tracing::debug!(pod = %key, node = %node, %message, "binding failed");
        } else {
            tracing::info!(pod = %key, node = %node, %message, "binding failed");
        }
        let requeue = {
            let mut inner = lock(&self.inner);
            Self::forget(&mut inner, &key);
            // Refused because an earlier binding of ours, whose answer was lost, bound
            // the pod meanwhile (the watch has shown it)?
            if let Some(bound) = inner.pods.get(&key).cloned()
                && let Some(n) = bound.node_name()
            {
                self.bound_without_answer(&key, bound.pod_arc(), bound.uid(), n);
            }
            let still_pending = inner.pending.contains_key(&key) && !inner.pods.contains_key(&key);
            self.metrics
                .attempt(&profile, AttemptResult::Error, start.elapsed());
            if still_pending && status.is_rejected() {
                let plugins = status.plugin().map(|p| p.to_string()).into_iter().collect();
                inner.queue.add_unschedulable(qp, plugins);
            } else if still_pending {
                inner.queue.add_backoff(qp);
            } else {
                inner.queue.done(&key);
            }
            inner
                .queue
                .move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
            self.update_pending_metrics(&inner);
            still_pending
        };
        self.notify();
        if requeue {
            self.emit_event(
                assumed.pod_arc().clone(),
                profile,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                message,
                None,
            );
        }
    }

    /// The pod `key` is bound to `node`: if one of our bindings there went without an
    /// answer, it is what bound the pod, and its Scheduled event is written now.
    pub(super) fn bound_without_answer(&self, key: &str, pod: &Arc<Pod>, uid: &str, node: &str) {
        let profile = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.clone())
            .unwrap_or_default();
        if !self.profiles.contains(&profile) || !self.unanswered.take(key, uid, node) {
            return;
        }
        tracing::info!(pod = %key, node = %node, "successfully bound pod to node (the binding's answer was lost)");
        self.emit_event(
            pod.clone(),
            profile,
            "Normal",
            "Scheduled",
            "Binding",
            format!("Successfully assigned {key} to {node}"),
            None,
        );
    }

    // ---- events and status ----

    /// `nominated`: the node a PostFilter plugin nominated the pod to, written to its
    /// `status.nominatedNodeName` with the condition.
    fn report_failure(
        self: &Arc<Self>,
        pod: Arc<Pod>,
        profile: String,
        message: String,
        nominated: Option<String>,
    ) {
        let me = self.clone();
        self.rt.spawn(async move {
            me.emit_event(
                pod.clone(),
                profile,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                message.clone(),
                None,
            );
            me.patch_unschedulable(&pod, &message, nominated.as_deref())
                .await;
        });
    }

    /// Preemption's side effects, as kube-scheduler's `prepareCandidate` and failure
    /// handler: `pod` is nominated to `node` (counted by the Filter plugins for pods
    /// of lower or equal priority there), lower-priority pods nominated to that node
    /// lose their nomination, and each victim is rejected at Permit if it waits there,
    /// or else marked `DisruptionTarget` and deleted through the API, with a
    /// `Preempted` event.
    fn preempt(
        self: &Arc<Self>,
        inner: &mut Inner,
        pod: &Arc<PodInfo>,
        profile: &str,
        node: &str,
        victims: &[String],
    ) {
        inner.sched.nominated_pods_mut().add(pod.clone(), node);
        let lower: Vec<Arc<PodInfo>> = inner
            .sched
            .nominated_pods()
            .for_node(node)
            .iter()
            .filter(|p| p.priority() < pod.priority())
            .cloned()
            .collect();
        for p in &lower {
            inner.sched.nominated_pods_mut().remove(p.uid());
        }
        let victims: Vec<Arc<Pod>> = victims
            .iter()
            .filter_map(|k| inner.pods.get(k).map(|p| p.pod_arc().clone()))
            .collect();
        tracing::info!(pod = %pod.key(), node = %node, victims = victims.len(), "preempting");
        self.metrics.preemption(victims.len());
        let me = self.clone();
        let preemptor = pod.pod_arc().clone();
        let (profile, node) = (profile.to_string(), node.to_string());
        self.rt.spawn(async move {
            for victim in victims {
                me.delete_victim(&preemptor, &victim, &profile, &node).await;
            }
            for p in lower {
                me.clear_nomination(p.pod()).await;
            }
        });
    }

    async fn delete_victim(&self, preemptor: &Pod, victim: &Arc<Pod>, profile: &str, node: &str) {
        let ns = victim.metadata.namespace.as_deref().unwrap_or("default");
        let name = victim.metadata.name.as_deref().unwrap_or("");
        let uid = victim.metadata.uid.as_deref().unwrap_or("");
        // As kube-scheduler's preemption rejects a victim waiting at Permit, in the
        // name of the PostFilter plugin that chose it.
        let waiting = self
            .waiting
            .reject_by(uid, "DefaultPreemption", "preempted");
        if !waiting {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
            let patch = serde_json::json!({
                "status": {
                    "conditions": [{
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                        "message": format!("{profile}: preempting to accommodate a higher priority pod"),
                        "lastTransitionTime": Time(Timestamp::now()),
                    }]
                }
            });
            let _ = api
                .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
                .await;
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    tracing::warn!(victim = %format!("{ns}/{name}"), error = %e, "cannot delete the preemption victim");
                    return;
                }
            }
        }
        tracing::info!(victim = %format!("{ns}/{name}"), node = %node, "preempted victim pod");
        let note = format!(
            "Preempted by pod {} on node {node}",
            preemptor.metadata.uid.as_deref().unwrap_or("")
        );
        self.emit_event(
            victim.clone(),
            profile.to_string(),
            "Normal",
            "Preempted",
            "Preempting",
            note,
            Some(preemptor),
        );
    }

    async fn clear_nomination(&self, pod: &Pod) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let patch = serde_json::json!({"status": {"nominatedNodeName": null}});
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            tracing::debug!(pod = %format!("{ns}/{name}"), error = %e, "cannot clear the pod's nominated node");
        }
    }

    async fn patch_unschedulable(&self, pod: &Pod, message: &str, nominated: Option<&str>) {
        let current = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
        let current_nominated = pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref());
        if current.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(message)
        }) && (nominated.is_none() || nominated == current_nominated)
        {
            return;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let mut patch = serde_json::json!({
            "status": {
                "conditions": [{
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastProbeTime": null,
                    "lastTransitionTime": Time(Timestamp::now()),
                    "observedGeneration": pod.metadata.generation,
                }]
            }
        });
        if let Some(node) = nominated {
            patch["status"]["nominatedNodeName"] = serde_json::json!(node);
        }
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
        {
            Ok(_) => self.write_outage.succeeded("writes"),
            Err(kube::Error::Api(s)) if s.code < 500 => {
                tracing::warn!(pod = %format!("{ns}/{name}"), error = %s.message, "cannot update the pod's PodScheduled condition");
            }
            Err(e) => self.write_outage.failed("writes", &e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_event(
        &self,
        pod: Arc<Pod>,
        profile: String,
        type_: &str,
        reason: &str,
        action: &str,
        note: String,
        related: Option<&Pod>,
    ) {
        self.recorder.record(EventSpec {
            regarding: &pod,
            related,
            type_,
            reason,
            action,
            note,
            controller: &profile,
        });
    }
}

/// The message of a cycle that failed with an error rather than a rejection (a
/// PodGroup's other pods then fail with it).
fn failed_with_error(error: &ScheduleError) -> Option<String> {
    matches!(
        error,
        ScheduleError::Internal(_) | ScheduleError::FailedAfterFilter { .. }
    )
    .then(|| error.to_string())
}
