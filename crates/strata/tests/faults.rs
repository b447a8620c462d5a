//! Bad input and faults: corrupted tables, WAL and manifest; foreign and locked directories;
//! oversized keys; injected I/O failures. Corruption must be reported (never returned as
//! data) and nothing acknowledged may be lost.

mod common;

use std::path::Path;
use std::sync::Arc;

use strata::storage::{FaultFs, FaultPlan, LocalFs};
use strata::{Db, ErrorKind, Options, ReadOptions, WriteBatch, WriteOptions, MAX_KEY_SIZE};

fn opts() -> Options {
    Options {
        write_buffer_size: 16 * 1024,
        block_size: 256,
        block_cache_capacity: 0,
        target_file_size_base: 8 * 1024,
        ..Options::default()
    }
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn v(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "z".repeat((i % 50) as usize)).into_bytes()
}

fn files_with(dir: &Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    let i = at.min(b.len() - 1);
    b[i] ^= 0x5a;
    std::fs::write(path, b).unwrap();
}

fn snapshot_dir(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("LOCK"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn load(dir: &Path, n: u32) {
    let db = Db::open(dir, opts()).unwrap();
    for i in 0..n {
        db.put(k(i), v(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
}

#[test]
fn flipped_bytes_in_tables_are_reported_never_returned() {
    let base = tempfile::tempdir().unwrap();
    load(base.path(), 2000);
    let tables = files_with(base.path(), ".sst");
    assert!(!tables.is_empty());
    let size = std::fs::metadata(&tables[0]).unwrap().len() as usize;
    let mut corruptions = 0;
    for frac in [0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.999] {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in snapshot_dir(base.path()) {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let t = files_with(dir.path(), ".sst")[0].clone();
        flip(&t, (size as f64 * frac) as usize);
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..2000 {
            match db.get(k(i)) {
                Ok(Some(got)) => assert_eq!(&got[..], &v(i)[..], "wrong data returned for key {i}"),
                Ok(None) => panic!("key {i} silently missing after a flip at {frac}"),
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
                    corruptions += 1;
                }
            }
        }
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            let i: u32 = std::str::from_utf8(&it.key()[3..])
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(it.value(), &v(i)[..]);
            n += 1;
            it.next();
        }
        if n < 2000 {
            let e = it.status().expect_err("a short scan must report why");
            assert_eq!(e.kind(), ErrorKind::Corruption);
        }
    }
    assert!(corruptions > 0, "no flip was detected");
}

#[test]
fn wal_corruption_in_the_middle_fails_open_and_torn_tail_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..500 {
            db.put(k(i), v(i)).unwrap();
        }
        db.close().unwrap();
    }
    let wal = files_with(dir.path(), ".log").pop().unwrap();
    let good = std::fs::read(&wal).unwrap();

    // A truncated final record is a torn tail: everything before it survives, even when an
    // empty newer log (left by a crash during an earlier open) follows it.
    std::fs::write(&wal, &good[..good.len() - 3]).unwrap();
    std::fs::write(dir.path().join("999999.log"), b"").unwrap();
    let before = snapshot_dir(dir.path());
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..499 {
            assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]));
        }
        assert_eq!(db.get(k(499)).unwrap(), None);
        db.close().unwrap();
    }
    let _ = before;

    // A flipped byte followed by valid records is corruption: open fails, files untouched.
    let dir2 = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir2.path(), Options::default()).unwrap();
        for i in 0..500 {
            db.put(k(i), v(i)).unwrap();
        }
        db.close().unwrap();
    }
    let wal2 = files_with(dir2.path(), ".log").pop().unwrap();
    flip(&wal2, 100);
    let before = snapshot_dir(dir2.path());
    let err = Db::open(dir2.path(), Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corruption, "{err}");
    assert!(
        snapshot_dir(dir2.path()) == before,
        "a failed open must not change files"
    );
}

#[test]
fn manifest_and_current_corruption_fail_open_without_changes() {
    let dir = tempfile::tempdir().unwrap();
    load(dir.path(), 300);
    let manifest = files_with(dir.path(), "")
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    let good = std::fs::read(&manifest).unwrap();
    flip(&manifest, 20);
    let before = snapshot_dir(dir.path());
    let err = Db::open(dir.path(), opts()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corruption, "{err}");
    assert!(
        snapshot_dir(dir.path()) == before,
        "a failed open must not change files"
    );
    std::fs::write(&manifest, good).unwrap();

    let current = dir.path().join("CURRENT");
    let good_current = std::fs::read(&current).unwrap();
    std::fs::write(&current, b"garbage").unwrap();
    let err = Db::open(dir.path(), opts()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corruption, "{err}");
    std::fs::write(&current, good_current).unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    assert_eq!(db.get(k(7)).unwrap().as_deref(), Some(&v(7)[..]));
}

#[test]
fn foreign_directory_and_second_opener_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"precious").unwrap();
    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotADatabase, "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("notes.txt")).unwrap(),
        b"precious"
    );
    assert!(!dir.path().join("CURRENT").exists());

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked, "{err}");
    db.close().unwrap();
    Db::open(dir.path(), Options::default()).unwrap();

    let missing = dir.path().join("missing");
    let err = Db::open(
        &missing,
        Options {
            create_if_missing: false,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn oversized_keys_reject_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut b = WriteBatch::new();
    b.put(b"fine", b"1");
    b.put(vec![7u8; MAX_KEY_SIZE + 1], b"2");
    let err = db.write(b).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(db.get(b"fine").unwrap(), None);
    assert_eq!(db.latest_sequence(), 0);
    let err = db
        .put(b"k", vec![0u8; strata::MAX_VALUE_SIZE + 1])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    db.put(vec![1u8; MAX_KEY_SIZE], b"max").unwrap();
    assert_eq!(
        db.get(vec![1u8; MAX_KEY_SIZE]).unwrap().as_deref(),
        Some(&b"max"[..])
    );
}

#[test]
fn failed_flush_turns_read_only_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new(Arc::new(LocalFs));
    let o = Options {
        storage: Some(Arc::new(fs.clone())),
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    for i in 0..100 {
        db.put(k(i), v(i)).unwrap();
    }
    fs.set_plan(FaultPlan {
        path_filter: Some(".sst".into()),
        fail_writes: true,
        ..Default::default()
    });
    let err = db.flush().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    assert!(fs.injected() > 0);
    // Reads still work; writes are refused.
    assert_eq!(db.get(k(5)).unwrap().as_deref(), Some(&v(5)[..]));
    assert!(db.put(b"after", b"x").is_err());
    assert!(db.stats().background_errors >= 1);
    db.close().unwrap();
    fs.heal();
    let db = Db::open(dir.path(), o).unwrap();
    for i in 0..100 {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]), "key {i}");
    }
    db.put(b"after", b"x").unwrap();
}

#[test]
fn failed_wal_sync_fails_the_write_and_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new(Arc::new(LocalFs));
    let o = Options {
        storage: Some(Arc::new(fs.clone())),
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    db.put_sync_helper(b"a", b"1");
    fs.set_plan(FaultPlan {
        path_filter: Some(".log".into()),
        fail_syncs: true,
        ..Default::default()
    });
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    let mut b = WriteBatch::new();
    b.put(b"b", b"2");
    assert!(db.write_opt(b, &sync).is_err());
    assert!(
        db.put(b"c", b"3").is_err(),
        "writes after a WAL failure must be refused"
    );
    drop(db);
    fs.heal();
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"c").unwrap(), None);
}

/// `Db::sync_wal` and the periodic WAL sync fsync the current log outside the log lock (a
/// second descriptor); a failure there still stops writes, and later syncs keep failing even
/// once fsyncs succeed again: they cannot vouch for what the failed one lost.
#[test]
fn failed_detached_wal_sync_stops_writes_and_later_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new(Arc::new(LocalFs));
    let o = Options {
        storage: Some(Arc::new(fs.clone())),
        wal_sync_interval: Some(std::time::Duration::from_millis(20)),
        ..opts()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.sync_wal().unwrap();
    let before = db.stats().wal_syncs;
    db.put(b"b", b"2").unwrap();
    // The periodic sync runs (detached: no sealed log, the directory is synced).
    let t = std::time::Instant::now();
    while db.stats().wal_syncs == before {
        assert!(
            t.elapsed().as_secs() < 10,
            "the periodic WAL sync never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    fs.set_plan(FaultPlan {
        path_filter: Some(".log".into()),
        fail_syncs: true,
        ..Default::default()
    });
    assert!(db.sync_wal().is_err());
    assert!(db.put(b"c", b"3").is_err(), "writes after a failed sync");
    fs.heal();
    assert!(
        db.sync_wal().is_err(),
        "a later sync cannot vouch for the failed one"
    );
    drop(db);
    let db = Db::open(dir.path(), o).unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"c").unwrap(), None);
}

trait PutSync {
    fn put_sync_helper(&self, k: &[u8], v: &[u8]);
}

impl PutSync for Db {
    fn put_sync_helper(&self, k: &[u8], v: &[u8]) {
        let mut b = WriteBatch::new();
        b.put(k, v);
        self.write_opt(
            b,
            &WriteOptions {
                sync: true,
                ..Default::default()
            },
        )
        .unwrap();
    }
}

#[test]
fn compaction_read_errors_are_retried_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new(Arc::new(LocalFs));
    let o = Options {
        storage: Some(Arc::new(fs.clone())),
        level0_file_num_compaction_trigger: 2,
        ..opts()
    };
    let db = Db::open(dir.path(), o).unwrap();
    for i in 0..300 {
        db.put(k(i), v(i)).unwrap();
    }
    db.flush().unwrap();
    fs.set_plan(FaultPlan {
        path_filter: Some(".sst".into()),
        fail_reads: true,
        ..Default::default()
    });
    for i in 300..600 {
        db.put(k(i), v(i)).unwrap();
    }
    db.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        db.stats().background_errors > 0,
        "the compaction should have failed"
    );
    fs.heal();
    db.wait_for_compactions().unwrap();
    for i in 0..600 {
        assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(&v(i)[..]), "key {i}");
    }
}
