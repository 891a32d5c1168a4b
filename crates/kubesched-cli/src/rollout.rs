//! `kubesched rollout DEPLOYMENT_FILE [SCENARIO...]` (or `--from-cluster`): will a
//! rollout find room? `--html FILE` also writes the steps as a page of charts
//! (kubesched-report).

use std::process::ExitCode;

use clap::Args;
use kubesched_framework::Registry;
use kubesched_sim::SimulationOptions;
use kubesched_sim::rollout::{Ending, read_deployment, rollout};

use crate::whatif::{WhatIfArgs, load_scenario, read_files};

/// `kubesched rollout`'s arguments.
#[derive(Args, Debug)]
pub struct RolloutArgs {
    /// The Deployment with its new template (and its strategy).
    pub deployment_file: String,
    /// Scenario files (a cluster dump with the Deployment's current pods); `-` reads
    /// standard input. Not needed with --from-cluster, which reads the cluster itself
    /// (files then come after it).
    #[arg(required_unless_present = "from_cluster")]
    pub files: Vec<String>,
    /// `table` for people, `jsonl` for scripts (one JSON object).
    #[arg(long, value_enum, default_value_t = crate::Format::Table)]
    pub format: crate::Format,
    /// Also write the rollout as a self-contained HTML page of charts (the
    /// Deployment's pods and the nodes they hold per step, the cluster's utilisation,
    /// the pods per node before and after).
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
    #[command(flatten)]
    pub whatif: WhatIfArgs,
    #[command(flatten)]
    pub versions: crate::versions::VersionArgs,
    #[command(flatten)]
    pub cache: crate::memory::CacheArgs,
}

/// Runs the command: exit 0 when the rollout completes, 1 when it stalls, 2 on bad input.
pub fn run(args: &RolloutArgs, registry: &Registry) -> ExitCode {
    match answer(args, registry) {
        Ok((text, complete)) => {
            crate::print_out(&text);
            if complete {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(message) => {
            say_error!("{message}");
            ExitCode::from(2)
        }
    }
}

fn answer(args: &RolloutArgs, registry: &Registry) -> Result<(String, bool), String> {
    let source = read_files(std::slice::from_ref(&args.deployment_file))?.remove(0);
    let deployment = read_deployment(&source).map_err(|e| e.to_string())?;
    let (scenario, _, server) = load_scenario(&args.files, &args.whatif)?;
    let (features, version_note) = args.versions.features(server.as_ref())?;
    let answer = rollout(
        &scenario,
        &deployment,
        &args.cache.apply(SimulationOptions {
            features,
            ..SimulationOptions::default()
        }),
        registry,
        args.whatif.scenario.max_pods,
    )
    .map_err(|e| e.to_string())?;
    for w in &answer.warnings {
        say_warning!("{w}");
    }
    say_note!("{version_note}");
    if let Some(path) = &args.html {
        let title = if args.files.is_empty() {
            "the cluster".to_string()
        } else {
            args.files.join(", ")
        };
        let page = kubesched_report::rollout::render(&title, &answer);
        std::fs::write(path, page).map_err(|e| format!("--html {path}: cannot write: {e}"))?;
        say!("wrote {path}");
    }
    let complete = answer.ending == Ending::Complete;
    Ok(match args.format {
        crate::Format::Jsonl => (format!("{}\n", answer.json()), complete),
        crate::Format::Table => (answer.text(), complete),
    })
}
