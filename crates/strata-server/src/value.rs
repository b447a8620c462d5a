//! The stored value format: a small versioned header, then the payload.
//!
//! ```text
//! byte 0      format version (1)
//! byte 1      bits 0..=3: value type (0 string, 1 hash, 2 list, 3 set, 4 zset, 5 stream); bit 7: has expiry; bits 4..=6: zero
//! bytes 2..10 expiry, absolute Unix time in milliseconds, u64 little-endian (only with bit 7)
//! rest        payload
//! ```
//!
//! Invariants: `decode(encode(t, e, p))` gives back `(t, e, p)`; decoding untrusted bytes never
//! panics and rejects unknown versions and flag bits. Expiry is stored with the value, so a key
//! and its TTL change in one engine write.
//! Depends on nothing else in the crate.

use bytes::Bytes;

/// Current header version.
pub const VERSION: u8 = 1;
const HAS_EXPIRY: u8 = 0x80;
const TYPE_MASK: u8 = 0x0f;
/// Header bytes without and with an expiry.
pub const HEADER_LEN: usize = 2;
pub const HEADER_LEN_EXPIRY: usize = 10;

/// The type of a stored value. A string's payload is its bytes; a collection's payload is its
/// metadata record (see `collections::meta`), its elements live in sub-keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    String = 0,
    Hash = 1,
    List = 2,
    Set = 3,
    ZSet = 4,
    Stream = 5,
}

impl ValueType {
    fn from_bits(b: u8) -> Option<ValueType> {
        match b {
            0 => Some(ValueType::String),
            1 => Some(ValueType::Hash),
            2 => Some(ValueType::List),
            3 => Some(ValueType::Set),
            4 => Some(ValueType::ZSet),
            5 => Some(ValueType::Stream),
            _ => None,
        }
    }

    /// The name `TYPE` reports.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::String => "string",
            ValueType::Hash => "hash",
            ValueType::List => "list",
            ValueType::Set => "set",
            ValueType::ZSet => "zset",
            ValueType::Stream => "stream",
        }
    }

    /// Whether values of this type keep their elements in sub-keys.
    pub fn is_collection(self) -> bool {
        self != ValueType::String
    }
}

/// A value read from the engine, header decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `None` for a type this build does not know (reported as WRONGTYPE).
    pub vtype: Option<ValueType>,
    /// Absolute expiry in Unix milliseconds.
    pub expire_at: Option<u64>,
    pub payload: Bytes,
}

/// Why stored bytes could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("undecodable stored value: {0}")]
pub struct DecodeError(pub(crate) &'static str);

/// Encodes a value.
pub fn encode(vtype: ValueType, expire_at: Option<u64>, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_LEN_EXPIRY + payload.len());
    v.push(VERSION);
    match expire_at {
        Some(at) => {
            v.push(vtype as u8 | HAS_EXPIRY);
            v.extend_from_slice(&at.to_le_bytes());
        }
        None => v.push(vtype as u8),
    }
    v.extend_from_slice(payload);
    v
}

/// Decodes only the expiry of a stored value (the compaction filter's fast path).
pub fn expiry_of(raw: &[u8]) -> Result<Option<u64>, DecodeError> {
    let (_, at, _) = header(raw)?;
    Ok(at)
}

fn header(raw: &[u8]) -> Result<(u8, Option<u64>, usize), DecodeError> {
    if raw.len() < HEADER_LEN {
        return Err(DecodeError("shorter than its header"));
    }
    if raw[0] != VERSION {
        return Err(DecodeError("unknown value format version"));
    }
    let flags = raw[1];
    if flags & !(HAS_EXPIRY | TYPE_MASK) != 0 {
        return Err(DecodeError("unknown header flags"));
    }
    if flags & HAS_EXPIRY != 0 {
        let Some(b) = raw.get(2..10) else {
            return Err(DecodeError("truncated expiry"));
        };
        let at = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        Ok((flags & TYPE_MASK, Some(at), HEADER_LEN_EXPIRY))
    } else {
        Ok((flags & TYPE_MASK, None, HEADER_LEN))
    }
}

/// Decodes the type and expiry of a stored value without copying it.
pub fn peek(raw: &[u8]) -> Result<(Option<ValueType>, Option<u64>), DecodeError> {
    let (t, at, _) = header(raw)?;
    Ok((ValueType::from_bits(t), at))
}

/// Decodes a stored value; the payload is a zero-copy slice of `raw`.
pub fn decode(raw: Bytes) -> Result<Entry, DecodeError> {
    let (t, expire_at, off) = header(&raw)?;
    Ok(Entry {
        vtype: ValueType::from_bits(t),
        expire_at,
        payload: raw.slice(off..),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for exp in [None, Some(0), Some(1_700_000_000_000), Some(u64::MAX)] {
            for p in [&b""[..], b"hello", &[0xff; 300]] {
                let e = decode(Bytes::from(encode(ValueType::String, exp, p))).unwrap();
                assert_eq!(e.vtype, Some(ValueType::String));
                assert_eq!(e.expire_at, exp);
                assert_eq!(&e.payload[..], p);
            }
        }
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode(Bytes::from_static(b"")).is_err());
        assert!(decode(Bytes::from_static(b"\x01")).is_err());
        assert!(decode(Bytes::from_static(b"\x02\x00")).is_err());
        assert!(decode(Bytes::from_static(b"\x01\x40")).is_err());
        assert!(decode(Bytes::from_static(b"\x01\x80\x00")).is_err());
        let unknown = decode(Bytes::from_static(b"\x01\x0fx")).unwrap();
        assert_eq!(unknown.vtype, None);
    }
}
