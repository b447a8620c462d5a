//! [`TableStore`]: creates, opens and removes table files on either tier.
//!
//! A capacity table is opened as a [`CapacityFile`]: reads at or past its metadata offset are
//! served from the MetaCache sidecar (loaded with one local read, or rebuilt from the capacity
//! tier if missing), data-block reads try the persistent data cache before a range GET, and
//! blocks fetched remotely are offered to that cache unless the read is a scan.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::Tier;
use crate::cache::persistent::{MetaCache, PersistentCache};
use crate::cache::persistent::{MetaKinds, MetaTotals};
use crate::error::{Error, Result};
use crate::sst::format::{BlockHandle, Footer, FOOTER_SIZE};
use crate::stats::TierStats;
use crate::storage::object::{CapacityTier, ObjectFile};
use crate::storage::{RandomAccessFile, Storage, WritableFile};

/// The parts a [`TableStore`] is built from.
pub struct TablesConfig {
    /// The database directory, where fast-tier tables live as `NNNNNN.sst`.
    pub dir: PathBuf,
    /// The fast tier's storage.
    pub fast: Arc<dyn Storage>,
    /// The capacity tier; `None` when none is configured (a capacity table then fails to open).
    pub capacity: Option<Arc<CapacityTier>>,
    /// The MetaCache of capacity tables' metadata on the fast tier; `None`: a capacity table's
    /// metadata is fetched from the capacity tier when it opens.
    pub meta: Option<Arc<MetaCache>>,
    /// The persistent cache of capacity-tier data blocks; `None`: no such cache.
    pub data_cache: Option<Arc<dyn PersistentCache>>,
    /// Counters of the tiers and their caches.
    pub stats: Arc<TierStats>,
    /// Tables a checkpoint or clone shares with its source (read from the source's tier,
    /// never deleted there); `None` for a database that shares none.
    pub shared: Option<Arc<super::shared::SharedTables>>,
}

/// Table files on both tiers.
pub struct TableStore {
    c: TablesConfig,
    /// New fast-tier tables are created here instead of `c.dir` (a compaction worker's
    /// scratch directory: nothing it writes appears in the database directory until the job
    /// succeeds).
    staging: Option<PathBuf>,
}

/// The object name of capacity table `id`.
pub fn object_name(id: u64) -> String {
    format!("tables/{id:06}.sst")
}

/// The local path of fast table `id`.
pub fn local_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:06}.sst"))
}

impl TableStore {
    /// A store over `c`'s parts; new fast-tier tables go to `c.dir`.
    pub fn new(c: TablesConfig) -> Self {
        TableStore { c, staging: None }
    }

    /// New fast-tier tables go to `dir` instead of the database directory.
    pub fn with_staging(mut self, dir: PathBuf) -> Self {
        self.staging = Some(dir);
        self
    }

    /// The database directory, where fast-tier tables live.
    pub fn dir(&self) -> &Path {
        &self.c.dir
    }

    /// The capacity tier, if one is configured.
    pub fn capacity(&self) -> Option<&Arc<CapacityTier>> {
        self.c.capacity.as_ref()
    }

    /// The persistent cache of capacity-tier data blocks, if one is configured.
    pub fn data_cache(&self) -> Option<&Arc<dyn PersistentCache>> {
        self.c.data_cache.as_ref()
    }

    /// Counters of the tiers and their caches.
    pub fn stats(&self) -> &Arc<TierStats> {
        &self.c.stats
    }

    /// Tables shared with the database this one was checkpointed or cloned from.
    pub fn shared(&self) -> Option<&Arc<super::shared::SharedTables>> {
        self.c.shared.as_ref()
    }

    /// The tier capacity table `id` is read from: the source's for a shared table.
    fn tier_of(&self, id: u64) -> Result<&Arc<CapacityTier>> {
        match &self.c.shared {
            Some(s) if s.contains(id) => Ok(s.tier()),
            _ => self.tier_handle(),
        }
    }

    fn tier_handle(&self) -> Result<&Arc<CapacityTier>> {
        self.c.capacity.as_ref().ok_or_else(|| {
            Error::invalid(
                "the database has capacity-tier tables but no capacity tier is configured",
            )
        })
    }

    /// A new, empty table file.
    pub fn create(&self, id: u64, tier: Tier) -> Result<Box<dyn WritableFile>> {
        match tier {
            Tier::Fast => Ok(Box::new(FastWriter {
                inner: self.c.fast.create(&local_path(
                    self.staging.as_ref().unwrap_or(&self.c.dir),
                    id,
                ))?,
                stats: self.c.stats.clone(),
            })),
            Tier::Capacity => Ok(Box::new(self.tier_handle()?.writer(&object_name(id)))),
        }
    }

    /// Records the metadata tail of a capacity table just written.
    pub fn record_meta_tail(
        &self,
        id: u64,
        size: u64,
        offset: u64,
        tail: &[u8],
        kinds: Option<MetaKinds>,
    ) -> Result<()> {
        match &self.c.meta {
            Some(m) => m.insert(id, size, offset, tail, kinds),
            None => Ok(()),
        }
    }

    /// Notes what an opened capacity table's metadata is made of (for [`Self::meta_totals`]).
    pub fn note_meta_kinds(&self, id: u64, kinds: MetaKinds) {
        if let Some(m) = &self.c.meta {
            m.note_kinds(id, kinds);
        }
    }

    /// Capacity-table metadata held on the fast tier; `None` without a MetaCache.
    pub fn meta_totals(&self) -> Option<MetaTotals> {
        self.c.meta.as_ref().map(|m| m.totals())
    }

    /// Opens table `id` of `size` bytes on `tier` for reading.
    pub fn open(&self, id: u64, tier: Tier, size: u64) -> Result<Arc<dyn RandomAccessFile>> {
        match tier {
            Tier::Fast => Ok(Arc::new(FastFile {
                inner: self.c.fast.open(&local_path(&self.c.dir, id))?,
                stats: self.c.stats.clone(),
            })),
            Tier::Capacity => {
                let cap = self.tier_of(id)?;
                let remote = cap.reader(&object_name(id), size);
                let (tail_offset, tail) = match self.c.meta.as_ref().and_then(|m| m.get(id, size)) {
                    Some(t) => t,
                    None => {
                        let (off, tail) = fetch_tail(&remote)?;
                        self.record_meta_tail(id, size, off, &tail, None)?;
                        (off, tail)
                    }
                };
                Ok(Arc::new(CapacityFile {
                    id,
                    readahead: cap.readahead(),
                    window: parking_lot::Mutex::new(None),
                    remote,
                    tail_offset,
                    tail,
                    cache: self.c.data_cache.clone(),
                    stats: self.c.stats.clone(),
                }))
            }
        }
    }

    /// Drops what the fast tier caches about capacity table `id` (its MetaCache sidecar, its
    /// blocks in the data cache): done when the table leaves the last version, before garbage
    /// collection deletes the object itself.
    pub fn forget_cached(&self, id: u64) {
        if let Some(m) = &self.c.meta {
            m.remove(id);
        }
        if let Some(d) = &self.c.data_cache {
            d.invalidate_table(id);
        }
    }

    /// Deletes a table's file and everything cached about it.
    pub fn remove(&self, id: u64, tier: Tier) -> Result<()> {
        match tier {
            Tier::Fast => self.c.fast.remove(&local_path(
                self.staging.as_ref().unwrap_or(&self.c.dir),
                id,
            )),
            Tier::Capacity => {
                self.forget_cached(id);
                if self.c.shared.as_ref().is_some_and(|s| s.contains(id)) {
                    // The source's table: the caller releases it from the link instead.
                    return Ok(());
                }
                self.tier_handle()?
                    .delete(&cap_path(self.tier_handle()?, id))
            }
        }
    }

    /// Table numbers of every object under `tables/` on the capacity tier, with its name
    /// (including partial-upload leftovers such as a local store's `NNNNNN.sst#<part>`).
    pub fn capacity_objects(&self) -> Result<Vec<(u64, String)>> {
        let Some(cap) = &self.c.capacity else {
            return Ok(Vec::new());
        };
        Ok(cap
            .list("tables")?
            .into_iter()
            .filter_map(|(name, _)| {
                let stem = name.strip_prefix("tables/")?;
                let digits: String = stem.chars().take_while(|c| c.is_ascii_digit()).collect();
                let id = digits.parse::<u64>().ok()?;
                stem[digits.len()..]
                    .starts_with(".sst")
                    .then_some((id, name))
            })
            .collect())
    }

    /// Open's sweep of the capacity tier (the rule is [`super::gc`]'s): deletes partial-upload
    /// leftovers and returns the complete tables neither live nor protected by a checkpoint
    /// record (orphans of a crash, tables released while the database was closed), which the
    /// caller defers by the minimum age. Incomplete S3 multipart uploads are invisible to
    /// listing; a bucket lifecycle rule should abort them.
    pub fn sweep_capacity(
        &self,
        live_capacity: &HashSet<u64>,
        protected: &HashSet<u64>,
    ) -> Result<Vec<u64>> {
        let Some(cap) = &self.c.capacity else {
            return Ok(Vec::new());
        };
        let o = super::gc::plan_orphans(
            &self.capacity_objects()?,
            live_capacity,
            protected,
            object_name,
        );
        for name in &o.partial {
            tracing::info!(object = %name, "removing a partial capacity-tier upload");
            cap.delete(&cap.path(name))?;
        }
        Ok(o.unreferenced)
    }
}

fn cap_path(cap: &CapacityTier, id: u64) -> object_store::path::Path {
    cap.path(&object_name(id))
}

/// Reads a capacity table's metadata tail from the tier: footer, meta-index, then everything
/// from the first metadata block to the end (three requests, once per table).
fn fetch_tail(remote: &ObjectFile) -> Result<(u64, Bytes)> {
    let size = remote.size();
    if size < FOOTER_SIZE as u64 {
        return Err(Error::corruption("capacity table shorter than a footer"));
    }
    let fb = remote.read_at(size - FOOTER_SIZE as u64, FOOTER_SIZE)?;
    let footer = Footer::decode(&fb, size)?;
    let mut lowest = footer.index.offset.min(footer.metaindex.offset);
    let mi = crate::sst::format::read_block(remote, footer.metaindex, "meta-index")?;
    let block = crate::sst::block::Block::new(mi)?;
    let mut it = block.iter(crate::types::compare_bytewise);
    use crate::iter::InternalIterator;
    it.seek_to_first();
    while it.valid() {
        let h = BlockHandle::decode(it.value())?;
        lowest = lowest.min(h.offset);
        it.next();
    }
    it.status()?;
    let tail = remote.read_at(lowest, (size - lowest) as usize)?;
    Ok((lowest, tail))
}

/// A fast-tier table file that counts its reads.
struct FastFile {
    inner: Arc<dyn RandomAccessFile>,
    stats: Arc<TierStats>,
}

impl RandomAccessFile for FastFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.stats.fast_reads.fetch_add(1, Ordering::Relaxed);
        self.stats
            .fast_read_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
        let start = std::time::Instant::now();
        let r = self.inner.read_at(offset, len);
        self.stats.fast_read_latency.record(start.elapsed());
        super::temperature::note_table_io();
        r
    }
    /// Counted as a fast-tier read when it returns bytes; not timed and not noted as table
    /// I/O (`note_table_io`): it copied from memory, it did not wait for the device.
    fn read_block_nowait(&self, offset: u64, len: usize) -> Result<Option<Bytes>> {
        let r = self.inner.read_block_nowait(offset, len)?;
        if r.is_some() {
            self.stats.fast_reads.fetch_add(1, Ordering::Relaxed);
            self.stats
                .fast_read_bytes
                .fetch_add(len as u64, Ordering::Relaxed);
        }
        Ok(r)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

/// A fast-tier table file being written, timing its flushes and syncs.
struct FastWriter {
    inner: Box<dyn WritableFile>,
    stats: Arc<TierStats>,
}

impl WritableFile for FastWriter {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.stats
            .fast_write_bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        let start = std::time::Instant::now();
        let r = self.inner.flush();
        self.stats.fast_write_latency.record(start.elapsed());
        r
    }
    fn sync(&mut self) -> Result<()> {
        let start = std::time::Instant::now();
        let r = self.inner.sync();
        self.stats.fast_write_latency.record(start.elapsed());
        r
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn start_writeback(&mut self) -> Result<()> {
        let start = std::time::Instant::now();
        let r = self.inner.start_writeback();
        self.stats.fast_write_latency.record(start.elapsed());
        r
    }
}

/// A capacity-tier table: metadata from the local sidecar, data through the persistent cache.
struct CapacityFile {
    id: u64,
    /// Sequential scans (compaction) read this much per request, kept in `window`.
    readahead: usize,
    window: parking_lot::Mutex<Option<(u64, Bytes)>>,
    remote: ObjectFile,
    tail_offset: u64,
    tail: Bytes,
    cache: Option<Arc<dyn PersistentCache>>,
    stats: Arc<TierStats>,
}

impl CapacityFile {
    fn read(&self, offset: u64, len: usize, fill: bool) -> Result<Bytes> {
        if offset >= self.tail_offset {
            let start = (offset - self.tail_offset) as usize;
            return self
                .tail
                .get(start..start + len)
                .map(|_| self.tail.slice(start..start + len))
                .ok_or_else(|| Error::corruption("read past the end of a capacity table"));
        }
        // Compactions (and scans that do not fill caches) stream the table in large requests;
        // they bypass the persistent cache, which serves point reads: a lookup would save no
        // request, would count in its hit rate and would refresh blocks about to be deleted.
        if !fill && self.readahead > len {
            return self.read_ahead(offset, len);
        }
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(self.id, offset, len) {
                self.stats.pcache_hits.fetch_add(1, Ordering::Relaxed);
                return Ok(b);
            }
            self.stats.pcache_misses.fetch_add(1, Ordering::Relaxed);
        }
        super::temperature::note_table_io();
        let b = self.remote.read_at(offset, len)?;
        if fill {
            if let Some(c) = &self.cache {
                c.insert(self.id, offset, &b);
            }
        }
        Ok(b)
    }
}

impl CapacityFile {
    /// Serves a scan's block from the readahead window, refilling it with one large request
    /// (up to the start of the metadata tail) when the block is outside it.
    fn read_ahead(&self, offset: u64, len: usize) -> Result<Bytes> {
        let mut w = self.window.lock();
        if let Some((start, buf)) = w.as_ref() {
            if offset >= *start && offset + len as u64 <= *start + buf.len() as u64 {
                let s = (offset - start) as usize;
                return Ok(buf.slice(s..s + len));
            }
        }
        let end = (offset + self.readahead as u64)
            .min(self.tail_offset)
            .max(offset + len as u64);
        let buf = self.remote.read_at(offset, (end - offset) as usize)?;
        let out = buf.slice(..len);
        *w = Some((offset, buf));
        Ok(out)
    }
}

impl RandomAccessFile for CapacityFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.read(offset, len, true)
    }
    fn read_block_at(&self, offset: u64, len: usize, fill_cache: bool) -> Result<Bytes> {
        self.read(offset, len, fill_cache)
    }
    fn size(&self) -> u64 {
        self.remote.size()
    }
}
