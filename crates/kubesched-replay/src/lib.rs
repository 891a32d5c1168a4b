//! # kubesched-replay
//!
//! A cluster's life, not one instant: [`replay`] runs a timed trace of events (nodes
//! and pods applied and deleted, pods finishing, nodes cordoned and drained) over a
//! scenario in simulated time, through kube-scheduler's queue and the profiles'
//! plugins, deterministically and as fast as the scheduler decides. Each attempt is
//! handed to a sink as it happens; the answer is a [`Summary`] (pods scheduled and
//! pending, how long they waited, how full the cluster got).
//!
//! - [`trace`]: the trace format (JSON Lines, versioned) and its reader;
//! - [`engine`]: the replay, timed or settled ([`Mode`]), gangs included (Permit
//!   waits on the replay's clock, PodGroup cycles, gang objects from the trace);
//! - [`summary`]: the figures;
//! - [`import`]: public traces turned into this format (`openb`).
//!
//! It stands on `kubesched-sim` (the scenario loader and the simulation's attempt) and
//! `kubesched-framework` (the scheduler and its queue); `kubesched replay` is its
//! command.
//!
//! ```
//! use kubesched_replay::{ReplayOptions, TraceReader, replay};
//! use kubesched_sim::scenario::{self, Source};
//!
//! let cluster = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}\n";
//! let trace = r#"{"kubeschedTrace": 1}
//! {"time": 5, "apply": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "job"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}, "duration": 60}
//! {"time": 10, "apply": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "next"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}}
//! "#;
//! let scenario = scenario::load(&[Source { name: "cluster.yaml".into(), text: cluster.into() }]).unwrap();
//! let mut placed = Vec::new();
//! let summary = replay(
//!     &scenario,
//!     TraceReader::new("trace.jsonl", trace.as_bytes()),
//!     &ReplayOptions::default(),
//!     &kubesched_plugins::in_tree_registry(),
//!     |record| {
//!         if let kubesched_replay::Record::Attempt { time, attempt } = record {
//!             if let kubesched_sim::PodOutcome::Scheduled(node) = &attempt.outcome {
//!                 placed.push((time, attempt.pod.clone(), node.clone()));
//!             }
//!         }
//!         Ok::<(), std::convert::Infallible>(())
//!     },
//! )
//! .unwrap();
//! // `next` waits for `job` to finish at 65 s (its node event retries it at once).
//! assert_eq!(placed, [(5.0, "default/job".into(), "n1".into()), (65.0, "default/next".into(), "n1".into())]);
//! assert_eq!(summary.scheduled, 2);
//! ```

pub mod engine;
pub mod import;
mod state;
pub mod summary;
pub mod trace;

pub use engine::{Eviction, Mode, Record, ReplayError, ReplayOptions, check, replay};
pub use state::{DURATION_ANNOTATION, parse_duration};
pub use summary::{
    Allocation, Load, NodeLoad, Occupancy, Percentiles, Summary, Timeline, TimelinePoint,
};
pub use trace::{Action, ObjectRef, TRACE_VERSION, TraceError, TraceEvent, TraceReader};
