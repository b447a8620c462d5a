//! Background work: one thread flushes sealed memtables (oldest first) and reaps obsolete
//! files; `max_background_compactions` threads run picked compactions. Also the foreground
//! entry points that wait on background work: `flush`, `wait_idle`, shutdown (`compact_range`
//! is in `manual`).
//!
//! Failure policy: a failed flush, a failed manifest write, or a corrupt (or unreadable-format)
//! table found by compaction sets the background error (writes fail; reads go on; reopening
//! recovers from the WAL). A compaction failing for any other reason (an I/O error) removes its
//! partial outputs and is retried after a pause.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::family::Family;
use super::gc::{collect_capacity, reap};
use super::job_slot::range_of;
pub(crate) use super::job_slot::JobSlot;
use super::pick::{pick_next, placement};
use super::room::switch_memtable;
use super::write::{set_bg_error, wal_path};
use super::{DbInner, DbState};
use crate::compaction::{
    self, write_tables, CompactionEnv, CompactionInput, CompactionJob, CompactionReason, HotRoute,
    Pick, PromotedRecord,
};
use crate::error::{ErrorKind, ErrorRepr, Result};
use crate::iter::InternalIterator;
use crate::sst::TableBuilderOptions;
use crate::tier::{tier_for_level, Tier};
use crate::version::{FileMeta, TableFile, VersionEdit};

pub(crate) fn table_options(o: &crate::Options, level: usize) -> TableBuilderOptions {
    TableBuilderOptions {
        block_size: o.block_size,
        restart_interval: o.block_restart_interval,
        bloom_bits_per_key: o.bloom_bits_per_key,
        data_block_hash_ratio: o.data_block_hash_ratio,
        compression: o.compression_for_level(level),
        capacity_index: o.capacity_index,
        bytes_per_sync: o.bytes_per_sync,
    }
}

/// Writes a memtable's entries into one fast-tier table for L0 (not installed): memtable
/// flushes, WAL replay at open, and promotion by flush all write L0 this way.
pub(crate) fn write_l0(
    mem: &Arc<crate::memtable::MemTable>,
    snapshots: &[crate::types::SeqNo],
    opts: &crate::Options,
    env: &CompactionEnv<'_>,
) -> Result<compaction::CompactionResult> {
    // The compaction iterator would drop the shadowed versions; not reading them saves a
    // cache miss per overwrite.
    let mut it = mem.flush_iter(snapshots);
    it.seek_to_first();
    write_tables(
        &mut it,
        mem.range_tombstones(),
        snapshots,
        false,
        u64::MAX,
        &table_options(opts, 0),
        None,
        None,
        env,
    )
}

/// [`write_l0`] for a database that is not running yet (open's WAL replay, node-loss
/// recovery): fast-tier L0 tables, no rate limit, no filter.
pub(crate) fn write_l0_offline(
    mem: &Arc<crate::memtable::MemTable>,
    tables: &Arc<crate::cache::TableCache>,
    file_numbers: Arc<std::sync::atomic::AtomicU64>,
    opts: &crate::Options,
) -> Result<Vec<FileMeta>> {
    if mem.is_empty() {
        return Ok(Vec::new());
    }
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let e = CompactionEnv {
        tables: tables.clone(),
        output_tier: Tier::Fast,
        file_numbers,
        id_limit: None,
        reserve_ids: None,
        rate_limiter: None,
        cancel: &cancel,
        filter: None,
        merge: opts.merge_operator.clone(),
        checkpoint: None,
        prepopulate_block_cache: false,
    };
    Ok(write_l0(mem, &[], opts, &e)?.outputs)
}

/// The merge operator's name, for a compaction job.
pub(crate) fn merge_name(opts: &crate::Options) -> Option<String> {
    opts.merge_operator.as_ref().map(|m| m.name().to_string())
}

pub(crate) fn env(
    inner: &DbInner,
    file_numbers: Arc<std::sync::atomic::AtomicU64>,
    output_tier: Tier,
) -> CompactionEnv<'_> {
    CompactionEnv {
        tables: inner.tables.clone(),
        output_tier,
        file_numbers,
        id_limit: None,
        reserve_ids: Some(inner),
        rate_limiter: inner.rate_limiter.clone(),
        cancel: &inner.shutting_down,
        filter: inner.opts.compaction_filter.clone(),
        merge: inner.opts.merge_operator.clone(),
        checkpoint: None,
        prepopulate_block_cache: false,
    }
}

impl crate::compaction::IdReserver for DbInner {
    fn reserve_ids(&self, n: u64) -> Result<u64> {
        let mut st = self.state.lock();
        let first = st.versions.file_numbers().fetch_add(n, Ordering::SeqCst);
        // An empty edit records the counter past the reservation.
        st.versions.log_and_apply(VersionEdit::default())?;
        self.install_super_version(&self.default, &st);
        Ok(first)
    }
}

pub(crate) fn start_threads(inner: &Arc<DbInner>) {
    let mut threads = inner.threads.lock();
    let i = inner.clone();
    threads.push(
        std::thread::Builder::new()
            .name("strata-flush".into())
            .spawn(move || flush_loop(&i))
            .expect("spawn flush thread"),
    );
    for n in 0..inner.opts.max_background_compactions {
        let i = inner.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("strata-compact-{n}"))
                .spawn(move || compaction_loop(&i))
                .expect("spawn compaction thread"),
        );
    }
    if let Some(every) = inner.opts.wal_sync_interval {
        threads.push(super::wal_sync::spawn_periodic(inner.clone(), every));
    }
    if inner.tables.store().capacity().is_some() || inner.tables.store().shared().is_some() {
        let i = inner.clone();
        threads.push(
            std::thread::Builder::new()
                .name("strata-gc".into())
                .spawn(move || super::gc::gc_loop(&i))
                .expect("spawn garbage-collection thread"),
        );
    }
}

fn flush_loop(inner: &Arc<DbInner>) {
    loop {
        reap(inner);
        let mut st = inner.state.lock();
        if inner.shutting_down.load(Ordering::Acquire) {
            return;
        }
        // The family whose oldest sealed memtable is oldest: flushing it first moves the
        // WAL floor, so old logs go as soon as they can.
        let next = st
            .families
            .values()
            .filter(|fs| !fs.handle.dropped.load(Ordering::Acquire))
            .filter_map(|fs| fs.imms.first().map(|m| (m.wal_number(), fs.handle.clone())))
            .min_by_key(|(n, f)| (*n, f.id));
        let Some((_, fam)) = next.filter(|_| st.bg_error.is_none()) else {
            inner.bg_cv.wait_for(&mut st, Duration::from_millis(200));
            continue;
        };
        st.flushing = true;
        st.fam_mut(fam.id).jobs += 1;
        let done = flush_one(inner, &fam, st);
        {
            let mut st = inner.state.lock();
            st.flushing = false;
            st.fam_mut(fam.id).jobs -= 1;
        }
        inner.bg_cv.notify_all();
        if let Err(e) = done {
            if !inner.shutting_down.load(Ordering::Acquire) {
                set_bg_error(inner, e);
            }
        }
    }
}

/// Flushes the oldest sealed memtable into one L0 table and installs it.
fn flush_one(inner: &Arc<DbInner>, fam: &Family, st: MutexGuard<'_, DbState>) -> Result<()> {
    let fs = st.fam(fam.id);
    let mem = fs.imms[0].clone();
    let next_log = fs
        .imms
        .get(1)
        .map(|m| m.wal_number())
        .unwrap_or_else(|| fs.mem.wal_number());
    let numbers = st.versions.file_numbers();
    // (A family created during the flush writes only to logs at or after `next_log`.)
    let several = st.families.len() > 1;
    drop(st);
    let start = Instant::now();
    let snapshots = inner.snapshots.sequences();
    let mut e = env(inner, numbers, Tier::Fast);
    e.prepopulate_block_cache = inner.opts.prepopulate_block_cache;
    let res = write_l0(&mem, &snapshots, &fam.opts, &e)?;
    if inner.opts.prepopulate_block_cache {
        // Open the new tables too (index and filter in memory), so that a read that must not
        // wait for I/O (`ReadOptions::cache_only`) finds them as warm as their blocks.
        for f in &res.outputs {
            if let Err(e) = inner.tables.get(f) {
                tracing::warn!(table = f.id, error = %e, "could not open a table just flushed");
            }
        }
    }
    // New tables' directory entries must be durable before the manifest names them.
    inner.storage.sync_dir(&inner.dir)?;
    // Flushes do not filter: every record is the WAL's, unless merge operands were folded
    // (a result carries its newest operand's sequence number, where the WAL has the operand).
    let pinned = super::extended::log_tables(inner, &res.outputs, mem.num_merges() > 0)?;
    // With several families, a batch's halves may sit in a log this family's record is about
    // to pass while another family's memtable still holds its half: the sealed logs are made
    // durable first, or a power loss could keep one half (in this table) without the other.
    if several {
        inner.wal.lock().sync_sealed()?;
    }
    let mut st = inner.state.lock();
    let current = inner.wal.lock().current().number();
    // A family left with nothing unflushed (an empty active memtable after this one) owes
    // nothing to any log before the current one.
    let fs = st.fam(fam.id);
    let next_log = if fs.imms.len() == 1 && fs.mem.is_empty() {
        current.max(next_log)
    } else {
        next_log
    };
    let edit = VersionEdit {
        log_number: Some(next_log),
        last_sequence: Some(inner.last_seq.load(Ordering::Acquire)),
        added: res.outputs.iter().map(|f| (0, f.clone())).collect(),
        wal_pins: pinned.pins(),
        ..Default::default()
    };
    let mut edit = edit.in_family(fam.id);
    // Families with nothing unflushed move their log numbers to the current log with it, so
    // that the logs this flush frees are not needed by their recovery either.
    let bumps = st.empty_family_log_numbers(current, Some(fam.id));
    edit.log_number = edit.log_number.or(bumps.log_number);
    edit.family_edits.extend(bumps.family_edits);
    // On failure the edit may still have reached the disk, so the outputs are not deleted here:
    // if the edit is lost they are orphans that the next open removes.
    st.versions.log_and_apply(edit)?;
    // Counted before the flush becomes visible, so a caller woken by it sees the figures.
    let s = &inner.stats;
    s.flushes.fetch_add(1, Ordering::Relaxed);
    s.flush_bytes.fetch_add(res.write_bytes, Ordering::Relaxed);
    s.levels[0]
        .write_bytes
        .fetch_add(res.write_bytes, Ordering::Relaxed);
    s.levels[0]
        .micros
        .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
    st.fam_mut(fam.id).imms.remove(0);
    inner.install_super_version(fam, &st);
    inner.bg_cv.notify_all();
    // The memtable's log may hold records of another family's live memtable: it goes once
    // every family's oldest live memtable is newer.
    drop(pinned);
    purge_logs(inner, st);
    Ok(())
}

/// Deletes the WAL files no live memtable of any family needs any more (below
/// [`DbState::log_floor`]) and no family's log number in the manifest names (a recovery
/// replays from there), or hands them to the extended WAL's retention.
pub(crate) fn purge_logs(inner: &DbInner, mut st: MutexGuard<'_, DbState>) {
    let current = inner.wal.lock().current().number();
    let floor = st.log_floor(current).min(st.versions.min_log_number());
    let rest = st.live_logs.split_off(&floor);
    let done = std::mem::replace(&mut st.live_logs, rest);
    drop(st);
    for n in done {
        // The log's records are in synced tables now: it owes no fsync any more.
        inner.wal.lock().retire(n);
        if inner.extended.is_none() {
            let _ = inner.log_storage.remove(&wal_path(&inner.log_dir, n));
        }
    }
    if inner.extended.is_some() {
        // Kept while fast-tier tables hold its records (RocksMash §3.4).
        super::extended::purge_wals(inner);
    }
}

fn compaction_loop(inner: &Arc<DbInner>) {
    let mut backoff = Duration::from_millis(100);
    // Families take turns: the search for work starts after the family that last had some.
    let mut after = 0u32;
    loop {
        let mut st = inner.state.lock();
        if inner.shutting_down.load(Ordering::Acquire) {
            return;
        }
        let pick = if st.bg_error.is_none() {
            let order = st
                .families
                .range(after.saturating_add(1)..)
                .chain(st.families.range(..=after));
            order
                .map(|(_, fs)| fs.handle.clone())
                .filter(|fam| !fam.dropped.load(Ordering::Acquire))
                .find_map(|fam| pick_next(inner, &fam, &st, None).map(|p| (fam, p)))
        } else {
            None
        };
        let Some((fam, pick)) = pick else {
            inner.bg_cv.wait_for(&mut st, Duration::from_millis(500));
            continue;
        };
        after = fam.id;
        match run_pick(inner, &fam, st, pick) {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(e) => {
                if inner.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                tracing::warn!(error = %e, "compaction failed");
                inner
                    .stats
                    .background_errors
                    .fetch_add(1, Ordering::Relaxed);
                // A fenced database (another took its log location over) stops for good: its
                // compactions could only upload parts nobody completes.
                if matches!(
                    e.kind(),
                    ErrorKind::Corruption | ErrorKind::NotADatabase | ErrorKind::Fenced
                ) {
                    set_bg_error(inner, e);
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
        reap(inner);
    }
}

/// HotRAP's part of a job, decided under the database lock at set-up.
#[derive(Default)]
pub(crate) struct HotSetup {
    /// Promotion-cache records taken out of the cache (the job moves data over their keys into
    /// the capacity tier).
    taken: Vec<(Vec<u8>, super::super::tier::hot::CachedRecord)>,
    /// `(level, lo, hi, hi exclusive)`: hot keys in this range stay on (or come to) the fast
    /// tier.
    route: Option<(usize, Vec<u8>, Vec<u8>, bool)>,
}

/// Marks the job's tables for the promotion cache and takes its records (HotRAP §3.1, §3.3).
pub(crate) fn hot_setup(inner: &DbInner, fam: &Family, st: &DbState, pick: &Pick) -> HotSetup {
    let Some(hot) = &fam.hot else {
        return HotSetup::default();
    };
    let all: Vec<&Arc<TableFile>> = pick.inputs.iter().flat_map(|(_, fs)| fs.iter()).collect();
    let into_capacity =
        pick.output_tier == Tier::Capacity && all.iter().any(|f| f.tier == Tier::Fast);
    let fast_range = if into_capacity {
        range_of(all.iter().copied().filter(|f| f.tier == Tier::Fast))
    } else {
        None
    };
    let taken = hot.cache.begin_compaction(
        &all,
        fast_range
            .as_ref()
            .map(|(a, b)| (a.as_slice(), b.as_slice())),
    );
    // Retention: the first input level keeps its hot records if it is a fast level below L0
    // and the fast tier has room. A manual compaction pushes everything down (it would
    // otherwise find its retained tables again and again).
    let (level, files) = &pick.inputs[0];
    let pl = placement(&fam.opts);
    let v = st.version(fam.id);
    let room = inner
        .opts
        .fast_tier_budget
        .is_none_or(|b| v.fast_bytes() + st.running_fast_bytes < b);
    let route = (into_capacity
        && pick.forest.is_none()
        && pick.reason != CompactionReason::Manual
        && *level >= 1
        && *level != pick.output_level
        && room
        && tier_for_level(&pl, *level, v.deepest_non_empty(), 0) == Tier::Fast)
        .then(|| range_of(files.iter()))
        .flatten()
        .map(|(lo, hi)| {
            // The range ends where the inputs end: exclusively if every input ending at `hi`
            // ends with a range tombstone's exclusive end.
            let hi_exclusive = files
                .iter()
                .filter(|f| f.largest == hi)
                .all(|f| f.largest_exclusive);
            (*level, lo, hi, hi_exclusive)
        });
    HotSetup { taken, route }
}

/// A job that installed nothing moved no record: reads may promote its inputs' records again.
pub(crate) fn release_compacting(pick: &Pick) {
    for f in pick.inputs.iter().flat_map(|(_, fs)| fs.iter()) {
        f.set_compacting(false);
    }
}

/// Counts an installed compaction into `level`.
pub(crate) fn count_compaction(
    inner: &DbInner,
    level: usize,
    read: u64,
    written: u64,
    start: Instant,
) {
    let lc = &inner.stats.levels[level];
    lc.compactions.fetch_add(1, Ordering::Relaxed);
    lc.read_bytes.fetch_add(read, Ordering::Relaxed);
    lc.write_bytes.fetch_add(written, Ordering::Relaxed);
    lc.micros
        .fetch_add(start.elapsed().as_micros() as u64, Ordering::Relaxed);
}

/// Runs a picked compaction: marks its files busy, executes it without the lock, installs it.
pub(crate) fn run_pick(
    inner: &Arc<DbInner>,
    fam: &Family,
    mut st: MutexGuard<'_, DbState>,
    pick: Pick,
) -> Result<()> {
    if pick.forest.is_some() {
        return super::forest::run_forest_pick(inner, fam, st, pick);
    }
    let slot = JobSlot::take(inner, fam, &mut st, &pick);
    let tier = pick.output_tier;
    // A table changes tiers only by being rewritten.
    let trivial = pick.trivial_move && pick.inputs[0].1.iter().all(|f| f.tier == tier);
    // A move within one tier puts no newer version below the promotion cache.
    let hot_setup = if trivial {
        HotSetup::default()
    } else {
        hot_setup(inner, fam, &st, &pick)
    };
    if let Some((level, lo, hi, _)) = &hot_setup.route {
        // Retained hot records go back into the input level's range.
        slot.also_writing(&mut st, *level, lo.clone(), hi.clone());
    }
    let numbers = st.versions.file_numbers();
    let out = pick.output_level;
    drop(st);
    let start = Instant::now();
    let result = if trivial {
        Ok((
            pick.inputs[0].1.iter().map(|f| f.meta.clone()).collect(),
            None,
        ))
    } else {
        let (route, promoted) = hot_job_parts(fam, hot_setup);
        let job = CompactionJob {
            id: inner.next_job_id.fetch_add(1, Ordering::Relaxed),
            reason: pick.reason,
            inputs: pick
                .inputs
                .iter()
                .map(|(l, fs)| CompactionInput {
                    level: *l,
                    files: fs.iter().map(|f| f.meta.clone()).collect(),
                    run: 0,
                })
                .collect(),
            output_level: out,
            output_tier: tier,
            route,
            promoted,
            forest: None,
            snapshots: inner.snapshots.sequences(),
            bottommost: pick.bottommost,
            target_file_size: fam.opts.target_file_size_base,
            table: table_options(&fam.opts, out),
            score: pick.score,
            filter: inner.opts.compaction_filter.as_ref().and_then(|f| f.spec()),
            merge_operator: merge_name(&inner.opts),
            output_ids: None,
        };
        let route_level = job.route.as_ref().map(|r| r.level);
        // The job's reads and uploads wait for the capacity tier's request budget (no lock is
        // held here).
        let _budget = crate::storage::object::budget_scope(true);
        inner
            .runner
            .run(&job, &env(inner, numbers, tier))
            .and_then(|r| match inner.storage.sync_dir(&inner.dir) {
                Ok(()) => Ok(r),
                Err(e) => {
                    // Not installed: remove the outputs now rather than at the next open.
                    for f in r.outputs.iter().chain(&r.fast_outputs) {
                        let _ = inner.tables.store().remove(f.id, f.tier);
                    }
                    Err(e)
                }
            })
            .map(|r| (r.outputs.clone(), Some((r, route_level))))
    };
    // The extended WAL logs the new fast-tier tables' key lists before the manifest names them.
    let mut pinned = super::extended::Pinned::none();
    let result = result.and_then(|(outputs, r)| {
        let Some((res, _)) = &r else {
            return Ok((outputs, r));
        };
        let all: Vec<FileMeta> = outputs.iter().chain(&res.fast_outputs).cloned().collect();
        match super::extended::log_tables(inner, &all, inner.opts.rewrites_values()) {
            Ok(p) => {
                pinned = p;
                Ok((outputs, r))
            }
            Err(e) => {
                for f in &all {
                    let _ = inner.tables.store().remove(f.id, f.tier);
                }
                Err(e)
            }
        }
    });
    let mut st = inner.state.lock();
    let mut manifest_failed = None;
    let installed = result.and_then(
        |(outputs, r): (
            Vec<FileMeta>,
            Option<(compaction::CompactionResult, Option<usize>)>,
        )| {
            let mut edit = VersionEdit::default();
            for (l, fs) in &pick.inputs {
                for f in fs {
                    edit.deleted.push((*l as u32, f.id));
                }
            }
            if pick.output_run == 0 {
                edit.added = outputs.iter().map(|f| (out as u32, f.clone())).collect();
            } else {
                // A split-forest table rewritten in place stays in its tree.
                edit.added_to_run = outputs
                    .iter()
                    .map(|f| (out as u32, pick.output_run, f.clone()))
                    .collect();
            }
            if let Some((r, Some(level))) = &r {
                edit.added
                    .extend(r.fast_outputs.iter().map(|f| (*level as u32, f.clone())));
            }
            edit.wal_pins = pinned.pins();
            // On failure the edit may still have reached the disk: keep the outputs (orphans
            // are removed at the next open) and stop writing, as after a failed flush.
            st.versions
                .log_and_apply(edit.in_family(fam.id))
                .map(|_| r.map(|(r, _)| r))
                .inspect_err(|e| manifest_failed = Some(e.clone()))
        },
    );
    if installed.is_err() {
        release_compacting(&pick);
    }
    if let (Ok(r), Some(ls)) = (&installed, &fam.logstore) {
        super::temperature::count_installed(ls, fam.id, &pick, r.as_ref(), &st);
    }
    // Release the inputs' references before the job counts as finished, so that waiting for
    // idleness also waits for obsolete inputs to reach the reaper; count it before too.
    drop(pick);
    if let Ok(r) = &installed {
        inner.install_super_version(fam, &st);
        let lc = &inner.stats.levels[out];
        match r {
            None => {
                lc.trivial_moves.fetch_add(1, Ordering::Relaxed);
            }
            Some(r) => {
                // Inputs are deleted only when the job ends: all its outputs were extra space.
                inner
                    .stats
                    .compaction_peak_extra_bytes
                    .fetch_max(r.write_bytes, Ordering::Relaxed);
                count_compaction(inner, out, r.read_bytes, r.write_bytes, start);
                if let Some(hot) = &fam.hot {
                    let c = &hot.counters;
                    c.retained_records
                        .fetch_add(r.routed_records, Ordering::Relaxed);
                    c.retained_bytes
                        .fetch_add(r.routed_bytes, Ordering::Relaxed);
                }
            }
        }
    }
    slot.release(inner, fam, &mut st, &[]);
    drop(st);
    if let Some(e) = manifest_failed {
        set_bg_error(inner, e);
    }
    reap(inner);
    installed.map(|_| ())
}

/// Turns HotRAP's set-up into the job's route (with RALT's hot keys of its range, read
/// without the database lock) and its promoted records (the hot ones of those taken).
pub(crate) fn hot_job_parts(fam: &Family, s: HotSetup) -> (Option<HotRoute>, Vec<PromotedRecord>) {
    let Some(hot) = &fam.hot else {
        return (None, Vec::new());
    };
    let c = &hot.counters;
    c.compaction_taken
        .fetch_add(s.taken.len() as u64, Ordering::Relaxed);
    let route = s.route.and_then(|(level, lo, hi, hi_exclusive)| {
        match hot.tracker.hot_keys_in_range(&lo, &hi) {
            Ok(hot_keys) => Some(HotRoute {
                level,
                lo,
                hi,
                hi_exclusive,
                hot_keys,
            }),
            Err(e) => {
                // Hotness is advisory: without it the job just compacts everything down.
                tracing::warn!(error = %e, "RALT scan failed; compacting without retention");
                None
            }
        }
    });
    let promoted: Vec<PromotedRecord> = match &route {
        Some(r) => s
            .taken
            .into_iter()
            .filter(|(k, _)| r.is_hot(k))
            .map(|(key, rec)| PromotedRecord {
                key,
                seq: rec.seq,
                value: rec.value.to_vec(),
            })
            .collect(),
        None => Vec::new(),
    };
    c.promoted_by_compaction
        .fetch_add(promoted.len() as u64, Ordering::Relaxed);
    (route, promoted)
}

/// Seals the memtable of each of `fams` (if it holds anything) and waits until it and every
/// older sealed memtable of those families are flushed.
pub(crate) fn flush(inner: &Arc<DbInner>, fams: &[Arc<Family>]) -> Result<()> {
    let targets = super::write::exclusive(inner, || -> Result<Vec<(u32, u64)>> {
        let mut st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        let mut targets = Vec::new();
        for fam in fams {
            if !st.families.contains_key(&fam.id) {
                continue;
            }
            if !st.fam(fam.id).mem.is_empty() {
                switch_memtable(inner, fam, &mut st)?;
            }
            if let Some(m) = st.fam(fam.id).imms.last() {
                targets.push((fam.id, m.wal_number()));
            }
        }
        Ok(targets)
    })?;
    let mut st = inner.state.lock();
    loop {
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(ErrorRepr::Closed.into());
        }
        // A family dropped meanwhile has nothing left to flush.
        let done = targets.iter().all(|(id, target)| {
            st.families
                .get(id)
                .is_none_or(|fs| fs.imms.iter().all(|m| m.wal_number() > *target))
        });
        if done {
            return Ok(());
        }
        inner.bg_cv.notify_all();
        inner.bg_cv.wait_for(&mut st, Duration::from_millis(50));
    }
}

/// Waits until no flush or compaction is pending or running.
pub(crate) fn wait_idle(inner: &Arc<DbInner>) -> Result<()> {
    // Waiting for compactions means wanting the tree in shape: LogStore's deferral is
    // suspended meanwhile.
    let _settling: Vec<_> = inner
        .all_families()
        .iter()
        .filter_map(|f| f.logstore.as_ref().map(|ls| ls.settle()))
        .collect();
    let mut st = inner.state.lock();
    let none = HashSet::new();
    loop {
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(ErrorRepr::Closed.into());
        }
        let idle = st.families.values().all(|fs| fs.imms.is_empty())
            && !st.flushing
            && st.running_compactions == 0
            && st
                .families
                .values()
                .all(|fs| pick_next(inner, &fs.handle, &st, Some(&none)).is_none());
        if idle {
            drop(st);
            reap(inner);
            collect_capacity(inner);
            return Ok(());
        }
        inner.bg_cv.notify_all();
        inner.bg_cv.wait_for(&mut st, Duration::from_millis(20));
    }
}

impl DbInner {
    /// Stops background threads, syncs the WAL and deletes obsolete files. Idempotent.
    pub(crate) fn shutdown(&self) -> Result<()> {
        if self.shutting_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // A compaction waiting for the request budget finishes at once: closing does not
        // wait out the budget (the requests of one compaction, at most, go over it).
        if let Some(c) = self.tables.store().capacity() {
            c.set_request_budget(None);
        }
        {
            let _st = self.state.lock();
            self.bg_cv.notify_all();
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        if let Some(pool) = &self.search {
            pool.shutdown();
        }
        if super::temperature::any(self) {
            if let Err(e) = super::temperature::save(self) {
                tracing::warn!(error = %e, "could not write table temperatures at close");
            }
        }
        // New write groups fail (shutting down); wait for one in flight, then sync.
        let r = super::write::after_writers(self, || self.wal.lock().sync());
        reap(self);
        r
    }
}
