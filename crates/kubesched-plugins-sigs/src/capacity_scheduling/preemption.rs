//! CapacityScheduling's `preemptor` (the `preemption.Interface` it gives
//! kube-scheduler's evaluator): eligibility and victims by quota.

use std::sync::Arc;

use kubesched_framework::{
    Code, CycleState, NodeInfo, NodeToStatus, PodInfo, PostFilterContext, Status,
};
use kubesched_plugins::default_preemption::{
    Budget, NOT_ELIGIBLE_POLICY_NEVER, NOT_ELIGIBLE_TERMINATING, Preemptor, dry_run_remove_pod,
    go_sort, more_important, reprieve,
};

use super::quota::{ElasticQuotaInfos, aggregated_used_over_min_with};
use super::{CapacityScheduling, ElasticQuotaSnapshotState, PreFilterState};

/// Eligibility when PreFilter left no state.
pub const NOT_ELIGIBLE_NO_STATE: &str = "not eligible due to failed to read from cycleState";
/// `SelectVictimsOnNode` when PreFilter left no quota snapshot.
pub const NO_SNAPSHOT: &str = "Failed to read elasticQuotaSnapshot from cycleState";
/// `SelectVictimsOnNode` when PreFilter left no state.
pub const NO_PRE_FILTER_STATE: &str = "Failed to read preFilterState from cycleState";
/// `SelectVictimsOnNode` when the quotas refuse the pod even with every victim gone.
pub const GLOBAL_QUOTA_MAX_EXCEEDED: &str = "global quota max exceeded";

/// The quotas when PreFilter left none (checked first: never read).
static NO_QUOTAS: ElasticQuotaInfos = ElasticQuotaInfos::new();

/// The quotas as the dry run has changed them so far, read afresh after each RemovePod
/// and AddPod (as Go reads the map behind the snapshot's pointer).
fn quotas(state: &CycleState) -> &ElasticQuotaInfos {
    state
        .read::<ElasticQuotaSnapshotState>()
        .map_or(&NO_QUOTAS, |s| &s.infos)
}

impl Preemptor for CapacityScheduling {
    /// `GetOffsetAndNumCandidates`: every potential node.
    fn num_candidates(&self, num_nodes: usize) -> usize {
        num_nodes
    }

    /// `preemptor.PodEligibleToPreemptOthers`: `preemptionPolicy: Never` never
    /// preempts; a pod nominated to a node (not rejected there as unresolvable) waits
    /// while a pod it could have preempted is terminating there.
    fn pod_eligible_to_preempt_others(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &CycleState,
        pod: &PodInfo,
        filtered: &NodeToStatus,
    ) -> Result<(), &'static str> {
        if pod.spec().preemption_policy.as_deref() == Some("Never") {
            return Err(NOT_ELIGIBLE_POLICY_NEVER);
        }
        let Some(pre) = state.read::<PreFilterState>() else {
            return Err(NOT_ELIGIBLE_NO_STATE);
        };
        let nominated = pod
            .pod()
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            .unwrap_or("");
        if nominated.is_empty() {
            return Ok(());
        }
        let index = ctx.snapshot.index_of(nominated);
        let code = index
            .and_then(|i| filtered.get(i))
            .map_or(Code::UnschedulableAndUnresolvable, Status::code);
        if code == Code::UnschedulableAndUnresolvable {
            return Ok(());
        }
        let Some(snap) = state.read::<ElasticQuotaSnapshotState>() else {
            return Ok(());
        };
        let Some(index) = index else {
            return Ok(());
        };
        let node = ctx.snapshot.node_at(index);
        let terminating = |p: &&Arc<PodInfo>| p.metadata().deletion_timestamp.is_some();
        match snap.infos.get(pod.namespace()) {
            Some(eq) => {
                let more_than_min = eq.used_over_min_with(&pre.nominated_in_eq_with_pod_req);
                for p in node.pods().iter().filter(terminating) {
                    let Some(other) = snap.infos.get(p.namespace()) else {
                        continue;
                    };
                    if p.namespace() == pod.namespace() && p.priority() < pod.priority() {
                        return Err(NOT_ELIGIBLE_TERMINATING);
                    }
                    if p.namespace() != pod.namespace() && !more_than_min && other.used_over_min() {
                        return Err(NOT_ELIGIBLE_TERMINATING);
                    }
                }
            }
            None => {
                let lower = node.pods().iter().filter(terminating).any(|p| {
                    !snap.infos.contains_key(p.namespace()) && p.priority() < pod.priority()
                });
                if lower {
                    return Err(NOT_ELIGIBLE_TERMINATING);
                }
            }
        }
        Ok(())
    }

    /// `preemptor.SelectVictimsOnNode`: removes the potential victims (by quota, see
    /// the module doc of [`super`]), checks the Filter plugins and the quotas, then
    /// reprieves the victims most important first (PDB-violating ones first): a pod
    /// whose return makes the filters fail, or takes the preemptor's quota past max or
    /// the quotas past the sum of mins, stays a victim.
    fn select_victims_on_node(
        &self,
        ctx: &PostFilterContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &mut NodeInfo,
        budgets: &[Budget],
    ) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
        if state.read::<ElasticQuotaSnapshotState>().is_none() {
            return Err(Status::new(Code::Unschedulable, NO_SNAPSHOT));
        }
        let Some(pre) = state.read::<PreFilterState>().cloned() else {
            return Err(Status::new(Code::Unschedulable, NO_PRE_FILTER_STATE));
        };
        let fwk = ctx.framework;
        let remove = |state: &mut CycleState, node: &mut NodeInfo, p: &Arc<PodInfo>| {
            dry_run_remove_pod(fwk, state, pod, p, node)
        };
        let infos = quotas;
        let with_eq = infos(state).contains_key(pod.namespace());
        // sort.Slice(nodeInfo.GetPods(), !MoreImportantPod): least important first.
        let mut pods: Vec<Arc<PodInfo>> = node.pods().to_vec();
        go_sort::sort_slice(&mut pods, |a, b| !more_important(a, b));
        let mut potential: Vec<Arc<PodInfo>> = Vec::new();
        if with_eq {
            let more_than_min = infos(state)
                .get(pod.namespace())
                .is_some_and(|eq| eq.used_over_min_with(&pre.nominated_in_eq_with_pod_req));
            for p in &pods {
                let Some(eq) = infos(state).get(p.namespace()) else {
                    continue;
                };
                let victim = if more_than_min {
                    p.namespace() == pod.namespace() && p.priority() < pod.priority()
                } else {
                    p.namespace() != pod.namespace() && eq.used_over_min()
                };
                if victim {
                    potential.push(p.clone());
                    remove(state, node, p)?;
                }
            }
        } else {
            for p in &pods {
                if infos(state).contains_key(p.namespace()) {
                    continue;
                }
                if p.priority() < pod.priority() {
                    potential.push(p.clone());
                    remove(state, node, p)?;
                }
            }
        }
        if potential.is_empty() {
            return Err(Status::new(
                Code::UnschedulableAndUnresolvable,
                format!(
                    "No victims found on node {} for preemptor pod {}",
                    node.name(),
                    pod.name()
                ),
            ));
        }
        let s = fwk.run_filter_plugins_with_nominated_pods(state, pod, node, ctx.nominated_pods);
        if !s.is_success() {
            return Err(s);
        }
        let quota_refuses = |state: &CycleState, in_eq: &_, all: &_| {
            let current = infos(state);
            with_eq
                && (current
                    .get(pod.namespace())
                    .is_some_and(|eq| eq.used_over_max_with(in_eq))
                    || aggregated_used_over_min_with(current, all))
        };
        if quota_refuses(state, &pre.pod_req, &pre.pod_req) {
            return Err(Status::new(Code::Unschedulable, GLOBAL_QUOTA_MAX_EXCEEDED));
        }
        let fits = |state: &CycleState, node: &NodeInfo| {
            fwk.run_filter_plugins_with_nominated_pods(state, pod, node, ctx.nominated_pods)
                .is_success()
        };
        // Put back, the pod is a victim again while the quotas refuse the preemptor
        // with the nominated pods.
        let over_quota = |state: &CycleState| {
            quota_refuses(
                state,
                &pre.nominated_in_eq_with_pod_req,
                &pre.nominated_with_pod_req,
            )
        };
        reprieve(fwk, state, pod, node, potential, budgets, fits, over_quota)
    }
}
