//! The replay itself: a discrete-event simulation over a simulated clock. Events apply
//! in time order; between them the scheduler runs, in one of two modes:
//!
//! - **timed**: kube-scheduler's scheduling queue in simulated time (the framework's
//!   [`SchedulingQueue`] on a clock the replay moves): pods arrive in the active queue,
//!   a pod no node fits waits in the unschedulable set until a cluster event one of its
//!   rejecting plugins registered moves it (to backoff: 1 s, doubling to 10 s, as the
//!   configuration says), pods unschedulable for 5 minutes are retried at the next
//!   30-second flush; scheduling and binding take no simulated time.
//! - **settle**: after each instant's events every pending pod is tried in queue order,
//!   again and again until a pass places nothing. Each pass is exactly `simulate` of
//!   the cluster as it stands, so each can be checked against kube-scheduler's own code.
//!
//! Preemption's victims leave at once. A pod with a run time (the trace's `duration`
//! or its `kubesched.io/duration` annotation) finishes that long after it is bound.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::BufRead;
use std::iter::Peekable;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::events::{ActionType, EventResource, node_update_events};
use kubesched_framework::queue::{FakeClock, QueueOptions, QueuedPod, SchedulingQueue};
use kubesched_framework::{ClusterEvent, PodInfo, QueueingHints, Registry, Snapshot};
use kubesched_sim::attempt::{Attempt, NodeNames};
use kubesched_sim::scenario::Scenario;
use kubesched_sim::simulate::{PodOutcome, Prepared, SimulationError, SimulationOptions, prepare};

use crate::state::{Cluster, Decoded, decode, node_name, pod_key};
use crate::summary::{NodeLoad, Occupancy, Stats, Summary};
use crate::trace::{Action, TraceError, TraceEvent, TraceReader};

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
    /// One scheduling attempt, at `time` seconds.
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
struct Timed {
    prepared: Prepared,
    /// The cluster's nodes or objects changed since the snapshot was built.
    dirty: bool,
    /// Nodes were added or removed in the snapshot in place while an attempt still
    /// held `names`: they are listed again once, before the next attempt.
    names_stale: bool,
    /// What the snapshot's nodes offer and their pods request, kept in step with each
    /// binding, removal and node change (so a sample costs no pass over the nodes).
    load: crate::summary::Load,
    /// The snapshot's node names, kept in step with each node added and removed.
    names: Arc<NodeNames>,
    queue: SchedulingQueue,
    clock: Arc<FakeClock>,
    start: Instant,
}

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
            let config = match &scenario.config {
                Some(doc) => {
                    KubeSchedulerConfiguration::from_value(doc.value.clone(), &doc.source)
                        .map_err(SimulationError::from)?
                        .config
                }
                None => KubeSchedulerConfiguration::default_config(),
            };
            let clock = Arc::new(FakeClock::new());
            let start = kubesched_framework::queue::Clock::now(&*clock);
            let profiles = prepared.scheduler.profiles();
            let fwk = profiles[0].clone();
            let hints = QueueingHints::from_frameworks(profiles.iter().map(|f| &**f));
            let mut queue = SchedulingQueue::new(
                QueueOptions::from_seconds(
                    config.pod_initial_backoff_seconds,
                    config.pod_max_backoff_seconds,
                ),
                clock.clone(),
                move |a, b| fwk.queue_less(a, b),
            );
            queue.set_queueing_hints(hints);
            for q in std::mem::take(&mut prepared.queue) {
                if prepared
                    .scheduler
                    .framework_for(q.pod_info.scheduler_name())
                    .is_some()
                {
                    queue.add(q.pod_info);
                } else {
                    engine.stats.not_ours += 1;
                }
            }
            let names = Arc::new(NodeNames::new(prepared.node_order()));
            engine.timed = Some(Timed {
                load: load(prepared.scheduler.snapshot()),
                prepared,
                dirty: false,
                names_stale: false,
                names,
                queue,
                clock,
                start,
            });
        }
        Ok(engine)
    }

    fn emit(&mut self, record: Record) -> Result<(), ReplayError<E>> {
        (self.sink)(record).map_err(ReplayError::Sink)
    }

    // ---- the timed mode ----

    fn run_timed(
        &mut self,
        events: &mut Peekable<TraceReader<impl BufRead>>,
    ) -> Result<(), ReplayError<E>> {
        loop {
            self.schedule_ready()?;
            self.stats
                .sample(secs(self.now), self.snapshot_load(), self.cluster.pending());
            let next_event = next_time(events)?;
            let next_finish = self.next_finish();
            let horizon = (next_event.is_none() && next_finish.is_none())
                .then(|| self.last_input + self.options.tail);
            let timed = self.timed.as_ref().expect("timed mode");
            let since = |i: Instant| i.saturating_duration_since(timed.start);
            let backoff = timed.queue.next_backoff_end().map(since);
            // kube-scheduler moves pods unschedulable for too long every 30 s.
            let flush = timed.queue.next_unschedulable_timeout().map(|t| {
                let t = since(t).as_secs() / 30 + 1;
                Duration::from_secs(t * 30)
            });
            let next = [next_event, next_finish, backoff, flush]
                .into_iter()
                .flatten()
                .min()
                .filter(|t| horizon.is_none_or(|h| *t <= h));
            self.take_occupancy(next);
            let Some(next) = next else {
                break;
            };
            self.advance(next.max(self.now));
            self.apply_due(events)?;
        }
        Ok(())
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
        if let Some(t) = &self.timed {
            t.clock.advance(to - self.now);
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

    /// Pops and attempts every pod the queue has ready now.
    fn schedule_ready(&mut self) -> Result<(), ReplayError<E>> {
        self.rebuild_if_dirty();
        loop {
            let Some(timed) = self.timed.as_mut() else {
                return Ok(());
            };
            let Some(qp) = timed.queue.pop() else {
                return Ok(());
            };
            self.attempt_queued(qp)?;
        }
    }

    fn attempt_queued(&mut self, qp: QueuedPod) -> Result<(), ReplayError<E>> {
        let time = secs(self.now);
        let timed = self.timed.as_mut().expect("timed mode");
        let pod = qp.info.pod_info.clone();
        let key = pod.key().to_string();
        let attempt = timed.prepared.attempt_raw(&pod, &timed.names);
        self.stats.attempts += 1;
        match &attempt.outcome {
            PodOutcome::Ignored => timed.queue.done(&key),
            PodOutcome::Gated(_) => timed.queue.add_gated(qp),
            PodOutcome::Scheduled(node) => {
                timed.queue.done(&key);
                timed.load.request(pod.requests(), 1);
                timed
                    .queue
                    .move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_ADD);
                let node = node.clone();
                self.bound(&key, &node);
            }
            PodOutcome::Unschedulable(_) => {
                timed
                    .queue
                    .add_unschedulable(qp, attempt.unschedulable_plugins());
            }
            PodOutcome::Nominated { node, victims, .. } => {
                timed
                    .queue
                    .add_unschedulable(qp, attempt.unschedulable_plugins());
                timed
                    .prepared
                    .scheduler
                    .nominated_pods_mut()
                    .add(pod.clone(), node);
                self.stats.preemptions += 1;
                let (node, victims) = (node.clone(), victims.clone());
                self.emit(Record::Attempt {
                    time,
                    attempt: Box::new(attempt),
                })?;
                for victim in victims {
                    self.evict(&victim, &node, Eviction::Preempted(key.clone()))?;
                }
                return Ok(());
            }
        }
        self.emit(Record::Attempt {
            time,
            attempt: Box::new(attempt),
        })
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

    // ---- the settled mode ----

    fn run_settled(
        &mut self,
        events: &mut Peekable<TraceReader<impl BufRead>>,
    ) -> Result<(), ReplayError<E>> {
        self.settle()?;
        loop {
            let next_event = next_time(events)?;
            let next_finish = self.next_finish();
            let next = [next_event, next_finish].into_iter().flatten().min();
            self.take_occupancy(next);
            let Some(next) = next else {
                break;
            };
            self.advance(next.max(self.now));
            self.apply_due(events)?;
            self.settle()?;
        }
        Ok(())
    }

    /// The settled mode's nodes and bound pods as they stand.
    fn cluster_snapshot(&self) -> Option<Snapshot> {
        let pods = self
            .cluster
            .pods()
            .filter(|e| e.node().is_some())
            .filter_map(|e| PodInfo::new(e.pod.clone()).ok().map(Arc::new));
        Snapshot::new(self.cluster.nodes().cloned(), pods)
            .ok()
            .map(|(snapshot, _)| snapshot)
    }

    /// The settled mode's load: the cluster's nodes and bound pods as they stand.
    fn cluster_load(&self) -> crate::summary::Load {
        self.cluster_snapshot()
            .map_or_else(crate::summary::Load::default, |s| load(&s))
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

    /// Passes of `simulate` over the cluster as it stands until one places nothing.
    fn settle(&mut self) -> Result<(), ReplayError<E>> {
        let time = secs(self.now);
        let mut pass = 0;
        loop {
            if self.cluster.pending() == 0 {
                self.stats.sample(time, self.cluster_load(), 0);
                break;
            }
            pass += 1;
            if self.options.states {
                let documents = self.cluster.to_documents();
                self.emit(Record::State {
                    time,
                    pass,
                    documents,
                })?;
            }
            let mut prepared = prepare(
                &self.cluster.to_scenario(),
                &self.options.simulation,
                self.registry,
            )?;
            let mut attempts = Vec::new();
            let _ = prepared.run_attempts(|a| {
                attempts.push(a);
                Ok::<(), std::convert::Infallible>(())
            });
            let mut placed = 0;
            for attempt in attempts {
                self.stats.attempts += 1;
                let key = attempt.pod.clone();
                match &attempt.outcome {
                    PodOutcome::Scheduled(node) => {
                        placed += 1;
                        let node = node.clone();
                        self.bound(&key, &node);
                    }
                    PodOutcome::Nominated { node, victims, .. } => {
                        self.stats.preemptions += 1;
                        for victim in victims.clone() {
                            if self.cluster.remove_pod(&victim).is_some() {
                                self.stats.evicted += 1;
                                self.emit(Record::Evicted {
                                    time,
                                    pod: victim,
                                    node: node.clone(),
                                    reason: Eviction::Preempted(key.clone()),
                                })?;
                            }
                        }
                    }
                    _ => {}
                }
                self.emit(Record::Attempt {
                    time,
                    attempt: Box::new(attempt),
                })?;
            }
            if placed == 0 {
                self.stats.sample(
                    time,
                    load(prepared.scheduler.snapshot()),
                    self.cluster.pending(),
                );
                break;
            }
        }
        Ok(())
    }

    // ---- applying events (both modes) ----

    fn apply(&mut self, event: TraceEvent) -> Result<(), ReplayError<E>> {
        match event.action {
            Action::Apply { object, duration } => {
                let source = format!("{} line {}", self.trace, event.line);
                let decoded = decode(&object, &source).map_err(|problem| TraceError {
                    trace: self.trace.clone(),
                    line: event.line,
                    field: Some("apply".into()),
                    problem,
                    truncated: false,
                })?;
                match decoded {
                    Decoded::Node(node) => self.put_node(node),
                    Decoded::Pod(pod) => {
                        let key = pod_key(&pod);
                        let old = self.cluster.put_pod(pod, secs(self.now), duration);
                        self.pod_changed(&key, old.is_none());
                    }
                    Decoded::Other(o) => {
                        self.cluster.put_object(o);
                        self.mark_dirty();
                    }
                    Decoded::Finished { pod, .. } => {
                        if self.cluster.pod(&pod).is_some() {
                            self.stats.finished += 1;
                            self.remove_pod(&pod);
                        }
                    }
                }
            }
            Action::Delete(r) => match r.kind.as_str() {
                "Node" => self.delete_node(&r.name)?,
                "Pod" => {
                    let key = format!("{}/{}", r.namespace.as_deref().unwrap_or("default"), r.name);
                    if self.cluster.pod(&key).is_some() {
                        self.stats.deleted += 1;
                        self.remove_pod(&key);
                    }
                }
                kind => {
                    if self
                        .cluster
                        .remove_object(kind, r.namespace.as_deref(), &r.name)
                    {
                        self.mark_dirty();
                    }
                }
            },
            Action::Finish { pod, .. } => {
                if self.cluster.pod(&pod).is_some() {
                    self.stats.finished += 1;
                    self.remove_pod(&pod);
                }
            }
            Action::Cordon(name) => self.set_unschedulable(&name, true),
            Action::Uncordon(name) => self.set_unschedulable(&name, false),
            Action::Drain(name) => {
                self.set_unschedulable(&name, true);
                for key in self.cluster.pods_on(&name) {
                    self.evict(&key, &name, Eviction::Drained)?;
                }
            }
        }
        Ok(())
    }

    fn set_unschedulable(&mut self, name: &str, on: bool) {
        let Some(node) = self.cluster.node(name) else {
            return;
        };
        let mut node = (**node).clone();
        node.spec.get_or_insert_with(Default::default).unschedulable = on.then_some(true);
        self.put_node(Arc::new(node));
    }

    fn put_node(&mut self, node: Arc<Node>) {
        let old = self.cluster.put_node(node.clone());
        let events = match &old {
            None => vec![ClusterEvent::NODE_ADD],
            Some(old) => node_update_events(old, &node),
        };
        // A node added or changed goes into the snapshot as it stands, which keeps what
        // was computed for the other nodes; a new node that bound pods already name
        // (they arrived first) needs the full rebuild that gathers them.
        let orphans = old.is_none() && !self.cluster.pods_on(node_name(&node)).is_empty();
        match self.timed.as_mut() {
            Some(timed) if !timed.dirty && !orphans => {
                let name = node_name(&node).to_string();
                let snapshot = timed.prepared.scheduler.snapshot_mut();
                if let Some(i) = snapshot.index_of(&name) {
                    add_node_load(&mut timed.load, snapshot.node_at(i), -1);
                }
                let done = match old {
                    None => snapshot.add_node(node).is_ok(),
                    Some(_) => snapshot.update_node(node).unwrap_or(false),
                };
                match snapshot.index_of(&name) {
                    Some(i) if done => {
                        add_node_load(&mut timed.load, snapshot.node_at(i), 1);
                        if old.is_none() {
                            match Arc::get_mut(&mut timed.names) {
                                Some(names) => names.push(name),
                                None => timed.names_stale = true,
                            }
                        }
                    }
                    _ => timed.dirty = true,
                }
            }
            _ => self.mark_dirty(),
        }
        self.queue_events(&events);
    }

    fn delete_node(&mut self, name: &str) -> Result<(), ReplayError<E>> {
        if self.cluster.node(name).is_none() {
            return Ok(());
        }
        for key in self.cluster.pods_on(name) {
            self.evict(&key, name, Eviction::NodeDeleted)?;
        }
        self.cluster.remove_node(name);
        // Out of the snapshot as it stands: the nodes after it move up one place.
        match self.timed.as_mut() {
            Some(timed) if !timed.dirty => {
                let snapshot = timed.prepared.scheduler.snapshot_mut();
                let at = snapshot.index_of(name);
                match (at, snapshot.remove_node(name)) {
                    (Some(at), Some(removed)) => {
                        add_node_load(&mut timed.load, &removed, -1);
                        match Arc::get_mut(&mut timed.names) {
                            Some(names) => names.remove(at),
                            None => timed.names_stale = true,
                        }
                    }
                    _ => timed.dirty = true,
                }
            }
            _ => self.mark_dirty(),
        }
        self.queue_events(&[ClusterEvent::NODE_DELETE]);
        Ok(())
    }

    /// A pod was added (`new`) or replaced in the cluster: the queue or the snapshot.
    fn pod_changed(&mut self, key: &str, new: bool) {
        let Some(entry) = self.cluster.pod(key).cloned() else {
            return;
        };
        if new && entry.node().is_none() {
            self.stats.arrived(1);
        }
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        let Ok(info) = PodInfo::new(entry.pod.clone()) else {
            return;
        };
        let info = Arc::new(info);
        match entry.node() {
            None => {
                if timed
                    .prepared
                    .scheduler
                    .framework_for(info.scheduler_name())
                    .is_some()
                {
                    timed.queue.add(info);
                } else if new {
                    self.stats.not_ours += 1;
                }
            }
            Some(node) => {
                let node = node.to_string();
                let snapshot = timed.prepared.scheduler.snapshot_mut();
                if let Some(old) = snapshot.remove_pod(&node, key) {
                    timed.load.request(old.requests(), -1);
                }
                if snapshot.add_pod(info.clone()) {
                    timed.load.request(info.requests(), 1);
                }
                let event = if new {
                    ClusterEvent::ASSIGNED_POD_ADD
                } else {
                    ClusterEvent::new(EventResource::AssignedPod, ActionType::UPDATE)
                };
                timed.queue.move_all_to_active_or_backoff(event);
            }
        }
    }

    /// A pod leaves (finished, deleted): its node frees what it requested.
    fn remove_pod(&mut self, key: &str) {
        let Some(entry) = self.cluster.remove_pod(key) else {
            return;
        };
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        timed
            .prepared
            .scheduler
            .nominated_pods_mut()
            .remove(entry.pod.metadata.uid.as_deref().unwrap_or(""));
        match entry.node() {
            None => timed.queue.delete(key),
            Some(node) => {
                let removed = timed
                    .prepared
                    .scheduler
                    .snapshot_mut()
                    .remove_pod(node, key);
                if let Some(old) = removed {
                    timed.load.request(old.requests(), -1);
                }
                timed
                    .queue
                    .move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
            }
        }
    }

    fn evict(&mut self, key: &str, node: &str, reason: Eviction) -> Result<(), ReplayError<E>> {
        if self.cluster.pod(key).is_none() {
            return Ok(());
        }
        self.stats.evicted += 1;
        self.remove_pod(key);
        self.emit(Record::Evicted {
            time: secs(self.now),
            pod: key.to_string(),
            node: node.to_string(),
            reason,
        })
    }

    /// The cluster's nodes or the objects plugins read changed: the timed mode's
    /// snapshot is built again before the scheduler next runs (once however many
    /// changed at that instant).
    fn mark_dirty(&mut self) {
        if let Some(timed) = self.timed.as_mut() {
            timed.dirty = true;
        }
    }

    /// Builds the timed mode's snapshot again from the cluster's nodes and bound pods,
    /// keeping the pod infos it had.
    fn rebuild_if_dirty(&mut self) {
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        if !timed.dirty {
            if timed.names_stale {
                timed.names_stale = false;
                timed.names = Arc::new(NodeNames::new(timed.prepared.node_order()));
            }
            return;
        }
        timed.dirty = false;
        timed.names_stale = false;
        let old = timed.prepared.scheduler.snapshot();
        let mut had: HashMap<&str, &Arc<PodInfo>> = HashMap::new();
        for p in old.nodes().iter().flat_map(|n| n.pods()) {
            had.insert(p.key(), p);
        }
        let pods: Vec<Arc<PodInfo>> = self
            .cluster
            .pods()
            .filter(|e| e.node().is_some())
            .filter_map(|e| match had.get(pod_key(&e.pod).as_str()) {
                Some(info) => Some(Arc::clone(info)),
                None => PodInfo::new(e.pod.clone()).ok().map(Arc::new),
            })
            .collect();
        let storage = old.storage().cloned();
        let Ok((mut snapshot, _)) = Snapshot::new(self.cluster.nodes().cloned(), pods) else {
            return;
        };
        let scenario = Scenario {
            objects: self.cluster.objects.clone(),
            ..Scenario::default()
        };
        if let Ok(objects) = kubesched_sim::simulate::cluster_objects(&scenario) {
            snapshot.set_objects(Arc::new(objects));
        }
        snapshot.set_storage(storage);
        timed.load = load(&snapshot);
        *timed.prepared.scheduler.snapshot_mut() = snapshot;
        timed.names = Arc::new(NodeNames::new(timed.prepared.node_order()));
    }

    fn queue_events(&mut self, events: &[ClusterEvent]) {
        if let Some(timed) = self.timed.as_mut() {
            for e in events {
                timed.queue.move_all_to_active_or_backoff(*e);
            }
        }
    }

    fn snapshot_load(&self) -> crate::summary::Load {
        match &self.timed {
            Some(t) => t.load.clone(),
            None => crate::summary::Load::default(),
        }
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
