//! The commit-time conflict check of optimistic transactions: has any key the transaction
//! tracked been written since its snapshot? Answered from the memtables alone, as RocksDB's
//! optimistic transactions do: every write after the snapshot is in a memtable as long as the
//! newest memtables reach back to it (each memtable records the sequence number after which
//! every write went into it or a newer one, `MemTable::base_seq`); once a flush has taken some
//! of those writes to tables, the check cannot be made and the commit is refused as
//! retryable, never guessed.
//!
//! A pure function over read-only memtables; run it at the commit moment (no write in flight).
//! Depends on `memtable` and `types` only.

use std::sync::Arc;

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
}
