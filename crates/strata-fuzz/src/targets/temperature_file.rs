//! Target `temperature_file`: `tier::temperature::file::decode`, LogStore's `TEMPERATURE` side
//! file (`docs/format.md` §15).
//!
//! Flag byte: bit 0 = reseal the trailing checksum. Properties: a decoded file has exactly
//! `16 + 24 × count` bytes (checked independently of the decoder), every value is finite with
//! `0 ≤ own ≤ temperature`, and it round-trips through the real encoder.

use strata::tier::temperature::file::{decode, encode, Entry};

use crate::util::{reseal_trailing_crc, split_flag};

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    let mut d = rest.to_vec();
    reseal_trailing_crc(flag, &mut d);
    let Ok(m) = decode(&d) else {
        return;
    };
    let count = u32::from_le_bytes([d[8], d[9], d[10], d[11]]) as usize;
    assert_eq!(d.len(), 16 + 24 * count, "length matches the count");
    assert!(m.len() <= count, "duplicate ids collapse, nothing is invented");
    for (t, own) in m.values() {
        assert!(t.is_finite() && own.is_finite() && 0.0 <= *own && own <= t);
    }
    let entries: Vec<Entry> = m.iter().map(|(id, (t, own))| (*id, *t, *own)).collect();
    let back = decode(&encode(&entries)).expect("an encoded file decodes");
    // Zero temperatures are not stored.
    let live: std::collections::HashMap<u64, (f64, f64)> =
        m.into_iter().filter(|(_, (t, _))| *t > 0.0).collect();
    assert_eq!(back, live, "round trip");
}

pub fn seeds() -> Vec<Vec<u8>> {
    let entries: Vec<Entry> = vec![(7, 12.5, 2.0), (1 << 40, 3.0, 3.0), (9, 1e-3, 0.0)];
    vec![
        [&[1u8][..], &encode(&entries)].concat(),
        [&[0u8][..], &encode(&[])].concat(),
    ]
}
