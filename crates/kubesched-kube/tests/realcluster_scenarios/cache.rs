//! The cache as the API server keeps it: a terminating pod holds its node's resources,
//! a finished one frees them, a long FailedScheduling note is cut as kube-scheduler
//! cuts it, a pod recreated under the same name is not bound by a stale decision.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubesched_kube::testing::FakeApiServer;
use kubesched_kube::{RunningRuntime, Runtime};

use super::support::realcluster::Cluster;
use super::{
    create_nodes, create_pods, limited_config, node_of, notes, ready_node, scheduler_config,
    start_kubesched, until,
};

/// A pod deleted with a grace period stays terminating (there is no kubelet) and
/// keeps its cpu: the next pod does not fit until it is really gone.
pub(super) async fn terminating(cluster: &mut Cluster) {
    let (admin, running) = one_cpu_node_holding(cluster, "ks-term", "term-1", "term-a").await;
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    api.delete("term-a", &DeleteParams::default())
        .await
        .expect("delete");
    let a = api
        .get("term-a")
        .await
        .expect("term-a is still there, terminating");
    assert!(a.metadata.deletion_timestamp.is_some());
    rejected_for_cpu(&admin, "ks-term", "term-b").await;
    assert_eq!(
        api.get("term-b").await.expect("b").spec.unwrap().node_name,
        None
    );
    // Gone for good: the cpu is free and term-b is placed.
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    api.delete("term-a", &force).await.expect("force delete");
    assert_eq!(node_of(&admin, "term-b", 60).await, "term-1");
    running.stop().await;
}

/// kubesched (scheduler name `sched`) started beside a node with 1 cpu, on which it
/// placed the pod `pod` (800m).
async fn one_cpu_node_holding(
    cluster: &mut Cluster,
    sched: &str,
    node: &str,
    pod: &str,
) -> (kube::Client, RunningRuntime) {
    let admin = cluster.admin().await;
    create_nodes(&admin, vec![ready_node(node, "1", "8Gi")]).await;
    let running = start_kubesched(cluster, limited_config(sched, 50, 100, false)).await;
    create_pods(&admin, vec![FakeApiServer::pod(pod, sched, "800m")]).await;
    assert_eq!(node_of(&admin, pod, 30).await, node);
    (admin, running)
}

/// Creates the pod `pod` (500m) for `sched` and waits for its FailedScheduling event,
/// which must say the node lacks cpu.
async fn rejected_for_cpu(admin: &kube::Client, sched: &str, pod: &str) {
    create_pods(admin, vec![FakeApiServer::pod(pod, sched, "500m")]).await;
    let failed = until(30, "the FailedScheduling event", || {
        let admin = admin.clone();
        async move {
            let n = notes(&admin, pod, "FailedScheduling").await;
            (!n.is_empty()).then_some(n)
        }
    })
    .await;
    assert!(failed[0].contains("1 Insufficient cpu"), "{failed:?}");
}

/// A pod that finishes (phase Succeeded) leaves the pods' watch, whose field selector
/// keeps out finished pods, as deleted: its cpu is free and the pod waiting for it is
/// placed.
pub(super) async fn finished(cluster: &mut Cluster) {
    let (admin, running) = one_cpu_node_holding(cluster, "ks-done", "done-1", "done-a").await;
    rejected_for_cpu(&admin, "ks-done", "done-b").await;
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let succeeded = serde_json::json!({"status": {"phase": "Succeeded"}});
    api.patch_status("done-a", &PatchParams::default(), &Patch::Merge(&succeeded))
        .await
        .expect("done-a succeeded");
    assert_eq!(node_of(&admin, "done-b", 60).await, "done-1");
    // done-a is still there, finished.
    let a = api.get("done-a").await.expect("done-a");
    assert_eq!(a.status.and_then(|s| s.phase).as_deref(), Some("Succeeded"));
    running.stop().await;
}

/// 500 nodes rejecting a pod that asks for 60 extended resources none has: the
/// FailedScheduling note (one `500 Insufficient ...` per resource, some 4 KB) is cut
/// to the API server's 1,024 bytes and written; the PodScheduled condition keeps the
/// whole message.
pub(super) async fn long_note(cluster: &mut Cluster) {
    const SCHED: &str = "ks-long";
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        (0..500)
            .map(|i| ready_node(&format!("long-{i}"), "4", "8Gi"))
            .collect(),
    )
    .await;
    let running = start_kubesched(cluster, limited_config(SCHED, 50, 100, false)).await;
    let mut pod = FakeApiServer::pod("long", SCHED, "100m");
    if let Some(r) = pod
        .spec
        .as_mut()
        .and_then(|s| s.containers[0].resources.as_mut())
    {
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        let extended: BTreeMap<String, Quantity> = (0..60)
            .map(|i| {
                (
                    format!("example.com/a-rather-long-extended-resource-name-{i:02}"),
                    Quantity("1".into()),
                )
            })
            .collect();
        r.requests
            .get_or_insert_with(BTreeMap::new)
            .extend(extended.clone());
        r.limits = Some(extended);
    }
    create_pods(&admin, vec![pod]).await;
    let failed = until(60, "the FailedScheduling event", || {
        let admin = admin.clone();
        async move {
            let n = notes(&admin, "long", "FailedScheduling").await;
            (!n.is_empty()).then_some(n)
        }
    })
    .await;
    assert_eq!(failed[0].len(), 1024, "{}", failed[0]);
    assert!(failed[0].starts_with("0/500 nodes are available: ") && failed[0].ends_with(" ..."));
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let message = until(30, "the PodScheduled condition", || {
        let api = api.clone();
        async move {
            let c = api.get("long").await.ok()?.status?.conditions?;
            c.into_iter().find(|c| c.type_ == "PodScheduled")?.message
        }
    })
    .await;
    assert!(
        message.len() > 3_000,
        "the condition keeps the whole message ({} bytes)",
        message.len()
    );
    assert!(message.starts_with(&failed[0][..1020]));
    running.stop().await;
}

/// A Permit plugin that holds the pods labelled `hold=true` until allowed.
struct Hold;

impl kubesched_framework::Plugin for Hold {
    fn name(&self) -> &str {
        "Hold"
    }
    fn as_permit(
        self: std::sync::Arc<Self>,
    ) -> Option<std::sync::Arc<dyn kubesched_framework::PermitPlugin>> {
        Some(self)
    }
}

impl kubesched_framework::PermitPlugin for Hold {
    fn permit(
        &self,
        _: &mut kubesched_framework::CycleState,
        pod: &kubesched_framework::PodInfo,
        _: &str,
    ) -> (kubesched_framework::Status, Duration) {
        let held = pod
            .pod()
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get("hold").map(String::as_str) == Some("true"));
        if held {
            (
                kubesched_framework::Status::new(kubesched_framework::Code::Wait, ""),
                Duration::from_secs(60),
            )
        } else {
            (kubesched_framework::Status::success(), Duration::ZERO)
        }
    }
}

/// A pod deleted and recreated under the same name while its binding waits: the
/// binding carries the old pod's UID, and the API server refuses it, so the new pod
/// (left to another scheduler) is not bound by the stale decision.
pub(super) async fn recreated(cluster: &mut Cluster) {
    const SCHED: &str = "ks-uid";
    let admin = cluster.admin().await;
    create_nodes(&admin, vec![ready_node("uid-1", "4", "8Gi")]).await;
    let mut registry = kubesched_framework::Registry::new();
    registry
        .register("Hold", |_, _| Ok(std::sync::Arc::new(Hold)))
        .expect("register");
    let config = scheduler_config(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {SCHED}
  plugins:
    permit:
      enabled:
      - name: Hold
"
    ));
    let running = Runtime::from_kube_config(&cluster.config().await, config)
        .expect("clients")
        .with_plugins(registry)
        .expect("plugins")
        .start()
        .await
        .expect("start");
    let mut held = FakeApiServer::pod("uid-a", SCHED, "100m");
    held.metadata.labels = Some(BTreeMap::from([("hold".to_string(), "true".to_string())]));
    create_pods(&admin, vec![held]).await;
    let waiting = running.waiting_pods();
    let old_uid = until(30, "uid-a waiting at Permit", || {
        let w = waiting.uids();
        async move { w.into_iter().next() }
    })
    .await;
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    api.delete("uid-a", &force).await.expect("delete");
    let recreated = api
        .create(
            &PostParams::default(),
            &FakeApiServer::pod("uid-a", "nobody", "100m"),
        )
        .await
        .expect("recreate");
    assert_ne!(recreated.metadata.uid.as_deref(), Some(old_uid.as_str()));
    assert!(waiting.allow(&old_uid), "the old pod was still waiting");
    // The binding is sent and refused; give it time to land if it were accepted.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let p = api.get("uid-a").await.expect("uid-a");
        assert_eq!(
            p.spec.unwrap().node_name,
            None,
            "the recreated pod was bound by the stale decision"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(notes(&admin, "uid-a", "Scheduled").await.is_empty());
    running.stop().await;
}
