//! Where a job runs: [`CompactionRunner`] takes a self-contained [`CompactionJob`] and returns
//! its [`CompactionResult`] (output tables written and synced, not installed). [`LocalRunner`]
//! runs it on the calling thread; a remote runner (CaaS-LSM) ships the same job to a worker and
//! returns the same result, which the engine verifies and installs with one manifest edit.
//! Depends only on the executor.

use super::executor::{run_compaction, CompactionEnv, CompactionResult};
use super::job::CompactionJob;
use crate::error::Result;

/// Executes compaction jobs.
pub trait CompactionRunner: Send + Sync {
    /// Runs `job` with the handles in `env`: its outputs are written and synced, not installed.
    /// Fails when the job does or is cancelled.
    fn run(&self, job: &CompactionJob, env: &CompactionEnv<'_>) -> Result<CompactionResult>;
    /// The runner's name: `"local"` or `"service"` (a remote runner).
    fn name(&self) -> &'static str;
}

/// Runs jobs in the calling (background) thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalRunner;

impl CompactionRunner for LocalRunner {
    fn run(&self, job: &CompactionJob, env: &CompactionEnv<'_>) -> Result<CompactionResult> {
        run_compaction(job, env)
    }
    fn name(&self) -> &'static str {
        "local"
    }
}
