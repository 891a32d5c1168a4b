//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), decoded
//! straight into the k8s-openapi types the rest of kubesched uses.
//!
//! kube-scheduler's clients ask for protobuf: a pod is about a third of its JSON size
//! and cheaper for the API server to write. The k8s-pb crate has protobuf types, but
//! they are a second set of types to convert from, and its 0.9 release is generated
//! from Kubernetes v1.35: a v1.36 pod's `spec.schedulingGroup` would be dropped without
//! a word. So kubesched reads the wire itself: a schema of field numbers and JSON names
//! (`schema`, generated from the Go types of the Kubernetes version the k8s-openapi
//! feature names) drives a serde `Deserializer` (`de`) that shows each message to
//! the k8s-openapi `Deserialize` impls as the JSON object it stands for; a serde
//! `Serializer` (`ser`) writes what the runtime sends back the same way.
//!
//! An object on the wire is enveloped: the bytes `k8s\0`, then a `runtime.Unknown`
//! holding the object's apiVersion and kind and its own bytes. A list is one such
//! object; a watch is a stream of frames, each a 4-byte big-endian length and a
//! `metav1.WatchEvent` whose object is enveloped.

mod de;
mod schema;
mod ser;
mod wire;

use k8s_openapi::serde::de::DeserializeOwned;
use kube::core::Status;

pub(crate) use schema::{MessageId, Schema};

/// The media type of Kubernetes' protobuf.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The bytes every enveloped object starts with.
const MAGIC: &[u8] = b"k8s\0";

/// What went wrong decoding protobuf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("protobuf: {0}")]
pub struct Error(String);

impl Error {
    pub(crate) fn new(m: impl Into<String>) -> Error {
        Error(m.into())
    }

    fn custom_display(e: impl std::fmt::Display) -> Error {
        Error(e.to_string())
    }
}

impl serde::de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Error {
        Error(msg.to_string())
    }
}

/// An enveloped object: its `apiVersion`, `kind` and bytes.
pub(crate) struct Unknown<'a> {
    pub(crate) api_version: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) raw: &'a [u8],
}

/// Takes an object out of its envelope.
pub(crate) fn unwrap(bytes: &[u8]) -> Result<Unknown<'_>, Error> {
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| Error::new("not a Kubernetes protobuf object (no k8s\\0 prefix)"))?;
    let mut out = Unknown {
        api_version: "",
        kind: "",
        raw: &[],
    };
    for f in wire::Fields::new(body) {
        match f? {
            (1, wire::Value::Bytes(type_meta)) => {
                for g in wire::Fields::new(type_meta) {
                    match g? {
                        (1, wire::Value::Bytes(v)) => out.api_version = utf8(v)?,
                        (2, wire::Value::Bytes(v)) => out.kind = utf8(v)?,
                        _ => {}
                    }
                }
            }
            (2, wire::Value::Bytes(raw)) => out.raw = raw,
            (3, wire::Value::Bytes(encoding)) if !encoding.is_empty() => {
                return Err(Error::new(format!(
                    "content encoding {:?} is not supported",
                    String::from_utf8_lossy(encoding)
                )));
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Puts an object's bytes in an envelope of `apiVersion` and `kind`.
pub(crate) fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    wire::put_bytes(&mut type_meta, 1, api_version.as_bytes());
    wire::put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    wire::put_bytes(&mut out, 1, &type_meta);
    wire::put_bytes(&mut out, 2, raw);
    out
}

fn utf8(b: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(b).map_err(|_| Error::new("invalid UTF-8"))
}

/// The message of `K`, when the schema has it (the built-in kinds; not CRDs).
pub(crate) fn message_of<K: kube::Resource<DynamicType = ()>>() -> Option<MessageId> {
    Schema::get().of_kind(&K::api_version(&()), &K::kind(&()))
}

fn message_or_error<K: kube::Resource<DynamicType = ()>>() -> Result<MessageId, Error> {
    message_of::<K>().ok_or_else(|| {
        Error::new(format!(
            "{} {} has no protobuf schema here",
            K::api_version(&()),
            K::kind(&())
        ))
    })
}

/// Encodes `object` as the API server takes it in protobuf: enveloped, with its
/// apiVersion and kind. An error (a kind or a field the schema does not have) means
/// the object should be sent as JSON.
pub fn encode<K>(object: &K) -> Result<Vec<u8>, Error>
where
    K: kube::Resource<DynamicType = ()> + serde::Serialize,
{
    let id = message_or_error::<K>()?;
    let raw = ser::to_message(id, object)?;
    Ok(envelope(&K::api_version(&()), &K::kind(&()), &raw))
}

/// Decodes one enveloped object of `K`.
pub fn decode_of<K>(bytes: &[u8]) -> Result<K, Error>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned,
{
    decode(message_or_error::<K>()?, bytes)
}

/// Decodes a list of `K` as the API server sends it (`application/vnd.kubernetes.protobuf`):
/// the list's resourceVersion and its items.
pub fn decode_list_of<K>(bytes: &[u8]) -> Result<(String, Vec<K>), Error>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned,
{
    decode_list(message_or_error::<K>()?, bytes)
}

/// Decodes one frame of a protobuf watch of `K` (the frame without its length).
pub fn decode_watch_event_of<K>(frame: &[u8]) -> Result<WatchEvent<K>, Error>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned,
{
    decode_watch_event(message_or_error::<K>()?, frame)
}

/// Decodes an enveloped object of message `id`.
pub(crate) fn decode<T: DeserializeOwned>(id: MessageId, bytes: &[u8]) -> Result<T, Error> {
    de::from_message(id, unwrap(bytes)?.raw)
}

/// Decodes an enveloped `metav1.Status` (an error's body, a watch's ERROR event).
pub(crate) fn decode_status(bytes: &[u8]) -> Result<Status, Error> {
    let status = Schema::get()
        .find("meta.v1.Status")
        .ok_or_else(|| Error::new("the schema has no meta.v1.Status"))?;
    decode(status, bytes)
}

/// Decodes an enveloped list of `K` (message `item`): its resourceVersion and items.
pub(crate) fn decode_list<K: DeserializeOwned>(
    item: MessageId,
    bytes: &[u8],
) -> Result<(String, Vec<K>), Error> {
    let list = unwrap(bytes)?;
    let mut resource_version = String::new();
    let mut items = Vec::new();
    for f in wire::Fields::new(list.raw) {
        match f? {
            (1, wire::Value::Bytes(meta)) => {
                for g in wire::Fields::new(meta) {
                    if let (2, wire::Value::Bytes(rv)) = g? {
                        resource_version = utf8(rv)?.to_string();
                    }
                }
            }
            (2, wire::Value::Bytes(object)) => items.push(de::from_message(item, object)?),
            _ => {}
        }
    }
    Ok((resource_version, items))
}

/// One event of a watch, whichever its encoding.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // moved once, from the decoder to its handler
pub enum WatchEvent<K> {
    /// The object was created (or was there when the watch began).
    Added(K),
    /// The object changed.
    Modified(K),
    /// The object was deleted (its last state).
    Deleted(K),
    /// A bookmark: the resourceVersion the watch has reached.
    Bookmark(String),
    /// The watch failed (410 Gone when its resourceVersion is too old).
    Error(Status),
}

/// Decodes one frame of a protobuf watch of `K` (message `item`).
pub(crate) fn decode_watch_event<K: DeserializeOwned + kube::Resource>(
    item: MessageId,
    frame: &[u8],
) -> Result<WatchEvent<K>, Error> {
    // The event itself has no envelope; tolerate one.
    let frame = match frame.strip_prefix(MAGIC) {
        Some(_) => unwrap(frame)?.raw,
        None => frame,
    };
    let (mut kind, mut object) = ("", &[][..]);
    for f in wire::Fields::new(frame) {
        match f? {
            (1, wire::Value::Bytes(t)) => kind = utf8(t)?,
            (2, wire::Value::Bytes(raw_extension)) => {
                for g in wire::Fields::new(raw_extension) {
                    if let (1, wire::Value::Bytes(raw)) = g? {
                        object = raw;
                    }
                }
            }
            _ => {}
        }
    }
    if kind == "ERROR" {
        return Ok(WatchEvent::Error(decode_status(object)?));
    }
    let object: K = decode(item, object)?;
    Ok(match kind {
        "ADDED" => WatchEvent::Added(object),
        "MODIFIED" => WatchEvent::Modified(object),
        "DELETED" => WatchEvent::Deleted(object),
        "BOOKMARK" => {
            WatchEvent::Bookmark(object.meta().resource_version.clone().unwrap_or_default())
        }
        other => return Err(Error::new(format!("unknown watch event type {other:?}"))),
    })
}

/// Splits a watch stream into events as its bytes arrive: protobuf frames, or (from
/// a server that answered in JSON) lines.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    buffer: Vec<u8>,
}

impl Frames {
    /// Adds bytes read off the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole frame, if one has arrived.
    pub(crate) fn next_frame(&mut self) -> Option<Vec<u8>> {
        let len = u32::from_be_bytes(self.buffer.get(..4)?.try_into().ok()?) as usize;
        if self.buffer.len() < 4 + len {
            return None;
        }
        let frame = self.buffer[4..4 + len].to_vec();
        self.buffer.drain(..4 + len);
        Some(frame)
    }

    /// The next whole line (a JSON event), without its newline.
    pub(crate) fn next_line(&mut self) -> Option<Vec<u8>> {
        let end = self.buffer.iter().position(|&b| b == b'\n')?;
        let line = self.buffer[..end].to_vec();
        self.buffer.drain(..=end);
        Some(line)
    }

    /// Whether bytes of an unfinished frame are left.
    pub(crate) fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod};

    use super::wire::{put_bytes, put_varint};
    use super::*;

    fn string(number: u32, s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        put_bytes(&mut out, number, s.as_bytes());
        out
    }

    fn message(number: u32, fields: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        put_bytes(&mut out, number, &fields.concat());
        out
    }

    /// A pod named `name` with an empty nodeName (as gogo writes it) and a
    /// toleration.
    fn pod(name: &str) -> Vec<u8> {
        let mut seconds = Vec::new();
        put_varint(&mut seconds, 1 << 3);
        put_varint(&mut seconds, 1_767_323_045);
        let metadata = message(
            1,
            &[
                string(1, name),
                string(6, "42"),
                message(11, &[string(1, "app"), string(2, "web")]),
                message(8, &[seconds]),
            ],
        );
        let spec = message(
            2,
            &[
                string(10, ""),
                message(22, &[string(1, "gpu"), string(2, "Exists")]),
                message(22, &[string(2, "Exists")]),
            ],
        );
        [metadata, spec].concat()
    }

    #[test]
    fn a_list_decodes_with_its_resource_version_and_json_rules() {
        let list = [message(1, &[string(2, "7")]), {
            let mut out = Vec::new();
            put_bytes(&mut out, 2, &pod("a"));
            put_bytes(&mut out, 2, &pod("b"));
            out
        }]
        .concat();
        let bytes = envelope("v1", "PodList", &list);
        let (rv, pods): (String, Vec<Pod>) = decode_list_of(&bytes).expect("decodes");
        assert_eq!(rv, "7");
        assert_eq!(pods.len(), 2);
        let p = &pods[1];
        assert_eq!(p.metadata.name.as_deref(), Some("b"));
        assert_eq!(
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(String::as_str),
            Some("web")
        );
        let created = p.metadata.creation_timestamp.as_ref().expect("a time");
        assert_eq!(created.0.to_string(), "2026-01-02T03:04:05Z");
        let spec = p.spec.as_ref().expect("spec");
        assert_eq!(
            spec.node_name, None,
            "an empty nodeName is no nodeName, as in the JSON"
        );
        let tolerations = spec.tolerations.as_ref().expect("tolerations");
        assert_eq!(tolerations.len(), 2, "a repeated field tagged opt");
        assert_eq!(tolerations[1].key, None);
    }

    #[test]
    fn an_empty_value_behind_a_pointer_is_kept() {
        // PersistentVolumeClaim.spec.storageClassName is a *string: "" means no class.
        let claim = [message(1, &[string(1, "c")]), message(2, &[string(5, "")])].concat();
        let bytes = envelope("v1", "PersistentVolumeClaimList", &message(2, &[claim]));
        let (_, claims): (String, Vec<PersistentVolumeClaim>) =
            decode_list_of(&bytes).expect("decodes");
        let spec = claims[0].spec.as_ref().expect("spec");
        assert_eq!(spec.storage_class_name.as_deref(), Some(""));
    }

    #[test]
    fn watch_frames_split_and_decode() {
        let event = |kind: &str, object: &[u8]| {
            let raw = envelope("v1", "Namespace", object);
            [
                string(1, kind),
                message(
                    2,
                    &[{
                        let mut out = Vec::new();
                        put_bytes(&mut out, 1, &raw);
                        out
                    }],
                ),
            ]
            .concat()
        };
        let ns = message(1, &[string(1, "team"), string(6, "9")]);
        let mut stream = Vec::new();
        for frame in [event("ADDED", &ns), event("BOOKMARK", &ns)] {
            stream.extend_from_slice(&(frame.len() as u32).to_be_bytes());
            stream.extend_from_slice(&frame);
        }
        let mut frames = Frames::default();
        let (first, rest) = stream.split_at(5);
        frames.push(first);
        assert!(frames.next_frame().is_none(), "not whole yet");
        frames.push(rest);
        let a = frames.next_frame().expect("first");
        let b = frames.next_frame().expect("second");
        assert!(frames.is_empty());
        match decode_watch_event_of::<Namespace>(&a).expect("decodes") {
            WatchEvent::Added(n) => assert_eq!(n.metadata.name.as_deref(), Some("team")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            decode_watch_event_of::<Namespace>(&b).expect("decodes"),
            WatchEvent::Bookmark("9".into())
        );
    }

    #[test]
    fn what_the_runtime_writes_round_trips() {
        use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
        use k8s_openapi::api::core::v1::{Binding, ObjectReference};
        use k8s_openapi::api::events::v1::{Event, EventSeries};
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

        fn round_trip<K>(object: K)
        where
            K: kube::Resource<DynamicType = ()>
                + serde::Serialize
                + DeserializeOwned
                + PartialEq
                + std::fmt::Debug,
        {
            let bytes = encode(&object).expect("encodes");
            let back: K = decode_of(&bytes).expect("decodes");
            assert_eq!(back, object);
        }
        let meta = |name: &str| ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some("u-1".into()),
            ..Default::default()
        };
        round_trip(Binding {
            metadata: meta("p"),
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some("n".into()),
                ..Default::default()
            },
        });
        let at: jiff::Timestamp = "2026-01-02T03:04:05.123456Z".parse().expect("time");
        round_trip(Lease {
            metadata: meta("kube-scheduler"),
            spec: Some(LeaseSpec {
                holder_identity: Some("me".into()),
                lease_duration_seconds: Some(15),
                lease_transitions: Some(0),
                renew_time: Some(MicroTime(at)),
                ..Default::default()
            }),
        });
        round_trip(Event {
            metadata: meta("p.1"),
            event_time: Some(MicroTime(at)),
            reason: Some("Scheduled".into()),
            note: Some("Successfully assigned ns/p to n".into()),
            type_: Some("Normal".into()),
            action: Some("Binding".into()),
            reporting_controller: Some("default-scheduler".into()),
            reporting_instance: Some("default-scheduler-host".into()),
            regarding: Some(ObjectReference {
                kind: Some("Pod".into()),
                name: Some("p".into()),
                ..Default::default()
            }),
            series: Some(EventSeries {
                count: 2,
                last_observed_time: MicroTime(at),
            }),
            ..Default::default()
        });
    }

    #[test]
    fn a_field_the_schema_lacks_is_an_error() {
        let value = serde_json::json!({"metadata": {"name": "x"}, "spec": {"nope": 1}});
        let id = Schema::get().of_kind("v1", "Namespace").expect("schema");
        assert!(ser::to_message(id, &value).is_err());
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(decode_list_of::<Pod>(b"{\"kind\":\"PodList\"}").is_err());
        let truncated = envelope("v1", "PodList", &message(2, &[pod("a")]));
        for end in 0..truncated.len() {
            let _ = decode_list_of::<Pod>(&truncated[..end]);
        }
        let mut lying = envelope("v1", "PodList", &[]);
        lying.extend_from_slice(&[0x12, 0xff, 0xff, 0xff, 0x0f]);
        assert!(decode_list_of::<Pod>(&lying).is_err());
    }
}
