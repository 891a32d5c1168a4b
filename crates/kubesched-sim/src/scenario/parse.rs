//! Parsing: the text of a [`Source`] into one JSON value per YAML (or JSON) document.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{ScenarioError, Source};

/// One parsed document.
pub(super) struct Document {
    /// Its number in the file, from 1.
    pub number: usize,
    /// The document as JSON.
    pub value: Value,
    /// The first number JSON cannot hold (stored as `null` in `value`), if any.
    pub bad_number: Option<BadNumber>,
}

/// A number of the YAML text that has no JSON form, so the API server would refuse the
/// object (`.inf`, `.nan`, an integer past 64 bits); reported once the object is known.
#[derive(Clone, Debug)]
pub(super) struct BadNumber {
    /// Where it is, from the document's root.
    pub path: Vec<Segment>,
    /// The number as YAML reads it: `.inf`, `-.inf`, `.nan` or the integer.
    pub written: String,
}

/// One step of a path inside a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Segment {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// Renders a path as the loader's messages do (`spec.containers[0].name`), quoting keys
/// that are not plain (see [`kubesched_config::echo`]).
pub(super) fn render(path: &[Segment]) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&kubesched_config::echo(key));
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

impl BadNumber {
    /// The message for the field: `Invalid value: .inf: ...`.
    pub(super) fn message(&self) -> String {
        if self.written.contains(['i', 'n']) {
            format!(
                "Invalid value: {}: not a finite number; JSON, and so the API server, has no infinity or NaN",
                self.written
            )
        } else {
            format!(
                "Invalid value: {}: integer out of range; numbers are read as 64-bit integers (quote a larger quantity: \"{}\")",
                self.written, self.written
            )
        }
    }
}

/// Below this size a file is parsed in one piece: splitting costs more than it saves.
const PARALLEL_BYTES: usize = 1 << 20;

/// Parses every YAML document of `source`, numbered from 1, leaving out empty ones.
///
/// A large file is cut into pieces at document start markers (`---` at the start of a
/// line, which YAML forbids anywhere else) and the pieces are parsed in parallel; the
/// documents keep the numbers a parse of the whole file gives. When a piece does not
/// parse, the whole file is parsed again in one piece, so that the error and its line
/// are what that parse says.
pub(super) fn parse_documents(source: &Source) -> Result<Vec<Document>, ScenarioError> {
    use rayon::prelude::*;
    if let Some(document) = parse_json(&source.text) {
        return Ok(vec![document]);
    }
    let pieces = pieces(&source.text, rayon::current_num_threads() * 4);
    if pieces.len() < 2 {
        return parse_piece(source, &source.text);
    }
    let parsed: Result<Vec<(usize, Vec<Document>)>, ScenarioError> = pieces
        .par_iter()
        .map(|piece| parse_counted(source, piece))
        .collect();
    let Ok(parsed) = parsed else {
        return parse_piece(source, &source.text);
    };
    // Each piece numbered its documents from 1: shift them by the documents (empty
    // ones included) of the pieces before it.
    let mut documents = Vec::new();
    let mut before = 0;
    for (count, piece) in parsed {
        documents.extend(piece.into_iter().map(|mut d| {
            d.number += before;
            d
        }));
        before += count;
    }
    Ok(documents)
}

/// Parses `text` with a JSON parser when it is one JSON value (a `kubectl get -o json`
/// dump, say): a single document, as the YAML parser reads it, several times faster.
/// `None` sends the text to the YAML parser: text that is not exactly one JSON value
/// (an error is then reported as YAML reports it), and a number whose JSON reading
/// may differ from YAML's (`-0` or an integer past 64 bits, which JSON reads as a
/// float).
fn parse_json(text: &str) -> Option<Document> {
    if !text.trim_start().starts_with(['{', '[']) {
        return None;
    }
    let mut walk = Walk {
        json: true,
        ..Walk::default()
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = (&mut walk).deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    (!walk.unsure).then_some(Document {
        number: 1,
        value,
        bad_number: walk.bad,
    })
}

/// Cuts `text` into about `wanted` pieces of similar size, each starting at a line
/// `---` (then a space, a tab or the line's end), or the whole text when it is small.
fn pieces(text: &str, wanted: usize) -> Vec<&str> {
    if text.len() < PARALLEL_BYTES || wanted < 2 {
        return vec![text];
    }
    let target = text.len() / wanted;
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let is_marker = line
            .strip_prefix("---")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\n', '\r']));
        if is_marker && at - start >= target {
            pieces.push(&text[start..at]);
            start = at;
        }
        at += line.len();
    }
    pieces.push(&text[start..]);
    pieces
}

/// Parses a piece in one go.
fn parse_piece(source: &Source, text: &str) -> Result<Vec<Document>, ScenarioError> {
    Ok(parse_counted(source, text)?.1)
}

/// How many documents `text` holds (empty ones included), and the non-empty ones,
/// numbered from 1.
fn parse_counted(source: &Source, text: &str) -> Result<(usize, Vec<Document>), ScenarioError> {
    let mut documents = Vec::new();
    let mut count = 0;
    for (index, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        count = index + 1;
        let mut walk = Walk::default();
        let value = (&mut walk)
            .deserialize(document)
            .map_err(|e| yaml_error(&source.name, &e))?;
        if !value.is_null() {
            documents.push(Document {
                number: index + 1,
                value,
                bad_number: walk.bad,
            });
        }
    }
    Ok((count, documents))
}

/// The state of reading one document into a JSON value: the path to the value being read
/// and the first number with no JSON form. Mapping keys that repeat are refused, as
/// Kubernetes' strict YAML decoding does (serde_json's own `Value` keeps the last one).
#[derive(Default)]
struct Walk {
    path: Vec<Segment>,
    bad: Option<BadNumber>,
    /// Reading JSON text ([`parse_json`]).
    json: bool,
    /// The JSON reading met a number that YAML may read otherwise.
    unsure: bool,
}

impl Walk {
    fn bad_number(&mut self, written: String) -> Value {
        if self.bad.is_none() {
            self.bad = Some(BadNumber {
                path: self.path.clone(),
                written,
            });
        }
        Value::Null
    }
}

impl<'de> DeserializeSeed<'de> for &mut Walk {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut Walk {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => i.into(),
            Err(_) => self.bad_number(v.to_string()),
        })
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Ok(match u64::try_from(v) {
            Ok(u) => u.into(),
            Err(_) => self.bad_number(v.to_string()),
        })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // JSON reads an integer past 64 bits, and `-0`, as a float; YAML as an integer.
        if self.json && v.fract() == 0.0 && (v.abs() >= 9.2e18 || v == 0.0 && v.is_sign_negative())
        {
            self.unsure = true;
        }
        Ok(match serde_json::Number::from_f64(v) {
            Some(n) => Value::Number(n),
            None if v.is_nan() => self.bad_number(".nan".into()),
            None if v > 0.0 => self.bad_number(".inf".into()),
            None => self.bad_number("-.inf".into()),
        })
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(Segment::Index(items.len()));
            let item = seq.next_element_seed(&mut *self);
            self.path.pop();
            match item? {
                Some(item) => items.push(item),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "mapping key {key:?} already defined"
                )));
            }
            self.path.push(Segment::Key(key));
            let value = map.next_value_seed(&mut *self);
            if let Some(Segment::Key(key)) = self.path.pop() {
                object.insert(key, value?);
            }
        }
        Ok(Value::Object(object))
    }
}

fn yaml_error(file: &str, error: &serde_norway::Error) -> ScenarioError {
    let text = error.to_string();
    match error.location() {
        Some(location) => {
            let (line, column) = (location.line(), location.column());
            // serde_norway appends " at line L column C" (libyaml marks); the position is
            // given in front instead.
            let message = text.replacen(&format!(" at line {line} column {column}"), "", 1);
            ScenarioError::Syntax {
                file: file.to_owned(),
                line,
                column,
                message,
            }
        }
        None => ScenarioError::Yaml {
            file: file.to_owned(),
            message: text,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: String) -> Source {
        Source {
            name: "big.yaml".into(),
            text,
        }
    }

    /// A file past the parallel threshold: documents of several shapes, empty ones,
    /// comments, end markers, and `---` inside block scalars (indented, so not a
    /// marker).
    fn big_file() -> String {
        let mut text = String::from("# header\n");
        for i in 0..42000 {
            match i % 6 {
                0 => text.push_str(&format!("---\nkind: Pod\nmetadata: {{name: p{i}}}\n")),
                1 => text.push_str("---\n"),
                2 => text.push_str(&format!(
                    "--- # comment\ndata:\n  note: |\n    ---\n    text {i}\n"
                )),
                3 => text.push_str(&format!("---\n[{i}, two]\n...\n# after the end\n")),
                4 => text.push_str(&format!("---\t\n{{\"json\": {i}}}\n")),
                _ => text.push_str(&format!("---\nlist:\n- {i}\n- x\n")),
            }
        }
        assert!(text.len() > PARALLEL_BYTES, "{}", text.len());
        text
    }

    #[test]
    fn pieces_parse_as_the_whole_file_does() {
        let source = source(big_file());
        assert!(pieces(&source.text, 8).len() > 1);
        let whole = parse_piece(&source, &source.text).expect("whole");
        let split = parse_documents(&source).expect("split");
        assert_eq!(whole.len(), split.len());
        for (a, b) in whole.iter().zip(&split) {
            assert_eq!((a.number, &a.value), (b.number, &b.value));
        }
        // Every sixth document is empty: numbers count it.
        assert_eq!(split.last().map(|d| d.number), Some(42000));
    }

    #[test]
    fn an_error_in_a_piece_is_the_whole_files_error() {
        let mut text = big_file();
        let middle = text.len() / 2;
        let at = middle + text[middle..].find("\n---\n").expect("marker") + 5;
        text.insert_str(at, "key: [unclosed\n");
        let source = source(text);
        let whole = parse_piece(&source, &source.text)
            .err()
            .expect("whole fails");
        let split = parse_documents(&source).err().expect("split fails");
        assert_eq!(whole.to_string(), split.to_string());
        assert!(split.to_string().contains("big.yaml"), "{split}");
    }

    /// The documents of `text` as the YAML parser reads them.
    fn as_yaml(text: &str) -> Vec<(usize, Value, Option<String>)> {
        let documents = parse_piece(&source(text.into()), text).expect("YAML parses");
        documents
            .into_iter()
            .map(|d| (d.number, d.value, d.bad_number.map(|b| b.written)))
            .collect()
    }

    #[test]
    fn json_is_read_as_the_yaml_parser_reads_it() {
        let texts = [
            r#"{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "a", "labels": {"x": "1"}}}]}"#,
            r#"  {"n": [0, 1, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615]}"#,
            r#"{"f": [1.5, -0.25, 1e3, 1E3, 2.5e-3, 1.0, 0.1, 100.0]}"#,
            r#"{"quantities": {"cpu": "100m", "memory": "1Gi", "pods": 110, "ratio": 0.5}}"#,
            r#"{"s": ["", "a\"b", "tab\there", "\u00e9", "slash\/", "line\nfeed", "null", "true", "1"]}"#,
            r#"{"nested": {"empty": {}, "list": [], "null": null, "yes": true, "no": false}}"#,
            "[1, {\"a\": [2, 3]}]\n",
            "{\"spaced\" :\n  [ 1 ,\n 2 ]\n}\n\n",
        ];
        for text in texts {
            let json = parse_json(text).unwrap_or_else(|| panic!("JSON path not taken: {text}"));
            assert_eq!(
                vec![(json.number, json.value, json.bad_number.map(|b| b.written))],
                as_yaml(text),
                "{text}"
            );
        }
    }

    #[test]
    fn text_that_is_not_exactly_one_json_value_goes_to_the_yaml_parser() {
        for text in [
            "kind: Pod\n",
            "{a: b}\n",
            "{\"a\": 1}\n---\n{\"b\": 2}\n",
            "{\"a\": 1}\n{\"b\": 2}\n",
            "{\"a\": 1} # a comment\n",
            "{\"a\": 1, \"a\": 2}",
            "{\"big\": 123456789012345678901234567890}",
            "{\"zero\": -0}",
            "[1, 2",
        ] {
            assert!(parse_json(text).is_none(), "{text}");
        }
        // The YAML parser then says what it says: a repeated key is refused, a large
        // integer is a bad number.
        let repeated = parse_documents(&source("{\"a\": 1, \"a\": 2}".into()));
        assert!(repeated.is_err());
        let big = as_yaml("{\"big\": 123456789012345678901234567890}");
        assert_eq!(big[0].2.as_deref(), Some("123456789012345678901234567890"));
    }

    /// Every document of the repository's conformance scenarios, written as JSON, reads
    /// as the same value through the JSON parser as its YAML does through the YAML
    /// parser.
    #[test]
    fn conformance_documents_read_the_same_as_json() {
        let mut compared = 0;
        for path in super::super::tests::conformance_scenarios() {
            let text = std::fs::read_to_string(&path).expect("readable");
            for document in as_yaml(&text) {
                let json = serde_json::to_string_pretty(&document.1).expect("JSON");
                let read = parse_json(&json)
                    .unwrap_or_else(|| panic!("{}: not read as JSON", path.display()));
                assert_eq!(read.value, document.1, "{}", path.display());
                compared += 1;
            }
        }
        assert!(compared > 1000, "only {compared} documents compared");
    }
}
