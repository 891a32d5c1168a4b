//! The runtime's volume binding and dynamic resource allocation against the loopback
//! API server, which the test turns into the PV controller: PreBind's writes (a PV's
//! `claimRef`, a claim's `selected-node`, a ResourceClaim's allocation and
//! `reservedFor`), the wait for the claims to be bound, the retry of a pod whose claim
//! appears later, a bind that times out or fails, and a kind the server does not serve.

#[path = "support/objects.rs"]
mod objects;

mod common;

use std::time::{Duration, Instant};

use common::{OURS, one_profile, until_some};
use kubesched_config::KubeSchedulerConfiguration;
use kubesched_kube::testing::FakeApiServer;
use kubesched_kube::{RunningRuntime, Runtime};
use objects::*;
use serde_json::Value;

fn config(bind_timeout_seconds: u64) -> KubeSchedulerConfiguration {
    one_profile(
        "podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
",
        &format!(
            "  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: {bind_timeout_seconds}
"
        ),
    )
}

async fn start(server: &FakeApiServer, bind_timeout_seconds: u64) -> RunningRuntime {
    Runtime::new(server.client(), config(bind_timeout_seconds))
        .start()
        .await
        .expect("start")
}

fn two_nodes(server: &FakeApiServer) {
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.add_node(FakeApiServer::node("n2", "4", "8Gi"));
}

fn notes(server: &FakeApiServer, pod: &str, reason: &str) -> Vec<String> {
    server
        .events_for(pod)
        .into_iter()
        .filter(|(r, _, _)| r == reason)
        .map(|(_, note, _)| note)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wffc_claim_is_bound_to_a_local_pv_through_prebind() {
    let server = FakeApiServer::start().await;
    two_nodes(&server);
    server.apply_object(&wffc_class("local", "kubernetes.io/no-provisioner"));
    server.apply_object(&local_pv("pv-n2", "local", "10Gi", "n2"));
    server.apply_object(&claim("data", "local", "5Gi"));
    server.add_pod(pod_with_claim("db", OURS, "data"));
    let rt = start(&server, 600).await;

    // PreBind writes the claimRef, with the claim's UID, and waits.
    let pv = until_some(10, "the PV's claimRef", || {
        server
            .object("persistentvolumes", "pv-n2")
            .filter(|pv| !pv["spec"]["claimRef"].is_null())
    })
    .await;
    assert_eq!(pv["spec"]["claimRef"]["name"], "data");
    assert_eq!(pv["spec"]["claimRef"]["namespace"], "default");
    assert_eq!(
        pv["spec"]["claimRef"]["uid"],
        "uid-persistentvolumeclaims-default/data"
    );
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.node_of("default/db"),
        None,
        "not bound before the claim"
    );

    // The PV controller binds the claim; the pod is bound.
    server.bind_volume("default/data", "pv-n2");
    let node = until_some(10, "db bound", || server.node_of("default/db")).await;
    assert_eq!(node, "n2");
    until_some(5, "the Scheduled event", || {
        (!notes(&server, "default/db", "Scheduled").is_empty()).then_some(())
    })
    .await;
    // Exactly one PV update, no claim update (a static binding).
    assert_eq!(server.writes_to("persistentvolumes").len(), 1);
    assert!(server.writes_to("persistentvolumeclaims").is_empty());
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wffc_claim_is_provisioned_on_the_chosen_node() {
    let server = FakeApiServer::start().await;
    two_nodes(&server);
    server.apply_object(&wffc_class("fast", "example.com/csi"));
    server.apply_object(&claim("scratch", "fast", "1Gi"));
    server.add_pod(pod_with_claim("worker", OURS, "scratch"));
    let rt = start(&server, 600).await;

    let claim = until_some(10, "selected-node", || {
        server
            .object("persistentvolumeclaims", "default/scratch")
            .filter(|c| {
                c["metadata"]["annotations"]["volume.kubernetes.io/selected-node"].is_string()
            })
    })
    .await;
    let node = claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]
        .as_str()
        .unwrap()
        .to_string();
    // The provisioner makes a PV on that node; the PV controller binds it.
    server.apply_object(&local_pv("pvc-scratch", "fast", "1Gi", &node));
    server.bind_volume("default/scratch", "pvc-scratch");
    let bound = until_some(10, "worker bound", || server.node_of("default/worker")).await;
    assert_eq!(bound, node);
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_whose_claim_appears_later_is_retried_and_bound() {
    let server = FakeApiServer::start().await;
    two_nodes(&server);
    server.add_pod(pod_with_claim("late", OURS, "later"));
    server.add_pod(FakeApiServer::pod("plain", OURS, "100m"));
    let rt = start(&server, 600).await;
    until_some(10, "FailedScheduling", || {
        notes(&server, "default/late", "FailedScheduling")
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        notes(&server, "default/late", "FailedScheduling")[0],
        // VolumeRestrictions' PreFilter rejected the pod as unresolvable, so
        // DynamicResources' PreFilter never ran and its PostFilter fails reading its state
        // ("not found"), which ends PostFilter before DefaultPreemption: kube-scheduler
        // v1.35's own words (conformance/cases-preemption/dra-postfilter-messages).
        "0/2 nodes are available: persistentvolumeclaim \"later\" not found. not found"
    );
    until_some(10, "plain bound", || server.node_of("default/plain")).await;

    // The claim appears bound to a PV on n1: the claim's Add event retries the pod
    // (long before podMaxInUnschedulablePodsDuration).
    server.apply_object(&wffc_class("local", "kubernetes.io/no-provisioner"));
    server.apply_object(&local_pv("pv-n1", "local", "10Gi", "n1"));
    server.apply_object(&claim("later", "local", "1Gi"));
    server.bind_volume("default/later", "pv-n1");
    let node = until_some(10, "late bound", || server.node_of("default/late")).await;
    assert_eq!(node, "n1");
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bind_that_times_out_or_fails_is_unreserved_and_requeued() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    server.apply_object(&wffc_class("local", "kubernetes.io/no-provisioner"));
    server.apply_object(&local_pv("pv-a", "local", "10Gi", "n1"));
    server.apply_object(&claim("a", "local", "1Gi"));
    server.add_pod(pod_with_claim("slow", OURS, "a"));
    let rt = start(&server, 1).await;

    // Nobody binds the claim: after bindTimeoutSeconds the pod fails with
    // kube-scheduler's message and goes back to the queue.
    // (The pod may be tried once before the watch brings its claim.)
    let started = Instant::now();
    until_some(10, "the timeout", || {
        notes(&server, "default/slow", "FailedScheduling")
            .into_iter()
            .find(|n| {
                n == "running PreBind plugin \"VolumeBinding\": binding volumes: context deadline exceeded"
            })
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited bindTimeoutSeconds"
    );
    assert_eq!(server.node_of("default/slow"), None);
    // Retried: the PV is written again (its claimRef is the API server's now, so the
    // retry matches the same PV), and once the controller binds it the pod is bound.
    until_some(10, "a second PreBind", || {
        (server.writes_to("persistentvolumes").len() >= 2).then_some(())
    })
    .await;
    server.bind_volume("default/a", "pv-a");
    until_some(10, "slow bound", || server.node_of("default/slow")).await;

    // A write the API server refuses fails the binding cycle at once, with its error.
    server.apply_object(&local_pv("pv-b", "local", "10Gi", "n1"));
    server.apply_object(&claim("b", "local", "1Gi"));
    server.fail_writes("persistentvolumes", 500);
    server.add_pod(pod_with_claim("refused", OURS, "b"));
    // (The pod may be tried once before the watch brings its claim.)
    until_some(10, "the refused write", || {
        notes(&server, "default/refused", "FailedScheduling")
            .into_iter()
            .find(|n| {
                n == "running PreBind plugin \"VolumeBinding\": injected failure of persistentvolumes \"pv-b\""
            })
    })
    .await;
    server.heal_writes("persistentvolumes");
    until_some(10, "the PV's claimRef after the retry", || {
        server
            .object("persistentvolumes", "pv-b")
            .filter(|pv| !pv["spec"]["claimRef"].is_null())
    })
    .await;
    server.bind_volume("default/b", "pv-b");
    until_some(10, "refused bound", || server.node_of("default/refused")).await;
    rt.stop().await;
}

fn gpu_cluster(server: &FakeApiServer) {
    two_nodes(server);
    server.apply_object(&device_class("gpu.example.com", "gpu.example.com"));
    server.apply_object(&node_slice("n2", "gpu.example.com", 1));
}

fn reserved_uids(claim: &Value) -> Vec<String> {
    claim["status"]["reservedFor"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["uid"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_claim_gets_its_allocation_and_reservation_written() {
    let server = FakeApiServer::start().await;
    gpu_cluster(&server);
    server.apply_object(&resource_claim("gpu", "gpu.example.com"));
    server.add_pod(pod_with_resource_claim("trainer", OURS, "gpu"));
    let rt = start(&server, 600).await;
    let node = until_some(10, "trainer bound", || server.node_of("default/trainer")).await;
    assert_eq!(node, "n2", "the only node with a GPU");
    let claim = server
        .object("resourceclaims", "default/gpu")
        .expect("claim");
    assert_eq!(
        claim["metadata"]["finalizers"],
        serde_json::json!(["resource.kubernetes.io/delete-protection"])
    );
    let results = &claim["status"]["allocation"]["devices"]["results"];
    assert_eq!(results[0]["driver"], "gpu.example.com");
    assert_eq!(results[0]["pool"], "n2");
    assert_eq!(results[0]["device"], "gpu-0");
    assert_eq!(results[0]["request"], "gpu");
    assert_eq!(reserved_uids(&claim), ["uid-default-trainer"]);
    assert_eq!(claim["status"]["reservedFor"][0]["resource"], "pods");
    assert_eq!(claim["status"]["reservedFor"][0]["name"], "trainer");

    // The device is taken: a second claim for the only GPU does not fit.
    server.apply_object(&resource_claim("gpu-2", "gpu.example.com"));
    server.add_pod(pod_with_resource_claim("second", OURS, "gpu-2"));
    // (The pod may be tried once before the watch brings its claim: "could not find
    // ResourceClaim", retried on the claim's Add.)
    until_some(10, "second's FailedScheduling for the device", || {
        notes(&server, "default/second", "FailedScheduling")
            .into_iter()
            .find(|n| n.contains("cannot allocate all claims"))
    })
    .await;
    // A new GPU node: the slice's Add event retries it.
    server.add_node(FakeApiServer::node("n3", "4", "8Gi"));
    server.apply_object(&node_slice("n3", "gpu.example.com", 1));
    let node = until_some(10, "second bound", || server.node_of("default/second")).await;
    assert_eq!(node, "n3");
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_bind_takes_the_pod_out_of_the_claims_reserved_for() {
    let server = FakeApiServer::start().await;
    gpu_cluster(&server);
    server.apply_object(&resource_claim("gpu", "gpu.example.com"));
    server.add_pod(pod_with_resource_claim("stolen", OURS, "gpu"));
    // Another scheduler binds the pod just before our binding lands (409).
    server.steal_next_binding("default/stolen", "n1");
    let rt = start(&server, 600).await;
    until_some(10, "the status patch of Unreserve", || {
        server
            .requests()
            .iter()
            .any(|(m, p)| m == "PATCH" && p.contains("/resourceclaims/gpu/status"))
            .then_some(())
    })
    .await;
    let claim = server
        .object("resourceclaims", "default/gpu")
        .expect("claim");
    assert!(reserved_uids(&claim).is_empty(), "{claim}");
    // The allocation stays, as kube-scheduler leaves it.
    assert_eq!(
        claim["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_resource_k8s_io_leaves_claim_pods_unschedulable_with_a_reason() {
    let server = FakeApiServer::start().await;
    gpu_cluster(&server);
    server.refuse("resourceclaims", 404);
    server.apply_object(&resource_claim("gpu", "gpu.example.com"));
    server.add_pod(pod_with_resource_claim("trainer", OURS, "gpu"));
    server.add_pod(FakeApiServer::pod("plain", OURS, "100m"));
    let rt = start(&server, 600).await;
    until_some(10, "plain bound", || server.node_of("default/plain")).await;
    let note = until_some(10, "trainer's FailedScheduling", || {
        notes(&server, "default/trainer", "FailedScheduling")
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        note,
        "0/2 nodes are available: pod default/trainer uses resource claim \"gpu\": kubesched cannot list resourceclaims.resource.k8s.io: the server could not find the requested resource (404). no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
    // Served again: the next list (after the watch's backoff) brings the claims, and
    // the pod is retried and bound.
    server.allow("resourceclaims");
    let node = until_some(10, "trainer bound", || server.node_of("default/trainer")).await;
    assert_eq!(node, "n2");
    rt.stop().await;
}
