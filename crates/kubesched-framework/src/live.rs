//! Objects that change while a scheduler runs, for plugins that read them outside a
//! cycle (a gang plugin's PreEnqueue counting a group's pods, its Permit finding the
//! group): kube-scheduler's informer listers, reduced to one value a running scheduler
//! replaces as its watches see changes.
//!
//! A simulation gives its plugins the cluster once, in
//! [`Handle::objects`](crate::Handle::objects); a running scheduler sets
//! [`Handle::live_objects`](crate::Handle::live_objects) too, and replaces its
//! contents on every change. A plugin keeps what it derived from them with the
//! [`LiveObjects::generation`] it derived it at, and derives it again when that moves.

use std::sync::{Arc, RwLock};

use crate::snapshot::ClusterObjects;

/// The objects as a running scheduler last saw them, with a generation that moves on
/// every replacement.
#[derive(Debug, Default)]
pub struct LiveObjects {
    state: RwLock<(u64, Arc<ClusterObjects>)>,
}

impl LiveObjects {
    /// Starts at generation 0 with `objects`.
    pub fn new(objects: Arc<ClusterObjects>) -> LiveObjects {
        LiveObjects {
            state: RwLock::new((0, objects)),
        }
    }

    /// The objects now, and their generation.
    pub fn current(&self) -> (u64, Arc<ClusterObjects>) {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        (state.0, state.1.clone())
    }

    /// The generation now: it moves each time the objects are replaced.
    pub fn generation(&self) -> u64 {
        self.state.read().unwrap_or_else(|e| e.into_inner()).0
    }

    /// Replaces the objects, moving the generation on.
    pub fn replace(&self, objects: Arc<ClusterObjects>) {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        state.0 += 1;
        state.1 = objects;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_replacement_moves_the_generation() {
        let live = LiveObjects::default();
        assert_eq!(live.generation(), 0);
        let objects = Arc::new(ClusterObjects {
            custom: Vec::new(),
            ..ClusterObjects::default()
        });
        live.replace(objects.clone());
        live.replace(objects.clone());
        let (generation, now) = live.current();
        assert_eq!(generation, 2);
        assert!(Arc::ptr_eq(&now, &objects));
    }
}
