//! The report's model against kube-scheduler's own results: every conformance case of
//! `conformance/cases*` (v1.35's expected lines) is built into a report, and each
//! attempt of the model, with its heat map turned back into `scores` and `rejected`,
//! must be the expected JSON Line exactly: every pod present, in order, with the same
//! node, message, victims and numbers. The nodes' pod counts after the run must follow
//! from the lines (placed pods in, preemption victims out), and the rendered page must
//! carry every pod and the model's own JSON.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use kubesched_framework::{Features, KubernetesVersion};
use kubesched_report::model::{OutcomeKind, Report, Run};
use kubesched_report::{Options, Variant, build};
use kubesched_sim::SimulationOptions;
use kubesched_sim::scenario::{self, Source};
use serde_json::{Map, Value, json};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn known_failures() -> Vec<String> {
    std::fs::read_to_string(repo_root().join("conformance/known-failures.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn report_of(path: &Path, preemption: bool) -> Report {
    let text = std::fs::read_to_string(path).unwrap();
    let scenario = scenario::load(&[Source {
        name: path.display().to_string(),
        text,
    }])
    .unwrap();
    let options = Options {
        simulation: SimulationOptions {
            preemption,
            features: Features::new(KubernetesVersion::V1_35),
            ..SimulationOptions::default()
        },
        detail_budget: usize::MAX,
        ..Options::default()
    };
    build(
        "case",
        &[Variant {
            name: "case".into(),
            scenario,
            features: None,
        }],
        &options,
    )
    .unwrap()
}

/// One attempt of the model as `simulate --format jsonl` prints it.
fn line_of(report: &Report, run: &Run, i: usize) -> Value {
    let a = &run.attempts[i];
    let mut line = Map::new();
    line.insert("pod".into(), json!(a.pod));
    line.insert("scheduler".into(), json!(a.scheduler));
    match a.outcome {
        OutcomeKind::Ignored => {
            line.insert("ignored".into(), json!(true));
            return Value::Object(line);
        }
        OutcomeKind::Gated => {
            line.insert("gated".into(), json!(a.gates));
            return Value::Object(line);
        }
        OutcomeKind::Scheduled => {
            line.insert("node".into(), json!(a.node));
        }
        OutcomeKind::Unschedulable => {
            line.insert("node".into(), Value::Null);
            line.insert("message".into(), json!(a.message));
        }
        OutcomeKind::Nominated => {
            line.insert("node".into(), Value::Null);
            line.insert("message".into(), json!(a.message));
            line.insert("nominated".into(), json!(a.nominated));
            line.insert("victims".into(), json!(a.victims));
        }
    }
    let detail = &run.details[a.detail.expect("an unlimited budget keeps every detail")];
    let mut scores = BTreeMap::new();
    for (node, values, total) in &detail.scored {
        let plugins: BTreeMap<&str, i64> = detail
            .plugins
            .iter()
            .map(String::as_str)
            .zip(values.iter().copied())
            .collect();
        // Without score plugins kube-scheduler gives every feasible node 1.
        let sum = if detail.plugins.is_empty() {
            1
        } else {
            values.iter().sum::<i64>()
        };
        assert_eq!(
            sum, *total,
            "{}: total of {}",
            a.pod, report.nodes[*node].name
        );
        scores.insert(report.nodes[*node].name.clone(), plugins);
    }
    // The winner is the first in node order of the best total, and the ties are the
    // others with that total.
    if let (Some(winner), Some(best)) = (detail.winner, detail.scored.iter().map(|s| s.2).max()) {
        let tied: Vec<usize> = detail
            .scored
            .iter()
            .filter(|s| s.2 == best)
            .map(|s| s.0)
            .collect();
        assert_eq!(winner, tied[0], "{}: winner", a.pod);
        assert_eq!(detail.ties, if tied.len() > 1 { tied } else { vec![] });
    }
    let mut rejected = BTreeMap::new();
    for g in &detail.rejected {
        for n in &g.nodes {
            rejected.insert(report.nodes[*n].name.clone(), g.reasons.clone());
        }
    }
    line.insert("scores".into(), json!(scores));
    line.insert("rejected".into(), json!(rejected));
    Value::Object(line)
}

fn check_case(folder: &str, path: &Path, preemption: bool) -> Result<usize, String> {
    let expected: Vec<Value> = std::fs::read_to_string(path.with_extension("expected.jsonl"))
        .map_err(|e| e.to_string())?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let report = report_of(path, preemption);
    let run = &report.runs[0];
    if run.attempts.len() != expected.len() {
        return Err(format!(
            "{folder}: {} attempts in the model, {} expected lines",
            run.attempts.len(),
            expected.len()
        ));
    }
    for (i, e) in expected.iter().enumerate() {
        let got = line_of(&report, run, i);
        if &got != e {
            return Err(format!("line {}: expected {e}\n got {got}", i + 1));
        }
    }
    // Pods per node after the run: the ones there before, the placed ones in, the
    // victims out.
    let mut pods: HashMap<&str, i64> = report
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.before.pods))
        .collect();
    for e in &expected {
        if let Some(node) = e["node"].as_str() {
            *pods.get_mut(node).unwrap() += 1;
        }
        if let (Some(node), Some(victims)) = (e["nominated"].as_str(), e["victims"].as_array()) {
            *pods.get_mut(node).unwrap() -= victims.len() as i64;
        }
    }
    for (n, after) in report.nodes.iter().zip(&run.after) {
        if pods[n.name.as_str()] != after.pods {
            return Err(format!(
                "node {}: {} pods after the run in the model, {} from the lines",
                n.name,
                after.pods,
                pods[n.name.as_str()]
            ));
        }
    }
    // The page lists every pod: in its model JSON, and the names escaped in the
    // differences/overview never break out as markup.
    let page = kubesched_report::html::render(&report);
    for a in &run.attempts {
        let escaped = serde_json::to_string(&a.pod)
            .unwrap()
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026");
        if !page.contains(&escaped) {
            return Err(format!("the page does not carry pod {}", a.pod));
        }
    }
    Ok(expected.len())
}

#[test]
fn every_conformance_case_reports_what_kube_scheduler_decided() {
    let failures = known_failures();
    let mut cases = 0;
    let mut lines = 0;
    let mut errors = Vec::new();
    for (folder, preemption) in [
        ("cases", false),
        ("cases-default", false),
        ("cases-preemption", true),
        ("cases-volumes", false),
        ("cases-dra", false),
    ] {
        let dir = repo_root().join("conformance").join(folder);
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        paths.sort();
        for path in paths {
            let name = format!("{folder}/{}", path.file_stem().unwrap().to_string_lossy());
            if failures.contains(&name) {
                continue;
            }
            match check_case(&name, &path, preemption) {
                Ok(n) => {
                    cases += 1;
                    lines += n;
                }
                Err(e) => errors.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(cases > 150, "only {cases} cases ran");
    println!("{cases} cases, {lines} attempts: the model matches every line");
}

#[test]
fn a_small_budget_keeps_the_pending_pods_detail_first() {
    let path = repo_root().join("conformance/cases/all-rejected-mixed-reasons.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let scenario = scenario::load(&[Source {
        name: "x".into(),
        text,
    }])
    .unwrap();
    let nodes = scenario.nodes.len();
    let report = build(
        "x",
        &[Variant {
            name: "x".into(),
            scenario,
            features: None,
        }],
        &Options {
            // One attempt's worth.
            detail_budget: nodes * 8,
            ..Options::default()
        },
    )
    .unwrap();
    let run = &report.runs[0];
    let kept: Vec<_> = run.attempts.iter().filter(|a| a.detail.is_some()).collect();
    assert_eq!(kept.len(), 1, "{:?}", run.attempts);
    assert_ne!(kept[0].outcome, OutcomeKind::Scheduled);
}
