//! A custom plugin in a few lines: a Filter that keeps pods off nodes labelled
//! `maintenance=true` and a Score that prefers nodes labelled `disktype=ssd`, registered
//! beside the in-tree plugins and enabled in a second profile, `ssd-scheduler`, through
//! an ordinary KubeSchedulerConfiguration. Pods of both profiles are then scheduled on
//! one cluster.
//!
//! Run it with `cargo run --example custom_plugin`.

use std::sync::Arc;

use kubesched::framework::{
    ActionType, ClusterEvent, Code, CycleState, EventResource, FilterPlugin, NodeInfo, Plugin,
    PluginError, PodInfo, Registry, ScorePlugin, Status,
};
use kubesched::sim::scenario::Scenario;
use kubesched::sim::{PodOutcome, PodResult, SimulationOptions, output, simulate_with};
use serde::Deserialize;

/// Rejects nodes under maintenance, and prefers SSD nodes.
struct DiskAware {
    /// The score an SSD node gets (from the plugin's args).
    ssd_score: i64,
}

/// The plugin's args, decoded strictly from `pluginConfig` (unknown fields are errors).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DiskAwareArgs {
    ssd_score: Option<i64>,
}

impl Plugin for DiskAware {
    fn name(&self) -> &str {
        "DiskAware"
    }
    kubesched::framework::extension_points!(Filter, Score);
    // A pod this plugin rejected can only fit once a node is added or relabelled
    // (`kubesched run` retries it on those events only).
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
        )]
    }
}

impl FilterPlugin for DiskAware {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        if node.label("maintenance") == Some("true") {
            Status::new(
                Code::UnschedulableAndUnresolvable,
                "node(s) were under maintenance",
            )
        } else {
            Status::success()
        }
    }
}

impl ScorePlugin for DiskAware {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(if node.label("disktype") == Some("ssd") {
            self.ssd_score
        } else {
            0
        })
    }
}

/// The registry: every in-tree plugin, plus ours.
pub fn registry() -> Registry {
    let mut registry = kubesched::plugins::in_tree_registry();
    registry
        .register("DiskAware", |args, _handle| {
            let args: DiskAwareArgs = kubesched::plugins::decode_args("DiskAware", args)?;
            let ssd_score = args.ssd_score.unwrap_or(100);
            if !(0..=100).contains(&ssd_score) {
                return Err(PluginError::new(format!(
                    "ssdScore: must be between 0 and 100, got {ssd_score}"
                )));
            }
            Ok(Arc::new(DiskAware { ssd_score }))
        })
        .expect("DiskAware is not an in-tree name");
    registry
}

/// The cluster and the configuration, as plain Kubernetes YAML.
pub const SCENARIO: &str = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeUnschedulable}, {name: TaintToleration, weight: 3},
                {name: NodeResourcesFit}, {name: DefaultBinder}]
      disabled: [{name: '*'}]
- schedulerName: ssd-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeUnschedulable}, {name: TaintToleration, weight: 3},
                {name: NodeResourcesFit}, {name: DiskAware, weight: 5}, {name: DefaultBinder}]
      disabled: [{name: '*'}]
  pluginConfig:
  - name: DiskAware
    args: {ssdScore: 80}
---
apiVersion: v1
kind: Node
metadata: {name: hdd-1, labels: {disktype: hdd}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: ssd-1, labels: {disktype: ssd, maintenance: "true"}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: ssd-2, labels: {disktype: ssd}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: nginx, resources: {requests: {cpu: 500m, memory: 256Mi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: database}
spec:
  schedulerName: ssd-scheduler
  containers: [{name: db, image: postgres, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"#;

/// Schedules the scenario's pods with both profiles.
pub fn run() -> anyhow::Result<Vec<PodResult>> {
    // From files: `Scenario::from_files(["cluster.yaml"])?`.
    let scenario = Scenario::from_text("custom_plugin example", SCENARIO)?;
    let sim = simulate_with(&scenario, &SimulationOptions::default(), &registry())?;
    Ok(sim.results)
}

#[allow(dead_code)]
fn main() -> anyhow::Result<()> {
    let results = run()?;
    print!("{}", output::table(&results));
    println!();
    print!(
        "{}",
        output::explain(&results, "default/database").unwrap_or_default()
    );
    for r in &results {
        if let PodOutcome::Scheduled(node) = &r.outcome {
            println!("{} -> {node} (by {})", r.pod, r.scheduler);
        }
    }
    Ok(())
}
