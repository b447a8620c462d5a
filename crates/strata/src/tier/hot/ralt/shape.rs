//! The shape of RALT's small LSM: which runs to merge after a flush. Pure.
//!
//! Size-tiered with fanout 4: a run's *class* is `floor(log4(bytes / base))` (`base` = the
//! flush size). Runs are kept newest first; when the newest run and the runs directly behind it
//! with a class no larger than its own number at least [`FANOUT`], those runs are merged into
//! one, which cascades like a binary counter in base 4. Every byte is rewritten about
//! `log4(total / base)` times, against `total / (4 * base)` times for "merge everything every
//! 4 flushes", which matters because RALT is rewritten whole by each eviction anyway. More than
//! [`MAX_RUNS`] runs (it cannot happen with sane sizes) merges everything.
//! Depends on nothing.

/// Runs of one class merged together.
pub const FANOUT: usize = 4;
/// Upper bound on runs (each costs a bloom probe per `is_hot`).
pub const MAX_RUNS: usize = 24;

fn class(bytes: u64, base: u64) -> u32 {
    let mut c = 0;
    let mut cap = base.max(1);
    while bytes > cap.saturating_mul(FANOUT as u64) && cap < u64::MAX / 4 {
        cap *= FANOUT as u64;
        c += 1;
    }
    c
}

/// How many of the newest runs (sizes newest first) to merge now, if any.
pub fn pick_merge(run_bytes: &[u64], base: u64) -> Option<usize> {
    if run_bytes.len() > MAX_RUNS {
        return Some(run_bytes.len());
    }
    let first = class(*run_bytes.first()?, base);
    let n = run_bytes
        .iter()
        .take_while(|&&b| class(b, base) <= first)
        .count();
    (n >= FANOUT).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_table() {
        for (bytes, want) in [(0, 0), (100, 0), (400, 0), (401, 1), (1600, 1), (1601, 2)] {
            assert_eq!(class(bytes, 100), want, "{bytes}");
        }
    }

    #[test]
    fn pick_merge_table() {
        let cases: [(&[u64], Option<usize>); 9] = [
            (&[], None),
            (&[100], None),
            (&[100, 100, 100], None),
            (&[100, 100, 100, 100], Some(4)),
            (&[100, 100, 100, 1000, 1000, 1000], None),
            (&[1000, 1000, 1000, 1000, 5000], Some(4)),
            (&[100, 90, 120, 80, 100_000], Some(4)),
            (&[1000, 100, 100, 100], Some(4)), // smaller runs behind join a larger newest one
            (&[100, 1000, 100, 100], None),
        ];
        for (runs, want) in cases {
            assert_eq!(pick_merge(runs, 100), want, "{runs:?}");
        }
        assert_eq!(pick_merge(&[1; MAX_RUNS + 1], 100), Some(MAX_RUNS + 1));
    }

    #[test]
    fn cascade_bounds_runs_and_rewrites() {
        // Simulate 1000 flushes of 100 bytes with no deduplication.
        let mut runs: Vec<u64> = Vec::new();
        let mut written = 0u64;
        for _ in 0..1000 {
            runs.insert(0, 100);
            written += 100;
            while let Some(n) = pick_merge(&runs, 100) {
                let merged: u64 = runs.drain(..n).sum();
                written += merged;
                runs.insert(0, merged);
            }
            assert!(runs.len() <= 3 * 6, "{runs:?}");
        }
        let total: u64 = runs.iter().sum();
        assert_eq!(total, 100_000);
        assert!(
            written <= total * 7,
            "write amplification {}",
            written / total
        );
    }
}
