//! `kubesched bench` in upstream mode searches as kube-scheduler and `kubesched run` do
//! (round-robin start node, early stop, random pick): every conformance scenario must
//! run through it without a crash, in both modes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scenarios() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let mut found = Vec::new();
    for folder in ["cases", "cases-default", "cases-preemption"] {
        let dir = root.join(folder);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        found.extend(
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "yaml")),
        );
    }
    found.sort();
    found
}

#[test]
fn bench_runs_every_conformance_scenario_in_both_modes() {
    let scenarios = scenarios();
    assert!(scenarios.len() >= 137, "{} scenarios", scenarios.len());
    for path in &scenarios {
        for args in [["--mode", "upstream"], ["--mode", "exact"]] {
            let out = Command::new(env!("CARGO_BIN_EXE_kubesched"))
                .arg("bench")
                .args(args)
                .arg(path)
                .output()
                .expect("run kubesched");
            assert!(
                out.status.success(),
                "kubesched bench {} {}: {}\n{}",
                args.join(" "),
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
