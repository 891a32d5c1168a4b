//! kubesched's runtime against a real kube-apiserver (v1.36, from
//! `../shared/realcluster`): one control plane for this test binary, and the
//! scenarios run one after the other on it, each cleaning up the nodes and pods it
//! made. A scenario that fails does not stop the others; the test fails with every
//! failure. Without the control plane the test fails: it never passes silently.
//! `KUBESCHED_REALCLUSTER_ONLY=text` runs only the scenarios whose name contains it.

#[path = "realcluster_scenarios/extended.rs"]
mod extended_scenarios;
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
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_kube::Runtime;
use kubesched_kube::testing::FakeApiServer;
use support::realcluster::Cluster;

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
    let mut cluster = Cluster::up("kube");
    let scenarios: &[(&str, Scenario)] = &[
        ("the lesson end to end", |c| Box::pin(lesson(c))),
        ("qps 20/burst 20 over 300 pods", |c| {
            Box::pin(rate_limited(c))
        }),
        ("the lease during a 2,000-pod burst", |c| {
            Box::pin(lease_under_load(c))
        }),
        ("a 20-second API server outage", |c| Box::pin(outage(c))),
        ("a terminating pod holds its cpu", |c| {
            Box::pin(terminating(c))
        }),
        ("a long FailedScheduling note over 500 nodes", |c| {
            Box::pin(long_note(c))
        }),
        ("a pod recreated under the same name", |c| {
            Box::pin(recreated(c))
        }),
        ("two replicas, the leader crashes", |c| {
            Box::pin(two_replicas(c))
        }),
        ("/metrics behind delegated auth", |c| {
            Box::pin(metrics_auth(c))
        }),
        ("WaitForFirstConsumer claims bound through PreBind", |c| {
            Box::pin(storage_scenarios::volumes(c))
        }),
        (
            "a ResourceClaim allocated and reserved through PreBind",
            |c| Box::pin(storage_scenarios::resource_claim_allocated(c)),
        ),
        ("the API server's version picks the behaviour", |c| {
            Box::pin(server_version(c))
        }),
        (
            "extended resources backed by DRA, as the real kube-scheduler",
            |c| Box::pin(extended_scenarios::extended_resources(c)),
        ),
    ];
    // KUBESCHED_REALCLUSTER_ONLY=text runs only the scenarios whose name contains it.
    let only = std::env::var("KUBESCHED_REALCLUSTER_ONLY").unwrap_or_default();
    let mut failed = Vec::new();
    for (name, scenario) in scenarios {
        if !name.contains(only.as_str()) {
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
        let child = Command::new(cluster.bin("kube-scheduler"))
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

/// `kubectl apply` of a file of the repository.
fn kubectl_apply(cluster: &Cluster, file: &Path) {
    let out = Command::new(cluster.bin("kubectl"))
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
    let out = Command::new(cluster.bin("kubectl"))
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

// ---- scenarios ----

/// The lesson: kube-scheduler as default-scheduler, kubesched as my-scheduler with
/// deploy/'s RBAC (its own service account) and its own lease; both example pods are
/// placed, each by its own scheduler, and the lease is held and renewed.
async fn lesson(cluster: &mut Cluster) {
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        vec![
            ready_node("node-1", "4", "8Gi"),
            ready_node("node-2", "4", "8Gi"),
        ],
    )
    .await;
    kubectl_apply(cluster, &repo_file("deploy/serviceaccount.yaml"));
    let token = service_account_token(cluster, "kube-system", "my-scheduler").await;
    let config = config_with_token(cluster, &token).await;
    let _default = KubeScheduler::start(cluster, &[]);
    let text = std::fs::read_to_string(repo_file("deploy/configmap.yaml")).expect("configmap");
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        serde_norway::from_str(&text).expect("configmap yaml");
    let ksc = cm.data.expect("data")["my-scheduler-config.yaml"].clone();
    let running = Runtime::from_kube_config(&config, scheduler_config(&ksc))
        .expect("clients")
        .identity("kubesched-lesson")
        .start()
        .await
        .expect("kubesched starts with deploy/'s RBAC");
    let pods_text = std::fs::read_to_string(repo_file("deploy/example-pods.yaml")).expect("pods");
    let pods: Vec<Pod> = serde_norway::Deserializer::from_str(&pods_text)
        .map(|d| serde::Deserialize::deserialize(d).expect("pod yaml"))
        .collect();
    assert_eq!(pods.len(), 2);
    let names: Vec<String> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    create_pods(&admin, pods).await;
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    for name in &names {
        until(30, &format!("{name} bound"), || {
            let api = api.clone();
            async move { api.get(name).await.ok()?.spec?.node_name }
        })
        .await;
    }
    let events = until(30, "both Scheduled events", || {
        let admin = admin.clone();
        async move {
            let e = scheduled_events(&admin).await;
            (e.len() == 2).then_some(e)
        }
    })
    .await;
    for (pod, scheduler) in [
        ("annotation-default-scheduler", "default-scheduler"),
        ("annotation-second-scheduler", "my-scheduler"),
    ] {
        let node = api
            .get(pod)
            .await
            .expect("pod")
            .spec
            .unwrap()
            .node_name
            .unwrap();
        assert_eq!(
            events[pod],
            [(
                scheduler.to_string(),
                format!("Successfully assigned default/{pod} to {node}")
            )],
            "{pod}"
        );
    }
    // The lease: held by kubesched, renewed every retryPeriod (2 s by default).
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-system");
    let spec = leases
        .get("lock-object-my-scheduler")
        .await
        .expect("lease")
        .spec
        .unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("kubesched-lesson"));
    let first = spec.renew_time.expect("renewTime").0;
    let renewed = until(10, "the lease renewed", || {
        let leases = leases.clone();
        async move {
            let t = leases
                .get("lock-object-my-scheduler")
                .await
                .ok()?
                .spec?
                .renew_time?
                .0;
            (t > first).then_some(t)
        }
    })
    .await;
    assert!(renewed > first);
    running.stop().await;
    // A clean stop releases the lease.
    let spec = leases
        .get("lock-object-my-scheduler")
        .await
        .expect("lease")
        .spec
        .unwrap();
    assert_eq!(spec.holder_identity, None);
}

/// qps 20/burst 20 and 300 pending pods: each client's requests stay within
/// burst + 5 x qps in every 5-second window, every request went through a limiter,
/// binds wait rather than fail (all 300 bound, each with its Scheduled event), and
/// kubesched holds at most a few connections to the API server.
async fn rate_limited(cluster: &mut Cluster) {
    const SCHED: &str = "ks-limited";
    {
        let admin = cluster.admin().await;
        create_nodes(
            &admin,
            (0..10)
                .map(|i| ready_node(&format!("rl-{i}"), "64", "256Gi"))
                .collect(),
        )
        .await;
        create_pods(&admin, pods(300, "rl", SCHED, "10m")).await;
    }
    // The test's own client is gone: the connections counted below are kubesched's.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cluster.connections_to_apiserver();
    let metrics = std::sync::Arc::new(kubesched_kube::Metrics::new());
    let options = kubesched_kube::client::ClientOptions {
        qps: 20.0,
        burst: 20,
    };
    let clients =
        kubesched_kube::client::Clients::new(&cluster.config().await, &options, metrics.clone())
            .expect("clients");
    let start = Instant::now();
    let running = Runtime::with_clients(&clients, limited_config(SCHED, 20, 20, false))
        .with_metrics(metrics.clone())
        .start()
        .await
        .expect("start");
    let scheduled =
        format!("scheduler_schedule_attempts_total{{result=\"scheduled\",profile=\"{SCHED}\"}}");
    let mut most_connections = 0;
    let deadline = Instant::now() + Duration::from_secs(90);
    while metric(&metrics.encode(), &scheduled) < 300.0 {
        most_connections =
            most_connections.max(cluster.connections_to_apiserver().saturating_sub(before));
        assert!(
            Instant::now() < deadline,
            "300 pods not bound within 90 s at qps 20"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = start.elapsed();
    let admin = cluster.admin().await;
    let events = until(60, "300 Scheduled events", || {
        let admin = admin.clone();
        async move {
            let e = scheduled_events(&admin).await;
            let n = e.keys().filter(|k| k.starts_with("rl-")).count();
            (n == 300).then_some(e)
        }
    })
    .await;
    assert!(
        events.values().all(|v| v.len() == 1),
        "one Scheduled event per pod"
    );
    assert_eq!(bound_of(&admin, SCHED).await, (300, 300));
    running.stop().await;
    let budget = 20 + 5 * 20;
    for (what, bucket) in [
        ("scheduling", &clients.scheduling_bucket),
        ("events", &clients.events_bucket),
    ] {
        let times = bucket.recent();
        let most = most_in_window(&times, Duration::from_secs(5));
        eprintln!(
            "realcluster: qps 20/burst 20: {what} client: {} requests, at most {most} in 5 s (budget {budget})",
            times.len()
        );
        assert!(
            most <= budget,
            "{what}: {most} requests in a 5-second window, budget {budget}"
        );
    }
    let dispatched =
        clients.scheduling_bucket.recent().len() + clients.events_bucket.recent().len();
    let counted = metric(&metrics.encode(), "rest_client_requests_total{");
    // Every request counted went through a limiter (the stop releases nothing: no
    // leader election here).
    assert_eq!(
        counted as usize, dispatched,
        "requests that bypassed the limiters"
    );
    eprintln!(
        "realcluster: qps 20/burst 20: 300 pods bound in {:.1}s, at most {most_connections} connections to the API server",
        took.as_secs_f64()
    );
    assert!(
        most_connections <= 10,
        "{most_connections} connections to the API server"
    );
}

/// A 2,000-pod burst at qps 5000 with leader election on (retryPeriod 2 s): the
/// lease's renewTime, polled every 200 ms, never lags more than retryPeriod + 1 s.
async fn lease_under_load(cluster: &mut Cluster) {
    const SCHED: &str = "ks-burst";
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..50)
            .map(|i| ready_node(&format!("burst-{i}"), "64", "256Gi"))
            .collect(),
    )
    .await;
    let running = Runtime::from_kube_config(
        &cluster.config().await,
        limited_config(SCHED, 5000, 5000, true),
    )
    .expect("clients")
    .identity("kubesched-burst")
    .start()
    .await
    .expect("start");
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-system");
    let name = format!("lock-object-{SCHED}");
    until(20, "the lease acquired", || {
        let leases = leases.clone();
        let name = name.clone();
        async move {
            let h = leases.get(&name).await.ok()?.spec?.holder_identity?;
            (h == "kubesched-burst").then_some(())
        }
    })
    .await;
    let start = Instant::now();
    let creating = tokio::spawn({
        let admin = admin.clone();
        async move { create_pods(&admin, pods(2000, "burst", SCHED, "10m")).await }
    });
    let mut worst = Duration::ZERO;
    let mut samples = 0;
    loop {
        let lease = leases.get(&name).await.expect("lease").spec.expect("spec");
        assert_eq!(
            lease.holder_identity.as_deref(),
            Some("kubesched-burst"),
            "the lease was lost"
        );
        let renewed = lease.renew_time.expect("renewTime").0;
        let lag = k8s_openapi::jiff::Timestamp::now().duration_since(renewed);
        let lag = Duration::from_secs_f64(lag.as_secs_f64().max(0.0));
        worst = worst.max(lag);
        samples += 1;
        if creating.is_finished() && bound_of(&admin, SCHED).await.0 == 2000 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "2,000 pods not bound in 240 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    creating.await.expect("create");
    eprintln!(
        "realcluster: 2,000-pod burst: bound in {:.1}s; renewTime lagged at most {:.2}s over {samples} polls",
        start.elapsed().as_secs_f64(),
        worst.as_secs_f64()
    );
    assert!(
        worst <= Duration::from_secs(3),
        "renewTime lagged {worst:?} (retryPeriod 2 s + 1 s)"
    );
    running.stop().await;
}

/// The API server killed mid-burst and started again 20 s later, leader election
/// off: kubesched stays up, every pod ends bound once with exactly one Scheduled
/// event, and the outage costs a few lines of log, not one per retry.
async fn outage(cluster: &mut Cluster) {
    const SCHED: &str = "ks-outage";
    const PODS: usize = 300;
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..10)
            .map(|i| ready_node(&format!("out-{i}"), "64", "256Gi"))
            .collect(),
    )
    .await;
    create_pods(&admin, pods(PODS, "out", SCHED, "10m")).await;
    let metrics = std::sync::Arc::new(kubesched_kube::Metrics::new());
    // kube-scheduler's defaults (qps 50, burst 100), so the burst takes a few seconds.
    let clients = kubesched_kube::client::Clients::new(
        &cluster.config().await,
        &kubesched_kube::client::ClientOptions::default(),
        metrics.clone(),
    )
    .expect("clients");
    let running = Runtime::with_clients(&clients, limited_config(SCHED, 50, 100, false))
        .with_metrics(metrics.clone())
        .start()
        .await
        .expect("start");
    let scheduled =
        format!("scheduler_schedule_attempts_total{{result=\"scheduled\",profile=\"{SCHED}\"}}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&metrics.encode(), &scheduled) < 100.0 {
        assert!(Instant::now() < deadline, "100 pods not bound in 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lines_before = LOG.lines().len();
    cluster.stop_apiserver();
    let at_kill = metric(&metrics.encode(), &scheduled);
    tokio::time::sleep(Duration::from_secs(20)).await;
    cluster.start_apiserver();
    let admin = cluster.admin().await;
    until(120, "every pod bound after the outage", || {
        let admin = admin.clone();
        async move { (bound_of(&admin, SCHED).await == (PODS, PODS)).then_some(()) }
    })
    .await;
    let outage_lines = || -> Vec<String> {
        LOG.lines()[lines_before..]
            .iter()
            .filter(|l| !l.contains("successfully bound pod to node"))
            // The test's own admin client (kube-rs' default client) says this.
            .filter(|l| !l.contains("kube_client::client::tls"))
            .cloned()
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let events = loop {
        let e = scheduled_events(&admin).await;
        let n = e.keys().filter(|k| k.starts_with("out-")).count();
        if n == PODS {
            break e;
        }
        assert!(
            Instant::now() < deadline,
            "{n} of {PODS} pods have a Scheduled event 60 s after the outage; the log:\n{}",
            outage_lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    // Late writes would show up as a second event: give the retries time to land.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events_after = scheduled_events(&admin).await;
    assert_eq!(events, events_after);
    for (pod, list) in &events {
        assert_eq!(list.len(), 1, "{pod}: {list:?}");
    }
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    for (pod, list) in &events {
        let node = api
            .get(pod)
            .await
            .expect("pod")
            .spec
            .unwrap()
            .node_name
            .unwrap();
        assert_eq!(
            list[0].1,
            format!("Successfully assigned default/{pod} to {node}")
        );
    }
    assert!(running.is_leader(), "kubesched stopped scheduling");
    let lines = outage_lines();
    eprintln!(
        "realcluster: outage: killed at {at_kill} of {PODS} bound; {} log lines besides the bindings:\n{}",
        lines.len(),
        lines.join("\n")
    );
    assert!(
        lines.len() <= 10,
        "{} lines of log for one outage",
        lines.len()
    );
    running.stop().await;
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

/// A pod deleted with a grace period stays terminating (there is no kubelet) and
/// keeps its cpu: the next pod does not fit until it is really gone.
async fn terminating(cluster: &mut Cluster) {
    const SCHED: &str = "ks-term";
    let admin = cluster.admin().await;
    create_nodes(&admin, vec![ready_node("term-1", "1", "8Gi")]).await;
    let running = Runtime::from_kube_config(
        &cluster.config().await,
        limited_config(SCHED, 50, 100, false),
    )
    .expect("clients")
    .start()
    .await
    .expect("start");
    create_pods(&admin, vec![FakeApiServer::pod("term-a", SCHED, "800m")]).await;
    node_of(&admin, "term-a", 30).await;
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    api.delete("term-a", &DeleteParams::default())
        .await
        .expect("delete");
    let a = api
        .get("term-a")
        .await
        .expect("term-a is still there, terminating");
    assert!(a.metadata.deletion_timestamp.is_some());
    create_pods(&admin, vec![FakeApiServer::pod("term-b", SCHED, "500m")]).await;
    let failed = until(30, "term-b's FailedScheduling", || {
        let admin = admin.clone();
        async move {
            let n = notes(&admin, "term-b", "FailedScheduling").await;
            (!n.is_empty()).then_some(n)
        }
    })
    .await;
    assert!(failed[0].contains("1 Insufficient cpu"), "{failed:?}");
    assert_eq!(
        api.get("term-b").await.expect("b").spec.unwrap().node_name,
        None
    );
    // Gone for good: the cpu is free and term-b is placed.
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    api.delete("term-a", &force).await.expect("force delete");
    assert_eq!(node_of(&admin, "term-b", 60).await, "term-1");
    running.stop().await;
}

/// 500 nodes rejecting a pod that asks for 60 extended resources none has: the
/// FailedScheduling note (one `500 Insufficient ...` per resource, some 4 KB) is cut
/// to the API server's 1,024 bytes and written; the PodScheduled condition keeps the
/// whole message.
async fn long_note(cluster: &mut Cluster) {
    const SCHED: &str = "ks-long";
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..500)
            .map(|i| ready_node(&format!("long-{i}"), "4", "8Gi"))
            .collect(),
    )
    .await;
    let running = Runtime::from_kube_config(
        &cluster.config().await,
        limited_config(SCHED, 50, 100, false),
    )
    .expect("clients")
    .start()
    .await
    .expect("start");
    let mut pod = FakeApiServer::pod("long", SCHED, "100m");
    if let Some(r) = pod
        .spec
        .as_mut()
        .and_then(|s| s.containers[0].resources.as_mut())
    {
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        let extended: BTreeMap<String, Quantity> = (0..60)
            .map(|i| {
                (
                    format!("example.com/a-rather-long-extended-resource-name-{i:02}"),
                    Quantity("1".into()),
                )
            })
            .collect();
        r.requests
            .get_or_insert_with(BTreeMap::new)
            .extend(extended.clone());
        r.limits = Some(extended);
    }
    create_pods(&admin, vec![pod]).await;
    let failed = until(60, "the FailedScheduling event", || {
        let admin = admin.clone();
        async move {
            let n = notes(&admin, "long", "FailedScheduling").await;
            (!n.is_empty()).then_some(n)
        }
    })
    .await;
    assert_eq!(failed[0].len(), 1024, "{}", failed[0]);
    assert!(failed[0].starts_with("0/500 nodes are available: ") && failed[0].ends_with(" ..."));
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let message = until(30, "the PodScheduled condition", || {
        let api = api.clone();
        async move {
            let c = api.get("long").await.ok()?.status?.conditions?;
            c.into_iter().find(|c| c.type_ == "PodScheduled")?.message
        }
    })
    .await;
    assert!(
        message.len() > 3_000,
        "the condition keeps the whole message ({} bytes)",
        message.len()
    );
    assert!(message.starts_with(&failed[0][..1020]));
    running.stop().await;
}

/// A Permit plugin that holds the pods labelled `hold=true` until allowed.
struct Hold;

impl kubesched_framework::Plugin for Hold {
    fn name(&self) -> &str {
        "Hold"
    }
    fn as_permit(
        self: std::sync::Arc<Self>,
    ) -> Option<std::sync::Arc<dyn kubesched_framework::PermitPlugin>> {
        Some(self)
    }
}

impl kubesched_framework::PermitPlugin for Hold {
    fn permit(
        &self,
        _: &mut kubesched_framework::CycleState,
        pod: &kubesched_framework::PodInfo,
        _: &str,
    ) -> (kubesched_framework::Status, Duration) {
        let held = pod
            .pod()
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get("hold").map(String::as_str) == Some("true"));
        if held {
            (
                kubesched_framework::Status::new(kubesched_framework::Code::Wait, ""),
                Duration::from_secs(60),
            )
        } else {
            (kubesched_framework::Status::success(), Duration::ZERO)
        }
    }
}

/// A pod deleted and recreated under the same name while its binding waits: the
/// binding carries the old pod's UID, and the API server refuses it, so the new pod
/// (left to another scheduler) is not bound by the stale decision.
async fn recreated(cluster: &mut Cluster) {
    const SCHED: &str = "ks-uid";
    let admin = cluster.admin().await;
    create_nodes(&admin, vec![ready_node("uid-1", "4", "8Gi")]).await;
    let mut registry = kubesched_framework::Registry::new();
    registry
        .register("Hold", |_, _| Ok(std::sync::Arc::new(Hold)))
        .expect("register");
    let config = scheduler_config(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {SCHED}
  plugins:
    permit:
      enabled:
      - name: Hold
"
    ));
    let running = Runtime::from_kube_config(&cluster.config().await, config)
        .expect("clients")
        .with_plugins(registry)
        .expect("plugins")
        .start()
        .await
        .expect("start");
    let mut held = FakeApiServer::pod("uid-a", SCHED, "100m");
    held.metadata.labels = Some(BTreeMap::from([("hold".to_string(), "true".to_string())]));
    create_pods(&admin, vec![held]).await;
    let waiting = running.waiting_pods();
    let old_uid = until(30, "uid-a waiting at Permit", || {
        let w = waiting.uids();
        async move { w.into_iter().next() }
    })
    .await;
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    api.delete("uid-a", &force).await.expect("delete");
    let recreated = api
        .create(
            &PostParams::default(),
            &FakeApiServer::pod("uid-a", "nobody", "100m"),
        )
        .await
        .expect("recreate");
    assert_ne!(recreated.metadata.uid.as_deref(), Some(old_uid.as_str()));
    assert!(waiting.allow(&old_uid), "the old pod was still waiting");
    // The binding is sent and refused; give it time to land if it were accepted.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let p = api.get("uid-a").await.expect("uid-a");
        assert_eq!(
            p.spec.unwrap().node_name,
            None,
            "the recreated pod was bound by the stale decision"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(notes(&admin, "uid-a", "Scheduled").await.is_empty());
    running.stop().await;
}

/// Two replicas with leader election (lease 4 s, renew deadline 3 s, retry 1 s); the
/// leader crashes mid-burst (stops without releasing the lease): the other takes over
/// within leaseDuration + retryPeriod, and no pod gets two Scheduled events.
async fn two_replicas(cluster: &mut Cluster) {
    const SCHED: &str = "ks-ha";
    const PODS: usize = 600;
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..10)
            .map(|i| ready_node(&format!("ha-{i}"), "64", "256Gi"))
            .collect(),
    )
    .await;
    let config = || {
        scheduler_config(&format!(
            "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
  resourceNamespace: kube-system
  resourceName: lock-object-{SCHED}
profiles:
- schedulerName: {SCHED}
"
        ))
    };
    let kc = cluster.config().await;
    let a = Runtime::from_kube_config(&kc, config())
        .expect("a")
        .identity("replica-a")
        .start()
        .await
        .expect("a");
    until(20, "replica-a leading", || {
        let l = a.is_leader();
        async move { l.then_some(()) }
    })
    .await;
    let b = Runtime::from_kube_config(&kc, config())
        .expect("b")
        .identity("replica-b")
        .start()
        .await
        .expect("b");
    create_pods(&admin, pods(PODS, "ha", SCHED, "10m")).await;
    until(60, "a third of the pods bound", || {
        let admin = admin.clone();
        async move { (bound_of(&admin, SCHED).await.0 >= PODS / 3).then_some(()) }
    })
    .await;
    assert!(!b.is_leader());
    a.abort();
    let crashed = Instant::now();
    until(20, "replica-b leading", || {
        let l = b.is_leader();
        async move { l.then_some(()) }
    })
    .await;
    let took = crashed.elapsed();
    until(120, "every pod bound", || {
        let admin = admin.clone();
        async move { (bound_of(&admin, SCHED).await == (PODS, PODS)).then_some(()) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = scheduled_events(&admin).await;
    let twice: Vec<_> = events
        .iter()
        .filter(|(k, v)| k.starts_with("ha-") && v.len() > 1)
        .collect();
    assert!(
        twice.is_empty(),
        "pods with two Scheduled events: {twice:?}"
    );
    eprintln!(
        "realcluster: two replicas: the other took over {:.1}s after the leader crashed (leaseDuration 4 s + retryPeriod 1 s)",
        took.as_secs_f64()
    );
    assert!(took <= Duration::from_secs(5), "takeover took {took:?}");
    b.stop().await;
}

fn kubectl(cluster: &Cluster, args: &[&str]) {
    let out = Command::new(cluster.bin("kubectl"))
        .arg(format!("--kubeconfig={}", cluster.kubeconfig.display()))
        .args(args)
        .output()
        .expect("kubectl");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `/metrics` behind delegated authentication and authorization, with deploy/'s
/// RBAC: no token 403 (system:anonymous), a bad token 401, a token without RBAC 403,
/// a token bound to my-scheduler-metrics-reader 200; /healthz, /livez, /readyz open.
async fn metrics_auth(cluster: &mut Cluster) {
    use kubesched_kube::testing::https_get_insecure_as;
    kubectl_apply(cluster, &repo_file("deploy/serviceaccount.yaml"));
    let token = service_account_token(cluster, "kube-system", "my-scheduler").await;
    let config = config_with_token(cluster, &token).await;
    let running = Runtime::from_kube_config(&config, limited_config("ks-metrics", 50, 100, false))
        .expect("clients")
        .serving(Some(kubesched_kube::ServingOptions::new(
            "127.0.0.1:0".parse().unwrap(),
        )))
        .start()
        .await
        .expect("start");
    let addr = running.secure_address().expect("serving");
    kubectl(
        cluster,
        &[
            "-n",
            "default",
            "create",
            "serviceaccount",
            "metrics-reader",
        ],
    );
    kubectl(
        cluster,
        &["-n", "default", "create", "serviceaccount", "nobody"],
    );
    kubectl(
        cluster,
        &[
            "create",
            "clusterrolebinding",
            "metrics-reader",
            "--clusterrole=my-scheduler-metrics-reader",
            "--serviceaccount=default:metrics-reader",
        ],
    );
    let reader = service_account_token(cluster, "default", "metrics-reader").await;
    let nobody = service_account_token(cluster, "default", "nobody").await;
    for path in ["/healthz", "/livez", "/readyz"] {
        let (code, body) = https_get_insecure_as(addr, path, None).await.expect("get");
        assert_eq!((code, body.as_str()), (200, "ok"), "{path}");
    }
    let (code, body) = https_get_insecure_as(addr, "/metrics", None)
        .await
        .expect("get");
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("system:anonymous"), "{body}");
    let (code, _) = https_get_insecure_as(addr, "/metrics", Some("not-a-token"))
        .await
        .expect("get");
    assert_eq!(code, 401);
    let (code, body) = https_get_insecure_as(addr, "/metrics", Some(&nobody))
        .await
        .expect("get");
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("system:serviceaccount:default:nobody"),
        "{body}"
    );
    for token in [reader.as_str(), "admin-token"] {
        let (code, body) = https_get_insecure_as(addr, "/metrics", Some(token))
            .await
            .expect("get");
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("scheduler_pending_pods"));
    }
    running.stop().await;
    kubectl(cluster, &["delete", "clusterrolebinding", "metrics-reader"]);
    kubectl(
        cluster,
        &[
            "-n",
            "default",
            "delete",
            "serviceaccount",
            "metrics-reader",
            "nobody",
        ],
    );
}

/// The v1.36 API server's `/version` picks kubesched's v1.36 behaviour: for
/// `--from-cluster` (the same call `kubesched simulate --from-cluster` makes, and the
/// binary itself when `cargo test --workspace` has built it) and for `kubesched run`
/// (the lesson's runtime logged the line).
async fn server_version(cluster: &mut Cluster) {
    use kubesched_framework::KubernetesVersion;
    let live = kubesched_kube::cluster_dump::LiveCluster::from_config(
        cluster.config().await,
        Some("realcluster".into()),
    )
    .expect("client");
    let v = kubesched_kube::server_version::server_version(live.client())
        .await
        .expect("/version answers");
    eprintln!(
        "realcluster: /version says {}: {}",
        v.git_version,
        v.choice()
    );
    assert_eq!((v.behaviour, v.exact), (KubernetesVersion::V1_36, true));
    assert!(v.git_version.starts_with("v1.36."), "{}", v.git_version);
    let logged = LOG.lines();
    assert!(
        logged
            .iter()
            .any(|l| l.contains("kube-scheduler v1.36.1 behaviour (the API server is v1.36.")),
        "the runtime said which behaviour it picked: {logged:?}"
    );
    // One pending pod (no kube-scheduler runs now) for the simulation to place.
    let admin = cluster.admin().await;
    create_nodes(&admin, vec![ready_node("node-1", "4", "8Gi")]).await;
    create_pods(&admin, pods(1, "versioned", "default-scheduler", "500m")).await;
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/kubesched");
    if !bin.exists() {
        eprintln!(
            "realcluster: {} not built: simulate --from-cluster not run",
            bin.display()
        );
        return;
    }
    let out = Command::new(&bin)
        .args(["simulate", "--from-cluster", "--kubeconfig"])
        .arg(&cluster.kubeconfig)
        .args(["--format", "jsonl"])
        .output()
        .expect("run kubesched");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("realcluster: kubesched simulate --from-cluster said:\n{stderr}");
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""node":"node-1""#), "{stdout}");
    assert!(
        stderr.contains(
            "kubesched: note: kube-scheduler v1.36.1 behaviour (the API server is v1.36."
        ),
        "{stderr}"
    );
}
