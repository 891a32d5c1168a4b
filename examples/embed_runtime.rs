//! Embed kubesched's runtime with a custom plugin: a Filter that keeps pods off nodes
//! labelled `maintenance=true`, enabled in a `my-scheduler` profile.
//!
//! `cargo run --example embed_runtime` runs it against a loopback API server it starts
//! itself and prints where the pods went; `cargo run --example embed_runtime -- --cluster`
//! uses your kubeconfig (or the in-cluster account) and runs until Ctrl-C.

use std::sync::Arc;
use std::time::Duration;

use kubesched::framework::{
    Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, Registry, Status,
};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_kube::Runtime;
use kubesched_kube::testing::FakeApiServer;

struct NoMaintenance;

impl Plugin for NoMaintenance {
    fn name(&self) -> &str {
        "NoMaintenance"
    }
    kubesched::framework::extension_points!(Filter);
}

impl FilterPlugin for NoMaintenance {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        match node.label("maintenance") {
            Some("true") => Status::new(
                Code::UnschedulableAndUnresolvable,
                "node(s) are in maintenance",
            ),
            _ => Status::success(),
        }
    }
}

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: my-scheduler
  plugins:
    filter:
      enabled:
      - name: NoMaintenance
";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut plugins = Registry::new();
    plugins.register("NoMaintenance", |_args, _handle| {
        Ok(Arc::new(NoMaintenance))
    })?;
    let config = KubeSchedulerConfiguration::from_yaml_str(CONFIG, "embedded")?.config;

    if std::env::args().any(|a| a == "--cluster") {
        let client = kube::Client::try_default().await?;
        let running = Runtime::new(client, config)
            .with_plugins(plugins)?
            .start()
            .await?;
        tokio::signal::ctrl_c().await?;
        running.stop().await;
        return Ok(());
    }

    let server = FakeApiServer::start().await;
    let mut busy = FakeApiServer::node("node-a", "4", "8Gi");
    busy.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("maintenance".into(), "true".into());
    server.add_node(busy);
    server.add_node(FakeApiServer::node("node-b", "4", "8Gi"));
    for i in 0..3 {
        server.add_pod(FakeApiServer::pod(
            &format!("web-{i}"),
            "my-scheduler",
            "100m",
        ));
    }
    let running = Runtime::new(server.client(), config)
        .with_plugins(plugins)?
        .start()
        .await?;
    for _ in 0..500 {
        if server.bound_count() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for i in 0..3 {
        let key = format!("default/web-{i}");
        println!(
            "{key} -> {}",
            server.node_of(&key).unwrap_or_else(|| "(pending)".into())
        );
    }
    running.stop().await;
    Ok(())
}
