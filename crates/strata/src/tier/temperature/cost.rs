//! The tier cost model of LogStore §V-B (equations 10 and 11), with each tier's seek time and
//! bandwidth measured by the storage layer ([`crate::stats::TierStats`]) rather than assumed.
//! Until a tier has been measured, priors stand in (a local SSD; an object store in the same
//! region).

use crate::stats::TierStats;

/// Seek time (seconds per small read) and sequential bandwidth (bytes per second) of each tier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TierCosts {
    /// R_s: mean latency of a fast-tier block read.
    pub fast_seek: f64,
    /// R_h: mean latency of a capacity-tier range GET.
    pub capacity_seek: f64,
    /// W_s: fast-tier write bandwidth.
    pub fast_bw: f64,
    /// W_h: capacity-tier write bandwidth.
    pub capacity_bw: f64,
}

/// Priors used before a tier has been measured.
pub const PRIOR: TierCosts = TierCosts {
    fast_seek: 100e-6,
    capacity_seek: 10e-3,
    fast_bw: 500e6,
    capacity_bw: 50e6,
};

/// Observations needed before a measurement replaces the prior.
const MIN_SAMPLES: u64 = 16;

impl Default for TierCosts {
    fn default() -> Self {
        PRIOR
    }
}

impl TierCosts {
    /// The costs as measured so far (priors where a tier has too few observations).
    pub fn measured(s: &TierStats) -> TierCosts {
        use std::sync::atomic::Ordering::Relaxed;
        let mean = |h: &crate::metrics::LatencyHistogram, prior: f64| {
            let h = h.snapshot();
            if h.count < MIN_SAMPLES || h.sum_seconds <= 0.0 {
                prior
            } else {
                h.sum_seconds / h.count as f64
            }
        };
        let bw = |bytes: u64, h: &crate::metrics::LatencyHistogram, prior: f64| {
            let h = h.snapshot();
            if h.count < MIN_SAMPLES || h.sum_seconds <= 0.0 || bytes == 0 {
                prior
            } else {
                bytes as f64 / h.sum_seconds
            }
        };
        TierCosts {
            fast_seek: mean(&s.fast_read_latency, PRIOR.fast_seek),
            capacity_seek: mean(&s.capacity_read_latency, PRIOR.capacity_seek),
            fast_bw: bw(
                s.fast_write_bytes.load(Relaxed),
                &s.fast_write_latency,
                PRIOR.fast_bw,
            ),
            capacity_bw: bw(
                s.put_bytes.load(Relaxed),
                &s.capacity_write_latency,
                PRIOR.capacity_bw,
            ),
        }
    }

    /// Equation 10, generalized to tables of any size and either output tier: one seek per
    /// input table, every input byte read at its tier's bandwidth, every byte written at the
    /// output tier's. For `T−1` fast tables and one capacity table of `S` bytes each, written
    /// to the fast tier, this is the paper's `(T−1)R_s + R_h + S((2T−1)/W_s + 1/W_h)`.
    pub fn compaction(
        &self,
        fast_tables: usize,
        fast_bytes: u64,
        capacity_tables: usize,
        capacity_bytes: u64,
        output_fast: bool,
    ) -> f64 {
        let out_bw = if output_fast {
            self.fast_bw
        } else {
            self.capacity_bw
        };
        fast_tables as f64 * self.fast_seek
            + capacity_tables as f64 * self.capacity_seek
            + fast_bytes as f64 / self.fast_bw
            + capacity_bytes as f64 / self.capacity_bw
            + (fast_bytes + capacity_bytes) as f64 / out_bw
    }

    /// Equation 11: the least I/O time `reads` lookups of a capacity-tier table cost (two
    /// seeks each: index, then data block).
    pub fn capacity_reads(&self, reads: f64) -> f64 {
        2.0 * reads * self.capacity_seek
    }

    /// The same for the fast tier, per table a lookup has to search (staging compaction,
    /// §V-D: each read of a range covered by `tables` overlapping fast tables pays for the
    /// extra ones).
    pub fn fast_reads(&self, reads: f64, tables: usize) -> f64 {
        2.0 * reads * tables as f64 * self.fast_seek
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equation_10_matches_the_paper() {
        let c = TierCosts {
            fast_seek: 1e-4,
            capacity_seek: 5e-3,
            fast_bw: 400e6,
            capacity_bw: 100e6,
        };
        // T = 4 tables of S = 64 MB: three fast, one capacity, output on the fast tier.
        let (t, s) = (4.0, 64e6);
        let paper = (t - 1.0) * c.fast_seek
            + c.capacity_seek
            + s * ((2.0 * t - 1.0) / c.fast_bw + 1.0 / c.capacity_bw);
        let ours = c.compaction(3, 3 * 64_000_000, 1, 64_000_000, true);
        assert!((paper - ours).abs() < 1e-9, "{paper} vs {ours}");
        assert_eq!(c.capacity_reads(10.0), 2.0 * 10.0 * 5e-3);
    }

    #[test]
    fn measured_costs_come_from_the_tier_statistics() {
        let s = TierStats::default();
        assert_eq!(TierCosts::measured(&s), PRIOR, "no observations: priors");
        for _ in 0..20 {
            s.capacity_read_latency
                .record(std::time::Duration::from_millis(4));
            s.capacity_write_latency
                .record(std::time::Duration::from_millis(100));
        }
        s.put_bytes
            .store(20 * 1_000_000, std::sync::atomic::Ordering::Relaxed);
        let m = TierCosts::measured(&s);
        assert!((m.capacity_seek - 4e-3).abs() < 1e-6, "{m:?}");
        assert!((m.capacity_bw - 10e6).abs() < 1.0, "{m:?}");
        assert_eq!(m.fast_seek, PRIOR.fast_seek);
    }
}
