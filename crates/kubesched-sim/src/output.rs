//! How simulation results are printed: FORMAT.md's JSON Lines for scripts, a table for
//! people, and `--explain` for one pod's node-by-node story. [`write_jsonl`] and
//! [`Table`] take one result at a time, so they can follow
//! [`simulate_each`](crate::simulate_each) without the results being collected.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::ser::{Serialize, Serializer};
use serde_json::Value;

use crate::attempt::Attempt;
use crate::simulate::{Detail, NodeScores, PodOutcome, PodResult, Rejection};

/// One result as FORMAT.md's JSON object.
pub fn to_json(result: &PodResult) -> Value {
    serde_json::to_value(result_line(result, Detail::All))
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
    serde_json::to_writer(&mut *out, &result_line(result, detail))?;
    out.write_all(b"\n")
}

fn result_line(result: &PodResult, detail: Detail) -> Line<'_, ScoresField<'_>, RejectedField<'_>> {
    let mut line = Line::new(&result.pod, &result.scheduler, &result.outcome);
    if line.attempted() {
        if detail == Detail::All {
            line.scores = Some(ScoresField(&result.scores));
        }
        if detail != Detail::None {
            line.rejected = Some(RejectedField(&result.rejected));
        }
    }
    line
}

/// Writes one attempt as [`write_jsonl`] writes its [`Attempt::to_result`], byte for
/// byte, but reads the scheduler's score table and statuses directly: no string is
/// made per node, so a line of a large cluster costs little more than its bytes.
pub fn write_jsonl_attempt(
    out: &mut impl std::io::Write,
    attempt: &Attempt,
    detail: Detail,
) -> std::io::Result<()> {
    write_attempt_line(out, attempt, detail, None)
}

/// Writes one attempt of a rollout's step as [`write_jsonl_attempt`] does, with the
/// step's number as one more field, `step` (in its alphabetical place).
pub fn write_jsonl_step_attempt(
    out: &mut impl std::io::Write,
    attempt: &Attempt,
    detail: Detail,
    step: usize,
) -> std::io::Result<()> {
    write_attempt_line(out, attempt, detail, Some(step))
}

fn write_attempt_line(
    out: &mut impl std::io::Write,
    attempt: &Attempt,
    detail: Detail,
    step: Option<usize>,
) -> std::io::Result<()> {
    let mut line = Line::new(&attempt.pod, &attempt.scheduler, &attempt.outcome);
    line.step = step;
    if line.attempted() {
        if detail == Detail::All {
            line.scores = Some(AttemptScores(attempt));
        }
        if detail != Detail::None {
            line.rejected = Some(AttemptRejected(attempt));
        }
    }
    serde_json::to_writer(&mut *out, &line)?;
    out.write_all(b"\n")
}

/// FORMAT.md's object for one result, fields in alphabetical order: the order the
/// collected `serde_json::Map` (a sorted map) has always printed them in.
#[derive(serde::Serialize)]
struct Line<'a, S, R> {
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
    rejected: Option<R>,
    scheduler: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    scores: Option<S>,
    /// A rollout's step.
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    victims: Option<&'a [String]>,
}

impl<'a, S, R> Line<'a, S, R> {
    /// The line without `scores` and `rejected`.
    fn new(pod: &'a str, scheduler: &'a str, outcome: &'a PodOutcome) -> Self {
        let mut line = Line {
            gated: None,
            ignored: None,
            message: None,
            node: None,
            nominated: None,
            pod,
            rejected: None,
            scheduler,
            scores: None,
            step: None,
            victims: None,
        };
        match outcome {
            PodOutcome::Ignored => line.ignored = Some(true),
            PodOutcome::Gated(gates) => line.gated = Some(gates),
            PodOutcome::Scheduled(node) => line.node = Some(Some(node)),
            PodOutcome::Unschedulable(message) => {
                line.node = Some(None);
                line.message = Some(message);
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
            }
        }
        line
    }

    /// Whether the pod went through the filters (so the line has per-node detail).
    fn attempted(&self) -> bool {
        self.node.is_some()
    }
}

/// An attempt's `scores`, in node-name order, each node's plugins in name order.
struct AttemptScores<'a>(&'a Attempt);

impl Serialize for AttemptScores<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let attempt = self.0;
        let columns = attempt.plugin_columns();
        let rows = attempt.rows_by_node();
        let names = attempt.names();
        serializer.collect_map(
            names
                .by_name()
                .iter()
                .filter(|&&node| rows[node] != usize::MAX)
                .map(|&node| {
                    let row = NodeRow {
                        table: &attempt.scores,
                        columns: &columns,
                        row: rows[node],
                    };
                    (names.name(node), row)
                }),
        )
    }
}

/// One scored node's `{"Plugin": score, ...}`.
struct NodeRow<'a> {
    table: &'a kubesched_framework::ScoreTable,
    columns: &'a [usize],
    row: usize,
}

impl Serialize for NodeRow<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let rows = self.table.len();
        serializer.collect_map(self.columns.iter().map(|&c| {
            (
                &*self.table.plugins[c],
                self.table.scores[c * rows + self.row],
            )
        }))
    }
}

/// An attempt's `rejected`, in node-name order.
struct AttemptRejected<'a>(&'a Attempt);

impl Serialize for AttemptRejected<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let statuses = self.0.rejections_by_node();
        let names = self.0.names();
        serializer.collect_map(names.by_name().iter().filter_map(|&node| {
            statuses[node].map(|status| (names.name(node), Reasons(status.reasons())))
        }))
    }
}

/// A status's reasons as a JSON array of strings.
struct Reasons<'a>(&'a [std::borrow::Cow<'static, str>]);

impl Serialize for Reasons<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|r| &**r))
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

/// The reason cell; `chosen` is the chosen node's total and the number of scored nodes
/// (`None` when scoring was skipped).
fn reason_column(scheduler: &str, outcome: &PodOutcome, chosen: Option<(i64, usize)>) -> String {
    match outcome {
        PodOutcome::Ignored => format!("not ours: no profile named {scheduler:?}"),
        PodOutcome::Gated(g) => format!("scheduling gates: {}", g.join(", ")),
        PodOutcome::Scheduled(_) => match chosen {
            Some((total, scored)) => {
                format!("highest score {total} of {scored} feasible node(s)")
            }
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
        let chosen = match &r.outcome {
            PodOutcome::Scheduled(node) => r.scores.get(node).map(|s| (s.total, r.scores.len())),
            _ => None,
        };
        self.rows.push([
            r.pod.clone(),
            r.scheduler.clone(),
            node_column(&r.outcome),
            reason_column(&r.scheduler, &r.outcome, chosen),
        ]);
    }

    /// Adds the row of one attempt, as [`Table::push`] adds its
    /// [`Attempt::to_result`], reading only the chosen node's score.
    pub fn push_attempt(&mut self, a: &Attempt) {
        self.rows.push([
            a.pod.clone(),
            a.scheduler.clone(),
            node_column(&a.outcome),
            reason_column(&a.scheduler, &a.outcome, a.chosen_score()),
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
/// pod has that name. A rejected node's notes (which claim or volume stopped it)
/// follow its line, indented.
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
            for note in r.rejected.get(node).map_or(&[][..], |rej| &rej.notes) {
                let _ = writeln!(out, "  {:width$}    {note}", "");
            }
        }
        if let Some(line) = tie_line(r) {
            let _ = writeln!(out, "  {line}");
        }
    }
    Some(out)
}

/// For `--explain`: when other nodes share the chosen node's total, says so and how
/// the tie was broken (kube-scheduler picks among equal totals at random; kubesched
/// takes the first in node order, FORMAT.md rule 6 in the conformance suite).
fn tie_line(r: &PodResult) -> Option<String> {
    let PodOutcome::Scheduled(chosen) = &r.outcome else {
        return None;
    };
    let best = r.scores.get(chosen)?.total;
    let tied: Vec<&str> = r
        .node_order
        .iter()
        .filter(|n| r.scores.get(*n).is_some_and(|s| s.total == best))
        .map(String::as_str)
        .collect();
    if tied.len() < 2 {
        return None;
    }
    let how = if tied[0] == chosen {
        format!("{chosen} won as the first of them in node order")
    } else {
        format!("{chosen} was picked among them")
    };
    Some(format!(
        "tie: {} nodes share the best total {best} ({}); {how} (kube-scheduler picks one of them at random)",
        tied.len(),
        tied.join(", ")
    ))
}
