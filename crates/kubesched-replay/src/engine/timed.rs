//! The timed mode: kube-scheduler's scheduling queue on a clock the replay moves (the
//! framework's [`SchedulingQueue`] over a [`FakeClock`]), and the timed mode's
//! snapshot, kept in step with each change or built again when the cluster's nodes or
//! objects changed.

use std::collections::HashMap;
use std::io::BufRead;
use std::iter::Peekable;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::queue::{FakeClock, QueueOptions, QueuedPod, SchedulingQueue};
use kubesched_framework::{
    ClusterEvent, EventObject, EventObjects, Framework, LiveObjects, Outcome, PodInfo,
    QueueingHints, Snapshot,
};
use kubesched_sim::attempt::{Attempt, NodeNames};
use kubesched_sim::pod_groups::group_key;
use kubesched_sim::scenario::Scenario;
use kubesched_sim::simulate::{PodOutcome, Prepared, SimulationError};

use super::waits::Waiter;
use super::{Engine, Eviction, Record, ReplayError, load, next_time, secs};
use crate::state::pod_key;
use crate::summary::Stats;
use crate::trace::TraceReader;

pub(super) struct Timed {
    pub(super) prepared: Prepared,
    /// The cluster's nodes or objects changed since the snapshot was built.
    pub(super) dirty: bool,
    /// Nodes were added or removed in the snapshot in place while an attempt still
    /// held `names`: they are listed again once, before the next attempt.
    pub(super) names_stale: bool,
    /// What the snapshot's nodes offer and their pods request, kept in step with each
    /// binding, removal and node change (so a sample costs no pass over the nodes).
    pub(super) load: crate::summary::Load,
    /// The snapshot's node names, kept in step with each node added and removed.
    pub(super) names: Arc<NodeNames>,
    pub(super) queue: SchedulingQueue,
    pub(super) clock: Arc<FakeClock>,
    start: Instant,
    /// The configuration, to build the profiles over the replay's clock and live
    /// objects ([`Engine::build_profiles_once`]).
    pub(super) config: KubeSchedulerConfiguration,
    /// The first profile, whose QueueSort orders the queue (built again with the rest,
    /// once).
    pub(super) queue_sort: Arc<RwLock<Arc<Framework>>>,
    /// The pods waiting at Permit, by uid (see the `waits` module).
    pub(super) waiting: HashMap<String, Waiter>,
    /// Pods decided at Permit outside an attempt (a waiting pod deleted, and the
    /// siblings its Unreserve rejected): their lines go out before the next attempt.
    pub(super) decided_later: Vec<(Arc<PodInfo>, Outcome)>,
    /// The objects or pods the gang plugins read changed: they are handed the
    /// cluster as it stands before the next attempt (see the `waits` module).
    pub(super) gang_objects_stale: bool,
    /// The profiles were built over the replay's clock and live objects.
    pub(super) profiles_built: bool,
    /// The objects the gang plugins read, replaced as the trace changes them.
    pub(super) live: Arc<LiveObjects>,
}

impl Timed {
    /// The queue over `prepared`'s pending pods, on a clock at 0.
    pub(super) fn new<E>(
        scenario: &Scenario,
        mut prepared: Prepared,
        stats: &mut Stats,
    ) -> Result<Timed, ReplayError<E>> {
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
        // What plugins keep expires on the replay's clock, and the gang plugins follow
        // the trace's objects as they change: the profiles are built again over both
        // before the first attempt (`build_profiles_once`).
        prepared.handle.clock = Some(clock.clone());
        let live = Arc::new(LiveObjects::new(
            prepared.handle.objects.clone().unwrap_or_default(),
        ));
        prepared.handle.live_objects = Some(live.clone());
        let profiles = prepared.scheduler.profiles();
        let queue_sort = Arc::new(RwLock::new(profiles[0].clone()));
        let sort = queue_sort.clone();
        let hints = QueueingHints::from_frameworks(profiles.iter().map(|f| &**f));
        let options = QueueOptions {
            pending_adds_move_pods: prepared.handle.features.enabled("GangScheduling"),
            pop_from_backoff: prepared.handle.features.enabled("SchedulerPopFromBackoffQ"),
            ..QueueOptions::from_seconds(
                config.pod_initial_backoff_seconds,
                config.pod_max_backoff_seconds,
            )
        };
        let mut queue = SchedulingQueue::new(options, clock.clone(), move |a, b| {
            sort.read()
                .unwrap_or_else(|e| e.into_inner())
                .queue_less(a, b)
        });
        queue.set_queueing_hints(hints);
        for q in std::mem::take(&mut prepared.queue) {
            if prepared
                .scheduler
                .framework_for(q.pod_info.scheduler_name())
                .is_some()
            {
                queue.add(q.pod_info);
            } else {
                stats.not_ours += 1;
            }
        }
        let names = Arc::new(NodeNames::new(prepared.node_order()));
        Ok(Timed {
            load: load(prepared.scheduler.snapshot()),
            prepared,
            dirty: false,
            names_stale: false,
            names,
            queue,
            clock,
            start,
            config,
            queue_sort,
            waiting: HashMap::new(),
            decided_later: Vec::new(),
            gang_objects_stale: false,
            profiles_built: false,
            live,
        })
    }
}

impl<'r, E, F: FnMut(Record) -> Result<(), E>> Engine<'r, F> {
    pub(super) fn run_timed(
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
            let deadline = self.next_deadline();
            let next = [next_event, next_finish, backoff, flush, deadline]
                .into_iter()
                .flatten()
                .min()
                .filter(|t| horizon.is_none_or(|h| *t <= h));
            self.take_occupancy(next);
            let Some(next) = next else {
                break;
            };
            self.advance(next.max(self.now));
            // A wait that ends now ends before the instant's events.
            self.time_out_due()?;
            self.apply_due(events)?;
        }
        // The replay ends: what still waits at Permit times out now.
        self.time_out_all()
    }

    /// Pops and attempts every pod the queue has ready now.
    pub(super) fn schedule_ready(&mut self) -> Result<(), ReplayError<E>> {
        self.rebuild_if_dirty();
        self.build_profiles_once()?;
        self.refresh_gang_objects()?;
        self.resolve_decided()?;
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

    pub(super) fn attempt_queued(&mut self, qp: QueuedPod) -> Result<(), ReplayError<E>> {
        let timed = self.timed.as_mut().expect("timed mode");
        let pod = qp.info.pod_info.clone();
        if timed.prepared.generic_workload
            && let Some(group) = group_key(&pod)
        {
            return self.attempt_group(qp, &group);
        }
        let (attempt, waiting) = timed.prepared.attempt_waiting(&pod, &timed.names);
        // Pods its plugins asked to retry now (Coscheduling's ActivateSiblings).
        let activate = timed.prepared.scheduler.pods_to_activate();
        if !activate.is_empty() {
            timed.queue.activate(activate);
        }
        self.stats.attempts += 1;
        if waiting {
            self.park(qp, attempt);
            return self.resolve_decided();
        }
        // Pods that waited and were decided by this attempt (allowed by its Permit,
        // rejected by its PostFilter) go first, as they were attempted first.
        self.resolve_decided()?;
        self.decided(qp, attempt)
    }

    /// What an attempt decided: the queue, the cluster and the attempt's line.
    pub(super) fn decided(
        &mut self,
        qp: QueuedPod,
        attempt: Attempt,
    ) -> Result<(), ReplayError<E>> {
        let time = secs(self.now);
        let timed = self.timed.as_mut().expect("timed mode");
        let pod = qp.info.pod_info.clone();
        let key = pod.key().to_string();
        match &attempt.outcome {
            PodOutcome::Ignored => timed.queue.done(&key),
            PodOutcome::Gated(_) => timed.queue.add_gated(qp),
            PodOutcome::Scheduled(node) => {
                timed.queue.done(&key);
                timed.load.request(pod.requests(), 1);
                let objects = EventObjects::added(EventObject::Pod(pod.clone()));
                timed
                    .queue
                    .move_with_objects(ClusterEvent::ASSIGNED_POD_ADD, &objects, |_| true);
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

    /// The cluster's nodes or the objects plugins read changed: the timed mode's
    /// snapshot is built again before the scheduler next runs (once however many
    /// changed at that instant).
    pub(super) fn mark_dirty(&mut self) {
        if let Some(timed) = self.timed.as_mut() {
            timed.dirty = true;
        }
    }

    /// Builds the timed mode's snapshot again from the cluster's nodes and bound pods,
    /// keeping the pod infos it had.
    pub(super) fn rebuild_if_dirty(&mut self) {
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
        let mut pods: Vec<Arc<PodInfo>> = self
            .cluster
            .pods()
            .filter(|e| e.node().is_some())
            .filter_map(|e| match had.get(pod_key(&e.pod).as_str()) {
                Some(info) => Some(Arc::clone(info)),
                None => PodInfo::new(e.pod.clone()).ok().map(Arc::new),
            })
            .collect();
        // The pods waiting at Permit stay assumed where they are.
        if !timed.waiting.is_empty() {
            pods.extend(
                old.nodes()
                    .iter()
                    .flat_map(|n| n.pods())
                    .filter(|p| timed.waiting.contains_key(p.uid()))
                    .cloned(),
            );
        }
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

    pub(super) fn queue_events(&mut self, events: &[ClusterEvent]) {
        if let Some(timed) = self.timed.as_mut() {
            for e in events {
                timed.queue.move_all_to_active_or_backoff(*e);
            }
        }
    }

    pub(super) fn snapshot_load(&self) -> crate::summary::Load {
        match &self.timed {
            Some(t) => t.load.clone(),
            None => crate::summary::Load::default(),
        }
    }
}
