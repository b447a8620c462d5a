//! Runs split-forest merges (SifrDB) for the background threads and manual compaction, and
//! installs their checkpoints: each checkpoint is one manifest edit — the compaction journal —
//! that adds the outputs so far to the new tree, deletes the inputs the merge has passed (early
//! cleaning: their files go as soon as no reader holds a version naming them) and records the
//! cut on the input trees that remain, so that reads of keys below the cut go to the new tree
//! and a restart resumes the merge at the cut (`CompactionReason::JournalResume`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::background::{
    count_compaction, env, hot_job_parts, hot_setup, release_compacting, table_options, JobSlot,
};
use super::family::Family;
use super::gc::reap;
use super::write::set_bg_error;
use super::{DbInner, DbState};
use crate::compaction::forest::{level_merge, Checkpoint};
use crate::compaction::{CompactionInput, CompactionJob, CompactionReason, ForestMerge, Pick};
use crate::error::{ErrorRepr, Result};
use crate::version::VersionEdit;

/// What a running merge has installed so far.
struct Journal {
    /// Input tables not yet deleted, per input tree `(level, run)`.
    remaining: HashMap<(usize, u64), HashSet<u64>>,
    /// Output tables installed by checkpoints (kept busy until the merge ends).
    installed: Vec<u64>,
}

/// Runs a split-forest merge picked under the lock `st`, installing checkpoints as it goes
/// and the rest at the end.
pub(crate) fn run_forest_pick(
    inner: &Arc<DbInner>,
    fam: &Family,
    mut st: MutexGuard<'_, DbState>,
    pick: Pick,
) -> Result<()> {
    let fp = pick.forest.clone().expect("a split-forest pick");
    let out = pick.output_level;
    let tier = pick.output_tier;
    let slot = JobSlot::take(inner, fam, &mut st, &pick);
    let hot = hot_setup(inner, fam, &st, &pick);
    // The new tree: a fresh number is larger than every run id of the output level, so it
    // sorts newest there (its data is newer than the level's other trees).
    let out_run = match fp.output_run {
        // A resumed merge goes on writing into its tree: trees merged into the level since
        // then hold newer data and must keep sorting before it.
        Some(run) => run,
        None => st.versions.new_file_number(),
    };
    let numbers = st.versions.file_numbers();
    drop(st);
    let _ = hot_job_parts(fam, hot);
    let level_of: HashMap<u64, (usize, u64)> = pick
        .inputs
        .iter()
        .zip(&fp.runs)
        .flat_map(|((l, fs), run)| fs.iter().map(move |f| (f.id, (*l, *run))))
        .collect();
    let mut remaining: HashMap<(usize, u64), HashSet<u64>> = HashMap::new();
    for (id, key) in &level_of {
        remaining.entry(*key).or_default().insert(*id);
    }
    let journal = Mutex::new(Journal {
        remaining,
        installed: Vec::new(),
    });
    let from_l0 = pick.inputs.iter().any(|(l, _)| *l == 0);
    let job = CompactionJob {
        id: inner.next_job_id.fetch_add(1, Ordering::Relaxed),
        reason: pick.reason,
        inputs: pick
            .inputs
            .iter()
            .zip(&fp.runs)
            .map(|((l, fs), run)| CompactionInput {
                level: *l,
                files: fs.iter().map(|f| f.meta.clone()).collect(),
                run: *run,
            })
            .collect(),
        output_level: out,
        output_tier: tier,
        route: None,
        promoted: Vec::new(),
        forest: Some(ForestMerge {
            resume_from: fp.resume_from.clone(),
            // L0's tables are one-table runs without ids to cut; an L0 merge is small.
            cleaning_threshold: if from_l0 {
                0
            } else {
                inner.opts.forest.cleaning_threshold
            },
        }),
        snapshots: inner.snapshots.sequences(),
        bottommost: pick.bottommost,
        target_file_size: fam.opts.target_file_size_base,
        table: table_options(&fam.opts, out),
        score: pick.score,
        filter: inner.opts.compaction_filter.as_ref().and_then(|f| f.spec()),
        merge_operator: super::background::merge_name(&inner.opts),
        output_ids: None,
    };
    if pick.reason == CompactionReason::JournalResume {
        inner.stats.forest.resumes.fetch_add(1, Ordering::Relaxed);
    }
    let manifest_failed: Mutex<Option<crate::Error>> = Mutex::new(None);
    let checkpoint = |c: Checkpoint| -> Result<()> {
        // New tables' directory entries must be durable before the manifest names them.
        inner.storage.sync_dir(&inner.dir)?;
        let filtered = inner.opts.rewrites_values();
        let pinned = super::extended::log_tables(inner, &c.outputs, filtered)?;
        let mut j = journal.lock();
        let mut st = inner.state.lock();
        let mut edit = VersionEdit {
            wal_pins: pinned.pins(),
            ..Default::default()
        };
        for id in &c.consumed {
            let (l, run) = level_of[id];
            edit.deleted.push((l as u32, *id));
            if let Some(r) = j.remaining.get_mut(&(l, run)) {
                r.remove(id);
            }
        }
        edit.added_to_run = c
            .outputs
            .iter()
            .map(|f| (out as u32, out_run, f.clone()))
            .collect();
        for ((l, run), rest) in &j.remaining {
            if *l > 0 && !rest.is_empty() {
                edit.run_cuts
                    .push((*l as u32, *run, c.cut.clone(), out_run));
            }
        }
        if let Err(e) = st.versions.log_and_apply(edit.in_family(fam.id)) {
            *manifest_failed.lock() = Some(e.clone());
            return Err(e);
        }
        for f in &c.outputs {
            st.busy.insert(f.id);
            j.installed.push(f.id);
        }
        inner.install_super_version(fam, &st);
        let fc = &inner.stats.forest;
        fc.checkpoints.fetch_add(1, Ordering::Relaxed);
        fc.early_cleaned_bytes
            .fetch_add(c.cleaned_bytes, Ordering::Relaxed);
        drop(st);
        drop(j);
        reap(inner);
        Ok(())
    };
    let start = Instant::now();
    let mut e = env(inner, numbers, tier);
    e.checkpoint = Some(&checkpoint);
    // The merge's reads and uploads wait for the request budget; its checkpoints, which take
    // the state lock, do not (they reap, and reaping never waits).
    let _budget = crate::storage::object::budget_scope(true);
    let result =
        inner
            .runner
            .run(&job, &e)
            .and_then(|r| match inner.storage.sync_dir(&inner.dir) {
                Ok(()) => Ok(r),
                Err(err) => {
                    for f in &r.outputs {
                        if !level_of.contains_key(&f.id) {
                            let _ = inner.tables.store().remove(f.id, f.tier);
                        }
                    }
                    Err(err)
                }
            });
    drop((e, _budget));
    let j = journal.into_inner();
    // Key lists of the outputs no checkpoint installed.
    let mut pinned = super::extended::Pinned::none();
    let result = result.and_then(|r| {
        let fresh: Vec<_> = r
            .outputs
            .iter()
            .filter(|f| !j.installed.contains(&f.id))
            .cloned()
            .collect();
        pinned = super::extended::log_tables(inner, &fresh, inner.opts.rewrites_values())?;
        Ok(r)
    });
    let mut st = inner.state.lock();
    let installed = result.and_then(|r| {
        let mut edit = VersionEdit {
            wal_pins: pinned.pins(),
            ..Default::default()
        };
        for ((l, _), rest) in &j.remaining {
            for id in rest {
                edit.deleted.push((*l as u32, *id));
            }
        }
        edit.added_to_run = r
            .outputs
            .iter()
            .map(|f| (out as u32, out_run, f.clone()))
            .collect();
        st.versions
            .log_and_apply(edit.in_family(fam.id))
            .inspect_err(|e| *manifest_failed.lock() = Some(e.clone()))
            .map(|_| r)
    });
    if installed.is_err() {
        release_compacting(&pick);
    }
    drop(pick);
    if let Ok(r) = &installed {
        inner.install_super_version(fam, &st);
        count_compaction(inner, out, r.read_bytes, r.write_bytes, start);
        inner.stats.levels[out]
            .trivial_moves
            .fetch_add(r.moved_tables, Ordering::Relaxed);
        let fc = &inner.stats.forest;
        fc.merges.fetch_add(1, Ordering::Relaxed);
        fc.moved_tables.fetch_add(r.moved_tables, Ordering::Relaxed);
        fc.moved_bytes.fetch_add(r.moved_bytes, Ordering::Relaxed);
        inner
            .stats
            .compaction_peak_extra_bytes
            .fetch_max(r.peak_extra_bytes, Ordering::Relaxed);
    }
    slot.release(inner, fam, &mut st, &j.installed);
    drop(st);
    if let Some(e) = manifest_failed.into_inner() {
        set_bg_error(inner, e);
    }
    reap(inner);
    installed.map(|_| ())
}

/// Manual compaction under the split forest: every level's trees are merged into the next
/// level, top down, and the last level's trees into one (when there are several, or a
/// compaction filter or deletions could shrink it). Key bounds are not used: a forest merge
/// takes whole trees.
pub(crate) fn compact_all(inner: &Arc<DbInner>, fam: &Arc<Family>) -> Result<()> {
    super::background::flush(inner, std::slice::from_ref(fam))?;
    let n = fam.opts.num_levels;
    for level in 0..n {
        loop {
            let mut st = inner.state.lock();
            if let Some(e) = &st.bg_error {
                return Err(e.clone());
            }
            st.check_live(fam)?;
            if inner.shutting_down.load(Ordering::Acquire) {
                return Err(ErrorRepr::Closed.into());
            }
            let v = st.version(fam.id);
            let l = &v.levels[level];
            if l.is_empty() {
                break;
            }
            if level + 1 == n {
                let worth = inner.opts.rewrites_values()
                    || l.runs.len() > 1
                    || l.files()
                        .any(|f| f.num_deletions > 0 || f.num_range_deletions > 0);
                if !worth {
                    break;
                }
            }
            let pick = super::pick::with_picker_input(inner, fam, &st, None, |input| {
                level_merge(input, level)
            });
            match pick {
                Some(p) => {
                    run_forest_pick(inner, fam, st, p)?;
                    if level + 1 == n {
                        break;
                    }
                }
                None => {
                    // Busy with a background merge (or one to resume): wait for it.
                    inner.bg_cv.notify_all();
                    inner.bg_cv.wait_for(&mut st, Duration::from_millis(20));
                }
            }
        }
    }
    Ok(())
}
