//! The fake API server's gang and quota kinds, which have no k8s-openapi type: lists
//! of `scheduling.k8s.io/v1alpha2` PodGroups and Workloads, `scheduling.k8s.io/v1alpha1`
//! Workloads and scheduler-plugins' `scheduling.x-k8s.io/v1alpha1` PodGroups and
//! ElasticQuotas, each under the fully qualified resource name
//! `plural.version.group` (e.g. `podgroups.v1alpha2.scheduling.k8s.io`), which
//! [`FakeApiServer::refuse`] takes too. Objects are added as JSON
//! ([`FakeApiServer::apply_value`]) and deleted by kind and key
//! ([`FakeApiServer::delete_value`]). A v1alpha2 PodGroup can also be read one by one
//! and its status replaced, as the runtime writes `PodGroupScheduled`
//! ([`FakeApiServer::pod_group`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::{Fake, FakeApiServer, key, list_or_watch, status};

/// The resource of `scheduling.k8s.io/v1alpha2` PodGroups.
const POD_GROUPS: &str = "podgroups.v1alpha2.scheduling.k8s.io";

list_handlers!(
    list_podgroups_v1alpha2 => "podgroups.v1alpha2.scheduling.k8s.io",
    list_workloads_v1alpha2 => "workloads.v1alpha2.scheduling.k8s.io",
    list_workloads_v1alpha1 => "workloads.v1alpha1.scheduling.k8s.io",
    list_podgroups_sigs => "podgroups.v1alpha1.scheduling.x-k8s.io",
    list_elasticquotas => "elasticquotas.v1alpha1.scheduling.x-k8s.io"
);

/// The resources this module serves: (apiVersion, kind, resource).
const RESOURCES: [(&str, &str, &str); 5] = [
    (
        "scheduling.k8s.io/v1alpha2",
        "PodGroup",
        "podgroups.v1alpha2.scheduling.k8s.io",
    ),
    (
        "scheduling.k8s.io/v1alpha2",
        "Workload",
        "workloads.v1alpha2.scheduling.k8s.io",
    ),
    (
        "scheduling.k8s.io/v1alpha1",
        "Workload",
        "workloads.v1alpha1.scheduling.k8s.io",
    ),
    (
        "scheduling.x-k8s.io/v1alpha1",
        "PodGroup",
        "podgroups.v1alpha1.scheduling.x-k8s.io",
    ),
    (
        "scheduling.x-k8s.io/v1alpha1",
        "ElasticQuota",
        "elasticquotas.v1alpha1.scheduling.x-k8s.io",
    ),
];

/// For a resource of this module, its plural and API group, as the API server's
/// messages name them.
pub(super) fn plural_and_group(resource: &str) -> Option<(&str, &str)> {
    let (plural, version_group) = resource.split_once('.')?;
    let (_, group) = version_group.split_once('.')?;
    Some((plural, group))
}

/// Adds the list routes of the gang and quota kinds.
pub(super) fn routes(router: Router<Arc<Fake>>) -> Router<Arc<Fake>> {
    router
        .route(
            "/apis/scheduling.k8s.io/v1alpha2/podgroups",
            get(list_podgroups_v1alpha2),
        )
        .route(
            "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups/{name}",
            get(get_pod_group),
        )
        .route(
            "/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups/{name}/status",
            axum::routing::put(replace_pod_group_status),
        )
        .route(
            "/apis/scheduling.k8s.io/v1alpha2/workloads",
            get(list_workloads_v1alpha2),
        )
        .route(
            "/apis/scheduling.k8s.io/v1alpha1/workloads",
            get(list_workloads_v1alpha1),
        )
        .route(
            "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
            get(list_podgroups_sigs),
        )
        .route(
            "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas",
            get(list_elasticquotas),
        )
}

impl FakeApiServer {
    /// Adds (or replaces) a gang or quota object given as JSON with its `apiVersion`
    /// and `kind` (a `scheduling.k8s.io` v1alpha2 PodGroup or Workload, a v1alpha1
    /// Workload, a `scheduling.x-k8s.io/v1alpha1` PodGroup or ElasticQuota); a UID is
    /// given when it has none. Panics on any other kind.
    pub fn apply_value(&self, mut value: Value) {
        let api_version = value["apiVersion"].as_str().unwrap_or_default();
        let kind = value["kind"].as_str().unwrap_or_default();
        let resource = resource_of(api_version, kind);
        let name = value["metadata"]["name"].as_str().unwrap_or_default();
        let k = match value["metadata"]["namespace"].as_str() {
            Some(ns) => key(ns, name),
            None => name.to_owned(),
        };
        if value["metadata"]["uid"].is_null() {
            value["metadata"]["uid"] = json!(format!("uid-{resource}-{k}"));
        }
        let mut s = self.fake.lock();
        let type_ = if s.objects.get(resource).is_some_and(|o| o.contains_key(&k)) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        s.record(&self.fake.changes, resource, type_, &mut value);
        s.objects.entry(resource).or_default().insert(k, value);
    }

    /// Deletes a gang or quota object by `apiVersion`, kind and key (`namespace/name`,
    /// or `name`), telling the watchers. Panics on a kind [`FakeApiServer::apply_value`]
    /// does not take.
    pub fn delete_value(&self, api_version: &str, kind: &str, key: &str) {
        let resource = resource_of(api_version, kind);
        let mut s = self.fake.lock();
        if let Some(mut value) = s.objects.get_mut(resource).and_then(|o| o.remove(key)) {
            s.record(&self.fake.changes, resource, "DELETED", &mut value);
        }
    }
}

fn pod_group_not_found(name: &str) -> Response {
    status(
        404,
        "NotFound",
        format!("podgroups.scheduling.k8s.io \"{name}\" not found"),
    )
}

async fn get_pod_group(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let s = fake.lock();
    match s
        .objects
        .get(POD_GROUPS)
        .and_then(|o| o.get(&key(&ns, &name)))
    {
        Some(group) => axum::Json(group.clone()).into_response(),
        None => pod_group_not_found(&name),
    }
}

/// Replaces a PodGroup's status (only its status, as the subresource does), as the
/// storage kinds' status writes are replaced.
async fn replace_pod_group_status(
    State(fake): State<Arc<Fake>>,
    Path((ns, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    super::storage::replace(&fake, POD_GROUPS, &key(&ns, &name), &body, true)
}

impl FakeApiServer {
    /// A `scheduling.k8s.io/v1alpha2` PodGroup as the server holds it now (`None` when
    /// there is none), by `namespace/name`.
    pub fn pod_group(&self, key: &str) -> Option<Value> {
        self.fake.lock().objects.get(POD_GROUPS)?.get(key).cloned()
    }
}

/// The resource of a gang or quota kind.
fn resource_of(api_version: &str, kind: &str) -> &'static str {
    RESOURCES
        .iter()
        .find(|(a, k, _)| *a == api_version && *k == kind)
        .map(|(_, _, r)| *r)
        .unwrap_or_else(|| panic!("FakeApiServer does not serve {api_version} {kind}"))
}
