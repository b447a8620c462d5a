//! The typed access layer between commands and the engine: user keys in database 0 (see
//! `keyspace`), values with headers (see `value`), expiry applied on read, the sync policy
//! applied on write, the striped key locks (see `locks`), and bounded range scans.
//!
//! Invariants: `get` never returns an expired value; every write goes through [`Store::write`]
//! (or `write_no_slowdown`), which applies the sync policy (`always` → the write is fsynced
//! before it returns) and then marks the connections that WATCH its keys. Commands
//! build their batches through `commands::Ctx`, which rejects keys longer than
//! `keyspace::MAX_USER_KEY`. This module performs blocking engine calls: call it from the
//! engine pool only.
//!
//! The engine is a writer (`Db`) or a read replica (`strata::replica::Replica`, with
//! `replicaof`): reads go to either, writes to a replica are refused (commands check
//! [`Store::is_replica`] first and answer `READONLY`), and [`Store::promote`] turns the replica
//! into the writer in place (`REPLICAOF NO ONE`).
//! Depends on `keyspace`, `value`, `expiry`, `locks`, `config` and the engine.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use strata::replica::{Replica, ReplicaOptions, ReplicaStatus};
use strata::{Db, DbIterator, ReadOptions, WriteBatch, WriteOptions};

use crate::collections::gc::DbSlot;
use crate::config::{ServerConfig, SyncPolicy};
use crate::expiry::{is_expired, ExpiryFilter};
use crate::keyspace::{self, DB0_END, DB0_START, FORMAT_KEY, LAYOUT_VERSION, MAX_USER_KEY};
use crate::locks::KeyLocks;
use crate::value::{self, DecodeError, Entry, ValueType};
use crate::watch::Watches;

impl Drop for Store {
    fn drop(&mut self) {
        // The filter's handle would otherwise keep the database alive (a reference cycle).
        self.filter_db.detach();
    }
}

/// A failure below the command layer.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Engine(#[from] strata::Error),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("key is too large (the limit is {MAX_USER_KEY} bytes)")]
    KeyTooLarge,
    #[error("{0}")]
    Layout(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The engine error of a write that reached a replica: a safety net, since the dispatcher
/// answers every write command on a replica `READONLY` before it runs.
pub const READONLY_ENGINE: &str = "a read replica accepts no writes";

/// What the store reads and writes: the writer, or a replica of one.
pub enum Engine {
    Writer(Db),
    Replica(Replica),
}

/// The engine slot: swapped once, when a replica is promoted.
pub type EngineSlot = Arc<ArcSwap<Engine>>;

/// The replica's directory inside the data directory.
pub fn replica_dir(dir: &Path) -> std::path::PathBuf {
    dir.join("replica")
}

/// The database, its locks and its write policy.
pub struct Store {
    engine: EngineSlot,
    /// The log location followed, while a replica.
    replica_of: parking_lot::Mutex<Option<String>>,
    /// Serializes promotions.
    promoting: parking_lot::Mutex<()>,
    dir: std::path::PathBuf,
    locks: Arc<KeyLocks>,
    write_opts: WriteOptions,
    sync: SyncPolicy,
    filter_db: Arc<DbSlot>,
    stale_removed: Arc<AtomicU64>,
    /// The keys connections WATCH: every write marks their watchers (see `watch`).
    watches: Arc<Watches>,
}

impl Store {
    /// Opens (or creates) the database in `config.dir` with the expiry compaction filter, and
    /// checks (or, in an empty database, writes) the layout version. Blocking.
    pub fn open(config: &ServerConfig, expired_counter: Arc<AtomicU64>) -> StoreResult<Store> {
        let mut opts = config
            .engine_options()
            .map_err(|e| StoreError::Layout(e.0))?;
        let filter_db = DbSlot::new();
        let stale_removed = Arc::new(AtomicU64::new(0));
        opts.compaction_filter = Some(Arc::new(
            ExpiryFilter::new(expired_counter).with_db(filter_db.clone(), stale_removed.clone()),
        ));
        std::fs::create_dir_all(&config.dir).map_err(|e| {
            StoreError::Layout(format!("cannot create {}: {e}", config.dir.display()))
        })?;
        let engine = match &config.replicaof {
            None => {
                let db = Db::open(&config.dir, opts)?;
                Self::check_layout(&db, &config.dir)?;
                filter_db.attach(db.clone());
                Engine::Writer(db)
            }
            Some(of) => {
                let mut r = ReplicaOptions::new(of, replica_dir(&config.dir));
                r.capacity = opts.capacity.clone();
                r.refresh_interval = Some(Duration::from_millis(config.replica_refresh_ms));
                r.engine = opts;
                let replica = Db::open_replica(r)?;
                match replica.get(FORMAT_KEY)? {
                    Some(v) if v.as_ref() != LAYOUT_VERSION => {
                        return Err(StoreError::Layout(format!(
                            "the writer at {of} holds data of an unknown server layout ({:?})",
                            String::from_utf8_lossy(&v)
                        )))
                    }
                    _ => {}
                }
                tracing::info!(replicaof = %of, "serving as a read replica");
                Engine::Replica(replica)
            }
        };
        Ok(Store {
            engine: Arc::new(ArcSwap::from_pointee(engine)),
            replica_of: parking_lot::Mutex::new(config.replicaof.clone()),
            promoting: parking_lot::Mutex::new(()),
            dir: config.dir.clone(),
            locks: Arc::new(KeyLocks::new(config.key_lock_stripes)),
            write_opts: WriteOptions {
                sync: config.sync == SyncPolicy::Always,
                ..Default::default()
            },
            sync: config.sync,
            filter_db,
            stale_removed,
            watches: Arc::default(),
        })
    }

    /// Stops the compaction filter from reading the database (call before closing it; the
    /// filter then keeps every sub-key).
    pub fn detach_filter(&self) {
        self.filter_db.detach();
    }

    /// Stale collection sub-keys removed by compaction so far.
    pub fn stale_removed(&self) -> u64 {
        self.stale_removed
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn check_layout(db: &Db, dir: &Path) -> StoreResult<()> {
        match db.get(FORMAT_KEY)? {
            Some(v) if v.as_ref() == LAYOUT_VERSION => Ok(()),
            Some(v) => Err(StoreError::Layout(format!(
                "{} holds data of an unknown server layout ({:?})",
                dir.display(),
                String::from_utf8_lossy(&v)
            ))),
            None => {
                let mut it = db.iter(ReadOptions::default())?;
                it.seek_to_first();
                it.status()?;
                if it.valid() {
                    return Err(StoreError::Layout(format!(
                        "{} holds a Strata database that was not written by strata serve",
                        dir.display()
                    )));
                }
                db.write_opt(
                    {
                        let mut b = WriteBatch::new();
                        b.put(FORMAT_KEY, LAYOUT_VERSION);
                        b
                    },
                    &WriteOptions {
                        sync: true,
                        ..Default::default()
                    },
                )?;
                Ok(())
            }
        }
    }

    /// The writer, or `None` while this is a replica.
    pub fn db(&self) -> Option<Db> {
        match &**self.engine.load() {
            Engine::Writer(db) => Some(db.clone()),
            Engine::Replica(_) => None,
        }
    }

    /// The engine slot (metrics read it at each scrape).
    pub fn engine(&self) -> &EngineSlot {
        &self.engine
    }

    /// Whether this is a read replica (writes are answered `READONLY`).
    pub fn is_replica(&self) -> bool {
        matches!(&**self.engine.load(), Engine::Replica(_))
    }

    /// The log location followed and where the replica stands, while a replica.
    pub fn replica_status(&self) -> Option<(String, ReplicaStatus)> {
        match &**self.engine.load() {
            Engine::Replica(r) => Some((
                self.replica_of.lock().clone().unwrap_or_default(),
                r.status(),
            )),
            Engine::Writer(_) => None,
        }
    }

    /// The newest sequence number reads see: the writer's last write, or what the replica
    /// applied.
    pub fn latest_sequence(&self) -> u64 {
        match &**self.engine.load() {
            Engine::Writer(db) => db.latest_sequence(),
            Engine::Replica(r) => r.applied_sequence(),
        }
    }

    /// A point lookup of an engine key.
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> strata::Result<Option<Bytes>> {
        match &**self.engine.load() {
            Engine::Writer(db) => db.get_opt(opts, key),
            Engine::Replica(r) => r.get_opt(opts, key),
        }
    }

    /// Point lookups of engine keys, each answered on its own (a replica reads them all at
    /// one state).
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        opts: &ReadOptions,
        keys: &[K],
    ) -> Vec<strata::Result<Option<Bytes>>> {
        match &**self.engine.load() {
            Engine::Writer(db) => db.multi_get(opts, keys),
            Engine::Replica(r) => match r.multi_get(keys) {
                Ok(v) => v.into_iter().map(Ok).collect(),
                Err(e) => keys.iter().map(|_| Err(e.clone())).collect(),
            },
        }
    }

    /// Hints the engine at keys about to be read (the writer only).
    pub fn prefetch_gets(&self, keys: &[&[u8]]) {
        if let Engine::Writer(db) = &**self.engine.load() {
            db.prefetch_gets(keys);
        }
    }

    /// An iterator over engine keys.
    pub fn iter(&self, opts: ReadOptions) -> strata::Result<DbIterator> {
        match &**self.engine.load() {
            Engine::Writer(db) => db.iter(opts),
            Engine::Replica(r) => r.iter(opts),
        }
    }

    /// `REPLICAOF NO ONE`: the replica becomes the writer, in the data directory (see
    /// `Replica::promote`: it takes the log location's lease, so it fails while the old
    /// writer lives). Reads keep being served from the replica's last state meanwhile.
    /// Returns false if this is a writer already. Blocking.
    pub fn promote(&self) -> StoreResult<bool> {
        let _one = self.promoting.lock();
        let old = self.engine.load_full();
        let Engine::Replica(replica) = &*old else {
            return Ok(false);
        };
        let db = replica.promote(&self.dir)?;
        if let Err(e) = Self::check_layout(&db, &self.dir) {
            let _ = db.close();
            return Err(e);
        }
        self.filter_db.attach(db.clone());
        self.engine.store(Arc::new(Engine::Writer(db)));
        *self.replica_of.lock() = None;
        // The replica closes when the last reader lets go of it; its directory is not needed.
        drop(old);
        if let Err(e) = std::fs::remove_dir_all(replica_dir(&self.dir)) {
            tracing::warn!(error = %e, "promotion: could not remove the replica's directory");
        }
        tracing::info!(dir = %self.dir.display(), "promoted from replica to writer");
        Ok(true)
    }

    pub fn locks(&self) -> &Arc<KeyLocks> {
        &self.locks
    }

    pub fn sync_policy(&self) -> SyncPolicy {
        self.sync
    }

    /// The live entry of `key` at time `now` (ms), or `None` if absent or expired.
    pub fn get(&self, key: &[u8], now: u64) -> StoreResult<Option<Entry>> {
        let raw = self.get_opt(&ReadOptions::default(), &keyspace::data_key(key))?;
        let Some(raw) = raw else { return Ok(None) };
        let e = value::decode(raw)?;
        Ok((!is_expired(e.expire_at, now)).then_some(e))
    }

    /// The keys connections watch (WATCH).
    pub fn watches(&self) -> &Arc<Watches> {
        &self.watches
    }

    /// Applies `batch` atomically under the sync policy, then marks the connections that
    /// watch a key it wrote (the caller holds the keys' stripes, see `watch`).
    pub fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        Ok(self.write_watched(batch, &self.write_opts)?)
    }

    /// [`Store::write`] that refuses to stall (`WriteOptions::no_slowdown`): an
    /// `ErrorKind::Incomplete` engine error means nothing was written.
    pub fn write_no_slowdown(&self, batch: WriteBatch) -> Result<(), strata::Error> {
        let opts = WriteOptions {
            no_slowdown: true,
            ..self.write_opts.clone()
        };
        self.write_watched(batch, &opts)
    }

    /// Writes `batch` and marks its keys' watchers — unless the engine refused it whole
    /// (`Incomplete`, `InvalidArgument`: nothing was written, and the commit may be retried;
    /// after any other error the batch may have been applied, so they are marked).
    fn write_watched(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<(), strata::Error> {
        let watchers = self.watches.watchers_of(&batch);
        let r = match &**self.engine.load() {
            Engine::Writer(db) => db.write_opt(batch, opts),
            Engine::Replica(_) => return Err(strata::Error::invalid_argument(READONLY_ENGINE)),
        };
        let refused = r.as_ref().is_err_and(|e| {
            matches!(
                e.kind(),
                strata::ErrorKind::Incomplete | strata::ErrorKind::InvalidArgument
            )
        });
        if !refused {
            crate::watch::mark(watchers);
        }
        r
    }

    /// The stored function libraries' codes (`keyspace::NS_FUNCTIONS`), read at start-up. A
    /// value with an unknown version is an error, not skipped.
    pub fn function_libraries(&self) -> StoreResult<Vec<bytes::Bytes>> {
        let mut it = self.iter(ReadOptions {
            lower_bound: Some(keyspace::FUNCTIONS_START.to_vec()),
            upper_bound: Some(keyspace::FUNCTIONS_END.to_vec()),
            ..Default::default()
        })?;
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            match it.value().split_first() {
                Some((&keyspace::FUNCTION_VALUE_VERSION, code)) => {
                    out.push(bytes::Bytes::copy_from_slice(code))
                }
                _ => {
                    return Err(StoreError::Layout(format!(
                        "function library {:?}: unknown value version",
                        String::from_utf8_lossy(&it.key()[1..])
                    )))
                }
            }
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Visits the live keys of database 0 (key, type, expiry) in engine order, starting at the
    /// engine key `from` (inclusive; `None` for the beginning). At most `max_examined` keys are
    /// read (expired ones included, so the work is bounded). Returns the engine key to resume
    /// at, or `None` when the database is exhausted.
    pub fn scan(
        &self,
        from: Option<&[u8]>,
        max_examined: usize,
        now: u64,
        mut visit: impl FnMut(&[u8], Option<ValueType>, Option<u64>),
    ) -> StoreResult<Option<Vec<u8>>> {
        let mut it = self.iter(ReadOptions {
            lower_bound: Some(DB0_START.to_vec()),
            upper_bound: Some(DB0_END.to_vec()),
            skip_cache_fill: true,
            ..Default::default()
        })?;
        match from {
            Some(f) => it.seek(f),
            None => it.seek_to_first(),
        }
        let mut examined = 0usize;
        while it.valid() {
            let Some(user) = keyspace::user_key(it.key()) else {
                break;
            };
            if examined >= max_examined {
                return Ok(Some(it.key().to_vec()));
            }
            examined += 1;
            let (vtype, expire_at) = value::peek(it.value())?;
            if !is_expired(expire_at, now) {
                visit(user, vtype, expire_at);
            }
            it.next();
        }
        it.status()?;
        Ok(None)
    }
}
