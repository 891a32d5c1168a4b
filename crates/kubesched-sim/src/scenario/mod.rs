//! Scenario loading: multi-document Kubernetes YAML (or JSON) files into one [`Scenario`].
//!
//! A scenario is the objects a user would get from `kubectl get nodes,pods -o yaml` plus,
//! optionally, one `KubeSchedulerConfiguration` document (see the conformance suite's
//! FORMAT.md). [`load`] reads one or more [`Source`]s, in the order given, into a single
//! [`Scenario`]:
//!
//! * every document is parsed as YAML into a [`serde_json::Value`]; empty documents are
//!   skipped, and a `List` (or `NodeList`, `PodList`, ...) is expanded into its `items`;
//! * `v1` `Node` and `Pod` documents are decoded into the k8s-openapi types **strictly**: a
//!   field the type does not have is an error that suggests the closest known field, and
//!   every resource quantity is checked with `Quantity::parse`. Quantities written as
//!   YAML numbers (`cpu: 2`, `memory: 2e9`) are accepted and stored as strings
//!   (`"2"`, `"2000000000"`), as the API server's JSON decoding accepts numbers;
//! * pods get the API server's defaults for `metadata.namespace` (`default`) and
//!   `spec.schedulerName` (`default-scheduler`); pods in phase `Succeeded` or `Failed`
//!   are dropped, as kube-scheduler's pod informer drops them;
//! * the `kubescheduler.config.k8s.io/*` `KubeSchedulerConfiguration` is kept as raw JSON
//!   for the config crate, which does its own strict decoding;
//! * the storage kinds (`v1` PersistentVolume and PersistentVolumeClaim, `storage.k8s.io/v1`
//!   StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment) are decoded
//!   strictly and defaulted into [`Scenario::storage`];
//! * scheduler-plugins' `scheduling.x-k8s.io/v1alpha1` PodGroup and ElasticQuota are
//!   decoded strictly (with kubesched-plugins-sigs' types) and checked as their CRDs
//!   check them (and an ElasticQuota's `min` not above its `max`), then kept as
//!   [`OtherObject`]s for the Coscheduling and CapacityScheduling plugins;
//! * every other kind is kept as an [`OtherObject`].
//!
//! Every error is one line naming the file, the object (`Pod default/web-1`, `Node n1`)
//! and the field, e.g.
//! `cases/x.yaml: Pod default/p: spec.schdulerName: unknown field, did you mean schedulerName?`.
//!
//! # How unknown fields are found
//!
//! k8s-openapi's `Deserialize` impls ignore unknown fields, but each struct announces its
//! complete field list to the deserializer through `Deserializer::deserialize_struct(name,
//! FIELDS, visitor)`, and each quantity through `deserialize_newtype_struct("Quantity", ..)`.
//! The loader decodes through its own small deserializer over the parsed JSON value that
//! uses exactly these two hooks: a map key missing from `FIELDS` is reported (with the
//! closest entry of `FIELDS` as the suggestion), and a quantity is normalised (numbers to
//! strings) and validated where it is decoded. The vocabulary therefore always matches
//! the k8s-openapi version in use, at every level, with no hand-kept field lists and no
//! extra crate features. `serde_path_to_error` wraps that deserializer to name the path.
//!
//! # Layout
//!
//! * `parse`: text to one [`serde_json::Value`] per YAML document;
//! * `decode`: strict decoding of a Node or Pod value into its k8s-openapi type;
//! * `defaults`: the API server's defaulting of what the scheduler reads;
//! * `storage`: the storage kinds (PersistentVolume, claims, StorageClass, CSI objects);
//! * `validate`: checks of the type fields and the kinds the loader knows;
//! * `error`: [`ScenarioError`];
//! * this module: the public types and [`load`], which expands lists and routes each
//!   object by kind.

mod decode;
mod defaults;
mod dra;
mod error;
mod parse;
mod pod_groups;
mod storage;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Map, Value};

pub use dra::DraObjects;
pub use error::ScenarioError;
pub use storage::StorageDocuments;

pub(crate) use decode::render_path;

use kubesched_config::echo;

use decode::decode;
use parse::{BadNumber, Segment, parse_documents, render};
use validate::{
    describe, is_known_kind, known_kind_name_problem, namespace_problem, near_miss_kind, raw_str,
    subdomain_name_problem, type_field,
};

/// One input file of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The file path as the user gave it, or `"<stdin>"`; used in every message.
    pub name: String,
    /// The whole text of the file.
    pub text: String,
}

/// Everything a scenario holds, read from one or more files.
#[derive(Clone, Debug, Default)]
pub struct Scenario {
    /// The nodes, in file order: this is the *node order*.
    pub nodes: Vec<Arc<Node>>,
    /// The pods, in file order, bound (`spec.nodeName` set) and pending alike; pods in phase
    /// `Succeeded` or `Failed` are dropped. Every pod has `metadata.namespace` and
    /// `spec.schedulerName` set (defaulted as the API server does) and a `spec`.
    pub pods: Vec<Arc<Pod>>,
    /// The `KubeSchedulerConfiguration` document, if there is one (there is at most one).
    pub config: Option<ConfigDocument>,
    /// Every object of any other kind (Service, ReplicaSet, PodDisruptionBudget,
    /// PriorityClass, Namespace, ...), in file order.
    pub objects: Vec<OtherObject>,
    /// The storage objects (PersistentVolumes, claims, StorageClasses, CSI objects),
    /// decoded and defaulted (see `storage`).
    pub storage: StorageDocuments,
    /// The `resource.k8s.io/v1` objects (DeviceClass, ResourceSlice, ResourceClaim,
    /// ResourceClaimTemplate), defaulted as the API server does.
    pub dra: DraObjects,
    /// Non-fatal notes for stderr, each naming the file, the object and the field.
    pub warnings: Vec<String>,
}

impl Scenario {
    /// Reads the files at `paths`, in the order given, into one scenario: [`load`] for
    /// library users who have paths rather than texts. Each file is named in messages
    /// as the path is written (`"-"` is not standard input here), and a file that
    /// cannot be read is a one-line [`ScenarioError::Read`]:
    /// `cluster.yaml: cannot read: No such file or directory (os error 2)`.
    ///
    /// ```no_run
    /// use kubesched_sim::scenario::Scenario;
    /// let scenario = Scenario::from_files(["nodes.yaml", "pods.yaml"])?;
    /// println!("{} node(s), {} pod(s)", scenario.nodes.len(), scenario.pods.len());
    /// # Ok::<(), kubesched_sim::scenario::ScenarioError>(())
    /// ```
    pub fn from_files<P: AsRef<Path>>(
        paths: impl IntoIterator<Item = P>,
    ) -> Result<Scenario, ScenarioError> {
        let sources = paths
            .into_iter()
            .map(|p| {
                let path = p.as_ref();
                let name = path.display().to_string();
                match std::fs::read_to_string(path) {
                    Ok(text) => Ok(Source { name, text }),
                    Err(e) => Err(ScenarioError::Read {
                        file: name,
                        message: e.to_string(),
                    }),
                }
            })
            .collect::<Result<Vec<Source>, ScenarioError>>()?;
        load(&sources)
    }

    /// Reads one scenario `text` named `name` in messages: [`load`] for a single text.
    ///
    /// ```
    /// use kubesched_sim::scenario::Scenario;
    /// use kubesched_sim::{SimulationOptions, simulate_with};
    ///
    /// let text = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n\
    ///     status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n---\n\
    ///     apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n\
    ///     spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}\n";
    /// let scenario = Scenario::from_text("cluster.yaml", text)?;
    /// assert_eq!((scenario.nodes.len(), scenario.pods.len()), (1, 1));
    /// let sim = simulate_with(&scenario, &SimulationOptions::default(), &kubesched_plugins::in_tree_registry())?;
    /// assert_eq!(sim.results[0].pod, "default/web");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_text(name: &str, text: &str) -> Result<Scenario, ScenarioError> {
        load(&[Source {
            name: name.to_string(),
            text: text.to_string(),
        }])
    }
}

/// The raw `KubeSchedulerConfiguration` document, for the config crate to decode.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigDocument {
    /// Where it came from: `"file.yaml"` when the file holds only this document, else
    /// `"file.yaml (document N)"` (N counts the file's `---` documents from 1); a document
    /// expanded from a `List` adds its index, `"file.yaml (document N, items[I])"`.
    pub source: String,
    /// The document as parsed, unchanged.
    pub value: Value,
}

/// An object of a kind the loader does not interpret, kept as parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct OtherObject {
    /// Its `apiVersion`, e.g. `policy/v1`.
    pub api_version: String,
    /// Its `kind`, e.g. `PodDisruptionBudget`.
    pub kind: String,
    /// Its `metadata.namespace` exactly as written (`None` when absent or empty). The loader
    /// does not know which kinds are namespaced, so it applies no default: a user of a
    /// namespaced kind should read `None` as `default`.
    pub namespace: Option<String>,
    /// Its `metadata.name`.
    pub name: String,
    /// The whole object as parsed, unchanged.
    pub value: Value,
    /// Where it came from, in the form of [`ConfigDocument::source`].
    pub source: String,
}

/// Reads `sources`, in the order given, into one scenario.
///
/// Nodes, pods and other objects keep the order of the files and, within a file, of the
/// documents. The first problem found is returned; [`Scenario::warnings`] collects the
/// non-fatal ones (e.g. a pod bound to a node that is not in the scenario, which then
/// uses no node). Reading the files, and reporting a missing one, is the caller's job.
pub fn load(sources: &[Source]) -> Result<Scenario, ScenarioError> {
    let mut builder = Builder::default();
    for source in sources {
        let documents = parse_documents(source)?;
        let single = documents.len() == 1;
        for document in documents {
            let origin = Origin {
                file: &source.name,
                document: document.number,
                single,
                items: Vec::new(),
            };
            builder.add(&origin, document.value, document.bad_number)?;
        }
    }
    Ok(builder.finish())
}

/// Reads one object already parsed from JSON (a trace line's, say) into a scenario,
/// exactly as [`load`] reads a source `name` whose text is that object, without
/// writing and parsing the text again.
pub fn load_value(name: &str, value: Value) -> Result<Scenario, ScenarioError> {
    // A JSON number that is not an integer may read otherwise in YAML (`-0`, an
    // integer past 64 bits that JSON made a float): such an object takes the text's
    // way, so that nothing differs from `load`.
    if has_float(&value) {
        return load(&[Source {
            name: name.to_string(),
            text: value.to_string(),
        }]);
    }
    let mut builder = Builder::default();
    let origin = Origin {
        file: name,
        document: 1,
        single: true,
        items: Vec::new(),
    };
    builder.add(&origin, value, None)?;
    Ok(builder.finish())
}

/// Whether any number in `value` is not an integer.
fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(fields) => fields.values().any(has_float),
        _ => false,
    }
}

/// Where a document comes from.
struct Origin<'a> {
    file: &'a str,
    /// The document number in the file, from 1.
    document: usize,
    /// Whether it is the only (non-empty) document of its file.
    single: bool,
    /// The `items` indexes, for an object expanded from (nested) lists.
    items: Vec<usize>,
}

impl Origin<'_> {
    /// The short form when the file has one document, else with the document number.
    fn source(&self) -> String {
        if self.single && self.items.is_empty() {
            self.file.to_owned()
        } else {
            self.document()
        }
    }

    /// Always with the document number: `x.yaml (document 2, items[0])`.
    fn document(&self) -> String {
        let mut s = format!("{} (document {}", self.file, self.document);
        for item in &self.items {
            s.push_str(&format!(", items[{item}]"));
        }
        s.push(')');
        s
    }
}

/// Lists nested deeper than this are refused (a `List` of `List`s is already unusual).
const MAX_LIST_DEPTH: usize = 8;

#[derive(Default)]
struct Builder {
    scenario: Scenario,
    /// Node name -> where it was defined.
    nodes: HashMap<String, String>,
    /// Pod namespace/name -> where it was defined.
    pods: HashMap<(String, String), String>,
    /// The file of each kept pod, parallel to `scenario.pods`.
    pod_files: Vec<String>,
    /// (file, apiVersion/kind) -> how many objects of a kind kubesched does not read.
    unknown_kinds: Vec<((String, String), usize)>,
    storage: storage::StorageLoader,
    /// `Kind namespace/name` of every DRA object read.
    dra_names: std::collections::HashSet<String>,
    /// The file of each ResourceClaim, parallel to `scenario.dra.claims`.
    dra_claim_files: Vec<String>,
}

impl Builder {
    fn add(
        &mut self,
        origin: &Origin<'_>,
        value: Value,
        bad_number: Option<BadNumber>,
    ) -> Result<(), ScenarioError> {
        let Value::Object(object) = value else {
            return Err(ScenarioError::NotAnObject {
                document: origin.document(),
                found: describe(&value),
            });
        };
        let is_list = matches!(object.get("kind"), Some(Value::String(k)) if k.ends_with("List"));
        // A number JSON cannot hold is reported on the object (the list item) holding it.
        if let Some(bad) = bad_number {
            match (is_list, bad.path.as_slice()) {
                (true, [Segment::Key(items), Segment::Index(i), ..]) if items == "items" => {
                    let api_version = type_field(&object, "apiVersion", origin)?.to_owned();
                    let kind = type_field(&object, "kind", origin)?.to_owned();
                    let item = BadNumber {
                        path: bad.path[2..].to_vec(),
                        written: bad.written,
                    };
                    return self.add_list(origin, object, &api_version, &kind, Some((*i, item)));
                }
                _ => {
                    let value = Value::Object(object);
                    let kind = raw_str(&value, "/kind").unwrap_or("object");
                    let (file, object) = object_label(origin, kind, &value);
                    return Err(ScenarioError::Decode {
                        file,
                        object,
                        field: render(&bad.path),
                        message: bad.message(),
                    });
                }
            }
        }
        let api_version = type_field(&object, "apiVersion", origin)?.to_owned();
        let kind = type_field(&object, "kind", origin)?.to_owned();

        // Kinds ending in "List" are reserved for lists in Kubernetes.
        if is_list {
            return self.add_list(origin, object, &api_version, &kind, None);
        }
        let value = Value::Object(object);
        match (api_version.as_str(), kind.as_str()) {
            ("v1", "Node") => self.add_node(origin, &value),
            ("v1", "Pod") => self.add_pod(origin, &value),
            (v, k) if storage::is_storage_kind(v, k) => {
                self.storage
                    .add(&mut self.scenario.storage, origin, k, &value)
            }
            (group_version, "KubeSchedulerConfiguration")
                if group_version.starts_with("kubescheduler.config.k8s.io/") =>
            {
                if let Some(first) = &self.scenario.config {
                    return Err(ScenarioError::DuplicateConfig {
                        document: origin.document(),
                        first: first.source.clone(),
                    });
                }
                self.scenario.config = Some(ConfigDocument {
                    source: origin.source(),
                    value,
                });
                Ok(())
            }
            (group_version, kind)
                if group_version.starts_with("resource.k8s.io/") && dra::is_dra_kind(kind) =>
            {
                if self.add_dra(origin, &value, group_version, kind)? {
                    return Ok(());
                }
                self.add_other(origin, value, api_version, kind.to_owned())
            }
            (pod_groups::API_VERSION, "PodGroup" | "Workload")
            | (pod_groups::V1ALPHA1, "Workload") => {
                self.add_workload_object(origin, value, api_version, kind)
            }
            (group_version, "PodGroup" | "ElasticQuota")
                if group_version.starts_with("scheduling.x-k8s.io/") =>
            {
                self.add_sigs_object(origin, value, api_version, kind)
            }
            _ => {
                if let Some(suggestion) = near_miss_kind(&kind) {
                    let (file, _) = object_label(origin, &kind, &value);
                    return Err(ScenarioError::UnknownKind {
                        file,
                        kind,
                        suggestion,
                    });
                }
                self.add_other(origin, value, api_version, kind)
            }
        }
    }

    fn add_list(
        &mut self,
        origin: &Origin<'_>,
        mut object: Map<String, Value>,
        api_version: &str,
        kind: &str,
        mut bad_item: Option<(usize, BadNumber)>,
    ) -> Result<(), ScenarioError> {
        let items = match object.remove("items") {
            Some(Value::Null) => Vec::new(),
            None => {
                return Err(ScenarioError::InvalidList {
                    document: origin.document(),
                    kind: kind.to_owned(),
                    message:
                        "missing: not a Kubernetes List (kubectl get ... -o yaml prints `items`)"
                            .into(),
                });
            }
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(ScenarioError::InvalidList {
                    document: origin.document(),
                    kind: kind.to_owned(),
                    message: format!("must be a sequence, found {}", describe(&other)),
                });
            }
        };
        if origin.items.len() >= MAX_LIST_DEPTH {
            return Err(ScenarioError::InvalidList {
                document: origin.document(),
                kind: kind.to_owned(),
                message: format!("lists nested more than {MAX_LIST_DEPTH} deep"),
            });
        }
        // In a typed list (PodList) the API server leaves out the items' apiVersion and kind.
        let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty());
        for (index, mut item) in items.into_iter().enumerate() {
            if let (Some(item_kind), Value::Object(fields)) = (item_kind, &mut item) {
                fields
                    .entry("apiVersion")
                    .or_insert_with(|| api_version.into());
                fields.entry("kind").or_insert_with(|| item_kind.into());
            }
            let mut items = origin.items.clone();
            items.push(index);
            let item_origin = Origin { items, ..*origin };
            let bad = match bad_item.take() {
                Some((i, bad)) if i == index => Some(bad),
                other => {
                    bad_item = other;
                    None
                }
            };
            self.add(&item_origin, item, bad)?;
        }
        Ok(())
    }

    fn add_node(&mut self, origin: &Origin<'_>, value: &Value) -> Result<(), ScenarioError> {
        let (file, object) = object_label(origin, "Node", value);
        let mut node: Node = decode(value, &file, &object)?;
        let Some(name) = node.metadata.name.clone().filter(|n| !n.is_empty()) else {
            return Err(ScenarioError::MissingName {
                document: origin.document(),
                kind: "Node".into(),
            });
        };
        if let Some(message) = subdomain_name_problem(&name) {
            return Err(ScenarioError::Decode {
                file,
                object,
                field: "metadata.name".into(),
                message,
            });
        }
        let declared = node
            .status
            .as_ref()
            .and_then(|s| s.declared_features.as_deref());
        if let Some((field, message)) = declared.and_then(validate::declared_features_problem) {
            return Err(ScenarioError::Decode {
                file,
                object,
                field,
                message,
            });
        }
        if let Some(first) = self.nodes.get(&name) {
            return Err(ScenarioError::DuplicateNode {
                file,
                name,
                first: first.clone(),
            });
        }
        defaults::default_node(&mut node);
        self.nodes.insert(name, origin.source());
        self.scenario.nodes.push(Arc::new(node));
        Ok(())
    }

    fn add_pod(&mut self, origin: &Origin<'_>, value: &Value) -> Result<(), ScenarioError> {
        let (file, object) = object_label(origin, "Pod", value);
        // v1.35's spec.workloadRef, which k8s-openapi's PodSpec lacks: copied only then.
        let mut without_ref = None;
        let mut workload_ref = None;
        if value.pointer("/spec/workloadRef").is_some() {
            let mut copy = value.clone();
            workload_ref = pod_groups::take_workload_ref(&mut copy, &file, &object)?;
            without_ref = Some(copy);
        }
        let mut pod: Pod = decode(without_ref.as_ref().unwrap_or(value), &file, &object)?;
        if let Some(reference) = workload_ref {
            pod.metadata.annotations.get_or_insert_default().insert(
                kubesched_plugins::gang_scheduling::v1alpha1::WORKLOAD_REF_ANNOTATION.into(),
                reference,
            );
        }
        let Some(name) = pod.metadata.name.clone().filter(|n| !n.is_empty()) else {
            return Err(ScenarioError::MissingName {
                document: origin.document(),
                kind: "Pod".into(),
            });
        };
        let problem = |field: &str, message: String| ScenarioError::Decode {
            file: file.clone(),
            object: object.clone(),
            field: field.into(),
            message,
        };
        if let Some(message) = subdomain_name_problem(&name) {
            return Err(problem("metadata.name", message));
        }
        if let Some(message) = pod
            .metadata
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .and_then(namespace_problem)
        {
            return Err(problem("metadata.namespace", message));
        }
        if pod
            .spec
            .as_ref()
            .is_none_or(|spec| spec.containers.is_empty())
        {
            return Err(problem("spec.containers", "Required value".into()));
        }

        defaults::default_pod(&mut pod);
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();

        let key = (namespace, name);
        if let Some(first) = self.pods.get(&key) {
            let (namespace, name) = key;
            return Err(ScenarioError::DuplicatePod {
                file,
                namespace,
                name,
                first: first.clone(),
            });
        }
        self.pods.insert(key, origin.source());

        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if !matches!(phase, Some("Succeeded" | "Failed")) {
            self.scenario.pods.push(Arc::new(pod));
            self.pod_files.push(file);
        }
        Ok(())
    }

    /// Reads a scheduler-plugins PodGroup or ElasticQuota (`scheduling.x-k8s.io/v1alpha1`)
    /// strictly, with the CRD's validation (`spec.minMember` at least 1 when given) or
    /// kubesched's (an ElasticQuota's `min` not above its `max`), and keeps it as an
    /// other object for the plugins (Coscheduling, CapacityScheduling) to read. Another
    /// version is kept with a warning, unread.
    fn add_sigs_object(
        &mut self,
        origin: &Origin<'_>,
        value: Value,
        api_version: String,
        kind: String,
    ) -> Result<(), ScenarioError> {
        if api_version != kubesched_plugins_sigs::api::API_VERSION {
            self.scenario.warnings.push(format!(
                "{}: {kind} {}: apiVersion: {api_version:?} is not read; kubesched reads {}",
                origin.document(),
                echo(raw_str(&value, "/metadata/name").unwrap_or("")),
                kubesched_plugins_sigs::api::API_VERSION,
            ));
            return self.add_other(origin, value, api_version, kind);
        }
        let (file, object) = namespaced_object_label(origin, &kind, &value);
        if kind == "ElasticQuota" {
            let quota: kubesched_plugins_sigs::api::ElasticQuota = decode(&value, &file, &object)?;
            refuse_problem(file, object, quota.problem())?;
        } else {
            let group: kubesched_plugins_sigs::api::PodGroup = decode(&value, &file, &object)?;
            refuse_problem(file, object, group.problem())?;
        }
        self.add_other(origin, value, api_version, kind)
    }

    fn add_other(
        &mut self,
        origin: &Origin<'_>,
        value: Value,
        api_version: String,
        kind: String,
    ) -> Result<(), ScenarioError> {
        let Some(name) = raw_str(&value, "/metadata/name").map(str::to_owned) else {
            return Err(ScenarioError::MissingName {
                document: origin.document(),
                kind,
            });
        };
        let namespace = raw_str(&value, "/metadata/namespace").map(str::to_owned);
        let problem = |field: &str, message: String| {
            let (file, object) = object_label(origin, &kind, &value);
            ScenarioError::Decode {
                file,
                object,
                field: field.into(),
                message,
            }
        };
        if let Some(message) = known_kind_name_problem(&api_version, &kind, &name) {
            return Err(problem("metadata.name", message));
        }
        if let Some(message) = namespace.as_deref().and_then(namespace_problem) {
            return Err(problem("metadata.namespace", message));
        }
        if matches!(kind.as_str(), "Pod" | "Node" | "KubeSchedulerConfiguration") {
            self.scenario.warnings.push(format!(
                "{}: {kind} {}: apiVersion: {api_version:?} is not a version the scheduler reads; kept as an other object, not as a {kind}",
                origin.document(),
                echo(&name),
            ));
        }
        if !is_known_kind(&api_version, &kind) {
            let key = (
                origin.file.to_owned(),
                format!("{} {}", echo(&api_version), echo(&kind)),
            );
            match self.unknown_kinds.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => self.unknown_kinds.push((key, 1)),
            }
        }
        let source = origin.source();
        self.scenario.objects.push(OtherObject {
            api_version,
            kind,
            namespace,
            name,
            value,
            source,
        });
        Ok(())
    }

    fn finish(mut self) -> Scenario {
        let storage_warnings = self.storage.warnings(&self.scenario.storage);
        self.scenario.warnings.extend(storage_warnings);
        self.finish_dra();
        for ((file, kind), n) in &self.unknown_kinds {
            self.scenario.warnings.push(format!(
                "{file}: {n} object(s) of kind {kind} ignored: kubesched does not read that kind"
            ));
        }
        for (pod, file) in self.scenario.pods.iter().zip(&self.pod_files) {
            let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
                continue;
            };
            if !node.is_empty() && !self.nodes.contains_key(node) {
                self.scenario.warnings.push(format!(
                    "{file}: Pod {}/{}: spec.nodeName: node {node:?} is not in the scenario; the pod uses no node",
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                    pod.metadata.name.as_deref().unwrap_or_default(),
                ));
            }
        }
        self.scenario
    }
}

/// The file (with the document number when the object has no name) and the object as
/// messages name them: `Pod default/web-1` (a pod's namespace defaults to `default`),
/// `Node n1`, `Service team/web`, or the kind alone. Names and namespaces that are not
/// plain are quoted.
fn object_label(origin: &Origin<'_>, kind: &str, value: &Value) -> (String, String) {
    let kind = echo(kind);
    let Some(name) = raw_str(value, "/metadata/name") else {
        return (origin.document(), kind.into_owned());
    };
    let namespace = match raw_str(value, "/metadata/namespace") {
        _ if kind == "Node" => None,
        None if kind == "Pod" => Some("default"),
        namespace => namespace,
    };
    let object = match namespace {
        Some(namespace) => format!("{kind} {}/{}", echo(namespace), echo(name)),
        None => format!("{kind} {}", echo(name)),
    };
    (origin.file.to_owned(), object)
}

/// [`object_label`] of an object of a namespaced kind: in the namespace `default` when
/// it names none, as the API server puts it (the gang and quota kinds).
fn namespaced_object_label(origin: &Origin<'_>, kind: &str, value: &Value) -> (String, String) {
    let mut labelled = value.clone();
    if raw_str(value, "/metadata/namespace").is_none()
        && let Some(meta) = labelled.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("namespace".into(), "default".into());
    }
    object_label(origin, kind, &labelled)
}

/// The API server's validation problem of an object, `(field, message)`, as the error
/// naming the file, the object and the field.
fn refuse_problem(
    file: String,
    object: String,
    problem: Option<(impl Into<String>, String)>,
) -> Result<(), ScenarioError> {
    match problem {
        None => Ok(()),
        Some((field, message)) => Err(ScenarioError::Decode {
            file,
            object,
            field: field.into(),
            message,
        }),
    }
}
