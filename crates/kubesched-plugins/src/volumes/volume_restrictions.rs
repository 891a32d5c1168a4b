//! VolumeRestrictions: in-tree disks that cannot be shared on a node, and
//! ReadWriteOncePod claims that cannot be shared in the cluster (kube-scheduler v1.35).
//!
//! - PreFilter looks up every `persistentVolumeClaim` volume's claim (a missing one
//!   rejects the pod: `persistentvolumeclaim "NAME" not found`), keeps those with the
//!   ReadWriteOncePod access mode and counts how many of them some pod in the cluster
//!   already uses (the scheduler cache, so assumed pods count). It returns Skip when the
//!   pod has no GCE PD, AWS EBS, RBD or ISCSI volume and no such conflict.
//! - Filter rejects (Unschedulable) a node where a pod's volume conflicts with one of a
//!   pod on that node ("node(s) had no available disk"): the same GCE PD unless both are
//!   read-only, the same EBS volume ID always, the same RBD image (a shared monitor,
//!   same pool and image) or ISCSI IQN unless both are read-only; and every node when
//!   the ReadWriteOncePod count is not zero.
//! - AddPod/RemovePod keep the count right during preemption's what-if evaluation.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Volume;
use kubesched_framework::{
    ClusterEvent, Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterExtensions,
    PreFilterPlugin, PreFilterResult, Snapshot, Status,
};

use super::{VOLUME_RESTRICTIONS, claim_access_modes, claim_not_found, storage_for};

/// Filter's reason for a disk conflict on the node.
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// Filter's reason when a ReadWriteOncePod claim is in use.
pub const ERR_REASON_RWOP_CONFLICT: &str = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct VolumeRestrictions;

/// PreFilter's state.
#[derive(Clone, Debug)]
struct State {
    /// `namespace/name` of the pod's ReadWriteOncePod claims.
    rwop_claims: BTreeSet<String>,
    /// How many of them a pod in the cluster uses.
    conflicting: i64,
}

impl State {
    fn update_with_pod(&mut self, other: &PodInfo, delta: i64) {
        for v in other.spec().volumes.iter().flatten() {
            if let Some(pvc) = &v.persistent_volume_claim {
                let key = format!("{}/{}", other.namespace(), pvc.claim_name);
                if self.rwop_claims.contains(&key) {
                    self.conflicting += delta;
                }
            }
        }
    }
}

fn needs_restrictions_check(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
}

/// Whether `volume` (of the incoming pod) conflicts with one of `other`'s volumes.
fn is_volume_conflict(volume: &Volume, other: &PodInfo) -> bool {
    for existing in other.spec().volumes.iter().flatten() {
        if let (Some(d), Some(e)) = (&volume.gce_persistent_disk, &existing.gce_persistent_disk)
            && d.pd_name == e.pd_name
            && !(d.read_only == Some(true) && e.read_only == Some(true))
        {
            return true;
        }
        if let (Some(d), Some(e)) = (
            &volume.aws_elastic_block_store,
            &existing.aws_elastic_block_store,
        ) && d.volume_id == e.volume_id
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.iscsi, &existing.iscsi)
            && d.iqn == e.iqn
            && !(d.read_only == Some(true) && e.read_only == Some(true))
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.rbd, &existing.rbd) {
            // The API server defaults the pool to "rbd".
            let pool = |p: &Option<String>| p.clone().unwrap_or_else(|| "rbd".to_owned());
            let shared_monitor = d.monitors.iter().any(|m| e.monitors.contains(m));
            if shared_monitor
                && pool(&d.pool) == pool(&e.pool)
                && d.image == e.image
                && !(d.read_only == Some(true) && e.read_only == Some(true))
            {
                return true;
            }
        }
    }
    false
}

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &str {
        VOLUME_RESTRICTIONS
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
        crate::events::volume_restrictions()
    }
    kubesched_framework::extension_points!(PreFilter, Filter);
}

impl PreFilterPlugin for VolumeRestrictions {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let storage = match storage_for(VOLUME_RESTRICTIONS, pod, snapshot) {
            Ok(storage) => storage,
            Err(status) => return (None, status),
        };
        let volumes = pod.spec().volumes.as_deref().unwrap_or_default();
        let needs_check = volumes.iter().any(needs_restrictions_check);
        let mut rwop_claims = BTreeSet::new();
        for v in volumes {
            let Some(pvc) = &v.persistent_volume_claim else {
                continue;
            };
            let Some(claim) = storage.claim(pod.namespace(), &pvc.claim_name) else {
                return (
                    None,
                    Status::new(
                        Code::UnschedulableAndUnresolvable,
                        claim_not_found(&pvc.claim_name),
                    ),
                );
            };
            if claim_access_modes(claim)
                .iter()
                .any(|m| m == "ReadWriteOncePod")
            {
                rwop_claims.insert(format!("{}/{}", pod.namespace(), pvc.claim_name));
            }
        }
        let mut s = State {
            rwop_claims,
            conflicting: 0,
        };
        if !s.rwop_claims.is_empty() {
            let used: BTreeSet<String> = snapshot
                .nodes()
                .iter()
                .flat_map(|n| n.pods())
                .flat_map(|p| {
                    p.spec().volumes.iter().flatten().filter_map(|v| {
                        v.persistent_volume_claim
                            .as_ref()
                            .map(|c| format!("{}/{}", p.namespace(), c.claim_name))
                    })
                })
                .collect();
            s.conflicting = s.rwop_claims.iter().filter(|k| used.contains(*k)).count() as i64;
        }
        if !needs_check && s.conflicting == 0 {
            return (None, Status::skip());
        }
        state.write(s);
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for VolumeRestrictions {
    fn add_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        pod_to_add: &PodInfo,
        _: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<State>() {
            s.update_with_pod(pod_to_add, 1);
        }
        Status::success()
    }
    fn remove_pod(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        pod_to_remove: &PodInfo,
        _: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<State>() {
            s.update_with_pod(pod_to_remove, -1);
        }
        Status::success()
    }
}

impl FilterPlugin for VolumeRestrictions {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for v in pod.spec().volumes.iter().flatten() {
            if !needs_restrictions_check(v) {
                continue;
            }
            if let Some(other) = node.pods().iter().find(|p| is_volume_conflict(v, p)) {
                let status = Status::new(Code::Unschedulable, ERR_REASON_DISK_CONFLICT);
                if !state.explain() {
                    return status;
                }
                return status.with_notes([format!(
                    "volume {}: the same disk is mounted by pod {} on this node",
                    v.name,
                    other.key()
                )]);
            }
        }
        match state.read::<State>() {
            Some(s) if s.conflicting > 0 => {
                let status = Status::new(Code::Unschedulable, ERR_REASON_RWOP_CONFLICT);
                if !state.explain() {
                    return status;
                }
                let claims: Vec<&str> = s.rwop_claims.iter().map(String::as_str).collect();
                status.with_notes([format!(
                    "{} of the pod's ReadWriteOncePod claim(s) ({}) already used by another pod",
                    s.conflicting,
                    claims.join(", ")
                )])
            }
            Some(_) => Status::success(),
            None => Status::new(
                Code::Error,
                format!("reading {VOLUME_RESTRICTIONS}'s PreFilter state: not found"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(volumes: serde_json::Value) -> PodInfo {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": volumes}
        }))
        .unwrap();
        PodInfo::new(Arc::new(pod)).unwrap()
    }

    fn volume(v: serde_json::Value) -> Volume {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn gce_pd_conflicts_unless_both_read_only() {
        let other =
            pod(json!([{"name": "d", "gcePersistentDisk": {"pdName": "disk", "readOnly": true}}]));
        let ro =
            volume(json!({"name": "x", "gcePersistentDisk": {"pdName": "disk", "readOnly": true}}));
        let rw = volume(json!({"name": "x", "gcePersistentDisk": {"pdName": "disk"}}));
        assert!(!is_volume_conflict(&ro, &other));
        assert!(is_volume_conflict(&rw, &other));
    }

    #[test]
    fn ebs_conflicts_even_read_only() {
        let other = pod(
            json!([{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": true}}]),
        );
        let ro = volume(
            json!({"name": "x", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": true}}),
        );
        assert!(is_volume_conflict(&ro, &other));
    }

    #[test]
    fn rbd_images_match_on_a_shared_monitor_with_the_default_pool() {
        let other = pod(json!([{"name": "d", "rbd": {"monitors": ["m1", "m2"], "image": "img"}}]));
        let same = volume(
            json!({"name": "x", "rbd": {"monitors": ["m2"], "pool": "rbd", "image": "img"}}),
        );
        let other_pool =
            volume(json!({"name": "x", "rbd": {"monitors": ["m2"], "pool": "p2", "image": "img"}}));
        let no_shared_monitor =
            volume(json!({"name": "x", "rbd": {"monitors": ["m3"], "image": "img"}}));
        assert!(is_volume_conflict(&same, &other));
        assert!(!is_volume_conflict(&other_pool, &other));
        assert!(!is_volume_conflict(&no_shared_monitor, &other));
    }

    #[test]
    fn iscsi_conflicts_on_the_same_iqn_unless_both_read_only() {
        let other = pod(
            json!([{"name": "d", "iscsi": {"targetPortal": "t", "iqn": "iqn.a", "lun": 0, "readOnly": true}}]),
        );
        let ro = volume(
            json!({"name": "x", "iscsi": {"targetPortal": "t", "iqn": "iqn.a", "lun": 0, "readOnly": true}}),
        );
        let rw =
            volume(json!({"name": "x", "iscsi": {"targetPortal": "t", "iqn": "iqn.a", "lun": 0}}));
        assert!(!is_volume_conflict(&ro, &other));
        assert!(is_volume_conflict(&rw, &other));
    }

    #[test]
    fn add_and_remove_pod_move_the_read_write_once_pod_count() {
        let mut state = CycleState::new();
        state.write(State {
            rwop_claims: ["default/data".to_owned()].into(),
            conflicting: 0,
        });
        let user = pod(json!([{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]));
        let node: k8s_openapi::api::core::v1::Node =
            serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
        let node = NodeInfo::new(Arc::new(node)).unwrap();
        let plugin = VolumeRestrictions;
        let incoming = pod(json!([]));
        plugin.add_pod(&mut state, &incoming, &user, &node);
        assert_eq!(state.read::<State>().unwrap().conflicting, 1);
        assert!(!plugin.filter(&state, &incoming, &node).is_success());
        plugin.remove_pod(&mut state, &incoming, &user, &node);
        assert_eq!(state.read::<State>().unwrap().conflicting, 0);
        assert!(plugin.filter(&state, &incoming, &node).is_success());
    }
}
