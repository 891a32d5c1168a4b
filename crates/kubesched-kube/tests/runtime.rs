//! The runtime against a loopback API server: real kube-rs client code, real HTTP.

mod common;

use std::time::{Duration, Instant};

use common::{OURS, one_profile, until};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_kube::testing::{FakeApiServer, https_get_insecure};
use kubesched_kube::{RunningRuntime, Runtime, ServingOptions};

const UNFIT_MESSAGE: &str = "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";

fn config(leader_elect: bool) -> KubeSchedulerConfiguration {
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
leaderElection:
  leaderElect: {leader_elect}
  leaseDuration: 1s
  renewDeadline: 600ms
  retryPeriod: 100ms
  resourceNamespace: kube-system
  resourceName: lock-object-my-scheduler
profiles:
- schedulerName: {OURS}
"
    );
    KubeSchedulerConfiguration::from_yaml_str(&text, "test.yaml")
        .expect("config")
        .config
}

async fn start(server: &FakeApiServer, leader_elect: bool, identity: &str) -> RunningRuntime {
    Runtime::new(server.client(), config(leader_elect))
        .identity(identity)
        .start()
        .await
        .expect("start")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_pods_of_our_profiles_are_scheduled() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.add_node(FakeApiServer::node("n2", "4", "8Gi"));
    server.add_pod(FakeApiServer::pod("ours", OURS, "100m"));
    server.add_pod(FakeApiServer::pod("theirs", "default-scheduler", "100m"));
    server.add_pod(FakeApiServer::pod("unnamed", "", "100m"));
    let rt = start(&server, false, "a").await;
    until(5, "ours bound", || server.node_of("default/ours").is_some()).await;
    let node = server.node_of("default/ours").unwrap();
    until(5, "the Scheduled event", || {
        !server.events_for("default/ours").is_empty()
    })
    .await;
    assert_eq!(
        server.events_for("default/ours"),
        [(
            "Scheduled".to_string(),
            format!("Successfully assigned default/ours to {node}"),
            OURS.to_string()
        )]
    );
    // A later pod of ours is scheduled too, and by then the others would have been.
    server.add_pod(FakeApiServer::pod("ours-2", OURS, "100m"));
    until(5, "ours-2 bound", || {
        server.node_of("default/ours-2").is_some()
    })
    .await;
    assert_eq!(server.node_of("default/theirs"), None);
    assert_eq!(server.node_of("default/unnamed"), None);
    assert!(server.events_for("default/theirs").is_empty());
    assert_eq!(server.bindings().len(), 2);
    rt.stop().await;
}

/// Pods are listed and watched as kube-scheduler's informer follows them, without the
/// finished ones; the other kinds without a selector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_are_listed_and_watched_without_the_finished_ones() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.add_pod(FakeApiServer::pod("ours", OURS, "100m"));
    let rt = start(&server, false, "a").await;
    until(5, "ours bound", || server.node_of("default/ours").is_some()).await;
    // The watch starts after the list.
    until(5, "the pods' watch", || {
        server
            .requests()
            .iter()
            .any(|(_, p)| p.starts_with("/api/v1/pods?") && p.contains("watch=true"))
    })
    .await;
    let selector = "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";
    let requests = server.requests();
    let of = |prefix: &str| -> Vec<String> {
        requests
            .iter()
            .filter(|(m, p)| m == "GET" && p.starts_with(prefix))
            .map(|(_, p)| p.clone())
            .collect()
    };
    let pods = of("/api/v1/pods?");
    assert!(pods.len() >= 2, "a list and a watch: {pods:?}");
    assert!(pods.iter().all(|p| p.contains(selector)), "{pods:?}");
    let nodes = of("/api/v1/nodes?");
    assert!(!nodes.is_empty());
    assert!(
        nodes.iter().all(|p| !p.contains("fieldSelector")),
        "{nodes:?}"
    );
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_pod_gets_event_and_condition_then_fits_a_new_node() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("small", "1", "8Gi"));
    server.add_pod(FakeApiServer::pod("big", OURS, "2"));
    let rt = start(&server, false, "a").await;
    until(5, "FailedScheduling", || {
        !server.events_for("default/big").is_empty()
    })
    .await;
    let (reason, note, from) = server.events_for("default/big")[0].clone();
    assert_eq!(reason, "FailedScheduling");
    // kube-scheduler's message: the PostFilter plugins' (DynamicResources, then
    // DefaultPreemption) follow the filter reasons.
    assert_eq!(note, UNFIT_MESSAGE);
    assert_eq!(from, OURS);
    until(5, "the PodScheduled condition", || {
        server
            .get_pod("default/big")
            .and_then(|p| p.status)
            .and_then(|s| s.conditions)
            .is_some_and(|c| {
                c.iter().any(|c| {
                    c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable")
                        && c.message.as_deref() == Some(UNFIT_MESSAGE)
                })
            })
    })
    .await;
    assert_eq!(server.node_of("default/big"), None);
    server.add_node(FakeApiServer::node("large", "4", "8Gi"));
    until(5, "big bound after the node came", || {
        server.node_of("default/big").is_some()
    })
    .await;
    assert_eq!(server.node_of("default/big").as_deref(), Some("large"));
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_too_big_is_retried_when_allocatable_grows_not_when_labels_change() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "1", "8Gi"));
    server.add_pod(FakeApiServer::pod("big", OURS, "2"));
    let rt = start(&server, false, "a").await;
    let attempts = |result: &str| {
        format!("scheduler_schedule_attempts_total{{result=\"{result}\",profile=\"{OURS}\"}} 1\n")
    };
    until(5, "the first attempt", || {
        rt.metrics().encode().contains(&attempts("unschedulable"))
    })
    .await;
    // NodeResourcesFit rejected it: new node labels cannot help, so it stays in the
    // unschedulable set, longer than its longest backoff (2 s here).
    let mut relabelled = FakeApiServer::node("n1", "1", "8Gi");
    relabelled
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("zone".into(), "a".into());
    server.add_node(relabelled.clone());
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let text = rt.metrics().encode();
    assert!(
        text.contains(&attempts("unschedulable")),
        "retried:\n{text}"
    );
    assert!(
        text.contains("scheduler_pending_pods{queue=\"unschedulable\"} 1"),
        "{text}"
    );
    // More allocatable can: it is retried at once and fits.
    let mut bigger = FakeApiServer::node("n1", "4", "8Gi");
    bigger.metadata.labels = relabelled.metadata.labels;
    server.add_node(bigger);
    until(5, "big bound", || server.node_of("default/big").is_some()).await;
    assert!(
        rt.metrics().encode().contains(
            "scheduler_queue_incoming_pods_total{queue=\"active\",event=\"NodeUpdateNodeAllocatable\"} 1"
        ),
        "{}",
        rt.metrics().encode()
    );
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bind_conflict_is_requeued_and_resolved_by_the_watch() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.add_node(FakeApiServer::node("n2", "4", "8Gi"));
    server.steal_next_binding("default/raced", "n2");
    server.add_pod(FakeApiServer::pod("raced", OURS, "100m"));
    let rt = start(&server, false, "a").await;
    until(5, "the other scheduler's binding", || {
        server.node_of("default/raced").is_some()
    })
    .await;
    // Our binding got 409; the pod stays where the other scheduler put it.
    until(5, "our failed attempt counted", || {
        rt.metrics().encode().contains(
            "scheduler_schedule_attempts_total{result=\"error\",profile=\"my-scheduler\"} 1",
        )
    })
    .await;
    assert_eq!(server.node_of("default/raced").as_deref(), Some("n2"));
    assert!(server.bindings().is_empty());
    // The cache is consistent: a new pod is still scheduled, and the raced one never
    // again.
    server.add_pod(FakeApiServer::pod("next", OURS, "100m"));
    until(5, "next bound", || server.node_of("default/next").is_some()).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(server.bindings().len(), 1, "{:?}", server.bindings());
    assert_eq!(server.bindings()[0].0, "default/next");
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_schedules_and_the_other_takes_over() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "8", "16Gi"));
    let a = start(&server, true, "replica-a").await;
    until(5, "a leads", || a.is_leader()).await;
    let b = start(&server, true, "replica-b").await;
    server.add_pod(FakeApiServer::pod("p1", OURS, "100m"));
    until(5, "p1 bound", || server.node_of("default/p1").is_some()).await;
    assert!(a.is_leader());
    assert!(!b.is_leader());
    assert_eq!(
        server
            .lease_holder("kube-system/lock-object-my-scheduler")
            .as_deref(),
        Some("replica-a")
    );
    // The leader stops cleanly and releases the lease; b takes over.
    a.stop().await;
    until(5, "b leads", || b.is_leader()).await;
    server.add_pod(FakeApiServer::pod("p2", OURS, "100m"));
    until(5, "p2 bound", || server.node_of("default/p2").is_some()).await;
    assert_eq!(
        server
            .lease_holder("kube-system/lock-object-my-scheduler")
            .as_deref(),
        Some("replica-b")
    );
    // b crashes (no release): a new replica takes over once the lease expires.
    b.abort();
    let c = start(&server, true, "replica-c").await;
    until(5, "c leads after the lease expired", || c.is_leader()).await;
    server.add_pod(FakeApiServer::pod("p3", OURS, "100m"));
    until(5, "p3 bound", || server.node_of("default/p3").is_some()).await;
    assert_eq!(server.bindings().len(), 3);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_loses_no_pod_and_binds_none_twice() {
    let server = FakeApiServer::start().await;
    for i in 0..10 {
        server.add_node(FakeApiServer::node(&format!("n{i}"), "4", "8Gi"));
    }
    for i in 0..200 {
        server.add_pod(FakeApiServer::pod(&format!("p{i}"), OURS, "100m"));
    }
    let a = start(&server, false, "a").await;
    until(10, "some pods bound", || server.bound_count() >= 20).await;
    a.stop().await;
    let mid = server.bound_count();
    for i in 200..250 {
        server.add_pod(FakeApiServer::pod(&format!("p{i}"), OURS, "100m"));
    }
    let b = start(&server, false, "b").await;
    until(20, "every pod bound", || server.bound_count() == 250).await;
    b.stop().await;
    let bindings = server.bindings();
    let unique: std::collections::BTreeSet<_> = bindings.iter().map(|(k, _)| k).collect();
    assert_eq!(
        bindings.len(),
        250,
        "bound once each (first run bound {mid})"
    );
    assert_eq!(unique.len(), 250);
    // No node over its capacity: 4 CPUs of 100m pods is 40 pods at most.
    let mut per_node = std::collections::BTreeMap::<String, usize>::new();
    for (_, n) in &bindings {
        *per_node.entry(n.clone()).or_default() += 1;
    }
    assert!(per_node.values().all(|&n| n <= 40), "{per_node:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_metrics_are_served_over_https() {
    let server = FakeApiServer::start().await;
    // Two nodes, so that p's cycle has two feasible nodes and runs PreScore and Score.
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.add_node(FakeApiServer::node("n2", "4", "8Gi"));
    server.add_pod(FakeApiServer::pod("p", OURS, "100m"));
    server.add_pod(FakeApiServer::pod("huge", OURS, "64"));
    let rt = Runtime::new(server.client(), config(false))
        // The fake has no TokenReview: /metrics is served to anyone here, as with
        // kube-scheduler's --authorization-always-allow-paths=/metrics,...
        .serving(Some(ServingOptions {
            always_allow_paths: vec![
                "/healthz".into(),
                "/livez".into(),
                "/readyz".into(),
                "/metrics".into(),
            ],
            ..ServingOptions::new("127.0.0.1:0".parse().unwrap())
        }))
        .plugin_metrics_sample_percent(100)
        .start()
        .await
        .expect("start");
    let addr = rt.secure_address().expect("serving");
    until(5, "p bound", || server.node_of("default/p").is_some()).await;
    for path in ["/healthz", "/livez", "/readyz"] {
        let (code, body) = https_get_insecure(addr, path).await.expect("get");
        assert_eq!((code, body.as_str()), (200, "ok"), "{path}");
    }
    let needles = [
        "scheduler_schedule_attempts_total{result=\"scheduled\",profile=\"my-scheduler\"} 1",
        "scheduler_schedule_attempts_total{result=\"unschedulable\",profile=\"my-scheduler\"} 1",
        "scheduler_scheduling_attempt_duration_seconds_bucket{",
        "scheduler_pending_pods{queue=\"unschedulable\"} 1",
        "scheduler_pending_pods{queue=\"active\"} 0",
        // Every extension point kube-scheduler times, once per run (not sampled),
        // labelled with the profile and the code the run returned.
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"PreEnqueue\",profile=\"my-scheduler\",status=\"Success\"} 2",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"PreFilter\",profile=\"my-scheduler\",status=\"Success\"} 2",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"PostFilter\",profile=\"my-scheduler\",status=\"Unschedulable\"} 1",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"PreScore\",profile=\"my-scheduler\",status=\"Success\"} 1",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"Score\",profile=\"my-scheduler\",status=\"Success\"} 1",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"Reserve\",profile=\"my-scheduler\",status=\"Success\"} 1",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"Permit\",profile=\"my-scheduler\",status=\"Success\"} 1",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"PreBind\",profile=\"my-scheduler\",status=\"Success\"} 1",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"Bind\",profile=\"my-scheduler\",status=\"Success\"} 1",
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"PostBind\",profile=\"my-scheduler\",status=\"Success\"} 1",
        "scheduler_scheduling_algorithm_duration_seconds_count 2",
        "scheduler_queue_incoming_pods_total{queue=\"active\",event=\"UnschedulablePodAdd\"} 2",
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"NodeResourcesFit\",extension_point=\"Filter\",status=\"Success\"} 2",
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"NodeResourcesFit\",extension_point=\"Filter\",status=\"UnschedulableAndUnresolvable\"} 2",
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"DefaultBinder\",extension_point=\"Bind\",status=\"Success\"} 1",
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"DefaultPreemption\",extension_point=\"PostFilter\",status=\"Unschedulable\"} 1",
        "scheduler_cache_size{type=\"nodes\"} 2",
        "scheduler_cache_size{type=\"pods\"} 1",
        "scheduler_pod_scheduling_attempts_count 1",
        "scheduler_pod_scheduling_attempts_bucket{le=\"1.0\"} 1",
        "scheduler_pod_scheduling_sli_duration_seconds_count{attempts=\"1\"} 1",
        "scheduler_goroutines{operation=\"binding\"}",
        // The Filter pass over the nodes, timed once per cycle as kube-scheduler does.
        "scheduler_framework_extension_point_duration_seconds_count{extension_point=\"Filter\",profile=\"my-scheduler\",status=\"Success\"} 2",
        // Each plugin call: PreFilter once per cycle, Filter once per node (2 x 2).
        "scheduler_plugin_evaluation_total{plugin=\"NodeAffinity\",extension_point=\"PreFilter\",profile=\"my-scheduler\"} 2",
        "scheduler_plugin_evaluation_total{plugin=\"NodeResourcesFit\",extension_point=\"Filter\",profile=\"my-scheduler\"} 4",
        "scheduler_unschedulable_pods{plugin=\"NodeResourcesFit\",profile=\"my-scheduler\"} 1",
        "scheduler_event_handling_duration_seconds_count{event=\"UnschedulablePodAdd\"} ",
        "scheduler_event_handling_duration_seconds_bucket{le=\"0.0001\",event=\"UnschedulablePodAdd\"} ",
        "scheduler_event_handling_duration_seconds_count{event=\"AssignedPodAdd\"} ",
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_max_fds ",
        "process_start_time_seconds ",
    ];
    // Every figure is counted by the task that does the work: wait for all of them.
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let (code, body) = https_get_insecure(addr, "/metrics").await.expect("get");
        assert_eq!(code, 200);
        text = body;
        if needles.iter().all(|n| text.contains(n)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for needle in needles {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    // No extension point under a name kube-scheduler does not use: the old combined
    // "Filter+Score" is gone (Filter is timed once per cycle, checked above).
    assert!(
        !text.contains("extension_point=\"Filter+Score\""),
        "Filter+Score in:\n{text}"
    );
    rt.stop().await;
}

fn with_priority(
    mut pod: k8s_openapi::api::core::v1::Pod,
    priority: i32,
) -> k8s_openapi::api::core::v1::Pod {
    if let Some(spec) = pod.spec.as_mut() {
        spec.priority = Some(priority);
    }
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn high_priority_pod_preempts_and_its_nomination_holds_the_space() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "1", "8Gi"));
    // The node is full with a low-priority pod placed by the default scheduler.
    let mut low = with_priority(FakeApiServer::pod("low", "default-scheduler", "800m"), 0);
    low.spec.as_mut().unwrap().node_name = Some("n1".into());
    server.add_pod(low);
    let rt = start(&server, false, "a").await;
    server.add_pod(with_priority(
        FakeApiServer::pod("high", OURS, "500m"),
        1000,
    ));
    until(5, "the victim's Preempted event", || {
        !server.events_for("default/low").is_empty()
    })
    .await;
    // A lower-priority pod arriving while the preemptor backs off must not take the
    // space the preemption freed: the nominated pod counts on n1.
    server.add_pod(with_priority(FakeApiServer::pod("late", OURS, "600m"), 0));
    assert_eq!(server.deleted_through_api(), ["default/low"]);
    assert_eq!(
        server.events_for("default/low"),
        [(
            "Preempted".to_string(),
            "Preempted by pod uid-default-high on node n1".to_string(),
            OURS.to_string()
        )]
    );
    let event = server
        .events()
        .into_iter()
        .find(|e| e["reason"] == "Preempted")
        .unwrap();
    assert_eq!(event["related"]["name"], "high");
    assert_eq!(event["action"], "Preempting");
    // Among any of its events: each is written from a task of its own, so the
    // Scheduled event of the retry that follows the preemption may come first.
    until(5, "high's FailedScheduling", || {
        server
            .events_for("default/high")
            .iter()
            .any(|e| e.0 == "FailedScheduling")
    })
    .await;
    until(5, "high bound", || server.node_of("default/high").is_some()).await;
    assert_eq!(server.node_of("default/high").as_deref(), Some("n1"));
    // The nomination is written by a task of its own, which may finish after the
    // binding on a busy machine.
    until(5, "high's nomination written", || {
        let status = server.get_pod("default/high").and_then(|p| p.status);
        status.and_then(|s| s.nominated_node_name).as_deref() == Some("n1")
    })
    .await;
    until(5, "late's FailedScheduling", || {
        !server.events_for("default/late").is_empty()
    })
    .await;
    assert_eq!(server.node_of("default/late"), None);
    assert_eq!(
        server.bindings(),
        [("default/high".to_string(), "n1".to_string())]
    );
    let text = rt.metrics().encode();
    for needle in [
        "scheduler_preemption_attempts_total 1\n",
        "scheduler_preemption_victims_count 1\n",
        "scheduler_preemption_victims_sum 1.0\n",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_are_watched_for_pod_affinity_namespace_selectors() {
    use k8s_openapi::api::core::v1::{Affinity, Namespace, PodAffinity, PodAffinityTerm};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    let server = FakeApiServer::start().await;
    for name in ["n1", "n2"] {
        let mut n = FakeApiServer::node(name, "4", "8Gi");
        n.metadata.labels = Some(
            [("kubernetes.io/hostname".to_string(), name.to_string())]
                .into_iter()
                .collect(),
        );
        server.add_node(n);
    }
    let mut db = FakeApiServer::pod("db", "default-scheduler", "100m");
    db.metadata.namespace = Some("data".into());
    db.metadata.labels = Some(
        [("app".to_string(), "db".to_string())]
            .into_iter()
            .collect(),
    );
    db.spec.as_mut().unwrap().node_name = Some("n2".into());
    server.add_pod(db);
    let rt = start(&server, false, "a").await;
    // The namespace arrives through the watch, after the first lists.
    let mut ns = Namespace::default();
    ns.metadata.name = Some("data".into());
    ns.metadata.labels = Some(
        [("team".to_string(), "x".to_string())]
            .into_iter()
            .collect(),
    );
    server.apply_object(&ns);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut web = FakeApiServer::pod("web", OURS, "100m");
    web.spec.as_mut().unwrap().affinity = Some(Affinity {
        pod_affinity: Some(PodAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(
                        [("app".to_string(), "db".to_string())]
                            .into_iter()
                            .collect(),
                    ),
                    ..Default::default()
                }),
                namespace_selector: Some(LabelSelector {
                    match_labels: Some(
                        [("team".to_string(), "x".to_string())]
                            .into_iter()
                            .collect(),
                    ),
                    ..Default::default()
                }),
                topology_key: "kubernetes.io/hostname".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    });
    server.add_pod(web);
    until(5, "web bound", || server.node_of("default/web").is_some()).await;
    assert_eq!(server.node_of("default/web").as_deref(), Some("n2"));
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_watch_is_followed_by_a_relist_that_finds_what_it_missed() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("small", "1", "8Gi"));
    server.add_pod(FakeApiServer::pod("big", OURS, "2"));
    let rt = start(&server, false, "a").await;
    until(5, "FailedScheduling", || {
        !server.events_for("default/big").is_empty()
    })
    .await;
    let node_lists = server.list_count("nodes");
    // A node the watch never hears of, then the history compacted: only a relist
    // shows the node, and the pod fits there.
    server.add_node_unwatched(FakeApiServer::node("large", "4", "8Gi"));
    server.expire_watches();
    until(5, "big bound to the node only the relist showed", || {
        server.node_of("default/big").as_deref() == Some("large")
    })
    .await;
    assert!(
        server.list_count("nodes") > node_lists,
        "no relist of nodes"
    );
    rt.stop().await;
}

/// kube-scheduler's OpportunisticBatching in the runtime: replicas that go one per
/// node take the previous cycle's next-best node, and the batch metrics say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_per_node_replicas_are_batched() {
    use k8s_openapi::api::core::v1::{Affinity, PodAffinityTerm, PodAntiAffinity};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use std::collections::BTreeMap;

    let server = FakeApiServer::start().await;
    for i in 0..4 {
        let mut node = FakeApiServer::node(&format!("n{i}"), "4", "8Gi");
        node.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("kubernetes.io/hostname".into(), format!("n{i}"));
        server.add_node(node);
    }
    let web = BTreeMap::from([("app".to_string(), "web".to_string())]);
    for i in 0..4 {
        let mut pod = FakeApiServer::pod(&format!("web-{i}"), OURS, "100m");
        pod.metadata.labels = Some(web.clone());
        let spec = pod.spec.as_mut().unwrap();
        spec.affinity = Some(Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                    label_selector: Some(LabelSelector {
                        match_labels: Some(web.clone()),
                        ..Default::default()
                    }),
                    topology_key: "kubernetes.io/hostname".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        });
        server.add_pod(pod);
    }
    // PodTopologySpread's system defaults would make every pod unbatchable.
    let config = one_profile(
        "",
        "  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
",
    );
    let rt = Runtime::new(server.client(), config)
        .identity("a")
        .start()
        .await
        .expect("start");
    until(10, "every replica bound", || {
        (0..4).all(|i| server.node_of(&format!("default/web-{i}")).is_some())
    })
    .await;
    let mut nodes: Vec<String> = (0..4)
        .map(|i| server.node_of(&format!("default/web-{i}")).unwrap())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["n0", "n1", "n2", "n3"], "one per node");
    let text = rt.metrics().encode();
    // The first replica finds nothing kept. The others take hints unless the machine
    // is slow enough to age the batch past 500 ms between two cycles.
    assert!(
        text.contains(&format!(
            "scheduler_batch_attempts_total{{profile=\"{OURS}\",result=\"no_hint\"}}"
        )),
        "{text}"
    );
    let hinted = text
        .lines()
        .find(|l| {
            l.starts_with(&format!(
                "scheduler_batch_attempts_total{{profile=\"{OURS}\",result=\"hint_used\"}}"
            ))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(hinted >= 1, "no hint was used:\n{text}");
    assert!(
        text.contains(&format!(
            "scheduler_get_node_hint_duration_seconds_count{{hinted=\"hint\",profile=\"{OURS}\"}}"
        )),
        "{text}"
    );
    assert!(
        text.contains("scheduler_store_schedule_results_duration_seconds_count"),
        "{text}"
    );
    rt.stop().await;
}

/// The unschedulable attempts counted in `/metrics`.
fn unschedulable_attempts(rt: &RunningRuntime) -> u64 {
    let needle = format!(
        "scheduler_schedule_attempts_total{{result=\"unschedulable\",profile=\"{OURS}\"}} "
    );
    rt.metrics()
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(needle.as_str()))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_pod_retries_only_the_pods_that_want_a_host_port_it_held() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    let pod = |name: &str, node: Option<&str>, host_port: Option<i32>| {
        let mut pod = serde_json::to_value(FakeApiServer::pod(name, OURS, "100m")).expect("json");
        if let Some(port) = host_port {
            pod["spec"]["containers"][0]["ports"] =
                serde_json::json!([{"containerPort": 80, "hostPort": port}]);
        }
        if let Some(node) = node {
            pod["spec"]["nodeName"] = node.into();
        }
        pod
    };
    server.add_pod_value(pod("holder", Some("n1"), Some(8080)));
    server.add_pod_value(pod("plain", Some("n1"), None));
    let rt = start(&server, false, "a").await;
    server.add_pod_value(pod("wants", None, Some(8080)));
    until(5, "wants turned down by NodePorts", || {
        unschedulable_attempts(&rt) == 1
    })
    .await;
    // A pod without host ports goes: NodePorts' hint says it frees nothing wanted, so
    // `wants` is not tried again (with `Queue` it would be, after its 1 s backoff).
    server.delete_pod("default/plain");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(unschedulable_attempts(&rt), 1);
    assert_eq!(server.node_of("default/wants"), None);
    // The pod that held the port goes: `wants` is tried again and fits.
    server.delete_pod("default/holder");
    until(5, "wants bound", || {
        server.node_of("default/wants").is_some()
    })
    .await;
    rt.stop().await;
}
