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
const TAG_STYLE: u64 = 8;
const TAG_ADDED_TO_RUN: u64 = 9;
const TAG_RUN_CUT: u64 = 10;
const TAG_WAL_PIN: u64 = 11;

/// The manifest format identifier written in the first record of every manifest.
pub const MANIFEST_FORMAT: &str = "strata.manifest.v1";
/// The format of manifests of databases with the extended WAL: v1 plus `wal_pins` (tag 11),
/// which releases that only know v1 must refuse.
pub const MANIFEST_FORMAT_V2: &str = "strata.manifest.v2";

/// A change to the tree's shape and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// The manifest format ([`MANIFEST_FORMAT`] or [`MANIFEST_FORMAT_V2`]); every manifest's first
    /// record has it.
    pub format: Option<String>,
    /// The number of levels the tree was created with (snapshot records only).
    pub num_levels: Option<u64>,
    /// WAL files with smaller numbers are no longer needed.
    pub log_number: Option<u64>,
    /// The next file number to hand out (tables, WALs and manifests share the space).
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<u64>,
    /// The compaction style the database was created with (snapshot records only; absent in
    /// manifests written before split-forest compaction existed, which are leveled).
    pub style: Option<CompactionStyle>,
    /// `(level, table)`: tables removed from a level.
    pub deleted: Vec<(u32, u64)>,
    /// Tables added to run 0 of a level: L0 (where every table is its own run) and the single
    /// run of a leveled level.
    pub added: Vec<(u32, FileMeta)>,
    /// `(level, run, table)`: tables added to a numbered sorted run (split-forest trees).
    pub added_to_run: Vec<(u32, u64, FileMeta)>,
    /// `(level, run, key, into)`: the compaction journal of a split-forest merge with early
    /// cleaning — run `run` of `level` no longer serves user keys below `key` (they were merged
    /// into run `into` of the next level, or of `level` itself for the last level, and the
    /// input tables entirely below `key` deleted).
    pub run_cuts: Vec<(u32, u64, Vec<u8>, u64)>,
    /// `(table, wal)`: with the extended WAL, the oldest WAL file a fast-tier table added by
    /// this edit needs for node-loss recovery (its key list's file, or an older one holding
    /// records it references). Kept until the table is deleted.
    pub wal_pins: Vec<(u64, u64)>,
}

/// How a database compacts: chosen at creation and recorded in the manifest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CompactionStyle {
    /// One sorted run per level below L0 (RocksDB's leveled compaction).
    #[default]
    Leveled,
    /// SifrDB's split MS-forest: several trees (sorted runs of fixed-size tables) per level,
    /// merged tree-wise into the next level, only overlapping tables rewritten.
    SplitForest,
}

impl CompactionStyle {
    /// The style's code in the manifest: 0 leveled, 1 split forest.
    pub fn as_u64(self) -> u64 {
        match self {
            CompactionStyle::Leveled => 0,
            CompactionStyle::SplitForest => 1,
        }
    }
    /// The style of manifest code `v`; `None` for an unknown code.
    pub fn from_u64(v: u64) -> Option<Self> {
        match v {
            0 => Some(CompactionStyle::Leveled),
            1 => Some(CompactionStyle::SplitForest),
            _ => None,
        }
    }
    /// The name used by the CLI and configuration (`leveled`, `split-forest`).
    pub fn name(self) -> &'static str {
        match self {
            CompactionStyle::Leveled => "leveled",
            CompactionStyle::SplitForest => "split-forest",
        }
    }
}

impl std::str::FromStr for CompactionStyle {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "leveled" => Ok(CompactionStyle::Leveled),
            "split-forest" | "split_forest" => Ok(CompactionStyle::SplitForest),
            _ => Err(format!(
                "unknown compaction style {s:?} (expected leveled or split-forest)"
            )),
        }
    }
}

fn put_file(b: &mut Vec<u8>, f: &FileMeta) {
    put_varint64(b, f.id);
    put_varint64(b, f.size);
    put_length_prefixed(b, &f.smallest);
    put_length_prefixed(b, &f.largest);
    b.push(f.largest_exclusive as u8);
    put_varint64(b, f.smallest_seq);
    put_varint64(b, f.largest_seq);
    put_varint64(b, f.num_entries);
    put_varint64(b, f.num_deletions);
    put_varint64(b, f.num_range_deletions);
    b.push(f.tier.as_u8());
}

fn get_file(d: &mut Decoder<'_>) -> Option<FileMeta> {
    let id = d.varint64()?;
    let size = d.varint64()?;
    let smallest = d.length_prefixed()?.to_vec();
    let largest = d.length_prefixed()?.to_vec();
    let largest_exclusive = match d.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    Some(FileMeta {
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
    })
}

impl VersionEdit {
    /// The edit as one manifest record: for each field that is set, its tag and value.
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
            (TAG_STYLE, self.style.map(CompactionStyle::as_u64)),
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
            put_file(&mut b, f);
        }
        for (level, run, f) in &self.added_to_run {
            put_varint64(&mut b, TAG_ADDED_TO_RUN);
            put_varint64(&mut b, *level as u64);
            put_varint64(&mut b, *run);
            put_file(&mut b, f);
        }
        for (level, run, key, into) in &self.run_cuts {
            put_varint64(&mut b, TAG_RUN_CUT);
            put_varint64(&mut b, *level as u64);
            put_varint64(&mut b, *run);
            put_length_prefixed(&mut b, key);
            put_varint64(&mut b, *into);
        }
        for (id, wal) in &self.wal_pins {
            put_varint64(&mut b, TAG_WAL_PIN);
            put_varint64(&mut b, *id);
            put_varint64(&mut b, *wal);
        }
        b
    }

    /// Decodes one manifest record; fails (corruption) on a malformed field or an unknown tag.
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
                    let f = (|| Some((d.varint32()?, get_file(&mut d)?)))()
                        .ok_or_else(|| bad("added table"))?;
                    e.added.push(f);
                }
                TAG_ADDED_TO_RUN => {
                    let f = (|| Some((d.varint32()?, d.varint64()?, get_file(&mut d)?)))()
                        .ok_or_else(|| bad("added table"))?;
                    e.added_to_run.push(f);
                }
                TAG_RUN_CUT => {
                    let c = (|| {
                        Some((
                            d.varint32()?,
                            d.varint64()?,
                            d.length_prefixed()?.to_vec(),
                            d.varint64()?,
                        ))
                    })()
                    .ok_or_else(|| bad("run cut"))?;
                    e.run_cuts.push(c);
                }
                TAG_WAL_PIN => {
                    let p = (|| Some((d.varint64()?, d.varint64()?)))()
                        .ok_or_else(|| bad("wal pin"))?;
                    e.wal_pins.push(p);
                }
                TAG_STYLE => {
                    let v = d.varint64().ok_or_else(|| bad("compaction style"))?;
                    e.style =
                        Some(CompactionStyle::from_u64(v).ok_or_else(|| bad("compaction style"))?);
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
            style: Some(CompactionStyle::SplitForest),
            deleted: vec![(1, 4)],
            run_cuts: vec![(2, 40, b"m".to_vec(), 44)],
            wal_pins: vec![(8, 5)],
            added_to_run: vec![(
                3,
                41,
                FileMeta {
                    id: 8,
                    size: 10,
                    smallest: b"b".to_vec(),
                    largest: b"c".to_vec(),
                    largest_exclusive: false,
                    smallest_seq: 1,
                    largest_seq: 2,
                    num_entries: 2,
                    num_deletions: 0,
                    num_range_deletions: 0,
                    tier: crate::tier::Tier::Fast,
                },
            )],
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
