//! The recent rate of object-store requests that INFO's monthly cost is priced at: samples of
//! the engine's request counts taken every [`RequestWindow::EVERY`] (by the server's ticker),
//! kept for [`RequestWindow::SPAN`]. The rate is taken from the oldest sample kept, so it
//! covers the last five minutes (less while the server is younger, from the moment it became
//! ready: opening's one-time requests are left out).
//!
//! Invariant: there is always at least one sample (the one taken when the server became
//! ready, until a newer one is older than the span). Depends on the engine's `RequestCounts`
//! only.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata::stats::RequestCounts;

/// See the module docs.
pub struct RequestWindow {
    samples: Mutex<VecDeque<(Instant, RequestCounts)>>,
}

impl RequestWindow {
    /// How far back the rate looks.
    pub const SPAN: Duration = Duration::from_secs(300);
    /// How often the ticker samples.
    pub const EVERY: Duration = Duration::from_secs(10);

    /// A window whose first sample is `counts` at `at` (the server becoming ready).
    pub fn new(at: Instant, counts: RequestCounts) -> Self {
        RequestWindow {
            samples: Mutex::new(VecDeque::from([(at, counts)])),
        }
    }

    /// Adds the counts at `at`, dropping samples a newer kept one makes older than the span.
    pub fn record(&self, at: Instant, counts: RequestCounts) {
        let mut s = self.samples.lock();
        s.push_back((at, counts));
        // Drop the oldest while the next one still reaches back a whole span.
        while s.len() > 1 && s[1].0 + Self::SPAN <= at {
            s.pop_front();
        }
    }

    /// The requests since the oldest sample kept, and the seconds they took (up to `now`).
    pub fn rate(&self, now: Instant, counts: &RequestCounts) -> (RequestCounts, f64) {
        let s = self.samples.lock();
        let (at, first) = s.front().copied().expect("never empty");
        (
            counts.since(&first),
            now.saturating_duration_since(at).as_secs_f64(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::stats::{RequestCounters, RequestKind};

    fn counts(gets: u64) -> RequestCounts {
        let c = RequestCounters::default();
        c.add(RequestKind::Get, gets);
        c.snapshot()
    }

    #[test]
    fn the_rate_covers_the_last_span_once_the_server_is_older() {
        let t0 = Instant::now();
        let w = RequestWindow::new(t0, counts(100));
        // Younger than the span: since the start.
        let (d, secs) = w.rate(t0 + Duration::from_secs(60), &counts(160));
        assert_eq!((d.total(), secs), (60, 60.0));
        // A burst at the start, then a sample every 10 s at 1 request a second.
        for i in 1..=60u64 {
            w.record(t0 + Duration::from_secs(10 * i), counts(1_000 + 10 * i));
        }
        let now = t0 + Duration::from_secs(600);
        let (d, secs) = w.rate(now, &counts(1_600));
        assert_eq!(secs, 300.0, "the oldest sample kept is one span back");
        assert_eq!(d.total(), 300, "the start's burst has left the window");
        assert!(w.samples.lock().len() <= 31);
    }
}
