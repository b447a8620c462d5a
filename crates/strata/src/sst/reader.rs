//! Reads a table: point lookups through the bloom filter and block index, or through the
//! MashMeta trie, and two-level iteration over either index.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::Bytes;

use super::block::{Block, BlockIter, GetSeek};
use super::builder::{META_FILTER, META_PROPERTIES, META_RANGE_DEL};
use super::filter::{key_hash, BloomFilter};
use super::format::version_has_mashmeta;
use super::format::{
    read_block, read_block_cached, read_block_nowait, BlockHandle, Footer, FOOTER_SIZE,
};
use super::index::{BlockIndex, IndexCursor, MashMeta, TableIndex};
use super::properties::TableProperties;
use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::range_del::{Fragments, RangeTombstone};
use crate::stats::EngineStats;
use crate::storage::RandomAccessFile;
use crate::types::{self, compare_bytewise, compare_internal, SeqNo, ValueKind};

/// An open table: index, filter, range tombstones and properties in memory; data blocks read on
/// demand through the block cache.
pub struct Table {
    id: u64,
    file: Arc<dyn RandomAccessFile>,
    index: TableIndex,
    filter: Option<BloomFilter>,
    range_dels: Vec<RangeTombstone>,
    fragments: Fragments,
    props: TableProperties,
    cache: Option<Arc<BlockCache>>,
    stats: Arc<EngineStats>,
}

impl Table {
    /// Opens table `id` from `file`: reads and checks its footer, index, meta-index, filter,
    /// range tombstones and properties; data blocks are read on demand, through `cache` if given.
    /// Fails on a read error, on damage or a missing properties block (corruption), or on an
    /// unknown format version (`NotADatabase`).
    pub fn open(
        id: u64,
        file: Arc<dyn RandomAccessFile>,
        cache: Option<Arc<BlockCache>>,
        stats: Arc<EngineStats>,
    ) -> Result<Table> {
        let ctx = |e: Error| -> Error { e.in_table(id) };
        let size = file.size();
        if size < FOOTER_SIZE as u64 {
            return Err(ctx(Error::corruption(
                "file is shorter than a table footer",
            )));
        }
        let footer_bytes = file.read_at(size - FOOTER_SIZE as u64, FOOTER_SIZE)?;
        let footer = Footer::decode(&footer_bytes, size).map_err(ctx)?;
        let index_bytes = read_block(file.as_ref(), footer.index, "index").map_err(ctx)?;
        let index = if version_has_mashmeta(footer.version) {
            let t = MashMeta::decode(&index_bytes).map_err(ctx)?;
            if let Some(last) = t.num_blocks().checked_sub(1) {
                let h = t.block(last);
                let data_end = size.saturating_sub(FOOTER_SIZE as u64);
                let trailer = super::format::BLOCK_TRAILER_SIZE as u64;
                if h.offset.saturating_add(h.size).saturating_add(trailer) > data_end {
                    return Err(ctx(Error::corruption(
                        "MashMeta block handle points past the file",
                    )));
                }
            }
            TableIndex::Trie(Arc::new(t))
        } else {
            TableIndex::Blocks(BlockIndex::new(Block::new(index_bytes).map_err(ctx)?).map_err(ctx)?)
        };
        let meta =
            Block::new(read_block(file.as_ref(), footer.metaindex, "meta-index").map_err(ctx)?)
                .map_err(ctx)?;
        let mut filter = None;
        let mut range_dels = Vec::new();
        let mut props = None;
        let mut it = meta.iter(compare_bytewise);
        it.seek_to_first();
        while it.valid() {
            let h = BlockHandle::decode(it.value()).map_err(ctx)?;
            if h.offset.saturating_add(h.size) > size {
                return Err(ctx(Error::corruption(
                    "meta block handle points past the file",
                )));
            }
            match it.key() {
                k if k == META_FILTER.as_bytes() => {
                    let b = read_block(file.as_ref(), h, "filter").map_err(ctx)?;
                    filter = Some(
                        BloomFilter::new(b)
                            .ok_or_else(|| ctx(Error::corruption("malformed bloom filter")))?,
                    );
                }
                k if k == META_RANGE_DEL.as_bytes() => {
                    let b = Block::new(read_block(file.as_ref(), h, "range-del").map_err(ctx)?)
                        .map_err(ctx)?;
                    let mut ri = b.iter(compare_internal);
                    ri.seek_to_first();
                    while ri.valid() {
                        let p = types::parse_internal_key(ri.key()).map_err(ctx)?;
                        range_dels.push(RangeTombstone::new(p.user_key, ri.value(), p.seq));
                        ri.next();
                    }
                    ri.status().map_err(ctx)?;
                }
                k if k == META_PROPERTIES.as_bytes() => {
                    props = Some(
                        TableProperties::decode(
                            read_block(file.as_ref(), h, "properties").map_err(ctx)?,
                        )
                        .map_err(ctx)?,
                    );
                }
                _ => {}
            }
            it.next();
        }
        it.status().map_err(ctx)?;
        let props = props.ok_or_else(|| ctx(Error::corruption("missing properties block")))?;
        Ok(Table {
            id,
            file,
            index,
            filter,
            fragments: Fragments::new(&range_dels),
            range_dels,
            props,
            cache,
            stats,
        })
    }

    /// The table's file number.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The index: for each data block, its separator key (an internal key `>=` every key of
    /// the block; empty with a MashMeta index, which keeps no separators) and its handle, in
    /// order. For inspection tools; reads nothing.
    pub fn index_entries(&self) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        let mut out = Vec::new();
        match &self.index {
            TableIndex::Blocks(b) => {
                let mut it = b.block().iter(compare_internal);
                it.seek_to_first();
                while it.valid() {
                    out.push((it.key().to_vec(), BlockHandle::decode(it.value())?));
                    it.next();
                }
                it.status()?;
            }
            TableIndex::Trie(t) => {
                out.extend((0..t.num_blocks()).map(|i| (Vec::new(), t.block(i))))
            }
        }
        Ok(out)
    }

    /// The table's index (block index or MashMeta trie).
    pub fn index(&self) -> &TableIndex {
        &self.index
    }

    /// The table's range tombstones, by start key.
    pub fn range_tombstones(&self) -> &[RangeTombstone] {
        &self.range_dels
    }

    /// Starts loading the filter line a lookup of a key hashed `h` (`filter::key_hash` of the
    /// user key) tests; a hint, no effect on any answer. A lookup that will consult several
    /// tables hints them all before testing any, so their misses overlap.
    pub fn prefetch_filter(&self, h: u64) {
        if let Some(f) = &self.filter {
            f.prefetch_hash(h);
        }
    }

    /// Whether the table may hold a point entry for `user_key`: `false` only when its filter
    /// rules the key out (no filter: `true`).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.may_contain_hash(key_hash(user_key)))
    }

    /// The newest range tombstone of this table covering `user_key` at `snapshot` (0: none).
    pub fn max_covering_tombstone(&self, user_key: &[u8], snapshot: SeqNo) -> SeqNo {
        if self.fragments.is_empty() {
            return 0;
        }
        self.fragments.max_covering(user_key, snapshot)
    }

    fn read_data_block(&self, h: BlockHandle, fill_cache: bool) -> Result<Block> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(self.id, h.offset) {
                self.stats.block_cache_hits.fetch_add(1, Relaxed);
                return Ok(b);
            }
            self.stats.block_cache_misses.fetch_add(1, Relaxed);
        }
        self.stats.block_reads.fetch_add(1, Relaxed);
        self.stats.block_read_bytes.fetch_add(h.size + 5, Relaxed);
        let b = read_block_cached(self.file.as_ref(), h, "data", fill_cache)
            .and_then(Block::new)
            .map_err(|e| self.in_table(e))?;
        if fill_cache {
            if let Some(c) = &self.cache {
                c.insert(self.id, h.offset, b.clone());
            }
        }
        Ok(b)
    }

    /// The newest point entry for `user_key` at or below the lookup key's sequence number.
    /// `lookup` is `types::lookup_key(user_key, snapshot)`.
    pub fn get(&self, lookup: &[u8], user_key: &[u8]) -> Result<Option<(SeqNo, ValueKind, Bytes)>> {
        self.get_opt(lookup, user_key, false)
    }

    /// [`Table::get`]; with `cache_only`, a data block not in the block cache is not read and
    /// the lookup fails with `ErrorKind::Incomplete` (the filter and index are in memory).
    pub fn get_opt(
        &self,
        lookup: &[u8],
        user_key: &[u8],
        cache_only: bool,
    ) -> Result<Option<(SeqNo, ValueKind, Bytes)>> {
        let index = match &self.index {
            TableIndex::Trie(t) => return self.get_by_trie(t, lookup, user_key, cache_only),
            TableIndex::Blocks(b) => b,
        };
        // One hash of the user key serves the filter and the data block's hash index.
        let h = key_hash(user_key);
        if let Some(f) = &self.filter {
            self.stats.bloom_checked.fetch_add(1, Relaxed);
            if !f.may_contain_hash(h) {
                self.stats.bloom_useful.fetch_add(1, Relaxed);
                return Ok(None);
            }
        }
        // One key buffer for both seeks (index entry, then data entry).
        let mut key = Vec::with_capacity(lookup.len());
        let mut found = None;
        if let Some(handle) = index.find(lookup, &mut key)? {
            let block = self.block_for_get(handle, cache_only, true)?;
            found = Self::first_at_or_after(&block, lookup, user_key, h, &mut key)?;
        }
        let found = found.flatten();
        if found.is_none() && self.filter.is_some() {
            self.stats.bloom_false_positive.fetch_add(1, Relaxed);
        }
        Ok(found)
    }

    /// [`Table::get_opt`] of several keys, answers in the order of `reqs` (`(user key,
    /// lookup)` pairs, at best sorted by user key). The stages run across the batch: every key's
    /// filter line is hinted before any is tested, the survivors' index entries are found in
    /// key order (neighbouring keys share the search's path), and a data block two keys need
    /// is fetched once.
    pub fn get_many(
        &self,
        reqs: &[(&[u8], &[u8])],
        cache_only: bool,
    ) -> Vec<Result<Option<(SeqNo, ValueKind, Bytes)>>> {
        let index = match &self.index {
            TableIndex::Trie(t) => {
                return reqs
                    .iter()
                    .map(|(key, lookup)| self.get_by_trie(t, lookup, key, cache_only))
                    .collect()
            }
            TableIndex::Blocks(b) => b,
        };
        let hashes: Vec<u64> = reqs.iter().map(|(k, _)| key_hash(k)).collect();
        let mut out: Vec<Result<Option<(SeqNo, ValueKind, Bytes)>>> =
            Vec::with_capacity(reqs.len());
        let mut survivors: Vec<usize> = Vec::with_capacity(reqs.len());
        match &self.filter {
            Some(f) => {
                hashes.iter().for_each(|&h| f.prefetch_hash(h));
                self.stats
                    .bloom_checked
                    .fetch_add(reqs.len() as u64, Relaxed);
                for (i, &h) in hashes.iter().enumerate() {
                    out.push(Ok(None));
                    if f.may_contain_hash(h) {
                        survivors.push(i);
                    }
                }
                let useful = reqs.len() - survivors.len();
                self.stats.bloom_useful.fetch_add(useful as u64, Relaxed);
            }
            None => {
                out.resize_with(reqs.len(), || Ok(None));
                survivors.extend(0..reqs.len());
            }
        }
        let mut key = Vec::new();
        let mut handles: Vec<(usize, BlockHandle)> = Vec::with_capacity(survivors.len());
        for &i in &survivors {
            match index.find(reqs[i].1, &mut key) {
                Ok(Some(h)) => handles.push((i, h)),
                Ok(None) => {}
                Err(e) => out[i] = Err(e),
            }
        }
        // The distinct blocks, fetched back to back (keys in one block are neighbours).
        let mut blocks: Vec<(u64, Result<Block>)> = Vec::with_capacity(handles.len());
        let mut block_of: Vec<usize> = Vec::with_capacity(handles.len());
        for (_, h) in &handles {
            if blocks.last().is_none_or(|(off, _)| *off != h.offset) {
                blocks.push((h.offset, self.block_for_get(*h, cache_only, true)));
            }
            block_of.push(blocks.len() - 1);
        }
        if handles.len() > 1 {
            for stage in 0..2 {
                for (&(i, _), &b) in handles.iter().zip(&block_of) {
                    if let Ok(b) = &blocks[b].1 {
                        b.prefetch_for_get(hashes[i], stage);
                    }
                }
            }
        }
        for (&(i, _), &b) in handles.iter().zip(&block_of) {
            out[i] = match &blocks[b].1 {
                Ok(b) => {
                    let (user_key, lookup) = reqs[i];
                    Self::first_at_or_after(b, lookup, user_key, hashes[i], &mut key)
                        .map(Option::flatten)
                }
                Err(e) => Err(e.clone()),
            };
        }
        if self.filter.is_some() {
            let fp = survivors
                .iter()
                .filter(|&&i| matches!(out[i], Ok(None)))
                .count();
            self.stats
                .bloom_false_positive
                .fetch_add(fp as u64, Relaxed);
        }
        out
    }

    /// A lookup through the MashMeta trie: an absent key reads nothing; a present one reads the
    /// block holding its newest version, and the following block(s) only when every version in
    /// that block is newer than the lookup's snapshot.
    fn get_by_trie(
        &self,
        t: &MashMeta,
        lookup: &[u8],
        user_key: &[u8],
        cache_only: bool,
    ) -> Result<Option<(SeqNo, ValueKind, Bytes)>> {
        self.stats.trie_checked.fetch_add(1, Relaxed);
        let Some(b) = t.find_block(user_key) else {
            self.stats.trie_rejected.fetch_add(1, Relaxed);
            return Ok(None);
        };
        let mut key = Vec::with_capacity(lookup.len());
        let h = key_hash(user_key);
        for i in b..t.num_blocks() {
            let block = self.block_for_get(t.block(i), cache_only, true)?;
            if let Some(r) = Self::first_at_or_after(&block, lookup, user_key, h, &mut key)? {
                return Ok(r);
            }
        }
        Ok(None)
    }

    /// The data block at `h` for a point lookup; with `cache_only`, `Incomplete` unless it is
    /// cached or the file has it without waiting for a device (the page cache: then it is
    /// cached now, if `fill_cache`).
    fn block_for_get(&self, h: BlockHandle, cache_only: bool, fill_cache: bool) -> Result<Block> {
        if !cache_only {
            return self.read_data_block(h, true);
        }
        if let Some(b) = self.cache.as_ref().and_then(|c| c.get(self.id, h.offset)) {
            self.stats.block_cache_hits.fetch_add(1, Relaxed);
            return Ok(b);
        }
        let raw = read_block_nowait(self.file.as_ref(), h, "data").map_err(|e| self.in_table(e))?;
        let Some(raw) = raw else {
            return Err(crate::error::ErrorRepr::Incomplete(
                "data block neither in the block cache nor in the page cache",
            )
            .into());
        };
        if self.cache.is_some() {
            self.stats.block_cache_misses.fetch_add(1, Relaxed);
        }
        self.stats.block_reads.fetch_add(1, Relaxed);
        self.stats.block_read_bytes.fetch_add(h.size + 5, Relaxed);
        let b = Block::new(raw).map_err(|e| self.in_table(e))?;
        if fill_cache {
            if let Some(c) = &self.cache {
                c.insert(self.id, h.offset, b.clone());
            }
        }
        Ok(b)
    }

    /// A corruption error naming this table.
    fn in_table(&self, e: Error) -> Error {
        e.in_table(self.id)
    }

    /// The first entry of `block` at or after `lookup`: `Some(Some(..))` if it is a version of
    /// `user_key` (whose [`key_hash`] is `h`), `Some(None)` if it is another key or the block's
    /// hash index shows it holds no version of `user_key`, `None` if the block ends first (a
    /// MashMeta lookup then goes on to the next block). `key` is scratch space.
    #[allow(clippy::type_complexity)]
    fn first_at_or_after(
        block: &Block,
        lookup: &[u8],
        user_key: &[u8],
        h: u64,
        key: &mut Vec<u8>,
    ) -> Result<Option<Option<(SeqNo, ValueKind, Bytes)>>> {
        let (from, to) = match block.seek_for_get(lookup, user_key, h, key)? {
            GetSeek::Entry(from, to) => (from, to),
            GetSeek::Absent => return Ok(Some(None)),
            GetSeek::End => return Ok(None),
        };
        let p = types::parse_internal_key(key)?;
        Ok(Some(
            (p.user_key == user_key).then(|| (p.seq, p.kind, block.bytes().slice(from..to))),
        ))
    }

    /// A two-level iterator over the point entries.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIter {
        self.iter_opt(fill_cache, false)
    }

    /// [`Table::iter`]; with `cache_only`, a data block in neither the block cache nor the
    /// page cache is not read: the iterator stops with `ErrorKind::Incomplete` (the index is in
    /// memory).
    pub fn iter_opt(self: &Arc<Self>, fill_cache: bool, cache_only: bool) -> TableIter {
        TableIter {
            index: self.index.cursor(),
            table: self.clone(),
            data: None,
            err: None,
            fill_cache,
            cache_only,
        }
    }
}

impl TableIter {
    /// The number of the data block the iterator is in, with a MashMeta index (for checks).
    pub fn block_number(&self) -> Option<usize> {
        self.index.block_number()
    }
}

/// Iterates a table's point entries: the index iterator picks a block, a block iterator walks it.
pub struct TableIter {
    table: Arc<Table>,
    index: IndexCursor,
    data: Option<BlockIter>,
    err: Option<Error>,
    fill_cache: bool,
    cache_only: bool,
}

impl TableIter {
    /// Loads the block the index points at; false (and `data = None`) on error or end.
    fn load_block(&mut self) -> bool {
        self.data = None;
        if !self.index.valid() {
            if let Err(e) = self.index.status() {
                self.err = Some(e);
            }
            return false;
        }
        let r = self.index.handle().and_then(|h| {
            if self.cache_only {
                self.table.block_for_get(h, true, self.fill_cache)
            } else {
                self.table.read_data_block(h, self.fill_cache)
            }
        });
        match r {
            Ok(b) => {
                self.data = Some(b.iter(compare_internal));
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn check_data(&mut self) -> bool {
        match &self.data {
            Some(d) if d.valid() => true,
            Some(d) => {
                if let Err(e) = d.status() {
                    self.err = Some(e);
                    self.data = None;
                }
                false
            }
            None => false,
        }
    }

    fn skip_forward(&mut self) {
        while self.err.is_none() && !self.check_data() && self.data.is_some() {
            self.index.next();
            if !self.load_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.err.is_none() && !self.check_data() && self.data.is_some() {
            self.index.prev();
            if !self.load_block() {
                return;
            }
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }
    fn seek_to_first(&mut self) {
        self.index.seek_to_first();
        if self.load_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_first();
            }
        }
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        self.index.seek_to_last();
        if self.load_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek_to_last();
            }
        }
        self.skip_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        self.index.seek(target);
        // The block index points at the block whose last key is `>= target`; the MashMeta trie
        // at the block where the target's user key starts, and its versions newer than the
        // target may fill that block and more: seek in each block until one holds the target.
        while self.load_block() {
            if let Some(d) = self.data.as_mut() {
                d.seek(target);
            }
            if self.err.is_some() || self.check_data() {
                break;
            }
            self.index.next();
        }
    }
    fn next(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(d) = self.data.as_mut() {
            d.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.data.as_ref().map(|d| d.key()).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.data.as_ref().map(|d| d.value()).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => self.index.status(),
        }
    }
}
