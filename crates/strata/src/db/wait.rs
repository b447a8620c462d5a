//! Waiting in the commit pipeline: [`Gate`] (spin, then block on a condition variable, with a
//! notify that costs no lock unless someone sleeps) and [`SpinPolicy`] (how long a waiter spins
//! before it blocks, adapted to whether spinning has paid off lately).
//!
//! Invariants: a waiter whose condition became true is always woken (see [`Gate`] for the
//! argument); at most [`max_spinners`] threads of the process spin at once. Depends on nothing
//! of the engine: the write path (`db::write`) supplies the conditions.

use std::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// How long a long spin (see [`SpinPolicy`]) busy-waits before it blocks. A follower usually
/// waits for one leader's WAL append and memtable insert (a few microseconds), and a blocked
/// follower costs its leader a futex wake inside the critical section and itself a wake-up
/// latency of tens of microseconds on a VM: with only a short spin (200 iterations, about
/// 5 µs), 6% of two writers' waits blocked, and their write p99 was 57 µs against 12 µs with
/// this limit (217k against 313k ops/s, `strata-bench --benchmarks fillrandom --num 1000000
/// --threads 2`). RocksDB bounds its spin-then-yield phase at 100 µs
/// (`write_thread_max_yield_usec`). There is no `sched_yield` phase here: with a runnable
/// background thread or another process on the core, a yield gives the core away for a whole
/// scheduler slice (two writers fell from 162k to 66k ops/s with one). [`max_spinners`] keeps
/// at least one core free of spinners on machines with two or more.
const SPIN_LIMIT: Duration = Duration::from_micros(100);
/// Spin iterations between two looks at the clock.
const SPIN_CHECK: u32 = 32;
/// Spin iterations every waiter may take before the long spin (a few microseconds).
const SHORT_SPIN: u32 = 200;
/// Bounds of [`SpinPolicy::credit`].
const CREDIT_MAX: i32 = 64;
/// Without credit, one wait in this many still takes the long spin, to notice when spinning
/// pays again.
const PROBE_EVERY: u32 = 64;

/// Waiters spinning right now, in the whole process. Only one fewer than the cores may spin at
/// once: a spinner beyond that holds a core the thread it waits for may need (four writers on 2
/// cores spinning at will ran at 0.58x RocksDB with a p99 of 584 µs).
static SPINNING: AtomicUsize = AtomicUsize::new(0);

fn max_spinners() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .saturating_sub(1)
            .max(1)
    })
}

/// Clears [`SpinPolicy::long`] when dropped.
pub(super) struct LongWait<'a>(&'a AtomicBool);

impl Drop for LongWait<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// How the waiters of one commit pipeline spin before they block (RocksDB's `AwaitState` with
/// its adaptation, minus the yield phase). Every waiter spins [`SHORT_SPIN`] iterations; then a
/// long spin of up to [`SPIN_LIMIT`] if long spins have paid off lately (`credit`). They pay
/// when writers hand off to each other within microseconds (two writers: p99 57 -> 12 µs);
/// they do not with sync writers, whose waits are fsyncs and whose spinners take a core from
/// the woken writers forming the next group (16 sync writers: 34–38k -> 22–24k ops/s with an
/// unconditional long spin, 30–33k with this policy).
#[derive(Default)]
pub(crate) struct SpinPolicy {
    /// Set by the front of the queue while it does something slow (an fsync, a stall, a
    /// memtable switch, a barrier's work): no long spin starts, and one under way gives up at
    /// its next look (every [`SPIN_CHECK`] iterations); neither counts against `credit`.
    long: AtomicBool,
    /// +1 for a long spin that saw its condition, −4 for one that timed out, within
    /// ±[`CREDIT_MAX`]: long spins continue while at least four in five succeed.
    credit: AtomicI32,
    /// Waits that found no credit; every [`PROBE_EVERY`]th long-spins anyway.
    probes: AtomicU32,
}

impl SpinPolicy {
    /// Spins until `cond` holds (true) or the policy says to block (false).
    fn spin(&self, cond: &impl Fn() -> bool) -> bool {
        for _ in 0..SHORT_SPIN {
            if cond() {
                return true;
            }
            std::hint::spin_loop();
        }
        if self.long.load(Ordering::Relaxed) {
            // The front is in a slow phase: block without judging the long spin.
            return false;
        }
        if self.credit.load(Ordering::Relaxed) < 0
            && !self
                .probes
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(PROBE_EVERY)
        {
            return false;
        }
        let start = Instant::now();
        let (ok, timed_out) = 'spin: loop {
            for _ in 0..SPIN_CHECK {
                if cond() {
                    break 'spin (true, false);
                }
                std::hint::spin_loop();
            }
            if self.long.load(Ordering::Relaxed) {
                break (false, false);
            }
            if start.elapsed() >= SPIN_LIMIT {
                break (false, true);
            }
        };
        if !ok && !timed_out {
            // Cut short by a slow phase that began meanwhile: no verdict on spinning.
            return false;
        }
        // A racy update is fine: the credit is a hint.
        let c = self.credit.load(Ordering::Relaxed);
        let c = if ok { c + 1 } else { c - 4 };
        self.credit
            .store(c.clamp(-CREDIT_MAX, CREDIT_MAX), Ordering::Relaxed);
        ok
    }

    /// Marks the front of the queue as busy with something slow until the guard is dropped.
    pub(super) fn slow(&self) -> LongWait<'_> {
        self.long.store(true, Ordering::Relaxed);
        LongWait(&self.long)
    }
}

/// Spin, then block until a condition holds. Whoever makes the condition true calls
/// [`Gate::notify`] afterwards.
///
/// A notify costs one fence unless a waiter is asleep: a waiter registers in `sleepers` before
/// its last check of the condition, and the notifier checks `sleepers` after making the
/// condition true, each with a `SeqCst` fence between its write and its read, so at least one
/// of them sees the other's write (the store-buffering pattern). A notifier that sees a sleeper
/// takes the mutex, which the sleeper holds from its last check until it is inside `cv.wait`,
/// so the wake-up cannot be lost. Without this, every hand-off and every group's publish took a
/// mutex that the other writer's core had just touched.
#[derive(Default)]
pub(super) struct Gate {
    mu: Mutex<()>,
    cv: Condvar,
    sleepers: AtomicUsize,
}

impl Gate {
    /// Waits until `cond` holds: spins as `spin` allows (if no more than [`max_spinners`]
    /// threads spin), then blocks.
    pub(super) fn wait(&self, cond: impl Fn() -> bool, spin: &SpinPolicy) {
        if cond() {
            return;
        }
        if SPINNING.fetch_add(1, Ordering::Relaxed) < max_spinners() && spin.spin(&cond) {
            SPINNING.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        SPINNING.fetch_sub(1, Ordering::Relaxed);
        let mut g = self.mu.lock();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        while !cond() {
            self.cv.wait(&mut g);
        }
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) > 0 {
            let _g = self.mu.lock();
            self.cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    /// Two threads hand a token back and forth through two gates, many times, with the spin
    /// phase taken away from one of them now and then (as when another waiter holds the only
    /// spinning slot): a lost wake-up hangs the test.
    #[test]
    fn gates_hand_off_without_losing_wake_ups() {
        const ROUNDS: u64 = 20_000;
        let turn = Arc::new(AtomicU64::new(0));
        let gates = Arc::new([Gate::default(), Gate::default()]);
        let player = |me: u64| {
            let (turn, gates) = (turn.clone(), gates.clone());
            std::thread::spawn(move || {
                let no = SpinPolicy::default();
                for round in 0..ROUNDS {
                    let mine = round * 2 + me;
                    if round % 7 == 0 {
                        // Occupy every spinning slot: this wait goes straight to blocking.
                        SPINNING.fetch_add(max_spinners(), Ordering::Relaxed);
                        gates[me as usize].wait(|| turn.load(Ordering::Acquire) == mine, &no);
                        SPINNING.fetch_sub(max_spinners(), Ordering::Relaxed);
                    } else {
                        gates[me as usize].wait(|| turn.load(Ordering::Acquire) == mine, &no);
                    }
                    turn.store(mine + 1, Ordering::Release);
                    gates[1 - me as usize].notify();
                }
            })
        };
        let (a, b) = (player(0), player(1));
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(turn.load(Ordering::Acquire), ROUNDS * 2);
    }

    /// Long spins that time out use the credit up, and then only every `PROBE_EVERY`th wait
    /// tries one; a slow phase of the front blocks without a verdict; long spins that succeed
    /// earn the credit back.
    #[test]
    fn spin_policy_stops_long_spins_that_do_not_pay() {
        let p = SpinPolicy::default();
        assert!(!p.spin(&|| false)); // times out after SPIN_LIMIT
        assert_eq!(p.credit.load(Ordering::Relaxed), -4);
        // Without credit, one wait in PROBE_EVERY long-spins (and times out again).
        for _ in 0..PROBE_EVERY * 3 {
            assert!(!p.spin(&|| false));
        }
        assert_eq!(p.probes.load(Ordering::Relaxed), PROBE_EVERY * 3);
        assert_eq!(p.credit.load(Ordering::Relaxed), -16);
        {
            let _slow = p.slow();
            for _ in 0..PROBE_EVERY * 2 {
                assert!(!p.spin(&|| false));
            }
        }
        assert_eq!(
            p.credit.load(Ordering::Relaxed),
            -16,
            "slow phases give no verdict"
        );
        assert!(!p.long.load(Ordering::Relaxed), "the guard lowers the flag");
        // A condition that holds only after the short spin: long spins succeed again.
        for _ in 0..(2 * CREDIT_MAX) as u32 * PROBE_EVERY {
            let n = std::cell::Cell::new(0u32);
            let cond = || {
                n.set(n.get() + 1);
                n.get() > SHORT_SPIN + 10
            };
            p.spin(&cond);
        }
        assert!(p.credit.load(Ordering::Relaxed) > 0);
    }

    /// Several waiters on one gate, each for its own target (as groups wait on `published`):
    /// a notify wakes every sleeper, and none is left behind.
    #[test]
    fn gate_wakes_every_waiter_for_its_own_target() {
        const STEPS: u64 = 2_000;
        let gate = Arc::new(Gate::default());
        let level = Arc::new(AtomicU64::new(0));
        let waiters: Vec<_> = (1..=4u64)
            .map(|w| {
                let (gate, level) = (gate.clone(), level.clone());
                std::thread::spawn(move || {
                    let no = SpinPolicy::default();
                    let mut target = w;
                    while target <= STEPS {
                        gate.wait(|| level.load(Ordering::Acquire) >= target, &no);
                        target += 4 + w;
                    }
                })
            })
            .collect();
        for step in 1..=STEPS {
            level.store(step, Ordering::Release);
            gate.notify();
            if step % 64 == 0 {
                std::thread::sleep(Duration::from_micros(200)); // let waiters fall asleep
            }
        }
        for w in waiters {
            w.join().unwrap();
        }
    }

    #[test]
    fn gate_wakes_a_blocked_waiter() {
        let gate = Arc::new(Gate::default());
        let flag = Arc::new(AtomicBool::new(false));
        let (g, f) = (gate.clone(), flag.clone());
        let no = SpinPolicy::default();
        let t = std::thread::spawn(move || g.wait(|| f.load(Ordering::Acquire), &no));
        // Long enough for the waiter to pass its spin phases and block.
        std::thread::sleep(Duration::from_millis(20));
        flag.store(true, Ordering::Release);
        gate.notify();
        t.join().unwrap();
    }
}
