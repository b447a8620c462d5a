//! LogStore placement end to end: reverse compactions never resurrect a deleted or overwritten
//! version (nor lose one a snapshot holds), temperatures survive a restart, and a write burst
//! without reads defers compaction (the fast tier buffering L0 past its stall triggers) until
//! reads return or the deferral limit is reached.

mod common;

use std::time::{Duration, Instant};

use strata::tier::temperature::TierCosts;
use strata::tier::{LogStoreOptions, PlacementPolicy, Tier};
use strata::{Db, Options, ReadOptions};

fn key(i: u64) -> String {
    format!("key{i:06}")
}

/// A tiered database (in-memory capacity tier, relative placement) with LogStore on and a cost
/// model pinned so that a few dozen reads pay for moving a small table.
fn options(name: &str) -> Options {
    let mut o = Options {
        write_buffer_size: 16 << 10,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 8 << 10,
        block_size: 512,
        block_cache_capacity: 0,
        ..Options::default()
    };
    o.capacity = Some(strata::storage::object::CapacityOptions::new(format!(
        "memory://logstore-{name}"
    )));
    o.hotrap.enabled = false;
    o.placement_policy = PlacementPolicy::LogStore;
    o.logstore = LogStoreOptions {
        half_life: Duration::from_secs(3600),
        tick: Duration::from_millis(10),
        defer_read_fraction: 0.0,
        costs: Some(TierCosts {
            fast_seek: 1e-4,
            capacity_seek: 0.01,
            fast_bw: 1e8,
            capacity_bw: 1e7,
        }),
        ..Default::default()
    };
    o
}

fn value(i: u64, version: u32) -> String {
    format!("v{version}-{i}-{}", "x".repeat(40))
}

/// What the oracle says key `i` holds after the workload below.
fn expected(i: u64) -> Option<String> {
    if (100..160).contains(&i) || i.is_multiple_of(3) {
        None
    } else if i % 3 == 1 {
        Some(value(i, 2))
    } else {
        Some(value(i, 1))
    }
}

fn check_all(db: &Db, n: u64, ctx: &str) {
    for i in 0..n {
        let got = db
            .get(key(i))
            .unwrap()
            .map(|b| String::from_utf8(b.to_vec()).unwrap());
        assert_eq!(got, expected(i), "{ctx}: key {i}");
    }
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut seen = 0;
    while it.valid() {
        let k = String::from_utf8(it.key().to_vec()).unwrap();
        let i: u64 = k[3..].parse().unwrap();
        assert_eq!(
            Some(String::from_utf8(it.value().to_vec()).unwrap()),
            expected(i),
            "{ctx}: scan at {k}"
        );
        seen += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(seen, (0..n).filter(|&i| expected(i).is_some()).count());
}

#[test]
fn reverse_compactions_never_resurrect_deleted_or_overwritten_versions() {
    reverse_workload("reverse", false);
}

/// The same while a snapshot taken before the deletes is live: reverse compactions keep every
/// version it reads.
#[test]
fn reverse_compactions_keep_what_a_snapshot_reads() {
    reverse_workload("reverse-snapshot", true);
}

fn reverse_workload(name: &str, with_snapshot: bool) {
    let dir = tempfile::tempdir().unwrap();
    let o = options(name);
    let n = 3000;
    let db = Db::open(dir.path(), o.clone()).unwrap();
    // Version 1 of every key, pushed to the bottom (the capacity tier).
    for i in 0..n {
        db.put(key(i), value(i, 1)).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert!(
        db.live_tables()
            .iter()
            .any(|(_, f)| f.tier == Tier::Capacity),
        "the bottom is on the capacity tier"
    );
    let snap = with_snapshot.then(|| db.snapshot());
    // Newer versions above it: deletes, overwrites and a range delete, flushed to the fast tier.
    for i in 0..n {
        match i % 3 {
            0 => db.delete(key(i)).unwrap(),
            1 => db.put(key(i), value(i, 2)).unwrap(),
            _ => {}
        }
    }
    db.delete_range(key(100), key(160)).unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    // Heat the capacity tables of the first third: only unchanged keys reach them.
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.stats().logstore.unwrap().reverse_compactions == 0 {
        assert!(
            Instant::now() < deadline,
            "no reverse compaction:\n{}",
            db.stats()
        );
        for i in (0..n / 3).filter(|i| i % 3 == 2) {
            db.get(key(i)).unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats().logstore.unwrap();
    assert!(s.reverse_bytes > 0);
    check_all(&db, n, "after reverse compactions");
    if let Some(snap) = snap {
        // The snapshot still reads version 1 everywhere.
        let ro = ReadOptions {
            snapshot: Some(snap.clone()),
            ..Default::default()
        };
        for i in (0..n).step_by(7) {
            let got = db.get_opt(&ro, key(i)).unwrap().map(|b| b.to_vec());
            assert_eq!(got, Some(value(i, 1).into_bytes()), "snapshot read of {i}");
        }
    }
    // Once the snapshot is gone, compactions may drop what it held; still nothing comes back.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check_all(&db, n, "after a full compaction");
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    check_all(&db, n, "after reopening");
}

#[test]
fn temperatures_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let o = options("restart");
    let db = Db::open(dir.path(), o.clone()).unwrap();
    for i in 0..2000 {
        db.put(key(i), value(i, 1)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for _ in 0..200 {
        db.get(key(7)).unwrap();
    }
    let heat = |db: &Db| -> f64 { db.stats().levels.iter().map(|l| l.temperature).sum() };
    let before = heat(&db);
    assert!(before >= 200.0 * 0.99, "reads were counted: {before}");
    db.close().unwrap();
    let path = dir.path().join("TEMPERATURE");
    assert!(path.exists(), "the side file was written at close");
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let after = heat(&db);
    assert!(
        (after - before).abs() < 1.0,
        "temperatures after reopening: {after}, before: {before}"
    );
    let hist: u64 = db
        .stats()
        .levels
        .iter()
        .map(|l| l.temperature_histogram[3])
        .sum();
    assert_eq!(hist, 1, "one table in the 100-999 bucket:\n{}", db.stats());
    db.close().unwrap();
    // A damaged side file loses temperatures, never the database.
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(heat(&db), 0.0);
    assert_eq!(
        db.get(key(7)).unwrap().map(|b| b.to_vec()),
        Some(value(7, 1).into_bytes())
    );
}

#[test]
fn a_write_burst_defers_compaction_until_reads_return() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options("defer");
    o.logstore.defer_read_fraction = 0.05;
    o.logstore.defer_fast_bytes = Some(64 << 20);
    o.level0_slowdown_writes_trigger = 4;
    o.level0_stop_writes_trigger = 6;
    let db = Db::open(dir.path(), o).unwrap();
    // A burst without reads: L0 grows past its compaction trigger of 2 while compaction
    // waits, and past its stop trigger of 6 — which only a fast tier buffering the burst
    // allows: were those tables counted, writes would stop at 6 until compaction ran.
    let mut max_l0 = 0;
    let mut i = 0u64;
    let deadline = Instant::now() + Duration::from_secs(60);
    while max_l0 <= 12 {
        assert!(Instant::now() < deadline, "never deferred:\n{}", db.stats());
        for _ in 0..200 {
            db.put(key(i % 50_000), value(i, 1)).unwrap();
            i += 1;
        }
        max_l0 = max_l0.max(db.stats().levels[0].files);
    }
    let s = db.stats();
    assert!(s.logstore.unwrap().deferred_ticks > 0, "{s}");
    // Reads return (and writes stop): compaction catches up.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for k in 0..50 {
            db.get(key(k)).unwrap();
        }
        std::thread::sleep(Duration::from_millis(5));
        let s = db.stats();
        if !s.logstore.unwrap().deferring && s.levels[0].files <= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "compaction did not resume:\n{s}");
    }
    db.wait_for_compactions().unwrap();
}

#[test]
fn deferral_ends_at_its_byte_limit_without_reads() {
    const LIMIT: u64 = 128 << 10;
    let dir = tempfile::tempdir().unwrap();
    let mut o = options("defer-limit");
    o.logstore.defer_read_fraction = 0.05;
    o.logstore.defer_fast_bytes = Some(LIMIT);
    o.level0_slowdown_writes_trigger = 4;
    o.level0_stop_writes_trigger = 6;
    let db = Db::open(dir.path(), o).unwrap();
    // A long burst and no reads: the fast tier buffers L0 until it holds the limit, then the
    // usual triggers apply and compaction runs while reads are still absent.
    let (mut max_l0, mut max_l0_bytes) = (0, 0);
    for i in 0..40_000u64 {
        db.put(key(i % 50_000), value(i, 1)).unwrap();
        if i % 100 == 0 {
            let s = db.stats();
            max_l0 = max_l0.max(s.levels[0].files);
            max_l0_bytes = max_l0_bytes.max(s.levels[0].bytes);
        }
    }
    let s = db.stats();
    assert!(s.logstore.as_ref().unwrap().deferred_ticks > 0, "{s}");
    let compactions: u64 = s.levels.iter().map(|l| l.compactions).sum();
    assert!(compactions > 0, "compaction never resumed:\n{s}");
    assert!(max_l0 > 6, "L0 never buffered past the stop trigger:\n{s}");
    // Past the limit, L0 gains at most the flushes of the memtables already full.
    assert!(
        max_l0_bytes < LIMIT + 4 * (16 << 10),
        "L0 held {max_l0_bytes} bytes ({max_l0} tables) over a {LIMIT}-byte limit:\n{s}"
    );
    db.wait_for_compactions().unwrap();
    for i in (0..40_000u64).step_by(997) {
        assert_eq!(
            db.get(key(i % 50_000)).unwrap().as_deref(),
            Some(value(i, 1).as_bytes())
        );
    }
}

/// LogStore as one column family's placement, beside a default family placed by level: the
/// family's reads heat its tables, its write bursts defer its compaction, its temperatures
/// survive a restart (one side file for every LogStore family), and the default family has no
/// LogStore state at all.
#[test]
fn a_column_family_runs_logstore_beside_a_leveled_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options("cf");
    o.logstore.defer_read_fraction = 0.05;
    let cf_opts = strata::CfOptions::from_options(&o);
    assert!(cf_opts.logstore);
    o.placement_policy = PlacementPolicy::Static;
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let cf = db.create_cf("hot-cold", cf_opts.clone()).unwrap();
    // A split-forest family cannot run LogStore.
    let e = db
        .create_cf(
            "forest",
            strata::CfOptions {
                compaction_style: strata::CompactionStyle::SplitForest,
                ..cf_opts
            },
        )
        .unwrap_err();
    assert_eq!(e.kind(), strata::ErrorKind::InvalidArgument, "{e}");
    // A burst without reads: the family's compaction is deferred.
    for i in 0..20_000u64 {
        db.put_cf(&cf, key(i % 2000), value(i, 1)).unwrap();
    }
    let s = db.stats_cf(&cf).unwrap();
    assert!(s.logstore.as_ref().unwrap().deferred_ticks > 0, "{s}");
    assert!(
        db.stats().logstore.is_none(),
        "the default family places by level"
    );
    // Reads heat the family's tables.
    db.flush_cf(&cf).unwrap();
    db.wait_for_compactions().unwrap();
    for _ in 0..200 {
        db.get_cf(&cf, key(7)).unwrap().unwrap();
    }
    let heat = |db: &Db, cf: &strata::ColumnFamily| -> f64 {
        db.stats_cf(cf)
            .unwrap()
            .levels
            .iter()
            .map(|l| l.temperature)
            .sum()
    };
    let before = heat(&db, &cf);
    assert!(before >= 200.0 * 0.99, "reads were counted: {before}");
    drop(cf);
    db.close().unwrap();
    assert!(dir.path().join("TEMPERATURE").exists());
    let db = Db::open(dir.path(), o).unwrap();
    let cf = db.cf("hot-cold").unwrap();
    assert!(cf.options().logstore);
    let after = heat(&db, &cf);
    assert!(
        (after - before).abs() < 1.0,
        "temperatures after reopening: {after}, before: {before}"
    );
    for i in (0..2000).step_by(97) {
        assert_eq!(
            db.get_cf(&cf, key(i)).unwrap().as_deref(),
            Some(value(18_000 + i, 1).as_bytes())
        );
    }
    db.close().unwrap();
}
