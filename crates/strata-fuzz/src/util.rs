//! Shared pieces of the targets: in-memory files for the engine's storage traits, checksum
//! "resealing" (recomputing the CRCs of a mutated input so decoding gets past them, the way
//! fuzzers for checksummed formats usually do), and seed material made by a real database.
//!
//! Invariant: nothing here decodes on behalf of a target; the helpers only frame inputs, and a
//! reseal never changes a byte other than a checksum field.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use strata::error::ErrorRepr;
use strata::iter::InternalIterator;
use strata::sst::block::Block;
use strata::sst::format::{BlockHandle, Footer, BLOCK_TRAILER_SIZE, FOOTER_SIZE};
use strata::sst::{TableBuilder, TableBuilderOptions};
use strata::storage::{RandomAccessFile, WritableFile};
use strata::types::compare_bytewise;
use strata::wal::{mask_crc, LogWriter, BLOCK_SIZE, HEADER_SIZE};
use strata::{Compression, Result};

/// A file being written into memory.
pub struct MemWritable(pub Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().expect("not poisoned").extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.lock().expect("not poisoned").len() as u64
    }
}

/// A new in-memory writable file and the buffer it writes to.
pub fn mem_writer() -> (Box<dyn WritableFile>, Arc<Mutex<Vec<u8>>>) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    (Box::new(MemWritable(buf.clone())), buf)
}

/// A read-only file held in memory.
pub struct MemFile(pub Bytes);

impl RandomAccessFile for MemFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let start = usize::try_from(offset).ok();
        match start.and_then(|s| Some((s, s.checked_add(len)?))) {
            Some((s, e)) if e <= self.0.len() => Ok(self.0.slice(s..e)),
            _ => Err(ErrorRepr::Io {
                path: "memory".into(),
                source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short read"),
            }
            .into()),
        }
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

/// The first byte of an input (flags for the target) and the rest.
pub fn split_flag(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&f, rest)) => (f, rest),
        None => (0, data),
    }
}

/// With bit 0 of `flag`, rewrites the last four bytes of `d` as the masked CRC32C of the bytes
/// before them (formats that end with one checksum over everything: RALT files, `TEMPERATURE`).
pub fn reseal_trailing_crc(flag: u8, d: &mut [u8]) {
    if flag & 1 != 0 && d.len() >= 4 {
        let n = d.len() - 4;
        let crc = mask_crc(crc32c::crc32c(&d[..n]));
        d[n..].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Writes `records` as a log file with the real writer.
pub fn write_log(records: &[Vec<u8>]) -> Vec<u8> {
    let (file, buf) = mem_writer();
    let mut w = LogWriter::new(file, 1);
    for r in records {
        w.add_record(r).expect("in-memory write");
    }
    w.sync().expect("in-memory sync");
    let out = buf.lock().expect("not poisoned").clone();
    out
}

/// The masked CRC of a log fragment (type byte, then payload), as the WAL format defines it.
fn fragment_crc(ty: u8, payload: &[u8]) -> u32 {
    mask_crc(crc32c::crc32c_append(crc32c::crc32c(&[ty]), payload))
}

/// Recomputes the checksum of every log fragment whose header and payload fit, walking the
/// fragments the way the reader does.
pub fn reseal_log(d: &mut [u8]) {
    let mut pos = 0;
    while pos + HEADER_SIZE <= d.len() {
        let left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if left < HEADER_SIZE {
            pos += left;
            continue;
        }
        let len = u16::from_le_bytes([d[pos + 4], d[pos + 5]]) as usize;
        let ty = d[pos + 6];
        let end = pos + HEADER_SIZE + len;
        if d[pos..pos + HEADER_SIZE].iter().all(|&b| b == 0) || HEADER_SIZE + len > left {
            pos += left;
            continue;
        }
        if end > d.len() {
            return;
        }
        let crc = fragment_crc(ty, &d[pos + HEADER_SIZE..end]);
        d[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

/// Recomputes a table block's trailer checksum (over the body and the compression byte) if the
/// handle lies inside `d`.
fn reseal_block(d: &mut [u8], h: BlockHandle) {
    let (Ok(off), Ok(size)) = (usize::try_from(h.offset), usize::try_from(h.size)) else {
        return;
    };
    let Some(end) = off
        .checked_add(size)
        .filter(|e| e.saturating_add(BLOCK_TRAILER_SIZE) <= d.len())
    else {
        return;
    };
    let ty = d[end];
    let crc = mask_crc(crc32c::crc32c_append(crc32c::crc32c(&d[off..end]), &[ty]));
    d[end + 1..end + BLOCK_TRAILER_SIZE].copy_from_slice(&crc.to_le_bytes());
}

/// The raw (uncompressed-type) body of a block, if its handle is in bounds and it is stored
/// uncompressed.
fn raw_block(d: &[u8], h: BlockHandle) -> Option<Block> {
    let off = usize::try_from(h.offset).ok()?;
    let end = off.checked_add(usize::try_from(h.size).ok()?)?;
    if end.checked_add(BLOCK_TRAILER_SIZE)? > d.len() || d[end] != 0 {
        return None;
    }
    Block::new(Bytes::copy_from_slice(&d[off..end])).ok()
}

/// Recomputes every checksum of a table file that the reader would check: the footer's, the
/// index and meta-index blocks', the meta blocks' and the data blocks' (as far as the handles
/// can be found in uncompressed index and meta-index blocks).
pub fn reseal_table(d: &mut [u8]) {
    if d.len() < FOOTER_SIZE {
        return;
    }
    let f = d.len() - FOOTER_SIZE;
    let crc = mask_crc(crc32c::crc32c(&d[f..f + 36]));
    d[f + 36..f + 40].copy_from_slice(&crc.to_le_bytes());
    let Ok(footer) = Footer::decode(&d[f..], d.len() as u64) else {
        return;
    };
    let mut handles = vec![footer.index, footer.metaindex];
    // A MashMeta table (version 2) lists its data blocks in the trie block, not an index block.
    let mut blocks_of = vec![footer.metaindex];
    if strata::sst::format::version_has_mashmeta(footer.version) {
        let end = footer.index.offset.saturating_add(footer.index.size);
        if let Some(raw) = usize::try_from(footer.index.offset)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| d.get(s..e))
        {
            if let Ok(m) = strata::sst::index::MashMeta::decode(raw) {
                handles.extend((0..m.num_blocks()).map(|i| m.block(i)));
            }
        }
    } else {
        blocks_of.push(footer.index);
    }
    for h in blocks_of {
        if let Some(b) = raw_block(d, h) {
            let mut it = b.iter(compare_bytewise);
            it.seek_to_first();
            let mut steps = 0;
            while it.valid() && steps < 4096 {
                if let Ok(h) = BlockHandle::decode(it.value()) {
                    handles.push(h);
                }
                it.next();
                steps += 1;
            }
        }
    }
    for h in handles {
        reseal_block(d, h);
    }
}

/// Builds a table in memory with the real builder. `entries` must be sorted internal keys.
pub fn build_table(
    entries: &[(Vec<u8>, Vec<u8>)],
    tombstones: &[(Vec<u8>, Vec<u8>, u64)],
    opts: TableBuilderOptions,
) -> Vec<u8> {
    let (file, buf) = mem_writer();
    let kind = opts.capacity_index;
    let mut b = TableBuilder::new(file, opts);
    b.set_index(kind);
    for (k, v) in entries {
        b.add(k, v).expect("sorted seed entries");
    }
    for (s, e, seq) in tombstones {
        b.add_range_tombstone(strata::range_del::RangeTombstone::new(
            s.clone(),
            e.clone(),
            *seq,
        ));
    }
    b.finish().expect("in-memory table");
    let out = buf.lock().expect("not poisoned").clone();
    out
}

/// Table builder options for seeds.
pub fn table_opts(compression: Compression, restart_interval: usize) -> TableBuilderOptions {
    TableBuilderOptions {
        data_block_hash_ratio: 0.75,
        block_size: 256,
        restart_interval,
        bloom_bits_per_key: 10.0,
        compression,
        capacity_index: strata::sst::index::IndexKind::Block,
        bytes_per_sync: 0,
    }
}

/// Files a real database wrote: its write-ahead logs, its manifest and its tables.
pub struct RealDb {
    pub logs: Vec<Vec<u8>>,
    pub manifests: Vec<Vec<u8>>,
    pub tables: Vec<Vec<u8>>,
}

/// Opens a database in a temporary directory, writes puts, deletes and range deletes (some
/// flushed and compacted) and returns copies of its files. Made once per process.
pub fn real_db() -> &'static RealDb {
    static DB: OnceLock<RealDb> = OnceLock::new();
    DB.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("db");
        let db = strata::Db::open(&path, strata::Options::default()).expect("open seed db");
        for round in 0..3u32 {
            for i in 0..40u32 {
                let mut b = strata::WriteBatch::new();
                b.put(
                    format!("key{:04}", i * 7 + round),
                    vec![b'v'; (i % 9) as usize],
                );
                if i % 5 == 0 {
                    b.delete(format!("key{:04}", i));
                }
                if i % 13 == 0 {
                    b.delete_range(format!("key{:04}", i), format!("key{:04}", i + 3));
                }
                db.write(b).expect("seed write");
            }
            if round < 2 {
                db.flush().expect("seed flush");
            }
        }
        db.compact_range(None, None).expect("seed compaction");
        for i in 0..10u32 {
            db.put(format!("tail{i}"), format!("value{i}"))
                .expect("seed put");
        }
        let mut out = RealDb {
            logs: Vec::new(),
            manifests: Vec::new(),
            tables: Vec::new(),
        };
        let mut names: Vec<_> = std::fs::read_dir(&path)
            .expect("list seed db")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            let bytes = std::fs::read(path.join(&n)).expect("read seed file");
            if n.ends_with(".log") {
                out.logs.push(bytes);
            } else if n.starts_with("MANIFEST-") {
                out.manifests.push(bytes);
            } else if n.ends_with(".sst") {
                out.tables.push(bytes);
            }
        }
        db.close().expect("close seed db");
        out
    })
}

/// A temporary directory in memory (`/dev/shm` when present) for the targets that must go
/// through the file system: no disk I/O, so a busy disk cannot stall an execution.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().expect("temporary directory")
}

/// Log records of `file` (as many as read cleanly).
pub fn log_records(file: &[u8]) -> Vec<Vec<u8>> {
    let mut r = strata::wal::LogReader::new(file, "seed", true);
    let mut out = Vec::new();
    while let Ok(Some(rec)) = r.next_record() {
        out.push(rec.into_owned());
    }
    out
}
