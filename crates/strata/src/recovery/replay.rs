//! The baseline rebuild (RocksMash Fig. 9): the lost tables' records replayed in chronological
//! order through memtables into L0 tables, which the opened database then compacts down.
//!
//! It reads the same inputs as the parallel rebuild (the key lists name which WAL records the
//! lost tables held; records whose newer versions moved to the capacity tier must not come
//! back) and checks them the same way (order, every reference found, the content CRC), so
//! the two differ only in mechanism. The lists mark the operations they reference, and the
//! log is then walked in order, each marked operation added to the memtable from where it
//! lies in the log (as a WAL replay at open does), with the lists' own records (inline
//! entries, range tombstones) merged in by sequence number. An earlier version copied every
//! record out and sorted them: collecting took 4.2–6.7 s of a 23.4–27.9 s replay of 8.5M
//! writes, against 0.6–0.8 s now, and building from the copies 13.0–15.7 s against 8.7–11.7 s
//! (`bench/results/recovery-9-replay-ab`).
//!
//! Moving every lost record to L0 is only correct while no capacity-tier table sits above a
//! lost fast-tier one (static and HotRAP placement), and while no split-forest merge with early
//! cleaning is in progress (its run cuts hide superseded records that L0 would serve again);
//! otherwise this mode is refused before anything is written.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::parallel::{fast_store, for_each_entry, lists_of};
use super::wal_scan::WalScan;
use super::RecoveryReport;
use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::storage::Storage;
use crate::tier::Tier;
use crate::types::{parse_internal_key, SeqNo, ValueKind};
use crate::version::{FileMeta, Version, VersionEdit, VersionSet};
use crate::wal::keylist::{KeyList, KeyListEntry};
use crate::wal::{LogSet, LogWriter};

/// Why this mode cannot rebuild `lost` in `v` correctly, if it cannot (checked before anything
/// is written; the caller can use parallel recovery instead).
fn refusal(v: &Version, lost: &[(usize, u64, FileMeta)]) -> Option<&'static str> {
    let deepest = lost.iter().map(|(l, _, _)| *l).max()?;
    let above = v.levels[..=deepest]
        .iter()
        .flat_map(|lv| lv.files())
        .any(|f| f.tier == Tier::Capacity);
    if above {
        return Some(
            "recovery = replay moves lost tables to L0, which is wrong while capacity-tier \
             tables sit above them (LogStore placement): use parallel recovery",
        );
    }
    // Found by `strata stress --object-store-logs --replica-rounds --seed 5151`: keys below
    // a cut are served by the merge's output tree only, and replaying a cut run's records into
    // L0 (which has no cuts) brought back versions the merge had superseded (a put whose
    // delete the bottom-level merge had dropped with it).
    if v.levels
        .iter()
        .flat_map(|lv| &lv.runs)
        .any(|r| r.cut.is_some())
    {
        return Some(
            "recovery = replay replays every record of the lost tables, but a split-forest \
             merge in progress has cut some of their trees (records below a cut are superseded \
             by the merge's output): use parallel recovery",
        );
    }
    None
}

/// A record the key lists hold themselves: an inline entry or a range tombstone.
enum Rec {
    Point(ValueKind, Vec<u8>, Vec<u8>),
    Range(Vec<u8>, Vec<u8>),
}

/// A record to replay, borrowed from the log or from a [`Rec`].
#[derive(Clone, Copy)]
enum RecRef<'a> {
    Point(ValueKind, &'a [u8], &'a [u8]),
    Range(&'a [u8], &'a [u8]),
}

impl Rec {
    fn as_ref(&self) -> RecRef<'_> {
        match self {
            Rec::Point(kind, k, v) => RecRef::Point(*kind, k, v),
            Rec::Range(s, e) => RecRef::Range(s, e),
        }
    }
}

/// The records the lost tables held: the WAL operations they reference, marked by position
/// in the log, and the records their key lists hold themselves, by sequence number.
struct Held {
    /// Per WAL file, a bit per operation.
    marked: Vec<Vec<AtomicU64>>,
    /// By sequence number, then by list (the order the lists were given in).
    own: Vec<(SeqNo, usize, Rec)>,
}

impl Held {
    /// Checks every list (each in table order; the lists on `threads` workers) as the
    /// parallel rebuild does (order, every reference found, the content CRC), marking what it
    /// references.
    fn find(lists: &[&KeyList], scan: &WalScan, threads: usize) -> Result<Held> {
        let marked: Vec<Vec<AtomicU64>> = (0..scan.files())
            .map(|f| {
                let n = scan.file_span(f).1.div_ceil(64);
                (0..n).map(|_| AtomicU64::new(0)).collect()
            })
            .collect();
        let own = Mutex::new(Vec::new());
        let next = AtomicUsize::new(0);
        let failed: Mutex<Option<Error>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..threads.min(lists.len()).max(1) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(list) = lists.get(i) else { break };
                    if failed.lock().is_some() {
                        break;
                    }
                    match mark_list(list, i, scan, &marked) {
                        Ok(mine) => own.lock().extend(mine),
                        Err(e) => {
                            failed.lock().get_or_insert(e);
                            break;
                        }
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner() {
            return Err(e);
        }
        let mut own = own.into_inner();
        own.sort_by_key(|(s, i, _)| (*s, *i));
        Ok(Held { marked, own })
    }

    /// Calls `f` for every held record in sequence order: the log walked file by file, its
    /// marked operations merged with the lists' own records.
    fn replay(
        &self,
        scan: &WalScan,
        mut f: impl FnMut(SeqNo, RecRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut own = self.own.iter().peekable();
        for (file, words) in self.marked.iter().enumerate() {
            let (first, _) = scan.file_span(file);
            for (w, word) in words.iter().enumerate() {
                let mut bits = word.load(Ordering::Relaxed);
                while bits != 0 {
                    let at = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let seq = first + at as u64;
                    while let Some((s, _, r)) = own.next_if(|(s, _, _)| *s < seq) {
                        f(*s, r.as_ref())?;
                    }
                    let op = scan.op_at(file, at).ok_or_else(|| {
                        Error::corruption(format!(
                            "the WAL operation with sequence number {seq} is missing"
                        ))
                    })?;
                    f(seq, RecRef::Point(op.kind, op.key, op.value))?;
                }
            }
        }
        for (s, _, r) in own {
            f(*s, r.as_ref())?;
        }
        Ok(())
    }
}

/// Checks list `i` (`list`) in table order as the parallel rebuild does, marks in `marked` the
/// operations it references, and returns its own records (inline entries and tombstones).
fn mark_list(
    list: &KeyList,
    i: usize,
    scan: &WalScan,
    marked: &[Vec<AtomicU64>],
) -> Result<Vec<(SeqNo, usize, Rec)>> {
    let mut own = Vec::new();
    let mut entries = list.entries.iter();
    // `for_each_entry` calls back once per entry, in order; the sequence number a reference's
    // internal key carries is checked, not assumed.
    for_each_entry(list, scan, |ik, value| {
        let p = parse_internal_key(ik)?;
        match entries.next() {
            Some(KeyListEntry::Ref(seq)) if *seq == p.seq => {
                let (f, at) = scan.position(p.seq).ok_or_else(|| {
                    Error::corruption(format!(
                        "table {}: the WAL operation with sequence number {} is missing",
                        list.table, p.seq
                    ))
                })?;
                marked[f][at / 64].fetch_or(1 << (at % 64), Ordering::Relaxed);
                Ok(())
            }
            Some(KeyListEntry::Inline(_)) => {
                let rec = Rec::Point(p.kind, p.user_key.to_vec(), value.to_vec());
                own.push((p.seq, i, rec));
                Ok(())
            }
            _ => Err(Error::corruption(format!(
                "table {}: an entry found does not match its key list",
                list.table
            ))),
        }
    })?;
    for t in &list.tombstones {
        own.push((t.seq, i, Rec::Range(t.start.clone(), t.end.clone())));
    }
    Ok(own)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    dir: &Path,
    log_dir: &Path,
    log_storage: &Arc<dyn Storage>,
    storage: &Arc<dyn Storage>,
    opts: &Options,
    versions: &mut VersionSet,
    lost: &[(usize, u64, FileMeta)],
    scan: &WalScan,
    report: &mut RecoveryReport,
) -> Result<()> {
    if let Some(why) = refusal(&versions.current(), lost) {
        return Err(Error::invalid(why));
    }
    let t = Instant::now();
    let lists = lists_of(scan, lost)?;
    let held = Held::find(&lists, scan, report.threads)?;
    report.index_secs = super::secs(t.elapsed());

    let t = Instant::now();
    let tables = Arc::new(TableCache::new(
        Arc::new(fast_store(dir, storage)),
        opts.max_open_files,
        None,
        Default::default(),
    ));
    let mut added: Vec<FileMeta> = Vec::new();
    let numbers = versions.file_numbers();
    let flush = |mem: &Arc<MemTable>, added: &mut Vec<FileMeta>| -> Result<()> {
        added.extend(crate::db::write_l0_offline(
            mem,
            &tables,
            numbers.clone(),
            opts,
        )?);
        Ok(())
    };
    let bloom = opts.memtable_bloom_bytes();
    let mut mem = Arc::new(MemTable::with_bloom(0, bloom));
    let mut add = |seq: SeqNo, r: RecRef<'_>, added: &mut Vec<FileMeta>| -> Result<()> {
        match r {
            RecRef::Point(kind, k, v) => mem.add(seq, kind, k, v),
            RecRef::Range(s, e) => mem.add_range_delete(seq, s, e),
        }
        if mem.approximate_size() >= opts.write_buffer_size {
            flush(&mem, added)?;
            mem = Arc::new(MemTable::with_bloom(0, bloom));
        }
        Ok(())
    };
    held.replay(scan, |seq, r| add(seq, r, &mut added))?;
    flush(&mem, &mut added)?;
    drop(held);
    storage.sync_dir(dir)?;
    report.entries = added.iter().map(|f| f.num_entries).sum();
    report.bytes_written = added.iter().map(|f| f.size).sum();
    report.tables_written = added.len();

    // The new L0 tables need key lists of their own, in a new WAL file of the log location.
    let ext = crate::db::ExtendedWalHandle::default();
    let mut next_first = versions.last_sequence + 1;
    for (n, first) in scan.numbers.iter().zip(&scan.first_seqs).rev() {
        let f = first.unwrap_or(next_first).min(next_first);
        ext.wal_created(*n, f);
        next_first = f;
    }
    let number = versions.new_file_number();
    let path = log_dir.join(format!("{number:06}.log"));
    let wal = LogWriter::new(log_storage.create(&path)?, number);
    log_storage.sync_dir(log_dir)?;
    ext.wal_created(number, versions.last_sequence + 1);
    let wal = Mutex::new(LogSet::new(wal, log_storage.clone(), log_dir));
    // With a compaction filter, values may differ from the WAL's: keep them inline.
    let pinned = crate::db::log_key_lists(&ext, &tables, &wal, &added, opts.rewrites_values())?;
    let mut edit = VersionEdit {
        wal_pins: pinned.pins(),
        ..Default::default()
    };
    for (level, _, old) in lost {
        edit.deleted.push((*level as u32, old.id));
    }
    edit.added = added.into_iter().map(|f| (0, f)).collect();
    versions.log_and_apply(edit)?;
    report.build_secs = super::secs(t.elapsed());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::WriteBatch;
    use crate::range_del::RangeTombstone;
    use crate::recovery::wal_scan;
    use crate::storage::{LocalFs, Storage};
    use crate::types::internal_key;
    use crate::wal::keylist::ContentCrc;

    /// Sequence numbers whose operation is a delete (the rest are puts).
    fn is_delete(s: u64) -> bool {
        s.is_multiple_of(7)
    }

    /// Operation `s`: its kind, key `k{s}` and value (`v{s}`, none for a delete).
    fn op(s: u64) -> (ValueKind, Vec<u8>, Vec<u8>) {
        let key = format!("k{s:03}").into_bytes();
        if is_delete(s) {
            (ValueKind::Delete, key, Vec::new())
        } else {
            (ValueKind::Put, key, format!("v{s}").into_bytes())
        }
    }

    /// Two WAL files, sequence numbers 1..=200 (more than three bitmap words) and 201..=260.
    fn log() -> (tempfile::TempDir, WalScan) {
        let dir = tempfile::tempdir().unwrap();
        for (n, seqs) in [(1u64, 1..=200u64), (2, 201..=260)] {
            let path = dir.path().join(format!("{n:06}.log"));
            let mut w = LogWriter::new(LocalFs.create(&path).unwrap(), n);
            for s in seqs {
                let mut b = WriteBatch::new();
                match op(s) {
                    (ValueKind::Delete, k, _) => b.delete(&k),
                    (_, k, v) => b.put(&k, &v),
                }
                w.add_record(b.encode_with_seq(s)).unwrap();
            }
            w.sync().unwrap();
        }
        let scan = wal_scan::scan(dir.path(), &LocalFs, 2, 0, &|_| true).unwrap();
        (dir, scan)
    }

    /// A table's key list: references to `refs` (ascending), then one inline entry, and
    /// tombstones, with its content CRC.
    fn list(table: u64, refs: &[u64], inline: Option<u64>, tombstones: &[u64]) -> KeyList {
        let mut crc = ContentCrc::default();
        let mut entries = Vec::new();
        for &s in refs {
            let (kind, k, v) = op(s);
            crc.add_point(&internal_key(&k, s, kind as u8), &v);
            entries.push(KeyListEntry::Ref(s));
        }
        if let Some(s) = inline {
            let ik = internal_key(format!("z{s:03}").as_bytes(), s, ValueKind::Put as u8);
            crc.add_point(&ik, b"inline");
            entries.push(KeyListEntry::inline(ik, b"inline".to_vec()));
        }
        let tombstones: Vec<RangeTombstone> = tombstones
            .iter()
            .map(|&s| RangeTombstone::new("a", "b", s))
            .collect();
        tombstones.iter().for_each(|t| crc.add_tombstone(t));
        KeyList {
            table,
            entries,
            tombstones,
            checksum: crc.value(),
        }
    }

    /// Held records come back in sequence order: the log's (puts and deletes, across bitmap
    /// words and files) merged with the lists' own (inline entries, tombstones), and an
    /// operation two lists reference once.
    #[test]
    fn held_records_replay_in_sequence_order() {
        let (_dir, scan) = log();
        let a = list(
            7,
            &[3, 10, 63, 64, 127, 128, 201, 245],
            Some(300),
            &[60, 245],
        );
        let b = list(8, &[5, 10, 129, 200, 260], Some(2), &[]);
        for threads in [1, 2, 3] {
            let held = Held::find(&[&a, &b], &scan, threads).unwrap();
            let mut got = Vec::new();
            held.replay(&scan, |seq, r| {
                got.push(match r {
                    RecRef::Point(kind, k, v) => (seq, kind, k.to_vec(), v.to_vec()),
                    RecRef::Range(s, e) => (seq, ValueKind::RangeDelete, s.to_vec(), e.to_vec()),
                });
                Ok(())
            })
            .unwrap();
            let range = |s: u64| (s, ValueKind::RangeDelete, b"a".to_vec(), b"b".to_vec());
            let inline = |s: u64| {
                let k = format!("z{s:03}").into_bytes();
                (s, ValueKind::Put, k, b"inline".to_vec())
            };
            let logged = |s: u64| {
                let (kind, k, v) = op(s);
                (s, kind, k, v)
            };
            let mut want = vec![inline(2)];
            want.extend([3, 5, 10].map(logged));
            want.push(range(60));
            want.extend([63, 64, 127, 128, 129, 200, 201, 245].map(logged));
            // The operation first, then the tombstone with the same sequence number.
            want.push(range(245));
            want.push(logged(260));
            want.push(inline(300));
            assert_eq!(got, want, "{threads} threads");
            assert!(got.iter().any(|g| g.1 == ValueKind::Delete));
        }
    }

    /// A reference to an operation no log holds, and a list whose content does not match its
    /// checksum, are corruption.
    #[test]
    fn a_missing_operation_or_a_wrong_checksum_is_corruption() {
        let (_dir, scan) = log();
        let gone = list(7, &[3, 261], None, &[]);
        let e = Held::find(&[&gone], &scan, 2).err().expect("missing");
        assert!(e.is_corruption() && e.to_string().contains("261"), "{e}");
        let mut wrong = list(7, &[3, 4], None, &[]);
        wrong.checksum ^= 1;
        for threads in [1, 2] {
            let e = Held::find(&[&list(8, &[5], None, &[]), &wrong], &scan, threads)
                .err()
                .expect("checksum");
            assert!(e.is_corruption(), "{e}");
        }
    }

    /// Where the scan looks for a sequence number: below the first file, inside each, and past
    /// the last one, nothing.
    #[test]
    fn positions_of_sequence_numbers() {
        let (_dir, scan) = log();
        assert_eq!(scan.files(), 2);
        assert_eq!(scan.file_span(0), (1, 200));
        assert_eq!(scan.file_span(1), (201, 60));
        assert_eq!(scan.position(0), None);
        assert_eq!(scan.position(1), Some((0, 0)));
        assert_eq!(scan.position(200), Some((0, 199)));
        assert_eq!(scan.position(201), Some((1, 0)));
        assert_eq!(scan.position(260), Some((1, 59)));
        assert_eq!(scan.position(261), None);
        let o = scan.op_at(1, 45).unwrap();
        assert_eq!(
            (o.kind, o.key, o.value),
            (ValueKind::Put, &b"k246"[..], &b"v246"[..])
        );
        assert!(scan
            .op_at(0, 6)
            .is_some_and(|o| o.kind == ValueKind::Delete));
        assert!(scan.op_at(1, 60).is_none() && scan.op_at(2, 0).is_none());
    }
}
