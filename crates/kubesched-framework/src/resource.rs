//! Resource lists and a pod's effective requests, as kube-scheduler v1.35 computes them.
//!
//! * [`pod_requests`] is component-helpers' `PodRequests`: regular containers are summed;
//!   init containers run one at a time, so the pod needs the largest of them, each counted
//!   together with the restartable init containers (sidecars) declared before it; sidecars keep
//!   running, so they are also added to the sum; pod-level requests (`spec.resources.requests`
//!   for cpu, memory and hugepages-*) replace the container aggregate for those resources; the
//!   overhead is added last. With `non_missing_container_requests`, every container (init and
//!   sidecar too) that does not name a resource gets the given amount; an explicit zero stays 0.
//! * [`pod_resources`] is what NodeInfo accounts for a pod (`PodInfo.calculateResource`):
//!   the requests as a [`Resource`], and the cpu/memory used for scoring, where containers
//!   missing a request count 100m / 200Mi. When pod-level requests are set, the defaults only
//!   apply to a resource neither the pod level, the containers nor the overhead names.
//! * [`Resource`] is the framework's `Resource` (`Resource.Add`: cpu by `MilliValue()`,
//!   memory, ephemeral-storage, pods and scalar resources by `Value()`, other names ignored).
//!
//! Every sum is done on exact [`Quantity`] values and converted to integers only at the end,
//! as Go adds `resource.Quantity` values before calling `Value()`: two containers asking
//! memory `128m` make 1 byte, not 2.
//!
//! In-place resize: kube-scheduler v1.35 runs `PodRequests` with `UseStatusResources` (the
//! `InPlacePodVerticalScaling` gate is on) for pods it accounts on nodes. For a container (or
//! a sidecar; not a regular init container) whose status has `resources`, the request is the
//! per-resource maximum of its spec requests, `status.resources.requests` and
//! `status.allocatedResources`, or of the two status lists alone when the pod's
//! `PodResizePending` condition says `Infeasible`. [`pod_resources`] does this; pending pods
//! have no container statuses, so it changes nothing for them. [`pod_requests`] reads only
//! the spec (NodeResourcesFit's PreFilter passes no status option);
//! [`pod_requests_with_status`] is the status-aware variant.
//!
//! Quantities inside a pod are parsed as Go's JSON decoding of a `resource.Quantity` does
//! ([`Quantity::parse_json_string`]). A quantity that does not parse
//! is a [`PodQuantityError`] naming its field, e.g. `spec.initContainers[1].resources.requests.memory`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use crate::quantity::{Quantity, QuantityError};

/// A resource list as Kubernetes has it (name -> quantity).
pub type ResourceList = BTreeMap<String, Quantity>;

/// The cpu request (milli) that scoring assumes for a container that names none
/// (`schedutil.DefaultMilliCPURequest`).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;

/// The memory request (bytes) that scoring assumes for a container that names none
/// (`schedutil.DefaultMemoryRequest`, 200Mi).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

const CPU: &str = "cpu";
const MEMORY: &str = "memory";
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
const PODS: &str = "pods";
const HUGEPAGES_PREFIX: &str = "hugepages-";
const ATTACHABLE_VOLUMES_PREFIX: &str = "attachable-volumes-";
const DEFAULT_NAMESPACE_PREFIX: &str = "kubernetes.io/";
const REQUESTS_PREFIX: &str = "requests.";

/// kube-scheduler's `framework.Resource`: what NodeInfo sums per node, in integers.
// `repr(C)`: the four integers the per-node loop compares come first, together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Resource {
    /// cpu, in milli cores (`MilliValue()`).
    pub milli_cpu: i64,
    /// memory, in bytes (`Value()`).
    pub memory: i64,
    /// ephemeral-storage, in bytes (`Value()`).
    pub ephemeral_storage: i64,
    /// pods (`Value()`); on a node, how many pods it allows.
    pub allowed_pod_number: i64,
    /// Scalar resources (extended, hugepages-*, `*kubernetes.io/*`, attachable-volumes-*),
    /// by `Value()`. A listed resource keeps its entry even when its value is 0.
    pub scalar_resources: BTreeMap<String, i64>,
}

impl Resource {
    /// `Resource.Add` on an empty resource: cpu by `MilliValue()`; memory, ephemeral-storage,
    /// pods and every scalar resource ([`is_scalar_resource_name`]) by `Value()`; any other
    /// name is ignored.
    pub fn from_list(list: &ResourceList) -> Resource {
        let mut r = Resource::default();
        for (name, q) in list {
            match name.as_str() {
                CPU => r.milli_cpu = r.milli_cpu.wrapping_add(q.milli_value()),
                MEMORY => r.memory = r.memory.wrapping_add(q.value()),
                PODS => r.allowed_pod_number = r.allowed_pod_number.wrapping_add(q.value()),
                EPHEMERAL_STORAGE => {
                    r.ephemeral_storage = r.ephemeral_storage.wrapping_add(q.value())
                }
                _ if is_scalar_resource_name(name) => {
                    let v = r.scalar_resources.entry(name.clone()).or_insert(0);
                    *v = v.wrapping_add(q.value());
                }
                _ => {}
            }
        }
        r
    }

    /// Adds `other` field by field (Go's `+=`, wrapping on overflow).
    pub fn add(&mut self, other: &Resource) {
        self.combine(other, 1);
    }

    /// Subtracts `other` field by field (Go's `-=`, wrapping); scalar entries stay, possibly 0.
    pub fn sub(&mut self, other: &Resource) {
        self.combine(other, -1);
    }

    fn combine(&mut self, other: &Resource, sign: i64) {
        self.milli_cpu = self
            .milli_cpu
            .wrapping_add(sign.wrapping_mul(other.milli_cpu));
        self.memory = self.memory.wrapping_add(sign.wrapping_mul(other.memory));
        self.ephemeral_storage = self
            .ephemeral_storage
            .wrapping_add(sign.wrapping_mul(other.ephemeral_storage));
        self.allowed_pod_number = self
            .allowed_pod_number
            .wrapping_add(sign.wrapping_mul(other.allowed_pod_number));
        for (name, v) in &other.scalar_resources {
            let e = self.scalar_resources.entry(name.clone()).or_insert(0);
            *e = e.wrapping_add(sign.wrapping_mul(*v));
        }
    }

    /// A scalar resource's value, 0 when absent.
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar_resources.get(name).copied().unwrap_or(0)
    }
}

/// Parses a Kubernetes resource list (e.g. a node's `status.allocatable`). Each value is read
/// as Go's JSON decoding reads a quantity ([`Quantity::parse_json_string`]). The error names the first bad resource (in name order).
pub fn parse_resource_list(
    map: &BTreeMap<String, ApiQuantity>,
) -> Result<ResourceList, (String, QuantityError)> {
    map.iter()
        .map(|(name, q)| match parse_api_quantity(q) {
            Ok(v) => Ok((name.clone(), v)),
            Err(e) => Err((name.clone(), e)),
        })
        .collect()
}

/// A quantity as Go's `Quantity.UnmarshalJSON` reads it.
fn parse_api_quantity(q: &ApiQuantity) -> Result<Quantity, QuantityError> {
    Quantity::parse_json_string(&q.0)
}

/// A quantity in a pod that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: invalid quantity {value:?}: {source}")]
pub struct PodQuantityError {
    /// Where it is, e.g. `spec.initContainers[1].resources.requests.memory`.
    pub field: String,
    /// The text that did not parse.
    pub value: String,
    /// Why.
    pub source: QuantityError,
}

/// The options of component-helpers' `PodResourcesOptions` that kube-scheduler uses.
#[derive(Clone, Debug, Default)]
pub struct PodRequestOptions {
    /// Leave `spec.overhead` out.
    pub exclude_overhead: bool,
    /// Ignore pod-level requests (`spec.resources`), as with the PodLevelResources gate off.
    pub skip_pod_level_resources: bool,
    /// For every container (init and sidecar too) whose requests do not name one of these
    /// resources, use this amount instead. A request that is set, even to zero, is kept.
    pub non_missing_container_requests: Option<ResourceList>,
}

/// What NodeInfo accounts for a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodResources {
    /// The pod's effective requests ([`pod_requests_with_status`]) as a [`Resource`].
    pub requests: Resource,
    /// The cpu (milli) used for scoring: as `requests`, but with 100m for every container
    /// that names no cpu request (see [`pod_resources`]).
    pub non_zero_milli_cpu: i64,
    /// The memory (bytes) used for scoring: as `requests`, but with 200Mi for every container
    /// that names no memory request (see [`pod_resources`]).
    pub non_zero_memory: i64,
}

/// component-helpers' `PodRequests`: the effective request of a pod, from its spec only
/// (what NodeResourcesFit's PreFilter computes for the incoming pod).
pub fn pod_requests(pod: &Pod, opts: &PodRequestOptions) -> Result<ResourceList, PodQuantityError> {
    let parsed = ParsedPod::new(pod, false)?;
    Ok(parsed.requests(opts))
}

/// `PodRequests` with `UseStatusResources` (in-place resize), as kube-scheduler v1.35 uses it
/// for the pods it accounts on nodes: see the module documentation.
pub fn pod_requests_with_status(
    pod: &Pod,
    opts: &PodRequestOptions,
) -> Result<ResourceList, PodQuantityError> {
    let parsed = ParsedPod::new(pod, true)?;
    Ok(parsed.requests(opts))
}

/// What NodeInfo accounts for a pod (`PodInfo.calculateResource` of v1.35).
///
/// `requests` is `PodRequests` (status-aware, pod-level resources honoured, overhead
/// included). The non-zero cpu/memory repeat `PodRequests` with
/// `non_missing_container_requests`: without pod-level requests, 100m cpu and 200Mi memory
/// for every container (init and sidecar included) that misses the key; with pod-level
/// requests, only for cpu / memory absent from the effective requests altogether (the
/// pod-level value otherwise replaces the container sum anyway).
pub fn pod_resources(pod: &Pod) -> Result<PodResources, PodQuantityError> {
    let parsed = ParsedPod::new(pod, true)?;
    let opts = PodRequestOptions::default();
    let requests = parsed.requests(&opts);

    let mut non_missing = ResourceList::new();
    let default_cpu = Quantity::from_milli(i128::from(DEFAULT_MILLI_CPU_REQUEST));
    let default_memory = Quantity::from_value(DEFAULT_MEMORY_REQUEST);
    if !parsed.pod_level_requests_set() {
        non_missing.insert(CPU.to_string(), default_cpu);
        non_missing.insert(MEMORY.to_string(), default_memory);
    } else {
        if !requests.contains_key(CPU) {
            non_missing.insert(CPU.to_string(), default_cpu);
        }
        if !requests.contains_key(MEMORY) {
            non_missing.insert(MEMORY.to_string(), default_memory);
        }
    }
    let non_zero = if non_missing.is_empty() {
        requests.clone()
    } else {
        parsed.requests(&PodRequestOptions {
            non_missing_container_requests: Some(non_missing),
            ..PodRequestOptions::default()
        })
    };
    Ok(PodResources {
        requests: Resource::from_list(&requests),
        non_zero_milli_cpu: non_zero.get(CPU).copied().unwrap_or_default().milli_value(),
        non_zero_memory: non_zero.get(MEMORY).copied().unwrap_or_default().value(),
    })
}

/// `IsScalarResourceName` of kube-scheduler: extended, hugepages-*, prefixed native
/// (`*kubernetes.io/*`) and attachable-volumes-* resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || is_hugepage_resource_name(name)
        || is_prefixed_native_resource(name)
        || is_attachable_volume_resource_name(name)
}

/// `IsExtendedResourceName`: not native (it has a `/` and no `kubernetes.io/`), does not
/// start with `requests.`, and `requests.<name>` is a qualified name (DNS-1123 subdomain
/// prefix, then a name part of at most 63 alphanumerics, `-`, `_`, `.`).
pub fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with(REQUESTS_PREFIX) {
        return false;
    }
    is_qualified_name(&format!("{REQUESTS_PREFIX}{name}"))
}

/// `IsHugePageResourceName`: the name starts with `hugepages-`.
pub fn is_hugepage_resource_name(name: &str) -> bool {
    name.starts_with(HUGEPAGES_PREFIX)
}

/// `IsPrefixedNativeResource`: the name contains `kubernetes.io/`.
pub fn is_prefixed_native_resource(name: &str) -> bool {
    name.contains(DEFAULT_NAMESPACE_PREFIX)
}

/// `IsAttachableVolumeResourceName`: the name starts with `attachable-volumes-`.
pub fn is_attachable_volume_resource_name(name: &str) -> bool {
    name.starts_with(ATTACHABLE_VOLUMES_PREFIX)
}

/// `IsNativeResource`: no `/` at all, or in the `kubernetes.io/` namespace.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || is_prefixed_native_resource(name)
}

/// apimachinery's `IsQualifiedName` (true when it reports no error).
fn is_qualified_name(value: &str) -> bool {
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() || !is_dns1123_subdomain(prefix) {
                return false;
            }
            *name
        }
        _ => return false,
    };
    if name.is_empty() || name.len() > 63 {
        return false;
    }
    let b = name.as_bytes();
    let edge_ok = |c: u8| c.is_ascii_alphanumeric();
    let inner_ok = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.';
    edge_ok(b[0]) && edge_ok(b[b.len() - 1]) && b.iter().all(|&c| inner_ok(c))
}

/// apimachinery's `IsDNS1123Subdomain`: at most 253 characters, dot-separated labels of
/// lowercase alphanumerics and `-` that start and end alphanumeric.
fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= 253
        && value.split('.').all(|label| {
            let b = label.as_bytes();
            let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            !b.is_empty()
                && edge(b[0])
                && edge(b[b.len() - 1])
                && b.iter().all(|&c| edge(c) || c == b'-')
        })
}

/// `IsSupportedPodLevelResource`: cpu, memory and hugepages-*.
fn is_supported_pod_level_resource(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with(HUGEPAGES_PREFIX)
}

/// A container's requests as `PodRequests` sees them (status applied when asked).
struct ParsedContainer {
    requests: ResourceList,
    restartable: bool,
}

/// The parts of a pod `PodRequests` reads, parsed.
struct ParsedPod {
    containers: Vec<ParsedContainer>,
    init_containers: Vec<ParsedContainer>,
    pod_level_requests: Option<ResourceList>,
    overhead: Option<ResourceList>,
}

impl ParsedPod {
    fn new(pod: &Pod, use_status: bool) -> Result<ParsedPod, PodQuantityError> {
        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();

        // Container statuses by name; init container statuses win a name clash, as in Go.
        let mut statuses: BTreeMap<&str, (String, &ContainerStatus)> = BTreeMap::new();
        let mut resize_infeasible = false;
        if let Some(status) = status.filter(|_| use_status) {
            for (i, cs) in status.container_statuses.iter().flatten().enumerate() {
                statuses.insert(&cs.name, (format!("status.containerStatuses[{i}]"), cs));
            }
            for (i, cs) in status.init_container_statuses.iter().flatten().enumerate() {
                statuses.insert(&cs.name, (format!("status.initContainerStatuses[{i}]"), cs));
            }
            // IsPodResizeInfeasible: the first PodResizePending condition decides.
            resize_infeasible = status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "PodResizePending")
                .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"));
        }

        let parse_container = |c: &Container, path: String, status_applies: bool| {
            let spec_requests = parse_list(
                c.resources.as_ref().and_then(|r| r.requests.as_ref()),
                &format!("{path}.resources.requests"),
            )?;
            let restartable = c.restart_policy.as_deref() == Some("Always");
            let mut requests = spec_requests;
            let status = statuses
                .get(c.name.as_str())
                .filter(|_| status_applies)
                .and_then(|(path, cs)| cs.resources.as_ref().map(|res| (path, *cs, res)));
            if let Some((status_path, cs, res)) = status {
                let status_requests = parse_list(
                    res.requests.as_ref(),
                    &format!("{status_path}.resources.requests"),
                )?;
                let allocated = parse_list(
                    cs.allocated_resources.as_ref(),
                    &format!("{status_path}.allocatedResources"),
                )?;
                // determineContainerReqs
                requests = if resize_infeasible {
                    max_of(&status_requests, &[&allocated])
                } else {
                    max_of(&requests, &[&status_requests, &allocated])
                };
            }
            Ok(ParsedContainer {
                requests,
                restartable,
            })
        };

        let mut containers = Vec::new();
        let mut init_containers = Vec::new();
        let mut pod_level_requests = None;
        let mut overhead = None;
        if let Some(spec) = spec {
            for (i, c) in spec.containers.iter().enumerate() {
                containers.push(parse_container(
                    c,
                    format!("spec.containers[{i}]"),
                    use_status,
                )?);
            }
            for (i, c) in spec.init_containers.iter().flatten().enumerate() {
                // Only sidecars take their status into account.
                let sidecar = c.restart_policy.as_deref() == Some("Always");
                init_containers.push(parse_container(
                    c,
                    format!("spec.initContainers[{i}]"),
                    use_status && sidecar,
                )?);
            }
            if let Some(list) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
                pod_level_requests = Some(parse_list(Some(list), "spec.resources.requests")?);
            }
            if let Some(list) = spec.overhead.as_ref() {
                overhead = Some(parse_list(Some(list), "spec.overhead")?);
            }
        }
        Ok(ParsedPod {
            containers,
            init_containers,
            pod_level_requests,
            overhead,
        })
    }

    /// `IsPodLevelRequestsSet`: some pod-level request names a supported resource.
    fn pod_level_requests_set(&self) -> bool {
        self.pod_level_requests
            .as_ref()
            .is_some_and(|l| l.keys().any(|k| is_supported_pod_level_resource(k)))
    }

    /// `PodRequests`.
    fn requests(&self, opts: &PodRequestOptions) -> ResourceList {
        let non_missing = opts
            .non_missing_container_requests
            .as_ref()
            .filter(|l| !l.is_empty());
        let effective = |c: &ParsedContainer| match non_missing {
            Some(nm) => apply_non_missing(&c.requests, nm),
            None => c.requests.clone(),
        };

        // AggregateContainerRequests.
        let mut reqs = ResourceList::new();
        for c in &self.containers {
            add_list(&mut reqs, &effective(c));
        }
        let mut sidecars = ResourceList::new();
        let mut init_max = ResourceList::new();
        for c in &self.init_containers {
            let own = effective(c);
            let in_use = if c.restartable {
                add_list(&mut reqs, &own);
                add_list(&mut sidecars, &own);
                sidecars.clone()
            } else {
                let mut combined = own;
                add_list(&mut combined, &sidecars);
                combined
            };
            max_list(&mut init_max, &in_use);
        }
        max_list(&mut reqs, &init_max);

        // Pod-level requests replace the aggregate for the resources they support.
        if !opts.skip_pod_level_resources && self.pod_level_requests_set() {
            for (name, q) in self.pod_level_requests.iter().flatten() {
                if is_supported_pod_level_resource(name) {
                    reqs.insert(name.clone(), *q);
                }
            }
        }

        if let Some(overhead) = self.overhead.as_ref().filter(|_| !opts.exclude_overhead) {
            add_list(&mut reqs, overhead);
        }
        reqs
    }
}

/// Parses an optional resource list of a pod; `path` names the list.
fn parse_list(
    list: Option<&BTreeMap<String, ApiQuantity>>,
    path: &str,
) -> Result<ResourceList, PodQuantityError> {
    let mut out = ResourceList::new();
    for (name, q) in list.into_iter().flatten() {
        let v = parse_api_quantity(q).map_err(|source| PodQuantityError {
            field: format!("{path}.{name}"),
            value: q.0.clone(),
            source,
        })?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

/// `addResourceList`: adds every entry of `new` to `list`.
fn add_list(list: &mut ResourceList, new: &ResourceList) {
    for (name, q) in new {
        *list.entry(name.clone()).or_default() += *q;
    }
}

/// `maxResourceList`: for every entry of `new`, keeps the larger of the two.
fn max_list(list: &mut ResourceList, new: &ResourceList) {
    for (name, q) in new {
        match list.get_mut(name) {
            Some(cur) if *q <= *cur => {}
            Some(cur) => *cur = *q,
            None => {
                list.insert(name.clone(), *q);
            }
        }
    }
}

/// component-helpers' `max(a, b...)`.
fn max_of(a: &ResourceList, rest: &[&ResourceList]) -> ResourceList {
    let mut out = a.clone();
    for other in rest {
        max_list(&mut out, other);
    }
    out
}

/// `applyNonMissing`: a copy of `reqs` with every resource of `non_missing` it lacks added.
fn apply_non_missing(reqs: &ResourceList, non_missing: &ResourceList) -> ResourceList {
    let mut out = reqs.clone();
    for (name, q) in non_missing {
        if !reqs.contains_key(name) {
            out.insert(name.clone(), *q);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const MI: i64 = 1024 * 1024;
    const GI: i64 = 1024 * MI;

    fn pod(spec: Value) -> Pod {
        pod_with_status(spec, json!({}))
    }

    fn pod_with_status(spec: Value, status: Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": { "name": "p", "namespace": "default" },
            "spec": spec,
            "status": status,
        }))
        .expect("test pod")
    }

    fn container(name: &str, requests: Value) -> Value {
        json!({ "name": name, "image": "pause", "resources": { "requests": requests } })
    }

    fn bare(name: &str) -> Value {
        json!({ "name": name, "image": "pause" })
    }

    fn sidecar(name: &str, requests: Value) -> Value {
        json!({ "name": name, "image": "pause", "restartPolicy": "Always",
                "resources": { "requests": requests } })
    }

    fn list(entries: &[(&str, &str)]) -> ResourceList {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    /// Cases after component-helpers' TestPodRequests / TestPodResourceRequests.
    #[test]
    fn test_pod_requests() {
        struct Case {
            name: &'static str,
            spec: Value,
            opts: PodRequestOptions,
            want: ResourceList,
        }
        let cases = vec![
            Case {
                name: "no containers",
                spec: json!({ "containers": [] }),
                opts: PodRequestOptions::default(),
                want: list(&[]),
            },
            Case {
                name: "two container resources",
                spec: json!({ "containers": [
                    container("a", json!({"cpu": "2", "memory": "1Gi"})),
                    container("b", json!({"cpu": "1500m"})),
                ]}),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "3500m"), ("memory", "1Gi")]),
            },
            Case {
                name: "init container max",
                spec: json!({
                    "initContainers": [
                        container("i1", json!({"cpu": "2"})),
                        container("i2", json!({"cpu": "1", "memory": "2Gi"})),
                    ],
                    "containers": [container("a", json!({"cpu": "1", "memory": "1Gi"}))],
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "2"), ("memory", "2Gi")]),
            },
            Case {
                name: "pod overhead excluded",
                spec: json!({
                    "containers": [container("a", json!({"cpu": "1"}))],
                    "overhead": {"cpu": "250m", "memory": "120Mi"},
                }),
                opts: PodRequestOptions {
                    exclude_overhead: true,
                    ..Default::default()
                },
                want: list(&[("cpu", "1")]),
            },
            Case {
                name: "pod overhead included",
                spec: json!({
                    "containers": [container("a", json!({"cpu": "1"}))],
                    "overhead": {"cpu": "250m", "memory": "120Mi"},
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "1250m"), ("memory", "120Mi")]),
            },
            Case {
                name: "restartable init container",
                // sidecar 1 cpu runs alongside the main container (1 cpu): 2; the init
                // container before it (1 cpu) alone is less.
                spec: json!({
                    "initContainers": [
                        container("i1", json!({"cpu": "1"})),
                        sidecar("s1", json!({"cpu": "1"})),
                    ],
                    "containers": [container("a", json!({"cpu": "1"}))],
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "2")]),
            },
            Case {
                name: "multiple restartable init containers",
                spec: json!({
                    "initContainers": [
                        container("i1", json!({"cpu": "10"})),
                        sidecar("s1", json!({"cpu": "1"})),
                        sidecar("s2", json!({"cpu": "2"})),
                        sidecar("s3", json!({"cpu": "3"})),
                    ],
                    "containers": [container("a", json!({"cpu": "1"}))],
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "10")]),
            },
            Case {
                name: "multiple restartable and regular init containers",
                // i2 runs with s1 and s2 (1 + 2 + 5 = 8) > sidecars + main (1+2+3+1 = 7).
                spec: json!({
                    "initContainers": [
                        container("i1", json!({"cpu": "5"})),
                        sidecar("s1", json!({"cpu": "1"})),
                        sidecar("s2", json!({"cpu": "2"})),
                        container("i2", json!({"cpu": "5"})),
                        sidecar("s3", json!({"cpu": "3"})),
                    ],
                    "containers": [container("a", json!({"cpu": "1"}))],
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "8")]),
            },
            Case {
                name: "restartable init container regular init container larger",
                spec: json!({
                    "initContainers": [
                        sidecar("s1", json!({"cpu": "1"})),
                        container("i1", json!({"cpu": "5"})),
                    ],
                    "containers": [container("a", json!({"cpu": "1"}))],
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "6")]),
            },
            Case {
                name: "extended resource and hugepages",
                spec: json!({ "containers": [
                    container("a", json!({"example.com/gpu": "1", "hugepages-2Mi": "4Mi"})),
                    container("b", json!({"example.com/gpu": "2"})),
                ]}),
                opts: PodRequestOptions::default(),
                want: list(&[("example.com/gpu", "3"), ("hugepages-2Mi", "4Mi")]),
            },
            Case {
                name: "pod-level resources replace cpu and memory",
                spec: json!({
                    "resources": { "requests": {"cpu": "2", "memory": "1Gi"} },
                    "containers": [
                        container("a", json!({"cpu": "500m", "memory": "100Mi", "example.com/gpu": "1"})),
                        container("b", json!({"cpu": "500m"})),
                    ],
                    "overhead": {"cpu": "100m"},
                }),
                opts: PodRequestOptions::default(),
                want: list(&[
                    ("cpu", "2100m"),
                    ("memory", "1Gi"),
                    ("example.com/gpu", "1"),
                ]),
            },
            Case {
                name: "pod-level resources only cpu set",
                spec: json!({
                    "resources": { "requests": {"cpu": "2"} },
                    "containers": [container("a", json!({"cpu": "500m", "memory": "100Mi"}))],
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("cpu", "2"), ("memory", "100Mi")]),
            },
            Case {
                name: "pod-level resources skipped",
                spec: json!({
                    "resources": { "requests": {"cpu": "2", "memory": "1Gi"} },
                    "containers": [container("a", json!({"cpu": "500m"}))],
                }),
                opts: PodRequestOptions {
                    skip_pod_level_resources: true,
                    ..Default::default()
                },
                want: list(&[("cpu", "500m")]),
            },
            Case {
                name: "pod-level resources with only unsupported names are not set",
                spec: json!({
                    "resources": { "requests": {"example.com/gpu": "4"} },
                    "containers": [container("a", json!({"example.com/gpu": "1"}))],
                }),
                opts: PodRequestOptions::default(),
                want: list(&[("example.com/gpu", "1")]),
            },
            Case {
                name: "non-missing container requests",
                spec: json!({
                    "initContainers": [bare("i1"), sidecar("s1", json!({"memory": "1Mi"}))],
                    "containers": [
                        bare("a"),
                        container("b", json!({"cpu": "0", "memory": "0"})),
                        container("c", json!({"cpu": "1"})),
                    ],
                }),
                opts: PodRequestOptions {
                    non_missing_container_requests: Some(list(&[
                        ("cpu", "100m"),
                        ("memory", "200Mi"),
                    ])),
                    ..Default::default()
                },
                // containers: cpu 100m + 0 + 1 + sidecar 100m; memory 200Mi + 0 + 200Mi + 1Mi.
                // init i1 with s1 before it? s1 comes after, so i1 alone: 100m / 200Mi.
                want: list(&[("cpu", "1200m"), ("memory", "401Mi")]),
            },
        ];
        for case in cases {
            let got = pod_requests(&pod(case.spec), &case.opts).unwrap();
            assert_eq!(got, case.want, "{}", case.name);
        }
    }

    /// Go adds quantities, then converts: two containers asking memory 128m make 1 byte.
    #[test]
    fn test_sum_before_rounding() {
        let p = pod(json!({ "containers": [
            container("a", json!({"memory": "128m", "cpu": "0.1m"})),
            container("b", json!({"memory": "128m", "cpu": "0.1m"})),
        ]}));
        let r = pod_resources(&p).unwrap();
        assert_eq!(r.requests.memory, 1);
        assert_eq!(r.requests.milli_cpu, 2);
        assert_eq!(r.non_zero_memory, 1);
        assert_eq!(r.non_zero_milli_cpu, 2);
    }

    /// After kube-scheduler's TestCalculateResource / NodeInfo tests: defaults for missing
    /// requests go to every container, init and sidecar included; explicit zero stays zero.
    #[test]
    fn test_calculate_resource() {
        struct Case {
            name: &'static str,
            spec: Value,
            requests: Resource,
            non0_cpu: i64,
            non0_mem: i64,
        }
        let res = |cpu: i64, mem: i64| Resource {
            milli_cpu: cpu,
            memory: mem,
            ..Default::default()
        };
        let cases = vec![
            Case {
                name: "requestless container",
                spec: json!({ "containers": [bare("a")] }),
                requests: res(0, 0),
                non0_cpu: 100,
                non0_mem: 200 * MI,
            },
            Case {
                name: "1X container with requests",
                spec: json!({ "containers": [container("a", json!({"cpu": "250m", "memory": "1Gi"}))] }),
                requests: res(250, GI),
                non0_cpu: 250,
                non0_mem: GI,
            },
            Case {
                name: "explicit zero requests",
                spec: json!({ "containers": [container("a", json!({"cpu": "0", "memory": "0"}))] }),
                requests: res(0, 0),
                non0_cpu: 0,
                non0_mem: 0,
            },
            Case {
                name: "2X container, one without requests",
                spec: json!({ "containers": [
                    container("a", json!({"cpu": "1", "memory": "1Gi"})),
                    bare("b"),
                ]}),
                requests: res(1000, GI),
                non0_cpu: 1100,
                non0_mem: GI + 200 * MI,
            },
            Case {
                name: "init container without requests takes the max",
                spec: json!({
                    "initContainers": [bare("i")],
                    "containers": [container("a", json!({"cpu": "50m", "memory": "10Mi"}))],
                }),
                requests: res(50, 10 * MI),
                non0_cpu: 100,
                non0_mem: 200 * MI,
            },
            Case {
                name: "sidecar without requests adds defaults",
                spec: json!({
                    "initContainers": [sidecar("s", json!({}))],
                    "containers": [container("a", json!({"cpu": "50m", "memory": "10Mi"}))],
                }),
                requests: res(50, 10 * MI),
                non0_cpu: 150,
                non0_mem: 210 * MI,
            },
            Case {
                name: "overhead counts in both",
                spec: json!({
                    "containers": [bare("a")],
                    "overhead": {"cpu": "10m", "memory": "1Mi"},
                }),
                requests: res(10, MI),
                non0_cpu: 110,
                non0_mem: 201 * MI,
            },
            Case {
                name: "pod-level resources set for cpu and memory",
                spec: json!({
                    "resources": { "requests": {"cpu": "2", "memory": "1Gi"} },
                    "containers": [bare("a"), bare("b")],
                }),
                requests: res(2000, GI),
                non0_cpu: 2000,
                non0_mem: GI,
            },
            Case {
                name: "pod-level resources set for cpu only",
                // memory named nowhere: every container gets 200Mi.
                spec: json!({
                    "resources": { "requests": {"cpu": "2"} },
                    "containers": [bare("a"), bare("b")],
                }),
                requests: res(2000, 0),
                non0_cpu: 2000,
                non0_mem: 400 * MI,
            },
            Case {
                name: "pod-level resources set, memory in one container only",
                // memory is in the requests, so no default at all: b adds nothing.
                spec: json!({
                    "resources": { "requests": {"cpu": "2"} },
                    "containers": [container("a", json!({"memory": "10Mi"})), bare("b")],
                }),
                requests: res(2000, 10 * MI),
                non0_cpu: 2000,
                non0_mem: 10 * MI,
            },
            Case {
                name: "pod-level hugepages only still sets pod-level resources",
                spec: json!({
                    "resources": { "requests": {"hugepages-2Mi": "2Mi"} },
                    "containers": [container("a", json!({"cpu": "1"})), bare("b")],
                }),
                requests: Resource {
                    milli_cpu: 1000,
                    scalar_resources: [("hugepages-2Mi".to_string(), 2 * MI)].into(),
                    ..Default::default()
                },
                non0_cpu: 1000,
                non0_mem: 400 * MI,
            },
        ];
        for case in cases {
            let got = pod_resources(&pod(case.spec)).unwrap();
            assert_eq!(got.requests, case.requests, "{} requests", case.name);
            assert_eq!(
                got.non_zero_milli_cpu, case.non0_cpu,
                "{} non0 cpu",
                case.name
            );
            assert_eq!(got.non_zero_memory, case.non0_mem, "{} non0 mem", case.name);
        }
    }

    /// After kube-scheduler's TestCalculatePodResourcesWithResize: max of spec, status
    /// resources and allocated resources per container, status only when infeasible.
    #[test]
    fn test_calculate_pod_resources_with_resize() {
        let spec = json!({ "containers": [
            container("c1", json!({"cpu": "500m", "memory": "100Mi"})),
            container("c2", json!({"cpu": "100m"})),
        ]});
        let statuses = |conditions: Value| {
            json!({
                "conditions": conditions,
                "containerStatuses": [{
                    "name": "c1", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                    "allocatedResources": {"cpu": "700m", "memory": "50Mi"},
                    "resources": { "requests": {"cpu": "300m", "memory": "100Mi"} },
                }],
            })
        };
        let cases = [
            ("resize in progress", json!([]), 800, 100 * MI),
            (
                "resize infeasible",
                json!([{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]),
                800,
                100 * MI,
            ),
            (
                "resize deferred",
                json!([{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]),
                800,
                100 * MI,
            ),
        ];
        for (name, conditions, cpu, mem) in cases {
            let p = pod_with_status(spec.clone(), statuses(conditions));
            let r = pod_resources(&p).unwrap();
            assert_eq!(
                (r.requests.milli_cpu, r.requests.memory),
                (cpu, mem),
                "{name}"
            );
            // Spec-only PodRequests ignores the status.
            let spec_only = pod_requests(&p, &PodRequestOptions::default()).unwrap();
            assert_eq!(
                spec_only,
                list(&[("cpu", "600m"), ("memory", "100Mi")]),
                "{name}"
            );
        }

        // Infeasible drops the (larger) spec request: status 300m vs allocated 200m.
        let p = pod_with_status(
            json!({ "containers": [container("c1", json!({"cpu": "1"}))] }),
            json!({
                "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
                "containerStatuses": [{
                    "name": "c1", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                    "allocatedResources": {"cpu": "200m"},
                    "resources": { "requests": {"cpu": "300m"} },
                }],
            }),
        );
        assert_eq!(pod_resources(&p).unwrap().requests.milli_cpu, 300);
        let with_status = pod_requests_with_status(&p, &PodRequestOptions::default()).unwrap();
        assert_eq!(with_status, list(&[("cpu", "300m")]));

        // No status.resources: the status is not looked at, even with allocated resources.
        let p = pod_with_status(
            json!({ "containers": [container("c1", json!({"cpu": "1"}))] }),
            json!({ "containerStatuses": [{
                "name": "c1", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                "allocatedResources": {"cpu": "5"},
            }]}),
        );
        assert_eq!(pod_resources(&p).unwrap().requests.milli_cpu, 1000);

        // Regular init containers ignore their status; sidecars use it.
        let p = pod_with_status(
            json!({
                "initContainers": [container("i", json!({"cpu": "1"})), sidecar("s", json!({"cpu": "1"}))],
                "containers": [container("c", json!({"cpu": "1"}))],
            }),
            json!({ "initContainerStatuses": [
                { "name": "i", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                  "resources": { "requests": {"cpu": "9"} } },
                { "name": "s", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                  "resources": { "requests": {"cpu": "3"} } },
            ]}),
        );
        // sidecar 3 + main 1 = 4; i (spec 1) alone = 1.
        assert_eq!(pod_resources(&p).unwrap().requests.milli_cpu, 4000);
    }

    #[test]
    fn test_resource_from_list() {
        let l = list(&[
            ("cpu", "1500m"),
            ("memory", "128m"),
            ("ephemeral-storage", "1Gi"),
            ("pods", "110"),
            ("example.com/gpu", "2"),
            ("hugepages-2Mi", "0"),
            ("kubernetes.io/batch", "3"),
            ("attachable-volumes-csi-x", "39"),
            ("storage", "5"),
            ("requests.example.com/gpu", "7"),
            ("foo", "8"),
        ]);
        let r = Resource::from_list(&l);
        assert_eq!(r.milli_cpu, 1500);
        assert_eq!(r.memory, 1);
        assert_eq!(r.ephemeral_storage, GI);
        assert_eq!(r.allowed_pod_number, 110);
        let scalars: Vec<(&str, i64)> = r
            .scalar_resources
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        assert_eq!(
            scalars,
            vec![
                ("attachable-volumes-csi-x", 39),
                ("example.com/gpu", 2),
                ("hugepages-2Mi", 0),
                ("kubernetes.io/batch", 3),
            ]
        );
        assert_eq!(r.scalar("example.com/gpu"), 2);
        assert_eq!(r.scalar("nvidia.com/gpu"), 0);
    }

    #[test]
    fn test_resource_add_sub() {
        let a = Resource::from_list(&list(&[
            ("cpu", "1"),
            ("memory", "1Gi"),
            ("example.com/gpu", "1"),
        ]));
        let b = Resource::from_list(&list(&[
            ("cpu", "250m"),
            ("pods", "1"),
            ("nvidia.com/gpu", "2"),
        ]));
        let mut sum = a.clone();
        sum.add(&b);
        assert_eq!(sum.milli_cpu, 1250);
        assert_eq!(sum.memory, GI);
        assert_eq!(sum.allowed_pod_number, 1);
        assert_eq!(sum.scalar("example.com/gpu"), 1);
        assert_eq!(sum.scalar("nvidia.com/gpu"), 2);
        sum.sub(&b);
        assert_eq!(sum.milli_cpu, a.milli_cpu);
        assert_eq!(sum.scalar("nvidia.com/gpu"), 0);
        assert!(sum.scalar_resources.contains_key("nvidia.com/gpu"));
        sum.sub(&a);
        assert_eq!(
            (sum.milli_cpu, sum.memory, sum.allowed_pod_number),
            (0, 0, 0)
        );
    }

    /// After apimachinery's TestIsExtendedResourceName / scheduler's IsScalarResourceName.
    #[test]
    fn test_resource_names() {
        let table: &[(&str, bool, bool, bool)] = &[
            // name, extended, hugepage, scalar
            ("cpu", false, false, false),
            ("memory", false, false, false),
            ("pods", false, false, false),
            ("ephemeral-storage", false, false, false),
            ("example.com/gpu", true, false, true),
            ("nvidia.com/gpu", true, false, true),
            ("example.com/dongle_1.x", true, false, true),
            ("kubernetes.io/foo", false, false, true),
            ("foo.kubernetes.io/bar", false, false, true),
            ("hugepages-2Mi", false, true, true),
            ("hugepages-1Gi", false, true, true),
            ("attachable-volumes-aws-ebs", false, false, true),
            ("requests.example.com/gpu", false, false, false),
            ("Example.com/gpu", false, false, false),
            ("example.com/", false, false, false),
            ("/gpu", false, false, false),
            ("a/b/c", false, false, false),
            ("example.com/-gpu", false, false, false),
            ("example..com/gpu", false, false, false),
            ("example.com/GPU", true, false, true),
            ("foo", false, false, false),
        ];
        for &(name, ext, huge, scalar) in table {
            assert_eq!(is_extended_resource_name(name), ext, "{name} extended");
            assert_eq!(is_hugepage_resource_name(name), huge, "{name} hugepage");
            assert_eq!(is_scalar_resource_name(name), scalar, "{name} scalar");
        }
        let long_name = format!("example.com/{}", "a".repeat(64));
        assert!(!is_extended_resource_name(&long_name));
        let ok_name = format!("example.com/{}", "a".repeat(63));
        assert!(is_extended_resource_name(&ok_name));
    }

    #[test]
    fn test_parse_errors_name_the_field() {
        let p = pod(json!({
            "initContainers": [
                container("i0", json!({"memory": "1Gi"})),
                container("i1", json!({"memory": "2Gb"})),
            ],
            "containers": [container("a", json!({"cpu": "1"}))],
        }));
        let err = pod_requests(&p, &PodRequestOptions::default()).unwrap_err();
        assert_eq!(
            err.field,
            "spec.initContainers[1].resources.requests.memory"
        );
        assert_eq!(err.value, "2Gb");
        assert!(err.to_string().starts_with("spec.initContainers[1].resources.requests.memory: invalid quantity \"2Gb\": quantities must match"));

        let cases = [
            (
                json!({"containers": [container("a", json!({"cpu": "1i"}))]}),
                "spec.containers[0].resources.requests.cpu",
            ),
            (
                json!({"containers": [bare("a")], "overhead": {"memory": "x"}}),
                "spec.overhead.memory",
            ),
            (
                json!({"containers": [bare("a")], "resources": {"requests": {"cpu": "1..0"}}}),
                "spec.resources.requests.cpu",
            ),
        ];
        for (spec, field) in cases {
            let err = pod_resources(&pod(spec)).unwrap_err();
            assert_eq!(err.field, field);
        }

        let p = pod_with_status(
            json!({"containers": [bare("a")]}),
            json!({"containerStatuses": [{
                "name": "a", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                "resources": { "requests": {"cpu": "bad"} },
            }]}),
        );
        assert_eq!(
            pod_resources(&p).unwrap_err().field,
            "status.containerStatuses[0].resources.requests.cpu"
        );
        // Spec-only requests do not read the status.
        assert!(pod_requests(&p, &PodRequestOptions::default()).is_ok());
    }

    #[test]
    fn test_parse_resource_list() {
        let map: BTreeMap<String, ApiQuantity> = [
            ("cpu".to_string(), ApiQuantity("4".into())),
            ("memory".to_string(), ApiQuantity(" 15896300Ki ".into())),
            ("pods".to_string(), ApiQuantity("110".into())),
        ]
        .into();
        let l = parse_resource_list(&map).unwrap();
        assert_eq!(l["memory"], Quantity::parse("15896300Ki").unwrap());
        let r = Resource::from_list(&l);
        assert_eq!(
            (r.milli_cpu, r.memory, r.allowed_pod_number),
            (4000, 15_896_300 * 1024, 110)
        );

        let bad: BTreeMap<String, ApiQuantity> = [
            ("cpu".to_string(), ApiQuantity("4".into())),
            ("memory".to_string(), ApiQuantity("1 Gi".into())),
        ]
        .into();
        let (name, err) = parse_resource_list(&bad).unwrap_err();
        assert_eq!(name, "memory");
        assert_eq!(err.kind(), crate::quantity::QuantityErrorKind::Format);
    }
}
