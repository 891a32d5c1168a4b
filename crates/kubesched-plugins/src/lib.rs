//! # kubesched-plugins
//!
//! kube-scheduler's in-tree plugins for kubesched, each with v1.35's behaviour, names
//! and args, so an existing KubeSchedulerConfiguration works unchanged.
//! [`in_tree_registry`] returns them all, ready for
//! `kubesched_framework::Framework::new`.
//!
//! | plugin | extension points |
//! | --- | --- |
//! | PrioritySort | QueueSort |
//! | SchedulingGates | PreEnqueue |
//! | NodeUnschedulable | Filter |
//! | NodeName | Filter |
//! | NodeDeclaredFeatures | PreFilter, Filter (with the `NodeDeclaredFeatures` gate) |
//! | TaintToleration | Filter, PreScore, Score |
//! | NodeResourcesFit | Filter, PreScore, Score |
//! | ImageLocality | PreScore, Score |
//! | InterPodAffinity | PreFilter (with AddPod/RemovePod), Filter, PreScore, Score |
//! | NodeAffinity | PreFilter, Filter, PreScore, Score |
//! | NodePorts | PreFilter, Filter |
//! | NodeResourcesBalancedAllocation | PreScore, Score |
//! | PodTopologySpread | PreFilter (with AddPod/RemovePod), Filter, PreScore, Score |
//! | DefaultBinder | Bind |
//! | DynamicResources | PreFilter, Filter, PostFilter, Score, Reserve, PreBind (structured parameters: classes, CEL selectors, constraints, `firstAvailable`) |
//! | VolumeRestrictions | PreFilter (with AddPod/RemovePod), Filter |
//! | NodeVolumeLimits, VolumeZone | PreFilter, Filter |
//! | VolumeBinding | PreFilter, Filter, PreScore, Score, Reserve (with its assume cache), PreBind (through the API in the runtime) |
//! | DefaultPreemption | PostFilter (preemption: dry run, PodDisruptionBudgets, candidate selection) |
//!
//! Each plugin that can reject a pod registers the cluster events that may make that
//! pod schedulable, as kube-scheduler v1.35's do ([`events`]).
//!
//! ```
//! let registry = kubesched_plugins::in_tree_registry();
//! assert!(registry.contains("NodeResourcesFit"));
//! ```

use std::sync::Arc;

use kubesched_framework::{Handle, Plugin, PluginError, Registry};
use serde::de::DeserializeOwned;

pub mod balanced_allocation;
pub mod default_binder;
pub mod default_preemption;
mod divisor;
pub mod dynamic_resources;
pub mod events;
pub mod gang_scheduling;
pub mod helper;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod label_selector;
pub mod node_affinity;
pub mod node_declared_features;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_group_pods_count;
pub mod pod_topology_spread;
pub mod priority_sort;
pub mod resource_allocation;
pub mod scheduling_gates;
pub mod taint_toleration;
pub mod topology_placement;
pub mod volumes;

pub use balanced_allocation::BalancedAllocation;
pub use default_binder::DefaultBinder;
pub use default_preemption::DefaultPreemption;
pub use dynamic_resources::DynamicResources;
pub use image_locality::ImageLocality;
pub use inter_pod_affinity::InterPodAffinity;
pub use node_affinity::NodeAffinity;
pub use node_declared_features::NodeDeclaredFeatures;
pub use node_name::NodeName;
pub use node_ports::NodePorts;
pub use node_resources_fit::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use pod_group_pods_count::PodGroupPodsCount;
pub use pod_topology_spread::PodTopologySpread;
pub use priority_sort::PrioritySort;
pub use scheduling_gates::SchedulingGates;
pub use taint_toleration::TaintToleration;
pub use volumes::{NodeVolumeLimits, VolumeBinding, VolumeRestrictions, VolumeZone};

/// Decodes a plugin's args strictly, or takes the args type's defaults when the profile
/// has none.
pub fn decode_args<T: DeserializeOwned + Default>(
    plugin: &str,
    args: Option<&serde_json::Value>,
) -> Result<T, PluginError> {
    match args {
        None => Ok(T::default()),
        Some(v) => {
            kubesched_config::decode_args(plugin, v).map_err(|e| PluginError::new(e.to_string()))
        }
    }
}

/// Decodes an in-tree plugin's args strictly and applies kube-scheduler's v1 defaults
/// (`SetDefaults_<Kind>Args`), so args given to a factory directly (not through
/// `kubesched-config`, which defaults them already) mean what they mean in
/// kube-scheduler.
pub fn decode_in_tree_args<T: kubesched_config::args::PluginArgs>(
    plugin: &str,
    args: Option<&serde_json::Value>,
) -> Result<T, PluginError> {
    let mut decoded: T = decode_args(plugin, args)?;
    decoded.apply_defaults();
    Ok(decoded)
}

/// A plain function that builds a plugin: what every in-tree factory is.
type FactoryFn = fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, PluginError>;

fn stateless<P: Plugin + Default + 'static>(
    _: Option<&serde_json::Value>,
    _: &Handle,
) -> Result<Arc<dyn Plugin>, PluginError> {
    Ok(Arc::new(P::default()))
}

/// Every in-tree plugin kubesched implements, by its kube-scheduler name.
pub fn in_tree_registry() -> Registry {
    let mut r = Registry::new();
    let mut add = |name: &str, f: FactoryFn| {
        r.register(name, f)
            .expect("in-tree plugin names are unique");
    };
    add(priority_sort::NAME, stateless::<PrioritySort>);
    add(gang_scheduling::NAME, gang_scheduling::new);
    add(topology_placement::NAME, topology_placement::new);
    add(pod_group_pods_count::NAME, stateless::<PodGroupPodsCount>);
    add(scheduling_gates::NAME, stateless::<SchedulingGates>);
    add(node_unschedulable::NAME, stateless::<NodeUnschedulable>);
    add(node_name::NAME, stateless::<NodeName>);
    add(taint_toleration::NAME, stateless::<TaintToleration>);
    add(image_locality::NAME, |_, handle| {
        Ok(Arc::new(ImageLocality::new(&handle.features)))
    });
    add(inter_pod_affinity::NAME, |args, _| {
        Ok(Arc::new(InterPodAffinity::new(decode_in_tree_args(
            inter_pod_affinity::NAME,
            args,
        )?)))
    });
    add(node_resources_fit::NAME, |args, handle| {
        Ok(Arc::new(
            NodeResourcesFit::new(decode_in_tree_args(node_resources_fit::NAME, args)?)
                .with_handle(handle),
        ))
    });
    add(node_affinity::NAME, |args, _| {
        Ok(Arc::new(NodeAffinity::new(decode_in_tree_args(
            node_affinity::NAME,
            args,
        )?)?))
    });
    add(node_ports::NAME, stateless::<NodePorts>);
    add(node_declared_features::NAME, |_, handle| {
        Ok(Arc::new(NodeDeclaredFeatures::new(&handle.features)))
    });
    add(pod_topology_spread::NAME, |args, _| {
        Ok(Arc::new(PodTopologySpread::new(decode_in_tree_args(
            pod_topology_spread::NAME,
            args,
        )?)))
    });
    add(balanced_allocation::NAME, |args, handle| {
        let mut a: kubesched_config::args::NodeResourcesBalancedAllocationArgs =
            decode_in_tree_args(balanced_allocation::NAME, args)?;
        kubesched_config::args::PluginArgs::apply_defaults(&mut a);
        Ok(Arc::new(BalancedAllocation::new(a, &handle.features)))
    });
    add(default_binder::NAME, |_, handle| {
        Ok(Arc::new(DefaultBinder::new(handle)))
    });
    add(default_preemption::NAME, |args, _| {
        let args: kubesched_config::args::DefaultPreemptionArgs =
            decode_in_tree_args(default_preemption::NAME, args)?;
        Ok(Arc::new(DefaultPreemption::new(args)))
    });
    add(dynamic_resources::NAME, |_, handle| {
        Ok(Arc::new(DynamicResources::new(handle)))
    });
    add(
        volumes::VOLUME_RESTRICTIONS,
        stateless::<VolumeRestrictions>,
    );
    add(volumes::NODE_VOLUME_LIMITS, stateless::<NodeVolumeLimits>);
    add(volumes::VOLUME_BINDING, |args, handle| {
        let args = decode_in_tree_args::<kubesched_config::args::VolumeBindingArgs>(
            volumes::VOLUME_BINDING,
            args,
        )?;
        Ok(Arc::new(VolumeBinding::with_args(&args, handle)))
    });
    add(volumes::VOLUME_ZONE, stateless::<VolumeZone>);
    r
}
