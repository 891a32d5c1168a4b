//! kube-scheduler v1.35's default plugins (`getDefaultPlugins` with its feature gates
//! applied) and `mergePlugins` / `mergePluginSet`.

use std::collections::{HashMap, HashSet};

use crate::types::{PluginRef, PluginSet, Plugins};

/// Every plugin name of kube-scheduler v1.35's in-tree registry.
pub(crate) const IN_TREE_PLUGIN_NAMES: &[&str] = &[
    "DefaultBinder",
    "DefaultPreemption",
    "DynamicResources",
    "GangScheduling",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeDeclaredFeatures",
    "NodeName",
    "NodePorts",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "NodeVolumeLimits",
    "PodTopologySpread",
    "PrioritySort",
    "SchedulingGates",
    "TaintToleration",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
];

/// The v1 default plugins with the `NodeDeclaredFeatures` gate off (v1.35's default):
/// everything in multiPoint, DynamicResources (enabled by default, weight 2) placed just
/// before DefaultPreemption.
pub fn default_plugins() -> Plugins {
    default_plugins_gated(false)
}

/// The v1 default plugins as kube-scheduler's `applyFeatureGates` makes them: with the
/// `NodeDeclaredFeatures` gate on (v1.36's default), NodeDeclaredFeatures is appended
/// to multiPoint, after DefaultBinder.
pub fn default_plugins_gated(node_declared_features: bool) -> Plugins {
    default_plugins_for(DefaultPluginGates {
        node_declared_features,
        ..DefaultPluginGates::default()
    })
}

/// The feature gates that change kube-scheduler's default plugins (`applyFeatureGates`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultPluginGates {
    /// `NodeDeclaredFeatures`: NodeDeclaredFeatures appended to multiPoint.
    pub node_declared_features: bool,
    /// `GangScheduling` (v1.35 and v1.36, `applyGangScheduling`): GangScheduling
    /// appended to multiPoint, last.
    pub gang_scheduling: bool,
    /// `TopologyAwareWorkloadScheduling` (v1.36): TopologyPlacementGenerator and
    /// PodGroupPodsCount (weight 1) appended to multiPoint, after GangScheduling.
    pub topology_aware_workload_scheduling: bool,
}

impl DefaultPluginGates {
    /// Whether every gate has its v1.35 default (off): the defaults of
    /// [`default_plugins`].
    pub fn all_off(self) -> bool {
        self == DefaultPluginGates::default()
    }
}

/// The v1 default plugins as kube-scheduler v1.36's `applyFeatureGates` makes them for
/// `gates`: NodeDeclaredFeatures after DefaultBinder, then GangScheduling (the order
/// kube-scheduler v1.36.1 prints with both gates on).
pub fn default_plugins_for(gates: DefaultPluginGates) -> Plugins {
    let mut enabled = vec![
        PluginRef::new("SchedulingGates"),
        PluginRef::new("PrioritySort"),
        PluginRef::new("NodeUnschedulable"),
        PluginRef::new("NodeName"),
        PluginRef::weighted("TaintToleration", 3),
        PluginRef::weighted("NodeAffinity", 2),
        PluginRef::new("NodePorts"),
        PluginRef::weighted("NodeResourcesFit", 1),
        PluginRef::new("VolumeRestrictions"),
        PluginRef::new("NodeVolumeLimits"),
        PluginRef::new("VolumeBinding"),
        PluginRef::new("VolumeZone"),
        PluginRef::weighted("PodTopologySpread", 2),
        PluginRef::weighted("InterPodAffinity", 2),
        PluginRef::new("DefaultPreemption"),
        PluginRef::weighted("NodeResourcesBalancedAllocation", 1),
        PluginRef::weighted("ImageLocality", 1),
        PluginRef::new("DefaultBinder"),
    ];
    // applyFeatureGates: DynamicResourceAllocation is on by default.
    if let Some(i) = enabled.iter().position(|p| p.name == "DefaultPreemption") {
        enabled.insert(i, PluginRef::weighted("DynamicResources", 2));
    }
    if gates.node_declared_features {
        enabled.push(PluginRef::new("NodeDeclaredFeatures"));
    }
    if gates.gang_scheduling {
        enabled.push(PluginRef::new("GangScheduling"));
    }
    if gates.topology_aware_workload_scheduling {
        enabled.push(PluginRef::new("TopologyPlacementGenerator"));
        enabled.push(PluginRef::weighted("PodGroupPodsCount", 1));
    }
    Plugins {
        multi_point: PluginSet {
            enabled,
            disabled: Vec::new(),
        },
        ..Plugins::default()
    }
}

/// `mergePluginSet`: user `disabled` (then the default's) are kept; default plugins not
/// disabled stay in order, replaced in place by a user entry of the same name; the other
/// user plugins are appended in their order (duplicates included).
pub fn merge_plugin_set(default: &PluginSet, custom: &PluginSet) -> PluginSet {
    let mut disabled = Vec::new();
    let mut disabled_names = HashSet::new();
    for p in custom.disabled.iter().chain(default.disabled.iter()) {
        disabled.push(PluginRef::new(&p.name));
        disabled_names.insert(p.name.as_str());
    }
    // Later entries of the same name win, as in Go's map assignment.
    let mut custom_by_name: HashMap<&str, (usize, &PluginRef)> = HashMap::new();
    for (i, p) in custom.enabled.iter().enumerate() {
        custom_by_name.insert(p.name.as_str(), (i, p));
    }
    let mut replaced = HashSet::new();
    let mut enabled = Vec::new();
    if !disabled_names.contains("*") {
        for d in &default.enabled {
            if disabled_names.contains(d.name.as_str()) {
                continue;
            }
            match custom_by_name.get(d.name.as_str()) {
                Some((i, p)) => {
                    replaced.insert(*i);
                    enabled.push((*p).clone());
                }
                None => enabled.push(d.clone()),
            }
        }
    }
    for (i, p) in custom.enabled.iter().enumerate() {
        if !replaced.contains(&i) {
            enabled.push(p.clone());
        }
    }
    PluginSet { enabled, disabled }
}

/// `mergePlugins`: the defaults when the user gave no `plugins`, else every extension point
/// merged with [`merge_plugin_set`].
pub fn merge_plugins(default: Plugins, custom: Option<&Plugins>) -> Plugins {
    let Some(custom) = custom else {
        return default;
    };
    let mut out = default;
    let customs = custom.extension_points();
    for (slot, (_, c)) in out.extension_points_mut().into_iter().zip(customs.iter()) {
        *slot = merge_plugin_set(slot, c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &PluginSet) -> Vec<&str> {
        s.enabled.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn dynamic_resources_before_default_preemption() {
        let d = default_plugins();
        let n = names(&d.multi_point);
        let dr = n.iter().position(|x| *x == "DynamicResources").unwrap();
        assert_eq!(n[dr + 1], "DefaultPreemption");
        assert_eq!(n.len(), 19);
    }

    #[test]
    fn merge_keeps_disabled_and_appends() {
        let default = default_plugins().multi_point;
        let custom = PluginSet {
            enabled: vec![
                PluginRef::new("Custom"),
                PluginRef::weighted("ImageLocality", 5),
            ],
            disabled: vec![PluginRef::new("NodePorts")],
        };
        let m = merge_plugin_set(&default, &custom);
        assert!(!names(&m).contains(&"NodePorts"));
        assert_eq!(names(&m).last(), Some(&"Custom"));
        let il = m
            .enabled
            .iter()
            .find(|p| p.name == "ImageLocality")
            .unwrap();
        assert_eq!(il.weight, Some(5));
        assert_eq!(m.disabled, vec![PluginRef::new("NodePorts")]);
    }
}
