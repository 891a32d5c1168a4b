//! `kubesched report --format jsonl`: the report's figures for scripts, one JSON object a
//! line. First one `"kind": "run"` line per configuration (or Kubernetes version) with
//! the kube-scheduler version it followed and its cluster-level figures (the page's
//! comparison table), then one `"kind": "difference"` line per pod
//! the configurations place differently, with its node under each (`null`: no node).

use serde::Serialize;

use crate::model::{Figures, Report};

/// One configuration's figures.
#[derive(Serialize)]
struct RunLine<'a> {
    kind: &'static str,
    run: &'a str,
    index: usize,
    config: &'a str,
    version: &'a str,
    #[serde(flatten)]
    figures: &'a Figures,
    reference_pod: Option<&'a str>,
}

/// One pod placed differently.
#[derive(Serialize)]
struct DifferenceLine<'a> {
    kind: &'static str,
    pod: &'a str,
    nodes: Vec<Option<&'a str>>,
}

/// The report's figures as JSON Lines (see the module doc).
pub fn figures_jsonl(report: &Report) -> String {
    let mut out = String::new();
    let mut push = |line: serde_json::Result<String>| {
        // Serialising plain structs of strings and numbers cannot fail.
        out.push_str(&line.unwrap_or_default());
        out.push('\n');
    };
    for (index, run) in report.runs.iter().enumerate() {
        push(serde_json::to_string(&RunLine {
            kind: "run",
            run: &run.name,
            index,
            config: &run.config,
            version: &run.version,
            figures: &run.figures,
            reference_pod: report.reference.as_ref().map(|r| r.pod.as_str()),
        }));
    }
    for d in &report.differences {
        push(serde_json::to_string(&DifferenceLine {
            kind: "difference",
            pod: &d.pod,
            nodes: d.nodes.iter().map(Option::as_deref).collect(),
        }));
    }
    out
}
