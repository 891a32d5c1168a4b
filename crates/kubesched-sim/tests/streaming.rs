//! The streaming paths (`simulate_each` into `output::write_jsonl`, and
//! `Prepared::run_each_attempt` into `output::write_jsonl_attempt` and
//! `Table::push_attempt`, as `kubesched simulate` runs it) against the collected one
//! (`simulate`, each result printed as its `serde_json::Value`, as the command printed
//! before it streamed): the same bytes for every conformance case, and
//! `Detail::Rejected` / `Detail::None` are those lines with `scores` (and `rejected`)
//! taken out.

use std::path::{Path, PathBuf};

use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{Detail, SimulationOptions, output, prepare, simulate, simulate_each};
use serde_json::Value;

fn cases() -> Vec<(PathBuf, bool)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let mut all = Vec::new();
    for (folder, preemption) in [
        ("cases", false),
        ("cases-default", false),
        ("cases-preemption", true),
    ] {
        let dir = root.join(folder);
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        cases.sort();
        assert!(
            cases.len() >= 20,
            "{}: only {} cases",
            dir.display(),
            cases.len()
        );
        all.extend(cases.into_iter().map(|c| (c, preemption)));
    }
    all
}

fn load(path: &Path) -> scenario::Scenario {
    let source = Source {
        name: path.display().to_string(),
        text: std::fs::read_to_string(path).unwrap(),
    };
    scenario::load(&[source]).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn streamed(scenario: &scenario::Scenario, preemption: bool, detail: Detail) -> String {
    let options = SimulationOptions {
        preemption,
        detail,
        ..Default::default()
    };
    let mut out = Vec::new();
    let summary = simulate_each(scenario, &options, |r| {
        output::write_jsonl(&mut out, &r, detail)
    })
    .unwrap()
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), summary.results);
    text
}

/// The lines `kubesched simulate --format jsonl` prints: straight from each attempt.
fn streamed_attempts(scenario: &scenario::Scenario, preemption: bool, detail: Detail) -> String {
    let options = SimulationOptions {
        preemption,
        detail,
        ..Default::default()
    };
    let registry = kubesched_plugins::in_tree_registry();
    let prepared = prepare(scenario, &options, &registry).unwrap();
    let mut out = Vec::new();
    let n = prepared
        .run_each_attempt(|a| output::write_jsonl_attempt(&mut out, &a, detail))
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), n);
    text
}

/// The table `kubesched simulate` prints: a row from each attempt.
fn streamed_table(scenario: &scenario::Scenario, preemption: bool) -> String {
    let options = SimulationOptions {
        preemption,
        ..Default::default()
    };
    let registry = kubesched_plugins::in_tree_registry();
    let prepared = prepare(scenario, &options, &registry).unwrap();
    let mut table = output::Table::default();
    prepared
        .run_each_attempt(|a| {
            table.push_attempt(&a);
            Ok::<(), std::convert::Infallible>(())
        })
        .unwrap();
    table.render()
}

#[test]
fn streaming_prints_the_bytes_the_collected_results_printed() {
    let mut checked = 0;
    for (path, preemption) in cases() {
        let scenario = load(&path);
        let options = SimulationOptions {
            preemption,
            ..Default::default()
        };
        let collected = simulate(&scenario, &options).unwrap();
        let before: String = collected
            .results
            .iter()
            .map(|r| output::to_json(r).to_string() + "\n")
            .collect();
        assert!(!before.is_empty(), "{}: no result", path.display());
        let after = streamed(&scenario, preemption, Detail::All);
        assert_eq!(after, before, "{}", path.display());
        let direct = streamed_attempts(&scenario, preemption, Detail::All);
        assert_eq!(direct, before, "{} (from the attempts)", path.display());
        assert_eq!(
            streamed_table(&scenario, preemption),
            output::table(&collected.results),
            "{} (table)",
            path.display()
        );
        assert_eq!(
            output::jsonl(&collected.results),
            before,
            "{}",
            path.display()
        );
        checked += 1;
    }
    assert!(checked > 100, "only {checked} cases");
}

#[test]
fn less_detail_is_the_same_lines_without_the_per_node_fields() {
    for (path, preemption) in cases() {
        let scenario = load(&path);
        let all = streamed(&scenario, preemption, Detail::All);
        for (detail, dropped) in [
            (Detail::Rejected, &["scores"][..]),
            (Detail::None, &["scores", "rejected"][..]),
        ] {
            let expected: String = all
                .lines()
                .map(|l| {
                    let mut v: Value = serde_json::from_str(l).unwrap();
                    for key in dropped {
                        v.as_object_mut().unwrap().remove(*key);
                    }
                    v.to_string() + "\n"
                })
                .collect();
            let actual = streamed(&scenario, preemption, detail);
            assert_eq!(actual, expected, "{} {detail:?}", path.display());
            let direct = streamed_attempts(&scenario, preemption, detail);
            assert_eq!(direct, expected, "{} {detail:?} (attempts)", path.display());
        }
    }
}

#[test]
fn a_sink_error_stops_the_run() {
    let (path, _) = &cases()[0];
    let scenario = load(path);
    let mut seen = 0;
    let stopped = simulate_each(&scenario, &SimulationOptions::default(), |_| {
        seen += 1;
        Err("reader went away")
    })
    .unwrap();
    assert_eq!(stopped, Err("reader went away"));
    assert_eq!(seen, 1);
}
