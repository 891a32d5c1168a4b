//! The what-if options of `kubesched simulate`, `capacity` and `rollout`: `--config`,
//! `--add` and `--from-cluster`, turned into one scenario.
//!
//! `--from-cluster` reads the nodes, pods, namespaces, PodDisruptionBudgets, the
//! workload objects plugins read, and the storage and `resource.k8s.io` objects from a
//! live API server (list requests only, through `kubesched_kube::cluster_dump`; a
//! storage or DRA kind the server does not serve or let us list is left out with a
//! warning) as one `kind: List` source named after the cluster,
//! `cluster https://host:port (context NAME)`, so the loader sees what
//! `kubectl get ... -o json` would print. Scenario files given with it come after the
//! cluster (extra nodes, pods or a KubeSchedulerConfiguration); `--add` and `--config`
//! apply as to files. A live cluster holds no KubeSchedulerConfiguration, so unless
//! one is given the default profile is used, and a note says which configuration was.
//!
//! Without the `cluster` feature the options are still there, so that the command's
//! shape does not change, but `--from-cluster` is an error saying how to get it.

use std::path::PathBuf;

use clap::Args;
#[cfg(feature = "cluster")]
use kubesched_kube::cluster_dump::ClusterOptions;
#[cfg(feature = "cluster")]
use kubesched_kube::server_version::connect_dump_and_version;
use kubesched_sim::scenario::{Scenario, Source};

use crate::versions::ServerBehaviour;
use kubesched_sim::whatif;

/// Options shared by the commands that read a scenario.
#[derive(Args, Debug, Clone, Default)]
pub struct WhatIfArgs {
    /// The KubeSchedulerConfiguration, from its own file as kube-scheduler's --config
    /// takes it; it replaces one inside the scenario.
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// Another scheduler running beside the scenario's (as my-scheduler beside
    /// kube-scheduler in the lesson): a configuration file (or the ConfigMap holding
    /// it), whose profiles take the pods that name them. kube-scheduler's default
    /// configuration keeps running as default-scheduler unless one of these defines
    /// that name. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub scheduler: Vec<String>,
    /// Print the scenario before the answer: every file read (the built-in demo's with
    /// no FILE, the cluster's objects with --from-cluster), each after a `# --- NAME`
    /// line, on standard output.
    #[arg(long)]
    pub show_scenario: bool,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
}

/// Where the scenario comes from besides its files: `--add`, `--from-cluster` (the
/// what-if options without `--config`, which `kubesched report` takes more than once).
#[derive(Args, Debug, Clone, Default)]
pub struct ScenarioArgs {
    /// Add pending pods, or a Deployment, ReplicaSet, Job or StatefulSet expanded to the
    /// pods its controller would create; they come after the scenario's own pods.
    /// Repeatable.
    #[arg(long, value_name = "FILE")]
    pub add: Vec<String>,
    /// The most pods one workload (of --add, or the Deployment of `rollout`, at its
    /// peak) may expand to; more is an error naming the workload's replicas field.
    #[arg(long, value_name = "N", default_value_t = kubesched_sim::workloads::DEFAULT_MAX_PODS)]
    pub max_pods: usize,
    /// Read the scenario from a live API server: its nodes, pods (the pending ones are
    /// simulated), namespaces, PodDisruptionBudgets, Services, ReplicationControllers,
    /// ReplicaSets, StatefulSets, PersistentVolumes, claims, StorageClasses, CSI objects
    /// and resource.k8s.io objects, with list requests only; nothing is written to the
    /// cluster. Scenario files given as well are read after the cluster's objects. The
    /// default profile is used unless --config (or a file) gives a configuration.
    #[arg(long)]
    pub from_cluster: bool,
    /// The kubeconfig for --from-cluster (default: $KUBECONFIG, then ~/.kube/config,
    /// then the in-cluster service account).
    #[arg(long, value_name = "PATH", requires = "from_cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context for --from-cluster (default: its current-context).
    #[arg(long, value_name = "NAME", requires = "from_cluster")]
    pub context: Option<String>,
}

/// The scenario of `files` with the what-if options applied; notes go to stderr.
/// Returns the scenario, when the configuration is worth saying (`--config`, or a
/// cluster read with `--from-cluster`) a line saying which configuration is used, and
/// the behaviour of the API server's version for `--from-cluster` (when `/version`
/// answered).
pub fn load_scenario(
    files: &[String],
    args: &WhatIfArgs,
) -> Result<(Scenario, Option<String>, Option<ServerBehaviour>), String> {
    load_scenario_or(files, args, true)
}

/// As [`load_scenario`], but with no FILE and no `--from-cluster` the cluster is empty
/// (not the demo) unless `demo` says otherwise.
pub fn load_scenario_or(
    files: &[String],
    args: &WhatIfArgs,
    demo: bool,
) -> Result<(Scenario, Option<String>, Option<ServerBehaviour>), String> {
    let mut sources = Vec::new();
    let mut server = None;
    let config = args.config.as_ref();
    let args_config = args.config.as_slice();
    let show = args.show_scenario;
    let mut beside = read_files(&args.scheduler)?;
    let args = &args.scenario;
    if args.from_cluster {
        let (source, version) = read_cluster(args)?;
        sources.push(source);
        server = version;
        sources.extend(read_files(files)?);
    } else if files.is_empty() && demo {
        // The demo: the lesson's cluster, kube-scheduler's default configuration as
        // default-scheduler and the lesson's my-scheduler beside it (unless --config
        // gives the configuration to run instead).
        let (cluster, my_scheduler) = kubesched_sim::demo_sources();
        sources.push(cluster);
        if config.is_none() {
            beside.insert(0, my_scheduler);
        }
        if !show {
            say_note!(
                "{}: the \"multiple schedulers\" lesson: a tainted control plane, two workers, the lesson's pods; kube-scheduler's default configuration as default-scheduler and the lesson's my-scheduler beside it (--show-scenario prints them)",
                kubesched_sim::DEMO_NAME
            );
        }
    } else {
        sources = read_files(files)?;
    }
    let additions = read_files(&args.add)?;
    let config_files = read_files(args_config)?;
    let mut scenario =
        whatif::with_additions(&sources, &additions, args.max_pods).map_err(|e| e.to_string())?;
    for w in &scenario.warnings {
        say_warning!("{w}");
    }
    let mut config_line = None;
    if let (Some(file), Some(source)) = (config, config_files.first()) {
        let replaced =
            whatif::replace_config(&mut scenario, source).map_err(|e| format!("--config {e}"))?;
        config_line = Some(match replaced {
            Some(previous) => format!(
                "configuration: {file} (given with --config; it replaces the one in {previous})"
            ),
            None => format!("configuration: {file} (given with --config)"),
        });
    } else if args.from_cluster {
        config_line = Some(match &scenario.config {
            Some(config) => format!("configuration: {}", config.source),
            None => "configuration: built-in default (kube-scheduler's default profile; a cluster holds no KubeSchedulerConfiguration, give yours with --config)".to_string(),
        });
    }
    if show {
        let shown = sources
            .iter()
            .chain(&additions)
            .chain(&config_files)
            .chain(&beside);
        let mut text = String::new();
        for source in shown {
            text.push_str(&format!("# --- {}\n{}", source.name, source.text));
            if !source.text.ends_with('\n') {
                text.push('\n');
            }
        }
        super::print_out(&text);
    }
    if !beside.is_empty() {
        let schedulers = whatif::add_schedulers(&mut scenario, &beside)
            .map_err(|e| format!("--scheduler {e}"))?;
        config_line = Some(format!(
            "schedulers side by side: {}",
            schedulers.join("; ")
        ));
    }
    if let Some(line) = &config_line {
        say_note!("{line}");
    }
    Ok((scenario, config_line, server))
}

/// The cluster's objects as a source named after the cluster, and its version; a note
/// on stderr says what was read (and a warning when `/version` did not answer).
#[cfg(feature = "cluster")]
fn read_cluster(args: &ScenarioArgs) -> Result<(Source, Option<ServerBehaviour>), String> {
    let options = ClusterOptions {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    let (name, dump, version) =
        connect_dump_and_version(&options).map_err(|e| format!("--from-cluster: {e}"))?;
    say_note!("read {name}: {}", dump.summary());
    for w in &dump.warnings {
        say_warning!("--from-cluster: {w}");
    }
    let version = version
        .map_err(|e| say_warning!("--from-cluster: {e}; the newest version's behaviour is used unless --kubernetes-version says otherwise"))
        .ok()
        .map(|v| ServerBehaviour {
            version: v.behaviour,
            why: v.choice(),
        });
    Ok((
        Source {
            name,
            text: dump.text,
        },
        version,
    ))
}

/// `--from-cluster` in a command built without the `cluster` feature.
#[cfg(not(feature = "cluster"))]
fn read_cluster(_: &ScenarioArgs) -> Result<(Source, Option<ServerBehaviour>), String> {
    Err("--from-cluster: this command was built without the `cluster` feature (kubesched-cli's default, or the `runtime` feature of the kubesched crate), which reads live clusters".to_string())
}

/// Reads files (`-` is standard input) as sources.
pub fn read_files(files: &[String]) -> Result<Vec<Source>, String> {
    super::read_sources(files)
}
