//! InterPodAffinity's scoring half (kube-scheduler's `scoring.go`): the summed weight
//! per topology pair that PreScore builds from the incoming and the existing pods'
//! terms, Score, and NormalizeScore's min..max mapping.

use std::collections::{BTreeMap, HashMap};

use kubesched_framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo, PreScorePlugin, ScoreExtensions,
    ScorePlugin, Snapshot, Status,
};

use super::{
    AffinityTerm, InterPodAffinity, WeightedTerm, namespace_labels_snapshot, parse_errors,
    preferred_affinity_terms, preferred_anti_affinity_terms, required_affinity_terms,
};
use crate::label_selector::no_labels;

// ---------------------------------------------------------------------------------------
// PreScore / Score
// ---------------------------------------------------------------------------------------

/// What PreScore computes for Score: the summed weight per topology pair. Pairs stay
/// even when their sum is 0 (kube-scheduler's `scoreMap`).
#[derive(Clone, Debug, Default)]
struct PreScoreState(HashMap<String, HashMap<String, i64>>);

impl PreScoreState {
    fn add(
        &mut self,
        term: &AffinityTerm,
        weight: i64,
        pod: &PodInfo,
        ns_labels: &BTreeMap<String, String>,
        node: &NodeInfo,
    ) {
        if !term.matches(pod, ns_labels) {
            return;
        }
        if let Some(value) = node.label(&term.topology_key) {
            *self
                .0
                .entry(term.topology_key.clone())
                .or_default()
                .entry(value.to_string())
                .or_insert(0) += weight;
        }
    }

    fn add_weighted(
        &mut self,
        terms: &[WeightedTerm],
        pod: &PodInfo,
        ns_labels: &BTreeMap<String, String>,
        node: &NodeInfo,
        sign: i64,
    ) {
        for t in terms {
            self.add(&t.term, i64::from(t.weight) * sign, pod, ns_labels, node);
        }
    }
}

/// The incoming pod's preferred terms, namespace selectors merged.
struct IncomingPreferred {
    affinity: Vec<WeightedTerm>,
    anti_affinity: Vec<WeightedTerm>,
}

impl InterPodAffinity {
    /// kube-scheduler's `processExistingPod`.
    fn process_existing_pod(
        &self,
        topology_score: &mut PreScoreState,
        incoming_terms: &IncomingPreferred,
        incoming: &PodInfo,
        ns_labels: &BTreeMap<String, String>,
        existing: &PodInfo,
        node: &NodeInfo,
    ) {
        if node.labels().next().is_none() {
            return;
        }
        // The incoming pod's terms have their namespace selectors merged: no labels.
        topology_score.add_weighted(&incoming_terms.affinity, existing, no_labels(), node, 1);
        topology_score.add_weighted(
            &incoming_terms.anti_affinity,
            existing,
            no_labels(),
            node,
            -1,
        );

        if !existing.has_affinity() {
            return;
        }
        // Terms of an existing pod that do not parse are ignored, as the cache does.
        if self.hard_pod_affinity_weight > 0
            && let Ok(terms) = required_affinity_terms(existing)
        {
            let weight = i64::from(self.hard_pod_affinity_weight);
            for t in &terms {
                topology_score.add(t, weight, incoming, ns_labels, node);
            }
        }
        if let Ok(terms) = preferred_affinity_terms(existing) {
            topology_score.add_weighted(&terms, incoming, ns_labels, node, 1);
        }
        if let Ok(terms) = preferred_anti_affinity_terms(existing) {
            topology_score.add_weighted(&terms, incoming, ns_labels, node, -1);
        }
    }
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        let affinity = pod.spec().affinity.as_ref();
        let has_preferred_affinity = affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_some_and(|t| !t.is_empty());
        let has_preferred_anti_affinity = affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.preferred_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_some_and(|t| !t.is_empty());
        let has_constraints = has_preferred_affinity || has_preferred_anti_affinity;

        if self.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        if let Some(err) = parse_errors(pod) {
            return Status::error(format!("failed to parse pod: {err}"));
        }
        let namespaces = &snapshot.objects().namespaces;
        let mut incoming = IncomingPreferred {
            affinity: preferred_affinity_terms(pod).unwrap_or_default(),
            anti_affinity: preferred_anti_affinity_terms(pod).unwrap_or_default(),
        };
        for t in incoming
            .affinity
            .iter_mut()
            .chain(incoming.anti_affinity.iter_mut())
        {
            t.term.merge_namespaces(namespaces);
        }
        let ns_labels = namespace_labels_snapshot(pod.namespace(), snapshot);

        let mut topology_score = PreScoreState::default();
        // Unless the pod has preferred terms, only pods with affinity matter, on the
        // nodes that have them (kube-scheduler's HavePodsWithAffinityList).
        let nodes: Box<dyn Iterator<Item = &NodeInfo>> = if has_constraints {
            Box::new(snapshot.nodes().iter())
        } else {
            Box::new(snapshot.nodes_with_affinity_pods())
        };
        for node in nodes {
            let pods = if has_constraints {
                node.pods()
            } else {
                node.pods_with_affinity()
            };
            for existing in pods {
                self.process_existing_pod(
                    &mut topology_score,
                    &incoming,
                    pod,
                    &ns_labels,
                    existing,
                    node,
                );
            }
        }
        if topology_score.0.is_empty() {
            return Status::skip();
        }
        state.write(topology_score);
        Status::success()
    }
}

impl ScorePlugin for InterPodAffinity {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let s = state.read::<PreScoreState>().ok_or_else(|| {
            Status::error("failed to read \"PreScoreInterPodAffinity\" from cycleState: not found")
        })?;
        let score =
            s.0.iter()
                .filter_map(|(key, values)| node.label(key).and_then(|v| values.get(v)))
                .fold(0i64, |acc, v| acc.saturating_add(*v));
        Ok(score)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for InterPodAffinity {
    fn normalize_score(&self, state: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let Some(s) = state.read::<PreScoreState>() else {
            return Status::error(
                "failed to read \"PreScoreInterPodAffinity\" from cycleState: not found",
            );
        };
        if s.0.is_empty() {
            return Status::success();
        }
        normalize_min_max(scores);
        Status::success()
    }
    // With nothing to score (no term on either side), the scores stay as they are.
    fn normalization(&self, state: &CycleState) -> kubesched_framework::Normalization {
        match state.read::<PreScoreState>() {
            Some(s) if s.0.is_empty() => kubesched_framework::Normalization::Identity,
            _ => kubesched_framework::Normalization::Opaque,
        }
    }
}

/// Maps the scores' min..max onto 0..=100 in float64, truncated (all 0 when every
/// score is equal).
pub(super) fn normalize_min_max(scores: &mut [NodeScore]) {
    let min = scores.iter().map(|s| s.score).min().unwrap_or(0);
    let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
    let diff = max.saturating_sub(min);
    for s in scores {
        let f = if diff > 0 {
            MAX_NODE_SCORE as f64 * ((s.score.saturating_sub(min)) as f64 / diff as f64)
        } else {
            0.0
        };
        s.score = f as i64;
    }
}
