//! The benchmark's random numbers: a small, fast, seedable generator ([`Rng`], SplitMix64) and
//! the bijective 64-bit mixer ([`mix64`]) that key scrambling is built on.
//!
//! Owns nothing but arithmetic. Invariants: the same seed gives the same sequence on every
//! machine and build (no dependence on `rand`'s algorithm choices, which change between
//! releases); [`Rng::for_thread`] streams of one seed do not overlap in practice. Must not
//! depend on any other module of this crate.

/// SplitMix64 (Steele, Lea and Flood): passes BigCrush, one add and a mix per number.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// A generator for worker `thread` of a run seeded with `seed` (and `salt`, a phase number).
    pub fn for_thread(seed: u64, salt: u64, thread: u64) -> Self {
        Rng(mix64(
            seed ^ mix64(salt.wrapping_add(0x5851_f42d_4c95_7f2d)) ^ mix64(thread + 1),
        ))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)` (Lemire's multiply-high; the bias is below 2^-64 * n). `n = 0` gives 0.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[lo, hi]`.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }
}

/// The SplitMix64 finalizer: a bijection on `u64` that spreads neighbouring inputs over the
/// whole range (used to scatter key indices over the key space).
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
            let u = a.unit();
            assert_eq!(u, b.unit());
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(Rng::new(1).range_inclusive(5, 5), 5);
    }

    #[test]
    fn thread_streams_differ() {
        let mut a = Rng::for_thread(1, 0, 0);
        let mut b = Rng::for_thread(1, 0, 1);
        let same = (0..100).filter(|_| a.next_u64() == b.next_u64()).count();
        assert_eq!(same, 0);
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = Rng::new(3);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }
}
