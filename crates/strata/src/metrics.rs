//! Latency histograms for embedders' metrics exporters (Prometheus and the like).
//!
//! Owns [`LatencyHistogram`] (lock-free, log2-spaced buckets from 1 µs to ~71 minutes, plus a
//! running sum) and its [`HistogramSnapshot`], whose buckets are cumulative with upper bounds in
//! seconds, the shape Prometheus' text format wants. The engine's histograms live in
//! [`crate::stats::TierStats`] and reach callers through `Db::stats().tier` (e.g.
//! `fast_read_latency`, `capacity_read_latency`), so an exporter needs no engine internals.
//!
//! Invariants: recording is two relaxed atomic adds on the recording thread's stripe (safe on
//! every read path); a snapshot is approximately consistent (its sum may trail its buckets by
//! in-flight records; its count is its last bucket). Depends on nothing else in the crate; the
//! engine never depends on any exporter or server.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// Buckets: bucket `i` counts durations in `[2^i, 2^(i+1))` µs (bucket 0 also holds < 1 µs).
pub const BUCKETS: usize = 32;

/// Stripes of a histogram (and of a `stats::Counter`): at least the cores of the machines we
/// run on.
pub(crate) const STRIPES: usize = 8;

/// One stripe's buckets and sum, on cache lines of their own.
#[repr(align(128))]
#[derive(Default)]
struct Stripe {
    buckets: [AtomicU64; BUCKETS],
    sum_nanos: AtomicU64,
}

/// A latency histogram with log2-spaced buckets in microseconds, striped over cache lines:
/// each thread records into the stripe assigned to it (round-robin on first use), so threads
/// timing reads at once do not bounce one line between cores; a snapshot sums the stripes.
#[derive(Default)]
pub struct LatencyHistogram {
    stripes: [Stripe; STRIPES],
}

/// The calling thread's stripe: threads take stripes round-robin on first use.
pub(crate) fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: usize = NEXT.fetch_add(1, Relaxed) % STRIPES;
    }
    // Stripe 0 from a thread-local destructor, where `MINE` may be gone.
    MINE.try_with(|s| *s).unwrap_or(0)
}

impl LatencyHistogram {
    /// Records one duration.
    #[inline]
    pub fn record(&self, d: Duration) {
        let us = (d.as_micros() as u64).max(1);
        let b = (63 - us.leading_zeros() as usize).min(BUCKETS - 1);
        let s = &self.stripes[stripe()];
        s.buckets[b].fetch_add(1, Relaxed);
        s.sum_nanos.fetch_add(d.as_nanos() as u64, Relaxed);
    }

    /// The current counts and sum, summed over the stripes.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0u64;
        let buckets = (0..BUCKETS)
            .map(|i| {
                cumulative += self
                    .stripes
                    .iter()
                    .map(|s| s.buckets[i].load(Relaxed))
                    .sum::<u64>();
                ((1u64 << (i + 1)) as f64 / 1e6, cumulative)
            })
            .collect();
        let sum_nanos: u64 = self.stripes.iter().map(|s| s.sum_nanos.load(Relaxed)).sum();
        HistogramSnapshot {
            count: cumulative,
            sum_seconds: sum_nanos as f64 / 1e9,
            buckets,
        }
    }
}

/// A histogram's state: `buckets` are `(upper bound in seconds, observations <= it)`,
/// cumulative and ascending; the last bound is finite (add `+Inf` = `count` when exporting).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramSnapshot {
    /// Observations recorded since the histogram was created (the last bucket's count).
    pub count: u64,
    /// Sum of the recorded durations, in seconds.
    pub sum_seconds: f64,
    /// `(upper bound in seconds, observations <= it)` per bucket, cumulative and ascending.
    pub buckets: Vec<(f64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_upper_bounds() {
        let h = LatencyHistogram::default();
        h.record(Duration::from_nanos(300)); // < 1 µs: bucket 0 (<= 2 µs)
        h.record(Duration::from_micros(3)); // [2, 4) µs: bucket 1 (<= 4 µs)
        h.record(Duration::from_millis(5)); // 5000 µs: [4096, 8192) µs
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert_eq!(s.buckets[0], (2e-6, 1));
        assert_eq!(s.buckets[1], (4e-6, 2));
        assert_eq!(s.buckets[11].1, 2);
        assert_eq!(s.buckets[12], (8192e-6, 3));
        assert!((s.sum_seconds - 0.0050033).abs() < 1e-9);
    }
}
