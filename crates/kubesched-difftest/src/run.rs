//! The differential runner: each seed's scenario through kubesched and the oracle of
//! each version (with or without preemption), and for each disagreement a shrunk case
//! written in the layout of `conformance/`, with the oracle's expected lines.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use serde_json::Value;

use crate::compare::{Disagreement, Pair, Rerun, Verdict, verdict};
use crate::generate::{generate, to_yaml};
use crate::shrink::shrink;

/// Which preemption modes each seed runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modes {
    /// Odd seeds with `--preemption`, even seeds without.
    Alternate,
    /// Every seed both ways.
    Both,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The first seed.
    pub seed_base: u64,
    /// How many seeds.
    pub count: u64,
    /// One pair per Kubernetes version.
    pub pairs: Vec<Pair>,
    /// The preemption modes.
    pub modes: Modes,
    /// Where scratch files and shrunk cases go.
    pub out: PathBuf,
    /// At most this many shrink trials per disagreement (0: do not shrink).
    pub shrink_budget: usize,
}

/// One disagreement found, after shrinking.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The seed that replays it.
    pub seed: u64,
    /// The Kubernetes version.
    pub version: String,
    /// Whether `--preemption` was on.
    pub preemption: bool,
    /// The first difference on the original scenario.
    pub original: Disagreement,
    /// The first difference on the shrunk scenario.
    pub shrunk: String,
    /// The shrunk case (its `.expected.jsonl` beside it when the oracle reads it).
    pub file: PathBuf,
}

/// Totals of a run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Scenario runs compared (seeds x versions x modes).
    pub comparisons: usize,
    /// Of which both programs printed the same lines.
    pub agreed: usize,
    /// Of which both refused the file.
    pub both_refused: usize,
    /// Of which the oracle's lines disagreed with kubesched's, then agreed with them
    /// when it ran again (kubesched's unchanged): the oracle raced; not a finding.
    pub oracle_unstable: usize,
    /// The disagreements.
    pub findings: Vec<Finding>,
}

fn modes_for(modes: Modes, seed: u64) -> Vec<bool> {
    match modes {
        Modes::Alternate => vec![seed % 2 == 1],
        Modes::Both => vec![false, true],
    }
}

fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}

/// The kinds of the storage scenarios (`cases-volumes`).
pub const STORAGE_KINDS: &[&str] = &[
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
];

/// The kinds of the dynamic resource allocation scenarios (`cases-dra`).
pub const DRA_KINDS: &[&str] = &[
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
];

/// The conformance folder a case belongs in: as the conformance test runs them
/// (`cases-preemption` with preemption; storage and DRA cases in folders of their own).
fn case_folder(version: &str, preemption: bool, docs: &[Value]) -> PathBuf {
    let has = |kinds: &[&str]| docs.iter().any(|d| kinds.iter().any(|k| d["kind"] == *k));
    let folder = if preemption {
        "cases-preemption"
    } else if has(DRA_KINDS) {
        "cases-dra"
    } else if has(STORAGE_KINDS) {
        "cases-volumes"
    } else if has(&["KubeSchedulerConfiguration"]) {
        "cases"
    } else {
        "cases-default"
    };
    if version == "1.35" {
        PathBuf::from(folder)
    } else {
        Path::new(&format!("v{version}")).join(folder)
    }
}

/// Runs the plan, printing one line per disagreement as it is found.
pub fn run(plan: &Plan) -> std::io::Result<Summary> {
    let scratch = plan.out.join("scratch");
    std::fs::create_dir_all(&scratch)?;
    let comparisons = AtomicUsize::new(0);
    let agreed = AtomicUsize::new(0);
    let both_refused = AtomicUsize::new(0);
    let oracle_unstable = AtomicUsize::new(0);
    let seeds: Vec<u64> = (0..plan.count)
        .map(|i| plan.seed_base.wrapping_add(i))
        .collect();
    let findings: Vec<Finding> = seeds
        .par_iter()
        .map(|&seed| -> std::io::Result<Vec<Finding>> {
            let docs = generate(seed);
            let file = scratch.join(format!("seed-{seed}.yaml"));
            write(
                &file,
                &to_yaml(&docs, &format!("kubesched-difftest seed {seed}")),
            )?;
            let mut found = Vec::new();
            for pair in &plan.pairs {
                for preemption in modes_for(plan.modes, seed) {
                    comparisons.fetch_add(1, Ordering::Relaxed);
                    let expected = pair.oracle(&file, preemption);
                    let actual = pair.kubesched(&file, preemption);
                    match verdict(&expected, &actual) {
                        Verdict::Agree => {
                            agreed.fetch_add(1, Ordering::Relaxed);
                        }
                        Verdict::BothRefused => {
                            both_refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Verdict::Disagree(mut d) => {
                            match pair.rerun(&file, preemption, &expected, &actual) {
                                Rerun::OracleUnstable => {
                                    oracle_unstable.fetch_add(1, Ordering::Relaxed);
                                    eprintln!(
                                        "UNSTABLE ORACLE seed {seed} v{}{}: {}; run again, the oracle printed kubesched's lines (kubesched's did not change): not a finding",
                                        pair.version,
                                        if preemption { " --preemption" } else { "" },
                                        d.detail
                                    );
                                    continue;
                                }
                                Rerun::KubeschedUnstable => {
                                    d.detail = format!(
                                        "kubesched printed other lines when run again; first: {}",
                                        d.detail
                                    );
                                }
                                Rerun::Stands => {}
                            }
                            let f = report(plan, pair, seed, preemption, &docs, d)?;
                            eprintln!(
                                "DISAGREE seed {} v{}{}: {}\n  shrunk: {}\n  {}",
                                f.seed,
                                f.version,
                                if f.preemption { " --preemption" } else { "" },
                                f.original.detail,
                                f.file.display(),
                                f.shrunk
                            );
                            found.push(f);
                        }
                    }
                }
            }
            std::fs::remove_file(&file)?;
            Ok(found)
        })
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    Ok(Summary {
        comparisons: comparisons.into_inner(),
        agreed: agreed.into_inner(),
        both_refused: both_refused.into_inner(),
        oracle_unstable: oracle_unstable.into_inner(),
        findings,
    })
}

/// Shrinks a disagreement and writes the case and the oracle's expected lines.
fn report(
    plan: &Plan,
    pair: &Pair,
    seed: u64,
    preemption: bool,
    docs: &[Value],
    original: Disagreement,
) -> std::io::Result<Finding> {
    let mode = if preemption { "-preemption" } else { "" };
    let trial = plan
        .out
        .join("scratch")
        .join(format!("shrink-{seed}-v{}{mode}.yaml", pair.version));
    let (small, _) = shrink(docs.to_vec(), plan.shrink_budget, |cand| {
        if write(&trial, &to_yaml(cand, "")).is_err() {
            return false;
        }
        matches!(pair.compare(&trial, preemption),
            Verdict::Disagree(d) if d.kind == original.kind && d.field() == original.field())
    });
    let _ = std::fs::remove_file(&trial);
    let name = format!("difftest-{seed}{mode}");
    let file = plan
        .out
        .join(case_folder(&pair.version, preemption, &small))
        .join(format!("{name}.yaml"));
    let header = format!(
        "{name}: found by kubesched-difftest, seed {seed} (replay: kubesched-difftest --replay {seed}),\n\
         kube-scheduler v{}{}, shrunk from the generated scenario.\n\
         TODO: say which rule this case shows.",
        pair.version,
        if preemption { " with -preemption" } else { "" }
    );
    write(&file, &to_yaml(&small, &header))?;
    let shrunk = match pair.compare(&file, preemption) {
        Verdict::Disagree(d) => d.detail,
        _ => "(the shrunk file agrees: shrinking was not reproducible)".into(),
    };
    if let Ok(lines) = pair.oracle(&file, preemption) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        write(&file.with_extension("expected.jsonl"), &text)?;
    }
    write(
        &plan.out.join("original").join(format!("seed-{seed}.yaml")),
        &to_yaml(docs, &format!("kubesched-difftest seed {seed}, not shrunk")),
    )?;
    Ok(Finding {
        seed,
        version: pair.version.clone(),
        preemption,
        original,
        shrunk,
        file,
    })
}
