//! # kubesched-plugins-sigs
//!
//! Plugins of kubernetes-sigs/scheduler-plugins for kubesched, with their behaviour and
//! their messages word for word. They are not kube-scheduler's in-tree plugins, so they
//! stay out of `kubesched_plugins::in_tree_registry()`: a profile names them once
//! [`registry`] is added beside it (`kubesched simulate --plugins sigs`, or
//! `Command::with_registry(kubesched_plugins_sigs::registry())`).
//!
//! | plugin | extension points |
//! | --- | --- |
//! | [`CapacityScheduling`] | PreFilter (AddPod, RemovePod), PostFilter (preemption), Reserve (Unreserve) |
//! | [`Coscheduling`] | QueueSort, PreFilter, PostFilter, Reserve (Unreserve), Permit |
//!
//! Floor: beside `kubesched-plugins` (whose preemption evaluator CapacityScheduling
//! drives), on `kubesched-framework` and `kubesched-config`. The objects the plugins
//! read (PodGroups, ElasticQuotas) come through the framework's
//! [`Handle::objects`](kubesched_framework::Handle::objects) as custom objects; the
//! scenario loader of `kubesched-sim` decodes them strictly with the types of [`api`].
//!
//! ```
//! let mut registry = kubesched_plugins::in_tree_registry();
//! registry.merge(kubesched_plugins_sigs::registry()).unwrap();
//! assert!(registry.contains("Coscheduling") && registry.contains("PrioritySort"));
//! assert!(registry.contains("CapacityScheduling"));
//! ```

pub mod api;
pub mod capacity_scheduling;
pub mod coscheduling;

pub use capacity_scheduling::CapacityScheduling;
pub use coscheduling::{Coscheduling, CoschedulingArgs};

use kubesched_framework::Registry;

/// Every plugin of this crate, by the name a KubeSchedulerConfiguration gives it.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register(coscheduling::NAME, coscheduling::new)
        .unwrap_or_else(|_| unreachable!("one plugin per name"));
    registry
        .register(capacity_scheduling::NAME, capacity_scheduling::new)
        .unwrap_or_else(|_| unreachable!("one plugin per name"));
    registry
}

/// The names of this crate's plugins, sorted.
pub fn plugin_names() -> &'static [&'static str] {
    &[capacity_scheduling::NAME, coscheduling::NAME]
}
