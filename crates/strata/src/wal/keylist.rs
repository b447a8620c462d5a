//! Extended-WAL key lists (RocksMash §3.4): the WAL record logged when fast-tier tables are
//! installed, naming every entry of each table so that the table can be rebuilt from the WAL
//! alone after the fast tier's disk is lost.
//!
//! Each point entry is either a *reference* — the sequence number of the WAL operation that
//! wrote it (sequence numbers are unique per operation, so the reference names one exact
//! version: the rebuilt table holds what the lost one held) — or, for a record the live WAL no
//! longer holds (promoted or retained hot records with old sequence numbers, values a
//! compaction filter changed), the entry itself, inline. Range tombstones are always inline
//! (compaction clips them to table bounds). A CRC32C over the table's logical content lets
//! recovery prove the rebuilt table equal to the lost one.
//!
//! Format (`docs/format.md`, "Key-list records"): `fixed64 KEY_LIST_MARKER` (where a write
//! batch keeps its first sequence number, which never exceeds 2^56), `u8 version`, `varint
//! tables`, then per table `varint id`, `varint entries`, entries (`u8 0` + `varint zigzag
//! delta of the sequence number from the previous reference`, or `u8 1` + length-prefixed
//! internal key + length-prefixed value), `varint tombstones`, tombstones (length-prefixed
//! start, length-prefixed end, `varint seq`), `fixed32` content CRC.
//!
//! Decoding takes untrusted bytes: every inconsistency is `Corruption`. Depends on `coding`,
//! `range_del`, `types`, `error`.

use crate::coding::{put_fixed32, put_fixed64, put_length_prefixed, put_varint64, Decoder};
use crate::error::{Error, Result};
use crate::range_del::RangeTombstone;
use crate::types::{SeqNo, MAX_SEQ};

/// Stands where a write batch keeps its first sequence number.
pub const KEY_LIST_MARKER: u64 = u64::MAX;
const VERSION: u8 = 1;

/// Whether a WAL record is a key-list record rather than a write batch.
pub fn is_key_list(rec: &[u8]) -> bool {
    rec.len() >= 8 && rec[..8] == KEY_LIST_MARKER.to_le_bytes()
}

/// One point entry of a fast-tier table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyListEntry {
    /// The WAL operation with this sequence number (a put or a delete).
    Ref(SeqNo),
    /// The record itself (boxed: most entries are references, and a recovery holds millions).
    Inline(Box<InlineEntry>),
}

/// A key-list entry logged with its record: its internal key and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineEntry {
    /// The entry's internal key.
    pub ikey: Vec<u8>,
    /// The entry's value.
    pub value: Vec<u8>,
}

impl KeyListEntry {
    /// An inline entry of internal key `ikey` and value `value`.
    pub fn inline(ikey: Vec<u8>, value: Vec<u8>) -> Self {
        KeyListEntry::Inline(Box::new(InlineEntry { ikey, value }))
    }
}

/// The key list of one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyList {
    /// The table's file number.
    pub table: u64,
    /// The table's point entries, in table order.
    pub entries: Vec<KeyListEntry>,
    /// The table's range tombstones, in table order.
    pub tombstones: Vec<RangeTombstone>,
    /// [`ContentCrc`] of the table's point entries and tombstones.
    pub checksum: u32,
}

/// CRC32C over a table's logical content, in table order: each point entry as length-prefixed
/// internal key and value, then each tombstone as start, end and sequence number.
#[derive(Default)]
pub struct ContentCrc {
    crc: u32,
}

impl ContentCrc {
    /// Appends `bytes` as `put_length_prefixed` encodes them, without copying them.
    fn add_prefixed(&mut self, bytes: &[u8]) {
        let mut len = [0u8; 10];
        let n = crate::coding::encode_varint64(&mut len, bytes.len() as u64);
        self.crc = crc32c::crc32c_append(self.crc, &len[..n]);
        self.crc = crc32c::crc32c_append(self.crc, bytes);
    }
    /// Adds a point entry: its internal key and value.
    pub fn add_point(&mut self, ikey: &[u8], value: &[u8]) {
        self.add_prefixed(ikey);
        self.add_prefixed(value);
    }
    /// Adds a range tombstone: its start, end and sequence number.
    pub fn add_tombstone(&mut self, t: &RangeTombstone) {
        self.add_prefixed(&t.start);
        self.add_prefixed(&t.end);
        self.crc = crc32c::crc32c_append(self.crc, &t.seq.to_le_bytes());
    }
    /// The CRC32C (unmasked) of everything added so far.
    pub fn value(&self) -> u32 {
        self.crc
    }
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Encodes the key lists of the tables one install adds, as one WAL record (batched, §3.4).
pub fn encode(lists: &[KeyList]) -> Vec<u8> {
    let mut b = Vec::new();
    put_fixed64(&mut b, KEY_LIST_MARKER);
    b.push(VERSION);
    put_varint64(&mut b, lists.len() as u64);
    for l in lists {
        put_varint64(&mut b, l.table);
        put_varint64(&mut b, l.entries.len() as u64);
        let mut prev = 0i64;
        for e in &l.entries {
            match e {
                KeyListEntry::Ref(seq) => {
                    b.push(0);
                    put_varint64(&mut b, zigzag(*seq as i64 - prev));
                    prev = *seq as i64;
                }
                KeyListEntry::Inline(e) => {
                    b.push(1);
                    put_length_prefixed(&mut b, &e.ikey);
                    put_length_prefixed(&mut b, &e.value);
                }
            }
        }
        put_varint64(&mut b, l.tombstones.len() as u64);
        for t in &l.tombstones {
            put_length_prefixed(&mut b, &t.start);
            put_length_prefixed(&mut b, &t.end);
            put_varint64(&mut b, t.seq);
        }
        put_fixed32(&mut b, l.checksum);
    }
    b
}

/// Decodes a key-list record (see [`is_key_list`]).
pub fn decode(rec: &[u8]) -> Result<Vec<KeyList>> {
    decode_tables(rec, |_| true)
}

/// [`decode`], keeping only the lists of the tables `keep` accepts: the others are parsed and
/// checked alike, but their entries are not collected (a log holds the lists of every table
/// ever installed, most of them deleted since, and a recovery needs those of the live ones).
pub fn decode_tables(rec: &[u8], keep: impl Fn(u64) -> bool) -> Result<Vec<KeyList>> {
    let bad = |what: &str| Error::corruption(format!("key-list record: {what}"));
    let mut d = Decoder::new(rec);
    if d.fixed64() != Some(KEY_LIST_MARKER) {
        return Err(bad("missing marker"));
    }
    match d.u8() {
        Some(VERSION) => {}
        Some(v) => return Err(bad(&format!("unsupported version {v}"))),
        None => return Err(bad("truncated")),
    }
    let n = d.varint64().ok_or_else(|| bad("truncated table count"))?;
    let mut out = Vec::new();
    for _ in 0..n {
        let table = d.varint64().ok_or_else(|| bad("truncated table id"))?;
        let count = d.varint64().ok_or_else(|| bad("truncated entry count"))?;
        // Every entry takes at least two bytes: a count beyond that is damage, not a reason
        // to reserve memory.
        if count > rec.len() as u64 {
            return Err(bad("entry count exceeds the record"));
        }
        let kept = keep(table);
        // Reserve what the bytes can hold at most, not what a count claims (nothing for a
        // list not kept).
        let reserve = |n: u64, min_bytes: usize| match kept {
            true => (n as usize).min(d.buf.len() / min_bytes),
            false => 0,
        };
        let mut entries = Vec::with_capacity(reserve(count, 2));
        let mut prev = 0i64;
        for _ in 0..count {
            match d.u8().ok_or_else(|| bad("truncated entry"))? {
                0 => {
                    let delta = unzigzag(d.varint64().ok_or_else(|| bad("truncated reference"))?);
                    let seq = prev
                        .checked_add(delta)
                        .ok_or_else(|| bad("reference overflow"))?;
                    if seq <= 0 || seq as u64 > MAX_SEQ {
                        return Err(bad(&format!("reference to sequence number {seq}")));
                    }
                    prev = seq;
                    if kept {
                        entries.push(KeyListEntry::Ref(seq as u64));
                    }
                }
                1 => {
                    let ikey = d.length_prefixed().ok_or_else(|| bad("truncated key"))?;
                    if ikey.len() < 8 {
                        return Err(bad("internal key shorter than its trailer"));
                    }
                    let value = d.length_prefixed().ok_or_else(|| bad("truncated value"))?;
                    if kept {
                        entries.push(KeyListEntry::inline(ikey.to_vec(), value.to_vec()));
                    }
                }
                t => return Err(bad(&format!("unknown entry tag {t}"))),
            }
        }
        let nt = d
            .varint64()
            .ok_or_else(|| bad("truncated tombstone count"))?;
        if nt > rec.len() as u64 {
            return Err(bad("tombstone count exceeds the record"));
        }
        let mut tombstones = Vec::with_capacity(reserve(nt, 3));
        for _ in 0..nt {
            let start = d
                .length_prefixed()
                .ok_or_else(|| bad("truncated tombstone"))?;
            let end = d
                .length_prefixed()
                .ok_or_else(|| bad("truncated tombstone"))?;
            let seq = d.varint64().ok_or_else(|| bad("truncated tombstone"))?;
            if seq == 0 || seq > MAX_SEQ {
                return Err(bad(&format!("tombstone with sequence number {seq}")));
            }
            if kept {
                tombstones.push(RangeTombstone::new(start, end, seq));
            }
        }
        let checksum = d.fixed32().ok_or_else(|| bad("truncated checksum"))?;
        if !kept {
            continue;
        }
        out.push(KeyList {
            table,
            entries,
            tombstones,
            checksum,
        });
    }
    if !d.is_empty() {
        return Err(bad("trailing bytes"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checksum is CRC32C over the documented encoding (docs/format.md §16): length-prefixed
    /// key and value per point entry, start, end and fixed64 sequence per tombstone.
    #[test]
    fn content_crc_is_crc32c_of_the_encoding() {
        let value = vec![7u8; 300]; // a two-byte length
        let t = RangeTombstone::new("a", "b", 9);
        let mut c = ContentCrc::default();
        c.add_point(b"key\x01\0\0\0\0\0\0\0", &value);
        c.add_point(b"", b"");
        c.add_tombstone(&t);
        let mut enc = Vec::new();
        put_length_prefixed(&mut enc, b"key\x01\0\0\0\0\0\0\0");
        put_length_prefixed(&mut enc, &value);
        put_length_prefixed(&mut enc, b"");
        put_length_prefixed(&mut enc, b"");
        put_length_prefixed(&mut enc, &t.start);
        put_length_prefixed(&mut enc, &t.end);
        put_fixed64(&mut enc, t.seq);
        assert_eq!(c.value(), crc32c::crc32c(&enc));
    }

    fn sample() -> Vec<KeyList> {
        vec![
            KeyList {
                table: 7,
                entries: vec![
                    KeyListEntry::Ref(100),
                    KeyListEntry::Ref(3),
                    KeyListEntry::inline(b"key\x01\0\0\0\0\0\0\0".to_vec(), b"v".to_vec()),
                    KeyListEntry::Ref(MAX_SEQ),
                ],
                tombstones: vec![RangeTombstone::new("a", "b", 9)],
                checksum: 0xdead_beef,
            },
            KeyList {
                table: 8,
                entries: vec![],
                tombstones: vec![],
                checksum: 0,
            },
        ]
    }

    #[test]
    fn round_trip() {
        let lists = sample();
        let rec = encode(&lists);
        assert!(is_key_list(&rec));
        assert_eq!(decode(&rec).unwrap(), lists);
    }

    /// Tables left out are still parsed and checked (where the next list starts depends on
    /// them), just not collected.
    #[test]
    fn decoding_some_tables_keeps_exactly_those() {
        let lists = sample();
        let rec = encode(&lists);
        for keep in [vec![], vec![7], vec![8], vec![7, 8], vec![9]] {
            let got = decode_tables(&rec, |t| keep.contains(&t)).unwrap();
            let want: Vec<KeyList> = lists
                .iter()
                .filter(|l| keep.contains(&l.table))
                .cloned()
                .collect();
            assert_eq!(got, want, "keep {keep:?}");
        }
        for n in 0..rec.len() {
            let e = decode_tables(&rec[..n], |_| false).unwrap_err();
            assert!(e.is_corruption(), "{n}: {e}");
        }
    }

    #[test]
    fn every_truncation_is_corruption() {
        let rec = encode(&sample());
        for n in 0..rec.len() {
            let e = decode(&rec[..n]).unwrap_err();
            assert!(e.is_corruption(), "{n}: {e}");
        }
        let mut longer = rec.clone();
        longer.push(0);
        assert!(decode(&longer).unwrap_err().is_corruption());
    }

    #[test]
    fn a_write_batch_is_not_a_key_list() {
        let mut b = crate::batch::WriteBatch::new();
        b.put("k", "v");
        assert!(!is_key_list(b.encode_with_seq(MAX_SEQ)));
    }
}
