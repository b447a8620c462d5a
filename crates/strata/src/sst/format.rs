//! Block handles, the footer, and reading/writing a block with its trailer
//! (`compression: u8 | masked crc32c(block ++ compression): fixed32`).

use bytes::Bytes;

use crate::coding::{
    decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint64, Decoder,
};
use crate::error::{Error, Result};
use crate::options::Compression;
use crate::storage::{RandomAccessFile, WritableFile};
use crate::wal;

/// "STRATAT1" read as a little-endian u64.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"STRATAT1");
/// The table format version written by this release.
pub const FORMAT_VERSION: u32 = 1;
/// The same layout, but the footer's index handle points at a MashMeta block (and there is no
/// bloom filter): releases that only know version 1 refuse the table instead of misreading it.
pub const FORMAT_VERSION_MASHMETA: u32 = 2;
/// Version 1 whose data blocks may carry a hash index (docs/format.md §6.3): releases that do
/// not know the flag refuse the table instead of reporting its blocks corrupt.
pub const FORMAT_VERSION_BLOCK_HASH: u32 = 3;
/// Version 2 (MashMeta) whose data blocks may carry a hash index.
pub const FORMAT_VERSION_MASHMETA_BLOCK_HASH: u32 = 4;

/// The version a table with these parts is written with.
pub fn version_for(mashmeta: bool, block_hash: bool) -> u32 {
    match (mashmeta, block_hash) {
        (false, false) => FORMAT_VERSION,
        (true, false) => FORMAT_VERSION_MASHMETA,
        (false, true) => FORMAT_VERSION_BLOCK_HASH,
        (true, true) => FORMAT_VERSION_MASHMETA_BLOCK_HASH,
    }
}

/// Whether a table of this (supported) version has a MashMeta block where others have an index
/// block.
pub fn version_has_mashmeta(version: u32) -> bool {
    version == FORMAT_VERSION_MASHMETA || version == FORMAT_VERSION_MASHMETA_BLOCK_HASH
}
/// Bytes of the footer at the end of every table.
pub const FOOTER_SIZE: usize = 48;
/// Bytes after every block: the compression type (1) and the masked CRC32C (4).
pub const BLOCK_TRAILER_SIZE: usize = 5;

/// Where a block lives in a table file (size excludes the trailer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHandle {
    /// Offset of the block's first byte in the file.
    pub offset: u64,
    /// Bytes of the block as stored (compressed, if it was), trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the handle to `buf`: offset and size as varint64s.
    pub fn encode_to(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
    }
    /// Decodes a handle from the start of `b`; fails (corruption) if it is malformed.
    pub fn decode(b: &[u8]) -> Result<BlockHandle> {
        let mut d = Decoder::new(b);
        match (d.varint64(), d.varint64()) {
            (Some(offset), Some(size)) => Ok(BlockHandle { offset, size }),
            _ => Err(Error::corruption("malformed block handle")),
        }
    }
}

/// The fixed-size end of a table file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    /// Where the meta-index block is.
    pub metaindex: BlockHandle,
    /// Where the index block is (the MashMeta block in versions 2 and 4).
    pub index: BlockHandle,
    /// The table format version ([`FORMAT_VERSION`] to [`FORMAT_VERSION_MASHMETA_BLOCK_HASH`]).
    pub version: u32,
}

impl Footer {
    /// The [`FOOTER_SIZE`] bytes: both handles as fixed64s, the version, a masked CRC32C of what
    /// precedes it, and [`TABLE_MAGIC`].
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(FOOTER_SIZE);
        put_fixed64(&mut b, self.metaindex.offset);
        put_fixed64(&mut b, self.metaindex.size);
        put_fixed64(&mut b, self.index.offset);
        put_fixed64(&mut b, self.index.size);
        put_fixed32(&mut b, self.version);
        let crc = wal_mask(crc32c::crc32c(&b));
        put_fixed32(&mut b, crc);
        put_fixed64(&mut b, TABLE_MAGIC);
        b
    }

    /// Decodes the footer of a table of `file_size` bytes. Fails on a wrong size, magic number or
    /// checksum, on a handle past the data (corruption), or on an unknown version (`NotADatabase`).
    pub fn decode(b: &[u8], file_size: u64) -> Result<Footer> {
        if b.len() != FOOTER_SIZE {
            return Err(Error::corruption("table footer has the wrong size"));
        }
        if decode_fixed64(&b[40..]) != Some(TABLE_MAGIC) {
            return Err(Error::corruption(
                "bad table magic number (not a strata table, or truncated)",
            ));
        }
        if decode_fixed32(&b[36..]) != Some(wal_mask(crc32c::crc32c(&b[..36]))) {
            return Err(Error::corruption("table footer checksum mismatch"));
        }
        let f = |o: usize| decode_fixed64(&b[o..]).unwrap_or(u64::MAX);
        let footer = Footer {
            metaindex: BlockHandle {
                offset: f(0),
                size: f(8),
            },
            index: BlockHandle {
                offset: f(16),
                size: f(24),
            },
            version: decode_fixed32(&b[32..]).unwrap_or(0),
        };
        if !(FORMAT_VERSION..=FORMAT_VERSION_MASHMETA_BLOCK_HASH).contains(&footer.version) {
            return Err(crate::error::ErrorRepr::NotADatabase(format!(
                "unsupported table format version {} (this release reads \
                 {FORMAT_VERSION}..={FORMAT_VERSION_MASHMETA_BLOCK_HASH})",
                footer.version
            ))
            .into());
        }
        let data_end = file_size.saturating_sub(FOOTER_SIZE as u64);
        for h in [footer.metaindex, footer.index] {
            if h.offset
                .saturating_add(h.size)
                .saturating_add(BLOCK_TRAILER_SIZE as u64)
                > data_end
            {
                return Err(Error::corruption(
                    "block handle in footer points past the file",
                ));
            }
        }
        Ok(footer)
    }
}

fn wal_mask(c: u32) -> u32 {
    wal::mask_crc(c)
}

/// Compresses (if it pays: at least 12.5% smaller) and appends a block with its trailer.
/// Returns the handle and the compression actually used.
pub fn write_block(
    file: &mut dyn WritableFile,
    raw: &[u8],
    compression: Compression,
) -> Result<(BlockHandle, Compression)> {
    let compressed: Option<Vec<u8>> = match compression {
        Compression::None => None,
        Compression::Lz4 => Some(lz4_flex::compress_prepend_size(raw)),
        Compression::Zstd(level) => {
            let mut out = Vec::new();
            put_varint64(&mut out, raw.len() as u64);
            match zstd::bulk::compress(raw, level) {
                Ok(c) => {
                    out.extend_from_slice(&c);
                    Some(out)
                }
                Err(_) => None,
            }
        }
    };
    let (body, used): (&[u8], Compression) = match &compressed {
        Some(c) if c.len() < raw.len() - raw.len() / 8 => (c, compression),
        _ => (raw, Compression::None),
    };
    let handle = BlockHandle {
        offset: file.len(),
        size: body.len() as u64,
    };
    let ty = used.type_byte();
    let crc = wal_mask(crc32c::crc32c_append(crc32c::crc32c(body), &[ty]));
    file.append(body)?;
    let mut trailer = [0u8; BLOCK_TRAILER_SIZE];
    trailer[0] = ty;
    trailer[1..].copy_from_slice(&crc.to_le_bytes());
    file.append(&trailer)?;
    Ok((handle, used))
}

/// Bytes one compressed LZ4 byte can expand to: a match's extra length bytes add 255 each.
const LZ4_MAX_RATIO: u64 = 255;
/// Bytes one compressed zstd byte can expand to: an RLE block, 3 header bytes and 1 byte of
/// content, yields at most 128 KiB.
const ZSTD_MAX_RATIO: u64 = (128 << 10) / 3;

/// The largest length a compressed block body of `compressed` bytes can decompress to, capped at
/// 2 GiB. The declared length is checked against it before anything is allocated, so a damaged
/// length field cannot make a read allocate memory its block could never fill.
fn max_decompressed_len(ratio: u64, compressed: usize) -> u64 {
    (compressed as u64)
        .saturating_mul(ratio)
        .saturating_add(1 << 10)
        .min(1 << 31)
}

/// Reads a block, verifies its checksum and decompresses it.
pub fn read_block(file: &dyn RandomAccessFile, h: BlockHandle, what: &str) -> Result<Bytes> {
    read_block_cached(file, h, what, true)
}

/// [`read_block`], telling the file whether the block may displace cached ones.
pub fn read_block_cached(
    file: &dyn RandomAccessFile,
    h: BlockHandle,
    what: &str,
    fill_cache: bool,
) -> Result<Bytes> {
    let len = block_len(file, h, what)?;
    let raw = file.read_block_at(h.offset, len + BLOCK_TRAILER_SIZE, fill_cache)?;
    decode_block(raw, h, len, what)
}

/// [`read_block`] only if the file has the bytes without waiting for a device
/// ([`RandomAccessFile::read_block_nowait`]); `None` otherwise.
pub fn read_block_nowait(
    file: &dyn RandomAccessFile,
    h: BlockHandle,
    what: &str,
) -> Result<Option<Bytes>> {
    let len = block_len(file, h, what)?;
    match file.read_block_nowait(h.offset, len + BLOCK_TRAILER_SIZE)? {
        Some(raw) => decode_block(raw, h, len, what).map(Some),
        None => Ok(None),
    }
}

/// The body length of the block at `h`, checked against the file's size.
fn block_len(file: &dyn RandomAccessFile, h: BlockHandle, what: &str) -> Result<usize> {
    let len = usize::try_from(h.size)
        .ok()
        .filter(|&n| n <= (1 << 31))
        .ok_or_else(|| Error::corruption(format!("{what} block size {} is implausible", h.size)))?;
    if h.offset.saturating_add(h.size + BLOCK_TRAILER_SIZE as u64) > file.size() {
        return Err(Error::corruption(format!(
            "{what} block handle (offset {}, size {}) points past the end of the file",
            h.offset, h.size
        )));
    }
    Ok(len)
}

/// Verifies the checksum of a block read with its trailer (`raw`, body `len` bytes) and
/// decompresses its body.
fn decode_block(raw: Bytes, h: BlockHandle, len: usize, what: &str) -> Result<Bytes> {
    let (body, trailer) = raw.split_at(len);
    let ty = trailer[0];
    let want = decode_fixed32(&trailer[1..]).unwrap_or(0);
    let got = wal_mask(crc32c::crc32c_append(crc32c::crc32c(body), &[ty]));
    if want != got {
        return Err(Error::corruption(format!(
            "{what} block checksum mismatch at offset {} (size {})",
            h.offset, h.size
        )));
    }
    let bad = |m: &str| Error::corruption(format!("{what} block at offset {}: {m}", h.offset));
    match ty {
        0 => Ok(raw.slice(..len)),
        1 if crate::coding::decode_fixed32(body)
            .is_none_or(|n| n as u64 > max_decompressed_len(LZ4_MAX_RATIO, body.len())) =>
        {
            Err(bad("lz4 length missing or implausible"))
        }
        1 => lz4_flex::decompress_size_prepended(body)
            .map(Bytes::from)
            .map_err(|e| bad(&format!("lz4: {e}"))),
        2 => {
            let mut d = Decoder::new(body);
            let n = d.varint64().ok_or_else(|| bad("zstd length"))?;
            if n > max_decompressed_len(ZSTD_MAX_RATIO, d.buf.len()) {
                return Err(bad("zstd length implausible"));
            }
            // A frame that declares its size (ours always do) must declare the same one.
            match zstd::zstd_safe::get_frame_content_size(d.buf) {
                Ok(None) => {}
                Ok(Some(c)) if c == n => {}
                _ => return Err(bad("zstd frame size disagrees with the block length")),
            }
            zstd::bulk::decompress(d.buf, n as usize)
                .map(Bytes::from)
                .map_err(|e| bad(&format!("zstd: {e}")))
        }
        t => Err(bad(&format!("unknown compression type {t}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{LocalFs, Storage};

    /// Writes `body` with a valid trailer of compression type `ty` and reads it back.
    fn read_raw(ty: u8, body: &[u8]) -> Result<Bytes> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let mut f = LocalFs.create(&p).unwrap();
        let crc = wal_mask(crc32c::crc32c_append(crc32c::crc32c(body), &[ty]));
        f.append(body).unwrap();
        f.append(&[ty]).unwrap();
        f.append(&crc.to_le_bytes()).unwrap();
        f.sync().unwrap();
        let h = BlockHandle {
            offset: 0,
            size: body.len() as u64,
        };
        read_block(LocalFs.open(&p).unwrap().as_ref(), h, "data")
    }

    /// Found by the `sst_table` fuzz target: a zstd block whose length varint claimed 895 MB
    /// made the read allocate that much before decompressing a few hundred bytes (and a length
    /// larger than the frame's was accepted).
    #[test]
    fn fuzz_sst_zstd_huge_length_field() {
        let frame = zstd::bulk::compress(b"hello hello hello hello", 3).unwrap();
        let good = |n: u64| {
            let mut b = Vec::new();
            put_varint64(&mut b, n);
            b.extend_from_slice(&frame);
            b
        };
        assert_eq!(
            &read_raw(2, &good(23)).unwrap()[..],
            b"hello hello hello hello"
        );
        for n in [24, 1 << 20, 895_484_314, 1 << 31] {
            let e = read_raw(2, &good(n)).unwrap_err();
            assert!(e.is_corruption(), "{e}");
        }
    }

    /// The LZ4 twin: a prepended size far beyond what the body can expand to is rejected before
    /// allocating.
    #[test]
    fn fuzz_sst_lz4_huge_length_field() {
        let mut body = lz4_flex::compress_prepend_size(b"abcabcabcabcabcabc");
        assert_eq!(&read_raw(1, &body).unwrap()[..], b"abcabcabcabcabcabc");
        body[..4].copy_from_slice(&(1u32 << 30).to_le_bytes());
        let e = read_raw(1, &body).unwrap_err();
        assert!(e.to_string().contains("implausible"), "{e}");
    }
}
