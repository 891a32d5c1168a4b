//! DynamicResources behaviour the conformance cases do not cover (firstAvailable
//! scores, missing classes, ownership, network-attached allocations, CEL library
//! functions, admin access, incomplete pools, Filter errors), each scenario in
//! `tests/dra-oracle/` with the lines kube-scheduler v1.35.4's oracle printed for it.
//! Every line must agree field by field.

use std::path::{Path, PathBuf};

use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate};
use serde_json::Value;

fn run(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let expected = std::fs::read_to_string(path.with_extension("expected.jsonl"))
        .map_err(|e| e.to_string())?;
    let scenario = scenario::load(&[Source {
        name: path.display().to_string(),
        text,
    }])
    .map_err(|e| format!("load: {e}"))?;
    let sim = simulate(&scenario, &v1_35()).map_err(|e| e.to_string())?;
    let actual: Vec<Value> = sim.results.iter().map(output::to_json).collect();
    let expected: Vec<Value> = expected
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    if actual.len() != expected.len() {
        return Err(format!(
            "{} lines, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    for (i, (e, a)) in expected.iter().zip(&actual).enumerate() {
        if e != a {
            return Err(format!("line {}:\n  expected {e}\n  got      {a}", i + 1));
        }
    }
    Ok(())
}

#[test]
fn dra_scenarios_agree_with_the_oracle() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/dra-oracle");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/dra-oracle")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 11, "a scenario went missing");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| run(c).err().map(|e| format!("{}: {e}", c.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The expected lines are kube-scheduler v1.35.4's.
fn v1_35() -> SimulationOptions {
    SimulationOptions {
        features: kubesched_framework::Features::new(kubesched_framework::KubernetesVersion::V1_35),
        ..Default::default()
    }
}
