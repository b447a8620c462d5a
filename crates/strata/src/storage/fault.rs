//! [`FaultFs`]: a [`Storage`] wrapper that injects failures for tests: failing writes, syncs or
//! reads (optionally only for paths containing a substring), flipping a bit in bytes read, and
//! counting operations. The plan can be changed while the database runs. Depends on `error` and
//! the `Storage` traits only.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{DirLock, FileSync, RandomAccessFile, RandomRwFile, Storage, WritableFile};
use crate::error::{Error, Result};

/// What to break. All fields default to "nothing".
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// Only paths whose string contains this are affected (`None`: all paths).
    pub path_filter: Option<String>,
    /// Fail appends, flushes, writeback requests, positional writes and renames.
    pub fail_writes: bool,
    /// Fail file and directory syncs.
    pub fail_syncs: bool,
    /// Fail opens for reading and every read.
    pub fail_reads: bool,
    /// Fail creating files (`create`, `open_rw`).
    pub fail_creates: bool,
    /// Flip one bit in every positional read.
    pub corrupt_reads: bool,
    /// Reads that must not wait ([`RandomAccessFile::read_block_nowait`]) answer that they
    /// would, as if the operating system's page cache held nothing (not counted as a fault).
    pub cold_reads: bool,
}

impl FaultPlan {
    fn applies(&self, path: &Path) -> bool {
        match &self.path_filter {
            None => true,
            Some(f) => path.to_string_lossy().contains(f.as_str()),
        }
    }
}

#[derive(Default)]
struct FaultState {
    plan: Mutex<FaultPlan>,
    injected: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
}

/// A fault-injecting wrapper over another [`Storage`].
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn Storage>,
    state: Arc<FaultState>,
}

fn injected(what: &str, path: &Path) -> Error {
    Error::io(
        path.display(),
        std::io::Error::other(format!("injected {what} fault")),
    )
}

impl FaultFs {
    /// A wrapper over `inner` that injects nothing until [`FaultFs::set_plan`].
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        FaultFs {
            inner,
            state: Arc::default(),
        }
    }
    /// Replaces the fault plan.
    pub fn set_plan(&self, plan: FaultPlan) {
        *self.state.plan.lock() = plan;
    }
    /// Stops injecting faults.
    pub fn heal(&self) {
        self.set_plan(FaultPlan::default());
    }
    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.state.injected.load(Ordering::Relaxed)
    }
    /// Positional reads and appends seen so far.
    pub fn op_counts(&self) -> (u64, u64) {
        (
            self.state.reads.load(Ordering::Relaxed),
            self.state.writes.load(Ordering::Relaxed),
        )
    }
    fn check(&self, path: &Path, f: impl Fn(&FaultPlan) -> bool, what: &str) -> Result<()> {
        let plan = self.state.plan.lock();
        if plan.applies(path) && f(&plan) {
            self.state.injected.fetch_add(1, Ordering::Relaxed);
            return Err(injected(what, path));
        }
        Ok(())
    }
}

struct FaultWritable {
    path: std::path::PathBuf,
    inner: Box<dyn WritableFile>,
    fs: FaultFs,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.fs.state.writes.fetch_add(1, Ordering::Relaxed);
        self.fs.check(&self.path, |p| p.fail_writes, "write")?;
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.fs.check(&self.path, |p| p.fail_writes, "write")?;
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.fs.check(&self.path, |p| p.fail_syncs, "sync")?;
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn start_writeback(&mut self) -> Result<()> {
        self.fs.check(&self.path, |p| p.fail_writes, "write")?;
        self.inner.start_writeback()
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        Some(Arc::new(FaultSync {
            path: self.path.clone(),
            inner: self.inner.sync_handle()?,
            fs: self.fs.clone(),
        }))
    }
}

/// A sync handle that fails as the plan says, like the file's own `sync`.
struct FaultSync {
    path: std::path::PathBuf,
    inner: Arc<dyn FileSync>,
    fs: FaultFs,
}

impl FileSync for FaultSync {
    fn sync_data(&self) -> Result<()> {
        self.fs.check(&self.path, |p| p.fail_syncs, "sync")?;
        self.inner.sync_data()
    }
}

struct FaultRandom {
    path: std::path::PathBuf,
    inner: Arc<dyn RandomAccessFile>,
    fs: FaultFs,
}

impl FaultFs {
    /// A positional read through the plan: may fail, or come back with one bit flipped.
    fn read_through(&self, path: &Path, read: impl FnOnce() -> Result<Bytes>) -> Result<Bytes> {
        self.state.reads.fetch_add(1, Ordering::Relaxed);
        self.check(path, |p| p.fail_reads, "read")?;
        let data = read()?;
        let corrupt = {
            let plan = self.state.plan.lock();
            plan.applies(path) && plan.corrupt_reads
        };
        if corrupt && !data.is_empty() {
            self.state.injected.fetch_add(1, Ordering::Relaxed);
            let mut v = data.to_vec();
            let i = v.len() / 2;
            v[i] ^= 0x10;
            return Ok(Bytes::from(v));
        }
        Ok(data)
    }

    /// [`FaultFs::read_through`] for a read that may answer "not without waiting": the same
    /// failures and corruption apply to what it does read.
    fn read_nowait_through(
        &self,
        path: &Path,
        read: impl FnOnce() -> Result<Option<Bytes>>,
    ) -> Result<Option<Bytes>> {
        {
            let plan = self.state.plan.lock();
            if plan.applies(path) && plan.cold_reads {
                return Ok(None);
            }
        }
        let mut waited = false;
        let data = self.read_through(path, || match read()? {
            Some(b) => Ok(b),
            None => {
                waited = true;
                Ok(Bytes::new())
            }
        })?;
        Ok((!waited).then_some(data))
    }
}

impl RandomAccessFile for FaultRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.fs
            .read_through(&self.path, || self.inner.read_at(offset, len))
    }
    fn read_block_nowait(&self, offset: u64, len: usize) -> Result<Option<Bytes>> {
        self.fs
            .read_nowait_through(&self.path, || self.inner.read_block_nowait(offset, len))
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl Storage for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.check(path, |p| p.fail_creates, "create")?;
        Ok(Box::new(FaultWritable {
            path: path.to_path_buf(),
            inner: self.inner.create(path)?,
            fs: self.clone(),
        }))
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.check(path, |p| p.fail_reads, "open")?;
        Ok(Arc::new(FaultRandom {
            path: path.to_path_buf(),
            inner: self.inner.open(path)?,
            fs: self.clone(),
        }))
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.check(path, |p| p.fail_reads, "read")?;
        self.inner.read_all(path)
    }
    fn read_whole(&self, path: &Path) -> Result<super::WholeFile> {
        self.check(path, |p| p.fail_reads, "read")?;
        self.inner.read_whole(path)
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.check(to, |p| p.fail_writes, "rename")?;
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.check(to, |p| p.fail_creates, "create")?;
        self.inner.link_or_copy(from, to)
    }
    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.check(dir, |p| p.fail_syncs, "sync")?;
        self.inner.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.check(path, |p| p.fail_syncs, "sync")?;
        self.inner.sync_file(path)
    }
    fn open_rw(&self, path: &Path, size: u64) -> Result<Arc<dyn RandomRwFile>> {
        self.check(path, |p| p.fail_creates, "create")?;
        Ok(Arc::new(FaultRw {
            path: path.to_path_buf(),
            inner: self.inner.open_rw(path, size)?,
            fs: self.clone(),
        }))
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>> {
        self.inner.lock(path)
    }
}

struct FaultRw {
    path: std::path::PathBuf,
    inner: Arc<dyn RandomRwFile>,
    fs: FaultFs,
}

impl RandomAccessFile for FaultRw {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.fs
            .read_through(&self.path, || self.inner.read_at(offset, len))
    }
    fn read_block_nowait(&self, offset: u64, len: usize) -> Result<Option<Bytes>> {
        self.fs
            .read_nowait_through(&self.path, || self.inner.read_block_nowait(offset, len))
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl RandomRwFile for FaultRw {
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.fs.state.writes.fetch_add(1, Ordering::Relaxed);
        self.fs.check(&self.path, |p| p.fail_writes, "write")?;
        self.inner.write_at(offset, data)
    }
    fn sync(&self) -> Result<()> {
        self.fs.check(&self.path, |p| p.fail_syncs, "sync")?;
        self.inner.sync()
    }
}
