//! Leveled compaction picking, as RocksDB does it: an L0 file-count score, level size scores
//! against targets (optionally derived from the last level's size, `dynamic_level_bytes`), the
//! file with the smallest overlap ratio with the next level, and trivial moves when a file
//! overlaps nothing below. With HotRAP (§3.5) the last fast level is scored and picked
//! hot-aware: hot bytes stay behind when its tables are compacted into the capacity tier, so
//! they count neither towards the level's size nor as a table's benefit. Tables left on the
//! wrong tier by a placement change are rewritten last (`CompactionReason::TierChange`).
//! Pure functions over a read-only [`PickerInput`].

use std::collections::HashSet;
use std::sync::Arc;

use crate::tier::Tier;
use crate::version::{TableFile, Version};

use super::job::CompactionReason;
use super::policy::PickerInput;

/// The options the picker reads.
#[derive(Clone, Debug, PartialEq)]
pub struct PickerOptions {
    /// L0 tables that make L0 due for compaction (`level0_file_num_compaction_trigger`).
    pub l0_trigger: usize,
    /// Target bytes of the base level (`max_bytes_for_level_base`).
    pub base_bytes: u64,
    /// Ratio of a level's target to the one above (`max_bytes_for_level_multiplier`).
    pub multiplier: f64,
    /// Derive level targets from the largest level's size (`level_compaction_dynamic_level_bytes`);
    /// otherwise L1's target is `base_bytes`, multiplied by `multiplier` per level down.
    pub dynamic: bool,
    /// The deepest level L0 may compact into (placement keeps the base level on the fast
    /// tier; see [`crate::tier::Placement::max_base_level`]).
    pub max_base_level: usize,
    /// The shallowest level L0 should compact into: levels above it drain downwards (LogStore
    /// keeps one sized fast level, as its paper's L0 + L1, so that the coldest fast tables
    /// are always where eviction to the capacity tier takes them from). 1: no constraint.
    pub min_base_level: usize,
}

/// Level sizing: which level L0 compacts into and each level's target size (0: unused).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelTargets {
    /// The level L0 compacts into.
    pub base_level: usize,
    /// Each level's target size in bytes, indexed by level (0 for L0 and for levels to drain).
    pub targets: Vec<u64>,
}

/// Computes level targets from the level sizes (`sizes[0]` is L0's, ignored).
pub fn level_targets(sizes: &[u64], o: &PickerOptions) -> LevelTargets {
    let n = sizes.len();
    let last = n - 1;
    let mut targets = vec![0u64; n];
    if !o.dynamic {
        let mut t = o.base_bytes as f64;
        for target in targets.iter_mut().skip(1) {
            *target = t as u64;
            t *= o.multiplier;
        }
        return LevelTargets {
            base_level: 1,
            targets,
        };
    }
    let max_size = sizes[1..].iter().copied().max().unwrap_or(0);
    let mut cur = max_size as f64;
    let mut base_level = last;
    while base_level > 1 && cur > o.base_bytes as f64 {
        cur /= o.multiplier;
        base_level -= 1;
    }
    let min_base = o.min_base_level.clamp(1, o.max_base_level.max(1));
    base_level = base_level.max(min_base);
    // L0 must never compact past a non-empty level (newer data would land below older data):
    // levels above the computed base that still hold data join the sized levels (and drain
    // downwards once they pass their target).
    if let Some(first) = (1..n).find(|&l| sizes[l] > 0) {
        base_level = base_level.min(first);
    }
    base_level = base_level.min(o.max_base_level.max(1));
    // No level's target falls below `base_bytes` (RocksDB's rule): otherwise the base level
    // of a small tree gets a tiny target, and every few flushes its one wide table is merged
    // into the whole last level (write amplification of ~10 per L0 compaction).
    let mut t = max_size.max(o.base_bytes) as f64;
    for l in (base_level..=last).rev() {
        targets[l] = (t as u64).max(o.base_bytes).max(1);
        t /= o.multiplier;
    }
    // Levels above the minimum base level hold data only until it drains (target 0).
    for target in targets.iter_mut().take(min_base).skip(base_level) {
        *target = 0;
    }
    LevelTargets {
        base_level,
        targets,
    }
}

/// A compaction chosen by the picker.
#[derive(Clone)]
pub struct Pick {
    /// Why the compaction runs.
    pub reason: CompactionReason,
    /// Urgency, 1 or more when due: a level's bytes over its target, or L0's tables (a split
    /// forest level's trees) over the trigger; LogStore's picks: read cost over merge cost.
    /// `f64::MAX` for a level to drain or a resumed merge; 0 for a tier change.
    pub score: f64,
    /// `(level, files)`, newest level first; L0 files newest first.
    pub inputs: Vec<(usize, Vec<Arc<TableFile>>)>,
    /// The level the outputs go to (the input level itself for a rewrite in place).
    pub output_level: usize,
    /// Where the outputs go (placement's decision when the pick was made).
    pub output_tier: Tier,
    /// One input table that overlaps nothing in the output level: move it, do not rewrite it.
    pub trivial_move: bool,
    /// No level below the output level holds keys in the inputs' range.
    pub bottommost: bool,
    /// The sorted run of the output level the outputs join (0: L0 or a leveled level; a
    /// split-forest tree's id when a table is rewritten in place).
    pub output_run: u64,
    /// A split-forest merge: `inputs` are whole trees, newest first.
    pub forest: Option<ForestPick>,
}

/// The split-forest part of a [`Pick`].
#[derive(Clone, Debug, PartialEq)]
pub struct ForestPick {
    /// The run id of each entry of `Pick::inputs`.
    pub runs: Vec<u64>,
    /// The merge was interrupted (the inputs carry this cut): resume it here...
    pub resume_from: Option<Vec<u8>>,
    /// ... writing into this run of the output level (the interrupted merge's); `None`: a
    /// new tree.
    pub output_run: Option<u64>,
}

impl std::fmt::Debug for Pick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<(usize, Vec<u64>)> = self
            .inputs
            .iter()
            .map(|(l, fs)| (*l, fs.iter().map(|f| f.id).collect()))
            .collect();
        f.debug_struct("Pick")
            .field("reason", &self.reason)
            .field("score", &self.score)
            .field("inputs", &ids)
            .field("output_level", &self.output_level)
            .field("output_tier", &self.output_tier)
            .field("trivial_move", &self.trivial_move)
            .field("bottommost", &self.bottommost)
            .field("output_run", &self.output_run)
            .field("forest", &self.forest)
            .finish()
    }
}

pub(crate) fn key_range(files: &[Arc<TableFile>]) -> (Vec<u8>, Vec<u8>) {
    let lo = files
        .iter()
        .map(|f| &f.smallest)
        .min()
        .cloned()
        .unwrap_or_default();
    let hi = files
        .iter()
        .map(|f| &f.largest)
        .max()
        .cloned()
        .unwrap_or_default();
    (lo, hi)
}

pub(crate) fn next_level_files(
    v: &Version,
    level: usize,
    lo: &[u8],
    hi: &[u8],
) -> Vec<Arc<TableFile>> {
    v.levels[level]
        .runs
        .iter()
        .flat_map(|r| r.overlapping(Some(lo), Some(hi)).iter().cloned())
        .collect()
}

/// Whether no level below `output` holds keys in `[lo, hi]`.
pub fn is_bottommost(v: &Version, output: usize, lo: &[u8], hi: &[u8]) -> bool {
    v.levels[output + 1..].iter().all(|l| {
        l.runs
            .iter()
            .all(|r| r.overlapping(Some(lo), Some(hi)).is_empty())
    })
}

/// A key range a running job writes into a level. Two jobs must never write overlapping
/// ranges into one level: their outputs would overlap there. Leveled compaction alone never
/// does (each level is written by the level above), but LogStore's reverse and staging
/// compactions write into a level from elsewhere, so every pick checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writing {
    /// The level written into.
    pub level: usize,
    /// The smallest user key of the range.
    pub lo: Vec<u8>,
    /// The largest user key of the range (included).
    pub hi: Vec<u8>,
}

/// Whether a running job writes keys of `[lo, hi]` into `level`.
pub fn writing_into(writing: &[Writing], level: usize, lo: &[u8], hi: &[u8]) -> bool {
    writing
        .iter()
        .any(|w| w.level == level && w.lo.as_slice() <= hi && lo <= w.hi.as_slice())
}

/// Builds the pick compacting `inputs` of `level` into `output`, or `None` if a needed file is
/// busy or a running job writes into the output range. The output tier is placement's (see
/// [`PickerInput::tier_for`]).
#[allow(clippy::too_many_arguments)]
pub fn pick_for(
    v: &Version,
    busy: &HashSet<u64>,
    writing: &[Writing],
    output_tier: Tier,
    level: usize,
    inputs: Vec<Arc<TableFile>>,
    output: usize,
    reason: CompactionReason,
    score: f64,
) -> Option<Pick> {
    if inputs.is_empty() || inputs.iter().any(|f| busy.contains(&f.id)) {
        return None;
    }
    let (lo, hi) = key_range(&inputs);
    let next = if output == level {
        Vec::new()
    } else {
        next_level_files(v, output, &lo, &hi)
    };
    if next.iter().any(|f| busy.contains(&f.id)) {
        return None;
    }
    let mut all = inputs.clone();
    all.extend(next.iter().cloned());
    let (alo, ahi) = key_range(&all);
    if writing_into(writing, output, &alo, &ahi) {
        return None;
    }
    let bottommost = is_bottommost(v, output, &alo, &ahi);
    let trivial_move = inputs.len() == 1 && next.is_empty() && output != level;
    let mut ins = vec![(level, inputs)];
    if !next.is_empty() {
        ins.push((output, next));
    }
    Some(Pick {
        reason,
        score,
        inputs: ins,
        output_level: output,
        output_tier,
        trivial_move,
        bottommost,
        output_run: 0,
        forest: None,
    })
}

/// The hot bytes of `f` (HotRAP's estimate), at most its size.
fn hot_of(input: &PickerInput<'_>, f: &TableFile) -> u64 {
    input.hot_bytes.get(&f.id).copied().unwrap_or(0).min(f.size)
}

/// Picks the most urgent compaction, if any level's score is at least 1; otherwise a table
/// placement wants on the other tier.
pub fn pick_compaction(input: &PickerInput<'_>) -> Option<Pick> {
    pick_by_score(input).or_else(|| pick_misplaced(input))
}

/// The most urgent compaction by level scores, if any score is at least 1.
///
/// With LogStore temperatures in the input: the level shedding data into the capacity tier
/// gives up its coldest table (informed compaction, §V-A), and while compaction is deferred
/// (§V-C) neither L0 nor the fast levels below it compact at all — the fast tier buffers the
/// burst's tables, overlapping, as the paper's "no compaction between Level-0 and Level-1"
/// — until the fast tier holds the deferral limit.
pub fn pick_by_score(input: &PickerInput<'_>) -> Option<Pick> {
    let (v, busy, o) = (input.version, input.busy, input.options);
    let n = v.num_levels();
    let sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
    let lt = level_targets(&sizes, o);
    let hot_level = input.hot_aware_level();
    let deferring = input
        .temperature
        .filter(|t| t.deferring && v.fast_bytes() + input.running_fast_bytes < t.defer_fast_bytes);
    let mut scored: Vec<(f64, usize)> = Vec::new();
    let l0: Vec<Arc<TableFile>> = v.levels[0].files().cloned().collect();
    if deferring.is_none() && !l0.iter().any(|f| busy.contains(&f.id)) {
        scored.push((l0.len() as f64 / o.l0_trigger as f64, 0));
    }
    for l in 1..n - 1 {
        if deferring.is_some() && l >= lt.base_level && input.level_tier(l) == Tier::Fast {
            // Deferred: the fast levels absorb the burst, unsized.
            continue;
        }
        let mut not_busy: u64 = v.levels[l]
            .files()
            .filter(|f| !busy.contains(&f.id))
            .map(|f| f.size)
            .sum();
        if hot_level == Some(l) {
            // Hot records are retained on this level: they do not make it overfull.
            let hot: u64 = v.levels[l]
                .files()
                .filter(|f| !busy.contains(&f.id))
                .map(|f| hot_of(input, f))
                .sum();
            not_busy = not_busy.saturating_sub(hot);
        }
        if not_busy == 0 {
            continue;
        }
        let mut score = if l < lt.base_level || lt.targets[l] == 0 {
            // Levels above the base level should be empty: drain them.
            f64::MAX
        } else {
            not_busy as f64 / lt.targets[l] as f64
        };
        if let Some(budget) = informed_level(input, l).and_then(|t| t.fast_budget) {
            // LogStore keeps the fast-tier budget by evicting the coldest tables of the level
            // shedding into the capacity tier (hot bytes HotRAP retains are not evictable).
            let fast = v.fast_bytes() + input.running_fast_bytes;
            if fast > budget {
                score = score.max(fast as f64 / budget.max(1) as f64);
            }
        }
        scored.push((score, l));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (score, level) in scored {
        if score < 1.0 {
            break;
        }
        if level == 0 {
            let out = lt.base_level;
            if let Some(p) = pick_for(
                v,
                busy,
                input.writing,
                input.tier_for(out),
                0,
                l0.clone(),
                out,
                CompactionReason::L0FileCount,
                score,
            )
            .filter(|p| !input.waits_for_capacity(p))
            {
                return Some(p);
            }
            continue;
        }
        let f = if let Some(t) = informed_level(input, level) {
            pick_coldest(input, t, level)
        } else if hot_level == Some(level) {
            pick_hot_aware(input, level)
        } else {
            pick_min_overlap(v, busy, level)
        };
        if let Some(f) = f {
            if let Some(p) = pick_for(
                v,
                busy,
                input.writing,
                input.tier_for(level + 1),
                level,
                vec![f],
                level + 1,
                CompactionReason::LevelSize,
                score,
            )
            .filter(|p| !input.waits_for_capacity(p))
            {
                return Some(p);
            }
        }
    }
    None
}

/// LogStore's temperatures, if `level` is the one whose compactions move data from the fast
/// tier into the capacity tier (the level informed compaction picks in).
fn informed_level<'a>(
    input: &PickerInput<'a>,
    level: usize,
) -> Option<&'a crate::tier::temperature::TemperatureSnapshot> {
    let t = input.temperature?;
    (input.placement.has_capacity
        && input.level_tier(level) == Tier::Fast
        && input.tier_for(level + 1) == Tier::Capacity)
        .then_some(t)
}

/// The tables of `level` a compaction into the next level may take (neither they nor their
/// overlapping tables below are busy), each with the bytes it overlaps below.
fn movable<'a>(
    v: &'a Version,
    busy: &'a HashSet<u64>,
    level: usize,
) -> impl Iterator<Item = (&'a Arc<TableFile>, u64)> + 'a {
    v.levels[level].files().filter_map(move |f| {
        if busy.contains(&f.id) {
            return None;
        }
        let next = next_level_files(v, level + 1, &f.smallest, &f.largest);
        if next.iter().any(|g| busy.contains(&g.id)) {
            return None;
        }
        Some((f, next.iter().map(|g| g.size).sum()))
    })
}

/// LogStore §V-A: the coldest table of `level` (by the short-term count). Ties (tables never read, most often) go to
/// the smallest overlap ratio. With HotRAP scoring the level, tables whose records are all hot
/// are skipped (HotRAP would retain every record: the job would move nothing and the level
/// would stay over its target), and ties go to HotRAP's benefit; when every table is all hot,
/// HotRAP's own choice stands.
fn pick_coldest(
    input: &PickerInput<'_>,
    t: &crate::tier::temperature::TemperatureSnapshot,
    level: usize,
) -> Option<Arc<TableFile>> {
    let (v, busy) = (input.version, input.busy);
    let hot_aware = input.hot_aware_level() == Some(level);
    // (temperature, tie-break: lower is better, table)
    let mut best: Option<(f64, f64, Arc<TableFile>)> = None;
    for (f, overlap) in movable(v, busy, level) {
        let tie = if hot_aware {
            let benefit = f.size - hot_of(input, f);
            if benefit == 0 {
                continue;
            }
            // The negated benefit per overlapping byte (HotRAP §3.5).
            -(benefit as f64 / overlap.max(1) as f64)
        } else {
            overlap as f64 / f.size.max(1) as f64
        };
        // The short-term count, as reverse compaction compares: the table evicted is the one
        // read least lately (a range that just came up is not sent back for its short history).
        let temp = t.rate(f.id);
        let better = best
            .as_ref()
            .is_none_or(|(bt, btie, _)| temp < *bt || (temp == *bt && tie < *btie));
        if better {
            best = Some((temp, tie, f.clone()));
        }
    }
    match best {
        Some((_, _, f)) => Some(f),
        None if hot_aware => pick_hot_aware(input, level),
        None => None,
    }
}

/// The table of `level` with the smallest overlap ratio with the next level (RocksDB's
/// `kMinOverlappingRatio`).
fn pick_min_overlap(v: &Version, busy: &HashSet<u64>, level: usize) -> Option<Arc<TableFile>> {
    let mut best: Option<(f64, Arc<TableFile>)> = None;
    for (f, overlap) in movable(v, busy, level) {
        let ratio = overlap as f64 / f.size.max(1) as f64;
        if best.as_ref().is_none_or(|(r, _)| ratio < *r) {
            best = Some((ratio, f.clone()));
        }
    }
    best.map(|(_, f)| f)
}

/// HotRAP §3.5: the table with the largest (size − hot size) / overlapping bytes below; when
/// every benefit is zero (all hot, or the estimate overshoots), the oldest table.
fn pick_hot_aware(input: &PickerInput<'_>, level: usize) -> Option<Arc<TableFile>> {
    let (v, busy) = (input.version, input.busy);
    let mut best: Option<(f64, Arc<TableFile>)> = None;
    let mut oldest: Option<Arc<TableFile>> = None;
    for (f, overlap) in movable(v, busy, level) {
        if oldest
            .as_ref()
            .is_none_or(|o| f.largest_seq < o.largest_seq)
        {
            oldest = Some(f.clone());
        }
        let benefit = f.size - hot_of(input, f);
        if benefit == 0 {
            continue;
        }
        let score = benefit as f64 / overlap.max(1) as f64;
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, f.clone()));
        }
    }
    best.map(|(_, f)| f).or(oldest)
}

/// A table on the tier placement no longer wants for its level (after the bottom moved, or
/// the options changed): rewritten in place, onto the right tier.
pub(crate) fn pick_misplaced(input: &PickerInput<'_>) -> Option<Pick> {
    let v = input.version;
    for l in 1..v.num_levels() {
        let want = input.level_tier(l);
        for f in v.levels[l].files() {
            // Tables a fast-tier budget spilled stay where they are while a budget is set (or
            // they would move back and forth across its edge).
            let misplaced = match (f.tier, want) {
                (Tier::Fast, Tier::Capacity) => true,
                (Tier::Capacity, Tier::Fast) => input.placement.fast_budget.is_none(),
                _ => false,
            };
            if !misplaced || input.busy.contains(&f.id) {
                continue;
            }
            if let Some(p) = pick_for(
                v,
                input.busy,
                input.writing,
                want,
                l,
                vec![f.clone()],
                l,
                CompactionReason::TierChange,
                0.0,
            )
            .filter(|p| !input.waits_for_capacity(p))
            {
                return Some(p);
            }
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod tests;
