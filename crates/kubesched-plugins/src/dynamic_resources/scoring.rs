//! DynamicResources' score (with the prioritized list, on in v1.35): a node earns, for
//! each `firstAvailable` request of the claims it would allocate, 8 minus the index of
//! the subrequest the allocator chose there, so nodes that can give a claim its first
//! choice rank first. NormalizeScore scales the scores to 0..=100 by the highest.

use k8s_openapi::api::resource::v1::AllocationResult;

use super::allocator::ClaimToAllocate;

/// The most subrequests a `firstAvailable` request may have
/// (`FirstAvailableDeviceRequestMaxSize`).
pub const FIRST_AVAILABLE_MAX_SIZE: i64 = 8;

/// The raw score of a node from the allocations Filter found there.
pub fn score(claims: &[ClaimToAllocate], allocations: &[AllocationResult]) -> i64 {
    let mut score = 0;
    for (claim, allocation) in claims.iter().zip(allocations) {
        let results = allocation
            .devices
            .as_ref()
            .and_then(|d| d.results.as_deref())
            .unwrap_or_default();
        for request in &claim.requests {
            if !request.first_available {
                continue;
            }
            let Some(parent) = request
                .alternatives
                .first()
                .and_then(|a| a.parent.as_deref())
            else {
                continue;
            };
            let chosen = results.iter().find_map(|r| {
                let (p, sub) = r.request.split_once('/')?;
                (p == parent).then_some(sub)
            });
            if let Some(sub) = chosen
                && let Some(index) = request.alternatives.iter().position(|a| a.name == sub)
            {
                score += FIRST_AVAILABLE_MAX_SIZE - index as i64;
            }
        }
    }
    score
}
