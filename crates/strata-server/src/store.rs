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
//! Depends on `keyspace`, `value`, `expiry`, `locks`, `config` and the engine.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use strata::{Db, ReadOptions, WriteBatch, WriteOptions};

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

/// The database, its locks and its write policy.
pub struct Store {
    db: Db,
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
        let db = Db::open(&config.dir, opts)?;
        Self::check_layout(&db, &config.dir)?;
        filter_db.attach(db.clone());
        Ok(Store {
            db,
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

    pub fn db(&self) -> &Db {
        &self.db
    }

    pub fn locks(&self) -> &Arc<KeyLocks> {
        &self.locks
    }

    pub fn sync_policy(&self) -> SyncPolicy {
        self.sync
    }

    /// The live entry of `key` at time `now` (ms), or `None` if absent or expired.
    pub fn get(&self, key: &[u8], now: u64) -> StoreResult<Option<Entry>> {
        let raw = self.db.get(keyspace::data_key(key))?;
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
        let r = self.db.write_opt(batch, opts);
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
        let mut it = self.db.iter(ReadOptions {
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
        let mut it = self.db.iter(ReadOptions {
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
