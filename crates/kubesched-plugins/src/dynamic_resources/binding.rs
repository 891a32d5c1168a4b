//! DRADeviceBindingConditions in the runtime's PreBind, as kube-scheduler v1.36 waits:
//! once the claims are written, a pod whose allocated devices have binding conditions
//! is bound only when, for each such device, the driver reports every binding
//! condition `True` in the claim's `status.devices`; a binding failure condition that
//! is `True` fails PreBind at once, and so does the wait passing 600 s. The claims are
//! read again every 5 s (the first time at once).
//!
//! A simulation has no driver to report conditions; its PreBind does not wait (see
//! docs/versions.md).

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::resource::v1::ResourceClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// How long PreBind waits for binding conditions (`BindingTimeoutDefaultSeconds`).
pub const BINDING_TIMEOUT: Duration = Duration::from_secs(600);

/// How often the claims are read again while waiting.
pub const POLL_INTERVAL: Duration = Duration::from_secs(5);

/// Whether an allocated device of the claim has binding conditions.
pub fn has_binding_conditions(claim: &ResourceClaim) -> bool {
    claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .is_some_and(|d| {
            d.results
                .iter()
                .flatten()
                .any(|r| r.binding_conditions.as_ref().is_some_and(|c| !c.is_empty()))
        })
}

fn condition_true<'a>(conditions: Option<&'a Vec<Condition>>, kind: &str) -> Option<&'a Condition> {
    conditions
        .into_iter()
        .flatten()
        .find(|c| c.type_ == kind && c.status == "True")
}

/// Whether every binding condition of the claim's devices is `True`
/// (`isClaimReadyForBinding`); `Err` when a binding failure condition is.
pub fn claim_ready(claim: &ResourceClaim) -> Result<bool, String> {
    let Some(status) = &claim.status else {
        return Ok(false);
    };
    let Some(allocation) = &status.allocation else {
        return Ok(false);
    };
    let name = claim.metadata.name.as_deref().unwrap_or_default();
    for r in allocation
        .devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
    {
        let Some(wanted) = r.binding_conditions.as_ref().filter(|c| !c.is_empty()) else {
            continue;
        };
        let Some(device) = status.devices.iter().flatten().find(|d| {
            d.driver == r.driver
                && d.pool == r.pool
                && d.device == r.device
                && d.share_id == r.share_id
        }) else {
            return Ok(false);
        };
        for failure in r.binding_failure_conditions.iter().flatten() {
            if let Some(c) = condition_true(device.conditions.as_ref(), failure) {
                return Err(format!(
                    "claim {name} binding failed: reason={}, message={:?}",
                    c.reason, c.message
                ));
            }
        }
        if !wanted
            .iter()
            .all(|w| condition_true(device.conditions.as_ref(), w).is_some())
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Waits until every claim is ready for binding (`isPodReadyForBinding`), reading each
/// with `get` every `interval` (pausing with `sleep`), at most `timeout`.
pub async fn wait<G, S>(
    claims: &[(String, String)],
    mut get: impl FnMut(&str, &str) -> G,
    sleep: impl Fn(Duration) -> S,
    timeout: Duration,
    interval: Duration,
) -> Result<(), String>
where
    G: Future<Output = Result<ResourceClaim, String>>,
    S: Future<Output = ()>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let mut waiting = None;
        for (namespace, name) in claims {
            let claim = get(namespace, name).await?;
            if !claim_ready(&claim)? {
                waiting = Some(name.clone());
                break;
            }
        }
        let Some(name) = waiting else {
            return Ok(());
        };
        if Instant::now() + interval > deadline {
            return Err(format!("device binding timeout: claim={name}"));
        }
        sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(conditions: &str) -> ResourceClaim {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {},
            "status": {
                "allocation": {"devices": {"results": [{
                    "request": "r", "driver": "d", "pool": "p", "device": "x",
                    "bindingConditions": ["attached"],
                    "bindingFailureConditions": ["failed"],
                }]}},
                "devices": [{
                    "driver": "d", "pool": "p", "device": "x",
                    "conditions": serde_json::from_str::<serde_json::Value>(conditions).unwrap(),
                }],
            },
        }))
        .unwrap()
    }

    fn cond(kind: &str, status: &str) -> String {
        format!(
            r#"{{"type": "{kind}", "status": "{status}", "reason": "R", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}}"#
        )
    }

    #[test]
    fn ready_when_every_binding_condition_is_true_and_failed_when_a_failure_condition_is() {
        let waiting = claim(&format!("[{}]", cond("attached", "False")));
        assert!(has_binding_conditions(&waiting));
        assert_eq!(claim_ready(&waiting), Ok(false));
        let ready = claim(&format!("[{}]", cond("attached", "True")));
        assert_eq!(claim_ready(&ready), Ok(true));
        let failed = claim(&format!(
            "[{}, {}]",
            cond("attached", "False"),
            cond("failed", "True")
        ));
        assert_eq!(
            claim_ready(&failed),
            Err("claim c binding failed: reason=R, message=\"m\"".into())
        );
    }

    #[test]
    fn the_wait_ends_when_the_claim_is_ready_or_the_time_is_up() {
        let claims = vec![("default".to_string(), "c".to_string())];
        let calls = std::cell::Cell::new(0);
        let get = |_: &str, _: &str| {
            calls.set(calls.get() + 1);
            let status = if calls.get() >= 3 { "True" } else { "False" };
            Ok(claim(&format!("[{}]", cond("attached", status))))
        };
        let ms = Duration::from_millis(1);
        let sleep = |d| {
            std::thread::sleep(d);
            std::future::ready(())
        };
        let get = |ns: &str, name: &str| std::future::ready(get(ns, name));
        let ready = wait(&claims, get, sleep, Duration::from_secs(5), ms);
        assert_eq!(futures_executor::block_on(ready), Ok(()));
        assert_eq!(calls.get(), 3);
        let never = |_: &str, _: &str| std::future::ready(Ok(claim("[]")));
        let (timeout, interval) = (Duration::from_millis(20), Duration::from_millis(5));
        assert_eq!(
            futures_executor::block_on(wait(&claims, never, sleep, timeout, interval)),
            Err("device binding timeout: claim=c".into())
        );
    }
}
