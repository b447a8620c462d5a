//! [`VersionEdit`]: a delta between versions, as logged in the manifest.
//!
//! Encoding: a sequence of `tag: varint` fields (see `docs/format.md`, "Manifest"). Unknown tags
//! are corruption: a newer release writing fields this one cannot interpret must bump the
//! manifest format tag instead.

use super::file_meta::FileMeta;
use crate::coding::{put_length_prefixed, put_varint64, Decoder};
use crate::error::{Error, Result};

const TAG_FORMAT: u64 = 1;
const TAG_LOG_NUMBER: u64 = 2;
const TAG_NEXT_FILE: u64 = 3;
const TAG_LAST_SEQ: u64 = 4;
const TAG_DELETED: u64 = 5;
const TAG_ADDED: u64 = 6;
const TAG_NUM_LEVELS: u64 = 7;

/// The manifest format identifier written in the first record of every manifest.
pub const MANIFEST_FORMAT: &str = "strata.manifest.v1";

/// A change to the tree's shape and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    pub format: Option<String>,
    /// The number of levels the tree was created with (snapshot records only).
    pub num_levels: Option<u64>,
    /// WAL files with smaller numbers are no longer needed.
    pub log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<u64>,
    pub deleted: Vec<(u32, u64)>,
    pub added: Vec<(u32, FileMeta)>,
}

impl VersionEdit {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(f) = &self.format {
            put_varint64(&mut b, TAG_FORMAT);
            put_length_prefixed(&mut b, f.as_bytes());
        }
        for (tag, v) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE, self.next_file_number),
            (TAG_LAST_SEQ, self.last_sequence),
            (TAG_NUM_LEVELS, self.num_levels),
        ] {
            if let Some(v) = v {
                put_varint64(&mut b, tag);
                put_varint64(&mut b, v);
            }
        }
        for (level, id) in &self.deleted {
            put_varint64(&mut b, TAG_DELETED);
            put_varint64(&mut b, *level as u64);
            put_varint64(&mut b, *id);
        }
        for (level, f) in &self.added {
            put_varint64(&mut b, TAG_ADDED);
            put_varint64(&mut b, *level as u64);
            put_varint64(&mut b, f.id);
            put_varint64(&mut b, f.size);
            put_length_prefixed(&mut b, &f.smallest);
            put_length_prefixed(&mut b, &f.largest);
            b.push(f.largest_exclusive as u8);
            put_varint64(&mut b, f.smallest_seq);
            put_varint64(&mut b, f.largest_seq);
            put_varint64(&mut b, f.num_entries);
            put_varint64(&mut b, f.num_deletions);
            put_varint64(&mut b, f.num_range_deletions);
            b.push(f.tier.as_u8());
        }
        b
    }

    pub fn decode(rec: &[u8]) -> Result<VersionEdit> {
        let mut d = Decoder::new(rec);
        let mut e = VersionEdit::default();
        let bad = |what: &str| Error::corruption(format!("manifest record: malformed {what}"));
        while !d.is_empty() {
            match d.varint64().ok_or_else(|| bad("tag"))? {
                TAG_FORMAT => {
                    let s = d.length_prefixed().ok_or_else(|| bad("format"))?;
                    e.format = Some(String::from_utf8_lossy(s).into_owned());
                }
                TAG_LOG_NUMBER => {
                    e.log_number = Some(d.varint64().ok_or_else(|| bad("log number"))?)
                }
                TAG_NEXT_FILE => {
                    e.next_file_number = Some(d.varint64().ok_or_else(|| bad("next file"))?)
                }
                TAG_LAST_SEQ => {
                    e.last_sequence = Some(d.varint64().ok_or_else(|| bad("last seq"))?)
                }
                TAG_NUM_LEVELS => {
                    e.num_levels = Some(d.varint64().ok_or_else(|| bad("num levels"))?)
                }
                TAG_DELETED => {
                    let level = d.varint32().ok_or_else(|| bad("deleted level"))?;
                    let id = d.varint64().ok_or_else(|| bad("deleted id"))?;
                    e.deleted.push((level, id));
                }
                TAG_ADDED => {
                    let f = (|| {
                        let level = d.varint32()?;
                        let id = d.varint64()?;
                        let size = d.varint64()?;
                        let smallest = d.length_prefixed()?.to_vec();
                        let largest = d.length_prefixed()?.to_vec();
                        let largest_exclusive = match d.u8()? {
                            0 => false,
                            1 => true,
                            _ => return None,
                        };
                        Some((
                            level,
                            FileMeta {
                                id,
                                size,
                                smallest,
                                largest,
                                largest_exclusive,
                                smallest_seq: d.varint64()?,
                                largest_seq: d.varint64()?,
                                num_entries: d.varint64()?,
                                num_deletions: d.varint64()?,
                                num_range_deletions: d.varint64()?,
                                tier: crate::tier::Tier::from_u8(d.u8()?)?,
                            },
                        ))
                    })()
                    .ok_or_else(|| bad("added table"))?;
                    e.added.push(f);
                }
                t => {
                    return Err(Error::corruption(format!(
                        "manifest record: unknown tag {t}"
                    )))
                }
            }
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_truncation() {
        let e = VersionEdit {
            format: Some(MANIFEST_FORMAT.into()),
            log_number: Some(3),
            next_file_number: Some(9),
            last_sequence: Some(100),
            num_levels: Some(7),
            deleted: vec![(1, 4)],
            added: vec![(
                2,
                FileMeta {
                    id: 7,
                    size: 1000,
                    smallest: b"a".to_vec(),
                    largest: b"z".to_vec(),
                    largest_exclusive: true,
                    smallest_seq: 1,
                    largest_seq: 99,
                    num_entries: 10,
                    num_deletions: 1,
                    num_range_deletions: 2,
                    tier: crate::tier::Tier::Capacity,
                },
            )],
        };
        let b = e.encode();
        assert_eq!(VersionEdit::decode(&b).unwrap(), e);
        for cut in 1..b.len() {
            // Every strict prefix either fails or decodes to something different.
            if let Ok(d) = VersionEdit::decode(&b[..cut]) {
                assert_ne!(d, e);
            }
        }
    }
}
