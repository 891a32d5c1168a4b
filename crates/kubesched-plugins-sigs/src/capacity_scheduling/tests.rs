//! CapacityScheduling's quota arithmetic and PreFilter, by behaviour.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubesched_framework::build::PodBuilder;

use super::quota::{self, ElasticQuotaInfo, ElasticQuotaInfos};

fn list(cpu: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([("cpu".to_string(), Quantity(cpu.to_string()))])
}

#[test]
fn used_over_max_counts_the_request_on_top_of_used() {
    let mut eq = ElasticQuotaInfo::new("a", Some(&list("1")), Some(&list("2")));
    let p1 = PodBuilder::new("a", "p1")
        .cpu_millis(1500)
        .pod_info()
        .unwrap();
    let p2 = PodBuilder::new("a", "p2")
        .cpu_millis(500)
        .pod_info()
        .unwrap();
    let p3 = PodBuilder::new("a", "p3")
        .cpu_millis(600)
        .pod_info()
        .unwrap();
    assert!(!eq.used_over_max_with(&quota::compute_pod_resource_request(&p1)));
    eq.add_pod_if_not_present(&p1);
    eq.add_pod_if_not_present(&p1);
    assert_eq!(eq.used.milli_cpu, 1500, "a pod is counted once");
    assert!(eq.used_over_min());
    assert!(!eq.used_over_max_with(&quota::compute_pod_resource_request(&p2)));
    assert!(eq.used_over_max_with(&quota::compute_pod_resource_request(&p3)));
    eq.delete_pod_if_present(&p1);
    assert_eq!(eq.used.milli_cpu, 0);
}

#[test]
fn a_quota_without_max_has_no_cpu_limit_and_one_without_min_guarantees_nothing() {
    let eq = ElasticQuotaInfo::new("a", None, None);
    let p = PodBuilder::new("a", "p")
        .cpu_millis(100_000)
        .pod_info()
        .unwrap();
    let req = quota::compute_pod_resource_request(&p);
    assert!(!eq.used_over_max_with(&req));
    assert!(eq.used_over_min_with(&req));
}

#[test]
fn a_namespace_may_borrow_the_min_another_leaves_unused() {
    let mut infos = ElasticQuotaInfos::new();
    let mut a = ElasticQuotaInfo::new("a", Some(&list("2")), Some(&list("4")));
    let b = ElasticQuotaInfo::new("b", Some(&list("2")), Some(&list("4")));
    a.add_pod_if_not_present(
        &PodBuilder::new("a", "p1")
            .cpu_millis(2000)
            .pod_info()
            .unwrap(),
    );
    infos.insert("a".into(), a);
    infos.insert("b".into(), b);
    let two = quota::compute_pod_resource_request(
        &PodBuilder::new("a", "p2")
            .cpu_millis(2000)
            .pod_info()
            .unwrap(),
    );
    let three = quota::compute_pod_resource_request(
        &PodBuilder::new("a", "p3")
            .cpu_millis(2001)
            .pod_info()
            .unwrap(),
    );
    assert!(!quota::aggregated_used_over_min_with(&infos, &two));
    assert!(quota::aggregated_used_over_min_with(&infos, &three));
}

#[test]
fn min_above_max_is_a_problem() {
    let eq: crate::api::ElasticQuota = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "q", "namespace": "a"},
        "spec": {"min": {"cpu": "3", "memory": "1Gi"}, "max": {"cpu": "2500m", "memory": "2Gi"}}
    }))
    .unwrap();
    assert_eq!(
        eq.problem(),
        Some((
            "spec.min[cpu]".to_string(),
            "Invalid value: \"3\": must be less than or equal to spec.max[cpu] (2500m)".to_string()
        ))
    );
}
