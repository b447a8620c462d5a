//! Point lookups of keys whose newest visible version is a merge operand.
//!
//! The fast lookup stops at the first source that holds a visible version of the key; when
//! that version is an operand it hands over to [`merge_lookup`], which walks the same sources
//! in the same order (newest first: memtables, then one table per sorted run) collecting every
//! operand until a base — a put, a deletion, a range tombstone of a source covering the key,
//! or the end of the sources — and folds them with the merge operator. Operands are never
//! returned as values, and nothing here writes to a cache: a merge result is computed on each
//! read until compaction folds the operands. A database's fold that read tables reports the key
//! to HotRAP's tracker, as any table read does.
//!
//! Depends on the memtable and table readers, on `merge` and on HotRAP's tracker; never on the
//! write path.

use std::sync::Arc;

use bytes::Bytes;

use crate::error::{ErrorRepr, Result};
use crate::iter::InternalIterator;
use crate::memtable::MemTable;
use crate::types::{self, SeqNo, ValueKind};
use crate::version::TableFile;

use super::DbInner;
use crate::cache::TableCache;
use crate::stats::EngineStats;

/// The sources of one lookup, newest first.
pub(crate) struct Sources<'a> {
    pub mems: &'a [&'a Arc<MemTable>],
    pub tables: &'a [&'a Arc<TableFile>],
}

/// What the operands gathered so far still need.
#[derive(Debug, PartialEq)]
enum Base {
    /// An older source may hold more operands or the base.
    Open,
    /// The base: a value, or nothing (deleted, covered, or never written).
    Found(Option<Vec<u8>>),
}

/// Takes the key's versions visible at `snapshot` from one source's iterator (positioned at
/// the newest such version, or past them), newest first, into `operands`, given the source's
/// newest range tombstone covering the key (`tombstone`, 0 if none).
fn gather(
    it: &mut dyn InternalIterator,
    key: &[u8],
    tombstone: SeqNo,
    operands: &mut Vec<Vec<u8>>,
) -> Result<Base> {
    while it.valid() {
        let p = types::parse_internal_key(it.key())?;
        if p.user_key != key {
            break;
        }
        if p.seq < tombstone {
            return Ok(Base::Found(None));
        }
        match p.kind {
            ValueKind::Merge => operands.push(it.value().to_vec()),
            ValueKind::Put => return Ok(Base::Found(Some(it.value().to_vec()))),
            ValueKind::Delete | ValueKind::RangeDelete => return Ok(Base::Found(None)),
        }
        it.next();
    }
    it.status()?;
    // A tombstone newer than every version left covers all of the older sources too.
    Ok(if tombstone > 0 {
        Base::Found(None)
    } else {
        Base::Open
    })
}

/// The value of `key` at `snapshot` through `sources`, folding merge operands (see the module
/// docs). Refused with `ErrorKind::Incomplete` under `cache_only` (it reads whole blocks).
pub(super) fn merge_lookup(
    inner: &DbInner,
    hot: Option<&crate::tier::hot::HotRap>,
    sources: &Sources<'_>,
    key: &[u8],
    snapshot: SeqNo,
    cache_only: bool,
) -> Result<Option<Bytes>> {
    let with = MergeWith {
        tables: &inner.tables,
        stats: &inner.stats,
        operator: inner.opts.merge_operator.as_deref(),
    };
    let (v, from_tables) = fold(&with, sources, key, snapshot, cache_only)?;
    // HotRAP: a value folded from tables is a table read like any other (`read::from_tables`
    // reports those; answers from the memtables alone are not), so keys updated by merges
    // become hot and are retained or promoted like the rest.
    if let (Some(hot), Some(v), true) = (hot, &v, from_tables) {
        hot.tracker.record_access(key, v.len() as u32);
    }
    Ok(v)
}

/// What a merge lookup reads tables through and folds with (a database's, or a replica's).
pub(crate) struct MergeWith<'a> {
    pub tables: &'a TableCache,
    pub stats: &'a EngineStats,
    pub operator: Option<&'a dyn crate::merge::MergeOperator>,
}

/// [`merge_lookup`] through `with`'s tables and operator.
pub(crate) fn merge_lookup_with(
    with: &MergeWith<'_>,
    sources: &Sources<'_>,
    key: &[u8],
    snapshot: SeqNo,
    cache_only: bool,
) -> Result<Option<Bytes>> {
    fold(with, sources, key, snapshot, cache_only).map(|(v, _)| v)
}

/// [`merge_lookup_with`], and whether the walk read a table (past the memtables, and past the
/// snapshot and filter checks of at least one table).
fn fold(
    with: &MergeWith<'_>,
    sources: &Sources<'_>,
    key: &[u8],
    snapshot: SeqNo,
    cache_only: bool,
) -> Result<(Option<Bytes>, bool)> {
    if cache_only {
        return Err(ErrorRepr::Incomplete("merge operands are folded only with reads").into());
    }
    let op = with
        .operator
        .ok_or_else(|| crate::merge::missing_operator(key))?;
    with.stats
        .merge_lookups
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let lookup = types::lookup_key(key, snapshot);
    let mut operands: Vec<Vec<u8>> = Vec::new();
    let mut base = Base::Open;
    for mem in sources.mems {
        let mut it = mem.iter();
        it.seek(&lookup);
        let t = mem.max_covering_tombstone(key, snapshot);
        base = gather(&mut it, key, t, &mut operands)?;
        if base != Base::Open {
            break;
        }
    }
    let mut from_tables = false;
    if base == Base::Open {
        for f in sources.tables {
            if f.smallest_seq > snapshot {
                continue;
            }
            let table = with.tables.get(f)?;
            let t = table.max_covering_tombstone(key, snapshot);
            if t == 0 && !table.may_contain(key) {
                continue;
            }
            from_tables = true;
            let mut it = table.iter(true);
            it.seek(&lookup);
            base = gather(&mut it, key, t, &mut operands)?;
            if base != Base::Open {
                break;
            }
        }
    }
    let base = match base {
        Base::Found(b) => b,
        Base::Open => None,
    };
    if operands.is_empty() {
        // Only when the operand that sent the lookup here was removed since (it cannot be:
        // the sources are pinned) — answered as the base says.
        return Ok((base.map(Bytes::from), from_tables));
    }
    let v = crate::merge::full_merge(op, key, base.as_deref(), &operands)?;
    Ok((Some(Bytes::from(v)), from_tables))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(entries: &[(u64, ValueKind, &str)]) -> Arc<MemTable> {
        let m = Arc::new(MemTable::new(0));
        for &(seq, kind, v) in entries {
            m.add(seq, kind, b"k", v.as_bytes());
        }
        m.add(1, ValueKind::Put, b"j", b"other key");
        m.add(2, ValueKind::Put, b"l", b"other key");
        m
    }

    #[test]
    fn gather_stops_at_the_base_or_the_sources_tombstone() {
        use ValueKind::*;
        // (entries, snapshot, tombstone, operands newest first, base)
        type Case = (
            Vec<(u64, ValueKind, &'static str)>,
            u64,
            u64,
            Vec<&'static str>,
            Base,
        );
        let cases: Vec<Case> = vec![
            (
                vec![(9, Merge, "c"), (8, Merge, "b"), (7, Put, "a")],
                99,
                0,
                vec!["c", "b"],
                Base::Found(Some(b"a".to_vec())),
            ),
            (
                vec![(9, Merge, "c"), (8, Delete, ""), (7, Put, "a")],
                99,
                0,
                vec!["c"],
                Base::Found(None),
            ),
            (
                vec![(9, Merge, "c"), (8, Merge, "b")],
                99,
                0,
                vec!["c", "b"],
                Base::Open,
            ),
            (
                vec![(9, Merge, "c"), (8, Merge, "b")],
                99,
                5,
                vec!["c", "b"],
                Base::Found(None),
            ),
            (
                vec![(9, Merge, "c"), (8, Merge, "b"), (7, Put, "a")],
                99,
                9,
                vec!["c"],
                Base::Found(None),
            ),
            // Versions above the snapshot are not seen (the seek skips them).
            (
                vec![(9, Merge, "c"), (8, Merge, "b"), (7, Put, "a")],
                8,
                0,
                vec!["b"],
                Base::Found(Some(b"a".to_vec())),
            ),
        ];
        for (i, (entries, snapshot, tombstone, want_ops, want_base)) in
            cases.into_iter().enumerate()
        {
            let m = mem(&entries);
            let mut it = m.iter();
            it.seek(&types::lookup_key(b"k", snapshot));
            let mut ops = Vec::new();
            let base = gather(&mut it, b"k", tombstone, &mut ops).unwrap();
            let want: Vec<Vec<u8>> = want_ops.iter().map(|s| s.as_bytes().to_vec()).collect();
            assert_eq!((ops, base), (want, want_base), "case {i}");
        }
    }
}
