//! Every command the docs show runs as written, from the repository root.
//!
//! The commands are read from README.md and docs/*.md: every line of a ```` ```sh ````
//! block (continuation lines joined, comments dropped), and every `$ ` line of any other
//! block, whose following lines are what it prints. A `kubesched` command
//! (`kubesched ...`, `target/release/kubesched ...`, `cargo run ... -p kubesched-cli --
//! ...`) is run with the built binary from the repository root; it must exit 0, unless
//! the lines the docs show after it give its `kubesched: error:` line (exit status 2),
//! or [`STATUSES`] gives the status the docs describe. Every line the docs show after
//! it (but blank ones, the ones elided with `...`, and the figures of [`MEASURED`]) must
//! be a line it printed, on standard output or error. Output files (`-o FILE`) go to a
//! temporary directory.
//!
//! What a test cannot run is in one list, [`SKIPS`], each entry with its reason, and an
//! entry that no longer matches a command is an error too. Files the docs name for the
//! reader's own (`cluster.yaml`, "your dump") are in [`STAND_INS`], each with the
//! repository file that plays its part.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Commands a test cannot run: (doc, the command's start, why).
const SKIPS: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "cargo test --workspace",
        "the test suite itself, of which this test is part",
    ),
    (
        "README.md",
        "cargo install --path crates/kubesched-cli",
        "a release build written into ~/.cargo/bin",
    ),
    (
        "README.md",
        "export KUBEBUILDER_ASSETS=",
        "names the envtest binaries of the reader's machine (setup-envtest)",
    ),
    (
        "README.md",
        "export PATH=",
        "names the reader's folder holding kube-scheduler",
    ),
    (
        "README.md",
        "sudo apt-get install -y chromium",
        "installs Chromium, then runs all of CI (.ci/run), of which this test is part",
    ),
    (
        "docs/conformance.md",
        "export KUBEBUILDER_ASSETS=",
        "names the envtest binaries of the reader's machine (setup-envtest)",
    ),
    (
        "docs/conformance.md",
        "export PATH=",
        "names the reader's folder holding kube-scheduler",
    ),
    (
        "docs/conformance.md",
        "sudo apt-get install -y chromium",
        "installs Chromium, then runs all of CI (.ci/run), of which this test is part",
    ),
    (
        "docs/replay.md",
        "target/debug/kubesched-difftest --traces",
        "the differential tester: the oracles and minutes (.ci/run runs it)",
    ),
    ("README.md", "docker build", "needs Docker"),
    ("README.md", "kubectl ", "needs a cluster"),
    (
        "docs/running-in-a-cluster.md",
        "docker build",
        "needs Docker",
    ),
    (
        "docs/running-in-a-cluster.md",
        "kubectl ",
        "needs a cluster",
    ),
    (
        "docs/running-in-a-cluster.md",
        "curl ",
        "talks to a scheduler running in a cluster",
    ),
    (
        "docs/running-in-a-cluster.md",
        "kubesched run ",
        "runs against a cluster (crates/kubesched-kube's tests run it against a real API server)",
    ),
    (
        "docs/simulating-your-cluster.md",
        "kubectl get ",
        "needs a cluster",
    ),
    (
        "docs/simulating-your-cluster.md",
        "kubesched simulate --from-cluster",
        "reads a live cluster (tests/from_cluster.rs runs it against a fake API server)",
    ),
    (
        "docs/simulating-your-cluster.md",
        "kubesched capacity worker-pod.yaml --from-cluster",
        "reads a live cluster",
    ),
    (
        "docs/simulating-your-cluster.md",
        "kubesched rollout web-v2.yaml --from-cluster",
        "reads a live cluster",
    ),
    (
        "docs/architecture.md",
        "scripts/gen-claims-bench.py",
        "writes 5,000-node scenarios to /tmp for a benchmark of minutes",
    ),
    (
        "docs/architecture.md",
        "target/release/kubesched bench --mode exact /tmp/claims-bench/",
        "the benchmark of the scenarios gen-claims-bench.py writes (a release build, minutes)",
    ),
    (
        "docs/conformance.md",
        "cargo test -p kubesched-sim --test conformance",
        "a test of the suite this test is part of",
    ),
    (
        "docs/conformance.md",
        "../shared/conformance/check",
        "the shared check script lives outside the repository; .ci/run runs it when it is there",
    ),
    (
        "docs/conformance.md",
        "cargo build --release",
        "a release build",
    ),
    (
        "docs/conformance.md",
        "mkdir -p /tmp/oracle",
        "unpacks the oracles outside the repository for the differential tester",
    ),
    (
        "docs/conformance.md",
        "for v in 1.35 1.36; do",
        "unpacks the oracles outside the repository for the differential tester",
    ),
    (
        "docs/conformance.md",
        "xz -dc",
        "unpacks the oracles outside the repository for the differential tester",
    ),
    (
        "docs/conformance.md",
        "chmod +x /tmp/oracle",
        "unpacks the oracles outside the repository for the differential tester",
    ),
    ("docs/conformance.md", "done", "the end of the loop above"),
    (
        "docs/conformance.md",
        "target/release/kubesched-difftest",
        "the differential tester: a release build and the oracles, minutes",
    ),
    (
        "docs/fuzzing.md",
        "cargo test -p",
        "tests of the suite this test is part of",
    ),
    (
        "docs/fuzzing.md",
        "PROPTEST_CASES=20000",
        "a long release run of the property tests",
    ),
    (
        "docs/fuzzing.md",
        "rustup toolchain install nightly",
        "installs a toolchain",
    ),
    (
        "docs/fuzzing.md",
        "cargo install cargo-fuzz",
        "installs a tool into ~/.cargo/bin",
    ),
    (
        "docs/fuzzing.md",
        "cd fuzz",
        "the fuzzing session's directory",
    ),
    (
        "docs/fuzzing.md",
        "cargo +nightly fuzz run",
        "fuzzing: nightly Rust, minutes",
    ),
    (
        "docs/fuzzing.md",
        "mkdir -p corpus/scenario",
        "seeds the fuzzing corpus inside fuzz/",
    ),
    (
        "docs/fuzzing.md",
        "cargo run --release --example mutate",
        "the mutation fuzzer: a release build run for minutes",
    ),
    (
        "docs/report.md",
        "chromium ",
        "needs Chromium (crates/kubesched-report/tests/browser.rs takes screenshots)",
    ),
    (
        "docs/research.md",
        "cargo run --release --manifest-path examples/gpu-sharing/Cargo.toml",
        "the GPU-sharing example's own binary, 60 release runs: examples/gpu-sharing/tests/experiment.rs runs one per policy, as .ci/run does",
    ),
    (
        "docs/writing-a-plugin.md",
        "my-scheduler ",
        "the out-of-tree example's own binary: examples/out-of-tree-plugin/tests/commands.rs runs these",
    ),
    (
        "docs/writing-a-plugin.md",
        "cargo build --features runtime",
        "builds the out-of-tree example in its own directory, as .ci/run does",
    ),
    (
        "docs/writing-a-plugin.md",
        "target/debug/my-scheduler run ",
        "runs against a cluster (examples/out-of-tree-plugin/tests/run.rs runs it against a real API server)",
    ),
];

/// Commands whose output the docs show are measurements (times, memory): they must
/// run, but their figures are not compared. (doc, the command's start)
const MEASURED: &[(&str, &str)] = &[("docs/architecture.md", "kubesched bench ")];

/// Commands the docs show ending with another exit status than 0 (or 2, with the
/// error line shown): (doc, the command's start, the status, why).
const STATUSES: &[(&str, &str, i32, &str)] = &[(
    "docs/simulating-your-cluster.md",
    "kubesched rollout ",
    1,
    "the rollout shown stalls, which is exit status 1",
)];

/// Files the docs name for the reader's own: (name, the repository file standing in).
const STAND_INS: &[(&str, &str)] = &[
    (
        "cluster.yaml",
        "crates/kubesched-cli/tests/data/docs-cluster.yaml",
    ),
    (
        "scenario.yaml",
        "conformance/cases-preemption/reprieve-pdb-victims-first-core.yaml",
    ),
    (
        "typo.yaml",
        "crates/kubesched-cli/tests/data/docs-typo.yaml",
    ),
    (
        "nodes.yaml",
        "docs/examples/statefulset-local-pvs/node-b3.yaml",
    ),
    (
        "my-scheduler.yaml",
        "crates/kubesched-cli/tests/data/whatif-config.yaml",
    ),
    (
        "least-allocated.yaml",
        "crates/kubesched-cli/tests/data/report-least-allocated.yaml",
    ),
    (
        "most-allocated.yaml",
        "crates/kubesched-cli/tests/data/report-most-allocated.yaml",
    ),
];

/// The documents whose commands are checked.
fn docs() -> Vec<PathBuf> {
    let root = repo();
    let mut docs = vec![root.join("README.md")];
    let mut others: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    others.sort();
    docs.extend(others);
    docs
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// One command a doc shows.
#[derive(Debug, PartialEq)]
struct DocCommand {
    /// Where: `docs/x.md:LINE`.
    at: String,
    /// The doc, relative to the repository root.
    doc: String,
    /// The command line, continuations joined, comment kept (shlex drops it).
    text: String,
    /// The lines the doc shows it printing.
    output: Vec<String>,
}

/// The commands of `text` (the document `doc`).
fn commands(doc: &str, text: &str) -> Vec<DocCommand> {
    let mut found: Vec<DocCommand> = Vec::new();
    // The block's language, while in one.
    let mut block: Option<String> = None;
    let mut continued: Option<(usize, String)> = None;
    // Whether the block's lines are the output of its last `$ ` command.
    let mut printing = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let trimmed = raw.trim_start();
        if let Some(fence) = trimmed.strip_prefix("```") {
            block = match block {
                None => Some(fence.trim().to_string()),
                Some(_) => None,
            };
            continued = None;
            printing = false;
            continue;
        }
        let Some(lang) = &block else { continue };
        let shell = matches!(lang.as_str(), "sh" | "bash" | "shell");
        if shell {
            let (start, mut line) = match continued.take() {
                Some((start, so_far)) => (start, format!("{so_far} {trimmed}")),
                None => (n, trimmed.to_string()),
            };
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.ends_with('\\') {
                line.pop();
                continued = Some((start, line));
                continue;
            }
            found.push(DocCommand {
                at: format!("{doc}:{start}"),
                doc: doc.to_string(),
                text: line,
                output: Vec::new(),
            });
        } else if let Some(command) = trimmed.strip_prefix("$ ") {
            found.push(DocCommand {
                at: format!("{doc}:{n}"),
                doc: doc.to_string(),
                text: command.to_string(),
                output: Vec::new(),
            });
            printing = true;
        } else if printing && let Some(last) = found.last_mut() {
            last.output.push(trimmed.trim_end().to_string());
        }
    }
    found
}

/// The arguments of a `kubesched` command line (after the program), or `None` when the
/// line runs another program.
fn kubesched_args(words: &[String]) -> Option<Vec<String>> {
    let (program, rest) = words.split_first()?;
    match program.as_str() {
        "kubesched" | "target/release/kubesched" | "target/debug/kubesched" => Some(rest.to_vec()),
        "cargo" => {
            let dash = rest.iter().position(|w| w == "--")?;
            let (cargo_args, args) = rest.split_at(dash);
            let runs_cli = cargo_args.first().is_some_and(|w| w == "run")
                && cargo_args
                    .windows(2)
                    .any(|w| w[0] == "-p" && w[1] == "kubesched-cli");
            runs_cli.then(|| args[1..].to_vec())
        }
        _ => None,
    }
}

/// The skip entry for `c`, if any.
fn skip_for(c: &DocCommand) -> Option<&'static (&'static str, &'static str, &'static str)> {
    SKIPS
        .iter()
        .find(|(doc, start, _)| *doc == c.doc && c.text.starts_with(start))
}

/// Runs `c` (a kubesched command with `args`) from the repository root; the problems
/// found, one line each.
fn check(c: &DocCommand, args: &[String], tmp: &Path) -> Vec<String> {
    let root = repo();
    let mut problems = Vec::new();
    let mut outputs: Vec<PathBuf> = Vec::new();
    let mut run_args: Vec<String> = Vec::new();
    let mut output_next = false;
    for arg in args {
        if output_next {
            let file = tmp.join(Path::new(arg).file_name().unwrap_or(arg.as_ref()));
            let _ = std::fs::remove_file(&file);
            outputs.push(file.clone());
            run_args.push(file.display().to_string());
            output_next = false;
            continue;
        }
        output_next = matches!(arg.as_str(), "-o" | "--output" | "--html");
        if arg.contains(['|', '>', '<', '&', ';', '$', '`', '~']) {
            problems.push(format!(
                "{}: `{arg}` needs a shell; give the command without it or skip it with a reason",
                c.at
            ));
        }
        match STAND_INS.iter().find(|(name, _)| name == arg) {
            Some((name, stand_in)) => {
                let file = tmp.join(name);
                if let Err(e) = std::fs::copy(root.join(stand_in), &file) {
                    problems.push(format!("{}: stand-in {stand_in}: {e}", c.at));
                }
                run_args.push(file.display().to_string());
            }
            None => run_args.push(arg.clone()),
        }
    }
    if !problems.is_empty() {
        return problems;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kubesched"))
        .args(&run_args)
        .current_dir(&root)
        .output()
        .expect("run kubesched");
    let prefix = format!("{}/", tmp.display());
    let stdout = String::from_utf8_lossy(&out.stdout).replace(&prefix, "");
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&prefix, "");
    let printed: Vec<&str> = stdout
        .lines()
        .chain(stderr.lines())
        .map(str::trim)
        .collect();
    let shown_error = c.output.iter().any(|l| l.starts_with("kubesched: error:"));
    let expected = STATUSES
        .iter()
        .find(|(doc, start, _, _)| *doc == c.doc && c.text.starts_with(start))
        .map_or(if shown_error { 2 } else { 0 }, |s| s.2);
    if out.status.code() != Some(expected) {
        problems.push(format!(
            "{}: `{}` exited with {} where the docs show {expected}: {}",
            c.at,
            c.text,
            out.status,
            stderr.trim_end()
        ));
        return problems;
    }
    let measured = MEASURED
        .iter()
        .any(|(doc, start)| *doc == c.doc && c.text.starts_with(start));
    let missing: Vec<&String> = c
        .output
        .iter()
        .filter(|l| {
            !measured && !l.is_empty() && !l.contains("...") && !printed.contains(&l.trim())
        })
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "{}: `{}` did not print the lines the docs show:\n{}\n  it printed:\n{}",
            c.at,
            c.text,
            missing
                .iter()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
            printed
                .iter()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    if out.status.success() {
        for file in outputs {
            if !file.is_file() {
                problems.push(format!(
                    "{}: `{}` wrote no {}",
                    c.at,
                    c.text,
                    file.display()
                ));
            }
        }
    }
    problems
}

#[test]
fn every_command_the_docs_show_runs_as_written() {
    let root = repo();
    let tmp = std::env::temp_dir().join(format!("kubesched-docs-commands-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("create the temporary directory");
    let mut problems: Vec<String> = Vec::new();
    let mut used = vec![false; SKIPS.len()];
    let mut ran = 0;
    for path in docs() {
        let doc = path
            .strip_prefix(&root)
            .expect("a doc under the root")
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).expect("read a doc");
        for c in commands(&doc, &text) {
            if let Some(skip) = skip_for(&c) {
                let i = SKIPS
                    .iter()
                    .position(|s| std::ptr::eq(s, skip))
                    .expect("an entry of SKIPS");
                used[i] = true;
                continue;
            }
            let Some(words) = shlex::split(&c.text) else {
                problems.push(format!("{}: `{}`: unbalanced quotes", c.at, c.text));
                continue;
            };
            match kubesched_args(&words) {
                Some(args) => {
                    ran += 1;
                    problems.extend(check(&c, &args, &tmp));
                }
                None => problems.push(format!(
                    "{}: `{}` is not a kubesched command: add it to SKIPS with the reason a test cannot run it",
                    c.at, c.text
                )),
            }
        }
    }
    for ((doc, start, _), used) in SKIPS.iter().zip(used) {
        if !used {
            problems.push(format!(
                "SKIPS: no command of {doc} starts with `{start}` any more: drop the entry"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(ran >= 20, "only {ran} kubesched commands found in the docs");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn commands_are_read_from_shell_and_console_blocks() {
    let doc = "text\n```sh\nkubesched simulate a.yaml   # a comment\n# only a comment\nkubesched report a.yaml \\\n    --config b.yaml\n```\n```\n$ kubesched simulate c.yaml\nPOD  NODE\n$ kubesched bench d.yaml\n```\nafter\n```console\n$ kubesched capacity p.yaml c.yaml\n```\n";
    let found = commands("d.md", doc);
    let summary: Vec<(&str, &str, Vec<&str>)> = found
        .iter()
        .map(|c| {
            (
                c.at.as_str(),
                c.text.as_str(),
                c.output.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("d.md:3", "kubesched simulate a.yaml   # a comment", vec![]),
            ("d.md:5", "kubesched report a.yaml  --config b.yaml", vec![]),
            ("d.md:9", "kubesched simulate c.yaml", vec!["POD  NODE"]),
            ("d.md:11", "kubesched bench d.yaml", vec![]),
            ("d.md:15", "kubesched capacity p.yaml c.yaml", vec![]),
        ]
    );
    let words = |s: &str| shlex::split(s).unwrap();
    assert_eq!(
        kubesched_args(&words("cargo run --release -p kubesched-cli -- simulate")),
        Some(vec!["simulate".to_string()])
    );
    assert_eq!(
        kubesched_args(&words("cargo run --release --example mutate -- quantity")),
        None
    );
    assert_eq!(
        kubesched_args(&words("target/release/kubesched simulate x.yaml # note")),
        Some(vec!["simulate".to_string(), "x.yaml".to_string()])
    );
}
