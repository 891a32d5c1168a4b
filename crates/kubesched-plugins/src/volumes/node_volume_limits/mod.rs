//! NodeVolumeLimits: a node's CSI drivers can attach only so many volumes
//! (kube-scheduler v1.35's CSI limits).
//!
//! - PreFilter returns Skip unless the pod has a `persistentVolumeClaim`, a generic
//!   ephemeral volume or an inline in-tree volume that migrates to CSI.
//! - Filter counts, per CSI driver, the distinct volumes (`driver/handle`) of the pod
//!   that the node does not already have; when some driver's count plus the volumes
//!   already on the node (the pods in the scheduler cache, plus the node's
//!   VolumeAttachments of CSI PVs those pods do not use) exceeds the CSINode's
//!   `allocatable.count`, the node is rejected: "node(s) exceed max volume count"
//!   (Unschedulable). A node without a CSINode, or a driver without a count, has no
//!   limit.
//! - A claim counts as its PV's CSI driver and volume handle (an in-tree PV through
//!   [`translation`]); an unbound claim, or one whose PV is missing, as its class's
//!   provisioner with a handle made of the claim's name, so pods sharing it count it
//!   once. A claim the incoming pod needs and that does not exist rejects the node
//!   (UnschedulableAndUnresolvable); another pod's missing claim is not counted.
//!   When the cycle is explained, a rejection names the driver, the volumes attached
//!   and the limit.

pub mod translation;

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Volume};
use k8s_openapi::api::storage::v1::CSINode;
use kubesched_framework::storage::claim_class;
use kubesched_framework::{
    ClusterEvent, Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status, StorageObjects,
};

use super::{
    NODE_VOLUME_LIMITS, claim_not_found, ephemeral_claim_is_for_pod, storage_for, volume_claim_name,
};

/// Filter's reason.
pub const ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: &str = "node(s) exceed max volume count";

/// The handle prefix for claims counted by their class (kube-scheduler uses a random
/// one; it only has to differ from every real handle).
const UNBOUND_HANDLE_PREFIX: &str = "kubesched-unbound-claim";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeVolumeLimits;

/// PreFilter's state: the storage objects Filter reads.
#[derive(Clone)]
struct State {
    storage: Arc<StorageObjects>,
}

/// Volume unique name (`driver/handle`) → driver.
type VolumeSet = HashMap<String, String>;

/// Why a pod's volumes could not be counted.
enum CountError {
    /// The pod's claim does not exist.
    NotFound(String),
    /// Anything else (kube-scheduler's `AsStatus`).
    Other(String),
}

/// `getCSIDriverInfoFromSC`: an unbound claim counts as its class's provisioner.
fn driver_from_class(
    storage: &StorageObjects,
    csi_node: Option<&CSINode>,
    claim: &PersistentVolumeClaim,
) -> Option<(String, String)> {
    let class_name = claim_class(claim);
    if class_name.is_empty() {
        return None;
    }
    let class = storage.class(class_name)?;
    let handle = format!(
        "{UNBOUND_HANDLE_PREFIX}-{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or("default"),
        claim.metadata.name.as_deref().unwrap_or_default()
    );
    let mut provisioner = class.provisioner.as_str();
    if translation::is_migratable_in_tree_plugin(provisioner) {
        if !translation::is_csi_migration_on(csi_node, provisioner) {
            return None;
        }
        provisioner = translation::csi_name_from_in_tree(provisioner)?;
    }
    Some((provisioner.to_owned(), handle))
}

/// `getCSIDriverInfo`: the driver and handle a claim counts as, if any.
fn driver_of_claim(
    storage: &StorageObjects,
    csi_node: Option<&CSINode>,
    claim: &PersistentVolumeClaim,
) -> Option<(String, String)> {
    let pv_name = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default();
    if pv_name.is_empty() {
        return driver_from_class(storage, csi_node, claim);
    }
    let Some(pv) = storage.pv(pv_name) else {
        return driver_from_class(storage, csi_node, claim);
    };
    if let Some(csi) = pv.spec.as_ref().and_then(|s| s.csi.as_ref()) {
        return Some((csi.driver.clone(), csi.volume_handle.clone()));
    }
    let plugin = translation::pv_plugin(pv)?;
    if !translation::is_csi_migration_on(csi_node, plugin) {
        return None;
    }
    let handle = translation::pv_volume_handle(pv).ok()??;
    let driver = translation::csi_name_from_in_tree(plugin)?;
    Some((driver.to_owned(), handle))
}

/// `checkAttachableInlineVolume`.
fn count_inline(
    volume: &Volume,
    csi_node: Option<&CSINode>,
    result: &mut VolumeSet,
) -> Result<(), CountError> {
    if !translation::is_inline_migratable(volume) {
        return Ok(());
    }
    let Some(plugin) = translation::inline_plugin(volume) else {
        return Ok(());
    };
    if !translation::is_csi_migration_on(csi_node, plugin) {
        return Ok(());
    }
    let handle = translation::inline_volume_handle(volume).map_err(|e| {
        CountError::Other(format!(
            "converting volume({}) from inline to csi: {e}",
            volume.name
        ))
    })?;
    let (Some(handle), Some(driver)) = (handle, translation::csi_name_from_in_tree(plugin)) else {
        return Ok(());
    };
    result.insert(format!("{driver}/{handle}"), driver.to_owned());
    Ok(())
}

/// `filterAttachableVolumes`: adds the pod's countable volumes to `result`.
fn count_pod_volumes(
    storage: &StorageObjects,
    pod: &PodInfo,
    csi_node: Option<&CSINode>,
    new_pod: bool,
    result: &mut VolumeSet,
) -> Result<(), CountError> {
    for volume in pod.spec().volumes.iter().flatten() {
        let Some((claim_name, ephemeral)) = volume_claim_name(pod, volume) else {
            count_inline(volume, csi_node, result)?;
            continue;
        };
        if claim_name.is_empty() {
            return Err(CountError::Other(
                "PersistentVolumeClaim had no name".to_owned(),
            ));
        }
        let Some(claim) = storage.claim(pod.namespace(), &claim_name) else {
            if new_pod {
                return Err(CountError::NotFound(format!(
                    "looking up PVC {}/{claim_name}: {}",
                    pod.namespace(),
                    claim_not_found(&claim_name)
                )));
            }
            continue;
        };
        if ephemeral {
            ephemeral_claim_is_for_pod(pod, claim).map_err(CountError::Other)?;
        }
        let Some((driver, handle)) = driver_of_claim(storage, csi_node, claim) else {
            continue;
        };
        if driver.is_empty() || handle.is_empty() {
            continue;
        }
        result.insert(format!("{driver}/{handle}"), driver);
    }
    Ok(())
}

/// The node's VolumeAttachments of CSI PVs: unique name → driver.
fn attachments_of_node(storage: &StorageObjects, node: &str) -> VolumeSet {
    let mut out = VolumeSet::new();
    for va in storage.attachments_of_node(node) {
        if va.spec.attacher.is_empty() {
            continue;
        }
        let Some(pv_name) = va.spec.source.persistent_volume_name.as_deref() else {
            continue;
        };
        let Some(csi) = storage
            .pv(pv_name)
            .and_then(|pv| pv.spec.as_ref())
            .and_then(|s| s.csi.as_ref())
        else {
            continue;
        };
        out.insert(
            format!("{}/{}", va.spec.attacher, csi.volume_handle),
            va.spec.attacher.clone(),
        );
    }
    out
}

fn as_status(e: CountError) -> Status {
    match e {
        CountError::NotFound(m) => Status::new(Code::UnschedulableAndUnresolvable, m),
        CountError::Other(m) => Status::new(Code::Error, m),
    }
}

impl Plugin for NodeVolumeLimits {
    fn name(&self) -> &str {
        NODE_VOLUME_LIMITS
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
        crate::events::node_volume_limits()
    }
    kubesched_framework::extension_points!(PreFilter, Filter);
}

impl PreFilterPlugin for NodeVolumeLimits {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let storage = match storage_for(NODE_VOLUME_LIMITS, pod, snapshot) {
            Ok(storage) => storage,
            Err(status) => return (None, status),
        };
        let relevant = pod.spec().volumes.iter().flatten().any(|v| {
            v.persistent_volume_claim.is_some()
                || v.ephemeral.is_some()
                || translation::is_inline_migratable(v)
        });
        if !relevant {
            return (None, Status::skip());
        }
        state.write(State {
            storage: storage.clone(),
        });
        (None, Status::success())
    }
}

impl FilterPlugin for NodeVolumeLimits {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.spec().volumes.as_ref().is_none_or(Vec::is_empty) {
            return Status::success();
        }
        let Some(State { storage }) = state.read::<State>() else {
            return Status::new(
                Code::Error,
                format!("reading {NODE_VOLUME_LIMITS}'s PreFilter state: not found"),
            );
        };
        let csi_node = storage.csi_node(node.name()).map(|c| &**c);
        let mut new_volumes = VolumeSet::new();
        if let Err(e) = count_pod_volumes(storage, pod, csi_node, true, &mut new_volumes) {
            return as_status(e);
        }
        if new_volumes.is_empty() {
            return Status::success();
        }
        let limits: HashMap<&str, i64> = csi_node
            .map(|c| {
                c.spec
                    .drivers
                    .iter()
                    .filter_map(|d| {
                        let count = d.allocatable.as_ref()?.count?;
                        Some((d.name.as_str(), i64::from(count)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if limits.is_empty() {
            return Status::success();
        }
        let mut attached = VolumeSet::new();
        for existing in node.pods() {
            if let Err(e) = count_pod_volumes(storage, existing, csi_node, false, &mut attached) {
                return as_status(e);
            }
        }
        let mut attached_count: HashMap<&str, i64> = HashMap::new();
        for (name, driver) in &attached {
            new_volumes.remove(name);
            *attached_count.entry(driver.as_str()).or_default() += 1;
        }
        let attachments = attachments_of_node(storage, node.name());
        for (name, driver) in &attachments {
            if !attached.contains_key(name) {
                *attached_count.entry(driver.as_str()).or_default() += 1;
            }
        }
        // By driver name, so that an explained rejection always names the same driver.
        let mut new_count: std::collections::BTreeMap<&str, i64> = Default::default();
        for driver in new_volumes.values() {
            *new_count.entry(driver.as_str()).or_default() += 1;
        }
        for (driver, count) in new_count {
            let used = attached_count.get(driver).copied().unwrap_or(0);
            if let Some(&limit) = limits.get(driver)
                && used + count > limit
            {
                let status = Status::new(Code::Unschedulable, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED);
                if !state.explain() {
                    return status;
                }
                return status.with_notes([format!(
                    "CSI driver {driver}: {used} volume(s) attached to this node and {count} more for this pod, over the node's limit of {limit} (CSINode {})",
                    node.name()
                )]);
            }
        }
        Status::success()
    }
}
