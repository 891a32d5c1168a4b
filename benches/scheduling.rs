//! Criterion benchmarks shaped like kube-scheduler's scheduler_perf SchedulingBasic:
//! nodes with 4 cpu, 32Gi and 110 pods in 10 zones, pods asking 100m-500m cpu and
//! 256Mi-1Gi memory, scheduled with the core plugin set (and, at 5,000 nodes, with
//! kube-scheduler's default profile). Each iteration schedules a batch of pods on a
//! fresh copy of the cluster. Per-plugin benchmarks are in `plugins.rs`.
//!
//! `cargo bench` runs them; CI only proves they build (`cargo bench --no-run`).

use std::sync::Arc;

mod support;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Container, Node, NodeSpec, Pod, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched::config::KubeSchedulerConfiguration;
use kubesched::framework::{
    Framework, Handle, NodeSearch, Outcome, PodInfo, Scheduler, SchedulerOptions, Snapshot,
};

const CORE_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeUnschedulable}, {name: NodeName},
                {name: TaintToleration, weight: 3}, {name: NodeResourcesFit, weight: 1},
                {name: ImageLocality, weight: 1}, {name: DefaultBinder}]
      disabled: [{name: '*'}]
";

fn node(i: usize) -> Arc<Node> {
    Arc::new(support::basic_node(i, NodeSpec::default()))
}

fn pod(i: usize) -> Arc<PodInfo> {
    let cpu = format!("{}m", 100 + (i * 37) % 401);
    let memory = format!("{}Mi", 256 + (i * 53) % 769);
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(format!("pod-{i}")),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("registry.k8s.io/pause:3.10".into()),
                resources: Some(ResourceRequirements {
                    requests: Some(support::quantities(&[("cpu", &cpu), ("memory", &memory)])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            scheduler_name: Some("default-scheduler".into()),
            ..Default::default()
        }),
        status: None,
    };
    Arc::new(PodInfo::new(Arc::new(pod)).expect("valid pod"))
}

/// The core plugin set (SchedulingBasic) or, with `None`, kube-scheduler's default
/// profile.
fn scheduler(nodes: usize, search: NodeSearch, config: Option<&str>) -> Scheduler {
    let config = match config {
        Some(yaml) => {
            KubeSchedulerConfiguration::from_yaml_str(yaml, "bench")
                .unwrap()
                .config
        }
        None => KubeSchedulerConfiguration::default_config(),
    };
    let registry = kubesched::plugins::in_tree_registry();
    let profiles = config
        .profiles
        .iter()
        .map(|p| Framework::new(p, &registry, &Handle::default()).unwrap())
        .collect();
    let (snapshot, _) = Snapshot::new((0..nodes).map(node), Vec::new()).unwrap();
    let options = SchedulerOptions {
        node_search: search,
        ..Default::default()
    };
    Scheduler::new(profiles, snapshot, options).unwrap()
}

fn scheduling_basic(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduling_basic");
    group.sample_size(10);
    let pods: Vec<Arc<PodInfo>> = (0..100).map(pod).collect();
    for (nodes, search, name, config) in [
        (500, NodeSearch::Exhaustive, "exact", Some(CORE_CONFIG)),
        (5000, NodeSearch::Exhaustive, "exact", Some(CORE_CONFIG)),
        (5000, NodeSearch::Adaptive, "upstream", Some(CORE_CONFIG)),
        (5000, NodeSearch::Adaptive, "default-profile-upstream", None),
    ] {
        group.bench_with_input(
            BenchmarkId::new(name, format!("{nodes}n-100p")),
            &nodes,
            |b, _| {
                b.iter_batched(
                    || scheduler(nodes, search, config),
                    |mut s| {
                        for p in &pods {
                            assert!(matches!(s.schedule_one(p), Outcome::Scheduled { .. }));
                        }
                    },
                    criterion::BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

/// Exact incremental scheduling (`Scheduler::set_incremental`) against the full pass,
/// on pods that come in runs of ten identical ones (as ReplicaSets make them), with
/// score tables and, `ranked`, reading only the decisions
/// (`Scheduler::set_decisions_only`); and
/// `Scheduler::fill_nodes` (what `kubesched capacity` does) against scheduling the same
/// copies one at a time.
fn incremental_and_fill(c: &mut Criterion) {
    let mut group = c.benchmark_group("incremental_and_fill");
    group.sample_size(10);
    let runs: Vec<Arc<PodInfo>> = (0..100).map(|i| pod(i / 10)).collect();
    for (name, incremental, decisions_only) in [
        ("exact", false, false),
        ("incremental", true, false),
        ("ranked", true, true),
    ] {
        group.bench_function(BenchmarkId::new(name, "5000n-100p-runs-of-10"), |b| {
            b.iter_batched(
                || {
                    let mut s = scheduler(5000, NodeSearch::Exhaustive, Some(CORE_CONFIG));
                    s.set_incremental(incremental);
                    s.set_decisions_only(decisions_only);
                    s
                },
                |mut s| {
                    for p in &runs {
                        assert!(matches!(s.schedule_one(p), Outcome::Scheduled { .. }));
                    }
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    let copy = pod(7);
    group.bench_function(BenchmarkId::new("fill_nodes", "500n"), |b| {
        b.iter_batched(
            || scheduler(500, NodeSearch::Exhaustive, Some(CORE_CONFIG)),
            |mut s| {
                let filled = s.fill_nodes(&copy, None).expect("node-local pod");
                assert!(filled.iter().sum::<usize>() > 0);
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.bench_function(BenchmarkId::new("one_at_a_time", "500n-1000-copies"), |b| {
        b.iter_batched(
            || scheduler(500, NodeSearch::Exhaustive, Some(CORE_CONFIG)),
            |mut s| {
                for _ in 0..1000 {
                    assert!(matches!(s.schedule_one(&copy), Outcome::Scheduled { .. }));
                }
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, scheduling_basic, incremental_and_fill);
criterion_main!(benches);
