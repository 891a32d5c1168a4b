//! NodeDeclaredFeatures: nodes list the features they support in
//! `status.declaredFeatures`; PreFilter infers from the pod's spec the features it needs
//! (the registry of `k8s.io/component-helpers/nodedeclaredfeatures` of the version), and
//! Filter rejects the nodes that lack one (UnschedulableAndUnresolvable).
//!
//! The plugin does nothing unless the `NodeDeclaredFeatures` gate is on (off by default
//! in v1.35, on in v1.36; kube-scheduler adds the plugin to the default profile only
//! when it is on, see `kubesched_config::default_plugins_gated`). PreFilter returns Skip
//! when the pod needs no feature.
//!
//! What differs between the versions:
//!
//! | | v1.35 (component-helpers v0.35.4) | v1.36 (v0.36.1) |
//! | --- | --- | --- |
//! | features a pending pod can need | RestartAllContainersOnContainerExits | that one, and UserNamespacesHostNetworkSupport |
//! | the node's features | a set of its `declaredFeatures` | the registered names found by one merge walk over `declaredFeatures` taken as sorted (an unsorted list loses entries, as in kube-scheduler; the API server only stores sorted lists) |
//! | reason | `node declared features check failed - unsatisfied requirements: NAME, ...` | `node(s) didn't match Pod's required features` |
//!
//! A pod needs RestartAllContainersOnContainerExits when a container or init container
//! has a `restartPolicyRules` entry with action `RestartAllContainers`, and
//! UserNamespacesHostNetworkSupport (v1.36) when it has `hostNetwork: true` and
//! `hostUsers: false`. The other registered features are only inferred for updates of
//! running pods (resizes), never for scheduling.

use k8s_openapi::api::core::v1::{Node, PodSpec};
use kubesched_framework::{
    ClusterEvent, Code, CycleState, Features, FilterPlugin, KubernetesVersion, NodeInfo, Plugin,
    PodInfo, PreFilterPlugin, PreFilterResult, Reason, Snapshot, Status,
    events::{ActionType, EventResource},
};

/// The plugin's name.
pub const NAME: &str = "NodeDeclaredFeatures";
/// The gate that turns the plugin on.
pub const GATE: &str = "NodeDeclaredFeatures";
/// Filter's reason in v1.36.
pub const ERR_REASON_UNSATISFIED: &str = "node(s) didn't match Pod's required features";
/// The start of Filter's reason in v1.35 (the missing features follow, joined by ", ").
pub const ERR_REASON_V1_35_PREFIX: &str =
    "node declared features check failed - unsatisfied requirements: ";

/// RestartAllContainersOnContainerExits: a container restart rule restarts the whole pod.
pub const RESTART_ALL_CONTAINERS: &str = "RestartAllContainersOnContainerExits";
/// UserNamespacesHostNetworkSupport: host networking in a user namespace (v1.36).
pub const USER_NAMESPACES_HOST_NETWORK: &str = "UserNamespacesHostNetworkSupport";

/// v1.36's registry (`features.AllFeatures`), sorted by name as the framework sorts it.
const REGISTRY_V1_36: [&str; 5] = [
    "ExtendWebSocketsToKubelet",
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
];

/// Nodes that lack a feature the pod needs are filtered out.
#[derive(Debug, Clone, Copy)]
pub struct NodeDeclaredFeatures {
    enabled: bool,
    version: KubernetesVersion,
}

impl Default for NodeDeclaredFeatures {
    /// On, with the newest version's registry.
    fn default() -> Self {
        NodeDeclaredFeatures {
            enabled: true,
            version: KubernetesVersion::LATEST,
        }
    }
}

/// The features the pod needs, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PreFilterState(Vec<&'static str>);

impl NodeDeclaredFeatures {
    /// The plugin as `features` make it: inert unless the gate is on.
    pub fn new(features: &Features) -> NodeDeclaredFeatures {
        NodeDeclaredFeatures {
            enabled: features.enabled(GATE),
            version: features.version,
        }
    }

    /// The registered features the pod needs to be scheduled (`InferForPodScheduling`),
    /// sorted by name.
    pub fn required(&self, spec: &PodSpec) -> Vec<&'static str> {
        let mut out = Vec::new();
        if needs_restart_all_containers(spec) {
            out.push(RESTART_ALL_CONTAINERS);
        }
        if self.version >= KubernetesVersion::V1_36
            && spec.host_network == Some(true)
            && spec.host_users == Some(false)
        {
            out.push(USER_NAMESPACES_HOST_NETWORK);
        }
        out
    }

    /// The required features the node does not declare, in name order.
    pub fn missing(&self, required: &[&'static str], node: &Node) -> Vec<&'static str> {
        let declared = node
            .status
            .as_ref()
            .and_then(|s| s.declared_features.as_deref())
            .unwrap_or(&[]);
        match self.version {
            KubernetesVersion::V1_35 => required
                .iter()
                .copied()
                .filter(|r| !declared.iter().any(|d| d == r))
                .collect(),
            _ => {
                let known = registered_in_sorted_walk(declared);
                required
                    .iter()
                    .copied()
                    .filter(|r| !known.contains(r))
                    .collect()
            }
        }
    }
}

fn needs_restart_all_containers(spec: &PodSpec) -> bool {
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.restart_policy_rules.iter().flatten())
        .any(|rule| rule.action == "RestartAllContainers")
}

/// The registered names the v1.36 framework maps a node's `declaredFeatures` to
/// (`FeatureMapper.TryMap`): one merge walk of the list against the sorted registry,
/// which assumes the list sorted. An entry that sorts before the registry entry it
/// meets is skipped as unknown, so an unsorted list can lose registered names.
fn registered_in_sorted_walk(declared: &[String]) -> Vec<&'static str> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < declared.len() && j < REGISTRY_V1_36.len() {
        let (d, r) = (declared[i].as_str(), REGISTRY_V1_36[j]);
        if d == r {
            out.push(r);
            i += 1;
            j += 1;
        } else if d < r {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

impl Plugin for NodeDeclaredFeatures {
    fn name(&self) -> &str {
        NAME
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        if !self.enabled {
            return Vec::new();
        }
        // A node added or declaring other features; the pod's own spec changing what
        // it needs.
        vec![
            ClusterEvent::new(
                EventResource::Node,
                ActionType::ADD | ActionType::UPDATE_NODE_DECLARED_FEATURE,
            ),
            ClusterEvent::new(EventResource::Pod, ActionType::UPDATE),
        ]
    }
    /// As kube-scheduler's: the features the pod needs are its fragment, so pods that
    /// need the same features can share a batch.
    /// The verdict reads the pod and the node's declared features only.
    fn node_local(&self, _pod: &PodInfo) -> bool {
        true
    }
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, Status> {
        let required = if self.enabled {
            self.required(pod.spec())
        } else {
            Vec::new()
        };
        Ok(vec![kubesched_framework::signature::SignFragment::json(
            kubesched_framework::signature::signers::FEATURES,
            &required,
        )])
    }
    kubesched_framework::extension_points!(PreFilter, Filter);
}

impl PreFilterPlugin for NodeDeclaredFeatures {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if !self.enabled {
            return (None, Status::skip());
        }
        let required = self.required(pod.spec());
        if required.is_empty() {
            return (None, Status::skip());
        }
        state.write(PreFilterState(required));
        (None, Status::success())
    }
}

impl FilterPlugin for NodeDeclaredFeatures {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        if !self.enabled {
            return Status::success();
        }
        let Some(PreFilterState(required)) = state.read::<PreFilterState>() else {
            return Status::error(format!(
                "error reading \"PreFilter{NAME}\" from cycle-state: not found"
            ));
        };
        let missing = self.missing(required, node.node());
        if missing.is_empty() {
            return Status::success();
        }
        let reason: Reason = match self.version {
            KubernetesVersion::V1_35 => {
                format!("{ERR_REASON_V1_35_PREFIX}{}", missing.join(", ")).into()
            }
            _ => ERR_REASON_UNSATISFIED.into(),
        };
        let status = Status::new(Code::UnschedulableAndUnresolvable, reason);
        if state.explain() {
            status.with_notes(
                missing
                    .iter()
                    .map(|m| format!("the node does not declare feature {m}")),
            )
        } else {
            status
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn plugin(version: KubernetesVersion) -> NodeDeclaredFeatures {
        NodeDeclaredFeatures {
            enabled: true,
            version,
        }
    }

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    fn node(features: &[&str]) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "status": {"declaredFeatures": features},
        }))
        .unwrap()
    }

    fn restart_all(init: bool) -> serde_json::Value {
        let c = json!({"name": "c", "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        ]});
        if init {
            json!({"containers": [{"name": "main"}], "initContainers": [c]})
        } else {
            json!({"containers": [c]})
        }
    }

    #[test]
    fn requirements_follow_the_version_registry() {
        let v36 = plugin(KubernetesVersion::V1_36);
        let v35 = plugin(KubernetesVersion::V1_35);
        assert_eq!(
            v36.required(&spec(restart_all(false))),
            [RESTART_ALL_CONTAINERS]
        );
        assert_eq!(
            v36.required(&spec(restart_all(true))),
            [RESTART_ALL_CONTAINERS]
        );
        let userns =
            spec(json!({"hostNetwork": true, "hostUsers": false, "containers": [{"name": "c"}]}));
        assert_eq!(v36.required(&userns), [USER_NAMESPACES_HOST_NETWORK]);
        assert!(v35.required(&userns).is_empty());
        let host_users_unset = spec(json!({"hostNetwork": true, "containers": [{"name": "c"}]}));
        assert!(v36.required(&host_users_unset).is_empty());
        let other_action = spec(json!({"containers": [{"name": "c", "restartPolicyRules": [
            {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}
        ]}]}));
        assert!(v36.required(&other_action).is_empty());
    }

    #[test]
    fn v1_36_reads_declared_features_as_a_sorted_list() {
        let p = plugin(KubernetesVersion::V1_36);
        let both = [RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK];
        assert!(p.missing(&both, &node(&both)).is_empty());
        // Unsorted: the walk passes RestartAll... while looking for UserNamespaces...
        let reversed = node(&[USER_NAMESPACES_HOST_NETWORK, RESTART_ALL_CONTAINERS]);
        assert_eq!(p.missing(&both, &reversed), [RESTART_ALL_CONTAINERS]);
        // Unknown names are skipped.
        let with_unknown = node(&["AAA", RESTART_ALL_CONTAINERS, "Zzz"]);
        assert!(
            p.missing(&[RESTART_ALL_CONTAINERS], &with_unknown)
                .is_empty()
        );
        assert_eq!(
            p.missing(&[RESTART_ALL_CONTAINERS], &node(&[])),
            [RESTART_ALL_CONTAINERS]
        );
        // v1.35 takes the list as a set.
        let v35 = plugin(KubernetesVersion::V1_35);
        assert!(v35.missing(&[RESTART_ALL_CONTAINERS], &reversed).is_empty());
    }

    #[test]
    fn filter_reasons_per_version() {
        let pod: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": restart_all(false)}))
                .unwrap();
        let pod = PodInfo::new(Arc::new(pod)).unwrap();
        let bare = NodeInfo::new(Arc::new(node(&[]))).unwrap();
        let snapshot = Snapshot::default();
        for (version, reason) in [
            (KubernetesVersion::V1_36, ERR_REASON_UNSATISFIED.to_string()),
            (
                KubernetesVersion::V1_35,
                format!("{ERR_REASON_V1_35_PREFIX}{RESTART_ALL_CONTAINERS}"),
            ),
        ] {
            let p = plugin(version);
            let mut state = CycleState::new();
            let (_, s) = p.pre_filter(&mut state, &pod, &snapshot);
            assert!(s.is_success(), "{s:?}");
            let s = p.filter(&state, &pod, &bare);
            assert_eq!(s.code(), Code::UnschedulableAndUnresolvable);
            assert_eq!(s.reasons(), [reason]);
        }
        let off = NodeDeclaredFeatures::new(&Features::new(KubernetesVersion::V1_35));
        let (_, s) = off.pre_filter(&mut CycleState::new(), &pod, &snapshot);
        assert_eq!(s.code(), Code::Skip);
        assert!(off.events_to_register().is_empty());
        let on = NodeDeclaredFeatures::new(&Features::new(KubernetesVersion::V1_36));
        assert!(on.enabled);
        // Filter without PreFilter (a profile enabling only Filter) is an error.
        let s = on.filter(&CycleState::new(), &pod, &bare);
        assert_eq!(s.code(), Code::Error);
    }
}
