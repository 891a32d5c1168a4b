//! Permit's Wait in the scheduler: a waiting pod keeps its node's resources, another
//! pod's Permit can allow it, and what still waits at the end is rejected with
//! kube-scheduler's timeout message and unreserved, on the permit time a caller moves,
//! also after the profiles are built again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubesched_config::{KubeSchedulerConfiguration, PluginRef};
use kubesched_framework::build::{NodeBuilder, PodBuilder};
use kubesched_framework::waiting::WaitingPods;
use kubesched_framework::*;

/// Makes every pod wait (3 s) until `quorum` pods have reached Permit, then allows
/// them all; records Unreserve calls.
struct Quorum {
    quorum: usize,
    seen: Mutex<usize>,
    waiting: Arc<WaitingPods>,
    unreserved: Mutex<Vec<String>>,
}

impl Plugin for Quorum {
    fn name(&self) -> &str {
        "Quorum"
    }
    extension_points!(QueueSort, Filter, Reserve, Permit, Bind);
}

impl QueueSortPlugin for Quorum {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        a.timestamp < b.timestamp
    }
}

impl FilterPlugin for Quorum {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.requests().milli_cpu <= node.allocatable().milli_cpu - node.requested().milli_cpu {
            Status::success()
        } else {
            Status::new(Code::Unschedulable, "Insufficient cpu")
        }
    }
}

impl ReservePlugin for Quorum {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }
    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        self.unreserved.lock().unwrap().push(pod.key().to_string());
    }
}

impl PermitPlugin for Quorum {
    fn permit(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> (Status, Duration) {
        let mut seen = self.seen.lock().unwrap();
        *seen += 1;
        if *seen >= self.quorum {
            self.waiting.iterate(|w| w.allow("Quorum"));
            return (Status::success(), Duration::ZERO);
        }
        (Status::with_code(Code::Wait), Duration::from_secs(3))
    }
}

impl BindPlugin for Quorum {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }
}

fn scheduler(quorum: usize) -> (Scheduler, Arc<Quorum>) {
    let (framework, plugin) = framework(quorum, &Handle::default());
    let (snapshot, _) =
        Snapshot::new([NodeBuilder::new("n1").cpu_millis(2000).node()], []).unwrap();
    let scheduler = Scheduler::new(vec![framework], snapshot, SchedulerOptions::default()).unwrap();
    (scheduler, plugin)
}

/// A profile of one plugin, Quorum, over `handle`'s waiting map.
fn framework(quorum: usize, handle: &Handle) -> (Framework, Arc<Quorum>) {
    let plugin = Arc::new(Quorum {
        quorum,
        seen: Mutex::new(0),
        waiting: handle.waiting_pods.clone(),
        unreserved: Mutex::new(Vec::new()),
    });
    let mut registry = Registry::new();
    let shared = plugin.clone();
    registry
        .register("Quorum", move |_, _| Ok(shared.clone() as Arc<dyn Plugin>))
        .unwrap();
    let mut config = KubeSchedulerConfiguration::default_config();
    let profile = &mut config.profiles[0];
    profile.user_plugins = None;
    profile.plugins = Default::default();
    for set in [
        &mut profile.plugins.queue_sort,
        &mut profile.plugins.filter,
        &mut profile.plugins.reserve,
        &mut profile.plugins.permit,
        &mut profile.plugins.bind,
    ] {
        set.enabled.push(PluginRef::new("Quorum"));
    }
    (Framework::new(profile, &registry, handle).unwrap(), plugin)
}

fn pod(name: &str) -> Arc<PodInfo> {
    PodBuilder::new("default", name)
        .cpu_millis(1000)
        .pod_info()
        .unwrap()
}

#[test]
fn a_waiting_pod_holds_its_node_and_is_bound_when_allowed() {
    let (mut s, _) = scheduler(2);
    let first = pod("a");
    assert!(matches!(s.schedule_one(&first), Outcome::Waiting { ref node, .. } if node == "n1"));
    assert_eq!(s.snapshot().node_at(0).requested().milli_cpu, 1000);
    assert!(s.resolve_waiting().is_empty());
    assert!(matches!(
        s.schedule_one(&pod("b")),
        Outcome::Scheduled { .. }
    ));
    let done = s.resolve_waiting();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0.key(), "default/a");
    assert!(matches!(done[0].1, Outcome::Scheduled { ref node, .. } if node == "n1"));
    assert_eq!(s.waiting_count(), 0);
    assert_eq!(s.snapshot().node_at(0).requested().milli_cpu, 2000);
}

#[test]
fn what_still_waits_times_out_with_kube_schedulers_message_and_is_unreserved() {
    let (mut s, plugin) = scheduler(3);
    assert!(matches!(s.schedule_one(&pod("a")), Outcome::Waiting { .. }));
    assert!(matches!(s.schedule_one(&pod("b")), Outcome::Waiting { .. }));
    // The third pod finds no cpu: the two waiting pods hold all of it.
    assert!(matches!(
        s.schedule_one(&pod("c")),
        Outcome::Unschedulable { .. }
    ));
    let done = s.time_out_waiting();
    let keys: Vec<&str> = done.iter().map(|(p, _)| p.key()).collect();
    assert_eq!(keys, ["default/a", "default/b"]);
    for (_, outcome) in &done {
        match outcome {
            Outcome::BindingFailed { status, .. } => {
                assert_eq!(
                    status.message(),
                    "rejected due to timeout after waiting 3s at plugin Quorum"
                );
                assert_eq!(status.code(), Code::Unschedulable);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        *plugin.unreserved.lock().unwrap(),
        ["default/a", "default/b"]
    );
    assert_eq!(s.snapshot().node_at(0).requested().milli_cpu, 0);
}

#[test]
fn waits_time_out_only_when_the_permit_time_reaches_their_deadline() {
    let (mut s, plugin) = scheduler(3);
    s.set_permit_time(1_000_000_000);
    assert!(matches!(s.schedule_one(&pod("a")), Outcome::Waiting { .. }));
    s.set_permit_time(2_000_000_000);
    assert!(matches!(s.schedule_one(&pod("b")), Outcome::Waiting { .. }));
    // a waits 3 s from 1 s, b from 2 s.
    assert_eq!(s.next_permit_deadline(), Some(4_000_000_000));
    assert!(s.time_out_waiting_until(3_999_999_999).is_empty());
    assert_eq!(s.waiting_count(), 2);
    let done = s.time_out_waiting_until(4_000_000_000);
    let keys: Vec<&str> = done.iter().map(|(p, _)| p.key()).collect();
    assert_eq!(keys, ["default/a"]);
    assert_eq!(s.next_permit_deadline(), Some(5_000_000_000));
    assert_eq!(*plugin.unreserved.lock().unwrap(), ["default/a"]);
    assert_eq!(s.snapshot().node_at(0).requested().milli_cpu, 1000);
}

#[test]
fn profiles_built_again_over_the_same_waiting_map_keep_the_waiting_pods() {
    let (mut s, _) = scheduler(2);
    assert!(matches!(s.schedule_one(&pod("a")), Outcome::Waiting { .. }));
    assert_eq!(
        s.set_profiles(Vec::new()),
        Err(SchedulerError::ProfilesChanged)
    );
    // The profile built again with a plugin of its own over the same map; its quorum
    // of one lets the next pod allow the waiting one.
    let handle = Handle {
        waiting_pods: s.profiles()[0].waiting_pods().clone(),
        ..Handle::default()
    };
    let (rebuilt, _) = framework(1, &handle);
    s.set_profiles(vec![rebuilt]).unwrap();
    assert_eq!(s.waiting_count(), 1);
    assert!(matches!(
        s.schedule_one(&pod("b")),
        Outcome::Scheduled { .. }
    ));
    let done = s.resolve_waiting();
    assert_eq!(done.len(), 1);
    assert!(matches!(done[0].1, Outcome::Scheduled { ref node, .. } if node == "n1"));
}
