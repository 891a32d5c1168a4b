//! [`PodInfo`]: a pod with what the scheduler computes from it once (its key, priority,
//! resource requests, host ports), so no plugin recomputes it per node.

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::{Pod, PodAffinityTerm, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::resource::{PodQuantityError, PodResources, Resource, pod_resources};

/// The scheduler name a pod gets when its `spec.schedulerName` is empty.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// A host port a pod asks for (`containers[].ports[].hostPort`, and sidecars').
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    /// The host IP, `0.0.0.0` when empty.
    pub ip: String,
    /// The protocol, `TCP` when empty.
    pub protocol: String,
    /// The port number (> 0).
    pub port: i32,
}

impl HostPort {
    /// A host port with kube-scheduler's defaults: empty IP is `0.0.0.0`, empty
    /// protocol is `TCP`.
    pub fn new(ip: Option<&str>, protocol: Option<&str>, port: i32) -> HostPort {
        let ip = match ip {
            Some(ip) if !ip.is_empty() => ip.to_string(),
            _ => DEFAULT_BIND_ALL_HOST_IP.to_string(),
        };
        let protocol = match protocol {
            Some(p) if !p.is_empty() => p.to_string(),
            _ => "TCP".to_string(),
        };
        HostPort { ip, protocol, port }
    }
}

/// The host IP that binds every address.
pub const DEFAULT_BIND_ALL_HOST_IP: &str = "0.0.0.0";

/// A pod and what the scheduler derives from it once.
#[derive(Clone, Debug)]
pub struct PodInfo {
    /// The pod as it was given; for a copy made by [`PodInfo::bound_to`], still without
    /// its node.
    given: Arc<Pod>,
    /// The node [`PodInfo::bound_to`] put the pod on, which `given` does not show.
    assumed_node: Option<Arc<str>>,
    /// `given` with `spec.nodeName` set to `assumed_node`, copied on first use: most
    /// assumed pods are only counted on their node, never read whole, and a deep copy
    /// of every placed pod was a fifth of a kept scheduling cycle.
    assumed_pod: OnceLock<Arc<Pod>>,
    key: String,
    resources: PodResources,
    host_ports: Vec<HostPort>,
}

impl PodInfo {
    /// Derives the pod's info. Fails only on a resource quantity that does not parse.
    pub fn new(pod: Arc<Pod>) -> Result<PodInfo, PodQuantityError> {
        let resources = pod_resources(&pod)?;
        let key = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or("default"),
            pod.metadata.name.as_deref().unwrap_or("")
        );
        let host_ports = host_ports(&pod);
        Ok(PodInfo {
            given: pod,
            assumed_node: None,
            assumed_pod: OnceLock::new(),
            key,
            resources,
            host_ports,
        })
    }

    /// The pod (with `spec.nodeName` set, for a copy made by [`PodInfo::bound_to`]).
    pub fn pod(&self) -> &Pod {
        self.pod_arc()
    }

    /// The pod, shared.
    pub fn pod_arc(&self) -> &Arc<Pod> {
        match &self.assumed_node {
            None => &self.given,
            Some(node) => self.assumed_pod.get_or_init(|| {
                let mut pod = (*self.given).clone();
                pod.spec.get_or_insert_with(Default::default).node_name = Some(node.to_string());
                Arc::new(pod)
            }),
        }
    }

    /// The pod's spec (an empty spec when the object has none).
    pub fn spec(&self) -> &PodSpec {
        spec_or_empty(self.pod())
    }

    /// The pod's metadata, which a copy made by [`PodInfo::bound_to`] shares without
    /// copying the pod (as [`PodInfo::pod`] does for it).
    pub fn metadata(&self) -> &ObjectMeta {
        &self.given.metadata
    }

    /// The spec as given: the same as [`PodInfo::spec`] but for `nodeName`, which
    /// [`PodInfo::node_name`] reads. It never copies an assumed pod.
    fn given_spec(&self) -> &PodSpec {
        spec_or_empty(&self.given)
    }

    /// `namespace/name`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The namespace (`default` when unset).
    pub fn namespace(&self) -> &str {
        self.given
            .metadata
            .namespace
            .as_deref()
            .unwrap_or("default")
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.given.metadata.name.as_deref().unwrap_or("")
    }

    /// The value of the pod's label `key` (`metadata.labels`), if it has that label.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use kubesched_framework::PodInfo;
    /// let pod = serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "web", "labels": {"app": "web"}},
    ///     "spec": {"containers": []}
    /// })).unwrap();
    /// let pod = PodInfo::new(Arc::new(pod)).unwrap();
    /// assert_eq!(pod.label("app"), Some("web"));
    /// assert_eq!(pod.label("tier"), None);
    /// ```
    pub fn label(&self, key: &str) -> Option<&str> {
        self.given
            .metadata
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    /// The value of the pod's annotation `key` (`metadata.annotations`), if it has that
    /// annotation: how a plugin reads per-pod settings that are not labels.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use kubesched_framework::PodInfo;
    /// let pod = serde_json::from_value(serde_json::json!({
    ///     "metadata": {"name": "web", "annotations": {"example.com/disk": "ssd"}},
    ///     "spec": {"containers": []}
    /// })).unwrap();
    /// let pod = PodInfo::new(Arc::new(pod)).unwrap();
    /// assert_eq!(pod.annotation("example.com/disk"), Some("ssd"));
    /// assert_eq!(pod.annotation("example.com/other"), None);
    /// ```
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.given
            .metadata
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    /// The pod's UID, or its key when it has none (scenario files rarely carry UIDs).
    pub fn uid(&self) -> &str {
        self.given.metadata.uid.as_deref().unwrap_or(&self.key)
    }

    /// `spec.priority`, 0 when unset (as PrioritySort reads it).
    pub fn priority(&self) -> i32 {
        self.given_spec().priority.unwrap_or(0)
    }

    /// `spec.schedulerName`, `default-scheduler` when empty.
    pub fn scheduler_name(&self) -> &str {
        match self.given_spec().scheduler_name.as_deref() {
            Some(s) if !s.is_empty() => s,
            _ => DEFAULT_SCHEDULER_NAME,
        }
    }

    /// `spec.schedulingGroup.podGroupName`: the v1.36 PodGroup the pod belongs to, in
    /// its namespace.
    pub fn pod_group_name(&self) -> Option<&str> {
        self.given_spec()
            .scheduling_group
            .as_ref()
            .and_then(|g| g.pod_group_name.as_deref())
    }

    /// `spec.nodeName`, when the pod is bound (or assumed).
    pub fn node_name(&self) -> Option<&str> {
        match &self.assumed_node {
            Some(node) => Some(node),
            None => self
                .given_spec()
                .node_name
                .as_deref()
                .filter(|n| !n.is_empty()),
        }
    }

    /// The pod's resource requests as NodeInfo accounts them.
    pub fn requests(&self) -> &Resource {
        &self.resources.requests
    }

    /// The pod's requests with kube-scheduler's non-zero defaults, for scoring.
    pub fn resources(&self) -> &PodResources {
        &self.resources
    }

    /// The host ports the pod uses.
    pub fn host_ports(&self) -> &[HostPort] {
        &self.host_ports
    }

    /// `true` when the pod has pod affinity or anti-affinity terms.
    pub fn has_affinity(&self) -> bool {
        self.given_spec()
            .affinity
            .as_ref()
            .is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some())
    }

    /// `true` when the pod mounts a PersistentVolumeClaim, directly or through a
    /// generic ephemeral volume.
    pub fn has_claim_volumes(&self) -> bool {
        self.given_spec()
            .volumes
            .iter()
            .flatten()
            .any(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
    }

    /// The pod's required pod affinity terms
    /// (`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution`).
    pub fn required_affinity_terms(&self) -> Option<&Vec<PodAffinityTerm>> {
        self.given_spec()
            .affinity
            .as_ref()?
            .pod_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()
    }

    /// The pod's required pod anti-affinity terms
    /// (`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`).
    pub fn required_anti_affinity_terms(&self) -> Option<&Vec<PodAffinityTerm>> {
        self.given_spec()
            .affinity
            .as_ref()?
            .pod_anti_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()
    }

    /// `true` when the pod has required pod affinity terms.
    pub fn has_required_affinity(&self) -> bool {
        self.required_affinity_terms()
            .is_some_and(|terms| !terms.is_empty())
    }

    /// `true` when the pod has required pod anti-affinity terms.
    pub fn has_required_anti_affinity(&self) -> bool {
        self.required_anti_affinity_terms()
            .is_some_and(|terms| !terms.is_empty())
    }

    /// A copy of this pod bound to `node` (what the scheduler "assumes"). The pod
    /// object itself is copied only when it is read whole ([`PodInfo::pod`],
    /// [`PodInfo::spec`]).
    pub fn bound_to(&self, node: &str) -> PodInfo {
        PodInfo {
            given: self.given.clone(),
            assumed_node: Some(node.into()),
            assumed_pod: OnceLock::new(),
            key: self.key.clone(),
            resources: self.resources.clone(),
            host_ports: self.host_ports.clone(),
        }
    }
}

fn spec_or_empty(pod: &Pod) -> &PodSpec {
    static EMPTY: OnceLock<PodSpec> = OnceLock::new();
    pod.spec
        .as_ref()
        .unwrap_or_else(|| EMPTY.get_or_init(PodSpec::default))
}

/// The host ports of a pod's containers and restartable init containers (sidecars),
/// as kube-scheduler's `GetHostPorts` collects them; regular init containers' ports do
/// not count.
fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers
        .iter()
        .chain(sidecars)
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.unwrap_or(0);
            (port > 0).then(|| HostPort::new(p.host_ip.as_deref(), p.protocol.as_deref(), port))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(metadata: serde_json::Value) -> PodInfo {
        let pod: Pod = serde_json::from_value(
            serde_json::json!({"metadata": metadata, "spec": {"containers": []}}),
        )
        .unwrap();
        PodInfo::new(Arc::new(pod)).unwrap()
    }

    #[test]
    fn a_bound_copy_reads_as_the_pod_on_its_node_and_leaves_the_original_alone() {
        let original = pod(serde_json::json!({"name": "p", "labels": {"app": "web"}}));
        let bound = original.bound_to("node-a");
        assert_eq!(bound.node_name(), Some("node-a"));
        assert_eq!(bound.key(), "default/p");
        assert_eq!(bound.label("app"), Some("web"));
        // The cheap accessors read the pod as given: no copy is made for them.
        assert_eq!(bound.metadata().name.as_deref(), Some("p"));
        assert!(bound.assumed_pod.get().is_none());
        assert_eq!(bound.spec().node_name.as_deref(), Some("node-a"));
        assert_eq!(
            bound.pod().spec.as_ref().unwrap().node_name.as_deref(),
            Some("node-a")
        );
        assert!(Arc::ptr_eq(bound.pod_arc(), bound.pod_arc()));
        let moved = bound.bound_to("node-b");
        assert_eq!(moved.node_name(), Some("node-b"));
        assert_eq!(moved.spec().node_name.as_deref(), Some("node-b"));
        assert_eq!(original.node_name(), None);
        assert_eq!(original.spec().node_name, None);
    }

    #[test]
    fn labels_and_annotations_are_read_by_key_and_kept_apart() {
        let p = pod(serde_json::json!({
            "name": "p",
            "labels": {"app": "web", "empty": ""},
            "annotations": {"app": "from-annotation"}
        }));
        assert_eq!(p.label("app"), Some("web"));
        assert_eq!(p.label("empty"), Some(""));
        assert_eq!(p.annotation("app"), Some("from-annotation"));
        assert_eq!(p.annotation("empty"), None);
        let bare = pod(serde_json::json!({"name": "bare"}));
        assert_eq!(bare.label("app"), None);
        assert_eq!(bare.annotation("app"), None);
    }
}
