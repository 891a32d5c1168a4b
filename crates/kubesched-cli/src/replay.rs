//! `kubesched replay TRACE [FILES...]`: a timed trace of events replayed over a cluster
//! in simulated time (kubesched-replay), every attempt printed as it happens, then the
//! summary. The trace is read twice: once to check every line, so that a bad one
//! stops the replay before anything is applied, then to replay it.

use std::io::{BufRead, BufReader, BufWriter, ErrorKind, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use kubesched_framework::{Features, KubernetesVersion, Registry};
use kubesched_replay::{
    Eviction, Mode, Record, ReplayError, ReplayOptions, Summary, TraceReader, check, replay,
};
use kubesched_sim::simulate::Detail;
use kubesched_sim::{PodOutcome, SimulationOptions, output};

use crate::simulate::{DetailArg, Format};
use crate::whatif::{ScenarioArgs, WhatIfArgs, load_scenario_or, read_files};

/// `kubesched replay`'s arguments.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace: JSON Lines of timed events (docs/replay.md); `-` reads standard input.
    /// With --import openb: the openb pod list CSV.
    pub trace: String,
    /// Scenario files: the cluster at time 0 (its pending pods arrive then) and the
    /// configuration. None: the cluster starts empty and the trace brings everything.
    /// With --import openb: the openb node list CSV, alone.
    pub files: Vec<String>,
    /// Read a public trace instead: `openb`, the Alibaba GPU cluster trace v2023
    /// (TRACE is its pod list CSV, the one FILE its node list CSV; docs/replay.md).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub import: Option<ImportFormat>,
    /// After each instant's events, try every pending pod in queue order until nothing
    /// more fits (each pass exactly `simulate` of the cluster then), instead of
    /// kube-scheduler's queue in simulated time.
    #[arg(long)]
    pub settle: bool,
    /// `table` for people; `jsonl`: one line per attempt (the conformance line with its
    /// `time`), per eviction, and the summary last.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// With --format jsonl: how much per-node detail each attempt's line has (`none`,
    /// the default here: the outcome; `rejected`; `all`: the conformance format).
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub detail: Option<DetailArg>,
    /// Run PostFilter plugins (preemption) when no node fits; victims leave at once.
    #[arg(long)]
    pub preemption: bool,
    /// How long the timed replay goes on after the last event or finish, in seconds,
    /// so that pods backing off get their retries.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    pub tail: f64,
    /// A trace whose last line was cut off (a recorder killed mid-write): replay the
    /// lines before it, with a warning, instead of refusing the trace.
    #[arg(long)]
    pub allow_truncated: bool,
    /// With --settle: write the cluster before each pass as DIR/NNNNN.yaml and that
    /// pass's attempts as DIR/NNNNN.jsonl (the conformance format), so that each pass
    /// can be checked with `kubesched simulate` or kube-scheduler's own code.
    #[arg(long, value_name = "DIR", requires = "settle")]
    pub dump_steps: Option<PathBuf>,
    /// Write the cluster as the replay leaves it to FILE, as scenario documents (every
    /// pod the replay bound with its spec.nodeName): `kubesched simulate` reads it.
    #[arg(long, value_name = "FILE")]
    pub final_state: Option<PathBuf>,
    /// Draw the replay on one self-contained HTML page: pods pending and allocation
    /// over time, the nodes at each --occupancy-at instant, the summary (and the
    /// replays side by side when comparing).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Keep every node's load at this instant (seconds) for the page's node charts.
    /// Repeatable; default with --html: the replay's end.
    #[arg(long, value_name = "SECONDS")]
    pub occupancy_at: Vec<f64>,
    /// The KubeSchedulerConfiguration, from its own file as kube-scheduler's --config
    /// takes it; it replaces one inside the scenario. Give it two or more times to
    /// replay the trace under each (in parallel) and compare the summaries.
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<String>,
    /// Another scheduler running beside the scenario's: a configuration file (or the
    /// ConfigMap holding it), whose profiles take the pods that name them. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub scheduler: Vec<String>,
    /// Print the scenario files before the answer, each after a `# --- NAME` line.
    #[arg(long)]
    pub show_scenario: bool,
    /// Replay the trace under two kube-scheduler versions (in parallel) and compare the
    /// summaries: `1.35,1.36`. Takes at most one --config and no --kubernetes-version.
    #[arg(long, value_name = "OLD,NEW", value_parser = crate::versions::parse_pair)]
    pub compare_versions: Option<(KubernetesVersion, KubernetesVersion)>,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub versions: crate::versions::VersionArgs,
    #[command(flatten)]
    pub cache: crate::memory::CacheArgs,
}

/// The public trace formats `--import` reads.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportFormat {
    /// alibaba/clusterdata's cluster-trace-gpu-v2023 (the openb node and pod lists).
    Openb,
}

/// Runs the command: exit 0 when the trace was replayed, 2 on bad input.
pub fn run(args: &ReplayArgs, registry: &Registry) -> ExitCode {
    match answer(args, registry) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            say_error!("{message}");
            ExitCode::from(2)
        }
    }
}

/// The trace's text source: a file opened again for each pass, or standard input read
/// once and kept.
enum TraceInput {
    File(String),
    Text(String),
}

impl TraceInput {
    fn open(&self) -> Result<Box<dyn BufRead + Send + '_>, String> {
        match self {
            TraceInput::File(path) => std::fs::File::open(path)
                .map(|f| Box::new(BufReader::with_capacity(1 << 16, f)) as Box<dyn BufRead + Send>)
                .map_err(|e| format!("{path}: cannot read: {e}")),
            TraceInput::Text(text) => Ok(Box::new(text.as_bytes())),
        }
    }
}

/// One replay of a comparison: its name, scenario (with its configuration) and
/// behaviour.
struct Variant {
    name: String,
    scenario: kubesched_sim::scenario::Scenario,
    features: Features,
}

fn answer(args: &ReplayArgs, registry: &Registry) -> Result<(), String> {
    if args.detail.is_some() && args.format != Format::Jsonl {
        return Err("--detail: only --format jsonl prints per-node detail".into());
    }
    if !(args.tail.is_finite() && args.tail >= 0.0) {
        return Err(format!(
            "--tail {}: expected seconds, a number >= 0",
            args.tail
        ));
    }
    if let Some(t) = args
        .occupancy_at
        .iter()
        .find(|t| !(t.is_finite() && **t >= 0.0))
    {
        return Err(format!(
            "--occupancy-at {t}: expected seconds, a number >= 0"
        ));
    }
    let (input, name) = trace_input(args)?;
    let (variants, note) = variants(args)?;
    let reader = || -> Result<_, String> {
        Ok(TraceReader::new(name.clone(), input.open()?).allow_truncated(args.allow_truncated))
    };
    // The trace is checked once: the variants differ only in configuration and version.
    let mut checked = reader()?;
    check(&variants[0].scenario, &mut checked).map_err(|e| e.to_string())?;
    if let Some(line) = checked.skipped_truncated {
        say_warning!("{name}: line {line}: truncated last line left out (--allow-truncated)");
    }
    say_note!("{note}");
    let mut occupancy_at = args.occupancy_at.clone();
    if args.html.is_some() && occupancy_at.is_empty() {
        occupancy_at.push(f64::INFINITY);
    }
    let options = |variant: &Variant, detail: Detail, states: bool| ReplayOptions {
        simulation: args.cache.apply(SimulationOptions {
            preemption: args.preemption,
            detail,
            features: variant.features.clone(),
            ..SimulationOptions::default()
        }),
        mode: if args.settle {
            Mode::Settle
        } else {
            Mode::Timed
        },
        tail: Duration::from_secs_f64(args.tail),
        states,
        final_state: args.final_state.is_some(),
        occupancy_at: occupancy_at.clone(),
    };
    if let [variant] = variants.as_slice() {
        let summary = replay_one(args, registry, variant, reader()?, &options)?;
        if let Some(summary) = summary {
            write_html(args, &name, &[(variant.name.as_str(), &summary)])?;
        }
        return Ok(());
    }
    // Compared: each variant replayed on its own thread, only the summaries printed.
    use rayon::prelude::*;
    let summaries = variants
        .par_iter()
        .map(|variant| {
            replay(
                &variant.scenario,
                reader()?,
                &options(variant, Detail::None, false),
                registry,
                |_| Ok::<(), std::convert::Infallible>(()),
            )
            .map_err(|e| format!("{}: {e}", variant.name))
        })
        .collect::<Result<Vec<Summary>, String>>()?;
    let runs: Vec<(&str, &Summary)> = variants
        .iter()
        .map(|v| v.name.as_str())
        .zip(&summaries)
        .collect();
    let text = match args.format {
        Format::Jsonl => runs
            .iter()
            .map(|(name, s)| {
                let mut line = s.json();
                line["variant"] = serde_json::Value::String(name.to_string());
                format!("{line}\n")
            })
            .collect(),
        Format::Table => side_by_side(&runs),
    };
    crate::print_out(&text);
    write_html(args, &name, &runs)
}

/// The trace's text source and its name for messages: the file, standard input, or
/// the trace `--import` made of the public trace's files.
fn trace_input(args: &ReplayArgs) -> Result<(TraceInput, String), String> {
    if let Some(ImportFormat::Openb) = args.import {
        let [nodes] = args.files.as_slice() else {
            return Err(format!(
                "--import openb: give the pod list CSV as TRACE and the node list CSV as the one FILE (got {} file(s))",
                args.files.len()
            ));
        };
        let read = |path: &str| {
            std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read: {e}"))
        };
        let text = kubesched_replay::import::openb(
            &read(nodes)?,
            nodes,
            &read(&args.trace)?,
            &args.trace,
            &kubesched_replay::import::OpenbOptions::default(),
        )
        .map_err(|e| e.to_string())?;
        Ok((TraceInput::Text(text), format!("{} (openb)", args.trace)))
    } else if args.trace == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
            .map_err(|e| format!("<stdin>: cannot read: {e}"))?;
        Ok((TraceInput::Text(text), "<stdin>".to_string()))
    } else {
        Ok((TraceInput::File(args.trace.clone()), args.trace.clone()))
    }
}

/// The replays to run: one, or one per `--config` (two or more), or one per version of
/// `--compare-versions`; and the note saying which behaviour each uses, for the caller
/// to print once the trace has proved good (so that an error stays the only line).
fn variants(args: &ReplayArgs) -> Result<(Vec<Variant>, String), String> {
    let several = args.configs.len() > 1 || args.compare_versions.is_some();
    if several && (args.dump_steps.is_some() || args.final_state.is_some()) {
        return Err(
            "--dump-steps and --final-state write one replay's files: compare without them, or replay one configuration at a time"
                .into(),
        );
    }
    if let Some(pair) = args.compare_versions {
        crate::versions::check_compare_versions(pair, args.configs.len(), &args.versions)?;
    }
    // With --import the one FILE was the node list, not a scenario.
    let files: &[String] = if args.import.is_some() {
        &[]
    } else {
        &args.files
    };
    let whatif = |config: Option<&String>| WhatIfArgs {
        config: config.cloned(),
        scheduler: args.scheduler.clone(),
        show_scenario: args.show_scenario,
        scenario: args.scenario.clone(),
    };
    if args.configs.len() <= 1 {
        let (scenario, _, server) = load_scenario_or(files, &whatif(args.configs.first()), false)?;
        let name = args.configs.first().map_or_else(
            || match &scenario.config {
                Some(_) => "the scenario's configuration".to_string(),
                None => "default profile".to_string(),
            },
            |f| stem(f),
        );
        let Some((old, new)) = args.compare_versions else {
            let (features, note) = args.versions.features(server.as_ref())?;
            let variant = Variant {
                name,
                scenario,
                features,
            };
            return Ok((vec![variant], note));
        };
        let (behaviours, note) = args.versions.compared((old, new))?;
        let variants = behaviours
            .into_iter()
            .map(|(name, features)| Variant {
                name,
                scenario: scenario.clone(),
                features,
            })
            .collect();
        return Ok((variants, note));
    }
    // Two or more configurations: the cluster is read once, without them, then each
    // configuration replaces its configuration (and the schedulers beside it join).
    let base_args = WhatIfArgs {
        scheduler: Vec::new(),
        ..whatif(None)
    };
    let (base, _, server) = load_scenario_or(files, &base_args, false)?;
    let beside = read_files(&args.scheduler)?;
    let (features, note) = args.versions.features(server.as_ref())?;
    let stems: Vec<String> = args.configs.iter().map(|f| stem(f)).collect();
    let mut variants = Vec::new();
    for (file, short) in args.configs.iter().zip(&stems) {
        let source = read_files(std::slice::from_ref(file))?.remove(0);
        let mut scenario = base.clone();
        kubesched_sim::whatif::replace_config(&mut scenario, &source)
            .map_err(|e| format!("--config {e}"))?;
        if !beside.is_empty() {
            kubesched_sim::whatif::add_schedulers(&mut scenario, &beside)
                .map_err(|e| format!("--scheduler {e}"))?;
        }
        let unique = stems.iter().filter(|s| *s == short).count() == 1;
        variants.push(Variant {
            name: if unique { short.clone() } else { file.clone() },
            scenario,
            features: features.clone(),
        });
    }
    let note = format!(
        "{note}; configurations compared: {}",
        args.configs.join(", ")
    );
    Ok((variants, note))
}

/// A configuration's name: its file's stem.
fn stem(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned())
}

/// One replay, its records streamed to standard output as they come, then its summary;
/// `None` when standard output was closed early.
fn replay_one(
    args: &ReplayArgs,
    registry: &Registry,
    variant: &Variant,
    reader: TraceReader<Box<dyn BufRead + Send + '_>>,
    options: &dyn Fn(&Variant, Detail, bool) -> ReplayOptions,
) -> Result<Option<Summary>, String> {
    let dumping = args.dump_steps.is_some();
    let detail = match (dumping, args.format) {
        (true, _) => Detail::All,
        (false, Format::Jsonl) => args.detail.map_or(Detail::None, Detail::from),
        (false, Format::Table) => Detail::None,
    };
    let printed_detail = args.detail.map_or(Detail::None, Detail::from);
    let options = options(variant, detail, dumping);
    if let Some(dir) = &args.dump_steps {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--dump-steps {}: cannot create: {e}", dir.display()))?;
    }
    let stdout = std::io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let mut steps = Steps::new(args.dump_steps.clone());
    let result = replay(&variant.scenario, reader, &options, registry, |record| {
        steps.record(&record)?;
        if let (Record::Final { documents, .. }, Some(path)) = (&record, &args.final_state) {
            std::fs::write(path, documents)?;
        }
        write_record(&mut out, &record, args.format, printed_detail)
    });
    let summary = match result {
        Ok(s) => s,
        Err(ReplayError::Sink(e)) if e.kind() == ErrorKind::BrokenPipe => return Ok(None),
        Err(ReplayError::Sink(e)) => return Err(format!("cannot write: {e}")),
        Err(e) => return Err(e.to_string()),
    };
    let tail = match args.format {
        Format::Jsonl => format!("{}\n", summary.json()),
        Format::Table => summary.text(),
    };
    let written = out.write_all(tail.as_bytes()).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => {
            Err(format!("cannot write standard output: {e}"))
        }
        _ => Ok(Some(summary)),
    }
}

/// The summaries side by side, a column per replay.
fn side_by_side(runs: &[(&str, &Summary)]) -> String {
    let runs: Vec<kubesched_report::replay::Run> = runs
        .iter()
        .map(|(name, summary)| kubesched_report::replay::Run { name, summary })
        .collect();
    let rows = kubesched_report::replay::summary_rows(&runs);
    let first = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let widths: Vec<usize> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            rows.iter()
                .map(|row| row.values[i].len())
                .chain([r.name.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |name: &str, values: &mut dyn Iterator<Item = &str>| {
        out.push_str(&format!("{name:<first$}"));
        for (v, w) in values.zip(&widths) {
            out.push_str(&format!("  {v:>w$}"));
        }
        out.push('\n');
    };
    line("", &mut runs.iter().map(|r| r.name));
    for row in &rows {
        line(&row.name, &mut row.values.iter().map(String::as_str));
    }
    out
}

/// `--html FILE`: the page of the replays.
fn write_html(args: &ReplayArgs, name: &str, runs: &[(&str, &Summary)]) -> Result<(), String> {
    let Some(path) = &args.html else {
        return Ok(());
    };
    let runs: Vec<kubesched_report::replay::Run> = runs
        .iter()
        .map(|(name, summary)| kubesched_report::replay::Run { name, summary })
        .collect();
    let page = kubesched_report::replay::render(name, &runs);
    std::fs::write(path, &page)
        .map_err(|e| format!("--html {}: cannot write: {e}", path.display()))?;
    say!(
        "wrote {} ({} KiB)",
        path.display(),
        page.len().div_ceil(1024)
    );
    Ok(())
}

/// `--dump-steps`: each settled pass's cluster and attempts, numbered in order.
struct Steps {
    dir: Option<PathBuf>,
    number: usize,
    attempts: Option<BufWriter<std::fs::File>>,
}

impl Steps {
    fn new(dir: Option<PathBuf>) -> Steps {
        Steps {
            dir,
            number: 0,
            attempts: None,
        }
    }

    fn record(&mut self, record: &Record) -> std::io::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        match record {
            Record::State { documents, .. } => {
                if let Some(mut f) = self.attempts.take() {
                    f.flush()?;
                }
                self.number += 1;
                std::fs::write(dir.join(format!("{:05}.yaml", self.number)), documents)?;
                let file = std::fs::File::create(dir.join(format!("{:05}.jsonl", self.number)))?;
                self.attempts = Some(BufWriter::new(file));
            }
            Record::Attempt { attempt, .. } => {
                if let Some(f) = self.attempts.as_mut() {
                    output::write_jsonl_attempt(f, attempt, Detail::All)?;
                }
            }
            Record::Evicted { .. } | Record::Final { .. } => {}
        }
        Ok(())
    }
}

fn write_record(
    out: &mut impl Write,
    record: &Record,
    format: Format,
    detail: Detail,
) -> std::io::Result<()> {
    match (record, format) {
        (Record::State { .. } | Record::Final { .. }, _) => Ok(()),
        (Record::Attempt { time, attempt }, Format::Jsonl) => {
            let mut line = Vec::new();
            output::write_jsonl_attempt(&mut line, attempt, detail)?;
            // `{"pod":...}` becomes `{"time":T,"pod":...}`.
            write!(out, "{{\"time\":{},", json_number(*time))?;
            out.write_all(line.get(1..).unwrap_or_default())
        }
        (Record::Attempt { time, attempt }, Format::Table) => {
            let what = match &attempt.outcome {
                PodOutcome::Scheduled(node) => format!("-> {node}"),
                PodOutcome::Unschedulable(m) => format!("cannot be scheduled: {m}"),
                PodOutcome::Nominated {
                    message,
                    node,
                    victims,
                    ..
                } => format!(
                    "cannot be scheduled: {message}; preempts {} on {node}",
                    victims.join(", ")
                ),
                PodOutcome::Ignored => {
                    format!("not ours: no profile named {:?}", attempt.scheduler)
                }
                PodOutcome::Gated(g) => format!("held by scheduling gates {}", g.join(", ")),
            };
            writeln!(
                out,
                "{:>10}  {:<24}  {what}",
                format!("{time:.3}"),
                attempt.pod
            )
        }
        (
            Record::Evicted {
                time,
                pod,
                node,
                reason,
            },
            format,
        ) => {
            let (why, by) = match reason {
                Eviction::Preempted(by) => ("preempted", Some(by)),
                Eviction::Drained => ("drained", None),
                Eviction::NodeDeleted => ("nodeDeleted", None),
            };
            match format {
                Format::Jsonl => {
                    let mut v = serde_json::json!({"evicted": pod, "node": node, "reason": why});
                    if let Some(by) = by {
                        v["by"] = serde_json::Value::String(by.clone());
                    }
                    // `{"evicted":...}` becomes `{"time":T,"evicted":...}`.
                    let text = v.to_string();
                    writeln!(out, "{{\"time\":{},{}", json_number(*time), &text[1..])
                }
                Format::Table => {
                    let by = by.map(|b| format!(" by {b}")).unwrap_or_default();
                    writeln!(
                        out,
                        "{:>10}  {pod:<24}  evicted from {node} ({why}{by})",
                        format!("{time:.3}")
                    )
                }
            }
        }
    }
}

/// Seconds as JSON writes them, without a trailing `.0` for whole seconds.
fn json_number(t: f64) -> String {
    if t.fract() == 0.0 && t.abs() < 1e15 {
        format!("{}", t as i64)
    } else {
        serde_json::Number::from_f64(t).map_or_else(|| "0".into(), |n| n.to_string())
    }
}
