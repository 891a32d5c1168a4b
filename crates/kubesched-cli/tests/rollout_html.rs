//! `kubesched rollout --html FILE`: the page is written, its embedded model has the
//! numbers `rollout --format jsonl` and the table print for every step, the nodes and
//! the cluster's utilisation are recomputed here from the scenario's requests, and the
//! charts (inline SVG) carry them.

mod common;

use common::{data, kubesched, rollout_answer};
use serde_json::Value;

/// The page's embedded model.
fn model(html: &str) -> Value {
    let start = r#"<script type="application/json" id="rollout-model">"#;
    let from = html.find(start).expect("the model is embedded") + start.len();
    let to = from + html[from..].find("</script>").unwrap();
    serde_json::from_str(&html[from..to]).unwrap()
}

/// Runs `rollout` on whatif-cluster.yaml with `--html`, as jsonl and as a table:
/// (exit code, jsonl answer, table, the page).
fn run(deployment: &str, dir: &std::path::Path) -> (Option<i32>, Value, String, String) {
    let page = dir.join(format!("{deployment}.html"));
    let args = |format: &[&str]| {
        let deployment = data(deployment);
        let cluster = data("whatif-cluster.yaml");
        let mut args = vec!["rollout", &deployment, &cluster, "--format"];
        args.extend(format);
        args.extend(["--html", page.to_str().unwrap()]);
        kubesched(&args)
    };
    let table = args(&["table"]);
    let jsonl = args(&["jsonl", "--detail", "none"]);
    assert_eq!(table.status.code(), jsonl.status.code());
    let answer = rollout_answer(&String::from_utf8_lossy(&jsonl.stdout));
    let html = std::fs::read_to_string(&page).unwrap();
    (
        jsonl.status.code(),
        answer,
        String::from_utf8_lossy(&table.stdout).into_owned(),
        html,
    )
}

fn pct(part: f64, whole: f64) -> f64 {
    (part * 10000.0 / whole).round() / 100.0
}

/// Checks the page's model against the jsonl answer and the table, step by step;
/// `new_cpu` is what one new pod requests in millicores (the old ones: 1 cpu, 1Gi; the
/// cluster: 3 nodes of 4 cpu and 8Gi, with 4 cpu and 4Gi requested at the start).
fn check(answer: &Value, table: &str, html: &str, new_cpu: i64) {
    let m = model(html);
    assert_eq!(m["deployment"], answer["deployment"]);
    assert_eq!(m["replicas"], answer["replicas"]);
    assert_eq!(m["result"], answer["result"]);
    let steps = answer["steps"].as_array().unwrap();
    let figures = m["steps"].as_array().unwrap();
    assert_eq!(figures.len(), steps.len() + 1, "the start and every step");
    let gib = 1i64 << 30;
    let (alloc_cpu, alloc_mem) = (12_000.0, (24 * gib) as f64);
    assert_eq!(answer["allocatable"]["cpu"], 12_000);
    assert_eq!(answer["allocatable"]["memory"], 24 * gib);
    // Where the Deployment's pods are, replayed from the answer's own events.
    let mut pods: Vec<String> = answer["oldPods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["node"].as_str().map(str::to_string))
        .collect();
    let (mut cpu, mut mem) = (4_000i64, 4 * gib);
    let start = &figures[0];
    assert_eq!(start["step"], 0);
    assert_eq!(start["old"], answer["oldPods"].as_array().unwrap().len());
    assert_eq!(start["cpu"], pct(cpu as f64, alloc_cpu));
    assert_eq!(start["memory"], pct(mem as f64, alloc_mem));
    let mut now_lines = table.lines().filter(|l| l.starts_with("  now: "));
    for (s, f) in steps.iter().zip(&figures[1..]) {
        assert_eq!(f["step"], s["step"]);
        assert_eq!(f["old"], s["old"]);
        assert_eq!(f["new_running"], s["newRunning"]);
        assert_eq!(f["new_pending"], s["newPending"]);
        assert_eq!(f["nodes_used"], s["nodesUsed"]);
        assert_eq!(f["deleted"], s["deleted"].as_array().unwrap().len());
        assert_eq!(f["created"], s["created"]);
        for d in s["deleted"].as_array().unwrap() {
            if let Some(node) = d["node"].as_str() {
                let i = pods.iter().position(|p| p == node).unwrap();
                pods.remove(i);
                cpu -= 1_000;
                mem -= gib;
            }
        }
        let mut scheduled = 0;
        for a in s["attempts"].as_array().unwrap() {
            if let Some(node) = a["node"].as_str() {
                pods.push(node.to_string());
                scheduled += 1;
                cpu += new_cpu;
                mem += gib;
            }
        }
        assert_eq!(f["scheduled"], scheduled);
        let mut nodes = pods.clone();
        nodes.sort();
        nodes.dedup();
        assert_eq!(f["nodes_used"], nodes.len(), "step {}", s["step"]);
        assert_eq!(f["cpu"], pct(cpu as f64, alloc_cpu), "step {}", s["step"]);
        assert_eq!(
            f["memory"],
            pct(mem as f64, alloc_mem),
            "step {}",
            s["step"]
        );
        // The table's line for the step.
        assert_eq!(
            now_lines.next(),
            Some(
                format!(
                    "  now: {} old, {} new running, {} new pending",
                    f["old"], f["new_running"], f["new_pending"]
                )
                .as_str()
            )
        );
        // Its stacked column in the pods chart.
        let step = format!("step {}", s["step"]);
        for (series, key) in [
            ("new running", "new_running"),
            ("new pending", "new_pending"),
        ] {
            let n = f[key].as_u64().unwrap();
            let tip = format!("<title>{step}: {series} {n} pods</title>");
            assert_eq!(html.contains(&tip), n > 0, "{tip}");
        }
    }
    assert_eq!(now_lines.next(), None);
    // The pods per node at the end, as replayed.
    for n in m["nodes"].as_array().unwrap() {
        let node = n["node"].as_str().unwrap();
        assert_eq!(n["after"], pods.iter().filter(|p| *p == node).count());
    }
    for id in [
        "rollout-pods",
        "rollout-nodes",
        "rollout-utilisation",
        "rollout-per-node",
    ] {
        assert!(
            html.contains(&format!(r#"<figure class="svgchart" id="chart-{id}">"#)),
            "{id}"
        );
    }
    assert!(html.contains("<svg viewBox="));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no network"
    );
}

#[test]
fn rollout_html_charts_the_steps_jsonl_and_the_table_give() {
    let dir = std::env::temp_dir().join(format!("kubesched-rollout-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // Completes in 4 steps.
    let (code, answer, table, html) = run("whatif-web-2cpu.yaml", &dir);
    assert_eq!(code, Some(0));
    assert_eq!(answer["result"], "Complete");
    check(&answer, &table, &html, 2_000);
    assert!(html.contains("Deployment default/web: complete in 4 step(s)"));

    // Stalls: the page says why.
    let (code, answer, table, html) = run("whatif-web-3cpu.yaml", &dir);
    assert_eq!(code, Some(1));
    assert_eq!(answer["result"], "Stalled");
    check(&answer, &table, &html, 3_000);
    let m = model(&html);
    let stall = m["stall"].as_str().unwrap();
    assert!(stall.contains("2 Insufficient cpu."), "{stall}");
    assert!(html.contains("stalls at step 4"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rollout_html_unwritable_is_one_line() {
    let out = kubesched(&[
        "rollout",
        &data("whatif-web-2cpu.yaml"),
        &data("whatif-cluster.yaml"),
        "--html",
        "/nonexistent-dir/page.html",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("kubesched: error: --html /nonexistent-dir/page.html: cannot write: "),
        "{err}"
    );
}
