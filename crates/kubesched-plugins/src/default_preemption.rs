//! DefaultPreemption, by name. Preemption is not implemented yet: the plugin is
//! accepted in configurations (it is part of kube-scheduler's default profile) and
//! implements no extension point, so it never evicts anything; `kubesched simulate
//! --preemption` refuses to run until it is.

use kubesched_framework::Plugin;

/// The plugin's name.
pub const NAME: &str = "DefaultPreemption";

/// Accepted in configurations; runs no preemption yet.
#[derive(Debug, Default, Clone, Copy)]
pub struct DefaultPreemption;

impl Plugin for DefaultPreemption {
    fn name(&self) -> &str {
        NAME
    }
}
