//! `kubesched report`: two configurations (NodeResourcesFit's LeastAllocated and
//! MostAllocated) compared on a conformance scenario, and every figure of
//! `report --format jsonl` checked against what `simulate --config ... --format jsonl`
//! placed: pods pending, nodes used, the cpu and memory utilisation spread computed
//! here from the scenario's requests and those placements, and the pods placed
//! differently; the same for two Kubernetes versions (`--compare-versions`) against
//! `simulate --kubernetes-version`. Also the page itself, the command's input errors,
//! and `capacity --html`'s charts against `capacity --format jsonl`.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{data, kubesched};
use kubesched_framework::{NodeInfo, PodInfo};
use kubesched_sim::scenario::{self, Source};
use serde_json::Value;

const SCENARIO: &str = "../../conformance/cases-default/random-default-3002.yaml";

fn scenario_path() -> String {
    format!("{}/{SCENARIO}", env!("CARGO_MANIFEST_DIR"))
}

fn lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Fails with the command's standard error unless it exited 0.
fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each pod's node after its last attempt (`None`: pending), in first-attempt order,
/// from `simulate --format jsonl` with `flags` (a configuration or a version).
fn placements(flags: &[&str]) -> Vec<(String, Option<String>)> {
    let path = scenario_path();
    let mut args = vec!["simulate", &path, "--format", "jsonl", "--detail", "none"];
    args.extend_from_slice(flags);
    let out = kubesched(&args);
    assert_ok(&out);
    let mut order: Vec<(String, Option<String>)> = Vec::new();
    for l in lines(&out.stdout) {
        let pod = l["pod"].as_str().unwrap().to_string();
        let node = l["node"].as_str().map(str::to_string);
        match order.iter_mut().find(|(p, _)| *p == pod) {
            Some(entry) => entry.1 = node,
            None => order.push((pod, node)),
        }
    }
    order
}

/// min, max, mean and population stddev in percent, rounded to 1/100, as the report
/// documents them.
fn spread(values: &[f64]) -> [f64; 4] {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let r = |v: f64| (v * 100.0).round() / 100.0;
    [
        r(values.iter().copied().fold(f64::INFINITY, f64::min)),
        r(values.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        r(mean),
        r(var.sqrt()),
    ]
}

fn figure(line: &Value, key: &str) -> [f64; 4] {
    ["min", "max", "mean", "stddev"].map(|k| line[key][k].as_f64().unwrap())
}

/// Each node by name, with its bound pods.
type Nodes = Vec<(String, NodeInfo)>;

/// The cluster from the scenario itself: each node (with its bound pods) and each
/// pending pod.
fn cluster() -> (Nodes, HashMap<String, Arc<PodInfo>>) {
    let text = std::fs::read_to_string(scenario_path()).unwrap();
    let s = scenario::load(&[Source {
        name: SCENARIO.into(),
        text,
    }])
    .unwrap();
    let mut nodes: Vec<(String, NodeInfo)> = s
        .nodes
        .iter()
        .map(|n| {
            let info = NodeInfo::new(n.clone()).unwrap();
            (info.name().to_string(), info)
        })
        .collect();
    let mut requests: HashMap<String, Arc<PodInfo>> = HashMap::new();
    for p in &s.pods {
        let info = Arc::new(PodInfo::new(p.clone()).unwrap());
        match info.node_name() {
            Some(node) => {
                let (_, n) = nodes.iter_mut().find(|(name, _)| name == node).unwrap();
                n.add_pod(info.clone());
            }
            None => {
                requests.insert(info.key().to_string(), info);
            }
        }
    }
    (nodes, requests)
}

/// Checks one `"kind": "run"` line of `report --format jsonl` against the placements
/// `simulate` made: pods, pending, scheduled, nodes used and receiving, and the cpu and
/// memory spread computed here from the scenario's requests.
fn check_run(run: &Value, placed: &[(String, Option<String>)], label: &str) {
    let (nodes, requests) = cluster();
    assert_eq!(run["pods"], placed.len(), "{label}");
    let pending = placed.iter().filter(|(_, n)| n.is_none()).count();
    assert_eq!(run["pending"], pending, "{label}");
    assert_eq!(run["scheduled"], placed.len() - pending, "{label}");
    let mut after = nodes;
    for (pod, node) in placed {
        if let Some(node) = node {
            let (_, n) = after.iter_mut().find(|(name, _)| name == node).unwrap();
            n.add_pod(Arc::new(requests[pod].bound_to(node)));
        }
    }
    let used = after.iter().filter(|(_, n)| !n.pods().is_empty()).count();
    assert_eq!(run["nodes_used"], used, "{label}");
    let receiving: std::collections::HashSet<&String> =
        placed.iter().filter_map(|(_, n)| n.as_ref()).collect();
    assert_eq!(run["nodes_receiving"], receiving.len(), "{label}");
    let pct = |f: &dyn Fn(&NodeInfo) -> (i64, i64)| -> Vec<f64> {
        after
            .iter()
            .map(|(_, n)| f(n))
            .filter(|(_, alloc)| *alloc > 0)
            .map(|(used, alloc)| used as f64 * 100.0 / alloc as f64)
            .collect()
    };
    let cpu = spread(&pct(&|n| {
        (n.requested().milli_cpu, n.allocatable().milli_cpu)
    }));
    let memory = spread(&pct(&|n| (n.requested().memory, n.allocatable().memory)));
    assert_eq!(figure(run, "cpu"), cpu, "{label}: cpu");
    assert_eq!(figure(run, "memory"), memory, "{label}: memory");
}

/// A pod placed differently: its name and its node in each run (`None`: pending).
type Difference = (String, Vec<Option<String>>);

/// The `"kind": "difference"` lines: each pod with its node per run.
fn differences(report: &[Value]) -> Vec<Difference> {
    report
        .iter()
        .filter(|l| l["kind"] == "difference")
        .map(|l| {
            let nodes = l["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect();
            (l["pod"].as_str().unwrap().to_string(), nodes)
        })
        .collect()
}

/// Runs `report SCENARIO FLAGS --format jsonl` and checks it against `simulate` with
/// each run's own flags (`per_run`, in the report's order): every `run` line's figures
/// (with [`check_run`]) and the `difference` lines. Returns the run lines and the pods
/// placed differently.
fn compared_with_simulate(flags: &[&str], per_run: &[&[&str]; 2]) -> (Vec<Value>, Vec<Difference>) {
    let path = scenario_path();
    let mut args = vec!["report", &path];
    args.extend_from_slice(flags);
    args.extend(["--format", "jsonl"]);
    let out = kubesched(&args);
    assert_ok(&out);
    let report = lines(&out.stdout);
    let runs: Vec<Value> = report
        .iter()
        .filter(|l| l["kind"] == "run")
        .cloned()
        .collect();
    assert_eq!(runs.len(), 2, "{report:?}");
    let finals: Vec<_> = per_run
        .iter()
        .zip(&runs)
        .enumerate()
        .map(|(i, (flags, run))| {
            let placed = placements(flags);
            assert_eq!(run["index"], i);
            check_run(run, &placed, &flags.join(" "));
            placed
        })
        .collect();
    let got = differences(&report);
    assert_eq!(got, placed_differently(&finals[0], &finals[1]));
    (runs, got)
}

/// The pods whose final node differs between two runs' placements.
fn placed_differently(
    a: &[(String, Option<String>)],
    b: &[(String, Option<String>)],
) -> Vec<Difference> {
    assert_eq!(
        a.iter().map(|p| &p.0).collect::<Vec<_>>(),
        b.iter().map(|p| &p.0).collect::<Vec<_>>()
    );
    a.iter()
        .zip(b)
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, b)| (a.0.clone(), vec![a.1.clone(), b.1.clone()]))
        .collect()
}

#[test]
fn least_and_most_allocated_compared_agree_with_their_placements() {
    let least = data("report-least-allocated.yaml");
    let most = data("report-most-allocated.yaml");
    let (runs, got) = compared_with_simulate(
        &["--config", &least, "--config", &most],
        &[&["--config", &least], &["--config", &most]],
    );
    for (i, config) in [&least, &most].into_iter().enumerate() {
        assert_eq!(
            runs[i]["run"],
            ["report-least-allocated", "report-most-allocated"][i]
        );
        assert_eq!(runs[i]["config"], config.as_str());
    }
    assert!(!got.is_empty());
    // Bin packing shows: MostAllocated puts the pods on fewer nodes and spreads the
    // memory utilisation wider.
    assert!(
        runs[1]["nodes_receiving"].as_u64() < runs[0]["nodes_receiving"].as_u64(),
        "{runs:?}"
    );
    assert!(figure(&runs[1], "memory")[3] > figure(&runs[0], "memory")[3]);
}

/// v1.36 weighs NodeResourcesBalancedAllocation differently: on this scenario two pods
/// change node (`simulate --compare-versions 1.35,1.36` lists them).
#[test]
fn two_kubernetes_versions_compared_agree_with_their_placements() {
    let (runs, got) = compared_with_simulate(
        &["--compare-versions", "1.35,1.36"],
        &[
            &["--kubernetes-version", "1.35"],
            &["--kubernetes-version", "1.36"],
        ],
    );
    for (i, version) in ["1.35", "1.36"].into_iter().enumerate() {
        assert_eq!(runs[i]["run"], format!("v{version}"));
        assert_eq!(runs[i]["version"], version);
    }
    assert_eq!(
        got.iter().map(|d| d.0.as_str()).collect::<Vec<_>>(),
        ["team-a/web-013", "prod/cache-029"]
    );
    // The page names the versions in its header, cards and columns.
    let dir =
        std::env::temp_dir().join(format!("kubesched-report-versions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("versions.html");
    let out = kubesched(&[
        "report",
        &scenario_path(),
        "--compare-versions",
        "1.35,1.36",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("2 Kubernetes versions compared"), "{html}");
    assert!(html.contains("kube-scheduler v1.35 vs v1.36 behaviour"));
    assert!(html.contains("<th>v1.35</th><th>v1.36</th>"));
    assert!(html.contains("Pods placed differently"));
    assert!(html.contains("team-a/web-013"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_page_compares_the_configurations_and_escapes_names() {
    let dir = std::env::temp_dir().join(format!("kubesched-report-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    let least = data("report-least-allocated.yaml");
    let most = data("report-most-allocated.yaml");
    let out = kubesched(&[
        "report",
        &scenario_path(),
        "--config",
        &least,
        "--config",
        &most,
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Pods placed differently"));
    assert!(html.contains(&most));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network"
    );

    // A file whose name is markup: it is the page's title and the configuration's name.
    let scenario = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: i}]}\n";
    let input = dir.join("<img src=x onerror=alert(1)>.yaml");
    std::fs::write(&input, scenario).unwrap();
    let out = kubesched(&[
        "report",
        input.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<img"), "a name became markup");
    assert!(html.contains("&#60;img src=x onerror=alert(1)&#62;.yaml"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn input_mistakes_are_one_line() {
    let out = kubesched(&["report"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "kubesched: error: report: give -o FILE for the HTML page (-o - writes it to standard output), or --format jsonl for the figures\n"
    );
    let out = kubesched(&[
        "report",
        "--format",
        "jsonl",
        "--detail-pod",
        "default/nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        error_after_notes(&out.stderr),
        "kubesched: error: --detail-pod \"default/nope\": no pending pod of that NAMESPACE/NAME in the scenario"
    );
    let out = kubesched(&[
        "report",
        "--format",
        "jsonl",
        "--config",
        &data("explain-tie.yaml"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = error_after_notes(&out.stderr);
    assert!(err.starts_with("kubesched: error: --config "), "{err}");
    // --compare-versions runs one configuration under both versions.
    let least = data("report-least-allocated.yaml");
    let out = kubesched(&[
        "report",
        "--format",
        "jsonl",
        "--compare-versions",
        "1.35,1.36",
        "--config",
        &least,
        "--config",
        &least,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        error_after_notes(&out.stderr),
        "kubesched: error: --compare-versions 1.35,1.36: compares versions under one configuration; give at most one --config (or compare the configurations without --compare-versions)"
    );
    let out = kubesched(&[
        "report",
        "--format",
        "jsonl",
        "--compare-versions",
        "1.35,1.36",
        "--kubernetes-version",
        "1.35",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        error_after_notes(&out.stderr),
        "kubesched: error: --kubernetes-version 1.35: --compare-versions 1.35,1.36 names the versions; give one of them"
    );
}

/// The one error line of `stderr`, after nothing but notes (the demo's say what it runs).
fn error_after_notes(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    let (last, notes) = lines.split_last().expect("an error line");
    assert!(
        notes.iter().all(|l| l.starts_with("kubesched: note: ")),
        "{text}"
    );
    assert!(last.starts_with("kubesched: error: "), "{text}");
    last.to_string()
}

#[test]
fn capacity_html_charts_the_answer_jsonl_gives() {
    let dir = std::env::temp_dir().join(format!("kubesched-capacity-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("capacity.html");
    let out = kubesched(&[
        "capacity",
        &data("whatif-worker-pod.yaml"),
        &scenario_path(),
        "--format",
        "jsonl",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    let count = answer["count"].as_u64().unwrap();
    assert!(
        html.contains(&format!("{count} more copies of default/worker fit")),
        "{html}"
    );
    // The charts are inline SVG: every node that took a copy is a bar whose tooltip
    // says how many, and the histogram's buckets add up to every node.
    for id in ["capacity-zones", "capacity-histogram", "capacity-top"] {
        assert!(
            html.contains(&format!(r#"<figure class="svgchart" id="chart-{id}">"#)),
            "{id}"
        );
    }
    let nodes = answer["nodes"].as_object().unwrap();
    for (node, copies) in nodes {
        let copies = copies.as_u64().unwrap();
        let tip = format!("<title>{node}: {copies} copies</title>");
        assert_eq!(html.contains(&tip), copies > 0, "{tip}");
    }
    let zero = nodes.values().filter(|c| c.as_u64() == Some(0)).count();
    assert!(
        html.contains(&format!("<title>0: {zero} nodes</title>")),
        "{html}"
    );
    for plugin in answer["stop"]["plugins"].as_object().unwrap().keys() {
        assert!(html.contains(&format!("<b>{plugin}</b>")), "{plugin}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
