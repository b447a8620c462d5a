//! Copies of a database with column families: a checkpoint (in the process and from outside
//! it), a clone and a backup (of the running and of the closed database) hold every family —
//! its tables on both tiers and its writes still only in the WAL.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cf_db_options;
use strata::{CfOptions, ColumnFamily, Db, Options, WriteBatch};

/// A checkpoint (in the process and from outside it) and a backup of a two-tier database with
/// families hold every family: a
/// family all on the fast tier, one with its bottom level on the capacity tier, and the
/// default, each with tables and with writes still only in the WAL. The checkpoint opens as a
/// database (its own capacity prefix) equal to the source at its moment, family by family, and
/// its writes do not reach the source; the backup restores to the same; the source's garbage
/// collection keeps the checkpoint's capacity-tier tables of every family until it is
/// released.
type Map = BTreeMap<Vec<u8>, Vec<u8>>;

#[test]
fn checkpoints_and_backups_hold_every_family() {
    use strata::backup::{BackupEngine, BackupOptions};
    use strata::storage::object::CapacityOptions;
    let d = tempfile::tempdir().unwrap();
    let id = std::process::id();
    let url = |n: &str| format!("memory://cf-copies-{n}-{id}");
    let opts = |n: &str| Options {
        capacity: Some(CapacityOptions::new(url(n))),
        capacity_gc_min_age: Duration::ZERO,
        num_levels: 3,
        ..cf_db_options()
    };
    let o = opts("src");
    let db = Db::open(d.path().join("src"), o.clone()).unwrap();
    let base = CfOptions::from_options(&o);
    let fast = db
        .create_cf(
            "fast",
            CfOptions {
                fast_levels: Some(2),
                ..base.clone()
            },
        )
        .unwrap();
    let tiered = db
        .create_cf(
            "tiered",
            CfOptions {
                capacity_levels: 1,
                ..base
            },
        )
        .unwrap();
    let write_all = |round: u32, n: u32| {
        for k in 0..n {
            let mut b = WriteBatch::new();
            b.put(format!("d{k:05}"), format!("default-{round}-{k}"));
            b.put_cf(&fast, format!("f{k:05}"), format!("fast-{round}-{k}"));
            b.put_cf(
                &tiered,
                format!("t{k:05}"),
                format!("tiered-{round}-{k}-{}", "x".repeat(64)),
            );
            db.write(b).unwrap();
        }
    };
    write_all(0, 3000);
    db.flush().unwrap();
    for cf in [&fast, &tiered] {
        db.compact_range_cf(cf, None, None).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Some writes only in the WAL.
    write_all(1, 200);
    let tables = |cf: &ColumnFamily, tier: strata::tier::Tier| {
        db.live_tables_cf(cf)
            .unwrap()
            .iter()
            .filter(|(_, f)| f.tier == tier)
            .count()
    };
    assert!(tables(&tiered, strata::tier::Tier::Capacity) > 0);
    assert_eq!(tables(&fast, strata::tier::Tier::Capacity), 0);
    assert!(tables(&fast, strata::tier::Tier::Fast) > 0);
    let want = (
        common::contents(&db),
        common::contents_cf(&db, &fast),
        common::contents_cf(&db, &tiered),
    );

    let info = db.checkpoint(d.path().join("ck")).unwrap();
    let engine = BackupEngine::open(&CapacityOptions::new(url("backups"))).unwrap();
    engine.create(&db, &BackupOptions::default()).unwrap();
    // The source moves on: rewrites every family and compacts its old tables away.
    write_all(2, 3000);
    db.flush().unwrap();
    for cf in [&fast, &tiered] {
        db.compact_range_cf(cf, None, None).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();

    let check = |copy: &Db, want: &(Map, Map, Map), what: &str| {
        assert_eq!(
            copy.column_families(),
            vec!["default", "fast", "tiered"],
            "{what}"
        );
        let (f, t) = (copy.cf("fast").unwrap(), copy.cf("tiered").unwrap());
        assert!(common::contents(copy) == want.0, "{what}: default family");
        assert!(
            common::contents_cf(copy, &f) == want.1,
            "{what}: fast family"
        );
        assert!(
            common::contents_cf(copy, &t) == want.2,
            "{what}: tiered family"
        );
    };
    let copy = Db::open(d.path().join("ck"), opts("ck")).unwrap();
    check(&copy, &want, "checkpoint");
    assert!(info.capacity_tables > 0);
    // Its writes stay its own.
    let t = copy.cf("tiered").unwrap();
    copy.put_cf(&t, "t00000", "copy's").unwrap();
    copy.close().unwrap();
    assert_ne!(
        db.get_cf(&tiered, "t00000").unwrap().as_deref(),
        Some(&b"copy's"[..])
    );
    // The newest backup, restored under `name`, opened and checked against `want`.
    let restore = |name: &str, want: &(Map, Map, Map)| {
        let to = d.path().join(name);
        let cap = CapacityOptions::new(url(name));
        engine
            .restore(None, &to, Some(&cap), &Default::default())
            .unwrap();
        let r = Db::open(&to, opts(name)).unwrap();
        check(&r, want, name);
        r.close().unwrap();
    };
    restore("restored", &want);
    assert!(db.release_checkpoint(info.id).unwrap());
    // From outside the process: a checkpoint of the closed database, with writes of every
    // family still only in its WAL.
    write_all(3, 100);
    let now = (
        common::contents(&db),
        common::contents_cf(&db, &fast),
        common::contents_cf(&db, &tiered),
    );
    db.close().unwrap();
    let ck = strata::checkpoint::offline::checkpoint_dir(
        &d.path().join("src"),
        Some(&CapacityOptions::new(url("src"))),
        &d.path().join("ck-offline"),
        &Default::default(),
    )
    .unwrap();
    let copy = Db::open(d.path().join("ck-offline"), opts("ck-offline")).unwrap();
    check(&copy, &now, "checkpoint from outside");
    assert_eq!(ck.sequence, copy.latest_sequence());
    copy.close().unwrap();
    // And a backup from outside, restored.
    engine
        .create_from_dir(
            &d.path().join("src"),
            Some(&CapacityOptions::new(url("src"))),
            &BackupOptions::default(),
        )
        .unwrap();
    restore("restored-2", &now);
}
