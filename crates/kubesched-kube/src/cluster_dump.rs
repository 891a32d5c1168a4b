//! Reading a live cluster for the simulator: `kubesched simulate --from-cluster` (and
//! `capacity` and `rollout`).
//!
//! [`dump`] lists, with a [`kube::Client`], every kind the simulator's scenario loader
//! reads — Nodes, Namespaces, Pods, Services, ReplicationControllers, ReplicaSets,
//! StatefulSets and PodDisruptionBudgets; the storage kinds the volume plugins read
//! (PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers,
//! CSIStorageCapacities, VolumeAttachments); and the `resource.k8s.io/v1` kinds of
//! DynamicResources (DeviceClasses, ResourceSlices, ResourceClaims,
//! ResourceClaimTemplates) — the [`KINDS`], and returns them as one `kind: List` JSON
//! document, each item with its `kind` and `apiVersion` set (list responses leave them
//! out). That is the document `kubectl get nodes,namespaces,pods,... -A -o json` prints,
//! so the loader reads it as it reads such a dump and the results are the same. Nodes
//! keep the order the API server returns them in: that is the node order of the
//! simulation.
//!
//! The storage and DRA kinds are [`OPTIONAL_KINDS`]: a cluster may not serve them
//! (`resource.k8s.io/v1` is off before Kubernetes v1.34 or when DRA is disabled), and a
//! read-only role may not be allowed to list them. A list of one of them answered 404
//! or 403 leaves that kind out with one warning naming it ([`ClusterDump::warnings`]);
//! any other failure, and any failure of the other kinds, fails the dump.
//!
//! It only ever lists: nothing is created, changed or deleted, so it is safe against a
//! production cluster with a read-only role. Lists are paged (`limit` 500 and
//! `continue`, as kubectl pages them). Objects are decoded into the k8s-openapi types
//! the runtime uses, so a field newer than kubesched's Kubernetes API version is dropped
//! (as `kubesched run` drops it) instead of failing the strict loader.
//!
//! [`LiveCluster::connect`] builds the client from a kubeconfig (a file and a context, or
//! `$KUBECONFIG` / `~/.kube/config`, or the in-cluster service account), with a short
//! connect timeout so an unreachable cluster fails fast, and names the cluster for
//! messages: `cluster https://10.0.0.1:6443 (context prod)`. [`connect_and_dump`] does
//! both on a runtime of its own for synchronous callers such as the CLI. Every error
//! displays as one line naming the kubeconfig, the context or the server.
//!
//! ```no_run
//! use kubesched_kube::cluster_dump::{ClusterOptions, LiveCluster};
//!
//! # async fn demo() -> Result<(), kubesched_kube::cluster_dump::ClusterError> {
//! let options = ClusterOptions {
//!     context: Some("prod".into()),
//!     ..ClusterOptions::default()
//! };
//! let cluster = LiveCluster::connect(&options).await?;
//! let dump = cluster.dump().await?;
//! println!("{cluster}: {}", dump.summary());
//! // `dump.text` is a `kind: List` for `kubesched_sim::scenario::load`.
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The kinds [`dump`] lists, in the order their objects appear in the dump.
pub const KINDS: [&str; 19] = [
    "Node",
    "Namespace",
    "Pod",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
];

/// The [`KINDS`] a cluster may not serve or may not let the reader list: left out
/// with a warning when their list is answered 404 or 403.
pub const OPTIONAL_KINDS: [&str; 11] = [
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
];

/// How long connecting to the API server may take before the cluster counts as
/// unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one list response may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Objects per list request (kubectl's `--chunk-size` default).
const PAGE_SIZE: u32 = 500;

/// The objects of a cluster, as one `kind: List` document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterDump {
    /// The `kind: List` JSON document: every object of the [`KINDS`], in that order of
    /// kinds and, within a kind, in the API server's order.
    pub text: String,
    /// How many objects of each of the [`KINDS`] were read, in that order (0 for a
    /// kind left out).
    pub counts: Vec<(&'static str, usize)>,
    /// One line for each of the [`OPTIONAL_KINDS`] that the server does not serve or
    /// does not let the reader list, naming the kind: it is left out of the dump.
    pub warnings: Vec<String>,
}

impl ClusterDump {
    /// The counts in words, `3 Node(s), 2 Namespace(s), 5 Pod(s), ...`, leaving out
    /// kinds with no object.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .counts
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(kind, n)| format!("{n} {kind}(s)"))
            .collect();
        if parts.is_empty() {
            "no objects".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// Why [`dump`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// A list request failed: the server is unreachable, refused the credentials, or
    /// does not let them list this resource.
    #[error("cannot list {resource}: {}", kube_error_line(source))]
    List {
        /// The resource, e.g. `pods` or `poddisruptionbudgets`.
        resource: String,
        /// The client's error.
        source: kube::Error,
    },
    /// An object could not be written as JSON.
    #[error("cannot encode a {kind} as JSON: {source}")]
    Encode {
        /// The kind of the object.
        kind: String,
        /// The encoder's error.
        source: serde_json::Error,
    },
}

/// Lists every object of the [`KINDS`] through `client` and returns them as one
/// `kind: List` document (see the module doc). Only list requests are made.
pub async fn dump(client: &kube::Client) -> Result<ClusterDump, DumpError> {
    dump_paged(client, PAGE_SIZE).await
}

async fn dump_paged(client: &kube::Client, page_size: u32) -> Result<ClusterDump, DumpError> {
    // Nodes first, alone: an unreachable cluster or refused credentials then fail on
    // one request, the same one every time.
    let nodes = list_all::<Node>(client, page_size).await?;
    let c = client;
    let p = page_size;
    let others: Vec<BoxFuture<'_, Result<Listed, DumpError>>> = vec![
        required::<Namespace>(c, p),
        required::<Pod>(c, p),
        required::<Service>(c, p),
        required::<ReplicationController>(c, p),
        required::<ReplicaSet>(c, p),
        required::<StatefulSet>(c, p),
        required::<PodDisruptionBudget>(c, p),
        optional::<PersistentVolume>(c, p),
        optional::<PersistentVolumeClaim>(c, p),
        optional::<StorageClass>(c, p),
        optional::<CSINode>(c, p),
        optional::<CSIDriver>(c, p),
        optional::<CSIStorageCapacity>(c, p),
        optional::<VolumeAttachment>(c, p),
        optional::<DeviceClass>(c, p),
        optional::<ResourceSlice>(c, p),
        optional::<ResourceClaim>(c, p),
        optional::<ResourceClaimTemplate>(c, p),
    ];
    let others = futures::future::try_join_all(others).await?;
    let mut counts = Vec::with_capacity(KINDS.len());
    let mut warnings = Vec::new();
    let mut items: Vec<Value> = Vec::new();
    counts.push((KINDS[0], nodes.len()));
    items.extend(nodes);
    for (kind, listed) in KINDS[1..].iter().zip(others) {
        match listed {
            Listed::Items(list) => {
                counts.push((*kind, list.len()));
                items.extend(list);
            }
            Listed::LeftOut(warning) => {
                counts.push((*kind, 0));
                warnings.push(warning);
            }
        }
    }
    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": items,
    });
    Ok(ClusterDump {
        text: list.to_string(),
        counts,
        warnings,
    })
}

/// One kind's objects, or the warning for an optional kind left out.
enum Listed {
    Items(Vec<Value>),
    LeftOut(String),
}

/// Lists a kind whose failure fails the dump.
fn required<K>(client: &kube::Client, page_size: u32) -> BoxFuture<'_, Result<Listed, DumpError>>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
    K: Send + 'static,
{
    Box::pin(async move { list_all::<K>(client, page_size).await.map(Listed::Items) })
}

/// Lists one of the [`OPTIONAL_KINDS`]: a 404 (not served) or 403 (not allowed) leaves
/// it out with a warning.
fn optional<K>(client: &kube::Client, page_size: u32) -> BoxFuture<'_, Result<Listed, DumpError>>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
    K: Send + 'static,
{
    Box::pin(async move {
        match list_all::<K>(client, page_size).await {
            Ok(items) => Ok(Listed::Items(items)),
            Err(DumpError::List {
                resource,
                source: kube::Error::Api(status),
            }) if status.code == 404 || status.code == 403 => {
                let kind = K::kind(&());
                let api_version = K::api_version(&());
                let why = if status.code == 404 {
                    format!("the server does not serve {api_version} {resource}")
                } else {
                    format!(
                        "not allowed to list {resource} ({api_version}): {}",
                        one_line(&status.message)
                    )
                };
                Ok(Listed::LeftOut(format!(
                    "{kind} objects left out: {why}; pods that need them are simulated as if there were none"
                )))
            }
            Err(e) => Err(e),
        }
    })
}

/// Every object of kind `K` in all namespaces, page by page, each as JSON with its
/// `apiVersion` and `kind`.
async fn list_all<K>(client: &kube::Client, page_size: u32) -> Result<Vec<Value>, DumpError>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let mut params = ListParams::default().limit(page_size);
    let mut items = Vec::new();
    loop {
        let page = api.list(&params).await.map_err(|source| DumpError::List {
            resource: K::plural(&()).into_owned(),
            source,
        })?;
        for object in &page.items {
            let mut value = serde_json::to_value(object).map_err(|source| DumpError::Encode {
                kind: K::kind(&()).into_owned(),
                source,
            })?;
            if let Value::Object(fields) = &mut value {
                fields.insert("apiVersion".into(), json!(K::api_version(&())));
                fields.insert("kind".into(), json!(K::kind(&())));
            }
            items.push(value);
        }
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(items),
        }
    }
}

/// Where to find the cluster, as `--kubeconfig` and `--context` give it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterOptions {
    /// A kubeconfig file. Without it, `$KUBECONFIG` (a list of files, merged) or
    /// `~/.kube/config` is read and, when that fails and no context is asked for, the
    /// in-cluster service account is used (as `kube::Config::infer` does).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; its `current-context` without it.
    pub context: Option<String>,
}

/// Why a live cluster could not be read. Every variant displays as one line naming the
/// kubeconfig, the context or the server.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The kubeconfig cannot be read, does not parse, or its entries are incomplete.
    #[error("kubeconfig {kubeconfig}: {message}")]
    Kubeconfig {
        /// The file (or `$KUBECONFIG=...`, `~/.kube/config`).
        kubeconfig: String,
        /// What is wrong, in one line.
        message: String,
    },
    /// The asked context is not in the kubeconfig.
    #[error("kubeconfig {kubeconfig}: no context {context:?} (its contexts: {available})")]
    UnknownContext {
        /// The kubeconfig.
        kubeconfig: String,
        /// The context asked for.
        context: String,
        /// The contexts it has, comma-separated (`none` when it has none).
        available: String,
    },
    /// Neither a kubeconfig nor the in-cluster service account is there.
    #[error(
        "no cluster to read: kubeconfig {kubeconfig}: {message}; and not in a cluster: {in_cluster}"
    )]
    NoCluster {
        /// The kubeconfig looked for.
        kubeconfig: String,
        /// Why it could not be used.
        message: String,
        /// Why the in-cluster configuration could not be used.
        in_cluster: String,
    },
    /// The client could not be built (e.g. a bad certificate in the kubeconfig).
    #[error("cluster {server}: cannot make a client: {message}")]
    Client {
        /// The server URL.
        server: String,
        /// The client's error, in one line.
        message: String,
    },
    /// Listing failed: the cluster is unreachable, or refused the request.
    #[error("{cluster}: {source}")]
    Dump {
        /// The cluster as [`LiveCluster`] displays it.
        cluster: String,
        /// What failed.
        source: DumpError,
    },
    /// The async runtime for [`connect_and_dump`] could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// A client for a live cluster, and the words that name it.
#[derive(Clone)]
pub struct LiveCluster {
    client: kube::Client,
    server: String,
    context: Option<String>,
}

impl fmt::Debug for LiveCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveCluster")
            .field("server", &self.server)
            .field("context", &self.context)
            .finish()
    }
}

/// `cluster URL (context NAME)`, or `cluster URL (in-cluster service account)`.
impl fmt::Display for LiveCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.context {
            Some(context) => write!(f, "cluster {} (context {context})", self.server),
            None => write!(f, "cluster {} (in-cluster service account)", self.server),
        }
    }
}

impl LiveCluster {
    /// Builds the client from `options` (see [`ClusterOptions`]), with
    /// [`CONNECT_TIMEOUT`] and [`READ_TIMEOUT`]. Nothing is sent to the server yet.
    pub async fn connect(options: &ClusterOptions) -> Result<LiveCluster, ClusterError> {
        let (config, context) = match &options.kubeconfig {
            Some(path) => {
                let label = path.display().to_string();
                let kubeconfig =
                    Kubeconfig::read_from(path).map_err(|e| kubeconfig_error(&label, &e))?;
                from_kubeconfig(kubeconfig, &label, options.context.as_deref()).await?
            }
            None => {
                let label = default_kubeconfig_label();
                let from_file = match Kubeconfig::read() {
                    Ok(kubeconfig) => {
                        from_kubeconfig(kubeconfig, &label, options.context.as_deref()).await
                    }
                    Err(e) => Err(kubeconfig_error(&label, &e)),
                };
                match from_file {
                    Ok(found) => found,
                    Err(e) if options.context.is_some() => return Err(e),
                    Err(e) => match kube::Config::incluster() {
                        Ok(config) => (config, None),
                        Err(in_cluster) => {
                            let message = match e {
                                ClusterError::Kubeconfig { message, .. } => message,
                                other => other.to_string(),
                            };
                            return Err(ClusterError::NoCluster {
                                kubeconfig: label,
                                message,
                                in_cluster: one_line(&in_cluster.to_string()),
                            });
                        }
                    },
                }
            }
        };
        Self::from_config(config, context)
    }

    /// A cluster from a client configuration already made; `context` names it in
    /// messages (`None` reads as the in-cluster service account). The timeouts are
    /// shortened to [`CONNECT_TIMEOUT`] and [`READ_TIMEOUT`] where they are longer.
    pub fn from_config(
        mut config: kube::Config,
        context: Option<String>,
    ) -> Result<LiveCluster, ClusterError> {
        let server = server_name(&config.cluster_url);
        config.connect_timeout = Some(
            config
                .connect_timeout
                .map_or(CONNECT_TIMEOUT, |t| t.min(CONNECT_TIMEOUT)),
        );
        config.read_timeout = Some(
            config
                .read_timeout
                .map_or(READ_TIMEOUT, |t| t.min(READ_TIMEOUT)),
        );
        let client = kube::Client::try_from(config).map_err(|e| ClusterError::Client {
            server: server.clone(),
            message: kube_error_line(&e),
        })?;
        Ok(LiveCluster {
            client,
            server,
            context,
        })
    }

    /// The client.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The server URL, e.g. `https://10.0.0.1:6443`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The kubeconfig context used; `None` for the in-cluster service account.
    pub fn context(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// Lists the cluster's objects (see [`dump`]); errors name the cluster.
    pub async fn dump(&self) -> Result<ClusterDump, ClusterError> {
        dump(&self.client)
            .await
            .map_err(|source| ClusterError::Dump {
                cluster: self.to_string(),
                source,
            })
    }
}

/// Connects and dumps on a runtime of its own, for synchronous callers: the cluster's
/// name (as [`LiveCluster`] displays it) and its objects. Must not be called from
/// inside an async runtime.
pub fn connect_and_dump(options: &ClusterOptions) -> Result<(String, ClusterDump), ClusterError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ClusterError::Runtime)?;
    runtime.block_on(async {
        let cluster = LiveCluster::connect(options).await?;
        let dump = cluster.dump().await?;
        Ok((cluster.to_string(), dump))
    })
}

/// The client configuration of `context` (or the current context) of `kubeconfig`,
/// and the context's name.
async fn from_kubeconfig(
    kubeconfig: Kubeconfig,
    label: &str,
    context: Option<&str>,
) -> Result<(kube::Config, Option<String>), ClusterError> {
    let names: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let available = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    let name = match context.or(kubeconfig.current_context.as_deref()) {
        Some(name) if names.contains(&name) => name.to_string(),
        Some(name) if context.is_some() => {
            return Err(ClusterError::UnknownContext {
                kubeconfig: label.to_string(),
                context: name.to_string(),
                available,
            });
        }
        Some(name) => {
            return Err(ClusterError::Kubeconfig {
                kubeconfig: label.to_string(),
                message: format!(
                    "current-context {name:?} is not one of its contexts ({available}); give --context"
                ),
            });
        }
        None => {
            return Err(ClusterError::Kubeconfig {
                kubeconfig: label.to_string(),
                message: format!("no current-context; give --context (its contexts: {available})"),
            });
        }
    };
    let options = KubeConfigOptions {
        context: Some(name.clone()),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| match e {
            KubeconfigError::LoadClusterOfContext(cluster) => ClusterError::Kubeconfig {
                kubeconfig: label.to_string(),
                message: format!(
                    "context {name:?} names cluster {cluster:?}, which is not in the kubeconfig"
                ),
            },
            KubeconfigError::MissingClusterUrl => ClusterError::Kubeconfig {
                kubeconfig: label.to_string(),
                message: format!("the cluster of context {name:?} has no server"),
            },
            e => ClusterError::Kubeconfig {
                kubeconfig: label.to_string(),
                message: format!("context {name:?}: {}", one_line(&e.to_string())),
            },
        })?;
    Ok((config, Some(name)))
}

/// One line for a kubeconfig that cannot be read or parsed.
fn kubeconfig_error(label: &str, error: &KubeconfigError) -> ClusterError {
    let message = match error {
        KubeconfigError::ReadConfig(io, _) => format!("cannot read: {io}"),
        KubeconfigError::FindPath => "no home directory to find ~/.kube/config in".to_string(),
        // The YAML parser's first line says what and where; a drawn snippet follows.
        KubeconfigError::Parse(_) => one_line(error.to_string().lines().next().unwrap_or("")),
        e => one_line(&e.to_string()),
    };
    ClusterError::Kubeconfig {
        kubeconfig: label.to_string(),
        message,
    }
}

/// How the default kubeconfig is named in messages.
fn default_kubeconfig_label() -> String {
    match std::env::var("KUBECONFIG") {
        Ok(value) if !value.is_empty() => format!("$KUBECONFIG ({value})"),
        _ => "~/.kube/config".to_string(),
    }
}

/// The server URL without the `/` that an empty path prints as.
fn server_name(url: &hyper::Uri) -> String {
    let text = url.to_string();
    match text.strip_suffix('/') {
        Some(trimmed) if url.path() == "/" => trimmed.to_string(),
        _ => text,
    }
}

/// A client error in one line: the API server's own message for a refused request,
/// else the error and its causes (`error trying to connect: tcp connect error:
/// Connection refused (os error 111)`).
fn kube_error_line(error: &kube::Error) -> String {
    if let kube::Error::Api(status) = error {
        let text = if status.reason.is_empty() {
            format!("{} ({})", status.message, status.code)
        } else {
            format!("{} ({} {})", status.message, status.code, status.reason)
        };
        return one_line(&text);
    }
    let mut text = String::new();
    let mut next: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = next {
        let own = e.to_string();
        // kube-rs prefixes its variants ("HyperError: ...") and repeats the cause.
        let own = own
            .split_once(": ")
            .filter(|(head, _)| head.ends_with("Error") && !head.contains(' '))
            .map_or(own.as_str(), |(_, tail)| tail)
            .to_string();
        if !text.contains(&own) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&own);
        }
        next = e.source();
    }
    one_line(&text)
}

/// `text` with every run of whitespace (newlines included) made one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use kubesched_sim::scenario::{self, Source};

    use super::*;
    use crate::testing::FakeApiServer;

    fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(name.into());
        ns.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        ns
    }

    fn pdb(namespace: &str, name: &str, app: &str) -> PodDisruptionBudget {
        let mut pdb = PodDisruptionBudget::default();
        pdb.metadata.namespace = Some(namespace.into());
        pdb.metadata.name = Some(name.into());
        pdb.spec = Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
                ..Default::default()
            }),
            ..Default::default()
        });
        pdb
    }

    async fn server() -> FakeApiServer {
        let server = FakeApiServer::start().await;
        for name in ["n3", "n1", "n2"] {
            server.add_node(FakeApiServer::node(name, "4", "8Gi"));
        }
        let mut bound = FakeApiServer::pod("bound", "default-scheduler", "1");
        if let Some(spec) = bound.spec.as_mut() {
            spec.node_name = Some("n1".into());
        }
        server.add_pod(bound);
        server.add_pod(FakeApiServer::pod("pending", "default-scheduler", "500m"));
        server.apply_object(&namespace("default", &[("team", "web")]));
        server.apply_object(&pdb("default", "web", "web"));
        server
    }

    fn load(dump: &ClusterDump) -> scenario::Scenario {
        scenario::load(&[Source {
            name: "cluster".into(),
            text: dump.text.clone(),
        }])
        .expect("the dump loads")
    }

    #[tokio::test]
    async fn the_dump_is_a_list_the_loader_reads_as_the_objects() {
        let server = server().await;
        let dump = dump(&server.client()).await.expect("dump");
        assert_eq!(
            dump.counts,
            vec![
                ("Node", 3),
                ("Namespace", 1),
                ("Pod", 2),
                ("Service", 0),
                ("ReplicationController", 0),
                ("ReplicaSet", 0),
                ("StatefulSet", 0),
                ("PodDisruptionBudget", 1),
                ("PersistentVolume", 0),
                ("PersistentVolumeClaim", 0),
                ("StorageClass", 0),
                ("CSINode", 0),
                ("CSIDriver", 0),
                ("CSIStorageCapacity", 0),
                ("VolumeAttachment", 0),
                ("DeviceClass", 0),
                ("ResourceSlice", 0),
                ("ResourceClaim", 0),
                ("ResourceClaimTemplate", 0),
            ]
        );
        assert!(dump.warnings.is_empty(), "{:?}", dump.warnings);
        assert_eq!(
            dump.summary(),
            "3 Node(s), 1 Namespace(s), 2 Pod(s), 1 PodDisruptionBudget(s)"
        );
        let list: Value = serde_json::from_str(&dump.text).expect("JSON");
        assert_eq!(list["kind"], "List");
        let items = list["items"].as_array().expect("items");
        let types: Vec<(&str, &str)> = items
            .iter()
            .map(|i| {
                (
                    i["apiVersion"].as_str().unwrap_or(""),
                    i["kind"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            types,
            [
                ("v1", "Node"),
                ("v1", "Node"),
                ("v1", "Node"),
                ("v1", "Namespace"),
                ("v1", "Pod"),
                ("v1", "Pod"),
                ("policy/v1", "PodDisruptionBudget"),
            ]
        );

        // Loaded, the dump is the server's objects: the nodes in the server's order
        // (by name), the pods as the server holds them, the others kept for plugins.
        let loaded = load(&dump);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let nodes: Vec<&str> = loaded
            .nodes
            .iter()
            .filter_map(|n| n.metadata.name.as_deref())
            .collect();
        assert_eq!(nodes, ["n1", "n2", "n3"]);
        for pod in &loaded.pods {
            let key = format!(
                "default/{}",
                pod.metadata.name.as_deref().unwrap_or_default()
            );
            assert_eq!(Some(pod.as_ref()), server.get_pod(&key).as_ref(), "{key}");
        }
        assert_eq!(loaded.pods.len(), 2);
        let others: Vec<(&str, &str, Option<&str>)> = loaded
            .objects
            .iter()
            .map(|o| (o.kind.as_str(), o.name.as_str(), o.namespace.as_deref()))
            .collect();
        assert_eq!(
            others,
            [
                ("Namespace", "default", None),
                ("PodDisruptionBudget", "web", Some("default")),
            ]
        );
        assert_eq!(loaded.objects[0].value["metadata"]["labels"]["team"], "web");
    }

    #[tokio::test]
    async fn lists_are_paged_and_only_read() {
        let server = server().await;
        let paged = dump_paged(&server.client(), 2).await.expect("dump");
        let whole = dump(&server.client()).await.expect("dump");
        assert_eq!(paged, whole);
        let requests = server.requests();
        assert!(
            requests.iter().all(|(method, _)| method == "GET"),
            "{requests:?}"
        );
        // 3 nodes in pages of 2: two requests, the second continuing after the first.
        let node_requests: Vec<&str> = requests
            .iter()
            .filter(|(_, target)| target.starts_with("/api/v1/nodes?"))
            .map(|(_, target)| target.as_str())
            .collect();
        assert_eq!(node_requests.len(), 3, "{node_requests:?}");
        assert!(
            node_requests.iter().any(|t| t.contains("continue=2")),
            "{node_requests:?}"
        );
        assert!(server.bindings().is_empty() && server.events().is_empty());
    }

    #[tokio::test]
    async fn an_unreachable_server_is_named() {
        // A port that was free a moment ago: nothing listens there now.
        let addr = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            listener.local_addr().expect("address")
        };
        let url: hyper::Uri = format!("http://{addr}").parse().expect("url");
        let cluster =
            LiveCluster::from_config(kube::Config::new(url), Some("gone".into())).expect("client");
        assert_eq!(
            cluster.to_string(),
            format!("cluster http://{addr} (context gone)")
        );
        let error = cluster.dump().await.expect_err("unreachable").to_string();
        assert!(
            error.starts_with(&format!(
                "cluster http://{addr} (context gone): cannot list nodes: "
            )),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }

    #[tokio::test]
    async fn kubeconfig_errors_name_the_file_and_the_context() {
        let dir = std::env::temp_dir().join(format!("kubesched-dump-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let missing = dir.join("missing.yaml");
        let error = LiveCluster::connect(&ClusterOptions {
            kubeconfig: Some(missing.clone()),
            context: None,
        })
        .await
        .expect_err("missing")
        .to_string();
        assert!(
            error.starts_with(&format!("kubeconfig {}: cannot read: ", missing.display())),
            "{error}"
        );

        let file = dir.join("config.yaml");
        std::fs::write(
            &file,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:1'}\ncontexts:\n- name: a\n  context: {cluster: c}\n- name: b\n  context: {cluster: other}\n",
        )
        .expect("write");
        let connect = |context: Option<&str>| {
            let options = ClusterOptions {
                kubeconfig: Some(file.clone()),
                context: context.map(String::from),
            };
            async move { LiveCluster::connect(&options).await }
        };
        let label = file.display().to_string();
        assert_eq!(
            connect(Some("nope"))
                .await
                .expect_err("unknown")
                .to_string(),
            format!("kubeconfig {label}: no context \"nope\" (its contexts: a, b)")
        );
        assert_eq!(
            connect(None).await.expect_err("no current").to_string(),
            format!("kubeconfig {label}: no current-context; give --context (its contexts: a, b)")
        );
        assert_eq!(
            connect(Some("b"))
                .await
                .expect_err("no cluster")
                .to_string(),
            format!(
                "kubeconfig {label}: context \"b\" names cluster \"other\", which is not in the kubeconfig"
            )
        );
        let a = connect(Some("a")).await.expect("context a");
        assert_eq!(a.to_string(), "cluster http://127.0.0.1:1 (context a)");
        assert_eq!((a.server(), a.context()), ("http://127.0.0.1:1", Some("a")));
    }

    fn object<T: DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).expect("a valid object")
    }

    /// Two nodes in two zones; a WaitForFirstConsumer local class with one Available
    /// 10Gi PV on n2 and a pending StatefulSet-like pod whose claim can only bind
    /// there; a GPU published by n1's ResourceSlice and a pending pod with a claim for
    /// it; and one object of each other storage kind.
    async fn storage_server() -> FakeApiServer {
        let server = FakeApiServer::start().await;
        for (name, zone) in [("n1", "zone-a"), ("n2", "zone-b")] {
            let mut node = FakeApiServer::node(name, "4", "8Gi");
            if let Some(labels) = node.metadata.labels.as_mut() {
                labels.insert("topology.kubernetes.io/zone".into(), zone.into());
            }
            server.add_node(node);
        }
        server.apply_object(&object::<StorageClass>(json!({
            "metadata": {"name": "local-ssd"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer"
        })));
        server.apply_object(&object::<PersistentVolume>(json!({
            "metadata": {"name": "local-pv-n2"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local-ssd",
                "local": {"path": "/mnt/disks/ssd0"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}
                ]}]}}
            },
            "status": {"phase": "Available"}
        })));
        server.apply_object(&object::<PersistentVolumeClaim>(json!({
            "metadata": {"name": "data-db-0", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local-ssd",
                "resources": {"requests": {"storage": "10Gi"}}
            },
            "status": {"phase": "Pending"}
        })));
        server.apply_object(&object::<CSINode>(json!({
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1",
                "allocatable": {"count": 25}}]}
        })));
        server.apply_object(&object::<CSIDriver>(json!({
            "metadata": {"name": "ebs.csi.aws.com"},
            "spec": {"attachRequired": true}
        })));
        server.apply_object(&object::<CSIStorageCapacity>(json!({
            "metadata": {"name": "cap-a", "namespace": "kube-system"},
            "storageClassName": "local-ssd",
            "capacity": "100Gi",
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "zone-a"}}
        })));
        server.apply_object(&object::<VolumeAttachment>(json!({
            "metadata": {"name": "va-1"},
            "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n1",
                "source": {"persistentVolumeName": "other"}}
        })));
        server.apply_object(&object::<DeviceClass>(json!({
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}
        })));
        server.apply_object(&object::<ResourceSlice>(json!({
            "metadata": {"name": "n1-gpus"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}]}
        })));
        server.apply_object(&object::<ResourceClaim>(json!({
            "metadata": {"name": "train-gpu", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu",
                "exactly": {"deviceClassName": "gpu.example.com"}}]}}
        })));
        server.apply_object(&object::<ResourceClaimTemplate>(json!({
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
                "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
        })));
        server.add_pod(object(json!({
            "metadata": {"name": "db-0", "namespace": "default"},
            "spec": {
                "containers": [{"name": "db", "image": "postgres:16"}],
                "volumes": [{"name": "data",
                    "persistentVolumeClaim": {"claimName": "data-db-0"}}]
            }
        })));
        server.add_pod(object(json!({
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {
                "containers": [{"name": "t", "image": "trainer:1",
                    "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "train-gpu"}]
            }
        })));
        server
    }

    fn count(dump: &ClusterDump, kind: &str) -> usize {
        dump.counts
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(usize::MAX, |(_, n)| *n)
    }

    #[tokio::test]
    async fn storage_and_dra_objects_are_dumped_loaded_and_used() {
        let server = storage_server().await;
        let dump = dump_paged(&server.client(), 2).await.expect("dump");
        assert!(dump.warnings.is_empty(), "{:?}", dump.warnings);
        for kind in OPTIONAL_KINDS {
            assert_eq!(count(&dump, kind), 1, "{kind}: {:?}", dump.counts);
        }
        let requests = server.requests();
        assert!(
            requests.iter().all(|(method, _)| method == "GET"),
            "{requests:?}"
        );
        for path in [
            "/api/v1/persistentvolumes?",
            "/api/v1/persistentvolumeclaims?",
            "/apis/storage.k8s.io/v1/storageclasses?",
            "/apis/storage.k8s.io/v1/csistoragecapacities?",
            "/apis/resource.k8s.io/v1/resourceslices?",
            "/apis/resource.k8s.io/v1/resourceclaimtemplates?",
        ] {
            assert!(
                requests
                    .iter()
                    .any(|(_, t)| t.starts_with(path) && t.contains("limit=2")),
                "{path} not listed in pages: {requests:?}"
            );
        }

        let loaded = load(&dump);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(loaded.dra.device_classes.len(), 1);
        assert_eq!(loaded.dra.slices.len(), 1);
        assert_eq!(loaded.dra.claims.len(), 1);
        assert_eq!(loaded.dra.templates.len(), 1);
        assert!(!loaded.storage.is_empty());
        // The claims decide: db-0's PV is on n2 only, train's GPU on n1 only (n1 is
        // otherwise first in node order and as free as n2).
        let simulation =
            kubesched_sim::simulate(&loaded, &kubesched_sim::SimulationOptions::default())
                .expect("simulate");
        let placed: Vec<(String, kubesched_sim::PodOutcome)> = simulation
            .results
            .into_iter()
            .map(|r| (r.pod, r.outcome))
            .collect();
        assert_eq!(
            placed,
            [
                (
                    "default/db-0".to_string(),
                    kubesched_sim::PodOutcome::Scheduled("n2".into())
                ),
                (
                    "default/train".to_string(),
                    kubesched_sim::PodOutcome::Scheduled("n1".into())
                ),
            ]
        );
    }

    #[tokio::test]
    async fn a_kind_not_served_or_forbidden_is_left_out_with_a_warning() {
        let server = storage_server().await;
        server.refuse_list("resourceslices", 404);
        server.refuse_list("csinodes", 403);
        let dump = dump(&server.client()).await.expect("the dump goes on");
        assert_eq!(
            dump.warnings,
            [
                "CSINode objects left out: not allowed to list csinodes (storage.k8s.io/v1): csinodes.storage.k8s.io is forbidden: User \"system:serviceaccount:kube-system:reader\" cannot list resource \"csinodes\" in API group \"storage.k8s.io\" at the cluster scope; pods that need them are simulated as if there were none",
                "ResourceSlice objects left out: the server does not serve resource.k8s.io/v1 resourceslices; pods that need them are simulated as if there were none",
            ]
        );
        assert_eq!(
            (count(&dump, "CSINode"), count(&dump, "ResourceSlice")),
            (0, 0)
        );
        assert_eq!(count(&dump, "ResourceClaim"), 1);
        let loaded = load(&dump);
        assert!(loaded.dra.slices.is_empty());
        assert_eq!(loaded.dra.claims.len(), 1);
        // Without the slice there is no GPU: the pod with the claim stays pending.
        let simulation =
            kubesched_sim::simulate(&loaded, &kubesched_sim::SimulationOptions::default())
                .expect("simulate");
        let train = simulation
            .results
            .iter()
            .find(|r| r.pod == "default/train")
            .expect("train attempted");
        assert!(
            matches!(train.outcome, kubesched_sim::PodOutcome::Unschedulable(_)),
            "{:?}",
            train.outcome
        );
    }
}
