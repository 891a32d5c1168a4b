//! Criterion benchmarks of `kubesched replay`: a generated day of a 500-node cluster
//! (pods of five shapes arriving with run times, drains and node replacements), replayed
//! in the timed mode, and the check pass alone; and, when `KUBESCHED_OPENB_DIR` names a
//! folder holding the openb CSVs (`openb_node_list_all_node.csv`,
//! `openb_pod_list_default.csv`, from alibaba/clusterdata's cluster-trace-gpu-v2023),
//! the openb trace imported and replayed as `kubesched replay --import openb` does.
//!
//! `cargo bench -p kubesched-replay` runs them; CI only proves they build.

use std::fmt::Write as _;

use criterion::{Criterion, criterion_group, criterion_main};
use kubesched_replay::{ReplayOptions, Summary, TraceReader, check, replay};
use kubesched_sim::scenario::Scenario;

/// A day of a cluster of `nodes` nodes with `pods` arrivals, as trace text; the same
/// arguments give the same text.
fn day(nodes: usize, pods: usize) -> String {
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut out = String::from("{\"kubeschedTrace\":1}\n");
    let node = |name: &str, cpu: u64| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{name}","labels":{{"kubernetes.io/hostname":"{name}","topology.kubernetes.io/zone":"zone-{}"}}}},"status":{{"allocatable":{{"cpu":"{cpu}m","memory":"{}Mi","pods":"110"}}}}}}"#,
            name.len() % 3,
            cpu * 4
        )
    };
    for i in 0..nodes {
        let cpu = [16_000, 64_000, 4_000][i % 3];
        let _ = writeln!(
            out,
            r#"{{"time":0,"apply":{}}}"#,
            node(&format!("node-{i:05}"), cpu)
        );
    }
    // (cpu millicores, mean run time): the cluster fills up to about 85% within hours,
    // and some pods wait for others to finish.
    let shapes = [
        (500, 21_600),
        (1000, 10_800),
        (2000, 5400),
        (4000, 3600),
        (16_000, 12_600),
    ];
    let span = 86_400.0;
    let mut replaced = nodes;
    for i in 0..pods {
        let time = span * i as f64 / pods as f64;
        let (cpu, run) = shapes[(next() % 5) as usize];
        let duration = run / 2 + next() % run;
        let _ = writeln!(
            out,
            r#"{{"time":{time:.3},"apply":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p-{i:07}","namespace":"default"}},"spec":{{"containers":[{{"name":"c","image":"app","resources":{{"requests":{{"cpu":"{cpu}m","memory":"{}Mi"}}}}}}]}}}},"duration":{duration}}}"#,
            cpu * 2
        );
        // Node churn: every 500th arrival drains a node, every 2,000th replaces one.
        if i % 500 == 250 {
            let name = format!("node-{:05}", next() as usize % nodes);
            let _ = writeln!(out, r#"{{"time":{time:.3},"drain":"{name}"}}"#);
            let _ = writeln!(out, r#"{{"time":{time:.3},"uncordon":"{name}"}}"#);
        }
        if i % 2000 == 1000 && replaced < nodes + nodes / 2 {
            let old = format!("node-{:05}", replaced - nodes);
            let new = format!("node-{replaced:05}");
            replaced += 1;
            let _ = writeln!(
                out,
                r#"{{"time":{time:.3},"delete":{{"kind":"Node","name":"{old}"}}}}"#
            );
            let _ = writeln!(
                out,
                r#"{{"time":{time:.3},"apply":{}}}"#,
                node(&new, 16_000)
            );
        }
    }
    out
}

fn replay_text(text: &str, options: &ReplayOptions) -> Summary {
    replay(
        &Scenario::default(),
        TraceReader::new("bench.jsonl", text.as_bytes()),
        options,
        &kubesched_plugins::in_tree_registry(),
        |_| Ok::<(), std::convert::Infallible>(()),
    )
    .expect("the generated trace replays")
}

fn generated(c: &mut Criterion) {
    let text = day(500, 20_000);
    let options = ReplayOptions::default();
    let summary = replay_text(&text, &options);
    println!(
        "generated day: {} events, {} attempts, {} scheduled, cpu peak {:.1}%",
        summary.events,
        summary.attempts,
        summary.scheduled,
        summary.allocation["cpu"].peak * 100.0
    );
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.bench_function("check/500-nodes-20000-pods", |b| {
        b.iter(|| {
            check(
                &Scenario::default(),
                &mut TraceReader::new("bench.jsonl", text.as_bytes()),
            )
            .unwrap()
        })
    });
    group.bench_function("timed/500-nodes-20000-pods", |b| {
        b.iter(|| replay_text(&text, &options))
    });
    group.finish();
}

fn openb(c: &mut Criterion) {
    let Some(dir) = std::env::var_os("KUBESCHED_OPENB_DIR") else {
        println!(
            "openb: skipped (set KUBESCHED_OPENB_DIR to a folder holding openb_node_list_all_node.csv and openb_pod_list_default.csv)"
        );
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("an openb CSV");
    let (nodes, pods) = (
        read("openb_node_list_all_node.csv"),
        read("openb_pod_list_default.csv"),
    );
    let options = ReplayOptions::default();
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.bench_function("openb/import-check-timed", |b| {
        b.iter(|| {
            let text = kubesched_replay::import::openb(
                &nodes,
                "nodes.csv",
                &pods,
                "pods.csv",
                &Default::default(),
            )
            .unwrap();
            check(
                &Scenario::default(),
                &mut TraceReader::new("openb", text.as_bytes()),
            )
            .unwrap();
            replay_text(&text, &options)
        })
    });
    group.finish();
}

criterion_group!(benches, generated, openb);
criterion_main!(benches);
