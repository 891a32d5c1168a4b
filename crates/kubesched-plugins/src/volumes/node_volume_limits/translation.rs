//! In-tree volume → CSI driver translation, as much of csi-translation-lib as
//! NodeVolumeLimits needs: which in-tree plugin a volume or PV uses, whether its CSI
//! migration is on for a node, and the CSI driver name and volume handle it counts as.
//!
//! Migration is complete (GA, no CSINode annotation needed) for AWS EBS, GCE PD, Azure
//! Disk and Cinder; it needs a CSINode object for the node. Azure File, vSphere and
//! Portworx volumes are recognised as migratable inline volumes (so NodeVolumeLimits'
//! PreFilter does not skip the pod) but counted for no driver: their CSI drivers do not
//! publish attach limits.

use k8s_openapi::api::core::v1::{PersistentVolume, Volume};
use k8s_openapi::api::storage::v1::CSINode;

/// AWS EBS: in-tree plugin name.
pub const AWS_EBS_IN_TREE: &str = "kubernetes.io/aws-ebs";
/// AWS EBS: CSI driver name.
pub const AWS_EBS_DRIVER: &str = "ebs.csi.aws.com";
/// GCE PD: in-tree plugin name.
pub const GCE_PD_IN_TREE: &str = "kubernetes.io/gce-pd";
/// GCE PD: CSI driver name.
pub const GCE_PD_DRIVER: &str = "pd.csi.storage.gke.io";
/// Azure Disk: in-tree plugin name.
pub const AZURE_DISK_IN_TREE: &str = "kubernetes.io/azure-disk";
/// Azure Disk: CSI driver name.
pub const AZURE_DISK_DRIVER: &str = "disk.csi.azure.com";
/// Cinder: in-tree plugin name.
pub const CINDER_IN_TREE: &str = "kubernetes.io/cinder";
/// Cinder: CSI driver name.
pub const CINDER_DRIVER: &str = "cinder.csi.openstack.org";

const UNSPECIFIED: &str = "UNSPECIFIED";

/// The CSI driver of an in-tree plugin whose migration kubesched counts.
pub fn csi_name_from_in_tree(plugin: &str) -> Option<&'static str> {
    match plugin {
        AWS_EBS_IN_TREE => Some(AWS_EBS_DRIVER),
        GCE_PD_IN_TREE => Some(GCE_PD_DRIVER),
        AZURE_DISK_IN_TREE => Some(AZURE_DISK_DRIVER),
        CINDER_IN_TREE => Some(CINDER_DRIVER),
        _ => None,
    }
}

/// `IsMigratableIntreePluginByName`: a provisioner name that is an in-tree plugin.
pub fn is_migratable_in_tree_plugin(name: &str) -> bool {
    matches!(
        name,
        AWS_EBS_IN_TREE
            | GCE_PD_IN_TREE
            | AZURE_DISK_IN_TREE
            | CINDER_IN_TREE
            | "kubernetes.io/azure-file"
            | "kubernetes.io/vsphere-volume"
            | "kubernetes.io/portworx-volume"
    )
}

/// `IsInlineMigratable`: an inline volume of an in-tree plugin with a CSI driver.
pub fn is_inline_migratable(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.azure_disk.is_some()
        || v.cinder.is_some()
        || v.azure_file.is_some()
        || v.vsphere_volume.is_some()
        || v.portworx_volume.is_some()
}

/// `isCSIMigrationOn`: whether the node runs the plugin's volumes through its CSI
/// driver. Needs the node's CSINode.
pub fn is_csi_migration_on(csi_node: Option<&CSINode>, plugin: &str) -> bool {
    csi_node.is_some() && csi_name_from_in_tree(plugin).is_some()
}

/// The in-tree plugin of an inline volume.
pub fn inline_plugin(v: &Volume) -> Option<&'static str> {
    if v.gce_persistent_disk.is_some() {
        Some(GCE_PD_IN_TREE)
    } else if v.aws_elastic_block_store.is_some() {
        Some(AWS_EBS_IN_TREE)
    } else if v.azure_disk.is_some() {
        Some(AZURE_DISK_IN_TREE)
    } else if v.cinder.is_some() {
        Some(CINDER_IN_TREE)
    } else {
        None
    }
}

/// The in-tree plugin of a PV, when it is one whose migration kubesched counts.
pub fn pv_plugin(pv: &PersistentVolume) -> Option<&'static str> {
    let spec = pv.spec.as_ref()?;
    if spec.gce_persistent_disk.is_some() {
        Some(GCE_PD_IN_TREE)
    } else if spec.aws_elastic_block_store.is_some() {
        Some(AWS_EBS_IN_TREE)
    } else if spec.azure_disk.is_some() {
        Some(AZURE_DISK_IN_TREE)
    } else if spec.cinder.is_some() {
        Some(CINDER_IN_TREE)
    } else {
        None
    }
}

/// `KubernetesVolumeIDToEBSVolumeID`: `aws://zone/vol-123` → `vol-123`; a bare ID is
/// kept.
fn ebs_volume_id(kubernetes_id: &str) -> Result<String, String> {
    let Some(rest) = kubernetes_id.strip_prefix("aws://") else {
        return Ok(kubernetes_id.to_owned());
    };
    // aws://<zone>/<id>: the URL path, without its slashes.
    let path = rest.split_once('/').map_or("", |(_, p)| p);
    let id = path.trim_matches('/');
    if id.starts_with("vol-") && !id.contains('/') {
        Ok(id.to_owned())
    } else {
        Err(format!("Invalid format for AWS volume ({kubernetes_id})"))
    }
}

/// The CSI volume handle of an inline volume: `Ok(None)` for a plugin whose volumes
/// are not counted, `Err` when the volume cannot be translated.
pub fn inline_volume_handle(v: &Volume) -> Result<Option<String>, String> {
    if let Some(pd) = &v.gce_persistent_disk {
        return Ok(Some(format!(
            "projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{}",
            pd.pd_name
        )));
    }
    if let Some(ebs) = &v.aws_elastic_block_store {
        return ebs_volume_id(&ebs.volume_id).map(Some);
    }
    if let Some(disk) = &v.azure_disk {
        return Ok(Some(disk.disk_uri.clone()));
    }
    if let Some(cinder) = &v.cinder {
        return Ok(Some(cinder.volume_id.clone()));
    }
    Ok(None)
}

/// GCE's region of a zone list (`us-central1-a` → `us-central1`); all zones must agree.
fn gce_region(zones: &[&str]) -> Result<String, String> {
    let mut region: Option<String> = None;
    for zone in zones {
        let parts: Vec<&str> = zone.split('-').collect();
        if parts.len() < 3 {
            return Err(format!("zone {zone:?} is not a valid GCE zone"));
        }
        let r = parts[..parts.len() - 1].join("-");
        match &region {
            Some(existing) if *existing != r => {
                return Err(format!("multiple regions in zones {zones:?}"));
            }
            _ => region = Some(r),
        }
    }
    region.ok_or_else(|| "no zones".to_owned())
}

/// The CSI volume handle of an in-tree PV (`TranslateInTreePVToCSI`), `Err` when it
/// cannot be translated.
pub fn pv_volume_handle(pv: &PersistentVolume) -> Result<Option<String>, String> {
    let Some(spec) = pv.spec.as_ref() else {
        return Ok(None);
    };
    if let Some(pd) = &spec.gce_persistent_disk {
        let labels = pv.metadata.labels.as_ref();
        let label = |k: &str| labels.and_then(|l| l.get(k)).map_or("", String::as_str);
        let beta = label("failure-domain.beta.kubernetes.io/zone");
        let ga = label("topology.kubernetes.io/zone");
        let zones_label = if beta.is_empty() { ga } else { beta };
        let zones: Vec<&str> = zones_label.split("__").collect();
        let handle = if zones.len() == 1 && !zones[0].is_empty() {
            format!(
                "projects/{UNSPECIFIED}/zones/{}/disks/{}",
                zones[0], pd.pd_name
            )
        } else if zones.len() > 1 {
            let region = gce_region(&zones)?;
            format!(
                "projects/{UNSPECIFIED}/regions/{region}/disks/{}",
                pd.pd_name
            )
        } else {
            format!(
                "projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{}",
                pd.pd_name
            )
        };
        return Ok(Some(handle));
    }
    if let Some(ebs) = &spec.aws_elastic_block_store {
        return ebs_volume_id(&ebs.volume_id).map(Some);
    }
    if let Some(disk) = &spec.azure_disk {
        return Ok(Some(disk.disk_uri.clone()));
    }
    if let Some(cinder) = &spec.cinder {
        return Ok(Some(cinder.volume_id.clone()));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ebs_ids_lose_their_url_form() {
        assert_eq!(ebs_volume_id("vol-1").unwrap(), "vol-1");
        assert_eq!(
            ebs_volume_id("aws://us-east-1a/vol-123").unwrap(),
            "vol-123"
        );
        assert!(ebs_volume_id("aws://us-east-1a/disk-1").is_err());
    }

    #[test]
    fn gce_regions_come_from_zones() {
        assert_eq!(
            gce_region(&["us-central1-a", "us-central1-b"]).unwrap(),
            "us-central1"
        );
        assert!(gce_region(&["us-central1-a", "europe-west1-b"]).is_err());
    }
}
