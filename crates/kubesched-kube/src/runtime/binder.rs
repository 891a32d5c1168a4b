//! Bindings through the API server's `binding` subresource, and the bindings whose
//! answer was lost with the connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubesched_framework::{BindFuture, PodBinder, PodInfo};

use crate::outage::Outage;
use crate::requests::Requests;
use crate::watch::Encoding;

use super::lock;

/// Binds through the API server's `binding` subresource, with the pod's UID as a
/// precondition (the API server refuses the binding of a pod deleted and recreated
/// under the same name since it was scheduled).
///
/// [`PodBinder::bind`] blocks its thread on the POST; [`PodBinder::bind_async`] is the
/// same POST as a future, which the runtime's binding cycles await.
pub struct ApiBinder {
    post: BindingPost,
    rt: tokio::runtime::Handle,
}

/// What a binding POST needs, cloned into each binding in flight.
#[derive(Clone)]
struct BindingPost {
    requests: Requests,
    outage: Arc<Outage>,
    unanswered: Arc<Unanswered>,
}

/// Bindings sent without an answer (the connection failed while they were in
/// flight): the API server may have made them. When the watch shows such a pod bound
/// to the node it was sent to, its Scheduled event is written then.
#[derive(Default)]
pub(crate) struct Unanswered(Mutex<HashMap<String, Vec<(String, String)>>>);

impl Unanswered {
    fn insert(&self, key: &str, uid: &str, node: &str) {
        let mut m = lock(&self.0);
        let sent = m.entry(key.to_string()).or_default();
        let one = (uid.to_string(), node.to_string());
        if !sent.contains(&one) {
            sent.push(one);
        }
    }

    fn forget(&self, key: &str) {
        lock(&self.0).remove(key);
    }

    /// Whether a binding of the pod `key` with `uid` to `node` went unanswered (each
    /// try of an outage may have gone to another node; all are forgotten now that the
    /// pod is bound).
    pub(super) fn take(&self, key: &str, uid: &str, node: &str) -> bool {
        let mut m = lock(&self.0);
        match m.remove(key) {
            Some(sent) => sent.iter().any(|(u, n)| u == uid && n == node),
            None => false,
        }
    }
}

impl ApiBinder {
    /// A binder on `client`, sending its bindings in protobuf as kube-scheduler does;
    /// `rt` runs the request when [`PodBinder::bind`] is called (from a blocking
    /// thread).
    pub fn new(client: kube::Client, rt: tokio::runtime::Handle) -> ApiBinder {
        ApiBinder::with_outage(
            Requests::new(client, Encoding::Protobuf),
            rt,
            Arc::new(Outage::new("writes")),
            Arc::default(),
        )
    }

    pub(crate) fn with_outage(
        requests: Requests,
        rt: tokio::runtime::Handle,
        outage: Arc<Outage>,
        unanswered: Arc<Unanswered>,
    ) -> ApiBinder {
        ApiBinder {
            post: BindingPost {
                requests,
                outage,
                unanswered,
            },
            rt,
        }
    }
}

impl BindingPost {
    /// POSTs the binding of `pod` to `node`, and keeps the outage and unanswered
    /// bookkeeping: the one write behind both [`PodBinder`] methods. An `Err` is the
    /// API server's message (the binding cycle recognizes "is already assigned to
    /// node" in it) or the transport's error.
    async fn send(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(pod.name().to_string()),
                namespace: Some(pod.namespace().to_string()),
                uid: pod.metadata().uid.clone(),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_string()),
                ..Default::default()
            },
        };
        let r = self
            .requests
            .create_subresource::<Pod, _>(Some(pod.namespace()), pod.name(), "binding", &binding)
            .await;
        match r {
            Ok(_) => {
                self.outage.succeeded("writes");
                self.unanswered.forget(pod.key());
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code < 500 => {
                self.outage.succeeded("writes");
                Err(s.message.clone())
            }
            Err(kube::Error::Api(s)) => {
                self.outage.failed("writes", &s.message);
                Err(s.message.clone())
            }
            Err(e) => {
                self.outage.failed("writes", &e);
                self.unanswered.insert(pod.key(), pod.uid(), node);
                Err(e.to_string())
            }
        }
    }
}

impl PodBinder for ApiBinder {
    fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String> {
        self.rt.block_on(self.post.send(pod, node))
    }

    fn bind_async(&self, pod: &Arc<PodInfo>, node: &str) -> Option<BindFuture> {
        let (post, pod, node) = (self.post.clone(), pod.clone(), node.to_string());
        Some(Box::pin(async move { post.send(&pod, &node).await }))
    }
}
