//! Remote compaction (CaaS-LSM §4): the engine's side of compaction as a service.
//!
//! Owns the wire-independent parts: [`RemoteJob`] (a [`CompactionJob`] made self-contained
//! with its [`ControlMetadata`], where its tables live and the table numbers it may take),
//! the [`CompactionService`] trait (`start` / `wait`, CaaS-LSM's two interfaces; the gRPC
//! client in `strata-compaction` implements it), the [`ServiceRunner`] that decides local or
//! remote per job ([`hybrid`]), verifies a remote result before the engine installs it
//! ([`verify`]) and falls back to local execution on any failure, and [`execute`], which runs
//! a job on a worker given only the job and the worker's configuration.
//!
//! Invariants: a remote job's outputs take table numbers from the range reserved for its
//! attempt, so they never collide with the instance's own tables or another attempt's; a
//! result is returned to the engine (and installed) only once, after verification; a job that
//! fails remotely in any way runs locally, so no job is lost. Depends on the executor, the
//! table store and cache, and `storage`; never on `db` or on any RPC crate.

pub mod execute;
pub mod hybrid;
pub mod runner;
pub mod verify;

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use super::executor::CompactionResult;
use super::job::{CompactionJob, CompactionReason};
use crate::error::{Error, ErrorKind, Result};

pub use execute::{discard, execute, FilterFactory, WorkerEnv};
pub use hybrid::{CompactionMode, Place};
pub use runner::{RemoteCounters, RemoteOptions, ServiceRunner, VerifyLevel};

/// The version tag of an encoded [`RemoteJob`].
pub const JOB_FORMAT: &str = "strata.compaction-job.v1";

/// Encoded jobs larger than this are refused (hot-key sets and promoted records are the
/// only unbounded parts).
pub const MAX_JOB_BYTES: usize = 64 << 20;

/// Attempts a control plane may make for one job; each takes its own table numbers.
pub const MAX_ATTEMPTS: u32 = 4;

/// What the control plane schedules by (CaaS-LSM §4.2): it never decodes the job itself.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ControlMetadata {
    /// The database instance that submitted the job.
    pub instance: String,
    /// Why the job runs.
    pub reason: CompactionReason,
    /// Input levels, newest first.
    pub input_levels: Vec<u32>,
    /// The level the outputs go to.
    pub output_level: u32,
    /// The picker's score (scheduling priority).
    pub score: f64,
    /// Total bytes of the input tables.
    pub input_bytes: u64,
    /// Number of input tables.
    pub input_files: u32,
    /// The job went remote because remote is the faster side (remote mode, hybrid rule 1 or
    /// 3, or local unmeasured and the job too large to measure it on; [`hybrid::Decision`]):
    /// while the workers are above the CPU limit it waits in
    /// the queue instead of coming back as "lack of resources" (a local run of a
    /// capacity-tier job crosses the instance's slow link). Memory above the limit, too
    /// little free memory or disk, or no workers still send it back.
    #[serde(default)]
    pub wait_for_worker: bool,
}

impl ControlMetadata {
    /// The metadata of `job`, submitted by `instance` (`wait_for_worker` unset).
    pub fn of(instance: &str, job: &CompactionJob) -> Self {
        ControlMetadata {
            instance: instance.to_string(),
            reason: job.reason,
            input_levels: job.inputs.iter().map(|i| i.level as u32).collect(),
            output_level: job.output_level as u32,
            score: job.score,
            input_bytes: job.input_bytes(),
            input_files: job.inputs.iter().map(|i| i.files.len() as u32).sum(),
            wait_for_worker: false,
        }
    }

    /// Triggered by a user (`Db::compact_range`) rather than by the background.
    pub fn manual(&self) -> bool {
        self.reason == CompactionReason::Manual
    }
}

/// Where a job's tables live, as the instance names them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobStorage {
    /// The database directory holding fast-tier tables (a path shared with the worker).
    pub fast_dir: PathBuf,
    /// The capacity tier's URL, when the database has one.
    pub capacity_url: Option<String>,
}

/// A compaction job as shipped to a worker.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RemoteJob {
    /// [`JOB_FORMAT`].
    pub format: String,
    /// What the control plane schedules the job by.
    pub meta: ControlMetadata,
    /// Where the job's tables live.
    pub storage: JobStorage,
    /// `job.output_ids` is the whole reserved range: [`MAX_ATTEMPTS`] slices of
    /// `ids_per_attempt` numbers.
    pub job: CompactionJob,
    /// Table numbers each attempt may use ([`RemoteJob::ids_needed`]).
    pub ids_per_attempt: u64,
}

impl RemoteJob {
    /// Table numbers one attempt may use: enough for every input byte to be rewritten into
    /// target-size tables, twice over (hot routing splits a table's worth into two streams).
    pub fn ids_needed(job: &CompactionJob) -> u64 {
        let tables = job.input_bytes() / job.target_file_size.max(1);
        2 * (tables + job.inputs.iter().map(|i| i.files.len() as u64).sum::<u64>()) + 8
    }

    /// Table numbers to reserve for `job`: [`MAX_ATTEMPTS`] attempts' worth.
    pub fn ids_reserved(job: &CompactionJob) -> u64 {
        Self::ids_needed(job) * MAX_ATTEMPTS as u64
    }

    /// The job made self-contained: `first_id` starts a reserved range of
    /// [`RemoteJob::ids_reserved`] table numbers.
    pub fn new(
        meta: ControlMetadata,
        storage: JobStorage,
        mut job: CompactionJob,
        first_id: u64,
    ) -> Self {
        let per = Self::ids_needed(&job);
        job.output_ids = Some(first_id..first_id.saturating_add(Self::ids_reserved(&job)));
        RemoteJob {
            format: JOB_FORMAT.to_string(),
            meta,
            storage,
            job,
            ids_per_attempt: per,
        }
    }

    /// The table numbers attempt `attempt` (0-based) writes its outputs with.
    pub fn attempt_ids(&self, attempt: u32) -> Result<Range<u64>> {
        let all = self
            .job
            .output_ids
            .clone()
            .ok_or_else(|| Error::invalid("remote job without reserved table numbers"))?;
        let past = || {
            Error::invalid(format!(
                "attempt {attempt} is past the job's reserved table numbers"
            ))
        };
        let start = self
            .ids_per_attempt
            .checked_mul(attempt as u64)
            .and_then(|o| all.start.checked_add(o))
            .ok_or_else(past)?;
        let end = start.checked_add(self.ids_per_attempt).ok_or_else(past)?;
        if attempt >= MAX_ATTEMPTS || end > all.end {
            return Err(past());
        }
        Ok(start..end)
    }

    /// The job as JSON, as [`RemoteJob::decode`] reads it.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a job always serializes")
    }

    /// Decodes and validates an untrusted job description.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.len() > MAX_JOB_BYTES {
            return Err(Error::invalid(format!(
                "job description of {} bytes exceeds {MAX_JOB_BYTES}",
                bytes.len()
            )));
        }
        let j: RemoteJob = serde_json::from_slice(bytes)
            .map_err(|e| Error::invalid(format!("undecodable job description: {e}")))?;
        j.validate()?;
        Ok(j)
    }

    /// Structural checks (the worker also checks paths against its roots).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid(format!("job description: {m}")));
        if self.format != JOB_FORMAT {
            return bad(format!("format {:?}, expected {JOB_FORMAT:?}", self.format));
        }
        let j = &self.job;
        if j.inputs.is_empty() || j.inputs.iter().all(|i| i.files.is_empty()) {
            return bad("no input tables".into());
        }
        if j.forest.is_some() {
            return bad("split-forest merges run where their journal is".into());
        }
        if j.target_file_size == 0 || j.target_file_size > 4 << 30 {
            return bad(format!("target file size {}", j.target_file_size));
        }
        if !crate::options::valid_hash_ratio(j.table.data_block_hash_ratio) {
            return bad(format!(
                "data block hash ratio {}",
                j.table.data_block_hash_ratio
            ));
        }
        if j.inputs.iter().map(|i| i.files.len()).sum::<usize>() > 100_000 {
            return bad("more than 100000 input tables".into());
        }
        if !self.storage.fast_dir.is_absolute() {
            return bad("the fast directory must be an absolute path".into());
        }
        if self
            .storage
            .fast_dir
            .components()
            .any(|c| c == std::path::Component::ParentDir)
        {
            return bad("the fast directory must not contain `..`".into());
        }
        let want = self.ids_per_attempt.checked_mul(MAX_ATTEMPTS as u64);
        match (&j.output_ids, want) {
            (Some(r), Some(w))
                if self.ids_per_attempt > 0 && r.end >= r.start && r.end - r.start == w => {}
            _ => return bad("reserved table numbers do not match the attempts".into()),
        }
        let ids: std::collections::HashSet<u64> = j.input_ids().collect();
        if ids.len() != j.input_ids().count() {
            return bad("an input table is listed twice".into());
        }
        let reserved = j.output_ids.clone().unwrap_or(0..0);
        if ids.iter().any(|id| reserved.contains(id)) {
            return bad("an input table lies in the reserved output range".into());
        }
        Ok(())
    }
}

/// How bad a job-level failure is (CaaS-LSM §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FailureClass {
    /// I/O or network trouble: retry on the same worker.
    Retriable,
    /// The worker cannot run it (resources, unreachable paths): another worker.
    Solvable,
    /// Corruption or a refused job: report to the instance, which runs it locally.
    Fatal,
}

impl FailureClass {
    /// The class of `e`: I/O errors and incomplete reads are retriable, a locked or closed
    /// resource is solvable, anything else (corruption, a refused job) is fatal.
    pub fn of(e: &Error) -> FailureClass {
        match e.kind() {
            ErrorKind::Io
            | ErrorKind::Incomplete
            | ErrorKind::Busy
            | ErrorKind::TryAgain
            | ErrorKind::TimedOut => FailureClass::Retriable,
            ErrorKind::Locked | ErrorKind::Closed => FailureClass::Solvable,
            ErrorKind::Corruption
            | ErrorKind::InvalidArgument
            | ErrorKind::NotADatabase
            | ErrorKind::AlreadyExists
            | ErrorKind::Expired
            | ErrorKind::Fenced => FailureClass::Fatal,
        }
    }

    /// The class's name for logs: `"retriable"`, `"solvable"` or `"fatal"`.
    pub fn name(self) -> &'static str {
        match self {
            FailureClass::Retriable => "retriable",
            FailureClass::Solvable => "solvable",
            FailureClass::Fatal => "fatal",
        }
    }
}

/// The control plane's answer to `start`.
#[derive(Clone, Debug, PartialEq)]
pub enum Started {
    /// Queued under this id.
    Queued(u64),
    /// Run it locally: no worker can take it (lack of resources) or the service is draining.
    UseLocal(String),
}

/// Failures the control plane absorbed before a job succeeded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Absorbed {
    /// Attempts that failed with a retriable failure and were retried.
    pub retriable: u32,
    /// Attempts that failed with a solvable failure and moved to another worker.
    pub solvable: u32,
    /// Workers declared lost while running the job (it was rescheduled).
    pub workers_lost: u32,
}

/// A remote job's outcome as `wait` reports it.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Not finished yet.
    Pending,
    /// Finished: the outputs are written under the attempt's table numbers, not yet verified.
    Done {
        /// What the job produced.
        result: CompactionResult,
        /// The attempt whose table numbers the outputs use.
        attempt: u32,
        /// The worker that ran the job: its id and, when known, its name.
        worker: String,
        /// Time the job waited in the control plane's queue, over all its attempts.
        queue_wait: Duration,
        /// Failures the control plane absorbed before the job succeeded.
        absorbed: Absorbed,
    },
    /// Run it locally (no worker could take it after all).
    UseLocal(String),
    /// A fatal job-level failure, or retries exhausted.
    Failed {
        /// How bad the failure is (retries exhausted: [`FailureClass::Solvable`]).
        class: FailureClass,
        /// What went wrong.
        message: String,
    },
}

/// CaaS-LSM's `CompactionService::Start` / `WaitForComplete`, as the engine calls them.
/// Errors mean the service could not be reached (a service-level failure): the engine runs
/// the job locally and tries the service again for later jobs.
pub trait CompactionService: Send + Sync {
    /// Submits `job`: queued under an id, or sent back to run locally.
    fn start(&self, job: &RemoteJob) -> Result<Started>;
    /// Waits up to `timeout` for `id`'s outcome.
    fn wait(&self, id: u64, timeout: Duration) -> Result<Outcome>;
    /// Gives up on `id` (best effort): the engine ran it locally instead.
    fn cancel(&self, id: u64);
    /// For logs and stats.
    fn name(&self) -> &str;
}
