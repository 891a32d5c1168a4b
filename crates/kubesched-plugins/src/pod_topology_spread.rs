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

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::TopologySpreadConstraint as ApiConstraint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kubesched_config::args::{DefaultingType, PodTopologySpreadArgs};
use kubesched_framework::snapshot::ClusterObjects;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, NodeScore, Plugin, PodInfo,
    PreFilterExtensions, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScoreExtensions,
    ScorePlugin, Snapshot, Status,
};

use crate::helper::find_untolerated_taint;
use crate::label_selector::{Requirement, Selector, no_labels};
use crate::node_affinity::RequiredNodeAffinity;

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
const INVALID_SCORE: i64 = -1;

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
            p.pod().metadata.deletion_timestamp.is_none()
                && p.namespace() == namespace
                && selector.matches(pod_labels(p))
        })
        .count() as i64
}

/// The two domains with the fewest matching pods (kube-scheduler's `criticalPaths`):
/// `paths[0].1` is always the global minimum.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CriticalPaths([(String, i64); 2]);

impl CriticalPaths {
    fn new() -> CriticalPaths {
        CriticalPaths([
            (String::new(), i64::from(i32::MAX)),
            (String::new(), i64::from(i32::MAX)),
        ])
    }

    fn update(&mut self, value: &str, num: i64) {
        let p = &mut self.0;
        let existing = if p[0].0 == value {
            Some(0)
        } else if p[1].0 == value {
            Some(1)
        } else {
            None
        };
        match existing {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None => {
                if num < p[0].1 {
                    p[1] = p[0].clone();
                    p[0] = (value.to_string(), num);
                } else if num < p[1].1 {
                    p[1] = (value.to_string(), num);
                }
            }
        }
    }
}

/// What PreFilter computes for Filter and the AddPod/RemovePod extensions.
#[derive(Clone, Debug)]
struct PreFilterState {
    constraints: Arc<Vec<Constraint>>,
    affinity: Arc<RequiredNodeAffinity>,
    /// Per constraint: the two smallest domains.
    critical_paths: Vec<CriticalPaths>,
    /// Per constraint: matching pods per eligible domain (topology value).
    tp_value_to_match_num: Vec<HashMap<String, i64>>,
}

impl PreFilterState {
    /// The global minimum, 0 when there are fewer eligible domains than `minDomains`.
    fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        let domains = self.tp_value_to_match_num.get(i).map_or(0, HashMap::len);
        if (domains as i64) < i64::from(min_domains) {
            return 0;
        }
        self.critical_paths.get(i).map_or(0, |p| p.0[0].1)
    }

    /// kube-scheduler's `updateWithPod`: `delta` more (or fewer) matching pods on `node`.
    fn update_with_pod(
        &mut self,
        updated: &PodInfo,
        preemptor: &PodInfo,
        node: &NodeInfo,
        delta: i64,
    ) {
        if updated.namespace() != preemptor.namespace()
            || !node_has_all_keys(node, &self.constraints)
        {
            return;
        }
        let labels = pod_labels(updated);
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(labels) || !c.includes_node(preemptor, &self.affinity, node) {
                continue;
            }
            let value = node.label(&c.topology_key).unwrap_or("");
            let (Some(counts), Some(paths)) = (
                self.tp_value_to_match_num.get_mut(i),
                self.critical_paths.get_mut(i),
            ) else {
                continue;
            };
            let n = counts.entry(value.to_string()).or_insert(0);
            *n += delta;
            paths.update(value, *n);
        }
    }
}

/// What PreScore computes for Score and NormalizeScore.
#[derive(Clone, Debug)]
struct PreScoreState {
    constraints: Vec<Constraint>,
    /// Whether nodes missing a topology key are ignored (score 0).
    require_all_topologies: bool,
    /// Node-order indices of the ignored feasible nodes, sorted.
    ignored_nodes: Vec<usize>,
    /// Per constraint (non-hostname keys): matching pods per domain of the feasible nodes.
    value_to_pod_counts: Vec<HashMap<String, i64>>,
    /// Per constraint: `ln(domains + 2)`.
    normalizing_weights: Vec<f64>,
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

/// `ln(size + 2)`: the weight of a topology with `size` domains.
fn topology_normalizing_weight(size: usize) -> f64 {
    (size as f64 + 2.0).ln()
}

/// `cnt * weight + maxSkew - 1`.
fn score_for_count(cnt: i64, max_skew: i32, weight: f64) -> f64 {
    cnt as f64 * weight + f64::from(max_skew.saturating_sub(1))
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler: a spread depends on other nodes than the one filtered or scored,
    // so a pod with constraints, its own or the profile's defaults, cannot be signed.
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
}

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let constraints = match self.constraints(pod, DO_NOT_SCHEDULE, snapshot.objects()) {
            Ok(c) => c,
            Err(e) => {
                let what = if has_own_constraints(pod) {
                    "obtaining pod's hard topology spread constraints"
                } else {
                    "setting default hard topology spread constraints"
                };
                return (
                    None,
                    Status::error(format!("get constraints from pod: {what}: {e}")),
                );
            }
        };
        if constraints.is_empty() {
            return (None, Status::skip());
        }
        let affinity = RequiredNodeAffinity::from_pod(pod);
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); constraints.len()];
        for node in snapshot.nodes() {
            if !node_has_all_keys(node, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.includes_node(pod, &affinity, node) {
                    continue;
                }
                let value = node.label(&c.topology_key).unwrap_or("");
                let n = count_pods_match_selector(node.pods(), &c.selector, pod.namespace());
                match counts[i].get_mut(value) {
                    Some(total) => *total += n,
                    None => {
                        counts[i].insert(value.to_string(), n);
                    }
                }
            }
        }
        let critical_paths = counts
            .iter()
            .map(|m| {
                let mut p = CriticalPaths::new();
                for (v, &n) in m {
                    p.update(v, n);
                }
                p
            })
            .collect();
        state.write(PreFilterState {
            constraints: Arc::new(constraints),
            affinity: Arc::new(affinity),
            critical_paths,
            tp_value_to_match_num: counts,
        });
        (None, Status::success())
    }

    fn pre_filter_extensions(&self) -> Option<&dyn PreFilterExtensions> {
        Some(self)
    }
}

impl PreFilterExtensions for PodTopologySpread {
    fn add_pod(
        &self,
        state: &mut CycleState,
        pod_to_schedule: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match state.read_mut::<PreFilterState>() {
            Some(s) => {
                s.update_with_pod(pod_to_add, pod_to_schedule, node, 1);
                Status::success()
            }
            None => {
                Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found")
            }
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
                s.update_with_pod(pod_to_remove, pod_to_schedule, node, -1);
                Status::success()
            }
            None => {
                Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found")
            }
        }
    }
}

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>() else {
            return Status::error(
                "reading \"PreFilterPodTopologySpread\" from cycleState: not found",
            );
        };
        let labels = pod_labels(pod);
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = node.label(&c.topology_key) else {
                return Status::new(
                    Code::UnschedulableAndUnresolvable,
                    ERR_REASON_NODE_LABEL_NOT_MATCH,
                );
            };
            let min = s.min_match_num(i, c.min_domains);
            let self_match = i64::from(c.selector.matches(labels));
            let match_num = s
                .tp_value_to_match_num
                .get(i)
                .and_then(|m| m.get(value))
                .copied()
                .unwrap_or(0);
            if match_num + self_match - min > i64::from(c.max_skew) {
                return Status::new(Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        if snapshot.num_nodes() == 0 {
            return Status::skip();
        }
        let has_own = has_own_constraints(pod);
        let require_all_topologies = has_own || !self.system_defaulted;
        let constraints = match self.constraints(pod, SCHEDULE_ANYWAY, snapshot.objects()) {
            Ok(c) => c,
            Err(e) => {
                let what = if has_own {
                    "obtaining pod's soft topology spread constraints"
                } else {
                    "setting default soft topology spread constraints"
                };
                return Status::error(format!("calculating preScoreState: {what}: {e}"));
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }

        let mut value_to_pod_counts: Vec<HashMap<String, i64>> =
            vec![HashMap::new(); constraints.len()];
        let mut topo_size = vec![0usize; constraints.len()];
        let mut ignored_nodes = Vec::new();
        for node in nodes {
            if require_all_topologies && !node_has_all_keys(node, &constraints) {
                if let Some(i) = snapshot.index_of(node.name()) {
                    ignored_nodes.push(i);
                }
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                // Per-node counts of the hostname key are made in Score.
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                let value = node.label(&c.topology_key).unwrap_or("");
                if !value_to_pod_counts[i].contains_key(value) {
                    value_to_pod_counts[i].insert(value.to_string(), 0);
                    topo_size[i] += 1;
                }
            }
        }
        ignored_nodes.sort_unstable();
        ignored_nodes.dedup();
        let normalizing_weights = constraints
            .iter()
            .zip(&topo_size)
            .map(|(c, &size)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    nodes.len().saturating_sub(ignored_nodes.len())
                } else {
                    size
                };
                topology_normalizing_weight(size)
            })
            .collect();

        let affinity = RequiredNodeAffinity::from_pod(pod);
        for node in snapshot.nodes() {
            if require_all_topologies && !node_has_all_keys(node, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.includes_node(pod, &affinity, node) {
                    continue;
                }
                let value = node.label(&c.topology_key).unwrap_or("");
                // Only domains of feasible nodes are counted (never the hostname key's).
                if let Some(count) = value_to_pod_counts[i].get_mut(value) {
                    *count += count_pods_match_selector(node.pods(), &c.selector, pod.namespace());
                }
            }
        }

        state.write(PreScoreState {
            constraints,
            require_all_topologies,
            ignored_nodes,
            value_to_pod_counts,
            normalizing_weights,
        });
        Status::success()
    }
}

impl ScorePlugin for PodTopologySpread {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let s = state.read::<PreScoreState>().ok_or_else(|| {
            Status::error("error reading \"PreScorePodTopologySpread\" from cycleState: not found")
        })?;
        if s.require_all_topologies && !node_has_all_keys(node, &s.constraints) {
            return Ok(0);
        }
        let mut score = 0.0;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = node.label(&c.topology_key) else {
                continue;
            };
            let cnt = if c.topology_key == LABEL_HOSTNAME {
                count_pods_match_selector(node.pods(), &c.selector, pod.namespace())
            } else {
                s.value_to_pod_counts
                    .get(i)
                    .and_then(|m| m.get(value))
                    .copied()
                    .unwrap_or(0)
            };
            let weight = s.normalizing_weights.get(i).copied().unwrap_or(0.0);
            score += score_for_count(cnt, c.max_skew, weight);
        }
        Ok(score.round() as i64)
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

impl ScoreExtensions for PodTopologySpread {
    fn normalize_score(&self, state: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        let Some(s) = state.read::<PreScoreState>() else {
            return Status::error(
                "reading \"PreScorePodTopologySpread\" from cycleState: not found",
            );
        };
        let mut min_score = i64::MAX;
        let mut max_score = 0;
        for ns in scores.iter_mut() {
            if s.ignored_nodes.binary_search(&ns.node_index).is_ok() {
                ns.score = INVALID_SCORE;
                continue;
            }
            min_score = min_score.min(ns.score);
            max_score = max_score.max(ns.score);
        }
        for ns in scores.iter_mut() {
            if ns.score == INVALID_SCORE {
                ns.score = 0;
            } else if max_score == 0 {
                ns.score = MAX_NODE_SCORE;
            } else {
                ns.score = MAX_NODE_SCORE * (max_score + min_score - ns.score) / max_score;
            }
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod, Service};
    use serde_json::{Value, json};

    fn node(name: &str, labels: Value) -> Arc<Node> {
        node_with_taints(name, labels, json!([]))
    }

    fn node_with_taints(name: &str, labels: Value, taints: Value) -> Arc<Node> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": taints},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
            }))
            .unwrap(),
        )
    }

    /// A pod `ns/name` with `labels`, bound to `node` when given, with extra `spec` fields.
    fn pod(ns: &str, name: &str, labels: Value, node: Option<&str>, spec: Value) -> Arc<PodInfo> {
        let mut s = json!({"containers": [{"name": "c", "image": "i"}]});
        if let Some(n) = node {
            s["nodeName"] = json!(n);
        }
        if let Value::Object(extra) = spec {
            for (k, v) in extra {
                s[k] = v;
            }
        }
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": s
        }))
        .unwrap();
        Arc::new(PodInfo::new(Arc::new(p)).unwrap())
    }

    fn constraint(max_skew: i32, key: &str, action: &str, selector: Value) -> Value {
        json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action, "labelSelector": selector})
    }

    fn foo_exists() -> Value {
        json!({"matchExpressions": [{"key": "foo", "operator": "Exists"}]})
    }

    /// The incoming pod: labelled foo, with these constraints.
    fn incoming(constraints: Value, extra: Value) -> Arc<PodInfo> {
        let mut spec = json!({"topologySpreadConstraints": constraints});
        if let Value::Object(e) = extra {
            for (k, v) in e {
                spec[k] = v;
            }
        }
        pod("default", "p", json!({"foo": ""}), None, spec)
    }

    /// `n` pods labelled foo in `ns` on `node`.
    fn foo_pods(ns: &str, node: &str, n: usize) -> Vec<Arc<PodInfo>> {
        (0..n)
            .map(|i| {
                pod(
                    ns,
                    &format!("p-{node}-{i}"),
                    json!({"foo": ""}),
                    Some(node),
                    json!({}),
                )
            })
            .collect()
    }

    fn zone_nodes() -> Vec<Arc<Node>> {
        vec![
            node("node-a", json!({"zone": "zone1", "node": "node-a"})),
            node("node-b", json!({"zone": "zone1", "node": "node-b"})),
            node("node-x", json!({"zone": "zone2", "node": "node-x"})),
            node("node-y", json!({"zone": "zone2", "node": "node-y"})),
        ]
    }

    fn snapshot(nodes: Vec<Arc<Node>>, pods: Vec<Arc<PodInfo>>) -> Snapshot {
        Snapshot::new(nodes, pods).unwrap().0
    }

    /// Runs PreFilter and Filter on every node: `None` for a pass, else (code, reason).
    fn run_filter(
        pl: &PodTopologySpread,
        pod: &PodInfo,
        snap: &Snapshot,
    ) -> Vec<Option<(Code, String)>> {
        let mut state = CycleState::new();
        let (_, s) = pl.pre_filter(&mut state, pod, snap);
        assert!(s.is_success(), "{s}");
        snap.nodes()
            .iter()
            .map(|n| {
                let s = pl.filter(&state, pod, n);
                (!s.is_success()).then(|| (s.code(), s.message()))
            })
            .collect()
    }

    /// A Filter outcome: `None` for a pass, else (code, reason).
    type Outcome = Option<(Code, String)>;
    /// name, nodes, incoming pod, existing pods, expected outcome per node.
    type FilterCase = (
        &'static str,
        Vec<Arc<Node>>,
        Arc<PodInfo>,
        Vec<Arc<PodInfo>>,
        Vec<Outcome>,
    );
    /// name, nodes, incoming pod, existing pods, feasible nodes, expected scores.
    type ScoreCase = (
        &'static str,
        Vec<Arc<Node>>,
        Arc<PodInfo>,
        Vec<Arc<PodInfo>>,
        Vec<&'static str>,
        Option<Vec<i64>>,
    );

    fn pass() -> Option<(Code, String)> {
        None
    }
    fn skew() -> Option<(Code, String)> {
        Some((
            Code::Unschedulable,
            ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string(),
        ))
    }
    fn no_label() -> Option<(Code, String)> {
        Some((
            Code::UnschedulableAndUnresolvable,
            ERR_REASON_NODE_LABEL_NOT_MATCH.to_string(),
        ))
    }

    #[test]
    fn single_constraint_filter() {
        let zone = |skew: i32| json!([constraint(skew, "zone", "DoNotSchedule", foo_exists())]);
        let host = |skew: i32| json!([constraint(skew, "node", "DoNotSchedule", foo_exists())]);
        let counts = |a, b, x, y| {
            [("node-a", a), ("node-b", b), ("node-x", x), ("node-y", y)]
                .into_iter()
                .flat_map(|(n, c)| foo_pods("default", n, c))
                .collect::<Vec<_>>()
        };
        let cases: Vec<FilterCase> = vec![
            (
                "no existing pods",
                zone_nodes(),
                incoming(zone(1), json!({})),
                vec![],
                vec![pass(); 4],
            ),
            (
                "no existing pods, incoming pod doesn't match itself",
                zone_nodes(),
                pod(
                    "default",
                    "p",
                    json!({"bar": ""}),
                    None,
                    json!({"topologySpreadConstraints": zone(1)}),
                ),
                vec![],
                vec![pass(); 4],
            ),
            (
                "existing pods in a different namespace do not count",
                zone_nodes(),
                incoming(zone(1), json!({})),
                [foo_pods("ns1", "node-a", 2), foo_pods("ns2", "node-b", 1)].concat(),
                vec![pass(); 4],
            ),
            (
                "pods spread across zones as 3/3, all nodes fit",
                zone_nodes(),
                incoming(zone(1), json!({})),
                counts(2, 1, 1, 2),
                vec![pass(); 4],
            ),
            (
                "pods spread across zones as 3/4, only zone1 fits",
                zone_nodes(),
                incoming(zone(1), json!({})),
                counts(2, 1, 2, 2),
                vec![pass(), pass(), skew(), skew()],
            ),
            (
                "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
                vec![
                    node("node-a", json!({"zone": "zone1", "node": "node-a"})),
                    node("node-b", json!({"zon": "zone1", "node": "node-b"})),
                    node("node-x", json!({"zone": "zone2", "node": "node-x"})),
                    node("node-y", json!({"zone": "zone2", "node": "node-y"})),
                ],
                incoming(zone(1), json!({})),
                counts(1, 1, 1, 1),
                vec![pass(), no_label(), skew(), skew()],
            ),
            (
                "pods spread across nodes as 2/1/0/3, only node-x fits",
                zone_nodes(),
                incoming(host(1), json!({})),
                counts(2, 1, 0, 3),
                vec![skew(), skew(), pass(), skew()],
            ),
            (
                "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
                zone_nodes(),
                incoming(host(2), json!({})),
                counts(2, 1, 0, 3),
                vec![skew(), pass(), pass(), skew()],
            ),
            (
                "terminating pods are not counted",
                zone_nodes(),
                incoming(zone(1), json!({})),
                {
                    let mut p = (*foo_pods("default", "node-a", 1)[0].pod()).clone();
                    p.metadata.deletion_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            "2024-01-01T00:00:00Z".parse().unwrap(),
                        ));
                    vec![Arc::new(PodInfo::new(Arc::new(p)).unwrap())]
                },
                vec![pass(); 4],
            ),
            (
                // v1.35 counts no pod for an empty selector, but the pod matches it itself.
                "empty selector counts no pods",
                zone_nodes(),
                incoming(
                    json!([constraint(1, "node", "DoNotSchedule", json!({}))]),
                    json!({}),
                ),
                counts(3, 0, 0, 0),
                vec![pass(); 4],
            ),
            (
                "pods spread across nodes as 2/2/1, the number of domains < minDomains, only the third node fits",
                zone_nodes()[..3].to_vec(),
                incoming(
                    json!([{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": foo_exists(), "minDomains": 4}]),
                    json!({}),
                ),
                counts(2, 2, 1, 0),
                vec![skew(), skew(), pass()],
            ),
            (
                "pods spread across nodes as 2/2/1, the number of domains >= minDomains, every node fits",
                zone_nodes()[..3].to_vec(),
                incoming(
                    json!([{"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": foo_exists(), "minDomains": 3}]),
                    json!({}),
                ),
                counts(2, 2, 1, 0),
                vec![pass(); 3],
            ),
            (
                "NodeAffinityPolicy honored: only zone2 nodes are domains",
                zone_nodes(),
                incoming(zone(1), json!({"nodeSelector": {"zone": "zone2"}})),
                counts(0, 0, 1, 1),
                // zone1 is no domain: the only domain zone2 has 2, self 1, min 2.
                vec![pass(), pass(), pass(), pass()],
            ),
            (
                "NodeAffinityPolicy ignored: zone1 is a domain with 0 pods",
                zone_nodes(),
                incoming(
                    json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": foo_exists(), "nodeAffinityPolicy": "Ignore"}]),
                    json!({"nodeSelector": {"zone": "zone2"}}),
                ),
                counts(0, 0, 1, 1),
                vec![pass(), pass(), skew(), skew()],
            ),
            (
                "matchLabelKeys narrow the selector to the pod's value",
                zone_nodes(),
                pod(
                    "default",
                    "p",
                    json!({"foo": "", "rev": "2"}),
                    None,
                    json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": foo_exists(),
                        "matchLabelKeys": ["rev"]}]}),
                ),
                // rev=1 pods do not count: zone1 0, zone2 0.
                [
                    foo_pods("default", "node-a", 2),
                    vec![pod(
                        "default",
                        "r2",
                        json!({"foo": "", "rev": "2"}),
                        Some("node-x"),
                        json!({}),
                    )],
                ]
                .concat(),
                vec![pass(), pass(), skew(), skew()],
            ),
        ];
        let pl = PodTopologySpread::default();
        for (name, nodes, p, pods, want) in cases {
            let snap = snapshot(nodes, pods);
            assert_eq!(run_filter(&pl, &p, &snap), want, "{name}");
        }
    }

    #[test]
    fn node_taints_policy() {
        let nodes = vec![
            node("a0", json!({"zone": "zone-a"})),
            node("b0", json!({"zone": "zone-b"})),
            node_with_taints(
                "c0",
                json!({"zone": "zone-c"}),
                json!([{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]),
            ),
        ];
        let pods = [foo_pods("default", "a0", 1), foo_pods("default", "b0", 1)].concat();
        let snap = snapshot(nodes, pods);
        let pl = PodTopologySpread::default();
        let honor = incoming(
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": foo_exists(), "nodeTaintsPolicy": "Honor"}]),
            json!({}),
        );
        // c0 is no domain; its own count (0) is then compared with the minimum (1) of
        // the others, so the spread check lets it through (TaintToleration rejects it).
        assert_eq!(run_filter(&pl, &honor, &snap), vec![pass(), pass(), pass()]);
        let ignore = incoming(
            json!([constraint(1, "zone", "DoNotSchedule", foo_exists())]),
            json!({}),
        );
        assert_eq!(
            run_filter(&pl, &ignore, &snap),
            vec![skew(), skew(), pass()]
        );
    }

    #[test]
    fn pre_filter_skips_without_hard_constraints() {
        let pl = PodTopologySpread::default();
        let snap = snapshot(zone_nodes(), vec![]);
        for p in [
            pod("default", "p", json!({"foo": ""}), None, json!({})),
            incoming(
                json!([constraint(1, "zone", "ScheduleAnyway", foo_exists())]),
                json!({}),
            ),
        ] {
            let (_, s) = pl.pre_filter(&mut CycleState::new(), &p, &snap);
            assert!(s.is_skip());
        }
        let bad = incoming(
            json!([constraint(
                1,
                "zone",
                "DoNotSchedule",
                json!({"matchExpressions": [{"key": "foo", "operator": "Like"}]})
            )]),
            json!({}),
        );
        let (_, s) = pl.pre_filter(&mut CycleState::new(), &bad, &snap);
        assert!(s.is_error());
    }

    #[test]
    fn add_and_remove_pod_update_counts() {
        let pl = PodTopologySpread::default();
        let p = incoming(
            json!([constraint(1, "zone", "DoNotSchedule", foo_exists())]),
            json!({}),
        );
        let pods = [
            foo_pods("default", "node-a", 1),
            foo_pods("default", "node-x", 2),
        ]
        .concat();
        let snap = snapshot(zone_nodes(), pods.clone());
        let mut state = CycleState::new();
        assert!(pl.pre_filter(&mut state, &p, &snap).1.is_success());
        let x = snap.get("node-x").unwrap();
        let a = snap.get("node-a").unwrap();
        assert!(!pl.filter(&state, &p, x).is_success());
        // Removing one zone2 pod makes zone2 fit (1 + 1 - 1 <= 1).
        let mut removed = state.clone();
        assert!(pl.remove_pod(&mut removed, &p, &pods[1], x).is_success());
        assert!(pl.filter(&removed, &p, x).is_success());
        // Removing the zone1 pod makes the minimum 0: zone2 is then 3 over it.
        let mut removed_a = state.clone();
        assert!(pl.remove_pod(&mut removed_a, &p, &pods[0], a).is_success());
        assert!(pl.filter(&removed_a, &p, a).is_success());
        assert!(!pl.filter(&removed_a, &p, x).is_success());
        // Adding one to zone1 evens it out; the original state is untouched.
        let mut added = state.clone();
        let extra = pod(
            "default",
            "new",
            json!({"foo": ""}),
            Some("node-a"),
            json!({}),
        );
        assert!(pl.add_pod(&mut added, &p, &extra, a).is_success());
        assert!(pl.filter(&added, &p, x).is_success());
        assert!(!pl.filter(&state, &p, x).is_success());
        // Pods of other namespaces are ignored.
        let mut other = state.clone();
        let foreign = pod(
            "other",
            "new",
            json!({"foo": ""}),
            Some("node-a"),
            json!({}),
        );
        assert!(pl.add_pod(&mut other, &p, &foreign, a).is_success());
        assert!(!pl.filter(&other, &p, x).is_success());
    }

    #[test]
    fn critical_paths_track_the_two_smallest() {
        let mut p = CriticalPaths::new();
        for (v, n) in [("a", 3), ("b", 1), ("c", 2), ("d", 5)] {
            p.update(v, n);
        }
        assert_eq!(p.0[0], ("b".to_string(), 1));
        assert_eq!(p.0[1], ("c".to_string(), 2));
        p.update("b", 3);
        assert_eq!(p.0[0], ("c".to_string(), 2));
        p.update("d", 0);
        assert_eq!(p.0[0], ("d".to_string(), 0));
        assert_eq!(p.0[1], ("c".to_string(), 2));
    }

    /// Runs PreScore, Score and NormalizeScore over the nodes (all feasible), or `None`
    /// when PreScore skips.
    fn run_score(
        pl: &PodTopologySpread,
        pod: &PodInfo,
        snap: &Snapshot,
        feasible: &[&str],
    ) -> Option<Vec<i64>> {
        let mut state = CycleState::new();
        let nodes: Vec<&NodeInfo> = feasible.iter().map(|n| snap.get(n).unwrap()).collect();
        let s = pl.pre_score(&mut state, pod, &nodes, snap);
        if s.is_skip() {
            return None;
        }
        assert!(s.is_success(), "{s}");
        let mut scores: Vec<NodeScore> = nodes
            .iter()
            .map(|n| NodeScore {
                node_index: snap.index_of(n.name()).unwrap(),
                score: pl.score(&state, pod, n).unwrap(),
            })
            .collect();
        assert!(pl.normalize_score(&state, pod, &mut scores).is_success());
        Some(scores.into_iter().map(|s| s.score).collect())
    }

    #[test]
    fn pod_topology_spread_score() {
        let soft_host = json!([constraint(1, "node", "ScheduleAnyway", foo_exists())]);
        let soft_zone = json!([constraint(1, "zone", "ScheduleAnyway", foo_exists())]);
        let all = ["node-a", "node-b", "node-x", "node-y"];
        let cases: Vec<ScoreCase> = vec![
            (
                "one constraint on node, no existing pods",
                zone_nodes(),
                incoming(soft_host.clone(), json!({})),
                vec![],
                all.to_vec(),
                Some(vec![100, 100, 100, 100]),
            ),
            (
                "one constraint on node, all nodes have the same number of matching pods",
                zone_nodes(),
                incoming(soft_host.clone(), json!({})),
                [
                    foo_pods("default", "node-a", 1),
                    foo_pods("default", "node-b", 1),
                ]
                .concat(),
                vec!["node-a", "node-b"],
                Some(vec![100, 100]),
            ),
            (
                // ln(4+2) = 1.79: raw 4, 2, 0, 0 -> 100*(4+0-s)/4.
                "one constraint on node, all 4 nodes are candidates",
                zone_nodes(),
                incoming(soft_host.clone(), json!({})),
                [
                    foo_pods("default", "node-a", 2),
                    foo_pods("default", "node-b", 1),
                ]
                .concat(),
                all.to_vec(),
                Some(vec![0, 50, 100, 100]),
            ),
            (
                // zone1 has 3 (node-b is not feasible but counts), zone2 1; ln(2+2) = 1.39:
                // raw round(4.16) = 4, round(1.39) = 1 -> 100*(5-s)/4.
                "one constraint on zone, pods on infeasible nodes count",
                zone_nodes(),
                incoming(soft_zone.clone(), json!({})),
                [
                    foo_pods("default", "node-a", 1),
                    foo_pods("default", "node-b", 2),
                    foo_pods("default", "node-y", 1),
                ]
                .concat(),
                vec!["node-a", "node-x"],
                Some(vec![25, 100]),
            ),
            (
                "nodes missing the topology key are ignored and score 0",
                vec![
                    node("node-a", json!({"zone": "zone1", "node": "node-a"})),
                    node("node-b", json!({"node": "node-b"})),
                    node("node-x", json!({"zone": "zone2", "node": "node-x"})),
                ],
                incoming(soft_zone.clone(), json!({})),
                foo_pods("default", "node-a", 1),
                vec!["node-a", "node-b", "node-x"],
                // ln(4) = 1.39: raw 1, -, 0 -> 100*(1+0-1)/1 = 0 and 100.
                Some(vec![0, 0, 100]),
            ),
            (
                "no soft constraints: skip",
                zone_nodes(),
                incoming(
                    json!([constraint(1, "zone", "DoNotSchedule", foo_exists())]),
                    json!({}),
                ),
                vec![],
                all.to_vec(),
                None,
            ),
            (
                "no constraints and no selecting workload: skip",
                zone_nodes(),
                pod("default", "p", json!({"foo": ""}), None, json!({})),
                vec![],
                all.to_vec(),
                None,
            ),
            (
                // maxSkew 3: raw = cnt * ln(6) + 2: 6, 4, 2, 2 -> 100*(8-s)/6.
                "maxSkew waters down the differences",
                zone_nodes(),
                incoming(
                    json!([constraint(3, "node", "ScheduleAnyway", foo_exists())]),
                    json!({}),
                ),
                [
                    foo_pods("default", "node-a", 2),
                    foo_pods("default", "node-b", 1),
                ]
                .concat(),
                all.to_vec(),
                Some(vec![33, 66, 100, 100]),
            ),
        ];
        let pl = PodTopologySpread::default();
        for (name, nodes, p, pods, feasible, want) in cases {
            let snap = snapshot(nodes, pods);
            assert_eq!(run_score(&pl, &p, &snap, &feasible), want, "{name}");
        }
    }

    fn service(ns: &str, selector: Value) -> Arc<Service> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "svc", "namespace": ns},
                "spec": {"selector": selector}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn system_default_constraints_apply_to_pods_selected_by_a_service() {
        let nodes = vec![
            node(
                "n1",
                json!({LABEL_HOSTNAME: "n1", LABEL_TOPOLOGY_ZONE: "z1"}),
            ),
            node(
                "n2",
                json!({LABEL_HOSTNAME: "n2", LABEL_TOPOLOGY_ZONE: "z2"}),
            ),
            // No zone: still scored on hostname under the system defaults.
            node("n3", json!({LABEL_HOSTNAME: "n3"})),
        ];
        let web = |name: &str, node: Option<&str>| {
            pod("default", name, json!({"app": "web"}), node, json!({}))
        };
        let mut snap = snapshot(
            nodes,
            vec![
                web("w1", Some("n1")),
                web("w2", Some("n1")),
                web("w3", Some("n2")),
            ],
        );
        let pl = PodTopologySpread::default();
        let p = web("new", None);
        // Without a Service the pod has no default constraint.
        assert_eq!(run_score(&pl, &p, &snap, &["n1", "n2", "n3"]), None);
        // A Service in another namespace does not select it.
        snap.set_objects(Arc::new(ClusterObjects {
            services: vec![service("other", json!({"app": "web"}))],
            ..Default::default()
        }));
        assert_eq!(run_score(&pl, &p, &snap, &["n1", "n2", "n3"]), None);
        snap.set_objects(Arc::new(ClusterObjects {
            services: vec![service("default", json!({"app": "web"}))],
            ..Default::default()
        }));
        // hostname: ln(3+2) = 1.61, maxSkew 3 -> cnt*1.61 + 2; zone: domains z1, z2 and
        // "" (n3) -> ln(5) = 1.61, maxSkew 5 -> cnt*1.61 + 4 for nodes with a zone.
        // n1: 2*1.61+2 + 2*1.61+4 = 12.44 -> 12; n2: 3.61 + 5.61 = 9.22 -> 9; n3: 2.
        // -> 100*(12+2-s)/12: 16, 41, 100.
        assert_eq!(
            run_score(&pl, &p, &snap, &["n1", "n2", "n3"]),
            Some(vec![16, 41, 100])
        );
        // Hard constraints: none among the system defaults.
        let (_, s) = pl.pre_filter(&mut CycleState::new(), &p, &snap);
        assert!(s.is_skip());
    }

    #[test]
    fn list_defaulting_requires_every_key() {
        let args: PodTopologySpreadArgs = serde_json::from_value(json!({
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
        }))
        .unwrap();
        let pl = PodTopologySpread::new(args);
        let mut snap = snapshot(
            vec![
                node("a", json!({"zone": "z1"})),
                node("b", json!({"zone": "z2"})),
                node("c", json!({})),
            ],
            vec![pod(
                "default",
                "w1",
                json!({"app": "web"}),
                Some("a"),
                json!({}),
            )],
        );
        snap.set_objects(Arc::new(ClusterObjects {
            services: vec![service("default", json!({"app": "web"}))],
            ..Default::default()
        }));
        let p = pod("default", "new", json!({"app": "web"}), None, json!({}));
        assert_eq!(run_filter(&pl, &p, &snap), vec![skew(), pass(), no_label()]);
    }

    #[test]
    fn default_selector_from_controllers() {
        use k8s_openapi::api::apps::v1::ReplicaSet;
        let rs: ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": "rs1", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web", "tier": "fe"}}}
        }))
        .unwrap();
        let objects = ClusterObjects {
            replica_sets: vec![Arc::new(rs)],
            ..Default::default()
        };
        let owned = |api: &str, kind: &str| {
            let p: Pod = serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web", "tier": "fe"},
                    "ownerReferences": [{"apiVersion": api, "kind": kind, "name": "rs1", "uid": "u", "controller": true}]},
                "spec": {"containers": []}
            }))
            .unwrap();
            PodInfo::new(Arc::new(p)).unwrap()
        };
        let sel = default_selector(&owned("apps/v1", "ReplicaSet"), &objects);
        assert!(!sel.is_everything());
        assert!(sel.matches(&BTreeMap::from([
            ("app".into(), "web".into()),
            ("tier".into(), "fe".into())
        ])));
        assert!(!sel.matches(&BTreeMap::from([("app".into(), "web".into())])));
        assert!(
            default_selector(&owned("extensions/v1beta1", "ReplicaSet"), &objects).is_everything()
        );
        assert!(default_selector(&owned("apps/v1", "StatefulSet"), &objects).is_everything());
        assert_eq!(parse_group_version("v1"), Some(("", "v1")));
        assert_eq!(parse_group_version("apps/v1"), Some(("apps", "v1")));
        assert_eq!(parse_group_version("a/b/c"), None);
    }

    #[test]
    fn normalize_gives_100_when_every_score_is_0() {
        let pl = PodTopologySpread::default();
        let snap = snapshot(zone_nodes(), vec![]);
        let p = incoming(
            json!([constraint(1, "zone", "ScheduleAnyway", foo_exists())]),
            json!({}),
        );
        assert_eq!(
            run_score(&pl, &p, &snap, &["node-a", "node-x"]),
            Some(vec![100, 100])
        );
    }
}
