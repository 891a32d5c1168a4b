//! kube-scheduler v1.36's gang scheduling against kubesched's: the cases of
//! `conformance/cases-gangs/` (a gang that fits, one with more pods than minCount, one a
//! pod short, one that does not fit, one that needs preemption, two gangs competing for
//! one pool, a gang among single pods, pods naming a PodGroup that does not exist), then
//! those of `conformance/cases-gangs-topology/` with `TopologyAwareWorkloadScheduling`
//! on too (PodGroups tried per rack). For each case the real
//! kube-scheduler, started with `--feature-gates=GenericWorkload=true,GangScheduling=true`
//! on an API server that serves scheduling.k8s.io/v1alpha2, places the case's objects
//! (created in order with `kubectl apply`); `kubesched simulate` with the same gates runs
//! the same file. Compared, per PodGroup (and per pod outside any group): the nodes the
//! pods went to, their PodScheduled messages, which pods were never attempted (held by
//! GangScheduling's PreEnqueue: no condition at all), and the PodGroupScheduled
//! condition (status, reason, message) the group's cycle wrote first (a straggler's
//! later cycle may turn it False on the real scheduler's clock; `simulate` has one
//! instant). A group's pods are compared as a sorted list:
//! kube-scheduler attempts the pod whose arrival met the quorum first, and breaks score
//! ties at random, so only the multiset is the same. And `--from-cluster`'s dump of the
//! API server reads the case's PodGroups, which the loader takes; and `kubesched
//! record`, running through all the cases, writes each PodGroup's creation and deletion.
//! Then `kubesched run`, with deploy/'s service account, takes kube-scheduler's place
//! and schedules every case again, with the same gates, compared the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams};
use kubesched_framework::{Features, KubernetesVersion};
use kubesched_sim::simulate::PodOutcome;
use kubesched_sim::{SimulationOptions, prepare, scenario};

use super::support::realcluster::Cluster;
use super::{KubeScheduler, kubectl, kubectl_apply, repo_file, until};

const GATES: &str = "GenericWorkload=true,GangScheduling=true";

/// The gates of `conformance/cases-gangs-topology/` (placements).
const TOPOLOGY_GATES: &str =
    "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true";

/// What one scheduler did with a case: per group (`group/NAME`, or `pod/NAME` for a pod
/// outside any group) the sorted outcomes of its pods, and per PodGroup its
/// PodGroupScheduled condition (`-` when none was written).
#[derive(Debug, Default, PartialEq)]
struct Placement {
    pods: BTreeMap<String, Vec<String>>,
    conditions: BTreeMap<String, String>,
}

/// The case at `path`, loaded as `simulate` loads it.
fn load_case(path: &Path) -> scenario::Scenario {
    let text = std::fs::read_to_string(path).expect("case");
    scenario::load(&[scenario::Source {
        name: path.display().to_string(),
        text,
    }])
    .expect("case loads")
}

/// The group a pod of the case belongs to, by pod name.
fn groups_of(path: &Path) -> BTreeMap<String, String> {
    let scenario = load_case(path);
    scenario
        .pods
        .iter()
        .map(|p| {
            let name = p.metadata.name.clone().unwrap_or_default();
            let group = p
                .spec
                .as_ref()
                .and_then(|s| s.scheduling_group.as_ref())
                .and_then(|g| g.pod_group_name.clone())
                .map_or_else(|| format!("pod/{name}"), |g| format!("group/{g}"));
            (name, group)
        })
        .collect()
}

/// kubesched's placement of the case (`simulate --preemption` with the gates).
fn simulated(path: &Path, gates: &str) -> Placement {
    let scenario = load_case(path);
    let options = SimulationOptions {
        preemption: true,
        features: Features::with_gates(KubernetesVersion::V1_36, [gates]).expect("gates"),
        ..Default::default()
    };
    let mut prepared =
        prepare(&scenario, &options, &kubesched_plugins::in_tree_registry()).expect("prepare");
    let mut results = Vec::new();
    let detail = prepared.detail;
    prepared
        .run_attempts(|a| {
            results.push(a.to_result(detail));
            Ok::<_, Infallible>(())
        })
        .expect("run");
    let groups = groups_of(path);
    let mut placement = Placement::default();
    // Each pod's last line: a group that waited for its preemption is attempted
    // again once the victims are gone (as the real scheduler's next cycle, once the
    // test has played the kubelet and deleted them).
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for r in results {
        let name = r.pod.rsplit('/').next().unwrap_or_default().to_string();
        let outcome = match r.outcome {
            PodOutcome::Scheduled(node) => node,
            PodOutcome::Gated(_) => "not attempted".into(),
            PodOutcome::Unschedulable(m) | PodOutcome::Nominated { message: m, .. } => {
                format!("pending: {m}")
            }
            PodOutcome::Ignored => "ignored".into(),
        };
        last.insert(name, outcome);
    }
    for (name, outcome) in last {
        placement
            .pods
            .entry(groups[&name].clone())
            .or_default()
            .push(outcome);
    }
    // The condition each group's first cycle wrote, as for the real scheduler.
    for (key, c) in &prepared.pod_groups {
        let name = key.rsplit('/').next().unwrap_or_default();
        placement
            .conditions
            .entry(name.to_string())
            .or_insert_with(|| {
                format!(
                    "{}/{}/{}",
                    if c.status { "True" } else { "False" },
                    c.reason,
                    c.message
                )
            });
    }
    placement.pods.values_mut().for_each(|v| v.sort());
    placement
}

/// Plays the kubelet for preemption victims: a pod being deleted (its
/// `deletionTimestamp` set, as preemption leaves it) is deleted for good a second
/// after it was first seen so (`seen`). Not at once: kube-scheduler writes a group's
/// condition through its asynchronous API calls, and a newer write for the same
/// PodGroup replaces one not sent yet, so a group placed again a few milliseconds
/// after it waited for its preemption may never show that it waited.
async fn delete_terminating(
    api: &Api<Pod>,
    pods: &[Pod],
    seen: &mut BTreeMap<String, std::time::Instant>,
) {
    for p in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
    {
        let name = p.metadata.name.as_deref().unwrap_or_default();
        let since = *seen
            .entry(name.to_string())
            .or_insert_with(std::time::Instant::now);
        if since.elapsed() < std::time::Duration::from_secs(1) {
            continue;
        }
        let _ = api
            .delete(
                name,
                &DeleteParams {
                    grace_period_seconds: Some(0),
                    ..DeleteParams::default()
                },
            )
            .await;
    }
}

/// Whether a pod is decided: bound, or turned down and not nominated (a nominated pod
/// waits for its victims to go).
fn is_decided(p: &Pod) -> bool {
    let nominated = p
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let outcome = outcome_of(p);
    outcome != "not attempted" && !(nominated && outcome.starts_with("pending"))
}

/// The PodGroups' PodGroupScheduled conditions, by name (`-` when none).
fn conditions(cluster: &Cluster) -> BTreeMap<String, String> {
    let out = kubectl(cluster, &["get", "podgroups", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).expect("podgroups json");
    let mut map = BTreeMap::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        map.insert(name.to_string(), condition_of(item));
    }
    map
}

/// The v1alpha2 PodGroups of the `default` namespace.
fn pod_groups(client: &kube::Client) -> Api<kube::api::DynamicObject> {
    let resource = kube::api::ApiResource {
        group: "scheduling.k8s.io".into(),
        version: "v1alpha2".into(),
        api_version: "scheduling.k8s.io/v1alpha2".into(),
        kind: "PodGroup".into(),
        plural: "podgroups".into(),
    };
    Api::namespaced_with(client.clone(), "default", &resource)
}

/// The first PodGroupScheduled condition each PodGroup gets, from a watch started now:
/// every change comes in order, so a True that a straggler's later cycle turns False
/// within milliseconds is seen, where polling under load could miss it. The map fills
/// while the returned task runs.
async fn first_conditions(
    client: &kube::Client,
) -> (
    std::sync::Arc<std::sync::Mutex<BTreeMap<String, String>>>,
    tokio::task::JoinHandle<()>,
) {
    use futures::TryStreamExt;
    let api = pod_groups(client);
    let first = std::sync::Arc::new(std::sync::Mutex::new(BTreeMap::new()));
    let rv = api
        .list(&ListParams::default())
        .await
        .expect("list PodGroups")
        .metadata
        .resource_version
        .unwrap_or_default();
    let stream = api
        .watch(&kube::api::WatchParams::default().timeout(290), &rv)
        .await
        .expect("watch PodGroups");
    let seen = first.clone();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Ok(Some(event)) = stream.try_next().await {
            if let kube::api::WatchEvent::Added(g) | kube::api::WatchEvent::Modified(g) = event {
                let c = condition_of(&g.data);
                if c != "-" {
                    let name = g.metadata.name.clone().unwrap_or_default();
                    seen.lock().unwrap().entry(name).or_insert(c);
                }
            }
        }
    });
    (first, task)
}

/// A PodGroup's PodGroupScheduled condition as `status/reason/message`, `-` when none.
fn condition_of(group: &serde_json::Value) -> String {
    group["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PodGroupScheduled")
        .map_or("-".to_string(), |c| {
            format!(
                "{}/{}/{}",
                c["status"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default()
            )
        })
}

/// A pod's outcome in the cluster: its node, `pending: MESSAGE` once PodScheduled is
/// False, `not attempted` while it has no PodScheduled condition; `None` while it is
/// being decided (scheduled but not yet bound).
fn outcome_of(p: &Pod) -> String {
    if let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone()) {
        return node;
    }
    let condition = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
    match condition {
        Some(c) if c.status == "False" => {
            format!("pending: {}", c.message.clone().unwrap_or_default())
        }
        _ => "not attempted".into(),
    }
}

/// Creates the case's objects, its PodGroups last: the pods wait for their group at
/// PreEnqueue and enter the queue together when it appears, so that one PodGroup cycle
/// attempts them all, as the one-instant simulation does. (Created in file order, a
/// pod that arrives after its group was placed gets a cycle of its own, whose failure
/// turns the group's condition False: kube-scheduler does so too.) With `log`, the
/// real kube-scheduler's (at `--v=3`), the PodGroups wait until it has logged every
/// pod's add event: a pod its informer had not yet seen would come after the group.
async fn apply_pod_groups_last(cluster: &Cluster, path: &Path, log: Option<&Path>) {
    let text = std::fs::read_to_string(path).expect("case");
    let (mut groups, mut rest) = (String::new(), String::new());
    for doc in text.split("\n---") {
        let is_group = doc.lines().any(|l| l.trim() == "kind: PodGroup");
        let to = if is_group { &mut groups } else { &mut rest };
        to.push_str(doc);
        to.push_str("\n---\n");
    }
    let dir = std::env::temp_dir().join(format!("kubesched-gang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let logged_before = log.map_or(0, |l| std::fs::metadata(l).map_or(0, |m| m.len()));
    let apply = |name: &str, text: &str| {
        if text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim() == "---" || l.trim_start().starts_with('#'))
        {
            return;
        }
        let file = dir.join(name);
        std::fs::write(&file, text).expect("write the split case");
        kubectl_apply(cluster, &file);
    };
    apply("objects.yaml", &rest);
    if let Some(log) = log {
        let pods = unassigned_pods(path);
        until(30, "kube-scheduler's add event of each pod", || async {
            let text = std::fs::read(log).ok()?;
            let text = String::from_utf8_lossy(text.get(logged_before as usize..)?);
            pods.iter()
                .all(|p| {
                    text.contains(&format!(
                        "\"Add event for unscheduled pod\" pod=\"default/{p}\""
                    ))
                })
                .then_some(())
        })
        .await;
    }
    apply("podgroups.yaml", &groups);
}

/// The names of the case's pods that no `nodeName` binds.
fn unassigned_pods(path: &Path) -> Vec<String> {
    let scenario = load_case(path);
    scenario
        .pods
        .iter()
        .filter(|p| p.spec.as_ref().is_none_or(|s| s.node_name.is_none()))
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

/// kube-scheduler's placement of the case, once every pod that kubesched attempted has
/// a node or a message (the others are given a second to show they stay unattempted).
async fn real(
    cluster: &Cluster,
    client: &kube::Client,
    path: &Path,
    want: &Placement,
    log: Option<&Path>,
) -> Placement {
    let (watched, watch) = first_conditions(client).await;
    apply_pod_groups_last(cluster, path, log).await;
    let groups = groups_of(path);
    let decided = want
        .pods
        .values()
        .flatten()
        .filter(|o| o.as_str() != "not attempted")
        .count();
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    // Until every pod is decided, and a second more: the PodGroupScheduled condition
    // each group's cycle wrote first is kept (`first_conditions`). A later cycle of a
    // straggler that fits nowhere (retried once the group's bindings come) turns a True
    // condition False, in kube-scheduler as in `run`, on their clocks; `simulate`'s one
    // instant has the group cycle's alone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut decided_at = None;
    let mut terminating = BTreeMap::new();
    loop {
        if let Ok(pods) = api.list(&ListParams::default()).await {
            delete_terminating(&api, &pods.items, &mut terminating).await;
            if decided_at.is_none()
                && pods.items.iter().filter(|p| is_decided(p)).count() >= decided
            {
                decided_at = Some(std::time::Instant::now());
            }
        }
        if decided_at.is_some_and(|t| t.elapsed() >= std::time::Duration::from_secs(1)) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after 30s waiting for {}: pods decided",
            path.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    watch.abort();
    let first = watched.lock().unwrap().clone();
    let mut placement = Placement::default();
    // The pods the case binds itself (`nodeName`) are not scheduled, and `simulate`
    // prints no line for them.
    let scheduled = unassigned_pods(path);
    for p in api.list(&ListParams::default()).await.expect("pods").items {
        let name = p.metadata.name.clone().unwrap_or_default();
        if !scheduled.contains(&name) {
            continue;
        }
        let group = groups
            .get(&name)
            .cloned()
            .unwrap_or_else(|| format!("pod/{name}"));
        placement
            .pods
            .entry(group)
            .or_default()
            .push(outcome_of(&p));
    }
    placement.pods.values_mut().for_each(|v| v.sort());
    let created = conditions(cluster);
    // `simulate --from-cluster` reads the same PodGroups, and the loader takes them as
    // it takes the case's YAML.
    let dump = kubesched_kube::cluster_dump::dump(client)
        .await
        .expect("the --from-cluster dump");
    let loaded = scenario::load(&[scenario::Source {
        name: "cluster".into(),
        text: dump.text.clone(),
    }])
    .expect("the dump loads");
    let mut dumped: Vec<&str> = loaded
        .objects
        .iter()
        .filter(|o| o.kind == "PodGroup" && o.value["apiVersion"] == "scheduling.k8s.io/v1alpha2")
        .map(|o| o.name.as_str())
        .collect();
    dumped.sort_unstable();
    assert_eq!(
        dumped,
        created.keys().map(String::as_str).collect::<Vec<_>>(),
        "{}: the PodGroups --from-cluster reads ({:?})",
        path.display(),
        dump.warnings
    );
    placement.conditions = created
        .into_iter()
        .map(|(name, now)| match first.get(&name) {
            Some(c) if *c != now => {
                eprintln!(
                    "realcluster: {}: PodGroup {name} went from {c:?} to {now:?} (a later cycle)",
                    path.display()
                );
                (name, c.clone())
            }
            _ => (name, now),
        })
        .filter(|(_, c)| c != "-")
        .collect();
    placement
}

/// Deletes the case's pods, PodGroups (their protection finalizer taken off: no
/// controller runs here) and nodes, and waits until they are gone.
async fn clear(cluster: &Cluster, client: &kube::Client) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    let _ = pods.delete_collection(&force, &ListParams::default()).await;
    for name in conditions(cluster).keys() {
        kubectl(
            cluster,
            &[
                "patch",
                "podgroup",
                name,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ],
        );
        kubectl(cluster, &["delete", "podgroup", name, "--wait=false"]);
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let _ = nodes
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await;
    until(30, "pods, PodGroups and nodes gone", || {
        let (pods, nodes) = (pods.clone(), nodes.clone());
        async move {
            let p = pods.list(&ListParams::default()).await.ok()?.items.len();
            let n = nodes.list(&ListParams::default()).await.ok()?.items.len();
            (p == 0 && n == 0).then_some(())
        }
    })
    .await;
    until(30, "PodGroups gone", || async {
        conditions(cluster).is_empty().then_some(())
    })
    .await;
}

/// The cases of `conformance/FOLDER`, in name order.
fn cases_in(folder: &str) -> Vec<PathBuf> {
    let dir = repo_file(&format!("conformance/{folder}"));
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the cases' folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    cases.sort();
    cases
}

/// Every case, kube-scheduler against `kubesched simulate`, then `kubesched run` (as
/// `default-scheduler`, the real one stopped) against `simulate`: all disagreements
/// reported together.
pub async fn gangs(cluster: &mut Cluster) {
    let client = cluster.admin().await;
    let gates = format!("--feature-gates={GATES}");
    // At --v=3 it logs each pod's add event, which the cases wait for.
    let kube_scheduler = KubeScheduler::start(cluster, &[gates.as_str(), "--v=3"]);
    let log = cluster.state.join("logs/kube-scheduler.log");
    let cases = cases_in("cases-gangs");
    assert_eq!(cases.len(), 8, "cases in conformance/cases-gangs");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (started, recording) = tokio::sync::oneshot::channel::<()>();
    let recorder = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut out = Vec::new();
            let stop = async {
                let _ = stopped.await;
            };
            let recorded = kubesched_kube::record::record_with_start_hook(
                &client,
                &mut out,
                "gang cases",
                None,
                stop,
                |_| {
                    let _ = started.send(());
                },
            )
            .await;
            (recorded, out)
        })
    };
    recording.await.expect("the recorder lists the cluster");
    let mut disagreements = Vec::new();
    let mut created = BTreeSet::new();
    for case in &cases {
        let want = simulated(case, GATES);
        let got = real(cluster, &client, case, &want, Some(&log)).await;
        created.extend(conditions(cluster).into_keys());
        if got != want {
            disagreements.push(format!(
                "{}:\n  kube-scheduler: {got:?}\n  kubesched:      {want:?}",
                case.display()
            ));
        }
        clear(cluster, &client).await;
    }
    // The recorder saw every PodGroup come and go.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let _ = stop.send(());
    let (recorded, out) = recorder.await.expect("recorder");
    let recorded = recorded.expect("record");
    assert!(
        recorded.warnings.iter().all(|w| !w.contains("v1alpha2")),
        "{:?}",
        recorded.warnings
    );
    let (mut applied, mut deleted) = (BTreeSet::new(), BTreeSet::new());
    for line in String::from_utf8(out).expect("utf-8").lines() {
        let line: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let pod_group = |o: &serde_json::Value| {
            (o["kind"] == "PodGroup" && o["apiVersion"] == "scheduling.k8s.io/v1alpha2")
                .then(|| o["metadata"]["name"].as_str().or(o["name"].as_str()))
                .flatten()
                .map(str::to_string)
        };
        applied.extend(line.get("apply").and_then(pod_group));
        deleted.extend(line.get("delete").and_then(pod_group));
    }
    assert!(!created.is_empty());
    assert_eq!(
        (&applied, &deleted),
        (&created, &created),
        "the PodGroups kubesched record wrote (applied, deleted)"
    );
    drop(kube_scheduler);
    // The placements, against kube-scheduler with TopologyAwareWorkloadScheduling on
    // (the API server keeps the PodGroups' schedulingConstraints with its gate on).
    let gates = format!("--feature-gates={TOPOLOGY_GATES}");
    let kube_scheduler = KubeScheduler::start(cluster, &[gates.as_str(), "--v=3"]);
    let topology = cases_in("cases-gangs-topology");
    assert_eq!(
        topology.len(),
        7,
        "cases in conformance/cases-gangs-topology"
    );
    for case in &topology {
        let want = simulated(case, TOPOLOGY_GATES);
        let got = real(cluster, &client, case, &want, Some(&log)).await;
        if got != want {
            disagreements.push(format!(
                "{}:\n  kube-scheduler: {got:?}\n  kubesched:      {want:?}",
                case.display()
            ));
        }
        clear(cluster, &client).await;
    }
    drop(kube_scheduler);
    let config = super::scheduler_config(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
",
    );
    // As deploy/ runs it: its service account, bound to system:kube-scheduler, which
    // lets it watch PodGroups and write their status.
    kubectl_apply(cluster, &repo_file("deploy/serviceaccount.yaml"));
    let token = super::service_account_token(cluster, "kube-system", "my-scheduler").await;
    let as_deployed = super::config_with_token(cluster, &token).await;
    for (gates, cases) in [(GATES, &cases), (TOPOLOGY_GATES, &topology)] {
        let runs = run_cases(cluster, &client, &as_deployed, &config, gates, cases).await;
        disagreements.extend(runs);
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// `kubesched run` with `gates` schedules each case, compared with `simulate`: the
/// disagreements.
async fn run_cases(
    cluster: &Cluster,
    client: &kube::Client,
    as_deployed: &kube::Config,
    config: &kubesched_config::KubeSchedulerConfiguration,
    gates: &str,
    cases: &[PathBuf],
) -> Vec<String> {
    let mut disagreements = Vec::new();
    let running = kubesched_kube::Runtime::from_kube_config(as_deployed, config.clone())
        .expect("clients")
        .kubernetes_version(None, vec![gates.to_string()])
        .start()
        .await
        .unwrap_or_else(|e| panic!("kubesched run starts with {gates}: {e}"));
    // kubesched bound each case's pods, not a kube-scheduler left running, and no
    // more than it showed.
    let scheduled = || {
        super::metric(
            &running.metrics().encode(),
            "scheduler_schedule_attempts_total{result=\"scheduled\"",
        ) as usize
    };
    for case in cases {
        let want = simulated(case, gates);
        let before = scheduled();
        let got = real(cluster, client, case, &want, None).await;
        if got != want {
            disagreements.push(format!(
                "{} ({gates}):\n  kubesched run:      {got:?}\n  kubesched simulate: {want:?}",
                case.display()
            ));
        }
        let placed = want
            .pods
            .values()
            .flatten()
            .filter(|o| !o.starts_with("pending") && *o != "not attempted")
            .count();
        // Pods that stay pending stay so: give a late binding time to show.
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let bound = scheduled() - before;
        if bound != placed {
            disagreements.push(format!(
                "{}: kubesched run bound {bound} pods, simulate {placed}",
                case.display()
            ));
        }
        clear(cluster, client).await;
    }
    running.stop().await;
    disagreements
}
