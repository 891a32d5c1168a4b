//! Helpers shared by the in-tree plugins (and kubesched-plugins-sigs): toleration
//! matching, kube-scheduler's `DefaultNormalizeScore`, and the `namespace/name` of the
//! API objects k8s-openapi lacks.

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_framework::NodeScore;

/// `namespace/name` of an object of a namespaced kind, namespace `default` when it
/// names none: how the gang and quota objects (v1alpha1 and v1alpha2 Workloads and
/// PodGroups, scheduler-plugins' PodGroup and ElasticQuota) are keyed and named.
pub fn full_name(metadata: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        metadata.namespace.as_deref().unwrap_or("default"),
        metadata.name.as_deref().unwrap_or("")
    )
}

/// `true` when `toleration` tolerates `taint` (core/v1 `Toleration.ToleratesTaint`): an
/// empty effect matches every effect, an empty key with `Exists` matches every key, an
/// empty operator means `Equal`.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref().filter(|e| !e.is_empty())
        && effect != taint.effect
    {
        return false;
    }
    if let Some(key) = toleration.key.as_deref().filter(|k| !k.is_empty())
        && key != taint.key
    {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// `true` when any of `tolerations` tolerates `taint`.
pub fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// The first taint (in the node's order) that `filter` selects and no toleration
/// tolerates.
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    filter: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|t| filter(t) && !tolerations_tolerate(tolerations, t))
}

/// kube-scheduler's `DefaultNormalizeScore(MaxNodeScore, reverse, scores)`: scales
/// scores to 0..=100 against the highest one (integer division); `reverse` flips them.
/// When every score is 0, all become 100 if `reverse`, else stay 0. The rule is
/// [`kubesched_framework::scale_to_max_score`], which incremental scheduling applies
/// node by node (`Normalization::ScaledToMax`).
pub fn normalize_to_max(reverse: bool, scores: &mut [NodeScore]) {
    let max = scores.iter().map(|s| s.score).max().unwrap_or(0).max(0);
    for s in scores {
        s.score = kubesched_framework::scale_to_max_score(s.score, max, reverse);
    }
}

/// Whether the pod requests an extended resource (one a device plugin or a DeviceClass
/// provides, as `example.com/gpu`).
pub fn requests_extended_resources(pod: &kubesched_framework::PodInfo) -> bool {
    pod.resources()
        .requests
        .scalar_resources
        .keys()
        .any(|name| kubesched_framework::resource::is_extended_resource_name(name))
}

/// Whether a DeviceClass of `dra`'s catalog backs an extended resource the pod
/// requests (DRAExtendedResource): the request may then be met from devices, which
/// other nodes' pods share, rather than from the node's allocatable.
pub fn dra_backs_requested_extended_resources(
    pod: &kubesched_framework::PodInfo,
    dra: &kubesched_framework::DraState,
) -> bool {
    let mut extended = pod
        .resources()
        .requests
        .scalar_resources
        .keys()
        .filter(|name| kubesched_framework::resource::is_extended_resource_name(name))
        .peekable();
    if extended.peek().is_none() {
        return false;
    }
    let catalog = dra.catalog();
    extended.any(|name| catalog.class_for_extended_resource(name).is_some())
}

/// Whether every volume of the pod is a ConfigMap, Secret, downward API, projected or
/// emptyDir volume (none that the volume plugins look up beside the node).
pub fn only_synthetic_volumes(pod: &kubesched_framework::PodInfo) -> bool {
    pod.spec().volumes.iter().flatten().all(|v| {
        v.config_map.is_some()
            || v.secret.is_some()
            || v.downward_api.is_some()
            || v.projected.is_some()
            || v.empty_dir.is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            ..Default::default()
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some(op.into()),
            value: Some(value.into()),
            effect: Some(effect.into()),
            ..Default::default()
        }
    }

    #[test]
    fn toleration_matching_follows_core_v1() {
        let t = taint("dedicated", "gpu", "NoSchedule");
        assert!(tolerates(
            &tol("dedicated", "Equal", "gpu", "NoSchedule"),
            &t
        ));
        assert!(tolerates(&tol("dedicated", "", "gpu", ""), &t));
        assert!(!tolerates(
            &tol("dedicated", "Equal", "cpu", "NoSchedule"),
            &t
        ));
        assert!(tolerates(&tol("", "Exists", "", ""), &t));
        assert!(!tolerates(&tol("dedicated", "Exists", "", "NoExecute"), &t));
        assert!(!tolerates(&tol("dedicated", "Gt", "1", ""), &t));
    }

    #[test]
    fn normalize_scales_and_reverses() {
        let mut s = vec![
            NodeScore {
                node_index: 0,
                score: 0,
            },
            NodeScore {
                node_index: 1,
                score: 1,
            },
            NodeScore {
                node_index: 2,
                score: 3,
            },
        ];
        normalize_to_max(true, &mut s);
        assert_eq!(
            s.iter().map(|s| s.score).collect::<Vec<_>>(),
            vec![100, 67, 0]
        );
        let mut z = vec![NodeScore {
            node_index: 0,
            score: 0,
        }];
        normalize_to_max(true, &mut z);
        assert_eq!(z[0].score, 100);
    }
}
