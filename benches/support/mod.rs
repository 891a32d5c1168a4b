//! The cluster shape the benchmarks share: scheduler_perf's SchedulingBasic nodes
//! (4 cpu, 32Gi, 110 pods) spread over 10 zones.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A resource list from (name, quantity) pairs.
pub fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// `node-{i}` in zone `zone-{i % 10}`, with `spec`.
pub fn basic_node(i: usize, spec: NodeSpec) -> Node {
    let labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), format!("node-{i}")),
        (
            "topology.kubernetes.io/zone".to_string(),
            format!("zone-{}", i % 10),
        ),
    ]);
    let alloc = quantities(&[("cpu", "4"), ("memory", "32Gi"), ("pods", "110")]);
    Node {
        metadata: ObjectMeta {
            name: Some(format!("node-{i}")),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(spec),
        status: Some(NodeStatus {
            allocatable: Some(alloc.clone()),
            capacity: Some(alloc),
            ..Default::default()
        }),
    }
}
