//! Non-blocking reads and writes: `ReadOptions::cache_only` answers from memory or fails with
//! `ErrorKind::Incomplete` having read nothing; `WriteOptions::no_slowdown` refuses a write that
//! would stall or switch memtables and writes nothing. (The server runs requests inline on its
//! event loop with these, and on a thread pool when they say Incomplete.)

use std::path::Path;
use std::sync::Arc;

use strata::storage::{FaultFs, FaultPlan, LocalFs};
use strata::{Db, ErrorKind, Options, ReadOptions, WriteBatch, WriteOptions};

fn cache_only() -> ReadOptions {
    ReadOptions {
        cache_only: true,
        ..Default::default()
    }
}

/// Local files whose reads that must not wait find the page cache empty (`cold`) or go to
/// the operating system (a block it has in memory is read without waiting).
fn page_cache(fs: &FaultFs, cold: bool) {
    fs.set_plan(FaultPlan {
        cold_reads: cold,
        ..Default::default()
    });
}

/// Reads every table file of `dir` as another process would, into the page cache.
fn read_tables(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sst") {
            std::fs::read(&p).unwrap();
        }
    }
}

fn opts() -> Options {
    Options {
        write_buffer_size: 16 * 1024,
        block_size: 512,
        ..Options::default()
    }
}

#[test]
fn cache_only_reads_answer_from_memory_or_say_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..200u32 {
            db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
        }
        // The memtable answers.
        assert_eq!(
            db.get_opt(&cache_only(), "k0007").unwrap().as_deref(),
            Some(&b"v7"[..])
        );
        db.flush().unwrap();
        db.close().unwrap();
    }
    // Reopened: no table is open and the block cache is empty (and, emulated, the page cache).
    let fs = FaultFs::new(Arc::new(LocalFs));
    page_cache(&fs, true);
    let db = Db::open(
        dir.path(),
        Options {
            storage: Some(Arc::new(fs.clone())),
            ..opts()
        },
    )
    .unwrap();
    let e = db.get_opt(&cache_only(), "k0042").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incomplete, "{e}");
    // A normal read opens the table and caches the block; then memory answers.
    assert_eq!(db.get("k0042").unwrap().as_deref(), Some(&b"v42"[..]));
    assert_eq!(
        db.get_opt(&cache_only(), "k0042").unwrap().as_deref(),
        Some(&b"v42"[..])
    );
    // Another block of the same (open) table is in no cache.
    let e = db.get_opt(&cache_only(), "k0190").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incomplete);
    // Once the operating system has the file's pages (another reader read them), a
    // memory-only read takes the block from there (`preadv2(RWF_NOWAIT)`) and caches it.
    page_cache(&fs, false);
    read_tables(dir.path());
    let warm = db.get_opt(&cache_only(), "k0190");
    if cfg!(target_os = "linux") {
        assert_eq!(warm.unwrap().as_deref(), Some(&b"v190"[..]));
    }
    page_cache(&fs, true);
    if cfg!(target_os = "linux") {
        assert_eq!(
            db.get_opt(&cache_only(), "k0190").unwrap().as_deref(),
            Some(&b"v190"[..]),
            "now in the block cache"
        );
    }
    // A key the open table's filter rules out needs no block at all.
    let mut filtered = 0;
    for i in 0..50 {
        match db.get_opt(&cache_only(), format!("absent{i}")) {
            Ok(None) => filtered += 1,
            Ok(Some(v)) => panic!("absent key read {v:?}"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Incomplete),
        }
    }
    assert!(
        filtered > 40,
        "the bloom filter answered only {filtered} of 50"
    );
    // Iterators take the option too: a scan from memory sees what a full one sees, or stops
    // with `Incomplete` where a block is not cached.
    let scan = |db: &Db| -> (Vec<Vec<u8>>, strata::Result<()>) {
        match db.iter(cache_only()) {
            Ok(mut it) => {
                it.seek_to_first();
                let mut v = Vec::new();
                while it.valid() {
                    v.push(it.key().to_vec());
                    it.next();
                }
                (v, it.status())
            }
            Err(e) => (Vec::new(), Err(e)),
        }
    };
    let (cold, status) = scan(&db);
    let full: Vec<_> = {
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut v = Vec::new();
        while it.valid() {
            v.push(it.key().to_vec());
            it.next();
        }
        v
    };
    assert!(full.starts_with(&cold));
    if let Err(e) = status {
        assert_eq!(e.kind(), ErrorKind::Incomplete);
    }
    // Once a full scan filled the cache, a memory-only one reads everything.
    let (warm, status) = scan(&db);
    status.unwrap();
    assert_eq!(warm, full);
}

#[test]
fn no_slowdown_writes_refuse_to_stall_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    let ns = WriteOptions {
        no_slowdown: true,
        ..Default::default()
    };
    let mut b = WriteBatch::new();
    b.put("a", "1");
    db.write_opt(b, &ns).unwrap();
    // Fill the memtable past its size: the next write would have to switch memtables.
    db.put("big", vec![7u8; 20 * 1024]).unwrap();
    let mut b = WriteBatch::new();
    b.put("a", "2");
    let e = db.write_opt(b, &ns).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incomplete, "{e}");
    assert_eq!(
        db.get("a").unwrap().as_deref(),
        Some(&b"1"[..]),
        "nothing written"
    );
    // A normal write switches; then no_slowdown writes go through again.
    db.put("c", "3").unwrap();
    let mut b = WriteBatch::new();
    b.put("a", "3");
    db.write_opt(b, &ns).unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"3"[..]));
}

/// With `prepopulate_block_cache`, what a flush wrote is read from memory right after it; without
/// it the first read of a flushed block must read the table. (The page cache is emulated cold:
/// a block read from it would be cached too.)
#[test]
fn a_flush_prepopulates_the_block_cache_when_asked() {
    for prepopulate in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultFs::new(Arc::new(LocalFs));
        page_cache(&fs, true);
        let db = Db::open(
            dir.path(),
            Options {
                prepopulate_block_cache: prepopulate,
                storage: Some(Arc::new(fs)),
                ..opts()
            },
        )
        .unwrap();
        for i in 0..200u32 {
            db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
        }
        db.flush().unwrap();
        let mut cached = 0;
        for i in (0..200u32).step_by(7) {
            match db.get_opt(&cache_only(), format!("k{i:04}")) {
                Ok(v) => {
                    assert_eq!(v.as_deref(), Some(format!("v{i}").as_bytes()));
                    cached += 1;
                }
                Err(e) => assert_eq!(e.kind(), ErrorKind::Incomplete, "{e}"),
            }
        }
        if prepopulate {
            assert_eq!(cached, 29, "every flushed block was cached");
        } else {
            assert!(
                cached < 29,
                "no block read yet, yet {cached} of 29 were cached"
            );
        }
        db.close().unwrap();
    }
}
