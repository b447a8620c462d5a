//! The object-store log location's tests: segments, reads, renames, the lease and deferred
//! WAL deletions.
use super::*;
use crate::storage::LocalFs;

fn store(name: &str) -> (tempfile::TempDir, ObjectLogStorage) {
    let dir = tempfile::tempdir().unwrap();
    let c = super::super::CapacityOptions::new(format!("memory://log-test-{name}"));
    let tier = CapacityTier::open(&c, None, Default::default()).unwrap();
    (dir, ObjectLogStorage::new(tier, Arc::new(LocalFs)))
}

/// A WAL file this storage created keeps its objects for the minimum age after its
/// removal, deleted by a later deletion or rename once due (not by a WAL's creation); one
/// an earlier process wrote, and every other file, goes at once.
#[test]
fn a_removed_wal_file_outlives_its_removal_by_the_minimum_age() {
    let (dir, s) = store("log-min-age");
    let s = s.with_log_min_age(Duration::from_millis(600));
    let p = |n: &str| dir.path().join(n);
    let write = |s: &ObjectLogStorage, name: &str| {
        let mut f = s.create(&p(name)).unwrap();
        f.append(b"synced").unwrap();
        f.sync().unwrap();
    };
    let remote = |name: &str| !s.segments(name).unwrap().is_empty();
    write(&s, "000001.log");
    write(&s, "MANIFEST-000002");
    s.remove(&p("000001.log")).unwrap();
    s.remove(&p("MANIFEST-000002")).unwrap();
    assert!(remote("000001.log"), "deleted before its minimum age");
    assert!(!p("000001.log").exists(), "the staged copy stays");
    assert!(!remote("MANIFEST-000002"));
    assert_eq!(s.deferred_log_deletions(), 1);
    std::thread::sleep(Duration::from_millis(700));
    // Creating a WAL sends none (it may be on a write's path); a deletion does.
    write(&s, "000003.log");
    assert!(remote("000001.log"), "deleted by a WAL's creation");
    s.remove(&p("MANIFEST-000005")).unwrap();
    assert!(!remote("000001.log"), "never deleted");
    assert_eq!(s.deferred_log_deletions(), 0);
    // A WAL file an earlier process wrote (another storage here) goes at once.
    let (_dir2, other) = store("log-min-age");
    let other = other.with_log_min_age(Duration::from_secs(600));
    write(&other, "000007.log");
    drop(other);
    assert!(remote("000007.log"));
    s.remove(&p("000007.log")).unwrap();
    assert!(!remote("000007.log"), "an earlier process's WAL was kept");
    assert!(remote("000003.log"));
}

#[test]
fn one_database_at_a_time_writes_a_location_across_nodes() {
    // Two nodes: staging directories of their own, one object-store location.
    let (dir_a, a) = store("lease");
    let (dir_b, b) = store("lease");
    let (a, b) = (
        a.with_lease_ttl(Duration::from_secs(3)),
        b.with_lease_ttl(Duration::from_secs(3)),
    );
    let lock_a = a.lock(&dir_a.path().join("LOCK")).unwrap();
    let e = b.lock(&dir_b.path().join("LOCK")).err().expect("held by a");
    assert_eq!(e.kind(), crate::ErrorKind::Locked, "{e}");
    let mut f = a.create(&dir_a.path().join("000001.log")).unwrap();
    f.append(b"acknowledged").unwrap();
    f.sync().unwrap();
    drop(lock_a);
    // Released: the other node takes it at once and reads what the first one synced.
    let _lock_b = b.lock(&dir_b.path().join("LOCK")).unwrap();
    assert_eq!(
        b.read_all(&dir_b.path().join("000001.log")).unwrap(),
        b"acknowledged"
    );
}

#[test]
fn a_database_whose_lease_is_taken_over_fails_its_next_sync() {
    let (dir, s) = store("lease-lost");
    let s = s.with_lease_ttl(Duration::from_secs(3));
    let _lock = s.lock(&dir.path().join("LOCK")).unwrap();
    let mut f = s.create(&dir.path().join("000002.log")).unwrap();
    f.append(b"one").unwrap();
    f.sync().unwrap();
    // Another node takes every next generation (as after a long pause of this one).
    for (name, _) in s.tier.list("LEASE/").unwrap() {
        let g: u64 = name.rsplit('/').next().unwrap().parse().unwrap();
        for n in g + 1..g + 50 {
            let p = s.tier.path(&format!("LEASE/{n:020}"));
            s.tier
                .put_if_absent(&p, Bytes::from_static(b"other"), None)
                .unwrap();
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let e = loop {
        f.append(b"more").unwrap();
        match f.sync() {
            Err(e) => break e,
            Ok(()) => assert!(std::time::Instant::now() < deadline, "never fenced"),
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(e.kind(), crate::ErrorKind::Fenced, "{e}");
}

/// A request that ran past the lease's validity (a slow store, a starved renewal) is sent
/// again under a renewed lease, a bounded number of times; a lost lease is not retried.
#[test]
fn a_request_past_the_lease_is_resent_under_a_renewed_one() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let (dir, s) = store("lease-deadline");
    let s = s.with_lease_ttl(Duration::from_secs(3));
    let _lock = s.lock(&dir.path().join("LOCK")).unwrap();
    let late = || -> crate::Error { ErrorRepr::LeaseDeadline("late".into()).into() };
    let calls = AtomicU32::new(0);
    let r = leased(&s.lease, |until| {
        assert!(until.is_some(), "a leased request has a deadline");
        match calls.fetch_add(1, Ordering::Relaxed) {
            0 => Err(late()),
            _ => Ok(7),
        }
    });
    assert_eq!((r.unwrap(), calls.load(Ordering::Relaxed)), (7, 2));
    calls.store(0, Ordering::Relaxed);
    let e = leased(&s.lease, |_| -> Result<()> {
        calls.fetch_add(1, Ordering::Relaxed);
        Err(late())
    })
    .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Locked, "{e}");
    assert_eq!(calls.load(Ordering::Relaxed), 3, "bounded");
    calls.store(0, Ordering::Relaxed);
    let e = leased(&s.lease, |_| -> Result<()> {
        calls.fetch_add(1, Ordering::Relaxed);
        Err(ErrorRepr::Locked("taken over".into()).into())
    })
    .unwrap_err();
    assert_eq!(
        (e.kind(), calls.load(Ordering::Relaxed)),
        (crate::ErrorKind::Locked, 1)
    );
}

#[test]
fn the_database_directory_spelled_otherwise_is_no_separate_location() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let storage: Arc<dyn Storage> = Arc::new(LocalFs);
    let at = |loc: PathBuf| {
        let opts = crate::Options {
            wal_location: Some(loc),
            ..Default::default()
        };
        log_location(&db, &storage, &opts, Default::default())
            .unwrap()
            .1
    };
    assert_eq!(at(db.join(".")), db);
    assert_eq!(at(dir.path().join("x/../db")), dir.path().join("x/../db")); // `..` kept
    assert_eq!(at(dir.path().join("log")), dir.path().join("log"));
}

#[test]
fn a_file_of_many_segments_reads_back_whole_and_in_ranges() {
    let (dir, s) = store("many");
    let p = dir.path().join("000009.log");
    let mut f = s.create(&p).unwrap();
    let mut want = Vec::new();
    // More segments than reads in flight, of uneven sizes (one empty sync among them).
    for i in 0..(3 * READ_CONCURRENCY + 5) {
        let part: Vec<u8> = (0..(i * 7) % 50).map(|j| (i * 31 + j) as u8).collect();
        f.append(&part).unwrap();
        f.sync().unwrap();
        want.extend_from_slice(&part);
    }
    drop(f);
    std::fs::remove_file(&p).unwrap();
    assert_eq!(s.read_all(&p).unwrap(), want);
    let r = s.open(&p).unwrap();
    assert_eq!(r.size(), want.len() as u64);
    for (at, n) in [
        (0, want.len()),
        (3, 1),
        (40, 700),
        (want.len() - 9, 9),
        (100, 0),
    ] {
        assert_eq!(
            r.read_at(at as u64, n).unwrap().as_ref(),
            &want[at..at + n],
            "{at}+{n}"
        );
    }
    assert!(r.read_at(want.len() as u64 - 3, 4).is_err(), "past the end");
    // The buffer must hold exactly what the ranges read.
    assert!(s.tier.get_many_into(Vec::new(), 4, vec![0u8; 1]).is_err());
}

/// Ranges read many at a time land at their own offsets whatever order they complete in:
/// a tenth of the requests fail once and are retried 20 ms later, after the ranges behind
/// them have arrived.
#[test]
fn ranges_completing_out_of_order_land_at_their_offsets() {
    let mut c = super::super::CapacityOptions::new("memory://log-test-out-of-order");
    c.emulation = Some(super::super::Emulation {
        latency: std::time::Duration::from_millis(1),
        error_rate: 0.1,
        seed: 7,
        ..Default::default()
    });
    let tier = CapacityTier::open(&c, None, Default::default()).unwrap();
    let data: Vec<u8> = (0..64 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
    let p = tier.path("blob");
    tier.put(&p, Bytes::from(data.clone())).unwrap();
    let ranges: Vec<_> = (0..64u64).map(|i| (p.clone(), i * 1024, 1024)).collect();
    let got = tier
        .get_many_into(ranges, 16, vec![0u8; data.len()])
        .unwrap();
    assert!(got == data, "ranges landed out of place");
    assert!(
        tier.stats()
            .retries
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
}

#[test]
fn synced_bytes_survive_the_loss_of_the_staging_directory() {
    let (dir, s) = store("sync");
    let s = s.with_log_min_age(Duration::ZERO);
    let p = dir.path().join("000007.log");
    let mut f = s.create(&p).unwrap();
    f.append(b"hello ").unwrap();
    f.sync().unwrap();
    f.append(b"world").unwrap();
    f.flush().unwrap();
    // The local copy has everything flushed; the object store what was synced.
    assert_eq!(s.read_all(&p).unwrap(), b"hello world");
    std::fs::remove_file(&p).unwrap();
    assert_eq!(s.read_all(&p).unwrap(), b"hello ");
    // The open file (now unlinked locally) still uploads at its next sync.
    f.sync().unwrap();
    assert_eq!(s.read_all(&p).unwrap(), b"hello world");
    assert_eq!(
        s.open(&p).unwrap().read_at(6, 5).unwrap().as_ref(),
        b"world"
    );
    assert!(s
        .list(dir.path())
        .unwrap()
        .contains(&"000007.log".to_string()));
    s.remove(&p).unwrap();
    assert!(!s.exists(&p).unwrap());
}

/// A file an earlier process appended to and never synced (the WAL tail open keeps):
/// `sync_file` uploads the staged bytes past its last segment, once.
#[test]
fn sync_file_uploads_what_an_ended_writer_left_staged() {
    let (dir, s) = store("sync-file");
    let p = dir.path().join("000011.log");
    let mut f = s.create(&p).unwrap();
    f.append(b"synced ").unwrap();
    f.sync().unwrap();
    f.append(b"staged").unwrap();
    f.flush().unwrap();
    drop(f);
    s.sync_file(&p).unwrap();
    s.sync_file(&p).unwrap();
    assert_eq!(s.segments("000011.log").unwrap().len(), 2);
    std::fs::remove_file(&p).unwrap();
    assert_eq!(s.read_all(&p).unwrap(), b"synced staged");
    // Without a local copy every byte is in the object store already.
    s.sync_file(&p).unwrap();
    assert_eq!(s.segments("000011.log").unwrap().len(), 2);
}

/// A segment larger than one read range comes back whole, its ranges in order.
#[test]
fn a_segment_larger_than_a_read_range_reads_back_whole() {
    let (dir, s) = store("big-segment");
    let p = dir.path().join("000012.log");
    let mut f = s.create(&p).unwrap();
    let big: Vec<u8> = (0..(2 * READ_CHUNK as usize + 12_345))
        .map(|i| (i % 251) as u8)
        .collect();
    f.append(&big).unwrap();
    f.sync().unwrap();
    f.append(b"tail").unwrap();
    f.sync().unwrap();
    drop(f);
    std::fs::remove_file(&p).unwrap();
    let got = s.read_all(&p).unwrap();
    assert_eq!(got.len(), big.len() + 4);
    assert!(got[..big.len()] == big[..] && &got[big.len()..] == b"tail");
}

#[test]
fn rename_replaces_the_target() {
    let (dir, s) = store("rename");
    for content in ["MANIFEST-000003\n", "MANIFEST-000009\n"] {
        let tmp = dir.path().join("CURRENT.tmp");
        let mut f = s.create(&tmp).unwrap();
        f.append(content.as_bytes()).unwrap();
        f.sync().unwrap();
        drop(f);
        s.rename(&tmp, &dir.path().join("CURRENT")).unwrap();
    }
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    assert_eq!(
        s.read_all(&dir.path().join("CURRENT")).unwrap(),
        b"MANIFEST-000009\n"
    );
    assert!(!s.exists(&dir.path().join("CURRENT.tmp")).unwrap());
}

/// A table upload's completion, the request that makes it visible, runs under the lease of
/// the log location: on a store slower than the lease's validity it is abandoned, the upload
/// aborted and the write failed with `LeaseDeadline` (`Locked`, which a compaction retries),
/// and the object never appears, even after whatever was left running could have landed; on a
/// fast store the same write completes. The parts (which make nothing visible) run without a
/// deadline.
#[test]
fn a_table_upload_whose_completion_would_outlive_the_lease_is_aborted() {
    use super::super::{CapacityOptions, Emulation};
    let (dir, s) = store("completion-deadline");
    let s = s.with_lease_ttl(Duration::from_millis(300));
    let _lock = s.lock(&dir.path().join("LOCK")).unwrap();
    let mut c = CapacityOptions::new("memory://completion-deadline-tables");
    c.part_size = 1024;
    c.emulation = Some(Emulation::default());
    let tables = CapacityTier::open(&c, None, Default::default()).unwrap();
    tables.set_write_fence(s.lease.clone());
    let write = |name: &str| -> Result<()> {
        let mut w = tables.writer(name);
        // Two whole parts and a short last one.
        w.append(&[7u8; 2500])?;
        w.sync()
    };
    let objects = || tables.list("").unwrap();
    write("000001.sst").unwrap();
    assert_eq!(objects(), vec![("000001.sst".to_string(), 2500)]);
    let slow = Emulation {
        latency: Duration::from_millis(900),
        ..Default::default()
    };
    tables.emulation().unwrap().set(slow);
    let e = write("000002.sst").expect_err("completed past the lease");
    assert!(matches!(e.repr(), ErrorRepr::LeaseDeadline(_)), "{e}");
    assert_eq!(e.kind(), crate::ErrorKind::Locked);
    tables.emulation().unwrap().set(Emulation::default());
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(
        objects(),
        vec![("000001.sst".to_string(), 2500)],
        "the late completion made its object visible"
    );
}
