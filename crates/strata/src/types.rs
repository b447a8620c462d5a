//! Internal keys and sequence numbers.
//!
//! An internal key is `user_key ++ fixed64_le(seq << 8 | kind)`. Internal keys order by user key
//! ascending (bytewise), then by the 64-bit trailer descending, so the newest version of a user
//! key comes first. Sequence numbers are 56 bits; 0 is never assigned to a write.
//! Depends only on `coding` and `error`.

use std::cmp::Ordering;

use crate::error::{Error, Result};

/// A sequence number: the position of a write in the database's total order.
pub type SeqNo = u64;

/// The largest sequence number that can be assigned.
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;

/// The kind of a record, stored in the low byte of the internal-key trailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A point deletion (tombstone) of the key.
    Delete = 0,
    /// A value for the key.
    Put = 1,
    /// A range tombstone `[key, value)`; lives in the range-deletion block, never among points.
    RangeDelete = 2,
    /// A merge operand for the key (`Db::merge`): folded with the key's older versions by the
    /// merge operator on read and in compaction; never a value by itself.
    Merge = 3,
}

/// Used in seek keys so that they sort before every real record of the same sequence number.
pub const KIND_FOR_SEEK: u8 = 0xff;

impl ValueKind {
    /// The kind stored as `b`; `None` for an unknown byte.
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::RangeDelete),
            3 => Some(ValueKind::Merge),
            _ => None,
        }
    }
}

/// The 64-bit internal-key trailer: `seq << 8 | kind`.
#[inline]
pub fn pack_trailer(seq: SeqNo, kind: u8) -> u64 {
    debug_assert!(seq <= MAX_SEQ);
    (seq << 8) | kind as u64
}

/// Appends the internal key for `(user_key, seq, kind)` to `buf`.
#[inline]
pub fn append_internal_key(buf: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, kind: u8) {
    buf.extend_from_slice(user_key);
    buf.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// The internal key for `(user_key, seq, kind)`: `user_key` followed by the little-endian
/// trailer.
pub fn internal_key(user_key: &[u8], seq: SeqNo, kind: u8) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + 8);
    append_internal_key(&mut v, user_key, seq, kind);
    v
}

/// The key to seek to for the newest version of `user_key` visible at `snapshot`.
pub fn lookup_key(user_key: &[u8], snapshot: SeqNo) -> Vec<u8> {
    internal_key(user_key, snapshot, KIND_FOR_SEEK)
}

/// The first eight bytes of a user key as a big-endian integer, zero-padded: heads order as
/// their keys do (`a < b` implies `head(a) <= head(b)`), so a search over an array of heads
/// decides most comparisons without touching the keys (memtable entries, index blocks).
#[inline]
pub fn key_head(user_key: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let n = user_key.len().min(8);
    p[..n].copy_from_slice(&user_key[..n]);
    u64::from_be_bytes(p)
}

/// The user-key part of an internal key. Internal keys shorter than 8 bytes are never created by
/// the engine; decoders validate lengths before calling this.
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(8)]
}

/// The 64-bit trailer of an internal key (`seq << 8 | kind`); 0 if it is shorter than 8 bytes.
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    let n = ikey.len();
    if n < 8 {
        return 0;
    }
    u64::from_le_bytes(ikey[n - 8..].try_into().unwrap_or([0; 8]))
}

/// A decoded internal key borrowing from its encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user-key part.
    pub user_key: &'a [u8],
    /// The sequence number of the write.
    pub seq: SeqNo,
    /// The record's kind.
    pub kind: ValueKind,
}

/// Parses an internal key read from storage; malformed keys are corruption.
pub fn parse_internal_key(ikey: &[u8]) -> Result<ParsedKey<'_>> {
    if ikey.len() < 8 {
        return Err(Error::corruption(format!(
            "internal key of {} bytes is shorter than its 8-byte trailer",
            ikey.len()
        )));
    }
    let t = trailer(ikey);
    let kind = ValueKind::from_u8((t & 0xff) as u8)
        .ok_or_else(|| Error::corruption(format!("unknown record kind {}", t & 0xff)))?;
    Ok(ParsedKey {
        user_key: user_key(ikey),
        seq: t >> 8,
        kind,
    })
}

/// Total order on internal keys: user key ascending, then trailer descending.
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// Bytewise order, for blocks whose keys are plain strings (meta-index, properties).
#[inline]
pub fn compare_bytewise(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_order_is_user_asc_then_seq_desc() {
        let a = internal_key(b"a", 5, ValueKind::Put as u8);
        let a_new = internal_key(b"a", 9, ValueKind::Put as u8);
        let b = internal_key(b"b", 1, ValueKind::Put as u8);
        assert_eq!(compare_internal(&a_new, &a), Ordering::Less);
        assert_eq!(compare_internal(&a, &b), Ordering::Less);
        let seek = lookup_key(b"a", 9);
        assert_eq!(compare_internal(&seek, &a_new), Ordering::Less);
        let p = parse_internal_key(&a_new).unwrap();
        assert_eq!((p.user_key, p.seq, p.kind), (&b"a"[..], 9, ValueKind::Put));
        assert!(parse_internal_key(b"short").is_err());
    }
}
