//! The settled mode: after each instant's events, passes of `simulate` over the
//! cluster as it stands until one places nothing, each checkable against
//! kube-scheduler's own code.

use std::io::BufRead;
use std::iter::Peekable;
use std::sync::Arc;

use kubesched_framework::{PodInfo, Snapshot};
use kubesched_sim::simulate::{PodOutcome, prepare};

use super::{Engine, Eviction, Record, ReplayError, load, next_time, secs};
use crate::trace::TraceReader;

impl<'r, E, F: FnMut(Record) -> Result<(), E>> Engine<'r, F> {
    pub(super) fn run_settled(
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
    pub(super) fn cluster_snapshot(&self) -> Option<Snapshot> {
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
    pub(super) fn cluster_load(&self) -> crate::summary::Load {
        self.cluster_snapshot()
            .map_or_else(crate::summary::Load::default, |s| load(&s))
    }

    /// Passes of `simulate` over the cluster as it stands until one places nothing.
    pub(super) fn settle(&mut self) -> Result<(), ReplayError<E>> {
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
}
