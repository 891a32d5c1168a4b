//! Building a [`Framework`] from a profile: each extension point's plugin list by
//! kube-scheduler's rules (`updatePluginList`, `expandMultiPointPlugins`), score weights
//! (`getScoreWeights`), and the errors a profile can give.

use super::{Framework, WeightedScore, Wired};
use crate::plugin::*;
use crate::registry::{Handle, Registry};
use kubesched_config::{PluginSet, Plugins, Profile};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A profile could not be turned into a framework.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameworkError {
    /// A plugin named in the profile is not in the registry.
    #[error("profile {profile:?}: plugins.{point}.enabled: plugin {plugin:?} does not exist{hint}")]
    UnknownPlugin {
        /// The profile's scheduler name.
        profile: String,
        /// The extension point where the profile enables it (`multiPoint`, `filter`, ...).
        point: &'static str,
        /// The unknown name.
        plugin: String,
        /// ", did you mean X?" when a registered name is close.
        hint: String,
    },
    /// A plugin is enabled at a point it does not implement.
    #[error(
        "profile {profile:?}: plugins.{}.enabled: plugin {plugin:?} is not a {} plugin: it does not implement the {} extension point",
        point_field(point),
        point.trim_end_matches("Plugin"),
        point.trim_end_matches("Plugin")
    )]
    NotImplemented {
        /// The profile's scheduler name.
        profile: String,
        /// The extension point.
        point: &'static str,
        /// The plugin.
        plugin: String,
    },
    /// A plugin is enabled twice at one point.
    #[error("profile {profile:?}: plugin {plugin:?} already registered as {point:?}")]
    Duplicate {
        /// The profile's scheduler name.
        profile: String,
        /// The extension point.
        point: &'static str,
        /// The plugin.
        plugin: String,
    },
    /// A factory rejected its args.
    #[error("profile {profile:?}: initializing plugin {plugin:?}: {message}")]
    Init {
        /// The profile's scheduler name.
        profile: String,
        /// The plugin.
        plugin: String,
        /// The factory's message.
        message: String,
    },
    /// The profile does not have exactly one QueueSort plugin.
    #[error(
        "only one queue sort plugin required for profile with scheduler name {profile:?}, but got {count}"
    )]
    QueueSortCount {
        /// The profile's scheduler name.
        profile: String,
        /// How many it has.
        count: usize,
    },
    /// The profile has no Bind plugin.
    #[error("at least one bind plugin is needed for profile with scheduler name {profile:?}")]
    NoBind {
        /// The profile's scheduler name.
        profile: String,
    },
    /// A score weight is out of range.
    #[error("profile {profile:?}: score plugin {plugin:?}: weight {weight} must be positive")]
    Weight {
        /// The profile's scheduler name.
        profile: String,
        /// The plugin.
        plugin: String,
        /// The weight given.
        weight: i64,
    },
}

/// Builds one extension point's list by kube-scheduler's rules (`updatePluginList`
/// then `expandMultiPointPlugins`).
struct PointBuilder<'a> {
    profile: &'a str,
    plugins: &'a BTreeMap<String, Arc<dyn Plugin>>,
    registry: &'a Registry,
    multi_point: &'a PluginSet,
}

impl PointBuilder<'_> {
    fn build<T: ?Sized>(
        &self,
        point: &'static str,
        set: &PluginSet,
        cast: impl Fn(Arc<dyn Plugin>) -> Option<Arc<T>>,
    ) -> Result<Vec<Wired<T>>, FrameworkError> {
        let wire = |name: &str| -> Result<Option<Wired<T>>, FrameworkError> {
            let plugin = self.lookup(point, name)?;
            Ok(cast(plugin).map(|plugin| Wired {
                name: Arc::from(name),
                plugin,
            }))
        };
        let mut explicit: Vec<Wired<T>> = Vec::new();
        for entry in &set.enabled {
            let wired = wire(&entry.name)?.ok_or_else(|| FrameworkError::NotImplemented {
                profile: self.profile.to_string(),
                point,
                plugin: entry.name.clone(),
            })?;
            if explicit.iter().any(|w| *w.name == *entry.name) {
                return Err(self.duplicate(point, &entry.name));
            }
            explicit.push(wired);
        }
        if self.multi_point.enabled.is_empty() || set.disabled.iter().any(|d| d.name == "*") {
            return Ok(explicit);
        }
        let disabled: BTreeSet<&str> = set.disabled.iter().map(|d| d.name.as_str()).collect();
        let mut overrides: BTreeSet<&str> = BTreeSet::new();
        let mut from_multi_point: Vec<Wired<T>> = Vec::new();
        for entry in &self.multi_point.enabled {
            let Some(wired) = wire(&entry.name)? else {
                continue;
            };
            if disabled.contains(entry.name.as_str()) {
                continue;
            }
            if explicit.iter().any(|w| *w.name == *entry.name) {
                overrides.insert(entry.name.as_str());
                continue;
            }
            if from_multi_point.iter().any(|w| *w.name == *entry.name) {
                return Err(self.duplicate(point, &entry.name));
            }
            from_multi_point.push(wired);
        }
        let (overridden, rest): (Vec<_>, Vec<_>) = explicit
            .into_iter()
            .partition(|w| overrides.contains(&*w.name));
        Ok(overridden
            .into_iter()
            .chain(from_multi_point)
            .chain(rest)
            .collect())
    }

    fn lookup(&self, point: &'static str, name: &str) -> Result<Arc<dyn Plugin>, FrameworkError> {
        // Every enabled name was instantiated (or rejected as unknown) before the points
        // are built, so a miss here can only be a name that is not in the registry.
        self.plugins
            .get(name)
            .cloned()
            .ok_or_else(|| FrameworkError::UnknownPlugin {
                profile: self.profile.to_string(),
                point,
                plugin: name.to_string(),
                hint: closest_name(self.registry, name),
            })
    }

    fn duplicate(&self, point: &'static str, plugin: &str) -> FrameworkError {
        FrameworkError::Duplicate {
            profile: self.profile.to_string(),
            point,
            plugin: plugin.to_string(),
        }
    }
}

impl Framework {
    /// Builds the framework of one profile (already defaulted by kubesched-config)
    /// from the plugins of `registry`.
    pub fn new(
        profile: &Profile,
        registry: &Registry,
        handle: &Handle,
    ) -> Result<Framework, FrameworkError> {
        let name = profile.scheduler_name.clone();
        let gated = profile.plugins_for(kubesched_config::DefaultPluginGates {
            node_declared_features: handle.features.enabled("NodeDeclaredFeatures"),
            gang_scheduling: handle.features.enabled("GangScheduling"),
            topology_aware_workload_scheduling: handle
                .features
                .enabled("TopologyAwareWorkloadScheduling"),
        });
        let p: &Plugins = &gated;
        let mut handle = handle.clone();
        handle.profile_name = name.clone();
        let mut plugins: BTreeMap<String, Arc<dyn Plugin>> = BTreeMap::new();
        for (point, set) in p.extension_points() {
            for entry in &set.enabled {
                if plugins.contains_key(&entry.name) {
                    continue;
                }
                let Some(factory) = registry.get(&entry.name) else {
                    return Err(FrameworkError::UnknownPlugin {
                        profile: name,
                        point,
                        plugin: entry.name.clone(),
                        hint: closest_name(registry, &entry.name),
                    });
                };
                {
                    let plugin =
                        factory(profile.plugin_args(&entry.name), &handle).map_err(|e| {
                            FrameworkError::Init {
                                profile: name.clone(),
                                plugin: entry.name.clone(),
                                message: e.message,
                            }
                        })?;
                    plugins.insert(entry.name.clone(), plugin);
                }
            }
        }
        let b = PointBuilder {
            profile: &name,
            plugins: &plugins,
            registry,
            multi_point: &p.multi_point,
        };
        let pre_enqueue = b.build("PreEnqueuePlugin", &p.pre_enqueue, |x| x.as_pre_enqueue())?;
        let mut queue_sort = b.build("QueueSortPlugin", &p.queue_sort, |x| x.as_queue_sort())?;
        let pre_filter = b.build("PreFilterPlugin", &p.pre_filter, |x| x.as_pre_filter())?;
        let filter = b.build("FilterPlugin", &p.filter, |x| x.as_filter())?;
        let post_filter = b.build("PostFilterPlugin", &p.post_filter, |x| x.as_post_filter())?;
        let pre_score = b.build("PreScorePlugin", &p.pre_score, |x| x.as_pre_score())?;
        let score = b.build("ScorePlugin", &p.score, |x| x.as_score())?;
        let reserve = b.build("ReservePlugin", &p.reserve, |x| x.as_reserve())?;
        let permit = b.build("PermitPlugin", &p.permit, |x| x.as_permit())?;
        let pre_bind = b.build("PreBindPlugin", &p.pre_bind, |x| x.as_pre_bind())?;
        let bind = b.build("BindPlugin", &p.bind, |x| x.as_bind())?;
        let post_bind = b.build("PostBindPlugin", &p.post_bind, |x| x.as_post_bind())?;
        let placement_generate =
            b.build("PlacementGeneratePlugin", &p.placement_generate, |x| {
                x.as_placement_generate()
            })?;
        let placement_score = b.build("PlacementScorePlugin", &p.placement_score, |x| {
            x.as_placement_score()
        })?;
        if queue_sort.len() != 1 {
            return Err(FrameworkError::QueueSortCount {
                profile: name,
                count: queue_sort.len(),
            });
        }
        if bind.is_empty() {
            return Err(FrameworkError::NoBind { profile: name });
        }
        let score: Vec<WeightedScore> = score_weights(&name, &p.score, &p.multi_point, score)?
            .into_iter()
            .map(|(wired, weight)| WeightedScore { wired, weight })
            .collect();
        let placement_score =
            score_weights(&name, &p.placement_score, &p.multi_point, placement_score)?;
        let events_by_plugin = plugins
            .iter()
            .map(|(name, plugin)| (name.clone(), plugin.events_to_register()))
            .collect();
        let mut signers: Vec<Arc<dyn Plugin>> = Vec::new();
        let names = (pre_filter.iter().map(|w| &w.name))
            .chain(filter.iter().map(|w| &w.name))
            .chain(pre_score.iter().map(|w| &w.name))
            .chain(score.iter().map(|w| &w.wired.name));
        for n in names {
            if let Some(p) = plugins.get(&**n)
                && !signers.iter().any(|s| s.name() == &**n)
            {
                signers.push(p.clone());
            }
        }
        Ok(Framework {
            profile_name: name,
            percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
            plugins,
            pre_enqueue,
            queue_sort: queue_sort.remove(0),
            pre_filter,
            filter,
            post_filter,
            pre_score,
            score,
            reserve,
            permit,
            pre_bind,
            bind,
            post_bind,
            placement_generate,
            placement_score,
            observer: None,
            events_by_plugin,
            signers,
            waiting_pods: handle.waiting_pods.clone(),
        })
    }
}

/// The configuration field of an extension point: `PreFilterPlugin` is `preFilter`.
fn point_field(point: &str) -> String {
    let bare = point.trim_end_matches("Plugin");
    let mut chars = bare.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

/// ", did you mean X?" for the registered name closest to `name`, if one is close.
fn closest_name(registry: &Registry, name: &str) -> String {
    registry
        .names()
        .map(|known| (strsim::jaro_winkler(known, name), known))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| format!(", did you mean {known}?"))
        .unwrap_or_default()
}

/// Score weights as kube-scheduler's `getScoreWeights`: the point's own list's entries
/// first, then `multiPoint`'s; the first entry for a plugin wins; absent or zero is 1.
/// The same rule weighs Score and PlacementScore plugins.
fn score_weights<T: ?Sized>(
    profile_name: &str,
    own: &PluginSet,
    multi_point: &PluginSet,
    plugins: Vec<Wired<T>>,
) -> Result<Vec<(Wired<T>, i64)>, FrameworkError> {
    let entries: Vec<_> = own.enabled.iter().chain(&multi_point.enabled).collect();
    plugins
        .into_iter()
        .map(|wired| {
            let weight = entries
                .iter()
                .find(|e| *e.name == *wired.name)
                .and_then(|e| e.weight)
                .map(i64::from)
                .unwrap_or(0);
            let weight = if weight == 0 { 1 } else { weight };
            if weight < 1 {
                return Err(FrameworkError::Weight {
                    profile: profile_name.to_string(),
                    plugin: wired.name.to_string(),
                    weight,
                });
            }
            Ok((wired, weight))
        })
        .collect()
}
