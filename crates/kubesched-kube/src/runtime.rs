//! The runtime: the cache kept in step with the API server's pods and nodes, the
//! scheduling loop (one pod at a time, on its own thread) and the binding cycles
//! (concurrent tasks).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod, PodResourceClaimStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubesched_framework::events::{node_update_events, pod_update_events};
use kubesched_framework::queue::QueuedPod;
use kubesched_framework::{
    ClusterEvent, CycleState, DraState, Framework, PodBinder, PodInfo, QueueOptions, QueueingHints,
    RecordPluginMetrics, ScheduleError, Scheduler, SchedulingQueue, Snapshot, Status, SystemClock,
};
use tokio::sync::oneshot;

use crate::events::{EventSpec, Recorder};
use crate::metrics::{AttemptResult, Metrics};
use crate::outage::Outage;
use crate::storage::{DraCache, StorageCache};
use crate::watch::{Cached, ObjectCache, object_key};

/// Binds through the API server's `binding` subresource, with the pod's UID as a
/// precondition (the API server refuses the binding of a pod deleted and recreated
/// under the same name since it was scheduled).
pub struct ApiBinder {
    client: kube::Client,
    rt: tokio::runtime::Handle,
    outage: Arc<Outage>,
    unanswered: Arc<Unanswered>,
}

/// Bindings sent without an answer (the connection failed while they were in
/// flight): the API server may have made them. When the watch shows such a pod bound
/// to the node it was sent to, its Scheduled event is written then.
#[derive(Default)]
pub(crate) struct Unanswered(Mutex<HashMap<String, Vec<(String, String)>>>);

impl Unanswered {
    fn insert(&self, key: &str, uid: &str, node: &str) {
        let mut m = lock(&self.0);
        let sent = m.entry(key.to_string()).or_default();
        let one = (uid.to_string(), node.to_string());
        if !sent.contains(&one) {
            sent.push(one);
        }
    }

    fn forget(&self, key: &str) {
        lock(&self.0).remove(key);
    }

    /// Whether a binding of the pod `key` with `uid` to `node` went unanswered (each
    /// try of an outage may have gone to another node; all are forgotten now that the
    /// pod is bound).
    fn take(&self, key: &str, uid: &str, node: &str) -> bool {
        let mut m = lock(&self.0);
        match m.remove(key) {
            Some(sent) => sent.iter().any(|(u, n)| u == uid && n == node),
            None => false,
        }
    }
}

impl ApiBinder {
    /// A binder on `client`; `rt` runs the request (bind is called from a blocking
    /// thread of the binding cycle).
    pub fn new(client: kube::Client, rt: tokio::runtime::Handle) -> ApiBinder {
        ApiBinder::with_outage(client, rt, Arc::new(Outage::new("writes")), Arc::default())
    }

    pub(crate) fn with_outage(
        client: kube::Client,
        rt: tokio::runtime::Handle,
        outage: Arc<Outage>,
        unanswered: Arc<Unanswered>,
    ) -> ApiBinder {
        ApiBinder {
            client,
            rt,
            outage,
            unanswered,
        }
    }
}

impl PodBinder for ApiBinder {
    fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), pod.namespace());
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(pod.name().to_string()),
                namespace: Some(pod.namespace().to_string()),
                uid: pod.pod().metadata.uid.clone(),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_string()),
                ..Default::default()
            },
        };
        let r: Result<serde_json::Value, kube::Error> = self.rt.block_on(api.create_subresource(
            "binding",
            pod.name(),
            &PostParams::default(),
            &binding,
        ));
        match r {
            Ok(_) => {
                self.outage.succeeded("writes");
                self.unanswered.forget(pod.key());
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code < 500 => {
                self.outage.succeeded("writes");
                Err(s.message.clone())
            }
            Err(kube::Error::Api(s)) => {
                self.outage.failed("writes", &s.message);
                Err(s.message.clone())
            }
            Err(e) => {
                self.outage.failed("writes", &e);
                self.unanswered.insert(pod.key(), pod.uid(), node);
                Err(e.to_string())
            }
        }
    }
}

/// Pods waiting at Permit: a plugin (or an embedder) allows or rejects them by UID.
#[derive(Default)]
pub struct WaitingPods {
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<(), String>>>>,
}

impl std::fmt::Debug for WaitingPods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WaitingPods")
    }
}

impl WaitingPods {
    /// Lets a waiting pod go on to binding. `false` when no such pod waits.
    pub fn allow(&self, uid: &str) -> bool {
        self.take(uid).is_some_and(|tx| tx.send(Ok(())).is_ok())
    }

    /// Rejects a waiting pod with a message.
    pub fn reject(&self, uid: &str, message: &str) -> bool {
        self.take(uid)
            .is_some_and(|tx| tx.send(Err(message.to_string())).is_ok())
    }

    /// The UIDs of the waiting pods.
    pub fn uids(&self) -> Vec<String> {
        lock(&self.waiting).keys().cloned().collect()
    }

    fn take(&self, uid: &str) -> Option<oneshot::Sender<Result<(), String>>> {
        lock(&self.waiting).remove(uid)
    }

    fn register(&self, uid: &str) -> oneshot::Receiver<Result<(), String>> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(uid.to_string(), tx);
        rx
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Assumed {
    node: String,
    /// Set when binding finished: the pod is forgotten if no watch event confirms it
    /// by then.
    expires: Option<Instant>,
}

/// What the scheduling thread, the watches and the binding cycles share.
pub(crate) struct Inner {
    pub(crate) sched: Scheduler,
    pub(crate) queue: SchedulingQueue,
    pub(crate) nodes: BTreeMap<String, Arc<Node>>,
    /// Pods on nodes (bound, or assumed), by key.
    pub(crate) pods: HashMap<String, Arc<PodInfo>>,
    assumed: HashMap<String, Assumed>,
    /// Pending pods of our profiles, by key (to tell a spec change from a status one).
    pending: HashMap<String, Arc<Pod>>,
    /// Services, workloads, namespaces and PodDisruptionBudgets.
    objects: ObjectCache,
    /// PVs, claims, StorageClasses and the CSI objects.
    pub(crate) storage: StorageCache,
    /// DeviceClasses and ResourceSlices (the DRA catalog's sources).
    pub(crate) dra_cache: DraCache,
    dirty: bool,
}

/// The runtime's shared state.
pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    /// Notified on every change of the cache (and on stopping).
    pub(crate) wake: Condvar,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) waiting: Arc<WaitingPods>,
    pub(crate) leading: AtomicBool,
    pub(crate) stopping: AtomicBool,
    /// The DRA objects and claim assumptions every profile's DynamicResources shares.
    pub(crate) dra: Arc<DraState>,
    client: kube::Client,
    rt: tokio::runtime::Handle,
    assumed_ttl: Duration,
    /// The events, written in the background with retries.
    pub(crate) recorder: Arc<Recorder>,
    /// Failures of the watches, said once per outage.
    pub(crate) watch_outage: Outage,
    /// Failures of the scheduling client's writes (binds, status, deletes).
    pub(crate) write_outage: Arc<Outage>,
    unanswered: Arc<Unanswered>,
    profiles: BTreeSet<String>,
    /// The share of cycles whose plugin calls are timed, in percent.
    sample_percent: u64,
    cycles: AtomicU64,
}

fn terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}

pub(crate) fn key_of(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or("default"),
        meta.name.as_deref().unwrap_or("")
    )
}

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        sched: Scheduler,
        queue_options: QueueOptions,
        metrics: Arc<Metrics>,
        client: kube::Client,
        recorder: Arc<Recorder>,
        write_outage: Arc<Outage>,
        unanswered: Arc<Unanswered>,
        rt: tokio::runtime::Handle,
        assumed_ttl: Duration,
        sample_percent: u8,
        dra: Arc<DraState>,
    ) -> Arc<Shared> {
        let fwk = sched.profiles()[0].clone();
        let hints = QueueingHints::from_frameworks(sched.profiles().iter().map(|f| &**f));
        let profiles = sched
            .profiles()
            .iter()
            .map(|p| p.profile_name().to_string())
            .collect();
        let mut queue = SchedulingQueue::new(queue_options, Arc::new(SystemClock), move |a, b| {
            fwk.queue_less(a, b)
        });
        queue.set_queueing_hints(hints);
        let m = metrics.clone();
        queue.set_incoming_hook(Arc::new(move |q, event| m.incoming(q.label(), event)));
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                sched,
                queue,
                nodes: BTreeMap::new(),
                pods: HashMap::new(),
                assumed: HashMap::new(),
                pending: HashMap::new(),
                objects: ObjectCache::default(),
                storage: StorageCache::default(),
                dra_cache: DraCache::default(),
                dirty: true,
            }),
            wake: Condvar::new(),
            metrics,
            waiting: Arc::new(WaitingPods::default()),
            leading: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            dra,
            client,
            rt,
            assumed_ttl,
            recorder,
            watch_outage: Outage::new("watches"),
            write_outage,
            unanswered,
            profiles,
            sample_percent: u64::from(sample_percent),
            cycles: AtomicU64::new(0),
        });
        // The queue's gauges are read when /metrics is scraped: counting them on every
        // event would walk the unschedulable pods each time.
        let weak = Arc::downgrade(&shared);
        shared.metrics.set_refresher(Arc::new(move |m| {
            if let Some(shared) = weak.upgrade() {
                let inner = lock(&shared.inner);
                m.set_queue_gauges(
                    &inner.queue.unschedulable_by_plugin(),
                    &inner.queue.in_flight_event_counts(),
                );
            }
        }));
        shared
    }

    pub(crate) fn notify(&self) {
        self.wake.notify_all();
    }

    pub(crate) fn update_pending_metrics(&self, inner: &Inner) {
        self.metrics
            .set_cache_size(inner.nodes.len(), inner.pods.len(), inner.assumed.len());
        let p = inner.queue.pending();
        self.metrics.set_pending("active", p.active);
        self.metrics.set_pending("backoff", p.backoff);
        self.metrics.set_pending("unschedulable", p.unschedulable);
        self.metrics.set_pending("gated", p.gated);
    }

    // ---- the cache, from the watches ----

    /// The node list was (re)loaded: the differences with the cache are the events
    /// (new nodes, changed ones, nodes gone while the watch was down).
    pub(crate) fn nodes_listed(&self, nodes: Vec<Node>) {
        let mut inner = lock(&self.inner);
        let listed: BTreeMap<String, Arc<Node>> = nodes
            .into_iter()
            .map(|n| (n.metadata.name.clone().unwrap_or_default(), Arc::new(n)))
            .collect();
        let mut events = Vec::new();
        for (name, node) in &listed {
            match inner.nodes.get(name) {
                None => events.push(ClusterEvent::NODE_ADD),
                Some(old) => events.extend(node_update_events(old, node)),
            }
        }
        if inner.nodes.keys().any(|name| !listed.contains_key(name)) {
            events.push(ClusterEvent::NODE_DELETE);
        }
        events.sort();
        events.dedup();
        inner.nodes = listed;
        inner.dirty = true;
        for event in events {
            inner.queue.move_all_to_active_or_backoff(event);
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
    }

    /// A node was added, changed or deleted. A change becomes one event per kind of
    /// change kube-scheduler tells apart (allocatable, labels, taints, conditions, ...),
    /// so that only the pods those changes can help are retried.
    pub(crate) fn node_changed(&self, node: Node, deleted: bool) {
        let start = Instant::now();
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut inner = lock(&self.inner);
        let label = if deleted {
            "NodeDelete"
        } else if inner.nodes.contains_key(&name) {
            "NodeUpdate"
        } else {
            "NodeAdd"
        };
        let events = if deleted {
            if inner.nodes.remove(&name).is_none() {
                return;
            }
            vec![ClusterEvent::NODE_DELETE]
        } else {
            let events = match inner.nodes.get(&name) {
                None => vec![ClusterEvent::NODE_ADD],
                Some(old) => node_update_events(old, &node),
            };
            inner.nodes.insert(name, Arc::new(node));
            events
        };
        inner.dirty = true;
        for event in events {
            inner.queue.move_all_to_active_or_backoff(event);
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
        self.metrics.event_handled(label, start.elapsed());
    }

    /// The pod list was (re)loaded: pods not in it are gone.
    pub(crate) fn pods_listed(&self, pods: Vec<Pod>) {
        let keys: std::collections::HashSet<String> =
            pods.iter().map(|p| key_of(&p.metadata)).collect();
        {
            let inner = lock(&self.inner);
            let gone: Vec<String> = inner
                .pods
                .keys()
                .chain(inner.pending.keys())
                .filter(|k| !keys.contains(*k) && !inner.assumed.contains_key(*k))
                .cloned()
                .collect();
            drop(inner);
            for k in gone {
                self.pod_deleted(&k);
            }
        }
        for p in pods {
            self.pod_changed(p);
        }
    }

    pub(crate) fn pod_deleted(&self, key: &str) {
        let start = Instant::now();
        let mut inner = lock(&self.inner);
        let label = if inner.pods.contains_key(key) {
            "AssignedPodDelete"
        } else {
            "UnschedulablePodDelete"
        };
        inner.queue.delete(key);
        if let Some(p) = inner.pending.remove(key)
            && let Some(uid) = p.metadata.uid.as_deref()
            && inner.sched.nominated_pods_mut().remove(uid).is_some()
        {
            // The place the pod was nominated to is free again for the pods it kept
            // out: those of lower or equal priority (kube-scheduler's
            // `getLEPriorityPreCheck`).
            let priority = p.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
            inner
                .queue
                .move_to_active_or_backoff_if(ClusterEvent::ASSIGNED_POD_DELETE, |q| {
                    q.info.pod_info.priority() <= priority
                });
        }
        inner.assumed.remove(key);
        if let Some(old) = inner.pods.remove(key) {
            if let Some(node) = old.node_name() {
                let node = node.to_string();
                inner.sched.snapshot_mut().remove_pod(&node, key);
            }
            inner
                .queue
                .move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
        self.metrics.event_handled(label, start.elapsed());
    }

    pub(crate) fn pod_changed(&self, pod: Pod) {
        let start = Instant::now();
        let key = key_of(&pod.metadata);
        // A finished pod frees its node (kube-scheduler's informer leaves out Succeeded
        // and Failed pods); a terminating one keeps holding it until the API server
        // deletes it, as in kube-scheduler's cache, but is no longer scheduled if it
        // was pending (`skipPodSchedule`).
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let bound = pod.spec.as_ref().is_some_and(|s| s.node_name.is_some());
        if terminal(&pod) || (terminating && !bound) {
            self.pod_deleted(&key);
            return;
        }
        let pod = Arc::new(pod);
        let info = match PodInfo::new(pod.clone()) {
            Ok(i) => Arc::new(i),
            Err(e) => {
                tracing::warn!(pod = %key, error = %e, "ignoring pod");
                return;
            }
        };
        let mut inner = lock(&self.inner);
        // kube-scheduler's handler of the event: the cache's for a bound pod, the
        // queue's for a pending one.
        // A pod we assumed arrives bound: to kube-scheduler's informer it is new to the
        // assigned pods (an add), as a pod bound by another scheduler.
        let known_bound = inner.pods.contains_key(&key) && !inner.assumed.contains_key(&key);
        let label = match (info.node_name().is_some(), known_bound) {
            (true, true) => "AssignedPodUpdate",
            (true, false) => "AssignedPodAdd",
            (false, _) if inner.pending.contains_key(&key) => "UnschedulablePodUpdate",
            (false, _) => "UnschedulablePodAdd",
        };
        if let Some(node) = info.node_name() {
            // Bound: into the cache; confirms an assumed pod.
            let node = node.to_string();
            // A binding in flight reports its own outcome; otherwise, one of ours whose
            // answer was lost may be what bound the pod.
            if !inner.assumed.contains_key(&key) {
                self.bound_without_answer(&key, &pod, info.uid(), &node);
            }
            inner.queue.delete(&key);
            inner.pending.remove(&key);
            inner.sched.nominated_pods_mut().remove(info.uid());
            let was_assumed = inner.assumed.remove(&key).is_some();
            let old = inner.pods.insert(key.clone(), info.clone());
            if let Some(old) = &old
                && let Some(old_node) = old.node_name()
            {
                let old_node = old_node.to_string();
                inner.sched.snapshot_mut().remove_pod(&old_node, &key);
            }
            if !inner.sched.snapshot_mut().add_pod(info) && inner.nodes.contains_key(&node) {
                inner.dirty = true;
            }
            // A pod bound (by us, confirming an assumed pod, or by another scheduler) is
            // an add, as kube-scheduler's informer sees it; a bound pod that changed is
            // one event per kind of change (a status-only change helps no in-tree plugin).
            let events = match &old {
                Some(old) if !was_assumed => {
                    let unchanged = old.pod().metadata.resource_version.is_some()
                        && old.pod().metadata.resource_version == pod.metadata.resource_version;
                    if unchanged {
                        Vec::new()
                    } else {
                        pod_update_events(old.pod(), &pod)
                    }
                }
                _ => vec![ClusterEvent::ASSIGNED_POD_ADD],
            };
            for event in events {
                inner.queue.move_all_to_active_or_backoff(event);
            }
        } else {
            if !self.profiles.contains(info.scheduler_name()) {
                return;
            }
            if inner.assumed.contains_key(&key) || inner.pods.contains_key(&key) {
                return;
            }
            let changed = match inner.pending.get(&key) {
                None => true,
                Some(old) => {
                    fn claim_statuses(p: &Pod) -> Option<&Vec<PodResourceClaimStatus>> {
                        p.status.as_ref()?.resource_claim_statuses.as_ref()
                    }
                    old.spec != pod.spec
                        || old.metadata.labels != pod.metadata.labels
                        || old.metadata.annotations != pod.metadata.annotations
                        || claim_statuses(old) != claim_statuses(&pod)
                }
            };
            // A nomination written to the pod's status (by us before a restart, or
            // by another replica) counts as one made here.
            if let Some(n) = pod
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                && inner.sched.nominated_pods().node_of(info.uid()) != Some(n)
            {
                inner.sched.nominated_pods_mut().add(info.clone(), n);
            }
            inner.pending.insert(key.clone(), pod);
            if changed || !inner.queue.contains(&key) {
                inner.queue.add(info);
            }
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
        self.metrics.event_handled(label, start.elapsed());
    }

    /// The list of one object kind was (re)loaded.
    pub(crate) fn objects_listed<K: Cached>(&self, items: Vec<K>) {
        let mut inner = lock(&self.inner);
        *K::slot(&mut inner.objects) = items
            .into_iter()
            .map(|o| (object_key(&o), Arc::new(o)))
            .collect();
        Self::refresh_objects(&mut inner);
    }

    pub(crate) fn object_changed<K: Cached>(&self, o: K, deleted: bool) {
        let key = object_key(&o);
        let mut inner = lock(&self.inner);
        if deleted {
            K::slot(&mut inner.objects).remove(&key);
        } else {
            K::slot(&mut inner.objects).insert(key, Arc::new(o));
        }
        Self::refresh_objects(&mut inner);
    }

    fn refresh_objects(inner: &mut Inner) {
        let objects = Arc::new(inner.objects.build());
        inner.sched.snapshot_mut().set_objects(objects);
    }

    // ---- the scheduling loop ----

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

    fn forget(inner: &mut Inner, key: &str) {
        if let Some(a) = inner.assumed.remove(key) {
            inner.pods.remove(key);
            inner.sched.snapshot_mut().remove_pod(&a.node, key);
        }
    }

    fn schedule_one(self: &Arc<Self>, inner: &mut Inner, qp: QueuedPod) {
        let pod = qp.info.pod_info.clone();
        let key = pod.key().to_string();
        let Some(index) = inner.sched.profile_index(pod.scheduler_name()) else {
            inner.queue.done(&key);
            return;
        };
        let fwk: Arc<Framework> = inner.sched.profiles()[index].clone();
        let profile = fwk.profile_name().to_string();
        let gate = fwk.run_pre_enqueue_plugins(&pod);
        if !gate.is_success() {
            inner.queue.add_gated(qp);
            return;
        }
        let start = Instant::now();
        let mut state = CycleState::new();
        // Spread the sampled cycles evenly: cycle n is sampled when n * percent
        // crosses a multiple of 100.
        let n = self.cycles.fetch_add(1, Ordering::Relaxed);
        if (n + 1) * self.sample_percent / 100 > n * self.sample_percent / 100 {
            state.write(RecordPluginMetrics);
        }
        inner.sched.set_scheduling_cycle(qp.scheduling_cycle);
        let result = inner.sched.schedule_pod(index, &mut state, &pod);
        let result = match result {
            Ok(r) => r,
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
                self.metrics.algorithm(took);
                let message = error.to_string();
                match &error {
                    ScheduleError::Unfit(fit) => {
                        self.metrics
                            .attempt(&profile, AttemptResult::Unschedulable, took);
                        let plugins = fit.diagnosis.unschedulable_plugins.clone();
                        inner.queue.add_unschedulable(qp, plugins);
                    }
                    ScheduleError::NoNodesAvailable => {
                        self.metrics
                            .attempt(&profile, AttemptResult::Unschedulable, took);
                        inner.queue.add_unschedulable(qp, BTreeSet::new());
                    }
                    ScheduleError::Internal(_) | ScheduleError::FailedAfterFilter { .. } => {
                        self.metrics.attempt(&profile, AttemptResult::Error, took);
                        inner.queue.add_backoff(qp);
                    }
                }
                tracing::info!(pod = %key, profile = %profile, %message, "unable to schedule pod; waiting");
                let nominated_node = match nomination {
                    Some((node, victims)) => {
                        self.preempt(inner, &pod, &profile, &node, &victims);
                        Some(node)
                    }
                    None => None,
                };
                self.report_failure(pod.pod_arc().clone(), profile, message, nominated_node);
                return;
            }
        };
        self.metrics.algorithm(start.elapsed());
        let node = inner
            .sched
            .snapshot()
            .node_at(result.suggested_host)
            .name()
            .to_string();
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
            self.fail_after_assume(inner, qp, &profile, s, start);
            return;
        }
        let (s, timeout) = fwk.run_permit_plugins(&mut state, &assumed, &node);
        if !s.is_success() && !s.is_wait() {
            fwk.run_reserve_plugins_unreserve(&mut state, &assumed, &node);
            Self::forget(inner, &key);
            self.fail_after_assume(inner, qp, &profile, s, start);
            return;
        }
        let wait = if s.is_wait() { timeout } else { None };
        let me = self.clone();
        let metrics = self.metrics.clone();
        metrics.binding_tasks(1);
        self.rt.spawn(async move {
            me.binding_cycle(fwk, state, assumed, node, qp, wait, start)
                .await;
            metrics.binding_tasks(-1);
        });
    }

    fn fail_after_assume(
        self: &Arc<Self>,
        inner: &mut Inner,
        qp: QueuedPod,
        profile: &str,
        status: Status,
        start: Instant,
    ) {
        let message = status.message();
        let key = qp.key().to_string();
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
        // The assumed pod's place is free again, for the other pods: as kube-scheduler
        // does, the event comes after the pod is back in the queue and leaves it alone.
        inner
            .queue
            .move_to_active_or_backoff_if(ClusterEvent::ASSIGNED_POD_DELETE, |p| p.key() != key);
        self.report_failure(
            qp.info.pod_info.pod_arc().clone(),
            profile.to_string(),
            message,
            None,
        );
    }

    #[allow(clippy::too_many_arguments)]
    async fn binding_cycle(
        self: Arc<Self>,
        fwk: Arc<Framework>,
        mut state: CycleState,
        assumed: Arc<PodInfo>,
        node: String,
        qp: QueuedPod,
        wait: Option<Duration>,
        start: Instant,
    ) {
        let profile = fwk.profile_name().to_string();
        let key = assumed.key().to_string();
        let mut status = Status::success();
        if let Some(timeout) = wait {
            let uid = assumed.uid().to_string();
            let rx = self.waiting.register(&uid);
            status = match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(Ok(()))) => Status::success(),
                Ok(Ok(Err(msg))) => Status::new(kubesched_framework::Code::Unschedulable, msg),
                Ok(Err(_)) => Status::error("waiting pod dropped"),
                Err(_) => {
                    self.waiting.take(&uid);
                    Status::new(
                        kubesched_framework::Code::Unschedulable,
                        format!("rejected due to timeout after waiting {timeout:?} at plugin"),
                    )
                }
            };
        }
        // Whether PreBind (rather than Permit or Bind) failed.
        let mut at_pre_bind = false;
        let (state, status) = if status.is_success() {
            let (fwk2, assumed2, node2) = (fwk.clone(), assumed.clone(), node.clone());
            // PreBind may wait (VolumeBinding waits for the PV controller): on a
            // blocking thread of its own, never the scheduling loop's.
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
        } else {
            (state, status)
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
        }
        let message = if at_pre_bind && status.is_rejected() {
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
    fn bound_without_answer(&self, key: &str, pod: &Arc<Pod>, uid: &str, node: &str) {
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
        let waiting = self.waiting.reject(uid, "preempted");
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
