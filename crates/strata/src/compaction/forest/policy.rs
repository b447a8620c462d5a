//! [`SplitForestPolicy`]: what a split forest compacts next, as a pure function of the
//! [`PickerInput`]. In order:
//!
//! 1. a merge the compaction journal shows interrupted (input trees carrying a cut), resumed
//!    at the cut into a new output tree;
//! 2. the most urgent of: L0 (all its tables, when there are `l0_trigger` of them) and each
//!    level whose idle, uncut trees number at least `trees_per_level` (all of them, into the
//!    next level; the last level merges into itself), by score = count / trigger;
//! 3. a table placement wants on the other tier, rewritten in place within its tree.
//!
//! Ordering rules (reads take the first tree, newest first by id, that holds a version, so a
//! tree's id must never be newer than its data): one merge out of a level at a time; the last
//! level's merge into itself never overlaps a merge into it; the output tree of an interrupted
//! merge is reserved until the merge resumes and ends; a rewrite in place is bottommost only
//! if no other tree of its level overlaps it. Each rule has a case in the table test below,
//! and each was found by `strata stress` or the SIGKILL test breaking without it.

use std::sync::Arc;

use crate::compaction::job::CompactionReason;
use crate::compaction::picker::{pick_misplaced, ForestPick, Pick};
use crate::compaction::policy::{CompactionPolicy, PickerInput};
use crate::version::{SortedRun, TableFile, Version};

/// Split-forest picking (SifrDB §4.1).
#[derive(Clone, Copy, Debug)]
pub struct SplitForestPolicy {
    /// Idle trees a level collects before they are merged into the next level (at least 2).
    pub trees_per_level: usize,
}

impl CompactionPolicy for SplitForestPolicy {
    fn pick(&self, input: &PickerInput<'_>) -> Option<Pick> {
        pick_forest(input, self.trees_per_level.max(2))
    }
    fn name(&self) -> &'static str {
        "split-forest"
    }
}

/// Whether `run` is free to be merged: none of its tables is in a running job, and it is not
/// the output tree of an interrupted merge (trees carrying a cut name it): that tree receives
/// the rest of the merge when it resumes, so no other merge may take its first part meanwhile.
fn idle(input: &PickerInput<'_>, run: &SortedRun) -> bool {
    run.files.iter().all(|f| !input.busy.contains(&f.id)) && !is_resume_target(input, run.id)
}

fn is_resume_target(input: &PickerInput<'_>, run: u64) -> bool {
    run != 0
        && input
            .version
            .levels
            .iter()
            .flat_map(|l| l.runs.iter())
            .any(|r| r.cut.is_some() && r.cut_into == run)
}

/// Whether a merge out of `level` is running or waits to be resumed (a merge takes every idle
/// tree of its level, and checkpoints mark its output tables busy).
fn merging_out_of(input: &PickerInput<'_>, level: usize) -> bool {
    input.version.levels[level]
        .runs
        .iter()
        .any(|r| r.cut.is_some() || !idle(input, r))
}

/// Whether a merge may write into `output` from a level above it now. Trees are ordered by
/// id, newest first: a tree the last level's self-merge creates must not get a larger id than
/// a tree a concurrent merge from above is building there (whose data is newer), so the two
/// never overlap in time — merges into the last level wait while it merges into itself, and
/// the other way round.
/// `resuming`: the output tree of the interrupted merge being resumed (reserved for it).
fn may_merge_into(
    input: &PickerInput<'_>,
    from: usize,
    output: usize,
    resuming: Option<u64>,
) -> bool {
    let last = input.version.num_levels() - 1;
    if output != last {
        return true;
    }
    if from == last {
        !merging_out_of(input, last - 1)
    } else {
        input.version.levels[last]
            .runs
            .iter()
            .all(|r| Some(r.id) == resuming || idle(input, r))
    }
}

/// Whether no table outside `inputs` at `output` or below overlaps `[lo, hi]`.
fn bottommost(v: &Version, output: usize, inputs: &[(usize, u64)], lo: &[u8], hi: &[u8]) -> bool {
    v.levels[output..].iter().enumerate().all(|(i, level)| {
        level.runs.iter().all(|r| {
            inputs.contains(&(output + i, r.id)) && output + i != 0
                || r.overlapping(Some(lo), Some(hi)).is_empty()
        })
    })
}

/// Builds the merge of `runs` (of `level`, newest first) into a new tree of `output`.
fn merge_pick(
    input: &PickerInput<'_>,
    level: usize,
    runs: &[&SortedRun],
    output: usize,
    reason: CompactionReason,
    score: f64,
    resume_from: Option<Vec<u8>>,
) -> Option<Pick> {
    let files: Vec<&Arc<TableFile>> = runs.iter().flat_map(|r| r.files.iter()).collect();
    let lo = files.iter().map(|f| f.smallest.clone()).min()?;
    let hi = files.iter().map(|f| f.largest.clone()).max()?;
    let ids: Vec<(usize, u64)> = runs.iter().map(|r| (level, r.id)).collect();
    // L0's one-table runs all have id 0: the L0 check needs the tables themselves.
    let bottom = if level == 0 {
        let v = input.version;
        (output..v.num_levels()).all(|l| {
            v.levels[l]
                .runs
                .iter()
                .all(|r| r.overlapping(Some(&lo), Some(&hi)).is_empty())
        })
    } else {
        bottommost(input.version, output, &ids, &lo, &hi)
    };
    Some(Pick {
        reason,
        score,
        inputs: runs.iter().map(|r| (level, r.files.clone())).collect(),
        output_level: output,
        output_tier: input.tier_for(output),
        trivial_move: false,
        bottommost: bottom,
        output_run: 0,
        forest: Some(ForestPick {
            runs: runs.iter().map(|r| r.id).collect(),
            resume_from,
            output_run: None,
        }),
    })
}

/// The merge of every tree of `level` (manual compaction): `None` while any of them is busy or
/// carries a cut (the background resumes that merge first), or when `level` is empty.
pub fn level_merge(input: &PickerInput<'_>, level: usize) -> Option<Pick> {
    let v = input.version;
    let runs: Vec<&SortedRun> = v.levels[level].runs.iter().collect();
    if runs.iter().any(|r| r.cut.is_some() || !idle(input, r)) {
        return None;
    }
    let n = v.num_levels();
    let output = if level + 1 < n { level + 1 } else { level };
    if !may_merge_into(input, level, output, None) {
        return None;
    }
    merge_pick(
        input,
        level,
        &runs,
        output,
        CompactionReason::Manual,
        f64::MAX,
        None,
    )
}

fn pick_forest(input: &PickerInput<'_>, fanout: usize) -> Option<Pick> {
    let v = input.version;
    let n = v.num_levels();
    let out_of = |l: usize| if l + 1 < n { l + 1 } else { l };
    // 1. Resume an interrupted merge: the cut trees of one merge (they name its output run).
    for l in 1..n {
        let mut merges: Vec<u64> = v.levels[l]
            .runs
            .iter()
            .filter(|r| r.cut.is_some())
            .map(|r| r.cut_into)
            .collect();
        merges.sort_unstable();
        merges.dedup();
        for into in merges {
            let cut: Vec<&SortedRun> = v.levels[l]
                .runs
                .iter()
                .filter(|r| r.cut.is_some() && r.cut_into == into)
                .collect();
            // The merge's own output tree may sit in this level (the last level's self-merge).
            let level_idle = v.levels[l]
                .runs
                .iter()
                .all(|r| r.id == into || idle(input, r));
            if level_idle && may_merge_into(input, l, out_of(l), Some(into)) {
                let at = cut.iter().filter_map(|r| r.cut.clone()).min();
                let mut p = merge_pick(
                    input,
                    l,
                    &cut,
                    out_of(l),
                    CompactionReason::JournalResume,
                    f64::MAX,
                    at,
                );
                if let Some(f) = p.as_mut().and_then(|p| p.forest.as_mut()) {
                    f.output_run = Some(into);
                }
                // A resume into a capacity tier that is down waits (as for a level that is
                // not idle), so the fast tier's merges go on.
                if p.as_ref().is_some_and(|p| input.waits_for_capacity(p)) {
                    continue;
                }
                return p;
            }
        }
    }
    // 2. The most urgent of L0 and the full levels.
    let mut scored: Vec<(f64, usize)> = Vec::new();
    let l0 = &v.levels[0];
    if l0.runs.iter().all(|r| idle(input, r)) && !l0.is_empty() {
        scored.push((
            l0.runs.len() as f64 / input.options.l0_trigger.max(1) as f64,
            0,
        ));
    }
    for l in 1..n {
        let ready = v.levels[l]
            .runs
            .iter()
            .filter(|r| r.cut.is_none() && idle(input, r))
            .count();
        if ready > 0 {
            scored.push((ready as f64 / fanout as f64, l));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (score, l) in scored {
        if score < 1.0 {
            break;
        }
        let runs: Vec<&SortedRun> = v.levels[l]
            .runs
            .iter()
            .filter(|r| r.cut.is_none() && idle(input, r))
            .collect();
        // The last level merges into itself only when that shrinks it. One merge out of a
        // level at a time: trees a level receives are numbered in the order their merges
        // start, and two merges out of one level could finish in the other order.
        if l + 1 == n && runs.len() < 2
            || l > 0 && merging_out_of(input, l)
            || !may_merge_into(input, l, out_of(l), None)
        {
            continue;
        }
        let reason = if l == 0 {
            CompactionReason::L0FileCount
        } else {
            CompactionReason::LevelSize
        };
        if let Some(p) = merge_pick(input, l, &runs, out_of(l), reason, score, None) {
            if input.waits_for_capacity(&p) {
                continue;
            }
            return Some(p);
        }
    }
    // 3. A table on the wrong tier, rewritten within its tree.
    let mut p = pick_misplaced(input)?;
    let (level, files) = &p.inputs[0];
    let f = files.first()?.clone();
    let level = *level;
    p.output_run = v.levels[level]
        .runs
        .iter()
        .find(|r| r.files.iter().any(|g| g.id == f.id))
        .map_or(0, |r| r.id);
    // The leveled picker only looks below the level; here the level's other (older) trees
    // may hold older versions of the table's keys, which a dropped tombstone would uncover.
    p.bottommost = bottommost(v, level, &[(level, p.output_run)], &f.smallest, &f.largest);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::picker::PickerOptions;
    use crate::tier::{Placement, Tier};
    use crate::version::{FileMeta, Reaper, VersionEdit};
    use std::collections::{HashMap, HashSet};

    /// A version from `level run id smallest largest` lines (`run` 0 in L0); `cut level run key`
    /// lines set cuts.
    fn version(fixture: &str) -> Version {
        let mut e = VersionEdit::default();
        for line in fixture.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w[0] == "cap" {
                let id: u64 = w[1].parse().unwrap();
                for (_, _, m) in e.added_to_run.iter_mut() {
                    if m.id == id {
                        m.tier = Tier::Capacity;
                    }
                }
                continue;
            }
            if w[0] == "down" {
                continue; // the capacity tier is down (see `picks`)
            }
            if w[0] == "cut" {
                e.run_cuts.push((
                    w[1].parse().unwrap(),
                    w[2].parse().unwrap(),
                    w[3].into(),
                    w[4].parse().unwrap(),
                ));
                continue;
            }
            let (level, run, id): (u32, u64, u64) = (
                w[0].parse().unwrap(),
                w[1].parse().unwrap(),
                w[2].parse().unwrap(),
            );
            let m = FileMeta {
                id,
                size: 100,
                smallest: w[3].into(),
                largest: w[4].into(),
                largest_exclusive: false,
                smallest_seq: id,
                largest_seq: id,
                num_entries: 1,
                num_deletions: 0,
                num_range_deletions: 0,
                tier: Tier::Fast,
            };
            if run == 0 {
                e.added.push((level, m));
            } else {
                e.added_to_run.push((level, run, m));
            }
        }
        Version::new(4)
            .apply(&e, &Arc::new(Reaper::default()))
            .unwrap()
            .0
    }

    /// Renders a pick as `level:runs -> output (reason)`.
    fn show(p: Option<Pick>) -> String {
        let Some(p) = p else { return "none".into() };
        let f = p.forest.clone().unwrap_or(ForestPick {
            runs: vec![],
            resume_from: None,
            output_run: None,
        });
        format!(
            "L{}:{:?} -> L{}{}{} {:?}",
            p.inputs[0].0,
            f.runs,
            p.output_level,
            f.resume_from
                .map(|c| format!(" from {}", String::from_utf8_lossy(&c)))
                .unwrap_or_default()
                + &f.output_run
                    .map(|r| format!(" into {r}"))
                    .unwrap_or_default(),
            if p.bottommost { " bottom" } else { "" },
            p.reason
        )
    }

    #[test]
    fn picks() {
        let o = PickerOptions {
            l0_trigger: 2,
            base_bytes: 1000,
            multiplier: 10.0,
            dynamic: true,
            max_base_level: 3,
            min_base_level: 1,
        };
        let placement = |has_capacity| Placement {
            has_capacity,
            fast_levels: None,
            capacity_levels: 1,
            num_levels: 4,
            dynamic: true,
            fast_budget: None,
        };
        // (fixture, busy table ids, expected pick)
        let cases: Vec<(&str, Vec<u64>, &str)> =
            vec![
            ("0 0 1 a b", vec![], "none"),
            // L0 at its trigger merges into L1; nothing below: bottommost.
            (
                "0 0 1 a b\n0 0 2 a c",
                vec![],
                "L0:[0, 0] -> L1 bottom L0FileCount",
            ),
            // Three trees in L1 are not yet a full level (fanout 3 here).
            ("1 10 1 a b\n1 11 2 a b\n2 5 3 a z", vec![], "none"),
            // A full L1 merges into L2, newest tree first; L2 holds older data in range.
            (
                "1 10 1 a b\n1 11 2 a b\n1 12 3 a b\n2 5 4 a z",
                vec![],
                "L1:[12, 11, 10] -> L2 LevelSize",
            ),
            // While a merge out of L1 runs, no other starts there (even with enough idle trees).
            ("1 10 1 a b\n1 11 2 a b\n1 12 3 a b\n1 13 4 a b", vec![4], "none"),
            // The last level merges into itself.
            (
                "3 10 1 a b\n3 11 2 a b\n3 12 3 c d",
                vec![],
                "L3:[12, 11, 10] -> L3 bottom LevelSize",
            ),
            // No self-merge of the last level while a merge into it runs (its new tree must
            // stay the newest there)...
            (
                "3 10 1 a b\n3 11 2 a b\n3 12 3 c d\n2 20 4 a b",
                vec![4],
                "none",
            ),
            // ... nor a merge into it while it merges into itself.
            (
                "3 10 1 a b\n2 20 4 a b\n2 21 5 a b\n2 22 6 a b",
                vec![1],
                "none",
            ),
            // A cut tree resumes first, at its cut, into its merge's tree.
            (
                "1 10 1 a b\n1 11 2 a m\ncut 1 10 b 30\ncut 1 11 b 30\n0 0 5 a b\n0 0 6 a b",
                vec![],
                "L1:[11, 10] -> L2 from b into 30 bottom JournalResume",
            ),
            // Two interrupted merges of one level (from before merges out of a level were
            // serialized) resume separately, each at its own cut, one at a time.
            (
                "1 10 1 a b\n1 11 2 a m\n1 12 3 a z\ncut 1 10 b 30\ncut 1 11 b 30\ncut 1 12 k 31",
                vec![],
                "L1:[11, 10] -> L2 from b into 30 bottom JournalResume",
            ),
            (
                "1 10 1 a b\n1 11 2 a m\n1 12 3 a z\ncut 1 10 b 30\ncut 1 11 b 30\ncut 1 12 k 31",
                vec![1],
                "none", // the other waits until the first is done

            ),
            // The output tree of an interrupted merge (run 30 of L2) is reserved for its
            // resume: L2's merge into L3 waits even with enough idle trees (L1 busy here so
            // the resume itself cannot start).
            (
                "1 10 1 a b\ncut 1 10 b 30\n1 9 9 x y\n2 30 2 a a\n2 31 3 c d\n2 32 4 e f\n2 33 5 g h",
                vec![9],
                "none",
            ),
            // ... unless it is being merged right now.
            ("1 10 1 a b\ncut 1 10 b 30", vec![1], "none"),
            // A cut tree of L2 resumes into L3, on the capacity tier ...
            (
                "2 10 1 a b\n2 11 2 a m\ncut 2 10 b 30\ncut 2 11 b 30\n0 0 5 a b\n0 0 6 a b\ncap 0",
                vec![],
                "L2:[11, 10] -> L3 from b into 30 bottom JournalResume",
            ),
            // ... but while that tier is down the resume waits and L0 merges on the fast tier.
            (
                "2 10 1 a b\n2 11 2 a m\ncut 2 10 b 30\ncut 2 11 b 30\n0 0 5 a b\n0 0 6 a b\ncap 0\ndown",
                vec![],
                "L0:[0, 0] -> L1 L0FileCount",
            ),
            // A table of L1 on the capacity tier while L1 is not the bottom: rewritten in its
            // tree onto the fast tier, and not bottommost (an older tree of L1 overlaps it).
            (
                "1 10 1 a b\n1 9 2 a c\n3 5 3 x z\ncap 1",
                vec![],
                "L1:[] -> L1 TierChange",
            ),
        ];
        let empty = HashMap::new();
        for (i, (fixture, busy, want)) in cases.into_iter().enumerate() {
            let v = version(fixture);
            let busy: HashSet<u64> = busy.into_iter().collect();
            let pl = placement(fixture.contains("cap"));
            let got = SplitForestPolicy { trees_per_level: 3 }.pick(&PickerInput {
                version: &v,
                busy: &busy,
                options: &o,
                placement: &pl,
                running_fast_bytes: 0,
                hot_bytes: &empty,
                hot_aware: false,
                temperature: None,
                writing: &[],
                capacity_down: fixture.contains("down"),
            });
            assert_eq!(show(got), want, "case {i}: {fixture}");
        }
    }
}
