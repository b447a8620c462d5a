//! Checkpoints and clones of a two-tier database (issue 47): taken under write load, in the
//! process and from outside it; each copy opens as a database and equals its source at the
//! checkpoint's sequence, and so does a backup taken beside them, restored; the source's garbage collection keeps what a copy refers to and
//! collects it once released; copies and sources do not see each other's writes; a copy whose
//! compactions rewrote every shared table detaches. Capacity tiers are in-memory stores, or the
//! S3-compatible server the test command starts (`STRATA_S3_URL`) in the `_s3` test.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{contents, with_seed, Rng};
use strata::backup::BackupEngine;
use strata::checkpoint::{offline, CheckpointOptions};
use strata::storage::object::{CapacityOptions, CapacityTier};
use strata::tier::Tier;
use strata::{Db, Options};

const WRITERS: u64 = 3;
const KEYS_PER_WRITER: u64 = 100;

#[derive(Clone, Copy, Debug)]
enum Config {
    Leveled,
    SplitForest,
    LogStore,
    HotRap,
}

fn capacity_url(name: &str, s3: bool) -> String {
    if s3 {
        let base = std::env::var("STRATA_S3_URL").expect("STRATA_S3_URL (scripts/test.sh sets it)");
        format!("{}/{name}", base.trim_end_matches('/'))
    } else {
        format!("memory://{name}")
    }
}

fn options(cfg: Config, url: String, rng: &mut Rng) -> Options {
    let mut o = common::small_options(rng);
    o.capacity = Some(CapacityOptions::new(url));
    o.capacity_gc_min_age = Duration::ZERO;
    o.fast_levels = Some(1);
    match cfg {
        Config::Leveled => {}
        Config::SplitForest => {
            o.compaction_style = strata::CompactionStyle::SplitForest;
            o.target_file_size_base = 4096;
        }
        Config::LogStore => {
            o.fast_levels = None;
            o.capacity_levels = 1;
            o.placement_policy = strata::tier::PlacementPolicy::LogStore;
        }
        Config::HotRap => {
            o.fast_levels = None;
            o.capacity_levels = 1;
            o.hotrap.enabled = true;
            o.hotrap.promotion_cache_bytes = Some(2048);
        }
    }
    o
}

/// The objects under the capacity tier's `tables/`, as table numbers.
fn stored_tables(url: &str) -> HashSet<u64> {
    let tier = CapacityTier::open(&CapacityOptions::new(url), None, Default::default()).unwrap();
    tier.list("tables")
        .unwrap()
        .into_iter()
        .filter_map(|(n, _)| {
            n.strip_prefix("tables/")?
                .strip_suffix(".sst")?
                .parse()
                .ok()
        })
        .collect()
}

fn capacity_ids(db: &Db) -> HashSet<u64> {
    db.live_tables()
        .into_iter()
        .filter(|(_, f)| f.tier == Tier::Capacity)
        .map(|(_, f)| f.id)
        .collect()
}

fn writer_key(w: u64, j: u64) -> Vec<u8> {
    format!("w{w}-{j:03}").into_bytes()
}

/// Writer `w`'s keys after its first `n` writes (write `i` sets key `i % KEYS_PER_WRITER`).
fn writer_model(w: u64, n: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    (n.saturating_sub(KEYS_PER_WRITER)..n)
        .map(|i| {
            (
                writer_key(w, i % KEYS_PER_WRITER),
                format!("{w}:{i}").into_bytes(),
            )
        })
        .collect()
}

/// Checks that `copy` holds the preloaded keys and, of each writer, exactly a prefix of its
/// writes, the prefixes adding up to the writes up to the checkpoint's sequence.
fn check_copy(
    ctx: &str,
    copy: &BTreeMap<Vec<u8>, Vec<u8>>,
    preload: &BTreeMap<Vec<u8>, Vec<u8>>,
    base_seq: u64,
    sequence: u64,
) {
    let mut total = 0;
    for w in 0..WRITERS {
        let prefix = format!("w{w}-").into_bytes();
        let mine: BTreeMap<Vec<u8>, Vec<u8>> = copy
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let n = mine
            .values()
            .map(|v| {
                let s = std::str::from_utf8(v).unwrap();
                s.split(':').nth(1).unwrap().parse::<u64>().unwrap() + 1
            })
            .max()
            .unwrap_or(0);
        assert_eq!(
            mine,
            writer_model(w, n),
            "{ctx}: writer {w} is not a prefix of {n} writes"
        );
        total += n;
    }
    assert_eq!(
        total,
        sequence - base_seq,
        "{ctx}: the copy holds {total} writes, its sequence says {}",
        sequence - base_seq
    );
    for (k, v) in preload {
        assert_eq!(copy.get(k), Some(v), "{ctx}: preloaded key {k:?}");
    }
}

fn round_trip(cfg: Config, seed: u64, s3: bool) {
    let mut rng = Rng::new(seed);
    let d = tempfile::tempdir().unwrap();
    let src_url = capacity_url(&format!("ckpt-src-{seed}-{cfg:?}"), s3);
    let mut o = options(cfg, src_url.clone(), &mut rng);
    // The checkpoint taken from outside needs the source to keep deleted tables this long
    // (`offline::REGISTER_WITHIN`); the in-process one needs nothing.
    o.capacity_gc_min_age = Duration::from_secs(30);
    let db = Arc::new(Db::open(d.path().join("src"), o.clone()).unwrap());
    let mut preload = BTreeMap::new();
    for i in 0..3000u64 {
        let (k, v) = (
            format!("p{i:05}").into_bytes(),
            format!("v{i}-{}", rng.below(1000)).into_bytes(),
        );
        db.put(&k, &v).unwrap();
        preload.insert(k, v);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let shared_before = capacity_ids(&db);
    assert!(
        !shared_before.is_empty(),
        "{cfg:?}: the preload reached the capacity tier"
    );
    let base_seq = db.latest_sequence();

    // Writers run while both checkpoints are taken.
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) || i < 50 {
                    db.put(writer_key(w, i % KEYS_PER_WRITER), format!("{w}:{i}"))
                        .unwrap();
                    i += 1;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(30));
    let inproc = db.checkpoint(d.path().join("ck-in")).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    let outside = offline::checkpoint_dir(
        &d.path().join("src"),
        o.capacity.as_ref(),
        &d.path().join("ck-out"),
        &Default::default(),
    )
    .unwrap();
    // And a backup, an independent copy of both tiers.
    let backups = BackupEngine::open(&CapacityOptions::new(capacity_url(
        &format!("ckpt-backup-{seed}-{cfg:?}"),
        s3,
    )))
    .unwrap();
    let backup = backups.create(&db, &Default::default()).unwrap();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(
        inproc.capacity_tables > 0 && inproc.fast_tables + inproc.wal_bytes as usize > 0,
        "{inproc:?}"
    );
    let listed: Vec<u64> = db.checkpoints().unwrap().iter().map(|r| r.id).collect();
    assert_eq!(
        listed.len(),
        2,
        "{cfg:?}: both checkpoints are listed (the backup released its own)"
    );
    assert!(listed.contains(&inproc.id) && listed.contains(&outside.id));

    // The source rewrites everything: the shared tables leave its version.
    for (k, _) in preload.iter().take(1500) {
        db.put(k, b"overwritten").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let live = capacity_ids(&db);
    let kept: HashSet<u64> = shared_before.difference(&live).copied().collect();
    assert!(
        !kept.is_empty(),
        "{cfg:?}: the compaction rewrote shared tables"
    );
    let stored = stored_tables(&src_url);
    assert!(
        kept.is_subset(&stored),
        "{cfg:?}: garbage collection deleted tables a checkpoint keeps"
    );
    let source_now = contents(&db);

    for (name, info) in [("ck-in", &inproc), ("ck-out", &outside)] {
        let ctx = format!("{cfg:?} {name} seed {seed}");
        let copy_url = capacity_url(&format!("ckpt-copy-{seed}-{cfg:?}-{name}"), s3);
        let co = options(cfg, copy_url, &mut Rng::new(seed));
        let copy = Db::open(d.path().join(name), co).unwrap();
        let data = contents(&copy);
        check_copy(&ctx, &data, &preload, base_seq, info.sequence);
        // A copy's writes stay in the copy; the source's later writes never reach it.
        copy.put(b"only-in-copy", name).unwrap();
        assert_eq!(db.get(b"only-in-copy").unwrap(), None, "{ctx}");
        assert_eq!(
            copy.get(b"p00000").unwrap().as_deref(),
            preload.get(&b"p00000"[..]).map(|v| &v[..]),
            "{ctx}"
        );
        copy.close().unwrap();
    }
    assert_eq!(
        contents(&db),
        source_now,
        "{cfg:?}: the copies changed the source"
    );
    // The backup, restored after the source's compactions and garbage collection, holds
    // exactly the writes up to its sequence, in a database of its own.
    let restored_url = capacity_url(&format!("ckpt-restored-{seed}-{cfg:?}"), s3);
    let r = backups
        .restore(
            None,
            &d.path().join("restored"),
            Some(&CapacityOptions::new(&restored_url)),
            &Default::default(),
        )
        .unwrap();
    assert_eq!((r.id, r.sequence), (backup.id, backup.sequence));
    assert!(r.capacity_tables > 0, "{cfg:?}: {r:?}");
    let restored = Db::open(
        d.path().join("restored"),
        options(cfg, restored_url, &mut Rng::new(seed)),
    )
    .unwrap();
    check_copy(
        &format!("{cfg:?} backup seed {seed}"),
        &contents(&restored),
        &preload,
        base_seq,
        backup.sequence,
    );
    assert!(!d.path().join("restored/PARENT").exists(), "independent");
    restored.close().unwrap();

    // The copy opened as a database rewrites every shared table: it detaches and its record
    // goes; the source then collects what only that record kept.
    {
        let copy_url = capacity_url(&format!("ckpt-copy-{seed}-{cfg:?}-ck-in"), s3);
        let copy = Db::open(
            d.path().join("ck-in"),
            options(cfg, copy_url, &mut Rng::new(seed)),
        )
        .unwrap();
        for (k, _) in preload.iter() {
            copy.put(k, b"copy").unwrap();
        }
        copy.flush().unwrap();
        copy.compact_range(None, None).unwrap();
        copy.wait_for_compactions().unwrap();
        copy.close().unwrap();
    }
    let parent = std::fs::read(d.path().join("ck-in").join("PARENT")).unwrap();
    let link = strata::checkpoint::ParentLink::decode(&parent, "PARENT").unwrap();
    assert!(
        link.tables.is_empty(),
        "{cfg:?}: the copy detached: {link:?}"
    );
    let ids: Vec<u64> = db.checkpoints().unwrap().iter().map(|r| r.id).collect();
    assert_eq!(
        ids,
        vec![outside.id],
        "{cfg:?}: a detached copy's record is gone"
    );
    // Releasing the other: nothing keeps the old tables any more, but they stay for the
    // minimum age from the release, across a reopen too (another process may have read a
    // manifest naming them).
    for r in db.checkpoints().unwrap() {
        assert!(db.release_checkpoint(r.id).unwrap());
    }
    assert!(db.checkpoints().unwrap().is_empty());
    assert!(
        kept.is_subset(&stored_tables(&src_url)),
        "{cfg:?}: the minimum age holds"
    );
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
    let db = Db::open(d.path().join("src"), o.clone()).unwrap();
    assert!(
        kept.is_subset(&stored_tables(&src_url)),
        "{cfg:?}: deferred at open"
    );
    assert!(db.stats().tier.capacity_gc_pending_tables >= kept.len() as u64);
    assert_eq!(contents(&db), source_now);
    db.close().unwrap();
    // Without a minimum age the next open's garbage collection deletes them.
    let mut now = o;
    now.capacity_gc_min_age = Duration::ZERO;
    let db = Db::open(d.path().join("src"), now).unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(
        stored_tables(&src_url),
        capacity_ids(&db),
        "{cfg:?}: released tables collected"
    );
    assert_eq!(contents(&db), source_now);
}

/// In-process checkpoints taken again and again while compactions run with no minimum age:
/// each copy opens and holds exactly the writes up to its sequence; once released, what only
/// the checkpoints kept is collected at once.
#[test]
fn checkpoints_race_compactions_and_release_collects_at_once() {
    for seed in common::seeds(1) {
        with_seed("checkpoint", seed, || race(seed));
    }
}

fn race(seed: u64) {
    let mut rng = Rng::new(seed);
    let d = tempfile::tempdir().unwrap();
    let url = capacity_url(&format!("ckpt-race-{seed}"), false);
    let o = options(Config::Leveled, url.clone(), &mut rng);
    let db = Arc::new(Db::open(d.path().join("src"), o.clone()).unwrap());
    let base = db.latest_sequence();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.put(format!("k{:05}", i % 4000), format!("{i}")).unwrap();
                i += 1;
            }
        })
    };
    let mut taken = Vec::new();
    for n in 0..6 {
        std::thread::sleep(Duration::from_millis(40));
        let floor = db.latest_sequence();
        let info = db.checkpoint(d.path().join(format!("ck{n}"))).unwrap();
        assert!(info.sequence >= floor);
        taken.push(info);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    for (n, info) in taken.iter().enumerate() {
        let url = capacity_url(&format!("ckpt-race-{seed}-{n}"), false);
        let copy = Db::open(
            d.path().join(format!("ck{n}")),
            options(Config::Leveled, url, &mut Rng::new(seed)),
        )
        .unwrap();
        let data = contents(&copy);
        // Write i sets k(i % 4000) to i: the copy holds writes 0..writes, no more, no less.
        let writes = info.sequence - base;
        for (k, v) in &data {
            let i: u64 = std::str::from_utf8(v).unwrap().parse().unwrap();
            let j: u64 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            assert_eq!(i % 4000, j, "ck{n}");
            assert!(
                i < writes,
                "ck{n}: write {i} is past the checkpoint ({writes} writes)"
            );
            assert!(
                i + 4000 >= writes,
                "ck{n}: {k:?} holds the overwritten write {i}"
            );
        }
        assert_eq!(data.len() as u64, writes.min(4000), "ck{n}");
        copy.close().unwrap();
    }
    for (n, info) in taken.iter().enumerate() {
        // A copy whose own compactions (when it was opened) rewrote every shared table
        // detached and deleted its record already.
        let link = std::fs::read(d.path().join(format!("ck{n}/PARENT"))).unwrap();
        let detached = strata::checkpoint::ParentLink::decode(&link, "PARENT")
            .unwrap()
            .tables
            .is_empty();
        assert!(db.release_checkpoint(info.id).unwrap() || detached, "ck{n}");
    }
    assert_eq!(
        stored_tables(&url),
        capacity_ids(&db),
        "released tables are collected at once"
    );
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
}

#[test]
fn checkpoints_under_write_load_leveled() {
    for seed in common::seeds(1) {
        with_seed("checkpoint", seed, || {
            round_trip(Config::Leveled, seed, false)
        });
    }
}

#[test]
fn checkpoints_under_write_load_split_forest() {
    for seed in common::seeds(1) {
        with_seed("checkpoint", seed, || {
            round_trip(Config::SplitForest, seed, false)
        });
    }
}

#[test]
fn checkpoints_under_write_load_logstore() {
    for seed in common::seeds(1) {
        with_seed("checkpoint", seed, || {
            round_trip(Config::LogStore, seed, false)
        });
    }
}

#[test]
fn checkpoints_under_write_load_hotrap() {
    for seed in common::seeds(1) {
        with_seed("checkpoint", seed, || {
            round_trip(Config::HotRap, seed, false)
        });
    }
}

#[test]
fn checkpoints_on_the_s3_server() {
    if std::env::var("STRATA_S3_URL").is_err() {
        eprintln!("STRATA_S3_URL is not set: run through scripts/test.sh for the S3 checks");
        return;
    }
    for seed in common::seeds(1) {
        with_seed("checkpoint", seed, || {
            round_trip(Config::Leveled, seed, true)
        });
    }
}

/// Without a checkpoint the same compaction's inputs are collected at once (minimum age 0):
/// the protection above is the registry's doing, not a leak.
#[test]
fn without_a_checkpoint_obsolete_tables_are_collected() {
    let mut rng = Rng::new(1);
    let d = tempfile::tempdir().unwrap();
    let url = capacity_url(&format!("ckpt-none-{}", std::process::id()), false);
    let db = Db::open(d.path(), options(Config::Leveled, url.clone(), &mut rng)).unwrap();
    for round in 0..2 {
        for i in 0..2000u64 {
            db.put(format!("k{i:05}"), format!("{round}")).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
    }
    db.wait_for_compactions().unwrap();
    db.flush().unwrap(); // a reap after the last install
    assert_eq!(stored_tables(&url), capacity_ids(&db));
}

/// With the default minimum age the inputs of a compaction outlive it (a reader that read the
/// old manifest has that long to record what it needs); the next open collects them.
#[test]
fn the_minimum_age_defers_deletion_and_open_collects() {
    let mut rng = Rng::new(2);
    let d = tempfile::tempdir().unwrap();
    let url = capacity_url(&format!("ckpt-age-{}", std::process::id()), false);
    let mut o = options(Config::Leveled, url.clone(), &mut rng);
    o.capacity_gc_min_age = Duration::from_secs(3600);
    let db = Db::open(d.path(), o.clone()).unwrap();
    for round in 0..2 {
        for i in 0..2000u64 {
            db.put(format!("k{i:05}"), format!("{round}")).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let live = capacity_ids(&db);
    let stored = stored_tables(&url);
    assert!(
        stored.len() > live.len() && live.is_subset(&stored),
        "{stored:?} vs {live:?}"
    );
    db.close().unwrap();
    // Found unreferenced at open: deferred by the minimum age again, then collected.
    let db = Db::open(d.path(), o.clone()).unwrap();
    assert!(stored_tables(&url).len() > capacity_ids(&db).len());
    db.close().unwrap();
    o.capacity_gc_min_age = Duration::ZERO;
    let db = Db::open(d.path(), o).unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(stored_tables(&url), capacity_ids(&db));
}

/// Releasing a checkpoint whose directory is still opened as a database would break it; a
/// checkpoint names a new directory; bad records are reported, not guessed at.
#[test]
fn misuse_is_refused_with_a_clear_error() {
    let mut rng = Rng::new(3);
    let d = tempfile::tempdir().unwrap();
    let url = capacity_url(&format!("ckpt-misuse-{}", std::process::id()), false);
    let o = options(Config::Leveled, url.clone(), &mut rng);
    let db = Db::open(d.path().join("src"), o.clone()).unwrap();
    for i in 0..3000u64 {
        db.put(format!("k{i:05}"), "v").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    std::fs::create_dir(d.path().join("taken")).unwrap();
    let e = db.checkpoint(d.path().join("taken")).unwrap_err();
    assert_eq!(e.kind(), strata::ErrorKind::AlreadyExists, "{e}");
    let info = db.checkpoint(d.path().join("ck")).unwrap();
    // Opened without a capacity tier of its own, or with the source's: refused.
    let mut bare = o.clone();
    bare.capacity = None;
    let e = Db::open(d.path().join("ck"), bare).err().unwrap();
    assert!(e.to_string().contains("capacity tier of its own"), "{e}");
    let e = Db::open(d.path().join("ck"), o.clone()).err().unwrap();
    assert!(e.to_string().contains("another prefix"), "{e}");
    // A checkpoint of an unopened checkpoint shares the same source under a record of its
    // own: it outlives the first one's release.
    let ck2 = offline::checkpoint_dir(
        &d.path().join("ck"),
        None,
        &d.path().join("ck2"),
        &CheckpointOptions::default(),
    )
    .unwrap();
    assert_eq!(ck2.capacity_tables, info.capacity_tables);
    let want = contents(&db);
    assert!(db.release_checkpoint(info.id).unwrap());
    assert!(!db.release_checkpoint(info.id).unwrap());
    for round in 0..2 {
        for i in 0..3000u64 {
            db.put(format!("k{i:05}"), format!("{round}")).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
    }
    let own = |n: &str| {
        let mut o = o.clone();
        o.capacity = Some(CapacityOptions::new(capacity_url(
            &format!("ckpt-misuse-{n}-{}", std::process::id()),
            false,
        )));
        o
    };
    let copy = Db::open(d.path().join("ck2"), own("ck2")).unwrap();
    assert_eq!(contents(&copy), want);
    copy.close().unwrap();
    // The first copy's record is released: opening it is refused (its tables may go).
    let e = Db::open(d.path().join("ck"), own("ck")).err().unwrap();
    assert!(e.to_string().contains("released or expired"), "{e}");
    // A copy that wrote tables of its own names two places: checkpoints of it are refused.
    // It rewrites the tables holding its first 100 keys only, so it still shares the rest.
    let copy = Db::open(d.path().join("ck2"), own("ck2")).unwrap();
    for i in 0..100u64 {
        copy.put(format!("k{i:05}"), "mine").unwrap();
    }
    copy.flush().unwrap();
    copy.compact_range(Some(b"k00000"), Some(b"k00099"))
        .unwrap();
    copy.wait_for_compactions().unwrap();
    let own_tables = copy
        .live_tables()
        .into_iter()
        .filter(|(_, f)| f.tier == Tier::Capacity)
        .count();
    copy.close().unwrap();
    let link = std::fs::read(d.path().join("ck2/PARENT")).unwrap();
    let link = strata::checkpoint::ParentLink::decode(&link, "PARENT").unwrap();
    assert!(
        !link.tables.is_empty() && own_tables > link.tables.len(),
        "{link:?}"
    );
    let e = offline::checkpoint_dir(
        &d.path().join("ck2"),
        None,
        &d.path().join("ck3"),
        &CheckpointOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("one source"), "{e}");
    // Even detached, a copy is never opened on its source's prefix.
    let e = Db::open(d.path().join("ck2"), o).err().unwrap();
    assert!(e.to_string().contains("another prefix"), "{e}");
}

/// Expired checkpoints stop protecting and are deleted from the registry.
#[test]
fn expired_checkpoints_lapse() {
    let mut rng = Rng::new(4);
    let d = tempfile::tempdir().unwrap();
    let url = capacity_url(&format!("ckpt-expiry-{}", std::process::id()), false);
    let db = Db::open(
        d.path().join("src"),
        options(Config::Leveled, url, &mut rng),
    )
    .unwrap();
    db.put("a", "1").unwrap();
    let o = CheckpointOptions {
        expires_after: Some(Duration::from_millis(200)),
        ..Default::default()
    };
    let info = db.checkpoint_with(d.path().join("ck"), &o).unwrap();
    assert!(info.expires_unix_ms.is_some());
    assert_eq!(db.checkpoints().unwrap().len(), 1);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        db.checkpoints().unwrap().is_empty(),
        "an expired checkpoint is not listed"
    );
}

/// A database without a capacity tier keeps its registry in its directory; the copy holds
/// links to its tables and a copy of its WAL, and opens without any capacity tier.
#[test]
fn fast_only_databases_checkpoint_too() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(d.path().join("src"), Options::default()).unwrap();
    for i in 0..1000u64 {
        db.put(format!("k{i:04}"), format!("{i}")).unwrap();
    }
    db.flush().unwrap();
    db.put("tail", "in the WAL").unwrap();
    let o = CheckpointOptions {
        log_size_for_flush: 0,
        ..Default::default()
    };
    let info = db.checkpoint_with(d.path().join("ck"), &o).unwrap();
    assert_eq!(info.capacity_tables, 0);
    assert!(info.fast_tables >= 2, "flushed first: {info:?}");
    let want = contents(&db);
    db.put("after", "x").unwrap();
    let copy = Db::open(d.path().join("ck"), Options::default()).unwrap();
    assert_eq!(contents(&copy), want);
    assert_eq!(db.checkpoints().unwrap()[0].id, info.id);
    assert!(d.path().join("src/checkpoints").is_dir());
}

/// A taker killed after renaming its copy into place but before completing the record leaves a
/// whole copy with an incomplete record: the copy's first open completes the record (with the
/// expiry the taker asked for), unless the record is about to lapse.
#[test]
fn a_copy_in_place_whose_taker_stopped_completes_at_open() {
    let mut rng = Rng::new(5);
    let d = tempfile::tempdir().unwrap();
    let url = capacity_url(&format!("ckpt-rollfwd-{}", std::process::id()), false);
    let o = options(Config::Leveled, url.clone(), &mut rng);
    let db = Db::open(d.path().join("src"), o.clone()).unwrap();
    for i in 0..3000u64 {
        db.put(format!("k{i:05}"), "v").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let want = contents(&db);
    let tier = CapacityTier::open(&CapacityOptions::new(&url), None, Default::default()).unwrap();
    let registry = strata::checkpoint::Registry::new(
        &d.path().join("src"),
        strata::storage::default_storage(),
        Some(tier),
    );
    let hour = Duration::from_secs(3600);
    let mut ids = Vec::new();
    for (name, lapses_in) in [("ck", 6 * hour), ("late", Duration::from_secs(60))] {
        let asked = CheckpointOptions {
            expires_after: Some(hour),
            ..Default::default()
        };
        let info = db.checkpoint_with(d.path().join(name), &asked).unwrap();
        assert!(info.capacity_tables > 0, "{info:?}");
        // Undo the completion, as a kill between the rename and it would have left it.
        let mut rec = registry.get(info.id).unwrap().unwrap();
        rec.complete = false;
        rec.expires_after_ms = Some(hour.as_millis() as u64);
        rec.expires_unix_ms =
            Some(strata::checkpoint::now_unix_ms() + lapses_in.as_millis() as u64);
        registry.update(&rec).unwrap();
        ids.push(info.id);
    }
    assert!(
        db.checkpoints().unwrap().is_empty(),
        "incomplete: not listed"
    );
    let mut own = o.clone();
    own.capacity = Some(CapacityOptions::new(format!("{url}-copy")));
    let copy = Db::open(d.path().join("ck"), own.clone()).unwrap();
    assert_eq!(contents(&copy), want);
    copy.close().unwrap();
    let rec = registry.get(ids[0]).unwrap().unwrap();
    assert!(rec.complete, "{rec:?}");
    assert_eq!(
        rec.expires_unix_ms,
        Some(rec.created_unix_ms + hour.as_millis() as u64),
        "the expiry its taker asked for"
    );
    assert_eq!(db.checkpoints().unwrap().len(), 1);
    // One about to lapse may lose its tables any moment: refused.
    let e = Db::open(d.path().join("late"), own).err().unwrap();
    assert!(e.to_string().contains("lapsed or is about to"), "{e}");
    db.close().unwrap();
}
