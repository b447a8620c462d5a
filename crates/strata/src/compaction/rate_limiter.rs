//! A token-bucket limiter on background write bandwidth (RocksDB's `rate_limiter`): compaction
//! output writes ask for tokens and wait when the bucket is empty. Refills every 10 ms.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

pub struct RateLimiter {
    bytes_per_sec: u64,
    state: Mutex<(f64, Instant)>,
}

impl RateLimiter {
    pub fn new(bytes_per_sec: u64) -> Self {
        RateLimiter {
            bytes_per_sec,
            state: Mutex::new((0.0, Instant::now())),
        }
    }

    /// The configured rate.
    pub fn rate(&self) -> u64 {
        self.bytes_per_sec
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
        let r = RateLimiter::new(1 << 30);
        r.request(10);
        r.request(1 << 20);
    }
}
