//! VolumeBinding's PV and claim assume caches: what the scheduler has decided and the
//! API server does not show (yet): a PV assumed pre-bound to a claim (`claimRef`), a
//! claim assumed with `volume.kubernetes.io/selected-node`.
//!
//! Reads go through the cache: an assumed object hides the API object of the same
//! name, unless the API object is newer (a higher `resourceVersion`: the watch showed
//! a change made since, such as PreBind's own write), as kube-scheduler's assume cache
//! lets a newer informer object replace an assumed one. The API objects never change
//! during a simulation (FORMAT-volumes rule 11), so there an assumption holds until it
//! is reverted (Unreserve), as in kube-scheduler when no PreBind follows.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_framework::StorageObjects;

/// The assumed PVs and claims of one VolumeBinding instance.
#[derive(Debug, Default)]
pub struct AssumeCache {
    /// PV name → assumed PV.
    pvs: HashMap<String, Arc<PersistentVolume>>,
    /// `namespace/name` → assumed claim.
    claims: HashMap<String, Arc<PersistentVolumeClaim>>,
}

/// A resourceVersion as a number (etcd's revision); `None` when it is not one.
fn version(meta: &ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref()?.parse().ok()
}

/// The assumed object, unless the API object is newer; nothing when the API object
/// is gone (a deleted object leaves kube-scheduler's assume cache too).
fn newest<'a, T: Metadata<Ty = ObjectMeta>>(
    assumed: Option<&'a Arc<T>>,
    api: Option<&'a Arc<T>>,
) -> Option<&'a Arc<T>> {
    match (assumed, api) {
        (Some(a), Some(b)) => match (version(a.metadata()), version(b.metadata())) {
            (Some(va), Some(vb)) if vb > va => Some(b),
            _ => Some(a),
        },
        (_, b) => b,
    }
}

fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or("default"),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

impl AssumeCache {
    /// A claim: the assumed one, else the API object.
    pub fn claim(
        &self,
        storage: &StorageObjects,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<PersistentVolumeClaim>> {
        newest(
            self.claims.get(&format!("{namespace}/{name}")),
            storage.claim(namespace, name),
        )
        .cloned()
    }

    /// A PV: the assumed one, else the API object.
    pub fn pv(&self, storage: &StorageObjects, name: &str) -> Option<Arc<PersistentVolume>> {
        newest(self.pvs.get(name), storage.pv(name)).cloned()
    }

    /// The PVs of a class, each as assumed.
    pub fn pvs_of_class(
        &self,
        storage: &StorageObjects,
        class: &str,
    ) -> Vec<Arc<PersistentVolume>> {
        storage
            .pvs_of_class(class)
            .map(|pv| {
                let name = pv.metadata.name.as_deref().unwrap_or_default();
                newest(self.pvs.get(name), Some(pv)).unwrap_or(pv).clone()
            })
            .collect()
    }

    /// Assumes a PV.
    pub fn assume_pv(&mut self, pv: Arc<PersistentVolume>) {
        let name = pv.metadata.name.clone().unwrap_or_default();
        self.pvs.insert(name, pv);
    }

    /// Assumes a claim.
    pub fn assume_claim(&mut self, claim: Arc<PersistentVolumeClaim>) {
        self.claims.insert(claim_key(&claim), claim);
    }

    /// Forgets an assumed PV.
    pub fn restore_pv(&mut self, name: &str) {
        self.pvs.remove(name);
    }

    /// Forgets an assumed claim.
    pub fn restore_claim(&mut self, claim: &PersistentVolumeClaim) {
        self.claims.remove(&claim_key(claim));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(rv: &str, claim: Option<&str>) -> Arc<PersistentVolume> {
        let mut v = json!({"metadata": {"name": "pv", "resourceVersion": rv}, "spec": {}});
        if let Some(c) = claim {
            v["spec"]["claimRef"] = json!({"name": c, "namespace": "default"});
        }
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn claim_of(p: &PersistentVolume) -> Option<String> {
        p.spec.as_ref()?.claim_ref.as_ref()?.name.clone()
    }

    #[test]
    fn an_assumption_holds_until_the_api_object_is_newer_or_gone() {
        let mut api = StorageObjects::new();
        api.add_pv(pv("5", None));
        let mut cache = AssumeCache::default();
        cache.assume_pv(pv("5", Some("data")));
        let seen = cache.pv(&api, "pv").unwrap();
        assert_eq!(
            claim_of(&seen).as_deref(),
            Some("data"),
            "same version: assumed"
        );
        assert_eq!(cache.pvs_of_class(&api, "").len(), 1);

        // The watch brings the API server's newer object (PreBind's write, or the
        // PV controller's): it replaces the assumption.
        let mut newer = StorageObjects::new();
        newer.add_pv(pv("7", Some("other")));
        let seen = cache.pv(&newer, "pv").unwrap();
        assert_eq!(claim_of(&seen).as_deref(), Some("other"));
        let listed = cache.pvs_of_class(&newer, "");
        assert_eq!(claim_of(&listed[0]).as_deref(), Some("other"));

        // Deleted from the API server: gone, assumption or not.
        assert!(cache.pv(&StorageObjects::new(), "pv").is_none());
    }
}
