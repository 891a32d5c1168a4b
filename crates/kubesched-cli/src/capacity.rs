//! `kubesched capacity POD_FILE [SCENARIO...]` (or `--from-cluster`): how many more
//! copies of a pod fit.

use std::process::ExitCode;

use clap::Args;
use kubesched_framework::Registry;
use kubesched_sim::SimulationOptions;
use kubesched_sim::capacity::{CopyOptions, capacity};
use kubesched_sim::whatif::template_pod;

use crate::whatif::{WhatIfArgs, load_scenario, read_files};

/// `kubesched capacity`'s arguments.
#[derive(Args, Debug)]
pub struct CapacityArgs {
    /// The pod to copy: a Pod, or a Deployment, ReplicaSet, Job or StatefulSet whose
    /// pod template is used.
    pub pod_file: String,
    /// Scenario files (a cluster dump); `-` reads standard input. Not needed with
    /// --from-cluster, which reads the cluster itself (files then come after it).
    #[arg(required_unless_present = "from_cluster")]
    pub files: Vec<String>,
    /// Stop after this many copies (cluster-capacity's --max-limit). 0, the default,
    /// counts every copy that fits when the nodes can be filled one by one, and stops at
    /// 100000 copies when they must be scheduled one at a time (so that no input runs
    /// for long); give a larger N to go further.
    #[arg(long, default_value_t = 0)]
    pub max_limit: usize,
    /// `table` for people, `jsonl` for scripts (one JSON object).
    #[arg(long, value_enum, default_value_t = crate::Format::Table)]
    pub format: crate::Format,
    /// Also write the answer as a self-contained HTML page of charts (copies per zone
    /// and per node, why the next copy does not fit).
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
    #[command(flatten)]
    pub whatif: WhatIfArgs,
    #[command(flatten)]
    pub versions: crate::versions::VersionArgs,
    #[command(flatten)]
    pub cache: crate::memory::CacheArgs,
}

/// Where `--max-limit 0` stops copies scheduled one at a time.
pub const DEFAULT_MAX_LIMIT: usize = 100_000;

/// Runs the command: exit 0 with the answer, 2 on bad input.
pub fn run(args: &CapacityArgs, registry: &Registry) -> ExitCode {
    match answer(args, registry) {
        Ok(text) => {
            crate::print_out(&text);
            ExitCode::SUCCESS
        }
        Err(message) => {
            say_error!("{message}");
            ExitCode::from(2)
        }
    }
}

fn answer(args: &CapacityArgs, registry: &Registry) -> Result<String, String> {
    let pod_source = read_files(std::slice::from_ref(&args.pod_file))?.remove(0);
    let (pod, warnings) = template_pod(&pod_source).map_err(|e| e.to_string())?;
    for w in &warnings {
        say_warning!("{w}");
    }
    let (scenario, _, server) = load_scenario(&args.files, &args.whatif)?;
    let (features, version_note) = args.versions.features(server.as_ref())?;
    let copies = match args.max_limit {
        0 => CopyOptions {
            one_at_a_time_limit: Some(DEFAULT_MAX_LIMIT),
            ..CopyOptions::default()
        },
        n => CopyOptions {
            limit: Some(n),
            ..CopyOptions::default()
        },
    };
    let answer = capacity(
        &scenario,
        &pod,
        &args.cache.apply(SimulationOptions {
            features,
            ..SimulationOptions::default()
        }),
        registry,
        copies,
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
        let page = kubesched_report::capacity::render(&title, &answer, &scenario.nodes);
        std::fs::write(path, page).map_err(|e| format!("--html {path}: cannot write: {e}"))?;
        say!("wrote {path}");
    }
    Ok(match args.format {
        crate::Format::Jsonl => format!("{}\n", answer.json()),
        crate::Format::Table => answer.text(),
    })
}
