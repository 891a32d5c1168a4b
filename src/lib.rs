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
//! | [`replay`] (`kubesched-replay`) | a cluster's life in simulated time from a trace, and importers of public traces (`openb`) |
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
//! With `default-features = false` the framework, plugins, simulator and replay build without
//! either; `features = ["cli"]` gives the command for simulating files.
//!
//! ## Your plugin in the whole CLI
//!
//! A Filter plugin of your own and a main that gives it every `kubesched` subcommand
//! (`simulate`, `--explain`, `capacity`, `rollout`, `bench`, and `run` with `runtime`);
//! a configuration's profile then enables it by name:
//!
//! ```no_run
//! # #[cfg(feature = "cli")] {
//! use std::sync::Arc;
//! use kubesched::framework::*;
//!
//! struct NoSpot;
//! impl Plugin for NoSpot {
//!     fn name(&self) -> &str { "NoSpot" }
//!     extension_points!(Filter);
//! }
//! impl FilterPlugin for NoSpot {
//!     fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
//!         if node.label("spot") == Some("true") { Status::new(Code::Unschedulable, "node(s) were spot") }
//!         else { Status::success() }
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     kubesched::cli::Command::new()
//!         .with_plugin("NoSpot", |_args, _handle| Ok(Arc::new(NoSpot)))
//!         .run()
//! }
//! # }
//! ```
//!
//! `examples/out-of-tree-plugin/` in the repository is such a crate, with its
//! Cargo.toml and tests.
//!
//! ## Simulate from code
//!
//! A cluster as Kubernetes YAML (or files: `Scenario::from_files`), scheduled with the
//! in-tree plugins (add yours to the registry), each pod's node or reason read back:
//!
//! ```
//! use kubesched::sim::scenario::Scenario;
//! use kubesched::sim::{PodOutcome, SimulationOptions, simulate_with};
//!
//! let cluster = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n\
//!     status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n---\n\
//!     apiVersion: v1\nkind: Pod\nmetadata: {name: big}\n\
//!     spec: {containers: [{name: c, resources: {requests: {cpu: '3'}}}]}\n";
//! let scenario = Scenario::from_text("cluster.yaml", cluster)?;
//! let registry = kubesched::plugins::in_tree_registry();
//! let sim = simulate_with(&scenario, &SimulationOptions::default(), &registry)?;
//! assert!(matches!(sim.results[0].outcome, PodOutcome::Unschedulable(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A scheduler whose nodes and jobs come from its own structs rather than YAML builds
//! them with [`framework::build`] and drives [`framework::Scheduler`] itself
//! (`examples/embed_batch.rs`). `examples/custom_plugin.rs` shows a Filter and a Score
//! plugin of your own, enabled in a second profile next to the default scheduler.
//!
//! What is public API and how it is checked: `docs/api-stability.md` in the repository.

#[cfg(feature = "cli")]
pub use kubesched_cli as cli;
pub use kubesched_config as config;
pub use kubesched_framework as framework;
#[cfg(feature = "runtime")]
pub use kubesched_kube as kube;
pub use kubesched_plugins as plugins;
pub use kubesched_replay as replay;
pub use kubesched_sim as sim;
