//! The recorder against the loopback API server: the objects at the start at time 0,
//! then each change with its time; a watch that falls behind (410 Gone) lists again
//! and writes what it missed; and what it writes is a trace `kubesched replay` reads.

use std::time::Duration;

use kubesched_kube::record::{Recorded, record};
use kubesched_kube::testing::FakeApiServer;
use kubesched_replay::TraceReader;
use serde_json::Value;

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
    // The watches start after the lists.
    tokio::time::sleep(Duration::from_millis(300)).await;
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
