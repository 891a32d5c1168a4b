//! `KubeSchedulerConfiguration` (`kubescheduler.config.k8s.io/v1`) for kubesched: strict
//! parsing from YAML or JSON, kube-scheduler v1.35's v1 defaulting and its validation.
//!
//! This crate sits under `kubesched-framework`'s profile building: it turns a config file
//! into [`Profile`]s whose [`Plugins`] are the defaults merged with the user's sets
//! (`mergePlugins`, multiPoint not yet expanded) and whose [`PluginConfig`] holds defaulted
//! args for every enabled in-tree plugin. Unknown plugin names are not checked here: the
//! framework checks them against its registry.
//!
//! Parsing is strict, as kube-scheduler's is: an unknown field anywhere, in-tree plugin
//! args included, is an error naming its path and, when it looks like a typo, the field
//! that was probably meant.
//!
//! ```
//! use kubesched_config::KubeSchedulerConfiguration;
//!
//! let text = r#"
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//! - schedulerName: default-scheduler
//!   pluginConfig:
//!   - name: NodeResourcesFit
//!     args:
//!       scoringStrategy:
//!         type: MostAllocated
//! "#;
//! let loaded = KubeSchedulerConfiguration::from_yaml_str(text, "sched.yaml").unwrap();
//! let profile = loaded.config.profile("default-scheduler").unwrap();
//! let args = profile.plugin_args("NodeResourcesFit").unwrap();
//! assert_eq!(args["scoringStrategy"]["resources"][0]["name"], "cpu");
//!
//! let err = KubeSchedulerConfiguration::from_yaml_str(
//!     &text.replace("schedulerName", "schdulerName"),
//!     "sched.yaml",
//! )
//! .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "sched.yaml: profiles[0].schdulerName: unknown field, did you mean schedulerName?"
//! );
//! ```

pub mod args;
mod decode;
mod defaults;
mod duration;
mod error;
pub mod k8s_names;
mod load;
mod types;

pub use defaults::{
    DefaultPluginGates, default_plugins, default_plugins_for, default_plugins_gated,
    merge_plugin_set, merge_plugins,
};
pub use duration::{format_go_duration, parse_go_duration};
pub use error::{ConfigError, FieldError, FieldErrorKind, echo};
pub use types::{
    ClientConnectionConfiguration, KubeSchedulerConfiguration, LeaderElectionConfiguration, Loaded,
    PluginConfig, PluginRef, PluginSet, Plugins, Profile,
};

/// The apiVersion of the configuration this crate implements.
pub const API_VERSION_V1: &str = "kubescheduler.config.k8s.io/v1";

/// The scheduler name of the single default profile (`v1.DefaultSchedulerName`).
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

impl KubeSchedulerConfiguration {
    /// Parse, default and validate a YAML document; `source` (a file name) prefixes messages.
    pub fn from_yaml_str(text: &str, source: &str) -> Result<Loaded, ConfigError> {
        let value = decode::parse_yaml(text, source)?;
        load::load(value, source)
    }

    /// Parse, default and validate a JSON document; `source` prefixes messages.
    pub fn from_json_str(text: &str, source: &str) -> Result<Loaded, ConfigError> {
        let value = decode::parse_json(text, source)?;
        load::load(value, source)
    }

    /// Default and validate an already-parsed document (e.g. one document of a
    /// multi-document scenario file).
    pub fn from_value(value: serde_json::Value, source: &str) -> Result<Loaded, ConfigError> {
        load::load(value, source)
    }

    /// The configuration document a `v1` ConfigMap holds (as the lesson's
    /// `deploy/configmap.yaml`: the one `data` value that is a
    /// `KubeSchedulerConfiguration`), with the name messages give it
    /// (`SOURCE: ConfigMap NS/NAME, data[KEY]`). `Ok(None)` when `value` is not a
    /// ConfigMap; an error when it holds none or several, or the one it holds does not
    /// parse. The loading functions above already read a ConfigMap this way.
    pub fn document_in_config_map(
        value: &serde_json::Value,
        source: &str,
    ) -> Result<Option<(serde_json::Value, String)>, ConfigError> {
        load::config_map_contents(value, source)
    }

    /// kube-scheduler's default configuration: what a v1 document with only `apiVersion`
    /// and `kind` defaults to.
    pub fn default_config() -> KubeSchedulerConfiguration {
        load::default_config()
    }

    /// The profile named `scheduler_name`.
    pub fn profile(&self, scheduler_name: &str) -> Option<&Profile> {
        self.profiles
            .iter()
            .find(|p| p.scheduler_name == scheduler_name)
    }
}

impl Default for KubeSchedulerConfiguration {
    fn default() -> Self {
        Self::default_config()
    }
}

/// Decode plugin args strictly into `T`, for plugin factories (in-tree or out-of-tree).
///
/// `args` may carry `apiVersion` and `kind` as kube-scheduler accepts; a `kind` other than
/// `<plugin>Args` is an error. `null` (no args) decodes as an empty object; `null` members
/// count as absent. An unknown field is an error with a suggestion. No defaulting is done
/// here: args from a loaded [`Profile`] are already defaulted.
pub fn decode_args<T: serde::de::DeserializeOwned>(
    plugin: &str,
    args: &serde_json::Value,
) -> Result<T, ConfigError> {
    load::decode_args_at(plugin, Some(args), &format!("{plugin} args"), "")
}

/// Every plugin name of kube-scheduler v1.35's in-tree registry, sorted.
pub fn in_tree_plugin_names() -> &'static [&'static str] {
    defaults::IN_TREE_PLUGIN_NAMES
}
