//! Record shape: how a record index becomes a key ([`KeySpace`]), how big values are
//! ([`ValueSize`]) and what they contain ([`ValueSource`], compressible to a chosen ratio).
//!
//! Invariants: a key is exactly `key_size` bytes and a function of its index alone, so every
//! engine, thread and run sees the same keys; `KeyOrder::Sequential` keys sort in index order
//! (db_bench's big-endian encoding), `KeyOrder::Hashed` keys are the index passed through a
//! bijection first (YCSB's `insertorder=hashed`), so neighbouring indices land far apart in the
//! key space; a missing key (`readmissing`) never equals any record's key but sorts among them.
//! Depends only on `rng`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::rng::{mix64, Rng};

/// The order of record indices in the key space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum KeyOrder {
    /// Record i's key is i (big-endian), so record order is key order (db_bench).
    Sequential,
    /// Record i's key is a hash of i: records are scattered over the key space (YCSB).
    // The hash is `mix64(i)`, big-endian.
    Hashed,
}

impl fmt::Display for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyOrder::Sequential => "sequential",
            KeyOrder::Hashed => "hashed",
        })
    }
}

/// Maps record indices to keys.
#[derive(Clone, Copy, Debug)]
pub struct KeySpace {
    key_size: usize,
    order: KeyOrder,
}

/// Smallest key size: the 8 bytes of the encoded index.
pub const MIN_KEY_SIZE: usize = 8;

impl KeySpace {
    pub fn new(key_size: usize, order: KeyOrder) -> anyhow::Result<Self> {
        anyhow::ensure!(
            (MIN_KEY_SIZE..=strata::MAX_KEY_SIZE).contains(&key_size),
            "--key-size must be in {MIN_KEY_SIZE}..={}",
            strata::MAX_KEY_SIZE
        );
        Ok(KeySpace { key_size, order })
    }

    pub fn key_size(&self) -> usize {
        self.key_size
    }

    pub fn order(&self) -> KeyOrder {
        self.order
    }

    /// Writes the key of record `index` into `buf` (replacing its contents): the 8-byte
    /// big-endian encoded index, then `'0'` padding (as db_bench does).
    pub fn key(&self, index: u64, buf: &mut Vec<u8>) {
        let v = match self.order {
            KeyOrder::Sequential => index,
            KeyOrder::Hashed => mix64(index),
        };
        buf.clear();
        buf.extend_from_slice(&v.to_be_bytes());
        buf.resize(self.key_size, b'0');
    }

    /// A key that no record has, sorting right before record `index`'s key: its last byte is
    /// `'.'` instead of padding; with 8-byte keys (no padding) the index is moved past 2^63.
    pub fn missing_key(&self, index: u64, buf: &mut Vec<u8>) {
        if self.key_size > MIN_KEY_SIZE {
            self.key(index, buf);
            *buf.last_mut().expect("non-empty key") = b'.';
        } else {
            self.key(index | (1 << 63), buf);
        }
    }
}

/// Value size: fixed or uniform in an inclusive range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueSize {
    pub min: usize,
    pub max: usize,
}

impl ValueSize {
    pub fn fixed(n: usize) -> Self {
        ValueSize { min: n, max: n }
    }

    pub fn sample(&self, rng: &mut Rng) -> usize {
        rng.range_inclusive(self.min as u64, self.max as u64) as usize
    }

    pub fn mean(&self) -> f64 {
        (self.min + self.max) as f64 / 2.0
    }
}

impl FromStr for ValueSize {
    type Err = String;
    /// `100`, or a range `100..1000` / `100-1000` (inclusive).
    fn from_str(s: &str) -> Result<Self, String> {
        let num = |t: &str| crate::args::parse_bytes(t.trim()).map(|v| v as usize);
        let (min, max) = if let Some((a, b)) = s.split_once("..") {
            (num(a)?, num(b.trim_start_matches('='))?)
        } else if let Some((a, b)) = s.split_once('-') {
            (num(a)?, num(b)?)
        } else {
            let n = num(s)?;
            (n, n)
        };
        if min > max {
            return Err(format!("value size range {s:?} is empty"));
        }
        if max > strata::MAX_VALUE_SIZE {
            return Err(format!(
                "value size {max} is above the largest value ({})",
                strata::MAX_VALUE_SIZE
            ));
        }
        Ok(ValueSize { min, max })
    }
}

impl fmt::Display for ValueSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}..{}", self.min, self.max)
        }
    }
}

/// A shared pool of value bytes that compress to about `ratio` of their size (db_bench's
/// `RandomGenerator`): every 100-byte piece is `ratio * 100` random printable bytes repeated.
/// Values are slices at random offsets, so no allocation happens per write.
#[derive(Debug)]
pub struct ValueSource {
    data: Vec<u8>,
    size: ValueSize,
}

const POOL: usize = 1 << 20;
const PIECE: usize = 100;

impl ValueSource {
    pub fn new(size: ValueSize, ratio: f64, seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x76616c75);
        let len = POOL.max(size.max) + size.max;
        let raw = ((PIECE as f64 * ratio.clamp(0.0, 1.0)).round() as usize).clamp(1, PIECE);
        let mut data = Vec::with_capacity(len + PIECE);
        while data.len() < len {
            let start = data.len();
            for _ in 0..raw {
                data.push(b' ' + rng.below(95) as u8);
            }
            while data.len() < start + PIECE {
                let i = data.len() - raw;
                data.push(data[i]);
            }
        }
        ValueSource { data, size }
    }

    /// A value of a sampled size.
    pub fn value(&self, rng: &mut Rng) -> &[u8] {
        let n = self.size.sample(rng);
        let off = rng.below((self.data.len() - n) as u64) as usize;
        &self.data[off..off + n]
    }

    pub fn size(&self) -> ValueSize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_keys_sort_by_index() {
        let ks = KeySpace::new(16, KeyOrder::Sequential).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for i in [0u64, 1, 255, 256, 1 << 40] {
            ks.key(i, &mut a);
            ks.key(i + 1, &mut b);
            assert_eq!(a.len(), 16);
            assert!(a < b);
        }
    }

    #[test]
    fn hashed_keys_are_distinct_and_scattered() {
        let ks = KeySpace::new(16, KeyOrder::Hashed).unwrap();
        let mut keys: Vec<Vec<u8>> = (0..10_000)
            .map(|i| {
                let mut k = Vec::new();
                ks.key(i, &mut k);
                k
            })
            .collect();
        // Neighbouring indices are not neighbours in key order.
        let ordered = keys.windows(2).filter(|w| w[0] < w[1]).count();
        assert!((4_000..6_000).contains(&ordered), "{ordered}");
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 10_000);
    }

    #[test]
    fn missing_keys_are_missing_but_in_range() {
        for size in [8, 16] {
            let ks = KeySpace::new(size, KeyOrder::Sequential).unwrap();
            let (mut k, mut m, mut prev) = (Vec::new(), Vec::new(), Vec::new());
            ks.key(10, &mut k);
            ks.missing_key(10, &mut m);
            ks.key(9, &mut prev);
            assert_ne!(k, m);
            assert_eq!(m.len(), size);
            if size > 8 {
                assert!(prev < m && m < k);
            }
        }
        assert!(KeySpace::new(4, KeyOrder::Sequential).is_err());
    }

    #[test]
    fn value_sizes_parse_and_sample() {
        assert_eq!("100".parse::<ValueSize>().unwrap(), ValueSize::fixed(100));
        assert_eq!(
            "100..1000".parse::<ValueSize>().unwrap(),
            ValueSize {
                min: 100,
                max: 1000
            }
        );
        assert_eq!(
            "1KiB-4KiB".parse::<ValueSize>().unwrap(),
            ValueSize {
                min: 1024,
                max: 4096
            }
        );
        assert!("10..5".parse::<ValueSize>().is_err());
        let src = ValueSource::new("10..20".parse().unwrap(), 0.5, 1);
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            let v = src.value(&mut r);
            assert!((10..=20).contains(&v.len()));
        }
    }

    #[test]
    fn values_compress_to_the_ratio() {
        let src = ValueSource::new(ValueSize::fixed(1000), 0.25, 1);
        // Every 100-byte piece is its first 25 bytes repeated.
        for piece in src.data.chunks_exact(PIECE).take(100) {
            for i in 25..PIECE {
                assert_eq!(piece[i], piece[i - 25]);
            }
        }
        let incompressible = ValueSource::new(ValueSize::fixed(1000), 1.0, 1);
        assert_ne!(&incompressible.data[..25], &incompressible.data[25..50]);
    }
}
