//! [`CycleState`]: typed per-cycle data that PreFilter and PreScore write and Filter and
//! Score read.
//!
//! Entries are keyed by their Rust type, so a plugin stores its own newtype and no other
//! plugin can clash with it. Writes take `&mut CycleState` (the sequential phases); the
//! parallel phases get `&CycleState`, which gives kube-scheduler's "write once, read
//! many" rule from the borrow checker.

use std::any::{Any, TypeId};
use std::collections::BTreeSet;
use std::fmt;

/// A value that can live in a [`CycleState`]: any `Clone + Send + Sync + 'static` type.
pub trait StateData: Any + Send + Sync {
    /// Clones the value into a new box (kube-scheduler's `StateData.Clone`).
    fn clone_box(&self) -> Box<dyn StateData>;
    /// The value as `Any`, for downcasting.
    fn as_any(&self) -> &dyn Any;
    /// The value as mutable `Any`, for downcasting.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync> StateData for T {
    fn clone_box(&self) -> Box<dyn StateData> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The pods a plugin asks to move back to the active queue after this cycle, by
/// `namespace/name` (kube-scheduler's `PodsToActivate`, under `PodsToActivateKey`):
/// Coscheduling's Permit asks it for a gang's siblings. A running scheduler hands
/// them to [`SchedulingQueue::activate`](crate::queue::SchedulingQueue::activate)
/// after the cycle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodsToActivate {
    /// The pods' keys.
    pub keys: BTreeSet<String>,
}

impl PodsToActivate {
    /// Adds `key` to the pods `state` asks to activate.
    pub fn add(state: &mut CycleState, key: impl Into<String>) {
        if state.read::<PodsToActivate>().is_none() {
            state.write(PodsToActivate::default());
        }
        if let Some(p) = state.read_mut::<PodsToActivate>() {
            p.keys.insert(key.into());
        }
    }
}

/// The state of one scheduling cycle.
///
/// ```
/// use kubesched_framework::CycleState;
/// #[derive(Clone)]
/// struct Requested(i64);
/// let mut state = CycleState::new();
/// state.write(Requested(500));
/// assert_eq!(state.read::<Requested>().map(|r| r.0), Some(500));
/// ```
#[derive(Default)]
pub struct CycleState {
    // A handful of entries, read for every node by several plugins: a linear scan of
    // TypeIds beats hashing them.
    data: Vec<(TypeId, Box<dyn StateData>)>,
    skip_filter_plugins: BTreeSet<String>,
    /// `skip_filter_plugins` resolved against the profile's Filter list, one flag per
    /// Filter plugin, so the per-node loop compares no names.
    skip_filter_mask: Vec<bool>,
    skip_score_plugins: BTreeSet<String>,
    skip_pre_bind_plugins: BTreeSet<String>,
    explain: bool,
}

impl CycleState {
    /// An empty state.
    pub fn new() -> CycleState {
        CycleState::default()
    }

    /// Stores a value, replacing any earlier value of the same type.
    pub fn write<T: StateData>(&mut self, value: T) {
        let id = TypeId::of::<T>();
        match self.data.iter_mut().find(|(k, _)| *k == id) {
            Some((_, v)) => *v = Box::new(value),
            None => self.data.push((id, Box::new(value))),
        }
    }

    /// Reads the value of type `T`, if one was written.
    pub fn read<T: StateData>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.data
            .iter()
            .find(|(k, _)| *k == id)
            .and_then(|(_, b)| (**b).as_any().downcast_ref::<T>())
    }

    /// Mutable access to the value of type `T` (for the PreFilter AddPod/RemovePod
    /// extensions, which update what PreFilter computed).
    pub fn read_mut<T: StateData>(&mut self) -> Option<&mut T> {
        let id = TypeId::of::<T>();
        self.data
            .iter_mut()
            .find(|(k, _)| *k == id)
            .and_then(|(_, b)| (**b).as_any_mut().downcast_mut::<T>())
    }

    /// Removes and returns nothing; the value of type `T` is gone afterwards.
    pub fn delete<T: StateData>(&mut self) {
        let id = TypeId::of::<T>();
        self.data.retain(|(k, _)| *k != id);
    }

    /// Whether this cycle is explained to a person (`kubesched simulate --explain`):
    /// plugins then add [`Status::notes`](crate::Status::notes) to their rejections.
    pub fn explain(&self) -> bool {
        self.explain
    }

    /// Asks the plugins for notes on their rejections this cycle (see
    /// [`CycleState::explain`]).
    pub fn set_explain(&mut self, explain: bool) {
        self.explain = explain;
    }

    /// Plugins whose PreFilter returned Skip: their Filter is not run this cycle.
    pub fn skip_filter_plugins(&self) -> &BTreeSet<String> {
        &self.skip_filter_plugins
    }

    /// Plugins whose PreScore returned Skip: their Score is not run this cycle.
    pub fn skip_score_plugins(&self) -> &BTreeSet<String> {
        &self.skip_score_plugins
    }

    pub(crate) fn set_skip_filter_plugins(&mut self, names: BTreeSet<String>, mask: Vec<bool>) {
        self.skip_filter_plugins = names;
        self.skip_filter_mask = mask;
    }

    /// `true` when the Filter plugin at `position` in the profile's Filter list is
    /// skipped this cycle.
    pub(crate) fn skips_filter(&self, position: usize) -> bool {
        self.skip_filter_mask
            .get(position)
            .copied()
            .unwrap_or(false)
    }

    pub(crate) fn set_skip_score_plugins(&mut self, names: BTreeSet<String>) {
        self.skip_score_plugins = names;
    }

    /// Plugins whose PreBindPreFlight returned Skip: their PreBind is not run this
    /// cycle (see [`Framework::run_pre_bind_pre_flights`](crate::Framework::run_pre_bind_pre_flights)).
    pub fn skip_pre_bind_plugins(&self) -> &BTreeSet<String> {
        &self.skip_pre_bind_plugins
    }

    pub(crate) fn set_skip_pre_bind_plugins(&mut self, names: BTreeSet<String>) {
        self.skip_pre_bind_plugins = names;
    }
}

impl Clone for CycleState {
    fn clone(&self) -> Self {
        CycleState {
            data: self
                .data
                .iter()
                .map(|(k, v)| (*k, (**v).clone_box()))
                .collect(),
            skip_filter_plugins: self.skip_filter_plugins.clone(),
            skip_filter_mask: self.skip_filter_mask.clone(),
            skip_score_plugins: self.skip_score_plugins.clone(),
            skip_pre_bind_plugins: self.skip_pre_bind_plugins.clone(),
            explain: self.explain,
        }
    }
}

impl fmt::Debug for CycleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CycleState")
            .field("entries", &self.data.len())
            .field("skip_filter_plugins", &self.skip_filter_plugins)
            .field("skip_score_plugins", &self.skip_score_plugins)
            .field("skip_pre_bind_plugins", &self.skip_pre_bind_plugins)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct A(u32);
    #[derive(Clone, Debug, PartialEq)]
    struct B(&'static str);

    #[test]
    fn values_are_keyed_by_type() {
        let mut s = CycleState::new();
        s.write(A(1));
        s.write(B("x"));
        s.write(A(2));
        assert_eq!(s.read::<A>(), Some(&A(2)));
        assert_eq!(s.read::<B>(), Some(&B("x")));
        s.delete::<A>();
        assert_eq!(s.read::<A>(), None);
    }

    #[test]
    fn clone_is_deep() {
        let mut s = CycleState::new();
        s.write(A(1));
        let mut c = s.clone();
        c.read_mut::<A>().unwrap().0 = 7;
        assert_eq!(s.read::<A>(), Some(&A(1)));
        assert_eq!(c.read::<A>(), Some(&A(7)));
    }
}
