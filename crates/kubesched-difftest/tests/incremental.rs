//! Exact incremental scheduling (kubesched_framework::incremental) must give what the
//! full pass gives, line for line, scores and reasons included: this simulates every
//! conformance case (both versions) and 300 generated scenarios (runs of identical
//! pods, mixed pods, spreads, affinities, taints, claims) both ways and compares the
//! JSON lines; and checks that the kept verdicts were used, so that the comparison
//! means something.

mod support;

use kubesched_framework::KubernetesVersion;
use kubesched_sim::scenario::Scenario;
use kubesched_sim::{SimulationOptions, output, prepare, simulate};
use serde_json::Value;

/// The JSON lines of a simulation, incremental or not.
fn lines(scenario: &Scenario, options: &SimulationOptions, incremental: bool) -> Vec<String> {
    let options = SimulationOptions {
        incremental,
        ..options.clone()
    };
    match simulate(scenario, &options) {
        Ok(sim) => sim
            .results
            .iter()
            .map(|r| output::to_json(r).to_string())
            .collect(),
        Err(e) => vec![format!("error: {e}")],
    }
}

/// Nodes whose verdicts a run took from what was kept.
fn reused(scenario: &Scenario, options: &SimulationOptions) -> u64 {
    let registry = kubesched_plugins::in_tree_registry();
    let options = SimulationOptions {
        incremental: true,
        ..options.clone()
    };
    let Ok(mut prepared) = prepare(scenario, &options, &registry) else {
        return 0;
    };
    prepared.run_decisions();
    prepared
        .scheduler
        .incremental_stats()
        .map_or(0, |s| s.nodes_reused)
}

/// Each pending pod followed by `n - 1` copies of it (`NAME-r1`, ...).
fn in_runs(docs: Vec<Value>, n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for doc in docs {
        let pending = doc["kind"] == "Pod" && doc["spec"]["nodeName"].is_null();
        out.push(doc.clone());
        if pending {
            for r in 1..n {
                let mut copy = doc.clone();
                if let Some(name) = doc["metadata"]["name"].as_str() {
                    copy["metadata"]["name"] = Value::from(format!("{name}-r{r}"));
                }
                out.push(copy);
            }
        }
    }
    out
}

#[test]
fn incremental_scheduling_gives_the_full_passs_lines() {
    let mut compared = 0;
    let mut reused_nodes = 0;
    let mut failures = Vec::new();
    let mut check = |name: &str, scenario: &Scenario, options: &SimulationOptions| {
        let full = lines(scenario, options, false);
        let incremental = lines(scenario, options, true);
        compared += 1;
        reused_nodes += reused(scenario, options);
        if full != incremental {
            let at = full
                .iter()
                .zip(&incremental)
                .position(|(a, b)| a != b)
                .unwrap_or(full.len().min(incremental.len()));
            failures.push(format!(
                "{name}: line {}:\n  full:        {}\n  incremental: {}",
                at + 1,
                full.get(at).map_or("(none)", String::as_str),
                incremental.get(at).map_or("(none)", String::as_str)
            ));
        }
    };
    let mut folders = Vec::new();
    for (version, prefix) in [
        (KubernetesVersion::V1_35, ""),
        (KubernetesVersion::V1_36, "v1.36/"),
    ] {
        for folder in [
            "cases",
            "cases-default",
            "cases-preemption",
            "cases-volumes",
            "cases-dra",
        ] {
            folders.push((format!("{prefix}{folder}"), version));
        }
    }
    let folders: Vec<(&str, KubernetesVersion)> =
        folders.iter().map(|(f, v)| (f.as_str(), *v)).collect();
    let cases = support::conformance(&folders);
    assert!(cases.len() > 400, "{} conformance cases", cases.len());
    // Odd seeds: every pending pod comes as a run of four identical pods, as
    // ReplicaSets make them, so that verdicts are kept and used.
    let generated = support::generated(9_200_000..9_200_300, |seed, docs| {
        if seed % 2 == 1 {
            in_runs(docs, 4)
        } else {
            docs
        }
    });
    for case in cases.iter().chain(&generated) {
        check(&case.name, &case.scenario, &case.options);
    }
    println!("{compared} scenarios compared; {reused_nodes} node verdicts reused");
    assert!(
        failures.is_empty(),
        "{} disagreement(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(reused_nodes >= 1000, "only {reused_nodes} verdicts reused");
}
