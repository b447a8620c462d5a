//! The deterministic mutator of the stable driver and the fast tests: a small PRNG and
//! byte-level mutations in the style of libFuzzer's (bit flips, interesting values, truncation,
//! insertion, deletion, duplication, splicing two corpus entries, varint rewrites).
//!
//! Invariant: the output depends only on the RNG state and the inputs; it never exceeds
//! [`MAX_LEN`] bytes.

/// Longest input the mutator produces.
pub const MAX_LEN: usize = 256 * 1024;

/// The workspace's seeded PRNG (SplitMix64) drives mutations.
pub use strata_test_support::Rng;

const INTERESTING8: [u8; 10] = [0, 1, 2, 0x7f, 0x80, 0x81, 0xfe, 0xff, 0x10, 0x40];
const INTERESTING: [u64; 14] = [
    0,
    1,
    7,
    8,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    i64::MAX as u64,
    u64::MAX,
];

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Applies one to five mutations to `input`, possibly splicing with `other`.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut d = input.to_vec();
    let rounds = 1 + rng.index(5);
    for _ in 0..rounds {
        mutate_once(rng, &mut d, other);
    }
    d.truncate(MAX_LEN);
    d
}

fn mutate_once(rng: &mut Rng, d: &mut Vec<u8>, other: &[u8]) {
    let len = d.len();
    match rng.index(12) {
        // Bit flip.
        0 | 1 if len > 0 => {
            let i = rng.index(len);
            d[i] ^= 1 << rng.index(8);
        }
        // Byte set to a random or an interesting value.
        2 if len > 0 => {
            let i = rng.index(len);
            d[i] = if rng.one_in(2) {
                rng.next_u64() as u8
            } else {
                INTERESTING8[rng.index(INTERESTING8.len())]
            };
        }
        // Fixed-width interesting value (2, 4 or 8 bytes, little-endian).
        3 if len > 0 => {
            let w = [2usize, 4, 8][rng.index(3)];
            let v = INTERESTING[rng.index(INTERESTING.len())].wrapping_add(rng.index(3) as u64);
            let at = rng.index(len);
            for (k, b) in v.to_le_bytes()[..w].iter().enumerate() {
                if let Some(x) = d.get_mut(at + k) {
                    *x = *b;
                }
            }
        }
        // Truncate.
        4 if len > 0 => d.truncate(rng.index(len)),
        // Insert random bytes.
        5 => {
            let at = rng.index(len + 1);
            let max = if rng.one_in(8) { 256 } else { 8 };
            let n = 1 + rng.index(max);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            d.splice(at..at, bytes);
        }
        // Delete a range.
        6 if len > 0 => {
            let at = rng.index(len);
            let n = 1 + rng.index((len - at).min(64));
            d.drain(at..at + n);
        }
        // Duplicate a range.
        7 if len > 0 => {
            let at = rng.index(len);
            let n = 1 + rng.index((len - at).min(128));
            let chunk = d[at..at + n].to_vec();
            let to = rng.index(len + 1);
            d.splice(to..to, chunk);
        }
        // Splice: a piece of the other input replaces or is inserted into this one.
        8 if !other.is_empty() => {
            let from = rng.index(other.len());
            let n = 1 + rng.index(other.len() - from);
            let piece = other[from..from + n].to_vec();
            let at = rng.index(len + 1);
            if rng.one_in(2) {
                let end = (at + n).min(len);
                d.splice(at..end, piece);
            } else {
                d.splice(at..at, piece);
            }
        }
        // Crossover: a prefix of this one, the rest of the other.
        9 if !other.is_empty() => {
            let a = rng.index(len + 1);
            let b = rng.index(other.len());
            d.truncate(a);
            d.extend_from_slice(&other[b..]);
        }
        // Varint rewrite: replace 1..=3 bytes with a varint of an interesting magnitude.
        10 if len > 0 => {
            let at = rng.index(len);
            let n = (1 + rng.index(3)).min(len - at);
            let v = match rng.index(3) {
                0 => rng.index(300) as u64,
                1 => INTERESTING[rng.index(INTERESTING.len())],
                _ => rng.next_u64() >> rng.index(64),
            };
            let mut enc = Vec::new();
            varint(v, &mut enc);
            d.splice(at..at + n, enc);
        }
        // Arithmetic on a byte.
        _ if len > 0 => {
            let i = rng.index(len);
            let delta = 1 + rng.index(16) as u8;
            d[i] = if rng.one_in(2) {
                d[i].wrapping_add(delta)
            } else {
                d[i].wrapping_sub(delta)
            };
        }
        _ => d.push(rng.next_u64() as u8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_bounded() {
        let a = b"hello world, this is a seed".to_vec();
        let b = vec![0xffu8; 40];
        let run = |seed| {
            let mut r = Rng::new(seed);
            (0..500).map(|_| mutate(&mut r, &a, &b)).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        assert!(run(3).iter().all(|m| m.len() <= MAX_LEN));
        assert!(run(4).iter().any(|m| m != &a));
    }
}
