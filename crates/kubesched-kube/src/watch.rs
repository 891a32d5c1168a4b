//! List-then-watch loops for pods, nodes and the objects plugins read (Services,
//! ReplicationControllers, ReplicaSets, StatefulSets, Namespaces,
//! PodDisruptionBudgets; the storage and DRA kinds of [`crate::storage`], which the
//! runtime goes on without when the API server does not serve or allow them) that
//! keep the runtime's cache in step, as client-go's
//! reflector: relisting at once when a watch's resourceVersion is too old (410 Gone),
//! and after a jittered exponential backoff when the API server fails.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kubesched_framework::ClusterObjects;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::outage::Backoff;
use crate::runtime::Shared;

/// A kind a list-and-watch loop follows, and what the cache does with what it sees.
pub(crate) trait Watched:
    kube::Resource<DynamicType = ()>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Whether the runtime goes on without this kind when the API server does not
    /// serve it or refuses it to this scheduler (404, 403): the kinds only some pods
    /// need (storage, DRA). The others are retried until they can be listed.
    const OPTIONAL: bool = false;
    /// The field selector of the list and the watch: what kube-scheduler's informer of
    /// this kind asks for.
    const FIELD_SELECTOR: Option<&'static str> = None;
    /// The full list, on the first sync and on every relist.
    fn listed(shared: &Shared, items: Vec<Self>);
    /// One watch event: added or modified, or deleted.
    fn changed(shared: &Shared, object: Self, deleted: bool);
    /// An optional kind cannot be listed (`Some(why)`), or can again (`None`).
    fn refused(_shared: &Shared, _reason: Option<String>) {}
}

/// Pods as kube-scheduler's informer follows them: without the finished ones (a pod
/// that finishes leaves the watch as deleted).
impl Watched for Pod {
    const FIELD_SELECTOR: Option<&'static str> =
        Some("status.phase!=Succeeded,status.phase!=Failed");
    fn listed(shared: &Shared, items: Vec<Self>) {
        shared.pods_listed(items);
    }
    fn changed(shared: &Shared, pod: Self, deleted: bool) {
        if deleted {
            shared.pod_deleted(&crate::runtime::key_of(&pod.metadata));
        } else {
            shared.pod_changed(pod);
        }
    }
}

impl Watched for Node {
    fn listed(shared: &Shared, items: Vec<Self>) {
        shared.nodes_listed(items);
    }
    fn changed(shared: &Shared, node: Self, deleted: bool) {
        shared.node_changed(node, deleted);
    }
}

/// Why a list-and-watch ended.
enum Ended {
    /// The watch's resourceVersion is too old (410 Gone): relist at once, as
    /// client-go's reflector does.
    Expired,
    /// The API server failed or could not be reached: relist after a backoff.
    Failed(kube::Error),
}

impl From<kube::Error> for Ended {
    fn from(e: kube::Error) -> Ended {
        match e {
            kube::Error::Api(s) if s.code == 410 => Ended::Expired,
            e => Ended::Failed(e),
        }
    }
}

/// Runs the list-and-watch loop of kind `K` until `stop`, as client-go's reflector:
/// a watch that ends on its own is resumed from the last resourceVersion; one that
/// expires (410 Gone) is followed by a relist at once; a failure by a relist after
/// an exponential backoff with jitter (800 ms doubling to 30 s). Failures are said
/// once per outage (shared by every kind) and the recovery once. `synced` is told
/// after the first list.
pub(crate) async fn run<K: Watched>(
    shared: Arc<Shared>,
    client: kube::Client,
    synced: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let mut synced = Some(synced);
    let mut backoff = Backoff::new();
    let kind = K::kind(&()).to_string();
    let mut refused = false;
    loop {
        if *stop.borrow() {
            return;
        }
        let r = tokio::select! {
            r = list_and_watch::<K>(&shared, &client, &mut synced, &kind, &mut refused) => r,
            _ = stop.changed() => return,
        };
        let wait = match r {
            Ended::Expired => {
                tracing::debug!(%kind, "watch expired (410 Gone); relisting");
                continue;
            }
            Ended::Failed(kube::Error::Api(s))
                if K::OPTIONAL && (s.code == 403 || s.code == 404) =>
            {
                // Not served, or not allowed: said once; the pods that need the kind
                // stay unschedulable with this reason; listing is tried again now and
                // then (the RBAC may be fixed, the API group enabled).
                let why = format!("{} ({})", s.message, s.code);
                if !refused {
                    tracing::warn!(%kind, reason = %why, "cannot list this kind; pods that need it stay unschedulable until it can be listed");
                    refused = true;
                    K::refused(&shared, Some(why));
                }
                if let Some(s) = synced.take() {
                    let _ = s.send(());
                }
                backoff.next_wait()
            }
            Ended::Failed(e) => {
                shared.watch_outage.failed(&kind, &e);
                backoff.next_wait()
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => return,
        }
    }
}

async fn list_and_watch<K: Watched>(
    shared: &Arc<Shared>,
    client: &kube::Client,
    synced: &mut Option<tokio::sync::oneshot::Sender<()>>,
    kind: &str,
    refused: &mut bool,
) -> Ended {
    let api: Api<K> = Api::all(client.clone());
    let mut lp = ListParams::default();
    if let Some(fields) = K::FIELD_SELECTOR {
        lp = lp.fields(fields);
    }
    let list = match api.list(&lp).await {
        Ok(l) => l,
        Err(e) => return e.into(),
    };
    shared.watch_outage.succeeded(kind);
    if *refused {
        tracing::info!(%kind, "this kind can be listed again");
        *refused = false;
        K::refused(shared, None);
    }
    let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
    K::listed(shared, list.items);
    if let Some(s) = synced.take() {
        let _ = s.send(());
    }
    loop {
        let mut wp = WatchParams::default().timeout(290);
        if let Some(fields) = K::FIELD_SELECTOR {
            wp = wp.fields(fields);
        }
        let mut stream = match api.watch(&wp, &rv).await {
            Ok(s) => s.boxed(),
            Err(e) => return e.into(),
        };
        loop {
            let ev = match stream.try_next().await {
                Ok(Some(ev)) => ev,
                // The server ended the watch (its timeout): resume from `rv`.
                Ok(None) => break,
                Err(e) => return e.into(),
            };
            let (object, deleted) = match ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
                WatchEvent::Deleted(o) => (o, true),
                WatchEvent::Bookmark(b) => {
                    rv = b.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(s) => return kube::Error::Api(s).into(),
            };
            rv = object.meta().resource_version.clone().unwrap_or(rv);
            K::changed(shared, object, deleted);
        }
    }
}

/// The cluster objects other than pods and nodes that plugins read (workload
/// selectors, namespaces, PodDisruptionBudgets), each kind in its own map by key.
#[derive(Default)]
pub(crate) struct ObjectCache {
    services: BTreeMap<String, Arc<Service>>,
    replication_controllers: BTreeMap<String, Arc<ReplicationController>>,
    replica_sets: BTreeMap<String, Arc<ReplicaSet>>,
    stateful_sets: BTreeMap<String, Arc<StatefulSet>>,
    namespaces: BTreeMap<String, Arc<Namespace>>,
    pod_disruption_budgets: BTreeMap<String, Arc<PodDisruptionBudget>>,
}

impl ObjectCache {
    /// The objects as the snapshot holds them.
    pub(crate) fn build(&self) -> ClusterObjects {
        ClusterObjects {
            services: self.services.values().cloned().collect(),
            replication_controllers: self.replication_controllers.values().cloned().collect(),
            replica_sets: self.replica_sets.values().cloned().collect(),
            stateful_sets: self.stateful_sets.values().cloned().collect(),
            namespaces: self.namespaces.values().cloned().collect(),
            pod_disruption_budgets: self.pod_disruption_budgets.values().cloned().collect(),
            ..ClusterObjects::default()
        }
    }
}

/// A kind of object kept in the [`ObjectCache`].
pub(crate) trait Cached: Watched {
    /// Its map in the cache.
    fn slot(cache: &mut ObjectCache) -> &mut BTreeMap<String, Arc<Self>>;
}

macro_rules! cached {
    ($t:ty, $field:ident) => {
        impl Cached for $t {
            fn slot(cache: &mut ObjectCache) -> &mut BTreeMap<String, Arc<Self>> {
                &mut cache.$field
            }
        }
        impl Watched for $t {
            fn listed(shared: &Shared, items: Vec<Self>) {
                shared.objects_listed(items);
            }
            fn changed(shared: &Shared, object: Self, deleted: bool) {
                shared.object_changed(object, deleted);
            }
        }
    };
}
cached!(Service, services);
cached!(ReplicationController, replication_controllers);
cached!(ReplicaSet, replica_sets);
cached!(StatefulSet, stateful_sets);
cached!(Namespace, namespaces);
cached!(PodDisruptionBudget, pod_disruption_budgets);

/// The cache key of an object: `namespace/name`, or `name` when cluster-scoped.
pub(crate) fn object_key<K: kube::Resource>(o: &K) -> String {
    let m = o.meta();
    match &m.namespace {
        Some(ns) => format!("{ns}/{}", m.name.as_deref().unwrap_or("")),
        None => m.name.clone().unwrap_or_default(),
    }
}
