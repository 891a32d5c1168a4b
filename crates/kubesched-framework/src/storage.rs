//! [`StorageObjects`]: the cluster's storage API objects (PersistentVolumes, claims,
//! StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments),
//! indexed once, for the volume plugins to read the way kube-scheduler's plugins read
//! their informers' listers.
//!
//! The index is immutable: it is the API server's view. What the scheduler itself
//! assumes (VolumeBinding's assume caches) lives in the plugin, on top of it.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};

/// The beta annotation that, when present, gives a PV's or a claim's class instead of
/// `spec.storageClassName`.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// A PV's class: the beta annotation if set, else `spec.storageClassName` (component
/// helpers' `GetPersistentVolumeClass`).
pub fn pv_class(pv: &PersistentVolume) -> &str {
    if let Some(class) = pv
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
    {
        return class;
    }
    pv.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or("")
}

/// A claim's class: the beta annotation if set, else `spec.storageClassName`
/// (`GetPersistentVolumeClaimClass`).
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    if let Some(class) = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
    {
        return class;
    }
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or("")
}

/// The storage objects of a cluster, by the keys the plugins look them up with.
#[derive(Clone, Debug, Default)]
pub struct StorageObjects {
    pvs: Vec<Arc<PersistentVolume>>,
    pv_by_name: HashMap<String, usize>,
    /// Class → positions in `pvs`, in the order the PVs were added.
    pvs_by_class: HashMap<String, Vec<usize>>,
    /// `namespace/name` → claim.
    claims: HashMap<String, Arc<PersistentVolumeClaim>>,
    classes: HashMap<String, Arc<StorageClass>>,
    csi_nodes: HashMap<String, Arc<CSINode>>,
    csi_drivers: HashMap<String, Arc<CSIDriver>>,
    capacities: Vec<Arc<CSIStorageCapacity>>,
    /// `spec.nodeName` → the attachments to that node.
    attachments: HashMap<String, Vec<Arc<VolumeAttachment>>>,
    /// Why some of the objects cannot be had (the runtime could not list a kind);
    /// `None` when they all can.
    unavailable: Option<String>,
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

impl StorageObjects {
    /// No objects.
    pub fn new() -> StorageObjects {
        StorageObjects::default()
    }

    /// Adds a PV (a later one with the same name replaces it).
    pub fn add_pv(&mut self, pv: Arc<PersistentVolume>) {
        let name = name_of(&pv.metadata);
        if let Some(&i) = self.pv_by_name.get(&name) {
            let old_class = pv_class(&self.pvs[i]).to_string();
            if let Some(list) = self.pvs_by_class.get_mut(&old_class) {
                list.retain(|&j| j != i);
            }
            self.pvs_by_class
                .entry(pv_class(&pv).to_string())
                .or_default()
                .push(i);
            self.pvs[i] = pv;
            return;
        }
        let i = self.pvs.len();
        self.pvs_by_class
            .entry(pv_class(&pv).to_string())
            .or_default()
            .push(i);
        self.pv_by_name.insert(name, i);
        self.pvs.push(pv);
    }

    /// Adds a claim; its namespace must be set.
    pub fn add_claim(&mut self, claim: Arc<PersistentVolumeClaim>) {
        let key = format!(
            "{}/{}",
            claim.metadata.namespace.as_deref().unwrap_or("default"),
            name_of(&claim.metadata)
        );
        self.claims.insert(key, claim);
    }

    /// Adds a StorageClass.
    pub fn add_class(&mut self, class: Arc<StorageClass>) {
        self.classes.insert(name_of(&class.metadata), class);
    }

    /// Adds a CSINode (named after its node).
    pub fn add_csi_node(&mut self, csi_node: Arc<CSINode>) {
        self.csi_nodes.insert(name_of(&csi_node.metadata), csi_node);
    }

    /// Adds a CSIDriver.
    pub fn add_csi_driver(&mut self, driver: Arc<CSIDriver>) {
        self.csi_drivers.insert(name_of(&driver.metadata), driver);
    }

    /// Adds a CSIStorageCapacity.
    pub fn add_capacity(&mut self, capacity: Arc<CSIStorageCapacity>) {
        self.capacities.push(capacity);
    }

    /// Adds a VolumeAttachment.
    pub fn add_attachment(&mut self, attachment: Arc<VolumeAttachment>) {
        self.attachments
            .entry(attachment.spec.node_name.clone())
            .or_default()
            .push(attachment);
    }

    /// A PV by name.
    pub fn pv(&self, name: &str) -> Option<&Arc<PersistentVolume>> {
        self.pv_by_name.get(name).map(|&i| &self.pvs[i])
    }

    /// The PVs of a class (`""`: the PVs without one), in the order they were added.
    pub fn pvs_of_class(&self, class: &str) -> impl Iterator<Item = &Arc<PersistentVolume>> {
        self.pvs_by_class
            .get(class)
            .into_iter()
            .flatten()
            .map(|&i| &self.pvs[i])
    }

    /// Every PV.
    pub fn pvs(&self) -> &[Arc<PersistentVolume>] {
        &self.pvs
    }

    /// A claim by namespace and name.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<&Arc<PersistentVolumeClaim>> {
        self.claims.get(&format!("{namespace}/{name}"))
    }

    /// A StorageClass by name.
    pub fn class(&self, name: &str) -> Option<&Arc<StorageClass>> {
        self.classes.get(name)
    }

    /// The CSINode of a node.
    pub fn csi_node(&self, node: &str) -> Option<&Arc<CSINode>> {
        self.csi_nodes.get(node)
    }

    /// A CSIDriver by name.
    pub fn csi_driver(&self, name: &str) -> Option<&Arc<CSIDriver>> {
        self.csi_drivers.get(name)
    }

    /// Every CSIStorageCapacity.
    pub fn capacities(&self) -> &[Arc<CSIStorageCapacity>] {
        &self.capacities
    }

    /// The VolumeAttachments whose `spec.nodeName` is `node`.
    pub fn attachments_of_node(&self, node: &str) -> &[Arc<VolumeAttachment>] {
        self.attachments.get(node).map_or(&[], Vec::as_slice)
    }

    /// Says why some kinds cannot be had (the volume plugins then refuse the pods that
    /// need them, with this reason, rather than decide on missing objects).
    pub fn set_unavailable(&mut self, reason: Option<String>) {
        self.unavailable = reason;
    }

    /// Why some kinds cannot be had, when so.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// `true` when there are no objects at all.
    pub fn is_empty(&self) -> bool {
        self.pvs.is_empty()
            && self.claims.is_empty()
            && self.classes.is_empty()
            && self.csi_nodes.is_empty()
            && self.csi_drivers.is_empty()
            && self.capacities.is_empty()
            && self.attachments.is_empty()
    }
}
