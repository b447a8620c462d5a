//! Normal recovery, at every open: replaying the WAL files into memtables, and choosing which
//! of them the opened database keeps as immutable memtables (flushed in the background)
//! instead of writing them to L0 tables before `open` returns
//! (`Options::avoid_flush_during_recovery`). `db::open` wires it in.
//!
//! Invariants:
//! - A kept memtable holds the records of exactly one WAL file, all of them, and that file is
//!   in the log location: its flush deletes the file (or hands it to the extended WAL's
//!   retention) and moves `log_number` past it, exactly as for a memtable the database sealed.
//! - Kept logs are a suffix of the replayed ones (the newest), so `log_number` = the oldest
//!   kept log's number covers every kept record and none that open wrote to L0.
//! - Nothing is kept after a torn write: the torn log would otherwise stop being the last one
//!   holding writes, and a later replay would take its torn tail for corruption.
//! - Older logs are packed into memtables regardless of file boundaries (as many as fill), as
//!   their records go to L0 at open anyway.
//!
//! Depends on `wal`, `memtable`, `batch`, `storage` and `options`; never on the server, CLI or
//! benchmark.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::batch::decode_ops;
use crate::error::{Error, Result};
use crate::memtable::{InsertGroup, MemTable};
use crate::options::Options;
use crate::storage::Storage;
use crate::wal::{link, LogReader, ReadOutcome};

/// A WAL file to replay.
pub(crate) struct LogFile<'a> {
    pub number: u64,
    pub path: PathBuf,
    pub storage: &'a Arc<dyn Storage>,
    /// Listed in the log location (else in the database directory, which it is not: the
    /// database moved to a separate `wal_location`).
    pub in_log_location: bool,
}

/// One of the newest logs, replayed into memtables of its own.
pub(crate) struct OwnLog {
    pub number: u64,
    /// Its records' memtables (none for a log without writes), numbered with the log.
    pub mems: Vec<Arc<MemTable>>,
    pub in_log_location: bool,
}

/// What replaying the logs found.
pub(crate) struct Replay {
    /// Memtables of the older logs, packed across files: open writes them to L0.
    pub packed: Vec<Arc<MemTable>>,
    /// The newest logs (up to the keep limit's worth holding writes), oldest first.
    pub own: Vec<OwnLog>,
    /// Whether a log ended in a torn write (dropped).
    pub torn: bool,
    pub last_seq: u64,
    /// Log number → the sequence number of its first write batch.
    pub first_seqs: HashMap<u64, u64>,
}

/// Replays `wals` (sorted by number) into memtables. `writes[i]`: whether log `i` holds a
/// write batch (only the last such log may end in a torn write); `keep_limit`: memtables the
/// database may keep, so the newest logs holding writes, up to that many, get memtables of
/// their own.
pub(crate) fn replay(
    wals: &[LogFile<'_>],
    writes: &[bool],
    keep_limit: usize,
    last_sequence: u64,
    opts: &Options,
) -> Result<Replay> {
    let last_nonempty = writes.iter().rposition(|w| *w);
    let own_from = own_logs_from(writes, keep_limit);
    let mut out = Replay {
        packed: Vec::new(),
        own: Vec::new(),
        torn: false,
        last_seq: last_sequence,
        first_seqs: HashMap::new(),
    };
    // Own logs' memtables serve reads once kept (point index and all); packed ones are only
    // written out.
    let own_mem = |number: u64| Arc::new(MemTable::for_options(number, opts, None));
    let packed_mem = || Arc::new(MemTable::with_bloom(0, opts.memtable_bloom_bytes()));
    let mut packing: Option<Arc<MemTable>> = None;
    for (i, log) in wals.iter().enumerate() {
        let (number, path, st) = (&log.number, &log.path, log.storage);
        let own = i >= own_from;
        let mut cur = if own {
            out.packed.extend(packing.take());
            None
        } else {
            packing.take()
        };
        let mut mems = Vec::new();
        let name = format!("{number:06}.log");
        let data = st.read_whole(path)?;
        let mut reader = LogReader::new(&data, name.clone(), Some(i) >= last_nonempty);
        let mut group = InsertGroup::default();
        while let Some(rec) = reader.next_record()? {
            if !link::is_write_batch(&rec) {
                continue;
            }
            let mem = cur.get_or_insert_with(|| if own { own_mem(*number) } else { packed_mem() });
            let (seq, count) = match rec {
                // Most records lie in the log's bytes: their operations join the group as
                // they are.
                Cow::Borrowed(r) => add_batch(&mut group, mem, r),
                // A record reassembled across log blocks lives only for this iteration: its
                // operations go in through a group of their own, inserted before it goes.
                Cow::Owned(r) => {
                    let mut own_group = InsertGroup::default();
                    let added = add_batch(&mut own_group, mem, &r);
                    own_group.insert(mem);
                    added
                }
            }
            .map_err(|e| Error::corruption(format!("{name}: {e}")))?;
            out.first_seqs.entry(*number).or_insert(seq);
            out.last_seq = out.last_seq.max(seq + count - 1);
            if mem.approximate_size() >= opts.write_buffer_size {
                group.insert(mem);
                let full = cur.take();
                if own {
                    mems.extend(full);
                } else {
                    out.packed.extend(full);
                }
            }
        }
        if let Some(mem) = &cur {
            group.insert(mem);
        }
        if let ReadOutcome::TornTail { offset, dropped } = reader.outcome() {
            tracing::warn!(wal = %name, offset, dropped, "dropped torn WAL tail");
            out.torn = true;
        }
        if own {
            mems.extend(cur);
            out.own.push(OwnLog {
                number: *number,
                mems,
                in_log_location: log.in_log_location,
            });
        } else {
            packing = cur;
        }
    }
    out.packed.extend(packing);
    Ok(out)
}

/// The index of the first log replayed into memtables of its own: the newest `keep_limit`
/// logs holding writes, and the logs without writes after the first of them.
fn own_logs_from(writes: &[bool], keep_limit: usize) -> usize {
    if keep_limit == 0 {
        return writes.len();
    }
    let mut seen = 0;
    for (i, w) in writes.iter().enumerate().rev() {
        if *w {
            seen += 1;
            if seen == keep_limit {
                return i;
            }
        }
    }
    0
}

/// Decodes the encoded batch `rec` in place into `group` (which inserts into `mem` whenever
/// full; the caller inserts the rest before the memtable is sealed and before the log's bytes
/// go): the batch's first sequence number and its operation count. Grouping across records
/// matters: a log of one-operation batches (every unbatched writer's) would otherwise go in one
/// entry at a time, and a memtable may pass `write_buffer_size` by a group (at most 15 records
/// of a 32 KiB log block) before it is sealed. On error some operations may be in `mem`
/// already (the open then fails and drops it).
pub(crate) fn add_batch<'a>(
    group: &mut InsertGroup<'a>,
    mem: &MemTable,
    rec: &'a [u8],
) -> Result<(u64, u64)> {
    let (first, count, ops) = decode_ops(rec)?;
    let count = u64::from(count);
    let mut n = 0u64;
    for op in ops {
        // Checked before the operation gets a sequence number past the batch's range (which
        // `decode_ops` bounds by the header's count).
        if n == count {
            return Err(Error::corruption(format!(
                "write batch header counts {count} records but holds more"
            )));
        }
        let (family, op) = op?;
        // Without column families in the manifest, no record may name one.
        if family != crate::version::DEFAULT_FAMILY {
            return Err(Error::corruption(format!(
                "write batch names column family {family}, which the manifest never created"
            )));
        }
        group.add(mem, first + n, op);
        n += 1;
    }
    if n != count {
        return Err(Error::corruption(format!(
            "write batch header counts {count} records but holds {n}"
        )));
    }
    Ok((first, n))
}

/// What replaying the logs of a database with column families found.
pub(crate) struct FamilyReplay {
    /// Each family's memtables, by family id, oldest first: open writes them to L0.
    pub mems: HashMap<u32, Vec<Arc<MemTable>>>,
    pub last_seq: u64,
}

/// Replays `wals` (sorted by number) into memtables per column family. `log_number(f)`: the
/// log number of live family `f` (`None`: not live — a dropped family, whose records are
/// skipped); a record in a log older than its family's log number is in the family's tables
/// already and is skipped too. A record naming a family at or above `next_family` (never
/// created) is corruption. Every operation takes its sequence number whether skipped or
/// not. Nothing is kept as a memtable: open writes everything to L0, so every replayed log
/// may go. `writes[i]` as for [`replay`].
pub(crate) fn replay_families(
    wals: &[LogFile<'_>],
    writes: &[bool],
    last_sequence: u64,
    log_number: &dyn Fn(u32) -> Option<u64>,
    next_family: u32,
    opts: &Options,
) -> Result<FamilyReplay> {
    let last_nonempty = writes.iter().rposition(|w| *w);
    let mut out = FamilyReplay {
        mems: HashMap::new(),
        last_seq: last_sequence,
    };
    for (i, log) in wals.iter().enumerate() {
        let name = format!("{:06}.log", log.number);
        let data = log.storage.read_whole(&log.path)?;
        let mut reader = LogReader::new(&data, name.clone(), Some(i) >= last_nonempty);
        while let Some(rec) = reader.next_record()? {
            if !link::is_write_batch(&rec) {
                continue;
            }
            let bad = |e: Error| Error::corruption(format!("{name}: {e}"));
            let (first, count, ops) = decode_ops(&rec).map_err(bad)?;
            let mut n = 0u64;
            for op in ops {
                if n == u64::from(count) {
                    return Err(bad(Error::corruption(
                        "write batch holds more records than counted",
                    )));
                }
                let (family, op) = op.map_err(bad)?;
                if family >= next_family {
                    return Err(bad(Error::corruption(format!(
                        "write batch names column family {family}, which the manifest never \
                         created"
                    ))));
                }
                let seq = first + n;
                n += 1;
                match log_number(family) {
                    Some(from) if log.number >= from => {}
                    _ => continue,
                }
                let mems = out.mems.entry(family).or_default();
                if mems
                    .last()
                    .is_none_or(|m| m.approximate_size() >= opts.write_buffer_size)
                {
                    mems.push(Arc::new(MemTable::with_bloom(
                        0,
                        opts.memtable_bloom_bytes(),
                    )));
                }
                mems.last().expect("just pushed").add_op(seq, op);
            }
            if n != u64::from(count) {
                return Err(bad(Error::corruption(format!(
                    "write batch header counts {count} records but holds {n}"
                ))));
            }
            out.last_seq = out.last_seq.max(first + n - 1);
        }
        if let ReadOutcome::TornTail { offset, dropped } = reader.outcome() {
            tracing::warn!(wal = %name, offset, dropped, "dropped torn WAL tail");
        }
    }
    Ok(out)
}

/// How many of the newest `own` logs (given as (memtables, in the log location)) keep their
/// memtables: a suffix of logs each holding at most one memtable and lying in the log
/// location, `limit` memtables in all; none when a log ended in a torn write.
pub(crate) fn kept_suffix(own: &[(usize, bool)], torn: bool, limit: usize) -> usize {
    if torn {
        return 0;
    }
    let mut mems = 0;
    let mut n = 0;
    for &(count, in_location) in own.iter().rev() {
        if count > 1 || !in_location || mems + count > limit {
            break;
        }
        mems += count;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::WriteBatch;
    use crate::types::ValueKind;

    #[test]
    fn batches_decoded_in_place_reach_the_memtable_and_bad_counts_are_corruption() {
        let opts = Options::default();
        let mem = MemTable::for_options(1, &opts, None);
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete(b"b");
        b.delete_range(b"c", b"d");
        for i in 0..40u32 {
            b.put(format!("k{i:02}"), b"v");
        }
        let rec = b.encode_with_seq(100).to_vec();
        let mut group = InsertGroup::default();
        assert_eq!(add_batch(&mut group, &mem, &rec).unwrap(), (100, 43));
        // Two full groups went in; the rest waits for the group's insert.
        assert_eq!(mem.num_entries(), 32);
        group.insert(&mem);
        assert_eq!(mem.num_entries(), 42);
        assert_eq!(mem.num_deletes(), 1);
        let got = |k: &[u8]| {
            mem.get(k, 1000)
                .map(|(seq, kind, v)| (seq, kind, v.to_vec()))
        };
        assert_eq!(got(b"a"), Some((100, ValueKind::Put, b"1".to_vec())));
        assert_eq!(got(b"b"), Some((101, ValueKind::Delete, Vec::new())));
        assert_eq!(got(b"k39"), Some((142, ValueKind::Put, b"v".to_vec())));
        assert_eq!(mem.range_tombstones().len(), 1);

        // The same keys again in a later record (a new group across records): the newest
        // version answers, through the point index and the filter.
        let mut again = WriteBatch::new();
        for i in (0..40u32).rev() {
            again.put(format!("k{i:02}"), format!("w{i}"));
        }
        let rec2 = again.encode_with_seq(200).to_vec();
        assert_eq!(add_batch(&mut group, &mem, &rec2).unwrap(), (200, 40));
        group.insert(&mem);
        assert_eq!(mem.num_entries(), 82);
        assert_eq!(got(b"k39"), Some((200, ValueKind::Put, b"w39".to_vec())));
        assert_eq!(got(b"k00"), Some((239, ValueKind::Put, b"w0".to_vec())));
        assert_eq!(
            mem.get(b"k00", 150).map(|(s, _, v)| (s, v.to_vec())),
            Some((103, b"v".to_vec()))
        );

        // A header counting one operation more, or one fewer, than the batch holds.
        for wrong in [44u32, 42, 1] {
            let mut bad = rec.clone();
            bad[8..12].copy_from_slice(&wrong.to_le_bytes());
            let e = add_batch(&mut InsertGroup::default(), &MemTable::new(1), &bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corruption, "{wrong}: {e}");
        }
        // Too few counted at the top of the sequence space: the operations past the count must
        // not be given numbers beyond it (a debug build's trailer check would panic).
        let mut bad = rec.clone();
        bad[..8].copy_from_slice(&(crate::types::MAX_SEQ - 1).to_le_bytes());
        bad[8..12].copy_from_slice(&2u32.to_le_bytes());
        let e = add_batch(&mut InsertGroup::default(), &MemTable::new(1), &bad).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corruption, "{e}");
        // A truncated operation.
        let e = add_batch(
            &mut InsertGroup::default(),
            &MemTable::new(1),
            &rec[..rec.len() - 1],
        )
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corruption, "{e}");
    }

    #[test]
    fn own_logs_are_the_newest_holding_writes_and_the_empty_ones_after_them() {
        let cases: &[(&[bool], usize, usize)] = &[
            (&[], 1, 0),
            (&[true, true, true], 0, 3),
            (&[true, true, true], 1, 2),
            (&[true, true, true], 2, 1),
            (&[true, true, true], 5, 0),
            (&[true, true, false], 1, 1),
            (&[true, false, false], 2, 0),
            (&[false, false], 1, 0),
        ];
        for &(writes, limit, want) in cases {
            assert_eq!(
                own_logs_from(writes, limit),
                want,
                "{writes:?} limit {limit}"
            );
        }
    }

    #[test]
    fn kept_logs_are_a_suffix_of_single_memtable_logs_in_the_location() {
        // (own logs as (memtables, in the log location), torn, limit, kept)
        type Case = (&'static [(usize, bool)], bool, usize, usize);
        let cases: &[Case] = &[
            (&[], false, 1, 0),
            (&[(1, true)], false, 1, 1),
            (&[(1, true)], true, 1, 0),
            (&[(1, true)], false, 0, 0),
            // An empty log counts for nothing and is kept with the ones around it.
            (&[(1, true), (0, true)], false, 1, 2),
            (&[(1, true), (1, true)], false, 1, 1),
            (&[(1, true), (1, true)], false, 3, 2),
            // A log whose records filled two memtables stops the suffix (and is flushed).
            (&[(1, true), (2, true), (1, true)], false, 3, 1),
            (&[(2, true)], false, 3, 0),
            // A log outside the log location (the database moved to one) too.
            (&[(1, false), (1, true)], false, 3, 1),
            (&[(1, true), (1, false)], false, 3, 0),
        ];
        for &(own, torn, limit, want) in cases {
            assert_eq!(
                kept_suffix(own, torn, limit),
                want,
                "{own:?} torn {torn} limit {limit}"
            );
        }
    }
}
