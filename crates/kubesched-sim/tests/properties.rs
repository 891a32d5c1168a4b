//! Property tests for the scenario loader and the simulation (issue 14, "keep it that way"):
//!
//! - the repository's conformance cases, mutated structurally (fields deleted, duplicated or
//!   retyped; newlines and odd unicode in strings; huge numbers; `.inf`/`.nan`; documents
//!   duplicated or wrapped in a `List`; the KubeSchedulerConfiguration document as often as
//!   the objects) and byte by byte, never make the loader or the simulation panic, and
//!   every error is one line that names the file;
//! - a scenario written as separate documents and as `kind: List`s gives the same
//!   decisions.
//!
//! Runs are reproducible: a fixed seed (`PROPTEST_RNG_SEED` overrides it) and a bounded
//! number of cases (`PROPTEST_CASES` overrides it for a longer run by hand). Each property
//! prints how many inputs it tried (`cargo test -- --nocapture`); a failure prints the
//! minimal failing YAML.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use kubesched_framework::NodeSearch;
use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate_with};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde::Deserialize;
use serde_json::{Map, Value};

const SEED: u64 = 0x1405_2026_0000_0014;

/// The file name every input is loaded under; every message must name it.
const FILE: &str = "mutated.yaml";

/// Scenarios with more nodes or pods than this are loaded but not simulated.
const MAX_SIMULATED: usize = 40;

fn runner(default_cases: u32) -> TestRunner {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    TestRunner::new(Config {
        cases: env("PROPTEST_CASES").map_or(default_cases, |n| n as u32),
        rng_seed: RngSeed::Fixed(env("PROPTEST_RNG_SEED").unwrap_or(SEED)),
        failure_persistence: None,
        // Shrinking reruns the loader and the simulation; keep a failing run short.
        max_shrink_iters: 200,
        ..Config::default()
    })
}

fn check<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let tried = std::cell::Cell::new(0u64);
    let result = runner(default_cases).run(&strategy, |input| {
        tried.set(tried.get() + 1);
        test(input)
    });
    eprintln!("{name}: tried {} generated inputs", tried.get());
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

/// The in-tree plugins and kubesched-plugins-sigs' (`--plugins sigs`), which the
/// `cases-sigs` folder names.
fn registry() -> kubesched_framework::Registry {
    let mut registry = kubesched_plugins::in_tree_registry();
    registry
        .merge(kubesched_plugins_sigs::registry())
        .expect("the sigs plugins have names of their own");
    registry
}

/// The conformance cases of the repository, `(path, text)`, in path order. A missing
/// folder fails loudly: a fresh clone has it, and without it this test checks nothing.
fn cases() -> &'static [(PathBuf, String)] {
    static CASES: OnceLock<Vec<(PathBuf, String)>> = OnceLock::new();
    CASES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
        let mut paths = Vec::new();
        for folder in std::fs::read_dir(&root)
            .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
            .flatten()
            .filter(|f| f.file_name().to_string_lossy().starts_with("cases"))
        {
            for entry in std::fs::read_dir(folder.path()).unwrap().flatten() {
                let p = entry.path();
                let name = p.to_string_lossy();
                if name.ends_with(".yaml") && !name.ends_with(".expected.yaml") {
                    paths.push(p);
                }
            }
        }
        paths.sort();
        assert!(
            paths.len() > 100,
            "only {} cases in {}",
            paths.len(),
            root.display()
        );
        paths
            .into_iter()
            .map(|p| {
                let text = std::fs::read_to_string(&p).unwrap();
                (p, text)
            })
            .collect()
    })
}

/// The documents of a case as JSON values (the cases are plain YAML, no `.inf` or aliases).
fn documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// A tiny deterministic generator, driven by the seed proptest picks for each input.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Scalars JSON cannot hold travel as these strings and are written back bare.
const SPECIALS: &[(&str, &str)] = &[
    ("'@@INF@@'", ".inf"),
    ("'@@NINF@@'", "-.inf"),
    ("'@@NAN@@'", ".nan"),
    ("'@@I128@@'", "340282366920938463463374607431768211457"),
    ("'@@U64@@'", "18446744073709551616"),
    ("'@@FLOAT@@'", "1e400"),
    ("'@@NEG@@'", "-9223372036854775809"),
];

fn odd_value(rng: &mut Rng) -> Value {
    let s = |t: &str| Value::String(t.to_string());
    match rng.below(22) {
        0 => Value::Null,
        1 => Value::Bool(rng.coin()),
        2 => Value::from(-1),
        3 => Value::from(0),
        4 => Value::from(i64::MAX),
        5 => s("a\nb"),
        6 => s("ünï\u{202e}cødé"),
        7 => s(""),
        8 => Value::Array(vec![]),
        9 => Value::Object(Map::new()),
        10 => s("@@INF@@"),
        11 => s("@@NAN@@"),
        12 => s("@@NINF@@"),
        13 => s("@@I128@@"),
        14 => s("@@U64@@"),
        15 => s("@@FLOAT@@"),
        16 => s(&"9".repeat(1 + rng.below(500))),
        17 => s("1e-100"),
        18 => s("@@NEG@@"),
        19 => s("x\r\ny"),
        20 => Value::Array(vec![Value::from(1), s("two")]),
        _ => s(&"x".repeat(1 + rng.below(300))),
    }
}

/// Applies one structural mutation somewhere in `root`.
fn mutate_tree(rng: &mut Rng, root: &mut Value) {
    // Walk down a random path (read-only), then act on the node it reaches.
    let depth = rng.below(8);
    let mut path: Vec<Value> = Vec::new();
    let mut node: &Value = root;
    for _ in 0..depth {
        let (step, next) = match node {
            Value::Object(m) if !m.is_empty() => {
                let k = m.keys().nth(rng.below(m.len())).cloned().unwrap();
                let next = &m[&k];
                (Value::String(k), next)
            }
            Value::Array(a) if !a.is_empty() => {
                let i = rng.below(a.len());
                (Value::from(i), &a[i])
            }
            _ => break,
        };
        if next.is_object() || next.is_array() || rng.coin() {
            path.push(step);
            node = next;
        } else {
            break;
        }
    }
    let mut node = root;
    for step in &path {
        node = match step {
            Value::String(k) => node.get_mut(k.as_str()).unwrap(),
            _ => node.get_mut(step.as_u64().unwrap() as usize).unwrap(),
        };
    }
    match node {
        Value::Object(m) if !m.is_empty() && rng.below(3) != 0 => {
            let k = m.keys().nth(rng.below(m.len())).cloned().unwrap();
            match rng.below(3) {
                0 => {
                    m.remove(&k);
                }
                1 => {
                    let v = m[&k].clone();
                    let suffix = rng.pick(&["X", "s", "_", "\n", "é"]);
                    m.insert(format!("{k}{suffix}"), v);
                }
                _ => {
                    m.insert(k, odd_value(rng));
                }
            }
        }
        Value::Array(a) if !a.is_empty() && rng.below(3) != 0 => {
            let i = rng.below(a.len());
            if rng.coin() {
                let v = a[i].clone();
                a.insert(i, v);
            } else {
                a.remove(i);
            }
        }
        Value::String(s) if rng.coin() => {
            let insert = rng.pick(&["\n", "\u{202e}", "é", " ", "\t", "/", "..", "\r"]);
            let mut i = rng.below(s.len() + 1);
            while !s.is_char_boundary(i) {
                i -= 1;
            }
            s.insert_str(i, insert);
        }
        other => *other = odd_value(rng),
    }
}

fn to_yaml(docs: &[Value]) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(d).unwrap());
    }
    for (placeholder, bare) in SPECIALS {
        out = out.replace(placeholder, bare);
    }
    out
}

/// A case with `rounds` structural mutations, the configuration document as likely a target
/// as any object.
fn structurally_mutated(case: usize, seed: u64, rounds: usize) -> String {
    let mut rng = Rng(seed);
    let mut docs = documents(&cases()[case].1);
    for _ in 0..rounds {
        match rng.below(12) {
            0 => {
                let items: Vec<Value> = std::mem::take(&mut docs);
                docs.push(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}));
            }
            1 => {
                let i = rng.below(docs.len());
                let d = docs[i].clone();
                docs.insert(i, d);
            }
            2 => {
                let config = docs
                    .iter()
                    .position(|d| d["kind"] == "KubeSchedulerConfiguration");
                let i = config.unwrap_or_else(|| rng.below(docs.len()));
                mutate_tree(&mut rng, &mut docs[i]);
            }
            _ => {
                let i = rng.below(docs.len());
                mutate_tree(&mut rng, &mut docs[i]);
            }
        }
        if docs.is_empty() {
            break;
        }
    }
    to_yaml(&docs)
}

const YAML_TOKENS: &[&str] = &[
    "\n",
    "---\n",
    ": ",
    "- ",
    "&a ",
    "*a",
    "!!binary ",
    "{",
    "}",
    "[",
    "]",
    "'",
    "\"",
    "\t",
    "~",
    ".nan",
    ".inf",
    "1e999",
    "99999999999999999999",
    "null",
    "<<: *a\n",
    "? ",
    "|\n",
    "#",
    "\u{202e}",
    "\r\n",
    "...\n",
];

/// A case with `rounds` byte-level mutations (kept valid UTF-8, as the CLI requires).
fn byte_mutated(case: usize, seed: u64, rounds: usize) -> String {
    let mut rng = Rng(seed);
    let mut s = cases()[case].1.clone().into_bytes();
    for _ in 0..rounds {
        match rng.below(5) {
            0 if !s.is_empty() => {
                let i = rng.below(s.len());
                s[i] = *rng.pick(b" \n:-'\"{}[]#&*!|>0123456789abcxyz");
            }
            1 => {
                let t = rng.pick(YAML_TOKENS).as_bytes();
                let i = rng.below(s.len() + 1);
                s.splice(i..i, t.iter().copied());
            }
            2 if s.len() > 2 => {
                let a = rng.below(s.len());
                let b = (a + rng.below(64)).min(s.len());
                s.drain(a..b);
            }
            3 if s.len() > 2 => {
                let a = rng.below(s.len());
                let b = (a + rng.below(256)).min(s.len());
                let chunk = s[a..b].to_vec();
                let i = rng.below(s.len() + 1);
                s.splice(i..i, chunk);
            }
            _ => {
                let text = String::from_utf8_lossy(&s).into_owned();
                let lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let i = rng.below(lines.len());
                    let mut out = lines.clone();
                    out.insert(i, lines[i]);
                    s = out.join("\n").into_bytes();
                }
            }
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

fn one_line_naming_file(what: &str, message: &str, yaml: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        !message.contains('\n') && !message.contains('\r'),
        "{} is not one line: {:?}\n--- input ---\n{}",
        what,
        message,
        yaml
    );
    prop_assert!(
        message.contains(FILE),
        "{} does not name the file: {:?}\n--- input ---\n{}",
        what,
        message,
        yaml
    );
    Ok(())
}

/// Loads `yaml`; if it loads and is small, simulates it (every node, with preemption, and
/// the adaptive search); checks every message.
fn load_and_simulate(yaml: &str) -> Result<(), TestCaseError> {
    let source = Source {
        name: FILE.to_string(),
        text: yaml.to_string(),
    };
    let loaded = match scenario::load(&[source]) {
        Ok(loaded) => loaded,
        Err(e) => return one_line_naming_file("load error", &e.to_string(), yaml),
    };
    for warning in &loaded.warnings {
        one_line_naming_file("load warning", warning, yaml)?;
    }
    if loaded.nodes.len() > MAX_SIMULATED || loaded.pods.len() > MAX_SIMULATED {
        return Ok(());
    }
    let modes = [
        SimulationOptions::default(),
        SimulationOptions {
            preemption: true,
            ..SimulationOptions::default()
        },
        SimulationOptions {
            node_search: NodeSearch::Adaptive,
            ..SimulationOptions::default()
        },
    ];
    for options in &modes {
        match simulate_with(&loaded, options, &registry()) {
            Ok(sim) => {
                for warning in &sim.warnings {
                    one_line_naming_file("simulation warning", warning, yaml)?;
                }
                for result in &sim.results {
                    let line = output::to_json(result).to_string();
                    prop_assert!(!line.contains('\n'), "{}", line);
                }
            }
            Err(e) => one_line_naming_file("simulation error", &e.to_string(), yaml)?,
        }
    }
    Ok(())
}

/// Runs `f` and turns a panic into a test failure that shows the input.
fn no_panic(yaml: &str) -> Result<(), TestCaseError> {
    match std::panic::catch_unwind(|| load_and_simulate(yaml)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(TestCaseError::fail(format!(
                "panicked: {message}\n--- input ---\n{yaml}"
            )))
        }
    }
}

fn mutation_plan() -> impl Strategy<Value = (usize, u64, usize)> {
    (0..cases().len(), any::<u64>(), 1usize..5)
}

/// Structurally mutated cases and configurations load and simulate, or fail with one line
/// naming the file. (It found raw newlines echoed in errors, item 4 of issue 14, and
/// the adaptive search's panic on a PreFilter node subset, item 1.)
#[test]
fn structural_mutations_load_or_fail_cleanly() {
    check(
        "structural_mutations_load_or_fail_cleanly",
        250,
        mutation_plan(),
        |(case, seed, rounds)| no_panic(&structurally_mutated(case, seed, rounds)),
    );
}

/// Byte-mutated cases load and simulate, or fail with one line naming the file.
#[test]
fn byte_mutations_load_or_fail_cleanly() {
    check(
        "byte_mutations_load_or_fail_cleanly",
        250,
        mutation_plan(),
        |(case, seed, rounds)| no_panic(&byte_mutated(case, seed, rounds)),
    );
}

/// The decisions of a scenario, as the jsonl lines `simulate` prints.
fn decisions(yaml: &str, preemption: bool) -> Result<Vec<String>, String> {
    let loaded = scenario::load(&[Source {
        name: FILE.to_string(),
        text: yaml.to_string(),
    }])
    .map_err(|e| e.to_string())?;
    let options = SimulationOptions {
        preemption,
        ..SimulationOptions::default()
    };
    let sim = simulate_with(&loaded, &options, &registry()).map_err(|e| e.to_string())?;
    Ok(sim
        .results
        .iter()
        .map(|r| output::to_json(r).to_string())
        .collect())
}

/// The same scenario as separate documents and with runs of documents wrapped in
/// `kind: List`s (in order) gives the same decisions.
#[test]
fn list_and_documents_decide_alike() {
    let strategy = (0..cases().len(), proptest::collection::vec(0usize..4, 1..8));
    check(
        "list_and_documents_decide_alike",
        80,
        strategy,
        |(case, groups)| {
            let (path, text) = &cases()[case];
            let folder = path.to_string_lossy();
            // As the conformance tests run them (cases-sigs: PostFilter on).
            let preemption = folder.contains("cases-preemption") || folder.contains("cases-sigs");
            let docs = documents(text);
            // Split the documents into consecutive runs of the generated lengths (0 leaves
            // one document as is); each longer run becomes one List.
            let mut out = Vec::new();
            let mut rest = docs.as_slice();
            let mut lengths = groups.iter().cycle();
            while !rest.is_empty() {
                let n = (*lengths.next().unwrap()).clamp(0, rest.len());
                if n == 0 {
                    out.push(rest[0].clone());
                    rest = &rest[1..];
                } else {
                    out.push(serde_json::json!({
                        "apiVersion": "v1",
                        "kind": "List",
                        "items": rest[..n].to_vec(),
                    }));
                    rest = &rest[n..];
                }
            }
            let as_documents = decisions(&to_yaml(&docs), preemption);
            let as_lists = decisions(&to_yaml(&out), preemption);
            prop_assert!(
                as_documents.is_ok(),
                "{}: {:?}",
                path.display(),
                as_documents
            );
            prop_assert_eq!(as_documents, as_lists, "{}", path.display());
            Ok(())
        },
    );
}
