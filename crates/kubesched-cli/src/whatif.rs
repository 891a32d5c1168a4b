//! The what-if options of `kubesched simulate`, `capacity` and `rollout`: `--config`,
//! `--add` and (not yet) `--from-cluster`, turned into one scenario.

use clap::Args;
use kubesched_sim::scenario::{Scenario, Source};
use kubesched_sim::whatif;

/// Options shared by the commands that read a scenario.
#[derive(Args, Debug, Clone, Default)]
pub struct WhatIfArgs {
    /// The KubeSchedulerConfiguration, from its own file as kube-scheduler's --config
    /// takes it; it replaces one inside the scenario.
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// Add pending pods, or a Deployment, ReplicaSet, Job or StatefulSet expanded to the
    /// pods its controller would create; they come after the scenario's own pods.
    /// Repeatable.
    #[arg(long, value_name = "FILE")]
    pub add: Vec<String>,
    /// Read the cluster from a live API server (not available yet).
    #[arg(long)]
    pub from_cluster: bool,
    /// The kubeconfig for --from-cluster.
    #[arg(long, value_name = "PATH", requires = "from_cluster")]
    pub kubeconfig: Option<String>,
    /// The kubeconfig context for --from-cluster.
    #[arg(long, value_name = "NAME", requires = "from_cluster")]
    pub context: Option<String>,
}

/// The scenario of `files` with the what-if options applied; notes go to stderr.
/// Returns the scenario and, when `--config` was given, a line saying which
/// configuration is used.
pub fn load_scenario(
    files: &[String],
    args: &WhatIfArgs,
) -> Result<(Scenario, Option<String>), String> {
    if args.from_cluster {
        return Err("--from-cluster: reading a live cluster is not available yet; dump it with `kubectl get nodes,pods -A -o yaml > cluster.yaml` and give that file".into());
    }
    let sources = super::read_sources(files)?;
    let additions = read_files(&args.add)?;
    let mut scenario = whatif::with_additions(&sources, &additions).map_err(|e| e.to_string())?;
    for w in &scenario.warnings {
        eprintln!("kubesched: warning: {w}");
    }
    let mut config_line = None;
    if let Some(file) = &args.config {
        let source = read_files(std::slice::from_ref(file))?.remove(0);
        let replaced =
            whatif::replace_config(&mut scenario, &source).map_err(|e| format!("--config {e}"))?;
        let line = match replaced {
            Some(previous) => format!(
                "configuration: {file} (given with --config; it replaces the one in {previous})"
            ),
            None => format!("configuration: {file} (given with --config)"),
        };
        eprintln!("kubesched: note: {line}");
        config_line = Some(line);
    }
    Ok((scenario, config_line))
}

/// Reads files (`-` is standard input) as sources.
pub fn read_files(files: &[String]) -> Result<Vec<Source>, String> {
    if files.is_empty() {
        return Ok(Vec::new());
    }
    super::read_sources(files)
}
