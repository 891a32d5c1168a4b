//! A serde `Serializer` that writes a k8s-openapi value as the protobuf message the
//! [`Schema`] describes: the inverse of `de`, for what the runtime writes (bindings,
//! events, the Lease). Each JSON field is found by name in the schema and written
//! under its number; `None` is left out, as gogo-protobuf leaves out a nil pointer.
//! A key the schema does not know is an error, never dropped: the caller then sends
//! JSON.

use base64::Engine;
use serde::ser::{self, Serialize};

use super::Error;
use super::schema::{Field, Kind, MessageId, Scalar, Schema, Special};
use super::wire::{put_bytes, put_varint};

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Error {
        Error::new(msg.to_string())
    }
}

/// Encodes `value` as message `id` (without envelope).
pub(crate) fn to_message<T: Serialize + ?Sized>(
    id: MessageId,
    value: &T,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    value.serialize(FieldSer {
        schema: Schema::get(),
        kind: Kind::Message(id),
        number: None,
        out: &mut out,
    })?;
    Ok(out)
}

fn put_tag(out: &mut Vec<u8>, number: u32, wire: u64) {
    put_varint(out, u64::from(number) << 3 | wire);
}

/// Writes one value of a field of `kind` numbered `number` (or, for `None`, the
/// top-level message itself).
struct FieldSer<'a> {
    schema: &'static Schema,
    kind: Kind,
    number: Option<u32>,
    out: &'a mut Vec<u8>,
}

impl FieldSer<'_> {
    fn number(&self) -> Result<u32, Error> {
        self.number
            .ok_or_else(|| Error::new("a message is not a scalar"))
    }

    fn special(&self) -> Option<Special> {
        match self.kind {
            Kind::Message(m) => self.schema.message(m).special,
            _ => None,
        }
    }

    fn int(self, v: i64) -> Result<(), Error> {
        let n = self.number()?;
        match (self.kind, self.special()) {
            (Kind::Int | Kind::Uint | Kind::Bool, _) => {
                put_tag(self.out, n, 0);
                put_varint(self.out, v as u64);
            }
            (Kind::Fixed64, _) => {
                put_tag(self.out, n, 1);
                self.out.extend_from_slice(&v.to_le_bytes());
            }
            (Kind::Double, _) => return self.float(v as f64),
            (_, Some(Special::IntOrString)) => {
                let mut m = Vec::new();
                put_tag(&mut m, 1, 0);
                put_varint(&mut m, 0);
                put_tag(&mut m, 2, 0);
                put_varint(&mut m, v as u64);
                put_bytes(self.out, n, &m);
            }
            (kind, _) => return Err(Error::new(format!("an integer for a {kind:?} field"))),
        }
        Ok(())
    }

    fn float(self, v: f64) -> Result<(), Error> {
        let n = self.number()?;
        match self.kind {
            Kind::Double => {
                put_tag(self.out, n, 1);
                self.out.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            Kind::Float => {
                put_tag(self.out, n, 5);
                self.out
                    .extend_from_slice(&(v as f32).to_bits().to_le_bytes());
            }
            kind => return Err(Error::new(format!("a number for a {kind:?} field"))),
        }
        Ok(())
    }

    fn string(self, v: &str) -> Result<(), Error> {
        let n = self.number()?;
        let mut m = Vec::new();
        match (self.kind, self.special()) {
            (Kind::String, _) => put_bytes(self.out, n, v.as_bytes()),
            (Kind::Bytes, _) => {
                let b = base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(|e| Error::new(format!("bytes that are not base64: {e}")))?;
                put_bytes(self.out, n, &b);
            }
            (_, Some(Special::Time | Special::MicroTime)) => {
                let t: jiff::Timestamp = v
                    .parse()
                    .map_err(|e| Error::new(format!("a time {v:?}: {e}")))?;
                put_tag(&mut m, 1, 0);
                put_varint(&mut m, t.as_second() as u64);
                if self.special() == Some(Special::MicroTime) && t.subsec_nanosecond() != 0 {
                    put_tag(&mut m, 2, 0);
                    put_varint(&mut m, t.subsec_nanosecond() as u64);
                }
                put_bytes(self.out, n, &m);
            }
            (_, Some(Special::Quantity)) => {
                put_bytes(&mut m, 1, v.as_bytes());
                put_bytes(self.out, n, &m);
            }
            (_, Some(Special::IntOrString)) => {
                put_tag(&mut m, 1, 0);
                put_varint(&mut m, 1);
                put_bytes(&mut m, 3, v.as_bytes());
                put_bytes(self.out, n, &m);
            }
            (kind, _) => return Err(Error::new(format!("a string for a {kind:?} field"))),
        }
        Ok(())
    }
}

macro_rules! ints {
    ($($f:ident: $t:ty),*) => {$(
        fn $f(self, v: $t) -> Result<(), Error> {
            self.int(i64::try_from(v).map_err(|_| Error::new("an integer out of range"))?)
        }
    )*};
}

macro_rules! refuse {
    ($($f:ident($($a:ty),*)),*) => {$(
        fn $f(self, $(_: $a),*) -> Result<(), Error> {
            Err(Error::new(concat!("no protobuf for ", stringify!($f))))
        }
    )*};
}

impl<'a> ser::Serializer for FieldSer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = SeqSer<'a>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = StructSer<'a>;
    type SerializeStruct = StructSer<'a>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
          serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);
    refuse!(
        serialize_char(char),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str)
    );

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.int(i64::from(v))
    }

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v)
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        match self.kind {
            Kind::Bytes => {
                put_bytes(self.out, self.number()?, v);
                Ok(())
            }
            kind => Err(Error::new(format!("bytes for a {kind:?} field"))),
        }
    }

    fn serialize_none(self) -> Result<(), Error> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        if self.special() == Some(Special::RawJson) {
            let raw = serde_json::to_vec(value).map_err(|e| Error::new(e.to_string()))?;
            let mut m = Vec::new();
            put_bytes(&mut m, 1, &raw);
            put_bytes(self.out, self.number()?, &m);
            return Ok(());
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(Error::new("no protobuf for an enum"))
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<SeqSer<'a>, Error> {
        Ok(SeqSer {
            schema: self.schema,
            kind: self.kind,
            number: self.number()?,
            out: self.out,
        })
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error::new("no protobuf for a tuple"))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error::new("no protobuf for a tuple"))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error::new("no protobuf for an enum"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<StructSer<'a>, Error> {
        match self.kind {
            Kind::Map(key, value) => Ok(StructSer {
                schema: self.schema,
                shape: Shape::Map { key, value },
                number: self.number,
                out: self.out,
                body: Vec::new(),
                key: None,
            }),
            Kind::Message(id) if self.schema.message(id).special.is_none() => Ok(StructSer {
                schema: self.schema,
                shape: Shape::Message(id),
                number: self.number,
                out: self.out,
                body: Vec::new(),
                key: None,
            }),
            kind => Err(Error::new(format!("an object for a {kind:?} field"))),
        }
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<StructSer<'a>, Error> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error::new("no protobuf for an enum"))
    }
}

/// A repeated field: each element written under the field's number.
struct SeqSer<'a> {
    schema: &'static Schema,
    kind: Kind,
    number: u32,
    out: &'a mut Vec<u8>,
}

impl ser::SerializeSeq for SeqSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(FieldSer {
            schema: self.schema,
            kind: self.kind,
            number: Some(self.number),
            out: self.out,
        })
    }

    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

enum Shape {
    /// A message's fields, by JSON name.
    Message(MessageId),
    /// A map's entries: key (1) and value (2).
    Map { key: Scalar, value: Scalar },
}

/// A message (its fields by JSON name) or a map (its entries).
struct StructSer<'a> {
    schema: &'static Schema,
    shape: Shape,
    number: Option<u32>,
    out: &'a mut Vec<u8>,
    body: Vec<u8>,
    /// A map entry's key, until its value comes.
    key: Option<String>,
}

fn scalar_kind(s: Scalar) -> Kind {
    match s {
        Scalar::String => Kind::String,
        Scalar::Bytes => Kind::Bytes,
        Scalar::Message(m) => Kind::Message(m),
    }
}

impl StructSer<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<(), Error> {
        match self.shape {
            Shape::Message(id) => {
                let Some((number, field)) = self.schema.message(id).field_named(name) else {
                    // A resource's TypeMeta is the envelope's, not the message's.
                    if self.number.is_none() && matches!(name, "apiVersion" | "kind") {
                        return Ok(());
                    }
                    return Err(Error::new(format!(
                        "no field {name:?} in the protobuf schema"
                    )));
                };
                write_field(self.schema, number, field, value, &mut self.body)
            }
            Shape::Map { key, value: v } => {
                let n = self
                    .number
                    .ok_or_else(|| Error::new("a map is not a message"))?;
                let mut entry = Vec::new();
                FieldSer {
                    schema: self.schema,
                    kind: scalar_kind(key),
                    number: Some(1),
                    out: &mut entry,
                }
                .string(name)?;
                value.serialize(FieldSer {
                    schema: self.schema,
                    kind: scalar_kind(v),
                    number: Some(2),
                    out: &mut entry,
                })?;
                put_bytes(&mut self.body, n, &entry);
                Ok(())
            }
        }
    }

    fn finish(self) -> Result<(), Error> {
        match (self.shape, self.number) {
            (Shape::Message(_), Some(n)) => put_bytes(self.out, n, &self.body),
            (Shape::Message(_), None) => self.out.extend_from_slice(&self.body),
            // Each entry went into the body under the map's number.
            (Shape::Map { .. }, _) => self.out.extend_from_slice(&self.body),
        }
        Ok(())
    }
}

fn write_field<T: Serialize + ?Sized>(
    schema: &'static Schema,
    number: u32,
    field: &Field,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if field.inline {
        return Err(Error::new("an inlined field has no protobuf here"));
    }
    value.serialize(FieldSer {
        schema,
        kind: field.kind,
        number: Some(number),
        out,
    })
}

impl ser::SerializeStruct for StructSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeMap for StructSer<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match serde_json::to_value(key) {
            Ok(serde_json::Value::String(k)) => {
                self.key = Some(k);
                Ok(())
            }
            _ => Err(Error::new("a map key that is not a string")),
        }
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error::new("a map value without its key"))?;
        self.field(&key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}
