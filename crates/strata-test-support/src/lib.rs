//! Test-only helpers shared by the test suites of every crate in the workspace: a small seeded
//! PRNG and the seed convention (`STRATA_SEED=<n>` replays a run; otherwise a clock-derived seed
//! is printed so a failure can be replayed), and a staged takeover of a `file://` log
//! location's lease (`take_over_file_lease`), as a failover makes it. A dev-dependency of the test suites, and a normal
//! dependency of `strata-stress` (the `strata stress` harness draws its choices from [`Rng`]);
//! depends on nothing.

/// SplitMix64: tiny, seedable, good enough for test workloads and fuzz mutations.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `percent`%.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// Uniform index in `0..n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// `STRATA_SEED` if set, else a clock-derived seed; printed with how to replay it.
pub fn seed(name: &str) -> u64 {
    let s = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("{name}: seed {s} (replay with STRATA_SEED={s})");
    s
}

/// Stages a takeover of the lease on a `file://` log location rooted at `log_dir`: the next
/// lease generations (`LEASE/<generation:020>`, see `strata::storage::object` lease) appear
/// with another holder's token, as when another database took the location over after its
/// holder stayed silent a whole ttl. The holder learns at its next renewal; the staged holder
/// never renews, so a later opener takes the lease over a ttl after that.
pub fn take_over_file_lease(log_dir: &std::path::Path) {
    let lease = log_dir.join("LEASE");
    let newest = std::fs::read_dir(&lease)
        .expect("a held lease")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .expect("the holder's lease generation");
    for g in newest + 1..newest + 50 {
        std::fs::write(lease.join(format!("{g:020}")), b"another database")
            .expect("write a lease generation");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
