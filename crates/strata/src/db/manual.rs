//! Manual compaction (`Db::compact_range`): pushes the data of a key range that was written
//! before the call down to the last level, one level at a time, then rewrites the last level's
//! tables in range when a compaction filter or tombstones can change them. Waits for background
//! compactions holding the tables it needs. Depends on `background` (picking and running jobs);
//! never on the server, CLI or benchmark.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::background::{flush, run_pick};
use super::family::Family;
use super::gc::reap;
use super::pick::{picker_options, tier_now};
use super::{DbInner, DbState};
use crate::compaction::{self, level_targets, CompactionReason, Pick};
use crate::error::{ErrorRepr, Result};
use crate::version::{TableFile, Version};

/// Manual compaction of `[begin, end]` down to the last level.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    fam: &Arc<Family>,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    if fam.opts.compaction_style == crate::version::CompactionStyle::SplitForest {
        return super::forest::compact_all(inner, fam);
    }
    flush(inner, std::slice::from_ref(fam))?;
    // Only data written before the call is pushed down, so a steady write load cannot keep the
    // call busy forever.
    let start_seq = inner.last_seq.load(Ordering::Acquire);
    let n = fam.opts.num_levels;
    // Levels above the last move their data down, one level at a time.
    let popts = picker_options(&fam.opts);
    let mut level = 0;
    while level < n - 1 {
        let mut st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        st.check_live(fam)?;
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(ErrorRepr::Closed.into());
        }
        let v = st.version(fam.id);
        let sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
        let base = level_targets(&sizes, &popts).base_level;
        let mut inputs: Vec<_> = v.levels[level]
            .files()
            .filter(|f| f.overlaps(begin, end) && f.smallest_seq <= start_seq)
            .cloned()
            .collect();
        if level == 0 && !inputs.is_empty() {
            // L0 tables overlap each other: compacting only some of them could leave an older
            // version of a key in L0 above a newer one moved down. Take them all.
            inputs = v.levels[0].files().cloned().collect();
        }
        if inputs.is_empty() {
            level += 1;
            continue;
        }
        let output = if level == 0 { base } else { level + 1 };
        match manual_pick(fam, &st, &v, level, inputs, output) {
            Some(p) => {
                run_pick(inner, fam, st, p)?;
                reap(inner);
                // Stay on this level until nothing in range remains.
            }
            None => {
                // Files are busy with a background compaction: wait for it.
                inner.bg_cv.wait_for(&mut st, Duration::from_millis(20));
            }
        }
    }
    // Rewrite the last level in range too when that can change it (RocksDB's
    // `kIfHaveCompactionFilter`, plus tables holding tombstones, whose space is reclaimed there).
    let last = n - 1;
    loop {
        let mut st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        st.check_live(fam)?;
        let v = st.version(fam.id);
        let inputs: Vec<_> = v.levels[last]
            .files()
            .filter(|f| f.overlaps(begin, end))
            .cloned()
            .collect();
        let worth = inner.opts.rewrites_values()
            || inputs
                .iter()
                .any(|f| f.num_deletions > 0 || f.num_range_deletions > 0);
        if inputs.is_empty() || !worth {
            return Ok(());
        }
        match manual_pick(fam, &st, &v, last, inputs, last) {
            Some(p) => {
                run_pick(inner, fam, st, p)?;
                reap(inner);
                return Ok(());
            }
            None => {
                inner.bg_cv.wait_for(&mut st, Duration::from_millis(20));
            }
        }
    }
}

/// A manual compaction of `inputs` (in `level`) into `output`, unless tables it needs are busy.
fn manual_pick(
    fam: &Family,
    st: &DbState,
    v: &Version,
    level: usize,
    inputs: Vec<Arc<TableFile>>,
    output: usize,
) -> Option<Pick> {
    let writing = st.writing_of(fam.id);
    compaction::picker::pick_for(
        v,
        &st.busy,
        &writing,
        tier_now(fam, st, output),
        level,
        inputs,
        output,
        CompactionReason::Manual,
        f64::MAX,
    )
}
