//! List-then-watch loops for pods, nodes and the objects plugins read (Services,
//! ReplicationControllers, ReplicaSets, StatefulSets, Namespaces,
//! PodDisruptionBudgets) that keep the runtime's cache in step, relisting when a
//! watch fails or its resourceVersion is too old (410 Gone).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kubesched_framework::ClusterObjects;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::runtime::Shared;

/// Which objects a loop follows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Pods,
    Nodes,
}

/// Runs one list-and-watch loop until `stop`; `synced` is told after the first list.
pub(crate) async fn run(
    shared: Arc<Shared>,
    client: kube::Client,
    kind: Kind,
    synced: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let mut synced = Some(synced);
    loop {
        if *stop.borrow() {
            return;
        }
        let r = tokio::select! {
            r = list_and_watch(&shared, &client, kind, &mut synced) => r,
            _ = stop.changed() => return,
        };
        if let Err(e) = r {
            tracing::warn!(?kind, error = %e, "watch failed; relisting");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.changed() => return,
        }
    }
}

async fn list_and_watch(
    shared: &Arc<Shared>,
    client: &kube::Client,
    kind: Kind,
    synced: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), kube::Error> {
    match kind {
        Kind::Pods => {
            let api: Api<Pod> = Api::all(client.clone());
            let list = api.list(&ListParams::default()).await?;
            let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
            shared.pods_listed(list.items);
            if let Some(s) = synced.take() {
                let _ = s.send(());
            }
            loop {
                let wp = WatchParams::default().timeout(290);
                let mut stream = api.watch(&wp, &rv).await?.boxed();
                while let Some(ev) = stream.try_next().await? {
                    match ev {
                        WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                            rv = p.metadata.resource_version.clone().unwrap_or(rv);
                            shared.pod_changed(p);
                        }
                        WatchEvent::Deleted(p) => {
                            rv = p.metadata.resource_version.clone().unwrap_or(rv);
                            let key = format!(
                                "{}/{}",
                                p.metadata.namespace.as_deref().unwrap_or("default"),
                                p.metadata.name.as_deref().unwrap_or("")
                            );
                            shared.pod_deleted(&key);
                        }
                        WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                        WatchEvent::Error(s) => return Err(kube::Error::Api(s)),
                    }
                }
            }
        }
        Kind::Nodes => {
            let api: Api<Node> = Api::all(client.clone());
            let list = api.list(&ListParams::default()).await?;
            let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
            shared.nodes_listed(list.items);
            if let Some(s) = synced.take() {
                let _ = s.send(());
            }
            loop {
                let wp = WatchParams::default().timeout(290);
                let mut stream = api.watch(&wp, &rv).await?.boxed();
                while let Some(ev) = stream.try_next().await? {
                    match ev {
                        WatchEvent::Added(n) | WatchEvent::Modified(n) => {
                            rv = n.metadata.resource_version.clone().unwrap_or(rv);
                            shared.node_changed(n, false);
                        }
                        WatchEvent::Deleted(n) => {
                            rv = n.metadata.resource_version.clone().unwrap_or(rv);
                            shared.node_changed(n, true);
                        }
                        WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                        WatchEvent::Error(s) => return Err(kube::Error::Api(s)),
                    }
                }
            }
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
        }
    }
}

/// A kind of object kept in the [`ObjectCache`].
pub(crate) trait Cached:
    kube::Resource<DynamicType = ()>
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
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

/// Runs the list-and-watch loop of one object kind until `stop`; `synced` is told
/// after the first list.
pub(crate) async fn run_objects<K: Cached>(
    shared: Arc<Shared>,
    client: kube::Client,
    synced: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let mut synced = Some(synced);
    loop {
        if *stop.borrow() {
            return;
        }
        let r = tokio::select! {
            r = list_and_watch_objects::<K>(&shared, &client, &mut synced) => r,
            _ = stop.changed() => return,
        };
        if let Err(e) = r {
            tracing::warn!(kind = %K::kind(&()), error = %e, "watch failed; relisting");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.changed() => return,
        }
    }
}

async fn list_and_watch_objects<K: Cached>(
    shared: &Arc<Shared>,
    client: &kube::Client,
    synced: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), kube::Error> {
    let api: Api<K> = Api::all(client.clone());
    let list = api.list(&ListParams::default()).await?;
    let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
    shared.objects_listed(list.items);
    if let Some(s) = synced.take() {
        let _ = s.send(());
    }
    loop {
        let wp = WatchParams::default().timeout(290);
        let mut stream = api.watch(&wp, &rv).await?.boxed();
        while let Some(ev) = stream.try_next().await? {
            match ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    rv = o.meta().resource_version.clone().unwrap_or(rv);
                    shared.object_changed(o, false);
                }
                WatchEvent::Deleted(o) => {
                    rv = o.meta().resource_version.clone().unwrap_or(rv);
                    shared.object_changed(o, true);
                }
                WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                WatchEvent::Error(s) => return Err(kube::Error::Api(s)),
            }
        }
    }
}
