//! Table metadata and the reference-counted handle that deletes an obsolete table's file once
//! the last version holding it is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::types::SeqNo;

/// What the manifest records about a table. Key bounds are user keys; `largest` is exclusive
/// when it comes from the end of a range tombstone rather than from a point key.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileMeta {
    /// The table's file number.
    pub id: u64,
    /// The table file's size in bytes.
    pub size: u64,
    /// The smallest user key (of a point entry or a range tombstone's start).
    pub smallest: Vec<u8>,
    /// The largest user key (of a point entry, or a range tombstone's end).
    pub largest: Vec<u8>,
    /// `largest` is a range tombstone's exclusive end, not a key the table holds.
    pub largest_exclusive: bool,
    /// The smallest sequence number of any entry or range tombstone.
    pub smallest_seq: SeqNo,
    /// The largest sequence number of any entry or range tombstone.
    pub largest_seq: SeqNo,
    /// Point entries (puts and deletions).
    pub num_entries: u64,
    /// Point deletions.
    pub num_deletions: u64,
    /// Range tombstones.
    pub num_range_deletions: u64,
    /// Where the table's bytes live.
    pub tier: crate::tier::Tier,
}

impl FileMeta {
    /// Whether every key of this file sorts before `user_key`.
    #[inline]
    pub fn ends_before(&self, user_key: &[u8]) -> bool {
        match self.largest.as_slice().cmp(user_key) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => self.largest_exclusive,
            std::cmp::Ordering::Greater => false,
        }
    }

    /// Whether `user_key` falls in this file's key range.
    #[inline]
    pub fn contains(&self, user_key: &[u8]) -> bool {
        self.smallest.as_slice() <= user_key && !self.ends_before(user_key)
    }

    /// Whether this file's range meets the inclusive range `[lo, hi]` (`None`: unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let after_lo = lo.is_none_or(|lo| !self.ends_before(lo));
        let before_hi = hi.is_none_or(|hi| self.smallest.as_slice() <= hi);
        after_lo && before_hi
    }

    /// A table of one entry at `key` (sequence 1), for tests of the manifest layer.
    #[cfg(test)]
    pub(crate) fn for_test(id: u64, size: u64, key: &[u8], tier: crate::tier::Tier) -> FileMeta {
        FileMeta {
            id,
            size,
            smallest: key.to_vec(),
            largest: key.to_vec(),
            largest_exclusive: false,
            smallest_seq: 1,
            largest_seq: 1,
            num_entries: 1,
            num_deletions: 0,
            num_range_deletions: 0,
            tier,
        }
    }
}

/// Queue of tables (id, tier) whose files may be deleted.
#[derive(Default)]
pub struct Reaper {
    ids: Mutex<Vec<(u64, crate::tier::Tier)>>,
}

impl Reaper {
    /// Queues table `id` on `tier` for deletion.
    pub fn push(&self, id: u64, tier: crate::tier::Tier) {
        self.ids.lock().push((id, tier));
    }
    /// Takes every queued table, leaving the queue empty.
    pub fn take(&self) -> Vec<(u64, crate::tier::Tier)> {
        std::mem::take(&mut *self.ids.lock())
    }
}

/// A table referenced by versions. When a version edit removes it, it is marked obsolete; when
/// the last version referencing it is dropped, its id goes to the [`Reaper`].
pub struct TableFile {
    /// What the manifest records about the table.
    pub meta: FileMeta,
    obsolete: AtomicBool,
    /// Set while the table is an input of a compaction (HotRAP §3.3: a read that found a
    /// record in this table must not promote it once a compaction may have moved a newer
    /// version below the promotion cache). Cleared if the compaction fails.
    compacting: AtomicBool,
    reaper: Arc<Reaper>,
    /// How often reads find their answer in this table (LogStore's per-table histogram bucket).
    pub temperature: crate::tier::temperature::Temperature,
}

impl TableFile {
    /// A handle to table `meta`; once marked obsolete, its last drop queues it on `reaper`.
    pub fn new(meta: FileMeta, reaper: Arc<Reaper>) -> Arc<Self> {
        Arc::new(TableFile {
            meta,
            obsolete: AtomicBool::new(false),
            compacting: AtomicBool::new(false),
            reaper,
            temperature: Default::default(),
        })
    }
    /// Marks the table removed by a version edit: its file goes once the last handle drops.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }
    /// Whether a version edit removed this table.
    pub fn is_obsolete(&self) -> bool {
        self.obsolete.load(Ordering::Acquire)
    }
    /// Marks the table as a compaction input (`true`), or releases it when the compaction
    /// installed nothing (`false`).
    pub fn set_compacting(&self, on: bool) {
        self.compacting.store(on, Ordering::Release);
    }
    /// Whether the table is, or was, the input of a compaction (and not since released by
    /// its failure).
    pub fn is_compacting(&self) -> bool {
        self.compacting.load(Ordering::Acquire) || self.is_obsolete()
    }
}

impl Drop for TableFile {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            self.reaper.push(self.meta.id, self.meta.tier);
        }
    }
}

impl std::ops::Deref for TableFile {
    type Target = FileMeta;
    fn deref(&self) -> &FileMeta {
        &self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(s: &str, l: &str, excl: bool) -> FileMeta {
        FileMeta {
            id: 1,
            size: 1,
            smallest: s.into(),
            largest: l.into(),
            largest_exclusive: excl,
            smallest_seq: 0,
            largest_seq: 0,
            num_entries: 0,
            num_deletions: 0,
            num_range_deletions: 0,
            tier: Default::default(),
        }
    }

    #[test]
    fn ranges_with_exclusive_ends() {
        let f = meta("b", "d", true);
        assert!(f.contains(b"b") && f.contains(b"c") && !f.contains(b"d"));
        let g = meta("b", "d", false);
        assert!(g.contains(b"d"));
        assert!(f.overlaps(Some(b"c"), None) && !f.overlaps(Some(b"d"), None));
        assert!(!f.overlaps(None, Some(b"a")) && f.overlaps(None, Some(b"b")));
    }
}
