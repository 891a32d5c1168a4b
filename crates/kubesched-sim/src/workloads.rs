//! Workload objects (Deployment, ReplicaSet, Job, StatefulSet) expanded to the pods their
//! controllers would create, for the what-if tools (`--add`, `capacity`, `rollout`).
//!
//! The pods are built from `spec.template` as the controllers build them: the template's
//! labels and annotations, the workload's namespace, a controller `ownerReference`, and
//! the labels each controller adds. Their names follow the controllers' patterns, with
//! deterministic suffixes instead of random ones so that runs are reproducible:
//!
//! | kind | pods | names |
//! | --- | --- | --- |
//! | Deployment | `spec.replicas` (default 1) | `NAME-HASH-SUFFIX`, label `pod-template-hash: HASH`; the ReplicaSet `NAME-HASH` is added too |
//! | ReplicaSet | `spec.replicas` (default 1) | `NAME-SUFFIX` |
//! | StatefulSet | `spec.replicas` (default 1) | `NAME-0` .. `NAME-(N-1)` (from `spec.ordinals.start`) |
//! | Job | `min(parallelism, completions)` (parallelism default 1; 0 when suspended) | `NAME-SUFFIX`, or `NAME-INDEX-SUFFIX` for `completionMode: Indexed` |
//!
//! `HASH` is the FNV-1a (32-bit) hash of the template's JSON, written with the
//! Kubernetes "safe" alphabet (`bcdfghjklmnpqrstvwxz2456789`) as the Deployment
//! controller writes its own hash (whose input, Go's printing of the template, cannot be
//! reproduced). `SUFFIX` is five characters of that alphabet derived from the FNV-1a
//! (64-bit) hash of `PREFIX` and the pod's index, rehashed on a clash.
//!
//! The pods are returned as JSON objects, for the scenario loader to decode strictly
//! (a typo in a template is reported like a typo in a pod). A StatefulSet's
//! `volumeClaimTemplates` become claims `TEMPLATE-POD` (see [`Workload::claims`]), as the StatefulSet controller makes them:
//! a warning says so.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Map, Value, json};

use crate::scenario::OtherObject;
use kubesched_config::echo;

/// The alphabet of Kubernetes' generated names (`k8s.io/apimachinery/pkg/util/rand`).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Why a workload could not be expanded. Displays as one line naming the file, the
/// object and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {object}: {field}: {message}")]
pub struct WorkloadError {
    /// Where the object came from.
    pub source_name: String,
    /// The object, e.g. `Deployment default/web`.
    pub object: String,
    /// The offending field, e.g. `spec.replicas`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// The most pods kubesched stamps out of one workload unless told otherwise (`--max-pods`):
/// a `replicas: 2147483647` would otherwise try to build two billion pods.
pub const DEFAULT_MAX_PODS: usize = 100_000;

/// Which controller owns the pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `batch/v1` Job.
    Job,
}

impl WorkloadKind {
    /// The kind as written in YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::Job => "Job",
        }
    }

    /// The kind of an object, if it is a workload kubesched expands.
    pub fn of(object: &OtherObject) -> Option<WorkloadKind> {
        match (object.api_version.as_str(), object.kind.as_str()) {
            ("apps/v1", "Deployment") => Some(WorkloadKind::Deployment),
            ("apps/v1", "ReplicaSet") => Some(WorkloadKind::ReplicaSet),
            ("apps/v1", "StatefulSet") => Some(WorkloadKind::StatefulSet),
            ("batch/v1", "Job") => Some(WorkloadKind::Job),
            _ => None,
        }
    }
}

/// The Deployment strategy, as written (defaults applied, not yet scaled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `Recreate`: every old pod goes before any new one is created.
    Recreate,
    /// `RollingUpdate` with `maxSurge` and `maxUnavailable` (ints or `N%`).
    RollingUpdate {
        /// `maxSurge` as written, e.g. `25%` or `1`.
        max_surge: String,
        /// `maxUnavailable` as written.
        max_unavailable: String,
    },
}

/// A workload ready to stamp out pods.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The controller kind.
    pub kind: WorkloadKind,
    /// The namespace (`default` when absent).
    pub namespace: String,
    /// The workload's name.
    pub name: String,
    /// Where it came from.
    pub source: String,
    /// How many pods the controller creates.
    pub replicas: usize,
    /// The field `replicas` comes from (`spec.replicas`, or a Job's `spec.parallelism`
    /// or `spec.completions`), for messages.
    pub count_field: &'static str,
    /// `spec.selector` (Jobs: `None`, their selector is generated).
    pub selector: Option<LabelSelector>,
    /// The Deployment's strategy (`None` for other kinds).
    pub strategy: Option<Strategy>,
    /// The pod-template hash (Deployments; empty otherwise).
    pub template_hash: String,
    /// Non-fatal notes (e.g. volumeClaimTemplates not simulated).
    pub warnings: Vec<String>,
    template: Value,
    prefix: String,
    indexed: bool,
    ordinal_start: usize,
    subdomain: Option<String>,
    /// A StatefulSet's `spec.volumeClaimTemplates`, as written.
    claim_templates: Vec<Value>,
    uid: String,
    owner: (String, String, String),
}

fn fnv32(text: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn fnv64(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `rand.SafeEncodeString` of the decimal form of `n`, as the Deployment controller
/// writes its pod-template hash.
fn safe_encode(n: u32) -> String {
    n.to_string()
        .bytes()
        .map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char)
        .collect()
}

fn suffix(seed: u64) -> String {
    let mut n = seed;
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize] as char;
            n /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// A deterministic uid (RFC 4122 layout) for `key`.
pub fn uid_for(key: &str) -> String {
    let a = fnv64(key);
    let b = fnv64(&format!("{key}/uid"));
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn decode<T: serde::de::DeserializeOwned>(o: &OtherObject, ns: &str) -> Result<T, WorkloadError> {
    serde_path_to_error::deserialize(&o.value).map_err(|e| WorkloadError {
        source_name: o.source.clone(),
        object: format!("{} {}/{}", echo(&o.kind), echo(ns), echo(&o.name)),
        field: crate::scenario::render_path(e.path()),
        message: e.inner().to_string(),
    })
}

impl Workload {
    /// Refuses to expand `pods` pods (this workload's, or a rollout's peak) when that is more
    /// than `max_pods`; the error names the file, the workload and [`Workload::count_field`],
    /// and says that `--max-pods` raises the cap.
    pub fn check_pod_count(&self, pods: usize, max_pods: usize) -> Result<(), WorkloadError> {
        if pods <= max_pods {
            return Ok(());
        }
        Err(WorkloadError {
            source_name: self.source.clone(),
            object: format!(
                "{} {}/{}",
                self.kind.as_str(),
                echo(&self.namespace),
                echo(&self.name)
            ),
            field: self.count_field.to_string(),
            message: format!(
                "{pods} pods are more than kubesched expands (at most {max_pods}); raise the cap with --max-pods N"
            ),
        })
    }

    /// Reads a workload object; `Ok(None)` when the object is not a workload kind.
    pub fn from_object(object: &OtherObject) -> Result<Option<Workload>, WorkloadError> {
        let Some(kind) = WorkloadKind::of(object) else {
            return Ok(None);
        };
        let namespace = object
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let err = |field: &str, message: String| WorkloadError {
            source_name: object.source.clone(),
            object: format!(
                "{} {}/{}",
                echo(&object.kind),
                echo(&namespace),
                echo(&object.name)
            ),
            field: field.to_string(),
            message,
        };
        let count = |field: &str, v: Option<i32>, default: i32| -> Result<usize, WorkloadError> {
            let v = v.unwrap_or(default);
            usize::try_from(v).map_err(|_| err(field, format!("must be 0 or more, found {v}")))
        };
        let mut warnings = Vec::new();
        let mut strategy = None;
        let mut indexed = false;
        let mut ordinal_start = 0;
        let mut subdomain = None;
        let mut count_field = match kind {
            WorkloadKind::Job => "spec.parallelism",
            _ => "spec.replicas",
        };
        let mut claim_templates = Vec::new();
        let (replicas, selector) = match kind {
            WorkloadKind::Deployment => {
                let d: Deployment = decode(object, &namespace)?;
                let spec = d.spec;
                let s = spec.strategy.unwrap_or_default();
                strategy = Some(match s.type_.as_deref() {
                    Some("Recreate") => Strategy::Recreate,
                    None | Some("RollingUpdate") => {
                        let ru = s.rolling_update.unwrap_or_default();
                        let text = |v: Option<
                            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString,
                        >| match v {
                            Some(
                                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i),
                            ) => i.to_string(),
                            Some(
                                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(
                                    s,
                                ),
                            ) => s,
                            None => "25%".to_string(),
                        };
                        Strategy::RollingUpdate {
                            max_surge: text(ru.max_surge),
                            max_unavailable: text(ru.max_unavailable),
                        }
                    }
                    Some(other) => {
                        return Err(err(
                            "spec.strategy.type",
                            format!(
                                "unsupported value {other:?}: supported values: \"Recreate\", \"RollingUpdate\""
                            ),
                        ));
                    }
                });
                (
                    count("spec.replicas", spec.replicas, 1)?,
                    Some(spec.selector),
                )
            }
            WorkloadKind::ReplicaSet => {
                let rs: ReplicaSet = decode(object, &namespace)?;
                let spec = rs.spec;
                (
                    count("spec.replicas", spec.replicas, 1)?,
                    Some(spec.selector),
                )
            }
            WorkloadKind::StatefulSet => {
                let ss: StatefulSet = decode(object, &namespace)?;
                let spec = ss.spec;
                claim_templates = object
                    .value
                    .pointer("/spec/volumeClaimTemplates")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                subdomain = spec.service_name.clone().filter(|s| !s.is_empty());
                ordinal_start = count(
                    "spec.ordinals.start",
                    spec.ordinals.and_then(|o| o.start),
                    0,
                )?;
                (
                    count("spec.replicas", spec.replicas, 1)?,
                    Some(spec.selector),
                )
            }
            WorkloadKind::Job => {
                let job: Job = decode(object, &namespace)?;
                let spec = job.spec.unwrap_or_default();
                let parallelism = count("spec.parallelism", spec.parallelism, 1)?;
                let completions = match spec.completions {
                    Some(c) => Some(count("spec.completions", Some(c), 1)?),
                    None => None,
                };
                indexed = spec.completion_mode.as_deref() == Some("Indexed");
                if indexed && completions.is_none() {
                    return Err(err(
                        "spec.completions",
                        "required when completionMode is Indexed".into(),
                    ));
                }
                let active = if spec.suspend == Some(true) {
                    warnings.push(format!(
                        "{}: Job {}/{}: spec.suspend: the Job is suspended; it creates no pods",
                        object.source,
                        echo(&namespace),
                        echo(&object.name)
                    ));
                    0
                } else {
                    if completions.is_some_and(|c| c < parallelism) {
                        count_field = "spec.completions";
                    }
                    completions.map_or(parallelism, |c| c.min(parallelism))
                };
                (active, None)
            }
        };
        let Some(template) = object.value.pointer("/spec/template").cloned() else {
            return Err(err("spec.template", "missing".into()));
        };
        if !template.is_object() {
            return Err(err("spec.template", "must be a mapping".into()));
        }
        if let Some(sel) = &selector {
            let labels: BTreeMap<String, String> = template
                .pointer("/metadata/labels")
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default();
            let parsed =
                kubesched_plugins::label_selector::Selector::from_label_selector(Some(sel))
                    .map_err(|e| err("spec.selector", e))?;
            if sel.match_labels.is_none() && sel.match_expressions.is_none() {
                return Err(err("spec.selector", "empty selector is invalid".into()));
            }
            if !parsed.matches(&labels) {
                return Err(err(
                    "spec.template.metadata.labels",
                    "`selector` does not match template `labels`".into(),
                ));
            }
        }
        let template_hash = if kind == WorkloadKind::Deployment {
            safe_encode(fnv32(&template.to_string()))
        } else {
            String::new()
        };
        let uid = uid_for(&format!("{}/{namespace}/{}", kind.as_str(), object.name));
        let (prefix, owner) = match kind {
            WorkloadKind::Deployment => {
                let rs = format!("{}-{template_hash}", object.name);
                let rs_uid = uid_for(&format!("ReplicaSet/{namespace}/{rs}"));
                (
                    format!("{rs}-"),
                    ("apps/v1".to_string(), "ReplicaSet".to_string(), rs_uid),
                )
            }
            WorkloadKind::Job => (
                format!("{}-", object.name),
                ("batch/v1".into(), "Job".into(), uid.clone()),
            ),
            _ => (
                format!("{}-", object.name),
                ("apps/v1".into(), kind.as_str().into(), uid.clone()),
            ),
        };
        Ok(Some(Workload {
            kind,
            namespace,
            name: object.name.clone(),
            source: object.source.clone(),
            replicas,
            count_field,
            selector,
            strategy,
            template_hash,
            warnings,
            template,
            prefix,
            indexed,
            ordinal_start,
            subdomain,
            claim_templates,
            uid,
            owner,
        }))
    }

    /// The name of the object that owns the pods: the ReplicaSet `NAME-HASH` for a
    /// Deployment, the workload itself otherwise.
    pub fn owner_name(&self) -> String {
        match self.kind {
            WorkloadKind::Deployment => format!("{}-{}", self.name, self.template_hash),
            _ => self.name.clone(),
        }
    }

    /// The names of `count` pods, from the `skip`-th on: the names the controller gives
    /// its pods (see the module doc), distinct from each other and from `taken`.
    pub fn pod_names(&self, skip: usize, count: usize, taken: &HashSet<String>) -> Vec<String> {
        let mut seen: HashSet<String> = HashSet::new();
        (skip..skip + count)
            .map(|i| {
                let name = match self.kind {
                    WorkloadKind::StatefulSet => {
                        format!("{}-{}", self.name, self.ordinal_start + i)
                    }
                    _ => {
                        let prefix = if self.indexed {
                            format!("{}{i}-", self.prefix)
                        } else {
                            self.prefix.clone()
                        };
                        let mut attempt = 0u32;
                        loop {
                            let seed = fnv64(&format!("{prefix}{i}/{attempt}"));
                            let name = format!("{prefix}{}", suffix(seed));
                            if !seen.contains(&name) && !taken.contains(&name) {
                                break name;
                            }
                            attempt += 1;
                        }
                    }
                };
                seen.insert(name.clone());
                name
            })
            .collect()
    }

    /// The pod the controller creates as its `index`-th pod (counting from 0), named
    /// `name`, as a JSON object for the scenario loader.
    pub fn pod(&self, index: usize, name: &str) -> Value {
        let mut pod = Map::new();
        pod.insert("apiVersion".into(), json!("v1"));
        pod.insert("kind".into(), json!("Pod"));
        let mut meta = self
            .template
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        meta.remove("name");
        meta.remove("generateName");
        meta.insert("name".into(), json!(name));
        meta.insert("namespace".into(), json!(self.namespace));
        meta.insert(
            "uid".into(),
            json!(uid_for(&format!("Pod/{}/{name}", self.namespace))),
        );
        let labels = meta
            .entry("labels")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut labels = labels;
        let mut annotations = meta
            .get("annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut spec = self
            .template
            .get("spec")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        match self.kind {
            WorkloadKind::Deployment => {
                labels.insert("pod-template-hash".into(), json!(self.template_hash));
            }
            WorkloadKind::ReplicaSet => {}
            WorkloadKind::StatefulSet => {
                let ordinal = self.ordinal_start + index;
                labels.insert(
                    "apps.kubernetes.io/pod-index".into(),
                    json!(ordinal.to_string()),
                );
                labels.insert(
                    "controller-revision-hash".into(),
                    json!(format!(
                        "{}-{}",
                        self.name,
                        safe_encode(fnv32(&self.template.to_string()))
                    )),
                );
                labels.insert("statefulset.kubernetes.io/pod-name".into(), json!(name));
                spec.insert("hostname".into(), json!(name));
                if !self.claim_templates.is_empty() {
                    spec.insert(
                        "volumes".into(),
                        Value::Array(self.claim_volumes(&spec, name)),
                    );
                }
                if let Some(service) = &self.subdomain {
                    spec.insert("subdomain".into(), json!(service));
                }
            }
            WorkloadKind::Job => {
                for key in ["batch.kubernetes.io/controller-uid", "controller-uid"] {
                    labels.insert(key.into(), json!(self.uid));
                }
                for key in ["batch.kubernetes.io/job-name", "job-name"] {
                    labels.insert(key.into(), json!(self.name));
                }
                if self.indexed {
                    let i = index.to_string();
                    labels.insert("batch.kubernetes.io/job-completion-index".into(), json!(i));
                    annotations.insert("batch.kubernetes.io/job-completion-index".into(), json!(i));
                    spec.entry("hostname")
                        .or_insert_with(|| json!(format!("{}-{index}", self.name)));
                }
            }
        }
        meta.insert("labels".into(), Value::Object(labels));
        if !annotations.is_empty() {
            meta.insert("annotations".into(), Value::Object(annotations));
        }
        let (api_version, kind, uid) = &self.owner;
        meta.insert(
            "ownerReferences".into(),
            json!([{"apiVersion": api_version, "kind": kind, "name": self.owner_name(),
                    "uid": uid, "controller": true, "blockOwnerDeletion": true}]),
        );
        pod.insert("metadata".into(), Value::Object(meta));
        pod.insert("spec".into(), Value::Object(spec));
        Value::Object(pod)
    }

    /// A StatefulSet pod's volumes, as the StatefulSet controller sets them: one
    /// `persistentVolumeClaim` volume per claim template (named after the template,
    /// claim `TEMPLATE-POD`), then the template's other volumes.
    fn claim_volumes(&self, spec: &Map<String, Value>, pod: &str) -> Vec<Value> {
        let names: Vec<&str> = self
            .claim_templates
            .iter()
            .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        let mut volumes: Vec<Value> = names
            .iter()
            .map(|t| json!({"name": t, "persistentVolumeClaim": {"claimName": format!("{t}-{pod}")}}))
            .collect();
        for v in spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            if !names.contains(&name) {
                volumes.push(v.clone());
            }
        }
        volumes
    }

    /// The claims the controllers create for `pods` (as [`Workload::pod`] made them): a
    /// StatefulSet's `TEMPLATE-POD` claims (labelled with the selector's `matchLabels`),
    /// and for any kind the `POD-VOLUME` claim of each generic ephemeral volume, owned by
    /// the pod. A claim that already exists is reused by the controllers; the caller
    /// leaves those out.
    pub fn claims(&self, pods: &[Value]) -> Vec<Value> {
        let mut claims = Vec::new();
        let selector_labels = self
            .selector
            .as_ref()
            .and_then(|s| s.match_labels.clone())
            .unwrap_or_default();
        for pod in pods {
            let pod_name = pod
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if self.kind == WorkloadKind::StatefulSet {
                for t in &self.claim_templates {
                    let Some(tname) = t.pointer("/metadata/name").and_then(Value::as_str) else {
                        continue;
                    };
                    let mut meta = t
                        .get("metadata")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    meta.insert("name".into(), json!(format!("{tname}-{pod_name}")));
                    meta.insert("namespace".into(), json!(self.namespace));
                    let labels = meta.entry("labels").or_insert_with(|| json!({}));
                    if let Some(labels) = labels.as_object_mut() {
                        for (k, v) in &selector_labels {
                            labels.insert(k.clone(), json!(v));
                        }
                    }
                    claims.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": meta, "spec": t.get("spec").cloned().unwrap_or(json!({}))}));
                }
            }
            let uid = pod.pointer("/metadata/uid").cloned().unwrap_or(json!(""));
            for v in pod
                .pointer("/spec/volumes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(template) = v.pointer("/ephemeral/volumeClaimTemplate") else {
                    continue;
                };
                let vname = v.get("name").and_then(Value::as_str).unwrap_or_default();
                let mut meta = template
                    .get("metadata")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                meta.insert("name".into(), json!(format!("{pod_name}-{vname}")));
                meta.insert("namespace".into(), json!(self.namespace));
                meta.insert(
                    "ownerReferences".into(),
                    json!([{"apiVersion": "v1", "kind": "Pod",
                    "name": pod_name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]),
                );
                claims.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": meta, "spec": template.get("spec").cloned().unwrap_or(json!({}))}));
            }
        }
        claims
    }

    /// Every pod the controller creates, named, in order (names distinct from `taken`).
    pub fn pods(&self, taken: &HashSet<String>) -> Vec<Value> {
        self.pod_names(0, self.replicas, taken)
            .iter()
            .enumerate()
            .map(|(i, name)| self.pod(i, name))
            .collect()
    }

    /// The objects the controller creates besides pods that kube-scheduler reads: for a
    /// Deployment, its ReplicaSet `NAME-HASH` (selector plus `pod-template-hash`), which
    /// PodTopologySpread's default constraints use.
    pub fn owned_objects(&self) -> Vec<Value> {
        if self.kind != WorkloadKind::Deployment {
            return Vec::new();
        }
        let mut selector = self
            .selector
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_else(|| json!({}));
        if let Some(sel) = selector.as_object_mut() {
            let labels = sel.entry("matchLabels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("pod-template-hash".into(), json!(self.template_hash));
            }
        }
        let mut template = self.template.clone();
        if let Some(meta) = template
            .as_object_mut()
            .map(|t| t.entry("metadata").or_insert_with(|| json!({})))
            && let Some(meta) = meta.as_object_mut()
        {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("pod-template-hash".into(), json!(self.template_hash));
            }
        }
        let (_, _, rs_uid) = &self.owner;
        vec![json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": self.owner_name(), "namespace": self.namespace, "uid": rs_uid,
                "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                    "name": self.name, "uid": self.uid, "controller": true,
                    "blockOwnerDeletion": true}]},
            "spec": {"replicas": self.replicas, "selector": selector, "template": template}
        })]
    }
}

/// Resolves a `maxSurge` / `maxUnavailable` value against `total` as Kubernetes'
/// `GetScaledValueFromIntOrPercent` does: an integer as is, `N%` scaled and rounded up
/// (`round_up`, maxSurge) or down (maxUnavailable).
pub fn scaled_value(value: &str, total: usize, round_up: bool) -> Result<usize, String> {
    if let Some(percent) = value.strip_suffix('%') {
        let p: u64 = percent
            .parse()
            .map_err(|_| format!("invalid value for IntOrString: invalid value {value:?}"))?;
        let product = p.saturating_mul(total as u64);
        let v = if round_up {
            product.div_ceil(100)
        } else {
            product / 100
        };
        Ok(usize::try_from(v).unwrap_or(usize::MAX))
    } else {
        let v: i64 = value.parse().map_err(|_| {
            format!(
                "invalid value for IntOrString: invalid type: string is not a percentage: {value:?}"
            )
        })?;
        usize::try_from(v).map_err(|_| format!("must be 0 or more, found {v}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(text: &str) -> OtherObject {
        let value: Value = serde_norway::from_str(text).unwrap();
        OtherObject {
            api_version: value["apiVersion"].as_str().unwrap().into(),
            kind: value["kind"].as_str().unwrap().into(),
            namespace: value["metadata"]["namespace"].as_str().map(str::to_string),
            name: value["metadata"]["name"].as_str().unwrap().into(),
            value,
            source: "w.yaml".into(),
        }
    }

    #[test]
    fn scaling_rounds_as_kubernetes_does() {
        assert_eq!(scaled_value("25%", 10, true), Ok(3));
        assert_eq!(scaled_value("25%", 10, false), Ok(2));
        assert_eq!(scaled_value("0%", 10, true), Ok(0));
        assert_eq!(scaled_value("3", 10, true), Ok(3));
        assert!(scaled_value("x%", 10, true).is_err());
        assert!(scaled_value("-1", 10, true).is_err());
    }

    #[test]
    fn claims_follow_the_controllers() {
        let ss = object(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: x}\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers: [{name: c, image: pg}]\n      volumes: [{name: data, emptyDir: {}}, {name: tmp, emptyDir: {}}]\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], storageClassName: ssd, resources: {requests: {storage: 1Gi}}}\n",
        );
        let w = Workload::from_object(&ss).unwrap().unwrap();
        let pods = w.pods(&HashSet::new());
        assert_eq!(
            pods[1]["spec"]["volumes"],
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}},
                   {"name": "tmp", "emptyDir": {}}])
        );
        let claims = w.claims(&pods);
        assert_eq!(claims.len(), 2);
        assert_eq!(claims[0]["metadata"]["name"], "data-db-0");
        assert_eq!(claims[0]["metadata"]["namespace"], "x");
        assert_eq!(claims[0]["metadata"]["labels"]["app"], "db");
        assert_eq!(claims[0]["spec"]["storageClassName"], "ssd");

        let d = object(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: nginx}]\n      volumes: [{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], storageClassName: ssd, resources: {requests: {storage: 1Gi}}}}}}]\n",
        );
        let w = Workload::from_object(&d).unwrap().unwrap();
        let pods = w.pods(&HashSet::new());
        let claims = w.claims(&pods);
        assert_eq!(claims.len(), 1);
        let pod_name = pods[0]["metadata"]["name"].as_str().unwrap();
        assert_eq!(claims[0]["metadata"]["name"], format!("{pod_name}-scratch"));
        let owner = &claims[0]["metadata"]["ownerReferences"][0];
        assert_eq!(owner["uid"], pods[0]["metadata"]["uid"]);
        assert_eq!(owner["controller"], true);
    }

    #[test]
    fn names_follow_the_controllers() {
        let d = object(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
        );
        let w = Workload::from_object(&d).unwrap().unwrap();
        let pods = w.pods(&HashSet::new());
        assert_eq!(pods.len(), 3);
        let name = pods[0]["metadata"]["name"].as_str().unwrap();
        assert!(
            name.starts_with(&format!("web-{}-", w.template_hash)),
            "{name}"
        );
        assert_eq!(
            pods[0]["metadata"]["labels"]["pod-template-hash"],
            w.template_hash.as_str()
        );
        assert_eq!(w.owned_objects().len(), 1);
        let ss = object(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: x}\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: c, image: pg}]}\n",
        );
        let w = Workload::from_object(&ss).unwrap().unwrap();
        let names: Vec<String> = w
            .pods(&HashSet::new())
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["db-0", "db-1"]);
        let job = object(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 4\n  completions: 2\n  completionMode: Indexed\n  template:\n    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}\n",
        );
        let w = Workload::from_object(&job).unwrap().unwrap();
        let pods = w.pods(&HashSet::new());
        assert_eq!(pods.len(), 2);
        assert!(
            pods[1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("j-1-")
        );
    }

    #[test]
    fn bad_workloads_name_the_field() {
        let d = object(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: -1\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: web}}}\n",
        );
        assert_eq!(
            Workload::from_object(&d).unwrap_err().to_string(),
            "w.yaml: Deployment default/web: spec.replicas: must be 0 or more, found -1"
        );
        let d = object(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: api}}}\n",
        );
        assert!(
            Workload::from_object(&d)
                .unwrap_err()
                .to_string()
                .contains("spec.template.metadata.labels")
        );
        // Names and keys from the input are quoted: the message stays one line.
        let d = object(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: \"we\\nb\", namespace: \"a\\tb\"}\nspec:\n  replicas: -1\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: web}}}\n",
        );
        assert_eq!(
            Workload::from_object(&d).unwrap_err().to_string(),
            "w.yaml: Deployment \"a\\tb\"/\"we\\nb\": spec.replicas: must be 0 or more, found -1"
        );
        let d = object(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n  \"x\\ny\": 1\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: web}}}\n",
        );
        let text = Workload::from_object(&d)
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(!text.contains('\n'), "{text}");
    }
}
