//! The HTML page: an askama template (`templates/report.html`, HTML-escaping every
//! value) over a view of the [`Report`], with the stylesheet and the script inlined and
//! the model itself embedded as JSON for the script, which draws the node and pod lists
//! (virtualised: only the rows on screen exist) and a pod's heat map on demand. The page
//! needs no network and no server.
//!
//! The overview (figures, comparison, zones, histograms) is rendered here, so it reads
//! without the script; the lists and the heat map need it.

use askama::Template;

use crate::model::{Figures, Report, Usage};

const STYLE: &str = include_str!("../assets/report.css");
const SCRIPT: &str = include_str!("../assets/report.js");

/// The page.
#[derive(Template)]
#[template(path = "report.html")]
struct Page<'a> {
    report: &'a Report,
    style: &'static str,
    script: &'static str,
    /// The model as JSON, safe inside `<script>` (no `<`, `>` or `&`).
    data: String,
    runs: Vec<RunView<'a>>,
    rows: Vec<FigureRow>,
    zones: Vec<ZoneView>,
    /// The differences listed (at most [`MAX_DIFFERENCES`]).
    differences: &'a [crate::model::Difference],
    differences_shown: usize,
    /// What one copy of the reference pod requests, in words.
    reference_req: String,
    /// The runs follow different kube-scheduler versions.
    versions_compared: bool,
}

/// One run's card and histogram.
struct RunView<'a> {
    name: &'a str,
    config: &'a str,
    warnings: &'a [String],
    version: &'a str,
    figures: &'a Figures,
    /// (label, count, bar height in % of the tallest).
    histogram: Vec<(String, usize, u32)>,
}

/// One line of the comparison table: the figure and its value per run; `best` marks
/// the runs with the lowest value where lower is better.
struct FigureRow {
    label: &'static str,
    hint: &'static str,
    values: Vec<(String, bool)>,
}

/// One zone's totals.
struct ZoneView {
    name: String,
    nodes: usize,
    /// (run name, cpu bar, memory bar, pods bar).
    bars: Vec<(String, Bar, Bar, Bar)>,
}

/// A before/after bar: widths in % of allocatable and the numbers in words.
struct Bar {
    before: f64,
    added: f64,
    text: String,
}

/// Renders the report as one self-contained HTML page.
pub fn render(report: &Report) -> String {
    let page = Page {
        report,
        style: STYLE,
        script: SCRIPT,
        data: embedded_json(report),
        runs: report.runs.iter().map(run_view).collect(),
        rows: figure_rows(report),
        zones: zone_views(report),
        differences: &report.differences[..report.differences.len().min(MAX_DIFFERENCES)],
        differences_shown: report.differences.len().min(MAX_DIFFERENCES),
        reference_req: report.reference.as_ref().map_or(String::new(), |r| {
            format!("cpu {}, memory {}", cores(r.req.cpu), gib(r.req.mem))
        }),
        versions_compared: report
            .runs
            .iter()
            .any(|r| r.version != report.runs[0].version),
    };
    // Rendering into a String only fails when a value's Display fails; ours do not.
    page.render()
        .unwrap_or_else(|e| format!("template error: {e}"))
}

/// The most differences listed on the page (all of them are in `--format jsonl`).
const MAX_DIFFERENCES: usize = 1000;

/// The model as JSON that cannot end the `<script>` element it sits in nor start
/// markup: `<`, `>` and `&` only occur inside JSON strings, where their `\u` escapes
/// mean the same.
fn embedded_json(report: &Report) -> String {
    script_safe_json(report)
}

/// Any value as JSON safe inside a `<script>` element (see [`embedded_json`]).
pub(crate) fn script_safe_json<T: serde::Serialize>(value: &T) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

fn run_view(run: &crate::model::Run) -> RunView<'_> {
    let tallest = run
        .figures
        .cpu_histogram
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    RunView {
        name: &run.name,
        config: &run.config,
        warnings: &run.warnings,
        version: &run.version,
        figures: &run.figures,
        histogram: run
            .figures
            .cpu_histogram
            .iter()
            .enumerate()
            .map(|(i, &count)| {
                let label = if i == 9 {
                    "90%+".to_string()
                } else {
                    format!("{}-{}%", i * 10, i * 10 + 10)
                };
                (label, count, (count * 100 / tallest) as u32)
            })
            .collect(),
    }
}

fn figure_rows(report: &Report) -> Vec<FigureRow> {
    let runs = &report.runs;
    let row = |label,
               hint,
               lower_is_better: Option<bool>,
               value: &dyn Fn(&Figures) -> f64,
               show: &dyn Fn(&Figures) -> String| {
        let values: Vec<f64> = runs.iter().map(|r| value(&r.figures)).collect();
        let best = match lower_is_better {
            Some(lower) if runs.len() > 1 => {
                let pick = values.iter().copied().fold(None, |acc: Option<f64>, v| {
                    Some(match acc {
                        None => v,
                        Some(a) if lower => a.min(v),
                        Some(a) => a.max(v),
                    })
                });
                let all_same = values.iter().all(|v| Some(*v) == pick);
                if all_same { None } else { pick }
            }
            _ => None,
        };
        FigureRow {
            label,
            hint,
            values: runs
                .iter()
                .zip(&values)
                .map(|(r, v)| (show(&r.figures), Some(*v) == best))
                .collect(),
        }
    };
    let pct = |s: f64| format!("{s:.2}%");
    vec![
        row(
            "pods",
            "pending pods attempted",
            None,
            &|f| f.pods as f64,
            &|f| f.pods.to_string(),
        ),
        row(
            "scheduled",
            "bound by their last attempt",
            Some(false),
            &|f| f.scheduled as f64,
            &|f| f.scheduled.to_string(),
        ),
        row(
            "pending",
            "no node after their last attempt",
            Some(true),
            &|f| f.pending as f64,
            &|f| f.pending.to_string(),
        ),
        row(
            "evicted",
            "preemption victims",
            Some(true),
            &|f| f.evicted as f64,
            &|f| f.evicted.to_string(),
        ),
        row(
            "nodes used",
            "nodes with at least one pod",
            Some(true),
            &|f| f.nodes_used as f64,
            &|f| f.nodes_used.to_string(),
        ),
        row(
            "nodes receiving",
            "nodes that got a simulated pod",
            None,
            &|f| f.nodes_receiving as f64,
            &|f| f.nodes_receiving.to_string(),
        ),
        row(
            "cpu min",
            "least utilised node",
            None,
            &|f| f.cpu.min,
            &|f| pct(f.cpu.min),
        ),
        row(
            "cpu max",
            "most utilised node",
            None,
            &|f| f.cpu.max,
            &|f| pct(f.cpu.max),
        ),
        row("cpu mean", "", None, &|f| f.cpu.mean, &|f| pct(f.cpu.mean)),
        row(
            "cpu stddev",
            "spread over the nodes",
            None,
            &|f| f.cpu.stddev,
            &|f| pct(f.cpu.stddev),
        ),
        row("memory min", "", None, &|f| f.memory.min, &|f| {
            pct(f.memory.min)
        }),
        row("memory max", "", None, &|f| f.memory.max, &|f| {
            pct(f.memory.max)
        }),
        row("memory mean", "", None, &|f| f.memory.mean, &|f| {
            pct(f.memory.mean)
        }),
        row("memory stddev", "", None, &|f| f.memory.stddev, &|f| {
            pct(f.memory.stddev)
        }),
        row(
            "reference pods that fit",
            "fragmentation: copies of the reference pod the free resources still hold",
            Some(false),
            &|f| f.fit.unwrap_or(0) as f64,
            &|f| f.fit.map_or("-".into(), |n| n.to_string()),
        ),
    ]
}

fn zone_views(report: &Report) -> Vec<ZoneView> {
    let mut zones: Vec<ZoneView> = report
        .zones
        .iter()
        .map(|z| ZoneView {
            name: if z.is_empty() {
                "(no zone)".into()
            } else {
                z.clone()
            },
            nodes: 0,
            bars: Vec::new(),
        })
        .collect();
    let mut alloc = vec![Usage::default(); zones.len()];
    let mut before = vec![Usage::default(); zones.len()];
    for n in &report.nodes {
        zones[n.zone].nodes += 1;
        alloc[n.zone] = alloc[n.zone].plus(n.alloc);
        before[n.zone] = before[n.zone].plus(n.before);
    }
    for run in &report.runs {
        let mut after = vec![Usage::default(); zones.len()];
        for (n, u) in report.nodes.iter().zip(&run.after) {
            after[n.zone] = after[n.zone].plus(*u);
        }
        for (z, zone) in zones.iter_mut().enumerate() {
            let (a, b, c) = (alloc[z], before[z], after[z]);
            zone.bars.push((
                run.name.clone(),
                bar(b.cpu, c.cpu, a.cpu, cores),
                bar(b.mem, c.mem, a.mem, gib),
                bar(b.pods, c.pods, a.pods, |v| v.to_string()),
            ));
        }
    }
    zones
}

fn bar(before: i64, after: i64, alloc: i64, show: fn(i64) -> String) -> Bar {
    let pct = |v: i64| {
        if alloc > 0 {
            (v as f64 * 100.0 / alloc as f64).clamp(0.0, 100.0)
        } else {
            0.0
        }
    };
    Bar {
        before: pct(before),
        added: (pct(after) - pct(before)).max(0.0),
        text: format!("{} → {} of {}", show(before), show(after), show(alloc)),
    }
}

/// Millicores as cores: `3.5`.
pub fn cores(milli: i64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{:.2}", milli as f64 / 1000.0)
            .trim_end_matches('0')
            .to_string()
    }
}

/// Bytes as GiB: `12.5Gi`.
pub fn gib(bytes: i64) -> String {
    if bytes == 0 {
        return "0".into();
    }
    let g = bytes as f64 / (1u64 << 30) as f64;
    if g >= 100.0 {
        format!("{g:.0}Gi")
    } else {
        format!("{g:.1}Gi")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_the_script() {
        let mut report = crate::model::Report {
            title: "</script><b>&amp;".into(),
            version: "1.36".into(),
            nodes: Vec::new(),
            zones: Vec::new(),
            runs: Vec::new(),
            reference: None,
            differences: Vec::new(),
            detailed: (0, 0),
        };
        let json = embedded_json(&report);
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["title"], "</script><b>&amp;");
        report.title = "a\nb".into();
        let page = render(&report);
        assert!(!page.contains("</script><b>"), "{page}");
    }

    #[test]
    fn quantities_read_as_kubectl_would() {
        assert_eq!(cores(4000), "4");
        assert_eq!(cores(3500), "3.5");
        assert_eq!(cores(250), "0.25");
        assert_eq!(gib(32 << 30), "32.0Gi");
        assert_eq!(gib(0), "0");
    }
}
