//! `--kubernetes-version`, `--feature-gates` and `--compare-versions` through the
//! binary: the version picks the behaviour (and the note says which), gates change it
//! one by one, bad values are one error line, and the comparison prints only the pods
//! that change with the scores that moved.

mod common;

use common::{kubesched, stderr, stdout};

fn case(path: &str) -> String {
    format!("{}/../../conformance/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs kubesched with `args` and checks that it exits with `code` and that its standard
/// error says `said`; returns the run.
fn exits_saying(args: &[&str], code: i32, said: &str) -> std::process::Output {
    let o = kubesched(args);
    assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    o
}

/// Runs kubesched with `args` and checks that it fails with the one error line `expected`.
fn one_error(args: &[&str], expected: &str) {
    let o = exits_saying(args, 2, expected);
    assert_eq!(stderr(&o), format!("kubesched: error: {expected}\n"));
}

#[test]
fn the_version_picks_the_expected_lines_and_says_so() {
    for (version, dir, release) in [
        ("1.35", "cases-default", "v1.35.4"),
        ("1.36", "v1.36/cases-default", "v1.36.1"),
    ] {
        let file = case(&format!("{dir}/random-default-3002.yaml"));
        let o = kubesched(&[
            "simulate",
            &file,
            "--format",
            "jsonl",
            "--kubernetes-version",
            version,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let expected =
            std::fs::read_to_string(case(&format!("{dir}/random-default-3002.expected.jsonl")))
                .unwrap();
        let parse = |t: &str| -> Vec<serde_json::Value> {
            t.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        assert_eq!(parse(&stdout(&o)), parse(&expected), "{version}");
        assert_eq!(
            stderr(&o),
            format!("kubesched: note: kube-scheduler {release} behaviour (--kubernetes-version)\n")
        );
    }
}

#[test]
fn a_gate_changes_one_behaviour_of_the_version() {
    // DRADeviceTaints is on in v1.36: default/p1's claim tolerates no taint, and every
    // device is tainted. Turned off, v1.36 allocates as v1.35 does.
    let file = case("v1.36/cases-dra/dra-device-taints.yaml");
    let o = kubesched(&["simulate", &file, "--format", "jsonl"]);
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert!(first.contains(r#""node":null"#), "{first}");
    let o = kubesched(&[
        "simulate",
        &file,
        "--format",
        "jsonl",
        "--feature-gates",
        "DRADeviceTaints=false",
    ]);
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert!(first.contains(r#""node":"n1""#), "{first}");
    assert_eq!(
        stderr(&o),
        "kubesched: note: kube-scheduler v1.36.1 behaviour with feature gates DRADeviceTaints=false (the default)\n"
    );
}

#[test]
fn bad_versions_and_gates_are_one_line_errors() {
    let file = case("cases/all-rejected-mixed-reasons.yaml");
    one_error(
        &["simulate", &file, "--feature-gates", "DRADeviceTaint=true"],
        "--feature-gates: unrecognized feature gate: DRADeviceTaint; did you mean DRADeviceTaints?",
    );
    one_error(
        &[
            "bench",
            &file,
            "--feature-gates",
            "StorageCapacityScoring=true",
        ],
        "--feature-gates: feature gate StorageCapacityScoring=true: kubesched implements only StorageCapacityScoring=false (VolumeBinding's score and its shape argument)",
    );
    exits_saying(
        &["simulate", &file, "--compare-versions", "1.35"],
        2,
        "expected two versions separated by a comma, such as 1.35,1.36",
    );
    exits_saying(
        &["simulate", &file, "--kubernetes-version", "1.34"],
        2,
        "kubesched implements kube-scheduler 1.35, 1.36, not \"1.34\"",
    );
}

#[test]
fn the_upgrade_comparison_shows_only_what_changes() {
    let file = case("cases-default/random-default-3002.yaml");
    let o = kubesched(&["simulate", &file, "--compare-versions", "1.35,1.36"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some(
            "kube-scheduler v1.35.4 behaviour -> kube-scheduler v1.36.1 behaviour: 3 of 31 pod(s) change"
        )
    );
    assert_eq!(
        lines.next(),
        Some("team-a/web-013: gke-prod-pool-1-2ad1000 -> gke-prod-pool-2-2ad1001")
    );
    assert_eq!(
        lines.next(),
        Some(
            "  gke-prod-pool-1-2ad1000: total 626 -> 609; NodeResourcesBalancedAllocation 94 -> 77"
        )
    );
    // Every pod named is one whose node or message differs between the expected files.
    let before =
        std::fs::read_to_string(case("cases-default/random-default-3002.expected.jsonl")).unwrap();
    let after = std::fs::read_to_string(case(
        "v1.36/cases-default/random-default-3002.expected.jsonl",
    ))
    .unwrap();
    let outcome = |l: &str| {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        let m = v.as_object_mut().unwrap();
        m.remove("scores");
        m.remove("rejected");
        v
    };
    let changed: Vec<String> = before
        .lines()
        .zip(after.lines())
        .filter(|(b, a)| outcome(b) != outcome(a))
        .map(|(b, _)| outcome(b)["pod"].as_str().unwrap().to_string())
        .collect();
    let named: Vec<String> = out
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains(": "))
        .skip(1)
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    assert_eq!(named, changed);
}

#[test]
fn gang_gates_follow_kube_schedulers_dependencies() {
    let file = case("cases-gangs/gang-does-not-fit.yaml");
    one_error(
        &["simulate", &file, "--feature-gates", "GangScheduling=true"],
        "--feature-gates: GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
    );
    one_error(
        &[
            "simulate",
            &file,
            "--kubernetes-version",
            "1.35",
            "--feature-gates",
            "GenericWorkload=true,TopologyAwareWorkloadScheduling=true",
        ],
        "--feature-gates: unrecognized feature gate: TopologyAwareWorkloadScheduling (kube-scheduler v1.35.4 has no such gate; it came in v1.36)",
    );
    exits_saying(
        &[
            "simulate",
            &file,
            "--format",
            "jsonl",
            "--feature-gates",
            "GenericWorkload=true,GangScheduling=true",
        ],
        0,
        "kubesched: note: PodGroup default/c: PodGroupScheduled False (Unschedulable): pod group is unschedulable\n",
    );
}

#[test]
fn v1_35_gangs_wait_at_permit_and_time_out() {
    let file = case("cases-gangs-v1.35/gang-one-short-times-out.yaml");
    let o = kubesched(&[
        "simulate",
        &file,
        "--kubernetes-version",
        "1.35",
        "--preemption",
        "--format",
        "jsonl",
        "--feature-gates",
        "GenericWorkload=true,GangScheduling=true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let timed_out = out
        .lines()
        .filter(|l| {
            l.contains("rejected due to timeout after waiting 5m0s at plugin GangScheduling")
        })
        .count();
    assert_eq!(timed_out, 2, "{out}");
    one_error(
        &[
            "simulate",
            &file,
            "--kubernetes-version",
            "1.35",
            "--feature-gates",
            "GangScheduling=true",
        ],
        "--feature-gates: GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
    );
}
