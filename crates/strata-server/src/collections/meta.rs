//! The metadata record of a collection: the payload of its database-0 value (after the
//! `value` header, which holds the type and expiry).
//!
//! ```text
//! byte 0        metadata encoding version (1)
//! bytes 1..9    collection version, u64 big-endian (the sub-key prefix; see `subkey`)
//! bytes 9..17   size: number of elements, u64 little-endian (> 0)
//! lists only:
//! bytes 17..25  head: index of the first element, u64 little-endian
//! bytes 25..33  tail: index one past the last element, u64 little-endian (tail - head = size)
//! streams only (size may be 0: a stream outlives its entries, as in redis):
//! bytes 17..33  last generated ID (ms u64 LE, seq u64 LE)
//! bytes 33..49  first entry's ID (0-0 when empty)
//! bytes 49..65  largest ID ever deleted by XDEL
//! bytes 65..73  entries ever added, u64 LE
//! bytes 73..81  consumer groups, u64 LE
//! bytes 81..89  tail node: number of the node new entries join, u64 LE (0: none yet)
//! bytes 89..97  entries appended to the tail node (deleted ones included), u64 LE
//! bytes 97..105 approximate bytes of the tail node, u64 LE
//! ```
//!
//! A stream's "nodes" are redis' radix-tree nodes, emulated: redis starts a node every 100
//! entries or ~4 KB, and approximate trimming (`~`) removes whole nodes only; each entry records
//! its node (see `stream`) so `~` trims what redis would.
//!
//! Invariants: `decode(t, encode(t, m)) == m`; decoding rejects wrong lengths, unknown encoding
//! versions, a zero size and list bounds that disagree with the size, never panicking.
//! Versions come from [`next_version`]: strictly increasing within a process and, because they
//! start from the wall clock in microseconds, larger than any version issued by an earlier run
//! (unless the clock steps back), so a re-created key never sees its predecessor's sub-keys.
//! Depends on `value` only; must not depend on the engine or on commands (pure encoding).

use std::sync::atomic::{AtomicU64, Ordering};

use super::stream::StreamId;
use crate::value::{DecodeError, ValueType};

/// Current metadata encoding version.
pub const META_VERSION: u8 = 1;
/// Index of the first element pushed into an empty list (so pushes go both ways).
pub const LIST_START: u64 = 1 << 63;

/// A collection's metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub version: u64,
    pub size: u64,
    /// Lists only (0 for other types).
    pub head: u64,
    /// Lists only (0 for other types).
    pub tail: u64,
    /// Streams only (zero for other types).
    pub stream: StreamMeta,
}

/// The stream-wide state of a stream (its length is `Meta::size`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamMeta {
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub groups: u64,
    /// The tail node (0: none yet), its entries (deleted ones included) and approximate bytes.
    pub node: u64,
    pub node_entries: u64,
    pub node_bytes: u64,
}

impl Meta {
    /// Metadata of a new, still empty collection with a fresh version.
    pub fn fresh(vtype: ValueType) -> Meta {
        let (head, tail) = if vtype == ValueType::List {
            (LIST_START, LIST_START)
        } else {
            (0, 0)
        };
        Meta {
            version: next_version(),
            size: 0,
            head,
            tail,
            stream: StreamMeta::default(),
        }
    }
}

/// Encodes metadata (the value payload).
pub fn encode(vtype: ValueType, m: &Meta) -> Vec<u8> {
    let mut v = Vec::with_capacity(33);
    v.push(META_VERSION);
    v.extend_from_slice(&m.version.to_be_bytes());
    v.extend_from_slice(&m.size.to_le_bytes());
    if vtype == ValueType::List {
        v.extend_from_slice(&m.head.to_le_bytes());
        v.extend_from_slice(&m.tail.to_le_bytes());
    }
    if vtype == ValueType::Stream {
        let s = &m.stream;
        for id in [s.last_id, s.first_id, s.max_deleted] {
            v.extend_from_slice(&id.ms.to_le_bytes());
            v.extend_from_slice(&id.seq.to_le_bytes());
        }
        for n in [
            s.entries_added,
            s.groups,
            s.node,
            s.node_entries,
            s.node_bytes,
        ] {
            v.extend_from_slice(&n.to_le_bytes());
        }
    }
    v
}

fn u64_at(b: &[u8], at: usize, be: bool) -> Result<u64, DecodeError> {
    let s: [u8; 8] = b
        .get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .ok_or(DecodeError("truncated collection metadata"))?;
    Ok(if be {
        u64::from_be_bytes(s)
    } else {
        u64::from_le_bytes(s)
    })
}

/// Decodes the metadata payload of a collection of type `vtype`.
pub fn decode(vtype: ValueType, b: &[u8]) -> Result<Meta, DecodeError> {
    if !vtype.is_collection() {
        return Err(DecodeError("not a collection"));
    }
    let want = match vtype {
        ValueType::List => 33,
        ValueType::Stream => 105,
        _ => 17,
    };
    if b.len() != want {
        return Err(DecodeError("collection metadata of the wrong length"));
    }
    if b[0] != META_VERSION {
        return Err(DecodeError("unknown collection metadata version"));
    }
    let version = u64_at(b, 1, true)?;
    let size = u64_at(b, 9, false)?;
    if size == 0 && vtype != ValueType::Stream {
        return Err(DecodeError("collection metadata with size 0"));
    }
    let (head, tail) = if vtype == ValueType::List {
        let (h, t) = (u64_at(b, 17, false)?, u64_at(b, 25, false)?);
        if t.checked_sub(h) != Some(size) {
            return Err(DecodeError("list bounds disagree with its size"));
        }
        (h, t)
    } else {
        (0, 0)
    };
    let mut stream = StreamMeta::default();
    if vtype == ValueType::Stream {
        let id = |at| -> Result<StreamId, DecodeError> {
            Ok(StreamId::new(
                u64_at(b, at, false)?,
                u64_at(b, at + 8, false)?,
            ))
        };
        stream = StreamMeta {
            last_id: id(17)?,
            first_id: id(33)?,
            max_deleted: id(49)?,
            entries_added: u64_at(b, 65, false)?,
            groups: u64_at(b, 73, false)?,
            node: u64_at(b, 81, false)?,
            node_entries: u64_at(b, 89, false)?,
            node_bytes: u64_at(b, 97, false)?,
        };
        if stream.entries_added < size || (size > 0 && stream.first_id > stream.last_id) {
            return Err(DecodeError("stream metadata disagrees with its length"));
        }
    }
    Ok(Meta {
        version,
        size,
        head,
        tail,
        stream,
    })
}

static LAST_VERSION: AtomicU64 = AtomicU64::new(0);

/// A collection version never issued before (see the module docs).
pub fn next_version() -> u64 {
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0);
    let mut cur = LAST_VERSION.load(Ordering::Relaxed);
    loop {
        let next = now_us.max(cur + 1);
        match LAST_VERSION.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(c) => cur = c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for t in [ValueType::Hash, ValueType::Set, ValueType::ZSet] {
            let m = Meta {
                version: 7,
                size: 3,
                head: 0,
                tail: 0,
                ..Default::default()
            };
            assert_eq!(decode(t, &encode(t, &m)).unwrap(), m);
        }
        let m = Meta {
            version: 9,
            size: 2,
            head: LIST_START - 1,
            tail: LIST_START + 1,
            ..Default::default()
        };
        assert_eq!(
            decode(ValueType::List, &encode(ValueType::List, &m)).unwrap(),
            m
        );
    }

    #[test]
    fn rejects_garbage() {
        let good = encode(
            ValueType::Hash,
            &Meta {
                version: 1,
                size: 1,
                head: 0,
                tail: 0,
                ..Default::default()
            },
        );
        assert!(decode(ValueType::Hash, &good[..16]).is_err());
        assert!(decode(ValueType::List, &good).is_err());
        assert!(decode(ValueType::String, &good).is_err());
        let mut bad = good.clone();
        bad[0] = 2;
        assert!(decode(ValueType::Hash, &bad).is_err());
        let mut zero = good.clone();
        zero[9] = 0;
        assert!(decode(ValueType::Hash, &zero).is_err());
        let list = encode(
            ValueType::List,
            &Meta {
                version: 1,
                size: 5,
                head: 10,
                tail: 11,
                ..Default::default()
            },
        );
        assert!(decode(ValueType::List, &list).is_err());
    }

    #[test]
    fn stream_metadata_round_trips_and_may_be_empty() {
        let t = ValueType::Stream;
        let mut m = Meta::fresh(t);
        assert_eq!(decode(t, &encode(t, &m)).unwrap(), m, "an empty stream");
        m.size = 2;
        m.stream = StreamMeta {
            last_id: StreamId::new(9, 1),
            first_id: StreamId::new(3, 0),
            max_deleted: StreamId::new(5, 0),
            entries_added: 4,
            groups: 1,
            node: 1,
            node_entries: 4,
            node_bytes: 200,
        };
        assert_eq!(decode(t, &encode(t, &m)).unwrap(), m);
        m.stream.entries_added = 1;
        assert!(decode(t, &encode(t, &m)).is_err(), "fewer added than held");
        assert!(decode(t, &encode(ValueType::Hash, &m)).is_err());
    }

    #[test]
    fn versions_increase() {
        let a = next_version();
        let b = next_version();
        assert!(b > a);
    }
}
