//! Backups: independent copies of both tiers of a database in any `object_store` URL or
//! directory (RocksDB's `BackupEngine`), incremental, verifiable, restorable into a new fast
//! directory and capacity prefix.
//!
//! Layout under the backup URL (format: `docs/format.md` §18):
//! - `shared/<crc32c>-<size>.sst`: a table's bytes, named by their content, uploaded once and
//!   shared by every backup holding them (from either tier of the source);
//! - `private/<token>/<name>`: one backup's manifest, `CURRENT` and WAL files;
//! - `meta/<id>.json`: the backup's document ([`BackupMeta`]), naming every file with its size
//!   and CRC32C; written last, with a conditional create, so it is what makes a backup exist.
//!
//! A backup is made from a checkpoint of the source (`checkpoint`), taken in a hold directory
//! inside the source's directory and released when the backup ends: its record protects the
//! capacity-tier tables while they are read, and lapses by itself after
//! [`BACKUP_PROTECTION`] if the taker is killed. A backup interrupted at any moment leaves no
//! document, so it is never listed; its uploads are found by `purge` and `delete` as files no
//! backup names. A table already in the backup URL is found by its fingerprint in an earlier
//! backup's document (so unchanged capacity-tier tables are not even read) or by its content
//! name (so a table another backup uploaded is not uploaded again).
//!
//! Invariants: a document names only files that were present when it was written (a final
//! listing checks); `verify` and `restore` check every byte against the document, and a
//! restore is written under a temporary name and renamed into place last. One process writes
//! to a backup URL at a time (create, purge, delete); reading (list, verify, restore) may run
//! beside it. Depends on `db` (in-process checkpoints), `checkpoint`, `inspect` (the copy's
//! manifest), `storage`; nothing depends on it but the CLI and the server.

mod create;
pub mod meta;
pub mod purge;
mod restore;
pub mod throttle;

pub use meta::{BackupFile, BackupMeta, Place, BACKUP_FORMAT};
pub use restore::{Damage, RestoreInfo, VerifyReport};

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::stats::TierStats;
use crate::storage::object::{CapacityOptions, CapacityTier};
use crate::Db;

/// How long the checkpoint a backup reads from protects the source's capacity-tier tables if
/// the backup's taker is killed (otherwise it is released when the backup ends).
pub const BACKUP_PROTECTION: Duration = Duration::from_secs(24 * 3600);

/// Reports progress: bytes done, bytes in all.
pub type Progress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// How to create, verify or restore a backup.
#[derive(Clone)]
pub struct BackupOptions {
    /// Files moved at once. Default 4.
    pub concurrency: usize,
    /// Bytes per second moved at most, across all files (`None`: unlimited). Default `None`.
    pub rate_limit: Option<u64>,
    /// A note stored with a new backup (RocksDB's `app_metadata`).
    pub app_metadata: String,
    /// Called after each file with bytes done and bytes in all.
    pub progress: Option<Progress>,
}

impl Default for BackupOptions {
    fn default() -> Self {
        BackupOptions {
            concurrency: 4,
            rate_limit: None,
            app_metadata: String::new(),
            progress: None,
        }
    }
}

impl std::fmt::Debug for BackupOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupOptions")
            .field("concurrency", &self.concurrency)
            .field("rate_limit", &self.rate_limit)
            .field("app_metadata", &self.app_metadata)
            .finish_non_exhaustive()
    }
}

/// What a backup holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BackupInfo {
    /// Its id under the backup URL.
    pub id: u64,
    /// When it was taken, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// It holds every write of its source up to this sequence number and none after.
    pub sequence: u64,
    /// Files it is made of.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files it uploaded (the rest it shares with earlier backups).
    pub new_files: u64,
    /// Bytes it uploaded.
    pub new_bytes: u64,
    /// The note stored with it.
    pub app_metadata: String,
}

impl From<&BackupMeta> for BackupInfo {
    fn from(m: &BackupMeta) -> Self {
        BackupInfo {
            id: m.id,
            created_unix_ms: m.created_unix_ms,
            sequence: m.sequence,
            files: m.files.len(),
            bytes: m.bytes(),
            new_files: m.new_files,
            new_bytes: m.new_bytes,
            app_metadata: m.app_metadata.clone(),
        }
    }
}

/// A backup as listed: its description, or why its document could not be read.
#[derive(Clone, Debug, Serialize)]
pub struct ListedBackup {
    /// Its id.
    pub id: u64,
    /// What it holds, when its document reads.
    #[serde(flatten)]
    pub info: Option<BackupInfo>,
    /// The damage, when its document does not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
}

/// What purging or deleting removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PurgeInfo {
    /// Backups deleted.
    pub deleted_backups: Vec<u64>,
    /// Files deleted (no remaining backup named them).
    pub deleted_files: usize,
    /// Their bytes.
    pub deleted_bytes: u64,
}

/// Backups under one URL.
pub struct BackupEngine {
    tier: Arc<CapacityTier>,
}

impl BackupEngine {
    /// The backups at `target.url` (`s3://…`, `file:///…`, `memory://…`), with `target`'s
    /// request settings (retries, timeouts, emulated link).
    pub fn open(target: &CapacityOptions) -> Result<Self> {
        Ok(BackupEngine {
            tier: CapacityTier::open(target, None, Arc::new(TierStats::default()))?,
        })
    }

    /// The backup URL's request counters (what was uploaded and downloaded, by request).
    pub fn stats(&self) -> &Arc<TierStats> {
        self.tier.stats()
    }

    /// Backs up `db`, open in this process, while it runs.
    pub fn create(&self, db: &Db, o: &BackupOptions) -> Result<BackupInfo> {
        create::from_db(self, db, o)
    }

    /// Backs up the database in `src`, open in another process or not; `capacity` is its
    /// capacity tier, needed when it has one.
    pub fn create_from_dir(
        &self,
        src: &Path,
        capacity: Option<&CapacityOptions>,
        o: &BackupOptions,
    ) -> Result<BackupInfo> {
        create::from_dir(self, src, capacity, o)
    }

    /// Every backup, oldest first; one whose document is damaged is listed as such.
    pub fn list(&self) -> Result<Vec<ListedBackup>> {
        Ok(self
            .documents()?
            .into_iter()
            .map(|(id, m)| match m {
                Ok(m) => ListedBackup {
                    id,
                    info: Some(BackupInfo::from(&m)),
                    damaged: None,
                },
                Err(e) => ListedBackup {
                    id,
                    info: None,
                    damaged: Some(e.to_string()),
                },
            })
            .collect())
    }

    /// Re-reads every file of backup `id` (every backup when `None`) against its document;
    /// one report per backup, damage reported file by file.
    pub fn verify(&self, id: Option<u64>, o: &BackupOptions) -> Result<Vec<VerifyReport>> {
        restore::verify(self, id, o)
    }

    /// Restores backup `id` (the newest when `None`) into the new directory `to` and, when it
    /// has capacity-tier tables, the empty capacity prefix `capacity`; every file is checked
    /// on the way and the directory appears only when all are.
    pub fn restore(
        &self,
        id: Option<u64>,
        to: &Path,
        capacity: Option<&CapacityOptions>,
        o: &BackupOptions,
    ) -> Result<RestoreInfo> {
        restore::restore(self, id, to, capacity, o)
    }

    /// Deletes every backup but the `keep` newest, then every file no remaining backup names.
    pub fn purge(&self, keep: usize) -> Result<PurgeInfo> {
        let ids: Vec<u64> = self.documents()?.into_iter().map(|(id, _)| id).collect();
        self.delete_all(&purge::beyond_newest(&ids, keep))
    }

    /// Deletes backup `id`, then every file no remaining backup names.
    pub fn delete(&self, id: u64) -> Result<PurgeInfo> {
        if self
            .tier
            .get_whole(&self.tier.path(&meta::meta_name(id)), None)?
            .is_none()
        {
            return Err(Error::invalid_argument(format!("no backup {id} here")));
        }
        self.delete_all(&[id])
    }

    /// Deletes the documents of `ids` (the backups are gone once they are), then the files no
    /// remaining document names. A remaining document that does not read stops the second
    /// step: what it names cannot be known, so nothing is deleted.
    fn delete_all(&self, ids: &[u64]) -> Result<PurgeInfo> {
        for id in ids {
            self.tier.delete(&self.tier.path(&meta::meta_name(*id)))?;
            tracing::info!(backup = id, "backup deleted");
        }
        let mut remaining = Vec::new();
        for (id, m) in self.documents()? {
            remaining.push(m.map_err(|e| {
                Error::corruption(format!(
                    "backup {id}'s document does not read ({e}): no file is deleted until it \
                     does or the backup is deleted"
                ))
            })?);
        }
        let mut listed = self.tier.list("shared")?;
        listed.extend(self.tier.list("private")?);
        let sizes: HashMap<String, u64> = listed.iter().cloned().collect();
        let names: Vec<String> = listed.into_iter().map(|(n, _)| n).collect();
        let mut out = PurgeInfo {
            deleted_backups: ids.to_vec(),
            ..Default::default()
        };
        for name in purge::unreferenced(&remaining, &names) {
            self.tier.delete(&self.tier.path(&name))?;
            out.deleted_files += 1;
            out.deleted_bytes += sizes.get(&name).copied().unwrap_or(0);
        }
        Ok(out)
    }

    /// The id the next backup takes at least (the counter under [`meta::NEXT_ID`]; 1 if none).
    fn next_id(&self) -> Result<u64> {
        match self.tier.get_whole(&self.tier.path(meta::NEXT_ID), None)? {
            None => Ok(1),
            Some(b) => std::str::from_utf8(&b)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| Error::corruption(format!("{}: not a backup id", meta::NEXT_ID))),
        }
    }

    /// Every backup document, oldest first, decoded or damaged (`Corruption`); any other
    /// failure to read one fails the call.
    fn documents(&self) -> Result<Vec<(u64, Result<BackupMeta>)>> {
        let mut ids: Vec<u64> = self
            .tier
            .list("meta")?
            .iter()
            .filter_map(|(n, _)| meta::parse_meta_name(n))
            .collect();
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            // Deleted between the listing and the read: not a backup any more.
            match self.document(id) {
                Ok(None) => {}
                Ok(Some(m)) => out.push((id, Ok(m))),
                Err(e) if e.is_corruption() => out.push((id, Err(e))),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Backup `id`'s document, `None` if there is none.
    fn document(&self, id: u64) -> Result<Option<BackupMeta>> {
        let name = meta::meta_name(id);
        match self.tier.get_whole(&self.tier.path(&name), None)? {
            None => Ok(None),
            Some(b) => {
                let m = BackupMeta::decode(&b, &name)?;
                if m.id != id {
                    return Err(Error::corruption(format!("{name} holds backup {}", m.id)));
                }
                Ok(Some(m))
            }
        }
    }

    /// Backup `id`'s document, or the newest backup's when `None`.
    fn chosen(&self, id: Option<u64>) -> Result<BackupMeta> {
        match id {
            Some(id) => self
                .document(id)?
                .ok_or_else(|| Error::invalid_argument(format!("no backup {id} here"))),
            None => match self.documents()?.pop() {
                Some((_, m)) => m,
                None => Err(Error::invalid_argument("there is no backup here")),
            },
        }
    }
}

/// Runs `f` over `items` on up to `threads` threads; the first error stops the rest and is
/// returned. Results keep the items' order.
fn parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() || failed.load(Ordering::Relaxed) {
                    return;
                }
                match f(&items[i]) {
                    Ok(r) => results.lock()[i] = Some(r),
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        first_error.lock().get_or_insert(e);
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner() {
        return Err(e);
    }
    Ok(results.into_inner().into_iter().flatten().collect())
}

/// Counts bytes done against a total and reports them.
struct Done {
    bytes: AtomicU64,
    total: u64,
    progress: Option<Progress>,
}

impl Done {
    fn new(total: u64, progress: Option<Progress>) -> Self {
        Done {
            bytes: AtomicU64::new(0),
            total,
            progress,
        }
    }

    fn add(&self, n: u64) {
        let done = self.bytes.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(p) = &self.progress {
            p(done, self.total);
        }
    }
}
