//! `kubesched run` with scheduler-plugins' Coscheduling and CapacityScheduling against
//! the real API server, their CRDs installed (`sigs-crds.yaml`). The API server has no
//! protobuf for custom resources: the runtime, talking protobuf, gets their lists and
//! watches as JSON, and this shows it reads them. A namespace is held to its
//! ElasticQuota, and let in when the quota is raised (the watch's update); a gang whose
//! PodGroup and pods come while it runs waits for its second pod, then binds.
//! (scheduler-plugins' own scheduler is not here to compare with: its image is not.)

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

use super::support::realcluster::Cluster;
use super::{
    create_nodes, create_pods, kubectl_apply, node_of, notes, ready_node, repo_file,
    scheduler_config, until,
};

const SCHEDULER: &str = "sigs-sched";

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: sigs-sched
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      - name: CapacityScheduling
      disabled:
      - name: PrioritySort
";

/// The `scheduling.x-k8s.io/v1alpha1` kind `kind` (plural `plural`) in `default`.
fn api(client: &kube::Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "scheduling.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "scheduling.x-k8s.io/v1alpha1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("an object")
}

fn quota(cpu: &str) -> Value {
    json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "sigs-quota", "namespace": "default"},
        "spec": {"min": {"cpu": cpu}, "max": {"cpu": cpu}},
    })
}

fn pod(name: &str, cpu: &str, group: Option<&str>) -> Pod {
    let mut p = kubesched_kube::testing::FakeApiServer::pod(name, SCHEDULER, cpu);
    if let Some(group) = group {
        p.metadata.labels = Some(
            [(
                "scheduling.x-k8s.io/pod-group".to_string(),
                group.to_string(),
            )]
            .into(),
        );
    }
    p
}

/// Waits until a FailedScheduling note about `pod` contains `text`.
async fn turned_down(client: &kube::Client, pod: &str, text: &str) {
    until(30, &format!("{pod} turned down with {text:?}"), || async {
        notes(client, pod, "FailedScheduling")
            .await
            .iter()
            .any(|n| n.contains(text))
            .then_some(())
    })
    .await;
}

pub(super) async fn plugins_sigs(cluster: &mut Cluster) {
    let admin = cluster.admin().await;
    kubectl_apply(
        cluster,
        &repo_file("crates/kubesched-kube/tests/realcluster_scenarios/sigs-crds.yaml"),
    );
    let quotas = api(&admin, "ElasticQuota", "elasticquotas");
    let groups = api(&admin, "PodGroup", "podgroups");
    until(30, "the CRDs served", || async {
        let q = quotas.list(&ListParams::default()).await.ok()?;
        let g = groups.list(&ListParams::default()).await.ok()?;
        Some((q, g))
    })
    .await;
    // The quota before the runtime: its first list holds it (created after, its watch
    // event could come after the pod's, and the pod be placed under no quota).
    quotas
        .create(&PostParams::default(), &object(quota("1")))
        .await
        .expect("create the ElasticQuota");
    create_nodes(&admin, vec![ready_node("sigs-n1", "8", "16Gi")]).await;
    let running = kubesched_kube::Runtime::from_kube_config(
        &cluster.config().await,
        scheduler_config(CONFIG),
    )
    .expect("clients")
    .with_plugins(kubesched_plugins_sigs::registry())
    .expect("the sigs plugins")
    .start()
    .await
    .expect("kubesched run starts with Coscheduling and CapacityScheduling");

    // Over the quota: turned down with CapacityScheduling's words, then let in when
    // the quota is raised.
    create_pods(&admin, vec![pod("sigs-big", "2", None)]).await;
    turned_down(
        &admin,
        "sigs-big",
        "Pod default/sigs-big is rejected in PreFilter because ElasticQuota default is more than Max",
    )
    .await;
    let mut raised = quotas.get("sigs-quota").await.expect("the quota");
    raised.data["spec"] = quota("8")["spec"].clone();
    quotas
        .replace("sigs-quota", &PostParams::default(), &raised)
        .await
        .expect("raise the quota");
    assert_eq!(node_of(&admin, "sigs-big", 30).await, "sigs-n1");

    // A gang of two: its first pod waits for its sibling, then both bind.
    groups
        .create(
            &PostParams::default(),
            &object(json!({
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "sigs-gang", "namespace": "default"},
                "spec": {"minMember": 2},
            })),
        )
        .await
        .expect("create the PodGroup");
    // Let the PodGroup's watch event come before the pod's (two streams).
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    create_pods(&admin, vec![pod("sigs-gang-1", "1", Some("sigs-gang"))]).await;
    turned_down(&admin, "sigs-gang-1", "cannot find enough sibling pods").await;
    create_pods(&admin, vec![pod("sigs-gang-2", "1", Some("sigs-gang"))]).await;
    assert_eq!(node_of(&admin, "sigs-gang-1", 30).await, "sigs-n1");
    assert_eq!(node_of(&admin, "sigs-gang-2", 30).await, "sigs-n1");
    running.stop().await;

    let _ = quotas.delete("sigs-quota", &DeleteParams::default()).await;
    let _ = groups.delete("sigs-gang", &DeleteParams::default()).await;
}
