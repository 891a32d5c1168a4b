//! `kubesched-difftest`: generates seeded scenarios, runs each through kubesched and
//! kube-scheduler's own code (the oracles of `../shared/oracle/`), and shrinks every
//! disagreement into a conformance case. Exit status 1 when anything disagrees.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use kubesched_difftest::compare::Pair;
use kubesched_difftest::generate::{generate, to_yaml};
use kubesched_difftest::run::{Modes, Plan, run};
use kubesched_difftest::traces::run_traces;

/// Differential testing of kubesched against kube-scheduler's own code.
#[derive(Parser, Debug)]
#[command(name = "kubesched-difftest")]
struct Args {
    /// The kubesched binary to test (e.g. target/release/kubesched).
    #[arg(long, default_value = "target/release/kubesched")]
    kubesched: PathBuf,
    /// A folder holding `oracle-1.35` and `oracle-1.36` (decompressed from
    /// ../shared/oracle/bin/*.xz).
    #[arg(long)]
    oracle_dir: Option<PathBuf>,
    /// The first seed; a new one from the clock when absent (it is printed).
    #[arg(long)]
    seed_base: Option<u64>,
    /// How many seeds (scenarios).
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// Run only this seed (same as --seed-base SEED --count 1).
    #[arg(long, conflicts_with_all = ["seed_base", "count"])]
    replay: Option<u64>,
    /// Print this seed's scenario as YAML and exit.
    #[arg(long)]
    print: Option<u64>,
    /// Kubernetes versions to compare, comma-separated.
    #[arg(long, default_value = "1.35,1.36", value_delimiter = ',')]
    versions: Vec<String>,
    /// Run every seed both with and without --preemption (default: odd seeds with it).
    #[arg(long)]
    both_modes: bool,
    /// Where shrunk cases go (in conformance/'s layout), and scratch files.
    #[arg(long, default_value = "target/difftest")]
    out: PathBuf,
    /// At most this many shrink trials per disagreement (0: write it unshrunk).
    #[arg(long, default_value_t = 400)]
    shrink_budget: usize,
    /// Parallel scenarios (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Generate traces instead of scenarios: each seed's trace is replayed with
    /// `kubesched replay --settle` and every settled pass compared with the oracle.
    #[arg(long)]
    traces: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(seed) = args.print {
        print!(
            "{}",
            to_yaml(&generate(seed), &format!("kubesched-difftest seed {seed}"))
        );
        return ExitCode::SUCCESS;
    }
    let Some(oracle_dir) = args.oracle_dir else {
        eprintln!(
            "kubesched-difftest: --oracle-dir is required (a folder with oracle-1.35 and oracle-1.36)"
        );
        return ExitCode::from(2);
    };
    let mut pairs = Vec::new();
    for version in &args.versions {
        let oracle = oracle_dir.join(format!("oracle-{version}"));
        if !oracle.is_file() {
            eprintln!("kubesched-difftest: {}: no such oracle", oracle.display());
            return ExitCode::from(2);
        }
        pairs.push(Pair {
            version: version.clone(),
            kubesched: args.kubesched.clone(),
            oracle,
        });
    }
    if !args.kubesched.is_file() {
        eprintln!(
            "kubesched-difftest: {}: no such kubesched binary",
            args.kubesched.display()
        );
        return ExitCode::from(2);
    }
    let (seed_base, count) = match args.replay {
        Some(seed) => (seed, 1),
        None => (
            args.seed_base.unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs() % 1_000_000_000 * 1000)
                    .unwrap_or(0)
            }),
            args.count,
        ),
    };
    if let Some(jobs) = args.jobs {
        // Only fails when a pool already exists, which it cannot here.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build_global();
    }
    if args.traces {
        let seeds: Vec<u64> = (0..count).map(|i| seed_base.wrapping_add(i)).collect();
        println!(
            "kubesched-difftest: trace seeds {seed_base}..{} ({count} traces), versions {}; replay one with --traces --replay SEED",
            seed_base.wrapping_add(count - 1),
            args.versions.join(",")
        );
        let start = Instant::now();
        let summary = match run_traces(&seeds, &pairs, &args.out) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("kubesched-difftest: {}: {e}", args.out.display());
                return ExitCode::from(2);
            }
        };
        println!(
            "kubesched-difftest: {} traces replayed, {} settled passes compared in {:.0?}: {} agreed, {} refused by both, {} disagreed",
            summary.traces,
            summary.passes,
            start.elapsed(),
            summary.agreed,
            summary.both_refused,
            summary.findings.len()
        );
        for f in &summary.findings {
            println!(
                "FAIL trace seed {} v{}{}: {}: {}",
                f.seed,
                f.version,
                if f.preemption { " --preemption" } else { "" },
                f.step.display(),
                f.detail
            );
        }
        return if summary.findings.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let plan = Plan {
        seed_base,
        count,
        pairs,
        modes: if args.both_modes {
            Modes::Both
        } else {
            Modes::Alternate
        },
        out: args.out,
        shrink_budget: args.shrink_budget,
    };
    println!(
        "kubesched-difftest: seeds {seed_base}..{} ({count} scenarios), versions {}; replay one with --replay SEED",
        seed_base.wrapping_add(count - 1),
        args.versions.join(",")
    );
    let start = Instant::now();
    let summary = match run(&plan) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kubesched-difftest: {}: {e}", plan.out.display());
            return ExitCode::from(2);
        }
    };
    println!(
        "kubesched-difftest: {} comparisons in {:.0?}: {} agreed, {} refused by both, {} disagreed, {} unstable oracle run(s)",
        summary.comparisons,
        start.elapsed(),
        summary.agreed,
        summary.both_refused,
        summary.findings.len(),
        summary.oracle_unstable
    );
    for f in &summary.findings {
        println!(
            "FAIL seed {} v{}{}: {} -> {}",
            f.seed,
            f.version,
            if f.preemption { " --preemption" } else { "" },
            f.file.display(),
            f.shrunk
        );
    }
    if summary.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
