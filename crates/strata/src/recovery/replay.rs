//! The baseline rebuild (RocksMash Fig. 9): the lost tables' records replayed in chronological
//! order through memtables into L0 tables, which the opened database then compacts down.
//!
//! It reads the same inputs as the parallel rebuild (the key lists name which WAL records the
//! lost tables held; records whose newer versions moved to the capacity tier must not come
//! back), so the two differ only in mechanism. Moving every lost record to L0 is only correct
//! while no capacity-tier table sits above a lost fast-tier one (static and HotRAP placement);
//! under LogStore's placement this mode is refused.

use std::path::Path;
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
use crate::wal::{LogSet, LogWriter};

enum Rec {
    Point(ValueKind, Vec<u8>, Vec<u8>),
    Range(Vec<u8>, Vec<u8>),
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
    let mut recs: Vec<(SeqNo, Rec)> = Vec::new();
    for list in &lists {
        for_each_entry(list, scan, |ik, value| {
            let p = parse_internal_key(ik)?;
            recs.push((
                p.seq,
                Rec::Point(p.kind, p.user_key.to_vec(), value.to_vec()),
            ));
            Ok(())
        })?;
        for t in &list.tombstones {
            recs.push((t.seq, Rec::Range(t.start.clone(), t.end.clone())));
        }
    }
    recs.sort_by_key(|(s, _)| *s);
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
    for (seq, r) in &recs {
        match r {
            Rec::Point(kind, k, v) => mem.add(*seq, *kind, k, v),
            Rec::Range(s, e) => mem.add_range_delete(*seq, s, e),
        }
        if mem.approximate_size() >= opts.write_buffer_size {
            flush(&mem, &mut added)?;
            mem = Arc::new(MemTable::with_bloom(0, bloom));
        }
    }
    flush(&mem, &mut added)?;
    drop(recs);
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
