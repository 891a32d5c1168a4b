//! kubesched's runtime against a real kube-apiserver (v1.36; binaries from
//! `KUBEBUILDER_ASSETS`, `KUBESCHED_REALCLUSTER` or `../shared/realcluster`, see
//! kubesched-envtest): one control plane for this test binary, and the scenarios run
//! one after the other on it, each cleaning up the nodes and pods it made. A scenario
//! that fails does not stop the others; the test fails with every failure. Without
//! binaries the test says it skipped, and passes, unless `KUBESCHED_REQUIRE_REALCLUSTER`
//! is set (`.ci/run` sets it), which makes that a failure; so do the scenarios that run
//! the real kube-scheduler beside kubesched when there is none (envtest's assets have
//! none: put it beside kube-apiserver or on `PATH`).
//! `KUBESCHED_REALCLUSTER_ONLY=text` runs only the scenarios whose name contains it.

#[path = "realcluster_scenarios/cache.rs"]
mod cache_scenarios;
#[path = "realcluster_scenarios/extended.rs"]
mod extended_scenarios;
#[path = "realcluster_scenarios/gang.rs"]
mod gang_scenarios;
#[path = "realcluster_scenarios/lesson.rs"]
mod lesson_scenario;
#[path = "realcluster_scenarios/load.rs"]
mod load_scenarios;
#[path = "realcluster_scenarios/protobuf.rs"]
mod protobuf_scenario;
#[path = "realcluster_scenarios/record.rs"]
mod record_scenario;
#[path = "realcluster_scenarios/serving.rs"]
mod serving_scenarios;
#[path = "realcluster_scenarios/sigs.rs"]
mod sigs_scenario;
#[path = "realcluster_scenarios/storage.rs"]
mod storage_scenarios;
mod support;

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_kube::testing::FakeApiServer;
use kubesched_kube::{RunningRuntime, Runtime};
use support::realcluster::Cluster;

/// The scenarios that run the real kube-scheduler beside kubesched.
const NEED_KUBE_SCHEDULER: &[&str] = &[
    "the lesson end to end",
    "extended resources backed by DRA, as the real kube-scheduler",
    "gang scheduling (PodGroups), as the real kube-scheduler",
];

type Scenario = for<'a> fn(&'a mut Cluster) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

#[test]
fn against_a_real_api_server() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(LOG.clone())
        .try_init();
    let Some(mut cluster) = Cluster::up("kube") else {
        return;
    };
    let scenarios: &[(&str, Scenario)] = &[
        ("the lesson end to end", |c| {
            Box::pin(lesson_scenario::lesson(c))
        }),
        ("qps 20/burst 20 over 300 pods", |c| {
            Box::pin(load_scenarios::rate_limited(c))
        }),
        ("the lease during a 2,000-pod burst", |c| {
            Box::pin(load_scenarios::lease_under_load(c))
        }),
        ("a 20-second API server outage", |c| {
            Box::pin(load_scenarios::outage(c))
        }),
        ("a terminating pod holds its cpu", |c| {
            Box::pin(cache_scenarios::terminating(c))
        }),
        ("a finished pod frees its cpu", |c| {
            Box::pin(cache_scenarios::finished(c))
        }),
        ("a long FailedScheduling note over 500 nodes", |c| {
            Box::pin(cache_scenarios::long_note(c))
        }),
        ("a pod recreated under the same name", |c| {
            Box::pin(cache_scenarios::recreated(c))
        }),
        ("two replicas, the leader crashes", |c| {
            Box::pin(load_scenarios::two_replicas(c))
        }),
        ("/metrics behind delegated auth", |c| {
            Box::pin(serving_scenarios::metrics_auth(c))
        }),
        ("WaitForFirstConsumer claims bound through PreBind", |c| {
            Box::pin(storage_scenarios::volumes(c))
        }),
        (
            "a ResourceClaim allocated and reserved through PreBind",
            |c| Box::pin(storage_scenarios::resource_claim_allocated(c)),
        ),
        (
            "record, then replay: the replayed cluster ends as recorded",
            |c| Box::pin(record_scenario::record_and_replay(c)),
        ),
        ("the API server's version picks the behaviour", |c| {
            Box::pin(serving_scenarios::server_version(c))
        }),
        (
            "extended resources backed by DRA, as the real kube-scheduler",
            |c| Box::pin(extended_scenarios::extended_resources(c)),
        ),
        (
            "gang scheduling (PodGroups), as the real kube-scheduler",
            |c| Box::pin(gang_scenarios::gangs(c)),
        ),
        ("protobuf lists and watches decode as the JSON ones", |c| {
            Box::pin(protobuf_scenario::protobuf_as_json(c))
        }),
        (
            "scheduler-plugins' CRDs: Coscheduling and CapacityScheduling in run",
            |c| Box::pin(sigs_scenario::plugins_sigs(c)),
        ),
    ];
    // KUBESCHED_REALCLUSTER_ONLY=text runs only the scenarios whose name contains it.
    let only = std::env::var("KUBESCHED_REALCLUSTER_ONLY").unwrap_or_default();
    let mut failed = Vec::new();
    for (name, scenario) in scenarios {
        if !name.contains(only.as_str()) {
            continue;
        }
        if NEED_KUBE_SCHEDULER.contains(name) && cluster.kube_scheduler().is_none() {
            assert!(
                std::env::var_os(kubesched_envtest::KUBESCHED_REQUIRE_REALCLUSTER).is_none(),
                "{name}: no kube-scheduler beside kube-apiserver or on PATH"
            );
            kubesched_envtest::skipped(&format!(
                "realcluster: {name}: it runs the real kube-scheduler, and there is none beside \
                 kube-apiserver or on PATH"
            ));
            continue;
        }
        let start = Instant::now();
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| rt.block_on(scenario(&mut cluster))));
        rt.block_on(reset(&cluster));
        eprintln!(
            "realcluster: {name}: {} in {:.1}s",
            if r.is_ok() { "ok" } else { "FAILED" },
            start.elapsed().as_secs_f64()
        );
        if r.is_err() {
            failed.push(*name);
        }
    }
    assert!(
        failed.is_empty(),
        "failed against the real API server: {failed:?}"
    );
}

// ---- helpers ----

/// kubesched's log lines (INFO and above), kept to count them.
#[derive(Clone, Default)]
struct Log(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

static LOG: std::sync::LazyLock<Log> = std::sync::LazyLock::new(Log::default);

impl Log {
    fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Log {
    type Writer = Log;
    fn make_writer(&'a self) -> Log {
        self.clone()
    }
}

/// A node as a kubelet would report it: Ready, with this allocatable.
fn ready_node(name: &str, cpu: &str, memory: &str) -> Node {
    let mut n = FakeApiServer::node(name, cpu, memory);
    if let Some(s) = n.status.as_mut() {
        s.conditions = Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: Some("KubeletReady".into()),
            ..Default::default()
        }]);
    }
    n
}

async fn create_nodes(client: &kube::Client, nodes: Vec<Node>) {
    let api: Api<Node> = Api::all(client.clone());
    futures::stream::iter(nodes)
        .map(|n| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &n).await }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("create nodes");
}

/// Creates pods, 32 requests at a time.
async fn create_pods(client: &kube::Client, pods: Vec<Pod>) {
    futures::stream::iter(pods)
        .map(|p| {
            let api: Api<Pod> = Api::namespaced(
                client.clone(),
                p.metadata.namespace.as_deref().unwrap_or("default"),
            );
            async move { api.create(&PostParams::default(), &p).await }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await
        .expect("create pods");
}

/// Deletes every pod (at once, as there is no kubelet) and node the scenarios made.
async fn reset(cluster: &Cluster) {
    let client = cluster.admin().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    let _ = pods.delete_collection(&force, &ListParams::default()).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let _ = nodes
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await;
    let events: Api<Event> = Api::namespaced(client, "default");
    let _ = events
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await;
}

/// Polls `f` every 100 ms until it returns `Some`, for at most `secs` seconds.
async fn until<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs}s waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kubesched's runtime started against the control plane with `config`, as the
/// admin (the scenarios that need an identity, plugins or serving build their own).
async fn start_kubesched(cluster: &Cluster, config: KubeSchedulerConfiguration) -> RunningRuntime {
    Runtime::from_kube_config(&cluster.config().await, config)
        .expect("clients")
        .start()
        .await
        .expect("start")
}

fn scheduler_config(text: &str) -> KubeSchedulerConfiguration {
    KubeSchedulerConfiguration::from_yaml_str(text, "test.yaml")
        .expect("config")
        .config
}

/// The real kube-scheduler as `default-scheduler`, stopped when dropped.
struct KubeScheduler(Child);

impl KubeScheduler {
    fn start(cluster: &Cluster, extra: &[&str]) -> KubeScheduler {
        let kc = cluster.kubeconfig.display().to_string();
        let log =
            std::fs::File::create(cluster.state.join("logs/kube-scheduler.log")).expect("log");
        let child = Command::new(
            cluster
                .kube_scheduler()
                .expect("kube-scheduler (checked before the scenario)"),
        )
        .arg(format!("--kubeconfig={kc}"))
        .arg(format!("--authentication-kubeconfig={kc}"))
        .arg(format!("--authorization-kubeconfig={kc}"))
        .arg("--leader-elect=false")
        .arg("--secure-port=0")
        .args(extra)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start kube-scheduler");
        cluster.track(child.id());
        KubeScheduler(child)
    }
}

impl Drop for KubeScheduler {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kubectl ARGS` as the admin; what it printed on standard output. A failure fails
/// the test with kubectl's standard error.
fn kubectl(cluster: &Cluster, args: &[&str]) -> String {
    let out = Command::new(cluster.kubectl())
        .arg(format!("--kubeconfig={}", cluster.kubeconfig.display()))
        .args(args)
        .output()
        .expect("kubectl");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `kubectl apply` of a file of the repository.
fn kubectl_apply(cluster: &Cluster, file: &Path) {
    let out = Command::new(cluster.kubectl())
        .arg(format!("--kubeconfig={}", cluster.kubeconfig.display()))
        .args(["apply", "--validate=false", "-f"])
        .arg(file)
        .output()
        .expect("kubectl");
    assert!(
        out.status.success(),
        "kubectl apply -f {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A token of a service account, through the TokenRequest API.
async fn service_account_token(cluster: &Cluster, ns: &str, name: &str) -> String {
    let out = Command::new(cluster.kubectl())
        .arg(format!("--kubeconfig={}", cluster.kubeconfig.display()))
        .args(["-n", ns, "create", "token", name, "--duration=1h"])
        .output()
        .expect("kubectl create token");
    assert!(
        out.status.success(),
        "kubectl create token: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The admin configuration with another bearer token.
async fn config_with_token(cluster: &Cluster, token: &str) -> kube::Config {
    let mut config = cluster.config().await;
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    config
}

fn repo_file(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Scheduled events per pod name: (reporting controller, note).
async fn scheduled_events(client: &kube::Client) -> BTreeMap<String, Vec<(String, String)>> {
    let api: Api<Event> = Api::namespaced(client.clone(), "default");
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for e in api
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
    {
        if e.reason.as_deref() == Some("Scheduled") {
            let pod = e.regarding.and_then(|r| r.name).unwrap_or_default();
            out.entry(pod).or_default().push((
                e.reporting_controller.unwrap_or_default(),
                e.note.unwrap_or_default(),
            ));
        }
    }
    out
}

/// `n` pending pods `PREFIX-i` in `default` for `scheduler`, each asking for `cpu`.
fn pods(n: usize, prefix: &str, scheduler: &str, cpu: &str) -> Vec<Pod> {
    (0..n)
        .map(|i| FakeApiServer::pod(&format!("{prefix}-{i}"), scheduler, cpu))
        .collect()
}

/// The pods of `scheduler` in `default`: (bound, all).
async fn bound_of(client: &kube::Client, scheduler: &str) -> (usize, usize) {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = api.list(&ListParams::default()).await.expect("pods");
    let mine: Vec<&Pod> = list
        .items
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()) == Some(scheduler))
        .collect();
    let bound = mine
        .iter()
        .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
        .count();
    (bound, mine.len())
}

/// The sum of the samples of a metric whose line starts with `prefix` (name and
/// the first labels).
fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The most requests in any window of `window` among sorted dispatch times.
fn most_in_window(times: &[Instant], window: Duration) -> usize {
    let mut most = 0;
    let mut j = 0;
    for i in 0..times.len() {
        while times[i].duration_since(times[j]) >= window {
            j += 1;
        }
        most = most.max(i - j + 1);
    }
    most
}

fn limited_config(
    scheduler: &str,
    qps: u32,
    burst: u32,
    leader_elect: bool,
) -> KubeSchedulerConfiguration {
    scheduler_config(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: {qps}
  burst: {burst}
leaderElection:
  leaderElect: {leader_elect}
  resourceNamespace: kube-system
  resourceName: lock-object-{scheduler}
profiles:
- schedulerName: {scheduler}
"
    ))
}

/// Waits until `pod` is bound and returns its node.
async fn node_of(client: &kube::Client, pod: &str, secs: u64) -> String {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    until(secs, &format!("{pod} bound"), || {
        let api = api.clone();
        async move { api.get(pod).await.ok()?.spec?.node_name }
    })
    .await
}

/// The notes of the events of `reason` about `pod`.
async fn notes(client: &kube::Client, pod: &str, reason: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(client.clone(), "default");
    api.list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(pod)
        })
        .map(|e| e.note.unwrap_or_default())
        .collect()
}
