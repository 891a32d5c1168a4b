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
        let mut statuses: BTreeMap<&str, ((&str, usize), &ContainerStatus)> = BTreeMap::new();
        let mut resize_infeasible = false;
        if let Some(status) = status.filter(|_| use_status) {
            for (i, cs) in status.container_statuses.iter().flatten().enumerate() {
                statuses.insert(&cs.name, (("status.containerStatuses", i), cs));
            }
            for (i, cs) in status.init_container_statuses.iter().flatten().enumerate() {
                statuses.insert(&cs.name, (("status.initContainerStatuses", i), cs));
            }
            // IsPodResizeInfeasible: the first PodResizePending condition decides.
            resize_infeasible = status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "PodResizePending")
                .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"));
        }

        // Paths are spelled out only for an error: this runs for every pod.
        let parse_container = |c: &Container, (list, i): (&str, usize), status_applies: bool| {
            let spec_requests = parse_list(
                c.resources.as_ref().and_then(|r| r.requests.as_ref()),
                &|| format!("{list}[{i}].resources.requests"),
            )?;
            let restartable = c.restart_policy.as_deref() == Some("Always");
            let mut requests = spec_requests;
            let status = statuses
                .get(c.name.as_str())
                .filter(|_| status_applies)
                .and_then(|(path, cs)| cs.resources.as_ref().map(|res| (path, *cs, res)));
            if let Some((&(status_list, j), cs, res)) = status {
                let status_requests = parse_list(res.requests.as_ref(), &|| {
                    format!("{status_list}[{j}].resources.requests")
                })?;
                let allocated = parse_list(cs.allocated_resources.as_ref(), &|| {
                    format!("{status_list}[{j}].allocatedResources")
                })?;
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
                containers.push(parse_container(c, ("spec.containers", i), use_status)?);
            }
            for (i, c) in spec.init_containers.iter().flatten().enumerate() {
                // Only sidecars take their status into account.
                let sidecar = c.restart_policy.as_deref() == Some("Always");
                init_containers.push(parse_container(
                    c,
                    ("spec.initContainers", i),
                    use_status && sidecar,
                )?);
            }
            if let Some(list) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
                pod_level_requests = Some(parse_list(Some(list), &|| {
                    "spec.resources.requests".to_string()
                })?);
            }
            if let Some(list) = spec.overhead.as_ref() {
                overhead = Some(parse_list(Some(list), &|| "spec.overhead".to_string())?);
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
    path: &dyn Fn() -> String,
) -> Result<ResourceList, PodQuantityError> {
    let mut out = ResourceList::new();
    for (name, q) in list.into_iter().flatten() {
        let v = parse_api_quantity(q).map_err(|source| PodQuantityError {
            field: format!("{}.{name}", path()),
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
mod tests;
