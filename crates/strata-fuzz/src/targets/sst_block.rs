//! Target `sst_block`: `Block::new` and `BlockIter` (data, index, meta-index and properties
//! blocks share this format).
//!
//! Flag byte: bit 0 = internal-key comparator (else bytewise). Properties: iteration in both
//! directions terminates within a bound set by the block size and never panics; when neither
//! direction reports corruption, backward iteration yields forward's entries reversed; when an
//! independent parser written from the format (entries from offset 0 to the restart array,
//! restart offsets strictly increasing entry starts with `shared = 0`, the first one 0, keys
//! strictly increasing) accepts the block, forward iteration yields exactly its entries,
//! backward iteration yields them reversed, and `seek` lands on the first key >= the target.
//! Blocks with a hash index (the trailer's flag bit) are parsed past their buckets; point seeks
//! through the hash index (`Block::seek_for_get`) must not panic on any bucket bytes.

use std::cmp::Ordering;

use bytes::Bytes;
use strata::iter::InternalIterator;
use strata::sst::block::{Block, BlockBuilder};
use strata::sst::filter::key_hash;
use strata::types::{compare_bytewise, compare_internal, internal_key};

use crate::util::split_flag;

type Cmp = fn(&[u8], &[u8]) -> Ordering;

fn varint32(d: &[u8], p: &mut usize) -> Option<usize> {
    let mut v = 0u64;
    for i in 0..5 {
        let b = *d.get(*p)?;
        *p += 1;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b < 0x80 {
            return u32::try_from(v).ok().map(|v| v as usize);
        }
    }
    None
}

/// The reference parser: the entries of a well-formed block, or `None`.
fn reference(d: &[u8], cmp: Cmp) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let word = u32::from_le_bytes(d.get(d.len().checked_sub(4)?..)?.try_into().ok()?);
    let (n, restarts_end) = if word & (1 << 31) == 0 {
        (word as usize, d.len() - 4)
    } else {
        // `buckets: u8 * m | m: fixed16 | n | 2^31: fixed32`, m >= 1, n <= 254.
        let m_at = d.len().checked_sub(6)?;
        let m = u16::from_le_bytes([d[m_at], d[m_at + 1]]) as usize;
        let n = (word & !(1 << 31)) as usize;
        if m == 0 || n > 254 {
            return None;
        }
        (n, m_at.checked_sub(m)?)
    };
    if n == 0 {
        return None;
    }
    let restarts_at = restarts_end.checked_sub(n.checked_mul(4)?)?;
    let restarts: Vec<usize> = (0..n)
        .map(|i| {
            let o = restarts_at + 4 * i;
            u32::from_le_bytes(d[o..o + 4].try_into().expect("4 bytes")) as usize
        })
        .collect();
    if restarts.first() != Some(&0) || restarts.windows(2).any(|w| w[0] >= w[1]) {
        return None;
    }
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut starts = Vec::new();
    let mut p = 0;
    let mut key: Vec<u8> = Vec::new();
    while p < restarts_at {
        let start = p;
        let shared = varint32(d, &mut p)?;
        let unshared = varint32(d, &mut p)?;
        let vlen = varint32(d, &mut p)?;
        if shared > key.len() || p + unshared + vlen > restarts_at {
            return None;
        }
        if restarts.contains(&start) && shared != 0 {
            return None;
        }
        key.truncate(shared);
        key.extend_from_slice(&d[p..p + unshared]);
        let value = d[p + unshared..p + unshared + vlen].to_vec();
        p += unshared + vlen;
        if let Some((last, _)) = entries.last() {
            if cmp(last, &key) != Ordering::Less {
                return None;
            }
        }
        starts.push(start);
        entries.push((key.clone(), value));
    }
    if restarts_at > 0 && restarts.iter().any(|r| !starts.contains(r)) {
        return None;
    }
    if restarts_at == 0 && restarts != [0] {
        return None;
    }
    Some(entries)
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let cmp: Cmp = if flag & 1 != 0 {
        compare_internal
    } else {
        compare_bytewise
    };
    let Ok(block) = Block::new(Bytes::copy_from_slice(rest)) else {
        return;
    };
    let bound = rest.len() / 3 + 2;
    let mut it = block.iter(cmp);
    it.seek_to_first();
    let mut fwd = Vec::new();
    while it.valid() {
        fwd.push((it.key().to_vec(), it.value().to_vec()));
        assert!(fwd.len() <= bound, "forward block iteration does not terminate");
        it.next();
    }
    let fwd_ok = it.status().is_ok();
    let mut it = block.iter(cmp);
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        assert!(back.len() <= bound, "backward block iteration does not terminate");
        it.prev();
    }
    let back_ok = it.status().is_ok();
    // Seeks must not panic on any block.
    let mut it = block.iter(cmp);
    for t in [&b""[..], b"\x00", b"key", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff"] {
        it.seek(t);
        let _ = it.valid() && it.key().is_empty();
    }
    if fwd_ok && back_ok {
        // Whatever the keys, both directions decode the same entries when neither reports
        // corruption.
        let mut rev = back.clone();
        rev.reverse();
        assert_eq!(rev, fwd, "backward iteration is not forward reversed");
    }
    if flag & 1 != 0 && block.has_hash_index() {
        // Any bucket bytes: an answer or a corruption error, never a panic.
        for (k, _) in &fwd {
            if k.len() >= 8 {
                let uk = &k[..k.len() - 8];
                let _ = block.seek_for_get(k, uk, key_hash(uk), &mut Vec::new());
            }
        }
        let _ = block.seek_for_get(&[0; 8], b"", key_hash(b""), &mut Vec::new());
    }
    let Some(want) = reference(rest, cmp) else {
        return;
    };
    assert!(fwd_ok && back_ok, "well-formed block reported corrupt");
    assert_eq!(fwd, want, "forward iteration differs from the format");
    back.reverse();
    assert_eq!(back, want, "backward iteration differs from the format");
    let mut it = block.iter(cmp);
    for (i, (k, _)) in want.iter().enumerate() {
        it.seek(k);
        assert!(it.valid() && it.key() == &k[..], "seek to an existing key");
        let mut below = k.clone();
        if below.pop().is_some() {
            it.seek(&below);
            let first = want.iter().find(|(w, _)| cmp(w, &below) != Ordering::Less);
            assert_eq!(
                it.valid().then(|| it.key().to_vec()),
                first.map(|(w, _)| w.clone()),
                "seek lands on the first key >= target (entry {i})"
            );
        }
    }
    it.status().expect("well-formed block");
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for interval in [1, 2, 16] {
        let mut b = BlockBuilder::new(interval);
        for i in 0..20u32 {
            b.add(format!("key{:03}", i * 3).as_bytes(), &i.to_le_bytes());
        }
        let mut s = vec![0u8];
        s.extend_from_slice(&b.finish());
        out.push(s);
        let mut b = BlockBuilder::new(interval);
        for i in 0..20u64 {
            b.add(&internal_key(b"user", 100 - i, 1), b"value");
        }
        let mut s = vec![1u8];
        s.extend_from_slice(&b.finish());
        out.push(s);
    }
    for (interval, ratio) in [(1, 1.0), (4, 0.75), (16, 0.25)] {
        let mut b = BlockBuilder::with_hash_index(interval, ratio);
        for i in 0..40u64 {
            let uk = format!("user{:02}", i / 3);
            b.add_hashed(
                &internal_key(uk.as_bytes(), 100 - i, 1),
                b"v",
                key_hash(uk.as_bytes()),
            );
        }
        let mut s = vec![1u8];
        s.extend_from_slice(&b.finish());
        out.push(s);
    }
    let mut empty = vec![0u8];
    empty.extend_from_slice(&BlockBuilder::new(4).finish());
    out.push(empty);
    out
}
