//! Text to `serde_json::Value` (YAML and JSON, duplicate keys rejected), and strict serde
//! decoding of a `Value` into a type with field paths and "did you mean" suggestions.

use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{ConfigError, echo};

/// Parse YAML text into a JSON value as sigs.k8s.io/yaml would (merge keys applied,
/// numeric and boolean mapping keys turned into strings).
pub(crate) fn parse_yaml(text: &str, source: &str) -> Result<Value, ConfigError> {
    let mut value: serde_norway::Value =
        serde_norway::from_str(text).map_err(|e| ConfigError::Syntax {
            file: source.to_string(),
            format: "YAML",
            line: e.location().map(|l| l.line()),
            column: e.location().map(|l| l.column()),
            message: strip_location(&e.to_string(), e.location()),
        })?;
    value.apply_merge().map_err(|e| ConfigError::Syntax {
        file: source.to_string(),
        format: "YAML",
        line: e.location().map(|l| l.line()),
        column: e.location().map(|l| l.column()),
        message: e.to_string(),
    })?;
    yaml_to_json(value, source, "")
}

/// Drop the parser's own "at line L column C" when it repeats the reported location.
fn strip_location(message: &str, location: Option<serde_norway::Location>) -> String {
    match location {
        Some(l) => message.replacen(
            &format!(" at line {} column {}", l.line(), l.column()),
            "",
            1,
        ),
        None => message.to_string(),
    }
}

fn yaml_to_json(
    value: serde_norway::Value,
    source: &str,
    path: &str,
) -> Result<Value, ConfigError> {
    use serde_norway::Value as Y;
    let unrepresentable = |message: String| ConfigError::Unrepresentable {
        file: source.to_string(),
        path: path.to_string(),
        message,
    };
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                match serde_json::Number::from_f64(f) {
                    Some(n) => Value::Number(n),
                    None => {
                        return Err(unrepresentable(format!(
                            "the number {f} cannot be represented in JSON"
                        )));
                    }
                }
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                out.push(yaml_to_json(item, source, &format!("{path}[{i}]"))?);
            }
            Value::Array(out)
        }
        Y::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    Y::Null => "null".to_string(),
                    _ => {
                        return Err(unrepresentable(
                            "a mapping key must be a string".to_string(),
                        ));
                    }
                };
                let child = join(path, &echo(&key));
                let v = yaml_to_json(v, source, &child)?;
                out.insert(key, v);
            }
            Value::Object(out)
        }
        Y::Tagged(t) => {
            return Err(unrepresentable(format!(
                "YAML tags are not supported (found {})",
                t.tag
            )));
        }
    })
}

/// Parse JSON text, rejecting duplicate keys (as Go's strict decoding does).
pub(crate) fn parse_json(text: &str, source: &str) -> Result<Value, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let result = StrictValue::deserialize_from(&mut de).and_then(|v| de.end().map(|()| v));
    result.map_err(|e| ConfigError::Syntax {
        file: source.to_string(),
        format: "JSON",
        line: Some(e.line()),
        column: Some(e.column()),
        message: strip_json_location(&e.to_string()),
    })
}

fn strip_json_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// A JSON value deserialized with duplicate object keys rejected.
struct StrictValue(Value);

impl StrictValue {
    fn deserialize_from<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        de::Deserialize::deserialize(d).map(|StrictValue(v)| v)
    }
}

impl<'de> de::Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = StrictValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<StrictValue, E> {
        serde_json::Number::from_f64(v)
            .map(|n| StrictValue(Value::Number(n)))
            .ok_or_else(|| E::custom("number not representable"))
    }
    fn visit_str<E>(self, v: &str) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }
    fn visit_none<E>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrictValue, A::Error> {
        let mut out = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(StrictValue(Value::Array(out)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrictValue, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let StrictValue(v) = map.next_value()?;
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate field {key:?}")));
            }
            out.insert(key, v);
        }
        Ok(StrictValue(Value::Object(out)))
    }
}

/// `parent.child`, or `child` when the parent is empty.
pub(crate) fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_string()
    } else {
        format!("{parent}.{child}")
    }
}

/// `parent[i]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

fn render_path(prefix: &str, path: &serde_path_to_error::Path) -> String {
    let mut out = prefix.to_string();
    for seg in path.iter() {
        match seg {
            serde_path_to_error::Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
            }
            serde_path_to_error::Segment::Map { key } => out = join(&out, &echo(key)),
            serde_path_to_error::Segment::Enum { variant } => out = join(&out, variant),
            serde_path_to_error::Segment::Unknown => out = join(&out, "?"),
        }
    }
    out
}

/// Decode `value` into `T` strictly, turning serde's errors into [`ConfigError`]s whose
/// paths start at `prefix`.
pub(crate) fn decode_value<T: DeserializeOwned>(
    value: Value,
    source: &str,
    prefix: &str,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = render_path(prefix, e.path());
        let message = e.inner().to_string();
        classify(source, path, &message)
    })
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, t)| t.to_string())
        .collect()
}

fn classify(source: &str, path: String, message: &str) -> ConfigError {
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let tokens = backticked(rest);
        let field = tokens.first().cloned().unwrap_or_default();
        let expected: Vec<String> = tokens.into_iter().skip(1).collect();
        // serde_path_to_error's path already ends with the unknown key.
        let shown = echo(&field);
        let path = if path.ends_with(shown.as_ref()) || field.is_empty() {
            path
        } else {
            let parent = path;
            join(&parent, &shown)
        };
        return ConfigError::UnknownField {
            file: source.to_string(),
            path,
            suggestion: suggest(&field, &expected),
            expected,
        };
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        let field = backticked(rest).into_iter().next().unwrap_or_default();
        return ConfigError::Decode {
            file: source.to_string(),
            path: join(&path, &echo(&field)),
            message: "Required value".to_string(),
        };
    }
    ConfigError::Decode {
        file: source.to_string(),
        path,
        message: message.to_string(),
    }
}

/// The known name closest to `given`, if it is close enough to be a typo of it.
pub(crate) fn suggest(given: &str, known: &[String]) -> Option<String> {
    let lower = given.to_ascii_lowercase();
    let mut best: Option<(f64, &String)> = None;
    for k in known {
        if k.to_ascii_lowercase() == lower {
            return Some(k.clone());
        }
        let distance = strsim::damerau_levenshtein(&lower, &k.to_ascii_lowercase());
        let jw = strsim::jaro_winkler(&lower, &k.to_ascii_lowercase());
        let close = distance <= 2 || (jw >= 0.9 && distance <= k.len() / 3);
        if close && best.is_none_or(|(score, _)| jw > score) {
            best = Some((jw, k));
        }
    }
    best.map(|(_, k)| k.clone())
}

/// Remove `null` members of objects, recursively: Go's JSON decoding treats `"x": null` as
/// "not given".
pub(crate) fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            for v in map.values_mut() {
                strip_nulls(v);
            }
        }
        Value::Array(items) => {
            for v in items {
                strip_nulls(v);
            }
        }
        _ => {}
    }
}

/// Human description of a JSON value's type, for messages.
pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestion_is_close_only() {
        let known = vec!["schedulerName".to_string(), "plugins".to_string()];
        assert_eq!(
            suggest("schdulerName", &known).as_deref(),
            Some("schedulerName")
        );
        assert_eq!(
            suggest("SchedulerName", &known).as_deref(),
            Some("schedulerName")
        );
        assert_eq!(suggest("zzz", &known), None);
    }

    #[test]
    fn json_duplicate_keys_rejected() {
        let err = parse_json("{\"a\": 1,\n \"a\": 2}", "x.json").unwrap_err();
        assert!(
            matches!(err, ConfigError::Syntax { line: Some(2), .. }),
            "{err}"
        );
    }

    #[test]
    fn yaml_keys_and_tags() {
        let v = parse_yaml("1: a\ntrue: b\n", "x").unwrap();
        assert_eq!(v["1"], "a");
        assert_eq!(v["true"], "b");
        assert!(parse_yaml("a: !foo 3\n", "x").is_err());
        assert!(parse_yaml("a: .nan\n", "x").is_err());
        assert!(parse_yaml("? [1]\n: 2\n", "x").is_err());
        let merged = parse_yaml("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", "x").unwrap();
        assert_eq!(merged["other"]["x"], 1);
    }

    #[test]
    fn strip_nulls_recurses() {
        let mut v = serde_json::json!({"a": null, "b": [{"c": null, "d": 1}]});
        strip_nulls(&mut v);
        assert_eq!(v, serde_json::json!({"b": [{"d": 1}]}));
    }
}
