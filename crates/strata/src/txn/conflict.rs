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

use crate::error::{ErrorRepr, Result};
use crate::memtable::MemTable;
use crate::types::SeqNo;

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

/// Checks `keys` against the memtables `mems` (newest first), for writes after `snapshot` and
/// up to `now` (the last published sequence number).
pub(crate) fn check<'k>(
    mems: &[&MemTable],
    snapshot: SeqNo,
    now: SeqNo,
    keys: impl IntoIterator<Item = &'k [u8]>,
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

    fn mem(base: SeqNo, writes: &[(SeqNo, &str)]) -> MemTable {
        let m = MemTable::new(0);
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
                &check(&mems, *snapshot, 30, k(key)),
                want,
                "snapshot {snapshot} key {key}"
            );
        }
        // Nothing written since the snapshot: clear, whatever the memtables.
        assert_eq!(check(&[], 30, 30, k("a")), Verdict::Clear);
        // A memtable of unknown base (recovered) is no window.
        let recovered = mem(u64::MAX, &[(5, "a")]);
        assert_eq!(check(&[&recovered], 4, 5, k("q")), Verdict::HistoryGone);
    }

    #[test]
    fn range_deletions_conflict_with_the_keys_they_cover() {
        let m = mem(0, &[]);
        m.add_range_delete(7, b"b", b"d");
        let mems = [&m];
        assert_eq!(
            check(&mems, 5, 7, [&b"c"[..]]),
            Verdict::Conflict(b"c".to_vec(), 7)
        );
        assert_eq!(check(&mems, 5, 7, [&b"d"[..]]), Verdict::Clear);
        assert_eq!(check(&mems, 7, 7, [&b"c"[..]]), Verdict::Clear);
    }
}
