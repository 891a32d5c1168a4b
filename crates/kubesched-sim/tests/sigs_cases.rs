//! Runs every case of `conformance/cases-sigs/` (the repository's own: scheduler-plugins'
//! Coscheduling and CapacityScheduling, expected lines derived from its source, each case saying which
//! function each line follows) as `kubesched simulate --plugins sigs --preemption
//! --format jsonl` runs it, and compares each line field by field.

#[path = "common/lines.rs"]
mod lines;

use std::path::{Path, PathBuf};

use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate_with};
use serde_json::Value;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/cases-sigs")
}

fn run_case(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let expected_text = std::fs::read_to_string(path.with_extension("expected.jsonl"))
        .map_err(|e| e.to_string())?;
    let source = Source {
        name: path.display().to_string(),
        text,
    };
    let scenario = scenario::load(&[source]).map_err(|e| format!("load: {e}"))?;
    let options = SimulationOptions {
        preemption: true,
        ..Default::default()
    };
    let mut registry = kubesched_plugins::in_tree_registry();
    registry
        .merge(kubesched_plugins_sigs::registry())
        .map_err(|e| format!("registry: {e:?}"))?;
    let sim =
        simulate_with(&scenario, &options, &registry).map_err(|e| format!("simulate: {e}"))?;
    let actual: Vec<Value> = sim.results.iter().map(output::to_json).collect();
    lines::compare(&expected_text, &actual)
}

#[test]
fn coscheduling_cases_agree_with_the_source() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("conformance/cases-sigs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    cases.sort();
    // Pinned, so that a case that goes missing fails here.
    assert_eq!(cases.len(), 12, "cases in conformance/cases-sigs");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| run_case(c).err().map(|e| format!("{}: {e}", c.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
