//! The args' defaults and validation, as apis/config/v1 and validation_pluginargs.go
//! have them.

use super::*;

#[test]
fn args_default_as_set_defaults_coscheduling_args() {
    let mut args = CoschedulingArgs::default();
    args.apply_defaults();
    assert_eq!(args.permit_waiting_time_seconds, Some(60));
    assert_eq!(args.pod_group_backoff_seconds, Some(0));
    assert_eq!(args.pod_group_reject_percentage, Some(10));
    assert_eq!(args.validate(), Ok(()));
}

#[test]
fn invalid_args_are_refused_with_validate_coscheduling_args_words() {
    let args = CoschedulingArgs {
        permit_waiting_time_seconds: Some(-1),
        pod_group_backoff_seconds: Some(0),
        pod_group_reject_percentage: Some(10),
    };
    assert_eq!(
        args.validate(),
        Err("permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0".into())
    );
    let args = CoschedulingArgs {
        permit_waiting_time_seconds: Some(5),
        pod_group_backoff_seconds: Some(-2),
        pod_group_reject_percentage: Some(101),
    };
    assert_eq!(
        args.validate(),
        Err("[podGroupBackoffSeconds: Invalid value: -2: must be greater than 0, podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100]".into())
    );
}

#[test]
fn args_decode_strictly() {
    let err = new(
        Some(&serde_json::json!({"permitWaitingTimeSecond": 5})),
        &Handle::default(),
    )
    .err()
    .map(|e| e.message)
    .unwrap_or_default();
    assert!(err.contains("permitWaitingTimeSecond"), "{err}");
}

mod clock {
    //! What the plugin keeps over time, on the handle's clock: the `permittedPG` cache
    //! lives `permitWaitingTimeSeconds`, as go-cache's entries do, and a failed
    //! group sorts by when it failed.

    use std::sync::Arc;
    use std::time::Duration;

    use kubesched_framework::build::{NodeBuilder, PodBuilder};
    use kubesched_framework::queue::FakeClock;
    use kubesched_framework::{ClusterObjects, CustomObject, CycleState, Handle, PreFilterPlugin};
    use kubesched_framework::{Snapshot, Status};

    use super::super::{Coscheduling, CoschedulingArgs};
    use crate::api::{API_VERSION, POD_GROUP_LABEL};

    fn args(wait: i64) -> CoschedulingArgs {
        let mut args = CoschedulingArgs {
            permit_waiting_time_seconds: Some(wait),
            ..CoschedulingArgs::default()
        };
        args.apply_defaults();
        args
    }

    /// PodGroup `g` (minMember 1, minResources 2 cpu) and its pod, on `clock`.
    fn plugin(
        clock: &Arc<FakeClock>,
        wait: i64,
    ) -> (Coscheduling, Arc<kubesched_framework::PodInfo>) {
        let pod = PodBuilder::new("default", "g-1")
            .label(POD_GROUP_LABEL, "g")
            .cpu_millis(100)
            .pod_info()
            .unwrap();
        let group = CustomObject {
            api_version: API_VERSION.into(),
            kind: "PodGroup".into(),
            namespace: Some("default".into()),
            name: "g".into(),
            value: serde_json::json!({
                "metadata": {"name": "g", "namespace": "default"},
                "spec": {"minMember": 1, "minResources": {"cpu": "2"}}
            }),
        };
        let handle = Handle {
            objects: Some(Arc::new(ClusterObjects {
                custom: vec![Arc::new(group)],
                pods: vec![pod.clone()],
                ..ClusterObjects::default()
            })),
            clock: Some(clock.clone()),
            ..Handle::default()
        };
        (Coscheduling::new(&args(wait), &handle).unwrap(), pod)
    }

    fn cluster(cpu_millis: i64) -> Snapshot {
        let node = NodeBuilder::new("n").cpu_millis(cpu_millis).node();
        Snapshot::new([node], []).unwrap().0
    }

    #[test]
    fn a_pod_added_or_its_pod_group_changed_retries_a_pod_it_turned_down() {
        use kubesched_framework::Plugin;
        use kubesched_framework::events::{ActionType, ClusterEvent, EventResource};
        let (p, _) = plugin(&Arc::new(FakeClock::new()), 60);
        let events = p.events_to_register();
        let retried = |e: ClusterEvent| events.iter().any(|r| r.matches(&e));
        let group = |a| ClusterEvent::new(EventResource::SIGS_POD_GROUP, a);
        assert!(retried(ClusterEvent::UNSCHEDULABLE_POD_ADD));
        assert!(retried(ClusterEvent::ASSIGNED_POD_ADD));
        assert!(retried(group(ActionType::ADD)));
        assert!(retried(group(ActionType::UPDATE)));
        assert!(!retried(group(ActionType::DELETE)));
        assert!(!retried(ClusterEvent::NODE_ADD));
        assert!(!retried(ClusterEvent::ASSIGNED_POD_DELETE));
    }

    fn pre_filter(p: &Coscheduling, pod: &kubesched_framework::PodInfo, s: &Snapshot) -> Status {
        p.pre_filter(&mut CycleState::new(), pod, s).1
    }

    #[test]
    fn a_group_whose_min_resources_passed_is_not_checked_again_until_the_wait_has_passed() {
        let clock = Arc::new(FakeClock::new());
        let (p, pod) = plugin(&clock, 60);
        assert!(pre_filter(&p, &pod, &cluster(4000)).is_success());
        // The cluster shrank, but the group passed within the last minute.
        let small = cluster(1000);
        assert!(pre_filter(&p, &pod, &small).is_success());
        clock.advance(Duration::from_secs(60));
        assert!(
            pre_filter(&p, &pod, &small).is_success(),
            "expired only after"
        );
        clock.advance(Duration::from_millis(1));
        let s = pre_filter(&p, &pod, &small);
        assert!(!s.is_success(), "checked again: {}", s.message());
    }

    #[test]
    fn a_zero_wait_keeps_a_permitted_group_go_caches_default_three_seconds() {
        let clock = Arc::new(FakeClock::new());
        let (p, pod) = plugin(&clock, 0);
        assert!(pre_filter(&p, &pod, &cluster(4000)).is_success());
        let small = cluster(1000);
        clock.advance(Duration::from_secs(3));
        assert!(pre_filter(&p, &pod, &small).is_success());
        clock.advance(Duration::from_millis(1));
        assert!(!pre_filter(&p, &pod, &small).is_success());
    }

    #[test]
    fn groups_that_failed_sort_by_when_they_last_failed() {
        use kubesched_framework::{QueueSortPlugin, QueuedPodInfo, ReservePlugin};
        let clock = Arc::new(FakeClock::new());
        let pod = |name: &str, group: &str| {
            PodBuilder::new("default", name)
                .label(POD_GROUP_LABEL, group)
                .pod_info()
                .unwrap()
        };
        let (a, b) = (pod("a-1", "a"), pod("b-1", "b"));
        let group = |name: &str| {
            Arc::new(CustomObject {
                api_version: API_VERSION.into(),
                kind: "PodGroup".into(),
                namespace: Some("default".into()),
                name: name.into(),
                value: serde_json::json!({
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"minMember": 2}
                }),
            })
        };
        let handle = Handle {
            objects: Some(Arc::new(ClusterObjects {
                custom: vec![group("a"), group("b")],
                pods: vec![a.clone(), b.clone()],
                ..ClusterObjects::default()
            })),
            clock: Some(clock.clone()),
            ..Handle::default()
        };
        let p = Coscheduling::new(&args(60), &handle).unwrap();
        let queued = |pod_info: &Arc<kubesched_framework::PodInfo>| QueuedPodInfo {
            pod_info: pod_info.clone(),
            timestamp: 0,
            attempts: 1,
        };
        // b fails first, a a second later: b's pods go first (by key, a's would).
        p.unreserve(&mut CycleState::new(), &b, "n");
        clock.advance(Duration::from_secs(1));
        p.unreserve(&mut CycleState::new(), &a, "n");
        assert!(p.less(&queued(&b), &queued(&a)));
        assert!(!p.less(&queued(&a), &queued(&b)));
    }
}
