//! Crash test: a child process (this test binary, re-run in "child" mode) writes with
//! `sync` from two threads and is killed with SIGKILL at a random moment, many rounds over the
//! same directory. The child announces each write before issuing it (`I`) and after it is
//! acknowledged (`A`). After each kill the parent reopens the database and checks that every
//! acknowledged write is present, that nothing appears that was never issued, and that an
//! in-flight batch is applied entirely or not at all.
//!
//! Replay a failure with `STRATA_SEED=<seed> cargo test --test crash`.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{seeds, with_seed, Rng};
use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

const KEYS: u64 = 400;

/// Options of the crash workload; with `tiered`, levels below L0 go to a `file://` capacity
/// tier beside the database, 2 ms away, so crashes land in the middle of uploads.
/// With `node_loss`: the WAL lives in `wal/` beside the database with the extended WAL on (and
/// a short TTL, so push-downs run), and the parent deletes the database directory after every
/// kill.
fn crash_options_with(
    base: &std::path::Path,
    tiered: bool,
    forest: bool,
    logstore: bool,
    node_loss: bool,
    object_log: bool,
) -> Options {
    let mut o = crash_options_local();
    if node_loss {
        o.wal_location = Some(if object_log {
            // An object-store log location (object_store's local file system).
            format!("file://{}", base.join("walobj").display()).into()
        } else {
            base.join("wal")
        });
        o.extended_wal = true;
        o.extended_wal_ttl = Some(Duration::from_millis(300));
        // A killed holder's lease is taken over after this long, on every reopen (long
        // enough that a live holder renews within it on a loaded machine).
        o.wal_lease_ttl = Duration::from_secs(2);
    }
    if forest {
        // Split forest with early cleaning after every table: kills land inside merges, and
        // reopens resume them from their journal.
        o.compaction_style = strata::CompactionStyle::SplitForest;
        o.forest = strata::compaction::ForestOptions {
            trees_per_level: 2,
            cleaning_threshold: 1,
            search_threads: 4,
        };
        o.target_file_size_base = 4096;
        o.compression_per_level = vec![strata::Compression::None];
        // Slow merges, so that kills land inside them.
        o.compaction_rate_limit = 1 << 20;
    }
    if tiered {
        let mut c = strata::storage::object::CapacityOptions::new(format!(
            "file://{}",
            base.join("cap").display()
        ));
        c.emulation = Some(strata::storage::object::Emulation {
            latency: std::time::Duration::from_millis(2),
            ..Default::default()
        });
        o.capacity = Some(c);
        // Obsolete objects go at once, so the check below that objects == live tables holds
        // after the reopened database's own compactions (the default waits a minute).
        o.capacity_gc_min_age = std::time::Duration::ZERO;
        o.fast_levels = Some(0);
        o.persistent_cache = strata::cache::persistent::PersistentCacheOptions {
            kind: strata::cache::persistent::PersistentCacheKind::Lap,
            capacity: 1 << 20,
            bucket_size: 256 << 10,
            unit_size: 256,
            file_size: 64 << 10,
        };
    }
    if logstore {
        // LogStore over relative placement, its cost model pinned so that a few reads pay for
        // a reverse or staging compaction: kills land in them and in side-file writes.
        o.fast_levels = None;
        o.max_bytes_for_level_base = 8 * 1024;
        o.compression_per_level = vec![strata::Compression::None];
        o.placement_policy = strata::tier::PlacementPolicy::LogStore;
        // HotRAP would serve the hot keys from promoted copies, and the capacity tables would
        // stay cold (the model test runs the two together).
        o.hotrap.enabled = false;
        o.logstore = strata::tier::LogStoreOptions {
            half_life: Duration::from_secs(2),
            tick: Duration::from_millis(5),
            persist_interval: Duration::from_millis(20),
            defer_read_fraction: 0.0,
            costs: Some(strata::tier::temperature::TierCosts {
                fast_seek: 1e-3,
                capacity_seek: 0.05,
                fast_bw: 1e8,
                capacity_bw: 1e7,
            }),
            ..Default::default()
        };
    }
    o
}

fn crash_options_local() -> Options {
    Options {
        write_buffer_size: 32 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 64 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 16 * 1024,
        block_size: 512,
        ..Options::default()
    }
}

fn key(i: u64) -> String {
    format!("key{i:04}")
}

/// Child mode: write forever until killed.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("STRATA_CRASH_DIR") else {
        return;
    };
    let seed: u64 = std::env::var("STRATA_CRASH_SEED").unwrap().parse().unwrap();
    let round: u64 = std::env::var("STRATA_CRASH_ROUND")
        .unwrap()
        .parse()
        .unwrap();
    let tiered = std::env::var("STRATA_CRASH_TIERED").is_ok();
    let forest = std::env::var("STRATA_CRASH_FOREST").is_ok();
    let logstore = std::env::var("STRATA_CRASH_LOGSTORE").is_ok();
    let node_loss = std::env::var("STRATA_CRASH_NODE_LOSS").is_ok();
    let object_log = std::env::var("STRATA_CRASH_NODE_LOSS").is_ok_and(|v| v == "object");
    let base = std::path::PathBuf::from(&dir);
    let db = Db::open(
        base.join("db"),
        crash_options_with(&base, tiered, forest, logstore, node_loss, object_log),
    )
    .unwrap();
    // The harness printed "test crash_child ... " without a newline: end that line.
    println!();
    if logstore {
        // Reads of a hot key range heat its tables: reverse and staging compactions run.
        let reader = db.clone();
        std::thread::spawn(move || {
            let mut rng = Rng::new(seed);
            loop {
                let _ = reader.get(key(rng.below(KEYS / 8)));
            }
        });
        if std::env::var("STRATA_CRASH_DEBUG").is_ok() {
            let db = db.clone();
            std::thread::spawn(move || loop {
                std::thread::sleep(Duration::from_millis(100));
                eprintln!("child: {}", db.stats().logstore.unwrap());
            });
        }
    }
    let handles: Vec<_> = (0..2u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed ^ (t + 1).wrapping_mul(0x9e37_79b9));
                for n in 0.. {
                    let id = format!("{round}.{t}.{n}");
                    let mut batch = WriteBatch::new();
                    let mut ops = Vec::new();
                    for _ in 0..1 + rng.below(3) {
                        // Each thread owns the keys congruent to its number, so per-key order is
                        // the thread's issue order.
                        let k = key(rng.below(KEYS / 2) * 2 + t);
                        if rng.chance(15) {
                            batch.delete(&k);
                            ops.push(format!("D:{k}"));
                        } else {
                            let len = 1 + rng.below(300) as usize;
                            let mut v = format!("{id}-");
                            v.extend(std::iter::repeat_n('x', len));
                            batch.put(&k, &v);
                            ops.push(format!("P:{k}:{v}"));
                        }
                    }
                    println!("I {id} {}", ops.join(","));
                    // The split forest needs volume for merges to run in the child: mostly
                    // unsynced writes (still in the OS once acknowledged, so a kill keeps them).
                    // With an object-store log an unsynced write lives only in the local stage
                    // until the next sync: a node loss may take it (the documented contract),
                    // so that mode syncs every write and checks that none is lost.
                    let sync = if object_log {
                        true
                    } else if forest {
                        rng.chance(5)
                    } else {
                        !rng.chance(10)
                    };
                    db.write_opt(
                        batch,
                        &WriteOptions {
                            sync,
                            ..Default::default()
                        },
                    )
                    .unwrap();
                    println!("A {id}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

type Ops = Vec<(String, Option<String>)>;

fn parse_ops(s: &str) -> Ops {
    s.split(',')
        .map(|op| {
            let mut p = op.splitn(3, ':');
            match (p.next(), p.next(), p.next()) {
                (Some("P"), Some(k), Some(v)) => (k.to_string(), Some(v.to_string())),
                (Some("D"), Some(k), None) => (k.to_string(), None),
                _ => panic!("bad op {op:?}"),
            }
        })
        .collect()
}

fn run(seed: u64, rounds: u64, tiered: bool, forest: bool) {
    run_mode(seed, rounds, tiered, forest, false)
}

fn run_mode(seed: u64, rounds: u64, tiered: bool, forest: bool, logstore: bool) {
    run_full(seed, rounds, tiered, forest, logstore, false, false, false)
}

#[allow(clippy::too_many_arguments)]
fn run_full(
    seed: u64,
    rounds: u64,
    tiered: bool,
    forest: bool,
    logstore: bool,
    node_loss: bool,
    object_log: bool,
    failover: bool,
) {
    let mut recovered_tables = 0usize;
    let (mut promotions, mut replica_refreshes, mut replica_errors) = (0usize, 0u64, 0u64);
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut oracle: BTreeMap<String, String> = BTreeMap::new();
    let mut total_acked = 0usize;
    let mut capacity_tables = 0usize;
    let mut reopened_mid_merge = 0usize;
    for round in 0..rounds {
        let mut cmd = Command::new(&exe);
        cmd.args(["--exact", "crash_child", "--nocapture", "--test-threads=1"]);
        if tiered {
            cmd.env("STRATA_CRASH_TIERED", "1");
        }
        if forest {
            cmd.env("STRATA_CRASH_FOREST", "1");
        }
        if logstore {
            cmd.env("STRATA_CRASH_LOGSTORE", "1");
        }
        if node_loss {
            cmd.env(
                "STRATA_CRASH_NODE_LOSS",
                if object_log { "object" } else { "dir" },
            );
        }
        let mut child = cmd
            .env("STRATA_CRASH_DIR", dir.path())
            .env("STRATA_CRASH_SEED", (seed ^ round).to_string())
            .env("STRATA_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(if std::env::var("STRATA_CRASH_DEBUG").is_ok() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        // Failover rounds: a replica follows the child from its log location and capacity
        // tier (from the second round on, when they hold a database) and is promoted after
        // the kill.
        let replica = (failover && round > 0).then(|| {
            let o = crash_options_with(dir.path(), tiered, forest, logstore, node_loss, object_log);
            let mut r = strata::replica::ReplicaOptions::new(
                o.wal_location.clone().unwrap(),
                dir.path().join(format!("replica-{round}")),
            );
            r.capacity = o.capacity.clone();
            r.refresh_interval = None;
            r.engine = o;
            Db::open_replica(r).unwrap_or_else(|e| panic!("round {round}: replica open: {e}"))
        });
        let (tx, rx) = mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            // Only complete lines count: the kill may cut the last one short.
            let mut r = BufReader::new(stdout);
            let mut buf = String::new();
            loop {
                buf.clear();
                match r.read_line(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if buf.ends_with('\n') => {
                        if tx.send(buf.trim_end().to_string()).is_err() {
                            break;
                        }
                    }
                    Ok(_) => break,
                }
            }
        });
        // Let it start and write for a random while, then kill it.
        let life = Duration::from_millis(150 + rng.below(500));
        let start = Instant::now();
        let mut lines = Vec::new();
        let mut refreshed = Instant::now();
        while start.elapsed() < life {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(10)) {
                lines.push(l);
            }
            if let Some(r) = &replica {
                if refreshed.elapsed() > Duration::from_millis(40) {
                    refreshed = Instant::now();
                    // A refresh racing the child's open or its garbage collection may fail
                    // once; reads must not.
                    match r.refresh() {
                        Ok(_) => replica_refreshes += 1,
                        Err(_) => replica_errors += 1,
                    }
                    r.get(key(rng.below(KEYS)))
                        .unwrap_or_else(|e| panic!("round {round}: replica read: {e}"));
                }
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        lines.extend(rx.try_iter());

        let mut issued: HashMap<String, Ops> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        let mut in_flight: HashMap<String, Ops> = HashMap::new();
        for l in &lines {
            if let Some(rest) = l.strip_prefix("I ") {
                let (id, ops) = rest.split_once(' ').unwrap();
                issued.insert(id.to_string(), parse_ops(ops));
                order.push(id.to_string());
            } else if let Some(id) = l.strip_prefix("A ") {
                let ops = issued
                    .remove(id)
                    .unwrap_or_else(|| panic!("ack of a write never issued: {l:?}"));
                total_acked += 1;
                for (k, v) in ops {
                    match v {
                        Some(v) => oracle.insert(k, v),
                        None => oracle.remove(&k),
                    };
                }
            }
        }
        for id in order {
            if let Some(ops) = issued.remove(&id) {
                in_flight.insert(id, ops);
            }
        }
        assert!(
            in_flight.len() <= 2,
            "round {round}: at most one in-flight write per thread"
        );

        let opts = || {
            let mut o =
                crash_options_with(dir.path(), tiered, forest, logstore, node_loss, object_log);
            // The checks below need the reopened database idle once compactions are waited for.
            o.extended_wal_ttl = None;
            o
        };
        if node_loss {
            // The node is lost: only the log location and the capacity tier remain. Rounds
            // recover in turn by opening (a parallel rebuild), with `recover` in parallel mode,
            // and with the chronological replay.
            std::fs::remove_dir_all(dir.path().join("db")).unwrap();
            let mode = match round % 3 {
                // A promotion opens the writer itself.
                _ if replica.is_some() => None,
                0 => None,
                1 => Some(strata::recovery::RecoveryMode::Parallel),
                _ => Some(strata::recovery::RecoveryMode::Replay),
            };
            if let Some(mode) = mode {
                let r = strata::recovery::recover(&dir.path().join("db"), opts(), mode)
                    .unwrap_or_else(|e| panic!("round {round}: {mode:?} recovery failed: {e}"));
                recovered_tables += r.lost_tables;
            }
        }
        let db = match replica {
            Some(r) => {
                std::fs::remove_dir_all(dir.path().join(format!("replica-{}", round - 1))).ok();
                promotions += 1;
                r.promote(dir.path().join("db"))
                    .unwrap_or_else(|e| panic!("round {round}: promotion failed: {e}"))
            }
            None => Db::open(dir.path().join("db"), opts())
                .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}")),
        };
        // A split-forest merge the kill interrupted is resumed from its journal.
        if forest {
            db.wait_for_compactions()
                .unwrap_or_else(|e| panic!("round {round}: background work failed: {e}"));
            reopened_mid_merge += db.stats().forest.resumes as usize;
            assert!(
                db.sorted_runs().iter().all(|r| r.cut.is_none()),
                "round {round}: a cut survived the resumed merge"
            );
        }
        if tiered {
            // No object outlives a crash unless the manifest names it. Uploads the reopened
            // database starts itself are finished first (a staged upload is not an orphan).
            db.wait_for_compactions()
                .unwrap_or_else(|e| panic!("round {round}: background work failed: {e}"));
            let mut live: Vec<String> = db
                .live_tables()
                .into_iter()
                .filter(|(_, f)| f.tier == strata::tier::Tier::Capacity)
                .map(|(_, f)| format!("{:06}.sst", f.id))
                .collect();
            live.sort();
            let mut objects: Vec<String> = std::fs::read_dir(dir.path().join("cap/tables"))
                .map(|d| {
                    d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            objects.sort();
            assert_eq!(
                objects, live,
                "round {round}: orphaned or missing capacity objects"
            );
            capacity_tables += live.len();
            if std::env::var("STRATA_CRASH_DEBUG").is_ok() {
                eprintln!("round {round}:\n{}", db.stats());
            }
        }
        // In-flight batches: all or nothing.
        for (id, ops) in &in_flight {
            let applied: Vec<bool> = ops
                .iter()
                .map(|(k, v)| {
                    let got = db
                        .get(k)
                        .unwrap()
                        .map(|b| String::from_utf8(b.to_vec()).unwrap());
                    got.as_deref() == v.as_deref()
                })
                .collect();
            let unchanged: Vec<bool> = ops
                .iter()
                .map(|(k, _)| {
                    let got = db
                        .get(k)
                        .unwrap()
                        .map(|b| String::from_utf8(b.to_vec()).unwrap());
                    got.as_ref() == oracle.get(k)
                })
                .collect();
            // A batch touching a key twice is judged by its last write to that key.
            let mut last: BTreeMap<&String, &Option<String>> = BTreeMap::new();
            for (k, v) in ops {
                last.insert(k, v);
            }
            let all_new = last.iter().all(|(k, v)| {
                let got = db
                    .get(k.as_str())
                    .unwrap()
                    .map(|b| String::from_utf8(b.to_vec()).unwrap());
                got.as_deref() == v.as_deref()
            });
            let all_old = unchanged.iter().all(|&u| u);
            assert!(
                all_new || all_old,
                "round {round}: in-flight batch {id} partially applied: new {applied:?} old {unchanged:?}"
            );
            if all_new && !all_old {
                for (k, v) in last {
                    match v {
                        Some(v) => oracle.insert(k.clone(), v.clone()),
                        None => oracle.remove(k),
                    };
                }
            }
        }
        // Every acknowledged write is there and nothing else is.
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut got = BTreeMap::new();
        while it.valid() {
            got.insert(
                String::from_utf8(it.key().to_vec()).unwrap(),
                String::from_utf8(it.value().to_vec()).unwrap(),
            );
            it.next();
        }
        it.status().unwrap();
        if got != oracle {
            let missing: Vec<_> = oracle
                .keys()
                .filter(|k| got.get(*k) != oracle.get(*k))
                .take(5)
                .collect();
            let extra: Vec<_> = got
                .keys()
                .filter(|k| !oracle.contains_key(*k))
                .take(5)
                .collect();
            let detail: Vec<_> = missing
                .iter()
                .map(|k| (k, got.get(*k).cloned(), oracle.get(*k).cloned()))
                .collect();
            panic!("round {round}: state differs; wrong/missing (key, got, want) {detail:?} unexpected {extra:?}");
        }
        db.close().unwrap();
    }
    eprintln!(
        "crash test (tiered: {tiered}, split forest: {forest}, node loss: {node_loss}): {rounds} rounds, {total_acked} acknowledged writes verified, {capacity_tables} capacity tables checked, {reopened_mid_merge} merges resumed from the journal, {recovered_tables} lost fast tables rebuilt"
    );
    if tiered {
        assert!(capacity_tables > 0, "the capacity tier was never used");
    }
    if node_loss {
        assert!(
            failover || recovered_tables > 0,
            "no lost fast-tier table was rebuilt"
        );
    }
    if failover {
        eprintln!(
            "failover: {promotions} promotions, {replica_refreshes} replica refreshes \
             ({replica_errors} failed)"
        );
        assert!(promotions > 0 && replica_refreshes > 0);
        assert!(
            replica_errors * 4 <= replica_refreshes,
            "replica refreshes failed too often: {replica_errors} of {replica_refreshes}"
        );
    }
    if forest && !tiered {
        // Kills land in merges with early cleaning in about every round.
        assert!(
            reopened_mid_merge > 0,
            "no kill landed inside a journaled merge"
        );
    }
    assert!(
        total_acked > rounds as usize,
        "the child acknowledged too few writes"
    );
}

/// Node loss (RocksMash §3.4): after every kill the database directory is deleted; recovery
/// rebuilds the fast tier from the extended WAL in the log location (by opening, with
/// `recover` in parallel mode, or with the replay baseline) and every acknowledged write must
/// be back. `STRATA_CRASH_ROUNDS` overrides the 12 rounds.
fn node_loss(tiered: bool, object_log: bool) {
    if std::env::var("STRATA_CRASH_DIR").is_ok() {
        return;
    }
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    for seed in seeds(1) {
        with_seed("crash", seed, move || {
            run_full(seed, rounds, tiered, false, false, true, object_log, false)
        });
    }
}

/// Failover (issue 48): a replica follows the writer through its object-store log location
/// and capacity tier while the writer is killed with SIGKILL; the node is lost and the
/// replica is promoted in its place. Every acknowledged write must be in the promoted writer.
#[test]
fn failover_to_a_replica_after_sigkill_loses_no_acknowledged_write() {
    if std::env::var("STRATA_CRASH_DIR").is_ok() {
        return;
    }
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    for seed in seeds(1) {
        with_seed("crash", seed, move || {
            run_full(seed, rounds, true, false, false, true, true, true)
        });
    }
}

/// The log location in a directory, no capacity tier: every table is on the lost tier.
#[test]
fn node_loss_after_sigkill_loses_no_acknowledged_write() {
    node_loss(false, false)
}

/// With a capacity tier: only the fast tier is rebuilt, the capacity tier is read in place, and
/// the TTL push-down keeps moving old tables down while the child writes.
#[test]
fn node_loss_with_a_capacity_tier_loses_no_acknowledged_write() {
    node_loss(true, false)
}

/// The log location on an object store (object_store's local file system): the WAL and the
/// manifest mirror are segments uploaded at each sync.
#[test]
fn node_loss_with_an_object_store_log_loses_no_acknowledged_write() {
    node_loss(true, true)
}

#[test]
fn sigkill_loses_no_acknowledged_write() {
    if std::env::var("STRATA_CRASH_DIR").is_ok() {
        return;
    }
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    for seed in seeds(1) {
        with_seed("crash", seed, move || run(seed, rounds, false, false));
    }
}

/// LogStore placement under SIGKILL: a reader heats a key range, so kills land in reverse
/// and staging compactions and in writes of the `TEMPERATURE` side file.
#[test]
fn sigkill_during_logstore_compactions_loses_nothing() {
    if std::env::var("STRATA_CRASH_DIR").is_ok() {
        return;
    }
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    for seed in seeds(1) {
        with_seed("crash", seed, move || {
            run_mode(seed, rounds, true, false, true)
        });
    }
}

/// The split forest under SIGKILL, with and without a capacity tier: kills land in merges
/// with early cleaning (the child and the checking parent share `STRATA_CRASH_FOREST`).
#[test]
fn sigkill_during_split_forest_merges_loses_nothing() {
    if std::env::var("STRATA_CRASH_DIR").is_ok() {
        return;
    }
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    for seed in seeds(1) {
        with_seed("crash", seed, move || run(seed, rounds, false, true));
        with_seed("crash", seed, move || run(seed, rounds / 2, true, true));
    }
}

#[test]
fn sigkill_during_capacity_uploads_loses_nothing_and_leaves_no_orphan() {
    if std::env::var("STRATA_CRASH_DIR").is_ok() {
        return;
    }
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    for seed in seeds(1) {
        with_seed("crash", seed, move || run(seed, rounds, true, false));
    }
}
