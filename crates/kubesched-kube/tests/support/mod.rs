//! Test support shared by the test binaries that run against a real control plane.

pub mod realcluster;
