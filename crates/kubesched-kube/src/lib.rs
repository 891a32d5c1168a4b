//! # kubesched-kube
//!
//! kubesched as a real scheduler beside kube-scheduler: the runtime watches a
//! Kubernetes API server's nodes and pods (and the Services, workloads, Namespaces,
//! PodDisruptionBudgets, storage objects and `resource.k8s.io` objects plugins read)
//! with kube-rs, keeps a cache of the cluster in
//! step, queues the pending pods whose `spec.schedulerName` is one of its profiles
//! (and only those) in kubesched-framework's [`SchedulingQueue`], schedules them one at
//! a time with the profiles' plugins, and binds them through the `binding`
//! subresource in binding cycles that run concurrently with the next scheduling
//! cycles. It writes `Scheduled` and `FailedScheduling` events (the reporting
//! controller is the profile's scheduler name, so `kubectl describe pod` shows who
//! placed the pod), sets `PodScheduled=False` with reason `Unschedulable` on pods that
//! fit nowhere, preempts (PostFilter: nominates the pod, deletes the victims with a
//! `Preempted` event), elects a leader with a Lease, and serves `/healthz`, `/livez`,
//! `/readyz` and `/metrics` over HTTPS (`/metrics` only to the bearer tokens the API
//! server authenticates and authorises, as kube-scheduler's delegated auth).
//!
//! Sibling crates: `kubesched-framework` (the plugin traits and the scheduling
//! cycle), `kubesched-config` (KubeSchedulerConfiguration), `kubesched-plugins` (the
//! in-tree plugins). `kubesched run` (kubesched-cli) is [`cli::run`];
//! `kubesched simulate --from-cluster` reads a cluster, list requests only, through
//! [`cluster_dump`].
//!
//! ```no_run
//! use kubesched_kube::Runtime;
//! use kubesched_config::KubeSchedulerConfiguration;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: my-scheduler\n";
//! let config = KubeSchedulerConfiguration::from_yaml_str(text, "config.yaml")?.config;
//! let client = kube::Client::try_default().await?;
//! let running = Runtime::new(client, config).start().await?;
//! tokio::signal::ctrl_c().await?;
//! running.stop().await;
//! # Ok(()) }
//! ```
//!
//! [`SchedulingQueue`]: kubesched_framework::SchedulingQueue

pub mod auth;
pub mod cli;
pub mod client;
pub mod cluster_dump;
pub mod events;
pub mod leader;
pub mod metrics;
mod outage;
pub mod protobuf;
pub mod record;
mod requests;
mod runtime;
pub mod serve;
pub mod server_version;
mod storage;
pub mod testing;
pub mod watch;
mod workload_ref;
mod writer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::{
    Framework, FrameworkError, Handle, HostSelection, NodeSearch, QueueOptions, Registry,
    Scheduler, SchedulerError, SchedulerOptions, Snapshot,
};
use tokio::sync::watch as tokio_watch;

pub use leader::{LeaderElectionOptions, LeaderElector, LeaderLost};
pub use metrics::Metrics;
pub use runtime::{ApiBinder, WaitingPods};
pub use serve::{DEFAULT_SECURE_PORT, Readiness, ServingOptions};

/// Why the runtime could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A profile could not be built from the configuration and the registry.
    #[error(transparent)]
    Framework(#[from] FrameworkError),
    /// The profiles do not fit together.
    #[error(transparent)]
    Scheduler(#[from] SchedulerError),
    /// Out-of-tree plugins clash with in-tree names.
    #[error("plugin registered twice: {0}")]
    DuplicatePlugin(String),
    /// The secure port could not be served.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// Leadership was lost.
    #[error(transparent)]
    LeaderLost(#[from] LeaderLost),
    /// The feature gates do not apply.
    #[error("{0}")]
    Features(String),
}

/// The host name, for identities and certificates.
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}", nanos as u64, std::process::id())
}

/// A scheduler to run against an API server: configuration, plugins, serving.
pub struct Runtime {
    client: kube::Client,
    events_client: kube::Client,
    leader_election_client: kube::Client,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    serving: Option<ServingOptions>,
    identity: String,
    assumed_pod_ttl: Duration,
    metrics: Arc<Metrics>,
    seed: u64,
    plugin_metrics_sample_percent: u8,
    kubernetes_version: Option<kubesched_framework::KubernetesVersion>,
    feature_gates: Vec<String>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("identity", &self.identity)
            .field("serving", &self.serving)
            .finish()
    }
}

impl Runtime {
    /// A runtime with the in-tree plugins, no serving, and this configuration, whose
    /// every request goes through `client` as it is (no rate limit of its own; see
    /// [`Runtime::from_kube_config`] for kube-scheduler's clients).
    pub fn new(client: kube::Client, config: KubeSchedulerConfiguration) -> Runtime {
        Runtime {
            events_client: client.clone(),
            leader_election_client: client.clone(),
            client,
            config,
            registry: kubesched_plugins::in_tree_registry(),
            serving: None,
            identity: format!("{}_{}", hostname(), unique_suffix()),
            assumed_pod_ttl: Duration::from_secs(30),
            metrics: Arc::new(Metrics::new()),
            seed: std::process::id() as u64,
            plugin_metrics_sample_percent: 10,
            kubernetes_version: None,
            feature_gates: Vec::new(),
        }
    }

    /// A runtime talking to the API server of `kube_config` as kube-scheduler does:
    /// a scheduling client and an event client, each with one HTTP/2 connection
    /// behind its own token bucket of the configuration's `clientConnection.qps` and
    /// `burst`, and a leader-election client with its own connection and no limiter
    /// ([`client::Clients`]).
    pub fn from_kube_config(
        kube_config: &kube::Config,
        config: KubeSchedulerConfiguration,
    ) -> Result<Runtime, kube::Error> {
        let metrics = Arc::new(Metrics::new());
        let options = client::ClientOptions {
            qps: config.client_connection.qps,
            burst: u32::try_from(config.client_connection.burst).unwrap_or(0),
        };
        let clients = client::Clients::new(kube_config, &options, metrics.clone())?;
        let mut runtime = Runtime::with_clients(&clients, config);
        runtime.metrics = metrics;
        Ok(runtime)
    }

    /// A runtime on clients built beforehand (their requests are counted in the
    /// metrics they were built with: pass [`Runtime::metrics`]' of another runtime, or
    /// use [`Runtime::from_kube_config`]).
    pub fn with_clients(clients: &client::Clients, config: KubeSchedulerConfiguration) -> Runtime {
        let mut runtime = Runtime::new(clients.scheduling.clone(), config);
        runtime.events_client = clients.events.clone();
        runtime.leader_election_client = clients.leader_election.clone();
        runtime
    }

    /// Uses `metrics` (for example those the clients of [`Runtime::with_clients`]
    /// count their requests in).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Runtime {
        self.metrics = metrics;
        self
    }

    /// Adds out-of-tree plugins to the in-tree ones.
    pub fn with_plugins(mut self, registry: Registry) -> Result<Runtime, RuntimeError> {
        self.registry
            .merge(registry)
            .map_err(|e| RuntimeError::DuplicatePlugin(e.to_string()))?;
        Ok(self)
    }

    /// Serves health and metrics over HTTPS.
    pub fn serving(mut self, serving: Option<ServingOptions>) -> Runtime {
        self.serving = serving;
        self
    }

    /// The lease holder identity (default `HOSTNAME_<unique>`).
    pub fn identity(mut self, identity: impl Into<String>) -> Runtime {
        self.identity = identity.into();
        self
    }

    /// How long a bound pod stays assumed without the API server confirming it
    /// (default 30 s).
    pub fn assumed_pod_ttl(mut self, ttl: Duration) -> Runtime {
        self.assumed_pod_ttl = ttl;
        self
    }

    /// The share of scheduling cycles, in percent, whose plugin calls are timed for
    /// `scheduler_plugin_execution_duration_seconds` (kube-scheduler: 10).
    pub fn plugin_metrics_sample_percent(mut self, percent: u8) -> Runtime {
        self.plugin_metrics_sample_percent = percent.min(100);
        self
    }

    /// The kube-scheduler version to behave as (`None`, the default: the API server's,
    /// or the nearest older one kubesched has) and the feature gates changed from its
    /// defaults (`Name=bool,...` values, as `--feature-gates` takes them).
    pub fn kubernetes_version(
        mut self,
        version: Option<kubesched_framework::KubernetesVersion>,
        feature_gates: Vec<String>,
    ) -> Runtime {
        self.kubernetes_version = version;
        self.feature_gates = feature_gates;
        self
    }

    /// The features the plugins get: the chosen (or the API server's) version with the
    /// gates applied; one log line says which.
    async fn features(&self) -> Result<kubesched_framework::Features, RuntimeError> {
        use kubesched_framework::{Features, KubernetesVersion};
        let (version, why) = match self.kubernetes_version {
            Some(v) => (v, "--kubernetes-version".to_string()),
            None => match server_version::server_version(&self.client).await {
                Ok(server) => (server.behaviour, server.choice()),
                Err(e) => (
                    KubernetesVersion::LATEST,
                    format!("{e}; the newest kubesched has"),
                ),
            },
        };
        let features = Features::with_gates(version, self.feature_gates.iter().map(String::as_str))
            .map_err(|e| RuntimeError::Features(format!("--feature-gates: {e}")))?;
        tracing::info!("{} ({why})", features.describe());
        Ok(features)
    }

    /// The metrics (shared with the `/metrics` endpoint).
    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// Starts watching, electing and scheduling; returns once the first lists of
    /// pods and nodes are in the cache.
    pub async fn start(self) -> Result<RunningRuntime, RuntimeError> {
        let features = self.features().await?;
        let rt = tokio::runtime::Handle::current();
        // Protobuf unless the configuration asks for JSON (`kubesched run` refuses any
        // other content type before it gets here).
        let encoding =
            watch::Encoding::from_content_type(&self.config.client_connection.content_type)
                .unwrap_or_else(|why| {
                    tracing::warn!(%why, "talking protobuf");
                    watch::Encoding::Protobuf
                });
        let write_outage = Arc::new(outage::Outage::new("writes"));
        let unanswered = Arc::new(runtime::Unanswered::default());
        let binder = Arc::new(ApiBinder::with_outage(
            requests::Requests::new(self.client.clone(), encoding),
            rt.clone(),
            write_outage.clone(),
            unanswered.clone(),
        ));
        let recorder = events::Recorder::new(
            requests::Requests::new(self.events_client.clone(), encoding),
            rt.clone(),
        );
        let writer = Arc::new(writer::ApiWriter::new(self.client.clone(), rt.clone()));
        let dra = Arc::new(kubesched_framework::DraState::default());
        let batching = features.enabled("OpportunisticBatching");
        // v1.36's gangs: PodGroups, scheduled in PodGroup cycles.
        let gangs = features.generic_workload();
        // v1.35's: Workloads and pods' spec.workloadRef, each pod in its own cycle.
        let workloads = features.enabled("GenericWorkload")
            && features.version < kubesched_framework::KubernetesVersion::V1_36;
        let gang_scheduling = features.enabled("GangScheduling");
        let pop_from_backoff = features.enabled("SchedulerPopFromBackoffQ");
        let live = Arc::new(kubesched_framework::LiveObjects::default());
        let handle = Handle {
            profile_name: String::new(),
            binder: Some(binder),
            dra: Some(dra.clone()),
            writer: Some(writer.clone()),
            features,
            live_objects: Some(live.clone()),
            ..Handle::default()
        };
        let profiles = self
            .config
            .profiles
            .iter()
            .map(|p| {
                let mut fwk = Framework::new(p, &self.registry, &handle)?;
                fwk.set_plugin_observer(self.metrics.clone());
                Ok::<_, FrameworkError>(fwk)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let options = SchedulerOptions {
            host_selection: HostSelection::Random { seed: self.seed },
            node_search: NodeSearch::Adaptive,
            percentage_of_nodes_to_score: self.config.percentage_of_nodes_to_score,
            run_post_filter: false,
            batching,
        };
        // scheduler-plugins' gang and quota plugins read their objects from the live
        // view: watch them where a profile has them.
        let uses = |plugin: &str| profiles.iter().any(|p| p.plugin(plugin).is_some());
        let (coscheduling, capacity) = (uses("Coscheduling"), uses("CapacityScheduling"));
        let sched = Scheduler::new(profiles, Snapshot::default(), options)?;
        let queue_options = QueueOptions {
            pending_adds_move_pods: gang_scheduling,
            pop_from_backoff,
            ..QueueOptions::from_seconds(
                self.config.pod_initial_backoff_seconds,
                self.config.pod_max_backoff_seconds,
            )
        };
        let shared = runtime::Shared::new(
            sched,
            queue_options,
            self.metrics.clone(),
            self.client.clone(),
            recorder.clone(),
            write_outage,
            unanswered,
            rt.clone(),
            self.assumed_pod_ttl,
            self.plugin_metrics_sample_percent,
            dra,
            live,
            gangs,
            gangs || workloads || coscheduling || capacity,
        );
        writer.attach(&shared);
        let (stop_tx, stop_rx) = tokio_watch::channel(false);
        let readiness = Arc::new(serve::Readiness::new());
        let secure_address = match &self.serving {
            Some(s) => {
                let auth = Arc::new(auth::DelegatedAuth::new(self.client.clone()));
                Some(
                    serve::serve(
                        s,
                        self.metrics.clone(),
                        readiness.clone(),
                        Some(auth),
                        stop_rx.clone(),
                    )
                    .await?,
                )
            }
            None => None,
        };
        // One request on each client before the watches start together: the
        // connection (HTTP/2 when the server offers it) is up before the concurrent
        // requests, which then share it instead of each opening its own.
        let _ = tokio::join!(
            self.client.apiserver_version(),
            self.events_client.apiserver_version()
        );
        // Watches.
        let (pods_synced, pods_rx) = tokio::sync::oneshot::channel();
        let (nodes_synced, nodes_rx) = tokio::sync::oneshot::channel();
        let mut tasks = vec![
            tokio::spawn(recorder.maintain(stop_rx.clone())),
            tokio::spawn(watch::run::<k8s_openapi::api::core::v1::Node>(
                shared.clone(),
                self.client.clone(),
                encoding,
                nodes_synced,
                stop_rx.clone(),
            )),
        ];
        if workloads {
            // JSON: the protobuf schema has no spec.workloadRef.
            tasks.push(tokio::spawn(watch::run::<workload_ref::WorkloadRefPod>(
                shared.clone(),
                self.client.clone(),
                watch::Encoding::Json,
                pods_synced,
                stop_rx.clone(),
            )));
        } else {
            tasks.push(tokio::spawn(watch::run::<k8s_openapi::api::core::v1::Pod>(
                shared.clone(),
                self.client.clone(),
                encoding,
                pods_synced,
                stop_rx.clone(),
            )));
        }
        let mut object_syncs = Vec::new();
        macro_rules! watch_objects {
            ($($t:ty),*) => {$(
                let (tx, rx) = tokio::sync::oneshot::channel();
                object_syncs.push(rx);
                tasks.push(tokio::spawn(watch::run::<$t>(
                    shared.clone(),
                    self.client.clone(),
                    encoding,
                    tx,
                    stop_rx.clone(),
                )));
            )*};
        }
        {
            use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
            use k8s_openapi::api::core::v1::{Namespace, ReplicationController, Service};
            use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
            use k8s_openapi::api::policy::v1::PodDisruptionBudget;
            use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
            use k8s_openapi::api::storage::v1::{
                CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
            };
            watch_objects!(
                Service,
                ReplicationController,
                ReplicaSet,
                StatefulSet,
                Namespace,
                PodDisruptionBudget,
                PersistentVolume,
                PersistentVolumeClaim,
                StorageClass,
                CSINode,
                CSIDriver,
                CSIStorageCapacity,
                VolumeAttachment,
                DeviceClass,
                ResourceSlice,
                ResourceClaim
            );
        }
        if workloads {
            watch_objects!(runtime::WorkloadObject);
        } else if gangs {
            watch_objects!(runtime::PodGroupObject);
        }
        if coscheduling {
            watch_objects!(runtime::SigsPodGroupObject);
        }
        if capacity {
            watch_objects!(runtime::ElasticQuotaObject);
        }
        let _ = nodes_rx.await;
        let _ = pods_rx.await;
        for rx in object_syncs {
            let _ = rx.await;
        }
        readiness.set_synced();
        // Leader election.
        let le = &self.config.leader_election;
        let elector = if le.leader_elect {
            let opts = LeaderElectionOptions {
                namespace: le.resource_namespace.clone(),
                name: le.resource_name.clone(),
                identity: self.identity.clone(),
                lease_duration: le.lease_duration,
                renew_deadline: le.renew_deadline,
                retry_period: le.retry_period,
            };
            tracing::info!(lease = %format!("{}/{}", opts.namespace, opts.name), identity = %opts.identity, "attempting to acquire leader lease");
            let (lead_tx, mut lead_rx) = tokio_watch::channel(false);
            let s = shared.clone();
            tasks.push(tokio::spawn(async move {
                while lead_rx.changed().await.is_ok() {
                    let leading = *lead_rx.borrow();
                    s.leading.store(leading, Ordering::SeqCst);
                    s.metrics.set_leader(leading);
                    s.notify();
                }
            }));
            let elector = LeaderElector::new(self.leader_election_client.clone(), opts)
                .with_encoding(encoding);
            Some(tokio::spawn(elector.run(lead_tx, stop_rx.clone())))
        } else {
            shared.leading.store(true, Ordering::SeqCst);
            None
        };
        // The scheduling loop.
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("scheduling-loop".into())
            .spawn(move || s.scheduling_loop())
            .ok();
        tracing::info!(profiles = ?self.config.profiles.iter().map(|p| &p.scheduler_name).collect::<Vec<_>>(), "kubesched started");
        Ok(RunningRuntime {
            shared,
            stop_tx,
            readiness,
            secure_address,
            tasks,
            elector,
            thread,
        })
    }
}

/// A started runtime.
pub struct RunningRuntime {
    shared: Arc<runtime::Shared>,
    stop_tx: tokio_watch::Sender<bool>,
    readiness: Arc<serve::Readiness>,
    secure_address: Option<SocketAddr>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    elector: Option<tokio::task::JoinHandle<Result<(), LeaderLost>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for RunningRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningRuntime")
            .field("secure_address", &self.secure_address)
            .finish()
    }
}

impl RunningRuntime {
    /// Where `/healthz` and `/metrics` are served, when serving.
    pub fn secure_address(&self) -> Option<SocketAddr> {
        self.secure_address
    }

    /// `true` while this replica schedules (it leads, or election is off).
    pub fn is_leader(&self) -> bool {
        self.shared.leading.load(Ordering::SeqCst)
    }

    /// The metrics.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.shared.metrics.clone()
    }

    /// The pods waiting at Permit, for plugins or embedders that allow or reject them.
    pub fn waiting_pods(&self) -> Arc<WaitingPods> {
        self.shared.waiting.clone()
    }

    /// Waits until leadership is lost (an error) or the runtime is stopped.
    pub async fn wait(&mut self) -> Result<(), RuntimeError> {
        match self.elector.as_mut() {
            Some(e) => match e.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(lost)) => {
                    self.elector = None;
                    Err(lost.into())
                }
                Err(_) => Ok(()),
            },
            None => {
                let mut rx = self.stop_tx.subscribe();
                let _ = rx.wait_for(|s| *s).await;
                Ok(())
            }
        }
    }

    fn halt(&mut self) {
        self.readiness.set_shutting_down();
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.leading.store(false, Ordering::SeqCst);
        self.shared.notify();
        let _ = self.stop_tx.send(true);
    }

    /// Stops cleanly: the scheduling loop ends, the watches stop, and the lease is
    /// released so another replica takes over at once.
    pub async fn stop(mut self) {
        self.halt();
        if let Some(e) = self.elector.take() {
            let _ = e.await;
        }
        for t in self.tasks.drain(..) {
            t.abort();
        }
        if let Some(t) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }

    /// Stops as a crash would: nothing is released, the lease expires on its own.
    pub fn abort(mut self) {
        self.readiness.set_shutting_down();
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.leading.store(false, Ordering::SeqCst);
        self.shared.notify();
        if let Some(e) = self.elector.take() {
            e.abort();
        }
        for t in self.tasks.drain(..) {
            t.abort();
        }
        let _ = self.stop_tx.send(true);
    }
}
