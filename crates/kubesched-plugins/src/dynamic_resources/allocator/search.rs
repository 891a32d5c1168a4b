//! The allocator's depth-first search (kube-scheduler's `allocator` in
//! `structured/internal/stable`): the node's pools, the devices a (sub)request may take
//! and whether they are free, trying devices claim by claim and request by request with
//! backtracking, the `matchAttribute` constraints, shared counters and consumable
//! capacity as devices are taken and given back, and the allocation results with their
//! node selectors.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    NodeSelector as ApiNodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
};
use k8s_openapi::api::resource::v1::{
    AllocationResult, Device, DeviceAllocationResult, DeviceAttribute,
    DeviceRequestAllocationResult, DeviceTaint, DeviceToleration, ResourceSlice,
};
use kubesched_framework::{AllocatedDevices, DeviceId, DraCatalog, NodeInfo};

use super::super::capacity::{self, Amount, CapacityRequests};
use super::super::counters::CounterState;
use super::super::pools::{Pool, node_matches, pools_of};
use super::{
    ALLOCATION_RESULTS_MAX_SIZE, ClaimToAllocate, Devices, MatchAttribute, RequestData, claim_key,
};

/// Whether a request's toleration tolerates a device taint (the toleration's effect,
/// when set, must be the taint's; `Exists` matches any value of the key, or any key
/// when the key is empty; `Equal`, the default, the key and the value).
fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    if toleration
        .effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        _ => false,
    }
}

/// A device by its place in the DRA state, and the pool (index into the node's pools)
/// it is allocated from.
#[derive(Clone, Copy)]
struct Candidate {
    slice: usize,
    device: usize,
    pool: usize,
}

struct DeviceResult {
    request: String,
    id: DeviceId,
    slice: usize,
    device: usize,
    admin_access: bool,
    tolerations: Vec<DeviceToleration>,
    /// DRAConsumableCapacity: the share of a device with `allowMultipleAllocations`.
    share: Option<(String, BTreeMap<String, Amount>)>,
}

/// Where the search for the next device of a request starts (kube-scheduler's
/// `deviceLocation`): devices of one request are taken in pool, slice and device
/// order, so each combination is tried once.
#[derive(Clone, Copy, Default)]
pub(super) struct Start {
    pool: usize,
    slice: usize,
    device: usize,
}

struct ConstraintState {
    spec: MatchAttribute,
    value: Option<DeviceAttribute>,
    count: usize,
}

/// What [`Search::deallocate`] gives back besides the result and constraints.
#[derive(Clone, Copy)]
struct Undo {
    shareable: bool,
    consumes: bool,
}

pub(super) enum Stop {
    /// A fatal problem: the whole attempt ends with this error.
    Fatal(String),
    /// The claim would get more than [`ALLOCATION_RESULTS_MAX_SIZE`] devices.
    MaxSizeExceeded,
}

fn lookup_attribute<'d>(
    device: &'d Device,
    driver: &str,
    name: &str,
) -> Option<&'d DeviceAttribute> {
    let attributes = device.attributes.as_ref()?;
    if let Some(a) = attributes.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver {
        return None;
    }
    attributes.get(id)
}

fn same_value(a: &DeviceAttribute, b: &DeviceAttribute) -> bool {
    if let Some(v) = &a.string {
        b.string.as_ref() == Some(v)
    } else if let Some(v) = a.int {
        b.int == Some(v)
    } else if let Some(v) = a.bool {
        b.bool == Some(v)
    } else if let Some(v) = &a.version {
        b.version.as_ref() == Some(v)
    } else {
        false
    }
}

pub(super) struct Search<'a> {
    state: &'a DraCatalog,
    node: &'a NodeInfo,
    devices: &'a Devices<'a>,
    allocated: &'a AllocatedDevices,
    claims: &'a [ClaimToAllocate],
    pub(super) pools: Arc<Vec<Pool>>,
    /// (slice, device, claim, request, subrequest) → selectors match.
    matches: HashMap<(usize, usize, usize, usize, usize), bool>,
    /// (claim, request, subrequest) → the devices of an `All` request.
    all_devices: HashMap<(usize, usize, usize), Vec<Candidate>>,
    /// Per claim, per request: the chosen subrequest.
    pub(super) selected: Vec<Vec<usize>>,
    /// Device → the claims it is being allocated for in this attempt.
    allocating: HashMap<(usize, usize), Vec<usize>>,
    /// Device → the capacity this attempt's shares of it consume (DRAConsumableCapacity).
    allocating_capacity: HashMap<(usize, usize), HashMap<String, i128>>,
    /// Shared counters (DRAPartitionableDevices).
    counters: CounterState,
    constraints: Vec<Vec<ConstraintState>>,
    results: Vec<Vec<DeviceResult>>,
}

impl<'a> Search<'a> {
    pub(super) fn new(
        state: &'a DraCatalog,
        devices: &'a Devices<'a>,
        allocated: &'a AllocatedDevices,
        claims: &'a [ClaimToAllocate],
        node: &'a NodeInfo,
    ) -> Search<'a> {
        Search {
            state,
            node,
            devices,
            allocated,
            claims,
            pools: pools_of(state, devices, node),
            matches: HashMap::new(),
            all_devices: HashMap::new(),
            selected: vec![Vec::new(); claims.len()],
            allocating: HashMap::new(),
            allocating_capacity: HashMap::new(),
            counters: CounterState::default(),
            constraints: claims
                .iter()
                .map(|c| {
                    c.constraints
                        .iter()
                        .map(|m| ConstraintState {
                            spec: m.clone(),
                            value: None,
                            count: 0,
                        })
                        .collect()
                })
                .collect(),
            results: claims.iter().map(|_| Vec::new()).collect(),
        }
    }

    fn slices(&self) -> &[Arc<ResourceSlice>] {
        self.state.slices()
    }

    /// How many devices of the node's pools match the (sub)request's class and
    /// selectors, and how many of those are free (for admin access, all are).
    pub(super) fn count_matching(
        &mut self,
        ci: usize,
        ri: usize,
        si: usize,
        data: &RequestData,
    ) -> Result<(usize, usize), String> {
        let (mut matching, mut free) = (0, 0);
        let pools = Arc::clone(&self.pools);
        for (p, pool) in pools.iter().enumerate() {
            for &s in &pool.slices {
                let n = self.slices()[s].spec.devices.as_ref().map_or(0, Vec::len);
                for d in 0..n {
                    if self.selectable(ci, ri, si, data, s, d)? {
                        matching += 1;
                        let c = Candidate {
                            slice: s,
                            device: d,
                            pool: p,
                        };
                        if data.admin_access || !self.in_use(c) {
                            free += 1;
                        }
                    }
                }
            }
        }
        Ok((matching, free))
    }

    pub(super) fn collect_all(
        &mut self,
        ci: usize,
        ri: usize,
        si: usize,
        data: &RequestData,
    ) -> Result<usize, String> {
        let mut found = Vec::new();
        let pools = Arc::clone(&self.pools);
        for (p, pool) in pools.iter().enumerate() {
            let id = format!("{}/{}", pool.driver, pool.name);
            if pool.incomplete {
                return Err(format!(
                    "claim {}, request {}: asks for all devices, but resource pool {id} is currently being updated",
                    claim_key(&self.claims[ci].claim),
                    data.full_name()
                ));
            }
            if pool.invalid {
                return Err(format!(
                    "claim {}, request {}: asks for all devices, but resource pool {id} is currently invalid",
                    claim_key(&self.claims[ci].claim),
                    data.full_name()
                ));
            }
            for &s in &pool.slices {
                let n = self.slices()[s].spec.devices.as_ref().map_or(0, Vec::len);
                for d in 0..n {
                    let c = Candidate {
                        slice: s,
                        device: d,
                        pool: p,
                    };
                    if self.selectable(ci, ri, si, data, s, d)? && self.capacity_fits(data, c) {
                        found.push(c);
                    }
                }
            }
        }
        let n = found.len();
        self.all_devices.insert((ci, ri, si), found);
        Ok(n)
    }

    fn id(&self, c: Candidate) -> &DeviceId {
        &self.devices.ids[c.slice][c.device]
    }

    fn device(&self, c: Candidate) -> &Device {
        &self.slices()[c.slice]
            .spec
            .devices
            .as_ref()
            .expect("device index from this slice")[c.device]
    }

    /// DRAConsumableCapacity: whether the request's capacity fits the device beside
    /// what allocated claims and this attempt consume (always, while the gate is off).
    fn capacity_fits(&self, data: &RequestData, c: Candidate) -> bool {
        if !self.devices.features.consumable_capacity {
            return true;
        }
        let empty = CapacityRequests::new();
        capacity::fits(
            data.capacity.as_ref().unwrap_or(&empty),
            self.device(c).capacity.as_ref(),
            self.allocated.capacity.get(self.id(c)),
            self.allocating_capacity.get(&(c.slice, c.device)),
        )
        .is_ok()
    }

    fn selectable(
        &mut self,
        ci: usize,
        ri: usize,
        si: usize,
        data: &RequestData,
        s: usize,
        d: usize,
    ) -> Result<bool, String> {
        if let Some(&m) = self.matches.get(&(s, d, ci, ri, si)) {
            return Ok(m);
        }
        let value = &self.devices.values[s][d];
        let slice = &self.slices()[s].spec;
        let device = &slice
            .devices
            .as_ref()
            .expect("device index from this slice")[d];
        // DRADeviceBindingConditions off: devices with binding conditions are not
        // supported.
        let mut ok = self.devices.features.binding_conditions
            || device.binding_conditions.as_ref().is_none_or(Vec::is_empty);
        for (i, selector) in data.class_selectors.iter().enumerate() {
            if !ok {
                break;
            }
            ok = selector
                .matches_device(self.devices.context, (s, d), value)
                .map_err(|e| {
                    format!(
                        "class {}: selector #{i}: CEL runtime error: {e}",
                        data.class_name
                    )
                })?;
        }
        for (i, selector) in data.selectors.iter().enumerate() {
            if !ok {
                break;
            }
            ok = selector
                .matches_device(self.devices.context, (s, d), value)
                .map_err(|e| {
                    format!(
                        "claim {}: selector #{i}: CEL runtime error: {e}",
                        claim_key(&self.claims[ci].claim)
                    )
                })?;
        }
        if ok && slice.per_device_node_selection.unwrap_or(false) {
            ok = node_matches(
                self.node,
                device.node_name.as_deref(),
                device.all_nodes,
                device.node_selector.as_ref(),
            );
        }
        self.matches.insert((s, d, ci, ri, si), ok);
        Ok(ok)
    }

    fn in_use(&self, c: Candidate) -> bool {
        self.allocated.devices.contains(self.id(c))
            || self
                .allocating
                .get(&(c.slice, c.device))
                .is_some_and(|x| !x.is_empty())
    }

    fn allocating_for(&self, c: Candidate, ci: usize) -> bool {
        self.allocating
            .get(&(c.slice, c.device))
            .is_some_and(|x| x.contains(&ci))
    }

    /// Whether the device allows several allocations (DRAConsumableCapacity).
    fn shareable(&self, c: Candidate) -> bool {
        self.devices.features.consumable_capacity
            && self.device(c).allow_multiple_allocations == Some(true)
    }

    pub(super) fn allocate_one(
        &mut self,
        ci: usize,
        ri: usize,
        si: usize,
        di: usize,
        in_sub: bool,
        start: Start,
    ) -> Result<bool, Stop> {
        if ci >= self.claims.len() {
            return Ok(true);
        }
        let claim = &self.claims[ci];
        if ri >= claim.requests.len() {
            return match self.allocate_one(ci + 1, 0, 0, 0, false, Start::default()) {
                Err(Stop::MaxSizeExceeded) => Ok(false),
                other => other,
            };
        }
        let request = &claim.requests[ri];
        if request.first_available && !in_sub {
            let mut all_exceeded = true;
            for sub in 0..request.alternatives.len() {
                match self.allocate_one(ci, ri, sub, 0, true, Start::default()) {
                    Err(Stop::MaxSizeExceeded) => continue,
                    Err(e) => return Err(e),
                    Ok(true) => {
                        self.selected[ci][ri] = sub;
                        return Ok(true);
                    }
                    Ok(false) => all_exceeded = false,
                }
            }
            return if all_exceeded {
                Err(Stop::MaxSizeExceeded)
            } else {
                Ok(false)
            };
        }
        let data = request.alternatives[si].clone();
        let all = data.count.is_none();
        let needed = match data.count {
            Some(n) => n,
            None => self.all_devices.get(&(ci, ri, si)).map_or(0, Vec::len),
        };
        if all && needed == 0 {
            return Ok(false);
        }
        if di >= needed {
            return self.allocate_one(ci, ri + 1, 0, 0, false, Start::default());
        }
        if self.results[ci].len() + needed - di > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(Stop::MaxSizeExceeded);
        }
        if all {
            let candidate = self.all_devices[&(ci, ri, si)][di];
            let Some(undo) = self.allocate_device(ci, &data, &candidate, true)? else {
                return Ok(false);
            };
            let done = self.allocate_one(ci, ri, si, di + 1, in_sub, Start::default());
            if !matches!(done, Ok(true)) {
                self.deallocate(ci, &data, &candidate, undo);
            }
            return done;
        }
        let pools = Arc::clone(&self.pools);
        for (p, pool) in pools.iter().enumerate().skip(start.pool) {
            if pool.incomplete || pool.invalid {
                continue;
            }
            let first_slice = if p == start.pool { start.slice } else { 0 };
            for (sp, &s) in pool.slices.iter().enumerate().skip(first_slice) {
                let n = self.slices()[s].spec.devices.as_ref().map_or(0, Vec::len);
                let first_device = if p == start.pool && sp == start.slice {
                    start.device
                } else {
                    0
                };
                for d in first_device..n {
                    let candidate = Candidate {
                        slice: s,
                        device: d,
                        pool: p,
                    };
                    if data.admin_access {
                        if self.allocating_for(candidate, ci) {
                            continue;
                        }
                    } else if self.in_use(candidate) {
                        continue;
                    }
                    if !self
                        .selectable(ci, ri, si, &data, s, d)
                        .map_err(Stop::Fatal)?
                    {
                        continue;
                    }
                    if !self.capacity_fits(&data, candidate) {
                        continue;
                    }
                    let Some(undo) = self.allocate_device(ci, &data, &candidate, false)? else {
                        continue;
                    };
                    let next = Start {
                        pool: p,
                        slice: sp,
                        device: d + 1,
                    };
                    match self.allocate_one(ci, ri, si, di + 1, in_sub, next) {
                        Ok(true) => return Ok(true),
                        Ok(false) => self.deallocate(ci, &data, &candidate, undo),
                        Err(e) => {
                            self.deallocate(ci, &data, &candidate, undo);
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    /// Takes the device for the claim if it is free and the constraints allow it
    /// (`allocateDevice`); `Some` with what [`Search::deallocate`] gives back.
    ///
    /// As in kube-scheduler, counters taken before a later check fails (a taint, a
    /// constraint, capacity) are not given back, nor the counters of a shareable device.
    fn allocate_device(
        &mut self,
        ci: usize,
        data: &RequestData,
        c: &Candidate,
        must: bool,
    ) -> Result<Option<Undo>, Stop> {
        let shareable = self.shareable(*c);
        if data.admin_access {
            if !shareable && self.allocating_for(*c, ci) {
                return Ok(None);
            }
        } else if self.in_use(*c) {
            return Ok(None);
        }
        // The slice (an Arc) is cloned, not the device, so the device can be read while
        // the search state changes.
        let slice = Arc::clone(&self.slices()[c.slice]);
        let device = &slice
            .spec
            .devices
            .as_ref()
            .expect("device index from this slice")[c.device];
        let consumes = device
            .consumes_counters
            .as_ref()
            .is_some_and(|x| !x.is_empty());
        let features = self.devices.features;
        if consumes && !features.partitionable_devices {
            return Ok(None);
        }
        let capacity_in_use = self.allocated.capacity.contains_key(self.id(*c))
            || self.allocating_capacity.contains_key(&(c.slice, c.device));
        if consumes && !(shareable && capacity_in_use) {
            let pools = Arc::clone(&self.pools);
            if !self
                .counters
                .take(self.state, &pools[c.pool], device, self.allocated)
            {
                return Ok(None);
            }
        }
        // DRADeviceTaints (off in v1.35, on in v1.36): every taint must be tolerated.
        if features.device_taints
            && !device
                .taints
                .iter()
                .flatten()
                .all(|t| data.tolerations.iter().any(|tol| tolerates(tol, t)))
        {
            return Ok(None);
        }
        let base = data.parent.clone().unwrap_or_else(|| data.name.clone());
        let sub = data.parent.as_ref().map(|_| data.name.clone());
        let constraints = std::mem::take(&mut self.constraints[ci]);
        let mut constraints = constraints;
        let mut added = 0;
        let mut ok = true;
        for constraint in constraints.iter_mut() {
            if !constraint_add(
                constraint,
                &base,
                sub.as_deref(),
                device,
                &slice.spec.driver,
            ) {
                ok = false;
                break;
            }
            added += 1;
        }
        if !ok {
            for constraint in constraints.iter_mut().take(added) {
                constraint_remove(constraint, &base, sub.as_deref());
            }
            self.constraints[ci] = constraints;
            if must {
                return Err(Stop::Fatal(format!(
                    "claim {}, request {}: cannot add device {} because a claim constraint would not be satisfied",
                    claim_key(&self.claims[ci].claim),
                    data.name,
                    self.id(*c)
                )));
            }
            return Ok(None);
        }
        self.constraints[ci] = constraints;
        let entry = self.allocating.entry((c.slice, c.device)).or_default();
        if !shareable {
            entry.push(ci);
        }
        let mut share = None;
        if features.consumable_capacity {
            if !self.capacity_fits(data, *c) {
                return Ok(None);
            }
            if shareable {
                let empty = CapacityRequests::new();
                let consumed = capacity::consumption(
                    data.capacity.as_ref().unwrap_or(&empty),
                    device.capacity.as_ref(),
                );
                let sums = self
                    .allocating_capacity
                    .entry((c.slice, c.device))
                    .or_default();
                for (name, amount) in &consumed {
                    *sums.entry(name.clone()).or_default() += amount.milli;
                }
                share = Some((self.share_id(ci, data, *c), consumed));
            }
        }
        let id = self.id(*c).clone();
        self.results[ci].push(DeviceResult {
            request: data.full_name(),
            id,
            slice: c.slice,
            device: c.device,
            admin_access: data.admin_access,
            tolerations: data.tolerations.clone(),
            share,
        });
        Ok(Some(Undo {
            shareable,
            consumes,
        }))
    }

    /// A share id for a device share: a UUID derived from the claim, the request, the
    /// device and the shares taken so far, so a run is repeatable (kube-scheduler draws
    /// a random one).
    fn share_id(&self, ci: usize, data: &RequestData, c: Candidate) -> String {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (
            claim_key(&self.claims[ci].claim),
            data.full_name(),
            self.id(c),
            self.results[ci].len(),
        )
            .hash(&mut h);
        let a = h.finish();
        self.id(c).hash(&mut h);
        let b = h.finish();
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }

    fn deallocate(&mut self, ci: usize, data: &RequestData, c: &Candidate, undo: Undo) {
        let base = data.parent.clone().unwrap_or_else(|| data.name.clone());
        let sub = data.parent.as_ref().map(|_| data.name.clone());
        for constraint in self.constraints[ci].iter_mut() {
            constraint_remove(constraint, &base, sub.as_deref());
        }
        if let Some(claims) = self.allocating.get_mut(&(c.slice, c.device))
            && let Some(pos) = claims.iter().position(|&x| x == ci)
        {
            claims.remove(pos);
        }
        let result = self.results[ci].pop();
        if undo.shareable {
            if let Some((_, consumed)) = result.and_then(|r| r.share)
                && let Some(sums) = self.allocating_capacity.get_mut(&(c.slice, c.device))
            {
                for (name, amount) in consumed {
                    *sums.entry(name).or_default() -= amount.milli;
                }
                if sums.values().all(|v| *v == 0) {
                    self.allocating_capacity.remove(&(c.slice, c.device));
                }
            }
        } else if undo.consumes && self.devices.features.partitionable_devices {
            let pool = self.pools[c.pool].name.clone();
            let slice = Arc::clone(&self.slices()[c.slice]);
            let device = &slice.spec.devices.as_ref().expect("device index")[c.device];
            self.counters.give_back(&pool, device);
        }
    }

    pub(super) fn finish(&self) -> Vec<AllocationResult> {
        self.results
            .iter()
            .map(|devices| AllocationResult {
                devices: Some(DeviceAllocationResult {
                    results: Some(devices.iter().map(|d| self.device_result(d)).collect()),
                    config: None,
                }),
                node_selector: self.node_selector(devices),
                ..Default::default()
            })
            .collect()
    }

    fn device_result(&self, d: &DeviceResult) -> DeviceRequestAllocationResult {
        let device = self.device(Candidate {
            slice: d.slice,
            device: d.device,
            pool: 0,
        });
        let binding = self.devices.features.binding_conditions;
        let (share_id, consumed_capacity) = match &d.share {
            Some((id, consumed)) => (
                Some(id.clone()),
                (!consumed.is_empty()).then(|| {
                    consumed
                        .iter()
                        .map(|(n, a)| (n.clone(), a.to_quantity()))
                        .collect()
                }),
            ),
            None => (None, None),
        };
        DeviceRequestAllocationResult {
            request: d.request.clone(),
            driver: d.id.driver.clone(),
            pool: d.id.pool.clone(),
            device: d.id.device.clone(),
            admin_access: d.admin_access.then_some(true),
            tolerations: (!d.tolerations.is_empty()).then(|| d.tolerations.clone()),
            share_id,
            consumed_capacity,
            binding_conditions: binding.then(|| device.binding_conditions.clone()).flatten(),
            binding_failure_conditions: binding
                .then(|| device.binding_failure_conditions.clone())
                .flatten(),
            ..Default::default()
        }
    }

    /// The node selector of an allocation: the node of the first node-local device, or
    /// the union of the network-attached slices' selectors (none when every device is
    /// available everywhere).
    fn node_selector(&self, devices: &[DeviceResult]) -> Option<ApiNodeSelector> {
        let mut term = NodeSelectorTerm::default();
        for d in devices {
            let spec = &self.slices()[d.slice].spec;
            let (name, selector) = if spec.per_device_node_selection.unwrap_or(false) {
                let device = spec
                    .devices
                    .iter()
                    .flatten()
                    .find(|x| x.name == d.id.device);
                (
                    device.and_then(|x| x.node_name.clone()),
                    device.and_then(|x| x.node_selector.clone()),
                )
            } else {
                (spec.node_name.clone(), spec.node_selector.clone())
            };
            // The incubating allocator also ties a device that binds to a node to it.
            let binds = self.devices.features.incubating()
                && self
                    .device(Candidate {
                        slice: d.slice,
                        device: d.device,
                        pool: 0,
                    })
                    .binds_to_node
                    == Some(true);
            let name = if binds {
                Some(self.node.name().to_owned())
            } else {
                name
            };
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                return Some(ApiNodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".into(),
                            operator: "In".into(),
                            values: Some(vec![name]),
                        }]),
                        ..Default::default()
                    }],
                });
            }
            if let Some(selector) = selector
                && let [first] = selector.node_selector_terms.as_slice()
            {
                merge_requirements(first.match_fields.as_deref(), &mut term.match_fields);
                merge_requirements(
                    first.match_expressions.as_deref(),
                    &mut term.match_expressions,
                );
            }
        }
        let empty = term.match_fields.as_ref().is_none_or(Vec::is_empty)
            && term.match_expressions.as_ref().is_none_or(Vec::is_empty);
        (!empty).then(|| ApiNodeSelector {
            node_selector_terms: vec![term],
        })
    }
}

fn merge_requirements(
    from: Option<&[NodeSelectorRequirement]>,
    to: &mut Option<Vec<NodeSelectorRequirement>>,
) {
    for r in from.unwrap_or_default() {
        let values: HashSet<&String> = r.values.iter().flatten().collect();
        let list = to.get_or_insert_with(Vec::new);
        let present = list.iter().any(|e| {
            e.key == r.key
                && e.operator == r.operator
                && e.values.iter().flatten().collect::<HashSet<_>>() == values
        });
        if !present {
            list.push(r.clone());
        }
    }
}

fn constraint_applies(c: &ConstraintState, base: &str, sub: Option<&str>) -> bool {
    if c.spec.requests.is_empty() {
        return true;
    }
    match sub {
        None => c.spec.requests.contains(base),
        Some(sub) => {
            c.spec.requests.contains(base) || c.spec.requests.contains(&format!("{base}/{sub}"))
        }
    }
}

fn constraint_add(
    c: &mut ConstraintState,
    base: &str,
    sub: Option<&str>,
    device: &Device,
    driver: &str,
) -> bool {
    if !constraint_applies(c, base, sub) {
        return true;
    }
    let Some(attribute) = lookup_attribute(device, driver, &c.spec.attribute) else {
        return false;
    };
    if c.count == 0 {
        c.value = Some(attribute.clone());
        c.count = 1;
        return true;
    }
    let Some(first) = &c.value else {
        return false;
    };
    if !same_value(attribute, first) {
        return false;
    }
    c.count += 1;
    true
}

fn constraint_remove(c: &mut ConstraintState, base: &str, sub: Option<&str>) {
    if constraint_applies(c, base, sub) {
        c.count = c.count.saturating_sub(1);
    }
}
