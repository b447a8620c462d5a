//! The live write-ahead logs: the one writes append to, and the sealed ones whose memtables are
//! not flushed yet and that have not been fsynced since they were sealed.
//!
//! Sealing a log at a memtable switch does not fsync it, and creating the next log does not
//! fsync the directory: both would put a disk flush of up to a whole memtable's worth of log on
//! the write path at every switch (RocksDB defers them the same way). Instead the debt is kept
//! here and paid by the next [`LogSet::sync`] — a sync write, `Db::sync_wal`, the periodic WAL
//! sync or shutdown — before it syncs the current log, so that a synced write is never durable
//! while an older acknowledged write is not. A sealed log whose memtable is flushed leaves the
//! set unsynced ([`LogSet::retire`]): its contents are in a synced table by then.
//!
//! Invariant: after `sync` returns `Ok`, every record appended to any live log is durable and
//! so is every live log's directory entry. Depends on `storage`, `wal::writer`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::LogWriter;
use crate::error::Result;
use crate::storage::{FileSync, Storage};

/// The live logs: the current one and the sealed ones not fsynced since; see the module docs.
pub struct LogSet {
    current: LogWriter,
    /// Sealed logs written since their last fsync, oldest first.
    sealed: Vec<LogWriter>,
    /// Whether the directory entries of every live log are durable.
    dir_synced: bool,
    storage: Arc<dyn Storage>,
    dir: PathBuf,
}

impl LogSet {
    /// `current` is a freshly created log whose directory entry is already durable.
    pub fn new(current: LogWriter, storage: Arc<dyn Storage>, dir: &Path) -> Self {
        LogSet {
            current,
            sealed: Vec::new(),
            dir_synced: true,
            storage,
            dir: dir.to_path_buf(),
        }
    }

    /// The log writes append to.
    pub fn current(&mut self) -> &mut LogWriter {
        &mut self.current
    }

    /// Seals the current log and makes `next` (a freshly created file) the current one. Neither
    /// is fsynced here.
    pub fn rotate(&mut self, next: LogWriter) {
        let old = std::mem::replace(&mut self.current, next);
        self.sealed.push(old);
        self.dir_synced = false;
    }

    /// Forgets the sealed log `number` (its memtable is flushed, the file is about to go).
    pub fn retire(&mut self, number: u64) {
        self.sealed.retain(|l| l.number() != number);
    }

    /// Sealed logs still owing an fsync (for tests and statistics).
    pub fn unsynced_sealed(&self) -> usize {
        self.sealed.len()
    }

    /// For a sync that runs outside the lock guarding this set: when the current log is the
    /// only debt (no sealed log owes an fsync, the directory is synced) and can be synced from
    /// another thread, its handle; the caller releases the lock, then calls `sync_data`, after
    /// which every record appended before this call is durable (the invariant of
    /// [`LogSet::sync`] for those records). `None`: call `sync` under the lock.
    pub fn detached_sync(&self) -> Option<Arc<dyn FileSync>> {
        if !self.sealed.is_empty() || !self.dir_synced {
            return None;
        }
        self.current.sync_handle()
    }

    /// Makes every record of the sealed logs durable (and the directory entries of new logs),
    /// leaving the current log's debt: a flush of one column family does this before its
    /// record lets the family's log number pass logs other families' halves of batches are in.
    pub fn sync_sealed(&mut self) -> Result<()> {
        while let Some(first) = self.sealed.first_mut() {
            first.sync()?;
            self.sealed.remove(0);
        }
        if !self.dir_synced {
            self.storage.sync_dir(&self.dir)?;
            self.dir_synced = true;
        }
        Ok(())
    }

    /// Makes every record appended to a live log durable: sealed logs first, then the directory
    /// (new logs' entries), then the current log. A sealed log leaves the debt list only once
    /// its fsync succeeded.
    pub fn sync(&mut self) -> Result<()> {
        self.sync_sealed()?;
        self.current.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{FaultFs, FaultPlan, LocalFs};

    /// A set over log 1 (on a fault-injecting local directory) holding one record.
    fn set_with_one_record() -> (tempfile::TempDir, FaultFs, LogSet) {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultFs::new(Arc::new(LocalFs));
        let mut set = LogSet::new(new_log(&fs, &dir, 1), Arc::new(fs.clone()), dir.path());
        set.current().add_record(b"one").unwrap();
        (dir, fs, set)
    }

    fn new_log(fs: &FaultFs, dir: &tempfile::TempDir, n: u64) -> LogWriter {
        let path = dir.path().join(format!("{n:06}.log"));
        LogWriter::new(fs.create(&path).unwrap(), n)
    }

    #[test]
    fn sync_pays_the_sealed_logs_and_directory_debt_first() {
        let (dir, fs, mut set) = set_with_one_record();
        let log = |n: u64| new_log(&fs, &dir, n);
        set.rotate(log(2));
        set.current().add_record(b"two").unwrap();
        set.rotate(log(3));
        assert_eq!(set.unsynced_sealed(), 2);
        // A failing fsync keeps the debt: the next sync tries again.
        fs.set_plan(FaultPlan {
            fail_syncs: true,
            ..Default::default()
        });
        assert!(set.sync().is_err());
        assert_eq!(set.unsynced_sealed(), 2);
        fs.heal();
        set.retire(1);
        assert_eq!(set.unsynced_sealed(), 1);
        set.sync().unwrap();
        assert_eq!(set.unsynced_sealed(), 0);
        assert!(set.dir_synced);
    }

    #[test]
    fn detached_sync_only_when_the_current_log_is_the_only_debt() {
        let (dir, fs, mut set) = set_with_one_record();
        let log = |n: u64| new_log(&fs, &dir, n);
        let h = set
            .detached_sync()
            .expect("a local log syncs through a handle");
        h.sync_data().unwrap();
        // A sealed log and a new directory entry owe fsyncs that only `sync` pays.
        set.rotate(log(2));
        assert!(set.detached_sync().is_none());
        set.sync().unwrap();
        let h = set.detached_sync().expect("debt paid");
        // The handle fails as the file's own sync would.
        fs.set_plan(FaultPlan {
            fail_syncs: true,
            ..Default::default()
        });
        assert!(h.sync_data().is_err());
        fs.heal();
        h.sync_data().unwrap();
    }
}
