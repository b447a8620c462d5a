//! A table on the capacity tier seen as a file: range GETs for reads, a multipart upload for
//! writes, completed under the write fence's deadline (`fence.rs`). Depends on the tier
//! (`CapacityTier`) alone.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use object_store::path::Path as ObjPath;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload};

use super::CapacityTier;
use crate::error::{Error, ErrorRepr, Result};
use crate::storage::{RandomAccessFile, WritableFile};

/// Reads an object of known size with range GETs.
pub struct ObjectFile {
    tier: Arc<CapacityTier>,
    path: ObjPath,
    size: u64,
}

impl ObjectFile {
    /// The object at `path` on `tier`, `size` bytes long (reads past it are refused).
    pub fn new(tier: Arc<CapacityTier>, path: ObjPath, size: u64) -> Self {
        ObjectFile { tier, path, size }
    }
}

impl RandomAccessFile for ObjectFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        if offset.saturating_add(len as u64) > self.size {
            return Err(Error::corruption(format!(
                "read of {} at {offset}+{len} past its size {}",
                self.path, self.size
            )));
        }
        self.tier.get_range(&self.path, offset, len)
    }
    fn size(&self) -> u64 {
        self.size
    }
}

/// Parts of one object uploading at once: memory stays bounded by about this many parts
/// plus the one filling.
const PARTS_IN_FLIGHT: usize = 2;

/// Streams a new object. Bytes are buffered up to one part; each full part is uploaded while
/// the writer goes on (at most [`PARTS_IN_FLIGHT`] at once). All parts but the last have the
/// tier's part size (stores such as R2 require equal parts).
///
/// The completion alone makes the object visible. It is the one request of a table upload
/// that must end while the log location's lease is valid (the parts make nothing visible), so
/// it runs under the lease's deadline, after every part is in: one that would outlive the
/// lease is abandoned, the upload aborted, and the write fails with a `LeaseDeadline` error
/// (`ErrorKind::Locked`), which the compaction retries — a writer paused past the lease
/// cannot make a table visible after its successor took over. A writer dropped before `sync`
/// aborts its upload: nothing becomes visible.
pub struct ObjectWriter {
    tier: Arc<CapacityTier>,
    path: ObjPath,
    buf: Vec<u8>,
    upload: Option<Upload>,
    len: u64,
    done: bool,
}

/// A multipart upload under way: the store's handle and its parts in flight, oldest first.
struct Upload {
    up: Box<dyn MultipartUpload>,
    in_flight: VecDeque<tokio::task::JoinHandle<object_store::Result<()>>>,
}

impl ObjectWriter {
    pub(super) fn new(tier: Arc<CapacityTier>, path: ObjPath) -> Self {
        ObjectWriter {
            tier,
            path,
            buf: Vec::new(),
            upload: None,
            len: 0,
            done: false,
        }
    }

    /// Uploads `part`, starting the upload first if needed, and returns once at most
    /// [`PARTS_IN_FLIGHT`] parts are under way.
    fn ship_part(&mut self, part: Bytes) -> Result<()> {
        if self.upload.is_none() {
            let store = self.tier.store().clone();
            let p = self.path.clone();
            let up = self
                .tier
                .run(async move { store.put_multipart(&p).await })
                .map_err(|e| self.tier.failed("start upload", &self.path, e))?;
            self.upload = Some(Upload {
                up,
                in_flight: VecDeque::new(),
            });
        }
        let n = part.len() as u64;
        self.tier.admit();
        let start = Instant::now();
        let upload = self.upload.as_mut().expect("started above");
        let put = upload.up.put_part(PutPayload::from(part));
        upload.in_flight.push_back(self.tier.handle().spawn(put));
        self.wait_parts(PARTS_IN_FLIGHT)?;
        self.tier
            .stats()
            .capacity_write_latency
            .record(start.elapsed());
        self.tier.stats().record_put(n);
        Ok(())
    }

    /// Waits until at most `left` parts are in flight; a part that failed fails the write.
    fn wait_parts(&mut self, left: usize) -> Result<()> {
        let Some(upload) = self.upload.as_mut() else {
            return Ok(());
        };
        while upload.in_flight.len() > left {
            let part = upload.in_flight.pop_front().expect("more than `left`");
            match futures::executor::block_on(part) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(self.tier.failed("upload part", &self.path, e)),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => return Err(Error::from(ErrorRepr::Closed)),
            }
        }
        Ok(())
    }

    /// Completes the upload (every part in) under the write fence's deadline.
    fn complete(&mut self) -> Result<()> {
        let Some(mut upload) = self.upload.take() else {
            return Ok(());
        };
        let lease = match self.tier.write_deadline() {
            Ok(lease) => lease,
            Err(e) => {
                self.abort(upload);
                return Err(e);
            }
        };
        self.tier.admit();
        let start = Instant::now();
        let answer = {
            let _rt = self.tier.handle().enter();
            let complete = upload.up.complete();
            match lease.as_ref().map(|l| l.until) {
                None => Some(futures::executor::block_on(complete)),
                Some(until) => futures::executor::block_on(tokio::time::timeout_at(
                    tokio::time::Instant::from_std(until),
                    complete,
                ))
                .ok(),
            }
        };
        drop(lease);
        match answer {
            Some(Ok(_)) => {
                self.tier.answered();
                self.tier
                    .stats()
                    .capacity_write_latency
                    .record(start.elapsed());
                self.tier.stats().puts.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Some(Err(e)) => {
                let e = self.tier.failed("complete upload", &self.path, e);
                self.abort(upload);
                Err(e)
            }
            None => {
                // Not answered in time: it may still be applied (as any request past its
                // deadline may), but is never sent again; the abort makes that unlikely. The
                // store's health and error count learn of it as of any unanswered request.
                let late = object_store::Error::Generic {
                    store: "strata",
                    source: "not answered before the lease's deadline".into(),
                };
                let _ = self.tier.failed("complete upload", &self.path, late);
                self.abort(upload);
                Err(ErrorRepr::LeaseDeadline(format!(
                    "capacity tier complete upload {}: not answered before the lease it needs \
                     expired (upload aborted)",
                    self.path
                ))
                .into())
            }
        }
    }

    /// Stops `upload`'s parts in flight, waits until they have stopped (a part still landing
    /// after the abort would be stored, unreferenced), and aborts the upload on the store
    /// (best effort).
    fn abort(&self, mut upload: Upload) {
        for part in &upload.in_flight {
            part.abort();
        }
        for part in upload.in_flight.drain(..) {
            let _ = futures::executor::block_on(part);
        }
        let _rt = self.tier.handle().enter();
        if let Err(e) = futures::executor::block_on(upload.up.abort()) {
            tracing::debug!(path = %self.path, error = %e, "could not abort an upload");
        }
    }
}

impl WritableFile for ObjectWriter {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.done {
            return Err(Error::invalid("append to a finished object"));
        }
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        let part_size = self.tier.part_size().max(1);
        if self.buf.len() >= part_size {
            // Whole parts go as slices of one buffer; only the short tail is copied.
            let mut whole = std::mem::take(&mut self.buf);
            let n = whole.len() / part_size * part_size;
            self.buf = whole.split_off(n);
            self.buf.reserve(part_size.saturating_sub(self.buf.len()));
            let whole = Bytes::from(whole);
            for at in (0..n).step_by(part_size) {
                self.ship_part(whole.slice(at..at + part_size))?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// Completes the object: one PUT if it fits in a part, else the remaining part and the
    /// multipart completion (see [`ObjectWriter`]). Only then is the object visible.
    fn sync(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let rest = Bytes::from(std::mem::take(&mut self.buf));
        if self.upload.is_none() {
            self.tier.put(&self.path, rest)?;
        } else {
            if !rest.is_empty() {
                self.ship_part(rest)?;
            }
            self.wait_parts(0)?;
            self.complete()?;
        }
        self.done = true;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if let Some(upload) = self.upload.take() {
            self.abort(upload);
        }
    }
}
