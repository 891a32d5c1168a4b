//! Generated traces for `kubesched replay --settle`, every settled pass checked against
//! kube-scheduler's own code: a seed's scenario ([`generate`]) is split into the
//! cluster at time 0 (the configuration, half the nodes, the pods bound to them, the
//! other objects) and a trace (the other nodes joining, the pending pods arriving in
//! their order, bound pods finishing, a node cordoned and uncordoned, a pending pod
//! deleted), at seeded times. kubesched replays it with `--dump-steps`, which writes
//! the cluster before each pass and the pass's lines; the oracle runs each of those
//! clusters, and its lines must be the pass's.
//!
//! Storage and resource.k8s.io objects are left out: the settled mode refuses them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use serde_json::{Value, json};

use crate::compare::{Output, Pair, Verdict, json_lines, verdict};
use crate::generate::{generate, to_yaml};
use crate::rng::Rng;
use crate::run::{DRA_KINDS, STORAGE_KINDS};

/// Storage and resource.k8s.io objects, which the settled mode refuses.
fn left_out(doc: &Value) -> bool {
    STORAGE_KINDS
        .iter()
        .chain(DRA_KINDS)
        .any(|k| doc["kind"] == *k)
}

/// A seed's trace: the scenario file at time 0 and the trace's JSON Lines.
pub fn generate_trace(seed: u64) -> (String, String) {
    let docs: Vec<Value> = generate(seed)
        .into_iter()
        .filter(|d| !left_out(d))
        .collect();
    let mut r = Rng::new(seed ^ 0x7261_6365);
    let name = |d: &Value| d["metadata"]["name"].as_str().unwrap_or("").to_string();
    let nodes: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Node").collect();
    let at_start = nodes.len().div_ceil(2);
    let start_nodes: Vec<String> = nodes[..at_start].iter().map(|n| name(n)).collect();
    let bound_to = |d: &Value| d["spec"]["nodeName"].as_str().map(str::to_string);

    let mut file = Vec::new();
    let mut later_nodes = Vec::new();
    let mut pending = Vec::new();
    let mut bound_later: Vec<(String, Value)> = Vec::new();
    let mut bound_at_start = Vec::new();
    for d in &docs {
        match d["kind"].as_str() {
            Some("Node") if !start_nodes.contains(&name(d)) => later_nodes.push(d.clone()),
            Some("Pod") => match bound_to(d) {
                Some(node)
                    if start_nodes.contains(&node) || !nodes.iter().any(|n| name(n) == node) =>
                {
                    let finished =
                        matches!(d["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
                    if !finished {
                        bound_at_start.push(d.clone());
                    }
                    file.push(d.clone());
                }
                Some(node) => bound_later.push((node, d.clone())),
                None => pending.push(d.clone()),
            },
            _ => file.push(d.clone()),
        }
    }

    // Times: a few distinct instants, each event at one of them, in order.
    let mut events: Vec<(u64, Value)> = Vec::new();
    let mut time = 0;
    let mut tick = |r: &mut Rng| {
        if r.chance(40) {
            time += r.range(1, 30) as u64;
        }
        time
    };
    let mut later_nodes = later_nodes.into_iter().peekable();
    let mut pending = pending.into_iter().peekable();
    while later_nodes.peek().is_some() || pending.peek().is_some() {
        let t = tick(&mut r);
        if later_nodes.peek().is_some() && (pending.peek().is_none() || r.chance(30)) {
            let node = later_nodes.next().unwrap_or_default();
            let n = name(&node);
            events.push((t, json!({"time": t, "apply": node})));
            for (_, pod) in bound_later.iter().filter(|(on, _)| *on == n) {
                events.push((t, json!({"time": t, "apply": pod})));
            }
        } else if let Some(pod) = pending.next() {
            events.push((t, json!({"time": t, "apply": pod})));
        }
    }
    // Some churn after the arrivals: a bound pod finishes, a node is cordoned and
    // uncordoned, a pending pod may be deleted.
    let meta = |d: &Value| {
        (
            d["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string(),
            name(d),
        )
    };
    if let Some(pod) = (!bound_at_start.is_empty()).then(|| r.pick(&bound_at_start).clone()) {
        let t = tick(&mut r) + 1;
        let (namespace, name) = meta(&pod);
        events.push((
            t,
            json!({"time": t, "finish": {"namespace": namespace, "name": name}}),
        ));
    }
    if !start_nodes.is_empty() && r.chance(50) {
        let node = r.pick(&start_nodes).clone();
        let t = tick(&mut r) + 1;
        events.push((t, json!({"time": t, "cordon": node})));
        let t = tick(&mut r) + 1;
        events.push((t, json!({"time": t, "uncordon": node})));
    }
    events.sort_by_key(|(t, _)| *t);
    let mut trace = format!(
        "{}\n",
        json!({"kubeschedTrace": 1, "description": format!("kubesched-difftest trace seed {seed}")})
    );
    for (_, e) in events {
        trace.push_str(&e.to_string());
        trace.push('\n');
    }
    (
        to_yaml(
            &file,
            &format!("kubesched-difftest trace seed {seed}: the cluster at time 0"),
        ),
        trace,
    )
}

/// One settled pass that disagreed.
#[derive(Debug, Clone)]
pub struct TraceFinding {
    /// The seed.
    pub seed: u64,
    /// The Kubernetes version.
    pub version: String,
    /// Whether `--preemption` was on.
    pub preemption: bool,
    /// The pass's cluster (kept), which `kubesched simulate` and the oracle read.
    pub step: PathBuf,
    /// The first difference.
    pub detail: String,
}

/// Totals of a trace run.
#[derive(Debug, Default)]
pub struct TraceSummary {
    /// Traces replayed (seeds x versions).
    pub traces: usize,
    /// Settled passes compared.
    pub passes: usize,
    /// Of which agreed.
    pub agreed: usize,
    /// Of which both refused.
    pub both_refused: usize,
    /// The disagreements (and replays that failed).
    pub findings: Vec<TraceFinding>,
}

fn lines(path: &Path) -> Output {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    json_lines(&text)
}

/// Replays each seed's trace with `--settle` under each version and compares every pass
/// with the oracle; odd seeds with `--preemption`. Prints each disagreement as found.
pub fn run_traces(seeds: &[u64], pairs: &[Pair], out: &Path) -> std::io::Result<TraceSummary> {
    let scratch = out.join("traces");
    std::fs::create_dir_all(&scratch)?;
    let traces = AtomicUsize::new(0);
    let passes = AtomicUsize::new(0);
    let agreed = AtomicUsize::new(0);
    let both_refused = AtomicUsize::new(0);
    let findings: Vec<TraceFinding> = seeds
        .par_iter()
        .map(|&seed| -> std::io::Result<Vec<TraceFinding>> {
            let (cluster, trace) = generate_trace(seed);
            let dir = scratch.join(format!("seed-{seed}"));
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("cluster.yaml"), cluster)?;
            std::fs::write(dir.join("trace.jsonl"), trace)?;
            let preemption = seed % 2 == 1;
            let mut found = Vec::new();
            for pair in pairs {
                traces.fetch_add(1, Ordering::Relaxed);
                let steps = dir.join(format!("v{}", pair.version));
                let _ = std::fs::remove_dir_all(&steps);
                let mut cmd = Command::new(&pair.kubesched);
                cmd.args(["replay", "--settle", "--kubernetes-version", &pair.version, "--format", "jsonl"]);
                if preemption {
                    cmd.arg("--preemption");
                }
                cmd.arg("--dump-steps").arg(&steps).arg(dir.join("trace.jsonl")).arg(dir.join("cluster.yaml"));
                let replayed = cmd.output()?;
                let mut finding = |step: PathBuf, detail: String| {
                    eprintln!(
                        "DISAGREE trace seed {seed} v{}{}: {}: {detail}",
                        pair.version,
                        if preemption { " --preemption" } else { "" },
                        step.display()
                    );
                    found.push(TraceFinding {
                        seed,
                        version: pair.version.clone(),
                        preemption,
                        step,
                        detail,
                    });
                };
                if !replayed.status.success() {
                    // The oracle may refuse the cluster too: then kubesched is right to.
                    let stderr = String::from_utf8_lossy(&replayed.stderr).trim().to_string();
                    match pair.oracle(&dir.join("cluster.yaml"), preemption) {
                        Err(_) => {
                            both_refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) => finding(dir.join("cluster.yaml"), format!("kubesched replay failed: {stderr}")),
                    }
                    continue;
                }
                let mut names: Vec<PathBuf> = std::fs::read_dir(&steps)?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                    .collect();
                names.sort();
                let mut clean = true;
                for step in names {
                    passes.fetch_add(1, Ordering::Relaxed);
                    let expected = pair.oracle(&step, preemption);
                    let actual = lines(&step.with_extension("jsonl"));
                    match verdict(&expected, &actual) {
                        Verdict::Agree => {
                            agreed.fetch_add(1, Ordering::Relaxed);
                        }
                        Verdict::BothRefused => {
                            both_refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Verdict::Disagree(d) => {
                            // Would `simulate` of the same cluster agree? Then the
                            // replay's pass is at fault, not the scheduler.
                            let simulate = pair.kubesched(&step, preemption);
                            let whose = if matches!(verdict(&expected, &simulate), Verdict::Agree) {
                                "the replay's pass differs from `kubesched simulate` of the same cluster, which agrees"
                            } else {
                                "`kubesched simulate` of the same cluster disagrees too"
                            };
                            finding(step, format!("{}; {whose}", d.detail));
                            clean = false;
                        }
                    }
                }
                if clean {
                    let _ = std::fs::remove_dir_all(&steps);
                }
            }
            if found.is_empty() {
                let _ = std::fs::remove_dir_all(&dir);
            }
            Ok(found)
        })
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    Ok(TraceSummary {
        traces: traces.into_inner(),
        passes: passes.into_inner(),
        agreed: agreed.into_inner(),
        both_refused: both_refused.into_inner(),
        findings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_gives_the_same_trace_in_time_order() {
        for seed in 0..40 {
            let (cluster, trace) = generate_trace(seed);
            assert_eq!((cluster.clone(), trace.clone()), generate_trace(seed));
            let times: Vec<f64> = trace
                .lines()
                .skip(1)
                .map(|l| {
                    serde_json::from_str::<Value>(l).unwrap()["time"]
                        .as_f64()
                        .unwrap()
                })
                .collect();
            assert!(
                times.windows(2).all(|w| w[0] <= w[1]),
                "seed {seed}: {times:?}"
            );
            for k in STORAGE_KINDS.iter().chain(DRA_KINDS) {
                assert!(
                    !trace.contains(&format!("\"kind\":\"{k}\"")),
                    "seed {seed}: {k}"
                );
            }
        }
    }
}
