//! Whole-table bloom filter over user keys.
//!
//! Two layouts, told apart by the last byte (docs/format.md §6.7):
//! - **cache-local** (written since 2026-11-26): `lines[64 × n] | k: u8 | 0xC1`. A key's 64-bit
//!   XXH3 hash picks one 64-byte line with its low half (`(h1 × n) >> 32`), and its high half
//!   `h2` gives all `k` probes inside that line (bit `h2 >> 23`, then `h2 ×= 0x9E3779B9`), so a
//!   lookup costs one cache miss instead of `k` (RocksDB's format_version 5 filters do the
//!   same). 10 bits per key: about 1% false positives.
//! - **classic**: `bits[ceil(m/8)] | k: u8` (`k` in 1..=30): probe `i` tests bit
//!   `((h1 + i·h2) mod 2^32) mod m` (Kirsch–Mitzenmacher double hashing). Tables written
//!   before the cache-local layout keep working.

use xxhash_rust::xxh3::xxh3_64;

/// Last byte of a cache-local filter; a classic filter ends with its probe count (1..=30).
const CACHE_LOCAL: u8 = 0xC1;
/// Bytes per line of a cache-local filter: one cache line.
const LINE_BYTES: usize = 64;
/// Multiplier that derives each next probe in a line (2^32 / golden ratio).
const PROBE_MUL: u32 = 0x9E37_79B9;

/// Hash of a user key, shared by the builder and the probe.
#[inline]
pub fn key_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// The probes a filter of `bits_per_key` makes per key.
fn probes(bits_per_key: f64) -> u32 {
    ((bits_per_key * std::f64::consts::LN_2).round() as u32).clamp(1, 30)
}

/// The line of `n` that hash `h` falls in (`n` ≥ 1; a multiply-shift, not a modulo).
#[inline]
fn line_of(h: u64, n: usize) -> usize {
    (((h as u32) as u64 * n as u64) >> 32) as usize
}

/// Collects key hashes and builds a filter.
pub struct FilterBuilder {
    bits_per_key: f64,
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder of a filter with `bits_per_key` bits per distinct key.
    pub fn new(bits_per_key: f64) -> Self {
        FilterBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// Adds a user key; consecutive duplicates are added once.
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.add_hash(key_hash(user_key));
    }

    /// [`FilterBuilder::add_key`] of a key whose [`key_hash`] the caller computed.
    pub fn add_hash(&mut self, h: u64) {
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// The number of key hashes added so far (consecutive duplicates once).
    pub fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    /// The cache-local filter of the keys added so far; the builder is reset.
    pub fn finish(&mut self) -> Vec<u8> {
        let n = self.hashes.len().max(1);
        let bits = (n as f64 * self.bits_per_key).ceil() as usize;
        let lines = bits.div_ceil(LINE_BYTES * 8).max(1);
        let k = probes(self.bits_per_key);
        let mut out = vec![0u8; lines * LINE_BYTES + 2];
        for &h in &self.hashes {
            let line = &mut out[line_of(h, lines) * LINE_BYTES..][..LINE_BYTES];
            let mut h2 = (h >> 32) as u32;
            for _ in 0..k {
                let b = (h2 >> 23) as usize;
                line[b / 8] |= 1 << (b % 8);
                h2 = h2.wrapping_mul(PROBE_MUL);
            }
        }
        out[lines * LINE_BYTES] = k as u8;
        out[lines * LINE_BYTES + 1] = CACHE_LOCAL;
        self.hashes.clear();
        out
    }
}

/// A filter read from a table.
#[derive(Clone)]
pub struct BloomFilter {
    data: bytes::Bytes,
    k: u32,
    /// Cache-local: the number of 64-byte lines. Classic: 0.
    lines: usize,
    /// Classic: the number of bits.
    bits: usize,
}

impl BloomFilter {
    /// `None` when the encoding is malformed (the caller reports corruption).
    pub fn new(data: bytes::Bytes) -> Option<Self> {
        let (&last, rest) = data.split_last()?;
        if last == CACHE_LOCAL {
            let (&k, lines) = rest.split_last()?;
            if !(1..=30).contains(&k) || lines.is_empty() || lines.len() % LINE_BYTES != 0 {
                return None;
            }
            let lines = lines.len() / LINE_BYTES;
            return Some(BloomFilter {
                data,
                k: k as u32,
                lines,
                bits: 0,
            });
        }
        if rest.is_empty() || !(1..=30).contains(&last) {
            return None;
        }
        let bits = rest.len() * 8;
        Some(BloomFilter {
            data,
            k: last as u32,
            lines: 0,
            bits,
        })
    }

    /// False means the key is certainly absent.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        if self.lines > 0 {
            let line = &self.data[line_of(h, self.lines) * LINE_BYTES..][..LINE_BYTES];
            let mut h2 = (h >> 32) as u32;
            for _ in 0..self.k {
                let b = (h2 >> 23) as usize;
                if line[b / 8] & (1 << (b % 8)) == 0 {
                    return false;
                }
                h2 = h2.wrapping_mul(PROBE_MUL);
            }
            return true;
        }
        let (h1, h2) = (h as u32, (h >> 32) as u32 | 1);
        let mut x = h1;
        for _ in 0..self.k {
            let b = (x as usize) % self.bits;
            if self.data[b / 8] & (1 << (b % 8)) == 0 {
                return false;
            }
            x = x.wrapping_add(h2);
        }
        true
    }

    /// False means `user_key` is certainly absent.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// Starts loading the line [`BloomFilter::may_contain_hash`] reads for `h` (cache-local
    /// filters; a hint, no effect on any answer): a batch of lookups hints every key first.
    pub fn prefetch_hash(&self, h: u64) {
        if self.lines > 0 {
            crate::memtable::prefetch::prefetch(
                self.data[line_of(h, self.lines) * LINE_BYTES..].as_ptr(),
            );
        }
    }

    /// The filter's size in bytes.
    pub fn size(&self) -> usize {
        self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp_rate(f: &BloomFilter, from: u32, n: u32) -> f64 {
        (from..from + n)
            .filter(|i| f.may_contain(&i.to_be_bytes()))
            .count() as f64
            / n as f64
    }

    #[test]
    fn no_false_negatives_and_low_fp_rate() {
        for (bpk, max_fp) in [(10.0, 0.013), (20.0, 0.0004), (5.0, 0.12)] {
            let mut b = FilterBuilder::new(bpk);
            for i in 0..10_000u32 {
                b.add_key(&i.to_be_bytes());
            }
            let f = BloomFilter::new(bytes::Bytes::from(b.finish())).unwrap();
            assert!(f.lines > 0);
            for i in 0..10_000u32 {
                assert!(f.may_contain(&i.to_be_bytes()));
            }
            let fp = fp_rate(&f, 10_000, 200_000);
            assert!(fp < max_fp, "{bpk} bits/key: false-positive rate {fp}");
        }
    }

    /// A classic filter (the layout tables written before the cache-local one carry), built
    /// here as the old builder did, still answers: no false negatives, ~0.8% false positives.
    #[test]
    fn classic_filters_still_read() {
        let keys: Vec<[u8; 4]> = (0..10_000u32).map(|i| i.to_be_bytes()).collect();
        let bits = 100_000usize;
        let mut out = vec![0u8; bits / 8 + 1];
        for key in &keys {
            let h = key_hash(key);
            let (h1, h2) = (h as u32, (h >> 32) as u32 | 1);
            let mut x = h1;
            for _ in 0..7 {
                let b = (x as usize) % bits;
                out[b / 8] |= 1 << (b % 8);
                x = x.wrapping_add(h2);
            }
        }
        out[bits / 8] = 7;
        let f = BloomFilter::new(bytes::Bytes::from(out)).unwrap();
        assert_eq!(f.lines, 0);
        assert!(keys.iter().all(|k| f.may_contain(k)));
        assert!(fp_rate(&f, 10_000, 100_000) < 0.012);
    }

    #[test]
    fn malformed_filters_are_rejected() {
        for bad in [
            &[][..],
            &[7][..],
            &[0, 0, 31][..],
            &[0, 0, 0][..],
            &[7, CACHE_LOCAL][..],
            &[0; 66][..],
        ] {
            assert!(
                BloomFilter::new(bytes::Bytes::copy_from_slice(bad)).is_none(),
                "{bad:?}"
            );
        }
        let mut odd = vec![0u8; 63];
        odd.extend([7, CACHE_LOCAL]);
        assert!(BloomFilter::new(bytes::Bytes::from(odd)).is_none());
        let mut empty = FilterBuilder::new(10.0);
        let f = BloomFilter::new(bytes::Bytes::from(empty.finish())).unwrap();
        assert_eq!(f.size(), 66);
        assert!(!f.may_contain(b"anything"));
    }
}
