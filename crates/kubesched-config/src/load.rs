//! Loading: strict decoding of the document, v1 defaulting (`SetDefaults_KubeSchedulerConfiguration`
//! and `setDefaults_KubeSchedulerProfile`), plugin args handling, and validation
//! (`ValidateKubeSchedulerConfiguration`).

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::args::{
    DefaultPreemptionArgs, DynamicResourcesArgs, InterPodAffinityArgs, NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs, PluginArgs, PodTopologySpreadArgs,
    VolumeBindingArgs,
};
use crate::decode::{decode_value, describe, index, join, strip_nulls};
use crate::defaults::{default_plugins, merge_plugins};
use crate::duration::{format_go_duration, parse_go_duration, to_std};
use crate::error::{ConfigError, FieldError};
use crate::types::{
    ClientConnectionConfiguration, KubeSchedulerConfiguration, LeaderElectionConfiguration, Loaded,
    PluginConfig, Plugins, Profile,
};
use crate::{API_VERSION_V1, DEFAULT_SCHEDULER_NAME};

const API_VERSION_V1BETA2: &str = "kubescheduler.config.k8s.io/v1beta2";
const API_VERSION_V1BETA3: &str = "kubescheduler.config.k8s.io/v1beta3";
const KIND: &str = "KubeSchedulerConfiguration";

/// Top-level fields that existed in older versions and are gone from v1.
const REMOVED_FIELDS: &[(&str, &str)] = &[
    ("healthzBindAddress", API_VERSION_V1BETA3),
    ("metricsBindAddress", API_VERSION_V1BETA3),
    ("algorithmSource", API_VERSION_V1BETA2),
    ("hardPodAffinitySymmetricWeight", API_VERSION_V1BETA2),
];

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    #[allow(dead_code)]
    api_version: Option<String>,
    #[allow(dead_code)]
    kind: Option<String>,
    parallelism: Option<i32>,
    leader_election: Option<RawLeaderElection>,
    client_connection: Option<RawClientConnection>,
    enable_profiling: Option<bool>,
    enable_contention_profiling: Option<bool>,
    percentage_of_nodes_to_score: Option<i32>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    profiles: Option<Vec<RawProfile>>,
    extenders: Option<Vec<Value>>,
    delay_cache_until_active: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawLeaderElection {
    leader_elect: Option<bool>,
    lease_duration: Option<String>,
    renew_deadline: Option<String>,
    retry_period: Option<String>,
    resource_lock: Option<String>,
    resource_name: Option<String>,
    resource_namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawClientConnection {
    kubeconfig: Option<String>,
    accept_content_types: Option<String>,
    content_type: Option<String>,
    qps: Option<f32>,
    burst: Option<i32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProfile {
    scheduler_name: Option<String>,
    percentage_of_nodes_to_score: Option<i32>,
    plugins: Option<Plugins>,
    plugin_config: Option<Vec<RawPluginConfig>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPluginConfig {
    name: Option<String>,
    args: Option<Value>,
}

/// Load a parsed document (the whole `KubeSchedulerConfiguration` object).
pub(crate) fn load(value: Value, source: &str) -> Result<Loaded, ConfigError> {
    if let Some((inner, inner_source)) = config_map_contents(&value, source)? {
        return load(inner, &inner_source);
    }
    let mut warnings = Vec::new();
    let Value::Object(map) = &value else {
        return Err(ConfigError::NotAMapping {
            file: source.to_string(),
            found: describe(&value).to_string(),
        });
    };
    match map.get("apiVersion") {
        None | Some(Value::Null) => {
            return Err(ConfigError::MissingApiVersion {
                file: source.to_string(),
            });
        }
        Some(Value::String(v)) if v == API_VERSION_V1 => {}
        Some(Value::String(v)) if v == API_VERSION_V1BETA2 || v == API_VERSION_V1BETA3 => {
            warnings.push(format!(
                "{source}: apiVersion {v} is no longer served by kube-scheduler v1.35; loaded as {API_VERSION_V1} (v1 defaults apply)"
            ));
        }
        Some(Value::String(v)) => {
            return Err(ConfigError::UnsupportedApiVersion {
                file: source.to_string(),
                api_version: v.clone(),
            });
        }
        Some(other) => {
            return Err(ConfigError::Decode {
                file: source.to_string(),
                path: "apiVersion".to_string(),
                message: format!("expected a string, found {}", describe(other)),
            });
        }
    }
    match map.get("kind") {
        None | Some(Value::Null) => {
            return Err(ConfigError::MissingKind {
                file: source.to_string(),
            });
        }
        Some(Value::String(k)) if k == KIND => {}
        Some(other) => {
            return Err(ConfigError::WrongKind {
                file: source.to_string(),
                kind: match other {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                },
            });
        }
    }
    for (field, removed_in) in REMOVED_FIELDS {
        if map.contains_key(*field) {
            return Err(ConfigError::RemovedField {
                file: source.to_string(),
                path: field.to_string(),
                removed_in: removed_in.to_string(),
            });
        }
    }
    let mut value = value;
    strip_nulls_except_args(&mut value);
    let raw: RawConfig = decode_value(value, source, "")?;
    let config = build(raw, source)?;
    Ok(Loaded { config, warnings })
}

/// A `v1` ConfigMap (as the lesson's `deploy/configmap.yaml`, mounted as kube-scheduler's
/// `--config` file) stands for the configuration it holds: the one `data` value that is
/// a `KubeSchedulerConfiguration` document, named `FILE: ConfigMap NS/NAME, data[KEY]` in
/// messages. `None` when `value` is not a ConfigMap.
pub(crate) fn config_map_contents(
    value: &Value,
    source: &str,
) -> Result<Option<(Value, String)>, ConfigError> {
    let Value::Object(map) = value else {
        return Ok(None);
    };
    if map.get("kind").and_then(Value::as_str) != Some("ConfigMap")
        || map.get("apiVersion").and_then(Value::as_str) != Some("v1")
    {
        return Ok(None);
    }
    let meta = map.get("metadata");
    let field = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str);
    let name = match (field("namespace"), field("name")) {
        (Some(ns), Some(n)) => format!("{ns}/{n}"),
        (None, Some(n)) => n.to_string(),
        _ => "(unnamed)".to_string(),
    };
    let what = format!("{source}: ConfigMap {name}");
    let Some(data) = map.get("data").and_then(Value::as_object) else {
        return Err(ConfigError::ConfigMap {
            what,
            message: "data: Required value: the ConfigMap holds no KubeSchedulerConfiguration"
                .to_string(),
        });
    };
    let mut found = Vec::new();
    let mut broken = None;
    for (key, text) in data {
        let Some(text) = text.as_str() else { continue };
        let key_source = format!("{what}, data[{key}]");
        match crate::decode::parse_yaml(text, &key_source) {
            Ok(doc) if doc.get("kind").and_then(Value::as_str) == Some(KIND) => {
                found.push((doc, key_source, key));
            }
            Ok(_) => {}
            // A key that names the kind but does not parse is the configuration, broken.
            Err(e) if text.contains(KIND) => broken = broken.or(Some(e)),
            Err(_) => {}
        }
    }
    match found.len() {
        1 => {
            let (doc, key_source, _) = found.remove(0);
            Ok(Some((doc, key_source)))
        }
        0 => Err(broken.unwrap_or_else(|| {
            let keys: Vec<&str> = data.keys().map(String::as_str).collect();
            ConfigError::ConfigMap {
                what,
                message: format!(
                    "no data value is a KubeSchedulerConfiguration (keys: {})",
                    if keys.is_empty() {
                        "none".to_string()
                    } else {
                        keys.join(", ")
                    }
                ),
            }
        })),
        _ => {
            let keys: Vec<&str> = found.iter().map(|(_, _, k)| k.as_str()).collect();
            Err(ConfigError::ConfigMap {
                what,
                message: format!(
                    "{} data values are KubeSchedulerConfigurations ({}); kube-scheduler reads one file: keep one",
                    keys.len(),
                    keys.join(", ")
                ),
            })
        }
    }
}

/// Go's JSON decoding treats `null` as "not given"; out-of-tree args are left untouched.
fn strip_nulls_except_args(value: &mut Value) {
    let Value::Object(map) = value else { return };
    map.retain(|_, v| !v.is_null());
    for (key, v) in map.iter_mut() {
        if key == "profiles" {
            if let Value::Array(profiles) = v {
                for p in profiles {
                    strip_profile_nulls(p);
                }
            }
        } else {
            strip_nulls(v);
        }
    }
}

fn strip_profile_nulls(profile: &mut Value) {
    let Value::Object(map) = profile else { return };
    map.retain(|_, v| !v.is_null());
    for (key, v) in map.iter_mut() {
        if key == "pluginConfig" {
            if let Value::Array(entries) = v {
                for e in entries {
                    if let Value::Object(entry) = e {
                        entry.retain(|k, v| k == "args" || !v.is_null());
                        for (k, v) in entry.iter_mut() {
                            if k != "args" {
                                strip_nulls(v);
                            }
                        }
                    }
                }
            }
        } else {
            strip_nulls(v);
        }
    }
}

/// The built-in default configuration (what `apiVersion` + `kind` alone default to).
pub(crate) fn default_config() -> KubeSchedulerConfiguration {
    match build(RawConfig::default(), "<default>") {
        Ok(c) => c,
        // Defaulting an empty document decodes no user args, so it cannot fail.
        Err(e) => unreachable!("defaulting an empty configuration failed: {e}"),
    }
}

type ArgsOutcome = Result<(Value, Vec<FieldError>), ConfigError>;

/// Accepted `apiVersion`s inside plugin args.
fn args_api_version_ok(v: &str) -> bool {
    v == API_VERSION_V1 || v == API_VERSION_V1BETA2 || v == API_VERSION_V1BETA3
}

/// Check and remove `apiVersion` / `kind` from plugin args; `args` must be an object.
pub(crate) fn strip_type_meta(
    plugin: &str,
    args: &mut Value,
    source: &str,
    path: &str,
) -> Result<(), ConfigError> {
    let Value::Object(map) = args else {
        return Err(ConfigError::Decode {
            file: source.to_string(),
            path: path.to_string(),
            message: format!(
                "expected a mapping of {plugin} args, found {}",
                describe(args)
            ),
        });
    };
    if let Some(v) = map.remove("apiVersion") {
        match &v {
            Value::String(s) if args_api_version_ok(s) => {}
            other => {
                return Err(ConfigError::Decode {
                    file: source.to_string(),
                    path: join(path, "apiVersion"),
                    message: format!(
                        "unsupported apiVersion {} for plugin args (expected {API_VERSION_V1})",
                        other
                    ),
                });
            }
        }
    }
    if let Some(k) = map.remove("kind") {
        let expected = format!("{plugin}Args");
        let ok = matches!(&k, Value::String(s) if *s == expected);
        if !ok {
            return Err(ConfigError::ArgsKind {
                file: source.to_string(),
                path: join(path, "kind"),
                plugin: plugin.to_string(),
                kind: match k {
                    Value::String(s) => s,
                    other => other.to_string(),
                },
            });
        }
    }
    Ok(())
}

/// Decode plugin args strictly into `T` (see [`crate::decode_args`]).
pub(crate) fn decode_args_at<T: DeserializeOwned>(
    plugin: &str,
    args: Option<&Value>,
    source: &str,
    path: &str,
) -> Result<T, ConfigError> {
    let mut v = match args {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(v) => v.clone(),
    };
    strip_type_meta(plugin, &mut v, source, path)?;
    strip_nulls(&mut v);
    decode_value(v, source, path)
}

fn process_args<T: PluginArgs>(args: Option<&Value>, source: &str, path: &str) -> ArgsOutcome {
    let mut typed: T = decode_args_at(T::PLUGIN, args, source, path)?;
    typed.apply_defaults();
    let errs = typed.validate_at(path);
    let value = serde_json::to_value(&typed).map_err(|e| ConfigError::Decode {
        file: source.to_string(),
        path: path.to_string(),
        message: e.to_string(),
    })?;
    Ok((value, errs))
}

fn default_args<T: PluginArgs>() -> Value {
    serde_json::to_value(T::default()).unwrap_or(Value::Null)
}

type ArgsHandler = (fn(Option<&Value>, &str, &str) -> ArgsOutcome, fn() -> Value);

/// The v1 args kinds registered in kube-scheduler's scheme, by plugin name.
pub(crate) fn args_handler(plugin: &str) -> Option<ArgsHandler> {
    Some(match plugin {
        "DefaultPreemption" => (
            process_args::<DefaultPreemptionArgs>,
            default_args::<DefaultPreemptionArgs>,
        ),
        "DynamicResources" => (
            process_args::<DynamicResourcesArgs>,
            default_args::<DynamicResourcesArgs>,
        ),
        "InterPodAffinity" => (
            process_args::<InterPodAffinityArgs>,
            default_args::<InterPodAffinityArgs>,
        ),
        "NodeAffinity" => (
            process_args::<NodeAffinityArgs>,
            default_args::<NodeAffinityArgs>,
        ),
        "NodeResourcesBalancedAllocation" => (
            process_args::<NodeResourcesBalancedAllocationArgs>,
            default_args::<NodeResourcesBalancedAllocationArgs>,
        ),
        "NodeResourcesFit" => (
            process_args::<NodeResourcesFitArgs>,
            default_args::<NodeResourcesFitArgs>,
        ),
        "PodTopologySpread" => (
            process_args::<PodTopologySpreadArgs>,
            default_args::<PodTopologySpreadArgs>,
        ),
        "VolumeBinding" => (
            process_args::<VolumeBindingArgs>,
            default_args::<VolumeBindingArgs>,
        ),
        _ => return None,
    })
}

fn duration_field(
    given: Option<&String>,
    default_nanos: i128,
    source: &str,
    path: &str,
) -> Result<i128, ConfigError> {
    let n = match given {
        None => 0,
        Some(text) => parse_go_duration(text).map_err(|message| ConfigError::Decode {
            file: source.to_string(),
            path: path.to_string(),
            message,
        })?,
    };
    // RecommendedDefaultLeaderElectionConfiguration defaults zero durations.
    Ok(if n == 0 { default_nanos } else { n })
}

const SECOND: i128 = 1_000_000_000;

fn build(raw: RawConfig, source: &str) -> Result<KubeSchedulerConfiguration, ConfigError> {
    if raw.extenders.as_ref().is_some_and(|e| !e.is_empty()) {
        return Err(ConfigError::ExtendersUnsupported {
            file: source.to_string(),
        });
    }
    let mut errs: Vec<FieldError> = Vec::new();

    // Leader election and client connection.
    let le = raw.leader_election.unwrap_or_default();
    let lease = duration_field(
        le.lease_duration.as_ref(),
        15 * SECOND,
        source,
        "leaderElection.leaseDuration",
    )?;
    let renew = duration_field(
        le.renew_deadline.as_ref(),
        10 * SECOND,
        source,
        "leaderElection.renewDeadline",
    )?;
    let retry = duration_field(
        le.retry_period.as_ref(),
        2 * SECOND,
        source,
        "leaderElection.retryPeriod",
    )?;
    let non_empty = |v: Option<String>, d: &str| match v {
        Some(s) if !s.is_empty() => s,
        _ => d.to_string(),
    };
    let leader_election = LeaderElectionConfiguration {
        leader_elect: le.leader_elect.unwrap_or(true),
        lease_duration: to_std(lease),
        renew_deadline: to_std(renew),
        retry_period: to_std(retry),
        resource_lock: non_empty(le.resource_lock, "leases"),
        resource_name: non_empty(le.resource_name, "kube-scheduler"),
        resource_namespace: non_empty(le.resource_namespace, "kube-system"),
    };
    let cc = raw.client_connection.unwrap_or_default();
    let client_connection = ClientConnectionConfiguration {
        kubeconfig: cc.kubeconfig.unwrap_or_default(),
        accept_content_types: cc.accept_content_types.unwrap_or_default(),
        content_type: non_empty(cc.content_type, "application/vnd.kubernetes.protobuf"),
        qps: match cc.qps {
            Some(q) if q != 0.0 => q,
            _ => 50.0,
        },
        burst: match cc.burst {
            Some(b) if b != 0 => b,
            _ => 100,
        },
    };
    if client_connection.burst < 0 {
        errs.push(FieldError::invalid_raw(
            "clientConnection.burst",
            client_connection.burst.to_string(),
            "must be non-negative",
        ));
    }
    if leader_election.leader_elect {
        let p = "leaderElection";
        for (field, n) in [
            ("leaseDuration", lease),
            ("renewDeadline", renew),
            ("retryPeriod", retry),
        ] {
            if n <= 0 {
                errs.push(FieldError::invalid_raw(
                    join(p, field),
                    format_go_duration(n),
                    "must be greater than zero",
                ));
            }
        }
        if lease <= renew {
            errs.push(FieldError::invalid_raw(
                join(p, "leaseDuration"),
                format_go_duration(renew),
                "LeaseDuration must be greater than RenewDeadline",
            ));
        }
        if leader_election.resource_lock != "leases" {
            errs.push(FieldError::invalid_str(
                join(p, "resourceLock"),
                &leader_election.resource_lock,
                "resourceLock value must be \"leases\"",
            ));
        }
    }

    let parallelism = raw.parallelism.unwrap_or(16);
    if parallelism <= 0 {
        errs.push(FieldError::invalid_raw(
            "parallelism",
            parallelism.to_string(),
            "should be an integer value greater than zero",
        ));
    }

    // Profiles.
    let mut raw_profiles = raw.profiles.unwrap_or_default();
    if raw_profiles.is_empty() {
        raw_profiles.push(RawProfile::default());
    }
    let single = raw_profiles.len() == 1;
    let mut profiles = Vec::with_capacity(raw_profiles.len());
    let mut seen_names: HashMap<String, usize> = HashMap::new();
    for (i, rp) in raw_profiles.into_iter().enumerate() {
        let path = index("profiles", i);
        let scheduler_name = match rp.scheduler_name {
            Some(n) => n,
            None if single => DEFAULT_SCHEDULER_NAME.to_string(),
            None => String::new(),
        };
        if scheduler_name.is_empty() {
            errs.push(FieldError::required(join(&path, "schedulerName"), ""));
        }
        validate_percentage(
            &join(&path, "percentageOfNodesToScore"),
            rp.percentage_of_nodes_to_score,
            &mut errs,
        );
        if let Some(p) = &rp.plugins {
            validate_weights(&join(&path, "plugins"), p, &mut errs);
        }
        let plugins = merge_plugins(default_plugins(), rp.plugins.as_ref());

        // pluginConfig: user entries, then defaults for enabled in-tree plugins.
        let mut plugin_config = Vec::new();
        let mut existing: HashSet<String> = HashSet::new();
        for (j, pc) in rp.plugin_config.unwrap_or_default().into_iter().enumerate() {
            let pc_path = index(&join(&path, "pluginConfig"), j);
            let name = pc.name.unwrap_or_default();
            if !existing.insert(name.clone()) {
                errs.push(FieldError::duplicate(&pc_path, &name));
            }
            let args = match args_handler(&name) {
                Some((process, _)) => {
                    let (v, e) = process(pc.args.as_ref(), source, &join(&pc_path, "args"))?;
                    errs.extend(e);
                    v
                }
                None => pc.args.unwrap_or(Value::Null),
            };
            plugin_config.push(PluginConfig { name, args });
        }
        let enabled: BTreeSet<&str> = plugins
            .extension_points()
            .iter()
            .flat_map(|(_, s)| s.enabled.iter().map(|p| p.name.as_str()))
            .collect();
        for name in enabled {
            if existing.contains(name) {
                continue;
            }
            if let Some((_, default)) = args_handler(name) {
                plugin_config.push(PluginConfig {
                    name: name.to_string(),
                    args: default(),
                });
            }
        }

        if let Some(first) = seen_names.get(&scheduler_name) {
            errs.push(FieldError {
                path: join(&path, "schedulerName"),
                kind: crate::error::FieldErrorKind::Duplicate {
                    value: format!(
                        "{scheduler_name:?} (already the name of {})",
                        join(&index("profiles", *first), "schedulerName")
                    ),
                },
            });
        }
        seen_names.insert(scheduler_name.clone(), i);
        profiles.push(Profile {
            scheduler_name,
            percentage_of_nodes_to_score: rp.percentage_of_nodes_to_score,
            plugins,
            user_plugins: Some(rp.plugins.unwrap_or_default()),
            plugin_config,
        });
    }
    validate_common_queue_sort(&profiles, &mut errs);

    validate_percentage(
        "percentageOfNodesToScore",
        raw.percentage_of_nodes_to_score,
        &mut errs,
    );
    let pod_initial_backoff_seconds = raw.pod_initial_backoff_seconds.unwrap_or(1);
    let pod_max_backoff_seconds = raw.pod_max_backoff_seconds.unwrap_or(10);
    if pod_initial_backoff_seconds <= 0 {
        errs.push(FieldError::invalid_raw(
            "podInitialBackoffSeconds",
            pod_initial_backoff_seconds.to_string(),
            "must be greater than 0",
        ));
    }
    if pod_max_backoff_seconds < pod_initial_backoff_seconds {
        errs.push(FieldError::invalid_raw(
            "podMaxBackoffSeconds",
            pod_max_backoff_seconds.to_string(),
            "must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    if !errs.is_empty() {
        return Err(ConfigError::Invalid {
            file: source.to_string(),
            errors: errs,
        });
    }
    let enable_profiling = raw.enable_profiling.unwrap_or(true);
    let enable_contention_profiling = raw.enable_contention_profiling.unwrap_or(enable_profiling);
    Ok(KubeSchedulerConfiguration {
        parallelism,
        percentage_of_nodes_to_score: raw.percentage_of_nodes_to_score,
        pod_initial_backoff_seconds,
        pod_max_backoff_seconds,
        leader_election,
        client_connection,
        profiles,
        delay_cache_until_active: raw.delay_cache_until_active.unwrap_or(false),
        enable_profiling,
        enable_contention_profiling,
    })
}

fn validate_percentage(path: &str, value: Option<i32>, errs: &mut Vec<FieldError>) {
    if let Some(v) = value
        && !(0..=100).contains(&v)
    {
        errs.push(FieldError::invalid_raw(
            path,
            v.to_string(),
            "not in valid range [0-100]",
        ));
    }
}

/// kubesched's own check (Go accepts any int32): plugin weights must not be negative.
/// Weights beyond int32 are already rejected when decoding.
fn validate_weights(path: &str, plugins: &Plugins, errs: &mut Vec<FieldError>) {
    for (point, set) in plugins.extension_points() {
        for (j, p) in set.enabled.iter().enumerate() {
            if let Some(w) = p.weight
                && w < 0
            {
                errs.push(FieldError::invalid_raw(
                    join(&index(&join(&join(path, point), "enabled"), j), "weight"),
                    w.to_string(),
                    format!(
                        "weight of plugin {} must not be negative",
                        crate::error::echo(&p.name)
                    ),
                ));
            }
        }
    }
}

/// `validateCommonQueueSort`: every profile's queueSort set (after defaulting), and the
/// args of the queue sort plugin, must equal profile 0's.
fn validate_common_queue_sort(profiles: &[Profile], errs: &mut Vec<FieldError>) {
    let Some(first) = profiles.first() else {
        return;
    };
    let canon = &first.plugins.queue_sort;
    if canon.enabled.len() > 1 {
        errs.push(FieldError::invalid_raw(
            "profiles[0].plugins.queueSort.enabled",
            canon.enabled.len().to_string(),
            "only one queue sort plugin can be enabled",
        ));
    }
    let queue_sort_name = canon.enabled.first().map(|p| p.name.as_str());
    let queue_sort_args = queue_sort_name.and_then(|n| first.plugin_args(n));
    for (i, p) in profiles.iter().enumerate().skip(1) {
        let curr = &p.plugins.queue_sort;
        if curr != canon {
            errs.push(FieldError::invalid_raw(
                join(&index("profiles", i), "plugins.queueSort"),
                serde_json::to_string(curr).unwrap_or_default(),
                "queueSort must be the same for all profiles",
            ));
        }
        if let Some(name) = queue_sort_name {
            for cfg in &p.plugin_config {
                if cfg.name == name && Some(&cfg.args) != queue_sort_args {
                    errs.push(FieldError::invalid_raw(
                        join(&index("profiles", i), "pluginConfig.args"),
                        cfg.args.to_string(),
                        "queueSort must be the same for all profiles",
                    ));
                }
            }
        }
    }
}
