//! DRAExtendedResource against the real kube-scheduler v1.36: the objects of
//! `crates/kubesched-sim/tests/extended-resources/three-nodes.yaml` (a node without
//! devices, one whose two devices a DeviceClass maps to `example.com/gpu`, one that
//! advertises `example.com/gpu` itself) and its pods, created one after the other,
//! each once its predecessor is decided. First the real kube-scheduler places them;
//! then, the pods and their claims gone, kubesched's runtime (v1.36, the API server's
//! version) places the same pods: the same nodes, the same pending messages, and for
//! the pod placed through DRA the same claim (requests, annotation, owner) and the
//! same `status.extendedResourceClaimStatus`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde::Deserialize;
use serde_json::{Value, json};

use super::support::realcluster::Cluster;
use super::{KubeScheduler, repo_file, scheduler_config, start_kubesched, until};

const SCHED: &str = "ks-extres";
const ANNOTATION: &str = "resource.kubernetes.io/extended-resource-claim";

/// The scenario's documents, as JSON.
fn documents() -> Vec<Value> {
    let path = repo_file("crates/kubesched-sim/tests/extended-resources/three-nodes.yaml");
    let text = std::fs::read_to_string(&path).expect("scenario");
    serde_norway::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).expect("yaml"))
        .filter(|v| !v.is_null())
        .collect()
}

/// The pod's node once bound, or its PodScheduled message once it is unschedulable.
async fn outcome(client: &kube::Client, pod: &str) -> String {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    until(30, &format!("{pod} decided"), || {
        let api = api.clone();
        async move {
            let p = api.get(pod).await.ok()?;
            if let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
                return Some(node);
            }
            p.status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")
                .and_then(|c| c.message)
                .filter(|m| !m.is_empty())
        }
    })
    .await
}

/// What one scheduler did with the pods: the outcome per pod; for the first pod, its
/// claim (requests, annotation, owner) and its `extendedResourceClaimStatus`.
#[derive(Debug, PartialEq)]
struct Run {
    outcomes: Vec<(String, String)>,
    claim: Value,
    status: Value,
}

async fn place(client: &kube::Client, pods: &[Value], scheduler: Option<&str>) -> Run {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut outcomes = Vec::new();
    for doc in pods {
        let mut doc = doc.clone();
        if let Some(s) = scheduler {
            doc["spec"]["schedulerName"] = json!(s);
        }
        if let Some(m) = doc["metadata"].as_object_mut() {
            m.remove("uid");
        }
        let pod: Pod = serde_json::from_value(doc).expect("pod");
        let name = pod.metadata.name.clone().unwrap_or_default();
        api.create(&PostParams::default(), &pod)
            .await
            .expect("create pod");
        outcomes.push((name.clone(), outcome(client, &name).await));
    }
    let first = outcomes[0].0.clone();
    let p = api.get(&first).await.expect("pod");
    let status =
        serde_json::to_value(&p.status).expect("json")["extendedResourceClaimStatus"].clone();
    let claim_name = status["resourceClaimName"].as_str().unwrap_or_default();
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), "default");
    let claim = claims.get(claim_name).await.expect("the pod's claim");
    assert!(
        claim_name.starts_with(&format!("{first}-extended-resources-")),
        "{claim_name}"
    );
    let owner = &claim.metadata.owner_references.clone().unwrap_or_default()[0];
    let claim_json = serde_json::to_value(&claim).expect("json");
    let claim = json!({
        "annotation": claim.metadata.annotations.unwrap_or_default().get(ANNOTATION),
        "owner": [&owner.kind, &owner.name, owner.controller == Some(true) && owner.uid == p.metadata.uid.clone().unwrap_or_default()],
        "finalizers": claim_json["metadata"]["finalizers"],
        "requests": claim_json["spec"]["devices"]["requests"],
        "devices": claim_json["status"]["allocation"]["devices"]["results"].as_array().map(|r| r.len()),
        "reservedFor": claim_json["status"]["reservedFor"][0]["name"],
    });
    let mut status = status;
    if let Some(s) = status.as_object_mut() {
        // The generated name differs between the runs; the claim check covers it.
        s.remove("resourceClaimName");
    }
    Run {
        outcomes,
        claim,
        status,
    }
}

/// Deletes the pods and their extended resource claims (taking off the finalizer no
/// controller removes here), and waits until they are gone.
async fn clear(client: &kube::Client) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    let _ = pods.delete_collection(&force, &ListParams::default()).await;
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), "default");
    for c in claims
        .list(&ListParams::default())
        .await
        .expect("claims")
        .items
    {
        let extended = c
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ANNOTATION));
        if !extended {
            continue;
        }
        let name = c.metadata.name.clone().unwrap_or_default();
        let _ = claims
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await;
        let _ = claims.delete(&name, &DeleteParams::default()).await;
    }
    until(30, "pods and claims gone", || {
        let (pods, claims) = (pods.clone(), claims.clone());
        async move {
            let p = pods.list(&ListParams::default()).await.ok()?.items.len();
            let c = claims
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .iter()
                .filter(|c| {
                    c.metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key(ANNOTATION))
                })
                .count();
            (p == 0 && c == 0).then_some(())
        }
    })
    .await;
}

pub async fn extended_resources(cluster: &mut Cluster) {
    let admin = cluster.admin().await;
    let mut pods = Vec::new();
    for doc in documents() {
        match doc["kind"].as_str() {
            Some("Node") => {
                let node: Node = serde_json::from_value(doc).expect("node");
                Api::<Node>::all(admin.clone())
                    .create(&PostParams::default(), &node)
                    .await
                    .expect("create node");
            }
            Some("DeviceClass") => {
                let class: DeviceClass = serde_json::from_value(doc).expect("class");
                Api::<DeviceClass>::all(admin.clone())
                    .create(&PostParams::default(), &class)
                    .await
                    .expect("create class");
            }
            Some("ResourceSlice") => {
                let slice: ResourceSlice = serde_json::from_value(doc).expect("slice");
                Api::<ResourceSlice>::all(admin.clone())
                    .create(&PostParams::default(), &slice)
                    .await
                    .expect("create slice");
            }
            Some("Pod") => pods.push(doc),
            other => panic!("unexpected document {other:?}"),
        }
    }

    let real = {
        let _kube_scheduler = KubeScheduler::start(cluster, &["-v=2"]);
        place(&admin, &pods, None).await
    };
    clear(&admin).await;

    let running = start_kubesched(
        cluster,
        scheduler_config(&format!(
            "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {SCHED}
"
        )),
    )
    .await;
    let ours = place(&admin, &pods, Some(SCHED)).await;
    running.stop().await;
    clear(&admin).await;
    let _ = Api::<ResourceSlice>::all(admin.clone())
        .delete("n2-gpus", &DeleteParams::default())
        .await;
    let _ = Api::<DeviceClass>::all(admin.clone())
        .delete("gpu-class", &DeleteParams::default())
        .await;

    eprintln!("realcluster: the real kube-scheduler: {real:#?}");
    // The real kube-scheduler's run, as the scenario's comment records it.
    let nodes: BTreeMap<&str, &str> = real
        .outcomes
        .iter()
        .map(|(p, o)| (p.as_str(), o.as_str()))
        .collect();
    assert_eq!(
        (nodes["p1"], nodes["p2"], nodes["p3"]),
        ("n2", "n2", "n3"),
        "{real:#?}"
    );
    assert_eq!(ours, real);
}
