//! The protobuf decoder against the real API server: the objects of
//! `protobuf-objects.yaml` (every kind the runtime watches, with the fields where
//! protobuf and JSON part ways: empty values behind pointers and beside omitempty,
//! times, quantities, int-or-strings, raw JSON) are listed and watched in protobuf and
//! in JSON, and each decodes to the same k8s-openapi value both ways.

use std::fmt::Debug;

use futures::TryStreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use kube::api::{Api, ListParams, Patch, PatchParams, WatchParams};
use kubesched_kube::protobuf::{self, PROTOBUF, WatchEvent};
use kubesched_kube::watch::{self, Encoding, Listable};
use serde::Serialize;

use super::support::realcluster::Cluster;
use super::{kubectl, kubectl_apply, repo_file};

/// Where two values part ways, as JSON paths.
fn differences(a: &serde_json::Value, b: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let null = serde_json::Value::Null;
                let (p, q) = (x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null));
                differences(p, q, &format!("{path}.{k}"), out);
            }
        }
        (Array(x), Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{path}[{i}]"), out);
            }
        }
        (x, y) if x != y => out.push(format!("{path}: protobuf {x} / JSON {y}")),
        _ => {}
    }
}

fn same<K: Serialize + PartialEq + Debug>(what: &str, protobuf: &[K], json: &[K]) {
    assert_eq!(protobuf.len(), json.len(), "{what}: as many in both");
    for (p, j) in protobuf.iter().zip(json) {
        if p != j {
            let mut diffs = Vec::new();
            let (p, j) = (serde_json::to_value(p), serde_json::to_value(j));
            differences(&p.expect("json"), &j.expect("json"), "", &mut diffs);
            panic!(
                "{what}: protobuf and JSON decode differently:\n{}",
                diffs.join("\n")
            );
        }
    }
}

/// Lists `K` raw in protobuf (the server must answer in protobuf), and through
/// `watch::list` in both encodings: the same objects each way. Returns how many.
async fn listed_alike<K>(client: &kube::Client) -> usize
where
    K: Listable + Serialize + PartialEq + Debug,
{
    let what = K::kind(&()).to_string();
    let request = kube::core::Request::new(K::url_path(&(), None))
        .list(&ListParams::default())
        .expect("request");
    let mut request = request.map(kube::client::Body::from);
    request.headers_mut().insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(PROTOBUF),
    );
    let response = client.send(request).await.expect("list");
    assert_eq!(
        response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("")),
        Some(PROTOBUF),
        "{what}: the API server answers in protobuf"
    );
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let (_, raw): (String, Vec<K>) = protobuf::decode_list_of(&body).expect("decodes");
    let lp = ListParams::default();
    let (_, pb) = watch::list::<K>(client, Encoding::Protobuf, &lp)
        .await
        .expect("list");
    let (_, json) = watch::list::<K>(client, Encoding::Json, &lp)
        .await
        .expect("list");
    same(&what, &raw, &json);
    same(&what, &pb, &json);
    assert!(!json.is_empty(), "{what}: the scenario made some");
    json.len()
}

/// The events of a watch from `rv` until `n` have come.
async fn events<K: Listable>(
    client: &kube::Client,
    encoding: Encoding,
    rv: &str,
    n: usize,
) -> Vec<WatchEvent<K>> {
    let wp = WatchParams::default().timeout(20);
    let stream = watch::watch::<K>(client, encoding, &wp, rv)
        .await
        .expect("watch");
    futures::pin_mut!(stream);
    let mut out = Vec::new();
    while out.len() < n {
        match stream.try_next().await.expect("event") {
            Some(WatchEvent::Bookmark(_)) => {}
            Some(ev) => out.push(ev),
            None => break,
        }
    }
    out
}

pub(crate) async fn protobuf_as_json(cluster: &mut Cluster) {
    let client = cluster.admin().await;
    kubectl_apply(
        cluster,
        &repo_file("crates/kubesched-kube/tests/realcluster_scenarios/protobuf-objects.yaml"),
    );
    let mut kinds = 0;
    kinds += listed_alike::<Namespace>(&client).await.min(1);
    kinds += listed_alike::<Node>(&client).await.min(1);
    kinds += listed_alike::<Pod>(&client).await.min(1);
    kinds += listed_alike::<PersistentVolumeClaim>(&client).await.min(1);
    kinds += listed_alike::<PersistentVolume>(&client).await.min(1);
    kinds += listed_alike::<StorageClass>(&client).await.min(1);
    kinds += listed_alike::<CSINode>(&client).await.min(1);
    kinds += listed_alike::<CSIDriver>(&client).await.min(1);
    kinds += listed_alike::<CSIStorageCapacity>(&client).await.min(1);
    kinds += listed_alike::<Service>(&client).await.min(1);
    kinds += listed_alike::<ReplicaSet>(&client).await.min(1);
    kinds += listed_alike::<StatefulSet>(&client).await.min(1);
    kinds += listed_alike::<ReplicationController>(&client).await.min(1);
    kinds += listed_alike::<PodDisruptionBudget>(&client).await.min(1);
    kinds += listed_alike::<DeviceClass>(&client).await.min(1);
    kinds += listed_alike::<ResourceSlice>(&client).await.min(1);
    kinds += listed_alike::<ResourceClaim>(&client).await.min(1);
    kinds += listed_alike::<Lease>(&client).await.min(1);
    assert_eq!(kinds, 18);

    // A watch from the list's resourceVersion: a change and a deletion arrive alike.
    let (rv, _) = watch::list::<Pod>(&client, Encoding::Json, &ListParams::default())
        .await
        .expect("list");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "pb");
    pods.patch(
        "pb-rich",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"changed": "yes"}}})),
    )
    .await
    .expect("patch");
    kubectl(
        cluster,
        &[
            "delete",
            "pod",
            "-n",
            "pb",
            "pb-bare",
            "--grace-period=0",
            "--force",
            "--wait=false",
        ],
    );
    let (pb, json) = tokio::join!(
        events::<Pod>(&client, Encoding::Protobuf, &rv, 2),
        events::<Pod>(&client, Encoding::Json, &rv, 2)
    );
    assert_eq!(pb.len(), 2, "{pb:?}");
    assert!(matches!(pb[0], WatchEvent::Modified(_)), "{:?}", pb[0]);
    assert_eq!(pb, json, "the watch's events decode alike");
    // A Lease written in protobuf (as the elector writes it) reads back, in JSON, as
    // written: its holder, and its renewTime to the microsecond.
    let opts = kubesched_kube::LeaderElectionOptions {
        namespace: "pb".into(),
        name: "pb-elected".into(),
        identity: "pb-replica".into(),
        lease_duration: std::time::Duration::from_secs(15),
        renew_deadline: std::time::Duration::from_secs(10),
        retry_period: std::time::Duration::from_secs(2),
    };
    let mut elector =
        kubesched_kube::LeaderElector::new(client.clone(), opts).with_encoding(Encoding::Protobuf);
    assert!(
        elector.try_acquire_or_renew().await.expect("acquire"),
        "acquired"
    );
    assert!(
        elector.try_acquire_or_renew().await.expect("renew"),
        "renewed"
    );
    let lease = Api::<Lease>::namespaced(client.clone(), "pb")
        .get("pb-elected")
        .await
        .expect("lease");
    let spec = lease.spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("pb-replica"));
    assert_eq!(spec.lease_transitions, Some(0));
    let renewed = spec.renew_time.expect("renewTime").0;
    assert!(
        renewed.subsec_nanosecond() % 1_000 == 0,
        "microseconds: {renewed}"
    );

    // An error's Status comes in protobuf too, and reads as the JSON one.
    let bad = ListParams::default().fields("spec.bogus=x");
    let (pb, json) = tokio::join!(
        watch::list::<Pod>(&client, Encoding::Protobuf, &bad),
        watch::list::<Pod>(&client, Encoding::Json, &bad)
    );
    match (pb, json) {
        (Err(kube::Error::Api(p)), Err(kube::Error::Api(j))) => {
            assert_eq!(p.code, 400, "{p:?}");
            assert_eq!(p, j, "the error's Status decodes alike");
        }
        other => panic!("a bad field selector is refused: {other:?}"),
    }
    kubectl(
        cluster,
        &[
            "delete",
            "-f",
            &repo_file("crates/kubesched-kube/tests/realcluster_scenarios/protobuf-objects.yaml")
                .display()
                .to_string(),
            "--wait=false",
            "--ignore-not-found",
        ],
    );
}
