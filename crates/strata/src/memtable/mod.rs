//! The memtable: a concurrent arena skiplist of user keys, each with the chain of its versions
//! ([`skiplist`]), plus the range tombstones written into it.
//!
//! Invariants: an entry is never removed or changed once inserted, so readers and iterators run
//! without locks while writers insert (several at once with concurrent memtable writes); each
//! internal key (user key, sequence number) is unique. A memtable is tied to the WAL file that
//! holds its writes (`wal_number`). Its size is the arena bytes its entries take (keys, values,
//! skiplist towers) plus the range tombstones. An optional whole-key Bloom filter
//! ([`MemBloom`]) lets point lookups of absent keys skip the skiplist. [`InsertGroup`] feeds
//! write-batch operations in by groups (the write path and WAL replay). Depends on `types`,
//! `range_del`, `iter`, `batch` (its operation type).

mod arena;
mod bloom;
mod point_index;
pub(crate) mod prefetch;
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
    merges: AtomicU64,
    largest_seq: AtomicU64,
    has_range_dels: AtomicBool,
    range_dels: Mutex<RangeDels>,
    bloom: Option<MemBloom>,
    wal_number: u64,
    /// Every write with a larger sequence number went into this memtable or a newer one
    /// (`u64::MAX`: not known, e.g. a memtable of recovered WAL records).
    base_seq: AtomicU64,
}

impl MemTable {
    /// A memtable for the writes of WAL `wal_number`, without Bloom filter or point index.
    pub fn new(wal_number: u64) -> Self {
        Self::with_bloom(wal_number, 0)
    }

    /// A memtable with the whole-key Bloom filter and point index `opts` ask for; the index
    /// sized for `expected_keys` (the distinct keys of the memtable before it; see
    /// [`crate::Options::memtable_point_index_slots`]).
    pub fn for_options(wal_number: u64, opts: &crate::Options, expected_keys: Option<u64>) -> Self {
        Self::with_filters(
            wal_number,
            opts.memtable_bloom_bytes(),
            opts.memtable_point_index_slots(expected_keys),
        )
    }

    /// A memtable with a whole-key Bloom filter of `bloom_bytes` (none when 0).
    pub fn with_bloom(wal_number: u64, bloom_bytes: usize) -> Self {
        Self::with_filters(wal_number, bloom_bytes, 0)
    }

    /// A memtable with a whole-key Bloom filter of `bloom_bytes` and a point index of about
    /// `index_slots` slots (each none when 0).
    pub fn with_filters(wal_number: u64, bloom_bytes: usize, index_slots: usize) -> Self {
        MemTable {
            map: SkipList::with_index(index_slots),
            range_del_size: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
            deletes: AtomicU64::new(0),
            merges: AtomicU64::new(0),
            largest_seq: AtomicU64::new(0),
            has_range_dels: AtomicBool::new(false),
            range_dels: Mutex::new(RangeDels::default()),
            bloom: (bloom_bytes > 0).then(|| MemBloom::new(bloom_bytes)),
            wal_number,
            base_seq: AtomicU64::new(u64::MAX),
        }
    }

    /// Records that every write with a sequence number above `seq` goes into this memtable
    /// or a newer one (set when it becomes the active memtable).
    pub fn set_base_seq(&self, seq: SeqNo) {
        self.base_seq.store(seq, AtOrd::Release);
    }

    /// See [`MemTable::set_base_seq`]; `u64::MAX` when not known.
    pub fn base_seq(&self) -> SeqNo {
        self.base_seq.load(AtOrd::Acquire)
    }

    /// The WAL file holding this memtable's writes.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Inserts a put, a point delete or a merge operand.
    pub fn add(&self, seq: SeqNo, kind: ValueKind, key: &[u8], value: &[u8]) {
        // Before the entry becomes reachable: whoever can see it sees its filter bits.
        if let Some(b) = &self.bloom {
            b.add(skiplist::point_hash(key));
        }
        if !self
            .map
            .insert(key, types::pack_trailer(seq, kind as u8), value)
        {
            // The same (key, sequence number) again (a replayed or promoted write): the entry
            // is already here.
            return;
        }
        self.account(seq, kind);
    }

    /// Counts a newly linked point entry.
    fn account(&self, seq: SeqNo, kind: ValueKind) {
        self.entries.fetch_add(1, AtOrd::Relaxed);
        if kind == ValueKind::Delete {
            self.deletes.fetch_add(1, AtOrd::Relaxed);
        } else if kind == ValueKind::Merge {
            self.merges.fetch_add(1, AtOrd::Relaxed);
        }
        self.largest_seq.fetch_max(seq, AtOrd::Relaxed);
    }

    /// Inserts puts and point deletes (`(seq, kind, key, value)`, at most [`INSERT_GROUP`]) as
    /// [`MemTable::add`] does each, with their skiplist searches overlapped
    /// ([`SkipList::insert_group_hashed`]): for a batch of many keys, much less time waiting for
    /// memory.
    pub fn add_group(&self, entries: &[(SeqNo, ValueKind, &[u8], &[u8])]) {
        let mut group: [(&[u8], u64, &[u8]); INSERT_GROUP] = [(&[], 0, &[]); INSERT_GROUP];
        let mut hashes = [0u64; INSERT_GROUP];
        for (i, &(seq, kind, key, value)) in entries.iter().enumerate() {
            group[i] = (key, types::pack_trailer(seq, kind as u8), value);
            hashes[i] = skiplist::point_hash(key);
        }
        let n = entries.len();
        let hashes = &hashes[..n];
        // The filter blocks and index slots of every entry start loading at once; the
        // skiplist searches run meanwhile.
        self.map.prefetch_slots(hashes);
        if let Some(b) = &self.bloom {
            for &h in hashes {
                b.prefetch(h);
            }
            // Before the entries become reachable, as in `add`.
            for &h in hashes {
                b.add(h);
            }
        }
        let mut inserted = [false; INSERT_GROUP];
        self.map
            .insert_group_hashed(&group[..n], hashes, &mut inserted);
        for (&(seq, kind, _, _), _) in entries.iter().zip(inserted).filter(|(_, new)| *new) {
            self.account(seq, kind);
        }
    }

    /// Inserts one write-batch operation with sequence number `seq` (a point operation as
    /// [`MemTable::add`], a range deletion as [`MemTable::add_range_delete`]; an empty range
    /// is nothing).
    pub fn add_op(&self, seq: SeqNo, op: crate::batch::BatchOp<'_>) {
        use crate::batch::BatchOp;
        match op {
            BatchOp::Put(k, v) => self.add(seq, ValueKind::Put, k, v),
            BatchOp::Delete(k) => self.add(seq, ValueKind::Delete, k, &[]),
            BatchOp::Merge(k, v) => self.add(seq, ValueKind::Merge, k, v),
            BatchOp::DeleteRange(s, e) if s < e => self.add_range_delete(seq, s, e),
            BatchOp::DeleteRange(..) => {}
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

    /// Starts loading into the CPU caches what [`MemTable::get`] of these keys will touch first
    /// (see [`SkipList::prefetch_points`]), overlapping their cache misses. A hint.
    pub fn prefetch_gets(&self, user_keys: &[&[u8]]) {
        let mut hashes = [0u64; INSERT_GROUP];
        for chunk in user_keys.chunks(INSERT_GROUP) {
            for (h, k) in hashes.iter_mut().zip(chunk) {
                *h = skiplist::point_hash(k);
            }
            self.map.prefetch_points(&hashes[..chunk.len()]);
        }
    }

    /// The newest point entry for `user_key` with sequence number `<= snapshot`.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(SeqNo, ValueKind, Bytes)> {
        let t = Target::new(
            user_key,
            types::pack_trailer(snapshot, types::KIND_FOR_SEEK),
        );
        // The point index answers absent keys with a slot; the filter only saves searches.
        let h = skiplist::point_hash(user_key);
        let (ik, value) = self.map.get_point_hashed(&t, h, || {
            self.bloom.as_ref().is_none_or(|b| b.may_contain(h))
        })?;
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

    /// Bytes of the point index (not part of [`MemTable::approximate_size`]).
    pub fn point_index_bytes(&self) -> usize {
        self.map.index_bytes()
    }

    /// Point entries inserted (puts, deletes and merge operands; range tombstones not
    /// counted).
    pub fn num_entries(&self) -> u64 {
        self.entries.load(AtOrd::Relaxed)
    }

    /// Distinct user keys of the point entries.
    pub fn num_keys(&self) -> u64 {
        self.map.keys() as u64
    }

    /// Point deletions inserted.
    pub fn num_deletes(&self) -> u64 {
        self.deletes.load(AtOrd::Relaxed)
    }

    /// Merge operands inserted.
    pub fn num_merges(&self) -> u64 {
        self.merges.load(AtOrd::Relaxed)
    }

    /// The largest sequence number written, range tombstones included (0 while empty).
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
            shadowed: None,
        }
    }

    /// An iterator over the point entries that a flush under `snapshots` (ascending) writes or
    /// folds: it leaves out every version shadowed by a newer put or deletion of its key that
    /// no snapshot separates it from (the versions the compaction iterator would drop as
    /// shadowed), without reading them when no snapshot is older than the newer version.
    /// Merge operands are all yielded (the compaction iterator folds them). Only `next` skips;
    /// seeks and `prev` move over every version.
    pub fn flush_iter(self: &Arc<Self>, snapshots: &[SeqNo]) -> MemTableIter {
        debug_assert!(snapshots.is_sorted());
        MemTableIter {
            cur: Cursor::new(self.clone(), |m| &m.map),
            shadowed: Some(snapshots.into()),
        }
    }
}

/// Iterates a memtable's point entries. Holds the memtable alive, and with it the skiplist
/// nodes its cursor points at.
pub struct MemTableIter {
    cur: Cursor<MemTable>,
    /// [`MemTable::flush_iter`]: the snapshots (ascending) under which shadowed versions are
    /// skipped; `None` yields every version.
    shadowed: Option<Box<[SeqNo]>>,
}

/// Moves `cur` forward past its entry and the versions that entry shadows under `snapshots`
/// (ascending; [`MemTable::flush_iter`]).
fn next_unshadowed(cur: &mut Cursor<MemTable>, snapshots: &[SeqNo]) {
    let Some((ik, _)) = cur.entry() else {
        return;
    };
    let trailer = types::trailer(ik);
    let (seq, kind) = (trailer >> 8, (trailer & 0xff) as u8);
    if kind == ValueKind::Merge as u8 {
        cur.next();
        return;
    }
    // An older version is needed only by a snapshot that sees it and not this one: the newest
    // snapshot older than `seq` keeps the newest version at or below it.
    let i = snapshots.partition_point(|&s| s < seq);
    let floor = i
        .checked_sub(1)
        .map(|i| types::pack_trailer(snapshots[i] + 1, 0));
    cur.skip_older(floor);
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
        match &self.shadowed {
            Some(snapshots) => next_unshadowed(&mut self.cur, snapshots),
            None => self.cur.next(),
        }
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

/// Write-batch operations waiting to go into a memtable together: point operations are
/// inserted [`INSERT_GROUP`] at a time with [`MemTable::add_group`] (their skiplist searches
/// overlap), range deletions at once. The owner calls [`InsertGroup::insert`] before the
/// operations' bytes go, and before anything that must see them (a lookup, sealing the
/// memtable).
pub struct InsertGroup<'a> {
    ops: [(SeqNo, ValueKind, &'a [u8], &'a [u8]); INSERT_GROUP],
    n: usize,
}

impl Default for InsertGroup<'_> {
    fn default() -> Self {
        InsertGroup {
            ops: [(0, ValueKind::Put, &[], &[]); INSERT_GROUP],
            n: 0,
        }
    }
}

impl<'a> InsertGroup<'a> {
    /// Adds operation `op` with sequence number `seq`, inserting the group into `mem` when it
    /// is full.
    pub fn add(&mut self, mem: &MemTable, seq: SeqNo, op: crate::batch::BatchOp<'a>) {
        use crate::batch::BatchOp;
        self.ops[self.n] = match op {
            BatchOp::Put(k, v) => (seq, ValueKind::Put, k, v),
            BatchOp::Delete(k) => (seq, ValueKind::Delete, k, &[]),
            BatchOp::Merge(k, v) => (seq, ValueKind::Merge, k, v),
            range => return mem.add_op(seq, range),
        };
        self.n += 1;
        if self.n == INSERT_GROUP {
            self.insert(mem);
        }
    }

    /// Inserts the waiting operations into `mem` (a lone one as [`MemTable::add`], which
    /// costs less than a group of one).
    pub fn insert(&mut self, mem: &MemTable) {
        match self.n {
            0 => {}
            1 => {
                let (seq, kind, k, v) = self.ops[0];
                mem.add(seq, kind, k, v);
            }
            n => mem.add_group(&self.ops[..n]),
        }
        self.n = 0;
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

    /// A flush iterator yields exactly the versions a flush keeps or folds: per key, newest
    /// first, a version follows a yielded merge operand, or lies in an older snapshot stripe
    /// than the yielded put or deletion before it (the compaction iterator's shadowing rule,
    /// stated in stripes); random keys, kinds, version counts and snapshot sets.
    #[test]
    fn flush_iter_skips_exactly_the_shadowed_versions() {
        use std::collections::BTreeMap;
        use strata_test_support::{seed, Rng};
        let s = seed("memtable_flush_iter_skips_shadowed");
        let mut rng = Rng::new(s);
        for round in 0..200 {
            let m = Arc::new(MemTable::new(1));
            // key -> versions (seq, kind), any order
            let mut model: BTreeMap<Vec<u8>, Vec<(u64, ValueKind)>> = BTreeMap::new();
            let nkeys = 1 + rng.below(12);
            for seq in 1..=(1 + rng.below(120)) {
                let k = format!("k{:02}", rng.below(nkeys)).into_bytes();
                let kind = match rng.below(6) {
                    0 => ValueKind::Delete,
                    1 | 2 => ValueKind::Merge,
                    _ => ValueKind::Put,
                };
                m.add(seq, kind, &k, &seq.to_be_bytes());
                model.entry(k).or_default().push((seq, kind));
            }
            let mut snapshots: Vec<u64> = (0..rng.below(5)).map(|_| rng.below(130)).collect();
            snapshots.sort_unstable();
            snapshots.dedup();
            let stripe = |seq: u64| snapshots.partition_point(|&x| x < seq);
            let mut want = Vec::new();
            for (k, versions) in &mut model {
                versions.sort_by_key(|v| std::cmp::Reverse(v.0));
                let mut last: Option<(u64, ValueKind)> = None;
                for &(seq, kind) in versions.iter() {
                    let keep = match last {
                        None => true,
                        Some((_, ValueKind::Merge)) => true,
                        Some((newer, _)) => stripe(seq) < stripe(newer),
                    };
                    if keep {
                        want.push(types::internal_key(k, seq, kind as u8));
                        last = Some((seq, kind));
                    }
                }
            }
            let mut it = m.flush_iter(&snapshots);
            it.seek_to_first();
            let mut got = Vec::new();
            while it.valid() {
                assert_eq!(it.value(), &(types::trailer(it.key()) >> 8).to_be_bytes());
                got.push(it.key().to_vec());
                it.next();
            }
            assert_eq!(got, want, "seed {s} round {round} snapshots {snapshots:?}");
        }
    }

    /// Point lookups at random snapshots agree with a map of every version, with no point
    /// index, a roomy one and one so small it overflows midway (lookups then fall back to the
    /// search), with and without the filter; single entries and groups; versions inserted out
    /// of order (as concurrent writers insert them); each round of lookups after a prefetch
    /// hint for its keys.
    #[test]
    fn gets_match_a_model_with_and_without_a_point_index() {
        use std::collections::BTreeMap;
        use strata_test_support::{seed, Rng};
        let s = seed("memtable_gets_match_a_model");
        let mut rng = Rng::new(s);
        for (bloom, slots) in [(0, 0), (4096, 0), (0, 8192), (4096, 8192), (4096, 64)] {
            let m = MemTable::with_filters(1, bloom, slots);
            // (key, seq) -> (kind, value)
            let mut model: BTreeMap<(Vec<u8>, u64), (ValueKind, Vec<u8>)> = BTreeMap::new();
            let mut seqs: Vec<u64> = (1..=3000).collect();
            for i in (1..seqs.len()).rev() {
                if rng.below(4) == 0 {
                    seqs.swap(i, rng.index(i + 1));
                }
            }
            let key = |rng: &mut Rng| format!("key{:04}", rng.below(400)).into_bytes();
            let mut i = 0;
            while i < seqs.len() {
                let n = (1 + rng.index(INSERT_GROUP)).min(seqs.len() - i);
                let entries: Vec<(u64, ValueKind, Vec<u8>, Vec<u8>)> = seqs[i..i + n]
                    .iter()
                    .map(|&seq| {
                        let kind = if rng.below(5) == 0 {
                            ValueKind::Delete
                        } else {
                            ValueKind::Put
                        };
                        (seq, kind, key(&mut rng), seq.to_be_bytes().to_vec())
                    })
                    .collect();
                if n == 1 {
                    let (seq, kind, k, v) = &entries[0];
                    m.add(*seq, *kind, k, v);
                } else {
                    let refs: Vec<(u64, ValueKind, &[u8], &[u8])> = entries
                        .iter()
                        .map(|(s, kd, k, v)| (*s, *kd, &k[..], &v[..]))
                        .collect();
                    m.add_group(&refs);
                }
                for (seq, kind, k, v) in entries {
                    model.insert((k, seq), (kind, v));
                }
                i += n;
                // Lookups after a prefetch hint for them (which must change nothing).
                let probes: Vec<Vec<u8>> = (0..20).map(|_| key(&mut rng)).collect();
                m.prefetch_gets(&probes.iter().map(Vec::as_slice).collect::<Vec<_>>());
                for k in probes {
                    let snap = rng.below(3200);
                    let want = model
                        .range((k.clone(), 0)..=(k.clone(), snap))
                        .next_back()
                        .map(|((_, seq), (kind, v))| (*seq, *kind, Bytes::from(v.clone())));
                    assert_eq!(
                        m.get(&k, snap),
                        want,
                        "seed {s} bloom {bloom} slots {slots}"
                    );
                }
            }
            assert_eq!(
                m.map.index_is_complete(),
                slots >= 8192,
                "seed {s} slots {slots}"
            );
        }
    }

    /// Writers insert versions of shared keys while a reader looks them up: every answer is a
    /// whole entry, and a key's answers never go back to an older version; at the end each key
    /// answers its newest version.
    #[test]
    fn concurrent_gets_through_the_point_index() {
        let m = Arc::new(MemTable::with_filters(1, 4096, 1 << 14));
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for round in 1..=3000u64 {
                        let seq = round * 2 + w;
                        let k = format!("k{}", round % 300);
                        m.add(seq, ValueKind::Put, k.as_bytes(), &seq.to_be_bytes());
                    }
                })
            })
            .collect();
        let reader = {
            let m = m.clone();
            std::thread::spawn(move || {
                let mut seen = vec![0u64; 300];
                for i in 0..30_000usize {
                    let k = format!("k{}", i % 300);
                    if let Some((seq, _, v)) = m.get(k.as_bytes(), u64::MAX >> 8) {
                        assert_eq!(v.as_ref(), seq.to_be_bytes());
                        assert!(seq >= seen[i % 300], "{k}: {seq} after {}", seen[i % 300]);
                        seen[i % 300] = seq;
                    }
                }
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        assert!(m.map.index_is_complete());
        for r in 0..300u64 {
            let k = format!("k{r}");
            let newest = (1..=3000u64)
                .filter(|round| round % 300 == r)
                .max()
                .map(|round| round * 2 + 1);
            assert_eq!(m.get(k.as_bytes(), u64::MAX >> 8).map(|g| g.0), newest);
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
