//! [`ApiWriter`]: the runtime's [`ClusterWriter`], through which VolumeBinding's and
//! DynamicResources' PreBind and Unreserve write to the API server, as
//! kube-scheduler's do: updates that carry the object's `resourceVersion` (the API
//! server answers 409 Conflict when the object changed since it was read), a strategic
//! merge patch with the claim's UID for Unreserve. Each request runs as a task on the
//! runtime, so that a binding task awaits it holding no thread, and a synchronous
//! Unreserve may block on it from its own thread. Its wait for volume bindings watches
//! the runtime's cache, woken by each change the watches bring.

use std::future::Future;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kubesched_framework::{
    BindingCheck, BindingView, ClusterWriter, PodInfo, WriteError, WriteFuture,
};

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

fn name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
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

    /// Sends `request` as a task on the runtime when first polled, so that any
    /// executor may await the answer.
    fn send<T: Send + 'static>(
        &self,
        request: impl Future<Output = kube::Result<T>> + Send + 'static,
    ) -> WriteFuture<'static, Result<T, WriteError>> {
        let rt = self.rt.clone();
        Box::pin(async move {
            match rt.spawn(request).await {
                Ok(answer) => answer.map_err(write_error),
                Err(e) => Err(WriteError::new(None, format!("write task: {e}"))),
            }
        })
    }

    fn claims(&self, namespace: &str) -> Api<ResourceClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

impl ClusterWriter for ApiWriter {
    fn update_pv(
        &self,
        pv: &PersistentVolume,
    ) -> WriteFuture<'_, Result<PersistentVolume, WriteError>> {
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        let pv = pv.clone();
        self.send(async move {
            api.replace(&name(&pv.metadata), &PostParams::default(), &pv)
                .await
        })
    }

    fn update_pvc(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> WriteFuture<'_, Result<PersistentVolumeClaim, WriteError>> {
        let api: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), namespace(&claim.metadata));
        let claim = claim.clone();
        self.send(async move {
            api.replace(&name(&claim.metadata), &PostParams::default(), &claim)
                .await
        })
    }

    fn wait_for_bindings<'a>(
        &'a self,
        pod: &'a PodInfo,
        node: &'a str,
        timeout: Duration,
        check: &'a mut (dyn FnMut(&BindingView<'_>) -> BindingCheck + Send),
    ) -> WriteFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let Some(shared) = self.shared.get().and_then(Weak::upgrade) else {
                return Err("context canceled".into());
            };
            let deadline = Instant::now() + timeout;
            loop {
                // Registered before the look, so that no change after it is missed.
                let mut changed = std::pin::pin!(shared.changed.notified());
                changed.as_mut().enable();
                let now = Instant::now();
                {
                    let mut inner = lock(&shared.inner);
                    if shared.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                        return Err("context canceled".into());
                    }
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
                }
                // Woken by every change the watches bring; at least once a second, as
                // kube-scheduler polls.
                let wait = deadline
                    .saturating_duration_since(now)
                    .min(Duration::from_secs(1));
                futures::future::select(changed, self.sleep(wait)).await;
            }
        })
    }

    fn sleep(&self, duration: Duration) -> WriteFuture<'static, ()> {
        let rt = self.rt.clone();
        Box::pin(async move {
            let _ = rt.spawn(tokio::time::sleep(duration)).await;
        })
    }

    fn get_resource_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>> {
        let (api, name) = (self.claims(namespace), name.to_owned());
        self.send(async move { api.get(&name).await })
    }

    fn update_resource_claim(
        &self,
        claim: &ResourceClaim,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>> {
        let (api, claim) = (self.claims(namespace(&claim.metadata)), claim.clone());
        self.send(async move {
            api.replace(&name(&claim.metadata), &PostParams::default(), &claim)
                .await
        })
    }

    fn update_resource_claim_status(
        &self,
        claim: &ResourceClaim,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>> {
        let (api, claim) = (self.claims(namespace(&claim.metadata)), claim.clone());
        self.send(async move {
            api.replace_status(&name(&claim.metadata), &PostParams::default(), &claim)
                .await
        })
    }

    fn patch_resource_claim_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>> {
        let key = format!("{namespace}/{name}");
        let (api, name, patch) = (self.claims(namespace), name.to_owned(), patch.clone());
        let write = self.send(async move {
            api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
        });
        Box::pin(async move {
            let r = write.await;
            if let Err(e) = &r {
                // Unreserve's write: nothing waits for it; the pod's next try comes back
                // here.
                tracing::warn!(claim = %key, error = %e, "cannot take the pod out of the claim's reservedFor");
            }
            r
        })
    }

    fn create_resource_claim(
        &self,
        claim: &ResourceClaim,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>> {
        let (api, claim) = (self.claims(namespace(&claim.metadata)), claim.clone());
        self.send(async move { api.create(&PostParams::default(), &claim).await })
    }

    fn delete_resource_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> WriteFuture<'_, Result<(), WriteError>> {
        let (api, name) = (self.claims(namespace), name.to_owned());
        self.send(async move {
            api.delete(&name, &DeleteParams::default())
                .await
                .map(|_| ())
        })
    }

    fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> WriteFuture<'_, Result<(), WriteError>> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let (name, patch) = (name.to_owned(), patch.clone());
        self.send(async move {
            api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
                .map(|_| ())
        })
    }
}
