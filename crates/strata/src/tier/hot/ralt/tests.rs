//! Behavioural tests of [`Ralt`]: eviction, auto-tuning on synthetic workloads, range sums,
//! persistence and damage. Seeded (`STRATA_SEED` replays a run).

use std::path::Path;
use std::sync::Arc;

use strata_test_support::{seed, Rng};

use super::*;
use crate::storage::{FaultFs, FaultPlan, LocalFs};

const VALUE: u32 = 100;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// HotRAP size of every test record.
const HOTRAP: u64 = 9 + VALUE as u64;

fn opts(dir: &Path, auto_tune: bool) -> RaltOptions {
    let fd = 1_000_000;
    RaltOptions {
        dir: dir.to_path_buf(),
        buffer_bytes: 64 << 10,
        hot_set_limit: fd / 2,
        physical_limit: fd * 15 / 100,
        auto_tune,
        min_hot_set_limit: fd * 5 / 100,
        max_hot_set_limit: fd * 70 / 100,
        max_unstable_bytes: 10_000,
        decay_period_bytes: fd,
        tick_bytes: fd / 100,
        alpha: 0.01,
        block_bytes: 1024,
    }
}

fn open(dir: &Path, o: RaltOptions) -> Ralt {
    let _ = dir;
    Ralt::open(Arc::new(LocalFs), o).unwrap()
}

fn access(r: &Ralt, i: u64) {
    r.record_access(&key(i), VALUE);
    if r.needs_maintenance() {
        r.maintain().unwrap();
    }
}

/// 95% of accesses to `hot` keys starting at `base`, 5% over all `n` keys.
fn skewed(rng: &mut Rng, n: u64, base: u64, hot: u64) -> u64 {
    if rng.chance(95) {
        base + rng.below(hot)
    } else {
        rng.below(n)
    }
}

fn hot_share(r: &Ralt, keys: impl Iterator<Item = u64>) -> f64 {
    let (mut hot, mut all) = (0, 0);
    for k in keys {
        all += 1;
        hot += r.is_hot(&key(k)) as u32;
    }
    hot as f64 / all as f64
}

#[test]
fn classify_table() {
    let d = Decay {
        alpha: 0.5,
        tick_bytes: 1,
        decay_period_bytes: 10,
    };
    let once = Record::first_access(b"a", 1, 0);
    let mut twice = once.clone();
    twice.merge(&Record::first_access(b"a", 1, 0), &d);
    let thr = Threshold {
        score: 1.5,
        tie_keep: 1.0,
    };
    // (record, now, threshold tick, threshold, auto_tune, candidate, hot)
    let cases = [
        (&once, 0, 0, Threshold::NONE, false, true, true),
        (&once, 0, 0, Threshold::NONE, true, true, false), // unstable: not hot
        (&twice, 0, 0, Threshold::NONE, true, true, true),
        (&twice, 0, 0, thr, false, true, true), // 2 ≥ 1.5
        (&once, 0, 0, thr, false, false, false),
        (&twice, 3, 0, thr, false, true, true), // both decay alike
        (&twice, 3, 3, thr, false, false, false), // 0.25 < 1.5 (threshold set at 3)
        (&twice, 25, 0, Threshold::NONE, true, true, false), // counter decayed to 0
    ];
    for (i, (r, now, tt, t, auto, cand, hot)) in cases.into_iter().enumerate() {
        let f = classify(r, now, &d, tt, t, auto);
        assert_eq!(f & FLAG_CANDIDATE != 0, cand, "case {i}");
        assert_eq!(f & FLAG_HOT != 0, hot, "case {i}");
        assert_eq!(f & FLAG_STABLE, r.flags & FLAG_STABLE, "case {i}");
    }
}

#[test]
fn flush_makes_keys_hot_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(dir.path(), opts(dir.path(), false));
    for i in 0..100 {
        r.record_access(&key(i), VALUE);
    }
    assert!(!r.is_hot(&key(5)), "buffered keys are not hot yet");
    r.maintain().unwrap();
    assert!((0..100).all(|i| r.is_hot(&key(i))));
    assert!(!r.is_hot(&key(1000)));
    let s = r.stats();
    assert_eq!((s.records, s.runs, s.flushes, s.accesses), (100, 1, 1, 100));
    assert_eq!(s.hot_set_bytes, 100 * HOTRAP);
    assert_eq!(
        r.hot_keys_in_range(&key(10), &key(12)).unwrap(),
        vec![key(10), key(11), key(12)]
    );
}

#[test]
fn lagging_maintenance_drops_accesses() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path(), false);
    o.buffer_bytes = 1000;
    let r = open(dir.path(), o);
    for i in 0..1000 {
        r.record_access(&key(i), VALUE);
    }
    let s = r.stats();
    assert!(s.dropped_accesses > 900, "{s:?}");
    assert!(r.needs_maintenance());
    r.maintain().unwrap();
    assert!(s.accesses == 1000 && r.stats().records < 100);
}

#[test]
fn eviction_drops_about_ten_percent_and_keeps_the_highest_scores() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path(), false);
    o.tick_bytes = u64::MAX / 4; // one time slice: score = number of accesses
    o.buffer_bytes = 64 << 20;
    o.hot_set_limit = u64::MAX;
    o.physical_limit = u64::MAX;
    let r = open(dir.path(), o.clone());
    let n = 5000u64;
    for i in 0..n {
        for _ in 0..1 + i % 50 {
            r.record_access(&key(i), VALUE);
        }
    }
    r.maintain().unwrap();
    let before = r.stats();
    assert_eq!(before.records, n);
    // Reopen with a physical limit 1% below the current size: one eviction.
    drop(r);
    o.physical_limit = before.physical_bytes * 99 / 100;
    let r = open(dir.path(), o);
    assert!(r.needs_maintenance());
    r.maintain().unwrap();
    let after = r.stats();
    assert_eq!(after.evictions, 1);
    let kept = after.records as f64 / n as f64;
    assert!((0.85..=0.92).contains(&kept), "kept {kept}");
    // Scores are 1..=50 accesses; the dropped ones are the lowest.
    let survivors = r.hot_keys_in_range(&key(0), &key(n)).unwrap();
    assert_eq!(survivors.len() as u64, after.records);
    let min_kept = survivors
        .iter()
        .map(|k| {
            std::str::from_utf8(&k[1..])
                .unwrap()
                .parse::<u64>()
                .unwrap()
                % 50
        })
        .min()
        .unwrap();
    assert!(min_kept >= 3, "a low-score key survived: {min_kept}");
    let dropped_high = (0..n)
        .filter(|i| i % 50 >= 6 && !survivors.contains(&key(*i)))
        .count();
    assert_eq!(dropped_high, 0);
}

#[test]
fn auto_tune_uniform_shrinks_to_the_minimum() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path(), true);
    let min = o.min_hot_set_limit;
    let r = open(dir.path(), o);
    let mut rng = Rng::new(seed("auto_tune_uniform"));
    for _ in 0..60_000 {
        access(&r, rng.below(1_000_000));
    }
    let s = r.stats();
    eprintln!("uniform: {s:?}");
    assert!(s.evictions > 0, "{s:?}");
    assert_eq!(s.hot_set_limit, min, "{s:?}");
    assert!(s.hot_set_bytes < min / 4, "{s:?}");
}

#[test]
fn auto_tune_skewed_converges_to_the_hot_data() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(dir.path(), opts(dir.path(), true));
    let mut rng = Rng::new(seed("auto_tune_skewed"));
    let (n, hot) = (20_000u64, 1_000u64);
    for _ in 0..200_000 {
        access(&r, skewed(&mut rng, n, 0, hot));
    }
    let s = r.stats();
    eprintln!("skewed: {s:?}");
    let hot_bytes = hot * HOTRAP;
    let lim = s.hot_set_limit as f64 / hot_bytes as f64;
    assert!(
        (0.9..=1.5).contains(&lim),
        "limit {lim:.2}× the hot data: {s:?}"
    );
    let hot_hit = hot_share(&r, 0..hot);
    let cold_hit = hot_share(&r, hot..n);
    assert!(hot_hit > 0.9, "hot keys hot: {hot_hit}");
    assert!(cold_hit < 0.02, "cold keys hot: {cold_hit}");
}

#[test]
fn shifting_hotspot_moves_the_hot_set() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(dir.path(), opts(dir.path(), true));
    let mut rng = Rng::new(seed("shifting_hotspot"));
    let (n, hot, a, b) = (20_000u64, 1_000u64, 0u64, 10_000u64);
    for _ in 0..60_000 {
        access(&r, skewed(&mut rng, n, a, hot));
    }
    assert!(hot_share(&r, a..a + hot) > 0.9);
    // 150k accesses ≈ 16 decay periods: A's counters run out, its scores fade.
    for _ in 0..150_000 {
        access(&r, skewed(&mut rng, n, b, hot));
    }
    let (in_a, in_b) = (hot_share(&r, a..a + hot), hot_share(&r, b..b + hot));
    eprintln!("shift: A {in_a} B {in_b} {:?}", r.stats());
    assert!(in_b > 0.9, "B hot: {in_b}");
    assert!(in_a < 0.05, "A still hot: {in_a}");
}

#[test]
fn hot_bytes_in_range_agrees_with_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path(), false);
    o.buffer_bytes = 32 << 10;
    let r = open(dir.path(), o);
    let mut rng = Rng::new(seed("hot_bytes_in_range"));
    for _ in 0..20_000 {
        access(&r, rng.below(8_000));
    }
    r.maintain().unwrap();
    // Several runs (a key may sit in more than one), whatever the last merge left.
    for i in 0..10 {
        if r.current().runs.len() > 1 {
            break;
        }
        for k in 0..50 {
            r.record_access(&key(i * 1000 + k * 7), VALUE);
        }
        r.maintain().unwrap();
    }
    let s = r.current();
    assert!(s.runs.len() > 1, "want several runs");
    // Brute force: every hot record of every run, by reading all blocks.
    let mut per_run: Vec<Vec<(Vec<u8>, u64)>> = Vec::new();
    for run in &s.runs {
        let mut v = Vec::new();
        for b in 0..run.block_count() {
            for rec in run.read_block(b).unwrap() {
                if rec.flags & FLAG_HOT != 0 {
                    v.push((rec.key.clone(), rec.hotrap_size()));
                }
            }
        }
        per_run.push(v);
    }
    for _ in 0..500 {
        let (x, y) = (rng.below(8_200), rng.below(8_200));
        let (lo, hi) = (key(x.min(y)), key(x.max(y)));
        let mut slack = 0;
        let mut exact = 0;
        for (run, recs) in s.runs.iter().zip(&per_run) {
            let e: u64 = recs
                .iter()
                .filter(|(k, _)| *k >= lo && *k <= hi)
                .map(|x| x.1)
                .sum();
            let est = run.hot_bytes_in_range(&lo, &hi);
            assert!(
                est >= e && est <= e + 2 * run.max_block_hot_bytes(),
                "{est} vs {e}"
            );
            exact += e;
            slack += 2 * run.max_block_hot_bytes();
        }
        let est = r.hot_bytes_in_range(&lo, &hi);
        assert!(est >= exact && est <= exact + slack);
    }
}

#[test]
fn reopen_keeps_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path(), true);
    let r = open(dir.path(), o.clone());
    let mut rng = Rng::new(seed("reopen"));
    for _ in 0..50_000 {
        access(&r, skewed(&mut rng, 20_000, 0, 1_000));
    }
    r.maintain().unwrap();
    let before = r.stats();
    let hot_before: Vec<bool> = (0..2000).map(|i| r.is_hot(&key(i))).collect();
    let clock = r.clock.load(Relaxed);
    drop(r);
    let r = open(dir.path(), o);
    let after = r.stats();
    assert_eq!(after.damaged_opens, 0);
    assert_eq!(
        (
            after.physical_bytes,
            after.records,
            after.runs,
            after.hot_set_bytes
        ),
        (
            before.physical_bytes,
            before.records,
            before.runs,
            before.hot_set_bytes
        )
    );
    assert_eq!(
        (after.hot_set_limit, after.physical_limit),
        (before.hot_set_limit, before.physical_limit)
    );
    assert_eq!(r.clock.load(Relaxed), clock);
    let hot_after: Vec<bool> = (0..2000).map(|i| r.is_hot(&key(i))).collect();
    assert_eq!(hot_before, hot_after);
}

#[test]
fn damaged_files_start_empty_without_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path(), false);
    let fill = |r: &Ralt| {
        for i in 0..3_000 {
            r.record_access(&key(i), VALUE);
        }
        r.maintain().unwrap();
    };
    let files = |p: &Path| {
        let mut v: Vec<String> = LocalFs.list(p).unwrap();
        v.sort();
        v
    };
    for target in ["run", "state", "missing run"] {
        let r = open(dir.path(), o.clone());
        fill(&r);
        assert!(r.stats().records > 0);
        drop(r);
        let names = files(dir.path());
        let run = names.iter().find(|n| n.ends_with(RUN_SUFFIX)).unwrap();
        let victim = dir
            .path()
            .join(if target == "state" { STATE_FILE } else { run });
        if target == "missing run" {
            LocalFs.remove(&victim).unwrap();
        } else {
            let mut bytes = LocalFs.read_all(&victim).unwrap();
            let i = bytes.len() / 2;
            bytes[i] ^= 0x10;
            std::fs::write(&victim, bytes).unwrap();
        }
        let r = Ralt::open(Arc::new(LocalFs), o.clone()).unwrap();
        let s = r.stats();
        assert_eq!((s.damaged_opens, s.records, s.runs), (1, 0, 0), "{target}");
        assert!(
            files(dir.path()).is_empty(),
            "{target}: {:?}",
            files(dir.path())
        );
        fill(&r); // usable afterwards
        assert_eq!(r.stats().records, 3_000);
        drop(r);
        assert_eq!(open(dir.path(), o.clone()).stats().damaged_opens, 0);
    }
}

#[test]
fn storage_faults_fail_maintain_but_not_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultFs::new(Arc::new(LocalFs));
    let o = opts(dir.path(), false);
    let r = Ralt::open(Arc::new(fault.clone()), o.clone()).unwrap();
    for i in 0..100 {
        r.record_access(&key(i), VALUE);
    }
    r.maintain().unwrap();
    for i in 100..200 {
        r.record_access(&key(i), VALUE);
    }
    fault.set_plan(FaultPlan {
        fail_syncs: true,
        ..FaultPlan::default()
    });
    assert!(r.maintain().is_err());
    let s = r.stats();
    assert_eq!((s.records, s.runs, s.dropped_accesses), (100, 1, 100));
    assert!(r.is_hot(&key(5)));
    fault.heal();
    r.record_access(&key(300), VALUE);
    r.maintain().unwrap();
    assert_eq!(r.stats().records, 101);
    drop(r);
    // Reads failing at open: start empty, no error.
    fault.set_plan(FaultPlan {
        fail_reads: true,
        ..FaultPlan::default()
    });
    let r = Ralt::open(Arc::new(fault.clone()), o).unwrap();
    assert_eq!((r.stats().damaged_opens, r.stats().records), (1, 0));
}

#[test]
fn physical_size_stays_bounded_under_a_long_stream() {
    for auto in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path(), auto);
        o.buffer_bytes = 16 << 10;
        o.physical_limit = 100_000;
        let limit = o.physical_limit;
        let r = open(dir.path(), o);
        let mut rng = Rng::new(seed("bounded_physical"));
        let mut max_seen = 0;
        for _ in 0..150_000 {
            r.record_access(&key(rng.below(10_000_000)), VALUE);
            if r.needs_maintenance() {
                r.maintain().unwrap();
                let s = r.stats();
                max_seen = max_seen.max(s.physical_bytes);
                assert!(s.physical_bytes <= s.physical_limit.max(limit), "{s:?}");
            }
        }
        let s = r.stats();
        assert!(
            s.evictions > 5 && max_seen <= limit,
            "auto {auto}: {s:?} max {max_seen}"
        );
        let on_disk: u64 = LocalFs
            .list(dir.path())
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(RUN_SUFFIX))
            .map(|n| std::fs::metadata(dir.path().join(n)).unwrap().len())
            .sum();
        assert_eq!(on_disk, s.physical_bytes, "no leaked run files");
    }
}

#[test]
fn ralt_is_send_and_sync_and_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Ralt>();
    let dir = tempfile::tempdir().unwrap();
    let r = Arc::new(open(dir.path(), opts(dir.path(), false)));
    let readers: Vec<_> = (0..2u64)
        .map(|t| {
            let r = r.clone();
            std::thread::spawn(move || {
                for i in 0..20_000 {
                    r.record_access(&key(t * 100_000 + i % 500), VALUE);
                    let _ = r.is_hot(&key(i % 500));
                }
            })
        })
        .collect();
    while !readers.iter().all(|h| h.is_finished()) {
        r.maintain().unwrap();
    }
    for h in readers {
        h.join().unwrap();
    }
    r.maintain().unwrap();
    let s = r.stats();
    assert_eq!(s.accesses, 40_000);
    // Accesses may be dropped if a reader outruns maintenance, never invented. (`records`
    // counts a key once per run holding it, so count distinct keys.)
    let keys = r.hot_keys_in_range(&key(0), &key(200_000)).unwrap();
    assert!(
        keys.len() <= 1_000 && keys.len() >= 500,
        "{} keys, {s:?}",
        keys.len()
    );
    assert!((0..500).any(|i| r.is_hot(&key(i))));
}

/// `set_fast_tier_bytes` moves the hot-set limit into the bounds of the new size at once
/// (down when the fast tier shrank below it, up when it grew past it), keeps the physical
/// limit's ratio, and does nothing to fixed limits.
#[test]
fn a_new_fast_tier_size_clamps_the_limits_into_its_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let r = open(dir.path(), opts(dir.path(), true));
    let limits = |r: &Ralt| {
        let s = r.stats();
        (s.hot_set_limit, s.physical_limit, s.fast_tier_bytes)
    };
    assert_eq!(limits(&r), (500_000, 150_000, 0));
    // 4 MiB: bounds [5%, 70%] = [209,715, 2,936,012]; 500,000 is within them.
    r.set_fast_tier_bytes(4 << 20);
    assert_eq!(limits(&r), (500_000, 150_000, 4 << 20));
    // 100 MiB: the minimum is 5,242,880; the physical limit keeps its 0.3 ratio.
    r.set_fast_tier_bytes(100 << 20);
    assert_eq!(limits(&r), (5_242_880, 1_572_864, 100 << 20));
    // 2 MiB: the maximum is 1,467,970 (70% of whole hundredths).
    r.set_fast_tier_bytes(2 << 20);
    let (hot, physical, f) = limits(&r);
    assert_eq!((hot, f), (1_467_970, 2 << 20));
    assert_eq!(physical, (1_467_970f64 * 0.3).ceil() as u64);
    // Fixed limits are the caller's.
    let dir2 = tempfile::tempdir().unwrap();
    let fixed = open(dir2.path(), opts(dir2.path(), false));
    fixed.set_fast_tier_bytes(100 << 20);
    assert_eq!(limits(&fixed), (500_000, 150_000, 0));
}
