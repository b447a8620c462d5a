//! Checkpoints and clones: consistent point-in-time copies of a database that open as
//! databases (RocksDB's `Checkpoint`, SlateDB's checkpoints and clones), for a database that
//! spans two tiers.
//!
//! A copy is a new directory: the fast tier's tables hard-linked (copied across file systems),
//! the live WAL files copied up to the checkpoint's moment, a manifest holding one snapshot of
//! the tree, and a `PARENT` file naming the capacity-tier tables it shares with its source.
//! Those are referenced, not copied: a record in the source's [`Registry`] protects them from
//! the source's garbage collection (`tier::gc`) until the record is released or expires, or —
//! for a copy opened as a database — until its own compactions have rewritten them all.
//!
//! Two ways to take one: `Db::checkpoint` inside the process that has the database open, and
//! [`offline::checkpoint_dir`] from another process (`strata checkpoint` beside a running
//! server), which reads the manifest without the lock and relies on the source's minimum GC
//! age to register what it read before the source may delete it.
//!
//! Invariants: a record is registered before the copy is written; the copy is written under a
//! temporary name and renamed into place, so whatever is at the target is a whole copy; the
//! record is marked complete last. A crash before the rename leaves an incomplete record,
//! which protects its tables until it expires and is never listed as a checkpoint; a crash
//! between the rename and the completion leaves a whole copy whose first open completes the
//! record (the rename is the commit point). Depends on
//! `version`, `storage`, `tier` (table names), `inspect` (reading a manifest read-only); never
//! on `db`.

pub(crate) mod copy;
pub mod offline;
mod record;
mod registry;

pub use copy::{write_copy, CopyPlan};
pub use record::{now_unix_ms, CheckpointKind, CheckpointRecord, ParentLink, CHECKPOINT_FORMAT};
pub use registry::{Registry, REGISTRY_DIR};

use std::time::Duration;

/// How long an incomplete record (a copy being written) protects its tables if its writer
/// never finishes it.
pub const INCOMPLETE_EXPIRY: Duration = Duration::from_secs(6 * 3600);

/// How to take a checkpoint.
#[derive(Clone, Debug)]
pub struct CheckpointOptions {
    /// Flush the memtables first when the live WAL files hold at least this many bytes
    /// (RocksDB's `log_size_for_flush`): `0` always flushes, so the copy holds tables only;
    /// `u64::MAX` never does, so the copy holds the WAL tail instead. Default `u64::MAX`.
    pub log_size_for_flush: u64,
    /// The checkpoint's protection of the source's capacity-tier tables lapses after this
    /// long; `None`: until released. Default `None`.
    pub expires_after: Option<Duration>,
    /// Checkpoint or clone (a clone is meant to be opened and written).
    pub kind: CheckpointKind,
}

impl Default for CheckpointOptions {
    fn default() -> Self {
        CheckpointOptions {
            log_size_for_flush: u64::MAX,
            expires_after: None,
            kind: CheckpointKind::Checkpoint,
        }
    }
}

/// What a checkpoint holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CheckpointInfo {
    /// Its id in the source's registry.
    pub id: u64,
    /// Every write up to this sequence number is in the copy, none after it.
    pub sequence: u64,
    /// The copy's directory.
    pub path: String,
    /// Fast-tier tables linked or copied, and their bytes.
    pub fast_tables: usize,
    /// Bytes of the fast-tier tables.
    pub fast_bytes: u64,
    /// Capacity-tier tables referenced (shared with the source, not copied).
    pub capacity_tables: usize,
    /// Bytes of the capacity-tier tables referenced.
    pub capacity_bytes: u64,
    /// WAL bytes copied.
    pub wal_bytes: u64,
    /// When the protection lapses (ms since the Unix epoch), if ever.
    pub expires_unix_ms: Option<u64>,
}

/// Registers the incomplete record of a copy about to be written (taking another id on a
/// collision). It protects `tables` until [`finish`] completes it, or for
/// [`INCOMPLETE_EXPIRY`] if its writer never does; it keeps `o`'s expiry for whoever
/// completes it.
pub(crate) fn register_pending(
    registry: &Registry,
    o: &CheckpointOptions,
    sequence: u64,
    path: &std::path::Path,
    tables: Vec<u64>,
) -> crate::Result<CheckpointRecord> {
    let created = now_unix_ms();
    let mut rec = CheckpointRecord {
        format: CHECKPOINT_FORMAT,
        id: new_id(),
        kind: o.kind,
        complete: false,
        created_unix_ms: created,
        expires_unix_ms: Some(created + INCOMPLETE_EXPIRY.as_millis() as u64),
        sequence,
        path: path.display().to_string(),
        tables,
        expires_after_ms: o.expires_after.map(|d| d.as_millis() as u64),
    };
    loop {
        match registry.register(&rec) {
            Err(e) if e.kind() == crate::ErrorKind::AlreadyExists => rec.id = new_id(),
            r => return r.map(|()| rec),
        }
    }
}

/// Marks `rec` complete, with the expiry its taker asked for counted from its creation, and
/// says what the copy `stats` describes holds. The record must still be there: if the copy
/// took longer than [`INCOMPLETE_EXPIRY`] (or someone released it meanwhile), the tables it
/// named may be gone, and the copy at `to` is deleted instead.
pub(crate) fn finish(
    registry: &Registry,
    rec: CheckpointRecord,
    stats: copy::CopyStats,
    to: &std::path::Path,
    storage: &std::sync::Arc<dyn crate::storage::Storage>,
) -> crate::Result<CheckpointInfo> {
    let rec = rec.completed();
    let marked = match registry.get(rec.id) {
        // Its copy's first open may have completed it already (the copy is in place).
        Ok(Some(_)) => registry.update(&rec),
        Ok(None) => Err(crate::Error::invalid(format!(
            "checkpoint {}'s record was released or expired while the copy was written: its \
             tables may be gone, the copy is deleted",
            rec.id
        ))),
        Err(e) => Err(e),
    };
    if let Err(e) = marked {
        copy::discard_copy(storage.as_ref(), to);
        let _ = registry.remove(rec.id);
        return Err(e);
    }
    tracing::info!(checkpoint = rec.id, sequence = rec.sequence, path = %rec.path, "checkpoint taken");
    Ok(CheckpointInfo {
        id: rec.id,
        sequence: rec.sequence,
        path: rec.path,
        fast_tables: stats.fast_tables,
        fast_bytes: stats.fast_bytes,
        capacity_tables: stats.capacity_tables,
        capacity_bytes: stats.capacity_bytes,
        wal_bytes: stats.wal_bytes,
        expires_unix_ms: rec.expires_unix_ms,
    })
}

/// A new checkpoint id: the time in nanoseconds, unique within a registry (registration fails
/// on a collision and the caller takes the next one).
pub(crate) fn new_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}
