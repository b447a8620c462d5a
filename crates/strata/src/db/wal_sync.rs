//! WAL syncs that are not part of a write: `Db::sync_wal` and the periodic sync of
//! `wal_sync_interval` (`strata serve`'s `everysec`).
//!
//! When only the current log owes an fsync, it runs after the log's lock is released, through a
//! second open of the file ([`crate::wal::LogSet::detached_sync`]), so writers go on appending
//! meanwhile (RocksDB's `SyncWAL` does not stop writers either); otherwise (sealed logs or the
//! directory owe one too — once per memtable switch — or the log cannot sync that way, as in an
//! object store) it runs under the lock. Invariant: `Ok` means every write acknowledged before
//! the call is durable, and no background error stands. Depends on `db` internals and `wal`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::write::set_bg_error;
use super::DbInner;
use crate::error::Result;

/// Syncs the WAL; counts the sync, or on failure turns the database read-only (a failed fsync
/// may have dropped acknowledged writes). A background error fails it even when this fsync
/// succeeds — a later success says nothing about what a failed one lost — but the fsync is
/// still made, for the writes acknowledged before the error.
pub(crate) fn sync_wal(inner: &DbInner) -> Result<()> {
    let r = sync_once(inner).and_then(|()| inner.state.lock().bg_error.clone().map_or(Ok(()), Err));
    match &r {
        Ok(()) => inner.stats.wal_syncs.fetch_add(1, Ordering::Relaxed),
        Err(e) => set_bg_error(inner, e.clone()),
    }
    r
}

fn sync_once(inner: &DbInner) -> Result<()> {
    let handle = {
        let mut wal = inner.wal.lock();
        match wal.detached_sync() {
            Some(h) => h,
            None => return wal.sync(),
        }
    };
    handle.sync_data()
}

/// The thread that syncs the WAL every `every` until shutdown.
pub(crate) fn spawn_periodic(inner: Arc<DbInner>, every: Duration) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("strata-wal-sync".into())
        .spawn(move || {
            while !inner.shutting_down.load(Ordering::Acquire) {
                {
                    let mut st = inner.state.lock();
                    inner.bg_cv.wait_for(&mut st, every);
                }
                // A failure is recorded as the background error; writes stop.
                let _ = sync_wal(&inner);
            }
        })
        .expect("spawn wal sync thread")
}
