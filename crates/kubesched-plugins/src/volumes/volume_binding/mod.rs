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

use k8s_openapi::api::core::v1::ObjectReference;
use kubesched_framework::storage::claim_class;
use kubesched_framework::{
    ClusterEvent, Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, PreScorePlugin, ReservePlugin, ScorePlugin, Snapshot, Status, StorageObjects,
};

use super::{
    ANN_BIND_COMPLETED, VOLUME_BINDING, claim_not_found, ephemeral_claim_is_for_pod,
    unsupported_status, volume_claim_name,
};
use assume_cache::AssumeCache;
use binder::{CandidatePv, PodVolumeClaims, PodVolumes, find_pod_volumes};

/// PreFilter's reason when a claim of an Immediate class is not bound.
pub const ERR_REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The annotation a PV gets when the scheduler (not the user) pre-binds it.
const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";

/// The plugin, with its assume cache (one per profile, as in kube-scheduler).
#[derive(Debug, Default)]
pub struct VolumeBinding {
    cache: RwLock<AssumeCache>,
}

/// PreFilter's state, shared by the Filter calls of one cycle.
#[derive(Clone)]
struct State {
    storage: Arc<StorageObjects>,
    claims: Arc<PodVolumeClaims>,
    /// Node name → what Filter found there.
    by_node: Arc<Mutex<HashMap<String, PodVolumes>>>,
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
    /// A plugin with an empty assume cache.
    pub fn new() -> VolumeBinding {
        VolumeBinding::default()
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
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        crate::events::volume_binding()
    }
    fn as_pre_filter(self: Arc<Self>) -> Option<Arc<dyn PreFilterPlugin>> {
        Some(self)
    }
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        Some(self)
    }
    fn as_pre_score(self: Arc<Self>) -> Option<Arc<dyn PreScorePlugin>> {
        Some(self)
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        Some(self)
    }
    fn as_reserve(self: Arc<Self>) -> Option<Arc<dyn ReservePlugin>> {
        Some(self)
    }
}

impl PreFilterPlugin for VolumeBinding {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let Some(storage) = snapshot.storage() else {
            return match unsupported_status(VOLUME_BINDING, pod) {
                Some(s) => (None, s),
                None => (None, Status::skip()),
            };
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
            return Status::success();
        }
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
            if dirty {
                cache.assume_pv(Arc::new(new_pv));
            }
        }
        for claim in &volumes.dynamic_provisions {
            let mut new_claim = (**claim).clone();
            new_claim
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(super::ANN_SELECTED_NODE.to_owned(), node.to_owned());
            cache.assume_claim(Arc::new(new_claim));
        }
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
            status.message().contains("not supported"),
            "{}",
            status.message()
        );
    }
}
