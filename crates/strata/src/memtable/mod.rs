//! The memtable: a concurrent skiplist of internal keys (crossbeam-skiplist), plus the range
//! tombstones written into it.
//!
//! Invariants: an entry is never removed or changed once inserted, so readers and iterators run
//! without locks while the write leader inserts; each internal key (user key, sequence number)
//! is unique. A memtable is tied to the WAL file that holds its writes (`wal_number`).
//! An optional whole-key Bloom filter ([`MemBloom`]) lets point lookups of absent keys skip the
//! skiplist. Depends on `types`, `range_del`, `iter`.

mod bloom;

pub use bloom::MemBloom;

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtOrd};
use std::sync::Arc;

use bytes::Bytes;
use crossbeam_skiplist::map::Entry;
use crossbeam_skiplist::SkipMap;
use parking_lot::Mutex;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::range_del::{Fragments, RangeTombstone};
use crate::types::{self, SeqNo, ValueKind};

/// An encoded internal key ordered by [`types::compare_internal`], with the first eight bytes
/// of its user key kept inline (big-endian, zero-padded): most comparisons during a skiplist
/// search are decided by the prefix, without touching the key bytes elsewhere in memory.
#[derive(Clone, Debug)]
pub struct MemKey {
    prefix: u64,
    ikey: Bytes,
}

impl MemKey {
    fn new(ikey: Bytes) -> Self {
        MemKey {
            prefix: types::key_head(types::user_key(&ikey)),
            ikey,
        }
    }
}

impl PartialEq for MemKey {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for MemKey {}
impl PartialOrd for MemKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for MemKey {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        // Differing zero-padded prefixes order exactly as the user keys do (a key shorter than
        // eight bytes that is a prefix of the other compares smaller in both orders).
        match self.prefix.cmp(&o.prefix) {
            Ordering::Equal => types::compare_internal(&self.ikey, &o.ikey),
            ord => ord,
        }
    }
}

/// Per-entry bookkeeping charged to the memtable size (skiplist node, refcounts).
const ENTRY_OVERHEAD: usize = 64;

#[derive(Default)]
struct RangeDels {
    list: Vec<RangeTombstone>,
    fragments: Option<Arc<Fragments>>,
}

/// An in-memory sorted buffer of recent writes.
pub struct MemTable {
    map: SkipMap<MemKey, Bytes>,
    size: AtomicUsize,
    entries: AtomicU64,
    deletes: AtomicU64,
    largest_seq: AtomicU64,
    has_range_dels: AtomicBool,
    range_dels: Mutex<RangeDels>,
    bloom: Option<MemBloom>,
    wal_number: u64,
}

impl MemTable {
    pub fn new(wal_number: u64) -> Self {
        Self::with_bloom(wal_number, 0)
    }

    /// A memtable with a whole-key Bloom filter of `bloom_bytes` (none when 0).
    pub fn with_bloom(wal_number: u64, bloom_bytes: usize) -> Self {
        MemTable {
            map: SkipMap::new(),
            size: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
            deletes: AtomicU64::new(0),
            largest_seq: AtomicU64::new(0),
            has_range_dels: AtomicBool::new(false),
            range_dels: Mutex::new(RangeDels::default()),
            bloom: (bloom_bytes > 0).then(|| MemBloom::new(bloom_bytes)),
            wal_number,
        }
    }

    /// The WAL file holding this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Inserts a put or a point delete.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, key: &[u8], value: &[u8]) {
        let ik_len = key.len() + 8;
        let mut buf = Vec::with_capacity(ik_len + value.len());
        types::append_internal_key(&mut buf, key, seq, kind as u8);
        buf.extend_from_slice(value);
        let buf = Bytes::from(buf);
        let (k, v) = (buf.slice(..ik_len), buf.slice(ik_len..));
        // Before the entry becomes reachable: whoever can see it sees its filter bits.
        if let Some(b) = &self.bloom {
            b.add(key);
        }
        self.map.insert(MemKey::new(k), v);
        self.size
            .fetch_add(ik_len + value.len() + ENTRY_OVERHEAD, AtOrd::Relaxed);
        self.entries.fetch_add(1, AtOrd::Relaxed);
        if kind == ValueKind::Delete {
            self.deletes.fetch_add(1, AtOrd::Relaxed);
        }
        self.largest_seq.fetch_max(seq, AtOrd::Relaxed);
    }

    /// Records a range tombstone `[start, end)`.
    pub fn add_range_delete(&self, seq: SeqNo, start: &[u8], end: &[u8]) {
        let mut rd = self.range_dels.lock();
        rd.list.push(RangeTombstone::new(start, end, seq));
        rd.fragments = None;
        self.has_range_dels.store(true, AtOrd::Release);
        self.size
            .fetch_add(start.len() + end.len() + ENTRY_OVERHEAD, AtOrd::Relaxed);
        self.largest_seq.fetch_max(seq, AtOrd::Relaxed);
    }

    /// The newest point entry for `user_key` with sequence number `<= snapshot`.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(SeqNo, ValueKind, Bytes)> {
        if self
            .bloom
            .as_ref()
            .is_some_and(|b| !b.may_contain(user_key))
        {
            return None;
        }
        let lk = MemKey::new(Bytes::from(types::lookup_key(user_key, snapshot)));
        let e = self.map.lower_bound(Bound::Included(&lk))?;
        let ik = &e.key().ikey;
        if types::user_key(ik) != user_key {
            return None;
        }
        let p = types::parse_internal_key(ik).ok()?;
        Some((p.seq, p.kind, e.value().clone()))
    }

    /// The newest range tombstone covering `user_key` visible at `snapshot` (0 if none).
    pub fn max_covering_tombstone(&self, user_key: &[u8], snapshot: SeqNo) -> SeqNo {
        match self.fragments() {
            Some(f) => f.max_covering(user_key, snapshot),
            None => 0,
        }
    }

    fn fragments(&self) -> Option<Arc<Fragments>> {
        if !self.has_range_dels.load(AtOrd::Acquire) {
            return None;
        }
        let mut rd = self.range_dels.lock();
        if rd.fragments.is_none() {
            rd.fragments = Some(Arc::new(Fragments::new(&rd.list)));
        }
        rd.fragments.clone()
    }

    /// A copy of the range tombstones.
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        if !self.has_range_dels.load(AtOrd::Acquire) {
            return Vec::new();
        }
        self.range_dels.lock().list.clone()
    }

    /// Approximate memory charged to this memtable, in bytes.
    pub fn approximate_size(&self) -> usize {
        self.size.load(AtOrd::Relaxed)
    }

    pub fn num_entries(&self) -> u64 {
        self.entries.load(AtOrd::Relaxed)
    }

    pub fn num_deletes(&self) -> u64 {
        self.deletes.load(AtOrd::Relaxed)
    }

    pub fn largest_seq(&self) -> SeqNo {
        self.largest_seq.load(AtOrd::Relaxed)
    }

    /// Whether nothing (not even a range tombstone) was written.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && !self.has_range_dels.load(AtOrd::Acquire)
    }

    /// An iterator over the point entries.
    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            cur: None,
            mem: self.clone(),
        }
    }
}

/// Iterates a memtable's point entries. Holds the memtable alive.
pub struct MemTableIter {
    // Declared before `mem` so it is dropped first: it borrows from `mem.map`.
    cur: Option<Entry<'static, MemKey, Bytes>>,
    mem: Arc<MemTable>,
}

/// Extends an entry's lifetime to the iterator's.
///
/// SAFETY (for callers): the entry borrows the skiplist of the `MemTable` that the iterator
/// holds in its `mem` field; `cur` is declared before `mem` so it is dropped first, and entries
/// are never handed out beyond `&self` borrows of the iterator.
fn extend(e: Option<Entry<'_, MemKey, Bytes>>) -> Option<Entry<'static, MemKey, Bytes>> {
    // SAFETY: see above; the memtable outlives the entry because the iterator owns an `Arc` to it.
    e.map(|e| unsafe {
        std::mem::transmute::<Entry<'_, MemKey, Bytes>, Entry<'static, MemKey, Bytes>>(e)
    })
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        self.cur = extend(self.mem.map.front());
    }
    fn seek_to_last(&mut self) {
        self.cur = extend(self.mem.map.back());
    }
    fn seek(&mut self, target: &[u8]) {
        let k = MemKey::new(Bytes::copy_from_slice(target));
        self.cur = extend(self.mem.map.lower_bound(Bound::Included(&k)));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let k = MemKey::new(Bytes::copy_from_slice(target));
        self.cur = extend(self.mem.map.upper_bound(Bound::Included(&k)));
    }
    fn next(&mut self) {
        if let Some(e) = self.cur.take() {
            self.cur = e.next();
        }
    }
    fn prev(&mut self) {
        if let Some(e) = self.cur.take() {
            self.cur = e.prev();
        }
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|e| &e.key().ikey[..]).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|e| &e.value()[..]).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_order_matches_internal_order() {
        let keys: Vec<&[u8]> = vec![
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\0\0\0\0\0\0\0",
            b"ab",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"abcdefgi",
            b"b",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for a in &keys {
            for b in &keys {
                for (sa, sb) in [(1, 1), (1, 2), (2, 1)] {
                    let ia = types::internal_key(a, sa, 1);
                    let ib = types::internal_key(b, sb, 1);
                    let want = types::compare_internal(&ia, &ib);
                    let got = MemKey::new(Bytes::from(ia)).cmp(&MemKey::new(Bytes::from(ib)));
                    assert_eq!(got, want, "{a:?} vs {b:?}");
                }
            }
        }
    }

    #[test]
    fn get_respects_snapshots_and_order() {
        let m = Arc::new(MemTable::new(1));
        m.add(1, ValueKind::Put, b"a", b"1");
        m.add(3, ValueKind::Put, b"a", b"3");
        m.add(2, ValueKind::Delete, b"b", b"");
        assert_eq!(m.get(b"a", 2).unwrap().2, Bytes::from_static(b"1"));
        assert_eq!(m.get(b"a", 9).unwrap().2, Bytes::from_static(b"3"));
        assert_eq!(m.get(b"a", 0), None);
        assert_eq!(m.get(b"b", 9).unwrap().1, ValueKind::Delete);
        assert_eq!(m.get(b"c", 9), None);
        let mut it = m.iter();
        it.seek_to_first();
        let mut keys = vec![];
        while it.valid() {
            let p = types::parse_internal_key(it.key()).unwrap();
            keys.push((p.user_key.to_vec(), p.seq));
            it.next();
        }
        assert_eq!(
            keys,
            vec![(b"a".to_vec(), 3), (b"a".to_vec(), 1), (b"b".to_vec(), 2)]
        );
        it.seek_to_last();
        it.prev();
        assert_eq!(types::parse_internal_key(it.key()).unwrap().seq, 1);
        m.add_range_delete(5, b"a", b"c");
        assert_eq!(m.max_covering_tombstone(b"b", 9), 5);
        assert_eq!(m.max_covering_tombstone(b"b", 4), 0);
    }
}
