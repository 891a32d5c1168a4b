//! The fake API server's lists of the storage and `resource.k8s.io/v1` kinds (for
//! `--from-cluster`), and [`FakeApiServer::refuse_list`] to make one fail with 404 or
//! 403 as a server that does not serve or forbids it.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::routing::get;

use super::{Fake, FakeApiServer, list_or_watch, status};

/// The storage and `resource.k8s.io/v1` resources the fake lists (for
/// `--from-cluster`): (resource, API group path, list kind). `apply_object` stores
/// their objects; [`FakeApiServer::refuse_list`] makes a list fail.
const STORAGE_AND_DRA: [(&str, &str, &str); 11] = [
    ("persistentvolumes", "/api/v1", "PersistentVolumeList"),
    (
        "persistentvolumeclaims",
        "/api/v1",
        "PersistentVolumeClaimList",
    ),
    (
        "storageclasses",
        "/apis/storage.k8s.io/v1",
        "StorageClassList",
    ),
    ("csinodes", "/apis/storage.k8s.io/v1", "CSINodeList"),
    ("csidrivers", "/apis/storage.k8s.io/v1", "CSIDriverList"),
    (
        "csistoragecapacities",
        "/apis/storage.k8s.io/v1",
        "CSIStorageCapacityList",
    ),
    (
        "volumeattachments",
        "/apis/storage.k8s.io/v1",
        "VolumeAttachmentList",
    ),
    (
        "deviceclasses",
        "/apis/resource.k8s.io/v1",
        "DeviceClassList",
    ),
    (
        "resourceslices",
        "/apis/resource.k8s.io/v1",
        "ResourceSliceList",
    ),
    (
        "resourceclaims",
        "/apis/resource.k8s.io/v1",
        "ResourceClaimList",
    ),
    (
        "resourceclaimtemplates",
        "/apis/resource.k8s.io/v1",
        "ResourceClaimTemplateList",
    ),
];

/// The entry of [`STORAGE_AND_DRA`] for `resource`.
pub(super) fn storage_or_dra_resource(
    resource: &str,
) -> (&'static str, &'static str, &'static str) {
    STORAGE_AND_DRA
        .into_iter()
        .find(|(r, _, _)| *r == resource)
        .unwrap_or_else(|| panic!("FakeApiServer does not serve {resource}"))
}

/// The list routes of [`STORAGE_AND_DRA`] (all namespaces).
pub(super) fn storage_and_dra_lists() -> Router<Arc<Fake>> {
    let mut router = Router::new();
    for (resource, group_path, _) in STORAGE_AND_DRA {
        router = router.route(
            &format!("{group_path}/{resource}"),
            get(
                move |State(fake): State<Arc<Fake>>,
                      Query(q): Query<HashMap<String, String>>| async move {
                    let refused = fake
                        .refused
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get(resource)
                        .copied();
                    match refused {
                        Some(404) => status(
                            404,
                            "NotFound",
                            "the server could not find the requested resource".into(),
                        ),
                        Some(code) => {
                            let group = group_path
                                .strip_prefix("/apis/")
                                .and_then(|g| g.split_once('/'))
                                .map_or("", |(g, _)| g);
                            status(
                                code,
                                "Forbidden",
                                format!(
                                    "{resource}.{group} is forbidden: User \"system:serviceaccount:kube-system:reader\" cannot list resource \"{resource}\" in API group \"{group}\" at the cluster scope"
                                ),
                            )
                        }
                        None => list_or_watch(fake, resource, q).await,
                    }
                },
            ),
        );
    }
    router
}

impl FakeApiServer {
    /// Makes every list of a storage or DRA `resource` (`resourceslices`, `csinodes`,
    /// ...) fail with `code`: 404 as a server that does not serve it, any other code
    /// (403) as one that forbids it.
    pub fn refuse_list(&self, resource: &str, code: u16) {
        let (resource, _, _) = storage_or_dra_resource(resource);
        self.fake
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(resource, code);
    }
}
