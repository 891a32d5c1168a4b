//! PodTopologySpread: spreads pods that match a label selector evenly over topology
//! domains (the values of a node label such as `topology.kubernetes.io/zone`).
//!
//! As in kube-scheduler v1.35:
//!
//! - The constraints are the pod's `topologySpreadConstraints`, or, when it has none,
//!   the plugin's default constraints: with `defaultingType: System` (the default) the
//!   system ones (hostname maxSkew 3, zone maxSkew 5, both `ScheduleAnyway`), with
//!   `List` the args' `defaultConstraints`. Default constraints take their selector from
//!   the Services, ReplicationControllers, ReplicaSets and StatefulSets that select the
//!   pod (the pod's namespace only); a pod that none selects gets no default constraint.
//! - `matchLabelKeys` add `key in (pod's value)` to the selector for every key the pod
//!   has. `minDomains` defaults to 1, `nodeAffinityPolicy` to Honor (only nodes that
//!   match the pod's `nodeSelector` and required node affinity are domains) and
//!   `nodeTaintsPolicy` to Ignore (Honor drops nodes with a `NoSchedule`/`NoExecute`
//!   taint the pod does not tolerate).
//! - Only pods of the incoming pod's namespace count, terminating pods (with a
//!   `deletionTimestamp`) do not, and an empty selector (`labelSelector: {}`) counts no
//!   pod (v1.35's `countPodsMatchSelector`), although the incoming pod still matches it.
//! - PreFilter returns Skip when the pod has no `DoNotSchedule` constraint; Filter
//!   rejects a node without a constraint's topology key with "node(s) didn't match pod
//!   topology spread constraints (missing required label)"
//!   (UnschedulableAndUnresolvable), and a node where `count + self - globalMin >
//!   maxSkew` with "node(s) didn't match pod topology spread constraints"
//!   (Unschedulable). With fewer domains than `minDomains` the global minimum is 0.
//!   AddPod/RemovePod update the counts for preemption.
//! - PreScore returns Skip when there are no nodes or the pod has no `ScheduleAnyway`
//!   constraint. A node's raw score sums, over the constraints whose key it has,
//!   `count * ln(domains + 2) + maxSkew - 1`, rounded; domains are counted over the
//!   feasible nodes (for the hostname key: the feasible nodes that are not ignored).
//!   Nodes missing one of the keys are ignored (score 0), except under the system
//!   defaults. NormalizeScore gives `100 * (max + min - s) / max` (all 100 when the
//!   highest score is 0).
//!
//! Split as kube-scheduler's plugin is: this module holds the plugin, its args and the
//! constraints and default selectors both halves share; `filtering` holds PreFilter,
//! its extensions and Filter; `scoring` holds PreScore, Score and NormalizeScore;
//! `hints` the queueing hints.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::TopologySpreadConstraint as ApiConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kubesched_config::args::{DefaultingType, PodTopologySpreadArgs};
use kubesched_framework::snapshot::ClusterObjects;
use kubesched_framework::{NodeInfo, Plugin, PodInfo};

use crate::helper::find_untolerated_taint;
use crate::label_selector::{Requirement, Selector, no_labels};
use crate::node_affinity::RequiredNodeAffinity;

mod filtering;
mod hints;
mod scoring;
#[cfg(test)]
mod tests;

/// The plugin's name.
pub const NAME: &str = "PodTopologySpread";
/// Filter's reason when a node would make the skew exceed `maxSkew`.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// Filter's reason when a node lacks a constraint's topology key.
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// The well-known hostname label (`v1.LabelHostname`).
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// The well-known zone label (`v1.LabelTopologyZone`).
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
const HONOR: &str = "Honor";

/// kube-scheduler's built-in default constraints (`defaultingType: System`).
pub fn system_default_constraints() -> Vec<ApiConstraint> {
    vec![
        ApiConstraint {
            topology_key: LABEL_HOSTNAME.to_string(),
            when_unsatisfiable: SCHEDULE_ANYWAY.to_string(),
            max_skew: 3,
            ..Default::default()
        },
        ApiConstraint {
            topology_key: LABEL_TOPOLOGY_ZONE.to_string(),
            when_unsatisfiable: SCHEDULE_ANYWAY.to_string(),
            max_skew: 5,
            ..Default::default()
        },
    ]
}

/// A constraint with its selector compiled and its defaults applied.
#[derive(Clone, Debug)]
struct Constraint {
    max_skew: i32,
    topology_key: String,
    selector: Selector,
    min_domains: i32,
    honor_node_affinity: bool,
    honor_node_taints: bool,
}

impl Constraint {
    /// Whether the node is an eligible domain member under the constraint's node
    /// inclusion policies.
    fn includes_node(
        &self,
        pod: &PodInfo,
        affinity: &RequiredNodeAffinity,
        node: &NodeInfo,
    ) -> bool {
        if self.honor_node_affinity && !affinity.matches(node) {
            return false;
        }
        if self.honor_node_taints {
            let tolerations = pod.spec().tolerations.as_deref().unwrap_or(&[]);
            let untolerated = find_untolerated_taint(node.taints(), tolerations, |t| {
                t.effect == "NoSchedule" || t.effect == "NoExecute"
            });
            if untolerated.is_some() {
                return false;
            }
        }
        true
    }
}

/// `true` when the node has every constraint's topology key.
fn node_has_all_keys(node: &NodeInfo, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| node.label(&c.topology_key).is_some())
}

/// `true` when the pod has topology spread constraints of its own.
fn has_own_constraints(pod: &PodInfo) -> bool {
    pod.spec()
        .topology_spread_constraints
        .as_ref()
        .is_some_and(|c| !c.is_empty())
}

fn pod_labels(pod: &PodInfo) -> &BTreeMap<String, String> {
    pod.pod()
        .metadata
        .labels
        .as_ref()
        .unwrap_or_else(|| no_labels())
}

/// The pods of `namespace` on the node that match the selector, leaving out terminating
/// pods. An empty selector counts nothing, as v1.35 does.
fn count_pods_match_selector(pods: &[Arc<PodInfo>], selector: &Selector, namespace: &str) -> i64 {
    if selector.is_everything() {
        return 0;
    }
    pods.iter()
        .filter(|p| {
            p.metadata().deletion_timestamp.is_none()
                && p.namespace() == namespace
                && selector.matches(pod_labels(p))
        })
        .count() as i64
}

/// Pod topology spread.
#[derive(Clone, Debug)]
pub struct PodTopologySpread {
    default_constraints: Vec<ApiConstraint>,
    system_defaulted: bool,
}

impl Default for PodTopologySpread {
    fn default() -> Self {
        PodTopologySpread::new(PodTopologySpreadArgs::default())
    }
}

impl PodTopologySpread {
    /// Builds the plugin from its (validated) args.
    pub fn new(args: PodTopologySpreadArgs) -> PodTopologySpread {
        match args.defaulting_type {
            DefaultingType::System => PodTopologySpread {
                default_constraints: system_default_constraints(),
                system_defaulted: true,
            },
            DefaultingType::List => PodTopologySpread {
                default_constraints: args
                    .default_constraints
                    .into_iter()
                    .map(|c| ApiConstraint {
                        // Validation forbids a selector in default constraints; it is
                        // deduced per pod.
                        label_selector: None,
                        match_label_keys: (!c.match_label_keys.is_empty())
                            .then_some(c.match_label_keys),
                        max_skew: c.max_skew,
                        min_domains: c.min_domains,
                        node_affinity_policy: c.node_affinity_policy,
                        node_taints_policy: c.node_taints_policy,
                        topology_key: c.topology_key,
                        when_unsatisfiable: c.when_unsatisfiable,
                    })
                    .collect(),
                system_defaulted: false,
            },
        }
    }

    /// The pod's constraints with `whenUnsatisfiable == action`: its own, or the default
    /// ones when it has none.
    fn constraints(
        &self,
        pod: &PodInfo,
        action: &str,
        objects: &ClusterObjects,
    ) -> Result<Vec<Constraint>, String> {
        if let Some(own) = pod
            .spec()
            .topology_spread_constraints
            .as_deref()
            .filter(|c| !c.is_empty())
        {
            return filter_constraints(own, pod_labels(pod), action);
        }
        let mut constraints =
            filter_constraints(&self.default_constraints, pod_labels(pod), action)?;
        if constraints.is_empty() {
            return Ok(constraints);
        }
        let selector = default_selector(pod, objects);
        if selector.is_everything() {
            return Ok(Vec::new());
        }
        for c in &mut constraints {
            c.selector = selector.clone();
        }
        Ok(constraints)
    }
}

/// Compiles the constraints with `whenUnsatisfiable == action`, merging `matchLabelKeys`
/// into their selectors.
fn filter_constraints(
    constraints: &[ApiConstraint],
    labels: &BTreeMap<String, String>,
    action: &str,
) -> Result<Vec<Constraint>, String> {
    let mut out = Vec::new();
    for c in constraints
        .iter()
        .filter(|c| c.when_unsatisfiable == action)
    {
        let mut selector = Selector::from_label_selector(c.label_selector.as_ref())?;
        // Merging into a selector that matches nothing leaves it matching nothing.
        if matches!(selector, Selector::All(_)) {
            for key in c.match_label_keys.iter().flatten() {
                if let Some(value) = labels.get(key) {
                    selector.push(Requirement::In(key.clone(), vec![value.clone()]));
                }
            }
        }
        out.push(Constraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: c.min_domains.unwrap_or(1),
            honor_node_affinity: c.node_affinity_policy.as_deref().is_none_or(|p| p == HONOR),
            honor_node_taints: c.node_taints_policy.as_deref() == Some(HONOR),
        });
    }
    Ok(out)
}

fn in_namespace(namespace: Option<&str>, pod: &PodInfo) -> bool {
    namespace.unwrap_or("default") == pod.namespace()
}

fn selector_from_set(set: &BTreeMap<String, String>) -> Vec<Requirement> {
    set.iter()
        .map(|(k, v)| Requirement::In(k.clone(), vec![v.clone()]))
        .collect()
}

/// kube-scheduler's `helper.DefaultSelector`: the union of the selectors of the
/// Services that select the pod and of its controlling ReplicationController,
/// ReplicaSet or StatefulSet.
fn default_selector(pod: &PodInfo, objects: &ClusterObjects) -> Selector {
    let labels = pod_labels(pod);
    let mut set: BTreeMap<String, String> = BTreeMap::new();
    for svc in &objects.services {
        if !in_namespace(svc.metadata.namespace.as_deref(), pod) {
            continue;
        }
        // A Service without a selector selects nothing.
        let Some(sel) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
            continue;
        };
        if sel.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            set.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let mut reqs = selector_from_set(&set);

    let owner = pod
        .pod()
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let Some(owner) = owner else {
        return Selector::All(reqs);
    };
    let Some((group, version)) = parse_group_version(&owner.api_version) else {
        return Selector::All(reqs);
    };
    let same = |ns: Option<&str>, name: Option<&str>| {
        in_namespace(ns, pod) && name == Some(owner.name.as_str())
    };
    let add_label_selector = |reqs: &mut Vec<Requirement>, sel: Option<&LabelSelector>| {
        if let Ok(Selector::All(more)) = Selector::from_label_selector(sel) {
            reqs.extend(more);
        }
    };
    match (group, version, owner.kind.as_str()) {
        ("", "v1", "ReplicationController") => {
            let rc = objects.replication_controllers.iter().find(|rc| {
                same(
                    rc.metadata.namespace.as_deref(),
                    rc.metadata.name.as_deref(),
                )
            });
            if let Some(rc) = rc {
                set.extend(
                    rc.spec
                        .iter()
                        .flat_map(|s| s.selector.iter().flatten())
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
                reqs = selector_from_set(&set);
            }
        }
        ("apps", "v1", "ReplicaSet") => {
            let rs = objects.replica_sets.iter().find(|rs| {
                same(
                    rs.metadata.namespace.as_deref(),
                    rs.metadata.name.as_deref(),
                )
            });
            if let Some(rs) = rs {
                add_label_selector(&mut reqs, Some(&rs.spec.selector));
            }
        }
        ("apps", "v1", "StatefulSet") => {
            let ss = objects.stateful_sets.iter().find(|ss| {
                same(
                    ss.metadata.namespace.as_deref(),
                    ss.metadata.name.as_deref(),
                )
            });
            if let Some(ss) = ss {
                add_label_selector(&mut reqs, Some(&ss.spec.selector));
            }
        }
        _ => {}
    }
    Selector::All(reqs)
}

/// apimachinery's `ParseGroupVersion`: "" → ("", ""), "v1" → ("", "v1"), "g/v" → ("g", "v").
fn parse_group_version(s: &str) -> Option<(&str, &str)> {
    if s.is_empty() {
        return Some(("", ""));
    }
    let mut parts = s.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(v), None, _) => Some(("", v)),
        (Some(g), Some(v), None) => Some((g, v)),
        _ => None,
    }
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler: a spread depends on other nodes than the one filtered or scored,
    // so a pod with constraints, its own or the profile's defaults, cannot be signed.
    /// Node by node only when no constraint can refuse a node: the pod has none and
    /// the default constraints (used when it has none) are all ScheduleAnyway. A
    /// DoNotSchedule constraint counts the pods of a whole topology domain.
    fn node_local(&self, pod: &PodInfo) -> bool {
        let own = pod
            .spec()
            .topology_spread_constraints
            .as_ref()
            .is_some_and(|c| !c.is_empty());
        !own && self
            .default_constraints
            .iter()
            .all(|c| c.when_unsatisfiable == "ScheduleAnyway")
    }
    /// Asked only when no constraint applies to the pod ([`Plugin::node_scoped`]): the
    /// plugin then ignores the pod, so it adds nothing to the signature.
    fn sign_pod_exact(
        &self,
        _pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(Vec::new())
    }
    /// Spreading counts pods over whole topology domains: node by node only when no
    /// constraint applies (the pod has none of its own, and the default ones have no
    /// selector for it: no Service, ReplicationController, ReplicaSet or StatefulSet
    /// selects it).
    fn node_scoped(&self, pod: &PodInfo, snapshot: &kubesched_framework::Snapshot) -> bool {
        let own = pod
            .spec()
            .topology_spread_constraints
            .as_ref()
            .is_some_and(|c| !c.is_empty());
        !own && (self.default_constraints.is_empty()
            || default_selector(pod, snapshot.objects()).is_everything())
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        use kubesched_framework::signature::unsignable;
        if pod
            .spec()
            .topology_spread_constraints
            .as_ref()
            .is_some_and(|c| !c.is_empty())
        {
            return Err(unsignable(
                "pods with topology constraints are not signable",
            ));
        }
        if !self.default_constraints.is_empty() {
            return Err(unsignable(
                "pods with default topology constraints are not signable",
            ));
        }
        Ok(Vec::new())
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::pod_topology_spread()
    }
    kubesched_framework::extension_points!(PreFilter, Filter, PreScore, Score);

    /// `isSchedulableAfterPodChange` and `isSchedulableAfterNodeChange`: a pod event
    /// helps when it changes what a `DoNotSchedule` constraint counts, a node event
    /// when the node has every topology key and is new or changed them or its taints.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> kubesched_framework::QueueingHint {
        self.hint(pod, event, objects)
    }
}
