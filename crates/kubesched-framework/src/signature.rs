//! Pod signatures, as kube-scheduler's OpportunisticBatching computes them
//! (`SignPod`, kube-scheduler v1.35): two pods with the same signature get the same
//! Filter verdicts and the same scores on the same nodes in the same state, so a pod
//! that follows one of the same signature can reuse the previous cycle's sorted scored
//! nodes ([`crate::batch`]).
//!
//! Each PreFilter, Filter, PreScore and Score plugin of a profile signs the pod
//! ([`Plugin::sign_pod`]): it returns the fragments of the pod its verdicts and scores
//! read, or a non-success status when it cannot say (a pod with topology spread
//! constraints, say). The framework's signature is the scheduler name plus every
//! fragment, keyed by fragment name; one plugin that cannot sign makes the pod
//! unbatchable. A plugin that does not implement [`Plugin::sign_pod`] cannot sign
//! anything: an embedder's plugin opts in by implementing it.
//!
//! The fragment names ([`signers`]) and the common signers are kube-scheduler's
//! (`k8s.io/kube-scheduler/framework/signers.go`).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use crate::cycle_state::CycleState;
use crate::framework::Framework;
use crate::observer::RecordPluginMetrics;
use crate::plugin::Plugin;
use crate::pod_info::PodInfo;
use crate::status::{Code, Status};

/// kube-scheduler's signer names: the keys of a pod signature's fragments.
pub mod signers {
    /// The pod's ResourceClaims (DynamicResources).
    pub const DYNAMIC_RESOURCES: &str = "v1.Pod.Spec.DynamicResources";
    /// The canonical names of the pod's images (ImageLocality).
    pub const IMAGE_NAMES: &str = "v1.Pod.Spec.CanonicalImageNames()";
    /// The node features the pod needs (NodeDeclaredFeatures).
    pub const FEATURES: &str = "v1.Pod.Spec.RequiredNodeFeatures()";
    /// The pod's labels.
    pub const LABELS: &str = "v1.Pod.Labels";
    /// `spec.nodeName` (NodeName).
    pub const NODE_NAME: &str = "v1.Pod.Spec.NodeName";
    /// `spec.affinity.nodeAffinity` (NodeAffinity).
    pub const NODE_AFFINITY: &str = "v1.Pod.Spec.Affinity.NodeAffinity";
    /// `spec.nodeSelector` (NodeAffinity).
    pub const NODE_SELECTOR: &str = "v1.Pod.Spec.Affinity.NodeSelector";
    /// `spec.affinity.podAffinity` and `podAntiAffinity` (InterPodAffinity).
    pub const INTER_POD_AFFINITY: &str = "v1.Pod.Spec.Affinity.InterPodAffinity";
    /// The pod's host ports (NodePorts).
    pub const HOST_PORTS: &str = "v1.Pod.Spec.HostPorts()";
    /// The pod's requests with overheads (NodeResourcesFit, BalancedAllocation).
    pub const RESOURCES: &str = "v1.Pod.Spec.ContainerResourcesAndOverheads()";
    /// `spec.schedulerName`: every signature has it.
    pub const SCHEDULER_NAME: &str = "v1.Pod.Spec.SchedulerName";
    /// `spec.tolerations` (TaintToleration).
    pub const TOLERATIONS: &str = "v1.Pod.Spec.Tolerations";
    /// `spec.topologySpreadConstraints`.
    pub const POD_TOPOLOGY_SPREAD: &str = "v1.Pod.Spec.PodTopologySpread";
    /// The pod's volumes other than ConfigMaps and Secrets (the volume plugins).
    pub const VOLUMES: &str = "v1.Pod.Spec.Volumes.NonSyntheticSources()";
}

/// One part of a pod's signature: a name from [`signers`] (or the embedder's own) and
/// a value that is equal for two pods exactly when the plugin treats them alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignFragment {
    /// The fragment's name. Plugins that read the same part of the pod use the same
    /// name (NodeResourcesFit and BalancedAllocation both sign [`signers::RESOURCES`]).
    pub key: &'static str,
    /// The value, canonically encoded (JSON for API objects).
    pub value: String,
}

impl SignFragment {
    /// A fragment whose value is `value` encoded as JSON.
    pub fn json<T: serde::Serialize + ?Sized>(key: &'static str, value: &T) -> SignFragment {
        SignFragment {
            key,
            // Serialising a k8s-openapi object or a plain value cannot fail.
            value: serde_json::to_string(value).unwrap_or_default(),
        }
    }
}

/// A pod's signature: the scheduler name and every fragment the profile's plugins
/// gave, by name. Equal signatures mean equal feasibility and scores.
///
/// The text's hash is computed once, so that the maps a signature is looked up in
/// every cycle hash eight bytes rather than the whole text.
#[derive(Clone)]
pub struct PodSignature {
    text: Arc<str>,
    hash: u64,
}

impl PartialEq for PodSignature {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && (Arc::ptr_eq(&self.text, &other.text) || self.text == other.text)
    }
}

impl Eq for PodSignature {}

impl std::hash::Hash for PodSignature {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PodSignature {
    /// The signature from its fragments (a later fragment of the same name replaces an
    /// earlier one, as in kube-scheduler's map).
    pub fn from_fragments(fragments: impl IntoIterator<Item = SignFragment>) -> PodSignature {
        let mut fragments: Vec<SignFragment> = fragments.into_iter().collect();
        // A stable sort keeps equal names in the order given, so the last of each
        // run is the one that stays.
        fragments.sort_by_key(|f| f.key);
        let mut kept: Vec<&SignFragment> = Vec::with_capacity(fragments.len());
        for f in &fragments {
            match kept.last_mut() {
                Some(last) if last.key == f.key => *last = f,
                _ => kept.push(f),
            }
        }
        let size = kept
            .iter()
            .map(|f| f.key.len() + f.value.len() + 4)
            .sum::<usize>();
        let mut text = String::with_capacity(size + 2);
        text.push('{');
        for (i, f) in kept.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            push_json_string(&mut text, f.key);
            text.push(':');
            text.push_str(&f.value);
        }
        text.push('}');
        let hash = std::hash::BuildHasher::hash_one(
            &std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default(),
            text.as_str(),
        );
        PodSignature {
            text: text.into(),
            hash,
        }
    }

    /// The signature as text (a JSON object).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for PodSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Appends `text` as a JSON string; signer names need no escaping, an embedder's may.
fn push_json_string(out: &mut String, text: &str) {
    if text
        .chars()
        .all(|c| c != '"' && c != '\\' && !c.is_control())
    {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(text).unwrap_or_default());
    }
}

/// The fragment of a plugin whose verdicts read the pod's host ports: the sorted,
/// distinct non-zero host ports of its containers and init containers (kube-scheduler's
/// `HostPortsSigner`).
pub fn host_ports_fragment(pod: &PodInfo) -> SignFragment {
    let spec = pod.spec();
    let mut ports: Vec<i32> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.ports.iter().flatten())
        .map(|p| p.host_port.unwrap_or(0))
        .filter(|&p| p != 0)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    SignFragment::json(signers::HOST_PORTS, &ports)
}

/// The pod's effective requests, overheads included (kube-scheduler's
/// `computePodResourceRequest`, which NodeResourcesFit and BalancedAllocation sign).
pub fn resources_fragment(pod: &PodInfo) -> SignFragment {
    let requests = pod.requests();
    let mut value = integers_value([
        requests.milli_cpu,
        requests.memory,
        requests.ephemeral_storage,
        requests.allowed_pod_number,
    ]);
    for (name, amount) in &requests.scalar_resources {
        value.push(';');
        value.push_str(name);
        value.push('=');
        push_integer(&mut value, *amount);
    }
    SignFragment {
        key: signers::RESOURCES,
        value,
    }
}

/// Integers as a fragment's value, comma-separated (pods are signed in every cycle:
/// this writes them with `Display` alone, not through `Debug`'s builders).
pub fn integers_value(values: impl IntoIterator<Item = i64>) -> String {
    let mut value = String::with_capacity(48);
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            value.push(',');
        }
        push_integer(&mut value, v);
    }
    value
}

/// Appends `value` in decimal.
fn push_integer(out: &mut String, value: i64) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = write!(out, "{value}");
}

/// `spec.affinity.nodeAffinity` (kube-scheduler's `NodeAffinitySigner`).
pub fn node_affinity_fragment(pod: &PodInfo) -> SignFragment {
    let affinity = pod
        .spec()
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref());
    SignFragment::json(signers::NODE_AFFINITY, &affinity)
}

/// The pod's tolerations sorted by key, then value (kube-scheduler's
/// `TolerationsSigner`).
pub fn tolerations_fragment(pod: &PodInfo) -> SignFragment {
    let mut tolerations: Vec<_> = pod.spec().tolerations.iter().flatten().collect();
    tolerations.sort_by(|a, b| (&a.key, &a.value).cmp(&(&b.key, &b.value)));
    SignFragment::json(signers::TOLERATIONS, &tolerations)
}

/// The sources of the pod's volumes other than ConfigMaps and Secrets, which are
/// specific to each pod and never matter to scheduling (kube-scheduler's
/// `VolumesSigner`).
pub fn volumes_fragment(pod: &PodInfo) -> SignFragment {
    let sources: Vec<serde_json::Value> = pod
        .spec()
        .volumes
        .iter()
        .flatten()
        .filter(|v| v.config_map.is_none() && v.secret.is_none())
        .map(|v| {
            // The source is the volume without its name.
            let mut value = serde_json::to_value(v).unwrap_or_default();
            if let Some(o) = value.as_object_mut() {
                o.remove("name");
            }
            value
        })
        .collect();
    SignFragment::json(signers::VOLUMES, &sources)
}

/// The status of a plugin that cannot sign a pod: it makes the pod unbatchable.
pub fn unsignable(message: impl Into<String>) -> Status {
    Status::new(Code::Unschedulable, message.into())
}

impl Framework {
    /// The pod's signature (kube-scheduler's `SignPod`), or `None` when one of the
    /// profile's PreFilter, Filter, PreScore or Score plugins cannot sign it.
    ///
    /// With an observer, each plugin's call is reported at the extension point `Sign`,
    /// and in a sampled cycle the whole point too (always `Success`, as kube-scheduler
    /// records it).
    pub fn sign_pod(&self, state: &CycleState, pod: &PodInfo) -> Option<PodSignature> {
        let observer = self.observer();
        let sampled = observer.is_some() && state.read::<RecordPluginMetrics>().is_some();
        let start = sampled.then(Instant::now);
        let signature = self.sign_with(pod, |plugin, f| match observer {
            Some(o) => {
                let t = Instant::now();
                let r = f();
                let code = r.as_ref().err().map_or(Code::Success, Status::code);
                o.observe(plugin, "Sign", code, t.elapsed());
                r
            }
            None => f(),
        });
        if let (Some(o), Some(start)) = (observer, start) {
            o.observe_extension_point(self.profile_name(), "Sign", Code::Success, start.elapsed());
        }
        signature
    }

    /// The pod's signature for exact incremental scheduling
    /// ([`crate::Scheduler::set_incremental`]), from each plugin's
    /// [`Plugin::sign_pod_exact`]; `None` when one cannot sign it. Not observed.
    pub fn sign_pod_exact(&self, pod: &PodInfo) -> Option<PodSignature> {
        self.sign_with_exact(pod, true, |_, f| f())
    }

    /// One plugin's part of `pod`'s signature for exact incremental scheduling (its
    /// [`Plugin::sign_pod_exact`] alone), and whether its answers read the pods on a
    /// node ([`Plugin::reads_node_pods`]); `None` when there is no such plugin or it
    /// cannot sign the pod.
    pub(crate) fn plugin_part(&self, name: &str, pod: &PodInfo) -> Option<(PodSignature, bool)> {
        let plugin = self.plugin(name)?;
        let fragments = plugin.sign_pod_exact(pod).ok()?;
        Some((
            PodSignature::from_fragments(fragments),
            plugin.reads_node_pods(pod),
        ))
    }

    fn sign_with(
        &self,
        pod: &PodInfo,
        call: impl FnMut(
            &str,
            &dyn Fn() -> Result<Vec<SignFragment>, Status>,
        ) -> Result<Vec<SignFragment>, Status>,
    ) -> Option<PodSignature> {
        self.sign_with_exact(pod, false, call)
    }

    fn sign_with_exact(
        &self,
        pod: &PodInfo,
        exact: bool,
        mut call: impl FnMut(
            &str,
            &dyn Fn() -> Result<Vec<SignFragment>, Status>,
        ) -> Result<Vec<SignFragment>, Status>,
    ) -> Option<PodSignature> {
        let mut fragments = vec![SignFragment::json(
            signers::SCHEDULER_NAME,
            pod.scheduler_name(),
        )];
        for plugin in self.signers() {
            let plugin: &Arc<dyn Plugin> = plugin;
            let sign = || {
                if exact {
                    plugin.sign_pod_exact(pod)
                } else {
                    plugin.sign_pod(pod)
                }
            };
            match call(plugin.name(), &sign) {
                Ok(f) => fragments.extend(f),
                Err(_) => return None,
            }
        }
        Some(PodSignature::from_fragments(fragments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_written_as_display_writes_them() {
        let values = [0, 7, -7, 10, 1 << 40, i64::MIN, i64::MAX, -100];
        let expected: Vec<String> = values.iter().map(i64::to_string).collect();
        assert_eq!(integers_value(values), expected.join(","));
        assert_eq!(integers_value([]), "");
    }

    fn fragment(key: &'static str, value: &str) -> SignFragment {
        SignFragment {
            key,
            value: value.to_string(),
        }
    }

    #[test]
    fn fragments_are_ordered_by_name_and_a_later_one_replaces_an_earlier() {
        let signature = PodSignature::from_fragments([
            fragment("b", "1"),
            fragment("a", "\"x\""),
            fragment("b", "2"),
            fragment("c\"d", "[]"),
        ]);
        assert_eq!(signature.as_str(), r#"{"a":"x","b":2,"c\"d":[]}"#);
        let text: serde_json::Value = serde_json::from_str(signature.as_str()).unwrap();
        assert_eq!(text["b"], 2);
        assert_eq!(PodSignature::from_fragments([]).as_str(), "{}");
    }
}
