//! NodeAffinity: the pod's `nodeSelector` and required node affinity (plus the
//! plugin's `addedAffinity`) decide which nodes may run it; its preferred node affinity
//! terms rank the nodes.
//!
//! As in kube-scheduler v1.35:
//!
//! - PreFilter returns Skip when the pod has no `nodeSelector`, no required node
//!   affinity and the plugin has no `addedAffinity.requiredDuringScheduling...`. When
//!   every required term has `matchFields` `metadata.name In`, the union of those names
//!   (intersected within a term) becomes a PreFilterResult; an empty union fails
//!   PreFilter with "pod affinity terms conflict".
//! - Filter rejects (UnschedulableAndUnresolvable) nodes outside the added affinity
//!   ("node(s) didn't match scheduler-enforced node affinity") or the pod's selector and
//!   required terms ("node(s) didn't match Pod's node affinity/selector").
//! - PreScore returns Skip when neither the pod nor `addedAffinity` has preferred
//!   terms; Score sums the weights of the matching terms; NormalizeScore scales to
//!   `100 * score / max`.
//!
//! Node selector semantics (component-helpers' `nodeaffinity`): terms are ORed, an
//! empty term matches nothing, requirements within a term are ANDed. `NotIn` and
//! `DoesNotExist` match nodes without the label; `Gt`/`Lt` compare the label value as an
//! integer (a non-numeric label never matches). A term whose requirements do not parse
//! (unknown operator, wrong number of values, invalid key or value) never matches, while
//! the other terms still can. `matchFields` only know `metadata.name`, with `In` or
//! `NotIn` and exactly one value.
//!
//! The selectors themselves (requirements, terms, `NodeSelector`, the preferred terms
//! and the pod's required affinity) are in `selector`, as kube-scheduler keeps them in
//! component-helpers apart from the plugin.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use kubesched_config::args::NodeAffinityArgs;
use kubesched_framework::events::QueueingHint;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, NodeScore, Plugin, PluginError, PodInfo,
    PreFilterPlugin, PreFilterResult, PreScorePlugin, ScoreExtensions, ScorePlugin, Snapshot,
    Status,
};

use crate::helper::normalize_to_max;

mod selector;

pub use selector::{
    NodeSelector, PreferredSchedulingTerms, RequiredNodeAffinity,
    pod_matches_node_selector_and_affinity,
};

/// The plugin's name.
pub const NAME: &str = "NodeAffinity";
/// Filter's reason when the pod's node selector or required affinity does not match.
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// Filter's reason when the plugin's `addedAffinity` does not match.
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// PreFilter's reason when the `metadata.name` fields of the required terms select no
/// node at all.
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// The field `matchFields` may select on.
const OBJECT_NAME_FIELD: &str = "metadata.name";

fn required_terms(pod: &PodInfo) -> Option<&core::NodeSelector> {
    pod.spec()
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()
}

fn preferred_terms(pod: &PodInfo) -> Option<&[core::PreferredSchedulingTerm]> {
    pod.spec()
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .preferred_during_scheduling_ignored_during_execution
        .as_deref()
}

/// The node names the required terms' `metadata.name In` fields allow, as
/// kube-scheduler's PreFilter computes them: `None` when some term has no such field
/// (every node is possible).
fn node_names_from_terms(terms: &[core::NodeSelectorTerm]) -> Option<BTreeSet<String>> {
    let mut names: Option<BTreeSet<String>> = None;
    for term in terms {
        let mut term_names: Option<BTreeSet<String>> = None;
        for r in term.match_fields.iter().flatten() {
            if r.key != OBJECT_NAME_FIELD || r.operator != "In" {
                continue;
            }
            let values: BTreeSet<String> = r.values.iter().flatten().cloned().collect();
            term_names = Some(match term_names {
                None => values,
                Some(prev) => prev.intersection(&values).cloned().collect(),
            });
        }
        let term_names = term_names?;
        names.get_or_insert_with(BTreeSet::new).extend(term_names);
    }
    names
}

/// What PreFilter computed for Filter.
#[derive(Clone, Debug)]
struct PreFilterState(Arc<RequiredNodeAffinity>);

/// What PreScore computed for Score: the pod's preferred terms, if any.
#[derive(Clone, Debug)]
struct PreScoreState(Option<Arc<PreferredSchedulingTerms>>);

/// Node affinity and node selectors.
#[derive(Clone, Debug, Default)]
pub struct NodeAffinity {
    added_node_selector: Option<NodeSelector>,
    added_pref_sched_terms: Option<PreferredSchedulingTerms>,
}

impl NodeAffinity {
    /// Builds the plugin from its (validated) args; fails when `addedAffinity` does not
    /// parse.
    pub fn new(args: NodeAffinityArgs) -> Result<NodeAffinity, PluginError> {
        let mut pl = NodeAffinity::default();
        if let Some(added) = args.added_affinity {
            if let Some(ns) = &added.required_during_scheduling_ignored_during_execution {
                pl.added_node_selector = Some(NodeSelector::from_config(ns).map_err(|e| {
                    PluginError::new(format!(
                        "parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: {e}"
                    ))
                })?);
            }
            let terms = &added.preferred_during_scheduling_ignored_during_execution;
            if !terms.is_empty() {
                pl.added_pref_sched_terms = Some(PreferredSchedulingTerms::from_config(terms).map_err(|e| {
                    PluginError::new(format!(
                        "parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: {e}"
                    ))
                })?);
            }
        }
        Ok(pl)
    }
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &str {
        NAME
    }
    // The node affinity and the node selector of the pod (the added affinity of the
    // args is the profile's, the same for every pod).
    /// The verdict reads the pod and the node's labels only.
    fn node_local(&self, _pod: &PodInfo) -> bool {
        true
    }
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
    }
    // Reads the node's labels only.
    fn reads_node_pods(&self, _pod: &PodInfo) -> bool {
        false
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        use kubesched_framework::signature::{SignFragment, node_affinity_fragment, signers};
        Ok(vec![
            node_affinity_fragment(pod),
            SignFragment::json(signers::NODE_SELECTOR, &pod.spec().node_selector),
        ])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::node_affinity()
    }
    kubesched_framework::extension_points!(PreFilter, Filter, PreScore, Score);

    /// kube-scheduler's `isSchedulableAfterNodeChange`: a node added or relabelled
    /// helps only when it matches the profile's `addedAffinity` and the pod's required
    /// affinity and node selector, and, for an update, did not match the pod's before.
    /// Pod events always help.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> QueueingHint {
        crate::events::node_change_hint(event, objects, |original, modified| {
            if self
                .added_node_selector
                .as_ref()
                .is_some_and(|s| !s.matches(modified))
            {
                return QueueingHint::QueueSkip;
            }
            let required = RequiredNodeAffinity::from_pod(pod);
            if !required.matches(modified) {
                return QueueingHint::QueueSkip;
            }
            QueueingHint::queue_if(original.is_none_or(|n| !required.matches(n)))
        })
    }
}

impl PreFilterPlugin for NodeAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let required = required_terms(pod);
        if required.is_none()
            && self.added_node_selector.is_none()
            && pod.spec().node_selector.is_none()
        {
            return (None, Status::skip());
        }
        state.write(PreFilterState(Arc::new(RequiredNodeAffinity::from_pod(
            pod,
        ))));
        let Some(required) = required.filter(|r| !r.node_selector_terms.is_empty()) else {
            return (None, Status::success());
        };
        match node_names_from_terms(&required.node_selector_terms) {
            Some(names) if names.is_empty() => (
                None,
                Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_CONFLICT),
            ),
            Some(names) => (
                Some(PreFilterResult {
                    node_names: Some(names),
                }),
                Status::success(),
            ),
            None => (None, Status::success()),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if self
            .added_node_selector
            .as_ref()
            .is_some_and(|s| !s.matches(node))
        {
            let status = Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_ENFORCED);
            return match &self.added_node_selector {
                Some(added) if state.explain() => {
                    status.with_notes(added.explain("the profile's addedAffinity", node))
                }
                _ => status,
            };
        }
        let parsed;
        let required = match state.read::<PreFilterState>() {
            Some(s) => &*s.0,
            // PreFilter disabled: parse here.
            None => {
                parsed = RequiredNodeAffinity::from_pod(pod);
                &parsed
            }
        };
        if required.matches(node) {
            return Status::success();
        }
        let status = Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_POD);
        if state.explain() {
            status.with_notes(required.explain(node))
        } else {
            status
        }
    }
}

fn pod_preferred(pod: &PodInfo) -> Result<Option<PreferredSchedulingTerms>, Status> {
    preferred_terms(pod)
        .map(PreferredSchedulingTerms::from_api)
        .transpose()
        .map_err(|e| {
            Status::error(format!(
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution{e}"
            ))
        })
}

impl PreScorePlugin for NodeAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        let preferred = match pod_preferred(pod) {
            Ok(p) => p,
            Err(s) => return s,
        };
        if preferred.is_none() && self.added_pref_sched_terms.is_none() {
            return Status::skip();
        }
        state.write(PreScoreState(preferred.map(Arc::new)));
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let mut count = self
            .added_pref_sched_terms
            .as_ref()
            .map_or(0, |t| t.score(node));
        match state.read::<PreScoreState>() {
            Some(s) => count += s.0.as_ref().map_or(0, |t| t.score(node)),
            // PreScore disabled: parse here.
            None => count += pod_preferred(pod)?.map_or(0, |t| t.score(node)),
        }
        Ok(count)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for NodeAffinity {
    fn normalize_score(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        normalize_to_max(false, scores);
        Status::success()
    }
    fn normalization(&self, _: &CycleState) -> kubesched_framework::Normalization {
        kubesched_framework::Normalization::ScaledToMax { reverse: false }
    }
}

#[cfg(test)]
mod tests;
