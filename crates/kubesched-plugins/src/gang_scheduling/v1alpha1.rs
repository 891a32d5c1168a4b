//! The `scheduling.k8s.io/v1alpha1` objects of kube-scheduler v1.35's gang scheduling
//! (k8s.io/api v0.35.4, scheduling/v1alpha1/types.go): Workload, whose
//! `spec.podGroups[]` name the groups and their policy (`basic`, or `gang` with
//! `minCount`), and the pod's `spec.workloadRef` (core/v1 `WorkloadReference`) that
//! joins a pod to one of them. k8s-openapi has neither (v1.36 replaced both with
//! v1alpha2 and `spec.schedulingGroup`), so they are declared here, field for field.
//!
//! The structs derive `Deserialize` with their exact field lists, so the scenario
//! loader's strict decoder names an unknown or misspelt field; [`Workload::problem`] is
//! the API server's validation (pkg/apis/scheduling/validation: `validateWorkloadSpec`,
//! `validatePodGroup`, `validatePodGroupPolicy`, `validateGangSchedulingPolicy`) in its
//! words.
//! The `apiVersion`, `kind` and `metadata` fields are spelt out in each type, not
//! flattened from one shared header: with `#[serde(flatten)]` serde decodes the object
//! as a map, so the strict decoder never sees its field list, and an unknown top-level
//! or `metadata` field would pass silently.
//!
//! A pod's k8s-openapi `PodSpec` has no `workloadRef`, so the loader moves it to the
//! annotation [`WORKLOAD_REF_ANNOTATION`] (the reference as JSON) and
//! [`workload_ref`] reads it back.

use std::collections::HashSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_framework::PodInfo;
use serde::{Deserialize, Serialize};

/// The API group of Workload.
pub const GROUP: &str = "scheduling.k8s.io";
/// The `apiVersion` kube-scheduler v1.35 reads.
pub const API_VERSION: &str = "scheduling.k8s.io/v1alpha1";
/// `WorkloadMaxPodGroups`: the most pod groups a Workload may have.
pub const WORKLOAD_MAX_POD_GROUPS: usize = 8;
/// Where the scenario loader keeps a pod's `spec.workloadRef` (as JSON), which
/// k8s-openapi's `PodSpec` cannot hold.
pub const WORKLOAD_REF_ANNOTATION: &str = "kubesched.io/workloadRef";

/// A Workload: the pod groups of one workload (a Job, a JobSet, ...).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// `apiVersion`.
    #[serde(default)]
    pub api_version: Option<String>,
    /// `kind`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The groups.
    #[serde(default)]
    pub spec: WorkloadSpec,
}

/// `WorkloadSpec`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// The object that manages the workload (not read by the scheduler).
    #[serde(default)]
    pub controller_ref: Option<TypedLocalObjectReference>,
    /// The pod groups (1 to 8, names unique).
    #[serde(default)]
    pub pod_groups: Vec<PodGroup>,
}

/// `TypedLocalObjectReference`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TypedLocalObjectReference {
    /// The API group.
    #[serde(default)]
    pub api_group: Option<String>,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// The name.
    #[serde(default)]
    pub name: String,
}

/// `PodGroup`: one group of a Workload.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct PodGroup {
    /// The group's name (a DNS label), unique in the Workload.
    #[serde(default)]
    pub name: String,
    /// Basic or gang.
    #[serde(default)]
    pub policy: PodGroupPolicy,
}

/// `PodGroupPolicy`: exactly one of `basic` and `gang`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct PodGroupPolicy {
    /// Pods scheduled as they come.
    #[serde(default)]
    pub basic: Option<BasicSchedulingPolicy>,
    /// All or nothing: `minCount` pods or none.
    #[serde(default)]
    pub gang: Option<GangSchedulingPolicy>,
}

/// `BasicSchedulingPolicy` (no fields).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct BasicSchedulingPolicy {}

/// `GangSchedulingPolicy`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GangSchedulingPolicy {
    /// The least number of pods placed together (greater than zero).
    #[serde(default)]
    pub min_count: i32,
}

/// core/v1 `WorkloadReference`: the pod's `spec.workloadRef`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadReference {
    /// The Workload's name, in the pod's namespace.
    #[serde(default)]
    pub name: String,
    /// The pod group's name in the Workload.
    #[serde(default)]
    pub pod_group: String,
    /// The replica of the pod group (each replica is its own gang).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_group_replica_key: String,
}

/// A pod's `spec.workloadRef`, as the loader kept it ([`WORKLOAD_REF_ANNOTATION`]).
pub fn workload_ref(pod: &PodInfo) -> Option<WorkloadReference> {
    pod.pod()
        .metadata
        .annotations
        .as_ref()?
        .get(WORKLOAD_REF_ANNOTATION)
        .and_then(|v| serde_json::from_str(v).ok())
}

impl WorkloadReference {
    /// The problem the API server finds in a pod's `spec.workloadRef`, as
    /// `(field, message)`: the rules its type documents (`name` a DNS subdomain,
    /// `podGroup` a DNS label, `podGroupReplicaKey` a DNS label when set), with
    /// apimachinery's words.
    pub fn problem(&self) -> Option<(String, String)> {
        use kubesched_config::k8s_names::{dns1123_label_errors, dns1123_subdomain_errors};
        let path = "spec.workloadRef";
        let checks = [
            ("name", &self.name, dns1123_subdomain_errors(&self.name)),
            (
                "podGroup",
                &self.pod_group,
                dns1123_label_errors(&self.pod_group),
            ),
            (
                "podGroupReplicaKey",
                &self.pod_group_replica_key,
                if self.pod_group_replica_key.is_empty() {
                    Vec::new()
                } else {
                    dns1123_label_errors(&self.pod_group_replica_key)
                },
            ),
        ];
        checks
            .into_iter()
            .find(|(_, _, errors)| !errors.is_empty())
            .map(|(field, value, errors)| {
                (
                    format!("{path}.{field}"),
                    format!("Invalid value: {value:?}: {}", errors.join(", ")),
                )
            })
    }
}

impl PodGroupPolicy {
    /// `validatePodGroupPolicy` at `path`, as `(field, message)`.
    fn problem(&self, path: &str) -> Option<(String, String)> {
        match (&self.basic, &self.gang) {
            (None, None) => Some((
                path.to_string(),
                "Required value: exactly one of `basic`, `gang` is required".to_string(),
            )),
            (Some(_), Some(_)) => Some((
                path.to_string(),
                "Invalid value: \"{`basic`, `gang`}\": exactly one of `basic`, `gang` is required, but multiple fields are set"
                    .to_string(),
            )),
            // validateGangSchedulingPolicy: ValidatePositiveField.
            (None, Some(g)) if g.min_count <= 0 => Some((
                format!("{path}.gang.minCount"),
                format!("Invalid value: {}: must be greater than zero", g.min_count),
            )),
            _ => None,
        }
    }

    /// `gang.minCount`, when the policy is a gang.
    pub fn gang_min_count(&self) -> Option<i32> {
        self.gang.as_ref().map(|g| g.min_count)
    }
}

impl Workload {
    /// `namespace/name` (namespace `default` when none).
    pub fn full_name(&self) -> String {
        crate::helper::full_name(&self.metadata)
    }

    /// `podGroupPolicy`: the policy of the group `name`, if the Workload has it.
    pub fn pod_group_policy(&self, name: &str) -> Option<&PodGroupPolicy> {
        self.spec
            .pod_groups
            .iter()
            .find(|g| g.name == name)
            .map(|g| &g.policy)
    }

    /// The first problem the API server finds in the object (`validateWorkloadSpec`), as
    /// `(field, message)`, in its words
    /// (`spec.podGroups[0].policy.gang.minCount: Invalid value: 0: must be greater than zero`).
    pub fn problem(&self) -> Option<(String, String)> {
        use kubesched_config::k8s_names::dns1123_label_errors;
        let groups = &self.spec.pod_groups;
        if groups.is_empty() {
            return Some((
                "spec.podGroups".into(),
                "Required value: must have at least one item".into(),
            ));
        }
        if groups.len() > WORKLOAD_MAX_POD_GROUPS {
            return Some((
                "spec.podGroups".into(),
                format!(
                    "Too many: {}: must have at most {WORKLOAD_MAX_POD_GROUPS} items",
                    groups.len()
                ),
            ));
        }
        let mut seen = HashSet::new();
        for (i, group) in groups.iter().enumerate() {
            let path = format!("spec.podGroups[{i}]");
            let errors = dns1123_label_errors(&group.name);
            if !errors.is_empty() {
                return Some((
                    format!("{path}.name"),
                    format!("Invalid value: {:?}: {}", group.name, errors.join(", ")),
                ));
            }
            if !seen.insert(group.name.as_str()) {
                return Some((
                    format!("{path}.name"),
                    format!("Duplicate value: {:?}", group.name),
                ));
            }
            if let Some(problem) = group.policy.problem(&format!("{path}.policy")) {
                return Some(problem);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(spec: serde_json::Value) -> Workload {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "w"}, "spec": spec}))
            .unwrap()
    }

    #[test]
    fn the_api_servers_words_for_bad_workloads() {
        let p = |s| workload(s).problem();
        assert_eq!(
            p(
                serde_json::json!({"podGroups": [{"name": "a", "policy": {"gang": {"minCount": 0}}}]})
            ),
            Some((
                "spec.podGroups[0].policy.gang.minCount".into(),
                "Invalid value: 0: must be greater than zero".into()
            ))
        );
        assert_eq!(
            p(serde_json::json!({"podGroups": [{"name": "a", "policy": {}}]})),
            Some((
                "spec.podGroups[0].policy".into(),
                "Required value: exactly one of `basic`, `gang` is required".into()
            ))
        );
        assert_eq!(
            p(serde_json::json!({"podGroups": [{"name": "a", "policy": {"basic": {}, "gang": {"minCount": 2}}}]})).unwrap().1,
            "Invalid value: \"{`basic`, `gang`}\": exactly one of `basic`, `gang` is required, but multiple fields are set"
        );
        assert_eq!(
            p(serde_json::json!({"podGroups": []})).unwrap().1,
            "Required value: must have at least one item"
        );
        assert_eq!(
            p(
                serde_json::json!({"podGroups": [{"name": "a", "policy": {"basic": {}}}, {"name": "a", "policy": {"basic": {}}}]})
            ),
            Some((
                "spec.podGroups[1].name".into(),
                "Duplicate value: \"a\"".into()
            ))
        );
        let nine: Vec<_> = (0..9)
            .map(|i| serde_json::json!({"name": format!("g{i}"), "policy": {"basic": {}}}))
            .collect();
        assert_eq!(
            p(serde_json::json!({ "podGroups": nine })).unwrap().1,
            "Too many: 9: must have at most 8 items"
        );
        assert_eq!(
            p(
                serde_json::json!({"podGroups": [{"name": "a", "policy": {"gang": {"minCount": 2}}}]})
            ),
            None
        );
    }

    #[test]
    fn a_workload_ref_must_name_a_workload_and_a_group() {
        let r = |name: &str, group: &str| WorkloadReference {
            name: name.into(),
            pod_group: group.into(),
            pod_group_replica_key: String::new(),
        };
        assert_eq!(r("w", "g").problem(), None);
        assert_eq!(
            r("w", "G").problem().unwrap().0,
            "spec.workloadRef.podGroup"
        );
        assert!(
            r("", "g")
                .problem()
                .unwrap()
                .1
                .starts_with("Invalid value: \"\": ")
        );
    }
}
