//! A mutation fuzzer for the same targets on stable Rust, for machines without a nightly
//! toolchain or cargo-fuzz:
//!
//! ```text
//! cargo run --release --example mutate -- scenario [--seconds 300] [--seed 1]
//! cargo run --release --example mutate -- quantity [--seconds 60] [--seed 1]
//! ```
//!
//! It starts from the repository's conformance cases (scenario) or a list of quantities,
//! applies structural mutations (YAML-aware: delete, duplicate and retype fields, odd strings,
//! huge numbers, `.inf`/`.nan`, `kind: List` wrapping) and byte-level ones, runs the target
//! under `catch_unwind`, and keeps going after a finding. Each distinct finding (by panic
//! location and message shape) is written to `artifacts/<target>/` and printed. No coverage
//! feedback: inputs that load are fed back into the pool, nothing more.

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let target = args.first().map(String::as_str).unwrap_or("");
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let seconds = flag("--seconds").unwrap_or(60);
    let seed = flag("--seed").unwrap_or(1);
    let run: fn(&[u8]) = match target {
        "scenario" => kubesched_fuzz::scenario,
        "quantity" => kubesched_fuzz::quantity,
        _ => {
            eprintln!("usage: mutate scenario|quantity [--seconds N] [--seed S]");
            std::process::exit(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pool = if target == "scenario" {
        scenario_seeds(&root.join("../conformance"))
    } else {
        quantity_seeds()
    };
    let corpus_dir = root.join("corpus").join(target);
    if let Ok(entries) = std::fs::read_dir(&corpus_dir) {
        for e in entries.flatten() {
            if let Ok(bytes) = std::fs::read(e.path()) {
                pool.push(bytes);
            }
        }
    }
    eprintln!("{target}: {} seeds, {seconds} s, seed {seed}", pool.len());
    let seed_count = pool.len();

    panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        *LAST_PANIC.lock().unwrap() = Some(format!("{location}: {message}"));
    }));

    let mut rng = fastrand::Rng::with_seed(seed);
    let artifacts = root.join("artifacts").join(target);
    let mut findings: BTreeMap<String, (PathBuf, usize)> = BTreeMap::new();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut executions = 0u64;
    while Instant::now() < deadline {
        let base = &pool[rng.usize(..pool.len())];
        let input = if target == "scenario" {
            mutate_scenario(&mut rng, base, &pool)
        } else {
            mutate_quantity(&mut rng, base)
        };
        executions += 1;
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| run(&input)));
        match outcome {
            Ok(()) => {
                if pool.len() < seed_count + 5000 && rng.u8(..) < 8 {
                    pool.push(input);
                }
            }
            Err(_) => {
                let message = LAST_PANIC.lock().unwrap().take().unwrap_or_default();
                let key = finding_key(&message);
                let n = findings.len() + 1;
                let entry = findings.entry(key).or_insert_with(|| {
                    std::fs::create_dir_all(&artifacts).ok();
                    let path = artifacts.join(format!("finding-{n}"));
                    std::fs::write(&path, &input).ok();
                    eprintln!(
                        "finding {n} ({} bytes, saved to {}): {}",
                        input.len(),
                        path.display(),
                        shorten(&message)
                    );
                    (path, 0)
                });
                entry.1 += 1;
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    eprintln!(
        "{target}: {executions} inputs in {elapsed:.0} s ({:.0}/s), {} distinct findings",
        executions as f64 / elapsed,
        findings.len()
    );
    for (key, (path, count)) in &findings {
        eprintln!("  {count:>6} x {} ({})", shorten(key), path.display());
    }
}

/// Findings are the same when they panic at the same place with the same message, apart
/// from numbers, quoted values, object names (`: Node x:`, `: Pod ns/x:`) and the words
/// that carry the newline.
fn finding_key(message: &str) -> String {
    // Quoted values inside the (Debug-escaped) message go first: they may hold spaces.
    let mut unquoted = String::new();
    let mut in_value = false;
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'"') {
            chars.next();
            in_value = !in_value;
            unquoted.push_str("<v>");
        } else if !in_value {
            unquoted.push(c);
        }
    }
    let words: Vec<&str> = unquoted.split(' ').collect();
    let mut key: Vec<String> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let after_kind = i >= 2
            && (words[i - 1] == "Node" || words[i - 1] == "Pod")
            && words[i - 2].ends_with(':');
        let masked = if word.contains("\\n") || word.contains("\\r") {
            "<nl>".to_string()
        } else if after_kind {
            "<name>:".to_string()
        } else {
            let mut w = String::new();
            for c in word.chars() {
                if !c.is_ascii_digit() {
                    w.push(c);
                } else if !w.ends_with('#') {
                    w.push('#');
                }
            }
            w
        };
        if key
            .last()
            .is_none_or(|last| *last != masked || masked != "<nl>")
        {
            key.push(masked);
        }
    }
    key.join(" ").chars().take(300).collect()
}

fn shorten(s: &str) -> String {
    let one_line = s.replace('\n', "\\n");
    if one_line.chars().count() > 400 {
        format!("{}...", one_line.chars().take(400).collect::<String>())
    } else {
        one_line
    }
}

fn scenario_seeds(conformance: &Path) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let Ok(folders) = std::fs::read_dir(conformance) else {
        eprintln!("no {}: starting from nothing", conformance.display());
        return vec![b"apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n".to_vec()];
    };
    let mut paths: Vec<PathBuf> = folders
        .flatten()
        .filter(|f| f.path().is_dir())
        .flat_map(|f| std::fs::read_dir(f.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml") && !p.to_string_lossy().contains("expected")
        })
        .collect();
    paths.sort();
    for p in paths {
        if let Ok(bytes) = std::fs::read(&p) {
            seeds.push(bytes);
        }
    }
    seeds
}

fn quantity_seeds() -> Vec<Vec<u8>> {
    [
        "0",
        "1",
        "500m",
        "1.5",
        "1Gi",
        "7.5Gi",
        "2e9",
        "1E-3",
        "+1",
        "-1",
        ".5",
        "5.",
        "1.G",
        "100.035k",
        "0.0001Ki",
        "9Ei",
        "8Ei",
        "1e-100",
        "1e40",
        "123456789012345678901234567890",
        "0.000000000000000000001",
        "e5",
        "Gi",
        "-.",
        "1e9223372036854775807",
        "15896300Ki",
        "9223372036854775807",
        "7.99999999999999999913Ei",
        "1.0000001",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

const QUANTITY_TOKENS: &[&str] = &[
    "0",
    "9",
    ".",
    "+",
    "-",
    "e",
    "E",
    "i",
    "n",
    "u",
    "m",
    "k",
    "K",
    "M",
    "G",
    "T",
    "P",
    "Ki",
    "Ei",
    "e-",
    "e+",
    "000000000",
    "999999999",
    " ",
    "\n",
    "µ",
];

fn mutate_quantity(rng: &mut fastrand::Rng, base: &[u8]) -> Vec<u8> {
    let mut s = base.to_vec();
    for _ in 0..rng.usize(1..4) {
        match rng.u8(..6) {
            0 if !s.is_empty() => {
                let i = rng.usize(..s.len());
                s.remove(i);
            }
            1 => {
                let t = QUANTITY_TOKENS[rng.usize(..QUANTITY_TOKENS.len())].as_bytes();
                let i = rng.usize(..=s.len());
                s.splice(i..i, t.iter().copied());
            }
            2 if !s.is_empty() => {
                // A long run of one digit, to reach the long-number paths.
                let i = rng.usize(..=s.len());
                let digit = b"0159"[rng.usize(..4)];
                let n = [10, 100, 5000, 100_000][rng.usize(..4)];
                s.splice(i..i, std::iter::repeat_n(digit, n));
            }
            3 if !s.is_empty() => {
                let i = rng.usize(..s.len());
                s[i] = rng.u8(..);
            }
            4 => {
                let i = rng.usize(..=s.len());
                let digits: Vec<u8> = (0..rng.usize(1..40)).map(|_| b'0' + rng.u8(..10)).collect();
                s.splice(i..i, digits);
            }
            _ => s.truncate(rng.usize(..=s.len())),
        }
    }
    s
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
    "-.inf",
    "0x1F",
    "1e999",
    "99999999999999999999",
    "-1",
    "null",
    "true",
    "<<: *a\n",
    "? ",
    "|\n",
    ">-\n",
    "#",
    "\u{202e}",
    "\u{0}",
    "é",
    "\r\n",
    "...\n",
];

fn mutate_scenario(rng: &mut fastrand::Rng, base: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
    let rounds = rng.usize(1..4);
    let mut current = base.to_vec();
    for _ in 0..rounds {
        current = if rng.bool() {
            structural(rng, &current).unwrap_or_else(|| bytewise(rng, &current, pool))
        } else {
            bytewise(rng, &current, pool)
        };
    }
    current
}

fn bytewise(rng: &mut fastrand::Rng, base: &[u8], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut s = base.to_vec();
    match rng.u8(..6) {
        0 if !s.is_empty() => {
            let i = rng.usize(..s.len());
            s[i] ^= 1 << rng.u8(..8);
        }
        1 => {
            let t = YAML_TOKENS[rng.usize(..YAML_TOKENS.len())].as_bytes();
            let i = rng.usize(..=s.len());
            s.splice(i..i, t.iter().copied());
        }
        2 if s.len() > 2 => {
            let a = rng.usize(..s.len());
            let b = (a + rng.usize(..64)).min(s.len());
            s.drain(a..b);
        }
        3 if s.len() > 2 => {
            let a = rng.usize(..s.len());
            let b = (a + rng.usize(..256)).min(s.len());
            let chunk = s[a..b].to_vec();
            let i = rng.usize(..=s.len());
            s.splice(i..i, chunk);
        }
        4 => {
            // Splice another input's documents in.
            let other = &pool[rng.usize(..pool.len())];
            s.extend_from_slice(b"\n---\n");
            s.extend_from_slice(other);
        }
        _ => {
            // Duplicate a line (duplicate keys, repeated list items).
            let text = String::from_utf8_lossy(&s).into_owned();
            let lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let i = rng.usize(..lines.len());
                let mut out: Vec<&str> = lines.clone();
                out.insert(i, lines[i]);
                s = out.join("\n").into_bytes();
            }
        }
    }
    s
}

/// Special scalars that JSON cannot hold are written as these strings, then put back as
/// bare YAML after serializing.
const SPECIALS: &[(&str, &str)] = &[
    ("'@@INF@@'", ".inf"),
    ("'@@NINF@@'", "-.inf"),
    ("'@@NAN@@'", ".nan"),
    ("'@@HUGE@@'", "340282366920938463463374607431768211457"),
    ("'@@U64@@'", "18446744073709551616"),
    ("'@@FLOAT@@'", "1e400"),
    ("'@@NEG@@'", "-9223372036854775809"),
];

fn odd_value(rng: &mut fastrand::Rng) -> Value {
    let s = |t: &str| Value::String(t.to_string());
    match rng.u8(..20) {
        0 => Value::Null,
        1 => Value::Bool(rng.bool()),
        2 => Value::from(-1),
        3 => Value::from(0),
        4 => Value::from(i64::MAX),
        5 => s("a\nb"),
        6 => s("ünï\u{202e}cødé\u{0}"),
        7 => s(""),
        8 => Value::Array(vec![]),
        9 => Value::Object(Map::new()),
        10 => s("@@INF@@"),
        11 => s("@@NAN@@"),
        12 => s("@@NINF@@"),
        13 => s("@@HUGE@@"),
        14 => s("@@U64@@"),
        15 => s("@@FLOAT@@"),
        16 => s(&"9".repeat(rng.usize(1..2000))),
        17 => s("1e-100"),
        18 => s("@@NEG@@"),
        _ => s(&"x".repeat(rng.usize(1..300))),
    }
}

/// Parses every document, mutates one node of one document's tree, writes YAML back.
fn structural(rng: &mut fastrand::Rng, base: &[u8]) -> Option<Vec<u8>> {
    use serde::Deserialize;
    let text = std::str::from_utf8(base).ok()?;
    let mut docs: Vec<Value> = Vec::new();
    for d in serde_norway::Deserializer::from_str(text) {
        docs.push(Value::deserialize(d).ok()?);
    }
    if docs.is_empty() {
        return None;
    }
    match rng.u8(..10) {
        // Wrap everything into one `kind: List`.
        0 => {
            let items: Vec<Value> = docs.drain(..).filter(|d| !d.is_null()).collect();
            docs.push(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}));
        }
        // Duplicate a document.
        1 => {
            let i = rng.usize(..docs.len());
            let d = docs[i].clone();
            docs.insert(i, d);
        }
        _ => {
            let i = rng.usize(..docs.len());
            mutate_tree(rng, &mut docs[i]);
        }
    }
    let mut out = String::new();
    for d in &docs {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(d).ok()?);
    }
    for (placeholder, bare) in SPECIALS {
        out = out.replace(placeholder, bare);
    }
    Some(out.into_bytes())
}

fn mutate_tree(rng: &mut fastrand::Rng, root: &mut Value) {
    // Walk down a random path (read-only), then act on the node it reaches.
    let depth = rng.usize(..8);
    let mut path: Vec<Value> = Vec::new();
    let mut node: &Value = root;
    for _ in 0..depth {
        let (step, next) = match node {
            Value::Object(m) if !m.is_empty() => {
                let k = m.keys().nth(rng.usize(..m.len())).cloned().unwrap();
                let next = &m[&k];
                (Value::String(k), next)
            }
            Value::Array(a) if !a.is_empty() => {
                let i = rng.usize(..a.len());
                (Value::from(i), &a[i])
            }
            _ => break,
        };
        if next.is_object() || next.is_array() || rng.bool() {
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
        Value::Object(m) if !m.is_empty() && rng.bool() => {
            let k = m.keys().nth(rng.usize(..m.len())).cloned().unwrap();
            match rng.u8(..3) {
                0 => {
                    m.remove(&k);
                }
                1 => {
                    let v = m[&k].clone();
                    m.insert(format!("{k}{}", ["X", "s", "_", ""][rng.usize(..4)]), v);
                }
                _ => {
                    m.insert(k, odd_value(rng));
                }
            }
        }
        Value::Array(a) if !a.is_empty() && rng.bool() => {
            let i = rng.usize(..a.len());
            if rng.bool() {
                let v = a[i].clone();
                a.insert(i, v);
            } else {
                a.remove(i);
            }
        }
        Value::String(s) if rng.bool() => {
            let insert = ["\n", "\u{202e}", "é", " ", "\t", "/", "..", "\u{0}"][rng.usize(..8)];
            let mut i = rng.usize(..=s.len());
            while !s.is_char_boundary(i) {
                i -= 1;
            }
            s.insert_str(i, insert);
        }
        other => *other = odd_value(rng),
    }
}
