//! The extended WAL at run time (RocksMash §3.4): logging the key lists of new fast-tier tables
//! before the manifest names them, the WAL retention rule, and the TTL push-down.
//!
//! Invariants:
//! - Live WAL files are contiguous: files are only ever deleted below a bound, so every
//!   sequence number from the oldest live file's first one on is in the log location.
//! - A key list references a record (by sequence number) only if that record is at or above
//!   the oldest live WAL's first sequence number at the time the list is built, and that file
//!   is pinned (pending) from then until the table is in the manifest (whose pin takes over)
//!   or the install is abandoned. Older records, and records a compaction filter may have
//!   changed, are logged inline.
//! - A WAL file is deleted only below `min(log_number, every live or pending pin)`.
//! - A key list is durable in the WAL before the manifest edit installing its table is
//!   written, so a manifest found after a node loss never names a table without a key list.
//!
//! Depends on `wal` (key-list format), `version`, `sst`; never on the server, CLI or benchmark.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use parking_lot::Mutex;

use super::{DbInner, DbState};
use crate::compaction::{self, CompactionReason, Pick};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::tier::Tier;
use crate::types::{trailer, SeqNo};
use crate::version::{FileMeta, Version};
use crate::wal::keylist::{self, ContentCrc, KeyList, KeyListEntry};

/// Retention state of the live WAL files.
#[derive(Default)]
struct Retention {
    /// Live WAL file → (the first sequence number it may hold, when it was created or found).
    wals: BTreeMap<u64, (SeqNo, Instant)>,
    /// Tables whose key lists are logged but not installed yet → the WAL file they pin.
    pending: HashMap<u64, u64>,
}

/// The extended WAL's run-time state (present when `Options::extended_wal` is on).
#[derive(Default)]
pub(crate) struct ExtendedWal {
    state: Mutex<Retention>,
    /// Key-list records logged and their bytes; entries logged inline; WAL files deleted.
    pub lists: std::sync::atomic::AtomicU64,
    pub list_bytes: std::sync::atomic::AtomicU64,
    pub inlined: std::sync::atomic::AtomicU64,
    pub wals_deleted: std::sync::atomic::AtomicU64,
}

/// Pins of key lists logged for an install; dropping it releases the pending pins (after the
/// install, the manifest's pins hold the files).
pub(crate) struct Pinned<'a> {
    ext: Option<&'a ExtendedWal>,
    pins: Vec<(u64, u64)>,
}

impl Pinned<'_> {
    pub fn none() -> Self {
        Pinned {
            ext: None,
            pins: Vec::new(),
        }
    }
    /// `(table, wal)` pairs for [`crate::version::VersionEdit::wal_pins`].
    pub fn pins(&self) -> Vec<(u64, u64)> {
        self.pins.clone()
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        if let Some(ext) = self.ext {
            let mut r = ext.state.lock();
            for (id, _) in &self.pins {
                r.pending.remove(id);
            }
        }
    }
}

impl ExtendedWal {
    /// Registers a live WAL file whose records all have sequence numbers ≥ `first_seq`.
    pub fn wal_created(&self, number: u64, first_seq: SeqNo) {
        self.state
            .lock()
            .wals
            .insert(number, (first_seq, Instant::now()));
    }
}

/// The WAL file holding `seq`: the newest live file whose first sequence number is ≤ `seq`.
fn wal_of(wals: &BTreeMap<u64, (SeqNo, Instant)>, seq: SeqNo) -> Option<u64> {
    wals.iter()
        .rev()
        .find(|(_, (first, _))| *first <= seq)
        .map(|(n, _)| *n)
}

/// Builds, logs (durably) and pins the key lists of the fast-tier tables among `metas`, which
/// an install is about to add. `inline_all`: log every entry inline — the tables may hold
/// values the WAL does not (a compaction filter ran on them or on their sources). A failed WAL
/// append or sync stops writes (as on the write path: the log may end in a partial record).
pub(crate) fn log_tables<'a>(
    inner: &'a DbInner,
    metas: &[FileMeta],
    inline_all: bool,
) -> Result<Pinned<'a>> {
    match inner.extended.as_ref() {
        None => Ok(Pinned::none()),
        Some(ext) => log_tables_with(
            ext,
            &inner.tables,
            &inner.wal,
            inner.opts.extended_wal_ttl,
            metas,
            inline_all,
            Some(&|e: &crate::Error| super::write::set_bg_error(inner, e.clone())),
        ),
    }
}

/// [`log_tables`] with its parts spelled out (open calls it before the handle exists).
pub(crate) fn log_tables_with<'a>(
    ext: &'a ExtendedWal,
    tables: &crate::cache::TableCache,
    wal: &Mutex<crate::wal::LogSet>,
    ttl: Option<std::time::Duration>,
    metas: &[FileMeta],
    inline_all: bool,
    on_wal_error: Option<&dyn Fn(&crate::Error)>,
) -> Result<Pinned<'a>> {
    let fast: Vec<&FileMeta> = metas.iter().filter(|m| m.tier == Tier::Fast).collect();
    if fast.is_empty() {
        return Ok(Pinned::none());
    }
    // Pin the oldest live WAL while the lists are built, so what they reference stays.
    let (floor_wal, floor_seq) = {
        let mut r = ext.state.lock();
        let Some((&n, &(first, _))) = r.wals.iter().next() else {
            return Err(crate::Error::invalid(
                "extended WAL without a live WAL file",
            ));
        };
        // Records in files past their TTL are re-logged inline rather than referenced, so
        // that rewriting a table releases old files (the TTL push-down relies on it).
        let young = ttl.and_then(|ttl| {
            r.wals
                .values()
                .find(|(_, created)| created.elapsed() < ttl)
                .map(|(s, _)| *s)
        });
        for m in &fast {
            r.pending.insert(m.id, n);
        }
        (n, young.unwrap_or(first).max(first))
    };
    let mut pinned = Pinned {
        ext: Some(ext),
        pins: fast.iter().map(|m| (m.id, floor_wal)).collect(),
    };
    let mut lists = Vec::with_capacity(fast.len());
    let mut min_ref = Vec::with_capacity(fast.len());
    let mut inlined = 0u64;
    for m in &fast {
        let table = tables.get(m)?;
        let mut crc = ContentCrc::default();
        let mut entries = Vec::with_capacity(m.num_entries as usize);
        let mut lowest = None::<SeqNo>;
        let mut it = table.clone().iter(false);
        it.seek_to_first();
        while it.valid() {
            let (k, v) = (it.key(), it.value());
            crc.add_point(k, v);
            let seq = trailer(k) >> 8;
            if !inline_all && seq >= floor_seq {
                entries.push(KeyListEntry::Ref(seq));
                lowest = Some(lowest.map_or(seq, |l| l.min(seq)));
            } else {
                inlined += 1;
                entries.push(KeyListEntry::inline(k.to_vec(), v.to_vec()));
            }
            it.next();
        }
        it.status()?;
        let tombstones = table.range_tombstones().to_vec();
        for t in &tombstones {
            crc.add_tombstone(t);
        }
        lists.push(KeyList {
            table: m.id,
            entries,
            tombstones,
            checksum: crc.value(),
        });
        min_ref.push(lowest);
    }
    let rec = keylist::encode(&lists);
    let appended = {
        let mut wal = wal.lock();
        let n = wal.current().number();
        wal.current()
            .add_record(&rec)
            .and_then(|_| wal.sync())
            .map(|_| n)
    };
    // Reported after the WAL lock is released (lock order: `state` before `wal`).
    let list_wal = appended.inspect_err(|e| {
        if let Some(f) = on_wal_error {
            f(e);
        }
    })?;
    {
        let mut r = ext.state.lock();
        for ((id, pin), lowest) in pinned.pins.iter_mut().zip(&min_ref) {
            let data = lowest.and_then(|s| wal_of(&r.wals, s)).unwrap_or(list_wal);
            *pin = data.min(list_wal);
            r.pending.insert(*id, *pin);
        }
    }
    use std::sync::atomic::Ordering::Relaxed;
    ext.lists.fetch_add(1, Relaxed);
    ext.list_bytes.fetch_add(rec.len() as u64, Relaxed);
    ext.inlined.fetch_add(inlined, Relaxed);
    Ok(pinned)
}

/// The WAL files that may go: every live file below `min(log_number, pins)`.
fn deletable(live: &[u64], log_number: u64, pins: impl Iterator<Item = u64>) -> Vec<u64> {
    let bound = pins.fold(log_number, u64::min);
    live.iter().copied().filter(|&n| n < bound).collect()
}

/// Deletes WAL files no unflushed memtable and no fast-tier table (live or being installed)
/// needs any more.
pub(crate) fn purge_wals(inner: &DbInner) {
    let Some(ext) = inner.extended.as_ref() else {
        return;
    };
    let doomed = {
        let st = inner.state.lock();
        let mut r = ext.state.lock();
        let live: Vec<u64> = r.wals.keys().copied().collect();
        let pins = st
            .versions
            .wal_pins()
            .values()
            .chain(r.pending.values())
            .copied();
        let doomed = deletable(&live, st.versions.log_number, pins);
        // The newest file is the one being written: never deleted.
        let doomed: Vec<u64> = doomed
            .into_iter()
            .filter(|n| Some(n) != live.last())
            .collect();
        for n in &doomed {
            r.wals.remove(n);
        }
        doomed
    };
    for n in doomed {
        match inner
            .log_storage
            .remove(&super::write::wal_path(&inner.log_dir, n))
        {
            Ok(()) => {
                ext.wals_deleted
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(wal = n, error = %e, "could not delete an old WAL file"),
        }
    }
}

/// The TTL push-down (RocksMash §3.4): when the oldest live WAL file is older than
/// `extended_wal_ttl` and a fast-tier table pins it, compacts that table into the next level
/// (all of L0 for an L0 table), whose outputs re-log the old records inline or put them on the
/// capacity tier, releasing the file.
pub(crate) fn ttl_pick(
    inner: &DbInner,
    fam: &super::family::Family,
    st: &DbState,
    v: &Version,
) -> Option<Pick> {
    let ext = inner.extended.as_ref()?;
    let ttl = inner.opts.extended_wal_ttl?;
    // A split forest's trees overlap: pushing one table out of a tree would put an older
    // version above a newer one. Its merges move whole trees down on their own.
    if inner.opts.compaction_style == crate::version::CompactionStyle::SplitForest {
        return None;
    }
    let pins = st.versions.wal_pins();
    let last = v.num_levels() - 1;
    // Tables in the last level cannot be pushed (without a capacity tier the WAL keeps what
    // they hold); the others are, oldest pin first.
    let (pin, level, file) = v
        .levels
        .iter()
        .enumerate()
        .take(last)
        .flat_map(|(l, lv)| lv.files().map(move |f| (l, f)))
        .filter(|(_, f)| f.tier == Tier::Fast && !st.busy.contains(&f.id))
        .filter_map(|(l, f)| pins.get(&f.id).map(|p| (*p, l, f)))
        .min_by_key(|(p, l, _)| (*p, *l))
        .map(|(p, l, f)| (p, l, f.clone()))?;
    // Only a table pinning an expired file is pushed (a young pin holds nothing back).
    let young = ext
        .state
        .lock()
        .wals
        .get(&pin)
        .is_some_and(|(_, c)| c.elapsed() < ttl);
    if young {
        return None;
    }
    let popts = super::pick::picker_options(&inner.opts);
    let sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
    let output = if level == 0 {
        compaction::level_targets(&sizes, &popts).base_level.max(1)
    } else {
        level + 1
    };
    let inputs: Vec<_> = if level == 0 {
        v.levels[0].files().cloned().collect()
    } else {
        vec![file]
    };
    let writing = st.writing_of(fam.id);
    let mut pick = compaction::picker::pick_for(
        v,
        &st.busy,
        &writing,
        super::pick::tier_now(fam, st, output),
        level,
        inputs,
        output,
        CompactionReason::WalTtl,
        0.0,
    )?;
    // A trivial move keeps the table, its key list and its pin: rewrite it instead, so its
    // old records are re-logged inline (or go to the capacity tier).
    pick.trivial_move = false;
    Some(pick)
}

/// The first sequence number a WAL file holds (`None`: no write batch in it), read from its
/// first records.
pub(crate) fn first_seq_of(
    storage: &dyn crate::storage::Storage,
    path: &std::path::Path,
) -> Result<Option<SeqNo>> {
    let f = storage.open(path)?;
    let size = f.size();
    if size == 0 {
        return Ok(None);
    }
    let scan = |data: &[u8]| -> Result<Option<SeqNo>> {
        let mut reader = crate::wal::LogReader::new(data, path.display().to_string(), true);
        while let Some(rec) = reader.next_record()? {
            if crate::wal::link::is_write_batch(&rec) {
                return Ok(crate::coding::decode_fixed64(&rec));
            }
        }
        Ok(None)
    };
    let head = f.read_at(0, size.min(1 << 20) as usize)?;
    match scan(&head)? {
        Some(s) => Ok(Some(s)),
        None if size > head.len() as u64 => scan(&storage.read_all(path)?),
        None => Ok(None),
    }
}

/// [`first_seq_of`] for many files, up to 16 read at once: over an object store each costs a
/// listing and a ranged GET, and an open under the extended WAL asks it of every retained log.
pub(crate) fn first_seqs_of(
    storage: &dyn crate::storage::Storage,
    paths: &[std::path::PathBuf],
) -> Result<Vec<Option<SeqNo>>> {
    const AT_ONCE: usize = 16;
    if paths.len() <= 1 {
        return paths.iter().map(|p| first_seq_of(storage, p)).collect();
    }
    let per_thread = paths.len().div_ceil(AT_ONCE);
    std::thread::scope(|s| {
        let parts: Vec<_> = paths
            .chunks(per_thread)
            .map(|ps| {
                s.spawn(move || {
                    ps.iter()
                        .map(|p| first_seq_of(storage, p))
                        .collect::<Result<Vec<_>>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(paths.len());
        for part in parts {
            out.extend(
                part.join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?,
            );
        }
        Ok(out)
    })
}

/// Figures for `Db::stats`.
pub(crate) fn stats(inner: &DbInner) -> Option<crate::stats::ExtendedWalStats> {
    use std::sync::atomic::Ordering::Relaxed;
    let ext = inner.extended.as_ref()?;
    let wals: Vec<u64> = ext.state.lock().wals.keys().copied().collect();
    let bytes = wals
        .iter()
        .filter_map(|n| {
            let p = super::write::wal_path(&inner.log_dir, *n);
            inner.log_storage.open(&p).ok().map(|f| f.size())
        })
        .sum();
    Some(crate::stats::ExtendedWalStats {
        live_wal_files: wals.len(),
        live_wal_bytes: bytes,
        key_lists: ext.lists.load(Relaxed),
        key_list_bytes: ext.list_bytes.load(Relaxed),
        inlined_entries: ext.inlined.load(Relaxed),
        wal_files_deleted: ext.wals_deleted.load(Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_seqs_of_many_files_match_one_at_a_time() {
        use crate::storage::{LocalFs, Storage};
        let dir = tempfile::tempdir().unwrap();
        let fs = LocalFs;
        // 40 logs (more than are read at once): empty, key lists only, or writes from 10 * i.
        let mut paths = Vec::new();
        let mut want = Vec::new();
        for i in 0..40u64 {
            let p = dir.path().join(format!("{i:06}.log"));
            let mut w = crate::wal::LogWriter::new(fs.create(&p).unwrap(), i);
            match i % 3 {
                0 => want.push(None),
                1 => {
                    let list = KeyList {
                        table: i,
                        checksum: 0,
                        entries: Vec::new(),
                        tombstones: Vec::new(),
                    };
                    w.add_record(&keylist::encode(std::slice::from_ref(&list)))
                        .unwrap();
                    want.push(None);
                }
                _ => {
                    let mut b = crate::batch::WriteBatch::new();
                    b.put(b"k", b"v");
                    w.add_record(b.encode_with_seq(10 * i)).unwrap();
                    want.push(Some(10 * i));
                }
            }
            w.sync().unwrap();
            paths.push(p);
        }
        assert_eq!(first_seqs_of(&fs, &paths).unwrap(), want);
        for (p, w) in paths.iter().zip(&want) {
            assert_eq!(first_seq_of(&fs, p).unwrap(), *w);
        }
        let missing = dir.path().join("000999.log");
        assert!(first_seqs_of(&fs, &[paths[2].clone(), missing]).is_err());
    }

    #[test]
    fn deletable_is_everything_below_the_lowest_pin_and_log_number() {
        let live = [3, 5, 8, 9];
        let cases: &[(u64, &[u64], &[u64])] = &[
            (9, &[], &[3, 5, 8]),
            (9, &[5], &[3]),
            (9, &[8, 5, 9], &[3]),
            (5, &[8], &[3]),
            (3, &[], &[]),
            (9, &[3], &[]),
            (100, &[100], &[3, 5, 8, 9]),
        ];
        for (log_number, pins, want) in cases {
            assert_eq!(
                deletable(&live, *log_number, pins.iter().copied()),
                want.to_vec(),
                "log_number {log_number} pins {pins:?}"
            );
        }
    }

    #[test]
    fn wal_of_finds_the_newest_file_starting_at_or_below() {
        let now = Instant::now();
        let wals: BTreeMap<u64, (SeqNo, Instant)> = [
            (3, (1, now)),
            (5, (100, now)),
            (8, (100, now)),
            (9, (250, now)),
        ]
        .into_iter()
        .collect();
        // File 5 holds no batch (its first equals the next one's): 100..249 are in 8.
        for (seq, want) in [
            (1, Some(3)),
            (99, Some(3)),
            (100, Some(8)),
            (249, Some(8)),
            (250, Some(9)),
            (0, None),
        ] {
            assert_eq!(wal_of(&wals, seq), want, "seq {seq}");
        }
    }
}
