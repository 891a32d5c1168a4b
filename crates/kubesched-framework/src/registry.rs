//! [`Registry`]: plugin name → factory. A factory takes the plugin's args (the
//! `pluginConfig` entry of the profile, already defaulted for in-tree plugins) and the
//! framework [`Handle`], and returns the plugin.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::plugin::Plugin;
use crate::pod_info::PodInfo;

/// A binding in flight ([`PodBinder::bind_async`]): it resolves as
/// [`PodBinder::bind`] returns.
pub type BindFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>>;

/// Writes bindings to the cluster: what DefaultBinder calls. The simulator has none
/// (binding is then a no-op); the runtime provides one backed by the API server.
pub trait PodBinder: Send + Sync {
    /// Binds `pod` to `node`; an `Err` carries the reason.
    fn bind(&self, pod: &PodInfo, node: &str) -> Result<(), String>;

    /// The same write as [`PodBinder::bind`], as a future that holds no thread while
    /// it waits (the runtime's binding subresource POST), or `None` (the default) when
    /// the binder only binds synchronously. Nothing is written before the future is
    /// first polled.
    fn bind_async(&self, pod: &Arc<PodInfo>, node: &str) -> Option<BindFuture> {
        let _ = (pod, node);
        None
    }
}

/// What a plugin factory may use from the framework it is built into.
#[derive(Clone, Default)]
pub struct Handle {
    /// The profile's scheduler name.
    pub profile_name: String,
    /// Where bindings go; `None` in simulations.
    pub binder: Option<Arc<dyn PodBinder>>,
    /// The DRA objects and claim assumptions every profile shares (DynamicResources
    /// reads them); `None` where nothing provides them.
    pub dra: Option<Arc<crate::dra::DraState>>,
    /// Where VolumeBinding and DynamicResources write what PreBind and Unreserve
    /// decide; `None` in simulations (they only assume there).
    pub writer: Option<Arc<dyn crate::writer::ClusterWriter>>,
    /// The Kubernetes version and feature gates plugins follow (kube-scheduler's
    /// `feature.Features`); the newest version's defaults unless set.
    pub features: crate::features::Features,
    /// The pods waiting at Permit, shared by every profile (kube-scheduler's
    /// `IterateOverWaitingPods` and `GetWaitingPod`): a plugin allows or rejects them
    /// here. A fresh map unless the caller shares one.
    pub waiting_pods: Arc<crate::waiting::WaitingPods>,
    /// The cluster's other objects (Services, ..., and the kinds no in-tree plugin
    /// reads, as [`ClusterObjects::custom`](crate::ClusterObjects::custom)) and every
    /// pod, pending or bound, for plugins that list them outside a cycle (a sibling
    /// crate's QueueSort or Permit); `None` where nothing provides them.
    pub objects: Option<Arc<crate::snapshot::ClusterObjects>>,
    /// The objects as a running scheduler keeps them, replaced as its watches see
    /// changes (see [`LiveObjects`](crate::LiveObjects)); `None` in a simulation, where
    /// [`Handle::objects`] is the whole cluster. Where set, it is what plugins read
    /// outside a cycle, and `objects` is empty.
    pub live_objects: Option<Arc<crate::live::LiveObjects>>,
    /// Where plugins read the time for what expires (Coscheduling's caches); `None`
    /// for the system's clock ([`Handle::clock`]). A simulation sets a clock that
    /// stands still (its decisions are of one instant), a replay the clock it moves.
    pub clock: Option<Arc<dyn crate::queue::Clock>>,
}

impl Handle {
    /// [`Handle::clock`], or the system's clock when it is `None`.
    pub fn clock(&self) -> Arc<dyn crate::queue::Clock> {
        self.clock
            .clone()
            .unwrap_or_else(|| Arc::new(crate::queue::SystemClock))
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("profile_name", &self.profile_name)
            .field("binder", &self.binder.as_ref().map(|_| "PodBinder"))
            .field("dra", &self.dra.is_some())
            .field("writer", &self.writer.is_some())
            .field("features", &self.features)
            .field("waiting_pods", &self.waiting_pods.len())
            .field("objects", &self.objects.is_some())
            .field("live_objects", &self.live_objects.is_some())
            .field("clock", &self.clock.is_some())
            .finish()
    }
}

/// A plugin could not be built from its args.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PluginError {
    /// What went wrong, naming the field where there is one.
    pub message: String,
}

impl PluginError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> PluginError {
        PluginError {
            message: message.into(),
        }
    }
}

/// Builds a plugin from its args (`None` when the profile has no `pluginConfig` entry
/// for it).
pub type PluginFactory = Arc<
    dyn Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, PluginError>
        + Send
        + Sync,
>;

/// A name was registered twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a plugin named {0:?} already exists")]
pub struct DuplicatePlugin(pub String);

/// Plugin name → factory.
///
/// ```
/// use std::sync::Arc;
/// use kubesched_framework::{Plugin, Registry};
/// struct Noop;
/// impl Plugin for Noop { fn name(&self) -> &str { "Noop" } }
/// let mut registry = Registry::new();
/// registry.register("Noop", |_args, _handle| Ok(Arc::new(Noop))).unwrap();
/// assert!(registry.contains("Noop"));
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    factories: BTreeMap<String, PluginFactory>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers a factory under `name`; a name may be registered once.
    pub fn register<F>(
        &mut self,
        name: impl Into<String>,
        factory: F,
    ) -> Result<(), DuplicatePlugin>
    where
        F: Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, PluginError>
            + Send
            + Sync
            + 'static,
    {
        let name = name.into();
        if self.factories.contains_key(&name) {
            return Err(DuplicatePlugin(name));
        }
        self.factories.insert(name, Arc::new(factory));
        Ok(())
    }

    /// Adds every factory of `other` (out-of-tree plugins beside in-tree ones).
    pub fn merge(&mut self, other: Registry) -> Result<(), DuplicatePlugin> {
        for (name, factory) in other.factories {
            if self.factories.contains_key(&name) {
                return Err(DuplicatePlugin(name));
            }
            self.factories.insert(name, factory);
        }
        Ok(())
    }

    /// `true` when `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// The factory for `name`.
    pub fn get(&self, name: &str) -> Option<&PluginFactory> {
        self.factories.get(name)
    }

    /// Every registered name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.factories.keys().map(String::as_str)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.factories.keys()).finish()
    }
}
