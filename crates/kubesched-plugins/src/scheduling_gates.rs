//! SchedulingGates: a pod with `spec.schedulingGates` stays out of the active queue
//! until every gate is removed.

use kubesched_framework::{Code, Plugin, PodInfo, PreEnqueuePlugin, Status};

/// The plugin's name.
pub const NAME: &str = "SchedulingGates";

/// Holds gated pods back.
#[derive(Debug, Default, Clone, Copy)]
pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &str {
        NAME
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::scheduling_gates()
    }
    kubesched_framework::extension_points!(PreEnqueue);
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gates: Vec<&str> = pod
            .spec()
            .scheduling_gates
            .iter()
            .flatten()
            .map(|g| g.name.as_str())
            .collect();
        if gates.is_empty() {
            return Status::success();
        }
        Status::new(
            Code::UnschedulableAndUnresolvable,
            format!("waiting for scheduling gates: [{}]", gates.join(" ")),
        )
    }
}

/// The names of a pod's scheduling gates, in order.
pub fn gate_names(pod: &PodInfo) -> Vec<String> {
    pod.spec()
        .scheduling_gates
        .iter()
        .flatten()
        .map(|g| g.name.clone())
        .collect()
}
