//! LogStore's compaction decisions (§V), as a [`CompactionPolicy`] over leveled compaction.
//!
//! In order of urgency:
//! 1. **Level scores**, as leveled compaction computes them, with two LogStore changes made in
//!    [`super::picker::pick_by_score`]: *informed compaction* (§V-A: the level shedding data
//!    into the capacity tier gives up its coldest table) and *deferred compaction* (§V-C:
//!    while reads are rare, neither L0 nor the fast levels compact — the fast tier buffers
//!    the burst — until the fast tier holds the deferral limit).
//! 2. **Staging compaction** (§V-D): the hottest L0 table, when its reads have paid more in
//!    searches of the L0 tables overlapping it than merging costs, is merged with the older L0
//!    tables it overlaps (transitively) and the base level's overlapping tables into the base
//!    level — all on the fast tier. L0 tables newer than it stay (they are newer than anything
//!    merged, so no key's newer version ends up below an older one).
//! 3. **Reverse compaction** (§V-B): the hottest table of the first capacity level, when it is
//!    read more than (`reverse_margin` times) the coldest `cold_fraction` of the last fast
//!    level — and than the coldest tables informed compaction will evict to make room for it
//!    under the level's target and the fast-tier budget, so that a hot set larger than the
//!    fast tier does not bounce table by table —, when its storage reads stand out from the
//!    level's median table by the same margin (table placement cannot help hot keys spread
//!    over every table), and its accrued read
//!    cost (eq. 11) exceeds the cost of the compaction (eq. 10), is merged with the last fast
//!    level's overlapping tables into that level, on the fast tier. The two levels are
//!    adjacent and the job takes every fast table overlapping the capacity table, so no key
//!    gets an older version above a newer one; tombstones are dropped only when nothing below
//!    the output level but the job's own inputs overlaps it.
//! 4. Tables on the wrong tier, as leveled compaction.
//!
//! Temperatures rank tables (hottest, coldest); reverse compaction compares their short-term
//! counts (half-life `rate_half_life`, 5 s), so a hot range that moved is noticed in seconds
//! rather than when the old range's long-term count has decayed. The *accrued read cost* of
//! eq. 11 and of
//! staging counts only the reads a table answered itself. A table written by compaction
//! inherits its inputs' heat but has paid for nothing yet: without this, a cold table evicted
//! into a hot capacity table's range comes back up with it at once, and the two bounce.
//!
//! Pure functions over a [`PickerInput`] carrying a [`TemperatureSnapshot`]; without one the
//! policy is exactly leveled compaction. Depends on `version`, `tier`; never on `db`.

use std::collections::HashSet;
use std::sync::Arc;

use super::job::CompactionReason;
use super::picker::{
    key_range, level_targets, next_level_files, pick_by_score, pick_compaction, pick_misplaced,
    writing_into, Pick,
};
use super::policy::{CompactionPolicy, PickerInput};
use crate::tier::temperature::TemperatureSnapshot;
use crate::tier::Tier;
use crate::version::{TableFile, Version};

/// LogStore's temperature-driven compaction over leveled compaction.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogStorePolicy;

impl CompactionPolicy for LogStorePolicy {
    fn pick(&self, input: &PickerInput<'_>) -> Option<Pick> {
        let Some(t) = input.temperature else {
            return pick_compaction(input);
        };
        pick_by_score(input)
            .or_else(|| pick_staging(input, t))
            .or_else(|| pick_reverse(input, t))
            .or_else(|| pick_misplaced(input))
    }
    fn name(&self) -> &'static str {
        "logstore"
    }
}

/// Whether no table below `output`, other than the job's `inputs`, holds keys in `[lo, hi]`.
fn bottommost_without(v: &Version, output: usize, lo: &[u8], hi: &[u8], inputs: &[u64]) -> bool {
    v.levels[output + 1..].iter().all(|l| {
        l.runs.iter().all(|r| {
            r.overlapping(Some(lo), Some(hi))
                .iter()
                .all(|f| inputs.contains(&f.id))
        })
    })
}

fn bytes(files: &[Arc<TableFile>]) -> u64 {
    files.iter().map(|f| f.size).sum()
}

fn any_busy(files: &[Arc<TableFile>], busy: &HashSet<u64>) -> bool {
    files.iter().any(|f| busy.contains(&f.id))
}

/// §V-D: see the module comment.
pub fn pick_staging(input: &PickerInput<'_>, t: &TemperatureSnapshot) -> Option<Pick> {
    let (v, busy) = (input.version, input.busy);
    // Newest first.
    let l0: Vec<&Arc<TableFile>> = v.levels[0].files().collect();
    if l0.len() < 2 {
        return None;
    }
    let sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
    let base = level_targets(&sizes, input.options).base_level;
    if input.tier_for(base) != Tier::Fast {
        return None;
    }
    let (hi_idx, hottest) = l0
        .iter()
        .enumerate()
        .filter(|(_, f)| !busy.contains(&f.id))
        .map(|(i, f)| (i, t.of(f.id)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if hottest <= 0.0 {
        return None;
    }
    let h = l0[hi_idx];
    // Tables a read of the hot table's range may search besides it.
    let searched = l0
        .iter()
        .filter(|f| f.overlaps(Some(&h.smallest), Some(&h.largest)))
        .count()
        - 1;
    if searched == 0 {
        return None;
    }
    // The hot table and every older table overlapping the set's range, to a fixed point.
    let mut set = vec![(*h).clone()];
    let (mut lo, mut hi) = (h.smallest.clone(), h.largest.clone());
    let mut taken = vec![false; l0.len()];
    taken[hi_idx] = true;
    loop {
        let mut grew = false;
        for (i, f) in l0.iter().enumerate().skip(hi_idx + 1) {
            if !taken[i] && f.overlaps(Some(&lo), Some(&hi)) {
                taken[i] = true;
                grew = true;
                lo = lo.min(f.smallest.clone());
                hi = hi.max(f.largest.clone());
                set.push((*f).clone());
            }
        }
        if !grew {
            break;
        }
    }
    if set.len() < 2 || any_busy(&set, busy) {
        return None;
    }
    // Newest first, as L0 inputs always are.
    set.sort_by_key(|f| std::cmp::Reverse((f.largest_seq, f.id)));
    let below = next_level_files(v, base, &lo, &hi);
    if any_busy(&below, busy) {
        return None;
    }
    let read_cost = t.costs.fast_reads(t.own(h.id), searched);
    let merge_cost = t.costs.compaction(
        set.len() + below.len(),
        bytes(&set) + bytes(&below),
        0,
        0,
        true,
    );
    if read_cost <= merge_cost {
        return None;
    }
    let all: Vec<Arc<TableFile>> = set.iter().chain(&below).cloned().collect();
    let (alo, ahi) = key_range(&all);
    if writing_into(input.writing, base, &alo, &ahi) {
        return None;
    }
    let bottommost = super::picker::is_bottommost(v, base, &alo, &ahi);
    let mut inputs = vec![(0, set)];
    if !below.is_empty() {
        inputs.push((base, below));
    }
    Some(Pick {
        reason: CompactionReason::Staging,
        score: read_cost / merge_cost.max(f64::MIN_POSITIVE),
        inputs,
        output_level: base,
        output_tier: Tier::Fast,
        trivial_move: false,
        bottommost,
        output_run: 0,
        forest: None,
    })
}

/// The temperature the coldest `fraction` of `temps` stays at or below.
pub fn cold_threshold(temps: &mut [f64], fraction: f64) -> f64 {
    if temps.is_empty() {
        return 0.0;
    }
    temps.sort_by(f64::total_cmp);
    let k = ((temps.len() as f64 * fraction).ceil() as usize).clamp(1, temps.len());
    temps[k - 1]
}

/// How hot the fast tables a reverse compaction bringing `incoming` bytes into `level` pushes
/// out are: the coldest `cold_fraction` of the level, and beyond that the coldest tables whose
/// bytes make room for it under the level's target and the fast-tier budget (informed
/// compaction evicts exactly those next). `None` when the level cannot make that room.
fn displaced_temperature(
    input: &PickerInput<'_>,
    t: &TemperatureSnapshot,
    level: usize,
    merged: &[Arc<TableFile>],
    incoming: u64,
) -> Option<f64> {
    let v = input.version;
    let mut temps: Vec<f64> = v.levels[level].files().map(|f| t.rate(f.id)).collect();
    let p = cold_threshold(&mut temps, t.cold_fraction);
    let sizes: Vec<u64> = v.levels.iter().map(|l| l.bytes()).collect();
    let target = level_targets(&sizes, input.options).targets[level];
    let mut room = target.saturating_sub(sizes[level]);
    if let Some(b) = t.fast_budget {
        room = room.min(b.saturating_sub(v.fast_bytes() + input.running_fast_bytes));
    }
    let mut need = incoming.saturating_sub(room);
    // Candidates for eviction: the level's tables the job does not rewrite, coldest first.
    let mut cold: Vec<(f64, u64)> = v.levels[level]
        .files()
        .filter(|f| !merged.iter().any(|m| m.id == f.id) && !input.busy.contains(&f.id))
        .map(|f| (t.rate(f.id), f.size))
        .collect();
    cold.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut displaced = p;
    for (temp, size) in cold {
        if need == 0 {
            break;
        }
        displaced = displaced.max(temp);
        need = need.saturating_sub(size);
    }
    (need == 0).then_some(displaced)
}

/// §V-B: see the module comment.
pub fn pick_reverse(input: &PickerInput<'_>, t: &TemperatureSnapshot) -> Option<Pick> {
    let (v, busy, pl) = (input.version, input.busy, input.placement);
    if !pl.has_capacity {
        return None;
    }
    let fast = pl.last_fast_level(v.deepest_non_empty(), 0);
    let cap = fast + 1;
    if fast == 0 || cap >= v.num_levels() || input.tier_for(fast) != Tier::Fast {
        return None;
    }
    let hottest = v.levels[cap]
        .files()
        .filter(|f| f.tier == Tier::Capacity && !busy.contains(&f.id))
        .map(|f| (t.rate(f.id), f))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    // Reverse compaction compares short-term counts: a hot range that moved shows up in
    // seconds, while the long-term counts of the old one take minutes to fall.
    let (temp, table) = (hottest.0, hottest.1.clone());
    // Moving tables helps only where storage reads concentrate in a few of them (a hot key
    // range), not where they spread over every table (hot keys scattered by hashing, which
    // HotRAP handles): the candidate must read storage `reverse_margin` times more than the
    // level's median table.
    let mut own: Vec<f64> = v.levels[cap].files().map(|f| t.own(f.id)).collect();
    let median = cold_threshold(&mut own, 0.5);
    if t.own(table.id) <= median * t.reverse_margin.max(1.0) {
        return None;
    }
    let above = next_level_files(v, fast, &table.smallest, &table.largest);
    if any_busy(&above, busy) {
        return None;
    }
    let displaced = displaced_temperature(input, t, fast, &above, table.size)?;
    if temp <= 0.0 || temp <= displaced * t.reverse_margin.max(1.0) {
        return None;
    }
    let merge_cost = t
        .costs
        .compaction(above.len(), bytes(&above), 1, table.size, true);
    let read_cost = t.costs.capacity_reads(t.own(table.id));
    if read_cost <= merge_cost {
        return None;
    }
    let all: Vec<Arc<TableFile>> = above.iter().chain([&table]).cloned().collect();
    let (lo, hi) = key_range(&all);
    if writing_into(input.writing, fast, &lo, &hi) {
        return None;
    }
    let ids: Vec<u64> = all.iter().map(|f| f.id).collect();
    let bottommost = bottommost_without(v, fast, &lo, &hi, &ids);
    let mut inputs = Vec::new();
    if !above.is_empty() {
        inputs.push((fast, above));
    }
    inputs.push((cap, vec![table]));
    Some(Pick {
        reason: CompactionReason::Reverse,
        score: read_cost / merge_cost.max(f64::MIN_POSITIVE),
        inputs,
        output_level: fast,
        output_tier: Tier::Fast,
        trivial_move: false,
        bottommost,
        output_run: 0,
        forest: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::picker::tests::{ids, opts, tiered, version};
    use crate::compaction::PickerOptions;
    use crate::tier::temperature::TierCosts;
    use crate::tier::Placement;
    use std::collections::HashMap;

    const COSTS: TierCosts = TierCosts {
        fast_seek: 1e-4,
        capacity_seek: 5e-3,
        fast_bw: 100e6,
        capacity_bw: 10e6,
    };

    /// Temperatures that are all the tables' own reads.
    fn temps(pairs: &[(u64, f64)]) -> TemperatureSnapshot {
        TemperatureSnapshot {
            by_table: pairs.iter().map(|&(id, t)| (id, (t, t, t))).collect(),
            costs: COSTS,
            deferring: false,
            defer_fast_bytes: 1 << 40,
            cold_fraction: 0.1,
            reverse_margin: 1.0,
            fast_budget: None,
        }
    }

    fn pick_with(
        v: &Version,
        busy: &HashSet<u64>,
        pl: &Placement,
        t: Option<&TemperatureSnapshot>,
    ) -> Option<Pick> {
        let o = PickerOptions {
            max_base_level: pl.max_base_level(),
            ..opts()
        };
        let hot = HashMap::new();
        LogStorePolicy.pick(&PickerInput {
            version: v,
            busy,
            options: &o,
            placement: pl,
            running_fast_bytes: 0,
            hot_bytes: &hot,
            hot_aware: false,
            temperature: t,
            writing: &[],
            capacity_down: false,
        })
    }

    #[test]
    fn informed_compaction_evicts_the_coldest_table() {
        // L5 is over its target (7800 > 5000). Table 52 overlaps the least below, so leveled
        // compaction evicts it; LogStore evicts the coldest, 53.
        let v = version(
            "5 51 a c 2600
             5 52 d f 2600
             5 53 g i 2600
             6 61 a c 20000 cap
             6 62 g i 30000 cap",
        );
        let busy = HashSet::new();
        let leveled = pick_with(&v, &busy, &tiered(), None).unwrap();
        assert_eq!(ids(&leveled), vec![(5, vec![52])]);
        let t = temps(&[(51, 40.0), (52, 90.0), (53, 3.0)]);
        let p = pick_with(&v, &busy, &tiered(), Some(&t)).unwrap();
        assert_eq!(p.reason, CompactionReason::LevelSize);
        assert_eq!(ids(&p), vec![(5, vec![53]), (6, vec![62])]);
        assert_eq!(p.output_tier, Tier::Capacity);
        // All equally cold: the smallest overlap wins the tie, as in leveled compaction.
        let p = pick_with(&v, &busy, &tiered(), Some(&temps(&[]))).unwrap();
        assert_eq!(ids(&p), vec![(5, vec![52])]);
        // A busy coldest table: the next coldest.
        let busy: HashSet<u64> = [53].into();
        let p = pick_with(&v, &busy, &tiered(), Some(&t)).unwrap();
        assert_eq!(ids(&p)[0], (5, vec![51]));
    }

    #[test]
    fn reverse_compaction_table() {
        // L5 holds 3000 bytes of its 6000-byte target: room for a 2000-byte table. With a
        // 3000-byte budget it has none: table 53 (8 reads) would be evicted for 61.
        let v = version(
            "5 51 a c 1000
             5 52 d f 1000
             5 53 p r 1000
             6 61 a e 1000 cap
             6 62 g k 2000 cap
             6 63 m z 2000 cap
             6 64 zz1 zz9 55000 cap",
        );
        let fast = [(51, 5.0), (52, 3.0), (53, 8.0)];
        let with = |extra: &[(u64, f64)]| {
            let mut p: Vec<(u64, f64)> = fast.to_vec();
            p.extend_from_slice(extra);
            temps(&p)
        };
        let none = HashSet::new();
        // (case, temperatures, busy, expected inputs)
        type Case<'a> = (
            &'a str,
            TemperatureSnapshot,
            HashSet<u64>,
            Option<Vec<(usize, Vec<u64>)>>,
        );
        let cases: Vec<Case> = vec![
            (
                "hot capacity table: merged up with the fast tables over it",
                with(&[(61, 1000.0)]),
                none.clone(),
                Some(vec![(5, vec![51, 52]), (6, vec![61])]),
            ),
            (
                "the hottest one goes first; no fast table over it",
                with(&[(61, 100.0), (62, 1000.0)]),
                none.clone(),
                Some(vec![(6, vec![62])]),
            ),
            (
                "not hotter than the coldest 10% of L5 (3 reads)",
                with(&[(61, 3.0)]),
                none.clone(),
                None,
            ),
            (
                // 2 × 4 × 5 ms = 40 ms of reads < merging 20 KB at 10 MB/s + seeks (~7.5 ms)?
                // No: 40 ms > 7.5 ms, so this one is picked; 0.5 reads is below the cost.
                "accrued read cost below the compaction cost (eq. 10 vs 11)",
                with(&[(61, 0.5)]),
                none.clone(),
                None,
            ),
            (
                "hotter than the coldest tenth, but not by the margin",
                {
                    let mut t = with(&[(61, 5.0)]);
                    t.reverse_margin = 2.0;
                    t
                },
                none.clone(),
                None,
            ),
            (
                "no room: it must beat the table evicted for it (53, 8 reads)",
                {
                    let mut t = with(&[(61, 7.0)]);
                    t.fast_budget = Some(3000);
                    t
                },
                none.clone(),
                None,
            ),
            (
                "no room, but hotter than the table evicted for it",
                {
                    let mut t = with(&[(61, 9.0)]);
                    t.fast_budget = Some(3000);
                    t
                },
                none.clone(),
                Some(vec![(5, vec![51, 52]), (6, vec![61])]),
            ),
            (
                "bigger than all the level could evict",
                {
                    let mut t = with(&[(64, 1e6)]);
                    t.fast_budget = Some(3000);
                    t
                },
                none.clone(),
                None,
            ),
            (
                "storage reads spread over every capacity table: no table stands out",
                {
                    let mut t = with(&[(61, 1000.0), (62, 800.0), (63, 900.0), (64, 700.0)]);
                    t.reverse_margin = 2.0;
                    t
                },
                none.clone(),
                None,
            ),
            (
                "hot by inheritance only: nothing paid for the move yet",
                {
                    let mut t = with(&[]);
                    t.by_table.insert(61, (1000.0, 0.2, 1000.0));
                    t
                },
                none.clone(),
                None,
            ),
            (
                "an overlapping fast table is busy",
                with(&[(61, 1000.0)]),
                [52].into(),
                None,
            ),
            (
                "the capacity table is busy: the next hottest",
                with(&[(61, 1000.0), (63, 500.0)]),
                [61].into(),
                Some(vec![(5, vec![53]), (6, vec![63])]),
            ),
        ];
        for (name, t, busy, want) in cases {
            let got = pick_with(&v, &busy, &tiered(), Some(&t));
            assert_eq!(got.as_ref().map(ids), want, "{name}");
            if let Some(p) = got {
                assert_eq!(p.reason, CompactionReason::Reverse, "{name}");
                assert_eq!((p.output_level, p.output_tier), (5, Tier::Fast), "{name}");
                assert!(!p.trivial_move, "{name}: a tier change is a rewrite");
            }
        }
        // Without a capacity tier there is nothing to reverse.
        let local = Placement {
            has_capacity: false,
            ..tiered()
        };
        let p = pick_with(&v, &none, &local, Some(&with(&[(61, 1e6)])));
        assert!(p.is_none_or(|p| p.reason != CompactionReason::Reverse));
    }

    #[test]
    fn reverse_compaction_keeps_tombstones_over_older_capacity_tables() {
        // Fast table 51 spans past the hot capacity table 61 into 62's range: 62 stays below
        // the output, so tombstones of the output must be kept.
        let v = version(
            "5 51 a h 1000
             6 61 a c 1000 cap
             6 62 g k 1000 cap
             6 63 x z 50000 cap",
        );
        let t = temps(&[(51, 1.0), (61, 1000.0)]);
        let p = pick_with(&v, &HashSet::new(), &tiered(), Some(&t)).unwrap();
        assert_eq!(ids(&p), vec![(5, vec![51]), (6, vec![61])]);
        assert!(!p.bottommost);
        // Alone over its range, the job is bottommost.
        let v = version(
            "5 51 a b 1000
             6 61 a c 1000 cap
             6 62 g k 1000 cap
             6 63 x z 50000 cap",
        );
        let p = pick_with(&v, &HashSet::new(), &tiered(), Some(&t)).unwrap();
        assert!(p.bottommost);
    }

    #[test]
    fn staging_compaction_table() {
        // L0 newest last in the fixture: 1 (oldest) spans everything, 2 is narrow, 3 newest.
        // Base level: 4 (dynamic sizing over L6's 50 000 bytes).
        let v = version(
            "0 1 a z 300
             0 2 m p 300
             0 3 x y 300
             4 41 a f 400
             4 42 n o 400
             6 61 a z 50000 cap",
        );
        let none = HashSet::new();
        // Table 2 is hot: it and the older table 1 under it (transitively the whole range),
        // with the base level's overlapping tables; the newer table 3 stays in L0.
        let t = temps(&[(2, 500.0)]);
        let p = pick_with(&v, &none, &tiered(), Some(&t)).unwrap();
        assert_eq!(p.reason, CompactionReason::Staging);
        assert_eq!(ids(&p), vec![(0, vec![2, 1]), (4, vec![41, 42])]);
        assert_eq!((p.output_level, p.output_tier), (4, Tier::Fast));
        // The newest table is hot and overlaps the oldest: both, not the middle one.
        let t = temps(&[(3, 500.0)]);
        let p = pick_with(&v, &none, &tiered(), Some(&t)).unwrap();
        assert_eq!(ids(&p)[0], (0, vec![3, 2, 1]));
        // Cold L0: nothing (reads have not paid for the merge).
        assert!(pick_with(&v, &none, &tiered(), Some(&temps(&[(2, 0.1)]))).is_none());
        // An older overlapping table is busy: nothing.
        assert!(pick_with(&v, &[1].into(), &tiered(), Some(&temps(&[(2, 500.0)]))).is_none());
        // Without temperatures LogStore is leveled compaction: nothing to do here.
        assert!(pick_with(&v, &none, &tiered(), None).is_none());
    }

    #[test]
    fn deferred_compaction_waits_for_reads_or_the_byte_limit() {
        let none = HashSet::new();
        // An over-full fast L5 (6000 > 5000), L0 below its trigger.
        let v = version(
            "0 1 a z 100
             0 2 a z 100
             5 51 a c 3000
             5 52 d f 3000
             6 61 a z 50000 cap",
        );
        let mut t = temps(&[]);
        let p = pick_with(&v, &none, &tiered(), Some(&t)).unwrap();
        assert_eq!(p.reason, CompactionReason::LevelSize, "reads flow: sized");
        t.deferring = true;
        assert!(
            pick_with(&v, &none, &tiered(), Some(&t)).is_none(),
            "deferred"
        );
        t.defer_fast_bytes = 6000;
        let p = pick_with(&v, &none, &tiered(), Some(&t)).unwrap();
        assert_eq!(
            p.reason,
            CompactionReason::LevelSize,
            "limit reached: resumes"
        );
        // Five L0 files over a trigger of 4; L5 in shape.
        let v = version(
            "0 1 a z 100
             0 2 a z 100
             0 3 a z 100
             0 4 a z 100
             0 5 a z 100
             5 51 a c 3000
             6 61 a z 50000 cap",
        );
        let mut t = temps(&[]);
        let p = pick_with(&v, &none, &tiered(), Some(&t)).unwrap();
        assert_eq!(p.reason, CompactionReason::L0FileCount);
        t.deferring = true;
        assert!(
            pick_with(&v, &none, &tiered(), Some(&t)).is_none(),
            "deferring: L0 buffers the burst, however many tables it holds"
        );
        // The fast tier (5 × 100 + 3000 bytes) reaches the limit: L0 compacts again.
        t.defer_fast_bytes = 3500;
        let p = pick_with(&v, &none, &tiered(), Some(&t)).unwrap();
        assert_eq!(p.reason, CompactionReason::L0FileCount);
    }

    #[test]
    fn the_fast_tier_budget_evicts_the_coldest_table() {
        // L5 within its target (3000 < 5000), but the fast tier over a 2500-byte budget.
        let v = version(
            "5 51 a c 1500
             5 52 d f 1500
             6 61 a z 50000 cap",
        );
        let none = HashSet::new();
        let mut t = temps(&[(51, 1.0), (52, 9.0)]);
        assert!(pick_with(&v, &none, &tiered(), Some(&t)).is_none());
        t.fast_budget = Some(2500);
        let p = pick_with(&v, &none, &tiered(), Some(&t)).unwrap();
        assert_eq!(ids(&p), vec![(5, vec![51]), (6, vec![61])]);
        assert_eq!(p.output_tier, Tier::Capacity);
    }

    #[test]
    fn cold_threshold_is_the_coldest_fraction() {
        assert_eq!(cold_threshold(&mut [], 0.1), 0.0);
        assert_eq!(cold_threshold(&mut [5.0, 1.0, 3.0], 0.1), 1.0);
        let mut v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(cold_threshold(&mut v, 0.1), 2.0);
        assert_eq!(cold_threshold(&mut v, 1.0), 20.0);
    }
}
