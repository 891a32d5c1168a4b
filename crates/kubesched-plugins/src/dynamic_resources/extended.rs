//! Extended resources backed by DRA (DRAExtendedResource), as kube-scheduler v1.36's
//! DynamicResources handles them.
//!
//! A pod that requests an extended resource a DeviceClass backs (its
//! `spec.extendedResourceName`, or the implicit `deviceclass.resource.kubernetes.io/<class>`)
//! gets one more claim, kept in memory until PreBind: on each node that does not
//! advertise the resource (allocatable 0 or absent), Filter turns the pod's requests of
//! such resources into device requests of that claim (one per container, named
//! `container-<i>-request-<j>`, `i` the container's index among init containers then
//! containers, `j` the resource's index among the container's sorted requests) and
//! allocates them with the pod's other claims. On a node that advertises the resource,
//! the claim asks for nothing there (NodeResourcesFit checked the node's allocatable).
//! PreBind creates the claim (`generateName: <pod>-extended-resources-`, the pod its
//! controller, annotated `resource.kubernetes.io/extended-resource-claim: "true"`),
//! writes its allocation and reservation, and records the claim and the request of each
//! container in the pod's `status.extendedResourceClaimStatus`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Container;
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClaim, DeviceRequest, ExactDeviceRequest, ResourceClaim,
    ResourceClaimSpec, ResourceClaimStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kubesched_framework::dra::{DEVICE_CLASS_RESOURCE_PREFIX, EXTENDED_RESOURCE_CLAIM_ANNOTATION};
use kubesched_framework::resource::is_extended_resource_name;
use kubesched_framework::{ClusterWriter, DraCatalog, NodeInfo, PodInfo};

use super::allocator::ClaimToAllocate;
use super::cel::Selector;

/// The name of the claim while it exists only in memory (not a valid object name, so
/// no claim of the API server has it).
pub const SPECIAL_CLAIM_NAME: &str = "<extended-resources>";

/// Filter's reason when the pod's extended resource claim from an earlier attempt
/// already asks for devices (PostFilter deletes it, and the pod is tried anew).
pub const STALE_CLAIM: &str = "cannot schedule extended resource claim";

/// Filter's reason when the pod requests an extended resource the node neither
/// advertises nor gets from a DeviceClass.
pub const CANNOT_FIT: &str = "cannot fit resource";

/// `IsDRAExtendedResourceName`: an extended resource name, or a class's implicit one.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(DEVICE_CLASS_RESOURCE_PREFIX)
}

/// One container's extended resource request and the device request that serves it
/// (`status.extendedResourceClaimStatus.requestMappings`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestMapping {
    /// The container's name.
    pub container: String,
    /// The extended resource.
    pub resource: String,
    /// The device request of the claim.
    pub request: String,
}

/// The claim for the extended resources one node needs through DRA.
pub struct NodeClaim {
    /// The pod's claims to allocate, then this claim (last), as the allocator takes them.
    pub to_allocate: Vec<ClaimToAllocate>,
    /// Which device request serves which container's resource.
    pub mappings: Vec<RequestMapping>,
}

/// What PreFilter found about a pod's extended resources backed by DRA.
pub struct ExtendedResources {
    /// The pod's requests of extended resources that a class backs (non-zero), by name.
    requests: BTreeMap<String, i64>,
    /// The pod's claim from an earlier attempt, if any (else the in-memory one).
    pub existing: Option<Arc<ResourceClaim>>,
    /// The in-memory claim: metadata only.
    template: ResourceClaim,
    /// The node claims built so far, by the resources they cover.
    node_claims: Mutex<HashMap<Vec<String>, Arc<NodeClaim>>>,
}

/// What one node needs of the pod's extended resources.
pub enum NodeNeeds {
    /// Nothing through DRA (the node advertises them all).
    Nothing,
    /// The node can serve a resource neither way.
    CannotFit,
    /// These resources, through a claim.
    Claim(Vec<String>),
}

impl ExtendedResources {
    /// The pod's extended resources backed by a class of `catalog`, or `None` when it
    /// has none; `existing` is its claim from an earlier attempt.
    pub fn of(
        pod: &PodInfo,
        catalog: &DraCatalog,
        existing: impl FnOnce() -> Option<Arc<ResourceClaim>>,
    ) -> Option<ExtendedResources> {
        let scalars = &pod.requests().scalar_resources;
        let mapped = scalars.iter().any(|(name, &v)| {
            v != 0
                && is_dra_extended_resource_name(name)
                && catalog.class_for_extended_resource(name).is_some()
        });
        if !mapped {
            return None;
        }
        let requests = scalars
            .iter()
            .filter(|(name, v)| **v != 0 && is_dra_extended_resource_name(name))
            .map(|(name, v)| (name.clone(), *v))
            .collect();
        let template = ResourceClaim {
            metadata: ObjectMeta {
                namespace: Some(pod.namespace().to_owned()),
                name: Some(SPECIAL_CLAIM_NAME.to_owned()),
                generate_name: Some(format!("{}-extended-resources-", pod.name())),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    name: pod.name().to_owned(),
                    uid: pod.uid().to_owned(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]),
                annotations: Some(BTreeMap::from([(
                    EXTENDED_RESOURCE_CLAIM_ANNOTATION.to_owned(),
                    "true".to_owned(),
                )])),
                ..ObjectMeta::default()
            },
            spec: Some(ResourceClaimSpec::default()),
            status: None,
        };
        Some(ExtendedResources {
            requests,
            existing: existing(),
            template,
            node_claims: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the claim from an earlier attempt already asks for devices.
    pub fn stale(&self) -> bool {
        self.existing.as_ref().is_some_and(|c| {
            c.spec
                .as_ref()
                .and_then(|s| s.devices.as_ref())
                .and_then(|d| d.requests.as_ref())
                .is_some()
        })
    }

    /// Whether the claim from an earlier attempt is allocated.
    pub fn existing_allocated(&self) -> bool {
        self.existing
            .as_ref()
            .is_some_and(|c| c.status.as_ref().is_some_and(|s| s.allocation.is_some()))
    }

    /// Which of the pod's extended resources `node` must give through DRA.
    pub fn needs(&self, catalog: &DraCatalog, node: &NodeInfo) -> NodeNeeds {
        let allocatable = &node.allocatable().scalar_resources;
        let mut need = Vec::new();
        for name in self.requests.keys() {
            let have = allocatable.get(name);
            let backed = catalog.class_for_extended_resource(name).is_some();
            if backed && have.copied().unwrap_or(0) == 0 {
                need.push(name.clone());
            } else if have.is_none() {
                return NodeNeeds::CannotFit;
            }
        }
        if need.is_empty() {
            NodeNeeds::Nothing
        } else {
            NodeNeeds::Claim(need)
        }
    }

    /// The claim asking for `resources` (built once per set of resources), after the
    /// pod's claims to allocate `user`. An error is a class whose selectors do not
    /// compile.
    pub fn node_claim(
        &self,
        pod: &PodInfo,
        catalog: &DraCatalog,
        user: &[ClaimToAllocate],
        resources: Vec<String>,
        compile: &dyn Fn(&str) -> Result<Selector, String>,
    ) -> Result<Arc<NodeClaim>, String> {
        let mut cache = self.node_claims.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(&resources) {
            return Ok(c.clone());
        }
        let (requests, mappings) = requests_and_mappings(pod, catalog, &resources);
        let mut claim = self.template.clone();
        claim
            .spec
            .get_or_insert_with(ResourceClaimSpec::default)
            .devices = Some(DeviceClaim {
            requests: Some(requests),
            ..DeviceClaim::default()
        });
        let prepared = super::claims::prepare_claim(catalog, &Arc::new(claim), compile)??;
        let mut to_allocate = user.to_vec();
        to_allocate.push(prepared);
        let node_claim = Arc::new(NodeClaim {
            to_allocate,
            mappings,
        });
        cache.insert(resources, node_claim.clone());
        Ok(node_claim)
    }
}

/// A container's request of `resource` as a whole number (`AsInt64`), if any.
fn container_request(container: &Container, resource: &str) -> Option<i64> {
    let q = container
        .resources
        .as_ref()?
        .requests
        .as_ref()?
        .get(resource)?;
    let q = kubesched_framework::quantity::Quantity::parse(&q.0).ok()?;
    let milli = q.milli();
    if milli == 0 || milli % 1000 != 0 {
        return None;
    }
    i64::try_from(milli / 1000).ok()
}

/// kube-scheduler's `createResourceRequestAndMappings`: the device request container
/// `index` needs for `resource` beyond what `reusable` (requests of later long-lived
/// containers) already give it, and its mappings.
fn container_request_and_mappings(
    index: usize,
    container: &Container,
    resource: &str,
    class: &str,
    reusable: &[Option<DeviceRequest>],
) -> (Option<DeviceRequest>, Vec<RequestMapping>) {
    let Some(want) = container_request(container, resource) else {
        return (None, Vec::new());
    };
    let mut mappings = Vec::new();
    let mut sum = 0i64;
    for r in reusable.iter().flatten() {
        sum += r.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
        mappings.push(RequestMapping {
            container: container.name.clone(),
            resource: resource.to_owned(),
            request: r.name.clone(),
        });
        if sum >= want {
            return (None, mappings);
        }
    }
    let position = container
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.keys().position(|k| k == resource))
        .unwrap_or(0);
    let name = format!("container-{index}-request-{position}");
    let request = DeviceRequest {
        name: name.clone(),
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_owned(),
            allocation_mode: Some("ExactCount".to_owned()),
            count: Some(want - sum),
            ..ExactDeviceRequest::default()
        }),
        ..DeviceRequest::default()
    };
    mappings.push(RequestMapping {
        container: container.name.clone(),
        resource: resource.to_owned(),
        request: name,
    });
    (Some(request), mappings)
}

/// kube-scheduler's `createRequestsAndMappings`: per resource (sorted), a request per
/// long-lived container (regular containers and sidecars), and for the init containers
/// that run before them one request, the largest they need beyond what later
/// long-lived containers' requests give; the requests sorted by name.
fn requests_and_mappings(
    pod: &PodInfo,
    catalog: &DraCatalog,
    resources: &[String],
) -> (Vec<DeviceRequest>, Vec<RequestMapping>) {
    let spec = pod.spec();
    let inits = spec.init_containers.as_deref().unwrap_or_default();
    let containers: Vec<&Container> = inits.iter().chain(&spec.containers).collect();
    let short_lived =
        |i: usize| i < inits.len() && containers[i].restart_policy.as_deref() != Some("Always");
    let mut requests = Vec::new();
    let mut mappings = Vec::new();
    for resource in resources {
        let Some(class) = catalog.class_for_extended_resource(resource) else {
            continue;
        };
        let class = class.metadata.name.as_deref().unwrap_or_default();
        let mut long_requests: Vec<Option<DeviceRequest>> = vec![None; containers.len()];
        let mut long_mappings = Vec::new();
        for (i, c) in containers.iter().enumerate() {
            if short_lived(i) {
                continue;
            }
            let (r, m) = container_request_and_mappings(i, c, resource, class, &[]);
            long_requests[i] = r;
            long_mappings.extend(m);
        }
        let mut max_short: Option<DeviceRequest> = None;
        let mut short_names = Vec::new();
        let mut short_mappings = Vec::new();
        for (i, c) in containers.iter().enumerate() {
            if !short_lived(i) {
                continue;
            }
            let (r, m) = container_request_and_mappings(i, c, resource, class, &long_requests[i..]);
            if let Some(r) = r {
                short_names.push(r.name.clone());
                let count = |r: &DeviceRequest| r.exactly.as_ref().and_then(|e| e.count);
                if max_short.as_ref().is_none_or(|m| count(m) < count(&r)) {
                    max_short = Some(r);
                }
            }
            short_mappings.extend(m);
        }
        if let Some(max) = &max_short
            && short_names.len() > 1
        {
            for m in &mut short_mappings {
                if m.request != max.name && short_names.contains(&m.request) {
                    m.request = max.name.clone();
                }
            }
        }
        requests.extend(max_short);
        requests.extend(long_requests.into_iter().flatten());
        mappings.extend(long_mappings);
        mappings.extend(short_mappings);
    }
    requests.sort_by(|a, b| a.name.cmp(&b.name));
    (requests, mappings)
}

impl NodeClaim {
    /// The claim (with its device requests).
    pub fn claim(&self) -> &Arc<ResourceClaim> {
        &self.to_allocate[self.to_allocate.len() - 1].claim
    }
}

/// The claim as kube-scheduler creates it: the in-memory claim without its name.
pub fn claim_to_create(claim: &ResourceClaim) -> ResourceClaim {
    let mut claim = claim.clone();
    claim.metadata.name = None;
    claim.metadata.uid = None;
    claim.status = None;
    claim
}

/// The pod status patch that records the claim and its request mappings.
pub fn pod_status_patch(claim_name: &str, mappings: &[RequestMapping]) -> serde_json::Value {
    let mappings: Vec<serde_json::Value> = mappings
        .iter()
        .map(|m| {
            serde_json::json!({
                "containerName": m.container,
                "resourceName": m.resource,
                "requestName": m.request,
            })
        })
        .collect();
    serde_json::json!({
        "status": {
            "extendedResourceClaimStatus": {
                "requestMappings": mappings,
                "resourceClaimName": claim_name,
            }
        }
    })
}

/// A name for the claim the simulator assumes, as the API server would generate it
/// from `generateName` (five characters of its alphabet, here derived from the pod's
/// UID so that simulations repeat).
pub fn simulated_name(pod: &PodInfo) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in pod.uid().bytes().chain(pod.key().bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let suffix: String = (0..5)
        .map(|i| ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u64) as usize] as char)
        .collect();
    format!("{}-extended-resources-{suffix}", pod.name())
}

/// The key the Reserve of `pod` marks its extended resource claim's allocation in
/// flight under (kube-scheduler keys it by the in-memory claim's temporary UID).
pub fn pending_name(pod: &PodInfo) -> String {
    format!("{SPECIAL_CLAIM_NAME}{}", pod.uid())
}

/// The claim as the simulator assumes it after PreBind: created under a generated
/// name, with the finalizer, the allocation and the pod's reservation.
pub fn simulated_claim(
    claim: &ResourceClaim,
    allocation: &AllocationResult,
    pod: &PodInfo,
) -> ResourceClaim {
    let mut claim = claim_to_create(claim);
    claim.metadata.name = Some(simulated_name(pod));
    claim.metadata.finalizers = Some(vec![super::DELETE_PROTECTION_FINALIZER.to_owned()]);
    claim.status = Some(ResourceClaimStatus {
        allocation: Some(allocation.clone()),
        reserved_for: Some(vec![super::consumer(pod)]),
        ..ResourceClaimStatus::default()
    });
    claim
}

/// kube-scheduler's PreBind for the extended resource claim: creates it, writes the
/// finalizer, the allocation and the reservation (`created` is told of the claim as
/// soon as it exists, for Unreserve to delete), then records it in the pod's status.
pub async fn create_and_bind(
    writer: &dyn ClusterWriter,
    node_claim: &NodeClaim,
    allocation: &AllocationResult,
    pod: &PodInfo,
    created: impl FnOnce(&ResourceClaim),
) -> Result<ResourceClaim, String> {
    let claim = claim_to_create(node_claim.claim());
    let claim = writer.create_resource_claim(&claim).await.map_err(|e| {
        format!(
            "create claim for extended resources {}/: {e}",
            pod.namespace()
        )
    })?;
    created(&claim);
    let claim = super::bind_claim(writer, &claim, Some(allocation), pod).await?;
    let name = claim.metadata.name.clone().unwrap_or_default();
    writer
        .patch_pod_status(
            pod.namespace(),
            pod.name(),
            &pod_status_patch(&name, &node_claim.mappings),
        )
        .await
        .map_err(|e| format!("update pod {} ExtendedResourceClaimStatus: {e}", pod.key()))?;
    Ok(claim)
}

/// kube-scheduler's `deleteClaim`: takes the delete-protection finalizer off (re-reading
/// the claim on a conflict), then deletes the claim.
pub async fn delete_claim(writer: &dyn ClusterWriter, claim: &ResourceClaim) -> Result<(), String> {
    let ns = claim.metadata.namespace.as_deref().unwrap_or("default");
    let name = claim.metadata.name.as_deref().unwrap_or_default();
    let key = format!("{ns}/{name}");
    let mut claim = claim.clone();
    let mut attempt = 0;
    loop {
        if attempt > 0 {
            claim = writer
                .get_resource_claim(ns, name)
                .await
                .map_err(|e| format!("get resourceclaim {key}: {e}"))?;
        }
        attempt += 1;
        if let Some(f) = claim.metadata.finalizers.as_mut() {
            f.retain(|f| f != super::DELETE_PROTECTION_FINALIZER);
        }
        match writer.update_resource_claim(&claim).await {
            Ok(_) => break,
            Err(e) if e.is_conflict() && attempt < 5 => continue,
            Err(e) => return Err(format!("update resourceclaim {key}: {e}")),
        }
    }
    writer
        .delete_resource_claim(ns, name)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::resource::v1::DeviceClass;
    use serde_json::json;

    fn catalog() -> DraCatalog {
        let class: DeviceClass = serde_json::from_value(json!({
            "metadata": {"name": "gpu-class"},
            "spec": {"extendedResourceName": "example.com/gpu"},
        }))
        .expect("class");
        DraCatalog::new([Arc::new(class)], [], [])
    }

    fn container(name: &str, gpus: u32, sidecar: bool) -> serde_json::Value {
        let mut c = json!({"name": name, "image": "x", "resources": {"requests": {
            "cpu": "1", "example.com/gpu": gpus.to_string()}}});
        if sidecar {
            c["restartPolicy"] = json!("Always");
        }
        c
    }

    fn pod(spec: serde_json::Value) -> PodInfo {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": spec,
        }))
        .expect("pod");
        PodInfo::new(Arc::new(pod)).expect("info")
    }

    /// The requests (name, count) and the mappings (container, request).
    type Summary = (Vec<(String, i64)>, Vec<(String, String)>);

    fn summary(pod: &PodInfo) -> Summary {
        let (requests, mappings) =
            requests_and_mappings(pod, &catalog(), &["example.com/gpu".to_owned()]);
        (
            requests
                .iter()
                .map(|r| {
                    (
                        r.name.clone(),
                        r.exactly.as_ref().and_then(|e| e.count).unwrap_or(0),
                    )
                })
                .collect(),
            mappings
                .into_iter()
                .map(|m| (m.container, m.request))
                .collect(),
        )
    }

    #[test]
    fn one_request_per_container_named_by_indices() {
        let p = pod(json!({"containers": [container("a", 1, false), container("b", 2, false)]}));
        assert_eq!(
            summary(&p),
            (
                vec![
                    ("container-0-request-1".into(), 1),
                    ("container-1-request-1".into(), 2)
                ],
                vec![
                    ("a".into(), "container-0-request-1".into()),
                    ("b".into(), "container-1-request-1".into())
                ]
            )
        );
    }

    #[test]
    fn init_containers_reuse_later_requests_and_share_the_largest() {
        // Two plain init containers (3 and 1 devices) before a sidecar (1) and a
        // container (1): the first reuses both long-lived requests and needs one more,
        // the second is served by the sidecar's; one request, the largest, serves the
        // init containers.
        let p = pod(json!({
            "initContainers": [container("i0", 3, false), container("i1", 1, false), container("s", 1, true)],
            "containers": [container("c", 1, false)],
        }));
        assert_eq!(
            summary(&p),
            (
                vec![
                    ("container-0-request-1".into(), 1),
                    ("container-2-request-1".into(), 1),
                    ("container-3-request-1".into(), 1)
                ],
                vec![
                    ("s".into(), "container-2-request-1".into()),
                    ("c".into(), "container-3-request-1".into()),
                    ("i0".into(), "container-2-request-1".into()),
                    ("i0".into(), "container-3-request-1".into()),
                    ("i0".into(), "container-0-request-1".into()),
                    ("i1".into(), "container-2-request-1".into()),
                ]
            )
        );
    }

    #[test]
    fn the_implicit_and_the_explicit_name_resolve_to_the_class() {
        let c = catalog();
        for name in [
            "example.com/gpu",
            "deviceclass.resource.kubernetes.io/gpu-class",
        ] {
            assert!(is_dra_extended_resource_name(name));
            assert_eq!(
                c.class_for_extended_resource(name)
                    .and_then(|c| c.metadata.name.as_deref()),
                Some("gpu-class")
            );
        }
        assert!(c.class_for_extended_resource("example.com/tpu").is_none());
    }
}
