//! Target `ralt_block`: `decode_block` of a RALT run (`u32 len | u32 count | records | crc`),
//! which decodes each access record (`Record::decode`).
//!
//! Flag byte: bit 0 = reseal the block checksum. Properties: decoded records have strictly
//! increasing keys and finite non-negative scores, and re-encoding them with the real encoders
//! decodes to the same records.

use strata::tier::hot::ralt::codec::{decode_block, encode_block, Record};

use crate::util::{reseal_trailing_crc, split_flag};

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut d = rest.to_vec();
    reseal_trailing_crc(flag, &mut d);
    let Ok(recs) = decode_block(&d) else {
        return;
    };
    assert!(recs.windows(2).all(|w| w[0].key < w[1].key), "keys out of order");
    assert!(recs.iter().all(|r| r.score.is_finite() && r.score >= 0.0));
    let mut payload = Vec::new();
    for r in &recs {
        r.encode_into(&mut payload);
    }
    let again = decode_block(&encode_block(&payload, recs.len() as u32)).expect("re-encoded");
    assert_eq!(again, recs, "RALT records round trip");
}

fn record(key: &[u8], score: f64, flags: u8) -> Record {
    Record {
        key: key.to_vec(),
        value_size: 100,
        tick: 7,
        score,
        counter: 2,
        flags,
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let recs = [
        record(b"a", 1.0, 0),
        record(b"b", 0.5, 1),
        record(&[0xff; 200], 3.25, 7),
    ];
    let mut payload = Vec::new();
    for r in &recs {
        r.encode_into(&mut payload);
    }
    vec![
        [&[1u8][..], &encode_block(&payload, 3)].concat(),
        [&[0u8][..], &encode_block(&[], 0)].concat(),
    ]
}
