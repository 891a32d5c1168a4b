//! Tests of the cluster dump against the loopback API server: the list it makes, paging,
//! the storage and DRA kinds and the gang and quota kinds (loaded and used by the
//! simulator), kinds not served or forbidden, and connection errors.

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubesched_sim::scenario::{self, Source};

use super::*;
use crate::testing::FakeApiServer;

fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    ns.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    ns
}

fn pdb(namespace: &str, name: &str, app: &str) -> PodDisruptionBudget {
    let mut pdb = PodDisruptionBudget::default();
    pdb.metadata.namespace = Some(namespace.into());
    pdb.metadata.name = Some(name.into());
    pdb.spec = Some(PodDisruptionBudgetSpec {
        min_available: Some(IntOrString::Int(1)),
        selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
            ..Default::default()
        }),
        ..Default::default()
    });
    pdb
}

async fn server() -> FakeApiServer {
    let server = FakeApiServer::start().await;
    for name in ["n3", "n1", "n2"] {
        server.add_node(FakeApiServer::node(name, "4", "8Gi"));
    }
    let mut bound = FakeApiServer::pod("bound", "default-scheduler", "1");
    if let Some(spec) = bound.spec.as_mut() {
        spec.node_name = Some("n1".into());
    }
    server.add_pod(bound);
    server.add_pod(FakeApiServer::pod("pending", "default-scheduler", "500m"));
    server.apply_object(&namespace("default", &[("team", "web")]));
    server.apply_object(&pdb("default", "web", "web"));
    server
}

fn load(dump: &ClusterDump) -> scenario::Scenario {
    scenario::load(&[Source {
        name: "cluster".into(),
        text: dump.text.clone(),
    }])
    .expect("the dump loads")
}

#[tokio::test]
async fn the_dump_is_a_list_the_loader_reads_as_the_objects() {
    let server = server().await;
    let dump = dump(&server.client()).await.expect("dump");
    assert_eq!(
        dump.counts,
        vec![
            ("Node", 3),
            ("Namespace", 1),
            ("Pod", 2),
            ("Service", 0),
            ("ReplicationController", 0),
            ("ReplicaSet", 0),
            ("StatefulSet", 0),
            ("PodDisruptionBudget", 1),
            ("PersistentVolume", 0),
            ("PersistentVolumeClaim", 0),
            ("StorageClass", 0),
            ("CSINode", 0),
            ("CSIDriver", 0),
            ("CSIStorageCapacity", 0),
            ("VolumeAttachment", 0),
            ("DeviceClass", 0),
            ("ResourceSlice", 0),
            ("ResourceClaim", 0),
            ("ResourceClaimTemplate", 0),
            ("scheduling.k8s.io/v1alpha2 PodGroup", 0),
            ("scheduling.k8s.io/v1alpha2 Workload", 0),
            ("scheduling.k8s.io/v1alpha1 Workload", 0),
            ("scheduling.x-k8s.io/v1alpha1 PodGroup", 0),
            ("scheduling.x-k8s.io/v1alpha1 ElasticQuota", 0),
        ]
    );
    assert!(dump.warnings.is_empty(), "{:?}", dump.warnings);
    assert_eq!(
        dump.summary(),
        "3 Node(s), 1 Namespace(s), 2 Pod(s), 1 PodDisruptionBudget(s)"
    );
    let list: Value = serde_json::from_str(&dump.text).expect("JSON");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().expect("items");
    let types: Vec<(&str, &str)> = items
        .iter()
        .map(|i| {
            (
                i["apiVersion"].as_str().unwrap_or(""),
                i["kind"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            ("v1", "Node"),
            ("v1", "Node"),
            ("v1", "Node"),
            ("v1", "Namespace"),
            ("v1", "Pod"),
            ("v1", "Pod"),
            ("policy/v1", "PodDisruptionBudget"),
        ]
    );

    // Loaded, the dump is the server's objects: the nodes in the server's order
    // (by name), the pods as the server holds them, the others kept for plugins.
    let loaded = load(&dump);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let nodes: Vec<&str> = loaded
        .nodes
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    assert_eq!(nodes, ["n1", "n2", "n3"]);
    for pod in &loaded.pods {
        let key = format!(
            "default/{}",
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        assert_eq!(Some(pod.as_ref()), server.get_pod(&key).as_ref(), "{key}");
    }
    assert_eq!(loaded.pods.len(), 2);
    let others: Vec<(&str, &str, Option<&str>)> = loaded
        .objects
        .iter()
        .map(|o| (o.kind.as_str(), o.name.as_str(), o.namespace.as_deref()))
        .collect();
    assert_eq!(
        others,
        [
            ("Namespace", "default", None),
            ("PodDisruptionBudget", "web", Some("default")),
        ]
    );
    assert_eq!(loaded.objects[0].value["metadata"]["labels"]["team"], "web");
}

#[tokio::test]
async fn lists_are_paged_and_only_read() {
    let server = server().await;
    let paged = dump_paged(&server.client(), 2).await.expect("dump");
    let whole = dump(&server.client()).await.expect("dump");
    assert_eq!(paged, whole);
    let requests = server.requests();
    assert!(
        requests.iter().all(|(method, _)| method == "GET"),
        "{requests:?}"
    );
    // 3 nodes in pages of 2: two requests, the second continuing after the first.
    let node_requests: Vec<&str> = requests
        .iter()
        .filter(|(_, target)| target.starts_with("/api/v1/nodes?"))
        .map(|(_, target)| target.as_str())
        .collect();
    assert_eq!(node_requests.len(), 3, "{node_requests:?}");
    assert!(
        node_requests.iter().any(|t| t.contains("continue=2")),
        "{node_requests:?}"
    );
    assert!(server.bindings().is_empty() && server.events().is_empty());
}

#[tokio::test]
async fn an_unreachable_server_is_named() {
    // A port that was free a moment ago: nothing listens there now.
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address")
    };
    let url: hyper::Uri = format!("http://{addr}").parse().expect("url");
    let cluster =
        LiveCluster::from_config(kube::Config::new(url), Some("gone".into())).expect("client");
    assert_eq!(
        cluster.to_string(),
        format!("cluster http://{addr} (context gone)")
    );
    let error = cluster.dump().await.expect_err("unreachable").to_string();
    assert!(
        error.starts_with(&format!(
            "cluster http://{addr} (context gone): cannot list nodes: "
        )),
        "{error}"
    );
    assert!(!error.contains('\n'), "{error}");
}

#[tokio::test]
async fn kubeconfig_errors_name_the_file_and_the_context() {
    let dir = std::env::temp_dir().join(format!("kubesched-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let missing = dir.join("missing.yaml");
    let error = LiveCluster::connect(&ClusterOptions {
        kubeconfig: Some(missing.clone()),
        context: None,
    })
    .await
    .expect_err("missing")
    .to_string();
    assert!(
        error.starts_with(&format!("kubeconfig {}: cannot read: ", missing.display())),
        "{error}"
    );

    let file = dir.join("config.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:1'}\ncontexts:\n- name: a\n  context: {cluster: c}\n- name: b\n  context: {cluster: other}\n",
    )
    .expect("write");
    let connect = |context: Option<&str>| {
        let options = ClusterOptions {
            kubeconfig: Some(file.clone()),
            context: context.map(String::from),
        };
        async move { LiveCluster::connect(&options).await }
    };
    let label = file.display().to_string();
    assert_eq!(
        connect(Some("nope"))
            .await
            .expect_err("unknown")
            .to_string(),
        format!("kubeconfig {label}: no context \"nope\" (its contexts: a, b)")
    );
    assert_eq!(
        connect(None).await.expect_err("no current").to_string(),
        format!("kubeconfig {label}: no current-context; give --context (its contexts: a, b)")
    );
    assert_eq!(
        connect(Some("b"))
            .await
            .expect_err("no cluster")
            .to_string(),
        format!(
            "kubeconfig {label}: context \"b\" names cluster \"other\", which is not in the kubeconfig"
        )
    );
    let a = connect(Some("a")).await.expect("context a");
    assert_eq!(a.to_string(), "cluster http://127.0.0.1:1 (context a)");
    assert_eq!((a.server(), a.context()), ("http://127.0.0.1:1", Some("a")));
}

fn object<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// Two nodes in two zones; a WaitForFirstConsumer local class with one Available
/// 10Gi PV on n2 and a pending StatefulSet-like pod whose claim can only bind
/// there; a GPU published by n1's ResourceSlice and a pending pod with a claim for
/// it; and one object of each other storage kind.
async fn storage_server() -> FakeApiServer {
    let server = FakeApiServer::start().await;
    for (name, zone) in [("n1", "zone-a"), ("n2", "zone-b")] {
        let mut node = FakeApiServer::node(name, "4", "8Gi");
        if let Some(labels) = node.metadata.labels.as_mut() {
            labels.insert("topology.kubernetes.io/zone".into(), zone.into());
        }
        server.add_node(node);
    }
    server.apply_object(&object::<StorageClass>(json!({
        "metadata": {"name": "local-ssd"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"
    })));
    server.apply_object(&object::<PersistentVolume>(json!({
        "metadata": {"name": "local-pv-n2"},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local-ssd",
            "local": {"path": "/mnt/disks/ssd0"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}
            ]}]}}
        },
        "status": {"phase": "Available"}
    })));
    server.apply_object(&object::<PersistentVolumeClaim>(json!({
        "metadata": {"name": "data-db-0", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local-ssd",
            "resources": {"requests": {"storage": "10Gi"}}
        },
        "status": {"phase": "Pending"}
    })));
    server.apply_object(&object::<CSINode>(json!({
        "metadata": {"name": "n1"},
        "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1",
            "allocatable": {"count": 25}}]}
    })));
    server.apply_object(&object::<CSIDriver>(json!({
        "metadata": {"name": "ebs.csi.aws.com"},
        "spec": {"attachRequired": true}
    })));
    server.apply_object(&object::<CSIStorageCapacity>(json!({
        "metadata": {"name": "cap-a", "namespace": "kube-system"},
        "storageClassName": "local-ssd",
        "capacity": "100Gi",
        "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "zone-a"}}
    })));
    server.apply_object(&object::<VolumeAttachment>(json!({
        "metadata": {"name": "va-1"},
        "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n1",
            "source": {"persistentVolumeName": "other"}}
    })));
    server.apply_object(&object::<DeviceClass>(json!({
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}
    })));
    server.apply_object(&object::<ResourceSlice>(json!({
        "metadata": {"name": "n1-gpus"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}]}
    })));
    server.apply_object(&object::<ResourceClaim>(json!({
        "metadata": {"name": "train-gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu",
            "exactly": {"deviceClassName": "gpu.example.com"}}]}}
    })));
    server.apply_object(&object::<ResourceClaimTemplate>(json!({
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
            "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    })));
    server.add_pod(object(json!({
        "metadata": {"name": "db-0", "namespace": "default"},
        "spec": {
            "containers": [{"name": "db", "image": "postgres:16"}],
            "volumes": [{"name": "data",
                "persistentVolumeClaim": {"claimName": "data-db-0"}}]
        }
    })));
    server.add_pod(object(json!({
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "containers": [{"name": "t", "image": "trainer:1",
                "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "train-gpu"}]
        }
    })));
    server
}

fn count(dump: &ClusterDump, kind: &str) -> usize {
    dump.counts
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(usize::MAX, |(_, n)| *n)
}

#[tokio::test]
async fn storage_and_dra_objects_are_dumped_loaded_and_used() {
    let server = storage_server().await;
    let dump = dump_paged(&server.client(), 2).await.expect("dump");
    assert!(dump.warnings.is_empty(), "{:?}", dump.warnings);
    for kind in OPTIONAL_KINDS {
        assert_eq!(count(&dump, kind), 1, "{kind}: {:?}", dump.counts);
    }
    let requests = server.requests();
    assert!(
        requests.iter().all(|(method, _)| method == "GET"),
        "{requests:?}"
    );
    for path in [
        "/api/v1/persistentvolumes?",
        "/api/v1/persistentvolumeclaims?",
        "/apis/storage.k8s.io/v1/storageclasses?",
        "/apis/storage.k8s.io/v1/csistoragecapacities?",
        "/apis/resource.k8s.io/v1/resourceslices?",
        "/apis/resource.k8s.io/v1/resourceclaimtemplates?",
    ] {
        assert!(
            requests
                .iter()
                .any(|(_, t)| t.starts_with(path) && t.contains("limit=2")),
            "{path} not listed in pages: {requests:?}"
        );
    }

    let loaded = load(&dump);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.dra.device_classes.len(), 1);
    assert_eq!(loaded.dra.slices.len(), 1);
    assert_eq!(loaded.dra.claims.len(), 1);
    assert_eq!(loaded.dra.templates.len(), 1);
    assert!(!loaded.storage.is_empty());
    // The claims decide: db-0's PV is on n2 only, train's GPU on n1 only (n1 is
    // otherwise first in node order and as free as n2).
    let simulation = kubesched_sim::simulate(&loaded, &kubesched_sim::SimulationOptions::default())
        .expect("simulate");
    let placed: Vec<(String, kubesched_sim::PodOutcome)> = simulation
        .results
        .into_iter()
        .map(|r| (r.pod, r.outcome))
        .collect();
    assert_eq!(
        placed,
        [
            (
                "default/db-0".to_string(),
                kubesched_sim::PodOutcome::Scheduled("n2".into())
            ),
            (
                "default/train".to_string(),
                kubesched_sim::PodOutcome::Scheduled("n1".into())
            ),
        ]
    );
}

#[tokio::test]
async fn a_kind_not_served_or_forbidden_is_left_out_with_a_warning() {
    let server = storage_server().await;
    server.refuse("resourceslices", 404);
    server.refuse("csinodes", 403);
    let dump = dump(&server.client()).await.expect("the dump goes on");
    assert_eq!(
        dump.warnings,
        [
            "CSINode objects left out: not allowed to list csinodes (storage.k8s.io/v1): csinodes.storage.k8s.io is forbidden: User \"system:serviceaccount:kube-system:reader\" cannot list resource \"csinodes\" in API group \"storage.k8s.io\" at the cluster scope; pods that need them are simulated as if there were none",
            "ResourceSlice objects left out: the server does not serve resource.k8s.io/v1 resourceslices; pods that need them are simulated as if there were none",
        ]
    );
    assert_eq!(
        (count(&dump, "CSINode"), count(&dump, "ResourceSlice")),
        (0, 0)
    );
    assert_eq!(count(&dump, "ResourceClaim"), 1);
    let loaded = load(&dump);
    assert!(loaded.dra.slices.is_empty());
    assert_eq!(loaded.dra.claims.len(), 1);
    // Without the slice there is no GPU: the pod with the claim stays pending.
    let simulation = kubesched_sim::simulate(&loaded, &kubesched_sim::SimulationOptions::default())
        .expect("simulate");
    let train = simulation
        .results
        .iter()
        .find(|r| r.pod == "default/train")
        .expect("train attempted");
    assert!(
        matches!(train.outcome, kubesched_sim::PodOutcome::Unschedulable(_)),
        "{:?}",
        train.outcome
    );
}

/// The gang and quota objects as YAML: a v1alpha2 PodGroup `b` one pod short (minCount
/// 3, two pods), a v1alpha2 Workload, a v1alpha1 Workload, a scheduler-plugins PodGroup
/// and an ElasticQuota.
const GANG_OBJECTS: &str = r#"
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: b, namespace: default}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: train, namespace: default}
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy: {gang: {minCount: 2}}
---
apiVersion: scheduling.k8s.io/v1alpha1
kind: Workload
metadata: {name: legacy, namespace: default}
spec:
  podGroups:
  - name: workers
    policy: {gang: {minCount: 2}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: sigs, namespace: default}
spec: {minMember: 2}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: quota, namespace: default}
spec:
  min: {cpu: "2"}
  max: {cpu: "4"}
"#;

/// Two nodes, the [`GANG_OBJECTS`] and PodGroup `b`'s two pods.
async fn gang_server() -> FakeApiServer {
    let server = FakeApiServer::start().await;
    for name in ["n1", "n2"] {
        server.add_node(FakeApiServer::node(name, "2", "8Gi"));
    }
    for document in GANG_OBJECTS.split("\n---\n") {
        let value: Value = serde_norway::from_str(document).expect("YAML");
        server.apply_value(value);
    }
    for name in ["b-1", "b-2"] {
        server.add_pod(object(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "schedulingGroup": {"podGroupName": "b"},
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m"}}}]
            }
        })));
    }
    server
}

/// `(kind, apiVersion, namespace/name, spec)` of the loaded objects of `kinds`.
fn gang_objects(loaded: &scenario::Scenario) -> Vec<(String, String, String, Value)> {
    loaded
        .objects
        .iter()
        .filter(|o| matches!(o.kind.as_str(), "PodGroup" | "Workload" | "ElasticQuota"))
        .map(|o| {
            (
                o.kind.clone(),
                o.value["apiVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                format!("{}/{}", o.namespace.as_deref().unwrap_or(""), o.name),
                o.value["spec"].clone(),
            )
        })
        .collect()
}

fn simulate_with(
    loaded: &scenario::Scenario,
    gates: &[&str],
) -> Vec<(String, kubesched_sim::PodOutcome)> {
    let options = kubesched_sim::SimulationOptions {
        features: kubesched_framework::Features::with_gates(
            kubesched_framework::KubernetesVersion::V1_36,
            gates.iter().copied(),
        )
        .expect("gates"),
        ..Default::default()
    };
    kubesched_sim::simulate(loaded, &options)
        .expect("simulate")
        .results
        .into_iter()
        .map(|r| (r.pod, r.outcome))
        .collect()
}

#[tokio::test]
async fn gang_and_quota_objects_are_dumped_and_loaded_as_from_yaml() {
    let server = gang_server().await;
    let dump = dump_paged(&server.client(), 2).await.expect("dump");
    assert!(dump.warnings.is_empty(), "{:?}", dump.warnings);
    for kind in DYNAMIC_KINDS {
        assert_eq!(count(&dump, kind.name), 1, "{kind:?}: {:?}", dump.counts);
    }
    assert_eq!(
        dump.summary(),
        "2 Node(s), 2 Pod(s), 1 scheduling.k8s.io/v1alpha2 PodGroup(s), 1 scheduling.k8s.io/v1alpha2 Workload(s), 1 scheduling.k8s.io/v1alpha1 Workload(s), 1 scheduling.x-k8s.io/v1alpha1 PodGroup(s), 1 scheduling.x-k8s.io/v1alpha1 ElasticQuota(s)"
    );
    let requests = server.requests();
    for path in [
        "/apis/scheduling.k8s.io/v1alpha2/podgroups?",
        "/apis/scheduling.k8s.io/v1alpha2/workloads?",
        "/apis/scheduling.k8s.io/v1alpha1/workloads?",
        "/apis/scheduling.x-k8s.io/v1alpha1/podgroups?",
        "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas?",
    ] {
        assert!(
            requests
                .iter()
                .any(|(m, t)| m == "GET" && t.starts_with(path) && t.contains("limit=2")),
            "{path} not listed in pages: {requests:?}"
        );
    }
    assert!(
        requests.iter().all(|(method, _)| method == "GET"),
        "{requests:?}"
    );

    // Loaded, they are the objects the same YAML gives.
    let loaded = load(&dump);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let from_yaml = scenario::load(&[Source {
        name: "gangs.yaml".into(),
        text: GANG_OBJECTS.into(),
    }])
    .expect("the YAML loads");
    assert_eq!(gang_objects(&loaded), gang_objects(&from_yaml));
    assert_eq!(gang_objects(&loaded).len(), 5);

    // And used: with the gates on, PodGroup b (one pod short) holds both pods; with
    // them off, the pods are scheduled one by one.
    let gated = simulate_with(&loaded, &["GenericWorkload=true,GangScheduling=true"]);
    assert_eq!(gated.len(), 2, "{gated:?}");
    assert!(
        gated
            .iter()
            .all(|(_, o)| !matches!(o, kubesched_sim::PodOutcome::Scheduled(_))),
        "{gated:?}"
    );
    let ungated = simulate_with(&loaded, &[]);
    assert!(
        ungated
            .iter()
            .all(|(_, o)| matches!(o, kubesched_sim::PodOutcome::Scheduled(_))),
        "{ungated:?}"
    );
}

#[tokio::test]
async fn a_v1_35_pods_workload_reference_is_dumped_and_loaded() {
    let server = gang_server().await;
    server.add_pod_value(json!({
        "metadata": {"name": "l-1", "namespace": "default"},
        "spec": {
            "workloadRef": {"name": "legacy", "podGroup": "workers"},
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]
        }
    }));
    let dump = dump_paged(&server.client(), 2).await.expect("dump");
    let loaded = load(&dump);
    let pod = loaded
        .pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("l-1"))
        .expect("the pod");
    let info = kubesched_framework::PodInfo::new(pod.clone()).expect("pod");
    let reference = kubesched_plugins::gang_scheduling::v1alpha1::workload_ref(&info)
        .expect("the loader kept spec.workloadRef");
    assert_eq!(
        (reference.name.as_str(), reference.pod_group.as_str()),
        ("legacy", "workers")
    );
}

#[tokio::test]
async fn a_gang_or_quota_kind_not_served_or_forbidden_is_left_out_with_a_warning() {
    let server = gang_server().await;
    server.refuse("podgroups.v1alpha1.scheduling.x-k8s.io", 404);
    server.refuse("elasticquotas.v1alpha1.scheduling.x-k8s.io", 404);
    server.refuse("workloads.v1alpha1.scheduling.k8s.io", 403);
    let dump = dump(&server.client()).await.expect("the dump goes on");
    assert_eq!(
        dump.warnings,
        [
            "Workload objects left out: not allowed to list workloads (scheduling.k8s.io/v1alpha1): workloads.scheduling.k8s.io is forbidden: User \"system:serviceaccount:kube-system:reader\" cannot list resource \"workloads\" in API group \"scheduling.k8s.io\" at the cluster scope; pods that need them are simulated as if there were none",
            "PodGroup objects left out: the server does not serve scheduling.x-k8s.io/v1alpha1 podgroups; pods that need them are simulated as if there were none",
            "ElasticQuota objects left out: the server does not serve scheduling.x-k8s.io/v1alpha1 elasticquotas; pods that need them are simulated as if there were none",
        ]
    );
    let counts: Vec<usize> = DYNAMIC_KINDS
        .iter()
        .map(|kind| count(&dump, kind.name))
        .collect();
    assert_eq!(counts, [1, 1, 0, 0, 0]);
    let loaded = load(&dump);
    let kinds: Vec<(String, String)> = gang_objects(&loaded)
        .into_iter()
        .map(|(kind, api_version, _, _)| (api_version, kind))
        .collect();
    assert_eq!(
        kinds,
        [
            (
                "scheduling.k8s.io/v1alpha2".to_string(),
                "PodGroup".to_string()
            ),
            (
                "scheduling.k8s.io/v1alpha2".to_string(),
                "Workload".to_string()
            ),
        ]
    );
}

#[test]
fn each_dynamic_kind_is_named_by_its_api_version_and_kind() {
    for kind in DYNAMIC_KINDS {
        assert_eq!(kind.name, format!("{} {}", kind.api_version(), kind.kind));
    }
}
