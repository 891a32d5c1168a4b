//! InterPodAffinity: pod affinity and anti-affinity, as kube-scheduler v1.35 implements
//! them.
//!
//! * **PreFilter** counts, once per pod and per topology pair (`key=value` of a node
//!   label), the existing pods that match each of the incoming pod's required affinity
//!   terms (only pods that match *all* of them count), the existing pods that match its
//!   required anti-affinity terms, and the existing pods whose required anti-affinity
//!   terms match the incoming pod. It returns `Skip` when the pod has no required terms
//!   and no existing pod's anti-affinity matches it. The AddPod/RemovePod extensions keep
//!   those counts up to date while preemption adds and removes pods.
//! * **Filter** rejects a node, with the first failing check winning:
//!   1. "node(s) didn't match pod affinity rules" (`UnschedulableAndUnresolvable`): the
//!      node lacks a term's topology key, or a term's topology pair has no matching pod
//!      (unless no pod in the cluster matches the terms and the pod matches its own
//!      terms: the first pod of a self-affine group may go anywhere);
//!   2. "node(s) didn't match pod anti-affinity rules" (`Unschedulable`);
//!   3. "node(s) didn't satisfy existing pods anti-affinity rules" (`Unschedulable`).
//! * **PreScore** sums, per topology pair, the weights of the incoming pod's preferred
//!   terms matched by existing pods (anti-affinity negative), the existing pods'
//!   required affinity terms matching the incoming pod (`hardPodAffinityWeight`), and
//!   the existing pods' preferred terms matching the incoming pod. It returns `Skip`
//!   when nothing matched, or when `ignorePreferredTermsOfExistingPods` is set and the
//!   incoming pod has no preferred terms.
//! * **Score** is the sum for the node's topology pairs (it can be negative);
//!   **NormalizeScore** maps min..max to 0..100 in float64, truncated.
//!
//! Namespaces: a term with neither `namespaces` nor `namespaceSelector` means the
//! namespace of the pod that owns it. For the incoming pod's terms a non-empty
//! `namespaceSelector` is resolved once against the cluster's Namespace objects; an
//! empty one (`{}`) matches every namespace, Namespace objects or not. Existing pods'
//! `namespaceSelector` is matched against the labels of the incoming pod's Namespace
//! object (no labels when there is none). A Namespace always carries
//! `kubernetes.io/metadata.name=<name>`, as the API server's defaulting sets it.
//! `matchLabelKeys`/`mismatchLabelKeys` are merged into the label selector by the API
//! server when a pod is created, not by the scheduler, so they are not read here.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, PodAffinityTerm, WeightedPodAffinityTerm};
use kubesched_config::args::InterPodAffinityArgs;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PodInfo,
    PreFilterExtensions, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScoreExtensions,
    ScorePlugin, Snapshot, Status,
};

use crate::label_selector::{Selector, no_labels};

/// The plugin's name.
pub const NAME: &str = "InterPodAffinity";
/// Filter reason: the node breaks an existing pod's required anti-affinity.
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
/// Filter reason: the node does not satisfy the pod's required affinity.
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
/// Filter reason: the node breaks the pod's required anti-affinity.
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";

/// The label the API server puts on every Namespace, with the namespace's name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Pod affinity and anti-affinity.
#[derive(Clone, Debug)]
pub struct InterPodAffinity {
    hard_pod_affinity_weight: i32,
    ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        InterPodAffinity::new(InterPodAffinityArgs::default())
    }
}

impl InterPodAffinity {
    /// Builds the plugin from its (defaulted, validated) args.
    pub fn new(args: InterPodAffinityArgs) -> InterPodAffinity {
        InterPodAffinity {
            hard_pod_affinity_weight: args.hard_pod_affinity_weight,
            ignore_preferred_terms_of_existing_pods: args.ignore_preferred_terms_of_existing_pods,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Parsed terms
// ---------------------------------------------------------------------------------------

/// A `PodAffinityTerm` compiled once (kube-scheduler's `framework.AffinityTerm`).
#[derive(Clone, Debug)]
struct AffinityTerm {
    namespaces: Vec<String>,
    selector: Selector,
    namespace_selector: Selector,
    topology_key: String,
}

impl AffinityTerm {
    fn new(owner_namespace: &str, term: &PodAffinityTerm) -> Result<AffinityTerm, String> {
        let selector = Selector::from_label_selector(term.label_selector.as_ref())?;
        let namespace_selector = Selector::from_label_selector(term.namespace_selector.as_ref())?;
        let listed = term.namespaces.as_deref().unwrap_or(&[]);
        let namespaces = if listed.is_empty() && term.namespace_selector.is_none() {
            vec![owner_namespace.to_string()]
        } else {
            listed.to_vec()
        };
        Ok(AffinityTerm {
            namespaces,
            selector,
            namespace_selector,
            topology_key: term.topology_key.clone(),
        })
    }

    /// `true` when `pod` is in one of the term's namespaces (or its namespace's labels,
    /// `ns_labels`, match the namespace selector) and its labels match the selector.
    fn matches(&self, pod: &PodInfo, ns_labels: &BTreeMap<String, String>) -> bool {
        let ns = pod.namespace();
        if self.namespaces.iter().any(|n| n == ns) || self.namespace_selector.matches(ns_labels) {
            self.selector.matches(pod_labels(pod))
        } else {
            false
        }
    }

    /// Resolves a non-empty namespace selector into namespace names against the
    /// cluster's Namespace objects (kube-scheduler's `mergeAffinityTermNamespacesIfNotEmpty`).
    /// An empty selector (`{}`, every namespace) and an absent one are left as they are.
    fn merge_namespaces(&mut self, namespaces: &[Arc<Namespace>]) {
        if self.namespace_selector.is_everything()
            || matches!(self.namespace_selector, Selector::Nothing)
        {
            return;
        }
        for ns in namespaces {
            let Some(name) = ns.metadata.name.as_deref() else {
                continue;
            };
            if self.namespace_selector.matches(&namespace_labels(ns))
                && !self.namespaces.iter().any(|n| n == name)
            {
                self.namespaces.push(name.to_string());
            }
        }
        self.namespace_selector = Selector::Nothing;
    }
}

/// A preferred term with its weight.
#[derive(Clone, Debug)]
struct WeightedTerm {
    term: AffinityTerm,
    weight: i32,
}

fn pod_labels(pod: &PodInfo) -> &BTreeMap<String, String> {
    pod.pod()
        .metadata
        .labels
        .as_ref()
        .unwrap_or_else(|| no_labels())
}

/// A Namespace's labels, with the name label the API server always sets.
fn namespace_labels(ns: &Namespace) -> BTreeMap<String, String> {
    let mut labels = ns.metadata.labels.clone().unwrap_or_default();
    if let Some(name) = ns.metadata.name.as_deref() {
        labels.insert(NAMESPACE_NAME_LABEL.to_string(), name.to_string());
    }
    labels
}

/// The labels of the namespace named `name`; empty when there is no such Namespace
/// (kube-scheduler's `GetNamespaceLabelsSnapshot`).
fn namespace_labels_snapshot(name: &str, snapshot: &Snapshot) -> BTreeMap<String, String> {
    snapshot
        .objects()
        .namespaces
        .iter()
        .find(|ns| ns.metadata.name.as_deref() == Some(name))
        .map(|ns| namespace_labels(ns))
        .unwrap_or_default()
}

/// Compiles terms; the first bad one fails the whole list, as kube-scheduler does.
fn compile_terms(
    pod: &PodInfo,
    terms: Option<&Vec<PodAffinityTerm>>,
) -> Result<Vec<AffinityTerm>, String> {
    terms
        .into_iter()
        .flatten()
        .map(|t| AffinityTerm::new(pod.namespace(), t))
        .collect()
}

fn compile_weighted_terms(
    pod: &PodInfo,
    terms: Option<&Vec<WeightedPodAffinityTerm>>,
) -> Result<Vec<WeightedTerm>, String> {
    terms
        .into_iter()
        .flatten()
        .map(|t| {
            Ok(WeightedTerm {
                term: AffinityTerm::new(pod.namespace(), &t.pod_affinity_term)?,
                weight: t.weight,
            })
        })
        .collect()
}

fn required_affinity_terms(pod: &PodInfo) -> Result<Vec<AffinityTerm>, String> {
    let terms = pod
        .spec()
        .affinity
        .as_ref()
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    compile_terms(pod, terms).map_err(|e| format!("requiredAffinityTerms: {e}"))
}

fn required_anti_affinity_terms(pod: &PodInfo) -> Result<Vec<AffinityTerm>, String> {
    let terms = pod
        .spec()
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    compile_terms(pod, terms).map_err(|e| format!("requiredAntiAffinityTerms: {e}"))
}

fn preferred_affinity_terms(pod: &PodInfo) -> Result<Vec<WeightedTerm>, String> {
    let terms = pod
        .spec()
        .affinity
        .as_ref()
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        });
    compile_weighted_terms(pod, terms).map_err(|e| format!("preferredAffinityTerms: {e}"))
}

fn preferred_anti_affinity_terms(pod: &PodInfo) -> Result<Vec<WeightedTerm>, String> {
    let terms = pod
        .spec()
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        });
    compile_weighted_terms(pod, terms).map_err(|e| format!("preferredAntiAffinityTerms: {e}"))
}

/// Every parse error of the pod's four term lists, as kube-scheduler's `NewPodInfo`
/// aggregates them (one error alone, several as `[a, b]`); `None` when all parse.
fn parse_errors(pod: &PodInfo) -> Option<String> {
    let errors: Vec<String> = [
        required_affinity_terms(pod).err(),
        required_anti_affinity_terms(pod).err(),
        preferred_affinity_terms(pod).err(),
        preferred_anti_affinity_terms(pod).err(),
    ]
    .into_iter()
    .flatten()
    .collect();
    match errors.len() {
        0 => None,
        1 => errors.into_iter().next(),
        _ => Some(format!("[{}]", errors.join(", "))),
    }
}

/// `true` when `pod` matches every term; `false` for no terms.
fn pod_matches_all_terms(terms: &[AffinityTerm], pod: &PodInfo) -> bool {
    // The incoming pod's namespace selectors were merged into namespace names, so no
    // namespace labels are needed.
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, no_labels()))
}

// ---------------------------------------------------------------------------------------
// Topology counts
// ---------------------------------------------------------------------------------------

/// Counts per topology pair, nested (key, then value) so lookups borrow `&str`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct TopologyCounts(HashMap<String, HashMap<String, i64>>);

impl TopologyCounts {
    fn get(&self, key: &str, value: &str) -> i64 {
        self.0
            .get(key)
            .and_then(|m| m.get(value))
            .copied()
            .unwrap_or(0)
    }

    fn is_empty(&self) -> bool {
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
struct PreFilterState {
    /// Pairs where existing pods' required anti-affinity terms match the incoming pod.
    existing_anti_affinity_counts: TopologyCounts,
    /// Pairs where existing pods match all the incoming pod's required affinity terms.
    affinity_counts: TopologyCounts,
    /// Pairs where existing pods match the incoming pod's required anti-affinity terms.
    anti_affinity_counts: TopologyCounts,
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

impl Plugin for InterPodAffinity {
    fn name(&self) -> &str {
        NAME
    }
    // The pod's own affinity terms, and its labels, which the terms of the pods on the
    // nodes match.
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        use kubesched_framework::signature::{SignFragment, signers};
        let affinity = pod.spec().affinity.as_ref();
        let terms = (
            affinity.and_then(|a| a.pod_affinity.as_ref()),
            affinity.and_then(|a| a.pod_anti_affinity.as_ref()),
        );
        Ok(vec![
            SignFragment::json(signers::INTER_POD_AFFINITY, &terms),
            SignFragment::json(signers::LABELS, &pod.pod().metadata.labels),
        ])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::inter_pod_affinity()
    }
    kubesched_framework::extension_points!(PreFilter, Filter, PreScore, Score);
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
        for node in snapshot.nodes() {
            // Unless the pod has preferred terms, only pods with affinity matter.
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
}

/// Maps the scores' min..max onto 0..=100 in float64, truncated (all 0 when every
/// score is equal).
fn normalize_min_max(scores: &mut [NodeScore]) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    /// A Filter case: name, incoming pod, existing pods, expected result per node.
    type FilterCase = (
        &'static str,
        PodInfo,
        Vec<PodInfo>,
        Vec<Option<(Code, String)>>,
    );
    /// A Score case: name, args, incoming pod, existing pods, expected scores (None: Skip).
    type ScoreCase = (
        &'static str,
        InterPodAffinityArgs,
        PodInfo,
        Vec<PodInfo>,
        Option<Vec<i64>>,
    );

    fn node(name: &str, labels: serde_json::Value) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
            }))
            .unwrap(),
        )
    }

    /// A pod `ns/name` with `labels`, optionally bound to `node`, with `affinity`.
    fn pod(
        ns: &str,
        name: &str,
        labels: serde_json::Value,
        node: Option<&str>,
        affinity: serde_json::Value,
    ) -> PodInfo {
        let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        if !affinity.is_null() {
            spec["affinity"] = affinity;
        }
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": spec
        }))
        .unwrap();
        PodInfo::new(Arc::new(p)).unwrap()
    }

    fn term(selector: serde_json::Value, key: &str) -> serde_json::Value {
        json!({"labelSelector": selector, "topologyKey": key})
    }

    fn zone_nodes() -> Vec<Arc<Node>> {
        vec![
            node("n1", json!({"zone": "a", "host": "n1"})),
            node("n2", json!({"zone": "a", "host": "n2"})),
            node("n3", json!({"zone": "b", "host": "n3"})),
            node("n4", json!({"host": "n4"})),
        ]
    }

    fn snapshot(nodes: Vec<Arc<Node>>, pods: Vec<PodInfo>) -> Snapshot {
        Snapshot::new(nodes, pods.into_iter().map(Arc::new))
            .unwrap()
            .0
    }

    /// Runs PreFilter and Filter over every node: `None` for a pass, or the reason.
    fn run_filter(
        plugin: &InterPodAffinity,
        incoming: &PodInfo,
        snap: &Snapshot,
    ) -> Vec<Option<(Code, String)>> {
        let mut state = CycleState::new();
        let (_, status) = plugin.pre_filter(&mut state, incoming, snap);
        if status.is_skip() {
            return snap.nodes().iter().map(|_| None).collect();
        }
        assert!(status.is_success(), "{status}");
        snap.nodes()
            .iter()
            .map(|n| {
                let s = plugin.filter(&state, incoming, n);
                (!s.is_success()).then(|| (s.code(), s.message()))
            })
            .collect()
    }

    /// Runs PreScore, Score and NormalizeScore over every node: `None` on Skip.
    fn run_score(
        plugin: &InterPodAffinity,
        incoming: &PodInfo,
        snap: &Snapshot,
    ) -> Option<Vec<i64>> {
        let mut state = CycleState::new();
        let nodes: Vec<&NodeInfo> = snap.nodes().iter().collect();
        let status = plugin.pre_score(&mut state, incoming, &nodes, snap);
        if status.is_skip() {
            return None;
        }
        assert!(status.is_success(), "{status}");
        let mut scores: Vec<NodeScore> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeScore {
                node_index: i,
                score: plugin.score(&state, incoming, n).unwrap(),
            })
            .collect();
        assert!(
            plugin
                .normalize_score(&state, incoming, &mut scores)
                .is_success()
        );
        Some(scores.into_iter().map(|s| s.score).collect())
    }

    fn affinity_fail() -> Option<(Code, String)> {
        Some((
            Code::UnschedulableAndUnresolvable,
            ERR_REASON_AFFINITY_RULES_NOT_MATCH.into(),
        ))
    }
    fn anti_fail() -> Option<(Code, String)> {
        Some((
            Code::Unschedulable,
            ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH.into(),
        ))
    }
    fn existing_fail() -> Option<(Code, String)> {
        Some((
            Code::Unschedulable,
            ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH.into(),
        ))
    }

    #[test]
    fn filter_cases() {
        let sel_web = json!({"matchLabels": {"app": "web"}});
        let cases: Vec<FilterCase> = vec![
            (
                "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
                pod("default", "p", json!({}), None, serde_json::Value::Null),
                vec![],
                vec![None, None, None, None],
            ),
            (
                "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
                pod(
                    "default",
                    "p",
                    json!({}),
                    None,
                    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
                ),
                vec![pod(
                    "default",
                    "w",
                    json!({"app": "web"}),
                    Some("n1"),
                    serde_json::Value::Null,
                )],
                vec![None, None, affinity_fail(), affinity_fail()],
            ),
            (
                "existing pod in another namespace does not satisfy affinity",
                pod(
                    "default",
                    "p",
                    json!({}),
                    None,
                    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
                ),
                vec![pod(
                    "other",
                    "w",
                    json!({"app": "web"}),
                    Some("n1"),
                    serde_json::Value::Null,
                )],
                vec![
                    affinity_fail(),
                    affinity_fail(),
                    affinity_fail(),
                    affinity_fail(),
                ],
            ),
            (
                "first pod of a self-affine group may go wherever the topology key exists",
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
                ),
                vec![],
                vec![None, None, None, affinity_fail()],
            ),
            (
                "anti-affinity against an existing pod in the same zone",
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
                ),
                vec![pod(
                    "default",
                    "w",
                    json!({"app": "web"}),
                    Some("n2"),
                    serde_json::Value::Null,
                )],
                vec![anti_fail(), anti_fail(), None, None],
            ),
            (
                "existing pod's anti-affinity rejects the incoming pod",
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    serde_json::Value::Null,
                ),
                vec![pod(
                    "default",
                    "db",
                    json!({"app": "db"}),
                    Some("n3"),
                    json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "host")]}}),
                )],
                vec![None, None, existing_fail(), None],
            ),
            (
                "affinity failure wins over anti-affinity failure",
                pod(
                    "default",
                    "p",
                    json!({}),
                    None,
                    json!({
                        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(json!({"matchLabels": {"app": "db"}}), "zone")]},
                        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}
                    }),
                ),
                vec![
                    pod(
                        "default",
                        "w",
                        json!({"app": "web"}),
                        Some("n1"),
                        serde_json::Value::Null,
                    ),
                    pod(
                        "default",
                        "d",
                        json!({"app": "db"}),
                        Some("n1"),
                        serde_json::Value::Null,
                    ),
                ],
                vec![anti_fail(), anti_fail(), affinity_fail(), affinity_fail()],
            ),
            (
                "empty namespaceSelector matches every namespace",
                pod(
                    "tools",
                    "p",
                    json!({}),
                    None,
                    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": sel_web.clone(), "topologyKey": "zone", "namespaceSelector": {}}
                    ]}}),
                ),
                vec![pod(
                    "monitoring",
                    "w",
                    json!({"app": "web"}),
                    Some("n3"),
                    serde_json::Value::Null,
                )],
                vec![affinity_fail(), affinity_fail(), None, affinity_fail()],
            ),
        ];
        let plugin = InterPodAffinity::default();
        for (name, incoming, existing, want) in cases {
            let snap = snapshot(zone_nodes(), existing);
            assert_eq!(run_filter(&plugin, &incoming, &snap), want, "{name}");
        }
    }

    #[test]
    fn pre_filter_skips_without_terms() {
        let snap = snapshot(zone_nodes(), vec![]);
        let mut state = CycleState::new();
        let p = pod("default", "p", json!({}), None, serde_json::Value::Null);
        let (_, s) = InterPodAffinity::default().pre_filter(&mut state, &p, &snap);
        assert!(s.is_skip());
    }

    #[test]
    fn bad_selector_fails_pre_filter() {
        let snap = snapshot(zone_nodes(), vec![]);
        let mut state = CycleState::new();
        let p = pod(
            "default",
            "p",
            json!({}),
            None,
            json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                term(json!({"matchExpressions": [{"key": "a", "operator": "Like"}]}), "zone")
            ]}}),
        );
        let (_, s) = InterPodAffinity::default().pre_filter(&mut state, &p, &snap);
        assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
        assert!(
            s.message()
                .starts_with("parsing pod: requiredAffinityTerms: "),
            "{}",
            s.message()
        );
    }

    #[test]
    fn namespace_selector_uses_namespace_objects() {
        let mut snap = snapshot(
            zone_nodes(),
            vec![
                pod(
                    "prod",
                    "w",
                    json!({"app": "web"}),
                    Some("n1"),
                    serde_json::Value::Null,
                ),
                pod(
                    "dev",
                    "w",
                    json!({"app": "web"}),
                    Some("n3"),
                    serde_json::Value::Null,
                ),
            ],
        );
        let ns: Namespace = serde_json::from_value(
            json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}}),
        )
        .unwrap();
        snap.set_objects(Arc::new(kubesched_framework::ClusterObjects {
            namespaces: vec![Arc::new(ns)],
            ..Default::default()
        }));
        let incoming = pod(
            "default",
            "p",
            json!({}),
            None,
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone", "namespaceSelector": {"matchLabels": {"env": "prod"}}}
            ]}}),
        );
        let got = run_filter(&InterPodAffinity::default(), &incoming, &snap);
        assert_eq!(got, vec![anti_fail(), anti_fail(), None, None]);
    }

    #[test]
    fn add_and_remove_pod_update_counts() {
        let plugin = InterPodAffinity::default();
        let incoming = pod(
            "default",
            "p",
            json!({"app": "web"}),
            None,
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(json!({"matchLabels": {"app": "web"}}), "zone")]}}),
        );
        let victim = pod(
            "default",
            "w",
            json!({"app": "web"}),
            Some("n1"),
            serde_json::Value::Null,
        );
        let snap = snapshot(zone_nodes(), vec![victim.clone()]);
        let mut state = CycleState::new();
        let (_, s) = plugin.pre_filter(&mut state, &incoming, &snap);
        assert!(s.is_success());
        let n1 = &snap.nodes()[0];
        assert!(!plugin.filter(&state, &incoming, n1).is_success());
        assert!(
            plugin
                .remove_pod(&mut state, &incoming, &victim, n1)
                .is_success()
        );
        assert!(plugin.filter(&state, &incoming, n1).is_success());
        assert!(
            state
                .read::<PreFilterState>()
                .unwrap()
                .anti_affinity_counts
                .is_empty()
        );
        assert!(
            plugin
                .add_pod(&mut state, &incoming, &victim, n1)
                .is_success()
        );
        assert!(!plugin.filter(&state, &incoming, n1).is_success());
        // An added pod with anti-affinity against the incoming pod counts too.
        let hater = pod(
            "default",
            "h",
            json!({}),
            Some("n3"),
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(json!({"matchLabels": {"app": "web"}}), "host")]}}),
        );
        let n3 = &snap.nodes()[2];
        assert!(plugin.filter(&state, &incoming, n3).is_success());
        assert!(
            plugin
                .add_pod(&mut state, &incoming, &hater, n3)
                .is_success()
        );
        assert_eq!(
            plugin.filter(&state, &incoming, n3).message(),
            ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
        );
    }

    #[test]
    fn score_cases() {
        let sel_web = json!({"matchLabels": {"app": "web"}});
        let preferred = |w: i32, key: &str| json!({"weight": w, "podAffinityTerm": term(json!({"matchLabels": {"app": "web"}}), key)});
        let cases: Vec<ScoreCase> = vec![
            (
                "no affinity anywhere: skip",
                InterPodAffinityArgs::default(),
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    serde_json::Value::Null,
                ),
                vec![pod(
                    "default",
                    "w",
                    json!({"app": "web"}),
                    Some("n1"),
                    serde_json::Value::Null,
                )],
                None,
            ),
            (
                "preferred affinity of the incoming pod",
                InterPodAffinityArgs::default(),
                pod(
                    "default",
                    "p",
                    json!({}),
                    None,
                    json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "zone")]}}),
                ),
                vec![pod(
                    "default",
                    "w",
                    json!({"app": "web"}),
                    Some("n3"),
                    serde_json::Value::Null,
                )],
                Some(vec![0, 0, 100, 0]),
            ),
            (
                "preferred anti-affinity of the incoming pod: raw scores are negative",
                InterPodAffinityArgs::default(),
                pod(
                    "default",
                    "p",
                    json!({}),
                    None,
                    json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "zone")]}}),
                ),
                vec![pod(
                    "default",
                    "w",
                    json!({"app": "web"}),
                    Some("n3"),
                    serde_json::Value::Null,
                )],
                Some(vec![100, 100, 0, 100]),
            ),
            (
                "existing pod's required affinity with hard weight",
                InterPodAffinityArgs::default(),
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    serde_json::Value::Null,
                ),
                vec![pod(
                    "default",
                    "s",
                    json!({}),
                    Some("n1"),
                    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
                )],
                Some(vec![100, 100, 0, 0]),
            ),
            (
                "hard weight 0 ignores existing required affinity: skip",
                InterPodAffinityArgs {
                    hard_pod_affinity_weight: 0,
                    ..Default::default()
                },
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    serde_json::Value::Null,
                ),
                vec![pod(
                    "default",
                    "s",
                    json!({}),
                    Some("n1"),
                    json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(sel_web.clone(), "zone")]}}),
                )],
                None,
            ),
            (
                "existing pods' preferred terms both ways",
                InterPodAffinityArgs::default(),
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    serde_json::Value::Null,
                ),
                vec![
                    pod(
                        "default",
                        "likes",
                        json!({}),
                        Some("n1"),
                        json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(40, "zone")]}}),
                    ),
                    pod(
                        "default",
                        "hates",
                        json!({}),
                        Some("n3"),
                        json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(60, "zone")]}}),
                    ),
                ],
                // raw: 40, 40, -60, 0 → (s+60)/100*100
                Some(vec![100, 100, 0, 60]),
            ),
            (
                "ignorePreferredTermsOfExistingPods without incoming preferred terms: skip",
                InterPodAffinityArgs {
                    ignore_preferred_terms_of_existing_pods: true,
                    ..Default::default()
                },
                pod(
                    "default",
                    "p",
                    json!({"app": "web"}),
                    None,
                    serde_json::Value::Null,
                ),
                vec![pod(
                    "default",
                    "likes",
                    json!({}),
                    Some("n1"),
                    json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(40, "zone")]}}),
                )],
                None,
            ),
            (
                "matching terms that sum to zero still score (all 0)",
                InterPodAffinityArgs::default(),
                pod(
                    "default",
                    "p",
                    json!({}),
                    None,
                    json!({
                        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "host")]},
                        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(5, "host")]}
                    }),
                ),
                vec![pod(
                    "default",
                    "w",
                    json!({"app": "web"}),
                    Some("n1"),
                    serde_json::Value::Null,
                )],
                Some(vec![0, 0, 0, 0]),
            ),
        ];
        for (name, args, incoming, existing, want) in cases {
            let plugin = InterPodAffinity::new(args);
            let snap = snapshot(zone_nodes(), existing);
            assert_eq!(run_score(&plugin, &incoming, &snap), want, "{name}");
        }
    }

    #[test]
    fn normalize_truncates() {
        let mut s: Vec<NodeScore> = [-3, 0, 4]
            .iter()
            .enumerate()
            .map(|(i, &score)| NodeScore {
                node_index: i,
                score,
            })
            .collect();
        normalize_min_max(&mut s);
        assert_eq!(
            s.iter().map(|s| s.score).collect::<Vec<_>>(),
            vec![0, 42, 100]
        );
    }
}
