//! Latency recording: one HDR histogram per operation type ([`OpHistograms`]), in nanoseconds
//! with three significant digits, and the summary the reports print ([`LatencySummary`]).
//!
//! Invariants: histograms are created lazily, only for the operation types a phase performs;
//! values beyond the range (one minute) are clamped, never dropped, so counts are exact.
//! Depends on `workloads` (for [`OpType`]) and the `hdrhistogram` crate only.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::workloads::OpType;

/// Largest latency recorded exactly, in nanoseconds.
const MAX_NS: u64 = 60_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// A histogram per operation type.
#[derive(Clone, Debug, Default)]
pub struct OpHistograms {
    h: [Option<Histogram<u64>>; OpType::COUNT],
}

impl OpHistograms {
    pub fn record(&mut self, op: OpType, nanos: u64) {
        self.h[op.index()]
            .get_or_insert_with(new_histogram)
            .saturating_record(nanos.max(1));
    }

    /// Records `count` operations that took `nanos` each.
    pub fn record_n(&mut self, op: OpType, nanos: u64, count: u64) {
        self.h[op.index()]
            .get_or_insert_with(new_histogram)
            .saturating_record_n(nanos.max(1), count);
    }

    pub fn get(&self, op: OpType) -> Option<&Histogram<u64>> {
        self.h[op.index()].as_ref().filter(|h| !h.is_empty())
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &OpHistograms) {
        for op in OpType::ALL {
            if let Some(o) = other.get(op) {
                self.h[op.index()]
                    .get_or_insert_with(new_histogram)
                    .add(o)
                    .expect("histograms with equal bounds");
            }
        }
    }

    /// All operation types in one histogram.
    pub fn merge_all_into(&self, into: &mut Histogram<u64>) {
        for h in self.h.iter().flatten() {
            into.add(h).expect("histograms with equal bounds");
        }
    }

    /// Zeroes the counts, keeping the allocations.
    pub fn reset(&mut self) {
        for h in self.h.iter_mut().flatten() {
            h.reset();
        }
    }

    pub fn count(&self, op: OpType) -> u64 {
        self.get(op).map_or(0, |h| h.len())
    }

    pub fn summaries(&self) -> Vec<LatencySummary> {
        OpType::ALL
            .into_iter()
            .filter_map(|op| self.get(op).map(|h| LatencySummary::of(op, h)))
            .collect()
    }
}

/// Latency figures of one operation type, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub op: OpType,
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl LatencySummary {
    pub fn of(op: OpType, h: &Histogram<u64>) -> Self {
        let us = |ns: u64| ns as f64 / 1000.0;
        LatencySummary {
            op,
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_merges_and_summarizes() {
        let mut a = OpHistograms::default();
        for i in 1..=1000u64 {
            a.record(OpType::Read, i * 1000); // 1..=1000 µs
        }
        a.record(OpType::Write, 5_000);
        a.record(OpType::Write, u64::MAX); // clamped, still counted
        let mut b = OpHistograms::default();
        b.merge(&a);
        b.merge(&a);
        assert_eq!(b.count(OpType::Read), 2000);
        assert_eq!(b.count(OpType::Write), 4);
        assert_eq!(b.count(OpType::Scan), 0);
        let s = b.summaries();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].op, OpType::Read);
        assert!((s[0].p50_us - 500.0).abs() < 1.0, "{:?}", s[0]);
        assert!((s[0].p99_us - 990.0).abs() < 2.0, "{:?}", s[0]);
        assert!((s[0].mean_us - 500.5).abs() < 1.0);
        let mut all = new_histogram();
        b.merge_all_into(&mut all);
        assert_eq!(all.len(), 2004);
        b.reset();
        assert_eq!(b.count(OpType::Read), 0);
        assert!(b.summaries().is_empty());
    }
}
