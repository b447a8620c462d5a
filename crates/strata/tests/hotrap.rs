//! HotRAP end to end: promotion by flush, retention and promotion by compaction, the §3.3 and
//! §3.4 races, and a shifting hot set, on an in-memory capacity tier.

mod common;

use std::sync::Arc;

use common::{key, OracleTracker};
use strata::storage::object::CapacityOptions;
use strata::tier::hot::{HotRapOptions, HotTracker};
use strata::tier::Tier;
use strata::{Db, Options};

/// A 200-byte value that does not compress, naming its key and version.
fn value(k: u64, version: u64) -> Vec<u8> {
    let mut v = format!("value-{k}-{version}-").into_bytes();
    let mut x = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ version;
    while v.len() < 200 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v
}

fn options(name: &str, tracker: Arc<dyn HotTracker>, cache_bytes: usize) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_bytes_for_level_multiplier: 10.0,
        target_file_size_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        num_levels: 4,
        capacity: Some(CapacityOptions::new(format!("memory://hotrap-{name}"))),
        hotrap: HotRapOptions {
            enabled: true,
            promotion_cache_bytes: Some(cache_bytes),
            tracker: Some(tracker),
            ..Default::default()
        },
        ..Options::default()
    }
}

fn fast_keys(db: &Db) -> u64 {
    db.live_tables()
        .iter()
        .filter(|(_, f)| f.tier == Tier::Fast)
        .map(|(_, f)| f.num_entries)
        .sum()
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..400 {
        if f() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("timed out waiting for {what}");
}

#[test]
fn hot_reads_are_promoted_by_flush_and_then_served_from_the_fast_tier() {
    let dir = tempfile::tempdir().unwrap();
    // Keys ending in 0 are hot once read.
    let tracker = Arc::new(OracleTracker::new(1, |k| k.ends_with(b"0")));
    let db = Db::open(dir.path(), options("flush", tracker, 16 << 10)).unwrap();
    for k in 0..2000 {
        db.put(key(k), value(k, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(
        fast_keys(&db),
        0,
        "a full compaction leaves everything on capacity"
    );
    // A few passes: an insert aborts when a compaction into the capacity tier over its key
    // was set up during the read (promoted tables compact down while this runs), and the
    // next pass offers it again.
    for _ in 0..3 {
        for k in 0..2000 {
            assert_eq!(db.get(key(k)).unwrap().unwrap(), value(k, 0));
        }
        wait_for("the Checker", || {
            db.stats().hotrap.is_some_and(|h| h.sealed_cache_bytes == 0)
        });
        db.wait_for_compactions().unwrap();
    }
    assert!(db.stats().hotrap.unwrap().promoted_by_flush > 0);
    let h = db.stats().hotrap.unwrap();
    assert!(h.cache_inserts + h.cache_aborts >= 2000, "{h}");
    // Read the hot keys again: they come from the fast tier (L0 tables or the cache).
    let before = db.stats().hotrap.unwrap();
    for k in (0..2000).step_by(10) {
        assert_eq!(db.get(key(k)).unwrap().unwrap(), value(k, 0));
    }
    let after = db.stats().hotrap.unwrap();
    let fast = after.reads_fast - before.reads_fast;
    assert!(
        fast >= 190,
        "only {fast} of 200 hot reads were fast: {after}"
    );
    assert!(
        fast_keys(&db) > 0,
        "no hot key was written to the fast tier"
    );
    db.close().unwrap();
}

#[test]
fn compactions_into_the_capacity_tier_retain_hot_records() {
    let dir = tempfile::tempdir().unwrap();
    let tracker = Arc::new(OracleTracker::new(1, |k| k.ends_with(b"7")));
    let db = Db::open(dir.path(), options("retain", tracker.clone(), 1 << 30)).unwrap();
    // Mark every key ending in 7 hot before it is ever written.
    for k in 0..6000u64 {
        tracker.record_access(&key(k), 200);
    }
    for round in 0..3 {
        for k in 0..6000 {
            db.put(key(k), value(k, round)).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
    let h = db.stats().hotrap.unwrap();
    assert!(
        h.retained_records > 0,
        "nothing was retained: {h}\n{}",
        db.stats()
    );
    // Every hot key's newest version is on the fast tier; reads agree with the writes.
    for k in 0..6000 {
        assert_eq!(db.get(key(k)).unwrap().unwrap(), value(k, 2), "key {k}");
    }
    db.close().unwrap();
}

/// The §3.3 and §3.4 races end to end: readers promote records while a writer overwrites the
/// same keys and flushes and compactions move new versions down into the capacity tier. A
/// read must never return a version older than one acknowledged before it started.
#[test]
fn promotion_never_returns_a_stale_version_under_concurrent_writes() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let tracker = Arc::new(OracleTracker::new(1, |_| true));
    let mut o = options("race", tracker, 4 << 10);
    o.write_buffer_size = 32 << 10;
    o.max_bytes_for_level_base = 64 << 10;
    o.target_file_size_base = 16 << 10;
    // Capacity reads take a while, so compactions land inside a read's window.
    if let Some(c) = o.capacity.as_mut() {
        c.emulation = Some(strata::storage::object::Emulation {
            latency: std::time::Duration::from_millis(5),
            ..Default::default()
        });
    }
    let db = Db::open(dir.path(), o).unwrap();
    const KEYS: u64 = 300;
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    for k in 0..KEYS {
        db.put(key(k), value(k, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let version_of = |v: &[u8]| -> u64 {
        let s = std::str::from_utf8(&v[..40]).unwrap_or("");
        s.split('-')
            .nth(2)
            .and_then(|x| x.parse().ok())
            .expect("a value")
    };
    let readers: Vec<_> = (0..4)
        .map(|t| {
            let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut x = 0x2545_f491_4f6c_dd1du64 ^ t;
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = x % KEYS;
                    let floor = acked[k as usize].load(Ordering::Acquire);
                    let v = db.get(key(k)).unwrap().expect("every key exists");
                    let got = version_of(&v);
                    assert!(
                        got >= floor,
                        "key {k}: read version {got}, {floor} was acknowledged"
                    );
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let start = std::time::Instant::now();
    let mut version = 0;
    while start.elapsed() < std::time::Duration::from_secs(4) {
        version += 1;
        // A few keys per round, so most reads reach the capacity tier and promote; frequent
        // flushes and full compactions move new versions under the promotion cache.
        for k in (0..KEYS).filter(|k| (k * 7 + version) % 30 == 0) {
            db.put(key(k), value(k, version)).unwrap();
            acked[k as usize].store(version, Ordering::Release);
        }
        if version % 2 == 0 {
            db.flush().unwrap();
        }
        if version % 4 == 0 {
            db.compact_range(None, None).unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let h = db.stats().hotrap.unwrap();
    eprintln!("{reads} reads, {version} write rounds\n{h}");
    assert!(h.cache_inserts > 0, "nothing was promoted: {h}");
    for k in 0..KEYS {
        let v = db.get(key(k)).unwrap().unwrap();
        assert_eq!(
            version_of(&v),
            acked[k as usize].load(Ordering::Acquire),
            "key {k}"
        );
    }
    db.close().unwrap();
}

/// With relative placement and no configured fast-tier size, RALT's hot-set bounds are scaled
/// to what the tree's fast levels may hold, and follow it as the data grows (they were fixed
/// at open, from `max_bytes_for_level_base`, before); a reopen starts from the grown size.
#[test]
fn ralt_limits_follow_the_fast_tier_as_the_tree_grows() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        write_buffer_size: 256 << 10,
        level0_file_num_compaction_trigger: 4,
        max_bytes_for_level_base: 1 << 20,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 256 << 10,
        num_levels: 4,
        capacity: Some(CapacityOptions::new("memory://hotrap-follows")),
        ..Options::default()
    };
    // L0's room before a compaction is due: 4 tables of 256 KiB.
    let l0_room: u64 = 1 << 20;
    let db = Db::open(dir.path(), opts()).unwrap();
    let scaled = |db: &Db| {
        db.stats()
            .hotrap
            .expect("HotRAP is on")
            .tracker
            .fast_tier_bytes
    };
    let at_open = scaled(&db);
    assert_eq!(
        at_open,
        l0_room + (1 << 20),
        "an empty tree: L0's room and the base level's target"
    );
    // 12 MiB of values: the last level (capacity) grows past 4× the base, so the last fast
    // level's target (a quarter of it) passes the base.
    for k in 0..60_000 {
        db.put(key(k), value(k, 0)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let last: u64 = db
        .live_tables()
        .iter()
        .filter(|(l, _)| *l == 3)
        .map(|(_, f)| f.size)
        .sum();
    assert!(last > 8 << 20, "the last level holds {last} bytes");
    let grown = l0_room + last / 4;
    // The running database rescales when the size moved by a tenth: within a tenth of it.
    wait_for("RALT rescaled to the grown fast tier", || {
        scaled(&db) * 10 >= grown * 9
    });
    drop(db);
    // A reopen computes it exactly from the recovered tree.
    let db = Db::open(dir.path(), opts()).unwrap();
    let s = scaled(&db);
    assert!(
        s >= grown && s > at_open,
        "{s} after reopen, want at least {grown}"
    );
    let t = db.stats().hotrap.unwrap().tracker;
    assert!(
        t.hot_set_limit >= s / 20 && t.hot_set_limit <= s * 7 / 10,
        "hot-set limit {} within [5%, 70%] of {s}",
        t.hot_set_limit
    );
}

/// Reads that fold merge operands report their key to HotRAP's tracker when they read tables
/// (as every table read does), and not when the memtables alone answered: a counter updated
/// only by merges is tracked like any other key, on both tiers.
#[test]
fn folded_merge_reads_are_tracker_accesses() {
    use strata::merge::U64Add;
    let tracker = Arc::new(OracleTracker::new(1, |_| true));
    let d = tempfile::tempdir().unwrap();
    let mut o = options("merge-reads", tracker.clone(), 64 << 10);
    o.merge_operator = Some(Arc::new(U64Add));
    let db = Db::open(d.path(), o).unwrap();
    let read = |k: &str| U64Add::decode(&db.get(k).unwrap().unwrap()).unwrap();
    db.put("counter", U64Add::encode(10)).unwrap();
    db.merge("counter", U64Add::encode(1)).unwrap();
    assert_eq!(read("counter"), 11);
    assert_eq!(
        tracker.reads(b"counter"),
        0,
        "a memtable answer is not an access"
    );
    // Operands alone, with tables around that cannot hold the key: no table read.
    db.flush().unwrap();
    db.merge("fresh", U64Add::encode(5)).unwrap();
    assert_eq!(read("fresh"), 5);
    assert_eq!(
        tracker.reads(b"fresh"),
        0,
        "a fold that read no table is not an access"
    );
    // The base down to the capacity tier, an operand in a fast-tier table, one in the
    // memtable: the fold reads both tiers.
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(
        db.live_tables()
            .iter()
            .any(|(_, f)| f.tier == Tier::Capacity),
        "nothing reached the capacity tier"
    );
    db.merge("counter", U64Add::encode(100)).unwrap();
    db.flush().unwrap();
    db.merge("counter", U64Add::encode(1000)).unwrap();
    assert_eq!(read("counter"), 1111);
    assert_eq!(tracker.reads(b"counter"), 1);
    // multi_get folds the same way.
    let got = db.multi_get(
        &strata::ReadOptions::default(),
        &[&b"counter"[..], b"absent"],
    );
    assert_eq!(
        got[0].as_ref().unwrap().as_deref(),
        Some(&U64Add::encode(1111)[..])
    );
    assert_eq!(tracker.reads(b"counter"), 2);
}
