//! The API server's defaulting of the fields the scheduler reads.

use k8s_openapi::api::core::v1::Pod;

/// Defaults `metadata.namespace` (`default`) and `spec.schedulerName`
/// (`default-scheduler`), creating an empty `spec` when there is none.
pub(super) fn default_pod(pod: &mut Pod) {
    if pod
        .metadata
        .namespace
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        pod.metadata.namespace = Some("default".to_owned());
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    if spec
        .scheduler_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        spec.scheduler_name = Some("default-scheduler".to_owned());
    }
}
