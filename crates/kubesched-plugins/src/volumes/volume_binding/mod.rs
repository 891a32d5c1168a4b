//! VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable on the node
//! (kube-scheduler v1.35).
//!
//! - PreFilter (Skip for a pod without claims) rejects the pod when a claim is missing
//!   (`persistentvolumeclaim "NAME" not found`; for a generic ephemeral volume `waiting
//!   for ephemeral volume controller to create the persistentvolumeclaim "POD-VOL"`), is
//!   Lost, is being deleted, or belongs to another pod; it then sorts the claims, read
//!   through the [`assume_cache`], into bound ones, unbound WaitForFirstConsumer ones
//!   and unbound Immediate ones (a claim whose class is missing, and a pre-bound claim
//!   without `pv.kubernetes.io/bind-completed`, count as Immediate), and rejects the pod
//!   if there is any of the last kind ("pod has unbound immediate
//!   PersistentVolumeClaims").
//! - Filter runs the [`binder`] for the node and remembers what it found.
//! - Reserve assumes it (the PV with a `claimRef`, the claim with
//!   `volume.kubernetes.io/selected-node`) in this instance's assume cache, where every
//!   later pod of the profile sees it; Unreserve forgets it.
//! - PreScore returns Skip: VolumeBinding scores only with the StorageCapacityScoring
//!   feature gate, off in v1.35.
//! - When the cycle is explained (`CycleState::explain`), rejections carry notes naming
//!   the claim that stopped the node and why ([`binder::explain_node`]), beside
//!   kube-scheduler's reasons, which stay word for word.

pub mod assume_cache;
pub mod binder;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim};
use kubesched_config::args::VolumeBindingArgs;
use kubesched_framework::storage::claim_class;
use kubesched_framework::{
    BindingView, ClusterEvent, ClusterWriter, Code, CycleState, FilterPlugin, Handle, NodeInfo,
    Plugin, PodInfo, PreBindFuture, PreBindPlugin, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ReservePlugin, ScorePlugin, Snapshot, Status, StorageObjects,
};

use super::{
    ANN_BIND_COMPLETED, VOLUME_BINDING, claim_not_found, ephemeral_claim_is_for_pod, storage_for,
    volume_claim_name,
};
use assume_cache::AssumeCache;
use binder::{CandidatePv, PodVolumeClaims, PodVolumes, find_pod_volumes};

/// PreFilter's reason when a claim of an Immediate class is not bound.
pub const ERR_REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The annotation a PV gets when the scheduler (not the user) pre-binds it.
const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";

/// The plugin, with its assume cache (one per profile, as in kube-scheduler).
#[derive(Default)]
pub struct VolumeBinding {
    cache: RwLock<AssumeCache>,
    /// Where PreBind writes; `None` in simulations (Reserve's assumptions stand).
    writer: Option<Arc<dyn ClusterWriter>>,
    /// How long PreBind waits for the claims to be bound (`bindTimeoutSeconds`).
    bind_timeout: Duration,
}

impl std::fmt::Debug for VolumeBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VolumeBinding")
            .field("writer", &self.writer.is_some())
            .field("bind_timeout", &self.bind_timeout)
            .finish()
    }
}

/// PreFilter's state, shared by the Filter calls of one cycle.
#[derive(Clone)]
struct State {
    storage: Arc<StorageObjects>,
    claims: Arc<PodVolumeClaims>,
    /// Node name → what Filter found there.
    by_node: Arc<Mutex<HashMap<String, PodVolumes>>>,
    /// What Reserve assumed, for PreBind.
    reserved: Arc<Mutex<Option<Reserved>>>,
}

/// What Reserve assumed for the chosen node.
#[derive(Clone, Debug, Default)]
struct Reserved {
    /// Every claim was bound already: PreBind has nothing to do.
    all_bound: bool,
    /// (the PV as assumed, with its `claimRef`; the claim).
    bindings: Vec<(Arc<PersistentVolume>, Arc<PersistentVolumeClaim>)>,
    /// The claims as assumed, with `volume.kubernetes.io/selected-node`.
    provisions: Vec<Arc<PersistentVolumeClaim>>,
}

/// Whether a claim binds on first consumer (`IsDelayBindingMode`): its class exists and
/// says WaitForFirstConsumer.
fn is_delay_binding(
    storage: &StorageObjects,
    claim: &k8s_openapi::api::core::v1::PersistentVolumeClaim,
) -> bool {
    let class = claim_class(claim);
    !class.is_empty()
        && storage
            .class(class)
            .is_some_and(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"))
}

/// Why an unbound claim (`name`, with `spec.volumeName` `volume_name`) counts as
/// Immediate, for `--explain`.
fn immediate_note(
    storage: &StorageObjects,
    claim: &k8s_openapi::api::core::v1::PersistentVolumeClaim,
    name: &str,
    volume_name: &str,
) -> String {
    let class = claim_class(claim);
    if !volume_name.is_empty() {
        return format!(
            "claim {name}: names PersistentVolume {volume_name} but the binding is not complete (no {ANN_BIND_COMPLETED} annotation)"
        );
    }
    match storage.class(class) {
        _ if class.is_empty() => {
            format!(
                "claim {name}: not bound, and it has no storageClassName (it waits for a PV to be bound to it)"
            )
        }
        None => format!(
            "claim {name}: not bound, and its StorageClass {class} does not exist (a claim of a missing class is bound Immediately, by the PV controller, not on first consumer)"
        ),
        Some(_) => format!(
            "claim {name}: not bound, and class {class} binds Immediately (the PV controller binds it, not the scheduler)"
        ),
    }
}

fn unresolvable(message: impl Into<kubesched_framework::Reason>) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, message)
}

impl VolumeBinding {
    /// A plugin with an empty assume cache, for a simulation (no writer) and the
    /// default `bindTimeoutSeconds` (600).
    pub fn new() -> VolumeBinding {
        VolumeBinding::with_args(&VolumeBindingArgs::default(), &Handle::default())
    }

    /// A plugin with these args, writing through the handle's writer when it has one.
    pub fn with_args(args: &VolumeBindingArgs, handle: &Handle) -> VolumeBinding {
        VolumeBinding {
            cache: RwLock::default(),
            writer: handle.writer.clone(),
            bind_timeout: Duration::from_secs(
                u64::try_from(args.bind_timeout_seconds).unwrap_or(0),
            ),
        }
    }

    /// `podHasPVCs`, on the API objects: `Ok(false)` for a pod without claims, `Err`
    /// with the reason for a claim it cannot use.
    fn pod_has_claims(storage: &StorageObjects, pod: &PodInfo) -> Result<bool, String> {
        let mut has = false;
        for volume in pod.spec().volumes.iter().flatten() {
            let Some((name, ephemeral)) = volume_claim_name(pod, volume) else {
                continue;
            };
            has = true;
            let Some(claim) = storage.claim(pod.namespace(), &name) else {
                return Err(if ephemeral {
                    format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim {name:?}"
                    )
                } else {
                    claim_not_found(&name)
                });
            };
            if claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
                let pv = claim
                    .spec
                    .as_ref()
                    .and_then(|s| s.volume_name.as_deref())
                    .unwrap_or_default();
                return Err(format!(
                    "persistentvolumeclaim {name:?} bound to non-existent persistentvolume {pv:?}"
                ));
            }
            if claim.metadata.deletion_timestamp.is_some() {
                return Err(format!("persistentvolumeclaim {name:?} is being deleted"));
            }
            if ephemeral {
                ephemeral_claim_is_for_pod(pod, claim)?;
            }
        }
        Ok(has)
    }

    /// `GetPodVolumeClaims`, through the assume cache: the claims by kind and the PVs
    /// the unbound ones may use; `Err` when some claim is unbound and Immediate, with
    /// a note for each such claim saying why it counts as Immediate.
    fn pod_volume_claims(
        &self,
        storage: &StorageObjects,
        pod: &PodInfo,
    ) -> Result<Result<PodVolumeClaims, Vec<String>>, String> {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        let mut claims = PodVolumeClaims::default();
        let mut unbound_immediate = Vec::new();
        for volume in pod.spec().volumes.iter().flatten() {
            let Some((name, _)) = volume_claim_name(pod, volume) else {
                continue;
            };
            let Some(claim) = cache.claim(storage, pod.namespace(), &name) else {
                return Err(format!(
                    "error getting PVC \"{}/{name}\": {}",
                    pod.namespace(),
                    claim_not_found(&name)
                ));
            };
            let volume_name = claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .unwrap_or_default();
            let bind_completed = claim
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(ANN_BIND_COMPLETED));
            if !volume_name.is_empty() && bind_completed {
                let pv = cache.pv(storage, volume_name).map(CandidatePv::new);
                claims.bound.push((claim, pv));
            } else if is_delay_binding(storage, &claim) && volume_name.is_empty() {
                claims.unbound_delay_binding.push(claim);
            } else {
                unbound_immediate.push(immediate_note(storage, &claim, &name, volume_name));
            }
        }
        if !unbound_immediate.is_empty() {
            return Ok(Err(unbound_immediate));
        }
        let mut pvs_by_class = BTreeMap::new();
        for claim in &claims.unbound_delay_binding {
            let class = claim_class(claim);
            if !pvs_by_class.contains_key(class) {
                let pvs = cache
                    .pvs_of_class(storage, class)
                    .into_iter()
                    .map(CandidatePv::new)
                    .collect();
                pvs_by_class.insert(class.to_owned(), pvs);
            }
        }
        claims.pvs_by_class = pvs_by_class;
        claims.prepare_matchers();
        Ok(Ok(claims))
    }

    /// `arePodVolumesBound`, through the assume cache.
    fn pod_volumes_bound(&self, storage: &StorageObjects, pod: &PodInfo) -> bool {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        pod.spec().volumes.iter().flatten().all(|v| {
            let Some((name, _)) = volume_claim_name(pod, v) else {
                return true;
            };
            cache
                .claim(storage, pod.namespace(), &name)
                .is_some_and(|c| {
                    c.spec
                        .as_ref()
                        .and_then(|s| s.volume_name.as_deref())
                        .is_some_and(|n| !n.is_empty())
                        && c.metadata
                            .annotations
                            .as_ref()
                            .is_some_and(|a| a.contains_key(ANN_BIND_COMPLETED))
                })
        })
    }
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &str {
        VOLUME_BINDING
    }
    // kube-scheduler: the volume plugins read the pod's volumes (ConfigMaps and
    // Secrets aside).
    /// Node by node only for a pod without PersistentVolumeClaims (direct or
    /// ephemeral): a claim is bound once, for every node, and counted cluster-wide.
    fn node_local(&self, pod: &PodInfo) -> bool {
        !pod.has_claim_volumes()
    }
    /// Node by node only for a pod whose volumes are all ConfigMaps, Secrets,
    /// downward API, projected or emptyDir: others read claims, volumes and CSI
    /// objects beside the node.
    fn node_scoped(&self, pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        crate::helper::only_synthetic_volumes(pod)
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![kubesched_framework::signature::volumes_fragment(pod)])
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        crate::events::volume_binding()
    }
    kubesched_framework::extension_points!(PreFilter, Filter, PreScore, Score, Reserve, PreBind);
}

impl PreFilterPlugin for VolumeBinding {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let storage = match storage_for(VOLUME_BINDING, pod, snapshot) {
            Ok(storage) => storage,
            Err(status) => return (None, status),
        };
        match Self::pod_has_claims(storage, pod) {
            Err(reason) => return (None, unresolvable(reason)),
            Ok(false) => return (None, Status::skip()),
            Ok(true) => {}
        }
        let claims = match self.pod_volume_claims(storage, pod) {
            Err(e) => return (None, Status::error(e)),
            Ok(Err(notes)) => {
                let status = unresolvable(ERR_REASON_UNBOUND_IMMEDIATE);
                let status = if state.explain() {
                    status.with_notes(notes)
                } else {
                    status
                };
                return (None, status);
            }
            Ok(Ok(c)) => c,
        };
        state.write(State {
            storage: storage.clone(),
            claims: Arc::new(claims),
            by_node: Arc::default(),
            reserved: Arc::default(),
        });
        (None, Status::success())
    }
}

impl FilterPlugin for VolumeBinding {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<State>() else {
            return Status::error(format!(
                "reading {VOLUME_BINDING}'s PreFilter state: not found"
            ));
        };
        match find_pod_volumes(&s.storage, &s.claims, node) {
            Err(e) => Status::error(e),
            Ok((_, reasons)) if !reasons.is_empty() => {
                let status = Status::with_reasons(Code::UnschedulableAndUnresolvable, reasons);
                if !state.explain() {
                    return status;
                }
                status.with_notes(binder::explain_node(&s.storage, &s.claims, node))
            }
            Ok((volumes, _)) => {
                s.by_node
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(node.name().to_owned(), volumes);
                Status::success()
            }
        }
    }
}

impl PreScorePlugin for VolumeBinding {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, _: &[&NodeInfo], _: &Snapshot) -> Status {
        // Scoring needs the StorageCapacityScoring feature gate, off in v1.35.
        Status::skip()
    }
}

impl ScorePlugin for VolumeBinding {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }
}

impl ReservePlugin for VolumeBinding {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(s) = state.read::<State>() else {
            // A pod without claims.
            return Status::success();
        };
        let Some(volumes) = s
            .by_node
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(node)
            .cloned()
        else {
            return Status::success();
        };
        if self.pod_volumes_bound(&s.storage, pod) {
            *s.reserved.lock().unwrap_or_else(|e| e.into_inner()) = Some(Reserved {
                all_bound: true,
                ..Reserved::default()
            });
            return Status::success();
        }
        let mut reserved = Reserved::default();
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        for (pv, claim) in &volumes.static_bindings {
            let bound_to_claim = binder::is_volume_bound_to_claim(pv, claim);
            let mut new_pv = (**pv).clone();
            let mut dirty = false;
            let spec = new_pv.spec.get_or_insert_with(Default::default);
            let same_ref = spec.claim_ref.as_ref().is_some_and(|r| {
                r.name == claim.metadata.name
                    && r.namespace == claim.metadata.namespace
                    && r.uid.as_deref().unwrap_or_default()
                        == claim.metadata.uid.as_deref().unwrap_or_default()
            });
            if !same_ref {
                spec.claim_ref = Some(ObjectReference {
                    api_version: Some("v1".to_owned()),
                    kind: Some("PersistentVolumeClaim".to_owned()),
                    name: claim.metadata.name.clone(),
                    namespace: claim.metadata.namespace.clone(),
                    uid: claim.metadata.uid.clone(),
                    resource_version: claim.metadata.resource_version.clone(),
                    ..Default::default()
                });
                dirty = true;
            }
            let annotations = new_pv
                .metadata
                .annotations
                .get_or_insert_with(Default::default);
            if !bound_to_claim && !annotations.contains_key(ANN_BOUND_BY_CONTROLLER) {
                annotations.insert(ANN_BOUND_BY_CONTROLLER.to_owned(), "yes".to_owned());
                dirty = true;
            }
            let new_pv = if dirty {
                let new_pv = Arc::new(new_pv);
                cache.assume_pv(new_pv.clone());
                new_pv
            } else {
                pv.clone()
            };
            reserved.bindings.push((new_pv, claim.clone()));
        }
        for claim in &volumes.dynamic_provisions {
            let mut new_claim = (**claim).clone();
            new_claim
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(super::ANN_SELECTED_NODE.to_owned(), node.to_owned());
            let new_claim = Arc::new(new_claim);
            cache.assume_claim(new_claim.clone());
            reserved.provisions.push(new_claim);
        }
        *s.reserved.lock().unwrap_or_else(|e| e.into_inner()) = Some(reserved);
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _: &PodInfo, node: &str) {
        let Some(s) = state.read::<State>() else {
            return;
        };
        let Some(volumes) = s
            .by_node
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(node)
            .cloned()
        else {
            return;
        };
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        for (pv, _) in &volumes.static_bindings {
            cache.restore_pv(pv.metadata.name.as_deref().unwrap_or_default());
        }
        for claim in &volumes.dynamic_provisions {
            cache.restore_claim(claim);
        }
    }
}

impl VolumeBinding {
    /// kube-scheduler's `BindPodVolumes`: writes what Reserve assumed (each PV's
    /// `claimRef`, each claim's `volume.kubernetes.io/selected-node`), then waits
    /// until the PV controller (or the provisioner) has bound every claim, up to
    /// `bindTimeoutSeconds`. The state is read now; the writes wait for the first poll.
    fn bind_pod_volumes(
        &self,
        state: &CycleState,
        writer: &Arc<dyn ClusterWriter>,
        pod: Arc<PodInfo>,
        node: &str,
    ) -> PreBindFuture {
        let done = |s: Status| -> PreBindFuture { Box::pin(std::future::ready(s)) };
        let Some(s) = state.read::<State>() else {
            // A pod without claims.
            return done(Status::success());
        };
        let reserved = s.reserved.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(reserved) = reserved else {
            return done(Status::error(format!(
                "no pod volumes found for node {node:?}"
            )));
        };
        if reserved.all_bound {
            return done(Status::success());
        }
        let (writer, node, timeout) = (writer.clone(), node.to_owned(), self.bind_timeout);
        Box::pin(async move {
            let mut bindings = Vec::with_capacity(reserved.bindings.len());
            for (pv, claim) in &reserved.bindings {
                match writer.update_pv(pv).await {
                    Ok(written) => bindings.push((written, claim.clone())),
                    Err(e) => return Status::error(e.message),
                }
            }
            let mut provisions = Vec::with_capacity(reserved.provisions.len());
            for claim in &reserved.provisions {
                match writer.update_pvc(claim).await {
                    Ok(written) => provisions.push(written),
                    Err(e) => return Status::error(e.message),
                }
            }
            let mut check =
                |view: &BindingView<'_>| check_bindings(view, &pod, &node, &bindings, &provisions);
            match writer
                .wait_for_bindings(&pod, &node, timeout, &mut check)
                .await
            {
                Ok(()) => Status::success(),
                Err(e) => Status::error(format!("binding volumes: {e}")),
            }
        })
    }
}

impl PreBindPlugin for VolumeBinding {
    /// kube-scheduler's `BindPodVolumes` on the calling thread: writes what Reserve
    /// assumed, then waits for the PV controller. In a simulation (no writer)
    /// Reserve's assumptions stand.
    fn pre_bind(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        match &self.writer {
            Some(writer) => futures_executor::block_on(self.bind_pod_volumes(
                state,
                writer,
                Arc::new(pod.clone()),
                node,
            )),
            None => Status::success(),
        }
    }

    /// The same `BindPodVolumes` as a future, where there is a writer.
    fn pre_bind_async(
        &self,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        node: &str,
    ) -> Option<PreBindFuture> {
        let writer = self.writer.as_ref()?;
        Some(self.bind_pod_volumes(state, writer, pod.clone(), node))
    }

    /// Skip where `pre_bind` returns at once: a pod without claims, a simulation, or
    /// claims Reserve found all bound. A missing reservation has work (`pre_bind`
    /// reports it, where kube-scheduler's PreBindPreFlight reports it earlier).
    fn pre_bind_pre_flight(&self, state: &CycleState, _: &PodInfo, _: &str) -> Status {
        let Some(s) = state.read::<State>() else {
            return Status::skip();
        };
        if self.writer.is_none() {
            return Status::skip();
        }
        let all_bound = s
            .reserved
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|r| r.all_bound);
        if all_bound {
            Status::skip()
        } else {
            Status::success()
        }
    }
}

/// A resourceVersion as a number; `None` when it is not one.
fn version(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref()?.parse().ok()
}

/// Whether the API server's object is older than the one `written` (the watch has
/// not shown our write yet).
fn older(
    written: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    api: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> bool {
    matches!((version(written), version(api)), (Some(w), Some(a)) if w > a)
}

fn fully_bound(claim: &PersistentVolumeClaim) -> bool {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .is_some_and(|n| !n.is_empty())
        && claim
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ANN_BIND_COMPLETED))
}

/// kube-scheduler's `checkBindings`, on the API server's objects: `Ok(true)` when every
/// claim the pod's PreBind wrote is fully bound, `Ok(false)` to look again, `Err` when
/// binding failed for good (the pod is gone, a PV's `claimRef` was reset, the
/// provisioner gave up, a PV does not fit the node).
fn check_bindings(
    view: &BindingView<'_>,
    pod: &PodInfo,
    node_name: &str,
    bindings: &[(PersistentVolume, Arc<PersistentVolumeClaim>)],
    provisions: &[PersistentVolumeClaim],
) -> Result<bool, String> {
    let Some(node) = view.node else {
        return Err(format!(
            "failed to get node {node_name:?}: node {node_name:?} not found"
        ));
    };
    let node = NodeInfo::new(node.clone()).map_err(|e| e.to_string())?;
    if !view.pod_exists {
        return Err(format!(
            "pod does not exist any more: pod {:?} not found",
            pod.name()
        ));
    }
    let storage = view.storage;
    let affinity = |pv: &PersistentVolume| -> Result<(), String> {
        if binder::CandidatePv::new(Arc::new(pv.clone())).fits(&node) {
            Ok(())
        } else {
            Err(format!(
                "pv {:?} node affinity doesn't match node {node_name:?}: no matching NodeSelectorTerms",
                pv.metadata.name.as_deref().unwrap_or_default()
            ))
        }
    };
    let claim_of = |claim: &PersistentVolumeClaim| {
        let ns = claim.metadata.namespace.as_deref().unwrap_or("default");
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        storage
            .claim(ns, name)
            .cloned()
            .ok_or_else(|| format!("could not find v1.PersistentVolumeClaim \"{ns}/{name}\""))
    };
    for (written, claim) in bindings {
        let name = written.metadata.name.as_deref().unwrap_or_default();
        let pv = storage
            .pv(name)
            .ok_or_else(|| {
                format!("failed to check binding: could not find v1.PersistentVolume {name:?}")
            })?
            .clone();
        let api_claim = claim_of(claim).map_err(|e| format!("failed to check binding: {e}"))?;
        if older(&written.metadata, &pv.metadata) {
            return Ok(false);
        }
        affinity(&pv)?;
        let reset = pv
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .is_none_or(|r| r.uid.as_deref().unwrap_or_default().is_empty());
        if reset {
            return Err(format!("ClaimRef got reset for pv {name:?}"));
        }
        if !fully_bound(&api_claim) {
            return Ok(false);
        }
    }
    for written in provisions {
        let api_claim =
            claim_of(written).map_err(|e| format!("failed to check provisioning pvc: {e}"))?;
        if older(&written.metadata, &api_claim.metadata) {
            return Ok(false);
        }
        let name = api_claim.metadata.name.as_deref().unwrap_or_default();
        let Some(annotations) = &api_claim.metadata.annotations else {
            return Err(format!("selectedNode annotation reset for PVC {name:?}"));
        };
        if annotations
            .get(super::ANN_SELECTED_NODE)
            .map(String::as_str)
            != Some(node_name)
        {
            return Err(format!("provisioning failed for PVC {name:?}"));
        }
        let volume = api_claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .unwrap_or_default();
        if !volume.is_empty() {
            let Some(pv) = storage.pv(volume) else {
                // Not seen yet: the watch may lag; look again.
                return Ok(false);
            };
            affinity(pv)?;
        }
        if !fully_bound(&api_claim) {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    fn snapshot() -> Snapshot {
        let nodes = ["n1", "n2"].map(|n| {
            Arc::new(serde_json::from_value::<Node>(json!({"metadata": {"name": n}})).unwrap())
        });
        let (mut snapshot, _) = Snapshot::new(nodes, Vec::new()).unwrap();
        let mut storage = StorageObjects::new();
        storage.add_class(Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "fast"},
                "provisioner": "example.com/csi", "volumeBindingMode": "WaitForFirstConsumer"}))
            .unwrap(),
        ));
        storage.add_claim(Arc::new(
            serde_json::from_value(
                json!({"metadata": {"name": "shared", "namespace": "default"},
                "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "fast",
                    "resources": {"requests": {"storage": "1Gi"}}}}),
            )
            .unwrap(),
        ));
        snapshot.set_storage(Some(Arc::new(storage)));
        snapshot
    }

    fn pod(name: &str) -> PodInfo {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "shared"}}]}
        }))
        .unwrap();
        PodInfo::new(Arc::new(pod)).unwrap()
    }

    /// The nodes Filter passes for `pod`, and the cycle state.
    fn feasible(
        plugin: &VolumeBinding,
        snapshot: &Snapshot,
        pod: &PodInfo,
    ) -> (Vec<String>, CycleState) {
        let mut state = CycleState::new();
        let (_, status) = plugin.pre_filter(&mut state, pod, snapshot);
        assert!(status.is_success(), "{status:?}");
        let nodes = snapshot
            .nodes()
            .iter()
            .filter(|n| plugin.filter(&state, pod, n).is_success())
            .map(|n| n.name().to_owned())
            .collect();
        (nodes, state)
    }

    #[test]
    fn a_provisioned_claim_keeps_its_selected_node_until_unreserved() {
        let plugin = VolumeBinding::new();
        let snapshot = snapshot();
        let first = pod("first");
        let (nodes, mut state) = feasible(&plugin, &snapshot, &first);
        assert_eq!(nodes, ["n1", "n2"]);
        assert!(plugin.reserve(&mut state, &first, "n2").is_success());

        let second = pod("second");
        let (nodes, _) = feasible(&plugin, &snapshot, &second);
        assert_eq!(nodes, ["n2"], "the claim is assumed with selected-node n2");

        plugin.unreserve(&mut state, &first, "n2");
        let (nodes, _) = feasible(&plugin, &snapshot, &second);
        assert_eq!(nodes, ["n1", "n2"]);
    }

    #[test]
    fn an_explained_cycle_names_the_claim_and_an_unexplained_one_does_not() {
        let plugin = VolumeBinding::new();
        let snapshot = snapshot();
        let first = pod("first");
        let (_, mut state) = feasible(&plugin, &snapshot, &first);
        assert!(plugin.reserve(&mut state, &first, "n2").is_success());
        let second = pod("second");
        for explain in [false, true] {
            let mut state = CycleState::new();
            state.set_explain(explain);
            let (_, status) = plugin.pre_filter(&mut state, &second, &snapshot);
            assert!(status.is_success(), "{status:?}");
            let n1 = &snapshot.nodes()[0];
            let status = plugin.filter(&state, &second, n1);
            assert_eq!(
                status.reasons(),
                [binder::ERR_REASON_BIND_CONFLICT],
                "the reason is kube-scheduler's, explained or not"
            );
            let notes: &[String] = if explain {
                &["claim shared: being provisioned for node n2 (volume.kubernetes.io/selected-node)".to_string()]
            } else {
                &[]
            };
            assert_eq!(status.notes(), notes);
        }
    }

    #[test]
    fn without_storage_objects_a_claim_is_refused_clearly() {
        let plugin = VolumeBinding::new();
        let nodes = [Arc::new(
            serde_json::from_value::<Node>(json!({"metadata": {"name": "n1"}})).unwrap(),
        )];
        let (snapshot, _) = Snapshot::new(nodes, Vec::new()).unwrap();
        let mut state = CycleState::new();
        let (_, status) = plugin.pre_filter(&mut state, &pod("p"), &snapshot);
        assert_eq!(status.code(), Code::UnschedulableAndUnresolvable);
        assert!(
            status.message().contains("tracks no storage objects"),
            "{}",
            status.message()
        );
    }
}
