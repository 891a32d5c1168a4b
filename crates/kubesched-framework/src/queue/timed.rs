//! Pods by key, ordered by an instant fixed when each enters: the backoff queue by
//! when each pod's backoff ends, the unschedulable set by when each pod last failed.
//! The queue asks both "which pods are due by now" on every pop; kube-scheduler keeps
//! a heap for the backoff queue, and an ordered index here keeps a pop from scanning
//! every waiting pod.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::QueuedPod;

/// Pods by key, with an index by instant (ties in order of entry).
#[derive(Default)]
pub(super) struct TimedPods {
    pods: HashMap<String, (QueuedPod, (Instant, u64))>,
    order: BTreeMap<(Instant, u64), String>,
    next_seq: u64,
}

impl TimedPods {
    /// Adds (or replaces) the pod under `key`, due at `at`.
    pub(super) fn insert(&mut self, key: String, pod: QueuedPod, at: Instant) {
        self.remove(&key);
        let slot = (at, self.next_seq);
        self.next_seq += 1;
        self.order.insert(slot, key.clone());
        self.pods.insert(key, (pod, slot));
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<QueuedPod> {
        let (pod, slot) = self.pods.remove(key)?;
        self.order.remove(&slot);
        Some(pod)
    }

    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut QueuedPod> {
        self.pods.get_mut(key).map(|(p, _)| p)
    }

    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.pods.contains_key(key)
    }

    pub(super) fn len(&self) -> usize {
        self.pods.len()
    }

    /// The pods, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = &QueuedPod> {
        self.pods.values().map(|(p, _)| p)
    }

    /// The pods with their instants, earliest first.
    pub(super) fn by_instant(&self) -> impl Iterator<Item = (Instant, &QueuedPod)> {
        self.order
            .iter()
            .map(|((at, _), key)| (*at, &self.pods[key].0))
    }

    /// The earliest instant; `None` when empty.
    pub(super) fn first_instant(&self) -> Option<Instant> {
        self.order.keys().next().map(|(at, _)| *at)
    }

    /// Takes out the pods whose instant `due` accepts, earliest first, stopping at the
    /// first it refuses.
    pub(super) fn take_due(&mut self, due: impl Fn(Instant) -> bool) -> Vec<QueuedPod> {
        let mut taken = Vec::new();
        while let Some((&(at, seq), _)) = self.order.first_key_value() {
            if !due(at) {
                break;
            }
            let key = self.order.remove(&(at, seq)).expect("first key");
            if let Some((pod, _)) = self.pods.remove(&key) {
                taken.push(pod);
            }
        }
        taken
    }

    /// Takes out every pod `f` accepts.
    pub(super) fn take_where(&mut self, f: impl Fn(&QueuedPod) -> bool) -> Vec<QueuedPod> {
        let keys: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, (p, _))| f(p))
            .map(|(k, _)| k.clone())
            .collect();
        keys.iter().filter_map(|k| self.remove(k)).collect()
    }
}
