//! HotRAP's background side: opening it, RALT upkeep, and the Checker that performs promotion
//! by flush (§3.4).
//!
//! The Checker takes a sealed promotion cache, keeps its hot records, drops those with a newer
//! version (or the same copy) on the fast tier, and either writes the survivors as one L0
//! table or folds them back into the mutable cache when they are fewer than half a table.
//!
//! Why no `updated` field (§3.4): our L0 is ordered by sequence number and a promoted table
//! keeps its records' sequence numbers. Every record in a memtable not yet flushed when the
//! Checker looks is newer than every record it promotes, so such memtables shadow the promoted
//! table both in memory and, once flushed, as newer L0 tables. The danger is only a newer
//! version already on the fast tier (in a table the check did not see). So the Checker checks
//! the fast tables of the current version, and at install, under the database lock, checks
//! again every fast table added since; it installs only when none was added since its last
//! look and no compaction took a record out of the sealed cache meanwhile (compaction set-up
//! holds the same lock). Depends on `tier::hot`, `compaction`, `version`.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::background::{env, write_l0};
use super::family::Family;
use super::DbInner;
use crate::compaction;
use crate::error::Result;
use crate::memtable::MemTable;
use crate::storage::Storage;
use crate::tier::hot::{CachedRecord, HotRap, SealedPromotion};
use crate::tier::Tier;
use crate::types::{self, SeqNo, ValueKind};
use crate::version::{FileMeta, Version, VersionEdit};

/// Opens HotRAP's state when it is on and a capacity tier is configured, with RALT (in
/// `ralt_dir`) and its limits derived from the fast tier of the recovered tree `v` (see
/// [`tree_fast_tier_bytes`]). A custom tracker (`HotRapOptions::tracker`) is shared.
pub(crate) fn open_hotrap(
    ralt_dir: &Path,
    storage: &Arc<dyn Storage>,
    opts: &crate::Options,
    v: &Version,
) -> Result<Option<Arc<HotRap>>> {
    let h = &opts.hotrap;
    if !h.enabled || opts.capacity.is_none() {
        return Ok(None);
    }
    let cache_bytes = h
        .promotion_cache_bytes
        .unwrap_or(opts.target_file_size_base as usize);
    let tracker: Arc<dyn crate::tier::hot::HotTracker> = match &h.tracker {
        Some(t) => t.clone(),
        None => {
            use crate::tier::hot::ralt::{Ralt, RaltOptions};
            let ralt_dir = ralt_dir.to_path_buf();
            let ro = match &h.ralt {
                Some(o) => RaltOptions {
                    dir: ralt_dir,
                    ..o.clone()
                },
                // The decay period and tick come from the configured size, the same at every
                // open: RALT's state stores ticks, which a different tick size would misread.
                // Only the size-derived bounds follow the tree (`set_fast_tier_bytes`).
                None => RaltOptions::for_fast_tier(ralt_dir, configured_fast_tier_bytes(opts)),
            };
            let ralt = Ralt::open(storage.clone(), ro)?;
            if fast_tier_follows_tree(opts) {
                ralt.set_fast_tier_bytes(tree_fast_tier_bytes(opts, v));
            }
            Arc::new(ralt)
        }
    };
    Ok(Some(Arc::new(HotRap::new(tracker, cache_bytes))))
}

/// The fast-tier size configured for RALT: `HotRapOptions::fast_tier_bytes`, else the
/// fast-tier budget, else `max_bytes_for_level_base`. RALT's decay period and tick derive
/// from it, fixed for the database's life.
fn configured_fast_tier_bytes(opts: &crate::Options) -> u64 {
    opts.hotrap
        .fast_tier_bytes
        .or(opts.fast_tier_budget)
        .unwrap_or(opts.max_bytes_for_level_base)
}

/// The fast-tier size RALT's hot-set bounds follow when none is configured
/// ([`fast_tier_follows_tree`]): what the tree `v`'s fast levels may hold now
/// ([`crate::tier::hot::fast_levels_bytes`]), at least `max_bytes_for_level_base`. L0 counts
/// as what it may hold before a compaction is due (its momentary bytes swing with every flush
/// and compaction); with static level sizing, only levels down to the deepest one in use count
/// (every level has a target there, in use or not); the split forest's levels fill by trees,
/// not by the picker's targets, so only their bytes count.
fn tree_fast_tier_bytes(opts: &crate::Options, v: &Version) -> u64 {
    let popts = super::pick::picker_options(opts);
    let mut sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
    let l0_room = (popts.l0_trigger as u64).saturating_mul(opts.write_buffer_size as u64);
    if let Some(l0) = sizes.first_mut() {
        *l0 = (*l0).max(l0_room);
    }
    let deepest = v.deepest_non_empty();
    let mut last_fast = super::pick::placement(opts).last_fast_level(deepest, deepest);
    let targets = if opts.compaction_style == crate::version::CompactionStyle::SplitForest {
        vec![0; sizes.len()]
    } else {
        if !popts.dynamic {
            last_fast = last_fast.min(deepest.max(1));
        }
        compaction::picker::level_targets(&sizes, &popts).targets
    };
    crate::tier::hot::fast_levels_bytes(&sizes, &targets, last_fast)
        .max(opts.max_bytes_for_level_base)
}

/// Whether RALT's hot-set bounds follow the tree's fast tier as it grows
/// ([`tree_fast_tier_bytes`]): no size is configured, and RALT's options are derived, not
/// given.
fn fast_tier_follows_tree(opts: &crate::Options) -> bool {
    let h = &opts.hotrap;
    h.ralt.is_none()
        && h.tracker.is_none()
        && h.fast_tier_bytes.is_none()
        && opts.fast_tier_budget.is_none()
}

/// Starts family `fam`'s HotRAP thread (RALT upkeep and promotion by flush), if it has HotRAP.
/// It ends with the database or when the family is dropped.
pub(crate) fn start_hot_thread(inner: &Arc<DbInner>, fam: &Arc<Family>) {
    let Some(hot) = fam.hot.clone() else {
        return;
    };
    let (i, f) = (inner.clone(), fam.clone());
    inner.threads.lock().push(
        std::thread::Builder::new()
            .name(format!("strata-hotrap-{}", fam.id))
            .spawn(move || hot_loop(&i, &f, &hot))
            .expect("spawn hotrap thread"),
    );
}

fn hot_loop(inner: &Arc<DbInner>, fam: &Arc<Family>, hot: &Arc<HotRap>) {
    let follows = fast_tier_follows_tree(&fam.opts);
    let mut applied = hot.tracker.stats().fast_tier_bytes;
    let gone =
        || inner.shutting_down.load(Ordering::Acquire) || fam.dropped.load(Ordering::Acquire);
    loop {
        if gone() {
            return;
        }
        if follows {
            let v = fam.super_version().version.clone();
            let now = tree_fast_tier_bytes(&fam.opts, &v);
            if crate::tier::hot::fast_tier_moved(applied, now) {
                hot.tracker.set_fast_tier_bytes(now);
                applied = now;
            }
        }
        if hot.tracker.needs_maintenance() {
            if let Err(e) = hot.tracker.maintain() {
                tracing::warn!(error = %e, "RALT maintenance failed");
            }
        }
        for sealed in hot.cache.sealed() {
            if gone() {
                return;
            }
            if let Err(e) = check_sealed(inner, fam, hot, &sealed) {
                tracing::warn!(error = %e, "promotion by flush failed; records dropped");
                let _st = inner.state.lock();
                hot.cache.retire(&sealed, Vec::new());
            }
        }
        let mut st = inner.state.lock();
        if hot.cache.sealed().is_empty() && !hot.tracker.needs_maintenance() {
            inner.bg_cv.wait_for(&mut st, Duration::from_millis(100));
        }
    }
}

/// Whether a fast table of `v` not in `checked` holds `key` at `seq` or newer (a version, or a
/// range tombstone covering it).
fn newer_on_fast_tier(
    inner: &DbInner,
    v: &Version,
    checked: &HashSet<u64>,
    key: &[u8],
    seq: SeqNo,
) -> Result<bool> {
    let lookup = types::lookup_key(key, types::MAX_SEQ);
    for level in &v.levels {
        for run in &level.runs {
            let Some(f) = run.find(key) else { continue };
            if f.tier != Tier::Fast || checked.contains(&f.id) || f.largest_seq < seq {
                continue;
            }
            let t = inner.tables.get(f)?;
            if t.max_covering_tombstone(key, types::MAX_SEQ) >= seq {
                return Ok(true);
            }
            if t.get(&lookup, key)?.is_some_and(|(s, _, _)| s >= seq) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn fast_ids(v: &Version) -> HashSet<u64> {
    v.all_files()
        .filter(|f| f.tier == Tier::Fast)
        .map(|f| f.id)
        .collect()
}

/// Keeps the records with no newer version in the fast tables of `v` outside `checked`.
fn keep_unshadowed(
    inner: &DbInner,
    v: &Version,
    checked: &HashSet<u64>,
    records: Vec<(Vec<u8>, CachedRecord)>,
) -> Result<Vec<(Vec<u8>, CachedRecord)>> {
    let mut out = Vec::with_capacity(records.len());
    for (k, r) in records {
        if !newer_on_fast_tier(inner, v, checked, &k, r.seq)? {
            out.push((k, r));
        }
    }
    Ok(out)
}

fn bytes_of(records: &[(Vec<u8>, CachedRecord)]) -> usize {
    records.iter().map(|(k, r)| k.len() + r.value.len()).sum()
}

/// Writes `records` into one fast-tier table of family `fam` (not installed).
fn write_promoted(
    inner: &DbInner,
    fam: &Family,
    records: &[(Vec<u8>, CachedRecord)],
) -> Result<FileMeta> {
    let mem = Arc::new(MemTable::new(0));
    for (k, r) in records {
        mem.add(r.seq, ValueKind::Put, k, &r.value);
    }
    let numbers = inner.state.lock().versions.file_numbers();
    let res = write_l0(&mem, &[], &fam.opts, &env(inner, numbers, Tier::Fast))?;
    inner.storage.sync_dir(&inner.dir)?;
    res.outputs
        .into_iter()
        .next()
        .ok_or_else(|| crate::Error::corruption("promotion produced no table"))
}

/// Promotion by flush for one sealed cache.
fn check_sealed(
    inner: &Arc<DbInner>,
    fam: &Family,
    hot: &HotRap,
    sealed: &Arc<SealedPromotion>,
) -> Result<()> {
    let c = &hot.counters;
    let all = sealed.entries();
    let total = all.len() as u64;
    let hot_records: Vec<_> = all
        .into_iter()
        .filter(|(k, _)| hot.tracker.is_hot(k))
        .collect();
    let mut checked = HashSet::new();
    let v = fam.super_version().version.clone();
    let mut survivors = keep_unshadowed(inner, &v, &checked, hot_records)?;
    checked = fast_ids(&v);
    let target = hot.cache.target_bytes();
    'attempt: for _ in 0..4 {
        if survivors.is_empty() || bytes_of(&survivors) * 2 < target {
            let n = survivors.len() as u64;
            let _st = inner.state.lock();
            hot.cache.retire(sealed, survivors);
            c.flush_reinserted.fetch_add(n, Ordering::Relaxed);
            c.flush_dropped.fetch_add(total - n, Ordering::Relaxed);
            return Ok(());
        }
        let meta = write_promoted(inner, fam, &survivors)?;
        // Promoted records are old (logged inline by the floor rule), and a compaction filter
        // may have changed them since the WAL saw them.
        let pinned = super::extended::log_tables(
            inner,
            std::slice::from_ref(&meta),
            inner.opts.rewrites_values(),
        )?;
        for _ in 0..64 {
            let mut st = inner.state.lock();
            if let Err(e) = st.check_live(fam) {
                drop(st);
                let _ = inner.tables.store().remove(meta.id, Tier::Fast);
                return Err(e);
            }
            let v = st.version(fam.id);
            let now = fast_ids(&v);
            if now.is_subset(&checked) {
                if !survivors.iter().all(|(k, r)| sealed.still_holds(k, r.seq)) {
                    // A compaction took some records meanwhile: rewrite without them.
                    drop(st);
                    let _ = inner.tables.store().remove(meta.id, Tier::Fast);
                    survivors.retain(|(k, r)| sealed.still_holds(k, r.seq));
                    continue 'attempt;
                }
                let n = survivors.len() as u64;
                let edit = VersionEdit {
                    added: vec![(0, meta)],
                    wal_pins: pinned.pins(),
                    ..Default::default()
                };
                if let Err(e) = st.versions.log_and_apply(edit.in_family(fam.id)) {
                    // As after a failed flush: the edit may have reached the disk (the table
                    // stays; an orphan is removed at the next open) and writes must stop.
                    super::write::set_bg_error_locked(inner, &mut st, e.clone());
                    hot.cache.retire(sealed, Vec::new());
                    return Err(e);
                }
                inner.install_super_version(fam, &st);
                hot.cache.retire(sealed, Vec::new());
                c.flush_tables.fetch_add(1, Ordering::Relaxed);
                c.promoted_by_flush.fetch_add(n, Ordering::Relaxed);
                c.flush_dropped.fetch_add(total - n, Ordering::Relaxed);
                inner.bg_cv.notify_all();
                return Ok(());
            }
            drop(st);
            let before = survivors.len();
            survivors = keep_unshadowed(inner, &v, &checked, survivors)?;
            checked.extend(now);
            if survivors.len() != before {
                let _ = inner.tables.store().remove(meta.id, Tier::Fast);
                continue 'attempt;
            }
        }
        let _ = inner.tables.store().remove(meta.id, Tier::Fast);
        break;
    }
    // The fast tier kept changing under the Checker: give the records up (they are copies).
    let _st = inner.state.lock();
    hot.cache.retire(sealed, Vec::new());
    c.flush_dropped.fetch_add(total, Ordering::Relaxed);
    Ok(())
}
