//! DRAConsumableCapacity's arithmetic, as kube-scheduler v1.36's incubating allocator
//! does it (`consumable_capacity.go`): how much of each capacity of a device a request
//! consumes (its `capacity.requests`, rounded up by the capacity's `requestPolicy`:
//! `validRange` from `min` in `step`s, or the next of `validValues`; the policy's
//! `default`, else the whole capacity, when the request names no amount), whether that
//! amount obeys the policy, and whether it fits beside what allocated claims and the
//! allocation in progress already consume.
//!
//! Amounts are milli units (a [`Quantity`]'s exact value); like Go's `Value()`, the
//! step arithmetic works in whole units, rounding a fraction up.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::resource::v1::{CapacityRequestPolicy, DeviceCapacity};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kubesched_framework::quantity::Quantity;

/// An amount of a capacity: its exact value and, when it is a quantity as written in
/// an object, that text (what an allocation result repeats).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Amount {
    /// The value in milli units.
    pub milli: i128,
    /// The quantity as written, when the amount was not computed.
    pub text: Option<String>,
}

impl Amount {
    /// The amount a written quantity stands for; `None` when it does not parse (objects
    /// are validated when read, so only a malformed API object gets here).
    pub fn parse(q: &ApiQuantity) -> Option<Amount> {
        Quantity::parse(&q.0).ok().map(|v| Amount {
            milli: v.milli(),
            text: Some(q.0.clone()),
        })
    }

    fn computed(milli: i128) -> Amount {
        Amount { milli, text: None }
    }

    /// The amount as a quantity for an allocation result: the text it was written with,
    /// else the canonical form of a whole number of units (a binary suffix when exact,
    /// as Go's `BinarySI` quantities print).
    pub fn to_quantity(&self) -> ApiQuantity {
        if let Some(t) = &self.text {
            return ApiQuantity(t.clone());
        }
        if self.milli % 1000 != 0 {
            return ApiQuantity(format!("{}m", self.milli));
        }
        let mut value = self.milli / 1000;
        let mut suffix = "";
        if value != 0 {
            for s in ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] {
                if value % 1024 != 0 {
                    break;
                }
                value /= 1024;
                suffix = s;
            }
        }
        ApiQuantity(format!("{value}{suffix}"))
    }

    /// Go's `Value()`: whole units, a fraction rounded away from zero.
    fn units(&self) -> i128 {
        let whole = self.milli / 1000;
        if self.milli % 1000 == 0 {
            whole
        } else if self.milli > 0 {
            whole + 1
        } else {
            whole - 1
        }
    }
}

/// A request's `capacity.requests`, by capacity name.
pub type CapacityRequests = BTreeMap<String, Amount>;

/// Why a device's capacity cannot serve a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Unfit {
    /// The request names a capacity the device does not have (the allocator skips
    /// the device).
    Undefined,
    /// The amount breaks the capacity's policy or does not fit.
    NoRoom,
}

fn amount(q: &ApiQuantity) -> Amount {
    Amount::parse(q).unwrap_or_else(|| Amount::computed(0))
}

/// How much of `capacity` a request consumes: `requested` rounded up by the policy,
/// or the policy's default, or the whole capacity (`calculateConsumedCapacity`).
fn consumed(requested: Option<&Amount>, capacity: &DeviceCapacity) -> Amount {
    let policy = capacity.request_policy.as_ref();
    let Some(requested) = requested else {
        return match policy.and_then(|p| p.default.as_ref()) {
            Some(d) => amount(d),
            None => amount(&capacity.value),
        };
    };
    let Some(policy) = policy else {
        return requested.clone();
    };
    if let Some(range) = &policy.valid_range {
        let min = amount(&range.min);
        if requested.milli < min.milli {
            return min;
        }
        let Some(step) = range.step.as_ref().map(amount) else {
            return requested.clone();
        };
        let (req, base, step) = (requested.units(), min.units(), step.units());
        if step <= 0 {
            return requested.clone();
        }
        let added = req - base;
        let n = added / step + i128::from(added % step != 0);
        return Amount::computed((base + step * n) * 1000);
    }
    if let Some(values) = &policy.valid_values {
        for v in values {
            let v = amount(v);
            if requested.milli <= v.milli {
                return v;
            }
        }
    }
    requested.clone()
}

/// Whether an amount breaks the capacity's policy (`violatesPolicy`): over the range's
/// `max` or off its `step`s, or not one of `validValues`; the default never does.
fn violates(consumed: &Amount, policy: Option<&CapacityRequestPolicy>) -> bool {
    let Some(policy) = policy else {
        return false;
    };
    if policy
        .default
        .as_ref()
        .is_some_and(|d| amount(d).milli == consumed.milli)
    {
        return false;
    }
    if let Some(range) = &policy.valid_range {
        if range
            .max
            .as_ref()
            .is_some_and(|m| consumed.milli > amount(m).milli)
        {
            return true;
        }
        if let Some(step) = range.step.as_ref().map(amount) {
            let step = step.units();
            if step > 0 {
                return (consumed.units() - amount(&range.min).units()) % step != 0;
            }
        }
        return false;
    }
    match policy.valid_values.as_deref() {
        Some(values) if !values.is_empty() => {
            !values.iter().any(|v| amount(v).milli == consumed.milli)
        }
        _ => false,
    }
}

/// Whether the request fits the device's capacities beside `allocated` (what allocated
/// claims consume) and `allocating` (what this allocation attempt took so far)
/// (`CmpRequestOverCapacity`).
pub fn fits(
    requests: &CapacityRequests,
    capacities: Option<&BTreeMap<String, DeviceCapacity>>,
    allocated: Option<&HashMap<String, i128>>,
    allocating: Option<&HashMap<String, i128>>,
) -> Result<(), Unfit> {
    let empty = BTreeMap::new();
    let capacities = capacities.unwrap_or(&empty);
    if requests.keys().any(|name| !capacities.contains_key(name)) {
        return Err(Unfit::Undefined);
    }
    for (name, capacity) in capacities {
        let used = consumed(requests.get(name), capacity);
        if violates(&used, capacity.request_policy.as_ref()) {
            return Err(Unfit::NoRoom);
        }
        let total = used.milli
            + allocated.and_then(|a| a.get(name)).copied().unwrap_or(0)
            + allocating.and_then(|a| a.get(name)).copied().unwrap_or(0);
        if total > amount(&capacity.value).milli {
            return Err(Unfit::NoRoom);
        }
    }
    Ok(())
}

/// What the request consumes of every capacity of the device
/// (`GetConsumedCapacityFromRequest`).
pub fn consumption(
    requests: &CapacityRequests,
    capacities: Option<&BTreeMap<String, DeviceCapacity>>,
) -> BTreeMap<String, Amount> {
    capacities
        .into_iter()
        .flatten()
        .map(|(name, c)| (name.clone(), consumed(requests.get(name), c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::resource::v1::CapacityRequestPolicyRange;

    fn q(s: &str) -> ApiQuantity {
        ApiQuantity(s.into())
    }

    fn capacity(value: &str, policy: Option<CapacityRequestPolicy>) -> DeviceCapacity {
        DeviceCapacity {
            value: q(value),
            request_policy: policy,
        }
    }

    fn requests(pairs: &[(&str, &str)]) -> CapacityRequests {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), Amount::parse(&q(v)).unwrap()))
            .collect()
    }

    #[test]
    fn a_range_rounds_up_from_min_in_steps_and_the_default_fills_a_missing_request() {
        let c = capacity(
            "10Gi",
            Some(CapacityRequestPolicy {
                default: Some(q("1Gi")),
                valid_range: Some(CapacityRequestPolicyRange {
                    min: q("1Gi"),
                    step: Some(q("1Gi")),
                    max: Some(q("4Gi")),
                }),
                valid_values: None,
            }),
        );
        let gi = 1i128 << 30;
        let caps = BTreeMap::from([("bw".to_string(), c)]);
        let used = consumption(&requests(&[("bw", "2500Mi")]), Some(&caps));
        assert_eq!(used["bw"].milli, 3 * gi * 1000);
        assert_eq!(used["bw"].to_quantity().0, "3Gi");
        let used = consumption(&requests(&[]), Some(&caps));
        assert_eq!(used["bw"].to_quantity().0, "1Gi");
        assert_eq!(
            fits(&requests(&[("bw", "3Gi")]), Some(&caps), None, None),
            Ok(())
        );
        // Over max.
        assert_eq!(
            fits(&requests(&[("bw", "5Gi")]), Some(&caps), None, None),
            Err(Unfit::NoRoom)
        );
        // Beside 8Gi consumed, 3Gi does not fit in 10Gi.
        let allocated = HashMap::from([("bw".to_string(), 8 * gi * 1000)]);
        assert_eq!(
            fits(
                &requests(&[("bw", "3Gi")]),
                Some(&caps),
                Some(&allocated),
                None
            ),
            Err(Unfit::NoRoom)
        );
        assert_eq!(
            fits(&requests(&[("other", "1")]), Some(&caps), None, None),
            Err(Unfit::Undefined)
        );
    }

    #[test]
    fn valid_values_round_up_to_the_next_and_a_larger_request_breaks_the_policy() {
        let c = capacity(
            "4Gi",
            Some(CapacityRequestPolicy {
                default: None,
                valid_range: None,
                valid_values: Some(vec![q("1Gi"), q("2Gi"), q("4Gi")]),
            }),
        );
        let caps = BTreeMap::from([("bw".to_string(), c)]);
        assert_eq!(
            consumption(&requests(&[("bw", "1500Mi")]), Some(&caps))["bw"]
                .to_quantity()
                .0,
            "2Gi"
        );
        assert_eq!(
            fits(&requests(&[("bw", "5Gi")]), Some(&caps), None, None),
            Err(Unfit::NoRoom)
        );
        // No request and no default: the whole capacity.
        assert_eq!(
            consumption(&requests(&[]), Some(&caps))["bw"]
                .to_quantity()
                .0,
            "4Gi"
        );
    }
}
