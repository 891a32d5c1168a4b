//! The `kubesched` command: simulate kube-scheduler's decisions on a cluster described
//! in plain Kubernetes YAML, or read from a live API server, and explain them.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kubesched_sim::DEMO_SCENARIO;
use kubesched_sim::scenario::Source;

/// kubesched: kube-scheduler's framework in Rust.
#[derive(Parser, Debug)]
#[command(name = "kubesched", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Schedule the pending pods of a scenario as kube-scheduler would, and say why.
    ///
    /// A scenario is one or more multi-document YAML files of Nodes, Pods (bound ones
    /// have spec.nodeName) and at most one KubeSchedulerConfiguration, or a live
    /// cluster read with --from-cluster (its pending pods are simulated; nothing is
    /// written to it). With no FILE and no --from-cluster, runs the built-in demo of
    /// the "multiple schedulers" lesson.
    Simulate {
        /// Scenario files, read as one scenario in order; `-` reads standard input.
        /// With --from-cluster they are read after the cluster's objects.
        files: Vec<String>,
        /// `table` for people, `jsonl` for scripts (the conformance format). JSON Lines
        /// are printed one pod at a time, as each is decided.
        #[arg(long, value_enum, default_value_t = simulate::Format::Table)]
        format: simulate::Format,
        /// With --format jsonl: how much per-node detail each line has. `all` (the
        /// default, the conformance format): every feasible node's scores and every
        /// rejected node's reasons; `rejected`: only the rejected nodes' reasons;
        /// `none`: only the pod's outcome. A line with every node is as large as the
        /// cluster: leave the detail out for large clusters.
        #[arg(long, value_enum, value_name = "LEVEL")]
        detail: Option<simulate::DetailArg>,
        /// Explain one pod: every node's filter verdict or scores. A bare POD finds the
        /// only pending pod of that name in any namespace.
        #[arg(long, value_name = "NAMESPACE/POD")]
        explain: Option<String>,
        /// Run PostFilter plugins (preemption) when no node fits.
        #[arg(long)]
        preemption: bool,
        /// Print how long loading and scheduling took, on standard error.
        #[arg(long)]
        timing: bool,
        /// Run the scenario under two kube-scheduler versions and print only the pods
        /// whose node, message or nomination changes, with the scores that made the
        /// difference: `--compare-versions 1.35,1.36` is "what changes if I upgrade".
        #[arg(long, value_name = "OLD,NEW", value_parser = versions::parse_pair, conflicts_with_all = ["kubernetes_version", "explain", "format", "detail"])]
        compare_versions: Option<(
            kubesched_framework::KubernetesVersion,
            kubesched_framework::KubernetesVersion,
        )>,
        #[command(flatten)]
        whatif: whatif::WhatIfArgs,
        #[command(flatten)]
        versions: versions::VersionArgs,
    },
    /// How many more copies of a pod fit in the cluster, and which plugin stops the
    /// next one (cluster-capacity's question, kube-scheduler's rules).
    Capacity(capacity::CapacityArgs),
    /// Step through a Deployment's rollout (RollingUpdate or Recreate) over the
    /// cluster: can each step's new pods be scheduled, and where would it stall?
    Rollout(rollout::RolloutArgs),
    /// Schedule every pending pod of a scenario and report pods per second.
    ///
    /// Times the scheduling loop alone, then reports the total including parsing and
    /// the peak memory. `--mode exact` makes the same decisions as `simulate`.
    Bench {
        /// The scenario file.
        file: String,
        /// `upstream` searches and picks as kube-scheduler does; `exact` evaluates every
        /// node and takes the first best in node order.
        #[arg(long, value_enum, default_value_t = bench::Mode::Upstream)]
        mode: bench::Mode,
        /// The seed of the random pick among equal best nodes (upstream mode).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        versions: versions::VersionArgs,
    },
    /// Run as a scheduler of a real cluster: watch the API server, schedule and bind
    /// the pending pods whose spec.schedulerName is one of the configuration's
    /// profiles (kube-scheduler's flags where they overlap).
    Run(kubesched_kube::cli::RunArgs),
}

mod bench;
mod capacity;
mod rollout;
mod simulate;
mod versions;
mod whatif;

pub(crate) use simulate::Format;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => kubesched_kube::cli::run(args),
        Command::Capacity(args) => capacity::run(&args),
        Command::Rollout(args) => rollout::run(&args),
        Command::Bench {
            file,
            mode,
            seed,
            versions,
        } => match bench::run(&file, mode, seed, &versions) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("kubesched: error: {message}");
                ExitCode::from(2)
            }
        },
        Command::Simulate {
            files,
            format,
            detail,
            explain,
            preemption,
            timing,
            compare_versions,
            whatif,
            versions,
        } => match simulate::run(&simulate::Request {
            files: &files,
            format,
            detail,
            explain: explain.as_deref(),
            preemption,
            timing,
            compare_versions,
            whatif: &whatif,
            versions: &versions,
        }) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("kubesched: error: {message}");
                ExitCode::from(2)
            }
        },
    }
}

fn read_sources(files: &[String]) -> Result<Vec<Source>, String> {
    if files.is_empty() {
        return Ok(vec![Source {
            name: "<built-in demo>".into(),
            text: DEMO_SCENARIO.into(),
        }]);
    }
    files
        .iter()
        .map(|f| {
            if f == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| format!("<stdin>: cannot read: {e}"))?;
                Ok(Source {
                    name: "<stdin>".into(),
                    text,
                })
            } else {
                let text =
                    std::fs::read_to_string(f).map_err(|e| format!("{f}: cannot read: {e}"))?;
                Ok(Source {
                    name: f.clone(),
                    text,
                })
            }
        })
        .collect()
}

/// Writes `text` to standard output. A closed pipe (`kubesched ... | head`) is not an
/// error worth a panic: the reader has what it wanted.
pub(crate) fn print_out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}
