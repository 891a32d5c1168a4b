//! Volume binding and dynamic resource allocation against the real API server, the
//! test playing the PV controller and the provisioner (there is no
//! kube-controller-manager): PreBind's writes as the API server takes them (its
//! validation, its resourceVersion preconditions, its strategic merge of
//! `reservedFor`), the wait for the claims, a pod whose claim comes later, a bind
//! that times out.
//!
//! The storage objects are left behind: the API server's protection finalizers keep
//! claims and PVs until a controller that is not there removes them; the names are
//! this module's own.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::support::objects::*;
use super::support::realcluster::Cluster;
use super::{
    create_nodes, create_pods, node_of, notes, ready_node, scheduler_config, start_kubesched, until,
};

async fn create<K>(client: &kube::Client, object: &K) -> K
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::Scope: ScopeOf<K>,
{
    K::Scope::api(client.clone(), object)
        .create(&PostParams::default(), object)
        .await
        .unwrap_or_else(|e| panic!("create {:?}: {e}", object.meta().name))
}

/// The Api of an object, namespaced or not.
trait ScopeOf<K: kube::Resource<DynamicType = ()>> {
    fn api(client: kube::Client, object: &K) -> Api<K>;
}

impl<K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>> ScopeOf<K>
    for k8s_openapi::ClusterResourceScope
{
    fn api(client: kube::Client, _: &K) -> Api<K> {
        Api::all(client)
    }
}

impl<K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>> ScopeOf<K>
    for k8s_openapi::NamespaceResourceScope
{
    fn api(client: kube::Client, object: &K) -> Api<K> {
        Api::namespaced(
            client,
            object.meta().namespace.as_deref().unwrap_or("default"),
        )
    }
}

/// Creates a PV and, as the PV controller would, makes it Available.
async fn create_available_pv(client: &kube::Client, pv: &PersistentVolume) {
    let api: Api<PersistentVolume> = Api::all(client.clone());
    let mut created = api
        .create(&PostParams::default(), pv)
        .await
        .expect("create PV");
    created.status = Some(k8s_openapi::api::core::v1::PersistentVolumeStatus {
        phase: Some("Available".into()),
        ..Default::default()
    });
    let name = created.metadata.name.clone().unwrap_or_default();
    api.replace_status(&name, &PostParams::default(), &created)
        .await
        .expect("PV Available");
}

/// Plays the PV controller: binds the claim to the PV both ways, as it does (the
/// PV's claimRef and phase, the claim's volumeName, bind-completed and phase).
async fn bind_volume(client: &kube::Client, claim: &str, pv_name: &str) {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let c = claims.get(claim).await.expect("claim");
    let mut pv = pvs.get(pv_name).await.expect("pv");
    let spec = pv.spec.get_or_insert_with(Default::default);
    spec.claim_ref = Some(k8s_openapi::api::core::v1::ObjectReference {
        kind: Some("PersistentVolumeClaim".into()),
        api_version: Some("v1".into()),
        namespace: Some("default".into()),
        name: Some(claim.into()),
        uid: c.metadata.uid.clone(),
        ..Default::default()
    });
    let pv = pvs
        .replace(pv_name, &PostParams::default(), &pv)
        .await
        .expect("PV claimRef");
    let mut pv = pv;
    pv.status = Some(k8s_openapi::api::core::v1::PersistentVolumeStatus {
        phase: Some("Bound".into()),
        ..Default::default()
    });
    pvs.replace_status(pv_name, &PostParams::default(), &pv)
        .await
        .expect("PV Bound");
    let mut c = claims.get(claim).await.expect("claim");
    c.spec.get_or_insert_with(Default::default).volume_name = Some(pv_name.into());
    c.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("pv.kubernetes.io/bind-completed".into(), "yes".into());
    let mut c = claims
        .replace(claim, &PostParams::default(), &c)
        .await
        .expect("claim volumeName");
    c.status = Some(k8s_openapi::api::core::v1::PersistentVolumeClaimStatus {
        phase: Some("Bound".into()),
        ..Default::default()
    });
    claims
        .replace_status(claim, &PostParams::default(), &c)
        .await
        .expect("claim Bound");
}

fn config(sched: &str, slow: &str) -> kubesched_config::KubeSchedulerConfiguration {
    scheduler_config(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {sched}
- schedulerName: {slow}
  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 1
"
    ))
}

/// WaitForFirstConsumer claims bound through PreBind, a static local PV and a
/// provisioned one; a pod whose claim appears later; a bind that times out (a
/// profile with `bindTimeoutSeconds: 1`) and is retried.
pub async fn volumes(cluster: &mut Cluster) {
    const SCHED: &str = "ks-vol";
    const SLOW: &str = "ks-vol-slow";
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        vec![
            ready_node("vol-1", "4", "8Gi"),
            ready_node("vol-2", "4", "8Gi"),
        ],
    )
    .await;
    let _: StorageClass = create(
        &admin,
        &wffc_class("vol-local", "kubernetes.io/no-provisioner"),
    )
    .await;
    let _: StorageClass = create(&admin, &wffc_class("vol-fast", "example.com/csi")).await;
    create_available_pv(&admin, &local_pv("vol-pv-2", "vol-local", "10Gi", "vol-2")).await;
    let _: PersistentVolumeClaim = create(&admin, &claim("vol-data", "vol-local", "5Gi")).await;
    let _: PersistentVolumeClaim = create(&admin, &claim("vol-scratch", "vol-fast", "1Gi")).await;
    let running = start_kubesched(cluster, config(SCHED, SLOW)).await;
    create_pods(
        &admin,
        vec![
            pod_with_claim("vol-db", SCHED, "vol-data"),
            pod_with_claim("vol-worker", SCHED, "vol-scratch"),
        ],
    )
    .await;

    // Static: PreBind wrote the claimRef with the claim's UID; the controller binds.
    let pvs: Api<PersistentVolume> = Api::all(admin.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(admin.clone(), "default");
    let data_uid = claims.get("vol-data").await.expect("claim").metadata.uid;
    until(15, "vol-pv-2's claimRef", || {
        let pvs = pvs.clone();
        async move { pvs.get("vol-pv-2").await.ok()?.spec?.claim_ref }
    })
    .await;
    let claim_ref = pvs
        .get("vol-pv-2")
        .await
        .expect("pv")
        .spec
        .unwrap()
        .claim_ref
        .unwrap();
    assert_eq!(claim_ref.name.as_deref(), Some("vol-data"));
    assert_eq!(claim_ref.uid, data_uid);
    bind_volume(&admin, "vol-data", "vol-pv-2").await;

    // Provisioning: PreBind set selected-node; the provisioner makes a PV there.
    let selected = until(15, "vol-scratch's selected-node", || {
        let claims = claims.clone();
        async move {
            claims
                .get("vol-scratch")
                .await
                .ok()?
                .metadata
                .annotations?
                .get("volume.kubernetes.io/selected-node")
                .cloned()
        }
    })
    .await;
    create_available_pv(
        &admin,
        &local_pv("vol-pv-scratch", "vol-fast", "1Gi", &selected),
    )
    .await;
    bind_volume(&admin, "vol-scratch", "vol-pv-scratch").await;
    assert_eq!(node_of(&admin, "vol-db", 15).await, "vol-2");
    assert_eq!(node_of(&admin, "vol-worker", 15).await, selected);
    let scheduled = notes(&admin, "vol-db", "Scheduled").await;
    assert_eq!(scheduled, ["Successfully assigned default/vol-db to vol-2"]);

    // A claim that comes later: the claim's events retry the pod.
    create_pods(&admin, vec![pod_with_claim("vol-late", SCHED, "vol-later")]).await;
    until(15, "vol-late's FailedScheduling", || {
        let admin = admin.clone();
        async move {
            notes(&admin, "vol-late", "FailedScheduling")
                .await
                .into_iter()
                .find(|n| n.contains("persistentvolumeclaim \"vol-later\" not found"))
        }
    })
    .await;
    create_available_pv(&admin, &local_pv("vol-pv-1", "vol-local", "10Gi", "vol-1")).await;
    let _: PersistentVolumeClaim = create(&admin, &claim("vol-later", "vol-local", "1Gi")).await;
    until(15, "vol-pv-1's claimRef", || {
        let pvs = pvs.clone();
        async move { pvs.get("vol-pv-1").await.ok()?.spec?.claim_ref }
    })
    .await;
    bind_volume(&admin, "vol-later", "vol-pv-1").await;
    assert_eq!(node_of(&admin, "vol-late", 15).await, "vol-1");

    // A bind nobody completes times out after bindTimeoutSeconds, with
    // kube-scheduler's message, and the pod is retried; bound once the claim is.
    create_available_pv(
        &admin,
        &local_pv("vol-pv-slow", "vol-local", "10Gi", "vol-1"),
    )
    .await;
    let _: PersistentVolumeClaim = create(&admin, &claim("vol-slow", "vol-local", "1Gi")).await;
    create_pods(&admin, vec![pod_with_claim("vol-slow", SLOW, "vol-slow")]).await;
    until(15, "vol-slow's timeout", || {
        let admin = admin.clone();
        async move {
            notes(&admin, "vol-slow", "FailedScheduling")
                .await
                .into_iter()
                .find(|n| {
                    n == "running PreBind plugin \"VolumeBinding\": binding volumes: context deadline exceeded"
                })
        }
    })
    .await;
    bind_volume(&admin, "vol-slow", "vol-pv-slow").await;
    assert_eq!(node_of(&admin, "vol-slow", 15).await, "vol-1");
    running.stop().await;
}

/// A ResourceClaim allocated by DynamicResources: the finalizer, the allocation and
/// the pod's `reservedFor` written through the real API server's claim status.
pub async fn resource_claim_allocated(cluster: &mut Cluster) {
    const SCHED: &str = "ks-dra";
    let admin = cluster.admin().await;
    create_nodes(
        &admin,
        vec![
            ready_node("dra-1", "4", "8Gi"),
            ready_node("dra-2", "4", "8Gi"),
        ],
    )
    .await;
    let _: DeviceClass = create(
        &admin,
        &device_class("gpu.ks.example.com", "gpu.ks.example.com"),
    )
    .await;
    let _: ResourceSlice = create(&admin, &node_slice("dra-2", "gpu.ks.example.com", 1)).await;
    let _: ResourceClaim = create(&admin, &resource_claim("dra-gpu", "gpu.ks.example.com")).await;
    let running = start_kubesched(cluster, config(SCHED, "ks-dra-unused")).await;
    create_pods(
        &admin,
        vec![pod_with_resource_claim("dra-trainer", SCHED, "dra-gpu")],
    )
    .await;
    assert_eq!(node_of(&admin, "dra-trainer", 15).await, "dra-2");
    let pod_uid = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), "default")
        .get("dra-trainer")
        .await
        .expect("pod")
        .metadata
        .uid
        .expect("uid");
    let claim = Api::<ResourceClaim>::namespaced(admin.clone(), "default")
        .get("dra-gpu")
        .await
        .expect("claim");
    let claim = serde_json::to_value(&claim).expect("json");
    assert_eq!(
        claim["metadata"]["finalizers"],
        json!(["resource.kubernetes.io/delete-protection"])
    );
    let result = &claim["status"]["allocation"]["devices"]["results"][0];
    assert_eq!(result["driver"], "gpu.ks.example.com");
    assert_eq!(result["pool"], "dra-2");
    assert_eq!(result["device"], "gpu-0");
    assert_eq!(
        claim["status"]["reservedFor"],
        json!([{"resource": "pods", "name": "dra-trainer", "uid": pod_uid}])
    );
    running.stop().await;
}
