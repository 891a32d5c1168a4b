//! `gpu-sharing`: the whole `kubesched` command with this crate's plugins, and
//! `gpu-sharing experiment`, the FGD paper's experiment over the openb trace.

use std::process::ExitCode;
use std::time::Instant;

use gpu_sharing::experiment::{Policy, Trace, median, run_all};

const USAGE: &str = "usage: gpu-sharing experiment [--nodes NODES.csv] [--pods PODS.csv] \
[--policy NAME|all] [--seed N | --seeds FIRST..LAST] [--tune RATIO] [--summary] [--html PAGE]

Schedules the openb trace's pods (shuffled and resampled with each seed up to RATIO times
the cluster's GPU capacity, default 1.3) one by one under each policy (Random,
DotProduct, GpuClustering, GpuPacking, BestFit, FGD; default all) and seed (default
42..51), in parallel, and prints one JSON line per run and integer arrived-GPU percent:
{\"policy\":..,\"seed\":..,\"arrived\":P,\"allocated\":A,\"fragmented\":F}.
--summary adds, on stderr, each policy's median unallocated GPU percent at arrived = 100;
--html writes PAGE, the medians over the seeds as charts beside the paper's figures.
The CSVs default to the crate's data/ folder (or $GPU_SHARING_DATA).";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("experiment") {
        return match experiment(&args[2..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gpu-sharing experiment: {e}");
                ExitCode::from(2)
            }
        };
    }
    kubesched::cli::Command::new()
        .name("gpu-sharing")
        .about("kube-scheduler's decisions with GPU sharing and the FGD paper's policies")
        .version(env!("CARGO_PKG_VERSION"))
        .with_registry(gpu_sharing::registry())
        .run()
}

/// The folder the CSVs are read from by default.
fn data_dir() -> std::path::PathBuf {
    std::env::var_os("GPU_SHARING_DATA")
        .map(Into::into)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data"))
}

fn experiment(args: &[String]) -> Result<(), String> {
    let dir = data_dir();
    let mut nodes = dir.join("openb_node_list_gpu_node.csv");
    let mut pods = dir.join("openb_pod_list_default.csv");
    let mut policies = Policy::ALL.to_vec();
    let mut seeds: Vec<u64> = (42..=51).collect();
    let mut tune = 1.3;
    let mut summary = false;
    let mut html: Option<std::path::PathBuf> = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--nodes" => nodes = value()?.into(),
            "--pods" => pods = value()?.into(),
            "--policy" => {
                let v = value()?;
                policies = if v == "all" {
                    Policy::ALL.to_vec()
                } else {
                    vec![
                        Policy::parse(&v)
                            .ok_or_else(|| format!("--policy {v}: unknown\n{USAGE}"))?,
                    ]
                };
            }
            "--seed" => {
                let v = value()?;
                seeds = vec![v.parse().map_err(|_| format!("--seed {v}: not a number"))?];
            }
            "--seeds" => {
                let v = value()?;
                let (a, b) = v
                    .split_once("..")
                    .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
                    .filter(|(a, b)| a <= b)
                    .ok_or_else(|| format!("--seeds {v}: not FIRST..LAST"))?;
                seeds = (a..=b).collect();
            }
            "--tune" => {
                let v = value()?;
                tune = v.parse().map_err(|_| format!("--tune {v}: not a number"))?;
            }
            "--summary" => summary = true,
            "--html" => html = Some(value()?.into()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("{other}: unknown flag\n{USAGE}")),
        }
    }
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let started = Instant::now();
    let trace = Trace::load(
        &read(&nodes)?,
        &nodes.display().to_string(),
        &read(&pods)?,
        &pods.display().to_string(),
    )
    .map_err(|e| e.to_string())?;
    let loaded = started.elapsed();
    let runs = run_all(&trace, &policies, &seeds, tune).map_err(|e| e.to_string())?;
    let ran = started.elapsed() - loaded;
    let mut out = std::io::stdout().lock();
    for r in &runs {
        for line in r.json_lines() {
            use std::io::Write as _;
            writeln!(out, "{line}").map_err(|e| e.to_string())?;
        }
    }
    if let Some(path) = &html {
        std::fs::write(path, gpu_sharing::html::page(&runs))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if summary {
        eprintln!(
            "{} nodes, {} GPUs, {} pods; loaded in {:.2} s, {} runs in {:.2} s",
            trace.nodes(),
            trace.gpus,
            trace.pods(),
            loaded.as_secs_f64(),
            runs.len(),
            ran.as_secs_f64()
        );
        for p in &policies {
            let mut unallocated: Vec<f64> = runs
                .iter()
                .filter(|r| r.policy == *p)
                .filter_map(|r| r.at(100).map(|pt| 100.0 - pt.allocated))
                .collect();
            let each: Vec<String> = unallocated.iter().map(|u| format!("{u:.2}")).collect();
            if let Some(m) = median(&mut unallocated) {
                eprintln!(
                    "{:<14} median unallocated at 100%: {m:.2}  ({})",
                    p.name(),
                    each.join(" ")
                );
            }
        }
    }
    Ok(())
}
