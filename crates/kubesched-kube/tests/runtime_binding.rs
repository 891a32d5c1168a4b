//! Binding cycles in the runtime, against a loopback API server: a pod whose PreBind
//! plugins have no work and whose Bind is DefaultBinder's is bound by a POST its
//! binding task awaits, holding no thread (as kube-scheduler's binding goroutines do),
//! so the bindings in flight are not bounded by the blocking thread pool; and the
//! Bind point is still reported to the metrics as `run_bind_plugins` reports it.

mod common;

use common::{OURS, one_profile, until};
use kubesched_kube::Runtime;
use kubesched_kube::testing::FakeApiServer;

/// More bindings than the test's runtime has blocking threads, by far.
const PODS: usize = 120;

/// The test's blocking thread pool: a binding cycle that took one of these per binding
/// could never have `PODS` bindings in flight together.
const BLOCKING_THREADS: usize = 2;

/// The value of the metrics line that contains every one of `parts`.
fn value(metrics: &str, parts: &[&str]) -> Option<u64> {
    metrics
        .lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn plain_binds_are_all_in_flight_at_once_without_blocking_threads() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(BLOCKING_THREADS)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let server = FakeApiServer::start().await;
        // No binding is answered before every pod's binding has been sent.
        server.hold_bindings_until(PODS);
        for n in 0..2 {
            server.add_node(FakeApiServer::node(&format!("n{n}"), "64", "64Gi"));
        }
        for i in 0..PODS {
            server.add_pod(FakeApiServer::pod(&format!("p{i}"), OURS, "100m"));
        }
        let running = Runtime::new(server.client(), one_profile("", ""))
            .start()
            .await
            .expect("start");
        until(60, "every pod bound", || server.bound_count() == PODS).await;
        assert_eq!(server.bindings_arrived(), PODS);
        until(10, "every Scheduled event", || {
            (0..PODS).all(|i| {
                server
                    .events_for(&format!("default/p{i}"))
                    .iter()
                    .any(|(reason, _, _)| reason == "Scheduled")
            })
        })
        .await;
        let metrics = running.metrics().encode();
        let count = |point: &str, status: &str| {
            value(
                &metrics,
                &[
                    "scheduler_framework_extension_point_duration_seconds_count{",
                    &format!("extension_point=\"{point}\""),
                    &format!("status=\"{status}\""),
                ],
            )
        };
        // Every binding cycle asked the PreBind plugins (none had work), ran PreBind
        // and reported the Bind point that the task awaited.
        assert_eq!(
            count("PreBindPreFlight", "Skip"),
            Some(PODS as u64),
            "{metrics}"
        );
        assert_eq!(count("PreBind", "Success"), Some(PODS as u64), "{metrics}");
        assert_eq!(count("Bind", "Success"), Some(PODS as u64), "{metrics}");
        running.stop().await;
    });
}
