//! A batch system that embeds the scheduling framework with its own data: machines and
//! jobs come from the system's own structs (here a fixed list; in a real system a
//! database or a queue), not from YAML or an API server. They become the framework's
//! nodes and pods through `kubesched::framework::build`, one profile from kube-scheduler's
//! default configuration plus a plugin of the system's own is built from code, and each
//! job is scheduled in priority order, as kube-scheduler's queue would pop it.
//!
//! Run it with `cargo run --example embed_batch --no-default-features`: it needs
//! neither the command nor the runtime.

use std::sync::Arc;

use kubesched::config::{KubeSchedulerConfiguration, PluginRef};
use kubesched::framework::build::{NodeBuilder, PodBuilder, TaintEffect};
use kubesched::framework::{
    CycleState, Framework, Handle, NodeInfo, Outcome, Plugin, PodInfo, Scheduler, SchedulerOptions,
    ScorePlugin, Snapshot, Status,
};

/// A machine as the batch system knows it.
struct Machine {
    id: &'static str,
    rack: &'static str,
    cores: i64,
    mem_gib: i64,
    gpus: i64,
    draining: bool,
}

/// A job as the batch system knows it.
struct Job {
    user: &'static str,
    id: &'static str,
    cores: i64,
    mem_gib: i64,
    gpus: i64,
    priority: i32,
}

const GIB: i64 = 1 << 30;

/// The batch system's own policy, as a Score plugin: keep jobs on the rack of the
/// user's data (here "r1") when it fits.
struct DataLocality;

impl Plugin for DataLocality {
    fn name(&self) -> &str {
        "DataLocality"
    }
    kubesched::framework::extension_points!(Score);
}

impl ScorePlugin for DataLocality {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(if node.label("rack") == Some("r1") {
            100
        } else {
            0
        })
    }
}

/// Machines to nodes: GPUs are an extended resource and tainted, so only GPU jobs land
/// there; draining machines are cordoned.
fn node(m: &Machine) -> NodeBuilder {
    let mut node = NodeBuilder::new(m.id)
        .cpu_millis(m.cores * 1000)
        .memory_bytes(m.mem_gib * GIB)
        .label("rack", m.rack)
        .unschedulable(m.draining);
    if m.gpus > 0 {
        node = node
            .resource("nvidia.com/gpu", m.gpus)
            .taint("gpu", "", TaintEffect::NoSchedule);
    }
    node
}

/// Jobs to pods, one namespace per user.
fn pod(j: &Job) -> PodBuilder {
    let mut pod = PodBuilder::new(j.user, j.id)
        .cpu_millis(j.cores * 1000)
        .memory_bytes(j.mem_gib * GIB)
        .priority(j.priority);
    if j.gpus > 0 {
        pod = pod
            .resource("nvidia.com/gpu", j.gpus)
            .toleration("gpu", "", TaintEffect::NoSchedule);
    }
    pod
}

/// Schedules the jobs; returns each job's key and its machine (or why none).
pub fn run() -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let machines = [
        Machine {
            id: "m1",
            rack: "r1",
            cores: 16,
            mem_gib: 64,
            gpus: 0,
            draining: false,
        },
        Machine {
            id: "m2",
            rack: "r2",
            cores: 32,
            mem_gib: 128,
            gpus: 0,
            draining: false,
        },
        Machine {
            id: "g1",
            rack: "r2",
            cores: 32,
            mem_gib: 256,
            gpus: 4,
            draining: false,
        },
        Machine {
            id: "m3",
            rack: "r1",
            cores: 64,
            mem_gib: 256,
            gpus: 0,
            draining: true,
        },
    ];
    let jobs = [
        Job {
            user: "ana",
            id: "etl-1",
            cores: 8,
            mem_gib: 32,
            gpus: 0,
            priority: 10,
        },
        Job {
            user: "bo",
            id: "train-1",
            cores: 16,
            mem_gib: 64,
            gpus: 2,
            priority: 100,
        },
        Job {
            user: "ana",
            id: "etl-2",
            cores: 12,
            mem_gib: 32,
            gpus: 0,
            priority: 10,
        },
        Job {
            user: "cy",
            id: "huge",
            cores: 128,
            mem_gib: 8,
            gpus: 0,
            priority: 0,
        },
    ];

    // kube-scheduler's default profile, plus DataLocality at weight 2.
    let mut config = KubeSchedulerConfiguration::default_config();
    let profile = &mut config.profiles[0];
    profile.edit_plugins(|p| {
        p.score.enabled.push(PluginRef::weighted("DataLocality", 2));
    });
    let mut registry = kubesched::plugins::in_tree_registry();
    registry.register("DataLocality", |_args, _handle| Ok(Arc::new(DataLocality)))?;
    let framework = Framework::new(profile, &registry, &Handle::default())?;

    let (snapshot, _) = Snapshot::new(machines.iter().map(|m| node(m).node()), [])?;
    let mut scheduler = Scheduler::new(vec![framework], snapshot, SchedulerOptions::default())?;

    // Highest priority first, as PrioritySort pops them.
    let mut pods = jobs
        .iter()
        .map(|j| pod(j).pod_info())
        .collect::<Result<Vec<_>, _>>()?;
    pods.sort_by_key(|p| std::cmp::Reverse(p.priority()));
    let mut placed = Vec::new();
    for pod in &pods {
        let where_ = match scheduler.schedule_one(pod) {
            Outcome::Scheduled { node, .. } => node,
            Outcome::Unschedulable { error, .. } => format!("pending: {error}"),
            other => format!("{other:?}"),
        };
        placed.push((pod.key().to_string(), where_));
    }
    Ok(placed)
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (job, machine) in run()? {
        println!("{job:<12} {machine}");
    }
    Ok(())
}
