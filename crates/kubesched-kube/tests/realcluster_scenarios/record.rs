//! `kubesched record` against the real API server, then `kubesched replay` of what it
//! wrote: the replayed cluster ends as the recorded one (the same nodes, the same pods,
//! each on the same node or pending), while kubesched's runtime scheduled the real one.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams};
use kubesched_kube::testing::FakeApiServer;
use kubesched_replay::{Record, ReplayOptions, TraceReader};
use kubesched_sim::scenario::{self, Source};
use serde_json::Value;

use super::support::realcluster::Cluster;
use super::{create_nodes, create_pods, node_of, ready_node, scheduler_config, start_kubesched};

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: rec-sched
";

/// A pod of `rec-sched` that only `node` can take (by hostname), or none.
fn pinned(name: &str, cpu: &str, node: Option<&str>) -> Pod {
    let mut p = FakeApiServer::pod(name, "rec-sched", cpu);
    if let (Some(node), Some(spec)) = (node, p.spec.as_mut()) {
        spec.node_selector = Some(BTreeMap::from([(
            "kubernetes.io/hostname".to_string(),
            node.to_string(),
        )]));
    }
    p
}

fn labelled(name: &str, cpu: &str) -> Node {
    let mut n = ready_node(name, cpu, "8Gi");
    n.metadata.labels = Some(BTreeMap::from([(
        "kubernetes.io/hostname".to_string(),
        name.to_string(),
    )]));
    n
}

pub(super) async fn record_and_replay(cluster: &mut Cluster) {
    let admin = cluster.admin().await;
    let path = cluster.state.join("recorded.jsonl");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (started, recording) = tokio::sync::oneshot::channel::<()>();
    let recorder = {
        let client = admin.clone();
        let path = path.clone();
        tokio::spawn(async move {
            let mut out = std::io::BufWriter::new(std::fs::File::create(&path).expect("trace"));
            let stop = async {
                let _ = stopped.await;
            };
            kubesched_kube::record::record_with_start_hook(
                &client,
                &mut out,
                "realcluster test",
                None,
                stop,
                |_| {
                    let _ = started.send(());
                },
            )
            .await
        })
    };
    // What follows is recorded as changes, not taken for the starting state.
    recording.await.expect("the recorder lists the cluster");
    let running = start_kubesched(cluster, scheduler_config(CONFIG)).await;
    create_nodes(&admin, vec![labelled("rec-a", "2"), labelled("rec-b", "2")]).await;
    for (pod, node) in [("rec-1", "rec-a"), ("rec-2", "rec-b"), ("rec-3", "rec-a")] {
        create_pods(&admin, vec![pinned(pod, "1", Some(node))]).await;
        assert_eq!(node_of(&admin, pod, 30).await, node);
    }
    // rec-4 fits nowhere; rec-1 goes, and rec-5 takes its place; a node comes and goes.
    create_pods(&admin, vec![pinned("rec-4", "8", None)]).await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    pods.delete("rec-1", &force).await.expect("delete rec-1");
    create_nodes(&admin, vec![labelled("rec-gone", "1")]).await;
    let nodes: Api<Node> = Api::all(admin.clone());
    nodes
        .delete("rec-gone", &DeleteParams::default())
        .await
        .expect("delete rec-gone");
    create_pods(&admin, vec![pinned("rec-5", "1", Some("rec-a"))]).await;
    assert_eq!(node_of(&admin, "rec-5", 30).await, "rec-a");
    // Let the watches deliver the last changes, then stop: the file is complete.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = stop.send(());
    let recorded = recorder.await.expect("recorder task").expect("record");
    running.stop().await;
    assert!(recorded.changes > 5, "{recorded:?}");

    let real: BTreeMap<String, Option<String>> = pods
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items
        .into_iter()
        .filter(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("rec-"))
        })
        .map(|p| {
            (
                p.metadata.name.unwrap_or_default(),
                p.spec.and_then(|s| s.node_name),
            )
        })
        .collect();
    let mut real_nodes: Vec<String> = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();

    let text = std::fs::read_to_string(&path).expect("read the trace");
    assert!(text.ends_with('\n'), "the trace ends with a whole line");
    let start = scenario::load(&[Source {
        name: "config.yaml".into(),
        text: CONFIG.into(),
    }])
    .expect("config");
    let mut checked = TraceReader::new("recorded.jsonl", text.as_bytes());
    kubesched_replay::check(&start, &mut checked).expect("the recorded trace reads");
    let options = ReplayOptions {
        final_state: true,
        ..ReplayOptions::default()
    };
    let mut documents = String::new();
    kubesched_replay::replay(
        &start,
        TraceReader::new("recorded.jsonl", text.as_bytes()),
        &options,
        &kubesched_plugins::in_tree_registry(),
        |record| {
            if let Record::Final { documents: d, .. } = record {
                documents = d;
            }
            Ok::<(), std::convert::Infallible>(())
        },
    )
    .expect("replay");
    let objects: Vec<Value> = documents
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d).expect("a document"))
        .collect();
    let name = |o: &Value| o["metadata"]["name"].as_str().unwrap_or("").to_string();
    let replayed: BTreeMap<String, Option<String>> = objects
        .iter()
        .filter(|o| o["kind"] == "Pod" && name(o).starts_with("rec-"))
        .map(|o| (name(o), o["spec"]["nodeName"].as_str().map(str::to_string)))
        .collect();
    let mut replayed_nodes: Vec<String> = objects
        .iter()
        .filter(|o| o["kind"] == "Node")
        .map(name)
        .collect();
    real_nodes.sort();
    replayed_nodes.sort();
    assert_eq!(replayed, real, "pods and their nodes: replayed, recorded");
    assert_eq!(replayed_nodes, real_nodes);
    assert_eq!(real.get("rec-4"), Some(&None));
}
