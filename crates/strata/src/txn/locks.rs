//! The point-lock manager of pessimistic transactions (RocksDB's `PointLockManager`): one
//! exclusive lock per key, held by one transaction from the moment it first writes or reads the
//! key for update until it commits or rolls back.
//!
//! Keys hash to stripes, each a map from key to holder under its own mutex, with a condition
//! variable waiters sleep on; a release wakes the stripe's waiters. A waiter gives up at its
//! deadline (`TimedOut`). A lock whose holder has outlived its expiration may be taken over by
//! a waiter (the holder's commit then fails as `Expired`). With deadlock detection on, a
//! transaction about to wait records whom it waits for; if following those edges from the
//! holder leads back to it, the wait would never end, and the request fails at once as `Busy`
//! with the cycle in the message and in the manager's deadlock buffer.
//!
//! Invariants: a key has at most one holder; a transaction waits for at most one key at a
//! time; wait-for edges exist only while their waiter is inside [`LockManager::lock`]. Lock
//! order: a stripe's mutex, then the wait-for graph's; never two stripes at once. Depends on
//! nothing in the engine but `error`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, ErrorRepr, Result};

/// A transaction's identity in the lock manager.
pub type TxnId = u64;

/// A transaction's state as the lock manager sees it: a takeover of an expired holder's lock
/// and that holder's commit race for it, and exactly one wins ([`TxnState::begin_commit`]).
#[derive(Debug, Default)]
pub struct TxnState(AtomicU8);

const ACTIVE: u8 = 0;
const COMMITTING: u8 = 1;
const EXPIRED: u8 = 2;

impl TxnState {
    /// Marks the transaction as committing; `false` if a takeover expired it first (it must
    /// then write nothing).
    pub fn begin_commit(&self) -> bool {
        self.0
            .compare_exchange(ACTIVE, COMMITTING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Marks the transaction as expired; `false` if it is committing (its locks stay).
    fn expire(&self) -> bool {
        match self
            .0
            .compare_exchange(ACTIVE, EXPIRED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(s) => s == EXPIRED,
        }
    }

    /// Whether a takeover expired the transaction.
    pub fn is_expired(&self) -> bool {
        self.0.load(Ordering::Acquire) == EXPIRED
    }
}

struct Holder {
    txn: TxnId,
    /// When the holder's locks may be taken over (its expiration); `None`: never.
    expires: Option<Instant>,
    state: Arc<TxnState>,
}

#[derive(Default)]
struct Stripe {
    locks: Mutex<HashMap<Vec<u8>, Holder>>,
    released: Condvar,
}

/// One detected deadlock: the cycle, as `(waiter, key it waited for, holder)` steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockPath {
    /// The waits of the cycle, starting with the request that found it.
    pub steps: Vec<DeadlockStep>,
    /// When it was found.
    pub at: std::time::SystemTime,
}

/// One wait of a deadlock cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockStep {
    /// The waiting transaction.
    pub waiter: TxnId,
    /// The key it waits for.
    pub key: Vec<u8>,
    /// The transaction holding that key.
    pub holder: TxnId,
}

impl std::fmt::Display for DeadlockPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, s) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(
                f,
                "transaction {} waits for \"{}\" held by transaction {}",
                s.waiter,
                s.key.escape_ascii(),
                s.holder
            )?;
        }
        Ok(())
    }
}

/// How many deadlocks the manager remembers for [`LockManager::deadlocks`].
const DEADLOCK_BUFFER: usize = 16;

/// See the module docs.
pub struct LockManager {
    stripes: Vec<Stripe>,
    hasher: std::collections::hash_map::RandomState,
    detect_deadlocks: bool,
    /// Wait-for edges: waiter → (key, holder).
    waits: Mutex<HashMap<TxnId, (Vec<u8>, TxnId)>>,
    deadlocks: Mutex<VecDeque<DeadlockPath>>,
}

/// What a lock request found in the stripe.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// The key is free, or held by the requester, or by an expired holder: take it.
    Take { stolen_from: Option<TxnId> },
    /// Held by another live transaction.
    Held(TxnId),
}

/// Whether `txn` may take a lock currently held by `holder` at `now`. An expired holder loses
/// it unless it is already committing.
fn inspect(holder: Option<&Holder>, txn: TxnId, now: Instant) -> Found {
    match holder {
        None => Found::Take { stolen_from: None },
        Some(h) if h.txn == txn => Found::Take { stolen_from: None },
        Some(h) if h.expires.is_some_and(|e| e <= now) && h.state.expire() => Found::Take {
            stolen_from: Some(h.txn),
        },
        Some(h) => Found::Held(h.txn),
    }
}

/// The wait-for cycle `waiter` would close by waiting for `key` held by `holder`, if any.
fn cycle(
    waits: &HashMap<TxnId, (Vec<u8>, TxnId)>,
    waiter: TxnId,
    key: &[u8],
    holder: TxnId,
) -> Option<Vec<DeadlockStep>> {
    let mut steps = vec![DeadlockStep {
        waiter,
        key: key.to_vec(),
        holder,
    }];
    let mut seen = HashSet::from([waiter]);
    let mut at = holder;
    while let Some((k, next)) = waits.get(&at) {
        steps.push(DeadlockStep {
            waiter: at,
            key: k.clone(),
            holder: *next,
        });
        if *next == waiter {
            return Some(steps);
        }
        if !seen.insert(at) {
            return None; // a cycle not through `waiter`: someone else's to find
        }
        at = *next;
    }
    None
}

impl LockManager {
    /// A manager with `stripes` stripes (at least 1).
    pub fn new(stripes: usize, detect_deadlocks: bool) -> Self {
        LockManager {
            stripes: (0..stripes.max(1)).map(|_| Stripe::default()).collect(),
            hasher: Default::default(),
            detect_deadlocks,
            waits: Mutex::default(),
            deadlocks: Mutex::default(),
        }
    }

    fn stripe(&self, key: &[u8]) -> &Stripe {
        &self.stripes[(self.hasher.hash_one(key) % self.stripes.len() as u64) as usize]
    }

    /// Takes `key` for `txn` (a no-op if it holds it), waiting up to `timeout` for another
    /// holder to release it (a timeout too large to add to now waits for ever). `expires`: when
    /// `txn`'s locks may be taken over; `state`: its commit/expiry state. Returns the
    /// transaction whose expired lock was taken over, if any. Fails with `TimedOut`, or with
    /// `Busy` on a deadlock (detection on).
    pub fn lock(
        &self,
        txn: TxnId,
        key: &[u8],
        timeout: Duration,
        expires: Option<Instant>,
        state: &Arc<TxnState>,
    ) -> Result<Option<TxnId>> {
        let deadline = Instant::now().checked_add(timeout);
        let stripe = self.stripe(key);
        let mut locks = stripe.locks.lock();
        loop {
            let now = Instant::now();
            match inspect(locks.get(key), txn, now) {
                Found::Take { stolen_from } => {
                    let state = state.clone();
                    locks.insert(
                        key.to_vec(),
                        Holder {
                            txn,
                            expires,
                            state,
                        },
                    );
                    return Ok(stolen_from);
                }
                Found::Held(holder) => {
                    if self.detect_deadlocks {
                        let mut waits = self.waits.lock();
                        if let Some(steps) = cycle(&waits, txn, key, holder) {
                            waits.remove(&txn);
                            drop(waits);
                            let path = DeadlockPath {
                                steps,
                                at: std::time::SystemTime::now(),
                            };
                            let msg = format!("deadlock: {path}");
                            let mut buf = self.deadlocks.lock();
                            if buf.len() == DEADLOCK_BUFFER {
                                buf.pop_front();
                            }
                            buf.push_back(path);
                            return Err(ErrorRepr::Busy(msg).into());
                        }
                        waits.insert(txn, (key.to_vec(), holder));
                    }
                    if deadline.is_some_and(|d| now >= d) {
                        self.stop_waiting(txn);
                        return Err(Error::from(ErrorRepr::TimedOut(format!(
                            "lock wait on \"{}\" timed out after {timeout:?} (held by \
                             transaction {holder})",
                            key.escape_ascii()
                        ))));
                    }
                    // Wake at the deadline, or when the holder's lock expires, or on a release.
                    let mut until = deadline;
                    if let Some(e) = locks.get(key).and_then(|h| h.expires) {
                        let e = e.max(now + Duration::from_millis(1));
                        until = Some(until.map_or(e, |u| u.min(e)));
                    }
                    match until {
                        Some(u) => {
                            stripe.released.wait_until(&mut locks, u);
                        }
                        None => stripe.released.wait(&mut locks),
                    }
                    self.stop_waiting(txn);
                }
            }
        }
    }

    fn stop_waiting(&self, txn: TxnId) {
        if self.detect_deadlocks {
            self.waits.lock().remove(&txn);
        }
    }

    /// Releases `txn`'s locks on `keys` (keys it does not hold are skipped: a lock taken over
    /// after its expiration is the new holder's).
    pub fn unlock<'k>(&self, txn: TxnId, keys: impl IntoIterator<Item = &'k [u8]>) {
        for key in keys {
            let stripe = self.stripe(key);
            let mut locks = stripe.locks.lock();
            if locks.get(key).is_some_and(|h| h.txn == txn) {
                locks.remove(key);
                if self.detect_deadlocks {
                    // Its waiters wait for no one now, even before they wake: a request of
                    // `txn` must not find a cycle through them.
                    self.waits
                        .lock()
                        .retain(|_, (k, holder)| !(*holder == txn && k.as_slice() == key));
                }
                stripe.released.notify_all();
            }
        }
    }

    /// The holder of `key`, if any.
    pub fn holder(&self, key: &[u8]) -> Option<TxnId> {
        self.stripe(key).locks.lock().get(key).map(|h| h.txn)
    }

    /// Keys locked now, over all stripes.
    pub fn num_locks(&self) -> usize {
        self.stripes.iter().map(|s| s.locks.lock().len()).sum()
    }

    /// The most recent deadlocks found (at most 16), oldest first (RocksDB's
    /// `GetDeadlockInfoBuffer`).
    pub fn deadlocks(&self) -> Vec<DeadlockPath> {
        self.deadlocks.lock().iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect_decides_take_or_wait() {
        let now = Instant::now();
        let h = |txn, expires| Holder {
            txn,
            expires,
            state: Arc::default(),
        };
        let committing = |txn, expires| {
            let state = Arc::new(TxnState::default());
            assert!(state.begin_commit());
            Holder {
                txn,
                expires,
                state,
            }
        };
        let past = Some(now - Duration::from_millis(1));
        let future = Some(now + Duration::from_secs(1));
        // (holder, requester, expected)
        let cases: Vec<(Option<Holder>, TxnId, Found)> = vec![
            (None, 1, Found::Take { stolen_from: None }),
            (Some(h(1, None)), 1, Found::Take { stolen_from: None }),
            (Some(h(2, None)), 1, Found::Held(2)),
            (Some(h(2, future)), 1, Found::Held(2)),
            (
                Some(h(2, past)),
                1,
                Found::Take {
                    stolen_from: Some(2),
                },
            ),
            // Expired but already committing: its commit wins the race.
            (Some(committing(2, past)), 1, Found::Held(2)),
        ];
        for (i, (holder, txn, want)) in cases.into_iter().enumerate() {
            assert_eq!(inspect(holder.as_ref(), txn, now), want, "case {i}");
        }
    }

    #[test]
    fn cycles_are_found_through_the_waiter_only() {
        let w = |pairs: &[(TxnId, TxnId)]| -> HashMap<TxnId, (Vec<u8>, TxnId)> {
            pairs
                .iter()
                .map(|&(a, b)| (a, (format!("k{b}").into_bytes(), b)))
                .collect()
        };
        // 1 → 2 closes 2 → 1.
        let c = cycle(&w(&[(2, 1)]), 1, b"k2", 2).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[1].waiter, c[1].holder), (2, 1));
        // 1 → 2 → 3 → 1.
        let c = cycle(&w(&[(2, 3), (3, 1)]), 1, b"k2", 2).unwrap();
        assert_eq!(
            c.iter().map(|s| s.waiter).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        // A chain that ends: no cycle.
        assert!(cycle(&w(&[(2, 3)]), 1, b"k2", 2).is_none());
        // A cycle among others (2 ↔ 3) that 1 only joins: not 1's deadlock.
        assert!(cycle(&w(&[(2, 3), (3, 2)]), 1, b"k2", 2).is_none());
        let p = DeadlockPath {
            steps: c,
            at: std::time::SystemTime::now(),
        };
        assert!(p
            .to_string()
            .starts_with("transaction 1 waits for \"k2\" held by transaction 2"));
    }

    #[test]
    fn a_release_wakes_the_waiter_and_a_timeout_fails_it() {
        let m = Arc::new(LockManager::new(4, false));
        let s = Arc::<TxnState>::default;
        m.lock(1, b"k", Duration::ZERO, None, &s()).unwrap();
        let e = m
            .lock(2, b"k", Duration::from_millis(20), None, &s())
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::TimedOut);
        let m2 = m.clone();
        // `Duration::MAX`: wait for ever (no overflow).
        let waiter = std::thread::spawn(move || m2.lock(2, b"k", Duration::MAX, None, &s()));
        std::thread::sleep(Duration::from_millis(20));
        m.unlock(1, [&b"k"[..]]);
        assert_eq!(waiter.join().unwrap().unwrap(), None);
        assert_eq!(m.holder(b"k"), Some(2));
        // An expired holder's lock is taken over, and the holder learns it.
        m.unlock(2, [&b"k"[..]]);
        let three = s();
        m.lock(3, b"k", Duration::ZERO, Some(Instant::now()), &three)
            .unwrap();
        assert_eq!(
            m.lock(4, b"k", Duration::from_secs(1), None, &s()).unwrap(),
            Some(3)
        );
        assert!(three.is_expired() && !three.begin_commit());
        assert_eq!(m.num_locks(), 1);
    }

    #[test]
    fn a_released_lock_leaves_no_wait_edge_for_a_false_deadlock() {
        let m = Arc::new(LockManager::new(4, true));
        let s = Arc::<TxnState>::default;
        m.lock(2, b"k1", Duration::ZERO, None, &s()).unwrap();
        m.lock(1, b"k2", Duration::ZERO, None, &s()).unwrap();
        let m1 = m.clone();
        // 1 waits for k1, held by 2.
        let waiter =
            std::thread::spawn(move || m1.lock(1, b"k1", Duration::from_secs(10), None, &s()));
        while m.waits.lock().is_empty() {
            std::thread::yield_now();
        }
        // 2 lets k1 go and asks for k2 (held by 1) before 1 has woken: 1 waits for no one now,
        // so this is a wait, not a deadlock.
        m.unlock(2, [&b"k1"[..]]);
        let r = m.lock(2, b"k2", Duration::from_millis(50), None, &s());
        assert_ne!(
            r.as_ref().map_err(|e| e.kind()).err(),
            Some(crate::ErrorKind::Busy)
        );
        assert!(waiter.join().unwrap().is_ok());
        assert!(m.deadlocks().is_empty());
    }
}
