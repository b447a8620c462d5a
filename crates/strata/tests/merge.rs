//! The merge operator (issue 49, part 2): counters and appends folded on read, by flushes and
//! by compactions; snapshots keep the state they saw while compaction folds around them;
//! range deletions and deletions are bases; refused merges write nothing; operands met without
//! an operator are an error, never a value; merges in transactions and across threads. The
//! randomized oracle runs (every compaction style and tier policy) are in `tests/model.rs`,
//! remote compaction in `tests/remote_compaction.rs`.

mod common;

use std::sync::Arc;

use strata::merge::{Append, MergeError, MergeOperator, U64Add};
use strata::{Db, ErrorKind, Options, ReadOptions, WriteBatch};

fn options(op: Arc<dyn MergeOperator>) -> Options {
    Options {
        write_buffer_size: 16 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 64 * 1024,
        target_file_size_base: 16 * 1024,
        block_size: 512,
        merge_operator: Some(op),
        ..Options::default()
    }
}

fn counter(db: &Db, key: &str) -> Option<u64> {
    db.get(key)
        .unwrap()
        .map(|v| U64Add::decode(&v).expect("8 bytes"))
}

fn merge_lookups(db: &Db) -> u64 {
    db.stats().merge_lookups
}

#[test]
fn counters_fold_on_read_in_flushes_and_at_the_bottom() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    db.put("base", U64Add::encode(1000)).unwrap();
    let mut base = 1000;
    let mut want = [0u64; 20];
    for i in 0..4000u64 {
        let k = (i * 7) % 20;
        db.merge(format!("c{k:02}"), U64Add::encode(i)).unwrap();
        want[k as usize] += i;
        if k == 0 {
            db.merge("base", U64Add::encode(i)).unwrap();
            base += i;
        }
        if i % 500 == 0 {
            db.flush().unwrap();
        }
    }
    let check = |db: &Db, what: &str| {
        assert_eq!(counter(db, "base"), Some(base), "{what}: base");
        for (k, want) in want.iter().enumerate() {
            assert_eq!(
                counter(db, &format!("c{k:02}")),
                Some(*want),
                "{what}: c{k:02}"
            );
        }
        // The iterator folds them as well, in both directions.
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut forward = Vec::new();
        while it.valid() {
            forward.push((it.key().to_vec(), U64Add::decode(it.value()).unwrap()));
            it.next();
        }
        it.status().unwrap();
        assert_eq!(forward.len(), 21, "{what}");
        assert_eq!(forward[0], (b"base".to_vec(), base), "{what}");
        it.seek_to_last();
        let mut backward = Vec::new();
        while it.valid() {
            backward.push((it.key().to_vec(), U64Add::decode(it.value()).unwrap()));
            it.prev();
        }
        backward.reverse();
        assert_eq!(forward, backward, "{what}");
    };
    check(&db, "before compaction");
    assert!(merge_lookups(&db) > 0, "the reads folded operands");
    // One full compaction: the bottommost level folds every operand into a value.
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let before = merge_lookups(&db);
    check(&db, "after compaction");
    assert_eq!(
        merge_lookups(&db),
        before,
        "after a full compaction no read meets an operand"
    );
    let s = db.stats();
    let entries: u64 = db.live_tables().iter().map(|(_, f)| f.num_entries).sum();
    assert_eq!(entries, 21, "one record per key is left:\n{s}");
    db.close().unwrap();
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    check(&db, "after reopen");
}

#[test]
fn snapshots_keep_what_they_saw_while_compaction_folds() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path(), options(Arc::new(Append::new(b",")))).unwrap();
    db.put("k", "a").unwrap();
    db.merge("k", "b").unwrap();
    let s1 = db.snapshot();
    db.merge("k", "c").unwrap();
    db.merge("k", "d").unwrap();
    let s2 = db.snapshot();
    db.delete("k").unwrap();
    db.merge("k", "e").unwrap();
    let at = |s: &strata::Snapshot| {
        let ro = ReadOptions {
            snapshot: Some(s.clone()),
            ..Default::default()
        };
        db.get_opt(&ro, "k").unwrap()
    };
    for round in 0..2 {
        assert_eq!(at(&s1).as_deref(), Some(&b"a,b"[..]), "round {round}");
        assert_eq!(at(&s2).as_deref(), Some(&b"a,b,c,d"[..]), "round {round}");
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"e"[..]));
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
    }
    drop((s1, s2));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"e"[..]));
    let entries: u64 = db.live_tables().iter().map(|(_, f)| f.num_entries).sum();
    assert_eq!(entries, 1, "with the snapshots gone, one value is left");
}

#[test]
fn range_deletions_and_deletions_are_bases() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path(), options(Arc::new(Append::new(b"+")))).unwrap();
    for i in 0..50 {
        db.put(format!("k{i:02}"), "old").unwrap();
    }
    db.flush().unwrap();
    db.delete_range("k10", "k20").unwrap();
    db.delete("k30").unwrap();
    for i in 0..50 {
        db.merge(format!("k{i:02}"), "new").unwrap();
    }
    let want = |i: usize| -> &'static [u8] {
        if (10..20).contains(&i) || i == 30 {
            b"new"
        } else {
            b"old+new"
        }
    };
    for round in 0..3 {
        for i in 0..50 {
            assert_eq!(
                db.get(format!("k{i:02}")).unwrap().as_deref(),
                Some(want(i)),
                "round {round} k{i:02}"
            );
        }
        let keys: Vec<String> = (0..50).map(|i| format!("k{i:02}")).collect();
        for (i, got) in db
            .multi_get(&ReadOptions::default(), &keys)
            .into_iter()
            .enumerate()
        {
            assert_eq!(got.unwrap().as_deref(), Some(want(i)), "multi_get k{i:02}");
        }
        match round {
            0 => db.flush().unwrap(),
            _ => db.compact_range(None, None).unwrap(),
        }
    }
}

#[test]
fn refused_merges_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    // No operator: every merge is refused.
    let db = Db::open(d.path(), Options::default()).unwrap();
    let e = db.merge("k", "x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let mut b = WriteBatch::new();
    b.put("p", "1");
    b.merge("k", "x");
    assert_eq!(db.write(b).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        db.get("p").unwrap(),
        None,
        "nothing of the batch was written"
    );
    let mut t = db.transaction();
    assert_eq!(
        t.merge("k", "x").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    drop(t);
    db.close().unwrap();
    // The counter refuses operands that are not 8 bytes.
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    let mut b = WriteBatch::new();
    b.put("p", "1");
    b.merge("k", "three");
    let e = db.write(b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("strata.u64add"), "{e}");
    assert_eq!(db.get("p").unwrap(), None);
    // A stored value of the wrong size fails the read of the merged key: Corruption, with
    // the operator's message, never a value.
    db.put("bad", "not a counter").unwrap();
    db.merge("bad", U64Add::encode(1)).unwrap();
    db.put("good", U64Add::encode(1)).unwrap();
    db.merge("good", U64Add::encode(1)).unwrap();
    let e = db.get("bad").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.to_string().contains("not an 8-byte"), "{e}");
    // Flushes and compactions keep such a key unfolded and go on: the database stays
    // writable, reopens, and the key's read keeps failing the same way.
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.put("after", "ok").unwrap();
    db.close().unwrap();
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    assert_eq!(db.get("bad").unwrap_err().kind(), ErrorKind::Corruption);
    assert_eq!(counter(&db, "good"), Some(2));
    assert_eq!(db.get("after").unwrap().as_deref(), Some(&b"ok"[..]));
}

#[test]
fn operands_read_without_an_operator_are_an_error_not_a_value() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    db.put("plain", "v").unwrap();
    db.merge("m", U64Add::encode(5)).unwrap();
    db.flush().unwrap();
    db.merge("m", U64Add::encode(6)).unwrap();
    db.close().unwrap();
    let o = Options {
        merge_operator: None,
        ..options(Arc::new(U64Add))
    };
    let db = Db::open(d.path(), o).unwrap();
    assert_eq!(db.get("plain").unwrap().as_deref(), Some(&b"v"[..]));
    let e = db.get("m").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("merge operator"), "{e}");
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek(b"m");
    assert!(!it.valid());
    assert_eq!(it.status().unwrap_err().kind(), ErrorKind::InvalidArgument);
    db.close().unwrap();
    // With the operator back, the counter is whole.
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    assert_eq!(counter(&db, "m"), Some(11));
}

/// An operator of the embedder's own: keeps the last operand of each run and counts how often
/// compaction combined operands (through partial merges).
struct Last {
    partials: std::sync::atomic::AtomicU64,
}

impl MergeOperator for Last {
    fn name(&self) -> &str {
        "test.last"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        _existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, MergeError> {
        Ok(operands.last().expect("at least one").to_vec())
    }
    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.partials
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        operands.last().map(|o| o.to_vec())
    }
}

#[test]
fn flushes_combine_operands_with_partial_merges() {
    let d = tempfile::tempdir().unwrap();
    let op = Arc::new(Last {
        partials: Default::default(),
    });
    let mut o = options(op.clone());
    o.write_buffer_size = 4 << 20;
    let db = Db::open(d.path(), o).unwrap();
    db.put("k", "base").unwrap();
    db.flush().unwrap();
    for i in 0..100 {
        db.merge("k", format!("v{i}")).unwrap();
    }
    // The flush cannot see the base (it is in an older table): one operand is left of 100.
    db.flush().unwrap();
    assert!(op.partials.load(std::sync::atomic::Ordering::Relaxed) >= 1);
    let l0: u64 = db
        .live_tables()
        .iter()
        .filter(|(_, f)| f.smallest_seq > 1)
        .map(|(_, f)| f.num_entries)
        .sum();
    assert_eq!(l0, 1, "the flush wrote one combined operand");
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v99"[..]));
}

#[test]
fn transactions_merge_and_read_their_own_operands() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    db.put("a", U64Add::encode(10)).unwrap();
    let mut t = db.transaction();
    t.merge("a", U64Add::encode(1)).unwrap();
    t.merge("a", U64Add::encode(2)).unwrap();
    assert_eq!(
        t.get("a").unwrap().as_deref(),
        Some(&U64Add::encode(13)[..])
    );
    t.put("b", U64Add::encode(100));
    t.merge("b", U64Add::encode(5)).unwrap();
    assert_eq!(
        t.get("b").unwrap().as_deref(),
        Some(&U64Add::encode(105)[..])
    );
    let mut it = t.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut seen = Vec::new();
    while it.valid() {
        seen.push((it.key().to_vec(), U64Add::decode(it.value()).unwrap()));
        it.next();
    }
    assert_eq!(seen, vec![(b"a".to_vec(), 13), (b"b".to_vec(), 105)]);
    assert_eq!(
        db.get("b").unwrap(),
        None,
        "nothing is written before the commit"
    );
    t.commit().unwrap();
    assert_eq!(counter(&db, "a"), Some(13));
    assert_eq!(counter(&db, "b"), Some(105));
    // A merge is a write: another's write to the key since the snapshot fails the commit.
    let mut t = db.transaction();
    t.merge("a", U64Add::encode(1)).unwrap();
    db.merge("a", U64Add::encode(1000)).unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Busy);
    assert_eq!(counter(&db, "a"), Some(1013));
}

#[test]
fn concurrent_counters_lose_no_increment() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path(), options(Arc::new(U64Add))).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..2000u64 {
                    db.merge(format!("c{}", i % 8), U64Add::encode(t + 1))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // 2000 increments per thread spread over 8 counters: 250 per counter per thread.
    for k in 0..8 {
        assert_eq!(counter(&db, &format!("c{k}")), Some(250 * (1 + 2 + 3 + 4)));
    }
    db.compact_range(None, None).unwrap();
    for k in 0..8 {
        assert_eq!(counter(&db, &format!("c{k}")), Some(2500));
    }
}

/// Counters under SIGKILL: the child (this binary re-run in child mode) merges increments into
/// counters from two threads, each batch 1–3 keys of the thread's own with `sync`, announcing
/// each batch before (`I`) and after it is acknowledged (`A`). After each kill the counters
/// must hold every acknowledged increment, and an in-flight batch entirely or not at all.
#[test]
fn merge_crash_child() {
    let Ok(dir) = std::env::var("STRATA_MERGE_CRASH_DIR") else {
        return;
    };
    let seed: u64 = std::env::var("STRATA_MERGE_CRASH_SEED")
        .unwrap()
        .parse()
        .unwrap();
    let db = Db::open(&dir, options(Arc::new(U64Add))).unwrap();
    // The harness printed "test merge_crash_child ... " without a newline: end that line.
    println!();
    let handles: Vec<_> = (0..2u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = common::Rng::new(seed ^ (t + 1));
                for n in 0.. {
                    let mut keys: Vec<u64> = (0..1 + rng.below(3))
                        .map(|_| rng.below(CRASH_KEYS / 2) * 2 + t)
                        .collect();
                    keys.sort_unstable();
                    keys.dedup();
                    let mut b = WriteBatch::new();
                    for k in &keys {
                        b.merge(format!("c{k:03}"), U64Add::encode(1));
                    }
                    let list: Vec<String> = keys.iter().map(u64::to_string).collect();
                    println!("I {t}.{n} {}", list.join(","));
                    let sync = strata::WriteOptions {
                        sync: !rng.chance(20),
                        ..Default::default()
                    };
                    db.write_opt(b, &sync).unwrap();
                    println!("A {t}.{n}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

const CRASH_KEYS: u64 = 60;

#[test]
fn sigkill_loses_no_acknowledged_increment() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let seed = common::seeds(1)[0];
    common::with_seed("merge crash", seed, move || {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut rng = common::Rng::new(seed);
        // What each counter holds after the last reopen (the parent's model).
        let mut model = vec![0u64; CRASH_KEYS as usize];
        let mut acked_total = 0;
        for round in 0..6u64 {
            let mut child = Command::new(&exe)
                .args([
                    "--exact",
                    "merge_crash_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("STRATA_MERGE_CRASH_DIR", dir.path())
                .env("STRATA_MERGE_CRASH_SEED", (seed ^ round).to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let life = std::time::Duration::from_millis(200 + rng.below(600));
            let killer = std::thread::spawn(move || {
                std::thread::sleep(life);
                child.kill().unwrap();
                child.wait().unwrap();
            });
            // Only complete lines count: the kill may cut the last one short.
            let mut lines = Vec::new();
            let mut r = BufReader::new(stdout);
            let mut buf = String::new();
            while r.read_line(&mut buf).unwrap_or(0) > 0 {
                if buf.ends_with('\n') {
                    lines.push(buf.trim_end().to_string());
                }
                buf.clear();
            }
            killer.join().unwrap();
            let mut issued: std::collections::HashMap<String, Vec<usize>> = Default::default();
            let mut acked = vec![0u64; CRASH_KEYS as usize];
            for l in &lines {
                let mut p = l.split(' ');
                match (p.next(), p.next(), p.next()) {
                    (Some("I"), Some(id), Some(keys)) => {
                        let keys = keys.split(',').map(|k| k.parse().unwrap()).collect();
                        issued.insert(id.to_string(), keys);
                    }
                    (Some("A"), Some(id), None) => {
                        for &k in &issued.remove(id).expect("acknowledged after issued") {
                            acked[k] += 1;
                            acked_total += 1;
                        }
                    }
                    _ => {}
                }
            }
            // At most one batch per thread is in flight.
            assert!(issued.len() <= 2, "round {round}: {issued:?}");
            let db = Db::open(dir.path(), options(Arc::new(U64Add))).unwrap();
            let got: Vec<u64> = (0..CRASH_KEYS)
                .map(|k| counter(&db, &format!("c{k:03}")).unwrap_or(0))
                .collect();
            // Each in-flight batch is applied to all of its keys or to none.
            let mut extra = vec![0u64; CRASH_KEYS as usize];
            for keys in issued.values() {
                let applied: Vec<bool> =
                    keys.iter().map(|&k| got[k] > model[k] + acked[k]).collect();
                assert!(
                    applied.iter().all(|a| *a) || applied.iter().all(|a| !a),
                    "round {round}: batch {keys:?} applied in part"
                );
                if applied[0] {
                    for &k in keys {
                        extra[k] += 1;
                    }
                }
            }
            for k in 0..CRASH_KEYS as usize {
                assert_eq!(
                    got[k],
                    model[k] + acked[k] + extra[k],
                    "round {round}: counter c{k:03}"
                );
            }
            model = got;
            db.close().unwrap();
        }
        assert!(
            acked_total > 100,
            "the child acknowledged {acked_total} increments"
        );
    });
}
