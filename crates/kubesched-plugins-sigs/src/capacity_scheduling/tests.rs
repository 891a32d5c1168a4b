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

mod plugin {
    use std::sync::Arc;

    use kubesched_framework::build::{NodeBuilder, PodBuilder};
    use kubesched_framework::{
        ClusterObjects, Code, CustomObject, CycleState, Handle, PreFilterExtensions,
        PreFilterPlugin, ReservePlugin, Snapshot,
    };

    use super::super::{CapacityScheduling, ElasticQuotaSnapshotState};

    fn quota(namespace: &str, min: &str, max: &str) -> Arc<CustomObject> {
        Arc::new(CustomObject {
            api_version: crate::api::API_VERSION.into(),
            kind: "ElasticQuota".into(),
            namespace: Some(namespace.into()),
            name: "q".into(),
            value: serde_json::json!({
                "metadata": {"name": "q", "namespace": namespace},
                "spec": {"min": {"cpu": min}, "max": {"cpu": max}}
            }),
        })
    }

    fn plugin(custom: Vec<Arc<CustomObject>>) -> CapacityScheduling {
        let handle = Handle {
            objects: Some(Arc::new(ClusterObjects {
                custom,
                ..ClusterObjects::default()
            })),
            ..Handle::default()
        };
        CapacityScheduling::new(&handle).unwrap()
    }

    #[test]
    fn a_pod_deleted_or_any_quota_change_retries_a_pod_it_turned_down() {
        use kubesched_framework::Plugin;
        use kubesched_framework::events::{ActionType, ClusterEvent, EventResource};
        let events = plugin(vec![]).events_to_register();
        let retried = |e: ClusterEvent| events.iter().any(|r| r.matches(&e));
        assert!(retried(ClusterEvent::ASSIGNED_POD_DELETE));
        for action in [ActionType::ADD, ActionType::UPDATE, ActionType::DELETE] {
            assert!(retried(ClusterEvent::new(
                EventResource::ELASTIC_QUOTA,
                action
            )));
        }
        assert!(!retried(ClusterEvent::NODE_ADD));
        assert!(!retried(ClusterEvent::UNSCHEDULABLE_POD_ADD));
    }

    fn used(state: &CycleState, namespace: &str) -> i64 {
        state
            .read::<ElasticQuotaSnapshotState>()
            .and_then(|s| s.infos.get(namespace))
            .map_or(-1, |i| i.used.milli_cpu)
    }

    #[test]
    fn pre_filter_counts_pods_on_nodes_and_refuses_past_max_in_upstream_words() {
        let p = plugin(vec![quota("a", "1", "2"), quota("b", "4", "4")]);
        let bound = PodBuilder::new("a", "old")
            .cpu_millis(1500)
            .bound_to("n1")
            .pod_info()
            .unwrap();
        let node = NodeBuilder::new("n1").cpu_millis(8000).node();
        let (snapshot, _) = Snapshot::new([node], [bound.clone()]).unwrap();
        let pod = PodBuilder::new("a", "new")
            .cpu_millis(600)
            .pod_info()
            .unwrap();
        let mut state = CycleState::new();
        let (_, status) = p.pre_filter(&mut state, &pod, &snapshot);
        assert_eq!(status.code(), Code::Unschedulable);
        assert_eq!(
            status.message(),
            "Pod a/new is rejected in PreFilter because ElasticQuota a is more than Max"
        );
        assert_eq!(used(&state, "a"), 1500);
        // RemovePod and AddPod change the cycle's copy, not the plugin's.
        let node_info = snapshot.node_at(0).clone();
        assert!(
            p.remove_pod(&mut state, &pod, &bound, &node_info)
                .is_success()
        );
        assert_eq!(used(&state, "a"), 0);
        assert!(p.add_pod(&mut state, &pod, &bound, &node_info).is_success());
        assert_eq!(used(&state, "a"), 1500);
        // A pod of a namespace without a quota is not checked.
        let free = PodBuilder::new("c", "free")
            .cpu_millis(90_000)
            .pod_info()
            .unwrap();
        assert!(p.pre_filter(&mut state, &free, &snapshot).1.is_success());
    }

    #[test]
    fn reserve_counts_until_the_snapshot_says_otherwise() {
        let p = plugin(vec![quota("a", "2", "2")]);
        let node = NodeBuilder::new("n1").cpu_millis(8000).node();
        let (snapshot, _) = Snapshot::new([node], []).unwrap();
        let first = PodBuilder::new("a", "first")
            .cpu_millis(2000)
            .pod_info()
            .unwrap();
        let mut state = CycleState::new();
        assert!(p.pre_filter(&mut state, &first, &snapshot).1.is_success());
        assert!(p.reserve(&mut state, &first, "n1").is_success());
        p.unreserve(&mut state, &first, "n1");
        let second = PodBuilder::new("a", "second")
            .cpu_millis(2000)
            .pod_info()
            .unwrap();
        assert!(p.pre_filter(&mut state, &second, &snapshot).1.is_success());
        let (mut snapshot, _) =
            Snapshot::new([NodeBuilder::new("n1").cpu_millis(8000).node()], []).unwrap();
        let assumed = PodBuilder::new("a", "first")
            .cpu_millis(2000)
            .bound_to("n1")
            .pod_info()
            .unwrap();
        assert!(snapshot.add_pod(assumed));
        let (_, status) = p.pre_filter(&mut state, &second, &snapshot);
        assert_eq!(
            status.message(),
            "Pod a/second is rejected in PreFilter because ElasticQuota a is more than Max"
        );
    }
}
