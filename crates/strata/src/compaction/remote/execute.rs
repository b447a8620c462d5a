//! Runs a [`RemoteJob`] on a compaction worker (a CaaS-LSM Compaction Service Agent) from the
//! job alone: capacity-tier inputs are read from the object store directly, fast-tier inputs
//! from the instance's directory through a path shared with the worker.
//!
//! Invariants: a job naming a directory or capacity URL outside the worker's roots is refused
//! before anything is read; outputs take the attempt's reserved table numbers; fast-tier
//! outputs are written in the worker's scratch directory and moved into the instance's
//! directory only when the whole job succeeded (capacity outputs are multipart uploads,
//! visible only when complete); a failed job leaves nothing behind but what a crash leaves,
//! which the instance's next open collects. Depends on the executor and the storage layer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::Mutex;

use super::RemoteJob;
use crate::cache::TableCache;
use crate::compaction::filter::{self, CompactionFilter, FilterSpec};
use crate::compaction::{run_compaction, CompactionEnv, CompactionResult};
use crate::error::{Error, Result};
use crate::merge::MergeOperator;
use crate::stats::EngineStats;
use crate::storage::object::{CapacityOptions, CapacityTier};
use crate::storage::Storage;
use crate::tier::{local_path, TableStore, TablesConfig, Tier};

/// Capacity tiers (object-store connections) a worker keeps open at once.
const MAX_CAPACITY_TIERS: usize = 64;

/// Rebuilds a compaction filter from its spec (an embedder's registry of named filters).
pub type FilterFactory = dyn Fn(&FilterSpec) -> Result<Arc<dyn CompactionFilter>> + Send + Sync;

/// Rebuilds a merge operator from its name (an embedder's registry of named operators).
pub type MergeFactory = dyn Fn(&str) -> Option<Arc<dyn MergeOperator>> + Send + Sync;

/// A worker's configuration and the connections it keeps between jobs.
pub struct WorkerEnv {
    /// Directories and URL prefixes (`s3://bucket/prefix`, `file:///dir`, `memory://name`)
    /// jobs may name; nothing else is read or written.
    roots: Vec<String>,
    scratch: PathBuf,
    storage: Arc<dyn Storage>,
    filters: Option<Arc<FilterFactory>>,
    merges: Option<Arc<MergeFactory>>,
    capacity: Mutex<HashMap<String, Arc<CapacityTier>>>,
}

impl WorkerEnv {
    /// A worker writing its staging files under `scratch`, which is created; staging files a
    /// previous run of the worker left (it was killed mid-job) are removed.
    pub fn new(roots: Vec<String>, scratch: PathBuf, storage: Arc<dyn Storage>) -> Result<Self> {
        if roots.is_empty() {
            return Err(Error::invalid(
                "a compaction worker needs at least one root",
            ));
        }
        storage.create_dir_all(&scratch)?;
        for name in storage.list(&scratch)? {
            if name.starts_with("job-") {
                remove_dir(&storage, &scratch.join(&name));
            }
        }
        Ok(WorkerEnv {
            roots,
            scratch,
            storage,
            filters: None,
            merges: None,
            capacity: Mutex::new(HashMap::new()),
        })
    }

    /// Named filters beyond the built-in ones.
    pub fn with_filters(mut self, f: Arc<FilterFactory>) -> Self {
        self.filters = Some(f);
        self
    }

    /// Named merge operators beyond the built-in ones ([`crate::merge::from_name`]).
    pub fn with_merge_operators(mut self, f: Arc<MergeFactory>) -> Self {
        self.merges = Some(f);
        self
    }

    fn merge_operator(&self, name: &str) -> Result<Arc<dyn MergeOperator>> {
        self.merges
            .as_ref()
            .and_then(|f| f(name))
            .or_else(|| crate::merge::from_name(name))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown merge operator {name:?} (register it with \
                     WorkerEnv::with_merge_operators)"
                ))
            })
    }

    /// The directory the worker stages its files under (one `job-*` subdirectory per job).
    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// Refuses a job naming a location outside the roots. Directories are compared after
    /// resolving symbolic links (a link inside a root must not lead out of it); URLs must be
    /// in canonical form (no dot segments, escapes of them, backslashes, query or fragment)
    /// and lie under a root URL component-wise.
    pub fn check_paths(&self, job: &RemoteJob) -> Result<()> {
        let dir = std::fs::canonicalize(&job.storage.fast_dir).map_err(|e| {
            Error::invalid(format!(
                "job names directory {}: {e}",
                job.storage.fast_dir.display()
            ))
        })?;
        let dir_ok = self.dir_roots().any(|r| dir.starts_with(&r));
        if !dir_ok {
            return Err(Error::invalid(format!(
                "job names directory {} outside this worker's roots",
                job.storage.fast_dir.display()
            )));
        }
        if let Some(url) = &job.storage.capacity_url {
            if !self.url_allowed(url) {
                return Err(Error::invalid(format!(
                    "job names capacity tier {url:?} outside this worker's roots"
                )));
            }
        }
        Ok(())
    }

    /// Root directories, with symbolic links resolved.
    fn dir_roots(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.roots
            .iter()
            .filter(|r| !r.contains("://"))
            .map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| PathBuf::from(r)))
    }

    fn url_allowed(&self, raw: &str) -> bool {
        let Ok(u) = url::Url::parse(raw) else {
            return false;
        };
        // What the store will open must be exactly what is checked here.
        let lower = raw.to_ascii_lowercase();
        if u.as_str() != raw
            || u.query().is_some()
            || u.fragment().is_some()
            || lower.contains("%2e")
            || lower.contains("%2f")
            || lower.contains("%5c")
            || raw.contains('\\')
            || u.path_segments()
                .is_some_and(|mut s| s.any(|x| x == ".." || x == "."))
        {
            return false;
        }
        if u.scheme() == "file" {
            let Ok(p) = u.to_file_path() else {
                return false;
            };
            // The directory may not exist yet; resolve what does.
            let p = std::fs::canonicalize(&p).unwrap_or(p);
            if self.dir_roots().any(|r| p.starts_with(&r)) {
                return true;
            }
        }
        self.roots.iter().filter(|r| r.contains("://")).any(|r| {
            let Ok(root) = url::Url::parse(r) else {
                return false;
            };
            let segs = |x: &url::Url| -> Vec<String> {
                x.path_segments()
                    .map(|s| s.filter(|p| !p.is_empty()).map(str::to_string).collect())
                    .unwrap_or_default()
            };
            let (rs, us) = (segs(&root), segs(&u));
            root.scheme() == u.scheme()
                && root.host_str() == u.host_str()
                && root.port() == u.port()
                && us.len() >= rs.len()
                && us[..rs.len()] == rs[..]
        })
    }

    fn capacity(&self, url: &str) -> Result<Arc<CapacityTier>> {
        let mut m = self.capacity.lock();
        if let Some(c) = m.get(url) {
            return Ok(c.clone());
        }
        // Each tier owns a small runtime: keep a bounded number of them.
        if m.len() >= MAX_CAPACITY_TIERS {
            m.clear();
        }
        let c = CapacityTier::open(&CapacityOptions::new(url), None, Default::default())?;
        m.insert(url.to_string(), c.clone());
        Ok(c)
    }

    fn filter(&self, spec: &FilterSpec) -> Result<Arc<dyn CompactionFilter>> {
        match &self.filters {
            Some(f) => f(spec).or_else(|_| filter::from_spec(spec)),
            None => filter::from_spec(spec),
        }
    }
}

fn remove_dir(storage: &Arc<dyn Storage>, dir: &Path) {
    if let Ok(names) = storage.list(dir) {
        for n in names {
            let _ = storage.remove(&dir.join(n));
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Runs attempt `attempt` of `job`; `name` names its staging directory (unique per attempt).
/// Returns the outputs in place, ready for the instance to verify and install.
pub fn execute(
    job: &RemoteJob,
    attempt: u32,
    name: &str,
    env: &WorkerEnv,
    cancel: &AtomicBool,
) -> Result<CompactionResult> {
    job.validate()?;
    env.check_paths(job)?;
    let ids = job.attempt_ids(attempt)?;
    let capacity = job
        .storage
        .capacity_url
        .as_deref()
        .map(|u| env.capacity(u))
        .transpose()?;
    let staging = env.scratch.join(format!("job-{name}"));
    env.storage.create_dir_all(&staging)?;
    let stats = Arc::new(EngineStats::default());
    let store = TableStore::new(TablesConfig {
        dir: job.storage.fast_dir.clone(),
        fast: env.storage.clone(),
        capacity,
        meta: None,
        data_cache: None,
        stats: stats.tier.clone(),
        shared: None,
    })
    .with_staging(staging.clone());
    let tables = Arc::new(TableCache::new(Arc::new(store), 1024, None, stats));
    let filter = job.job.filter.as_ref().map(|s| env.filter(s)).transpose();
    let merge = job
        .job
        .merge_operator
        .as_deref()
        .map(|n| env.merge_operator(n))
        .transpose();
    let r = filter.and_then(|filter| {
        let merge = merge?;
        let cenv = CompactionEnv {
            tables,
            output_tier: job.job.output_tier,
            file_numbers: Arc::new(AtomicU64::new(ids.start)),
            id_limit: Some(ids.end),
            reserve_ids: None,
            rate_limiter: None,
            cancel,
            filter,
            merge,
            checkpoint: None,
            prepopulate_block_cache: false,
        };
        run_compaction(&job.job, &cenv)
    });
    let r = r.and_then(|r| {
        publish(env, &staging, &job.storage.fast_dir, &r)?;
        Ok(r)
    });
    remove_dir(&env.storage, &staging);
    r
}

/// Deletes the outputs of an attempt the control plane did not accept (it gave the job to
/// another worker, or the instance gave up on it): they were never installed.
pub fn discard(job: &RemoteJob, r: &CompactionResult, env: &WorkerEnv) {
    for f in r.outputs.iter().chain(&r.fast_outputs) {
        let res = match f.tier {
            Tier::Fast => env.storage.remove(&local_path(&job.storage.fast_dir, f.id)),
            Tier::Capacity => match job.storage.capacity_url.as_deref().map(|u| env.capacity(u)) {
                Some(Ok(c)) => c.delete(&c.path(&crate::tier::object_name(f.id))),
                Some(Err(e)) => Err(e),
                None => Ok(()),
            },
        };
        if let Err(e) = res {
            tracing::warn!(table = f.id, error = %e, "could not delete a discarded output");
        }
    }
}

/// Moves the fast-tier outputs from staging into the instance's directory.
fn publish(env: &WorkerEnv, staging: &Path, dir: &Path, r: &CompactionResult) -> Result<()> {
    let fast: Vec<u64> = r
        .outputs
        .iter()
        .chain(&r.fast_outputs)
        .filter(|f| f.tier == Tier::Fast)
        .map(|f| f.id)
        .collect();
    if fast.is_empty() {
        return Ok(());
    }
    let s = &env.storage;
    let mut moved = Vec::new();
    let res = (|| -> Result<()> {
        for id in &fast {
            let (from, to) = (local_path(staging, *id), local_path(dir, *id));
            // Never replace a file: the numbers are reserved for this attempt, so one that
            // exists is someone else's.
            if s.exists(&to)? {
                return Err(Error::invalid(format!(
                    "output table {id} already exists in {}",
                    dir.display()
                )));
            }
            if s.rename(&from, &to).is_err() {
                // Another file system: copy and sync.
                let bytes = s.read_all(&from)?;
                let mut w = s.create(&to)?;
                w.append(&bytes)?;
                w.sync()?;
            }
            moved.push(to);
        }
        s.sync_dir(dir)
    })();
    if res.is_err() {
        for p in moved {
            let _ = s.remove(&p);
        }
    }
    res
}
