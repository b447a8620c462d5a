//! The data-block hash index: a bucket array at the end of a data block that maps a user key's
//! hash to the restart interval holding it, so a point lookup reads one bucket byte and one
//! restart offset instead of binary-searching the restart keys (RocksDB's
//! `kDataBlockBinaryAndHash`). Layout and rules: docs/format.md §6.3.
//!
//! A bucket holds a restart index (0..=253), [`COLLISION`] (keys of different restart intervals
//! fell in it: search the restart keys as usual) or [`EMPTY`] (no key of the block hashes there:
//! the key is not in the block). A key that appears in several restart intervals (many versions)
//! maps to the first, and a lookup scans forward from it, so it finds the first version at or
//! after its snapshot as a binary search would.
//!
//! Pure encoding and probing; depends on nothing but the block layout's constants. Never on
//! tables, caches or the database.

/// Most restart points a hash-indexed block can have (indexes 0..=253 fit in a bucket byte).
pub const MAX_RESTARTS: usize = 254;
/// Bucket value: keys of different restart intervals hash here.
pub const COLLISION: u8 = 254;
/// Bucket value: no key of the block hashes here.
pub const EMPTY: u8 = 255;
/// The most buckets a block can have (their count is stored as a `u16`).
const MAX_BUCKETS: usize = u16::MAX as usize;
/// The smallest keys-per-bucket ratio accepted (20 bucket bytes per key); below it a block's
/// buckets would dwarf its entries.
pub const MIN_UTIL_RATIO: f64 = 0.05;

/// The bucket of `n` (≥ 1) that a user key with 64-bit hash `h` ([`crate::sst::filter::key_hash`],
/// the hash the table's bloom filter uses) falls in: a multiply-shift of the hash's high half.
#[inline]
pub fn bucket_of(h: u64, n: usize) -> usize {
    (((h >> 32) * n as u64) >> 32) as usize
}

/// What a block's hash index says about a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The key is not in the block.
    Absent,
    /// If the key is in the block, its first version is in this restart interval or a later one.
    Restart(usize),
    /// The bucket is shared with other restart intervals' keys: search the restart keys.
    Unknown,
}

/// Reads the bucket of hash `h`; a bucket naming a restart point the block does not have
/// (`num_restarts` or more) is `None`, corruption.
#[inline]
pub fn probe(buckets: &[u8], h: u64, num_restarts: usize) -> Option<Probe> {
    let b = *buckets.get(bucket_of(h, buckets.len()))?;
    match b {
        EMPTY => Some(Probe::Absent),
        COLLISION => Some(Probe::Unknown),
        r if (r as usize) < num_restarts => Some(Probe::Restart(r as usize)),
        _ => None,
    }
}

/// Collects a block's distinct user keys (as hashes, with their restart interval) while the block
/// is built, and writes the bucket array when it is finished.
#[derive(Debug)]
pub struct HashIndexBuilder {
    /// Keys per bucket; 0.75 gives about one bucket byte per 0.75 keys.
    util_ratio: f64,
    entries: Vec<(u64, u8)>,
}

impl HashIndexBuilder {
    /// `util_ratio` in [`MIN_UTIL_RATIO`], 1] (clamped into it).
    pub fn new(util_ratio: f64) -> Self {
        HashIndexBuilder {
            util_ratio: util_ratio.clamp(MIN_UTIL_RATIO, 1.0),
            entries: Vec::new(),
        }
    }

    /// Records a user key's hash at restart interval `restart`; the caller adds each user key
    /// once, at its first entry in the block. Keys past [`MAX_RESTARTS`] make the block go
    /// without a hash index ([`HashIndexBuilder::finish`] returns `None`).
    pub fn add(&mut self, h: u64, restart: usize) {
        self.entries.push((h, restart.min(MAX_RESTARTS) as u8));
    }

    fn buckets(&self) -> usize {
        ((self.entries.len() as f64 / self.util_ratio).ceil() as usize).clamp(1, MAX_BUCKETS)
    }

    /// Bytes [`HashIndexBuilder::finish`] would append now (for the block's size estimate).
    pub fn estimated_size(&self) -> usize {
        if self.entries.is_empty() {
            0
        } else {
            self.buckets() + 2
        }
    }

    /// The bucket array, or `None` when the block should have none (no keys, or a restart
    /// index that does not fit a bucket byte). Resets the builder.
    pub fn finish(&mut self, num_restarts: usize) -> Option<Vec<u8>> {
        let n = self.buckets();
        let entries = std::mem::take(&mut self.entries);
        if entries.is_empty() || num_restarts > MAX_RESTARTS {
            return None;
        }
        let mut buckets = vec![EMPTY; n];
        for (h, r) in entries {
            let b = &mut buckets[bucket_of(h, n)];
            // Keys of one restart interval can share a bucket: a lookup of either scans that
            // interval. Only keys of different intervals make it a collision.
            *b = match *b {
                EMPTY => r,
                same if same == r => r,
                _ => COLLISION,
            };
        }
        Some(buckets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_restarts_collisions_and_gaps() {
        let mut b = HashIndexBuilder::new(1.0);
        let (lo, hi) = (0u64, 1u64 << 63);
        b.add(lo, 0);
        b.add(lo | 1, 0); // same bucket, same interval: still a restart
        b.add(hi, 1);
        b.add(hi | 1, 2); // same bucket, another interval: a collision
                          // Four keys at ratio 1.0: four buckets; high halves 0 and 2^31 fall in 0 and 2.
        let buckets = b.finish(3).unwrap();
        assert_eq!(buckets, vec![0, EMPTY, COLLISION, EMPTY]);
        assert_eq!(probe(&buckets, lo, 3), Some(Probe::Restart(0)));
        assert_eq!(probe(&buckets, hi, 3), Some(Probe::Unknown));
        assert_eq!(probe(&buckets, 1u64 << 62, 3), Some(Probe::Absent));
        // A bucket naming a restart the block lacks is corruption.
        assert_eq!(probe(&buckets, lo, 0), None);
        // The builder was reset.
        assert_eq!(b.finish(3), None);
    }

    #[test]
    fn too_many_restarts_mean_no_index() {
        let mut b = HashIndexBuilder::new(0.75);
        b.add(7, 300);
        assert_eq!(b.finish(301), None);
        b.add(7, 3);
        assert_eq!(b.estimated_size(), 2 + 2);
        assert!(b.finish(4).is_some());
    }

    #[test]
    fn bucket_of_spreads_over_all_buckets() {
        for n in [1usize, 2, 3, 7, 160, 65_535] {
            assert_eq!(bucket_of(0, n), 0);
            assert_eq!(bucket_of(u64::MAX, n), n - 1);
        }
    }

    /// Blocks built with a hash index answer point seeks as the binary search does: the same
    /// entry whenever that entry is a version of the target's user key, and otherwise either
    /// nothing or another key. Keys with many versions span restart intervals; targets are
    /// present keys at random snapshots, and absent keys between and around them.
    #[test]
    fn seek_for_get_agrees_with_the_binary_search() {
        use bytes::Bytes;
        use strata_test_support::{seed, Rng};

        use crate::sst::block::{Block, BlockBuilder, GetSeek};
        use crate::sst::filter::key_hash;
        use crate::types::{self, compare_internal};

        let s = seed("seek_for_get_agrees_with_the_binary_search");
        let mut rng = Rng::new(s);
        let (mut hashed, mut answered_absent) = (0, 0);
        for round in 0..400 {
            let interval = 1 + rng.index(16);
            let ratio = [0.25, 0.75, 1.0][rng.index(3)];
            let mut b = BlockBuilder::with_hash_index(interval, ratio);
            let mut entries: Vec<Vec<u8>> = Vec::new();
            let mut user = rng.below(50);
            for _ in 0..rng.index(300) {
                user += 1 + rng.below(3);
                for v in 0..[1, 1, 2, 20][rng.index(4)] {
                    let uk = format!("u{user:06}").into_bytes();
                    let ik = types::internal_key(&uk, 1000 - 10 * v, 1);
                    b.add_hashed(&ik, &v.to_le_bytes(), key_hash(&uk));
                    entries.push(ik);
                }
            }
            let block = Block::new(Bytes::from(b.finish())).unwrap();
            hashed += block.has_hash_index() as usize;
            for _ in 0..100 {
                let uk = format!("u{:06}", rng.below(user + 5)).into_bytes();
                let target = types::internal_key(&uk, rng.below(1100), 1);
                let h = key_hash(&uk);
                let mut want_key = Vec::new();
                let start = block
                    .seek_start(&target, compare_internal, 0, block.num_restarts())
                    .unwrap();
                let want = block
                    .seek_from_restart(start, &target, compare_internal, &mut want_key)
                    .unwrap();
                let mut got_key = Vec::new();
                let got = block.seek_for_get(&target, &uk, h, &mut got_key).unwrap();
                let ctx =
                    format!("seed {s}, round {round}, interval {interval}, target {target:?}");
                let present = want.is_some() && types::user_key(&want_key) == &uk[..];
                match got {
                    // A version of the key: exactly the entry the binary search finds.
                    _ if present => {
                        assert_eq!(
                            got,
                            GetSeek::Entry(want.unwrap().0, want.unwrap().1),
                            "{ctx}"
                        );
                        assert_eq!(got_key, want_key, "{ctx}");
                    }
                    // Otherwise any answer that is not a version of the key: the bucket may
                    // start the scan past the key's place, at another key's interval.
                    GetSeek::Entry(..) => {
                        assert_ne!(types::user_key(&got_key), &uk[..], "{ctx}")
                    }
                    GetSeek::Absent => {
                        let in_block = entries.iter().any(|e| types::user_key(e) == &uk[..]);
                        assert!(!in_block, "{ctx}: absent, but the block holds a version");
                        answered_absent += 1;
                    }
                    GetSeek::End => assert!(want.is_none(), "{ctx}"),
                }
            }
        }
        assert!(
            hashed > 300,
            "seed {s}: only {hashed} blocks got a hash index"
        );
        assert!(answered_absent > 1000, "seed {s}: {answered_absent}");
    }

    /// Corrupt bucket bytes are reported, not followed.
    #[test]
    fn a_bucket_past_the_restarts_is_corruption() {
        use bytes::Bytes;

        use crate::sst::block::{Block, BlockBuilder};
        use crate::sst::filter::key_hash;
        use crate::types;

        let mut b = BlockBuilder::with_hash_index(16, 1.0);
        let uk = b"only";
        b.add_hashed(&types::internal_key(uk, 1, 1), b"v", key_hash(uk));
        let mut raw = b.finish();
        // One key, one bucket: it sits just before `m: fixed16` and the flagged count.
        let at = raw.len() - 7;
        assert_eq!(raw[at], 0);
        raw[at] = 9;
        let block = Block::new(Bytes::from(raw)).unwrap();
        let target = types::internal_key(uk, 5, 1);
        let err = block
            .seek_for_get(&target, uk, key_hash(uk), &mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().contains("missing restart point"), "{err}");
    }
}
