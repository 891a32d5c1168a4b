//! `kubesched capacity --html FILE`: the answer of `capacity` as a page of charts (the
//! copies per zone, the nodes by how many copies they took, the nodes that took the
//! most) with why the next copy does not fit, rendered by the `capacity.html` template
//! with the report's stylesheet. No script: the charts are inline SVG drawn by the
//! shared [`crate::chart`] piece, as `rollout --html`'s are.

use askama::Template;
use k8s_openapi::api::core::v1::Node;
use kubesched_sim::PodOutcome;
use kubesched_sim::capacity::{Capacity, Stop, rejections_by_plugin};

use crate::build::zone_of;
use crate::chart::{Chart, Drawing, Kind, Series};

const STYLE: &str = include_str!("../assets/report.css");

/// The most nodes listed by name.
const TOP_NODES: usize = 50;

/// The page.
#[derive(Template)]
#[template(path = "capacity.html")]
struct Page<'a> {
    style: &'static str,
    title: &'a str,
    answer: &'a Capacity,
    /// The scenario's own pending pods, placed first: (placed, of).
    pending: (usize, usize),
    /// Why the copies stopped, in words.
    stop: String,
    /// For an unschedulable copy: (plugin, node count, reasons, first nodes).
    rejections: Vec<(String, usize, String, String)>,
    /// Copies per zone, nodes by copies taken (left), the nodes that took the most
    /// (right).
    left: Vec<Drawing>,
    right: Vec<Drawing>,
}

/// The capacity answer as a self-contained page; `nodes` are the scenario's nodes (for
/// their zones), `title` what was simulated.
pub fn render(title: &str, answer: &Capacity, nodes: &[std::sync::Arc<Node>]) -> String {
    let zone_by_node: std::collections::HashMap<&str, String> = nodes
        .iter()
        .map(|n| {
            (
                n.metadata.name.as_deref().unwrap_or(""),
                zone_of(|key| {
                    n.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(key))
                        .map(String::as_str)
                }),
            )
        })
        .collect();
    // (zone, copies, nodes).
    let mut zones: Vec<(String, usize, usize)> = Vec::new();
    for (node, copies) in &answer.per_node {
        let zone = zone_by_node.get(node.as_str()).cloned().unwrap_or_default();
        let zone = if zone.is_empty() {
            "(no zone)".to_string()
        } else {
            zone
        };
        match zones.iter_mut().find(|z| z.0 == zone) {
            Some(z) => {
                z.1 += copies;
                z.2 += 1;
            }
            None => zones.push((zone, *copies, 1)),
        }
    }
    let most = answer.per_node.iter().map(|(_, c)| *c).max().unwrap_or(0);
    // Up to 20 buckets of copies per node.
    let step = most / 20 + 1;
    let mut buckets = vec![0usize; most / step + 1];
    for (_, c) in &answer.per_node {
        buckets[c / step] += 1;
    }
    let histogram = Chart {
        id: "capacity-histogram",
        title: "Nodes by copies taken".into(),
        unit: "nodes",
        kind: Kind::Columns,
        categories: (0..buckets.len())
            .map(|i| {
                if step == 1 {
                    (i * step).to_string()
                } else {
                    format!("{}-{}", i * step, i * step + step - 1)
                }
            })
            .collect(),
        series: vec![Series {
            name: "nodes".into(),
            values: buckets.iter().map(|&n| n as f64).collect(),
        }],
        max: None,
    };
    let zones = Chart {
        id: "capacity-zones",
        title: "Copies per zone".into(),
        unit: "copies",
        kind: Kind::Bars,
        categories: zones
            .iter()
            .map(|(zone, _, nodes)| format!("{zone} ({nodes} node(s))"))
            .collect(),
        series: vec![Series {
            name: "copies".into(),
            values: zones.iter().map(|z| z.1 as f64).collect(),
        }],
        max: None,
    };
    let mut top: Vec<(&str, usize)> = answer
        .per_node
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(n, c)| (n.as_str(), *c))
        .collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    let took = top.len();
    top.truncate(TOP_NODES);
    let top = Chart {
        id: "capacity-top",
        title: if took > TOP_NODES {
            format!("The nodes that took the most (the first {TOP_NODES} of {took})")
        } else {
            "The nodes that took the most".to_string()
        },
        unit: "copies",
        kind: Kind::Bars,
        categories: top.iter().map(|t| t.0.to_string()).collect(),
        series: vec![Series {
            name: "copies".into(),
            values: top.iter().map(|t| t.1 as f64).collect(),
        }],
        max: None,
    };
    let (stop, rejections) = match &answer.stop {
        Stop::LimitReached(l) => (
            format!("Stopped at the limit of {l} copies (--max-limit N sets it)."),
            Vec::new(),
        ),
        Stop::NotOurs => (
            "No profile schedules the pod's schedulerName: no copy is ever scheduled.".into(),
            Vec::new(),
        ),
        Stop::Gated(g) => (
            format!(
                "The pod has scheduling gates ({}): no copy is attempted.",
                g.join(", ")
            ),
            Vec::new(),
        ),
        Stop::Unschedulable(result) => {
            let message = match &result.outcome {
                PodOutcome::Unschedulable(m) | PodOutcome::Nominated { message: m, .. } => {
                    m.as_str()
                }
                _ => "",
            };
            let rejections = rejections_by_plugin(result)
                .into_iter()
                .map(|(plugin, nodes, reasons)| {
                    let mut first: Vec<&str> = nodes.iter().take(8).map(String::as_str).collect();
                    if nodes.len() > 8 {
                        first.push("…");
                    }
                    (plugin, nodes.len(), reasons.join("; "), first.join(", "))
                })
                .collect();
            (
                format!("Copy {} does not fit: {message}", answer.count + 1),
                rejections,
            )
        }
    };
    let placed = answer
        .pending
        .iter()
        .filter(|r| matches!(r.outcome, PodOutcome::Scheduled(_)))
        .count();
    let page = Page {
        style: STYLE,
        title,
        answer,
        pending: (placed, answer.pending.len()),
        stop,
        rejections,
        left: vec![zones.draw(), histogram.draw()],
        right: if took > 0 {
            vec![top.draw()]
        } else {
            Vec::new()
        },
    };
    page.render()
        .unwrap_or_else(|e| format!("template error: {e}"))
}
