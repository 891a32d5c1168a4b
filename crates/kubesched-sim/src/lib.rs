//! # kubesched-sim
//!
//! Scenario loading and the `kubesched` command-line simulator. A scenario is plain
//! Kubernetes YAML (nodes, bound and pending pods, and optionally a
//! KubeSchedulerConfiguration); [`simulate()`] runs it by the rules of the conformance
//! format and returns one [`PodResult`] per attempt, which [`output`] prints as JSON
//! Lines, a table, or a node-by-node explanation. [`simulate_each`] hands the results
//! over one at a time instead, as each pod is decided, so a large cluster's output can
//! be written without holding it all.
//!
//! ```
//! use kubesched_sim::{scenario, simulate, SimulationOptions};
//! let text = "
//! apiVersion: v1
//! kind: Node
//! metadata: {name: n1}
//! status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}
//! ---
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//! - schedulerName: default-scheduler
//!   plugins:
//!     multiPoint:
//!       enabled: [{name: PrioritySort}, {name: NodeResourcesFit}, {name: DefaultBinder}]
//!       disabled: [{name: '*'}]
//! ---
//! apiVersion: v1
//! kind: Pod
//! metadata: {name: web}
//! spec: {containers: [{name: app, image: nginx, resources: {requests: {cpu: 500m}}}]}
//! ";
//! let s = scenario::load(&[scenario::Source { name: "doc.yaml".into(), text: text.into() }]).unwrap();
//! let sim = simulate(&s, &SimulationOptions::default()).unwrap();
//! assert_eq!(sim.results[0].outcome, kubesched_sim::PodOutcome::Scheduled("n1".into()));
//! ```

pub mod attempt;
pub mod capacity;
pub mod compare;
pub mod output;
pub mod pod_groups;
pub mod rollout;
pub mod scenario;
pub mod simulate;
pub mod whatif;
pub mod workloads;

pub use attempt::{Attempt, NodeNames};
pub use simulate::{
    Decision, Detail, NodeScores, PodOutcome, PodResult, Prepared, Rejection, RunSummary,
    Simulation, SimulationError, SimulationOptions, prepare, simulate, simulate_each,
    simulate_with,
};

/// The embedded demo's cluster: the Kubernetes "multiple schedulers" lesson's nodes and
/// pods, without a configuration (default-scheduler is kube-scheduler's default
/// configuration). [`demo_scenario`] adds the lesson's my-scheduler beside it.
pub const DEMO_SCENARIO: &str = include_str!("demo.yaml");

/// The lesson's `my-scheduler-config.yaml`: the scheduler the demo runs beside
/// kube-scheduler's default one (see [`whatif::add_schedulers`]).
pub const DEMO_MY_SCHEDULER: &str = include_str!("demo-my-scheduler.yaml");

/// The name messages give [`DEMO_SCENARIO`].
pub const DEMO_NAME: &str = "<built-in demo>";

/// The name messages give [`DEMO_MY_SCHEDULER`].
pub const DEMO_MY_SCHEDULER_NAME: &str = "<built-in demo> my-scheduler-config.yaml";

/// The demo as it runs: [`DEMO_SCENARIO`] with kube-scheduler's default configuration
/// as default-scheduler and [`DEMO_MY_SCHEDULER`] beside it. Returns the scenario and
/// the lines saying where each scheduler's profile comes from.
pub fn demo_scenario() -> Result<(scenario::Scenario, Vec<String>), whatif::WhatIfError> {
    let mut loaded = scenario::load(&[demo_sources().0])?;
    let schedulers = whatif::add_schedulers(&mut loaded, &[demo_sources().1])?;
    Ok((loaded, schedulers))
}

/// The demo's two files: the cluster and the lesson's my-scheduler configuration.
pub fn demo_sources() -> (scenario::Source, scenario::Source) {
    (
        scenario::Source {
            name: DEMO_NAME.into(),
            text: DEMO_SCENARIO.into(),
        },
        scenario::Source {
            name: DEMO_MY_SCHEDULER_NAME.into(),
            text: DEMO_MY_SCHEDULER.into(),
        },
    )
}
