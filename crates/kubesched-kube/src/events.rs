//! `events.k8s.io/v1` events as client-go's `tools/events` broadcaster writes them for
//! kube-scheduler: named `POD.UNIXNANO-IN-HEX`, reported by the profile's scheduler
//! name from the instance `SCHEDULER-HOSTNAME`, written in the background (a caller
//! never waits for the API server), retried when the API server cannot be reached
//! (12 tries, the first after a random part of 10 s, then every 10 s), and aggregated:
//! an event isomorphic to one recorded in the last 6 minutes (same regarding object,
//! reason, action, note, reporting controller and related object) becomes a series,
//! written once as a patch of `series` on its second occurrence and counted locally
//! after that (the count is patched every 30 minutes while the series goes on).
//! Failures are said once per outage (`Outage`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use tokio::sync::watch;

use crate::outage::{Outage, Refusals, jitter};
use crate::requests::Requests;

/// client-go's `maxTriesPerEvent`.
const MAX_TRIES: u32 = 12;
/// client-go's `defaultSleepDuration` between tries.
const SLEEP: Duration = Duration::from_secs(10);
/// How long an event stays in the aggregation cache after it was last seen.
const FINISH_AFTER: Duration = Duration::from_secs(6 * 60);
/// How often a running series' count is written.
const REFRESH_EVERY: Duration = Duration::from_secs(30 * 60);

/// What an API server's admission says while its caches are still syncing after a
/// start (`admission.NewForbidden(..., "not yet ready to handle request")`).
const NOT_READY: &str = "not yet ready to handle request";

/// The API server's limit on an event's note (`NoteLengthLimit`).
pub const NOTE_LENGTH_LIMIT: usize = 1024;

/// Cuts a note to the API server's 1,024 bytes as kube-scheduler's
/// `truncateMessage` does: the first 1,020 bytes and ` ...` (at a character boundary,
/// where Go would cut a multi-byte character).
pub fn truncate_note(note: &str) -> String {
    if note.len() <= NOTE_LENGTH_LIMIT {
        return note.to_string();
    }
    let suffix = " ...";
    let mut end = NOTE_LENGTH_LIMIT - suffix.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &note[..end])
}

/// What one event says.
pub(crate) struct EventSpec<'a> {
    pub(crate) regarding: &'a Pod,
    pub(crate) related: Option<&'a Pod>,
    pub(crate) type_: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) action: &'a str,
    pub(crate) note: String,
    pub(crate) controller: &'a str,
}

struct Cached {
    event: Event,
    /// When it was last seen (its series' last observation, or its time).
    last_seen: std::time::Instant,
}

/// The recorder of one runtime.
pub(crate) struct Recorder {
    /// The event client, in the runtime's encoding (series patches are JSON).
    requests: Requests,
    hostname: String,
    cache: Mutex<HashMap<String, Cached>>,
    outage: Outage,
    refusals: Refusals,
    rt: tokio::runtime::Handle,
}

fn pod_ref(pod: &Pod, with_version: bool) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: if with_version {
            pod.metadata.resource_version.clone()
        } else {
            None
        },
        ..Default::default()
    }
}

/// client-go's `getKey`: what makes two events isomorphic.
fn key_of(e: &Event) -> String {
    serde_json::json!([
        e.action,
        e.reason,
        e.reporting_controller,
        e.regarding,
        e.note,
        e.related,
    ])
    .to_string()
}

enum Written {
    Done,
    Retry(kube::Error),
    GiveUp(kube::Error),
}

impl Recorder {
    pub(crate) fn new(requests: Requests, rt: tokio::runtime::Handle) -> Arc<Recorder> {
        Arc::new(Recorder {
            requests,
            hostname: crate::hostname(),
            cache: Mutex::new(HashMap::new()),
            outage: Outage::new("events"),
            refusals: Refusals::new("events"),
            rt,
        })
    }

    /// Records an event: it is written (or aggregated) in the background.
    pub(crate) fn record(self: &Arc<Self>, spec: EventSpec<'_>) {
        let now = Timestamp::now();
        let regarding = spec.regarding;
        let ns = regarding
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = regarding.metadata.name.clone().unwrap_or_default();
        let event = Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: Some(ns),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some(spec.action.into()),
            reason: Some(spec.reason.into()),
            note: Some(truncate_note(&spec.note)),
            type_: Some(spec.type_.into()),
            reporting_controller: Some(spec.controller.into()),
            reporting_instance: Some(format!("{}-{}", spec.controller, self.hostname)),
            regarding: Some(pod_ref(regarding, true)),
            related: spec.related.map(|r| pod_ref(r, false)),
            ..Default::default()
        };
        let to_write = {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            let key = key_of(&event);
            match cache.get_mut(&key) {
                Some(c) => {
                    c.last_seen = std::time::Instant::now();
                    match c.event.series.as_mut() {
                        Some(series) => {
                            series.count += 1;
                            series.last_observed_time = MicroTime(now);
                            None
                        }
                        None => {
                            c.event.series = Some(EventSeries {
                                count: 2,
                                last_observed_time: MicroTime(now),
                            });
                            Some(c.event.clone())
                        }
                    }
                }
                None => {
                    cache.insert(
                        key,
                        Cached {
                            event: event.clone(),
                            last_seen: std::time::Instant::now(),
                        },
                    );
                    Some(event)
                }
            }
        };
        if let Some(event) = to_write {
            let me = self.clone();
            self.rt
                .spawn(async move { me.write_with_retries(event).await });
        }
    }

    async fn write_with_retries(&self, event: Event) {
        for attempt in 1..=MAX_TRIES {
            match self.write(&event).await {
                Written::Done => {
                    self.outage.succeeded("events");
                    self.refusals.succeeded();
                    return;
                }
                Written::GiveUp(e) => {
                    let kind = match &e {
                        kube::Error::Api(s) => format!("{} {}", s.code, s.reason),
                        _ => "other".to_string(),
                    };
                    let name = event.metadata.name.as_deref().unwrap_or("");
                    self.refusals.refused(&kind, name, &e);
                    return;
                }
                Written::Retry(e) => self.outage.failed("events", &e),
            }
            if attempt == MAX_TRIES {
                break;
            }
            // The first wait is a random part of 10 s, so that the writers of many
            // schedulers do not all come back at once.
            let wait = if attempt == 1 {
                SLEEP.mul_f64(jitter())
            } else {
                SLEEP
            };
            tokio::time::sleep(wait).await;
        }
        tracing::warn!(event = ?event.metadata.name, "unable to write event after {MAX_TRIES} tries; dropping it");
    }

    async fn write(&self, event: &Event) -> Written {
        let ns = event.metadata.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.requests.client.clone(), ns);
        let name = event.metadata.name.as_deref().unwrap_or("");
        if let Some(series) = &event.series {
            let patch = serde_json::json!({"series": {
                "count": series.count,
                "lastObservedTime": series.last_observed_time,
            }});
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return Written::Done,
                // The event is gone (or was never written): write it whole.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return classify(e),
            }
        }
        let mut event = event.clone();
        event.metadata.resource_version = None;
        match self.requests.create(Some(ns), &event).await {
            Ok(_) => Written::Done,
            Err(kube::Error::Api(s)) if s.code == 409 => Written::Done,
            Err(e) => classify(e),
        }
    }

    /// Forgets the series that ended (not seen for 6 minutes) and writes the count of
    /// those still going every 30 minutes, until `stop`.
    pub(crate) async fn maintain(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut finish = tokio::time::interval(FINISH_AFTER);
        let mut refresh = tokio::time::interval(REFRESH_EVERY);
        finish.tick().await;
        refresh.tick().await;
        loop {
            tokio::select! {
                _ = finish.tick() => {
                    let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                    cache.retain(|_, c| c.last_seen.elapsed() < FINISH_AFTER);
                }
                _ = refresh.tick() => {
                    let series: Vec<Event> = {
                        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                        cache.values().filter(|c| c.event.series.is_some()).map(|c| c.event.clone()).collect()
                    };
                    for event in series {
                        let me = self.clone();
                        tokio::spawn(async move { me.write_with_retries(event).await });
                    }
                }
                _ = stop.changed() => return,
            }
        }
    }
}

/// client-go's `recordEvent`: a server that cannot be reached, or answers that it is
/// unavailable or throttling, is tried again; any other answer is final. Unlike
/// client-go, a just-restarted API server's `403 ... not yet ready to handle request`
/// (an admission plugin whose caches have not synced yet) is tried again too: it is
/// the server starting, not a refusal, and the event would be lost.
fn classify(e: kube::Error) -> Written {
    match &e {
        kube::Error::Api(s) if s.code == 429 || s.code >= 500 => Written::Retry(e),
        kube::Error::Api(s) if s.code == 403 && s.message.contains(NOT_READY) => Written::Retry(e),
        kube::Error::Api(_) => Written::GiveUp(e),
        _ => Written::Retry(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeApiServer;
    use crate::watch::Encoding;

    fn api_error(code: u16, message: &str) -> kube::Error {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": code, "message": message, "reason": "Forbidden",
        }))
        .expect("status");
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn a_starting_servers_forbidden_is_retried_a_real_refusal_is_not() {
        let not_ready = api_error(
            403,
            "events.events.k8s.io \"p.18ed\" is forbidden: not yet ready to handle request",
        );
        assert!(matches!(classify(not_ready), Written::Retry(_)));
        let refused = api_error(
            403,
            "events.events.k8s.io is forbidden: User \"x\" cannot create",
        );
        assert!(matches!(classify(refused), Written::GiveUp(_)));
        assert!(matches!(classify(api_error(503, "")), Written::Retry(_)));
        assert!(matches!(
            classify(api_error(422, "invalid")),
            Written::GiveUp(_)
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_isomorphic_event_becomes_a_series_written_once_then_counted() {
        let server = FakeApiServer::start().await;
        let recorder = Recorder::new(
            Requests::new(server.client(), Encoding::Protobuf),
            tokio::runtime::Handle::current(),
        );
        let mut pod = FakeApiServer::pod("p", "my-scheduler", "1");
        pod.metadata.uid = Some("u1".into());
        let spec = || EventSpec {
            regarding: &pod,
            related: None,
            type_: "Warning",
            reason: "FailedScheduling",
            action: "Scheduling",
            note: "0/1 nodes are available".into(),
            controller: "my-scheduler",
        };
        recorder.record(spec());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while server.events().is_empty() {
            assert!(std::time::Instant::now() < deadline, "no event");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        recorder.record(spec());
        while server.events()[0]["series"]["count"] != serde_json::json!(2) {
            assert!(std::time::Instant::now() < deadline, "no series");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        recorder.record(spec());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let events = server.events();
        assert_eq!(events.len(), 1, "one event object");
        // The third occurrence is counted locally, not written.
        assert_eq!(events[0]["series"]["count"], serde_json::json!(2));
        let name = events[0]["metadata"]["name"].as_str().unwrap();
        assert!(
            name.starts_with("p.") && u128::from_str_radix(&name[2..], 16).is_ok(),
            "{name}"
        );
        assert_eq!(
            events[0]["reportingInstance"],
            serde_json::json!(format!("my-scheduler-{}", crate::hostname()))
        );
    }

    #[test]
    fn notes_are_cut_to_1024_bytes_as_kube_scheduler_cuts_them() {
        let short = "x".repeat(1024);
        assert_eq!(truncate_note(&short), short);
        let long = "y".repeat(5000);
        let cut = truncate_note(&long);
        assert_eq!(cut.len(), 1024);
        assert!(cut.ends_with("y ..."));
        // Never inside a character.
        let wide = "é".repeat(1000);
        let cut = truncate_note(&wide);
        assert!(cut.len() <= 1024 && cut.ends_with(" ..."));
    }
}
