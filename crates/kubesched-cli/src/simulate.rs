//! `kubesched simulate`: runs a scenario and prints each pod's result as it is decided.
//!
//! JSON Lines are written one line per pod while the simulation runs, so memory stays
//! that of one result (every node's verdict for one pod) however many pods there are;
//! `--detail` leaves the per-node part out for large clusters. The table keeps only its
//! rows' cells, and `--explain` only the explained pod's attempts.

use std::io::{BufWriter, ErrorKind, Write};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use kubesched_sim::scenario::Scenario;
use kubesched_sim::{Detail, PodResult, SimulationOptions, output, prepare};

use crate::versions::VersionArgs;
use crate::whatif;
use kubesched_framework::{KubernetesVersion, Registry};

/// The output formats of `simulate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Table,
    /// JSON Lines for scripts (the conformance format).
    Jsonl,
}

/// How much per-node detail `--format jsonl` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DetailArg {
    /// Every feasible node's scores and every rejected node's reasons (the conformance
    /// format).
    All,
    /// Only the rejected nodes' reasons (no `scores`).
    Rejected,
    /// Only the pod's outcome (no `scores`, no `rejected`).
    None,
}

impl From<DetailArg> for Detail {
    fn from(d: DetailArg) -> Detail {
        match d {
            DetailArg::All => Detail::All,
            DetailArg::Rejected => Detail::Rejected,
            DetailArg::None => Detail::None,
        }
    }
}

/// What `simulate` was asked.
pub struct Request<'a> {
    pub files: &'a [String],
    pub format: Format,
    pub detail: Option<DetailArg>,
    pub explain: Option<&'a str>,
    pub preemption: bool,
    pub timing: bool,
    pub compare_versions: Option<(KubernetesVersion, KubernetesVersion)>,
    pub whatif: &'a whatif::WhatIfArgs,
    pub versions: &'a VersionArgs,
    pub cache: &'a crate::memory::CacheArgs,
}

/// Runs `simulate`; an error is the one line to print.
pub fn run(req: &Request, registry: &Registry) -> Result<(), String> {
    if let Some(d) = req.detail
        && (req.format != Format::Jsonl || req.explain.is_some())
    {
        let given = d.to_possible_value().map(|v| v.get_name().to_string());
        return Err(format!(
            "--detail {}: only --format jsonl prints per-node detail; the table and --explain choose their own",
            given.unwrap_or_default()
        ));
    }
    let start = Instant::now();
    let (scenario, config_line, server) = whatif::load_scenario(req.files, req.whatif)?;
    if let Some((old, new)) = req.compare_versions {
        return compare(req, &scenario, old, new, registry);
    }
    let (features, version_note) = req.versions.features(server.as_ref())?;
    let loaded = start.elapsed();
    let pending = pending_pods(&scenario);
    let explain = match req.explain {
        Some(query) => Some(resolve_pod(&pending, query)?),
        None => None,
    };
    let detail = match (req.format, &explain) {
        (Format::Jsonl, None) => req.detail.map_or(Detail::All, Detail::from),
        _ => Detail::All,
    };
    let options = req.cache.apply(SimulationOptions {
        preemption: req.preemption,
        detail,
        features,
        ..Default::default()
    });
    let mut prepared = prepare(&scenario, &options, registry).map_err(|e| e.to_string())?;
    // The explained pod's plugins say which claim or volume stopped each node.
    prepared.scheduler.set_explained_pod(explain.clone());
    for w in &prepared.warnings {
        say_warning!("{w}");
    }
    // After the configuration is built, so that a bad one is still an error.
    if pending.is_empty() {
        say_note!(
            "no pending pods in {}: nothing to schedule",
            input_name(req.files, req.whatif)
        );
        return Ok(());
    }
    say_note!("{version_note}");
    let config_source = prepared.config_source.clone();
    let mut writing = Duration::ZERO;
    let mut timed = |f: &mut dyn FnMut() -> std::io::Result<()>| {
        let t = Instant::now();
        let r = f();
        writing += t.elapsed();
        r
    };
    let attempts = match (explain, req.format) {
        (Some(pod), _) => {
            let mut attempts: Vec<PodResult> = Vec::new();
            let n = prepared
                .run_attempts(|r| {
                    if r.pod == pod {
                        attempts.push(r.to_result(Detail::All));
                    }
                    Ok::<(), std::convert::Infallible>(())
                })
                .unwrap_or_else(|never| match never {});
            let text = output::explain(&attempts, &pod)
                .ok_or_else(|| format!("--explain {pod}: no pending pod {pod} in the scenario"))?;
            timed(&mut || write_all_stdout(text.as_bytes()))
                .map_err(|e| format!("cannot write standard output: {e}"))?;
            n
        }
        (None, Format::Jsonl) => {
            let stdout = std::io::stdout().lock();
            let mut out = BufWriter::with_capacity(1 << 16, stdout);
            let result = prepared.run_attempts(|r| {
                timed(&mut || output::write_jsonl_attempt(&mut out, &r, detail))?;
                // Dropped here, before the next pod is attempted.
                drop(r);
                Ok::<(), std::io::Error>(())
            });
            let flushed = result.and_then(|n| timed(&mut || out.flush()).map(|()| n));
            match flushed {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::BrokenPipe => return Ok(()),
                Err(e) => return Err(format!("cannot write standard output: {e}")),
            }
        }
        (None, Format::Table) => {
            let mut table = output::Table::default();
            let n = prepared
                .run_attempts(|r| {
                    table.push_attempt(&r);
                    Ok::<(), std::convert::Infallible>(())
                })
                .unwrap_or_else(|never| match never {});
            let text = match &config_line {
                Some(line) => format!("# {line}\n{}", table.render()),
                None => table.render(),
            };
            timed(&mut || write_all_stdout(text.as_bytes()))
                .map_err(|e| format!("cannot write standard output: {e}"))?;
            n
        }
    };
    // What each PodGroup cycle wrote on its PodGroup (kube-scheduler's
    // updatePodGroupCondition), with GenericWorkload on.
    for (group, c) in &prepared.pod_groups {
        let message = if c.message.is_empty() {
            String::new()
        } else {
            format!(": {}", c.message)
        };
        say_note!(
            "PodGroup {group}: PodGroupScheduled {} ({}){message}",
            if c.status { "True" } else { "False" },
            c.reason
        );
    }
    if req.timing {
        let total = start.elapsed();
        say!(
            "{} node(s), {} pod attempt(s); load {:.3}s, schedule {:.3}s, write output {:.3}s (config: {})",
            scenario.nodes.len(),
            attempts,
            loaded.as_secs_f64(),
            (total - loaded - writing).as_secs_f64(),
            writing.as_secs_f64(),
            config_source
        );
    }
    Ok(())
}

/// `--compare-versions OLD,NEW`: both runs, then only the pods that change.
fn compare(
    req: &Request,
    scenario: &Scenario,
    old: KubernetesVersion,
    new: KubernetesVersion,
    registry: &Registry,
) -> Result<(), String> {
    let before = req.versions.with_version(old)?;
    let after = req.versions.with_version(new)?;
    let options = req.cache.apply(SimulationOptions {
        preemption: req.preemption,
        ..Default::default()
    });
    let comparison =
        kubesched_sim::compare::compare_versions(scenario, &options, &before, &after, registry)
            .map_err(|e| e.to_string())?;
    write_all_stdout(comparison.render().as_bytes())
        .map_err(|e| format!("cannot write standard output: {e}"))
}

/// Writes `bytes` to standard output; a closed pipe (`kubesched ... | head`) is not an
/// error: the reader has what it wanted.
fn write_all_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// `namespace/name` of every pending pod (no `spec.nodeName`), in scenario order.
pub(crate) fn pending_pods(scenario: &Scenario) -> Vec<String> {
    scenario
        .pods
        .iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_none_or(str::is_empty)
        })
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// What the scenario was read from, for the "nothing to schedule" note.
fn input_name(files: &[String], whatif: &whatif::WhatIfArgs) -> String {
    let mut names: Vec<String> = Vec::new();
    if whatif.scenario.from_cluster {
        names.push("the cluster".into());
    }
    names.extend(files.iter().map(|f| match f.as_str() {
        "-" => "<stdin>".to_string(),
        f => f.to_string(),
    }));
    names.extend(whatif.scenario.add.iter().map(|f| format!("--add {f}")));
    if names.is_empty() {
        names.push("<built-in demo>".into());
    }
    names.join(", ")
}

/// The pending pod `--explain QUERY` means: `NAMESPACE/POD` exactly, or a bare `POD`
/// when exactly one pending pod (in any namespace) has that name. Otherwise an error
/// that lists the candidates: every pod of that name when it is ambiguous, the closest
/// names when it is misspelled.
pub(crate) fn resolve_pod(pending: &[String], query: &str) -> Result<String, String> {
    let shown = format!("{query:?}");
    let shown = if shown.trim_matches('"') == query {
        query.to_string()
    } else {
        shown
    };
    if pending.is_empty() {
        return Err(format!(
            "--explain {shown}: the scenario has no pending pods to explain"
        ));
    }
    if query.contains('/') {
        if pending.iter().any(|p| p == query) {
            return Ok(query.to_string());
        }
    } else {
        let mut same_name: Vec<&String> = pending
            .iter()
            .filter(|p| p.split_once('/').is_some_and(|(_, name)| name == query))
            .collect();
        same_name.dedup();
        match same_name.as_slice() {
            [one] => return Ok((*one).clone()),
            [] => {}
            many => {
                return Err(format!(
                    "--explain {shown}: {} pending pods are named {shown}: {}; give NAMESPACE/POD",
                    many.len(),
                    list(many.iter().map(|s| s.as_str()))
                ));
            }
        }
    }
    let close = closest(pending, query);
    if close.is_empty() {
        Err(format!(
            "--explain {shown}: no pending pod {shown} in the scenario"
        ))
    } else {
        Err(format!(
            "--explain {shown}: no pending pod {shown} in the scenario; did you mean {}?",
            list(close.iter().map(|s| s.as_str()))
        ))
    }
}

/// Up to five pending pods whose `namespace/name` (or, for a bare query, name) is
/// close to `query`, closest first.
fn closest<'a>(pending: &'a [String], query: &str) -> Vec<&'a String> {
    let mut scored: Vec<(usize, &String)> = pending
        .iter()
        .filter_map(|p| {
            let distance = |a: &str, b: &str| {
                let d = strsim::damerau_levenshtein(&a.to_lowercase(), &b.to_lowercase());
                let allowed = (a.chars().count().max(b.chars().count()) / 3).max(2);
                (d <= allowed).then_some(d)
            };
            // A full key is compared whole and by its name alone (the namespace may be
            // the mistake); a bare name by name.
            let by_name = distance(name_of(query), name_of(p));
            let whole = query.contains('/').then(|| distance(query, p)).flatten();
            by_name.into_iter().chain(whole).min().map(|d| (d, p))
        })
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    let mut out: Vec<&String> = Vec::new();
    for (_, p) in scored {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out.truncate(5);
    out
}

fn name_of(key: &str) -> &str {
    key.split_once('/').map_or(key, |(_, name)| name)
}

/// `a, b or c`.
fn list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => items.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn a_bare_name_finds_the_only_pod_of_that_name() {
        let p = pods(&["default/p1", "kube-system/p2"]);
        assert_eq!(resolve_pod(&p, "p1").unwrap(), "default/p1");
        assert_eq!(resolve_pod(&p, "p2").unwrap(), "kube-system/p2");
        assert_eq!(resolve_pod(&p, "default/p1").unwrap(), "default/p1");
    }

    #[test]
    fn an_ambiguous_name_lists_every_namespace() {
        let p = pods(&["a/web", "b/web", "default/db"]);
        assert_eq!(
            resolve_pod(&p, "web").unwrap_err(),
            "--explain web: 2 pending pods are named web: a/web or b/web; give NAMESPACE/POD"
        );
    }

    #[test]
    fn a_misspelled_name_suggests_the_close_ones() {
        let p = pods(&["default/frontend", "default/backend", "x/zzz"]);
        assert_eq!(
            resolve_pod(&p, "frontedn").unwrap_err(),
            "--explain frontedn: no pending pod frontedn in the scenario; did you mean default/frontend?"
        );
        assert_eq!(
            resolve_pod(&p, "defualt/backend").unwrap_err(),
            "--explain defualt/backend: no pending pod defualt/backend in the scenario; did you mean default/backend?"
        );
        assert_eq!(
            resolve_pod(&p, "nothing-like-it").unwrap_err(),
            "--explain nothing-like-it: no pending pod nothing-like-it in the scenario"
        );
        // A wrong namespace with the right name is still found by the whole key.
        assert_eq!(
            resolve_pod(&p, "prod/frontend").unwrap_err(),
            "--explain prod/frontend: no pending pod prod/frontend in the scenario; did you mean default/frontend?"
        );
    }

    #[test]
    fn a_query_with_a_newline_stays_on_one_line() {
        let p = pods(&["default/p1"]);
        let e = resolve_pod(&p, "a\nb").unwrap_err();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains(r#""a\nb""#), "{e}");
    }
}
