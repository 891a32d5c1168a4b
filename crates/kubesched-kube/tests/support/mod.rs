//! Test support shared by the test binaries that run against a real control plane.

pub mod objects;
pub mod realcluster;
