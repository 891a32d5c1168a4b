//! DefaultPreemption: kube-scheduler v1.35's PostFilter plugin that, when no node fits
//! a pod, looks for a node where evicting pods of lower priority would make it fit.
//!
//! The steps, as kube-scheduler's `Evaluator.Preempt` runs them:
//!
//! 1. **Eligibility** ([`pod_eligible_to_preempt_others`]): a pod with
//!    `preemptionPolicy: Never` never preempts; a pod already nominated to a node where a
//!    lower-priority pod is still terminating because of preemption waits for it.
//! 2. **Nodes worth trying**: only the nodes whose Filter status was `Unschedulable`.
//!    A node rejected `UnschedulableAndUnresolvable` (taint, node selector, a request
//!    above allocatable, ...) cannot be helped by removing pods.
//! 3. **Dry run** on each such node, in node order (FORMAT.md rule 8 makes kube-scheduler's
//!    random start deterministic): on a copy of the node and of the cycle state, remove
//!    every pod of lower priority (through the PreFilter RemovePod extensions), check the
//!    Filter plugins (with nominated pods), then add the pods back one by one, most
//!    important first, the ones whose eviction would violate a PodDisruptionBudget
//!    first; a pod whose return makes the filters fail is a victim
//!    ([`DefaultPreemption::select_victims_on_node`]). The search stops once it has
//!    `max(minCandidateNodesPercentage% of the nodes, minCandidateNodesAbsolute)`
//!    candidates, at least one of them without PDB violations.
//! 4. **Selection** ([`pick_one_node_for_preemption`]): fewest PDB violations, then the
//!    lowest highest-victim priority, the lowest sum of victim priorities, the fewest
//!    victims, the latest start time of the most important victims, then the first
//!    candidate in node order.
//!
//! The plugin does not delete anything itself: the [`PostFilterResult`] names the node
//! and the victims, in the order kube-scheduler evicts them, and the caller (the
//! simulator, or a runtime with an API server) removes them. When no node qualifies,
//! the status says why, as kube-scheduler writes it: `preemption: 0/N nodes are
//! available: ...`, with every node that was not dry-run counted as "Preemption is not
//! helpful for scheduling".

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kubesched_config::args::DefaultPreemptionArgs;
use kubesched_framework::{
    Code, CycleState, Diagnosis, FitError, Framework, NodeInfo, NodeToStatus, NominationCandidate,
    Plugin, PodInfo, PostFilterContext, PostFilterPlugin, PostFilterResult, Snapshot, Status,
};

use crate::label_selector::Selector;

pub mod go_sort;

/// The plugin's name.
pub const NAME: &str = "DefaultPreemption";

/// The reason of a dry-run node that has no pod of lower priority.
pub const NO_VICTIMS_FOUND: &str = "No preemption victims found for incoming pod";
/// The reason counted for every node that was not dry-run.
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// The message for a pod with `preemptionPolicy: Never`.
pub const NOT_ELIGIBLE_POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
/// The message for a pod of a PodGroup tried on a placement (v1.36,
/// `TopologyAwareWorkloadScheduling`): kube-scheduler v1.36.1 does not preempt for it,
/// rather than once per placement. Its words as that binary writes them (no period).
pub const NOT_ELIGIBLE_PLACEMENT: &str =
    "not eligible due to placement-based pod group scheduling limitation";
/// The message for a pod whose nominated node still has a terminating victim.
pub const NOT_ELIGIBLE_TERMINATING: &str =
    "not eligible due to a terminating pod on the nominated node.";

/// kube-scheduler's `preemption.Interface`: what a PostFilter plugin gives the
/// evaluator ([`preempt`]) so that the evaluator's steps (eligibility, the dry run over
/// the nodes worth trying, the choice of one candidate) run with the plugin's own
/// rules. [`DefaultPreemption`] is one implementation; scheduler-plugins'
/// CapacityScheduling (crate kubesched-plugins-sigs) another.
pub trait Preemptor {
    /// How many candidates the dry run looks for among `num_nodes` potential nodes
    /// (the count of `GetOffsetAndNumCandidates`; the offset is always 0 here).
    fn num_candidates(&self, num_nodes: usize) -> usize;

    /// `PodEligibleToPreemptOthers`: `Err` with the reason when `pod` may not preempt.
    fn pod_eligible_to_preempt_others(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> Result<(), &'static str>;

    /// `SelectVictimsOnNode`: the fewest pods to evict from `node` (a copy, changed in
    /// place, with `state` a copy of the cycle state) for `pod` to fit. `Ok` holds the
    /// victims, most important first, and how many of them violate a budget; `Err`
    /// the status saying why the node cannot help.
    fn select_victims_on_node(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        budgets: &[Budget],
    ) -> Result<(Vec<Arc<PodInfo>>, i64), Status>;
}

/// kube-scheduler's DefaultPreemption PostFilter plugin.
#[derive(Debug, Clone, Default)]
pub struct DefaultPreemption {
    args: DefaultPreemptionArgs,
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &str {
        NAME
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::none()
    }
    kubesched_framework::extension_points!(PostFilter);
}

/// A node where preemption makes the pod fit, with the pods to evict there.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The node's position in node order.
    pub node_index: usize,
    /// The node's name.
    pub node: String,
    /// The victims, most important first (the order they are evicted in).
    pub victims: Vec<Arc<PodInfo>>,
    /// How many victims' evictions violate a PodDisruptionBudget.
    pub num_pdb_violations: i64,
}

impl Candidate {
    /// The highest priority among the victims (the first victim's).
    fn highest_priority(&self) -> i32 {
        self.victims.first().map_or(0, |p| p.priority())
    }

    /// The sum of the victims' priorities, each shifted by 2^31 so that every term is
    /// non-negative (kube-scheduler's `minSumPrioritiesScoreFunc`).
    fn shifted_priority_sum(&self) -> i64 {
        self.victims
            .iter()
            .map(|p| i64::from(p.priority()) + (i64::from(i32::MAX) + 1))
            .sum()
    }

    /// The earliest start time among the victims of the highest priority
    /// (kube-scheduler's `GetEarliestPodStartTime`); a victim without a start time
    /// counts as starting now.
    fn earliest_start_of_most_important(&self) -> StartTime {
        let Some(first) = self.victims.first() else {
            return StartTime::Now;
        };
        let mut max_priority = first.priority();
        let mut earliest = start_time(first);
        for p in &self.victims {
            match p.priority().cmp(&max_priority) {
                Ordering::Equal => earliest = earliest.min(start_time(p)),
                Ordering::Greater => {
                    max_priority = p.priority();
                    earliest = start_time(p);
                }
                Ordering::Less => {}
            }
        }
        earliest
    }

    fn summary(&self) -> NominationCandidate {
        let plain_sum: i64 = self.victims.iter().map(|p| i64::from(p.priority())).sum();
        NominationCandidate {
            node: self.node.clone(),
            victims: self.victims.iter().map(|p| p.key().to_string()).collect(),
            num_pdb_violations: self.num_pdb_violations,
            details: format!(
                "{} PDB violation(s), highest victim priority {}, sum of victim priorities {}, {} victim(s), earliest start of its highest-priority victims {}",
                self.num_pdb_violations,
                self.highest_priority(),
                plain_sum,
                self.victims.len(),
                self.earliest_start_of_most_important()
            ),
        }
    }
}

/// A pod's `status.startTime`, or "now" for a pod that has none (an assumed pod, or a
/// bound pod that has not started): later than every recorded time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum StartTime {
    /// The recorded start time.
    At(Timestamp),
    /// No start time: kube-scheduler uses the current time.
    Now,
}

impl std::fmt::Display for StartTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartTime::At(t) => write!(f, "{t}"),
            StartTime::Now => f.write_str("(not started)"),
        }
    }
}

/// A pod's start time as kube-scheduler's `GetPodStartTime` reads it.
pub fn start_time(pod: &PodInfo) -> StartTime {
    pod.pod()
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(StartTime::Now, |t| StartTime::At(t.0))
}

/// kube-scheduler's `MoreImportantPod(a, b)` as it answers: higher priority, then the
/// earlier start time, where a pod without one starts "now", read from the clock for
/// `a` first and `b` next, so that of two such pods `a` is always the more important.
pub fn more_important(a: &PodInfo, b: &PodInfo) -> bool {
    match a.priority().cmp(&b.priority()) {
        Ordering::Greater => true,
        Ordering::Less => false,
        Ordering::Equal => match (start_time(a), start_time(b)) {
            (StartTime::Now, StartTime::Now) => true,
            (a, b) => a < b,
        },
    }
}

/// Sorts pods as kube-scheduler's `sort.Slice` with `MoreImportantPod` does
/// ([`go_sort`]): pods of equal priority without a start time do not keep their order.
pub fn sort_by_importance(pods: &mut [Arc<PodInfo>]) {
    go_sort::sort_slice(pods, |a, b| more_important(a, b));
}

/// A PodDisruptionBudget as preemption reads it.
#[derive(Clone, Debug)]
pub struct Budget {
    namespace: String,
    selector: Option<Selector>,
    disruptions_allowed: i32,
    disrupted_pods: Vec<String>,
}

impl Budget {
    /// Compiles a PodDisruptionBudget: a missing, empty or invalid selector matches no
    /// pod, as in kube-scheduler.
    pub fn new(pdb: &PodDisruptionBudget) -> Budget {
        let selector = pdb
            .spec
            .as_ref()
            .and_then(|s| Selector::from_label_selector(s.selector.as_ref()).ok())
            .filter(|s| !s.is_everything() && *s != Selector::Nothing);
        let status = pdb.status.as_ref();
        Budget {
            namespace: pdb
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
            selector,
            disruptions_allowed: status.and_then(|s| s.disruptions_allowed).unwrap_or(0),
            disrupted_pods: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }

    fn covers(&self, pod: &PodInfo, labels: &BTreeMap<String, String>) -> bool {
        self.namespace == pod.namespace()
            && self.selector.as_ref().is_some_and(|s| s.matches(labels))
            && !self.disrupted_pods.iter().any(|n| n == pod.name())
    }
}

/// Splits `pods` (in their order) into those whose eviction would violate a
/// PodDisruptionBudget and the others (kube-scheduler's `filterPodsWithPDBViolation`):
/// each matching budget's `disruptionsAllowed` is used up in the order of `pods`, and a
/// pod that takes a budget below zero is violating. Pods already listed in a budget's
/// `disruptedPods` do not use it.
pub fn filter_pods_with_pdb_violation(
    pods: &[Arc<PodInfo>],
    budgets: &[Budget],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = budgets.iter().map(|b| b.disruptions_allowed).collect();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for pod in pods {
        let mut violated = false;
        if let Some(labels) = pod.metadata().labels.as_ref().filter(|l| !l.is_empty()) {
            for (i, b) in budgets.iter().enumerate() {
                if b.covers(pod, labels) {
                    allowed[i] -= 1;
                    if allowed[i] < 0 {
                        violated = true;
                    }
                }
            }
        }
        if violated {
            violating.push(pod.clone());
        } else {
            non_violating.push(pod.clone());
        }
    }
    (violating, non_violating)
}

/// `true` when `pod` is terminating because the scheduler preempted it: it has a
/// deletion timestamp and a `DisruptionTarget` condition that is `True` with reason
/// `PreemptionByScheduler`.
pub fn pod_terminating_by_preemption(pod: &PodInfo) -> bool {
    if pod.metadata().deletion_timestamp.is_none() {
        return false;
    }
    pod.pod()
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"))
        .is_some_and(|c| c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler"))
}

/// Takes `victim` off `node` in a preemption dry run and tells the PreFilter extensions
/// (the `removePod` step of kube-scheduler's `SelectVictimsOnNode`, as DefaultPreemption
/// and CapacityScheduling both take it). A victim not on the node, or an extension
/// that fails, is an error.
pub fn dry_run_remove_pod(
    framework: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    victim: &Arc<PodInfo>,
    node: &mut NodeInfo,
) -> Result<(), Status> {
    if node.remove_pod(victim.key()).is_none() {
        return Err(Status::error(format!(
            "no corresponding pod {} in pods of node {}",
            victim.name(),
            node.name()
        )));
    }
    extension_result(framework.run_pre_filter_extension_remove_pod(state, pod, victim, node))
}

/// Puts `victim` back on `node` in a preemption dry run and tells the PreFilter
/// extensions (the `addPod` step of `SelectVictimsOnNode`).
pub fn dry_run_add_pod(
    framework: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    victim: &Arc<PodInfo>,
    node: &mut NodeInfo,
) -> Result<(), Status> {
    node.add_pod(victim.clone());
    extension_result(framework.run_pre_filter_extension_add_pod(state, pod, victim, node))
}

/// The reprieve step of kube-scheduler's `SelectVictimsOnNode`, as DefaultPreemption
/// and CapacityScheduling both take it: with every one of `potential` already off
/// `node` (and `pod` fitting there without them), puts them back one by one, most
/// important first and those whose eviction would violate a budget before the others.
/// A pod put back stays when `fits` says `pod` still fits (the Filter plugins with the
/// nominated pods); otherwise it is taken off again and is a victim. Then, whatever
/// `fits` said, `evict_anyway` is asked (CapacityScheduling's quota check; `|_| false`
/// for DefaultPreemption): when it holds, the pod is taken off (again) and is a
/// victim (again), as in scheduler-plugins, so a pod that neither fits nor passes it
/// is an error (it is no longer on the node), and one that fits but not the quota is
/// a victim not counted as violating a budget.
///
/// Returns the victims, most important first, and how many of the budget-violating
/// pods did not fit; `Err` when a dry-run step fails.
#[allow(clippy::too_many_arguments)]
pub fn reprieve(
    framework: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    mut potential: Vec<Arc<PodInfo>>,
    budgets: &[Budget],
    mut fits: impl FnMut(&CycleState, &NodeInfo) -> bool,
    mut evict_anyway: impl FnMut(&CycleState) -> bool,
) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
    sort_by_importance(&mut potential);
    let (violating, non_violating) = filter_pods_with_pdb_violation(&potential, budgets);
    let mut victims: Vec<Arc<PodInfo>> = Vec::new();
    let mut num_violating = 0;
    let mut reprieve_pod =
        |state: &mut CycleState, node: &mut NodeInfo, p: &Arc<PodInfo>| -> Result<bool, Status> {
            dry_run_add_pod(framework, state, pod, p, node)?;
            let fit = fits(state, node);
            if !fit {
                dry_run_remove_pod(framework, state, pod, p, node)?;
                victims.push(p.clone());
            }
            if evict_anyway(state) {
                dry_run_remove_pod(framework, state, pod, p, node)?;
                victims.push(p.clone());
            }
            Ok(fit)
        };
    for p in &violating {
        if !reprieve_pod(state, node, p)? {
            num_violating += 1;
        }
    }
    for p in &non_violating {
        reprieve_pod(state, node, p)?;
    }
    if !violating.is_empty() && !non_violating.is_empty() {
        sort_by_importance(&mut victims);
    }
    Ok((victims, num_violating))
}

/// A PreFilter extension's status in a dry run: a failure of any code is an error.
fn extension_result(s: Status) -> Result<(), Status> {
    if s.is_success() {
        Ok(())
    } else {
        Err(Status::error(s.message()))
    }
}

/// kube-scheduler's `PodEligibleToPreemptOthers`: `Err` with the reason when the pod
/// may not preempt.
pub fn pod_eligible_to_preempt_others(
    pod: &PodInfo,
    snapshot: &Snapshot,
    filtered: &NodeToStatus,
) -> Result<(), &'static str> {
    if pod.spec().preemption_policy.as_deref() == Some("Never") {
        return Err(NOT_ELIGIBLE_POLICY_NEVER);
    }
    let nominated = pod
        .pod()
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .unwrap_or("");
    if nominated.is_empty() {
        return Ok(());
    }
    let Some(index) = snapshot.index_of(nominated) else {
        return Ok(());
    };
    let code = filtered
        .get(index)
        .map_or(Code::UnschedulableAndUnresolvable, Status::code);
    if code == Code::UnschedulableAndUnresolvable {
        return Ok(());
    }
    let node = snapshot.node_at(index);
    if node
        .pods()
        .iter()
        .any(|p| p.priority() < pod.priority() && pod_terminating_by_preemption(p))
    {
        return Err(NOT_ELIGIBLE_TERMINATING);
    }
    Ok(())
}

/// Picks the best candidate by kube-scheduler's criteria, in order: fewest PDB
/// violations, lowest highest-victim priority, lowest sum of victim priorities, fewest
/// victims, latest start time of the most important victims; among candidates still
/// tied, the first in node order (FORMAT.md rule 8; kube-scheduler takes an arbitrary
/// one), except when their victims have no start time: kube-scheduler compares those by
/// the clock, read once per candidate in order, and the last read wins. Returns the candidate's position in `candidates` and, in words, the criterion
/// that decided. `None` only for an empty slice.
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> Option<(usize, String)> {
    if candidates.is_empty() {
        return None;
    }
    if candidates.len() == 1 {
        return Some((0, "it is the only candidate".to_string()));
    }
    type Criterion = (
        &'static str,
        fn(&Candidate) -> i128,
        fn(&Candidate) -> String,
    );
    let criteria: [Criterion; 5] = [
        (
            "fewest PodDisruptionBudget violations",
            |c| -i128::from(c.num_pdb_violations),
            |c| c.num_pdb_violations.to_string(),
        ),
        (
            "lowest highest-victim priority",
            |c| -i128::from(c.highest_priority()),
            |c| c.highest_priority().to_string(),
        ),
        (
            "lowest sum of victim priorities",
            |c| -i128::from(c.shifted_priority_sum()),
            |c| {
                let plain: i64 = c.victims.iter().map(|p| i64::from(p.priority())).sum();
                format!("{plain}, each victim counted +2^31")
            },
        ),
        (
            "fewest victims",
            |c| -(c.victims.len() as i128),
            |c| c.victims.len().to_string(),
        ),
        (
            "latest start time of its highest-priority victims",
            |c| match c.earliest_start_of_most_important() {
                StartTime::At(t) => t.as_nanosecond(),
                StartTime::Now => i128::MAX,
            },
            |c| c.earliest_start_of_most_important().to_string(),
        ),
    ];
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    for (what, score, describe) in criteria {
        let best = remaining
            .iter()
            .map(|&i| score(&candidates[i]))
            .max()
            .unwrap_or(0);
        let tied: Vec<usize> = remaining
            .iter()
            .copied()
            .filter(|&i| score(&candidates[i]) == best)
            .collect();
        if tied.len() == 1 {
            let winner = &candidates[tied[0]];
            let context = if remaining.len() == candidates.len() {
                format!("of {} candidates", candidates.len())
            } else {
                format!(
                    "of the {} candidates tied on the earlier criteria",
                    remaining.len()
                )
            };
            return Some((tied[0], format!("{what} ({}) {context}", describe(winner))));
        }
        remaining = tied;
    }
    // Tied on a victim without a start time: kube-scheduler reads the clock afresh for
    // each candidate in turn and keeps a later reading, so the last one read wins.
    let by_clock = remaining
        .first()
        .is_some_and(|&i| candidates[i].earliest_start_of_most_important() == StartTime::Now);
    if by_clock {
        let last = remaining
            .iter()
            .copied()
            .max_by_key(|&i| candidates[i].node_index)
            .unwrap_or(0);
        return Some((
            last,
            format!(
                "last in node order of the {} candidates tied on every criterion, their victims not started: kube-scheduler takes each one's start time from the clock, read afresh in node order, so the last is the latest",
                remaining.len()
            ),
        ));
    }
    let first = remaining
        .iter()
        .copied()
        .min_by_key(|&i| candidates[i].node_index)
        .unwrap_or(0);
    Some((
        first,
        format!(
            "first in node order of the {} candidates tied on every criterion",
            remaining.len()
        ),
    ))
}

/// What the dry run found.
struct DryRun {
    candidates: Vec<Candidate>,
    statuses: NodeToStatus,
    errors: Vec<String>,
}

impl DefaultPreemption {
    /// The plugin with these (validated, defaulted) args.
    pub fn new(args: DefaultPreemptionArgs) -> DefaultPreemption {
        DefaultPreemption { args }
    }

    /// The plugin's args.
    pub fn args(&self) -> &DefaultPreemptionArgs {
        &self.args
    }

    /// How many candidates the dry run looks for among `num_nodes` potential nodes
    /// (kube-scheduler's `calculateNumCandidates`): `minCandidateNodesPercentage` of
    /// them, at least `minCandidateNodesAbsolute`, at most all of them.
    pub fn calculate_num_candidates(&self, num_nodes: usize) -> usize {
        let num = num_nodes as i64;
        let pct = i64::from(self.args.min_candidate_nodes_percentage);
        let abs = i64::from(self.args.min_candidate_nodes_absolute);
        let n = (num * pct / 100).max(abs).min(num);
        usize::try_from(n).unwrap_or(0)
    }

    /// Finds the fewest pods to evict from `node` (a copy, changed in place, with
    /// `state` a copy of the cycle state) for `pod` to fit, as kube-scheduler's
    /// `SelectVictimsOnNode`. `Ok` holds the victims, most important first, and how
    /// many of them violate a budget; `Err` the status saying why the node cannot help.
    pub fn select_victims_on_node(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        budgets: &[Budget],
    ) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
        let fwk = ctx.framework;
        let remove = |state: &mut CycleState, node: &mut NodeInfo, p: &Arc<PodInfo>| {
            dry_run_remove_pod(fwk, state, pod, p, node)
        };
        let potential: Vec<Arc<PodInfo>> = node
            .pods()
            .iter()
            .filter(|p| p.priority() < pod.priority())
            .cloned()
            .collect();
        for p in &potential {
            remove(state, node, p)?;
        }
        if potential.is_empty() {
            return Err(Status::new(
                Code::UnschedulableAndUnresolvable,
                NO_VICTIMS_FOUND,
            ));
        }
        let s = fwk.run_filter_plugins_with_nominated_pods(state, pod, node, ctx.nominated_pods);
        if !s.is_success() {
            return Err(s);
        }
        let fits = |state: &CycleState, node: &NodeInfo| {
            fwk.run_filter_plugins_with_nominated_pods(state, pod, node, ctx.nominated_pods)
                .is_success()
        };
        reprieve(fwk, state, pod, node, potential, budgets, fits, |_| false)
    }

    /// kube-scheduler's `Evaluator.Preempt` with DefaultPreemption's rules ([`preempt`]
    /// driving this plugin): the nominated node and its victims, or the status saying
    /// why there is none (without the "preemption: " prefix).
    pub fn preempt(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        preempt(self, ctx, state, pod, filtered)
    }
}

impl Preemptor for DefaultPreemption {
    fn num_candidates(&self, num_nodes: usize) -> usize {
        self.calculate_num_candidates(num_nodes)
    }

    fn pod_eligible_to_preempt_others(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> Result<(), &'static str> {
        if state.read::<kubesched_framework::InPlacement>().is_some() {
            return Err(NOT_ELIGIBLE_PLACEMENT);
        }
        pod_eligible_to_preempt_others(pod, ctx.snapshot, filtered)
    }

    fn select_victims_on_node(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        budgets: &[Budget],
    ) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
        DefaultPreemption::select_victims_on_node(self, ctx, state, pod, node, budgets)
    }
}

/// kube-scheduler's `preemption.Evaluator` over a [`Preemptor`].
struct Evaluator<'a, P: ?Sized>(&'a P);

/// kube-scheduler's `Evaluator.Preempt` driving `p`, without the API calls: the
/// nominated node and its victims, or the status saying why there is none (without
/// DefaultPreemption's "preemption: " prefix).
pub fn preempt<P: Preemptor + ?Sized>(
    p: &P,
    ctx: &PostFilterContext<'_>,
    state: &CycleState,
    pod: &PodInfo,
    filtered: &NodeToStatus,
) -> (Option<PostFilterResult>, Status) {
    Evaluator(p).preempt(ctx, state, pod, filtered)
}

impl<P: Preemptor + ?Sized> Evaluator<'_, P> {
    /// Dry-runs preemption on `potential` nodes in node order, until enough candidates
    /// are found (kube-scheduler's `DryRunPreemption` with offset 0).
    fn dry_run(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        potential: &[usize],
        budgets: &[Budget],
    ) -> DryRun {
        let wanted = self.0.num_candidates(potential.len());
        let mut non_violating = Vec::new();
        let mut violating = Vec::new();
        let mut statuses = NodeToStatus::default();
        let mut errors = Vec::new();
        for &index in potential {
            let mut node = ctx.snapshot.node_at(index).clone();
            let mut state = state.clone();
            let status = match self
                .0
                .select_victims_on_node(ctx, &mut state, pod, &mut node, budgets)
            {
                Ok((victims, n)) if !victims.is_empty() => {
                    let c = Candidate {
                        node_index: index,
                        node: node.name().to_string(),
                        victims,
                        num_pdb_violations: n,
                    };
                    if n == 0 {
                        non_violating.push(c);
                    } else {
                        violating.push(c);
                    }
                    if !non_violating.is_empty() && non_violating.len() + violating.len() >= wanted
                    {
                        break;
                    }
                    continue;
                }
                Ok(_) => Status::error(format!(
                    "expected at least one victim pod on node {:?}",
                    node.name()
                )),
                Err(s) => s,
            };
            if status.is_error() {
                errors.push(status.message());
            }
            statuses.statuses.push((index, status));
        }
        non_violating.extend(violating);
        DryRun {
            candidates: non_violating,
            statuses,
            errors,
        }
    }

    /// `Evaluator.Preempt`.
    fn preempt(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        if let Err(msg) = self
            .0
            .pod_eligible_to_preempt_others(ctx, state, pod, filtered)
        {
            return (None, Status::new(Code::Unschedulable, msg));
        }
        let num_nodes = ctx.snapshot.num_nodes();
        if num_nodes == 0 {
            return (None, Status::error("no nodes available"));
        }
        let potential = filtered.nodes_for_status_code(num_nodes, Code::Unschedulable);
        let dry = if potential.is_empty() {
            DryRun {
                candidates: Vec::new(),
                statuses: NodeToStatus::default(),
                errors: Vec::new(),
            }
        } else {
            let budgets: Vec<Budget> = ctx
                .snapshot
                .objects()
                .pod_disruption_budgets
                .iter()
                .map(|p| Budget::new(p))
                .collect();
            self.dry_run(ctx, state, pod, &potential, &budgets)
        };
        if dry.candidates.is_empty() {
            if !dry.errors.is_empty() {
                return (None, Status::error(dry.errors.join(", ")));
            }
            let mut node_to_status = dry.statuses;
            node_to_status.absent_nodes_status =
                Some(Status::new(Code::UnschedulableAndUnresolvable, NOT_HELPFUL));
            let fit = FitError {
                num_all_nodes: num_nodes,
                diagnosis: Diagnosis {
                    node_to_status,
                    ..Diagnosis::default()
                },
            };
            return (
                Some(PostFilterResult::default()),
                Status::new(Code::Unschedulable, fit.to_string()),
            );
        }
        let Some((best, reason)) = pick_one_node_for_preemption(&dry.candidates) else {
            return (
                None,
                Status::new(Code::Unschedulable, "no candidate node for preemption"),
            );
        };
        let mut summaries: Vec<NominationCandidate> =
            dry.candidates.iter().map(Candidate::summary).collect();
        let mut order: Vec<usize> = (0..dry.candidates.len()).collect();
        order.sort_by_key(|&i| dry.candidates[i].node_index);
        summaries = order.iter().map(|&i| summaries[i].clone()).collect();
        let chosen = &dry.candidates[best];
        (
            Some(PostFilterResult {
                nominated_node_name: Some(chosen.node.clone()),
                victims: chosen.victims.iter().map(|p| p.key().to_string()).collect(),
                candidates: summaries,
                selection_reason: Some(reason),
            }),
            Status::success(),
        )
    }
}

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let (result, status) = self.preempt(ctx, state, pod, filtered);
        let msg = status.message();
        if msg.is_empty() {
            return (result, status);
        }
        (
            result,
            Status::new(status.code(), format!("preemption: {msg}")),
        )
    }
}

#[cfg(test)]
mod tests;
