//! `SAVE`, `BGSAVE` and `LASTSAVE` (and `INFO persistence`'s `rdb_*` fields): Redis's snapshot
//! commands, answered with Strata checkpoints (`strata::checkpoint`) or backups
//! (`strata::backup`).
//!
//! - By default each save is a checkpoint: a directory `checkpoint-<unix ms>` in the backup
//!   directory (`backup-dir`, by default `<dir>-checkpoints` beside the data directory) that
//!   opens as a database; its capacity-tier tables are shared with the served database, which
//!   keeps them until the checkpoint is released. The newest `backup-keep` saves are kept;
//!   older ones made here are released and deleted after each save.
//! - With `backup-url` set, each save is a backup to that URL instead: an independent,
//!   incremental copy of both tiers; after each, the URL is purged to the newest `backup-keep`.
//!
//! Owns [`Saves`], the save state. Depends on the engine only; must not depend on the network
//! layer or the command table.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use strata::backup::{BackupEngine, BackupOptions};
use strata::storage::object::CapacityOptions;
use strata::Db;

/// Where saves go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SaveTarget {
    /// Checkpoint directories in this directory.
    Checkpoints(PathBuf),
    /// Backups to this URL.
    Backups(String),
}

/// What one save wrote.
#[derive(Clone, Debug)]
pub struct Saved {
    /// The database's writes up to this sequence number are in it.
    pub sequence: u64,
    /// Where it is: a checkpoint's directory, or `<url>#<backup id>`.
    pub path: String,
}

/// The name prefix of the directories saves write.
pub const SAVE_PREFIX: &str = "checkpoint-";

/// The state of `SAVE`/`BGSAVE`.
pub struct Saves {
    running: AtomicBool,
    /// `BGSAVE SCHEDULE` arrived while a save ran: the background thread saves again after.
    scheduled: AtomicBool,
    /// Unix seconds of the last successful save (the start time before any).
    last_save_unix: AtomicU64,
    last_ok: AtomicBool,
    /// Seconds the last save took; -1 before any (Redis's `rdb_last_bgsave_time_sec`).
    last_secs: AtomicU64,
    saves: AtomicU64,
    failures: AtomicU64,
    /// The engine's sequence number at the last save (changes since = now − this).
    last_sequence: AtomicU64,
    last_path: Mutex<String>,
}

fn now_unix() -> u64 {
    strata::checkpoint::now_unix_ms() / 1000
}

impl Saves {
    /// Fresh state at server start: LASTSAVE reads the start time, as Redis's does.
    pub fn new(sequence: u64) -> Self {
        Saves {
            running: AtomicBool::new(false),
            scheduled: AtomicBool::new(false),
            last_save_unix: AtomicU64::new(now_unix()),
            last_ok: AtomicBool::new(true),
            last_secs: AtomicU64::new(u64::MAX),
            saves: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            last_sequence: AtomicU64::new(sequence),
            last_path: Mutex::new(String::new()),
        }
    }

    /// `SAVE`: a save to `target` now, unless another save runs; then prunes to the newest
    /// `keep`.
    pub fn save_now(&self, db: &Db, target: &SaveTarget, keep: usize) -> Result<Saved, String> {
        if self.running.swap(true, Ordering::AcqRel) {
            return Err("Background save already in progress".into());
        }
        let r = self.save(db, target, keep);
        self.running.store(false, Ordering::Release);
        r
    }

    /// Saves to `target` now, then prunes to the newest `keep`. The caller holds `running`.
    fn save(&self, db: &Db, target: &SaveTarget, keep: usize) -> Result<Saved, String> {
        let start = Instant::now();
        let r = match target {
            SaveTarget::Checkpoints(dir) => std::fs::create_dir_all(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))
                .and_then(|()| {
                    let to = dir.join(format!(
                        "{SAVE_PREFIX}{}",
                        strata::checkpoint::now_unix_ms()
                    ));
                    db.checkpoint(&to).map_err(|e| e.to_string())
                })
                .map(|info| Saved {
                    sequence: info.sequence,
                    path: info.path,
                }),
            SaveTarget::Backups(url) => backup(db, url).map_err(|e| e.to_string()),
        };
        self.last_secs
            .store(start.elapsed().as_secs(), Ordering::Relaxed);
        match &r {
            Ok(info) => {
                self.last_ok.store(true, Ordering::Relaxed);
                self.saves.fetch_add(1, Ordering::Relaxed);
                self.last_save_unix.store(now_unix(), Ordering::Relaxed);
                self.last_sequence.store(info.sequence, Ordering::Relaxed);
                *self.last_path.lock() = info.path.clone();
                tracing::info!(path = %info.path, sequence = info.sequence, "DB saved");
                let pruned = match target {
                    SaveTarget::Checkpoints(dir) => prune(db, dir, keep),
                    SaveTarget::Backups(url) => BackupEngine::open(&CapacityOptions::new(url))
                        .and_then(|e| e.purge(keep))
                        .map(|_| ()),
                };
                if let Err(e) = pruned {
                    tracing::warn!(error = %e, "could not delete older saves");
                }
            }
            Err(e) => {
                self.last_ok.store(false, Ordering::Relaxed);
                self.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %e, "save failed");
            }
        }
        r
    }

    /// Starts a save on a thread of its own; `false` if one is already running (with
    /// `schedule`, another save then follows it).
    pub fn bgsave(
        self: &Arc<Self>,
        db: Db,
        target: SaveTarget,
        keep: usize,
        schedule: bool,
    ) -> bool {
        if self.running.swap(true, Ordering::AcqRel) {
            if schedule {
                self.scheduled.store(true, Ordering::Release);
            }
            return false;
        }
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("strata-bgsave".into())
            .spawn(move || loop {
                let _ = me.save(&db, &target, keep);
                // A `SCHEDULE` that arrived during the save: save again.
                if me.scheduled.swap(false, Ordering::AcqRel) {
                    continue;
                }
                me.running.store(false, Ordering::Release);
                // One that arrived just before `running` fell: take it, unless another save
                // started meanwhile.
                if !me.scheduled.load(Ordering::Acquire) || me.running.swap(true, Ordering::AcqRel)
                {
                    return;
                }
            });
        if spawned.is_err() {
            self.running.store(false, Ordering::Release);
            return false;
        }
        true
    }

    /// Whether a background save runs.
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Unix seconds of the last successful save.
    pub fn last_save_unix(&self) -> u64 {
        self.last_save_unix.load(Ordering::Relaxed)
    }

    /// `INFO persistence` fields, Redis's names first.
    pub fn info_fields(&self, sequence_now: u64) -> Vec<(&'static str, String)> {
        let secs = self.last_secs.load(Ordering::Relaxed);
        vec![
            (
                "rdb_changes_since_last_save",
                sequence_now
                    .saturating_sub(self.last_sequence.load(Ordering::Relaxed))
                    .to_string(),
            ),
            ("rdb_bgsave_in_progress", (self.running() as u8).to_string()),
            ("rdb_last_save_time", self.last_save_unix().to_string()),
            (
                "rdb_last_bgsave_status",
                if self.last_ok.load(Ordering::Relaxed) {
                    "ok"
                } else {
                    "err"
                }
                .to_string(),
            ),
            (
                "rdb_last_bgsave_time_sec",
                if secs == u64::MAX {
                    "-1".to_string()
                } else {
                    secs.to_string()
                },
            ),
            ("rdb_saves", self.saves.load(Ordering::Relaxed).to_string()),
            (
                "rdb_save_failures",
                self.failures.load(Ordering::Relaxed).to_string(),
            ),
            ("rdb_last_save_path", self.last_path.lock().clone()),
        ]
    }
}

/// A backup of `db` to `url`.
fn backup(db: &Db, url: &str) -> strata::Result<Saved> {
    let e = BackupEngine::open(&CapacityOptions::new(url))?;
    let o = BackupOptions {
        app_metadata: "strata serve BGSAVE".into(),
        ..Default::default()
    };
    let info = e.create(db, &o)?;
    Ok(Saved {
        sequence: info.sequence,
        path: format!("{url}#{}", info.id),
    })
}

/// Releases and deletes the saves in `dir` older than the newest `keep`.
fn prune(db: &Db, dir: &Path, keep: usize) -> strata::Result<()> {
    let mut saves: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| strata::Error::external(dir.display(), e.to_string()))?
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e
                .file_name()
                .to_str()?
                .strip_prefix(SAVE_PREFIX)?
                .parse()
                .ok()?;
            Some((n, e.path()))
        })
        .collect();
    saves.sort();
    let old = saves.len().saturating_sub(keep.max(1));
    let records = db.checkpoints()?;
    for (_, path) in &saves[..old] {
        let p = path.display().to_string();
        for r in records.iter().filter(|r| r.path == p) {
            db.release_checkpoint(r.id)?;
        }
        std::fs::remove_dir_all(path).map_err(|e| strata::Error::external(&p, e.to_string()))?;
        tracing::info!(path = %p, "deleted an older save");
    }
    Ok(())
}
