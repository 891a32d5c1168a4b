//! kube-scheduler's gang scheduling objects in a scenario: v1.36's
//! `scheduling.k8s.io/v1alpha2` PodGroup and Workload, v1.35's `v1alpha1` Workload and
//! a pod's `spec.workloadRef`, decoded strictly (a misspelt field is an error naming
//! it, with a suggestion) and validated as the API server validates them, then kept
//! as other objects for the GangScheduling plugin and the PodGroup cycle to read.
//! Both versions' objects load whatever `--kubernetes-version` says: each version's
//! plugin reads only its own API (docs/gangs-and-quotas.md).

use serde::Deserialize;
use serde_json::Value;

use kubesched_plugins::gang_scheduling::api::{self, PodGroup, Workload};
use kubesched_plugins::gang_scheduling::v1alpha1::{self, WorkloadReference};

use super::decode::decode;
use super::{Builder, Origin, ScenarioError, namespaced_object_label, refuse_problem};

/// The `apiVersion` read here.
pub(super) const API_VERSION: &str = api::API_VERSION;
/// v1.35's `apiVersion` of Workload.
pub(super) const V1ALPHA1: &str = v1alpha1::API_VERSION;

/// A pod with nothing but its `spec.workloadRef`, to decode the reference strictly with
/// its path.
#[derive(Deserialize)]
struct RefOnly {
    spec: RefSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RefSpec {
    workload_ref: WorkloadReference,
}

/// Takes a pod's `spec.workloadRef` (v1.35's, which k8s-openapi's `PodSpec` does not
/// have) out of `value`, decoded strictly and validated, as the JSON the pod keeps in
/// its [`v1alpha1::WORKLOAD_REF_ANNOTATION`] annotation.
pub(super) fn take_workload_ref(
    value: &mut Value,
    file: &str,
    object: &str,
) -> Result<Option<String>, ScenarioError> {
    let Some(reference) = value
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .and_then(|spec| spec.remove("workloadRef"))
    else {
        return Ok(None);
    };
    if reference.is_null() {
        return Ok(None);
    }
    let wrapped = serde_json::json!({"spec": {"workloadRef": reference}});
    let decoded: RefOnly = decode(&wrapped, file, object)?;
    let reference = decoded.spec.workload_ref;
    refuse_problem(file.to_owned(), object.to_owned(), reference.problem())?;
    Ok(serde_json::to_string(&reference).ok())
}

impl Builder {
    /// Reads a PodGroup or Workload (`scheduling.k8s.io/v1alpha2`), or a v1alpha1
    /// Workload, strictly, with the API server's validation of its scheduling policy.
    pub(super) fn add_workload_object(
        &mut self,
        origin: &Origin<'_>,
        value: Value,
        api_version: String,
        kind: String,
    ) -> Result<(), ScenarioError> {
        let (file, object) = namespaced_object_label(origin, &kind, &value);
        let problem = if api_version == V1ALPHA1 {
            decode::<v1alpha1::Workload>(&value, &file, &object)?.problem()
        } else if kind == "PodGroup" {
            decode::<PodGroup>(&value, &file, &object)?.problem()
        } else {
            decode::<Workload>(&value, &file, &object)?.problem()
        };
        refuse_problem(file, object, problem)?;
        self.add_other(origin, value, api_version, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::v1alpha1;
    use crate::scenario::{Source, load};

    fn error(text: &str) -> String {
        let source = Source {
            name: "x.yaml".into(),
            text: text.into(),
        };
        load(&[source])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn pod_groups_and_workloads_decode_strictly() {
        let ok = Source {
            name: "x.yaml".into(),
            text: "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec: {schedulingPolicy: {gang: {minCount: 2}}}\n---\napiVersion: scheduling.k8s.io/v1alpha2\nkind: Workload\nmetadata: {name: w}\nspec: {podGroupTemplates: [{name: t, schedulingPolicy: {basic: {}}}]}\n".into(),
        };
        let scenario = load(&[ok]).unwrap();
        assert_eq!(scenario.objects.len(), 2);
        let e = error(
            "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: team}\nspec: {schedulingPolicy: {gang: {mincount: 2}}}\n",
        );
        assert_eq!(
            e,
            "x.yaml: PodGroup team/g: spec.schedulingPolicy.gang.mincount: unknown field, did you mean minCount?"
        );
    }

    #[test]
    fn bad_policies_are_refused_in_the_api_servers_words() {
        let e = error(
            "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec: {schedulingPolicy: {}}\n",
        );
        assert_eq!(
            e,
            "x.yaml: PodGroup default/g: spec.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
        );
        let e = error(
            "apiVersion: scheduling.k8s.io/v1alpha2\nkind: Workload\nmetadata: {name: w}\nspec: {podGroupTemplates: [{name: t, schedulingPolicy: {gang: {minCount: 0}}}]}\n",
        );
        assert_eq!(
            e,
            "x.yaml: Workload default/w: spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"
        );
    }

    #[test]
    fn v1alpha1_workloads_decode_strictly_with_the_api_servers_words() {
        let w = |spec: &str| {
            format!(
                "apiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata: {{name: w}}\nspec: {spec}\n"
            )
        };
        let ok = Source {
            name: "x.yaml".into(),
            text: w("{podGroups: [{name: g, policy: {gang: {minCount: 2}}}]}"),
        };
        assert_eq!(load(&[ok]).unwrap().objects.len(), 1);
        assert_eq!(
            error(&w(
                "{podGroups: [{name: g, policy: {gang: {mincount: 2}}}]}"
            )),
            "x.yaml: Workload default/w: spec.podGroups[0].policy.gang.mincount: unknown field, did you mean minCount?"
        );
        assert_eq!(
            error(&w(
                "{podGroups: [{name: g, policy: {gang: {minCount: 0}}}]}"
            )),
            "x.yaml: Workload default/w: spec.podGroups[0].policy.gang.minCount: Invalid value: 0: must be greater than zero"
        );
        assert_eq!(
            error(&w("{podGroupTemplates: []}")),
            "x.yaml: Workload default/w: spec.podGroupTemplates: unknown field"
        );
    }

    #[test]
    fn a_pods_workload_ref_is_decoded_strictly_and_kept() {
        let pod = |r: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{workloadRef: {r}, containers: [{{name: c, image: x}}]}}\n"
            )
        };
        let scenario = load(&[Source {
            name: "x.yaml".into(),
            text: pod("{name: w, podGroup: g}"),
        }])
        .unwrap();
        let annotations = scenario.pods[0].metadata.annotations.clone().unwrap();
        assert_eq!(
            annotations[v1alpha1::WORKLOAD_REF_ANNOTATION],
            r#"{"name":"w","podGroup":"g"}"#
        );
        assert_eq!(
            error(&pod("{name: w, podgroup: g}")),
            "x.yaml: Pod default/p: spec.workloadRef.podgroup: unknown field, did you mean podGroup?"
        );
        assert!(error(&pod("{name: w, podGroup: G}")).starts_with(
            "x.yaml: Pod default/p: spec.workloadRef.podGroup: Invalid value: \"G\": "
        ));
    }
}
