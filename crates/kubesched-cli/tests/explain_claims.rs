//! `--explain` names the claim or volume that stopped each node, beside kube-scheduler's
//! reason (which stays word for word): `tests/data/explain-claims.yaml` has one pending
//! pod per way a claim stops a node (no PV on the node, no storage capacity, a missing
//! class, `allowedTopologies`, a bound PV elsewhere, too few devices). The JSON Lines of
//! that scenario are kube-scheduler v1.35.4's (checked with the oracle when the file was
//! written) and carry no notes. `tests/data/explain-volumes.yaml` does the same for the
//! other volume plugins (a PV in another zone, a CSI attach limit, a shared GCE disk, a
//! ReadWriteOncePod claim in use).

mod common;
use common::{data, kubesched, stdout};

fn explain(pod: &str) -> String {
    explain_in("explain-claims.yaml", pod)
}

fn explain_in(file: &str, pod: &str) -> String {
    let o = kubesched(&["simulate", &data(file), "--explain", pod]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    stdout(&o)
}

#[test]
fn a_wffc_claim_names_the_missing_pv_and_the_class_that_cannot_provision() {
    assert_eq!(
        explain("db-0"),
        "Pod default/db-0 (scheduler default-scheduler)
  scheduled on n2
  n1    rejected by VolumeBinding: node(s) didn't find available persistent volumes to bind
          claim data-db-0: no Available PV of class local-ssd with >= 10Gi on this node, and class local-ssd does not provision volumes (kubernetes.io/no-provisioner)
  n2    feasible (the only one: no scoring)  <- chosen
"
    );
}

#[test]
fn a_provisioned_claim_names_the_missing_storage_capacity() {
    assert_eq!(
        explain("big"),
        "Pod default/big (scheduler default-scheduler)
  pending: 0/2 nodes are available: 2 node(s) did not have enough free storage.
  n1    rejected by VolumeBinding: node(s) did not have enough free storage
          claim big-data: no Available PV of class fast-csi with >= 100Gi on this node, and no CSIStorageCapacity of class fast-csi for this node has room for 100Gi
  n2    rejected by VolumeBinding: node(s) did not have enough free storage
          claim big-data: no Available PV of class fast-csi with >= 100Gi on this node, and no CSIStorageCapacity of class fast-csi for this node has room for 100Gi
"
    );
}

#[test]
fn a_claim_of_a_missing_class_says_why_it_counts_as_immediate() {
    assert_eq!(
        explain("orphan"),
        "Pod default/orphan (scheduler default-scheduler)
  pending: 0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.
  n1    rejected by VolumeBinding: pod has unbound immediate PersistentVolumeClaims
          claim orphan-data: not bound, and its StorageClass missing-class does not exist (a claim of a missing class is bound Immediately, by the PV controller, not on first consumer)
  n2    rejected by VolumeBinding: pod has unbound immediate PersistentVolumeClaims
          claim orphan-data: not bound, and its StorageClass missing-class does not exist (a claim of a missing class is bound Immediately, by the PV controller, not on first consumer)
"
    );
}

#[test]
fn a_class_whose_topologies_exclude_the_node_is_named() {
    assert_eq!(
        explain("zonal"),
        "Pod default/zonal (scheduler default-scheduler)
  scheduled on n2
  n1    rejected by VolumeBinding: node(s) didn't find available persistent volumes to bind
          claim zonal-data: no Available PV of class zonal with >= 1Gi on this node, and class zonal's allowedTopologies do not include this node
  n2    feasible (the only one: no scoring)  <- chosen
"
    );
}

#[test]
fn a_claim_bound_to_a_pv_of_another_node_names_the_pv() {
    assert_eq!(
        explain("reader"),
        "Pod default/reader (scheduler default-scheduler)
  scheduled on n1
  n1    feasible (the only one: no scoring)  <- chosen
  n2    rejected by VolumeBinding: node(s) didn't match PersistentVolume's node affinity
          claim old-data: bound to PersistentVolume old-n1, whose node affinity does not match this node
"
    );
}

#[test]
fn a_resource_claim_names_the_request_and_the_devices_it_found() {
    assert_eq!(
        explain("train"),
        "Pod default/train (scheduler default-scheduler)
  pending: 0/2 nodes are available: 2 cannot allocate all claims.
  n1    rejected by DynamicResources: cannot allocate all claims
          claim default/two-gpus: request gpu wants 2 device(s) of class gpu.example.com: 1 on this node match, 1 of them free
  n2    rejected by DynamicResources: cannot allocate all claims
          claim default/two-gpus: no ResourceSlice publishes devices for this node
"
    );
}

#[test]
fn notes_stay_out_of_the_table_and_the_json_lines() {
    let o = kubesched(&[
        "simulate",
        &data("explain-claims.yaml"),
        "--format",
        "jsonl",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 6);
    assert_eq!(
        lines[0]["rejected"],
        serde_json::json!({"n1": ["node(s) didn't find available persistent volumes to bind"]})
    );
    assert_eq!(
        lines[5]["rejected"],
        serde_json::json!({"n1": ["cannot allocate all claims"], "n2": ["cannot allocate all claims"]})
    );
    assert!(!stdout(&o).contains("claim "), "{}", stdout(&o));
    let table = stdout(&kubesched(&["simulate", &data("explain-claims.yaml")]));
    assert!(!table.contains("claim "), "{table}");
}

#[test]
fn a_pv_in_another_zone_and_a_csi_attach_limit_are_named() {
    assert_eq!(
        explain_in("explain-volumes.yaml", "zonal-reader"),
        "Pod default/zonal-reader (scheduler default-scheduler)
  pending: 0/2 nodes are available: 1 node(s) exceed max volume count, 1 node(s) had no available volume zone.
  n1    rejected by NodeVolumeLimits: node(s) exceed max volume count
          CSI driver ebs.csi.aws.com: 1 volume(s) attached to this node and 1 more for this pod, over the node's limit of 1 (CSINode n1)
  n2    rejected by VolumeZone: node(s) had no available volume zone
          claim zonal-data: bound to PersistentVolume pv-zone-a in topology.kubernetes.io/zone zone-a, this node is in zone-b
"
    );
}

#[test]
fn a_disk_mounted_by_another_pod_names_the_volume_and_the_pod() {
    assert_eq!(
        explain_in("explain-volumes.yaml", "pd-user"),
        "Pod default/pd-user (scheduler default-scheduler)
  scheduled on n1
  n1    feasible (the only one: no scoring)  <- chosen
  n2    rejected by VolumeRestrictions: node(s) had no available disk
          volume disk: the same disk is mounted by pod default/running-2 on this node
"
    );
}

#[test]
fn a_read_write_once_pod_claim_in_use_is_named() {
    assert_eq!(
        explain_in("explain-volumes.yaml", "second-user"),
        "Pod default/second-user (scheduler default-scheduler)
  pending: 0/2 nodes are available: 2 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod.
  n1    rejected by VolumeRestrictions: node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod
          1 of the pod's ReadWriteOncePod claim(s) (default/exclusive) already used by another pod
  n2    rejected by VolumeRestrictions: node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod
          1 of the pod's ReadWriteOncePod claim(s) (default/exclusive) already used by another pod
"
    );
}
