//! Writes a table file from entries added in increasing internal-key order.

use std::sync::Arc;

use bytes::Bytes;

use super::block::{Block, BlockBuilder};
use super::filter::key_hash;
use super::filter::FilterBuilder;
use super::format::{self, write_block, BlockHandle, Footer};
use super::index::trie::MashMetaBuilder;
use super::index::IndexKind;
use super::properties::TableProperties;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::options::Compression;
use crate::range_del::RangeTombstone;
use crate::storage::WritableFile;
use crate::types::{self, ValueKind};

/// Meta-index names of the optional blocks.
pub const META_FILTER: &str = "strata.filter.bloom";
/// Meta-index name of the properties block.
pub const META_PROPERTIES: &str = "strata.properties";
/// Meta-index name of the range-tombstone block.
pub const META_RANGE_DEL: &str = "strata.range_del";

/// Knobs for one table.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableBuilderOptions {
    /// Target size of a data block in bytes: a block is cut once its estimate reaches it.
    pub block_size: usize,
    /// Entries between restart points in data blocks.
    pub restart_interval: usize,
    /// Bloom filter bits per key; 0 writes no filter (nor does a table with a MashMeta index).
    pub bloom_bits_per_key: f64,
    /// Keys per bucket of the data blocks' hash indexes (`Options::data_block_hash_ratio`); 0
    /// writes none, as jobs serialized before this field existed did.
    #[serde(default)]
    pub data_block_hash_ratio: f64,
    /// How data blocks are compressed (a block compressing by under 12.5% is stored raw).
    pub compression: Compression,
    /// The index of tables written to the capacity tier ([`TableBuilder::set_index`]); fast-tier
    /// tables always get a block index and bloom filter. A job serialized before this field
    /// existed wrote block indexes, so that is what it reads as (`Options` defaults to `Auto`).
    #[serde(default = "block_index")]
    pub capacity_index: IndexKind,
    /// Bytes between writeback requests ([`WritableFile::start_writeback`]); 0 never asks.
    /// A remote worker writes its outputs to local scratch files with the database's setting
    /// (a job serialized before this field existed asks only at the end).
    #[serde(default)]
    pub bytes_per_sync: u64,
}

fn block_index() -> IndexKind {
    IndexKind::Block
}

/// What a finished table holds, for its `FileMeta`.
#[derive(Clone, Debug)]
pub struct TableSummary {
    /// The table file's size in bytes.
    pub file_size: u64,
    /// The table's properties, as written.
    pub props: TableProperties,
    /// Smallest and largest point internal keys, if any point entry was added.
    pub smallest_point: Option<Vec<u8>>,
    /// The largest point internal key; `None` if no point entry was added.
    pub largest_point: Option<Vec<u8>>,
    /// With [`TableBuilder::capture_meta_tail`]: the offset where metadata starts and every byte
    /// from there to the end of the file (for the MetaCache).
    pub meta_tail: Option<(u64, Vec<u8>)>,
}

/// Passes appends through and keeps a copy.
struct Tee {
    inner: Box<dyn WritableFile>,
    copy: std::sync::Arc<parking_lot::Mutex<Vec<u8>>>,
}

impl WritableFile for Tee {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.copy.lock().extend_from_slice(data);
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn start_writeback(&mut self) -> Result<()> {
        self.inner.start_writeback()
    }
}

/// Stands in for a moved-out file for an instant.
struct Sink;

impl WritableFile for Sink {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        0
    }
}

/// Builds one table file.
pub struct TableBuilder {
    file: Box<dyn WritableFile>,
    opts: TableBuilderOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    /// With a MashMeta index: the trie being collected (and no block index or filter).
    trie: Option<MashMetaBuilder>,
    /// `IndexKind::Auto`: the trie, the block index and the filter are all collected, and the
    /// smaller of trie vs. index + filter is written.
    auto: bool,
    filter: Option<FilterBuilder>,
    range_dels: Vec<RangeTombstone>,
    props: TableProperties,
    first_key: Option<Vec<u8>>,
    last_key: Vec<u8>,
    capture_tail: bool,
    /// File length at the last writeback request.
    written_back: u64,
    /// Where each data block goes as it is written ([`TableBuilder::prepopulate`]), with the
    /// table's number.
    prepopulate: Option<(Arc<BlockCache>, u64)>,
}

impl TableBuilder {
    /// Keep a copy of the metadata written by `finish` (index, filter, range tombstones,
    /// properties, meta-index, footer) and return it in the summary.
    pub fn capture_meta_tail(&mut self) {
        self.capture_tail = true;
    }

    /// Chooses the table's index before the first entry is added: a MashMeta trie replaces both
    /// the block index and the bloom filter.
    pub fn set_index(&mut self, kind: IndexKind) {
        debug_assert_eq!(
            self.props.num_entries, 0,
            "set_index after entries were added"
        );
        self.auto = kind == IndexKind::Auto;
        match kind {
            IndexKind::Block => self.trie = None,
            IndexKind::MashMeta => {
                self.trie = Some(MashMetaBuilder::new());
                self.filter = None;
            }
            IndexKind::Auto => self.trie = Some(MashMetaBuilder::new()),
        }
    }

    /// Inserts every data block into `cache` as table `table_id`'s block at its offset, as it
    /// is written (`Options::prepopulate_block_cache`): the same decoded block a read of it
    /// would cache.
    pub fn prepopulate(&mut self, cache: Arc<BlockCache>, table_id: u64) {
        self.prepopulate = Some((cache, table_id));
    }

    /// A builder writing to `file` (freshly created), with a block index and, if
    /// `opts.bloom_bits_per_key` is positive, a bloom filter; see [`TableBuilder::set_index`].
    pub fn new(file: Box<dyn WritableFile>, opts: TableBuilderOptions) -> Self {
        let filter =
            (opts.bloom_bits_per_key > 0.0).then(|| FilterBuilder::new(opts.bloom_bits_per_key));
        TableBuilder {
            data: if opts.data_block_hash_ratio > 0.0 {
                BlockBuilder::with_hash_index(opts.restart_interval, opts.data_block_hash_ratio)
            } else {
                BlockBuilder::new(opts.restart_interval)
            },
            index: BlockBuilder::new(1),
            trie: None,
            auto: false,
            props: TableProperties {
                compression: opts.compression.type_byte() as u64,
                smallest_seq: u64::MAX,
                ..Default::default()
            },
            file,
            opts,
            filter,
            range_dels: Vec::new(),
            first_key: None,
            last_key: Vec::new(),
            capture_tail: false,
            written_back: 0,
            prepopulate: None,
        }
    }

    /// Adds a point entry; `ikey` must sort after every key added before.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let p = types::parse_internal_key(ikey)?;
        if self.first_key.is_some() && types::compare_internal(&self.last_key, ikey).is_ge() {
            return Err(Error::invalid("table keys added out of order"));
        }
        // One hash of the user key serves the filter and the data block's hash index.
        let hashed = self.filter.is_some() || self.opts.data_block_hash_ratio > 0.0;
        let h = if hashed { key_hash(p.user_key) } else { 0 };
        if let Some(f) = self.filter.as_mut() {
            f.add_hash(h);
        }
        if let Some(t) = self.trie.as_mut() {
            t.add(p.user_key);
        }
        self.props.num_entries += 1;
        if p.kind == ValueKind::Delete {
            self.props.num_deletions += 1;
        }
        self.props.raw_key_size += ikey.len() as u64;
        self.props.raw_value_size += value.len() as u64;
        self.props.smallest_seq = self.props.smallest_seq.min(p.seq);
        self.props.largest_seq = self.props.largest_seq.max(p.seq);
        if self.first_key.is_none() {
            self.first_key = Some(ikey.to_vec());
        }
        if self.opts.data_block_hash_ratio > 0.0 {
            self.data.add_hashed(ikey, value, h);
        } else {
            self.data.add(ikey, value);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        if self.data.estimated_size() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a range tombstone (any order).
    pub fn add_range_tombstone(&mut self, t: RangeTombstone) {
        self.props.smallest_seq = self.props.smallest_seq.min(t.seq);
        self.props.largest_seq = self.props.largest_seq.max(t.seq);
        self.range_dels.push(t);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let last = self.data.last_key().to_vec();
        let raw = self.data.finish();
        let (h, _) = write_block(self.file.as_mut(), &raw, self.opts.compression)?;
        if let Some((cache, table)) = &self.prepopulate {
            // A copy: `raw`'s capacity may be twice its length, and the cache charges length.
            cache.insert(*table, h.offset, Block::new(Bytes::copy_from_slice(&raw))?);
        }
        let written = self.file.len();
        if self.opts.bytes_per_sync > 0 && written - self.written_back >= self.opts.bytes_per_sync {
            self.file.start_writeback()?;
            self.written_back = written;
        }
        self.props.num_data_blocks += 1;
        self.props.data_size += h.size;
        if let Some(t) = self.trie.as_mut() {
            t.finish_block(h);
        }
        if self.trie.is_none() || self.auto {
            let mut v = Vec::new();
            h.encode_to(&mut v);
            self.index.add(&last, &v);
        }
        Ok(())
    }

    /// Bytes the table would take if finished now (approximately).
    pub fn estimated_size(&self) -> u64 {
        self.file.len() + self.data.estimated_size() as u64
    }

    /// Point entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Writes the remaining blocks and the footer, and syncs the file.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.flush_data_block()?;
        let meta_start = self.file.len();
        let captured = self.capture_tail.then(|| {
            let copy = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
            let inner = std::mem::replace(&mut self.file, Box::new(Sink));
            self.file = Box::new(Tee {
                inner,
                copy: copy.clone(),
            });
            copy
        });
        let mut meta = BlockBuilder::new(1);
        let mut entries: Vec<(&str, BlockHandle)> = Vec::new();
        let mut filter_raw = self.filter.take().map(|mut f| f.finish());
        let trie_raw = self.trie.as_ref().map(|t| t.finish());
        let index_raw = match &trie_raw {
            Some(t) if self.auto => {
                let index = self.index.finish();
                let block_bytes = index.len() + filter_raw.as_ref().map_or(0, |f| f.len());
                if t.len() <= block_bytes {
                    filter_raw = None;
                    None
                } else {
                    Some(index)
                }
            }
            Some(_) => None,
            None => Some(self.index.finish()),
        };
        if let Some(raw) = filter_raw {
            let (h, _) = write_block(self.file.as_mut(), &raw, Compression::None)?;
            self.props.filter_size = h.size;
            entries.push((META_FILTER, h));
        }
        if !self.range_dels.is_empty() {
            let mut ts = std::mem::take(&mut self.range_dels);
            ts.sort_by(|a, b| a.start.cmp(&b.start).then(b.seq.cmp(&a.seq)));
            let mut rb = BlockBuilder::new(1);
            let mut prev: Option<Vec<u8>> = None;
            for t in &ts {
                let k = types::internal_key(&t.start, t.seq, ValueKind::RangeDelete as u8);
                // Identical (start, seq) pairs can only differ in end; keep the first.
                if prev.as_deref() == Some(&k[..]) {
                    continue;
                }
                rb.add(&k, &t.end);
                self.props.num_range_deletions += 1;
                prev = Some(k);
            }
            let (h, _) = write_block(self.file.as_mut(), &rb.finish(), Compression::None)?;
            entries.push((META_RANGE_DEL, h));
        }
        if self.props.smallest_seq == u64::MAX {
            self.props.smallest_seq = 0;
        }
        // The index is written before properties so its size can be recorded.
        let (index_raw, mashmeta) = match (index_raw, trie_raw) {
            (Some(index), _) => (index, false),
            (None, Some(trie)) => {
                self.props.index_type = 1;
                (trie, true)
            }
            (None, None) => (self.index.finish(), false),
        };
        let version = format::version_for(mashmeta, self.opts.data_block_hash_ratio > 0.0);
        let (index_h, _) = write_block(self.file.as_mut(), &index_raw, Compression::None)?;
        self.props.index_size = index_h.size;
        let (ph, _) = write_block(self.file.as_mut(), &self.props.encode(), Compression::None)?;
        entries.push((META_PROPERTIES, ph));
        entries.sort_by(|a, b| a.0.cmp(b.0));
        for (name, h) in &entries {
            let mut v = Vec::new();
            h.encode_to(&mut v);
            meta.add(name.as_bytes(), &v);
        }
        let (meta_h, _) = write_block(self.file.as_mut(), &meta.finish(), Compression::None)?;
        let footer = Footer {
            metaindex: meta_h,
            index: index_h,
            version,
        };
        self.file.append(&footer.encode())?;
        self.file.sync()?;
        Ok(TableSummary {
            file_size: self.file.len(),
            props: self.props,
            smallest_point: self.first_key,
            largest_point: (!self.last_key.is_empty()).then_some(self.last_key),
            meta_tail: captured.map(|c| (meta_start, std::mem::take(&mut *c.lock()))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Records the file length at each writeback request.
    struct Requests {
        len: u64,
        at: Arc<parking_lot::Mutex<Vec<u64>>>,
    }

    impl WritableFile for Requests {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.len += data.len() as u64;
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.len
        }
        fn start_writeback(&mut self) -> Result<()> {
            self.at.lock().push(self.len);
            Ok(())
        }
    }

    /// The writeback requests (file lengths) and the table's data bytes and file size.
    fn requests(bytes_per_sync: u64) -> (Vec<u64>, u64, u64) {
        let at = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let opts = TableBuilderOptions {
            bytes_per_sync,
            compression: Compression::None,
            ..crate::db::table_options(&crate::Options::default(), 1)
        };
        let file = Requests {
            len: 0,
            at: at.clone(),
        };
        let mut b = TableBuilder::new(Box::new(file), opts);
        for i in 0..2000u32 {
            let k = types::internal_key(format!("key{i:06}").as_bytes(), 1, ValueKind::Put as u8);
            b.add(&k, &[7u8; 100]).unwrap();
        }
        let s = b.finish().unwrap();
        let at = at.lock().clone();
        (at, s.props.data_size, s.file_size)
    }

    /// A writeback is asked for once at least `bytes_per_sync` bytes were written since the
    /// last request (after the data block that crosses it), and never with 0.
    #[test]
    fn writeback_is_requested_every_bytes_per_sync() {
        let (none, _, size) = requests(0);
        assert!(none.is_empty());
        let every = 16 << 10;
        // One 4 KiB block (plus its trailer) past the threshold at most.
        let most = every + 8192;
        let (at, data, size2) = requests(every);
        assert_eq!(size, size2, "requests change no byte");
        assert!(
            at.len() as u64 >= data / most,
            "{at:?} for {data} data bytes"
        );
        let mut prev = 0;
        for &a in &at {
            assert!(a - prev >= every, "{prev} then {a}");
            assert!(a - prev < most, "{prev} then {a}");
            prev = a;
        }
        assert!(
            data - prev < most,
            "the last request at {prev} of {data} data bytes"
        );
    }
}
