//! PreEnqueue and Permit as gangscheduling.go (v1.36) decides them.

use super::*;
use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::snapshot::{ClusterObjects, CustomObject};

fn pod(name: &str, group: &str, node: Option<&str>) -> Arc<PodInfo> {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"schedulingGroup": {"podGroupName": group}, "nodeName": node, "containers": []}
    }))
    .unwrap();
    Arc::new(PodInfo::new(Arc::new(pod)).unwrap())
}

fn handle(groups: &[(&str, serde_json::Value)], pods: Vec<Arc<PodInfo>>) -> Handle {
    let custom = groups
        .iter()
        .map(|(name, policy)| {
            Arc::new(CustomObject {
                api_version: api::API_VERSION.into(),
                kind: "PodGroup".into(),
                namespace: Some("default".into()),
                name: name.to_string(),
                value: serde_json::json!({"metadata": {"name": name}, "spec": {"schedulingPolicy": policy}}),
            })
        })
        .collect();
    Handle {
        objects: Some(Arc::new(ClusterObjects {
            custom,
            pods,
            ..ClusterObjects::default()
        })),
        ..Handle::default()
    }
}

#[test]
fn pre_enqueue_waits_for_the_group_and_its_quorum() {
    let pods = vec![
        pod("a-1", "a", None),
        pod("a-2", "a", None),
        pod("x-1", "x", None),
    ];
    let h = handle(
        &[("a", serde_json::json!({"gang": {"minCount": 3}}))],
        pods.clone(),
    );
    let p = GangScheduling::new(&h).unwrap();
    let s = p.pre_enqueue(&pods[0]);
    assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
    assert_eq!(s.message(), QUORUM_MESSAGE);
    assert_eq!(
        p.pre_enqueue(&pods[2]).message(),
        "waiting for pods's pod group \"x\" to appear in scheduling queue"
    );
    let h = handle(
        &[("a", serde_json::json!({"gang": {"minCount": 2}}))],
        pods.clone(),
    );
    assert!(
        GangScheduling::new(&h)
            .unwrap()
            .pre_enqueue(&pods[0])
            .is_success()
    );
}

#[test]
fn permit_waits_until_min_count_pods_are_scheduled() {
    let pods = vec![
        pod("a-0", "a", Some("n1")),
        pod("a-1", "a", None),
        pod("a-2", "a", None),
    ];
    let h = handle(
        &[("a", serde_json::json!({"gang": {"minCount": 3}}))],
        pods.clone(),
    );
    let p = GangScheduling::new(&h).unwrap();
    let mut state = CycleState::new();
    let (s, wait) = p.permit(&mut state, &pods[1], "n1");
    assert!(s.is_wait());
    assert_eq!(s.message(), WAIT_MESSAGE);
    assert_eq!(wait, PERMIT_TIMEOUT);
    let mut waits = std::collections::BTreeMap::new();
    waits.insert(NAME.to_string(), wait);
    h.waiting_pods.add(pods[1].clone(), "n1", waits, 0);
    // The bound pod, the waiting one and this one make three.
    let (s, _) = p.permit(&mut state, &pods[2], "n2");
    assert!(s.is_success(), "{s:?}");
    let decided = h.waiting_pods.take_decided().expect("a-1 allowed");
    assert!(decided.2.is_success());
}

#[test]
fn a_pod_that_stopped_waiting_no_longer_counts_toward_the_quorum() {
    let pods: Vec<Arc<PodInfo>> = (1..=4).map(|i| pod(&format!("a-{i}"), "a", None)).collect();
    let h = handle(
        &[("a", serde_json::json!({"gang": {"minCount": 3}}))],
        pods.clone(),
    );
    let p = GangScheduling::new(&h).unwrap();
    let mut state = CycleState::new();
    let park = |pod: &Arc<PodInfo>| {
        let (s, wait) = p.permit(&mut CycleState::new(), pod, "n1");
        assert!(s.is_wait(), "{} should wait: {s:?}", pod.name());
        let mut waits = std::collections::BTreeMap::new();
        waits.insert(NAME.to_string(), wait);
        h.waiting_pods.add(pod.clone(), "n1", waits, 0);
    };
    park(&pods[0]);
    park(&pods[1]);
    // a-1 is rejected and taken out: only a-2 waits now.
    h.waiting_pods.get("a-1", |w| w.reject("Other", "no"));
    let (gone, _, status) = h.waiting_pods.take_decided().expect("a-1 rejected");
    assert_eq!(gone.name(), "a-1");
    assert!(!status.is_success());
    // a-2 waiting and a-3 make two, below minCount.
    let (s, _) = p.permit(&mut state, &pods[2], "n1");
    assert!(s.is_wait(), "{s:?}");
    // A pod whose Permit said Wait but that never started waiting (another plugin
    // rejected it in the same run) does not count either.
    let (s, _) = p.permit(&mut state, &pods[3], "n1");
    assert!(s.is_wait(), "{s:?}");
    park(&pods[2]);
    // a-2 and a-3 waiting, and a-4 again: three.
    let (s, _) = p.permit(&mut state, &pods[3], "n1");
    assert!(s.is_success(), "{s:?}");
    let allowed: Vec<String> = std::iter::from_fn(|| h.waiting_pods.take_decided())
        .map(|(p, _, s)| {
            assert!(s.is_success());
            p.name().to_string()
        })
        .collect();
    assert_eq!(allowed, ["a-2", "a-3"]);
}
