//! Parallel rebuild (RocksMash §3.4, Fig. 10–11): every lost fast-tier table rebuilt from its
//! key list by a pool of workers (largest tables first), then installed in its level and run
//! with one manifest edit.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::wal_scan::{Op, WalScan};
use super::RecoveryReport;
use crate::error::{Error, Result};
use crate::memtable::prefetch::prefetch_range;
use crate::options::Options;
use crate::sst::builder::TableBuilder;
use crate::storage::Storage;
use crate::tier::{TableStore, TablesConfig, Tier};
use crate::types::{append_internal_key, compare_internal};
use crate::version::{FileMeta, VersionSet};
use crate::wal::keylist::{ContentCrc, KeyList, KeyListEntry};

/// The fast tier's table files in `dir`.
pub(super) fn fast_store(dir: &Path, storage: &Arc<dyn Storage>) -> TableStore {
    TableStore::new(TablesConfig {
        dir: dir.to_path_buf(),
        fast: storage.clone(),
        capacity: None,
        meta: None,
        data_cache: None,
        stats: Default::default(),
        shared: None,
    })
}

/// The key lists of `lost`, each checked present.
pub(super) fn lists_of<'a>(
    scan: &'a WalScan,
    lost: &[(usize, u64, FileMeta)],
) -> Result<Vec<&'a KeyList>> {
    lost.iter()
        .map(|(_, _, f)| {
            scan.lists.get(&f.id).ok_or_else(|| {
                Error::corruption(format!(
                    "fast-tier table {} has no key list in the log location",
                    f.id
                ))
            })
        })
        .collect()
}

/// Calls `f(internal key, value)` for each point entry of `list` in table order, resolving
/// references through `scan`, checking order and finally the content CRC (tombstones included).
pub(super) fn for_each_entry(
    list: &KeyList,
    scan: &WalScan,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    let id = list.table;
    let mut crc = ContentCrc::default();
    let mut prev: Vec<u8> = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    // References are resolved a window at a time, before the window's entries are used: each
    // is a cache miss on the index (table order is random order in the log), and in a loop
    // that does nothing else those loads are independent, so the processor overlaps them;
    // interleaved with building, each miss stalled the work behind it. Then the entries'
    // bytes are hinted `AHEAD` entries ahead.
    const WINDOW: usize = 4096;
    const AHEAD: usize = 8;
    let hint = |op: &Option<Op<'_>>| {
        if let Some(op) = op {
            prefetch_range(op.key.as_ptr(), op.key.len().min(256));
            prefetch_range(op.value.as_ptr(), op.value.len().min(512));
        }
    };
    let mut ops: Vec<Option<Op<'_>>> = Vec::with_capacity(WINDOW.min(list.entries.len()));
    for (w, window) in list.entries.chunks(WINDOW).enumerate() {
        ops.clear();
        ops.extend(window.iter().map(|e| match e {
            KeyListEntry::Ref(seq) => scan.op(*seq),
            KeyListEntry::Inline(_) => None,
        }));
        ops.iter().take(AHEAD).for_each(hint);
        for (j, e) in window.iter().enumerate() {
            let i = w * WINDOW + j;
            if let Some(op) = ops.get(j + AHEAD) {
                hint(op);
            }
            cur.clear();
            let value: &[u8] = match e {
                KeyListEntry::Ref(seq) => {
                    let op = ops[j].as_ref().ok_or_else(|| {
                        Error::corruption(format!(
                            "table {id}: the WAL operation with sequence number {seq} is \
                             missing from the log location"
                        ))
                    })?;
                    append_internal_key(&mut cur, op.key, *seq, op.kind as u8);
                    op.value
                }
                KeyListEntry::Inline(e) => {
                    cur.extend_from_slice(&e.ikey);
                    &e.value
                }
            };
            if i > 0 && compare_internal(&prev, &cur) != std::cmp::Ordering::Less {
                return Err(Error::corruption(format!(
                    "table {id}: key list entries out of order at entry {i}"
                )));
            }
            crc.add_point(&cur, value);
            f(&cur, value)?;
            std::mem::swap(&mut prev, &mut cur);
        }
    }
    for t in &list.tombstones {
        crc.add_tombstone(t);
    }
    if crc.value() != list.checksum {
        return Err(Error::corruption(format!(
            "table {id}: the entries found do not match the key list's checksum"
        )));
    }
    Ok(())
}

fn build_one(
    store: &TableStore,
    opts: &Options,
    level: usize,
    old: &FileMeta,
    list: &KeyList,
    scan: &WalScan,
) -> Result<FileMeta> {
    let file = store.create(old.id, Tier::Fast)?;
    let mut b = TableBuilder::new(file, crate::db::table_options(opts, level));
    for_each_entry(list, scan, |k, v| b.add(k, v))?;
    for t in &list.tombstones {
        b.add_range_tombstone(t.clone());
    }
    let s = b.finish()?;
    if s.props.num_entries != old.num_entries
        || s.props.num_range_deletions != old.num_range_deletions
    {
        return Err(Error::corruption(format!(
            "table {}: rebuilt with {} entries and {} range deletions, the manifest says {} and {}",
            old.id,
            s.props.num_entries,
            s.props.num_range_deletions,
            old.num_entries,
            old.num_range_deletions
        )));
    }
    Ok(FileMeta {
        size: s.file_size,
        ..old.clone()
    })
}

pub(super) fn run(
    dir: &Path,
    storage: &Arc<dyn Storage>,
    opts: &Options,
    versions: &mut VersionSet,
    lost: &[(usize, u64, FileMeta)],
    scan: &WalScan,
    report: &mut RecoveryReport,
) -> Result<()> {
    // The "Find" phase is the readers' indexing (counted in `read_secs`) plus the lookups each
    // worker makes while it builds.
    let t = Instant::now();
    let rebuilt = build_tables(dir, storage, opts, lost, scan, report.threads)?;
    for new in rebuilt.values() {
        report.entries += new.num_entries;
        report.bytes_written += new.size;
    }
    report.tables_written = lost.len();
    versions.replace_tables(&rebuilt)?;
    report.build_secs = super::secs(t.elapsed());
    Ok(())
}

/// Rebuilds each table of `lost` (level, run, manifest entry) into `dir` from its key list in
/// `scan`, on `threads` workers (largest tables first), and syncs the directory: the rebuilt
/// tables' metadata by id (the sizes may differ from the lost files'). A table that fails is
/// removed; the first failure is the error.
pub(crate) fn build_tables(
    dir: &Path,
    storage: &Arc<dyn Storage>,
    opts: &Options,
    lost: &[(usize, u64, FileMeta)],
    scan: &WalScan,
    threads: usize,
) -> Result<std::collections::HashMap<u64, FileMeta>> {
    let lists = lists_of(scan, lost)?;
    let store = fast_store(dir, storage);
    let mut order: Vec<usize> = (0..lost.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lost[i].2.size));
    let next = AtomicUsize::new(0);
    let slots: Vec<parking_lot::Mutex<Option<Result<FileMeta>>>> =
        lost.iter().map(|_| parking_lot::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(lost.len()).max(1) {
            s.spawn(|| {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (level, _, old) = &lost[i];
                    let r = build_one(&store, opts, *level, old, lists[i], scan);
                    if r.is_err() {
                        let _ = store.remove(old.id, Tier::Fast);
                    }
                    *slots[i].lock() = Some(r);
                }
            });
        }
    });
    let mut rebuilt = std::collections::HashMap::with_capacity(lost.len());
    for ((_, _, old), slot) in lost.iter().zip(slots) {
        let new = slot
            .into_inner()
            .ok_or_else(|| Error::invalid("a rebuild worker did not finish"))??;
        rebuilt.insert(old.id, new);
    }
    storage.sync_dir(dir)?;
    Ok(rebuilt)
}
