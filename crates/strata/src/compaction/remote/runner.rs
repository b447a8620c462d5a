//! [`ServiceRunner`]: a [`CompactionRunner`] that sends jobs to a [`CompactionService`] and
//! runs them locally when it must. Per job: ineligible jobs (split-forest merges with early
//! cleaning, filters without a spec, a capacity tier known only as an object) run locally;
//! otherwise [`hybrid::decide`] picks; a remote job reserves table numbers from the
//! instance's counter, is started, polled until it ends, verified, and returned for the
//! engine to install. Any failure (service unreachable, "use local", a job-level failure, a
//! result that fails verification, the wait timing out) discards what the job wrote in its
//! reserved numbers and runs the job locally, so a job is never lost and never installed
//! twice.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::hybrid::{self, CompactionMode, DecisionInput, Place, Rate, Utilization};
use super::verify::verify_result;
use super::{
    CompactionService, ControlMetadata, FailureClass, JobStorage, Outcome, RemoteJob, Started,
};
use crate::compaction::{
    run_compaction, CompactionEnv, CompactionJob, CompactionResult, CompactionRunner,
};
use crate::error::{Error, Result};
use crate::tier::Tier;

/// How much of a remote result is read back before it is installed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum VerifyLevel {
    /// Every output's metadata blocks (checksummed), properties, and first and last keys: a
    /// few blocks per table. Data blocks are checksummed again whenever they are read.
    #[default]
    Metadata,
    /// Every block of every output (reads all the job wrote, through the database's link).
    Full,
}

/// How the runner reaches and uses the service.
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    /// Where jobs run: all locally, all on the service, or per job (hybrid).
    pub mode: CompactionMode,
    /// This database, as the control plane knows it.
    pub instance: String,
    /// The database directory holding fast-tier tables, as workers reach it (a shared path).
    pub fast_dir: PathBuf,
    /// The capacity tier's URL for workers; `None`: jobs touching the capacity tier run locally.
    pub capacity_url: Option<String>,
    /// The local pool's threads (`max_background_compactions`).
    pub local_threads: usize,
    /// The window of rule 1's utilization.
    pub busy_window: Duration,
    /// One `wait` call's long-poll.
    pub poll: Duration,
    /// The service unreachable for this long during a wait: run the job locally.
    pub service_timeout: Duration,
    /// A job not done after this long runs locally.
    pub job_timeout: Duration,
    /// How much of a remote result is read back before it is installed.
    pub verify: VerifyLevel,
}

impl RemoteOptions {
    /// Options with defaults: no capacity URL, one local thread, a 5 s busy window,
    /// 500 ms polls, a 3 s service timeout, a 600 s job timeout and metadata verification.
    pub fn new(mode: CompactionMode, instance: String, fast_dir: PathBuf) -> Self {
        RemoteOptions {
            mode,
            instance,
            fast_dir,
            capacity_url: None,
            local_threads: 1,
            busy_window: Duration::from_secs(5),
            poll: Duration::from_millis(500),
            service_timeout: Duration::from_secs(3),
            job_timeout: Duration::from_secs(600),
            verify: VerifyLevel::Metadata,
        }
    }
}

/// Counters of remote compaction (`DbStats::remote_compaction`).
#[derive(Default, Debug)]
pub struct RemoteCounters {
    /// Jobs run remotely whose results passed verification.
    pub remote_jobs: AtomicU64,
    /// Jobs run locally, for whatever reason (fallbacks included).
    pub local_jobs: AtomicU64,
    /// Local because the job cannot leave the process.
    pub ineligible_jobs: AtomicU64,
    /// Local by the hybrid decision.
    pub local_by_estimate: AtomicU64,
    /// Jobs the service sent back to run locally ("use local": lack of resources or draining).
    pub lack_of_resources: AtomicU64,
    /// Jobs run locally because the service could not be reached.
    pub service_unreachable: AtomicU64,
    /// Jobs run locally because they were not done after `job_timeout`.
    pub wait_timeouts: AtomicU64,
    /// Remote results that failed verification (the jobs ran locally).
    pub verify_failures: AtomicU64,
    /// Retriable job failures, absorbed by the control plane or reported.
    pub failures_retriable: AtomicU64,
    /// Solvable job failures, absorbed by the control plane or reported.
    pub failures_solvable: AtomicU64,
    /// Fatal job failures the service reported.
    pub failures_fatal: AtomicU64,
    /// Workers lost while running jobs the service then finished.
    pub workers_lost: AtomicU64,
    /// Microseconds verified remote jobs waited in the control plane's queue.
    pub queue_wait_micros: AtomicU64,
    /// Wall time of verified remote jobs in microseconds, queueing and transfer included.
    pub remote_micros: AtomicU64,
    /// Microseconds of local job runs.
    pub local_micros: AtomicU64,
    /// Input bytes workers read and output bytes they wrote for this database.
    pub transfer_read_bytes: AtomicU64,
    /// Output bytes workers wrote for this database.
    pub transfer_write_bytes: AtomicU64,
}

/// A snapshot of [`RemoteCounters`] plus the current estimates.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RemoteCompactionStats {
    /// The compaction mode: `"local"`, `"remote"` or `"hybrid"`.
    pub mode: String,
    /// The compaction service's name.
    pub service: String,
    /// Jobs run remotely whose results passed verification.
    pub remote_jobs: u64,
    /// Jobs run locally, for whatever reason (fallbacks included).
    pub local_jobs: u64,
    /// Jobs run locally because they cannot leave the process.
    pub ineligible_jobs: u64,
    /// Jobs run locally by the hybrid decision.
    pub local_by_estimate: u64,
    /// Jobs the service sent back to run locally ("use local": lack of resources or draining).
    pub lack_of_resources: u64,
    /// Jobs run locally because the service could not be reached.
    pub service_unreachable: u64,
    /// Jobs run locally because they were not done after `job_timeout`.
    pub wait_timeouts: u64,
    /// Remote results that failed verification (the jobs ran locally).
    pub verify_failures: u64,
    /// Retriable job failures, absorbed by the control plane or reported.
    pub failures_retriable: u64,
    /// Solvable job failures, absorbed by the control plane or reported.
    pub failures_solvable: u64,
    /// Fatal job failures the service reported.
    pub failures_fatal: u64,
    /// Workers lost while running jobs the service then finished.
    pub workers_lost: u64,
    /// Microseconds verified remote jobs waited in the control plane's queue.
    pub queue_wait_micros: u64,
    /// Wall time of verified remote jobs in microseconds, queueing and transfer included.
    pub remote_micros: u64,
    /// Microseconds of local job runs.
    pub local_micros: u64,
    /// Input bytes workers read for this database.
    pub transfer_read_bytes: u64,
    /// Output bytes workers wrote for this database.
    pub transfer_write_bytes: u64,
    /// Eq. 1's rates, microseconds per input MiB (0: not measured yet), for jobs writing to
    /// the fast tier and to the capacity tier.
    pub local_us_per_mib_fast: u64,
    /// Local rate of jobs writing to the capacity tier, µs per input MiB (0: not measured).
    pub local_us_per_mib_capacity: u64,
    /// Remote rate of jobs writing to the fast tier, µs per input MiB (0: not measured).
    pub remote_us_per_mib_fast: u64,
    /// Remote rate of jobs writing to the capacity tier, µs per input MiB (0: not measured).
    pub remote_us_per_mib_capacity: u64,
    /// Utilization of the local compaction pool over the busy window, in percent.
    pub local_busy_percent: u64,
}

/// Eq. 1's rates of one output tier.
#[derive(Clone, Copy, Default)]
struct Rates {
    local: Rate,
    remote: Rate,
}

struct Estimates {
    /// By the job's output tier: fast, capacity.
    rates: [Rates; 2],
    busy: Utilization,
    decisions: u64,
}

/// Which of the per-tier rates a job uses.
fn tier_index(job: &CompactionJob) -> usize {
    match job.output_tier {
        Tier::Fast => 0,
        Tier::Capacity => 1,
    }
}

/// Runs jobs on a compaction service, locally when it must; see the module docs.
pub struct ServiceRunner {
    service: Arc<dyn CompactionService>,
    opts: RemoteOptions,
    est: Mutex<Estimates>,
    counters: Arc<RemoteCounters>,
}

impl ServiceRunner {
    /// A runner sending jobs to `service` as `opts` says, with no rate measured yet.
    pub fn new(service: Arc<dyn CompactionService>, opts: RemoteOptions) -> Self {
        let busy = Utilization::new(opts.local_threads, opts.busy_window);
        ServiceRunner {
            service,
            opts,
            est: Mutex::new(Estimates {
                rates: [Rates::default(); 2],
                busy,
                decisions: 0,
            }),
            counters: Arc::default(),
        }
    }

    /// The counters behind [`ServiceRunner::stats`].
    pub fn counters(&self) -> &Arc<RemoteCounters> {
        &self.counters
    }

    /// A snapshot of the counters, the current rates and the local pool's utilization.
    pub fn stats(&self) -> RemoteCompactionStats {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut est = self.est.lock();
        let per_mib = |r: &Rate| {
            r.secs_per_byte
                .map(|s| (s * (1u64 << 20) as f64 * 1e6) as u64)
                .unwrap_or(0)
        };
        RemoteCompactionStats {
            mode: format!("{:?}", self.opts.mode).to_lowercase(),
            service: self.service.name().to_string(),
            remote_jobs: l(&c.remote_jobs),
            local_jobs: l(&c.local_jobs),
            ineligible_jobs: l(&c.ineligible_jobs),
            local_by_estimate: l(&c.local_by_estimate),
            lack_of_resources: l(&c.lack_of_resources),
            service_unreachable: l(&c.service_unreachable),
            wait_timeouts: l(&c.wait_timeouts),
            verify_failures: l(&c.verify_failures),
            failures_retriable: l(&c.failures_retriable),
            failures_solvable: l(&c.failures_solvable),
            failures_fatal: l(&c.failures_fatal),
            workers_lost: l(&c.workers_lost),
            queue_wait_micros: l(&c.queue_wait_micros),
            remote_micros: l(&c.remote_micros),
            local_micros: l(&c.local_micros),
            transfer_read_bytes: l(&c.transfer_read_bytes),
            transfer_write_bytes: l(&c.transfer_write_bytes),
            local_us_per_mib_fast: per_mib(&est.rates[0].local),
            local_us_per_mib_capacity: per_mib(&est.rates[1].local),
            remote_us_per_mib_fast: per_mib(&est.rates[0].remote),
            remote_us_per_mib_capacity: per_mib(&est.rates[1].remote),
            local_busy_percent: (est.busy.busy(Instant::now()) * 100.0) as u64,
        }
    }

    fn eligible(&self, job: &CompactionJob, env: &CompactionEnv<'_>) -> bool {
        let touches_capacity = job.output_tier == Tier::Capacity
            || job
                .inputs
                .iter()
                .any(|i| i.files.iter().any(|f| f.tier == Tier::Capacity));
        job.forest.is_none()
            && env.checkpoint.is_none()
            // A filter that cannot be described cannot run elsewhere.
            && (env.filter.is_none() || job.filter.is_some())
            && (!touches_capacity || self.opts.capacity_url.is_some())
    }

    fn run_local(&self, job: &CompactionJob, env: &CompactionEnv<'_>) -> Result<CompactionResult> {
        let start = Instant::now();
        let handle = self.est.lock().busy.begin(start);
        let r = run_compaction(job, env);
        let end = Instant::now();
        let mut est = self.est.lock();
        est.busy.end(handle, end);
        if r.is_ok() {
            est.rates[tier_index(job)]
                .local
                .observe(end - start, job.input_bytes());
        }
        drop(est);
        self.counters.local_jobs.fetch_add(1, Ordering::Relaxed);
        self.counters
            .local_micros
            .fetch_add((end - start).as_micros() as u64, Ordering::Relaxed);
        r
    }

    /// Removes whatever a failed remote job may have left under its reserved numbers.
    fn discard(
        &self,
        rj: &RemoteJob,
        reported: Option<&CompactionResult>,
        env: &CompactionEnv<'_>,
    ) {
        let store = env.tables.store();
        let reserved = rj.job.output_ids.clone().unwrap_or(0..0);
        if let Some(r) = reported {
            // Only numbers of the reservation: a bad result may name anything.
            for f in r.outputs.iter().chain(&r.fast_outputs) {
                if reserved.contains(&f.id) {
                    env.tables.evict(f.id);
                    let _ = store.remove(f.id, f.tier);
                }
            }
        }
        // Fast-tier files are cheap to look for (a worker may have moved some in before it
        // died); capacity objects nobody reported are collected by the next open's orphan
        // sweep.
        if let Some(ids) = rj.job.output_ids.clone() {
            for id in ids {
                let _ = store.remove(id, Tier::Fast);
            }
        }
    }

    fn run_remote(
        &self,
        job: &CompactionJob,
        env: &CompactionEnv<'_>,
        wait_for_worker: bool,
    ) -> Result<CompactionResult> {
        let c = &self.counters;
        let start = Instant::now();
        let bytes = job.input_bytes();
        let meta = ControlMetadata {
            wait_for_worker,
            ..ControlMetadata::of(&self.opts.instance, job)
        };
        let storage = JobStorage {
            fast_dir: self.opts.fast_dir.clone(),
            capacity_url: self.opts.capacity_url.clone(),
        };
        let per = RemoteJob::ids_reserved(job);
        let first = match env.reserve_ids {
            Some(r) => match r.reserve_ids(per) {
                Ok(first) => first,
                Err(e) => {
                    tracing::warn!(job = job.id, error = %e, "could not reserve table numbers; compacting locally");
                    return self.run_local(job, env);
                }
            },
            None => env.file_numbers.fetch_add(per, Ordering::SeqCst),
        };
        let rj = RemoteJob::new(meta, storage, job.clone(), first);
        let id = match self.service.start(&rj) {
            Ok(Started::Queued(id)) => id,
            Ok(Started::UseLocal(why)) => {
                tracing::debug!(job = job.id, %why, "compaction service: use local");
                c.lack_of_resources.fetch_add(1, Ordering::Relaxed);
                return self.replace_locally(job, env, start);
            }
            Err(e) => {
                tracing::warn!(job = job.id, error = %e, "compaction service unreachable; compacting locally");
                c.service_unreachable.fetch_add(1, Ordering::Relaxed);
                return self.run_local(job, env);
            }
        };
        let mut unreachable_since: Option<Instant> = None;
        let fallback = loop {
            if env.cancel.load(Ordering::Relaxed) {
                self.service.cancel(id);
                self.discard(&rj, None, env);
                return Err(Error::from(crate::error::ErrorRepr::Closed));
            }
            if start.elapsed() > self.opts.job_timeout {
                c.wait_timeouts.fetch_add(1, Ordering::Relaxed);
                break format!("not done after {:?}", self.opts.job_timeout);
            }
            match self.service.wait(id, self.opts.poll) {
                Ok(Outcome::Pending) => unreachable_since = None,
                Ok(Outcome::Done {
                    result,
                    attempt,
                    worker,
                    queue_wait,
                    absorbed,
                }) => {
                    c.failures_retriable
                        .fetch_add(absorbed.retriable as u64, Ordering::Relaxed);
                    c.failures_solvable
                        .fetch_add(absorbed.solvable as u64, Ordering::Relaxed);
                    c.workers_lost
                        .fetch_add(absorbed.workers_lost as u64, Ordering::Relaxed);
                    match verify_result(&rj, attempt, &result, &env.tables, self.opts.verify) {
                        Ok(()) => {
                            let took = start.elapsed();
                            self.est.lock().rates[tier_index(job)]
                                .remote
                                .observe(took, bytes);
                            c.remote_jobs.fetch_add(1, Ordering::Relaxed);
                            c.remote_micros
                                .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
                            c.queue_wait_micros
                                .fetch_add(queue_wait.as_micros() as u64, Ordering::Relaxed);
                            c.transfer_read_bytes
                                .fetch_add(result.read_bytes, Ordering::Relaxed);
                            c.transfer_write_bytes
                                .fetch_add(result.write_bytes, Ordering::Relaxed);
                            tracing::debug!(job = job.id, %worker, ?took, "remote compaction verified");
                            return Ok(result);
                        }
                        Err(e) => {
                            tracing::error!(job = job.id, %worker, error = %e, "remote compaction result failed verification; compacting locally");
                            c.verify_failures.fetch_add(1, Ordering::Relaxed);
                            self.discard(&rj, Some(&result), env);
                            return self.replace_locally(job, env, start);
                        }
                    }
                }
                Ok(Outcome::UseLocal(why)) => {
                    c.lack_of_resources.fetch_add(1, Ordering::Relaxed);
                    break why;
                }
                Ok(Outcome::Failed { class, message }) => {
                    match class {
                        FailureClass::Retriable => &c.failures_retriable,
                        FailureClass::Solvable => &c.failures_solvable,
                        FailureClass::Fatal => &c.failures_fatal,
                    }
                    .fetch_add(1, Ordering::Relaxed);
                    break format!("{} failure: {message}", class.name());
                }
                Err(e) => {
                    let since = *unreachable_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > self.opts.service_timeout {
                        c.service_unreachable.fetch_add(1, Ordering::Relaxed);
                        break format!("service unreachable: {e}");
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        };
        tracing::warn!(job = job.id, reason = %fallback, "remote compaction abandoned; compacting locally");
        self.service.cancel(id);
        self.discard(&rj, None, env);
        self.replace_locally(job, env, start)
    }

    /// Runs locally a job the service sent back, failed or did not finish, and folds the
    /// whole time since `start` — the remote attempt and the local run that replaced it —
    /// into the remote rate (eq. 1): a refusing, failing or slow service looks at least as
    /// slow as local execution, never fast (an attempt's own time alone can be milliseconds,
    /// and would set an unmeasured remote rate near zero).
    fn replace_locally(
        &self,
        job: &CompactionJob,
        env: &CompactionEnv<'_>,
        start: Instant,
    ) -> Result<CompactionResult> {
        let r = self.run_local(job, env);
        if r.is_ok() {
            self.est.lock().rates[tier_index(job)]
                .remote
                .observe(start.elapsed(), job.input_bytes());
        }
        r
    }
}

impl CompactionRunner for ServiceRunner {
    fn run(&self, job: &CompactionJob, env: &CompactionEnv<'_>) -> Result<CompactionResult> {
        if !self.eligible(job, env) {
            self.counters
                .ineligible_jobs
                .fetch_add(1, Ordering::Relaxed);
            return self.run_local(job, env);
        }
        let decision = {
            let mut est = self.est.lock();
            est.decisions += 1;
            let rates = est.rates[tier_index(job)];
            let d = DecisionInput {
                mode: self.opts.mode,
                local_busy: est.busy.busy(Instant::now()),
                local: rates.local,
                remote: rates.remote,
                bytes: job.input_bytes(),
                explore: est.decisions.is_multiple_of(hybrid::EXPLORE_EVERY),
            };
            hybrid::decide(&d)
        };
        match decision.place {
            Place::Local => {
                self.counters
                    .local_by_estimate
                    .fetch_add(1, Ordering::Relaxed);
                self.run_local(job, env)
            }
            Place::Remote => self.run_remote(job, env, decision.wait_for_worker),
        }
    }

    fn name(&self) -> &'static str {
        "service"
    }
}
