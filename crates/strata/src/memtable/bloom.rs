//! [`MemBloom`]: a whole-key Bloom filter over a memtable's user keys (RocksDB's
//! `memtable_whole_key_filtering`), so a point lookup of a key the memtable does not hold skips
//! the skiplist search, which is the largest cost of a read while writes fill the memtable.
//!
//! Cache-blocked: a key's probes all fall in one 512-bit block, so a check costs one cache
//! miss. Bits are only ever set, with atomic ORs (skipped for a word whose bits are already
//! set), before the key is inserted into the skiplist; a reader that can see the entry (through
//! the published sequence number, an acquire/release pair) therefore sees its bits: no false
//! negatives. Keys come as their 64-bit hash (the memtable hashes each key once for this
//! filter and its point index). Depends on nothing in the engine but the memtable's
//! `prefetch` hint.

use std::sync::atomic::{AtomicU64, Ordering};

const WORDS_PER_BLOCK: usize = 8;
const PROBES: u32 = 6;

/// A whole-key Bloom filter over a memtable's user keys; see the module docs.
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

    /// The block's first word and the probe bits' source for a key of hash `h`.
    fn locate(&self, h: u64) -> (usize, u64) {
        let block = ((h >> 32) * self.blocks) >> 32;
        (
            block as usize * WORDS_PER_BLOCK,
            h.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        )
    }

    /// Adds the key of hash `h` (its 64-bit XXH3, the memtable's point hash: writers and
    /// readers must use the same).
    ///
    /// One atomic OR per word of the block that gains a bit, none for a word whose bits are
    /// all set already (a key written again). (A reader that sees the entry sees the bits even
    /// when this skipped them: the load that found them set happens before the entry's
    /// publication, so by read-read coherence the reader's load cannot return older values.)
    pub fn add(&self, h: u64) {
        let (base, bits) = self.locate(h);
        let mut masks = [0u64; WORDS_PER_BLOCK];
        for i in 0..PROBES {
            let bit = (bits >> (i * 9)) & 511;
            masks[(bit / 64) as usize] |= 1 << (bit % 64);
        }
        for (word, mask) in self.words[base..base + WORDS_PER_BLOCK].iter().zip(masks) {
            if mask != 0 && word.load(Ordering::Relaxed) & mask != mask {
                word.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// Starts loading the block of the key of hash `h` (a hint, before [`MemBloom::add`]s of
    /// several keys, whose cache misses then overlap).
    pub fn prefetch(&self, h: u64) {
        let (base, _) = self.locate(h);
        super::prefetch::prefetch(std::ptr::from_ref(&self.words[base]));
    }

    /// False only if the key of hash `h` was never added.
    pub fn may_contain(&self, h: u64) -> bool {
        let (base, bits) = self.locate(h);
        (0..PROBES).all(|i| {
            let bit = (bits >> (i * 9)) & 511;
            self.words[base + (bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(key: String) -> u64 {
        xxhash_rust::xxh3::xxh3_64(key.as_bytes())
    }

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let f = MemBloom::new(64 << 10);
        for i in 0..20_000u32 {
            f.add(h(format!("key{i}")));
        }
        for i in 0..20_000u32 {
            assert!(f.may_contain(h(format!("key{i}"))), "key{i}");
        }
        let fp = (0..20_000u32)
            .filter(|i| f.may_contain(h(format!("other{i}"))))
            .count();
        // ~26 bits per key, 6 probes in a 512-bit block: well under 1%.
        assert!(fp < 200, "{fp} false positives of 20000");
        let tiny = MemBloom::new(0);
        tiny.add(h("x".into()));
        assert!(tiny.may_contain(h("x".into())));
    }
}
