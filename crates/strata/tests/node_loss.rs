//! Node-loss recovery (RocksMash §3.4) against a `BTreeMap` model, in process: a random
//! workload (puts, deletes, range deletes, flushes, compactions) on a database with the
//! extended WAL, then the database directory is deleted and the database recovered — by
//! opening it, with `recovery::recover` in parallel mode, or with the replay baseline — and
//! compared with the model. Log locations: a directory, an in-memory object store, and the
//! S3-compatible server named by `STRATA_S3_URL` (scripts/test.sh starts moto on loopback).
//! Damage to the log location is reported as corruption, never returned as data.
//!
//! The SIGKILL variants (kills at random moments, in compactions) are in `tests/crash.rs`.
//! Replay a failure with `STRATA_SEED=<seed> cargo test --test node_loss`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{contents, key, seeds, small_options, with_seed, Rng};
use strata::recovery::{recover, RecoveryMode};
use strata::storage::object::CapacityOptions;
use strata::{Db, Options, WriteBatch, WriteOptions};

#[derive(Clone, Copy, Debug)]
enum Log {
    Dir,
    Memory,
    S3,
}

fn options(rng: &mut Rng, base: &Path, log: Log, capacity: bool, seed: u64) -> Options {
    let mut o = small_options(rng);
    o.extended_wal = true;
    o.extended_wal_ttl = None;
    let s3 = || {
        std::env::var("STRATA_S3_URL")
            .expect("STRATA_S3_URL")
            .trim_end_matches('/')
            .to_string()
    };
    o.wal_location = Some(match log {
        Log::Dir => base.join("log"),
        Log::Memory => format!("memory://node-loss-log-{seed}").into(),
        Log::S3 => format!("{}/node-loss-{seed}/log", s3()).into(),
    });
    if capacity {
        let url = match log {
            Log::S3 => format!("{}/node-loss-{seed}/cap", s3()),
            _ => format!("file://{}", base.join("cap").display()),
        };
        let mut c = CapacityOptions::new(url);
        c.part_size = 5 << 20;
        o.capacity = Some(c);
        o.capacity_levels = 1 + rng.below(2) as usize;
    }
    o
}

/// Writes a random workload into `db`, mirrored in `model`; with a merge operator (the
/// append operator with ","), some puts are merges.
fn workload(rng: &mut Rng, db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, ops: u64) {
    let merges = db.options().merge_operator.is_some();
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    for i in 0..ops {
        let mut b = WriteBatch::new();
        for _ in 0..1 + rng.below(4) {
            let k = key(rng.below(400));
            match rng.below(20) {
                0 => {
                    let end = key(rng.below(400));
                    if k < end {
                        b.delete_range(&k, &end);
                        let doomed: Vec<_> = model
                            .range(k.clone()..end)
                            .map(|(k, _)| k.clone())
                            .collect();
                        for d in doomed {
                            model.remove(&d);
                        }
                    }
                }
                1..=3 => {
                    b.delete(&k);
                    model.remove(&k);
                }
                4..=9 if merges => {
                    let operand = format!("m{i}-{}", rng.below(1000));
                    b.merge(&k, &operand);
                    let v = model.entry(k).or_default();
                    if !v.is_empty() {
                        v.push(b',');
                    }
                    v.extend_from_slice(operand.as_bytes());
                }
                _ => {
                    let v =
                        format!("v{i}-{}", rng.below(1 << 20)).repeat(1 + rng.below(8) as usize);
                    b.put(&k, &v);
                    model.insert(k, v.into_bytes());
                }
            }
        }
        if !b.is_empty() {
            db.write_opt(b, &sync).unwrap();
        }
        match rng.below(200) {
            0 => db.flush().unwrap(),
            1 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            _ => {}
        }
    }
}

fn run(seed: u64, log: Log, capacity: bool) {
    run_with(seed, log, capacity, false)
}

fn run_with(seed: u64, log: Log, capacity: bool, merges: bool) {
    let mut rng = Rng::new(seed);
    let base = tempfile::tempdir().unwrap();
    let dbdir = base.path().join("db");
    let mut opts = options(&mut rng, base.path(), log, capacity, seed);
    if merges {
        opts.merge_operator = Some(std::sync::Arc::new(strata::merge::Append::new(b",")));
    }
    let mut model = BTreeMap::new();
    let mut rebuilt = 0;
    let mut key_lists = 0;
    for round in 0..4 {
        let db = Db::open(&dbdir, opts.clone()).unwrap();
        assert_eq!(
            contents(&db),
            model,
            "round {round}: reopened state differs"
        );
        let ops = 300 + rng.below(500);
        workload(&mut rng, &db, &mut model, ops);
        // A flushed memtable leaves a fast-tier table for the loss to take (a short round
        // may otherwise end with every record still in the WAL and nothing to rebuild).
        db.flush().unwrap();
        // Settled, so that the tables counted are the ones the manifest holds at close.
        db.wait_for_compactions().unwrap();
        key_lists += db
            .stats()
            .extended_wal
            .expect("extended WAL stats")
            .key_lists;
        let fast = db
            .live_tables()
            .iter()
            .filter(|(_, f)| f.tier == strata::tier::Tier::Fast)
            .count();
        db.close().unwrap();
        // The node is lost.
        std::fs::remove_dir_all(&dbdir).unwrap();
        match round % 3 {
            0 => {}
            1 => {
                let r = recover(&dbdir, opts.clone(), RecoveryMode::Parallel).unwrap();
                // (HotRAP may install a promoted table between the count and the close.)
                assert!(r.lost_tables >= fast.min(1), "round {round}: lost tables");
                assert_eq!(r.tables_written, r.lost_tables);
                rebuilt += r.lost_tables;
            }
            _ => {
                let r = recover(&dbdir, opts.clone(), RecoveryMode::Replay).unwrap();
                assert!(r.lost_tables >= fast.min(1), "round {round}: lost tables");
                rebuilt += r.lost_tables;
            }
        }
    }
    let db = Db::open(&dbdir, opts.clone()).unwrap();
    assert_eq!(contents(&db), model, "final state differs");
    db.close().unwrap();
    assert!(key_lists > 0, "no key list was logged");
    assert!(rebuilt > 0, "no fast-tier table was lost and rebuilt");
}

#[test]
fn node_loss_with_a_directory_log() {
    for seed in seeds(2) {
        with_seed("node_loss", seed, move || {
            run(seed, Log::Dir, seed % 2 == 0)
        });
    }
}

/// Merge operands and the values compaction folds from them (whose sequence numbers the WAL
/// holds operands for) are rebuilt exactly.
#[test]
fn node_loss_with_merge_operands() {
    for seed in seeds(1) {
        with_seed("node_loss", seed, move || {
            run_with(seed, Log::Dir, true, true)
        });
    }
}

#[test]
fn node_loss_with_an_object_store_log() {
    for seed in seeds(1) {
        with_seed("node_loss", seed, move || run(seed, Log::Memory, true));
    }
}

/// Runs when `STRATA_S3_URL` names a bucket on an S3-compatible server; skipped otherwise.
#[test]
fn node_loss_with_the_log_and_capacity_tier_on_s3() {
    if std::env::var("STRATA_S3_URL").is_err() {
        eprintln!(
            "node_loss_with_the_log_and_capacity_tier_on_s3: STRATA_S3_URL is not set; skipped"
        );
        return;
    }
    for seed in seeds(1) {
        with_seed("node_loss", seed, move || run(seed, Log::S3, true));
    }
}

/// One object-store log location, two nodes: while one database has it open, the other (a
/// node recovering the same location by opening or by `recover`) is refused with `Locked`
/// and writes nothing; once the first closes, the second rebuilds from the location and finds
/// every acknowledged write. In memory, and on S3 when `STRATA_S3_URL` is set (moto in CI:
/// the lease's conditional PUTs are `If-None-Match: *` there).
#[test]
fn two_nodes_never_hold_one_log_location() {
    let mut logs = vec![Log::Memory];
    if std::env::var("STRATA_S3_URL").is_ok() {
        logs.push(Log::S3);
    } else {
        eprintln!("two_nodes_never_hold_one_log_location: STRATA_S3_URL is not set; S3 skipped");
    }
    for log in logs {
        for seed in seeds(1) {
            with_seed("node_loss", seed, move || {
                let mut rng = Rng::new(seed);
                let base = tempfile::tempdir().unwrap();
                let mut opts = options(&mut rng, base.path(), log, false, seed);
                // Its own location (with STRATA_SEED every test draws the same seed).
                opts.wal_location = Some(match log {
                    Log::S3 => format!(
                        "{}/two-nodes-{seed}/log",
                        std::env::var("STRATA_S3_URL")
                            .unwrap()
                            .trim_end_matches('/')
                    )
                    .into(),
                    _ => format!("memory://two-nodes-{seed}").into(),
                });
                // Long enough that the holder renews within it on a loaded machine.
                opts.wal_lease_ttl = std::time::Duration::from_secs(4);
                let (a, b) = (base.path().join("a"), base.path().join("b"));
                let db = Db::open(&a, opts.clone()).unwrap();
                let mut model = BTreeMap::new();
                workload(&mut rng, &db, &mut model, 300);
                db.flush().unwrap();
                workload(&mut rng, &db, &mut model, 100);
                for e in [
                    Db::open(&b, opts.clone()).err(),
                    recover(&b, opts.clone(), RecoveryMode::Parallel).err(),
                ] {
                    let e = e.expect("the location is held");
                    assert_eq!(e.kind(), strata::ErrorKind::Locked, "{log:?}: {e}");
                }
                // Still the first node's: it writes on, and what it wrote is what counts.
                workload(&mut rng, &db, &mut model, 100);
                db.close().unwrap();
                let db = Db::open(&b, opts.clone()).unwrap();
                assert_eq!(contents(&db), model, "{log:?}: rebuilt on the second node");
                db.close().unwrap();
            });
        }
    }
}

/// Damage in the log location fails recovery with `Corruption`: a flipped byte in a key list,
/// and a WAL file a key list references gone.
#[test]
fn damaged_log_location_is_corruption() {
    for seed in seeds(1) {
        with_seed("node_loss", seed, move || {
            let mut rng = Rng::new(seed);
            let base = tempfile::tempdir().unwrap();
            let dbdir = base.path().join("db");
            let opts = options(&mut rng, base.path(), Log::Dir, false, seed);
            let logdir = base.path().join("log");
            let db = Db::open(&dbdir, opts.clone()).unwrap();
            let mut model = BTreeMap::new();
            workload(&mut rng, &db, &mut model, 400);
            db.flush().unwrap();
            db.close().unwrap();
            std::fs::remove_dir_all(&dbdir).unwrap();
            let saved = base.path().join("saved");
            copy_dir(&logdir, &saved);
            let mut wals: Vec<_> = std::fs::read_dir(&logdir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "log"))
                .collect();
            wals.sort();

            // The oldest WAL file holds records the tables reference: without it, corruption.
            std::fs::remove_file(&wals[0]).unwrap();
            for mode in [RecoveryMode::Parallel, RecoveryMode::Replay] {
                let _ = std::fs::remove_dir_all(&dbdir);
                let e = recover(&dbdir, opts.clone(), mode).unwrap_err();
                assert!(e.is_corruption(), "{mode:?}, missing WAL: {e}");
            }

            // A flipped byte inside a key-list record (found by its marker) that other records
            // follow is caught by the fragment checksum or the list's own checks. (A damaged
            // last record of a file reads as a torn write, which recovery tolerates when
            // nothing needs it: a list of a table deleted since, or logged again.)
            std::fs::remove_dir_all(&logdir).unwrap();
            let _ = std::fs::remove_dir_all(&dbdir);
            copy_dir(&saved, &logdir);
            let marker = [0xffu8; 8];
            let hit = wals.iter().find_map(|p| {
                let data = std::fs::read(p).unwrap();
                // The marker opens a whole record's payload (fragment type 1, its length in the
                // two bytes before the type) and more than a block trailer follows the record.
                let followed = |i: usize| {
                    i >= 7 && data[i - 1] == 1 && {
                        let len = u16::from_le_bytes([data[i - 3], data[i - 2]]) as usize;
                        data.len() > i + len + 64
                    }
                };
                let at = data
                    .windows(8)
                    .enumerate()
                    .find(|(i, w)| *w == marker && followed(*i))
                    .map(|(i, _)| i);
                at.map(|i| (p.clone(), data, i))
            });
            let (p, mut data, i) = hit.expect("a key-list record followed by others");
            data[i + 12] ^= 0x5a;
            std::fs::write(&p, &data).unwrap();
            for mode in [RecoveryMode::Parallel, RecoveryMode::Replay] {
                let _ = std::fs::remove_dir_all(&dbdir);
                let e = recover(&dbdir, opts.clone(), mode).unwrap_err();
                assert!(e.is_corruption(), "{mode:?}, damaged key list: {e}");
            }
        });
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
