//! Target `sst_properties`: `TableProperties::decode` (a block of name -> varint entries).
//!
//! Property: decoded properties round-trip through the real encoder.

use bytes::Bytes;
use strata::sst::TableProperties;

pub fn run(data: &[u8]) {
    if let Ok(p) = TableProperties::decode(Bytes::copy_from_slice(data)) {
        let back = TableProperties::decode(Bytes::from(p.encode())).expect("encoded decodes");
        assert_eq!(back, p, "properties round trip");
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let p = TableProperties {
        num_entries: 1000,
        num_deletions: 3,
        num_range_deletions: 1,
        num_data_blocks: 7,
        raw_key_size: 1 << 20,
        raw_value_size: u64::MAX,
        data_size: 12345,
        index_size: 99,
        filter_size: 1250,
        index_type: 1,
        compression: 2,
        smallest_seq: 1,
        largest_seq: 1 << 56,
    };
    vec![p.encode(), TableProperties::default().encode()]
}
