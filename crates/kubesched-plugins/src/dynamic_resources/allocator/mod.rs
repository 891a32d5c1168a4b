//! The structured-parameters allocator, as kube-scheduler v1.35's
//! (`k8s.io/dynamic-resource-allocation/structured`, the "stable" implementation) does it
//! for one node: gather the pools whose slices serve the node, then search depth first,
//! claim by claim, request by request, device by device, for the first combination of
//! free devices that match the class and request selectors and satisfy the claims'
//! `matchAttribute` constraints. Devices are tried in pool order, then slice order, then
//! device order. kube-scheduler walks pools, and the slices of a pool, in the order of
//! its informer cache, which varies from run to run; kubesched takes the order of the
//! slices in the scenario (a pool where its first slice appears), so a run is
//! repeatable and agrees with kube-scheduler wherever kube-scheduler itself is
//! deterministic. A `firstAvailable`
//! request tries its subrequests in order; `allocationMode: All` takes every matching
//! device of the node's pools.

//!
//! This file holds the claims and requests to allocate, the entry points ([`allocate`],
//! [`explain_unfit`]) and their results; the depth-first search with its constraint
//! bookkeeping and the allocation results it builds is in `search.rs`.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::resource::v1::{AllocationResult, DeviceToleration, ResourceClaim};
use kubesched_framework::{AllocatedDevices, DeviceId, DraCatalog, NodeInfo};

use super::capacity::CapacityRequests;
use super::cel::{DeviceValue, Selector};
use super::pools::PoolCache;

mod search;

use search::{Search, Start, Stop};

/// The most devices one claim may get (`AllocationResultsMaxSize`).
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

/// One request, or one subrequest of a `firstAvailable` request, ready to allocate.
#[derive(Clone, Debug)]
pub struct RequestData {
    /// The request's name (the subrequest's, for a subrequest).
    pub name: String,
    /// The parent request's name, for a subrequest.
    pub parent: Option<String>,
    /// The class's selectors, with the class name for messages.
    pub class_name: String,
    /// The class's compiled selectors.
    pub class_selectors: Vec<Selector>,
    /// The request's compiled selectors.
    pub selectors: Vec<Selector>,
    /// `Some(n)` for `ExactCount`, `None` for `All`.
    pub count: Option<usize>,
    /// `adminAccess: true`.
    pub admin_access: bool,
    /// The request's tolerations of device taints.
    pub tolerations: Vec<DeviceToleration>,
    /// `capacity.requests` (DRAConsumableCapacity); `None` without a `capacity` field.
    pub capacity: Option<CapacityRequests>,
}

impl RequestData {
    /// `request` or `request/subrequest`, as allocation results name it.
    pub fn full_name(&self) -> String {
        match &self.parent {
            Some(p) => format!("{p}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One request of a claim: a plain request, or the subrequests of a `firstAvailable` one.
#[derive(Clone, Debug)]
pub struct ClaimRequest {
    /// The plain request (one entry) or the subrequests, in order.
    pub alternatives: Vec<RequestData>,
    /// Whether it is a `firstAvailable` request.
    pub first_available: bool,
}

/// A `matchAttribute` constraint.
#[derive(Clone, Debug)]
pub struct MatchAttribute {
    /// The requests it applies to (`request` or `request/subrequest`); empty means all.
    pub requests: HashSet<String>,
    /// The fully qualified attribute name.
    pub attribute: String,
}

/// A claim to allocate, validated against the classes.
#[derive(Clone, Debug)]
pub struct ClaimToAllocate {
    /// The claim.
    pub claim: Arc<ResourceClaim>,
    /// Its requests, in order.
    pub requests: Vec<ClaimRequest>,
    /// Its constraints.
    pub constraints: Vec<MatchAttribute>,
}

/// What the CEL selectors evaluate against: the compiled context and every slice's
/// device values; and the pools of each node seen so far (all built on one catalog:
/// a node's pools are gathered once per catalog).
pub struct Devices<'a> {
    /// The evaluation context.
    pub context: &'a cel::Context<'static, 'static>,
    /// Per slice of the [`DraCatalog`], per device, the `device` variable.
    pub values: &'a [Vec<DeviceValue>],
    /// Per slice, per device, its id.
    pub ids: &'a [Vec<DeviceId>],
    /// Node name → the pools that serve it.
    pub pools: &'a PoolCache,
    /// The DRA gates that change how devices are allocated.
    pub features: AllocatorFeatures,
}

/// The DRA feature gates the allocator honours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocatorFeatures {
    /// DRADeviceTaints: devices with taints the request does not tolerate are skipped.
    pub device_taints: bool,
    /// DRAPartitionableDevices: devices that consume shared counters are allocated
    /// within them (skipped while off).
    pub partitionable_devices: bool,
    /// DRAConsumableCapacity: capacity requests and devices shared by capacity.
    pub consumable_capacity: bool,
    /// DRADeviceBindingConditions: devices with binding conditions may be allocated
    /// (skipped while off).
    pub binding_conditions: bool,
}

impl AllocatorFeatures {
    /// The gates of `features`.
    pub fn of(features: &kubesched_framework::Features) -> AllocatorFeatures {
        AllocatorFeatures {
            device_taints: features.dra_device_taints(),
            partitionable_devices: features.dra_partitionable_devices(),
            consumable_capacity: features.dra_consumable_capacity(),
            binding_conditions: features.dra_device_binding_conditions(),
        }
    }

    /// Whether kube-scheduler picks its "incubating" allocator (one of these gates is
    /// on) rather than the "stable" one.
    pub fn incubating(&self) -> bool {
        self.device_taints
            || self.partitionable_devices
            || self.consumable_capacity
            || self.binding_conditions
    }
}

/// What allocating on one node gave.
#[derive(Debug)]
pub enum Allocation {
    /// One result per claim, in order.
    Allocated(Vec<AllocationResult>),
    /// No combination fits; with a reason when it is not the plain one.
    Unfit(Option<String>),
}

/// Allocates `claims` on `node`; `Err` is a fatal problem (a CEL runtime error, an
/// `All` request over a pool that is being updated, ...) that ends the attempt.
pub fn allocate(
    state: &DraCatalog,
    devices: &Devices<'_>,
    allocated: &AllocatedDevices,
    claims: &[ClaimToAllocate],
    node: &NodeInfo,
) -> Result<Allocation, String> {
    let mut alloc = Search::new(state, devices, allocated, claims, node);
    for (ci, claim) in claims.iter().enumerate() {
        let mut min_devices = 0;
        for (ri, request) in claim.requests.iter().enumerate() {
            let features = devices.features;
            if features.incubating()
                && !features.consumable_capacity
                && let Some(data) = request.alternatives.iter().find(|d| d.capacity.is_some())
            {
                let what = if data.parent.is_some() {
                    "subrequest"
                } else {
                    "request"
                };
                return Err(format!(
                    "claim {}, {what} {}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
                    claim_key(&claim.claim),
                    data.name
                ));
            }
            let mut min_here = usize::MAX;
            for (si, data) in request.alternatives.iter().enumerate() {
                let n = match data.count {
                    Some(n) => n,
                    None => alloc.collect_all(ci, ri, si, data)?,
                };
                min_here = min_here.min(n);
            }
            min_devices += if min_here == usize::MAX { 0 } else { min_here };
            alloc.selected[ci].push(0);
        }
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(format!(
                "claim {}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}",
                claim_key(&claim.claim)
            ));
        }
    }
    match alloc.allocate_one(0, 0, 0, 0, false, Start::default()) {
        Err(Stop::Fatal(e)) => Err(e),
        Err(Stop::MaxSizeExceeded) | Ok(false) => {
            // Invalid pools are not fatal: other nodes may still work.
            Ok(Allocation::Unfit(
                alloc
                    .pools
                    .iter()
                    .any(|p| p.invalid)
                    .then(|| "invalid resource pools were encountered".to_owned()),
            ))
        }
        Ok(true) => Ok(Allocation::Allocated(alloc.finish())),
    }
}

/// `namespace/name` of a claim.
pub fn claim_key(claim: &ResourceClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or("default"),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Why `claims` do not fit on `node`, in words, for `--explain` (after [`allocate`]
/// said [`Allocation::Unfit`]): each request that cannot be met even on its own (how
/// many devices it wants, how many of the node's devices match its class and
/// selectors, how many of those are free); else each claim whose requests cannot be
/// met together; else the claims that fit one by one but not all together.
pub fn explain_unfit(
    state: &DraCatalog,
    devices: &Devices<'_>,
    allocated: &AllocatedDevices,
    claims: &[ClaimToAllocate],
    node: &NodeInfo,
) -> Vec<String> {
    let mut search = Search::new(state, devices, allocated, claims, node);
    let mut notes = Vec::new();
    if search.pools.is_empty() {
        return claims
            .iter()
            .map(|c| {
                format!(
                    "claim {}: no ResourceSlice publishes devices for this node",
                    claim_key(&c.claim)
                )
            })
            .collect();
    }
    for (ci, claim) in claims.iter().enumerate() {
        for (ri, request) in claim.requests.iter().enumerate() {
            let mut parts = Vec::new();
            let mut fits = false;
            for (si, data) in request.alternatives.iter().enumerate() {
                let Ok((matching, free)) = search.count_matching(ci, ri, si, data) else {
                    // A CEL runtime error: Filter reports it as an error already.
                    fits = true;
                    break;
                };
                let (wanted, ok) = match data.count {
                    Some(n) => (format!("{n} device(s)"), free >= n),
                    None => ("all devices".to_owned(), matching > 0 && free == matching),
                };
                fits |= ok;
                parts.push(format!(
                    "request {} wants {wanted} of class {}: {matching} on this node match, {free} of them free",
                    data.full_name(),
                    data.class_name
                ));
            }
            if !fits {
                notes.push(format!(
                    "claim {}: {}",
                    claim_key(&claim.claim),
                    parts.join("; ")
                ));
            }
        }
    }
    if !notes.is_empty() {
        return notes;
    }
    let mut alone = Vec::new();
    for (ci, claim) in claims.iter().enumerate() {
        match allocate(state, devices, allocated, &claims[ci..=ci], node) {
            Ok(Allocation::Unfit(_)) => notes.push(format!(
                "claim {}: its requests cannot be met together on this node (not enough distinct free devices, or a matchAttribute constraint)",
                claim_key(&claim.claim)
            )),
            _ => alone.push(claim_key(&claim.claim)),
        }
    }
    if notes.is_empty() {
        notes.push(format!(
            "claims {}: each can be allocated on its own, but not all together on this node (not enough distinct free devices)",
            alone.join(", ")
        ));
    }
    notes
}
