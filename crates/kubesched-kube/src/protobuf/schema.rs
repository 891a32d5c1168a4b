//! The message schema the decoder follows: each message's fields by number, with the
//! JSON name the k8s-openapi types know, the kind of value, and whether an empty value
//! is kept. Read once from `schema.txt`, which `scripts/protobuf-schema.py` writes
//! from the Go types of k8s.io/api and k8s.io/apimachinery.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The index of a message in the [`Schema`].
pub(crate) type MessageId = u16;

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Bool,
    /// A signed varint (int32, int64).
    Int,
    /// An unsigned varint.
    Uint,
    Double,
    Float,
    /// A signed integer written as eight bytes.
    Fixed64,
    /// Bytes, which the JSON gives as base64.
    Bytes,
    Message(MessageId),
    /// A map: its entries are messages of key (1) and value (2).
    Map(Scalar, Scalar),
}

/// A map's key or value: a scalar kind, or a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    String,
    Bytes,
    Message(MessageId),
}

/// Messages whose JSON is not an object of their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// `metav1.Time`: seconds (1); RFC 3339 to the second, `null` when zero.
    Time,
    /// `metav1.MicroTime`: seconds (1) and nanos (2); RFC 3339 to the microsecond.
    MicroTime,
    /// `metav1.Duration`: nanoseconds (1); Go's duration string.
    Duration,
    /// `resource.Quantity`: its string (1).
    Quantity,
    /// `intstr.IntOrString`: type (1), intVal (2), strVal (3).
    IntOrString,
    /// `runtime.RawExtension` and `metav1.FieldsV1`: JSON bytes (1).
    RawJson,
}

#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) repeated: bool,
    /// Whether an empty value (`""`, 0, false) is kept: the Go field is a pointer, or
    /// its JSON tag has no omitempty. Otherwise it is left out, as the JSON leaves it.
    pub(crate) keep_empty: bool,
    /// An embedded message whose fields the JSON gives as its parent's.
    pub(crate) inline: bool,
}

#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) special: Option<Special>,
    /// Fields by number (`None` for a number this schema does not know).
    by_number: Vec<Option<Field>>,
}

impl Message {
    /// The field with this number, if the schema knows it.
    pub(crate) fn field(&self, number: u32) -> Option<&Field> {
        self.by_number.get(number as usize).and_then(Option::as_ref)
    }

    /// The field whose JSON name is `name`, and its number.
    pub(crate) fn field_named(&self, name: &str) -> Option<(u32, &Field)> {
        self.by_number
            .iter()
            .enumerate()
            .find_map(|(n, f)| f.as_ref().filter(|f| f.name == name).map(|f| (n as u32, f)))
    }
}

/// Every message the decoder knows.
#[derive(Debug)]
pub(crate) struct Schema {
    messages: Vec<Message>,
    by_name: HashMap<&'static str, MessageId>,
}

impl Schema {
    /// The schema of `schema.txt`, read on first use.
    pub(crate) fn get() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            Schema::parse(include_str!("schema.txt")).expect("schema.txt is well-formed")
        })
    }

    pub(crate) fn message(&self, id: MessageId) -> &Message {
        &self.messages[usize::from(id)]
    }

    /// The message called `name` (`core.v1.Pod`).
    pub(crate) fn find(&self, name: &str) -> Option<MessageId> {
        self.by_name.get(name).copied()
    }

    /// The message of an API kind: `apiVersion` (`v1`, `apps/v1`) and `kind`.
    pub(crate) fn of_kind(&self, api_version: &str, kind: &str) -> Option<MessageId> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let package = match group {
            "" => "core",
            g => g.strip_suffix(".k8s.io").unwrap_or(g),
        };
        self.find(&format!("{package}.{version}.{kind}"))
    }

    fn parse(text: &'static str) -> Result<Schema, String> {
        let blocks: Vec<(&'static str, Vec<&'static str>)> = {
            let mut blocks = Vec::new();
            for line in text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
            {
                if let Some(name) = line.strip_prefix("message ") {
                    blocks.push((name, Vec::new()));
                } else {
                    let Some((_, fields)) = blocks.last_mut() else {
                        return Err(format!("a field before any message: {line}"));
                    };
                    fields.push(line);
                }
            }
            blocks
        };
        let by_name: HashMap<&'static str, MessageId> = blocks
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (*name, i as MessageId))
            .collect();
        let scalar = |t: &str| -> Result<Scalar, String> {
            Ok(match t {
                "string" => Scalar::String,
                "bytes" => Scalar::Bytes,
                m => Scalar::Message(*by_name.get(m).ok_or(format!("unknown message {m}"))?),
            })
        };
        let mut messages = Vec::with_capacity(blocks.len());
        for (name, lines) in blocks {
            let mut by_number: Vec<Option<Field>> = Vec::new();
            for line in lines {
                let parts: Vec<&'static str> = line.split(' ').collect();
                let [number, field_name, flags, kind] = parts[..] else {
                    return Err(format!("{name}: bad field line {line:?}"));
                };
                let number: usize = number
                    .parse()
                    .map_err(|_| format!("{name}: bad field number in {line:?}"))?;
                let kind = match kind {
                    "string" => Kind::String,
                    "bool" => Kind::Bool,
                    "int" => Kind::Int,
                    "uint" => Kind::Uint,
                    "double" => Kind::Double,
                    "float" => Kind::Float,
                    "fixed64" => Kind::Fixed64,
                    "bytes" => Kind::Bytes,
                    k => match k.strip_prefix("map:") {
                        Some(kv) => {
                            let (k, v) = kv.split_once(':').ok_or(format!("bad map {line:?}"))?;
                            Kind::Map(scalar(k)?, scalar(v)?)
                        }
                        None => Kind::Message(
                            *by_name
                                .get(k)
                                .ok_or(format!("{name}: unknown message {k}"))?,
                        ),
                    },
                };
                if by_number.len() <= number {
                    by_number.resize_with(number + 1, || None);
                }
                by_number[number] = Some(Field {
                    name: field_name,
                    kind,
                    repeated: flags.contains('r'),
                    keep_empty: flags.contains('z'),
                    inline: flags.contains('i'),
                });
            }
            let special = match name {
                "meta.v1.Time" => Some(Special::Time),
                "meta.v1.MicroTime" => Some(Special::MicroTime),
                "meta.v1.Duration" => Some(Special::Duration),
                "resource.Quantity" => Some(Special::Quantity),
                "intstr.IntOrString" => Some(Special::IntOrString),
                "runtime.RawExtension" | "meta.v1.FieldsV1" => Some(Special::RawJson),
                _ => None,
            };
            messages.push(Message { special, by_number });
        }
        Ok(Schema { messages, by_name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_parses_and_knows_the_pod() {
        let s = Schema::get();
        let pod = s.of_kind("v1", "Pod").expect("core.v1.Pod");
        let spec = s.message(pod).field(2).expect("spec");
        assert_eq!(spec.name, "spec");
        let Kind::Message(spec) = spec.kind else {
            panic!("spec is a message")
        };
        let tolerations = s.message(spec).field(22).expect("tolerations");
        assert!(tolerations.repeated, "tagged opt, but a slice");
        assert!(!s.message(spec).field(10).expect("nodeName").keep_empty);
        assert!(s.of_kind("apps/v1", "ReplicaSet").is_some());
        assert!(s.of_kind("storage.k8s.io/v1", "CSINode").is_some());
        assert!(
            s.of_kind("scheduling.x-k8s.io/v1alpha1", "PodGroup")
                .is_none()
        );
    }
}
