//! Runs every case of `conformance/cases-sigs/` (the repository's own: scheduler-plugins'
//! Coscheduling and CapacityScheduling, expected lines derived from its source, each case saying which
//! function each line follows) as `kubesched simulate --plugins sigs --preemption
//! --format jsonl` runs it, and compares each line field by field.

mod common;

use std::path::Path;

use kubesched_sim::{SimulationOptions, output, simulate_with};
use serde_json::Value;

/// The lines `kubesched simulate --plugins sigs --preemption` prints for the case at
/// `path`.
fn lines(path: &Path) -> Result<Vec<Value>, String> {
    let scenario = common::cases::load(path)?;
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
    Ok(sim.results.iter().map(output::to_json).collect())
}

#[test]
fn coscheduling_cases_agree_with_the_source() {
    common::cases::assert_agree("cases-sigs", 12, lines);
}
