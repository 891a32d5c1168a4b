//! The protobuf wire format, as far as Kubernetes objects use it: varints, fixed
//! 64- and 32-bit values and length-delimited bytes, each after a tag of field number
//! and wire type.

use super::Error;

/// A field's value as it lies on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl Value<'_> {
    /// Whether this is the empty value of its type (0, false, `""`, no bytes).
    pub(crate) fn is_empty(&self) -> bool {
        match *self {
            Value::Varint(v) | Value::Fixed64(v) => v == 0,
            Value::Fixed32(v) => v == 0,
            Value::Bytes(b) => b.is_empty(),
        }
    }
}

/// Reads the fields of one message, in the order written.
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Fields<'a> {
        Fields { rest: bytes }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        Some(read_field(&mut self.rest))
    }
}

fn read_field<'a>(rest: &mut &'a [u8]) -> Result<(u32, Value<'a>), Error> {
    let tag = varint(rest)?;
    let number = u32::try_from(tag >> 3).map_err(|_| Error::new("field number out of range"))?;
    let value = match tag & 7 {
        0 => Value::Varint(varint(rest)?),
        1 => Value::Fixed64(u64::from_le_bytes(
            take(rest, 8)?.try_into().unwrap_or([0; 8]),
        )),
        2 => {
            let len =
                usize::try_from(varint(rest)?).map_err(|_| Error::new("length out of range"))?;
            Value::Bytes(take(rest, len)?)
        }
        5 => Value::Fixed32(u32::from_le_bytes(
            take(rest, 4)?.try_into().unwrap_or([0; 4]),
        )),
        w => return Err(Error::new(format!("unsupported wire type {w}"))),
    };
    Ok((number, value))
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8], Error> {
    if rest.len() < n {
        return Err(Error::new("message ends inside a field"));
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

/// Reads a varint off the front of `rest`.
pub(crate) fn varint(rest: &mut &[u8]) -> Result<u64, Error> {
    let mut v: u64 = 0;
    for (i, &b) in rest.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *rest = &rest[i + 1..];
            return Ok(v);
        }
    }
    Err(Error::new("bad varint"))
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(out, u64::from(number) << 3 | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_fields_read_back() {
        let mut out = Vec::new();
        for v in [0, 1, 127, 128, 300, u64::MAX, (-5i64) as u64] {
            out.clear();
            put_varint(&mut out, v);
            let mut s = &out[..];
            assert_eq!(varint(&mut s).unwrap(), v);
            assert!(s.is_empty());
        }
        let mut msg = Vec::new();
        put_bytes(&mut msg, 2, b"abc");
        put_varint(&mut msg, 3 << 3);
        put_varint(&mut msg, 7);
        let fields: Vec<_> = Fields::new(&msg).collect::<Result<_, _>>().unwrap();
        assert!(matches!(fields[0], (2, Value::Bytes(b"abc"))));
        assert!(matches!(fields[1], (3, Value::Varint(7))));
        assert!(Fields::new(&msg[..msg.len() - 3]).any(|f| f.is_err()));
    }
}
