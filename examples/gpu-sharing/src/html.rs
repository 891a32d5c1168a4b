//! `gpu-sharing experiment --html PAGE`: the runs as one self-contained HTML page (no
//! script, no network), drawn with kubesched's chart piece (`kubesched_report::chart`,
//! the one `kubesched capacity --html` and `rollout --html` use): per policy, the median
//! over the seeds of the allocated and of the fragmented GPU by arrived-GPU percent, and
//! the table of medians of unallocated GPU at arrived = 100% beside the paper's.

use std::fmt::Write as _;

use kubesched_report::chart::{Chart, Drawing, Kind, Series};

use crate::experiment::{Policy, Run, median};

/// The paper's medians of unallocated GPU percent at arrived = 100% (its expected
/// results, seeds 42..51), by policy.
pub const PAPER: [(Policy, f64); 6] = [
    (Policy::Random, 13.75),
    (Policy::DotProduct, 9.44),
    (Policy::GpuClustering, 8.42),
    (Policy::GpuPacking, 8.19),
    (Policy::BestFit, 7.09),
    (Policy::Fgd, 4.77),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn svg(d: &Drawing, out: &mut String) {
    let _ = write!(
        out,
        r#"<figure class="svgchart"><figcaption>{}</figcaption><svg viewBox="0 0 {} {:.1}" role="img" aria-label="{}">"#,
        esc(&d.title),
        d.width,
        d.height,
        esc(&d.summary)
    );
    for (y, x1, x2) in &d.grid {
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x1}" x2="{x2}" y1="{y:.1}" y2="{y:.1}"></line>"#
        );
    }
    for l in &d.lines {
        let _ = write!(
            out,
            r#"<polyline class="s{}" points="{}"></polyline>"#,
            l.series, l.points
        );
    }
    for t in &d.labels {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="{}">{}</text>"#,
            t.x,
            t.y,
            t.anchor,
            esc(&t.text)
        );
    }
    out.push_str("</svg><div class=\"legend\">");
    for (i, name) in &d.legend {
        let _ = write!(out, r#"<span><i class="s{i}"></i>{}</span>"#, esc(name));
    }
    out.push_str("</div></figure>\n");
}

/// The page of `runs` (any policies and seeds).
pub fn page(runs: &[Run]) -> String {
    let policies: Vec<Policy> = Policy::ALL
        .into_iter()
        .filter(|p| runs.iter().any(|r| r.policy == *p))
        .collect();
    let categories: Vec<String> = (0..=130).map(|p| p.to_string()).collect();
    let series = |value: fn(&crate::experiment::Point) -> f64| -> Vec<Series> {
        policies
            .iter()
            .map(|p| Series {
                name: p.name().to_string(),
                values: (0..=130u32)
                    .map(|a| {
                        let mut v: Vec<f64> = runs
                            .iter()
                            .filter(|r| r.policy == *p)
                            .filter_map(|r| r.at(a).map(value))
                            .collect();
                        median(&mut v).unwrap_or(0.0)
                    })
                    .collect(),
            })
            .collect()
    };
    let allocated = Chart {
        id: "allocated",
        title: "Allocated GPU, % of the cluster's, by arrived GPU % (median over the seeds)".into(),
        unit: "%",
        kind: Kind::Lines,
        categories: categories.clone(),
        series: series(|p| p.allocated),
        max: Some(100.0),
    };
    let fragmented = Chart {
        id: "fragmented",
        title: "Fragmented GPU (FGD's measure), % of the cluster's, by arrived GPU %".into(),
        unit: "%",
        kind: Kind::Lines,
        categories,
        series: series(|p| p.fragmented),
        max: None,
    };
    let mut out = String::from(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>GPU sharing: the FGD paper's policies</title><style>
body { font: 14px system-ui, sans-serif; margin: 24px auto; max-width: 900px; color: #1d2430; }
figure.svgchart { margin: 0 0 18px; border: 1px solid #d8dde6; border-radius: 10px; padding: 10px 14px; }
figure.svgchart figcaption { font-weight: 600; margin-bottom: 6px; }
figure.svgchart svg { width: 100%; height: auto; display: block; font-size: 11px; }
figure.svgchart text { fill: #5b6678; }
figure.svgchart line.grid { stroke: #e3e7ee; }
figure.svgchart polyline { fill: none; stroke-width: 2; }
.legend span { margin-right: 12px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.s0 { stroke: #9aa3b2; } .legend i.s0 { background: #9aa3b2; }
.s1 { stroke: #e0a030; } .legend i.s1 { background: #e0a030; }
.s2 { stroke: #8e6bd1; } .legend i.s2 { background: #8e6bd1; }
.s3 { stroke: #2f9fb0; } .legend i.s3 { background: #2f9fb0; }
.s4 { stroke: #3b6fd6; } .legend i.s4 { background: #3b6fd6; }
.s5 { stroke: #2e9d57; } .legend i.s5 { background: #2e9d57; }
table { border-collapse: collapse; } td, th { padding: 3px 10px; text-align: right; border-bottom: 1px solid #e3e7ee; }
</style></head><body><h1>GPU sharing: the FGD paper's policies on the openb trace</h1>
"#,
    );
    svg(&allocated.draw(), &mut out);
    svg(&fragmented.draw(), &mut out);
    out.push_str("<table><tr><th>policy</th><th>seeds</th><th>median unallocated at 100% arrived</th><th>the paper's</th></tr>\n");
    for p in &policies {
        let mut v: Vec<f64> = runs
            .iter()
            .filter(|r| r.policy == *p)
            .filter_map(|r| r.at(100).map(|pt| 100.0 - pt.allocated))
            .collect();
        let n = v.len();
        let ours = median(&mut v).map_or("-".into(), |m| format!("{m:.2}"));
        let paper = PAPER.iter().find(|(q, _)| q == p).map_or(0.0, |(_, v)| *v);
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{n}</td><td>{ours}</td><td>{paper:.2}</td></tr>",
            p.name()
        );
    }
    out.push_str("</table></body></html>\n");
    out
}
