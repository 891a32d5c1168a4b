//! DefaultBinder: binds the pod through the framework's [`PodBinder`]
//! (the API server's `binding` subresource in the runtime; nothing in a simulation).

use std::sync::Arc;

use kubesched_framework::{
    BindPlugin, Code, CycleState, Handle, Plugin, PodBinder, PodInfo, Status,
};

/// The plugin's name.
pub const NAME: &str = "DefaultBinder";

/// Writes the binding.
#[derive(Clone, Default)]
pub struct DefaultBinder {
    binder: Option<Arc<dyn PodBinder>>,
}

impl std::fmt::Debug for DefaultBinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultBinder")
            .field("binder", &self.binder.is_some())
            .finish()
    }
}

impl DefaultBinder {
    /// A binder that writes through the handle's [`PodBinder`], if any.
    pub fn new(handle: &Handle) -> DefaultBinder {
        DefaultBinder {
            binder: handle.binder.clone(),
        }
    }
}

impl Plugin for DefaultBinder {
    fn name(&self) -> &str {
        NAME
    }
    /// Binding accepts the pod wherever it goes and remembers nothing.
    fn node_local(&self, _pod: &PodInfo) -> bool {
        true
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::none()
    }
    kubesched_framework::extension_points!(Bind);
}

impl BindPlugin for DefaultBinder {
    fn bind(&self, _: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        match &self.binder {
            None => Status::success(),
            Some(b) => match b.bind(pod, node) {
                Ok(()) => Status::success(),
                Err(e) => Status::new(Code::Error, e),
            },
        }
    }

    /// `bind` is the handle's binder's and nothing else (when there is one).
    fn pod_binder(&self) -> Option<&Arc<dyn PodBinder>> {
        self.binder.as_ref()
    }
}
