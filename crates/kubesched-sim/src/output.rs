//! How simulation results are printed: FORMAT.md's JSON Lines for scripts, a table for
//! people, and `--explain` for one pod's node-by-node story.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::simulate::{PodOutcome, PodResult};

/// One result as FORMAT.md's JSON object.
pub fn to_json(result: &PodResult) -> Value {
    let mut obj = Map::new();
    obj.insert("pod".into(), json!(result.pod));
    obj.insert("scheduler".into(), json!(result.scheduler));
    let details = |obj: &mut Map<String, Value>| {
        let scores: Map<String, Value> = result
            .scores
            .iter()
            .map(|(node, s)| {
                let plugins: Map<String, Value> = s
                    .plugins
                    .iter()
                    .map(|(p, v)| (p.clone(), json!(v)))
                    .collect();
                (node.clone(), Value::Object(plugins))
            })
            .collect();
        let rejected: Map<String, Value> = result
            .rejected
            .iter()
            .map(|(node, r)| (node.clone(), json!(r.reasons)))
            .collect();
        obj.insert("scores".into(), Value::Object(scores));
        obj.insert("rejected".into(), Value::Object(rejected));
    };
    match &result.outcome {
        PodOutcome::Ignored => {
            obj.insert("ignored".into(), json!(true));
        }
        PodOutcome::Gated(gates) => {
            obj.insert("gated".into(), json!(gates));
        }
        PodOutcome::Scheduled(node) => {
            obj.insert("node".into(), json!(node));
            details(&mut obj);
        }
        PodOutcome::Unschedulable(message) => {
            obj.insert("node".into(), Value::Null);
            obj.insert("message".into(), json!(message));
            details(&mut obj);
        }
        PodOutcome::Nominated {
            message,
            node,
            victims,
            ..
        } => {
            obj.insert("node".into(), Value::Null);
            obj.insert("message".into(), json!(message));
            details(&mut obj);
            obj.insert("nominated".into(), json!(node));
            obj.insert("victims".into(), json!(victims));
        }
    }
    Value::Object(obj)
}

/// Every result as JSON Lines.
pub fn jsonl(results: &[PodResult]) -> String {
    let mut out = String::new();
    for r in results {
        out.push_str(&to_json(r).to_string());
        out.push('\n');
    }
    out
}

fn node_column(outcome: &PodOutcome) -> String {
    match outcome {
        PodOutcome::Ignored => "-".into(),
        PodOutcome::Gated(_) => "Pending".into(),
        PodOutcome::Scheduled(n) => n.clone(),
        PodOutcome::Unschedulable(_) => "Pending".into(),
        PodOutcome::Nominated { .. } => "Pending".into(),
    }
}

fn reason_column(result: &PodResult) -> String {
    match &result.outcome {
        PodOutcome::Ignored => format!("not ours: no profile named {:?}", result.scheduler),
        PodOutcome::Gated(g) => format!("scheduling gates: {}", g.join(", ")),
        PodOutcome::Scheduled(node) => match result.scores.get(node) {
            Some(s) => format!(
                "highest score {} of {} feasible node(s)",
                s.total,
                result.scores.len()
            ),
            None => "the only feasible node".into(),
        },
        PodOutcome::Unschedulable(m) => m.clone(),
        PodOutcome::Nominated { node, victims, .. } => {
            format!("nominated to {node}, preempting {}", victims.join(", "))
        }
    }
}

/// A table for people: one row per attempt.
pub fn table(results: &[PodResult]) -> String {
    let rows: Vec<[String; 4]> = results
        .iter()
        .map(|r| {
            [
                r.pod.clone(),
                r.scheduler.clone(),
                node_column(&r.outcome),
                reason_column(r),
            ]
        })
        .collect();
    let header = ["POD", "SCHEDULER", "NODE", "REASON"].map(String::from);
    let mut widths = [0usize; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let _ = writeln!(
            out,
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
    }
    out
}

/// Every attempt of one pod (`namespace/name`), node by node; `None` when no pending
/// pod has that name.
pub fn explain(results: &[PodResult], pod: &str) -> Option<String> {
    let attempts: Vec<&PodResult> = results.iter().filter(|r| r.pod == pod).collect();
    if attempts.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (n, r) in attempts.iter().enumerate() {
        if attempts.len() > 1 {
            let _ = writeln!(out, "Attempt {}:", n + 1);
        }
        let _ = writeln!(out, "Pod {} (scheduler {})", r.pod, r.scheduler);
        match &r.outcome {
            PodOutcome::Ignored => {
                let _ = writeln!(
                    out,
                    "  not scheduled by kubesched: no profile is named {:?}",
                    r.scheduler
                );
                continue;
            }
            PodOutcome::Gated(g) => {
                let _ = writeln!(
                    out,
                    "  not attempted: held by scheduling gates {}",
                    g.join(", ")
                );
                continue;
            }
            PodOutcome::Scheduled(node) => {
                let _ = writeln!(out, "  scheduled on {node}");
            }
            PodOutcome::Unschedulable(m) => {
                let _ = writeln!(out, "  pending: {m}");
            }
            PodOutcome::Nominated {
                message,
                node,
                victims,
                candidates,
                selection_reason,
            } => {
                let _ = writeln!(out, "  pending: {message}");
                let _ = writeln!(
                    out,
                    "  preemption nominated {node}; victims: {}",
                    victims.join(", ")
                );
                if !candidates.is_empty() {
                    let _ = writeln!(out, "  preemption candidates (in node order):");
                    for c in candidates {
                        let mark = if c.node == *node {
                            "  <- nominated"
                        } else {
                            ""
                        };
                        let _ = writeln!(
                            out,
                            "    {}: evict {} ({}){mark}",
                            c.node,
                            c.victims.join(", "),
                            c.details
                        );
                    }
                }
                if let Some(why) = selection_reason {
                    let _ = writeln!(out, "  {node} won: {why}");
                }
            }
        }
        let width = r
            .node_order
            .iter()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        for node in r.node_order.iter() {
            let chosen = matches!(&r.outcome, PodOutcome::Scheduled(n) if n == node);
            let line = if let Some(rej) = r.rejected.get(node) {
                format!(
                    "rejected by {}: {}",
                    rej.plugin.as_deref().unwrap_or("a filter"),
                    rej.reasons.join("; ")
                )
            } else if let Some(s) = r.scores.get(node) {
                let parts: Vec<String> =
                    s.plugins.iter().map(|(p, v)| format!("{p} {v}")).collect();
                let sum = if parts.is_empty() {
                    "no score plugins".to_string()
                } else {
                    parts.join(" + ")
                };
                format!("feasible, score {} = {sum}", s.total)
            } else if chosen {
                "feasible (the only one: no scoring)".to_string()
            } else {
                "not evaluated".to_string()
            };
            let mark = if chosen { "  <- chosen" } else { "" };
            let _ = writeln!(out, "  {node:<width$}  {line}{mark}");
        }
    }
    Some(out)
}
