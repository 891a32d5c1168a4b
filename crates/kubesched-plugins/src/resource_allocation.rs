//! The scoring half shared by NodeResourcesFit and NodeResourcesBalancedAllocation:
//! for each configured resource, the node's allocatable and what would be requested
//! with the pod on it (kube-scheduler's `resourceAllocationScorer`).

use kubesched_config::args::ResourceSpec;
use kubesched_framework::quantity::Quantity;
use kubesched_framework::resource::{
    DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, PodRequestOptions, ResourceList,
    is_scalar_resource_name, pod_requests,
};
use kubesched_framework::signature::SignFragment;
use kubesched_framework::{BaseResources, NodeInfo, PodInfo, Status};

/// Which requests a scorer counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requests {
    /// Actual requests (BalancedAllocation).
    Actual,
    /// Requests with 100m cpu / 200Mi memory for containers that miss them
    /// (NodeResourcesFit's strategies).
    NonZero,
}

/// Whether a scorer reads the pod-level `spec.resources` of the pod being scheduled
/// (kube-scheduler's `resourceAllocationScorer.enablePodLevelResources`).
///
/// BalancedAllocation's scorer is built with the PodLevelResources feature gate;
/// NodeResourcesFit's strategies build theirs without it (v1.35 and v1.36), so its
/// score sums the containers' requests even when `spec.resources` is set. Pods
/// already on the node count with their pod-level requests either way: the node's
/// totals come from `NodeInfo`, not from the scorer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodLevelResources {
    /// `spec.resources.requests` replaces the containers' sum where it is set.
    Honoured,
    /// The containers (and overhead) only.
    Ignored,
}

/// The pod's request of each configured resource, in the configured order: cpu in
/// milli units, everything else in units.
pub fn pod_resource_requests(
    pod: &PodInfo,
    resources: &[ResourceSpec],
    requests: Requests,
    pod_level: PodLevelResources,
) -> Result<Vec<i64>, Status> {
    if scoring_requests_are_effective(pod, resources) {
        // What the pod's PodInfo computed when it was made: no need to read its
        // containers again.
        Ok(from_effective_requests(pod, resources, requests))
    } else {
        from_scoring_requests(pod, resources, requests, pod_level)
    }
}

/// [`pod_resource_requests`] from the pod's effective requests, where
/// [`scoring_requests_are_effective`].
fn from_effective_requests(
    pod: &PodInfo,
    resources: &[ResourceSpec],
    requests: Requests,
) -> Vec<i64> {
    let effective = pod.resources();
    let non_zero = requests == Requests::NonZero;
    resources
        .iter()
        .map(|r| match r.name.as_str() {
            "cpu" if non_zero => effective.non_zero_milli_cpu,
            "cpu" => effective.requests.milli_cpu,
            "memory" if non_zero => effective.non_zero_memory,
            "memory" => effective.requests.memory,
            "ephemeral-storage" => effective.requests.ephemeral_storage,
            "pods" => effective.requests.allowed_pod_number,
            name => effective
                .requests
                .scalar_resources
                .get(name)
                .copied()
                .unwrap_or(0),
        })
        .collect()
}

/// [`pod_resource_requests`] from the pod's spec, as kube-scheduler's scorers read it.
fn from_scoring_requests(
    pod: &PodInfo,
    resources: &[ResourceSpec],
    requests: Requests,
    pod_level: PodLevelResources,
) -> Result<Vec<i64>, Status> {
    let opts = PodRequestOptions {
        skip_pod_level_resources: pod_level == PodLevelResources::Ignored,
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

/// A pod's exact signature (`Plugin::sign_pod_exact`) for a scorer that reads the
/// pod's requests through [`pod_resource_requests`]: its batching `fragments` plus the
/// requests it scores, under `key`. Two pods whose effective requests are equal (the
/// batching signature) may still be scored apart, one with pod-level requests and one
/// with the same requests on its containers, say, or one with a request on a sidecar
/// and one on its main container (the non-zero defaults differ).
pub fn with_scoring_requests(
    mut fragments: Vec<SignFragment>,
    key: &'static str,
    pod: &PodInfo,
    resources: &[ResourceSpec],
    requests: Requests,
    pod_level: PodLevelResources,
) -> Result<Vec<SignFragment>, Status> {
    let values = pod_resource_requests(pod, resources, requests, pod_level)?;
    fragments.push(SignFragment {
        key,
        value: kubesched_framework::signature::integers_value(values),
    });
    Ok(fragments)
}

/// Whether every request a scorer reads is in the pod's [`PodInfo::resources`], its
/// effective and non-zero requests, computed once when the pod's PodInfo was made: with
/// no pod-level requests and no resized container, the scoring requests are the
/// effective requests, and the non-zero ones its non-zero cpu and memory, for every
/// resource it keeps (cpu, memory, ephemeral-storage, pods and the scalar resources).
fn scoring_requests_are_effective(pod: &PodInfo, resources: &[ResourceSpec]) -> bool {
    let pod_level = pod
        .spec()
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|r| !r.is_empty());
    let resized = pod.pod().status.as_ref().is_some_and(|s| {
        (s.container_statuses.iter().flatten())
            .chain(s.init_container_statuses.iter().flatten())
            .any(|cs| cs.resources.is_some())
    });
    !pod_level
        && !resized
        && resources.iter().all(|r| {
            matches!(
                r.name.as_str(),
                "cpu" | "memory" | "ephemeral-storage" | "pods"
            ) || is_scalar_resource_name(&r.name)
        })
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

/// Where one configured resource is read on a node, resolved once per run of nodes so
/// that the per-node loop reads integers instead of matching on resource kinds.
#[derive(Clone, Copy, Debug)]
enum Reading<'a> {
    /// cpu, memory or ephemeral-storage; the requested amount is the non-zero sum when
    /// `non_zero` (cpu and memory when scoring with [`Requests::NonZero`]).
    Base { field: BaseField, non_zero: bool },
    /// A scalar resource, by name.
    Scalar(&'a str),
    /// Not scored: an extended resource the pod does not ask for.
    Skip,
}

/// One of the resources a [`BaseResources`] holds.
#[derive(Clone, Copy, Debug)]
enum BaseField {
    Cpu,
    Memory,
    EphemeralStorage,
}

impl BaseField {
    #[inline(always)]
    fn of(self, r: &BaseResources) -> i64 {
        match self {
            BaseField::Cpu => r.milli_cpu,
            BaseField::Memory => r.memory,
            BaseField::EphemeralStorage => r.ephemeral_storage,
        }
    }
}

/// One configured resource, resolved for a pod: how to read it on a node, and the
/// pod's request of it.
#[derive(Clone, Copy, Debug)]
pub struct ResourceColumn<'a> {
    reading: Reading<'a>,
    pod_request: i64,
}

impl ResourceColumn<'_> {
    /// The pod's request of this resource (counted in [`ResourceColumn::read`]'s
    /// requested amount).
    #[inline]
    pub fn pod_request(&self) -> i64 {
        self.pod_request
    }

    /// The node's (allocatable, requested including the pod); (0, 0) means "do not
    /// score this resource" (an extended resource the pod does not ask for, or one the
    /// node does not have).
    #[inline]
    pub fn read(&self, node: &NodeInfo) -> (i64, i64) {
        match self.reading {
            Reading::Base { field, non_zero } => {
                let counts = node.counts();
                let requested = if non_zero {
                    &counts.non_zero_requested
                } else {
                    &counts.requested
                };
                (
                    field.of(&counts.allocatable),
                    field.of(requested) + self.pod_request,
                )
            }
            Reading::Scalar(name) => match node.allocatable().scalar_resources.get(name) {
                Some(&a) => (a, node.requested().scalar(name) + self.pod_request),
                None => (0, 0),
            },
            Reading::Skip => (0, 0),
        }
    }
}

/// The configured resources resolved for a pod requesting `pod_requests` (one per
/// kind, in order): kube-scheduler's `calculateResourceAllocatableRequest` for each.
pub fn resource_columns<'a>(
    kinds: &'a [ResourceKind],
    pod_requests: &[i64],
    requests: Requests,
) -> smallvec::SmallVec<[ResourceColumn<'a>; 4]> {
    let non_zero = requests == Requests::NonZero;
    kinds
        .iter()
        .zip(pod_requests)
        .map(|(kind, &pod_request)| {
            let reading = match kind {
                ResourceKind::Cpu => Reading::Base {
                    field: BaseField::Cpu,
                    non_zero,
                },
                ResourceKind::Memory => Reading::Base {
                    field: BaseField::Memory,
                    non_zero,
                },
                // Scoring counts actual ephemeral-storage requests either way.
                ResourceKind::EphemeralStorage => Reading::Base {
                    field: BaseField::EphemeralStorage,
                    non_zero: false,
                },
                ResourceKind::Other { scalar: true, .. } if pod_request == 0 => Reading::Skip,
                ResourceKind::Other { name, .. } => Reading::Scalar(name),
            };
            ResourceColumn {
                reading,
                pod_request,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::{Value, json};
    use std::sync::Arc;

    fn pod(spec: Value, status: Value) -> PodInfo {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": spec,
            "status": status,
        }))
        .unwrap();
        PodInfo::new(Arc::new(pod)).unwrap()
    }

    fn specs(names: &[&str]) -> Vec<ResourceSpec> {
        names.iter().map(|n| ResourceSpec::new(n, 1)).collect()
    }

    /// The effective requests PodInfo keeps give what the scorers read from the spec,
    /// for every way a pod without pod-level requests may ask.
    #[test]
    fn effective_requests_give_the_scoring_requests_where_they_apply() {
        let resources = specs(&[
            "cpu",
            "memory",
            "ephemeral-storage",
            "pods",
            "example.com/gpu",
            "hugepages-2Mi",
        ]);
        let requests = |r: Value| json!({"requests": r});
        let pods = [
            json!({"containers": [{"name": "a"}]}),
            json!({"containers": [
                {"name": "a", "resources": requests(json!({"cpu": "250m"}))},
                {"name": "b"},
            ]}),
            json!({"containers": [
                {"name": "a", "resources": requests(json!({"cpu": "0", "memory": "0"}))},
            ]}),
            json!({
                "initContainers": [
                    {"name": "i", "resources": requests(json!({"cpu": "2", "memory": "1Gi"}))},
                    {"name": "s", "restartPolicy": "Always",
                     "resources": requests(json!({"cpu": "100m"}))},
                ],
                "containers": [{"name": "a", "resources": requests(json!({
                    "memory": "64Mi", "ephemeral-storage": "1Gi", "example.com/gpu": "1",
                }))}],
            }),
            json!({
                "overhead": {"cpu": "50m", "memory": "10Mi"},
                "containers": [{"name": "a", "resources": requests(json!({
                    "cpu": "1500m", "hugepages-2Mi": "4Mi", "pods": "1",
                }))}],
            }),
            json!({"containers": [
                {"name": "a", "resources": requests(json!({"cpu": "0.3m", "memory": "1.5k"}))},
            ]}),
            json!({
                "initContainers": [{"name": "i", "resources": requests(json!({"cpu": "1", "memory": "1Gi"}))}],
                "containers": [{"name": "a"}],
            }),
            json!({
                "initContainers": [{"name": "s", "restartPolicy": "Always",
                    "resources": requests(json!({"cpu": "1", "memory": "1Gi"}))}],
                "containers": [{"name": "a"}],
            }),
        ];
        for spec in pods {
            let pod = pod(spec.clone(), json!({}));
            assert!(scoring_requests_are_effective(&pod, &resources), "{spec}");
            for requests in [Requests::Actual, Requests::NonZero] {
                for pod_level in [PodLevelResources::Honoured, PodLevelResources::Ignored] {
                    assert_eq!(
                        from_effective_requests(&pod, &resources, requests),
                        from_scoring_requests(&pod, &resources, requests, pod_level).unwrap(),
                        "{spec} {requests:?} {pod_level:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn pod_level_requests_a_resize_or_an_unkept_resource_read_the_spec() {
        let cpu = specs(&["cpu"]);
        let pod_level = pod(
            json!({"resources": {"requests": {"cpu": "1"}}, "containers": [{"name": "a"}]}),
            json!({}),
        );
        assert!(!scoring_requests_are_effective(&pod_level, &cpu));
        // NodeResourcesFit's scorer leaves pod-level requests out; the effective
        // requests hold them.
        let scored = pod_resource_requests(
            &pod_level,
            &cpu,
            Requests::NonZero,
            PodLevelResources::Ignored,
        );
        assert_eq!(scored.unwrap(), vec![100]);
        assert_eq!(pod_level.resources().non_zero_milli_cpu, 1000);

        let resized = pod(
            json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]}),
            json!({"containerStatuses": [{
                "name": "a", "image": "x", "imageID": "x", "ready": true, "restartCount": 0,
                "resources": {"requests": {"cpu": "300m"}},
            }]}),
        );
        assert!(!scoring_requests_are_effective(&resized, &cpu));
        let scored = pod_resource_requests(
            &resized,
            &cpu,
            Requests::Actual,
            PodLevelResources::Honoured,
        );
        assert_eq!(scored.unwrap(), vec![100]);
        assert_eq!(resized.resources().requests.milli_cpu, 300);

        let plain = pod(json!({"containers": [{"name": "a"}]}), json!({}));
        assert!(!scoring_requests_are_effective(
            &plain,
            &specs(&["not-scalar"])
        ));
    }
}
