//! [`ApiWriter`]: the runtime's [`ClusterWriter`], through which VolumeBinding's and
//! DynamicResources' PreBind and Unreserve write to the API server, as
//! kube-scheduler's do: updates that carry the object's `resourceVersion` (the API
//! server answers 409 Conflict when the object changed since it was read), a strategic
//! merge patch with the claim's UID for Unreserve. Its wait for volume bindings
//! watches the runtime's cache, woken by each change the watches bring, on the binding
//! cycle's thread (never the scheduling loop's).

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubesched_framework::{BindingCheck, BindingView, ClusterWriter, PodInfo, WriteError};

use crate::runtime::{Shared, lock};

/// Writes storage and DRA objects for the plugins.
pub(crate) struct ApiWriter {
    client: kube::Client,
    rt: tokio::runtime::Handle,
    /// The runtime's state, set once it exists (the plugins are built before it).
    shared: OnceLock<Weak<Shared>>,
}

fn write_error(e: kube::Error) -> WriteError {
    match e {
        kube::Error::Api(s) => WriteError::new(Some(s.code), s.message),
        e => WriteError::new(None, e.to_string()),
    }
}

fn namespace(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

fn name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

impl ApiWriter {
    pub(crate) fn new(client: kube::Client, rt: tokio::runtime::Handle) -> ApiWriter {
        ApiWriter {
            client,
            rt,
            shared: OnceLock::new(),
        }
    }

    /// Connects the writer to the runtime's state, for the wait for bindings.
    pub(crate) fn attach(&self, shared: &Arc<Shared>) {
        let _ = self.shared.set(Arc::downgrade(shared));
    }
}

impl ClusterWriter for ApiWriter {
    fn update_pv(&self, pv: &PersistentVolume) -> Result<PersistentVolume, WriteError> {
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        self.rt
            .block_on(api.replace(name(&pv.metadata), &PostParams::default(), pv))
            .map_err(write_error)
    }

    fn update_pvc(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, WriteError> {
        let api: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), namespace(&claim.metadata));
        self.rt
            .block_on(api.replace(name(&claim.metadata), &PostParams::default(), claim))
            .map_err(write_error)
    }

    fn wait_for_bindings(
        &self,
        pod: &PodInfo,
        node: &str,
        timeout: Duration,
        check: &mut dyn FnMut(&BindingView<'_>) -> BindingCheck,
    ) -> Result<(), String> {
        let Some(shared) = self.shared.get().and_then(Weak::upgrade) else {
            return Err("context canceled".into());
        };
        let deadline = Instant::now() + timeout;
        let mut inner = lock(&shared.inner);
        loop {
            if shared.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                return Err("context canceled".into());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err("context deadline exceeded".into());
            }
            let storage = Shared::storage_objects(&mut inner);
            let node_object = inner.nodes.get(node).cloned();
            let pod_exists = inner
                .pods
                .get(pod.key())
                .is_some_and(|p| p.uid() == pod.uid());
            let view = BindingView {
                storage: &storage,
                node: node_object.as_ref(),
                pod_exists,
            };
            if check(&view)? {
                return Ok(());
            }
            // Woken by every change the watches bring; at least once a second, as
            // kube-scheduler polls.
            let wait = deadline
                .saturating_duration_since(now)
                .min(Duration::from_secs(1));
            inner = shared
                .wake
                .wait_timeout(inner, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn get_resource_claim(&self, namespace: &str, name: &str) -> Result<ResourceClaim, WriteError> {
        let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), namespace);
        self.rt.block_on(api.get(name)).map_err(write_error)
    }

    fn update_resource_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        let api: Api<ResourceClaim> =
            Api::namespaced(self.client.clone(), namespace(&claim.metadata));
        self.rt
            .block_on(api.replace(name(&claim.metadata), &PostParams::default(), claim))
            .map_err(write_error)
    }

    fn update_resource_claim_status(
        &self,
        claim: &ResourceClaim,
    ) -> Result<ResourceClaim, WriteError> {
        let api: Api<ResourceClaim> =
            Api::namespaced(self.client.clone(), namespace(&claim.metadata));
        self.rt
            .block_on(api.replace_status(name(&claim.metadata), &PostParams::default(), claim))
            .map_err(write_error)
    }

    fn patch_resource_claim_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<ResourceClaim, WriteError> {
        let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), namespace);
        let r = self
            .rt
            .block_on(api.patch_status(
                name,
                &PatchParams::default(),
                &Patch::Strategic(patch.clone()),
            ))
            .map_err(write_error);
        if let Err(e) = &r {
            // Unreserve's write: nothing waits for it; the pod's next try comes back here.
            tracing::warn!(claim = %format!("{namespace}/{name}"), error = %e, "cannot take the pod out of the claim's reservedFor");
        }
        r
    }

    fn create_resource_claim(&self, claim: &ResourceClaim) -> Result<ResourceClaim, WriteError> {
        let api: Api<ResourceClaim> =
            Api::namespaced(self.client.clone(), namespace(&claim.metadata));
        self.rt
            .block_on(api.create(&PostParams::default(), claim))
            .map_err(write_error)
    }

    fn delete_resource_claim(&self, namespace: &str, name: &str) -> Result<(), WriteError> {
        let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), namespace);
        self.rt
            .block_on(api.delete(name, &DeleteParams::default()))
            .map(|_| ())
            .map_err(write_error)
    }

    fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), WriteError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        self.rt
            .block_on(api.patch_status(
                name,
                &PatchParams::default(),
                &Patch::Strategic(patch.clone()),
            ))
            .map(|_| ())
            .map_err(write_error)
    }
}
