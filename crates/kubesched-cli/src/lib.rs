//! The `kubesched` command as a library: simulate kube-scheduler's decisions on a
//! cluster described in plain Kubernetes YAML, or read from a live API server, explain
//! them, and run as a scheduler, with the in-tree plugins and any of your own.
//!
//! The `kubesched` binary is `Command::new().run()`. An out-of-tree plugin gets every
//! subcommand (`simulate`, `capacity`, `rollout`, `bench`, `run`) with its plugins, as
//! kube-scheduler's `app.NewSchedulerCommand(app.WithPlugin(name, factory))` gives it:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use kubesched_framework::{Handle, Plugin, PluginError};
//! # struct MyFilter;
//! # impl Plugin for MyFilter { fn name(&self) -> &str { "MyFilter" } }
//! fn my_filter(_args: Option<&serde_json::Value>, _: &Handle) -> Result<Arc<dyn Plugin>, PluginError> {
//!     Ok(Arc::new(MyFilter))
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     kubesched_cli::Command::new()
//!         .name("my-scheduler")
//!         .with_plugin("MyFilter", my_filter)
//!         .run()
//! }
//! ```
//!
//! Features: `cluster` (on by default) adds `run` and `--from-cluster`, and with them
//! tokio, kube, rustls and axum (through `kubesched-kube`); without it the command
//! simulates files only and builds without them.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use kubesched_framework::{Handle, Plugin, PluginError, Registry};
use kubesched_sim::scenario::Source;

/// kubesched: kube-scheduler's framework in Rust.
#[derive(Parser, Debug)]
#[command(name = "kubesched", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
    /// Plugin sets to add beside kube-scheduler's in-tree plugins, which stay as they
    /// are: `sigs` is kubernetes-sigs/scheduler-plugins (Coscheduling,
    /// CapacityScheduling), for a configuration to enable (docs/gangs-and-quotas.md).
    #[arg(
        long,
        global = true,
        value_enum,
        value_delimiter = ',',
        value_name = "SET"
    )]
    plugins: Vec<PluginSet>,
}

/// A plugin set of `--plugins`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PluginSet {
    /// kubernetes-sigs/scheduler-plugins: Coscheduling and CapacityScheduling
    /// (kubesched-plugins-sigs).
    Sigs,
}

#[derive(Subcommand, Debug)]
enum Commands {
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
        #[command(flatten)]
        cache: memory::CacheArgs,
    },
    /// How many more copies of a pod fit in the cluster, and which plugin stops the
    /// next one (cluster-capacity's question, kube-scheduler's rules).
    Capacity(capacity::CapacityArgs),
    /// Step through a Deployment's rollout (RollingUpdate or Recreate) over the
    /// cluster: can each step's new pods be scheduled, and where would it stall?
    Rollout(rollout::RolloutArgs),
    /// Replay a timed trace of events (nodes and pods applied and deleted, pods
    /// finishing, nodes cordoned and drained) over a cluster in simulated time, through
    /// kube-scheduler's queue: every attempt with its time, then how long pods waited
    /// and how full the cluster got (docs/replay.md).
    Replay(replay::ReplayArgs),
    /// Write one self-contained HTML page of a simulation: the nodes before and after,
    /// every pod and why, one pod's verdicts as a heat map; with --config given twice or
    /// more, the configurations side by side (`--format jsonl`: the figures only).
    Report(report::ReportArgs),
    /// Schedule every pending pod of a scenario and report pods per second.
    ///
    /// Times the scheduling loop alone, then reports the total including parsing and
    /// the peak memory. `--mode exact` makes the same decisions as `simulate`.
    Bench {
        /// The scenario file.
        file: String,
        /// `upstream` searches and picks as kube-scheduler does; `exact` takes the first
        /// best in node order over every node, evaluating again only the nodes that
        /// changed when the pod's plugins allow it; `full-pass` decides as exact,
        /// evaluating every node for every pod.
        #[arg(long, value_enum, default_value_t = bench::Mode::Upstream)]
        mode: bench::Mode,
        /// The seed of the random pick among equal best nodes (upstream mode).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        versions: versions::VersionArgs,
        #[command(flatten)]
        cache: memory::CacheArgs,
    },
    /// Run as a scheduler of a real cluster: watch the API server, schedule and bind
    /// the pending pods whose spec.schedulerName is one of the configuration's
    /// profiles (kube-scheduler's flags where they overlap).
    #[cfg(feature = "cluster")]
    Run(kubesched_kube::cli::RunArgs),
    /// Record a live cluster as a trace that `kubesched replay` reads: its objects at
    /// time 0, then every change with its time, until Ctrl-C or --duration (list and
    /// watch requests only; docs/replay.md).
    #[cfg(feature = "cluster")]
    Record(record::RecordArgs),
}

#[macro_use]
mod say;

mod bench;
mod capacity;
mod memory;
#[cfg(feature = "cluster")]
mod record;
mod replay;
mod report;
mod rollout;
mod simulate;
mod versions;
mod whatif;

pub(crate) use simulate::Format;

/// The `kubesched` command with the in-tree plugins and any added with
/// [`Command::with_plugin`] or [`Command::with_registry`]: every subcommand sees them,
/// and a configuration enables them by name as it does the in-tree ones.
#[derive(Clone)]
pub struct Command {
    name: Option<String>,
    about: Option<String>,
    version: Option<String>,
    plugins: Registry,
    error: Option<String>,
}

impl Default for Command {
    fn default() -> Command {
        Command::new()
    }
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Command")
            .field("name", &self.name)
            .field("plugins", &self.plugins.names().collect::<Vec<_>>())
            .finish()
    }
}

impl Command {
    /// The command with the in-tree plugins only: the `kubesched` binary.
    pub fn new() -> Command {
        Command {
            name: None,
            about: None,
            version: None,
            plugins: Registry::new(),
            error: None,
        }
    }

    /// The name shown in `--help` and usage lines (default `kubesched`).
    pub fn name(mut self, name: impl Into<String>) -> Command {
        self.name = Some(name.into());
        self
    }

    /// The line `--help` starts with (default: kubesched's description).
    pub fn about(mut self, about: impl Into<String>) -> Command {
        self.about = Some(about.into());
        self
    }

    /// What `--version` prints after the name (default: kubesched-cli's version), such
    /// as your crate's `env!("CARGO_PKG_VERSION")`.
    pub fn version(mut self, version: impl Into<String>) -> Command {
        self.version = Some(version.into());
        self
    }

    /// Adds an out-of-tree plugin under `name` (as a configuration spells it), built by
    /// `factory` from its `pluginConfig` args. A name already taken (by an in-tree
    /// plugin or an earlier call) makes [`Command::run`] fail with one line saying so.
    pub fn with_plugin<F>(mut self, name: impl Into<String>, factory: F) -> Command
    where
        F: Fn(Option<&serde_json::Value>, &Handle) -> Result<Arc<dyn Plugin>, PluginError>
            + Send
            + Sync
            + 'static,
    {
        let name = name.into();
        if self.plugins.register(name.clone(), factory).is_err() {
            self.error.get_or_insert(format!(
                "with_plugin({name:?}): a plugin of that name was added before"
            ));
        }
        self
    }

    /// Adds every plugin of `registry` (out-of-tree plugins registered beforehand).
    pub fn with_registry(mut self, registry: Registry) -> Command {
        if let Err(e) = self.plugins.merge(registry) {
            self.error
                .get_or_insert(format!("with_registry: plugin {:?} was added before", e.0));
        }
        self
    }

    /// Parses the process's arguments and runs the subcommand they name. The exit code
    /// is the subcommand's: 0 on success, 2 on bad input (one line on standard error),
    /// and the others each subcommand documents.
    pub fn run(self) -> ExitCode {
        self.run_from(std::env::args_os())
    }

    /// As [`Command::run`], with `args` in place of the process's (the first is the
    /// program name).
    pub fn run_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut command = Cli::command();
        say::set_program(self.name.as_deref().unwrap_or(say::DEFAULT_PROGRAM));
        if let Some(name) = &self.name {
            command = command.name(name.clone()).bin_name(name.clone());
        }
        if let Some(about) = &self.about {
            command = command.about(about.clone());
        }
        if let Some(version) = &self.version {
            command = command.version(version.clone());
        }
        let cli = match command
            .try_get_matches_from(args)
            .and_then(|m| Cli::from_arg_matches(&m))
        {
            Ok(cli) => cli,
            // --help and --version print and exit 0; a usage error exits 2.
            Err(e) => e.exit(),
        };
        let mut this = self;
        if cli.plugins.contains(&PluginSet::Sigs) {
            this = this.with_registry(kubesched_plugins_sigs::registry());
        }
        let registry = match this.registry() {
            Ok(registry) => registry,
            Err(message) => return fail(&message),
        };
        dispatch(cli.command, this.plugins, &registry)
    }

    /// The in-tree plugins and the added ones.
    fn registry(&self) -> Result<Registry, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let mut registry = kubesched_plugins::in_tree_registry();
        registry.merge(self.plugins.clone()).map_err(|e| {
            format!(
                "with_plugin({:?}): an in-tree plugin has that name; give yours another",
                e.0
            )
        })?;
        Ok(registry)
    }
}

/// Prints `message` as the command's one error line; exit status 2.
fn fail(message: &str) -> ExitCode {
    say_error!("{message}");
    ExitCode::from(2)
}

/// Runs one subcommand. `plugins` are the out-of-tree plugins alone (the runtime adds
/// them to its in-tree ones), `registry` every plugin.
#[cfg_attr(not(feature = "cluster"), allow(unused_variables))]
fn dispatch(command: Commands, plugins: Registry, registry: &Registry) -> ExitCode {
    match command {
        #[cfg(feature = "cluster")]
        Commands::Run(args) => {
            kubesched_kube::cli::run_with_plugins(&say::program(), args, plugins)
        }
        Commands::Capacity(args) => capacity::run(&args, registry),
        Commands::Rollout(args) => rollout::run(&args, registry),
        Commands::Replay(args) => replay::run(&args, registry),
        #[cfg(feature = "cluster")]
        Commands::Record(args) => record::run(&args),
        Commands::Report(args) => report::run(&args, registry),
        Commands::Bench {
            file,
            mode,
            seed,
            versions,
            cache,
        } => match bench::run(&file, mode, seed, &versions, &cache, registry) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => fail(&message),
        },
        Commands::Simulate {
            files,
            format,
            detail,
            explain,
            preemption,
            timing,
            compare_versions,
            whatif,
            versions,
            cache,
        } => match simulate::run(
            &simulate::Request {
                files: &files,
                format,
                detail,
                explain: explain.as_deref(),
                preemption,
                timing,
                compare_versions,
                whatif: &whatif,
                versions: &versions,
                cache: &cache,
            },
            registry,
        ) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => fail(&message),
        },
    }
}

/// Reads `files` (`-` is standard input) as sources.
fn read_sources(files: &[String]) -> Result<Vec<Source>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Mine;
    impl Plugin for Mine {
        fn name(&self) -> &str {
            "Mine"
        }
    }

    fn mine(_: Option<&serde_json::Value>, _: &Handle) -> Result<Arc<dyn Plugin>, PluginError> {
        Ok(Arc::new(Mine))
    }

    #[test]
    fn added_plugins_join_the_in_tree_ones() {
        let registry = Command::new().with_plugin("Mine", mine).registry().unwrap();
        assert!(registry.contains("Mine"));
        assert!(registry.contains("NodeResourcesFit"));
    }

    #[test]
    fn a_taken_name_is_one_line_naming_it() {
        let in_tree = Command::new().with_plugin("NodeResourcesFit", mine);
        assert_eq!(
            in_tree.registry().unwrap_err(),
            "with_plugin(\"NodeResourcesFit\"): an in-tree plugin has that name; give yours another"
        );
        let twice = Command::new()
            .with_plugin("Mine", mine)
            .with_plugin("Mine", mine);
        assert_eq!(
            twice.registry().unwrap_err(),
            "with_plugin(\"Mine\"): a plugin of that name was added before"
        );
        let mut registry = Registry::new();
        registry.register("Mine", mine).unwrap();
        let merged = Command::new()
            .with_plugin("Mine", mine)
            .with_registry(registry);
        assert_eq!(
            merged.registry().unwrap_err(),
            "with_registry: plugin \"Mine\" was added before"
        );
    }
}
