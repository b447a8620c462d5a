//! Sampled score thresholds for eviction (HotRAP §3.2, Figure 4). Pure.
//!
//! Records are sorted by key, not score, so the threshold that keeps a target share of the
//! total size is estimated: `k` positions are sampled in `[0, total)` of the size space
//! (stratified: one uniformly jittered position per stratum), a scan picks the record covering
//! each position, and the threshold is the score of the `ceil(k * target / total)`-th largest
//! sample. Because a record is sampled with probability proportional to its size, the share of
//! samples at or above a score estimates the share of *bytes* at or above it.
//!
//! Ties: a threshold also carries `tie_keep`, the share of records whose score equals it that
//! are kept (chosen by a hash of the key), so a workload where thousands of records share one
//! score (every key accessed once in the same tick) can still be cut by 10%.
//! Depends on nothing in the engine but `xxhash`.

/// Keep a record iff `score > self.score`, or `score == self.score` and the key's hash falls in
/// the kept share of ties.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    /// Records scoring above this are kept (the score at the tick the threshold is expressed at).
    pub score: f64,
    /// Share (0..=1) of records with exactly `score` that are kept.
    pub tie_keep: f64,
}

impl Threshold {
    /// Keeps everything (scores are never negative).
    pub const NONE: Threshold = Threshold {
        score: 0.0,
        tie_keep: 1.0,
    };

    /// Whether a record with real score `score` and key `key` is kept.
    pub fn keeps(&self, score: f64, key: &[u8]) -> bool {
        if score > self.score {
            true
        } else if score == self.score {
            self.tie_keep >= 1.0 || key_unit(key) < self.tie_keep
        } else {
            false
        }
    }

    /// The stricter of two thresholds (what both keep).
    pub fn max(self, other: Threshold) -> Threshold {
        if self.score > other.score {
            self
        } else if other.score > self.score {
            other
        } else {
            Threshold {
                score: self.score,
                tie_keep: self.tie_keep.min(other.tie_keep),
            }
        }
    }
}

/// A key's hash as a number in `[0, 1)`.
pub fn key_unit(key: &[u8]) -> f64 {
    (xxhash_rust::xxh3::xxh3_64_with_seed(key, 0x5241_4c54) >> 11) as f64 / (1u64 << 53) as f64
}

/// `k` sorted positions in `[0, total)`, one per stratum of width `total / k`, jittered by a
/// deterministic generator seeded with `seed`. Fewer than `k` when `total < k`.
pub fn sample_positions(total: u64, k: usize, seed: u64) -> Vec<u64> {
    if total == 0 || k == 0 {
        return Vec::new();
    }
    let k = (k as u64).min(total);
    let mut state = seed;
    (0..k)
        .map(|i| {
            let lo = (total as u128 * i as u128 / k as u128) as u64;
            let hi = (total as u128 * (i + 1) as u128 / k as u128) as u64;
            lo + splitmix(&mut state) % (hi - lo).max(1)
        })
        .collect()
}

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Collects the score of the record covering each sampled position during one ordered scan.
pub struct Sampler {
    positions: Vec<u64>,
    next: usize,
    offset: u64,
    scores: Vec<f64>,
}

impl Sampler {
    pub fn new(positions: Vec<u64>) -> Sampler {
        Sampler {
            scores: Vec::with_capacity(positions.len()),
            positions,
            next: 0,
            offset: 0,
        }
    }

    /// Offers the next record of the scan (its size in this sampler's space, and its score).
    pub fn offer(&mut self, size: u64, score: f64) {
        let end = self.offset + size;
        while self.next < self.positions.len() && self.positions[self.next] < end {
            self.scores.push(score);
            self.next += 1;
        }
        self.offset = end;
    }

    pub fn scores(&self) -> &[f64] {
        &self.scores
    }
}

/// The threshold that keeps about `target` of `total` bytes, from size-weighted sample scores.
/// Keeps everything when `target >= total` or there are no samples.
pub fn pick(scores: &[f64], total: u64, target: u64) -> Threshold {
    if target >= total || scores.is_empty() {
        return Threshold::NONE;
    }
    let mut s = scores.to_vec();
    s.sort_by(|a, b| b.total_cmp(a));
    let m = s.len();
    let keep = ((m as f64) * target as f64 / total as f64).round() as usize;
    if keep == 0 {
        return Threshold {
            score: s[0],
            tie_keep: 0.0,
        };
    }
    let theta = s[keep - 1];
    let above = s.iter().take_while(|&&x| x > theta).count();
    let ties = s.iter().filter(|&&x| x == theta).count();
    Threshold {
        score: theta,
        tie_keep: ((keep - above) as f64 / ties as f64).clamp(0.0, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (size, score) records, key = index.
    fn kept_share(recs: &[(u64, f64)], t: Threshold) -> f64 {
        let total: u64 = recs.iter().map(|r| r.0).sum();
        let kept: u64 = recs
            .iter()
            .enumerate()
            .filter(|(i, r)| t.keeps(r.1, &(*i as u64).to_be_bytes()))
            .map(|(_, r)| r.0)
            .sum();
        kept as f64 / total as f64
    }

    fn threshold_for(recs: &[(u64, f64)], keep_share: f64, seed: u64) -> Threshold {
        let total: u64 = recs.iter().map(|r| r.0).sum();
        let mut s = Sampler::new(sample_positions(total, 1024, seed));
        for r in recs {
            s.offer(r.0, r.1);
        }
        pick(s.scores(), total, (total as f64 * keep_share) as u64)
    }

    #[test]
    fn positions_are_sorted_stratified_and_in_range() {
        for (total, k) in [(10u64, 100usize), (1000, 10), (1 << 40, 1024), (7, 7)] {
            let p = sample_positions(total, k, 9);
            assert_eq!(p.len(), (k as u64).min(total) as usize);
            assert!(p.windows(2).all(|w| w[0] <= w[1]), "{total}/{k}");
            assert!(p.iter().all(|&x| x < total));
        }
        assert!(sample_positions(0, 10, 1).is_empty());
    }

    #[test]
    fn sampler_weights_by_size() {
        // One big record covers most positions.
        let mut s = Sampler::new(sample_positions(1000, 100, 3));
        s.offer(900, 5.0);
        s.offer(100, 1.0);
        let big = s.scores().iter().filter(|&&x| x == 5.0).count();
        assert_eq!(s.scores().len(), 100);
        assert!((85..=95).contains(&big), "{big}");
    }

    #[test]
    fn pick_on_synthetic_distributions() {
        // (name, records, keep share, tolerance)
        let n = 20_000u64;
        let uniform: Vec<(u64, f64)> = (0..n).map(|i| (100, (i * 7919 % n) as f64)).collect();
        let sized: Vec<(u64, f64)> = (0..n)
            .map(|i| (10 + (i * 31 % 500), ((i * 104_729) % n) as f64))
            .collect();
        let equal: Vec<(u64, f64)> = (0..n).map(|_| (50, 1.0)).collect();
        let two_level: Vec<(u64, f64)> = (0..n)
            .map(|i| (64, if i % 20 == 0 { 30.0 } else { 0.5 }))
            .collect();
        let sorted_by_score: Vec<(u64, f64)> = (0..n).map(|i| (100, i as f64)).collect();
        type Case<'a> = (&'a str, &'a Vec<(u64, f64)>, f64, f64);
        let cases: [Case; 7] = [
            ("uniform 90%", &uniform, 0.9, 0.03),
            ("uniform 50%", &uniform, 0.5, 0.05),
            ("varying sizes 90%", &sized, 0.9, 0.03),
            ("all equal scores 90%", &equal, 0.9, 0.03),
            ("5% hot, keep 90%", &two_level, 0.9, 0.03),
            ("5% hot, keep 5%", &two_level, 0.05, 0.01),
            ("scores correlate with key", &sorted_by_score, 0.9, 0.03),
        ];
        for (name, recs, share, tol) in cases {
            let t = threshold_for(recs, share, 42);
            let got = kept_share(recs, t);
            assert!(
                (got - share).abs() <= tol,
                "{name}: kept {got:.3}, wanted {share} ({t:?})"
            );
        }
        // The kept records are the highest-scored ones.
        let t = threshold_for(&sorted_by_score, 0.9, 1);
        assert!(!t.keeps(100.0, b"x") && t.keeps(19_999.0, b"x"));
    }

    #[test]
    fn pick_edges() {
        assert_eq!(pick(&[], 10, 5), Threshold::NONE);
        assert_eq!(pick(&[1.0, 2.0], 10, 10), Threshold::NONE);
        let all_out = pick(&[1.0, 2.0], 10, 0);
        assert!(!all_out.keeps(2.0, b"a") && all_out.keeps(2.5, b"a"));
        let t = pick(&[3.0, 2.0, 2.0, 1.0], 100, 50);
        assert_eq!(t.score, 2.0);
        assert!((t.tie_keep - 0.5).abs() < 1e-12);
        assert_eq!(Threshold::NONE.max(t), t);
        let a = Threshold {
            score: 2.0,
            tie_keep: 0.2,
        };
        assert_eq!(t.max(a).tie_keep, 0.2);
    }
}
