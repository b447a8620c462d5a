//! Target `mashmeta`: `sst::index::MashMeta::decode`, the succinct-trie index of capacity tables
//! (`docs/format.md` §6.12).
//!
//! Flag byte: bit 0 = treat the input as a list of keys (split on `\n`), build a trie from them
//! and check it (exact membership, block numbers); otherwise decode the bytes as a block.
//! Properties of a decoded block: queries stay in bounds (every block number returned is below
//! `num_blocks`), the listed keys are strictly increasing, each is found as its own rank, and
//! re-encoding them through the real builder gives a block that decodes to the same keys.

use strata::sst::format::BlockHandle;
use strata::sst::index::trie::{MashMetaBuilder, Probe};
use strata::sst::index::MashMeta;

use crate::util::split_flag;

fn build(keys: &[Vec<u8>]) -> MashMeta {
    let mut b = MashMetaBuilder::new();
    for (i, k) in keys.iter().enumerate() {
        b.add(k);
        if i % 3 == 2 {
            b.finish_block(BlockHandle { offset: i as u64 * 100, size: 90 });
        }
    }
    b.finish_block(BlockHandle { offset: 1 << 20, size: 90 });
    MashMeta::decode(&b.finish()).expect("a built trie decodes")
}

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    if flag & 1 == 1 {
        let mut keys: Vec<Vec<u8>> = rest.split(|b| *b == b'\n').map(|k| k.to_vec()).collect();
        keys.sort();
        keys.dedup();
        let m = build(&keys);
        assert_eq!(m.keys(), keys, "keys round-trip");
        for (r, k) in keys.iter().enumerate() {
            assert_eq!(m.probe(k), Probe::Found(r));
            assert_eq!(m.find_block(k), Some(m.block_of_key(r)));
            let mut longer = k.clone();
            longer.push(0);
            if keys.binary_search(&longer).is_err() {
                assert_eq!(m.probe(&longer), Probe::Absent(r + 1));
            }
        }
        return;
    }
    let Ok(m) = MashMeta::decode(rest) else {
        return;
    };
    let keys = m.keys();
    assert_eq!(keys.len(), m.num_keys());
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys strictly increase");
    for (r, k) in keys.iter().enumerate() {
        assert_eq!(m.probe(k), Probe::Found(r), "key {k:?}");
        assert!(m.block_of_key(r) < m.num_blocks());
        assert!(m.seek_block(k).is_some_and(|b| b < m.num_blocks()));
    }
    assert_eq!(build(&keys).keys(), keys, "re-encoding keeps the keys");
}

pub fn seeds() -> Vec<Vec<u8>> {
    let keys = ["hello", "hunda", "hundred", "hunk", "huntee", "hunter"];
    let mut b = MashMetaBuilder::new();
    for (i, k) in keys.iter().enumerate() {
        b.add(k.as_bytes());
        if i % 2 == 1 {
            b.finish_block(BlockHandle { offset: i as u64 * 50, size: 40 });
        }
    }
    vec![
        [&[0u8][..], &b.finish()].concat(),
        [&[1u8][..], keys.join("\n").as_bytes()].concat(),
        [&[1u8][..], b"a\nab\nabc\n\n\xff\xff"].concat(),
    ]
}
