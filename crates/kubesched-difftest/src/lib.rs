//! Differential testing of kubesched against kube-scheduler's own code (the oracles of
//! `../shared/oracle/`): a seeded scenario [generator](generate), a field-by-field
//! [comparison](compare), a [shrinker](shrink) and the [runner](run) that ties them
//! together for the `kubesched-difftest` command, and [generated traces](traces) whose
//! every settled pass of `kubesched replay --settle` is compared the same way. See
//! docs/conformance.md.

pub mod compare;
pub mod generate;
pub mod rng;
pub mod run;
pub mod shrink;
pub mod traces;
