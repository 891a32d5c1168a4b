//! What a replay adds up to: pods scheduled and pending, how long they waited, and how
//! full the cluster was over time (peak and time-weighted mean of each resource), with
//! a [`Timeline`] of the same figures at evenly spaced instants and each node's load at
//! the instants the caller chose ([`Occupancy`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::engine::Mode;
use crate::trace::seconds;

/// What the cluster's nodes offer and their pods request, per resource.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Load {
    /// resource → (allocatable, requested), in the resource's unit (millicores for cpu,
    /// bytes for memory).
    pub resources: BTreeMap<String, (i128, i128)>,
}

impl Load {
    /// Adds a node's `allocatable` and `requested` of `resource`.
    pub fn add(&mut self, resource: &str, allocatable: i64, requested: i64) {
        let e = match self.resources.get_mut(resource) {
            Some(e) => e,
            None => self.resources.entry(resource.to_string()).or_default(),
        };
        e.0 += allocatable as i128;
        e.1 += requested as i128;
    }

    /// Adds (`sign` 1) or takes away (`sign` -1) what a pod requests: cpu, memory and
    /// its scalar resources, as a node's `requested` counts them.
    pub fn request(&mut self, r: &kubesched_framework::resource::Resource, sign: i64) {
        self.add("cpu", 0, sign * r.milli_cpu);
        self.add("memory", 0, sign * r.memory);
        for (name, value) in &r.scalar_resources {
            self.add(name, 0, sign * value);
        }
    }

    fn fractions(&self) -> impl Iterator<Item = (&String, f64)> {
        self.resources
            .iter()
            .filter(|(_, (a, _))| *a > 0)
            .map(|(name, (a, r))| (name, *r as f64 / *a as f64))
    }
}

/// The cluster at evenly spaced instants: pending pods and each resource's allocation.
///
/// Memory stays flat in the replay's length: the points are at multiples of
/// [`Timeline::step`], and when they reach [`Timeline::MAX_POINTS`] every other one is
/// dropped and the step doubles, so a replay of a week has as many points as one of an
/// hour (between [`Timeline::MAX_POINTS`]` / 2` and [`Timeline::MAX_POINTS`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// Seconds between two points.
    pub step: f64,
    /// The points in time order: at `0`, `step`, `2 × step`, ..., then the replay's end.
    pub points: Vec<TimelinePoint>,
}

/// The cluster as it stood at one instant of a [`Timeline`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelinePoint {
    /// Seconds from the start.
    pub time: f64,
    /// Pods without a node (for a scheduler of the replay or not).
    pub pending: usize,
    /// Per resource, what the pods requested as a fraction of what the nodes offer.
    pub allocation: BTreeMap<String, f64>,
}

impl Default for Timeline {
    /// No points yet, a second apart.
    fn default() -> Timeline {
        Timeline {
            step: 1.0,
            points: Vec::new(),
        }
    }
}

impl Timeline {
    /// The most points a timeline holds before it halves them.
    pub const MAX_POINTS: usize = 400;

    /// Adds the points from the last one up to `time` (not at it), each the state
    /// `before` that held until `time`.
    fn fill_until(&mut self, time: f64, before: &TimelinePoint) {
        loop {
            let next = self.points.last().map_or(0.0, |p| p.time + self.step);
            if next >= time {
                break;
            }
            self.points.push(TimelinePoint {
                time: next,
                ..before.clone()
            });
            if self.points.len() >= Self::MAX_POINTS {
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.step *= 2.0;
            }
        }
    }
}

/// The load of one node at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeLoad {
    /// The node's name.
    pub node: String,
    /// Pods bound to it.
    pub pods: usize,
    /// What it offers and its pods request, per resource.
    pub load: Load,
}

/// Every node's load at one instant the caller chose
/// ([`ReplayOptions::occupancy_at`](crate::ReplayOptions::occupancy_at)).
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    /// The instant asked for (seconds from the start); the state is the one after
    /// every event up to it.
    pub time: f64,
    /// The nodes, in node order.
    pub nodes: Vec<NodeLoad>,
}

/// The running counts (the replay keeps nothing per event, only these and each pending
/// pod's wait).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub events: usize,
    pub attempts: usize,
    pub preemptions: usize,
    pub evicted: usize,
    pub finished: usize,
    pub deleted: usize,
    pub not_ours: usize,
    arrived: usize,
    waits: Vec<f64>,
    last: Option<(f64, Load)>,
    integral: BTreeMap<String, f64>,
    peak: BTreeMap<String, f64>,
    timeline: Option<Timeline>,
    /// The state since the last sample, as the timeline's points show it.
    now: TimelinePoint,
    pub occupancy: Vec<Occupancy>,
}

impl Stats {
    pub fn arrived(&mut self, n: usize) {
        self.arrived += n;
    }

    /// A pod was bound after waiting `wait` seconds.
    pub fn bound(&mut self, wait: f64) {
        self.waits.push(wait.max(0.0));
    }

    /// The cluster's load and pending pods from `time` on.
    pub fn sample(&mut self, time: f64, load: Load, pending: usize) {
        let timeline = self.timeline.get_or_insert_with(Timeline::default);
        if self.last.is_some() {
            timeline.fill_until(time, &self.now);
        }
        self.now = TimelinePoint {
            time,
            pending,
            allocation: load.fractions().map(|(n, f)| (n.clone(), f)).collect(),
        };
        if let Some((since, last)) = &self.last {
            let span = time - since;
            if span > 0.0 {
                for (name, f) in last.fractions() {
                    *self.integral.entry(name.clone()).or_default() += f * span;
                }
            }
        }
        for (name, f) in load.fractions() {
            let peak = self.peak.entry(name.clone()).or_default();
            *peak = peak.max(f);
        }
        self.last = Some((time, load));
    }

    pub fn summary(mut self, end: f64, pending: &[f64], mode: Mode) -> Summary {
        if let Some((_, load)) = self.last.clone() {
            self.sample(end, load, pending.len());
        }
        let mut timeline = self.timeline.take().unwrap_or_default();
        if timeline.points.last().is_none_or(|p| p.time < end) {
            timeline.points.push(TimelinePoint {
                time: end,
                ..self.now.clone()
            });
        }
        let mut waits = std::mem::take(&mut self.waits);
        waits.sort_by(f64::total_cmp);
        let allocation = self
            .peak
            .iter()
            .map(|(name, peak)| {
                let mean = if end > 0.0 {
                    self.integral.get(name).copied().unwrap_or(0.0) / end
                } else {
                    self.last.as_ref().map_or(0.0, |_| *peak)
                };
                (name.clone(), Allocation { peak: *peak, mean })
            })
            .collect();
        Summary {
            mode,
            end,
            events: self.events,
            arrived: self.arrived,
            scheduled: waits.len(),
            pending: pending.len(),
            not_ours: self.not_ours,
            finished: self.finished,
            deleted: self.deleted,
            evicted: self.evicted,
            attempts: self.attempts,
            preemptions: self.preemptions,
            waited: Percentiles::of(&waits),
            pending_for: Percentiles::of(&{
                let mut p = pending.to_vec();
                p.sort_by(f64::total_cmp);
                p
            }),
            allocation,
            timeline,
            occupancy: std::mem::take(&mut self.occupancy),
        }
    }
}

/// p50, p90, p99 and the maximum of some seconds (nearest rank), `None` for none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percentiles {
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The largest.
    pub max: f64,
}

impl Percentiles {
    fn of(sorted: &[f64]) -> Option<Percentiles> {
        let rank = |p: f64| {
            let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
            sorted[i.clamp(1, sorted.len()) - 1]
        };
        (!sorted.is_empty()).then(|| Percentiles {
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: sorted[sorted.len() - 1],
        })
    }

    fn json(self) -> Value {
        json!({"p50": round(self.p50), "p90": round(self.p90), "p99": round(self.p99), "max": round(self.max)})
    }
}

/// How much of a resource the pods requested, as a fraction of what the nodes offer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allocation {
    /// The highest fraction at any instant.
    pub peak: f64,
    /// The mean over the replay's time (weighted by how long each state lasted).
    pub mean: f64,
}

/// The answer of a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Timed or settled.
    pub mode: Mode,
    /// When the replay ended (seconds).
    pub end: f64,
    /// Trace events applied.
    pub events: usize,
    /// Pending pods that arrived (the scenario's at time 0, then the trace's).
    pub arrived: usize,
    /// Pods this replay bound.
    pub scheduled: usize,
    /// Pods pending at the end (for a scheduler of this replay or not).
    pub pending: usize,
    /// Pods whose `schedulerName` no profile has (never attempted in the timed mode).
    pub not_ours: usize,
    /// Pods that finished (their run time, a finish event, or a phase).
    pub finished: usize,
    /// Pods the trace deleted.
    pub deleted: usize,
    /// Pods evicted (preemption victims, drained nodes, deleted nodes).
    pub evicted: usize,
    /// Scheduling attempts.
    pub attempts: usize,
    /// Attempts that nominated a node by preempting.
    pub preemptions: usize,
    /// How long the bound pods waited from arrival to binding.
    pub waited: Option<Percentiles>,
    /// How long the pods pending at the end had waited.
    pub pending_for: Option<Percentiles>,
    /// Per resource (cpu, memory, extended resources).
    pub allocation: BTreeMap<String, Allocation>,
    /// Pending pods and allocation at evenly spaced instants.
    pub timeline: Timeline,
    /// Every node's load at each instant of
    /// [`ReplayOptions::occupancy_at`](crate::ReplayOptions::occupancy_at).
    pub occupancy: Vec<Occupancy>,
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn percent(x: f64) -> f64 {
    (x * 10000.0).round() / 100.0
}

impl Summary {
    /// The summary as one JSON object, `{"summary": {...}}`.
    pub fn json(&self) -> Value {
        let allocation: serde_json::Map<String, Value> = self
            .allocation
            .iter()
            .map(|(name, a)| {
                (
                    name.clone(),
                    json!({"peakPercent": percent(a.peak), "meanPercent": percent(a.mean)}),
                )
            })
            .collect();
        json!({"summary": {
            "mode": match self.mode { Mode::Timed => "timed", Mode::Settle => "settle" },
            "end": round(self.end),
            "events": self.events,
            "pods": {
                "arrived": self.arrived, "scheduled": self.scheduled, "pending": self.pending,
                "notOurs": self.not_ours, "finished": self.finished, "deleted": self.deleted,
                "evicted": self.evicted,
            },
            "attempts": self.attempts,
            "preemptions": self.preemptions,
            "waitedSeconds": self.waited.map(Percentiles::json),
            "pendingSeconds": self.pending_for.map(Percentiles::json),
            "allocation": allocation,
        }})
    }

    /// The summary for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mode = match self.mode {
            Mode::Timed => "timed",
            Mode::Settle => "settled",
        };
        let _ = writeln!(
            out,
            "Replayed {} event(s) over {} s ({mode}): {} pod(s) arrived, {} scheduled, {} pending at the end",
            self.events,
            seconds(round(self.end)),
            self.arrived,
            self.scheduled,
            self.pending
        );
        let _ = writeln!(
            out,
            "  {} attempt(s), {} preemption(s), {} evicted, {} finished, {} deleted{}",
            self.attempts,
            self.preemptions,
            self.evicted,
            self.finished,
            self.deleted,
            if self.not_ours > 0 {
                format!(", {} for no scheduler of this configuration", self.not_ours)
            } else {
                String::new()
            }
        );
        let line = |out: &mut String, what: &str, p: &Option<Percentiles>| {
            if let Some(p) = p {
                let _ = writeln!(
                    out,
                    "  {what}: p50 {} s, p90 {} s, p99 {} s, max {} s",
                    seconds(round(p.p50)),
                    seconds(round(p.p90)),
                    seconds(round(p.p99)),
                    seconds(round(p.max))
                );
            }
        };
        line(&mut out, "waited to be scheduled", &self.waited);
        line(&mut out, "pending at the end for", &self.pending_for);
        for (name, a) in &self.allocation {
            let _ = writeln!(
                out,
                "  {name} requested: peak {}%, mean {}%",
                percent(a.peak),
                percent(a.mean)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let p = Percentiles::of(&(1..=100).map(f64::from).collect::<Vec<_>>()).unwrap();
        assert_eq!((p.p50, p.p90, p.p99, p.max), (50.0, 90.0, 99.0, 100.0));
        let one = Percentiles::of(&[3.0]).unwrap();
        assert_eq!((one.p50, one.max), (3.0, 3.0));
        assert!(Percentiles::of(&[]).is_none());
    }

    #[test]
    fn allocation_is_weighted_by_time() {
        let mut stats = Stats::default();
        let load = |r| {
            let mut l = Load::default();
            l.add("cpu", 1000, r);
            l
        };
        stats.sample(0.0, load(0), 0);
        stats.sample(10.0, load(1000), 0);
        stats.sample(30.0, load(500), 0);
        let s = stats.summary(40.0, &[], Mode::Timed);
        // 10 s at 0%, 20 s at 100%, 10 s at 50%: 62.5% of 40 s.
        assert_eq!(
            s.allocation["cpu"],
            Allocation {
                peak: 1.0,
                mean: 0.625
            }
        );
    }
}
