//! PreEnqueue and Permit as gangscheduling.go (v1.36) decides them, and PreEnqueue,
//! Reserve, Unreserve and Permit as v1.35.4's does ([`v1_35_plugin`]).

use super::*;
use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::LiveObjects;
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

/// A running scheduler's handle over `first`'s objects, and the live objects it
/// replaces as they change.
fn running(first: Handle) -> (Arc<LiveObjects>, Handle) {
    let live = Arc::new(LiveObjects::new(first.objects.unwrap()));
    let h = Handle {
        live_objects: Some(live.clone()),
        ..Handle::default()
    };
    (live, h)
}

/// In a running scheduler the groups and pods come and go: the plugin follows the
/// live objects' replacements.
#[test]
fn a_running_scheduler_s_plugin_follows_the_live_objects() {
    let gang = serde_json::json!({"gang": {"minCount": 2}});
    let (live, h) = running(handle(&[], vec![pod("a-1", "a", None)]));
    let p = GangScheduling::new(&h).unwrap();
    let a1 = pod("a-1", "a", None);
    assert_eq!(
        p.pre_enqueue(&a1).message(),
        "waiting for pods's pod group \"a\" to appear in scheduling queue"
    );
    // The group appears: one pod of two.
    live.replace(
        handle(&[("a", gang.clone())], vec![a1.clone()])
            .objects
            .unwrap(),
    );
    assert_eq!(p.pre_enqueue(&a1).message(), QUORUM_MESSAGE);
    // The second pod comes, bound already: the quorum is there, and it counts as
    // scheduled at Permit.
    let a2 = pod("a-2", "a", Some("n1"));
    live.replace(
        handle(&[("a", gang)], vec![a1.clone(), a2])
            .objects
            .unwrap(),
    );
    assert!(p.pre_enqueue(&a1).is_success());
    let (s, _) = p.permit(&mut CycleState::new(), &a1, "n1");
    assert!(s.is_success(), "{s:?}");
}

/// A bound pod of a gang that is deleted no longer counts toward its quorum (the
/// workload manager's `DeletePod`): its replacement waits for another.
#[test]
fn a_deleted_pod_of_a_gang_no_longer_counts_at_permit() {
    let gang = serde_json::json!({"gang": {"minCount": 3}});
    let (a1, a2) = (pod("a-1", "a", Some("n1")), pod("a-2", "a", Some("n1")));
    let (live, h) = running(handle(&[("a", gang.clone())], vec![a1, a2.clone()]));
    let p = GangScheduling::new(&h).unwrap();
    // a-1 is deleted and a-3 comes in its place: two of three, with a-3.
    let a3 = pod("a-3", "a", None);
    live.replace(
        handle(&[("a", gang)], vec![a2, a3.clone()])
            .objects
            .unwrap(),
    );
    let (s, _) = p.permit(&mut CycleState::new(), &a3, "n1");
    assert_eq!(s.code(), Code::Wait, "{s:?}");
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

/// A pod Permit allowed and that was then unreserved (a PodGroup cycle's try on a
/// placement, undone; a failed binding) is no longer scheduled: the next pod waits.
#[test]
fn an_unreserved_pod_no_longer_counts_toward_the_quorum() {
    let pods: Vec<Arc<PodInfo>> = (1..=3).map(|i| pod(&format!("a-{i}"), "a", None)).collect();
    let h = handle(
        &[("a", serde_json::json!({"gang": {"minCount": 2}}))],
        pods.clone(),
    );
    let p = GangScheduling::new(&h).unwrap();
    let park = |pod: &Arc<PodInfo>| {
        let (s, wait) = p.permit(&mut CycleState::new(), pod, "n1");
        let mut waits = std::collections::BTreeMap::new();
        waits.insert(NAME.to_string(), wait);
        h.waiting_pods.add(pod.clone(), "n1", waits, 0);
        s
    };
    assert!(park(&pods[0]).is_wait());
    assert!(
        p.permit(&mut CycleState::new(), &pods[1], "n1")
            .0
            .is_success()
    );
    // Both undone: the try that placed them is forgotten.
    for pod in &pods[..2] {
        h.waiting_pods.remove(pod.uid());
        p.unreserve(&mut CycleState::new(), pod, "n1");
    }
    let (s, _) = p.permit(&mut CycleState::new(), &pods[2], "n1");
    assert!(s.is_wait(), "a-3 alone is not a quorum of 2: {s:?}");
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

#[test]
fn a_pod_or_pod_group_added_may_complete_a_gang() {
    use kubesched_framework::events::{ActionType, ClusterEvent, EventResource};
    let p = GangScheduling::new(&handle(&[], vec![])).unwrap();
    let events = p.events_to_register();
    let reported = |r, a| events.iter().any(|e| e.matches(&ClusterEvent::new(r, a)));
    assert!(reported(EventResource::UnschedulablePod, ActionType::ADD));
    assert!(reported(EventResource::AssignedPod, ActionType::ADD));
    assert!(reported(EventResource::PodGroup, ActionType::ADD));
    assert!(!reported(EventResource::PodGroup, ActionType::UPDATE));
    assert!(!reported(EventResource::Node, ActionType::ADD));
}

#[test]
fn hints_narrow_a_pod_or_pod_group_added_to_the_pod_s_own_group() {
    use kubesched_framework::events::{ClusterEvent, EventObject, EventObjects, EventResource};
    use kubesched_framework::{ActionType, QueueingHint};
    let p = GangScheduling::new(&handle(&[], vec![])).unwrap();
    let waiting = pod("a-1", "a", None);
    let pod_added = |added: Arc<PodInfo>| {
        let objects = EventObjects::added(EventObject::Pod(added));
        p.queueing_hint(&waiting, &ClusterEvent::UNSCHEDULABLE_POD_ADD, &objects)
    };
    assert_eq!(pod_added(pod("a-2", "a", None)), QueueingHint::Queue);
    assert_eq!(pod_added(pod("b-1", "b", None)), QueueingHint::QueueSkip);
    let mut elsewhere = (*pod("a-3", "a", None).pod()).clone();
    elsewhere.metadata.namespace = Some("other".into());
    let elsewhere = Arc::new(PodInfo::new(Arc::new(elsewhere)).unwrap());
    assert_eq!(
        pod_added(elsewhere),
        QueueingHint::QueueSkip,
        "same name, other namespace"
    );
    let group_added = |key: &str| {
        let event = ClusterEvent::new(EventResource::PodGroup, ActionType::ADD);
        let objects = EventObjects::added(EventObject::from_key(key));
        p.queueing_hint(&waiting, &event, &objects)
    };
    assert_eq!(group_added("default/a"), QueueingHint::Queue);
    assert_eq!(group_added("default/b"), QueueingHint::QueueSkip);
    assert_eq!(group_added("other/a"), QueueingHint::QueueSkip);
    // Without the object the hint cannot tell: it queues.
    let none = EventObjects::default();
    assert_eq!(
        p.queueing_hint(&waiting, &ClusterEvent::ASSIGNED_POD_ADD, &none),
        QueueingHint::Queue
    );
}

/// v1.35.4's plugin: Workloads of `scheduling.k8s.io/v1alpha1`, `spec.workloadRef`.
mod v1_35_plugin {
    use super::*;
    use crate::gang_scheduling::v1_35::{self, SCHEDULING_TIMEOUT};
    use crate::gang_scheduling::v1alpha1::{self, WORKLOAD_REF_ANNOTATION};
    use kubesched_framework::events::ClusterEvent;
    use kubesched_framework::{Features, KubernetesVersion, ReservePlugin};

    fn pod(name: &str, workload: &str, group: &str, node: Option<&str>) -> Arc<PodInfo> {
        let reference = serde_json::json!({"name": workload, "podGroup": group}).to_string();
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": name,
                         "annotations": {WORKLOAD_REF_ANNOTATION: reference}},
            "spec": {"nodeName": node, "containers": []}
        }))
        .unwrap();
        Arc::new(PodInfo::new(Arc::new(pod)).unwrap())
    }

    fn handle(groups: serde_json::Value, pods: Vec<Arc<PodInfo>>) -> Handle {
        let workload = Arc::new(CustomObject {
            api_version: v1alpha1::API_VERSION.into(),
            kind: "Workload".into(),
            namespace: Some("default".into()),
            name: "w".into(),
            value: serde_json::json!({"metadata": {"name": "w"}, "spec": {"podGroups": groups}}),
        });
        Handle {
            features: Features::with_gates(
                KubernetesVersion::V1_35,
                ["GenericWorkload=true,GangScheduling=true"],
            )
            .unwrap(),
            objects: Some(Arc::new(ClusterObjects {
                custom: vec![workload],
                pods,
                ..ClusterObjects::default()
            })),
            ..Handle::default()
        }
    }

    fn gang(min_count: i32) -> serde_json::Value {
        serde_json::json!([{"name": "g", "policy": {"gang": {"minCount": min_count}}}])
    }

    #[test]
    fn the_registry_builds_v1_35s_plugin_under_v1_35() {
        use kubesched_framework::events::EventResource;
        // v1.35's registers Workload events, v1.36's PodGroup events.
        let watches = |h: &Handle| -> Vec<EventResource> {
            let plugin = new(None, h).unwrap();
            plugin
                .events_to_register()
                .iter()
                .map(|e| e.resource)
                .collect()
        };
        assert!(watches(&handle(gang(1), vec![])).contains(&EventResource::Workload));
        assert!(watches(&Handle::default()).contains(&EventResource::PodGroup));
    }

    #[test]
    fn a_pod_or_workload_added_may_complete_a_gang() {
        use kubesched_framework::events::{ActionType, EventResource};
        let p = v1_35::GangScheduling::new(&handle(gang(1), vec![])).unwrap();
        let events = p.events_to_register();
        let added = |r| {
            events
                .iter()
                .any(|e| e.matches(&ClusterEvent::new(r, ActionType::ADD)))
        };
        assert!(added(EventResource::UnschedulablePod));
        assert!(added(EventResource::AssignedPod));
        assert!(added(EventResource::Workload));
        assert!(!added(EventResource::Node));
        assert!(
            !events
                .iter()
                .any(|e| e.matches(&ClusterEvent::ASSIGNED_POD_DELETE))
        );
    }

    #[test]
    fn hints_narrow_a_pod_or_workload_added_to_the_pod_s_own_gang() {
        use kubesched_framework::QueueingHint;
        use kubesched_framework::events::{ActionType, EventObject, EventObjects, EventResource};
        let p = v1_35::GangScheduling::new(&handle(gang(1), vec![])).unwrap();
        let waiting = pod("a-1", "w", "g", None);
        let pod_added = |added: Arc<PodInfo>| {
            let objects = EventObjects::added(EventObject::Pod(added));
            p.queueing_hint(&waiting, &ClusterEvent::ASSIGNED_POD_ADD, &objects)
        };
        assert_eq!(
            pod_added(pod("a-2", "w", "g", Some("n1"))),
            QueueingHint::Queue
        );
        assert_eq!(
            pod_added(pod("a-3", "w", "other", None)),
            QueueingHint::QueueSkip,
            "the same workload, another pod group"
        );
        assert_eq!(
            pod_added(pod("b-1", "v", "g", None)),
            QueueingHint::QueueSkip
        );
        let workload_added = |key: &str| {
            let event = ClusterEvent::new(EventResource::Workload, ActionType::ADD);
            let objects = EventObjects::added(EventObject::from_key(key));
            p.queueing_hint(&waiting, &event, &objects)
        };
        assert_eq!(workload_added("default/w"), QueueingHint::Queue);
        assert_eq!(workload_added("default/v"), QueueingHint::QueueSkip);
        assert_eq!(workload_added("other/w"), QueueingHint::QueueSkip);
    }

    #[test]
    fn pre_enqueue_waits_for_the_workload_its_group_and_the_quorum() {
        let pods = vec![
            pod("a-1", "w", "g", None),
            pod("a-2", "w", "g", None),
            pod("x-1", "nope", "g", None),
            pod("y-1", "w", "other", None),
        ];
        let p = v1_35::GangScheduling::new(&handle(gang(3), pods.clone())).unwrap();
        let s = p.pre_enqueue(&pods[0]);
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), v1_35::QUORUM_MESSAGE);
        assert_eq!(
            p.pre_enqueue(&pods[2]).message(),
            "waiting for pods's workload \"nope\" to appear in scheduling queue"
        );
        assert_eq!(
            p.pre_enqueue(&pods[3]).message(),
            "pod group \"other\" doesn't exist for a workload \"w\""
        );
        let p = v1_35::GangScheduling::new(&handle(gang(2), pods.clone())).unwrap();
        assert!(p.pre_enqueue(&pods[0]).is_success());
        let basic = serde_json::json!([{"name": "g", "policy": {"basic": {}}}]);
        let p = v1_35::GangScheduling::new(&handle(basic, pods.clone())).unwrap();
        assert!(p.pre_enqueue(&pods[0]).is_success());
    }

    #[test]
    fn permit_waits_until_min_count_pods_are_assumed_or_bound() {
        let pods = vec![
            pod("a-0", "w", "g", Some("n1")),
            pod("a-1", "w", "g", None),
            pod("a-2", "w", "g", None),
        ];
        let h = handle(gang(3), pods.clone());
        let p = v1_35::GangScheduling::new(&h).unwrap();
        let mut state = CycleState::new();
        assert!(p.reserve(&mut state, &pods[1], "n1").is_success());
        let (s, wait) = p.permit(&mut state, &pods[1], "n1");
        assert!(s.is_wait());
        assert_eq!(s.message(), v1_35::WAIT_MESSAGE);
        assert_eq!(wait, SCHEDULING_TIMEOUT);
        let mut waits = std::collections::BTreeMap::new();
        waits.insert(NAME.to_string(), wait);
        h.waiting_pods.add(pods[1].clone(), "n1", waits, 0);
        // Without Reserve, a-2 is not assumed: the bound pod and a-1 make two.
        let (s, _) = p.permit(&mut state, &pods[2], "n2");
        assert!(s.is_wait());
        // Reserved, it makes three: a-1 is allowed.
        assert!(p.reserve(&mut state, &pods[2], "n2").is_success());
        let (s, _) = p.permit(&mut state, &pods[2], "n2");
        assert!(s.is_success(), "{s:?}");
        let decided = h.waiting_pods.take_decided().expect("a-1 allowed");
        assert_eq!(decided.0.name(), "a-1");
        assert!(decided.2.is_success());
    }

    #[test]
    fn unreserve_forgets_the_pod() {
        let pods = vec![pod("a-1", "w", "g", None), pod("a-2", "w", "g", None)];
        let p = v1_35::GangScheduling::new(&handle(gang(2), pods.clone())).unwrap();
        let mut state = CycleState::new();
        p.reserve(&mut state, &pods[0], "n1");
        p.unreserve(&mut state, &pods[0], "n1");
        p.reserve(&mut state, &pods[1], "n1");
        assert!(p.permit(&mut state, &pods[1], "n1").0.is_wait());
    }

    #[test]
    fn pods_outside_a_workload_and_basic_groups_pass() {
        let basic = serde_json::json!([{"name": "g", "policy": {"basic": {}}}]);
        let pods = vec![pod("a-1", "w", "g", None)];
        let p = v1_35::GangScheduling::new(&handle(basic, pods.clone())).unwrap();
        let mut state = CycleState::new();
        assert!(p.permit(&mut state, &pods[0], "n1").0.is_success());
        let plain: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "namespace": "default", "uid": "s"},
            "spec": {"containers": []}
        }))
        .unwrap();
        let plain = PodInfo::new(Arc::new(plain)).unwrap();
        assert!(p.pre_enqueue(&plain).is_success());
        assert!(p.reserve(&mut state, &plain, "n1").is_success());
        assert!(p.permit(&mut state, &plain, "n1").0.is_success());
    }
}
