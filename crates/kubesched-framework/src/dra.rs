//! [`DraState`]: the dynamic resource allocation objects the DynamicResources plugin
//! reads (DeviceClasses, ResourceSlices, ResourceClaims), shared by every profile the
//! way kube-scheduler's `SharedDRAManager` is, and the claim assume state that holds
//! across scheduling cycles.
//!
//! Classes, slices and templates form a [`DraCatalog`], replaced as a whole when the
//! runtime's watches show a change (never during a simulation). Claims change too: DynamicResources' Reserve
//! marks a claim's allocation as in flight ([`DraState::signal_pending_allocation`]) and
//! its PreBind writes the allocation and `reservedFor` into the claim
//! ([`DraState::assume_claim`]), as kube-scheduler's claim assume cache holds them, so
//! every later pod sees the claim allocated and its devices taken.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};

/// One device: driver, pool and device name (kube-scheduler's `DeviceID`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// The driver.
    pub driver: String,
    /// The pool.
    pub pool: String,
    /// The device's name in the pool.
    pub device: String,
}

impl DeviceId {
    /// A device id from its three parts.
    pub fn new(driver: &str, pool: &str, device: &str) -> DeviceId {
        DeviceId {
            driver: driver.to_owned(),
            pool: pool.to_owned(),
            device: device.to_owned(),
        }
    }
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// The claims and what they hold.
#[derive(Debug, Default)]
struct Claims {
    /// `namespace/name` → the claim as the scheduler last saw or assumed it.
    by_key: HashMap<String, Arc<ResourceClaim>>,
    /// Devices of allocated claims, with how many claims hold each (admin access lets
    /// several claims hold one device).
    allocated: HashMap<DeviceId, usize>,
    /// `namespace/name` → an allocation decided in Reserve and not yet written by
    /// PreBind (kube-scheduler's in-flight allocations).
    in_flight: HashMap<String, AllocationResult>,
}

impl Claims {
    fn count(&mut self, claim: &ResourceClaim, add: bool) {
        for id in allocation_devices(claim.status.as_ref().and_then(|s| s.allocation.as_ref())) {
            if add {
                *self.allocated.entry(id).or_default() += 1;
            } else if let Some(n) = self.allocated.get_mut(&id) {
                *n -= 1;
                if *n == 0 {
                    self.allocated.remove(&id);
                }
            }
        }
    }
}

/// What allocated claims hold, as DRA's allocator reads it (kube-scheduler's
/// `AllocatedState`): devices held whole, devices held in shares (a result with a
/// `shareID`, counted so only while DRAConsumableCapacity is on), and the capacity
/// those shares consume.
#[derive(Clone, Debug, Default)]
pub struct AllocatedDevices {
    /// Devices allocated whole.
    pub devices: HashSet<DeviceId>,
    /// Devices with at least one share allocated.
    pub shared: HashSet<DeviceId>,
    /// Per shared device, the capacity its shares consume, by capacity name, in milli
    /// units.
    pub capacity: HashMap<DeviceId, HashMap<String, i128>>,
}

impl AllocatedDevices {
    /// Whether the device is allocated whole or in part (kube-scheduler's
    /// `IsDeviceAllocated`).
    pub fn is_allocated(&self, id: &DeviceId) -> bool {
        self.devices.contains(id) || self.shared.contains(id) || self.capacity.contains_key(id)
    }

    /// Adds what an allocation result holds.
    pub fn add(&mut self, allocation: &AllocationResult, consumable_capacity: bool) {
        for r in allocation
            .devices
            .iter()
            .flat_map(|d| d.results.iter().flatten())
        {
            let id = DeviceId::new(&r.driver, &r.pool, &r.device);
            if !(consumable_capacity && r.share_id.is_some()) {
                self.devices.insert(id);
                continue;
            }
            if let Some(consumed) = &r.consumed_capacity {
                let sums = self.capacity.entry(id.clone()).or_default();
                for (name, q) in consumed {
                    // Written by a scheduler or validated when read: a bad value counts 0.
                    let milli = crate::quantity::Quantity::parse(&q.0).map_or(0, |q| q.milli());
                    *sums.entry(name.clone()).or_default() += milli;
                }
            }
            self.shared.insert(id);
        }
    }
}

/// The devices an allocation result names.
pub fn allocation_devices(allocation: Option<&AllocationResult>) -> Vec<DeviceId> {
    allocation
        .and_then(|a| a.devices.as_ref())
        .map(|d| {
            d.results
                .iter()
                .flatten()
                .map(|r| DeviceId::new(&r.driver, &r.pool, &r.device))
                .collect()
        })
        .unwrap_or_default()
}

/// The classes, slices and templates of a cluster, indexed once: what the allocator
/// reads. Immutable; the runtime replaces the whole catalog when one of them changes
/// ([`DraState::set_catalog`]), and its [`DraCatalog::generation`] tells caches built
/// on an older one apart.
#[derive(Debug, Default)]
pub struct DraCatalog {
    classes: HashMap<String, Arc<DeviceClass>>,
    slices: Vec<Arc<ResourceSlice>>,
    /// Node name → indexes of the slices with that `spec.nodeName`, ascending.
    node_slices: HashMap<String, Vec<usize>>,
    /// Indexes of the slices not bound to one node by name (`allNodes`,
    /// `nodeSelector`, per-device node selection), ascending.
    shared_slices: Vec<usize>,
    /// Indexes of the slices that define shared counters, ascending.
    counter_slices: Vec<usize>,
    /// (driver, pool) → indexes of the pool's slices (every generation), ascending.
    pool_slices: HashMap<(String, String), Vec<usize>>,
    templates: HashMap<String, Arc<ResourceClaimTemplate>>,
    /// Extended resource name → the name of the class that backs it (DRAExtendedResource).
    extended_resources: HashMap<String, String>,
    generation: u64,
}

/// The prefix of a class's implicit extended resource name,
/// `deviceclass.resource.kubernetes.io/<class>`.
pub const DEVICE_CLASS_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// The annotation that marks the claim kube-scheduler creates for a pod's extended
/// resources backed by DRA.
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str =
    "resource.kubernetes.io/extended-resource-claim";

/// kube-scheduler's resolver of extended resources (its `ExtendedResourceCache`): each
/// class backs its implicit name; an explicit `spec.extendedResourceName` goes to the
/// newest class that names it, the alphabetically first on a tie.
fn extended_resources(classes: &HashMap<String, Arc<DeviceClass>>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut explicit: HashMap<&str, &Arc<DeviceClass>> = HashMap::new();
    for (name, class) in classes {
        out.insert(
            format!("{DEVICE_CLASS_RESOURCE_PREFIX}{name}"),
            name.clone(),
        );
        let Some(resource) = class
            .spec
            .as_ref()
            .and_then(|s| s.extended_resource_name.as_deref())
        else {
            continue;
        };
        let better = match explicit.get(resource) {
            None => true,
            Some(other) => {
                let created = |c: &DeviceClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
                match created(class).cmp(&created(other)) {
                    std::cmp::Ordering::Equal => class.metadata.name < other.metadata.name,
                    o => o == std::cmp::Ordering::Greater,
                }
            }
        };
        if better {
            explicit.insert(resource, class);
        }
    }
    for (resource, class) in explicit {
        out.insert(
            resource.to_owned(),
            class.metadata.name.clone().unwrap_or_default(),
        );
    }
    out
}

static GENERATIONS: AtomicU64 = AtomicU64::new(1);

impl DraCatalog {
    /// A catalog of these objects (slices in the order given, which is the order the
    /// allocator walks them in), with a generation no other catalog has.
    pub fn new(
        classes: impl IntoIterator<Item = Arc<DeviceClass>>,
        slices: impl IntoIterator<Item = Arc<ResourceSlice>>,
        templates: impl IntoIterator<Item = Arc<ResourceClaimTemplate>>,
    ) -> DraCatalog {
        let mut catalog = DraCatalog {
            classes: classes
                .into_iter()
                .map(|c| (c.metadata.name.clone().unwrap_or_default(), c))
                .collect(),
            slices: slices.into_iter().collect(),
            templates: templates
                .into_iter()
                .map(|t| {
                    let key = key_of(t.metadata.namespace.as_deref(), t.metadata.name.as_deref());
                    (key, t)
                })
                .collect(),
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
            ..DraCatalog::default()
        };
        catalog.extended_resources = extended_resources(&catalog.classes);
        for (i, slice) in catalog.slices.iter().enumerate() {
            match slice.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
                Some(node) => catalog
                    .node_slices
                    .entry(node.to_owned())
                    .or_default()
                    .push(i),
                None => catalog.shared_slices.push(i),
            }
            if slice
                .spec
                .shared_counters
                .as_ref()
                .is_some_and(|c| !c.is_empty())
            {
                catalog.counter_slices.push(i);
            }
            catalog
                .pool_slices
                .entry((slice.spec.driver.clone(), slice.spec.pool.name.clone()))
                .or_default()
                .push(i);
        }
        catalog
    }

    /// The class that backs the extended resource `name` (its implicit
    /// `deviceclass.resource.kubernetes.io/<class>` name or its
    /// `spec.extendedResourceName`), if any.
    pub fn class_for_extended_resource(&self, name: &str) -> Option<&Arc<DeviceClass>> {
        self.classes.get(self.extended_resources.get(name)?)
    }

    /// The slices that define shared counters (`spec.sharedCounters`), as indexes into
    /// [`DraCatalog::slices`], ascending.
    pub fn counter_slices(&self) -> &[usize] {
        &self.counter_slices
    }

    /// Every slice of the pool `driver`/`pool`, whatever node it serves and whatever
    /// its generation, as indexes into [`DraCatalog::slices`], ascending.
    pub fn pool_slices(&self, driver: &str, pool: &str) -> &[usize] {
        self.pool_slices
            .get(&(driver.to_owned(), pool.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    /// This catalog's generation: a new catalog has a new one.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// A DeviceClass by name.
    pub fn device_class(&self, name: &str) -> Option<&Arc<DeviceClass>> {
        self.classes.get(name)
    }

    /// A ResourceClaimTemplate by namespace and name.
    pub fn claim_template(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<&Arc<ResourceClaimTemplate>> {
        self.templates.get(&format!("{namespace}/{name}"))
    }

    /// Every ResourceSlice, in order.
    pub fn slices(&self) -> &[Arc<ResourceSlice>] {
        &self.slices
    }

    /// The slices that may serve `node`, as indexes into [`DraCatalog::slices`],
    /// ascending: those with `spec.nodeName` equal to the node's name and every slice
    /// that is not bound to one node by name (whose `allNodes`, `nodeSelector` or
    /// per-device selection the caller checks).
    pub fn slices_for_node(&self, node: &str) -> Vec<usize> {
        let own = self.node_slices.get(node).map_or(&[][..], Vec::as_slice);
        let mut out = Vec::with_capacity(own.len() + self.shared_slices.len());
        out.extend_from_slice(own);
        out.extend_from_slice(&self.shared_slices);
        if !own.is_empty() && !self.shared_slices.is_empty() {
            out.sort_unstable();
        }
        out
    }
}

/// The DRA objects of a cluster and the scheduler's assumptions about its claims.
#[derive(Debug, Default)]
pub struct DraState {
    catalog: RwLock<Arc<DraCatalog>>,
    claims: RwLock<Claims>,
    /// Why the objects cannot be had (the API server does not serve them, or refuses
    /// them to this scheduler); `None` when they can.
    unavailable: RwLock<Option<String>>,
}

fn key_of(namespace: Option<&str>, name: Option<&str>) -> String {
    format!(
        "{}/{}",
        namespace.filter(|n| !n.is_empty()).unwrap_or("default"),
        name.unwrap_or_default()
    )
}

fn claim_key(claim: &ResourceClaim) -> String {
    key_of(
        claim.metadata.namespace.as_deref(),
        claim.metadata.name.as_deref(),
    )
}

/// A resourceVersion as a number (etcd's revisions), for "is this newer" as
/// kube-scheduler's assume cache asks it; `None` when it is not one.
fn version(claim: &ResourceClaim) -> Option<u64> {
    claim.metadata.resource_version.as_deref()?.parse().ok()
}

impl DraState {
    /// The state of a cluster with these objects (slices in the order given, which is
    /// the order the allocator walks them in). Objects without a namespace are in
    /// `default`.
    pub fn new(
        classes: impl IntoIterator<Item = Arc<DeviceClass>>,
        slices: impl IntoIterator<Item = Arc<ResourceSlice>>,
        claims: impl IntoIterator<Item = Arc<ResourceClaim>>,
        templates: impl IntoIterator<Item = Arc<ResourceClaimTemplate>>,
    ) -> DraState {
        let state = DraState {
            catalog: RwLock::new(Arc::new(DraCatalog::new(classes, slices, templates))),
            ..DraState::default()
        };
        for claim in claims {
            state.assume_claim(claim);
        }
        state
    }

    /// The classes, slices and templates as they are now.
    pub fn catalog(&self) -> Arc<DraCatalog> {
        self.catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the classes, slices and templates (the runtime, when a watch shows a
    /// change).
    pub fn set_catalog(&self, catalog: DraCatalog) {
        *self.catalog.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(catalog);
    }

    /// Why the DRA objects cannot be had, when they cannot.
    pub fn unavailable(&self) -> Option<String> {
        self.unavailable
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Says why the DRA objects cannot be had (`None`: they can again).
    pub fn set_unavailable(&self, reason: Option<String>) {
        *self.unavailable.write().unwrap_or_else(|e| e.into_inner()) = reason;
    }

    /// A claim as a watch shows it: it replaces what the scheduler knew, unless that
    /// is newer (an object PreBind wrote and the watch has not shown yet), as
    /// kube-scheduler's assume cache keeps it.
    pub fn claim_changed(&self, claim: Arc<ResourceClaim>) {
        let key = claim_key(&claim);
        let mut claims = self.write();
        if let Some(old) = claims.by_key.get(&key)
            && let (Some(old_v), Some(new_v)) = (version(old), version(&claim))
            && new_v < old_v
        {
            return;
        }
        claims.count(&claim, true);
        if let Some(old) = claims.by_key.insert(key, claim) {
            claims.count(&old, false);
        }
    }

    /// A claim the watch shows deleted.
    pub fn claim_deleted(&self, namespace: &str, name: &str) {
        let mut claims = self.write();
        if let Some(old) = claims.by_key.remove(&format!("{namespace}/{name}")) {
            claims.count(&old, false);
        }
    }

    /// The full list of claims (a relist): claims not in it are gone.
    pub fn claims_listed(&self, listed: Vec<Arc<ResourceClaim>>) {
        let keys: HashSet<String> = listed.iter().map(|c| claim_key(c)).collect();
        {
            let mut claims = self.write();
            let gone: Vec<String> = claims
                .by_key
                .keys()
                .filter(|k| !keys.contains(*k))
                .cloned()
                .collect();
            for k in gone {
                if let Some(old) = claims.by_key.remove(&k) {
                    claims.count(&old, false);
                }
            }
        }
        for claim in listed {
            self.claim_changed(claim);
        }
    }

    /// The claim `namespace/name` as the scheduler sees it: the cluster's object, or
    /// what PreBind last wrote into it.
    pub fn claim(&self, namespace: &str, name: &str) -> Option<Arc<ResourceClaim>> {
        self.read()
            .by_key
            .get(&format!("{namespace}/{name}"))
            .cloned()
    }

    /// The claim kube-scheduler made for the extended resources of the pod
    /// `namespace/name` with `uid` (annotated as such, the pod its controller), if any.
    pub fn extended_resource_claim(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Option<Arc<ResourceClaim>> {
        let claims = self.read();
        claims
            .by_key
            .values()
            .filter(|c| c.metadata.namespace.as_deref().unwrap_or("default") == namespace)
            .filter(|c| {
                c.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION))
                    .is_some_and(|v| v == "true")
            })
            .find(|c| {
                c.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.name == name && o.controller == Some(true) && o.uid == uid)
            })
            .cloned()
    }

    /// What allocated claims and allocations in flight hold; with
    /// `consumable_capacity` (DRAConsumableCapacity), results with a `shareID` are
    /// shares of their device rather than the whole device.
    pub fn allocated_state(&self, consumable_capacity: bool) -> AllocatedDevices {
        let claims = self.read();
        let mut out = AllocatedDevices::default();
        for claim in claims.by_key.values() {
            if let Some(a) = claim.status.as_ref().and_then(|s| s.allocation.as_ref()) {
                out.add(a, consumable_capacity);
            }
        }
        for allocation in claims.in_flight.values() {
            out.add(allocation, consumable_capacity);
        }
        out
    }

    /// Every device held by an allocated claim or by an allocation in flight.
    pub fn allocated_devices(&self) -> HashSet<DeviceId> {
        let claims = self.read();
        let mut out: HashSet<DeviceId> = claims.allocated.keys().cloned().collect();
        for allocation in claims.in_flight.values() {
            out.extend(allocation_devices(Some(allocation)));
        }
        out
    }

    /// Replaces the claim (by its namespace and name) with `claim`, as PreBind's API
    /// update and the assume cache do.
    pub fn assume_claim(&self, claim: Arc<ResourceClaim>) {
        let key = claim_key(&claim);
        let mut claims = self.write();
        claims.count(&claim, true);
        if let Some(old) = claims.by_key.insert(key, claim) {
            claims.count(&old, false);
        }
    }

    /// Records that `allocation` was decided for the claim `namespace/name` and is not
    /// written yet: its devices count as taken, and other pods wait for it.
    pub fn signal_pending_allocation(
        &self,
        namespace: &str,
        name: &str,
        allocation: AllocationResult,
    ) {
        self.write()
            .in_flight
            .insert(format!("{namespace}/{name}"), allocation);
    }

    /// Forgets the in-flight allocation of a claim (written, or given up).
    pub fn remove_pending_allocation(&self, namespace: &str, name: &str) {
        self.write()
            .in_flight
            .remove(&format!("{namespace}/{name}"));
    }

    /// Whether an allocation of the claim is in flight.
    pub fn has_pending_allocation(&self, namespace: &str, name: &str) -> bool {
        self.read()
            .in_flight
            .contains_key(&format!("{namespace}/{name}"))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Claims> {
        self.claims.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Claims> {
        self.claims.write().unwrap_or_else(|e| e.into_inner())
    }
}
