//! TaintToleration: Filter rejects nodes with a `NoSchedule` or `NoExecute` taint the
//! pod does not tolerate; Score prefers nodes with fewer untolerated
//! `PreferNoSchedule` taints (normalised and reversed: fewest is 100).

use k8s_openapi::api::core::v1::{Taint, Toleration};
use kubesched_framework::events::QueueingHint;
use kubesched_framework::{
    Code, CycleState, FilterPlugin, NodeInfo, NodeScore, Plugin, PodInfo, PreScorePlugin,
    ScoreExtensions, ScorePlugin, Snapshot, Status, filter_where,
};

use crate::helper::{find_untolerated_taint, normalize_to_max, tolerations_tolerate};

/// The plugin's name.
pub const NAME: &str = "TaintToleration";
/// The Filter's reason.
pub const ERR_REASON_NOT_MATCH: &str = "node(s) had untolerated taint(s)";

/// Taints and tolerations.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaintToleration;

/// The pod's tolerations that can tolerate `PreferNoSchedule` taints (those with that
/// effect or none), computed once in PreScore.
#[derive(Clone, Debug)]
struct PreferNoScheduleTolerations(Vec<Toleration>);

impl Plugin for TaintToleration {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler: TaintToleration reads the tolerations.
    /// The verdict reads the pod's tolerations and the node's taints only.
    fn node_local(&self, _pod: &PodInfo) -> bool {
        true
    }
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
    }
    // Reads the node's taints only.
    fn reads_node_pods(&self, _pod: &PodInfo) -> bool {
        false
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![kubesched_framework::signature::tolerations_fragment(
            pod,
        )])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::taints()
    }
    kubesched_framework::extension_points!(Filter, PreScore, Score);

    /// kube-scheduler's `isSchedulableAfterNodeChange`: a node added or retainted helps
    /// only when it had an untolerated `NoSchedule` or `NoExecute` taint (a new node
    /// counts as having had one) and has none now. `isSchedulableAfterPodTolerationChange`:
    /// a toleration change helps only the pod that changed.
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        event: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> QueueingHint {
        if let Some(hint) = crate::events::toleration_change_hint(pod, event, objects, |_| true) {
            return hint;
        }
        let tolerations = pod.spec().tolerations.as_deref().unwrap_or(&[]);
        let untolerated = |node: &NodeInfo| {
            find_untolerated_taint(node.taints(), tolerations, |t| {
                t.effect == "NoSchedule" || t.effect == "NoExecute"
            })
            .is_some()
        };
        crate::events::node_change_hint(event, objects, |original, modified| {
            let was_untolerated = original.is_none_or(&untolerated);
            QueueingHint::queue_if(was_untolerated && !untolerated(modified))
        })
    }
}

impl FilterPlugin for TaintToleration {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let tolerations = pod.spec().tolerations.as_deref().unwrap_or(&[]);
        let untolerated = find_untolerated_taint(node.taints(), tolerations, |t| {
            t.effect == "NoSchedule" || t.effect == "NoExecute"
        });
        match untolerated {
            None => Status::success(),
            Some(taint) => {
                let status = Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_NOT_MATCH);
                if !state.explain() {
                    return status;
                }
                status.with_notes([format!(
                    "taint {} is not tolerated by the pod",
                    taint_string(taint)
                )])
            }
        }
    }

    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        filter_where(self, state, pod, nodes, rejected, |node| {
            !node.taints().is_empty()
        });
    }
}

/// A taint as kubectl writes it: `key=value:effect`, or `key:effect` without a value.
pub fn taint_string(taint: &Taint) -> String {
    match taint.value.as_deref().filter(|v| !v.is_empty()) {
        Some(value) => format!("{}={value}:{}", taint.key, taint.effect),
        None => format!("{}:{}", taint.key, taint.effect),
    }
}

impl PreScorePlugin for TaintToleration {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        let tolerations = pod
            .spec()
            .tolerations
            .iter()
            .flatten()
            .filter(|t| {
                matches!(
                    t.effect.as_deref(),
                    None | Some("") | Some("PreferNoSchedule")
                )
            })
            .cloned()
            .collect();
        state.write(PreferNoScheduleTolerations(tolerations));
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(intolerable_prefer_no_schedule(
            prescored_tolerations(state)?,
            node,
        ))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        _: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let tolerations = prescored_tolerations(state)?;
        for (node, out) in nodes.iter().zip(out) {
            *out = intolerable_prefer_no_schedule(tolerations, node);
        }
        Ok(())
    }

    fn score_extensions(&self) -> Option<&dyn ScoreExtensions> {
        Some(self)
    }
}

/// The pod's PreferNoSchedule tolerations, as PreScore stored them.
fn prescored_tolerations(state: &CycleState) -> Result<&[Toleration], Status> {
    state
        .read::<PreferNoScheduleTolerations>()
        .map(|t| t.0.as_slice())
        .ok_or_else(|| {
            Status::error("failed to read \"PreScoreTaintToleration\" from cycleState: not found")
        })
}

/// The raw score: how many of the node's PreferNoSchedule taints are not tolerated.
fn intolerable_prefer_no_schedule(tolerations: &[Toleration], node: &NodeInfo) -> i64 {
    node.taints()
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule" && !tolerations_tolerate(tolerations, t))
        .count() as i64
}

impl ScoreExtensions for TaintToleration {
    fn normalize_score(&self, _: &CycleState, _: &PodInfo, scores: &mut [NodeScore]) -> Status {
        normalize_to_max(true, scores);
        Status::success()
    }
    fn normalization(&self, _: &CycleState) -> kubesched_framework::Normalization {
        kubesched_framework::Normalization::ScaledToMax { reverse: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// taint_toleration_test.go's `Test_isSchedulableAfterPodTolerationChange`: a
    /// toleration change helps the pod that changed, and no other.
    #[test]
    fn a_toleration_change_helps_only_the_pod_that_changed() {
        use kubesched_framework::build::{PodBuilder, TaintEffect};
        use kubesched_framework::events::{ActionType, EventResource};
        use kubesched_framework::{ClusterEvent, EventObject, EventObjects, Plugin};
        let pod = PodBuilder::new("default", "p")
            .uid("uid")
            .pod_info()
            .unwrap();
        let event = ClusterEvent::new(EventResource::Pod, ActionType::UPDATE_POD_TOLERATION);
        let hint = |uid: &str| {
            let modified = PodBuilder::new("default", "p")
                .uid(uid)
                .toleration("foo", "bar", TaintEffect::NoSchedule)
                .pod_info()
                .unwrap();
            let objects = EventObjects {
                old: None,
                new: Some(EventObject::Pod(modified)),
            };
            TaintToleration.queueing_hint(&pod, &event, &objects)
        };
        assert_eq!(hint("uid"), QueueingHint::Queue);
        assert_eq!(hint("other"), QueueingHint::QueueSkip);
    }

    #[test]
    fn a_taint_reads_as_kubectl_writes_it() {
        let taint = |value: Option<&str>| Taint {
            key: "gpu".into(),
            value: value.map(String::from),
            effect: "NoSchedule".into(),
            time_added: None,
        };
        assert_eq!(taint_string(&taint(Some("true"))), "gpu=true:NoSchedule");
        assert_eq!(taint_string(&taint(None)), "gpu:NoSchedule");
        assert_eq!(taint_string(&taint(Some(""))), "gpu:NoSchedule");
    }

    #[test]
    fn a_node_event_helps_only_when_an_untolerated_taint_goes() {
        use kubesched_framework::build::{NodeBuilder, PodBuilder, TaintEffect};
        use kubesched_framework::events::{ActionType, EventResource};
        use kubesched_framework::{ClusterEvent, EventObjects};
        let pod = PodBuilder::new("default", "p")
            .toleration("ok", "", TaintEffect::NoSchedule)
            .pod_info()
            .unwrap();
        let plain = || NodeBuilder::new("n");
        let tainted = |key: &str| NodeBuilder::new("n").taint(key, "", TaintEffect::NoSchedule);
        let hint = |old: Option<NodeBuilder>, new: NodeBuilder| {
            let event = match old {
                None => ClusterEvent::NODE_ADD,
                Some(_) => ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_TAINT),
            };
            let objects = EventObjects::node_change(old.map(|n| n.node()), new.node());
            TaintToleration.queueing_hint(&pod, &event, &objects)
        };
        assert_eq!(hint(None, plain()), QueueingHint::Queue);
        assert_eq!(hint(None, tainted("ok")), QueueingHint::Queue);
        assert_eq!(hint(None, tainted("bad")), QueueingHint::QueueSkip);
        assert_eq!(hint(Some(tainted("bad")), plain()), QueueingHint::Queue);
        // It had no untolerated taint: nothing this plugin turned down changed.
        assert_eq!(hint(Some(plain()), tainted("ok")), QueueingHint::QueueSkip);
        assert_eq!(
            hint(Some(tainted("bad")), tainted("bad")),
            QueueingHint::QueueSkip
        );
    }
}
