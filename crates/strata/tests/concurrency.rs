//! Many writers and readers at once, across flushes and compactions: readers must see
//! per-key monotonic versions, snapshot iterators must see batches atomically, and the final
//! state must match what the writers wrote; a writer must read its own write on return.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

const WRITERS: u64 = 4;
const KEYS_PER_WRITER: u64 = 200;

fn opts_with(concurrent_memtable_writes: bool) -> Options {
    Options {
        concurrent_memtable_writes,
        write_buffer_size: 64 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 256 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 64 * 1024,
        max_background_compactions: 2,
        ..Options::default()
    }
}

fn key(w: u64, i: u64) -> Vec<u8> {
    format!("w{w}-{i:05}").into_bytes()
}

fn pair_key(w: u64, i: u64, side: &str) -> Vec<u8> {
    format!("p{w}-{i:05}-{side}").into_bytes()
}

fn parse_version(v: &[u8]) -> u64 {
    std::str::from_utf8(&v[..20])
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn value(version: u64) -> Vec<u8> {
    let mut v = format!("{version:>20}").into_bytes();
    v.extend(std::iter::repeat_n(b'.', (version % 200) as usize));
    v
}

#[test]
fn writers_and_readers_agree() {
    run(false)
}

#[test]
fn writers_and_readers_agree_with_concurrent_memtable_writes() {
    run(true)
}

fn run(concurrent: bool) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts_with(concurrent)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Duration::from_millis(
        std::env::var("STRATA_CONCURRENCY_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3000),
    );

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rng = common::Rng::new(w + 1);
                let mut versions = vec![0u64; KEYS_PER_WRITER as usize];
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    let i = rng.below(KEYS_PER_WRITER);
                    versions[i as usize] += 1;
                    let v = versions[i as usize];
                    if rng.chance(3) {
                        // Sync writes break groups and take the fsync path of the pipeline.
                        let mut b = WriteBatch::new();
                        b.put(key(w, i), value(v));
                        db.write_opt(
                            b,
                            &WriteOptions {
                                sync: true,
                                ..Default::default()
                            },
                        )
                        .unwrap();
                    } else {
                        db.put(key(w, i), value(v)).unwrap();
                    }
                    // A writer sees its own write on return (the pipeline publishes a group
                    // only after it and every earlier group are in the memtable).
                    let got = db.get(key(w, i)).unwrap().expect("own write visible");
                    assert_eq!(parse_version(&got), v, "own write {w}/{i} not visible");
                    // A batch that writes two keys with the same version: readers must never see
                    // them differ through a snapshot.
                    let mut b = WriteBatch::new();
                    b.put(pair_key(w, i, "a"), value(round));
                    b.put(pair_key(w, i, "b"), value(round));
                    db.write(b).unwrap();
                }
                versions
            })
        })
        .collect();

    let readers: Vec<_> = (0..3)
        .map(|r| {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rng = common::Rng::new(100 + r);
                let mut seen = vec![0u64; (WRITERS * KEYS_PER_WRITER) as usize];
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let w = rng.below(WRITERS);
                    let i = rng.below(KEYS_PER_WRITER);
                    if let Some(v) = db.get(key(w, i)).unwrap() {
                        let ver = parse_version(&v);
                        let slot = &mut seen[(w * KEYS_PER_WRITER + i) as usize];
                        assert!(
                            ver >= *slot,
                            "version went backwards for {w}/{i}: {ver} < {slot}"
                        );
                        *slot = ver;
                    }
                    if rng.chance(5) {
                        let snap = db.snapshot();
                        let ro = ReadOptions {
                            snapshot: Some(snap),
                            lower_bound: Some(format!("p{w}-").into_bytes()),
                            upper_bound: Some(format!("p{w}.").into_bytes()),
                            ..Default::default()
                        };
                        let mut it = db.iter(ro).unwrap();
                        it.seek_to_first();
                        while it.valid() {
                            let ka = it.key().to_vec();
                            let va = it.value().to_vec();
                            it.next();
                            assert!(
                                it.valid(),
                                "pair half missing after {:?}",
                                String::from_utf8_lossy(&ka)
                            );
                            assert_eq!(&it.key()[..ka.len() - 1], &ka[..ka.len() - 1]);
                            assert_eq!(it.value(), &va[..], "batch seen half-applied");
                            it.next();
                        }
                        it.status().unwrap();
                    }
                    // Manual flushes and compactions race with write groups.
                    if r == 0 && rng.chance(2) {
                        db.flush().unwrap();
                    }
                    if r == 1 && rng.chance(1) {
                        db.compact_range(None, None).unwrap();
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();

    let start = Instant::now();
    while start.elapsed() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let finals: Vec<Vec<u64>> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    let checks: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(checks > 0);
    let stats = db.stats();
    assert!(stats.flushes > 0, "the test should have flushed: {stats}");
    db.wait_for_compactions().unwrap();
    for (w, versions) in finals.iter().enumerate() {
        for (i, &ver) in versions.iter().enumerate() {
            let got = db.get(key(w as u64, i as u64)).unwrap();
            match ver {
                0 => assert!(got.is_none()),
                _ => assert_eq!(parse_version(&got.unwrap()), ver, "final {w}/{i}"),
            }
        }
    }
    // And again after reopening.
    db.close().unwrap();
    let db = Db::open(dir.path(), opts_with(concurrent)).unwrap();
    for (w, versions) in finals.iter().enumerate() {
        for (i, &ver) in versions.iter().enumerate() {
            if ver > 0 {
                let got = db.get(key(w as u64, i as u64)).unwrap().unwrap();
                assert_eq!(parse_version(&got), ver, "after reopen {w}/{i}");
            }
        }
    }
}

/// With `pipelined_write`, large batches make memtable inserts slow, so later write groups
/// (which append to the WAL while earlier ones insert) often finish first: they must not become visible before every
/// earlier group is wholly in the memtable. Readers check that a snapshot sees each writer's
/// 300-key batch all or nothing.
#[test]
fn pipelined_groups_publish_in_order() {
    for concurrent in [false, true] {
        pipelined_groups(concurrent);
    }
}

fn pipelined_groups(concurrent: bool) {
    const BATCH: u64 = 300;
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        concurrent_memtable_writes: concurrent,
        pipelined_write: true,
        write_buffer_size: 4 << 20,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    round += 1;
                    let mut b = WriteBatch::new();
                    for j in 0..BATCH {
                        b.put(format!("b{w}-{j:04}"), value(round));
                    }
                    db.write(b).unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let w = (checks + r) % 4;
                    let ro = ReadOptions {
                        snapshot: Some(db.snapshot()),
                        lower_bound: Some(format!("b{w}-").into_bytes()),
                        upper_bound: Some(format!("b{w}.").into_bytes()),
                        ..Default::default()
                    };
                    let mut it = db.iter(ro).unwrap();
                    it.seek_to_first();
                    let mut n = 0u64;
                    let mut first: Option<Vec<u8>> = None;
                    while it.valid() {
                        let v = it.value().to_vec();
                        match &first {
                            None => first = Some(v),
                            Some(f) => assert_eq!(
                                parse_version(f),
                                parse_version(&v),
                                "a batch of writer {w} seen half-applied"
                            ),
                        }
                        n += 1;
                        it.next();
                    }
                    it.status().unwrap();
                    assert!(n == 0 || n == BATCH, "writer {w}: {n} of {BATCH} keys");
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2500));
    stop.store(true, Ordering::Relaxed);
    for h in writers {
        h.join().unwrap();
    }
    let checks: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
    assert!(checks > 0);
}
