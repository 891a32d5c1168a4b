//! Validation of what every document needs (apiVersion, kind) and of the kinds the
//! loader knows.

use serde_json::{Map, Value};

use super::{Origin, ScenarioError};

/// The kinds kube-scheduler or kubesched reads, by API group (`""` for the core group):
/// the kinds its plugins read, and the workloads the what-if tools expand.
const KNOWN_KINDS: &[(&str, &str)] = &[
    ("", "Pod"),
    ("", "Node"),
    ("", "Service"),
    ("", "ReplicationController"),
    ("", "Namespace"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "Deployment"),
    ("batch", "Job"),
    ("policy", "PodDisruptionBudget"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSIStorageCapacity"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceSlice"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("kubescheduler.config.k8s.io", "KubeSchedulerConfiguration"),
    ("scheduling.x-k8s.io", "PodGroup"),
    ("scheduling.x-k8s.io", "ElasticQuota"),
    ("scheduling.k8s.io", "PodGroup"),
    ("scheduling.k8s.io", "Workload"),
];

/// Whether kube-scheduler or kubesched reads objects of this kind (the others are
/// ignored with a note).
pub(super) fn is_known_kind(api_version: &str, kind: &str) -> bool {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    KNOWN_KINDS.contains(&(group, kind))
}

/// The known kind `kind` is most likely a typo of, if any: another case
/// (`deployment`), a truncation (`KubeSchedulerConfig`) or one or two letters off
/// (`Deploymnet`; one for kinds of up to 8 letters, so that real kinds such as `Role` are
/// not taken for `Node`). `None` for a known kind.
pub(super) fn near_miss_kind(kind: &str) -> Option<&'static str> {
    if KNOWN_KINDS.iter().any(|(_, k)| *k == kind) {
        return None;
    }
    let lower = kind.to_lowercase();
    KNOWN_KINDS.iter().map(|(_, k)| *k).find(|known| {
        let known_lower = known.to_lowercase();
        let allowed = if known.len() > 8 { 2 } else { 1 };
        known_lower == lower
            || (kind.len() * 5 >= known.len() * 3 && known.starts_with(kind))
            || strsim::damerau_levenshtein(&lower, &known_lower) <= allowed
    })
}

/// The problems of `name` as the API server's `ValidateObjectMeta` words them for a name
/// that must be a DNS-1123 subdomain (Pods, Nodes), or `None`.
pub(super) fn subdomain_name_problem(name: &str) -> Option<String> {
    let problems = kubesched_config::k8s_names::dns1123_subdomain_errors(name);
    (!problems.is_empty())
        .then(|| format!("Invalid value: {}: {}", quote_go(name), problems.join(", ")))
}

/// The problems of the name of an object of a known kind other than Pod and Node, in the
/// API server's words: a DNS-1123 label for a Namespace, a DNS-1035 label for a Service,
/// a DNS-1123 subdomain for the others. `None` when valid, and for kinds kubesched does
/// not read (their rules vary: a ClusterRole may be named `system:node`).
pub(super) fn known_kind_name_problem(api_version: &str, kind: &str, name: &str) -> Option<String> {
    use kubesched_config::k8s_names::{dns1035_label_errors, dns1123_label_errors};
    if !is_known_kind(api_version, kind) || kind == "KubeSchedulerConfiguration" {
        return None;
    }
    let problems = match kind {
        "Namespace" => dns1123_label_errors(name),
        "Service" => dns1035_label_errors(name),
        _ => kubesched_config::k8s_names::dns1123_subdomain_errors(name),
    };
    (!problems.is_empty())
        .then(|| format!("Invalid value: {}: {}", quote_go(name), problems.join(", ")))
}

/// The problems of a namespace, which must be a DNS-1123 label, or `None`.
pub(super) fn namespace_problem(namespace: &str) -> Option<String> {
    let problems = kubesched_config::k8s_names::dns1123_label_errors(namespace);
    (!problems.is_empty()).then(|| {
        format!(
            "Invalid value: {}: {}",
            quote_go(namespace),
            problems.join(", ")
        )
    })
}

/// A string quoted and escaped (as Go's `%q` does for the API server's messages).
/// The first problem of a node's `status.declaredFeatures` that the API server would
/// refuse (its path and message), or `None`: entries must be non-empty, sorted and
/// unique (kube-scheduler v1.36 reads the list as sorted; an unsorted one would lose
/// features).
pub(super) fn declared_features_problem(features: &[String]) -> Option<(String, String)> {
    for (i, f) in features.iter().enumerate() {
        let field = format!("status.declaredFeatures[{i}]");
        if f.is_empty() {
            return Some((field, "Required value".into()));
        }
        let Some(prev) = i.checked_sub(1).map(|p| &features[p]) else {
            continue;
        };
        if f == prev {
            return Some((field, format!("Duplicate value: {}", quote_go(f))));
        }
        if f < prev {
            return Some((
                field,
                format!(
                    "Invalid value: {}: must be sorted (it sorts before {}, the entry above it)",
                    quote_go(f),
                    quote_go(prev)
                ),
            ));
        }
    }
    None
}

fn quote_go(s: &str) -> String {
    format!("{s:?}")
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
