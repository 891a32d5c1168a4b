//! Runs every conformance case in `conformance/cases*/` (copied from kube-scheduler
//! v1.35's own results) with `--kubernetes-version 1.35`, and every case of
//! `conformance/v1.36/cases*/` (kube-scheduler v1.36's) with 1.36, through the same
//! code path as `kubesched simulate --format jsonl`, and compares each line field by
//! field.
//!
//! `conformance/known-failures.txt` lists cases that do not pass yet (one
//! `folder/name` per line, `#` comments). The test prints the list, fails on any case
//! that fails and is not listed, and fails on any listed case that now passes, so the
//! list only shrinks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kubesched_framework::{Features, KubernetesVersion};
use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate};
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn first_diff(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let keys: BTreeSet<&String> = e.keys().chain(a.keys()).collect();
            for k in keys {
                let p = format!("{path}.{k}");
                match (e.get(k), a.get(k)) {
                    (Some(ev), None) => return Some(format!("{p}: missing, expected {ev}")),
                    (None, Some(av)) => return Some(format!("{p}: unexpected {av}")),
                    (Some(ev), Some(av)) => {
                        if let Some(d) = first_diff(ev, av, &p) {
                            return Some(d);
                        }
                    }
                    (None, None) => {}
                }
            }
            None
        }
        _ if expected == actual => None,
        _ => Some(format!("{path}: expected {expected}, got {actual}")),
    }
}

/// Runs one case; `Err` describes the first difference.
fn run_case(path: &Path, preemption: bool, version: KubernetesVersion) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let expected_path = path.with_extension("expected.jsonl");
    let expected_text = std::fs::read_to_string(&expected_path).map_err(|e| e.to_string())?;
    let source = Source {
        name: path.display().to_string(),
        text,
    };
    let scenario = scenario::load(&[source]).map_err(|e| format!("load: {e}"))?;
    let options = SimulationOptions {
        preemption,
        features: Features::new(version),
        ..Default::default()
    };
    let sim = simulate(&scenario, &options).map_err(|e| format!("simulate: {e}"))?;
    let actual: Vec<Value> = sim.results.iter().map(output::to_json).collect();
    let expected: Vec<Value> = expected_text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    for (i, e) in expected.iter().enumerate() {
        let pod = e.get("pod").and_then(Value::as_str).unwrap_or("?");
        let Some(a) = actual.get(i) else {
            return Err(format!("line {}: missing (pod {pod})", i + 1));
        };
        if let Some(d) = first_diff(e, a, "") {
            return Err(format!("line {} (pod {pod}){d}", i + 1));
        }
    }
    if actual.len() > expected.len() {
        return Err(format!(
            "line {}: unexpected extra line",
            expected.len() + 1
        ));
    }
    Ok(())
}

fn known_failures() -> BTreeSet<String> {
    let path = repo_root().join("conformance/known-failures.txt");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn conformance_cases_agree_with_kube_scheduler() {
    let known = known_failures();
    if !known.is_empty() {
        println!("known failures ({}), to be fixed:", known.len());
        for k in &known {
            println!("  {k}");
        }
    }
    let mut passed = 0;
    let mut unexpected_failures = Vec::new();
    let mut fixed = Vec::new();
    let mut seen = BTreeSet::new();
    // The number of cases in each folder is pinned: a scenario or expected file that
    // goes missing fails here instead of shrinking the run.
    let v1_35 = KubernetesVersion::V1_35;
    let v1_36 = KubernetesVersion::V1_36;
    for (folder, preemption, count, version) in [
        ("cases", false, 81, v1_35),
        ("cases-default", false, 41, v1_35),
        ("cases-preemption", true, 29, v1_35),
        ("cases-volumes", false, 38, v1_35),
        ("cases-dra", false, 24, v1_35),
        ("v1.36/cases", false, 81, v1_36),
        ("v1.36/cases-default", false, 41, v1_36),
        ("v1.36/cases-preemption", true, 29, v1_36),
        ("v1.36/cases-volumes", false, 38, v1_36),
        ("v1.36/cases-dra", false, 24, v1_36),
    ] {
        let dir = repo_root().join("conformance").join(folder);
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        cases.sort();
        let without_expected: Vec<String> = cases
            .iter()
            .filter(|p| !p.with_extension("expected.jsonl").exists())
            .map(|p| p.display().to_string())
            .collect();
        assert!(
            without_expected.is_empty(),
            "scenarios without an expected file: {without_expected:?}"
        );
        assert_eq!(
            cases.len(),
            count,
            "{}: {} scenarios, {count} expected (update the pinned count only when adding or removing a case on purpose)",
            dir.display(),
            cases.len()
        );
        for case in cases {
            let name = format!("{folder}/{}", case.file_stem().unwrap().to_string_lossy());
            seen.insert(name.clone());
            let result = run_case(&case, preemption, version);
            match (result, known.contains(&name)) {
                (Ok(()), false) => passed += 1,
                (Ok(()), true) => fixed.push(name),
                (Err(e), false) => unexpected_failures.push(format!("{name}: {e}")),
                (Err(_), true) => {}
            }
        }
    }
    let stale: Vec<&String> = known.iter().filter(|k| !seen.contains(*k)).collect();
    println!("{passed} cases agree");
    assert!(
        unexpected_failures.is_empty(),
        "{} case(s) disagree with kube-scheduler:\n{}",
        unexpected_failures.len(),
        unexpected_failures.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "these cases pass now; remove them from conformance/known-failures.txt: {fixed:?}"
    );
    assert!(
        stale.is_empty(),
        "known-failures.txt names cases that do not exist: {stale:?}"
    );
}
