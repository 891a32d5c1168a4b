//! The lesson end to end: the real kube-scheduler as default-scheduler and kubesched as
//! my-scheduler with deploy/'s RBAC and its own lease.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kubesched_kube::Runtime;

use super::support::realcluster::Cluster;
use super::{
    KubeScheduler, config_with_token, create_nodes, create_pods, kubectl_apply, ready_node,
    repo_file, scheduled_events, scheduler_config, service_account_token, until,
};

/// The lesson: kube-scheduler as default-scheduler, kubesched as my-scheduler with
/// deploy/'s RBAC (its own service account) and its own lease; both example pods are
/// placed, each by its own scheduler, and the lease is held and renewed.
pub(super) async fn lesson(cluster: &mut Cluster) {
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        vec![
            ready_node("node-1", "4", "8Gi"),
            ready_node("node-2", "4", "8Gi"),
        ],
    )
    .await;
    kubectl_apply(cluster, &repo_file("deploy/serviceaccount.yaml"));
    let token = service_account_token(cluster, "kube-system", "my-scheduler").await;
    let config = config_with_token(cluster, &token).await;
    let _default = KubeScheduler::start(cluster, &[]);
    let text = std::fs::read_to_string(repo_file("deploy/configmap.yaml")).expect("configmap");
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        serde_norway::from_str(&text).expect("configmap yaml");
    let ksc = cm.data.expect("data")["my-scheduler-config.yaml"].clone();
    let running = Runtime::from_kube_config(&config, scheduler_config(&ksc))
        .expect("clients")
        .identity("kubesched-lesson")
        .start()
        .await
        .expect("kubesched starts with deploy/'s RBAC");
    let pods_text = std::fs::read_to_string(repo_file("deploy/example-pods.yaml")).expect("pods");
    let pods: Vec<Pod> = serde_norway::Deserializer::from_str(&pods_text)
        .map(|d| serde::Deserialize::deserialize(d).expect("pod yaml"))
        .collect();
    assert_eq!(pods.len(), 2);
    let names: Vec<String> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    create_pods(&admin, pods).await;
    let api: Api<Pod> = Api::namespaced(admin.clone(), "default");
    for name in &names {
        until(30, &format!("{name} bound"), || {
            let api = api.clone();
            async move { api.get(name).await.ok()?.spec?.node_name }
        })
        .await;
    }
    let events = until(30, "both Scheduled events", || {
        let admin = admin.clone();
        async move {
            let e = scheduled_events(&admin).await;
            (e.len() == 2).then_some(e)
        }
    })
    .await;
    for (pod, scheduler) in [
        ("annotation-default-scheduler", "default-scheduler"),
        ("annotation-second-scheduler", "my-scheduler"),
    ] {
        let node = api
            .get(pod)
            .await
            .expect("pod")
            .spec
            .unwrap()
            .node_name
            .unwrap();
        assert_eq!(
            events[pod],
            [(
                scheduler.to_string(),
                format!("Successfully assigned default/{pod} to {node}")
            )],
            "{pod}"
        );
    }
    // The lease: held by kubesched, renewed every retryPeriod (2 s by default).
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-system");
    let spec = leases
        .get("lock-object-my-scheduler")
        .await
        .expect("lease")
        .spec
        .unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("kubesched-lesson"));
    let first = spec.renew_time.expect("renewTime").0;
    let renewed = until(10, "the lease renewed", || {
        let leases = leases.clone();
        async move {
            let t = leases
                .get("lock-object-my-scheduler")
                .await
                .ok()?
                .spec?
                .renew_time?
                .0;
            (t > first).then_some(t)
        }
    })
    .await;
    assert!(renewed > first);
    running.stop().await;
    // A clean stop releases the lease.
    let spec = leases
        .get("lock-object-my-scheduler")
        .await
        .expect("lease")
        .spec
        .unwrap();
    assert_eq!(spec.holder_identity, None);
}
