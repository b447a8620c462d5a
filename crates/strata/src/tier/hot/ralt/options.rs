//! [`RaltOptions`]: RALT's knobs and the defaults derived from the fast tier's size.
//! Depends on `error` only.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// Options of a [`super::Ralt`]. Sizes are bytes; "HotRAP bytes" are key + value bytes of the
/// records in the data store, not RALT's own bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct RaltOptions {
    /// RALT's own directory on the fast tier (nothing else may live in it).
    pub dir: PathBuf,
    /// Unsorted in-memory buffer of accesses (estimated in-memory bytes); flushed, sorted with
    /// duplicates merged, when full. Accesses are dropped when it reaches 4× this.
    pub buffer_bytes: usize,
    /// Initial limit on the hot-set size (HotRAP bytes of hot records).
    pub hot_set_limit: u64,
    /// Initial limit on RALT's files on disk.
    pub physical_limit: u64,
    /// Algorithm 1: tune both limits after each eviction, evict unstable records first.
    pub auto_tune: bool,
    /// Lower bound of the auto-tuned hot-set limit (HotRAP bytes).
    pub min_hot_set_limit: u64,
    /// Upper bound of the auto-tuned hot-set limit (HotRAP bytes).
    pub max_hot_set_limit: u64,
    /// D in Algorithm 1: HotRAP bytes of unstable records allowed beside the stable ones.
    pub max_unstable_bytes: u64,
    /// Accessed HotRAP bytes between two global counter decrements (≈ the fast tier's size).
    pub decay_period_bytes: u64,
    /// Accessed HotRAP bytes per time slice of the score.
    pub tick_bytes: u64,
    /// Exponential-smoothing weight: a score shrinks by `1 - alpha` per tick.
    pub alpha: f64,
    /// Target payload of a run's data block (§3.2: 8 KiB).
    pub block_bytes: usize,
}

impl RaltOptions {
    /// Defaults for a fast tier of `fast_tier_bytes` (F):
    ///
    /// * hot-set limit 50% of F and physical limit 15% of F initially (the paper's §4.1 values);
    /// * auto-tune on, hot-set limit within [5%, 70%] of F: at least a useful promotion target
    ///   even on a uniform workload, and leaving 30% of F to the LSM's own fast levels;
    /// * D = 5% of F: the window in which a newly seen key must be accessed again to become
    ///   stable (larger lets more cold keys become stable, smaller slows hot keys down);
    /// * decay period F (the paper's suggestion), so a stable key must be accessed about once
    ///   per F of accesses, and loses its stable tag after at most 3·F without one;
    /// * tick F/100 and alpha 0.01, so a score halves in about 0.7·F of accessed bytes: the
    ///   score remembers about as far back as the counters do;
    /// * 1 MiB buffer, 8 KiB blocks.
    pub fn for_fast_tier(dir: PathBuf, fast_tier_bytes: u64) -> Self {
        let f = fast_tier_bytes.max(1 << 20);
        let pct = |p: u64| f / 100 * p;
        RaltOptions {
            dir,
            buffer_bytes: 1 << 20,
            hot_set_limit: pct(50),
            physical_limit: pct(15),
            auto_tune: true,
            min_hot_set_limit: pct(5),
            max_hot_set_limit: pct(70),
            max_unstable_bytes: pct(5),
            decay_period_bytes: f,
            tick_bytes: (f / 100).max(1),
            alpha: 0.01,
            block_bytes: 8 << 10,
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::invalid(format!("RALT options: {m}")));
        if self.buffer_bytes == 0 || self.block_bytes == 0 {
            return bad("buffer_bytes and block_bytes must be positive");
        }
        if self.tick_bytes == 0 || self.decay_period_bytes == 0 {
            return bad("tick_bytes and decay_period_bytes must be positive");
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return bad("alpha must be in (0, 1)");
        }
        if self.min_hot_set_limit > self.max_hot_set_limit {
            return bad("min_hot_set_limit above max_hot_set_limit");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_proportional() {
        let o = RaltOptions::for_fast_tier("/x".into(), 10 << 30);
        o.validate().unwrap();
        assert_eq!(o.hot_set_limit, (10u64 << 30) / 100 * 50);
        assert!(o.min_hot_set_limit < o.hot_set_limit && o.hot_set_limit < o.max_hot_set_limit);
        let mut bad = o.clone();
        bad.alpha = 1.0;
        assert!(bad.validate().is_err());
        bad = o;
        bad.tick_bytes = 0;
        assert!(bad.validate().is_err());
    }
}
