//! The fake API server's storage and `resource.k8s.io/v1` kinds: list and watch of
//! PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers,
//! CSIStorageCapacities, VolumeAttachments, DeviceClasses, ResourceSlices and
//! ResourceClaims (and ResourceClaimTemplates, for `--from-cluster`); updates (PUT) of PVs, claims and ResourceClaims (and their status)
//! with the API server's optimistic concurrency (409 Conflict on a stale
//! `resourceVersion`); the strategic merge patch of a ResourceClaim's status that
//! Unreserve sends; a kind refused as an API server without the group or the RBAC
//! would ([`FakeApiServer::refuse`]); and the PV controller's part, played by the test
//! ([`FakeApiServer::bind_volume`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::{Fake, FakeApiServer, key, list_or_watch, status};

list_handlers!(
    list_pvs => "persistentvolumes",
    list_pvcs => "persistentvolumeclaims",
    list_storageclasses => "storageclasses",
    list_csinodes => "csinodes",
    list_csidrivers => "csidrivers",
    list_csistoragecapacities => "csistoragecapacities",
    list_volumeattachments => "volumeattachments",
    list_deviceclasses => "deviceclasses",
    list_resourceslices => "resourceslices",
    list_resourceclaims => "resourceclaims",
    list_resourceclaimtemplates => "resourceclaimtemplates"
);

/// The resources this module serves, by plural.
pub(super) fn resource(plural: &str) -> Option<&'static str> {
    Some(match plural {
        "persistentvolumes" => "persistentvolumes",
        "persistentvolumeclaims" => "persistentvolumeclaims",
        "storageclasses" => "storageclasses",
        "csinodes" => "csinodes",
        "csidrivers" => "csidrivers",
        "csistoragecapacities" => "csistoragecapacities",
        "volumeattachments" => "volumeattachments",
        "deviceclasses" => "deviceclasses",
        "resourceslices" => "resourceslices",
        "resourceclaims" => "resourceclaims",
        "resourceclaimtemplates" => "resourceclaimtemplates",
        _ => return None,
    })
}

/// The API group of a resource this module serves (`""` for the core group).
pub(super) fn group(resource: &str) -> &'static str {
    match resource {
        "persistentvolumes" | "persistentvolumeclaims" => "",
        "deviceclasses" | "resourceslices" | "resourceclaims" | "resourceclaimtemplates" => {
            "resource.k8s.io"
        }
        _ => "storage.k8s.io",
    }
}

/// The resource as the API server's messages name it (`persistentvolumes`,
/// `resourceclaims.resource.k8s.io`, and the gang and quota kinds' `podgroups.scheduling.k8s.io`).
pub(super) fn qualified(resource: &str) -> String {
    if let Some((plural, group)) = super::scheduling::plural_and_group(resource) {
        return format!("{plural}.{group}");
    }
    match group(resource) {
        "" => resource.to_owned(),
        g => format!("{resource}.{g}"),
    }
}

/// Adds the routes of the storage and DRA kinds.
pub(super) fn routes(router: Router<Arc<Fake>>) -> Router<Arc<Fake>> {
    router
        .route("/api/v1/persistentvolumes", get(list_pvs))
        .route(
            "/api/v1/persistentvolumes/{name}",
            axum::routing::put(put_pv),
        )
        .route("/api/v1/persistentvolumeclaims", get(list_pvcs))
        .route(
            "/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}",
            axum::routing::put(put_pvc),
        )
        .route(
            "/apis/storage.k8s.io/v1/storageclasses",
            get(list_storageclasses),
        )
        .route("/apis/storage.k8s.io/v1/csinodes", get(list_csinodes))
        .route("/apis/storage.k8s.io/v1/csidrivers", get(list_csidrivers))
        .route(
            "/apis/storage.k8s.io/v1/csistoragecapacities",
            get(list_csistoragecapacities),
        )
        .route(
            "/apis/storage.k8s.io/v1/volumeattachments",
            get(list_volumeattachments),
        )
        .route(
            "/apis/resource.k8s.io/v1/deviceclasses",
            get(list_deviceclasses),
        )
        .route(
            "/apis/resource.k8s.io/v1/resourceslices",
            get(list_resourceslices),
        )
        .route(
            "/apis/resource.k8s.io/v1/resourceclaims",
            get(list_resourceclaims),
        )
        .route(
            "/apis/resource.k8s.io/v1/resourceclaimtemplates",
            get(list_resourceclaimtemplates),
        )
        .route(
            "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}",
            get(get_claim).put(put_claim),
        )
        .route(
            "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}/status",
            axum::routing::put(put_claim_status).patch(patch_claim_status),
        )
}

/// Replaces an object (or only its status), refusing a stale `resourceVersion`.
pub(super) fn replace(
    fake: &Fake,
    resource: &'static str,
    k: &str,
    body: &Bytes,
    status_only: bool,
) -> Response {
    let Ok(mut new) = serde_json::from_slice::<Value>(body) else {
        return status(400, "BadRequest", "invalid object".into());
    };
    let name = k.rsplit('/').next().unwrap_or(k).to_owned();
    let mut s = fake.lock();
    if let Some(code) = s.fail_writes.get(resource).copied() {
        return status(
            code,
            "InternalError",
            format!("injected failure of {} \"{name}\"", qualified(resource)),
        );
    }
    let Some(current) = s.objects.get(resource).and_then(|m| m.get(k)).cloned() else {
        return status(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(resource)),
        );
    };
    let sent = &new["metadata"]["resourceVersion"];
    if !sent.is_null() && *sent != current["metadata"]["resourceVersion"] {
        return status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(resource)
            ),
        );
    }
    if status_only {
        let mut object = current.clone();
        object["status"] = new["status"].clone();
        new = object;
    } else {
        new["status"] = current["status"].clone();
    }
    new["metadata"]["uid"] = current["metadata"]["uid"].clone();
    new["apiVersion"] = current["apiVersion"].clone();
    new["kind"] = current["kind"].clone();
    s.record(&fake.changes, resource, "MODIFIED", &mut new);
    s.objects
        .entry(resource)
        .or_default()
        .insert(k.to_owned(), new.clone());
    axum::Json(new).into_response()
}

async fn put_pv(State(fake): State<Arc<Fake>>, Path(name): Path<String>, body: Bytes) -> Response {
    replace(&fake, "persistentvolumes", &name, &body, false)
}

async fn put_pvc(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    replace(
        &fake,
        "persistentvolumeclaims",
        &key(&ns, &name),
        &body,
        false,
    )
}

async fn get_claim(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let s = fake.lock();
    match s
        .objects
        .get("resourceclaims")
        .and_then(|m| m.get(&key(&ns, &name)))
    {
        Some(c) => axum::Json(c.clone()).into_response(),
        None => status(
            404,
            "NotFound",
            format!("resourceclaims.resource.k8s.io \"{name}\" not found"),
        ),
    }
}

async fn put_claim(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    replace(&fake, "resourceclaims", &key(&ns, &name), &body, false)
}

async fn put_claim_status(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    replace(&fake, "resourceclaims", &key(&ns, &name), &body, true)
}

/// The strategic merge patch of a claim's status: `reservedFor` entries merged by
/// `uid` (`"$patch": "delete"` removes one), other status fields replaced; a
/// `metadata.uid` in the patch is a precondition.
async fn patch_claim_status(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let Ok(patch) = serde_json::from_slice::<Value>(&body) else {
        return status(400, "BadRequest", "invalid patch".into());
    };
    let k = key(&ns, &name);
    let mut s = fake.lock();
    let Some(mut claim) = s
        .objects
        .get("resourceclaims")
        .and_then(|m| m.get(&k))
        .cloned()
    else {
        return status(
            404,
            "NotFound",
            format!("resourceclaims.resource.k8s.io \"{name}\" not found"),
        );
    };
    let uid = &patch["metadata"]["uid"];
    if !uid.is_null() && *uid != claim["metadata"]["uid"] {
        return status(
            409,
            "Conflict",
            format!(
                "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                uid.as_str().unwrap_or_default(),
                claim["metadata"]["uid"].as_str().unwrap_or_default()
            ),
        );
    }
    if let Some(fields) = patch["status"].as_object() {
        for (field, value) in fields {
            if field != "reservedFor" {
                claim["status"][field] = value.clone();
                continue;
            }
            let mut list = claim["status"]["reservedFor"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for entry in value.as_array().into_iter().flatten() {
                list.retain(|e| e["uid"] != entry["uid"]);
                if entry["$patch"] != "delete" {
                    list.push(entry.clone());
                }
            }
            claim["status"]["reservedFor"] = if list.is_empty() {
                Value::Null
            } else {
                json!(list)
            };
        }
    }
    s.record(&fake.changes, "resourceclaims", "MODIFIED", &mut claim);
    s.objects
        .entry("resourceclaims")
        .or_default()
        .insert(k, claim.clone());
    axum::Json(claim).into_response()
}

impl FakeApiServer {
    /// Makes the list and watch of `resource` (`resourceclaims`, `persistentvolumes`,
    /// ...) answer `code` (404: the API server does not serve it; 403: this client
    /// may not list it) until [`FakeApiServer::allow`].
    pub fn refuse(&self, resource: &str, code: u16) {
        self.fake.lock().refused.insert(resource.to_owned(), code);
    }

    /// Makes the watch of `resource` alone answer `code` (403: this client may list
    /// it but not watch it) until [`FakeApiServer::allow`].
    pub fn refuse_watch(&self, resource: &str, code: u16) {
        self.fake
            .lock()
            .refused_watches
            .insert(resource.to_owned(), code);
    }

    /// Serves `resource` again after [`FakeApiServer::refuse`] or
    /// [`FakeApiServer::refuse_watch`].
    pub fn allow(&self, resource: &str) {
        let mut s = self.fake.lock();
        s.refused.remove(resource);
        s.refused_watches.remove(resource);
    }

    /// Makes every update of `resource` fail with `code` until
    /// [`FakeApiServer::heal_writes`].
    pub fn fail_writes(&self, resource: &'static str, code: u16) {
        self.fake.lock().fail_writes.insert(resource, code);
    }

    /// Lets updates of `resource` through again.
    pub fn heal_writes(&self, resource: &str) {
        self.fake.lock().fail_writes.remove(resource);
    }

    /// The stored object of `resource` by key (`namespace/name`, or `name`).
    pub fn object(&self, resource: &str, key: &str) -> Option<Value> {
        self.fake
            .lock()
            .objects
            .get(resource)
            .and_then(|m| m.get(key))
            .cloned()
    }

    /// Every update (PUT or PATCH) of `resource` received so far: (method, path).
    pub fn writes_to(&self, resource: &str) -> Vec<(String, String)> {
        let segment = format!("/{resource}/");
        self.requests()
            .into_iter()
            .filter(|(m, p)| (m == "PUT" || m == "PATCH") && p.contains(&segment))
            .collect()
    }

    /// Plays the PV controller: binds the claim (`namespace/name`) to the PV, both
    /// ways (the PV's `claimRef` with the claim's UID and phase Bound; the claim's
    /// `volumeName`, `pv.kubernetes.io/bind-completed` and phase Bound).
    pub fn bind_volume(&self, claim_key: &str, pv_name: &str) {
        let (ns, name) = claim_key.split_once('/').unwrap_or(("default", claim_key));
        let mut s = self.fake.lock();
        let Some(mut claim) = s
            .objects
            .get("persistentvolumeclaims")
            .and_then(|m| m.get(claim_key))
            .cloned()
        else {
            panic!("bind_volume: no claim {claim_key}");
        };
        let Some(mut pv) = s
            .objects
            .get("persistentvolumes")
            .and_then(|m| m.get(pv_name))
            .cloned()
        else {
            panic!("bind_volume: no PV {pv_name}");
        };
        pv["spec"]["claimRef"] = json!({
            "kind": "PersistentVolumeClaim", "apiVersion": "v1",
            "namespace": ns, "name": name, "uid": claim["metadata"]["uid"],
        });
        pv["status"] = json!({"phase": "Bound"});
        s.record(&self.fake.changes, "persistentvolumes", "MODIFIED", &mut pv);
        s.objects
            .entry("persistentvolumes")
            .or_default()
            .insert(pv_name.to_owned(), pv);
        claim["spec"]["volumeName"] = json!(pv_name);
        claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] = json!("yes");
        claim["status"] = json!({"phase": "Bound"});
        s.record(
            &self.fake.changes,
            "persistentvolumeclaims",
            "MODIFIED",
            &mut claim,
        );
        s.objects
            .entry("persistentvolumeclaims")
            .or_default()
            .insert(claim_key.to_owned(), claim);
    }
}
