//! `kubesched replay --html FILE`: a replay's timeline as a page of charts. A typed
//! [`ReplayModel`] is taken from one or more replays' [`Summary`] (one per
//! configuration or version compared), drawn through the shared [`crate::chart`] piece:
//! pods pending over time, each resource's allocation over time, and how full the nodes
//! were at the instants asked for (`--occupancy-at`); then the summaries side by side,
//! and the model embedded as JSON for scripts. No network.

use std::collections::BTreeSet;

use askama::Template;
use kubesched_replay::{Occupancy, Summary, Timeline};
use serde::Serialize;

use crate::chart::{Chart, Drawing, Kind, Series};

const STYLE: &str = include_str!("../assets/report.css");

/// The most points a timeline chart draws: the longest replay's timeline is thinned to
/// about this many (a [`Timeline`] holds up to [`Timeline::MAX_POINTS`]).
const MAX_CHART_POINTS: usize = 200;
/// Up to this many nodes, an occupancy chart has a row per node; past it, nodes are
/// counted by how full they are, in tenths.
const MAX_NODE_ROWS: usize = 40;
/// The figures' ids (a chart's id is a `&'static str`): when replays are compared, one
/// allocation chart per resource, up to 16; and one occupancy chart per replay and
/// instant, up to 32. The page says when there were more than it draws.
const ALLOCATION_IDS: [&str; 16] = [
    "replay-allocation-0",
    "replay-allocation-1",
    "replay-allocation-2",
    "replay-allocation-3",
    "replay-allocation-4",
    "replay-allocation-5",
    "replay-allocation-6",
    "replay-allocation-7",
    "replay-allocation-8",
    "replay-allocation-9",
    "replay-allocation-10",
    "replay-allocation-11",
    "replay-allocation-12",
    "replay-allocation-13",
    "replay-allocation-14",
    "replay-allocation-15",
];
const OCCUPANCY_IDS: [&str; 32] = [
    "replay-occupancy-0",
    "replay-occupancy-1",
    "replay-occupancy-2",
    "replay-occupancy-3",
    "replay-occupancy-4",
    "replay-occupancy-5",
    "replay-occupancy-6",
    "replay-occupancy-7",
    "replay-occupancy-8",
    "replay-occupancy-9",
    "replay-occupancy-10",
    "replay-occupancy-11",
    "replay-occupancy-12",
    "replay-occupancy-13",
    "replay-occupancy-14",
    "replay-occupancy-15",
    "replay-occupancy-16",
    "replay-occupancy-17",
    "replay-occupancy-18",
    "replay-occupancy-19",
    "replay-occupancy-20",
    "replay-occupancy-21",
    "replay-occupancy-22",
    "replay-occupancy-23",
    "replay-occupancy-24",
    "replay-occupancy-25",
    "replay-occupancy-26",
    "replay-occupancy-27",
    "replay-occupancy-28",
    "replay-occupancy-29",
    "replay-occupancy-30",
    "replay-occupancy-31",
];

/// One replay of the page: its name (the configuration's or version's) and its answer.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    /// The name in legends and column heads.
    pub name: &'a str,
    /// The replay's summary, with its timeline and occupancy.
    pub summary: &'a Summary,
}

/// The figures of one replay over the shared time axis.
#[derive(Debug, Serialize)]
pub struct RunFigures {
    /// The configuration's or version's name.
    pub name: String,
    /// Pods pending at each of [`ReplayModel::times`].
    pub pending: Vec<usize>,
    /// Per resource, the percent requested of allocatable at each of the times.
    pub allocation: Vec<(String, Vec<f64>)>,
    /// The summary, as `--format jsonl` prints it.
    pub summary: serde_json::Value,
}

/// The page's data: the time axis and each replay's figures over it.
#[derive(Debug, Serialize)]
pub struct ReplayModel {
    /// The instants drawn (seconds): the longest replay's timeline, thinned.
    pub times: Vec<f64>,
    /// One per replay, in the order given.
    pub runs: Vec<RunFigures>,
}

/// The state of `timeline` at `time`: its last point at or before it (the first when
/// `time` comes before them all).
fn at(timeline: &Timeline, time: f64) -> Option<&kubesched_replay::TimelinePoint> {
    let after = timeline.points.partition_point(|p| p.time <= time);
    timeline.points.get(after.saturating_sub(1))
}

impl ReplayModel {
    /// The model of `runs` (at least one).
    pub fn of(runs: &[Run]) -> ReplayModel {
        let longest = runs.iter().map(|r| &r.summary.timeline).max_by(|a, b| {
            let end = |t: &Timeline| t.points.last().map_or(0.0, |p| p.time);
            end(a).total_cmp(&end(b))
        });
        let times: Vec<f64> = match longest {
            Some(t) => {
                let every = t.points.len().div_ceil(MAX_CHART_POINTS).max(1);
                let mut times: Vec<f64> = t.points.iter().step_by(every).map(|p| p.time).collect();
                if let Some(last) = t.points.last()
                    && times.last() != Some(&last.time)
                {
                    times.push(last.time);
                }
                times
            }
            None => Vec::new(),
        };
        let resources: BTreeSet<&String> = runs
            .iter()
            .flat_map(|r| r.summary.allocation.keys())
            .collect();
        let runs = runs
            .iter()
            .map(|r| {
                let t = &r.summary.timeline;
                RunFigures {
                    name: r.name.to_string(),
                    pending: times
                        .iter()
                        .map(|time| at(t, *time).map_or(0, |p| p.pending))
                        .collect(),
                    allocation: resources
                        .iter()
                        .map(|name| {
                            let values = times
                                .iter()
                                .map(|time| {
                                    at(t, *time)
                                        .and_then(|p| p.allocation.get(*name))
                                        .map_or(0.0, |f| (f * 10_000.0).round() / 100.0)
                                })
                                .collect();
                            ((*name).clone(), values)
                        })
                        .collect(),
                    summary: r.summary.json()["summary"].clone(),
                }
            })
            .collect();
        ReplayModel { times, runs }
    }

    /// The timeline charts: pending pods, then allocation (one chart for one replay,
    /// one per resource when replays are compared).
    pub fn charts(&self) -> Vec<Chart> {
        let categories: Vec<String> = self.times.iter().map(|t| clock(*t)).collect();
        let mut charts = vec![Chart {
            id: "replay-pending",
            title: "Pods pending".into(),
            unit: "pods",
            kind: Kind::Lines,
            categories: categories.clone(),
            series: self
                .runs
                .iter()
                .map(|r| Series {
                    name: r.name.clone(),
                    values: r.pending.iter().map(|p| *p as f64).collect(),
                })
                .collect(),
            max: None,
        }];
        let highest = |values: &mut dyn Iterator<Item = f64>| values.fold(0.0, f64::max);
        match self.runs.as_slice() {
            [one] => charts.push(Chart {
                id: "replay-allocation",
                title: "Requested / allocatable".into(),
                unit: "%",
                kind: Kind::Lines,
                categories,
                series: one
                    .allocation
                    .iter()
                    .map(|(name, values)| Series {
                        name: name.clone(),
                        values: values.clone(),
                    })
                    .collect(),
                max: (highest(&mut one.allocation.iter().flat_map(|(_, v)| v.iter().copied()))
                    <= 100.0)
                    .then_some(100.0),
            }),
            runs => {
                let resources = runs.first().map_or(0, |r| r.allocation.len());
                for (i, id) in ALLOCATION_IDS.iter().enumerate().take(resources) {
                    let name = &runs[0].allocation[i].0;
                    charts.push(Chart {
                        id,
                        title: format!("{name} requested / allocatable"),
                        unit: "%",
                        kind: Kind::Lines,
                        categories: categories.clone(),
                        series: runs
                            .iter()
                            .map(|r| Series {
                                name: r.name.clone(),
                                values: r.allocation[i].1.clone(),
                            })
                            .collect(),
                        max: (highest(
                            &mut runs.iter().flat_map(|r| r.allocation[i].1.iter().copied()),
                        ) <= 100.0)
                            .then_some(100.0),
                    });
                }
            }
        }
        charts
    }
}

/// Seconds as a short clock: `45s`, `12m30s`, `3h05m`, `2d04h`.
fn clock(t: f64) -> String {
    let s = t.max(0.0).round() as u64;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{sec}s"),
        (0, 0, _) => format!("{m}m{sec:02}s"),
        (0, _, _) => format!("{h}h{m:02}m"),
        _ => format!("{d}d{h:02}h"),
    }
}

/// How full the nodes were at one instant of one replay: a row per node for a small
/// cluster, otherwise nodes counted by tenths of cpu and memory requested.
fn occupancy_chart(id: &'static str, run: &str, several: bool, o: &Occupancy) -> Chart {
    let percent = |n: &kubesched_replay::NodeLoad, resource: &str| {
        n.load
            .resources
            .get(resource)
            .filter(|(a, _)| *a > 0)
            .map_or(0.0, |(a, r)| *r as f64 * 100.0 / *a as f64)
    };
    let title = match several {
        true => format!("{run}: nodes at {}", clock(o.time)),
        false => format!("Nodes at {}", clock(o.time)),
    };
    if o.nodes.len() <= MAX_NODE_ROWS {
        return Chart {
            id,
            title: format!("{title}: requested / allocatable"),
            unit: "%",
            kind: Kind::Bars,
            categories: o.nodes.iter().map(|n| n.node.clone()).collect(),
            series: ["cpu", "memory"]
                .iter()
                .map(|r| Series {
                    name: r.to_string(),
                    values: o.nodes.iter().map(|n| percent(n, r)).collect(),
                })
                .collect(),
            max: Some(100.0),
        };
    }
    let tenths = |resource: &str| -> Vec<f64> {
        let mut counts = vec![0.0; 11];
        for n in &o.nodes {
            let p = percent(n, resource);
            let i = if p <= 0.0 {
                0
            } else {
                (p / 10.0).ceil().clamp(1.0, 10.0) as usize
            };
            counts[i] += 1.0;
        }
        counts
    };
    let mut categories = vec!["empty".to_string()];
    categories.extend((1..=10).map(|i| format!("{}-{}%", (i - 1) * 10, i * 10)));
    Chart {
        id,
        title: format!("{title}: how many nodes are how full"),
        unit: "nodes",
        kind: Kind::Bars,
        categories,
        series: ["cpu", "memory"]
            .iter()
            .map(|r| Series {
                name: format!("{r} requested"),
                values: tenths(r),
            })
            .collect(),
        max: None,
    }
}

/// A summary figure for the side-by-side table: its name and each replay's value.
pub struct Row {
    /// What it is.
    pub name: String,
    /// One value per replay.
    pub values: Vec<String>,
}

/// The summaries' figures, a row per figure and a value per replay (the page's table, and
/// `kubesched replay`'s side-by-side text).
pub fn summary_rows(runs: &[Run]) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut row = |name: &str, f: &dyn Fn(&Summary) -> String| {
        rows.push(Row {
            name: name.to_string(),
            values: runs.iter().map(|r| f(r.summary)).collect(),
        });
    };
    row("events", &|s| s.events.to_string());
    row("pods arrived", &|s| s.arrived.to_string());
    row("scheduled", &|s| s.scheduled.to_string());
    row("pending at the end", &|s| s.pending.to_string());
    row("attempts", &|s| s.attempts.to_string());
    row("preemptions", &|s| s.preemptions.to_string());
    row("evicted", &|s| s.evicted.to_string());
    row("finished", &|s| s.finished.to_string());
    let wait = |p: &Option<kubesched_replay::Percentiles>,
                f: fn(&kubesched_replay::Percentiles) -> f64| {
        p.as_ref()
            .map_or("-".to_string(), |p| format!("{} s", round(f(p))))
    };
    row("waited p50", &|s| wait(&s.waited, |p| p.p50));
    row("waited p90", &|s| wait(&s.waited, |p| p.p90));
    row("waited p99", &|s| wait(&s.waited, |p| p.p99));
    row("waited max", &|s| wait(&s.waited, |p| p.max));
    let resources: BTreeSet<&String> = runs
        .iter()
        .flat_map(|r| r.summary.allocation.keys())
        .collect();
    for name in resources {
        let alloc = |s: &Summary, peak: bool| {
            s.allocation.get(name).map_or("-".to_string(), |a| {
                format!("{:.2}%", 100.0 * if peak { a.peak } else { a.mean })
            })
        };
        rows.push(Row {
            name: format!("{name} requested, mean"),
            values: runs.iter().map(|r| alloc(r.summary, false)).collect(),
        });
        rows.push(Row {
            name: format!("{name} requested, peak"),
            values: runs.iter().map(|r| alloc(r.summary, true)).collect(),
        });
    }
    rows
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The page.
#[derive(Template)]
#[template(path = "replay.html")]
struct Page<'a> {
    style: &'static str,
    title: &'a str,
    names: Vec<&'a str>,
    rows: Vec<Row>,
    charts: Vec<Drawing>,
    occupancy: Vec<Drawing>,
    /// What the page leaves out, if anything, in words.
    left_out: Option<String>,
    /// The model as JSON, safe inside `<script>`.
    data: String,
}

/// The replays as a self-contained page; `title` names the trace.
pub fn render(title: &str, runs: &[Run]) -> String {
    let model = ReplayModel::of(runs);
    let several = runs.len() > 1;
    let occupancy = runs
        .iter()
        .flat_map(|r| r.summary.occupancy.iter().map(move |o| (r.name, o)))
        .zip(OCCUPANCY_IDS)
        .map(|((name, o), id)| occupancy_chart(id, name, several, o).draw())
        .collect();
    let instants: usize = runs.iter().map(|r| r.summary.occupancy.len()).sum();
    let resources = model.runs.first().map_or(0, |r| r.allocation.len());
    let mut left_out = Vec::new();
    if several && resources > ALLOCATION_IDS.len() {
        left_out.push(format!(
            "the allocation over time of {} resource(s) past the first {} (the summary has them all)",
            resources - ALLOCATION_IDS.len(),
            ALLOCATION_IDS.len()
        ));
    }
    if instants > OCCUPANCY_IDS.len() {
        left_out.push(format!(
            "the nodes at {} instant(s) past the first {}",
            instants - OCCUPANCY_IDS.len(),
            OCCUPANCY_IDS.len()
        ));
    }
    let page = Page {
        style: STYLE,
        title,
        left_out: (!left_out.is_empty()).then(|| format!("Not drawn: {}.", left_out.join("; "))),
        names: runs.iter().map(|r| r.name).collect(),
        rows: summary_rows(runs),
        charts: model.charts().iter().map(Chart::draw).collect(),
        occupancy,
        data: crate::html::script_safe_json(&model),
    };
    page.render()
        .unwrap_or_else(|e| format!("template error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesched_replay::{Load, NodeLoad, TimelinePoint};

    fn point(time: f64, pending: usize, cpu: f64) -> TimelinePoint {
        TimelinePoint {
            time,
            pending,
            allocation: [("cpu".to_string(), cpu)].into(),
        }
    }

    fn summary(points: Vec<TimelinePoint>, nodes: usize) -> Summary {
        let mut load = Load::default();
        load.add("cpu", 1000, 500);
        load.add("memory", 1000, 0);
        Summary {
            mode: kubesched_replay::Mode::Timed,
            end: points.last().map_or(0.0, |p| p.time),
            events: 1,
            arrived: 1,
            scheduled: 1,
            pending: 0,
            not_ours: 0,
            finished: 0,
            deleted: 0,
            evicted: 0,
            attempts: 1,
            preemptions: 0,
            waited: None,
            pending_for: None,
            allocation: [(
                "cpu".to_string(),
                kubesched_replay::Allocation {
                    peak: 0.5,
                    mean: 0.25,
                },
            )]
            .into(),
            timeline: Timeline { step: 1.0, points },
            occupancy: vec![Occupancy {
                time: 1.0,
                nodes: (0..nodes)
                    .map(|i| NodeLoad {
                        node: format!("<b>n{i}</b>"),
                        pods: 1,
                        load: load.clone(),
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn compared_replays_share_the_longest_time_axis() {
        let short = summary(vec![point(0.0, 2, 0.0), point(1.0, 0, 0.5)], 1);
        let long = summary(
            vec![point(0.0, 3, 0.0), point(1.0, 1, 0.25), point(2.0, 0, 0.5)],
            1,
        );
        let m = ReplayModel::of(&[
            Run {
                name: "a",
                summary: &short,
            },
            Run {
                name: "b",
                summary: &long,
            },
        ]);
        assert_eq!(m.times, [0.0, 1.0, 2.0]);
        // After its end a replay stays as it ended.
        assert_eq!(m.runs[0].pending, [2, 0, 0]);
        assert_eq!(
            m.runs[1].allocation[0],
            ("cpu".into(), vec![0.0, 25.0, 50.0])
        );
        assert_eq!(
            m.charts().len(),
            2,
            "pending, then cpu with a line per replay"
        );
    }

    #[test]
    fn a_big_cluster_is_counted_by_tenths_and_names_are_escaped() {
        let s = summary(vec![point(0.0, 0, 0.5)], MAX_NODE_ROWS + 1);
        let chart = occupancy_chart("o", "x", false, &s.occupancy[0]);
        assert_eq!(chart.categories.len(), 11);
        // Every node is half full of cpu and has no memory requested.
        assert_eq!(chart.series[0].values[5], (MAX_NODE_ROWS + 1) as f64);
        assert_eq!(chart.series[1].values[0], (MAX_NODE_ROWS + 1) as f64);
        let small = summary(vec![point(0.0, 0, 0.5)], 2);
        let page = render(
            "<i>t</i>",
            &[Run {
                name: "<script>x</script>",
                summary: &small,
            }],
        );
        assert!(!page.contains("<b>n0"), "{page}");
        assert!(!page.contains("<i>t</i>"));
        assert!(!page.contains("<script>x"));
        assert!(page.contains("&#60;b&#62;n0&#60;/b&#62;"));
    }

    #[test]
    fn clock_reads_short() {
        assert_eq!(
            [
                0.0,
                59.4,
                750.0,
                3.0 * 3600.0 + 300.0,
                2.0 * 86_400.0 + 4.0 * 3600.0
            ]
            .map(clock),
            ["0s", "59s", "12m30s", "3h05m", "2d04h"]
        );
    }
}
