//! What the `kubesched` command tests share: running the binary (with or without
//! standard input, or from a directory of its own), reading its output, and the path of a file in `tests/data`.

// Each test binary uses only some of these.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `kubesched` with `args`.
pub fn kubesched(args: &[&str]) -> Output {
    command(args).output().expect("run kubesched")
}

/// The `kubesched` command with `args`, not yet run (to set its directory or
/// environment).
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubesched"));
    c.args(args);
    c
}

/// Runs `kubesched` with `args`, writing `input` to its standard input.
pub fn with_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubesched"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubesched");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The standard output, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The standard error, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The path of `tests/data/NAME`.
pub fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// `rollout --format jsonl`'s lines put together as one object: the last line (the
/// result), its `steps` replaced by the step lines in order, each step with
/// `attempts`, the attempt lines of that step (a line with `pod`; there are some with
/// `--detail none|rejected|all`). Panics on a line that is not JSON or out of place.
pub fn rollout_answer(jsonl: &str) -> serde_json::Value {
    use serde_json::Value;
    let mut steps: Vec<Value> = Vec::new();
    let mut attempts: Vec<Value> = Vec::new();
    let mut last: Option<Value> = None;
    for line in jsonl.lines() {
        assert!(last.is_none(), "a line after the result: {line}");
        let v: Value = serde_json::from_str(line).expect("each line is JSON");
        if v.get("pod").is_some() {
            attempts.push(v);
        } else if v.get("result").is_some() {
            last = Some(v);
        } else {
            let mut step = v;
            for a in &attempts {
                assert_eq!(a["step"], step["step"], "attempts come before their step");
            }
            step["attempts"] = Value::Array(std::mem::take(&mut attempts));
            steps.push(step);
        }
    }
    assert!(attempts.is_empty(), "attempts after the last step");
    let mut answer = last.expect("the last line is the result");
    assert_eq!(answer["steps"], steps.len(), "the result counts the steps");
    answer["steps"] = Value::Array(steps);
    answer
}
