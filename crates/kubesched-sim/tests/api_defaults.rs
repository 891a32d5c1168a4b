//! A scenario written by hand is read as the API server stores it: the output for
//! `data/api-defaults.yaml` (a node without allocatable, a pod with limits only, host
//! network ports, pod-level limits) is kube-scheduler v1.35.4's, line for line, as the
//! oracle printed it into `data/api-defaults.expected.jsonl`.

use std::path::Path;

use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate};

#[test]
fn hand_written_objects_get_the_api_servers_defaults() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let text = std::fs::read_to_string(dir.join("api-defaults.yaml")).unwrap();
    let expected = std::fs::read_to_string(dir.join("api-defaults.expected.jsonl")).unwrap();
    let scenario = scenario::load(&[Source {
        name: "api-defaults.yaml".into(),
        text,
    }])
    .unwrap();
    let sim = simulate(&scenario, &v1_35()).unwrap();
    let actual = output::jsonl(&sim.results);
    let pairs = expected.lines().zip(actual.lines());
    for (i, (e, a)) in pairs.enumerate() {
        assert_eq!(a, e, "line {}", i + 1);
    }
    assert_eq!(actual.lines().count(), expected.lines().count());
}

/// The expected lines are kube-scheduler v1.35.4's.
fn v1_35() -> SimulationOptions {
    SimulationOptions {
        features: kubesched_framework::Features::new(kubesched_framework::KubernetesVersion::V1_35),
        ..Default::default()
    }
}
