//! The defaulted, validated configuration types handed to the rest of kubesched.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A defaulted and validated `KubeSchedulerConfiguration` (`kubescheduler.config.k8s.io/v1`).
#[derive(Debug, Clone, PartialEq)]
pub struct KubeSchedulerConfiguration {
    /// Parallelism of the scheduling algorithms (default 16, must be > 0).
    pub parallelism: i32,
    /// Global percentage of nodes to score; `None` (or `Some(0)`) means adaptive.
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Initial backoff for unschedulable pods, in seconds (default 1).
    pub pod_initial_backoff_seconds: i64,
    /// Maximum backoff for unschedulable pods, in seconds (default 10).
    pub pod_max_backoff_seconds: i64,
    /// Leader election settings.
    pub leader_election: LeaderElectionConfiguration,
    /// API client settings.
    pub client_connection: ClientConnectionConfiguration,
    /// The profiles; one `default-scheduler` profile by default.
    pub profiles: Vec<Profile>,
    /// Wait to build informer caches until the scheduler is leader.
    pub delay_cache_until_active: bool,
    /// Serve pprof (default true).
    pub enable_profiling: bool,
    /// Contention profiling (default true when profiling is enabled).
    pub enable_contention_profiling: bool,
}

/// Leader election (component-base `LeaderElectionConfiguration`) after defaulting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfiguration {
    /// Run leader election (default true).
    pub leader_elect: bool,
    /// Lease duration (default 15s).
    pub lease_duration: Duration,
    /// Renew deadline (default 10s).
    pub renew_deadline: Duration,
    /// Retry period (default 2s).
    pub retry_period: Duration,
    /// Lock type (default `leases`, the only value accepted when electing).
    pub resource_lock: String,
    /// Lock object name (default `kube-scheduler`).
    pub resource_name: String,
    /// Lock object namespace (default `kube-system`).
    pub resource_namespace: String,
}

impl Default for LeaderElectionConfiguration {
    fn default() -> Self {
        LeaderElectionConfiguration {
            leader_elect: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            resource_lock: "leases".to_string(),
            resource_name: "kube-scheduler".to_string(),
            resource_namespace: "kube-system".to_string(),
        }
    }
}

/// API client settings (component-base `ClientConnectionConfiguration`) after defaulting.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConnectionConfiguration {
    /// Path to a kubeconfig file; empty means in-cluster.
    pub kubeconfig: String,
    /// `Accept` header.
    pub accept_content_types: String,
    /// Content type of requests (default `application/vnd.kubernetes.protobuf`).
    pub content_type: String,
    /// Queries per second (default 50).
    pub qps: f32,
    /// Burst (default 100).
    pub burst: i32,
}

impl Default for ClientConnectionConfiguration {
    fn default() -> Self {
        ClientConnectionConfiguration {
            kubeconfig: String::new(),
            accept_content_types: String::new(),
            content_type: "application/vnd.kubernetes.protobuf".to_string(),
            qps: 50.0,
            burst: 100,
        }
    }
}

/// One scheduling profile after defaulting.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The name pods select with `spec.schedulerName`.
    pub scheduler_name: String,
    /// Profile-level percentage of nodes to score, overriding the global one.
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Plugins after `mergePlugins(defaults, user)` with v1.35's defaults (the
    /// `NodeDeclaredFeatures` gate off); multiPoint not yet expanded. See
    /// [`Profile::plugins_gated`] for the defaults of other gate values.
    pub plugins: Plugins,
    /// The profile's `plugins` as the user wrote them (empty when not given), to merge
    /// again with gate-dependent defaults. `None` for a profile not built over
    /// kube-scheduler's defaults: its `plugins` are used as they are.
    pub user_plugins: Option<Plugins>,
    /// User args (in-tree ones decoded, defaulted, re-encoded), then default args of every
    /// enabled in-tree plugin that has an args type and no entry.
    pub plugin_config: Vec<PluginConfig>,
}

impl Profile {
    /// The merged plugins when kube-scheduler's default plugins depend on the
    /// `NodeDeclaredFeatures` gate (`applyFeatureGates` appends NodeDeclaredFeatures to
    /// multiPoint when it is on): [`Profile::plugins`] when off, or when the profile
    /// was not built over the defaults.
    pub fn plugins_gated(&self, node_declared_features: bool) -> std::borrow::Cow<'_, Plugins> {
        match &self.user_plugins {
            Some(user) if node_declared_features => {
                std::borrow::Cow::Owned(crate::defaults::merge_plugins(
                    crate::defaults::default_plugins_gated(true),
                    Some(user),
                ))
            }
            _ => std::borrow::Cow::Borrowed(&self.plugins),
        }
    }

    /// The merged plugins for the gates that change kube-scheduler's default plugins
    /// (see [`crate::DefaultPluginGates`]): [`Profile::plugins`] when every gate is
    /// off, or when the profile was not built over the defaults.
    pub fn plugins_for(&self, gates: crate::DefaultPluginGates) -> std::borrow::Cow<'_, Plugins> {
        match &self.user_plugins {
            Some(user) if !gates.all_off() => {
                std::borrow::Cow::Owned(crate::defaults::merge_plugins(
                    crate::defaults::default_plugins_for(gates),
                    Some(user),
                ))
            }
            _ => std::borrow::Cow::Borrowed(&self.plugins),
        }
    }

    /// Changes the profile's plugins from code, as editing its `plugins` in the YAML
    /// would: `edit` runs on the merged [`Profile::plugins`] and, when the profile was
    /// built over kube-scheduler's defaults, on the plugins as the user wrote them
    /// ([`Profile::user_plugins`]), so that the feature-gate-dependent merge
    /// ([`Profile::plugins_gated`]) keeps the change. Editing `plugins` alone would be
    /// lost whenever that merge runs.
    ///
    /// ```
    /// use kubesched_config::{KubeSchedulerConfiguration, PluginRef};
    ///
    /// let mut config = KubeSchedulerConfiguration::default_config();
    /// config.profiles[0].edit_plugins(|p| p.score.enabled.push(PluginRef::weighted("DataLocality", 2)));
    /// assert!(config.profiles[0].plugins_gated(true).score.enabled.iter().any(|p| p.name == "DataLocality"));
    /// ```
    pub fn edit_plugins(&mut self, edit: impl Fn(&mut Plugins)) {
        edit(&mut self.plugins);
        if let Some(user) = &mut self.user_plugins {
            edit(user);
        }
    }

    /// The args configured for `name`, if any.
    pub fn plugin_args(&self, name: &str) -> Option<&serde_json::Value> {
        self.plugin_config
            .iter()
            .find(|c| c.name == name)
            .map(|c| &c.args)
    }
}

/// Plugins per extension point (`Plugins`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Plugins {
    /// PreEnqueue.
    pub pre_enqueue: PluginSet,
    /// QueueSort.
    pub queue_sort: PluginSet,
    /// PreFilter.
    pub pre_filter: PluginSet,
    /// Filter.
    pub filter: PluginSet,
    /// PostFilter.
    pub post_filter: PluginSet,
    /// PreScore.
    pub pre_score: PluginSet,
    /// Score.
    pub score: PluginSet,
    /// Reserve.
    pub reserve: PluginSet,
    /// Permit.
    pub permit: PluginSet,
    /// PreBind.
    pub pre_bind: PluginSet,
    /// Bind.
    pub bind: PluginSet,
    /// PostBind.
    pub post_bind: PluginSet,
    /// PlacementGenerate (v1.36, `TopologyAwareWorkloadScheduling`): the plugins that
    /// split the nodes into the placements a PodGroup is tried on.
    pub placement_generate: PluginSet,
    /// PlacementScore (v1.36, `TopologyAwareWorkloadScheduling`): the plugins that rank
    /// the placements a PodGroup fits.
    pub placement_score: PluginSet,
    /// MultiPoint: plugins enabled at every extension point they implement.
    pub multi_point: PluginSet,
}

impl Plugins {
    /// Every extension point with its camelCase name, in the order of Go's `Plugins` struct
    /// (multiPoint last).
    pub fn extension_points(&self) -> [(&'static str, &PluginSet); 15] {
        [
            ("preEnqueue", &self.pre_enqueue),
            ("queueSort", &self.queue_sort),
            ("preFilter", &self.pre_filter),
            ("filter", &self.filter),
            ("postFilter", &self.post_filter),
            ("preScore", &self.pre_score),
            ("score", &self.score),
            ("reserve", &self.reserve),
            ("permit", &self.permit),
            ("preBind", &self.pre_bind),
            ("bind", &self.bind),
            ("postBind", &self.post_bind),
            ("placementGenerate", &self.placement_generate),
            ("placementScore", &self.placement_score),
            ("multiPoint", &self.multi_point),
        ]
    }

    pub(crate) fn extension_points_mut(&mut self) -> [&mut PluginSet; 15] {
        [
            &mut self.pre_enqueue,
            &mut self.queue_sort,
            &mut self.pre_filter,
            &mut self.filter,
            &mut self.post_filter,
            &mut self.pre_score,
            &mut self.score,
            &mut self.reserve,
            &mut self.permit,
            &mut self.pre_bind,
            &mut self.bind,
            &mut self.post_bind,
            &mut self.placement_generate,
            &mut self.placement_score,
            &mut self.multi_point,
        ]
    }
}

/// Enabled and disabled plugins of one extension point (`PluginSet`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PluginSet {
    /// Plugins to run, in order.
    pub enabled: Vec<PluginRef>,
    /// Default plugins to leave out; `*` disables all of them.
    pub disabled: Vec<PluginRef>,
}

/// A plugin named in a [`PluginSet`] (`Plugin`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PluginRef {
    /// Plugin name as registered.
    pub name: String,
    /// Score weight, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

impl PluginRef {
    /// A plugin without weight.
    pub fn new(name: &str) -> Self {
        PluginRef {
            name: name.to_string(),
            weight: None,
        }
    }

    /// A plugin with a weight.
    pub fn weighted(name: &str, weight: i32) -> Self {
        PluginRef {
            name: name.to_string(),
            weight: Some(weight),
        }
    }
}

/// Args of one plugin (`PluginConfig`), as camelCase JSON after defaulting.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginConfig {
    /// Plugin name.
    pub name: String,
    /// The args; for out-of-tree plugins exactly as given.
    pub args: serde_json::Value,
}

/// A loaded configuration and the warnings produced while loading it.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The configuration.
    pub config: KubeSchedulerConfiguration,
    /// Non-fatal remarks (e.g. a deprecated apiVersion was loaded as v1).
    pub warnings: Vec<String>,
}
