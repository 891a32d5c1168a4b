//! # kubesched-apicheck
//!
//! The public-API check of the published kubesched crates (docs/api-stability.md), a
//! stand-in for cargo-semver-checks that builds in seconds on the machine's stable
//! toolchain:
//!
//! - `kubesched-apicheck check`: for each published crate, rustdoc writes its JSON
//!   description (`RUSTC_BOOTSTRAP=1`, the same switch cargo-semver-checks uses to read
//!   rustdoc JSON on a stable toolchain), the `public-api` crate turns it into one line
//!   per public item with its full signature (functions with their parameter and return
//!   types, struct fields, enum variants, trait methods, impls, constants), and every
//!   line of the baseline `api/CRATE.txt` must still be there. A public item removed,
//!   renamed, moved, or whose signature changed is missing from the new list, and fails
//!   the check; new items are listed and allowed (an addition is not a breaking change).
//! - `kubesched-apicheck bless`: writes the current lists as the baseline. Run it when a
//!   version is released (the baseline is the API of the last tagged release), or when a
//!   breaking change is decided, with the version bump and a CHANGELOG entry.
//! - `kubesched-apicheck coverage`: rustdoc's `--show-coverage` for each published
//!   crate: how many public items are documented and how many have an example.
//!
//! It stands outside the crates it checks (a workspace member, not published) and
//! reads them only through cargo and rustdoc.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The published crates, in dependency order, and whether their docs (and API) are
/// taken with every feature on.
const CRATES: &[(&str, bool)] = &[
    ("kubesched-config", false),
    ("kubesched-framework", false),
    ("kubesched-plugins", false),
    ("kubesched-plugins-sigs", false),
    ("kubesched-sim", false),
    ("kubesched-replay", false),
    ("kubesched-report", false),
    ("kubesched-kube", false),
    ("kubesched-cli", true),
    ("kubesched", true),
];

/// The rustdoc JSON format version that the pinned `public-api` reads.
const FORMAT_VERSION: u64 = 57;

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let root = workspace_root();
    let result = match mode.as_str() {
        "check" => check(&root, false),
        "bless" => check(&root, true),
        "coverage" => coverage(&root),
        _ => Err("usage: kubesched-apicheck check|bless|coverage".to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// `cargo rustdoc -p CRATE --lib` with extra rustdoc flags, on the stable toolchain.
fn rustdoc(root: &Path, name: &str, all_features: bool, flags: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["rustdoc", "-q", "-p", name, "--lib"]);
    if all_features {
        cmd.arg("--all-features");
    }
    cmd.arg("--").args(["-Z", "unstable-options"]).args(flags);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo rustdoc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo rustdoc -p {name} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One line per public item of `name`, sorted.
fn public_items(root: &Path, name: &str, all_features: bool) -> Result<Vec<String>, String> {
    rustdoc(root, name, all_features, &["--output-format", "json"])?;
    let json = target_dir(root)
        .join("doc")
        .join(format!("{}.json", name.replace('-', "_")));
    let text = std::fs::read_to_string(&json)
        .map_err(|e| format!("cannot read {}: {e}", json.display()))?;
    let format: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let version = format["format_version"].as_u64().unwrap_or(0);
    if version != FORMAT_VERSION {
        return Err(format!(
            "{}: rustdoc JSON format {version}, but the pinned public-api reads format \
             {FORMAT_VERSION}: move crates/kubesched-apicheck to the public-api release that \
             reads this toolchain's format",
            json.display()
        ));
    }
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .build()
        .map_err(|e| format!("{}: {e}", json.display()))?;
    let mut items: Vec<String> = api.items().map(|i| i.to_string()).collect();
    items.sort();
    items.dedup();
    Ok(items)
}

fn check(root: &Path, bless: bool) -> Result<(), String> {
    let dir = root.join("api");
    let mut broken = Vec::new();
    for &(name, all_features) in CRATES {
        let items = public_items(root, name, all_features)?;
        let path = dir.join(format!("{name}.txt"));
        if bless {
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut text = items.join("\n");
            text.push('\n');
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            println!(
                "{name}: {} public items written to {}",
                items.len(),
                path.display()
            );
            continue;
        }
        let baseline = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (no baseline: run `bless` at a release)",
                path.display()
            )
        })?;
        let baseline: BTreeSet<&str> = baseline.lines().filter(|l| !l.is_empty()).collect();
        let now: BTreeSet<&str> = items.iter().map(String::as_str).collect();
        let missing: Vec<&str> = baseline.difference(&now).copied().collect();
        let added = now.difference(&baseline).count();
        println!(
            "{name}: {} public items, baseline {}; {} missing, {added} added",
            now.len(),
            baseline.len(),
            missing.len()
        );
        for item in now.difference(&baseline) {
            println!("  + {item}");
        }
        for item in &missing {
            println!("  - {item}");
        }
        if !missing.is_empty() {
            broken.push(name);
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "public items of the baseline (api/) are gone or changed in {}: a breaking change. \
             If it is meant, bump the version, say so in CHANGELOG.md and rewrite the \
             baseline with `cargo run -p kubesched-apicheck -- bless` (docs/api-stability.md)",
            broken.join(", ")
        ))
    }
}

fn coverage(root: &Path) -> Result<(), String> {
    for &(name, all_features) in CRATES {
        let table = rustdoc(root, name, all_features, &["--show-coverage"])?;
        let total = table
            .lines()
            .find(|l| l.contains("| Total"))
            .unwrap_or("(no total line)");
        println!("{name:<22} {}", total.trim());
    }
    Ok(())
}
