//! The cache kept in step with the API server: what each list and watch event of
//! nodes, pods and the other cached kinds changes, and the queue events it raises (as
//! kube-scheduler's eventhandlers.go).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod, PodResourceClaimStatus};
use kubesched_framework::events::{node_update_events, pod_update_events};
use kubesched_framework::{ClusterEvent, EventObject, EventObjects, PodInfo};

use crate::watch::{Cached, object_key};

use super::{Inner, Shared, key_of, lock, terminal};

impl Shared {
    /// The node list was (re)loaded: the differences with the cache are the events
    /// (new nodes, changed ones, nodes gone while the watch was down).
    pub(crate) fn nodes_listed(&self, nodes: Vec<Node>) {
        let mut inner = lock(&self.inner);
        let listed: BTreeMap<String, Arc<Node>> = nodes
            .into_iter()
            .map(|n| (n.metadata.name.clone().unwrap_or_default(), Arc::new(n)))
            .collect();
        let mut events = Vec::new();
        for (name, node) in &listed {
            match inner.nodes.get(name) {
                None => events.push(ClusterEvent::NODE_ADD),
                Some(old) => events.extend(node_update_events(old, node)),
            }
        }
        if inner.nodes.keys().any(|name| !listed.contains_key(name)) {
            events.push(ClusterEvent::NODE_DELETE);
        }
        events.sort();
        events.dedup();
        inner.nodes = listed;
        inner.dirty = true;
        for event in events {
            inner.queue.move_all_to_active_or_backoff(event);
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
    }

    /// A node was added, changed or deleted. A change becomes one event per kind of
    /// change kube-scheduler tells apart (allocatable, labels, taints, conditions, ...),
    /// so that only the pods those changes can help are retried.
    pub(crate) fn node_changed(&self, node: Node, deleted: bool) {
        let start = Instant::now();
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut inner = lock(&self.inner);
        let label = if deleted {
            "NodeDelete"
        } else if inner.nodes.contains_key(&name) {
            "NodeUpdate"
        } else {
            "NodeAdd"
        };
        let (events, objects) = if deleted {
            if inner.nodes.remove(&name).is_none() {
                return;
            }
            (vec![ClusterEvent::NODE_DELETE], EventObjects::NONE)
        } else {
            let node = Arc::new(node);
            let old = inner.nodes.insert(name, node.clone());
            let events = match &old {
                None => vec![ClusterEvent::NODE_ADD],
                Some(old) => node_update_events(old, &node),
            };
            (events, EventObjects::node_change(old, node))
        };
        inner.dirty = true;
        for event in events {
            inner.queue.move_with_objects(event, &objects, |_| true);
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
        self.metrics.event_handled(label, start.elapsed());
    }

    /// The pod list was (re)loaded: pods not in it are gone.
    pub(crate) fn pods_listed(&self, pods: Vec<Pod>) {
        let keys: std::collections::HashSet<String> =
            pods.iter().map(|p| key_of(&p.metadata)).collect();
        {
            let inner = lock(&self.inner);
            let gone: Vec<String> = inner
                .pods
                .keys()
                .chain(inner.pending.keys())
                .filter(|k| !keys.contains(*k) && !inner.assumed.contains_key(*k))
                .cloned()
                .collect();
            drop(inner);
            for k in gone {
                self.pod_deleted(&k);
            }
        }
        for p in pods {
            self.pod_changed(p);
        }
    }

    pub(crate) fn pod_deleted(&self, key: &str) {
        let start = Instant::now();
        let mut inner = lock(&self.inner);
        let label = if inner.pods.contains_key(key) {
            "AssignedPodDelete"
        } else {
            "UnschedulablePodDelete"
        };
        inner.queue.delete(key);
        self.group_pod_deleted(&mut inner, key);
        if let Some(p) = inner.pending.remove(key)
            && let Some(uid) = p.metadata.uid.as_deref()
            && inner.sched.nominated_pods_mut().remove(uid).is_some()
        {
            // The place the pod was nominated to is free again for the pods it kept
            // out: those of lower or equal priority (kube-scheduler's
            // `getLEPriorityPreCheck`).
            let priority = p.spec.as_ref().and_then(|s| s.priority).unwrap_or(0);
            let objects = match PodInfo::new(p) {
                Ok(info) => EventObjects::deleted(EventObject::Pod(Arc::new(info))),
                Err(_) => EventObjects::NONE,
            };
            inner
                .queue
                .move_with_objects(ClusterEvent::ASSIGNED_POD_DELETE, &objects, |q| {
                    q.info.pod_info.priority() <= priority
                });
        }
        inner.assumed.remove(key);
        if let Some(old) = inner.pods.remove(key) {
            if let Some(node) = old.node_name() {
                let node = node.to_string();
                inner.sched.snapshot_mut().remove_pod(&node, key);
            }
            let objects = EventObjects::deleted(EventObject::Pod(old));
            inner
                .queue
                .move_with_objects(ClusterEvent::ASSIGNED_POD_DELETE, &objects, |_| true);
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
        self.metrics.event_handled(label, start.elapsed());
    }

    pub(crate) fn pod_changed(&self, mut pod: Pod) {
        let start = Instant::now();
        let key = key_of(&pod.metadata);
        // As kube-scheduler's pod informer, the cache keeps no `managedFields`: nothing
        // in scheduling reads them, and they are a third or more of a pod's size.
        pod.metadata.managed_fields = None;
        // A finished pod frees its node (kube-scheduler's informer leaves out Succeeded
        // and Failed pods); a terminating one keeps holding it until the API server
        // deletes it, as in kube-scheduler's cache, but is no longer scheduled if it
        // was pending (`skipPodSchedule`).
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let bound = pod.spec.as_ref().is_some_and(|s| s.node_name.is_some());
        if terminal(&pod) || (terminating && !bound) {
            self.pod_deleted(&key);
            return;
        }
        let pod = Arc::new(pod);
        let info = match PodInfo::new(pod.clone()) {
            Ok(i) => Arc::new(i),
            Err(e) => {
                tracing::warn!(pod = %key, error = %e, "ignoring pod");
                return;
            }
        };
        let mut inner = lock(&self.inner);
        // kube-scheduler's handler of the event: the cache's for a bound pod, the
        // queue's for a pending one.
        // A pod we assumed arrives bound: to kube-scheduler's informer it is new to the
        // assigned pods (an add), as a pod bound by another scheduler.
        let known_bound = inner.pods.contains_key(&key) && !inner.assumed.contains_key(&key);
        self.group_pod_changed(&mut inner, &info);
        let label = match (info.node_name().is_some(), known_bound) {
            (true, true) => "AssignedPodUpdate",
            (true, false) => "AssignedPodAdd",
            (false, _) if inner.pending.contains_key(&key) => "UnschedulablePodUpdate",
            (false, _) => "UnschedulablePodAdd",
        };
        if let Some(node) = info.node_name() {
            // Bound: into the cache; confirms an assumed pod.
            let node = node.to_string();
            // A binding in flight reports its own outcome; otherwise, one of ours whose
            // answer was lost may be what bound the pod.
            if !inner.assumed.contains_key(&key) {
                self.bound_without_answer(&key, &pod, info.uid(), &node);
            }
            inner.queue.delete(&key);
            inner.pending.remove(&key);
            inner.sched.nominated_pods_mut().remove(info.uid());
            let was_assumed = inner.assumed.remove(&key).is_some();
            let old = inner.pods.insert(key.clone(), info.clone());
            if let Some(old) = &old
                && let Some(old_node) = old.node_name()
            {
                let old_node = old_node.to_string();
                inner.sched.snapshot_mut().remove_pod(&old_node, &key);
            }
            if !inner.sched.snapshot_mut().add_pod(info.clone()) && inner.nodes.contains_key(&node)
            {
                inner.dirty = true;
            }
            // A pod bound (by us, confirming an assumed pod, or by another scheduler) is
            // an add, as kube-scheduler's informer sees it; a bound pod that changed is
            // one event per kind of change (a status-only change helps no in-tree plugin).
            let (events, old) = match old {
                Some(old) if !was_assumed => {
                    let unchanged = old.pod().metadata.resource_version.is_some()
                        && old.pod().metadata.resource_version == pod.metadata.resource_version;
                    if unchanged {
                        (Vec::new(), None)
                    } else {
                        (pod_update_events(old.pod(), &pod), Some(old))
                    }
                }
                // An add has no old object, as kube-scheduler's informer passes it (the
                // assumed pod it confirms included).
                _ => (vec![ClusterEvent::ASSIGNED_POD_ADD], None),
            };
            let objects = EventObjects {
                old: old.map(EventObject::Pod),
                new: Some(EventObject::Pod(info.clone())),
            };
            for event in events {
                inner.queue.move_with_objects(event, &objects, |_| true);
            }
        } else {
            if !self.profiles.contains(info.scheduler_name()) {
                return;
            }
            if inner.assumed.contains_key(&key) || inner.pods.contains_key(&key) {
                return;
            }
            let changed = match inner.pending.get(&key) {
                None => true,
                Some(old) => {
                    fn claim_statuses(p: &Pod) -> Option<&Vec<PodResourceClaimStatus>> {
                        p.status.as_ref()?.resource_claim_statuses.as_ref()
                    }
                    old.spec != pod.spec
                        || old.metadata.labels != pod.metadata.labels
                        || old.metadata.annotations != pod.metadata.annotations
                        || claim_statuses(old) != claim_statuses(&pod)
                }
            };
            // A nomination written to the pod's status (by us before a restart, or
            // by another replica) counts as one made here.
            if let Some(n) = pod
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                && inner.sched.nominated_pods().node_of(info.uid()) != Some(n)
            {
                inner.sched.nominated_pods_mut().add(info.clone(), n);
            }
            inner.pending.insert(key.clone(), pod);
            if changed || !inner.queue.contains(&key) {
                inner.queue.add(info);
            }
        }
        self.update_pending_metrics(&inner);
        drop(inner);
        self.notify();
        self.metrics.event_handled(label, start.elapsed());
    }

    /// The list of one object kind was (re)loaded.
    pub(crate) fn objects_listed<K: Cached>(&self, items: Vec<K>) {
        let mut inner = lock(&self.inner);
        *K::slot(&mut inner.objects) = items
            .into_iter()
            .map(|o| (object_key(&o), Arc::new(o)))
            .collect();
        Self::refresh_objects(&mut inner);
    }

    pub(crate) fn object_changed<K: Cached>(&self, o: K, deleted: bool) {
        let key = object_key(&o);
        let mut inner = lock(&self.inner);
        if deleted {
            K::slot(&mut inner.objects).remove(&key);
        } else {
            K::slot(&mut inner.objects).insert(key, Arc::new(o));
        }
        Self::refresh_objects(&mut inner);
    }

    fn refresh_objects(inner: &mut Inner) {
        let objects = Arc::new(inner.objects.build());
        inner.sched.snapshot_mut().set_objects(objects);
    }
}
