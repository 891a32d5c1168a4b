//! Reading a live cluster for the simulator: `kubesched simulate --from-cluster` (and
//! `capacity` and `rollout`).
//!
//! [`dump`] lists, with a [`kube::Client`], every kind the simulator's scenario loader
//! reads — Nodes, Namespaces, Pods, Services, ReplicationControllers, ReplicaSets,
//! StatefulSets and PodDisruptionBudgets; the storage kinds the volume plugins read
//! (PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers,
//! CSIStorageCapacities, VolumeAttachments); the `resource.k8s.io/v1` kinds of
//! DynamicResources (DeviceClasses, ResourceSlices, ResourceClaims,
//! ResourceClaimTemplates) — the [`KINDS`]; and the gang and quota objects, which have
//! no k8s-openapi type and are listed as [`DynamicObject`]s from the [`DYNAMIC_KINDS`]
//! table: `scheduling.k8s.io/v1alpha2` PodGroups and Workloads,
//! `scheduling.k8s.io/v1alpha1` Workloads, and scheduler-plugins'
//! `scheduling.x-k8s.io/v1alpha1` PodGroups and ElasticQuotas. It returns them as one
//! `kind: List` JSON document, each item with its `kind` and `apiVersion` set (list
//! responses leave them out). That is the document `kubectl get
//! nodes,namespaces,pods,... -A -o json` prints, so the loader reads it as it reads such
//! a dump and the results are the same. Nodes keep the order the API server returns
//! them in: that is the node order of the simulation.
//!
//! The storage, DRA, gang and quota kinds are optional ([`OPTIONAL_KINDS`] and every
//! one of the [`DYNAMIC_KINDS`]): a cluster may not serve them (`resource.k8s.io/v1` is
//! off before Kubernetes v1.34 or when DRA is disabled; the `scheduling.k8s.io` alpha
//! versions are served only with `--runtime-config`; the `scheduling.x-k8s.io` kinds
//! only where scheduler-plugins' CRDs are installed), and a read-only role may not be
//! allowed to list them. A list of one of them answered 404 or 403 (or the API group
//! absent) leaves that kind out with one warning naming it ([`ClusterDump::warnings`]);
//! any other failure, and any failure of the other kinds, fails the dump.
//!
//! It only ever lists: nothing is created, changed or deleted, so it is safe against a
//! production cluster with a read-only role. Lists are paged (`limit` 500 and
//! `continue`, as kubectl pages them). Objects are decoded into the k8s-openapi types
//! the runtime uses, so a field newer than kubesched's Kubernetes API version is dropped
//! (as `kubesched run` drops it) instead of failing the strict loader. The
//! [`DYNAMIC_KINDS`] are kept as the server returns them, with their `apiVersion` and
//! `kind`: the loader reads them as it reads them from a YAML file.
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
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::core::GroupVersionKind;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The kinds [`dump`] lists with k8s-openapi types, in the order their objects appear
/// in the dump; the [`DYNAMIC_KINDS`] follow them.
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
/// with a warning when their list is answered 404 or 403 (as every one of the
/// [`DYNAMIC_KINDS`] is).
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

/// A kind [`dump`] lists without a k8s-openapi type, as [`DynamicObject`]s: its
/// group, version, kind and resource (plural), and its name in
/// [`ClusterDump::counts`]: its `apiVersion` and kind, since two of them share a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamicKind {
    /// The API group, e.g. `scheduling.k8s.io`.
    pub group: &'static str,
    /// The version, e.g. `v1alpha2`.
    pub version: &'static str,
    /// The kind, e.g. `PodGroup`.
    pub kind: &'static str,
    /// The resource, e.g. `podgroups`.
    pub plural: &'static str,
    /// `apiVersion kind`, e.g. `scheduling.k8s.io/v1alpha2 PodGroup`: the kind's name in
    /// [`ClusterDump::counts`] and [`ClusterDump::summary`].
    pub name: &'static str,
}

impl DynamicKind {
    /// `group/version`, the objects' `apiVersion`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// The gang and quota kinds, all optional, in the order of their objects in the dump
/// (after those of the [`KINDS`]).
pub const DYNAMIC_KINDS: [DynamicKind; 5] = [
    DynamicKind {
        group: "scheduling.k8s.io",
        version: "v1alpha2",
        kind: "PodGroup",
        plural: "podgroups",
        name: "scheduling.k8s.io/v1alpha2 PodGroup",
    },
    DynamicKind {
        group: "scheduling.k8s.io",
        version: "v1alpha2",
        kind: "Workload",
        plural: "workloads",
        name: "scheduling.k8s.io/v1alpha2 Workload",
    },
    DynamicKind {
        group: "scheduling.k8s.io",
        version: "v1alpha1",
        kind: "Workload",
        plural: "workloads",
        name: "scheduling.k8s.io/v1alpha1 Workload",
    },
    DynamicKind {
        group: "scheduling.x-k8s.io",
        version: "v1alpha1",
        kind: "PodGroup",
        plural: "podgroups",
        name: "scheduling.x-k8s.io/v1alpha1 PodGroup",
    },
    DynamicKind {
        group: "scheduling.x-k8s.io",
        version: "v1alpha1",
        kind: "ElasticQuota",
        plural: "elasticquotas",
        name: "scheduling.x-k8s.io/v1alpha1 ElasticQuota",
    },
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
    /// The `kind: List` JSON document: every object of the [`KINDS`] and then of the
    /// [`DYNAMIC_KINDS`], in that order of kinds and, within a kind, in the API
    /// server's order.
    pub text: String,
    /// How many objects of each of the [`KINDS`] and [`DYNAMIC_KINDS`] (by
    /// [`DynamicKind::name`]) were read, in that order (0 for a kind left out).
    pub counts: Vec<(&'static str, usize)>,
    /// One line for each of the [`OPTIONAL_KINDS`] and [`DYNAMIC_KINDS`] that the server does not serve or
    /// does not let the reader list, naming the kind and its `apiVersion`: it is left
    /// out of the dump.
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
    let mut others: Vec<BoxFuture<'_, Result<Listed, DumpError>>> = vec![
        required::<Namespace>(c, p),
        // With spec.workloadRef (v1.35's gangs), which the loader reads.
        required::<crate::workload_ref::WorkloadRefPod>(c, p),
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
    others.extend(
        DYNAMIC_KINDS
            .iter()
            .map(|kind| optional_dynamic(c, kind, p)),
    );
    let others = futures::future::try_join_all(others).await?;
    let mut counts = Vec::with_capacity(KINDS.len() + DYNAMIC_KINDS.len());
    let mut warnings = Vec::new();
    let mut items: Vec<Value> = Vec::new();
    counts.push((KINDS[0], nodes.len()));
    items.extend(nodes);
    let names = KINDS[1..]
        .iter()
        .copied()
        .chain(DYNAMIC_KINDS.iter().map(|kind| kind.name));
    for (kind, listed) in names.zip(others) {
        match listed {
            Listed::Items(list) => {
                counts.push((kind, list.len()));
                items.extend(list);
            }
            Listed::LeftOut(warning) => {
                counts.push((kind, 0));
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
            }) if status.code == 404 || status.code == 403 => Ok(Listed::LeftOut(left_out(
                &K::kind(&()),
                &K::api_version(&()),
                &resource,
                &status,
            ))),
            Err(e) => Err(e),
        }
    })
}

/// Lists one of the [`DYNAMIC_KINDS`] (all optional): a 404 (not served, or the API
/// group absent) or 403 (not allowed) leaves it out with a warning.
fn optional_dynamic<'a>(
    client: &'a kube::Client,
    kind: &'static DynamicKind,
    page_size: u32,
) -> BoxFuture<'a, Result<Listed, DumpError>> {
    Box::pin(async move {
        match list_dynamic(client, kind, page_size).await {
            Ok(items) => Ok(Listed::Items(items)),
            Err(DumpError::List {
                resource,
                source: kube::Error::Api(status),
            }) if status.code == 404 || status.code == 403 => Ok(Listed::LeftOut(left_out(
                kind.kind,
                &kind.api_version(),
                &resource,
                &status,
            ))),
            Err(e) => Err(e),
        }
    })
}

/// The warning for an optional kind whose list was answered 404 or 403.
fn left_out(kind: &str, api_version: &str, resource: &str, status: &kube::core::Status) -> String {
    let why = refused_because("list", api_version, resource, status);
    format!(
        "{kind} objects left out: {why}; pods that need them are simulated as if there were none"
    )
}

/// Why an optional kind is left out, for a `verb` (`list`, `watch`) answered 404 (`the
/// server does not serve scheduling.x-k8s.io/v1alpha1 podgroups`) or 403 (`not allowed
/// to list podgroups (scheduling.x-k8s.io/v1alpha1): ...` and the server's message).
pub(crate) fn refused_because(
    verb: &str,
    api_version: &str,
    resource: &str,
    status: &kube::core::Status,
) -> String {
    if status.code == 404 {
        format!("the server does not serve {api_version} {resource}")
    } else {
        format!(
            "not allowed to {verb} {resource} ({api_version}): {}",
            one_line(&status.message)
        )
    }
}

/// An API for a [`DynamicKind`] in all namespaces.
pub(crate) fn dynamic_api(client: &kube::Client, kind: &DynamicKind) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(kind.group, kind.version, kind.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, kind.plural);
    Api::all_with(client.clone(), &resource)
}

/// Every object of a [`DynamicKind`] in all namespaces, page by page, each as the
/// server returns it with its `apiVersion` and `kind`.
async fn list_dynamic(
    client: &kube::Client,
    kind: &DynamicKind,
    page_size: u32,
) -> Result<Vec<Value>, DumpError> {
    let api = dynamic_api(client, kind);
    let (objects, _) = list_pages(&api, page_size)
        .await
        .map_err(|source| DumpError::List {
            resource: kind.plural.to_owned(),
            source,
        })?;
    objects
        .iter()
        .map(|object| {
            value_with_type(object, &kind.api_version(), kind.kind).map_err(|source| {
                DumpError::Encode {
                    kind: kind.kind.to_owned(),
                    source,
                }
            })
        })
        .collect()
}

/// Every object of kind `K` in all namespaces, page by page, each as JSON with its
/// `apiVersion` and `kind`.
async fn list_all<K>(client: &kube::Client, page_size: u32) -> Result<Vec<Value>, DumpError>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let (objects, _) = list_pages(&api, page_size)
        .await
        .map_err(|source| DumpError::List {
            resource: K::plural(&()).into_owned(),
            source,
        })?;
    objects
        .iter()
        .map(|object| {
            object_value(object).map_err(|source| DumpError::Encode {
                kind: K::kind(&()).into_owned(),
                source,
            })
        })
        .collect()
}

/// Every object `api` lists, page by page (`page_size` a page), and the list's
/// resourceVersion (to watch from).
pub(crate) async fn list_pages<K>(
    api: &Api<K>,
    page_size: u32,
) -> Result<(Vec<K>, String), kube::Error>
where
    K: kube::Resource + Clone + DeserializeOwned + fmt::Debug,
{
    let mut params = ListParams::default().limit(page_size);
    let mut items = Vec::new();
    loop {
        let page = api.list(&params).await?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok((items, page.metadata.resource_version.unwrap_or_default())),
        }
    }
}

/// An object as JSON with its `apiVersion` and `kind` (which a listed item lacks).
pub(crate) fn object_value<K>(object: &K) -> Result<Value, serde_json::Error>
where
    K: kube::Resource<DynamicType = ()> + Serialize,
{
    value_with_type(object, &K::api_version(&()), &K::kind(&()))
}

/// An object as JSON with this `apiVersion` and `kind` (for a [`DynamicObject`], whose
/// type is not in its Rust type).
pub(crate) fn value_with_type<K: Serialize>(
    object: &K,
    api_version: &str,
    kind: &str,
) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(object)?;
    if let Value::Object(fields) = &mut value {
        fields.insert("apiVersion".into(), json!(api_version));
        fields.insert("kind".into(), json!(kind));
    }
    Ok(value)
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
pub(crate) fn kube_error_line(error: &kube::Error) -> String {
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
mod tests;
