//! The replayed cluster's objects as they stand, in the order they first came (the node
//! order, and the pods' queue order), and how a trace's objects are read into it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kubesched_sim::scenario::{self, ConfigDocument, OtherObject, Scenario};
use serde_json::Value;

/// A pod of the replay and what the replay knows about it.
#[derive(Clone, Debug)]
pub(crate) struct PodEntry {
    /// The object; bound when `spec.nodeName` is set.
    pub pod: Arc<Pod>,
    /// When it arrived (seconds).
    pub arrived: f64,
    /// How long it runs once bound, if it ends on its own.
    pub duration: Option<f64>,
    /// Unique per apply of a new pod, so that a finish planned for a pod that was
    /// deleted and created again under its name finds nothing.
    pub serial: u64,
}

impl PodEntry {
    pub fn node(&self) -> Option<&str> {
        self.pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty())
    }
}

/// One object decoded from a trace line.
pub(crate) enum Decoded {
    Node(Arc<Node>),
    Pod(Arc<Pod>),
    Other(OtherObject),
    /// A Pod in phase Succeeded or Failed (which the loader leaves out): it finished.
    Finished {
        pod: String,
    },
}

/// The cluster: nodes and pods in arrival order, the other objects the plugins read, and
/// the configuration of the files.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cluster {
    nodes: BTreeMap<u64, Arc<Node>>,
    node_at: HashMap<String, u64>,
    pods: BTreeMap<u64, PodEntry>,
    pod_at: HashMap<String, u64>,
    /// The bound pods of each node (by node name), in arrival order.
    on_node: HashMap<String, BTreeSet<u64>>,
    pub objects: Vec<OtherObject>,
    pub config: Option<ConfigDocument>,
    /// The scenario files' storage and resource.k8s.io objects, as they were (a trace
    /// does not change them).
    fixed: Scenario,
    next: u64,
    /// How many pods have no node.
    pending: usize,
}

pub(crate) fn pod_key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        pod.metadata.name.as_deref().unwrap_or("")
    )
}

pub(crate) fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or("")
}

impl Cluster {
    /// The scenario's objects, its pods arrived at time 0.
    pub fn from_scenario(scenario: &Scenario) -> Cluster {
        let mut cluster = Cluster {
            objects: scenario.objects.clone(),
            config: scenario.config.clone(),
            fixed: Scenario {
                storage: scenario.storage.clone(),
                dra: scenario.dra.clone(),
                ..Scenario::default()
            },
            ..Cluster::default()
        };
        for node in &scenario.nodes {
            cluster.put_node(node.clone());
        }
        for pod in &scenario.pods {
            cluster.put_pod(pod.clone(), 0.0, None);
        }
        cluster
    }

    fn seq(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// The scenario of the cluster as it stands: what `simulate` reads.
    pub fn to_scenario(&self) -> Scenario {
        Scenario {
            nodes: self.nodes.values().cloned().collect(),
            pods: self.pods.values().map(|e| e.pod.clone()).collect(),
            config: self.config.clone(),
            objects: self.objects.clone(),
            storage: self.fixed.storage.clone(),
            dra: self.fixed.dra.clone(),
            ..Scenario::default()
        }
    }

    /// The cluster as scenario documents (JSON, one per `---`), for `kubesched
    /// simulate` or kube-scheduler's own code to read.
    pub fn to_documents(&self) -> String {
        let mut out = String::new();
        let mut doc = |v: &Value| {
            out.push_str("---\n");
            out.push_str(&v.to_string());
            out.push('\n');
        };
        if let Some(c) = &self.config {
            doc(&c.value);
        }
        for n in self.nodes.values() {
            doc(&with_kind(serde_json::to_value(&**n), "Node"));
        }
        for o in &self.objects {
            doc(&o.value);
        }
        for e in self.pods.values() {
            doc(&with_kind(serde_json::to_value(&*e.pod), "Pod"));
        }
        out
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Arc<Node>> {
        self.nodes.values()
    }

    pub fn node(&self, name: &str) -> Option<&Arc<Node>> {
        self.node_at.get(name).and_then(|s| self.nodes.get(s))
    }

    /// Adds or replaces a node (a replaced node keeps its place); returns the old one.
    pub fn put_node(&mut self, node: Arc<Node>) -> Option<Arc<Node>> {
        let name = node_name(&node).to_string();
        match self.node_at.get(&name) {
            Some(&s) => self.nodes.insert(s, node),
            None => {
                let s = self.seq();
                self.node_at.insert(name, s);
                self.nodes.insert(s, node);
                None
            }
        }
    }

    pub fn remove_node(&mut self, name: &str) -> Option<Arc<Node>> {
        let s = self.node_at.remove(name)?;
        self.nodes.remove(&s)
    }

    pub fn pods(&self) -> impl Iterator<Item = &PodEntry> {
        self.pods.values()
    }

    /// How many pods have no node (pending, for a scheduler of the replay or not).
    pub fn pending(&self) -> usize {
        self.pending
    }

    pub fn pod(&self, key: &str) -> Option<&PodEntry> {
        self.pod_at.get(key).and_then(|s| self.pods.get(s))
    }

    /// Adds a pod, or replaces one (keeping its place, arrival and, when the new
    /// object has none, the replay's binding); returns the entry as it was.
    pub fn put_pod(&mut self, pod: Arc<Pod>, now: f64, duration: Option<f64>) -> Option<PodEntry> {
        let key = pod_key(&pod);
        match self.pod_at.get(&key) {
            Some(&s) => {
                let old = self.pods.get(&s).cloned()?;
                // The replay's binding stands: a nodeName in the new object is another
                // scheduler's decision (a recorded binding), kept only if the replay
                // bound the pod there too.
                let mut p = (*pod).clone();
                if let Some(spec) = p.spec.as_mut() {
                    spec.node_name = old.node().map(str::to_string);
                }
                let pod = Arc::new(p);
                let entry = PodEntry {
                    pod,
                    arrived: old.arrived,
                    duration: duration.or(old.duration),
                    serial: old.serial,
                };
                self.pods.insert(s, entry);
                Some(old)
            }
            None => {
                let s = self.seq();
                self.pod_at.insert(key, s);
                if let Some(node) = pod
                    .spec
                    .as_ref()
                    .and_then(|p| p.node_name.as_deref())
                    .filter(|n| !n.is_empty())
                {
                    self.on_node.entry(node.to_string()).or_default().insert(s);
                } else {
                    self.pending += 1;
                }
                let duration = duration.or_else(|| annotated_duration(&pod));
                self.pods.insert(
                    s,
                    PodEntry {
                        pod,
                        arrived: now,
                        duration,
                        serial: s,
                    },
                );
                None
            }
        }
    }

    /// Binds a pending pod to `node`; returns the bound object.
    pub fn bind(&mut self, key: &str, node: &str) -> Option<Arc<Pod>> {
        let s = *self.pod_at.get(key)?;
        let entry = self.pods.get_mut(&s)?;
        if entry.node().is_none() {
            self.pending -= 1;
        }
        let mut p = (*entry.pod).clone();
        p.spec.get_or_insert_with(Default::default).node_name = Some(node.to_string());
        entry.pod = Arc::new(p);
        self.on_node.entry(node.to_string()).or_default().insert(s);
        Some(entry.pod.clone())
    }

    pub fn remove_pod(&mut self, key: &str) -> Option<PodEntry> {
        let s = self.pod_at.remove(key)?;
        let entry = self.pods.remove(&s)?;
        match entry.node() {
            Some(node) => {
                if let Some(on) = self.on_node.get_mut(node) {
                    on.remove(&s);
                }
            }
            None => self.pending -= 1,
        }
        Some(entry)
    }

    /// The keys of the pods bound to `node`, in arrival order.
    pub fn pods_on(&self, node: &str) -> Vec<String> {
        self.on_node
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|s| self.pods.get(s))
            .map(|e| pod_key(&e.pod))
            .collect()
    }

    /// Adds or replaces another object (by apiVersion, kind, namespace and name); the
    /// object it replaced, if any.
    pub fn put_object(&mut self, object: OtherObject) -> Option<OtherObject> {
        match self.objects.iter_mut().find(|o| same_object(o, &object)) {
            Some(o) => Some(std::mem::replace(o, object)),
            None => {
                self.objects.push(object);
                None
            }
        }
    }

    pub fn remove_object(
        &mut self,
        api_version: Option<&str>,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> bool {
        let before = self.objects.len();
        self.objects.retain(|o| {
            !(o.kind == kind
                && o.name == name
                && o.namespace.as_deref() == namespace
                && api_version.is_none_or(|v| o.api_version == v))
        });
        self.objects.len() != before
    }
}

fn same_object(a: &OtherObject, b: &OtherObject) -> bool {
    a.api_version == b.api_version
        && a.kind == b.kind
        && a.namespace == b.namespace
        && a.name == b.name
}

fn with_kind(value: Result<Value, serde_json::Error>, kind: &str) -> Value {
    let mut value = value.unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), Value::String("v1".into()));
        map.insert("kind".into(), Value::String(kind.into()));
    }
    value
}

/// The annotation that gives a pod's run time once bound.
pub const DURATION_ANNOTATION: &str = "kubesched.io/duration";

fn annotated_duration(pod: &Pod) -> Option<f64> {
    let text = pod
        .metadata
        .annotations
        .as_ref()?
        .get(DURATION_ANNOTATION)?;
    parse_duration(text).ok()
}

/// A duration as Go writes one (`90s`, `1h30m`, `1.5h`, `250ms`) or plain seconds
/// (`90`), in seconds.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let bad = || format!("{text:?}: not a duration (e.g. 90s, 1h30m, 250ms, or seconds)");
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then_some(seconds)
            .ok_or_else(bad);
    }
    let mut total = 0.0;
    let mut rest = text;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// Decodes one object of a trace line through the scenario loader (strictly, with the
/// loader's defaults), named `source` in messages.
pub(crate) fn decode(object: &Value, source: &str) -> Result<Decoded, String> {
    let loaded = scenario::load_value(source, object.clone()).map_err(|e| e.to_string())?;
    if let Some(node) = loaded.nodes.into_iter().next() {
        return Ok(Decoded::Node(node));
    }
    if let Some(pod) = loaded.pods.into_iter().next() {
        return Ok(Decoded::Pod(pod));
    }
    if loaded.config.is_some() {
        return Err(format!(
            "{source}: a KubeSchedulerConfiguration comes from --config or the scenario files, not from the trace"
        ));
    }
    if let Some(o) = loaded.objects.into_iter().next() {
        return Ok(Decoded::Other(o));
    }
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("?");
    // The loader leaves out finished pods: a Pod that decodes to nothing finished.
    if kind == "Pod" {
        let text = |path: &str| object.pointer(path).and_then(Value::as_str);
        return Ok(Decoded::Finished {
            pod: format!(
                "{}/{}",
                text("/metadata/namespace")
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default"),
                text("/metadata/name").unwrap_or("")
            ),
        });
    }
    Err(format!(
        "{source}: {kind}: replay does not apply storage or resource.k8s.io objects from a trace yet; give them in the scenario files"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delete_with_an_api_version_removes_that_kind_only() {
        let group = |api_version: &str| OtherObject {
            api_version: api_version.into(),
            kind: "PodGroup".into(),
            namespace: Some("default".into()),
            name: "train".into(),
            value: Value::Null,
            source: "trace".into(),
        };
        let mut state = Cluster::default();
        state.put_object(group("scheduling.k8s.io/v1alpha2"));
        state.put_object(group("scheduling.x-k8s.io/v1alpha1"));
        let (upstream, sigs) = (
            Some("scheduling.k8s.io/v1alpha2"),
            Some("scheduling.x-k8s.io/v1alpha1"),
        );
        assert!(state.remove_object(sigs, "PodGroup", Some("default"), "train"));
        assert!(!state.remove_object(sigs, "PodGroup", Some("default"), "train"));
        assert!(state.remove_object(upstream, "PodGroup", Some("default"), "train"));
        state.put_object(group("scheduling.k8s.io/v1alpha2"));
        state.put_object(group("scheduling.x-k8s.io/v1alpha1"));
        assert!(
            state.remove_object(None, "PodGroup", Some("default"), "train"),
            "any API"
        );
        assert!(!state.remove_object(upstream, "PodGroup", Some("default"), "train"));
    }

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(parse_duration("90"), Ok(90.0));
        assert_eq!(parse_duration("90s"), Ok(90.0));
        assert_eq!(parse_duration("1h30m"), Ok(5400.0));
        assert_eq!(parse_duration("1.5h"), Ok(5400.0));
        assert_eq!(parse_duration("250ms"), Ok(0.25));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5 minutes").is_err());
        assert!(parse_duration("-3").is_err());
    }
}
