//! The runtime: the cache kept in step with the API server's pods and nodes, the
//! scheduling loop (one pod at a time, on its own thread) and the binding cycles
//! (concurrent tasks).
//!
//! Split as kube-scheduler splits its scheduler: the shared state here,
//! [`event_handlers`] (the cache kept in step with the watches), [`schedule_one`] (the
//! scheduling loop and the binding cycles), [`binder`] (bindings through the API
//! server) and [`waiting_pods`] (pods held at Permit).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_framework::{
    DraState, LiveObjects, PodInfo, QueueOptions, QueueingHints, Scheduler, SchedulingQueue,
    SystemClock,
};

use crate::events::Recorder;
use crate::metrics::Metrics;
use crate::outage::Outage;
use crate::storage::{DraCache, StorageCache};
use crate::watch::ObjectCache;

mod binder;
mod event_handlers;
mod pod_groups;
mod schedule_one;
mod waiting_pods;

pub use binder::ApiBinder;
pub(crate) use binder::Unanswered;
pub(crate) use pod_groups::{
    ElasticQuotaObject, PodGroupObject, SigsPodGroupObject, WorkloadObject,
};
pub use waiting_pods::WaitingPods;

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
    /// PodGroups and the pods that name one (with the `GenericWorkload` gate).
    groups: pod_groups::GroupObjects,
    dirty: bool,
}

/// The runtime's shared state.
pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    /// Notified on every change of the cache (and on stopping).
    pub(crate) wake: Condvar,
    /// The same notice for tasks (the binding cycles' wait for volume bindings).
    pub(crate) changed: tokio::sync::Notify,
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
    /// What plugins read outside a cycle (GangScheduling's PodGroups and pods).
    live: Arc<LiveObjects>,
    /// The `GenericWorkload` gate: PodGroups are watched and scheduled in PodGroup
    /// cycles.
    gangs: bool,
    /// Whether the group pods and gang and quota objects feed the live objects (the
    /// gate, or a scheduler-plugins plugin in a profile).
    follows_groups: bool,
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
        live: Arc<LiveObjects>,
        gangs: bool,
        follows_groups: bool,
    ) -> Arc<Shared> {
        let fwk = sched.profiles()[0].clone();
        let waiting = Arc::new(WaitingPods::new(fwk.waiting_pods().clone()));
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
                groups: pod_groups::GroupObjects::default(),
                dirty: true,
            }),
            wake: Condvar::new(),
            changed: tokio::sync::Notify::new(),
            metrics,
            waiting,
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
            live,
            gangs,
            follows_groups,
        });
        // The queue's gauges are read when /metrics is scraped: counting them on every
        // event would walk the unschedulable pods each time.
        let weak = Arc::downgrade(&shared);
        shared.metrics.set_refresher(Arc::new(move |m| {
            if let Some(shared) = weak.upgrade() {
                m.set_waiting_pods(shared.waiting.len());
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
        self.changed.notify_waiters();
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
}
