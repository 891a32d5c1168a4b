//! kubesched under load and through failures: the client's rate limit, the lease
//! during a burst, an API server outage, and two replicas whose leader crashes.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kubesched_kube::Runtime;

use super::support::realcluster::Cluster;
use super::{
    LOG, bound_of, create_nodes, create_pods, limited_config, metric, most_in_window, pods,
    ready_node, scheduled_events, scheduler_config, until,
};

/// qps 20/burst 20 and 300 pending pods: each client's requests stay within
/// burst + 5 x qps in every 5-second window, every request went through a limiter,
/// binds wait rather than fail (all 300 bound, each with its Scheduled event), and
/// kubesched holds at most a few connections to the API server.
pub(super) async fn rate_limited(cluster: &mut Cluster) {
    const SCHED: &str = "ks-limited";
    {
        let admin = cluster.admin().await;
        create_nodes(
            &admin,
            (0..10)
                .map(|i| ready_node(&format!("rl-{i}"), "64", "256Gi"))
                .collect(),
        )
        .await;
        create_pods(&admin, pods(300, "rl", SCHED, "10m")).await;
    }
    // The test's own client is gone: the connections counted below are kubesched's.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cluster.connections_to_apiserver();
    let metrics = std::sync::Arc::new(kubesched_kube::Metrics::new());
    let options = kubesched_kube::client::ClientOptions {
        qps: 20.0,
        burst: 20,
    };
    let clients =
        kubesched_kube::client::Clients::new(&cluster.config().await, &options, metrics.clone())
            .expect("clients");
    let start = Instant::now();
    let running = Runtime::with_clients(&clients, limited_config(SCHED, 20, 20, false))
        .with_metrics(metrics.clone())
        .start()
        .await
        .expect("start");
    let scheduled =
        format!("scheduler_schedule_attempts_total{{result=\"scheduled\",profile=\"{SCHED}\"}}");
    let mut most_connections = 0;
    let deadline = Instant::now() + Duration::from_secs(90);
    while metric(&metrics.encode(), &scheduled) < 300.0 {
        most_connections =
            most_connections.max(cluster.connections_to_apiserver().saturating_sub(before));
        assert!(
            Instant::now() < deadline,
            "300 pods not bound within 90 s at qps 20"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = start.elapsed();
    let admin = cluster.admin().await;
    let events = until(60, "300 Scheduled events", || {
        let admin = admin.clone();
        async move {
            let e = scheduled_events(&admin).await;
            let n = e.keys().filter(|k| k.starts_with("rl-")).count();
            (n == 300).then_some(e)
        }
    })
    .await;
    assert!(
        events.values().all(|v| v.len() == 1),
        "one Scheduled event per pod"
    );
    assert_eq!(bound_of(&admin, SCHED).await, (300, 300));
    running.stop().await;
    let budget = 20 + 5 * 20;
    for (what, bucket) in [
        ("scheduling", &clients.scheduling_bucket),
        ("events", &clients.events_bucket),
    ] {
        let times = bucket.recent();
        let most = most_in_window(&times, Duration::from_secs(5));
        eprintln!(
            "realcluster: qps 20/burst 20: {what} client: {} requests, at most {most} in 5 s (budget {budget})",
            times.len()
        );
        assert!(
            most <= budget,
            "{what}: {most} requests in a 5-second window, budget {budget}"
        );
    }
    let dispatched =
        clients.scheduling_bucket.recent().len() + clients.events_bucket.recent().len();
    let counted = metric(&metrics.encode(), "rest_client_requests_total{");
    // Every request counted went through a limiter (the stop releases nothing: no
    // leader election here).
    assert_eq!(
        counted as usize, dispatched,
        "requests that bypassed the limiters"
    );
    eprintln!(
        "realcluster: qps 20/burst 20: 300 pods bound in {:.1}s, at most {most_connections} connections to the API server",
        took.as_secs_f64()
    );
    assert!(
        most_connections <= 10,
        "{most_connections} connections to the API server"
    );
}

/// A 2,000-pod burst at qps 5000 with leader election on (retryPeriod 2 s): the
/// lease's renewTime, polled every 200 ms, never lags more than retryPeriod + 1 s.
pub(super) async fn lease_under_load(cluster: &mut Cluster) {
    const SCHED: &str = "ks-burst";
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..50)
            .map(|i| ready_node(&format!("burst-{i}"), "64", "256Gi"))
            .collect(),
    )
    .await;
    let running = Runtime::from_kube_config(
        &cluster.config().await,
        limited_config(SCHED, 5000, 5000, true),
    )
    .expect("clients")
    .identity("kubesched-burst")
    .start()
    .await
    .expect("start");
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-system");
    let name = format!("lock-object-{SCHED}");
    until(20, "the lease acquired", || {
        let leases = leases.clone();
        let name = name.clone();
        async move {
            let h = leases.get(&name).await.ok()?.spec?.holder_identity?;
            (h == "kubesched-burst").then_some(())
        }
    })
    .await;
    let start = Instant::now();
    let creating = tokio::spawn({
        let admin = admin.clone();
        async move { create_pods(&admin, pods(2000, "burst", SCHED, "10m")).await }
    });
    let mut worst = Duration::ZERO;
    let mut samples = 0;
    loop {
        let lease = leases.get(&name).await.expect("lease").spec.expect("spec");
        assert_eq!(
            lease.holder_identity.as_deref(),
            Some("kubesched-burst"),
            "the lease was lost"
        );
        let renewed = lease.renew_time.expect("renewTime").0;
        let lag = k8s_openapi::jiff::Timestamp::now().duration_since(renewed);
        let lag = Duration::from_secs_f64(lag.as_secs_f64().max(0.0));
        worst = worst.max(lag);
        samples += 1;
        if creating.is_finished() && bound_of(&admin, SCHED).await.0 == 2000 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "2,000 pods not bound in 240 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    creating.await.expect("create");
    eprintln!(
        "realcluster: 2,000-pod burst: bound in {:.1}s; renewTime lagged at most {:.2}s over {samples} polls",
        start.elapsed().as_secs_f64(),
        worst.as_secs_f64()
    );
    assert!(
        worst <= Duration::from_secs(3),
        "renewTime lagged {worst:?} (retryPeriod 2 s + 1 s)"
    );
    running.stop().await;
}

/// The API server killed mid-burst and started again 20 s later, leader election
/// off: kubesched stays up, every pod ends bound once with exactly one Scheduled
/// event, and the outage costs a few lines of log, not one per retry.
pub(super) async fn outage(cluster: &mut Cluster) {
    const SCHED: &str = "ks-outage";
    const PODS: usize = 300;
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..10)
            .map(|i| ready_node(&format!("out-{i}"), "64", "256Gi"))
            .collect(),
    )
    .await;
    create_pods(&admin, pods(PODS, "out", SCHED, "10m")).await;
    let metrics = std::sync::Arc::new(kubesched_kube::Metrics::new());
    // kube-scheduler's defaults (qps 50, burst 100), so the burst takes a few seconds.
    let clients = kubesched_kube::client::Clients::new(
        &cluster.config().await,
        &kubesched_kube::client::ClientOptions::default(),
        metrics.clone(),
    )
    .expect("clients");
    let running = Runtime::with_clients(&clients, limited_config(SCHED, 50, 100, false))
        .with_metrics(metrics.clone())
        .start()
        .await
        .expect("start");
    let scheduled =
        format!("scheduler_schedule_attempts_total{{result=\"scheduled\",profile=\"{SCHED}\"}}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&metrics.encode(), &scheduled) < 100.0 {
        assert!(Instant::now() < deadline, "100 pods not bound in 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lines_before = LOG.lines().len();
    cluster.stop_apiserver();
    let at_kill = metric(&metrics.encode(), &scheduled);
    tokio::time::sleep(Duration::from_secs(20)).await;
    cluster.start_apiserver();
    let admin = cluster.admin().await;
    until(120, "every pod bound after the outage", || {
        let admin = admin.clone();
        async move { (bound_of(&admin, SCHED).await == (PODS, PODS)).then_some(()) }
    })
    .await;
    let outage_lines = || -> Vec<String> {
        LOG.lines()[lines_before..]
            .iter()
            .filter(|l| !l.contains("successfully bound pod to node"))
            // The test's own admin client (kube-rs' default client) says this.
            .filter(|l| !l.contains("kube_client::client::tls"))
            .cloned()
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let events = loop {
        let e = scheduled_events(&admin).await;
        let n = e.keys().filter(|k| k.starts_with("out-")).count();
        if n == PODS {
            break e;
        }
        assert!(
            Instant::now() < deadline,
            "{n} of {PODS} pods have a Scheduled event 60 s after the outage; the log:\n{}",
            outage_lines().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    // Late writes would show up as a second event: give the retries time to land.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events_after = scheduled_events(&admin).await;
    assert_eq!(events, events_after);
    for (pod, list) in &events {
        assert_eq!(list.len(), 1, "{pod}: {list:?}");
    }
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    for (pod, list) in &events {
        let node = api
            .get(pod)
            .await
            .expect("pod")
            .spec
            .unwrap()
            .node_name
            .unwrap();
        assert_eq!(
            list[0].1,
            format!("Successfully assigned default/{pod} to {node}")
        );
    }
    assert!(running.is_leader(), "kubesched stopped scheduling");
    let lines = outage_lines();
    eprintln!(
        "realcluster: outage: killed at {at_kill} of {PODS} bound; {} log lines besides the bindings:\n{}",
        lines.len(),
        lines.join("\n")
    );
    assert!(
        lines.len() <= 10,
        "{} lines of log for one outage",
        lines.len()
    );
    running.stop().await;
}

/// Two replicas with leader election (lease 4 s, renew deadline 3 s, retry 1 s); the
/// leader crashes mid-burst (stops without releasing the lease): the other takes over
/// within leaseDuration + retryPeriod, and no pod gets two Scheduled events.
pub(super) async fn two_replicas(cluster: &mut Cluster) {
    const SCHED: &str = "ks-ha";
    const PODS: usize = 600;
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..10)
            .map(|i| ready_node(&format!("ha-{i}"), "64", "256Gi"))
            .collect(),
    )
    .await;
    let config = || {
        scheduler_config(&format!(
            "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
  resourceNamespace: kube-system
  resourceName: lock-object-{SCHED}
profiles:
- schedulerName: {SCHED}
"
        ))
    };
    let kc = cluster.config().await;
    let a = Runtime::from_kube_config(&kc, config())
        .expect("a")
        .identity("replica-a")
        .start()
        .await
        .expect("a");
    until(20, "replica-a leading", || {
        let l = a.is_leader();
        async move { l.then_some(()) }
    })
    .await;
    let b = Runtime::from_kube_config(&kc, config())
        .expect("b")
        .identity("replica-b")
        .start()
        .await
        .expect("b");
    create_pods(&admin, pods(PODS, "ha", SCHED, "10m")).await;
    until(60, "a third of the pods bound", || {
        let admin = admin.clone();
        async move { (bound_of(&admin, SCHED).await.0 >= PODS / 3).then_some(()) }
    })
    .await;
    assert!(!b.is_leader());
    a.abort();
    let crashed = Instant::now();
    until(20, "replica-b leading", || {
        let l = b.is_leader();
        async move { l.then_some(()) }
    })
    .await;
    let took = crashed.elapsed();
    until(120, "every pod bound", || {
        let admin = admin.clone();
        async move { (bound_of(&admin, SCHED).await == (PODS, PODS)).then_some(()) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = scheduled_events(&admin).await;
    let twice: Vec<_> = events
        .iter()
        .filter(|(k, v)| k.starts_with("ha-") && v.len() > 1)
        .collect();
    assert!(
        twice.is_empty(),
        "pods with two Scheduled events: {twice:?}"
    );
    eprintln!(
        "realcluster: two replicas: the other took over {:.1}s after the leader crashed (leaseDuration 4 s + retryPeriod 1 s)",
        took.as_secs_f64()
    );
    assert!(took <= Duration::from_secs(5), "takeover took {took:?}");
    b.stop().await;
}
