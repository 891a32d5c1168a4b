//! The `scheduling.k8s.io/v1alpha2` objects of kube-scheduler v1.36's gang scheduling
//! (k8s.io/api/scheduling/v1alpha2): PodGroup, the runtime group a pod joins with
//! `spec.schedulingGroup.podGroupName`, and Workload, whose `podGroupTemplates` the
//! PodGroups are made from. k8s-openapi has no v1alpha2 of this group, so the types
//! are declared here, field for field as the API server serves them.
//!
//! Each struct derives `Deserialize` with its exact field list, so a strict decoder
//! (kubesched-sim's scenario loader) reports an unknown or misspelt field with its
//! path, as for every Kubernetes kind; [`PodGroup::problem`] and
//! [`Workload::problem`] are the API server's validation, in its words.
//! The `apiVersion`, `kind` and `metadata` fields are spelt out in each type, not
//! flattened from one shared header: with `#[serde(flatten)]` serde decodes the object
//! as a map, so the strict decoder never sees its field list, and an unknown top-level
//! or `metadata` field would pass silently.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use serde::Deserialize;

/// The API group of PodGroup and Workload.
pub const GROUP: &str = "scheduling.k8s.io";
/// The `apiVersion` kubesched reads.
pub const API_VERSION: &str = "scheduling.k8s.io/v1alpha2";
/// The condition the PodGroup scheduling cycle writes.
pub const POD_GROUP_SCHEDULED: &str = "PodGroupScheduled";

/// A runtime group of pods scheduled together.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroup {
    /// `apiVersion`.
    #[serde(default)]
    pub api_version: Option<String>,
    /// `kind`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the group needs.
    #[serde(default)]
    pub spec: PodGroupSpec,
    /// What the scheduler reports.
    #[serde(default)]
    pub status: Option<PodGroupStatus>,
}

/// `PodGroupSpec`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// The Workload template the group was made from.
    #[serde(default)]
    pub pod_group_template_ref: Option<PodGroupTemplateReference>,
    /// Basic or gang.
    #[serde(default)]
    pub scheduling_policy: SchedulingPolicy,
    /// Topology constraints (TopologyAwareWorkloadScheduling; not read by kubesched).
    #[serde(default)]
    pub scheduling_constraints: Option<SchedulingConstraints>,
    /// Claims the group's pods share (DRAWorkloadResourceClaims; not read).
    #[serde(default)]
    pub resource_claims: Option<Vec<PodGroupResourceClaim>>,
    /// `Pod` or `PodGroup` (WorkloadAwarePreemption; not read).
    #[serde(default)]
    pub disruption_mode: Option<String>,
    /// The group's priority (WorkloadAwarePreemption; not read).
    #[serde(default)]
    pub priority: Option<i32>,
    /// The group's priority class (not read).
    #[serde(default)]
    pub priority_class_name: Option<String>,
}

/// `PodGroupSchedulingPolicy`: exactly one of `basic` and `gang`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingPolicy {
    /// Pods scheduled as they come.
    #[serde(default)]
    pub basic: Option<BasicSchedulingPolicy>,
    /// All or nothing: `minCount` pods or none.
    #[serde(default)]
    pub gang: Option<GangSchedulingPolicy>,
}

/// `BasicSchedulingPolicy` (no fields in v1alpha2).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct BasicSchedulingPolicy {}

/// `GangSchedulingPolicy`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GangSchedulingPolicy {
    /// The least number of pods placed together (required, at least 1).
    #[serde(default)]
    pub min_count: Option<i32>,
}

/// `PodGroupSchedulingConstraints`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SchedulingConstraints {
    /// Topology constraints.
    #[serde(default)]
    pub topology: Option<Vec<TopologyConstraint>>,
}

/// `TopologyConstraint`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct TopologyConstraint {
    /// The node label key.
    #[serde(default)]
    pub key: String,
}

/// `PodGroupResourceClaim`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupResourceClaim {
    /// The claim's name in the group.
    #[serde(default)]
    pub name: String,
    /// An existing ResourceClaim.
    #[serde(default)]
    pub resource_claim_name: Option<String>,
    /// A ResourceClaimTemplate.
    #[serde(default)]
    pub resource_claim_template_name: Option<String>,
}

/// `PodGroupTemplateReference`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct PodGroupTemplateReference {
    /// The Workload and template.
    #[serde(default)]
    pub workload: Option<WorkloadPodGroupTemplateReference>,
}

/// `WorkloadPodGroupTemplateReference`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPodGroupTemplateReference {
    /// The Workload's name.
    #[serde(default)]
    pub workload_name: String,
    /// The template's name in it.
    #[serde(default)]
    pub pod_group_template_name: String,
}

/// `PodGroupStatus`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `PodGroupScheduled`, `DisruptionTarget`.
    #[serde(default)]
    pub conditions: Option<Vec<Condition>>,
    /// The claims made for the group.
    #[serde(default)]
    pub resource_claim_statuses: Option<Vec<PodGroupResourceClaimStatus>>,
}

/// `PodGroupResourceClaimStatus`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupResourceClaimStatus {
    /// The claim's name in the group.
    #[serde(default)]
    pub name: String,
    /// The ResourceClaim made.
    #[serde(default)]
    pub resource_claim_name: Option<String>,
}

/// A workload: the templates its PodGroups are made from.
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
    /// The templates.
    #[serde(default)]
    pub spec: WorkloadSpec,
}

/// `WorkloadSpec`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// The object that manages the workload (a Job, ...).
    #[serde(default)]
    pub controller_ref: Option<TypedLocalObjectReference>,
    /// The PodGroup templates.
    #[serde(default)]
    pub pod_group_templates: Vec<PodGroupTemplate>,
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

/// `PodGroupTemplate`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupTemplate {
    /// The template's name.
    #[serde(default)]
    pub name: String,
    /// Basic or gang.
    #[serde(default)]
    pub scheduling_policy: SchedulingPolicy,
    /// Topology constraints.
    #[serde(default)]
    pub scheduling_constraints: Option<SchedulingConstraints>,
    /// Shared claims.
    #[serde(default)]
    pub resource_claims: Option<Vec<PodGroupResourceClaim>>,
    /// `Pod` or `PodGroup`.
    #[serde(default)]
    pub disruption_mode: Option<String>,
    /// The groups' priority.
    #[serde(default)]
    pub priority: Option<i32>,
    /// The groups' priority class.
    #[serde(default)]
    pub priority_class_name: Option<String>,
}

impl SchedulingPolicy {
    /// The API server's validation of a policy at `path`, as `(field, message)`.
    fn problem(&self, path: &str) -> Option<(String, String)> {
        match (&self.basic, &self.gang) {
            (None, None) => Some((
                path.to_string(),
                "Invalid value: \"\": must specify one of: `basic`, `gang`".to_string(),
            )),
            (Some(_), Some(_)) => Some((
                path.to_string(),
                "Invalid value: \"{basic, gang}\": must specify exactly one of: `basic`, `gang`"
                    .to_string(),
            )),
            (None, Some(g)) => match g.min_count {
                None | Some(0) => Some((format!("{path}.gang.minCount"), "Required value".into())),
                Some(n) if n < 1 => Some((
                    format!("{path}.gang.minCount"),
                    format!("Invalid value: {n}: must be greater than or equal to 1"),
                )),
                Some(_) => None,
            },
            (Some(_), None) => None,
        }
    }

    /// `gang.minCount`, when the policy is a gang.
    pub fn gang_min_count(&self) -> Option<i32> {
        self.gang.as_ref().map(|g| g.min_count.unwrap_or(0))
    }
}

impl PodGroup {
    /// `namespace/name` (namespace `default` when none).
    pub fn full_name(&self) -> String {
        crate::helper::full_name(&self.metadata)
    }

    /// The problem the API server finds in the object, as `(field, message)`, in its
    /// words (`spec.schedulingPolicy.gang.minCount: Required value`).
    pub fn problem(&self) -> Option<(String, String)> {
        self.spec.scheduling_policy.problem("spec.schedulingPolicy")
    }
}

impl Workload {
    /// The problem the API server finds in the object, as `(field, message)`.
    pub fn problem(&self) -> Option<(String, String)> {
        if self.spec.pod_group_templates.is_empty() {
            return Some(("spec.podGroupTemplates".into(), "Required value".into()));
        }
        self.spec
            .pod_group_templates
            .iter()
            .enumerate()
            .find_map(|(i, t)| {
                t.scheduling_policy
                    .problem(&format!("spec.podGroupTemplates[{i}].schedulingPolicy"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(spec: serde_json::Value) -> PodGroup {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "g"}, "spec": spec}))
            .unwrap()
    }

    #[test]
    fn the_api_servers_words_for_bad_policies() {
        let p = |s| group(s).problem();
        assert_eq!(
            p(serde_json::json!({"schedulingPolicy": {"gang": {"minCount": 0}}})),
            Some((
                "spec.schedulingPolicy.gang.minCount".into(),
                "Required value".into()
            ))
        );
        assert_eq!(
            p(serde_json::json!({"schedulingPolicy": {"gang": {"minCount": -1}}}))
                .unwrap()
                .1,
            "Invalid value: -1: must be greater than or equal to 1"
        );
        assert_eq!(
            p(serde_json::json!({"schedulingPolicy": {}})).unwrap().1,
            "Invalid value: \"\": must specify one of: `basic`, `gang`"
        );
        assert!(
            p(serde_json::json!({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}}))
                .unwrap()
                .1
                .contains("exactly one of")
        );
        assert_eq!(
            p(serde_json::json!({"schedulingPolicy": {"gang": {"minCount": 2}}})),
            None
        );
    }
}
