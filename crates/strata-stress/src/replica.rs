//! Replica and failover rounds: a read replica (`Db::open_replica`) follows the child from its
//! log location and capacity tier while the child writes, and is checked against the event log
//! as RocksDB's stress test checks its secondaries; in failover rounds it is then promoted in
//! place of the killed writer, and the promoted writer is verified like any reopen.
//!
//! **Bounded staleness.** Each check reads the event log (the floor: what the child had
//! acknowledged), refreshes the replica, reads every key at one replica snapshot (a scan, and
//! point gets of a sample compared with it), then reads the event log again (the ceiling:
//! what the child had issued). Each key must hold one of its versions between the floor and
//! the ceiling: an older one is a lost write (the refresh missed an acknowledged write), any
//! other value a phantom. The replica is never older than a previous check (per key and by
//! sequence), and a batch is seen whole: if one key shows a batch's put, every key of the batch
//! shows that batch or a later version. The floor is exact because the log location is a
//! directory (an acknowledged write is in the WAL file, synced or not) or an object store
//! (`file://`) written to by a child whose every write syncs
//! ([`StressConfig::sync_on_object_store`]), and the replica probes the manifest and `CURRENT`
//! on every refresh (`manifest_probe_interval` 0), so it sees the child's restart at once.
//!
//! Depends on `strata`'s replica API and the oracle; the parent ([`crate::runner`]) drives it.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use strata::replica::{Replica, ReplicaOptions};
use strata::{Db, ReadOptions};
use strata_test_support::Rng;

use crate::config::StressConfig;
use crate::history::{Version, ViolationKind};
use crate::keys;
use crate::oracle::{batch_effects, matches, parse_log, scan_keys, Batch};

/// How often the parent checks the replica while the child runs.
const CHECK_EVERY: Duration = Duration::from_millis(60);

/// Point gets per check, compared with the scan.
const GETS_PER_CHECK: usize = 16;

/// What the replica rounds counted (summed into the run's summary).
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplicaCounts {
    /// Checks that read every key and found it within bounds.
    pub checks: u64,
    /// Refreshes that failed (the replica keeps its last state; not a violation).
    pub refresh_errors: u64,
    /// Reads that failed (a table the writer deleted under a snapshot); not a violation.
    pub read_errors: u64,
}

impl ReplicaCounts {
    pub fn add(&mut self, o: ReplicaCounts) {
        self.checks += o.checks;
        self.refresh_errors += o.refresh_errors;
        self.read_errors += o.read_errors;
    }
}

/// A replica following one round's child.
pub struct ReplicaRound {
    replica: Replica,
    /// Every key's expected version at the start of the round.
    base: Vec<Version>,
    /// Per key: the lowest version a later read may return (monotonic reads).
    lower: Vec<u64>,
    applied: u64,
    last: Option<Instant>,
    rng: Rng,
    /// Every key's value in the last check's scan (compared with the reopened database after
    /// the final check).
    last_scan: Option<BTreeMap<u64, Vec<u8>>>,
    pub counts: ReplicaCounts,
}

/// The replica's own directory.
pub fn replica_dir(dir: &Path) -> std::path::PathBuf {
    dir.join("replica")
}

impl ReplicaRound {
    /// Opens a replica of the database in `dir` (which must exist: not the first round of a
    /// database), in `dir/replica`, refreshed only by the checks.
    pub fn open(
        dir: &Path,
        cfg: &StressConfig,
        base: &[Version],
        seed: u64,
    ) -> anyhow::Result<Self> {
        let engine = cfg.to_options(dir, false);
        let wal = engine
            .wal_location
            .clone()
            .context("a replica needs the extended WAL's log location")?;
        crate::runner::remove(&replica_dir(dir))?;
        let mut o = ReplicaOptions::new(wal, replica_dir(dir));
        o.capacity = engine.capacity.clone();
        o.refresh_interval = None;
        o.manifest_probe_interval = Duration::ZERO;
        o.engine = engine;
        let replica = Db::open_replica(o).context("opening the replica")?;
        Ok(ReplicaRound {
            applied: replica.applied_sequence(),
            replica,
            base: base.to_vec(),
            lower: vec![0; base.len()],
            last: None,
            rng: Rng::new(seed),
            last_scan: None,
            counts: ReplicaCounts::default(),
        })
    }

    /// Checks the replica if one check interval passed; `Err` carries a violation.
    pub fn tick(&mut self, events: &Path) -> Result<(), String> {
        if self.last.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return Ok(());
        }
        self.last = Some(Instant::now());
        self.check(events, false)
    }

    /// One bounded-staleness check (see the module docs). `writer_gone`: the child has ended,
    /// so the refresh must succeed (a few attempts) and the scan is kept for
    /// [`ReplicaRound::compare_with`]; otherwise a failed refresh is counted and skipped.
    pub fn check(&mut self, events: &Path, writer_gone: bool) -> Result<(), String> {
        let read_log = || {
            // Bytes: a read may end inside a character of the last line, which the parser
            // drops anyway (it ends without a newline).
            let bytes = std::fs::read(events).unwrap_or_default();
            parse_log(&String::from_utf8_lossy(&bytes))
                .map_err(|e| format!("parsing the event log: {e:#}"))
        };
        let before = read_log()?;
        let mut floor = self.base.clone();
        for b in &before.acked {
            for (i, v) in batch_effects(&b.ops, b.seq) {
                floor[i as usize] = v;
            }
        }
        let mut attempt = 0;
        while let Err(e) = self.replica.refresh() {
            self.counts.refresh_errors += 1;
            attempt += 1;
            if !writer_gone {
                return Ok(());
            }
            if attempt == 5 {
                return Err(format!(
                    "phantom: the replica could not refresh after the writer ended: {e}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let snap = self.replica.snapshot();
        if snap.sequence() < self.applied {
            return Err(format!(
                "the replica went backwards: sequence {} after {}",
                snap.sequence(),
                self.applied
            ));
        }
        self.applied = snap.sequence();
        let n = self.base.len() as u64;
        let mut seen: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let scanned = (|| -> strata::Result<Option<String>> {
            let outside;
            (seen, outside) = scan_keys(snap.iter(ReadOptions::default())?, n)?;
            if let Some(k) = outside.first() {
                return Ok(Some(format!(
                    "phantom: key {:?} outside the key space on the replica",
                    String::from_utf8_lossy(k)
                )));
            }
            for _ in 0..GETS_PER_CHECK.min(n as usize) {
                let i = self.rng.below(n);
                let got = snap.get(keys::key(i))?;
                if got.as_deref() != seen.get(&i).map(|v| &v[..]) {
                    return Ok(Some(format!(
                        "phantom: replica key {} get returned {:?}, its scan {:?} (sequence {})",
                        i,
                        got.as_deref().map(keys::show),
                        seen.get(&i).map(|v| keys::show(v)),
                        snap.sequence()
                    )));
                }
            }
            Ok(None)
        })();
        match scanned {
            Ok(None) => {}
            Ok(Some(p)) => return Err(p),
            // A table the writer deleted under the snapshot (garbage collection): the next
            // check reads a newer state. Any other error is a failure.
            Err(e)
                if !writer_gone
                    && (e.is_not_found()
                        || e.is_missing_object()
                        || e.kind() == strata::ErrorKind::Incomplete) =>
            {
                self.counts.read_errors += 1;
                return Ok(());
            }
            Err(e) => return Err(format!("phantom: a read on the replica failed: {e}")),
        }
        let after = read_log()?;
        let issued: Vec<&Batch> = after.acked.iter().chain(&after.in_flight).collect();
        // Every key's versions (the round's start, then this round's, in sequence order: each
        // key has one writer thread).
        let mut versions: Vec<Vec<Version>> = self.base.iter().map(|&v| vec![v]).collect();
        for b in &issued {
            for (i, v) in batch_effects(&b.ops, b.seq) {
                versions[i as usize].push(v);
            }
        }
        for v in &mut versions {
            v.sort_by_key(|v| v.seq);
        }
        for i in 0..n {
            let (vs, obs) = (&versions[i as usize], seen.get(&i));
            let lo = floor[i as usize].seq.max(self.lower[i as usize]);
            match vs
                .iter()
                .find(|v| v.seq >= lo && matches(i, **v, obs))
                .map(|v| v.seq)
            {
                Some(s) => self.lower[i as usize] = s,
                None => {
                    let kind = match obs.and_then(|v| keys::decode_value(v)) {
                        None if obs.is_none() => ViolationKind::Lost,
                        Some((ki, seq)) if ki == i && seq < lo => ViolationKind::Lost,
                        _ => ViolationKind::Phantom,
                    };
                    return Err(format!(
                        "{}: replica key {} holds {} at sequence {}; acknowledged before the \
                         refresh: seq {} ({}), lowest allowed seq {lo}, versions {:?}",
                        if kind == ViolationKind::Lost {
                            "lost"
                        } else {
                            "phantom"
                        },
                        i,
                        obs.map(|v| keys::show(v))
                            .unwrap_or_else(|| "nothing".into()),
                        snap.sequence(),
                        floor[i as usize].seq,
                        if floor[i as usize].exists {
                            "put"
                        } else {
                            "delete"
                        },
                        vs.iter().map(|v| (v.seq, v.exists)).collect::<Vec<_>>()
                    ));
                }
            }
        }
        // Batches are seen whole.
        for b in &issued {
            let effects = batch_effects(&b.ops, b.seq);
            let shown = effects.iter().any(|&(i, v)| {
                v.exists && seen.get(&i).and_then(|x| keys::decode_value(x)) == Some((i, b.seq))
            });
            if !shown {
                continue;
            }
            for &(i, _) in &effects {
                let obs = seen.get(&i);
                if !versions[i as usize]
                    .iter()
                    .any(|v| v.seq >= b.seq && matches(i, *v, obs))
                {
                    return Err(format!(
                        "phantom: the replica shows part of batch seq {} (ops {}): key {} holds {}",
                        b.seq,
                        crate::oracle::format_ops(&b.ops),
                        i,
                        obs.map(|v| keys::show(v))
                            .unwrap_or_else(|| "nothing".into())
                    ));
                }
            }
        }
        self.counts.checks += 1;
        if writer_gone {
            self.last_scan = Some(seen);
        }
        Ok(())
    }

    /// After the final check: the database reopened (or promoted) after the writer ended
    /// holds exactly what the replica last read, since both read the same WAL, except on the
    /// keys in `staged` (written by batches never acknowledged, which a writer reopened on its
    /// own node may replay from an object-store log's staging directory). `Err`: the first
    /// difference.
    pub fn compare_with(&self, db: &Db, staged: &HashSet<u64>) -> anyhow::Result<()> {
        let Some(seen) = &self.last_scan else {
            return Ok(());
        };
        let n = self.base.len() as u64;
        // Keys outside the key space are the reopened database's verification's to report.
        let (got, _) = scan_keys(db.iter(ReadOptions::default())?, n)?;
        if let Some(i) = (0..n).find(|i| !staged.contains(i) && got.get(i) != seen.get(i)) {
            anyhow::bail!(
                "key {i}: the replica's last read after the writer ended gave {}, the reopened \
                 database holds {}",
                seen.get(&i)
                    .map(|v| keys::show(v))
                    .unwrap_or_else(|| "nothing".into()),
                got.get(&i)
                    .map(|v| keys::show(v))
                    .unwrap_or_else(|| "nothing".into())
            );
        }
        Ok(())
    }

    /// Failover: promotes the replica into `db_dir` (which must not hold a database). The
    /// replica stays open until [`ReplicaRound::close`] (its last scan is compared with the
    /// promoted writer).
    pub fn promote(&self, db_dir: &Path) -> anyhow::Result<Db> {
        self.replica
            .promote(db_dir)
            .context("promoting the replica")
    }

    /// Closes the replica.
    pub fn close(self) -> anyhow::Result<ReplicaCounts> {
        self.replica.close()?;
        Ok(self.counts)
    }
}
