//! List-then-watch loops for pods and nodes that keep the runtime's cache in step,
//! relisting when a watch fails or its resourceVersion is too old (410 Gone).

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use tokio::sync::watch;

use crate::runtime::Shared;

/// Which objects a loop follows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Pods,
    Nodes,
}

/// Runs one list-and-watch loop until `stop`; `synced` is told after the first list.
pub(crate) async fn run(
    shared: Arc<Shared>,
    client: kube::Client,
    kind: Kind,
    synced: tokio::sync::oneshot::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let mut synced = Some(synced);
    loop {
        if *stop.borrow() {
            return;
        }
        let r = tokio::select! {
            r = list_and_watch(&shared, &client, kind, &mut synced) => r,
            _ = stop.changed() => return,
        };
        if let Err(e) = r {
            tracing::warn!(?kind, error = %e, "watch failed; relisting");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.changed() => return,
        }
    }
}

async fn list_and_watch(
    shared: &Arc<Shared>,
    client: &kube::Client,
    kind: Kind,
    synced: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), kube::Error> {
    match kind {
        Kind::Pods => {
            let api: Api<Pod> = Api::all(client.clone());
            let list = api.list(&ListParams::default()).await?;
            let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
            shared.pods_listed(list.items);
            if let Some(s) = synced.take() {
                let _ = s.send(());
            }
            loop {
                let wp = WatchParams::default().timeout(290);
                let mut stream = api.watch(&wp, &rv).await?.boxed();
                while let Some(ev) = stream.try_next().await? {
                    match ev {
                        WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                            rv = p.metadata.resource_version.clone().unwrap_or(rv);
                            shared.pod_changed(p);
                        }
                        WatchEvent::Deleted(p) => {
                            rv = p.metadata.resource_version.clone().unwrap_or(rv);
                            let key = format!(
                                "{}/{}",
                                p.metadata.namespace.as_deref().unwrap_or("default"),
                                p.metadata.name.as_deref().unwrap_or("")
                            );
                            shared.pod_deleted(&key);
                        }
                        WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                        WatchEvent::Error(s) => return Err(kube::Error::Api(s)),
                    }
                }
            }
        }
        Kind::Nodes => {
            let api: Api<Node> = Api::all(client.clone());
            let list = api.list(&ListParams::default()).await?;
            let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
            shared.nodes_listed(list.items);
            if let Some(s) = synced.take() {
                let _ = s.send(());
            }
            loop {
                let wp = WatchParams::default().timeout(290);
                let mut stream = api.watch(&wp, &rv).await?.boxed();
                while let Some(ev) = stream.try_next().await? {
                    match ev {
                        WatchEvent::Added(n) | WatchEvent::Modified(n) => {
                            rv = n.metadata.resource_version.clone().unwrap_or(rv);
                            shared.node_changed(n, false);
                        }
                        WatchEvent::Deleted(n) => {
                            rv = n.metadata.resource_version.clone().unwrap_or(rv);
                            shared.node_changed(n, true);
                        }
                        WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                        WatchEvent::Error(s) => return Err(kube::Error::Api(s)),
                    }
                }
            }
        }
    }
}
