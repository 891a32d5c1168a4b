//! [`ClusterWriter`]: the API writes that VolumeBinding's and DynamicResources' PreBind
//! and Unreserve make in kube-scheduler (a PV's `claimRef`, a claim's
//! `volume.kubernetes.io/selected-node`, a ResourceClaim's finalizer, allocation and
//! `reservedFor`, the claim of a pod's extended resources and the pod's
//! `extendedResourceClaimStatus`), and the wait for the PV controller to finish binding.
//!
//! Every write is a future ([`WriteFuture`]) that holds no thread while the API server
//! answers: the runtime's binding cycles await them as tasks, as kube-scheduler's
//! binding goroutines wait. The synchronous extension points (Unreserve, PostFilter)
//! drive them with a blocking executor on their own thread.
//!
//! The runtime implements it through the API server, with the optimistic-concurrency
//! preconditions kube-scheduler's updates carry (each object is sent with the
//! `resourceVersion` it was read with). The simulator has none ([`Handle::writer`] is
//! `None`): there the plugins only assume, as the simulation rules want (nothing moves
//! but the scheduler's own assumptions), the same way [`PodBinder`] is absent there.
//!
//! [`Handle::writer`]: crate::Handle::writer
//! [`PodBinder`]: crate::PodBinder

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::resource::v1::ResourceClaim;

use crate::pod_info::PodInfo;
use crate::storage::StorageObjects;

/// A write the API server refused, or could not be sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct WriteError {
    /// The HTTP status code of the API server's answer; `None` when there was none
    /// (the connection failed).
    pub code: Option<u16>,
    /// The API server's message (kube-scheduler logs and reports exactly this).
    pub message: String,
}

impl WriteError {
    /// An error with this code and message.
    pub fn new(code: Option<u16>, message: impl Into<String>) -> WriteError {
        WriteError {
            code,
            message: message.into(),
        }
    }

    /// A 409 Conflict: the object changed since it was read (client-go's
    /// `IsConflict`, what `RetryOnConflict` retries).
    pub fn is_conflict(&self) -> bool {
        self.code == Some(409)
    }
}

/// What the wait for volume bindings sees each time it looks: the API server's objects
/// as the watches last showed them (not the scheduler's assumptions), the pod's node
/// and whether the pod still exists.
#[derive(Clone, Copy, Debug)]
pub struct BindingView<'a> {
    /// The storage objects as the API server has them.
    pub storage: &'a StorageObjects,
    /// The node the pod goes to, if it still exists.
    pub node: Option<&'a Arc<Node>>,
    /// Whether the pod still exists.
    pub pod_exists: bool,
}

/// The outcome of one look at the bindings: done, not yet, or failed for good.
pub type BindingCheck = Result<bool, String>;

/// A write (or wait) in flight: it resolves to the API server's answer. It may borrow
/// the writer and, where the method says so, its arguments; nothing is sent before it
/// is first polled. Its implementations must not need a particular executor (the
/// runtime's spawn their requests onto its own), so that a blocking executor can
/// drive them too.
pub type WriteFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The writes of the storage and DRA plugins, against a cluster.
pub trait ClusterWriter: Send + Sync {
    /// Replaces a PersistentVolume (an update with its `resourceVersion` as the
    /// precondition); returns the API server's object.
    fn update_pv(
        &self,
        pv: &PersistentVolume,
    ) -> WriteFuture<'_, Result<PersistentVolume, WriteError>>;

    /// Replaces a PersistentVolumeClaim (with its `resourceVersion` as the
    /// precondition).
    fn update_pvc(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> WriteFuture<'_, Result<PersistentVolumeClaim, WriteError>>;

    /// Calls `check` each time the storage objects change (and at least once a second)
    /// until it returns `Ok(true)` (then `Ok(())`) or `Err` (then that error), or until
    /// `timeout` has passed (then `Err("context deadline exceeded")`, as
    /// kube-scheduler's poll reports it). The future borrows its arguments; it holds
    /// no thread while it waits.
    fn wait_for_bindings<'a>(
        &'a self,
        pod: &'a PodInfo,
        node: &'a str,
        timeout: Duration,
        check: &'a mut (dyn FnMut(&BindingView<'_>) -> BindingCheck + Send),
    ) -> WriteFuture<'a, Result<(), String>>;

    /// Resolves after `duration`: the pause between a plugin's retries (a conflict's,
    /// a poll's), on the writer's clock.
    fn sleep(&self, duration: Duration) -> WriteFuture<'static, ()>;

    /// Reads a ResourceClaim from the API server.
    fn get_resource_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>>;

    /// Replaces a ResourceClaim (metadata and spec; with its `resourceVersion`).
    fn update_resource_claim(
        &self,
        claim: &ResourceClaim,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>>;

    /// Replaces a ResourceClaim's status (with its `resourceVersion`).
    fn update_resource_claim_status(
        &self,
        claim: &ResourceClaim,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>>;

    /// Applies a strategic merge patch to a ResourceClaim's status.
    fn patch_resource_claim_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>>;

    /// Creates a ResourceClaim (its `generateName` gives the name); returns the API
    /// server's object.
    fn create_resource_claim(
        &self,
        claim: &ResourceClaim,
    ) -> WriteFuture<'_, Result<ResourceClaim, WriteError>>;

    /// Deletes a ResourceClaim.
    fn delete_resource_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> WriteFuture<'_, Result<(), WriteError>>;

    /// Applies a strategic merge patch to a pod's status.
    fn patch_pod_status(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> WriteFuture<'_, Result<(), WriteError>>;
}
