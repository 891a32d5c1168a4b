//! DynamicResources' score (with the prioritized list, on in v1.35): a node earns, for
//! each `firstAvailable` request of the claims it would allocate, 8 minus the index of
//! the subrequest the allocator chose there, so nodes that can give a claim its first
//! choice rank first. NormalizeScore scales the scores to 0..=100 by the highest.

use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim};

use super::allocator::ClaimToAllocate;

/// The most subrequests a `firstAvailable` request may have
/// (`FirstAvailableDeviceRequestMaxSize`).
pub const FIRST_AVAILABLE_MAX_SIZE: i64 = 8;

/// The raw score of a node from the allocations Filter found there, claim by claim.
pub fn score(claims: &[ClaimToAllocate], allocations: &[AllocationResult]) -> i64 {
    claims
        .iter()
        .zip(allocations)
        .map(|(claim, allocation)| claim_score(&claim.claim, allocation))
        .sum()
}

/// What an already allocated claim adds in kube-scheduler v1.36, which scores every claim
/// of the pod: its `firstAvailable` requests earn by the subrequest its allocation holds,
/// the same on every node. (v1.35 scores only the claims Filter allocates, and fails when
/// the pod has others; see [`claims_beyond_allocations`].)
pub fn allocated_claim_score(claim: &ResourceClaim) -> i64 {
    claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .map_or(0, |allocation| claim_score(claim, allocation))
}

/// kube-scheduler's score of one claim and its allocation (`computeScore`): every
/// `firstAvailable` subrequest the allocation's results name (`request/subrequest`)
/// earns 8 minus its index in the request's list.
fn claim_score(claim: &ResourceClaim, allocation: &AllocationResult) -> i64 {
    let chosen: Vec<&str> = allocation
        .devices
        .as_ref()
        .and_then(|d| d.results.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|r| r.request.as_str())
        .filter(|r| r.contains('/'))
        .collect();
    let requests = claim
        .spec
        .as_ref()
        .and_then(|s| s.devices.as_ref())
        .and_then(|d| d.requests.as_deref())
        .unwrap_or_default();
    let mut score = 0;
    for request in requests.iter().filter(|r| r.exactly.is_none()) {
        for (index, sub) in request.first_available.iter().flatten().enumerate() {
            let reference = format!("{}/{}", request.name, sub.name);
            if chosen.contains(&reference.as_str()) {
                score += FIRST_AVAILABLE_MAX_SIZE - index as i64;
            }
        }
    }
    score
}

/// kube-scheduler v1.35's Score pairs the pod's claims, allocated ones included, by
/// position with the allocations Filter found for the claims it allocates, so a pod
/// with an allocated claim and one to allocate fails on every node Filter allocated on
/// (kubernetes issue #133836, fixed in v1.36): the error, when there is one.
pub fn claims_beyond_allocations(claims: usize, allocations: usize) -> Option<String> {
    (claims > allocations)
        .then(|| format!("number of allocations {allocations} is smaller than number of claims"))
}
