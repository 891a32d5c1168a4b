//! InterPodAffinity's filtering half (kube-scheduler's `filtering.go`): the counts per
//! topology pair, the PreFilter state built from them, PreFilter, the AddPod/RemovePod
//! extensions used by preemption, and Filter's three checks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, PodInfo, PreFilterExtensions, PreFilterPlugin,
    PreFilterResult, Snapshot, Status,
};

use super::{
    AffinityTerm, ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, InterPodAffinity, namespace_labels_snapshot,
    parse_errors, pod_matches_all_terms, required_affinity_terms, required_anti_affinity_terms,
};
use crate::label_selector::no_labels;

// ---------------------------------------------------------------------------------------
// Topology counts
// ---------------------------------------------------------------------------------------

/// Counts per topology pair, nested (key, then value) so lookups borrow `&str`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct TopologyCounts(HashMap<String, HashMap<String, i64>>);

impl TopologyCounts {
    fn get(&self, key: &str, value: &str) -> i64 {
        self.0
            .get(key)
            .and_then(|m| m.get(value))
            .copied()
            .unwrap_or(0)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `delta` to the pair (`key`, the node's value of `key`), when the node has
    /// the label; a pair that drops to zero is removed.
    fn update(&mut self, node: &NodeInfo, key: &str, delta: i64) {
        let Some(value) = node.label(key) else {
            return;
        };
        let values = self.0.entry(key.to_string()).or_default();
        let count = values.entry(value.to_string()).or_insert(0);
        *count += delta;
        if *count == 0 {
            values.remove(value);
            if values.is_empty() {
                self.0.remove(key);
            }
        }
    }

    /// For each term: adds `delta` when `pod` matches **all** the terms.
    fn update_with_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &PodInfo,
        node: &NodeInfo,
        delta: i64,
    ) {
        if pod_matches_all_terms(terms, pod) {
            for t in terms {
                self.update(node, &t.topology_key, delta);
            }
        }
    }

    /// For each term that `pod` matches: adds `delta`.
    fn update_with_anti_affinity_terms(
        &mut self,
        terms: &[AffinityTerm],
        pod: &PodInfo,
        ns_labels: &BTreeMap<String, String>,
        node: &NodeInfo,
        delta: i64,
    ) {
        for t in terms {
            if t.matches(pod, ns_labels) {
                self.update(node, &t.topology_key, delta);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// PreFilter / Filter
// ---------------------------------------------------------------------------------------

/// What PreFilter computes for Filter.
#[derive(Clone, Debug)]
pub(super) struct PreFilterState {
    /// Pairs where existing pods' required anti-affinity terms match the incoming pod.
    existing_anti_affinity_counts: TopologyCounts,
    /// Pairs where existing pods match all the incoming pod's required affinity terms.
    affinity_counts: TopologyCounts,
    /// Pairs where existing pods match the incoming pod's required anti-affinity terms.
    pub(super) anti_affinity_counts: TopologyCounts,
    /// The incoming pod's compiled terms (namespace selectors merged).
    terms: Arc<RequiredTerms>,
    /// The labels of the incoming pod's namespace.
    namespace_labels: Arc<BTreeMap<String, String>>,
}

#[derive(Debug)]
struct RequiredTerms {
    affinity: Vec<AffinityTerm>,
    anti_affinity: Vec<AffinityTerm>,
    /// The pod matches all its own required affinity terms.
    matches_own_affinity: bool,
}

impl PreFilterState {
    /// kube-scheduler's `updateWithPod`: `other` was added (`delta` 1) to or removed
    /// (`delta` -1) from `node`.
    fn update_with_pod(
        &mut self,
        incoming: &PodInfo,
        other: &PodInfo,
        node: &NodeInfo,
        delta: i64,
    ) {
        if other.has_required_anti_affinity() {
            // Terms of an existing pod that do not parse are ignored, as the cache does.
            if let Ok(terms) = required_anti_affinity_terms(other) {
                self.existing_anti_affinity_counts
                    .update_with_anti_affinity_terms(
                        &terms,
                        incoming,
                        &self.namespace_labels,
                        node,
                        delta,
                    );
            }
        }
        self.affinity_counts
            .update_with_affinity_terms(&self.terms.affinity, other, node, delta);
        self.anti_affinity_counts.update_with_anti_affinity_terms(
            &self.terms.anti_affinity,
            other,
            no_labels(),
            node,
            delta,
        );
    }

    fn satisfies_pod_affinity(&self, node: &NodeInfo) -> bool {
        let mut pods_exist = true;
        for term in &self.terms.affinity {
            match node.label(&term.topology_key) {
                Some(value) => {
                    if self.affinity_counts.get(&term.topology_key, value) <= 0 {
                        pods_exist = false;
                    }
                }
                // Every topology key must be on the node.
                None => return false,
            }
        }
        // The first pod of a group with affinity to itself: no pod in the cluster
        // matches the terms yet, and the pod matches its own terms.
        pods_exist || (self.affinity_counts.is_empty() && self.terms.matches_own_affinity)
    }

    fn satisfies_pod_anti_affinity(&self, node: &NodeInfo) -> bool {
        if self.anti_affinity_counts.is_empty() {
            return true;
        }
        !self.terms.anti_affinity.iter().any(|term| {
            node.label(&term.topology_key)
                .is_some_and(|value| self.anti_affinity_counts.get(&term.topology_key, value) > 0)
        })
    }

    fn satisfies_existing_pods_anti_affinity(&self, node: &NodeInfo) -> bool {
        if self.existing_anti_affinity_counts.is_empty() {
            return true;
        }
        !node
            .labels()
            .any(|(k, v)| self.existing_anti_affinity_counts.get(k, v) > 0)
    }
}

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if let Some(err) = parse_errors(pod) {
            return (
                None,
                Status::new(
                    Code::UnschedulableAndUnresolvable,
                    format!("parsing pod: {err}"),
                ),
            );
        }
        let namespaces = &snapshot.objects().namespaces;
        let mut affinity = required_affinity_terms(pod).unwrap_or_default();
        let mut anti_affinity = required_anti_affinity_terms(pod).unwrap_or_default();
        for t in affinity.iter_mut().chain(anti_affinity.iter_mut()) {
            t.merge_namespaces(namespaces);
        }
        let namespace_labels = namespace_labels_snapshot(pod.namespace(), snapshot);

        let mut existing_anti_affinity_counts = TopologyCounts::default();
        for node in snapshot.nodes_with_required_anti_affinity_pods() {
            for existing in node.pods_with_required_anti_affinity() {
                if let Ok(terms) = required_anti_affinity_terms(existing) {
                    existing_anti_affinity_counts.update_with_anti_affinity_terms(
                        &terms,
                        pod,
                        &namespace_labels,
                        node,
                        1,
                    );
                }
            }
        }

        let mut affinity_counts = TopologyCounts::default();
        let mut anti_affinity_counts = TopologyCounts::default();
        if !affinity.is_empty() || !anti_affinity.is_empty() {
            for node in snapshot.nodes() {
                for existing in node.pods() {
                    affinity_counts.update_with_affinity_terms(&affinity, existing, node, 1);
                    anti_affinity_counts.update_with_anti_affinity_terms(
                        &anti_affinity,
                        existing,
                        no_labels(),
                        node,
                        1,
                    );
                }
            }
        }

        if existing_anti_affinity_counts.is_empty()
            && affinity.is_empty()
            && anti_affinity.is_empty()
        {
            return (None, Status::skip());
        }

        let matches_own_affinity = pod_matches_all_terms(&affinity, pod);
        state.write(PreFilterState {
            existing_anti_affinity_counts,
            affinity_counts,
            anti_affinity_counts,
            terms: Arc::new(RequiredTerms {
                affinity,
                anti_affinity,
                matches_own_affinity,
            }),
            namespace_labels: Arc::new(namespace_labels),
        });
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

fn missing_pre_filter_state() -> Status {
    Status::error("error reading \"PreFilterInterPodAffinity\" from cycleState: not found")
}

impl PreFilterExtensions for InterPodAffinity {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_schedule, pod_to_add, node, 1);
                Status::success()
            }
            None => missing_pre_filter_state(),
        }
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_schedule, pod_to_remove, node, -1);
                Status::success()
            }
            None => missing_pre_filter_state(),
        }
    }
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return missing_pre_filter_state();
        };
        if !s.satisfies_pod_affinity(node) {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_AFFINITY_RULES_NOT_MATCH,
            );
        }
        if !s.satisfies_pod_anti_affinity(node) {
            return Status::new(
                Code::Unschedulable,
                ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
            );
        }
        if !s.satisfies_existing_pods_anti_affinity(node) {
            return Status::new(
                Code::Unschedulable,
                ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
            );
        }
        Status::success()
    }
}
