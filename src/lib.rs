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
//! | `kube` (`kubesched-kube`, feature `runtime`) | the runtime: a real second scheduler against an API server |
//! | `cli` (`kubesched-cli`, feature `cli`) | the whole `kubesched` command, for a main of your own with your plugins |
//!
//! ## Features
//!
//! Both are on by default; a library user turns off what it does not use:
//!
//! - `cli`: `kubesched::cli::Command`, the `kubesched` command (`simulate`, `capacity`,
//!   `rollout`, `bench`, and `run` with `runtime`) with your plugins added, in a
//!   ten-line main. Adds clap.
//! - `runtime`: `kubesched::kube`, `kubesched run` and `--from-cluster`. Adds tokio,
//!   kube, rustls, hyper and axum, most of a cold build.
//!
//! With `default-features = false` the framework, plugins and simulator build without
//! either; `features = ["cli"]` gives the command for simulating files.
//!
//! `examples/custom_plugin.rs` shows a Filter and a Score plugin of your own, enabled in a
//! second profile next to the default scheduler.

#[cfg(feature = "cli")]
pub use kubesched_cli as cli;
pub use kubesched_config as config;
pub use kubesched_framework as framework;
#[cfg(feature = "runtime")]
pub use kubesched_kube as kube;
pub use kubesched_plugins as plugins;
pub use kubesched_sim as sim;
