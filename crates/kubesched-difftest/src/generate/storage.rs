//! The storage part of a generated scenario (FORMAT-volumes.md): StorageClasses
//! (WaitForFirstConsumer with and without a provisioner, Immediate, defaulted), a CSIDriver
//! with or without storage capacity tracking, CSINodes with attach limits (0 included),
//! CSIStorageCapacities per zone, local PVs with node affinity and zonal CSI PVs, claims
//! bound, unbound, pre-bound, of a missing class or missing altogether, ReadWriteOncePod
//! claims, VolumeAttachments, and pods' in-tree disks.
//!
//! Weighted towards the corners: a PV exactly as large as a claim or one MiB short, a PV
//! without status (Pending, never matches), an attach limit of 0, a capacity equal to the
//! request. Every PV has a capacity of its own, since kube-scheduler picks among equally
//! small matching PVs in cache order (FORMAT-volumes.md), which no scenario may depend on.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{NodeShape, ZONES};
use crate::rng::Rng;

const DRIVER: &str = "csi.example.com";
/// Claim sizes in MiB: 1Gi, 5Gi, 10Gi.
const SIZES_MI: &[i64] = &[1024, 5120, 10240];

/// A claim a pod may use.
struct Claim {
    name: String,
    /// Bound claims may be used by running pods.
    bound: bool,
}

/// The storage objects of one scenario, and what pods may mount.
pub(super) struct Storage {
    /// StorageClasses, CSIDriver, CSINodes, capacities, PVs, claims, attachments.
    pub docs: Vec<Value>,
    claims: Vec<Claim>,
}

fn size(mi: i64) -> String {
    if mi % 1024 == 0 {
        format!("{}Gi", mi / 1024)
    } else {
        format!("{mi}Mi")
    }
}

/// A capacity not yet used by another PV, near `want` (MiB).
fn distinct(used: &mut BTreeSet<i64>, want: i64) -> i64 {
    let mut mi = want;
    while !used.insert(mi) {
        mi += 1;
    }
    mi
}

fn zone_of(s: &NodeShape) -> Option<&str> {
    s.labels
        .iter()
        .find(|(k, _)| k == "topology.kubernetes.io/zone")
        .map(|(_, v)| v.as_str())
}

fn access_modes(r: &mut Rng) -> Value {
    match r.below(10) {
        0 => json!(["ReadWriteOncePod"]),
        1 | 2 => json!(["ReadWriteOnce", "ReadWriteMany"]),
        3 => json!(["ReadWriteMany"]),
        _ => json!(["ReadWriteOnce"]),
    }
}

fn claim_doc(name: &str, class: &str, modes: Value, mi: i64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": modes, "resources": {"requests": {"storage": size(mi)}},
                 "storageClassName": class},
        "status": {"phase": "Pending"},
    })
}

fn pv_doc(name: &str, class: &str, modes: Value, mi: i64, source: Value, affinity: Value) -> Value {
    let mut spec = json!({
        "capacity": {"storage": size(mi)},
        "accessModes": modes,
        "storageClassName": class,
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [affinity]}]}},
    });
    let (k, v) = source
        .as_object()
        .and_then(|o| o.iter().next())
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap_or_default();
    spec[k] = v;
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec})
}

/// Generates the storage world for `shapes` (maybe none of it).
pub(super) fn storage(r: &mut Rng, shapes: &[NodeShape]) -> Storage {
    let mut docs = Vec::new();
    let mut claims = Vec::new();
    let mut used = BTreeSet::new();
    let capacity_tracking = r.chance(40);
    docs.push(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": DRIVER},
        "spec": {"attachRequired": r.chance(80), "storageCapacity": capacity_tracking},
    }));
    docs.push(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }));
    let mut zonal = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "zonal"},
        "provisioner": DRIVER,
        "volumeBindingMode": "WaitForFirstConsumer",
    });
    if r.chance(40) {
        let zones: Vec<&str> = ZONES.iter().copied().filter(|_| r.chance(50)).collect();
        zonal["allowedTopologies"] = json!([{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": if zones.is_empty() { vec!["zone-x"] } else { zones }}
        ]}]);
    }
    docs.push(zonal);
    let mut fast = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "fast"}, "provisioner": DRIVER,
    });
    if r.chance(50) {
        // Absent, the API server defaults it to Immediate.
        fast["volumeBindingMode"] = json!("Immediate");
    }
    docs.push(fast);
    for s in shapes {
        if r.chance(65) {
            let mut driver = json!({"name": DRIVER, "nodeID": format!("{}-csi", s.name),
                                    "topologyKeys": ["topology.kubernetes.io/zone"]});
            if r.chance(75) {
                driver["allocatable"] = json!({"count": r.pick(&[0, 1, 1, 2, 3])});
            }
            docs.push(json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": s.name}, "spec": {"drivers": [driver]},
            }));
        }
    }
    if capacity_tracking {
        for (i, zone) in ZONES.iter().enumerate() {
            if r.chance(70) {
                let mut cap = json!({
                    "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                    "metadata": {"name": format!("cap-{i}"), "namespace": "kube-system"},
                    "storageClassName": "zonal",
                    "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": zone}},
                    "capacity": size(*r.pick(SIZES_MI) + *r.pick(&[0, 0, -1])),
                });
                if r.chance(30) {
                    cap["maximumVolumeSize"] = json!(size(*r.pick(SIZES_MI)));
                }
                docs.push(cap);
            }
        }
    }
    // Local PVs on some node (or one that does not exist), free or without status.
    for i in 0..r.range(0, 5) {
        let host = if shapes.is_empty() || r.chance(10) {
            "gone-node".to_string()
        } else {
            r.pick(shapes).name.clone()
        };
        let mi = distinct(&mut used, *r.pick(SIZES_MI) + *r.pick(&[0, 0, -1, 1024]));
        let mut pv = pv_doc(
            &format!("local-pv-{i}"),
            "local",
            access_modes(r),
            mi,
            json!({"local": {"path": format!("/mnt/disks/{i}")}}),
            json!({"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}),
        );
        if r.chance(85) {
            pv["status"] = json!({"phase": "Available"});
        }
        docs.push(pv);
    }
    // Zonal CSI PVs free for static binding of the zonal class.
    for i in 0..r.range(0, 2) {
        let zone = *r.pick(ZONES);
        let mi = distinct(&mut used, *r.pick(SIZES_MI));
        let mut pv = pv_doc(
            &format!("zonal-pv-{i}"),
            "zonal",
            json!(["ReadWriteOnce"]),
            mi,
            json!({"csi": {"driver": DRIVER, "volumeHandle": format!("h-zonal-{i}")}}),
            json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}),
        );
        pv["metadata"]["labels"] = json!({"topology.kubernetes.io/zone": zone});
        pv["status"] = json!({"phase": "Available"});
        docs.push(pv);
    }
    // Bound claims and their PVs (a zone from the nodes', a multi-zone label, or none).
    for i in 0..r.range(0, 3) {
        let name = format!("bound-{i}");
        let pv_name = format!("pv-bound-{i}");
        let modes = access_modes(r);
        let zone = match (r.below(6), shapes.is_empty()) {
            (0, _) => "zone-a__zone-b".to_string(),
            (1, _) | (_, true) => r.pick(ZONES).to_string(),
            _ => zone_of(r.pick(shapes)).unwrap_or("zone-c").to_string(),
        };
        if r.chance(92) {
            let values: Vec<&str> = zone.split("__").collect();
            let mut pv = pv_doc(
                &pv_name,
                "zonal",
                modes.clone(),
                distinct(&mut used, 10240),
                json!({"csi": {"driver": DRIVER, "volumeHandle": format!("h-bound-{i}")}}),
                json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": values}),
            );
            if r.chance(80) {
                pv["metadata"]["labels"] = json!({"topology.kubernetes.io/zone": zone});
            }
            pv["spec"]["claimRef"] = json!({"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                            "namespace": "default", "name": name});
            pv["status"] = json!({"phase": "Bound"});
            docs.push(pv);
        }
        let mut c = claim_doc(&name, "zonal", modes.clone(), 10240);
        c["metadata"]["annotations"] = json!({"pv.kubernetes.io/bind-completed": "true"});
        c["spec"]["volumeName"] = json!(pv_name);
        c["status"] =
            json!({"phase": "Bound", "accessModes": modes, "capacity": {"storage": "10Gi"}});
        docs.push(c);
        claims.push(Claim { name, bound: true });
    }
    // Unbound claims: local (static binding), zonal (provisioned or static), Immediate.
    for (prefix, class, n) in [
        ("local-claim", "local", r.range(0, 3)),
        ("dyn-claim", "zonal", r.range(0, 3)),
        ("imm-claim", "fast", if r.chance(25) { 1 } else { 0 }),
        (
            "nocls-claim",
            "missing-class",
            if r.chance(10) { 1 } else { 0 },
        ),
    ] {
        for i in 0..n {
            let name = format!("{prefix}-{i}");
            let mut c = claim_doc(&name, class, access_modes(r), *r.pick(SIZES_MI));
            if class == "zonal" && r.chance(8) && !shapes.is_empty() {
                c["metadata"]["annotations"] =
                    json!({"volume.kubernetes.io/selected-node": r.pick(shapes).name});
            }
            docs.push(c);
            claims.push(Claim { name, bound: false });
        }
    }
    if r.chance(8) {
        // Pre-bound: a volumeName without bind-completed counts as unbound Immediate.
        let mut c = claim_doc("prebound", "local", json!(["ReadWriteOnce"]), 1024);
        c["spec"]["volumeName"] = json!("local-pv-0");
        docs.push(c);
        claims.push(Claim {
            name: "prebound".into(),
            bound: false,
        });
    }
    if r.chance(10) && !shapes.is_empty() {
        let node = r.pick(shapes).name.clone();
        docs.push(json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": "va-0"},
            "spec": {"attacher": DRIVER, "nodeName": node,
                     "source": {"persistentVolumeName": "pv-bound-0"}},
            "status": {"attached": true},
        }));
    }
    Storage { docs, claims }
}

/// Gives `pod` 0-3 volumes: the world's claims (bound ones only for a running pod), now
/// and then a claim that does not exist, in-tree disks and an emptyDir.
pub(super) fn attach(r: &mut Rng, storage: &Storage, pod: &mut Value, running: bool) {
    let usable: Vec<&Claim> = storage
        .claims
        .iter()
        .filter(|c| !running || c.bound)
        .collect();
    let mut volumes = Vec::new();
    for v in 0..r.range(0, 3) {
        let name = format!("v{v}");
        let source = match r.below(10) {
            0 => {
                json!({"gcePersistentDisk": {"pdName": r.pick(&["disk-1", "disk-2"]), "readOnly": r.chance(40)}})
            }
            1 => json!({"awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": r.chance(40)}}),
            2 => json!({"emptyDir": {}}),
            3 if !running => json!({"persistentVolumeClaim": {"claimName": "missing-claim"}}),
            _ if !usable.is_empty() => {
                json!({"persistentVolumeClaim": {"claimName": r.pick(&usable).name}})
            }
            _ => continue,
        };
        let mut vol = json!({"name": name});
        if let (Some(o), Some(s)) = (vol.as_object_mut(), source.as_object()) {
            o.extend(s.clone());
        }
        volumes.push(vol);
    }
    if volumes.is_empty() {
        return;
    }
    pod["spec"]["volumes"] = json!(volumes);
    if r.chance(90) {
        // Claims live in default: a pod elsewhere would not find them.
        pod["metadata"]["namespace"] = json!("default");
    }
}
