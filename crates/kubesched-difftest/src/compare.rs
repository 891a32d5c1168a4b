//! Running one scenario through kubesched and an oracle, and comparing their JSON Lines
//! field by field as `../shared/conformance/check` does.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// What a scheduler printed for a scenario: its JSON Lines, or why it refused the file.
pub type Output = Result<Vec<Value>, String>;

/// The two programs compared for one Kubernetes version.
#[derive(Debug, Clone)]
pub struct Pair {
    /// `1.35` or `1.36`.
    pub version: String,
    /// The kubesched binary (`kubesched simulate ...` is run).
    pub kubesched: PathBuf,
    /// The oracle binary for this version (`../shared/oracle/`).
    pub oracle: PathBuf,
}

/// How kubesched and the oracle differed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Both printed lines, and a line differs.
    Lines,
    /// The oracle read the scenario, kubesched refused it.
    KubeschedRefused,
    /// kubesched read a scenario the oracle refused.
    OracleRefused,
}

/// A disagreement: its kind and a one-line description of the first difference.
#[derive(Debug, Clone)]
pub struct Disagreement {
    /// The kind; shrinking keeps it.
    pub kind: Kind,
    /// The first difference, as `check` prints it.
    pub detail: String,
}

impl Disagreement {
    /// The output field where the lines first differ (`message`, `node`, `scores`,
    /// `rejected`, ...; empty for a missing or extra line or a refusal). Shrinking keeps
    /// it too, so that it does not wander off to another difference.
    pub fn field(&self) -> &str {
        let Some(rest) = self.detail.split_once(").").map(|(_, r)| r) else {
            return "";
        };
        rest.split(['.', ':']).next().unwrap_or("")
    }
}

/// The result of one comparison.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Same lines.
    Agree,
    /// Both refused the scenario (a generator corner that no scheduler reads).
    BothRefused,
    /// They differ.
    Disagree(Disagreement),
}

fn run(mut cmd: Command) -> Output {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.trim().chars().take(300).collect());
    }
    json_lines(&String::from_utf8_lossy(&out.stdout))
}

/// The JSON Lines of `text` (blank lines skipped), or the first line that is not JSON.
pub fn json_lines(text: &str) -> Output {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("not JSON Lines: {e}: {l}")))
        .collect()
}

impl Pair {
    /// kubesched's lines for `file`.
    pub fn kubesched(&self, file: &Path, preemption: bool) -> Output {
        let mut cmd = Command::new(&self.kubesched);
        cmd.args(["simulate", "--kubernetes-version", &self.version]);
        if preemption {
            cmd.arg("--preemption");
        }
        cmd.args(["--format", "jsonl"]).arg(file);
        run(cmd)
    }

    /// The oracle's lines for `file`.
    pub fn oracle(&self, file: &Path, preemption: bool) -> Output {
        let mut cmd = Command::new(&self.oracle);
        if preemption {
            cmd.arg("-preemption");
        }
        cmd.arg(file);
        run(cmd)
    }

    /// Runs both over `file` and compares.
    pub fn compare(&self, file: &Path, preemption: bool) -> Verdict {
        verdict(
            &self.oracle(file, preemption),
            &self.kubesched(file, preemption),
        )
    }
}

/// How a disagreement stood up when both programs ran the same file again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rerun {
    /// Both printed the same lines again: the disagreement stands.
    Stands,
    /// kubesched printed other lines on a rerun: kubesched is not deterministic, a bug.
    KubeschedUnstable,
    /// The oracle printed other lines on a rerun, and they agree with kubesched's, which
    /// did not change: kube-scheduler's code raced inside the oracle (its informers
    /// under load), not a rule kubesched misses.
    OracleUnstable,
}

/// How many times [`Pair::rerun`] runs both programs again.
pub const RERUNS: usize = 2;

impl Pair {
    /// Runs both programs over `file` again, up to [`RERUNS`] times, after they printed
    /// `expected` (the oracle) and `actual` (kubesched) and disagreed.
    pub fn rerun(
        &self,
        file: &Path,
        preemption: bool,
        expected: &Output,
        actual: &Output,
    ) -> Rerun {
        for _ in 0..RERUNS {
            if self.kubesched(file, preemption) != *actual {
                return Rerun::KubeschedUnstable;
            }
            let again = self.oracle(file, preemption);
            if again != *expected && matches!(verdict(&again, actual), Verdict::Agree) {
                return Rerun::OracleUnstable;
            }
        }
        Rerun::Stands
    }
}

/// Compares the oracle's output (expected) with kubesched's (actual).
pub fn verdict(expected: &Output, actual: &Output) -> Verdict {
    match (expected, actual) {
        (Err(_), Err(_)) => Verdict::BothRefused,
        (Ok(_), Err(e)) => Verdict::Disagree(Disagreement {
            kind: Kind::KubeschedRefused,
            detail: format!("kubesched refused what kube-scheduler reads: {e}"),
        }),
        (Err(e), Ok(_)) => Verdict::Disagree(Disagreement {
            kind: Kind::OracleRefused,
            detail: format!("kubesched read what kube-scheduler refuses: {e}"),
        }),
        (Ok(exp), Ok(got)) => match compare_lines(exp, got) {
            None => Verdict::Agree,
            Some(detail) => Verdict::Disagree(Disagreement {
                kind: Kind::Lines,
                detail,
            }),
        },
    }
}

/// The first difference between two objects, with its JSON path.
pub fn first_diff(exp: &Value, got: &Value, path: &str) -> Option<String> {
    match (exp, got) {
        (Value::Object(e), Value::Object(g)) => {
            let mut keys: Vec<&String> = e.keys().chain(g.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{path}.{k}");
                match (e.get(k), g.get(k)) {
                    (Some(ev), None) => return Some(format!("{p}: missing, expected {ev}")),
                    (None, Some(gv)) => return Some(format!("{p}: unexpected {gv}")),
                    (Some(ev), Some(gv)) => {
                        if let Some(d) = first_diff(ev, gv, &p) {
                            return Some(d);
                        }
                    }
                    (None, None) => {}
                }
            }
            None
        }
        _ if exp == got => None,
        _ => Some(format!("{path}: expected {exp}, got {got}")),
    }
}

/// The first differing line, as `check` describes it; `None` when all agree.
pub fn compare_lines(expected: &[Value], actual: &[Value]) -> Option<String> {
    for (i, exp) in expected.iter().enumerate() {
        let pod = exp.get("pod").cloned().unwrap_or(Value::Null);
        let Some(got) = actual.get(i) else {
            return Some(format!("line {}: missing (pod {pod})", i + 1));
        };
        if let Some(d) = first_diff(exp, got, "") {
            return Some(format!("line {} (pod {pod}){d}", i + 1));
        }
    }
    (actual.len() > expected.len())
        .then(|| format!("line {}: unexpected extra line", expected.len() + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_are_found_and_key_order_is_ignored() {
        let a = vec![json!({"pod": "default/a", "node": "n1", "scores": {"n1": {"X": 1}}})];
        let b = vec![json!({"scores": {"n1": {"X": 1}}, "node": "n1", "pod": "default/a"})];
        assert_eq!(compare_lines(&a, &b), None);
        let c = vec![json!({"pod": "default/a", "node": "n1", "scores": {"n1": {"X": 2}}})];
        assert_eq!(
            compare_lines(&a, &c).unwrap(),
            "line 1 (pod \"default/a\").scores.n1.X: expected 1, got 2"
        );
        let d = Disagreement {
            kind: Kind::Lines,
            detail: compare_lines(&a, &c).unwrap(),
        };
        assert_eq!(d.field(), "scores");
        assert!(compare_lines(&a, &[]).unwrap().contains("missing"));
        assert!(
            compare_lines(&[], &a)
                .unwrap()
                .contains("unexpected extra line")
        );
    }

    /// A script in `dir` printing `first` on its first run and `later` on the others
    /// (a counter file beside it), as a program whose lines may change between runs.
    #[cfg(unix)]
    fn script(dir: &Path, name: &str, first: &str, later: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        let runs = dir.join(format!("{name}.runs"));
        let text = format!(
            "#!/bin/sh\nif [ -e '{runs}' ]; then echo '{later}'; else touch '{runs}'; echo '{first}'; fi\n",
            runs = runs.display()
        );
        std::fs::write(&path, text).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[cfg(unix)]
    #[test]
    fn a_rerun_tells_an_unstable_program_from_a_rule() {
        let a = r#"{"pod":"default/p","node":"a"}"#;
        let b = r#"{"pod":"default/p","node":"b"}"#;
        let base = std::env::temp_dir().join(format!("difftest-rerun-{}", std::process::id()));
        let case = |name: &str, oracle: (&str, &str), kubesched: (&str, &str)| {
            let dir = base.join(name);
            std::fs::create_dir_all(&dir).expect("dir");
            let pair = Pair {
                version: "1.35".into(),
                kubesched: script(&dir, "kubesched", kubesched.0, kubesched.1),
                oracle: script(&dir, "oracle", oracle.0, oracle.1),
            };
            let file = dir.join("scenario.yaml");
            let expected = pair.oracle(&file, false);
            let actual = pair.kubesched(&file, false);
            assert!(matches!(verdict(&expected, &actual), Verdict::Disagree(_)));
            pair.rerun(&file, false, &expected, &actual)
        };
        // The oracle's first run raced; run again it agrees with kubesched.
        assert_eq!(case("oracle", (a, b), (b, b)), Rerun::OracleUnstable);
        // kubesched changed its answer: never excused.
        assert_eq!(case("kubesched", (a, a), (b, a)), Rerun::KubeschedUnstable);
        // Both stable: a rule kubesched misses.
        assert_eq!(case("stands", (a, a), (b, b)), Rerun::Stands);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn refusals_are_classified() {
        let ok: Output = Ok(vec![]);
        let err: Output = Err("bad".into());
        assert!(matches!(verdict(&err, &err), Verdict::BothRefused));
        assert!(matches!(
            verdict(&ok, &err),
            Verdict::Disagree(Disagreement {
                kind: Kind::KubeschedRefused,
                ..
            })
        ));
        assert!(matches!(
            verdict(&err, &ok),
            Verdict::Disagree(Disagreement {
                kind: Kind::OracleRefused,
                ..
            })
        ));
    }
}
