//! The trace format, version 1: JSON Lines, read as a stream.
//!
//! The first line is the header, `{"kubeschedTrace": 1}` (an optional `"description"`
//! string beside it). Every other line is one event at a simulated time in seconds,
//! never earlier than the line before it:
//!
//! ```text
//! {"kubeschedTrace": 1, "description": "two nodes, three pods"}
//! {"time": 0, "apply": {"apiVersion": "v1", "kind": "Node", ...}}
//! {"time": 12.5, "apply": {"apiVersion": "v1", "kind": "Pod", ...}, "duration": 60}
//! {"time": 30, "finish": {"namespace": "default", "name": "web-1", "phase": "Succeeded"}}
//! {"time": 40, "delete": {"kind": "Pod", "namespace": "default", "name": "web-2"}}
//! {"time": 50, "cordon": "node-a"}
//! {"time": 55, "drain": "node-a"}
//! {"time": 60, "uncordon": "node-a"}
//! ```
//!
//! Blank lines are skipped. A last line without its newline that is not JSON is a
//! truncated line (a recorder killed mid-write), reported as such.

use std::io::BufRead;

use serde_json::{Map, Value};

/// The trace format's version, the header's `kubeschedTrace`.
pub const TRACE_VERSION: u64 = 1;

/// One event of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// When, in seconds from the start of the replay.
    pub time: f64,
    /// The line it was read from (from 1), for messages.
    pub line: usize,
    /// What happens.
    pub action: Action,
}

/// What an event does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// An object is created or replaced (any kind the scenario loader reads).
    Apply {
        /// The whole object.
        object: Value,
        /// For a pod: how long it runs once bound, in seconds (it then finishes,
        /// `Succeeded`); overrides its `kubesched.io/duration` annotation.
        duration: Option<f64>,
    },
    /// An object is deleted.
    Delete(ObjectRef),
    /// A pod finishes: it leaves its node, which frees what it requested.
    Finish {
        /// `namespace/name`.
        pod: String,
        /// `Succeeded` or `Failed`.
        phase: String,
    },
    /// A node is marked unschedulable (`spec.unschedulable: true`).
    Cordon(String),
    /// A node is marked schedulable again.
    Uncordon(String),
    /// A node is cordoned and every pod on it evicted at once.
    Drain(String),
}

/// Which object a `delete` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    /// Its `apiVersion`, when the line gives one: which of two kinds of one name is
    /// meant (`scheduling.k8s.io/v1alpha2` or `scheduling.x-k8s.io/v1alpha1`
    /// PodGroup). Without it, the kind of that name in any API.
    pub api_version: Option<String>,
    /// Its kind, e.g. `Pod`.
    pub kind: String,
    /// Its namespace, when given.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

/// A line of the trace that cannot be read: the trace, the line and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{trace}: line {line}: {}{problem}", field.as_ref().map(|f| format!("{f}: ")).unwrap_or_default())]
pub struct TraceError {
    /// The trace's name, as the user gave it.
    pub trace: String,
    /// The line, from 1.
    pub line: usize,
    /// The field, e.g. `time` or `apply.metadata.name`, when one is at fault.
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
    /// The line is a truncated last line (see [`TraceReader::allow_truncated`]).
    pub truncated: bool,
}

const ACTIONS: [&str; 6] = ["apply", "delete", "finish", "cordon", "uncordon", "drain"];
const EVENT_FIELDS: [&str; 8] = [
    "time", "apply", "delete", "finish", "cordon", "uncordon", "drain", "duration",
];

/// Reads a trace line by line: an iterator of events, each checked on its own and
/// against the one before it (time order). Stops after the first error.
pub struct TraceReader<R> {
    name: String,
    input: R,
    line: usize,
    last_time: f64,
    header: bool,
    allow_truncated: bool,
    done: bool,
    /// How many events were read.
    pub events: usize,
    /// Set when a truncated last line was skipped (with `allow_truncated`).
    pub skipped_truncated: Option<usize>,
}

impl<R: BufRead> TraceReader<R> {
    /// A reader of `input`, named `name` in messages.
    pub fn new(name: impl Into<String>, input: R) -> TraceReader<R> {
        TraceReader {
            name: name.into(),
            input,
            line: 0,
            last_time: 0.0,
            header: false,
            allow_truncated: false,
            done: false,
            events: 0,
            skipped_truncated: None,
        }
    }

    /// With `true`, a truncated last line ends the trace instead of being an error.
    pub fn allow_truncated(mut self, allow: bool) -> TraceReader<R> {
        self.allow_truncated = allow;
        self
    }

    /// The trace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn error(&self, field: Option<&str>, problem: impl Into<String>) -> TraceError {
        TraceError {
            trace: self.name.clone(),
            line: self.line,
            field: field.map(str::to_string),
            problem: problem.into(),
            truncated: false,
        }
    }

    /// The next non-blank line and whether it ended with a newline.
    fn next_line(&mut self) -> Result<Option<(String, bool)>, TraceError> {
        loop {
            let mut text = String::new();
            let read = self.input.read_line(&mut text).map_err(|e| {
                self.line += 1;
                self.error(None, format!("cannot read: {e}"))
            })?;
            if read == 0 {
                return Ok(None);
            }
            self.line += 1;
            let complete = text.ends_with('\n');
            if !text.trim().is_empty() {
                return Ok(Some((text, complete)));
            }
        }
    }

    fn read(&mut self) -> Result<Option<TraceEvent>, TraceError> {
        let Some((text, complete)) = self.next_line()? else {
            if !self.header {
                return Err(self.error(
                    None,
                    format!("empty trace: the first line must be the header {{\"kubeschedTrace\": {TRACE_VERSION}}}"),
                ));
            }
            return Ok(None);
        };
        let value: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) if !complete => {
                if self.allow_truncated {
                    self.skipped_truncated = Some(self.line);
                    return Ok(None);
                }
                let mut err = self.error(
                    None,
                    format!(
                        "truncated last line (no newline, not JSON: {e}); the trace was cut off, as when a recorder is killed: --allow-truncated replays the lines before it"
                    ),
                );
                err.truncated = true;
                return Err(err);
            }
            Err(e) => return Err(self.error(None, format!("not JSON: {e}"))),
        };
        let Value::Object(map) = value else {
            return Err(self.error(None, "expected a JSON object"));
        };
        if !self.header {
            self.header(&map)?;
            self.header = true;
            return self.read();
        }
        let event = self.event(map)?;
        self.events += 1;
        Ok(Some(event))
    }

    fn header(&self, map: &Map<String, Value>) -> Result<(), TraceError> {
        if !map.contains_key("kubeschedTrace") {
            return Err(self.error(
                None,
                format!(
                    "the first line must be the header {{\"kubeschedTrace\": {TRACE_VERSION}}}"
                ),
            ));
        }
        for key in map.keys() {
            if key != "kubeschedTrace" && key != "description" {
                return Err(self.error(
                    Some(key),
                    unknown_field(key, &["kubeschedTrace", "description"], "the header"),
                ));
            }
        }
        match map.get("kubeschedTrace") {
            Some(v) if v.as_u64() == Some(TRACE_VERSION) => {}
            Some(v) => {
                return Err(self.error(
                    Some("kubeschedTrace"),
                    format!(
                        "version {v} is not one this kubesched reads (it reads {TRACE_VERSION})"
                    ),
                ));
            }
            None => {
                return Err(self.error(
                    None,
                    format!(
                        "the first line must be the header {{\"kubeschedTrace\": {TRACE_VERSION}}}"
                    ),
                ));
            }
        }
        if let Some(d) = map.get("description")
            && !d.is_string()
        {
            return Err(self.error(Some("description"), "expected a string"));
        }
        Ok(())
    }

    fn event(&mut self, mut map: Map<String, Value>) -> Result<TraceEvent, TraceError> {
        for key in map.keys() {
            if !EVENT_FIELDS.contains(&key.as_str()) {
                return Err(self.error(Some(key), unknown_field(key, &EVENT_FIELDS, "an event")));
            }
        }
        let time = match map.get("time") {
            None => {
                return Err(self.error(Some("time"), "missing: every event has a time in seconds"));
            }
            Some(v) => v
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| {
                    self.error(
                        Some("time"),
                        format!("expected seconds, a number >= 0, got {v}"),
                    )
                })?,
        };
        if time < self.last_time {
            return Err(self.error(
                Some("time"),
                format!(
                    "{} comes before the previous event's {}: events must be in time order",
                    seconds(time),
                    seconds(self.last_time)
                ),
            ));
        }
        let given: Vec<&str> = ACTIONS
            .iter()
            .copied()
            .filter(|a| map.contains_key(*a))
            .collect();
        let action = match given.as_slice() {
            [one] => *one,
            [] => {
                return Err(self.error(
                    None,
                    format!("no action: an event has one of {}", ACTIONS.join(", ")),
                ));
            }
            [a, b, ..] => {
                return Err(self.error(
                    Some(b),
                    format!("an event has one action, and this one has {a} too"),
                ));
            }
        };
        let duration = match map.remove("duration") {
            None => None,
            Some(v) => {
                if action != "apply" {
                    return Err(
                        self.error(Some("duration"), "only an apply of a Pod has a duration")
                    );
                }
                Some(
                    v.as_f64()
                        .filter(|d| d.is_finite() && *d >= 0.0)
                        .ok_or_else(|| {
                            self.error(
                                Some("duration"),
                                format!("expected seconds, a number >= 0, got {v}"),
                            )
                        })?,
                )
            }
        };
        let value = map.remove(action).unwrap_or(Value::Null);
        let action = match action {
            "apply" => {
                let Value::Object(object) = &value else {
                    return Err(self.error(Some("apply"), "expected the whole object"));
                };
                if duration.is_some() && object.get("kind").and_then(Value::as_str) != Some("Pod") {
                    return Err(
                        self.error(Some("duration"), "only an apply of a Pod has a duration")
                    );
                }
                Action::Apply {
                    object: value,
                    duration,
                }
            }
            "delete" => Action::Delete(self.object_ref(value)?),
            "finish" => self.finish(value)?,
            node_action => {
                let Some(name) = value.as_str().filter(|n| !n.is_empty()) else {
                    return Err(self.error(Some(node_action), "expected a node's name"));
                };
                match node_action {
                    "cordon" => Action::Cordon(name.to_string()),
                    "uncordon" => Action::Uncordon(name.to_string()),
                    _ => Action::Drain(name.to_string()),
                }
            }
        };
        self.last_time = time;
        Ok(TraceEvent {
            time,
            line: self.line,
            action,
        })
    }

    fn object_ref(&self, value: Value) -> Result<ObjectRef, TraceError> {
        let Value::Object(map) = value else {
            return Err(self.error(
                Some("delete"),
                "expected {\"kind\": ..., \"namespace\": ..., \"name\": ...}",
            ));
        };
        let fields = ["apiVersion", "kind", "namespace", "name"];
        for key in map.keys() {
            if !fields.contains(&key.as_str()) {
                let field = format!("delete.{key}");
                return Err(self.error(Some(&field), unknown_field(key, &fields, "a delete")));
            }
        }
        let text = |field: &str, required: bool| -> Result<Option<String>, TraceError> {
            match map.get(field) {
                None if required => Err(self.error(Some(&format!("delete.{field}")), "missing")),
                None => Ok(None),
                Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
                Some(v) => Err(self.error(
                    Some(&format!("delete.{field}")),
                    format!("expected a non-empty string, got {v}"),
                )),
            }
        };
        Ok(ObjectRef {
            api_version: text("apiVersion", false)?,
            kind: text("kind", true)?.unwrap_or_default(),
            namespace: text("namespace", false)?,
            name: text("name", true)?.unwrap_or_default(),
        })
    }

    fn finish(&self, value: Value) -> Result<Action, TraceError> {
        let Value::Object(map) = value else {
            return Err(self.error(
                Some("finish"),
                "expected {\"namespace\": ..., \"name\": ..., \"phase\": ...}",
            ));
        };
        let fields = ["namespace", "name", "phase"];
        for key in map.keys() {
            if !fields.contains(&key.as_str()) {
                let field = format!("finish.{key}");
                return Err(self.error(Some(&field), unknown_field(key, &fields, "a finish")));
            }
        }
        let text = |field: &str| match map.get(field) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(v) => Err(self.error(
                Some(&format!("finish.{field}")),
                format!("expected a non-empty string, got {v}"),
            )),
        };
        let Some(name) = text("name")? else {
            return Err(self.error(Some("finish.name"), "missing"));
        };
        let namespace = text("namespace")?.unwrap_or_else(|| "default".into());
        let phase = text("phase")?.unwrap_or_else(|| "Succeeded".into());
        if phase != "Succeeded" && phase != "Failed" {
            return Err(self.error(
                Some("finish.phase"),
                format!("{phase:?}: a pod finishes Succeeded or Failed"),
            ));
        }
        Ok(Action::Finish {
            pod: format!("{namespace}/{name}"),
            phase,
        })
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read() {
            Ok(Some(event)) => Some(Ok(event)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// `unknown field`, with the closest known one when it is close.
fn unknown_field(key: &str, known: &[&str], of: &str) -> String {
    let closest = known
        .iter()
        .map(|k| (strsim::levenshtein(key, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min();
    match closest {
        Some((_, k)) => format!("unknown field of {of}, did you mean {k}?"),
        None => format!("unknown field of {of} (it has {})", known.join(", ")),
    }
}

/// Seconds as a short number: `12`, `12.5`.
pub fn seconds(t: f64) -> String {
    let text = format!("{t:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<TraceEvent>, TraceError> {
        TraceReader::new("t.jsonl", text.as_bytes()).collect()
    }

    fn err(text: &str) -> String {
        read(text).unwrap_err().to_string()
    }

    const HEADER: &str = "{\"kubeschedTrace\": 1}\n";

    #[test]
    fn events_are_read_in_order_with_their_lines() {
        let events = read(&format!(
            "{HEADER}\n{{\"time\": 0, \"cordon\": \"a\"}}\n{{\"time\": 2.5, \"finish\": {{\"name\": \"p\"}}}}\n{{\"time\": 2.5, \"delete\": {{\"kind\": \"Node\", \"name\": \"a\"}}}}"
        ))
        .unwrap();
        assert_eq!(events.len(), 3);
        assert_eq!((events[0].line, events[0].time), (3, 0.0));
        assert_eq!(
            events[1].action,
            Action::Finish {
                pod: "default/p".into(),
                phase: "Succeeded".into()
            }
        );
        assert_eq!(events[2].line, 5);
    }

    #[test]
    fn bad_lines_name_the_trace_the_line_and_the_field() {
        assert_eq!(
            err(&format!(
                "{HEADER}{{\"time\": 5, \"cordon\": \"a\"}}\n{{\"time\": 4, \"cordon\": \"a\"}}\n"
            )),
            "t.jsonl: line 3: time: 4 comes before the previous event's 5: events must be in time order"
        );
        assert_eq!(
            err(&format!("{HEADER}{{\"tme\": 5, \"cordon\": \"a\"}}\n")),
            "t.jsonl: line 2: tme: unknown field of an event, did you mean time?"
        );
        assert_eq!(
            err(&format!("{HEADER}{{\"time\": 5, \"evict\": \"a\"}}\n")),
            "t.jsonl: line 2: evict: unknown field of an event (it has time, apply, delete, finish, cordon, uncordon, drain, duration)"
        );
        assert_eq!(
            err(&format!("{HEADER}{{\"time\": -1, \"cordon\": \"a\"}}\n")),
            "t.jsonl: line 2: time: expected seconds, a number >= 0, got -1"
        );
        assert_eq!(
            err(&format!("{HEADER}{{\"time\": 1}}\n")),
            "t.jsonl: line 2: no action: an event has one of apply, delete, finish, cordon, uncordon, drain"
        );
        assert_eq!(
            err(&format!(
                "{HEADER}{{\"time\": 1, \"cordon\": \"a\", \"drain\": \"a\"}}\n"
            )),
            "t.jsonl: line 2: drain: an event has one action, and this one has cordon too"
        );
        assert_eq!(
            err(&format!(
                "{HEADER}{{\"time\": 1, \"finish\": {{\"name\": \"p\", \"phase\": \"Done\"}}}}\n"
            )),
            "t.jsonl: line 2: finish.phase: \"Done\": a pod finishes Succeeded or Failed"
        );
        assert_eq!(
            err(&format!(
                "{HEADER}{{\"time\": 1, \"cordon\": \"a\", \"duration\": 3}}\n"
            )),
            "t.jsonl: line 2: duration: only an apply of a Pod has a duration"
        );
        assert_eq!(
            err("{\"time\": 1, \"cordon\": \"a\"}\n"),
            "t.jsonl: line 1: the first line must be the header {\"kubeschedTrace\": 1}"
        );
        assert_eq!(
            err("{\"kubeschedTrace\": 2}\n"),
            "t.jsonl: line 1: kubeschedTrace: version 2 is not one this kubesched reads (it reads 1)"
        );
        assert_eq!(
            err(""),
            "t.jsonl: line 0: empty trace: the first line must be the header {\"kubeschedTrace\": 1}"
        );
    }

    #[test]
    fn a_truncated_last_line_is_reported_or_skipped() {
        let text = format!("{HEADER}{{\"time\": 1, \"cordon\": \"a\"}}\n{{\"time\": 2, \"cor");
        let e = read(&text).unwrap_err();
        assert!(e.truncated && e.line == 3, "{e}");
        assert!(
            e.to_string()
                .starts_with("t.jsonl: line 3: truncated last line"),
            "{e}"
        );
        let mut reader = TraceReader::new("t.jsonl", text.as_bytes()).allow_truncated(true);
        assert_eq!(reader.by_ref().count(), 1);
        assert_eq!(reader.skipped_truncated, Some(3));
        // A complete last line without its newline is fine; a broken line with one is not.
        assert_eq!(
            read(&format!("{HEADER}{{\"time\": 1, \"cordon\": \"a\"}}"))
                .unwrap()
                .len(),
            1
        );
        assert!(err(&format!("{HEADER}{{\"time\": 1,\n")).starts_with("t.jsonl: line 2: not JSON"));
    }

    #[test]
    fn seconds_print_short() {
        assert_eq!(seconds(12.0), "12");
        assert_eq!(seconds(12.5), "12.5");
        assert_eq!(seconds(0.000_001), "0.000001");
    }
}
