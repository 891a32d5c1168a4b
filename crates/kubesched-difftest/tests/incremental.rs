//! Exact incremental scheduling (kubesched_framework::incremental) must give what the
//! full pass gives, line for line, scores and reasons included: this simulates every
//! conformance case (both versions) and 300 generated scenarios (runs of identical
//! pods, mixed pods, spreads, affinities, taints, claims) both ways and compares the
//! JSON lines, and the decisions of runs that read nothing else (where cycles choose
//! from kept totals without a score table); and checks that the kept verdicts and
//! totals were used, so that the comparison means something.

mod support;

use kubesched_framework::KubernetesVersion;
use kubesched_framework::incremental::IncrementalStats;
use kubesched_sim::scenario::Scenario;
use kubesched_sim::{Decision, SimulationOptions, output, prepare, simulate};
use serde_json::{Value, json};

/// The JSON lines of a simulation, incremental or not.
fn lines(scenario: &Scenario, options: &SimulationOptions, incremental: bool) -> Vec<String> {
    let options = SimulationOptions {
        incremental,
        ..options.clone()
    };
    match simulate(scenario, &options) {
        Ok(sim) => sim
            .results
            .iter()
            .map(|r| output::to_json(r).to_string())
            .collect(),
        Err(e) => vec![format!("error: {e}")],
    }
}

/// The decisions of a run that reads nothing else (`Prepared::run_decisions`, where
/// incremental cycles choose from kept totals), with what incremental scheduling
/// saved; `budget` is the incremental cache's (`None` for the default).
fn decisions(
    scenario: &Scenario,
    options: &SimulationOptions,
    incremental: bool,
    budget: Option<usize>,
) -> (Result<Vec<Decision>, String>, IncrementalStats) {
    let registry = kubesched_plugins::in_tree_registry();
    let options = SimulationOptions {
        incremental,
        ..options.clone()
    };
    match prepare(scenario, &options, &registry) {
        Ok(mut prepared) => {
            prepared.scheduler.set_incremental_budget(budget);
            let decisions = prepared.run_decisions();
            let stats = prepared.scheduler.incremental_stats().unwrap_or_default();
            (Ok(decisions), stats)
        }
        Err(e) => (Err(e.to_string()), IncrementalStats::default()),
    }
}

/// Each pending pod followed by `n - 1` copies of it (`NAME-r1`, ...).
fn in_runs(docs: Vec<Value>, n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for doc in docs {
        let pending = doc["kind"] == "Pod" && doc["spec"]["nodeName"].is_null();
        out.push(doc.clone());
        if pending {
            for r in 1..n {
                let mut copy = doc.clone();
                if let Some(name) = doc["metadata"]["name"].as_str() {
                    copy["metadata"]["name"] = Value::from(format!("{name}-r{r}"));
                }
                out.push(copy);
            }
        }
    }
    out
}

/// Pods whose effective requests are equal but which the scorers read apart, taking
/// turns on two nodes: one asks at pod level (NodeResourcesFit scores its containers'
/// defaults), one on its container, one through an init container, and one through a
/// sidecar (restartable init container), in the order `order` gives.
fn requests_alike(order: &[usize]) -> Vec<Value> {
    let mut docs = vec![
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
               "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
               "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}),
    ];
    let requests = json!({"requests": {"cpu": "1", "memory": "1Gi"}});
    for (i, &shape) in order.iter().enumerate() {
        let mut spec = json!({"containers": [{"name": "c", "image": "x"}]});
        match shape {
            0 => spec["resources"] = requests.clone(),
            1 => spec["containers"][0]["resources"] = requests.clone(),
            2 => {
                spec["initContainers"] =
                    json!([{"name": "i", "image": "x", "resources": requests.clone()}]);
            }
            _ => {
                spec["initContainers"] = json!([{"name": "s", "image": "x",
                    "restartPolicy": "Always", "resources": requests.clone()}]);
            }
        }
        docs.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "default"}, "spec": spec}));
    }
    docs
}

/// A small cluster that runs of identical pods fill, so that the nodes the pods prefer
/// (node affinity weights, PreferNoSchedule taints) fill first and the highest raw
/// score that NormalizeScore scales with moves during a run; a template comes back
/// after another (after a run of it, or taking turns), so that kept totals are rebuilt
/// as well as updated.
fn filling(seed: u64) -> Vec<Value> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut docs = Vec::new();
    for i in 0..6 + next(10) {
        let taints: Vec<Value> = (0..next(3))
            .map(|k| serde_json::json!({"key": format!("t{k}"), "effect": "PreferNoSchedule"}))
            .collect();
        let cpu = ["1", "2", "4"][next(3) as usize];
        docs.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("n{i}"), "labels": {
                "kubernetes.io/hostname": format!("n{i}"), "zone": format!("z{}", next(3))}},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}
        }));
    }
    let templates: Vec<Value> = (0..2)
        .map(|_| {
            let mut affinity = Vec::new();
            for zone in 0..2 {
                if next(3) > 0 {
                    affinity.push(serde_json::json!({"weight": 1 + next(100), "preference": {
                        "matchExpressions": [{"key": "zone", "operator": "In", "values": [format!("z{zone}")]}]}}));
                }
            }
            let tolerations: Vec<Value> = (0..next(2))
                .map(|_| serde_json::json!({"key": "t0", "operator": "Exists", "effect": "PreferNoSchedule"}))
                .collect();
            serde_json::json!({
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": affinity}},
                "tolerations": tolerations,
                "containers": [{"name": "c", "image": "app", "resources": {"requests": {
                    "cpu": format!("{}m", 200 + 100 * next(6)), "memory": "100Mi"}}}]
            })
        })
        .collect();
    // Even seeds: runs of 25 (template 0, 1, then 0 again); odd seeds: the two
    // templates take turns, so that a signature is kept on coming back after another.
    let order: Vec<usize> = if seed.is_multiple_of(2) {
        [0, 1, 0].into_iter().flat_map(|t| [t; 25]).collect()
    } else {
        (0..75).map(|p| p % 2).collect()
    };
    for (p, t) in order.into_iter().enumerate() {
        docs.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{p}"), "namespace": "default"},
            "spec": templates[t]
        }));
    }
    docs
}

/// `docs` under a profile of the plugins that filling scenarios score with, weighted
/// TaintToleration, NodeAffinity and NodeResourcesFit. Kept totals are 16-bit: weights
/// summing to 327 rank with totals up to 32,700, and 328 send every cycle to the score
/// table (a node that tolerates every taint and is in the preferred zone totals more
/// than 16 bits hold under 199, 128 and 1, so that ranking it would overflow).
fn weighted(docs: Vec<Value>, [taints, affinity, fit]: [u32; 3]) -> Vec<Value> {
    let config = serde_json::json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"multiPoint": {
            "enabled": [
                {"name": "PrioritySort"},
                {"name": "NodeUnschedulable"},
                {"name": "NodeName"},
                {"name": "TaintToleration", "weight": taints},
                {"name": "NodeAffinity", "weight": affinity},
                {"name": "NodeResourcesFit", "weight": fit},
                {"name": "DefaultBinder"}
            ],
            "disabled": [{"name": "*"}]
        }}}]
    });
    std::iter::once(config).chain(docs).collect()
}

#[test]
fn incremental_scheduling_gives_the_full_passs_lines() {
    let mut compared = 0;
    let mut reused_nodes = 0;
    let mut ranked_cycles = 0;
    let mut failures = Vec::new();
    let mut check = |name: &str, scenario: &Scenario, options: &SimulationOptions| {
        let full = lines(scenario, options, false);
        let incremental = lines(scenario, options, true);
        compared += 1;
        let (full_decisions, _) = decisions(scenario, options, false, None);
        let (ranked_decisions, stats) = decisions(scenario, options, true, None);
        // A budget of one byte drops every other signature's entry to make room for
        // the one in use.
        let (squeezed_decisions, _) = decisions(scenario, options, true, Some(1));
        if full_decisions != squeezed_decisions {
            failures.push(format!(
                "{name}: decisions differ with a one-byte budget:\n  full:        {full_decisions:?}\n  incremental: {squeezed_decisions:?}"
            ));
        }
        reused_nodes += stats.nodes_reused;
        ranked_cycles += stats.ranked;
        if full_decisions != ranked_decisions {
            failures.push(format!(
                "{name}: decisions differ:\n  full:        {full_decisions:?}\n  incremental: {ranked_decisions:?}"
            ));
        }
        if full != incremental {
            let at = full
                .iter()
                .zip(&incremental)
                .position(|(a, b)| a != b)
                .unwrap_or(full.len().min(incremental.len()));
            failures.push(format!(
                "{name}: line {}:\n  full:        {}\n  incremental: {}",
                at + 1,
                full.get(at).map_or("(none)", String::as_str),
                incremental.get(at).map_or("(none)", String::as_str)
            ));
        }
    };
    let mut folders = Vec::new();
    for (version, prefix) in [
        (KubernetesVersion::V1_35, ""),
        (KubernetesVersion::V1_36, "v1.36/"),
    ] {
        for folder in [
            "cases",
            "cases-default",
            "cases-preemption",
            "cases-volumes",
            "cases-dra",
        ] {
            folders.push((format!("{prefix}{folder}"), version));
        }
    }
    let folders: Vec<(&str, KubernetesVersion)> =
        folders.iter().map(|(f, v)| (f.as_str(), *v)).collect();
    let cases = support::conformance(&folders);
    assert!(cases.len() > 400, "{} conformance cases", cases.len());
    // Odd seeds: every pending pod comes as a run of four identical pods, as
    // ReplicaSets make them, so that verdicts are kept and used.
    let generated = support::generated(9_200_000..9_200_300, |seed, docs| {
        if seed % 2 == 1 {
            in_runs(docs, 4)
        } else {
            docs
        }
    });
    let filled: Vec<support::Case> = (0..60)
        .filter_map(|seed| support::from_docs(format!("filling seed {seed}"), &filling(seed)))
        .collect();
    assert_eq!(filled.len(), 60, "every filling scenario loads");
    let heavy: Vec<support::Case> = (0..20)
        .flat_map(|seed| [[199, 127, 1], [199, 128, 1]].map(|w| (seed, w)))
        .filter_map(|(seed, w)| {
            support::from_docs(
                format!("filling seed {seed}, weights {w:?}"),
                &weighted(filling(seed), w),
            )
        })
        .collect();
    assert_eq!(heavy.len(), 40, "every weighted filling scenario loads");
    let alike: Vec<support::Case> = [[0, 0, 1, 1, 2, 2, 3, 3], [1, 1, 0, 0, 3, 3, 2, 2]]
        .iter()
        .chain(&[[0, 1, 2, 3, 0, 1, 2, 3]])
        .filter_map(|order| {
            support::from_docs(format!("requests alike {order:?}"), &requests_alike(order))
        })
        .collect();
    assert_eq!(alike.len(), 3, "every requests-alike scenario loads");
    for case in (cases.iter())
        .chain(&generated)
        .chain(&filled)
        .chain(&heavy)
        .chain(&alike)
    {
        check(&case.name, &case.scenario, &case.options);
    }
    println!(
        "{compared} scenarios compared; {reused_nodes} node verdicts reused; {ranked_cycles} cycles chose from kept totals"
    );
    assert!(
        failures.is_empty(),
        "{} disagreement(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(reused_nodes >= 1000, "only {reused_nodes} verdicts reused");
    assert!(ranked_cycles >= 100, "only {ranked_cycles} cycles ranked");
}
