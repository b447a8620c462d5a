//! The picker's view of the database: level sizing and placement from the options, the input
//! a compaction policy reads (the version, running jobs, HotRAP's hot bytes, LogStore's
//! temperatures, the capacity tier's health), and the next pick. Everything here reads state
//! under the `state` lock and decides nothing itself: the decisions are the pure policies of
//! `compaction`. Depends on `compaction`, `tier`, `version`; never on the write path.

use std::collections::{HashMap, HashSet};

use super::family::Family;
use super::{DbInner, DbState};
use crate::compaction::{self, Pick, PickerInput, PickerOptions};
use crate::tier::{tier_for_level, Placement, Tier};

pub(crate) fn picker_options(o: &crate::Options) -> PickerOptions {
    let pl = placement(o);
    // LogStore over relative, dynamic placement: one sized fast level (L0 compacts straight
    // into the last fast level), as LogStore's L0 + L1.
    let one_fast_level = o.placement_policy == crate::tier::PlacementPolicy::LogStore
        && pl.has_capacity
        && pl.fast_levels.is_none()
        && pl.dynamic;
    PickerOptions {
        l0_trigger: o.level0_file_num_compaction_trigger,
        base_bytes: o.max_bytes_for_level_base,
        multiplier: o.max_bytes_for_level_multiplier,
        dynamic: o.level_compaction_dynamic_level_bytes,
        max_base_level: pl.max_base_level(),
        min_base_level: if one_fast_level {
            pl.max_base_level()
        } else {
            1
        },
    }
}

/// HotRAP's hot-byte estimates for the tables of the level compacting into the capacity tier.
fn hot_bytes(fam: &Family, input: &PickerInput<'_>) -> HashMap<u64, u64> {
    let (Some(hot), Some(level)) = (&fam.hot, input.hot_aware_level()) else {
        return HashMap::new();
    };
    input.version.levels[level]
        .files()
        .map(|f| {
            let b = hot.tracker.hot_bytes_in_range(&f.smallest, &f.largest);
            (f.id, b)
        })
        .collect()
}

/// Whether the capacity tier is down now (its health as requests see it; probed while down).
pub(crate) fn capacity_down(inner: &DbInner) -> bool {
    inner
        .tables
        .store()
        .capacity()
        .is_some_and(|c| c.stats().health.is_down())
}

/// The tier placement gives tables written into `level` now.
pub(crate) fn tier_now(fam: &Family, st: &DbState, level: usize) -> Tier {
    let v = st.version(fam.id);
    tier_for_level(
        &placement(&fam.opts),
        level,
        v.deepest_non_empty(),
        v.fast_bytes() + st.running_fast_bytes,
    )
}

/// Calls `f` with the picker's view of `st`: the current version, the running jobs' tables
/// and write ranges (or `busy` in their place, with no ranges: an empty set asks whether any
/// work is due at all), HotRAP's hot bytes and LogStore's temperatures where they apply, and
/// the capacity tier's health.
pub(crate) fn with_picker_input<T>(
    inner: &DbInner,
    fam: &Family,
    st: &DbState,
    busy: Option<&HashSet<u64>>,
    f: impl FnOnce(&PickerInput<'_>) -> T,
) -> T {
    let v = st.version(fam.id);
    let popts = picker_options(&fam.opts);
    let pl = placement(&fam.opts);
    let empty = HashMap::new();
    let writing: Vec<compaction::picker::Writing> = match busy {
        Some(_) => Vec::new(),
        None => st.writing_of(fam.id),
    };
    let mut input = PickerInput {
        version: &v,
        busy: busy.unwrap_or(&st.busy),
        options: &popts,
        placement: &pl,
        running_fast_bytes: st.running_fast_bytes,
        hot_bytes: &empty,
        // The split-forest policy does not score hotness: skip RALT's range sums under the lock.
        hot_aware: fam.hot.is_some()
            && fam.opts.compaction_style == crate::version::CompactionStyle::Leveled,
        temperature: None,
        writing: &writing,
        capacity_down: capacity_down(inner),
    };
    let hb = hot_bytes(fam, &input);
    input.hot_bytes = &hb;
    let temps = fam
        .logstore
        .as_ref()
        .map(|ls| super::temperature::snapshot(&fam.opts, ls, &v));
    input.temperature = temps.as_ref();
    f(&input)
}

/// Asks the policy for the next compaction over the current version. `busy` replaces the
/// running jobs' tables (an empty set asks whether any work is due at all).
pub(crate) fn pick_next(
    inner: &DbInner,
    fam: &Family,
    st: &DbState,
    busy: Option<&HashSet<u64>>,
) -> Option<Pick> {
    with_picker_input(inner, fam, st, busy, |input| {
        // The policies pass over what waits for a capacity tier that is down and pick the
        // fast tier's own work; this is the backstop (such a pick waits, instead of failing
        // and backing off).
        let ready = |p: &Pick| !input.waits_for_capacity(p);
        fam.policy.pick(input).filter(ready).or_else(|| match busy {
            // Lowest priority: the extended WAL's TTL push-down.
            None => super::extended::ttl_pick(inner, fam, st, input.version).filter(ready),
            Some(_) => None,
        })
    })
}

/// Level placement. Under LogStore the fast-tier budget does not spill new tables of the
/// last fast level to the capacity tier (that would send the newest data down): LogStore
/// evicts the coldest tables instead (see `compaction::picker::pick_by_score`).
pub(crate) fn placement(o: &crate::Options) -> Placement {
    let logstore = o.placement_policy == crate::tier::PlacementPolicy::LogStore;
    Placement {
        has_capacity: o.capacity.is_some(),
        fast_levels: o.fast_levels,
        capacity_levels: o.capacity_levels,
        num_levels: o.num_levels,
        dynamic: o.level_compaction_dynamic_level_bytes,
        fast_budget: if logstore { None } else { o.fast_tier_budget },
    }
}
