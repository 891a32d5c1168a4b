//! Applying the trace's events to the cluster (both modes), and to the timed mode's
//! queue and snapshot: objects applied and deleted, pods finishing, nodes cordoned and
//! drained.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kubesched_framework::events::{ActionType, EventResource, node_update_events};
use kubesched_framework::{ClusterEvent, EventObject, EventObjects, PodInfo};

use super::waits::{is_gang_kind, names_group};
use super::{Engine, Eviction, Record, ReplayError, add_node_load, secs};
use crate::state::{Decoded, decode, node_name, pod_key};
use crate::trace::{Action, TraceError, TraceEvent};

impl<'r, E, F: FnMut(Record) -> Result<(), E>> Engine<'r, F> {
    pub(super) fn apply(&mut self, event: TraceEvent) -> Result<(), ReplayError<E>> {
        match event.action {
            Action::Apply { object, duration } => {
                let source = format!("{} line {}", self.trace, event.line);
                let decoded = decode(&object, &source).map_err(|problem| TraceError {
                    trace: self.trace.clone(),
                    line: event.line,
                    field: Some("apply".into()),
                    problem,
                    truncated: false,
                })?;
                match decoded {
                    Decoded::Node(node) => self.put_node(node),
                    Decoded::Pod(pod) => {
                        let key = pod_key(&pod);
                        let old = self.cluster.put_pod(pod, secs(self.now), duration);
                        self.pod_changed(&key, old.is_none());
                    }
                    Decoded::Other(o) => {
                        let gang = is_gang_kind(&o.kind).then(|| {
                            let meta = |field: &str| {
                                o.value["metadata"][field]
                                    .as_str()
                                    .unwrap_or("")
                                    .to_string()
                            };
                            let object = EventObject::Named {
                                namespace: meta("namespace"),
                                name: meta("name"),
                            };
                            (o.api_version.clone(), o.kind.clone(), object)
                        });
                        let value = gang.is_some().then(|| o.value.clone());
                        let old = self.cluster.put_object(o);
                        if let Some((api_version, kind, object)) = gang
                            && old.as_ref().map(|o| &o.value) != value.as_ref()
                        {
                            // Applied again unchanged, it is no watch event.
                            self.gangs_changed();
                            let action = if old.is_some() {
                                ActionType::UPDATE
                            } else {
                                ActionType::ADD
                            };
                            self.gang_object_event(Some(&api_version), &kind, action, object);
                        }
                        self.mark_dirty();
                    }
                    Decoded::Finished { pod, .. } => {
                        if self.cluster.pod(&pod).is_some() {
                            self.stats.finished += 1;
                            self.remove_pod(&pod);
                        }
                    }
                }
            }
            Action::Delete(r) => match r.kind.as_str() {
                "Node" => self.delete_node(&r.name)?,
                "Pod" => {
                    let key = format!("{}/{}", r.namespace.as_deref().unwrap_or("default"), r.name);
                    if self.cluster.pod(&key).is_some() {
                        self.stats.deleted += 1;
                        self.remove_pod(&key);
                    }
                }
                kind => {
                    if self.cluster.remove_object(
                        r.api_version.as_deref(),
                        kind,
                        r.namespace.as_deref(),
                        &r.name,
                    ) {
                        if is_gang_kind(kind) {
                            self.gangs_changed();
                            let object = EventObject::Named {
                                namespace: r.namespace.clone().unwrap_or_default(),
                                name: r.name.clone(),
                            };
                            self.gang_object_event(
                                r.api_version.as_deref(),
                                kind,
                                ActionType::DELETE,
                                object,
                            );
                        }
                        self.mark_dirty();
                    }
                }
            },
            Action::Finish { pod, .. } => {
                if self.cluster.pod(&pod).is_some() {
                    self.stats.finished += 1;
                    self.remove_pod(&pod);
                }
            }
            Action::Cordon(name) => self.set_unschedulable(&name, true),
            Action::Uncordon(name) => self.set_unschedulable(&name, false),
            Action::Drain(name) => {
                self.set_unschedulable(&name, true);
                for key in self.cluster.pods_on(&name) {
                    self.evict(&key, &name, Eviction::Drained)?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn set_unschedulable(&mut self, name: &str, on: bool) {
        let Some(node) = self.cluster.node(name) else {
            return;
        };
        let mut node = (**node).clone();
        node.spec.get_or_insert_with(Default::default).unschedulable = on.then_some(true);
        self.put_node(Arc::new(node));
    }

    pub(super) fn put_node(&mut self, node: Arc<Node>) {
        let old = self.cluster.put_node(node.clone());
        let events = match &old {
            None => vec![ClusterEvent::NODE_ADD],
            Some(old) => node_update_events(old, &node),
        };
        let objects = EventObjects::node_change(old.clone(), node.clone());
        // A node added or changed goes into the snapshot as it stands, which keeps what
        // was computed for the other nodes; a new node that bound pods already name
        // (they arrived first) needs the full rebuild that gathers them.
        let orphans = old.is_none() && !self.cluster.pods_on(node_name(&node)).is_empty();
        match self.timed.as_mut() {
            Some(timed) if !timed.dirty && !orphans => {
                let name = node_name(&node).to_string();
                let snapshot = timed.prepared.scheduler.snapshot_mut();
                if let Some(i) = snapshot.index_of(&name) {
                    add_node_load(&mut timed.load, snapshot.node_at(i), -1);
                }
                let done = match old {
                    None => snapshot.add_node(node).is_ok(),
                    Some(_) => snapshot.update_node(node).unwrap_or(false),
                };
                match snapshot.index_of(&name) {
                    Some(i) if done => {
                        add_node_load(&mut timed.load, snapshot.node_at(i), 1);
                        if old.is_none() {
                            match Arc::get_mut(&mut timed.names) {
                                Some(names) => names.push(name),
                                None => timed.names_stale = true,
                            }
                        }
                    }
                    _ => timed.dirty = true,
                }
            }
            _ => self.mark_dirty(),
        }
        if let Some(timed) = self.timed.as_mut() {
            for event in events {
                timed.queue.move_with_objects(event, &objects, |_| true);
            }
        }
    }

    pub(super) fn delete_node(&mut self, name: &str) -> Result<(), ReplayError<E>> {
        if self.cluster.node(name).is_none() {
            return Ok(());
        }
        for key in self.cluster.pods_on(name) {
            self.evict(&key, name, Eviction::NodeDeleted)?;
        }
        // A pod waiting at Permit on it cannot bind there any more.
        self.reject_waiting_on(name);
        self.resolve_decided()?;
        self.cluster.remove_node(name);
        // Out of the snapshot as it stands: the nodes after it move up one place.
        match self.timed.as_mut() {
            Some(timed) if !timed.dirty => {
                let snapshot = timed.prepared.scheduler.snapshot_mut();
                let at = snapshot.index_of(name);
                match (at, snapshot.remove_node(name)) {
                    (Some(at), Some(removed)) => {
                        add_node_load(&mut timed.load, &removed, -1);
                        match Arc::get_mut(&mut timed.names) {
                            Some(names) => names.remove(at),
                            None => timed.names_stale = true,
                        }
                    }
                    _ => timed.dirty = true,
                }
            }
            _ => self.mark_dirty(),
        }
        self.queue_events(&[ClusterEvent::NODE_DELETE]);
        Ok(())
    }

    /// A pod was added (`new`) or replaced in the cluster: the queue or the snapshot.
    pub(super) fn pod_changed(&mut self, key: &str, new: bool) {
        let Some(entry) = self.cluster.pod(key).cloned() else {
            return;
        };
        if names_group(&entry.pod) {
            self.gangs_changed();
        }
        if new && entry.node().is_none() {
            self.stats.arrived(1);
        }
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        let Ok(info) = PodInfo::new(entry.pod.clone()) else {
            return;
        };
        let info = Arc::new(info);
        match entry.node() {
            None => {
                if timed
                    .prepared
                    .scheduler
                    .framework_for(info.scheduler_name())
                    .is_some()
                {
                    timed.queue.add(info);
                } else if new {
                    self.stats.not_ours += 1;
                }
            }
            Some(node) => {
                let node = node.to_string();
                let snapshot = timed.prepared.scheduler.snapshot_mut();
                if let Some(old) = snapshot.remove_pod(&node, key) {
                    timed.load.request(old.requests(), -1);
                }
                if snapshot.add_pod(info.clone()) {
                    timed.load.request(info.requests(), 1);
                }
                let event = if new {
                    ClusterEvent::ASSIGNED_POD_ADD
                } else {
                    ClusterEvent::new(EventResource::AssignedPod, ActionType::UPDATE)
                };
                let objects = EventObjects::added(EventObject::Pod(info.clone()));
                timed.queue.move_with_objects(event, &objects, |_| true);
            }
        }
    }

    /// A pod leaves (finished, deleted): its node frees what it requested.
    pub(super) fn remove_pod(&mut self, key: &str) {
        let Some(entry) = self.cluster.remove_pod(key) else {
            return;
        };
        if names_group(&entry.pod) {
            self.gangs_changed();
        }
        if entry.node().is_none() {
            self.release_waiting(&entry.pod);
        }
        let Some(timed) = self.timed.as_mut() else {
            return;
        };
        timed
            .prepared
            .scheduler
            .nominated_pods_mut()
            .remove(entry.pod.metadata.uid.as_deref().unwrap_or(""));
        match entry.node() {
            None => timed.queue.delete(key),
            Some(node) => {
                let removed = timed
                    .prepared
                    .scheduler
                    .snapshot_mut()
                    .remove_pod(node, key);
                let objects = match removed {
                    Some(old) => {
                        timed.load.request(old.requests(), -1);
                        EventObjects::deleted(EventObject::Pod(old))
                    }
                    None => EventObjects::NONE,
                };
                timed
                    .queue
                    .move_with_objects(ClusterEvent::ASSIGNED_POD_DELETE, &objects, |_| true);
            }
        }
    }

    pub(super) fn evict(
        &mut self,
        key: &str,
        node: &str,
        reason: Eviction,
    ) -> Result<(), ReplayError<E>> {
        if self.cluster.pod(key).is_none() {
            return Ok(());
        }
        self.stats.evicted += 1;
        self.remove_pod(key);
        self.emit(Record::Evicted {
            time: secs(self.now),
            pod: key.to_string(),
            node: node.to_string(),
            reason,
        })
    }

    /// A gang or quota object came, changed or went: the queue moves the pods the
    /// event can help, as `run` does on the object's watch event (a trace's delete
    /// that names no apiVersion is an event of each version of the kind).
    fn gang_object_event(
        &mut self,
        api_version: Option<&str>,
        kind: &str,
        action: ActionType,
        object: EventObject,
    ) {
        let objects = if action == ActionType::DELETE {
            EventObjects::deleted(object)
        } else {
            EventObjects::added(object)
        };
        if let Some(timed) = self.timed.as_mut() {
            for resource in EventResource::of_gang_kind(api_version, kind) {
                let event = ClusterEvent::new(resource, action);
                timed.queue.move_with_objects(event, &objects, |_| true);
            }
        }
    }

    /// The objects or pods the gang and quota plugins read changed: they get the
    /// cluster as it stands before the next attempt (timed mode; each settled pass
    /// builds its own profiles).
    fn gangs_changed(&mut self) {
        if let Some(timed) = self.timed.as_mut() {
            timed.gang_objects_stale = true;
        }
    }
}
