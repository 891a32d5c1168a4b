//! `kubesched rollout DEPLOYMENT_FILE [SCENARIO...]` (or `--from-cluster`): will a
//! rollout find room? `--html FILE` also writes the steps as a page of charts
//! (kubesched-report).
//!
//! `--format jsonl` is written while the rollout runs: with `--detail none|rejected|all`
//! each new pod's attempt is a line as soon as it is decided, and each step is a line
//! when it ends (its pods counted per node and per FailedScheduling message), then one
//! last line with the result. Nothing holds every pod's per-node verdicts, so a
//! Deployment of 100,000 replicas needs the memory of its pods, not of pods x nodes.

use std::io::{BufWriter, ErrorKind, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use kubesched_framework::Registry;
use kubesched_sim::rollout::{Ending, Event, RolloutError, read_deployment, rollout_each};
use kubesched_sim::{Detail, SimulationOptions, output};

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
    /// `table` for people, `jsonl` for scripts (a line per step, then the result).
    #[arg(long, value_enum, default_value_t = crate::Format::Table)]
    pub format: crate::Format,
    /// With --format jsonl: what is printed per pod. `summary` (the default) prints no
    /// line per pod: each step's line counts its new pods per node and per
    /// FailedScheduling message. `none`, `rejected` and `all` also print every new
    /// pod's attempt as a line, as `simulate --detail` does (the outcome alone, with
    /// the rejected nodes' reasons, with the feasible nodes' scores too).
    #[arg(long, value_enum)]
    pub detail: Option<RolloutDetail>,
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

/// What `rollout --format jsonl` prints per pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RolloutDetail {
    /// No line per pod: each step's line counts them.
    Summary,
    /// A line per attempt with the pod's outcome only.
    None,
    /// A line per attempt with the rejected nodes' reasons.
    Rejected,
    /// A line per attempt with the rejected nodes' reasons and the feasible nodes'
    /// scores (the conformance format).
    All,
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
    if let Some(d) = args.detail
        && args.format != crate::Format::Jsonl
    {
        let given = d.to_possible_value().map(|v| v.get_name().to_string());
        return Err(format!(
            "--detail {}: only --format jsonl prints a line per pod; the table lists the pods of a step of at most {} and counts them beyond",
            given.unwrap_or_default(),
            kubesched_sim::rollout::LISTED_ATTEMPTS
        ));
    }
    let source = read_files(std::slice::from_ref(&args.deployment_file))?.remove(0);
    let deployment = read_deployment(&source).map_err(|e| e.to_string())?;
    let (scenario, _, server) = load_scenario(&args.files, &args.whatif)?;
    let (features, version_note) = args.versions.features(server.as_ref())?;
    let options = args.cache.apply(SimulationOptions {
        features,
        ..SimulationOptions::default()
    });
    let detail = match args.detail.unwrap_or(RolloutDetail::Summary) {
        RolloutDetail::Summary => None,
        RolloutDetail::None => Some(Detail::None),
        RolloutDetail::Rejected => Some(Detail::Rejected),
        RolloutDetail::All => Some(Detail::All),
    };
    let jsonl = args.format == crate::Format::Jsonl;
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let result = rollout_each(
        &scenario,
        &deployment,
        &options,
        registry,
        args.whatif.scenario.max_pods,
        |event| match event {
            _ if !jsonl => Ok(()),
            Event::Attempt { step, attempt } => match detail {
                Some(detail) => output::write_jsonl_step_attempt(&mut out, attempt, detail, step),
                None => Ok(()),
            },
            Event::Step(step) => {
                serde_json::to_writer(&mut out, &step.json())?;
                out.write_all(b"\n")
            }
        },
    );
    let answer = match result {
        Ok(answer) => answer,
        // A reader that stopped early (`| head`) is not an error.
        Err(RolloutError::Observer(e)) if e.kind() == ErrorKind::BrokenPipe => {
            return Ok((String::new(), false));
        }
        Err(RolloutError::Observer(e)) => {
            return Err(format!("cannot write standard output: {e}"));
        }
        Err(e) => return Err(e.to_string()),
    };
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
    if jsonl {
        let last = writeln!(out, "{}", answer.json()).and_then(|()| out.flush());
        return match last {
            Err(e) if e.kind() != ErrorKind::BrokenPipe => {
                Err(format!("cannot write standard output: {e}"))
            }
            _ => Ok((String::new(), complete)),
        };
    }
    drop(out);
    Ok((answer.text(), complete))
}
