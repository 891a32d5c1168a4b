//! Pods bound per second against the loopback API server: 1,000 nodes and 5,000 pods
//! (`cargo run --release -p kubesched-kube --example loopback_throughput [NODES PODS]`).
//! Prints the figure; asserts nothing about time.

use std::time::{Duration, Instant};

use kubesched_config::KubeSchedulerConfiguration;
use kubesched_kube::Runtime;
use kubesched_kube::testing::FakeApiServer;

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let nodes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let pods: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let server = FakeApiServer::start().await;
    for i in 0..nodes {
        server.add_node(FakeApiServer::node(&format!("node-{i}"), "32", "128Gi"));
    }
    let text = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: my-scheduler
";
    let config = KubeSchedulerConfiguration::from_yaml_str(text, "bench.yaml")?.config;
    let running = Runtime::new(server.client(), config).start().await?;
    let start = Instant::now();
    for i in 0..pods {
        server.add_pod(FakeApiServer::pod(
            &format!("pod-{i}"),
            "my-scheduler",
            "100m",
        ));
    }
    let created = start.elapsed();
    let deadline = start + Duration::from_secs(600);
    while server.bound_count() < pods && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = start.elapsed();
    let bound = server.bound_count();
    println!(
        "{nodes} nodes, {pods} pods: {bound} bound in {:.2}s = {:.0} pods/s (pods created in {:.2}s)",
        took.as_secs_f64(),
        bound as f64 / took.as_secs_f64(),
        created.as_secs_f64()
    );
    let metrics = running.metrics().encode();
    for line in metrics.lines().filter(|l| {
        l.contains("_sum{")
            || l.contains("_count{")
            || l.starts_with("scheduler_schedule_attempts_total")
    }) {
        println!("{line}");
    }
    running.stop().await;
    Ok(())
}
