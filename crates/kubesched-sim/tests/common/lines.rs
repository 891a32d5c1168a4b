//! Comparing a case's expected JSON lines with the lines a run printed, for the test
//! binaries that run the repository's own case folders (`cases-sigs`, `cases-gangs`).

use serde_json::Value;

/// `Ok` when `actual` is the lines of `expected_text` (blank lines skipped), field by
/// field; otherwise both, one line each, to read side by side.
pub fn compare(expected_text: &str, actual: &[Value]) -> Result<(), String> {
    let expected: Vec<Value> = expected_text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    if actual == expected {
        return Ok(());
    }
    let show = |v: &[Value]| {
        v.iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    };
    Err(format!(
        "expected:\n{}\nactual:\n{}",
        show(&expected),
        show(actual)
    ))
}
