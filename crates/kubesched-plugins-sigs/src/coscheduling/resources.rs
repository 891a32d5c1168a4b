//! `CheckClusterResource` and `getNodeResource` (core/core.go): whether the cluster's
//! free resources, node by node, cover a PodGroup's `minResources` plus `minMember`
//! pods, and the `resource gap: %v` message when they do not.
//!
//! The message prints a Go `map[v1.ResourceName]resource.Quantity` with `%v`, and
//! `Quantity.String` has a pointer receiver, so each value prints as the struct
//! itself: `{{value scale} {<nil>} cached-string Format}`. This module keeps each
//! quantity as the `int64Amount` Go keeps (value and scale, apimachinery's
//! `ParseQuantity` fast path and `int64Amount.Add`) to print the same. A quantity Go
//! would keep as an `inf.Dec` (a binary suffix with a fraction, more than 18 digits)
//! prints its plain value instead: not checked against Go.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kubesched_framework::Snapshot;
use kubesched_framework::resource::Resource;

/// `resource.Format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    DecimalExponent,
    BinarySI,
    DecimalSI,
}

impl Format {
    fn as_str(self) -> &'static str {
        match self {
            Format::DecimalExponent => "DecimalExponent",
            Format::BinarySI => "BinarySI",
            Format::DecimalSI => "DecimalSI",
        }
    }
}

/// A quantity as Go's `int64Amount` plus its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Amount {
    value: i64,
    scale: i32,
    format: Format,
}

impl Amount {
    fn new(value: i64, format: Format) -> Amount {
        Amount {
            value,
            scale: 0,
            format,
        }
    }

    /// `Quantity.Sub` on the int64 path (`int64Amount.Add` of the negation).
    fn sub(&mut self, y: Amount) {
        if self.value == 0 {
            self.format = y.format;
        }
        let b = Amount {
            value: y.value.saturating_neg(),
            ..y
        };
        if b.value == 0 {
            return;
        }
        if self.value == 0 {
            self.value = b.value;
            self.scale = b.scale;
            return;
        }
        if self.scale == b.scale {
            self.value = self.value.saturating_add(b.value);
        } else if self.scale > b.scale {
            self.value = scale_up(self.value, self.scale - b.scale).saturating_add(b.value);
            self.scale = b.scale;
        } else {
            self.value = self
                .value
                .saturating_add(scale_up(b.value, b.scale - self.scale));
        }
    }

    /// `Quantity.Sign`.
    fn sign(&self) -> i64 {
        self.value.signum()
    }

    /// Go's `%v` of the `Quantity` struct, with no cached string (`Sub` clears it).
    fn go_struct(&self) -> String {
        format!(
            "{{{{{} {}}} {{<nil>}}  {}}}",
            self.value,
            self.scale,
            self.format.as_str()
        )
    }
}

fn scale_up(value: i64, by: i32) -> i64 {
    (0..by).fold(value, |v, _| v.saturating_mul(10))
}

/// `ParseQuantity`'s fast path: a decimal number with an SI, binary or exponent
/// suffix as an `int64Amount`.
fn parse(q: &Quantity) -> Amount {
    let s = q.0.trim();
    let (positive, rest) = match s.strip_prefix('-') {
        Some(r) => (false, r),
        None => (true, s.strip_prefix('+').unwrap_or(s)),
    };
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(end);
    let (num, denom) = number.split_once('.').unwrap_or((number, ""));
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    let sign = |v: i64| if positive { v } else { -v };
    if let Some(exponent) = binary {
        let value: i64 = num.parse().unwrap_or(0);
        return Amount {
            value: sign(value.saturating_mul(1i64 << exponent)),
            scale: 0,
            format: Format::BinarySI,
        };
    }
    let (exponent, format) = match suffix {
        "n" => (-9, Format::DecimalSI),
        "u" => (-6, Format::DecimalSI),
        "m" => (-3, Format::DecimalSI),
        "" => (0, Format::DecimalSI),
        "k" => (3, Format::DecimalSI),
        "M" => (6, Format::DecimalSI),
        "G" => (9, Format::DecimalSI),
        "T" => (12, Format::DecimalSI),
        "P" => (15, Format::DecimalSI),
        "E" => (18, Format::DecimalSI),
        e => (
            e.trim_start_matches(['e', 'E']).parse().unwrap_or(0),
            Format::DecimalExponent,
        ),
    };
    let value: i64 = format!("{num}{denom}").parse().unwrap_or(0);
    Amount {
        value: sign(value),
        scale: exponent - denom.len() as i32,
        format,
    }
}

/// `getNodeResource` as `util.ResourceList` converts it: the node's free resources
/// with the pods of `group` (full name) taken off.
fn node_resource(node: &kubesched_framework::NodeInfo, group: &str) -> BTreeMap<String, Amount> {
    let mut requested: Resource = node.requested().clone();
    let mut pods = node.pods().len() as i64;
    for p in node.pods() {
        let label = p
            .pod()
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(crate::api::POD_GROUP_LABEL))
            .filter(|l| !l.is_empty());
        if label.map(|l| format!("{}/{l}", p.namespace())).as_deref() != Some(group) {
            continue;
        }
        let r = p.requests();
        requested.milli_cpu -= r.milli_cpu;
        requested.memory -= r.memory;
        requested.ephemeral_storage -= r.ephemeral_storage;
        for (k, v) in &r.scalar_resources {
            *requested.scalar_resources.entry(k.clone()).or_default() -= v;
        }
        pods -= 1;
    }
    let allocatable = node.allocatable();
    let mut out = BTreeMap::new();
    out.insert(
        "cpu".to_string(),
        Amount {
            value: allocatable.milli_cpu - requested.milli_cpu,
            scale: -3,
            format: Format::DecimalSI,
        },
    );
    out.insert(
        "memory".to_string(),
        Amount::new(allocatable.memory - requested.memory, Format::BinarySI),
    );
    out.insert(
        "pods".to_string(),
        Amount::new(allocatable.allowed_pod_number - pods, Format::BinarySI),
    );
    out.insert(
        "ephemeral-storage".to_string(),
        Amount::new(
            allocatable.ephemeral_storage - requested.ephemeral_storage,
            Format::BinarySI,
        ),
    );
    for (k, a) in &allocatable.scalar_resources {
        let left = a - requested.scalar_resources.get(k).copied().unwrap_or(0);
        let format = if k.starts_with("hugepages-") {
            Format::BinarySI
        } else {
            Format::DecimalSI
        };
        out.insert(k.clone(), Amount::new(left, format));
    }
    out
}

/// `CheckClusterResource` over the snapshot's nodes in node order, for
/// `minResources` with `pods: minMember` set.
pub(super) fn check_cluster_resource(
    snapshot: &Snapshot,
    min_resources: &BTreeMap<String, Quantity>,
    min_member: i32,
    group: &str,
) -> Result<(), String> {
    let mut request: BTreeMap<String, Amount> = min_resources
        .iter()
        .map(|(k, q)| (k.clone(), parse(q)))
        .collect();
    request.insert(
        "pods".to_string(),
        Amount::new(i64::from(min_member), Format::DecimalSI),
    );
    for node in snapshot.nodes() {
        let free = node_resource(node, group);
        request.retain(|name, quant| {
            let zero = Amount::new(0, Format::DecimalSI);
            quant.sub(free.get(name).copied().unwrap_or(zero));
            quant.sign() > 0
        });
        if request.is_empty() {
            return Ok(());
        }
    }
    let gap: Vec<String> = request
        .iter()
        .map(|(k, v)| format!("{k}:{}", v.go_struct()))
        .collect();
    Err(format!("resource gap: map[{}]", gap.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_to_go_int64_amounts() {
        let q = |s: &str| parse(&Quantity(s.to_string()));
        assert_eq!((q("500m").value, q("500m").scale), (500, -3));
        assert_eq!((q("1.5").value, q("1.5").scale), (15, -1));
        assert_eq!(q("2Gi").value, 2 << 30);
        assert_eq!(q("4").go_struct(), "{{4 0} {<nil>}  DecimalSI}");
    }

    #[test]
    fn subtraction_aligns_scales_as_int64_amount_add() {
        let mut cpu = parse(&Quantity("4".into()));
        cpu.sub(Amount {
            value: 1500,
            scale: -3,
            format: Format::DecimalSI,
        });
        assert_eq!((cpu.value, cpu.scale), (2500, -3));
    }
}
