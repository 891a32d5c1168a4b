//! `kubesched bench`: schedules every pending pod of a scenario and reports pods per
//! second for the scheduling loop alone, the total with parsing, and memory.

use std::time::Instant;

use kubesched_framework::{HostSelection, NodeSearch, Registry};
use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{Decision, SimulationOptions, prepare};

/// How the benchmark searches nodes and picks among the best.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// As kube-scheduler: percentageOfNodesToScore (or its adaptive formula),
    /// round-robin start node, random choice among the best.
    Upstream,
    /// The rules of conformance/FORMAT.md: every node filtered and scored, first best
    /// in node order; the same decisions as `kubesched simulate`. Verdicts and scores
    /// are kept per pod signature, so that only the nodes that changed are evaluated
    /// again (much faster for runs of identical pods, as ReplicaSets make them; see
    /// docs/architecture.md). `incremental` is another name for it.
    #[value(alias = "incremental")]
    Exact,
    /// The decisions of `exact`, with every node evaluated for every pod: the
    /// reference that exact's kept verdicts are measured against.
    FullPass,
}

/// Resident and peak memory of this process in bytes, from /proc (Linux).
fn memory() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Runs the benchmark and prints its report.
pub fn run(
    file: &str,
    mode: Mode,
    seed: u64,
    versions: &crate::versions::VersionArgs,
    cache: &crate::memory::CacheArgs,
    registry: &Registry,
) -> Result<(), String> {
    if mode != Mode::Exact && cache.cache_memory.is_some() {
        return Err(
            "--cache-memory: only --mode exact keeps verdicts and scores; the other modes evaluate every node they search".to_string(),
        );
    }
    let (features, version_note) = versions.features(None)?;
    say_note!("{version_note}");
    let start = Instant::now();
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: cannot read: {e}"))?;
    let scenario = scenario::load(&[Source {
        name: file.to_string(),
        text,
    }])
    .map_err(|e| e.to_string())?;
    let after_parse = memory();
    let options = match mode {
        Mode::Upstream => SimulationOptions {
            node_search: NodeSearch::Adaptive,
            host_selection: HostSelection::Random { seed },
            features,
            ..Default::default()
        },
        Mode::Exact => cache.apply(SimulationOptions {
            features,
            ..Default::default()
        }),
        Mode::FullPass => SimulationOptions {
            features,
            incremental: false,
            ..Default::default()
        },
    };
    let mut prepared = prepare(&scenario, &options, registry).map_err(|e| e.to_string())?;
    let after_prepare = memory();
    let nodes = prepared.scheduler.snapshot().num_nodes();
    let loop_start = Instant::now();
    let decisions = prepared.run_decisions();
    let elapsed = loop_start.elapsed().as_secs_f64();
    let scheduled = decisions
        .iter()
        .filter(|d| matches!(d, Decision::Scheduled(_)))
        .count();
    let unschedulable = decisions
        .iter()
        .filter(|d| matches!(d, Decision::Unschedulable))
        .count();
    let attempted = scheduled + unschedulable;
    let rate = if elapsed > 0.0 {
        attempted as f64 / elapsed
    } else {
        f64::INFINITY
    };
    crate::print_out(&format!(
        "scheduled {scheduled} pods ({unschedulable} unschedulable) over {nodes} nodes in {elapsed:.3} seconds = {rate:.0} pods/s\n"
    ));
    if let Some(stats) = prepared.scheduler.incremental_stats() {
        let evaluated = stats.nodes_filtered + stats.nodes_reused;
        let share = if evaluated > 0 {
            100.0 * stats.nodes_reused as f64 / evaluated as f64
        } else {
            0.0
        };
        crate::print_out(&format!(
            "incremental: {} of {attempted} cycles used kept verdicts ({} chose from kept totals); {share:.1}% of their node verdicts were kept, {} nodes filtered again\n",
            stats.cycles, stats.ranked, stats.nodes_filtered
        ));
    }
    let total = start.elapsed().as_secs_f64();
    match (after_parse, after_prepare, memory()) {
        (Some((parsed, _)), Some((prepared_rss, _)), Some((_, peak))) => {
            let per_node = prepared_rss.saturating_sub(parsed) as f64 / nodes.max(1) as f64;
            crate::print_out(&format!(
                "total {total:.3} seconds including parsing; peak memory {:.1} MiB; {per_node:.0} bytes per node beyond the parsed objects\n",
                mib(peak)
            ));
        }
        _ => crate::print_out(&format!(
            "total {total:.3} seconds including parsing; memory not available on this system\n"
        )),
    }
    Ok(())
}
