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
pub const FOOTER_SIZE: usize = 48;
pub const BLOCK_TRAILER_SIZE: usize = 5;

/// Where a block lives in a table file (size excludes the trailer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub fn encode_to(&self, buf: &mut Vec<u8>) {
        put_varint64(buf, self.offset);
        put_varint64(buf, self.size);
    }
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
    pub metaindex: BlockHandle,
    pub index: BlockHandle,
    pub version: u32,
}

impl Footer {
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
        if footer.version != FORMAT_VERSION {
            return Err(crate::error::ErrorRepr::NotADatabase(format!(
                "unsupported table format version {} (this release reads {FORMAT_VERSION})",
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
    let raw = file.read_block_at(h.offset, len + BLOCK_TRAILER_SIZE, fill_cache)?;
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
        1 if crate::coding::decode_fixed32(body).is_none_or(|n| n > 1 << 31) => {
            Err(bad("lz4 length missing or implausible"))
        }
        1 => lz4_flex::decompress_size_prepended(body)
            .map(Bytes::from)
            .map_err(|e| bad(&format!("lz4: {e}"))),
        2 => {
            let mut d = Decoder::new(body);
            let n = d.varint64().ok_or_else(|| bad("zstd length"))? as usize;
            if n > 1 << 31 {
                return Err(bad("zstd length implausible"));
            }
            zstd::bulk::decompress(d.buf, n)
                .map(Bytes::from)
                .map_err(|e| bad(&format!("zstd: {e}")))
        }
        t => Err(bad(&format!("unknown compression type {t}"))),
    }
}
