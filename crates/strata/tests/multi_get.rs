//! `Db::multi_get` against one `get_opt` per key on real tables: the same answers, and the same
//! lookup statistics (lookups, found, filter checks and rejections, false positives, table
//! probes, trie checks), with filters on and off, data-block hash indexes on and off, and with a
//! capacity tier whose tables use the block index or the MashMeta trie (with the search threads
//! on, those keys run concurrently and probe speculatively: then only the answers and the
//! lookup counts must match). Block-cache hits are not compared: a block the batch shares is
//! looked up once by design.

mod common;

use common::{key, seeds, with_seed, Rng};
use strata::{Db, DbStats, Options, ReadOptions, WriteBatch};

/// The lookup counters both paths must move alike.
fn counters(s: &DbStats) -> [u64; 8] {
    [
        s.gets,
        s.get_found,
        s.bloom_checked,
        s.bloom_useful,
        s.bloom_false_positive,
        s.table_probes,
        s.trie_checked,
        s.trie_rejected,
    ]
}

fn diff(a: [u64; 8], b: [u64; 8]) -> [u64; 8] {
    std::array::from_fn(|i| b[i] - a[i])
}

fn check(seed: u64, tiered: bool) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    // With the search threads (tiered only), capacity-tier candidates are probed concurrently
    // and speculatively: the answers are the sequential ones, the probe counts vary with timing.
    let parallel = tiered && rng.chance(50);
    let mut opts = Options {
        write_buffer_size: 16 * 1024,
        target_file_size_base: 8 * 1024,
        max_bytes_for_level_base: 32 * 1024,
        block_size: 256 + rng.below(1024) as usize,
        bloom_bits_per_key: [0.0, 10.0][rng.below(2) as usize],
        data_block_hash_ratio: [0.0, 0.75][rng.below(2) as usize],
        // Off: a row-cache answer would make the second path's probes differ.
        row_cache_capacity: 0,
        ..Options::default()
    };
    if tiered {
        opts.capacity = Some(strata::storage::object::CapacityOptions::new(format!(
            "memory://multi-get-{seed}"
        )));
        // L0 on the fast tier, every other level on the capacity tier.
        opts.fast_levels = Some(1);
        if !parallel {
            opts.forest.search_threads = 0;
        }
        opts.capacity_index = [
            strata::sst::index::IndexKind::MashMeta,
            strata::sst::index::IndexKind::Block,
        ][rng.below(2) as usize];
        opts.hotrap.enabled = false;
    }
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for round in 0..4 {
        for _ in 0..600 {
            let k = key(rng.below(2000));
            match rng.below(10) {
                0 => db.delete(&k).unwrap(),
                1 => {
                    let end = key(rng.below(2000));
                    if k < end {
                        db.delete_range(&k, &end).unwrap();
                    }
                }
                _ => {
                    let mut b = WriteBatch::new();
                    b.put(&k, format!("v{round}-{}", rng.below(1000)).repeat(4));
                    db.write(b).unwrap();
                }
            }
        }
        if round < 3 {
            db.flush().unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    let snap = db.snapshot();
    for _ in 0..200 {
        db.put(key(rng.below(2000)), "after the snapshot").unwrap();
    }
    // Quiet from here on: no flush or compaction may change the tables between the two paths.
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for ro in [
        ReadOptions::default(),
        ReadOptions {
            snapshot: Some(snap.clone()),
            ..Default::default()
        },
    ] {
        for _ in 0..5 {
            // Distinct keys (a duplicate is probed twice by design), some absent.
            let mut keys: Vec<Vec<u8>> = (0..1 + rng.below(60))
                .map(|_| key(rng.below(2200)))
                .collect();
            keys.sort();
            keys.dedup();
            if rng.chance(50) {
                keys.reverse();
            }
            let before = counters(&db.stats());
            let one_by_one: Vec<_> = keys.iter().map(|k| db.get_opt(&ro, k).unwrap()).collect();
            let mid = counters(&db.stats());
            let batched: Vec<_> = db
                .multi_get(&ro, &keys)
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
            let after = counters(&db.stats());
            assert_eq!(batched, one_by_one, "seed {seed}: answers");
            let n = if parallel { 2 } else { 8 };
            assert_eq!(
                diff(mid, after)[..n],
                diff(before, mid)[..n],
                "seed {seed}: [gets, found, bloom checked, useful, false positive, table probes, \
                 trie checked, rejected]"
            );
        }
    }
    // A batch leaves nothing behind that holds the database: it reopens at once (the search
    // threads once kept finished capacity-tier jobs, and with them the directory's LOCK).
    drop(snap);
    let keys: Vec<Vec<u8>> = (0..64).map(|_| key(rng.below(2000))).collect();
    let mut db = db;
    for _ in 0..10 {
        assert!(db
            .multi_get(&ReadOptions::default(), &keys)
            .iter()
            .all(|r| r.is_ok()));
        db.close().unwrap();
        db = Db::open(dir.path(), opts.clone()).unwrap();
    }
}

#[test]
fn multi_get_answers_and_counts_as_gets_do() {
    for seed in seeds(4) {
        with_seed("multi_get", seed, move || check(seed, false));
    }
}

#[test]
fn multi_get_over_a_capacity_tier_answers_and_counts_as_gets_do() {
    for seed in seeds(4) {
        with_seed("multi_get", seed, move || check(seed, true));
    }
}
