//! Tests of `follow`: the follower against a log location that changes between its reads.

use std::sync::atomic::{AtomicU8, Ordering};

use super::*;
use crate::replica::source::DirSource;
use crate::stats::RequestCounts;
use crate::storage::default_storage;
use crate::storage::object::CapacityOptions;
use crate::{Db, WriteBatch, WriteOptions};

/// A log location read in the order a listing refresh reads it, while the writer moves
/// on: in phase 0 everything comes from `before`; in phase 1 `CURRENT` and the manifest
/// still do, until the first log is read, and from then on (phase 2) everything comes
/// from `after`. It says listing is not cheap, as an object store does, so the
/// directory-only check for a missing first log is off.
struct Racing {
    before: DirSource,
    after: DirSource,
    phase: AtomicU8,
}

impl Racing {
    fn pick(&self, name: &str) -> &DirSource {
        match self.phase.load(Ordering::SeqCst) {
            0 => &self.before,
            1 if name.ends_with(".log") => {
                self.phase.store(2, Ordering::SeqCst);
                &self.after
            }
            1 => &self.before,
            _ => &self.after,
        }
    }
}

impl LogSource for Racing {
    fn list(&self) -> Result<Vec<Listed>> {
        match self.phase.load(Ordering::SeqCst) {
            0 => self.before.list(),
            _ => self.after.list(),
        }
    }
    fn fetch_listed(&self, file: &Listed, from: u64) -> Result<Vec<u8>> {
        match self.phase.load(Ordering::SeqCst) {
            // The manifest as it was: what it held past `from` (the listing is newer).
            1 if !file.name.ends_with(".log") => self.before.fetch_new(&file.name, from),
            _ => self.pick(&file.name).fetch_listed(file, from),
        }
    }
    fn fetch_new(&self, name: &str, from: u64) -> Result<Vec<u8>> {
        self.pick(name).fetch_new(name, from)
    }
    fn fetch_whole(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.pick(name).fetch_whole(name)
    }
    fn requests(&self) -> RequestCounts {
        RequestCounts::default()
    }
    fn cheap_listing(&self) -> bool {
        false
    }
}

fn logs_in(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| parse_log(&e.unwrap().file_name().to_string_lossy()))
        .collect();
    v.sort();
    v
}

fn put(db: &Db, k: &[u8], v: &[u8]) {
    let mut b = WriteBatch::new();
    b.put(k, v);
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    db.write_opt(b, &sync).unwrap();
}

/// A following replica lists the location again (here forced; in life after a writer
/// restart or falling behind its retention). It reads the manifest (version V: first log
/// N, last sequence counting N's write `a`, since a memtable flushed after `a` went into
/// N), then lists: meanwhile the writer flushed N, released it in a later edit, deleted
/// it, and wrote `b` into a later log. The memtables' sequence check cannot see the gap
/// (`b` follows V's last sequence) and V's tables are already rebuilt, so only reading
/// the manifest again after the logs keeps the replica from serving `b` without `a`.
#[test]
fn a_listing_never_serves_later_logs_on_a_version_whose_first_log_is_gone() {
    // The precondition (`a` written before the flush edit naming its log) is a race with
    // the flush thread, won almost always; a setup that lost it is done again.
    for attempt in 0..5 {
        let base = tempfile::tempdir().unwrap();
        let log = base.path().join("log");
        let mut o = Options {
            extended_wal: true,
            extended_wal_ttl: None,
            wal_location: Some(log.clone()),
            capacity_levels: 1,
            capacity_gc_min_age: Duration::ZERO,
            wal_log_min_age: Duration::ZERO,
            write_buffer_size: 4096,
            max_write_buffer_number: 4,
            level0_file_num_compaction_trigger: 64,
            level0_slowdown_writes_trigger: 64,
            level0_stop_writes_trigger: 128,
            ..Options::default()
        };
        std::fs::create_dir_all(base.path().join("cap")).unwrap();
        o.capacity = Some(CapacityOptions::new(format!(
            "file://{}",
            base.path().join("cap").display()
        )));
        let db = Db::open(base.path().join("db"), o.clone()).unwrap();
        put(&db, b"x", &[7u8; 8192]); // fills the memtable
        put(&db, b"a", b"1"); // seals it: `a` goes into a new log, N
        db.wait_for_compactions().unwrap();
        let before = base.path().join("before");
        std::fs::create_dir_all(&before).unwrap();
        for e in std::fs::read_dir(&log).unwrap() {
            let e = e.unwrap();
            if e.file_name() != "LOCK" {
                std::fs::copy(e.path(), before.join(e.file_name())).unwrap();
            }
        }
        let n = *logs_in(&before).last().unwrap();

        let storage = default_storage();
        let source = Arc::new(Racing {
            before: DirSource::new(&before, storage.clone()),
            after: DirSource::new(&log, storage.clone()),
            phase: AtomicU8::new(0),
        });
        let mut engine = o.clone();
        engine.wal_location = None;
        engine.extended_wal = false;
        let replica = base.path().join("replica");
        let mut f = Follower::new(
            source.clone(),
            storage,
            &replica,
            engine,
            Duration::from_secs(3600),
        )
        .unwrap();
        f.refresh(true).unwrap();
        let v = f.versions().unwrap();
        if v.log_number != n || v.last_sequence < 2 {
            eprintln!(
                "attempt {attempt}: the flush edit came before `a` (log {} / {n}, last \
                 sequence {}); again",
                v.log_number, v.last_sequence
            );
            db.close().unwrap();
            continue;
        }

        // The writer moves on: N flushed (into the capacity tier), released and deleted.
        db.compact_range(None, None).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while logs_in(&log).contains(&n) {
            assert!(Instant::now() < deadline, "log {n} was not deleted");
            std::thread::sleep(Duration::from_millis(10));
        }
        put(&db, b"b", b"2");

        source.phase.store(1, Ordering::SeqCst);
        f.relist = true;
        match f.refresh(false) {
            // Refusing to serve is safe; serving the gap is not.
            Err(e) => eprintln!("refresh failed: {e}"),
            Ok((view, _)) => {
                let starts = f.versions().unwrap().log_number;
                assert!(
                    starts > n,
                    "the replica serves logs after {n} (sequence {}) on a version that \
                     starts at log {starts}, which is gone: `a` is missing under `b`",
                    view.seq
                );
            }
        }
        db.close().unwrap();
        return;
    }
    panic!("the precondition never held in 5 attempts");
}
