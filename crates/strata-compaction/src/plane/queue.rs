//! The scheduler's priority order (CaaS-LSM §4.3.2, "Compaction Priority Comparison"): jobs
//! rescheduled after a worker was lost first (§4.4), then manual before background, then the
//! upper input level first, then the higher score, then a custom factor (higher first), then
//! the order of submission. Pure: a [`PriorityKey`] sorts best first.

use std::cmp::Reverse;
use std::sync::Arc;

use crate::proto::ControlMetadata;

/// A custom scheduling factor computed from a job's metadata (higher runs first); the default
/// reads `ControlMetadata::priority`.
pub type PriorityHook = Arc<dyn Fn(&ControlMetadata) -> i64 + Send + Sync>;

/// The default hook.
pub fn metadata_priority() -> PriorityHook {
    Arc::new(|m: &ControlMetadata| m.priority)
}

/// Sorts ascending best first.
pub type PriorityKey = (
    Reverse<bool>,
    Reverse<bool>,
    u32,
    Reverse<u64>,
    Reverse<i64>,
    u64,
);

/// `seq` is the submission order.
pub fn key(m: &ControlMetadata, rescheduled: bool, custom: i64, seq: u64) -> PriorityKey {
    let upper = m.input_levels.iter().copied().min().unwrap_or(u32::MAX);
    (
        Reverse(rescheduled),
        Reverse(m.manual),
        upper,
        Reverse(ordered(m.score)),
        Reverse(custom),
        seq,
    )
}

/// An `f64` mapped to a `u64` with the same order (NaN last).
fn ordered(x: f64) -> u64 {
    if x.is_nan() {
        return 0;
    }
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(manual: bool, levels: &[u32], score: f64, priority: i64) -> ControlMetadata {
        ControlMetadata {
            manual,
            input_levels: levels.to_vec(),
            score,
            priority,
            ..Default::default()
        }
    }

    #[test]
    fn order_follows_the_paper() {
        // (name, metadata, rescheduled), listed best first.
        let jobs = [
            ("lost worker's job", meta(false, &[5, 6], 0.1, 0), true),
            ("manual", meta(true, &[4, 5], 0.5, 0), false),
            ("L0, high score", meta(false, &[0, 1], 3.0, 0), false),
            ("L0, low score, custom", meta(false, &[0, 1], 1.0, 9), false),
            ("L0, low score", meta(false, &[0, 1], 1.0, 0), false),
            ("L2 first submitted", meta(false, &[2, 3], 1.0, 0), false),
            ("L2 later", meta(false, &[2, 3], 1.0, 0), false),
            ("L4 negative score", meta(false, &[4, 5], -1.0, 0), false),
        ];
        let mut keys: Vec<(PriorityKey, &str)> = jobs
            .iter()
            .enumerate()
            .rev()
            .map(|(seq, (name, m, r))| (key(m, *r, m.priority, seq as u64), *name))
            .collect();
        keys.sort();
        let order: Vec<&str> = keys.iter().map(|(_, n)| *n).collect();
        let want: Vec<&str> = jobs.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(order, want);
    }

    #[test]
    fn float_order_is_total() {
        let xs = [-1e9, -1.0, -0.0, 0.0, 1e-9, 1.0, 2.5, 1e300];
        for w in xs.windows(2) {
            assert!(ordered(w[0]) <= ordered(w[1]), "{w:?}");
        }
        assert!(ordered(f64::NAN) < ordered(-1e300));
    }
}
