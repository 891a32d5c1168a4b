//! The storage objects (PersistentVolumes, claims, StorageClasses, CSINodes,
//! CSIDrivers, CSIStorageCapacities, VolumeAttachments) and the DRA objects
//! (DeviceClasses, ResourceSlices, ResourceClaims) in the runtime's cache, as the
//! volume plugins and DynamicResources read them: the storage objects become the
//! snapshot's [`StorageObjects`] (rebuilt when one changed, before the next cycle or
//! when a binding cycle looks), the classes and slices the shared `DraState`'s
//! catalog, the claims its claim store. Each change is a cluster event for the queue,
//! so a pod waiting for a claim, a volume or a device is retried when one appears.
//!
//! A kind the API server does not serve or refuses to this scheduler (404, 403) is
//! said once; the pods that need it stay unschedulable with that reason (the plugins
//! read it from [`StorageObjects::unavailable`] and `DraState::unavailable`) until
//! a later list succeeds.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use kube::Resource;
use kubesched_framework::{ActionType, ClusterEvent, DraCatalog, EventResource, StorageObjects};

use crate::runtime::{Inner, Shared, lock};
use crate::watch::{Watched, object_key};

/// The storage objects by kind, each by key, and the kinds that cannot be listed.
#[derive(Default)]
pub(crate) struct StorageCache {
    pvs: BTreeMap<String, Arc<PersistentVolume>>,
    claims: BTreeMap<String, Arc<PersistentVolumeClaim>>,
    classes: BTreeMap<String, Arc<StorageClass>>,
    csi_nodes: BTreeMap<String, Arc<CSINode>>,
    csi_drivers: BTreeMap<String, Arc<CSIDriver>>,
    capacities: BTreeMap<String, Arc<CSIStorageCapacity>>,
    attachments: BTreeMap<String, Arc<VolumeAttachment>>,
    /// Resource (`persistentvolumes`, ...) → why it cannot be listed.
    refused: BTreeMap<&'static str, String>,
    /// The index built from the maps; `None` after a change.
    built: Option<Arc<StorageObjects>>,
}

impl StorageCache {
    /// The objects as the plugins read them, built again if something changed.
    pub(crate) fn objects(&mut self) -> Arc<StorageObjects> {
        if let Some(b) = &self.built {
            return b.clone();
        }
        let mut s = StorageObjects::new();
        self.pvs.values().for_each(|o| s.add_pv(o.clone()));
        self.claims.values().for_each(|o| s.add_claim(o.clone()));
        self.classes.values().for_each(|o| s.add_class(o.clone()));
        self.csi_nodes
            .values()
            .for_each(|o| s.add_csi_node(o.clone()));
        self.csi_drivers
            .values()
            .for_each(|o| s.add_csi_driver(o.clone()));
        self.capacities
            .values()
            .for_each(|o| s.add_capacity(o.clone()));
        self.attachments
            .values()
            .for_each(|o| s.add_attachment(o.clone()));
        s.set_unavailable(refusal(&self.refused));
        let built = Arc::new(s);
        self.built = Some(built.clone());
        built
    }

    /// Whether the index must be built again.
    pub(crate) fn changed(&self) -> bool {
        self.built.is_none()
    }
}

/// The classes and slices DynamicResources allocates from, and the DRA kinds that
/// cannot be listed.
#[derive(Default)]
pub(crate) struct DraCache {
    classes: BTreeMap<String, Arc<DeviceClass>>,
    slices: BTreeMap<String, Arc<ResourceSlice>>,
    refused: BTreeMap<&'static str, String>,
}

/// One line for the kinds that cannot be listed, or `None`.
fn refusal(refused: &BTreeMap<&'static str, String>) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    Some(
        refused
            .iter()
            .map(|(kind, why)| format!("kubesched cannot list {kind}: {why}"))
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The events a relist is: objects that appeared, changed (another resourceVersion)
/// or went away while the watch was down.
fn list_events<K: Resource>(
    old: &BTreeMap<String, Arc<K>>,
    new: &BTreeMap<String, Arc<K>>,
    resource: EventResource,
) -> Vec<ClusterEvent> {
    let mut action = ActionType::NONE;
    for (key, o) in new {
        match old.get(key) {
            None => action |= ActionType::ADD,
            Some(before) if before.meta().resource_version != o.meta().resource_version => {
                action |= ActionType::UPDATE
            }
            Some(_) => {}
        }
    }
    if old.keys().any(|k| !new.contains_key(k)) {
        action |= ActionType::DELETE;
    }
    [ActionType::ADD, ActionType::UPDATE, ActionType::DELETE]
        .into_iter()
        .filter(|a| action.intersects(*a))
        .map(|a| ClusterEvent::new(resource, a))
        .collect()
}

/// A storage kind kept in the [`StorageCache`].
pub(crate) trait StorageKind: Watched {
    /// The queue's name for its events.
    const EVENT: EventResource;
    /// Its resource name, for messages.
    const RESOURCE: &'static str;
    /// Its map in the cache.
    fn slot(cache: &mut StorageCache) -> &mut BTreeMap<String, Arc<Self>>;
}

/// A DRA kind kept in the [`DraCache`] (what the catalog is built from).
pub(crate) trait DraKind: Watched {
    /// The queue's name for its events.
    const EVENT: EventResource;
    /// Its resource name, for messages.
    const RESOURCE: &'static str;
    /// Its map in the cache.
    fn slot(cache: &mut DraCache) -> &mut BTreeMap<String, Arc<Self>>;
}

macro_rules! storage_kind {
    ($t:ty, $field:ident, $event:ident, $resource:literal) => {
        impl StorageKind for $t {
            const EVENT: EventResource = EventResource::$event;
            const RESOURCE: &'static str = $resource;
            fn slot(cache: &mut StorageCache) -> &mut BTreeMap<String, Arc<Self>> {
                &mut cache.$field
            }
        }
        impl Watched for $t {
            const OPTIONAL: bool = true;
            fn listed(shared: &Shared, items: Vec<Self>) {
                shared.storage_listed(items);
            }
            fn changed(shared: &Shared, object: Self, deleted: bool) {
                shared.storage_changed(object, deleted);
            }
            fn refused(shared: &Shared, reason: Option<String>) {
                shared.storage_refused::<Self>(reason);
            }
        }
    };
}
storage_kind!(PersistentVolume, pvs, PersistentVolume, "persistentvolumes");
storage_kind!(
    PersistentVolumeClaim,
    claims,
    PersistentVolumeClaim,
    "persistentvolumeclaims"
);
storage_kind!(StorageClass, classes, StorageClass, "storageclasses");
storage_kind!(CSINode, csi_nodes, CsiNode, "csinodes");
storage_kind!(CSIDriver, csi_drivers, CsiDriver, "csidrivers");
storage_kind!(
    CSIStorageCapacity,
    capacities,
    CsiStorageCapacity,
    "csistoragecapacities"
);
storage_kind!(
    VolumeAttachment,
    attachments,
    VolumeAttachment,
    "volumeattachments"
);

macro_rules! dra_kind {
    ($t:ty, $field:ident, $event:ident, $resource:literal) => {
        impl DraKind for $t {
            const EVENT: EventResource = EventResource::$event;
            const RESOURCE: &'static str = $resource;
            fn slot(cache: &mut DraCache) -> &mut BTreeMap<String, Arc<Self>> {
                &mut cache.$field
            }
        }
        impl Watched for $t {
            const OPTIONAL: bool = true;
            fn listed(shared: &Shared, items: Vec<Self>) {
                shared.dra_listed(items);
            }
            fn changed(shared: &Shared, object: Self, deleted: bool) {
                shared.dra_changed(object, deleted);
            }
            fn refused(shared: &Shared, reason: Option<String>) {
                shared.dra_refused(<Self as DraKind>::RESOURCE, reason);
            }
        }
    };
}
dra_kind!(
    DeviceClass,
    classes,
    DeviceClass,
    "deviceclasses.resource.k8s.io"
);
dra_kind!(
    ResourceSlice,
    slices,
    ResourceSlice,
    "resourceslices.resource.k8s.io"
);

impl Watched for ResourceClaim {
    const OPTIONAL: bool = true;
    fn listed(shared: &Shared, items: Vec<Self>) {
        shared.claims_listed(items);
    }
    fn changed(shared: &Shared, object: Self, deleted: bool) {
        shared.claim_changed(object, deleted);
    }
    fn refused(shared: &Shared, reason: Option<String>) {
        shared.dra_refused("resourceclaims.resource.k8s.io", reason);
    }
}

impl Shared {
    fn storage_events(&self, mut inner: std::sync::MutexGuard<'_, Inner>, events: &[ClusterEvent]) {
        for event in events {
            inner.queue.move_all_to_active_or_backoff(*event);
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
    }

    /// The list of a storage kind was (re)loaded.
    pub(crate) fn storage_listed<K: StorageKind>(&self, items: Vec<K>) {
        let new: BTreeMap<String, Arc<K>> = items
            .into_iter()
            .map(|o| (object_key(&o), Arc::new(o)))
            .collect();
        let mut inner = lock(&self.inner);
        let events = list_events(K::slot(&mut inner.storage), &new, K::EVENT);
        *K::slot(&mut inner.storage) = new;
        inner.storage.built = None;
        self.storage_events(inner, &events);
    }

    /// One storage object was added, changed or deleted.
    pub(crate) fn storage_changed<K: StorageKind>(&self, o: K, deleted: bool) {
        let start = Instant::now();
        let key = object_key(&o);
        let mut inner = lock(&self.inner);
        let slot = K::slot(&mut inner.storage);
        let action = if deleted {
            if slot.remove(&key).is_none() {
                return;
            }
            ActionType::DELETE
        } else if slot.insert(key, Arc::new(o)).is_some() {
            ActionType::UPDATE
        } else {
            ActionType::ADD
        };
        inner.storage.built = None;
        let event = ClusterEvent::new(K::EVENT, action);
        self.storage_events(inner, &[event]);
        self.metrics.event_handled(&event.label(), start.elapsed());
    }

    /// A storage kind cannot be listed (`Some(why)`), or can again (`None`).
    pub(crate) fn storage_refused<K: StorageKind>(&self, reason: Option<String>) {
        let mut inner = lock(&self.inner);
        let changed = match reason {
            Some(r) => inner.storage.refused.insert(K::RESOURCE, r).is_none(),
            None => inner.storage.refused.remove(K::RESOURCE).is_some(),
        };
        if changed {
            inner.storage.built = None;
            self.storage_events(inner, &[ClusterEvent::new(K::EVENT, ActionType::ADD)]);
        }
    }

    /// The storage objects as the API server has them now (the watches' view).
    pub(crate) fn storage_objects(inner: &mut Inner) -> Arc<StorageObjects> {
        let objects = inner.storage.objects();
        inner
            .sched
            .snapshot_mut()
            .set_storage(Some(objects.clone()));
        objects
    }

    fn refresh_catalog(&self, inner: &mut Inner) {
        let cache = &inner.dra_cache;
        self.dra.set_catalog(DraCatalog::new(
            cache.classes.values().cloned(),
            cache.slices.values().cloned(),
            std::iter::empty(),
        ));
    }

    /// The list of DeviceClasses or ResourceSlices was (re)loaded.
    pub(crate) fn dra_listed<K: DraKind>(&self, items: Vec<K>) {
        let new: BTreeMap<String, Arc<K>> = items
            .into_iter()
            .map(|o| (object_key(&o), Arc::new(o)))
            .collect();
        let mut inner = lock(&self.inner);
        let events = list_events(K::slot(&mut inner.dra_cache), &new, K::EVENT);
        *K::slot(&mut inner.dra_cache) = new;
        self.refresh_catalog(&mut inner);
        self.storage_events(inner, &events);
    }

    /// A DeviceClass or ResourceSlice was added, changed or deleted.
    pub(crate) fn dra_changed<K: DraKind>(&self, o: K, deleted: bool) {
        let start = Instant::now();
        let key = object_key(&o);
        let mut inner = lock(&self.inner);
        let slot = K::slot(&mut inner.dra_cache);
        let action = if deleted {
            if slot.remove(&key).is_none() {
                return;
            }
            ActionType::DELETE
        } else if slot.insert(key, Arc::new(o)).is_some() {
            ActionType::UPDATE
        } else {
            ActionType::ADD
        };
        self.refresh_catalog(&mut inner);
        let event = ClusterEvent::new(K::EVENT, action);
        self.storage_events(inner, &[event]);
        self.metrics.event_handled(&event.label(), start.elapsed());
    }

    /// A DRA kind cannot be listed (`Some(why)`), or can again (`None`).
    pub(crate) fn dra_refused(&self, resource: &'static str, reason: Option<String>) {
        let mut inner = lock(&self.inner);
        let changed = match reason {
            Some(r) => inner.dra_cache.refused.insert(resource, r).is_none(),
            None => inner.dra_cache.refused.remove(resource).is_some(),
        };
        if changed {
            self.dra.set_unavailable(refusal(&inner.dra_cache.refused));
            let event = ClusterEvent::new(EventResource::ResourceClaim, ActionType::ADD);
            self.storage_events(inner, &[event]);
        }
    }

    /// The list of ResourceClaims was (re)loaded.
    pub(crate) fn claims_listed(&self, items: Vec<ResourceClaim>) {
        let inner = lock(&self.inner);
        self.dra
            .claims_listed(items.into_iter().map(Arc::new).collect());
        let events = [
            ClusterEvent::new(EventResource::ResourceClaim, ActionType::ADD),
            ClusterEvent::new(EventResource::ResourceClaim, ActionType::UPDATE),
        ];
        self.storage_events(inner, &events);
    }

    /// A ResourceClaim was added, changed or deleted.
    pub(crate) fn claim_changed(&self, claim: ResourceClaim, deleted: bool) {
        let start = Instant::now();
        let inner = lock(&self.inner);
        let ns = claim.metadata.namespace.as_deref().unwrap_or("default");
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        let known = self.dra.claim(ns, name).is_some();
        let action = if deleted {
            self.dra.claim_deleted(ns, name);
            ActionType::DELETE
        } else {
            self.dra.claim_changed(Arc::new(claim));
            if known {
                ActionType::UPDATE
            } else {
                ActionType::ADD
            }
        };
        let event = ClusterEvent::new(EventResource::ResourceClaim, action);
        self.storage_events(inner, &[event]);
        self.metrics.event_handled(&event.label(), start.elapsed());
    }
}
