//! [`Throttle`]: paces the bytes a backup or restore moves to a rate (RocksDB's
//! `backup_rate_limit`), shared by all its transfer threads. Depends on nothing in the crate.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Paces transfers to `rate` bytes per second; no limit when `None`.
pub struct Throttle {
    rate: Option<u64>,
    /// When the bytes granted so far have been paid for.
    paid_until: Mutex<Instant>,
}

impl Throttle {
    /// A throttle at `rate` bytes per second (`None` or `0`: unlimited).
    pub fn new(rate: Option<u64>) -> Self {
        Throttle {
            rate: rate.filter(|r| *r > 0),
            paid_until: Mutex::new(Instant::now()),
        }
    }

    /// How long a caller moving `n` bytes at `now` waits first; books them.
    pub fn reserve(&self, n: u64, now: Instant) -> Duration {
        let Some(rate) = self.rate else {
            return Duration::ZERO;
        };
        let mut paid = self.paid_until.lock();
        let start = (*paid).max(now);
        *paid = start + Duration::from_secs_f64(n as f64 / rate as f64);
        start - now
    }

    /// Waits until `n` more bytes may move.
    pub fn take(&self, n: u64) {
        let wait = self.reserve(n, Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_to_the_rate_across_callers() {
        let t = Throttle::new(Some(1000));
        let now = Instant::now();
        // The first transfer goes at once; each next one waits for the bytes before it.
        assert_eq!(t.reserve(500, now), Duration::ZERO);
        assert_eq!(t.reserve(500, now), Duration::from_millis(500));
        assert_eq!(t.reserve(10, now), Duration::from_millis(1000));
        // Idle time is not saved up.
        let later = now + Duration::from_secs(10);
        assert_eq!(t.reserve(1000, later), Duration::ZERO);
        assert_eq!(t.reserve(1, later), Duration::from_secs(1));
        for unlimited in [None, Some(0)] {
            let t = Throttle::new(unlimited);
            assert_eq!(t.reserve(u64::MAX, now), Duration::ZERO);
        }
    }
}
