//! The parent: rounds, kills, verification, progress and the summary.
//!
//! A database lives for a random number of rounds (5..=44), then a fresh one is started with new
//! database fields. Each round: draw the options, write `config.json` and `state`, start the
//! child, SIGKILL it at a random moment (one round in ten early, while it opens and recovers;
//! one in ten is not killed but told to close cleanly), read its event log, reopen the database
//! in this process and [`verify`] it, close it. The first round that finds anything wrong stops
//! the run: the seed, the options and the first wrong key with its history are printed and the
//! directory is copied to `DIR/failed-SEED-ROUND`.
//!
//! Reproducibility: every choice of the parent (options, kill moments, clean rounds) and of the
//! child's threads (operations, keys) derives from the seed; thread interleavings and so what a
//! kill cuts off do not.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use strata::Db;
use strata_test_support::Rng;

use crate::config::{draw_options, StressConfig};
use crate::copies::{check_copy, CopyKind};
use crate::families::Families;
use crate::history::ViolationKind;
use crate::oracle::{parse_log, verify, Expected};
use crate::replica::{ReplicaCounts, ReplicaRound};

pub struct RunArgs {
    pub dir: PathBuf,
    pub rounds: u64,
    pub seconds_per_round: f64,
    pub seed: Option<u64>,
    pub progress: bool,
    /// Every database uses the extended WAL, every round after its first runs a replica, and
    /// every other one fails over to it (`strata stress --replica-rounds`).
    pub replica_rounds: bool,
    /// Half of the extended-WAL databases keep their log location on a `file://` object store
    /// (`strata stress --object-store-logs`); otherwise every log location is a directory.
    pub object_store_logs: bool,
    /// Every database has one or two column families besides the default, and so no extended
    /// WAL (`strata stress --column-families`); otherwise 30% of the databases without the
    /// extended WAL have them.
    pub column_families: bool,
    /// How to start a child: this program and the arguments before `--dir ...` (e.g. the
    /// `strata` binary and `["stress-child"]`).
    pub child_exe: PathBuf,
    pub child_args: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Summary {
    pub seed: u64,
    pub rounds: u64,
    pub kills: u64,
    pub lost: u64,
    pub phantoms: u64,
    /// A round failed for another reason (child crashed or hung, reopen failed).
    pub failures: u64,
    pub databases: u64,
    pub acked_batches: u64,
    pub in_flight_applied: u64,
    pub in_flight_dropped: u64,
    pub write_errors: u64,
    pub engine_warnings: u64,
    pub injected_errors: u64,
    pub injected_timeouts: u64,
    /// Capacity-tier tables found live at the reopens (summed over rounds).
    pub capacity_tables: u64,
    /// Rounds ended by deleting the database directory (extended WAL): the fast tier was
    /// rebuilt from the log location, by the reopen or first by `recover`.
    pub node_losses: u64,
    /// Node losses `recover` rebuilt with the chronological replay.
    pub node_loss_replays: u64,
    /// Node losses drawn for the replay that it refused (capacity-tier tables above a lost
    /// level), which the reopen rebuilt instead.
    pub node_loss_replays_refused: u64,
    /// Checkpoints taken of a reopened database and checked against the oracle (opened as a
    /// database with a capacity prefix of its own, written to, released).
    pub checkpoints: u64,
    /// Clones checked the same way (and compacted, releasing what they shared).
    pub clones: u64,
    /// Backups made of a reopened database, verified, restored and checked the same way.
    pub backups: u64,
    /// Rounds in which a read replica followed the child ([`crate::replica`]).
    pub replica_rounds: u64,
    /// Of those, rounds that ended by promoting the replica in place of the writer.
    pub failovers: u64,
    /// The replica's bounded-staleness checks that passed, and its refreshes and reads that
    /// failed (retried by the next check; not violations).
    pub replica: ReplicaCounts,
    /// Rounds on a database with column families besides the default ([`crate::families`]).
    pub family_rounds: u64,
}

impl Summary {
    /// The last line `strata stress` prints.
    pub fn line(&self) -> String {
        format!(
            "{} rounds, {} kills, {} lost, {} phantoms",
            self.rounds, self.kills, self.lost, self.phantoms
        )
    }

    pub fn ok(&self) -> bool {
        self.lost == 0 && self.phantoms == 0 && self.failures == 0
    }

    pub fn details(&self) -> String {
        format!(
            "seed {}: {} databases, {} rounds with column families, {} batches acknowledged and verified, in-flight batches at kills: {} applied, {} dropped; {} capacity-tier tables seen at reopens; {} node losses recovered ({} by the replay baseline, {} refused by it); {} checkpoints, {} clones and {} backups verified; {} replica rounds ({} replica checks passed, {} refreshes and {} reads failed), {} failovers to the replica; {} errors and {} timeouts injected; {} write errors, {} other engine errors (flush/compaction/read){}",
            self.seed,
            self.databases,
            self.family_rounds,
            self.acked_batches,
            self.in_flight_applied,
            self.in_flight_dropped,
            self.capacity_tables,
            self.node_losses,
            self.node_loss_replays,
            self.node_loss_replays_refused,
            self.checkpoints,
            self.clones,
            self.backups,
            self.replica_rounds,
            self.replica.checks,
            self.replica.refresh_errors,
            self.replica.read_errors,
            self.failovers,
            self.injected_errors,
            self.injected_timeouts,
            self.write_errors,
            self.engine_warnings,
            if self.failures > 0 { format!("; {} failed rounds", self.failures) } else { String::new() }
        )
    }
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// Removes a file or directory tree, if there is one.
pub(crate) fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_dir() {
        std::fs::create_dir_all(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
    } else if from.exists() {
        std::fs::copy(from, to)?;
    }
    Ok(())
}

/// How the child ended.
enum Ending {
    Killed,
    Exited(ExitStatus),
    Hung,
}

/// Waits for the child, calling `tick` every few milliseconds meanwhile.
fn wait_or_kill(
    child: &mut Child,
    kill_after: Option<Duration>,
    limit: Duration,
    tick: &mut dyn FnMut(),
) -> Ending {
    let start = Instant::now();
    loop {
        // Not when the kill is due soon: a tick (a replica check) must not delay it.
        if kill_after.is_none_or(|k| start.elapsed() + Duration::from_millis(100) < k) {
            tick();
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Ending::Exited(status);
        }
        let elapsed = start.elapsed();
        if kill_after.is_some_and(|k| elapsed >= k) || elapsed >= limit {
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
            return if kill_after.is_some() {
                Ending::Killed
            } else {
                Ending::Hung
            };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the stress test; the caller prints [`Summary::line`] last and exits 0 only if `ok()`.
pub fn run(args: RunArgs) -> anyhow::Result<Summary> {
    let seed = args.seed.unwrap_or_else(clock_seed);
    let dir = &args.dir;
    std::fs::create_dir_all(dir)?;
    let dir = &dir.canonicalize()?;
    println!(
        "strata stress: seed {seed} (replay with --seed {seed}), {} rounds of {} s in {}",
        args.rounds,
        args.seconds_per_round,
        dir.display()
    );
    let bar = if args.progress {
        let b = ProgressBar::new(args.rounds);
        if let Ok(style) = ProgressStyle::with_template(
            "{bar:30} {pos}/{len} rounds [{elapsed_precise} < {eta_precise}] {msg}",
        ) {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let mut rng = Rng::new(seed);
    let mut sum = Summary {
        seed,
        ..Default::default()
    };
    let round_ms = (args.seconds_per_round * 1000.0).max(100.0) as u64;
    let mut db_cfg: Option<StressConfig> = None;
    let mut expected = Expected::new(0);
    let mut db_rounds_left = 0u64;
    for round in 0..args.rounds {
        if db_rounds_left == 0 {
            for p in [
                "db",
                "cap",
                "wal",
                "replica",
                "state",
                "events.log",
                "config.json",
            ] {
                remove(&dir.join(p))?;
            }
            db_cfg = None;
            db_rounds_left = 5 + rng.below(40);
            sum.databases += 1;
        }
        db_rounds_left -= 1;
        let fresh_database = db_cfg.is_none();
        let mut cfg = draw_options(&mut rng);
        if args.replica_rounds {
            cfg.extended_wal = true;
            cfg.families = 0;
        } else if args.column_families {
            cfg.extended_wal = false;
            cfg.families = cfg.families.max(1);
        }
        cfg.wal_object_store &= args.object_store_logs;
        match &db_cfg {
            Some(d) => cfg.keep_database(d),
            None => {
                expected = Expected::new(cfg.num_keys);
                db_cfg = Some(cfg.clone());
            }
        }
        cfg.sync_on_object_store();
        sum.family_rounds += (cfg.families > 0) as u64;
        let mut problems: Vec<String> = Vec::new();
        // Replica rounds: a replica follows the child (the database must exist to be
        // followed). A round that loses the node and would rebuild it by opening fails over
        // to the replica instead (with `--replica-rounds`, every other replica round loses
        // the node so). Drawn only for the rounds that can have one, so that seeds of runs
        // without the extended WAL replay as before.
        let mut replica = None;
        if cfg.extended_wal && !fresh_database && (args.replica_rounds || rng.chance(50)) {
            sum.replica_rounds += 1;
            if args.replica_rounds && sum.replica_rounds % 2 == 1 {
                cfg.node_loss = true;
                cfg.node_loss_recovery = crate::config::NodeLossRecovery::Open;
            }
            match ReplicaRound::open(dir, &cfg, &expected.versions, rng.below(u64::MAX)) {
                Ok(r) => replica = Some(r),
                Err(e) => problems.push(format!("opening the replica failed: {e:#}")),
            }
        }
        let failover = replica.is_some()
            && cfg.node_loss
            && cfg.node_loss_recovery == crate::config::NodeLossRecovery::Open;
        let clean = rng.chance(10);
        let kill_after = if clean {
            None
        } else if rng.chance(10) {
            Some(Duration::from_millis(rng.below(300)))
        } else {
            Some(Duration::from_millis(
                300.min(round_ms / 2) + rng.below(round_ms - 300.min(round_ms / 2)),
            ))
        };
        std::fs::write(dir.join("config.json"), serde_json::to_string_pretty(&cfg)?)?;
        expected.save(&dir.join("state"))?;
        remove(&dir.join("events.log"))?;
        let events = dir.join("events.log");
        let mut replica_violation: Option<String> = None;
        let stderr = std::fs::File::create(dir.join("child.stderr"))?;
        let mut cmd = Command::new(&args.child_exe);
        cmd.args(&args.child_args)
            .arg("--dir")
            .arg(dir)
            .arg("--round")
            .arg(round.to_string());
        if clean {
            cmd.arg("--seconds").arg(args.seconds_per_round.to_string());
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", args.child_exe.display()))?;
        let limit = Duration::from_millis(round_ms) + Duration::from_secs(120);
        let ending = wait_or_kill(&mut child, kill_after, limit, &mut || {
            if let (Some(r), None) = (&mut replica, &replica_violation) {
                replica_violation = r.tick(&events).err();
            }
        });
        // The writer is gone: everything it acknowledged must reach the replica.
        if let (Some(r), None) = (&mut replica, &replica_violation) {
            replica_violation = r.check(&events, true).err();
        }
        if let Some(v) = replica_violation {
            if v.starts_with("lost") {
                sum.lost += 1;
            } else {
                sum.phantoms += 1;
            }
            problems.push(format!("a read on the replica was wrong: {v}"));
        }

        let text = std::fs::read_to_string(dir.join("events.log")).unwrap_or_default();
        let log = parse_log(&text).context("parsing the child's event log")?;
        match ending {
            Ending::Killed => sum.kills += 1,
            Ending::Exited(status) => {
                let fine = clean && status.success() && log.closed;
                if !fine && log.read_failures.is_empty() {
                    problems.push(format!("the child exited on its own with {status}"));
                }
            }
            Ending::Hung => problems.push(format!(
                "the child did not finish within {} s",
                limit.as_secs()
            )),
        }
        for (kind, line) in &log.read_failures {
            match kind {
                ViolationKind::Lost | ViolationKind::Unreadable => sum.lost += 1,
                ViolationKind::Phantom => sum.phantoms += 1,
            }
            problems.push(format!("a read during the run was wrong: {line}"));
        }
        sum.write_errors += log.write_errors.len() as u64;
        sum.engine_warnings += log.warnings.len() as u64;
        sum.acked_batches += log.acked.len() as u64;
        sum.injected_errors += log.injected_errors;
        sum.injected_timeouts += log.injected_timeouts;
        for b in &log.acked {
            expected.apply_acked(round, b);
        }
        if cfg.extended_wal && cfg.node_loss {
            // The node is lost: only the log location and the capacity tier remain.
            remove(&dir.join("db"))?;
            sum.node_losses += 1;
            // A failover opens the writer itself, from the log location.
            if let Some(mode) = cfg.node_loss_recovery.mode().filter(|_| !failover) {
                let replay = mode == strata::recovery::RecoveryMode::Replay;
                match strata::recovery::recover(&dir.join("db"), cfg.to_options(dir, false), mode) {
                    Ok(_) if replay => sum.node_loss_replays += 1,
                    Ok(_) => {}
                    // The replay moves every lost table to L0, which it refuses (before writing
                    // anything) while a capacity-tier table sits at or above a lost level: the
                    // open below rebuilds instead.
                    Err(e) if replay && e.kind() == strata::ErrorKind::InvalidArgument => {
                        sum.node_loss_replays_refused += 1
                    }
                    Err(e) => {
                        problems.push(format!("{mode:?} recovery after the node loss failed: {e}"))
                    }
                }
            }
        }
        let opened = match &replica {
            Some(r) if failover => {
                // The writer's node is lost; the replica's node takes over.
                remove(&dir.join("db"))?;
                let promoted = r.promote(&dir.join("db")).map_err(|e| format!("{e:#}"));
                sum.failovers += promoted.is_ok() as u64;
                promoted
            }
            // The replica stays open (idle) while the writer reopens.
            _ => Db::open(dir.join("db"), cfg.to_options(dir, false))
                .map_err(|e| format!("reopening the database failed: {e}")),
        };
        if let (Some(r), Ok(db)) = (&replica, &opened) {
            // A writer reopened on its own node with an object-store log location replays its
            // staging directory too, which may hold batches never uploaded (never
            // acknowledged): their keys may differ from what the replica last read.
            let staged: std::collections::HashSet<u64> =
                if cfg.wal_object_store && !failover && !cfg.node_loss {
                    log.in_flight
                        .iter()
                        .flat_map(|b| crate::oracle::batch_effects(&b.ops, b.seq))
                        .map(|(i, _)| i)
                        .collect()
                } else {
                    Default::default()
                };
            if let Err(e) = r.compare_with(db, &staged) {
                sum.phantoms += 1;
                problems.push(format!(
                    "the replica and the reopened database differ: {e:#}"
                ));
            }
        }
        if let Some(r) = replica.take() {
            match r.close() {
                Ok(counts) => sum.replica.add(counts),
                Err(e) => problems.push(format!("closing the replica failed: {e:#}")),
            }
        }
        match opened {
            Ok(db) => {
                sum.capacity_tables += db
                    .live_tables()
                    .iter()
                    .filter(|(_, f)| f.tier == strata::tier::Tier::Capacity)
                    .count() as u64;
                let o = cfg.to_options(dir, false);
                let v = Families::open(&db, &o, cfg.families)
                    .map_err(anyhow::Error::from)
                    .and_then(|fams| verify(&db, &fams, round, &mut expected, &log.in_flight));
                // Some rounds also copy the verified database (a checkpoint, a clone or a
                // backup restored) and check the copy.
                if v.as_ref().is_ok_and(|v| v.first.is_none())
                    && !cfg.extended_wal
                    && rng.chance(25)
                {
                    let kind = CopyKind::draw(&mut rng);
                    match check_copy(kind, &db, dir, &cfg, round, &expected) {
                        Ok(()) => match kind {
                            CopyKind::Checkpoint => sum.checkpoints += 1,
                            CopyKind::Clone => sum.clones += 1,
                            CopyKind::Backup => sum.backups += 1,
                        },
                        Err(e) => problems.push(format!("{kind:?} check failed: {e:#}")),
                    }
                }
                let closed = db.close();
                match v {
                    Ok(v) => {
                        sum.lost += v.lost;
                        sum.phantoms += v.phantoms;
                        sum.in_flight_applied += v.in_flight_applied;
                        sum.in_flight_dropped += v.in_flight_dropped;
                        if let Some(first) = v.first {
                            problems.push(format!(
                                "after the kill: {} lost, {} phantoms; first wrong key: {first}",
                                v.lost, v.phantoms
                            ));
                        }
                    }
                    Err(e) => problems.push(format!("reading the reopened database failed: {e:#}")),
                }
                if let Err(e) = closed {
                    problems.push(format!("closing the reopened database failed: {e}"));
                }
            }
            Err(e) => problems.push(e),
        }
        sum.rounds += 1;
        bar.inc(1);
        bar.set_message(format!(
            "{} kills, {} lost, {} phantoms",
            sum.kills, sum.lost, sum.phantoms
        ));
        if !problems.is_empty() {
            sum.failures += 1;
            bar.abandon();
            let keep = dir.join(format!("failed-{seed}-{round}"));
            let _ = remove(&keep);
            for p in [
                "db",
                "replica",
                "cap",
                "wal",
                "state",
                "events.log",
                "config.json",
                "child.stderr",
            ] {
                let _ = copy_tree(&dir.join(p), &keep.join(p));
            }
            let child_err = std::fs::read_to_string(dir.join("child.stderr")).unwrap_or_default();
            let tail: Vec<&str> = child_err.lines().rev().take(20).collect();
            eprintln!(
                "strata stress: FAILED in round {round} (seed {seed}, replay with --seed {seed})"
            );
            for p in &problems {
                eprintln!("  {p}");
            }
            eprintln!("  options: {}", cfg.describe());
            if !tail.is_empty() {
                eprintln!("  child stderr (last lines):");
                for l in tail.iter().rev() {
                    eprintln!("    {l}");
                }
            }
            eprintln!("  database copy kept in {}", keep.display());
            return Ok(sum);
        }
    }
    bar.finish_and_clear();
    Ok(sum)
}
