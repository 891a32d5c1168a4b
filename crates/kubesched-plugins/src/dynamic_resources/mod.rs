//! DynamicResources (DRA with structured parameters), as kube-scheduler v1.35 runs it.
//!
//! - PreFilter finds the pod's ResourceClaims (by name, or generated from a template and
//!   named in `pod.status.resourceClaimStatuses`), rejects the pod on every node when one
//!   is missing, being deleted, not owned by the pod, reserved for too many consumers,
//!   being allocated for another pod, or names a missing DeviceClass, and prepares the
//!   claims that still need an allocation ([`claims`]).
//! - Filter runs the [`allocator`] for the claims to allocate (`cannot allocate all
//!   claims`), then rejects a node where an allocated claim is not available
//!   (`resourceclaim not available on the node`, remembered for PostFilter), keeping
//!   each node's allocation.
//! - Score / NormalizeScore rank nodes by the `firstAvailable` subrequests they give
//!   ([`scoring`]).
//! - Reserve marks the chosen node's allocations in flight. PreBind, with a
//!   [`ClusterWriter`] (the runtime), writes them as kube-scheduler's `bindClaim` does:
//!   the `resource.kubernetes.io/delete-protection` finalizer, then the allocation and
//!   the pod's `reservedFor` entry in the claim's status, re-reading the claim on a
//!   conflict; the written claim is assumed in the shared [`DraState`] (the claim
//!   assume cache) until the watch shows it. Without a writer (the simulator) PreBind
//!   only assumes. Unreserve drops what Reserve marked and takes the pod out of the
//!   `reservedFor` PreBind wrote (the allocation stays, as in kube-scheduler).
//! - With DRADeviceBindingConditions, the runtime's PreBind then waits (up to 600 s)
//!   for the drivers to report the allocated devices' binding conditions ([`binding`]).
//! - PostFilter, as kube-scheduler's: an Error `not found` when PreFilter never ran (an
//!   earlier PreFilter plugin rejected the pod as unresolvable, so no cycle state was
//!   written); `no new claims to deallocate` for a pod without claims (or whose claims
//!   PreFilter rejected); otherwise it deallocates an allocated claim that Filter found
//!   unavailable on some node and that no other pod has reserved (`deallocation of
//!   ResourceClaim completed`, the claim's allocation and `reservedFor` cleared through
//!   the API; nothing is assumed, so a simulation keeps the claim allocated), or answers
//!   `still not schedulable`.
//! - When the cycle is explained (`CycleState::explain`), Filter's rejections carry
//!   notes naming the claim and request that did not fit ([`allocator::explain_unfit`]).
//!
//! - With DRAExtendedResource, the pod's extended resources that a DeviceClass backs
//!   are allocated through one more claim, created in PreBind ([`extended`]).
//!
//! The objects come from the framework [`Handle`]'s `dra`; without one, or when the
//! runtime cannot list `resource.k8s.io` (not served, or forbidden), a pod with claims
//! is rejected with a message that says so, never passed silently.
//!
//! This file holds the plugin, its device tables and Score; the cycle state is in
//! `state.rs`, and the other extension points are in files by phase: PreFilter and
//! Filter in `filter.rs`, PostFilter in `post_filter.rs`, Reserve, Unreserve and PreBind
//! in `reserve.rs`.

pub mod allocator;
pub mod binding;
pub mod capacity;
pub mod cel;
pub mod claims;
pub mod counters;
pub mod extended;
mod filter;
pub mod pools;
mod post_filter;
mod reserve;
pub mod scoring;
mod state;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use kubesched_framework::{
    ClusterWriter, Code, CycleState, DeviceId, DraCatalog, DraState, Handle, NodeInfo, NodeScore,
    Plugin, PodInfo, ScoreExtensions, ScorePlugin, Status,
};

use allocator::Devices;
use cel::{DeviceValue, Selector};
use state::{CycleData, pre_filter_state_missing};

pub use reserve::DELETE_PROTECTION_FINALIZER;
// extended.rs writes the claim it creates as PreBind writes the pod's claims.
use reserve::{bind_claim, consumer};

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
    /// Where PreBind and Unreserve write claims; `None` in simulations.
    writer: Option<Arc<dyn ClusterWriter>>,
    /// The CEL context, built once.
    context: OnceLock<cel_context::Shared>,
    /// The device tables and node pools of the latest catalog.
    tables: Mutex<Option<Arc<DeviceTables>>>,
    /// The DRA gates the allocator honours.
    features: allocator::AllocatorFeatures,
    /// Compiled selectors by expression.
    selectors: Mutex<HashMap<String, Result<Selector, String>>>,
    /// DRAExtendedResource is on.
    extended_resource: bool,
    /// Score counts the pod's allocated claims too (v1.36); v1.35 fails on them.
    scores_allocated_claims: bool,
}

/// What the allocator reads of one catalog, built once per catalog: per slice, per
/// device, the CEL `device` variable and the id; and the pools of each node.
struct DeviceTables {
    generation: u64,
    values: Vec<Vec<DeviceValue>>,
    ids: Vec<Vec<DeviceId>>,
    pools: pools::PoolCache,
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
            writer: handle.writer.clone(),
            features: allocator::AllocatorFeatures::of(&handle.features),
            extended_resource: handle.features.dra_extended_resource(),
            scores_allocated_claims: handle.features.dra_score_counts_allocated_claims(),
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

    /// The device tables of `catalog`: those built already when it is the catalog
    /// they were built on, else new ones.
    fn tables(&self, catalog: &DraCatalog) -> Arc<DeviceTables> {
        let mut cached = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = cached.as_ref()
            && t.generation == catalog.generation()
        {
            return t.clone();
        }
        let values = catalog
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
        let ids = catalog
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
        let tables = Arc::new(DeviceTables {
            generation: catalog.generation(),
            values,
            ids,
            pools: pools::PoolCache::default(),
        });
        *cached = Some(tables.clone());
        tables
    }

    fn devices<'a>(&'a self, tables: &'a DeviceTables) -> Devices<'a> {
        let context = self
            .context
            .get_or_init(|| cel_context::Shared(cel::context()));
        Devices {
            context: &context.0,
            values: &tables.values,
            ids: &tables.ids,
            pools: &tables.pools,
            features: self.features,
        }
    }
}

fn unschedulable(message: impl Into<kubesched_framework::Reason>) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, message)
}

impl Plugin for DynamicResources {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler cannot tell whether a pod's claims bind it to one node, so a pod
    // with claims is not signed; other pods do not matter to the plugin.
    /// Node by node only for a pod without ResourceClaims or extended resources (which
    /// DeviceClasses may back): devices are allocated from a cluster-wide pool.
    fn node_local(&self, pod: &PodInfo) -> bool {
        !has_claims(pod)
            && (!self.extended_resource || !crate::helper::requests_extended_resources(pod))
    }
    /// Also node by node for a pod without claims when no DeviceClass backs its
    /// extended resources now: the plugin then has nothing to allocate.
    fn node_scoped(&self, pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        self.node_local(pod)
            || (!has_claims(pod)
                && self.dra.as_ref().is_some_and(|dra| {
                    !crate::helper::dra_backs_requested_extended_resources(pod, dra)
                }))
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, Status> {
        if has_claims(pod) {
            return Err(kubesched_framework::signature::unsignable(
                "pods with dra resource claims are not signable",
            ));
        }
        Ok(Vec::new())
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::dynamic_resources()
    }
    kubesched_framework::extension_points!(PreFilter, Filter, PostFilter, Score, Reserve, PreBind);
}

/// Whether the pod lists ResourceClaims.
fn has_claims(pod: &PodInfo) -> bool {
    pod.spec()
        .resource_claims
        .as_ref()
        .is_some_and(|c| !c.is_empty())
}

impl ScorePlugin for DynamicResources {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        if let Some(missing) = pre_filter_state_missing(state) {
            return Err(missing);
        }
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
        let mut score = scoring::score(&data.to_allocate, results);
        if self.scores_allocated_claims {
            score += data
                .claims
                .iter()
                .map(|c| scoring::allocated_claim_score(c))
                .sum::<i64>();
        } else if let Some(error) =
            scoring::claims_beyond_allocations(data.claims.len(), results.len())
        {
            return Err(Status::error(error));
        }
        Ok(score)
    }

    /// A pod without claims scores 0 everywhere: the cycle state is read once for the
    /// run, not once per node.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        if let Some(missing) = pre_filter_state_missing(state) {
            return Err(missing);
        }
        if state.read::<CycleData>().is_none() {
            out.fill(0);
            return Ok(());
        }
        for (node, out) in nodes.iter().zip(out) {
            *out = self.score(state, pod, node)?;
        }
        Ok(())
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
    fn normalization(&self, _: &CycleState) -> kubesched_framework::Normalization {
        kubesched_framework::Normalization::ScaledToMax { reverse: false }
    }
}
