//! `ElasticQuotaInfo` and `ElasticQuotaInfos` (pkg/capacityscheduling/elasticquota.go):
//! a namespace's min, max and used, in kube-scheduler's `framework.Resource` integers,
//! and the comparisons PreFilter and preemption make with them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kubesched_framework::PodInfo;
use kubesched_framework::resource::{Resource, parse_resource_list};

/// `UpperBoundOfMax`: a max that names no value for a scalar resource.
pub const UPPER_BOUND_OF_MAX: i64 = i64::MAX;
/// `LowerBoundOfMin`: a min that names no value for a scalar resource.
pub const LOWER_BOUND_OF_MIN: i64 = 0;

/// `ElasticQuotaInfos`: the quotas by namespace.
pub type ElasticQuotaInfos = BTreeMap<String, ElasticQuotaInfo>;

/// `ElasticQuotaInfo`: one namespace's quota and the pods counted in `used`.
#[derive(Clone, Debug, PartialEq)]
pub struct ElasticQuotaInfo {
    /// The namespace.
    pub namespace: String,
    /// The pods (by UID, `framework.GetPodKey`) whose requests are in `used`, with
    /// those requests.
    pods: BTreeMap<String, Resource>,
    /// `spec.min` (cpu, memory and ephemeral-storage 0 when absent).
    pub min: Resource,
    /// `spec.max` (cpu, memory and ephemeral-storage at `i64::MAX` when absent).
    pub max: Resource,
    /// The requests of the counted pods.
    pub used: Resource,
}

/// `makeResourceListForBound`: cpu (milli), memory and ephemeral-storage at `bound`.
fn bound(value: i64) -> Resource {
    Resource {
        milli_cpu: value,
        memory: value,
        ephemeral_storage: value,
        ..Resource::default()
    }
}

/// A resource list as `framework.NewResource` reads it.
fn resource(list: &BTreeMap<String, ApiQuantity>) -> Resource {
    parse_resource_list(list)
        .map(|l| Resource::from_list(&l))
        .unwrap_or_default()
}

impl ElasticQuotaInfo {
    /// `newElasticQuotaInfo` with no pods.
    pub fn new(
        namespace: &str,
        min: Option<&BTreeMap<String, ApiQuantity>>,
        max: Option<&BTreeMap<String, ApiQuantity>>,
    ) -> ElasticQuotaInfo {
        ElasticQuotaInfo {
            namespace: namespace.to_string(),
            pods: BTreeMap::new(),
            min: min.map_or_else(|| bound(LOWER_BOUND_OF_MIN), resource),
            max: max.map_or_else(|| bound(UPPER_BOUND_OF_MAX), resource),
            used: Resource::default(),
        }
    }

    /// `addPodIfNotPresent`.
    pub fn add_pod_if_not_present(&mut self, pod: &PodInfo) {
        if !self.pods.contains_key(pod.uid()) {
            let request = compute_pod_resource_request(pod);
            self.used.add(&request);
            self.pods.insert(pod.uid().to_string(), request);
        }
    }

    /// `deletePodIfPresent`.
    pub fn delete_pod_if_present(&mut self, pod: &PodInfo) {
        self.delete_uid(pod.uid());
    }

    /// `deletePodIfPresent` by the pod's UID.
    pub fn delete_uid(&mut self, uid: &str) {
        if let Some(request) = self.pods.remove(uid) {
            self.used.sub(&request);
        }
    }

    /// The UIDs of the counted pods.
    pub fn pod_uids(&self) -> impl Iterator<Item = &String> {
        self.pods.keys()
    }

    /// `usedOverMinWith`: `request + used > min` in some resource.
    pub fn used_over_min_with(&self, request: &Resource) -> bool {
        cmp2(request, &self.used, &self.min, LOWER_BOUND_OF_MIN)
    }

    /// `usedOverMaxWith`: `request + used > max` in some resource.
    pub fn used_over_max_with(&self, request: &Resource) -> bool {
        cmp2(request, &self.used, &self.max, UPPER_BOUND_OF_MAX)
    }

    /// `usedOverMin`: `used > min` in some resource.
    pub fn used_over_min(&self) -> bool {
        cmp2(
            &self.used,
            &Resource::default(),
            &self.min,
            LOWER_BOUND_OF_MIN,
        )
    }
}

/// `ElasticQuotaInfos.aggregatedUsedOverMinWith`: the sum of every quota's used, plus
/// `request`, above the sum of their mins in some resource.
pub fn aggregated_used_over_min_with(infos: &ElasticQuotaInfos, request: &Resource) -> bool {
    let mut used = Resource::default();
    let mut min = Resource::default();
    for info in infos.values() {
        used.add(&info.used);
        min.add(&info.min);
    }
    used.add(request);
    cmp2(&used, &Resource::default(), &min, LOWER_BOUND_OF_MIN)
}

/// `cmp2`: `x1 + x2 > y` in cpu, memory, ephemeral-storage or pods, or in a scalar
/// resource of `x1` (against `bound` when `y` does not name it).
fn cmp2(x1: &Resource, x2: &Resource, y: &Resource, bound: i64) -> bool {
    if x1.milli_cpu.wrapping_add(x2.milli_cpu) > y.milli_cpu
        || x1.memory.wrapping_add(x2.memory) > y.memory
        || x1.ephemeral_storage.wrapping_add(x2.ephemeral_storage) > y.ephemeral_storage
        || x1.allowed_pod_number.wrapping_add(x2.allowed_pod_number) > y.allowed_pod_number
    {
        return true;
    }
    x1.scalar_resources.iter().any(|(name, q)| {
        let limit = y.scalar_resources.get(name).copied().unwrap_or(bound);
        q.wrapping_add(x2.scalar(name)) > limit
    })
}

/// `computePodResourceRequest`: the sum of the containers' requests, raised to any
/// init container's request that is larger (`SetMaxResource`: not pods), plus the
/// overhead.
pub fn compute_pod_resource_request(pod: &PodInfo) -> Resource {
    let spec = pod.spec();
    let requests = |c: &k8s_openapi::api::core::v1::Container| {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .map(resource)
            .unwrap_or_default()
    };
    let mut result = Resource::default();
    for c in &spec.containers {
        result.add(&requests(c));
    }
    for c in spec.init_containers.iter().flatten() {
        let r = requests(c);
        result.milli_cpu = result.milli_cpu.max(r.milli_cpu);
        result.memory = result.memory.max(r.memory);
        result.ephemeral_storage = result.ephemeral_storage.max(r.ephemeral_storage);
        for (name, v) in &r.scalar_resources {
            let e = result.scalar_resources.entry(name.clone()).or_insert(0);
            *e = (*e).max(*v);
        }
    }
    if let Some(overhead) = &spec.overhead {
        result.add(&resource(overhead));
    }
    result
}
