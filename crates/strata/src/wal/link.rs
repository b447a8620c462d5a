//! Log-link records: the last record of a WAL file names the file that follows it, so a
//! reader following the log location (a replica, `replica::follow`) finds the next log
//! without listing the location.
//!
//! Written when a memtable switch seals a log (`db::room::switch_memtable`), before the
//! next log takes writes. It reaches the log location with the sealed log's other unsynced
//! bytes, at the next sync, which uploads sealed logs before the current one. A log sealed
//! by a crash has no link; readers that follow logs fall back to reading the manifest.
//!
//! Format (`docs/format.md`, "Log-link records"): `fixed64 LOG_LINK_MARKER` (where a write
//! batch keeps its first sequence number, which never exceeds 2^56), `u8 version`, `varint64
//! next log number`. Replay and recovery skip it. Decoding takes untrusted bytes: anything
//! else is `Corruption`. Depends on `coding`, `error`.

use crate::coding::{put_fixed64, put_varint64, Decoder};
use crate::error::{Error, Result};

/// Stands where a write batch keeps its first sequence number (a key-list record uses
/// `u64::MAX`).
pub const LOG_LINK_MARKER: u64 = u64::MAX - 1;
const VERSION: u8 = 1;

/// Whether a WAL record is a log-link record.
pub fn is_log_link(rec: &[u8]) -> bool {
    rec.len() >= 8 && rec[..8] == LOG_LINK_MARKER.to_le_bytes()
}

/// Whether a WAL record is a write batch (not a key list or a log link).
pub fn is_write_batch(rec: &[u8]) -> bool {
    !is_log_link(rec) && !super::keylist::is_key_list(rec)
}

/// The record naming log `next` as the one after the log it ends.
pub fn encode(next: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 1 + 10);
    put_fixed64(&mut out, LOG_LINK_MARKER);
    out.push(VERSION);
    put_varint64(&mut out, next);
    out
}

/// The next log's number from a log-link record.
pub fn decode(rec: &[u8]) -> Result<u64> {
    let mut d = Decoder::new(rec);
    if d.fixed64() != Some(LOG_LINK_MARKER) {
        return Err(Error::corruption("log-link record without its marker"));
    }
    match d.u8() {
        Some(VERSION) => {}
        Some(v) => {
            return Err(Error::corruption(format!(
                "log-link record of unknown version {v}"
            )))
        }
        None => return Err(Error::corruption("log-link record truncated")),
    }
    let next = d
        .varint64()
        .ok_or_else(|| Error::corruption("log-link record truncated"))?;
    if !d.is_empty() {
        return Err(Error::corruption("trailing bytes after a log-link record"));
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_round_trips_and_is_told_from_batches_and_key_lists() {
        for next in [0, 1, 300, u64::MAX] {
            let rec = encode(next);
            assert!(is_log_link(&rec) && !is_write_batch(&rec));
            assert_eq!(decode(&rec).unwrap(), next);
        }
        let list = crate::wal::keylist::encode(&[]);
        assert!(!is_log_link(&list) && !is_write_batch(&list));
        let mut batch = crate::WriteBatch::new();
        batch.put(b"k", b"v");
        assert!(is_write_batch(batch.encode_with_seq(7)));
    }

    #[test]
    fn damaged_links_are_corruption() {
        let rec = encode(42);
        for cut in 0..rec.len() {
            assert!(decode(&rec[..cut]).is_err(), "cut at {cut}");
        }
        let mut v = rec.clone();
        v[8] = 2;
        assert!(decode(&v).is_err());
        let mut t = rec;
        t.push(0);
        assert!(decode(&t).is_err());
    }
}
