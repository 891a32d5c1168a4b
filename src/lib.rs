//! # kubesched
//!
//! kube-scheduler's scheduling framework as a Rust library: the same extension points,
//! profiles from a real `KubeSchedulerConfiguration`, and the in-tree plugins with
//! kube-scheduler's arithmetic and wording, so its decisions can be embedded, extended
//! with your own plugins, simulated and explained.
//!
//! This crate re-exports the workspace's crates:
//!
//! | crate | what it is |
//! | --- | --- |
//! | [`framework`] (`kubesched-framework`) | extension-point traits, `Status`, `CycleState`, `NodeInfo`, `Snapshot`, `Framework`, `Registry`, `Scheduler` |
//! | [`config`] (`kubesched-config`) | `KubeSchedulerConfiguration`: strict parsing, defaulting, validation |
//! | [`plugins`] (`kubesched-plugins`) | the in-tree plugins and `in_tree_registry()` |
//! | [`sim`] (`kubesched-sim`) | scenario loading, simulation, capacity and rollout what-ifs |
//! | [`kube`] (`kubesched-kube`) | the runtime: a real second scheduler against an API server |
//!
//! The `kubesched` command itself is the `kubesched-cli` crate.
//!
//! `examples/custom_plugin.rs` shows a Filter and a Score plugin of your own, enabled in a
//! second profile next to the default scheduler.

pub use kubesched_config as config;
pub use kubesched_framework as framework;
pub use kubesched_kube as kube;
pub use kubesched_plugins as plugins;
pub use kubesched_sim as sim;
