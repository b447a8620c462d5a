//! The storage layer: every byte the engine reads or writes goes through [`Storage`].
//!
//! Implementations: [`LocalFs`] (the fast tier: a directory with positional reads and fsync of
//! files and directories) and [`FaultFs`] (a wrapper that fails, or corrupts, on command, for
//! tests). Later tiers (object store, emulation) plug in here too. The engine must never call
//! `std::fs` directly; this module depends only on `error`.

mod fault;
mod local;

pub use fault::{FaultFs, FaultPlan};
pub use local::LocalFs;
pub mod object;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;

/// A file being written sequentially. Dropping it closes it without syncing.
pub trait WritableFile: Send {
    /// Appends bytes (possibly buffered in the process).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system, so they survive a process crash.
    fn flush(&mut self) -> Result<()>;
    /// Flushes and makes the bytes durable (fdatasync).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// Whether nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A handle that makes durable what [`WritableFile::flush`] has handed to the operating
    /// system, callable from another thread while appends go on (the periodic WAL sync runs it
    /// without holding the log's lock, so writers do not wait for the fsync). `None` where a
    /// sync is more than an fsync of the bytes already written (a log in an object store
    /// uploads on sync): callers then sync through the file.
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        None
    }
    /// Hands buffered bytes to the operating system and asks it to start writing every byte
    /// handed over so far to the device, without waiting (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`; RocksDB's `bytes_per_sync`). Not a durability point: it only
    /// spreads the device writes over the file's life, so the final [`WritableFile::sync`]
    /// waits for the last stretch instead of the whole file. A no-op where there is no page
    /// cache to write back (object-store files upload on sync).
    fn start_writeback(&mut self) -> Result<()> {
        Ok(())
    }
}

/// See [`WritableFile::sync_handle`].
pub trait FileSync: Send + Sync {
    /// Makes the bytes handed to the operating system so far durable (fdatasync).
    fn sync_data(&self) -> Result<()>;
}

/// A file read at arbitrary offsets by many threads at once.
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `len` bytes at `offset`; a short file is an error.
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes>;
    /// Reads a data block; `fill_cache` is false for scans (compaction), which should not
    /// displace cached blocks. Files without caches ignore it.
    fn read_block_at(&self, offset: u64, len: usize, fill_cache: bool) -> Result<Bytes> {
        let _ = fill_cache;
        self.read_at(offset, len)
    }
    /// Reads a data block only if that takes no wait for a device: `Some` when the bytes came
    /// from memory (the operating system's page cache), `None` when the read would have to
    /// wait for storage, or when the file cannot tell (the default: object stores, emulated
    /// devices). What `ReadOptions::cache_only` reads may use besides the block cache.
    fn read_block_nowait(&self, offset: u64, len: usize) -> Result<Option<Bytes>> {
        let _ = (offset, len);
        Ok(None)
    }
    /// The file's size in bytes.
    fn size(&self) -> u64;
}

/// A whole file's bytes ([`Storage::read_whole`]): read into memory, or mapped (no copy, and no
/// fresh pages for the kernel to zero — the bulk of reading a 2 GiB WAL into a buffer).
pub enum WholeFile {
    /// Read into memory.
    Read(Vec<u8>),
    /// Memory-mapped.
    Mapped(memmap2::Mmap),
}

impl WholeFile {
    /// The bytes as a vector (a copy unless they were read into one).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            WholeFile::Read(v) => v,
            WholeFile::Mapped(m) => m.to_vec(),
        }
    }
}

impl std::ops::Deref for WholeFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            WholeFile::Read(v) => v,
            WholeFile::Mapped(m) => m,
        }
    }
}

/// A fixed-size file read and written at arbitrary offsets (persistent cache files).
pub trait RandomRwFile: RandomAccessFile {
    /// Writes `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()>;
    /// Makes the bytes written durable (fdatasync).
    fn sync(&self) -> Result<()>;
}

/// An exclusive lock on a database directory, released on drop.
pub trait DirLock: Send + Sync {}

/// A file system. Paths are absolute or relative to the process working directory.
pub trait Storage: Send + Sync + 'static {
    /// Creates (or truncates) a file for writing.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens a file for positional reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>>;
    /// A whole file's bytes for a read-only scan of a file nobody writes meanwhile (WAL
    /// replay, node-loss recovery): memory-mapped where the storage can, else read. A mapped
    /// file's pages are read at once (populated), but a read error the kernel meets later, or
    /// a truncation by another process, ends the process with SIGBUS instead of an error.
    fn read_whole(&self, path: &Path) -> Result<WholeFile> {
        self.read_all(path).map(WholeFile::Read)
    }
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Deletes a file; a missing file is not an error.
    fn remove(&self, path: &Path) -> Result<()>;
    /// File names (not paths) in a directory.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates `dir` and any missing parents; an existing directory is not an error.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes renames and creations in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Makes every byte of an existing file durable: a file written by an earlier process,
    /// which may have ended before syncing it (recovery keeps such WAL files live).
    fn sync_file(&self, path: &Path) -> Result<()>;
    /// Opens (creating if needed) a file for positional reads and writes, sized to `size`.
    fn open_rw(&self, path: &Path, size: u64) -> Result<Arc<dyn RandomRwFile>>;
    /// Takes an exclusive lock on `path`, creating it; fails with `Locked` if held elsewhere.
    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>>;
    /// Makes `to` a copy of the immutable file `from`: a hard link where the storage can (same
    /// file system), else a byte copy, synced. `to` must not exist. A missing `from` is an
    /// `Io` error whose [`crate::Error::is_not_found`] is true.
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        copy_prefix(self, from, to, u64::MAX).map(|_| ())
    }
    /// Deletes `dir` and everything in it (a copy abandoned half-written); a missing
    /// directory is not an error. The default (for storages without directories) removes the
    /// files `list` shows and leaves the name.
    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        if !self.exists(dir)? {
            return Ok(());
        }
        for name in self.list(dir)? {
            self.remove(&dir.join(name))?;
        }
        Ok(())
    }
}

/// Copies the first `len` bytes of `from` (all of it if shorter) to a new file `to`, synced;
/// returns the bytes copied. For files another writer may still append to (a live WAL): the
/// copy is a prefix of what the file holds.
pub fn copy_prefix<S: Storage + ?Sized>(
    storage: &S,
    from: &Path,
    to: &Path,
    len: u64,
) -> Result<u64> {
    let src = storage.open(from)?;
    let n = src.size().min(len);
    let mut out = storage.create(to)?;
    let mut off = 0u64;
    while off < n {
        let chunk = (n - off).min(4 << 20) as usize;
        let buf = src.read_at(off, chunk)?;
        out.append(&buf)?;
        off += chunk as u64;
    }
    out.sync()?;
    Ok(n)
}

/// The default storage: the local file system.
pub fn default_storage() -> Arc<dyn Storage> {
    Arc::new(LocalFs)
}
