//! The child process: opens `DIR/db` with the round's configuration (`DIR/config.json`), starts
//! from the state the parent verified (`DIR/state`) and runs the workload until it is killed
//! (or, given a duration, closes the database cleanly and exits 0).
//!
//! Writer thread `t` owns the contiguous key slice `t*n/T .. (t+1)*n/T`, so range deletes and
//! batches stay within one thread and each key has one writer: per-key order is issue order.
//! Reader threads check every get, snapshot get and scan (forward and backward, with and without
//! a snapshot) against the [`History`]; the first wrong read is logged (`F`) and the process
//! exits with status 3 without closing the database.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use strata::{Db, ReadOptions, WriteBatch, WriteOptions};
use strata_test_support::Rng;

use crate::config::StressConfig;
use crate::families::{block_end, family_of, Families};
use crate::history::{History, Violation, ViolationKind};
use crate::keys;
use crate::merge::NewestWrite;
use crate::oracle::{batch_effects, format_ops, Expected, Op};

/// Exit status of a child whose reads found a violation.
pub const EXIT_VIOLATION: i32 = 3;

struct Shared {
    db: Db,
    /// The database's column families (keys dealt by block; see `families`).
    fams: Families,
    cfg: StressConfig,
    round: u64,
    history: History,
    log: Mutex<File>,
    stop: AtomicBool,
    counter: AtomicU64,
}

impl Shared {
    /// One event line, one `write(2)`: it is in the OS before the caller goes on.
    fn log(&self, line: String) {
        let mut f = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }

    fn violation(&self, v: Violation) -> ! {
        let kind = match v.kind {
            ViolationKind::Lost => "lost",
            ViolationKind::Phantom => "phantom",
            ViolationKind::Unreadable => "unreadable",
        };
        self.log(format!("F {kind} {}", v.message.replace('\n', " ")));
        eprintln!("stress child: read check failed ({kind}): {}", v.message);
        std::process::exit(EXIT_VIOLATION);
    }

    fn check(&self, i: u64, lo: usize, hi: usize, got: Option<&[u8]>) {
        if let Err(v) = self.history.check(i, lo, hi, got) {
            self.violation(v);
        }
    }
}

/// Runs the child of one round. `seconds: None` runs until killed.
pub fn child_main(dir: &Path, round: u64, seconds: Option<f64>) -> anyhow::Result<()> {
    let cfg: StressConfig = serde_json::from_str(
        &std::fs::read_to_string(dir.join("config.json")).context("reading config.json")?,
    )?;
    let initial = Expected::load(&dir.join("state")).context("reading state")?;
    anyhow::ensure!(
        initial.len() as u64 == cfg.num_keys,
        "state and config disagree"
    );
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("events.log"))?;
    let opts = cfg.to_options(dir, true);
    let db = Db::open(dir.join("db"), opts.clone()).context("opening the database")?;
    let fams = Families::open(&db, &opts, cfg.families).context("opening the column families")?;
    let shared = Arc::new(Shared {
        db,
        fams,
        history: History::new(&initial),
        log: Mutex::new(log),
        stop: AtomicBool::new(false),
        counter: AtomicU64::new(1),
        round,
        cfg,
    });
    shared.log("O".into());
    let mut handles = Vec::new();
    let writers = shared.cfg.writer_threads;
    for t in 0..writers {
        let lo = t * shared.cfg.num_keys / writers;
        let hi = (t + 1) * shared.cfg.num_keys / writers;
        if lo < hi {
            let s = shared.clone();
            handles.push(std::thread::spawn(move || writer(&s, t, lo, hi)));
        }
    }
    for r in 0..shared.cfg.reader_threads {
        let s = shared.clone();
        handles.push(std::thread::spawn(move || reader(&s, r)));
    }
    let deadline = seconds.map(|s| Instant::now() + Duration::from_secs_f64(s));
    let mut last_stats = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if last_stats.elapsed() >= Duration::from_millis(250) {
            log_fault_stats(&shared);
            last_stats = Instant::now();
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    log_fault_stats(&shared);
    shared.stop.store(true, Ordering::Release);
    for h in handles {
        let _ = h.join();
    }
    let shared = Arc::into_inner(shared).context("threads still hold the database")?;
    shared.db.clone().close().context("closing the database")?;
    shared.log("C".into());
    Ok(())
}

/// `S errors timeouts`: faults the capacity-tier emulation injected so far (the parent keeps
/// the last such line of a round, to show the faults were really exercised).
fn log_fault_stats(s: &Shared) {
    if let Some(em) = s.db.capacity_tier().and_then(|c| c.emulation().cloned()) {
        let st = em.stats();
        s.log(format!(
            "S {} {}",
            st.injected_errors.load(Ordering::Relaxed),
            st.injected_timeouts.load(Ordering::Relaxed)
        ));
    }
}

fn writer(s: &Shared, t: u64, lo: u64, hi: u64) {
    let cfg = &s.cfg;
    let mut rng = Rng::new(cfg.workload_seed ^ (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let span = hi - lo;
    while !s.stop.load(Ordering::Acquire) {
        let n = 1 + rng.below(cfg.max_batch_ops);
        let ops: Vec<Op> = (0..n)
            .map(|_| {
                let r = rng.below(1000);
                let i = lo + rng.below(span);
                if r < cfg.range_delete_permille {
                    let end = (i + 1 + rng.below(16)).min(hi);
                    Op::DeleteRange(i, end.min(block_end(i, cfg.families)))
                } else if r < cfg.range_delete_permille + cfg.delete_permille {
                    Op::Delete(i)
                } else if r < cfg.range_delete_permille + cfg.delete_permille + cfg.merge_permille {
                    Op::Merge(i)
                } else {
                    Op::Put(i)
                }
            })
            .collect();
        let seq = ((s.round + 1) << 32) | s.counter.fetch_add(1, Ordering::Relaxed);
        let effects = batch_effects(&ops, seq);
        let mut batch = WriteBatch::new();
        let f = &s.fams;
        for op in &ops {
            match *op {
                Op::Put(i) => f.put(&mut batch, i, &keys::value(i, seq)),
                Op::Delete(i) => f.delete(&mut batch, i),
                Op::Merge(i) => f.merge(&mut batch, i, &NewestWrite::operand(seq)),
                Op::DeleteRange(a, b) => f.delete_range(&mut batch, a, b),
            }
        }
        // Transactions write the default family only.
        let txn = rng.below(100) < cfg.txn_percent
            && !ops.iter().any(|op| match *op {
                Op::DeleteRange(..) => true,
                Op::Put(i) | Op::Delete(i) | Op::Merge(i) => family_of(i, cfg.families) != 0,
            });
        s.history.issue(&effects);
        s.log(format!("I {t} {seq} {}", format_ops(&ops)));
        let opts = WriteOptions {
            sync: rng.below(100) < cfg.sync_percent,
            ..Default::default()
        };
        let written = if txn {
            commit_in_transaction(s, &ops, seq, &opts)
        } else {
            s.db.write_opt(batch, &opts)
        };
        match written {
            Ok(()) => {
                s.log(format!("A {t} {seq}"));
                s.history.ack(&effects);
            }
            Err(e) => {
                // Outcome unknown: the batch stays in flight and this thread stops writing.
                s.log(format!("E {t} {seq} {e}"));
                return;
            }
        }
        if rng.below(1000) < cfg.flush_permille {
            if let Err(e) = s.db.flush() {
                s.log(format!("W flush: {e}"));
            }
        }
        if rng.below(1000) < cfg.compact_permille {
            let a = lo + rng.below(span);
            let b = (a + 1 + rng.below(200)).min(hi);
            if let Err(e) = s.fams.compact_range(&s.db, a, b) {
                s.log(format!("W compact_range: {e}"));
            }
        }
    }
}

/// Writes `ops` through an optimistic transaction: reads the first key for update, then each op.
/// The thread owns its keys, so a refused commit (`TryAgain` after a flush since the snapshot,
/// `Busy` only if that ownership were broken) wrote nothing and is retried with the same writes,
/// under the same intent line; other errors are the caller's.
fn commit_in_transaction(
    s: &Shared,
    ops: &[Op],
    seq: u64,
    opts: &WriteOptions,
) -> strata::Result<()> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut t = s.db.transaction();
        if let Some(Op::Put(i) | Op::Delete(i) | Op::Merge(i)) = ops.first() {
            t.get_for_update(keys::key(*i))?;
        }
        for op in ops {
            match *op {
                Op::Put(i) => t.put(keys::key(i), keys::value(i, seq)),
                Op::Delete(i) => t.delete(keys::key(i)),
                Op::Merge(i) => t.merge(keys::key(i), NewestWrite::operand(seq))?,
                Op::DeleteRange(..) => unreachable!("range deletes are written as batches"),
            }
        }
        match t.commit_opt(opts) {
            Err(e)
                if attempts < 1000
                    && matches!(
                        e.kind(),
                        strata::ErrorKind::TryAgain | strata::ErrorKind::Busy
                    ) =>
            {
                continue
            }
            r => return r,
        }
    }
}

/// A read failed with an error (not a wrong value). Injected faults can exhaust retries (an
/// I/O error or a timeout: a warning), but none makes stored bytes undecodable: `Corruption`
/// fails the round.
fn read_error(s: &Shared, what: &str, e: strata::Error) {
    if e.kind() == strata::ErrorKind::Corruption {
        s.violation(Violation {
            kind: ViolationKind::Unreadable,
            message: format!("{what}: {e}"),
        });
    }
    s.log(format!("W {what}: {e}"));
}

fn reader(s: &Shared, r: u64) {
    let cfg = &s.cfg;
    let n = cfg.num_keys;
    let mut rng = Rng::new(cfg.workload_seed ^ (r + 101).wrapping_mul(0xd1b5_4a32_d192_ed03));
    while !s.stop.load(Ordering::Acquire) {
        let choice = rng.below(100);
        if choice < 50 {
            let i = rng.below(n);
            let lo = s.history.low(i);
            match s.fams.get(&s.db, &ReadOptions::default(), i) {
                Ok(v) => {
                    let hi = s.history.high(i);
                    s.check(i, lo, hi, v.as_deref());
                }
                Err(e) => read_error(s, "get", e),
            }
            continue;
        }
        // A range of keys read through one view: a snapshot, or an iterator's implicit one.
        let a = rng.below(n);
        // With families, a scan stays in one block: it reads one family.
        let b = (a + 1 + rng.below(48))
            .min(n)
            .min(block_end(a, cfg.families));
        let los: Vec<usize> = (a..b).map(|i| s.history.low(i)).collect();
        let snapshot = (choice < 80).then(|| s.db.snapshot());
        let ropts = ReadOptions {
            snapshot: snapshot.clone(),
            lower_bound: Some(keys::key(a)),
            upper_bound: Some(keys::key(b)),
            ..Default::default()
        };
        let mut it = match s.fams.iter(&s.db, ropts.clone(), a) {
            Ok(it) => it,
            Err(e) => {
                read_error(s, "iter", e);
                continue;
            }
        };
        let his: Vec<usize> = (a..b).map(|i| s.history.high(i)).collect();
        let mut seen: Vec<Option<Vec<u8>>> = vec![None; (b - a) as usize];
        // Keys `from..to` are the ones the scan covers: the whole range, or from a seek
        // (forward) / up to a seek_for_prev (backward) inside it.
        let backward = rng.chance(40);
        let (mut from, mut to) = (a, b);
        let mid = a + rng.below(b - a);
        match (backward, rng.chance(30)) {
            (false, false) => it.seek_to_first(),
            (false, true) => {
                from = mid;
                it.seek(&keys::key(mid));
            }
            (true, false) => it.seek_to_last(),
            (true, true) => {
                to = mid + 1;
                it.seek_for_prev(&keys::key(mid));
            }
        }
        let mut last: Option<u64> = None;
        while it.valid() {
            let Some(i) = keys::key_index(it.key()).filter(|i| (from..to).contains(i)) else {
                s.violation(Violation {
                    kind: ViolationKind::Phantom,
                    message: format!(
                        "scan of keys {from}..{to} returned key {:?}",
                        String::from_utf8_lossy(it.key())
                    ),
                });
            };
            if last.is_some_and(|l| if backward { i >= l } else { i <= l }) {
                s.violation(Violation {
                    kind: ViolationKind::Phantom,
                    message: format!("scan out of order: key {i} after {last:?}"),
                });
            }
            last = Some(i);
            seen[(i - a) as usize] = Some(it.value().to_vec());
            if backward {
                it.prev();
            } else {
                it.next();
            }
        }
        if let Err(e) = it.status() {
            read_error(s, "scan", e);
            continue;
        }
        drop(it);
        for i in from..to {
            let j = (i - a) as usize;
            s.check(i, los[j], his[j], seen[j].as_deref());
        }
        // With a snapshot, reads later must agree with the scan exactly; one in five holds the
        // snapshot a while first, so flushes and compactions run under it.
        if snapshot.is_some() {
            if rng.chance(20) {
                std::thread::sleep(Duration::from_millis(rng.below(300)));
                let mut again: Vec<Option<Vec<u8>>> = vec![None; (b - a) as usize];
                match s.fams.iter(&s.db, ropts.clone(), a).and_then(|mut it| {
                    it.seek_to_first();
                    while it.valid() {
                        if let Some(i) = keys::key_index(it.key()).filter(|i| (a..b).contains(i)) {
                            again[(i - a) as usize] = Some(it.value().to_vec());
                        }
                        it.next();
                    }
                    it.status()
                }) {
                    Ok(()) => {
                        for i in from..to {
                            let j = (i - a) as usize;
                            if again[j] != seen[j] {
                                s.violation(Violation {
                                    kind: ViolationKind::Phantom,
                                    message: format!(
                                        "snapshot rescan of key {i} returned {:?}, the first scan {:?}",
                                        again[j].as_deref().map(keys::show),
                                        seen[j].as_deref().map(keys::show)
                                    ),
                                });
                            }
                        }
                    }
                    Err(e) => read_error(s, "snapshot rescan", e),
                }
            }
            for i in from..to {
                if !rng.chance(30) {
                    continue;
                }
                match s.fams.get(&s.db, &ropts, i) {
                    Ok(v) => {
                        let j = (i - a) as usize;
                        if v.as_deref() != seen[j].as_deref() {
                            s.violation(Violation {
                                kind: ViolationKind::Phantom,
                                message: format!(
                                    "snapshot get of key {i} returned {:?}, its scan {:?}",
                                    v.as_deref().map(keys::show),
                                    seen[j].as_deref().map(keys::show)
                                ),
                            });
                        }
                    }
                    Err(e) => read_error(s, "snapshot get", e),
                }
            }
        }
    }
}
