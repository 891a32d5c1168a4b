//! Parsing: the text of a [`Source`] into one JSON value per YAML (or JSON) document.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{ScenarioError, Source};

/// Parses every YAML document of `source`, numbered from 1, leaving out empty ones.
pub(super) fn parse_documents(source: &Source) -> Result<Vec<(usize, Value)>, ScenarioError> {
    let mut documents = Vec::new();
    for (index, document) in serde_norway::Deserializer::from_str(&source.text).enumerate() {
        let YamlValue(value) =
            YamlValue::deserialize(document).map_err(|e| yaml_error(&source.name, &e))?;
        if !value.is_null() {
            documents.push((index + 1, value));
        }
    }
    Ok(documents)
}

/// A YAML document as a JSON value, refusing duplicate mapping keys as Kubernetes' strict
/// YAML decoding does (serde_json's own `Value` silently keeps the last one).
struct YamlValue(Value);

impl<'de> Deserialize<'de> for YamlValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(YamlValueVisitor)
            .map(YamlValue)
    }
}

struct YamlValueVisitor;

impl<'de> Visitor<'de> for YamlValueVisitor {
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
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // NaN and infinities have no JSON form: null, as serde_json's Value does.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
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
        while let Some(YamlValue(item)) = seq.next_element()? {
            items.push(item);
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
            let YamlValue(value) = map.next_value()?;
            object.insert(key, value);
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
