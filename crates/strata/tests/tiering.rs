//! The capacity tier end to end: placement, MetaCache, LAP and naive data caches, filters that
//! spare capacity-tier requests, retries and permanent errors, orphan collection.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use strata::cache::persistent::{PersistentCacheKind, PersistentCacheOptions};
use strata::storage::object::{CapacityOptions, Emulation};
use strata::tier::Tier;
use strata::{Db, ErrorKind, Options};

fn k(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn v(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(200)).into_bytes()
}

fn tiered(url: String, cache: PersistentCacheKind) -> Options {
    let mut c = CapacityOptions::new(url);
    c.part_size = 5 << 20;
    Options {
        write_buffer_size: 64 * 1024,
        target_file_size_base: 64 * 1024,
        max_bytes_for_level_base: 256 * 1024,
        block_size: 1024,
        block_cache_capacity: 0,
        bloom_bits_per_key: 20.0,
        capacity: Some(c),
        fast_levels: Some(0),
        persistent_cache: PersistentCacheOptions {
            kind: cache,
            capacity: 8 << 20,
            bucket_size: 1 << 20,
            unit_size: 256,
            file_size: 256 << 10,
        },
        ..Options::default()
    }
}

fn load(db: &Db, n: u32) {
    for i in 0..n {
        db.put(k(i), v(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
}

#[test]
fn deep_levels_live_on_the_capacity_tier_and_metadata_stays_local() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("capacity");
    let o = tiered(
        format!("file://{}", cap.display()),
        PersistentCacheKind::None,
    );
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    load(&db, 3000);
    let tables = db.live_tables();
    assert!(!tables.is_empty());
    for (level, f) in &tables {
        let want = if *level == 0 {
            Tier::Fast
        } else {
            Tier::Capacity
        };
        assert_eq!(f.tier, want, "table {} at L{level}", f.id);
    }
    let objects = std::fs::read_dir(cap.join("tables")).unwrap().count();
    assert_eq!(
        objects,
        tables
            .iter()
            .filter(|(_, f)| f.tier == Tier::Capacity)
            .count()
    );
    let sidecars = std::fs::read_dir(dir.path().join("db/meta"))
        .unwrap()
        .count();
    assert_eq!(sidecars, objects, "one metadata sidecar per capacity table");
    db.close().unwrap();

    // After a restart, tables open from their sidecars; missing keys whose filters say no make
    // no capacity-tier request at all.
    let db = Db::open(dir.path().join("db"), o).unwrap();
    for i in 0..2000 {
        assert!(db.get(format!("key{i:06}x")).unwrap().is_none());
    }
    let s = db.stats();
    assert!(s.tier.meta_local_reads > 0, "{s}");
    assert_eq!(s.tier.meta_builds, 0, "no sidecar had to be rebuilt");
    assert!(
        s.tier.capacity_gets <= s.bloom_false_positive,
        "capacity GETs {} beyond bloom false positives {}",
        s.tier.capacity_gets,
        s.bloom_false_positive
    );
    for i in (0..3000).step_by(7) {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
    }
    assert!(db.stats().tier.capacity_gets > 0);
}

#[test]
fn lost_sidecars_are_rebuilt_from_the_capacity_tier() {
    let dir = tempfile::tempdir().unwrap();
    let o = tiered(
        format!("file://{}/cap", dir.path().display()),
        PersistentCacheKind::None,
    );
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    load(&db, 1000);
    db.close().unwrap();
    std::fs::remove_dir_all(dir.path().join("db/meta")).unwrap();
    let db = Db::open(dir.path().join("db"), o).unwrap();
    for i in (0..1000).step_by(3) {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
    }
    assert!(db.stats().tier.meta_builds > 0);
}

#[test]
fn lap_cache_serves_repeats_invalidates_on_compaction_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let o = tiered(
        format!("file://{}/cap", dir.path().display()),
        PersistentCacheKind::Lap,
    );
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    load(&db, 2000);
    for _ in 0..2 {
        for i in (0..2000).step_by(5) {
            assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
        }
    }
    let s = db.stats();
    assert!(s.tier.pcache_hits > 0 && s.tier.pcache_inserts > 0, "{s}");
    assert!(
        s.tier.fast_hit_rate > 0.0 && s.tier.fast_hit_rate < 1.0,
        "{s}"
    );
    db.close().unwrap();

    // Entries are checksummed and kept across a restart: the same reads hit without requests.
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    for i in (0..2000).step_by(5) {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
    }
    let s = db.stats();
    assert!(s.tier.pcache_hits > 0, "{s}");
    assert_eq!(
        s.tier.capacity_gets, 0,
        "warm cache after restart: {}",
        s.tier
    );

    // Rewriting everything deletes the old tables: their cached blocks are invalidated.
    // Compactions stream their inputs past the cache: no lookups, no hits, no misses.
    let before = db.stats().tier;
    for i in 0..2000 {
        db.put(k(i), b"new").unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.tier.pcache_invalidations > 0, "{s}");
    assert_eq!(
        (s.tier.pcache_hits, s.tier.pcache_misses),
        (before.pcache_hits, before.pcache_misses),
        "compaction reads bypass the persistent cache"
    );
    assert!(s.tier.capacity_gets > before.capacity_gets, "{s}");
    assert_eq!(db.get(k(10)).unwrap().as_deref(), Some(&b"new"[..]));
    db.close().unwrap();

    // A damaged cache file is never returned as data.
    let lap = dir.path().join("db/lap/data.cache");
    let mut bytes = std::fs::read(&lap).unwrap();
    for b in bytes.iter_mut().skip(4096).step_by(97) {
        *b ^= 0x55;
    }
    std::fs::write(&lap, bytes).unwrap();
    let db = Db::open(dir.path().join("db"), o).unwrap();
    for i in (0..2000).step_by(3) {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&b"new"[..]));
    }
}

#[test]
fn naive_cache_baseline_caches_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let o = tiered(
        format!("file://{}/cap", dir.path().display()),
        PersistentCacheKind::Naive,
    );
    let db = Db::open(dir.path().join("db"), o).unwrap();
    load(&db, 2000);
    for _ in 0..2 {
        for i in (0..2000).step_by(5) {
            assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
        }
    }
    let s = db.stats();
    assert!(s.tier.pcache_hits > 0, "{s}");
}

#[test]
fn transient_errors_are_retried_and_permanent_ones_surface() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = tiered(
        format!("file://{}/cap", dir.path().display()),
        PersistentCacheKind::None,
    );
    let c = o.capacity.as_mut().unwrap();
    c.max_attempts = 6;
    c.emulation = Some(Emulation {
        latency: Duration::from_millis(1),
        ..Default::default()
    });
    let db = Db::open(dir.path().join("db"), o).unwrap();
    load(&db, 1500);
    let em = db.capacity_tier().unwrap().emulation().unwrap().clone();
    // Some requests fail: retries hide it.
    em.set(Emulation {
        error_rate: 0.1,
        seed: 7,
        ..Default::default()
    });
    for i in (0..1500).step_by(11) {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
    }
    assert!(db.stats().tier.capacity_retries > 0);
    // Every request fails: the error surfaces, nothing wrong is returned.
    em.set(Emulation {
        error_rate: 1.0,
        ..Default::default()
    });
    let mut errors = 0;
    for i in (0..1500).step_by(500) {
        match db.get(k(i)) {
            Ok(got) => assert_eq!(got.as_deref(), Some(&v(i)[..])),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Io, "{e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
    em.set(Emulation::default());
    for i in (0..1500).step_by(13) {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
    }
    assert!(em.stats().injected_errors.load(Ordering::Relaxed) > 0);
}

#[test]
fn orphaned_objects_are_collected_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let o = tiered(
        format!("file://{}", cap.display()),
        PersistentCacheKind::None,
    );
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    load(&db, 500);
    db.close().unwrap();
    // Objects a crash left behind: an upload that completed but never reached the manifest.
    std::fs::write(cap.join("tables/999999.sst"), b"orphan").unwrap();
    // With the default minimum age it is queued, not deleted (another process may have read
    // a manifest naming it); with none, the garbage collection deletes it at once.
    let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
    assert!(cap.join("tables/999999.sst").exists());
    assert_eq!(db.stats().tier.capacity_gc_pending_tables, 1);
    db.close().unwrap();
    let mut o = o;
    o.capacity_gc_min_age = std::time::Duration::ZERO;
    let db = Db::open(dir.path().join("db"), o).unwrap();
    db.wait_for_compactions().unwrap();
    assert!(!cap.join("tables/999999.sst").exists());
    let live: Vec<u64> = db
        .live_tables()
        .into_iter()
        .filter(|(_, f)| f.tier == Tier::Capacity)
        .map(|(_, f)| f.id)
        .collect();
    assert_eq!(
        std::fs::read_dir(cap.join("tables")).unwrap().count(),
        live.len()
    );
    let _ = Arc::new(());
}

#[test]
fn a_database_with_capacity_tables_needs_its_capacity_tier() {
    let dir = tempfile::tempdir().unwrap();
    let o = tiered(
        format!("file://{}/cap", dir.path().display()),
        PersistentCacheKind::None,
    );
    let db = Db::open(dir.path().join("db"), o).unwrap();
    load(&db, 500);
    db.close().unwrap();
    let err = Db::open(dir.path().join("db"), Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

#[test]
fn compactions_into_the_capacity_tier_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let o = tiered(
        format!("file://{}/cap", dir.path().display()),
        PersistentCacheKind::None,
    );
    let db = Db::open(dir.path().join("db"), o).unwrap();
    for i in 0..3000 {
        db.put(k(i), v(i)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.tier.capacity_put_bytes > 0, "{s}");
    assert!(s.compaction_write_bytes > 0, "{s}");
    assert!(s.levels.iter().skip(1).any(|l| l.compactions > 0), "{s}");
}

/// A crash during an upload to a `file://` capacity tier leaves a staged `NNNNNN.sst#N` file
/// that object_store's listing never shows; the next open removes it (and nothing else).
#[test]
fn staged_uploads_a_crash_left_on_a_file_tier_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let opts = || strata::Options {
        capacity: Some(strata::storage::object::CapacityOptions::new(format!(
            "file://{}",
            cap.display()
        ))),
        ..strata::Options::default()
    };
    let db = strata::Db::open(dir.path().join("db"), opts()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let tables = cap.join("tables");
    std::fs::create_dir_all(&tables).unwrap();
    std::fs::write(tables.join("000999.sst#17"), b"partial upload").unwrap();
    std::fs::write(tables.join("notes#1"), b"not ours").unwrap();
    let db = strata::Db::open(dir.path().join("db"), opts()).unwrap();
    assert!(
        !tables.join("000999.sst#17").exists(),
        "staged upload left behind"
    );
    assert!(
        tables.join("notes#1").exists(),
        "only staged tables are removed"
    );
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}

/// RocksMash §3.3: with MashMeta, a capacity table answers an absent key with no capacity-tier
/// request (no false positives) and a present one with exactly one data-block GET after at most
/// one local metadata read; with a block index and bloom filter, absent keys cost a GET per
/// false positive. The metadata kept locally shrinks, and tables of both kinds coexist when the
/// option changes between opens.
#[test]
fn mashmeta_reads_at_most_one_block_and_never_for_absent_keys() {
    use strata::sst::index::IndexKind;
    let mut meta_bytes = Vec::new();
    for kind in [IndexKind::MashMeta, IndexKind::Block] {
        let dir = tempfile::tempdir().unwrap();
        let cap = dir.path().join("capacity");
        let mut o = tiered(
            format!("file://{}", cap.display()),
            PersistentCacheKind::None,
        );
        o.capacity_index = kind;
        o.bloom_bits_per_key = 10.0;
        let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
        load(&db, 3000);
        db.close().unwrap();
        let db = Db::open(dir.path().join("db"), o.clone()).unwrap();
        let tables = db.live_tables().len() as u64;
        for i in 0..3000 {
            assert!(db.get(format!("key{i:06}x")).unwrap().is_none());
        }
        let s = db.stats();
        assert!(s.tier.meta_local_reads <= tables, "{s}");
        match kind {
            IndexKind::MashMeta => {
                assert_eq!(s.tier.capacity_gets, 0, "absent keys sent GETs: {s}");
                assert!(s.trie_rejected >= 2990, "{s}");
                assert_eq!(s.bloom_checked, 0, "{s}");
                assert!(s.tier.capacity_trie_bytes > 0, "{s}");
                assert_eq!(
                    s.tier.capacity_index_bytes + s.tier.capacity_filter_bytes,
                    0
                );
            }
            IndexKind::Block => {
                assert_eq!(s.tier.capacity_gets, s.bloom_false_positive, "{s}");
                assert_eq!(s.trie_checked, 0, "{s}");
                assert_eq!(s.tier.capacity_trie_bytes, 0, "{s}");
                assert!(s.tier.capacity_index_bytes > 0, "{s}");
            }
            IndexKind::Auto => unreachable!("not run here"),
        }
        meta_bytes.push(s.tier.capacity_meta_bytes);
        let before = s.tier.capacity_gets;
        for i in (0..3000).step_by(11) {
            let g0 = db.stats().tier.capacity_gets;
            assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
            assert_eq!(
                db.stats().tier.capacity_gets - g0,
                1,
                "one block GET for key {i}"
            );
        }
        assert!(db.stats().tier.capacity_gets > before);
        db.close().unwrap();

        // Switch the option: new tables get the other index, old ones keep theirs.
        o.capacity_index = match kind {
            IndexKind::MashMeta => IndexKind::Block,
            IndexKind::Block | IndexKind::Auto => IndexKind::MashMeta,
        };
        let db = Db::open(dir.path().join("db"), o).unwrap();
        for i in (0..3000).step_by(3) {
            db.put(k(i), format!("new-{i}")).unwrap();
        }
        db.flush().unwrap();
        for i in 0..3000 {
            let want = if i % 3 == 0 {
                format!("new-{i}").into_bytes()
            } else {
                v(i)
            };
            assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&want[..]), "key {i}");
        }
        db.compact_range(None, None).unwrap();
        for i in (0..3000).step_by(7) {
            let want = if i % 3 == 0 {
                format!("new-{i}").into_bytes()
            } else {
                v(i)
            };
            assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&want[..]), "key {i}");
        }
        let mut it = db.iter(strata::ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status().unwrap();
        assert_eq!(n, 3000);
        db.close().unwrap();
    }
    assert!(
        meta_bytes[0] < meta_bytes[1],
        "MashMeta metadata {} not smaller than block index + bloom {}",
        meta_bytes[0],
        meta_bytes[1]
    );
}
