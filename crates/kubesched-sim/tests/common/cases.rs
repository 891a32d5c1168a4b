//! Listing a case folder of `conformance/`, loading a case, and running every case in
//! a folder: each case's lines compared with its `.expected.jsonl`
//! ([`super::lines::compare`]), and every case that differs reported at once.

use std::path::{Path, PathBuf};

use kubesched_sim::scenario::{self, Scenario, Source};
use serde_json::Value;

use super::lines;

/// The cases (`*.yaml`) of `conformance/<folder>`, in name order.
pub fn cases_in(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance")
        .join(folder);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("conformance/{folder}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    cases.sort();
    cases
}

/// The scenario of the case at `path`.
pub fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let source = Source {
        name: path.display().to_string(),
        text,
    };
    scenario::load(&[source]).map_err(|e| format!("load: {e}"))
}

/// Runs every case of `conformance/<folder>` with `run` (which gives the lines the case
/// prints) and compares the lines with the case's `.expected.jsonl`; panics naming each
/// case that differs. The folder must hold `count` cases: pinned, so that a case that
/// goes missing fails here.
pub fn assert_agree(folder: &str, count: usize, run: impl Fn(&Path) -> Result<Vec<Value>, String>) {
    let cases = cases_in(folder);
    assert_eq!(cases.len(), count, "cases in conformance/{folder}");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            check(c, &run)
                .err()
                .map(|e| format!("{}: {e}", c.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Whether `case`'s lines, as `run` gives them, are its expected ones.
fn check(case: &Path, run: impl Fn(&Path) -> Result<Vec<Value>, String>) -> Result<(), String> {
    let expected = std::fs::read_to_string(case.with_extension("expected.jsonl"))
        .map_err(|e| e.to_string())?;
    lines::compare(&expected, &run(case)?)
}
