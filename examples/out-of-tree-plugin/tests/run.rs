//! `my-scheduler run` with the two plugins, as the second scheduler of a real cluster:
//! etcd and kube-apiserver started by kubesched-envtest (binaries from
//! `KUBEBUILDER_ASSETS`, `KUBESCHED_REALCLUSTER` or `../shared/realcluster`), the
//! scenario's nodes and pods created through kubectl, and `my-scheduler run` binding
//! them with its `my-scheduler` profile. Without binaries the test says it skipped,
//! and passes, unless `KUBESCHED_REQUIRE_REALCLUSTER` is set (`.ci/run` sets it).
//!
//! Needs the `runtime` feature: `cargo test --features runtime --test run`.

#![cfg(feature = "runtime")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kubesched_envtest::ControlPlane;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// etcd + kube-apiserver, and `my-scheduler run` against them; both stopped when
/// dropped, also while a failing test unwinds.
struct Cluster {
    plane: ControlPlane,
    state: PathBuf,
    scheduler: Option<Child>,
}

impl Cluster {
    /// The control plane, or `None` when the test skips (said on standard error).
    fn up() -> Option<Cluster> {
        let state = Path::new(env!("CARGO_TARGET_TMPDIR")).join("realcluster-my-scheduler");
        let plane = kubesched_envtest::start_or_skip("my-scheduler's run test", &state, &[])?;
        Some(Cluster {
            state: plane.state.clone(),
            plane,
            scheduler: None,
        })
    }

    fn kubeconfig(&self) -> PathBuf {
        self.plane.kubeconfig.clone()
    }

    /// `kubectl ARGS` against the control plane; its standard output.
    fn kubectl(&self, args: &[&str]) -> String {
        let out = Command::new(self.plane.kubectl())
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .output()
            .expect("run kubectl");
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts `my-scheduler run --config CONFIG` against the control plane, its log in
    /// the state directory.
    fn start_scheduler(&mut self, config: &Path) {
        let log = std::fs::File::create(self.state.join("my-scheduler.log")).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_my-scheduler"))
            .arg("run")
            .arg("--config")
            .arg(config)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(["--secure-port", "0", "--leader-elect=false"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start my-scheduler run");
        self.plane.track(child.id());
        self.scheduler = Some(child);
    }

    fn scheduler_log(&self) -> String {
        std::fs::read_to_string(self.state.join("my-scheduler.log")).unwrap_or_default()
    }

    /// Polls `probe` every 200 ms until it gives a value, failing after `secs` with
    /// `what` and the scheduler's log.
    fn until<T>(&self, secs: u64, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = probe() {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {secs}s; my-scheduler's log:\n{}",
                self.scheduler_log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Before the control plane (dropped after this) stops.
        if let Some(mut child) = self.scheduler.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// scenario.yaml's documents: (its KubeSchedulerConfiguration, the Kubernetes objects),
/// as an operator would split them into a config file and the cluster's objects.
fn config_and_objects() -> (String, String) {
    let scenario = std::fs::read_to_string(dir().join("scenario.yaml")).expect("scenario.yaml");
    let (mut config, mut objects) = (String::new(), String::new());
    for doc in scenario.split("\n---\n") {
        if doc.contains("kind: KubeSchedulerConfiguration") {
            config = doc.to_string();
        } else {
            objects.push_str(doc);
            objects.push_str("\n---\n");
        }
    }
    assert!(!config.is_empty(), "scenario.yaml has no configuration");
    (config, objects)
}

/// The events (events.k8s.io/v1) about `pod` with `reason`: (reportingController, note).
fn events(cluster: &Cluster, pod: &str, reason: &str) -> Vec<(String, String)> {
    let list: serde_json::Value = serde_json::from_str(&cluster.kubectl(&[
        "get",
        "events.v1.events.k8s.io",
        "-n",
        "default",
        "-o",
        "json",
    ]))
    .expect("events as JSON");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["reason"] == reason && e["regarding"]["name"] == pod)
        .map(|e| {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            (text(&e["reportingController"]), text(&e["note"]))
        })
        .collect()
}

#[test]
fn run_binds_the_scenario_with_the_plugins() {
    let Some(mut cluster) = Cluster::up() else {
        return;
    };
    let (config, objects) = config_and_objects();
    let config_file = cluster.state.join("my-scheduler-config.yaml");
    let objects_file = cluster.state.join("objects.yaml");
    std::fs::write(&config_file, config).expect("write the configuration");
    std::fs::write(&objects_file, objects).expect("write the objects");
    // Nodes keep the status they are created with (there is no kubelet here).
    cluster.kubectl(&[
        "create",
        "--validate=false",
        "-f",
        objects_file.to_str().expect("utf-8 path"),
    ]);
    cluster.start_scheduler(&config_file);

    let node_of = |pod: &str| {
        let node = cluster.kubectl(&["get", "pod", pod, "-o", "jsonpath={.spec.nodeName}"]);
        (!node.is_empty()).then_some(node)
    };
    // The same decisions as `my-scheduler simulate scenario.yaml`: ZoneAllowlist keeps
    // web in zone a, where PreferSsd picks a-ssd; cache goes to the roomiest SSD node.
    let web = cluster.until(60, "web bound", || node_of("web"));
    assert_eq!(web, "a-ssd", "{}", cluster.scheduler_log());
    let cache = cluster.until(60, "cache bound", || node_of("cache"));
    assert_eq!(cache, "b-ssd", "{}", cluster.scheduler_log());
    let scheduled = cluster.until(30, "web's Scheduled event", || {
        events(&cluster, "web", "Scheduled").into_iter().next()
    });
    assert_eq!(
        scheduled,
        (
            "my-scheduler".to_string(),
            "Successfully assigned default/web to a-ssd".to_string()
        )
    );
    // batch asks for a zone no node is in: ZoneAllowlist's reason, in kube-scheduler's
    // message, on the pod's FailedScheduling event.
    let failed = cluster.until(30, "batch's FailedScheduling event", || {
        events(&cluster, "batch", "FailedScheduling")
            .into_iter()
            .next()
    });
    assert_eq!(failed.0, "my-scheduler");
    assert!(
        failed.1.starts_with(
            "0/3 nodes are available: 3 node(s) were not in the pod's example.com/zones."
        ),
        "{failed:?}"
    );
    assert_eq!(node_of("batch"), None);
}
