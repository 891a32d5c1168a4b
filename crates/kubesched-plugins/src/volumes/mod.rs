//! The volume plugins of the default profile, as in kube-scheduler v1.35:
//! [`VolumeRestrictions`], [`NodeVolumeLimits`], [`VolumeBinding`] and [`VolumeZone`].
//!
//! They read the cluster's storage objects (PersistentVolumes, claims, StorageClasses,
//! CSI objects) from the snapshot's [`kubesched_framework::StorageObjects`], the way
//! kube-scheduler's read their listers. A caller that does not track storage objects,
//! or a runtime that could not list some kinds (forbidden, not served), gets a clear
//! rejection for a pod that needs them, never a silent pass: see [`storage_volume`].
//!
//! This module holds what the four share: the claims a pod's volumes name (a
//! `persistentVolumeClaim`, or the `<pod>-<volume>` claim of a generic ephemeral
//! volume), the ownership rule of ephemeral claims, and the API server's NotFound
//! wording.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Volume};
use std::sync::Arc;

use kubesched_framework::{Code, PodInfo, Snapshot, Status, StorageObjects};

pub mod node_volume_limits;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

pub use node_volume_limits::NodeVolumeLimits;
pub use volume_binding::VolumeBinding;
pub use volume_restrictions::VolumeRestrictions;
pub use volume_zone::VolumeZone;

/// VolumeRestrictions' name.
pub const VOLUME_RESTRICTIONS: &str = "VolumeRestrictions";
/// NodeVolumeLimits' name.
pub const NODE_VOLUME_LIMITS: &str = "NodeVolumeLimits";
/// VolumeBinding's name.
pub const VOLUME_BINDING: &str = "VolumeBinding";
/// VolumeZone's name.
pub const VOLUME_ZONE: &str = "VolumeZone";

/// The annotation a claim gets when the scheduler picks a node for its provisioning.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The annotation the PV controller sets once a claim is fully bound.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";

/// The first volume of the pod that the volume plugins would have to examine, with
/// its kind: `(volume name, kind)`. Used only when the storage objects cannot be had.
pub fn storage_volume(pod: &PodInfo) -> Option<(&str, &'static str)> {
    pod.spec().volumes.iter().flatten().find_map(|v| {
        let kind = if v.persistent_volume_claim.is_some() {
            "persistentVolumeClaim"
        } else if v.ephemeral.is_some() {
            "ephemeral"
        } else if v.gce_persistent_disk.is_some() {
            "gcePersistentDisk"
        } else if v.aws_elastic_block_store.is_some() {
            "awsElasticBlockStore"
        } else if v.rbd.is_some() {
            "rbd"
        } else if v.iscsi.is_some() {
            "iscsi"
        } else if v.azure_disk.is_some() {
            "azureDisk"
        } else if v.cinder.is_some() {
            "cinder"
        } else if v.csi.is_some() {
            "csi"
        } else {
            return None;
        };
        Some((v.name.as_str(), kind))
    })
}

/// The snapshot's storage objects for a plugin's PreFilter, or what PreFilter returns
/// without them: Skip for a pod with no volume the plugin examines, else a rejection
/// that says why the objects are missing (the caller tracks none, or could not list
/// some kinds), never a silent pass.
pub(crate) fn storage_for<'a>(
    plugin: &str,
    pod: &PodInfo,
    snapshot: &'a Snapshot,
) -> Result<&'a Arc<StorageObjects>, Status> {
    let why = match snapshot.storage() {
        Some(storage) => match storage.unavailable() {
            None => return Ok(storage),
            Some(reason) => reason.to_owned(),
        },
        None => "this scheduler tracks no storage objects".to_owned(),
    };
    match storage_volume(pod) {
        None => Err(Status::skip()),
        Some((volume, kind)) => Err(Status::new(
            Code::UnschedulableAndUnresolvable,
            format!(
                "pod {} uses volume {volume:?} ({kind}), which {plugin} cannot check: {why}",
                pod.key()
            ),
        )),
    }
}

/// The claim a volume uses: `(claim name, is a generic ephemeral volume)`, or `None`
/// for a volume without a claim (component-helpers' `ephemeral.VolumeClaimName`).
pub fn volume_claim_name(pod: &PodInfo, volume: &Volume) -> Option<(String, bool)> {
    if let Some(pvc) = &volume.persistent_volume_claim {
        Some((pvc.claim_name.clone(), false))
    } else if volume.ephemeral.is_some() {
        Some((format!("{}-{}", pod.name(), volume.name), true))
    } else {
        None
    }
}

/// `Err` with kube-scheduler's message when the claim of a generic ephemeral volume is
/// not controlled by the pod (`ephemeral.VolumeIsForPod`). A pod without
/// `metadata.uid` owns nothing.
pub fn ephemeral_claim_is_for_pod(
    pod: &PodInfo,
    claim: &PersistentVolumeClaim,
) -> Result<(), String> {
    let pod_uid = pod.metadata().uid.as_deref();
    let owned = claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| Some(r.uid.as_str()) == pod_uid);
    if owned {
        Ok(())
    } else {
        Err(format!(
            "PVC {}/{} was not created for pod {} (pod is not owner)",
            claim.metadata.namespace.as_deref().unwrap_or("default"),
            claim.metadata.name.as_deref().unwrap_or_default(),
            pod.key()
        ))
    }
}

/// The API server's NotFound message for a claim.
pub fn claim_not_found(name: &str) -> String {
    format!("persistentvolumeclaim {name:?} not found")
}

/// The API server's NotFound message for a PV.
pub fn pv_not_found(name: &str) -> String {
    format!("persistentvolume {name:?} not found")
}

/// The API server's NotFound message for a StorageClass.
pub fn class_not_found(name: &str) -> String {
    format!("storageclass.storage.k8s.io {name:?} not found")
}

/// The access modes of a claim.
pub(crate) fn claim_access_modes(claim: &PersistentVolumeClaim) -> &[String] {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}
