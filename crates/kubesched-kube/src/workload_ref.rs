//! Pods as a v1.35 API server sends them, with `spec.workloadRef` (the v1alpha1
//! Workload and pod group a gang's pod belongs to), which k8s-openapi's `PodSpec` (v1.36
//! and later) has no field for. [`WorkloadRefPod`] keeps the reference beside the pod:
//! the runtime moves it into the annotation GangScheduling reads, as the scenario
//! loader does; `--from-cluster` and `record` write it back where it was, so the loader
//! reads and validates it as it does a file's.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_plugins::gang_scheduling::v1alpha1::WORKLOAD_REF_ANNOTATION;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A pod and its `spec.workloadRef`, if it has one. Decoded from JSON only (the
/// protobuf schema here has no such field).
#[derive(Clone, Debug)]
pub(crate) struct WorkloadRefPod {
    pod: Pod,
    workload_ref: Option<Value>,
}

impl WorkloadRefPod {
    /// The pod with its reference in
    /// [`WORKLOAD_REF_ANNOTATION`], and without such an annotation when it has none
    /// (the annotation says only what the spec says).
    pub(crate) fn into_annotated(self) -> Pod {
        let WorkloadRefPod {
            mut pod,
            workload_ref,
        } = self;
        let annotations = pod.metadata.annotations.get_or_insert_default();
        match workload_ref {
            Some(r) => annotations.insert(WORKLOAD_REF_ANNOTATION.into(), r.to_string()),
            None => annotations.remove(WORKLOAD_REF_ANNOTATION),
        };
        pod
    }
}

impl<'de> Deserialize<'de> for WorkloadRefPod {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut value = Value::deserialize(d)?;
        let workload_ref = value
            .get_mut("spec")
            .and_then(Value::as_object_mut)
            .and_then(|spec| spec.remove("workloadRef"))
            .filter(|r| !r.is_null());
        let pod = serde_json::from_value(value).map_err(D::Error::custom)?;
        Ok(WorkloadRefPod { pod, workload_ref })
    }
}

impl Serialize for WorkloadRefPod {
    /// The pod as the API server sent it: `spec.workloadRef` where it was.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let Some(reference) = &self.workload_ref else {
            return self.pod.serialize(s);
        };
        let mut value = serde_json::to_value(&self.pod).map_err(S::Error::custom)?;
        if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("workloadRef".into(), reference.clone());
        }
        value.serialize(s)
    }
}

impl kube::Resource for WorkloadRefPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;
    fn kind(_: &()) -> Cow<'_, str> {
        Pod::kind(&())
    }
    fn group(_: &()) -> Cow<'_, str> {
        Pod::group(&())
    }
    fn version(_: &()) -> Cow<'_, str> {
        Pod::version(&())
    }
    fn plural(_: &()) -> Cow<'_, str> {
        Pod::plural(&())
    }
    fn meta(&self) -> &ObjectMeta {
        &self.pod.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.pod.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::WorkloadRefPod;
    use kubesched_framework::PodInfo;
    use kubesched_plugins::gang_scheduling::v1alpha1::{WORKLOAD_REF_ANNOTATION, workload_ref};
    use serde_json::json;

    fn annotated(pod: serde_json::Value) -> PodInfo {
        let pod: WorkloadRefPod = serde_json::from_value(pod).expect("a pod");
        PodInfo::new(std::sync::Arc::new(pod.into_annotated())).expect("valid quantities")
    }

    fn v1_35_pod() -> serde_json::Value {
        json!({
            "metadata": {"name": "w-1", "namespace": "default"},
            "spec": {
                "containers": [{"name": "c"}],
                "workloadRef": {"name": "job", "podGroup": "workers", "podGroupReplicaKey": "0"},
            },
        })
    }

    #[test]
    fn a_v1_35_pod_keeps_its_workload_reference() {
        let reference = workload_ref(&annotated(v1_35_pod())).expect("kept");
        assert_eq!(
            (reference.name.as_str(), reference.pod_group.as_str()),
            ("job", "workers")
        );
        assert_eq!(reference.pod_group_replica_key, "0");
    }

    #[test]
    fn an_annotation_without_a_workload_reference_is_dropped() {
        let pod = annotated(json!({
            "metadata": {
                "name": "w-1",
                "namespace": "default",
                "annotations": {WORKLOAD_REF_ANNOTATION: "{\"name\":\"job\",\"podGroup\":\"workers\"}"},
            },
            "spec": {"containers": [{"name": "c"}]},
        }));
        assert_eq!(workload_ref(&pod), None);
    }

    #[test]
    fn the_reference_is_written_back_where_it_was() {
        let pod: WorkloadRefPod = serde_json::from_value(v1_35_pod()).expect("a pod");
        let written = serde_json::to_value(&pod).expect("json");
        assert_eq!(
            written["spec"]["workloadRef"],
            v1_35_pod()["spec"]["workloadRef"]
        );
        assert_eq!(written["metadata"].get("annotations"), None);
    }
}
