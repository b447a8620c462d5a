//! Target `key_list`: `strata::wal::keylist::decode`, an extended-WAL key-list record.
//!
//! Properties: decoding untrusted bytes returns lists or `Corruption`, never panics or
//! allocates past the input; a decoded record encodes to bytes that decode to the same lists,
//! and that encoding is a fixed point; `decode_tables` (recovery keeps only the lost tables'
//! lists) accepts exactly what `decode` accepts and returns its lists filtered.

use strata::range_del::RangeTombstone;
use strata::wal::keylist::{decode, decode_tables, encode, KeyList, KeyListEntry};

pub fn run(data: &[u8]) {
    let some = decode_tables(data, |t| t % 2 == 0);
    match decode(data) {
        Ok(lists) => {
            let kept: Vec<KeyList> = lists.iter().filter(|l| l.table % 2 == 0).cloned().collect();
            assert_eq!(some.expect("decode_tables accepts what decode accepts"), kept);
            let enc = encode(&lists);
            let back = decode(&enc).expect("an encoded key list decodes");
            assert_eq!(back, lists, "key-list round trip");
            assert_eq!(encode(&back), enc, "encoding is not a fixed point");
        }
        Err(e) => {
            assert!(e.is_corruption(), "key-list damage must be corruption: {e}");
            let e = some.expect_err("decode_tables rejects what decode rejects");
            assert!(e.is_corruption(), "key-list damage must be corruption: {e}");
        }
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut ikey = b"user-key".to_vec();
    ikey.extend_from_slice(&((77u64 << 8) | 1).to_le_bytes());
    vec![
        encode(&[KeyList {
            table: 12,
            entries: vec![
                KeyListEntry::Ref(1_000_000),
                KeyListEntry::Ref(999_990),
                KeyListEntry::inline(ikey, b"value".to_vec()),
                KeyListEntry::Ref(1_000_001),
            ],
            tombstones: vec![RangeTombstone::new("a", "c", 5)],
            checksum: 0x1234_5678,
        }]),
        encode(&[]),
    ]
}
