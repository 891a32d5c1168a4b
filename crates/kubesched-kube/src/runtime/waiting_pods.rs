//! Pods held at Permit until a plugin or an embedder allows or rejects them (as
//! kube-scheduler's waiting pods map).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

use super::lock;

/// Pods waiting at Permit: a plugin (or an embedder) allows or rejects them by UID.
#[derive(Default)]
pub struct WaitingPods {
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<(), String>>>>,
}

impl std::fmt::Debug for WaitingPods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WaitingPods")
    }
}

impl WaitingPods {
    /// Lets a waiting pod go on to binding. `false` when no such pod waits.
    pub fn allow(&self, uid: &str) -> bool {
        self.take(uid).is_some_and(|tx| tx.send(Ok(())).is_ok())
    }

    /// Rejects a waiting pod with a message.
    pub fn reject(&self, uid: &str, message: &str) -> bool {
        self.take(uid)
            .is_some_and(|tx| tx.send(Err(message.to_string())).is_ok())
    }

    /// The UIDs of the waiting pods.
    pub fn uids(&self) -> Vec<String> {
        lock(&self.waiting).keys().cloned().collect()
    }

    pub(super) fn take(&self, uid: &str) -> Option<oneshot::Sender<Result<(), String>>> {
        lock(&self.waiting).remove(uid)
    }

    pub(super) fn register(&self, uid: &str) -> oneshot::Receiver<Result<(), String>> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(uid.to_string(), tx);
        rx
    }
}
