//! The memtable: a concurrent arena skiplist of internal keys ([`skiplist`]), plus the range
//! tombstones written into it.
//!
//! Invariants: an entry is never removed or changed once inserted, so readers and iterators run
//! without locks while writers insert (several at once with concurrent memtable writes); each
//! internal key (user key, sequence number) is unique. A memtable is tied to the WAL file that
//! holds its writes (`wal_number`). Its size is the arena bytes its entries take (keys, values,
//! skiplist towers) plus the range tombstones. An optional whole-key Bloom filter
//! ([`MemBloom`]) lets point lookups of absent keys skip the skiplist. Depends on `types`,
//! `range_del`, `iter`.

mod bloom;
mod skiplist;

pub use bloom::MemBloom;
pub use skiplist::INSERT_GROUP;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtOrd};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::range_del::{Fragments, RangeTombstone};
use crate::types::{self, SeqNo, ValueKind};
use skiplist::{Cursor, SkipList, Target};

/// Bookkeeping charged per range tombstone (list entry, fragments).
const RANGE_DEL_OVERHEAD: usize = 64;

#[derive(Default)]
struct RangeDels {
    list: Vec<RangeTombstone>,
    fragments: Option<Arc<Fragments>>,
}

/// An in-memory sorted buffer of recent writes.
pub struct MemTable {
    map: SkipList,
    /// Bytes of range tombstones (point entries are counted by the skiplist's arena).
    range_del_size: AtomicUsize,
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
            map: SkipList::new(),
            range_del_size: AtomicUsize::new(0),
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
        // Before the entry becomes reachable: whoever can see it sees its filter bits.
        if let Some(b) = &self.bloom {
            b.add(key);
        }
        if !self
            .map
            .insert(key, types::pack_trailer(seq, kind as u8), value)
        {
            // The same (key, sequence number) again (a replayed or promoted write): the entry
            // is already here.
            return;
        }
        self.entries.fetch_add(1, AtOrd::Relaxed);
        if kind == ValueKind::Delete {
            self.deletes.fetch_add(1, AtOrd::Relaxed);
        }
        self.largest_seq.fetch_max(seq, AtOrd::Relaxed);
    }

    /// Inserts puts and point deletes (`(seq, kind, key, value)`, at most [`INSERT_GROUP`]) as
    /// [`MemTable::add`] does each, with their skiplist searches overlapped
    /// ([`SkipList::insert_group`]): for a batch of many keys, much less time waiting for
    /// memory.
    pub fn add_group(&self, entries: &[(SeqNo, ValueKind, &[u8], &[u8])]) {
        let mut group: [(&[u8], u64, &[u8]); INSERT_GROUP] = [(&[], 0, &[]); INSERT_GROUP];
        for (i, &(seq, kind, key, value)) in entries.iter().enumerate() {
            // Before the entries become reachable, as in `add`.
            if let Some(b) = &self.bloom {
                b.add(key);
            }
            group[i] = (key, types::pack_trailer(seq, kind as u8), value);
        }
        let mut inserted = [false; INSERT_GROUP];
        self.map
            .insert_group(&group[..entries.len()], &mut inserted);
        for (&(seq, kind, _, _), _) in entries.iter().zip(inserted).filter(|(_, new)| *new) {
            self.entries.fetch_add(1, AtOrd::Relaxed);
            if kind == ValueKind::Delete {
                self.deletes.fetch_add(1, AtOrd::Relaxed);
            }
            self.largest_seq.fetch_max(seq, AtOrd::Relaxed);
        }
    }

    /// Records a range tombstone `[start, end)`.
    pub fn add_range_delete(&self, seq: SeqNo, start: &[u8], end: &[u8]) {
        let mut rd = self.range_dels.lock();
        rd.list.push(RangeTombstone::new(start, end, seq));
        rd.fragments = None;
        self.has_range_dels.store(true, AtOrd::Release);
        self.range_del_size
            .fetch_add(start.len() + end.len() + RANGE_DEL_OVERHEAD, AtOrd::Relaxed);
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
        let t = Target::new(
            user_key,
            types::pack_trailer(snapshot, types::KIND_FOR_SEEK),
        );
        let (ik, value) = self.map.get_ge(&t)?;
        if types::user_key(ik) != user_key {
            return None;
        }
        let p = types::parse_internal_key(ik).ok()?;
        // The arena is freed with the memtable, so the value is copied out (as RocksDB copies
        // a memtable value into the caller's buffer).
        Some((p.seq, p.kind, Bytes::copy_from_slice(value)))
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
        self.map.memory_used() + self.range_del_size.load(AtOrd::Relaxed)
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
            cur: Cursor::new(self.clone(), |m| &m.map),
        }
    }
}

/// Iterates a memtable's point entries. Holds the memtable alive, and with it the skiplist
/// nodes its cursor points at.
pub struct MemTableIter {
    cur: Cursor<MemTable>,
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.cur.valid()
    }
    fn seek_to_first(&mut self) {
        self.cur.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.cur.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.cur.seek(&Target::internal(target));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur.seek_for_prev(&Target::internal(target));
    }
    fn next(&mut self) {
        self.cur.next();
    }
    fn prev(&mut self) {
        self.cur.prev();
    }
    fn key(&self) -> &[u8] {
        self.cur.entry().map_or(&[], |e| e.0)
    }
    fn value(&self) -> &[u8] {
        self.cur.entry().map_or(&[], |e| e.1)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys whose heads tie, pad with zeros or differ only past eight bytes iterate in
    /// `compare_internal` order.
    #[test]
    fn head_order_matches_internal_order() {
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
        let m = Arc::new(MemTable::new(1));
        let mut want = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            for seq in [1, 2] {
                m.add(10 * i as u64 + seq, ValueKind::Put, k, b"v");
                want.push(types::internal_key(
                    k,
                    10 * i as u64 + seq,
                    ValueKind::Put as u8,
                ));
            }
        }
        want.sort_by(|a, b| types::compare_internal(a, b));
        let mut it = m.iter();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push(it.key().to_vec());
            it.next();
        }
        assert_eq!(got, want);
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
