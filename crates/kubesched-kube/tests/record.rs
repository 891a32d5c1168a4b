//! The recorder against the loopback API server: the objects at the start at time 0,
//! then each change with its time; a watch that falls behind (410 Gone) lists again
//! and writes what it missed; the gang and quota kinds are recorded as the others, and
//! one the server does not serve, or does not let the recorder watch, is left out with
//! one warning; and what it writes is a trace `kubesched replay` reads.

use std::time::Duration;

use kubesched_kube::record::{Recorded, record};
use kubesched_kube::testing::FakeApiServer;
use kubesched_replay::TraceReader;
use serde_json::{Value, json};

/// Records `server` while `act` changes it, then stops: the trace's lines and the
/// recorder's counts.
async fn recording(
    server: &FakeApiServer,
    act: impl AsyncFnOnce(),
) -> (Vec<Value>, Recorded, String) {
    let client = server.client();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut out = Vec::new();
        let r = record(&client, &mut out, "test", None, async {
            let _ = stopped.await;
        })
        .await;
        (r, out)
    });
    // The watches start after the lists, the pods' last.
    let start = std::time::Instant::now();
    while !server
        .requests()
        .iter()
        .any(|(_, t)| t.starts_with("/api/v1/pods?") && t.contains("watch=true"))
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no watch of pods"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    act().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = stop.send(());
    let (recorded, out) = task.await.expect("task");
    let text = String::from_utf8(out).expect("utf-8");
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    (lines, recorded.expect("record"), text)
}

fn summary(line: &Value) -> String {
    if let Some(o) = line.get("apply") {
        format!(
            "apply {} {}",
            o["kind"].as_str().unwrap_or(""),
            o["metadata"]["name"].as_str().unwrap_or("")
        )
    } else if let Some(d) = line.get("delete") {
        format!(
            "delete {} {}",
            d["kind"].as_str().unwrap_or(""),
            d["name"].as_str().unwrap_or("")
        )
    } else {
        "header".into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_at_time_0_then_every_change_with_its_time() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.add_pod(FakeApiServer::pod("a", "default-scheduler", "100m"));
    let (lines, recorded, text) = recording(&server, async || {
        server.add_pod(FakeApiServer::pod("b", "default-scheduler", "100m"));
        server.delete_pod("default/a");
        server.add_node(FakeApiServer::node("n2", "2", "4Gi"));
    })
    .await;
    let mut what: Vec<String> = lines.iter().map(summary).collect();
    // Each kind has its watch: a kind's changes keep their order, kinds interleave as
    // they arrive.
    what[3..].sort();
    assert_eq!(
        what,
        [
            "header",
            "apply Node n1",
            "apply Pod a",
            "apply Node n2",
            "apply Pod b",
            "delete Pod a"
        ]
    );
    let pods: Vec<String> = lines[3..]
        .iter()
        .map(summary)
        .filter(|l| l.contains("Pod"))
        .collect();
    assert_eq!(pods, ["apply Pod b", "delete Pod a"]);
    assert_eq!(lines[0]["kubeschedTrace"], 1);
    assert_eq!(
        (lines[1]["time"].as_f64(), lines[2]["time"].as_f64()),
        (Some(0.0), Some(0.0))
    );
    let later: Vec<f64> = lines[3..]
        .iter()
        .map(|l| l["time"].as_f64().unwrap())
        .collect();
    assert!(
        later.iter().all(|t| *t > 0.0) && later.windows(2).all(|w| w[0] <= w[1]),
        "{later:?}"
    );
    assert!(lines[2]["apply"]["metadata"].get("managedFields").is_none());
    assert_eq!((recorded.at_start, recorded.changes), (2, 3));
    // The trace reads, and replays over an empty cluster.
    let empty = kubesched_sim::scenario::Scenario::default();
    let events = kubesched_replay::check(&empty, &mut TraceReader::new("t", text.as_bytes()))
        .expect("reads");
    assert_eq!(events, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_falls_behind_lists_again_and_writes_what_it_missed() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    let (lines, _, _) = recording(&server, async || {
        server.add_node_unwatched(FakeApiServer::node("missed", "2", "4Gi"));
        server.expire_watches();
        tokio::time::sleep(Duration::from_millis(300)).await;
    })
    .await;
    let what: Vec<String> = lines.iter().map(summary).collect();
    assert_eq!(what, ["header", "apply Node n1", "apply Node missed"]);
}

/// A scheduler-plugins PodGroup, with `managedFields` as a server keeps them.
fn sigs_pod_group(name: &str, min_member: u32) -> Value {
    json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default",
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
        "spec": {"minMember": min_member}
    })
}

fn elastic_quota(name: &str, max_cpu: &str) -> Value {
    json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"min": {"cpu": "1"}, "max": {"cpu": max_cpu}}
    })
}

fn v1alpha2_pod_group(name: &str, min_count: u32) -> Value {
    json!({
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    })
}

/// `apply KIND NAME apiVersion` / `delete KIND NAME apiVersion` for the gang and
/// quota kinds' lines.
fn gang_summary(line: &Value) -> Option<String> {
    let (what, o) = match (line.get("apply"), line.get("delete")) {
        (Some(o), _) => ("apply", o),
        (_, Some(d)) => ("delete", d),
        _ => return None,
    };
    let kind = o["kind"].as_str().unwrap_or("");
    matches!(kind, "PodGroup" | "Workload" | "ElasticQuota").then(|| {
        let name = o["metadata"]["name"].as_str().or(o["name"].as_str());
        format!(
            "{what} {kind} {} {}",
            name.unwrap_or(""),
            o["apiVersion"].as_str().unwrap_or("")
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_groups_and_elastic_quotas_are_recorded_at_the_start_and_as_they_change() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.apply_value(sigs_pod_group("train", 2));
    server.apply_value(elastic_quota("team-a", "4"));
    server.apply_value(v1alpha2_pod_group("gang", 3));
    let (lines, recorded, text) = recording(&server, async || {
        server.apply_value(sigs_pod_group("train", 3));
        server.apply_value(elastic_quota("team-b", "2"));
        server.delete_value(
            "scheduling.x-k8s.io/v1alpha1",
            "ElasticQuota",
            "default/team-a",
        );
        server.delete_value("scheduling.k8s.io/v1alpha2", "PodGroup", "default/gang");
    })
    .await;
    assert!(recorded.warnings.is_empty(), "{:?}", recorded.warnings);
    let at_start: Vec<String> = lines
        .iter()
        .filter(|l| l["time"] == 0)
        .filter_map(gang_summary)
        .collect();
    assert_eq!(
        at_start,
        [
            "apply PodGroup gang scheduling.k8s.io/v1alpha2",
            "apply PodGroup train scheduling.x-k8s.io/v1alpha1",
            "apply ElasticQuota team-a scheduling.x-k8s.io/v1alpha1",
        ]
    );
    let mut later: Vec<String> = lines
        .iter()
        .filter(|l| l["time"].as_f64().is_some_and(|t| t > 0.0))
        .filter_map(gang_summary)
        .collect();
    later.sort();
    assert_eq!(
        later,
        [
            "apply ElasticQuota team-b scheduling.x-k8s.io/v1alpha1",
            "apply PodGroup train scheduling.x-k8s.io/v1alpha1",
            "delete ElasticQuota team-a scheduling.x-k8s.io/v1alpha1",
            "delete PodGroup gang scheduling.k8s.io/v1alpha2",
        ]
    );
    // As the server returns them, without managedFields; the change is the new spec.
    let train: Vec<&Value> = lines
        .iter()
        .filter_map(|l| l.get("apply"))
        .filter(|o| o["kind"] == "PodGroup" && o["metadata"]["name"] == "train")
        .collect();
    assert_eq!(train.len(), 2);
    assert!(
        train
            .iter()
            .all(|o| o["metadata"].get("managedFields").is_none())
    );
    assert_eq!(
        (&train[0]["spec"], &train[1]["spec"]),
        (&json!({"minMember": 2}), &json!({"minMember": 3}))
    );
    assert_eq!(train[1]["metadata"]["namespace"], "default");
    assert_eq!((recorded.at_start, recorded.changes), (4, 4));
    // The trace reads, and replays over an empty cluster.
    let empty = kubesched_sim::scenario::Scenario::default();
    let events = kubesched_replay::check(&empty, &mut TraceReader::new("t", text.as_bytes()))
        .expect("reads");
    assert_eq!(events, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_or_quota_kind_not_served_or_not_watchable_is_left_out_with_one_warning() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.add_pod(FakeApiServer::pod("a", "default-scheduler", "100m"));
    server.apply_value(sigs_pod_group("train", 2));
    server.apply_value(elastic_quota("team-a", "4"));
    server.refuse("podgroups.v1alpha2.scheduling.k8s.io", 404);
    server.refuse("workloads.v1alpha2.scheduling.k8s.io", 404);
    server.refuse("workloads.v1alpha1.scheduling.k8s.io", 404);
    server.refuse_watch("elasticquotas.v1alpha1.scheduling.x-k8s.io", 403);
    let (lines, recorded, _) = recording(&server, async || {
        server.apply_value(sigs_pod_group("train", 3));
        server.add_pod(FakeApiServer::pod("b", "default-scheduler", "100m"));
    })
    .await;
    assert_eq!(
        recorded.warnings,
        [
            "PodGroup objects left out: the server does not serve scheduling.k8s.io/v1alpha2 podgroups; the trace has none",
            "Workload objects left out: the server does not serve scheduling.k8s.io/v1alpha2 workloads; the trace has none",
            "Workload objects left out: the server does not serve scheduling.k8s.io/v1alpha1 workloads; the trace has none",
            "ElasticQuota objects left out: not allowed to watch elasticquotas (scheduling.x-k8s.io/v1alpha1): elasticquotas.scheduling.x-k8s.io is forbidden: User \"system:serviceaccount:kube-system:reader\" cannot watch resource \"elasticquotas\" in API group \"scheduling.x-k8s.io\" at the cluster scope; the trace has none",
        ]
    );
    // The rest is recorded, at the start and as it changes; the quota not at all.
    let mut what: Vec<String> = lines.iter().map(summary).collect();
    what[4..].sort();
    assert_eq!(
        what,
        [
            "header",
            "apply Node n1",
            "apply PodGroup train",
            "apply Pod a",
            "apply Pod b",
            "apply PodGroup train",
        ]
    );
    // Each refused kind was asked once: one warning, no retries.
    let requests = server.requests();
    for path in [
        "/apis/scheduling.k8s.io/v1alpha2/podgroups?",
        "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas?",
    ] {
        let asked = requests.iter().filter(|(_, t)| t.starts_with(path)).count();
        assert!(asked <= 2, "{path}: {asked} requests: {requests:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_35_pods_workload_reference_is_recorded() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    let pod = |name: &str| {
        json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "workloadRef": {"name": "job", "podGroup": "workers"},
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]
            }
        })
    };
    server.add_pod_value(pod("at-start"));
    let (lines, _, text) = recording(&server, async || server.add_pod_value(pod("later"))).await;
    let references: Vec<(&str, &Value)> = lines
        .iter()
        .filter_map(|l| l.get("apply"))
        .filter(|o| o["kind"] == "Pod")
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap_or(""),
                &o["spec"]["workloadRef"],
            )
        })
        .collect();
    let want = json!({"name": "job", "podGroup": "workers"});
    assert_eq!(references, [("at-start", &want), ("later", &want)]);
    // The trace, workloadRef and all, reads.
    let empty = kubesched_sim::scenario::Scenario::default();
    kubesched_replay::check(&empty, &mut TraceReader::new("t", text.as_bytes()))
        .expect("the trace reads");
}
