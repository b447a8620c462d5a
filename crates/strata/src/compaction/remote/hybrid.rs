//! Local or remote (CaaS-LSM §4.3.2, "Local-Remote Combined Scheduling"): pure decisions over
//! the runner's estimates.
//!
//! Eq. 1: `rate_new = α·rate_old + (1 − α)·actual_time / bytes` (seconds per byte, α = 0.9),
//! kept apart for local and remote execution; remote time is the whole wall time from `start`
//! to a verified result, so it includes queueing and transfer. Eq. 2: `estimate = bytes ·
//! rate`. Rules, in order: the local pool more than 95% busy → remote; the service lacks
//! resources → local (the runner's fallback); the local estimate shorter → local. A side
//! never measured is tried first (local on a job of at most [`FIRST_LOCAL_MAX_BYTES`]; a
//! failed remote job measures it too, by running locally), and every [`EXPLORE_EVERY`]th
//! decision the estimates send local goes remote instead, so a stale remote estimate cannot
//! lock local execution in.
//! Exploration only goes that way: a remote job costs the database little, while a local
//! job explored against the estimates can hold its one core and its link for minutes.
//!
//! Where the code departs from the paper:
//! - The runner keeps eq. 1's rates per output tier. A job writing to the capacity tier pays
//!   the database's link when it runs locally and not when it runs remotely; one rate for
//!   both kinds of job mixes fast-tier merges (cheap locally) with capacity-tier ones
//!   (link-bound locally) and mispredicts both.
//! - Local is measured first on a small job ([`FIRST_LOCAL_MAX_BYTES`]), or on an exploring
//!   decision if no small job comes.
//! - Rule 2 applies only to jobs sent remote to explore or before remote is measured. A job
//!   sent remote by rule 1, by rule 3, for want of a small job to measure local on, or by
//!   remote mode waits in the control plane's queue while the workers are busy
//!   ([`Decision::wait_for_worker`]): a one-core worker
//!   running one job reports ~100% CPU, so under rule 2 every job arriving meanwhile runs
//!   locally — a capacity-tier job across the database's slow link, at many times the remote
//!   time. Eq. 1's remote time includes that queueing, so a worker that stays busy makes
//!   remote look slower and rule 3 brings work back.
//!
//! Depends on nothing but `std`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Eq. 1's weight of the old rate.
pub const ALPHA: f64 = 0.9;
/// Rule 1's threshold of local pool utilization.
pub const BUSY_THRESHOLD: f64 = 0.95;
/// One decision in this many explores the other side.
pub const EXPLORE_EVERY: u64 = 16;
/// Largest job that measures the local side for the first time (once remote is measured):
/// a first local run is the price of learning the local rate, and a capacity-tier job of
/// hundreds of MiB can hold a slow link for a minute to learn what a small one shows. A tier
/// whose jobs are all larger is measured on an exploring decision (one in
/// [`EXPLORE_EVERY`]), so local is never ruled out for good.
pub const FIRST_LOCAL_MAX_BYTES: u64 = 64 << 20;

/// Where compaction jobs run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CompactionMode {
    /// Every job locally (no service).
    #[default]
    Local,
    /// Every eligible job on the service; local only when it fails or refuses.
    Remote,
    /// Per job, by the rules above.
    Hybrid,
}

impl std::str::FromStr for CompactionMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(CompactionMode::Local),
            "remote" => Ok(CompactionMode::Remote),
            "hybrid" => Ok(CompactionMode::Hybrid),
            o => Err(format!(
                "unknown compaction mode {o:?} (local, remote, hybrid)"
            )),
        }
    }
}

/// Where one job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On the database's own compaction pool.
    Local,
    /// On the compaction service.
    Remote,
}

/// Eq. 1 for one side: seconds per input byte.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rate {
    /// Eq. 1's rate in seconds per input byte; `None` until the first sample.
    pub secs_per_byte: Option<f64>,
    /// Executions folded in.
    pub samples: u64,
}

impl Rate {
    /// Folds in one execution (eq. 1); the first sample sets the rate.
    pub fn observe(&mut self, took: Duration, bytes: u64) {
        let r = took.as_secs_f64() / bytes.max(1) as f64;
        self.secs_per_byte = Some(match self.secs_per_byte {
            Some(old) => ALPHA * old + (1.0 - ALPHA) * r,
            None => r,
        });
        self.samples += 1;
    }

    /// Eq. 2.
    pub fn estimate(&self, bytes: u64) -> Option<f64> {
        self.secs_per_byte.map(|r| r * bytes as f64)
    }
}

/// What a decision is made from.
#[derive(Clone, Copy, Debug)]
pub struct DecisionInput {
    /// The configured mode.
    pub mode: CompactionMode,
    /// Local pool utilization over the recent window, 0..=1.
    pub local_busy: f64,
    /// The local rate, measured on jobs writing to this job's output tier.
    pub local: Rate,
    /// The remote rate, measured on jobs writing to this job's output tier.
    pub remote: Rate,
    /// The job's input bytes.
    pub bytes: u64,
    /// This decision explores the side the estimates do not pick.
    pub explore: bool,
}

/// Where a job runs, and whether a remote job waits out busy workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Where the job runs.
    pub place: Place,
    /// Keep the job queued while the workers are above the control plane's CPU limit, rather
    /// than take rule 2's way back (see the module docs). Never set for [`Place::Local`].
    pub wait_for_worker: bool,
}

/// Rules 1 and 3 (rule 2 is the runner's fallback when the service answers "use local").
pub fn decide(d: &DecisionInput) -> Decision {
    let (place, wait_for_worker) = match d.mode {
        CompactionMode::Local => (Place::Local, false),
        CompactionMode::Remote => (Place::Remote, true),
        CompactionMode::Hybrid if d.local_busy > BUSY_THRESHOLD => (Place::Remote, true),
        CompactionMode::Hybrid => match (d.local.estimate(d.bytes), d.remote.estimate(d.bytes)) {
            (_, None) => (Place::Remote, false),
            (None, _) if d.bytes <= FIRST_LOCAL_MAX_BYTES || d.explore => (Place::Local, false),
            (None, _) => (Place::Remote, true),
            (Some(l), Some(r)) if l <= r && d.explore => (Place::Remote, false),
            (Some(l), Some(r)) if l <= r => (Place::Local, false),
            _ => (Place::Remote, true),
        },
    };
    Decision {
        place,
        wait_for_worker,
    }
}

/// Utilization of the local compaction pool over a sliding window: the busy time of local
/// executions that overlap the window, over `threads × window`.
#[derive(Debug)]
pub struct Utilization {
    threads: usize,
    window: Duration,
    /// Executions (start, end); `None`: still running. Oldest first.
    spans: VecDeque<(Instant, Option<Instant>)>,
}

impl Utilization {
    /// Utilization of a pool of `threads` threads (at least 1) over the last `window`.
    pub fn new(threads: usize, window: Duration) -> Self {
        Utilization {
            threads: threads.max(1),
            window,
            spans: VecDeque::new(),
        }
    }

    /// A local execution starts; returns its handle for [`Utilization::end`].
    pub fn begin(&mut self, now: Instant) -> Instant {
        self.spans.push_back((now, None));
        now
    }

    /// Marks the execution begun with handle `started` as ended at `now` (unknown: ignored).
    pub fn end(&mut self, started: Instant, now: Instant) {
        if let Some(s) = self
            .spans
            .iter_mut()
            .find(|(s, e)| *s == started && e.is_none())
        {
            s.1 = Some(now);
        }
    }

    /// Busy fraction of `[now − window, now]`.
    pub fn busy(&mut self, now: Instant) -> f64 {
        let from = now.checked_sub(self.window).unwrap_or(now);
        while let Some((_, Some(e))) = self.spans.front() {
            if *e < from {
                self.spans.pop_front();
            } else {
                break;
            }
        }
        let busy: Duration = self
            .spans
            .iter()
            .map(|(s, e)| e.unwrap_or(now).saturating_duration_since((*s).max(from)))
            .sum();
        let total = self.window.as_secs_f64() * self.threads as f64;
        if total <= 0.0 {
            return 0.0;
        }
        (busy.as_secs_f64() / total).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(secs_per_mib: Option<f64>) -> Rate {
        Rate {
            secs_per_byte: secs_per_mib.map(|r| r / (1 << 20) as f64),
            samples: secs_per_mib.is_some() as u64,
        }
    }

    #[test]
    fn rules_in_order() {
        // (mode, busy, local s/MiB, remote s/MiB, explore, place, waits for a worker)
        use CompactionMode::{Hybrid, Local as AllLocal, Remote as AllRemote};
        use Place::{Local, Remote};
        let cases = [
            (AllLocal, 1.0, None, None, false, Local, false),
            (AllLocal, 0.0, Some(9.0), Some(0.01), true, Local, false),
            (AllRemote, 0.0, Some(0.001), Some(9.0), false, Remote, true),
            (AllRemote, 0.0, None, None, true, Remote, true),
            // Rule 1: a saturated pool sends work away whatever the estimates say, and the
            // job waits for a worker (a local run would queue too).
            (Hybrid, 0.96, Some(0.01), Some(1.0), false, Remote, true),
            (Hybrid, 0.95, Some(0.01), Some(1.0), false, Local, false),
            // Unmeasured sides are tried first; such a remote job may come back (rule 2).
            (Hybrid, 0.0, Some(0.01), None, false, Remote, false),
            (Hybrid, 0.0, None, None, false, Remote, false),
            (Hybrid, 0.0, None, Some(0.01), false, Local, false),
            (Hybrid, 0.0, None, Some(0.01), true, Local, false),
            // Rule 3; remote estimated faster waits for a worker.
            (Hybrid, 0.5, Some(0.02), Some(0.05), false, Local, false),
            (Hybrid, 0.5, Some(0.05), Some(0.02), false, Remote, true),
            (Hybrid, 0.5, Some(0.05), Some(0.05), false, Local, false),
            // Exploration sends a job the estimates keep local to the service, never the
            // other way, and never overrides rule 1; an explored job may come back.
            (Hybrid, 0.5, Some(0.02), Some(0.05), true, Remote, false),
            (Hybrid, 0.5, Some(0.05), Some(0.05), true, Remote, false),
            (Hybrid, 0.5, Some(0.05), Some(0.02), true, Remote, true),
            (Hybrid, 0.99, Some(0.01), Some(0.05), true, Remote, true),
        ];
        for (i, (mode, busy, l, r, explore, place, wait)) in cases.into_iter().enumerate() {
            let d = DecisionInput {
                mode,
                local_busy: busy,
                local: rate(l),
                remote: rate(r),
                bytes: 64 << 20,
                explore,
            };
            let want = Decision {
                place,
                wait_for_worker: wait,
            };
            assert_eq!(decide(&d), want, "case {i}: {d:?}");
        }
    }

    #[test]
    fn local_is_first_measured_on_a_small_job() {
        let d = |bytes: u64| DecisionInput {
            mode: CompactionMode::Hybrid,
            local_busy: 0.0,
            local: Rate::default(),
            remote: rate(Some(0.01)),
            bytes,
            explore: false,
        };
        let at = |bytes| decide(&d(bytes));
        assert_eq!(at(FIRST_LOCAL_MAX_BYTES).place, Place::Local);
        // Larger jobs stay remote, waiting for a busy worker, until local is measured...
        let big = at(FIRST_LOCAL_MAX_BYTES + 1);
        assert_eq!((big.place, big.wait_for_worker), (Place::Remote, true));
        // ... on a small job, or on an exploring decision if none comes.
        let explored = decide(&DecisionInput {
            explore: true,
            ..d(FIRST_LOCAL_MAX_BYTES + 1)
        });
        assert_eq!(explored.place, Place::Local);
    }

    #[test]
    fn eq1_weights_history() {
        let mut r = Rate::default();
        r.observe(Duration::from_secs(10), 10);
        assert_eq!(r.secs_per_byte, Some(1.0));
        r.observe(Duration::from_secs(20), 10);
        // 0.9 · 1 + 0.1 · 2
        assert!((r.secs_per_byte.unwrap() - 1.1).abs() < 1e-9);
        assert!((r.estimate(100).unwrap() - 110.0).abs() < 1e-6);
        assert_eq!(r.samples, 2);
    }

    #[test]
    fn utilization_over_a_window() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut u = Utilization::new(2, s(10));
        assert_eq!(u.busy(t0 + s(10)), 0.0);
        let a = u.begin(t0);
        u.end(a, t0 + s(4));
        let b = u.begin(t0 + s(2));
        // At t0+10: a busy 4 s, b running 8 s, over 2 × 10 s.
        assert!((u.busy(t0 + s(10)) - 0.6).abs() < 1e-9);
        u.end(b, t0 + s(10));
        // At t0+16 the window is [6, 16]: only b's last 4 s.
        assert!((u.busy(t0 + s(16)) - 0.2).abs() < 1e-9);
        // Finished spans older than the window are dropped.
        assert_eq!(u.busy(t0 + s(30)), 0.0);
        assert!(u.spans.is_empty());
    }
}
