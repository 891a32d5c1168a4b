//! Pods held at Permit in a running scheduler: kube-scheduler's waiting pods map and
//! its `WaitOnPermit`.
//!
//! The map itself is the framework's ([`kubesched_framework::WaitingPods`]), the one
//! every profile's plugins see through their `Handle`: a plugin that allows or rejects a
//! pod there (GangScheduling's and Coscheduling's Permit allowing a group, their
//! Unreserve rejecting its siblings) decides the pod here too. What this adds is the
//! waiting: the binding task of a pod that Permit asked to wait holds a receiver, and
//! [`WaitingPods::deliver`] hands it its decision once one is made, wherever it was
//! made; a plugin's wait running out is checked by the task itself at that plugin's
//! deadline ([`WaitingPods::time_out_if_due`]), as a timer of kube-scheduler's would.
//! Deadlines are counted in nanoseconds since the runtime started.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubesched_framework::{PodInfo, Status};
use tokio::sync::oneshot;

use super::lock;

/// Pods waiting at Permit: plugins decide them in the framework's map; a plugin of
/// yours that holds no `Handle`, or an embedder, allows or rejects them here by UID.
pub struct WaitingPods {
    map: Arc<kubesched_framework::WaitingPods>,
    /// The binding tasks waiting for a decision, by pod UID.
    receivers: Mutex<HashMap<String, oneshot::Sender<Status>>>,
    origin: Instant,
}

impl std::fmt::Debug for WaitingPods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitingPods")
            .field("waiting", &self.map.len())
            .finish()
    }
}

impl Default for WaitingPods {
    /// Over a map of its own (a runtime's is the one its plugins share).
    fn default() -> WaitingPods {
        WaitingPods::new(Arc::default())
    }
}

impl WaitingPods {
    /// Waits over `map`, the map the profiles' plugins share.
    pub(super) fn new(map: Arc<kubesched_framework::WaitingPods>) -> WaitingPods {
        WaitingPods {
            map,
            receivers: Mutex::default(),
            origin: Instant::now(),
        }
    }

    /// Lets a waiting pod go on to binding, as if every plugin it waits for allowed
    /// it. `false` when no such pod waits undecided.
    pub fn allow(&self, uid: &str) -> bool {
        let allowed = self
            .map
            .get(uid, |w| {
                if w.decision().is_some() {
                    return false;
                }
                for plugin in w.pending_plugins() {
                    w.allow(&plugin);
                }
                w.decision().is_some_and(Status::is_success)
            })
            .unwrap_or(false);
        self.deliver();
        allowed
    }

    /// Rejects a waiting pod with a message (its status names no plugin). `false` when
    /// no such pod waits undecided.
    pub fn reject(&self, uid: &str, message: &str) -> bool {
        self.reject_by(uid, "", message)
    }

    /// Rejects a waiting pod as `plugin` does (preemption rejects its victims so).
    pub(super) fn reject_by(&self, uid: &str, plugin: &str, message: &str) -> bool {
        let rejected = self
            .map
            .get(uid, |w| {
                let undecided = w.decision().is_none();
                w.reject(plugin, message);
                undecided
            })
            .unwrap_or(false);
        self.deliver();
        rejected
    }

    /// The UIDs of the waiting pods, in the order they started waiting.
    pub fn uids(&self) -> Vec<String> {
        let mut uids = Vec::new();
        self.map.iterate(|w| uids.push(w.pod().uid().to_string()));
        uids
    }

    /// How many pods wait.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// `true` when no pod waits.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Now, in the deadlines' nanoseconds.
    pub(super) fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Puts `pod`, assumed on `node`, in the map, waiting for each plugin of `waits`;
    /// the receiver gets its decision. Registered before the pod enters the map, so no
    /// decision can be taken out before someone waits for it.
    pub(super) fn park(
        &self,
        pod: Arc<PodInfo>,
        node: &str,
        waits: BTreeMap<String, Duration>,
    ) -> oneshot::Receiver<Status> {
        let (tx, rx) = oneshot::channel();
        lock(&self.receivers).insert(pod.uid().to_string(), tx);
        self.map.add(pod, node, waits, self.now());
        rx
    }

    /// Hands every decided pod its decision and takes it out of the map
    /// (kube-scheduler's `WaitOnPermit` removing the pod once its channel answers).
    /// Called after every scheduling cycle, every Unreserve and every decision made
    /// here.
    pub(super) fn deliver(&self) {
        while let Some((pod, _, status)) = self.map.take_decided() {
            if let Some(tx) = lock(&self.receivers).remove(pod.uid()) {
                let _ = tx.send(status);
            }
        }
    }

    /// How long until the wait of the pod with this uid runs out, if it still waits
    /// undecided.
    pub(super) fn time_left(&self, uid: &str) -> Option<Duration> {
        let at = self.map.deadline_of(uid)?;
        Some(Duration::from_nanos(at.saturating_sub(self.now())))
    }

    /// Rejects the pod with kube-scheduler's timeout message if a wait it is still
    /// under has run out, and delivers what was decided.
    pub(super) fn time_out_if_due(&self, uid: &str) {
        self.map.time_out_if_due(uid, self.now());
        self.deliver();
    }
}
