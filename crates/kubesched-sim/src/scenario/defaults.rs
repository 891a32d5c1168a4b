//! The API server's v1 defaulting (`pkg/apis/core/v1/defaults.go`) of the fields the
//! scheduler reads, so that a scenario written by hand is read as the API server would
//! store it:
//!
//! * Pod: `metadata.namespace` (`default`, from the request path) and, from
//!   `SetDefaults_PodSpec`, `spec.schedulerName` (`default-scheduler`);
//! * Pod (`SetDefaults_Pod`): container and init container requests default to their
//!   limits, resource by resource; pod-level requests (`spec.resources`, PodLevelResources
//!   is on in v1.35) default from the containers' aggregate requests (cpu and memory) and
//!   then from the pod-level limits; with `hostNetwork`, every container port's
//!   `hostPort` defaults to its `containerPort` (what NodePorts reads);
//! * Node (`SetDefaults_NodeStatus`): no `status.allocatable` means allocatable =
//!   capacity.
//!
//! Defaults that do not change a scheduling decision (image pull policy, DNS policy,
//! `enableServiceLinks`, termination grace period, ...) are not applied.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kubesched_framework::resource::{PodRequestOptions, is_hugepage_resource_name, pod_requests};

/// Applies the pod defaults listed in the module doc; creates an empty `spec` when there
/// is none.
pub(super) fn default_pod(pod: &mut Pod) {
    if pod
        .metadata
        .namespace
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        pod.metadata.namespace = Some("default".to_owned());
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    if spec
        .scheduler_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        spec.scheduler_name = Some("default-scheduler".to_owned());
    }
    for container in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        requests_from_limits(container);
    }
    if spec.host_network == Some(true) {
        host_network_ports(spec);
    }
    default_pod_level_requests(pod);
}

/// `SetDefaults_Pod`: a container's missing requests default to its limits.
fn requests_from_limits(container: &mut Container) {
    let Some(resources) = container.resources.as_mut() else {
        return;
    };
    let Some(limits) = resources.limits.as_ref() else {
        return;
    };
    let requests = resources.requests.get_or_insert_with(BTreeMap::new);
    for (name, limit) in limits {
        requests
            .entry(name.clone())
            .or_insert_with(|| limit.clone());
    }
}

/// `defaultHostNetworkPorts`: with host networking, container ports are host ports.
fn host_network_ports(spec: &mut PodSpec) {
    for container in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        for port in container.ports.iter_mut().flatten() {
            if port.host_port.unwrap_or(0) == 0 {
                port.host_port = Some(port.container_port);
            }
        }
    }
}

/// Whether the PodLevelResources feature covers `name` (`IsSupportedPodLevelResource`).
fn is_pod_level_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory") || is_hugepage_resource_name(name)
}

/// `defaultPodRequests`: only when pod-level limits are set, the pod-level requests
/// missing for a resource default to the containers' aggregate request (for cpu and
/// memory, the resources that may be overcommitted), else to the pod-level limit.
fn default_pod_level_requests(pod: &mut Pod) {
    let has_limits = pod
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.limits.as_ref())
        .is_some_and(|l| !l.is_empty());
    if !has_limits {
        return;
    }
    // Quantities were checked when the pod was decoded; a failure here leaves the pod as
    // written.
    let Ok(aggregate) = pod_requests(
        pod,
        &PodRequestOptions {
            exclude_overhead: true,
            skip_pod_level_resources: true,
            non_missing_container_requests: None,
        },
    ) else {
        return;
    };
    let Some(resources) = pod.spec.as_mut().and_then(|s| s.resources.as_mut()) else {
        return;
    };
    let mut requests = resources.requests.clone().unwrap_or_default();
    for (name, quantity) in &aggregate {
        if matches!(name.as_str(), "cpu" | "memory") && !requests.contains_key(name) {
            requests.insert(name.clone(), ApiQuantity(quantity.to_string()));
        }
    }
    for (name, limit) in resources.limits.iter().flatten() {
        if is_pod_level_resource(name) && !requests.contains_key(name) {
            requests.insert(name.clone(), limit.clone());
        }
    }
    if !requests.is_empty() {
        resources.requests = Some(requests);
    }
}

/// `SetDefaults_NodeStatus`: a node whose `status.allocatable` is absent gets its
/// `status.capacity` as allocatable.
pub(super) fn default_node(node: &mut Node) {
    if let Some(status) = node.status.as_mut()
        && status.allocatable.is_none()
    {
        status.allocatable = status.capacity.clone();
    }
}
