//! Nodes for the tests whose plugins answer by node number: `node-0`, `node-1`, ...,
//! with nothing but a name.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_framework::NodeInfo;

/// `count` nodes named `node-N`, with no labels, capacity or taints.
pub fn numbered_nodes(count: usize) -> Vec<Arc<Node>> {
    (0..count)
        .map(|i| {
            Arc::new(Node {
                metadata: ObjectMeta {
                    name: Some(format!("node-{i}")),
                    ..Default::default()
                },
                ..Default::default()
            })
        })
        .collect()
}

/// The `N` of a node named `node-N`.
pub fn number(node: &NodeInfo) -> usize {
    node.name()
        .trim_start_matches("node-")
        .parse()
        .expect("test node names are node-N")
}
