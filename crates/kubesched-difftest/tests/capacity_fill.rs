//! `kubesched capacity` fills nodes with copies when the plugins treat the pod node by
//! node (kubesched_framework::Scheduler::fill_nodes). Filling must give exactly what
//! scheduling the copies one at a time gives: the count, the copies per node and the
//! failed attempt, reasons included. This runs both on every pending pod of every
//! conformance case, and of 300 generated scenarios (runs of identical pods, mixed
//! pods, spreads, affinities, taints, claims), and requires identical answers.

use std::path::{Path, PathBuf};

use kubesched_framework::{Features, KubernetesVersion};
use kubesched_sim::SimulationOptions;
use kubesched_sim::capacity::{Capacity, CopyOptions, Placement, Stop, capacity};
use kubesched_sim::scenario::{self, Scenario, Source};

/// Copies scheduled one at a time stop here: a case that reaches it is not compared.
const ONE_AT_A_TIME_LIMIT: usize = 1500;

#[derive(Default)]
struct Tally {
    compared: usize,
    filled: usize,
    capped: usize,
    failures: Vec<String>,
}

impl Tally {
    /// Runs every pending pod of `scenario` as the pod to copy, both ways.
    fn scenario(&mut self, name: &str, scenario: &Scenario, options: &SimulationOptions) {
        let registry = kubesched_plugins::in_tree_registry();
        let pending = scenario
            .pods
            .iter()
            .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_none()));
        for pod in pending.take(4) {
            let run = |fill_nodes: bool| -> Result<Capacity, String> {
                capacity(
                    scenario,
                    pod,
                    options,
                    &registry,
                    CopyOptions {
                        limit: None,
                        one_at_a_time_limit: Some(ONE_AT_A_TIME_LIMIT),
                        fill_nodes,
                    },
                )
                .map_err(|e| e.to_string())
            };
            let pod_name = pod.metadata.name.as_deref().unwrap_or("?");
            let (filled, one_by_one) = match (run(true), run(false)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(a), Err(b)) if a == b => continue,
                (a, b) => {
                    self.failures.push(format!(
                        "{name} ({pod_name}): one run failed: {:?} / {:?}",
                        a.err(),
                        b.err()
                    ));
                    continue;
                }
            };
            if matches!(one_by_one.stop, Stop::LimitReached(_)) {
                self.capped += 1;
                continue;
            }
            self.compared += 1;
            if filled.placement == Placement::NodeByNode {
                self.filled += 1;
            }
            let same = filled.count == one_by_one.count
                && filled.per_node == one_by_one.per_node
                && filled.stop == one_by_one.stop;
            if !same {
                self.failures.push(format!(
                    "{name} ({pod_name}):\n  filled:       {}\n  one at a time: {}",
                    filled.json(),
                    one_by_one.json()
                ));
            }
        }
    }
}

fn conformance_cases() -> Vec<(PathBuf, bool, KubernetesVersion)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let mut out = Vec::new();
    for (folder, preemption, version) in [
        ("cases", false, KubernetesVersion::V1_35),
        ("cases-default", false, KubernetesVersion::V1_35),
        ("cases-preemption", true, KubernetesVersion::V1_35),
        ("cases-volumes", false, KubernetesVersion::V1_35),
        ("cases-dra", false, KubernetesVersion::V1_35),
        ("v1.36/cases-default", false, KubernetesVersion::V1_36),
    ] {
        let dir = root.join(folder);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "yaml")
                    && !p.to_string_lossy().ends_with(".expected.yaml")
            })
            .collect();
        files.sort();
        out.extend(files.into_iter().map(|f| (f, preemption, version)));
    }
    out
}

#[test]
fn filling_nodes_gives_what_one_copy_at_a_time_gives() {
    let mut tally = Tally::default();
    let cases = conformance_cases();
    assert!(cases.len() > 200, "{} conformance cases", cases.len());
    for (path, preemption, version) in &cases {
        let text = std::fs::read_to_string(path).expect("case");
        let name = path.display().to_string();
        let Ok(scenario) = scenario::load(&[Source {
            name: name.clone(),
            text,
        }]) else {
            continue;
        };
        let options = SimulationOptions {
            preemption: *preemption,
            features: Features::new(*version),
            ..Default::default()
        };
        tally.scenario(&name, &scenario, &options);
    }
    for seed in 0..300u64 {
        let docs = kubesched_difftest::generate::generate(9_100_000 + seed);
        let text = kubesched_difftest::generate::to_yaml(&docs, "");
        let name = format!("generated seed {}", 9_100_000 + seed);
        let Ok(scenario) = scenario::load(&[Source {
            name: name.clone(),
            text,
        }]) else {
            continue;
        };
        let options = SimulationOptions {
            preemption: seed % 2 == 1,
            features: Features::new(KubernetesVersion::V1_35),
            ..Default::default()
        };
        tally.scenario(&name, &scenario, &options);
    }
    println!(
        "{} pods compared ({} filled node by node), {} reached the one-at-a-time limit",
        tally.compared, tally.filled, tally.capped
    );
    assert!(
        tally.failures.is_empty(),
        "{} disagreement(s):\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
    // The comparison means something only if both ways ran often.
    assert!(tally.filled >= 200, "only {} filled", tally.filled);
    assert!(
        tally.compared - tally.filled >= 50,
        "only {} one at a time",
        tally.compared - tally.filled
    );
}
