//! The volume binder's per-node decision (kube-scheduler's `FindPodVolumes` and
//! component-helpers' `FindMatchingVolume`): whether a node can serve a pod's bound
//! claims (their PVs' node affinity), match its unbound WaitForFirstConsumer claims to
//! available PVs, or provision them (class provisioner, `allowedTopologies`, storage
//! capacity).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use kubesched_framework::quantity::Quantity;
use kubesched_framework::storage::{claim_class, pv_class};
use kubesched_framework::{NodeInfo, StorageObjects};

use super::super::ANN_SELECTED_NODE;
use crate::label_selector::{Selector, no_labels};
use crate::node_affinity::NodeSelector;

/// Reason: a bound claim's PV does not allow the node.
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// Reason: an unbound claim finds no PV and cannot be provisioned on the node.
pub const ERR_REASON_BIND_CONFLICT: &str =
    "node(s) didn't find available persistent volumes to bind";
/// Reason: provisioning lacks storage capacity on the node.
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
/// Reason: a bound claim's PV does not exist.
pub const ERR_REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

/// The provisioner name of classes that cannot provision.
const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// A PV as the binder reads it: its capacity and node affinity parsed once per pod.
#[derive(Clone, Debug)]
pub struct CandidatePv {
    /// The PV (as assumed).
    pub pv: Arc<PersistentVolume>,
    capacity: Quantity,
    /// `None`: no required node affinity.
    affinity: Option<NodeSelector>,
}

impl CandidatePv {
    /// Parses what matching needs.
    pub fn new(pv: Arc<PersistentVolume>) -> CandidatePv {
        let capacity = storage_quantity(
            pv.spec
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .and_then(|c| c.get("storage"))
                .map(|q| q.0.as_str()),
        );
        let affinity = pv
            .spec
            .as_ref()
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
            .map(NodeSelector::from_api);
        CandidatePv {
            pv,
            capacity,
            affinity,
        }
    }

    /// The PV's node affinity when it is "label KEY is one of VALUES".
    fn single_label_in(&self) -> Option<(&str, &[String])> {
        self.affinity
            .as_ref()
            .and_then(NodeSelector::single_label_in)
    }

    /// `CheckNodeAffinity`: on the node's labels only.
    pub fn fits(&self, node: &NodeInfo) -> bool {
        self.affinity
            .as_ref()
            .is_none_or(|a| a.matches_labels(node))
    }

    #[cfg(test)]
    fn name(&self) -> &str {
        self.pv.metadata.name.as_deref().unwrap_or_default()
    }
}

fn storage_quantity(q: Option<&str>) -> Quantity {
    q.and_then(|q| Quantity::parse(q).ok()).unwrap_or_default()
}

/// A claim's storage request (zero when it has none).
pub fn claim_request(claim: &PersistentVolumeClaim) -> Quantity {
    storage_quantity(claim_request_text(claim))
}

fn claim_request_text(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(|q| q.0.as_str())
}

/// The claims of a pod sorted for the binder, with the PVs they may use.
#[derive(Clone, Debug, Default)]
pub struct PodVolumeClaims {
    /// Bound claims with their PV (`None`: the PV does not exist).
    pub bound: Vec<(Arc<PersistentVolumeClaim>, Option<CandidatePv>)>,
    /// Unbound WaitForFirstConsumer claims.
    pub unbound_delay_binding: Vec<Arc<PersistentVolumeClaim>>,
    /// The PVs of each class of those claims.
    pub pvs_by_class: BTreeMap<String, Vec<CandidatePv>>,
    /// For each unbound claim (same order), what matching it needs; `None` for a
    /// claim with a selected node (it is provisioned, never matched).
    pub matchers: Vec<Option<Result<ClaimMatcher, String>>>,
}

impl PodVolumeClaims {
    /// Prepares [`PodVolumeClaims::matchers`] once the claims and PVs are known.
    pub fn prepare_matchers(&mut self) {
        self.matchers = self
            .unbound_delay_binding
            .iter()
            .map(|claim| {
                let selected = claim
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(ANN_SELECTED_NODE));
                (!selected).then(|| {
                    let pvs = self
                        .pvs_by_class
                        .get(claim_class(claim))
                        .map_or(&[][..], Vec::as_slice);
                    ClaimMatcher::new(claim, pvs)
                })
            })
            .collect();
    }
}

/// `FindMatchingVolume` for one claim, with its node-independent checks done once
/// per pod: per node only node affinity (and the PVs taken by the pod's other claims)
/// is left, and PVs whose affinity is "label KEY is one of VALUES" are found by the
/// node's label value instead of being tried one by one.
#[derive(Clone, Debug, Default)]
pub struct ClaimMatcher {
    /// The PVs pre-bound to the claim that pass the size, mode and deletion checks, in
    /// list order: the first one not taken by another claim of the pod alone decides.
    prebound: Vec<usize>,
    /// Label key → value → the eligible PVs with that affinity, smallest first.
    by_label: HashMap<String, HashMap<String, Vec<usize>>>,
    /// The other eligible PVs, smallest first.
    others: Vec<usize>,
}

impl ClaimMatcher {
    /// The matcher of `claim` over `pvs` (its class's PVs, as assumed); `Err` when the
    /// claim's label selector does not parse.
    fn new(claim: &PersistentVolumeClaim, pvs: &[CandidatePv]) -> Result<ClaimMatcher, String> {
        let spec = claim.spec.clone().unwrap_or_default();
        let requested = claim_request(claim);
        let requested_class = claim_class(claim);
        let selector = match &spec.selector {
            Some(s) => Some(Selector::from_label_selector(Some(s)).map_err(|e| {
                format!(
                    "error creating internal label selector for claim: {}/{}: {e}",
                    claim.metadata.namespace.as_deref().unwrap_or_default(),
                    claim.metadata.name.as_deref().unwrap_or_default()
                )
            })?),
            None => None,
        };
        let claim_modes = spec.access_modes.clone().unwrap_or_default();
        let claim_vac = spec
            .volume_attributes_class_name
            .clone()
            .unwrap_or_default();
        let mut matcher = ClaimMatcher::default();
        let mut eligible = Vec::new();
        for (i, candidate) in pvs.iter().enumerate() {
            let pv = &candidate.pv;
            let pv_spec = pv.spec.as_ref();
            let has_claim_ref = pv_spec.is_some_and(|s| s.claim_ref.is_some());
            let bound_to_claim = is_volume_bound_to_claim(pv, claim);
            if has_claim_ref && !bound_to_claim {
                continue;
            }
            if candidate.capacity < requested
                || volume_mode(spec.volume_mode.as_ref())
                    != volume_mode(pv_spec.and_then(|s| s.volume_mode.as_ref()))
                || pv.metadata.deletion_timestamp.is_some()
            {
                continue;
            }
            if bound_to_claim {
                matcher.prebound.push(i);
                continue;
            }
            if pv.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Available") {
                continue;
            }
            if let Some(sel) = &selector
                && !sel.matches(pv.metadata.labels.as_ref().unwrap_or(no_labels()))
            {
                continue;
            }
            if pv_class(pv) != requested_class {
                continue;
            }
            let pv_modes = pv_spec
                .and_then(|s| s.access_modes.as_deref())
                .unwrap_or_default();
            if !claim_modes.iter().all(|m| pv_modes.contains(m)) {
                continue;
            }
            let pv_vac = pv_spec
                .and_then(|s| s.volume_attributes_class_name.as_deref())
                .unwrap_or_default();
            if pv_vac != claim_vac {
                continue;
            }
            eligible.push(i);
        }
        // Smallest first; among equals the first in list order, as kube-scheduler's
        // strict "smaller than the smallest so far" keeps it.
        eligible.sort_by_key(|&i| (pvs[i].capacity, i));
        for i in eligible {
            match pvs[i].single_label_in() {
                Some((key, values)) => {
                    let by_value = matcher.by_label.entry(key.to_owned()).or_default();
                    for v in values {
                        let list = by_value.entry(v.clone()).or_default();
                        if list.last() != Some(&i) {
                            list.push(i);
                        }
                    }
                }
                None => matcher.others.push(i),
            }
        }
        Ok(matcher)
    }

    /// The PV (index in `pvs`) the claim gets on `node`, skipping `excluded`.
    fn pick(
        &self,
        pvs: &[CandidatePv],
        node: &NodeInfo,
        excluded: &HashSet<usize>,
    ) -> Option<usize> {
        // kube-scheduler returns at the first PV bound to the claim (unless a claim of
        // the pod listed twice took it), whatever smaller PV it saw before.
        if let Some(&i) = self.prebound.iter().find(|i| !excluded.contains(i)) {
            return pvs[i].fits(node).then_some(i);
        }
        let key = |i: usize| (pvs[i].capacity, i);
        let mut best: Option<usize> = None;
        let mut offer = |i: usize| {
            if best.is_none_or(|b| key(i) < key(b)) {
                best = Some(i);
            }
        };
        for (label, by_value) in &self.by_label {
            if let Some(list) = node.label(label).and_then(|v| by_value.get(v))
                && let Some(&i) = list.iter().find(|i| !excluded.contains(i))
            {
                offer(i);
            }
        }
        if let Some(&i) = self
            .others
            .iter()
            .find(|&&i| !excluded.contains(&i) && pvs[i].fits(node))
        {
            offer(i);
        }
        best
    }
}

/// What Reserve assumes for a node: claims matched to PVs, and claims to provision.
#[derive(Clone, Debug, Default)]
pub struct PodVolumes {
    /// (PV, claim) pairs.
    pub static_bindings: Vec<(Arc<PersistentVolume>, Arc<PersistentVolumeClaim>)>,
    /// Claims to provision.
    pub dynamic_provisions: Vec<Arc<PersistentVolumeClaim>>,
}

/// `FindPodVolumes`: the node's volumes for the pod and the reasons it does not fit
/// (empty when it does), or an error.
pub fn find_pod_volumes(
    storage: &StorageObjects,
    claims: &PodVolumeClaims,
    node: &NodeInfo,
) -> Result<(PodVolumes, Vec<&'static str>), String> {
    let mut volumes = PodVolumes::default();
    let mut bound_satisfied = true;
    let mut bound_pvs_found = true;
    let mut unbound_satisfied = true;
    let mut sufficient_storage = true;

    if !claims.bound.is_empty() {
        (bound_satisfied, bound_pvs_found) = check_bound_claims(&claims.bound, node);
    }
    'unbound: {
        if claims.unbound_delay_binding.is_empty() {
            break 'unbound;
        }
        let mut to_match = Vec::new();
        let mut to_provision = Vec::new();
        for (index, claim) in claims.unbound_delay_binding.iter().enumerate() {
            match claim
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANN_SELECTED_NODE))
            {
                Some(selected) if selected != node.name() => {
                    unbound_satisfied = false;
                    break 'unbound;
                }
                Some(_) => to_provision.push(claim.clone()),
                None => to_match.push(index),
            }
        }
        if !to_match.is_empty() {
            let (found, bindings, unmatched) = find_matching_volumes(claims, &to_match, node)?;
            unbound_satisfied = found;
            volumes.static_bindings = bindings;
            to_provision.extend(unmatched);
        }
        if !to_provision.is_empty() {
            let (satisfied, sufficient, provisions) =
                check_volume_provisions(storage, &to_provision, node)?;
            unbound_satisfied = satisfied;
            sufficient_storage = sufficient;
            volumes.dynamic_provisions = provisions;
        }
    }

    let mut reasons = Vec::new();
    if !bound_satisfied {
        reasons.push(ERR_REASON_NODE_CONFLICT);
    }
    if !unbound_satisfied {
        reasons.push(ERR_REASON_BIND_CONFLICT);
    }
    if !sufficient_storage {
        reasons.push(ERR_REASON_NOT_ENOUGH_SPACE);
    }
    if !bound_pvs_found {
        reasons.push(ERR_REASON_PV_NOT_EXIST);
    }
    Ok((volumes, reasons))
}

/// For `--explain`: which claims stop `node`, in words, one line per claim (`claim
/// data-db-0: no Available PV of class local-ssd with >= 10Gi on this node`), in the
/// order [`find_pod_volumes`] meets them. Called only for a rejected node.
pub fn explain_node(
    storage: &StorageObjects,
    claims: &PodVolumeClaims,
    node: &NodeInfo,
) -> Vec<String> {
    let mut notes = Vec::new();
    for (claim, pv) in &claims.bound {
        let volume = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.as_deref())
            .unwrap_or_default();
        match pv {
            None => notes.push(format!(
                "claim {}: bound to PersistentVolume {volume}, which does not exist",
                claim_name(claim)
            )),
            Some(pv) if !pv.fits(node) => notes.push(format!(
                "claim {}: bound to PersistentVolume {volume}, whose node affinity does not match this node",
                claim_name(claim)
            )),
            Some(_) => {}
        }
    }
    let mut to_match = Vec::new();
    let mut to_provision = Vec::new();
    for (index, claim) in claims.unbound_delay_binding.iter().enumerate() {
        match claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_SELECTED_NODE))
        {
            Some(selected) if selected != node.name() => notes.push(format!(
                "claim {}: being provisioned for node {selected} ({ANN_SELECTED_NODE})",
                claim_name(claim)
            )),
            Some(_) => to_provision.push(claim.clone()),
            None => to_match.push(index),
        }
    }
    if !to_match.is_empty()
        && let Ok((_, _, unmatched)) = find_matching_volumes(claims, &to_match, node)
    {
        for claim in unmatched {
            if let Some(why) = provision_problem(storage, &claim, node) {
                let size = claim_request_text(&claim)
                    .map(|q| format!(" with >= {}", q.trim()))
                    .unwrap_or_default();
                let selector = if claim.spec.as_ref().is_some_and(|s| s.selector.is_some()) {
                    " matching its selector"
                } else {
                    ""
                };
                notes.push(format!(
                    "claim {}: no Available PV of class {}{size}{selector} on this node{}, and {why}",
                    claim_name(&claim),
                    class_shown(&claim),
                    near_miss(claims, &claim, node)
                ));
            }
        }
    }
    for claim in to_provision {
        if let Some(why) = provision_problem(storage, &claim, node) {
            notes.push(format!("claim {}: {why}", claim_name(&claim)));
        }
    }
    notes
}

/// The PV of the claim's class on `node` that came closest, in words: ` (NAME is big
/// enough but bound to claim OTHER)` for the first one that is big enough but bound
/// (or assumed bound, by an earlier pod's Reserve) to another claim, else ` (NAME is
/// Available but holds only SIZE)` for the first free one that is too small; empty
/// when there is neither.
fn near_miss(claims: &PodVolumeClaims, claim: &PersistentVolumeClaim, node: &NodeInfo) -> String {
    let requested = claim_request(claim);
    let pvs = claims
        .pvs_by_class
        .get(claim_class(claim))
        .map_or(&[][..], Vec::as_slice);
    let name = |c: &CandidatePv| c.pv.metadata.name.clone().unwrap_or_default();
    let on_node = || pvs.iter().filter(|c| c.fits(node));
    let taken = on_node()
        .filter(|c| c.capacity >= requested && !is_volume_bound_to_claim(&c.pv, claim))
        .find_map(|c| {
            let r = c.pv.spec.as_ref()?.claim_ref.as_ref()?;
            Some(format!(
                " ({} is big enough but bound to claim {})",
                name(c),
                r.name.as_deref().unwrap_or_default()
            ))
        });
    let small = || {
        on_node()
            .find(|c| {
                c.capacity < requested
                    && c.pv.spec.as_ref().is_none_or(|s| s.claim_ref.is_none())
                    && c.pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available")
            })
            .map(|c| {
                let size =
                    c.pv.spec
                        .as_ref()
                        .and_then(|s| s.capacity.as_ref())
                        .and_then(|m| m.get("storage"))
                        .map_or("", |q| q.0.as_str());
                format!(" ({} is Available but holds only {size})", name(c))
            })
    };
    taken.or_else(small).unwrap_or_default()
}

fn claim_name(claim: &PersistentVolumeClaim) -> &str {
    claim.metadata.name.as_deref().unwrap_or_default()
}

fn class_shown(claim: &PersistentVolumeClaim) -> &str {
    match claim_class(claim) {
        "" => "\"\"",
        class => class,
    }
}

/// Why `claim` cannot be provisioned on `node`, in words; `None` when it can.
fn provision_problem(
    storage: &StorageObjects,
    claim: &PersistentVolumeClaim,
    node: &NodeInfo,
) -> Option<String> {
    let class_name = claim_class(claim);
    if class_name.is_empty() {
        return Some("it has no storageClassName to provision from".to_owned());
    }
    let Some(class) = storage.class(class_name) else {
        return Some(format!("StorageClass {class_name} does not exist"));
    };
    let provisioner = class.provisioner.as_str();
    if provisioner.is_empty() || provisioner == NOT_SUPPORTED_PROVISIONER {
        return Some(format!(
            "class {class_name} does not provision volumes ({NOT_SUPPORTED_PROVISIONER})"
        ));
    }
    if !match_topology(class, node) {
        return Some(format!(
            "class {class_name}'s allowedTopologies do not include this node"
        ));
    }
    if !has_enough_capacity(storage, provisioner, claim, class_name, node) {
        return Some(format!(
            "no CSIStorageCapacity of class {class_name} for this node has room for {}",
            claim_request_text(claim).unwrap_or_default().trim()
        ));
    }
    None
}

/// `checkBoundClaims`: (every PV allows the node, every PV exists). Stops at the first
/// missing PV.
fn check_bound_claims(
    bound: &[(Arc<PersistentVolumeClaim>, Option<CandidatePv>)],
    node: &NodeInfo,
) -> (bool, bool) {
    for (_, pv) in bound {
        let Some(pv) = pv else {
            return (true, false);
        };
        if !pv.fits(node) {
            return (false, true);
        }
    }
    (true, true)
}

/// `findMatchingVolumes`: the claims at `indices` of the unbound ones, smallest request
/// first, each to the smallest matching PV not chosen for an earlier claim. Returns
/// (all matched, bindings, unmatched claims).
#[allow(clippy::type_complexity)]
fn find_matching_volumes(
    claims: &PodVolumeClaims,
    indices: &[usize],
    node: &NodeInfo,
) -> Result<
    (
        bool,
        Vec<(Arc<PersistentVolume>, Arc<PersistentVolumeClaim>)>,
        Vec<Arc<PersistentVolumeClaim>>,
    ),
    String,
> {
    let mut sorted = indices.to_vec();
    sorted.sort_by_key(|&i| claim_request(&claims.unbound_delay_binding[i]));
    // PVs chosen so far, by (class, index in that class's list).
    let mut chosen: HashMap<&str, HashSet<usize>> = HashMap::new();
    let mut found_all = true;
    let mut bindings = Vec::new();
    let mut unmatched = Vec::new();
    let empty = HashSet::new();
    for i in sorted {
        let claim = &claims.unbound_delay_binding[i];
        let class = claim_class(claim);
        let pvs = claims
            .pvs_by_class
            .get(class)
            .map_or(&[][..], Vec::as_slice);
        let matcher = match claims.matchers.get(i) {
            Some(Some(Ok(m))) => m,
            Some(Some(Err(e))) => return Err(e.clone()),
            _ => return Err(format!("no matcher for claim {i}")),
        };
        match matcher.pick(pvs, node, chosen.get(class).unwrap_or(&empty)) {
            Some(p) => {
                chosen.entry(class).or_default().insert(p);
                bindings.push((pvs[p].pv.clone(), claim.clone()));
            }
            None => {
                found_all = false;
                unmatched.push(claim.clone());
            }
        }
    }
    Ok((found_all, bindings, unmatched))
}

/// `IsVolumeBoundToClaim`: the PV's `claimRef` names the claim (and its UID, when
/// the reference has one).
pub fn is_volume_bound_to_claim(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if r.name.as_deref().unwrap_or_default() != claim.metadata.name.as_deref().unwrap_or_default()
        || r.namespace.as_deref().unwrap_or_default()
            != claim.metadata.namespace.as_deref().unwrap_or_default()
    {
        return false;
    }
    let ref_uid = r.uid.as_deref().unwrap_or_default();
    ref_uid.is_empty() || ref_uid == claim.metadata.uid.as_deref().unwrap_or_default()
}

fn volume_mode(mode: Option<&String>) -> &str {
    mode.map_or("Filesystem", String::as_str)
}

/// `MatchTopologySelectorTerms`: no terms admit every node; a term admits a node when
/// each of its expressions names the node's value of its key.
fn match_topology(class: &StorageClass, node: &NodeInfo) -> bool {
    let Some(terms) = class.allowed_topologies.as_ref().filter(|t| !t.is_empty()) else {
        return true;
    };
    terms.iter().any(|term| {
        let exprs = term.match_label_expressions.as_deref().unwrap_or_default();
        !exprs.is_empty()
            && exprs.iter().all(|e| {
                !e.values.is_empty()
                    && node
                        .label(&e.key)
                        .is_some_and(|v| e.values.iter().any(|x| x == v))
            })
    })
}

/// `checkVolumeProvisions`: (can provision, enough capacity, claims to provision).
fn check_volume_provisions(
    storage: &StorageObjects,
    claims: &[Arc<PersistentVolumeClaim>],
    node: &NodeInfo,
) -> Result<(bool, bool, Vec<Arc<PersistentVolumeClaim>>), String> {
    let mut provisions = Vec::new();
    for claim in claims {
        let class_name = claim_class(claim);
        if class_name.is_empty() {
            return Err(format!(
                "no class for claim {:?}",
                format!(
                    "{}/{}",
                    claim.metadata.namespace.as_deref().unwrap_or_default(),
                    claim.metadata.name.as_deref().unwrap_or_default()
                )
            ));
        }
        let Some(class) = storage.class(class_name) else {
            return Err(format!("failed to find storage class {class_name:?}"));
        };
        let provisioner = class.provisioner.as_str();
        if provisioner.is_empty() || provisioner == NOT_SUPPORTED_PROVISIONER {
            return Ok((false, true, Vec::new()));
        }
        if !match_topology(class, node) {
            return Ok((false, true, Vec::new()));
        }
        if !has_enough_capacity(storage, provisioner, claim, class_name, node) {
            return Ok((true, false, Vec::new()));
        }
        provisions.push(claim.clone());
    }
    Ok((true, true, provisions))
}

/// `hasEnoughCapacity`: only for CSI drivers with `storageCapacity: true`; then some
/// CSIStorageCapacity of the class whose topology selects the node must offer the
/// request (its `maximumVolumeSize`, else its `capacity`).
fn has_enough_capacity(
    storage: &StorageObjects,
    provisioner: &str,
    claim: &PersistentVolumeClaim,
    class_name: &str,
    node: &NodeInfo,
) -> bool {
    let Some(request) = claim_request_text(claim) else {
        return true;
    };
    let Some(driver) = storage.csi_driver(provisioner) else {
        return true;
    };
    if driver.spec.storage_capacity != Some(true) {
        return true;
    }
    let size = storage_quantity(Some(request)).value();
    let labels: BTreeMap<String, String> = node
        .labels()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    storage.capacities().iter().any(|c| {
        if c.storage_class_name != class_name {
            return false;
        }
        let limit = c.maximum_volume_size.as_ref().or(c.capacity.as_ref());
        let Some(limit) = limit.and_then(|q| Quantity::parse(&q.0).ok()) else {
            return false;
        };
        if limit.value() < size {
            return false;
        }
        let Some(topology) = &c.node_topology else {
            return false;
        };
        Selector::from_label_selector(Some(topology)).is_ok_and(|s| s.matches(&labels))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Node;
    use serde_json::json;

    fn pv(name: &str, size: &str, phase: &str, claim_ref: Option<&str>) -> CandidatePv {
        let mut spec = json!({"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local", "volumeMode": "Filesystem"});
        if let Some(c) = claim_ref {
            spec["claimRef"] = json!({"namespace": "default", "name": c});
        }
        CandidatePv::new(Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec,
                "status": {"phase": phase}}))
            .unwrap(),
        ))
    }

    fn claim(name: &str, size: &str) -> PersistentVolumeClaim {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                "volumeMode": "Filesystem", "resources": {"requests": {"storage": size}}}}))
        .unwrap()
    }

    fn node() -> NodeInfo {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
        NodeInfo::new(Arc::new(node)).unwrap()
    }

    fn matched(claim: &PersistentVolumeClaim, pvs: &[CandidatePv]) -> Option<String> {
        ClaimMatcher::new(claim, pvs)
            .unwrap()
            .pick(pvs, &node(), &HashSet::new())
            .map(|i| pvs[i].name().to_owned())
    }

    #[test]
    fn the_smallest_available_pv_that_fits_wins() {
        let pvs = [
            pv("big", "20Gi", "Available", None),
            pv("small", "5Gi", "Available", None),
            pv("tiny", "1Gi", "Available", None),
            pv("pending", "5Gi", "Pending", None),
        ];
        assert_eq!(matched(&claim("c", "2Gi"), &pvs).as_deref(), Some("small"));
        assert_eq!(matched(&claim("c", "30Gi"), &pvs), None);
    }

    #[test]
    fn a_pv_pre_bound_to_the_claim_wins_and_is_hidden_from_others() {
        let pvs = [
            pv("small", "5Gi", "Available", None),
            pv("mine", "20Gi", "Bound", Some("c")),
        ];
        assert_eq!(matched(&claim("c", "2Gi"), &pvs).as_deref(), Some("mine"));
        assert_eq!(matched(&claim("other", "10Gi"), &pvs), None);
    }

    #[test]
    fn claims_are_matched_smallest_request_first_to_distinct_pvs() {
        let pvs = vec![
            pv("a", "5Gi", "Available", None),
            pv("b", "10Gi", "Available", None),
        ];
        let mut claims = PodVolumeClaims {
            unbound_delay_binding: vec![
                Arc::new(claim("large", "8Gi")),
                Arc::new(claim("small", "4Gi")),
            ],
            pvs_by_class: BTreeMap::from([("local".to_owned(), pvs)]),
            ..Default::default()
        };
        claims.prepare_matchers();
        let (all, bindings, unmatched) = find_matching_volumes(&claims, &[0, 1], &node()).unwrap();
        assert!(all && unmatched.is_empty());
        let pairs: Vec<(String, String)> = bindings
            .iter()
            .map(|(pv, c)| {
                (
                    pv.metadata.name.clone().unwrap(),
                    c.metadata.name.clone().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                ("a".to_owned(), "small".to_owned()),
                ("b".to_owned(), "large".to_owned())
            ]
        );
    }
}
