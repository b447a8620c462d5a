//! Read replicas that follow a writer through its log location (`Db::open_replica`).
//!
//! With `wal_location` on an object store (or a shared directory) and `extended_wal` on, the
//! writer keeps everything needed to rebuild it there: the WAL, the manifest's mirror, and the
//! key lists of its fast-tier tables; its capacity tier holds the rest. A replica is node-loss
//! recovery that never stops (`docs/mechanisms/replicas.md`): it reads the capacity tier in
//! place, rebuilds the fast-tier tables and memtables from the log location into its own
//! directory (`follow`), and keeps applying what the writer adds, by polling every
//! `refresh_interval` or on `Replica::refresh`. It writes nothing to the log location or the
//! capacity tier, takes no lease, and needs nothing from the writer's node.
//!
//! Reads see one consistent state at a time (a `view::View`): a point lookup or iterator
//! reads the newest view, a [`ReplicaSnapshot`] keeps one. A view's sequence number never goes
//! backwards and never passes a whole write batch the writer logged. A read that finds a
//! capacity-tier table deleted by the writer's garbage collection refreshes once and reads
//! again (a snapshot cannot: it reports the error).
//!
//! Owns: [`ReplicaOptions`], [`Replica`], [`ReplicaSnapshot`], [`ReplicaStatus`]. Depends on
//! the engine's read path, recovery and storage; never on the server, the CLI or the
//! benchmark.

mod follow;
mod source;
mod view;

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use crate::cache::{BlockCache, TableCache};
use crate::error::{Error, ErrorRepr, Result};
use crate::iter::DbIterator;
use crate::options::{Options, ReadOptions};
use crate::stats::{EngineStats, RequestKind};
use crate::storage::object::{is_object_store_location, CapacityOptions, CapacityTier};
use crate::storage::{default_storage, DirLock};
use crate::types::SeqNo;

use follow::Follower;
use source::{DirSource, LogSource, ObjectSource};
use view::{Readers, View};

/// How to open a replica (`Db::open_replica`).
#[derive(Clone)]
pub struct ReplicaOptions {
    /// The writer's log location (`Options::wal_location`): an object-store URL or a directory.
    pub wal_location: PathBuf,
    /// The writer's capacity tier (`Options::capacity`), read in place; `None` if it has none.
    pub capacity: Option<CapacityOptions>,
    /// The replica's own directory: the mirror of the log location, the rebuilt fast-tier
    /// tables, its caches. One replica at a time (it is locked).
    pub local_dir: PathBuf,
    /// How often the background thread refreshes; `None`: only on `Replica::refresh`.
    /// Default 1 s.
    pub refresh_interval: Option<Duration>,
    /// How often a refresh also checks the manifest when the WAL did not announce an install
    /// (and `CURRENT`, which tells a writer restart). Default 10 s.
    pub manifest_probe_interval: Duration,
    /// Engine options: the writer's level layout and table options (`num_levels` must match;
    /// rebuilt tables use the table options), and the replica's caches (`block_cache_capacity`,
    /// `row_cache_capacity`, `max_open_files`, `persistent_cache` on `local_dir`), its storage
    /// and merge operator. `wal_emulation` applies to an object-store log location. Its
    /// `wal_location` and `capacity` are ignored (the fields above say them).
    pub engine: Options,
}

impl ReplicaOptions {
    /// A replica of the writer whose log location is `wal_location`, kept in `local_dir`, with
    /// default options (no capacity tier).
    pub fn new(wal_location: impl Into<PathBuf>, local_dir: impl Into<PathBuf>) -> Self {
        ReplicaOptions {
            wal_location: wal_location.into(),
            capacity: None,
            local_dir: local_dir.into(),
            refresh_interval: Some(Duration::from_secs(1)),
            manifest_probe_interval: Duration::from_secs(10),
            engine: Options::default(),
        }
    }
}

/// What a replica has applied and what following the writer cost (`Replica::status`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReplicaStatus {
    /// The sequence number reads see: the writer's last write batch the replica applied.
    pub applied_sequence: SeqNo,
    /// How stale reads may be: milliseconds since the start of the last refresh that
    /// succeeded (it saw everything the writer had synced by then). `None` before one did.
    pub replica_lag_ms: Option<u64>,
    /// When the last successful refresh started, in Unix milliseconds.
    pub last_refresh_unix_ms: Option<u64>,
    /// Refreshes that succeeded.
    pub refreshes: u64,
    /// Refreshes that failed (the replica kept its last view).
    pub refresh_errors: u64,
    /// The last refresh's error, if the last refresh failed.
    pub last_error: Option<String>,
    /// Times the log location was listed (at open, after a writer restart).
    pub listings: u64,
    /// Bytes fetched from the log location.
    pub fetched_bytes: u64,
    /// Fast-tier tables rebuilt from the WAL.
    pub tables_rebuilt: u64,
    /// The WAL file the replica follows.
    pub log_number: u64,
    /// Memtables rebuilt from the WAL (one per WAL file not yet flushed by the writer).
    pub memtables: usize,
    /// Requests sent to the log location's object store (0 for a directory).
    pub log_requests: u64,
    /// LIST requests among them.
    pub log_lists: u64,
    /// Requests sent to the capacity tier (reads of its tables).
    pub capacity_requests: u64,
}

struct Counters {
    refreshes: u64,
    refresh_errors: u64,
    last_error: Option<String>,
    listings: u64,
    fetched_bytes: u64,
    tables_rebuilt: u64,
    last_ok: Option<(Instant, SystemTime)>,
}

struct ReplicaInner {
    follower: Mutex<Follower>,
    view: ArcSwap<View>,
    tables: Arc<TableCache>,
    stats: Arc<EngineStats>,
    opts: ReplicaOptions,
    counters: Mutex<Counters>,
    stop: Mutex<bool>,
    wake: Condvar,
    /// The options a promoted replica opens the writer with.
    writer: Options,
    /// The log location, shared with the follower (its request counters are read unlocked).
    source: Arc<dyn LogSource>,
    _lock: Box<dyn DirLock>,
}

/// A read-only replica; see the module docs. Dropping it stops its refresh thread.
pub struct Replica {
    inner: Arc<ReplicaInner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A replica's reads pinned at one state of the writer.
pub struct ReplicaSnapshot {
    view: Arc<View>,
    inner: Arc<ReplicaInner>,
}

fn no_db_snapshot(opts: &ReadOptions) -> Result<()> {
    if opts.snapshot.is_some() {
        return Err(Error::invalid(
            "a replica reads at its own snapshots (Replica::snapshot), not a Db's",
        ));
    }
    Ok(())
}

impl ReplicaInner {
    fn readers(&self) -> Readers<'_> {
        Readers {
            tables: &self.tables,
            stats: &self.stats,
            operator: self.opts.engine.merge_operator.as_deref(),
        }
    }

    /// Refreshes now; the new view is installed when it succeeds.
    fn refresh(&self, force_manifest: bool) -> Result<()> {
        let start = (Instant::now(), SystemTime::now());
        let mut f = self.follower.lock();
        let refreshed = f.refresh(force_manifest).and_then(|(view, r)| {
            // Views never go backwards: a refresh that read the writer behind what reads already
            // see (a listing restarts the memtables from the WAL) keeps the served view and
            // fails, so that it shows in `last_error` and `refresh_errors`, not as a success.
            not_behind(self.view.load().seq, view.seq)?;
            Ok((view, r))
        });
        match refreshed {
            Ok((view, r)) => {
                self.view.store(view);
                drop(f);
                for id in &r.dropped {
                    self.tables.evict(*id);
                }
                let mut c = self.counters.lock();
                c.refreshes += 1;
                c.listings += r.listed as u64;
                c.fetched_bytes += r.fetched;
                c.tables_rebuilt += r.rebuilt as u64;
                c.last_error = None;
                c.last_ok = Some(start);
                Ok(())
            }
            Err(e) => {
                drop(f);
                let mut c = self.counters.lock();
                c.refresh_errors += 1;
                c.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Runs `read` on the newest view; if a table it needed was deleted by the writer,
    /// refreshes (reading the manifest) and runs it again, up to [`READ_RETRIES`] times (a
    /// writer compacting without a garbage-collection minimum age can delete the next
    /// version's tables too before the read reaches them).
    fn read_latest<T>(&self, read: impl Fn(&Arc<View>) -> Result<T>) -> Result<T> {
        let mut attempt = 0;
        loop {
            match read(&self.view.load_full()) {
                Err(e) if (e.is_not_found() || e.is_missing_object()) && attempt < READ_RETRIES => {
                    attempt += 1;
                    tracing::debug!(error = %e, attempt, "replica: a table is gone; refreshing");
                    match self.refresh(true) {
                        // Read the writer behind the served view: read and refresh again.
                        Err(e) if e.kind() == crate::ErrorKind::TryAgain => {}
                        r => r?,
                    }
                }
                r => return r,
            }
        }
    }
}

impl crate::Db {
    /// Opens a read-only replica of the writer whose log location `opts.wal_location` is; see
    /// [`crate::replica`]. The writer must run with `extended_wal`. The first refresh (a full
    /// rebuild of the writer's fast tier) runs before this returns.
    pub fn open_replica(opts: ReplicaOptions) -> Result<Replica> {
        Replica::open(opts)
    }
}

impl Replica {
    fn open(opts: ReplicaOptions) -> Result<Replica> {
        let mut writer = opts.engine.clone();
        writer.wal_location = Some(opts.wal_location.clone());
        writer.capacity = opts.capacity.clone();
        writer.extended_wal = true;
        let mut engine = opts.engine.clone();
        engine.capacity = opts.capacity.clone();
        engine.wal_location = None;
        engine.extended_wal = false;
        let storage = engine.storage.clone().unwrap_or_else(default_storage);
        let dir = opts.local_dir.clone();
        storage.create_dir_all(&dir)?;
        let lock = storage.lock(&dir.join("LOCK"))?;
        // Rebuilt tables are not kept across opens: the first refresh rebuilds them.
        for name in storage.list(&dir)? {
            if name.ends_with(".sst") {
                storage.remove(&dir.join(&name))?;
            }
        }
        let source: Arc<dyn LogSource> = if is_object_store_location(&opts.wal_location) {
            let mut c = CapacityOptions::new(opts.wal_location.to_string_lossy().into_owned());
            c.emulation = opts.engine.wal_emulation.clone();
            Arc::new(ObjectSource::new(CapacityTier::open(
                &c,
                None,
                Default::default(),
            )?))
        } else {
            Arc::new(DirSource::new(&opts.wal_location, storage.clone()))
        };
        let mut follower = Follower::new(
            source.clone(),
            storage.clone(),
            &dir,
            engine.clone(),
            opts.manifest_probe_interval,
        )?;
        let start = (Instant::now(), SystemTime::now());
        // The writer may release a log the first manifest read still needs (its install then
        // fails): the next refresh reads the edit that released it.
        let mut attempt = 0;
        let (view, first) = loop {
            match follower.refresh(true) {
                Ok(r) => break r,
                Err(e) if attempt < 3 && (e.is_corruption() || e.is_not_found()) => {
                    attempt += 1;
                    tracing::debug!(error = %e, attempt, "replica: first refresh failed; again");
                    std::thread::sleep(Duration::from_millis(20 << attempt));
                }
                Err(e) => return Err(e),
            }
        };
        let stats = Arc::new(EngineStats::default());
        let versions = follower
            .versions()
            .ok_or_else(|| Error::invalid("replica: no version after the first refresh"))?;
        let store = Arc::new(crate::db::open::open_tiers(
            &dir, &storage, &engine, versions, &stats,
        )?);
        let block_cache = (engine.block_cache_capacity > 0)
            .then(|| Arc::new(BlockCache::new(engine.block_cache_capacity)));
        let tables = Arc::new(
            TableCache::new(store, engine.max_open_files, block_cache, stats.clone())
                .with_row_cache(engine.row_cache_capacity),
        );
        let inner = Arc::new(ReplicaInner {
            follower: Mutex::new(follower),
            view: ArcSwap::new(view),
            tables,
            stats,
            opts: ReplicaOptions { engine, ..opts },
            counters: Mutex::new(Counters {
                refreshes: 1,
                refresh_errors: 0,
                last_error: None,
                listings: first.listed as u64,
                fetched_bytes: first.fetched,
                tables_rebuilt: first.rebuilt as u64,
                last_ok: Some(start),
            }),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            writer,
            source,
            _lock: lock,
        });
        let r = Replica {
            inner,
            thread: Mutex::new(None),
        };
        r.start_refreshing()?;
        Ok(r)
    }

    /// Starts the background refresh thread (if `refresh_interval` asks for one).
    fn start_refreshing(&self) -> Result<()> {
        *self.inner.stop.lock() = false;
        let Some(every) = self.inner.opts.refresh_interval else {
            return Ok(());
        };
        let inner = self.inner.clone();
        let t = std::thread::Builder::new()
            .name("strata-replica".into())
            .spawn(move || refresh_loop(&inner, every))
            .map_err(|e| Error::io("replica refresh thread", e))?;
        *self.thread.lock() = Some(t);
        Ok(())
    }

    /// The newest value of `key` the replica has applied.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.get_opt(&ReadOptions::default(), key)
    }

    /// [`Replica::get`] with read options (`cache_only`, `skip_cache_fill`; `snapshot` must be
    /// `None`: use [`Replica::snapshot`]).
    pub fn get_opt(&self, opts: &ReadOptions, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        no_db_snapshot(opts)?;
        let key = key.as_ref();
        let inner = &self.inner;
        inner.read_latest(|v| v.get(&inner.readers(), key, v.seq, opts.cache_only))
    }

    /// The values of `keys`, all read at one state of the writer.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Bytes>>> {
        let inner = &self.inner;
        inner.read_latest(|v| {
            keys.iter()
                .map(|k| v.get(&inner.readers(), k.as_ref(), v.seq, false))
                .collect()
        })
    }

    /// An iterator over the newest state the replica has applied, within `opts`' bounds.
    pub fn iter(&self, opts: ReadOptions) -> Result<DbIterator> {
        no_db_snapshot(&opts)?;
        let inner = &self.inner;
        let op = inner.opts.engine.merge_operator.clone();
        inner.read_latest(|v| v.iter(&inner.readers(), &opts, v.seq, op.clone()))
    }

    /// Pins the replica's current state: reads through the snapshot see it however far the
    /// replica moves on.
    pub fn snapshot(&self) -> ReplicaSnapshot {
        ReplicaSnapshot {
            view: self.inner.view.load_full(),
            inner: self.inner.clone(),
        }
    }

    /// Catches up with the writer now (what the background thread does every
    /// `refresh_interval`), and says where the replica stands.
    pub fn refresh(&self) -> Result<ReplicaStatus> {
        if *self.inner.stop.lock() {
            return Err(Error::invalid(
                "the replica was promoted or closed: it no longer follows the writer",
            ));
        }
        self.inner.refresh(false)?;
        Ok(self.status())
    }

    /// The sequence number reads see (`ReplicaStatus::applied_sequence`, without the rest).
    pub fn applied_sequence(&self) -> SeqNo {
        self.inner.view.load().seq
    }

    /// Where the replica stands and what following the writer cost.
    pub fn status(&self) -> ReplicaStatus {
        let inner = &self.inner;
        let view = inner.view.load();
        // No follower lock: a refresh rebuilding tables holds it for seconds, and INFO, ROLE
        // and metrics scrapes must not wait for it.
        let log_requests = inner.source.requests();
        let capacity_requests = inner
            .tables
            .store()
            .capacity()
            .map(|c| c.stats().requests.snapshot())
            .unwrap_or_default();
        let c = inner.counters.lock();
        ReplicaStatus {
            applied_sequence: view.seq,
            replica_lag_ms: c.last_ok.map(|(t, _)| t.elapsed().as_millis() as u64),
            last_refresh_unix_ms: c.last_ok.map(|(_, s)| {
                s.duration_since(UNIX_EPOCH)
                    .map(|d| d.as_millis() as u64)
                    .unwrap_or(0)
            }),
            refreshes: c.refreshes,
            refresh_errors: c.refresh_errors,
            last_error: c.last_error.clone(),
            listings: c.listings,
            fetched_bytes: c.fetched_bytes,
            tables_rebuilt: c.tables_rebuilt,
            log_number: view.log,
            memtables: 1 + view.sv.imms.len(),
            log_requests: log_requests.total(),
            log_lists: log_requests.get(RequestKind::List),
            capacity_requests: capacity_requests.total(),
        }
    }

    /// The engine statistics of the replica's reads (caches, table reads).
    pub fn stats(&self) -> &EngineStats {
        &self.inner.stats
    }

    /// Stops the refresh thread and closes the replica.
    pub fn close(self) -> Result<()> {
        self.stop();
        Ok(())
    }

    /// Failover: makes this replica's node the writer, in `dir` (holding no database; not the
    /// replica's `local_dir`), and returns the open database.
    ///
    /// The replica stops following (its reads keep serving its last state until it is
    /// closed, so a server can answer reads while it promotes), then the writer opens on the log location and capacity
    /// tier the replica followed, with the replica's engine options and `extended_wal` on (so
    /// that the next replica can follow it). Opening takes the log location's lease: a writer
    /// that is still alive keeps it and the promotion fails with `Locked` (close it first for
    /// a planned switchover); a dead one's lease is taken over once it stayed silent for a
    /// whole `wal_lease_ttl`, after which none of its requests can land. Then the fast tier
    /// is rebuilt from the extended WAL and the WAL tail replayed (node-loss recovery), so
    /// every write the old writer acknowledged with `sync` is in the returned database, and
    /// its sequence is at least the replica's.
    ///
    /// If the open fails, the replica goes on following. Its rebuilt tables are not reused
    /// yet: promotion costs a node-loss recovery (`docs/mechanisms/replicas.md`).
    pub fn promote(&self, dir: impl AsRef<std::path::Path>) -> Result<crate::Db> {
        let dir = dir.as_ref();
        let inner = &self.inner;
        let storage = inner.writer.storage.clone().unwrap_or_else(default_storage);
        if dir == inner.opts.local_dir {
            return Err(Error::invalid(
                "promote: the writer's directory must not be the replica's local_dir",
            ));
        }
        if storage.exists(&crate::version::current_path(dir))? {
            return Err(ErrorRepr::AlreadyExists(format!(
                "{} already holds a database: a replica is promoted into an empty directory",
                dir.display()
            ))
            .into());
        }
        self.stop();
        let applied = self.inner.view.load().seq;
        let writer = self.inner.writer.clone();
        let local = self.inner.opts.local_dir.clone();
        let start = Instant::now();
        let db = match crate::Db::open(dir, writer) {
            Ok(db) => db,
            Err(e) => {
                // Still a replica: follow the writer again.
                self.start_refreshing()?;
                return Err(e);
            }
        };
        let seq = db.latest_sequence();
        if seq < applied {
            return Err(Error::corruption(format!(
                "promote: the log location's state (sequence {seq}) is older than what the \
                 replica applied ({applied}): was the log location rewritten?"
            )));
        }
        tracing::info!(
            dir = %dir.display(),
            replica = %local.display(),
            applied,
            sequence = seq,
            secs = start.elapsed().as_secs_f64(),
            "replica promoted to writer"
        );
        Ok(db)
    }

    fn stop(&self) {
        *self.inner.stop.lock() = true;
        self.inner.wake.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("wal_location", &self.inner.opts.wal_location)
            .field("local_dir", &self.inner.opts.local_dir)
            .finish()
    }
}

fn refresh_loop(inner: &Arc<ReplicaInner>, every: Duration) {
    loop {
        {
            let mut stop = inner.stop.lock();
            if *stop {
                return;
            }
            inner.wake.wait_for(&mut stop, every);
            if *stop {
                return;
            }
        }
        if let Err(e) = inner.refresh(false) {
            tracing::warn!(error = %e, "replica: refresh failed; reads keep the last state");
        }
    }
}

impl ReplicaSnapshot {
    /// The sequence number the snapshot reads at.
    pub fn sequence(&self) -> SeqNo {
        self.view.seq
    }

    /// The value of `key` at the snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.view
            .get(&self.inner.readers(), key.as_ref(), self.view.seq, false)
            .map_err(snapshot_error)
    }

    /// An iterator at the snapshot within `opts`' bounds.
    pub fn iter(&self, opts: ReadOptions) -> Result<DbIterator> {
        no_db_snapshot(&opts)?;
        let op = self.inner.opts.engine.merge_operator.clone();
        self.view
            .iter(&self.inner.readers(), &opts, self.view.seq, op)
            .map_err(snapshot_error)
    }
}

/// A snapshot that outlived a capacity-tier table the writer deleted cannot be read again.
fn snapshot_error(e: Error) -> Error {
    if e.is_not_found() || e.is_missing_object() {
        return ErrorRepr::Incomplete(
            "the replica snapshot is older than the writer's garbage collection allows (a \
             table it reads is gone): take a new snapshot",
        )
        .into();
    }
    e
}

/// Refreshes a read retries after a table it needed was gone (`read_latest`).
const READ_RETRIES: u32 = 5;

/// Whether a refresh that read the writer at sequence `read` may replace a view that serves
/// `served`: not if it is behind ([`crate::ErrorKind::TryAgain`]; the next refresh catches up).
fn not_behind(served: SeqNo, read: SeqNo) -> Result<()> {
    if read < served {
        return Err(ErrorRepr::TryAgain(format!(
            "the refresh read the writer at sequence {read}, behind the {served} reads already \
             see (a log not yet visible to it); the replica keeps serving {served}, and the next \
             refresh catches up"
        ))
        .into());
    }
    Ok(())
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Replica>();
    send_sync::<ReplicaSnapshot>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_behind_the_served_view_fails_with_try_again() {
        assert!(not_behind(0, 0).is_ok(), "a new replica");
        assert!(not_behind(10, 10).is_ok(), "nothing new written");
        assert!(not_behind(10, 11).is_ok());
        let e = not_behind(11, 10).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::TryAgain);
        assert!(e.to_string().contains("sequence 10, behind the 11"), "{e}");
    }
}
