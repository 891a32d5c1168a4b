//! `kubesched simulate|capacity|rollout --from-cluster` end to end: the `kubesched`
//! binary reads the loopback API server of the runtime tests
//! (`kubesched_kube::testing::FakeApiServer`) through a kubeconfig, simulates the pods
//! pending there, explains one, and writes nothing; a kubeconfig that cannot be read,
//! an unknown context and an unreachable server are each one error line, exit status 2.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kubesched_kube::testing::FakeApiServer;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The loopback API server on a runtime of its own (the `kubesched` child process
/// talks to it while the test thread waits), and a kubeconfig with two contexts:
/// `fake` (the current one) for the server, `unreachable` for a closed port.
struct Cluster {
    // Dropped before the runtime that serves it.
    server: FakeApiServer,
    _runtime: tokio::runtime::Runtime,
    dir: PathBuf,
    kubeconfig: String,
    closed: String,
}

impl Cluster {
    fn start(test: &str) -> Cluster {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let server = runtime.block_on(FakeApiServer::start());
        // A port that was free a moment ago: nothing listens there now.
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            format!("http://{}", listener.local_addr().expect("address"))
        };
        let dir = std::env::temp_dir().join(format!(
            "kubesched-from-cluster-{}-{test}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let kubeconfig = format!(
            "apiVersion: v1
kind: Config
current-context: fake
clusters:
- name: fake-cluster
  cluster: {{server: 'http://{addr}'}}
- name: closed-cluster
  cluster: {{server: '{closed}'}}
contexts:
- name: fake
  context: {{cluster: fake-cluster, namespace: default}}
- name: unreachable
  context: {{cluster: closed-cluster}}
",
            addr = server.addr()
        );
        let path = dir.join("kubeconfig.yaml");
        std::fs::write(&path, kubeconfig).expect("write kubeconfig");
        Cluster {
            server,
            _runtime: runtime,
            kubeconfig: path.to_string_lossy().into_owned(),
            dir,
            closed,
        }
    }

    /// Two nodes; a bound pod in namespace `data` (labelled `team: data`) filling most
    /// of n1; three pending pods: one that fits on n2 only, one that fits nowhere, one
    /// that must be beside the bound pod (pod affinity through a namespaceSelector);
    /// and a Service and a PodDisruptionBudget.
    fn with_workload(test: &str) -> Cluster {
        let c = Cluster::start(test);
        let s = &c.server;
        s.add_node(FakeApiServer::node("n1", "4", "8Gi"));
        s.add_node(FakeApiServer::node("n2", "2", "4Gi"));
        s.apply_object(&object::<Namespace>(json!({
            "metadata": {"name": "default"}
        })));
        s.apply_object(&object::<Namespace>(json!({
            "metadata": {"name": "data", "labels": {"team": "data"}}
        })));
        s.add_pod(object(json!({
            "metadata": {"name": "db", "namespace": "data", "labels": {"app": "db"}},
            "spec": {"nodeName": "n1", "containers": [container("3")]},
            "status": {"phase": "Running"}
        })));
        s.add_pod(object(json!({
            "metadata": {"name": "fits", "labels": {"app": "web"}},
            "spec": {"containers": [container("1500m")]}
        })));
        s.add_pod(object(json!({
            "metadata": {"name": "huge"},
            "spec": {"containers": [container("8")]}
        })));
        s.add_pod(object(json!({
            "metadata": {"name": "near-db"},
            "spec": {
                "containers": [container("100m")],
                "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "namespaceSelector": {"matchLabels": {"team": "data"}},
                    "topologyKey": "kubernetes.io/hostname"
                }]}}
            }
        })));
        s.apply_object(&object::<Service>(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
        })));
        s.apply_object(&object::<PodDisruptionBudget>(json!({
            "metadata": {"name": "db", "namespace": "data"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}
        })));
        c
    }

    /// Runs `kubesched ARGS... --from-cluster --kubeconfig KUBECONFIG`.
    fn kubesched(&self, args: &[&str]) -> Output {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--from-cluster", "--kubeconfig", &self.kubeconfig]);
        kubesched(&all)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write");
        path.to_string_lossy().into_owned()
    }

    /// The API server saw list requests only: no binding, event, status patch,
    /// deletion or lease.
    fn assert_nothing_written(&self) {
        let requests = self.server.requests();
        assert!(!requests.is_empty());
        for (method, target) in &requests {
            assert_eq!(method, "GET", "{method} {target}");
            assert!(!target.contains("watch="), "{target}");
        }
        assert!(self.server.bindings().is_empty());
        assert!(self.server.events().is_empty());
        assert!(self.server.deleted_through_api().is_empty());
        for pod in ["default/fits", "default/huge", "default/near-db"] {
            assert_eq!(self.server.node_of(pod), None, "{pod}");
        }
    }
}

fn object<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

fn container(cpu: &str) -> Value {
    json!({"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}})
}

/// `kubesched ARGS...`, with no kubeconfig or in-cluster configuration from the
/// environment.
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kubesched"));
    command
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT");
    command
}

fn kubesched(args: &[&str]) -> Output {
    command(args).output().expect("run kubesched")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2, nothing on stdout, one line on stderr, containing every needle.
fn assert_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(stdout(o).is_empty(), "stdout: {}", stdout(o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("kubesched: error: --from-cluster: "),
        "{err}"
    );
    for n in needles {
        assert!(err.contains(n), "{err:?} lacks {n:?}");
    }
}

fn jsonl(o: &Output) -> Vec<Value> {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

const HUGE: &str = "0/2 nodes are available: 2 Insufficient cpu.";

#[test]
fn pending_pods_of_a_live_cluster_are_simulated_and_explained() {
    let c = Cluster::with_workload("simulate");
    let name = format!("cluster http://{} (context fake)", c.server.addr());

    // The decisions, in the conformance format: `fits` fits on n2 only (n1 has 1 CPU
    // left), `huge` nowhere, `near-db` only beside `db` on n1 (its namespaceSelector
    // matches the `data` Namespace read from the cluster).
    let o = c.kubesched(&["simulate", "--context", "fake", "--format", "jsonl"]);
    assert_eq!(
        jsonl(&o),
        [
            json!({"pod": "default/fits", "scheduler": "default-scheduler", "node": "n2",
                   "rejected": {"n1": ["Insufficient cpu"]}, "scores": {}}),
            json!({"pod": "default/huge", "scheduler": "default-scheduler", "node": null,
                   "message": HUGE,
                   "rejected": {"n1": ["Insufficient cpu"], "n2": ["Insufficient cpu"]},
                   "scores": {}}),
            json!({"pod": "default/near-db", "scheduler": "default-scheduler", "node": "n1",
                   "rejected": {"n2": ["node(s) didn't match pod affinity rules"]},
                   "scores": {}}),
        ]
    );
    let default_config = "configuration: built-in default (kube-scheduler's default profile; a cluster holds no KubeSchedulerConfiguration, give yours with --config)";
    assert_eq!(
        stderr(&o),
        format!(
            "kubesched: note: read {name}: 2 Node(s), 2 Namespace(s), 4 Pod(s), 1 Service(s), 1 PodDisruptionBudget(s)\nkubesched: note: {default_config}\nkubesched: note: kube-scheduler v1.36.1 behaviour (the API server is v1.36.1)\n"
        )
    );

    // The flag overrides the API server's version.
    let o = c.kubesched(&[
        "simulate",
        "--context",
        "fake",
        "--format",
        "jsonl",
        "--kubernetes-version",
        "1.35",
    ]);
    assert_eq!(jsonl(&o).len(), 3);
    assert!(
        stderr(&o).ends_with(
            "kubesched: note: kube-scheduler v1.35.4 behaviour (--kubernetes-version)\n"
        ),
        "{}",
        stderr(&o)
    );

    // The table says which configuration was used; the current context is the default.
    let o = c.kubesched(&["simulate"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "# {default_config}
POD              SCHEDULER          NODE     REASON
default/fits     default-scheduler  n2       the only feasible node
default/huge     default-scheduler  Pending  {HUGE}
default/near-db  default-scheduler  n1       the only feasible node
"
        )
    );

    // The pending pod that fits nowhere, explained node by node.
    let o = c.kubesched(&["simulate", "--explain", "default/huge"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "Pod default/huge (scheduler default-scheduler)
  pending: {HUGE}
  n1    rejected by NodeResourcesFit: Insufficient cpu
          Insufficient cpu: the pod requests 8; 3 of the node's 4 allocatable is requested, 1 free (more than the whole node has: preemption cannot help)
  n2    rejected by NodeResourcesFit: Insufficient cpu
          Insufficient cpu: the pod requests 8; 1500m of the node's 2 allocatable is requested, 500m free (more than the whole node has: preemption cannot help)
"
        )
    );

    // $KUBECONFIG is read when --kubeconfig is not given.
    let o = command(&["simulate", "--from-cluster", "--format", "jsonl"])
        .env("KUBECONFIG", &c.kubeconfig)
        .output()
        .expect("run kubesched");
    assert_eq!(jsonl(&o).len(), 3);
    assert!(stderr(&o).contains(&name), "{}", stderr(&o));

    c.assert_nothing_written();
}

#[test]
fn config_add_and_files_apply_to_a_live_cluster() {
    let c = Cluster::with_workload("whatif");
    let config = format!(
        "{}/tests/data/whatif-config.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let extra = c.write(
        "extra.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: extra}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: 400m}}}]}\n",
    );
    // --config replaces the default profile (NodeResourcesFit only: `near-db`'s
    // affinity is not checked, and it goes to n1, the least allocated); --add pods come
    // after the cluster's pending pods.
    let o = c.kubesched(&["simulate", "--config", &config, "--add", &extra]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(format!("# configuration: {config} (given with --config)").as_str())
    );
    let rows: Vec<(&str, &str)> = lines
        .skip(1)
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let pod = words.next()?;
            Some((pod, words.nth(1)?))
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("default/fits", "n2"),
            ("default/huge", "Pending"),
            ("default/near-db", "n1"),
            ("default/extra", "n1"),
        ]
    );

    // Scenario files are read after the cluster: a third, larger node takes `fits`
    // (least allocated) and `huge`; `near-db` still has to be beside `db`.
    let node = c.write(
        "n3.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n3}\nstatus: {allocatable: {cpu: '16', memory: 32Gi, pods: '110'}}\n",
    );
    let o = c.kubesched(&["simulate", &node, "--format", "jsonl"]);
    let decisions: Vec<(Value, Value)> = jsonl(&o)
        .into_iter()
        .map(|d| (d["pod"].clone(), d["node"].clone()))
        .collect();
    assert_eq!(
        decisions,
        [
            (json!("default/fits"), json!("n3")),
            (json!("default/huge"), json!("n3")),
            (json!("default/near-db"), json!("n1")),
        ]
    );

    // capacity and rollout read the cluster the same way.
    let worker = format!(
        "{}/tests/data/whatif-worker-pod.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = c.kubesched(&["capacity", &worker, "--format", "jsonl"]);
    let answer = jsonl(&o).remove(0);
    // After the pending pods: n1 has 900m CPU left, n2 500m: one copy of 500m each.
    assert_eq!(answer["count"], 2, "{answer}");
    assert_eq!(answer["nodes"], json!({"n1": 1, "n2": 1}));
    let deployment = c.write(
        "api.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n    spec: {containers: [{name: c, image: api, resources: {requests: {cpu: 100m}}}]}\n",
    );
    let o = c.kubesched(&["rollout", &deployment, "--format", "jsonl"]);
    // A line per step, then the result.
    let lines = jsonl(&o);
    assert_eq!(lines[0]["scheduled"], json!({"n1": 1}), "{}", stdout(&o));
    assert_eq!(
        lines.last().unwrap()["result"],
        "Complete",
        "{}",
        stdout(&o)
    );

    c.assert_nothing_written();
}

#[test]
fn unreadable_kubeconfig_unknown_context_and_unreachable_server() {
    let c = Cluster::start("errors");
    let missing = c.dir.join("missing.yaml");
    let missing = missing.to_string_lossy();
    assert_error(
        &kubesched(&["simulate", "--from-cluster", "--kubeconfig", &missing]),
        &[&format!("kubeconfig {missing}: cannot read: ")],
    );
    let garbled = c.write("garbled.yaml", "clusters: [\n");
    assert_error(
        &kubesched(&["simulate", "--from-cluster", "--kubeconfig", &garbled]),
        &[&format!(
            "kubeconfig {garbled}: failed to parse kubeconfig YAML: "
        )],
    );
    assert_error(
        &c.kubesched(&["simulate", "--context", "nope"]),
        &[&format!(
            "kubeconfig {}: no context \"nope\" (its contexts: fake, unreachable)",
            c.kubeconfig
        )],
    );
    let worker = format!(
        "{}/tests/data/whatif-worker-pod.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let started = Instant::now();
    assert_error(
        &c.kubesched(&["capacity", &worker, "--context", "unreachable"]),
        &[&format!(
            "cluster {} (context unreachable): cannot list nodes: ",
            c.closed
        )],
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    // Neither a kubeconfig nor a service account.
    let o = command(&["simulate", "--from-cluster"])
        .env("KUBECONFIG", missing.as_ref())
        .output()
        .expect("run kubesched");
    assert_error(
        &o,
        &[
            &format!("no cluster to read: kubeconfig $KUBECONFIG ({missing}): cannot read: "),
            "; and not in a cluster: ",
        ],
    );
    assert!(c.server.requests().is_empty());
}

/// The storage objects are read from the cluster and decide where a pod with a claim
/// goes; a kind the server does not serve is one warning, and the rest is simulated.
#[test]
fn claims_are_read_from_the_cluster_and_a_kind_not_served_is_a_warning() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use k8s_openapi::api::storage::v1::StorageClass;
    let c = Cluster::start("storage");
    let s = &c.server;
    s.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    s.add_node(FakeApiServer::node("n2", "4", "8Gi"));
    s.apply_object(&object::<StorageClass>(json!({
        "metadata": {"name": "local-ssd"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"
    })));
    s.apply_object(&object::<PersistentVolume>(json!({
        "metadata": {"name": "local-n2"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local-ssd", "local": {"path": "/mnt/ssd"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}},
        "status": {"phase": "Available"}
    })));
    s.apply_object(&object::<PersistentVolumeClaim>(json!({
        "metadata": {"name": "data-db-0", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-ssd",
            "resources": {"requests": {"storage": "10Gi"}}}
    })));
    s.add_pod(object(json!({
        "metadata": {"name": "db-0"},
        "spec": {"containers": [container("100m")],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]}
    })));
    s.refuse("resourceslices", 404);

    let o = c.kubesched(&["simulate", "--format", "jsonl"]);
    let lines = jsonl(&o);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["node"], "n2", "{}", lines[0]);
    let err = stderr(&o);
    assert!(
        err.contains(": 2 Node(s), 1 Pod(s), 1 PersistentVolume(s), 1 PersistentVolumeClaim(s), 1 StorageClass(s)\n"),
        "{err}"
    );
    assert!(
        err.contains("kubesched: warning: --from-cluster: ResourceSlice objects left out: the server does not serve resource.k8s.io/v1 resourceslices; pods that need them are simulated as if there were none\n"),
        "{err}"
    );
    assert_eq!(err.matches("warning").count(), 1, "{err}");

    let o = c.kubesched(&["simulate", "--explain", "db-0"]);
    assert!(
        stdout(&o).contains("          claim data-db-0: no Available PV of class local-ssd with >= 10Gi on this node, and class local-ssd does not provision volumes (kubernetes.io/no-provisioner)\n"),
        "{}",
        stdout(&o)
    );
    c.assert_nothing_written();
}

/// `kubesched record` until Ctrl-C: the file is complete (every line whole), holds the
/// cluster at the start and a pod created while it recorded, and `kubesched replay`
/// reads it.
#[test]
fn record_stops_on_ctrl_c_with_a_complete_trace_that_replays() {
    let c = Cluster::with_workload("record");
    let trace = c.dir.join("recorded.jsonl");
    let trace_arg = trace.to_string_lossy().into_owned();
    let mut child = command(&["record", "-o", &trace_arg, "--kubeconfig", &c.kubeconfig])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start kubesched record");
    let contains = |text: &str| {
        std::fs::read_to_string(&trace).is_ok_and(|t| t.contains(text) && t.ends_with('\n'))
    };
    let wait_for = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !contains(what) {
            assert!(Instant::now() < deadline, "{what} never recorded");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("\"near-db\"");
    c.server.add_pod(object(json!({
        "metadata": {"name": "late"},
        "spec": {"containers": [container("100m")]}
    })));
    wait_for("\"late\"");
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(interrupted.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "kubesched record did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err).ok();
    assert!(status.success(), "{err}");
    assert!(err.contains("change(s) over"), "{err}");
    let text = std::fs::read_to_string(&trace).expect("trace");
    assert!(text.ends_with('\n'));
    let out = kubesched(&["replay", &trace_arg, "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = jsonl(&out);
    let summary = &lines.last().expect("the summary")["summary"];
    // fits, huge, near-db and late arrive; huge fits nowhere.
    assert_eq!(summary["pods"]["arrived"], 4, "{summary}");
    assert_eq!(summary["pods"]["pending"], 1, "{summary}");
    // Lists and watches only.
    for (method, target) in c.server.requests() {
        assert_eq!(method, "GET", "{method} {target}");
    }
    assert!(c.server.bindings().is_empty() && c.server.events().is_empty());
}
