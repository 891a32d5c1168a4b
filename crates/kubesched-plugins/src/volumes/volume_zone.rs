//! VolumeZone: a pod's bound PersistentVolumes must be in the node's zone and region
//! (kube-scheduler v1.35).
//!
//! - PreFilter reads the pod's claims (`persistentVolumeClaim` and generic ephemeral
//!   volumes) and their PVs from the listers (the API objects, not VolumeBinding's
//!   assumptions). A claim without a volume name is skipped when its class binds on
//!   first consumer and rejects the pod otherwise; a missing claim, class or PV rejects
//!   the pod with the API server's NotFound text. The PVs' topology labels
//!   (`topology.kubernetes.io/zone` / `region` and their `failure-domain.beta` forms,
//!   values possibly joined by `__`) are kept; none at all: Skip.
//! - Filter passes a node without any of those four labels; otherwise every kept PV
//!   label must name the node's value of the same key (for a beta key, the node's GA
//!   label is used when it lacks the beta one): else "node(s) had no available volume
//!   zone" (UnschedulableAndUnresolvable); when the cycle is explained, with a note
//!   naming the claim, its PV and the zones.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PersistentVolume;
use kubesched_framework::{
    ClusterEvent, Code, CycleState, FilterPlugin, NodeInfo, Plugin, PodInfo, PreFilterPlugin,
    PreFilterResult, Snapshot, Status, storage::claim_class,
};

use super::{
    VOLUME_ZONE, claim_not_found, class_not_found, pv_not_found, storage_for, volume_claim_name,
};

/// Filter's reason.
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const GA_ZONE: &str = "topology.kubernetes.io/zone";
const GA_REGION: &str = "topology.kubernetes.io/region";
/// The labels VolumeZone compares, in kube-scheduler's order.
const TOPOLOGY_LABELS: [&str; 4] = [BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION];

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct VolumeZone;

/// One topology label of one PV: the key and the set of values it allows.
#[derive(Clone, Debug)]
struct PvTopology {
    key: &'static str,
    values: BTreeSet<String>,
    /// The claim and its PV, for `--explain`'s note.
    claim: Arc<str>,
    pv: Arc<str>,
}

#[derive(Clone, Debug)]
struct State {
    topologies: Vec<PvTopology>,
}

/// A `__`-separated zone list; `None` when an entry is empty (such a label is ignored).
fn label_zones_to_set(value: &str) -> Option<BTreeSet<String>> {
    let mut set = BTreeSet::new();
    for zone in value.split("__") {
        let zone = zone.trim();
        if zone.is_empty() {
            return None;
        }
        set.insert(zone.to_owned());
    }
    Some(set)
}

fn pv_topologies(claim: &str, pv: &PersistentVolume, out: &mut Vec<PvTopology>) {
    let Some(labels) = &pv.metadata.labels else {
        return;
    };
    let claim: Arc<str> = Arc::from(claim);
    let name: Arc<str> = Arc::from(pv.metadata.name.as_deref().unwrap_or_default());
    for key in TOPOLOGY_LABELS {
        if let Some(values) = labels.get(key).and_then(|v| label_zones_to_set(v)) {
            out.push(PvTopology {
                key,
                values,
                claim: claim.clone(),
                pv: name.clone(),
            });
        }
    }
}

fn to_ga_label(key: &str) -> &str {
    match key {
        BETA_ZONE => GA_ZONE,
        BETA_REGION => GA_REGION,
        other => other,
    }
}

fn unresolvable(message: impl Into<kubesched_framework::Reason>) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, message)
}

impl Plugin for VolumeZone {
    fn name(&self) -> &str {
        VOLUME_ZONE
    }
    // kube-scheduler: the volume plugins read the pod's volumes (ConfigMaps and
    // Secrets aside).
    /// Node by node only for a pod without PersistentVolumeClaims (direct or
    /// ephemeral): a claim is bound once, for every node, and counted cluster-wide.
    fn node_local(&self, pod: &PodInfo) -> bool {
        !pod.has_claim_volumes()
    }
    /// Node by node only for a pod whose volumes are all ConfigMaps, Secrets,
    /// downward API, projected or emptyDir: others read claims, volumes and CSI
    /// objects beside the node.
    fn node_scoped(&self, pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        crate::helper::only_synthetic_volumes(pod)
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        Ok(vec![kubesched_framework::signature::volumes_fragment(pod)])
    }
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        crate::events::volume_zone()
    }
    kubesched_framework::extension_points!(PreFilter, Filter);
}

impl PreFilterPlugin for VolumeZone {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let storage = match storage_for(VOLUME_ZONE, pod, snapshot) {
            Ok(storage) => storage,
            Err(status) => return (None, status),
        };
        let mut topologies = Vec::new();
        for volume in pod.spec().volumes.iter().flatten() {
            let Some((claim_name, _)) = volume_claim_name(pod, volume) else {
                continue;
            };
            if claim_name.is_empty() {
                return (None, unresolvable("PersistentVolumeClaim had no name"));
            }
            let Some(claim) = storage.claim(pod.namespace(), &claim_name) else {
                return (None, unresolvable(claim_not_found(&claim_name)));
            };
            let pv_name = claim
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .unwrap_or_default();
            if pv_name.is_empty() {
                let class_name = claim_class(claim);
                if class_name.is_empty() {
                    return (
                        None,
                        unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
                    );
                }
                let Some(class) = storage.class(class_name) else {
                    return (None, unresolvable(class_not_found(class_name)));
                };
                if class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer") {
                    continue;
                }
                return (None, unresolvable("PersistentVolume had no name"));
            }
            let Some(pv) = storage.pv(pv_name) else {
                return (None, unresolvable(pv_not_found(pv_name)));
            };
            pv_topologies(&claim_name, pv, &mut topologies);
        }
        if topologies.is_empty() {
            return (None, Status::skip());
        }
        state.write(State { topologies });
        (None, Status::success())
    }
}

impl FilterPlugin for VolumeZone {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.spec().volumes.as_ref().is_none_or(Vec::is_empty) {
            return Status::success();
        }
        let Some(s) = state.read::<State>() else {
            return Status::new(
                Code::Error,
                format!("reading {VOLUME_ZONE}'s PreFilter state: not found"),
            );
        };
        if !TOPOLOGY_LABELS.iter().any(|k| node.label(k).is_some()) {
            return Status::success();
        }
        for t in &s.topologies {
            let value = node.label(t.key).or_else(|| node.label(to_ga_label(t.key)));
            if !value.is_some_and(|v| t.values.contains(v)) {
                let status = unresolvable(ERR_REASON_CONFLICT);
                if !state.explain() {
                    return status;
                }
                let allowed: Vec<&str> = t.values.iter().map(String::as_str).collect();
                return status.with_notes([format!(
                    "claim {}: bound to PersistentVolume {} in {} {}, this node is in {}",
                    t.claim,
                    t.pv,
                    t.key,
                    allowed.join(" or "),
                    value.unwrap_or("none")
                )]);
            }
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_lists_split_on_double_underscores() {
        let set = label_zones_to_set("z1__z2").unwrap();
        assert!(set.contains("z1") && set.contains("z2") && set.len() == 2);
        assert!(label_zones_to_set("z1__").is_none());
        assert!(label_zones_to_set("").is_none());
    }

    #[test]
    fn beta_keys_fall_back_to_the_ga_labels() {
        assert_eq!(to_ga_label(BETA_ZONE), GA_ZONE);
        assert_eq!(to_ga_label(BETA_REGION), GA_REGION);
        assert_eq!(to_ga_label(GA_ZONE), GA_ZONE);
    }
}
