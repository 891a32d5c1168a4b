//! `kubesched record`: a live cluster written as a trace that `kubesched replay` reads
//! (kubesched-replay's format, version 1). The objects there at the start are applied at
//! time 0; then every change a watch sees is written with its time in seconds since the
//! start: an added or modified object as an `apply` (a pod that finished keeps its
//! phase, which the replay reads as its finish), a deleted one as a `delete`.
//! `managedFields` are dropped. Each line is written whole and flushed, so a recorder
//! that is killed leaves at most a cut-off last line (which `replay
//! --allow-truncated` skips), and one that is stopped leaves a complete file.
//!
//! Recorded kinds: Nodes, Namespaces, Pods, Services, ReplicationControllers,
//! ReplicaSets, StatefulSets and PodDisruptionBudgets; and the gang and quota kinds
//! that `--from-cluster` reads ([`DYNAMIC_KINDS`]: `scheduling.k8s.io/v1alpha2`
//! PodGroups and Workloads, `scheduling.k8s.io/v1alpha1` Workloads, scheduler-plugins'
//! `scheduling.x-k8s.io/v1alpha1` PodGroups and ElasticQuotas), kept as the server
//! returns them, with their `apiVersion` and `kind`; their `delete` lines carry the
//! `apiVersion` too, since two of them share a kind. Storage and `resource.k8s.io`
//! objects are not recorded: a replay takes those from its scenario files. A watch that
//! the API server ends is started again from the last version seen; one that has fallen
//! too far behind (410 Gone) lists the kind again and writes what changed meanwhile.
//!
//! Every kind but Nodes and Pods is optional: one the server does not serve (404, or
//! its API group absent) or does not let the recorder list or watch (403) is left out
//! with one warning naming it ([`Recorded::warnings`]), and the rest is recorded.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, WatchEvent, WatchParams};

use crate::cluster_dump::{
    DYNAMIC_KINDS, DynamicKind, dynamic_api, kube_error_line, list_pages, refused_because,
    value_with_type,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// What [`record`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Objects applied at time 0.
    pub at_start: usize,
    /// Changes written after that.
    pub changes: usize,
    /// How long it recorded.
    pub seconds: u64,
    /// Kinds left out because the server does not serve them or does not let the
    /// recorder list or watch them (every kind but Nodes and Pods may be), one line
    /// each naming the kind and its `apiVersion`, e.g. `ElasticQuota objects left out:
    /// the server does not serve scheduling.x-k8s.io/v1alpha1 elasticquotas; the trace
    /// has none`.
    pub warnings: Vec<String>,
}

/// Why recording stopped short.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Listing or watching a kind failed for good.
    #[error("cannot {what} {resource}: {message}")]
    Api {
        /// `list` or `watch`.
        what: &'static str,
        /// The resource, e.g. `pods`.
        resource: String,
        /// The server's or client's error, in one line.
        message: String,
    },
    /// The trace could not be written.
    #[error("cannot write the trace: {0}")]
    Write(#[from] std::io::Error),
}

/// One line for the writer: the object's change, stamped when it is written.
enum Change {
    Apply(Value),
    Delete {
        /// Written for the [`DYNAMIC_KINDS`] only, two of which share a kind.
        api_version: Option<String>,
        kind: String,
        namespace: Option<String>,
        name: String,
    },
    Failed(RecordError),
}

/// Records the cluster behind `client` into `out` until `stop` completes or `duration`
/// has passed (if given): the header, the objects at time 0, then every change.
pub async fn record(
    client: &kube::Client,
    out: &mut (impl Write + Send),
    description: &str,
    duration: Option<Duration>,
    stop: impl Future<Output = ()>,
) -> Result<Recorded, RecordError> {
    record_with_start_hook(client, out, description, duration, stop, |_| {}).await
}

/// As [`record`], calling `started` once, when the objects at time 0 are written (with
/// what was written so far): whatever changes in the cluster after that is in the
/// trace as a change. A caller that makes changes of its own (a test, a load
/// generator) waits for it so that none of them is taken for the starting state.
pub async fn record_with_start_hook(
    client: &kube::Client,
    out: &mut (impl Write + Send),
    description: &str,
    duration: Option<Duration>,
    stop: impl Future<Output = ()>,
    started: impl FnOnce(&Recorded),
) -> Result<Recorded, RecordError> {
    writeln!(
        out,
        "{{\"kubeschedTrace\":1,\"description\":{}}}",
        json!(description)
    )?;
    out.flush()?;
    let start = Instant::now();
    let (tx, mut rx) = mpsc::channel::<Change>(1024);
    let mut recorded = Recorded::default();
    // Nodes and namespaces first, pods last: what pods refer to (the gang and quota
    // objects too) is there before them.
    let r = &mut recorded;
    let mut kinds = vec![
        start_typed::<Node>(client, &tx, out, r, false).await?,
        start_typed::<Namespace>(client, &tx, out, r, true).await?,
        start_typed::<Service>(client, &tx, out, r, true).await?,
        start_typed::<ReplicationController>(client, &tx, out, r, true).await?,
        start_typed::<ReplicaSet>(client, &tx, out, r, true).await?,
        start_typed::<StatefulSet>(client, &tx, out, r, true).await?,
        start_typed::<PodDisruptionBudget>(client, &tx, out, r, true).await?,
    ];
    for kind in &DYNAMIC_KINDS {
        let api = dynamic_api(client, kind);
        kinds.push(start_kind(api, Names::dynamic(kind), &tx, out, r, true).await?);
    }
    // With spec.workloadRef (v1.35's gangs), which the replay's loader reads.
    kinds.push(
        start_typed::<crate::workload_ref::WorkloadRefPod>(client, &tx, out, r, false).await?,
    );
    out.flush()?;
    drop(tx);
    started(&recorded);
    let deadline = async {
        match duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stop);
    tokio::pin!(deadline);
    let result = loop {
        tokio::select! {
            () = &mut stop => break Ok(()),
            () = &mut deadline => break Ok(()),
            change = rx.recv() => {
                let Some(change) = change else { break Ok(()) };
                let time = start.elapsed().as_millis() as f64 / 1000.0;
                // `time` first, for people reading the trace.
                match change {
                    Change::Apply(object) => writeln!(out, "{{\"time\":{time},\"apply\":{object}}}")?,
                    Change::Delete { api_version, kind, namespace, name } => {
                        let mut r = json!({"kind": kind, "name": name});
                        if let Some(ns) = namespace {
                            r["namespace"] = json!(ns);
                        }
                        if let Some(api_version) = api_version {
                            r["apiVersion"] = json!(api_version);
                        }
                        writeln!(out, "{{\"time\":{time},\"delete\":{r}}}")?;
                    }
                    Change::Failed(e) => break Err(e),
                }
                out.flush()?;
                recorded.changes += 1;
            }
        }
    };
    for task in kinds.into_iter().flatten() {
        task.abort();
    }
    out.flush()?;
    recorded.seconds = start.elapsed().as_secs();
    result.map(|()| recorded)
}

/// An object type that is recorded: a k8s-openapi type, or [`kube::api::DynamicObject`]
/// for the [`DYNAMIC_KINDS`].
trait Kind:
    kube::Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Kind for K where
    K: kube::Resource
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// How a recorded kind is named: in the trace, in warnings and in errors.
#[derive(Clone, Debug)]
struct Names {
    /// The objects' `kind`.
    kind: String,
    /// The objects' `apiVersion`.
    api_version: String,
    /// The resource, e.g. `pods`.
    plural: String,
    /// The resource in errors: `pods`; `podgroups (scheduling.x-k8s.io/v1alpha1)`
    /// for a [`DynamicKind`], since two of them share a resource.
    resource: String,
    /// Whether `delete` lines carry the `apiVersion` (the [`DYNAMIC_KINDS`]).
    delete_api_version: bool,
}

impl Names {
    fn typed<K: kube::Resource<DynamicType = ()>>() -> Names {
        Names {
            kind: K::kind(&()).into_owned(),
            api_version: K::api_version(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
            resource: K::plural(&()).into_owned(),
            delete_api_version: false,
        }
    }

    fn dynamic(kind: &DynamicKind) -> Names {
        Names {
            kind: kind.kind.to_owned(),
            api_version: kind.api_version(),
            plural: kind.plural.to_owned(),
            resource: format!("{} ({})", kind.plural, kind.api_version()),
            delete_api_version: true,
        }
    }

    /// The object as the trace holds it: with its `apiVersion` and `kind`, without
    /// `managedFields`.
    fn value_of<K: Kind>(&self, object: &K) -> Value {
        let mut value =
            value_with_type(object, &self.api_version, &self.kind).unwrap_or(Value::Null);
        if let Some(Value::Object(meta)) = value.get_mut("metadata") {
            meta.remove("managedFields");
        }
        value
    }

    fn delete(&self, namespace: Option<String>, name: String) -> Change {
        Change::Delete {
            api_version: self.delete_api_version.then(|| self.api_version.clone()),
            kind: self.kind.clone(),
            namespace,
            name,
        }
    }

    fn error(&self, what: &'static str, e: &kube::Error) -> RecordError {
        RecordError::Api {
            what,
            resource: self.resource.clone(),
            message: kube_error_line(e),
        }
    }

    /// The warning for an optional kind whose `verb` was answered 404 or 403.
    fn left_out(&self, verb: &str, status: &kube::core::Status) -> String {
        let why = refused_because(verb, &self.api_version, &self.plural, status);
        format!("{} objects left out: {why}; the trace has none", self.kind)
    }
}

fn key_of<K: Kind>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or(""),
        object.meta().name.as_deref().unwrap_or("")
    )
}

/// A watch of `api` from `version`, ended by the server before the client's read
/// timeout (cluster_dump::READ_TIMEOUT, 60 s) so that it is started again from the
/// last version seen.
async fn open_watch<K: Kind>(
    api: &Api<K>,
    version: &str,
) -> Result<BoxStream<'static, Result<WatchEvent<K>, kube::Error>>, kube::Error> {
    let params = WatchParams::default().timeout(50);
    Ok(api.watch(&params, version).await?.boxed())
}

/// A 404 or 403 answer, which leaves an optional kind out.
fn refused(e: &kube::Error) -> Option<&kube::core::Status> {
    match e {
        kube::Error::Api(s) if s.code == 404 || s.code == 403 => Some(s),
        _ => None,
    }
}

/// [`start_kind`] for a k8s-openapi type.
async fn start_typed<K: Kind + kube::Resource<DynamicType = ()>>(
    client: &kube::Client,
    tx: &mpsc::Sender<Change>,
    out: &mut (impl Write + Send),
    recorded: &mut Recorded,
    optional: bool,
) -> Result<Option<tokio::task::JoinHandle<()>>, RecordError> {
    let api: Api<K> = Api::all(client.clone());
    start_kind(api, Names::typed::<K>(), tx, out, recorded, optional).await
}

/// Lists a kind, opens its watch, writes its objects at time 0, and starts the task
/// that follows the watch; an `optional` kind the server does not serve or let us list
/// or watch (404, 403) is left out with a warning.
async fn start_kind<K: Kind>(
    api: Api<K>,
    names: Names,
    tx: &mpsc::Sender<Change>,
    out: &mut (impl Write + Send),
    recorded: &mut Recorded,
    optional: bool,
) -> Result<Option<tokio::task::JoinHandle<()>>, RecordError> {
    let (items, version) = match list_pages(&api, 500).await {
        Ok(listed) => listed,
        Err(e) => match refused(&e) {
            Some(status) if optional => {
                recorded.warnings.push(names.left_out("list", status));
                return Ok(None);
            }
            _ => return Err(names.error("list", &e)),
        },
    };
    // Opened before anything is written, so a kind that may be listed but not watched
    // is left out whole.
    let first = match open_watch(&api, &version).await {
        Ok(stream) => Some(stream),
        Err(e) => match refused(&e) {
            Some(status) if optional => {
                recorded.warnings.push(names.left_out("watch", status));
                return Ok(None);
            }
            // Other failures are retried as a watch that ends is.
            _ => None,
        },
    };

    let mut known = HashMap::new();
    for object in &items {
        writeln!(out, "{{\"time\":0,\"apply\":{}}}", names.value_of(object))?;
        recorded.at_start += 1;
        known.insert(
            key_of(object),
            object.meta().resource_version.clone().unwrap_or_default(),
        );
    }
    let follower = Follower {
        api,
        names,
        version,
        known,
        tx: tx.clone(),
    };
    Ok(Some(tokio::spawn(follower.run(first))))
}

/// A kind's watch after the start: `known` is what the trace holds (key →
/// resourceVersion), to tell after a relist what changed.
struct Follower<K: Kind> {
    api: Api<K>,
    names: Names,
    version: String,
    known: HashMap<String, String>,
    tx: mpsc::Sender<Change>,
}

impl<K: Kind> Follower<K> {
    /// Watches from `version` (on `first`, when the watch is open already), sending
    /// every change, until the recorder stops listening.
    async fn run(
        mut self,
        mut first: Option<BoxStream<'static, Result<WatchEvent<K>, kube::Error>>>,
    ) {
        let mut failures = 0u32;
        loop {
            let stream = match first.take() {
                Some(s) => s,
                None => match open_watch(&self.api, &self.version).await {
                    Ok(s) => s,
                    Err(e) => {
                        failures += 1;
                        if failures > 10 {
                            let _ = self
                                .tx
                                .send(Change::Failed(self.names.error("watch", &e)))
                                .await;
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
                        continue;
                    }
                },
            };
            let mut stream = std::pin::pin!(stream.into_stream());
            let mut gone = false;
            while let Ok(Some(event)) = stream.try_next().await {
                failures = 0;
                let change = match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        let rv = o.meta().resource_version.clone().unwrap_or_default();
                        self.version.clone_from(&rv);
                        self.known.insert(key_of(&o), rv);
                        Change::Apply(self.names.value_of(&o))
                    }
                    WatchEvent::Deleted(o) => {
                        self.version = o.meta().resource_version.clone().unwrap_or_default();
                        self.known.remove(&key_of(&o));
                        self.names.delete(
                            o.meta().namespace.clone(),
                            o.meta().name.clone().unwrap_or_default(),
                        )
                    }
                    WatchEvent::Bookmark(b) => {
                        self.version = b.metadata.resource_version;
                        continue;
                    }
                    WatchEvent::Error(e) => {
                        gone = e.code == 410;
                        break;
                    }
                };
                if self.tx.send(change).await.is_err() {
                    return;
                }
            }
            if gone && self.relist().await.is_err() {
                return;
            }
        }
    }

    /// After 410 Gone: lists again and sends what changed meanwhile. Err when the
    /// recorder stopped listening; a failed list is left to the next watch.
    async fn relist(&mut self) -> Result<(), ()> {
        let Ok((items, listed)) = list_pages(&self.api, 500).await else {
            return Ok(());
        };
        let mut seen = HashMap::new();
        for o in &items {
            let rv = o.meta().resource_version.clone().unwrap_or_default();
            let key = key_of(o);
            if self.known.get(&key) != Some(&rv) {
                self.send(Change::Apply(self.names.value_of(o))).await?;
            }
            seen.insert(key, rv);
        }
        let missing: Vec<String> = self
            .known
            .keys()
            .filter(|k| !seen.contains_key(*k))
            .cloned()
            .collect();
        for key in missing {
            let (namespace, name) = key.split_once('/').unwrap_or(("", &key));
            let namespace = (!namespace.is_empty()).then(|| namespace.to_string());
            let change = self.names.delete(namespace, name.to_string());
            self.send(change).await?;
        }
        self.known = seen;
        self.version = listed;
        Ok(())
    }

    async fn send(&self, change: Change) -> Result<(), ()> {
        self.tx.send(change).await.map_err(|_| ())
    }
}

/// Why [`record_cluster`] failed: reaching the cluster, the trace file, or recording.
#[derive(Debug, thiserror::Error)]
pub enum RecordClusterError {
    /// The cluster could not be reached (kubeconfig, context, client).
    #[error("{0}")]
    Cluster(#[from] crate::cluster_dump::ClusterError),
    /// The trace file could not be created.
    #[error("{path}: cannot create: {source}")]
    Create {
        /// The file.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Recording stopped short; what was written up to then is a complete trace.
    #[error("{cluster}: {source}")]
    Record {
        /// The cluster as [`crate::cluster_dump::LiveCluster`] displays it.
        cluster: String,
        /// What failed.
        source: RecordError,
    },
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// `kubesched record`: connects as `options` say and records into the file `path` until
/// SIGINT (Ctrl-C) or `duration`, on a runtime of its own (not to be called from inside
/// one). Returns the cluster's name and what was written.
pub fn record_cluster(
    options: &crate::cluster_dump::ClusterOptions,
    path: &str,
    duration: Option<Duration>,
) -> Result<(String, Recorded), RecordClusterError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(RecordClusterError::Runtime)?;
    runtime.block_on(async {
        let cluster = crate::cluster_dump::LiveCluster::connect(options).await?;
        let file = std::fs::File::create(path).map_err(|source| RecordClusterError::Create {
            path: path.to_string(),
            source,
        })?;
        let mut out = std::io::BufWriter::new(file);
        let name = cluster.to_string();
        let description = format!("recorded from {name}");
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let recorded = record(cluster.client(), &mut out, &description, duration, stop)
            .await
            .map_err(|source| RecordClusterError::Record {
                cluster: name.clone(),
                source,
            })?;
        Ok((name, recorded))
    })
}
