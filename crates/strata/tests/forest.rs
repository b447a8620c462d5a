//! Split-forest compaction (SifrDB) end to end: sequential writes move tables instead of
//! rewriting them; a merge that fails part-way leaves its compaction journal (trees cut at the
//! last checkpoint, the outputs so far installed) and is resumed at the cut, losing and
//! duplicating nothing; the style is kept across reopens.
//!
//! Replay a randomized failure with `STRATA_SEED=<seed> cargo test --test forest`.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{seeds, with_seed, Rng};
use strata::compaction::ForestOptions;
use strata::storage::{FaultFs, FaultPlan, LocalFs, Storage};
use strata::{CompactionStyle, Compression, Db, Options, ReadOptions};

fn forest_options() -> Options {
    Options {
        compaction_style: CompactionStyle::SplitForest,
        forest: ForestOptions {
            trees_per_level: 2,
            cleaning_threshold: 1,
            search_threads: 0,
        },
        write_buffer_size: 64 * 1024,
        level0_file_num_compaction_trigger: 2,
        target_file_size_base: 4096,
        compression_per_level: vec![Compression::None],
        ..Options::default()
    }
}

fn check_all(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, ctx: &str) {
    let got = common::contents(db);
    assert_eq!(got.len(), model.len(), "{ctx}: key count");
    assert!(got == *model, "{ctx}: contents differ");
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()), "{ctx}");
    }
}

#[test]
fn sequential_writes_move_tables_instead_of_rewriting_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), forest_options()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..40_000u64 {
        let (k, v) = (common::key(i), format!("value-{i:08}-{}", "x".repeat(60)));
        db.put(&k, &v).unwrap();
        model.insert(k, v.into_bytes());
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.forest.merges > 0, "{s}");
    assert!(s.forest.moved_tables > 0, "{s}");
    // Nothing overlaps: the merges rewrite (almost) nothing.
    assert!(
        s.compaction_write_bytes * 10 < s.flush_bytes,
        "sequential writes were rewritten:\n{s}"
    );
    check_all(&db, &model, "fillseq");
}

/// Writes random keys until a merge with early cleaning has checkpointed, then makes table
/// creation fail: the merge stops with trees cut at its last checkpoint. The cut trees must
/// not serve keys below the cut, the new tree must hold exactly the keys below it, and after
/// the fault heals (in the same process, and again after a reopen) the merge resumes there.
fn interrupted_merge(seed: u64, reopen: bool) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let fault = Arc::new(FaultFs::new(Arc::new(LocalFs)));
    let mut o = forest_options();
    o.storage = Some(fault.clone() as Arc<dyn Storage>);
    // Slow merges down so the fault lands in the middle of one.
    o.compaction_rate_limit = 2 << 20;
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let mut model = BTreeMap::new();
    let mut i = 0u64;
    let deadline = Instant::now() + Duration::from_secs(60);
    // Load until a merge has installed a checkpoint and is still running.
    loop {
        assert!(Instant::now() < deadline, "seed {seed}: no checkpoint");
        for _ in 0..2000 {
            let k = common::key(rng.below(200_000));
            let v = format!("v{i}-{}", "y".repeat(rng.below(200) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
            i += 1;
        }
        if db.sorted_runs().iter().any(|r| r.cut.is_some()) {
            break;
        }
    }
    db.flush().unwrap();
    fault.set_plan(FaultPlan {
        path_filter: Some(".sst".into()),
        fail_creates: true,
        ..Default::default()
    });
    // Wait for the merge to fail (its outputs can no longer be created).
    let start = Instant::now();
    while db.stats().background_errors == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "seed {seed}: merge never failed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let runs = db.sorted_runs();
    let cut_runs: Vec<_> = runs.iter().filter(|r| r.cut.is_some()).collect();
    // Merges out of several levels may have stopped; check each merge's journal.
    for c in &cut_runs {
        let cut = c.cut.clone().unwrap();
        // Every tree of the same merge has the same cut, and keeps only tables reaching it...
        for r in cut_runs
            .iter()
            .filter(|r| r.level == c.level && r.cut_into == c.cut_into)
        {
            assert_eq!(r.cut.as_ref(), Some(&cut), "seed {seed}: cuts differ");
            assert!(
                r.tables.iter().all(|t| !t.ends_before(&cut)),
                "seed {seed}: a cut tree keeps a table entirely below its cut"
            );
        }
        // ... and the merge's output tree ends below it.
        if let Some(out) = runs
            .iter()
            .find(|r| r.level > c.level && r.id == c.cut_into)
        {
            assert!(
                out.tables.iter().all(|t| t.ends_before(&cut)),
                "seed {seed}: the output tree reaches past the cut"
            );
        }
    }
    if !cut_runs.is_empty() {
        // Reads are right while the merge is stopped.
        check_all(&db, &model, &format!("seed {seed}: during the fault"));
    }
    let db = if reopen {
        db.close().unwrap();
        fault.heal();
        Db::open(dir.path(), o.clone()).unwrap()
    } else {
        fault.heal();
        db
    };
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    if !cut_runs.is_empty() {
        assert!(s.forest.resumes > 0, "seed {seed}: not resumed:\n{s}");
    }
    assert!(
        db.sorted_runs().iter().all(|r| r.cut.is_none()),
        "seed {seed}: a cut survived the resumed merge"
    );
    check_all(&db, &model, &format!("seed {seed}: after resuming"));
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    check_all(&db, &model, &format!("seed {seed}: after reopening"));
    eprintln!(
        "seed {seed}: {} cut trees at the fault; {}",
        cut_runs.len(),
        db.stats()
    );
}

#[test]
fn interrupted_merge_resumes_at_its_cut() {
    for seed in seeds(1) {
        with_seed("forest", seed, move || interrupted_merge(seed, false));
    }
}

#[test]
fn interrupted_merge_resumes_after_reopen() {
    for seed in seeds(1) {
        with_seed("forest", seed, move || interrupted_merge(seed, true));
    }
}

#[test]
fn the_style_is_kept_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), forest_options()).unwrap();
    for i in 0..20_000u64 {
        db.put(common::key(i * 7919 % 20_000), "v").unwrap();
    }
    db.close().unwrap();
    // Reopened with default (leveled) options: still a forest.
    let db = Db::open(
        dir.path(),
        Options {
            write_buffer_size: 64 * 1024,
            ..Options::default()
        },
    )
    .unwrap();
    for i in 20_000..60_000u64 {
        db.put(common::key(i * 7919 % 60_000), "v").unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.stats().forest.merges > 0, "{}", db.stats());
    assert!(
        db.sorted_runs().iter().any(|r| r.level > 0 && r.id != 0),
        "no split-forest tree"
    );
}

/// A forest whose trees sit on a slow capacity tier: point lookups with several candidate
/// trees are searched in parallel, from several threads at once, and must return exactly what
/// the sequential search (and the model) returns — newest version, deletions and range
/// deletions included.
fn parallel_search(seed: u64) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut c = strata::storage::object::CapacityOptions::new(format!("memory://forest-{seed}"));
    c.emulation = Some(strata::storage::object::Emulation {
        latency: Duration::from_micros(200 + rng.below(800)),
        ..Default::default()
    });
    let mut o = forest_options();
    o.capacity = Some(c);
    o.fast_levels = Some(0);
    o.hotrap.enabled = false;
    // Smaller than the data: lookups still reach the capacity tier.
    o.block_cache_capacity = 64 << 10;
    o.forest.trees_per_level = 8;
    o.forest.search_threads = 2 + rng.below(7) as usize;
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    {
        let db = Db::open(dir.path(), o.clone()).unwrap();
        // Rounds of overwrites, deletes and range deletes, each flushed: many trees per level
        // with overlapping versions.
        for round in 0..12u64 {
            for _ in 0..400 {
                let n = rng.below(1000);
                let k = common::key(n);
                match rng.below(10) {
                    0 => {
                        db.delete(&k).unwrap();
                        model.remove(&k);
                    }
                    1 => {
                        // Short ranges: most of the data must survive for lookups to have
                        // several candidate trees.
                        let end = common::key(n + 1 + rng.below(20));
                        if k < end {
                            db.delete_range(&k, &end).unwrap();
                            let doomed: Vec<_> = model
                                .range(k.clone()..end)
                                .map(|(k, _)| k.clone())
                                .collect();
                            for d in doomed {
                                model.remove(&d);
                            }
                        }
                    }
                    _ => {
                        let v = format!("r{round}-{}", rng.below(1 << 20)).into_bytes();
                        db.put(&k, &v).unwrap();
                        model.insert(k, v);
                    }
                }
            }
            db.flush().unwrap();
        }
        db.wait_for_compactions().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), o).unwrap();
    let runs = db.sorted_runs().iter().filter(|r| r.level > 0).count();
    assert!(runs >= 3, "seed {seed}: only {runs} trees");
    let model = Arc::new(model);
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (db, model) = (db.clone(), model.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed ^ (t + 1));
                for _ in 0..300 {
                    let k = common::key(rng.below(1000));
                    let got = db.get(&k).unwrap();
                    assert_eq!(
                        got.as_deref(),
                        model.get(&k).map(|v| v.as_slice()),
                        "seed {seed}: key {}",
                        String::from_utf8_lossy(&k)
                    );
                }
                // Range scans: each seek prefetches the trees' blocks in parallel first.
                let mut it = db.iter(ReadOptions::default()).unwrap();
                for _ in 0..40 {
                    let start = common::key(rng.below(1000));
                    it.seek(&start);
                    let want: Vec<_> = model.range(start.clone()..).take(8).collect();
                    for (k, v) in want {
                        assert!(it.valid(), "seed {seed}: scan ended early");
                        assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
                        it.next();
                    }
                }
                it.status().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = db.stats();
    assert!(
        s.forest.parallel_searches > 0,
        "seed {seed}: no parallel search\n{s}"
    );
    eprintln!(
        "seed {seed}: {runs} trees, {} parallel searches, {:.2} tables probed per get",
        s.forest.parallel_searches,
        s.table_probes as f64 / s.gets.max(1) as f64
    );
}

#[test]
fn parallel_search_returns_what_sequential_search_returns() {
    for seed in seeds(2) {
        with_seed("forest", seed, move || parallel_search(seed));
    }
}
