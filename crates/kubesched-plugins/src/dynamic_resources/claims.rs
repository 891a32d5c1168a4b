//! The pod's claims as kube-scheduler's DynamicResources PreFilter finds them: by name
//! (`resourceClaimName`) or through `pod.status.resourceClaimStatuses` for a template
//! (the claim must be owned by the pod), and the claims to allocate turned into
//! [`ClaimToAllocate`]s (classes looked up, selectors compiled, API defaults applied).

use std::sync::Arc;

use k8s_openapi::api::resource::v1::{DeviceSelector, ResourceClaim};
use kubesched_framework::{DraCatalog, DraState, PodInfo};

use super::allocator::{ClaimRequest, ClaimToAllocate, MatchAttribute, RequestData};
use super::cel::Selector;

/// The most consumers a claim may be reserved for (`ResourceClaimReservedForMaxSize`).
pub const RESERVED_FOR_MAX_SIZE: usize = 256;

/// Why the pod cannot be scheduled now, as PreFilter reports it.
pub type Reject = String;

/// The pod's claims, in `spec.resourceClaims` order; entries whose claim is not needed
/// (a template entry the controller resolved to no claim) are left out.
pub fn pod_claims(state: &DraState, pod: &PodInfo) -> Result<Vec<Arc<ResourceClaim>>, Reject> {
    let mut out = Vec::new();
    let statuses = pod
        .pod()
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref());
    for entry in pod.spec().resource_claims.iter().flatten() {
        let (name, must_check_owner) = if let Some(name) = &entry.resource_claim_name {
            (name.clone(), false)
        } else if entry.resource_claim_template_name.is_some() {
            let status = statuses
                .into_iter()
                .flatten()
                .find(|s| s.name == entry.name)
                .ok_or_else(|| format!("pod \"{}\": ResourceClaim not created yet", pod.key()))?;
            match &status.resource_claim_name {
                Some(name) => (name.clone(), true),
                None => continue,
            }
        } else {
            return Err(format!(
                "pod \"{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                pod.key(),
                entry.name
            ));
        };
        let claim = state.claim(pod.namespace(), &name).ok_or_else(|| {
            format!(
                "could not find ResourceClaim \"{}/{name}\"",
                pod.namespace()
            )
        })?;
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("resourceclaim \"{name}\" is being deleted"));
        }
        if must_check_owner && !owned_by(&claim, pod) {
            return Err(format!(
                "ResourceClaim {}/{name} was not created for pod {} (pod is not owner)",
                pod.namespace(),
                pod.key()
            ));
        }
        out.push(claim);
    }
    Ok(out)
}

fn owned_by(claim: &ResourceClaim, pod: &PodInfo) -> bool {
    let uid = pod.metadata().uid.as_deref();
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && Some(r.uid.as_str()) == uid && uid.is_some())
}

/// Whether the claim lists the pod among its consumers.
pub fn reserved_for_pod(claim: &ResourceClaim, pod: &PodInfo) -> bool {
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.as_ref())
        .is_some_and(|r| r.iter().any(|c| c.uid == pod.uid()))
}

/// Whether one more consumer fits in `reservedFor`.
pub fn can_be_reserved(claim: &ResourceClaim) -> bool {
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.as_ref())
        .is_none_or(|r| r.len() < RESERVED_FOR_MAX_SIZE)
}

/// Compiles selectors through `compile` (a cache), naming the object in errors.
fn selectors(
    list: Option<&Vec<DeviceSelector>>,
    compile: &dyn Fn(&str) -> Result<Selector, String>,
    owner: &str,
) -> Result<Vec<Selector>, String> {
    list.into_iter()
        .flatten()
        .enumerate()
        .map(|(i, s)| {
            let expr = s
                .cel
                .as_ref()
                .map(|c| c.expression.as_str())
                .ok_or_else(|| {
                    format!(
                        "{owner}, selector #{i}: CEL expression empty (unsupported selector type?)"
                    )
                })?;
            compile(expr).map_err(|e| format!("{owner}: selector #{i}: CEL compile error: {e}"))
        })
        .collect()
}

/// A claim that needs allocation, ready for the allocator. `Ok(Err(reject))` when a
/// class is missing (an unschedulable pod), `Err` for a problem that is an error.
pub fn prepare_claim(
    state: &DraCatalog,
    claim: &Arc<ResourceClaim>,
    compile: &dyn Fn(&str) -> Result<Selector, String>,
) -> Result<Result<ClaimToAllocate, Reject>, String> {
    let key = super::allocator::claim_key(claim);
    let devices = claim.spec.as_ref().and_then(|s| s.devices.as_ref());
    let mut requests = Vec::new();
    for request in devices
        .and_then(|d| d.requests.as_ref())
        .into_iter()
        .flatten()
    {
        let mut alternatives = Vec::new();
        let first_available = request.exactly.is_none();
        if let Some(exactly) = &request.exactly {
            let Some(class) = state.device_class(&exactly.device_class_name) else {
                return Ok(Err(format!(
                    "request {}: device class {} does not exist",
                    request.name, exactly.device_class_name
                )));
            };
            alternatives.push(RequestData {
                name: request.name.clone(),
                parent: None,
                class_name: exactly.device_class_name.clone(),
                class_selectors: selectors(
                    class.spec.as_ref().and_then(|s| s.selectors.as_ref()),
                    compile,
                    &format!("class {}", exactly.device_class_name),
                )?,
                selectors: selectors(exactly.selectors.as_ref(), compile, &format!("claim {key}"))?,
                count: count(exactly.allocation_mode.as_deref(), exactly.count),
                admin_access: exactly.admin_access.unwrap_or(false),
                tolerations: exactly.tolerations.clone().unwrap_or_default(),
                capacity: capacity_requests(exactly.capacity.as_ref()),
            });
        } else {
            for sub in request.first_available.iter().flatten() {
                let Some(class) = state.device_class(&sub.device_class_name) else {
                    return Ok(Err(format!(
                        "request {}/{}: device class {} does not exist",
                        request.name, sub.name, sub.device_class_name
                    )));
                };
                alternatives.push(RequestData {
                    name: sub.name.clone(),
                    parent: Some(request.name.clone()),
                    class_name: sub.device_class_name.clone(),
                    class_selectors: selectors(
                        class.spec.as_ref().and_then(|s| s.selectors.as_ref()),
                        compile,
                        &format!("class {}", sub.device_class_name),
                    )?,
                    selectors: selectors(sub.selectors.as_ref(), compile, &format!("claim {key}"))?,
                    count: count(sub.allocation_mode.as_deref(), sub.count),
                    admin_access: false,
                    tolerations: sub.tolerations.clone().unwrap_or_default(),
                    capacity: capacity_requests(sub.capacity.as_ref()),
                });
            }
            if alternatives.is_empty() {
                return Err(format!(
                    "claim {key}, request {}: neither exactly nor firstAvailable is set",
                    request.name
                ));
            }
        }
        requests.push(ClaimRequest {
            alternatives,
            first_available,
        });
    }
    let mut constraints = Vec::new();
    for (i, c) in devices
        .and_then(|d| d.constraints.as_ref())
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(attribute) = &c.match_attribute else {
            return Err(format!(
                "claim {key}, constraint #{i}: empty constraint (unsupported constraint type?)"
            ));
        };
        constraints.push(MatchAttribute {
            requests: c.requests.iter().flatten().cloned().collect(),
            attribute: attribute.clone(),
        });
    }
    Ok(Ok(ClaimToAllocate {
        claim: claim.clone(),
        requests,
        constraints,
    }))
}

/// A request's `capacity.requests` (`None` without a `capacity` field; a quantity that
/// does not parse, which only a malformed API object has, is left out).
fn capacity_requests(
    capacity: Option<&k8s_openapi::api::resource::v1::CapacityRequirements>,
) -> Option<super::capacity::CapacityRequests> {
    capacity.map(|c| {
        c.requests
            .iter()
            .flatten()
            .filter_map(|(name, q)| Some((name.clone(), super::capacity::Amount::parse(q)?)))
            .collect()
    })
}

/// The number of devices of a request: `None` for `allocationMode: All`; the API
/// server's defaults (`ExactCount`, `count: 1`) when unset.
fn count(mode: Option<&str>, count: Option<i64>) -> Option<usize> {
    match mode {
        Some("All") => None,
        _ => Some(usize::try_from(count.unwrap_or(1)).unwrap_or(0)),
    }
}
