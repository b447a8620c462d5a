//! Target `sst_footer`: `Footer::decode` (the fixed 48-byte table end) and
//! `BlockHandle::decode`.
//!
//! Input: flag byte (bit 0: reseal the footer checksum), the file size as 8 little-endian
//! bytes, then the footer bytes. Properties: a decoded footer encodes to exactly the input bytes
//! and its handles lie inside the file; a decoded block handle round-trips.

use strata::sst::format::{BlockHandle, Footer, BLOCK_TRAILER_SIZE, FOOTER_SIZE};

use crate::util::split_flag;

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    if let Ok(h) = BlockHandle::decode(rest) {
        let mut enc = Vec::new();
        h.encode_to(&mut enc);
        assert_eq!(BlockHandle::decode(&enc).ok(), Some(h), "block handle round trip");
    }
    let Some((size, footer)) = rest.split_first_chunk::<8>() else {
        return;
    };
    let size = u64::from_le_bytes(*size);
    let mut footer = footer.to_vec();
    if flag & 1 != 0 && footer.len() == FOOTER_SIZE {
        let crc = strata::wal::mask_crc(crc32c::crc32c(&footer[..36]));
        footer[36..40].copy_from_slice(&crc.to_le_bytes());
    }
    if let Ok(f) = Footer::decode(&footer, size) {
        assert_eq!(f.encode(), footer, "footer does not re-encode to its bytes");
        for h in [f.index, f.metaindex] {
            let end = h.offset as u128 + h.size as u128 + BLOCK_TRAILER_SIZE as u128;
            assert!(end + FOOTER_SIZE as u128 <= size as u128, "handle past the file");
        }
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for t in crate::util::real_db().tables.iter().take(3) {
        let mut s = vec![0u8];
        s.extend_from_slice(&(t.len() as u64).to_le_bytes());
        s.extend_from_slice(&t[t.len() - FOOTER_SIZE..]);
        out.push(s);
    }
    let f = Footer {
        metaindex: BlockHandle {
            offset: 1000,
            size: 50,
        },
        index: BlockHandle {
            offset: 900,
            size: 95,
        },
        version: 1,
    };
    let mut s = vec![1u8];
    s.extend_from_slice(&2000u64.to_le_bytes());
    s.extend_from_slice(&f.encode());
    out.push(s);
    out
}
