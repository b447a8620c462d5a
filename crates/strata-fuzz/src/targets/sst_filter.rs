//! Target `sst_filter`: the table bloom filter (`BloomFilter::new` and its probe).
//!
//! Flag byte: bit 0 = build mode. Raw mode: any bytes the decoder accepts can be probed without
//! panicking. Build mode: the rest is split at 0xff into keys, the second byte sets the bits
//! per key; the real builder's filter must decode and contain every key (no false negatives).

use bytes::Bytes;
use strata::sst::filter::{BloomFilter, FilterBuilder};

use crate::util::split_flag;

pub fn run(data: &[u8]) {
    let (flag, rest) = split_flag(data);
    if flag & 1 == 0 {
        if let Some(f) = BloomFilter::new(Bytes::copy_from_slice(rest)) {
            assert_eq!(f.size(), rest.len());
            for k in rest.chunks(7).take(64) {
                let _ = f.may_contain(k);
            }
            let _ = f.may_contain_hash(u64::MAX);
        }
        return;
    }
    let (bits, keys) = split_flag(rest);
    let bits_per_key = 1.0 + (bits % 64) as f64 / 2.0;
    let keys: Vec<&[u8]> = keys.split(|&b| b == 0xff).collect();
    let mut b = FilterBuilder::new(bits_per_key);
    for k in &keys {
        b.add_key(k);
    }
    let f = BloomFilter::new(Bytes::from(b.finish())).expect("a built filter decodes");
    for k in &keys {
        assert!(f.may_contain(k), "false negative for {k:?}");
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut b = FilterBuilder::new(10.0);
    for i in 0..50u32 {
        b.add_key(&i.to_be_bytes());
    }
    let mut raw = vec![0u8];
    raw.extend_from_slice(&b.finish());
    let mut build = vec![1u8, 20];
    build.extend_from_slice(b"alpha\xffbeta\xffgamma\xff\xffdelta");
    vec![raw, build]
}
