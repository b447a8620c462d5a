//! A fast hasher for short-lived in-memory maps keyed by client bytes (a segment's pending
//! writes, the command index): one-shot XXH3 with a per-process random seed.
//!
//! Invariant: the seed is random per process, so a client cannot precompute colliding keys
//! offline. This is not a cryptographic PRF; maps using it are bounded by the request limits.
//! Depends on nothing else in the crate.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use xxhash_rust::xxh3::xxh3_64_with_seed;

fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64))
}

/// Builds [`FastHasher`]s.
#[derive(Clone, Copy, Default)]
pub struct FastHash;

impl BuildHasher for FastHash {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(seed())
    }
}

/// Hashes each written chunk with XXH3 seeded by the running state.
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0 ^ i)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn works_as_a_map_hasher() {
        let mut m: HashMap<Vec<u8>, u32, FastHash> = HashMap::default();
        for i in 0..1000u32 {
            m.insert(format!("key:{i}").into_bytes(), i);
        }
        assert_eq!(m.get(&b"key:77"[..]), Some(&77));
        assert_eq!(m.len(), 1000);
    }
}
