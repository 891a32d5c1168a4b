//! The volume plugins of the default profile: VolumeRestrictions, NodeVolumeLimits,
//! VolumeBinding and VolumeZone.
//!
//! kubesched does not model PersistentVolumes, StorageClasses or CSI drivers yet. For a
//! pod that uses none of the volumes these plugins examine, each behaves exactly as in
//! kube-scheduler: its PreFilter returns Skip and it never rejects a node, and
//! VolumeBinding's PreScore skips scoring (StorageCapacityScoring is off by default).
//! A pod that uses such a volume (a PersistentVolumeClaim, a generic ephemeral volume,
//! or an in-tree disk the plugins check) is rejected with a message that names the pod
//! and the volume and says it is not supported yet: never a silent pass.

use std::sync::Arc;

use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ScorePlugin, Snapshot, Status,
};

/// VolumeRestrictions' name.
pub const VOLUME_RESTRICTIONS: &str = "VolumeRestrictions";
/// NodeVolumeLimits' name.
pub const NODE_VOLUME_LIMITS: &str = "NodeVolumeLimits";
/// VolumeBinding's name.
pub const VOLUME_BINDING: &str = "VolumeBinding";
/// VolumeZone's name.
pub const VOLUME_ZONE: &str = "VolumeZone";

/// The first volume of the pod that the volume plugins would have to examine, with
/// its kind: `(volume name, kind)`.
pub fn unsupported_volume(pod: &PodInfo) -> Option<(&str, &'static str)> {
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

/// One of the four volume plugins.
#[derive(Debug, Clone, Copy)]
pub struct VolumePlugin {
    name: &'static str,
}

impl VolumePlugin {
    /// VolumeRestrictions.
    pub fn volume_restrictions() -> VolumePlugin {
        VolumePlugin {
            name: VOLUME_RESTRICTIONS,
        }
    }
    /// NodeVolumeLimits.
    pub fn node_volume_limits() -> VolumePlugin {
        VolumePlugin {
            name: NODE_VOLUME_LIMITS,
        }
    }
    /// VolumeBinding.
    pub fn volume_binding() -> VolumePlugin {
        VolumePlugin {
            name: VOLUME_BINDING,
        }
    }
    /// VolumeZone.
    pub fn volume_zone() -> VolumePlugin {
        VolumePlugin { name: VOLUME_ZONE }
    }
}

impl Plugin for VolumePlugin {
    fn name(&self) -> &str {
        self.name
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        match self.name {
            VOLUME_RESTRICTIONS => crate::events::volume_restrictions(),
            NODE_VOLUME_LIMITS => crate::events::node_volume_limits(),
            VOLUME_BINDING => crate::events::volume_binding(),
            _ => crate::events::volume_zone(),
        }
    }
    fn as_pre_filter(self: Arc<Self>) -> Option<Arc<dyn PreFilterPlugin>> {
        Some(self)
    }
    fn as_filter(self: Arc<Self>) -> Option<Arc<dyn FilterPlugin>> {
        Some(self)
    }
    fn as_pre_score(self: Arc<Self>) -> Option<Arc<dyn PreScorePlugin>> {
        (self.name == VOLUME_BINDING).then_some(self)
    }
    fn as_score(self: Arc<Self>) -> Option<Arc<dyn ScorePlugin>> {
        (self.name == VOLUME_BINDING).then_some(self)
    }
}

impl PreFilterPlugin for VolumePlugin {
    fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match unsupported_volume(pod) {
            None => (None, Status::skip()),
            Some((volume, kind)) => (
                None,
                Status::new(
                    Code::UnschedulableAndUnresolvable,
                    format!(
                        "pod {} uses volume {volume:?} ({kind}): volumes that need {} are not supported by kubesched yet",
                        pod.key(),
                        self.name
                    ),
                ),
            ),
        }
    }
}

impl FilterPlugin for VolumePlugin {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        // Only reached for pods whose PreFilter did not skip, and those were rejected
        // in PreFilter already.
        Status::success()
    }
}

impl PreScorePlugin for VolumePlugin {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, _: &[&NodeInfo], _: &Snapshot) -> Status {
        // VolumeBinding scores only with the StorageCapacityScoring feature, off by
        // default in v1.35.
        Status::skip()
    }
}

impl ScorePlugin for VolumePlugin {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }
}
