//! Pessimistic transactions (issue 49): `TransactionDb` locks the keys a transaction writes or
//! reads for update; a lock wait times out (`TimedOut`); deadlocks of two and of three
//! transactions are refused at once (`Busy`) with the cycle reported; an expired transaction's
//! lock is taken over and its commit refused (`Expired`); savepoints, rollback and drop release
//! locks; from several threads, transfers keep their sum and a shared counter loses no
//! increment.

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::txn::{TransactionDb, TransactionDbOptions, TransactionOptions};
use strata::{ErrorKind, Options};

fn open(dir: &std::path::Path, deadlock_detect: bool, timeout: Duration) -> TransactionDb {
    TransactionDb::open(
        dir,
        Options::default(),
        TransactionDbOptions {
            lock_timeout: timeout,
            deadlock_detect,
            ..Default::default()
        },
    )
    .unwrap()
}

fn num(v: Option<bytes::Bytes>) -> i64 {
    v.map_or(0, |b| String::from_utf8_lossy(&b).parse().unwrap())
}

#[test]
fn a_lock_wait_times_out_and_succeeds_once_released() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), false, Duration::from_millis(50));
    let mut t1 = db.transaction();
    t1.put("k", "1").unwrap();
    let mut t2 = db.transaction();
    let start = Instant::now();
    let e = t2.put("k", "2").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert!(
        e.to_string().contains(&format!("transaction {}", t1.id())),
        "{e}"
    );
    // Plain writes through the TransactionDb wait for the lock too.
    assert_eq!(db.put("k", "x").unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(
        db.get("k").unwrap(),
        None,
        "nothing is written before the commit"
    );
    t1.commit().unwrap();
    t2.put("k", "2").unwrap();
    assert_eq!(t2.get("k").unwrap().as_deref(), Some(&b"2"[..]));
    t2.commit().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.num_locks(), 0);
}

/// `n` transactions each lock key `i`, then each asks for key `i + 1 (mod n)`, all at once:
/// exactly one request closes the cycle and is refused as a deadlock at once; after it rolls
/// back, the others finish.
fn deadlock_cycle(n: usize) {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), true, Duration::from_secs(20));
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let start = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (db, barrier) = (db.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut t = db.transaction();
                t.put(format!("k{i}"), "mine").unwrap();
                barrier.wait();
                // Stagger the requests so the cycle closes on the last one, usually.
                std::thread::sleep(Duration::from_millis(30 * i as u64));
                match t.put(format!("k{}", (i + 1) % n), "next") {
                    Ok(()) => {
                        t.commit().unwrap();
                        None
                    }
                    Err(e) => {
                        t.rollback();
                        Some(e)
                    }
                }
            })
        })
        .collect();
    let errors: Vec<strata::Error> = handles
        .into_iter()
        .filter_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(errors.len(), 1, "{n} transactions: {errors:?}");
    assert_eq!(errors[0].kind(), ErrorKind::Busy);
    assert!(errors[0].to_string().contains("deadlock"), "{}", errors[0]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "refused at once, not at the lock timeout"
    );
    let found = db.deadlocks();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].steps.len(), n, "{}", found[0]);
    eprintln!("{n}-cycle: {}", found[0]);
    assert_eq!(db.num_locks(), 0);
}

#[test]
fn a_deadlock_of_two_is_refused_and_reported() {
    deadlock_cycle(2);
}

#[test]
fn a_deadlock_of_three_is_refused_and_reported() {
    deadlock_cycle(3);
}

#[test]
fn an_expired_transaction_loses_its_lock_and_its_commit() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), false, Duration::from_secs(5));
    let mut t1 = db.transaction_opt(&TransactionOptions {
        expiration: Some(Duration::from_millis(50)),
        ..Default::default()
    });
    t1.put("k", "old").unwrap();
    std::thread::sleep(Duration::from_millis(80));
    // t1 expired: t2 takes its lock over without waiting for the timeout.
    let start = Instant::now();
    let mut t2 = db.transaction();
    t2.put("k", "new").unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));
    t2.commit().unwrap();
    let e = t1.commit().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Expired, "{e}");
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"new"[..]));
}

#[test]
fn savepoints_rollback_and_drop_release_locks() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), false, Duration::from_millis(20));
    let mut t = db.transaction();
    t.put("a", "1").unwrap();
    t.set_savepoint();
    t.put("b", "2").unwrap();
    t.get_for_update("c").unwrap();
    assert_eq!(t.num_locks(), 3);
    t.rollback_to_savepoint().unwrap();
    assert_eq!(t.num_locks(), 1);
    // b and c are free again; a is still held.
    db.put("b", "other").unwrap();
    assert_eq!(db.put("a", "x").unwrap_err().kind(), ErrorKind::TimedOut);
    t.rollback();
    db.put("a", "x").unwrap();
    let mut t = db.transaction();
    t.put("d", "1").unwrap();
    drop(t);
    db.put("d", "free").unwrap();
    assert_eq!(db.num_locks(), 0);
}

#[test]
fn a_snapshot_makes_writes_that_bypass_the_locks_conflicts() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), false, Duration::from_secs(1));
    db.put("k", "0").unwrap();
    let mut t = db.transaction_opt(&TransactionOptions {
        set_snapshot: true,
        ..Default::default()
    });
    assert_eq!(num(t.get_for_update("k").unwrap()), 0);
    // A write through the plain database bypasses the locks.
    db.db().put("k", "5").unwrap();
    t.put("k", "1").unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Busy);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"5"[..]));
}

#[test]
fn transfers_keep_their_sum_and_a_shared_counter_loses_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), true, Duration::from_secs(10));
    const ACCOUNTS: usize = 8;
    for a in 0..ACCOUNTS {
        db.put(format!("acct{a}"), "100").unwrap();
    }
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let mut next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let mut retries = 0;
                for _ in 0..300 {
                    // Transfer between two accounts (locked in any order: deadlocks are
                    // refused and retried) and bump the shared counter.
                    let (a, b) = (next() as usize % ACCOUNTS, next() as usize % ACCOUNTS);
                    loop {
                        let mut x = db.transaction();
                        let r = (|| -> strata::Result<()> {
                            let va = num(x.get_for_update(format!("acct{a}"))?);
                            let vb = num(x.get_for_update(format!("acct{b}"))?);
                            if a != b {
                                x.put(format!("acct{a}"), (va - 7).to_string())?;
                                x.put(format!("acct{b}"), (vb + 7).to_string())?;
                            }
                            let c = num(x.get_for_update("counter")?);
                            x.put("counter", (c + 1).to_string())
                        })();
                        match r {
                            Ok(()) => {
                                x.commit().unwrap();
                                break;
                            }
                            Err(e) if e.kind() == ErrorKind::Busy => retries += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                retries
            })
        })
        .collect();
    let retries: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let sum: i64 = (0..ACCOUNTS)
        .map(|a| num(db.get(format!("acct{a}")).unwrap()))
        .sum();
    assert_eq!(sum, 100 * ACCOUNTS as i64);
    assert_eq!(num(db.get("counter").unwrap()), 1200, "no increment lost");
    eprintln!("deadlocks refused and retried: {retries}");
    assert_eq!(db.num_locks(), 0);
}
