//! One on-disk sorted run of access records, and its in-memory index.
//!
//! File (see `docs/format.md`, "RALT files"): a 5-byte header (`"RALT"`, version 1), then data
//! blocks of about `block_bytes`, each `u32 payload_len | u32 count | payload | u32
//! mask(crc32c(len ++ count ++ payload))`, the payload being `count` encoded records.
//! The index (kept in memory, rebuilt from the blocks on load) holds each block's first key and
//! offset, the prefix sums of the HotRAP sizes of hot records before each block, and a 20-bit-per-
//! key bloom filter of the hot keys. Hot / candidate / stable are decided once, when the run is
//! written, and stored as record flags.
//!
//! Invariants: keys are strictly increasing across the whole run; every block is CRC-checked
//! before it is decoded and any damage is `Corruption`; a run is immutable once written.
//! Depends on `storage`, `sst::filter`, `coding`, `wal::mask_crc`, `error`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::record::{Record, FLAG_CANDIDATE, FLAG_HOT, FLAG_STABLE};
use crate::coding::{decode_fixed32, put_fixed32, Decoder};
use crate::error::{Error, Result};
use crate::sst::filter::{BloomFilter, FilterBuilder};
use crate::storage::{RandomAccessFile, Storage, WritableFile};
use crate::wal::mask_crc;

/// File magic.
pub const MAGIC: &[u8; 4] = b"RALT";
/// Run file format version.
pub const RUN_VERSION: u8 = 1;
const HEADER_LEN: u64 = 5;
const BLOCK_OVERHEAD: usize = 12;
/// Bits per hot key in the in-memory bloom (§3.2: 20).
pub const BLOOM_BITS_PER_KEY: f64 = 20.0;
/// A block larger than this is corruption (blocks are ~8 KiB; a single huge key may exceed it).
const MAX_BLOCK_PAYLOAD: u32 = 64 << 20;

#[derive(Clone, Debug)]
struct BlockMeta {
    first_key: Vec<u8>,
    offset: u64,
    /// Whole block length, overhead included.
    len: u32,
}

/// Totals of a run, by the flags its records were written with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunTotals {
    pub records: u64,
    /// HotRAP bytes of all records.
    pub hotrap: u64,
    /// HotRAP bytes of hot records.
    pub hot: u64,
    /// HotRAP bytes of records at or above the hot-set score threshold (stable or not).
    pub candidate: u64,
    /// HotRAP bytes of stable records.
    pub stable: u64,
}

/// An immutable sorted run: an open file plus its in-memory index.
pub struct Run {
    /// The run's id (its file is `NNNNNN.ralt`).
    pub id: u64,
    /// The run file's path.
    pub path: PathBuf,
    file: Arc<dyn RandomAccessFile>,
    /// The run file's size in bytes.
    pub size: u64,
    blocks: Vec<BlockMeta>,
    /// `hot_prefix[i]` = hot HotRAP bytes in blocks `0..i` (length `blocks + 1`).
    hot_prefix: Vec<u64>,
    last_key: Vec<u8>,
    bloom: Option<BloomFilter>,
    /// Totals by the flags the records were written with.
    pub totals: RunTotals,
}

/// Index state accumulated while writing or loading a run.
struct IndexBuilder {
    blocks: Vec<BlockMeta>,
    hot_prefix: Vec<u64>,
    hot_in_block: u64,
    filter: FilterBuilder,
    last_key: Option<Vec<u8>>,
    totals: RunTotals,
}

impl IndexBuilder {
    fn new() -> Self {
        IndexBuilder {
            blocks: Vec::new(),
            hot_prefix: vec![0],
            hot_in_block: 0,
            filter: FilterBuilder::new(BLOOM_BITS_PER_KEY),
            last_key: None,
            totals: RunTotals::default(),
        }
    }

    fn add(&mut self, r: &Record) -> Result<()> {
        if let Some(last) = &self.last_key {
            if r.key.as_slice() <= last.as_slice() {
                return Err(Error::corruption("RALT run: keys out of order"));
            }
        }
        let sz = r.hotrap_size();
        self.totals.records += 1;
        self.totals.hotrap += sz;
        if r.flags & FLAG_HOT != 0 {
            self.totals.hot += sz;
            self.hot_in_block += sz;
            self.filter.add_key(&r.key);
        }
        if r.flags & FLAG_CANDIDATE != 0 {
            self.totals.candidate += sz;
        }
        if r.flags & FLAG_STABLE != 0 {
            self.totals.stable += sz;
        }
        self.last_key = Some(r.key.clone());
        Ok(())
    }

    fn end_block(&mut self, first_key: Vec<u8>, offset: u64, len: u32) {
        self.blocks.push(BlockMeta {
            first_key,
            offset,
            len,
        });
        let prev = *self.hot_prefix.last().unwrap_or(&0);
        self.hot_prefix.push(prev + self.hot_in_block);
        self.hot_in_block = 0;
    }

    fn finish(mut self, id: u64, path: PathBuf, file: Arc<dyn RandomAccessFile>) -> Run {
        let bloom = if self.filter.num_keys() > 0 {
            BloomFilter::new(Bytes::from(self.filter.finish()))
        } else {
            None
        };
        Run {
            id,
            path,
            size: file.size(),
            file,
            blocks: self.blocks,
            hot_prefix: self.hot_prefix,
            last_key: self.last_key.unwrap_or_default(),
            bloom,
            totals: self.totals,
        }
    }
}

/// Writes a run. Records must come in strictly increasing key order, flags already decided.
pub struct RunWriter {
    id: u64,
    path: PathBuf,
    file: Box<dyn WritableFile>,
    block_bytes: usize,
    payload: Vec<u8>,
    count: u32,
    first_key: Vec<u8>,
    offset: u64,
    index: IndexBuilder,
}

impl RunWriter {
    /// Creates the run file at `path` and writes its header; blocks hold about `block_bytes` of
    /// payload (at least 64).
    pub fn create(storage: &dyn Storage, path: &Path, id: u64, block_bytes: usize) -> Result<Self> {
        let mut file = storage.create(path)?;
        let mut header = MAGIC.to_vec();
        header.push(RUN_VERSION);
        file.append(&header)?;
        Ok(RunWriter {
            id,
            path: path.to_path_buf(),
            file,
            block_bytes: block_bytes.max(64),
            payload: Vec::with_capacity(block_bytes + 256),
            count: 0,
            first_key: Vec::new(),
            offset: HEADER_LEN,
            index: IndexBuilder::new(),
        })
    }

    /// Appends `r`, ending the block once its payload reaches `block_bytes`; a key not above the
    /// previous one is `Corruption`.
    pub fn add(&mut self, r: &Record) -> Result<()> {
        self.index.add(r)?;
        if self.count == 0 {
            self.first_key = r.key.clone();
        }
        r.encode_into(&mut self.payload);
        self.count += 1;
        if self.payload.len() >= self.block_bytes {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let block = encode_block(&self.payload, self.count);
        self.file.append(&block)?;
        self.index.end_block(
            std::mem::take(&mut self.first_key),
            self.offset,
            block.len() as u32,
        );
        self.offset += block.len() as u64;
        self.payload.clear();
        self.count = 0;
        Ok(())
    }

    /// Finishes, syncs and reopens the file for reads.
    pub fn finish(mut self, storage: &dyn Storage) -> Result<Run> {
        self.flush_block()?;
        self.file.sync()?;
        drop(self.file);
        let file = storage.open(&self.path)?;
        if file.size() != self.offset {
            return Err(Error::corruption(format!(
                "RALT run {}: size {} after writing {} bytes",
                self.path.display(),
                file.size(),
                self.offset
            )));
        }
        Ok(self.index.finish(self.id, self.path, file))
    }
}

/// `u32 len | u32 count | payload | u32 masked crc32c(len ++ count ++ payload)`.
pub fn encode_block(payload: &[u8], count: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(payload.len() + BLOCK_OVERHEAD);
    put_fixed32(&mut b, payload.len() as u32);
    put_fixed32(&mut b, count);
    b.extend_from_slice(payload);
    let crc = mask_crc(crc32c::crc32c(&b));
    put_fixed32(&mut b, crc);
    b
}

/// The whole length of the block starting at `buf[0]`, from its header (`None` if short).
fn block_len(buf: &[u8]) -> Result<usize> {
    let len =
        decode_fixed32(buf).ok_or_else(|| Error::corruption("RALT block: truncated header"))?;
    if len > MAX_BLOCK_PAYLOAD {
        return Err(Error::corruption("RALT block: absurd length"));
    }
    Ok(len as usize + BLOCK_OVERHEAD)
}

/// Decodes a whole block (header, payload and CRC) into its records.
pub fn decode_block(block: &[u8]) -> Result<Vec<Record>> {
    let total = block_len(block)?;
    if block.len() != total {
        return Err(Error::corruption("RALT block: length mismatch"));
    }
    let body = &block[..total - 4];
    let stored = decode_fixed32(&block[total - 4..]).unwrap_or(0);
    if mask_crc(crc32c::crc32c(body)) != stored {
        return Err(Error::corruption("RALT block: checksum mismatch"));
    }
    let count = decode_fixed32(&body[4..]).unwrap_or(0);
    let mut d = Decoder::new(&body[8..]);
    let mut out = Vec::with_capacity((count as usize).min(body.len() / 22 + 1));
    for _ in 0..count {
        let r = Record::decode(&mut d)?;
        if let Some(prev) = out.last() {
            let prev: &Record = prev;
            if r.key <= prev.key {
                return Err(Error::corruption("RALT block: keys out of order"));
            }
        }
        out.push(r);
    }
    if !d.is_empty() {
        return Err(Error::corruption("RALT block: trailing bytes"));
    }
    Ok(out)
}

impl Run {
    /// Reads a whole run file, verifying every block, and rebuilds its index.
    pub fn load(storage: &dyn Storage, path: &Path, id: u64) -> Result<Run> {
        let data = storage.read_all(path)?;
        let mut index = IndexBuilder::new();
        let mut pos = check_header(&data)?;
        while pos < data.len() {
            let len = block_len(&data[pos..])?;
            let end = pos
                .checked_add(len)
                .filter(|&e| e <= data.len())
                .ok_or_else(|| Error::corruption("RALT run: truncated block"))?;
            let recs = decode_block(&data[pos..end])?;
            let first = recs
                .first()
                .ok_or_else(|| Error::corruption("RALT run: empty block"))?
                .key
                .clone();
            for r in &recs {
                index.add(r)?;
            }
            index.end_block(first, pos as u64, len as u32);
            pos = end;
        }
        let file = storage.open(path)?;
        if file.size() != data.len() as u64 {
            return Err(Error::corruption("RALT run: file changed while loading"));
        }
        Ok(index.finish(id, path.to_path_buf(), file))
    }

    /// Data blocks in the run (tests check block boundaries with it).
    #[cfg(test)]
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// May `key` be a hot key of this run (bloom only; false positives possible).
    pub fn may_be_hot(&self, key: &[u8]) -> bool {
        self.bloom.as_ref().is_some_and(|b| b.may_contain(key))
    }

    /// Index of the block that would hold `key` (the last block whose first key ≤ `key`).
    fn block_for(&self, key: &[u8]) -> usize {
        self.blocks
            .partition_point(|b| b.first_key.as_slice() <= key)
            .saturating_sub(1)
    }

    /// Blocks `[first, last]` that may hold keys in `[lo, hi]`, if any.
    fn block_span(&self, lo: &[u8], hi: &[u8]) -> Option<(usize, usize)> {
        let first = self.blocks.first()?;
        if lo > hi || hi < first.first_key.as_slice() || lo > self.last_key.as_slice() {
            return None;
        }
        Some((self.block_for(lo), self.block_for(hi)))
    }

    /// Hot HotRAP bytes in `[lo, hi]`, from the prefix sums: exact but for the (up to two)
    /// edge blocks, which are counted whole.
    pub fn hot_bytes_in_range(&self, lo: &[u8], hi: &[u8]) -> u64 {
        match self.block_span(lo, hi) {
            Some((i, j)) => self.hot_prefix[j + 1] - self.hot_prefix[i],
            None => 0,
        }
    }

    /// The largest hot HotRAP bytes of one block (the estimate's error bound per edge).
    #[cfg(test)]
    pub fn max_block_hot_bytes(&self) -> u64 {
        self.hot_prefix
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// Reads and decodes block `i`.
    pub fn read_block(&self, i: usize) -> Result<Vec<Record>> {
        let b = &self.blocks[i];
        let data = self.file.read_at(b.offset, b.len as usize)?;
        decode_block(&data).map_err(|e| {
            Error::corruption(format!(
                "{} at offset {}: {e}",
                self.path.display(),
                b.offset
            ))
        })
    }

    /// Hot keys in `[lo, hi]`, in order (reads the blocks of the range).
    pub fn hot_keys_in_range(&self, lo: &[u8], hi: &[u8], out: &mut Vec<Vec<u8>>) -> Result<()> {
        let Some((i, j)) = self.block_span(lo, hi) else {
            return Ok(());
        };
        for b in i..=j {
            if self.hot_prefix[b + 1] == self.hot_prefix[b] {
                continue; // no hot record in this block
            }
            for r in self.read_block(b)? {
                if r.flags & FLAG_HOT != 0 && r.key.as_slice() >= lo && r.key.as_slice() <= hi {
                    out.push(r.key);
                }
            }
        }
        Ok(())
    }
}

fn check_header(data: &[u8]) -> Result<usize> {
    if data.len() < HEADER_LEN as usize || &data[..4] != MAGIC {
        return Err(Error::corruption("RALT run: bad magic"));
    }
    if data[4] != RUN_VERSION {
        return Err(Error::corruption(format!(
            "RALT run: unknown version {}",
            data[4]
        )));
    }
    Ok(HEADER_LEN as usize)
}

/// Reads a run's records in key order, one block at a time.
pub struct RunIter {
    run: Arc<Run>,
    next_block: usize,
    buf: std::vec::IntoIter<Record>,
}

impl RunIter {
    /// Iterates `run` from its first record.
    pub fn new(run: Arc<Run>) -> RunIter {
        RunIter {
            run,
            next_block: 0,
            buf: Vec::new().into_iter(),
        }
    }

    /// The next record in key order, `None` at the end; reads and checks one block at a time.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        loop {
            if let Some(r) = self.buf.next() {
                return Ok(Some(r));
            }
            if self.next_block >= self.run.blocks.len() {
                return Ok(None);
            }
            let recs = self.run.read_block(self.next_block)?;
            self.next_block += 1;
            self.buf = recs.into_iter();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;

    pub(crate) fn rec(i: u32, hot: bool) -> Record {
        Record {
            key: format!("key{i:06}").into_bytes(),
            value_size: 100,
            tick: i as u64,
            score: 1.0 + i as f64,
            counter: 1,
            flags: if hot { FLAG_HOT | FLAG_CANDIDATE } else { 0 },
        }
    }

    fn write(dir: &Path, n: u32, hot: impl Fn(u32) -> bool) -> Run {
        let fs = LocalFs;
        let path = dir.join("000001.ralt");
        let mut w = RunWriter::create(&fs, &path, 1, 512).unwrap();
        for i in 0..n {
            w.add(&rec(i, hot(i))).unwrap();
        }
        w.finish(&fs).unwrap()
    }

    #[test]
    fn write_load_iterate_and_query() {
        let dir = tempfile::tempdir().unwrap();
        let run = write(dir.path(), 1000, |i| i % 3 == 0);
        assert!(run.block_count() > 10);
        let loaded = Run::load(&LocalFs, &run.path, 1).unwrap();
        assert_eq!(loaded.totals, run.totals);
        assert_eq!(loaded.hot_prefix, run.hot_prefix);
        assert_eq!(loaded.totals.records, 1000);
        let mut it = RunIter::new(Arc::new(loaded));
        let mut n = 0;
        while let Some(r) = it.next_record().unwrap() {
            assert_eq!(r, rec(n, n % 3 == 0));
            n += 1;
        }
        assert_eq!(n, 1000);
        assert!(run.may_be_hot(b"key000003") && !run.may_be_hot(b"zzz"));
        let mut keys = Vec::new();
        run.hot_keys_in_range(b"key000010", b"key000020", &mut keys)
            .unwrap();
        assert_eq!(
            keys,
            vec![
                b"key000012".to_vec(),
                b"key000015".to_vec(),
                b"key000018".to_vec()
            ]
        );
        assert_eq!(run.hot_bytes_in_range(b"a", b"b"), 0);
        assert_eq!(run.hot_bytes_in_range(b"z", b"zz"), 0);
        assert_eq!(run.hot_bytes_in_range(b"a", b"z"), run.totals.hot);
    }

    #[test]
    fn out_of_order_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RunWriter::create(&LocalFs, &dir.path().join("x"), 1, 512).unwrap();
        w.add(&rec(2, false)).unwrap();
        assert!(w.add(&rec(1, false)).unwrap_err().is_corruption());
    }

    #[test]
    fn block_decoder_survives_mutations() {
        let mut payload = Vec::new();
        for i in 0..20 {
            rec(i, i % 2 == 0).encode_into(&mut payload);
        }
        let block = encode_block(&payload, 20);
        assert_eq!(decode_block(&block).unwrap().len(), 20);
        let seed = strata_test_support::seed("ralt block mutation fuzz");
        let mut rng = strata_test_support::Rng::new(seed);
        for _ in 0..20_000 {
            let mut v = block.clone();
            for _ in 0..1 + rng.below(4) {
                if v.is_empty() {
                    v.push(rng.next_u64() as u8);
                    continue;
                }
                let i = rng.below(v.len() as u64) as usize;
                match rng.below(4) {
                    0 => v[i] ^= 1 << rng.below(8),
                    1 => v[i] = rng.next_u64() as u8,
                    2 => v.truncate(i),
                    _ => v.insert(i, rng.next_u64() as u8),
                }
            }
            // Also without the CRC check: re-seal the mutated body so the record decoder sees it.
            let _ = decode_block(&v);
            if v.len() >= 12 {
                let body_len = v.len() - 12;
                let count = decode_fixed32(&v[4..]).unwrap_or(0);
                let resealed = encode_block(&v[8..8 + body_len], count);
                let _ = decode_block(&resealed);
            }
        }
        // A whole-file loader over a mutated file never panics either.
        let dir = tempfile::tempdir().unwrap();
        let run = write(dir.path(), 200, |i| i % 2 == 0);
        let file = std::fs::read(&run.path).unwrap();
        let p = dir.path().join("mut.ralt");
        for _ in 0..300 {
            let mut v = file.clone();
            let i = rng.below(v.len() as u64) as usize;
            if rng.chance(50) {
                v[i] ^= 1 << rng.below(8);
            } else {
                v.truncate(i);
            }
            std::fs::write(&p, &v).unwrap();
            if let Err(e) = Run::load(&LocalFs, &p, 9) {
                assert!(e.is_corruption(), "{e}");
            }
        }
    }
}
