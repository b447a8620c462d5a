//! A table on the capacity tier seen as a file: range GETs for reads, a multipart upload for
//! writes.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStoreExt, WriteMultipart};

use super::CapacityTier;
use crate::error::{Error, Result};
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

/// Streams a new object. Bytes are buffered up to one part; full parts are uploaded while the
/// writer goes on (at most two in flight), so memory stays bounded by about three parts.
/// A writer that is dropped before `sync` aborts its upload: nothing becomes visible.
pub struct ObjectWriter {
    tier: Arc<CapacityTier>,
    path: ObjPath,
    buf: Vec<u8>,
    upload: Option<WriteMultipart>,
    len: u64,
    done: bool,
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

    fn ship_part(&mut self) -> Result<()> {
        let part = Bytes::from(std::mem::take(&mut self.buf));
        if self.upload.is_none() {
            let store = self.tier.store().clone();
            let p = self.path.clone();
            let up = self
                .tier
                .run(async move { store.put_multipart(&p).await })
                .map_err(|e| self.tier.failed("start upload", &self.path, e))?;
            self.upload = Some(WriteMultipart::new_with_chunk_size(
                up,
                self.tier.part_size(),
            ));
        }
        let n = part.len() as u64;
        let up = self.upload.as_mut().expect("started above");
        self.tier.admit();
        let _guard = self.tier.handle().enter();
        let start = std::time::Instant::now();
        up.put(part);
        futures::executor::block_on(up.wait_for_capacity(2))
            .map_err(|e| self.tier.failed("upload part", &self.path, e))?;
        self.tier
            .stats()
            .capacity_write_latency
            .record(start.elapsed());
        self.tier.stats().record_put(n);
        Ok(())
    }
}

impl WritableFile for ObjectWriter {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.done {
            return Err(Error::invalid("append to a finished object"));
        }
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        if self.buf.len() >= self.tier.part_size() {
            self.ship_part()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// Completes the object: one PUT if it fits in a part, else the remaining part and the
    /// multipart completion. Only then is the object visible.
    fn sync(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        match self.upload.take() {
            None => {
                let data = Bytes::from(std::mem::take(&mut self.buf));
                self.tier.put(&self.path, data)?;
            }
            Some(mut up) => {
                let rest = Bytes::from(std::mem::take(&mut self.buf));
                let n = rest.len() as u64;
                self.tier.admit();
                let _guard = self.tier.handle().enter();
                if !rest.is_empty() {
                    up.put(rest);
                    self.tier.stats().record_put(n);
                }
                let start = std::time::Instant::now();
                // The completion makes the object visible: refused, and the upload aborted,
                // once the log location's lease was taken over (checked as a PUT checks it).
                // It carries no deadline: it also uploads the last part and waits for those
                // in flight, which may take longer than the lease's remaining validity.
                if let Err(e) = self.tier.check_write_fence() {
                    let _ = futures::executor::block_on(up.abort());
                    return Err(e);
                }
                futures::executor::block_on(up.finish())
                    .map_err(|e| self.tier.failed("complete upload", &self.path, e))?;
                self.tier.answered();
                self.tier
                    .stats()
                    .capacity_write_latency
                    .record(start.elapsed());
                self.tier.stats().puts.fetch_add(1, Ordering::Relaxed);
            }
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
        if let Some(up) = self.upload.take() {
            let _guard = self.tier.handle().enter();
            let _ = futures::executor::block_on(up.abort());
        }
    }
}
