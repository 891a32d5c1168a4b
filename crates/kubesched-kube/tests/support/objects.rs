//! The storage and DRA objects the volume and DynamicResources tests use, against the
//! loopback fake and the real API server alike.

#![allow(dead_code)]

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::json;

/// A WaitForFirstConsumer StorageClass; `provisioner` `kubernetes.io/no-provisioner`
/// for local PVs bound statically.
pub fn wffc_class(name: &str, provisioner: &str) -> StorageClass {
    serde_json::from_value(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }))
    .expect("StorageClass")
}

/// An Available local PV of `class` on `node` (node affinity on the hostname; the
/// phase is what the PV controller would set: a real API server creates it Pending).
pub fn local_pv(name: &str, class: &str, size: &str, node: &str) -> PersistentVolume {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": class,
            "local": {"path": format!("/mnt/{name}")},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
            ]}]}},
        },
        "status": {"phase": "Available"},
    }))
    .expect("PersistentVolume")
}

/// An unbound claim in `default`.
pub fn claim(name: &str, class: &str, size: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": class,
            "resources": {"requests": {"storage": size}},
        },
    }))
    .expect("PersistentVolumeClaim")
}

/// A pending pod of `scheduler` in `default` mounting the claim.
pub fn pod_with_claim(name: &str, scheduler: &str, claim: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": "100m"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }))
    .expect("Pod")
}

/// A DeviceClass of the devices of `driver`.
pub fn device_class(name: &str, driver: &str) -> DeviceClass {
    serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{driver}\"")}}]},
    }))
    .expect("DeviceClass")
}

/// A ResourceSlice of `devices` GPUs of `driver` on `node`.
pub fn node_slice(node: &str, driver: &str, devices: usize) -> ResourceSlice {
    let devices: Vec<_> = (0..devices)
        .map(|i| json!({"name": format!("gpu-{i}"), "attributes": {"index": {"int": i}}}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-{driver}")},
        "spec": {
            "driver": driver,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }))
    .expect("ResourceSlice")
}

/// A claim in `default` for one device of `class`.
pub fn resource_claim(name: &str, class: &str) -> ResourceClaim {
    serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": class, "allocationMode": "ExactCount", "count": 1,
        }}]}},
    }))
    .expect("ResourceClaim")
}

/// A pending pod of `scheduler` in `default` using the ResourceClaim.
pub fn pod_with_resource_claim(name: &str, scheduler: &str, claim: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }))
    .expect("Pod")
}
