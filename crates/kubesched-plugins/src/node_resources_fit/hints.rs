//! NodeResourcesFit's queueing hints (kube-scheduler's `isSchedulableAfterNodeChange`
//! and `isSchedulableAfterPodEvent`): which node and pod events may let a pod the
//! plugin turned down through.

use kubesched_framework::events::{ClusterEvent, EventObjects, EventResource, QueueingHint};
use kubesched_framework::{NodeInfo, PodInfo};

use super::NodeResourcesFit;

impl NodeResourcesFit {
    /// A node added or whose allocatable changed helps only when the pod would fit it
    /// empty (`isFit`, with none of the args' ignored resources ignored, as upstream
    /// calls `fitsRequest`), and an update only when it raised the allocatable of
    /// something the pod requests, or the pod count
    /// (`haveAnyRequestedResourcesIncreased`). A pod deleted helps when it was on a
    /// node (or nominated to one); a pod scaled down when it is the pod itself, or a
    /// pod on a node whose requests went down in something the pod requests.
    pub(super) fn hint(
        &self,
        pod: &PodInfo,
        event: &ClusterEvent,
        objects: &EventObjects,
    ) -> QueueingHint {
        if event.resource != EventResource::Node {
            return match (objects.old_pod(), objects.new_pod()) {
                (Some(deleted), None) => {
                    QueueingHint::queue_if(crate::events::held_a_place(deleted))
                }
                (Some(original), Some(modified)) => {
                    QueueingHint::queue_if(scale_down_helps(pod, original, modified))
                }
                _ => QueueingHint::Queue,
            };
        }
        crate::events::node_change_hint(event, objects, |original, modified| {
            let mut fits = true;
            self.for_each_shortfall_ignoring(pod, modified, false, |_| fits = false);
            if !fits {
                return QueueingHint::QueueSkip;
            }
            match original {
                None => QueueingHint::Queue,
                Some(original) => {
                    QueueingHint::queue_if(requested_resources_increased(pod, original, modified))
                }
            }
        })
    }
}

/// kube-scheduler's `isSchedulableAfterPodScaleDown`: the pod itself scaled down, or
/// a pod on a node whose requests went down in a resource `pod` requests (non-zero).
fn scale_down_helps(pod: &PodInfo, original: &PodInfo, modified: &PodInfo) -> bool {
    if modified.uid() == pod.uid() {
        return true;
    }
    if modified.node_name().is_none() {
        return false;
    }
    let (want, was, now) = (pod.requests(), original.requests(), modified.requests());
    (want.milli_cpu != 0 && was.milli_cpu > now.milli_cpu)
        || (want.memory != 0 && was.memory > now.memory)
        || (want.ephemeral_storage != 0 && was.ephemeral_storage > now.ephemeral_storage)
        || want
            .scalar_resources
            .iter()
            .any(|(name, &n)| n != 0 && was.scalar(name) > now.scalar(name))
}

/// kube-scheduler's `haveAnyRequestedResourcesIncreased`: whether the node's pod count
/// grew, or the allocatable of a resource the pod requests (cpu, memory,
/// ephemeral-storage, a scalar resource with a non-zero request). A pod that requests
/// nothing (no scalar resource listed at all) is helped by the pod count alone.
fn requested_resources_increased(pod: &PodInfo, original: &NodeInfo, modified: &NodeInfo) -> bool {
    let (req, was, now) = (
        pod.requests(),
        original.allocatable(),
        modified.allocatable(),
    );
    if now.allowed_pod_number > was.allowed_pod_number {
        return true;
    }
    if req.milli_cpu == 0
        && req.memory == 0
        && req.ephemeral_storage == 0
        && req.scalar_resources.is_empty()
    {
        return false;
    }
    (req.milli_cpu > 0 && now.milli_cpu > was.milli_cpu)
        || (req.memory > 0 && now.memory > was.memory)
        || (req.ephemeral_storage > 0 && now.ephemeral_storage > was.ephemeral_storage)
        || req
            .scalar_resources
            .iter()
            .any(|(name, &want)| want != 0 && now.scalar(name) > was.scalar(name))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::*;
    use kubesched_config::args::PluginArgs;
    use kubesched_framework::build::{NodeBuilder, PodBuilder};
    use kubesched_framework::events::{ActionType, EventResource};
    use kubesched_framework::{ClusterEvent, EventObjects};

    fn fit(ignored: &[&str]) -> NodeResourcesFit {
        let mut args = NodeResourcesFitArgs {
            ignored_resources: ignored.iter().map(|r| r.to_string()).collect(),
            ..NodeResourcesFitArgs::default()
        };
        args.apply_defaults();
        NodeResourcesFit::new(args)
    }

    fn cpu_pod(millis: i64) -> Arc<PodInfo> {
        PodBuilder::new("default", "p")
            .cpu_millis(millis)
            .pod_info()
            .unwrap()
    }

    fn node(cpu: i64, memory: i64) -> NodeBuilder {
        NodeBuilder::new("n")
            .cpu_millis(cpu)
            .memory_bytes(memory)
            .pods(110)
    }

    fn hint(
        fit: &NodeResourcesFit,
        pod: &PodInfo,
        old: Option<NodeBuilder>,
        new: NodeBuilder,
    ) -> QueueingHint {
        let event = match old {
            None => ClusterEvent::NODE_ADD,
            Some(_) => ClusterEvent::new(EventResource::Node, ActionType::UPDATE_NODE_ALLOCATABLE),
        };
        let objects = EventObjects::node_change(old.map(|n| n.node()), new.node());
        fit.queueing_hint(pod, &event, &objects)
    }

    #[test]
    fn a_node_added_helps_only_when_the_pod_fits_it_empty() {
        let (pod, fit) = (cpu_pod(2000), fit(&[]));
        assert_eq!(
            hint(&fit, &pod, None, node(1000, 1 << 30)),
            QueueingHint::QueueSkip
        );
        assert_eq!(
            hint(&fit, &pod, None, node(4000, 1 << 30)),
            QueueingHint::Queue
        );
        // No room for a pod at all.
        let full = node(4000, 1 << 30).pods(0);
        assert_eq!(hint(&fit, &pod, None, full), QueueingHint::QueueSkip);
    }

    #[test]
    fn an_update_helps_only_when_something_the_pod_requests_grew() {
        let pod = PodBuilder::new("default", "p")
            .memory_bytes(1 << 20)
            .pod_info()
            .unwrap();
        let fit = fit(&[]);
        let before = || node(1000, 1 << 30);
        // More memory: the pod asks for memory.
        assert_eq!(
            hint(&fit, &pod, Some(before()), node(1000, 2 << 30)),
            QueueingHint::Queue
        );
        // More cpu only: the pod asks for none.
        assert_eq!(
            hint(&fit, &pod, Some(before()), node(2000, 1 << 30)),
            QueueingHint::QueueSkip
        );
        // Room for more pods helps any pod.
        assert_eq!(
            hint(&fit, &pod, Some(before()), before().pods(200)),
            QueueingHint::Queue
        );
    }

    #[test]
    fn an_ignored_resource_still_counts_in_the_hint_as_upstream_s_isfit_does() {
        let pod = PodBuilder::new("default", "p")
            .resource("example.com/foo", 1)
            .pod_info()
            .unwrap();
        let fit = fit(&["example.com/foo"]);
        // The filter ignores it; the hint (fitsRequest without the args) does not.
        assert_eq!(
            hint(&fit, &pod, None, node(1000, 1 << 30)),
            QueueingHint::QueueSkip
        );
        let with_foo = node(1000, 1 << 30).resource("example.com/foo", 2);
        assert_eq!(hint(&fit, &pod, None, with_foo), QueueingHint::Queue);
    }

    #[test]
    fn other_events_and_missing_objects_always_help() {
        let (pod, fit) = (cpu_pod(2000), fit(&[]));
        assert_eq!(
            fit.queueing_hint(&pod, &ClusterEvent::NODE_ADD, &EventObjects::NONE),
            QueueingHint::Queue
        );
        assert_eq!(
            fit.queueing_hint(
                &pod,
                &ClusterEvent::ASSIGNED_POD_DELETE,
                &EventObjects::NONE
            ),
            QueueingHint::Queue
        );
    }

    // After kube-scheduler's Test_isSchedulableAfterPodEvent.
    #[test]
    fn a_pod_deleted_or_scaled_down_helps_only_when_it_frees_what_the_pod_needs() {
        use kubesched_framework::EventObject;
        let fit = fit(&[]);
        let target = PodBuilder::new("default", "p")
            .uid("p")
            .cpu_millis(1000)
            .pod_info()
            .unwrap();
        let other = |cpu: i64, memory: i64, node: Option<&str>| {
            let b = PodBuilder::new("default", "q")
                .uid("q")
                .cpu_millis(cpu)
                .memory_bytes(memory);
            let b = match node {
                Some(n) => b.bound_to(n),
                None => b,
            };
            EventObject::Pod(b.pod_info().unwrap())
        };
        let delete = ClusterEvent::ASSIGNED_POD_DELETE;
        let scale = ClusterEvent::new(
            EventResource::AssignedPod,
            ActionType::UPDATE_POD_SCALE_DOWN,
        );
        let ask = |event: ClusterEvent, old: EventObject, new: Option<EventObject>| {
            fit.queueing_hint(
                &target,
                &event,
                &EventObjects {
                    old: Some(old),
                    new,
                },
            )
        };
        use QueueingHint::{Queue, QueueSkip};
        assert_eq!(
            ask(delete, other(500, 0, Some("n")), None),
            Queue,
            "a pod on a node deleted"
        );
        assert_eq!(
            ask(delete, other(500, 0, None), None),
            QueueSkip,
            "a pending pod deleted"
        );
        let scaled = |cpu, memory| Some(other(cpu, memory, Some("n")));
        assert_eq!(
            ask(scale, other(500, 10, Some("n")), scaled(200, 10)),
            Queue,
            "cpu freed"
        );
        assert_eq!(
            ask(scale, other(500, 10, Some("n")), scaled(500, 5)),
            QueueSkip,
            "only memory freed"
        );
        assert_eq!(
            ask(scale, other(500, 10, None), Some(other(200, 10, None))),
            QueueSkip,
            "a pending pod scaled down"
        );
        let own = EventObject::Pod(target.clone());
        assert_eq!(ask(scale, own.clone(), Some(own)), Queue, "the pod itself");
    }
}
