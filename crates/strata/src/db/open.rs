//! Opening a database: directory checks and lock, manifest recovery, WAL replay (into kept
//! immutable memtables and L0 tables, `recovery::normal`), orphan cleanup, and starting
//! background threads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::background::start_threads;
use super::family::{Family, FamilyState};
use super::snapshot::SnapshotList;
use super::write::wal_path;
use super::{DbInner, DbState};
use crate::recovery::normal::LogFile;
use std::collections::HashSet;

use crate::cache::persistent::{
    LapCache, MetaCache, NaiveCache, PersistentCache, PersistentCacheKind,
};
use crate::cache::{BlockCache, TableCache};
use crate::compaction::RateLimiter;
use crate::error::{Error, ErrorRepr, Result};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::stats::EngineStats;
use crate::storage::object::CapacityTier;
use crate::storage::{default_storage, Storage};
use crate::tier::{TableStore, TablesConfig, Tier};
use crate::version::{current_path, FileMeta, VersionEdit, VersionSet};
use crate::wal::{LogSet, LogWriter};

fn parse_number(name: &str, suffix: &str) -> Option<u64> {
    let stem = name.strip_suffix(suffix)?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

pub(crate) fn open(dir: &Path, mut opts: Options) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let storage = opts.storage.clone().unwrap_or_else(default_storage);
    if !storage.exists(dir)? {
        if !opts.create_if_missing {
            return Err(Error::invalid(format!(
                "{} does not exist and create_if_missing is false",
                dir.display()
            )));
        }
        storage.create_dir_all(dir)?;
    }
    let lock = storage.lock(&dir.join("LOCK"))?;
    let log_tier = Arc::new(crate::stats::TierStats::default());
    let (log_storage, log_dir, log_fence) =
        crate::storage::object::fenced_log_location(dir, &storage, &opts, log_tier.clone())?;
    let separate_log = log_dir != dir;
    if opts.extended_wal && !separate_log {
        return Err(Error::invalid(
            "extended_wal needs a wal_location apart from the database directory",
        ));
    }
    let log_lock = if separate_log {
        log_storage.create_dir_all(&log_dir)?;
        Some(log_storage.lock(&log_dir.join("LOCK"))?)
    } else {
        None
    };
    if separate_log
        && !storage.exists(&current_path(dir))?
        && log_storage.exists(&current_path(&log_dir))?
    {
        // The fast directory is gone but the log location holds a database: a node loss.
        tracing::warn!(
            dir = %dir.display(),
            log = %log_dir.display(),
            "the database directory holds no database but its log location does: rebuilding \
             the fast tier from the extended WAL"
        );
        crate::recovery::rebuild(
            dir,
            &storage,
            &log_dir,
            &log_storage,
            &opts,
            crate::recovery::RecoveryMode::Parallel,
        )?;
    }
    let names = storage.list(dir)?;
    let log_names = if separate_log {
        log_storage.list(&log_dir)?
    } else {
        Vec::new()
    };
    let mut versions = if storage.exists(&current_path(dir))? {
        if opts.error_if_exists {
            return Err(ErrorRepr::AlreadyExists(dir.display().to_string()).into());
        }
        let vs = VersionSet::recover(
            dir,
            storage.clone(),
            opts.num_levels,
            opts.max_manifest_file_size,
        )?;
        if opts.extended_wal {
            vs.refuse_families("the extended WAL (Options::extended_wal)")?;
        }
        vs
    } else {
        // A crash during the very first open can leave a manifest (and CURRENT.tmp) without
        // CURRENT: with no table or log beside them they hold nothing, so start afresh.
        let leftover = |n: &str| n.starts_with("MANIFEST-") || n == "CURRENT.tmp";
        // `wal-stage`: an object-store log location's staging directory, created above.
        let ours = |n: &str| {
            n == "LOCK"
                || n == super::identity::IDENTITY_FILE
                || (n == "wal-stage" && log_dir.starts_with(dir))
        };
        if !names.is_empty()
            && names.iter().all(|n| ours(n) || leftover(n))
            && opts.create_if_missing
        {
            for n in names.iter().filter(|n| leftover(n)) {
                storage.remove(&dir.join(n))?;
            }
        } else if let Some(other) = names.iter().find(|n| !ours(n)) {
            return Err(ErrorRepr::NotADatabase(format!(
                "{} has no CURRENT file but holds {other:?}; refusing to overwrite it",
                dir.display()
            ))
            .into());
        }
        if !opts.create_if_missing {
            return Err(Error::invalid(format!(
                "{} holds no database and create_if_missing is false",
                dir.display()
            )));
        }
        VersionSet::create(
            dir,
            storage.clone(),
            opts.num_levels,
            opts.max_manifest_file_size,
            opts.compaction_style,
        )?
    };
    versions.set_log_location(
        separate_log.then(|| (log_storage.clone(), log_dir.clone())),
        opts.extended_wal,
    )?;
    if versions.style() != opts.compaction_style {
        tracing::info!(
            created = versions.style().name(),
            asked = opts.compaction_style.name(),
            "the database keeps the compaction style it was created with"
        );
        opts.compaction_style = versions.style();
    }
    // Numbers of files a crash left behind (WALs written after the last manifest record, half
    // written tables) must never be handed out again.
    for n in names.iter().chain(&log_names) {
        if let Some(num) = parse_number(n, ".log")
            .or_else(|| parse_number(n, ".sst"))
            .or_else(|| n.strip_prefix("MANIFEST-").and_then(|s| s.parse().ok()))
        {
            versions.mark_file_number_used(num);
        }
    }

    let stats = Arc::new(EngineStats {
        log_tier,
        ..Default::default()
    });
    let block_cache = (opts.block_cache_capacity > 0)
        .then(|| Arc::new(BlockCache::new(opts.block_cache_capacity)));
    let store = Arc::new(open_tiers(dir, &storage, &opts, &versions, &stats)?);
    // The capacity tier's writes (uploads, deletions) are fenced by the log location's lease,
    // as its own writes are: once another database takes it over, this one makes nothing
    // durable on either (`storage/object/fence.rs`).
    if let (Some(capacity), Some(fence)) = (store.capacity(), log_fence) {
        capacity.set_write_fence(fence);
    }
    // Numbers of objects a crash left on the capacity tier are never handed out again either.
    for (id, _) in store.capacity_objects()? {
        versions.mark_file_number_used(id);
    }
    let tables = Arc::new(
        TableCache::new(
            store.clone(),
            opts.max_open_files,
            block_cache.clone(),
            stats.clone(),
        )
        .with_row_cache(opts.row_cache_capacity),
    );

    // Replay WALs from the manifest's log number on into memtables, kept or written to L0.
    // They are in the log location, or in the database directory if it had none before.
    let mut wals: Vec<LogFile<'_>> = names
        .iter()
        .map(|n| (n, dir, &storage, !separate_log))
        .chain(
            log_names
                .iter()
                .map(|n| (n, log_dir.as_path(), &log_storage, true)),
        )
        .filter_map(|(n, d, storage, in_log_location)| {
            parse_number(n, ".log").map(|number| LogFile {
                number,
                path: d.join(n),
                storage,
                in_log_location,
            })
        })
        .filter(|l| l.number >= versions.min_log_number())
        .collect();
    wals.sort_unstable_by_key(|l| l.number);
    // The log the manifest names as the oldest unflushed one always exists: if it is in
    // neither place, the log lived elsewhere and opening here would lose its writes.
    let oldest = versions.min_log_number();
    if oldest > 0 && !wals.iter().any(|l| l.number == oldest) {
        return Err(Error::invalid(format!(
            "the database's live WAL {:06}.log is in neither {} nor {}: was wal_location \
             changed? Open it with the log location it last used",
            oldest,
            dir.display(),
            log_dir.display()
        )));
    }
    // Only the last log holding a write may end in a torn write: a log after it can be left
    // empty by a crash during an earlier open, after it created its new log, or hold only key
    // lists (the extended WAL logs them at open and in node-loss recovery).
    let mut writes = Vec::with_capacity(wals.len());
    for l in &wals {
        let size = l.storage.open(&l.path)?.size();
        writes.push(
            size > 0
                && (!opts.extended_wal
                    || super::extended::first_seq_of(l.storage.as_ref(), &l.path)?.is_some()),
        );
    }
    // With column families, open writes every replayed record to L0 (no memtable is kept).
    let with_families = versions.families().in_use();
    // Each live family besides the default, with its options as the manifest stores them.
    let mut family_options = Vec::new();
    for (id, t) in versions.families().iter() {
        let o = super::column_family::CfOptions::decode(
            &t.name,
            &t.options,
            t.version.num_levels(),
            t.style,
        )?;
        family_options.push((id, t.name.clone(), o));
    }
    let keep_limit = if opts.avoid_flush_during_recovery && !with_families {
        opts.max_write_buffer_number - 1
    } else {
        0
    };
    let (replay, family_mems) = if with_families {
        let f = crate::recovery::normal::replay_families(
            &wals,
            &writes,
            versions.last_sequence,
            &|id| versions.log_number_of(id),
            versions.families().next_id(),
            &opts,
        )?;
        let empty = crate::recovery::normal::Replay {
            packed: Vec::new(),
            own: Vec::new(),
            torn: false,
            last_seq: f.last_seq,
            first_seqs: Default::default(),
        };
        (empty, f.mems)
    } else {
        let r = crate::recovery::normal::replay(
            &wals,
            &writes,
            keep_limit,
            versions.last_sequence,
            &opts,
        )?;
        (r, Default::default())
    };
    let mut family_mems: std::collections::HashMap<u32, Vec<Arc<MemTable>>> = family_mems;
    let last_seq = replay.last_seq;
    let first_seqs = replay.first_seqs;
    let mut recovered = replay.packed;
    recovered.extend(
        family_mems
            .remove(&crate::version::DEFAULT_FAMILY)
            .unwrap_or_default(),
    );
    let shapes: Vec<(usize, bool)> = replay
        .own
        .iter()
        .map(|l| (l.mems.len(), l.in_log_location))
        .collect();
    let kept_from =
        replay.own.len() - crate::recovery::normal::kept_suffix(&shapes, replay.torn, keep_limit);
    let mut kept_mems: Vec<Arc<MemTable>> = Vec::new();
    // Logs whose records stay in kept memtables: live until their flush.
    let mut kept_logs: HashSet<u64> = HashSet::new();
    for (i, log) in replay.own.into_iter().enumerate() {
        if i < kept_from {
            recovered.extend(log.mems);
        } else if !log.mems.is_empty() {
            kept_logs.insert(log.number);
            kept_mems.extend(log.mems);
        }
    }
    // The earlier process may have ended before syncing these logs. A kept log's records now
    // stand for acknowledged writes until its flush; under the extended WAL every replayed log
    // stays in the log location, where later key lists may reference its records.
    for l in &wals {
        if kept_logs.contains(&l.number) || (opts.extended_wal && l.in_log_location) {
            l.storage.sync_file(&l.path)?;
        }
    }
    // Only now that every log replayed cleanly is anything written.
    let wal_number = versions.new_file_number();
    let wal = LogWriter::new(
        log_storage.create(&wal_path(&log_dir, wal_number))?,
        wal_number,
    );
    log_storage.sync_dir(&log_dir)?;
    let wal = Mutex::new(LogSet::new(wal, log_storage.clone(), &log_dir));
    // The extended WAL keeps every log in the log location until no table needs it.
    let extended = if opts.extended_wal {
        let ext = super::extended::ExtendedWal::default();
        let bound = versions.wal_bound();
        let mut kept: Vec<u64> = Vec::new();
        for n in log_names.iter().filter_map(|n| parse_number(n, ".log")) {
            if n < bound {
                // Nothing needs it: finish a deletion a crash interrupted.
                log_storage.remove(&wal_path(&log_dir, n))?;
            } else if n < wal_number {
                kept.push(n);
            }
        }
        kept.sort_unstable();
        // The first write of each retained log the replay did not read.
        let unread: Vec<u64> = kept
            .iter()
            .copied()
            .filter(|n| !first_seqs.contains_key(n))
            .collect();
        let paths: Vec<PathBuf> = unread.iter().map(|n| wal_path(&log_dir, *n)).collect();
        let found: std::collections::HashMap<u64, Option<u64>> = unread
            .into_iter()
            .zip(super::extended::first_seqs_of(
                log_storage.as_ref(),
                &paths,
            )?)
            .collect();
        // A file without a write batch starts where the next one does.
        let mut next_first = last_seq + 1;
        for &n in kept.iter().rev() {
            let first = match first_seqs.get(&n) {
                Some(&s) => Some(s),
                None => found.get(&n).copied().flatten(),
            };
            let first = first.unwrap_or(next_first).min(next_first);
            ext.wal_created(n, first);
            next_first = first;
        }
        ext.wal_created(wal_number, last_seq + 1);
        Some(ext)
    } else {
        None
    };
    let mut added: Vec<FileMeta> = Vec::new();
    for m in &recovered {
        added.extend(super::background::write_l0_offline(
            m,
            &tables,
            versions.file_numbers(),
            &opts,
        )?);
    }
    drop(recovered);
    // Every other live family's records go to its L0, and its log number moves to the new log.
    let mut family_edits = Vec::new();
    for (id, _, o) in &family_options {
        let id = *id;
        let mut metas = Vec::new();
        for m in family_mems.get(&id).into_iter().flatten() {
            metas.extend(super::background::write_l0_offline(
                m,
                &tables,
                versions.file_numbers(),
                &o.apply(&opts),
            )?);
        }
        family_edits.push((
            id,
            VersionEdit {
                log_number: Some(wal_number),
                added: metas.into_iter().map(|f| (0, f)).collect(),
                ..Default::default()
            },
        ));
    }
    drop(family_mems);
    storage.sync_dir(dir)?;
    let pinned = match &extended {
        Some(ext) => super::extended::log_tables_with(
            ext,
            &tables,
            &wal,
            opts.extended_wal_ttl,
            &added,
            // The replayed logs' tails may be durable only in this process's page cache (or
            // the object-store log's local stage): these tables log their records inline.
            true,
            None,
        )?,
        None => super::extended::Pinned::none(),
    };
    versions.log_and_apply(VersionEdit {
        // The oldest log a kept memtable needs, else the new one.
        log_number: Some(kept_logs.iter().min().copied().unwrap_or(wal_number)),
        last_sequence: Some(last_seq),
        added: added.into_iter().map(|f| (0, f)).collect(),
        wal_pins: pinned.pins(),
        family_edits,
        ..Default::default()
    })?;
    drop(pinned);
    for l in &wals {
        // Replayed logs go, except those of kept memtables (their flush deletes them) and the
        // log location's under the extended WAL (key lists may reference their records; the
        // retention rule deletes them).
        if !kept_logs.contains(&l.number) && (extended.is_none() || !l.in_log_location) {
            l.storage.remove(&l.path)?;
        }
    }
    drop(wals);
    kept_logs.insert(wal_number);
    remove_orphans(dir, storage.as_ref(), &versions, &kept_logs)?;
    if separate_log && extended.is_none() {
        remove_orphan_logs(&log_dir, log_storage.as_ref(), &kept_logs)?;
    }
    let live_capacity: HashSet<u64> = versions
        .all_files()
        .filter(|f| f.tier == Tier::Capacity)
        .map(|f| f.id)
        .collect();
    // The rule of `tier::gc`: what no version and no checkpoint record refers to is deleted
    // once the minimum age has passed (the garbage-collection thread); what records keep
    // waits in the same queue for their release. An unreadable registry defers nothing.
    let registry =
        crate::checkpoint::Registry::new(dir, storage.clone(), store.capacity().cloned());
    let now = std::time::Instant::now();
    let mut deferred: Vec<crate::tier::gc::Deferred> = Vec::new();
    if store.capacity().is_some() {
        match registry.protected(crate::checkpoint::now_unix_ms(), None) {
            Ok(protected) => {
                for id in store.sweep_capacity(&live_capacity, &protected)? {
                    deferred.push(crate::tier::gc::Deferred::new(
                        id,
                        now,
                        opts.capacity_gc_min_age,
                    ));
                }
                deferred.extend(
                    protected
                        .iter()
                        .filter(|id| !live_capacity.contains(id))
                        .map(|&id| crate::tier::gc::Deferred {
                            id,
                            due: now,
                            unreferenced_since: None,
                        }),
                );
            }
            Err(e) => tracing::warn!(
                registry = %registry.location(),
                error = %e,
                "could not read the checkpoint registry: no capacity-tier object is collected \
                 until it can be"
            ),
        }
    }
    if let Some(shared) = store.shared() {
        shared.retain(&live_capacity)?;
    }
    remove_local_staging_files(&storage, &opts)?;
    super::identity::ensure_identity(storage.as_ref(), dir)?;
    // A crash's leftover checkpoint holds (named by their creation time in nanoseconds); a
    // young one may belong to `strata checkpoint` or `strata backup` running beside this open
    // (a backup's hold lives as long as the backup, whose checkpoint protects its tables for
    // `backup::BACKUP_PROTECTION`).
    let now_ns = crate::checkpoint::now_unix_ms().saturating_mul(1_000_000);
    for name in storage.list(dir)? {
        let Some(born) = name
            .strip_prefix(crate::checkpoint::offline::HOLD_PREFIX)
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        if now_ns.saturating_sub(born) > crate::backup::BACKUP_PROTECTION.as_nanos() as u64 {
            if let Err(e) = storage.remove_dir_all(&dir.join(&name)) {
                tracing::warn!(dir = %name, error = %e, "could not remove a checkpoint's hold");
            }
        }
    }

    let mem = Arc::new(MemTable::for_options(wal_number, &opts, None));
    mem.set_base_seq(last_seq);
    let hot = super::promote::open_hotrap(&dir.join("ralt"), &storage, &opts, &versions.current())?;
    let logstore = match (opts.placement_policy, opts.compaction_style) {
        (crate::tier::PlacementPolicy::Static, _) => None,
        (_, crate::version::CompactionStyle::SplitForest) => {
            return Err(Error::invalid(
                "placement_policy = logstore needs leveled compaction (this database uses the \
                 split forest, whose merges move whole trees)",
            ))
        }
        _ => Some(Arc::new(super::temperature::LogStore::new(
            opts.logstore.clone(),
        ))),
    };
    let token = super::family::new_db_token();
    let default = Arc::new(Family::new(
        token,
        crate::version::DEFAULT_FAMILY,
        crate::version::DEFAULT_FAMILY_NAME.to_string(),
        opts.clone(),
        &mem,
        &kept_mems,
        versions.current(),
        hot,
        logstore,
    ));
    let default_state = FamilyState {
        handle: default.clone(),
        mem,
        imms: kept_mems,
        jobs: 0,
    };
    let search = (opts.capacity.is_some() && opts.forest.search_threads >= 2).then(|| {
        super::search::SearchPool::new(opts.forest.search_threads, tables.clone(), stats.clone())
    });
    let remote = remote_runner(dir, &opts)?;
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        log_dir,
        log_storage,
        extended,
        _log_lock: log_lock,
        rate_limiter: (opts.compaction_rate_limit > 0)
            .then(|| Arc::new(RateLimiter::new(opts.compaction_rate_limit))),
        storage,
        stats,
        block_cache,
        tables,
        state: Mutex::new(DbState {
            versions,
            families: [(crate::version::DEFAULT_FAMILY, default_state)].into(),
            live_logs: kept_logs.iter().copied().collect(),
            flushing: false,
            busy: Default::default(),
            running_compactions: 0,
            running_fast_bytes: 0,
            writing: Vec::new(),
            next_slot: 0,
            bg_error: None,
        }),
        bg_cv: Condvar::new(),
        commit: super::write::CommitPipeline::new(last_seq),
        token,
        handles: arc_swap::ArcSwap::from_pointee(vec![default.clone()]),
        default,
        wal,
        last_seq: AtomicU64::new(last_seq),
        snapshots: Arc::new(SnapshotList::default()),
        shutting_down: AtomicBool::new(false),
        threads: Mutex::new(Vec::new()),
        next_job_id: AtomicU64::new(1),
        runner: match &remote {
            Some(r) => r.clone(),
            None => Arc::new(crate::compaction::LocalRunner),
        },
        remote,
        search,
        registry,
        deferred: Mutex::new(deferred),
        collecting: Mutex::new(()),
        temperature_ticker: std::sync::atomic::AtomicBool::new(false),
        to_release: Mutex::new(Vec::new()),
        opts,
        _lock: lock,
    });
    super::column_family::open_families(&inner, family_options, wal_number)?;
    super::temperature::load(&inner);
    start_threads(&inner);
    super::temperature::start(&inner);
    for fam in &inner.all_families() {
        super::promote::start_hot_thread(&inner, fam);
    }
    Ok(inner)
}

/// The remote-compaction runner, when a compaction service is configured.
fn remote_runner(
    dir: &Path,
    opts: &Options,
) -> Result<Option<Arc<crate::compaction::remote::ServiceRunner>>> {
    use crate::compaction::remote::{CompactionMode, RemoteOptions, ServiceRunner};
    let Some(service) = &opts.compaction_service else {
        return Ok(None);
    };
    if opts.compaction_mode == CompactionMode::Local {
        return Ok(None);
    }
    let fast_dir = std::path::absolute(dir).map_err(|e| Error::io(dir.display(), e))?;
    let mut r = RemoteOptions::new(
        opts.compaction_mode,
        opts.compaction_instance
            .clone()
            .unwrap_or_else(|| fast_dir.display().to_string()),
        fast_dir,
    );
    // A store handed over as an object has no URL a worker could open.
    r.capacity_url = match (&opts.capacity, &opts.capacity_store) {
        (Some(c), None) => Some(c.url.clone()),
        _ => None,
    };
    r.local_threads = opts.max_background_compactions.max(1);
    r.verify = opts.remote_verify;
    Ok(Some(Arc::new(ServiceRunner::new(service.clone(), r))))
}

/// Opens the capacity tier and the fast-tier caches in front of it, as the options ask.
pub(crate) fn open_tiers(
    dir: &Path,
    storage: &Arc<dyn Storage>,
    opts: &Options,
    versions: &VersionSet,
    stats: &Arc<EngineStats>,
) -> Result<TableStore> {
    let ts = stats.tier.clone();
    let live_capacity: HashSet<u64> = versions
        .all_files()
        .filter(|f| f.tier == Tier::Capacity)
        .map(|f| f.id)
        .collect();
    let shared =
        crate::tier::shared::SharedTables::open(dir, storage, opts.capacity.as_ref(), ts.clone())?;
    if shared.is_some() && opts.compaction_service.is_some() {
        return Err(Error::invalid(
            "remote compaction of a checkpoint or clone that shares tables with its source is              not supported yet (workers read inputs from one capacity prefix)",
        ));
    }
    let capacity = match &opts.capacity {
        Some(c) => {
            let tier = CapacityTier::open(c, opts.capacity_store.clone(), ts.clone())?;
            tier.set_request_budget(opts.capacity_request_budget);
            Some(tier)
        }
        None if !live_capacity.is_empty() => {
            return Err(Error::invalid(
                "the database has tables on a capacity tier: configure `Options::capacity`",
            ))
        }
        None => None,
    };
    let (meta, data_cache) = match &capacity {
        None => (None, None),
        Some(_) => {
            let meta = Arc::new(MetaCache::open(
                dir,
                storage.clone(),
                &live_capacity,
                ts.clone(),
            )?);
            let pc = &opts.persistent_cache;
            let data: Option<Arc<dyn PersistentCache>> = match pc.kind {
                PersistentCacheKind::None => None,
                PersistentCacheKind::Lap => Some(Arc::new(LapCache::open(
                    &dir.join("lap"),
                    storage.as_ref(),
                    pc,
                    &|t| live_capacity.contains(&t),
                    ts.clone(),
                )?)),
                PersistentCacheKind::Naive => Some(Arc::new(NaiveCache::open(
                    &dir.join("pcache"),
                    storage.clone(),
                    pc,
                    ts.clone(),
                )?)),
                #[cfg(feature = "foyer")]
                PersistentCacheKind::Foyer => Some(Arc::new(
                    crate::cache::persistent::FoyerCache::open(&dir.join("foyer"), pc, ts.clone())?,
                )),
            };
            (Some(meta), data)
        }
    };
    Ok(TableStore::new(TablesConfig {
        dir: dir.to_path_buf(),
        fast: storage.clone(),
        capacity,
        meta,
        data_cache,
        stats: ts,
        shared,
    }))
}

/// Deletes files a crash left behind: tables not in the version, WALs other than the live
/// ones (the new log and those of kept memtables) and old manifests.
fn remove_orphans(
    dir: &Path,
    storage: &dyn Storage,
    versions: &VersionSet,
    live_wals: &HashSet<u64>,
) -> Result<()> {
    let live: std::collections::HashSet<u64> = versions.all_files().map(|f| f.id).collect();
    let manifest = format!("MANIFEST-{:06}", versions.manifest_number());
    for name in storage.list(dir)? {
        let orphan = if let Some(id) = parse_number(&name, ".sst") {
            !live.contains(&id)
        } else if let Some(n) = parse_number(&name, ".log") {
            !live_wals.contains(&n)
        } else if name.starts_with("MANIFEST-") {
            name != manifest
        } else {
            name == "CURRENT.tmp"
        };
        if orphan {
            tracing::info!(file = %name, "removing orphaned file");
            storage.remove(&dir.join(&name))?;
        }
    }
    Ok(())
}

/// Deletes log files other than the live ones from a separate log location (without the
/// extended WAL nothing else is needed once replayed).
fn remove_orphan_logs(log_dir: &Path, storage: &dyn Storage, live: &HashSet<u64>) -> Result<()> {
    for name in storage.list(log_dir)? {
        if parse_number(&name, ".log").is_some_and(|n| !live.contains(&n)) {
            tracing::info!(file = %name, "removing an old WAL from the log location");
            storage.remove(&log_dir.join(&name))?;
        }
    }
    Ok(())
}

/// A `file://` capacity tier stages every upload as `tables/<name>#<n>` and renames it when
/// complete; object_store's listing hides such names, so a crash during an upload leaves a
/// file that orphan collection by listing never sees (the local analogue of an incomplete S3
/// multipart upload). They are removed here, at open, before this process uploads anything.
fn remove_local_staging_files(storage: &Arc<dyn Storage>, opts: &Options) -> Result<()> {
    let Some(c) = &opts.capacity else {
        return Ok(());
    };
    if opts.capacity_store.is_some() {
        return Ok(());
    }
    let Ok(u) = url::Url::parse(&c.url) else {
        return Ok(());
    };
    if u.scheme() != "file" {
        return Ok(());
    }
    let Ok(root) = u.to_file_path() else {
        return Ok(());
    };
    let dir = root.join("tables");
    if !storage.exists(&dir)? {
        return Ok(());
    }
    for name in storage.list(&dir)? {
        let staged = name.split_once('#').is_some_and(|(stem, n)| {
            stem.ends_with(".sst") && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        });
        if staged {
            tracing::info!(file = %name, "removing a capacity-tier upload a crash left staged");
            storage.remove(&dir.join(&name))?;
        }
    }
    Ok(())
}
