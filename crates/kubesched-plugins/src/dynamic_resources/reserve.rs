//! DynamicResources' Reserve, Unreserve and PreBind: Reserve marks the chosen node's
//! allocations in flight; PreBind writes the claims as kube-scheduler's `bindClaim` does
//! (the delete-protection finalizer, the allocation and the pod's `reservedFor` entry,
//! retried on a conflict) and assumes them, or in a simulation only assumes them, then
//! waits for binding conditions; Unreserve takes back what Reserve marked and PreBind
//! wrote.

use std::sync::Arc;

use futures_executor::block_on;
use k8s_openapi::api::resource::v1::{
    AllocationResult, ResourceClaim, ResourceClaimConsumerReference, ResourceClaimStatus,
};
use kubesched_framework::{
    ClusterWriter, Code, CycleState, DraState, PodInfo, PreBindFuture, PreBindPlugin,
    ReservePlugin, Status,
};

use super::state::{CycleData, PodClaims, pre_filter_state_missing};
use super::{DynamicResources, binding, claims, extended};

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
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        if let Some(missing) = pre_filter_state_missing(state) {
            return missing;
        }
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return Status::success();
        };
        if data.to_allocate.is_empty() && data.extended.is_none() {
            return Status::success();
        }
        let allocations = data
            .node_allocations
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let Some(results) = allocations.get(node) else {
            if data.to_allocate.is_empty() {
                // Extended resources the node gives itself: nothing to allocate.
                return Status::success();
            }
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
        let node_claim = data
            .node_extended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(node)
            .cloned();
        if let (Some(c), Some(allocation)) = (node_claim, results.get(data.to_allocate.len())) {
            dra.signal_pending_allocation(
                pod.namespace(),
                &extended::pending_name(pod),
                allocation.clone(),
            );
            *data
                .reserved_extended
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some((c, allocation.clone()));
        }
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _: &str) {
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return;
        };
        {
            let mut reserved = data.reserved.lock().unwrap_or_else(|e| e.into_inner());
            for (index, claim) in data.to_allocate_index.iter().zip(&data.to_allocate) {
                let (ns, name) = split_key(&claim.claim);
                dra.remove_pending_allocation(&ns, &name);
                reserved[*index] = None;
            }
        }
        if data
            .reserved_extended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .is_some()
        {
            dra.remove_pending_allocation(pod.namespace(), &extended::pending_name(pod));
        }
        let Some(writer) = &self.writer else {
            return;
        };
        let created = data
            .written_extended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(claim) = created {
            // The claim PreBind created is deleted, as kube-scheduler's Unreserve does;
            // a failure is logged by the writer and the claim found on the next try.
            let _ = block_on(extended::delete_claim(writer.as_ref(), &claim));
        }
        // What PreBind wrote: the pod leaves `reservedFor` (a strategic merge patch, so
        // that the latest claim is not needed; the claim's UID as a precondition). The
        // allocation stays, as kube-scheduler leaves it (a claim reserved for nobody is
        // deallocated by the resourceclaim controller, or used by the pod's next try).
        let written = data.written.lock().unwrap_or_else(|e| e.into_inner());
        for (index, original) in data.claims.iter().enumerate() {
            let claim = written[index].as_ref().unwrap_or(original);
            let allocated = claim
                .status
                .as_ref()
                .is_some_and(|s| s.allocation.is_some());
            if !allocated || !claims::reserved_for_pod(claim, pod) {
                continue;
            }
            let (ns, name) = split_key(claim);
            let patch = serde_json::json!({
                "metadata": {"uid": claim.metadata.uid},
                "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid()}]},
            });
            // A failure is logged by the writer; the pod's next try comes here again.
            let _ = block_on(writer.patch_resource_claim_status(&ns, &name, &patch));
        }
    }
}

/// The finalizer that keeps an allocated claim from being deleted while in use
/// (`resource.kubernetes.io/delete-protection`), added with the allocation.
pub const DELETE_PROTECTION_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

/// How many times a claim write is tried when the claim changed meanwhile
/// (client-go's `retry.DefaultRetry`: 5 steps, 10 ms apart).
const CONFLICT_RETRIES: usize = 5;

/// A failed attempt of [`bind_claim`]: whether it was a conflict (retried), and the
/// message.
struct Failed {
    conflict: bool,
    message: String,
}

impl Failed {
    fn new(e: &kubesched_framework::WriteError, context: String) -> Failed {
        Failed {
            conflict: e.is_conflict(),
            message: format!("{context}: {e}"),
        }
    }

    fn fatal(message: String) -> Failed {
        Failed {
            conflict: false,
            message,
        }
    }
}

/// kube-scheduler's `bindClaim`: writes the finalizer and the allocation (when this
/// cycle allocated the claim) and the pod's `reservedFor` entry through the API,
/// re-reading the claim and trying again when it changed meanwhile.
pub(super) async fn bind_claim(
    writer: &dyn ClusterWriter,
    claim: &ResourceClaim,
    allocation: Option<&AllocationResult>,
    pod: &PodInfo,
) -> Result<ResourceClaim, String> {
    let (ns, name) = split_key(claim);
    let key = format!("{ns}/{name}");
    let mut claim = claim.clone();
    let mut attempt = 0;
    loop {
        if attempt > 0 {
            writer.sleep(std::time::Duration::from_millis(10)).await;
            claim = writer
                .get_resource_claim(&ns, &name)
                .await
                .map_err(|e| format!("get updated claim {key} after conflict: {e}"))?;
        }
        attempt += 1;
        match try_bind_claim(writer, claim.clone(), allocation, pod, &key).await {
            Ok(c) => return Ok(c),
            Err(f) if f.conflict && attempt < CONFLICT_RETRIES => continue,
            Err(f) => return Err(f.message),
        }
    }
}

async fn try_bind_claim(
    writer: &dyn ClusterWriter,
    mut claim: ResourceClaim,
    allocation: Option<&AllocationResult>,
    pod: &PodInfo,
    key: &str,
) -> Result<ResourceClaim, Failed> {
    if claim.metadata.deletion_timestamp.is_some() {
        return Err(Failed::fatal(format!(
            "claim {key} got deleted in the meantime"
        )));
    }
    if let Some(allocation) = allocation {
        if claim
            .status
            .as_ref()
            .is_some_and(|s| s.allocation.is_some())
        {
            return Err(Failed::fatal(format!(
                "claim {key} got allocated elsewhere in the meantime"
            )));
        }
        let finalizers = claim.metadata.finalizers.get_or_insert_with(Vec::new);
        if !finalizers.iter().any(|f| f == DELETE_PROTECTION_FINALIZER) {
            finalizers.push(DELETE_PROTECTION_FINALIZER.to_owned());
            claim = writer
                .update_resource_claim(&claim)
                .await
                .map_err(|e| Failed::new(&e, format!("add finalizer to claim {key}")))?;
        }
        claim
            .status
            .get_or_insert_with(ResourceClaimStatus::default)
            .allocation = Some(allocation.clone());
    }
    claim
        .status
        .get_or_insert_with(ResourceClaimStatus::default)
        .reserved_for
        .get_or_insert_with(Vec::new)
        .push(consumer(pod));
    writer
        .update_resource_claim_status(&claim)
        .await
        .map_err(|e| {
            let what = if allocation.is_some() {
                "add allocation and reservation to claim"
            } else {
                "add reservation to claim"
            };
            Failed::new(&e, format!("{what} {key}"))
        })
}

pub(super) fn consumer(pod: &PodInfo) -> ResourceClaimConsumerReference {
    ResourceClaimConsumerReference {
        resource: "pods".into(),
        name: pod.name().to_owned(),
        uid: pod.uid().to_owned(),
        api_group: None,
    }
}

impl PreBindPlugin for DynamicResources {
    /// kube-scheduler's: Skip for a pod without claims (nor an extended resource
    /// claim to create), where `pre_bind` neither writes nor waits.
    fn pre_bind_pre_flight(&self, state: &CycleState, _: &PodInfo, _: &str) -> Status {
        let (Some(CycleData(data)), Some(_)) = (state.read::<CycleData>(), &self.dra) else {
            return Status::skip();
        };
        let extended = data
            .reserved_extended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if data.claims.is_empty() && !extended {
            Status::skip()
        } else {
            Status::success()
        }
    }

    /// kube-scheduler's PreBind on the calling thread: binds each claim not yet
    /// reserved for the pod, creates and binds the extended resource claim, then waits
    /// for binding conditions. In a simulation (no writer) the decisions are assumed,
    /// as if the API server took them.
    fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, _: &str) -> Status {
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return Status::success();
        };
        let Some(writer) = &self.writer else {
            let (reserved, reserved_extended) = data.reservations();
            assume_bound(dra, data, &reserved, pod);
            if let Some((c, allocation)) = reserved_extended {
                dra.assume_claim(Arc::new(extended::simulated_claim(
                    c.claim(),
                    &allocation,
                    pod,
                )));
                dra.remove_pending_allocation(pod.namespace(), &extended::pending_name(pod));
            }
            return Status::success();
        };
        block_on(self.bind_pod_claims(data, dra, writer, Arc::new(pod.clone())))
    }

    /// The same PreBind as a future, where there is a writer.
    fn pre_bind_async(
        &self,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        _: &str,
    ) -> Option<PreBindFuture> {
        let (Some(CycleData(data)), Some(dra)) = (state.read::<CycleData>(), &self.dra) else {
            return Some(Box::pin(std::future::ready(Status::success())));
        };
        let writer = self.writer.as_ref()?;
        Some(self.bind_pod_claims(data, dra, writer, pod.clone()))
    }
}

impl DynamicResources {
    /// kube-scheduler's PreBind with a cluster to write to: binds each claim not yet
    /// reserved for the pod ([`bind_claim`]) and assumes what the API server answered,
    /// creates and binds the pod's extended resource claim, then (with
    /// DRADeviceBindingConditions) waits for the drivers to report the devices ready.
    fn bind_pod_claims(
        &self,
        data: &Arc<PodClaims>,
        dra: &Arc<DraState>,
        writer: &Arc<dyn ClusterWriter>,
        pod: Arc<PodInfo>,
    ) -> PreBindFuture {
        let (reserved, reserved_extended) = data.reservations();
        let (data, dra, writer) = (data.clone(), dra.clone(), writer.clone());
        let binding_conditions = self.features.binding_conditions;
        Box::pin(async move {
            let writer = writer.as_ref();
            for (index, claim) in data.claims.iter().enumerate() {
                if claims::reserved_for_pod(claim, &pod) {
                    continue;
                }
                let (ns, name) = split_key(claim);
                let allocation = reserved[index].as_ref();
                let result = bind_claim(writer, claim, allocation, &pod).await;
                if allocation.is_some() {
                    if let Ok(written) = &result {
                        dra.assume_claim(Arc::new(written.clone()));
                    }
                    dra.remove_pending_allocation(&ns, &name);
                }
                match result {
                    Ok(written) => {
                        data.written.lock().unwrap_or_else(|e| e.into_inner())[index] =
                            Some(Arc::new(written));
                    }
                    Err(message) => return Status::error(message),
                }
            }
            if let Some((c, allocation)) = reserved_extended {
                let result = extended::create_and_bind(writer, &c, &allocation, &pod, |claim| {
                    *data
                        .written_extended
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(claim.clone()));
                })
                .await;
                if let Ok(written) = &result {
                    dra.assume_claim(Arc::new(written.clone()));
                }
                dra.remove_pending_allocation(pod.namespace(), &extended::pending_name(&pod));
                if let Err(message) = result {
                    return Status::error(message);
                }
            }
            if !binding_conditions {
                return Status::success();
            }
            // DRADeviceBindingConditions: wait for the drivers to report the devices ready.
            let waiting: Vec<(String, String)> = {
                let written = data.written.lock().unwrap_or_else(|e| e.into_inner());
                let created = data
                    .written_extended
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                data.claims
                    .iter()
                    .enumerate()
                    .filter(|(i, c)| {
                        binding::has_binding_conditions(written[*i].as_deref().unwrap_or(c))
                    })
                    .map(|(_, c)| split_key(c))
                    .chain(
                        created
                            .filter(|c| binding::has_binding_conditions(c))
                            .map(|c| split_key(&c)),
                    )
                    .collect()
            };
            if waiting.is_empty() {
                return Status::success();
            }
            let get = |ns: &str, name: &str| {
                let read = writer.get_resource_claim(ns, name);
                let key = format!("{ns}/{name}");
                async move { read.await.map_err(|e| format!("get claim {key}: {e}")) }
            };
            let sleep = |d| writer.sleep(d);
            match binding::wait(
                &waiting,
                get,
                sleep,
                binding::BINDING_TIMEOUT,
                binding::POLL_INTERVAL,
            )
            .await
            {
                Ok(()) => Status::success(),
                Err(message) => Status::error(message),
            }
        })
    }
}

/// The simulator's PreBind: the claims as the API server would hold them after
/// kube-scheduler's writes, assumed.
fn assume_bound(
    dra: &DraState,
    data: &PodClaims,
    reserved: &[Option<AllocationResult>],
    pod: &PodInfo,
) {
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
            consumers.push(consumer(pod));
        }
        dra.assume_claim(Arc::new(claim));
        if reserved[index].is_some() {
            dra.remove_pending_allocation(&ns, &name);
        }
    }
}
