//! What-if inputs for `kubesched simulate`: a scheduler configuration from a file of its
//! own (`--config`), and pods or workloads added to the scenario (`--add`).
//!
//! * [`load_config`] reads a file as kube-scheduler's `--config` does: one
//!   `KubeSchedulerConfiguration` document (YAML or JSON), decoded and validated at once,
//!   so a broken file is reported as that file. [`replace_config`] puts it in place of
//!   the scenario's own (if any) and says which one it replaced.
//! * [`with_additions`] loads the scenario files and then each `--add` file: its pods,
//!   and the pods of its Deployments, ReplicaSets, Jobs and StatefulSets (see
//!   [`crate::workloads`] for the names), come after the scenario's own pods, so among
//!   pods of equal priority they are attempted after the scenario's pending pods. Other
//!   objects of an `--add` file (a Service, a new Node, ...) join the scenario too.

use std::collections::HashSet;

use kubesched_config::KubeSchedulerConfiguration;
use serde_json::{Value, json};

use crate::scenario::{self, ConfigDocument, Scenario, ScenarioError, Source};
use crate::workloads::{Workload, WorkloadError};

/// Why a what-if input could not be used. Every variant displays as one line that
/// starts with the file.
#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    /// The file does not load (syntax, unknown field, ...).
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// The configuration does not decode or validate.
    #[error("{0}")]
    Config(#[from] kubesched_config::ConfigError),
    /// A workload cannot be expanded.
    #[error("{0}")]
    Workload(#[from] WorkloadError),
    /// A `--config` file that is not exactly one KubeSchedulerConfiguration.
    #[error("{file}: not a scheduler configuration: {problem}")]
    NotAConfig {
        /// The file.
        file: String,
        /// What it holds instead.
        problem: String,
    },
    /// An `--add` (or capacity, rollout) file without what the command needs.
    #[error("{file}: {problem}")]
    Input {
        /// The file.
        file: String,
        /// What is missing or wrong.
        problem: String,
    },
}

/// Reads a `--config` file: exactly one `KubeSchedulerConfiguration` document, which
/// must decode and validate.
pub fn load_config(source: &Source) -> Result<ConfigDocument, WhatIfError> {
    let loaded = scenario::load(std::slice::from_ref(source))?;
    // A ConfigMap alone (the lesson's deploy/configmap.yaml) stands for the
    // configuration it holds.
    if loaded.config.is_none()
        && loaded.nodes.is_empty()
        && loaded.pods.is_empty()
        && let [only] = loaded.objects.as_slice()
        && let Some((value, inner)) =
            KubeSchedulerConfiguration::document_in_config_map(&only.value, &source.name)?
    {
        KubeSchedulerConfiguration::from_value(value.clone(), &inner)?;
        return Ok(ConfigDocument {
            source: inner,
            value,
        });
    }
    let others = loaded.nodes.len() + loaded.pods.len() + loaded.objects.len();
    let Some(mut config) = loaded.config else {
        let problem = if others == 0 {
            "the file holds no KubeSchedulerConfiguration document (kind: KubeSchedulerConfiguration, apiVersion: kubescheduler.config.k8s.io/v1)".to_string()
        } else {
            format!(
                "the file holds {others} other object(s) and no KubeSchedulerConfiguration document"
            )
        };
        return Err(WhatIfError::NotAConfig {
            file: source.name.clone(),
            problem,
        });
    };
    if others > 0 {
        return Err(WhatIfError::NotAConfig {
            file: source.name.clone(),
            problem: format!(
                "besides the KubeSchedulerConfiguration it holds {others} other object(s); give them as scenario files"
            ),
        });
    }
    config.source = source.name.clone();
    KubeSchedulerConfiguration::from_value(config.value.clone(), &config.source)?;
    Ok(config)
}

/// The name messages give kube-scheduler's default configuration when it runs beside
/// the configurations of [`add_schedulers`].
pub const DEFAULT_CONFIGURATION: &str = "kube-scheduler's default configuration";

/// Runs the schedulers of `sources` (each a configuration file, as [`load_config`] reads
/// it: one scheduler process with its own profiles) beside the scenario's own one: its
/// configuration, or kube-scheduler's default configuration (`default-scheduler`) when it
/// has none. As in the lesson, where my-scheduler runs beside kube-scheduler, each pod
/// goes to the scheduler that has its `spec.schedulerName`. A given configuration that
/// defines `default-scheduler` takes that name over from the default configuration; any
/// other name defined twice is an error naming both files.
///
/// The simulator runs the profiles of every scheduler in one queue (pods in
/// [`Scenario`] order, sorted by the queue sort they share), so configurations whose
/// QueueSort plugins differ are refused. Returns one line per scheduler name, saying
/// where its profile comes from.
pub fn add_schedulers(
    scenario: &mut Scenario,
    sources: &[Source],
) -> Result<Vec<String>, WhatIfError> {
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let base = scenario.config.clone().unwrap_or_else(|| ConfigDocument {
        source: DEFAULT_CONFIGURATION.to_string(),
        value: json!({
            "apiVersion": kubesched_config::API_VERSION_V1,
            "kind": "KubeSchedulerConfiguration",
        }),
    });
    // (scheduler name, where it comes from, the raw profile)
    let mut profiles: Vec<(String, String, Value)> = raw_profiles(&base)
        .into_iter()
        .map(|(name, p)| (name, base.source.clone(), p))
        .collect();
    let mut merged = base.value.clone();
    for source in sources {
        let doc = load_config(source)?;
        for (name, profile) in raw_profiles(&doc) {
            match profiles.iter().position(|(n, _, _)| *n == name) {
                Some(i) if profiles[i].1 == DEFAULT_CONFIGURATION => {
                    profiles.remove(i);
                }
                Some(i) => {
                    return Err(WhatIfError::Input {
                        file: doc.source.clone(),
                        problem: format!(
                            "profile {name:?} is also defined by {}: each scheduler name belongs to one scheduler",
                            profiles[i].1
                        ),
                    });
                }
                None => {}
            }
            profiles.push((name, doc.source.clone(), profile));
        }
    }
    let sources_named: Vec<&str> = {
        let mut seen: Vec<&str> = Vec::new();
        for (_, from, _) in &profiles {
            if !seen.contains(&from.as_str()) {
                seen.push(from);
            }
        }
        seen
    };
    let name = sources_named.join(" + ");
    if let Value::Object(map) = &mut merged {
        map.insert(
            "profiles".to_string(),
            Value::Array(profiles.iter().map(|(_, _, p)| p.clone()).collect()),
        );
    }
    KubeSchedulerConfiguration::from_value(merged.clone(), &name).map_err(|e| {
        WhatIfError::Input {
            file: name.clone(),
            problem: format!("these schedulers cannot be simulated side by side: {e}"),
        }
    })?;
    scenario.config = Some(ConfigDocument {
        source: name,
        value: merged,
    });
    Ok(profiles
        .iter()
        .map(|(n, from, _)| format!("scheduler {n}: {from}"))
        .collect())
}

/// The profiles of a configuration document as written, each with its scheduler name
/// (`default-scheduler` when not given, one such profile when there are none), and the
/// document's global `percentageOfNodesToScore` carried into each profile that does
/// not set its own (the profiles leave their own process here).
fn raw_profiles(doc: &ConfigDocument) -> Vec<(String, Value)> {
    let global = doc.value.get("percentageOfNodesToScore").cloned();
    let profiles = match doc.value.get("profiles") {
        Some(Value::Array(list)) if !list.is_empty() => list.clone(),
        _ => vec![json!({})],
    };
    profiles
        .into_iter()
        .map(|mut p| {
            let name = p
                .get("schedulerName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or(kubesched_config::DEFAULT_SCHEDULER_NAME)
                .to_string();
            if let Value::Object(map) = &mut p {
                map.insert("schedulerName".to_string(), Value::String(name.clone()));
                if let Some(g) = &global
                    && !map.contains_key("percentageOfNodesToScore")
                {
                    map.insert("percentageOfNodesToScore".to_string(), g.clone());
                }
            }
            (name, p)
        })
        .collect()
}

/// Replaces the scenario's configuration with the one of `source` (see [`load_config`]).
/// Returns where the replaced one came from, if the scenario had one.
pub fn replace_config(
    scenario: &mut Scenario,
    source: &Source,
) -> Result<Option<String>, WhatIfError> {
    let config = load_config(source)?;
    Ok(scenario
        .config
        .replace(config)
        .map(|previous| previous.source))
}

/// A pod read from a file for `capacity`: the first Pod of the file, or the pod template
/// of its first workload (Deployment, ReplicaSet, Job, StatefulSet), as a loaded
/// one-pod scenario's pod.
pub fn template_pod(
    source: &Source,
) -> Result<(std::sync::Arc<k8s_openapi::api::core::v1::Pod>, Vec<String>), WhatIfError> {
    let loaded = scenario::load(std::slice::from_ref(source))?;
    let mut warnings = loaded.warnings.clone();
    if let Some(pod) = loaded.pods.first() {
        return Ok((pod.clone(), warnings));
    }
    for object in &loaded.objects {
        if let Some(w) = Workload::from_object(object)? {
            let name = w.pod_names(0, 1, &HashSet::new()).remove(0);
            let text = json!({"apiVersion": "v1", "kind": "List", "items": [w.pod(0, &name)]});
            let generated = Source {
                name: format!(
                    "{} ({} {}/{})",
                    source.name, object.kind, w.namespace, w.name
                ),
                text: text.to_string(),
            };
            let pods = scenario::load(&[generated])?;
            warnings.extend(w.warnings);
            if let Some(pod) = pods.pods.first() {
                return Ok((pod.clone(), warnings));
            }
        }
    }
    Err(WhatIfError::Input {
        file: source.name.clone(),
        problem: "no Pod and no Deployment, ReplicaSet, Job or StatefulSet with a pod template in the file".into(),
    })
}

fn claim_key(namespace: Option<&str>, name: Option<&str>) -> String {
    format!(
        "{}/{}",
        namespace.filter(|n| !n.is_empty()).unwrap_or("default"),
        name.unwrap_or_default()
    )
}

/// The scenario of `scenario_sources` with the pods and workloads of each file of
/// `additions` added (see the module doc). Each addition file must hold at least one
/// Pod or workload; a KubeSchedulerConfiguration in it is refused (use `--config`).
///
/// A workload that would expand to more than `max_pods` pods is an error (see
/// [`crate::workloads::DEFAULT_MAX_PODS`]).
pub fn with_additions(
    scenario_sources: &[Source],
    additions: &[Source],
    max_pods: usize,
) -> Result<Scenario, WhatIfError> {
    let mut sources = scenario_sources.to_vec();
    let base = scenario::load(scenario_sources)?;
    let mut taken: HashSet<String> = base
        .pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    let mut claims: HashSet<String> = base
        .storage
        .claims
        .iter()
        .map(|c| claim_key(c.metadata.namespace.as_deref(), c.metadata.name.as_deref()))
        .collect();
    let mut warnings = Vec::new();
    for add in additions {
        let loaded = scenario::load(std::slice::from_ref(add))?;
        if loaded.config.is_some() {
            return Err(WhatIfError::Input {
                file: add.name.clone(),
                problem: "a KubeSchedulerConfiguration in an --add file; give it with --config"
                    .into(),
            });
        }
        taken.extend(loaded.pods.iter().filter_map(|p| p.metadata.name.clone()));
        claims.extend(
            loaded
                .storage
                .claims
                .iter()
                .map(|c| claim_key(c.metadata.namespace.as_deref(), c.metadata.name.as_deref())),
        );
        sources.push(add.clone());
        let mut workloads = 0;
        for object in &loaded.objects {
            let Some(w) = Workload::from_object(object)? else {
                continue;
            };
            workloads += 1;
            w.check_pod_count(w.replicas, max_pods)?;
            warnings.extend(w.warnings.iter().cloned());
            let pods = w.pods(&taken);
            for p in &pods {
                if let Some(name) = p.pointer("/metadata/name").and_then(Value::as_str) {
                    taken.insert(name.to_string());
                }
            }
            let mut items = w.owned_objects();
            for claim in w.claims(&pods) {
                let key = claim_key(
                    claim.pointer("/metadata/namespace").and_then(Value::as_str),
                    claim.pointer("/metadata/name").and_then(Value::as_str),
                );
                if claims.insert(key) {
                    items.push(claim);
                }
            }
            items.extend(pods);
            sources.push(Source {
                name: format!("{} ({} {}/{})", add.name, object.kind, w.namespace, w.name),
                text: json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
            });
        }
        if loaded.pods.is_empty() && workloads == 0 {
            return Err(WhatIfError::Input {
                file: add.name.clone(),
                problem: "nothing to add: no Pod and no Deployment, ReplicaSet, Job or StatefulSet in the file".into(),
            });
        }
    }
    let mut scenario = scenario::load(&sources)?;
    scenario.warnings.extend(warnings);
    Ok(scenario)
}
