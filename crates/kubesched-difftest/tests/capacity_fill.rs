//! `kubesched capacity` fills nodes with copies when the plugins treat the pod node by
//! node (kubesched_framework::Scheduler::fill_nodes). Filling must give exactly what
//! scheduling the copies one at a time gives: the count, the copies per node and the
//! failed attempt, reasons included. This runs both on every pending pod of every
//! conformance case, and of 300 generated scenarios (runs of identical pods, mixed
//! pods, spreads, affinities, taints, claims), and requires identical answers.

mod support;

use kubesched_framework::KubernetesVersion;
use kubesched_sim::SimulationOptions;
use kubesched_sim::capacity::{Capacity, CopyOptions, Placement, Stop, capacity};
use kubesched_sim::scenario::Scenario;

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

#[test]
fn filling_nodes_gives_what_one_copy_at_a_time_gives() {
    let mut tally = Tally::default();
    let v1_35 = KubernetesVersion::V1_35;
    let cases = support::conformance(&[
        ("cases", v1_35),
        ("cases-default", v1_35),
        ("cases-preemption", v1_35),
        ("cases-volumes", v1_35),
        ("cases-dra", v1_35),
        ("v1.36/cases-default", KubernetesVersion::V1_36),
    ]);
    assert!(cases.len() > 200, "{} conformance cases", cases.len());
    let generated = support::generated(9_100_000..9_100_300, |_, docs| docs);
    for case in cases.iter().chain(&generated) {
        tally.scenario(&case.name, &case.scenario, &case.options);
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
