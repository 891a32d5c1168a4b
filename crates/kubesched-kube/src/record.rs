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
//! ReplicaSets, StatefulSets and PodDisruptionBudgets. Storage and `resource.k8s.io`
//! objects are not: a replay takes those from its scenario files. A watch that the
//! API server ends is started again from the last version seen; one that has fallen
//! too far behind (410 Gone) lists the kind again and writes what changed meanwhile.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, WatchEvent, WatchParams};

use crate::cluster_dump::{kube_error_line, list_pages, object_value};
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
    /// recorder list them (every kind but Nodes and Pods may be), one line each.
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
    writeln!(
        out,
        "{{\"kubeschedTrace\":1,\"description\":{}}}",
        json!(description)
    )?;
    out.flush()?;
    let start = Instant::now();
    let (tx, mut rx) = mpsc::channel::<Change>(1024);
    let mut recorded = Recorded::default();
    // Nodes and namespaces first, pods last: what pods refer to is there before them.
    let r = &mut recorded;
    let kinds = [
        start_kind::<Node>(client, &tx, out, r, false).await?,
        start_kind::<Namespace>(client, &tx, out, r, true).await?,
        start_kind::<Service>(client, &tx, out, r, true).await?,
        start_kind::<ReplicationController>(client, &tx, out, r, true).await?,
        start_kind::<ReplicaSet>(client, &tx, out, r, true).await?,
        start_kind::<StatefulSet>(client, &tx, out, r, true).await?,
        start_kind::<PodDisruptionBudget>(client, &tx, out, r, true).await?,
        start_kind::<Pod>(client, &tx, out, r, false).await?,
    ];
    out.flush()?;
    drop(tx);
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
                    Change::Delete { kind, namespace, name } => {
                        let mut r = json!({"kind": kind, "name": name});
                        if let Some(ns) = namespace {
                            r["namespace"] = json!(ns);
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

/// A kind that is recorded: listed, written at time 0, then watched.
trait Kind:
    kube::Resource<DynamicType = ()>
    + Clone
    + DeserializeOwned
    + Serialize
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Kind for K where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// The object as the trace holds it: with its `apiVersion` and `kind`, without
/// `managedFields`.
fn value_of<K: Kind>(object: &K) -> Value {
    let mut value = object_value(object).unwrap_or(Value::Null);
    if let Some(Value::Object(meta)) = value.get_mut("metadata") {
        meta.remove("managedFields");
    }
    value
}

fn key_of<K: Kind>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or(""),
        object.meta().name.as_deref().unwrap_or("")
    )
}

/// Every object of `K` with the list's resourceVersion; a failure as the recorder says it.
async fn list<K: Kind>(api: &Api<K>) -> Result<(Vec<K>, String), RecordError> {
    list_pages(api, 500).await.map_err(|e| list_error::<K>(&e))
}

fn list_error<K: Kind>(e: &kube::Error) -> RecordError {
    RecordError::Api {
        what: "list",
        resource: K::plural(&()).into_owned(),
        message: kube_error_line(e),
    }
}

/// Lists `K`, writes its objects at time 0, and starts the task that watches it; an
/// `optional` kind the server does not serve or let us list (404, 403) is left out
/// with a warning.
async fn start_kind<K: Kind>(
    client: &kube::Client,
    tx: &mpsc::Sender<Change>,
    out: &mut (impl Write + Send),
    recorded: &mut Recorded,
    optional: bool,
) -> Result<Option<tokio::task::JoinHandle<()>>, RecordError> {
    let api: Api<K> = Api::all(client.clone());
    let (items, version) = match list_pages(&api, 500).await {
        Ok(listed) => listed,
        Err(e)
            if optional && matches!(&e, kube::Error::Api(s) if s.code == 404 || s.code == 403) =>
        {
            recorded.warnings.push(format!(
                "{} left out: {}",
                K::plural(&()),
                kube_error_line(&e)
            ));
            return Ok(None);
        }
        Err(e) => return Err(list_error::<K>(&e)),
    };

    let mut known = HashMap::new();
    for object in &items {
        writeln!(out, "{{\"time\":0,\"apply\":{}}}", value_of(object))?;
        recorded.at_start += 1;
        known.insert(
            key_of(object),
            object.meta().resource_version.clone().unwrap_or_default(),
        );
    }
    Ok(Some(tokio::spawn(follow(api, version, known, tx.clone()))))
}

/// Watches `K` from `version`, sending every change; `known` is what the trace holds
/// (key → resourceVersion), to tell after a relist what changed.
async fn follow<K: Kind>(
    api: Api<K>,
    mut version: String,
    mut known: HashMap<String, String>,
    tx: mpsc::Sender<Change>,
) {
    let resource = K::plural(&()).into_owned();
    let mut failures = 0u32;
    loop {
        // Under the client's read timeout (cluster_dump::READ_TIMEOUT, 60 s): the server
        // ends the watch, and it starts again from the last version seen.
        let params = WatchParams::default().timeout(50);
        let stream = match api.watch(&params, &version).await {
            Ok(s) => s,
            Err(e) => {
                failures += 1;
                if failures > 10 {
                    let _ = tx
                        .send(Change::Failed(RecordError::Api {
                            what: "watch",
                            resource,
                            message: kube_error_line(&e),
                        }))
                        .await;
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream.into_stream());
        let mut gone = false;
        while let Ok(Some(event)) = stream.try_next().await {
            failures = 0;
            let change = match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    let rv = o.meta().resource_version.clone().unwrap_or_default();
                    version.clone_from(&rv);
                    known.insert(key_of(&o), rv);
                    Change::Apply(value_of(&o))
                }
                WatchEvent::Deleted(o) => {
                    version = o.meta().resource_version.clone().unwrap_or_default();
                    known.remove(&key_of(&o));
                    Change::Delete {
                        kind: K::kind(&()).into_owned(),
                        namespace: o.meta().namespace.clone(),
                        name: o.meta().name.clone().unwrap_or_default(),
                    }
                }
                WatchEvent::Bookmark(b) => {
                    version = b.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(e) => {
                    gone = e.code == 410;
                    break;
                }
            };
            if tx.send(change).await.is_err() {
                return;
            }
        }
        if gone {
            // Too far behind: list again, and write what changed meanwhile.
            let Ok((items, listed)) = list(&api).await else {
                continue;
            };
            let mut seen = HashMap::new();
            for o in &items {
                let rv = o.meta().resource_version.clone().unwrap_or_default();
                let key = key_of(o);
                if known.get(&key) != Some(&rv)
                    && tx.send(Change::Apply(value_of(o))).await.is_err()
                {
                    return;
                }
                seen.insert(key, rv);
            }
            for key in known.keys().filter(|k| !seen.contains_key(*k)) {
                let (namespace, name) = key.split_once('/').unwrap_or(("", key));
                let change = Change::Delete {
                    kind: K::kind(&()).into_owned(),
                    namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
                    name: name.to_string(),
                };
                if tx.send(change).await.is_err() {
                    return;
                }
            }
            known = seen;
            version = listed;
        }
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
