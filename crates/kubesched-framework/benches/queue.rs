//! The scheduling queue under a failure storm: 1,000 pods popped and done while
//! 10,000 pods wait unschedulable and 1,000 back off. Each pop first moves the pods
//! whose backoff ended and the pods unschedulable for too long, so what that costs
//! with many pods waiting is what this measures.
//!
//! `cargo bench -p kubesched-framework --bench queue`; CI only proves it builds.

use std::collections::BTreeSet;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use kubesched_framework::build::PodBuilder;
use kubesched_framework::queue::{FakeClock, QueueOptions, SchedulingQueue};
use kubesched_framework::{PodInfo, QueuedPodInfo};

fn pods(prefix: &str, count: usize) -> Vec<Arc<PodInfo>> {
    (0..count)
        .map(|i| {
            PodBuilder::new("default", format!("{prefix}-{i}"))
                .cpu_millis(100)
                .pod_info()
                .expect("valid pod")
        })
        .collect()
}

fn queue_pops(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue");
    group.sample_size(10);
    let by_priority =
        |a: &QueuedPodInfo, b: &QueuedPodInfo| a.pod_info.priority() > b.pod_info.priority();
    let waiting = pods("waiting", 11_000);
    let active = pods("active", 1_000);
    let rejected = BTreeSet::from(["NodeResourcesFit".to_string()]);
    group.bench_function(
        BenchmarkId::new("pop", "1000-pods-10000-unschedulable"),
        |b| {
            b.iter_batched(
                || {
                    let clock = Arc::new(FakeClock::new());
                    let mut q = SchedulingQueue::new(QueueOptions::default(), clock, by_priority);
                    for p in &waiting {
                        q.add(p.clone());
                    }
                    for i in 0..waiting.len() {
                        let p = q.pop().expect("queued");
                        if i < 10_000 {
                            q.add_unschedulable(p, rejected.clone());
                        } else {
                            q.add_backoff(p);
                        }
                    }
                    for p in &active {
                        q.add(p.clone());
                    }
                    q
                },
                |mut q| {
                    for _ in 0..active.len() {
                        let p = q.pop().expect("active");
                        q.done(p.key());
                    }
                },
                criterion::BatchSize::LargeInput,
            )
        },
    );
    group.finish();
}

criterion_group!(benches, queue_pops);
criterion_main!(benches);
