//! A capacity-tier outage under writes: the fast tier takes them (its own compactions go on
//! while every compaction into the capacity tier waits for the tier to come back), a fast-tier
//! budget makes writes slow down and then wait, and nothing acknowledged is lost — during the
//! outage, after it and after a reopen. The outage is the capacity tier's emulation refusing
//! every request (`Emulation::error_rate` 1.0); the tier's health notices it and its probe
//! (every `PROBE_EVERY`) sees it return.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::storage::object::{CapacityOptions, Emulation};
use strata::{Db, ErrorKind, Options, WriteBatch, WriteOptions};

fn k(i: u64) -> Vec<u8> {
    format!("key{i:012}").into_bytes()
}

fn v(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat(200)).into_bytes()
}

fn opts(dir: &std::path::Path, fast_tier_budget: Option<u64>) -> Options {
    let mut c = CapacityOptions::new(format!("file://{}/cap", dir.display()));
    // One attempt a request: the outage shows at once (retries only lengthen the test).
    c.max_attempts = 1;
    c.emulation = Some(Emulation::default());
    Options {
        write_buffer_size: 64 * 1024,
        target_file_size_base: 64 * 1024,
        max_bytes_for_level_base: 256 * 1024,
        capacity: Some(c),
        fast_tier_budget,
        ..Options::default()
    }
}

fn set_outage(db: &Db, down: bool) {
    let em = db.capacity_tier().unwrap().emulation().unwrap().clone();
    em.set(Emulation {
        error_rate: if down { 1.0 } else { 0.0 },
        ..Default::default()
    });
}

/// Waits up to `secs` for `done`, failing with `what` after that.
fn wait_for(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn verify(db: &Db, n: u64) {
    for i in 0..n {
        assert_eq!(
            db.get(k(i)).unwrap().as_deref(),
            Some(&v(i)[..]),
            "key {i} of {n}"
        );
    }
}

/// Loads `n` keys and pushes them to the capacity tier.
fn load(db: &Db, n: u64) {
    for i in 0..n {
        db.put(k(i), v(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.stats().tier.capacity_table_bytes > 0);
}

#[test]
fn fast_tier_compactions_go_on_during_an_outage_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, opts(dir.path(), None)).unwrap();
    load(&db, 2_000);
    let capacity_before = db.stats().tier.capacity_table_bytes;

    set_outage(&db, true);
    // 38,000 writes of ~220 bytes: ~8.4 MB before compression.
    let n = 40_000;
    for i in 2_000..n {
        db.put(k(i), v(i)).unwrap();
    }
    // The last memtable too (a flush writes L0 on the fast tier, which is up): how much the
    // fast tier holds must not depend on where the memtable stood when the writes ended.
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.tier.capacity_health.down, "the outage was noticed");
    // The compactions that failed before the tier was known to be down, at most one a
    // compaction thread; after that only fast-tier compactions were picked. (Picking the
    // ones into the capacity tier too, each failing and backing off, made dozens here and
    // held L0's compactions back until writes slowed down.)
    assert!(
        s.background_errors <= 2,
        "{} compactions failed during the outage",
        s.background_errors
    );
    // (The values compress about ninefold: ~0.9 MB of tables, over three times the base
    // level's target, all on the fast tier.)
    assert!(
        s.tier.fast_table_bytes > 3 * 256 * 1024,
        "the fast tier took the outage's writes ({} bytes)",
        s.tier.fast_table_bytes
    );
    assert_eq!(s.tier.capacity_table_bytes, capacity_before);
    let l0 = db.sorted_runs().iter().filter(|r| r.level == 0).count();
    assert!(l0 < 36, "L0 kept compacting: {l0} tables");

    // The tier returns: its probe notices, and compactions move the backlog down.
    set_outage(&db, false);
    wait_for(90, "the backlog to reach the capacity tier", || {
        let t = db.stats().tier;
        !t.capacity_health.down && t.capacity_table_bytes > capacity_before
    });
    db.wait_for_compactions().unwrap();
    verify(&db, n);
    drop(db);
    let db = Db::open(&path, opts(dir.path(), None)).unwrap();
    verify(&db, n);
}

#[test]
fn with_a_fast_tier_budget_writes_wait_during_an_outage_and_resume_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o = opts(dir.path(), Some(512 * 1024));
    let stop_at = o.level0_stop_writes_trigger;
    let db = Arc::new(Db::open(&path, o.clone()).unwrap());
    load(&db, 2_000);
    let before = db.stats();

    set_outage(&db, true);
    let n = 60_000;
    let written = Arc::new(AtomicU64::new(2_000));
    let writer = {
        let (db, written) = (db.clone(), written.clone());
        std::thread::spawn(move || {
            for i in 2_000..n {
                db.put(k(i), v(i)).unwrap();
                written.store(i + 1, Ordering::Release);
            }
        })
    };
    // The fast tier fills to its budget, L0 to its stop trigger, and writes wait.
    wait_for(120, "L0 to reach the stop trigger", || {
        db.sorted_runs().iter().filter(|r| r.level == 0).count() >= stop_at
    });
    let s = db.stats();
    assert!(
        s.slowdowns > before.slowdowns && s.stops > before.stops,
        "slowed down, then stopped"
    );
    // Once its memtable is full the writer waits: no write goes through for half a second.
    wait_for(60, "the writer to wait", || {
        let at = written.load(Ordering::Acquire);
        std::thread::sleep(Duration::from_millis(500));
        written.load(Ordering::Acquire) == at
    });
    let held = written.load(Ordering::Acquire);
    assert!(held < n);
    // A caller that must not block learns it at once, and nothing is written.
    let mut b = WriteBatch::new();
    b.put("probe", "x");
    let nb = WriteOptions {
        no_slowdown: true,
        ..Default::default()
    };
    assert_eq!(
        db.write_opt(b, &nb).unwrap_err().kind(),
        ErrorKind::Incomplete
    );
    assert_eq!(db.get("probe").unwrap(), None);
    // Every write acknowledged so far reads back during the outage (the fast tier has them).
    for i in (2_000..held).step_by(97) {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]), "key {i}");
    }

    set_outage(&db, false);
    wait_for(120, "the writer to finish after the outage", || {
        written.load(Ordering::Acquire) == n || writer.is_finished()
    });
    writer.join().unwrap();
    db.wait_for_compactions().unwrap();
    verify(&db, n);
    drop(db);
    let db = Db::open(&path, o).unwrap();
    verify(&db, n);
}
