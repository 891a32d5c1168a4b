//! The worked examples of the docs cannot drift: every ```` ```console ```` block of
//! `docs/simulating-your-cluster.md` whose commands read a file under `docs/examples/`
//! is run, command by command (`$ kubesched ARGS...`, from the repository root), and
//! what each prints on standard output must be the lines that follow it in the block,
//! with nothing but notes (the version used) on standard error.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (command line, expected output) of each `$ kubesched` line of the checked blocks.
fn examples(doc: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut in_block = false;
    let mut block: Vec<&str> = Vec::new();
    for line in doc.lines() {
        if !in_block {
            in_block = line.trim_end() == "```console";
            block.clear();
            continue;
        }
        if line.trim_end() != "```" {
            block.push(line);
            continue;
        }
        in_block = false;
        if !block.iter().any(|l| l.contains("docs/examples/")) {
            continue;
        }
        let mut current: Option<(String, String)> = None;
        for l in &block {
            if let Some(command) = l.strip_prefix("$ ") {
                found.extend(current.take());
                current = Some((command.to_string(), String::new()));
            } else if let Some((_, out)) = current.as_mut() {
                out.push_str(l);
                out.push('\n');
            } else {
                panic!("a checked console block starts with {l:?}, not a $ command");
            }
        }
        found.extend(current);
    }
    found
}

#[test]
fn the_worked_examples_print_what_the_docs_say() {
    let doc = std::fs::read_to_string(repo().join("docs/simulating-your-cluster.md"))
        .expect("read the docs");
    let examples = examples(&doc);
    // The StatefulSet with local PVs: the table, --explain, and the what-if node.
    assert!(examples.len() >= 3, "{examples:?}");
    for (command, expected) in &examples {
        let mut words = command.split_whitespace();
        assert_eq!(words.next(), Some("kubesched"), "{command}");
        let o = Command::new(env!("CARGO_BIN_EXE_kubesched"))
            .args(words)
            .current_dir(repo())
            .output()
            .expect("run kubesched");
        let stderr = String::from_utf8_lossy(&o.stderr);
        let not_notes: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("kubesched: note: "))
            .collect();
        assert!(not_notes.is_empty(), "{command}: standard error: {stderr}");
        assert!(o.status.success(), "{command}: {}", o.status);
        assert_eq!(
            &String::from_utf8_lossy(&o.stdout),
            expected,
            "{command}: the docs show other output"
        );
    }
}

#[test]
fn only_console_blocks_naming_example_files_are_checked() {
    let doc = "```console\n$ kubesched simulate docs/examples/x.yaml\nPOD\nrow\n$ kubesched simulate docs/examples/x.yaml --explain p\nPod p\n```\n```console\n$ kubesched simulate other.yaml\nignored\n```\n```sh\n$ kubesched simulate docs/examples/y.yaml\n```\n";
    assert_eq!(
        examples(doc),
        [
            (
                "kubesched simulate docs/examples/x.yaml".to_string(),
                "POD\nrow\n".to_string()
            ),
            (
                "kubesched simulate docs/examples/x.yaml --explain p".to_string(),
                "Pod p\n".to_string()
            ),
        ]
    );
}
