//! The storage kinds of a scenario (FORMAT-volumes.md): `v1` PersistentVolume and
//! PersistentVolumeClaim, `storage.k8s.io/v1` StorageClass, CSINode, CSIDriver,
//! CSIStorageCapacity and VolumeAttachment.
//!
//! Each is decoded strictly (unknown fields and quantities are checked as for Pods),
//! given the API server's v1 defaults (PV `persistentVolumeReclaimPolicy: Retain` and
//! `status.phase: Pending`, PV/claim `volumeMode: Filesystem`, claim `status.phase:
//! Pending`, StorageClass `reclaimPolicy: Delete` and `volumeBindingMode: Immediate`,
//! CSIDriver `attachRequired: true`, `storageCapacity: false`, `podInfoOnMount: false`,
//! namespace `default` for the namespaced kinds) and validated where the API server
//! would refuse the object and the plugins would read nonsense (a PV node affinity
//! that does not parse, an unknown binding mode, a capacity without a class).

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    NodeSelector, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
    PersistentVolumeStatus,
};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use kubesched_framework::StorageObjects;
use serde_json::Value;

use super::decode::decode;
use super::validate::raw_str;
use super::{Origin, ScenarioError};

/// The storage objects of a scenario, defaulted, in file order per kind.
#[derive(Clone, Debug, Default)]
pub struct StorageDocuments {
    /// PersistentVolumes.
    pub persistent_volumes: Vec<Arc<PersistentVolume>>,
    /// PersistentVolumeClaims (namespace set).
    pub claims: Vec<Arc<PersistentVolumeClaim>>,
    /// StorageClasses.
    pub classes: Vec<Arc<StorageClass>>,
    /// CSINodes.
    pub csi_nodes: Vec<Arc<CSINode>>,
    /// CSIDrivers.
    pub csi_drivers: Vec<Arc<CSIDriver>>,
    /// CSIStorageCapacities (namespace set).
    pub capacities: Vec<Arc<CSIStorageCapacity>>,
    /// VolumeAttachments.
    pub attachments: Vec<Arc<VolumeAttachment>>,
}

impl StorageDocuments {
    /// The index the volume plugins read.
    pub fn index(&self) -> StorageObjects {
        let mut index = StorageObjects::new();
        for pv in &self.persistent_volumes {
            index.add_pv(pv.clone());
        }
        for claim in &self.claims {
            index.add_claim(claim.clone());
        }
        for class in &self.classes {
            index.add_class(class.clone());
        }
        for csi_node in &self.csi_nodes {
            index.add_csi_node(csi_node.clone());
        }
        for driver in &self.csi_drivers {
            index.add_csi_driver(driver.clone());
        }
        for capacity in &self.capacities {
            index.add_capacity(capacity.clone());
        }
        for attachment in &self.attachments {
            index.add_attachment(attachment.clone());
        }
        index
    }

    /// `true` when the scenario has no storage object.
    pub fn is_empty(&self) -> bool {
        self.persistent_volumes.is_empty()
            && self.claims.is_empty()
            && self.classes.is_empty()
            && self.csi_nodes.is_empty()
            && self.csi_drivers.is_empty()
            && self.capacities.is_empty()
            && self.attachments.is_empty()
    }
}

/// Whether `(apiVersion, kind)` is one of the storage kinds read here.
pub(super) fn is_storage_kind(api_version: &str, kind: &str) -> bool {
    matches!(
        (api_version, kind),
        ("v1", "PersistentVolume" | "PersistentVolumeClaim")
            | (
                "storage.k8s.io/v1",
                "StorageClass"
                    | "CSINode"
                    | "CSIDriver"
                    | "CSIStorageCapacity"
                    | "VolumeAttachment"
            )
    )
}

/// Reads the storage documents of a scenario, refusing duplicates.
#[derive(Default)]
pub(super) struct StorageLoader {
    /// (kind, namespace/name or name) → where it was defined.
    seen: HashMap<(String, String), String>,
    /// (file, `namespace/name`, class) of every claim that names a class.
    claim_classes: Vec<(String, String, String)>,
}

fn namespaced(kind: &str) -> bool {
    matches!(kind, "PersistentVolumeClaim" | "CSIStorageCapacity")
}

fn invalid(file: &str, object: &str, field: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError::Decode {
        file: file.to_owned(),
        object: object.to_owned(),
        field: field.to_owned(),
        message: message.into(),
    }
}

impl StorageLoader {
    /// Decodes, defaults and validates one storage document into `docs`.
    pub(super) fn add(
        &mut self,
        docs: &mut StorageDocuments,
        origin: &Origin<'_>,
        kind: &str,
        value: &Value,
    ) -> Result<(), ScenarioError> {
        let Some(name) = raw_str(value, "/metadata/name") else {
            return Err(ScenarioError::MissingName {
                document: origin.document(),
                kind: kind.to_owned(),
            });
        };
        let key = if namespaced(kind) {
            let ns = raw_str(value, "/metadata/namespace").unwrap_or("default");
            format!("{ns}/{name}")
        } else {
            name.to_owned()
        };
        let file = origin.file.to_owned();
        let object = format!("{kind} {key}");
        if let Some(first) = self.seen.get(&(kind.to_owned(), key.clone())) {
            return Err(invalid(
                &file,
                &object,
                "metadata.name",
                format!("duplicate {kind} (first defined in {first})"),
            ));
        }
        self.seen
            .insert((kind.to_owned(), key.clone()), origin.source());
        let default_namespace =
            |meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
                if meta.namespace.as_deref().unwrap_or_default().is_empty() {
                    meta.namespace = Some("default".to_owned());
                }
            };
        match kind {
            "PersistentVolume" => {
                let mut pv: PersistentVolume = decode(value, &file, &object)?;
                let spec = pv.spec.get_or_insert_with(Default::default);
                spec.persistent_volume_reclaim_policy
                    .get_or_insert_with(|| "Retain".to_owned());
                spec.volume_mode
                    .get_or_insert_with(|| "Filesystem".to_owned());
                if let Some(required) = spec
                    .node_affinity
                    .as_ref()
                    .and_then(|a| a.required.as_ref())
                {
                    validate_node_selector(required).map_err(|(field, message)| {
                        invalid(
                            &file,
                            &object,
                            &format!("spec.nodeAffinity.required.{field}"),
                            message,
                        )
                    })?;
                }
                let status = pv
                    .status
                    .get_or_insert_with(PersistentVolumeStatus::default);
                status.phase.get_or_insert_with(|| "Pending".to_owned());
                docs.persistent_volumes.push(Arc::new(pv));
            }
            "PersistentVolumeClaim" => {
                let mut claim: PersistentVolumeClaim = decode(value, &file, &object)?;
                default_namespace(&mut claim.metadata);
                let spec = claim.spec.get_or_insert_with(Default::default);
                spec.volume_mode
                    .get_or_insert_with(|| "Filesystem".to_owned());
                if let Some(selector) = &spec.selector {
                    validate_label_selector(selector).map_err(|(field, message)| {
                        invalid(&file, &object, &format!("spec.selector.{field}"), message)
                    })?;
                }
                let class = kubesched_framework::storage::claim_class(&claim);
                if !class.is_empty() {
                    self.claim_classes
                        .push((file.clone(), key.clone(), class.to_owned()));
                }
                let status = claim
                    .status
                    .get_or_insert_with(PersistentVolumeClaimStatus::default);
                status.phase.get_or_insert_with(|| "Pending".to_owned());
                docs.claims.push(Arc::new(claim));
            }
            "StorageClass" => {
                let mut class: StorageClass = decode(value, &file, &object)?;
                if class.provisioner.is_empty() {
                    return Err(invalid(&file, &object, "provisioner", "missing"));
                }
                class
                    .reclaim_policy
                    .get_or_insert_with(|| "Delete".to_owned());
                let mode = class
                    .volume_binding_mode
                    .get_or_insert_with(|| "Immediate".to_owned());
                if !matches!(mode.as_str(), "Immediate" | "WaitForFirstConsumer") {
                    return Err(invalid(
                        &file,
                        &object,
                        "volumeBindingMode",
                        format!(
                            "unsupported value {mode:?}: must be Immediate or WaitForFirstConsumer"
                        ),
                    ));
                }
                for (i, term) in class.allowed_topologies.iter().flatten().enumerate() {
                    for (j, req) in term.match_label_expressions.iter().flatten().enumerate() {
                        if req.values.is_empty() {
                            return Err(invalid(
                                &file,
                                &object,
                                &format!(
                                    "allowedTopologies[{i}].matchLabelExpressions[{j}].values"
                                ),
                                "must have at least one value",
                            ));
                        }
                    }
                }
                docs.classes.push(Arc::new(class));
            }
            "CSINode" => {
                let csi_node: CSINode = decode(value, &file, &object)?;
                for (i, driver) in csi_node.spec.drivers.iter().enumerate() {
                    if let Some(count) = driver.allocatable.as_ref().and_then(|a| a.count)
                        && count < 0
                    {
                        return Err(invalid(
                            &file,
                            &object,
                            &format!("spec.drivers[{i}].allocatable.count"),
                            "must be greater than or equal to 0",
                        ));
                    }
                }
                docs.csi_nodes.push(Arc::new(csi_node));
            }
            "CSIDriver" => {
                let mut driver: CSIDriver = decode(value, &file, &object)?;
                driver.spec.attach_required.get_or_insert(true);
                driver.spec.storage_capacity.get_or_insert(false);
                driver.spec.pod_info_on_mount.get_or_insert(false);
                docs.csi_drivers.push(Arc::new(driver));
            }
            "CSIStorageCapacity" => {
                let mut capacity: CSIStorageCapacity = decode(value, &file, &object)?;
                default_namespace(&mut capacity.metadata);
                if capacity.storage_class_name.is_empty() {
                    return Err(invalid(&file, &object, "storageClassName", "missing"));
                }
                if let Some(selector) = &capacity.node_topology {
                    validate_label_selector(selector).map_err(|(field, message)| {
                        invalid(&file, &object, &format!("nodeTopology.{field}"), message)
                    })?;
                }
                docs.capacities.push(Arc::new(capacity));
            }
            _ => {
                let attachment: VolumeAttachment = decode(value, &file, &object)?;
                if attachment.spec.attacher.is_empty() {
                    return Err(invalid(&file, &object, "spec.attacher", "missing"));
                }
                if attachment.spec.node_name.is_empty() {
                    return Err(invalid(&file, &object, "spec.nodeName", "missing"));
                }
                docs.attachments.push(Arc::new(attachment));
            }
        }
        Ok(())
    }
}

impl StorageLoader {
    /// Notes for what loads but is probably a mistake: a claim naming a StorageClass
    /// that is not in the scenario (kube-scheduler then treats it as Immediate binding,
    /// so a pod using it while unbound is rejected).
    pub(super) fn warnings(&self, docs: &StorageDocuments) -> Vec<String> {
        let classes: std::collections::HashSet<&str> = docs
            .classes
            .iter()
            .filter_map(|c| c.metadata.name.as_deref())
            .collect();
        self.claim_classes
            .iter()
            .filter(|(_, _, class)| !classes.contains(class.as_str()))
            .map(|(file, key, class)| {
                format!(
                    "{file}: PersistentVolumeClaim {key}: spec.storageClassName: StorageClass {class:?} is not in the scenario; while unbound the claim counts as Immediate binding, as in kube-scheduler"
                )
            })
            .collect()
    }
}

/// Checks a node selector as the API server validates a PV's node affinity: at least
/// one term, known operators with the right number of values, `matchFields` on
/// `metadata.name` only. The error is (field path, message).
fn validate_node_selector(selector: &NodeSelector) -> Result<(), (String, String)> {
    if selector.node_selector_terms.is_empty() {
        return Err((
            "nodeSelectorTerms".into(),
            "must have at least one node selector term".into(),
        ));
    }
    for (i, term) in selector.node_selector_terms.iter().enumerate() {
        for (j, req) in term.match_expressions.iter().flatten().enumerate() {
            let field = format!("nodeSelectorTerms[{i}].matchExpressions[{j}]");
            let values = req.values.as_deref().unwrap_or_default();
            if req.key.is_empty() {
                return Err((format!("{field}.key"), "must not be empty".into()));
            }
            match req.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err((
                        format!("{field}.values"),
                        format!("must be specified when `operator` is '{}'", req.operator),
                    ));
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err((
                        format!("{field}.values"),
                        format!("may not be specified when `operator` is '{}'", req.operator),
                    ));
                }
                "Gt" | "Lt" => {
                    if values.len() != 1 {
                        return Err((
                            format!("{field}.values"),
                            "must be specified single value when `operator` is 'Lt' or 'Gt'".into(),
                        ));
                    }
                    if values[0].parse::<i64>().is_err() {
                        return Err((
                            format!("{field}.values[0]"),
                            format!("{:?}: must be an integer", values[0]),
                        ));
                    }
                }
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                op => {
                    return Err((
                        format!("{field}.operator"),
                        format!(
                            "unsupported value {op:?}: must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt"
                        ),
                    ));
                }
            }
        }
        for (j, req) in term.match_fields.iter().flatten().enumerate() {
            let field = format!("nodeSelectorTerms[{i}].matchFields[{j}]");
            if req.key != "metadata.name" {
                return Err((
                    format!("{field}.key"),
                    format!("unsupported value {:?}: must be metadata.name", req.key),
                ));
            }
            if !matches!(req.operator.as_str(), "In" | "NotIn") {
                return Err((
                    format!("{field}.operator"),
                    format!("unsupported value {:?}: must be In or NotIn", req.operator),
                ));
            }
            if req.values.as_ref().is_none_or(|v| v.len() != 1) {
                return Err((
                    format!("{field}.values"),
                    "must have exactly one value".into(),
                ));
            }
        }
    }
    Ok(())
}

/// Checks a label selector's operators and values; the error is (field path, message).
fn validate_label_selector(
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Result<(), (String, String)> {
    for (i, req) in selector.match_expressions.iter().flatten().enumerate() {
        let field = format!("matchExpressions[{i}]");
        let has_values = req.values.as_ref().is_some_and(|v| !v.is_empty());
        match req.operator.as_str() {
            "In" | "NotIn" if !has_values => {
                return Err((
                    format!("{field}.values"),
                    "must be specified when `operator` is 'In' or 'NotIn'".into(),
                ));
            }
            "Exists" | "DoesNotExist" if has_values => {
                return Err((
                    format!("{field}.values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => {
                return Err((
                    format!("{field}.operator"),
                    format!("not a valid selector operator: {op:?}"),
                ));
            }
        }
    }
    Ok(())
}
