//! Runs every case of `conformance/cases-gangs/` (the repository's own: kube-scheduler
//! v1.36's gang scheduling, the lines checked against the real kube-scheduler v1.36 by
//! crates/kubesched-kube/tests/realcluster_scenarios/gang.rs, each case saying which
//! function each line follows) as `kubesched simulate --feature-gates
//! GenericWorkload=true,GangScheduling=true --preemption --format jsonl` runs it, and
//! compares each line field by field. With the gates off the same cases schedule the
//! pods one by one, as before.
//!
//! The same for `conformance/cases-gangs-v1.35/` (kube-scheduler v1.35's gang
//! scheduling: v1alpha1 Workloads, `spec.workloadRef`, Permit waits, the lines derived
//! from v1.35.4's source) under `--kubernetes-version 1.35`.

mod common;

use std::path::{Path, PathBuf};

use common::cases::{assert_agree, cases_in, load};
use kubesched_framework::{Features, KubernetesVersion};
use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate};
use serde_json::Value;

fn cases() -> Vec<PathBuf> {
    cases_in("cases-gangs")
}

fn lines(path: &Path, gates: &[&str]) -> Result<Vec<Value>, String> {
    lines_under(KubernetesVersion::V1_36, path, gates)
}

fn lines_under(
    version: KubernetesVersion,
    path: &Path,
    gates: &[&str],
) -> Result<Vec<Value>, String> {
    let scenario = load(path)?;
    let options = SimulationOptions {
        preemption: true,
        features: Features::with_gates(version, gates.iter().copied())?,
        ..Default::default()
    };
    let sim = simulate(&scenario, &options).map_err(|e| format!("simulate: {e}"))?;
    Ok(sim.results.iter().map(output::to_json).collect())
}

#[test]
fn gang_cases_agree_with_kube_scheduler() {
    assert_agree("cases-gangs", 8, |c| {
        lines(c, &["GenericWorkload=true,GangScheduling=true"])
    });
}

/// `conformance/cases-gangs-topology/`: v1.36's placements under
/// `TopologyAwareWorkloadScheduling`, checked against the real kube-scheduler v1.36.1
/// by the same real-cluster scenario.
#[test]
fn topology_cases_agree_with_kube_scheduler() {
    assert_agree("cases-gangs-topology", 7, |c| {
        lines(
            c,
            &["GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"],
        )
    });
}

/// Without the gate, a PodGroup's topology constraint is not read: the group is
/// placed on the whole cluster, as before.
#[test]
fn without_the_gate_the_topology_constraint_is_not_read() {
    let case = cases_in("cases-gangs-topology")
        .into_iter()
        .find(|c| c.ends_with("topology-one-rack-fits.yaml"))
        .expect("case");
    let on = lines(
        &case,
        &["GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"],
    )
    .unwrap();
    let off = lines(&case, &["GenericWorkload=true,GangScheduling=true"]).unwrap();
    let nodes = |lines: &[Value]| -> Vec<String> {
        lines
            .iter()
            .map(|l| l["node"].as_str().unwrap_or("-").to_string())
            .collect()
    };
    assert_eq!(nodes(&on), ["b1", "b2", "b1"]);
    // u1, the 8-cpu node without a rack, takes every pod.
    assert_eq!(nodes(&off), ["u1", "u1", "u1"]);
}

#[test]
fn v1_35_gang_cases_follow_kube_scheduler_v1_35_source() {
    assert_agree("cases-gangs-v1.35", 7, |c| {
        lines_under(
            KubernetesVersion::V1_35,
            c,
            &["GenericWorkload=true,GangScheduling=true"],
        )
    });
}

/// `(pod, node or message or "gated")` of each line of the v1.35 case `name`.
fn outcomes(version: KubernetesVersion, name: &str, gates: &[&str]) -> Vec<(String, String)> {
    let case = cases_in("cases-gangs-v1.35")
        .into_iter()
        .find(|c| c.ends_with(name))
        .expect("case");
    lines_under(version, &case, gates)
        .unwrap()
        .iter()
        .map(|v| {
            let outcome = v["node"]
                .as_str()
                .or_else(|| v["message"].as_str())
                .unwrap_or("gated");
            (
                v["pod"].as_str().unwrap_or("").to_string(),
                outcome.to_string(),
            )
        })
        .collect()
}

#[test]
fn under_v1_35_with_the_gates_off_workload_pods_are_scheduled_pod_by_pod() {
    let lines = outcomes(
        KubernetesVersion::V1_35,
        "gang-one-short-times-out.yaml",
        &[],
    );
    let placed: Vec<&str> = lines.iter().map(|(_, o)| o.as_str()).take(2).collect();
    assert_eq!(placed, ["n1", "n2"], "{lines:?}");
}

#[test]
fn each_version_reads_only_its_own_api() {
    // v1.36 has no v1alpha1 Workload nor spec.workloadRef: the pods of a v1.35 gang
    // one pod short are scheduled as any pod.
    let lines = outcomes(
        KubernetesVersion::V1_36,
        "gang-one-short.yaml",
        &["GenericWorkload=true,GangScheduling=true"],
    );
    assert!(lines.iter().all(|(_, o)| o.starts_with('n')), "{lines:?}");
    // v1.35 has no v1alpha2 PodGroup nor spec.schedulingGroup: v1.36's gang that does
    // not fit is placed pod by pod (no PodGroup cycle, no PreEnqueue hold).
    let case = cases()
        .into_iter()
        .find(|c| c.ends_with("gang-does-not-fit.yaml"))
        .expect("case");
    let lines = lines_under(
        KubernetesVersion::V1_35,
        &case,
        &["GenericWorkload=true,GangScheduling=true"],
    )
    .unwrap();
    let placed = lines.iter().filter(|l| l["node"].is_string()).count();
    assert_eq!(placed, 2, "{lines:?}");
}

#[test]
fn under_v1_35_gang_scheduling_without_generic_workload_is_refused() {
    let e = Features::with_gates(KubernetesVersion::V1_35, ["GangScheduling=true"]).unwrap_err();
    assert_eq!(
        e,
        "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"
    );
}

#[test]
fn with_the_gates_off_a_gang_is_scheduled_pod_by_pod() {
    let case = cases()
        .into_iter()
        .find(|c| c.ends_with("gang-does-not-fit.yaml"))
        .expect("case");
    let lines = lines(&case, &[]).unwrap();
    // Two pods placed, one pending: no PodGroup cycle, no GangScheduling.
    let placed = lines.iter().filter(|l| l["node"].is_string()).count();
    assert_eq!(placed, 2, "{lines:?}");
}

/// `kubesched bench` keeps only the decisions (`Prepared::run_decisions`); with the gates
/// on it must run the same PodGroup cycles and place the same pods on the same nodes as
/// the lines.
#[test]
fn bench_decisions_run_the_same_pod_group_cycles() {
    for case in cases() {
        let expected: std::collections::BTreeMap<String, Option<String>> =
            lines(&case, &["GenericWorkload=true,GangScheduling=true"])
                .unwrap()
                .iter()
                .map(|l| {
                    let node = l["node"].as_str().map(str::to_string);
                    (l["pod"].as_str().unwrap_or_default().to_string(), node)
                })
                .collect();
        let scenario = load(&case).unwrap();
        let options = SimulationOptions {
            preemption: true,
            features: Features::with_gates(
                KubernetesVersion::V1_36,
                ["GenericWorkload=true,GangScheduling=true"],
            )
            .unwrap(),
            ..Default::default()
        };
        let registry = kubesched_plugins::in_tree_registry();
        let mut prepared = kubesched_sim::prepare(&scenario, &options, &registry).unwrap();
        let pods: Vec<String> = prepared
            .queue
            .iter()
            .map(|q| q.pod_info.key().to_string())
            .collect();
        let nodes = prepared.node_order();
        let decided: std::collections::BTreeMap<String, Option<String>> = pods
            .into_iter()
            .zip(prepared.run_decisions())
            .map(|(pod, d)| match d {
                kubesched_sim::Decision::Scheduled(i) => (pod, Some(nodes[i].clone())),
                _ => (pod, None),
            })
            .collect();
        assert_eq!(decided, expected, "{}", case.display());
    }
}

#[test]
fn a_gate_whose_dependency_is_off_is_refused() {
    let e = Features::with_gates(KubernetesVersion::V1_36, ["GangScheduling=true"]).unwrap_err();
    assert_eq!(
        e,
        "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"
    );
}

/// A PreFilter that fails with an error for the pod `e-2`, to see a PodGroup cycle end.
struct FailOn;

impl kubesched_framework::Plugin for FailOn {
    fn name(&self) -> &str {
        "FailOn"
    }
    kubesched_framework::extension_points!(PreFilter);
}

impl kubesched_framework::PreFilterPlugin for FailOn {
    fn pre_filter(
        &self,
        _: &mut kubesched_framework::CycleState,
        pod: &kubesched_framework::PodInfo,
        _: &kubesched_framework::Snapshot,
    ) -> (
        Option<kubesched_framework::PreFilterResult>,
        kubesched_framework::Status,
    ) {
        let status = if pod.name() == "e-2" {
            kubesched_framework::Status::error("boom")
        } else {
            kubesched_framework::Status::success()
        };
        (None, status)
    }
}

/// `(pod, node or message)` per line and the PodGroup conditions of `text` run with the
/// gates and `FailOn` registered.
fn run_text(text: &str) -> (Vec<(String, String)>, Vec<String>) {
    let scenario = scenario::load(&[Source {
        name: "x.yaml".into(),
        text: text.into(),
    }])
    .expect("load");
    let options = SimulationOptions {
        features: Features::with_gates(
            KubernetesVersion::V1_36,
            ["GenericWorkload=true,GangScheduling=true"],
        )
        .unwrap(),
        ..Default::default()
    };
    let mut registry = kubesched_plugins::in_tree_registry();
    registry
        .register("FailOn", |_, _| {
            Ok(std::sync::Arc::new(FailOn) as std::sync::Arc<dyn kubesched_framework::Plugin>)
        })
        .unwrap();
    let mut prepared = kubesched_sim::prepare(&scenario, &options, &registry).expect("prepare");
    let mut lines = Vec::new();
    prepared
        .run_attempts(|a| {
            let v = output::to_json(&a.to_result(kubesched_sim::simulate::Detail::All));
            let outcome = v["node"]
                .as_str()
                .map(str::to_string)
                .or_else(|| v["message"].as_str().map(str::to_string))
                .unwrap_or_else(|| "gated".into());
            lines.push((v["pod"].as_str().unwrap_or_default().to_string(), outcome));
            Ok::<_, std::convert::Infallible>(())
        })
        .unwrap();
    let conditions = prepared
        .pod_groups
        .iter()
        .map(|(g, c)| format!("{g} {} {} {}", c.status, c.reason, c.message))
        .collect();
    (lines, conditions)
}

/// Nodes, a gang of three pods and a configuration whose profiles are given.
fn gang_text(profiles: &str, schedulers: [&str; 3]) -> String {
    let mut text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n{profiles}\n---\napiVersion: v1\nkind: Node\nmetadata: {{name: n1}}\nstatus: {{allocatable: {{cpu: '8', memory: 8Gi, pods: '110'}}}}\n---\napiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {{name: e}}\nspec: {{schedulingPolicy: {{gang: {{minCount: 3}}}}}}\n"
    );
    for (i, s) in schedulers.iter().enumerate() {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: e-{}}}\nspec: {{schedulerName: {s}, schedulingGroup: {{podGroupName: e}}, containers: [{{name: c, image: x}}]}}\n",
            i + 1
        ));
    }
    text
}

#[test]
fn an_error_ends_the_pod_group_cycle_for_the_whole_group() {
    let profiles =
        "- schedulerName: default-scheduler\n  plugins: {preFilter: {enabled: [{name: FailOn}]}}";
    let (lines, conditions) = run_text(&gang_text(profiles, ["default-scheduler"; 3]));
    let group =
        "failed to schedule other pod from a pod group: running PreFilter plugin \"FailOn\": boom";
    assert_eq!(
        lines,
        vec![
            ("default/e-1".to_string(), group.to_string()),
            (
                "default/e-2".to_string(),
                "running PreFilter plugin \"FailOn\": boom".to_string()
            ),
            ("default/e-3".to_string(), group.to_string()),
        ]
    );
    assert_eq!(
        conditions,
        vec![format!("default/e false SchedulerError {group}")]
    );
}

#[test]
fn a_group_whose_pods_name_two_profiles_fails_as_kube_scheduler_says() {
    let profiles = "- schedulerName: default-scheduler\n- schedulerName: other";
    let (lines, conditions) = run_text(&gang_text(
        profiles,
        ["default-scheduler", "other", "default-scheduler"],
    ));
    let message = "all pods in a single pod group should have the same .spec.schedulerName set, got: \"other\" and \"default-scheduler\"";
    assert!(lines.iter().all(|(_, m)| m == message), "{lines:?}");
    assert!(conditions.is_empty(), "{conditions:?}");
}
