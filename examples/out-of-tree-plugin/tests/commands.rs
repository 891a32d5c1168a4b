//! `my-scheduler` end to end: every subcommand runs with the two plugins, which change
//! the decisions of the `my-scheduler` profile as they should; a bad plugin arg is one
//! error line; and the commands docs/writing-a-plugin.md shows print what it says.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `my-scheduler ARGS` in this crate's directory.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_my-scheduler"))
        .args(args)
        .current_dir(dir())
        .output()
        .expect("run my-scheduler")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON line of `pod` in `simulate --format jsonl`'s output.
fn line_of(out: &str, pod: &str) -> serde_json::Value {
    out.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .find(|v| v["pod"] == pod)
        .unwrap_or_else(|| panic!("no line for {pod} in {out}"))
}

#[test]
fn simulate_filters_and_scores_with_the_plugins() {
    let o = run(&["simulate", "scenario.yaml", "--format", "jsonl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // web: zone a only; a-hdd has more room, PreferSsd's 2 x 100 wins a-ssd.
    let web = line_of(&out, "default/web");
    assert_eq!(web["node"], "a-ssd", "{web}");
    assert_eq!(
        web["rejected"]["b-ssd"],
        serde_json::json!(["node(s) were not in the pod's example.com/zones"]),
        "{web}"
    );
    assert_eq!(web["scores"]["a-ssd"]["PreferSsd"], 200, "{web}");
    assert_eq!(web["scores"]["a-hdd"]["PreferSsd"], 0, "{web}");
    // batch: no node is in zone-c.
    let batch = line_of(&out, "default/batch");
    assert_eq!(batch["node"], serde_json::Value::Null, "{batch}");
    assert_eq!(
        batch["message"],
        "0/3 nodes are available: 3 node(s) were not in the pod's example.com/zones.",
        "{batch}"
    );
    // cache: no annotation, any zone: the roomiest SSD node.
    assert_eq!(line_of(&out, "default/cache")["node"], "b-ssd");
}

#[test]
fn explain_names_the_plugins() {
    let o = run(&["simulate", "scenario.yaml", "--explain", "web"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.lines()
            .any(|l| l.contains("b-ssd") && l.contains("rejected by ZoneAllowlist")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("a-ssd") && l.contains("PreferSsd 200") && l.contains("<- chosen")),
        "{out}"
    );
}

#[test]
fn capacity_counts_copies_in_the_allowed_zone_only() {
    let o = run(&["capacity", "pod.yaml", "scenario.yaml", "--format", "jsonl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    // a-hdd: 8 cpu; a-ssd: 4 cpu less web's 1. b-ssd's 15 free cpu are in zone b.
    assert_eq!(v["count"], 11, "{v}");
    assert_eq!(v["nodes"]["a-hdd"], 8, "{v}");
    assert_eq!(v["nodes"]["a-ssd"], 3, "{v}");
    assert_eq!(v["nodes"]["b-ssd"], 0, "{v}");
    assert_eq!(
        v["stop"]["plugins"]["ZoneAllowlist"]["nodes"],
        serde_json::json!(["b-ssd"]),
        "{v}"
    );
}

#[test]
fn rollout_and_bench_run_with_the_plugins() {
    let o = run(&["rollout", "deployment.yaml", "scenario.yaml"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    // Three new pods of 2 cpu in zone a: PreferSsd puts the first on a-ssd, which then
    // has too little cpu left for another.
    let placed: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("schedule default/api-"))
        .filter_map(|l| l.split_once(" -> ").map(|(_, node)| node))
        .collect();
    assert_eq!(placed, ["a-ssd", "a-hdd", "a-hdd"], "{out}");
    assert!(out.contains("Rollout complete in 1 step(s)"), "{out}");
    let o = run(&["bench", "scenario.yaml", "--mode", "exact"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("scheduled 2 pods (1 unschedulable) over 3 nodes"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_bad_plugin_arg_is_one_error_line() {
    let scenario = std::fs::read_to_string(dir().join("scenario.yaml")).expect("read");
    let bad = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-args.yaml");
    std::fs::write(&bad, scenario.replace("ssdScore: 100", "ssdScore: 800")).expect("write");
    let o = run(&["simulate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("my-scheduler: error: "), "{err}");
    assert!(
        err.contains("profile \"my-scheduler\": initializing plugin \"PreferSsd\": ssdScore: must be between 0 and 100, got 800"),
        "{err}"
    );
}

#[test]
fn help_names_the_command_and_every_subcommand() {
    let o = run(&["--help"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(
        out.starts_with("kube-scheduler's decisions with ZoneAllowlist and PreferSsd\n"),
        "{out}"
    );
    assert!(
        out.contains("Usage: my-scheduler [OPTIONS] <COMMAND>"),
        "{out}"
    );
    for sub in ["simulate", "capacity", "rollout", "bench"] {
        assert!(out.contains(sub), "{sub} missing from {out}");
    }
    // `run` needs the runtime feature.
    assert_eq!(out.contains("\n  run "), cfg!(feature = "runtime"), "{out}");
}

#[test]
fn from_cluster_without_the_runtime_says_which_feature_it_needs() {
    if cfg!(feature = "runtime") {
        return;
    }
    let o = run(&["simulate", "--from-cluster"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "my-scheduler: error: --from-cluster: this command was built without the `cluster` feature (kubesched-cli's default, or the `runtime` feature of the kubesched crate), which reads live clusters\n"
    );
}

/// (command line, expected standard output) of each `$ my-scheduler` line of the
/// ```` ```console ```` blocks of docs/writing-a-plugin.md.
fn doc_examples() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(dir().join("../../docs/writing-a-plugin.md"))
        .expect("read docs/writing-a-plugin.md");
    let mut found: Vec<(String, String)> = Vec::new();
    let mut in_block = false;
    for line in doc.lines() {
        if !in_block {
            in_block = line.trim_end() == "```console";
            continue;
        }
        if line.trim_end() == "```" {
            in_block = false;
        } else if let Some(command) = line.strip_prefix("$ ") {
            found.push((command.to_string(), String::new()));
        } else if let Some((_, out)) = found.last_mut() {
            out.push_str(line);
            out.push('\n');
        }
    }
    found
}

#[test]
fn the_commands_of_the_docs_print_what_the_docs_say() {
    let examples = doc_examples();
    assert!(examples.len() >= 3, "{examples:?}");
    for (command, expected) in &examples {
        let mut words = command.split_whitespace();
        assert_eq!(words.next(), Some("my-scheduler"), "{command}");
        let args: Vec<&str> = words.collect();
        let o = run(&args);
        assert!(o.status.success(), "{command}: {}", stderr(&o));
        assert_eq!(
            &stdout(&o),
            expected,
            "{command}: the docs show other output"
        );
    }
}
