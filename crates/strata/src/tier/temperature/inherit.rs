//! Carrying temperatures across a compaction (LogStore §V: "if a new bucket is created ... its
//! count is calculated by finding the count for the range of keys the SST covers using the
//! source level's histogram").
//!
//! Each input table's count is spread over the outputs in proportion to the share of the
//! input's key range each output covers. Key ranges are measured by interpolating keys as
//! numbers: the bytes after the range's common prefix, read as a big-endian fraction. That is
//! exact for fixed-width numeric keys and a fair estimate for text. Pure functions.

use crate::version::FileMeta;

/// The position of `key` within `[lo, hi]` as a fraction in `[0, 1]`.
pub fn key_fraction(key: &[u8], lo: &[u8], hi: &[u8]) -> f64 {
    let p = lo.iter().zip(hi).take_while(|(a, b)| a == b).count();
    let num = |k: &[u8]| -> f64 {
        // Up to 8 bytes after the common prefix, as a fraction of 2^64 (missing bytes are 0).
        let mut x = 0f64;
        let mut scale = 1.0 / 256.0;
        for i in 0..8 {
            let b = k.get(p + i).copied().unwrap_or(0);
            x += b as f64 * scale;
            scale /= 256.0;
        }
        x
    };
    // Keys that share less than the common prefix with `lo`/`hi` lie outside: clamp.
    if key <= lo {
        return 0.0;
    }
    if key >= hi {
        return 1.0;
    }
    let (a, b, k) = (num(lo), num(hi), num(key));
    if b <= a {
        return 0.0;
    }
    ((k - a) / (b - a)).clamp(0.0, 1.0)
}

/// The share of `input`'s key range that `[lo, hi]` covers.
pub fn covered_share(input: &FileMeta, lo: &[u8], hi: &[u8]) -> f64 {
    if hi < input.smallest.as_slice() || lo > input.largest.as_slice() {
        return 0.0;
    }
    if input.smallest == input.largest {
        return 1.0;
    }
    let a = key_fraction(lo, &input.smallest, &input.largest);
    let b = key_fraction(hi, &input.smallest, &input.largest);
    (b - a).max(0.0)
}

/// The temperatures of `outputs` given `inputs` with their temperatures. Each input's count goes
/// to the outputs overlapping it, split by covered share (normalized, so a hot input whose
/// range the outputs cover only in part still hands over all of its count); an input no output
/// overlaps (all its records dropped) hands over nothing.
pub fn inherit(inputs: &[(&FileMeta, f64)], outputs: &[&FileMeta]) -> Vec<f64> {
    let mut temps = vec![0.0; outputs.len()];
    for (input, t) in inputs {
        if *t <= 0.0 || !t.is_finite() {
            continue;
        }
        let shares: Vec<f64> = outputs
            .iter()
            .map(|o| {
                if o.largest.as_slice() < input.smallest.as_slice()
                    || o.smallest.as_slice() > input.largest.as_slice()
                {
                    0.0
                } else {
                    // An output touching the input gets at least a sliver (a key-range
                    // estimate of zero width still holds records).
                    covered_share(input, &o.smallest, &o.largest).max(1e-6)
                }
            })
            .collect();
        let total: f64 = shares.iter().sum();
        if total <= 0.0 {
            continue;
        }
        for (out, s) in temps.iter_mut().zip(&shares) {
            *out += t * s / total;
        }
    }
    temps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(lo: &str, hi: &str) -> FileMeta {
        FileMeta {
            id: 0,
            size: 1,
            smallest: lo.into(),
            largest: hi.into(),
            largest_exclusive: false,
            smallest_seq: 0,
            largest_seq: 0,
            num_entries: 0,
            num_deletions: 0,
            num_range_deletions: 0,
            tier: crate::tier::Tier::Fast,
        }
    }

    #[test]
    fn fractions_of_numeric_keys_are_exact() {
        let (lo, hi) = (b"user0000".as_slice(), b"user1000".as_slice());
        let cases: [(&[u8], f64); 4] = [
            (b"user0000", 0.0),
            (b"user1000", 1.0),
            (b"a", 0.0),
            (b"z", 1.0),
        ];
        for (k, want) in cases {
            assert_eq!(key_fraction(k, lo, hi), want, "{k:?}");
        }
        // Decimal text interpolates monotonically (not linearly: '1' follows '0' in the byte).
        let a = key_fraction(b"user0500", lo, hi);
        let b = key_fraction(b"user0900", lo, hi);
        assert!(0.0 < a && a < b && b < 1.0, "{a} {b}");
        let k = 1u64 << 40;
        let f = key_fraction(
            &(k / 4).to_be_bytes(),
            &0u64.to_be_bytes(),
            &k.to_be_bytes(),
        );
        assert!((f - 0.25).abs() < 1e-9);
    }

    #[test]
    fn inheritance_splits_by_covered_range_and_keeps_the_sum() {
        // One hot input [000, 999] (100 reads) and a cold one; outputs split it 50/50 by range,
        // and a third output beyond both gets nothing.
        let hot = meta("k000", "k999");
        let cold = meta("k500", "k999");
        let o1 = meta("k000", "k499");
        let o2 = meta("k500", "k999");
        let o3 = meta("m000", "m999");
        let t = inherit(&[(&hot, 100.0), (&cold, 0.0)], &[&o1, &o2, &o3]);
        assert!((t[0] - 50.0).abs() < 1.0, "{t:?}");
        assert!((t[1] - 50.0).abs() < 1.0, "{t:?}");
        assert_eq!(t[2], 0.0);
        assert!((t.iter().sum::<f64>() - 100.0).abs() < 1e-9);
        // A dropped input (no output overlaps it) hands over nothing.
        let t = inherit(&[(&meta("a", "b"), 7.0)], &[&o1]);
        assert_eq!(t, vec![0.0]);
        // A single-key output inside a wide input still gets its sliver, and all of it if alone.
        let t = inherit(&[(&hot, 10.0)], &[&meta("k123", "k123")]);
        assert!((t[0] - 10.0).abs() < 1e-9);
    }
}
