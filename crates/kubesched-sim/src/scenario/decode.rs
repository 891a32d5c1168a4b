//! Strict decoding of a Node or Pod value into its k8s-openapi type (see "How unknown
//! fields are found" in the module doc of [`super`]).

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use kubesched_framework::quantity::Quantity;

use super::ScenarioError;
use super::error::did_you_mean;

/// Decodes `value` strictly into `T` (see the module doc), naming the field of any error.
pub(super) fn decode<T: DeserializeOwned>(
    value: &Value,
    file: &str,
    object: &str,
) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(Strict { value }).map_err(|error| {
        let field = match error.path().to_string() {
            root if root == "." => String::new(),
            path => path,
        };
        let (file, object) = (file.to_owned(), object.to_owned());
        match error.into_inner() {
            StrictError::UnknownField { suggestion } => ScenarioError::UnknownField {
                file,
                object,
                field,
                suggestion,
            },
            StrictError::InvalidQuantity { value, reason } => ScenarioError::InvalidQuantity {
                file,
                object,
                field,
                value,
                reason,
            },
            StrictError::Message(message) => ScenarioError::Decode {
                file,
                object,
                field,
                message,
            },
        }
    })
}

/// The error of [`Strict`]; serde_path_to_error adds the path.
#[derive(Debug)]
enum StrictError {
    /// A key that is not in the struct's field list.
    UnknownField { suggestion: Option<String> },
    /// A quantity that [`Quantity::parse`] rejects.
    InvalidQuantity { value: String, reason: String },
    /// Anything the decoded types report.
    Message(String),
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrictError::UnknownField { suggestion } => {
                write!(f, "unknown field{}", did_you_mean(suggestion))
            }
            StrictError::InvalidQuantity { value, reason } => {
                write!(f, "invalid quantity {value:?}: {reason}")
            }
            StrictError::Message(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for StrictError {}

impl de::Error for StrictError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        StrictError::Message(msg.to_string())
    }
}

/// A deserializer over a parsed JSON value that refuses keys missing from a struct's field
/// list and checks (and stringifies) every `Quantity`.
struct Strict<'de> {
    value: &'de Value,
}

impl<'de> de::Deserializer<'de> for Strict<'de> {
    type Error = StrictError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, StrictError> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(StrictSeq {
                items: items.iter(),
            }),
            Value::Object(map) => visitor.visit_map(StrictMap::new(map, None)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, StrictError> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, StrictError> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match self.value {
            Value::Object(map) => visitor.visit_map(StrictMap::new(map, Some(fields))),
            // As in Go, `field: null` for a struct is an empty struct.
            Value::Null => {
                visitor.visit_map(StrictMap::new(EMPTY.get_or_init(Map::new), Some(fields)))
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, StrictError> {
        if name == "Quantity" {
            let text = match self.value {
                Value::String(s) => s.clone(),
                // Kubernetes' JSON decoding accepts numbers for quantities.
                Value::Number(n) => number_to_quantity(n),
                _ => return visitor.visit_newtype_struct(self),
            };
            if let Err(error) = Quantity::parse(&text) {
                return Err(StrictError::InvalidQuantity {
                    value: text,
                    reason: error.to_string(),
                });
            }
            return visitor.visit_newtype_struct(StringDeserializer::new(text));
        }
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// A YAML number as a quantity string: integers as written, floats in plain decimal
/// notation (`2e9` -> `2000000000`, `0.5` -> `0.5`).
fn number_to_quantity(n: &serde_json::Number) -> String {
    match (n.as_u64(), n.as_i64(), n.as_f64()) {
        (Some(u), _, _) => u.to_string(),
        (_, Some(i), _) => i.to_string(),
        // Rust's float Display never uses an exponent and prints integral values without
        // a fraction.
        (_, _, Some(f)) => f.to_string(),
        _ => n.to_string(),
    }
}

struct StrictSeq<'de> {
    items: std::slice::Iter<'de, Value>,
}

impl<'de> SeqAccess<'de> for StrictSeq<'de> {
    type Error = StrictError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, StrictError> {
        self.items
            .next()
            .map(|value| seed.deserialize(Strict { value }))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct StrictMap<'de> {
    entries: serde_json::map::Iter<'de>,
    /// The struct's field list; `None` for a free-form map (labels, requests, ...).
    fields: Option<&'static [&'static str]>,
    /// The entry whose key was just read.
    current: Option<(&'de str, &'de Value)>,
}

impl<'de> StrictMap<'de> {
    fn new(map: &'de Map<String, Value>, fields: Option<&'static [&'static str]>) -> Self {
        StrictMap {
            entries: map.iter(),
            fields,
            current: None,
        }
    }
}

impl<'de> MapAccess<'de> for StrictMap<'de> {
    type Error = StrictError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, StrictError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some((key.as_str(), value));
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, StrictError> {
        let Some((key, value)) = self.current.take() else {
            return Err(de::Error::custom("value requested before its key"));
        };
        match self.fields {
            // Reported from inside the seed, so that serde_path_to_error's path ends with the key.
            Some(fields) if !fields.contains(&key) => seed.deserialize(Unknown {
                suggestion: closest(key, fields),
            }),
            _ => seed.deserialize(Strict { value }),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The value of an unknown field: refuses to be decoded.
struct Unknown {
    suggestion: Option<String>,
}

impl<'de> de::Deserializer<'de> for Unknown {
    type Error = StrictError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, StrictError> {
        Err(StrictError::UnknownField {
            suggestion: self.suggestion,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The known field closest to `key` (ignoring case), if it is close enough to be a typo.
fn closest(key: &str, fields: &[&str]) -> Option<String> {
    let key_lower = key.to_lowercase();
    let (distance, field) = fields
        .iter()
        .map(|field| {
            (
                strsim::damerau_levenshtein(&key_lower, &field.to_lowercase()),
                *field,
            )
        })
        .min_by_key(|(distance, _)| *distance)?;
    let allowed = (key.chars().count().max(field.len()) / 3).max(2);
    (distance <= allowed).then(|| field.to_owned())
}
