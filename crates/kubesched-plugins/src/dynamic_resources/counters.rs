//! DRAPartitionableDevices' counters during one allocation attempt, as kube-scheduler
//! v1.36's incubating allocator keeps them (`checkAvailableCounters`): a pool's counter
//! sets less what its allocated devices consume (computed once per pool), and what the
//! devices picked so far consume. A device that consumes counters fits while, for
//! every counter of the pool, what is picked stays within what is available.
//!
//! kube-scheduler keys both tables by the pool's name alone (not its driver); so does
//! this, so two drivers' pools of one name share them as they do there.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::resource::v1::Device;
use kubesched_framework::{AllocatedDevices, DeviceId, DraCatalog};

use super::pools::{Counters, Pool, milli};

/// Counter sets by name.
type Sets = BTreeMap<String, Counters>;

/// The counters of the pools touched by one allocation attempt.
#[derive(Default)]
pub struct CounterState {
    /// Pool name → its counter sets less what allocated devices consume.
    available: HashMap<String, Sets>,
    /// Pool name → what the devices picked in this attempt consume.
    consumed: HashMap<String, Sets>,
}

impl CounterState {
    /// Takes the device's counters if they fit; `false` (and nothing taken) otherwise.
    pub fn take(
        &mut self,
        state: &DraCatalog,
        pool: &Pool,
        device: &Device,
        allocated: &AllocatedDevices,
    ) -> bool {
        let available = self
            .available
            .entry(pool.name.clone())
            .or_insert_with(|| available(state, pool, allocated));
        let consumed = self.consumed.entry(pool.name.clone()).or_default();
        for c in device.consumes_counters.iter().flatten() {
            let set = consumed.entry(c.counter_set.clone()).or_default();
            for (name, counter) in &c.counters {
                *set.entry(name.clone()).or_default() += milli(&counter.value.0);
            }
        }
        let fits = available.iter().all(|(set, counters)| {
            counters.iter().all(|(name, value)| {
                let used = consumed
                    .get(set)
                    .and_then(|s| s.get(name))
                    .copied()
                    .unwrap_or(0);
                *value >= used
            })
        });
        if !fits {
            self.give_back(&pool.name, device);
        }
        fits
    }

    /// Gives back what the device consumes (`deallocateCountersForDevice`).
    pub fn give_back(&mut self, pool: &str, device: &Device) {
        let Some(consumed) = self.consumed.get_mut(pool) else {
            return;
        };
        for c in device.consumes_counters.iter().flatten() {
            let set = consumed.entry(c.counter_set.clone()).or_default();
            for (name, counter) in &c.counters {
                *set.entry(name.clone()).or_default() -= milli(&counter.value.0);
            }
        }
    }
}

/// The pool's counter sets less what its allocated devices consume (possibly below
/// zero, which leaves no room).
fn available(state: &DraCatalog, pool: &Pool, allocated: &AllocatedDevices) -> Sets {
    let mut sets = pool.counter_sets.clone();
    for &i in pool.slices.iter().chain(&pool.other_slices) {
        let slice = &state.slices()[i].spec;
        for device in slice.devices.iter().flatten() {
            let id = DeviceId::new(&slice.driver, &slice.pool.name, &device.name);
            if !allocated.is_allocated(&id) {
                continue;
            }
            for c in device.consumes_counters.iter().flatten() {
                let Some(set) = sets.get_mut(&c.counter_set) else {
                    continue;
                };
                for (name, counter) in &c.counters {
                    if let Some(v) = set.get_mut(name) {
                        *v -= milli(&counter.value.0);
                    }
                }
            }
        }
    }
    sets
}
