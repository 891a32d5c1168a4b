//! DynamicResources' PreFilter and Filter: PreFilter gathers the pod's claims, rejects
//! the pod when one cannot be used, prepares the claims that still need an allocation
//! and writes the cycle state; Filter runs the allocator on each node (and, with
//! DRAExtendedResource, for the pod's extended resources), rejects a node where an
//! allocated claim is not available, and keeps each node's allocation for Score and
//! Reserve.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kubesched_framework::{
    AllocatedDevices, Code, CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};

use super::allocator::{self, Allocation};
use super::state::{CycleData, PodClaims, PreFilterRan, pre_filter_state_missing};
use super::{
    CANNOT_ALLOCATE, DeviceTables, DynamicResources, NOT_AVAILABLE, claims, extended, pools,
    unschedulable,
};
use crate::node_affinity::NodeSelector;

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.delete::<CycleData>();
        state.write(PreFilterRan);
        let extended = match &self.dra {
            Some(dra) if self.extended_resource && dra.unavailable().is_none() => {
                extended::ExtendedResources::of(pod, &dra.catalog(), || {
                    dra.extended_resource_claim(pod.namespace(), pod.name(), pod.uid())
                })
            }
            _ => None,
        };
        let first = pod.spec().resource_claims.iter().flatten().next();
        if first.is_none() && extended.is_none() {
            return (None, Status::skip());
        }
        let reason = match &self.dra {
            None => Some(
                "no ResourceClaims, DeviceClasses or ResourceSlices are available to this scheduler"
                    .to_owned(),
            ),
            Some(dra) => dra.unavailable(),
        };
        if let (Some(first), Some(reason)) = (first, reason) {
            return (
                None,
                unschedulable(format!(
                    "pod {} uses resource claim {:?}: {}",
                    pod.key(),
                    first.name,
                    reason
                )),
            );
        }
        let Some(dra) = &self.dra else {
            return (None, Status::skip());
        };
        let catalog = dra.catalog();
        let claims = match claims::pod_claims(dra, pod) {
            Ok(c) => c,
            Err(reason) => return (None, unschedulable(reason)),
        };
        if claims.is_empty() && extended.is_none() {
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
                    match claims::prepare_claim(&catalog, claim, &|e| self.compile(e)) {
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
        let allocating = !to_allocate.is_empty() || extended.is_some();
        let allocated = if !allocating {
            AllocatedDevices::default()
        } else {
            dra.allocated_state(self.features.consumable_capacity)
        };
        let n = claims.len();
        let tables = if !allocating {
            Arc::new(DeviceTables {
                generation: 0,
                values: Vec::new(),
                ids: Vec::new(),
                pools: pools::PoolCache::default(),
            })
        } else {
            self.tables(&catalog)
        };
        state.write(CycleData(Arc::new(PodClaims {
            claims,
            catalog,
            tables,
            written: Mutex::new(vec![None; n]),
            available_on,
            to_allocate,
            to_allocate_index,
            allocated,
            node_allocations: Mutex::new(HashMap::new()),
            reserved: Mutex::new(vec![None; n]),
            unavailable: Mutex::new(std::collections::BTreeSet::new()),
            extended,
            node_extended: Mutex::new(HashMap::new()),
            reserved_extended: Mutex::new(None),
            written_extended: Mutex::new(None),
        })));
        (None, Status::success())
    }
}

impl FilterPlugin for DynamicResources {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if let Some(missing) = pre_filter_state_missing(state) {
            return missing;
        }
        let Some(CycleData(data)) = state.read::<CycleData>() else {
            return Status::success();
        };
        let node_claim = match self.filter_extended(data, pod, node) {
            Ok(c) => c,
            Err(status) => return status,
        };
        if node_claim.is_none() && data.claims.is_empty() {
            // Extended resources the node advertises: NodeResourcesFit's to check.
            return Status::success();
        }
        let to_allocate = node_claim
            .as_ref()
            .map_or(&data.to_allocate[..], |c| &c.to_allocate[..]);
        // As kube-scheduler: the claims to allocate are tried first (their failure is the
        // node's reason even when an allocated claim is not available there either); an
        // unavailable allocated claim is remembered for PostFilter only when they fit.
        let unavailable: Vec<usize> = data
            .available_on
            .iter()
            .enumerate()
            .filter(|(_, selector)| selector.as_ref().is_some_and(|s| !s.matches(node)))
            .map(|(i, _)| i)
            .collect();
        let mut allocated = None;
        if !to_allocate.is_empty() {
            let devices = self.devices(&data.tables);
            match allocator::allocate(&data.catalog, &devices, &data.allocated, to_allocate, node) {
                Err(error) => return Status::new(Code::Error, error),
                Ok(Allocation::Unfit(reason)) => {
                    let status =
                        unschedulable(reason.unwrap_or_else(|| CANNOT_ALLOCATE.to_owned()));
                    if !state.explain() {
                        return status;
                    }
                    return status.with_notes(allocator::explain_unfit(
                        &data.catalog,
                        &devices,
                        &data.allocated,
                        to_allocate,
                        node,
                    ));
                }
                Ok(Allocation::Allocated(results)) => allocated = Some(results),
            }
        }
        if let Some(&index) = unavailable.first() {
            data.unavailable
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(unavailable);
            let status = unschedulable(NOT_AVAILABLE);
            if !state.explain() {
                return status;
            }
            return status.with_notes([format!(
                "claim {}: allocated to devices that this node cannot use (the allocation's node selector does not match it)",
                allocator::claim_key(&data.claims[index])
            )]);
        }
        if let Some(results) = allocated {
            data.node_allocations
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(node.name().to_owned(), results);
            if let Some(c) = node_claim {
                data.node_extended
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(node.name().to_owned(), c);
            }
        }
        Status::success()
    }
}

impl DynamicResources {
    /// Filter's part for the pod's extended resources on `node`: the claim to allocate
    /// there, if the node needs one, or the node's rejection.
    fn filter_extended(
        &self,
        data: &PodClaims,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<Option<Arc<extended::NodeClaim>>, Status> {
        let Some(ext) = &data.extended else {
            return Ok(None);
        };
        if ext.stale() {
            return Err(unschedulable(extended::STALE_CLAIM));
        }
        match ext.needs(&data.catalog, node) {
            extended::NodeNeeds::CannotFit => Err(unschedulable(extended::CANNOT_FIT)),
            extended::NodeNeeds::Nothing => Ok(None),
            extended::NodeNeeds::Claim(_) if ext.existing_allocated() => Ok(None),
            extended::NodeNeeds::Claim(resources) => ext
                .node_claim(pod, &data.catalog, &data.to_allocate, resources, &|e| {
                    self.compile(e)
                })
                .map(Some)
                .map_err(|e| Status::new(Code::Error, e)),
        }
    }
}
