//! Validation of what every document needs (apiVersion, kind) and of the kinds the
//! loader knows.

use serde_json::{Map, Value};

use super::{Origin, ScenarioError};

/// Whether kube-scheduler or kubesched reads objects of this kind (the others are
/// ignored with a note): the kinds its plugins read, and the workloads the what-if
/// tools expand.
pub(super) fn is_known_kind(api_version: &str, kind: &str) -> bool {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    matches!(
        (group, kind),
        (
            "",
            "Pod"
                | "Node"
                | "Service"
                | "ReplicationController"
                | "Namespace"
                | "PersistentVolume"
                | "PersistentVolumeClaim"
        ) | ("apps", "ReplicaSet" | "StatefulSet" | "Deployment")
            | ("batch", "Job")
            | ("policy", "PodDisruptionBudget")
            | ("scheduling.k8s.io", "PriorityClass")
            | (
                "storage.k8s.io",
                "StorageClass"
                    | "CSINode"
                    | "CSIDriver"
                    | "CSIStorageCapacity"
                    | "VolumeAttachment"
            )
            | (
                "resource.k8s.io",
                "ResourceClaim" | "ResourceSlice" | "DeviceClass" | "ResourceClaimTemplate"
            )
            | ("kubescheduler.config.k8s.io", "KubeSchedulerConfiguration")
    )
}

/// A string at `pointer`, if it is a non-empty string.
pub(super) fn raw_str<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

pub(super) fn type_field<'v>(
    object: &'v Map<String, Value>,
    field: &'static str,
    origin: &Origin<'_>,
) -> Result<&'v str, ScenarioError> {
    match object.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        None | Some(Value::Null) => Err(ScenarioError::MissingTypeField {
            document: origin.document(),
            field,
            problem: "missing",
        }),
        Some(_) => Err(ScenarioError::MissingTypeField {
            document: origin.document(),
            field,
            problem: "must be a non-empty string",
        }),
    }
}

pub(super) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}
