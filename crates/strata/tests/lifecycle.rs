//! Lifecycle behaviour: manifest rollover, deletion of obsolete files, write stalls, rate
//! limiting, background WAL sync, statistics and properties.

use std::path::Path;
use std::time::Duration;

use strata::{Db, Options, ReadOptions};

fn count(dir: &Path, pred: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| pred(&e.as_ref().unwrap().file_name().to_string_lossy()))
        .count()
}

fn small() -> Options {
    Options {
        write_buffer_size: 16 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 64 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 16 * 1024,
        block_size: 512,
        ..Options::default()
    }
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn manifest_rolls_over_and_obsolete_files_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        max_manifest_file_size: 2048,
        ..small()
    };
    let db = Db::open(dir.path(), o.clone()).unwrap();
    for round in 0..20u32 {
        for i in 0..300 {
            db.put(k(i), format!("{round}-{i}-{}", "v".repeat(40)))
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_compactions().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let stats = db.stats();
    let live_files: usize = stats.levels.iter().map(|l| l.files).sum();
    assert!(stats.compaction_write_bytes > 0, "{stats}");
    // Only live tables remain on disk, one manifest, one WAL.
    let on_disk: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        count(dir.path(), |n| n.ends_with(".sst")),
        live_files,
        "{stats}\n{on_disk:?}"
    );
    assert_eq!(count(dir.path(), |n| n.starts_with("MANIFEST-")), 1);
    assert_eq!(count(dir.path(), |n| n.ends_with(".log")), 1);
    assert!(std::fs::metadata(dir.path().join("CURRENT")).is_ok());
    // Every key at its last round, after reopening from the rolled-over manifest.
    db.close().unwrap();
    let db = Db::open(dir.path(), o).unwrap();
    for i in 0..300 {
        let v = db.get(k(i)).unwrap().unwrap();
        assert!(v.starts_with(format!("19-{i}-").as_bytes()));
    }
    assert_eq!(db.property("strata.num-files-at-level0").unwrap(), "0");
}

#[test]
fn iterators_pin_files_that_compaction_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    for i in 0..2000 {
        db.put(k(i), b"old").unwrap();
    }
    db.flush().unwrap();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    for i in 0..2000 {
        db.put(k(i), b"new").unwrap();
    }
    db.compact_range(None, None).unwrap();
    // The iterator still reads the tables of its version, now deleted from the manifest.
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), b"old");
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 2000);
    drop(it);
    db.wait_for_compactions().unwrap();
    assert_eq!(db.get(k(5)).unwrap().as_deref(), Some(&b"new"[..]));
}

#[test]
fn write_stalls_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        level0_file_num_compaction_trigger: 1,
        level0_slowdown_writes_trigger: 1,
        level0_stop_writes_trigger: 100,
        slowdown_delay: Duration::from_micros(100),
        compaction_rate_limit: 256 * 1024,
        ..small()
    };
    let db = Db::open(dir.path(), o).unwrap();
    for i in 0..5000 {
        db.put(k(i), [b'x'; 64]).unwrap();
    }
    let s = db.stats();
    assert!(s.slowdowns > 0, "{s}");
    assert!(s.stall_micros > 0, "{s}");
    db.wait_for_compactions().unwrap();
    for i in (0..5000).step_by(97) {
        assert!(db.get(k(i)).unwrap().is_some());
    }
}

#[test]
fn background_wal_sync_runs() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        wal_sync_interval: Some(Duration::from_millis(20)),
        ..small()
    };
    let db = Db::open(dir.path(), o).unwrap();
    db.put(b"a", b"1").unwrap();
    std::thread::sleep(Duration::from_millis(150));
    assert!(db.stats().wal_syncs >= 2);
}

#[test]
fn stats_and_properties_describe_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    for i in 0..3000 {
        db.put(k(i), [b'y'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    for i in 0..3000 {
        db.get(k(i)).unwrap();
    }
    for i in 0..1000 {
        // Inside the tables' key ranges, so the bloom filters are consulted.
        assert!(db.get(format!("key{i:06}x")).unwrap().is_none());
    }
    let s = db.stats();
    assert_eq!(s.gets, 4000);
    assert_eq!(s.get_found, 3000);
    assert_eq!(s.keys_written, 3000);
    assert!(s.flushes >= 1 && s.flush_bytes > 0);
    assert!(s.bloom_useful > 0, "{s}");
    assert!(s.write_amp > 0.0);
    assert!(s.total_sst_bytes > 0);
    let text = db.property("strata.stats").unwrap();
    assert!(text.contains("write-amp"), "{text}");
    let est: u64 = db
        .property("strata.estimate-num-keys")
        .unwrap()
        .parse()
        .unwrap();
    assert!((2500..=3500).contains(&est), "{est}");
    assert_eq!(
        db.property("strata.latest-sequence-number").unwrap(),
        "3000"
    );
    assert!(db.property("strata.levelstats").unwrap().contains("Level"));
    assert!(db.property("strata.no-such-property").is_none());
    assert!(db.property("num-files-at-level0").is_none());
}

#[test]
fn handles_are_shared_and_close_is_final() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    fn assert_send_sync<T: Send + Sync + Clone>(_: &T) {}
    assert_send_sync(&db);
    let other = db.clone();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let e = other.put(b"k2", b"v").unwrap_err();
    assert_eq!(e.kind(), strata::ErrorKind::Closed);
    drop(other);
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn leftover_logs_never_collide_with_new_file_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put(b"before", b"1").unwrap();
    db.close().unwrap();
    // Pretend a crash left logs numbered just above everything the manifest knows of (as after
    // memtable switches that no manifest record saw): the next numbers must not reuse them.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let wal = names.iter().find(|n| n.ends_with(".log")).unwrap();
    let manifest: u64 = names
        .iter()
        .find_map(|n| n.strip_prefix("MANIFEST-"))
        .unwrap()
        .parse()
        .unwrap();
    let data = std::fs::read(dir.path().join(wal)).unwrap();
    for n in manifest + 1..manifest + 6 {
        std::fs::write(dir.path().join(format!("{n:06}.log")), &data).unwrap();
    }
    let db = Db::open(dir.path(), small()).unwrap();
    db.put(b"after", b"2").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(db.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        db.get(b"after").unwrap().as_deref(),
        Some(&b"2"[..]),
        "a write after recovery was lost"
    );
}

#[test]
fn level_count_mismatch_and_first_open_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), small()).unwrap().close().unwrap();
    let err = Db::open(
        dir.path(),
        Options {
            num_levels: 5,
            ..small()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind(), strata::ErrorKind::InvalidArgument, "{err}");

    // A crash during the very first open can leave a manifest without CURRENT.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MANIFEST-000001"), b"partial").unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put(b"k", b"v").unwrap();
}

struct TestFilter;

impl strata::CompactionFilter for TestFilter {
    fn name(&self) -> &str {
        "test"
    }
    fn filter(&self, _level: usize, _key: &[u8], value: &[u8]) -> strata::FilterDecision {
        if value.starts_with(b"expired") {
            strata::FilterDecision::Remove
        } else if let Some(rest) = value.strip_prefix(b"upper:") {
            strata::FilterDecision::ChangeValue(rest.to_ascii_uppercase())
        } else {
            strata::FilterDecision::Keep
        }
    }
}

#[test]
fn compaction_filter_keeps_removes_and_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        compaction_filter: Some(std::sync::Arc::new(TestFilter)),
        ..small()
    };
    let db = Db::open(dir.path(), o).unwrap();
    db.put(b"a", b"old-a").unwrap();
    db.flush().unwrap();
    db.put(b"a", b"expired-a").unwrap(); // newer version removed: `a` must not resurrect
    db.put(b"b", b"upper:bee").unwrap();
    db.put(b"c", b"plain").unwrap();
    db.put(b"d", b"expired-d").unwrap();
    let snap = db.snapshot();
    db.put(b"e", b"expired-e").unwrap(); // newer than the snapshot: filtered
    db.compact_range(None, None).unwrap();
    // Records a live snapshot can see are passed through untouched; newer ones are filtered.
    assert_eq!(db.get(b"e").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"upper:bee"[..]));
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    assert_eq!(
        db.get_opt(&ro, b"d").unwrap().as_deref(),
        Some(&b"expired-d"[..])
    );
    drop(ro);
    drop(snap);
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.get(b"a").unwrap(),
        None,
        "removing the newest version must not resurrect an older one"
    );
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"BEE"[..]));
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"plain"[..]));
    assert_eq!(db.get(b"d").unwrap(), None);
}

fn logs_and_tables(dir: &Path) -> (usize, usize) {
    (
        count(dir, |n| n.ends_with(".log")),
        count(dir, |n| n.ends_with(".sst")),
    )
}

/// `avoid_flush_during_recovery`: the reopened database serves the WAL tail from immutable
/// memtables and flushes them in the background (the flush counter counts background flushes
/// only), where the old behaviour wrote them to L0 before `open` returned.
#[test]
fn reopen_keeps_the_wal_tail_in_memtables_and_flushes_it_in_the_background() {
    for avoid in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let opts = || Options {
            write_buffer_size: 1 << 20,
            avoid_flush_during_recovery: avoid,
            ..Options::default()
        };
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..2000 {
            db.put(k(i), format!("v{i}")).unwrap();
        }
        db.close().unwrap();
        assert_eq!(logs_and_tables(dir.path()), (1, 0));
        let db = Db::open(dir.path(), opts()).unwrap();
        if !avoid {
            assert_eq!(logs_and_tables(dir.path()), (1, 1), "written at open");
        }
        for i in (0..2000).step_by(7) {
            let want = format!("v{i}");
            assert_eq!(db.get(k(i)).unwrap().as_deref(), Some(want.as_bytes()));
        }
        db.wait_for_compactions().unwrap();
        assert_eq!(db.stats().flushes, u64::from(avoid), "avoid {avoid}");
        // The recovered log went with its memtable's flush (the wait covers the deletion
        // that follows the install).
        assert_eq!(logs_and_tables(dir.path()), (1, 1), "avoid {avoid}");
        db.close().unwrap();
    }
}

/// Reopening again and again, each time before the kept memtables may have been flushed, with
/// new writes on top: every write survives, and logs do not pile up past the kept ones.
#[test]
fn kept_memtables_survive_reopening_before_their_flush() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options {
        write_buffer_size: 1 << 20,
        max_write_buffer_number: 4,
        ..Options::default()
    };
    for round in 0..12u32 {
        let db = Db::open(dir.path(), opts()).unwrap();
        for i in 0..300 {
            db.put(k(i), format!("r{round}-{i}")).unwrap();
        }
        if round % 3 == 2 {
            db.delete(k(round)).unwrap();
        }
        db.close().unwrap();
        // The new log and those of at most three kept memtables.
        assert!(logs_and_tables(dir.path()).0 <= 4, "round {round}");
    }
    let db = Db::open(dir.path(), opts()).unwrap();
    for i in 0..300 {
        let got = db.get(k(i)).unwrap();
        if i == 11 {
            assert_eq!(got, None);
        } else {
            assert_eq!(
                got.as_deref(),
                Some(format!("r11-{i}").as_bytes()),
                "key {i}"
            );
        }
    }
}

/// What open still writes to L0 at once: a log ending in a torn write (kept, it would stop
/// being the last log holding writes, and a later replay would take its tail for corruption)
/// and a log whose records fill more than one memtable.
#[test]
fn open_flushes_a_torn_log_and_one_larger_than_a_memtable() {
    // Torn: a partial record appended to the only log.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    let log = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let mut data = std::fs::read(&log).unwrap();
    data.extend_from_slice(&[0x55, 0x12, 0x00, 0x00, 0x40, 0x00, 0x01, 0x7a]);
    std::fs::write(&log, &data).unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(logs_and_tables(dir.path()), (1, 1));
    db.put(b"b", b"2").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    db.close().unwrap();

    // Larger: written with 1 MiB memtables, reopened with 64 KiB ones.
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..3000 {
        db.put(k(i), [b'x'; 100]).unwrap();
    }
    db.close().unwrap();
    let small_buffers = Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), small_buffers).unwrap();
    let (logs, tables) = logs_and_tables(dir.path());
    assert_eq!(logs, 1);
    assert!(tables >= 4, "{tables} tables");
    assert_eq!(db.get(k(2999)).unwrap().as_deref(), Some(&[b'x'; 100][..]));
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().flushes, 0);
}

/// A database that moves its WAL to a separate `wal_location` replays the logs left in its
/// directory and writes them to L0 at open (a kept memtable's flush deletes its log from the
/// log location, where these are not) — also when the log location is a parent of the
/// directory, so that the directory's paths start with it.
#[test]
fn logs_left_in_the_directory_by_a_move_to_a_wal_location_are_flushed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("db");
    let db = Db::open(&db_dir, Options::default()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    let moved = || Options {
        wal_location: Some(dir.path().to_path_buf()),
        ..Options::default()
    };
    let db = Db::open(&db_dir, moved()).unwrap();
    assert_eq!(logs_and_tables(&db_dir), (0, 1));
    db.put(b"b", b"2").unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().flushes, 0);
    db.close().unwrap();
    let db = Db::open(&db_dir, moved()).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
}

/// A record the log splits across blocks (a 100 KiB value) is reassembled and replayed
/// beside records read in place, at every reopen.
#[test]
fn records_spanning_log_blocks_replay_beside_in_place_ones() {
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..100 << 10).map(|i| (i % 253) as u8).collect();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0..50 {
        db.put(k(i), format!("v{i}")).unwrap();
    }
    db.put(b"big", &big).unwrap();
    for i in 50..100 {
        db.put(k(i), format!("v{i}")).unwrap();
    }
    db.close().unwrap();
    for _ in 0..2 {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        assert_eq!(db.get(b"big").unwrap().as_deref(), Some(&big[..]));
        for i in 0..100 {
            let want = format!("v{i}");
            assert_eq!(
                db.get(k(i)).unwrap().as_deref(),
                Some(want.as_bytes()),
                "key {i}"
            );
        }
        db.close().unwrap();
    }
}
