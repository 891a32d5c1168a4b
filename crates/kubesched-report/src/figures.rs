//! Cluster-level figures of a run: pods pending, nodes used, the spread of cpu and
//! memory utilisation over the nodes, and fragmentation (how many copies of a reference
//! pod still fit). The same numbers fill the page's comparison table and
//! `kubesched report --format jsonl`.

use k8s_openapi::api::core::v1::Taint;
use kubesched_framework::{NodeInfo, PodInfo};
use kubesched_plugins::helper::{find_untolerated_taint, tolerations_tolerate};

use crate::model::{Attempt, Figures, Node, OutcomeKind, Spread, Usage};

/// The figures of a run: `after` is each node's requested resources after it, `fit`
/// the copies of the reference pod that still fit.
pub fn figures(nodes: &[Node], after: &[Usage], attempts: &[Attempt], fit: Option<i64>) -> Figures {
    let mut f = Figures {
        fit,
        ..Figures::default()
    };
    // The last attempt of each pod decides where it ends.
    let mut last: Vec<&Attempt> = Vec::new();
    let mut position = std::collections::HashMap::new();
    for a in attempts {
        match position.get(a.pod.as_str()) {
            Some(&i) => last[i] = a,
            None => {
                position.insert(a.pod.as_str(), last.len());
                last.push(a);
            }
        }
        f.evicted += a.victims.len();
    }
    f.pods = last.len();
    for a in &last {
        match a.outcome {
            OutcomeKind::Scheduled => f.scheduled += 1,
            OutcomeKind::Ignored => f.ignored += 1,
            OutcomeKind::Unschedulable | OutcomeKind::Nominated | OutcomeKind::Gated => {
                f.pending += 1
            }
        }
    }
    let receiving: std::collections::HashSet<&str> =
        last.iter().filter_map(|a| a.node.as_deref()).collect();
    f.nodes_receiving = receiving.len();
    f.nodes_used = after.iter().filter(|u| u.pods > 0).count();
    f.cpu = spread(nodes.iter().zip(after).map(|(n, u)| (u.cpu, n.alloc.cpu)));
    f.memory = spread(nodes.iter().zip(after).map(|(n, u)| (u.mem, n.alloc.mem)));
    for (n, u) in nodes.iter().zip(after) {
        if n.alloc.cpu > 0 {
            let bucket = (u.cpu * 10 / n.alloc.cpu).clamp(0, 9) as usize;
            f.cpu_histogram[bucket] += 1;
        }
    }
    f
}

/// Percent utilisation (`requested / allocatable`) over the nodes with something
/// allocatable: min, max, mean and population standard deviation, each rounded to
/// 1/100 of a percent.
pub fn spread(pairs: impl Iterator<Item = (i64, i64)>) -> Spread {
    let values: Vec<f64> = pairs
        .filter(|&(_, alloc)| alloc > 0)
        .map(|(used, alloc)| used as f64 * 100.0 / alloc as f64)
        .collect();
    if values.is_empty() {
        return Spread::default();
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let round = |v: f64| (v * 100.0).round() / 100.0;
    Spread {
        min: round(values.iter().copied().fold(f64::INFINITY, f64::min)),
        max: round(values.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        mean: round(mean),
        stddev: round(variance.sqrt()),
    }
}

/// How many copies of `pod` fit on `nodes` as they are: on each node whose
/// NoSchedule and NoExecute taints the pod tolerates (and that is schedulable, or whose
/// unschedulable taint it tolerates), as many as its free cpu, memory,
/// ephemeral-storage, scalar resources and pod slots allow (NodeResourcesFit's
/// arithmetic), summed. Node affinity, ports and spreading are not considered: this
/// measures how the free resources are cut up, not where the scheduler would put the
/// copies (`kubesched capacity` answers that).
pub fn copies_that_fit(nodes: &[NodeInfo], pod: &PodInfo) -> i64 {
    let tolerations = pod.spec().tolerations.as_deref().unwrap_or(&[]);
    let unschedulable_taint = Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        effect: "NoSchedule".into(),
        ..Taint::default()
    };
    let req = pod.requests();
    nodes
        .iter()
        .filter(|n| !n.unschedulable() || tolerations_tolerate(tolerations, &unschedulable_taint))
        .filter(|n| {
            find_untolerated_taint(n.taints(), tolerations, |t| {
                t.effect == "NoSchedule" || t.effect == "NoExecute"
            })
            .is_none()
        })
        .map(|n| {
            let c = n.counts();
            let mut fit = (c.allowed_pod_number - c.pods).max(0);
            let mut limit = |free: i64, want: i64| {
                if want > 0 {
                    fit = fit.min((free / want).max(0));
                }
            };
            limit(
                c.allocatable.milli_cpu - c.requested.milli_cpu,
                req.milli_cpu,
            );
            limit(c.allocatable.memory - c.requested.memory, req.memory);
            limit(
                c.allocatable.ephemeral_storage - c.requested.ephemeral_storage,
                req.ephemeral_storage,
            );
            for (name, &want) in &req.scalar_resources {
                limit(
                    n.allocatable().scalar(name) - n.requested().scalar(name),
                    want,
                );
            }
            fit
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_over_nodes_with_allocatable() {
        let s = spread([(1, 4), (3, 4), (0, 0)].into_iter());
        assert_eq!(
            s,
            Spread {
                min: 25.0,
                max: 75.0,
                mean: 50.0,
                stddev: 25.0
            }
        );
        assert_eq!(spread(std::iter::empty()), Spread::default());
    }
}
