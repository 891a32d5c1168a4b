//! `kubesched simulate`'s output end to end: the exact JSON Lines of each `--detail`
//! level, streamed output byte for byte as the collected results print, the note for a
//! scenario with nothing to schedule, and `--explain` with a bare or misspelled name.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate};

mod common;
use common::{data, kubesched, stderr, stdout, with_stdin};

/// Runs `simulate` and expects success and exactly `lines` on stdout.
fn assert_lines(args: &[&str], lines: &[&str]) {
    let o = kubesched(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let expected: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(stdout(&o), expected, "{args:?}");
}

// The `all` lines are kube-scheduler v1.35.4's, as its oracle prints them for
// tests/data/detail-levels.yaml.
const WEB_ALL: &str = r#"{"node":"n2","pod":"default/web","rejected":{"n3":["node(s) had untolerated taint(s)"]},"scheduler":"default-scheduler","scores":{"n1":{"NodeResourcesFit":62,"TaintToleration":100},"n2":{"NodeResourcesFit":81,"TaintToleration":100}}}"#;
const BIG_ALL: &str = r#"{"message":"0/3 nodes are available: 3 Insufficient cpu.","node":null,"pod":"default/big","rejected":{"n1":["Insufficient cpu"],"n2":["Insufficient cpu"],"n3":["Insufficient cpu"]},"scheduler":"default-scheduler","scores":{}}"#;
const HELD: &str =
    r#"{"gated":["example.com/wait"],"pod":"default/held","scheduler":"default-scheduler"}"#;
const OTHER: &str = r#"{"ignored":true,"pod":"team/other","scheduler":"someone-else"}"#;

#[test]
fn detail_all_is_the_conformance_format_and_the_default() {
    let file = data("detail-levels.yaml");
    let all = [WEB_ALL, BIG_ALL, HELD, OTHER];
    assert_lines(&["simulate", &file, "--format", "jsonl"], &all);
    assert_lines(
        &["simulate", &file, "--format", "jsonl", "--detail", "all"],
        &all,
    );
}

#[test]
fn detail_rejected_keeps_only_the_rejected_nodes() {
    let file = data("detail-levels.yaml");
    assert_lines(
        &[
            "simulate", &file, "--format", "jsonl", "--detail", "rejected",
        ],
        &[
            r#"{"node":"n2","pod":"default/web","rejected":{"n3":["node(s) had untolerated taint(s)"]},"scheduler":"default-scheduler"}"#,
            r#"{"message":"0/3 nodes are available: 3 Insufficient cpu.","node":null,"pod":"default/big","rejected":{"n1":["Insufficient cpu"],"n2":["Insufficient cpu"],"n3":["Insufficient cpu"]},"scheduler":"default-scheduler"}"#,
            HELD,
            OTHER,
        ],
    );
}

#[test]
fn detail_none_keeps_only_the_outcome() {
    let file = data("detail-levels.yaml");
    assert_lines(
        &["simulate", &file, "--format", "jsonl", "--detail", "none"],
        &[
            r#"{"node":"n2","pod":"default/web","scheduler":"default-scheduler"}"#,
            r#"{"message":"0/3 nodes are available: 3 Insufficient cpu.","node":null,"pod":"default/big","scheduler":"default-scheduler"}"#,
            HELD,
            OTHER,
        ],
    );
}

#[test]
fn detail_is_refused_where_it_would_change_nothing() {
    let file = data("detail-levels.yaml");
    for args in [
        vec!["simulate", &file, "--detail", "none"],
        vec![
            "simulate",
            &file,
            "--format",
            "jsonl",
            "--detail",
            "rejected",
            "--explain",
            "web",
        ],
    ] {
        let o = kubesched(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        assert_eq!(
            stderr(&o).lines().collect::<Vec<_>>(),
            [format!(
                "kubesched: error: --detail {}: only --format jsonl prints per-node detail; the table and --explain choose their own",
                args[args.iter().position(|a| *a == "--detail").unwrap() + 1]
            )],
            "{args:?}"
        );
    }
    let o = kubesched(&["simulate", &file, "--format", "jsonl", "--detail", "some"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'some'"), "{}", stderr(&o));
}

#[test]
fn the_table_is_unchanged() {
    assert_lines(
        &["simulate", &data("detail-levels.yaml")],
        &[
            "POD           SCHEDULER          NODE     REASON",
            "default/web   default-scheduler  n2       highest score 181 of 2 feasible node(s)",
            "default/big   default-scheduler  Pending  0/3 nodes are available: 3 Insufficient cpu.",
            "default/held  default-scheduler  Pending  scheduling gates: example.com/wait",
            "team/other    someone-else       -        not ours: no profile named \"someone-else\"",
        ],
    );
}

/// The binary streams; the library collects. Every conformance case prints the same
/// bytes both ways, and the same bytes as each result's `serde_json::Value` (how the
/// lines were printed before they were streamed).
#[test]
fn streamed_jsonl_is_byte_identical_to_the_collected_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let mut checked = 0;
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
            "{}: {} cases",
            dir.display(),
            cases.len()
        );
        for case in cases {
            let path = case.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&case).unwrap();
            let scenario = scenario::load(&[Source {
                name: path.clone(),
                text,
            }])
            .unwrap();
            let options = SimulationOptions {
                preemption,
                ..Default::default()
            };
            let collected: String = simulate(&scenario, &options)
                .unwrap()
                .results
                .iter()
                .map(|r| output::to_json(r).to_string() + "\n")
                .collect();
            let mut args = vec!["simulate", &path, "--format", "jsonl"];
            if preemption {
                args.push("--preemption");
            }
            let o = kubesched(&args);
            assert!(o.status.success(), "{path}: {}", stderr(&o));
            assert_eq!(stdout(&o), collected, "{path}");
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} cases");
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    // `head -1` reads one line and closes the pipe: no panic, no error line.
    let file = data("detail-levels.yaml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubesched"))
        .args(["simulate", &file, "--format", "jsonl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Only the note saying which version's behaviour was used.
    assert_eq!(
        stderr(&o),
        "kubesched: note: kube-scheduler v1.36.1 behaviour (the default)\n"
    );
}

#[test]
fn nothing_to_schedule_says_so_on_stderr() {
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n";
    let bound = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: running}\nspec: {nodeName: n1, containers: [{name: app, image: nginx}]}\n";
    for input in [
        String::new(),
        "# only a comment\n# and another\n".to_string(),
        "---\n---\n".to_string(),
        node.to_string(),
        format!("{node}{bound}"),
    ] {
        for format in ["table", "jsonl"] {
            let o = with_stdin(&["simulate", "-", "--format", format], &input);
            assert_eq!(o.status.code(), Some(0), "{input:?}: {}", stderr(&o));
            assert_eq!(stdout(&o), "", "{input:?} {format}");
            assert_eq!(
                stderr(&o),
                "kubesched: note: no pending pods in <stdin>: nothing to schedule\n",
                "{input:?} {format}"
            );
        }
    }
    // Files: named in the note, in order.
    let dir = std::env::temp_dir().join(format!("kubesched-nothing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.yaml");
    let cluster = dir.join("cluster.yaml");
    std::fs::write(&empty, "").unwrap();
    std::fs::write(&cluster, format!("{node}{bound}")).unwrap();
    let (empty, cluster) = (empty.to_string_lossy(), cluster.to_string_lossy());
    let o = kubesched(&["simulate", &empty, &cluster]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        format!("kubesched: note: no pending pods in {empty}, {cluster}: nothing to schedule\n")
    );
    // Asked to explain a pod where there is none: an error, not the note.
    let o = with_stdin(&["simulate", "-", "--explain", "web"], "");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "kubesched: error: --explain web: the scenario has no pending pods to explain\n"
    );
}

const TWO_NAMESPACES: &str = "apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}
---
apiVersion: v1
kind: Pod
metadata: {name: p1}
spec: {containers: [{name: app, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec: {containers: [{name: app, image: nginx}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: blog}
spec: {containers: [{name: app, image: nginx}]}
";

#[test]
fn explain_finds_the_only_pod_of_a_bare_name() {
    let o = with_stdin(&["simulate", "-", "--explain", "p1"], TWO_NAMESPACES);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "Pod default/p1 (scheduler default-scheduler)\n  scheduled on n1\n  n1    feasible (the only one: no scoring)  <- chosen\n"
    );
    let full = with_stdin(
        &["simulate", "-", "--explain", "default/p1"],
        TWO_NAMESPACES,
    );
    assert_eq!(stdout(&full), stdout(&o));
}

#[test]
fn explain_lists_the_pods_an_ambiguous_name_could_be() {
    let o = with_stdin(&["simulate", "-", "--explain", "web"], TWO_NAMESPACES);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty());
    assert_eq!(
        stderr(&o),
        "kubesched: error: --explain web: 2 pending pods are named web: shop/web or blog/web; give NAMESPACE/POD\n"
    );
}

#[test]
fn explain_suggests_a_misspelled_pod() {
    for (query, suggestion) in [
        ("pl", "default/p1"),
        ("wbe", "shop/web or blog/web"),
        ("team/p1", "default/p1"),
        ("shop/wev", "shop/web or blog/web"),
    ] {
        let o = with_stdin(&["simulate", "-", "--explain", query], TWO_NAMESPACES);
        assert_eq!(o.status.code(), Some(2), "{query}");
        assert_eq!(
            stderr(&o),
            format!(
                "kubesched: error: --explain {query}: no pending pod {query} in the scenario; did you mean {suggestion}?\n"
            ),
            "{query}"
        );
    }
    let o = with_stdin(
        &["simulate", "-", "--explain", "completely-different"],
        TWO_NAMESPACES,
    );
    assert_eq!(
        stderr(&o),
        "kubesched: error: --explain completely-different: no pending pod completely-different in the scenario\n"
    );
}
