//! Objects that change while a scheduler runs, for plugins that read them outside a
//! cycle (a gang plugin's PreEnqueue counting a group's pods, its Permit finding the
//! group): kube-scheduler's informer listers, reduced to one value a running scheduler
//! replaces as its watches see changes.
//!
//! A simulation gives its plugins the cluster once, in
//! [`Handle::objects`](crate::Handle::objects); a running scheduler sets
//! [`Handle::live_objects`](crate::Handle::live_objects) too, and replaces its
//! contents on every change. A plugin keeps what it derived from them with the
//! [`LiveObjects::generation`] it derived it at, and derives it again when that moves:
//! a [`LiveCursor`] keeps that generation for it.

use std::sync::{Arc, Mutex, RwLock};

use crate::registry::Handle;
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

/// A plugin's place in its handle's [`LiveObjects`]: the generation it last derived its
/// state at. [`LiveCursor::new`] gives the objects to derive from first (the live ones
/// in a running scheduler, else the simulation's [`Handle::objects`]), and
/// [`LiveCursor::changed`] the objects again each time they were replaced since.
#[derive(Debug)]
pub struct LiveCursor {
    /// The live objects and the generation seen last; `None` in a simulation.
    live: Option<(Arc<LiveObjects>, Mutex<u64>)>,
}

impl LiveCursor {
    /// A cursor over `handle`'s live objects, and the objects to derive from now: the
    /// live ones, else [`Handle::objects`], else `None` (nothing to read).
    pub fn new(handle: &Handle) -> (LiveCursor, Option<Arc<ClusterObjects>>) {
        match (&handle.live_objects, &handle.objects) {
            (Some(live), _) => {
                let (generation, objects) = live.current();
                let live = Some((live.clone(), Mutex::new(generation)));
                (LiveCursor { live }, Some(objects))
            }
            (None, objects) => (LiveCursor { live: None }, objects.clone()),
        }
    }

    /// The objects, when they were replaced since [`LiveCursor::new`] or the last call
    /// that returned them; `None` when they did not move (always, in a simulation).
    /// A caller that derives state from them calls this under its state's lock, so
    /// that no other caller reads the state between the two.
    pub fn changed(&self) -> Option<Arc<ClusterObjects>> {
        let (live, seen) = self.live.as_ref()?;
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        if live.generation() == *seen {
            return None;
        }
        let (generation, objects) = live.current();
        *seen = generation;
        Some(objects)
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

    #[test]
    fn a_cursor_gives_the_objects_again_once_per_replacement() {
        let live = Arc::new(LiveObjects::default());
        let handle = Handle {
            live_objects: Some(live.clone()),
            ..Handle::default()
        };
        let (cursor, first) = LiveCursor::new(&handle);
        assert!(first.is_some());
        assert!(cursor.changed().is_none(), "nothing moved yet");
        let objects = Arc::new(ClusterObjects::default());
        live.replace(objects.clone());
        live.replace(objects.clone());
        let now = cursor.changed().expect("replaced");
        assert!(Arc::ptr_eq(&now, &objects));
        assert!(cursor.changed().is_none(), "once per replacement");
    }

    #[test]
    fn in_a_simulation_the_cursor_gives_the_handles_objects_once() {
        let objects = Arc::new(ClusterObjects::default());
        let handle = Handle {
            objects: Some(objects.clone()),
            ..Handle::default()
        };
        let (cursor, first) = LiveCursor::new(&handle);
        assert!(first.is_some_and(|f| Arc::ptr_eq(&f, &objects)));
        assert!(cursor.changed().is_none());
        let (_, none) = LiveCursor::new(&Handle::default());
        assert!(none.is_none());
    }
}
