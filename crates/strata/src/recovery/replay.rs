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
//! record out and sorted them: that took ~3 s of a ~20 s replay here (8.5M writes), and the
//! copies slowed the memtable phase by ~3 s more.
//!
//! Moving every lost record to L0 is only correct while no capacity-tier table sits above a
//! lost fast-tier one (static and HotRAP placement); under LogStore's placement this mode is
//! refused.

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
use crate::version::{FileMeta, VersionEdit, VersionSet};
use crate::wal::keylist::{KeyList, KeyListEntry};
use crate::wal::{LogSet, LogWriter};

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
    own: Vec<(SeqNo, Rec)>,
}

impl Held {
    /// Goes through every list in table order on `threads` workers, with the same checks as
    /// the parallel rebuild (order, every reference found, the content CRC), marking what it
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
                    let mut mine: Vec<(SeqNo, Rec)> = Vec::new();
                    let mut entries = list.entries.iter();
                    let r = for_each_entry(list, scan, |ik, value| {
                        match entries.next() {
                            Some(KeyListEntry::Ref(seq)) => {
                                // `for_each_entry` found it, so it has a position.
                                if let Some((f, at)) = scan.position(*seq) {
                                    marked[f][at / 64].fetch_or(1 << (at % 64), Ordering::Relaxed);
                                }
                            }
                            _ => {
                                let p = parse_internal_key(ik)?;
                                mine.push((
                                    p.seq,
                                    Rec::Point(p.kind, p.user_key.to_vec(), value.to_vec()),
                                ));
                            }
                        }
                        Ok(())
                    });
                    if let Err(e) = r {
                        failed.lock().get_or_insert(e);
                        break;
                    }
                    for t in &list.tombstones {
                        mine.push((t.seq, Rec::Range(t.start.clone(), t.end.clone())));
                    }
                    own.lock().extend(mine);
                });
            }
        });
        if let Some(e) = failed.into_inner() {
            return Err(e);
        }
        let mut own = own.into_inner();
        own.sort_by_key(|(s, _)| *s);
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
                    while let Some((s, r)) = own.next_if(|(s, _)| *s < seq) {
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
        for (s, r) in own {
            f(*s, r.as_ref())?;
        }
        Ok(())
    }
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
    let v = versions.current();
    if let Some(deepest) = lost.iter().map(|(l, _, _)| *l).max() {
        let above = v.levels[..=deepest]
            .iter()
            .flat_map(|lv| lv.files())
            .any(|f| f.tier == Tier::Capacity);
        if above {
            return Err(Error::invalid(
                "recovery = replay moves lost tables to L0, which is wrong while capacity-tier \
                 tables sit above them (LogStore placement): use parallel recovery",
            ));
        }
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
    let pinned = crate::db::log_key_lists(
        &ext,
        &tables,
        &wal,
        &added,
        opts.compaction_filter.is_some(),
    )?;
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
    use crate::storage::{LocalFs, Storage};
    use crate::types::internal_key;
    use crate::wal::keylist::ContentCrc;

    /// Two WAL files of puts `k{seq}` = `v{seq}`, sequence numbers 1..=80.
    fn log() -> (tempfile::TempDir, WalScan) {
        let dir = tempfile::tempdir().unwrap();
        for (n, seqs) in [(1u64, 1..=40u64), (2, 41..=80)] {
            let path = dir.path().join(format!("{n:06}.log"));
            let mut w = LogWriter::new(LocalFs.create(&path).unwrap(), n);
            for s in seqs {
                let mut b = WriteBatch::new();
                b.put(format!("k{s:03}").as_bytes(), format!("v{s}").as_bytes());
                w.add_record(b.encode_with_seq(s)).unwrap();
            }
            w.sync().unwrap();
        }
        let scan = super::super::wal_scan::scan(dir.path(), &LocalFs, 2, 0, &|_| true).unwrap();
        (dir, scan)
    }

    /// A table's key list: references to `refs`, then one inline entry, and tombstones, with
    /// its content CRC.
    fn list(table: u64, refs: &[u64], inline: Option<u64>, tombstones: &[u64]) -> KeyList {
        let mut crc = ContentCrc::default();
        let mut entries = Vec::new();
        for &s in refs {
            let ik = internal_key(format!("k{s:03}").as_bytes(), s, ValueKind::Put as u8);
            crc.add_point(&ik, format!("v{s}").as_bytes());
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

    /// Held records come back in sequence order, the log's merged with the lists' own, and
    /// an operation two lists reference once.
    #[test]
    fn held_records_replay_in_sequence_order() {
        let (_dir, scan) = log();
        let a = list(7, &[3, 10, 45, 70], Some(100), &[60]);
        let b = list(8, &[5, 10, 41, 79], Some(2), &[]);
        for threads in [1, 2, 3] {
            let held = Held::find(&[&a, &b], &scan, threads).unwrap();
            let mut got = Vec::new();
            held.replay(&scan, |seq, r| {
                got.push(match r {
                    RecRef::Point(_, k, v) => (seq, k.to_vec(), v.to_vec()),
                    RecRef::Range(s, e) => (seq, s.to_vec(), e.to_vec()),
                });
                Ok(())
            })
            .unwrap();
            let want: Vec<(u64, Vec<u8>, Vec<u8>)> = [2, 3, 5, 10, 41, 45, 60, 70, 79, 100]
                .iter()
                .map(|&s| match s {
                    2 | 100 => (s, format!("z{s:03}").into(), b"inline".to_vec()),
                    60 => (s, b"a".to_vec(), b"b".to_vec()),
                    _ => (s, format!("k{s:03}").into(), format!("v{s}").into()),
                })
                .collect();
            assert_eq!(got, want, "{threads} threads");
        }
    }

    /// A reference to an operation no log holds, and a list whose content does not match its
    /// checksum, are corruption.
    #[test]
    fn a_missing_operation_or_a_wrong_checksum_is_corruption() {
        let (_dir, scan) = log();
        let gone = list(7, &[3, 81], None, &[]);
        let e = Held::find(&[&gone], &scan, 2).err().expect("missing");
        assert!(e.is_corruption() && e.to_string().contains("81"), "{e}");
        let mut wrong = list(7, &[3, 4], None, &[]);
        wrong.checksum ^= 1;
        let e = Held::find(&[&wrong], &scan, 2).err().expect("checksum");
        assert!(e.is_corruption(), "{e}");
    }
}
