//! The DRA part of a generated scenario (FORMAT-volumes.md rules 16-20): DeviceClasses,
//! ResourceSlices per node and network-attached ones (every node, or one zone's nodes),
//! ResourceClaims with counts, `allocationMode: All`, CEL selectors on attributes and
//! capacity, `matchAttribute` constraints and `firstAvailable` subrequests, claim
//! templates with and without their generated claim, and claims already allocated to a
//! running pod.
//!
//! kube-scheduler walks the pools serving a node in informer cache order, which the
//! scenario does not fix: so every node is served by at most one pool of each driver
//! (node-local GPUs, network-attached NICs), and the outcome never depends on that order.

use serde_json::{Value, json};

use super::{NodeShape, ZONES};
use crate::rng::Rng;

const GPU: &str = "gpu.example.com";
const NIC: &str = "nic.example.com";

/// A claim a pending pod may name, or a template.
enum PodClaim {
    Claim(String),
    Template,
}

/// The DRA objects of one scenario, and what pods may claim.
pub(super) struct Dra {
    /// DeviceClasses, ResourceSlices, ResourceClaims, the template.
    pub docs: Vec<Value>,
    claims: Vec<PodClaim>,
    /// Claims allocated on a node in the file: (claim, node), for running pods there.
    allocated: Vec<(String, String)>,
    generated: usize,
}

fn gpu_selector(r: &mut Rng) -> Value {
    let expr = match r.below(5) {
        0 => format!("device.attributes[\"{GPU}\"].model == \"h100\""),
        1 => format!("device.attributes[\"{GPU}\"].model == \"a100\""),
        2 => format!("device.capacity[\"{GPU}\"].memory.compareTo(quantity(\"80Gi\")) >= 0"),
        3 => format!("device.attributes[\"{GPU}\"].index < 1"),
        _ => format!("device.capacity[\"{GPU}\"].memory.isGreaterThan(quantity(\"40Gi\"))"),
    };
    json!({"cel": {"expression": expr}})
}

fn gpu_device(r: &mut Rng, i: i64) -> Value {
    json!({
        "name": format!("gpu-{i}"),
        "attributes": {"model": {"string": r.pick(&["h100", "a100", "a100"])},
                       "index": {"int": i}, "numa": {"int": r.range(0, 1)}},
        "capacity": {"memory": {"value": r.pick(&["40Gi", "80Gi"])}},
    })
}

fn request(r: &mut Rng, name: &str, class: &str) -> Value {
    let mut exactly = json!({"deviceClassName": class});
    match r.below(8) {
        0 => exactly["allocationMode"] = json!("All"),
        1 | 2 => exactly["count"] = json!(r.range(1, 3)),
        _ => {}
    }
    if class == GPU && r.chance(40) {
        exactly["selectors"] = json!([gpu_selector(r)]);
    }
    json!({"name": name, "exactly": exactly})
}

fn claim_spec(r: &mut Rng, nic: bool) -> Value {
    if nic && r.chance(30) {
        return json!({"devices": {"requests": [request(r, "nic", NIC)]}});
    }
    let class = if r.chance(4) { "missing-class" } else { GPU };
    match r.below(6) {
        0 => json!({"devices": {
            "requests": [request(r, "a", class), request(r, "b", class)],
            "constraints": [{"requests": ["a", "b"], "matchAttribute": format!("{GPU}/numa")}],
        }}),
        1 => json!({"devices": {"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "h100", "deviceClassName": class,
             "selectors": [{"cel": {"expression": format!("device.attributes[\"{GPU}\"].model == \"h100\"")}}]},
            {"name": "any", "deviceClassName": class, "count": r.range(1, 2)},
        ]}]}}),
        2 if nic => {
            json!({"devices": {"requests": [request(r, "gpu", class), request(r, "nic", NIC)]}})
        }
        _ => json!({"devices": {"requests": [request(r, "gpu", class)]}}),
    }
}

/// Generates the DRA world for `shapes`.
pub(super) fn dra(r: &mut Rng, shapes: &[NodeShape]) -> Dra {
    let mut docs = vec![json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": GPU},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{GPU}\"")}}]},
    })];
    let mut node_devices: Vec<(String, Vec<Value>)> = Vec::new();
    for s in shapes {
        if r.chance(60) {
            let devices: Vec<Value> = (0..r.range(0, 3)).map(|i| gpu_device(r, i)).collect();
            docs.push(json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": format!("{}-gpu", s.name)},
                "spec": {"driver": GPU, "pool": {"name": s.name, "generation": 1, "resourceSliceCount": 1},
                         "nodeName": s.name, "devices": devices},
            }));
            node_devices.push((s.name.clone(), devices));
        }
    }
    let nic = r.chance(35);
    if nic {
        docs.push(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": NIC},
            "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{NIC}\"")}}]},
        }));
        let nics = |r: &mut Rng, prefix: &str| -> Vec<Value> {
            (0..r.range(1, 2))
                .map(|i| json!({"name": format!("{prefix}-{i}")}))
                .collect()
        };
        if r.chance(50) {
            docs.push(json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "nic-all"},
                "spec": {"driver": NIC, "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
                         "allNodes": true, "devices": nics(r, "nic")},
            }));
        } else {
            for zone in ZONES {
                if r.chance(60) {
                    docs.push(json!({
                        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": format!("nic-{zone}")},
                        "spec": {"driver": NIC,
                                 "pool": {"name": format!("fabric-{zone}"), "generation": 1, "resourceSliceCount": 1},
                                 "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                                     {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]},
                                 "devices": nics(r, zone)},
                    }));
                }
            }
        }
    }
    let mut claims = Vec::new();
    for i in 0..r.range(1, 4) {
        let name = format!("claim-{i}");
        docs.push(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": claim_spec(r, nic),
        }));
        claims.push(PodClaim::Claim(name));
    }
    if r.chance(30) {
        docs.push(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-tpl", "namespace": "default"},
            "spec": {"spec": claim_spec(r, nic)},
        }));
        claims.push(PodClaim::Template);
    }
    if r.chance(8) {
        claims.push(PodClaim::Claim("missing-claim".into()));
    }
    // A claim allocated in the file on a node's first GPU, for a running pod there.
    let mut allocated = Vec::new();
    let with_devices: Vec<&(String, Vec<Value>)> =
        node_devices.iter().filter(|(_, d)| !d.is_empty()).collect();
    if !with_devices.is_empty() && r.chance(40) {
        let (node, _) = r.pick(&with_devices);
        docs.push(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "held", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU}}]}},
            "status": {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": GPU, "pool": node, "device": "gpu-0"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
            }},
        }));
        allocated.push(("held".to_string(), node.clone()));
        claims.push(PodClaim::Claim("held".into()));
    }
    Dra {
        docs,
        claims,
        allocated,
        generated: 0,
    }
}

/// Gives a pending `pod` 0-2 claims, or a running pod the allocated claim of its node
/// (and reserves the claim for it). Returns extra documents (a template's generated
/// claim) to add before the pod.
pub(super) fn attach(r: &mut Rng, dra: &mut Dra, pod: &mut Value) -> Vec<Value> {
    let mut extra = Vec::new();
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
    if let Some(node) = pod["spec"]["nodeName"].as_str().map(str::to_string) {
        let Some((claim, _)) = dra.allocated.iter().find(|(_, n)| *n == node).cloned() else {
            return extra;
        };
        if !r.chance(60) {
            return extra;
        }
        let uid = format!("uid-{pod_name}");
        pod["metadata"]["uid"] = json!(uid);
        pod["metadata"]["namespace"] = json!("default");
        pod["spec"]["resourceClaims"] = json!([{"name": "c0", "resourceClaimName": claim}]);
        pod["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "c0"}]);
        for d in dra.docs.iter_mut() {
            if d["kind"] == "ResourceClaim" && d["metadata"]["name"] == claim.as_str() {
                d["status"]["reservedFor"] =
                    json!([{"resource": "pods", "name": pod_name, "uid": uid}]);
            }
        }
        return extra;
    }
    let n = match r.below(10) {
        0..=3 => 0,
        4..=8 => 1,
        _ => 2,
    };
    let mut entries = Vec::new();
    let mut statuses = Vec::new();
    for i in 0..n {
        let entry = format!("c{i}");
        match r.pick(&dra.claims) {
            PodClaim::Claim(name) => {
                entries.push(json!({"name": entry, "resourceClaimName": name}));
            }
            PodClaim::Template => {
                entries.push(json!({"name": entry, "resourceClaimTemplateName": "gpu-tpl"}));
                if r.chance(80) {
                    let generated = format!("{pod_name}-{entry}-gen{}", dra.generated);
                    dra.generated += 1;
                    let spec = dra
                        .docs
                        .iter()
                        .find(|d| d["kind"] == "ResourceClaimTemplate")
                        .map(|t| t["spec"]["spec"].clone())
                        .unwrap_or(Value::Null);
                    extra.push(json!({
                        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": generated, "namespace": "default",
                                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name,
                                                          "uid": format!("uid-{pod_name}"),
                                                          "controller": true, "blockOwnerDeletion": true}]},
                        "spec": spec,
                    }));
                    statuses.push(json!({"name": entry, "resourceClaimName": generated}));
                }
            }
        }
    }
    if entries.is_empty() {
        return extra;
    }
    if r.chance(92) {
        pod["metadata"]["namespace"] = json!("default");
    }
    pod["metadata"]["uid"] = json!(format!("uid-{pod_name}"));
    let refs: Vec<Value> = entries.iter().map(|e| json!({"name": e["name"]})).collect();
    pod["spec"]["resourceClaims"] = json!(entries);
    pod["spec"]["containers"][0]["resources"]["claims"] = json!(refs);
    if !statuses.is_empty() {
        pod["status"]["resourceClaimStatuses"] = json!(statuses);
    }
    extra
}
