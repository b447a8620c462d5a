//! Target `version_edit`: `VersionEdit::decode`, one manifest record.
//!
//! Property: a decoded edit encodes to bytes that decode to the same edit, and that encoding is
//! a fixed point (encode(decode(encode(e))) == encode(e)).

use strata::tier::Tier;
use strata::version::{FamilyDescriptor, FileMeta, VersionEdit};

use crate::util::{log_records, real_db};

pub fn run(data: &[u8]) {
    if let Ok(e) = VersionEdit::decode(data) {
        let enc = e.encode();
        let back = VersionEdit::decode(&enc).expect("an encoded edit decodes");
        assert_eq!(back, e, "edit round trip");
        assert_eq!(back.encode(), enc, "encoding is not a fixed point");
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = real_db()
        .manifests
        .iter()
        .flat_map(|m| log_records(m))
        .take(32)
        .collect();
    let e = VersionEdit {
        format: Some("strata.manifest.v1".into()),
        num_levels: Some(7),
        log_number: Some(3),
        next_file_number: Some(1 << 40),
        last_sequence: Some(u64::MAX >> 8),
        deleted: vec![(0, 1), (6, 99)],
        added: vec![(
            6,
            FileMeta {
                id: 9,
                size: 4096,
                smallest: b"a".to_vec(),
                largest: vec![0xff; 140],
                largest_exclusive: true,
                smallest_seq: 1,
                largest_seq: 500,
                num_entries: 10,
                num_deletions: 2,
                num_range_deletions: 1,
                tier: Tier::Capacity,
            },
        )],
        style: Some(strata::CompactionStyle::SplitForest),
        wal_pins: vec![(10, 3)],
        added_to_run: vec![(
            5,
            77,
            FileMeta {
                id: 10,
                size: 100,
                smallest: b"b".to_vec(),
                largest: b"c".to_vec(),
                largest_exclusive: false,
                smallest_seq: 2,
                largest_seq: 3,
                num_entries: 2,
                num_deletions: 0,
                num_range_deletions: 0,
                tier: Tier::Fast,
            },
        )],
        run_cuts: vec![(5, 70, b"bb".to_vec(), 71)],
        ..Default::default()
    };
    out.push(e.encode());
    out.push(family_record());
    out
}

/// A v3 record with every column-family field: a creation, a drop, the next id and sections.
pub fn family_record() -> Vec<u8> {
    let section = |log: u64, table: u64| VersionEdit {
        log_number: Some(log),
        num_levels: Some(4),
        style: Some(strata::CompactionStyle::Leveled),
        added: vec![(
            1,
            FileMeta {
                id: table,
                size: 100,
                smallest: b"f".to_vec(),
                largest: b"g".to_vec(),
                largest_exclusive: false,
                smallest_seq: 4,
                largest_seq: 5,
                num_entries: 2,
                num_deletions: 0,
                num_range_deletions: 0,
                tier: Tier::Fast,
            },
        )],
        ..Default::default()
    };
    VersionEdit {
        format: Some(strata::version::MANIFEST_FORMAT_V3.into()),
        num_levels: Some(7),
        next_file_number: Some(40),
        families_added: vec![FamilyDescriptor {
            id: 2,
            name: "meta".into(),
            options: b"{}".to_vec(),
        }],
        families_dropped: vec![1],
        next_family_id: Some(3),
        family_edits: vec![(2, section(6, 31)), (3, section(7, 32))],
        ..Default::default()
    }
    .encode()
}
