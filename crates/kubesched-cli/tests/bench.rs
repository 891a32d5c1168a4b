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
        for mode in ["upstream", "exact"] {
            bench(&["--mode", mode], path);
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
        let text = bench(&["--mode", "exact"], &dir.join("a").join(file));
        assert!(
            text.starts_with("scheduled 45 pods (0 unschedulable) over 60 nodes"),
            "{file}: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `kubesched bench ARGS FILE`, which must succeed, and returns what it printed.
fn bench(args: &[&str], file: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubesched"))
        .arg("bench")
        .args(args)
        .arg(file)
        .output()
        .expect("run kubesched");
    assert!(
        out.status.success(),
        "kubesched bench {} {}: {}",
        args.join(" "),
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `scripts/gen-gang-bench.py` writes the gangs of issue 39's benchmark and the same
/// pods without them; with the gates on, `kubesched bench` runs PodGroup cycles over
/// the first (a gang too large for the cluster places none of its pods) and places
/// the second pod by pod.
#[test]
fn the_gang_benchmark_generator_writes_gangs_and_their_baseline() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = repo.join("scripts/gen-gang-bench.py");
    let dir = std::env::temp_dir().join(format!("kubesched-gen-gangs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let generate = |args: &[&str], name: &str| {
        let out = dir.join(name);
        let o = Command::new("python3")
            .arg(&script)
            .args(args)
            .arg(&out)
            .args(name.starts_with("pods").then_some("--without-gangs"))
            .output()
            .expect("python3 runs the generator");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let gates = [
        "--feature-gates",
        "GenericWorkload=true,GangScheduling=true",
    ];
    // 20 nodes of 4 cpu hold 3 gangs of 16 pods (at most 500m each).
    let gangs = generate(&["20", "3", "16"], "gangs.json");
    let text = std::fs::read_to_string(&gangs).unwrap();
    assert_eq!(text.matches("\"kind\": \"PodGroup\"").count(), 3);
    assert_eq!(text.matches("\"podGroupName\": \"gang-0002\"").count(), 16);
    let pods = generate(&["20", "3", "16"], "pods.json");
    let plain = std::fs::read_to_string(&pods).unwrap();
    assert!(!plain.contains("PodGroup") && !plain.contains("schedulingGroup"));
    for mode in ["upstream", "exact"] {
        for file in [&gangs, &pods] {
            let text = bench(&[&gates[..], &["--mode", mode]].concat(), file);
            assert!(
                text.starts_with("scheduled 48 pods (0 unschedulable) over 20 nodes"),
                "{mode} {}: {text}",
                file.display()
            );
        }
    }
    // A gang of 200 pods does not fit on 2 nodes: no pod of it stays.
    let big = generate(&["2", "1", "200"], "big.json");
    let text = bench(&gates, &big);
    assert!(
        text.starts_with("scheduled 0 pods (200 unschedulable) over 2 nodes"),
        "{text}"
    );
    // Without the gates the same file is scheduled pod by pod: 2 nodes of 110 pods and
    // 4 cpu hold some of them.
    let text = bench(&[], &big);
    assert!(!text.starts_with("scheduled 0 pods"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
