//! The capacity tier's request budget (`Options::capacity_request_budget`): a bound on the
//! object-store requests a database makes, as requests per second and/or dollars per month,
//! that background work stays under and foreground reads never wait for.
//!
//! Every request the tier sends (counted by `CountingStore`, foreground or background) spends
//! from token buckets that refill at the budget's rate (one per request for the requests/s
//! figure, the request's price for the dollar figure), and may drive them negative. Before a
//! compaction job (inside a [`budget_scope`]) sends a request, it waits until every bucket is
//! back to zero: background work fills what foreground reads leave of the budget. Foreground
//! requests are only accounted, and each waiting thread may send one operation's requests (a
//! batch of ranged reads, a part and a completion) once admitted, so the bound is on background
//! work: over a long window it stays within the rate minus the foreground's requests, plus a
//! burst and about one operation per compaction thread. Deletions never wait (S3 does not bill
//! them), nor does anything done under the database's state lock.
//! Compactions into the capacity tier slow down rather than fail; what they could not move
//! waits on the fast tier (`capacity_pending_upload_bytes`), and writes slow then stall if it
//! keeps growing, as they do when compaction falls behind. The waits are counted and reported.
//!
//! The budget itself ([`RequestBudget`]: its figures and syntax) and its report
//! ([`BudgetStats`]) are in `stats/cost.rs`. The refill is a pure function ([`refill`]), tested
//! by a table. Depends on `stats` (request kinds, prices) only.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::stats::cost::{BudgetStats, RequestBudget, SECONDS_PER_MONTH};
use crate::stats::requests::{PriceClass, RequestKind};

/// How many seconds of the budget's rate one burst may spend at once.
const BURST_SECS: f64 = 2.0;

/// A bucket's level after `elapsed` at `rate` units per second, capped at `burst`.
pub fn refill(level: f64, elapsed: Duration, rate: f64, burst: f64) -> f64 {
    (level + elapsed.as_secs_f64() * rate).min(burst)
}

struct Bucket {
    /// Units per second.
    rate: f64,
    level: f64,
    /// What one request of each kind costs in this bucket's unit.
    cost: fn(&RequestBudget, RequestKind) -> f64,
}

struct Buckets {
    budget: RequestBudget,
    buckets: Vec<Bucket>,
    last: Instant,
}

impl Buckets {
    fn new(budget: RequestBudget) -> Self {
        let mut buckets = Vec::new();
        if let Some(r) = budget.requests_per_sec {
            buckets.push(Bucket {
                rate: r,
                level: r * BURST_SECS,
                cost: |_, _| 1.0,
            });
        }
        if let Some(usd) = budget.usd_per_month {
            let rate = usd / SECONDS_PER_MONTH;
            buckets.push(Bucket {
                rate,
                level: rate * BURST_SECS,
                cost: |b, k| {
                    let p = &b.prices;
                    let per_1k = match k.class() {
                        PriceClass::Write => p.write_per_1k,
                        PriceClass::Read => p.read_per_1k,
                        PriceClass::Delete => p.delete_per_1k,
                    };
                    per_1k / 1000.0
                },
            });
        }
        Buckets {
            budget,
            buckets,
            last: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last);
        self.last = now;
        for b in &mut self.buckets {
            b.level = refill(b.level, elapsed, b.rate, b.rate * BURST_SECS);
        }
    }

    /// How long until every bucket is back to zero (none if all are).
    fn wait(&self) -> Option<Duration> {
        self.buckets
            .iter()
            .filter(|b| b.level < 0.0)
            .map(|b| Duration::from_secs_f64(-b.level / b.rate))
            .max()
    }
}

/// The live budget of one capacity tier (no budget: every call returns at once).
#[derive(Default)]
pub struct Budget {
    /// Whether a budget is in force: without one, `spend` and `admit` take no lock.
    active: std::sync::atomic::AtomicBool,
    state: Mutex<Option<Buckets>>,
    waits: AtomicU64,
    wait_micros: AtomicU64,
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("budget", &self.state.lock().as_ref().map(|b| b.budget))
            .finish()
    }
}

impl Budget {
    /// Puts `budget` in force (`None` lifts it).
    pub fn set(&self, budget: Option<RequestBudget>) {
        let mut st = self.state.lock();
        self.active.store(budget.is_some(), Relaxed);
        *st = budget.map(Buckets::new);
    }

    /// Spends one request of `kind` (any thread; never waits).
    pub fn spend(&self, kind: RequestKind) {
        if !self.active.load(Relaxed) {
            return;
        }
        let mut st = self.state.lock();
        if let Some(b) = st.as_mut() {
            b.refill(Instant::now());
            let budget = b.budget;
            for bucket in &mut b.buckets {
                bucket.level -= (bucket.cost)(&budget, kind);
            }
        }
    }

    /// On a background thread, waits until the budget allows another request; at once
    /// elsewhere, or without a budget.
    pub fn admit(&self) {
        if !self.active.load(Relaxed) || !IS_BACKGROUND.with(Cell::get) {
            return;
        }
        let start = Instant::now();
        let mut waited = false;
        loop {
            let wait = {
                let mut st = self.state.lock();
                let Some(b) = st.as_mut() else { break };
                b.refill(Instant::now());
                b.wait()
            };
            match wait {
                None => break,
                Some(w) => {
                    waited = true;
                    std::thread::sleep(w.clamp(Duration::from_millis(1), Duration::from_secs(1)));
                }
            }
        }
        if waited {
            self.waits.fetch_add(1, Relaxed);
            self.wait_micros
                .fetch_add(start.elapsed().as_micros() as u64, Relaxed);
        }
    }

    /// The figures now.
    pub fn stats(&self) -> BudgetStats {
        BudgetStats {
            budget: self.state.lock().as_ref().map(|b| b.budget),
            waits: self.waits.load(Relaxed),
            wait_secs: self.wait_micros.load(Relaxed) as f64 / 1e6,
        }
    }
}

thread_local! {
    static IS_BACKGROUND: Cell<bool> = const { Cell::new(false) };
}

/// While it lives, the calling thread's capacity-tier requests wait for the request budget
/// (`true`: a compaction job's reads and uploads) or do not (`false`: deletions, work done
/// under the database's state lock, which must never wait). Scopes nest; dropping restores
/// the previous setting.
#[must_use = "the scope ends when the guard drops"]
pub struct BudgetScope {
    prev: bool,
}

/// Enters a [`BudgetScope`].
pub fn budget_scope(budgeted: bool) -> BudgetScope {
    BudgetScope {
        prev: IS_BACKGROUND.with(|b| b.replace(budgeted)),
    }
}

impl Drop for BudgetScope {
    fn drop(&mut self) {
        IS_BACKGROUND.with(|b| b.set(self.prev));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_is_linear_and_capped() {
        let s = Duration::from_secs_f64;
        // (level, elapsed s, rate, burst, level after)
        for (level, secs, rate, burst, want) in [
            (0.0, 1.0, 10.0, 20.0, 10.0),
            (-30.0, 1.0, 10.0, 20.0, -20.0),
            (15.0, 1.0, 10.0, 20.0, 20.0),
            (20.0, 0.0, 10.0, 20.0, 20.0),
            (-1.0, 0.05, 10.0, 20.0, -0.5),
        ] {
            let got = refill(level, s(secs), rate, burst);
            assert!(
                (got - want).abs() < 1e-9,
                "{level} +{secs}s at {rate}: {got}"
            );
        }
    }

    #[test]
    fn background_threads_stay_within_the_budget_and_others_never_wait() {
        let budget = std::sync::Arc::new(Budget::default());
        budget.set(Some("100/s".parse().unwrap()));
        // Foreground: 300 requests at once, no wait (the bucket goes into debt).
        let t = Instant::now();
        for _ in 0..300 {
            budget.admit();
            budget.spend(RequestKind::GetRange);
        }
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "foreground waited"
        );
        // Background: the debt (300 - 200 burst = 100 requests, 1 s) is paid first; then 50
        // more requests take about 0.5 s.
        let b = budget.clone();
        let took = std::thread::spawn(move || {
            let _scope = budget_scope(true);
            let t = Instant::now();
            for _ in 0..50 {
                b.admit();
                b.spend(RequestKind::Put);
            }
            t.elapsed()
        })
        .join()
        .unwrap();
        assert!(took >= Duration::from_millis(1400), "{took:?}");
        let s = budget.stats();
        assert!(s.waits > 0 && s.wait_secs >= 1.0, "{s:?}");
    }
}
