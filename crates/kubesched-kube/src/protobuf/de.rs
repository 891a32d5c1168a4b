//! A serde `Deserializer` over a protobuf message that the [`Schema`] describes: it
//! shows the message to a `Deserialize` impl as the JSON object the API server would
//! have sent, so the k8s-openapi types decode protobuf with their own impls and no
//! second set of types. Strings are borrowed from the input; fields the schema does not
//! know are skipped, as unknown JSON fields are.

use base64::Engine;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;

use super::Error;
use super::schema::{Field, Kind, MessageId, Scalar, Schema, Special};
use super::wire::{self, Fields, Value};

/// What every deserializer here answers alike: a value that is there is `Some`; a
/// newtype is its inner value; the rest is `deserialize_any` (optionally also `enum`,
/// which `ValueDe` answers itself).
macro_rules! present_value_methods {
    ($($also:ident)?) => {
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_some(self)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            visitor.visit_newtype_struct(self)
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
            ignored_any $($also)?
        }
    };
}

/// Decodes the message `id` in `bytes` into `T`.
pub(crate) fn from_message<'de, T: de::Deserialize<'de>>(
    id: MessageId,
    bytes: &'de [u8],
) -> Result<T, Error> {
    T::deserialize(MessageDe {
        schema: Schema::get(),
        id,
        bytes,
    })
}

struct MessageDe<'de> {
    schema: &'static Schema,
    id: MessageId,
    bytes: &'de [u8],
}

/// The field numbered `number` of a message, if any.
fn field_of(bytes: &[u8], number: u32) -> Result<Option<Value<'_>>, Error> {
    let mut found = None;
    for f in Fields::new(bytes) {
        let (n, v) = f?;
        if n == number {
            found = Some(v);
        }
    }
    Ok(found)
}

fn as_str(v: Option<Value<'_>>) -> Result<&str, Error> {
    match v {
        None => Ok(""),
        Some(Value::Bytes(b)) => std::str::from_utf8(b).map_err(|_| Error::new("invalid UTF-8")),
        Some(_) => Err(Error::new("a string field holds a number")),
    }
}

fn as_int(v: Option<Value<'_>>) -> Result<i64, Error> {
    match v {
        None => Ok(0),
        Some(Value::Varint(v)) => Ok(v as i64),
        Some(_) => Err(Error::new("an integer field holds bytes")),
    }
}

/// Go's `time.Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`.
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let frac = |v: u64, unit: u64, digits: usize| -> String {
        let (whole, rest) = (v / unit, v % unit);
        if rest == 0 {
            whole.to_string()
        } else {
            let s = format!("{whole}.{rest:0digits$}");
            s.trim_end_matches('0').to_string()
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", frac(n, 1_000, 3));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", frac(n, 1_000_000, 6));
    }
    let (h, m) = (n / 3_600_000_000_000, (n / 60_000_000_000) % 60);
    let s = frac(n % 60_000_000_000, 1_000_000_000, 9);
    match (h, m) {
        (0, 0) => format!("{sign}{s}s"),
        (0, m) => format!("{sign}{m}m{s}s"),
        (h, m) => format!("{sign}{h}h{m}m{s}s"),
    }
}

impl<'de> MessageDe<'de> {
    fn special<V: Visitor<'de>>(&self, special: Special, visitor: V) -> Result<V::Value, Error> {
        let b = self.bytes;
        match special {
            Special::Time | Special::MicroTime => {
                if b.is_empty() {
                    return visitor.visit_none();
                }
                let seconds = as_int(field_of(b, 1)?)?;
                let t = jiff::Timestamp::from_second(seconds).map_err(Error::custom_display)?;
                let text = if special == Special::Time {
                    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
                } else {
                    let nanos = as_int(field_of(b, 2)?)?;
                    let t = t
                        .checked_add(jiff::SignedDuration::from_nanos(nanos))
                        .map_err(Error::custom_display)?;
                    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
                };
                visitor.visit_string(text)
            }
            Special::Duration => visitor.visit_string(go_duration(as_int(field_of(b, 1)?)?)),
            Special::Quantity => visitor.visit_borrowed_str(as_str(field_of(b, 1)?)?),
            Special::IntOrString => {
                if as_int(field_of(b, 1)?)? == 0 {
                    visitor.visit_i64(as_int(field_of(b, 2)?)?)
                } else {
                    visitor.visit_borrowed_str(as_str(field_of(b, 3)?)?)
                }
            }
            Special::RawJson => match field_of(b, 1)? {
                Some(Value::Bytes(raw)) if !raw.is_empty() => de::Deserializer::deserialize_any(
                    &mut serde_json::Deserializer::from_slice(raw),
                    visitor,
                )
                .map_err(Error::custom_display),
                _ => visitor.visit_none(),
            },
        }
    }
}

impl<'de> de::Deserializer<'de> for MessageDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let message = self.schema.message(self.id);
        if let Some(special) = message.special {
            return self.special(special, visitor);
        }
        let mut entries: Vec<Entry<'de>> = Vec::with_capacity(16);
        gather(self.schema, self.id, self.bytes, &mut entries)?;
        // A repeated field's values are gathered (gogo writes them together; a sort
        // keeps them together whatever wrote them, in their order).
        entries.sort_by_key(|e| (e.message, e.number));
        visitor.visit_map(MessageMap {
            schema: self.schema,
            entries,
            next: 0,
            current: (0, 0),
        })
    }

    present_value_methods!(enum);
}

/// A known field's value in a message, or in a message inlined into it.
#[derive(Clone, Copy)]
struct Entry<'de> {
    message: MessageId,
    number: u32,
    value: Value<'de>,
}

/// The known fields of message `id` in `bytes`, with those of its inlined messages.
fn gather<'de>(
    schema: &'static Schema,
    id: MessageId,
    bytes: &'de [u8],
    entries: &mut Vec<Entry<'de>>,
) -> Result<(), Error> {
    let message = schema.message(id);
    for f in Fields::new(bytes) {
        let (number, value) = f?;
        let Some(field) = message.field(number) else {
            continue;
        };
        match (field.inline, field.kind, value) {
            (true, Kind::Message(inner), Value::Bytes(b)) => gather(schema, inner, b, entries)?,
            _ => entries.push(Entry {
                message: id,
                number,
                value,
            }),
        }
    }
    Ok(())
}

/// A message's fields as a map of JSON names to values.
struct MessageMap<'de> {
    schema: &'static Schema,
    /// The known fields, by message and number.
    entries: Vec<Entry<'de>>,
    next: usize,
    /// The entries of the field whose key was given last.
    current: (usize, usize),
}

impl MessageMap<'_> {
    fn field(&self, entry: usize) -> &'static Field {
        let e = &self.entries[entry];
        self.schema
            .message(e.message)
            .field(e.number)
            .expect("only known fields are kept")
    }
}

impl<'de> MapAccess<'de> for MessageMap<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        while self.next < self.entries.len() {
            let start = self.next;
            let key = |e: &Entry<'_>| (e.message, e.number);
            let mut end = start + 1;
            while end < self.entries.len() && key(&self.entries[end]) == key(&self.entries[start]) {
                end += 1;
            }
            self.next = end;
            let field = self.field(start);
            let last = self.entries[end - 1].value;
            let scalar = !matches!(field.kind, Kind::Message(_) | Kind::Map(..));
            if !field.repeated && scalar && last.is_empty() && !field.keep_empty {
                // Written by gogo, left out of the JSON under omitempty.
                continue;
            }
            if let (false, Kind::Message(m)) = (field.repeated, field.kind)
                && matches!(
                    self.schema.message(m).special,
                    Some(Special::Time | Special::MicroTime)
                )
                && last.is_empty()
            {
                // A zero time: `null` in the JSON.
                continue;
            }
            self.current = (start, end);
            let key = de::value::BorrowedStrDeserializer::<Error>::new(field.name);
            return seed.deserialize(key).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (start, end) = self.current;
        let field = self.field(start);
        let values = self.entries[start..end].iter().map(|e| e.value);
        match field.kind {
            Kind::Map(key, value) => seed.deserialize(MapDe {
                schema: self.schema,
                key: scalar_kind(key),
                value: scalar_kind(value),
                entries: values.collect(),
            }),
            kind if field.repeated => seed.deserialize(SeqDe {
                schema: self.schema,
                kind,
                values: unpack(kind, values)?,
            }),
            kind => seed.deserialize(ValueDe {
                schema: self.schema,
                kind,
                value: self.entries[end - 1].value,
            }),
        }
    }
}

fn scalar_kind(s: Scalar) -> Kind {
    match s {
        Scalar::String => Kind::String,
        Scalar::Bytes => Kind::Bytes,
        Scalar::Message(m) => Kind::Message(m),
    }
}

/// The values of a repeated field, with packed numbers (one bytes value holding
/// them all) taken apart.
fn unpack<'de>(
    kind: Kind,
    values: impl Iterator<Item = Value<'de>>,
) -> Result<Vec<Value<'de>>, Error> {
    let numeric = matches!(
        kind,
        Kind::Int | Kind::Uint | Kind::Bool | Kind::Double | Kind::Float | Kind::Fixed64
    );
    let mut out = Vec::new();
    for v in values {
        match v {
            Value::Bytes(mut packed) if numeric => {
                while !packed.is_empty() {
                    out.push(match kind {
                        Kind::Double | Kind::Fixed64 if packed.len() >= 8 => {
                            let (h, t) = packed.split_at(8);
                            packed = t;
                            Value::Fixed64(u64::from_le_bytes(h.try_into().unwrap_or([0; 8])))
                        }
                        Kind::Float if packed.len() >= 4 => {
                            let (h, t) = packed.split_at(4);
                            packed = t;
                            Value::Fixed32(u32::from_le_bytes(h.try_into().unwrap_or([0; 4])))
                        }
                        Kind::Double | Kind::Fixed64 | Kind::Float => {
                            return Err(Error::new("packed values end inside a value"));
                        }
                        _ => Value::Varint(wire::varint(&mut packed)?),
                    });
                }
            }
            v => out.push(v),
        }
    }
    Ok(out)
}

/// One value of a field.
struct ValueDe<'de> {
    schema: &'static Schema,
    kind: Kind,
    value: Value<'de>,
}

impl<'de> de::Deserializer<'de> for ValueDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match (self.kind, self.value) {
            (Kind::String, Value::Bytes(b)) => visitor.visit_borrowed_str(
                std::str::from_utf8(b).map_err(|_| Error::new("invalid UTF-8 in a string"))?,
            ),
            (Kind::Bool, Value::Varint(v)) => visitor.visit_bool(v != 0),
            (Kind::Int, Value::Varint(v)) => visitor.visit_i64(v as i64),
            (Kind::Uint, Value::Varint(v)) => visitor.visit_u64(v),
            (Kind::Fixed64, Value::Fixed64(v)) => visitor.visit_i64(v as i64),
            (Kind::Double, Value::Fixed64(v)) => visitor.visit_f64(f64::from_bits(v)),
            (Kind::Float, Value::Fixed32(v)) => visitor.visit_f32(f32::from_bits(v)),
            (Kind::Bytes, Value::Bytes(b)) => {
                visitor.visit_string(base64::engine::general_purpose::STANDARD.encode(b))
            }
            (Kind::Message(id), Value::Bytes(bytes)) => MessageDe {
                schema: self.schema,
                id,
                bytes,
            }
            .deserialize_any(visitor),
            (kind, value) => Err(Error::new(format!(
                "a {kind:?} field holds {value:?} on the wire"
            ))),
        }
    }

    present_value_methods!();

    /// A string as a unit variant (serde's derived enums, e.g. `Status.status`).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match (self.kind, self.value) {
            (Kind::String, Value::Bytes(b)) => {
                let s =
                    std::str::from_utf8(b).map_err(|_| Error::new("invalid UTF-8 in a string"))?;
                visitor.visit_enum(de::value::BorrowedStrDeserializer::<Error>::new(s))
            }
            _ => self.deserialize_any(visitor),
        }
    }
}

/// A repeated field: a JSON array.
struct SeqDe<'de> {
    schema: &'static Schema,
    kind: Kind,
    values: Vec<Value<'de>>,
}

impl<'de> de::Deserializer<'de> for SeqDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_seq(SeqValues {
            schema: self.schema,
            kind: self.kind,
            values: self.values.into_iter(),
        })
    }

    present_value_methods!(enum);
}

struct SeqValues<'de> {
    schema: &'static Schema,
    kind: Kind,
    values: std::vec::IntoIter<Value<'de>>,
}

impl<'de> SeqAccess<'de> for SeqValues<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.values.next() {
            None => Ok(None),
            Some(value) => seed
                .deserialize(ValueDe {
                    schema: self.schema,
                    kind: self.kind,
                    value,
                })
                .map(Some),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.values.len())
    }
}

/// A map field: entries of key (1) and value (2); a JSON object.
struct MapDe<'de> {
    schema: &'static Schema,
    key: Kind,
    value: Kind,
    entries: Vec<Value<'de>>,
}

impl<'de> de::Deserializer<'de> for MapDe<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(MapEntries {
            schema: self.schema,
            key: self.key,
            value: self.value,
            entries: self.entries.into_iter(),
            pending: None,
        })
    }

    present_value_methods!(enum);
}

struct MapEntries<'de> {
    schema: &'static Schema,
    key: Kind,
    value: Kind,
    entries: std::vec::IntoIter<Value<'de>>,
    /// The value of the entry whose key was given last.
    pending: Option<Value<'de>>,
}

impl<'de> MapAccess<'de> for MapEntries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        let Value::Bytes(entry) = entry else {
            return Err(Error::new("a map entry is not a message"));
        };
        let (mut key, mut value) = (Value::Bytes(&[]), Value::Bytes(&[]));
        for f in Fields::new(entry) {
            match f? {
                (1, v) => key = v,
                (2, v) => value = v,
                _ => {}
            }
        }
        self.pending = Some(value);
        seed.deserialize(ValueDe {
            schema: self.schema,
            kind: self.key,
            value: key,
        })
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self.pending.take().unwrap_or(Value::Bytes(&[]));
        seed.deserialize(ValueDe {
            schema: self.schema,
            kind: self.value,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::go_duration;

    #[test]
    fn durations_read_as_go_writes_them() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(1_500_000), "1.5ms");
        assert_eq!(go_duration(90_000_000_000), "1m30s");
        assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration(-2_500_000_000), "-2.5s");
    }
}
