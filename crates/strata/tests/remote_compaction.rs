//! Remote compaction's engine side against an in-process service that runs jobs through
//! `compaction::remote::execute` exactly as a worker process does (its own table cache and
//! capacity-tier connection, staging in a scratch directory), or misbehaves as a test asks:
//! fails jobs by class, answers "use local", is unreachable, or returns a tampered result.
//! Every database is checked against a `BTreeMap` oracle, after a reopen without the service
//! too, and for orphaned table files. (Real processes over gRPC: `strata-compaction`'s tests.)

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{contents, with_seed, Rng};
use parking_lot::Mutex;
use strata::compaction::remote::{
    execute, Absorbed, CompactionMode, CompactionService, FailureClass, Outcome, RemoteJob,
    Started, WorkerEnv,
};
use strata::compaction::TtlFilter;
use strata::storage::object::CapacityOptions;
use strata::{Db, Options};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Behaviour {
    Run,
    Fail(FailureClass),
    UseLocal,
    Unreachable,
    /// Runs the job, then reports one more entry than the first output holds.
    Tamper,
    /// Runs the job, then reports the outputs as attempt 1 (the numbers of another attempt).
    WrongAttempt,
}

struct InProcess {
    env: WorkerEnv,
    behaviour: Mutex<Behaviour>,
    done: Mutex<HashMap<u64, Outcome>>,
    next: AtomicU64,
    executed: AtomicU64,
    /// Jobs started without `wait_for_worker` (every job of a remote-mode instance has it).
    impatient: AtomicU64,
}

impl InProcess {
    fn new(roots: Vec<String>, scratch: &Path) -> Arc<Self> {
        Arc::new(InProcess {
            env: WorkerEnv::new(
                roots,
                scratch.to_path_buf(),
                strata::storage::default_storage(),
            )
            .unwrap(),
            behaviour: Mutex::new(Behaviour::Run),
            done: Mutex::default(),
            next: AtomicU64::new(1),
            executed: AtomicU64::new(0),
            impatient: AtomicU64::new(0),
        })
    }
}

impl CompactionService for InProcess {
    fn start(&self, job: &RemoteJob) -> strata::Result<Started> {
        // The job crosses a process boundary as bytes.
        let job = RemoteJob::decode(&job.encode())?;
        if !job.meta.wait_for_worker {
            self.impatient.fetch_add(1, Ordering::Relaxed);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let b = *self.behaviour.lock();
        let outcome = match b {
            Behaviour::Unreachable => {
                return Err(strata::Error::external(
                    "test service",
                    "connection refused",
                ))
            }
            Behaviour::UseLocal => return Ok(Started::UseLocal("no worker has room".into())),
            Behaviour::Fail(class) => Outcome::Failed {
                class,
                message: "injected".into(),
            },
            Behaviour::Run | Behaviour::Tamper | Behaviour::WrongAttempt => {
                let attempt = 0;
                let cancel = AtomicBool::new(false);
                match execute(
                    &job,
                    attempt,
                    &format!("{id}-{attempt}"),
                    &self.env,
                    &cancel,
                ) {
                    Ok(mut result) => {
                        self.executed.fetch_add(1, Ordering::Relaxed);
                        let mut attempt = attempt;
                        match b {
                            Behaviour::Tamper => {
                                if let Some(f) = result.outputs.first_mut() {
                                    f.num_entries += 1;
                                    result.records_in += 1;
                                }
                            }
                            Behaviour::WrongAttempt => attempt = 1,
                            _ => {}
                        }
                        Outcome::Done {
                            result,
                            attempt,
                            worker: "in-process".into(),
                            queue_wait: Duration::ZERO,
                            absorbed: Absorbed::default(),
                        }
                    }
                    Err(e) => Outcome::Failed {
                        class: FailureClass::of(&e),
                        message: e.to_string(),
                    },
                }
            }
        };
        self.done.lock().insert(id, outcome);
        Ok(Started::Queued(id))
    }

    fn wait(&self, id: u64, _timeout: Duration) -> strata::Result<Outcome> {
        Ok(self.done.lock().remove(&id).unwrap_or(Outcome::Pending))
    }

    fn cancel(&self, _id: u64) {}

    fn name(&self) -> &str {
        "in-process"
    }
}

fn options(cap: &Path, svc: Option<Arc<InProcess>>, mode: CompactionMode) -> Options {
    let mut c = CapacityOptions::new(format!("file://{}", cap.display()));
    c.part_size = 5 << 20;
    Options {
        write_buffer_size: 16 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 8 * 1024,
        block_size: 512,
        num_levels: 5,
        capacity: Some(c),
        capacity_levels: 2,
        compaction_service: svc.map(|s| s as Arc<dyn CompactionService>),
        compaction_mode: mode,
        ..Options::default()
    }
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let got = contents(db);
    assert_eq!(got.len(), model.len(), "{what}: key count");
    assert!(got == *model, "{what}: contents differ from the model");
}

/// Table files in `dir` that the live version does not name.
fn orphans(db: &Db, dir: &Path) -> Vec<String> {
    let live: std::collections::HashSet<u64> =
        db.live_tables().into_iter().map(|(_, f)| f.id).collect();
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            let id: u64 = n.strip_suffix(".sst")?.parse().ok()?;
            (!live.contains(&id)).then_some(n)
        })
        .collect()
}

fn workload(db: &Db, rng: &mut Rng, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, n: u32) {
    for i in 0..n {
        let k = format!("key{:05}", rng.below(3000)).into_bytes();
        if rng.chance(10) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("v{i}-{}", "x".repeat(rng.below(200) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
}

/// Runs the workload against a service behaving as asked; returns the statistics and how
/// many live tables are on the capacity tier.
fn run(behaviour: Behaviour, seed: u64) -> (strata::DbStats, usize) {
    let dir = tempfile::tempdir().unwrap();
    let (db_dir, cap, scratch) = (
        dir.path().join("db"),
        dir.path().join("cap"),
        dir.path().join("scratch"),
    );
    std::fs::create_dir_all(&cap).unwrap();
    let svc = InProcess::new(vec![dir.path().display().to_string()], &scratch);
    *svc.behaviour.lock() = behaviour;
    let mut rng = Rng::new(seed);
    let mut model = BTreeMap::new();
    let db = Db::open(
        &db_dir,
        options(&cap, Some(svc.clone()), CompactionMode::Remote),
    )
    .unwrap();
    workload(&db, &mut rng, &mut model, 6000);
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    check(&db, &model, &format!("{behaviour:?}"));
    assert_eq!(svc.impatient.load(Ordering::Relaxed), 0, "{behaviour:?}");
    let stats = db.stats();
    let on_capacity = db
        .live_tables()
        .iter()
        .filter(|(_, f)| f.tier == strata::tier::Tier::Capacity)
        .count();
    assert!(
        orphans(&db, &db_dir).is_empty(),
        "{behaviour:?}: orphans {:?}",
        orphans(&db, &db_dir)
    );
    db.close().unwrap();
    // The tables installed are the database's own: reopen without any service.
    let db = Db::open(&db_dir, options(&cap, None, CompactionMode::Local)).unwrap();
    check(&db, &model, &format!("{behaviour:?} reopened"));
    assert!(
        std::fs::read_dir(&scratch).unwrap().next().is_none(),
        "the worker's scratch directory is left empty"
    );
    (stats, on_capacity)
}

#[test]
fn remote_jobs_are_installed_and_survive_reopen() {
    let seed = common::seeds(1)[0];
    with_seed("remote_compaction", seed, || {
        let (s, on_capacity) = run(Behaviour::Run, seed);
        let r = s.remote_compaction.clone().expect("remote stats");
        assert!(r.remote_jobs > 0, "{r:?}");
        assert_eq!(r.local_jobs, 0, "{r:?}");
        assert!(
            r.transfer_read_bytes > 0 && r.transfer_write_bytes > 0,
            "{r:?}"
        );
        // Every capacity-tier table was uploaded by the worker, none by the instance.
        assert!(on_capacity > 0, "{s}");
        assert_eq!(s.tier.capacity_puts, 0, "{s}");
    });
}

#[test]
fn every_failure_falls_back_to_local_and_loses_nothing() {
    let seed = common::seeds(1)[0];
    with_seed("remote_compaction", seed, || {
        let cases = [
            (Behaviour::Fail(FailureClass::Fatal), "failures_fatal"),
            (
                Behaviour::Fail(FailureClass::Retriable),
                "failures_retriable",
            ),
            (Behaviour::UseLocal, "lack_of_resources"),
            (Behaviour::Unreachable, "service_unreachable"),
            (Behaviour::Tamper, "verify_failures"),
            (Behaviour::WrongAttempt, "verify_failures"),
        ];
        for (b, counter) in cases {
            let (s, _) = run(b, seed);
            let r = s.remote_compaction.expect("remote stats");
            let v = serde_json::to_value(&r).unwrap();
            assert!(
                v[counter].as_u64().unwrap() > 0,
                "{b:?}: {counter} in {r:?}"
            );
            assert_eq!(r.remote_jobs, 0, "{b:?}: {r:?}");
            assert!(r.local_jobs > 0, "{b:?}: {r:?}");
            // A remote attempt that ended in a local run counts as at least that long for
            // remote (eq. 1): a service answering at once must not look faster than local.
            // (An unreachable service is never attempted; concurrent jobs may fold in another
            // order, hence the factor 2 — an attempt's own time is ~1000x shorter.)
            if b != Behaviour::Unreachable {
                assert_eq!(r.ineligible_jobs, 0, "{b:?}: {r:?}");
                for (local, remote) in [
                    (r.local_us_per_mib_fast, r.remote_us_per_mib_fast),
                    (r.local_us_per_mib_capacity, r.remote_us_per_mib_capacity),
                ] {
                    assert!(remote * 2 >= local, "{b:?}: {r:?}");
                }
            }
        }
    });
}

#[test]
fn jobs_naming_paths_outside_the_roots_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    std::fs::create_dir_all(&cap).unwrap();
    // The worker may only touch `other`: every job is refused, compacted locally, and nothing
    // is read or written by the worker.
    let svc = InProcess::new(
        vec![other.path().display().to_string()],
        &other.path().join("scratch"),
    );
    let db = Db::open(
        dir.path().join("db"),
        options(&cap, Some(svc.clone()), CompactionMode::Remote),
    )
    .unwrap();
    let mut model = BTreeMap::new();
    workload(&db, &mut Rng::new(7), &mut model, 3000);
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    check(&db, &model, "refused");
    let r = db.stats().remote_compaction.unwrap();
    assert!(r.failures_fatal > 0 && r.remote_jobs == 0, "{r:?}");
    assert_eq!(svc.executed.load(Ordering::Relaxed), 0);
}

#[test]
fn a_ttl_filter_runs_remotely_with_the_instance_clock() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    std::fs::create_dir_all(&cap).unwrap();
    let svc = InProcess::new(
        vec![dir.path().display().to_string()],
        &dir.path().join("s"),
    );
    let mut o = options(&cap, Some(svc), CompactionMode::Remote);
    o.compaction_filter = Some(Arc::new(TtlFilter::new(Duration::from_secs(3600))));
    let db = Db::open(dir.path().join("db"), o).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for i in 0..2000u32 {
        // Even keys were written two hours ago: expired.
        let at = if i % 2 == 0 { now - 7200 } else { now };
        db.put(format!("k{i:05}"), TtlFilter::stamp(b"value", at))
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let r = db.stats().remote_compaction.unwrap();
    assert!(r.remote_jobs > 0 && r.ineligible_jobs == 0, "{r:?}");
    let left = contents(&db).len();
    assert_eq!(left, 1000, "expired values removed by the remote jobs");
}

/// An operator only this test knows: appends with "|" (the worker must be told of it).
struct Pipe;

impl strata::MergeOperator for Pipe {
    fn name(&self) -> &str {
        "test.pipe"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, strata::merge::MergeError> {
        let parts: Vec<&[u8]> = existing
            .into_iter()
            .chain(operands.iter().copied())
            .collect();
        Ok(parts.join(&b'|'))
    }
}

/// Merges into 300 keys (over some puts) on a remote-mode database with `op`; the worker knows
/// `test.pipe` only when `register`. Returns the remote statistics after a full compaction,
/// with every value checked against the model, after a reopen without the service too.
fn merge_run(
    op: Arc<dyn strata::MergeOperator>,
    register: bool,
) -> strata::compaction::remote::runner::RemoteCompactionStats {
    let dir = tempfile::tempdir().unwrap();
    let (db_dir, cap) = (dir.path().join("db"), dir.path().join("cap"));
    std::fs::create_dir_all(&cap).unwrap();
    let mut env = WorkerEnv::new(
        vec![dir.path().display().to_string()],
        dir.path().join("scratch"),
        strata::storage::default_storage(),
    )
    .unwrap();
    if register {
        env = env.with_merge_operators(Arc::new(|name: &str| {
            (name == "test.pipe").then(|| Arc::new(Pipe) as Arc<dyn strata::MergeOperator>)
        }));
    }
    let svc = Arc::new(InProcess {
        env,
        behaviour: Mutex::new(Behaviour::Run),
        done: Mutex::default(),
        next: AtomicU64::new(1),
        executed: AtomicU64::new(0),
        impatient: AtomicU64::new(0),
    });
    let mut o = options(&cap, Some(svc), CompactionMode::Remote);
    o.merge_operator = Some(op.clone());
    let db = Db::open(&db_dir, o.clone()).unwrap();
    let counter = op.name() == strata::merge::U64Add::NAME;
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng::new(7);
    for i in 0..6000u64 {
        let k = format!("key{:04}", rng.below(300)).into_bytes();
        if i % 10 == 0 {
            let v = if counter {
                i.to_le_bytes().to_vec()
            } else {
                format!("p{i}").into_bytes()
            };
            db.put(&k, &v).unwrap();
            model.insert(k, v);
            continue;
        }
        let operand = if counter {
            1u64.to_le_bytes().to_vec()
        } else {
            format!("m{i}").into_bytes()
        };
        db.merge(&k, &operand).unwrap();
        let existing = model.get(&k).map(|v| v.as_slice());
        let merged = op.full_merge(&k, existing, &[&operand]).unwrap();
        model.insert(k, merged);
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    check(&db, &model, op.name());
    let r = db.stats().remote_compaction.expect("remote stats");
    db.close().unwrap();
    o.compaction_service = None;
    o.compaction_mode = CompactionMode::Local;
    let db = Db::open(&db_dir, o).unwrap();
    check(&db, &model, &format!("{} reopened", op.name()));
    r
}

#[test]
fn merge_operands_are_folded_remotely_by_operator_name() {
    // A built-in operator: every job runs on the worker.
    let r = merge_run(Arc::new(strata::merge::U64Add), false);
    assert!(r.remote_jobs > 0 && r.local_jobs == 0, "{r:?}");
    // The embedder's operator, registered with the worker: the same.
    let r = merge_run(Arc::new(Pipe), true);
    assert!(r.remote_jobs > 0 && r.local_jobs == 0, "{r:?}");
    // Not registered: the worker refuses each job and it runs locally, losing nothing.
    let r = merge_run(Arc::new(Pipe), false);
    assert!(r.remote_jobs == 0 && r.local_jobs > 0, "{r:?}");
}
