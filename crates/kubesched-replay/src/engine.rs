//! The replay itself: a discrete-event simulation over a simulated clock. Events apply
//! in time order; between them the scheduler runs, in one of two modes:
//!
//! - **timed**: kube-scheduler's scheduling queue in simulated time (the framework's
//!   [`SchedulingQueue`](kubesched_framework::queue::SchedulingQueue) on a clock the
//!   replay moves): pods arrive in the active queue, a pod no node fits waits in the
//!   unschedulable set until a cluster event one of its rejecting plugins registered
//!   moves it (to backoff: 1 s, doubling to 10 s, as the configuration says), pods
//!   unschedulable for 5 minutes are retried at the next 30-second flush; scheduling
//!   and binding take no simulated time.
//! - **settle**: after each instant's events every pending pod is tried in queue order,
//!   again and again until a pass places nothing. Each pass is exactly `simulate` of
//!   the cluster as it stands, so each can be checked against kube-scheduler's own code.
//!
//! Preemption's victims leave at once. A pod with a run time (the trace's `duration`
//! or its `kubesched.io/duration` annotation) finishes that long after it is bound.
//!
//! A pod a Permit plugin makes wait stays assumed while the timed mode's clock moves
//! until a later Permit allows it or its deadline (an event on the clock) rejects it;
//! pods that name a PodGroup are attempted in PodGroup cycles (see `waits`).
//!
//! Here: the types, [`check`], [`replay`] and what both modes share; `timed`, `settle`,
//! `apply` (the trace's events) and `waits` (gangs in the timed mode) hold the rest.

mod apply;
mod settle;
mod timed;
mod waits;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::BufRead;
use std::iter::Peekable;
use std::time::Duration;

use kubesched_framework::{Registry, Snapshot};
use kubesched_sim::attempt::Attempt;
use kubesched_sim::scenario::Scenario;
use kubesched_sim::simulate::{SimulationError, SimulationOptions, prepare};

use crate::state::{Cluster, Decoded, decode, node_name, pod_key};
use crate::summary::{NodeLoad, Occupancy, Stats, Summary};
use crate::trace::{Action, TraceError, TraceReader};
use timed::Timed;

/// How the scheduler runs between events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// kube-scheduler's queue in simulated time (see the module doc).
    #[default]
    Timed,
    /// After each instant, every pending pod in queue order until nothing more fits.
    Settle,
}

/// How a replay runs.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The simulation's options: preemption, per-node detail, version and gates.
    pub simulation: SimulationOptions,
    /// Timed or settled.
    pub mode: Mode,
    /// In the timed mode, how long the replay goes on after the last event (or the
    /// last pod finishing), so that pods backing off get their retries and pods left
    /// unschedulable their 5-minute flush: 600 s by default.
    pub tail: Duration,
    /// In the settled mode, hand the sink the cluster before each pass
    /// ([`Record::State`]), to check each pass against kube-scheduler's own code.
    pub states: bool,
    /// Hand the sink the cluster as the replay leaves it ([`Record::Final`]), last.
    pub final_state: bool,
    /// Instants (seconds) at which to keep every node's load, for
    /// [`Summary::occupancy`]: the cluster after every event up to each one. An
    /// instant after the replay's end (`f64::INFINITY` for "at the end") is taken at
    /// the end, with the end's time.
    pub occupancy_at: Vec<f64>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            simulation: SimulationOptions::default(),
            mode: Mode::Timed,
            tail: Duration::from_secs(600),
            states: false,
            final_state: false,
            occupancy_at: Vec::new(),
        }
    }
}

/// Why a pod left its node without finishing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// A preemption: the pod that preempted it, `namespace/name`.
    Preempted(String),
    /// Its node was drained.
    Drained,
    /// Its node was deleted.
    NodeDeleted,
}

/// What the replay hands its sink, in order.
#[derive(Debug)]
pub enum Record {
    /// One scheduling attempt, at `time` seconds. A pod that waited at Permit gets its
    /// line when the wait is decided, at that time: bound, or turned down (a plugin
    /// rejected it, its wait ran out, its node was deleted).
    Attempt {
        /// Seconds from the start.
        time: f64,
        /// The attempt, with its per-node detail as far as the options ask.
        attempt: Box<Attempt>,
    },
    /// A bound pod left its node without finishing.
    Evicted {
        /// Seconds from the start.
        time: f64,
        /// `namespace/name`.
        pod: String,
        /// The node it left.
        node: String,
        /// Why.
        reason: Eviction,
    },
    /// The settled mode's cluster before a pass (with [`ReplayOptions::states`]): the
    /// scenario documents that `kubesched simulate` reads; the pass's attempts follow.
    State {
        /// Seconds from the start.
        time: f64,
        /// The pass at this instant, from 1.
        pass: usize,
        /// The cluster as scenario documents.
        documents: String,
    },
    /// The cluster as the replay leaves it (with [`ReplayOptions::final_state`]): every
    /// pod bound by the replay has its `spec.nodeName`.
    Final {
        /// Seconds from the start: the replay's end.
        time: f64,
        /// The cluster as scenario documents.
        documents: String,
    },
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError<E> {
    /// A line of the trace is wrong (nothing of it was applied).
    #[error("{0}")]
    Trace(#[from] TraceError),
    /// The scenario or configuration cannot be simulated.
    #[error("{0}")]
    Simulation(#[from] SimulationError),
    /// The sink failed (e.g. a closed pipe).
    #[error("{0}")]
    Sink(E),
    /// The scenario holds what this mode cannot replay.
    #[error("{0}")]
    Unsupported(String),
}

/// Reads the whole trace once without applying anything, so that a replay never stops
/// half-way on a bad line: every line as [`TraceReader`] checks it, every applied object
/// through the scenario loader, and every delete, finish, cordon, uncordon and drain
/// against the objects the scenario and the trace hold at that point. Returns the
/// number of events.
pub fn check<R: BufRead>(
    scenario: &Scenario,
    trace: &mut TraceReader<R>,
) -> Result<usize, TraceError> {
    let mut nodes: std::collections::HashSet<String> = scenario
        .nodes
        .iter()
        .map(|n| node_name(n).to_string())
        .collect();
    let mut pods: std::collections::HashSet<String> =
        scenario.pods.iter().map(|p| pod_key(p)).collect();
    let mut others: std::collections::HashSet<(String, Option<String>, String)> = scenario
        .objects
        .iter()
        .map(|o| (o.kind.clone(), o.namespace.clone(), o.name.clone()))
        .collect();
    let name = trace.name().to_string();
    let mut count = 0;
    for event in trace.by_ref() {
        let event = event?;
        count += 1;
        let fail = |field: &str, problem: String| TraceError {
            trace: name.clone(),
            line: event.line,
            field: Some(field.to_string()),
            problem,
            truncated: false,
        };
        match &event.action {
            Action::Apply { object, .. } => {
                match decode(object, &format!("{name} line {}", event.line))
                    .map_err(|e| fail("apply", e))?
                {
                    Decoded::Node(n) => {
                        nodes.insert(node_name(&n).to_string());
                    }
                    Decoded::Pod(p) => {
                        pods.insert(pod_key(&p));
                    }
                    Decoded::Other(o) => {
                        others.insert((o.kind, o.namespace, o.name));
                    }
                    // A finished pod the replay never had: nothing to do, as the loader
                    // leaves finished pods of a scenario file out.
                    Decoded::Finished { .. } => {}
                }
            }
            Action::Delete(r) => {
                let gone = match r.kind.as_str() {
                    "Node" => nodes.remove(&r.name),
                    "Pod" => pods.remove(&format!(
                        "{}/{}",
                        r.namespace.as_deref().unwrap_or("default"),
                        r.name
                    )),
                    kind => others.remove(&(kind.to_string(), r.namespace.clone(), r.name.clone())),
                };
                if !gone {
                    let ns = r
                        .namespace
                        .as_ref()
                        .map(|n| format!("{n}/"))
                        .unwrap_or_default();
                    return Err(fail(
                        "delete",
                        format!("{} {ns}{}: no such object", r.kind, r.name),
                    ));
                }
            }
            Action::Finish { pod, .. } => {
                if !pods.contains(pod) {
                    return Err(fail("finish", format!("{pod}: no such pod")));
                }
            }
            Action::Cordon(n) | Action::Uncordon(n) | Action::Drain(n) => {
                if !nodes.contains(n) {
                    let field = match &event.action {
                        Action::Cordon(_) => "cordon",
                        Action::Uncordon(_) => "uncordon",
                        _ => "drain",
                    };
                    return Err(fail(field, format!("{n}: no such node")));
                }
            }
        }
    }
    Ok(count)
}

/// Replays `trace` over `scenario` (its nodes and pods are there at time 0, its pending
/// pods arrive then), with the plugins of `registry`, handing every [`Record`] to
/// `sink` as it happens; returns the summary. Check the trace with [`check`] first to
/// be sure a bad line does not stop the replay half-way.
pub fn replay<R: BufRead, E>(
    scenario: &Scenario,
    trace: TraceReader<R>,
    options: &ReplayOptions,
    registry: &Registry,
    sink: impl FnMut(Record) -> Result<(), E>,
) -> Result<Summary, ReplayError<E>> {
    if options.mode == Mode::Settle && has_storage_or_claims(scenario) {
        return Err(ReplayError::Unsupported(
            "the settled mode does not replay storage or resource.k8s.io objects yet (what a bound pod allocated would be lost between passes): replay without --settle".into(),
        ));
    }
    let mut engine = Engine::new(scenario, options, registry, sink)?;
    engine.trace = trace.name().to_string();
    let mut events = trace.peekable();
    match options.mode {
        Mode::Timed => engine.run_timed(&mut events)?,
        Mode::Settle => engine.run_settled(&mut events)?,
    }
    if options.final_state {
        let documents = engine.cluster.to_documents();
        let time = secs(engine.now);
        engine.emit(Record::Final { time, documents })?;
    }
    Ok(engine.finish())
}

/// The timed mode's scheduler and queue.
struct Engine<'r, F> {
    /// The trace's name, for messages.
    trace: String,
    cluster: Cluster,
    options: &'r ReplayOptions,
    registry: &'r Registry,
    timed: Option<Timed>,
    /// Pods that finish on their own: (when, serial, key).
    finishes: BinaryHeap<Reverse<(Duration, u64, String)>>,
    now: Duration,
    /// The last event's time, or the last pod's finish.
    last_input: Duration,
    stats: Stats,
    /// [`ReplayOptions::occupancy_at`] in time order, and how many are taken.
    occupancy_at: Vec<f64>,
    occupancy_taken: usize,
    sink: F,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl<'r, E, F: FnMut(Record) -> Result<(), E>> Engine<'r, F> {
    fn new(
        scenario: &Scenario,
        options: &'r ReplayOptions,
        registry: &'r Registry,
        sink: F,
    ) -> Result<Self, ReplayError<E>> {
        let cluster = Cluster::from_scenario(scenario);
        let mut engine = Engine {
            trace: String::new(),
            cluster,
            options,
            registry,
            timed: None,
            finishes: BinaryHeap::new(),
            now: Duration::ZERO,
            last_input: Duration::ZERO,
            stats: Stats::default(),
            occupancy_at: {
                let mut at = options.occupancy_at.clone();
                at.sort_by(f64::total_cmp);
                at
            },
            occupancy_taken: 0,
            sink,
        };
        // Built once in both modes: a configuration that cannot run fails here.
        let mut prepared = prepare(scenario, &options.simulation, registry)?;
        // Without per-node detail only each attempt's decision is read: incremental
        // scheduling may then choose from kept totals without a score table.
        if options.simulation.detail == kubesched_sim::simulate::Detail::None {
            prepared.scheduler.set_decisions_only(true);
        }
        engine
            .stats
            .arrived(engine.cluster.pods().filter(|e| e.node().is_none()).count());
        if options.mode == Mode::Timed {
            engine.timed = Some(Timed::new(scenario, prepared, &mut engine.stats)?);
        }
        Ok(engine)
    }

    fn emit(&mut self, record: Record) -> Result<(), ReplayError<E>> {
        (self.sink)(record).map_err(ReplayError::Sink)
    }

    /// When the next pod finishes on its own, after dropping the planned finishes of
    /// pods that left another way (deleted, evicted) first.
    fn next_finish(&mut self) -> Option<Duration> {
        while let Some(Reverse((t, serial, key))) = self.finishes.peek() {
            let live = self
                .cluster
                .pod(key)
                .is_some_and(|e| e.serial == *serial && e.node().is_some());
            if live {
                return Some(*t);
            }
            self.finishes.pop();
        }
        None
    }

    fn advance(&mut self, to: Duration) {
        if let Some(t) = self.timed.as_mut() {
            t.clock.advance(to - self.now);
            // Permit waits are measured on the replay's clock.
            t.prepared.scheduler.set_permit_time(waits::nanos(to));
        }
        self.now = to;
    }

    /// Applies the finishes due by now, then the trace's events of this instant.
    fn apply_due(
        &mut self,
        events: &mut Peekable<TraceReader<impl BufRead>>,
    ) -> Result<(), ReplayError<E>> {
        while let Some(Reverse((t, _, _))) = self.finishes.peek()
            && *t <= self.now
        {
            let Some(Reverse((_, serial, key))) = self.finishes.pop() else {
                break;
            };
            if self
                .cluster
                .pod(&key)
                .is_some_and(|e| e.serial == serial && e.node().is_some())
            {
                self.last_input = self.now;
                self.stats.finished += 1;
                self.remove_pod(&key);
            }
        }
        while let Some(Ok(e)) = events.peek()
            && Duration::from_secs_f64(e.time) <= self.now
        {
            let Some(Ok(event)) = events.next() else {
                break;
            };
            self.last_input = self.now;
            self.stats.events += 1;
            self.apply(event)?;
        }
        next_time(events).map(|_| ())
    }

    /// A pod was bound to `node` by this replay: the cluster, the statistics, and its
    /// finish if it has a run time.
    fn bound(&mut self, key: &str, node: &str) {
        self.cluster.bind(key, node);
        if let Some(entry) = self.cluster.pod(key) {
            self.stats.bound(secs(self.now) - entry.arrived);
            if let Some(d) = entry.duration {
                let at = self.now + Duration::from_secs_f64(d);
                self.finishes
                    .push(Reverse((at, entry.serial, key.to_string())));
            }
        }
    }

    /// Keeps every node's load for each instant of [`ReplayOptions::occupancy_at`]
    /// before `next` (the next time anything changes; `None`: nothing will).
    fn take_occupancy(&mut self, next: Option<Duration>) {
        let due = self.occupancy_at[self.occupancy_taken..]
            .iter()
            .take_while(|t| next.is_none_or(|n| **t < secs(n)))
            .count();
        if due == 0 {
            return;
        }
        let own;
        let snapshot = match &self.timed {
            Some(t) => t.prepared.scheduler.snapshot(),
            None => match self.cluster_snapshot() {
                Some(s) => {
                    own = s;
                    &own
                }
                None => return,
            },
        };
        let nodes = node_loads(snapshot);
        let end = secs(self.now);
        for &time in &self.occupancy_at[self.occupancy_taken..self.occupancy_taken + due] {
            self.stats.occupancy.push(Occupancy {
                // An instant after the end (infinity: "the end") is the end.
                time: if next.is_none() { time.min(end) } else { time },
                nodes: nodes.clone(),
            });
        }
        self.occupancy_taken += due;
    }

    fn finish(mut self) -> Summary {
        self.rebuild_if_dirty();
        if let Some(t) = &self.timed {
            // The load kept in step must be what a pass over the nodes gives.
            debug_assert_eq!(t.load, load(t.prepared.scheduler.snapshot()));
        }
        let end = secs(self.now);
        let pending: Vec<f64> = self
            .cluster
            .pods()
            .filter(|e| e.node().is_none())
            .map(|e| end - e.arrived)
            .collect();
        debug_assert_eq!(pending.len(), self.cluster.pending());
        self.stats.summary(end, &pending, self.options.mode)
    }
}

fn has_storage_or_claims(s: &Scenario) -> bool {
    let (st, d) = (&s.storage, &s.dra);
    !(st.persistent_volumes.is_empty()
        && st.claims.is_empty()
        && st.classes.is_empty()
        && st.csi_nodes.is_empty()
        && st.csi_drivers.is_empty()
        && st.capacities.is_empty()
        && st.attachments.is_empty()
        && d.device_classes.is_empty()
        && d.slices.is_empty()
        && d.claims.is_empty()
        && d.templates.is_empty())
}

/// Each node's load, in node order.
fn node_loads(snapshot: &Snapshot) -> Vec<NodeLoad> {
    snapshot
        .nodes()
        .iter()
        .map(|n| {
            let mut load = crate::summary::Load::default();
            add_node_load(&mut load, n, 1);
            NodeLoad {
                node: n.name().to_string(),
                pods: n.pods().len(),
                load,
            }
        })
        .collect()
}

/// Adds (`sign` 1) or takes away (`sign` -1) what node `n` offers and its pods request.
fn add_node_load(load: &mut crate::summary::Load, n: &kubesched_framework::NodeInfo, sign: i64) {
    let (a, r) = (n.allocatable(), n.requested());
    load.add("cpu", sign * a.milli_cpu, sign * r.milli_cpu);
    load.add("memory", sign * a.memory, sign * r.memory);
    for (name, value) in &a.scalar_resources {
        load.add(name, sign * value, sign * r.scalar(name));
    }
}

/// What the cluster's nodes offer and their pods request.
fn load(snapshot: &Snapshot) -> crate::summary::Load {
    let mut load = crate::summary::Load::default();
    for n in snapshot.nodes() {
        add_node_load(&mut load, n, 1);
    }
    load
}

/// When the next event of the trace happens; the trace's error if its next line is bad.
fn next_time<E>(
    events: &mut Peekable<TraceReader<impl BufRead>>,
) -> Result<Option<Duration>, ReplayError<E>> {
    match events.peek() {
        Some(Ok(e)) => Ok(Some(Duration::from_secs_f64(e.time))),
        Some(Err(_)) => match events.next() {
            Some(Err(e)) => Err(ReplayError::Trace(e)),
            _ => Ok(None),
        },
        None => Ok(None),
    }
}
