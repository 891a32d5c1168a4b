//! `kubesched bench --mode exact` runs `Prepared::run_decisions`, the benchmark's
//! decisions-only loop; it must place every pod exactly where `simulate` does.

use std::path::{Path, PathBuf};

use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{Decision, PodOutcome, SimulationOptions, prepare, simulate};

fn cases(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance")
        .join(folder);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn decisions_only_loop_matches_simulate_on_every_case() {
    let registry = kubesched_plugins::in_tree_registry();
    let options = SimulationOptions::default();
    let mut checked = 0;
    for case in cases("cases").into_iter().chain(cases("cases-default")) {
        let text = std::fs::read_to_string(&case).unwrap();
        let source = Source {
            name: case.display().to_string(),
            text,
        };
        let scenario = scenario::load(&[source]).unwrap();
        let full = simulate(&scenario, &options).unwrap();
        let mut prepared = prepare(&scenario, &options, &registry).unwrap();
        let names: Vec<String> = prepared
            .scheduler
            .snapshot()
            .nodes()
            .iter()
            .map(|n| n.name().to_string())
            .collect();
        let decisions = prepared.run_decisions();
        assert_eq!(decisions.len(), full.results.len(), "{}", case.display());
        for (d, r) in decisions.iter().zip(&full.results) {
            let same = match (d, &r.outcome) {
                (Decision::Scheduled(i), PodOutcome::Scheduled(node)) => &names[*i] == node,
                (Decision::Unschedulable, PodOutcome::Unschedulable(_)) => true,
                (Decision::Ignored, PodOutcome::Ignored) => true,
                (Decision::Gated, PodOutcome::Gated(_)) => true,
                _ => false,
            };
            assert!(
                same,
                "{}: pod {}: {d:?} vs {:?}",
                case.display(),
                r.pod,
                r.outcome
            );
        }
        checked += 1;
    }
    assert!(checked >= 113, "only {checked} cases checked");
}
