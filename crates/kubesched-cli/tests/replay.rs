//! `kubesched replay` as a user runs it: the worked example of docs/replay.md in both
//! formats and both modes, a trace from standard input, the steps it dumps, and bad
//! traces refused with one line before anything is printed.

mod common;

use std::path::Path;

use common::{kubesched, stderr, stdout, with_stdin};
use serde_json::Value;

/// A file of the crate's folder `dir`, as an argument.
fn file_in(dir: &str, name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(dir)
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn example(name: &str) -> String {
    file_in("../../docs/examples/replay", name)
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (time, pod, node) of every binding among the lines.
fn bindings(lines: &[Value]) -> Vec<(i64, &str, &str)> {
    lines
        .iter()
        .filter(|l| l["node"].is_string() && l["pod"].is_string())
        .map(|l| {
            (
                l["time"].as_i64().unwrap(),
                l["pod"].as_str().unwrap(),
                l["node"].as_str().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_worked_example_prints_every_attempt_with_its_time_then_the_summary() {
    let (trace, cluster) = (example("trace.jsonl"), example("cluster.yaml"));
    let out = kubesched(&["replay", &trace, &cluster, "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = jsonl(&stdout(&out));
    let placed = bindings(&lines);
    assert_eq!(
        placed,
        [
            (0, "default/web-1", "node-b"),
            (2, "default/batch-1", "node-b"),
            (2, "default/batch-2", "node-a"),
            (90, "default/batch-3", "node-c"),
        ]
    );
    let evicted: Vec<&str> = lines.iter().filter_map(|l| l["evicted"].as_str()).collect();
    assert_eq!(evicted, ["default/db", "default/batch-2"]);
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["pods"]["scheduled"], 4);
    assert_eq!(summary["waitedSeconds"]["max"], 85.0);
    assert_eq!(summary["end"], 400.0);

    // The settled mode places the same pods here, at the same instants.
    let settled = kubesched(&["replay", &trace, &cluster, "--format", "jsonl", "--settle"]);
    let settled = jsonl(&stdout(&settled));
    let settled_placed = bindings(&settled);
    assert_eq!(settled_placed, placed);
    assert_eq!(settled.last().unwrap()["summary"]["mode"], "settle");
}

#[test]
fn detail_all_gives_the_conformance_line_with_every_node() {
    let out = kubesched(&[
        "replay",
        &example("trace.jsonl"),
        &example("cluster.yaml"),
        "--format",
        "jsonl",
        "--detail",
        "all",
    ]);
    let lines = jsonl(&stdout(&out));
    let first_failure = lines.iter().find(|l| l["message"].is_string()).unwrap();
    assert_eq!(first_failure["time"], 5);
    assert_eq!(first_failure["rejected"]["node-a"][0], "Insufficient cpu");
    let table = kubesched(&[
        "replay",
        &example("trace.jsonl"),
        &example("cluster.yaml"),
        "--detail",
        "all",
    ]);
    assert_eq!(table.status.code(), Some(2));
    assert_eq!(
        stderr(&table).trim(),
        "kubesched: error: --detail: only --format jsonl prints per-node detail"
    );
}

#[test]
fn a_trace_on_standard_input_starts_from_an_empty_cluster() {
    let trace = concat!(
        "{\"kubeschedTrace\": 1}\n",
        "{\"time\": 0, \"apply\": {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\"}]}}}\n",
        "{\"time\": 3, \"apply\": {\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}, \"status\": {\"allocatable\": {\"cpu\": \"1\", \"memory\": \"1Gi\", \"pods\": \"10\"}}}}\n",
    );
    let out = with_stdin(&["replay", "-", "--format", "jsonl"], trace);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = jsonl(&stdout(&out));
    // No node is an error to kube-scheduler, not a rejection: the pod is retried after
    // each backoff (1 s, then 2 s), and the node is there by the second retry.
    let attempts: Vec<(i64, &str)> = lines
        .iter()
        .filter(|l| l["pod"].is_string())
        .map(|l| {
            let what = l["node"].as_str().or(l["message"].as_str());
            (l["time"].as_i64().unwrap(), what.unwrap())
        })
        .collect();
    let none = "no nodes available to schedule pods";
    assert_eq!(attempts, [(0, none), (1, none), (3, "n")]);
}

#[test]
fn dump_steps_writes_each_settled_pass_as_a_scenario_simulate_agrees_with() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-dump-steps");
    let _ = std::fs::remove_dir_all(&dir);
    let out = kubesched(&[
        "replay",
        &example("trace.jsonl"),
        &example("cluster.yaml"),
        "--settle",
        "--dump-steps",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut steps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    steps.sort();
    assert!(steps.len() >= 3, "{steps:?}");
    for step in steps {
        let simulated = kubesched(&["simulate", step.to_str().unwrap(), "--format", "jsonl"]);
        let pass = std::fs::read_to_string(step.with_extension("jsonl")).unwrap();
        assert_eq!(
            jsonl(&stdout(&simulated)),
            jsonl(&pass),
            "{}",
            step.display()
        );
    }
}

#[test]
fn a_bad_trace_is_one_line_and_nothing_is_replayed() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.jsonl");
    let good = std::fs::read_to_string(example("trace.jsonl")).unwrap();
    // The fifth line's time goes back before the fourth's.
    let lines: Vec<String> = good
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 4 {
                l.replacen("\"time\":5", "\"time\":1", 1)
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let out = kubesched(&["replay", bad.to_str().unwrap(), &example("cluster.yaml")]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out).trim(),
        format!(
            "kubesched: error: {}: line 5: time: 1 comes before the previous event's 2: events must be in time order",
            bad.display()
        )
    );

    // A cut-off last line: refused, or with --allow-truncated replayed without it.
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, format!("{}{}", good, "{\"time\": 500, \"dra")).unwrap();
    let out = kubesched(&["replay", cut.to_str().unwrap(), &example("cluster.yaml")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("line 10: truncated last line"),
        "{}",
        stderr(&out)
    );
    let out = kubesched(&[
        "replay",
        cut.to_str().unwrap(),
        &example("cluster.yaml"),
        "--allow-truncated",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("line 10: truncated last line left out (--allow-truncated)"));
    assert!(stdout(&out).contains("Replayed 8 event(s)"));
}

#[test]
fn import_openb_replays_the_gpu_trace_format() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-openb");
    std::fs::create_dir_all(&dir).unwrap();
    let nodes = dir.join("nodes.csv");
    let pods = dir.join("pods.csv");
    std::fs::write(
        &nodes,
        "sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,32000,262144,0,\nopenb-node-0001,96000,786432,2,V100M32\n",
    )
    .unwrap();
    std::fs::write(
        &pods,
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
         a,8000,16384,2,1000,,LS,Running,0,100,0\n\
         b,4000,8192,1,500,V100M32,BE,Running,10,50,10\n\
         c,4000,8192,1,500,G2,BE,Pending,20,30,\n\
         d,4000,8192,0,0,,BE,Running,30,40,30\n",
    )
    .unwrap();
    let out = kubesched(&[
        "replay",
        "--import",
        "openb",
        pods.to_str().unwrap(),
        nodes.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = jsonl(&stdout(&out));
    let outcome = |pod: &str| {
        lines
            .iter()
            .find(|l| l["pod"] == format!("default/{pod}"))
            .map(|l| {
                l["node"]
                    .as_str()
                    .or(l["message"].as_str())
                    .unwrap()
                    .to_string()
            })
            .unwrap()
    };
    // a takes both GPUs; b waits for them (its model is there); c asks for a model no
    // node has; d needs no GPU and fits anywhere.
    assert_eq!(outcome("a"), "openb-node-0001");
    assert!(
        outcome("b").contains("Insufficient alibabacloud.com/gpu-milli"),
        "{}",
        outcome("b")
    );
    assert!(
        outcome("c").contains("didn't match Pod's node affinity/selector"),
        "{}",
        outcome("c")
    );
    assert!(outcome("d").starts_with("openb-node-"), "{}", outcome("d"));
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["pods"]["arrived"], 4);
    assert_eq!(
        summary["pods"]["pending"], 0,
        "c is deleted while pending: {summary}"
    );
    assert_eq!(
        summary["allocation"]["alibabacloud.com/gpu-milli"]["peakPercent"],
        100.0
    );

    let wrong = kubesched(&["replay", "--import", "openb", pods.to_str().unwrap()]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(stderr(&wrong).contains("--import openb: give the pod list CSV as TRACE and the node list CSV as the one FILE (got 0 file(s))"));
}

fn data(name: &str) -> String {
    file_in("tests/data", name)
}

/// The summary line of a replay with `args`.
fn summary_of(args: &[&str]) -> Value {
    let out = kubesched(args);
    assert!(out.status.success(), "{}", stderr(&out));
    jsonl(&stdout(&out)).pop().unwrap()["summary"].clone()
}

#[test]
fn configurations_compared_give_each_the_summary_it_has_alone() {
    let (trace, cluster) = (example("trace.jsonl"), example("cluster.yaml"));
    let (least, most) = (
        data("report-least-allocated.yaml"),
        data("report-most-allocated.yaml"),
    );
    let base = ["replay", &trace, &cluster, "--format", "jsonl"];
    let alone: Vec<Value> = [&least, &most]
        .iter()
        .map(|c| summary_of(&[&base[..], &["--config", c]].concat()))
        .collect();
    let out = kubesched(&[&base[..], &["--config", &least, "--config", &most]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = jsonl(&stdout(&out));
    // One line per configuration, named by its file, and no attempt lines.
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l["variant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["report-least-allocated", "report-most-allocated"]);
    assert_eq!(lines[0]["summary"], alone[0]);
    assert_eq!(lines[1]["summary"], alone[1]);
    // The versions too, and the table puts them side by side.
    let v135 = summary_of(&[&base[..], &["--kubernetes-version", "1.35"]].concat());
    let out = kubesched(&[&base[..], &["--compare-versions", "1.35,1.36"]].concat());
    let lines = jsonl(&stdout(&out));
    assert_eq!(
        (lines[0]["variant"].as_str(), &lines[0]["summary"]),
        (Some("v1.35"), &v135)
    );
    let out = kubesched(&[
        "replay",
        &trace,
        &cluster,
        "--compare-versions",
        "1.35,1.36",
    ]);
    let table = stdout(&out);
    let head = table.lines().next().unwrap();
    assert!(head.contains("v1.35") && head.contains("v1.36"), "{table}");
    assert!(table.contains("waited p90"), "{table}");
}

#[test]
fn html_draws_the_timeline_and_the_nodes_at_each_instant() {
    let (trace, cluster) = (example("trace.jsonl"), example("cluster.yaml"));
    let dir = std::env::temp_dir().join(format!("kubesched-replay-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("replay.html");
    let page_arg = page.to_string_lossy().into_owned();
    let out = kubesched(&[
        "replay",
        &trace,
        &cluster,
        "--html",
        &page_arg,
        "--occupancy-at",
        "30",
        "--occupancy-at",
        "95",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    for id in [
        "chart-replay-pending",
        "chart-replay-allocation",
        "chart-replay-occupancy-0",
        "chart-replay-occupancy-1",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "no {id}");
    }
    assert!(html.contains("Nodes at 30s") && html.contains("Nodes at 1m35s"));
    // The embedded model: the pending pods over time, as the replay counted them.
    let start = html.find("id=\"replay-model\">").unwrap() + "id=\"replay-model\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let model: Value = serde_json::from_str(&html[start..end]).unwrap();
    let pending = model["runs"][0]["pending"].as_array().unwrap();
    assert_eq!(pending.iter().map(|p| p.as_u64().unwrap()).max(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn comparing_refuses_what_only_one_replay_can_write() {
    let (trace, cluster) = (example("trace.jsonl"), example("cluster.yaml"));
    let out = kubesched(&[
        "replay",
        &trace,
        &cluster,
        "--compare-versions",
        "1.35,1.36",
        "--final-state",
        "x.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--dump-steps and --final-state write one replay's files"));
    let out = kubesched(&["replay", &trace, &cluster, "--occupancy-at=-3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--occupancy-at -3: expected seconds"),
        "{}",
        stderr(&out)
    );
}

/// deploy/replay-sweep.yaml: an Indexed Job with one completion per configuration of
/// its ConfigMap, and each index's command, run here by `sh` over the worked example,
/// prints one summary line, the one `replay --config` gives for that configuration.
#[test]
fn the_sweep_job_runs_one_replay_per_index() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(repo.join("deploy/replay-sweep.yaml")).unwrap();
    let docs: Vec<Value> = serde_norway::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let [config_map, job] = docs.as_slice() else {
        panic!("expected a ConfigMap and a Job");
    };
    assert_eq!(
        (config_map["kind"].as_str(), job["kind"].as_str()),
        (Some("ConfigMap"), Some("Job"))
    );
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let configs = config_map["data"].as_object().unwrap();
    assert_eq!(
        job["spec"]["completions"].as_u64(),
        Some(configs.len() as u64)
    );
    let script = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("kubesched-sweep-{}", std::process::id()));
    let (traces, config_dir) = (dir.join("traces"), dir.join("configs"));
    std::fs::create_dir_all(&traces).unwrap();
    std::fs::create_dir_all(&config_dir).unwrap();
    // The Job reads a trace that holds the cluster too (as `kubesched record` writes
    // it): the example's cluster applied at 0 s, then its trace.
    let cluster = std::fs::read_to_string(example("cluster.yaml")).unwrap();
    let events = std::fs::read_to_string(example("trace.jsonl")).unwrap();
    let (header, rest) = events.split_once('\n').unwrap();
    let mut trace = format!("{header}\n");
    for doc in serde_norway::Deserializer::from_str(&cluster) {
        let object: Value = serde::Deserialize::deserialize(doc).unwrap();
        if !object.is_null() {
            trace.push_str(&format!(
                "{}\n",
                serde_json::json!({"time": 0, "apply": object})
            ));
        }
    }
    trace.push_str(rest);
    std::fs::write(traces.join("trace.jsonl"), trace).unwrap();
    let script = script
        .replace("/traces/", &format!("{}/", traces.display()))
        .replace("/configs/", &format!("{}/", config_dir.display()));
    let bin = Path::new(env!("CARGO_BIN_EXE_kubesched"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (index, (name, config)) in configs.iter().enumerate() {
        assert_eq!(name, &format!("config-{index}.yaml"));
        let file = config_dir.join(name);
        std::fs::write(&file, config.as_str().unwrap()).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(out.status.success(), "index {index}: {}", stderr(&out));
        let lines = jsonl(&stdout(&out));
        assert_eq!(lines.len(), 1, "index {index}: {}", stdout(&out));
        assert_eq!(lines[0]["index"].as_u64(), Some(index as u64));
        let file = file.to_string_lossy().into_owned();
        let alone = summary_of(&[
            "replay",
            &traces.join("trace.jsonl").to_string_lossy(),
            "--config",
            &file,
            "--format",
            "jsonl",
        ]);
        assert_eq!(lines[0]["summary"], alone, "index {index}");
    }
    // A configuration that fails makes the index fail.
    std::fs::write(config_dir.join("config-0.yaml"), "kind: Nonsense\n").unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .env("JOB_COMPLETION_INDEX", "0")
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gang_pod_waits_at_permit_until_its_sibling_is_placed_on_the_replays_clock() {
    // docs/replay.md, "Gangs and Permit waits": g-1 waits on n1 from 0 s, holding it;
    // g-2 is placed when n2 joins at 30 s and its Permit lets g-1 bind then. The
    // settled mode decides each wait within its pass: g-1 times out at 0 s.
    let (trace, cluster) = (example("gang-trace.jsonl"), example("gang-cluster.yaml"));
    let out = kubesched(&["replay", &trace, &cluster, "--plugins", "sigs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let attempts: Vec<&str> = text.lines().take(3).collect();
    assert_eq!(
        attempts,
        [
            "     0.000  default/g-2               cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu.",
            "    30.000  default/g-1               -> n1",
            "    30.000  default/g-2               -> n2",
        ],
        "{text}"
    );
    assert!(
        text.contains("waited to be scheduled: p50 30 s, p90 30 s, p99 30 s, max 30 s"),
        "{text}"
    );
    let out = kubesched(&["replay", &trace, &cluster, "--plugins", "sigs", "--settle"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(
            "     0.000  default/g-1               cannot be scheduled: rejected due to timeout after waiting 1m0s at plugin Coscheduling\n"
        ),
        "{}",
        stdout(&out)
    );
}
