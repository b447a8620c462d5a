//! Fencing of a writer whose object-store log location another database took over (the
//! slatedb#1622 scenario): once its lease is taken, the old writer makes nothing durable on the
//! log location *or the capacity tier* — no table upload, no deletion by compaction or garbage
//! collection — its writes fail with `ErrorKind::Fenced`, and the database that took over holds
//! every write the old one acknowledged. The same holds for a database that loses the lease
//! while it opens (node-loss recovery and WAL replay from a slow log location): its open fails
//! with `Fenced` and adds nothing to either store.
//!
//! The takeover is staged the way a taker makes it: the next lease generations appear on the
//! log location (`storage/object/lease.rs`), as after the holder stayed silent a whole ttl —
//! which is what a writer paused (a stopped process) past the ttl and past
//! `capacity_gc_min_age` sees when it resumes. On `file://` stores, and on the S3-compatible
//! server named by `STRATA_S3_URL` when it is set (`scripts/test.sh` starts one).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strata::storage::object::{CapacityOptions, CapacityTier};
use strata::{Db, ErrorKind, Options, WriteBatch, WriteOptions};

const TTL: Duration = Duration::from_millis(800);

fn tier(url: &str) -> Arc<CapacityTier> {
    CapacityTier::open(&CapacityOptions::new(url), None, Default::default()).unwrap()
}

/// Every object of the store at `url`, with its size.
fn objects(url: &str) -> BTreeSet<(String, u64)> {
    tier(url).list("").unwrap().into_iter().collect()
}

/// Stages a takeover of the lease on the log location `url`: the next generations are
/// another database's.
fn take_over_lease(url: &str) {
    let t = tier(url);
    let newest = t
        .list("LEASE/")
        .unwrap()
        .iter()
        .filter_map(|(name, _)| name.rsplit('/').next()?.parse::<u64>().ok())
        .max()
        .expect("the writer holds a lease generation");
    for g in newest + 1..newest + 50 {
        t.put(
            &t.path(&format!("LEASE/{g:020}")),
            Bytes::from_static(b"another database"),
        )
        .unwrap();
    }
}

/// A fresh root on the S3-compatible server `STRATA_S3_URL` names, if it is set.
fn s3_root() -> Option<String> {
    let url = std::env::var("STRATA_S3_URL").ok()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    Some(format!("{}/fencing-{nanos}", url.trim_end_matches('/')))
}

fn put(db: &Db, k: &[u8], v: &[u8]) -> strata::Result<()> {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write_opt(
        b,
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
    )
}

#[test]
fn a_writer_whose_lease_was_taken_over_makes_nothing_durable() {
    let base = tempfile::tempdir().unwrap();
    fenced_writer(&base, &format!("file://{}", base.path().display()));
}

#[test]
fn a_writer_whose_lease_was_taken_over_on_s3_makes_nothing_durable() {
    let Some(root) = s3_root() else {
        eprintln!("fencing: STRATA_S3_URL is not set; the S3 run is skipped");
        return;
    };
    let base = tempfile::tempdir().unwrap();
    fenced_writer(&base, &root);
}

/// The scenario with the log location at `<root>/log` and the capacity tier at `<root>/cap`.
fn fenced_writer(base: &tempfile::TempDir, root: &str) {
    let (log, cap) = (format!("{root}/log"), format!("{root}/cap"));
    let o = Options {
        wal_location: Some(log.clone().into()),
        extended_wal: true,
        extended_wal_ttl: None,
        capacity: Some(CapacityOptions::new(cap.clone())),
        // Every level below L0 on the capacity tier: a full compaction uploads its output
        // there and deletes its inputs at once.
        fast_levels: Some(0),
        capacity_gc_min_age: Duration::ZERO,
        wal_lease_ttl: TTL,
        ..Default::default()
    };

    let a = Db::open(base.path().join("a"), o.clone()).unwrap();
    let mut acked = BTreeMap::new();
    let value = |i: u32| format!("value-{i}-{}", "x".repeat(40)).into_bytes();
    for i in 0..300u32 {
        let k = format!("key{i:05}").into_bytes();
        put(&a, &k, &value(i)).unwrap();
        acked.insert(k, value(i));
    }
    a.flush().unwrap();
    a.compact_range(None, None).unwrap();
    let before = objects(&cap);
    assert!(
        before.iter().any(|(n, _)| n.starts_with("tables/")),
        "the compaction uploaded tables: {before:?}"
    );
    for i in 300..400u32 {
        let k = format!("key{i:05}").into_bytes();
        put(&a, &k, &value(i)).unwrap();
        acked.insert(k, value(i));
    }
    a.flush().unwrap();

    // Another database takes the lease over: the next generations are its.
    take_over_lease(&log);
    // The writer learns at its next renewal (every quarter ttl), without writing anything.
    std::thread::sleep(TTL);

    // A compaction would upload a table and delete its inputs on the capacity tier: refused.
    let e = a
        .compact_range(None, None)
        .expect_err("a fenced writer compacts nothing");
    assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
    assert_eq!(
        objects(&cap),
        before,
        "a fenced writer neither uploaded nor deleted a capacity-tier object"
    );
    // Writes are refused too, and stay refused.
    let deadline = Instant::now() + 8 * TTL;
    let e = loop {
        match put(&a, b"late", b"write") {
            Err(e) => break e,
            Ok(()) => {
                acked.insert(b"late".to_vec(), b"write".to_vec());
                assert!(Instant::now() < deadline, "never fenced");
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
    let e = put(&a, b"later", b"write").expect_err("still fenced");
    assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
    let _ = a.close();
    assert_eq!(objects(&cap), before, "nor at close");

    // The successor (the forged holder never renews: it is taken over a ttl later) rebuilds
    // from the log location and the capacity tier and holds every acknowledged write.
    let b = Db::open(base.path().join("b"), o.clone()).unwrap();
    for (k, v) in &acked {
        assert_eq!(
            b.get(k).unwrap().as_deref(),
            Some(&v[..]),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
    b.close().unwrap();
}

/// The newest lease generation on the log location `url`.
fn newest_generation(url: &str) -> u64 {
    tier(url)
        .list("LEASE/")
        .unwrap()
        .iter()
        .filter_map(|(name, _)| name.rsplit('/').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

/// The objects of `url` other than lease generations.
fn data_objects(url: &str) -> BTreeSet<(String, u64)> {
    objects(url)
        .into_iter()
        .filter(|(n, _)| !n.starts_with("LEASE/"))
        .collect()
}

#[test]
fn a_writer_taken_over_during_its_wal_replay_makes_nothing_durable() {
    let base = tempfile::tempdir().unwrap();
    taken_over_in_replay(&base, &format!("file://{}", base.path().display()));
}

#[test]
fn a_writer_taken_over_during_its_wal_replay_on_s3_makes_nothing_durable() {
    let Some(root) = s3_root() else {
        eprintln!("fencing: STRATA_S3_URL is not set; the S3 run is skipped");
        return;
    };
    let base = tempfile::tempdir().unwrap();
    taken_over_in_replay(&base, &root);
}

/// Case (i) of the two-writer matrix: a database opening on another node (node-loss recovery,
/// then WAL replay, all read from the log location at 40 ms a request) loses the lease while
/// it replays — as one paused there past the ttl would. Its open fails with `Fenced`, it adds
/// nothing to the log location or the capacity tier, and the database that opens after it
/// holds every write the first one acknowledged.
fn taken_over_in_replay(base: &tempfile::TempDir, root: &str) {
    const REPLAY_TTL: Duration = Duration::from_secs(2);
    let (log, cap) = (format!("{root}/log"), format!("{root}/cap"));
    let o = Options {
        wal_location: Some(log.clone().into()),
        extended_wal: true,
        extended_wal_ttl: None,
        capacity: Some(CapacityOptions::new(cap.clone())),
        capacity_gc_min_age: Duration::ZERO,
        wal_lease_ttl: REPLAY_TTL,
        ..Default::default()
    };
    // The first writer: every write synced (one WAL segment each), nothing flushed.
    let a = Db::open(base.path().join("a"), o.clone()).unwrap();
    let mut acked = BTreeMap::new();
    for i in 0..1500u32 {
        let (k, v) = (format!("key{i:05}"), format!("value-{i}"));
        put(&a, k.as_bytes(), v.as_bytes()).unwrap();
        acked.insert(k.into_bytes(), v.into_bytes());
    }
    a.close().unwrap();
    let released = newest_generation(&log);

    // The second, on a new node, with a slow log location: its replay reads ~100 batches of
    // segments at 40 ms each.
    let slow = Options {
        wal_emulation: Some(strata::storage::object::Emulation {
            latency: Duration::from_millis(40),
            ..Default::default()
        }),
        ..o.clone()
    };
    let dir = base.path().join("c");
    let opener = std::thread::spawn(move || Db::open(dir, slow).map(|db| db.close()));
    // Once it holds the lease (a generation past the first writer's release mark, and the
    // listing that confirms it done), another database takes it over.
    let deadline = Instant::now() + Duration::from_secs(30);
    while newest_generation(&log) <= released {
        assert!(
            Instant::now() < deadline,
            "the second writer never took the lease"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(500));
    take_over_lease(&log);
    let staged = Instant::now();
    let (log_before, cap_before) = (data_objects(&log), data_objects(&cap));
    let opened = opener.join().unwrap();
    eprintln!("the open ended {:?} after the takeover", staged.elapsed());
    let e = match opened {
        Ok(_) => panic!("a writer whose lease was taken over during its replay opened"),
        Err(e) => e,
    };
    assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
    assert_eq!(
        data_objects(&log),
        log_before,
        "the fenced opener wrote to the log location"
    );
    assert_eq!(
        data_objects(&cap),
        cap_before,
        "the fenced opener wrote to the capacity tier"
    );

    // The successor (after the forged holder's ttl) holds every acknowledged write.
    let b = Db::open(base.path().join("b"), o).unwrap();
    for (k, v) in &acked {
        assert_eq!(
            b.get(k).unwrap().as_deref(),
            Some(&v[..]),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
    b.close().unwrap();
}

#[test]
fn an_idle_writer_that_does_not_renew_sends_nothing_and_is_fenced_once_taken_over() {
    let base = tempfile::tempdir().unwrap();
    idle_writer(&base, &format!("file://{}", base.path().display()));
    if let Some(root) = s3_root() {
        idle_writer(&base, &root);
    }
}

/// `wal_lease_renew_while_idle = false`: an idle writer leaves both stores untouched (no lease
/// renewal); its next write renews the lease and lands; once another database took the lease
/// over while it was idle, its next write fails with `Fenced`.
fn idle_writer(base: &tempfile::TempDir, root: &str) {
    let (log, cap) = (format!("{root}/log"), format!("{root}/cap"));
    let o = Options {
        wal_location: Some(log.clone().into()),
        extended_wal: true,
        capacity: Some(CapacityOptions::new(cap.clone())),
        wal_lease_ttl: TTL,
        wal_lease_renew_while_idle: false,
        ..Default::default()
    };
    let dir = base.path().join(format!("idle-{}", root.len()));
    let a = Db::open(&dir, o).unwrap();
    put(&a, b"k1", b"v1").unwrap();
    std::thread::sleep(2 * TTL);
    let (log_idle, cap_idle) = (objects(&log), objects(&cap));
    std::thread::sleep(3 * TTL);
    assert_eq!(
        objects(&log),
        log_idle,
        "an idle writer wrote to the log location"
    );
    assert_eq!(
        objects(&cap),
        cap_idle,
        "an idle writer wrote to the capacity tier"
    );
    put(&a, b"k2", b"v2").expect("the next write renews the lease");
    assert_eq!(a.get(b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
    std::thread::sleep(2 * TTL);
    take_over_lease(&log);
    let e = put(&a, b"k3", b"v3").expect_err("taken over while idle");
    assert_eq!(e.kind(), ErrorKind::Fenced, "{e}");
    let _ = a.close();
}
