//! Recovery. Normal recovery (`normal`) replays the WAL into memtables at every open. Node-loss
//! recovery (RocksMash §3.4), the rest of this module, rebuilds a lost fast tier from the log
//! location — the mirrored manifest and the extended WAL — while the capacity tier is read in
//! place.
//!
//! [`rebuild`] reads the mirrored manifest (the tree's last consistent state: key lists of
//! tables it does not name are checked but not decoded) and every WAL file (in parallel),
//! then either
//! - **parallel** (the default): rebuilds each lost fast-tier table directly from its key
//!   list, one worker per table on a pool, references resolved through one index of the WAL's
//!   operations by sequence number; or
//! - **replay** (the baseline, Fig. 9): replays the same records in chronological order
//!   through memtables into L0 tables, which compactions then push down after the open.
//!
//! Key lists name each entry by its sequence number, which identifies one WAL operation, so a
//! worker finds exactly the version its table held: the paper's scan-order rules (older L0
//! workers must not overtake younger ones; L1..Li workers take "any version") exist because
//! its key lists hold keys only, and are not needed here. Each rebuilt table is checked
//! against the key list's content CRC, so it is the lost table, not an approximation.
//!
//! Then the caller opens the database normally, which replays only the WAL tail the manifest's
//! log number marks unflushed. Depends on `version`, `wal`, `sst`, `memtable`, `tier`, `db`
//! (table options, L0 writing and key-list logging); never on the server, CLI or benchmark.

pub(crate) mod normal;
pub(crate) mod parallel;
mod replay;
pub(crate) mod wal_scan;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorRepr, Result};
use crate::options::Options;
use crate::storage::Storage;
use crate::tier::Tier;
use crate::version::{current_path, VersionSet};

/// How lost fast-tier tables are rebuilt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// One worker per table from its key list (RocksMash §3.4).
    #[default]
    Parallel,
    /// Chronological replay through memtables into L0 (the baseline).
    Replay,
}

impl std::str::FromStr for RecoveryMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "parallel" => Ok(RecoveryMode::Parallel),
            "replay" => Ok(RecoveryMode::Replay),
            _ => Err(format!(
                "unknown recovery mode {s:?} (expected parallel or replay)"
            )),
        }
    }
}

/// What a rebuild did, phase by phase (RocksMash Fig. 23's "Read", "Find" and "B&W SSTs").
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RecoveryReport {
    /// How tables were rebuilt: `"parallel"` or `"replay"`.
    pub mode: String,
    /// Fast-tier tables the manifest names (lost with the fast tier).
    pub lost_tables: usize,
    /// Tables written: the rebuilt ones (parallel) or the replay's L0 tables.
    pub tables_written: usize,
    /// Point entries in the tables written.
    pub entries: u64,
    /// Bytes of the tables written.
    pub bytes_written: u64,
    /// WAL files read from the log location.
    pub wal_files: usize,
    /// Bytes of the WAL files read.
    pub wal_bytes: u64,
    /// Threads reading the WAL (and, parallel, rebuilding tables): the available parallelism,
    /// at least 2.
    pub threads: usize,
    /// Reading the mirrored manifest and listing the log location, before the WAL is read.
    pub prepare_secs: f64,
    /// Seconds reading every WAL file and indexing its operations ("Read"; parallel's "Find").
    pub read_secs: f64,
    /// Replay: seconds finding the records the lost tables held ("Find"; 0 for parallel).
    pub index_secs: f64,
    /// Seconds writing the tables and installing them in the manifest ("B&W SSTs").
    pub build_secs: f64,
    /// Opening the rebuilt database (replaying the WAL tail; the replay baseline also waits
    /// for its compactions) and closing it (`strata recover`; 0 for a rebuild by open).
    pub open_secs: f64,
    /// Seconds from the start of the rebuild to its end, `open_secs` included.
    pub total_secs: f64,
}

/// Recreates, empty, a live log that never reached an object-store log location. There a log
/// reaches the store at its first sync, so the live log the mirrored manifest names can be
/// absent: a flush installed it (`log_number`) before any write into it was synced, and the
/// node was lost. It held no synced write, so it is
/// recreated empty in the staging directory; otherwise the open after the rebuild would refuse
/// the database for a missing live log (the check that catches a changed `wal_location`). A
/// directory log location is left alone: a live log missing there is real damage.
fn materialize_unsynced_live_log(
    versions: &VersionSet,
    log_dir: &Path,
    log_storage: &Arc<dyn Storage>,
    opts: &Options,
) -> Result<()> {
    let object_store = opts
        .wal_location
        .as_deref()
        .is_some_and(crate::storage::object::is_object_store_location);
    let live = versions.log_number;
    if !object_store || live == 0 {
        return Ok(());
    }
    let path = log_dir.join(format!("{live:06}.log"));
    if log_storage.exists(&path)? {
        return Ok(());
    }
    tracing::warn!(
        log = live,
        "the live log never reached the object store (nothing in it was synced): recreated empty"
    );
    log_storage.create_dir_all(log_dir)?;
    let mut f = log_storage.create(&path)?;
    f.sync()
}

/// Rebuilds the lost fast tier of the database whose log location is `log_dir` (on
/// `log_storage`: an object-store log location's storage, or `storage`) into `dir` (on
/// `storage`; empty or absent) as `mode` says, so that opening `dir` with the same options finds
/// every acknowledged write; see the module docs. Fails if
/// `dir` already holds a database, `log_dir` holds no mirrored manifest, a lost table has no
/// extended-WAL key list, or a table cannot be rebuilt exactly.
pub fn rebuild(
    dir: &Path,
    storage: &Arc<dyn Storage>,
    log_dir: &Path,
    log_storage: &Arc<dyn Storage>,
    opts: &Options,
    mode: RecoveryMode,
) -> Result<RecoveryReport> {
    let start = Instant::now();
    storage.create_dir_all(dir)?;
    if storage.exists(&current_path(dir))? {
        return Err(ErrorRepr::AlreadyExists(format!(
            "{} already holds a database: recovery rebuilds into an empty directory",
            dir.display()
        ))
        .into());
    }
    if !log_storage.exists(&current_path(log_dir))? {
        return Err(ErrorRepr::NotADatabase(format!(
            "{} holds no mirrored manifest (CURRENT)",
            log_dir.display()
        ))
        .into());
    }
    let mut versions = VersionSet::recover(
        log_dir,
        log_storage.clone(),
        opts.num_levels,
        opts.max_manifest_file_size,
    )?;
    versions.refuse_families("node-loss recovery")?;
    materialize_unsynced_live_log(&versions, log_dir, log_storage, opts)?;
    let v = versions.current();
    let lost: Vec<(usize, u64, crate::version::FileMeta)> = v
        .levels
        .iter()
        .enumerate()
        .flat_map(|(l, lv)| {
            lv.runs
                .iter()
                .flat_map(move |r| r.files.iter().map(move |f| (l, r.id, f.meta.clone())))
        })
        .filter(|(_, _, f)| f.tier == Tier::Fast)
        .collect();
    if let Some((_, _, f)) = lost
        .iter()
        .find(|(_, _, f)| !versions.wal_pins().contains_key(&f.id))
    {
        return Err(Error::corruption(format!(
            "fast-tier table {} has no extended-WAL key list: was the database run with \
             extended_wal?",
            f.id
        )));
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .max(2);
    let prepare_secs = start.elapsed().as_secs_f64();
    let t = Instant::now();
    let lost_ids: std::collections::HashSet<u64> = lost.iter().map(|(_, _, f)| f.id).collect();
    let scan = wal_scan::scan(
        log_dir,
        log_storage.as_ref(),
        threads,
        versions.wal_bound(),
        &|t| lost_ids.contains(&t),
    )?;
    let read_secs = t.elapsed().as_secs_f64();
    // Every number in the log location is used, including logs below the bound and manifests
    // a crash left unnamed.
    for name in log_storage.list(log_dir)? {
        let digits = name
            .strip_suffix(".log")
            .or_else(|| name.strip_prefix("MANIFEST-"));
        if let Some(n) = digits.and_then(|d| d.parse::<u64>().ok()) {
            versions.mark_file_number_used(n);
        }
    }
    let mut report = RecoveryReport {
        mode: format!("{mode:?}").to_lowercase(),
        lost_tables: lost.len(),
        wal_files: scan.numbers.len(),
        wal_bytes: scan.bytes,
        threads,
        prepare_secs,
        read_secs,
        ..Default::default()
    };
    versions.relocate(dir, storage.clone());
    versions.set_log_location(Some((log_storage.clone(), log_dir.to_path_buf())), true)?;
    match mode {
        RecoveryMode::Parallel => {
            parallel::run(dir, storage, opts, &mut versions, &lost, &scan, &mut report)?
        }
        RecoveryMode::Replay => replay::run(
            dir,
            log_dir,
            log_storage,
            storage,
            opts,
            &mut versions,
            &lost,
            &scan,
            &mut report,
        )?,
    }
    report.total_secs = start.elapsed().as_secs_f64();
    tracing::info!(?report, "rebuilt the fast tier from the log location");
    Ok(report)
}

/// `strata recover`: rebuilds `dir` from `opts.wal_location` and the capacity tier, then opens
/// the database (replaying the unflushed WAL tail) and closes it cleanly.
pub fn recover(dir: &Path, opts: Options, mode: RecoveryMode) -> Result<RecoveryReport> {
    if opts.wal_location.is_none() {
        return Err(Error::invalid(
            "recovery needs the log location (wal_location)",
        ));
    }
    let storage = opts
        .storage
        .clone()
        .unwrap_or_else(crate::storage::default_storage);
    let mut report = {
        let (log_storage, log_dir) =
            crate::storage::object::log_location(dir, &storage, &opts, Default::default())?;
        // Hold the log location while rebuilding, as an open would.
        log_storage.create_dir_all(&log_dir)?;
        let _lock = log_storage.lock(&log_dir.join("LOCK"))?;
        rebuild(dir, &storage, &log_dir, &log_storage, &opts, mode)?
    };
    let t = Instant::now();
    let db = crate::Db::open(dir, opts)?;
    if mode == RecoveryMode::Replay {
        // The baseline is done when its L0 tables are compacted into shape.
        db.wait_for_compactions()?;
    }
    db.close()?;
    report.open_secs = t.elapsed().as_secs_f64();
    report.total_secs += report.open_secs;
    Ok(report)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::object::{log_location, CapacityOptions, CapacityTier, ObjectLogStorage};
    use crate::storage::LocalFs;

    /// The live log a flush named before anything in it was synced never reached the object
    /// store: recovery recreates it empty (an object-store location only).
    #[test]
    fn an_unsynced_live_log_on_an_object_store_is_recreated_empty() {
        let base = tempfile::tempdir().unwrap();
        let stage = base.path().join("db").join("wal-stage");
        let url = format!("file://{}", base.path().join("log").display());
        let tier = CapacityTier::open(&CapacityOptions::new(url.clone()), None, Default::default())
            .unwrap();
        let local: Arc<dyn Storage> = Arc::new(LocalFs);
        let logs: Arc<dyn Storage> = Arc::new(ObjectLogStorage::new(tier, local.clone()));
        logs.create_dir_all(&stage).unwrap();
        let mut versions = VersionSet::create(
            &stage,
            logs.clone(),
            7,
            64 << 20,
            crate::CompactionStyle::Leveled,
        )
        .unwrap();
        versions.log_number = 42;
        let live = stage.join("000042.log");
        let opts = Options {
            wal_location: Some(url.into()),
            ..Options::default()
        };
        assert!(!logs.exists(&live).unwrap());
        materialize_unsynced_live_log(&versions, &stage, &logs, &opts).unwrap();
        assert!(logs.exists(&live).unwrap());
        assert_eq!(logs.open(&live).unwrap().size(), 0);

        // A directory location: a missing live log is damage, left for the open to report.
        let dir_log = base.path().join("dirlog");
        let opts = Options {
            wal_location: Some(dir_log.clone()),
            ..Options::default()
        };
        let (dstore, ddir) =
            log_location(&base.path().join("db2"), &local, &opts, Default::default()).unwrap();
        dstore.create_dir_all(&ddir).unwrap();
        materialize_unsynced_live_log(&versions, &ddir, &dstore, &opts).unwrap();
        assert!(!dstore.exists(&ddir.join("000042.log")).unwrap());
    }
}
