//! The sub-key layout: one engine key per collection element.
//!
//! ```text
//! 0x11 ‖ hash32(user key) u32 BE ‖ len(user key) u32 BE ‖ user key ‖ version u64 BE ‖ kind u8 ‖ rest
//! ```
//!
//! `kind` [`ELEM`] (0): hash field, set member, sorted-set member (rest = the field or member)
//! or list element (rest = index u64 BE); [`SCORE`] (1): the sorted-set score index (rest =
//! `score::encode(score)` ‖ member, empty value); [`GROUP`], [`PEL`], [`CONSUMER`]: a stream's
//! groups, pending entries and consumers (see `stream`). The key length makes the prefix of one
//! (key, version) never a prefix of another's; the hash keeps comparisons decided in the first
//! bytes, as for data keys (see `keyspace`).
//! Invariants: [`parse`] inverts [`element`] and rejects any other byte string (a hash that does
//! not match the key included: found by the `server_collection` fuzz target); every sub-key
//! lies in `[keyspace::SUB_START, keyspace::SUB_END)`. Depends on `keyspace` only; must not
//! depend on the engine or on commands (pure encoding).

use crate::keyspace::{key_hash, NS_SUB};

/// Kind byte of elements.
pub const ELEM: u8 = 0;
/// Kind byte of the sorted-set score index.
pub const SCORE: u8 = 1;
/// Kind byte of a stream's consumer groups (see `stream`).
pub const GROUP: u8 = 2;
/// Kind byte of a stream's pending-entries lists.
pub const PEL: u8 = 3;
/// Kind byte of a stream's consumers.
pub const CONSUMER: u8 = 4;
/// Bytes a sub-key adds to the user key and the element's own bytes.
pub const OVERHEAD: usize = 1 + 4 + 4 + 8 + 1;

/// The prefix shared by every sub-key of one kind of one collection version.
pub fn prefix(key: &[u8], version: u64, kind: u8) -> Vec<u8> {
    let mut k = Vec::with_capacity(OVERHEAD + key.len() + 16);
    k.push(NS_SUB);
    k.extend_from_slice(&key_hash(key).to_be_bytes());
    k.extend_from_slice(&(key.len() as u32).to_be_bytes());
    k.extend_from_slice(key);
    k.extend_from_slice(&version.to_be_bytes());
    k.push(kind);
    k
}

/// The sub-key of one element.
pub fn element(key: &[u8], version: u64, kind: u8, rest: &[u8]) -> Vec<u8> {
    let mut k = prefix(key, version, kind);
    k.extend_from_slice(rest);
    k
}

/// The exclusive upper bound of the keys starting with `prefix` (it never ends in 0xff: the
/// last byte is a kind byte).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut e = prefix.to_vec();
    if let Some(last) = e.last_mut() {
        *last += 1;
    }
    e
}

/// A parsed sub-key.
#[derive(Debug, PartialEq, Eq)]
pub struct SubKey<'a> {
    pub user_key: &'a [u8],
    pub version: u64,
    pub kind: u8,
    pub rest: &'a [u8],
}

/// Parses a sub-key, or `None` if `k` is not one.
pub fn parse(k: &[u8]) -> Option<SubKey<'_>> {
    let (&ns, k) = k.split_first()?;
    if ns != NS_SUB || k.len() < 8 {
        return None;
    }
    let hash = u32::from_be_bytes(k[..4].try_into().ok()?);
    let len = u32::from_be_bytes(k[4..8].try_into().ok()?) as usize;
    let k = &k[8..];
    if k.len() < len.checked_add(9)? {
        return None;
    }
    let (user_key, k) = k.split_at(len);
    if key_hash(user_key) != hash {
        return None;
    }
    let version = u64::from_be_bytes(k[..8].try_into().ok()?);
    let kind = k[8];
    if kind > CONSUMER {
        return None;
    }
    Some(SubKey {
        user_key,
        version,
        kind,
        rest: &k[9..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::{SUB_END, SUB_START};

    #[test]
    fn round_trip() {
        for key in [&b""[..], b"h", &[0xff; 40]] {
            for rest in [&b""[..], b"field", &[0u8; 9]] {
                let k = element(key, 42, SCORE, rest);
                assert!(k.as_slice() >= SUB_START && k.as_slice() < SUB_END);
                let p = parse(&k).unwrap();
                assert_eq!(
                    p,
                    SubKey {
                        user_key: key,
                        version: 42,
                        kind: SCORE,
                        rest
                    }
                );
                let pre = prefix(key, 42, SCORE);
                assert!(k.starts_with(&pre) && k < prefix_end(&pre));
            }
        }
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse(b"").is_none());
        assert!(parse(b"\x11abc").is_none());
        assert!(parse(b"\x10\0\0\0\0\0\0\0\0").is_none());
        let mut wrong_hash = element(b"key", 9, ELEM, b"f");
        wrong_hash[2] ^= 0x40;
        assert!(parse(&wrong_hash).is_none());
        let mut k = element(b"k", 1, ELEM, b"");
        k.truncate(k.len() - 1);
        assert!(parse(&k).is_none());
        let mut bad = element(b"k", 1, ELEM, b"");
        *bad.last_mut().unwrap() = 7;
        assert!(parse(&bad).is_none());
    }
}
