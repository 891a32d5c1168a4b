//! NodeResourcesFit: Filter checks that the node has room for the pod's requests (all
//! short resources are reported, in the order pods, cpu, memory, ephemeral-storage,
//! then extended resources); Score ranks nodes by one of three strategies:
//! LeastAllocated (the default), MostAllocated, or RequestedToCapacityRatio.
//!
//! With DRAExtendedResource, an extended resource the node does not advertise
//! (allocatable 0 or absent) is left to DynamicResources when a DeviceClass backs it
//! (kube-scheduler's `shouldDelegateResourceToDRA`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock, RwLock};

use smallvec::SmallVec;

use kubesched_config::args::{
    NodeResourcesFitArgs, ResourceSpec, ScoringStrategyType, UtilizationShapePoint,
};
use kubesched_framework::events::QueueingHint;
use kubesched_framework::resource::is_extended_resource_name;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, NodeInfo, Plugin, PodInfo, PreScorePlugin,
    Reason, ScorePlugin, Snapshot, Status, filter_where,
};

use crate::divisor::RecentDivisor;
use crate::resource_allocation::{
    PodLevelResources, Requests, ResourceColumn, ResourceKind, pod_resource_requests,
    resource_columns,
};

mod hints;

/// The plugin's name.
pub const NAME: &str = "NodeResourcesFit";

/// The largest score of a RequestedToCapacityRatio shape point.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
const MAX_UTILIZATION: i64 = 100;

/// A resource the node is short of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsufficientResource {
    /// The resource's name (`pods`, `cpu`, ...).
    pub resource_name: String,
    /// The reason, as users read it ("Insufficient cpu", "Too many pods").
    pub reason: String,
    /// How much the pod asks for.
    pub requested: i64,
    /// How much is already requested on the node.
    pub used: i64,
    /// The node's allocatable.
    pub capacity: i64,
    /// `true` when even an empty node would be too small (preemption cannot help).
    pub unresolvable: bool,
}

impl InsufficientResource {
    /// For `--explain`: the reason with the pod's request, what the node's pods already
    /// request, and the node's allocatable ("Insufficient cpu: the pod requests 1500m;
    /// 3200m of the node's 4 allocatable is requested, 800m free").
    pub fn explain(&self) -> String {
        Shortfall {
            resource_name: &self.resource_name,
            reason: Reason::Owned(self.reason.clone()),
            requested: self.requested,
            used: self.used,
            capacity: self.capacity,
            unresolvable: self.unresolvable,
        }
        .explain()
    }
}

/// A resource a node is short of, as the per-node filter meets it: the name borrowed
/// and the reason built without allocating for the resources every cluster has.
struct Shortfall<'a> {
    resource_name: &'a str,
    reason: Reason,
    requested: i64,
    used: i64,
    capacity: i64,
    unresolvable: bool,
}

impl Shortfall<'_> {
    /// [`InsufficientResource::explain`].
    fn explain(&self) -> String {
        let reason = &self.reason;
        let show = |v: i64| show_amount(self.resource_name, v);
        if self.resource_name == "pods" {
            return format!(
                "{reason}: {} pod(s) on the node, which allows {}",
                self.used, self.capacity
            );
        }
        let free = self.capacity.saturating_sub(self.used).max(0);
        let mut line = format!(
            "{reason}: the pod requests {}; {} of the node's {} allocatable is requested, {} free",
            show(self.requested),
            show(self.used),
            show(self.capacity),
            show(free)
        );
        if self.unresolvable {
            line.push_str(" (more than the whole node has: preemption cannot help)");
        }
        line
    }
}

/// "Insufficient {name}", built once per resource name for the life of the program:
/// a filter rejecting thousands of nodes for a scalar resource (an extended resource,
/// hugepages) would otherwise format the same reason on each. The names a cluster
/// uses are few; past [`INTERNED_REASONS`] of them, a reason is formatted each time.
fn insufficient(name: &str) -> Reason {
    match name {
        "cpu" => return Reason::Borrowed("Insufficient cpu"),
        "memory" => return Reason::Borrowed("Insufficient memory"),
        "ephemeral-storage" => return Reason::Borrowed("Insufficient ephemeral-storage"),
        _ => {}
    }
    static KEPT: OnceLock<RwLock<HashMap<Box<str>, &'static str>>> = OnceLock::new();
    let kept = KEPT.get_or_init(Default::default);
    if let Some(reason) = kept.read().unwrap_or_else(|e| e.into_inner()).get(name) {
        return Reason::Borrowed(reason);
    }
    let reason = format!("Insufficient {name}");
    let mut kept = kept.write().unwrap_or_else(|e| e.into_inner());
    if kept.len() >= INTERNED_REASONS {
        return Reason::Owned(reason);
    }
    let reason: &'static str = kept
        .entry(name.into())
        .or_insert_with(|| Box::leak(reason.into_boxed_str()));
    Reason::Borrowed(reason)
}

/// How many scalar resources' reasons [`insufficient`] keeps.
const INTERNED_REASONS: usize = 256;

/// An amount of `resource` as a quantity people read: cpu in cores or millicores,
/// byte resources with the largest binary suffix that divides them exactly, anything
/// else as a count.
fn show_amount(resource: &str, v: i64) -> String {
    if resource == "cpu" {
        return kubesched_framework::quantity::Quantity::from_milli(i128::from(v)).to_string();
    }
    let bytes = resource == "memory"
        || resource == "ephemeral-storage"
        || resource.starts_with("hugepages-");
    if bytes && v != 0 {
        for (suffix, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            if v % (1i64 << shift) == 0 {
                return format!("{}{suffix}", v >> shift);
            }
        }
    }
    v.to_string()
}

#[derive(Clone, Debug)]
enum Strategy {
    LeastAllocated,
    MostAllocated,
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

/// Resource fit and resource-based scoring.
#[derive(Clone, Debug)]
pub struct NodeResourcesFit {
    ignored_resources: BTreeSet<String>,
    ignored_resource_groups: BTreeSet<String>,
    resources: Vec<ResourceSpec>,
    kinds: Vec<ResourceKind>,
    strategy: Strategy,
    /// With DRAExtendedResource: the DRA objects whose classes back extended resources.
    extended_resources: Option<Arc<kubesched_framework::DraState>>,
    /// DRAExtendedResource is on (a class event may make a pod fit).
    extended_resource_gate: bool,
}

/// The pod's request per scored resource, computed once in PreScore.
#[derive(Clone, Debug)]
struct PodScoreRequests(Vec<i64>);

impl NodeResourcesFit {
    /// Builds the plugin from its (defaulted) args.
    pub fn new(args: NodeResourcesFitArgs) -> NodeResourcesFit {
        let s = args.scoring_strategy;
        let strategy = match s.type_ {
            ScoringStrategyType::LeastAllocated => Strategy::LeastAllocated,
            ScoringStrategyType::MostAllocated => Strategy::MostAllocated,
            ScoringStrategyType::RequestedToCapacityRatio => {
                Strategy::RequestedToCapacityRatio(shape_points(
                    s.requested_to_capacity_ratio
                        .map(|r| r.shape)
                        .unwrap_or_default(),
                ))
            }
        };
        NodeResourcesFit {
            ignored_resources: args.ignored_resources.into_iter().collect(),
            ignored_resource_groups: args.ignored_resource_groups.into_iter().collect(),
            kinds: ResourceKind::of(&s.resources),
            resources: s.resources,
            strategy,
            extended_resources: None,
            extended_resource_gate: false,
        }
    }

    /// The plugin with the gates of `handle`: with DRAExtendedResource, extended
    /// resources backed by the handle's device classes are left to DynamicResources on
    /// nodes that do not advertise them.
    pub fn with_handle(mut self, handle: &kubesched_framework::Handle) -> NodeResourcesFit {
        self.extended_resource_gate = handle.features.dra_extended_resource();
        self.extended_resources = if self.extended_resource_gate {
            handle.dra.clone()
        } else {
            None
        };
        self
    }

    /// Whether the extended resource `name` is DynamicResources' to check on a node
    /// with `allocatable` of it.
    fn delegates_to_dra(&self, name: &str, allocatable: i64) -> bool {
        allocatable <= 0
            && self
                .extended_resources
                .as_ref()
                .is_some_and(|dra| dra.catalog().class_for_extended_resource(name).is_some())
    }

    /// `true` when `insufficient_resources` is sure to be empty, `false` when it might
    /// not be: the per-node fast path, with plain comparisons and no allocation. A
    /// scalar resource that fits needs no more thought: ignoring it or leaving it to
    /// DRA only ever excuses a shortfall.
    fn surely_fits(pod: &PodInfo, node: &NodeInfo) -> bool {
        let req = pod.requests();
        let counts = node.counts();
        let (alloc, used) = (&counts.allocatable, &counts.requested);
        counts.pods < counts.allowed_pod_number
            && !is_short(req.milli_cpu, alloc.milli_cpu, used.milli_cpu)
            && !is_short(req.memory, alloc.memory, used.memory)
            && !is_short(
                req.ephemeral_storage,
                alloc.ephemeral_storage,
                used.ephemeral_storage,
            )
            && req.scalar_resources.iter().all(|(name, &want)| {
                let (alloc, used) = (node.allocatable(), node.requested());
                !is_short(want, alloc.scalar(name), used.scalar(name))
            })
    }

    /// Every resource `node` is short of for `pod`, in kube-scheduler's order.
    pub fn insufficient_resources(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Vec<InsufficientResource> {
        let mut out = Vec::new();
        self.for_each_shortfall(pod, node, |s| {
            out.push(InsufficientResource {
                resource_name: s.resource_name.to_string(),
                reason: s.reason.into_owned(),
                requested: s.requested,
                used: s.used,
                capacity: s.capacity,
                unresolvable: s.unresolvable,
            });
        });
        out
    }

    /// Visits every resource `node` is short of for `pod`, in kube-scheduler's order
    /// (`fitsRequest`).
    fn for_each_shortfall(&self, pod: &PodInfo, node: &NodeInfo, visit: impl FnMut(Shortfall<'_>)) {
        self.for_each_shortfall_ignoring(pod, node, true, visit)
    }

    /// [`NodeResourcesFit::for_each_shortfall`], with the args' ignored resources
    /// honoured or not (`fitsRequest` called without them, as the queueing hint does).
    fn for_each_shortfall_ignoring(
        &self,
        pod: &PodInfo,
        node: &NodeInfo,
        honour_ignored: bool,
        mut visit: impl FnMut(Shortfall<'_>),
    ) {
        let req = pod.requests();
        let alloc = node.allocatable();
        let used = node.requested();
        let pods = node.pods().len() as i64;
        if pods + 1 > alloc.allowed_pod_number {
            visit(Shortfall {
                resource_name: "pods",
                reason: Reason::Borrowed("Too many pods"),
                requested: 1,
                used: pods,
                capacity: alloc.allowed_pod_number,
                unresolvable: false,
            });
        }
        let mut check = |name: &str, want: i64, have: i64, used: i64| {
            if is_short(want, have, used) {
                visit(Shortfall {
                    resource_name: name,
                    reason: insufficient(name),
                    requested: want,
                    used,
                    capacity: have,
                    unresolvable: want > have,
                });
            }
        };
        check("cpu", req.milli_cpu, alloc.milli_cpu, used.milli_cpu);
        check("memory", req.memory, alloc.memory, used.memory);
        check(
            "ephemeral-storage",
            req.ephemeral_storage,
            alloc.ephemeral_storage,
            used.ephemeral_storage,
        );
        // Only ignored resources make a name's kind matter (and checking it builds a
        // string: not per node when nothing is ignored).
        let ignoring = honour_ignored
            && !(self.ignored_resources.is_empty() && self.ignored_resource_groups.is_empty());
        for (name, &want) in &req.scalar_resources {
            if want == 0 {
                continue;
            }
            if ignoring && is_extended_resource_name(name) {
                let group = name.split('/').next().unwrap_or("");
                if self.ignored_resources.contains(name)
                    || self.ignored_resource_groups.contains(group)
                {
                    continue;
                }
            }
            let (have, in_use) = (alloc.scalar(name), used.scalar(name));
            if want > have - in_use && !self.delegates_to_dra(name, have) {
                check(name, want, have, in_use);
            }
        }
    }

    /// The scores of `nodes` for a pod requesting `pod_requests` (one per scored
    /// resource). The resources are resolved and the strategy chosen once for the run,
    /// so the per-node loop is integer arithmetic.
    fn score_run(&self, pod_requests: &[i64], nodes: &[&NodeInfo], out: &mut [i64]) {
        let mut scored: smallvec::SmallVec<[Scored<'_>; 4]> =
            resource_columns(&self.kinds, pod_requests, Requests::NonZero)
                .into_iter()
                .zip(&self.resources)
                .map(|(column, r)| Scored {
                    column,
                    weight: r.weight,
                    by: RecentDivisor::default(),
                })
                .collect();
        let mut by_weights = RecentDivisor::default();
        match &self.strategy {
            Strategy::LeastAllocated => fill_scores(nodes, out, |node| {
                weighted_mean(&mut scored, &mut by_weights, node, |req, cap, by| {
                    if req > cap {
                        0
                    } else {
                        by.divide((cap - req).wrapping_mul(MAX_NODE_SCORE), cap)
                    }
                })
            }),
            Strategy::MostAllocated => fill_scores(nodes, out, |node| {
                weighted_mean(&mut scored, &mut by_weights, node, |req, cap, by| {
                    by.divide(req.min(cap).wrapping_mul(MAX_NODE_SCORE), cap)
                })
            }),
            Strategy::RequestedToCapacityRatio(shape) => fill_scores(nodes, out, |node| {
                let mut score = 0f64;
                let mut weights = 0i64;
                for s in &scored {
                    let (allocatable, requested) = s.column.read(node);
                    if allocatable == 0 {
                        continue;
                    }
                    let utilization = if requested > allocatable {
                        MAX_UTILIZATION
                    } else {
                        requested
                            .wrapping_mul(MAX_UTILIZATION)
                            .wrapping_div(allocatable)
                    };
                    let points = broken_linear(shape, utilization);
                    if points > 0 {
                        score += (points * s.weight) as f64;
                        weights += s.weight;
                    }
                }
                if weights == 0 {
                    0
                } else {
                    (score / weights as f64).round() as i64
                }
            }),
        }
    }
}

/// A scored resource in a run: where to read it, its weight, and the divisions by its
/// allocatable (which nodes of one pool share).
struct Scored<'a> {
    column: ResourceColumn<'a>,
    weight: i64,
    by: RecentDivisor,
}

/// The weighted mean of `f(requested, allocatable, divisor)` over the resources the
/// node has (`allocatable` > 0), truncated as kube-scheduler's integer division; the
/// sum of weights changes only when a node lacks a resource.
#[inline(always)]
fn weighted_mean(
    scored: &mut [Scored<'_>],
    by_weights: &mut RecentDivisor,
    node: &NodeInfo,
    f: impl Fn(i64, i64, &mut RecentDivisor) -> i64,
) -> i64 {
    let mut score = 0i64;
    let mut weights = 0i64;
    for s in scored {
        let (allocatable, requested) = s.column.read(node);
        if allocatable == 0 {
            continue;
        }
        score = score.wrapping_add(f(requested, allocatable, &mut s.by).wrapping_mul(s.weight));
        weights += s.weight;
    }
    if weights == 0 {
        0
    } else {
        by_weights.divide(score, weights)
    }
}

/// `out[i] = score(nodes[i])`, monomorphised per strategy so that the score inlines.
#[inline(always)]
fn fill_scores(nodes: &[&NodeInfo], out: &mut [i64], mut score: impl FnMut(&NodeInfo) -> i64) {
    for (node, out) in nodes.iter().zip(out) {
        *out = score(node);
    }
}

/// `true` when a node with `have` allocatable and `used` requested cannot give a pod
/// `want` more (kube-scheduler's `fitsRequest` test; nothing requested always fits).
fn is_short(want: i64, have: i64, used: i64) -> bool {
    want > 0 && want > have - used
}

/// The shape with scores scaled from 0..=10 to 0..=100.
fn shape_points(shape: Vec<UtilizationShapePoint>) -> Vec<(i64, i64)> {
    shape
        .into_iter()
        .map(|p| {
            (
                i64::from(p.utilization),
                i64::from(p.score) * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
            )
        })
        .collect()
}

/// kube-scheduler's `BuildBrokenLinearFunction`: linear between shape points, integer
/// arithmetic (truncating toward zero), flat outside them.
fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for i in 0..shape.len() {
        if p <= shape[i].0 {
            if i == 0 {
                return shape[0].1;
            }
            let (u0, s0) = shape[i - 1];
            let (u1, s1) = shape[i];
            return s0 + (s1 - s0) * (p - u0) / (u1 - u0);
        }
    }
    shape.last().map_or(0, |s| s.1)
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler v1.36.1: the requests with overheads, DRAExtendedResource or not
    // (later kube-scheduler sources refuse every pod with the gate on; the v1.36.1
    // binary still batches them).
    /// The verdict reads the pod's requests and the node's free resources only, except
    /// for extended resources that DeviceClasses may back (DRAExtendedResource), which
    /// are allocated from devices other nodes may share.
    fn node_local(&self, pod: &PodInfo) -> bool {
        !self.extended_resource_gate || !crate::helper::requests_extended_resources(pod)
    }
    /// Also node by node when no DeviceClass backs the pod's extended resources now.
    fn node_scoped(&self, pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        self.node_local(pod)
            || self
                .extended_resources
                .as_ref()
                .is_some_and(|dra| !crate::helper::dra_backs_requested_extended_resources(pod, dra))
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![kubesched_framework::signature::resources_fragment(
            pod,
        )])
    }
    fn sign_pod_exact(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        crate::resource_allocation::with_scoring_requests(
            self.sign_pod(pod)?,
            "kubesched.io/NodeResourcesFit.scoringRequests",
            pod,
            &self.resources,
            Requests::NonZero,
            PodLevelResources::Ignored,
        )
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        let mut events = crate::events::node_resources_fit();
        if self.extended_resource_gate {
            // A class that comes to back an extended resource may make the pod fit.
            events.push(kubesched_framework::ClusterEvent::new(
                kubesched_framework::events::EventResource::DeviceClass,
                kubesched_framework::events::ActionType::ADD
                    | kubesched_framework::events::ActionType::UPDATE,
            ));
        }
        events
    }
    kubesched_framework::extension_points!(Filter, PreScore, Score, PlacementScore);

    /// `isSchedulableAfterNodeChange` and `isSchedulableAfterPodEvent` (see the
    /// `hints` module): a node that the pod would fit empty and that is new or grew in
    /// something the pod requests; a pod deleted from a node; a pod scaled down.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> QueueingHint {
        self.hint(pod, event, objects)
    }
}

impl FilterPlugin for NodeResourcesFit {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if Self::surely_fits(pod, node) {
            return Status::success();
        }
        let mut reasons: SmallVec<[Reason; 2]> = SmallVec::new();
        let mut notes = Vec::new();
        let mut unresolvable = false;
        self.for_each_shortfall(pod, node, |s| {
            if state.explain() {
                notes.push(s.explain());
            }
            unresolvable |= s.unresolvable;
            reasons.push(s.reason);
        });
        if reasons.is_empty() {
            return Status::success();
        }
        let code = if unresolvable {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        };
        Status::with_reasons(code, reasons).with_notes(notes)
    }

    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        filter_where(self, state, pod, nodes, rejected, |node| {
            !Self::surely_fits(pod, node)
        });
    }
}

impl PreScorePlugin for NodeResourcesFit {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        match pod_resource_requests(
            pod,
            &self.resources,
            Requests::NonZero,
            PodLevelResources::Ignored,
        ) {
            Ok(r) => {
                state.write(PodScoreRequests(r));
                Status::success()
            }
            Err(s) => s,
        }
    }
}

impl NodeResourcesFit {
    /// Calls `f` with the pod's requests for scoring: PreScore's, or computed now when
    /// PreScore did not run.
    fn with_score_requests<T>(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        f: impl FnOnce(&[i64]) -> T,
    ) -> Result<T, Status> {
        match state.read::<PodScoreRequests>() {
            Some(r) => Ok(f(&r.0)),
            None => Ok(f(&pod_resource_requests(
                pod,
                &self.resources,
                Requests::NonZero,
                PodLevelResources::Ignored,
            )?)),
        }
    }
}

impl ScorePlugin for NodeResourcesFit {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let mut score = [0];
        self.with_score_requests(state, pod, |requests| {
            self.score_run(requests, &[node], &mut score)
        })?;
        Ok(score[0])
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        self.with_score_requests(state, pod, |requests| self.score_run(requests, nodes, out))
    }
}

/// v1.36's placement score (`(*Fit).ScorePlacement`, `TopologyAwareWorkloadScheduling`):
/// the configured resources summed over the placement's nodes (their pods' non-zero
/// requests) and the group's pods that found a node there, scored MostAllocated
/// whatever the scoring strategy, with the configured weights. The strategy was read
/// off kube-scheduler v1.36.1 at `-v=10` ("resourceAllocationScorer=MostAllocated"
/// with the default LeastAllocated and with RequestedToCapacityRatio configured).
impl kubesched_framework::PlacementScorePlugin for NodeResourcesFit {
    fn score_placement(
        &self,
        _: kubesched_framework::PodGroupRef<'_>,
        assignments: &kubesched_framework::PodGroupAssignments,
        snapshot: &Snapshot,
    ) -> Result<i64, Status> {
        let mut group = vec![0i64; self.resources.len()];
        for (pod, _) in &assignments.proposed {
            let requests = pod_resource_requests(
                pod,
                &self.resources,
                Requests::NonZero,
                PodLevelResources::Ignored,
            )?;
            for (total, r) in group.iter_mut().zip(requests) {
                *total += r;
            }
        }
        let columns = resource_columns(&self.kinds, &group, Requests::NonZero);
        let mut allocatable = vec![0i64; columns.len()];
        let mut requested = group;
        for &i in &assignments.placement.nodes {
            let node = snapshot.node_at(i);
            for (k, column) in columns.iter().enumerate() {
                let (a, r) = column.read(node);
                if a == 0 && r == 0 {
                    continue;
                }
                allocatable[k] += a;
                requested[k] += r - column.pod_request();
            }
        }
        let (mut score, mut weights) = (0i64, 0i64);
        for ((a, r), spec) in allocatable.iter().zip(&requested).zip(&self.resources) {
            if *a == 0 {
                continue;
            }
            score += (*r).min(*a) * MAX_NODE_SCORE / a * spec.weight;
            weights += spec.weight;
        }
        Ok(if weights == 0 { 0 } else { score / weights })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_linear_interpolates_with_truncation() {
        let shape = shape_points(vec![
            UtilizationShapePoint {
                utilization: 0,
                score: 10,
            },
            UtilizationShapePoint {
                utilization: 30,
                score: 4,
            },
            UtilizationShapePoint {
                utilization: 100,
                score: 0,
            },
        ]);
        assert_eq!(broken_linear(&shape, 0), 100);
        assert_eq!(broken_linear(&shape, 15), 70);
        assert_eq!(broken_linear(&shape, 30), 40);
        // 40 + (0 - 40) * 35 / 70 = 20; truncation toward zero on negative slopes
        assert_eq!(broken_linear(&shape, 65), 20);
        // 40 + (-40 * 1) / 70: Go truncates toward zero, so the step is lost.
        assert_eq!(broken_linear(&shape, 31), 40);
        assert_eq!(broken_linear(&shape, 100), 0);
    }

    mod placement_score {
        use super::*;
        use kubesched_config::args::PluginArgs;
        use kubesched_framework::build::{NodeBuilder, PodBuilder};
        use kubesched_framework::{
            Placement, PlacementScorePlugin, PodGroupAssignments, PodGroupRef,
        };

        const GIB: i64 = 1 << 30;
        const GROUP: PodGroupRef<'static> = PodGroupRef {
            namespace: "default",
            name: "g",
        };

        fn fit(json: serde_json::Value) -> NodeResourcesFit {
            let mut args: NodeResourcesFitArgs = serde_json::from_value(json).unwrap();
            args.apply_defaults();
            NodeResourcesFit::new(args)
        }

        /// kube-scheduler v1.36.1's own figures at -v=10 ("Listed internal info for
        /// placement's allocatable resources, requested resources and placement score"):
        /// a1 (8 cpu, 8Gi) runs a 4-cpu, 1Gi pod; two one-cpu pods of the group land on
        /// it (ra: requested [6000, 1493172224], score 46), or on the empty b1 (rb:
        /// [2000, 419430400], score 14). MostAllocated although the strategy is the
        /// default LeastAllocated.
        #[test]
        fn sums_the_placement_and_scores_most_allocated() {
            let a1 = NodeBuilder::new("a1")
                .cpu_millis(8000)
                .memory_bytes(8 * GIB)
                .node();
            let b1 = NodeBuilder::new("b1")
                .cpu_millis(8000)
                .memory_bytes(8 * GIB)
                .node();
            let busy = PodBuilder::new("default", "busy")
                .cpu_millis(4000)
                .memory_bytes(GIB)
                .bound_to("a1")
                .pod_info()
                .unwrap();
            let (snapshot, _) = Snapshot::new([a1, b1], [busy]).unwrap();
            let member = |name: &str| {
                PodBuilder::new("default", name)
                    .cpu_millis(1000)
                    .pod_info()
                    .unwrap()
            };
            let on = |node: usize, name: &str| PodGroupAssignments {
                placement: Placement {
                    name: name.into(),
                    nodes: vec![node],
                },
                proposed: vec![(member("g-1"), node), (member("g-2"), node)],
            };
            let f = fit(serde_json::json!({}));
            assert_eq!(f.score_placement(GROUP, &on(0, "ra"), &snapshot), Ok(46));
            assert_eq!(f.score_placement(GROUP, &on(1, "rb"), &snapshot), Ok(14));
        }

        /// With cpu weighted 3, memory 1 and a resource no node has (weight 2, left out
        /// as the node scores leave it), under RequestedToCapacityRatio: kube-scheduler
        /// v1.36.1 logs 76 for both racks (a 3-cpu rack with three pods, a 2-cpu rack
        /// with two).
        #[test]
        fn takes_the_configured_weights_whatever_the_strategy() {
            let f = fit(serde_json::json!({"scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "requestedToCapacityRatio": {"shape": [
                    {"utilization": 0, "score": 0},
                    {"utilization": 100, "score": 10},
                ]},
                "resources": [
                    {"name": "cpu", "weight": 3},
                    {"name": "memory", "weight": 1},
                    {"name": "example.com/foo", "weight": 2},
                ],
            }}));
            let a1 = NodeBuilder::new("a1")
                .cpu_millis(3000)
                .memory_bytes(8 * GIB)
                .node();
            let b1 = NodeBuilder::new("b1")
                .cpu_millis(2000)
                .memory_bytes(8 * GIB)
                .node();
            let (snapshot, _) = Snapshot::new([a1, b1], []).unwrap();
            let pods = |n: usize, node: usize| -> Vec<_> {
                (0..n)
                    .map(|i| {
                        let p = PodBuilder::new("default", format!("g-{i}"))
                            .cpu_millis(1000)
                            .pod_info()
                            .unwrap();
                        (p, node)
                    })
                    .collect()
            };
            for (node, n) in [(0, 3), (1, 2)] {
                let a = PodGroupAssignments {
                    placement: Placement {
                        name: String::new(),
                        nodes: vec![node],
                    },
                    proposed: pods(n, node),
                };
                assert_eq!(f.score_placement(GROUP, &a, &snapshot), Ok(76));
            }
        }
    }
}
