//! The capacity tier: an object store reached through the `object_store` crate
//! (`file://`, `s3://`, `memory://`), driven from synchronous engine threads on a small tokio
//! runtime the tier owns.
//!
//! Owns [`CapacityTier`] (range GETs, single and multipart PUTs, deletes, listing, retries with
//! exponential backoff for transient errors, per-request accounting and a latency histogram),
//! [`ObjectFile`] (a table read with range GETs) and [`ObjectWriter`] (a table streamed with a
//! multipart upload in bounded memory, visible only once complete), [`EmulatedStore`]
//! (latency, bandwidth, injected faults), [`CountingStore`] (every request counted by the kind
//! S3 bills: the request bill), the request budget compactions wait for (`budget.rs`), the
//! store's health as its requests see it (up/down, probed while down; `stats/health.rs`), the
//! object-store log location and its lease (`log.rs`, `lease.rs`). Invariants: a permanent
//! error (not found, permission) is never retried; an object is complete or absent, never
//! partial; nothing waits for the budget under the database's state lock. Depends on `error`,
//! `stats` and the `Storage` traits; never on the engine above it.

mod budget;
mod counting;
mod emulated;
mod fence;
mod file;
mod lease;
mod log;

pub use crate::stats::cost::{BudgetStats, RequestBudget};
pub use budget::{budget_scope, BudgetScope};
pub use counting::CountingStore;
pub use emulated::{EmulatedStore, Emulation, EmulationStats};
pub(crate) use fence::WriteFence;
pub use file::{ObjectFile, ObjectWriter};
pub use lease::DEFAULT_TTL as DEFAULT_LEASE_TTL;
pub(crate) use log::fenced_log_location;
pub use log::{is_object_store_location, log_location, ObjectLogStorage, SEALED_LOG_MIN_AGE};

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use parking_lot::Mutex;

use crate::error::{Error, ErrorRepr, Result};
use crate::stats::health::Outcome;
use crate::stats::TierStats;

/// How the capacity tier is reached and tuned.
#[derive(Clone, Debug)]
pub struct CapacityOptions {
    /// `file:///abs/path`, `s3://bucket/prefix` (endpoint, region and credentials from the usual
    /// `AWS_*` environment variables; `AWS_ALLOW_HTTP=true` for local plain-HTTP servers), or
    /// `memory://name` (a process-wide in-memory store, for tests).
    pub url: String,
    /// Latency, bandwidth and fault emulation (benchmarks and tests). Default: none.
    pub emulation: Option<Emulation>,
    /// Multipart upload part size. Default 8 MiB (S3's minimum is 5 MiB).
    pub part_size: usize,
    /// Attempts per request for transient errors (first try included). Default 6.
    pub max_attempts: u32,
    /// Time limit of one request attempt. Default 30 s.
    pub request_timeout: Duration,
    /// Bytes fetched per request when a table is read sequentially without filling caches
    /// (compaction inputs), instead of one request per block. Default 4 MiB.
    pub readahead: usize,
}

impl CapacityOptions {
    /// Options for the store at `url`, with defaults: no emulation, 8 MiB parts, 6 attempts, a
    /// 30 s request timeout and 4 MiB readahead.
    pub fn new(url: impl Into<String>) -> Self {
        CapacityOptions {
            url: url.into(),
            emulation: None,
            part_size: 8 << 20,
            max_attempts: 6,
            request_timeout: Duration::from_secs(30),
            readahead: 4 << 20,
        }
    }
}

fn memory_registry() -> &'static Mutex<HashMap<String, Arc<object_store::memory::InMemory>>> {
    static R: OnceLock<Mutex<HashMap<String, Arc<object_store::memory::InMemory>>>> =
        OnceLock::new();
    R.get_or_init(Default::default)
}

/// Builds the store and the key prefix named by `url`.
pub fn store_from_url(url: &str) -> Result<(Arc<dyn ObjectStore>, ObjPath)> {
    let bad = |m: String| Error::invalid(format!("capacity tier URL {url:?}: {m}"));
    let u = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
    match u.scheme() {
        "memory" => {
            let name = format!("{}{}", u.host_str().unwrap_or(""), u.path());
            let store = memory_registry()
                .lock()
                .entry(name)
                .or_insert_with(|| Arc::new(object_store::memory::InMemory::new()))
                .clone();
            Ok((store, ObjPath::default()))
        }
        "file" => {
            let path = u
                .to_file_path()
                .map_err(|_| bad("not an absolute file path".into()))?;
            std::fs::create_dir_all(&path).map_err(|e| Error::io(path.display(), e))?;
            let fs = object_store::local::LocalFileSystem::new_with_prefix(&path)
                .map_err(|e| bad(e.to_string()))?;
            Ok((Arc::new(fs), ObjPath::default()))
        }
        "s3" => {
            let bucket = u.host_str().ok_or_else(|| bad("missing bucket".into()))?;
            // strata's `Retry` is the retry policy (counted, bounded per attempt, reported to
            // the tier's health). object_store's own retries run inside each of its attempts:
            // by default 10 within 3 minutes, which made a read during an outage take minutes
            // to fail. They stay, few and short, for the multipart upload calls, which only
            // object_store retries.
            let inner = object_store::RetryConfig {
                max_retries: 2,
                retry_timeout: Duration::from_secs(10),
                ..Default::default()
            };
            let mut b = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_retry(inner);
            if let Ok(ep) = std::env::var("AWS_ENDPOINT_URL") {
                b = b.with_endpoint(&ep);
                if ep.starts_with("http://") {
                    b = b.with_allow_http(true);
                }
            }
            let s3 = b.build().map_err(|e| bad(e.to_string()))?;
            let prefix = u.path().trim_matches('/');
            Ok((Arc::new(s3), ObjPath::from(prefix)))
        }
        s => Err(bad(format!("unsupported scheme {s:?}"))),
    }
}

/// Whether an error may go away if the request is repeated.
fn transient(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::Generic { .. } | object_store::Error::JoinError { .. }
    )
}

fn to_error(op: &str, path: &ObjPath, e: object_store::Error) -> Error {
    match e {
        object_store::Error::NotFound { .. } => {
            ErrorRepr::MissingObject(format!("capacity tier: {op} {path}")).into()
        }
        e => ErrorRepr::Io {
            path: format!("capacity tier {op} {path}"),
            source: std::io::Error::other(e),
        }
        .into(),
    }
}

/// How a request is retried: a per-attempt timeout, transient failures retried with backoff,
/// and with a deadline no attempt started or running past it (a leased log location's writes
/// end with the lease's validity).
#[derive(Clone)]
struct Retry {
    attempts: u32,
    timeout: Duration,
    stats: Arc<TierStats>,
    deadline: Option<Instant>,
    /// The store's URL, for health reports.
    url: Arc<str>,
}

impl Retry {
    async fn run<T, F, Fut>(&self, what: &'static str, p: &ObjPath, op: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = object_store::Result<T>>,
    {
        // 50 ms, doubling to at most 2 s: six attempts span about 1.5 s of backoff (a throttled
        // request, S3's SlowDown, gets room; an unreachable store fails in seconds).
        let mut delay = Duration::from_millis(50);
        let mut attempt = 1;
        // The last transient failure, if the previous attempt failed so.
        let mut failing: Option<String> = None;
        loop {
            let timeout = match self.deadline {
                None => self.timeout,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => self.timeout.min(left),
                    _ => {
                        // Attempts that failed until the deadline ended them: the store did
                        // not answer (a log location's requests all carry deadlines).
                        if let Some(error) = &failing {
                            self.stats
                                .health
                                .record(&self.url, Outcome::Unreachable { what, error });
                        }
                        return Err(ErrorRepr::LeaseDeadline(format!(
                            "capacity tier {what} {p}: not sent, the lease it needs expired"
                        ))
                        .into());
                    }
                },
            };
            let r = match tokio::time::timeout(timeout, op()).await {
                Ok(r) => r,
                Err(_) => Err(object_store::Error::Generic {
                    store: "strata",
                    source: format!("{what} timed out after {timeout:?}").into(),
                }),
            };
            match r {
                Ok(v) => {
                    self.stats.health.record(&self.url, Outcome::Answered);
                    return Ok(v);
                }
                Err(e) if transient(&e) && attempt < self.attempts => {
                    failing = Some(e.to_string());
                    self.stats
                        .retries
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::debug!(op = what, path = %p, attempt, error = %e, "retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                    attempt += 1;
                }
                Err(e) => return Err(failed_for_good(&self.stats, &self.url, what, p, e)),
            }
        }
    }
}

/// The error of a request that failed for good: counted, and recorded in the store's health —
/// unreachable for a transient-class error, answered otherwise (not found, a refused
/// conditional write: the store works).
fn failed_for_good(
    stats: &TierStats,
    url: &str,
    what: &'static str,
    path: &ObjPath,
    e: object_store::Error,
) -> Error {
    stats
        .errors
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let error = transient(&e).then(|| e.to_string());
    let outcome = match &error {
        Some(error) => Outcome::Unreachable { what, error },
        None => Outcome::Answered,
    };
    stats.health.record(url, outcome);
    to_error(what, path, e)
}

/// Probes a store marked down (one LIST of the tier's prefix, non-recursive), recording
/// whether it answered; sends nothing while the store is up.
async fn probe_while_down(
    store: Arc<dyn ObjectStore>,
    prefix: ObjPath,
    stats: Arc<TierStats>,
    url: Arc<str>,
    timeout: Duration,
) {
    loop {
        tokio::time::sleep(crate::stats::health::PROBE_EVERY).await;
        if !stats.health.is_down() {
            continue;
        }
        let r = tokio::time::timeout(timeout, store.list_with_delimiter(Some(&prefix))).await;
        let error = match r {
            Ok(Ok(_)) => None,
            Ok(Err(e)) if transient(&e) => Some(e.to_string()),
            Ok(Err(_)) => None,
            Err(_) => Some(format!("probe timed out after {timeout:?}")),
        };
        let outcome = match &error {
            Some(error) => Outcome::Unreachable {
                what: "probe",
                error,
            },
            None => Outcome::Answered,
        };
        stats.health.record(&url, outcome);
    }
}

/// The capacity tier of one database.
pub struct CapacityTier {
    store: Arc<dyn ObjectStore>,
    prefix: ObjPath,
    /// Always `Some` until drop (taken there to shut it down without blocking).
    rt: Option<tokio::runtime::Runtime>,
    stats: Arc<TierStats>,
    opts: CapacityOptions,
    emulation: Option<Arc<EmulatedStore>>,
    /// `opts.url`, shared with every request's retry policy (health reports name it).
    url: Arc<str>,
    /// The request budget background requests wait for (none by default).
    budget: Arc<budget::Budget>,
    /// What [`CapacityTier::put`], [`CapacityTier::delete`] and an [`ObjectWriter`]'s
    /// completion check first: the lease of the database's log location (`fence`), once the
    /// database holds it; none for a database without one.
    fence: OnceLock<Arc<dyn WriteFence>>,
}

impl std::fmt::Debug for CapacityTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapacityTier")
            .field("url", &self.opts.url)
            .finish()
    }
}

impl CapacityTier {
    /// Opens the tier named by `opts.url`, or over `store` when given (tests share one store
    /// across reopenings this way).
    pub fn open(
        opts: &CapacityOptions,
        store: Option<Arc<dyn ObjectStore>>,
        stats: Arc<TierStats>,
    ) -> Result<Arc<CapacityTier>> {
        let (base, prefix) = match store {
            Some(s) => (s, ObjPath::default()),
            None => store_from_url(&opts.url)?,
        };
        let (store, emulation): (Arc<dyn ObjectStore>, _) = match &opts.emulation {
            Some(e) => {
                let em = Arc::new(EmulatedStore::new(base, e.clone()));
                (em.clone(), Some(em))
            }
            None => (base, None),
        };
        let budget = Arc::new(budget::Budget::default());
        let store: Arc<dyn ObjectStore> = Arc::new(CountingStore::with_budget(
            store,
            stats.requests.clone(),
            budget.clone(),
        ));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("strata-capacity")
            .enable_all()
            .build()
            .map_err(|e| Error::io("capacity tier runtime", e))?;
        let url: Arc<str> = Arc::from(opts.url.as_str());
        // While the store is down, one LIST every PROBE_EVERY tells when it answers again
        // (an idle database sends nothing else). Ends with the runtime, at drop.
        rt.spawn(probe_while_down(
            store.clone(),
            prefix.clone(),
            stats.clone(),
            url.clone(),
            opts.request_timeout,
        ));
        Ok(Arc::new(CapacityTier {
            store,
            prefix,
            rt: Some(rt),
            stats,
            opts: opts.clone(),
            emulation,
            url,
            budget,
            fence: OnceLock::new(),
        }))
    }

    /// Records in the tier's health that a request sent outside the retry policy succeeded.
    pub(crate) fn answered(&self) {
        self.stats.health.record(&self.url, Outcome::Answered);
    }

    /// The error of a request sent outside the retry policy (a multipart upload's), after
    /// recording in the tier's health whether the store answered it.
    pub(crate) fn failed(
        &self,
        what: &'static str,
        path: &ObjPath,
        e: object_store::Error,
    ) -> Error {
        failed_for_good(&self.stats, &self.url, what, path, e)
    }

    /// Puts a request budget in force (`None` lifts it): background threads' requests wait
    /// for it (`budget.rs`).
    pub fn set_request_budget(&self, budget: Option<RequestBudget>) {
        self.budget.set(budget);
    }

    /// The budget in force and how long background work waited for it.
    pub fn budget_stats(&self) -> BudgetStats {
        self.budget.stats()
    }

    /// On a background thread, waits until the request budget allows a request.
    pub(crate) fn admit(&self) {
        self.budget.admit();
    }

    /// The emulation layer, when configured (to change faults at run time, read its counters).
    pub fn emulation(&self) -> Option<&Arc<EmulatedStore>> {
        self.emulation.as_ref()
    }

    /// The counters this tier records its requests and bytes in.
    pub fn stats(&self) -> &Arc<TierStats> {
        &self.stats
    }

    pub(crate) fn part_size(&self) -> usize {
        self.opts.part_size
    }

    pub(crate) fn readahead(&self) -> usize {
        self.opts.readahead
    }

    /// The full object path of `name` under the tier's prefix.
    pub fn path(&self, name: &str) -> ObjPath {
        if self.prefix.as_ref().is_empty() {
            ObjPath::from(name)
        } else {
            ObjPath::from(format!("{}/{name}", self.prefix))
        }
    }

    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
    }

    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime().handle()
    }

    /// Runs a future on the tier's runtime and waits for it from a synchronous thread (also
    /// from inside another runtime's blocking pool); a background thread first waits for the
    /// request budget.
    pub(crate) fn run<F>(&self, fut: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.budget.admit();
        let h = self.runtime().spawn(fut);
        match futures::executor::block_on(h) {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }

    /// Runs `op` with a per-attempt timeout, retrying transient failures with backoff, with no
    /// attempt sent or left running past `deadline` (if any).
    fn with_retry_until<T, F, Fut>(
        &self,
        what: &'static str,
        path: &ObjPath,
        deadline: Option<Instant>,
        op: F,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = object_store::Result<T>> + Send + 'static,
    {
        let retry = Retry {
            deadline,
            ..self.retry_policy()
        };
        let p = path.clone();
        self.run(async move { retry.run(what, &p, op).await })
    }

    fn retry_policy(&self) -> Retry {
        Retry {
            attempts: self.opts.max_attempts.max(1),
            timeout: self.opts.request_timeout,
            stats: self.stats.clone(),
            deadline: None,
            url: self.url.clone(),
        }
    }

    /// Reads several ranges (`(object, offset, len)`), up to `concurrency` requests in flight,
    /// into `out` one after another from its start (`out` holds exactly their sum), each
    /// written in place as it arrives. Each request retries as [`CapacityTier::get_range`]
    /// does; the first failure fails the call. Blocking, like every call of the tier: never
    /// from async code.
    pub fn get_many_into<B>(
        &self,
        ranges: Vec<(ObjPath, u64, usize)>,
        concurrency: usize,
        mut out: B,
    ) -> Result<B>
    where
        B: AsMut<[u8]> + Send + 'static,
    {
        use futures::{StreamExt, TryFutureExt};
        let total: usize = ranges.iter().map(|r| r.2).sum();
        if out.as_mut().len() != total {
            return Err(Error::invalid(format!(
                "capacity tier: {total} bytes requested into a buffer of {}",
                out.as_mut().len()
            )));
        }
        let retry = self.retry_policy();
        let store = self.store.clone();
        self.run(async move {
            let mut at = 0;
            let reads: Vec<_> = ranges
                .into_iter()
                .filter(|r| r.2 > 0)
                .map(|(path, offset, len)| {
                    let dst = at;
                    at += len;
                    fetch_range(retry.clone(), store.clone(), path, offset, len)
                        .map_ok(move |b| (dst, b))
                })
                .collect();
            futures::stream::iter(reads)
                .buffer_unordered(concurrency.max(1))
                .try_fold(out, |mut out, (dst, b)| async move {
                    // `fetch_range` returned exactly the range's length.
                    let part = out.as_mut().get_mut(dst..dst + b.len()).ok_or_else(|| {
                        Error::invalid("capacity tier: a range read past its buffer")
                    })?;
                    part.copy_from_slice(&b);
                    Ok(out)
                })
                .await
        })
    }

    /// Reads `len` bytes at `offset` of object `path`.
    pub fn get_range(&self, path: &ObjPath, offset: u64, len: usize) -> Result<Bytes> {
        let read = fetch_range(
            self.retry_policy(),
            self.store.clone(),
            path.clone(),
            offset,
            len,
        );
        self.run(read)
    }

    /// Writes a whole object in one request — refused (`Fenced`) once another database took
    /// over the lease of this one's log location (`fence`).
    pub fn put(&self, path: &ObjPath, data: Bytes) -> Result<()> {
        self.fenced(|until| self.put_until(path, data.clone(), until))
    }

    /// Makes this tier's writes ([`CapacityTier::put`], [`CapacityTier::delete`], an
    /// [`ObjectWriter`]'s completion) check `fence` first, and end by the instant it gives.
    /// Set once, when the database opens; a later call is ignored.
    pub(crate) fn set_write_fence(&self, fence: Arc<dyn WriteFence>) {
        let _ = self.fence.set(fence);
    }

    /// Runs the write `op` under the tier's write fence, if it has one (see `fence::fenced`).
    pub(crate) fn fenced<T>(&self, op: impl Fn(Option<Instant>) -> Result<T>) -> Result<T> {
        match self.fence.get() {
            None => op(None),
            Some(f) => fence::fenced(&**f, op),
        }
    }

    /// What one write that is sent once holds while it runs (a multipart completion: sent
    /// again after a lost answer, it could complete an upload twice or after an abort): the
    /// lease and the instant its request must end by, `None` without a fence or a lease; the
    /// fence's error once another database took over.
    pub(crate) fn write_deadline(&self) -> Result<Option<lease::LeaseGuard>> {
        match self.fence.get() {
            None => Ok(None),
            Some(f) => f.check(),
        }
    }

    /// [`CapacityTier::put`], with no attempt sent or left running past `deadline`.
    pub fn put_until(&self, path: &ObjPath, data: Bytes, deadline: Option<Instant>) -> Result<()> {
        let store = self.store.clone();
        let p = path.clone();
        let n = data.len() as u64;
        let start = Instant::now();
        self.with_retry_until("put", path, deadline, move || {
            let (store, p, data) = (store.clone(), p.clone(), data.clone());
            async move { store.put(&p, PutPayload::from(data)).await }
        })?;
        self.stats.capacity_write_latency.record(start.elapsed());
        self.stats.record_put(n);
        Ok(())
    }

    /// Writes a whole object in one request if no object `path` exists (`PutMode::Create`:
    /// S3's `If-None-Match: *`): `true` if this call created it, `false` if it existed —
    /// including when an earlier attempt of this very call created it and its answer was
    /// lost, which the caller tells apart by the object's content. A store that does not
    /// offer conditional PUTs (`AWS_CONDITIONAL_PUT=disabled`) is an `InvalidArgument`.
    pub fn put_if_absent(
        &self,
        path: &ObjPath,
        data: Bytes,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let store = self.store.clone();
        let p = path.clone();
        let n = data.len() as u64;
        let created = self.with_retry_until("put", path, deadline, move || {
            let (store, p, data) = (store.clone(), p.clone(), data.clone());
            async move {
                let opts = object_store::PutOptions::from(object_store::PutMode::Create);
                match store.put_opts(&p, PutPayload::from(data), opts).await {
                    Ok(_) => Ok(Some(true)),
                    Err(object_store::Error::AlreadyExists { .. })
                    | Err(object_store::Error::Precondition { .. }) => Ok(Some(false)),
                    Err(object_store::Error::NotImplemented { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        })?;
        let created = created.ok_or_else(|| {
            Error::invalid(format!(
                "capacity tier {path}: the object store does not offer conditional PUTs \
                 (If-None-Match), which this needs"
            ))
        })?;
        if created {
            self.stats.record_put(n);
        }
        Ok(created)
    }

    /// A whole object, `None` if there is none; no attempt sent or left running past
    /// `deadline`.
    pub fn get_whole(&self, path: &ObjPath, deadline: Option<Instant>) -> Result<Option<Bytes>> {
        let store = self.store.clone();
        let p = path.clone();
        let start = Instant::now();
        let b = self.with_retry_until("get", path, deadline, move || {
            let (store, p) = (store.clone(), p.clone());
            async move {
                match store.get(&p).await {
                    // Deleted between the request and the read of its body: gone too.
                    Ok(r) => match r.bytes().await {
                        Ok(b) => Ok(Some(b)),
                        Err(object_store::Error::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    },
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        })?;
        if let Some(b) = &b {
            self.stats.record_get(b.len() as u64, start.elapsed());
        }
        Ok(b)
    }

    /// Deletes an object; deleting a missing object succeeds. Refused like
    /// [`CapacityTier::put`] once the log location's lease was taken over.
    pub fn delete(&self, path: &ObjPath) -> Result<()> {
        self.fenced(|until| self.delete_until(path, until))
    }

    /// [`CapacityTier::delete`], with no attempt sent or left running past `deadline`.
    pub fn delete_until(&self, path: &ObjPath, deadline: Option<Instant>) -> Result<()> {
        let store = self.store.clone();
        let p = path.clone();
        let r = self.with_retry_until("delete", path, deadline, move || {
            let (store, p) = (store.clone(), p.clone());
            async move {
                match store.delete(&p).await {
                    Err(object_store::Error::NotFound { .. }) => Ok(()),
                    r => r,
                }
            }
        });
        self.stats
            .deletes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        r
    }

    /// Object names (relative to the tier prefix) and sizes under `dir`.
    pub fn list(&self, dir: &str) -> Result<Vec<(String, u64)>> {
        self.list_until(dir, None)
    }

    /// [`CapacityTier::list`], with no attempt sent or left running past `deadline`.
    pub fn list_until(&self, dir: &str, deadline: Option<Instant>) -> Result<Vec<(String, u64)>> {
        let store = self.store.clone();
        let p = self.path(dir);
        let base = self.prefix.clone();
        self.stats
            .lists
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.with_retry_until("list", &p.clone(), deadline, move || {
            let (store, p, base) = (store.clone(), p.clone(), base.clone());
            async move {
                let metas: Vec<_> = store.list(Some(&p)).try_collect().await?;
                Ok(metas
                    .into_iter()
                    .map(|m| {
                        let full = m.location.to_string();
                        let rel = match base.as_ref() {
                            "" => full,
                            b => full
                                .strip_prefix(b)
                                .map(|s| s.trim_start_matches('/').to_string())
                                .unwrap_or(full),
                        };
                        (rel, m.size)
                    })
                    .collect())
            }
        })
    }

    /// A writer streaming a new object `name`; it becomes visible on `sync`.
    pub fn writer(self: &Arc<Self>, name: &str) -> ObjectWriter {
        ObjectWriter::new(self.clone(), self.path(name))
    }

    /// A reader of object `name` of known `size`.
    pub fn reader(self: &Arc<Self>, name: &str, size: u64) -> ObjectFile {
        ObjectFile::new(self.clone(), self.path(name), size)
    }
}

impl Drop for CapacityTier {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime's async context (an
        // application embedding the engine in tokio); all requests have finished by now.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// One ranged GET of the tier, retried under `retry`: a short answer is a corruption; its bytes
/// and latency go to the tier's statistics (`retry.stats`).
async fn fetch_range(
    retry: Retry,
    store: Arc<dyn ObjectStore>,
    path: ObjPath,
    offset: u64,
    len: usize,
) -> Result<Bytes> {
    let start = Instant::now();
    let p = path.clone();
    let b = retry
        .run("get", &path, move || {
            let (store, p) = (store.clone(), p.clone());
            let range = offset..offset + len as u64;
            async move { store.get_range(&p, range).await }
        })
        .await?;
    if b.len() != len {
        return Err(Error::corruption(format!(
            "capacity tier: short read of {path} at {offset}: {} of {len} bytes",
            b.len()
        )));
    }
    retry.stats.record_get(len as u64, start.elapsed());
    Ok(b)
}
