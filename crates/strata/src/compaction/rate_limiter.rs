//! A token-bucket limiter on background write bandwidth (RocksDB's `rate_limiter`): compaction
//! output writes ask for tokens and wait when the bucket is empty. Refills every 10 ms.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A token bucket holding up to 10 ms of writes, refilled at a fixed rate; see the module docs.
pub struct RateLimiter {
    bytes_per_sec: u64,
    state: Mutex<(f64, Instant)>,
}

impl RateLimiter {
    /// A limiter admitting `bytes_per_sec` bytes per second.
    pub fn new(bytes_per_sec: u64) -> Self {
        RateLimiter {
            bytes_per_sec,
            state: Mutex::new((0.0, Instant::now())),
        }
    }

    /// Blocks until `bytes` may be written.
    pub fn request(&self, bytes: u64) {
        let burst = (self.bytes_per_sec as f64 / 100.0).max(bytes as f64);
        loop {
            let wait = {
                let mut s = self.state.lock();
                let now = Instant::now();
                let refill = now.duration_since(s.1).as_secs_f64() * self.bytes_per_sec as f64;
                s.0 = (s.0 + refill).min(burst);
                s.1 = now;
                if s.0 >= bytes as f64 {
                    s.0 -= bytes as f64;
                    return;
                }
                (bytes as f64 - s.0) / self.bytes_per_sec as f64
            };
            std::thread::sleep(Duration::from_secs_f64(wait.min(0.1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_requests_larger_than_the_burst() {
        // The burst at 10 MiB/s is 100 KiB; a 1 MiB request is admitted (it does not wait
        // forever for a bucket that can never hold it) and pays for its bytes: two of them
        // take at least ~0.1 s. Only a lower bound is checked (a loaded machine is slower).
        let r = RateLimiter::new(10 << 20);
        let t = Instant::now();
        r.request(1 << 20);
        r.request(1 << 20);
        assert!(
            t.elapsed() >= std::time::Duration::from_millis(80),
            "{:?}",
            t.elapsed()
        );
    }
}
