//! kube-scheduler v1.36's gang scheduling in the runtime, with the `GenericWorkload`
//! gate on: the `scheduling.k8s.io/v1alpha2` PodGroups watched (the runtime goes on
//! without them, with one warning, where the server does not serve them), the live
//! objects GangScheduling reads kept in step with them and with the pods that name a
//! group, and the PodGroup scheduling cycle (`scheduleOnePodGroup`): when the queue
//! gives a pod that names a PodGroup, the group's other pending pods are taken out of
//! the queue (`PopSpecificPod`: wherever they wait, held by PreEnqueue included), ordered by priority and first attempt, and attempted
//! one after the other on one cluster state. The group is placed when some pod's
//! Permit succeeds (the Permit that reaches the quorum allows the pods waiting for it);
//! only then do the binding cycles start. Otherwise every pod that found a node is
//! unreserved and goes back unschedulable with `pod group is unschedulable, ` and its
//! Permit message. The `PodGroupScheduled` condition is written on the PodGroup.
//!
//! A pod of the group that fits nowhere and that PostFilter nominates a node for has its
//! victims evicted then, and is assumed on that node through Reserve and Permit, as the
//! framework's cycle does; when the group's deciding Permit succeeds with such a pod in
//! it, the group waits for the preemption: no binding starts, every pod goes back
//! nominated (to its node, or the one PostFilter chose) and the condition says `pod
//! group is unschedulable, pod group is waiting for preemption to complete`.
//!
//! With `TopologyAwareWorkloadScheduling`, the group is first tried on each placement
//! ([`choose_placement`], the simulator's algorithm): a try attempts the pods as
//! [`CycleKind::Trial`], which reports, requeues and evicts nothing, and is undone at
//! once. Only the attempt on the chosen placement is submitted as above.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kubesched_framework::events::{ActionType, EventObject, EventObjects, EventResource};
use kubesched_framework::queue::QueuedPod;
use kubesched_framework::{
    ClusterEvent, ClusterObjects, CustomObject, Framework, PlacementChoice, PlacementTrial,
    PlacementTrials, PodGroupCondition, PodGroupRef, PodGroupVerdict, PodInfo, Scheduler, Status,
    VerdictSoFar, choose_placement, mixed_schedulers_message, pod_group_unschedulable_message,
};
use kubesched_plugins::gang_scheduling::pod_group_name;
use kubesched_plugins::gang_scheduling::v1alpha1::workload_ref;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schedule_one::{Attempt, BindingJob, CycleKind};
use super::{Inner, Shared, lock};
use crate::watch::Watched;

/// An object of a kind k8s-openapi has no type for (the alpha and scheduler-plugins
/// gang and quota kinds), as the API server sends it: its metadata, and the rest kept
/// as JSON for the plugins to decode.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(crate) struct UntypedObject {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

impl UntypedObject {
    fn key(&self) -> String {
        format!(
            "{}/{}",
            self.metadata.namespace.as_deref().unwrap_or("default"),
            self.metadata.name.as_deref().unwrap_or("")
        )
    }

    /// The object as the framework's plugins read it.
    fn into_custom(mut self, api_version: &str, kind: &str) -> CustomObject {
        self.metadata.managed_fields = None;
        let namespace = self.metadata.namespace.clone();
        let name = self.metadata.name.clone().unwrap_or_default();
        let value = serde_json::to_value(&self).unwrap_or(Value::Null);
        CustomObject {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace,
            name,
            value,
        }
    }
}

/// A watched kind without a k8s-openapi type, as a type of its own for the watch
/// loop (`kube::Resource` wants its kind static).
macro_rules! untyped_kind {
    ($(#[$doc:meta])* $t:ident, $group:literal, $version:literal, $kind:literal, $plural:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, Deserialize, Serialize)]
        #[serde(transparent)]
        pub(crate) struct $t(UntypedObject);

        impl kube::Resource for $t {
            type DynamicType = ();
            type Scope = k8s_openapi::NamespaceResourceScope;
            fn kind(_: &()) -> Cow<'_, str> {
                $kind.into()
            }
            fn group(_: &()) -> Cow<'_, str> {
                $group.into()
            }
            fn version(_: &()) -> Cow<'_, str> {
                $version.into()
            }
            fn plural(_: &()) -> Cow<'_, str> {
                $plural.into()
            }
            fn meta(&self) -> &ObjectMeta {
                &self.0.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.0.metadata
            }
        }

        impl Watched for $t {
            const OPTIONAL: bool = true;
            fn listed(shared: &Shared, items: Vec<Self>) {
                let api_version = concat!($group, "/", $version);
                shared.untyped_listed(api_version, $kind, items.into_iter().map(|o| o.0).collect());
            }
            fn changed(shared: &Shared, object: Self, deleted: bool) {
                shared.untyped_changed(concat!($group, "/", $version), $kind, object.0, deleted);
            }
        }
    };
}

untyped_kind!(
    /// A `scheduling.k8s.io/v1alpha2` PodGroup (kube-scheduler v1.36's gangs).
    PodGroupObject, "scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups"
);
untyped_kind!(
    /// A `scheduling.k8s.io/v1alpha1` Workload (kube-scheduler v1.35's gangs).
    WorkloadObject, "scheduling.k8s.io", "v1alpha1", "Workload", "workloads"
);
untyped_kind!(
    /// A scheduler-plugins `scheduling.x-k8s.io/v1alpha1` PodGroup (Coscheduling).
    SigsPodGroupObject, "scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups"
);
untyped_kind!(
    /// A scheduler-plugins ElasticQuota (CapacityScheduling).
    ElasticQuotaObject, "scheduling.x-k8s.io", "v1alpha1", "ElasticQuota", "elasticquotas"
);

/// scheduler-plugins' label naming a pod's PodGroup.
const SIGS_POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// The gang and quota objects and the pods that belong to a group, as the gang and
/// quota plugins read them.
#[derive(Default)]
pub(crate) struct GroupObjects {
    /// By (`apiVersion/kind`, `namespace/name`).
    objects: BTreeMap<(String, String), Arc<CustomObject>>,
    /// Pods that name a PodGroup (either API), pending or bound, by key.
    pods: HashMap<String, Arc<PodInfo>>,
}

impl GroupObjects {
    fn build(&self) -> ClusterObjects {
        ClusterObjects {
            custom: self.objects.values().cloned().collect(),
            pods: self.pods.values().cloned().collect(),
            ..ClusterObjects::default()
        }
    }
}

/// `namespace/name` of the v1alpha2 PodGroup `pod` names.
fn group_key(pod: &PodInfo) -> Option<String> {
    pod_group_name(pod).map(|g| format!("{}/{g}", pod.namespace()))
}

/// `namespace/name` of the gang object `pod` waits for at PreEnqueue: its v1.36
/// PodGroup, or its v1.35 Workload.
fn gang_object_key(pod: &PodInfo) -> Option<String> {
    group_key(pod).or_else(|| workload_ref(pod).map(|r| format!("{}/{}", pod.namespace(), r.name)))
}

/// Whether `pod` belongs to a group of any API (a v1.36 PodGroup, a v1.35 Workload's
/// pod group, a scheduler-plugins PodGroup).
fn in_some_group(pod: &PodInfo) -> bool {
    pod_group_name(pod).is_some()
        || workload_ref(pod).is_some()
        || pod
            .pod()
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(SIGS_POD_GROUP_LABEL))
}

/// The group's pods attempted one after the other ([`Shared::run_group`]).
#[derive(Default)]
struct GroupRun {
    /// The pods that found a node, assumed there (some waiting at Permit).
    jobs: Vec<BindingJob>,
    /// The error a pod failed with (not a rejection): the run stopped there.
    failure: Option<String>,
    /// Whether any pod got past PreEnqueue.
    attempted: bool,
    verdict: VerdictSoFar,
    /// The pods not attempted, after a failure.
    rest: Vec<QueuedPod>,
}

impl GroupRun {
    /// Whether the group fits: no error, and placed or waiting for its preemption.
    fn fits(&self) -> bool {
        self.failure.is_none() && self.verdict.verdict() != PodGroupVerdict::Unschedulable
    }
}

/// The runtime's tries of a group on a placement ([`PlacementTrials`]): its pods
/// attempted as [`CycleKind::Trial`] (nothing reported), then undone.
struct RuntimeTrials<'a> {
    shared: &'a Arc<Shared>,
    inner: &'a mut Inner,
    queued: &'a [QueuedPod],
}

impl PlacementTrials for RuntimeTrials<'_> {
    fn scheduler(&mut self) -> &mut Scheduler {
        &mut self.inner.sched
    }

    fn try_group(&mut self) -> PlacementTrial {
        let run = self
            .shared
            .run_group(self.inner, self.queued.to_vec(), CycleKind::Trial);
        let fits = run.fits();
        let proposed = if fits {
            let jobs = run.jobs.iter();
            jobs.map(|j| (j.qp.info.pod_info.clone(), j.host)).collect()
        } else {
            Vec::new()
        };
        let failed = run.failure.is_some();
        for job in run.jobs {
            self.shared.undo_job(self.inner, job, "");
        }
        PlacementTrial {
            fits,
            failed,
            proposed,
        }
    }
}

impl Shared {
    /// Hands GangScheduling the PodGroups and group pods as they are now.
    fn publish_groups(&self, inner: &Inner) {
        self.live.replace(Arc::new(inner.groups.build()));
    }

    /// Gated pods that wait for the gang object `key` (a PodGroup, a Workload) are
    /// checked against PreEnqueue again.
    fn ungate_group(inner: &mut Inner, key: &str, event: ClusterEvent) {
        inner.queue.move_gated_if(event, |p| {
            gang_object_key(&p.info.pod_info).as_deref() == Some(key)
        });
    }

    fn untyped_listed(&self, api_version: &str, kind: &str, items: Vec<UntypedObject>) {
        let mut inner = lock(&self.inner);
        let id = format!("{api_version}/{kind}");
        let mut before: HashMap<String, Arc<CustomObject>> = HashMap::new();
        inner.groups.objects.retain(|(i, key), o| {
            if *i == id {
                before.insert(key.clone(), o.clone());
            }
            *i != id
        });
        // The list is what an informer's relist reports: an add for each object new
        // here, an update for each changed one, a delete for each gone.
        let mut changes = Vec::new();
        for o in items {
            let key = o.key();
            let custom = o.into_custom(api_version, kind);
            match before.remove(&key) {
                None => changes.push((key.clone(), ActionType::ADD)),
                Some(old) if old.value != custom.value => {
                    changes.push((key.clone(), ActionType::UPDATE))
                }
                Some(_) => {}
            }
            inner
                .groups
                .objects
                .insert((id.clone(), key), Arc::new(custom));
        }
        changes.extend(before.into_keys().map(|key| (key, ActionType::DELETE)));
        self.publish_groups(&inner);
        for (key, action) in changes {
            let ungate = action != ActionType::DELETE;
            Self::object_event(&mut inner, api_version, kind, &key, action, ungate);
        }
        drop(inner);
        self.notify();
    }

    fn untyped_changed(&self, api_version: &str, kind: &str, o: UntypedObject, deleted: bool) {
        let key = o.key();
        let id = (format!("{api_version}/{kind}"), key.clone());
        let mut inner = lock(&self.inner);
        let (action, ungate) = if deleted {
            if inner.groups.objects.remove(&id).is_none() {
                return;
            }
            self.publish_groups(&inner);
            (ActionType::DELETE, false)
        } else {
            let custom = o.into_custom(api_version, kind);
            let old = inner.groups.objects.insert(id, Arc::new(custom.clone()));
            // A status-only change (the condition this scheduler writes) changes
            // nothing the plugins read: it is an update event, but nothing to publish.
            let same_spec = old
                .as_ref()
                .is_some_and(|old| old.value.get("spec") == custom.value.get("spec"));
            if !same_spec {
                self.publish_groups(&inner);
            }
            let action = if old.is_some() {
                ActionType::UPDATE
            } else {
                ActionType::ADD
            };
            (action, !same_spec)
        };
        Self::object_event(&mut inner, api_version, kind, &key, action, ungate);
        drop(inner);
        self.notify();
    }

    /// A gang or quota object `key` was added, updated or deleted: the unschedulable
    /// pods the event can help move (when some plugin registered it: kube-scheduler
    /// watches the kind only then), and with `ungate` the group's gated pods are
    /// checked against PreEnqueue again.
    fn object_event(
        inner: &mut Inner,
        api_version: &str,
        kind: &str,
        key: &str,
        action: ActionType,
        ungate: bool,
    ) {
        let objects = EventObjects::added(EventObject::from_key(key));
        for resource in EventResource::of_gang_kind(Some(api_version), kind) {
            let event = ClusterEvent::new(resource, action);
            if ungate {
                Self::ungate_group(inner, key, event);
            }
            inner.queue.move_with_objects(event, &objects, |_| true);
        }
    }

    /// A pod that names a PodGroup was added, changed or bound: GangScheduling counts
    /// it, and the group's gated pods may now have their quorum.
    pub(crate) fn group_pod_changed(&self, inner: &mut Inner, info: &Arc<PodInfo>) {
        if !self.follows_groups || !in_some_group(info) {
            return;
        }
        let old = inner
            .groups
            .pods
            .insert(info.key().to_string(), info.clone());
        let counted_before = old.as_ref().is_some_and(|o| {
            o.node_name() == info.node_name()
                && o.pod().metadata.labels == info.pod().metadata.labels
                && pod_group_name(o) == pod_group_name(info)
                && workload_ref(o) == workload_ref(info)
        });
        if counted_before {
            return;
        }
        self.publish_groups(inner);
        if let Some(group) = gang_object_key(info) {
            Self::ungate_group(inner, &group, ClusterEvent::UNSCHEDULABLE_POD_ADD);
        }
    }

    /// A pod left: the group plugins no longer count it.
    pub(crate) fn group_pod_deleted(&self, inner: &mut Inner, key: &str) {
        if self.follows_groups && inner.groups.pods.remove(key).is_some() {
            self.publish_groups(inner);
        }
    }

    /// Whether `qp` is scheduled in a PodGroup cycle.
    pub(crate) fn in_pod_group(&self, qp: &QueuedPod) -> bool {
        self.gangs && pod_group_name(&qp.info.pod_info).is_some()
    }

    /// One PodGroup scheduling cycle, from the popped pod `first` (see the module doc).
    pub(crate) fn schedule_pod_group(self: &Arc<Self>, inner: &mut Inner, first: QueuedPod) {
        let Some(key) = group_key(&first.info.pod_info) else {
            return;
        };
        let (namespace, name) = {
            let pod = &first.info.pod_info;
            (
                pod.namespace().to_string(),
                pod_group_name(pod).unwrap_or("").to_string(),
            )
        };
        // The group's other pending pods, as PodGroupState's unscheduled pods, wherever
        // they wait in the queue.
        let mut queued = vec![first];
        queued.extend(
            inner
                .queue
                .take_where(|p| group_key(&p.info.pod_info).as_deref() == Some(key.as_str())),
        );
        // First by priority, then by their first attempt.
        queued.sort_by(|a, b| {
            let (pa, pb) = (a.info.pod_info.priority(), b.info.pod_info.priority());
            pb.cmp(&pa).then(a.initial_attempt.cmp(&b.initial_attempt))
        });
        let start = Instant::now();
        // frameworkForPodGroup: one scheduler name for the group's pods.
        if let Some(other) = queued
            .iter()
            .find(|p| p.info.pod_info.scheduler_name() != queued[0].info.pod_info.scheduler_name())
        {
            let message = mixed_schedulers_message(&other.info.pod_info, &queued[0].info.pod_info);
            let status = Status::error(message);
            for qp in queued {
                self.fail_unattempted(inner, qp, &status, start);
            }
            return;
        }
        let placements = inner
            .sched
            .profile_index(queued[0].info.pod_info.scheduler_name())
            .map(|i| inner.sched.profiles()[i].clone())
            .filter(|fwk| fwk.has_placement_generate_plugins());
        let condition = match placements {
            Some(fwk) => {
                let group = PodGroupRef {
                    namespace: &namespace,
                    name: &name,
                };
                self.schedule_in_placements(inner, queued, &fwk, group, start)
            }
            None => {
                let run = self.run_group(inner, queued, CycleKind::Group);
                self.submit_group(inner, run, start)
            }
        };
        let Some(condition) = condition else {
            return;
        };
        let me = self.clone();
        self.rt.spawn(async move {
            me.write_condition(&namespace, &name, condition).await;
        });
    }

    /// `podGroupSchedulingDefaultAlgorithm`: the group's pods attempted one after the
    /// other, each seeing the earlier ones assumed, until one fails with an error.
    fn run_group(
        self: &Arc<Self>,
        inner: &mut Inner,
        queued: Vec<QueuedPod>,
        kind: CycleKind,
    ) -> GroupRun {
        let mut run = GroupRun::default();
        let mut rest = queued.into_iter();
        for qp in rest.by_ref() {
            match self.attempt(inner, qp, kind) {
                Attempt::Gated | Attempt::NotOurs => {}
                Attempt::Failed { error } => {
                    run.attempted = true;
                    if let Some(error) = error {
                        run.failure = Some(error);
                        break;
                    }
                }
                Attempt::Bind(job) => {
                    run.attempted = true;
                    run.verdict
                        .pod_past_permit(job.wait.is_none(), job.preempting.is_some());
                    run.jobs.push(*job);
                }
            }
        }
        run.rest = rest.collect();
        run
    }

    /// `submitPodGroupAlgorithmResult`: the pods bound, or back in the queue, and the
    /// condition to write; `None` when no pod was attempted.
    fn submit_group(
        self: &Arc<Self>,
        inner: &mut Inner,
        run: GroupRun,
        start: Instant,
    ) -> Option<PodGroupCondition> {
        let GroupRun {
            jobs,
            failure,
            attempted,
            verdict,
            rest,
        } = run;
        if !attempted {
            return None;
        }
        // A pod that found a node and is not placed goes back with `pod group is
        // unschedulable, ` and its Permit message.
        let group_message = |job: &BindingJob| {
            job.wait_status
                .as_ref()
                .map(pod_group_unschedulable_message)
                .unwrap_or_default()
        };
        if let Some(error) = failure {
            let message = kubesched_framework::other_pod_failed_message(&error);
            for job in jobs {
                self.fail_job(inner, job, &message, None, start);
            }
            let status = Status::error(message.clone());
            for qp in rest {
                self.fail_unattempted(inner, qp, &status, start);
            }
            return Some(PodGroupCondition::scheduler_error(&message));
        }
        let condition = match verdict.verdict() {
            PodGroupVerdict::Placed => {
                for job in jobs {
                    if job.preempting.is_some() {
                        // It needed preemption after the group's last Permit success.
                        let message = group_message(&job);
                        self.fail_job(inner, job, &message, None, start);
                    } else {
                        self.spawn_binding(job);
                    }
                }
                PodGroupCondition::scheduled()
            }
            PodGroupVerdict::WaitingOnPreemption => {
                // Every pod goes back nominated: one that needed preemption with its
                // failure, one that fit with the group's status, to its node.
                let condition = PodGroupCondition::waiting_on_preemption();
                for job in jobs {
                    let message = job
                        .preempting
                        .clone()
                        .unwrap_or_else(|| condition.message.clone());
                    let node = job.node.clone();
                    self.fail_job(inner, job, &message, Some(&node), start);
                }
                condition
            }
            PodGroupVerdict::Unschedulable => {
                for job in jobs {
                    let message = group_message(&job);
                    self.fail_job(inner, job, &message, None, start);
                }
                PodGroupCondition::unschedulable()
            }
        };
        Some(condition)
    }

    /// `podGroupSchedulingPlacementAlgorithm` (v1.36, `TopologyAwareWorkloadScheduling`):
    /// the group tried on each placement and undone ([`choose_placement`], with
    /// [`CycleKind::Trial`] attempts), then attempted for real on the one chosen and
    /// submitted. Its pods pass PreEnqueue once, before the first try.
    fn schedule_in_placements(
        self: &Arc<Self>,
        inner: &mut Inner,
        queued: Vec<QueuedPod>,
        fwk: &Framework,
        group: PodGroupRef<'_>,
        start: Instant,
    ) -> Option<PodGroupCondition> {
        let queued: Vec<QueuedPod> = queued
            .into_iter()
            .filter_map(|qp| Self::admit(inner, qp).ok())
            .collect();
        if queued.is_empty() {
            return None;
        }
        let mut trials = RuntimeTrials {
            shared: self,
            inner,
            queued: &queued,
        };
        let (placement, count) = match choose_placement(&mut trials, fwk, group) {
            PlacementChoice::Attempt { placement, count } => (placement, count),
            PlacementChoice::FailAll { status, condition } => {
                for qp in queued {
                    self.fail_unattempted(inner, qp, &status, start);
                }
                return Some(condition);
            }
        };
        inner.sched.set_placement(Some(placement));
        let run = self.run_group(inner, queued, CycleKind::Group);
        inner.sched.set_placement(None);
        let unavailable = run.failure.is_none() && !run.fits();
        let condition = self.submit_group(inner, run, start)?;
        Some(if unavailable {
            condition.no_placement_available(count)
        } else {
            condition
        })
    }

    /// A pod of the group that found a node, put back as it was before: out of the
    /// waiting map (rejected with `message`), unreserved and forgotten. Its queue entry and profile are what is
    /// left of it.
    fn undo_job(
        &self,
        inner: &mut Inner,
        job: BindingJob,
        message: &str,
    ) -> (QueuedPod, Arc<Framework>) {
        let BindingJob {
            fwk,
            mut state,
            assumed,
            node,
            qp,
            ..
        } = job;
        self.waiting.reject_by(assumed.uid(), "", message);
        fwk.run_reserve_plugins_unreserve(&mut state, &assumed, &node);
        Self::forget(inner, assumed.key());
        self.waiting.deliver();
        (qp, fwk)
    }

    /// A pod of the group that found a node and is not placed: out of the waiting map,
    /// unreserved, forgotten, back unschedulable with `message`, and nominated to
    /// `nominated` when given (a group that waits for its preemption).
    fn fail_job(
        self: &Arc<Self>,
        inner: &mut Inner,
        job: BindingJob,
        message: &str,
        nominated: Option<&str>,
        start: Instant,
    ) {
        let (qp, fwk) = self.undo_job(inner, job, message);
        let status = Status::new(
            kubesched_framework::Code::Unschedulable,
            message.to_string(),
        );
        let profile = fwk.profile_name().to_string();
        if let Some(node) = nominated {
            inner
                .sched
                .nominated_pods_mut()
                .add(qp.info.pod_info.clone(), node);
        }
        self.requeue_and_report(
            inner,
            qp,
            &profile,
            &status,
            message.to_string(),
            nominated.map(str::to_string),
            start,
        );
    }

    /// A pod of the group that was not attempted: back to the queue with `status`
    /// (to backoff for an error, among the unschedulable pods for a rejection).
    fn fail_unattempted(
        self: &Arc<Self>,
        inner: &mut Inner,
        qp: QueuedPod,
        status: &Status,
        start: Instant,
    ) {
        let profile = qp.info.pod_info.scheduler_name().to_string();
        let message = status.message();
        self.requeue_and_report(inner, qp, &profile, status, message, None, start);
    }

    /// Writes the `PodGroupScheduled` condition on the PodGroup's status (read, then
    /// replaced, so that the other conditions stay; retried once on a conflict), after
    /// every cycle, as kube-scheduler v1.36 does: a later cycle of a straggler that
    /// fits nowhere turns a True condition False. The transition time moves only when
    /// the status does, as `apimeta.SetStatusCondition`.
    async fn write_condition(&self, namespace: &str, name: &str, condition: PodGroupCondition) {
        let api: Api<PodGroupObject> = Api::namespaced(self.client.clone(), namespace);
        for _ in 0..2 {
            let Ok(mut group) = api.get(name).await else {
                return;
            };
            let status = group
                .0
                .rest
                .entry("status")
                .or_insert_with(|| Value::Object(Default::default()));
            if !status.is_object() {
                *status = Value::Object(Default::default());
            }
            let conditions = status.as_object_mut().and_then(|s| {
                s.entry("conditions")
                    .or_insert_with(|| Value::Array(Vec::new()))
                    .as_array_mut()
            });
            let Some(conditions) = conditions else { return };
            let wanted = if condition.status { "True" } else { "False" };
            let now = serde_json::to_value(Time(Timestamp::now())).unwrap_or(Value::Null);
            let observed = group.0.metadata.generation;
            match conditions
                .iter_mut()
                .find(|c| c["type"] == "PodGroupScheduled")
            {
                Some(c) => {
                    if c["status"] != wanted {
                        c["lastTransitionTime"] = now;
                    }
                    c["status"] = wanted.into();
                    c["reason"] = condition.reason.clone().into();
                    c["message"] = condition.message.clone().into();
                    c["observedGeneration"] = observed.into();
                }
                None => conditions.push(serde_json::json!({
                    "type": "PodGroupScheduled",
                    "status": wanted,
                    "reason": condition.reason,
                    "message": condition.message,
                    "lastTransitionTime": now,
                    "observedGeneration": observed,
                })),
            }
            match api
                .replace_status(name, &PostParams::default(), &group)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => {
                    tracing::info!(podgroup = %format!("{namespace}/{name}"), error = %e, "cannot write the PodGroupScheduled condition");
                    return;
                }
            }
        }
    }
}
