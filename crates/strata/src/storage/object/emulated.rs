//! [`EmulatedStore`]: an `ObjectStore` wrapper that makes a fast store behave like a remote
//! one, for benchmarks and fault tests: a fixed latency per request, a shared bandwidth cap
//! (a virtual link: transfers queue behind each other), request and byte counters, and
//! injected transient errors and timeouts at configurable rates (changeable while running).
//!
//! All waiting is asynchronous, inside the store: engine code never sleeps to emulate.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result, UploadPart,
};
use parking_lot::Mutex;

/// What to emulate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Emulation {
    /// Added to every request.
    pub latency: Duration,
    /// Shared transfer rate in bytes per second (`None`: unlimited).
    pub bandwidth: Option<u64>,
    /// Probability that a request fails with a transient error.
    pub error_rate: f64,
    /// Probability that a request times out (fails after `timeout_delay`).
    pub timeout_rate: f64,
    /// How long a request chosen to time out waits before it fails.
    pub timeout_delay: Duration,
    /// Seed of the fault dice.
    pub seed: u64,
}

/// Counters of an [`EmulatedStore`].
#[derive(Debug, Default)]
pub struct EmulationStats {
    /// GET requests (whole, ranged, or several ranges in one).
    pub gets: AtomicU64,
    /// PUT-like requests: puts, multipart parts and completions, copies and renames.
    pub puts: AtomicU64,
    /// Objects deleted.
    pub deletes: AtomicU64,
    /// LIST requests.
    pub lists: AtomicU64,
    /// Bytes returned by GETs.
    pub bytes_read: AtomicU64,
    /// Bytes uploaded by puts and multipart parts.
    pub bytes_written: AtomicU64,
    /// Requests failed with an injected transient error.
    pub injected_errors: AtomicU64,
    /// Requests failed with an injected timeout.
    pub injected_timeouts: AtomicU64,
}

struct Shared {
    cfg: Mutex<Emulation>,
    rng: Mutex<u64>,
    link_free_at: Mutex<Instant>,
    stats: EmulationStats,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emulation").finish_non_exhaustive()
    }
}

impl Shared {
    fn roll(&self) -> f64 {
        let mut s = self.rng.lock();
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Waits the request latency and the transfer time of `bytes`, then maybe injects a fault.
    async fn admit(&self, bytes: u64) -> Result<()> {
        let cfg = self.cfg.lock().clone();
        let mut wait = cfg.latency;
        if let Some(bw) = cfg.bandwidth.filter(|&b| b > 0) {
            let now = Instant::now();
            let mut free = self.link_free_at.lock();
            let start = (*free).max(now);
            *free = start + Duration::from_secs_f64(bytes as f64 / bw as f64);
            wait += *free - now;
        }
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        if cfg.timeout_rate > 0.0 && self.roll() < cfg.timeout_rate {
            self.stats.injected_timeouts.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(cfg.timeout_delay).await;
            return Err(object_store::Error::Generic {
                store: "emulated",
                source: "injected timeout".into(),
            });
        }
        if cfg.error_rate > 0.0 && self.roll() < cfg.error_rate {
            self.stats.injected_errors.fetch_add(1, Ordering::Relaxed);
            return Err(object_store::Error::Generic {
                store: "emulated",
                source: "injected transient error".into(),
            });
        }
        Ok(())
    }
}

/// See the module docs.
pub struct EmulatedStore {
    inner: Arc<dyn ObjectStore>,
    shared: Arc<Shared>,
}

impl EmulatedStore {
    /// Wraps `inner`, emulating `cfg` (the fault dice seeded from `cfg.seed`).
    pub fn new(inner: Arc<dyn ObjectStore>, cfg: Emulation) -> Self {
        let seed = cfg.seed | 1;
        EmulatedStore {
            inner,
            shared: Arc::new(Shared {
                cfg: Mutex::new(cfg),
                rng: Mutex::new(seed),
                link_free_at: Mutex::new(Instant::now()),
                stats: EmulationStats::default(),
            }),
        }
    }

    /// Replaces the emulation settings (e.g. to start or stop injecting faults).
    pub fn set(&self, cfg: Emulation) {
        *self.shared.cfg.lock() = cfg;
    }

    /// The current emulation settings.
    pub fn config(&self) -> Emulation {
        self.shared.cfg.lock().clone()
    }

    /// The store's counters.
    pub fn stats(&self) -> &EmulationStats {
        &self.shared.stats
    }
}

impl fmt::Debug for EmulatedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EmulatedStore({})", self.inner)
    }
}

impl fmt::Display for EmulatedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EmulatedStore({})", self.inner)
    }
}

#[derive(Debug)]
struct EmulatedUpload {
    inner: Box<dyn MultipartUpload>,
    shared: Arc<Shared>,
}

#[async_trait]
impl MultipartUpload for EmulatedUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let n = data.content_length() as u64;
        let shared = self.shared.clone();
        let fut = self.inner.put_part(data);
        Box::pin(async move {
            shared.stats.puts.fetch_add(1, Ordering::Relaxed);
            shared.admit(n).await?;
            shared.stats.bytes_written.fetch_add(n, Ordering::Relaxed);
            fut.await
        })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.shared.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(0).await?;
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.shared.admit(0).await?;
        self.inner.abort().await
    }
}

#[async_trait]
impl ObjectStore for EmulatedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let n = payload.content_length() as u64;
        self.shared.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(n).await?;
        self.shared
            .stats
            .bytes_written
            .fetch_add(n, Ordering::Relaxed);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.shared.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(0).await?;
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(EmulatedUpload {
            inner,
            shared: self.shared.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.shared.stats.gets.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(0).await?;
        let r = self.inner.get_opts(location, options).await?;
        let n = r.range.end - r.range.start;
        self.shared.stats.bytes_read.fetch_add(n, Ordering::Relaxed);
        // The transfer time of the body, on the shared link.
        self.shared.admit_transfer(n).await;
        Ok(r)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let n: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        self.shared.stats.gets.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(n).await?;
        self.shared.stats.bytes_read.fetch_add(n, Ordering::Relaxed);
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let shared = self.shared.clone();
        let locations = locations
            .then(move |p| {
                let shared = shared.clone();
                async move {
                    let p = p?;
                    shared.stats.deletes.fetch_add(1, Ordering::Relaxed);
                    shared.admit(0).await?;
                    Ok(p)
                }
            })
            .boxed();
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let shared = self.shared.clone();
        let inner = self.inner.list(prefix);
        futures::stream::once(async move {
            shared.stats.lists.fetch_add(1, Ordering::Relaxed);
            match shared.admit(0).await {
                Ok(()) => inner,
                Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.shared.stats.lists.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(0).await?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.shared.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(0).await?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.shared.stats.puts.fetch_add(1, Ordering::Relaxed);
        self.shared.admit(0).await?;
        self.inner.rename_opts(from, to, options).await
    }
}

impl Shared {
    async fn admit_transfer(&self, bytes: u64) {
        let bw = self.cfg.lock().bandwidth.filter(|&b| b > 0);
        if let Some(bw) = bw {
            let now = Instant::now();
            let wait = {
                let mut free = self.link_free_at.lock();
                let start = (*free).max(now);
                *free = start + Duration::from_secs_f64(bytes as f64 / bw as f64);
                *free - now
            };
            tokio::time::sleep(wait).await;
        }
    }
}
