//! Blocks: sorted key/value entries with prefix compression and restart points.
//!
//! Entry: `shared: varint32 | unshared: varint32 | value_len: varint32 | key[shared..] | value`.
//! Trailer: `restart_offset: fixed32 * n | n: fixed32`, or, for a data block with a hash index
//! ([`super::block_hash`]), `restart_offset: fixed32 * n | buckets: u8 * m | m: fixed16 |
//! n | 2^31: fixed32`. Keys at restart points have `shared = 0`, so seeks binary-search the
//! restart array (or read the key's bucket) and then scan at most one restart interval.
//! Depends on `coding`, `types` and `block_hash`; never on tables or caches.

use std::cmp::Ordering;

use bytes::Bytes;

use super::block_hash::{self, HashIndexBuilder, Probe};
use crate::coding::{decode_fixed32, decode_varint32, put_fixed32, put_varint32};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::types;

/// The bit of the trailer's last word that says a hash index precedes it.
const HASH_INDEX_FLAG: u32 = 1 << 31;

/// Builds one block.
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    entries: usize,
    hash: Option<HashIndexBuilder>,
}

impl BlockBuilder {
    /// A builder with a restart point every `restart_interval` entries (at least 1), no hash index.
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            entries: 0,
            hash: None,
        }
    }

    /// A data-block builder that also writes a hash index of its user keys, `util_ratio` keys
    /// per bucket (in (0, 1]); entries must then be added with [`BlockBuilder::add_hashed`].
    pub fn with_hash_index(restart_interval: usize, util_ratio: f64) -> Self {
        BlockBuilder {
            hash: Some(HashIndexBuilder::new(util_ratio)),
            ..BlockBuilder::new(restart_interval)
        }
    }

    /// [`BlockBuilder::add`] of an internal key whose user key hashes to `h`
    /// ([`super::filter::key_hash`]), for a block built [`BlockBuilder::with_hash_index`].
    pub fn add_hashed(&mut self, key: &[u8], value: &[u8], h: u64) {
        let new_user_key =
            self.entries == 0 || types::user_key(&self.last_key) != types::user_key(key);
        self.add(key, value);
        if let Some(hash) = self.hash.as_mut().filter(|_| new_user_key) {
            hash.add(h, self.restarts.len() - 1);
        }
    }

    /// Adds an entry; keys must be added in increasing order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.restart_interval {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.counter += 1;
        self.entries += 1;
    }

    /// Size of the block if finished now.
    pub fn estimated_size(&self) -> usize {
        // A block past the restart points a bucket can name gets no hash index.
        let hash = match &self.hash {
            Some(h) if self.restarts.len() <= block_hash::MAX_RESTARTS => h.estimated_size(),
            _ => 0,
        };
        self.buf.len() + 4 * self.restarts.len() + 4 + hash
    }

    /// Whether no entry was added since the builder was created or last finished.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The last key added (empty when [`BlockBuilder::is_empty`]).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart array and returns the block bytes; the builder is reset.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            put_fixed32(&mut out, *r);
        }
        let n = self.restarts.len() as u32;
        match self.hash.as_mut().and_then(|h| h.finish(n as usize)) {
            Some(buckets) => {
                out.extend_from_slice(&buckets);
                out.extend_from_slice(&(buckets.len() as u16).to_le_bytes());
                put_fixed32(&mut out, n | HASH_INDEX_FLAG);
            }
            None => put_fixed32(&mut out, n),
        }
        self.restarts = vec![0];
        self.counter = 0;
        self.entries = 0;
        self.last_key.clear();
        out
    }
}

/// What [`Block::seek_for_get`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetSeek {
    /// The first entry at or after the target: its value's byte range ([`Block::bytes`]); the
    /// caller's key buffer holds its key, a version of the target's user key or a later key.
    Entry(usize, usize),
    /// The block's hash index shows it holds no version of the user key.
    Absent,
    /// Every entry of the block is before the target.
    End,
}

/// A decoded block: its bytes and where its restart array starts.
#[derive(Clone)]
pub struct Block {
    data: Bytes,
    restarts: usize,
    num_restarts: usize,
    /// Where the hash index's buckets are (`start..end` of `data`); `start == end` when the
    /// block has none.
    buckets: (u32, u32),
}

impl Block {
    /// Validates the trailer of `data`.
    pub fn new(data: Bytes) -> Result<Block> {
        let bad = || Error::corruption("block trailer is malformed");
        if data.len() < 4 {
            return Err(bad());
        }
        let word = decode_fixed32(&data[data.len() - 4..]).ok_or_else(bad)?;
        let (n, restarts_end, buckets) = if word & HASH_INDEX_FLAG == 0 {
            (word as usize, data.len() - 4, (0, 0))
        } else {
            // `buckets: u8 * m | m: fixed16` sit between the restart array and the last word.
            let m_at = data.len().checked_sub(6).ok_or_else(bad)?;
            let m = u16::from_le_bytes([data[m_at], data[m_at + 1]]) as usize;
            let start = m_at.checked_sub(m).filter(|_| m > 0).ok_or_else(bad)?;
            let n = (word & !HASH_INDEX_FLAG) as usize;
            if n > block_hash::MAX_RESTARTS {
                return Err(bad());
            }
            (n, start, (start as u32, m_at as u32))
        };
        let max = restarts_end / 4;
        if n == 0 || n > max {
            return Err(bad());
        }
        let restarts = restarts_end - 4 * n;
        // Restart offsets start at 0, strictly increase and point into the entries (an empty
        // block has the single restart 0). Otherwise a seek or a backward scan would start from
        // a point outside the entries and silently see fewer entries than a forward scan.
        let mut prev = None;
        for i in 0..n {
            let r = decode_fixed32(&data[restarts + 4 * i..]).ok_or_else(bad)? as usize;
            let ok = match prev {
                None => r == 0,
                Some(p) => r > p && r < restarts,
            };
            if !ok {
                return Err(Error::corruption("block restart array is malformed"));
            }
            prev = Some(r);
        }
        Ok(Block {
            restarts,
            num_restarts: n,
            buckets,
            data,
        })
    }

    /// Whether the block carries a hash index.
    pub fn has_hash_index(&self) -> bool {
        self.buckets.0 < self.buckets.1
    }

    /// Bytes held in memory (for cache accounting).
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// An unpositioned iterator over the block's entries, whose keys are ordered by `cmp`.
    pub fn iter(&self, cmp: fn(&[u8], &[u8]) -> Ordering) -> BlockIter {
        BlockIter {
            block: self.clone(),
            cmp,
            current: self.restarts,
            next: 0,
            restart_index: 0,
            key: Vec::new(),
            val: (0, 0),
            err: None,
        }
    }

    /// Whether the block holds no entries (its one restart point is then a placeholder).
    pub fn is_empty(&self) -> bool {
        self.restarts == 0
    }

    /// The number of restart points (at least 1; an empty block has one placeholder).
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    fn restart_point(&self, i: usize) -> usize {
        let off = self.restarts + 4 * i;
        decode_fixed32(&self.data[off..]).unwrap_or(u32::MAX) as usize
    }

    /// The key stored at restart point `i` (its `shared` is 0); `None` if that entry is
    /// malformed.
    pub fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let off = self.restart_point(i);
        let d = self.data.get(off..self.restarts)?;
        let (shared, a) = decode_varint32(d)?;
        let (unshared, b) = decode_varint32(&d[a..])?;
        let (_, c) = decode_varint32(&d[a + b..])?;
        if shared != 0 {
            return None;
        }
        d.get(a + b + c..a + b + c + unshared as usize)
    }

    /// The restart point a seek for `target` scans from: the last one whose key is `< target`
    /// (0 if none is), found by binary search among restart points `lo..hi`, when the caller
    /// knows that those before `lo` hold keys `< target` and those from `hi` on do not
    /// (`0..num_restarts()` knows nothing). Restart 0's key is never read: a seek starts there
    /// whether it is less or not, so an empty block needs no key.
    pub fn seek_start(
        &self,
        target: &[u8],
        cmp: fn(&[u8], &[u8]) -> Ordering,
        lo: usize,
        hi: usize,
    ) -> Result<usize> {
        debug_assert!(lo <= hi && hi <= self.num_restarts);
        let (mut lo, mut hi) = (lo.max(1), hi.clamp(1, self.num_restarts));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = self
                .restart_key(mid)
                .ok_or_else(|| Error::corruption("block entry: bad restart point"))?;
            if cmp(k, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo - 1)
    }

    /// Decodes the entry at offset `at` (< the restart array), whose restart interval is
    /// `*restart_index` (advanced when `at` has reached the next one): `key` becomes its key,
    /// and the result is its value's byte range. Checks that the entry fits the block and lines
    /// up with the restart points, so that every way of reaching an entry decodes the same one.
    fn decode_entry(
        &self,
        at: usize,
        restart_index: &mut usize,
        key: &mut Vec<u8>,
    ) -> std::result::Result<(usize, usize), &'static str> {
        let d = &self.data[at..self.restarts];
        let mut p = 0;
        let mut field = || -> Option<usize> {
            let (v, n) = decode_varint32(&d[p..])?;
            p += n;
            Some(v as usize)
        };
        let (Some(shared), Some(unshared), Some(vlen)) = (field(), field(), field()) else {
            return Err("bad varint header");
        };
        if shared > key.len() || p + unshared + vlen > d.len() {
            return Err("entry exceeds block bounds");
        }
        key.truncate(shared);
        key.extend_from_slice(&d[p..p + unshared]);
        let vstart = at + p + unshared;
        let next = vstart + vlen;
        while *restart_index + 1 < self.num_restarts && self.restart_point(*restart_index + 1) <= at
        {
            *restart_index += 1;
        }
        // Entries must tile the restart points: an entry starting at one has `shared = 0`, and
        // none spans one. Otherwise scans that start from a restart point (backward, seek)
        // would decode different entries than a forward scan.
        let at_restart = self.restart_point(*restart_index) == at;
        let next_restart = (*restart_index + 1 < self.num_restarts)
            .then(|| self.restart_point(*restart_index + 1));
        if (at_restart && shared != 0) || next_restart.is_some_and(|r| r < next) {
            return Err("entry does not line up with the restart points");
        }
        Ok((vstart, next))
    }

    /// A point seek without an iterator: scans from restart point `start` for the first entry
    /// whose key is `>= target` under `cmp`. On `Some`, `key` holds that entry's key and the
    /// result is its value's byte range ([`Block::bytes`]); `None` if the block ends first.
    pub fn seek_from_restart(
        &self,
        start: usize,
        target: &[u8],
        cmp: fn(&[u8], &[u8]) -> Ordering,
        key: &mut Vec<u8>,
    ) -> Result<Option<(usize, usize)>> {
        Ok(match self.scan(start, target, cmp, key, None)? {
            GetSeek::Entry(from, to) => Some((from, to)),
            GetSeek::Absent | GetSeek::End => None,
        })
    }

    /// [`Block::seek_from_restart`]'s scan; with `absent_at = Some((offset, user_key))`
    /// (internal keys), reaching the entry at `offset` while the last key read is of another
    /// user key answers [`GetSeek::Absent`].
    fn scan(
        &self,
        start: usize,
        target: &[u8],
        cmp: fn(&[u8], &[u8]) -> Ordering,
        key: &mut Vec<u8>,
        absent_at: Option<(usize, &[u8])>,
    ) -> Result<GetSeek> {
        let mut ri = start.min(self.num_restarts - 1);
        let mut at = self.restart_point(ri);
        key.clear();
        while at < self.restarts {
            if absent_at.is_some_and(|(end, uk)| at == end && types::user_key(key) != uk) {
                return Ok(GetSeek::Absent);
            }
            let (vstart, next) = self
                .decode_entry(at, &mut ri, key)
                .map_err(|why| Error::corruption(format!("block entry: {why}")))?;
            if cmp(key, target) != Ordering::Less {
                return Ok(GetSeek::Entry(vstart, next));
            }
            at = next;
        }
        Ok(GetSeek::End)
    }

    /// A point lookup's seek in a data block (internal keys) for the internal key `target`,
    /// whose user key is `user_key` and hashes to `h` ([`super::filter::key_hash`]): the first
    /// entry at or after `target`, as [`Block::seek_from_restart`] from the right restart point
    /// finds it, except that with a hash index it may answer [`GetSeek::Absent`] first when the
    /// block holds no version of `user_key`.
    pub fn seek_for_get(
        &self,
        target: &[u8],
        user_key: &[u8],
        h: u64,
        key: &mut Vec<u8>,
    ) -> Result<GetSeek> {
        let cmp = types::compare_internal;
        let binary_search = |key: &mut Vec<u8>| {
            let start = self.seek_start(target, cmp, 0, self.num_restarts)?;
            self.scan(start, target, cmp, key, None)
        };
        if !self.has_hash_index() {
            return binary_search(key);
        }
        let buckets = &self.data[self.buckets.0 as usize..self.buckets.1 as usize];
        let probe = block_hash::probe(buckets, h, self.num_restarts)
            .ok_or_else(|| Error::corruption("block hash index names a missing restart point"))?;
        let first = match probe {
            Probe::Absent => return Ok(GetSeek::Absent),
            Probe::Unknown => return binary_search(key),
            Probe::Restart(r) => r,
        };
        // The bucket holds the restart interval of `user_key`'s first version if the block has
        // one, or of another key that hashed alike. Scan from there; leaving that interval
        // while still before `user_key` (the last key read is a smaller user key) means the
        // block has no version of it.
        let end_of_first = (first + 1 < self.num_restarts).then(|| self.restart_point(first + 1));
        self.scan(
            first,
            target,
            cmp,
            key,
            end_of_first.map(|end| (end, user_key)),
        )
    }

    /// Hints for a later [`Block::seek_for_get`] of a key hashing to `h`, in two stages a
    /// batch of lookups runs over all its keys in turn, so their cache misses overlap: stage 0
    /// loads the hash bucket and the restart array (the block's tail); stage 1 reads them and
    /// loads the restart interval the seek will scan first. No effect on any answer.
    pub fn prefetch_for_get(&self, h: u64, stage: u8) {
        use crate::memtable::prefetch::prefetch;
        let at = |off: usize| {
            self.data
                .get(off..)
                .map_or(std::ptr::null(), <[u8]>::as_ptr)
        };
        let (b0, b1) = (self.buckets.0 as usize, self.buckets.1 as usize);
        let restart = match stage {
            0 => {
                if b0 < b1 {
                    prefetch(at(b0 + block_hash::bucket_of(h, b1 - b0)));
                }
                prefetch(at(self.restarts + 4 * (self.num_restarts / 2)));
                return;
            }
            _ if b0 < b1 => match block_hash::probe(&self.data[b0..b1], h, self.num_restarts) {
                Some(Probe::Restart(r)) => r,
                _ => return,
            },
            // The binary search's first probe.
            _ => self.num_restarts / 2,
        };
        let off = self.restart_point(restart);
        prefetch(at(off));
        prefetch(at(off.saturating_add(64)));
    }

    /// The block's bytes (values are ranges of them).
    pub fn bytes(&self) -> &Bytes {
        &self.data
    }
}

/// A cursor over one block.
pub struct BlockIter {
    block: Block,
    cmp: fn(&[u8], &[u8]) -> Ordering,
    current: usize,
    next: usize,
    restart_index: usize,
    key: Vec<u8>,
    val: (usize, usize),
    err: Option<Error>,
}

impl BlockIter {
    fn restart_point(&self, i: usize) -> usize {
        self.block.restart_point(i)
    }

    fn corrupt(&mut self, why: &str) {
        self.err = Some(Error::corruption(format!("block entry: {why}")));
        self.current = self.block.restarts;
    }

    /// Value of the current entry as a zero-copy slice of the block.
    pub fn value_bytes(&self) -> Bytes {
        self.block.data.slice(self.val.0..self.val.1)
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next = self.restart_point(i);
    }

    /// Decodes the entry at `self.next`; false at the end or on corruption.
    fn parse_next(&mut self) -> bool {
        self.current = self.next;
        let limit = self.block.restarts;
        if self.current >= limit {
            self.current = limit;
            return false;
        }
        match self
            .block
            .decode_entry(self.current, &mut self.restart_index, &mut self.key)
        {
            Ok((vstart, next)) => {
                self.val = (vstart, next);
                self.next = next;
                true
            }
            Err(why) => {
                self.corrupt(why);
                false
            }
        }
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.current < self.block.restarts
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next < self.block.restarts {}
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        let lo = match self
            .block
            .seek_start(target, self.cmp, 0, self.block.num_restarts)
        {
            Ok(r) => r,
            Err(_) => {
                self.corrupt("bad restart point");
                return;
            }
        };
        self.seek_to_restart(lo);
        while self.parse_next() {
            if (self.cmp)(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        let mut ri = self.restart_index;
        while self.restart_point(ri) >= original {
            if ri == 0 {
                self.current = self.block.restarts;
                return;
            }
            ri -= 1;
        }
        self.seek_to_restart(ri);
        while self.parse_next() && self.next < original {}
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.block.data[self.val.0..self.val.1]
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::compare_bytewise;

    fn build(n: usize, interval: usize) -> (Block, Vec<Vec<u8>>) {
        let mut b = BlockBuilder::new(interval);
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("key{:05}", i * 2).into_bytes())
            .collect();
        for k in &keys {
            b.add(k, &k[3..]);
        }
        (Block::new(Bytes::from(b.finish())).unwrap(), keys)
    }

    #[test]
    fn iterate_seek_both_directions() {
        for interval in [1, 3, 16] {
            for n in [0, 1, 2, 17, 100] {
                let (block, keys) = build(n, interval);
                let mut it = block.iter(compare_bytewise);
                it.seek_to_first();
                for k in &keys {
                    assert!(it.valid());
                    assert_eq!(it.key(), &k[..]);
                    assert_eq!(it.value(), &k[3..]);
                    it.next();
                }
                assert!(!it.valid());
                it.seek_to_last();
                for k in keys.iter().rev() {
                    assert_eq!(it.key(), &k[..]);
                    it.prev();
                }
                assert!(!it.valid());
                for i in 0..n * 2 + 1 {
                    let t = format!("key{:05}", i).into_bytes();
                    it.seek(&t);
                    let want = keys.iter().find(|k| **k >= t);
                    assert_eq!(it.valid().then(|| it.key().to_vec()), want.cloned());
                    // The iterator-free point seek finds the same entry and value.
                    let start = block
                        .seek_start(&t, compare_bytewise, 0, block.num_restarts())
                        .unwrap();
                    let mut key = Vec::new();
                    let got = block
                        .seek_from_restart(start, &t, compare_bytewise, &mut key)
                        .unwrap();
                    assert_eq!(got.map(|_| key.clone()), want.cloned());
                    if let (Some((from, to)), Some(k)) = (got, want) {
                        assert_eq!(&block.bytes()[from..to], &k[3..]);
                    }
                }
                it.status().unwrap();
            }
        }
    }

    /// Found by the `sst_table` fuzz target: an index block whose last restart offset pointed
    /// past its entries opened fine; forward iteration saw every entry and backward iteration
    /// none, with no error.
    #[test]
    fn fuzz_block_restart_past_entries() {
        let (block, _) = build(20, 4);
        let mut raw = block.data.to_vec();
        let n = raw.len();
        // The last restart offset (just before the count) now points at the restart array.
        let past = (n - 8) as u32;
        raw[n - 8..n - 4].copy_from_slice(&past.to_le_bytes());
        assert!(Block::new(Bytes::from(raw.clone())).is_err());
        // A first restart other than 0, and a decreasing pair, are rejected too.
        let mut first = block.data.to_vec();
        let at = n - 4 - 4 * 5;
        first[at..at + 4].copy_from_slice(&3u32.to_le_bytes());
        assert!(Block::new(Bytes::from(first)).is_err());
        let mut dec = block.data.to_vec();
        dec[at + 8..at + 12].copy_from_slice(&1u32.to_le_bytes());
        assert!(Block::new(Bytes::from(dec)).is_err());
        // The empty block (one restart at 0) is valid.
        let mut b = BlockBuilder::new(4);
        assert!(Block::new(Bytes::from(b.finish())).is_ok());
    }

    /// Found by the `sst_table` cargo-fuzz run: an index entry whose `unshared` length grew
    /// from 12 to 48 swallowed the next two entries (and their restart points). Forward
    /// iteration saw one odd entry, backward iteration the two original ones, neither an error.
    #[test]
    fn fuzz_block_entry_straddles_restart() {
        let (block, _) = build(6, 1);
        let mut raw = block.data.to_vec();
        // Entry 0 is `shared 0 | unshared 8 | value_len 5 | key | value`: grow its key over
        // the next entry, which starts at a restart point.
        assert_eq!(&raw[..3], &[0, 8, 5]);
        raw[1] = 8 + 16;
        let b = Block::new(Bytes::from(raw)).unwrap();
        let mut it = b.iter(compare_bytewise);
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
        // An entry at a restart point with `shared != 0` is corrupt too.
        let (block, _) = build(6, 1);
        let mut raw = block.data.to_vec();
        raw[16] = 1; // entry 1 (a restart with interval 1) claims a shared prefix
        let b = Block::new(Bytes::from(raw)).unwrap();
        let mut it = b.iter(compare_bytewise);
        it.seek_to_first();
        it.next();
        assert!(it.status().is_err());
    }

    #[test]
    fn corrupt_trailer_is_rejected() {
        assert!(Block::new(Bytes::from_static(&[1, 2])).is_err());
        assert!(Block::new(Bytes::from_static(&[0, 0, 0, 9])).is_err());
    }
}
