//! Pods waiting at Permit in the runtime, against a loopback API server: the wait goes
//! through the framework's waiting pods map that plugins see in their `Handle` (a pod
//! allowed there binds, one rejected there is unreserved), a waiting pod holds its place
//! on its node, a wait that runs out is reported as kube-scheduler reports it, and
//! `scheduler_permit_wait_duration_seconds` counts the waits.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{OURS, one_profile, until};
use kubesched_framework::waiting::WaitingPods;
use kubesched_framework::{
    Code, CycleState, Handle, PermitPlugin, Plugin, PodInfo, Registry, ReservePlugin, Status,
    extension_points,
};
use kubesched_kube::testing::FakeApiServer;
use kubesched_kube::{RunningRuntime, Runtime};

/// How long a pod of a pair waits for its partner.
const PAIR_WAIT: Duration = Duration::from_secs(1);

/// A gang of two, the way GangScheduling and Coscheduling are written: a pod labelled
/// `pair=NAME` waits at Permit until the other pod of the pair reaches Permit, which
/// allows it through the shared waiting pods map; a pod unreserved rejects its waiting
/// partner.
struct Pair {
    waiting: Arc<WaitingPods>,
}

fn pair_of(pod: &PodInfo) -> Option<String> {
    pod.pod().metadata.labels.as_ref()?.get("pair").cloned()
}

impl Plugin for Pair {
    fn name(&self) -> &str {
        "Pair"
    }
    extension_points!(Reserve, Permit);
}

impl ReservePlugin for Pair {
    fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }

    fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
        let Some(pair) = pair_of(pod) else { return };
        self.waiting.iterate(|w| {
            if w.pod().uid() != pod.uid() && pair_of(w.pod()).as_deref() == Some(&pair) {
                w.reject("Pair", "partner unreserved");
            }
        });
    }
}

impl PermitPlugin for Pair {
    fn permit(&self, _: &mut CycleState, pod: &PodInfo, _: &str) -> (Status, Duration) {
        let Some(pair) = pair_of(pod) else {
            return (Status::success(), Duration::ZERO);
        };
        let mut partner_waits = false;
        self.waiting.iterate(|w| {
            if w.pod().uid() != pod.uid() && pair_of(w.pod()).as_deref() == Some(&pair) {
                w.allow("Pair");
                partner_waits = true;
            }
        });
        if partner_waits {
            (Status::success(), Duration::ZERO)
        } else {
            (
                Status::new(Code::Wait, "waiting for the partner"),
                PAIR_WAIT,
            )
        }
    }
}

async fn start(server: &FakeApiServer) -> RunningRuntime {
    let config = one_profile(
        "podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
",
        "  plugins:
    reserve:
      enabled:
      - name: Pair
    permit:
      enabled:
      - name: Pair
",
    );
    let mut registry = Registry::new();
    registry
        .register("Pair", |_, handle: &Handle| {
            Ok(Arc::new(Pair {
                waiting: handle.waiting_pods.clone(),
            }))
        })
        .expect("register");
    Runtime::new(server.client(), config)
        .with_plugins(registry)
        .expect("plugins")
        .start()
        .await
        .expect("start")
}

fn paired(name: &str, pair: &str, cpu: &str) -> k8s_openapi::api::core::v1::Pod {
    let mut pod = FakeApiServer::pod(name, OURS, cpu);
    pod.metadata.labels = Some(BTreeMap::from([("pair".to_string(), pair.to_string())]));
    pod
}

/// The count of a histogram series in the metrics text.
fn count(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pair_binds_together_when_the_second_pod_reaches_permit() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    let rt = start(&server).await;
    server.add_pod(paired("a-1", "a", "100m"));
    let waiting = rt.waiting_pods();
    until(5, "a-1 waiting at Permit", || waiting.len() == 1).await;
    assert_eq!(
        server.node_of("default/a-1"),
        None,
        "bound before its partner came"
    );
    server.add_pod(paired("a-2", "a", "100m"));
    until(5, "both bound", || {
        server.node_of("default/a-1").is_some() && server.node_of("default/a-2").is_some()
    })
    .await;
    assert!(waiting.is_empty());
    let metrics = rt.metrics().encode();
    assert_eq!(
        count(
            &metrics,
            "scheduler_permit_wait_duration_seconds_count{result=\"Success\"}"
        ),
        1,
        "{metrics}"
    );
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_pod_holds_its_place_until_its_wait_runs_out() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "1", "8Gi"));
    let rt = start(&server).await;
    server.add_pod(paired("lonely", "b", "800m"));
    let waiting = rt.waiting_pods();
    until(5, "lonely waiting at Permit", || waiting.len() == 1).await;
    assert!(
        rt.metrics()
            .encode()
            .contains("kubesched_permit_waiting_pods 1"),
        "the waiting-pods gauge"
    );
    // While lonely waits, its 800m are taken: another pod does not fit.
    server.add_pod(FakeApiServer::pod("other", OURS, "500m"));
    until(5, "other turned down", || {
        server
            .events_for("default/other")
            .iter()
            .any(|(reason, _, _)| reason == "FailedScheduling")
    })
    .await;
    assert_eq!(server.node_of("default/other"), None);
    // The wait runs out: lonely is reported as kube-scheduler's bindingCycle reports
    // it, unreserved, and other gets the place.
    let timeout =
        "0/1 nodes are available: 1 rejected due to timeout after waiting 1s at plugin Pair.";
    until(5, "lonely timed out", || {
        server
            .events_for("default/lonely")
            .iter()
            .any(|(_, note, _)| note == timeout)
    })
    .await;
    // Events are written by concurrent tasks, so the server may receive lonely's
    // retry (turned down once other holds the place) first: the first reported is the
    // one with the earliest eventTime.
    let mut lonely: Vec<_> = server
        .events()
        .into_iter()
        .filter(|e| e["regarding"]["name"] == "lonely")
        .collect();
    assert!(
        lonely.iter().all(|e| e["eventTime"].is_string()),
        "{lonely:?}"
    );
    lonely.sort_by(|a, b| a["eventTime"].as_str().cmp(&b["eventTime"].as_str()));
    assert_eq!(lonely[0]["reason"], "FailedScheduling");
    assert_eq!(lonely[0]["note"], timeout);
    until(5, "other bound once lonely let go", || {
        server.node_of("default/other").is_some()
    })
    .await;
    assert_eq!(server.node_of("default/lonely"), None);
    let metrics = rt.metrics().encode();
    assert!(
        count(
            &metrics,
            "scheduler_permit_wait_duration_seconds_count{result=\"Unschedulable\"}"
        ) >= 1,
        "{metrics}"
    );
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_an_embedder_rejects_while_it_waits_is_unreserved_and_reported() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    let rt = start(&server).await;
    server.add_pod(paired("c-1", "c", "100m"));
    let waiting = rt.waiting_pods();
    until(5, "c-1 waiting", || waiting.len() == 1).await;
    let uid = waiting.uids()[0].clone();
    assert!(waiting.reject(&uid, "not today"));
    assert!(!waiting.reject(&uid, "twice"), "decided once");
    until(5, "c-1 reported", || {
        !server.events_for("default/c-1").is_empty()
    })
    .await;
    let (_, note, _) = server.events_for("default/c-1")[0].clone();
    assert_eq!(note, "0/1 nodes are available: 1 not today.");
    assert_eq!(server.node_of("default/c-1"), None);
    rt.stop().await;
}
