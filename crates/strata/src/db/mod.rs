//! The database handle and its machinery: open and recovery (`open`), the group-commit write
//! path with stalls (`write`), point reads and iterators over a super-version (`read`), flush
//! and compaction threads (`background`), and statistics and properties (`properties`).
//!
//! Concurrency: readers take an `Arc<SuperVersion>` (memtables + version) under a brief read
//! lock and never wait for background work. Writers queue; the queue's front writer commits
//! the group (one WAL record, one optional fsync). Lock order: writer queue, then `state`,
//! then `wal`. Background threads take only `state` (never the writer queue).
//! Depends on every engine module; nothing in the engine depends on `db` except the public API.

mod background;
mod checkpoint;
mod clone;
mod column_family;
mod extended;
mod family;
mod forest;
mod gc;
pub mod identity;
mod job_slot;
mod manual;
pub(crate) mod merge_lookup;
mod multi_get;
pub(crate) mod open;
mod pick;
mod promote;
mod properties;
pub(crate) mod read;
mod room;
pub(crate) mod search;
mod snapshot;
mod temperature;
mod wait;
mod wal_sync;
mod write;

pub use clone::CloneSource;
pub use column_family::{CfOptions, ColumnFamily};
use family::{Family, FamilyState};
pub use snapshot::Snapshot;

// For node-loss recovery (`crate::recovery`), which writes tables and key lists as the engine does.
pub(crate) use background::{table_options, write_l0_offline};
pub(crate) use extended::ExtendedWal as ExtendedWalHandle;

/// Logs the key lists of `metas` into `wal` (recovery's replay mode, before a handle exists);
/// `inline_all` as for compactions.
pub(crate) fn log_key_lists<'a>(
    ext: &'a extended::ExtendedWal,
    tables: &crate::cache::TableCache,
    wal: &parking_lot::Mutex<crate::wal::LogSet>,
    metas: &[crate::version::FileMeta],
    inline_all: bool,
) -> Result<extended::Pinned<'a>> {
    extended::log_tables_with(ext, tables, wal, None, metas, inline_all, None)
}

/// One sorted run, as [`Db::sorted_runs`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    /// The level the run is in.
    pub level: usize,
    /// 0 for L0 and leveled runs; the tree's id in a split forest.
    pub id: u64,
    /// Keys below this are served by the output of the merge that cut the tree.
    pub cut: Option<Vec<u8>>,
    /// With a cut: the run the interrupted or running merge writes into.
    pub cut_into: u64,
    /// The run's tables, in key order (for L0, the one table).
    pub tables: Vec<crate::version::FileMeta>,
}

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use crate::batch::WriteBatch;
use crate::cache::{BlockCache, TableCache};
use crate::compaction::RateLimiter;
use crate::error::Result;
use crate::iter::DbIterator;
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::stats::{DbStats, EngineStats};
use crate::storage::{DirLock, Storage};
use crate::version::{Version, VersionEdit, VersionSet};
use crate::wal::LogSet;
use snapshot::SnapshotList;

/// Commits `batch` if `check` passes at the commit moment (transactions; see
/// `write::write_checked`).
pub(crate) fn write_checked(
    db: &Db,
    batch: WriteBatch,
    sync: bool,
    check: CommitCheck,
) -> Result<()> {
    write::write_checked(db.inner(), batch, sync, check)
}

pub(crate) use write::CommitCheck;

/// Whether a write now would stall (for `WriteOptions::no_slowdown`).
pub(crate) fn would_slow_down(db: &Db) -> bool {
    room::would_slow_down(db.inner())
}

pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Newest first.
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

/// Mutable state guarded by `DbInner::state`.
pub(crate) struct DbState {
    pub versions: VersionSet,
    /// Each live family's memtables, by family id.
    pub families: BTreeMap<u32, FamilyState>,
    /// The WAL files this process has not deleted yet: one is deleted once it is below every
    /// family's oldest live memtable ([`DbState::log_floor`]) and every family's log number
    /// in the manifest.
    pub live_logs: std::collections::BTreeSet<u64>,
    /// A flush is running: from taking its memtable until its log is deleted, which follows
    /// the install (`wait_for_compactions` waits for both).
    pub flushing: bool,
    /// Tables being compacted (table ids are unique across families).
    pub busy: HashSet<u64>,
    pub running_compactions: usize,
    /// Input bytes of running compactions whose outputs go to the fast tier.
    pub running_fast_bytes: u64,
    /// Key ranges running compactions write into each level of a family, by job slot.
    pub writing: Vec<(u64, u32, crate::compaction::picker::Writing)>,
    /// Numbers job slots.
    pub next_slot: u64,
    pub bg_error: Option<crate::Error>,
}

impl DbState {
    /// Family `id`'s memtables. A `Family` handle is used only while its family is live.
    pub fn fam(&self, id: u32) -> &FamilyState {
        self.families.get(&id).expect("a live family has its state")
    }

    /// The key ranges running compactions write into family `id`'s levels.
    pub fn writing_of(&self, id: u32) -> Vec<crate::compaction::picker::Writing> {
        self.writing
            .iter()
            .filter(|(_, f, _)| *f == id)
            .map(|(_, _, w)| w.clone())
            .collect()
    }

    /// The oldest WAL a live memtable of any family needs, `current` being the log writes go
    /// to now: every older log's records are in tables. A family with nothing unflushed needs
    /// only `current` (a write to it now or in flight is there or later: logs rotate only
    /// with no group in flight).
    pub fn log_floor(&self, current: u64) -> u64 {
        self.families
            .values()
            .map(|fs| match fs.imms.first() {
                Some(m) => m.wal_number(),
                None if fs.mem.is_empty() => current,
                None => fs.mem.wal_number(),
            })
            .min()
            .unwrap_or(current)
    }

    /// Fails when `fam` was dropped or is being dropped (no new job may start in it).
    pub fn check_live(&self, fam: &Family) -> Result<()> {
        if self.families.contains_key(&fam.id) && !fam.dropped.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(crate::Error::invalid(format!(
            "column family {:?} was dropped",
            fam.name
        )))
    }

    /// An edit moving the log number of every family with nothing unflushed (but `except`)
    /// to `current`, the log writes go to now: a write to such a family, now or in flight, is
    /// in that log or a later one (logs rotate only with no group in flight).
    pub fn empty_family_log_numbers(&self, current: u64, except: Option<u32>) -> VersionEdit {
        let mut edit = VersionEdit::default();
        for (&id, fs) in &self.families {
            let behind = self.versions.log_number_of(id).is_some_and(|n| n < current);
            if Some(id) == except || !fs.is_empty() || !behind {
                continue;
            }
            if id == crate::version::DEFAULT_FAMILY {
                edit.log_number = Some(current);
            } else {
                edit.family_edits.push((
                    id,
                    VersionEdit {
                        log_number: Some(current),
                        ..Default::default()
                    },
                ));
            }
        }
        edit
    }

    /// The current version of family `fam`'s tree.
    pub fn version(&self, fam: u32) -> Arc<Version> {
        self.versions
            .current_of(fam)
            .expect("a live family has a tree")
    }

    /// Family `id`'s memtables, to change.
    pub fn fam_mut(&mut self, id: u32) -> &mut FamilyState {
        self.families
            .get_mut(&id)
            .expect("a live family has its state")
    }
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    /// Whether LogStore's ticker thread runs (started once a family is placed by LogStore).
    pub temperature_ticker: std::sync::atomic::AtomicBool,
    /// Where WAL files live: `Options::wal_location`, or `dir`; and the storage holding them
    /// (an object-store log location stages in `dir/wal-stage`).
    pub log_dir: PathBuf,
    pub log_storage: Arc<dyn Storage>,
    /// The extended WAL's retention state (`Options::extended_wal`).
    pub extended: Option<extended::ExtendedWal>,
    pub opts: Options,
    pub storage: Arc<dyn Storage>,
    pub stats: Arc<EngineStats>,
    pub block_cache: Option<Arc<BlockCache>>,
    pub tables: Arc<TableCache>,
    pub state: Mutex<DbState>,
    /// Signalled when background work finishes or is needed; paired with `state`.
    pub bg_cv: Condvar,
    /// The default family (id 0): its super-version, policy, HotRAP and LogStore.
    pub default: Arc<Family>,
    /// This open database's token: its families carry it (`Family::owner`).
    pub token: u64,
    /// Every live family's handle, by ascending id: the write path finds a batch's families
    /// here without the database lock. Replaced (under `state`) when a family is created or
    /// dropped.
    pub handles: arc_swap::ArcSwap<Vec<Arc<Family>>>,
    /// Writer queue and the ordering state of the commit pipeline (`write`).
    pub commit: write::CommitPipeline,
    pub wal: Mutex<LogSet>,
    /// The last sequence number visible to reads: every write up to it is in the memtable.
    pub last_seq: AtomicU64,
    pub snapshots: Arc<SnapshotList>,
    pub shutting_down: AtomicBool,
    pub rate_limiter: Option<Arc<RateLimiter>>,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    pub next_job_id: AtomicU64,
    /// Runs compaction jobs (locally today; remote compaction plugs in here).
    pub runner: Arc<dyn crate::compaction::CompactionRunner>,
    /// The remote-compaction runner (also `runner`), for its statistics.
    pub remote: Option<Arc<crate::compaction::remote::ServiceRunner>>,
    /// Parallel search of capacity-tier candidates (a capacity tier and `search_threads` ≥ 2).
    pub search: Option<Arc<search::SearchPool>>,
    /// The checkpoints and clones that keep capacity-tier tables (`crate::checkpoint`).
    pub registry: crate::checkpoint::Registry,
    /// Capacity-tier tables that left the last version and wait for garbage collection's
    /// minimum age or a checkpoint's release (`tier::gc`).
    pub deferred: Mutex<Vec<crate::tier::gc::Deferred>>,
    /// Held by the one garbage collection running (`gc::collect_capacity`), so that a
    /// caller that collects returns only once the deletions due are done.
    pub collecting: Mutex<()>,
    /// Shared tables (a checkpoint or clone) that left the last version, for the garbage
    /// collection to release to their source.
    pub to_release: Mutex<Vec<u64>>,
    pub _lock: Box<dyn DirLock>,
    /// The log location's lock, when it is apart from `dir`.
    pub _log_lock: Option<Box<dyn DirLock>>,
}

impl DbInner {
    /// Family `id`'s handle, if it is live (no lock taken).
    pub fn family(&self, id: u32) -> Option<Arc<Family>> {
        if id == crate::version::DEFAULT_FAMILY {
            return Some(self.default.clone());
        }
        let all = self.handles.load();
        all.binary_search_by_key(&id, |f| f.id)
            .ok()
            .map(|i| all[i].clone())
    }

    /// Every live column family, the default first (from the lock-free registry).
    pub fn all_families(&self) -> Vec<Arc<Family>> {
        self.handles.load().as_ref().clone()
    }

    /// Republishes [`DbInner::handles`] from `st` (under the database lock).
    pub fn publish_handles(&self, st: &DbState) {
        let all: Vec<Arc<Family>> = st.families.values().map(|fs| fs.handle.clone()).collect();
        self.handles.store(Arc::new(all));
    }

    /// Publishes a new super-version of `fam` built from `st`, and its stall counters.
    pub fn install_super_version(&self, fam: &Family, st: &DbState) {
        fam.install(st.fam(fam.id), st.version(fam.id), &|id| {
            st.busy.contains(&id)
        });
    }

    /// Publishes what the write path's stall check reads for `fam` (see
    /// [`Family::publish_l0`]), whenever the busy set changes.
    pub fn publish_l0(&self, fam: &Family, st: &DbState) {
        fam.publish_l0(&st.version(fam.id), &|id| st.busy.contains(&id));
    }

    /// The default family's current super-version.
    pub fn super_version(&self) -> Arc<SuperVersion> {
        self.default.super_version()
    }

    /// The default family's current super-version for a short read (see
    /// [`Family::super_version_guard`]).
    pub fn super_version_guard(&self) -> arc_swap::Guard<Arc<SuperVersion>> {
        self.default.super_version_guard()
    }
}

/// Closes the database when the last `Db` clone is dropped.
struct DbHandle {
    inner: Arc<DbInner>,
}

impl Drop for DbHandle {
    fn drop(&mut self) {
        let _ = self.inner.shutdown();
    }
}

/// An open database. Cheap to clone; all clones share one engine, and it is `Send + Sync`.
/// The database closes when the last clone is dropped or [`Db::close`] is called.
///
/// ```
/// use strata::{Db, Options, ReadOptions, WriteBatch};
///
/// let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"apple", b"red")?;
/// db.put(b"banana", b"yellow")?;
/// assert_eq!(db.get(b"apple")?.as_deref(), Some(&b"red"[..]));
///
/// // Atomic batches, including range deletes.
/// let mut batch = WriteBatch::new();
/// batch.put(b"cherry", b"dark red");
/// batch.delete_range(b"apple", b"b");
/// db.write(batch)?;
/// assert_eq!(db.get(b"apple")?, None);
///
/// // Snapshots give repeatable reads.
/// let snap = db.snapshot();
/// db.delete(b"banana")?;
/// let at_snap = ReadOptions { snapshot: Some(snap), ..Default::default() };
/// assert!(db.get_opt(&at_snap, b"banana")?.is_some());
///
/// // Iterators go both ways and seek.
/// let mut it = db.iter(ReadOptions::default())?;
/// it.seek_to_last();
/// assert_eq!(it.key(), b"cherry");
/// db.close()?;
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone)]
pub struct Db {
    handle: Arc<DbHandle>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner().dir)
            .finish()
    }
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in `path`, replaying its WAL.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let inner = open::open(path.as_ref(), opts)?;
        Ok(Db {
            handle: Arc::new(DbHandle { inner }),
        })
    }

    fn inner(&self) -> &Arc<DbInner> {
        &self.handle.inner
    }

    /// The directory the database lives in.
    pub fn path(&self) -> &Path {
        &self.inner().dir
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner().opts
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
    }

    /// Removes `key`.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }

    /// Merges `operand` into `key` with the database's merge operator
    /// (`Options::merge_operator`): a read-modify-write that does not read. The operand is
    /// checked by the operator's `check_operand`; without an operator the merge is refused
    /// with `ErrorKind::InvalidArgument`. See [`crate::merge`].
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write(b)
    }

    /// Removes every key in `[start, end)`.
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write(b)
    }

    /// Applies a batch atomically with default write options.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Applies a batch atomically. With `opts.sync` the WAL is fsynced before returning; with
    /// `opts.no_slowdown` a write that would stall fails with `ErrorKind::Incomplete` and
    /// writes nothing.
    pub fn write_opt(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        if opts.no_slowdown && room::batch_would_slow_down(self.inner(), &batch) {
            return Err(crate::error::ErrorRepr::Incomplete("the write would stall").into());
        }
        write::write(self.inner(), batch, opts.sync)
    }

    /// The value of `key` in the latest state.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let inner = self.inner();
        read::get(inner, &inner.default, &ReadOptions::default(), key.as_ref())
    }

    /// A hint before point reads of several keys (a pipeline of GETs): starts loading into the
    /// CPU caches what looking them up in the active memtable touches first, so their cache
    /// misses overlap instead of following one another. No effect on any result.
    pub fn prefetch_gets(&self, keys: &[&[u8]]) {
        self.inner().super_version_guard().mem.prefetch_gets(keys);
    }

    /// The value of `key` as of `opts.snapshot` (or the latest state).
    pub fn get_opt(&self, opts: &ReadOptions, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let inner = self.inner();
        read::get(inner, &inner.default, opts, key.as_ref())
    }

    /// The values of `keys` (RocksDB's `MultiGet`), one answer per key in order, all as of one
    /// snapshot: `opts.snapshot`, or the latest state when the call starts, so a concurrent
    /// write is seen by every key or by none. Each answer is what [`Db::get_opt`] at that
    /// snapshot returns, errors included (one key's failed read fails that key only).
    /// Cheaper than one `get` per key: the data is pinned once, the keys that reach the fast
    /// tier's tables are probed a table at a time (filters, index searches and data blocks
    /// shared across the batch), and on a tiered database the keys that reach the capacity
    /// tier are looked up concurrently on the search threads. Duplicate keys are answered each
    /// time. Statistics count what was done: a data block the batch shares is one block-cache
    /// lookup, and a key given twice is probed (and missed in the row cache) twice.
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[K],
    ) -> Vec<Result<Option<Bytes>>> {
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        let inner = self.inner();
        multi_get::multi_get(inner, &inner.default, opts, &keys)
    }

    /// An iterator over the state at `opts.snapshot` (or now), within `opts`' bounds. It starts
    /// unpositioned: call a seek first.
    pub fn iter(&self, opts: ReadOptions) -> Result<DbIterator> {
        let inner = self.inner();
        read::iter(inner, &inner.default, &opts)
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.inner();
        inner.snapshots.acquire(&inner.last_seq)
    }

    /// Flushes the memtable of every column family to a table and waits until every sealed
    /// memtable is flushed.
    pub fn flush(&self) -> Result<()> {
        let inner = self.inner();
        background::flush(inner, &inner.all_families())
    }

    /// Compacts every level of the default column family overlapping `[begin, end]` (`None`:
    /// unbounded) down to the last level, after a flush. Blocks until done.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let inner = self.inner();
        manual::compact_range(inner, &inner.default, begin, end)
    }

    /// Makes every write acknowledged so far durable (fsync of the WAL).
    pub fn sync_wal(&self) -> Result<()> {
        wal_sync::sync_wal(self.inner())
    }

    /// The latest sequence number visible to reads.
    pub fn latest_sequence(&self) -> u64 {
        self.inner().last_seq.load(Ordering::Acquire)
    }

    /// Metadata of every live table of the default column family: its level and, in
    /// `FileMeta`, id, size, key range and tier (RocksDB's `GetLiveFilesMetaData`; another
    /// family's: [`Db::live_tables_cf`]).
    pub fn live_tables(&self) -> Vec<(usize, crate::version::FileMeta)> {
        let sv = self.inner().super_version();
        sv.version
            .levels
            .iter()
            .enumerate()
            .flat_map(|(l, level)| level.files().map(move |f| (l, f.meta.clone())))
            .collect()
    }

    /// The sorted runs of the default column family's current version, newest first within
    /// each level (L0: one per table; a leveled level: one; a split-forest level: one per
    /// tree, with its cut while a merge with early cleaning is under way or was interrupted).
    pub fn sorted_runs(&self) -> Vec<RunInfo> {
        let sv = self.inner().super_version();
        sv.version
            .levels
            .iter()
            .enumerate()
            .flat_map(|(l, level)| {
                level.runs.iter().map(move |r| RunInfo {
                    level: l,
                    id: r.id,
                    cut: r.cut.clone(),
                    cut_into: r.cut_into,
                    tables: r.files.iter().map(|f| f.meta.clone()).collect(),
                })
            })
            .collect()
    }

    /// The capacity tier, when configured (for its emulation controls and counters).
    pub fn capacity_tier(&self) -> Option<Arc<crate::storage::object::CapacityTier>> {
        self.inner().tables.store().capacity().cloned()
    }

    /// A snapshot of the statistics. Counters (bytes written, flushes, compactions, reads)
    /// cover every column family; what describes a tree (levels, memtables, HotRAP) describes
    /// the default family's.
    pub fn stats(&self) -> DbStats {
        properties::stats(self.inner(), &self.inner().default)
    }

    /// [`Db::stats`] of column family `cf`: its levels (files, bytes, targets), memtables,
    /// tiers, HotRAP and LogStore; the counters (bytes written, flushes, compactions and reads
    /// per level) are still the whole database's.
    pub fn stats_cf(&self, cf: &ColumnFamily) -> Result<DbStats> {
        Ok(properties::stats(self.inner(), cf.live(self.inner())?))
    }

    /// A named property (see `docs/properties.md`), or `None` if the name is unknown.
    pub fn property(&self, name: &str) -> Option<String> {
        properties::property(self.inner(), &self.inner().default, name)
    }

    /// [`Db::property`] of column family `cf` (a tree's properties describe the family's).
    pub fn property_cf(&self, cf: &ColumnFamily, name: &str) -> Result<Option<String>> {
        Ok(properties::property(
            self.inner(),
            cf.live(self.inner())?,
            name,
        ))
    }

    /// Waits for background flushes and compactions to settle (no work pending or running).
    /// While the capacity tier is down, work that needs it is not pending: it returns once the
    /// fast tier's own work is done (`DbStats::tier.capacity_health` says the tier is down).
    pub fn wait_for_compactions(&self) -> Result<()> {
        background::wait_idle(self.inner())
    }

    /// Creates the column family `name` with options `opts`: a key space of its own, with its
    /// own memtables, levels and compaction, sharing the database's WAL — a [`WriteBatch`]
    /// across families commits atomically — and its snapshots, caches and capacity tier. The
    /// family and its options are recorded in the manifest (from the first family on, format
    /// `strata.manifest.v3`, which older releases cannot open). A name in use fails with
    /// `ErrorKind::InvalidArgument`.
    ///
    /// ```
    /// use strata::{CfOptions, Db, Options, ReadOptions, WriteBatch};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let users = db.create_cf("users", CfOptions::default())?;
    /// let index = db.create_cf("by_email", CfOptions { bloom_bits_per_key: 0.0, ..Default::default() })?;
    ///
    /// // One atomic batch across families.
    /// let mut b = WriteBatch::new();
    /// b.put_cf(&users, b"u1", b"ada");
    /// b.put_cf(&index, b"ada@example.com", b"u1");
    /// db.write(b)?;
    /// assert_eq!(db.get_cf(&users, b"u1")?.as_deref(), Some(&b"ada"[..]));
    /// assert_eq!(db.get(b"u1")?, None); // the default family is another key space
    ///
    /// // Families survive a reopen, with their options.
    /// db.close()?;
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let users = db.cf("users").expect("the family exists");
    /// let mut it = db.iter_cf(&users, ReadOptions::default())?;
    /// it.seek_to_first();
    /// assert_eq!(it.key(), b"u1");
    /// drop(it);
    /// db.drop_cf("by_email")?;
    /// assert!(db.cf("by_email").is_none());
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn create_cf(&self, name: &str, opts: CfOptions) -> Result<ColumnFamily> {
        column_family::create(self.inner(), name, opts)
    }

    /// The column family `name` (`"default"` is the default family), if it exists.
    pub fn cf(&self, name: &str) -> Option<ColumnFamily> {
        let st = self.inner().state.lock();
        let id = if name == crate::version::DEFAULT_FAMILY_NAME {
            crate::version::DEFAULT_FAMILY
        } else {
            st.versions.families().id_of(name)?
        };
        st.families.get(&id).map(|fs| ColumnFamily {
            family: fs.handle.clone(),
        })
    }

    /// The names of the column families, the default one first.
    pub fn column_families(&self) -> Vec<String> {
        let st = self.inner().state.lock();
        st.families
            .values()
            .map(|fs| fs.handle.name.clone())
            .collect()
    }

    /// Drops the column family `name`: its data is gone, its tables are deleted from both
    /// tiers (capacity-tier ones after garbage collection's minimum age, as any), and handles
    /// to it fail from now on. Waits for the family's running flush or compaction to finish.
    /// The default family cannot be dropped.
    pub fn drop_cf(&self, name: &str) -> Result<()> {
        column_family::drop_family(self.inner(), name)
    }

    /// Sets `key` to `value` in column family `cf`.
    pub fn put_cf(
        &self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        cf.live(self.inner())?;
        let mut b = WriteBatch::new();
        b.put_cf(cf, key, value);
        self.write(b)
    }

    /// Removes `key` from column family `cf`.
    pub fn delete_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<()> {
        cf.live(self.inner())?;
        let mut b = WriteBatch::new();
        b.delete_cf(cf, key);
        self.write(b)
    }

    /// Merges `operand` into `key` of column family `cf` (see [`Db::merge`]).
    pub fn merge_cf(
        &self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        cf.live(self.inner())?;
        let mut b = WriteBatch::new();
        b.merge_cf(cf, key, operand);
        self.write(b)
    }

    /// Removes every key in `[start, end)` of column family `cf`.
    pub fn delete_range_cf(
        &self,
        cf: &ColumnFamily,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        cf.live(self.inner())?;
        let mut b = WriteBatch::new();
        b.delete_range_cf(cf, start, end);
        self.write(b)
    }

    /// The value of `key` in column family `cf`, in the latest state.
    pub fn get_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.get_cf_opt(cf, &ReadOptions::default(), key)
    }

    /// The value of `key` in column family `cf` as of `opts.snapshot` (or the latest state).
    /// Snapshots are database-wide: one snapshot reads every family at one point.
    pub fn get_cf_opt(
        &self,
        cf: &ColumnFamily,
        opts: &ReadOptions,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Bytes>> {
        read::get(self.inner(), cf.live(self.inner())?, opts, key.as_ref())
    }

    /// [`Db::multi_get`] in column family `cf`.
    pub fn multi_get_cf<K: AsRef<[u8]>>(
        &self,
        cf: &ColumnFamily,
        opts: &ReadOptions,
        keys: &[K],
    ) -> Vec<Result<Option<Bytes>>> {
        let fam = match cf.live(self.inner()) {
            Ok(f) => f,
            Err(e) => return keys.iter().map(|_| Err(e.clone())).collect(),
        };
        let keys: Vec<&[u8]> = keys.iter().map(AsRef::as_ref).collect();
        multi_get::multi_get(self.inner(), fam, opts, &keys)
    }

    /// An iterator over column family `cf` (see [`Db::iter`]).
    pub fn iter_cf(&self, cf: &ColumnFamily, opts: ReadOptions) -> Result<DbIterator> {
        read::iter(self.inner(), cf.live(self.inner())?, &opts)
    }

    /// Flushes column family `cf`'s memtable and waits until its sealed memtables are flushed.
    pub fn flush_cf(&self, cf: &ColumnFamily) -> Result<()> {
        background::flush(self.inner(), std::slice::from_ref(cf.live(self.inner())?))
    }

    /// [`Db::compact_range`] in column family `cf`.
    pub fn compact_range_cf(
        &self,
        cf: &ColumnFamily,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        manual::compact_range(self.inner(), cf.live(self.inner())?, begin, end)
    }

    /// Metadata of every live table of column family `cf`, with its level.
    pub fn live_tables_cf(
        &self,
        cf: &ColumnFamily,
    ) -> Result<Vec<(usize, crate::version::FileMeta)>> {
        let sv = cf.live(self.inner())?.super_version();
        Ok(sv
            .version
            .levels
            .iter()
            .enumerate()
            .flat_map(|(l, level)| level.files().map(move |f| (l, f.meta.clone())))
            .collect())
    }

    /// Stops background work, syncs the WAL and releases the directory lock once every clone is
    /// dropped. Other clones see `Closed` errors afterwards.
    pub fn close(self) -> Result<()> {
        self.inner().shutdown()
    }
}
