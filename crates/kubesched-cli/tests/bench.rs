//! `kubesched bench` in upstream mode searches as kube-scheduler and `kubesched run` do
//! (round-robin start node, early stop, random pick): every conformance scenario must
//! run through it without a crash, in both modes. The generator of the claims benchmark
//! (`scripts/gen-claims-bench.py`) is checked here too.

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

/// `scripts/gen-claims-bench.py` (the scenario where a third of the pods have claims,
/// and the same without) is reproducible, has what it says, and `kubesched bench
/// --mode exact` runs both files (at a small size: the lead measures 5,000 nodes).
#[test]
fn the_claims_benchmark_generator_is_reproducible_and_both_files_run() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = repo.join("scripts/gen-claims-bench.py");
    let dir = std::env::temp_dir().join(format!("kubesched-gen-claims-{}", std::process::id()));
    let generate = |seed: &str, out: &Path| {
        let o = Command::new("python3")
            .arg(&script)
            .args([
                "--nodes", "60", "--pods", "45", "--zones", "3", "--seed", seed,
            ])
            .arg("--out-dir")
            .arg(out)
            .output()
            .expect("python3 runs the generator");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let read = |name: &str| std::fs::read_to_string(out.join(name)).expect("generated");
        (read("claims-60n-45p.yaml"), read("noclaims-60n-45p.yaml"))
    };
    let (claims, plain) = generate("3", &dir.join("a"));
    assert_eq!(
        generate("3", &dir.join("b")),
        (claims.clone(), plain.clone()),
        "the same seed gives the same files"
    );
    assert_ne!(generate("4", &dir.join("c")).0, claims);

    // Pods 0, 3, 6, ... (15 of 45) have a claim; the other file none, and no storage
    // or DRA object.
    let with_claim = claims.matches("persistentVolumeClaim: {claimName").count()
        + claims.matches("resourceClaims: [{name: gpu").count();
    assert_eq!(with_claim, 15);
    assert_eq!(plain.matches("\nkind: Pod\n").count(), 45);
    assert_eq!(claims.matches("\nkind: Pod\n").count(), 45);
    for kind in [
        "PersistentVolume",
        "ResourceSlice",
        "ResourceClaim",
        "StorageClass",
    ] {
        assert!(claims.contains(&format!("\nkind: {kind}\n")), "{kind}");
    }
    assert!(!plain.contains("claimName") && !plain.contains("resourceClaim"));
    assert!(!plain.contains("kind: PersistentVolume"));

    for file in ["claims-60n-45p.yaml", "noclaims-60n-45p.yaml"] {
        let out = Command::new(env!("CARGO_BIN_EXE_kubesched"))
            .args(["bench", "--mode", "exact"])
            .arg(dir.join("a").join(file))
            .output()
            .expect("run kubesched");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.starts_with("scheduled 45 pods (0 unschedulable) over 60 nodes"),
            "{file}: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
