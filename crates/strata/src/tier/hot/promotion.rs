//! HotRAP's promotion cache (§3.1, §3.3): an in-memory layer between the last fast level and
//! the first capacity level holding copies of records read from the capacity tier. A mutable
//! map takes inserts; when it reaches its target size it is sealed into an immutable one that
//! the Checker (promotion by flush, §3.4) turns into an L0 table or folds back.
//!
//! Invariants:
//! - An entry is a copy of the newest version of its key in the capacity tier at the time it
//!   was read. It stays valid until a compaction moves data from the fast tier into the
//!   capacity tier over its key: such a compaction first calls [`PromotionCache::begin_compaction`],
//!   which marks its input tables and takes every entry in its fast inputs' range out of the
//!   cache (promotion by compaction), all under the write side of `guard`.
//! - An insert holds the read side of `guard` (taken with `try_read`: a read never waits) and
//!   aborts if any capacity table the read consulted for the key is marked (§3.3), or if a
//!   compaction into the capacity tier over the key was set up since the read began (the read
//!   takes [`PromotionCache::epoch`] before it pins its version): such a compaction may write a
//!   newer version into a gap of a capacity level, where no table the read consulted covers
//!   the key, so table marks alone cannot see it.
//! - Entries carry their sequence number; a read at an older snapshot skips them.
//!
//! Depends on `version` (table flags) and `types`; never on `db`.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};

use crate::types::SeqNo;
use crate::version::TableFile;

/// A cached copy of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedRecord {
    /// Sequence number of the copied version.
    pub seq: SeqNo,
    /// The copied value.
    pub value: Bytes,
}

fn record_bytes(key: &[u8], r: &CachedRecord) -> usize {
    key.len() + r.value.len() + 8
}

#[derive(Default)]
struct Map {
    entries: BTreeMap<Vec<u8>, CachedRecord>,
    bytes: usize,
}

impl Map {
    fn insert(&mut self, key: Vec<u8>, r: CachedRecord) {
        let add = record_bytes(&key, &r);
        if let Some(old) = self.entries.get(&key) {
            if old.seq >= r.seq {
                return;
            }
            self.bytes -= record_bytes(&key, old);
        }
        self.bytes += add;
        self.entries.insert(key, r);
    }

    fn take_range(&mut self, lo: &[u8], hi: &[u8], out: &mut Vec<(Vec<u8>, CachedRecord)>) {
        let keys: Vec<Vec<u8>> = self
            .entries
            .range::<[u8], _>((Bound::Included(lo), Bound::Included(hi)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            if let Some(r) = self.entries.remove(&k) {
                self.bytes -= record_bytes(&k, &r);
                out.push((k, r));
            }
        }
    }
}

/// A sealed promotion cache awaiting the Checker. Still read by lookups until the Checker
/// retires it; compactions still take entries out of it.
pub struct SealedPromotion {
    id: u64,
    map: RwLock<Map>,
}

impl SealedPromotion {
    /// The entries still present, sorted by key.
    pub fn entries(&self) -> Vec<(Vec<u8>, CachedRecord)> {
        self.map
            .read()
            .entries
            .iter()
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect()
    }

    /// Whether `key` still holds exactly this version (no compaction took it out).
    pub fn still_holds(&self, key: &[u8], seq: SeqNo) -> bool {
        self.map
            .read()
            .entries
            .get(key)
            .is_some_and(|r| r.seq == seq)
    }

    /// Bytes of the entries still present (key + value + 8 per record).
    pub fn bytes(&self) -> usize {
        self.map.read().bytes
    }
}

/// Why an insert did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertOutcome {
    /// The record went into the mutable map (a no-op if it held the same or a newer version).
    Inserted,
    /// A consulted table is being (or was) compacted, or a compaction was being set up.
    Aborted,
}

/// Compactions into the capacity tier remembered for inserts in flight (more than this many
/// during one read abort its insert).
const RECENT_RANGES: usize = 64;

/// `(epoch, lo, hi)` of a compaction set-up into the capacity tier.
type MovedRange = (u64, Vec<u8>, Vec<u8>);

/// The promotion cache: one mutable map and the sealed ones, newest first.
pub struct PromotionCache {
    guard: RwLock<()>,
    /// Bumped by every compaction set-up that moves data into the capacity tier.
    epoch: AtomicU64,
    /// `(epoch, lo, hi)` of the latest such set-ups, oldest first.
    recent: Mutex<VecDeque<MovedRange>>,
    mutable: RwLock<Map>,
    sealed: RwLock<Vec<Arc<SealedPromotion>>>,
    target_bytes: usize,
    next_id: AtomicU64,
}

impl PromotionCache {
    /// A cache whose mutable map is sealed at `target_bytes` (HotRAP: the target table size).
    pub fn new(target_bytes: usize) -> Self {
        PromotionCache {
            guard: RwLock::new(()),
            epoch: AtomicU64::new(0),
            recent: Mutex::new(VecDeque::new()),
            mutable: RwLock::new(Map::default()),
            sealed: RwLock::new(Vec::new()),
            target_bytes: target_bytes.max(1),
            next_id: AtomicU64::new(1),
        }
    }

    /// Size at which the mutable map is sealed, in bytes.
    pub fn target_bytes(&self) -> usize {
        self.target_bytes
    }

    /// The current epoch: a read takes it before pinning its version and hands it to
    /// [`PromotionCache::try_insert`].
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Whether a compaction into the capacity tier over `key` was set up after `since`
    /// (or too many were to tell).
    fn moved_since(&self, key: &[u8], since: u64) -> bool {
        if self.epoch.load(Ordering::Acquire) == since {
            return false;
        }
        let r = self.recent.lock();
        match r.front() {
            Some((oldest, _, _)) if *oldest <= since + 1 => r
                .iter()
                .filter(|(e, _, _)| *e > since)
                .any(|(_, lo, hi)| lo.as_slice() <= key && key <= hi.as_slice()),
            _ => true,
        }
    }

    /// The cached value of `key` visible at `snapshot`, if any.
    pub fn get(&self, key: &[u8], snapshot: SeqNo) -> Option<Bytes> {
        if let Some(r) = self.mutable.read().entries.get(key) {
            if r.seq <= snapshot {
                return Some(r.value.clone());
            }
        }
        for s in self.sealed.read().iter() {
            if let Some(r) = s.map.read().entries.get(key) {
                if r.seq <= snapshot {
                    return Some(r.value.clone());
                }
            }
        }
        None
    }

    /// Inserts a copy of `key`'s newest version, read from the capacity tier after consulting
    /// `sources` (every capacity table whose range holds the key) by a read that took epoch
    /// `since` before pinning its version. Returns whether it was inserted and, when the insert
    /// filled the mutable map, the newly sealed map.
    pub fn try_insert(
        &self,
        key: &[u8],
        seq: SeqNo,
        value: Bytes,
        sources: &[Arc<TableFile>],
        since: u64,
    ) -> (InsertOutcome, Option<Arc<SealedPromotion>>) {
        let Some(_g) = self.guard.try_read() else {
            return (InsertOutcome::Aborted, None);
        };
        if sources.iter().any(|t| t.is_compacting()) || self.moved_since(key, since) {
            return (InsertOutcome::Aborted, None);
        }
        let mut m = self.mutable.write();
        m.insert(key.to_vec(), CachedRecord { seq, value });
        if m.bytes < self.target_bytes {
            return (InsertOutcome::Inserted, None);
        }
        let full = std::mem::take(&mut *m);
        let sealed = Arc::new(SealedPromotion {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            map: RwLock::new(full),
        });
        // Sealed while the mutable map is still locked: a lookup never misses an entry that
        // is moving between the two.
        self.sealed.write().insert(0, sealed.clone());
        drop(m);
        (InsertOutcome::Inserted, Some(sealed))
    }

    /// Sets up a compaction: marks its input tables as compacting and, if it moves data from
    /// the fast tier into the capacity tier over `[lo, hi]`, takes every cached entry in that
    /// range out of the cache (mutable and sealed) and returns them, sorted by key.
    pub fn begin_compaction(
        &self,
        inputs: &[&Arc<TableFile>],
        range: Option<(&[u8], &[u8])>,
    ) -> Vec<(Vec<u8>, CachedRecord)> {
        let _g = self.guard.write();
        for t in inputs {
            t.set_compacting(true);
        }
        let mut out = Vec::new();
        if let Some((lo, hi)) = range {
            let e = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
            let mut r = self.recent.lock();
            r.push_back((e, lo.to_vec(), hi.to_vec()));
            if r.len() > RECENT_RANGES {
                r.pop_front();
            }
            drop(r);
            self.mutable.write().take_range(lo, hi, &mut out);
            for s in self.sealed.read().iter() {
                s.map.write().take_range(lo, hi, &mut out);
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.seq.cmp(&a.1.seq)));
        out.dedup_by(|b, a| a.0 == b.0);
        out
    }

    /// The sealed maps, oldest first (the Checker's queue).
    pub fn sealed(&self) -> Vec<Arc<SealedPromotion>> {
        self.sealed.read().iter().rev().cloned().collect()
    }

    /// Retires a sealed map after the Checker handled it; `reinsert` records go back into the
    /// mutable map (too few hot records for a table of their own). The caller holds whatever
    /// serializes it with compaction set-up (the database lock), so no entry can be taken out
    /// between the Checker's last look and this call.
    pub fn retire(&self, sealed: &SealedPromotion, reinsert: Vec<(Vec<u8>, CachedRecord)>) {
        let _g = self.guard.write();
        {
            let mut m = self.mutable.write();
            for (k, r) in reinsert {
                if sealed.still_holds(&k, r.seq) {
                    m.insert(k, r);
                }
            }
        }
        self.sealed.write().retain(|s| s.id != sealed.id);
    }

    /// Bytes in the mutable map and in the sealed ones.
    pub fn bytes(&self) -> (usize, usize) {
        let sealed = self.sealed.read().iter().map(|s| s.bytes()).sum();
        (self.mutable.read().bytes, sealed)
    }

    /// Entries in the mutable map and in the sealed ones.
    pub fn len(&self) -> usize {
        self.mutable.read().entries.len()
            + self
                .sealed
                .read()
                .iter()
                .map(|s| s.map.read().entries.len())
                .sum::<usize>()
    }

    /// Whether the mutable and sealed maps hold no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::{FileMeta, Reaper};

    fn table(id: u64) -> Arc<TableFile> {
        TableFile::new(
            FileMeta {
                id,
                size: 1,
                smallest: b"a".to_vec(),
                largest: b"z".to_vec(),
                largest_exclusive: false,
                smallest_seq: 0,
                largest_seq: 0,
                num_entries: 1,
                num_deletions: 0,
                num_range_deletions: 0,
                tier: crate::tier::Tier::Capacity,
            },
            Arc::<Reaper>::default(),
        )
    }

    #[test]
    fn inserts_lookups_and_snapshots() {
        let c = PromotionCache::new(1 << 20);
        let t = table(1);
        let (o, s) = c.try_insert(
            b"k",
            10,
            Bytes::from_static(b"v"),
            std::slice::from_ref(&t),
            0,
        );
        assert_eq!((o, s.is_none()), (InsertOutcome::Inserted, true));
        assert_eq!(c.get(b"k", 10).as_deref(), Some(&b"v"[..]));
        assert_eq!(
            c.get(b"k", 9),
            None,
            "an older snapshot must not see the copy"
        );
        // An older copy never replaces a newer one.
        c.try_insert(b"k", 5, Bytes::from_static(b"old"), &[t], 0);
        assert_eq!(c.get(b"k", 100).as_deref(), Some(&b"v"[..]));
    }

    #[test]
    fn compaction_marks_tables_and_takes_its_range() {
        let c = PromotionCache::new(1 << 20);
        let (t1, t2) = (table(1), table(2));
        for k in [b"a", b"c", b"e", b"g"] {
            c.try_insert(k, 1, Bytes::from_static(b"v"), std::slice::from_ref(&t1), 0);
        }
        let since = c.epoch();
        let taken = c.begin_compaction(&[&t1], Some((b"b", b"e")));
        let keys: Vec<&[u8]> = taken.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, vec![&b"c"[..], &b"e"[..]]);
        assert_eq!(c.get(b"c", 9), None);
        assert!(c.get(b"a", 9).is_some() && c.get(b"g", 9).is_some());
        // §3.3: a read that consulted a compacting table cannot insert.
        let (o, _) = c.try_insert(
            b"x",
            1,
            Bytes::from_static(b"v"),
            &[t2.clone(), t1.clone()],
            c.epoch(),
        );
        assert_eq!(o, InsertOutcome::Aborted);
        assert_eq!(c.get(b"x", 9), None);
        t1.set_compacting(false);
        let (o, _) = c.try_insert(b"x", 1, Bytes::from_static(b"v"), &[t2.clone(), t1], since);
        assert_eq!(
            o,
            InsertOutcome::Inserted,
            "x is outside the compaction's range"
        );
        // A read that began before a compaction into the capacity tier over its key was set
        // up cannot insert, even if no table it consulted is marked (the compaction may write
        // the newer version into a gap of the capacity level).
        let (o, _) = c.try_insert(
            b"d",
            1,
            Bytes::from_static(b"v"),
            std::slice::from_ref(&t2),
            since,
        );
        assert_eq!(o, InsertOutcome::Aborted);
        let (o, _) = c.try_insert(
            b"d",
            1,
            Bytes::from_static(b"v"),
            std::slice::from_ref(&t2),
            c.epoch(),
        );
        assert_eq!(o, InsertOutcome::Inserted);
        // More set-ups than are remembered: every older read aborts.
        for _ in 0..=RECENT_RANGES {
            c.begin_compaction(&[], Some((b"q", b"r")));
        }
        let (o, _) = c.try_insert(b"z", 1, Bytes::from_static(b"v"), &[t2], since);
        assert_eq!(o, InsertOutcome::Aborted);
    }

    #[test]
    fn sealing_keeps_entries_visible_and_compactions_reach_sealed_maps() {
        let c = PromotionCache::new(200);
        let t = table(1);
        let mut sealed = None;
        for i in 0..10u8 {
            let (_, s) = c.try_insert(
                &[b'k', i],
                1,
                Bytes::from(vec![i; 20]),
                std::slice::from_ref(&t),
                0,
            );
            sealed = sealed.or(s);
        }
        let s = sealed.expect("200 bytes fill after seven inserts");
        assert_eq!(c.sealed().len(), 1);
        assert!(
            c.get(&[b'k', 0], 5).is_some(),
            "sealed entries are still read"
        );
        let taken = c.begin_compaction(&[], Some((&[b'k', 0], &[b'k', 1])));
        assert_eq!(taken.len(), 2);
        assert!(!s.still_holds(&[b'k', 0], 1));
        // Retiring folds the surviving records back into the mutable map.
        let rest = s.entries();
        c.retire(&s, rest.clone());
        assert!(c.sealed().is_empty());
        for (k, _) in rest {
            assert!(c.get(&k, 5).is_some());
        }
        assert_eq!(c.get(&[b'k', 0], 5), None);
    }
}
