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
//!
//! Split as kube-scheduler's plugin is: this module holds the plugin, its args and the
//! compiled terms both halves share; `filtering` holds PreFilter, its extensions and
//! Filter; `scoring` holds PreScore, Score and NormalizeScore; `hints` the queueing
//! hints.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, PodAffinityTerm, WeightedPodAffinityTerm};
use kubesched_config::args::InterPodAffinityArgs;
use kubesched_framework::{Plugin, PodInfo, Snapshot};

use crate::label_selector::{Selector, no_labels};

mod filtering;
mod hints;
mod scoring;
#[cfg(test)]
mod tests;

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
    compile_terms(pod, pod.required_affinity_terms())
        .map_err(|e| format!("requiredAffinityTerms: {e}"))
}

fn required_anti_affinity_terms(pod: &PodInfo) -> Result<Vec<AffinityTerm>, String> {
    compile_terms(pod, pod.required_anti_affinity_terms())
        .map_err(|e| format!("requiredAntiAffinityTerms: {e}"))
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

impl Plugin for InterPodAffinity {
    fn name(&self) -> &str {
        NAME
    }
    /// Node by node only when the pod has no required pod affinity or anti-affinity:
    /// then only existing pods' required anti-affinity can refuse it, and copies of
    /// the pod add none.
    fn node_local(&self, pod: &PodInfo) -> bool {
        !pod.has_required_affinity() && !pod.has_required_anti_affinity()
    }
    /// Node by node only while no pod, this one or any in the cluster, has pod
    /// affinity or anti-affinity terms: then no verdict or score reads other nodes.
    fn node_scoped(&self, pod: &PodInfo, snapshot: &kubesched_framework::Snapshot) -> bool {
        !pod.has_affinity() && !snapshot.has_affinity_pods()
    }
    // The pod's own affinity terms, and its labels, which the terms of the pods on the
    // nodes match.
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        use kubesched_framework::signature::{SignFragment, signers};
        Ok(vec![
            terms_fragment(pod),
            SignFragment::json(signers::LABELS, &pod.metadata().labels),
        ])
    }
    // Asked only while no pod, this one or any in the cluster, has affinity terms
    // (`node_scoped`): then no term reads the pod's labels, so they are left out and
    // pods that differ only in labels share a signature.
    fn sign_pod_exact(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![terms_fragment(pod)])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::inter_pod_affinity()
    }
    kubesched_framework::extension_points!(PreFilter, Filter, PreScore, Score);

    /// `isSchedulableAfterPodChange` and `isSchedulableAfterNodeChange`: a pod on a
    /// node that comes to meet the pod's affinity terms or stops meeting its
    /// anti-affinity terms helps; a node that gains or moves an affinity term's key,
    /// or loses or moves an anti-affinity term's key.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> kubesched_framework::QueueingHint {
        self.hint(pod, event, objects)
    }
}

/// The pod's own pod affinity and anti-affinity terms, as its signature holds them.
fn terms_fragment(pod: &PodInfo) -> kubesched_framework::signature::SignFragment {
    use kubesched_framework::signature::{SignFragment, signers};
    let affinity = pod.spec().affinity.as_ref();
    let terms = (
        affinity.and_then(|a| a.pod_affinity.as_ref()),
        affinity.and_then(|a| a.pod_anti_affinity.as_ref()),
    );
    SignFragment::json(signers::INTER_POD_AFFINITY, &terms)
}
