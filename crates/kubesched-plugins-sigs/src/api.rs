//! The `scheduling.x-k8s.io/v1alpha1` objects the plugins read, as
//! scheduler-plugins' apis/scheduling/v1alpha1/types.go declares them.
//!
//! Each struct derives `Deserialize` with its exact field list, so a strict decoder
//! (kubesched-sim's scenario loader) reports an unknown or misspelt field with its
//! path, as for every Kubernetes kind.
//! The `apiVersion`, `kind` and `metadata` fields are spelt out in each type, not
//! flattened from one shared header: with `#[serde(flatten)]` serde decodes the object
//! as a map, so the strict decoder never sees its field list, and an unknown top-level
//! or `metadata` field would pass silently.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;

/// The API group of PodGroup (and ElasticQuota).
pub const GROUP: &str = "scheduling.x-k8s.io";
/// The `apiVersion` of PodGroup.
pub const API_VERSION: &str = "scheduling.x-k8s.io/v1alpha1";
/// The label that joins a pod to the PodGroup of that name in its namespace
/// (`v1alpha1.PodGroupLabel`).
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// A gang of pods: none of them is bound until `minMember` of them have a node.
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
    /// What the PodGroup controller reports (not read by the scheduler).
    #[serde(default)]
    pub status: Option<PodGroupStatus>,
}

/// `PodGroupSpec`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupSpec {
    /// The least number of pods that must be placed together: the CRD's minimum is 1
    /// when given; absent, it is 0 (Go's zero value, `omitempty`).
    #[serde(default)]
    pub min_member: Option<i32>,
    /// The resources the whole group needs, checked against the cluster's free
    /// resources at PreFilter.
    #[serde(default)]
    pub min_resources: Option<BTreeMap<String, Quantity>>,
    /// How long the group's pods wait at Permit for the rest of the group.
    #[serde(default)]
    pub schedule_timeout_seconds: Option<i32>,
}

/// `PodGroupStatus`: written by the PodGroup controller; read here only so that a
/// `kubectl get -o yaml` copy decodes.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodGroupStatus {
    /// `Pending`, `Running`, `Scheduling`, ...
    #[serde(default)]
    pub phase: Option<String>,
    /// The workload that occupies the group.
    #[serde(default)]
    pub occupied_by: Option<String>,
    /// Running pods.
    #[serde(default)]
    pub running: Option<i32>,
    /// Succeeded pods.
    #[serde(default)]
    pub succeeded: Option<i32>,
    /// Failed pods.
    #[serde(default)]
    pub failed: Option<i32>,
    /// When the group's scheduling started.
    #[serde(default)]
    pub schedule_start_time: Option<Time>,
}

impl PodGroup {
    /// `namespace/name` (namespace `default` when none).
    pub fn full_name(&self) -> String {
        kubesched_plugins::helper::full_name(&self.metadata)
    }

    /// The problem the API server (the CRD's validation) finds in the object, as
    /// `(field, message)`: `spec.minMember` below 1.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let given = self.spec.min_member?;
        (given < 1).then(|| {
            (
                "spec.minMember",
                format!(
                    "Invalid value: {given}: spec.minMember in body should be greater than or equal to 1"
                ),
            )
        })
    }

    /// `spec.minMember` (0 when absent).
    pub fn min_member(&self) -> i32 {
        self.spec.min_member.unwrap_or(0)
    }
}

/// A namespace's elastic quota (`ElasticQuota`): what its pods are guaranteed (`min`)
/// and what they may use at most (`max`), read by CapacityScheduling. One per
/// namespace is read (scheduler-plugins supports one).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ElasticQuota {
    /// `apiVersion`.
    #[serde(default)]
    pub api_version: Option<String>,
    /// `kind`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `min` and `max`.
    #[serde(default)]
    pub spec: ElasticQuotaSpec,
    /// The observed use (written by the ElasticQuota controller; the scheduler does
    /// not read it).
    #[serde(default)]
    pub status: Option<ElasticQuotaStatus>,
}

/// `ElasticQuotaSpec`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ElasticQuotaSpec {
    /// The guaranteed amounts, by resource name; absent, 0 of cpu, memory and
    /// ephemeral-storage.
    #[serde(default)]
    pub min: Option<BTreeMap<String, Quantity>>,
    /// The most the namespace's pods may request, by resource name; absent, no limit.
    #[serde(default)]
    pub max: Option<BTreeMap<String, Quantity>>,
}

/// `ElasticQuotaStatus`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ElasticQuotaStatus {
    /// The requests of the namespace's scheduled pods.
    #[serde(default)]
    pub used: Option<BTreeMap<String, Quantity>>,
}

impl ElasticQuota {
    /// `namespace/name` (namespace `default` when none).
    pub fn full_name(&self) -> String {
        kubesched_plugins::helper::full_name(&self.metadata)
    }

    /// The namespace the quota covers (`default` when none).
    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or("default")
    }

    /// The problem kubesched refuses in the object, as `(field, message)`: a resource
    /// whose `min` is above its `max`. Neither the CRD nor scheduler-plugins checks
    /// this, so no upstream message exists; with it, the namespace could never use its
    /// guaranteed `min`. Quantities that do not parse are left to the caller.
    pub fn problem(&self) -> Option<(String, String)> {
        use kubesched_framework::quantity::Quantity as Parsed;
        let (min, max) = (self.spec.min.as_ref()?, self.spec.max.as_ref()?);
        min.iter().find_map(|(name, lo)| {
            let hi = max.get(name)?;
            let (l, h) = (Parsed::parse(&lo.0).ok()?, Parsed::parse(&hi.0).ok()?);
            (l.milli() > h.milli()).then(|| {
                (
                    format!("spec.min[{name}]"),
                    format!(
                        "Invalid value: \"{}\": must be less than or equal to spec.max[{name}] ({})",
                        lo.0, hi.0
                    ),
                )
            })
        })
    }
}
