//! PrioritySort: the queue order. Higher `spec.priority` first (a missing priority is
//! 0), then the pod that entered the queue first.

use kubesched_framework::{Plugin, QueueSortPlugin, QueuedPodInfo};

/// The plugin's name.
pub const NAME: &str = "PrioritySort";

/// Orders pods by priority, then by queue entry.
#[derive(Debug, Default, Clone, Copy)]
pub struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &str {
        NAME
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::none()
    }
    kubesched_framework::extension_points!(QueueSort);
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (a.pod_info.priority(), b.pod_info.priority());
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}
