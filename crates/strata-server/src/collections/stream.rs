//! The encoding of streams: entry IDs, entries, consumer groups, the pending-entries list
//! (PEL) and consumers — each one sub-key (see `subkey`) of the stream's collection version.
//!
//! ```text
//! kind ELEM (0)      rest = ms u64 BE ‖ seq u64 BE          value = entry (below)
//! kind GROUP (2)     rest = group name                      value = group record
//! kind PEL (3)       rest = u32 BE len ‖ group ‖ ms ‖ seq   value = pending entry
//! kind CONSUMER (4)  rest = u32 BE len ‖ group ‖ consumer   value = consumer record
//!
//! entry:          node u64 LE ‖ u32 LE pairs ‖ pairs × (u32 LE len ‖ field ‖ u32 LE len ‖ value)
//! group record:   version 1 ‖ last-delivered ms u64 LE ‖ seq u64 LE ‖ entries-read i64 LE
//!                 (-1: unknown) ‖ pending u64 LE ‖ consumers u64 LE
//! pending entry:  version 1 ‖ delivery time u64 LE (Unix ms) ‖ delivery count u64 LE ‖ consumer
//! consumer:       version 1 ‖ seen time u64 LE (Unix ms) ‖ pending u64 LE
//! ```
//!
//! IDs are big-endian in keys, so the engine's byte order is ID order: a range read is one
//! ordered scan from the first ID asked for, never a load of the whole stream; the PEL of one
//! group is one contiguous, ID-ordered run, and so are its consumers (by name, as redis lists
//! them). The stream-wide state (last ID, first ID, max deleted ID, entries added, group count)
//! lives in the stream's metadata (`meta::StreamMeta`).
//!
//! Invariants: every `decode_*` inverts its `encode_*` and rejects any other byte string with
//! an error, never panicking (stored bytes are untrusted; fuzzed by `server_collection`).
//! Depends on `value` only; must not depend on the engine or on commands (pure encoding).

use super::meta::StreamMeta;
use crate::value::DecodeError;

/// A stream entry ID: milliseconds and a sequence number, ordered as a pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID, or `None` after the largest.
    pub fn incr(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_add(1)?,
                seq: 0,
            }),
        }
    }

    /// The previous ID, or `None` before the smallest.
    pub fn decr(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_sub(1)?,
                seq: u64::MAX,
            }),
        }
    }

    /// The 16 bytes that order as the ID (a sub-key's rest).
    pub fn to_key(self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.ms.to_be_bytes());
        k[8..].copy_from_slice(&self.seq.to_be_bytes());
        k
    }

    pub fn from_key(b: &[u8]) -> Result<StreamId, DecodeError> {
        if b.len() != 16 {
            return Err(DecodeError("stream ID key of the wrong length"));
        }
        Ok(StreamId {
            ms: u64_be(&b[..8]),
            seq: u64_be(&b[8..]),
        })
    }

    /// `ms-seq`, as redis prints IDs.
    pub fn to_bytes(self) -> bytes::Bytes {
        bytes::Bytes::from(format!("{}-{}", self.ms, self.seq))
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How an ID argument was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdArg {
    /// `ms-seq`, or `ms` alone (the sequence the caller chose as missing), or `-`/`+`.
    Id(StreamId),
    /// `ms-*` (XADD: the sequence is generated).
    MsAny(u64),
}

fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Parses a stream ID argument as redis does: `ms-seq`, `ms` (sequence `missing_seq`),
/// `ms-*` when `seq_any` (XADD), and `-`/`+` (smallest/largest) unless `strict`. `None` for
/// anything else (the caller answers "Invalid stream ID ...").
pub fn parse_id(a: &[u8], missing_seq: u64, strict: bool, seq_any: bool) -> Option<IdArg> {
    if a.len() > 127 {
        return None;
    }
    match a {
        b"-" if !strict => return Some(IdArg::Id(StreamId::MIN)),
        b"+" if !strict => return Some(IdArg::Id(StreamId::MAX)),
        _ => {}
    }
    match a.iter().position(|&c| c == b'-') {
        None => Some(IdArg::Id(StreamId::new(digits(a)?, missing_seq))),
        Some(dash) => {
            let ms = digits(&a[..dash])?;
            let rest = &a[dash + 1..];
            if seq_any && rest == b"*" {
                return Some(IdArg::MsAny(ms));
            }
            Some(IdArg::Id(StreamId::new(ms, digits(rest)?)))
        }
    }
}

fn u64_be(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// A little-endian field reader over untrusted bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError(what));
        }
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        Ok(h)
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn version(&mut self, what: &'static str) -> Result<(), DecodeError> {
        match self.take(1, what)? {
            [1] => Ok(()),
            _ => Err(DecodeError(what)),
        }
    }
    fn end(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DecodeError(what))
        }
    }
}

/// Entries per emulated node (redis' `stream-node-max-entries` default).
pub const NODE_MAX_ENTRIES: u64 = 100;
/// Bytes per emulated node (redis' `stream-node-max-bytes` default).
pub const NODE_MAX_BYTES: u64 = 4096;

/// The node a new entry of `payload` bytes (its fields and values) joins, as redis' append
/// decides: the tail node, unless it is full (by entries, deleted ones included, or by bytes)
/// or the stream is empty. Updates the tail node's counters in `s`.
pub fn place_entry(s: &mut StreamMeta, len: u64, payload: u64, fields: u64) -> u64 {
    if s.node == 0
        || len == 0
        || s.node_entries >= NODE_MAX_ENTRIES
        || s.node_bytes.saturating_add(payload) >= NODE_MAX_BYTES
    {
        s.node = s.node.saturating_add(1);
        s.node_entries = 0;
        // A listpack's header and master entry (the first entry's field names).
        s.node_bytes = 16 + payload / 2;
    }
    s.node_entries = s.node_entries.saturating_add(1);
    // An entry's bytes in a listpack: its strings, their headers, the ID deltas and flags.
    s.node_bytes = s
        .node_bytes
        .saturating_add(payload.saturating_add(2 * fields + 8));
    s.node
}

/// Encodes an entry of node `node` (`pairs` holds field, value, field, value, ...).
pub fn encode_entry<B: AsRef<[u8]>>(node: u64, pairs: &[B]) -> Vec<u8> {
    let n = pairs.len() / 2;
    let mut v = Vec::with_capacity(12 + pairs.iter().map(|p| 4 + p.as_ref().len()).sum::<usize>());
    v.extend_from_slice(&node.to_le_bytes());
    v.extend_from_slice(&(n as u32).to_le_bytes());
    for p in &pairs[..n * 2] {
        let p = p.as_ref();
        v.extend_from_slice(&(p.len() as u32).to_le_bytes());
        v.extend_from_slice(p);
    }
    v
}

/// Decodes an entry into its node and field, value, field, value, ...
pub fn decode_entry(b: &[u8]) -> Result<(u64, Vec<&[u8]>), DecodeError> {
    const BAD: &str = "malformed stream entry";
    let mut r = Reader(b);
    let node = r.u64(BAD)?;
    let n = r.u32(BAD)? as usize;
    // Each string takes at least its 4-byte length: a count larger than that is corrupt.
    if n.saturating_mul(8) > r.0.len() {
        return Err(DecodeError(BAD));
    }
    let mut out = Vec::with_capacity(n * 2);
    for _ in 0..n * 2 {
        let len = r.u32(BAD)? as usize;
        out.push(r.take(len, BAD)?);
    }
    r.end(BAD)?;
    Ok((node, out))
}

/// A consumer group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    /// Entries the group has read (redis' logical counter); `None` when unknown.
    pub entries_read: Option<u64>,
    /// Entries in its PEL.
    pub pending: u64,
    pub consumers: u64,
}

pub fn encode_group(g: &Group) -> Vec<u8> {
    let mut v = Vec::with_capacity(41);
    v.push(1);
    v.extend_from_slice(&g.last_id.ms.to_le_bytes());
    v.extend_from_slice(&g.last_id.seq.to_le_bytes());
    let read = g
        .entries_read
        .map_or(-1i64, |n| n.min(i64::MAX as u64) as i64);
    v.extend_from_slice(&read.to_le_bytes());
    v.extend_from_slice(&g.pending.to_le_bytes());
    v.extend_from_slice(&g.consumers.to_le_bytes());
    v
}

pub fn decode_group(b: &[u8]) -> Result<Group, DecodeError> {
    const BAD: &str = "malformed stream consumer group";
    let mut r = Reader(b);
    r.version(BAD)?;
    let last_id = StreamId::new(r.u64(BAD)?, r.u64(BAD)?);
    let read = r.u64(BAD)? as i64;
    let entries_read = match read {
        -1 => None,
        n if n >= 0 => Some(n as u64),
        _ => return Err(DecodeError(BAD)),
    };
    let g = Group {
        last_id,
        entries_read,
        pending: r.u64(BAD)?,
        consumers: r.u64(BAD)?,
    };
    r.end(BAD)?;
    Ok(g)
}

/// An entry delivered to a consumer and not yet acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub delivery_time: u64,
    pub delivery_count: u64,
    pub consumer: Vec<u8>,
}

pub fn encode_pending(p: &Pending) -> Vec<u8> {
    let mut v = Vec::with_capacity(17 + p.consumer.len());
    v.push(1);
    v.extend_from_slice(&p.delivery_time.to_le_bytes());
    v.extend_from_slice(&p.delivery_count.to_le_bytes());
    v.extend_from_slice(&p.consumer);
    v
}

pub fn decode_pending(b: &[u8]) -> Result<Pending, DecodeError> {
    const BAD: &str = "malformed stream pending entry";
    let mut r = Reader(b);
    r.version(BAD)?;
    Ok(Pending {
        delivery_time: r.u64(BAD)?,
        delivery_count: r.u64(BAD)?,
        consumer: r.0.to_vec(),
    })
}

/// A consumer of a group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    pub seen_time: u64,
    pub pending: u64,
}

pub fn encode_consumer(c: &Consumer) -> Vec<u8> {
    let mut v = Vec::with_capacity(17);
    v.push(1);
    v.extend_from_slice(&c.seen_time.to_le_bytes());
    v.extend_from_slice(&c.pending.to_le_bytes());
    v
}

pub fn decode_consumer(b: &[u8]) -> Result<Consumer, DecodeError> {
    const BAD: &str = "malformed stream consumer";
    let mut r = Reader(b);
    r.version(BAD)?;
    let c = Consumer {
        seen_time: r.u64(BAD)?,
        pending: r.u64(BAD)?,
    };
    r.end(BAD)?;
    Ok(c)
}

/// `u32 BE len ‖ group`: the start of a group's PEL and consumer sub-keys' rest.
pub fn group_prefix(group: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + group.len() + 16);
    k.extend_from_slice(&(group.len() as u32).to_be_bytes());
    k.extend_from_slice(group);
    k
}

/// The rest of a PEL sub-key.
pub fn pel_rest(group: &[u8], id: StreamId) -> Vec<u8> {
    let mut k = group_prefix(group);
    k.extend_from_slice(&id.to_key());
    k
}

/// The rest of a consumer sub-key.
pub fn consumer_rest(group: &[u8], consumer: &[u8]) -> Vec<u8> {
    let mut k = group_prefix(group);
    k.extend_from_slice(consumer);
    k
}

/// Whether an entry at or after `start` was deleted by XDEL (redis' "tombstones"): then a
/// group's read counter cannot be advanced by counting.
pub fn has_tombstones_from(s: &StreamMeta, len: u64, start: StreamId) -> bool {
    len > 0 && !s.max_deleted.is_zero() && s.first_id <= s.max_deleted && start <= s.max_deleted
}

/// The logical read counter of `id` (how many entries were added up to it), when it can be
/// known without counting: redis' `streamEstimateDistanceFromFirstEverEntry`.
pub fn entries_read_at(s: &StreamMeta, len: u64, id: StreamId) -> Option<u64> {
    if s.entries_added == 0 {
        return Some(0);
    }
    if len == 0 && id <= s.last_id {
        return Some(s.entries_added);
    }
    match id.cmp(&s.last_id) {
        std::cmp::Ordering::Equal => return Some(s.entries_added),
        std::cmp::Ordering::Greater => return None,
        std::cmp::Ordering::Less => {}
    }
    if s.max_deleted.is_zero() || s.max_deleted < s.first_id {
        // No fragmentation ahead of the first entry.
        match id.cmp(&s.first_id) {
            std::cmp::Ordering::Less => return Some(s.entries_added - len),
            std::cmp::Ordering::Equal => return Some(s.entries_added - len + 1),
            std::cmp::Ordering::Greater => {}
        }
    }
    None
}

/// The group's lag (entries added and not yet read by it), or `None` when unknown.
pub fn group_lag(s: &StreamMeta, len: u64, g: &Group) -> Option<i64> {
    if s.entries_added == 0 {
        return Some(0);
    }
    let read = match g.entries_read {
        Some(n) if !has_tombstones_from(s, len, g.last_id) => n,
        _ => entries_read_at(s, len, g.last_id)?,
    };
    let lag = i128::from(s.entries_added) - i128::from(read);
    Some(lag.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// A group delivered `id` (XREADGROUP `>`): moves its last-delivered ID and read counter.
pub fn advance_group(s: &StreamMeta, len: u64, g: &mut Group, id: StreamId) {
    if id <= g.last_id {
        return;
    }
    match g.entries_read {
        Some(n) if !has_tombstones_from(s, len, id) => g.entries_read = Some(n + 1),
        _ if s.entries_added > 0 => g.entries_read = entries_read_at(s, len, id),
        _ => {}
    }
    g.last_id = id;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(added: u64, first: (u64, u64), last: (u64, u64), deleted: (u64, u64)) -> StreamMeta {
        StreamMeta {
            last_id: StreamId::new(last.0, last.1),
            first_id: StreamId::new(first.0, first.1),
            max_deleted: StreamId::new(deleted.0, deleted.1),
            entries_added: added,
            groups: 1,
            ..Default::default()
        }
    }

    #[test]
    fn group_lag_follows_redis() {
        let group = |last: (u64, u64), read: Option<u64>| Group {
            last_id: StreamId::new(last.0, last.1),
            entries_read: read,
            ..Default::default()
        };
        // (stream, length, group, lag): the cases of redis' XINFO GROUPS documentation.
        let cases = [
            // A never-used stream: 0.
            (
                meta(0, (0, 0), (0, 0), (0, 0)),
                0,
                group((0, 0), None),
                Some(0),
            ),
            // One entry, a group created at 0 with no counter: estimated from the first entry.
            (
                meta(1, (1, 0), (1, 0), (0, 0)),
                1,
                group((0, 0), None),
                Some(1),
            ),
            // A counter set past what was added (XGROUP SETID ENTRIESREAD): negative, as redis.
            (
                meta(1, (1, 0), (1, 0), (0, 0)),
                1,
                group((1, 0), Some(2)),
                Some(-1),
            ),
            // A known counter and no XDEL after the group's position: exact.
            (
                meta(5, (1, 0), (5, 0), (0, 0)),
                5,
                group((2, 0), Some(2)),
                Some(3),
            ),
            // An XDEL after the group's position: the counter cannot be trusted, and an ID in
            // the middle cannot be estimated.
            (
                meta(5, (1, 0), (5, 0), (4, 0)),
                4,
                group((2, 0), Some(2)),
                None,
            ),
            // ... but the group at the last ID can.
            (
                meta(5, (1, 0), (5, 0), (4, 0)),
                4,
                group((5, 0), None),
                Some(0),
            ),
        ];
        for (i, (s, len, g, want)) in cases.iter().enumerate() {
            assert_eq!(group_lag(s, *len, g), *want, "case {i}");
        }
    }

    #[test]
    fn delivering_advances_the_counter() {
        let s = meta(3, (1, 0), (3, 0), (0, 0));
        let mut g = Group::default();
        advance_group(&s, 3, &mut g, StreamId::new(1, 0));
        assert_eq!((g.last_id, g.entries_read), (StreamId::new(1, 0), Some(1)));
        advance_group(&s, 3, &mut g, StreamId::new(2, 0));
        assert_eq!(g.entries_read, Some(2));
        // An older ID does not move it.
        advance_group(&s, 3, &mut g, StreamId::new(1, 0));
        assert_eq!(g.last_id, StreamId::new(2, 0));
        assert_eq!(group_lag(&s, 3, &g), Some(1));
    }

    #[test]
    fn ids_parse_as_redis_parses_them() {
        let id = |ms, seq| Some(IdArg::Id(StreamId::new(ms, seq)));
        assert_eq!(parse_id(b"5-3", 0, true, false), id(5, 3));
        assert_eq!(parse_id(b"5", 0, true, false), id(5, 0));
        assert_eq!(parse_id(b"5", u64::MAX, false, false), id(5, u64::MAX));
        assert_eq!(parse_id(b"-", 0, false, false), id(0, 0));
        assert_eq!(
            parse_id(b"+", 0, false, false),
            Some(IdArg::Id(StreamId::MAX))
        );
        assert_eq!(parse_id(b"-", 0, true, false), None);
        assert_eq!(parse_id(b"7-*", 0, true, true), Some(IdArg::MsAny(7)));
        assert_eq!(parse_id(b"7-*", 0, true, false), None);
        assert_eq!(
            parse_id(b"18446744073709551615-18446744073709551615", 0, true, false),
            Some(IdArg::Id(StreamId::MAX))
        );
        for bad in [
            &b""[..],
            b"x",
            b"1-",
            b"-1",
            b"1-2-3",
            b"18446744073709551616",
            b"1.5",
        ] {
            assert_eq!(parse_id(bad, 0, true, true), None, "{bad:?}");
        }
    }

    #[test]
    fn id_keys_order_as_ids() {
        let ids = [
            StreamId::new(0, 1),
            StreamId::new(1, 0),
            StreamId::new(1, 255),
            StreamId::new(1, 256),
            StreamId::new(256, 0),
        ];
        for w in ids.windows(2) {
            assert!(w[0].to_key() < w[1].to_key());
            assert_eq!(StreamId::from_key(&w[0].to_key()).unwrap(), w[0]);
        }
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::new(2, 0).decr(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.decr(), None);
    }

    #[test]
    fn records_round_trip_and_reject_garbage() {
        let pairs: Vec<&[u8]> = vec![b"f", b"v", b"", b"x"];
        let e = encode_entry(3, &pairs);
        assert_eq!(decode_entry(&e).unwrap(), (3, pairs));
        assert!(decode_entry(&e[..e.len() - 1]).is_err());
        assert!(decode_entry(&[&e[..], b"!"].concat()).is_err());
        assert!(decode_entry(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f]).is_err());

        let g = Group {
            last_id: StreamId::new(3, 4),
            entries_read: Some(9),
            pending: 2,
            consumers: 1,
        };
        assert_eq!(decode_group(&encode_group(&g)).unwrap(), g);
        let unknown = Group {
            entries_read: None,
            ..g
        };
        assert_eq!(decode_group(&encode_group(&unknown)).unwrap(), unknown);
        assert!(decode_group(&encode_group(&g)[1..]).is_err());

        let p = Pending {
            delivery_time: 77,
            delivery_count: 2,
            consumer: b"alice".to_vec(),
        };
        assert_eq!(decode_pending(&encode_pending(&p)).unwrap(), p);
        assert!(decode_pending(&[1, 2, 3]).is_err());

        let c = Consumer {
            seen_time: 5,
            pending: 6,
        };
        assert_eq!(decode_consumer(&encode_consumer(&c)).unwrap(), c);
        assert!(decode_consumer(&[2; 17]).is_err());
    }

    #[test]
    fn nodes_fill_as_redis_fills_them() {
        let mut s = StreamMeta::default();
        // Small entries: 100 per node.
        let nodes: Vec<u64> = (0..250).map(|i| place_entry(&mut s, i, 10, 2)).collect();
        assert_eq!(nodes[0], 1);
        assert_eq!(nodes[99], 1);
        assert_eq!(nodes[100], 2);
        assert_eq!(nodes[249], 3);
        // Large entries: a node holds what fits in ~4 KB.
        let mut s = StreamMeta::default();
        let nodes: Vec<u64> = (0..8).map(|i| place_entry(&mut s, i, 1500, 2)).collect();
        assert_eq!(nodes, [1, 1, 2, 2, 3, 3, 4, 4]);
        // An emptied stream starts a new node.
        assert_eq!(place_entry(&mut s, 0, 10, 2), 5);
    }

    #[test]
    fn group_sub_keys_of_one_group_share_a_prefix() {
        let a = pel_rest(b"g", StreamId::new(1, 2));
        assert!(a.starts_with(&group_prefix(b"g")));
        // "g" and "gx" do not share a PEL prefix (the length leads).
        assert!(!pel_rest(b"gx", StreamId::MIN).starts_with(&group_prefix(b"g")));
        assert!(consumer_rest(b"g", b"c").starts_with(&group_prefix(b"g")));
    }
}
