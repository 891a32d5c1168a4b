//! The scoring half shared by NodeResourcesFit and NodeResourcesBalancedAllocation:
//! for each configured resource, the node's allocatable and what would be requested
//! with the pod on it (kube-scheduler's `resourceAllocationScorer`).

use kubesched_config::args::ResourceSpec;
use kubesched_framework::quantity::Quantity;
use kubesched_framework::resource::{
    DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, PodRequestOptions, ResourceList,
    is_scalar_resource_name, pod_requests,
};
use kubesched_framework::{NodeInfo, PodInfo, Status};

/// Which requests a scorer counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requests {
    /// Actual requests (BalancedAllocation).
    Actual,
    /// Requests with 100m cpu / 200Mi memory for containers that miss them
    /// (NodeResourcesFit's strategies).
    NonZero,
}

/// The pod's request of each configured resource, in the configured order: cpu in
/// milli units, everything else in units.
pub fn pod_resource_requests(
    pod: &PodInfo,
    resources: &[ResourceSpec],
    requests: Requests,
) -> Result<Vec<i64>, Status> {
    let opts = PodRequestOptions {
        non_missing_container_requests: (requests == Requests::NonZero).then(|| {
            ResourceList::from([
                (
                    "cpu".to_string(),
                    Quantity::from_milli(i128::from(DEFAULT_MILLI_CPU_REQUEST)),
                ),
                (
                    "memory".to_string(),
                    Quantity::from_value(DEFAULT_MEMORY_REQUEST),
                ),
            ])
        }),
        ..Default::default()
    };
    let list = pod_requests(pod.pod(), &opts).map_err(|e| Status::error(e.to_string()))?;
    Ok(resources
        .iter()
        .map(|r| match list.get(&r.name) {
            None => 0,
            Some(q) if r.name == "cpu" => q.milli_value(),
            Some(q) => q.value(),
        })
        .collect())
}

/// A configured resource, classified once when the plugin is built so the per-node
/// loop matches on an enum instead of comparing and validating names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    /// `cpu`, in milli units.
    Cpu,
    /// `memory`.
    Memory,
    /// `ephemeral-storage`.
    EphemeralStorage,
    /// Any other resource; `scalar` when kube-scheduler treats it as a scalar resource
    /// (extended, hugepages, attachable volumes).
    Other {
        /// The resource name.
        name: String,
        /// `IsScalarResourceName`.
        scalar: bool,
    },
}

impl ResourceKind {
    /// Classifies a resource name.
    pub fn new(name: &str) -> ResourceKind {
        match name {
            "cpu" => ResourceKind::Cpu,
            "memory" => ResourceKind::Memory,
            "ephemeral-storage" => ResourceKind::EphemeralStorage,
            _ => ResourceKind::Other {
                name: name.to_string(),
                scalar: is_scalar_resource_name(name),
            },
        }
    }

    /// The kinds of configured resources, in order.
    pub fn of(resources: &[ResourceSpec]) -> Vec<ResourceKind> {
        resources
            .iter()
            .map(|r| ResourceKind::new(&r.name))
            .collect()
    }
}

/// The node's (allocatable, requested including the pod) for one resource; (0, 0) means
/// "do not score this resource" (an extended resource the pod does not ask for, or
/// one the node does not have).
pub fn allocatable_and_requested(
    node: &NodeInfo,
    resource: &ResourceKind,
    pod_request: i64,
    requests: Requests,
) -> (i64, i64) {
    let requested = match requests {
        Requests::Actual => node.requested(),
        Requests::NonZero => node.non_zero_requested(),
    };
    let alloc = node.allocatable();
    match resource {
        ResourceKind::Cpu => (alloc.milli_cpu, requested.milli_cpu + pod_request),
        ResourceKind::Memory => (alloc.memory, requested.memory + pod_request),
        ResourceKind::EphemeralStorage => (
            alloc.ephemeral_storage,
            node.requested().ephemeral_storage + pod_request,
        ),
        ResourceKind::Other { scalar: true, .. } if pod_request == 0 => (0, 0),
        ResourceKind::Other { name, .. } => match alloc.scalar_resources.get(name) {
            Some(&a) => (a, node.requested().scalar(name) + pod_request),
            None => (0, 0),
        },
    }
}
