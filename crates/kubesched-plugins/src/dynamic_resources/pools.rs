//! The resource pools one node sees (kube-scheduler's `GatherPools`): the slices of each
//! pool's newest generation that serve the node, whether the pool is complete and
//! valid, and, with DRAPartitionableDevices, its shared counter sets (from slices with
//! `sharedCounters`, whatever node they name) and the pool's device slices that serve
//! other nodes (their allocated devices consume the same counters).
//!
//! Two variants, as kube-scheduler selects its allocator by the DRA gates: "stable"
//! (every incubating gate off, v1.35's defaults) counts a pool's slices for the node
//! only; "incubating" (DRADeviceTaints, DRAPartitionableDevices,
//! DRAConsumableCapacity or DRADeviceBindingConditions on) looks at the whole pool when
//! the node's slices do not add up, drops a pool whose newer generation serves other
//! nodes, and, with DRAPartitionableDevices off, ignores slices with `sharedCounters`
//! or `perDeviceNodeSelection`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use k8s_openapi::api::core::v1::NodeSelector as ApiNodeSelector;
use kubesched_framework::quantity::Quantity;
use kubesched_framework::{DraCatalog, NodeInfo};

use super::allocator::{AllocatorFeatures, Devices};
use crate::node_affinity::NodeSelector;

/// The pools that serve each node, gathered on first use.
pub type PoolCache = RwLock<HashMap<String, Arc<Vec<Pool>>>>;

/// A counter set: counter name → value in milli units.
pub type Counters = BTreeMap<String, i128>;

/// A resource pool as one node sees it.
#[derive(Debug, Default)]
pub struct Pool {
    /// The driver.
    pub driver: String,
    /// The pool's name.
    pub name: String,
    /// Slice indexes (into the catalog's slices) of the devices that serve the node.
    pub slices: Vec<usize>,
    /// Slice indexes of the pool's device slices that serve other nodes
    /// (DRAPartitionableDevices: their allocated devices consume the pool's counters).
    pub other_slices: Vec<usize>,
    /// The pool's shared counter sets by name (DRAPartitionableDevices).
    pub counter_sets: BTreeMap<String, Counters>,
    generation: i64,
    /// Not every slice of the pool is there: nothing is allocated from it.
    pub incomplete: bool,
    /// Duplicate device names, or counters that do not exist: nothing is allocated
    /// from it.
    pub invalid: bool,
}

/// Whether a slice (or a device with per-device node selection) serves the node.
pub fn node_matches(
    node: &NodeInfo,
    name: Option<&str>,
    all: Option<bool>,
    selector: Option<&ApiNodeSelector>,
) -> bool {
    match (
        name.filter(|n| !n.is_empty()),
        all.unwrap_or(false),
        selector,
    ) {
        (Some(n), _, _) => node.name() == n,
        (None, true, _) => true,
        (None, false, Some(s)) => NodeSelector::from_api(s).matches(node),
        _ => false,
    }
}

fn has_counters(state: &DraCatalog, i: usize) -> bool {
    state.slices()[i]
        .spec
        .shared_counters
        .as_ref()
        .is_some_and(|c| !c.is_empty())
}

fn serves(state: &DraCatalog, i: usize, node: &NodeInfo) -> bool {
    let s = &state.slices()[i].spec;
    if s.node_name.as_deref().is_some_and(|n| !n.is_empty())
        || s.all_nodes.unwrap_or(false)
        || s.node_selector.is_some()
    {
        node_matches(
            node,
            s.node_name.as_deref(),
            s.all_nodes,
            s.node_selector.as_ref(),
        )
    } else if s.per_device_node_selection.unwrap_or(false) {
        s.devices.iter().flatten().any(|d| {
            node_matches(
                node,
                d.node_name.as_deref(),
                d.all_nodes,
                d.node_selector.as_ref(),
            )
        })
    } else {
        false
    }
}

/// The pools that serve `node`, in the order their first slice appears.
pub fn gather_pools(state: &DraCatalog, node: &NodeInfo, features: AllocatorFeatures) -> Vec<Pool> {
    let slices = state.slices();
    let incubating = features.incubating();
    let partitionable = features.partitionable_devices;
    let mut candidates = state.slices_for_node(node.name());
    if partitionable {
        candidates.extend_from_slice(state.counter_slices());
        candidates.sort_unstable();
        candidates.dedup();
    }
    let mut pools: Vec<Pool> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for i in candidates {
        let s = &slices[i].spec;
        let counters = has_counters(state, i);
        if incubating && !partitionable && (s.per_device_node_selection.is_some() || counters) {
            continue;
        }
        if !((partitionable && counters) || serves(state, i, node)) {
            continue;
        }
        let key = (s.driver.clone(), s.pool.name.clone());
        match index.get(&key) {
            None => {
                index.insert(key, pools.len());
                pools.push(Pool {
                    driver: s.driver.clone(),
                    name: s.pool.name.clone(),
                    slices: vec![i],
                    generation: s.pool.generation,
                    ..Pool::default()
                });
            }
            Some(&p) => {
                let pool = &mut pools[p];
                if s.pool.generation < pool.generation {
                    continue;
                }
                if s.pool.generation > pool.generation {
                    pool.slices.clear();
                    pool.generation = s.pool.generation;
                }
                pool.slices.push(i);
            }
        }
    }
    if !incubating {
        for pool in &mut pools {
            let first = &slices[pool.slices[0]].spec.pool;
            pool.incomplete = pool.slices.len() as i64 != first.resource_slice_count;
            pool.invalid = duplicate_names(state, &pool.slices);
        }
        return pools;
    }
    let mut out = Vec::with_capacity(pools.len());
    for mut pool in pools {
        let count = slices[pool.slices[0]].spec.pool.resource_slice_count;
        let mut all = None;
        if pool.slices.len() as i64 != count {
            // The node's slices do not add up: look at the whole pool.
            let mut same = Vec::new();
            let mut obsolete = false;
            for &i in state.pool_slices(&pool.driver, &pool.name) {
                let g = slices[i].spec.pool.generation;
                if g > pool.generation {
                    obsolete = true;
                    break;
                }
                if g == pool.generation {
                    same.push(i);
                }
            }
            if obsolete {
                // A newer generation is being published, for other nodes only.
                continue;
            }
            if same.len() as i64 != count {
                out.push(Pool {
                    driver: pool.driver,
                    name: pool.name,
                    incomplete: true,
                    ..Pool::default()
                });
                continue;
            }
            all = Some(same);
        }
        build_pool(state, &mut pool, partitionable, all);
        out.push(pool);
    }
    out
}

fn duplicate_names(state: &DraCatalog, slices: &[usize]) -> bool {
    let mut names = HashSet::new();
    slices
        .iter()
        .flat_map(|&i| state.slices()[i].spec.devices.iter().flatten())
        .any(|d| !names.insert(d.name.as_str()))
}

/// Splits a complete pool into device slices and counter sets and validates them
/// (`buildPool`); `all` is every slice of the generation when the node does not see
/// them all.
fn build_pool(state: &DraCatalog, pool: &mut Pool, partitionable: bool, all: Option<Vec<usize>>) {
    let slices = state.slices();
    let mut counter_slices = Vec::new();
    if partitionable {
        let (c, d): (Vec<usize>, Vec<usize>) =
            pool.slices.iter().partition(|&&i| has_counters(state, i));
        counter_slices = c;
        pool.slices = d;
    }
    if duplicate_names(state, &pool.slices) {
        pool.invalid = true;
        return;
    }
    if !partitionable {
        return;
    }
    for &i in &counter_slices {
        for set in slices[i].spec.shared_counters.iter().flatten() {
            if pool.counter_sets.contains_key(&set.name) {
                pool.invalid = true;
                return;
            }
            let counters = set
                .counters
                .iter()
                .map(|(n, c)| (n.clone(), milli(&c.value.0)))
                .collect();
            pool.counter_sets.insert(set.name.clone(), counters);
        }
    }
    // Counter slices were split off; the pool's own slices are `pool.slices` plus them.
    let seen: HashSet<usize> = pool.slices.iter().chain(&counter_slices).copied().collect();
    if !consumption_valid(state, &pool.counter_sets, &pool.slices) {
        pool.invalid = true;
        return;
    }
    if let Some(all) = all {
        pool.other_slices = all.into_iter().filter(|i| !seen.contains(i)).collect();
        if !consumption_valid(state, &pool.counter_sets, &pool.other_slices) {
            pool.invalid = true;
        }
    }
}

/// Whether every counter the slices' devices consume exists in the pool's sets.
fn consumption_valid(
    state: &DraCatalog,
    sets: &BTreeMap<String, Counters>,
    slices: &[usize],
) -> bool {
    slices
        .iter()
        .flat_map(|&i| state.slices()[i].spec.devices.iter().flatten())
        .flat_map(|d| d.consumes_counters.iter().flatten())
        .all(|c| {
            sets.get(&c.counter_set)
                .is_some_and(|set| c.counters.keys().all(|n| set.contains_key(n)))
        })
}

/// A quantity's milli value (objects are validated when read; a malformed one is 0).
pub fn milli(q: &str) -> i128 {
    Quantity::parse(q).map_or(0, |q| q.milli())
}

/// The pools that serve `node`, gathered once per node.
pub fn pools_of(state: &DraCatalog, devices: &Devices<'_>, node: &NodeInfo) -> Arc<Vec<Pool>> {
    let cached = devices
        .pools
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(node.name())
        .cloned();
    match cached {
        Some(p) => p,
        None => {
            let p = Arc::new(gather_pools(state, node, devices.features));
            devices
                .pools
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(node.name().to_owned(), Arc::clone(&p));
            p
        }
    }
}
