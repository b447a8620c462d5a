//! [`MemBloom`]: a whole-key Bloom filter over a memtable's user keys (RocksDB's
//! `memtable_whole_key_filtering`), so a point lookup of a key the memtable does not hold skips
//! the skiplist search, which is the largest cost of a read while writes fill the memtable.
//!
//! Cache-blocked: a key's probes all fall in one 512-bit block, so a check costs one cache
//! miss. Bits are only ever set, with atomic ORs, before the key is inserted into the skiplist;
//! a reader that can see the entry (through the published sequence number, an acquire/release
//! pair) therefore sees its bits: no false negatives. Depends on nothing in the engine.

use std::sync::atomic::{AtomicU64, Ordering};

const WORDS_PER_BLOCK: usize = 8;
const PROBES: u32 = 6;

pub struct MemBloom {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

impl MemBloom {
    /// A filter of about `bytes` bytes (at least one 64-byte block).
    pub fn new(bytes: usize) -> Self {
        let blocks = (bytes / (WORDS_PER_BLOCK * 8)).max(1);
        MemBloom {
            words: (0..blocks * WORDS_PER_BLOCK)
                .map(|_| AtomicU64::new(0))
                .collect(),
            blocks: blocks as u64,
        }
    }

    /// The block's first word and the probe bits' source for `key`.
    fn locate(&self, key: &[u8]) -> (usize, u64) {
        let h = xxhash_rust::xxh3::xxh3_64(key);
        let block = ((h >> 32) * self.blocks) >> 32;
        (
            block as usize * WORDS_PER_BLOCK,
            h.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        )
    }

    pub fn add(&self, key: &[u8]) {
        let (base, bits) = self.locate(key);
        for i in 0..PROBES {
            let bit = (bits >> (i * 9)) & 511;
            self.words[base + (bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
    }

    /// False only if `key` was never added.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        let (base, bits) = self.locate(key);
        (0..PROBES).all(|i| {
            let bit = (bits >> (i * 9)) & 511;
            self.words[base + (bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let f = MemBloom::new(64 << 10);
        for i in 0..20_000u32 {
            f.add(format!("key{i}").as_bytes());
        }
        for i in 0..20_000u32 {
            assert!(f.may_contain(format!("key{i}").as_bytes()), "key{i}");
        }
        let fp = (0..20_000u32)
            .filter(|i| f.may_contain(format!("other{i}").as_bytes()))
            .count();
        // ~26 bits per key, 6 probes in a 512-bit block: well under 1%.
        assert!(fp < 200, "{fp} false positives of 20000");
        let tiny = MemBloom::new(0);
        tiny.add(b"x");
        assert!(tiny.may_contain(b"x"));
    }
}
