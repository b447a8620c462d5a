//! The `TEMPERATURE` side file: table temperatures carried across restarts (format in
//! `docs/format.md` §9).
//!
//! ```text
//! magic "STMP" | version u8 = 1 | reserved [0; 3] | count u32 LE
//! count × (table id u64 LE | temperature f64 LE | own reads f64 LE)
//! masked crc32c u32 LE of everything before it
//! ```
//!
//! Written whole to `TEMPERATURE.tmp`, synced and renamed over `TEMPERATURE`, so a crash leaves
//! the old file or the new one. It is advisory: a missing, torn or unreadable file only loses
//! temperatures (reported, never an open failure), and ids of tables that no longer exist are
//! ignored. Decoding never panics on any input (fuzzed: `temperature_file`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::wal::mask_crc;

const MAGIC: &[u8; 4] = b"STMP";
/// The current format version.
pub const VERSION: u8 = 1;
const HEADER: usize = 12;
const ENTRY: usize = 24;
/// At most this many entries are accepted (a million tables: 24 MB).
const MAX_ENTRIES: usize = 1 << 20;

/// The side file's path in database directory `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join("TEMPERATURE")
}

/// One table's entry: `(id, temperature, own reads)`.
pub type Entry = (u64, f64, f64);

/// Encodes entries (non-finite or non-positive temperatures are skipped; own reads are
/// clamped to `0..=temperature`).
pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let live: Vec<&Entry> = entries
        .iter()
        .filter(|(_, t, _)| t.is_finite() && *t > 0.0)
        .take(MAX_ENTRIES)
        .collect();
    let mut out = Vec::with_capacity(HEADER + live.len() * ENTRY + 4);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.extend_from_slice(&[0; 3]);
    out.extend_from_slice(&(live.len() as u32).to_le_bytes());
    for (id, t, own) in live {
        let own = if own.is_finite() {
            own.clamp(0.0, *t)
        } else {
            0.0
        };
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&own.to_le_bytes());
    }
    let crc = mask_crc(crc32c::crc32c(&out));
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a side file: `(temperature, own reads)` by table id.
pub fn decode(data: &[u8]) -> Result<HashMap<u64, (f64, f64)>> {
    let bad = |why: &str| Error::corruption(format!("TEMPERATURE file: {why}"));
    if data.len() < HEADER + 4 {
        return Err(bad("too short"));
    }
    if &data[..4] != MAGIC {
        return Err(bad("bad magic"));
    }
    if data[4] != VERSION {
        return Err(bad(&format!("unknown format version {}", data[4])));
    }
    let (body, crc) = data.split_at(data.len() - 4);
    let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if mask_crc(crc32c::crc32c(body)) != crc {
        return Err(bad("checksum mismatch"));
    }
    let count = u32::from_le_bytes([body[8], body[9], body[10], body[11]]) as usize;
    if count > MAX_ENTRIES || body.len() != HEADER + count * ENTRY {
        return Err(bad("length does not match the entry count"));
    }
    let mut out = HashMap::with_capacity(count);
    for e in body[HEADER..].chunks_exact(ENTRY) {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&e[i * 8..i * 8 + 8]);
            w
        };
        let t = f64::from_le_bytes(word(1));
        let own = f64::from_le_bytes(word(2));
        if !t.is_finite() || t < 0.0 || !own.is_finite() || own < 0.0 || own > t {
            return Err(bad("temperature is not a finite non-negative number"));
        }
        out.insert(u64::from_le_bytes(word(0)), (t, own));
    }
    Ok(out)
}

/// Writes the side file atomically.
pub fn write(storage: &dyn Storage, dir: &Path, entries: &[Entry]) -> Result<()> {
    let tmp = dir.join("TEMPERATURE.tmp");
    let mut f = storage.create(&tmp)?;
    f.append(&encode(entries))?;
    f.sync()?;
    drop(f);
    storage.rename(&tmp, &path(dir))?;
    storage.sync_dir(dir)
}

/// Reads the side file: `Ok(None)` when there is none.
pub fn read(storage: &dyn Storage, dir: &Path) -> Result<Option<HashMap<u64, (f64, f64)>>> {
    let p = path(dir);
    if !storage.exists(&p)? {
        return Ok(None);
    }
    decode(&storage.read_all(&p)?).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejections() {
        let entries = [
            (7u64, 12.5, 2.0),
            (9, 0.0, 0.0),
            (11, f64::NAN, 1.0),
            (1 << 40, 3.0, 9.0),
        ];
        let data = encode(&entries);
        let m = decode(&data).unwrap();
        assert_eq!(m.len(), 2, "zero and NaN are not stored");
        assert_eq!(m[&7], (12.5, 2.0));
        assert_eq!(m[&(1 << 40)], (3.0, 3.0), "own clamped to the total");
        // Every truncation and every single-byte change is rejected.
        for n in 0..data.len() {
            assert!(decode(&data[..n]).is_err(), "truncated to {n}");
        }
        for i in 0..data.len() {
            let mut d = data.clone();
            d[i] ^= 0x40;
            assert!(decode(&d).is_err(), "byte {i} flipped");
        }
        let empty = encode(&[]);
        assert_eq!(empty.len(), 16);
        assert_eq!(data.len(), 16 + 2 * 24);
        assert!(decode(&empty).unwrap().is_empty());
    }

    #[test]
    fn written_through_storage_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let st = crate::storage::default_storage();
        assert!(read(st.as_ref(), dir.path()).unwrap().is_none());
        write(st.as_ref(), dir.path(), &[(1, 2.0, 1.0)]).unwrap();
        write(st.as_ref(), dir.path(), &[(1, 4.0, 1.0), (2, 1.0, 0.0)]).unwrap();
        let m = read(st.as_ref(), dir.path()).unwrap().unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[&1], (4.0, 1.0));
    }
}
