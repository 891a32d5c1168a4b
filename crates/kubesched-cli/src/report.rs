//! `kubesched report [SCENARIO...] -o report.html`: one self-contained HTML page of the
//! simulation (kubesched-report), and with `--config` given twice or more the
//! configurations side by side, or with `--compare-versions OLD,NEW` the same cluster,
//! pods and configuration under two kube-scheduler versions; `--format jsonl` prints the
//! same figures for scripts.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use kubesched_framework::Registry;
use kubesched_report::{Options, Variant};
use kubesched_sim::SimulationOptions;
use kubesched_sim::whatif::{replace_config, template_pod};

use crate::whatif::{ScenarioArgs, WhatIfArgs, load_scenario, read_files};

/// What `report` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained HTML page.
    Html,
    /// The cluster figures of each configuration and the pods they place differently,
    /// as JSON Lines.
    Jsonl,
}

/// `kubesched report`'s arguments.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Scenario files, read as one scenario in order; `-` reads standard input. With no
    /// FILE and no --from-cluster, the built-in demo.
    pub files: Vec<String>,
    /// Where to write the page (or the JSON Lines); `-` is standard output. Required for
    /// the HTML page.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<String>,
    /// `html`: the page; `jsonl`: its figures for scripts.
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
    /// A KubeSchedulerConfiguration to run the scenario with (it replaces the
    /// scenario's own). Give it two or more times to compare the configurations on
    /// the same cluster and pods.
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<String>,
    /// The pod whose copies measure fragmentation (a Pod, or a workload's template);
    /// default: the first pending pod in queue order (the highest priority first).
    #[arg(long, value_name = "FILE")]
    pub reference_pod: Option<String>,
    /// Keep this pod's per-node detail (heat map) whatever the budget. Repeatable.
    #[arg(long, value_name = "NAMESPACE/POD")]
    pub detail_pod: Vec<String>,
    /// How much per-node detail the page keeps, in node rows x 8: pending pods first,
    /// then scheduled pods up to half of it. Each row is about 5 bytes of page.
    #[arg(long, value_name = "CELLS", default_value_t = kubesched_report::build::DEFAULT_DETAIL_BUDGET)]
    pub detail_budget: usize,
    /// Run PostFilter plugins (preemption) when no node fits.
    #[arg(long)]
    pub preemption: bool,
    /// Run the scenario under two kube-scheduler versions and compare them side by side
    /// (as `simulate --compare-versions`): `1.35,1.36` is "what changes if I upgrade".
    /// Takes at most one --config (used under both) and no --kubernetes-version.
    #[arg(long, value_name = "OLD,NEW", value_parser = crate::versions::parse_pair)]
    pub compare_versions: Option<(
        kubesched_framework::KubernetesVersion,
        kubesched_framework::KubernetesVersion,
    )>,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub versions: crate::versions::VersionArgs,
    #[command(flatten)]
    pub cache: crate::memory::CacheArgs,
}

/// Runs the command: exit 0 with the report written, 2 on bad input.
pub fn run(args: &ReportArgs, registry: &Registry) -> ExitCode {
    match write(args, registry) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            say_error!("{message}");
            ExitCode::from(2)
        }
    }
}

fn write(args: &ReportArgs, registry: &Registry) -> Result<(), String> {
    if args.format == ReportFormat::Html && args.output.is_none() {
        return Err(
            "report: give -o FILE for the HTML page (-o - writes it to standard output), or --format jsonl for the figures"
                .into(),
        );
    }
    let whatif = WhatIfArgs {
        config: None,
        scheduler: Vec::new(),
        show_scenario: false,
        scenario: args.scenario.clone(),
    };
    if let Some(pair) = args.compare_versions {
        crate::versions::check_compare_versions(pair, args.configs.len(), &args.versions)?;
    }
    let (mut scenario, _, server) = load_scenario(&args.files, &whatif)?;
    let (features, mut version_note) = args.versions.features(server.as_ref())?;
    let mut variants = Vec::new();
    if let Some((old, new)) = args.compare_versions {
        if let Some(file) = args.configs.first() {
            let source = read_files(std::slice::from_ref(file))?.remove(0);
            replace_config(&mut scenario, &source).map_err(|e| format!("--config {e}"))?;
        }
        let (behaviours, note) = args.versions.compared((old, new))?;
        for (name, features) in behaviours {
            variants.push(Variant {
                name,
                scenario: scenario.clone(),
                features: Some(features),
            });
        }
        version_note = note;
    } else if args.configs.is_empty() {
        let name = match &scenario.config {
            Some(_) => "the scenario's configuration".to_string(),
            None => "default profile".to_string(),
        };
        variants.push(Variant {
            name,
            scenario,
            features: None,
        });
    } else {
        // Each configuration is named by its file's stem (its path when two stems
        // are the same); the full source is on the page too.
        let stem = |f: &String| {
            std::path::Path::new(f)
                .file_stem()
                .map_or_else(|| f.clone(), |s| s.to_string_lossy().into_owned())
        };
        let stems: Vec<String> = args.configs.iter().map(stem).collect();
        for (file, short) in args.configs.iter().zip(&stems) {
            let source = read_files(std::slice::from_ref(file))?.remove(0);
            let mut with = scenario.clone();
            replace_config(&mut with, &source).map_err(|e| format!("--config {e}"))?;
            let unique = stems.iter().filter(|s| *s == short).count() == 1;
            variants.push(Variant {
                name: if unique { short.clone() } else { file.clone() },
                scenario: with,
                features: None,
            });
        }
    }
    let pending = crate::simulate::pending_pods(&variants[0].scenario);
    for pod in &args.detail_pod {
        if !pending.iter().any(|p| p == pod) {
            return Err(format!(
                "--detail-pod {pod:?}: no pending pod of that NAMESPACE/NAME in the scenario"
            ));
        }
    }
    let reference = match &args.reference_pod {
        Some(file) => {
            let source = read_files(std::slice::from_ref(file))?.remove(0);
            let (pod, warnings) =
                template_pod(&source).map_err(|e| format!("--reference-pod {e}"))?;
            for w in warnings {
                say_warning!("{w}");
            }
            Some((pod, format!("--reference-pod {file}")))
        }
        None => None,
    };
    let options = Options {
        simulation: args.cache.apply(SimulationOptions {
            preemption: args.preemption,
            features,
            ..SimulationOptions::default()
        }),
        reference,
        detail_budget: args.detail_budget,
        detail_pods: args.detail_pod.clone(),
    };
    let report = kubesched_report::build_with(
        &title(&args.files, &args.scenario),
        &variants,
        &options,
        registry,
    )
    .map_err(|e| e.to_string())?;
    for run in &report.runs {
        for w in &run.warnings {
            say_warning!("{w}");
        }
    }
    say_note!("{version_note}");
    let text = match args.format {
        ReportFormat::Html => kubesched_report::html::render(&report),
        ReportFormat::Jsonl => kubesched_report::jsonl::figures_jsonl(&report),
    };
    match args.output.as_deref() {
        None | Some("-") => crate::print_out(&text),
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| format!("-o {path}: cannot write: {e}"))?;
            say!(
                "wrote {path} ({} KiB; {} of {} attempts with per-node detail)",
                text.len().div_ceil(1024),
                report.detailed.0,
                report.detailed.1
            );
        }
    }
    Ok(())
}

/// What was simulated, for the page's title.
fn title(files: &[String], scenario: &ScenarioArgs) -> String {
    let mut names: Vec<String> = Vec::new();
    if scenario.from_cluster {
        names.push("the cluster".into());
    }
    names.extend(files.iter().map(|f| match f.as_str() {
        "-" => "<stdin>".to_string(),
        f => f.to_string(),
    }));
    names.extend(scenario.add.iter().map(|f| format!("--add {f}")));
    if names.is_empty() {
        names.push("the built-in demo (the \"multiple schedulers\" lesson)".into());
    }
    names.join(", ")
}
