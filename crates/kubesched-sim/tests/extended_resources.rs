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
