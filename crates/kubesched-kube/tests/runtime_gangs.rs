//! Gangs in the runtime, against a loopback API server: kube-scheduler v1.36's
//! (PodGroups watched, the PodGroup cycle: all of a gang or none of it, the
//! `PodGroupScheduled` condition written, and with `TopologyAwareWorkloadScheduling` a
//! gang tried per rack; the real-cluster test compares the same against the real
//! kube-scheduler, these run anywhere), v1.35's (Workloads, pods joined by
//! `spec.workloadRef`: the cases of `conformance/cases-gangs-v1.35/` through `run`), and
//! scheduler-plugins' Coscheduling and CapacityScheduling following their objects as
//! they change.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{OURS, one_profile, until};
use k8s_openapi::api::core::v1::Pod;
use kubesched_framework::KubernetesVersion;
use kubesched_kube::testing::FakeApiServer;
use kubesched_kube::{RunningRuntime, Runtime};
use serde_json::json;

async fn start(server: &FakeApiServer) -> RunningRuntime {
    Runtime::new(server.client(), one_profile("", ""))
        .kubernetes_version(
            Some(KubernetesVersion::V1_36),
            vec!["GenericWorkload=true,GangScheduling=true".into()],
        )
        .start()
        .await
        .expect("start")
}

fn gang_pod(name: &str, group: &str, cpu: &str) -> Pod {
    let mut pod = serde_json::to_value(FakeApiServer::pod(name, OURS, cpu)).expect("pod json");
    pod["spec"]["schedulingGroup"] = json!({"podGroupName": group});
    serde_json::from_value(pod).expect("pod")
}

fn pod_group(server: &FakeApiServer, name: &str, min_count: i32) {
    server.apply_value(json!({
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }));
}

/// The PodGroupScheduled condition as `status/reason/message`, once written.
fn condition(server: &FakeApiServer, key: &str) -> Option<String> {
    let group = server.pod_group(key)?;
    let c = group["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "PodGroupScheduled")?
        .clone();
    Some(format!(
        "{}/{}/{}",
        c["status"].as_str()?,
        c["reason"].as_str()?,
        c["message"].as_str()?
    ))
}

/// The PodGroupScheduled condition, once written (see [`condition`]).
async fn written_condition(server: &FakeApiServer, key: &str) -> String {
    until(5, "the condition", || condition(server, key).is_some()).await;
    condition(server, key).expect("written")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_is_placed_together_and_its_group_says_so() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    pod_group(&server, "g", 2);
    let rt = start(&server).await;
    server.add_pod(gang_pod("g-1", "g", "1"));
    server.add_pod(gang_pod("g-2", "g", "1"));
    until(5, "both bound", || {
        server.node_of("default/g-1").is_some() && server.node_of("default/g-2").is_some()
    })
    .await;
    assert_eq!(
        written_condition(&server, "default/g").await,
        "True/Scheduled/"
    );
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_that_does_not_fit_keeps_nothing() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "1500m", "8Gi"));
    // The pods first, then their group: they wait for it at PreEnqueue and enter the
    // queue together, one PodGroup cycle.
    server.add_pod(gang_pod("g-1", "g", "1"));
    server.add_pod(gang_pod("g-2", "g", "1"));
    let rt = start(&server).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.events_for("default/g-1").is_empty(),
        "attempted before its group existed"
    );
    pod_group(&server, "g", 2);
    until(5, "both reported", || {
        !server.events_for("default/g-1").is_empty() && !server.events_for("default/g-2").is_empty()
    })
    .await;
    let notes: Vec<String> = ["default/g-1", "default/g-2"]
        .iter()
        .map(|k| server.events_for(k)[0].1.clone())
        .collect();
    // The pod that found a node waited at Permit for a quorum that never came, and is
    // given back with the group's message; the other has its own FitError.
    assert!(
        notes.contains(
            &"pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more plugins asked to wait and no plugin rejected pod".to_string()
        ),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("0/1 nodes are available: 1 Insufficient cpu.")),
        "{notes:?}"
    );
    assert_eq!(
        written_condition(&server, "default/g").await,
        "False/Unschedulable/pod group is unschedulable"
    );
    assert_eq!(server.node_of("default/g-1"), None);
    assert_eq!(server.node_of("default/g-2"), None);
    // Nothing of the gang holds the node: a lone pod fits.
    server.add_pod(FakeApiServer::pod("single", OURS, "1"));
    until(5, "the single pod bound", || {
        server.node_of("default/single").is_some()
    })
    .await;
    rt.stop().await;
}

const TOPOLOGY_GATES: &str =
    "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true";

async fn start_topology(server: &FakeApiServer) -> RunningRuntime {
    Runtime::new(server.client(), one_profile("", ""))
        .kubernetes_version(Some(KubernetesVersion::V1_36), vec![TOPOLOGY_GATES.into()])
        .start()
        .await
        .expect("run takes TopologyAwareWorkloadScheduling")
}

/// A node of rack `rack`.
fn rack_node(name: &str, rack: &str, cpu: &str) -> k8s_openapi::api::core::v1::Node {
    let mut node = FakeApiServer::node(name, cpu, "8Gi");
    let labels = node.metadata.labels.get_or_insert_with(Default::default);
    labels.insert("rack".into(), rack.into());
    node
}

/// A PodGroup of `min_count` whose pods are kept to one value of the label `key`.
fn pod_group_in(server: &FakeApiServer, name: &str, min_count: i32, key: &str) {
    server.apply_value(json!({
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            "schedulingConstraints": {"topology": [{"key": key}]},
        },
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_places_a_gang_on_the_rack_it_fills_most() {
    let server = FakeApiServer::start().await;
    server.add_node(rack_node("a1", "ra", "4"));
    server.add_node(rack_node("b1", "rb", "4"));
    let mut busy = FakeApiServer::pod("busy", OURS, "2");
    busy.spec.as_mut().expect("spec").node_name = Some("a1".into());
    server.add_pod(busy);
    server.add_pod(gang_pod("g-1", "g", "1"));
    server.add_pod(gang_pod("g-2", "g", "1"));
    let rt = start_topology(&server).await;
    // The group last: its pods enter one PodGroup cycle.
    pod_group_in(&server, "g", 2, "rack");
    until(5, "both bound", || {
        server.node_of("default/g-1").is_some() && server.node_of("default/g-2").is_some()
    })
    .await;
    // Each rack was tried; NodeResourcesFit's placement score (MostAllocated) prefers
    // the rack already half used, where the per-node score (LeastAllocated) would
    // have taken b1.
    assert_eq!(server.node_of("default/g-1").as_deref(), Some("a1"));
    assert_eq!(server.node_of("default/g-2").as_deref(), Some("a1"));
    assert_eq!(
        written_condition(&server, "default/g").await,
        "True/Scheduled/"
    );
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reports_a_gang_that_fits_no_rack_and_keeps_nothing_of_its_tries() {
    let server = FakeApiServer::start().await;
    server.add_node(rack_node("a1", "ra", "1500m"));
    server.add_node(rack_node("b1", "rb", "1500m"));
    server.add_pod(gang_pod("g-1", "g", "1"));
    server.add_pod(gang_pod("g-2", "g", "1"));
    let rt = start_topology(&server).await;
    pod_group_in(&server, "g", 2, "rack");
    assert_eq!(
        written_condition(&server, "default/g").await,
        "False/Unschedulable/0/2 placements are available, first placement status: pod group is unschedulable"
    );
    // The first rack's attempt is the one reported: once for each pod, not once per
    // try.
    let events: Vec<Vec<String>> = ["default/g-1", "default/g-2"]
        .iter()
        .map(|k| server.events_for(k).into_iter().map(|e| e.1).collect())
        .collect();
    assert!(events.iter().all(|e| e.len() == 1), "{events:?}");
    let notes: Vec<&String> = events.iter().flatten().collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("pod group is unschedulable, waiting for minCount pods")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.starts_with("0/1 nodes are available: 1 Insufficient cpu.")
            && n.ends_with("preemption: not eligible due to placement-based pod group scheduling limitation")),
        "{notes:?}"
    );
    // No try left a pod assumed: a 1-cpu pod fits on each node.
    server.add_pod(FakeApiServer::pod("s-1", OURS, "1"));
    server.add_pod(FakeApiServer::pod("s-2", OURS, "1"));
    until(5, "both single pods bound", || {
        server.node_of("default/s-1").is_some() && server.node_of("default/s-2").is_some()
    })
    .await;
    assert_eq!(server.node_of("default/g-1"), None);
    assert_eq!(server.node_of("default/g-2"), None);
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reports_a_topology_key_on_no_node() {
    let server = FakeApiServer::start().await;
    server.add_node(rack_node("a1", "ra", "4"));
    server.add_pod(gang_pod("g-1", "g", "1"));
    let rt = start_topology(&server).await;
    pod_group_in(&server, "g", 1, "zone");
    assert_eq!(
        written_condition(&server, "default/g").await,
        "False/Unschedulable/no feasible placements found"
    );
    until(5, "the pod's event", || {
        !server.events_for("default/g-1").is_empty()
    })
    .await;
    assert_eq!(
        server.events_for("default/g-1")[0].1,
        "no feasible placements found"
    );
    assert_eq!(server.node_of("default/g-1"), None);
    rt.stop().await;
}

async fn start_sigs(server: &FakeApiServer) -> RunningRuntime {
    let config = one_profile(
        "",
        "  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      - name: CapacityScheduling
      disabled:
      - name: PrioritySort
",
    );
    Runtime::new(server.client(), config)
        .kubernetes_version(Some(KubernetesVersion::V1_36), Vec::new())
        .with_plugins(kubesched_plugins_sigs::registry())
        .expect("plugins")
        .start()
        .await
        .expect("start")
}

fn labelled(name: &str, group: &str, cpu: &str) -> Pod {
    let mut pod = FakeApiServer::pod(name, OURS, cpu);
    pod.metadata.labels = Some(
        [(
            "scheduling.x-k8s.io/pod-group".to_string(),
            group.to_string(),
        )]
        .into(),
    );
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coscheduling_binds_a_gang_whose_group_and_pods_come_while_it_runs() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "4", "8Gi"));
    let rt = start_sigs(&server).await;
    server.apply_value(json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"minMember": 2},
    }));
    // Let the PodGroup's watch event arrive before the pod's (their watches are two
    // streams): otherwise Permit turns the pod down with `PodGroup not found`, as
    // upstream's does, and it is retried when the group comes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.add_pod(labelled("c-1", "c", "1"));
    let waiting = rt.waiting_pods();
    // One pod of two: PreFilter turns it down until its sibling exists (the PostFilter
    // plugins' messages follow).
    let short = "0/1 nodes are available: pre-filter pod c-1 cannot find enough sibling pods, current pods number: 1, minMember of group: 2.";
    until(5, "c-1 turned down for want of its sibling", || {
        server
            .events_for("default/c-1")
            .iter()
            .any(|(_, note, _)| note.starts_with(short))
    })
    .await;
    assert_eq!(server.node_of("default/c-1"), None);
    server.add_pod(labelled("c-2", "c", "1"));
    until(10, "both bound", || {
        server.node_of("default/c-1").is_some() && server.node_of("default/c-2").is_some()
    })
    .await;
    assert!(waiting.is_empty());
    rt.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_scheduling_holds_a_namespace_to_its_elastic_quota_in_run() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "8", "8Gi"));
    // Created before the runtime starts, so that its first list holds it: created
    // after, its watch event could come after the pods' (two streams) and a pod would
    // be placed with no quota yet, as upstream's would.
    server.apply_value(json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "q", "namespace": "default"},
        "spec": {"min": {"cpu": "1"}, "max": {"cpu": "2"}},
    }));
    let rt = start_sigs(&server).await;
    server.add_pod(FakeApiServer::pod("small", OURS, "1"));
    until(5, "small bound", || {
        server.node_of("default/small").is_some()
    })
    .await;
    server.add_pod(FakeApiServer::pod("big", OURS, "2"));
    until(5, "big reported", || {
        !server.events_for("default/big").is_empty()
    })
    .await;
    let note = server.events_for("default/big")[0].1.clone();
    assert!(
        note.contains(
            "Pod default/big is rejected in PreFilter because ElasticQuota default is more than Max"
        ),
        "{note}"
    );
    assert_eq!(server.node_of("default/big"), None);
    rt.stop().await;
}

/// The cases of `conformance/cases-gangs-v1.35/` (kube-scheduler v1.35's gangs:
/// Workloads, pods joined by `spec.workloadRef`, Permit waits) through `run` with
/// `--kubernetes-version 1.35`, compared with the case's expected lines: each pod's
/// node, the message of its first FailedScheduling event, or no attempt at all for a
/// pod GangScheduling's PreEnqueue holds; for the bound pods, how many each node took. All of a case's objects are on the server
/// before the runtime starts, as `simulate` has them all at one instant. The case
/// whose gang times out after 5 minutes is left to `simulate`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_agrees_with_the_v1_35_gang_cases() {
    let folder = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../conformance/cases-gangs-v1.35"
    );
    let mut cases: Vec<std::path::PathBuf> = std::fs::read_dir(folder)
        .expect("the cases' folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter(|p| !p.to_string_lossy().contains("times-out"))
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 6, "cases in {folder}");
    let mut disagreements = Vec::new();
    for case in &cases {
        disagreements.extend(run_v1_35_case(case).await);
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// One v1.35 case through `run`: what disagrees with its expected lines.
async fn run_v1_35_case(case: &std::path::Path) -> Vec<String> {
    let server = FakeApiServer::start().await;
    let text = std::fs::read_to_string(case).expect("case");
    for document in serde_norway::Deserializer::from_str(&text) {
        let value: serde_json::Value =
            serde::Deserialize::deserialize(document).expect("a YAML document");
        match value["kind"].as_str() {
            Some("Node") => server.add_node(serde_json::from_value(value).expect("node")),
            Some("Pod") => server.add_pod_value(value),
            Some("Workload") => server.apply_value(value),
            Some(other) => panic!("{}: a {other} the test does not create", case.display()),
            None => {}
        }
    }
    let config = kubesched_config::KubeSchedulerConfiguration::from_yaml_str(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
",
        "test.yaml",
    )
    .expect("config")
    .config;
    let rt = Runtime::new(server.client(), config)
        .kubernetes_version(
            Some(KubernetesVersion::V1_35),
            vec!["GenericWorkload=true,GangScheduling=true".into()],
        )
        .start()
        .await
        .expect("run takes v1.35's gangs");
    let expected = std::fs::read_to_string(case.with_extension("expected.jsonl")).expect("lines");
    let lines: Vec<serde_json::Value> = expected
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let decided = |line: &serde_json::Value| {
        let pod = line["pod"].as_str().unwrap_or_default();
        match line["node"].as_str() {
            Some(_) => server.node_of(pod).is_some(),
            None if line.get("gated").is_some() => true,
            None => !server.events_for(pod).is_empty(),
        }
    };
    until(10, "every pod decided", || lines.iter().all(decided)).await;
    // Give a pod held at PreEnqueue, or one that should stay pending, time to show
    // otherwise.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (mut got_all, mut want_all) = (Vec::new(), Vec::new());
    let (mut got_nodes, mut want_nodes) = (BTreeMap::new(), BTreeMap::new());
    for line in &lines {
        let pod = line["pod"].as_str().unwrap_or_default();
        let events: Vec<String> = server.events_for(pod).into_iter().map(|e| e.1).collect();
        let outcome = |node: Option<&str>, message: Option<&str>| match (node, message) {
            (Some(_), _) => "bound".to_string(),
            (None, Some(message)) => format!("{pod} pending: {message}"),
            (None, None) => format!("{pod} not attempted"),
        };
        let node = server.node_of(pod);
        got_all.push(outcome(node.as_deref(), events.first().map(String::as_str)));
        want_all.push(outcome(line["node"].as_str(), line["message"].as_str()));
        *got_nodes.entry(node).or_insert(0) += 1;
        *want_nodes
            .entry(line["node"].as_str().map(String::from))
            .or_insert(0) += 1;
    }
    rt.stop().await;
    // kube-scheduler (and `run`) breaks equal scores at random, `simulate` takes the
    // first node; the cases' nodes are alike, so what is the same is how many pods
    // each node took.
    let counts = |nodes: BTreeMap<Option<String>, usize>| {
        let mut counts: Vec<usize> = nodes
            .into_iter()
            .filter(|(n, _)| n.is_some())
            .map(|(_, c)| c)
            .collect();
        counts.sort();
        counts
    };
    got_all.push(format!("pods per node: {:?}", counts(got_nodes)));
    want_all.push(format!("pods per node: {:?}", counts(want_nodes)));
    if got_all == want_all {
        return Vec::new();
    }
    vec![format!(
        "{}:\n  run:      {got_all:?}\n  expected: {want_all:?}",
        case.display()
    )]
}
