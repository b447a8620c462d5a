//! The health of an object store as its requests see it ([`StoreHealth`]): `up` until a
//! request fails for good with a transient-class error (connection refused, timeouts, 5xx,
//! after its retries), then `down` until a request succeeds. Transitions are logged once — a
//! WARN when requests start failing (with the error and what is affected), a WARN summary at
//! most every [`SUMMARY_EVERY`] while failures go on, an INFO on recovery with how long the
//! store was down and how many requests failed meanwhile — and read by `INFO`, Prometheus and
//! `DbStats` as gauges. While down, the capacity tier probes the store on its own (one LIST
//! every [`PROBE_EVERY`]), so that an idle database learns it answers again; while up, nothing
//! is sent for health's sake.
//!
//! The transitions are a pure function ([`observe`]) over the state, tested by a table; the
//! mechanism around it keeps the state behind a mutex taken only while down (the fast path of
//! a success while up is one atomic load). Depends on nothing else in the crate.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often a WARN summary is logged while an outage lasts.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(30);

/// How often a store that is down is probed.
pub const PROBE_EVERY: Duration = Duration::from_secs(15);

/// What one request ended with, as health sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<'a> {
    /// It succeeded (or failed in a way that proves the store answers: not found, a refused
    /// conditional write).
    Answered,
    /// It failed for good with a transient-class error: the store did not answer.
    Unreachable {
        /// The request (`put`, `get`, `list`, `upload part`, ...).
        what: &'a str,
        /// The error, as logged.
        error: &'a str,
    },
}

/// The state [`observe`] moves between.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum State {
    /// Requests are answered.
    #[default]
    Up,
    /// Requests fail since `since`.
    Down {
        /// When the first failure was seen.
        since: Instant,
        /// Requests failed for good since then.
        failed: u64,
        /// When the last WARN (the first one, or a summary) was logged.
        last_logged: Instant,
        /// The most recent error.
        last_error: String,
    },
}

/// What to log after an observation.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The first failure of an outage.
    WentDown {
        /// The request that failed.
        what: String,
        /// Its error.
        error: String,
    },
    /// Failures go on: a periodic summary.
    StillDown {
        /// Since the first failure.
        down_for: Duration,
        /// Requests failed so far.
        failed: u64,
        /// The latest error.
        last_error: String,
    },
    /// The store answered again.
    Recovered {
        /// How long it was down.
        down_for: Duration,
        /// Requests that failed meanwhile.
        failed: u64,
    },
}

/// The transition function: the next state after `outcome` at `now`, and what to log.
pub fn observe(state: &State, outcome: &Outcome<'_>, now: Instant) -> (State, Option<Event>) {
    match (state, outcome) {
        (State::Up, Outcome::Answered) => (State::Up, None),
        (State::Up, Outcome::Unreachable { what, error }) => (
            State::Down {
                since: now,
                failed: 1,
                last_logged: now,
                last_error: error.to_string(),
            },
            Some(Event::WentDown {
                what: what.to_string(),
                error: error.to_string(),
            }),
        ),
        (State::Down { since, failed, .. }, Outcome::Answered) => (
            State::Up,
            Some(Event::Recovered {
                down_for: now.saturating_duration_since(*since),
                failed: *failed,
            }),
        ),
        (
            State::Down {
                since,
                failed,
                last_logged,
                ..
            },
            Outcome::Unreachable { error, .. },
        ) => {
            let failed = failed + 1;
            let summary = now.saturating_duration_since(*last_logged) >= SUMMARY_EVERY;
            let next = State::Down {
                since: *since,
                failed,
                last_logged: if summary { now } else { *last_logged },
                last_error: error.to_string(),
            };
            let event = summary.then(|| Event::StillDown {
                down_for: now.saturating_duration_since(*since),
                failed,
                last_error: error.to_string(),
            });
            (next, event)
        }
    }
}

/// The live health of one store (see the module docs).
#[derive(Debug, Default)]
pub struct StoreHealth {
    down: AtomicBool,
    outages: AtomicU64,
    state: Mutex<State>,
}

/// Health figures for reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HealthSnapshot {
    /// Whether the store is down now (its last request failed for good, unanswered).
    pub down: bool,
    /// Seconds since the current outage began (0 while up).
    pub down_secs: f64,
    /// Requests failed for good during the current outage.
    pub failing_requests: u64,
    /// Outages since open (each began with a WARN and, once over, ended with an INFO).
    pub outages: u64,
    /// The current outage's latest error.
    pub last_error: Option<String>,
}

impl StoreHealth {
    /// Records what a request ended with, logging transitions; `store` names the store in
    /// the log (its URL or prefix).
    pub fn record(&self, store: &str, outcome: Outcome<'_>) {
        if outcome == Outcome::Answered && !self.down.load(Relaxed) {
            return;
        }
        let mut st = self.state.lock();
        let (next, event) = observe(&st, &outcome, Instant::now());
        self.down.store(matches!(next, State::Down { .. }), Relaxed);
        *st = next;
        drop(st);
        match event {
            None => {}
            Some(Event::WentDown { what, error }) => {
                self.outages.fetch_add(1, Relaxed);
                tracing::warn!(
                    store,
                    request = %what,
                    %error,
                    "object store unreachable: requests fail after their retries. Affected until it answers: compactions into the capacity tier (their data stays on the fast tier; retried), reads of capacity-tier tables not cached locally (they fail), and WAL syncs to an object-store log location (a failed sync makes the database read-only)"
                );
            }
            Some(Event::StillDown {
                down_for,
                failed,
                last_error,
            }) => tracing::warn!(
                store,
                down_secs = down_for.as_secs(),
                failed_requests = failed,
                error = %last_error,
                "object store still unreachable"
            ),
            Some(Event::Recovered { down_for, failed }) => tracing::info!(
                store,
                down_secs = format!("{:.1}", down_for.as_secs_f64()),
                failed_requests = failed,
                "object store answers again; compactions and uploads that failed meanwhile are retried (a database made read-only by a failed WAL sync must be reopened)"
            ),
        }
    }

    /// Whether the store is down now (one atomic load).
    pub fn is_down(&self) -> bool {
        self.down.load(Relaxed)
    }

    /// The figures now.
    pub fn snapshot(&self) -> HealthSnapshot {
        let st = self.state.lock();
        let outages = self.outages.load(Relaxed);
        match &*st {
            State::Up => HealthSnapshot {
                outages,
                ..Default::default()
            },
            State::Down {
                since,
                failed,
                last_error,
                ..
            } => HealthSnapshot {
                down: true,
                down_secs: since.elapsed().as_secs_f64(),
                failing_requests: *failed,
                outages,
                last_error: Some(last_error.clone()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_log_once_summarise_and_recover() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        let fail = Outcome::Unreachable {
            what: "put",
            error: "connection refused",
        };
        // (outcome, at second, down after, event expected: 0 none, 1 down, 2 summary, 3 up)
        let steps: &[(&Outcome, u64, bool, u8)] = &[
            (&Outcome::Answered, 0, false, 0),
            (&fail, 1, true, 1),
            (&fail, 2, true, 0),
            (&fail, 30, true, 0), // 29 s after the WARN: no summary yet
            (&fail, 31, true, 2),
            (&fail, 40, true, 0),
            (&fail, 61, true, 2),
            (&Outcome::Answered, 70, false, 3),
            (&Outcome::Answered, 71, false, 0),
            (&fail, 80, true, 1), // a new outage
        ];
        let mut st = State::Up;
        for (i, &(o, at, down, ev)) in steps.iter().enumerate() {
            let (next, event) = observe(&st, o, s(at));
            assert_eq!(matches!(next, State::Down { .. }), down, "step {i}");
            let kind = match &event {
                None => 0,
                Some(Event::WentDown { .. }) => 1,
                Some(Event::StillDown { .. }) => 2,
                Some(Event::Recovered { .. }) => 3,
            };
            assert_eq!(kind, ev, "step {i}: {event:?}");
            if let Some(Event::Recovered { down_for, failed }) = event {
                assert_eq!((down_for, failed), (Duration::from_secs(69), 6));
            }
            if let Some(Event::StillDown {
                down_for, failed, ..
            }) = &event
            {
                assert_eq!(*down_for, s(at) - s(1), "step {i}");
                assert!(*failed >= 4, "step {i}");
            }
            st = next;
        }
    }

    #[test]
    fn the_live_health_counts_outages() {
        let h = StoreHealth::default();
        h.record("s3://b", Outcome::Answered);
        assert_eq!(h.snapshot(), HealthSnapshot::default());
        h.record(
            "s3://b",
            Outcome::Unreachable {
                what: "get",
                error: "timed out",
            },
        );
        let s = h.snapshot();
        assert!(s.down && s.failing_requests == 1 && s.outages == 1, "{s:?}");
        assert_eq!(s.last_error.as_deref(), Some("timed out"));
        h.record("s3://b", Outcome::Answered);
        let s = h.snapshot();
        assert!(!s.down && s.outages == 1 && s.last_error.is_none(), "{s:?}");
    }
}
