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
//!   every resource quantity is checked with [`Quantity::parse`]. Quantities written as
//!   YAML numbers (`cpu: 2`, `memory: 2e9`) are accepted and stored as strings
//!   (`"2"`, `"2000000000"`), as the API server's JSON decoding accepts numbers;
//! * pods get the API server's defaults for `metadata.namespace` (`default`) and
//!   `spec.schedulerName` (`default-scheduler`); pods in phase `Succeeded` or `Failed`
//!   are dropped, as kube-scheduler's pod informer drops them;
//! * the `kubescheduler.config.k8s.io/*` `KubeSchedulerConfiguration` is kept as raw JSON
//!   for the config crate, which does its own strict decoding;
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

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use kubesched_framework::quantity::Quantity;

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
    /// Non-fatal notes for stderr, each naming the file, the object and the field.
    pub warnings: Vec<String>,
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

/// Why a scenario could not be loaded. Every variant displays as one line that starts with
/// the file (with the document number when the object has no name to identify it).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The text is not valid YAML (or JSON); `line` and `column` count from 1.
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// The file name.
        file: String,
        /// The line of the error, from 1.
        line: usize,
        /// The column of the error, from 1.
        column: usize,
        /// The YAML parser's message, without its position.
        message: String,
    },
    /// The YAML parser failed without giving a position (e.g. its repetition limit, which
    /// guards against alias bombs).
    #[error("{file}: {message}")]
    Yaml {
        /// The file name.
        file: String,
        /// The YAML parser's message.
        message: String,
    },
    /// A document (or a `List` item) is not a mapping, so it cannot be an object.
    #[error("{document}: not a Kubernetes object: the document is {found}, not a mapping")]
    NotAnObject {
        /// The file and document, e.g. `x.yaml (document 2)`.
        document: String,
        /// What it is instead, e.g. `a sequence`.
        found: &'static str,
    },
    /// A document has no `apiVersion` or no `kind`, or one that is not a non-empty string.
    #[error("{document}: {field}: {problem}; every document needs apiVersion and kind")]
    MissingTypeField {
        /// The file and document.
        document: String,
        /// `apiVersion` or `kind`.
        field: &'static str,
        /// `missing`, or `must be a non-empty string`.
        problem: &'static str,
    },
    /// An object has no `metadata.name` (or an empty one).
    #[error("{document}: {kind}: metadata.name: missing")]
    MissingName {
        /// The file and document.
        document: String,
        /// The object's kind.
        kind: String,
    },
    /// A Pod or Node has a field its type does not know (usually a typo).
    #[error("{file}: {object}: {field}: unknown field{}", did_you_mean(suggestion))]
    UnknownField {
        /// The file (and document, when the object has no name).
        file: String,
        /// The object, e.g. `Pod default/web-1`.
        object: String,
        /// The path of the unknown field, e.g. `spec.schdulerName`.
        field: String,
        /// The closest known field at that level, if one is close enough.
        suggestion: Option<String>,
    },
    /// A resource quantity of a Pod or Node does not parse.
    #[error("{file}: {object}: {field}: invalid quantity \"{value}\": {reason}")]
    InvalidQuantity {
        /// The file (and document, when the object has no name).
        file: String,
        /// The object, e.g. `Pod default/web-1`.
        object: String,
        /// The path of the quantity, e.g. `spec.containers[0].resources.requests.memory`.
        field: String,
        /// The quantity as written (a YAML number rendered as a string).
        value: String,
        /// The quantity parser's reason.
        reason: String,
    },
    /// A Pod or Node does not decode into its type (a wrong type, a missing required field,
    /// a bad timestamp, ...).
    #[error("{file}: {object}: {}{message}", path_prefix(field))]
    Decode {
        /// The file (and document, when the object has no name).
        file: String,
        /// The object, e.g. `Node n1`.
        object: String,
        /// The path of the offending field (empty for the object itself).
        field: String,
        /// The decoder's message.
        message: String,
    },
    /// Two nodes have the same name.
    #[error("{file}: Node {name}: metadata.name: duplicate node name (first defined in {first})")]
    DuplicateNode {
        /// The file of the second node.
        file: String,
        /// The node name.
        name: String,
        /// Where the first node with that name is.
        first: String,
    },
    /// Two pods have the same namespace and name.
    #[error(
        "{file}: Pod {namespace}/{name}: metadata.name: duplicate pod (first defined in {first})"
    )]
    DuplicatePod {
        /// The file of the second pod.
        file: String,
        /// The pod namespace (after defaulting).
        namespace: String,
        /// The pod name.
        name: String,
        /// Where the first pod with that name is.
        first: String,
    },
    /// A second `KubeSchedulerConfiguration` document.
    #[error(
        "{document}: KubeSchedulerConfiguration: a second configuration document (the first is {first}); a scenario has at most one"
    )]
    DuplicateConfig {
        /// The file and document of the second configuration.
        document: String,
        /// The source of the first one.
        first: String,
    },
    /// A `List` whose `items` is not a sequence, or lists nested too deeply.
    #[error("{document}: {kind}: items: {message}")]
    InvalidList {
        /// The file and document.
        document: String,
        /// The list's kind.
        kind: String,
        /// What is wrong.
        message: String,
    },
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(", did you mean {s}?"))
        .unwrap_or_default()
}

fn path_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
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
        for (number, value) in documents {
            let origin = Origin {
                file: &source.name,
                document: number,
                single,
                items: Vec::new(),
            };
            builder.add(&origin, value)?;
        }
    }
    Ok(builder.finish())
}

/// Parses every YAML document of `source`, numbered from 1, leaving out empty ones.
fn parse_documents(source: &Source) -> Result<Vec<(usize, Value)>, ScenarioError> {
    let mut documents = Vec::new();
    for (index, document) in serde_norway::Deserializer::from_str(&source.text).enumerate() {
        let YamlValue(value) =
            YamlValue::deserialize(document).map_err(|e| yaml_error(&source.name, &e))?;
        if !value.is_null() {
            documents.push((index + 1, value));
        }
    }
    Ok(documents)
}

/// A YAML document as a JSON value, refusing duplicate mapping keys as Kubernetes' strict
/// YAML decoding does (serde_json's own `Value` silently keeps the last one).
struct YamlValue(Value);

impl<'de> Deserialize<'de> for YamlValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(YamlValueVisitor)
            .map(YamlValue)
    }
}

struct YamlValueVisitor;

impl<'de> Visitor<'de> for YamlValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // NaN and infinities have no JSON form: null, as serde_json's Value does.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(YamlValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "mapping key {key:?} already defined"
                )));
            }
            let YamlValue(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

fn yaml_error(file: &str, error: &serde_norway::Error) -> ScenarioError {
    let text = error.to_string();
    match error.location() {
        Some(location) => {
            let (line, column) = (location.line(), location.column());
            // serde_norway appends " at line L column C" (libyaml marks); the position is
            // given in front instead.
            let message = text.replacen(&format!(" at line {line} column {column}"), "", 1);
            ScenarioError::Syntax {
                file: file.to_owned(),
                line,
                column,
                message,
            }
        }
        None => ScenarioError::Yaml {
            file: file.to_owned(),
            message: text,
        },
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
}

impl Builder {
    fn add(&mut self, origin: &Origin<'_>, value: Value) -> Result<(), ScenarioError> {
        let Value::Object(object) = value else {
            return Err(ScenarioError::NotAnObject {
                document: origin.document(),
                found: describe(&value),
            });
        };
        let api_version = type_field(&object, "apiVersion", origin)?.to_owned();
        let kind = type_field(&object, "kind", origin)?.to_owned();

        // Kinds ending in "List" are reserved for lists in Kubernetes.
        if kind.ends_with("List") {
            return self.add_list(origin, object, &api_version, &kind);
        }
        let value = Value::Object(object);
        match (api_version.as_str(), kind.as_str()) {
            ("v1", "Node") => self.add_node(origin, &value),
            ("v1", "Pod") => self.add_pod(origin, &value),
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
            _ => self.add_other(origin, value, api_version, kind),
        }
    }

    fn add_list(
        &mut self,
        origin: &Origin<'_>,
        mut object: Map<String, Value>,
        api_version: &str,
        kind: &str,
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
            self.add(&item_origin, item)?;
        }
        Ok(())
    }

    fn add_node(&mut self, origin: &Origin<'_>, value: &Value) -> Result<(), ScenarioError> {
        let name = raw_str(value, "/metadata/name");
        let (file, object) = match name {
            Some(name) => (origin.file.to_owned(), format!("Node {name}")),
            None => (origin.document(), "Node".to_owned()),
        };
        let node: Node = decode(value, &file, &object)?;
        let Some(name) = node.metadata.name.clone().filter(|n| !n.is_empty()) else {
            return Err(ScenarioError::MissingName {
                document: origin.document(),
                kind: "Node".into(),
            });
        };
        if let Some(first) = self.nodes.get(&name) {
            return Err(ScenarioError::DuplicateNode {
                file,
                name,
                first: first.clone(),
            });
        }
        self.nodes.insert(name, origin.source());
        self.scenario.nodes.push(Arc::new(node));
        Ok(())
    }

    fn add_pod(&mut self, origin: &Origin<'_>, value: &Value) -> Result<(), ScenarioError> {
        let namespace = raw_str(value, "/metadata/namespace").unwrap_or("default");
        let (file, object) = match raw_str(value, "/metadata/name") {
            Some(name) => (origin.file.to_owned(), format!("Pod {namespace}/{name}")),
            None => (origin.document(), "Pod".to_owned()),
        };
        let mut pod: Pod = decode(value, &file, &object)?;
        let Some(name) = pod.metadata.name.clone().filter(|n| !n.is_empty()) else {
            return Err(ScenarioError::MissingName {
                document: origin.document(),
                kind: "Pod".into(),
            });
        };

        // The API server's defaulting of the fields the scheduler reads.
        let namespace = match pod.metadata.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns.to_owned(),
            _ => "default".to_owned(),
        };
        pod.metadata.namespace = Some(namespace.clone());
        let spec = pod.spec.get_or_insert_with(Default::default);
        if spec
            .scheduler_name
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            spec.scheduler_name = Some("default-scheduler".to_owned());
        }

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
        if matches!(kind.as_str(), "Pod" | "Node" | "KubeSchedulerConfiguration") {
            self.scenario.warnings.push(format!(
                "{}: {kind} {name}: apiVersion: {api_version:?} is not a version the scheduler reads; kept as an other object, not as a {kind}",
                origin.document()
            ));
        }
        if !is_known_kind(&api_version, &kind) {
            let key = (origin.file.to_owned(), format!("{api_version} {kind}"));
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

/// Whether kube-scheduler or kubesched reads objects of this kind (the others are
/// ignored with a note): the kinds its plugins read, and the workloads the what-if
/// tools expand.
fn is_known_kind(api_version: &str, kind: &str) -> bool {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    matches!(
        (group, kind),
        (
            "",
            "Pod"
                | "Node"
                | "Service"
                | "ReplicationController"
                | "Namespace"
                | "PersistentVolume"
                | "PersistentVolumeClaim"
        ) | ("apps", "ReplicaSet" | "StatefulSet" | "Deployment")
            | ("batch", "Job")
            | ("policy", "PodDisruptionBudget")
            | ("scheduling.k8s.io", "PriorityClass")
            | (
                "storage.k8s.io",
                "StorageClass"
                    | "CSINode"
                    | "CSIDriver"
                    | "CSIStorageCapacity"
                    | "VolumeAttachment"
            )
            | (
                "resource.k8s.io",
                "ResourceClaim" | "ResourceSlice" | "DeviceClass" | "ResourceClaimTemplate"
            )
            | ("kubescheduler.config.k8s.io", "KubeSchedulerConfiguration")
    )
}

/// A string at `pointer`, if it is a non-empty string.
fn raw_str<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn type_field<'v>(
    object: &'v Map<String, Value>,
    field: &'static str,
    origin: &Origin<'_>,
) -> Result<&'v str, ScenarioError> {
    match object.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        None | Some(Value::Null) => Err(ScenarioError::MissingTypeField {
            document: origin.document(),
            field,
            problem: "missing",
        }),
        Some(_) => Err(ScenarioError::MissingTypeField {
            document: origin.document(),
            field,
            problem: "must be a non-empty string",
        }),
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// Decodes `value` strictly into `T` (see the module doc), naming the field of any error.
fn decode<T: DeserializeOwned>(
    value: &Value,
    file: &str,
    object: &str,
) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(Strict { value }).map_err(|error| {
        let field = match error.path().to_string() {
            root if root == "." => String::new(),
            path => path,
        };
        let (file, object) = (file.to_owned(), object.to_owned());
        match error.into_inner() {
            StrictError::UnknownField { suggestion } => ScenarioError::UnknownField {
                file,
                object,
                field,
                suggestion,
            },
            StrictError::InvalidQuantity { value, reason } => ScenarioError::InvalidQuantity {
                file,
                object,
                field,
                value,
                reason,
            },
            StrictError::Message(message) => ScenarioError::Decode {
                file,
                object,
                field,
                message,
            },
        }
    })
}

/// The error of [`Strict`]; serde_path_to_error adds the path.
#[derive(Debug)]
enum StrictError {
    /// A key that is not in the struct's field list.
    UnknownField { suggestion: Option<String> },
    /// A quantity that [`Quantity::parse`] rejects.
    InvalidQuantity { value: String, reason: String },
    /// Anything the decoded types report.
    Message(String),
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrictError::UnknownField { suggestion } => {
                write!(f, "unknown field{}", did_you_mean(suggestion))
            }
            StrictError::InvalidQuantity { value, reason } => {
                write!(f, "invalid quantity {value:?}: {reason}")
            }
            StrictError::Message(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for StrictError {}

impl de::Error for StrictError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        StrictError::Message(msg.to_string())
    }
}

/// A deserializer over a parsed JSON value that refuses keys missing from a struct's field
/// list and checks (and stringifies) every `Quantity`.
struct Strict<'de> {
    value: &'de Value,
}

impl<'de> de::Deserializer<'de> for Strict<'de> {
    type Error = StrictError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, StrictError> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(StrictSeq {
                items: items.iter(),
            }),
            Value::Object(map) => visitor.visit_map(StrictMap::new(map, None)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, StrictError> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, StrictError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match self.value {
            Value::Object(map) => visitor.visit_map(StrictMap::new(map, Some(fields))),
            // As in Go, `field: null` for a struct is an empty struct.
            Value::Null => {
                visitor.visit_map(StrictMap::new(EMPTY.get_or_init(Map::new), Some(fields)))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, StrictError> {
        if name == "Quantity" {
            let text = match self.value {
                Value::String(s) => s.clone(),
                // Kubernetes' JSON decoding accepts numbers for quantities.
                Value::Number(n) => number_to_quantity(n),
                _ => return visitor.visit_newtype_struct(self),
            };
            if let Err(error) = Quantity::parse(&text) {
                return Err(StrictError::InvalidQuantity {
                    value: text,
                    reason: error.to_string(),
                });
            }
            return visitor.visit_newtype_struct(StringDeserializer::new(text));
        }
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// A YAML number as a quantity string: integers as written, floats in plain decimal
/// notation (`2e9` -> `2000000000`, `0.5` -> `0.5`).
fn number_to_quantity(n: &serde_json::Number) -> String {
    match (n.as_u64(), n.as_i64(), n.as_f64()) {
        (Some(u), _, _) => u.to_string(),
        (_, Some(i), _) => i.to_string(),
        // Rust's float Display never uses an exponent and prints integral values without
        // a fraction.
        (_, _, Some(f)) => f.to_string(),
        _ => n.to_string(),
    }
}

struct StrictSeq<'de> {
    items: std::slice::Iter<'de, Value>,
}

impl<'de> SeqAccess<'de> for StrictSeq<'de> {
    type Error = StrictError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, StrictError> {
        self.items
            .next()
            .map(|value| seed.deserialize(Strict { value }))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct StrictMap<'de> {
    entries: serde_json::map::Iter<'de>,
    /// The struct's field list; `None` for a free-form map (labels, requests, ...).
    fields: Option<&'static [&'static str]>,
    /// The entry whose key was just read.
    current: Option<(&'de str, &'de Value)>,
}

impl<'de> StrictMap<'de> {
    fn new(map: &'de Map<String, Value>, fields: Option<&'static [&'static str]>) -> Self {
        StrictMap {
            entries: map.iter(),
            fields,
            current: None,
        }
    }
}

impl<'de> MapAccess<'de> for StrictMap<'de> {
    type Error = StrictError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, StrictError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some((key.as_str(), value));
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, StrictError> {
        let Some((key, value)) = self.current.take() else {
            return Err(de::Error::custom("value requested before its key"));
        };
        match self.fields {
            // Reported from inside the seed, so that serde_path_to_error's path ends with the key.
            Some(fields) if !fields.contains(&key) => seed.deserialize(Unknown {
                suggestion: closest(key, fields),
            }),
            _ => seed.deserialize(Strict { value }),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The value of an unknown field: refuses to be decoded.
struct Unknown {
    suggestion: Option<String>,
}

impl<'de> de::Deserializer<'de> for Unknown {
    type Error = StrictError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, StrictError> {
        Err(StrictError::UnknownField {
            suggestion: self.suggestion,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The known field closest to `key` (ignoring case), if it is close enough to be a typo.
fn closest(key: &str, fields: &[&str]) -> Option<String> {
    let key_lower = key.to_lowercase();
    let (distance, field) = fields
        .iter()
        .map(|field| {
            (
                strsim::damerau_levenshtein(&key_lower, &field.to_lowercase()),
                *field,
            )
        })
        .min_by_key(|(distance, _)| *distance)?;
    let allowed = (key.chars().count().max(field.len()) / 3).max(2);
    (distance <= allowed).then(|| field.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFORMANCE: &str = "/work/shared/conformance";

    fn src(name: &str, text: &str) -> Source {
        Source {
            name: name.to_owned(),
            text: text.to_owned(),
        }
    }

    fn load_one(text: &str) -> Result<Scenario, ScenarioError> {
        load(&[src("x.yaml", text)])
    }

    fn error(text: &str) -> String {
        match load_one(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e.to_string(),
        }
    }

    fn pod(name: &str, body: &str) -> String {
        format!("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{body}")
    }

    fn node(name: &str, body: &str) -> String {
        format!("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n{body}")
    }

    const CONTAINER: &str = "spec:\n  containers:\n  - name: c\n    image: nginx\n";

    #[test]
    fn loads_every_conformance_case() {
        let Ok(dirs) = std::fs::read_dir(CONFORMANCE) else {
            return;
        };
        let mut loaded = 0;
        for dir in dirs.flatten() {
            if !dir.file_name().to_string_lossy().starts_with("cases") {
                continue;
            }
            for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                let path = file.path();
                if path.extension().is_none_or(|e| e != "yaml") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let name = path.display().to_string();
                let scenario = load(&[Source {
                    name: name.clone(),
                    text,
                }])
                .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(!scenario.pods.is_empty(), "{name}: no pods");
                loaded += 1;
            }
        }
        assert!(loaded >= 100, "only {loaded} cases loaded");
    }

    #[test]
    fn conformance_counts() {
        let path = format!("{CONFORMANCE}/cases/bound-pod-terminal-ignored.yaml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let scenario = load(&[src("cases/bound-pod-terminal-ignored.yaml", &text)]).unwrap();
        let names: Vec<_> = scenario
            .nodes
            .iter()
            .map(|n| n.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["n1", "n2"]);
        // "done" (Succeeded) and "crashed" (Failed) are dropped.
        let pods: Vec<_> = scenario
            .pods
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(pods, ["running", "next"]);
        assert!(scenario.objects.is_empty());
        assert!(scenario.warnings.is_empty(), "{:?}", scenario.warnings);
        // The file starts with a comment, then `---`: the configuration is its first document.
        let config = scenario.config.unwrap();
        assert_eq!(
            config.source,
            "cases/bound-pod-terminal-ignored.yaml (document 1)"
        );
        assert_eq!(config.value["kind"], "KubeSchedulerConfiguration");

        let path = format!("{CONFORMANCE}/cases-preemption/random-4001-default.yaml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let scenario = load(&[src("p.yaml", &text)]).unwrap();
        assert_eq!(scenario.nodes.len(), 34);
        assert!(scenario.config.is_none());
        let pdb = &scenario.objects[0];
        assert_eq!(
            (pdb.api_version.as_str(), pdb.kind.as_str()),
            ("policy/v1", "PodDisruptionBudget")
        );
        assert_eq!(
            (pdb.namespace.as_deref(), pdb.name.as_str()),
            (Some("prod"), "api-pdb")
        );
        assert_eq!(pdb.value["spec"]["minAvailable"], 3);
        assert!(
            pdb.source.starts_with("p.yaml (document "),
            "{}",
            pdb.source
        );
    }

    #[test]
    fn several_files_make_one_scenario() {
        let a = src("a.yaml", &(node("n1", "") + &pod("p1", CONTAINER)));
        let b = src("b.yaml", &(node("n2", "") + &pod("p2", CONTAINER)));
        let scenario = load(&[a, b]).unwrap();
        let nodes: Vec<_> = scenario
            .nodes
            .iter()
            .map(|n| n.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(nodes, ["n1", "n2"]);
        let pods: Vec<_> = scenario
            .pods
            .iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(pods, ["p1", "p2"]);
        assert!(load(&[]).unwrap().pods.is_empty());
    }

    #[test]
    fn numbers_are_quantities() {
        let text = node(
            "n1",
            "status:\n  capacity: {cpu: 2, memory: 2e9, pods: 110}\n  allocatable:\n    cpu: 1.5\n    memory: 1e3\n",
        ) + &pod(
            "p",
            "spec:\n  overhead: {cpu: 0.25}\n  resources: {limits: {memory: 4096}}\n  initContainers:\n  - name: i\n    resources: {requests: {cpu: 1}}\n  containers:\n  - name: c\n    resources:\n      requests: {cpu: 2, memory: 2e9, example.com/fpga: 1}\n      limits: {cpu: -1.0}\n",
        );
        let scenario = load_one(&text).unwrap();
        let status = scenario.nodes[0].status.as_ref().unwrap();
        let capacity = status.capacity.as_ref().unwrap();
        assert_eq!(capacity["cpu"].0, "2");
        assert_eq!(capacity["memory"].0, "2000000000");
        assert_eq!(capacity["pods"].0, "110");
        let allocatable = status.allocatable.as_ref().unwrap();
        assert_eq!(allocatable["cpu"].0, "1.5");
        assert_eq!(allocatable["memory"].0, "1000");
        let spec = scenario.pods[0].spec.as_ref().unwrap();
        assert_eq!(spec.overhead.as_ref().unwrap()["cpu"].0, "0.25");
        assert_eq!(
            spec.resources.as_ref().unwrap().limits.as_ref().unwrap()["memory"].0,
            "4096"
        );
        let init = spec.init_containers.as_ref().unwrap()[0]
            .resources
            .as_ref()
            .unwrap();
        assert_eq!(init.requests.as_ref().unwrap()["cpu"].0, "1");
        let resources = spec.containers[0].resources.as_ref().unwrap();
        let requests = resources.requests.as_ref().unwrap();
        assert_eq!(requests["cpu"].0, "2");
        assert_eq!(requests["memory"].0, "2000000000");
        assert_eq!(requests["example.com/fpga"].0, "1");
        assert_eq!(resources.limits.as_ref().unwrap()["cpu"].0, "-1");
    }

    #[test]
    fn pod_defaulting() {
        let text = pod("a", CONTAINER)
            + &pod(
                "b",
                "  namespace: ''\nspec:\n  schedulerName: ''\n  containers: []\n",
            )
            + &pod(
                "c",
                "  namespace: team\nspec:\n  schedulerName: mine\n  containers: []\n",
            )
            + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: d}\n";
        let scenario = load_one(&text).unwrap();
        let got: Vec<_> = scenario
            .pods
            .iter()
            .map(|p| {
                let spec = p.spec.as_ref().unwrap();
                (
                    p.metadata.namespace.as_deref().unwrap(),
                    spec.scheduler_name.as_deref().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("default", "default-scheduler"),
                ("default", "default-scheduler"),
                ("team", "mine"),
                ("default", "default-scheduler")
            ]
        );
        // Everything else is kept.
        assert_eq!(
            scenario.pods[0].spec.as_ref().unwrap().containers[0]
                .image
                .as_deref(),
            Some("nginx")
        );
    }

    #[test]
    fn terminal_pods_are_dropped() {
        let text = pod("ok", "status: {phase: Running}\n")
            + &pod("s", "status: {phase: Succeeded}\n")
            + &pod("f", "status: {phase: Failed}\n")
            + &pod("pending", "status: {phase: Pending}\n")
            + &pod("none", "");
        let scenario = load_one(&text).unwrap();
        let pods: Vec<_> = scenario
            .pods
            .iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(pods, ["ok", "pending", "none"]);
        // A dropped pod still takes its name.
        let err = error(&(pod("s", "status: {phase: Succeeded}\n") + &pod("s", "")));
        assert!(
            err.starts_with("x.yaml: Pod default/s: metadata.name: duplicate pod"),
            "{err}"
        );
    }

    #[test]
    fn list_expansion() {
        let text = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
- apiVersion: v1
  kind: Pod
  metadata: {name: p1, namespace: ns}
  spec: {nodeName: n1, containers: []}
- apiVersion: v1
  kind: PodList
  items:
  - metadata: {name: p2}
    spec: {containers: []}
  - metadata: {name: p3}
- apiVersion: v1
  kind: Service
  metadata: {name: svc, namespace: ns}
- apiVersion: kubescheduler.config.k8s.io/v1
  kind: KubeSchedulerConfiguration
---
apiVersion: v1
kind: NodeList
items:
- metadata: {name: n2}
---
apiVersion: v1
kind: PodList
items: []
"#;
        let scenario = load_one(text).unwrap();
        let nodes: Vec<_> = scenario
            .nodes
            .iter()
            .map(|n| n.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(nodes, ["n1", "n2"]);
        let pods: Vec<_> = scenario
            .pods
            .iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(pods, ["p1", "p2", "p3"]);
        assert_eq!(scenario.objects.len(), 1);
        assert_eq!(scenario.objects[0].kind, "Service");
        assert_eq!(scenario.objects[0].source, "x.yaml (document 1, items[3])");
        assert_eq!(
            scenario.config.unwrap().source,
            "x.yaml (document 1, items[4])"
        );
        assert!(scenario.warnings.is_empty(), "{:?}", scenario.warnings);

        assert_eq!(
            error("apiVersion: v1\nkind: List\nitems: {a: 1}\n"),
            "x.yaml (document 1): List: items: must be a sequence, found a mapping"
        );
        assert_eq!(
            error("apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: p}\n"),
            "x.yaml (document 1, items[0]): apiVersion: missing; every document needs apiVersion and kind"
        );
    }

    #[test]
    fn json_files_are_accepted() {
        let text = r#"{"apiVersion": "v1", "kind": "PodList", "items": [
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 0.5}}}]}}]}"#;
        let scenario = load(&[src("x.json", text)]).unwrap();
        let requests = scenario.pods[0].spec.as_ref().unwrap().containers[0]
            .resources
            .as_ref()
            .unwrap();
        assert_eq!(requests.requests.as_ref().unwrap()["cpu"].0, "0.5");
    }

    #[test]
    fn bound_pod_on_missing_node_is_a_warning() {
        let text = node("n1", "")
            + &pod("on-n1", "spec: {nodeName: n1, containers: []}\n")
            + &pod("on-n9", "spec: {nodeName: n9, containers: []}\n")
            + &pod("late", "spec: {nodeName: n2, containers: []}\n")
            + &node("n2", "");
        let scenario = load_one(&text).unwrap();
        assert_eq!(scenario.pods.len(), 3);
        assert_eq!(
            scenario.warnings,
            [
                "x.yaml: Pod default/on-n9: spec.nodeName: node \"n9\" is not in the scenario; the pod uses no node"
            ]
        );
    }

    #[test]
    fn other_objects_and_config() {
        let text = "# leading comment\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n---\napiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: x, bogus: 1}]\n";
        let scenario = load_one(text).unwrap();
        let pc = &scenario.objects[0];
        assert_eq!(
            (
                pc.api_version.as_str(),
                pc.kind.as_str(),
                pc.namespace.as_deref(),
                pc.name.as_str()
            ),
            ("scheduling.k8s.io/v1", "PriorityClass", None, "high")
        );
        assert_eq!(pc.source, "x.yaml (document 1)");
        let config = scenario.config.unwrap();
        // Kept raw: the config crate does its own strict decoding.
        assert_eq!(config.value["profiles"][0]["bogus"], 1);
        assert_eq!(config.source, "x.yaml (document 3)");

        let only = load_one(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
        )
        .unwrap();
        assert_eq!(only.config.unwrap().source, "x.yaml");
        // A Pod of another apiVersion is not a pod: kept, with a warning.
        let odd = load_one("apiVersion: v2\nkind: Pod\nmetadata: {name: p}\n").unwrap();
        assert!(odd.pods.is_empty());
        assert_eq!(odd.objects.len(), 1);
        assert_eq!(odd.warnings.len(), 1);
        assert!(
            odd.warnings[0].starts_with("x.yaml (document 1): Pod p: apiVersion: \"v2\""),
            "{:?}",
            odd.warnings
        );
    }

    #[test]
    fn unknown_fields_suggest_the_closest_known_field() {
        assert_eq!(
            error(&pod("p", "spec:\n  schdulerName: x\n  containers: []\n")),
            "x.yaml: Pod default/p: spec.schdulerName: unknown field, did you mean schedulerName?"
        );
        assert_eq!(
            error(&pod(
                "p",
                "  namespace: ns\nspec:\n  nodeSelecter: {a: b}\n"
            )),
            "x.yaml: Pod ns/p: spec.nodeSelecter: unknown field, did you mean nodeSelector?"
        );
        assert_eq!(
            error(&pod("p", "spec:\n  tolerration: []\n")),
            "x.yaml: Pod default/p: spec.tolerration: unknown field, did you mean tolerations?"
        );
        assert_eq!(
            error(&pod(
                "p",
                "spec:\n  containers:\n  - name: c\n  - name: d\n    resources:\n      requets: {cpu: 1}\n"
            )),
            "x.yaml: Pod default/p: spec.containers[1].resources.requets: unknown field, did you mean requests?"
        );
        assert_eq!(
            error(&pod(
                "p",
                "spec:\n  tolerations:\n  - {key: a, opertor: Exists}\n"
            )),
            "x.yaml: Pod default/p: spec.tolerations[0].opertor: unknown field, did you mean operator?"
        );
        assert_eq!(
            error(&pod(
                "p",
                "spec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpression: []\n"
            )),
            "x.yaml: Pod default/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpression: unknown field, did you mean matchExpressions?"
        );
        assert_eq!(
            error(&pod("p", "  lables: {app: web}\n")),
            "x.yaml: Pod default/p: metadata.lables: unknown field, did you mean labels?"
        );
        assert_eq!(
            error(&pod("p", "spec:\n  NodeName: n1\n")),
            "x.yaml: Pod default/p: spec.NodeName: unknown field, did you mean nodeName?"
        );
        // Nothing close: no suggestion.
        assert_eq!(
            error(&pod("p", "spec:\n  frobnicate: 1\n")),
            "x.yaml: Pod default/p: spec.frobnicate: unknown field"
        );
        assert_eq!(
            error(&pod("p", "sepc: {}\n")),
            "x.yaml: Pod default/p: sepc: unknown field, did you mean spec?"
        );
        assert_eq!(
            error(&node("n1", "spec:\n  unschedulabel: true\n")),
            "x.yaml: Node n1: spec.unschedulabel: unknown field, did you mean unschedulable?"
        );
        assert_eq!(
            error(&node(
                "n1",
                "status:\n  images:\n  - {names: [a], sizeByte: 1}\n"
            )),
            "x.yaml: Node n1: status.images[0].sizeByte: unknown field, did you mean sizeBytes?"
        );
        // Free-form maps (labels, annotations, resource maps) take any key.
        load_one(&node(
            "n1",
            "  labels: {schdulerName: x}\nstatus:\n  capacity: {anything.example.com/x: '1'}\n",
        ))
        .unwrap();
        // Other kinds are not checked.
        load_one("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspce: {}\n").unwrap();
    }

    #[test]
    fn invalid_quantities() {
        assert_eq!(
            error(&pod(
                "web",
                "spec:\n  containers:\n  - name: c\n    resources:\n      requests:\n        memory: 2Gb\n"
            )),
            format!(
                "x.yaml: Pod default/web: spec.containers[0].resources.requests.memory: invalid quantity \"2Gb\": {}",
                Quantity::parse("2Gb").unwrap_err()
            )
        );
        let err = error(&node("n1", "status:\n  allocatable: {cpu: 1.5.0}\n"));
        assert!(
            err.starts_with(
                "x.yaml: Node n1: status.allocatable.cpu: invalid quantity \"1.5.0\": "
            ),
            "{err}"
        );
        let err = error(&pod("p", "spec:\n  overhead: {cpu: abc}\n"));
        assert!(
            err.starts_with("x.yaml: Pod default/p: spec.overhead.cpu: invalid quantity \"abc\": "),
            "{err}"
        );
        let err = error(&pod(
            "p",
            "spec:\n  ephemeralContainers:\n  - name: e\n    resources: {limits: {cpu: ''}}\n",
        ));
        assert!(
            err.starts_with("x.yaml: Pod default/p: spec.ephemeralContainers[0].resources.limits.cpu: invalid quantity \"\": "),
            "{err}"
        );
        let err = error(&pod("p", "spec:\n  resources: {requests: {cpu: [1]}}\n"));
        assert!(
            err.starts_with("x.yaml: Pod default/p: spec.resources.requests.cpu: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn decode_errors_name_the_field() {
        let err = error(&pod("p", "spec:\n  priority: high\n"));
        assert!(
            err.starts_with("x.yaml: Pod default/p: spec.priority: invalid type: string \"high\""),
            "{err}"
        );
        let err = error(&pod(
            "p",
            "spec:\n  containers:\n  - name: c\n    ports: {containerPort: 80}\n",
        ));
        assert_eq!(
            err,
            "x.yaml: Pod default/p: spec.containers[0].ports: invalid type: map, expected a sequence"
        );
        let err = error(&pod("p", "  creationTimestamp: yesterday\n"));
        assert!(
            err.starts_with("x.yaml: Pod default/p: metadata.creationTimestamp: "),
            "{err}"
        );
        let err = error(&pod("p", "status: 7\n"));
        assert!(
            err.starts_with("x.yaml: Pod default/p: status: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn missing_names_and_type_fields() {
        assert_eq!(
            error(&(node("n1", "") + "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n")),
            "x.yaml (document 2): Pod: metadata.name: missing"
        );
        assert_eq!(
            error("apiVersion: v1\nkind: Node\nmetadata: {name: ''}\n"),
            "x.yaml (document 1): Node: metadata.name: missing"
        );
        assert_eq!(
            error("apiVersion: policy/v1\nkind: PodDisruptionBudget\nspec: {}\n"),
            "x.yaml (document 1): PodDisruptionBudget: metadata.name: missing"
        );
        assert_eq!(
            error("kind: Pod\nmetadata: {name: p}\n"),
            "x.yaml (document 1): apiVersion: missing; every document needs apiVersion and kind"
        );
        assert_eq!(
            error("---\n---\napiVersion: v1\nmetadata: {name: p}\n"),
            "x.yaml (document 2): kind: missing; every document needs apiVersion and kind"
        );
        assert_eq!(
            error("apiVersion: v1\nkind: 3\n"),
            "x.yaml (document 1): kind: must be a non-empty string; every document needs apiVersion and kind"
        );
        assert_eq!(
            error("- a\n- b\n"),
            "x.yaml (document 1): not a Kubernetes object: the document is a sequence, not a mapping"
        );
        // A name of the wrong type is a decoding error at metadata.name.
        let err = error("apiVersion: v1\nkind: Pod\nmetadata: {name: 7}\n");
        assert!(
            err.starts_with("x.yaml (document 1): Pod: metadata.name: invalid type: integer `7`"),
            "{err}"
        );
    }

    #[test]
    fn duplicates() {
        let a = src("a.yaml", &node("n1", ""));
        let b = src("b.yaml", &(node("n2", "") + &node("n1", "")));
        assert_eq!(
            load(&[a, b]).unwrap_err().to_string(),
            "b.yaml: Node n1: metadata.name: duplicate node name (first defined in a.yaml)"
        );
        assert_eq!(
            error(&(pod("p", "  namespace: default\n") + &pod("q", "") + &pod("p", ""))),
            "x.yaml: Pod default/p: metadata.name: duplicate pod (first defined in x.yaml (document 1))"
        );
        // Same name, other namespace: fine.
        load_one(&(pod("p", "  namespace: a\n") + &pod("p", "  namespace: b\n"))).unwrap();
        let config =
            "---\napiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
        assert_eq!(
            error(&format!("{config}{}{config}", node("n1", ""))),
            "x.yaml (document 3): KubeSchedulerConfiguration: a second configuration document (the first is x.yaml (document 1)); a scenario has at most one"
        );
    }

    #[test]
    fn yaml_syntax_errors_give_line_and_column() {
        let err = error("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n   bad: indentation\n");
        let ScenarioError::Syntax { line, column, .. } =
            load_one("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n   bad: indentation\n")
                .unwrap_err()
        else {
            panic!("{err}")
        };
        assert_eq!((line, column), (5, 7));
        assert_eq!(
            err,
            "x.yaml:5:7: mapping values are not allowed in this context"
        );
        let err = error(&(node("n1", "") + "---\nkind: [Pod\n"));
        assert_eq!(
            err,
            "x.yaml:8:1: did not find expected ',' or ']', while parsing a flow sequence at line 7 column 7"
        );
        let err = load(&[src("<stdin>", "a: \"unterminated\n")])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("<stdin>:"), "{err}");
    }

    #[test]
    fn duplicate_yaml_keys_are_errors() {
        let err = error("apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  name: b\n");
        assert_eq!(
            err,
            "x.yaml:4:3: metadata: mapping key \"name\" already defined"
        );
    }

    #[test]
    fn never_panics() {
        let inputs = [
            "",
            "---\n---\n",
            "~",
            "42",
            "'text'",
            "[1, 2]",
            "{apiVersion: v1, kind: Pod}",
            "{apiVersion: v1, kind: Pod, metadata: null, spec: null, status: null}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: null}}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [null]}}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: null}}]}}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: {cpu: null}}}]}}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p, creationTimestamp: 'yesterday'}}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {startTime: '2024-01-01T00:00:00Z'}}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {priority: 1e100}}",
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: {cpu: .inf}}}]}}",
            "{apiVersion: v1, kind: Node, metadata: {name: n}, status: {capacity: {cpu: 1e400}}}",
            "{apiVersion: v1, kind: Node, metadata: {name: n}, status: {capacity: {cpu: -99999999999999999999}}}",
            "{apiVersion: v1, kind: List, items: [1, [2], {kind: List}]}",
            "{apiVersion: v1, kind: List}",
            "{apiVersion: v1, kind: PodList, items: [{apiVersion: v2}]}",
            "a: &a [*a]",
            "a: *b",
            "!!binary aGVsbG8=",
            "? [a]\n: b\n",
            "\u{feff}apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
            "\t",
            "%YAML 1.1\n---\n",
        ];
        for input in inputs {
            let _ = load_one(input);
        }
        let mut deep = String::from("apiVersion: v1\nkind: List\nitems:\n");
        for _ in 0..20 {
            deep = deep.replace(
                "items:\n",
                "items:\n- {apiVersion: v1, kind: List, items: []}\n",
            );
        }
        let _ = load_one(&deep);
        let nested = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let _ = load_one(&nested);
    }
}
