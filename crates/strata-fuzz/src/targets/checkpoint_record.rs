//! Target `checkpoint_record`: `checkpoint::CheckpointRecord::decode` and
//! `checkpoint::ParentLink::decode`, the registry records and `PARENT` files of checkpoints
//! (`docs/format.md` §17), which garbage collection trusts to keep tables.
//!
//! Flag byte: bit 0 = decode as a `PARENT` link instead of a record. Properties: a decoded
//! document has format 1, and re-encoding it decodes to the same value.

use strata::checkpoint::{
    CheckpointKind, CheckpointRecord, ParentLink, CHECKPOINT_FORMAT,
};

use crate::util::split_flag;

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    if flag & 1 == 1 {
        if let Ok(l) = ParentLink::decode(rest, "PARENT") {
            assert_eq!(l.format, CHECKPOINT_FORMAT);
            assert_eq!(ParentLink::decode(&l.encode(), "again").expect("round trip"), l);
        }
    } else if let Ok(r) = CheckpointRecord::decode(rest, "record") {
        assert_eq!(r.format, CHECKPOINT_FORMAT);
        assert_eq!(CheckpointRecord::decode(&r.encode(), "again").expect("round trip"), r);
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let r = CheckpointRecord {
        format: CHECKPOINT_FORMAT,
        id: 1_795_902_562_717_935_512,
        kind: CheckpointKind::Clone,
        complete: true,
        created_unix_ms: 1_795_902_562_717,
        expires_unix_ms: Some(1_795_902_662_717),
        sequence: 123_456,
        path: "/backups/ck".into(),
        tables: vec![7, 9, 1 << 40],
        expires_after_ms: None,
    };
    let l = ParentLink {
        format: CHECKPOINT_FORMAT,
        capacity_url: "s3://bucket/db1".into(),
        checkpoint_id: r.id,
        tables: vec![7, 9],
    };
    vec![
        [&[0u8][..], &r.encode()].concat(),
        [&[1u8][..], &l.encode()].concat(),
    ]
}
