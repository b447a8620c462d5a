//! The pickers' table-driven tests, and the test helpers other compaction tests share.
use super::*;
use crate::tier::Placement;
use crate::version::{FileMeta, Reaper, VersionEdit};
use std::collections::HashMap;

pub(crate) fn opts() -> PickerOptions {
    PickerOptions {
        l0_trigger: 4,
        base_bytes: 1000,
        multiplier: 10.0,
        dynamic: true,
        max_base_level: 6,
        min_base_level: 1,
    }
}

/// Relative placement: levels 0–5 fast, level 6 on the capacity tier.
pub(crate) fn tiered() -> Placement {
    Placement {
        has_capacity: true,
        ..no_capacity()
    }
}

fn no_capacity() -> Placement {
    Placement {
        has_capacity: false,
        fast_levels: None,
        capacity_levels: 1,
        num_levels: 7,
        dynamic: true,
        fast_budget: None,
    }
}

fn pick(v: &Version, busy: &HashSet<u64>, pl: &Placement, hot: &HashMap<u64, u64>) -> Option<Pick> {
    pick_while(v, busy, pl, hot, false)
}

/// [`pick`] with the capacity tier down or up.
fn pick_while(
    v: &Version,
    busy: &HashSet<u64>,
    pl: &Placement,
    hot: &HashMap<u64, u64>,
    capacity_down: bool,
) -> Option<Pick> {
    let o = PickerOptions {
        max_base_level: pl.max_base_level(),
        ..opts()
    };
    pick_compaction(&PickerInput {
        version: v,
        busy,
        options: &o,
        placement: pl,
        running_fast_bytes: 0,
        hot_bytes: hot,
        hot_aware: !hot.is_empty(),
        temperature: None,
        writing: &[],
        capacity_down,
    })
}

/// Builds a version from a fixture: one line per table, `level id smallest largest size`.
pub(crate) fn version(fixture: &str) -> Version {
    let reaper: Arc<Reaper> = Arc::default();
    let mut e = VersionEdit::default();
    for (seq, line) in fixture
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        e.added.push((
            f[0].parse().unwrap(),
            FileMeta {
                id: f[1].parse().unwrap(),
                smallest: f[2].into(),
                largest: f[3].into(),
                largest_exclusive: false,
                size: f[4].parse().unwrap(),
                smallest_seq: seq as u64,
                largest_seq: seq as u64,
                num_entries: 1,
                num_deletions: 0,
                num_range_deletions: 0,
                tier: match f.get(5) {
                    Some(&"cap") => Tier::Capacity,
                    _ => Tier::Fast,
                },
            },
        ));
    }
    Version::new(7).apply(&e, &reaper).unwrap().0
}

pub(crate) fn ids(p: &Pick) -> Vec<(usize, Vec<u64>)> {
    p.inputs
        .iter()
        .map(|(l, fs)| (*l, fs.iter().map(|f| f.id).collect()))
        .collect()
}

#[test]
fn dynamic_targets_follow_the_last_level() {
    let o = opts();
    let t = level_targets(&[0, 0, 0, 0, 0, 0, 0], &o);
    assert_eq!(t.base_level, 6);
    let t = level_targets(&[0, 0, 0, 0, 0, 0, 50_000], &o);
    assert_eq!(t.base_level, 4);
    assert_eq!(t.targets[6], 50_000);
    assert_eq!(t.targets[5], 5_000);
    // Never below base_bytes, though 50_000 / 100 would be 500.
    assert_eq!(t.targets[4], 1000);
    // A non-empty level above the computed base becomes the base.
    let t = level_targets(&[0, 0, 10, 0, 0, 0, 50_000], &o);
    assert_eq!(t.base_level, 2);
    // A minimum base level (LogStore): L0 compacts into L5 once the levels above it have
    // drained; until then the shallowest non-empty level stays the base, unsized.
    let one = PickerOptions {
        max_base_level: 5,
        min_base_level: 5,
        ..o.clone()
    };
    let t = level_targets(&[0, 0, 0, 0, 0, 0, 50_000], &one);
    assert_eq!((t.base_level, t.targets[4], t.targets[5]), (5, 0, 5_000));
    let t = level_targets(&[0, 0, 0, 700, 0, 900, 50_000], &one);
    assert_eq!(t.base_level, 3);
    assert_eq!((t.targets[3], t.targets[4], t.targets[5]), (0, 0, 5_000));
    let s = level_targets(
        &[0; 7],
        &PickerOptions {
            dynamic: false,
            ..o
        },
    );
    assert_eq!(
        (s.base_level, s.targets[1], s.targets[2]),
        (1, 1000, 10_000)
    );
}

#[test]
fn table_driven_picks() {
    // (fixture, busy ids, expected inputs, output level, trivial move, bottommost)
    type Case = (
        &'static str,
        &'static [u64],
        Vec<(usize, Vec<u64>)>,
        usize,
        bool,
        bool,
    );
    let cases: Vec<Case> = vec![
        // Four L0 files trigger an L0 compaction into the base level (L6 while empty).
        (
            "0 1 a c 10\n0 2 b d 10\n0 3 a z 10\n0 4 c e 10",
            &[],
            vec![(0, vec![4, 3, 2, 1])],
            6,
            false,
            true,
        ),
        // One L0 file does not trigger anything... but three do not either.
        (
            "0 1 a c 10\n0 2 b d 10\n0 3 a z 10",
            &[],
            vec![],
            0,
            false,
            false,
        ),
        // L0 files overlapping busy base files wait.
        (
            "0 1 a c 10\n0 2 b d 10\n0 3 a z 10\n0 4 c e 10\n6 9 a b 100",
            &[9],
            vec![],
            0,
            false,
            false,
        ),
        // An oversized L5 picks the file with the smallest overlap ratio, L6 inputs included.
        (
            "5 1 a c 2000\n5 2 d f 2000\n6 10 a c 5000\n6 11 d f 100",
            &[],
            vec![(5, vec![2]), (6, vec![11])],
            6,
            false,
            true,
        ),
        // A file overlapping nothing below moves trivially.
        (
            "5 1 a c 3000\n6 10 x z 5000",
            &[],
            vec![(5, vec![1])],
            6,
            true,
            true,
        ),
    ];
    for (i, (fixture, busy, want, out, trivial, bottom)) in cases.into_iter().enumerate() {
        let v = version(fixture);
        let busy: HashSet<u64> = busy.iter().copied().collect();
        let p = pick(&v, &busy, &no_capacity(), &HashMap::new());
        match p {
            None => assert!(want.is_empty(), "case {i}: expected a pick"),
            Some(p) => {
                assert_eq!(ids(&p), want, "case {i}: {p:?}");
                assert_eq!(p.output_level, out, "case {i}");
                assert_eq!(p.trivial_move, trivial, "case {i}");
                assert_eq!(p.bottommost, bottom, "case {i}");
            }
        }
    }
}

#[test]
fn tiered_picks() {
    let tiered = Placement {
        has_capacity: true,
        ..no_capacity()
    };
    // (fixture, hot bytes by table, expected inputs, output level, output tier, reason)
    type Case = (
        &'static str,
        Vec<(u64, u64)>,
        Vec<(usize, Vec<u64>)>,
        usize,
        Tier,
        CompactionReason,
    );
    let cases: Vec<Case> = vec![
        // A small tree's L0 settles in L5 (the last fast level), not in L6.
        (
            "0 1 a c 10\n0 2 b d 10\n0 3 a z 10\n0 4 c e 10",
            vec![],
            vec![(0, vec![4, 3, 2, 1])],
            5,
            Tier::Fast,
            CompactionReason::L0FileCount,
        ),
        // An oversized L5 compacts into the capacity tier.
        (
            "5 1 a c 2000\n5 2 d f 2000\n6 10 a c 5000 cap\n6 11 d f 100 cap",
            vec![],
            vec![(5, vec![2]), (6, vec![11])],
            6,
            Tier::Capacity,
            CompactionReason::LevelSize,
        ),
        // Hot-aware (§3.5): table 2 is almost all hot, so table 1 goes though it
        // overlaps more below: (2000-0)/5000 > (2000-1990)/100.
        (
            "5 1 a c 2000\n5 2 d f 2000\n6 10 a c 5000 cap\n6 11 d f 100 cap",
            vec![(1, 1), (2, 1990)],
            vec![(5, vec![1]), (6, vec![10])],
            6,
            Tier::Capacity,
            CompactionReason::LevelSize,
        ),
        // Every table all hot: the level is not over its target once hot bytes are
        // discounted, so nothing is picked but the misplaced table.
        (
            "5 1 a c 2000\n5 2 d f 2000\n6 10 a c 5000 cap\n6 11 x z 100",
            vec![(1, 2000), (2, 2000)],
            vec![(6, vec![11])],
            6,
            Tier::Capacity,
            CompactionReason::TierChange,
        ),
        // All benefits zero but the level still over target: the oldest table goes.
        (
            "5 1 a c 2000\n5 2 d f 2000\n5 3 g h 2000\n6 10 a c 5000 cap",
            vec![(1, 2000), (2, 500), (3, 2000)],
            vec![(5, vec![2])],
            6,
            Tier::Capacity,
            CompactionReason::LevelSize,
        ),
    ];
    for (i, (fixture, hot, want, out, tier, reason)) in cases.into_iter().enumerate() {
        let v = version(fixture);
        let hot: HashMap<u64, u64> = hot.into_iter().collect();
        let p = pick(&v, &HashSet::new(), &tiered, &hot).expect("a pick");
        assert_eq!(ids(&p), want, "case {i}: {p:?}");
        assert_eq!(p.output_level, out, "case {i}");
        assert_eq!(p.output_tier, tier, "case {i}");
        assert_eq!(p.reason, reason, "case {i}");
    }
}

/// While the capacity tier is down, nothing that reads or writes it is picked: L0 still
/// compacts into the fast base level, the last fast level's overflow (into the capacity tier)
/// and a misplaced capacity table wait.
#[test]
fn a_capacity_outage_leaves_only_fast_tier_compactions() {
    let pl = tiered();
    let pick_with = |v: &Version, down: bool| {
        pick_while(v, &HashSet::new(), &pl, &HashMap::new(), down).map(|p| (ids(&p), p.output_tier))
    };
    // L5 (fast) far over its target scores above L0: up, it goes to L6 first; down, L0 does.
    let v = version(
        "0 1 a c 100\n0 2 a c 100\n0 3 a c 100\n0 4 a c 100\n\
         5 10 a m 90000\n5 11 n z 90000\n6 20 a z 10000 cap",
    );
    let (up, tier) = pick_with(&v, false).unwrap();
    assert_eq!((up[0].0, tier), (5, Tier::Capacity));
    let (down, tier) = pick_with(&v, true).unwrap();
    assert_eq!(
        (down[0].0, tier),
        (0, Tier::Fast),
        "into the fast base level"
    );
    // Only capacity-bound work left: nothing is picked while down.
    let v = version("5 10 a m 90000\n5 11 n z 90000\n6 20 a z 10000 cap");
    assert!(pick_with(&v, false).is_some());
    assert_eq!(pick_with(&v, true), None);
    // A table on the wrong tier (capacity, but its level is fast) needs a capacity read.
    let v = version("5 10 a m 100 cap\n6 20 a z 100000 cap");
    assert_eq!(pick_with(&v, false).map(|p| p.1), Some(Tier::Fast));
    assert_eq!(pick_with(&v, true), None);
}
