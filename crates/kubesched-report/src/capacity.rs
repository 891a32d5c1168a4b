//! `kubesched capacity --html FILE`: the answer of `capacity` as a page of charts (the
//! copies per zone, the nodes by how many copies they took, the nodes that took the
//! most) with why the next copy does not fit, rendered by the `capacity.html` template
//! with the report's stylesheet. No script: the charts are HTML bars.

use askama::Template;
use k8s_openapi::api::core::v1::Node;
use kubesched_sim::PodOutcome;
use kubesched_sim::capacity::{Capacity, Stop, rejections_by_plugin};

use crate::build::zone_of;

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
    /// (zone, copies, nodes, bar width %).
    zones: Vec<(String, usize, usize, f64)>,
    /// (copies, nodes with that many, bar width %), from 0 copies up.
    histogram: Vec<(String, usize, f64)>,
    /// (node, copies, bar width %), most copies first.
    top: Vec<(&'a str, usize, f64)>,
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
    let mut zones: Vec<(String, usize, usize, f64)> = Vec::new();
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
            None => zones.push((zone, *copies, 1, 0.0)),
        }
    }
    let widest = zones.iter().map(|z| z.1).max().unwrap_or(0).max(1);
    for z in &mut zones {
        z.3 = z.1 as f64 * 100.0 / widest as f64;
    }
    let most = answer.per_node.iter().map(|(_, c)| *c).max().unwrap_or(0);
    // Up to 20 buckets of copies per node.
    let step = most / 20 + 1;
    let mut buckets = vec![0usize; most / step + 1];
    for (_, c) in &answer.per_node {
        buckets[c / step] += 1;
    }
    let tallest = buckets.iter().copied().max().unwrap_or(0).max(1);
    let histogram = buckets
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let label = if step == 1 {
                (i * step).to_string()
            } else {
                format!("{}-{}", i * step, i * step + step - 1)
            };
            (label, n, n as f64 * 100.0 / tallest as f64)
        })
        .collect();
    let mut top: Vec<(&str, usize, f64)> = answer
        .per_node
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(n, c)| (n.as_str(), *c, *c as f64 * 100.0 / most.max(1) as f64))
        .collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    top.truncate(TOP_NODES);
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
        zones,
        histogram,
        top,
    };
    page.render()
        .unwrap_or_else(|e| format!("template error: {e}"))
}
