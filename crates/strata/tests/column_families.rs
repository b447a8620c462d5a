//! Column families end to end: key spaces of their own behind one WAL — reads and writes per
//! family, atomic batches across families (under SIGKILL: `column_families_crash.rs`),
//! per-family options, a family
//! that lags behind the others pinning the WAL, drop and recreate (also while writers run),
//! and a model test of random operations over three families and the default one against a
//! `BTreeMap` per family, through flushes, compactions and reopens.
//!
//! Replay a failure with `STRATA_SEED=<seed> cargo test --test column_families`.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{cf_db_options, cf_options_small, seeds, with_seed, Rng};
use strata::{CfOptions, ColumnFamily, Db, ErrorKind, Options, ReadOptions, WriteBatch};

fn sst_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".sst")
        })
        .count()
}

fn log_files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    v.sort();
    v
}

#[test]
fn families_are_key_spaces_of_their_own_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    assert_eq!(db.column_families(), vec!["default".to_string()]);
    let a = db.create_cf("a", cf_options_small()).unwrap();
    let b = db
        .create_cf(
            "b",
            CfOptions {
                compaction_style: strata::CompactionStyle::SplitForest,
                num_levels: 4,
                ..cf_options_small()
            },
        )
        .unwrap();
    // A name in use, the default's name and an empty name are refused.
    for bad in ["a", "default", ""] {
        let e = db.create_cf(bad, CfOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}");
    }
    db.put(b"k", b"default").unwrap();
    db.put_cf(&a, b"k", b"in a").unwrap();
    db.put_cf(&b, b"k", b"in b").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"default"[..]));
    assert_eq!(db.get_cf(&a, b"k").unwrap().as_deref(), Some(&b"in a"[..]));
    assert_eq!(db.get_cf(&b, b"k").unwrap().as_deref(), Some(&b"in b"[..]));
    db.delete_cf(&a, b"k").unwrap();
    assert_eq!(db.get_cf(&a, b"k").unwrap(), None);
    assert!(db.get(b"k").unwrap().is_some());

    // Enough writes that every family flushes and compacts.
    for i in 0..3000u32 {
        let mut batch = WriteBatch::new();
        let k = format!("key{i:05}");
        batch.put_cf(&a, &k, format!("a{i}"));
        batch.put_cf(&b, &k, format!("b{i}"));
        if i % 3 == 0 {
            batch.put(&k, format!("d{i}"));
        }
        db.write(batch).unwrap();
    }
    db.delete_range_cf(&b, b"key00100", b"key00200").unwrap();
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.live_tables_cf(&a).unwrap().len() > 1);
    assert!(db
        .live_tables_cf(&b)
        .unwrap()
        .iter()
        .all(|(level, _)| *level < 4));
    let (sa, sb, sd) = (
        common::contents_cf(&db, &a),
        common::contents_cf(&db, &b),
        common::contents(&db),
    );
    assert_eq!(sa.len(), 3000);
    assert_eq!(sb.len(), 2901);
    assert_eq!(sd.len(), 1001);
    // A batch with both families and unflushed writes in each: the reopen replays the WAL.
    let mut batch = WriteBatch::new();
    batch.put_cf(&a, b"zz", b"a-tail");
    batch.put_cf(&b, b"zz", b"b-tail");
    db.write(batch).unwrap();
    drop((a, b));
    db.close().unwrap();

    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    assert_eq!(db.column_families(), vec!["default", "a", "b"]);
    let (a, b) = (db.cf("a").unwrap(), db.cf("b").unwrap());
    assert_eq!(
        b.options().compaction_style,
        strata::CompactionStyle::SplitForest
    );
    assert_eq!(b.options().num_levels, 4);
    assert_eq!(
        db.get_cf(&a, b"zz").unwrap().as_deref(),
        Some(&b"a-tail"[..])
    );
    assert_eq!(
        db.get_cf(&b, b"zz").unwrap().as_deref(),
        Some(&b"b-tail"[..])
    );
    let mut sa2 = common::contents_cf(&db, &a);
    sa2.remove(&b"zz"[..]);
    assert_eq!(sa2, sa);
    assert_eq!(common::contents(&db), sd);
    db.compact_range_cf(&b, None, None).unwrap();
    let mut sb2 = common::contents_cf(&db, &b);
    sb2.remove(&b"zz"[..]);
    assert_eq!(sb2, sb);
    let got = db.multi_get_cf(&a, &ReadOptions::default(), &[&b"key00007"[..], b"nope"]);
    assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"a7"[..]));
    assert_eq!(got[1].as_ref().unwrap(), &None);
}

#[test]
fn a_snapshot_reads_every_family_at_one_point() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    let a = db.create_cf("a", cf_options_small()).unwrap();
    db.put_cf(&a, b"x", b"1").unwrap();
    db.put(b"x", b"1").unwrap();
    let snap = db.snapshot();
    let mut batch = WriteBatch::new();
    batch.put_cf(&a, b"x", b"2");
    batch.put(b"x", b"2");
    db.write(batch).unwrap();
    db.flush().unwrap();
    let at = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    assert_eq!(
        db.get_cf_opt(&a, &at, b"x").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(db.get_opt(&at, b"x").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get_cf(&a, b"x").unwrap().as_deref(), Some(&b"2"[..]));
}

/// A family written once and then left alone keeps the WAL file its write is in while the
/// others flush past it; its write survives a crash-like reopen, and its flush lets the log go.
#[test]
fn a_lagging_family_pins_its_log_until_it_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    let cold = db.create_cf("cold", CfOptions::default()).unwrap();
    let hot = db.create_cf("hot", cf_options_small()).unwrap();
    db.put_cf(&cold, b"only", b"write").unwrap();
    let first_log = log_files(dir.path())[0].clone();
    for i in 0..4000u32 {
        db.put_cf(&hot, format!("h{i:05}"), [b'v'; 64]).unwrap();
    }
    db.flush_cf(&hot).unwrap();
    assert!(db.live_tables_cf(&hot).unwrap().len() > 2);
    let logs = log_files(dir.path());
    assert!(
        logs.len() > 2,
        "hot's memtable switches made new logs: {logs:?}"
    );
    assert_eq!(logs[0], first_log, "cold's write keeps its log");
    // A close does not flush: the reopen replays the WAL, which is all cold's write has.
    drop((cold, hot));
    db.close().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    let cold = db.cf("cold").unwrap();
    assert_eq!(
        db.get_cf(&cold, b"only").unwrap().as_deref(),
        Some(&b"write"[..])
    );
    assert!(
        !log_files(dir.path()).contains(&first_log),
        "the open wrote every family's records to tables and moved past the first log"
    );
    // At run time too: once the lagging family flushes, the logs it pinned go.
    db.put_cf(&cold, b"second", b"write").unwrap();
    let hot = db.cf("hot").unwrap();
    for i in 0..2000u32 {
        db.put_cf(&hot, format!("h{i:05}"), [b'w'; 64]).unwrap();
    }
    db.flush_cf(&hot).unwrap();
    let pinned = log_files(dir.path());
    assert!(
        pinned.len() > 2,
        "cold's second write pins its log: {pinned:?}"
    );
    db.flush_cf(&cold).unwrap();
    // The flush thread deletes the logs right after the install a flush waits for.
    let mut after = log_files(dir.path());
    for _ in 0..100 {
        if after.len() <= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        after = log_files(dir.path());
    }
    assert!(
        after.len() <= 2,
        "after cold's flush only the live logs remain: {after:?}"
    );
    assert!(!after.contains(&pinned[0]));
}

#[test]
fn drop_frees_the_family_and_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    let gone = db.create_cf("gone", cf_options_small()).unwrap();
    for i in 0..2000u32 {
        db.put_cf(&gone, format!("g{i:05}"), [b'x'; 100]).unwrap();
    }
    db.flush().unwrap();
    let before = sst_files(dir.path());
    assert!(before > 0);
    db.drop_cf("gone").unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(sst_files(dir.path()), 0, "the family's tables are deleted");
    // The old handle fails; reads and writes name the drop.
    for e in [
        db.put_cf(&gone, b"k", b"v").unwrap_err(),
        db.get_cf(&gone, b"g00001").unwrap_err(),
        db.iter_cf(&gone, ReadOptions::default()).err().unwrap(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("dropped"), "{e}");
    }
    // A batch naming it fails as a whole, and writes nothing.
    let mut batch = WriteBatch::new();
    batch.put(b"d", b"v");
    batch.put_cf(&gone, b"k", b"v");
    assert_eq!(
        db.write(batch).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(db.get(b"d").unwrap(), None);
    for bad in ["gone", "default", "never"] {
        assert_eq!(
            db.drop_cf(bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    // The name can be used again: a new, empty family with a new id.
    let again = db.create_cf("gone", CfOptions::default()).unwrap();
    assert_ne!(again.id(), gone.id());
    assert_eq!(db.get_cf(&again, b"g00001").unwrap(), None);
    db.put_cf(&again, b"new", b"1").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    assert_eq!(db.column_families(), vec!["default", "gone"]);
    let again = db.cf("gone").unwrap();
    assert_eq!(common::contents_cf(&db, &again).len(), 1);
}

/// On a tiered database a family's levels below the fast ones go to the capacity tier like
/// the default family's, and dropping the family deletes its objects there too.
#[test]
fn drop_frees_the_familys_capacity_tier_objects() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let o = Options {
        capacity: Some(strata::storage::object::CapacityOptions::new(format!(
            "file://{}",
            cap.display()
        ))),
        fast_levels: Some(0),
        capacity_gc_min_age: Duration::ZERO,
        ..cf_db_options()
    };
    let objects = || -> usize {
        match std::fs::read_dir(cap.join("tables")) {
            Ok(d) => d.count(),
            Err(_) => 0,
        }
    };
    let db = Db::open(dir.path().join("db"), o).unwrap();
    db.put(b"stays", b"here").unwrap();
    db.compact_range(None, None).unwrap();
    let base = objects();
    let t = db.create_cf("tiered", cf_options_small()).unwrap();
    for i in 0..3000u32 {
        db.put_cf(&t, format!("t{i:05}"), [b'c'; 100]).unwrap();
    }
    db.compact_range_cf(&t, None, None).unwrap();
    let tiers: Vec<strata::tier::Tier> = db
        .live_tables_cf(&t)
        .unwrap()
        .iter()
        .map(|(_, f)| f.tier)
        .collect();
    assert!(
        tiers.iter().all(|t| *t == strata::tier::Tier::Capacity),
        "{tiers:?}"
    );
    assert_eq!(objects(), base + tiers.len());
    db.drop_cf("tiered").unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(objects(), base, "the family's objects are deleted");
    assert_eq!(db.get(b"stays").unwrap().as_deref(), Some(&b"here"[..]));
}

/// The tier policy is per family: one family all on the fast tier, one with its last level on
/// the capacity tier and HotRAP promoting its hot records back, in one database — verified
/// by where each family's tables are.
#[test]
fn each_family_has_its_own_tier_policy() {
    let dir = tempfile::tempdir().unwrap();
    // Keys ending in 0 are hot once read (a deterministic stand-in for RALT).
    let tracker = std::sync::Arc::new(common::OracleTracker::new(1, |k| k.ends_with(b"0")));
    let o = Options {
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 128 << 10,
        target_file_size_base: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        num_levels: 4,
        capacity: Some(strata::storage::object::CapacityOptions::new(
            "memory://cf-tier-policy".to_string(),
        )),
        hotrap: strata::tier::hot::HotRapOptions {
            enabled: true,
            promotion_cache_bytes: Some(16 << 10),
            tracker: Some(tracker),
            ..Default::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let base = CfOptions::from_options(&o);
    let fast = db
        .create_cf(
            "all-fast",
            CfOptions {
                fast_levels: Some(3),
                hotrap: false,
                ..base.clone()
            },
        )
        .unwrap();
    let tiered = db.create_cf("tiered", base).unwrap();
    let value = |k: u32| format!("value-{k}-{}", "v".repeat(150));
    for k in 0..2000u32 {
        let mut b = WriteBatch::new();
        b.put_cf(&fast, format!("k{k:05}"), value(k));
        b.put_cf(&tiered, format!("k{k:05}"), value(k));
        db.write(b).unwrap();
    }
    db.compact_range_cf(&fast, None, None).unwrap();
    db.compact_range_cf(&tiered, None, None).unwrap();
    let on = |cf: &ColumnFamily, tier: strata::tier::Tier| -> u64 {
        db.live_tables_cf(cf)
            .unwrap()
            .iter()
            .filter(|(_, f)| f.tier == tier)
            .map(|(_, f)| f.num_entries)
            .sum()
    };
    use strata::tier::Tier::{Capacity, Fast};
    assert_eq!((on(&fast, Fast), on(&fast, Capacity)), (2000, 0));
    assert_eq!((on(&tiered, Fast), on(&tiered, Capacity)), (0, 2000));
    // Each family's statistics and properties describe its own tree.
    let (sf, st) = (db.stats_cf(&fast).unwrap(), db.stats_cf(&tiered).unwrap());
    assert!(
        sf.tier.fast_table_bytes > 0 && sf.tier.capacity_table_bytes == 0,
        "{sf}"
    );
    assert!(
        st.tier.fast_table_bytes == 0 && st.tier.capacity_table_bytes > 0,
        "{st}"
    );
    assert!(sf.hotrap.is_none() && st.hotrap.is_some());
    assert_eq!(
        db.stats().total_sst_bytes,
        0,
        "the default family holds nothing"
    );
    let files = |cf: &ColumnFamily| -> usize {
        (0..4)
            .map(|l| {
                db.property_cf(cf, &format!("strata.num-files-at-level{l}"))
                    .unwrap()
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            })
            .sum()
    };
    assert_eq!(files(&fast), db.live_tables_cf(&fast).unwrap().len());
    assert_eq!(files(&tiered), db.live_tables_cf(&tiered).unwrap().len());
    // Reads of the tiered family's hot keys bring them back to its fast tier (promotion by
    // flush); the all-fast family has nothing to promote.
    for _ in 0..3 {
        for k in 0..2000u32 {
            let key = format!("k{k:05}");
            assert_eq!(
                db.get_cf(&tiered, &key).unwrap().unwrap(),
                value(k).as_bytes()
            );
            assert_eq!(
                db.get_cf(&fast, &key).unwrap().unwrap(),
                value(k).as_bytes()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
        db.wait_for_compactions().unwrap();
    }
    assert!(
        on(&tiered, Fast) > 0,
        "no hot record of the tiered family was promoted"
    );
    assert_eq!(on(&fast, Capacity), 0);
    // The family's options (its tier policy among them) survive a reopen.
    drop((fast, tiered));
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    let fast = db.cf("all-fast").unwrap();
    assert_eq!(fast.options().fast_levels, Some(3));
    assert!(!fast.options().hotrap);
    assert!(db.cf("tiered").unwrap().options().hotrap);
}

/// Found in review: a drop made the logs of the dropped family's memtables deletable while
/// another (empty) family's log number in the manifest still named one of them, and the next
/// open refused the database. Also: a manual compaction of the family racing its drop fails
/// cleanly instead of panicking.
#[test]
fn dropping_a_family_keeps_every_log_the_manifest_names() {
    for round in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), cf_db_options()).unwrap();
        let b = db
            .create_cf(
                "b",
                CfOptions {
                    write_buffer_size: 4096,
                    ..cf_options_small()
                },
            )
            .unwrap();
        for i in 0..300u32 {
            db.put_cf(&b, format!("b{i:05}"), [b'x'; 100]).unwrap();
        }
        let compactor = {
            let (db, b) = (db.clone(), b.clone());
            std::thread::spawn(move || loop {
                match db.compact_range_cf(&b, None, None) {
                    Ok(()) => {}
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
                        return;
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(20 * round));
        db.drop_cf("b").unwrap();
        compactor.join().unwrap();
        db.put(b"after", b"drop").unwrap();
        drop(b);
        db.close().unwrap();
        let db = Db::open(dir.path(), cf_db_options()).unwrap();
        assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"drop"[..]));
        assert!(db.cf("b").is_none());
    }
}

#[test]
fn a_handle_of_another_database_is_refused() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let db1 = Db::open(d1.path(), cf_db_options()).unwrap();
    let db2 = Db::open(d2.path(), cf_db_options()).unwrap();
    let a1 = db1.create_cf("a", cf_options_small()).unwrap();
    db2.create_cf("a", cf_options_small()).unwrap();
    let e = db2.put_cf(&a1, b"k", b"v").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("another database"), "{e}");
    assert_eq!(
        db2.get_cf(&a1, b"k").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn drop_while_writers_run_fails_their_writes_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    let x = db.create_cf("x", cf_options_small()).unwrap();
    let writers: Vec<_> = (0..2)
        .map(|t| {
            let (db, x) = (db.clone(), x.clone());
            std::thread::spawn(move || {
                let mut n = 0u32;
                loop {
                    let mut batch = WriteBatch::new();
                    batch.put(format!("d{t}-{n}"), b"v");
                    batch.put_cf(&x, format!("x{t}-{n}"), [b'v'; 200]);
                    match db.write(batch) {
                        Ok(()) => n += 1,
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
                            return n;
                        }
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    db.drop_cf("x").unwrap();
    let written: Vec<u32> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    // Every acknowledged batch's default-family half is there.
    for (t, n) in written.iter().enumerate() {
        for i in 0..*n {
            assert!(db.get(format!("d{t}-{i}")).unwrap().is_some());
        }
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), cf_db_options()).unwrap();
    assert!(db.cf("x").is_none());
    for (t, n) in written.iter().enumerate() {
        assert!(db.get(format!("d{t}-{}", n - 1)).unwrap().is_some());
    }
}

#[test]
fn merges_work_per_family() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        merge_operator: Some(std::sync::Arc::new(strata::merge::U64Add)),
        ..cf_db_options()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    let c = db.create_cf("counters", cf_options_small()).unwrap();
    for i in 0..500u64 {
        db.merge_cf(&c, format!("c{}", i % 7), 1u64.to_le_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    let c = db.cf("counters").unwrap();
    let total: u64 = (0..7)
        .map(|i| {
            let v = db.get_cf(&c, format!("c{i}")).unwrap().unwrap();
            u64::from_le_bytes(v[..8].try_into().unwrap())
        })
        .sum();
    assert_eq!(total, 500);
    assert_eq!(db.get(b"c0").unwrap(), None);
}

/// Random operations over three families and the default one, in batches that span them,
/// with flushes, compactions, a drop and recreate, and reopens, against one `BTreeMap` per
/// family.
#[test]
fn model_test_across_families() {
    for seed in seeds(2) {
        with_seed("column_families", seed, move || model(seed));
    }
}

enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
}

fn model(seed: u64) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let names = ["default", "f1", "f2", "f3"];
    let mut db = Db::open(dir.path(), cf_db_options()).unwrap();
    for n in &names[1..] {
        let style = if rng.chance(2) {
            strata::CompactionStyle::SplitForest
        } else {
            strata::CompactionStyle::Leveled
        };
        db.create_cf(
            n,
            CfOptions {
                compaction_style: style,
                write_buffer_size: 4096 << rng.below(3),
                ..cf_options_small()
            },
        )
        .unwrap();
    }
    let mut oracle: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); names.len()];
    let handles =
        |db: &Db| -> Vec<ColumnFamily> { names.iter().map(|n| db.cf(n).unwrap()).collect() };
    let mut cfs = handles(&db);
    for step in 0..3000u32 {
        let mut batch = WriteBatch::new();
        // The batch's operations in order, as the oracle applies them.
        let mut ops: Vec<(usize, Op)> = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let f = rng.below(names.len() as u64) as usize;
            let k = format!("k{:04}", rng.below(400)).into_bytes();
            match rng.below(20) {
                0 => {
                    let end = format!("k{:04}", rng.below(400)).into_bytes();
                    batch.delete_range_cf(&cfs[f], &k, &end);
                    ops.push((f, Op::DeleteRange(k, end)));
                }
                1..=4 => {
                    batch.delete_cf(&cfs[f], &k);
                    ops.push((f, Op::Delete(k)));
                }
                _ => {
                    let v = format!("{step}-{}", rng.below(1000)).into_bytes();
                    batch.put_cf(&cfs[f], &k, &v);
                    ops.push((f, Op::Put(k, v)));
                }
            }
        }
        // The batch names each operation's family as the handle does.
        let fams: Vec<u32> = batch.iter_cf().map(|(f, _)| f).collect();
        let want: Vec<u32> = ops.iter().map(|(f, _)| cfs[*f].id()).collect();
        assert_eq!(fams, want);
        db.write(batch).unwrap();
        for (f, op) in ops {
            match op {
                Op::DeleteRange(start, end) => {
                    let doomed: Vec<Vec<u8>> = oracle[f]
                        .range(start..)
                        .take_while(|(key, _)| **key < end)
                        .map(|(key, _)| key.clone())
                        .collect();
                    for d in doomed {
                        oracle[f].remove(&d);
                    }
                }
                Op::Put(k, v) => {
                    oracle[f].insert(k, v);
                }
                Op::Delete(k) => {
                    oracle[f].remove(&k);
                }
            }
        }
        match rng.below(400) {
            0 => db.flush().unwrap(),
            1 => {
                let f = rng.below(names.len() as u64) as usize;
                db.compact_range_cf(&cfs[f], None, None).unwrap();
            }
            2 => {
                drop(cfs);
                db.close().unwrap();
                db = Db::open(dir.path(), cf_db_options()).unwrap();
                cfs = handles(&db);
            }
            3 => {
                let f = 1 + rng.below(3) as usize;
                db.drop_cf(names[f]).unwrap();
                let o = cfs[f].options();
                cfs[f] = db.create_cf(names[f], o).unwrap();
                oracle[f].clear();
            }
            _ => {}
        }
        if step % 500 == 499 {
            for (f, cf) in cfs.iter().enumerate() {
                assert_eq!(
                    common::contents_cf(&db, cf),
                    oracle[f],
                    "family {} at step {step}",
                    names[f]
                );
                for k in oracle[f].keys().take(20) {
                    assert_eq!(
                        db.get_cf(cf, k).unwrap().as_deref(),
                        oracle[f].get(k).map(|v| &v[..])
                    );
                }
            }
        }
    }
    db.wait_for_compactions().unwrap();
    for (f, cf) in cfs.iter().enumerate() {
        assert_eq!(
            common::contents_cf(&db, cf),
            oracle[f],
            "family {} at the end",
            names[f]
        );
    }
}
