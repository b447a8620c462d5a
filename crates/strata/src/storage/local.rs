//! [`LocalFs`]: the local file system through `std::fs`, positional reads with `pread`, and
//! `flock`-style exclusive locks via `File::try_lock`. Depends on `error` only.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::{DirLock, FileSync, RandomAccessFile, RandomRwFile, Storage, WritableFile};
use crate::error::{Error, ErrorRepr, Result};

/// The local file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalFs;

struct LocalWritable {
    path: PathBuf,
    w: BufWriter<File>,
    len: u64,
    /// The file opened a second time, for [`WritableFile::sync_handle`] (opened on first use).
    sync: OnceLock<Arc<LocalSync>>,
    /// Bytes writeback was requested for; `u64::MAX` once the system said it cannot.
    written_back: u64,
}

impl WritableFile for LocalWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.w
            .write_all(data)
            .map_err(|e| Error::io(self.path.display(), e))?;
        self.len += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.w
            .flush()
            .map_err(|e| Error::io(self.path.display(), e))
    }
    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.w
            .get_ref()
            .sync_data()
            .map_err(|e| Error::io(self.path.display(), e))
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn start_writeback(&mut self) -> Result<()> {
        self.flush()?;
        // Whole pages only: the partly written last one would be written back now and again
        // once the next append dirties it (and, on devices with stable pages, that append
        // would wait for the first writeback).
        let end = self.len & !(PAGE - 1);
        if self.written_back == u64::MAX || end <= self.written_back {
            return Ok(());
        }
        match start_writeback(self.w.get_ref(), self.written_back, end - self.written_back) {
            Ok(()) => self.written_back = end,
            // A hint the system does not offer (seccomp, another file system): the final sync
            // writes everything, as without the hint.
            Err(e) if unsupported(&e) => self.written_back = u64::MAX,
            Err(e) => return Err(Error::io(self.path.display(), e)),
        }
        Ok(())
    }
    fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        // Only bytes already handed to the OS are covered.
        debug_assert!(
            self.w.buffer().is_empty(),
            "sync_handle with buffered bytes"
        );
        if let Some(s) = self.sync.get() {
            return Some(s.clone());
        }
        // A second open of the file, not a dup of its descriptor: Linux reports a writeback
        // error once per open file description, so with a shared one an fsync through the
        // handle and a concurrent one through the file could see a single EIO between them and
        // one would wrongly succeed. Each description sees the error (one opened after it was
        // already reported through the other only misses it if that report failed a sync).
        // Its fdatasync covers every write made through the original.
        let file = File::open(&self.path).ok()?;
        let s = self
            .sync
            .get_or_init(|| {
                Arc::new(LocalSync {
                    path: self.path.clone(),
                    file,
                })
            })
            .clone();
        Some(s)
    }
}

const PAGE: u64 = 4096;

/// `sync_file_range(SYNC_FILE_RANGE_WRITE)` over `len` bytes at `offset`: starts writeback of
/// their dirty pages and returns without waiting for the device (pages already under
/// writeback are not waited for either).
#[cfg(target_os = "linux")]
fn start_writeback(f: &File, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Ok(());
    };
    // SAFETY: the descriptor is open for as long as `f` is borrowed; the call reads no memory.
    let r =
        unsafe { libc::sync_file_range(f.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Elsewhere the final sync writes everything.
#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &File, _: u64, _: u64) -> std::io::Result<()> {
    Ok(())
}

/// Errors meaning "this system or file cannot start writeback" (no such call, a file system
/// or file kind without it), not "the write failed".
#[cfg(target_os = "linux")]
fn unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS | libc::EOPNOTSUPP | libc::EINVAL | libc::ESPIPE)
    )
}

#[cfg(not(target_os = "linux"))]
fn unsupported(_: &std::io::Error) -> bool {
    true
}

struct LocalSync {
    path: PathBuf,
    file: File,
}

impl FileSync for LocalSync {
    fn sync_data(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(self.path.display(), e))
    }
}

struct LocalRandom {
    path: PathBuf,
    f: File,
    size: u64,
    /// False once the file system refused `RWF_NOWAIT` for this file.
    nowait: std::sync::atomic::AtomicBool,
}

impl RandomAccessFile for LocalRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let mut buf = vec![0u8; len];
        self.f.read_exact_at(&mut buf, offset).map_err(|e| {
            Error::io(
                format!("{} at offset {offset}+{len}", self.path.display()),
                e,
            )
        })?;
        Ok(Bytes::from(buf))
    }
    /// `preadv2(RWF_NOWAIT)`: the kernel copies from the page cache or answers `EAGAIN`
    /// instead of starting I/O. A short read (part of the range cached) and a kernel or file
    /// system without the flag answer `None` as well.
    #[cfg(target_os = "linux")]
    fn read_block_nowait(&self, offset: u64, len: usize) -> Result<Option<Bytes>> {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::Ordering::Relaxed;
        if !self.nowait.load(Relaxed) {
            return Ok(None);
        }
        let Ok(at) = libc::off_t::try_from(offset) else {
            return Ok(None);
        };
        let mut buf = vec![0u8; len];
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: len,
        };
        let n = loop {
            // SAFETY: `iov` describes `buf`, which is live and `len` bytes long for the call,
            // and the descriptor is owned by `self.f`.
            let n = unsafe { libc::preadv2(self.f.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
            if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break n;
            }
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) => Ok(None),
                Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => {
                    self.nowait.store(false, Relaxed);
                    Ok(None)
                }
                _ => Err(Error::io(
                    format!("{} at offset {offset}+{len}", self.path.display()),
                    e,
                )),
            };
        }
        Ok((n as usize == len).then(|| Bytes::from(buf)))
    }
    fn size(&self) -> u64 {
        self.size
    }
}

impl RandomRwFile for LocalRandom {
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.f
            .write_all_at(data, offset)
            .map_err(|e| Error::io(format!("{} at offset {offset}", self.path.display()), e))
    }
    fn sync(&self) -> Result<()> {
        self.f
            .sync_data()
            .map_err(|e| Error::io(self.path.display(), e))
    }
}

struct LocalLock {
    _f: File,
}
impl DirLock for LocalLock {}

impl Storage for LocalFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path.display(), e))?;
        Ok(Box::new(LocalWritable {
            path: path.to_path_buf(),
            w: BufWriter::with_capacity(64 << 10, f),
            len: 0,
            sync: OnceLock::new(),
            written_back: 0,
        }))
    }

    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        match fs::hard_link(from, to) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::io(from.display(), e)),
            // Another file system (EXDEV), or one without hard links: copy the bytes.
            Err(_) => super::copy_prefix(self, from, to, u64::MAX).map(|_| ()),
        }
    }

    fn remove_dir_all(&self, dir: &Path) -> Result<()> {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir.display(), e)),
            _ => Ok(()),
        }
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let f = File::open(path).map_err(|e| Error::io(path.display(), e))?;
        let size = f
            .metadata()
            .map_err(|e| Error::io(path.display(), e))?
            .len();
        Ok(Arc::new(LocalRandom {
            path: path.to_path_buf(),
            f,
            size,
            nowait: std::sync::atomic::AtomicBool::new(true),
        }))
    }

    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        fs::read(path).map_err(|e| Error::io(path.display(), e))
    }

    fn read_whole(&self, path: &Path) -> Result<super::WholeFile> {
        let f = File::open(path).map_err(|e| Error::io(path.display(), e))?;
        let len = f
            .metadata()
            .map_err(|e| Error::io(path.display(), e))?
            .len();
        if len == 0 {
            return Ok(super::WholeFile::Read(Vec::new()));
        }
        // SAFETY: a mapping is undefined behaviour if the file changes under it; callers scan
        // files nobody writes meanwhile (`read_whole`'s contract: logs under the database's or
        // the log location's lock), so the bytes are as immutable as a buffer's. Populated at
        // once: the scan reads every page.
        let map = unsafe { memmap2::MmapOptions::new().populate().map(&f) }
            .map_err(|e| Error::io(path.display(), e))?;
        Ok(super::WholeFile::Mapped(map))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io(path.display(), e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to)
            .map_err(|e| Error::io(format!("{} -> {}", from.display(), to.display()), e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        match fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path.display(), e)),
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).map_err(|e| Error::io(dir.display(), e))? {
            let e = e.map_err(|e| Error::io(dir.display(), e))?;
            if let Some(n) = e.file_name().to_str() {
                out.push(n.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(dir.display(), e))
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        // fsync flushes the file's dirty pages whichever descriptor wrote them.
        File::open(path)
            .and_then(|f| f.sync_data())
            .map_err(|e| Error::io(path.display(), e))
    }

    fn open_rw(&self, path: &Path, size: u64) -> Result<Arc<dyn RandomRwFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path.display(), e))?;
        f.set_len(size).map_err(|e| Error::io(path.display(), e))?;
        Ok(Arc::new(LocalRandom {
            path: path.to_path_buf(),
            f,
            size,
            nowait: std::sync::atomic::AtomicBool::new(true),
        }))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn DirLock>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path.display(), e))?;
        // A lock this process just released can stay held for a moment: a thread that spawns
        // a process (std::process::Command) shares every open file description with the child
        // until its exec closes them, and an flock lives while any of them is open. So a busy
        // lock is retried for a short while before it counts as held by another user (seen in
        // the node-loss crash tests, which close and reopen while other tests spawn children).
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(250);
        loop {
            match f.try_lock() {
                Ok(()) => return Ok(Box::new(LocalLock { _f: f })),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(ErrorRepr::Locked(path.display().to_string()).into())
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(path.display(), e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_whole_maps_what_read_all_reads() {
        let dir = tempfile::tempdir().unwrap();
        let fs = LocalFs;
        for (name, len) in [("empty", 0usize), ("small", 5), ("pages", 3 * 4096 + 17)] {
            let p = dir.path().join(name);
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            std::fs::write(&p, &data).unwrap();
            let whole = fs.read_whole(&p).unwrap();
            assert_eq!(&whole[..], &fs.read_all(&p).unwrap()[..], "{name}");
            assert_eq!(
                matches!(whole, crate::storage::WholeFile::Mapped(_)),
                len > 0,
                "{name}"
            );
        }
        let e = fs.read_whole(&dir.path().join("absent")).err().unwrap();
        assert_eq!(e.kind(), crate::ErrorKind::Io, "{e}");
    }

    /// Writeback requests between appends change nothing a reader sees, and the file syncs
    /// after them as after none.
    #[test]
    fn start_writeback_keeps_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let mut f = LocalFs.create(&p).unwrap();
        let mut want = Vec::new();
        for i in 0..40u32 {
            let chunk: Vec<u8> = (0..100_000u32).map(|j| (i * 31 + j) as u8).collect();
            f.append(&chunk).unwrap();
            want.extend_from_slice(&chunk);
            if i % 3 == 0 {
                f.start_writeback().unwrap();
                // It hands the buffered bytes to the OS first, like `flush`.
                assert_eq!(std::fs::read(&p).unwrap(), want);
            }
        }
        f.start_writeback().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), want);
        f.sync().unwrap();
        drop(f);
        assert_eq!(LocalFs.read_all(&p).unwrap(), want);
    }
}
