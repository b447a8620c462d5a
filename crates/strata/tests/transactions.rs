//! Optimistic transactions (issue 49, part 1): reads see the transaction's own writes over its
//! snapshot; commit is one batch, refused with `Busy` when a key it wrote or read for update
//! was written by another after its snapshot, and with `TryAgain` when a flush took the writes
//! since its snapshot out of the memtables; savepoints and rollback; a bank-transfer workload
//! from several threads keeps its sum, seen constant by an auditor reading inside
//! transactions, across flushes, compactions and a reopen.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::{with_seed, Rng};
use strata::{Db, ErrorKind, Options, ReadOptions};

fn open(dir: &std::path::Path, write_buffer_size: usize) -> Db {
    Db::open(
        dir,
        Options {
            write_buffer_size,
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn reads_see_own_writes_and_commit_is_one_batch() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 4 << 20);
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    db.put("d", "4").unwrap();
    let mut t = db.transaction();
    t.put("c", "3");
    t.delete("b");
    t.put("a", "10");
    assert_eq!(t.get("a").unwrap().as_deref(), Some(&b"10"[..]));
    assert_eq!(t.get("b").unwrap(), None);
    assert_eq!(t.get("d").unwrap().as_deref(), Some(&b"4"[..]));
    // Not visible outside before the commit.
    assert_eq!(db.get("c").unwrap(), None);
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    let mut it = t.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut seen = Vec::new();
    while it.valid() {
        seen.push((
            String::from_utf8(it.key().to_vec()).unwrap(),
            String::from_utf8(it.value().to_vec()).unwrap(),
        ));
        it.next();
    }
    it.status().unwrap();
    let want: Vec<(String, String)> = [("a", "10"), ("c", "3"), ("d", "4")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(seen, want);
    it.seek(b"b");
    assert_eq!(it.key(), b"c");
    // A write after the transaction's snapshot is not seen by its reads.
    db.put("e", "5").unwrap();
    assert_eq!(t.get("e").unwrap(), None);
    let before = db.latest_sequence();
    t.commit().unwrap();
    assert_eq!(
        db.latest_sequence(),
        before + 3,
        "one batch of three writes"
    );
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"10"[..]));
    assert_eq!(db.get("b").unwrap(), None);
    assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"3"[..]));
}

#[test]
fn conflicts_fail_the_commit_and_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 4 << 20);
    db.put("k", "0").unwrap();
    // Read for update, then another writes the key: Busy.
    let mut t = db.transaction();
    assert_eq!(t.get_for_update("k").unwrap().as_deref(), Some(&b"0"[..]));
    t.put("other", "x");
    db.put("k", "1").unwrap();
    let e = t.commit().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert_eq!(db.get("other").unwrap(), None, "nothing written");
    // Write-write: the first committer wins.
    let mut t1 = db.transaction();
    let mut t2 = db.transaction();
    t1.put("k", "t1");
    t2.put("k", "t2");
    t2.commit().unwrap();
    assert_eq!(t1.commit().unwrap_err().kind(), ErrorKind::Busy);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"t2"[..]));
    // A plain get does not track: a concurrent write to what was only read does not conflict.
    let mut t = db.transaction();
    t.get("k").unwrap();
    t.put("z", "1");
    db.put("k", "2").unwrap();
    t.commit().unwrap();
    // A range deletion covering a tracked key conflicts too.
    let mut t = db.transaction();
    t.get_for_update("k").unwrap();
    t.put("y", "1");
    db.delete_range("a", "m").unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Busy);
    // set_snapshot moves the check forward.
    let mut t = db.transaction();
    t.put("k", "late");
    db.put("k", "3").unwrap();
    t.set_snapshot();
    t.commit().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"late"[..]));
}

#[test]
fn a_flush_since_the_snapshot_makes_the_commit_retryable() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 4 << 20);
    db.put("k", "0").unwrap();
    let mut t = db.transaction();
    t.put("k", "1");
    db.put("unrelated", "x").unwrap();
    db.flush().unwrap();
    let e = t.commit().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TryAgain, "{e}");
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"0"[..]));
    // With nothing written since its snapshot, a flush does not matter.
    let mut t = db.transaction();
    db.flush().unwrap();
    t.put("k", "2");
    t.commit().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn savepoints_and_rollback() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 4 << 20);
    let mut t = db.transaction();
    t.put("a", "1");
    t.set_savepoint();
    t.put("b", "2");
    t.get_for_update("x").unwrap();
    assert_eq!(t.pending_writes(), 2);
    t.rollback_to_savepoint().unwrap();
    assert_eq!(t.pending_writes(), 1);
    assert_eq!(t.get("b").unwrap(), None);
    assert_eq!(
        t.rollback_to_savepoint().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // "x" is no longer tracked: a write to it does not conflict.
    db.put("x", "1").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("b").unwrap(), None);
    let mut t = db.transaction();
    t.put("c", "1");
    t.rollback();
    assert_eq!(t.pending_writes(), 0);
    t.commit().unwrap();
    assert_eq!(db.get("c").unwrap(), None);
}

const ACCOUNTS: u64 = 20;
const START: u64 = 1000;

fn balance(v: Option<bytes::Bytes>) -> u64 {
    std::str::from_utf8(&v.expect("every account exists"))
        .unwrap()
        .parse()
        .unwrap()
}

/// Transfers between accounts from several threads (get_for_update both, move an amount,
/// commit, retry on Busy/TryAgain) while an auditor sums every account inside a transaction
/// and small memtables flush and compact underneath: the sum never changes, no update is lost
/// (each committed transfer is counted), and the state survives a reopen.
#[test]
fn bank_transfers_keep_their_sum() {
    for seed in common::seeds(1) {
        with_seed("transactions", seed, || bank(seed));
    }
}

fn bank(seed: u64) {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 16 << 10);
    for a in 0..ACCOUNTS {
        db.put(format!("acct{a:02}"), START.to_string()).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..3u64)
        .map(|w| {
            let (db, stop, committed, refused) =
                (db.clone(), stop.clone(), committed.clone(), refused.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed ^ (w + 1));
                let mut moved_in = vec![0i64; ACCOUNTS as usize];
                let mut done = 0;
                while done < 300 && !stop.load(Ordering::Relaxed) {
                    let (from, to) = (rng.below(ACCOUNTS), rng.below(ACCOUNTS));
                    if from == to {
                        continue;
                    }
                    let mut t = db.transaction();
                    let f = balance(t.get_for_update(format!("acct{from:02}")).unwrap());
                    let g = balance(t.get_for_update(format!("acct{to:02}")).unwrap());
                    let amount = rng.below(f.min(50) + 1);
                    t.put(format!("acct{from:02}"), (f - amount).to_string());
                    t.put(format!("acct{to:02}"), (g + amount).to_string());
                    // Filler so memtables fill and flush while transactions run.
                    t.put(format!("log{w}-{done:05}"), "x".repeat(64));
                    match t.commit() {
                        Ok(()) => {
                            committed.fetch_add(1, Ordering::Relaxed);
                            moved_in[to as usize] += amount as i64;
                            moved_in[from as usize] -= amount as i64;
                            done += 1;
                        }
                        Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TryAgain) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("seed {seed}: {e}"),
                    }
                }
                moved_in
            })
        })
        .collect();
    let auditor = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut audits = 0;
            while !stop.load(Ordering::Relaxed) {
                let t = db.transaction();
                let sum: u64 = (0..ACCOUNTS)
                    .map(|a| balance(t.get(format!("acct{a:02}")).unwrap()))
                    .sum();
                assert_eq!(sum, ACCOUNTS * START, "seed {seed}: audit {audits}");
                audits += 1;
            }
            audits
        })
    };
    let mut net = vec![0i64; ACCOUNTS as usize];
    for w in workers {
        for (n, m) in net.iter_mut().zip(w.join().unwrap()) {
            *n += m;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let audits = auditor.join().unwrap();
    // No lost update: each account holds its start plus what committed transfers moved.
    for a in 0..ACCOUNTS {
        let got = balance(db.get(format!("acct{a:02}")).unwrap()) as i64;
        assert_eq!(
            got,
            START as i64 + net[a as usize],
            "seed {seed}: account {a}"
        );
    }
    eprintln!(
        "seed {seed}: {} transfers committed, {} refused and retried, {audits} audits, {} tables",
        committed.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
        db.live_tables().len()
    );
    assert_eq!(committed.load(Ordering::Relaxed), 900);
    assert!(!db.live_tables().is_empty(), "memtables flushed underneath");
    db.close().unwrap();
    let db = open(d.path(), 16 << 10);
    let sum: u64 = (0..ACCOUNTS)
        .map(|a| balance(db.get(format!("acct{a:02}")).unwrap()))
        .sum();
    assert_eq!(sum, ACCOUNTS * START, "seed {seed}: after reopen");
}

/// Threads increment one counter in transactions: commits land in shared write groups, where
/// a later member that read the counter before an earlier member of the same group wrote it
/// must be refused. The counter ends at the number of commits.
#[test]
fn one_hot_counter_loses_no_increment() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 4 << 20);
    db.put("n", "0").unwrap();
    let refused = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (db, refused) = (db.clone(), refused.clone());
            std::thread::spawn(move || {
                let mut done = 0;
                while done < 200 {
                    let mut t = db.transaction();
                    let n = balance(t.get_for_update("n").unwrap());
                    t.put("n", (n + 1).to_string());
                    match t.commit() {
                        Ok(()) => done += 1,
                        Err(e) if e.kind() == ErrorKind::Busy => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(balance(db.get("n").unwrap()), 800);
    eprintln!("{} commits refused", refused.load(Ordering::Relaxed));
}

/// Transactions share write groups with plain writes (synced and not) under every commit
/// pipeline mode: counters incremented in transactions end at their commit counts, every
/// plain write is there, and a transaction refused while leading its group still lets the
/// group's other members commit (leaders are whoever reaches the queue first).
#[test]
fn transactions_share_groups_with_plain_writes_in_every_pipeline_mode() {
    for (pipelined_write, concurrent_memtable_writes) in
        [(false, false), (true, false), (false, true), (true, true)]
    {
        let mode = format!("pipelined {pipelined_write}, concurrent {concurrent_memtable_writes}");
        let d = tempfile::tempdir().unwrap();
        let db = Db::open(
            d.path(),
            Options {
                write_buffer_size: 64 << 10,
                pipelined_write,
                concurrent_memtable_writes,
                ..Options::default()
            },
        )
        .unwrap();
        for c in 0..2 {
            db.put(format!("n{c}"), "0").unwrap();
        }
        let refused = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for t in 0..4u64 {
            let (db, refused) = (db.clone(), refused.clone());
            threads.push(std::thread::spawn(move || {
                let mut done = 0;
                while done < 300 {
                    let mut tx = db.transaction();
                    let c = format!("n{}", (t + done) % 2);
                    let n = balance(tx.get_for_update(&c).unwrap());
                    tx.put(&c, (n + 1).to_string());
                    match tx.commit() {
                        Ok(()) => done += 1,
                        Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TryAgain) => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            }));
        }
        for t in 0..2u64 {
            let db = db.clone();
            threads.push(std::thread::spawn(move || {
                for i in 0..1500u64 {
                    let w = strata::WriteOptions {
                        sync: i % 100 == 0,
                        ..Default::default()
                    };
                    let mut b = strata::WriteBatch::new();
                    b.put(format!("p{t}-{i:05}"), "v".repeat(40));
                    db.write_opt(b, &w).unwrap();
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        let total: u64 = (0..2)
            .map(|c| balance(db.get(format!("n{c}")).unwrap()))
            .sum();
        assert_eq!(total, 1200, "{mode}");
        for t in 0..2 {
            for i in 0..1500 {
                assert!(db.get(format!("p{t}-{i:05}")).unwrap().is_some(), "{mode}");
            }
        }
        eprintln!(
            "{mode}: {} commits refused",
            refused.load(Ordering::Relaxed)
        );
    }
}

/// Write skew: two transactions each read both on-call doctors and take one off call. Under
/// snapshot isolation both commit (nobody is left on call); serializable, the second fails.
#[test]
fn serializable_transactions_refuse_write_skew_and_phantoms() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 4 << 20);
    for serializable in [false, true] {
        db.put("oncall/alice", "1").unwrap();
        db.put("oncall/bob", "1").unwrap();
        let opts = strata::OptimisticTransactionOptions { serializable };
        let mut t1 = db.transaction_opt(&opts);
        let mut t2 = db.transaction_opt(&opts);
        let on = |t: &strata::Transaction| {
            ["oncall/alice", "oncall/bob"]
                .iter()
                .filter(|k| t.get(k).unwrap().as_deref() == Some(&b"1"[..]))
                .count()
        };
        assert_eq!((on(&t1), on(&t2)), (2, 2));
        t1.put("oncall/alice", "0");
        t2.put("oncall/bob", "0");
        t1.commit().unwrap();
        let r = t2.commit();
        if serializable {
            assert_eq!(r.unwrap_err().kind(), ErrorKind::Busy);
            assert_eq!(db.get("oncall/bob").unwrap().as_deref(), Some(&b"1"[..]));
        } else {
            r.unwrap();
            assert_eq!(db.get("oncall/bob").unwrap().as_deref(), Some(&b"0"[..]));
        }
    }
    // A phantom: t counts the orders in a range by scanning it; another inserts one into the
    // range and commits; t's commit (writing elsewhere) is refused.
    let ser = strata::OptimisticTransactionOptions { serializable: true };
    db.put("order/1", "x").unwrap();
    db.put("order/3", "x").unwrap();
    let scan = |t: &strata::Transaction, lo: &str, hi: &str| {
        let mut it = t
            .iter(ReadOptions {
                lower_bound: Some(lo.as_bytes().to_vec()),
                upper_bound: Some(hi.as_bytes().to_vec()),
                ..Default::default()
            })
            .unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        n
    };
    let mut t = db.transaction_opt(&ser);
    assert_eq!(scan(&t, "order/", "order0"), 2);
    db.put("order/2", "new").unwrap();
    t.put("count", "2");
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Busy);
    // A write outside every range read does not conflict.
    let mut t = db.transaction_opt(&ser);
    assert_eq!(scan(&t, "order/", "order0"), 3);
    db.put("other", "x").unwrap();
    t.put("count", "3");
    t.commit().unwrap();
    // A scan that stopped early read only up to where it stopped.
    let mut t = db.transaction_opt(&ser);
    let mut it = t.iter(ReadOptions::default()).unwrap();
    it.seek(b"order/1");
    assert_eq!(it.key(), b"order/1");
    drop(it);
    db.put("order/9", "later").unwrap();
    t.put("count", "3");
    t.commit().unwrap();
}

/// Serializable transactions from 4 threads each scan every account, and withdraw 1 from one of
/// them only if the total is positive: a serial order never takes the total below zero, so
/// neither may they (snapshot isolation can: two withdrawals that each saw a total of 1).
/// Every refused commit is retried until the money is gone.
#[test]
fn serializable_withdrawals_never_overdraw_the_total() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), 4 << 20);
    const ACCOUNTS: u64 = 6;
    for a in 0..ACCOUNTS {
        db.put(format!("acct/{a}"), "5").unwrap();
    }
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(t + 1);
                let mut refused = 0;
                loop {
                    let mut x = db.transaction_opt(&strata::OptimisticTransactionOptions {
                        serializable: true,
                    });
                    let mut it = x
                        .iter(ReadOptions {
                            lower_bound: Some(b"acct/".to_vec()),
                            upper_bound: Some(b"acct0".to_vec()),
                            ..Default::default()
                        })
                        .unwrap();
                    it.seek_to_first();
                    let mut balances = Vec::new();
                    while it.valid() {
                        let v: i64 = String::from_utf8_lossy(it.value()).parse().unwrap();
                        balances.push((it.key().to_vec(), v));
                        it.next();
                    }
                    drop(it);
                    let total: i64 = balances.iter().map(|(_, v)| v).sum();
                    if total <= 0 {
                        return refused;
                    }
                    // Any account, even an empty one: only the total is guarded.
                    let (k, v) = &balances[rng.below(balances.len() as u64) as usize];
                    x.put(k, (v - 1).to_string());
                    match x.commit() {
                        Ok(()) => {}
                        Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TryAgain) => {
                            refused += 1
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    let refused: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let total: i64 = (0..ACCOUNTS)
        .map(|a| {
            String::from_utf8_lossy(&db.get(format!("acct/{a}")).unwrap().unwrap())
                .parse::<i64>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        total, 0,
        "serializable withdrawals overdrew ({refused} refused)"
    );
}
