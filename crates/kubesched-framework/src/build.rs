//! From a scheduler's own records to the framework's nodes and pods, without writing
//! Kubernetes objects by hand.
//!
//! The framework's hot path reads [`NodeInfo`](crate::NodeInfo) and
//! [`PodInfo`], flat data computed once per object (resources as
//! integers, taints, labels, ports). They are derived from k8s-openapi's `Node` and
//! `Pod`, which is what an API server or a YAML file gives. A scheduler whose nodes and
//! jobs come from somewhere else (a batch system's own structs, a database, a trace)
//! describes them here in its own units instead, and the builders write the objects:
//!
//! ```
//! use kubesched_framework::build::{NodeBuilder, PodBuilder, TaintEffect};
//! use kubesched_framework::Snapshot;
//!
//! let gpu_node = NodeBuilder::new("gpu-1")
//!     .cpu_millis(32_000)
//!     .memory_bytes(128 << 30)
//!     .resource("nvidia.com/gpu", 4)
//!     .label("topology.kubernetes.io/zone", "a")
//!     .taint("dedicated", "gpu", TaintEffect::NoSchedule);
//! let (snapshot, _) = Snapshot::new([gpu_node.node()], []).unwrap();
//! assert_eq!(snapshot.nodes()[0].allocatable().milli_cpu, 32_000);
//!
//! let job = PodBuilder::new("batch", "train-42")
//!     .cpu_millis(8_000)
//!     .resource("nvidia.com/gpu", 2)
//!     .toleration("dedicated", "gpu", TaintEffect::NoSchedule)
//!     .pod_info()
//!     .unwrap();
//! assert_eq!(job.key(), "batch/train-42");
//! assert_eq!(job.requests().milli_cpu, 8_000);
//! ```
//!
//! It stands on the framework's floor and uses only k8s-openapi's types, which it
//! hides: nothing here reads YAML or talks to an API server.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::pod_info::PodInfo;
use crate::resource::PodQuantityError;

/// A taint's or toleration's effect, as in `spec.taints[].effect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// `NoSchedule`: pods that do not tolerate it are not scheduled on the node.
    NoSchedule,
    /// `PreferNoSchedule`: TaintToleration scores the node lower.
    PreferNoSchedule,
    /// `NoExecute`: as `NoSchedule` for the scheduler (eviction is the kubelet's).
    NoExecute,
}

impl TaintEffect {
    /// The effect's name in the Kubernetes API.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A node described in integers and strings: its name, allocatable resources, labels,
/// taints and whether it is cordoned. [`NodeBuilder::node`] writes the `Node` that
/// [`Snapshot::new`](crate::Snapshot::new) takes.
#[derive(Clone, Debug)]
pub struct NodeBuilder {
    name: String,
    allocatable: BTreeMap<String, Quantity>,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    unschedulable: bool,
}

impl NodeBuilder {
    /// A node named `name` with room for 110 pods (the kubelet's default) and no cpu or
    /// memory until they are set. Its `kubernetes.io/hostname` label is its name, as
    /// the kubelet sets it.
    pub fn new(name: impl Into<String>) -> NodeBuilder {
        let name = name.into();
        NodeBuilder {
            allocatable: BTreeMap::from([("pods".to_string(), Quantity("110".into()))]),
            labels: BTreeMap::from([("kubernetes.io/hostname".to_string(), name.clone())]),
            name,
            taints: Vec::new(),
            unschedulable: false,
        }
    }

    /// Allocatable cpu, in thousandths of a core.
    pub fn cpu_millis(self, millis: i64) -> NodeBuilder {
        self.resource_quantity("cpu", format!("{millis}m"))
    }

    /// Allocatable memory, in bytes.
    pub fn memory_bytes(self, bytes: i64) -> NodeBuilder {
        self.resource_quantity("memory", bytes.to_string())
    }

    /// How many pods the node takes.
    pub fn pods(self, count: i64) -> NodeBuilder {
        self.resource_quantity("pods", count.to_string())
    }

    /// Allocatable amount of any other resource, by its API name (`ephemeral-storage`
    /// in bytes, an extended resource such as `nvidia.com/gpu` in units).
    pub fn resource(self, name: impl Into<String>, amount: i64) -> NodeBuilder {
        self.resource_quantity(name, amount.to_string())
    }

    fn resource_quantity(mut self, name: impl Into<String>, quantity: String) -> NodeBuilder {
        self.allocatable.insert(name.into(), Quantity(quantity));
        self
    }

    /// Adds (or replaces) a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> NodeBuilder {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Adds a taint.
    pub fn taint(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        effect: TaintEffect,
    ) -> NodeBuilder {
        let value: String = value.into();
        self.taints.push(Taint {
            key: key.into(),
            value: (!value.is_empty()).then_some(value),
            effect: effect.as_str().to_string(),
            time_added: None,
        });
        self
    }

    /// Cordons (or uncordons) the node: `spec.unschedulable`.
    pub fn unschedulable(mut self, unschedulable: bool) -> NodeBuilder {
        self.unschedulable = unschedulable;
        self
    }

    /// The `Node` object, for [`Snapshot::new`](crate::Snapshot::new) or
    /// [`NodeInfo::new`](crate::NodeInfo::new). Every quantity was written from an
    /// integer, so deriving the `NodeInfo` cannot fail on it.
    pub fn node(self) -> Arc<Node> {
        Arc::new(Node {
            metadata: ObjectMeta {
                name: Some(self.name),
                labels: Some(self.labels),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: (!self.taints.is_empty()).then_some(self.taints),
                unschedulable: self.unschedulable.then_some(true),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                capacity: Some(self.allocatable.clone()),
                allocatable: Some(self.allocatable),
                ..Default::default()
            }),
        })
    }
}

/// A pod (or a job's task) described in integers and strings: its namespace and name,
/// its requests, labels, priority, scheduler name, tolerations and node selector.
/// [`PodBuilder::pod_info`] gives the [`PodInfo`] that
/// [`Scheduler::schedule_one`](crate::Scheduler::schedule_one) takes.
#[derive(Clone, Debug)]
pub struct PodBuilder {
    namespace: String,
    name: String,
    uid: Option<String>,
    requests: BTreeMap<String, Quantity>,
    labels: BTreeMap<String, String>,
    node_selector: BTreeMap<String, String>,
    tolerations: Vec<Toleration>,
    priority: Option<i32>,
    scheduler_name: Option<String>,
    node_name: Option<String>,
}

impl PodBuilder {
    /// A pending pod with no requests, for the default scheduler.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> PodBuilder {
        PodBuilder {
            namespace: namespace.into(),
            name: name.into(),
            uid: None,
            requests: BTreeMap::new(),
            labels: BTreeMap::new(),
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            priority: None,
            scheduler_name: None,
            node_name: None,
        }
    }

    /// Requested cpu, in thousandths of a core.
    pub fn cpu_millis(mut self, millis: i64) -> PodBuilder {
        self.requests
            .insert("cpu".into(), Quantity(format!("{millis}m")));
        self
    }

    /// Requested memory, in bytes.
    pub fn memory_bytes(mut self, bytes: i64) -> PodBuilder {
        self.requests
            .insert("memory".into(), Quantity(bytes.to_string()));
        self
    }

    /// A request for any other resource, by its API name (an extended resource such as
    /// `nvidia.com/gpu` in units).
    pub fn resource(mut self, name: impl Into<String>, amount: i64) -> PodBuilder {
        self.requests
            .insert(name.into(), Quantity(amount.to_string()));
        self
    }

    /// The pod's uid (default: `namespace/name`).
    pub fn uid(mut self, uid: impl Into<String>) -> PodBuilder {
        self.uid = Some(uid.into());
        self
    }

    /// Adds (or replaces) a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> PodBuilder {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Requires the node to have this label with this value (`spec.nodeSelector`).
    pub fn node_selector(mut self, key: impl Into<String>, value: impl Into<String>) -> PodBuilder {
        self.node_selector.insert(key.into(), value.into());
        self
    }

    /// Tolerates a taint with this key, value and effect (`operator: Equal`; an empty
    /// value tolerates the key with any value, `operator: Exists`).
    pub fn toleration(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        effect: TaintEffect,
    ) -> PodBuilder {
        let value: String = value.into();
        let exists = value.is_empty();
        self.tolerations.push(Toleration {
            key: Some(key.into()),
            operator: Some(if exists { "Exists" } else { "Equal" }.to_string()),
            value: (!exists).then_some(value),
            effect: Some(effect.as_str().to_string()),
            toleration_seconds: None,
        });
        self
    }

    /// The pod's priority (`spec.priority`, as admission resolves a PriorityClass).
    pub fn priority(mut self, priority: i32) -> PodBuilder {
        self.priority = Some(priority);
        self
    }

    /// The profile that schedules it (`spec.schedulerName`; default
    /// `default-scheduler`).
    pub fn scheduler_name(mut self, name: impl Into<String>) -> PodBuilder {
        self.scheduler_name = Some(name.into());
        self
    }

    /// Marks the pod as already running on `node` (`spec.nodeName`), for the pods a
    /// [`Snapshot`](crate::Snapshot) starts with.
    pub fn bound_to(mut self, node: impl Into<String>) -> PodBuilder {
        self.node_name = Some(node.into());
        self
    }

    /// The `Pod` object: one container, `main`, with the requests.
    pub fn pod(self) -> Arc<Pod> {
        let uid = self
            .uid
            .unwrap_or_else(|| format!("{}/{}", self.namespace, self.name));
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(self.name),
                namespace: Some(self.namespace),
                uid: Some(uid),
                labels: (!self.labels.is_empty()).then_some(self.labels),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "main".into(),
                    resources: Some(ResourceRequirements {
                        requests: (!self.requests.is_empty()).then_some(self.requests),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                node_selector: (!self.node_selector.is_empty()).then_some(self.node_selector),
                tolerations: (!self.tolerations.is_empty()).then_some(self.tolerations),
                priority: self.priority,
                scheduler_name: self.scheduler_name,
                node_name: self.node_name,
                ..Default::default()
            }),
            status: None,
        })
    }

    /// The pod's [`PodInfo`], ready for the scheduler. Fails only if a resource name
    /// is one the quantity rules refuse; the amounts were written from integers.
    pub fn pod_info(self) -> Result<Arc<PodInfo>, PodQuantityError> {
        PodInfo::new(self.pod()).map(Arc::new)
    }
}
