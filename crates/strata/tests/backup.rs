//! Backups (issue 47): incremental (a second backup uploads only the tables that changed,
//! counted by the backup URL's request metrics), damage to any file reported by `verify` and
//! refused by `restore`, purge and delete keep exactly what remaining backups name, backups of
//! a database from outside its process and of one without a capacity tier. The round trip
//! under write load for each configuration is in `checkpoint.rs`.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::contents;
use strata::backup::{BackupEngine, BackupOptions};
use strata::storage::object::CapacityOptions;
use strata::{Db, Options};

fn options(url: &str) -> Options {
    Options {
        write_buffer_size: 256 << 10,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 512 << 10,
        capacity: Some(CapacityOptions::new(url)),
        fast_levels: Some(1),
        capacity_gc_min_age: Duration::ZERO,
        ..Options::default()
    }
}

fn load(db: &Db, keys: std::ops::Range<u64>, tag: &str) {
    for i in keys {
        db.put(
            format!("key{i:06}"),
            format!("{tag}-{i:06}-{}", "x".repeat(80)),
        )
        .unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
}

fn url(name: &str) -> String {
    format!("memory://backup-{name}-{}", std::process::id())
}

fn restore_and_open(e: &BackupEngine, id: Option<u64>, dir: &Path, cap: &str) -> Db {
    e.restore(
        id,
        dir,
        Some(&CapacityOptions::new(cap)),
        &Default::default(),
    )
    .unwrap();
    Db::open(dir, options(cap)).unwrap()
}

/// A second backup uploads the tables that changed (and the small private files, its
/// document and the next-id counter), not the unchanged ones.
#[test]
fn incremental_backups_upload_what_changed() {
    const KEYS: u64 = 40_000;
    let d = tempfile::tempdir().unwrap();
    let src_url = url("incr-src");
    let db = Db::open(d.path().join("src"), options(&src_url)).unwrap();
    load(&db, 0..KEYS, "a");
    db.compact_range(None, None).unwrap();
    let backup_url = url("incr");
    let e = BackupEngine::open(&CapacityOptions::new(&backup_url)).unwrap();
    let first = e.create(&db, &Default::default()).unwrap();
    assert_eq!(first.id, 1);
    assert_eq!(
        first.new_bytes, first.bytes,
        "the first backup uploads everything"
    );
    let mut objects_before: HashSet<String> = HashSet::new();
    for (pct, id) in [(1u64, 2u64), (10, 3)] {
        for b in e.list().unwrap() {
            assert!(b.damaged.is_none());
        }
        objects_before.clear();
        objects_before.extend(list_objects(&backup_url));
        let n = KEYS * pct / 100;
        load(&db, 1000..1000 + n, &format!("b{pct}"));
        let put_before = e.stats().put_bytes.load(Ordering::Relaxed);
        let info = e.create(&db, &Default::default()).unwrap();
        let uploaded = e.stats().put_bytes.load(Ordering::Relaxed) - put_before;
        assert_eq!(info.id, id);
        // What changed: the tables of this backup no earlier backup holds.
        let changed: u64 = list_objects(&backup_url)
            .difference(&objects_before)
            .filter(|o| o.starts_with("shared/"))
            .map(|o| {
                o.rsplit('-')
                    .next()
                    .unwrap()
                    .trim_end_matches(".sst")
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        eprintln!(
            "{pct}% overwritten: backup {} bytes, changed tables {changed} bytes, uploaded \
             {uploaded} bytes ({:.2}x changed, {:.1}% of the backup)",
            info.bytes,
            uploaded as f64 / changed.max(1) as f64,
            100.0 * uploaded as f64 / info.bytes as f64
        );
        assert!(changed > 0);
        assert!(
            uploaded as f64 <= 1.2 * changed as f64,
            "{pct}%: uploaded {uploaded} bytes for {changed} bytes of changed tables"
        );
        assert!(
            uploaded < info.bytes / 2,
            "{pct}%: incremental, {uploaded} of {}",
            info.bytes
        );
        assert_eq!(
            info.new_bytes,
            uploaded - meta_bytes(&backup_url, id) - (id + 1).to_string().len() as u64,
            "{info:?}"
        );
    }
    // Every backup restores to its own moment.
    let want_last = contents(&db);
    let r = restore_and_open(&e, None, &d.path().join("r3"), &url("incr-r3"));
    assert_eq!(contents(&r), want_last);
    r.close().unwrap();
    let r = restore_and_open(&e, Some(1), &d.path().join("r1"), &url("incr-r1"));
    let first_state = contents(&r);
    assert_eq!(first_state.len() as u64, KEYS);
    assert!(first_state.values().all(|v| v.starts_with(b"a-")));
    r.close().unwrap();
    db.close().unwrap();
}

fn tier(url: &str) -> std::sync::Arc<strata::storage::object::CapacityTier> {
    strata::storage::object::CapacityTier::open(
        &CapacityOptions::new(url),
        None,
        Default::default(),
    )
    .unwrap()
}

/// The size of backup `id`'s document.
fn meta_bytes(url: &str, id: u64) -> u64 {
    let name = format!("meta/{id:020}.json");
    tier(url)
        .list("meta")
        .unwrap()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, size)| size)
        .unwrap()
}

fn list_objects(url: &str) -> HashSet<String> {
    let tier = tier(url);
    let mut out: HashSet<String> = tier
        .list("shared")
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    out.extend(tier.list("private").unwrap().into_iter().map(|(n, _)| n));
    out
}

/// One flipped byte in any file of a backup — a shared table, a private file, the document —
/// is reported by `verify` naming the file, and refused by `restore`, which leaves nothing at
/// its target.
#[test]
fn damage_to_any_file_is_reported_and_refused() {
    let d = tempfile::tempdir().unwrap();
    let src_url = url("damage-src");
    let db = Db::open(d.path().join("src"), options(&src_url)).unwrap();
    load(&db, 0..5000, "a");
    db.compact_range(None, None).unwrap();
    db.put("in-the-wal", "1").unwrap();
    let root = d.path().join("backups");
    std::fs::create_dir(&root).unwrap();
    let e =
        BackupEngine::open(&CapacityOptions::new(format!("file://{}", root.display()))).unwrap();
    let info = e.create(&db, &Default::default()).unwrap();
    db.close().unwrap();
    let report = e.verify(None, &Default::default()).unwrap();
    assert_eq!(report.len(), 1);
    assert!(report[0].damaged.is_empty(), "{report:?}");
    assert_eq!((report[0].files, report[0].bytes), (info.files, info.bytes));
    let mut files: Vec<String> = Vec::new();
    for dir in ["shared", "private", "meta"] {
        for f in walk(&root.join(dir)) {
            files.push(f.strip_prefix(&root).unwrap().display().to_string());
        }
    }
    let pick = |p: &str| {
        files
            .iter()
            .find(|f| f.starts_with(p) && !f.ends_with("CURRENT"))
            .unwrap()
            .clone()
    };
    for victim in [pick("shared/"), pick("private/"), pick("meta/")] {
        let path = root.join(&victim);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        let at = good.len() / 2;
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        let report = e.verify(Some(info.id), &Default::default());
        let damaged: Vec<String> = match report {
            Ok(r) => r[0].damaged.iter().map(|x| x.object.clone()).collect(),
            Err(err) => panic!("{victim}: verify failed instead of reporting: {err}"),
        };
        assert_eq!(damaged, vec![victim.clone()], "{victim}");
        let target = d.path().join("restored");
        let err = e
            .restore(
                Some(info.id),
                &target,
                Some(&CapacityOptions::new(url(&format!(
                    "damage-r-{}",
                    victim.len()
                )))),
                &Default::default(),
            )
            .unwrap_err();
        assert!(err.is_corruption(), "{victim}: {err}");
        assert!(!target.exists(), "{victim}: nothing at the target");
        if victim.starts_with("meta/") {
            let listed = e.list().unwrap();
            assert!(listed[0].damaged.is_some(), "{listed:?}");
        }
        std::fs::write(&path, &good).unwrap();
    }
    // Undamaged again: it restores and holds the WAL's last write.
    let r = restore_and_open(&e, Some(info.id), &d.path().join("ok"), &url("damage-ok"));
    assert_eq!(r.get("in-the-wal").unwrap().as_deref(), Some(&b"1"[..]));
    r.close().unwrap();
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Purging keeps the newest backups and exactly the files they name; deleting the last one
/// leaves no file; the uploads of an interrupted backup (no document) are never listed and are
/// removed with the rest.
#[test]
fn purge_and_delete_keep_exactly_what_remains_named() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("src"), options(&url("purge-src"))).unwrap();
    let backup_url = url("purge");
    let e = BackupEngine::open(&CapacityOptions::new(&backup_url)).unwrap();
    for round in 0..3u64 {
        load(&db, round * 2000..round * 2000 + 4000, &format!("r{round}"));
        e.create(
            &db,
            &BackupOptions {
                app_metadata: format!("round {round}"),
                ..Default::default()
            },
        )
        .unwrap();
    }
    let want = contents(&db);
    // An interrupted backup's uploads.
    let t = tier(&backup_url);
    t.put(
        &t.path("private/123/MANIFEST-000009"),
        bytes::Bytes::from_static(b"x"),
    )
    .unwrap();
    t.put(
        &t.path("shared/00000000-1.sst"),
        bytes::Bytes::from_static(b"y"),
    )
    .unwrap();
    let listed = e.list().unwrap();
    assert_eq!(
        listed.iter().map(|b| b.id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(listed[2].info.as_ref().unwrap().app_metadata, "round 2");
    let p = e.purge(1).unwrap();
    assert_eq!(p.deleted_backups, vec![1, 2]);
    assert_eq!(e.list().unwrap().len(), 1);
    let report = e.verify(None, &Default::default()).unwrap();
    assert!(report[0].damaged.is_empty());
    // Exactly the files backup 3 names are left.
    assert_eq!(list_objects(&backup_url).len(), report[0].files, "{p:?}");
    let r = restore_and_open(&e, None, &d.path().join("r"), &url("purge-r"));
    assert_eq!(contents(&r), want);
    r.close().unwrap();
    let e2 = e.delete(3).unwrap();
    assert_eq!(e2.deleted_backups, vec![3]);
    assert!(
        list_objects(&backup_url).is_empty(),
        "{:?}",
        list_objects(&backup_url)
    );
    let err = e.delete(3).unwrap_err();
    assert_eq!(err.kind(), strata::ErrorKind::InvalidArgument, "{err}");
    let err = e.verify(Some(3), &Default::default()).unwrap_err();
    assert_eq!(
        err.kind(),
        strata::ErrorKind::InvalidArgument,
        "not damage: {err}"
    );
    let err = e
        .restore(None, &d.path().join("none"), None, &Default::default())
        .unwrap_err();
    assert!(err.to_string().contains("no backup"), "{err}");
    // Ids are never reused: the next backup is 4, though 3 was the newest and is gone.
    assert_eq!(e.create(&db, &Default::default()).unwrap().id, 4);
    db.close().unwrap();
}

/// A backup taken from outside the process that has the database open (as `strata backup
/// create` beside a server), and one of a database without a capacity tier.
#[test]
fn backups_from_outside_and_of_fast_only_databases() {
    let d = tempfile::tempdir().unwrap();
    let src_url = url("outside-src");
    let o = Options {
        capacity_gc_min_age: Duration::from_secs(30),
        ..options(&src_url)
    };
    let db = Db::open(d.path().join("src"), o.clone()).unwrap();
    load(&db, 0..6000, "a");
    db.put("tail", "in the WAL").unwrap();
    let want = contents(&db);
    let e = BackupEngine::open(&CapacityOptions::new(url("outside"))).unwrap();
    let info = e
        .create_from_dir(
            &d.path().join("src"),
            o.capacity.as_ref(),
            &Default::default(),
        )
        .unwrap();
    db.put("after", "x").unwrap();
    assert!(
        db.checkpoints().unwrap().is_empty(),
        "its checkpoint was released"
    );
    let r = restore_and_open(&e, Some(info.id), &d.path().join("r"), &url("outside-r"));
    assert_eq!(contents(&r), want);
    r.close().unwrap();
    db.close().unwrap();
    // No capacity tier: the restore needs none either.
    let fast = Db::open(d.path().join("fast"), Options::default()).unwrap();
    for i in 0..1000u64 {
        fast.put(format!("k{i}"), "v").unwrap();
    }
    fast.flush().unwrap();
    let want = contents(&fast);
    let e = BackupEngine::open(&CapacityOptions::new(url("fast"))).unwrap();
    e.create(&fast, &Default::default()).unwrap();
    fast.close().unwrap();
    e.restore(None, &d.path().join("fast-r"), None, &Default::default())
        .unwrap();
    let r = Db::open(d.path().join("fast-r"), Options::default()).unwrap();
    assert_eq!(contents(&r), want);
    r.close().unwrap();
}

/// `Db::clone_from` a database directory (sharing its capacity tier) and from a backup
/// (independent): each opens with the source's data, and writes stay apart.
#[test]
fn clones_from_a_directory_and_from_a_backup() {
    use strata::CloneSource;
    let d = tempfile::tempdir().unwrap();
    let src_url = url("clonefrom-src");
    let o = Options {
        capacity_gc_min_age: Duration::from_secs(30),
        ..options(&src_url)
    };
    let db = Db::open(d.path().join("src"), o.clone()).unwrap();
    load(&db, 0..6000, "a");
    db.compact_range(None, None).unwrap();
    let want = contents(&db);
    let fork = Db::clone_from(
        CloneSource::Dir {
            path: &d.path().join("src"),
            capacity: o.capacity.as_ref(),
        },
        d.path().join("fork"),
        options(&url("clonefrom-fork")),
    )
    .unwrap();
    assert_eq!(contents(&fork), want);
    fork.put("fork-only", "1").unwrap();
    assert_eq!(db.get("fork-only").unwrap(), None);
    assert_eq!(db.checkpoints().unwrap().len(), 1, "the clone's record");
    fork.close().unwrap();
    let e = BackupEngine::open(&CapacityOptions::new(url("clonefrom-b"))).unwrap();
    e.create(&db, &Default::default()).unwrap();
    let restored = Db::clone_from(
        CloneSource::Backup {
            engine: &e,
            id: None,
        },
        d.path().join("from-backup"),
        options(&url("clonefrom-r")),
    )
    .unwrap();
    assert_eq!(contents(&restored), want);
    restored.close().unwrap();
    db.close().unwrap();
}

/// A clone numbers its tables as its source did: when both write the same keys with values of
/// the same length, their new tables match in number, size, key range and sequence numbers.
/// Backups of both to one URL must still each restore their own values (tables are reused by
/// fingerprint only within one database, told apart by its identity).
#[test]
fn backups_of_a_clone_and_its_source_do_not_mix_their_tables() {
    use strata::CloneSource;
    let d = tempfile::tempdir().unwrap();
    let src_url = url("twins-src");
    let o = Options {
        capacity_gc_min_age: Duration::from_secs(30),
        ..options(&src_url)
    };
    let db = Db::open(d.path().join("src"), o.clone()).unwrap();
    load(&db, 0..3000, "a");
    let twin = Db::clone_from(
        CloneSource::Dir {
            path: &d.path().join("src"),
            capacity: o.capacity.as_ref(),
        },
        d.path().join("twin"),
        options(&url("twins-twin")),
    )
    .unwrap();
    let e = BackupEngine::open(&CapacityOptions::new(url("twins"))).unwrap();
    e.create(&db, &Default::default()).unwrap();
    load(&db, 0..3000, "c");
    load(&twin, 0..3000, "b");
    let from_source = e.create(&db, &Default::default()).unwrap();
    let from_twin = e.create(&twin, &Default::default()).unwrap();
    let (want_source, want_twin) = (contents(&db), contents(&twin));
    assert_ne!(want_source, want_twin);
    for (info, want, name) in [
        (&from_source, &want_source, "rs"),
        (&from_twin, &want_twin, "rt"),
    ] {
        let r = restore_and_open(
            &e,
            Some(info.id),
            &d.path().join(name),
            &url(&format!("twins-{name}")),
        );
        assert_eq!(&contents(&r), want, "backup {}", info.id);
        r.close().unwrap();
    }
    twin.close().unwrap();
    db.close().unwrap();
}
