//! DRAExtendedResource in simulations: `tests/extended-resources/three-nodes.yaml` under
//! v1.35 (gate off: every line as kube-scheduler v1.35.4's oracle printed it), under
//! v1.36 (gate on: each pod where the real kube-scheduler v1.36.1 put it, with its
//! pending message, from running the same objects against it; the oracle cannot
//! exercise the gate), and under v1.36 with the gate turned off (v1.35's placements).

use std::path::PathBuf;

use kubesched_framework::{Features, KubernetesVersion};
use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate};
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/extended-resources")
}

fn run(features: Features) -> Vec<Value> {
    let path = dir().join("three-nodes.yaml");
    let text = std::fs::read_to_string(&path).expect("scenario");
    let scenario = scenario::load(&[Source {
        name: path.display().to_string(),
        text,
    }])
    .expect("load");
    let options = SimulationOptions {
        features,
        preemption: true,
        ..Default::default()
    };
    let sim = simulate(&scenario, &options).expect("simulate");
    sim.results.iter().map(output::to_json).collect()
}

/// Per pod: the node, or the pending message.
fn outcomes(lines: &[Value]) -> Vec<(String, String)> {
    lines
        .iter()
        .map(|l| {
            let pod = l["pod"].as_str().unwrap_or_default().to_owned();
            let outcome = match l["node"].as_str() {
                Some(n) => n.to_owned(),
                None => l["message"].as_str().unwrap_or_default().to_owned(),
            };
            (pod, outcome)
        })
        .collect()
}

fn oracle_v1_35() -> Vec<Value> {
    std::fs::read_to_string(dir().join("three-nodes.v1.35.expected.jsonl"))
        .expect("expected")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

#[test]
fn gate_off_in_v1_35_agrees_with_the_oracle() {
    let actual = run(Features::new(KubernetesVersion::V1_35));
    let expected = oracle_v1_35();
    assert_eq!(actual.len(), expected.len());
    for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
        assert_eq!(a, e, "line {}", i + 1);
    }
}

#[test]
fn gate_on_in_v1_36_places_pods_as_the_real_kube_scheduler() {
    let real = [
        ("default/p1", "n2"),
        ("default/p2", "n2"),
        ("default/p3", "n3"),
        (
            "default/p4",
            "0/3 nodes are available: 1 Insufficient example.com/gpu, 2 cannot allocate all claims. still not schedulable, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
        ),
        (
            "default/p5",
            "0/3 nodes are available: 1 Insufficient example.com/gpu, 2 cannot allocate all claims. still not schedulable, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        ),
    ];
    let actual = run(Features::new(KubernetesVersion::V1_36));
    let expected: Vec<(String, String)> = real
        .iter()
        .map(|(p, o)| (p.to_string(), o.to_string()))
        .collect();
    assert_eq!(outcomes(&actual), expected);
    // n1 has no device: the in-memory claim cannot be allocated there.
    assert_eq!(
        actual[0]["rejected"]["n1"],
        serde_json::json!(["cannot allocate all claims"])
    );
}

#[test]
fn gate_off_in_v1_36_places_pods_as_v1_35() {
    let features = Features::with_gates(KubernetesVersion::V1_36, ["DRAExtendedResource=false"])
        .expect("gates");
    assert_eq!(outcomes(&run(features)), outcomes(&oracle_v1_35()));
}

/// Pods requesting `resource` (cpu 1, memory 1Gi and one of it), named `prefix-N`.
fn pods_requesting(prefix: &str, resource: &str, count: usize) -> String {
    (1..=count)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {prefix}-{i}\n  namespace: default\n  uid: uid-{prefix}-{i}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      requests:\n        cpu: '1'\n        memory: 1Gi\n        {resource}: '1'\n      limits:\n        {resource}: '1'\n"
            )
        })
        .collect()
}

/// Exact incremental scheduling keeps a pod's verdicts and scores node by node when
/// no DeviceClass backs the extended resources it requests (here `example.com/fpga`,
/// beside the class that backs `example.com/gpu`), and leaves the backed ones to a full
/// pass: every line is the same with the cache on and off, in both versions.
#[test]
fn kept_verdicts_change_nothing_beside_a_class_backing_another_resource() {
    let mut text = std::fs::read_to_string(dir().join("three-nodes.yaml")).expect("scenario");
    text.push_str(
        "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n4\n  labels:\n    kubernetes.io/hostname: n4\nstatus:\n  allocatable:\n    cpu: '8'\n    memory: 16Gi\n    pods: '110'\n    example.com/fpga: '3'\n  conditions:\n  - type: Ready\n    status: 'True'\n",
    );
    text.push_str(&pods_requesting("fpga", "example.com/fpga", 5));
    text.push_str(&pods_requesting("gpu", "example.com/gpu", 3));
    let scenario = scenario::load(&[Source {
        name: "fpga.yaml".into(),
        text,
    }])
    .expect("load");
    for version in [KubernetesVersion::V1_35, KubernetesVersion::V1_36] {
        let lines = |incremental: bool| -> Vec<Value> {
            let options = SimulationOptions {
                features: Features::new(version),
                preemption: true,
                incremental,
                ..Default::default()
            };
            let sim = simulate(&scenario, &options).expect("simulate");
            sim.results.iter().map(output::to_json).collect()
        };
        let (kept, full) = (lines(true), lines(false));
        assert_eq!(kept.len(), 13);
        assert_eq!(kept, full, "{version:?}");
        // n4 takes three fpga pods; the last two find no room.
        let on_n4 = kept.iter().filter(|l| l["node"] == "n4").count();
        assert_eq!(on_n4, 3, "{version:?}");
        // And the fpga pods did reuse kept verdicts.
        let options = SimulationOptions {
            features: Features::new(version),
            ..Default::default()
        };
        let registry = kubesched_plugins::in_tree_registry();
        let mut prepared = kubesched_sim::prepare(&scenario, &options, &registry).expect("prepare");
        prepared.run_decisions();
        let stats = prepared
            .scheduler
            .incremental_stats()
            .expect("incremental on");
        assert!(stats.nodes_reused > 0, "{version:?}: {stats:?}");
    }
}
