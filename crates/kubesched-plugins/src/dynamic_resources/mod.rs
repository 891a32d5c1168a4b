//! DynamicResources (DRA with structured parameters), as kube-scheduler v1.35 runs it.
//!
//! - PreFilter finds the pod's ResourceClaims (by name, or generated from a template and
//!   named in `pod.status.resourceClaimStatuses`), rejects the pod on every node when one
//!   is missing, being deleted, not owned by the pod, reserved for too many consumers,
//!   being allocated for another pod, or names a missing DeviceClass, and prepares the
//!   claims that still need an allocation ([`claims`]).
//! - Filter rejects a node where an allocated claim is not available
//!   (`resourceclaim not available on the node`) and runs the [`allocator`] for the
//!   others (`cannot allocate all claims`), keeping each node's allocation.
//! - Score / NormalizeScore rank nodes by the `firstAvailable` subrequests they give
//!   ([`scoring`]).
//! - Reserve marks the chosen node's allocations in flight, PreBind writes them and the
//!   pod's `reservedFor` entry into the claims held by the shared [`DraState`] (the
//!   claim assume cache), so later pods see the devices taken; Unreserve drops what
//!   Reserve marked.
//! - PostFilter has no claims to deallocate ("no new claims to deallocate").
//! - When the cycle is explained (`CycleState::explain`), Filter's rejections carry
//!   notes naming the claim and request that did not fit ([`allocator::explain_unfit`]).
//!
//! The objects come from the framework [`Handle`]'s `dra`; without one (a runtime that
//! does not watch `resource.k8s.io`), a pod with claims is rejected with a message that
//! says so, never passed silently.

pub mod allocator;
pub mod cel;
pub mod claims;
pub mod scoring;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use k8s_openapi::api::resource::v1::{
    AllocationResult, ResourceClaim, ResourceClaimConsumerReference, ResourceClaimStatus,
};
use kubesched_framework::{
    Code, CycleState, DeviceId, DraState, FilterPlugin, Handle, NodeInfo, NodeScore, NodeToStatus,
    Plugin, PodInfo, PostFilterContext, PostFilterPlugin, PostFilterResult, PreBindPlugin,
    PreFilterPlugin, PreFilterResult, ReservePlugin, ScoreExtensions, ScorePlugin, Snapshot,
    Status,
};

use crate::node_affinity::NodeSelector;
use allocator::{Allocation, ClaimToAllocate, Devices};
use cel::{DeviceValue, Selector};

/// The plugin's name.
pub const NAME: &str = "DynamicResources";

/// Filter's reason when no combination of free devices fits the claims on a node.
pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";
/// Filter's reason when an allocated claim cannot be used on a node.
pub const NOT_AVAILABLE: &str = "resourceclaim not available on the node";

/// Dynamic resource allocation.
#[derive(Default)]
pub struct DynamicResources {
    dra: Option<Arc<DraState>>,
    /// The CEL context, built once.
    context: OnceLock<cel_context::Shared>,
    /// Per slice, per device: the `device` variable of CEL selectors, and the id.
    device_values: OnceLock<DeviceTables>,
    /// The pools of each node.
    pools: allocator::PoolCache,
    /// Compiled selectors by expression.
    selectors: Mutex<HashMap<String, Result<Selector, String>>>,
}

mod cel_context {
    /// The CEL evaluation context, shared by the parallel Filter calls.
    pub struct Shared(pub cel::Context<'static, 'static>);
}

impl std::fmt::Debug for DynamicResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicResources")
            .field("dra", &self.dra.is_some())
            .finish()
    }
}

impl DynamicResources {
    /// The plugin over the DRA objects of `handle` (none: pods with claims are rejected).
    pub fn new(handle: &Handle) -> DynamicResources {
        DynamicResources {
            dra: handle.dra.clone(),
            ..DynamicResources::default()
        }
    }

    fn compile(&self, expression: &str) -> Result<Selector, String> {
        let mut cache = self.selectors.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(expression.to_owned())
            .or_insert_with(|| cel::compile(expression))
            .clone()
    }

    fn devices<'a>(&'a self, dra: &DraState) -> Devices<'a> {
        let (values, ids) = self.device_values.get_or_init(|| {
            let values = dra
                .slices()
                .iter()
                .map(|s| {
                    s.spec
                        .devices
                        .iter()
                        .flatten()
                        .map(|d| DeviceValue::new(&s.spec.driver, d))
                        .collect()
                })
                .collect();
            let ids = dra
                .slices()
                .iter()
                .map(|s| {
                    s.spec
                        .devices
                        .iter()
                        .flatten()
                        .map(|d| DeviceId::new(&s.spec.driver, &s.spec.pool.name, &d.name))
                        .collect()
                })
                .collect();
            (values, ids)
        });
        let context = self
            .context
            .get_or_init(|| cel_context::Shared(cel::context()));
        Devices {
            context: &context.0,
            values,
            ids,
            pools: &self.pools,
        }
    }
}

/// Per slice of the DRA state, per device: the CEL `device` variable and the id.
type DeviceTables = (Vec<Vec<DeviceValue>>, Vec<Vec<DeviceId>>);

/// What PreFilter found, for the later extension points of the cycle.
#[derive(Clone)]
struct CycleData(Arc<PodClaims>);

struct PodClaims {
    /// Every claim of the pod, in order.
    claims: Vec<Arc<ResourceClaim>>,
    /// For allocated claims with a node selector: where they can be used.
    available_on: Vec<Option<NodeSelector>>,
    /// The claims to allocate, in order.
    to_allocate: Vec<ClaimToAllocate>,
    /// The index in `claims` of each claim to allocate.
    to_allocate_index: Vec<usize>,
    /// Devices held by other claims when the cycle started.
    allocated: HashSet<DeviceId>,
    /// Filter's allocations per node, one per claim to allocate.
    node_allocations: Mutex<HashMap<String, Vec<AllocationResult>>>,
    /// Reserve's allocations, per claim index.
    reserved: Mutex<Vec<Option<AllocationResult>>>,
}

fn unschedulable(message: impl Into<kubesched_framework::Reason>) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, message)
}

impl Plugin for DynamicResources {
    fn name(&self) -> &str {
        NAME
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::dynamic_resources()
    }
    fn as_pre_filter(self: Arc<Self>) -> Option<Arc<dyn PreFilterPlugin>> {
        Some(self)
    }
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        Some(self)
    }
    fn as_post_filter(self: Arc<Self>) -> Option<Arc<dyn PostFilterPlugin>> {
        Some(self)
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        Some(self)
    }
    fn as_reserve(self: Arc<Self>) -> Option<Arc<dyn ReservePlugin>> {
        Some(self)
    }
    fn as_pre_bind(self: Arc<Self>) -> Option<Arc<dyn PreBindPlugin>> {
        Some(self)
    }
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.delete::<CycleData>();
        let Some(first) = pod.spec().resource_claims.iter().flatten().next() else {
            return (None, Status::skip());
        };
        let Some(dra) = &self.dra else {
            return (
                None,
                unschedulable(format!(
                    "pod {} uses resource claim {:?}: no ResourceClaims, DeviceClasses or ResourceSlices are available to this scheduler",
                    pod.key(),
                    first.name
                )),
            );
        };
        let claims = match claims::pod_claims(dra, pod) {
            Ok(c) => c,
            Err(reason) => return (None, unschedulable(reason)),
        };
        if claims.is_empty() {
            return (None, Status::skip());
        }
        let mut available_on = Vec::with_capacity(claims.len());
        let mut to_allocate = Vec::new();
        let mut to_allocate_index = Vec::new();
        for (index, claim) in claims.iter().enumerate() {
            let allocation = claim.status.as_ref().and_then(|s| s.allocation.as_ref());
            if allocation.is_some()
                && !claims::can_be_reserved(claim)
                && !claims::reserved_for_pod(claim, pod)
            {
                return (None, unschedulable("resourceclaim in use"));
            }
            match allocation {
                Some(a) => available_on.push(a.node_selector.as_ref().map(NodeSelector::from_api)),
                None => {
                    available_on.push(None);
                    let key = allocator::claim_key(claim);
                    let (ns, name) = key.split_once('/').unwrap_or(("default", &key));
                    if dra.has_pending_allocation(ns, name) {
                        return (
                            None,
                            unschedulable(format!(
                                "resource claim {key} is in the process of being allocated"
                            )),
                        );
                    }
                    match claims::prepare_claim(dra, claim, &|e| self.compile(e)) {
                        Ok(Ok(c)) => {
                            to_allocate.push(c);
                            to_allocate_index.push(index);
                        }
                        Ok(Err(reason)) => return (None, unschedulable(reason)),
                        Err(error) => return (None, Status::new(Code::Error, error)),
                    }
                }
            }
        }
        let allocated = if to_allocate.is_empty() {
            HashSet::new()
        } else {
            dra.allocated_devices()
        };
        let n = claims.len();
        state.write(CycleData(Arc::new(PodClaims {
            claims,
            available_on,
            to_allocate,
            to_allocate_index,
            allocated,
            node_allocations: Mutex::new(HashMap::new()),
            reserved: Mutex::new(vec![None; n]),
        })));
        (None, Status::success())
    }
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return Status::success();
        };
        if let Some(index) = data
            .available_on
            .iter()
            .position(|selector| selector.as_ref().is_some_and(|s| !s.matches(node)))
        {
            let status = unschedulable(NOT_AVAILABLE);
            if !state.explain() {
                return status;
            }
            return status.with_notes([format!(
                "claim {}: allocated to devices that this node cannot use (the allocation's node selector does not match it)",
                allocator::claim_key(&data.claims[index])
            )]);
        }
        if data.to_allocate.is_empty() {
            return Status::success();
        }
        let devices = self.devices(dra);
        match allocator::allocate(dra, &devices, &data.allocated, &data.to_allocate, node) {
            Err(error) => Status::new(Code::Error, error),
            Ok(Allocation::Unfit(reason)) => {
                let status = unschedulable(reason.unwrap_or_else(|| CANNOT_ALLOCATE.to_owned()));
                if !state.explain() {
                    return status;
                }
                status.with_notes(allocator::explain_unfit(
                    dra,
                    &devices,
                    &data.allocated,
                    &data.to_allocate,
                    node,
                ))
            }
            Ok(Allocation::Allocated(results)) => {
                data.node_allocations
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(node.name().to_owned(), results);
                Status::success()
            }
        }
    }
}

impl ScorePlugin for DynamicResources {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(CycleData(data)) = state.read::<CycleData>() else {
            return Ok(0);
        };
        let allocations = data
            .node_allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(results) = allocations.get(node.name()) else {
            return Ok(0);
        };
        Ok(scoring::score(&data.to_allocate, results))
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for DynamicResources {
    fn normalize_score(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        crate::helper::normalize_to_max(false, scores);
        Status::success()
    }
}

fn split_key(claim: &ResourceClaim) -> (String, String) {
    (
        claim
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned()),
        claim.metadata.name.clone().unwrap_or_default(),
    )
}

impl ReservePlugin for DynamicResources {
    fn reserve(&self, state: &mut CycleState, _: &PodInfo, node: &str) -> Status {
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return Status::success();
        };
        if data.to_allocate.is_empty() {
            return Status::success();
        }
        let allocations = data
            .node_allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(results) = allocations.get(node) else {
            return Status::new(
                Code::Error,
                format!("claims were not allocated for node {node}"),
            );
        };
        let mut reserved = data.reserved.lock().unwrap_or_else(|e| e.into_inner());
        for ((index, claim), allocation) in data
            .to_allocate_index
            .iter()
            .zip(&data.to_allocate)
            .zip(results)
        {
            let (ns, name) = split_key(&claim.claim);
            dra.signal_pending_allocation(&ns, &name, allocation.clone());
            reserved[*index] = Some(allocation.clone());
        }
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _: &PodInfo, _: &str) {
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return;
        };
        let mut reserved = data.reserved.lock().unwrap_or_else(|e| e.into_inner());
        for (index, claim) in data.to_allocate_index.iter().zip(&data.to_allocate) {
            let (ns, name) = split_key(&claim.claim);
            dra.remove_pending_allocation(&ns, &name);
            reserved[*index] = None;
        }
    }
}

impl PreBindPlugin for DynamicResources {
    fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return Status::success();
        };
        let reserved = data.reserved.lock().unwrap_or_else(|e| e.into_inner());
        for (index, original) in data.claims.iter().enumerate() {
            let (ns, name) = split_key(original);
            // The claim as it is now: another pod sharing it may have written it since.
            let current = dra.claim(&ns, &name).unwrap_or_else(|| original.clone());
            let mut claim = (*current).clone();
            let status = claim
                .status
                .get_or_insert_with(ResourceClaimStatus::default);
            if let Some(allocation) = &reserved[index]
                && status.allocation.is_none()
            {
                status.allocation = Some(allocation.clone());
            }
            let consumers = status.reserved_for.get_or_insert_with(Vec::new);
            if !consumers.iter().any(|c| c.uid == pod.uid()) {
                consumers.push(ResourceClaimConsumerReference {
                    resource: "pods".into(),
                    name: pod.name().to_owned(),
                    uid: pod.uid().to_owned(),
                    api_group: None,
                });
            }
            dra.assume_claim(Arc::new(claim));
            if reserved[index].is_some() {
                dra.remove_pending_allocation(&ns, &name);
            }
        }
        Status::success()
    }
}

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        _: &PostFilterContext<'_>,
        _: &CycleState,
        _: &PodInfo,
        _: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        (
            None,
            Status::new(Code::Unschedulable, "no new claims to deallocate"),
        )
    }
}
