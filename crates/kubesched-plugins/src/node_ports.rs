//! NodePorts: Filter rejects nodes where a host port the pod asks for is already in
//! use ("node(s) didn't have free ports for the requested pod ports", Unschedulable).
//!
//! As in kube-scheduler v1.35, the pod's host ports are those of its containers and of
//! its restartable init containers (sidecars), with `hostPort > 0`; regular init
//! containers' ports do not count. PreFilter returns Skip when the pod asks for none.
//! An empty protocol is TCP; an empty host IP is `0.0.0.0`, which conflicts with the
//! same protocol and port on every IP (see [`kubesched_framework::HostPortInfo`]).

use kubesched_framework::{
    Code, CycleState, FilterPlugin, HostPortInfo, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, QueueingHint, Snapshot, Status,
};

/// The plugin's name.
pub const NAME: &str = "NodePorts";
/// Filter's reason.
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// Host port conflicts.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodePorts;

/// `true` when none of the pod's host ports is in use on the node.
pub fn fits(pod: &PodInfo, node: &NodeInfo) -> bool {
    let used = node.used_ports();
    !pod.host_ports().iter().any(|p| used.conflicts(p))
}

impl Plugin for NodePorts {
    fn name(&self) -> &str {
        NAME
    }
    // kube-scheduler: NodePorts reads the host ports.
    /// The verdict reads the pod's host ports and those used on the node only.
    fn node_local(&self, _pod: &PodInfo) -> bool {
        true
    }
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![kubesched_framework::signature::host_ports_fragment(
            pod,
        )])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::node_ports()
    }
    kubesched_framework::extension_points!(PreFilter, Filter);

    /// kube-scheduler's `isSchedulableAfterPodDeleted`: a pod deleted helps only when
    /// it was on a node (or nominated to one) and held a host port that conflicts with
    /// one the pod asks for. A new node always helps (no hint function upstream).
    fn queueing_hint(
        &self,
        pod: &PodInfo,
        _: &kubesched_framework::ClusterEvent,
        objects: &kubesched_framework::EventObjects,
    ) -> QueueingHint {
        let (Some(deleted), None) = (objects.old_pod(), &objects.new) else {
            return QueueingHint::Queue;
        };
        if !crate::events::held_a_place(deleted) {
            return QueueingHint::QueueSkip;
        }
        let mut freed = HostPortInfo::default();
        for port in deleted.host_ports() {
            freed.add(port);
        }
        QueueingHint::queue_if(pod.host_ports().iter().any(|p| freed.conflicts(p)))
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        // The pod's host ports are computed once in PodInfo; nothing else to store.
        if pod.host_ports().is_empty() {
            (None, Status::skip())
        } else {
            (None, Status::success())
        }
    }
}

impl FilterPlugin for NodePorts {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if fits(pod, node) {
            return Status::success();
        }
        let status = Status::new(Code::Unschedulable, ERR_REASON);
        if !state.explain() {
            return status;
        }
        status.with_notes(conflicts(pod, node))
    }
}

/// For `--explain`: each of the pod's host ports in use on the node, with the pods
/// there that hold it.
fn conflicts(pod: &PodInfo, node: &NodeInfo) -> Vec<String> {
    let used = node.used_ports();
    pod.host_ports()
        .iter()
        .filter(|p| used.conflicts(p))
        .map(|p| {
            let holders: Vec<&str> = node
                .pods()
                .iter()
                .filter(|other| {
                    let mut theirs = HostPortInfo::default();
                    other.host_ports().iter().for_each(|q| theirs.add(q));
                    theirs.conflicts(p)
                })
                .map(|other| other.key())
                .collect();
            let by = if holders.is_empty() {
                String::new()
            } else {
                format!(" by pod {}", holders.join(", "))
            };
            format!(
                "host port {}/{} on {} is in use on this node{by}",
                p.protocol, p.port, p.ip
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;
    use std::sync::Arc;

    /// A pod whose containers use these (ip, protocol, hostPort) ports; `init` ports go
    /// to an init container, a sidecar when `sidecar`.
    fn pod(ports: &[(&str, &str, i32)], init: &[(&str, &str, i32)], sidecar: bool) -> Arc<PodInfo> {
        let to_json = |ps: &[(&str, &str, i32)]| -> Vec<serde_json::Value> {
            ps.iter()
                .map(|(ip, proto, port)| json!({"containerPort": 8080, "hostIP": ip, "protocol": proto, "hostPort": port}))
                .collect()
        };
        let mut init_c = json!({"name": "init", "ports": to_json(init)});
        if sidecar {
            init_c["restartPolicy"] = json!("Always");
        }
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "ports": to_json(ports)}], "initContainers": [init_c]}
        }))
        .unwrap();
        Arc::new(PodInfo::new(Arc::new(pod)).unwrap())
    }

    fn node_with(existing: Option<Arc<PodInfo>>) -> NodeInfo {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        let mut n = NodeInfo::new(Arc::new(node)).unwrap();
        if let Some(p) = existing {
            n.add_pod(p);
        }
        n
    }

    fn run(p: &PodInfo, node: &NodeInfo) -> Option<Status> {
        let mut state = CycleState::new();
        let (r, s) = NodePorts.pre_filter(&mut state, p, &Snapshot::default());
        assert!(r.is_none());
        if s.is_skip() {
            return None;
        }
        Some(NodePorts.filter(&state, p, node))
    }

    // Named after kube-scheduler's TestNodePorts.
    #[test]
    fn filter_matches_kube_scheduler() {
        type Ports<'a> = &'a [(&'a str, &'a str, i32)];
        let cases: &[(&str, Ports, Ports, bool)] = &[
            ("nothing running", &[("127.0.0.1", "UDP", 8080)], &[], true),
            (
                "other port",
                &[("127.0.0.1", "UDP", 8080)],
                &[("127.0.0.1", "UDP", 9090)],
                true,
            ),
            (
                "same udp port",
                &[("127.0.0.1", "UDP", 8080)],
                &[("127.0.0.1", "UDP", 8080)],
                false,
            ),
            (
                "same tcp port",
                &[("127.0.0.1", "TCP", 8080)],
                &[("127.0.0.1", "TCP", 8080)],
                false,
            ),
            (
                "different host ip",
                &[("127.0.0.1", "TCP", 8080)],
                &[("127.0.0.2", "TCP", 8080)],
                true,
            ),
            (
                "different protocol",
                &[("127.0.0.1", "UDP", 8080)],
                &[("127.0.0.1", "TCP", 8080)],
                true,
            ),
            (
                "second udp port conflict",
                &[("127.0.0.1", "UDP", 8000), ("127.0.0.1", "UDP", 8080)],
                &[("127.0.0.1", "UDP", 8080)],
                false,
            ),
            (
                "first tcp port conflict due to 0.0.0.0 hostIP",
                &[("0.0.0.0", "TCP", 8001), ("127.0.0.1", "UDP", 8080)],
                &[("127.0.0.1", "TCP", 8001)],
                false,
            ),
            (
                "TCP hostPort conflict due to 0.0.0.0 hostIP",
                &[("10.0.10.10", "TCP", 8001)],
                &[("0.0.0.0", "TCP", 8001)],
                false,
            ),
            (
                "empty host IP and protocol are 0.0.0.0 and TCP",
                &[("", "", 8001)],
                &[("10.0.0.1", "TCP", 8001)],
                false,
            ),
            (
                "second different protocol",
                &[("127.0.0.1", "UDP", 8001)],
                &[("0.0.0.0", "TCP", 8001)],
                true,
            ),
            (
                "UDP hostPort conflict due to 0.0.0.0 hostIP",
                &[("10.0.10.10", "UDP", 8001)],
                &[("0.0.0.0", "UDP", 8001)],
                false,
            ),
        ];
        for (name, want, existing, fits) in cases {
            let node = node_with((!existing.is_empty()).then(|| pod(existing, &[], false)));
            let got =
                run(&pod(want, &[], false), &node).unwrap_or_else(|| panic!("{name}: skipped"));
            if *fits {
                assert!(got.is_success(), "{name}: {got}");
            } else {
                assert_eq!(got.code(), Code::Unschedulable, "{name}");
                assert_eq!(got.message(), ERR_REASON, "{name}");
            }
        }
    }

    #[test]
    fn pods_without_host_ports_skip() {
        assert!(run(&pod(&[], &[], false), &node_with(None)).is_none());
        assert!(run(&pod(&[("", "", 0)], &[], false), &node_with(None)).is_none());
        // A regular init container's host port does not count.
        assert!(run(&pod(&[], &[("", "", 80)], false), &node_with(None)).is_none());
    }

    #[test]
    fn sidecar_ports_count_and_init_ports_do_not() {
        let existing_sidecar = node_with(Some(pod(&[], &[("", "", 80)], true)));
        let existing_init = node_with(Some(pod(&[], &[("", "", 80)], false)));
        let wants = pod(&[("", "TCP", 80)], &[], false);
        assert!(!run(&wants, &existing_sidecar).unwrap().is_success());
        assert!(run(&wants, &existing_init).unwrap().is_success());
        let sidecar_wants = pod(&[], &[("", "", 80)], true);
        assert!(!run(&sidecar_wants, &existing_sidecar).unwrap().is_success());
    }

    /// The pod `p` made unscheduled (`nodeName` taken out), nominated to `nominated`
    /// when given.
    fn unscheduled(p: &PodInfo, nominated: Option<&str>) -> Arc<PodInfo> {
        let mut pod = p.pod().clone();
        if let Some(spec) = pod.spec.as_mut() {
            spec.node_name = None;
        }
        if let Some(node) = nominated {
            pod.status.get_or_insert_default().nominated_node_name = Some(node.into());
        }
        Arc::new(PodInfo::new(Arc::new(pod)).unwrap())
    }

    // After kube-scheduler's Test_isSchedulableAfterPodDeleted.
    #[test]
    fn a_deleted_pod_helps_only_with_a_port_it_held() {
        use kubesched_framework::{ClusterEvent, EventObject, EventObjects, QueueingHint};
        let wants = pod(&[("", "TCP", 8080)], &[], false);
        let hint = |deleted: Option<Arc<PodInfo>>| {
            let objects = match deleted {
                Some(p) => EventObjects::deleted(EventObject::Pod(p)),
                None => EventObjects::NONE,
            };
            NodePorts.queueing_hint(&wants, &ClusterEvent::ASSIGNED_POD_DELETE, &objects)
        };
        let holder = pod(&[("", "TCP", 8080)], &[], false);
        assert_eq!(
            hint(Some(holder.clone())),
            QueueingHint::Queue,
            "held the port"
        );
        assert_eq!(
            hint(Some(unscheduled(&holder, None))),
            QueueingHint::QueueSkip,
            "never on a node"
        );
        assert_eq!(
            hint(Some(unscheduled(&holder, Some("n")))),
            QueueingHint::Queue,
            "nominated"
        );
        assert_eq!(
            hint(Some(pod(&[], &[], false))),
            QueueingHint::QueueSkip,
            "no host port"
        );
        assert_eq!(
            hint(Some(pod(&[("", "TCP", 9090)], &[], false))),
            QueueingHint::QueueSkip,
            "another port"
        );
        assert_eq!(
            hint(Some(pod(&[("", "UDP", 8080)], &[], false))),
            QueueingHint::QueueSkip,
            "another protocol"
        );
        assert_eq!(
            hint(Some(pod(&[("10.0.0.1", "TCP", 8080)], &[], false))),
            QueueingHint::Queue,
            "the port on one IP, wanted on all"
        );
        assert_eq!(hint(None), QueueingHint::Queue, "no object to look at");
        let node_added =
            NodePorts.queueing_hint(&wants, &ClusterEvent::NODE_ADD, &EventObjects::NONE);
        assert_eq!(node_added, QueueingHint::Queue);
    }
}
