//! DynamicResources' cycle state: what PreFilter writes for the later extension points
//! (the pod's claims, the catalog and device tables they are allocated from, the claims
//! to allocate, and what Filter, Reserve and PreBind record per node and per claim), and
//! the marker that tells a later point whether PreFilter ran at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim};
use kubesched_framework::{AllocatedDevices, CycleState, DraCatalog, Status};

use super::allocator::ClaimToAllocate;
use super::{DeviceTables, extended};
use crate::node_affinity::NodeSelector;

/// What PreFilter found, for the later extension points of the cycle.
#[derive(Clone)]
pub(super) struct CycleData(pub(super) Arc<PodClaims>);

/// Written first thing by PreFilter (kube-scheduler writes its empty state there): without
/// it, PostFilter knows PreFilter never ran and fails as kube-scheduler's state read does.
#[derive(Clone)]
pub(super) struct PreFilterRan;

pub(super) struct PodClaims {
    /// Every claim of the pod, in order.
    pub(super) claims: Vec<Arc<ResourceClaim>>,
    /// The classes and slices the cycle allocates from, and their tables.
    pub(super) catalog: Arc<DraCatalog>,
    pub(super) tables: Arc<DeviceTables>,
    /// The claims as PreBind wrote them to the API server, per claim index (what
    /// Unreserve takes back).
    pub(super) written: Mutex<Vec<Option<Arc<ResourceClaim>>>>,
    /// For allocated claims with a node selector: where they can be used.
    pub(super) available_on: Vec<Option<NodeSelector>>,
    /// The claims to allocate, in order.
    pub(super) to_allocate: Vec<ClaimToAllocate>,
    /// The index in `claims` of each claim to allocate.
    pub(super) to_allocate_index: Vec<usize>,
    /// What other claims hold when the cycle started.
    pub(super) allocated: AllocatedDevices,
    /// Filter's allocations per node, one per claim to allocate.
    pub(super) node_allocations: Mutex<HashMap<String, Vec<AllocationResult>>>,
    /// Reserve's allocations, per claim index.
    pub(super) reserved: Mutex<Vec<Option<AllocationResult>>>,
    /// Indices of allocated claims that Filter found unavailable on some node.
    pub(super) unavailable: Mutex<std::collections::BTreeSet<usize>>,
    /// The pod's extended resources backed by DRA (DRAExtendedResource).
    pub(super) extended: Option<extended::ExtendedResources>,
    /// Per node where Filter allocated it: the extended resource claim (its allocation
    /// is the last of the node's allocations).
    pub(super) node_extended: Mutex<HashMap<String, Arc<extended::NodeClaim>>>,
    /// Reserve's extended resource claim and its allocation.
    pub(super) reserved_extended: Mutex<ReservedExtended>,
    /// The extended resource claim as PreBind created and wrote it.
    pub(super) written_extended: Mutex<Option<Arc<ResourceClaim>>>,
}

/// Reserve's extended resource claim and its allocation.
pub(super) type ReservedExtended = Option<(Arc<extended::NodeClaim>, AllocationResult)>;

impl PodClaims {
    /// What Reserve decided, as PreBind writes or assumes it: the allocation per claim
    /// index and the extended resource claim.
    pub(super) fn reservations(&self) -> (Vec<Option<AllocationResult>>, ReservedExtended) {
        let reserved = self
            .reserved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let extended = self
            .reserved_extended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        (reserved, extended)
    }
}

/// The error kube-scheduler's DynamicResources gives at a point that reads the state its
/// PreFilter writes (even for a pod without claims) when the profile runs that point
/// without its PreFilter: the cycle state's own "not found".
pub(super) fn pre_filter_state_missing(state: &CycleState) -> Option<Status> {
    state
        .read::<PreFilterRan>()
        .is_none()
        .then(|| Status::error("not found"))
}
