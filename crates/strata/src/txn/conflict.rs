//! The commit-time conflict check of optimistic transactions: has any key the transaction
//! tracked been written since its snapshot? Answered from the memtables alone, as RocksDB's
//! optimistic transactions do: every write after the snapshot is in a memtable as long as the
//! newest memtables reach back to it (each memtable records the sequence number after which
//! every write went into it or a newer one, `MemTable::base_seq`); once a flush has taken some
//! of those writes to tables, the check cannot be made and the commit is refused as
//! retryable, never guessed.
//!
//! A transaction committed in a write group with others is also checked against the writes
//! of the group's earlier members ([`GroupWrites`]), which are not in the memtables yet.
//!
//! Pure functions over read-only memtables and batches; run them at the commit moment (no
//! write in flight). Depends on `memtable`, `batch` and `types` only.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::batch::{BatchOp, WriteBatch};
use crate::error::{ErrorRepr, Result};
use crate::iter::InternalIterator;
use crate::memtable::MemTable;
use crate::types::{self, SeqNo, KIND_FOR_SEEK, MAX_SEQ};

/// A key range a transaction read, `[start, end)`; `end` `None`: unbounded.
pub(crate) type ReadRange = (Vec<u8>, Option<Vec<u8>>);

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No tracked key was written after the snapshot.
    Clear,
    /// This key was written (put, deleted or covered by a range deletion) at this sequence
    /// number, after the snapshot.
    Conflict(Vec<u8>, SeqNo),
    /// The writes since the snapshot are not all in memory any more.
    HistoryGone,
}

/// The first write in `[start, end)` of memtable `m` after `snapshot` and up to `now`: a point
/// entry, or a range tombstone overlapping the range.
fn written_in(
    m: &Arc<MemTable>,
    (start, end): &ReadRange,
    snapshot: SeqNo,
    now: SeqNo,
) -> Option<(Vec<u8>, SeqNo)> {
    let mut it = m.iter();
    it.seek(&types::internal_key(start, MAX_SEQ, KIND_FOR_SEEK));
    while it.valid() {
        let k = it.key();
        let user = types::user_key(k);
        if end.as_deref().is_some_and(|e| user >= e) {
            break;
        }
        let seq = types::trailer(k) >> 8;
        if seq > snapshot && seq <= now {
            return Some((user.to_vec(), seq));
        }
        it.next();
    }
    m.range_tombstones()
        .into_iter()
        .filter(|t| t.seq > snapshot && t.seq <= now)
        .filter(|t| t.end.as_slice() > start.as_slice())
        .find(|t| end.as_deref().is_none_or(|e| t.start.as_slice() < e))
        .map(|t| (t.start.clone(), t.seq))
}

/// Checks `keys` and key ranges `ranges` against the memtables `mems` (newest first), for
/// writes after `snapshot` and up to `now` (the last published sequence number).
pub(crate) fn check<'k>(
    mems: &[&Arc<MemTable>],
    snapshot: SeqNo,
    now: SeqNo,
    keys: impl IntoIterator<Item = &'k [u8]>,
    ranges: &[ReadRange],
) -> Verdict {
    if now <= snapshot {
        return Verdict::Clear;
    }
    // The newest memtables that together hold every write after the snapshot.
    let Some(oldest) = mems.iter().position(|m| m.base_seq() <= snapshot) else {
        return Verdict::HistoryGone;
    };
    let window = &mems[..=oldest];
    for key in keys {
        for m in window {
            if let Some((seq, _, _)) = m.get(key, now) {
                if seq > snapshot {
                    return Verdict::Conflict(key.to_vec(), seq);
                }
            }
            let covered = m.max_covering_tombstone(key, now);
            if covered > snapshot {
                return Verdict::Conflict(key.to_vec(), covered);
            }
        }
    }
    for range in ranges {
        for m in window {
            if let Some((key, seq)) = written_in(m, range, snapshot, now) {
                return Verdict::Conflict(key, seq);
            }
        }
    }
    Verdict::Clear
}

/// The writes of a write group's members taken so far, by the group's leader, so that a
/// transaction later in the group is checked against them too (they are not in the memtables
/// yet when the leader checks). Only the default family's writes are kept: transactions write
/// no other family.
#[derive(Default)]
pub(crate) struct GroupWrites {
    /// Each key written (put, delete, merge) and the sequence number of its last write.
    keys: BTreeMap<Vec<u8>, SeqNo>,
    /// Range deletions `[start, end)` and their sequence numbers.
    ranges: Vec<(Vec<u8>, Vec<u8>, SeqNo)>,
}

impl GroupWrites {
    /// Adds a member's batch, whose operations take sequence numbers from `first`.
    pub(crate) fn add(&mut self, batch: &WriteBatch, first: SeqNo) {
        for (i, (family, op)) in batch.iter_cf().enumerate() {
            if family != 0 {
                continue;
            }
            let seq = first + i as SeqNo;
            match op {
                BatchOp::Put(k, _) | BatchOp::Delete(k) | BatchOp::Merge(k, _) => {
                    self.keys.insert(k.to_vec(), seq);
                }
                BatchOp::DeleteRange(s, e) => self.ranges.push((s.to_vec(), e.to_vec(), seq)),
            }
        }
    }

    /// The first of `keys` or `ranges` an earlier member wrote: the key (a range's first
    /// written key, or a range deletion's start) and the sequence number of that write.
    pub(crate) fn conflict<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        ranges: &[ReadRange],
    ) -> Option<(Vec<u8>, SeqNo)> {
        if self.keys.is_empty() && self.ranges.is_empty() {
            return None;
        }
        for key in keys {
            if let Some(seq) = self.keys.get(key) {
                return Some((key.to_vec(), *seq));
            }
            if let Some((_, _, seq)) = self
                .ranges
                .iter()
                .find(|(s, e, _)| s.as_slice() <= key && key < e.as_slice())
            {
                return Some((key.to_vec(), *seq));
            }
        }
        for (start, end) in ranges {
            let upper = match end {
                Some(e) => Bound::Excluded(e.as_slice()),
                None => Bound::Unbounded,
            };
            let inside = self
                .keys
                .range::<[u8], _>((Bound::Included(start.as_slice()), upper))
                .next();
            if let Some((k, seq)) = inside {
                return Some((k.clone(), *seq));
            }
            if let Some((s, _, seq)) = self.ranges.iter().find(|(s, e, _)| {
                e.as_slice() > start.as_slice() && end.as_deref().is_none_or(|x| s.as_slice() < x)
            }) {
                return Some((s.clone(), *seq));
            }
        }
        None
    }
}

/// The commit's outcome for a verdict: `Busy` on a conflict, `TryAgain` when history is gone.
pub(crate) fn into_result(v: Verdict, snapshot: SeqNo) -> Result<()> {
    match v {
        Verdict::Clear => Ok(()),
        Verdict::Conflict(key, seq) => Err(ErrorRepr::Busy(format!(
            "key {:?} was written at sequence {seq}, after the transaction's snapshot \
             ({snapshot})",
            String::from_utf8_lossy(&key)
        ))
        .into()),
        Verdict::HistoryGone => Err(ErrorRepr::TryAgain(format!(
            "the writes since the transaction's snapshot ({snapshot}) are no longer all in the \
             memtables, so conflicts cannot be checked; run the transaction again"
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ValueKind;

    fn mem(base: SeqNo, writes: &[(SeqNo, &str)]) -> Arc<MemTable> {
        let m = Arc::new(MemTable::new(0));
        m.set_base_seq(base);
        for (seq, k) in writes {
            m.add(*seq, ValueKind::Put, k.as_bytes(), b"v");
        }
        m
    }

    #[test]
    fn finds_writes_after_the_snapshot_and_only_those() {
        // Memtables newest first: writes 21..=30 in the active one, 11..=20 in a sealed one.
        let active = mem(20, &[(25, "b"), (30, "c")]);
        let sealed = mem(10, &[(12, "a"), (18, "b")]);
        let mems = [&active, &sealed];
        let k = |s: &'static str| [s.as_bytes()];
        let cases: &[(SeqNo, &str, Verdict)] = &[
            (20, "a", Verdict::Clear),
            (11, "a", Verdict::Conflict(b"a".to_vec(), 12)),
            (12, "a", Verdict::Clear),
            (24, "b", Verdict::Conflict(b"b".to_vec(), 25)),
            (25, "b", Verdict::Clear),
            (15, "b", Verdict::Conflict(b"b".to_vec(), 25)),
            (29, "c", Verdict::Conflict(b"c".to_vec(), 30)),
            (30, "c", Verdict::Clear),
            (10, "zz", Verdict::Clear),
            // Writes up to 10 were flushed: a snapshot before that cannot be checked.
            (9, "zz", Verdict::HistoryGone),
        ];
        for (snapshot, key, want) in cases {
            assert_eq!(
                &check(&mems, *snapshot, 30, k(key), &[]),
                want,
                "snapshot {snapshot} key {key}"
            );
        }
        // Nothing written since the snapshot: clear, whatever the memtables.
        assert_eq!(check(&[], 30, 30, k("a"), &[]), Verdict::Clear);
        // A memtable of unknown base (recovered) is no window.
        let recovered = mem(u64::MAX, &[(5, "a")]);
        assert_eq!(
            check(&[&recovered], 4, 5, k("q"), &[]),
            Verdict::HistoryGone
        );
    }

    #[test]
    fn range_deletions_conflict_with_the_keys_they_cover() {
        let m = mem(0, &[]);
        m.add_range_delete(7, b"b", b"d");
        let mems = [&m];
        assert_eq!(
            check(&mems, 5, 7, [&b"c"[..]], &[]),
            Verdict::Conflict(b"c".to_vec(), 7)
        );
        assert_eq!(check(&mems, 5, 7, [&b"d"[..]], &[]), Verdict::Clear);
        assert_eq!(check(&mems, 7, 7, [&b"c"[..]], &[]), Verdict::Clear);
    }

    #[test]
    fn read_ranges_conflict_with_any_write_inside_them() {
        let m = mem(0, &[(3, "b"), (8, "d"), (9, "f")]);
        m.add_range_delete(10, b"x", b"z");
        let mems = [&m];
        let r =
            |a: &str, b: Option<&str>| (a.as_bytes().to_vec(), b.map(|b| b.as_bytes().to_vec()));
        // (snapshot, range, verdict)
        let cases = [
            (5, r("a", Some("c")), Verdict::Clear), // b written before the snapshot
            (5, r("a", Some("e")), Verdict::Conflict(b"d".to_vec(), 8)),
            (5, r("d", Some("e")), Verdict::Conflict(b"d".to_vec(), 8)),
            (5, r("e", Some("f")), Verdict::Clear), // end exclusive
            (5, r("e", None), Verdict::Conflict(b"f".to_vec(), 9)),
            (9, r("a", Some("w")), Verdict::Clear),
            (9, r("y", Some("yy")), Verdict::Conflict(b"x".to_vec(), 10)), // inside a range delete
            (9, r("z", None), Verdict::Clear),
        ];
        for (i, (snapshot, range, want)) in cases.into_iter().enumerate() {
            assert_eq!(check(&mems, snapshot, 10, [], &[range]), want, "case {i}");
        }
    }

    #[test]
    fn a_group_s_earlier_members_conflict_with_what_they_wrote() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.delete(b"m");
        b.delete_range(b"p", b"r");
        b.merge(b"t", b"1");
        b.push_in(7, ValueKind::Put, b"z", Some(b"other family"));
        let mut g = GroupWrites::default();
        assert_eq!(g.conflict([&b"k"[..]], &[]), None);
        g.add(&b, 100);
        let r =
            |a: &str, b: Option<&str>| (a.as_bytes().to_vec(), b.map(|b| b.as_bytes().to_vec()));
        let key = |k: &str, s: SeqNo| Some((k.as_bytes().to_vec(), s));
        // (keys, ranges, verdict)
        type Case<'a> = (Vec<&'a str>, Vec<ReadRange>, Option<(Vec<u8>, SeqNo)>);
        let cases: Vec<Case> = vec![
            (vec!["k"], vec![], key("k", 100)),
            (vec!["a", "m"], vec![], key("m", 101)),
            (vec!["q"], vec![], key("q", 102)), // inside the range deletion
            (vec!["r"], vec![], None),          // its end is exclusive
            (vec!["t"], vec![], key("t", 103)),
            (vec!["z"], vec![], None), // another family's write
            (vec![], vec![r("a", Some("k"))], None),
            (vec![], vec![r("a", Some("l"))], key("k", 100)),
            (vec![], vec![r("n", Some("o"))], None),
            (vec![], vec![r("n", Some("pa"))], key("p", 102)),
            (vec![], vec![r("qq", Some("s"))], key("p", 102)),
            (vec![], vec![r("s", None)], key("t", 103)),
            (vec![], vec![r("u", None)], None),
        ];
        for (i, (keys, ranges, want)) in cases.into_iter().enumerate() {
            let keys = keys.iter().map(|k| k.as_bytes());
            assert_eq!(g.conflict(keys, &ranges), want, "case {i}");
        }
    }
}
