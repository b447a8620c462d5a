//! Striped key locks: the mechanism that makes read-modify-write commands atomic.
//!
//! The invariant every command module relies on (and must keep):
//!
//! > A command that writes a key holds that key's stripe lock from before it reads the key's
//! > current state until its engine write has returned. Commands that write several keys take
//! > all their stripes at once through [`KeyLocks::lock_keys`], which locks distinct stripes in
//! > ascending index order (so no two commands can deadlock); FLUSHDB/FLUSHALL take every stripe.
//!
//! Because the engine applies each write batch atomically and makes it visible before `write`
//! returns, two writers of one key are serialized and each sees the other's complete result.
//! Readers of single records (GET, MGET, EXISTS, TTL, SCAN, ...) take no lock: every key changes
//! in one batch, so they always see a whole value. Readers of collection elements (HGETALL,
//! LRANGE, ZRANGE, SUNION, ...) read the metadata record and then the elements, so they hold the
//! stripes of the keys they read, like writers (see `commands::CommandSpec::lock_scope`).
//!
//! A [`MultiGuard`] owns its stripes (it holds the table by `Arc`, not by borrow), so it can be
//! handed over: an inline segment that commits through a commit group (`commit_group`) gives
//! its guard to the group, whose leader releases it once the group's engine write returned —
//! even if the segment's task is cancelled meanwhile. Otherwise locks are held within
//! synchronous code: on the engine pool, or inline on an event-loop thread between two
//! `.await`s.
//!
//! Waiting: engine-pool threads block in [`KeyLocks::lock_keys`]. Event-loop tasks must not
//! block; they [`KeyLocks::try_lock_keys`], and when a stripe is held they await
//! [`KeyLocks::wait_unlocked`], which every release of a stripe that has waiters wakes (one
//! waiter per release; a woken waiter that loses the race waits again, and is woken by the
//! next release). No wake-up is lost: a waiter registers and counts itself before it looks at
//! the lock again, and a releaser unlocks before it reads the count, each with a SeqCst fence
//! between, so at least one of them sees the other.
//! Depends on nothing else in the crate.

use std::sync::atomic::{fence, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use parking_lot::lock_api::RawMutex as _;
use parking_lot::RawMutex;
use tokio::sync::Notify;
use xxhash_rust::xxh3::xxh3_64;

struct Stripe {
    /// A raw mutex: its owner is a [`MultiGuard`], which may move between threads.
    lock: RawMutex,
    /// Tasks in [`KeyLocks::wait_unlocked`] for this stripe.
    waiters: AtomicUsize,
    notify: Notify,
}

/// A fixed array of mutexes; a key maps to one stripe by hash.
pub struct KeyLocks {
    stripes: Box<[Stripe]>,
}

/// The stripes held for an operation, released on drop (and their waiters woken). Owns them:
/// it may be sent to another thread and dropped there.
pub struct MultiGuard {
    locks: Arc<KeyLocks>,
    /// Indexes of the held stripes, ascending.
    held: Vec<usize>,
}

// A guard may be released on another thread than the one that locked it: parking_lot allows
// that for its raw mutex with the `send_guard` feature (which also rules out its
// `deadlock_detection`, the one mode that tracks owners by thread). Checked at compile time.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<<RawMutex as parking_lot::lock_api::RawMutex>::GuardMarker>();
};

impl Drop for MultiGuard {
    fn drop(&mut self) {
        for &i in &self.held {
            // SAFETY: this guard locked stripe `i` (each index once: `held` is deduplicated and
            // private) and has not unlocked it; with `send_guard` (checked above) the unlock may
            // happen on any thread.
            unsafe { self.locks.stripes[i].lock.unlock() };
        }
        // Pairs with the fence in `wait_unlocked`: every unlock before the counts.
        fence(SeqCst);
        for &i in &self.held {
            let s = &self.locks.stripes[i];
            if s.waiters.load(SeqCst) > 0 {
                s.notify.notify_one();
            }
        }
    }
}

impl MultiGuard {
    /// Whether a task awaits the release of one of the held stripes ([`KeyLocks::wait_unlocked`];
    /// engine-pool threads blocked in [`KeyLocks::lock_keys`] are not counted). A hint: a
    /// waiter may arrive right after.
    pub fn contended(&self) -> bool {
        self.held
            .iter()
            .any(|&i| self.locks.stripes[i].waiters.load(SeqCst) > 0)
    }
}

/// Counts a waiter for as long as it waits, however its wait ends (a connection task can be
/// dropped in the middle, at shutdown).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl KeyLocks {
    /// `n` stripes, rounded up to a power of two (at least 1).
    pub fn new(n: usize) -> Self {
        let n = n.max(1).next_power_of_two();
        KeyLocks {
            stripes: (0..n)
                .map(|_| Stripe {
                    lock: RawMutex::INIT,
                    waiters: AtomicUsize::new(0),
                    notify: Notify::new(),
                })
                .collect(),
        }
    }

    fn index(&self, key: &[u8]) -> usize {
        (xxh3_64(key) as usize) & (self.stripes.len() - 1)
    }

    fn stripes_of<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<usize> {
        let mut idx: Vec<usize> = keys.iter().map(|k| self.index(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        idx
    }

    /// Locks the stripes of several keys, each distinct stripe once, in ascending order.
    pub fn lock_keys<K: AsRef<[u8]>>(self: &Arc<Self>, keys: &[K]) -> MultiGuard {
        let held = self.stripes_of(keys);
        for &i in &held {
            self.stripes[i].lock.lock();
        }
        MultiGuard {
            locks: self.clone(),
            held,
        }
    }

    /// [`KeyLocks::lock_keys`] without waiting: `Err(stripe)` naming a held stripe if any is
    /// held (none is then kept). For callers that must not block (inline execution on the
    /// event loop), which may then await [`KeyLocks::wait_unlocked`] for that stripe.
    pub fn try_lock_keys<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        keys: &[K],
    ) -> Result<MultiGuard, usize> {
        let idx = self.stripes_of(keys);
        let mut g = MultiGuard {
            locks: self.clone(),
            held: Vec::with_capacity(idx.len()),
        };
        for i in idx {
            if !self.stripes[i].lock.try_lock() {
                return Err(i); // `g` releases what it took
            }
            g.held.push(i);
        }
        Ok(g)
    }

    /// Returns once `stripe` was released (or found free) after the call — or at once if a
    /// release's wake-up is still pending from a waiter that left: the caller tries the
    /// stripe again either way, and it may have been taken again meanwhile.
    pub async fn wait_unlocked(&self, stripe: usize) {
        let s = &self.stripes[stripe];
        let notified = s.notify.notified();
        tokio::pin!(notified);
        // Registered before it is counted: a releaser that sees the count finds this waiter.
        notified.as_mut().enable();
        s.waiters.fetch_add(1, SeqCst);
        let _counted = Waiting(&s.waiters);
        // Pairs with the fence in `MultiGuard::drop`.
        fence(SeqCst);
        if s.lock.is_locked() {
            notified.await;
        }
    }

    /// Locks every stripe, in ascending order.
    pub fn lock_all(self: &Arc<Self>) -> MultiGuard {
        let held: Vec<usize> = (0..self.stripes.len()).collect();
        for &i in &held {
            self.stripes[i].lock.lock();
        }
        MultiGuard {
            locks: self.clone(),
            held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn a_guard_knows_when_someone_waits_for_its_stripe() {
        let l = Arc::new(KeyLocks::new(64));
        let held = l.lock_keys(&[b"k"]);
        assert!(!held.contended());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let stripe = l.index(b"k");
            let wait = l.wait_unlocked(stripe);
            tokio::pin!(wait);
            // Polled once: registered and counted, then pending on the held stripe.
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            assert!(held.contended());
        });
        assert!(!held.contended(), "a dropped wait uncounts itself");
    }

    #[test]
    fn try_lock_keys_fails_on_a_held_stripe_and_keeps_nothing() {
        let l = Arc::new(KeyLocks::new(64));
        let held = l.lock_keys(&[b"b"]);
        assert_eq!(
            l.try_lock_keys(&[b"a", b"b"]).err(),
            Some(l.index(b"b")),
            "names the held stripe"
        );
        drop(held);
        let g = l.try_lock_keys(&[b"a", b"b", b"a"]).expect("free stripes");
        assert!(l.try_lock_keys(&[b"a"]).is_err());
        drop(g);
        assert!(l.try_lock_keys(&[b"a"]).is_ok());
    }

    /// A wait dropped before its wake-up (a task cancelled at shutdown) leaves no count
    /// behind, and the next waiter is still woken.
    #[test]
    fn a_cancelled_wait_is_uncounted() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let l = Arc::new(KeyLocks::new(4));
        let stripe = l.index(b"k");
        rt.block_on(async {
            let held = l.lock_keys(&[b"k"]);
            let r = tokio::time::timeout(
                std::time::Duration::from_millis(20),
                l.wait_unlocked(stripe),
            )
            .await;
            assert!(r.is_err(), "the stripe is held: the wait must not end");
            assert_eq!(l.stripes[stripe].waiters.load(SeqCst), 0);
            let wait = l.wait_unlocked(stripe);
            tokio::pin!(wait);
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            drop(held);
            tokio::time::timeout(std::time::Duration::from_secs(10), wait)
                .await
                .expect("woken by the release");
        });
    }

    /// Polls a future once: `Some` if it finished.
    async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        let mut f = Some(f);
        std::future::poll_fn(move |cx| {
            let mut g = f.take().unwrap();
            std::task::Poll::Ready(
                match std::future::Future::poll(std::pin::Pin::new(&mut g), cx) {
                    std::task::Poll::Ready(v) => Some(v),
                    std::task::Poll::Pending => None,
                },
            )
        })
        .await
    }

    /// Tasks that only try stripes and await releases, beside threads that block on them, all
    /// on one hot key: every increment lands (no lost wake-up leaves a task waiting forever,
    /// which the timeout would catch).
    #[test]
    fn waiters_are_woken_by_every_kind_of_release() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let l = Arc::new(KeyLocks::new(8));
        let counter = Arc::new(Mutex::new(0u64));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (l, counter) = (l.clone(), counter.clone());
                rt.spawn(async move {
                    for _ in 0..500 {
                        loop {
                            let busy = match l.try_lock_keys(&[b"hot"]) {
                                Ok(_g) => {
                                    *counter.lock() += 1;
                                    None
                                }
                                Err(stripe) => Some(stripe),
                            };
                            match busy {
                                None => break,
                                Some(stripe) => l.wait_unlocked(stripe).await,
                            }
                        }
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (l, counter) = (l.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let _g = l.lock_keys(&[b"hot"]);
                        *counter.lock() += 1;
                    }
                })
            })
            .collect();
        rt.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(60), async {
                for t in tasks {
                    t.await.unwrap();
                }
            })
            .await
            .expect("a waiter was never woken")
        });
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*counter.lock(), 16 * 500 + 2 * 2000);
    }

    /// A guard taken on one thread and dropped on another releases its stripes and wakes a
    /// waiter there (commit groups release their members' guards on the leader's thread).
    #[test]
    fn a_guard_released_on_another_thread() {
        let l = Arc::new(KeyLocks::new(64));
        let g = l.lock_keys(&[b"a", b"b"]);
        let l2 = l.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let stripe = l.index(b"a");
            let wait = l2.wait_unlocked(stripe);
            tokio::pin!(wait);
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            std::thread::spawn(move || drop(g)).join().unwrap();
            tokio::time::timeout(std::time::Duration::from_secs(10), wait)
                .await
                .expect("woken by the release on the other thread");
        });
        assert!(l.try_lock_keys(&[b"a", b"b"]).is_ok());
    }

    /// The default table (65536 stripes) stays a few MiB.
    #[test]
    fn a_stripe_fits_in_a_cache_line() {
        assert!(
            std::mem::size_of::<Stripe>() <= 64,
            "{}",
            std::mem::size_of::<Stripe>()
        );
    }

    #[test]
    fn duplicate_keys_do_not_self_deadlock() {
        let l = Arc::new(KeyLocks::new(4));
        let _g = l.lock_keys(&[b"a", b"a", b"b"]);
    }

    #[test]
    fn opposite_orders_do_not_deadlock() {
        let l = Arc::new(KeyLocks::new(64));
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        let (a, b) = (format!("k{i}"), format!("k{}", 2000 - i));
                        let keys = if t % 2 == 0 { [a, b] } else { [b, a] };
                        let _g = l.lock_keys(&keys);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    }
}
