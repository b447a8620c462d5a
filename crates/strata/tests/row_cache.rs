//! The row cache (`Options::row_cache_capacity`) against real tables: repeated lookups are
//! answered from it, and its answers stay those of the tables — newer tables shadow it, deletions
//! and range deletions are cached as deletions, and reads at an older snapshot go to the tables.

use strata::{Db, Options, ReadOptions};

fn opts() -> Options {
    Options {
        row_cache_capacity: 1 << 20,
        // Manual flushes only: every table in the test is one the test made.
        write_buffer_size: 64 << 20,
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 200,
        level0_stop_writes_trigger: 300,
        ..Options::default()
    }
}

#[test]
fn repeated_lookups_hit_and_answers_stay_those_of_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), format!("v1-{i}")).unwrap();
    }
    db.flush().unwrap();
    let old = db.snapshot();
    let get = |k: &str| {
        db.get(k)
            .unwrap()
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
    };

    // First lookups miss and fill; the second round hits.
    for round in 0..2 {
        for i in 0..100u32 {
            assert_eq!(
                get(&format!("k{i:03}")),
                Some(format!("v1-{i}")),
                "round {round}"
            );
        }
    }
    let s = db.stats();
    assert_eq!((s.row_cache_misses, s.row_cache_hits), (100, 100));
    assert!(s.row_cache_usage > 0 && s.row_cache_usage <= s.row_cache_capacity);
    // Absent keys are the filter's job: neither cached nor answered.
    assert_eq!(get("k999"), None);
    assert_eq!(get("k999"), None);
    let after = db.stats();
    assert_eq!(after.row_cache_hits, s.row_cache_hits);
    assert_eq!(after.row_cache_usage, s.row_cache_usage);

    // A newer table shadows the cached answers of the older one.
    db.put("k001", "v2").unwrap();
    db.delete("k002").unwrap();
    db.delete_range("k010", "k020").unwrap();
    db.flush().unwrap();
    for _ in 0..2 {
        assert_eq!(get("k001"), Some("v2".into()));
        assert_eq!(get("k002"), None);
        assert_eq!(get("k015"), None);
        assert_eq!(get("k030"), Some("v1-30".into()));
    }

    // A read at the older snapshot does not see the newer table and bypasses the cache for
    // tables it cannot see whole.
    let at_old = ReadOptions {
        snapshot: Some(old),
        ..Default::default()
    };
    let old_get = |k: &str| db.get_opt(&at_old, k).unwrap().map(|v| v.to_vec());
    assert_eq!(old_get("k001"), Some(b"v1-1".to_vec()));
    assert_eq!(old_get("k002"), Some(b"v1-2".to_vec()));
    assert_eq!(old_get("k015"), Some(b"v1-15".to_vec()));

    // After compaction the answers come from the new tables (new ids), the same values.
    db.compact_range(None, None).unwrap();
    for i in 0..100u32 {
        let want = match i {
            1 => Some("v2".to_string()),
            2 | 10..=19 => None,
            _ => Some(format!("v1-{i}")),
        };
        assert_eq!(get(&format!("k{i:03}")), want, "key {i} after compaction");
    }
}

#[test]
fn a_range_deletion_in_the_same_table_is_cached_as_a_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    // The snapshot keeps the flush from dropping the covered version of "a".
    let _keep = db.snapshot();
    db.delete_range("a", "b").unwrap();
    db.flush().unwrap();
    for _ in 0..3 {
        assert_eq!(db.get("a").unwrap(), None);
        assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]));
    }
    let s = db.stats();
    assert_eq!((s.row_cache_misses, s.row_cache_hits), (2, 4));
}

/// A read at a snapshot older than some of a table's entries bypasses the cache even when it
/// holds the table's newest version of the key.
#[test]
fn an_older_snapshot_inside_a_table_is_not_answered_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts()).unwrap();
    db.put("k", "v1").unwrap();
    let snap = db.snapshot();
    db.put("k", "v2").unwrap();
    db.flush().unwrap(); // one table holds both versions (the snapshot keeps v1)
    for _ in 0..2 {
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v2"[..]));
    }
    assert_eq!(db.stats().row_cache_hits, 1);
    let at_snap = ReadOptions {
        snapshot: Some(snap),
        ..Default::default()
    };
    assert_eq!(
        db.get_opt(&at_snap, "k").unwrap().as_deref(),
        Some(&b"v1"[..])
    );
}
