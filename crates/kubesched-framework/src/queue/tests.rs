//! The scheduling queue's tests: QueueSort order, backoff, and which cluster events
//! move an unschedulable pod back (queueing hints).

use std::sync::Mutex;

use super::*;
use crate::events::{ActionType, EventObject, EventObjects, EventResource};
use k8s_openapi::api::core::v1::{Pod, PodSpec};

fn pod(name: &str, priority: i32) -> Arc<PodInfo> {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("default".into());
    p.spec = Some(PodSpec {
        priority: Some(priority),
        ..Default::default()
    });
    Arc::new(PodInfo::new(Arc::new(p)).unwrap())
}

fn priority_sort(a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
    let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
    pa > pb || (pa == pb && a.timestamp < b.timestamp)
}

fn queue() -> (SchedulingQueue, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new());
    let q = SchedulingQueue::new(QueueOptions::default(), clock.clone(), priority_sort);
    (q, clock)
}

fn names(q: &mut SchedulingQueue) -> Vec<String> {
    std::iter::from_fn(|| q.pop())
        .map(|p| p.info.pod_info.name().to_string())
        .collect()
}

#[test]
fn active_queue_pops_in_queue_sort_order() {
    let (mut q, _) = queue();
    for (n, prio) in [("a", 1), ("b", 10), ("c", 1), ("d", 5), ("e", 10)] {
        q.add(pod(n, prio));
    }
    assert_eq!(names(&mut q), ["b", "e", "d", "a", "c"]);
    assert_eq!(q.scheduling_cycle(), 5);
}

#[test]
fn backoff_duration_doubles_up_to_the_maximum() {
    let (q, _) = queue();
    let secs: Vec<u64> = (0..7).map(|a| q.backoff_duration(a).as_secs()).collect();
    assert_eq!(secs, [0, 1, 2, 4, 8, 10, 10]);
    let q2 = SchedulingQueue::new(
        QueueOptions::from_seconds(3, 20),
        Arc::new(SystemClock),
        priority_sort,
    );
    assert_eq!(q2.backoff_duration(3), Duration::from_secs(12));
    assert_eq!(q2.backoff_duration(4), Duration::from_secs(20));
}

#[test]
fn failed_pod_waits_out_its_backoff() {
    let (mut q, clock) = queue();
    q.add(pod("a", 0));
    let p = q.pop().unwrap();
    q.add_backoff(p);
    assert_eq!(q.pending().backoff, 1);
    assert!(q.pop().is_none());
    assert_eq!(q.next_wakeup(), Some(clock.now() + Duration::from_secs(1)));
    clock.advance(Duration::from_millis(999));
    assert!(q.pop().is_none());
    clock.advance(Duration::from_millis(1));
    let p = q.pop().unwrap();
    assert_eq!(p.info.attempts, 2);
    q.add_backoff(p);
    clock.advance(Duration::from_secs(1));
    assert!(q.pop().is_none(), "second backoff is 2s");
    clock.advance(Duration::from_secs(1));
    assert!(q.pop().is_some());
}

fn rejected_by(plugins: &[&str]) -> BTreeSet<String> {
    plugins.iter().map(|p| p.to_string()).collect()
}

/// kube-scheduler v1.35's registrations of NodeResourcesFit and NodeAffinity, for a
/// profile named like the pods' scheduler (`default-scheduler`).
fn hints() -> QueueingHints {
    let mut h = QueueingHints::new();
    h.set_plugin_events(
        "default-scheduler",
        "NodeResourcesFit",
        vec![
            ClusterEvent::new(
                EventResource::Pod,
                ActionType::DELETE | ActionType::UPDATE_POD_SCALE_DOWN,
            ),
            ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD | ActionType::UPDATE_NODE_ALLOCATABLE,
            ),
        ],
    );
    h.set_plugin_events(
        "default-scheduler",
        "NodeAffinity",
        vec![ClusterEvent::new(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
        )],
    );
    h
}

fn hinted_queue() -> (SchedulingQueue, Arc<FakeClock>) {
    let (mut q, clock) = queue();
    q.set_queueing_hints(hints());
    (q, clock)
}

fn node_update(action: ActionType) -> ClusterEvent {
    ClusterEvent::new(EventResource::Node, action)
}

/// A pod of the default scheduler asking for `cpu`, labelled `labels`.
fn pod_with(name: &str, cpu: &str, labels: &[(&str, &str)]) -> Arc<PodInfo> {
    use k8s_openapi::api::core::v1::{Container, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("default".into());
    p.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    p.spec = Some(PodSpec {
        containers: vec![Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(
                    [("cpu".to_string(), Quantity(cpu.into()))]
                        .into_iter()
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    });
    Arc::new(PodInfo::new(Arc::new(p)).unwrap())
}

#[test]
fn gauges_count_unschedulable_pods_by_plugin_and_events_in_flight() {
    let (mut q, _clock) = queue();
    q.add(pod("a", 0));
    q.add(pod("b", 0));
    let a = q.pop().unwrap();
    let b = q.pop().unwrap();
    assert_eq!(
        q.in_flight_event_counts(),
        BTreeMap::from([("PodPopped".to_string(), 2)])
    );
    q.move_all_to_active_or_backoff(ClusterEvent::NODE_ADD);
    q.add_unschedulable(a, rejected_by(&["NodeResourcesFit", "NodeAffinity"]));
    // b is still in flight: the event stays for it.
    assert_eq!(
        q.in_flight_event_counts(),
        BTreeMap::from([("NodeAdd".to_string(), 1), ("PodPopped".to_string(), 1)])
    );
    q.add_unschedulable(b, rejected_by(&["NodeResourcesFit"]));
    assert!(q.in_flight_event_counts().is_empty());
    // Both saw NodeAdd while in flight, which may help them: they went to backoff.
    assert!(q.unschedulable_by_plugin().is_empty());
    q.add(pod("c", 0));
    let c = q.pop().unwrap();
    q.add_unschedulable(c, rejected_by(&["NodeResourcesFit", "NodeAffinity"]));
    let scheduler = pod("x", 0).scheduler_name().to_string();
    assert_eq!(
        q.unschedulable_by_plugin(),
        BTreeMap::from([
            ((scheduler.clone(), "NodeAffinity".to_string()), 1),
            ((scheduler, "NodeResourcesFit".to_string()), 1),
        ])
    );
    q.delete("default/c");
    assert!(q.unschedulable_by_plugin().is_empty());
}

#[test]
fn unschedulable_pod_moves_on_cluster_event() {
    let (mut q, clock) = queue();
    q.add(pod("a", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    assert_eq!(q.pending().unschedulable, 1);
    clock.advance(Duration::from_secs(30));
    assert!(q.pop().is_none(), "no event: it stays");
    // Without hints, any event moves it.
    q.move_all_to_active_or_backoff(ClusterEvent::NODE_ADD);
    assert_eq!(q.pending().active, 1);
    assert_eq!(names(&mut q), ["a"]);
}

#[test]
fn pod_rejected_by_node_resources_fit_moves_only_on_events_that_can_free_resources() {
    let (mut q, clock) = hinted_queue();
    for name in ["a", "b", "c"] {
        q.add(pod(name, 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    }
    clock.advance(Duration::from_secs(30));
    // A node's labels, taints or conditions change nothing for it.
    for action in [
        ActionType::UPDATE_NODE_LABEL,
        ActionType::UPDATE_NODE_TAINT,
        ActionType::UPDATE_NODE_CONDITION,
    ] {
        q.move_all_to_active_or_backoff(node_update(action));
    }
    q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_ADD);
    q.move_all_to_active_or_backoff(ClusterEvent::NODE_DELETE);
    assert_eq!(q.pending().unschedulable, 3);
    assert!(q.pop().is_none());
    // More allocatable on a node may make it fit: every such pod moves.
    q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_ALLOCATABLE));
    assert_eq!(q.pending().active, 3);
    let mut again = names(&mut q);
    again.sort();
    assert_eq!(again, ["a", "b", "c"]);
}

#[test]
fn a_bound_pod_deleted_or_a_node_added_moves_a_pod_that_did_not_fit() {
    let (mut q, clock) = hinted_queue();
    q.add(pod("a", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    clock.advance(Duration::from_secs(30));
    q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
    assert_eq!(names(&mut q), ["a"]);
    q.add(pod("b", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    clock.advance(Duration::from_secs(30));
    q.move_all_to_active_or_backoff(ClusterEvent::NODE_ADD);
    assert_eq!(names(&mut q), ["b"]);
}

#[test]
fn any_rejecting_plugin_can_vouch_for_an_event() {
    let (mut q, clock) = hinted_queue();
    q.add(pod("fit", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    q.add(pod("both", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeAffinity", "NodeResourcesFit"]));
    clock.advance(Duration::from_secs(30));
    q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
    assert_eq!(names(&mut q), ["both"]);
    assert_eq!(q.pending().unschedulable, 1);
}

#[test]
fn pod_with_no_rejecting_plugin_is_retried_whatever_happens() {
    let (mut q, clock) = hinted_queue();
    // kube-scheduler does not park it: an unexpected failure is retried after the
    // backoff, without waiting for an event.
    q.add(pod("a", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, BTreeSet::new());
    assert_eq!(q.pending().unschedulable, 0);
    assert_eq!(q.pending().backoff, 1);
    clock.advance(Duration::from_secs(1));
    assert_eq!(names(&mut q), ["a"]);
    // And any event is one that can help it.
    let h = hints();
    for event in [
        node_update(ActionType::UPDATE_NODE_LABEL),
        ClusterEvent::ASSIGNED_POD_ADD,
        ClusterEvent::new(EventResource::StorageClass, ActionType::ADD),
    ] {
        assert!(h.worth_requeuing("default-scheduler", &BTreeSet::new(), &event));
    }
}

/// Coscheduling's registrations (Pod/Add, its PodGroup added or updated), beside a
/// plugin registered for every event.
fn gang_hints() -> QueueingHints {
    let mut h = QueueingHints::new();
    h.set_plugin_events(
        "default-scheduler",
        "Coscheduling",
        vec![
            ClusterEvent::new(EventResource::Pod, ActionType::ADD),
            ClusterEvent::new(
                EventResource::SIGS_POD_GROUP,
                ActionType::ADD | ActionType::UPDATE,
            ),
        ],
    );
    h.set_plugin_events(
        "default-scheduler",
        "Anything",
        vec![ClusterEvent::WILDCARD],
    );
    h
}

#[test]
fn an_event_of_a_kind_no_plugin_registered_is_never_reported() {
    // kube-scheduler watches a custom kind only for the actions some plugin
    // registered: a quota changed, or a PodGroup deleted, moves nobody, not even a pod
    // turned down by a plugin registered for every event.
    let (mut q, clock) = queue();
    q.set_queueing_hints(gang_hints());
    q.add(pod("any", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["Anything"]));
    q.add(pod("gang", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["Coscheduling"]));
    clock.advance(Duration::from_secs(30));
    q.move_all_to_active_or_backoff(ClusterEvent::new(
        EventResource::ELASTIC_QUOTA,
        ActionType::UPDATE,
    ));
    q.move_all_to_active_or_backoff(ClusterEvent::new(
        EventResource::SIGS_POD_GROUP,
        ActionType::DELETE,
    ));
    assert_eq!(q.pending().unschedulable, 2);
    // A node added is reported, and helps only the plugin registered for it all.
    q.move_all_to_active_or_backoff(ClusterEvent::NODE_ADD);
    assert_eq!(names(&mut q), ["any"]);
    // The PodGroup updated moves the gang's pod.
    q.move_all_to_active_or_backoff(ClusterEvent::new(
        EventResource::SIGS_POD_GROUP,
        ActionType::UPDATE,
    ));
    assert_eq!(names(&mut q), ["gang"]);
}

#[test]
fn with_gang_scheduling_a_new_pending_pod_moves_the_pods_it_may_complete() {
    let clock = Arc::new(FakeClock::new());
    let options = QueueOptions {
        pending_adds_move_pods: true,
        ..QueueOptions::default()
    };
    let mut q = SchedulingQueue::new(options, clock.clone(), priority_sort);
    q.set_queueing_hints(gang_hints());
    let mut plain = SchedulingQueue::new(QueueOptions::default(), clock.clone(), priority_sort);
    plain.set_queueing_hints(gang_hints());
    for q in [&mut q, &mut plain] {
        q.add(pod("g-1", 0));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["Coscheduling"]));
    }
    clock.advance(Duration::from_secs(30));
    q.add(pod("g-2", 0));
    plain.add(pod("g-2", 0));
    assert_eq!(names(&mut q), ["g-1", "g-2"]);
    assert_eq!(names(&mut plain), ["g-2"], "without the gate it waits");
}

/// A hinted queue without `SchedulerPopFromBackoffQ`.
fn hinted_queue_waiting_out_backoff() -> (SchedulingQueue, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new());
    let options = QueueOptions {
        pop_from_backoff: false,
        ..QueueOptions::default()
    };
    let mut q = SchedulingQueue::new(options, clock.clone(), priority_sort);
    q.set_queueing_hints(hints());
    (q, clock)
}

#[test]
fn event_during_backoff_goes_to_backoff_queue() {
    let (mut q, clock) = hinted_queue_waiting_out_backoff();
    q.add(pod("a", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeAffinity"]));
    q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
    assert_eq!(q.pending().backoff, 1);
    assert!(q.pop().is_none());
    clock.advance(Duration::from_secs(1));
    assert_eq!(names(&mut q), ["a"]);
}

#[test]
fn an_idle_queue_takes_a_rejected_pod_before_its_backoff_ends() {
    // SchedulerPopFromBackoffQ (on by default): with nothing active, the rejected pod
    // backing off whose backoff ends first comes out at once; an active pod still
    // comes first, and a pod backing off after an error waits its time out.
    let (mut q, clock) = hinted_queue();
    q.add(pod("a", 0));
    q.add(pod("b", 0));
    q.add(pod("error", 0));
    let a = q.pop().unwrap();
    let b = q.pop().unwrap();
    let error = q.pop().unwrap();
    q.add_unschedulable(b, rejected_by(&["NodeAffinity"]));
    clock.advance(Duration::from_millis(100));
    q.add_unschedulable(a, rejected_by(&["NodeAffinity"]));
    q.add_backoff(error);
    q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
    assert_eq!(q.pending().backoff, 3);
    q.add(pod("c", 0));
    assert_eq!(names(&mut q), ["c", "b", "a"]);
    assert_eq!(q.pending().backoff, 1, "the error's backoff is waited out");
    clock.advance(Duration::from_secs(1));
    assert_eq!(names(&mut q), ["error"]);
}

#[test]
fn only_a_helpful_event_while_in_flight_sends_pod_to_backoff() {
    let (mut q, _) = hinted_queue();
    q.add(pod("a", 0));
    q.add(pod("b", 0));
    let a = q.pop().unwrap();
    // A label change while a is being scheduled cannot help NodeResourcesFit.
    q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
    q.add_unschedulable(a, rejected_by(&["NodeResourcesFit"]));
    assert_eq!(q.pending().unschedulable, 1);
    // A pod deleted while b is being scheduled can.
    let b = q.pop().unwrap();
    q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
    assert_eq!(q.pending().backoff, 1, "a moved");
    q.add_unschedulable(b, rejected_by(&["NodeResourcesFit"]));
    assert_eq!(q.pending().backoff, 2, "b saw the event in flight");
    assert_eq!(q.pending().unschedulable, 0);
}

#[test]
fn events_before_a_pods_attempt_do_not_count_for_it() {
    let (mut q, _) = hinted_queue();
    q.add(pod("a", 0));
    q.add(pod("b", 0));
    let a = q.pop().unwrap();
    q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_DELETE);
    q.add_unschedulable(a, rejected_by(&["NodeResourcesFit"]));
    assert_eq!(q.pending().backoff, 1);
    // b was popped after the event: it does not see it.
    let b = q.pop().unwrap();
    q.add_unschedulable(b, rejected_by(&["NodeResourcesFit"]));
    assert_eq!(q.pending().unschedulable, 1);
}

#[test]
fn unschedulable_pods_are_retried_after_the_maximum_duration() {
    let (mut q, clock) = hinted_queue();
    q.add(pod("a", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    assert_eq!(
        q.next_wakeup(),
        Some(clock.now() + DEFAULT_MAX_IN_UNSCHEDULABLE_PODS_DURATION)
    );
    clock.advance(Duration::from_secs(150));
    q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
    clock.advance(Duration::from_secs(149));
    assert!(q.pop().is_none(), "no helpful event, not yet 5 minutes");
    clock.advance(Duration::from_secs(2));
    assert_eq!(names(&mut q), ["a"]);
}

#[test]
fn a_pods_own_update_moves_it_only_when_it_can_help() {
    let (mut q, clock) = hinted_queue();
    q.add(pod_with("a", "2", &[]));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    clock.advance(Duration::from_secs(30));
    // New labels do not make it fit.
    q.update(pod_with("a", "2", &[("app", "web")]));
    assert_eq!(q.pending().unschedulable, 1);
    assert_eq!(
        q.pending_pods()[0].info.pod_info.pod().metadata.labels,
        Some([("app".to_string(), "web".to_string())].into())
    );
    // Asking for less may.
    q.update(pod_with("a", "1", &[("app", "web")]));
    assert_eq!(q.pending().active, 1);
    let p = q.pop().unwrap();
    assert_eq!(p.info.pod_info.requests().milli_cpu, 1000);
}

#[test]
fn a_pod_updated_in_flight_comes_back_as_its_latest_object() {
    let (mut q, _) = hinted_queue();
    q.add(pod_with("a", "2", &[]));
    let p = q.pop().unwrap();
    q.update(pod_with("a", "1", &[]));
    assert!(q.is_in_flight("default/a"), "it keeps its place");
    q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    assert_eq!(q.pending().backoff, 1, "its own scale-down can help it");
    let back = &q.pending_pods()[0];
    assert_eq!(back.info.pod_info.requests().milli_cpu, 1000);
}

#[test]
fn eligible_pods_only() {
    let (mut q, clock) = hinted_queue();
    for (name, prio) in [("low", 0), ("high", 10)] {
        q.add(pod(name, prio));
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["NodeResourcesFit"]));
    }
    clock.advance(Duration::from_secs(30));
    q.move_to_active_or_backoff_if(ClusterEvent::ASSIGNED_POD_DELETE, |p| {
        p.info.pod_info.priority() <= 5
    });
    assert_eq!(names(&mut q), ["low"]);
}

#[test]
fn update_and_delete() {
    let (mut q, _) = queue();
    q.add(pod("a", 0));
    q.add(pod("b", 0));
    q.update(pod("b", 100));
    q.delete("default/a");
    assert!(!q.contains("default/a"));
    let p = q.pop().unwrap();
    assert_eq!(p.info.pod_info.priority(), 100);
    q.add_unschedulable(p, rejected_by(&["Custom"]));
    q.update(pod("b", 7));
    assert_eq!(q.pending().backoff, 1, "updated within its backoff");
    q.add(pod("b", 7));
    assert_eq!(q.pending().backoff + q.pending().active, 1, "no duplicate");
}

#[test]
fn gated_pod_moves_when_updated() {
    let (mut q, _) = queue();
    q.add(pod("g", 0));
    let p = q.pop().unwrap();
    q.add_gated(p);
    assert_eq!(q.pending().gated, 1);
    assert!(q.pop().is_none());
    q.update(pod("g", 0));
    assert_eq!(names(&mut q), ["g"]);
}

#[test]
fn gated_pods_move_when_an_event_may_let_them_in() {
    let (mut q, _) = queue();
    q.add(pod("b", 5));
    q.add(pod("g", 0));
    let b = q.pop().unwrap();
    assert_eq!(b.info.pod_info.name(), "b");
    assert_eq!(b.info.attempts, 1);
    q.add_gated(b);
    q.move_gated_if(ClusterEvent::UNSCHEDULABLE_POD_ADD, |p| {
        p.key() == "default/g"
    });
    assert_eq!(
        q.pending().gated,
        1,
        "only the pods the event may help move"
    );
    q.move_gated_if(ClusterEvent::UNSCHEDULABLE_POD_ADD, |p| {
        p.key() == "default/b"
    });
    // Never attempted (its pop was PreEnqueue's): no backoff, and at its first attempt.
    assert_eq!(q.pending().backoff, 0);
    let b = q.pop().unwrap();
    assert_eq!((b.info.pod_info.name(), b.info.attempts), ("b", 1));
    assert_eq!(names(&mut q), ["g"]);
}

#[test]
fn activated_pods_leave_the_unschedulable_set_at_once() {
    let (mut q, _) = queue();
    q.add(pod("a", 0));
    q.add(pod("b", 0));
    let a = q.pop().unwrap();
    q.add_unschedulable(a, rejected_by(&["Coscheduling"]));
    assert_eq!(q.pending().unschedulable, 1);
    q.activate([&"default/a".to_string(), &"default/nobody".to_string()]);
    assert_eq!(q.pending().unschedulable, 0);
    assert_eq!(q.pending().active, 2);
}

#[test]
fn incoming_hook_counts_events() {
    let (mut q, clock) = hinted_queue();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    q.set_incoming_hook(Arc::new(move |queue, event| {
        s.lock().unwrap().push(format!("{}:{event}", queue.label()));
    }));
    q.add(pod("a", 0));
    let p = q.pop().unwrap();
    q.add_unschedulable(p, rejected_by(&["NodeAffinity"]));
    clock.advance(Duration::from_secs(30));
    q.move_all_to_active_or_backoff(node_update(ActionType::UPDATE_NODE_LABEL));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "active:UnschedulablePodAdd",
            "unschedulable:ScheduleAttemptFailure",
            "active:NodeUpdateNodeLabel"
        ]
    );
}

#[test]
fn take_where_hands_out_the_matching_pods_from_every_part_in_flight() {
    let (mut q, _) = queue();
    for (n, prio) in [("g-1", 1), ("x", 5), ("g-2", 1), ("g-3", 1)] {
        q.add(pod(n, prio));
    }
    // g-1 fails and waits in the unschedulable set; g-2 is gated.
    let popped: Vec<QueuedPod> = std::iter::from_fn(|| q.pop()).collect();
    for p in popped {
        match p.info.pod_info.name() {
            "g-1" => q.add_unschedulable(p, BTreeSet::from(["P".to_string()])),
            "g-2" => q.add_gated(p),
            "g-3" => q.add_unschedulable(p, BTreeSet::new()),
            _ => q.done(p.key()),
        }
    }
    q.add(pod("g-4", 1));
    let mut taken: Vec<String> = q
        .take_where(|p| p.info.pod_info.name().starts_with("g-"))
        .into_iter()
        .map(|p| p.info.pod_info.name().to_string())
        .collect();
    taken.sort();
    assert_eq!(taken, ["g-1", "g-2", "g-3", "g-4"]);
    assert!(
        taken
            .iter()
            .all(|n| q.is_in_flight(&format!("default/{n}")))
    );
    assert_eq!(q.pop().map(|p| p.key().to_string()), None);
}

/// Rejects a pod until a pod with its `team` label is added (a toy gang), and says so
/// through its queueing hint.
struct WaitsForTeammate;

impl crate::Plugin for WaitsForTeammate {
    fn name(&self) -> &str {
        "WaitsForTeammate"
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(EventResource::Pod, ActionType::ADD)]
    }
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        _: &ClusterEvent,
        objects: &EventObjects,
    ) -> crate::QueueingHint {
        let team = |p: &PodInfo| {
            p.pod()
                .metadata
                .labels
                .clone()
                .unwrap_or_default()
                .get("team")
                .cloned()
        };
        match objects.new_pod() {
            Some(added) if team(added) != team(pod) => crate::QueueingHint::QueueSkip,
            _ => crate::QueueingHint::Queue,
        }
    }
}

#[test]
fn a_plugin_hint_narrows_an_event_to_the_pods_it_can_help() {
    let (mut q, clock) = queue();
    let mut hints = QueueingHints::new();
    hints.set_plugin("default-scheduler", Arc::new(WaitsForTeammate));
    q.set_queueing_hints(hints);
    q.add(pod_with("red-1", "1", &[("team", "red")]));
    q.add(pod_with("blue-1", "1", &[("team", "blue")]));
    for _ in 0..2 {
        let p = q.pop().unwrap();
        q.add_unschedulable(p, rejected_by(&["WaitsForTeammate"]));
    }
    clock.advance(Duration::from_secs(60));
    let added = |name: &str, team: &str| {
        EventObjects::added(EventObject::Pod(pod_with(name, "1", &[("team", team)])))
    };
    q.move_with_objects(
        ClusterEvent::ASSIGNED_POD_ADD,
        &added("red-2", "red"),
        |_| true,
    );
    assert_eq!(
        names(&mut q),
        ["red-1"],
        "a red pod added helps the red pod only"
    );
    // Without objects the hint cannot look closer: every pod the event matches moves.
    q.move_all_to_active_or_backoff(ClusterEvent::ASSIGNED_POD_ADD);
    assert_eq!(names(&mut q), ["blue-1"]);
}

#[test]
fn events_seen_in_flight_keep_their_objects_for_the_hints() {
    let (mut q, _clock) = queue();
    let mut hints = QueueingHints::new();
    hints.set_plugin("default-scheduler", Arc::new(WaitsForTeammate));
    q.set_queueing_hints(hints);
    q.add(pod_with("red-1", "1", &[("team", "red")]));
    let p = q.pop().unwrap();
    let blue = EventObjects::added(EventObject::Pod(pod_with(
        "blue-1",
        "1",
        &[("team", "blue")],
    )));
    q.move_with_objects(ClusterEvent::ASSIGNED_POD_ADD, &blue, |_| true);
    q.add_unschedulable(p, rejected_by(&["WaitsForTeammate"]));
    assert_eq!(
        q.pending().unschedulable,
        1,
        "a blue pod added while red-1 was in flight does not help it"
    );
}

#[test]
fn an_idle_queue_pops_the_earliest_backoff_first_and_ties_in_queue_order() {
    let (mut q, clock) = queue();
    for (name, priority) in [("a", 1), ("b", 5), ("c", 3)] {
        q.add(pod(name, priority));
    }
    let rejected = rejected_by(&["NodeResourcesFit"]);
    // b and c fail together (same backoff end); a fails a second later.
    let b = q.pop().unwrap();
    let c = q.pop().unwrap();
    clock.advance(Duration::from_secs(1));
    let a = q.pop().unwrap();
    q.add_unschedulable(a, BTreeSet::new());
    clock.advance(Duration::from_millis(10));
    q.add_unschedulable(c, rejected.clone());
    q.add_unschedulable(b, rejected);
    // c and b sit in the unschedulable set; a, rejected by no plugin, backs off.
    assert_eq!(q.pending().backoff, 1);
    q.move_all_to_active_or_backoff(ClusterEvent::WILDCARD);
    assert_eq!(q.pending().backoff, 3);
    // a's backoff (1 s from 1 s) ends first, but it failed with no rejecting plugin:
    // an idle queue takes only rejected pods early, b (higher priority) before c.
    let order: Vec<String> = std::iter::from_fn(|| {
        let p = q.pop()?;
        q.done(p.key());
        Some(p.info.pod_info.name().to_string())
    })
    .take(2)
    .collect();
    assert_eq!(order, ["b", "c"]);
    assert_eq!(q.pop().map(|p| p.info.pod_info.name().to_string()), None);
    let a_ends = q.next_backoff_end().expect("a backs off");
    clock.advance(a_ends.saturating_duration_since(clock.now()));
    assert_eq!(q.pop().unwrap().info.pod_info.name(), "a");
}

#[test]
fn unschedulable_pods_time_out_oldest_first_and_only_after_the_maximum() {
    let (mut q, clock) = queue();
    q.add(pod("old", 0));
    q.add(pod("new", 0));
    let old = q.pop().unwrap();
    q.add_unschedulable(old, rejected_by(&["NodeResourcesFit"]));
    clock.advance(Duration::from_secs(60));
    let new = q.pop().unwrap();
    q.add_unschedulable(new, rejected_by(&["NodeResourcesFit"]));
    let max = QueueOptions::default().max_in_unschedulable;
    let first = q.next_unschedulable_timeout().unwrap();
    clock.advance(first.saturating_duration_since(clock.now()));
    q.flush();
    assert_eq!(
        q.pending().unschedulable,
        2,
        "not strictly after the maximum yet"
    );
    clock.advance(Duration::from_millis(1));
    q.flush();
    assert_eq!(q.pending().unschedulable, 1);
    assert_eq!(
        q.next_unschedulable_timeout(),
        Some(first + Duration::from_secs(60))
    );
    assert!(max > Duration::from_secs(60));
}

/// Rejects a pod until it is labelled `ready=yes`, and says so through its hint.
struct WaitsForReadyLabel;

impl crate::Plugin for WaitsForReadyLabel {
    fn name(&self) -> &str {
        "WaitsForReadyLabel"
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(
            EventResource::Pod,
            ActionType::UPDATE_POD_LABEL,
        )]
    }
    fn queueing_hint(
        &self,
        _: &PodInfo,
        _: &ClusterEvent,
        objects: &EventObjects,
    ) -> crate::QueueingHint {
        // No object to look at: it cannot tell, so it queues.
        let ready = objects.new_pod().is_none_or(|p| {
            p.pod()
                .metadata
                .labels
                .clone()
                .unwrap_or_default()
                .get("ready")
                == Some(&"yes".to_string())
        });
        crate::QueueingHint::queue_if(ready)
    }
}

#[test]
fn a_pod_updated_in_flight_is_judged_on_its_new_object() {
    let (mut q, _clock) = queue();
    let mut hints = QueueingHints::new();
    hints.set_plugin("default-scheduler", Arc::new(WaitsForReadyLabel));
    q.set_queueing_hints(hints);
    q.add(pod_with("p", "1", &[("ready", "no")]));
    let p = q.pop().unwrap();
    q.update(pod_with("p", "1", &[("ready", "still-no")]));
    q.add_unschedulable(p, rejected_by(&["WaitsForReadyLabel"]));
    assert_eq!(
        q.pending().unschedulable,
        1,
        "a label change that does not help"
    );
    q.update(pod_with("p", "1", &[("ready", "yes")]));
    assert_eq!(q.pending().unschedulable, 0, "the label it waits for");
}
