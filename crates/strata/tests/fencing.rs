//! Fencing of a writer whose object-store log location another database took over (the
//! slatedb#1622 scenario): once its lease is taken, the old writer makes nothing durable on the
//! log location *or the capacity tier* — no table upload, no deletion by compaction or garbage
//! collection — its writes fail with `ErrorKind::Fenced`, and the database that took over holds
//! every write the old one acknowledged.
//!
//! The takeover is staged the way a taker makes it: the next lease generations appear on the
//! log location (`storage/object/lease.rs`), as after the holder stayed silent a whole ttl —
//! which is what a writer paused (a stopped process) past the ttl and past
//! `capacity_gc_min_age` sees when it resumes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use strata::storage::object::CapacityOptions;
use strata::{Db, ErrorKind, Options, WriteBatch, WriteOptions};

const TTL: Duration = Duration::from_millis(800);

/// Every object under `dir` (a `file://` store's root), by its path relative to `dir`.
fn objects(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
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
    let (log, cap) = (base.path().join("log"), base.path().join("cap"));
    let o = Options {
        wal_location: Some(format!("file://{}", log.display()).into()),
        extended_wal: true,
        extended_wal_ttl: None,
        capacity: Some(CapacityOptions::new(format!("file://{}", cap.display()))),
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
        before.iter().any(|n| n.starts_with("tables/")),
        "the compaction uploaded tables: {before:?}"
    );
    for i in 300..400u32 {
        let k = format!("key{i:05}").into_bytes();
        put(&a, &k, &value(i)).unwrap();
        acked.insert(k, value(i));
    }
    a.flush().unwrap();

    // Another database takes the lease over: the next generations are its.
    strata_test_support::take_over_file_lease(&log);
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
