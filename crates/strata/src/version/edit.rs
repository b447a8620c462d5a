//! [`VersionEdit`]: a delta between versions, as logged in the manifest.
//!
//! Encoding: a sequence of `tag: varint` fields (see `docs/format.md`, "Manifest"). Unknown tags
//! are corruption: a newer release writing fields this one cannot interpret must bump the
//! manifest format tag instead.
//!
//! Column families (format v3): the fields before a record's first family section (tag 12)
//! belong to the database and to family 0, as in v1 and v2; each section holds the tree fields
//! of one other family. A record has one encoding: family 0 never has a section, and database
//! fields never appear inside one.

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
const TAG_FAMILY: u64 = 12;
const TAG_FAMILY_ADD: u64 = 13;
const TAG_FAMILY_DROP: u64 = 14;
const TAG_NEXT_FAMILY: u64 = 15;

/// The manifest format identifier written in the first record of every manifest.
pub const MANIFEST_FORMAT: &str = "strata.manifest.v1";
/// The format of manifests of databases with the extended WAL: v1 plus `wal_pins` (tag 11),
/// which releases that only know v1 must refuse.
pub const MANIFEST_FORMAT_V2: &str = "strata.manifest.v2";
/// The format of manifests of databases that ever had a column family besides the default
/// one: v2 plus family sections and family records (tags 12–15), which releases that only know
/// v1 and v2 must refuse.
pub const MANIFEST_FORMAT_V3: &str = "strata.manifest.v3";

/// A column family as a manifest record creates it (tag 13).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FamilyDescriptor {
    /// The family's id: never 0 (the default family always exists), never reused.
    pub id: u32,
    /// The family's name, unique among live families.
    pub name: String,
    /// The family's options as the engine serialised them; stored and returned unread here.
    pub options: Vec<u8>,
}

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
    /// Column families this edit creates (v3). Each needs a section in the same edit giving
    /// its number of levels.
    pub families_added: Vec<FamilyDescriptor>,
    /// Column families this edit drops, with every table of theirs (v3).
    pub families_dropped: Vec<u32>,
    /// Family ids below this were handed out, some perhaps since dropped (v3, snapshot
    /// records and the records that create a family).
    pub next_family_id: Option<u32>,
    /// `(family, edit)`: changes to the trees of families other than 0, each edit holding only
    /// tree fields (`log_number`, `num_levels`, `style`, tables, run cuts and WAL pins).
    pub family_edits: Vec<(u32, VersionEdit)>,
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

/// Each counter that is set, as its tag and value.
fn put_counters<const N: usize>(b: &mut Vec<u8>, fields: [(u64, Option<u64>); N]) {
    for (tag, v) in fields {
        if let Some(v) = v {
            put_varint64(b, tag);
            put_varint64(b, v);
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
    /// Whether the edit has any column-family field (which needs format v3).
    pub fn has_family_fields(&self) -> bool {
        !self.families_added.is_empty()
            || !self.families_dropped.is_empty()
            || self.next_family_id.is_some()
            || !self.family_edits.is_empty()
    }

    /// The edit of family `id`'s tree as a record: for the default family the edit itself;
    /// for another its tree fields in the family's section, the database's fields (the next
    /// file number, the last sequence) before it.
    pub fn in_family(mut self, id: u32) -> VersionEdit {
        if id == super::DEFAULT_FAMILY {
            return self;
        }
        let mut top = VersionEdit {
            format: self.format.take(),
            next_file_number: self.next_file_number.take(),
            last_sequence: self.last_sequence.take(),
            ..Default::default()
        };
        top.family_edits.push((id, self));
        top
    }

    /// Whether the edit holds only fields a family section may carry.
    pub(crate) fn is_tree_only(&self) -> bool {
        self.format.is_none()
            && self.next_file_number.is_none()
            && self.last_sequence.is_none()
            && !self.has_family_fields()
    }

    /// The edit as one manifest record: for each field that is set, its tag and value.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(f) = &self.format {
            put_varint64(&mut b, TAG_FORMAT);
            put_length_prefixed(&mut b, f.as_bytes());
        }
        put_counters(
            &mut b,
            [
                (TAG_LOG_NUMBER, self.log_number),
                (TAG_NEXT_FILE, self.next_file_number),
                (TAG_LAST_SEQ, self.last_sequence),
                (TAG_NUM_LEVELS, self.num_levels),
                (TAG_STYLE, self.style.map(CompactionStyle::as_u64)),
            ],
        );
        self.encode_tables(&mut b);
        for f in &self.families_added {
            put_varint64(&mut b, TAG_FAMILY_ADD);
            put_varint64(&mut b, f.id as u64);
            put_length_prefixed(&mut b, f.name.as_bytes());
            put_length_prefixed(&mut b, &f.options);
        }
        for id in &self.families_dropped {
            put_varint64(&mut b, TAG_FAMILY_DROP);
            put_varint64(&mut b, *id as u64);
        }
        put_counters(
            &mut b,
            [(TAG_NEXT_FAMILY, self.next_family_id.map(u64::from))],
        );
        for (id, e) in &self.family_edits {
            debug_assert!(
                *id != 0 && e.is_tree_only(),
                "a family section holds tree fields"
            );
            put_varint64(&mut b, TAG_FAMILY);
            put_varint64(&mut b, *id as u64);
            put_counters(
                &mut b,
                [
                    (TAG_LOG_NUMBER, e.log_number),
                    (TAG_NUM_LEVELS, e.num_levels),
                    (TAG_STYLE, e.style.map(CompactionStyle::as_u64)),
                ],
            );
            e.encode_tables(&mut b);
        }
        b
    }

    /// The table fields of one tree (family 0's before any section, or a section's).
    fn encode_tables(&self, b: &mut Vec<u8>) {
        for (level, id) in &self.deleted {
            put_varint64(b, TAG_DELETED);
            put_varint64(b, *level as u64);
            put_varint64(b, *id);
        }
        for (level, f) in &self.added {
            put_varint64(b, TAG_ADDED);
            put_varint64(b, *level as u64);
            put_file(b, f);
        }
        for (level, run, f) in &self.added_to_run {
            put_varint64(b, TAG_ADDED_TO_RUN);
            put_varint64(b, *level as u64);
            put_varint64(b, *run);
            put_file(b, f);
        }
        for (level, run, key, into) in &self.run_cuts {
            put_varint64(b, TAG_RUN_CUT);
            put_varint64(b, *level as u64);
            put_varint64(b, *run);
            put_length_prefixed(b, key);
            put_varint64(b, *into);
        }
        for (id, wal) in &self.wal_pins {
            put_varint64(b, TAG_WAL_PIN);
            put_varint64(b, *id);
            put_varint64(b, *wal);
        }
    }

    /// Decodes one manifest record; fails (corruption) on a malformed field or an unknown tag.
    pub fn decode(rec: &[u8]) -> Result<VersionEdit> {
        let mut d = Decoder::new(rec);
        let mut e = VersionEdit::default();
        // The family section being read, if any: every later tree field belongs to it.
        let mut section: Option<(u32, VersionEdit)> = None;
        while !d.is_empty() {
            let tag = d.varint64().ok_or_else(|| bad("tag"))?;
            if matches!(
                tag,
                TAG_FORMAT
                    | TAG_NEXT_FILE
                    | TAG_LAST_SEQ
                    | TAG_FAMILY_ADD
                    | TAG_FAMILY_DROP
                    | TAG_NEXT_FAMILY
            ) && section.is_some()
            {
                return Err(Error::corruption(format!(
                    "manifest record: database field (tag {tag}) inside a family section"
                )));
            }
            match tag {
                TAG_FORMAT => {
                    let s = d.length_prefixed().ok_or_else(|| bad("format"))?;
                    e.format = Some(String::from_utf8_lossy(s).into_owned());
                }
                TAG_NEXT_FILE => {
                    e.next_file_number = Some(d.varint64().ok_or_else(|| bad("next file"))?)
                }
                TAG_LAST_SEQ => {
                    e.last_sequence = Some(d.varint64().ok_or_else(|| bad("last seq"))?)
                }
                TAG_FAMILY_ADD => {
                    let f = (|| {
                        Some(FamilyDescriptor {
                            id: d.varint32()?,
                            name: std::str::from_utf8(d.length_prefixed()?).ok()?.to_string(),
                            options: d.length_prefixed()?.to_vec(),
                        })
                    })()
                    .filter(|f| f.id != 0)
                    .ok_or_else(|| bad("family"))?;
                    e.families_added.push(f);
                }
                TAG_FAMILY_DROP => {
                    let id = d
                        .varint32()
                        .filter(|id| *id != 0)
                        .ok_or_else(|| bad("dropped family"))?;
                    e.families_dropped.push(id);
                }
                TAG_NEXT_FAMILY => {
                    e.next_family_id = Some(d.varint32().ok_or_else(|| bad("next family"))?)
                }
                TAG_FAMILY => {
                    // Family 0's fields come before the first section: it has none.
                    let id = d
                        .varint32()
                        .filter(|id| *id != 0)
                        .ok_or_else(|| bad("family section"))?;
                    e.family_edits
                        .extend(section.replace((id, VersionEdit::default())));
                }
                t => {
                    let tree = match section.as_mut() {
                        Some((_, s)) => s,
                        None => &mut e,
                    };
                    decode_tree_field(t, &mut d, tree)?;
                }
            }
        }
        e.family_edits.extend(section);
        Ok(e)
    }
}

fn bad(what: &str) -> Error {
    Error::corruption(format!("manifest record: malformed {what}"))
}

/// Decodes the field of tag `tag` (one a family section may hold) into `e`.
fn decode_tree_field(tag: u64, d: &mut Decoder<'_>, e: &mut VersionEdit) -> Result<()> {
    match tag {
        TAG_LOG_NUMBER => e.log_number = Some(d.varint64().ok_or_else(|| bad("log number"))?),
        TAG_NUM_LEVELS => e.num_levels = Some(d.varint64().ok_or_else(|| bad("num levels"))?),
        TAG_DELETED => {
            let level = d.varint32().ok_or_else(|| bad("deleted level"))?;
            let id = d.varint64().ok_or_else(|| bad("deleted id"))?;
            e.deleted.push((level, id));
        }
        TAG_ADDED => {
            let f = (|| Some((d.varint32()?, get_file(d)?)))().ok_or_else(|| bad("added table"))?;
            e.added.push(f);
        }
        TAG_ADDED_TO_RUN => {
            let f = (|| Some((d.varint32()?, d.varint64()?, get_file(d)?)))()
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
            let p = (|| Some((d.varint64()?, d.varint64()?)))().ok_or_else(|| bad("wal pin"))?;
            e.wal_pins.push(p);
        }
        TAG_STYLE => {
            let v = d.varint64().ok_or_else(|| bad("compaction style"))?;
            e.style = Some(CompactionStyle::from_u64(v).ok_or_else(|| bad("compaction style"))?);
        }
        t => {
            return Err(Error::corruption(format!(
                "manifest record: unknown tag {t}"
            )))
        }
    }
    Ok(())
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
            ..Default::default()
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

#[cfg(test)]
mod family_tests {
    use super::*;

    fn table(id: u64) -> FileMeta {
        FileMeta::for_test(id, 100, b"a", crate::tier::Tier::Fast)
    }

    /// A record of every kind of field: database fields, family 0's tree, two sections.
    fn full() -> VersionEdit {
        VersionEdit {
            format: Some(MANIFEST_FORMAT_V3.into()),
            log_number: Some(4),
            next_file_number: Some(20),
            last_sequence: Some(99),
            added: vec![(0, table(10))],
            families_added: vec![FamilyDescriptor {
                id: 2,
                name: "meta".into(),
                options: br#"{"num_levels":3}"#.to_vec(),
            }],
            families_dropped: vec![1],
            next_family_id: Some(3),
            family_edits: vec![
                (
                    2,
                    VersionEdit {
                        log_number: Some(5),
                        num_levels: Some(3),
                        style: Some(CompactionStyle::SplitForest),
                        added: vec![(1, table(11))],
                        wal_pins: vec![(11, 5)],
                        ..Default::default()
                    },
                ),
                (
                    7,
                    VersionEdit {
                        deleted: vec![(2, 9)],
                        ..Default::default()
                    },
                ),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn family_fields_round_trip_and_truncation_never_decodes_to_the_same_edit() {
        let e = full();
        let b = e.encode();
        assert_eq!(VersionEdit::decode(&b).unwrap(), e);
        for cut in 1..b.len() {
            if let Ok(d) = VersionEdit::decode(&b[..cut]) {
                assert_ne!(d, e, "prefix of {cut} bytes");
            }
        }
    }

    /// A record without family fields keeps the v1/v2 bytes: sections add nothing to it.
    #[test]
    fn a_record_without_families_is_encoded_as_before() {
        let e = VersionEdit {
            log_number: Some(3),
            next_file_number: Some(9),
            last_sequence: Some(100),
            deleted: vec![(1, 4)],
            ..Default::default()
        };
        assert_eq!(e.encode(), [2, 3, 3, 9, 4, 100, 5, 1, 4]);
        assert!(!e.has_family_fields());
    }

    /// The worked example of docs/format.md 5.1.
    #[test]
    fn the_documented_family_record() {
        let (_, e) = super::super::family::Families::default()
            .create_edit("meta", b"{}".to_vec(), 3, CompactionStyle::Leveled, 12)
            .unwrap();
        let b = e.encode();
        assert_eq!(
            b,
            [
                0x0d, 0x01, 0x04, b'm', b'e', b't', b'a', 0x02, b'{', b'}', 0x0f, 0x02, 0x0c, 0x01,
                0x02, 0x0c, 0x07, 0x03, 0x08, 0x00
            ]
        );
    }

    #[test]
    fn misplaced_family_fields_are_corruption() {
        // (record bytes, what it breaks)
        let cases: &[(&[u8], &str)] = &[
            (
                &[12, 0],
                "a section for family 0, whose fields precede every section",
            ),
            (&[12, 1, 3, 5], "next_file_number inside a section"),
            (&[12, 1, 4, 5], "last_sequence inside a section"),
            (&[12, 1, 1, 1, b'x'], "format inside a section"),
            (&[12, 1, 15, 2], "next family id inside a section"),
            (&[12, 1, 14, 2], "a drop inside a section"),
            (&[12, 1, 13, 2, 1, b'a', 0], "a creation inside a section"),
            (&[13, 0, 1, b'a', 0], "creating family 0"),
            (&[14, 0], "dropping family 0"),
            (&[13, 1, 1, 0xff, 0], "a name that is not UTF-8"),
            (&[12], "a section without an id"),
            (&[12, 1, 16], "an unknown tag inside a section"),
        ];
        for (bytes, what) in cases {
            let err = VersionEdit::decode(bytes).expect_err(what);
            assert!(err.is_corruption(), "{what}: {err}");
        }
        // The same fields in their places decode.
        let ok = VersionEdit::decode(&[13, 1, 1, b'a', 0, 15, 2, 12, 1, 7, 3]).unwrap();
        assert_eq!(ok.families_added[0].name, "a");
        assert_eq!(
            ok.family_edits,
            vec![(
                1,
                VersionEdit {
                    num_levels: Some(3),
                    ..Default::default()
                }
            )]
        );
    }
}
