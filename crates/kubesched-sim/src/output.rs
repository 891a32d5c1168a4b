//! How simulation results are printed: FORMAT.md's JSON Lines for scripts, a table for
//! people, and `--explain` for one pod's node-by-node story. [`write_jsonl`] and
//! [`Table`] take one result at a time, so they can follow
//! [`simulate_each`](crate::simulate_each) without the results being collected.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::ser::{Serialize, Serializer};
use serde_json::Value;

use crate::simulate::{Detail, NodeScores, PodOutcome, PodResult, Rejection};

/// One result as FORMAT.md's JSON object.
pub fn to_json(result: &PodResult) -> Value {
    serde_json::to_value(Line::new(result, Detail::All))
        .expect("a result always converts to JSON: string keys, integers and strings")
}

/// Every result as JSON Lines.
pub fn jsonl(results: &[PodResult]) -> String {
    let mut out = Vec::new();
    for r in results {
        write_jsonl(&mut out, r, Detail::All).expect("writing to a Vec does not fail");
    }
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Writes one result as a line of JSON Lines (newline included), straight to `out`
/// without building the JSON in memory first. With [`Detail::All`] the line is
/// FORMAT.md's, byte for byte what [`jsonl`] prints (keys in alphabetical order, nodes
/// and plugins sorted by name). [`Detail::Rejected`] leaves out `scores`,
/// [`Detail::None`] `scores` and `rejected`: the pod's outcome line alone.
pub fn write_jsonl(
    out: &mut impl std::io::Write,
    result: &PodResult,
    detail: Detail,
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &Line::new(result, detail))?;
    out.write_all(b"\n")
}

/// FORMAT.md's object for one result, fields in alphabetical order: the order the
/// collected `serde_json::Map` (a sorted map) has always printed them in.
#[derive(serde::Serialize)]
struct Line<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    gated: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignored: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    /// `Some(None)` prints `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nominated: Option<&'a str>,
    pod: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rejected: Option<RejectedField<'a>>,
    scheduler: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    scores: Option<ScoresField<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    victims: Option<&'a [String]>,
}

impl<'a> Line<'a> {
    fn new(result: &'a PodResult, detail: Detail) -> Self {
        let mut line = Line {
            gated: None,
            ignored: None,
            message: None,
            node: None,
            nominated: None,
            pod: &result.pod,
            rejected: None,
            scheduler: &result.scheduler,
            scores: None,
            victims: None,
        };
        let attempted = match &result.outcome {
            PodOutcome::Ignored => {
                line.ignored = Some(true);
                false
            }
            PodOutcome::Gated(gates) => {
                line.gated = Some(gates);
                false
            }
            PodOutcome::Scheduled(node) => {
                line.node = Some(Some(node));
                true
            }
            PodOutcome::Unschedulable(message) => {
                line.node = Some(None);
                line.message = Some(message);
                true
            }
            PodOutcome::Nominated {
                message,
                node,
                victims,
                ..
            } => {
                line.node = Some(None);
                line.message = Some(message);
                line.nominated = Some(node);
                line.victims = Some(victims);
                true
            }
        };
        if attempted {
            if detail == Detail::All {
                line.scores = Some(ScoresField(&result.scores));
            }
            if detail != Detail::None {
                line.rejected = Some(RejectedField(&result.rejected));
            }
        }
        line
    }
}

/// `{"node": {"Plugin": score, ...}, ...}`.
struct ScoresField<'a>(&'a BTreeMap<String, NodeScores>);

impl Serialize for ScoresField<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(node, s)| {
            // By name, as a JSON object prints them; a repeated name keeps the last.
            let plugins: BTreeMap<&str, i64> =
                s.plugins.iter().map(|(p, v)| (p.as_str(), *v)).collect();
            (node, plugins)
        }))
    }
}

/// `{"node": ["reason", ...], ...}`.
struct RejectedField<'a>(&'a BTreeMap<String, Rejection>);

impl Serialize for RejectedField<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(node, r)| (node, &r.reasons)))
    }
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
    let mut t = Table::default();
    for r in results {
        t.push(r);
    }
    t.render()
}

/// The table of [`table`], built one result at a time: a row keeps only its four
/// cells, so the results themselves (every node's verdict) can be dropped as soon as
/// they are pushed. The columns are as wide as their widest cell, so nothing is printed
/// before the last row is in.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<[String; 4]>,
}

impl Table {
    /// Adds the row of one result (its reason needs the chosen node's score, so the
    /// result should have [`Detail::All`]).
    pub fn push(&mut self, r: &PodResult) {
        self.rows.push([
            r.pod.clone(),
            r.scheduler.clone(),
            node_column(&r.outcome),
            reason_column(r),
        ]);
    }

    /// How many rows there are.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The header and every row, aligned.
    pub fn render(&self) -> String {
        let header = ["POD", "SCHEDULER", "NODE", "REASON"].map(String::from);
        let mut widths = [0usize; 3];
        for row in std::iter::once(&header).chain(&self.rows) {
            for (w, cell) in widths.iter_mut().zip(row.iter()) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
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
