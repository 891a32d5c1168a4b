//! List-then-watch loops for pods, nodes and the objects plugins read (Services,
//! ReplicationControllers, ReplicaSets, StatefulSets, Namespaces,
//! PodDisruptionBudgets; the storage and DRA kinds of `storage.rs`, which the
//! runtime goes on without when the API server does not serve or allow them) that
//! keep the runtime's cache in step, as client-go's
//! reflector: relisting at once when a watch's resourceVersion is too old (410 Gone),
//! and after a jittered exponential backoff when the API server fails.
//!
//! Lists and watches ask for protobuf, as kube-scheduler's informers do, where the
//! kind is one the [`crate::protobuf`] schema knows and `clientConnection.contentType`
//! names protobuf; whatever the API server answers in (JSON, for kinds it has no
//! protobuf for) is decoded by its Content-Type. The first list asks for
//! `resourceVersion=0`, served from the API server's watch cache, as client-go's
//! reflector does; a relist after the watch expired asks for the latest.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{Stream, StreamExt, TryStreamExt};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ListParams, WatchParams};
use kube::core::ObjectList;
use kubesched_framework::ClusterObjects;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::outage::Backoff;
use crate::protobuf::{self, PROTOBUF, WatchEvent};
use crate::requests::{Requests, decode_error};
use crate::runtime::Shared;
use crate::workload_ref::WorkloadRefPod;

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

/// Pods with v1.35's gangs on: as [`Pod`], each with its `spec.workloadRef` in the
/// annotation GangScheduling reads.
impl Watched for WorkloadRefPod {
    const FIELD_SELECTOR: Option<&'static str> = <Pod as Watched>::FIELD_SELECTOR;
    fn listed(shared: &Shared, items: Vec<Self>) {
        Pod::listed(
            shared,
            items
                .into_iter()
                .map(WorkloadRefPod::into_annotated)
                .collect(),
        );
    }
    fn changed(shared: &Shared, pod: Self, deleted: bool) {
        Pod::changed(shared, pod.into_annotated(), deleted);
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
    encoding: Encoding,
    synced: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let mut synced = Some(synced);
    let mut backoff = Backoff::new();
    let kind = K::kind(&()).to_string();
    let mut refused = false;
    let source = Source::new::<K>(client, encoding);
    // client-go's reflector lists from the watch cache (resourceVersion=0) unless its
    // last watch expired: then only the latest will do.
    let mut from_cache = true;
    loop {
        if *stop.borrow() {
            return;
        }
        let r = tokio::select! {
            r = list_and_watch::<K>(&shared, &source, from_cache, &mut synced, &kind, &mut refused) => r,
            _ = stop.changed() => return,
        };
        from_cache = true;
        let wait = match r {
            Ended::Expired => {
                tracing::debug!(%kind, "watch expired (410 Gone); relisting");
                from_cache = false;
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
    source: &Source,
    from_cache: bool,
    synced: &mut Option<tokio::sync::oneshot::Sender<()>>,
    kind: &str,
    refused: &mut bool,
) -> Ended {
    let mut lp = ListParams::default();
    if let Some(fields) = K::FIELD_SELECTOR {
        lp = lp.fields(fields);
    }
    if from_cache {
        lp = lp.at("0");
    }
    let (mut rv, items) = match source.list::<K>(&lp).await {
        Ok(l) => l,
        Err(e) => return e.into(),
    };
    shared.watch_outage.succeeded(kind);
    if *refused {
        tracing::info!(%kind, "this kind can be listed again");
        *refused = false;
        K::refused(shared, None);
    }
    K::listed(shared, items);
    if let Some(s) = synced.take() {
        let _ = s.send(());
    }
    loop {
        let mut wp = WatchParams::default().timeout(290);
        if let Some(fields) = K::FIELD_SELECTOR {
            wp = wp.fields(fields);
        }
        let mut stream = match source.watch::<K>(&wp, &rv).await {
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
                    rv = b;
                    continue;
                }
                WatchEvent::Error(s) => return kube::Error::Api(Box::new(s)).into(),
            };
            rv = object.meta().resource_version.clone().unwrap_or(rv);
            K::changed(shared, object, deleted);
        }
    }
}

/// How the runtime asks for lists and watches: kube-scheduler's
/// `clientConnection.contentType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// `application/vnd.kubernetes.protobuf` where the kind has it (kube-scheduler's
    /// default), JSON otherwise.
    #[default]
    Protobuf,
    /// `application/json` only.
    Json,
}

impl Encoding {
    /// The encoding a `contentType` names (`application/vnd.kubernetes.protobuf` or
    /// `application/json`).
    pub fn from_content_type(content_type: &str) -> Result<Encoding, String> {
        match content_type.trim() {
            "" | PROTOBUF => Ok(Encoding::Protobuf),
            "application/json" => Ok(Encoding::Json),
            other => Err(format!(
                "clientConnection.contentType {other:?} is not supported: use {PROTOBUF:?} or \"application/json\""
            )),
        }
    }
}

/// A kind that can be listed and watched.
pub trait Listable:
    kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Send + 'static
{
}
impl<K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Send + 'static> Listable
    for K
{
}

/// Lists `K` as the runtime does, in `encoding` (protobuf falls back to JSON where
/// the kind has none): the list's resourceVersion and its items.
pub async fn list<K: Listable>(
    client: &kube::Client,
    encoding: Encoding,
    lp: &ListParams,
) -> Result<(String, Vec<K>), kube::Error> {
    Source::new::<K>(client.clone(), encoding).list(lp).await
}

/// Watches `K` from `resource_version` as the runtime does, in `encoding`.
pub async fn watch<K: Listable>(
    client: &kube::Client,
    encoding: Encoding,
    wp: &WatchParams,
    resource_version: &str,
) -> Result<impl Stream<Item = Result<WatchEvent<K>, kube::Error>> + use<K>, kube::Error> {
    Source::new::<K>(client.clone(), encoding)
        .watch(wp, resource_version)
        .await
}

/// Where a kind is listed and watched, and in what encoding.
struct Source {
    requests: Requests,
    /// The kind's protobuf message, when it is asked for in protobuf.
    message: Option<protobuf::MessageId>,
}

impl Source {
    fn new<K: Listable>(client: kube::Client, encoding: Encoding) -> Source {
        let message = match encoding {
            Encoding::Protobuf => protobuf::message_of::<K>(),
            Encoding::Json => None,
        };
        Source {
            requests: Requests::new(client, encoding),
            message,
        }
    }

    /// Lists `K`: the list's resourceVersion and its items.
    async fn list<K: Listable>(&self, lp: &ListParams) -> Result<(String, Vec<K>), kube::Error> {
        let request = kube::core::Request::new(K::url_path(&(), None))
            .list(lp)
            .map_err(kube::Error::BuildRequest)?;
        let (protobuf, body) = self.requests.send(request, self.message.is_some()).await?;
        let body = body.collect().await?.to_bytes();
        match (protobuf, self.message) {
            (true, Some(item)) => protobuf::decode_list(item, &body).map_err(decode_error),
            _ => {
                let list: ObjectList<K> =
                    serde_json::from_slice(&body).map_err(kube::Error::SerdeError)?;
                Ok((
                    list.metadata.resource_version.unwrap_or_default(),
                    list.items,
                ))
            }
        }
    }

    /// Watches `K` from `rv`: its events as they arrive.
    async fn watch<K: Listable>(
        &self,
        wp: &WatchParams,
        rv: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>, kube::Error>> + use<K>, kube::Error> {
        let request = kube::core::Request::new(K::url_path(&(), None))
            .watch(wp, rv)
            .map_err(kube::Error::BuildRequest)?;
        let (protobuf, body) = self.requests.send(request, self.message.is_some()).await?;
        let message = self.message.filter(|_| protobuf);
        let chunks = body.into_data_stream();
        let decoder = EventDecoder::<K> {
            message,
            buffer: protobuf::Frames::default(),
            kind: std::marker::PhantomData,
        };
        Ok(futures::stream::unfold(
            (chunks, decoder, std::collections::VecDeque::new()),
            |(mut chunks, mut decoder, mut ready)| async move {
                loop {
                    if let Some(ev) = ready.pop_front() {
                        return Some((ev, (chunks, decoder, ready)));
                    }
                    match chunks.next().await {
                        Some(Ok(bytes)) => ready.extend(decoder.push(&bytes)),
                        Some(Err(e)) => return Some((Err(e), (chunks, decoder, ready))),
                        None if decoder.buffer.is_empty() => return None,
                        None => {
                            decoder.buffer = protobuf::Frames::default();
                            let e = decode_error(protobuf::Error::new(
                                "the watch ended inside an event",
                            ));
                            return Some((Err(e), (chunks, decoder, ready)));
                        }
                    }
                }
            },
        ))
    }
}

/// Splits a watch's bytes into events: length-prefixed protobuf frames, or JSON
/// lines.
struct EventDecoder<K> {
    message: Option<protobuf::MessageId>,
    buffer: protobuf::Frames,
    kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: Listable> EventDecoder<K> {
    fn push(&mut self, bytes: &[u8]) -> Vec<Result<WatchEvent<K>, kube::Error>> {
        self.buffer.push(bytes);
        let mut events = Vec::new();
        match self.message {
            Some(item) => {
                while let Some(frame) = self.buffer.next_frame() {
                    events.push(protobuf::decode_watch_event(item, &frame).map_err(decode_error));
                }
            }
            None => {
                while let Some(line) = self.buffer.next_line() {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    events.push(json_event(&line));
                }
            }
        }
        events
    }
}

fn json_event<K: Listable>(line: &[u8]) -> Result<WatchEvent<K>, kube::Error> {
    let ev: kube::api::WatchEvent<K> =
        serde_json::from_slice(line).map_err(kube::Error::SerdeError)?;
    Ok(match ev {
        kube::api::WatchEvent::Added(o) => WatchEvent::Added(o),
        kube::api::WatchEvent::Modified(o) => WatchEvent::Modified(o),
        kube::api::WatchEvent::Deleted(o) => WatchEvent::Deleted(o),
        kube::api::WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b.metadata.resource_version),
        kube::api::WatchEvent::Error(s) => WatchEvent::Error(*s),
    })
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
