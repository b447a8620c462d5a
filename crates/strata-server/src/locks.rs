//! Striped key locks: the mechanism that makes read-modify-write commands atomic.
//!
//! The invariant every command module relies on (and must keep):
//!
//! > A command that writes a key holds that key's stripe lock — or the stripe's chain slot,
//! > while the lock is held by the commit group it joins (below) — from before it reads the
//! > key's current state until its engine write has returned. Commands that write several keys take
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
//!
//! Chaining (hot keys): a stripe whose holder has handed its guard to the commit group being
//! formed is *marked* with that group's epoch ([`MultiGuard::mark`]). While the group is still
//! forming, an inline segment may *chain* on such a stripe instead of waiting for the group's
//! write: it takes the stripe's chain slot ([`KeyLocks::try_lock_keys_or_chain`]), reads
//! through the pending writes of the group's members (`commit_group`), and joins the same
//! group, which releases the slot for the next segment. The slot serializes chained segments
//! of one stripe exactly as the lock serializes holders; the `locks` invariant then holds for
//! the group as a whole: the stripe stays locked from before the first member's read until the
//! write that carries every chained member returned. A chained segment whose group was taken
//! by its leader before it joined is discarded (`commit_group::Outcome::Stale`) and reruns; a
//! mark or slot left from an older group is never current (epochs only grow), so a stale slot
//! grants nothing. A mark and a slot's release wake a waiter of the stripe, as a release does,
//! and [`KeyLocks::wait_unlocked`] returns at once while the stripe can be chained on.
//! Depends on nothing else in the crate.

use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use parking_lot::lock_api::RawMutex as _;
use parking_lot::RawMutex;
use tokio::sync::Notify;
use xxhash_rust::xxh3::xxh3_64;

struct Stripe {
    /// A raw mutex: its owner is a [`MultiGuard`], which may move between threads.
    lock: RawMutex,
    /// The chain slot: `epoch << 1 | taken`, where `epoch` is the commit group the holder's
    /// guard was handed to (0: none yet). A segment may chain on the stripe only by taking
    /// the slot of the current epoch (see the module note).
    chain: AtomicU64,
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
    /// Stripes whose chain slot (of group `epoch`) this guard holds instead, ascending.
    chained: Vec<usize>,
    /// The commit group the chained stripes belong to (0 if none).
    epoch: u64,
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
        self.free_chain_slots();
        // Pairs with the fence in `wait_unlocked`: every unlock before the counts.
        fence(SeqCst);
        self.locks.wake(&self.held);
        self.locks.wake(&self.chained);
    }
}

impl MultiGuard {
    /// The commit group this guard chains into, if it holds any chain slot.
    pub fn chained_epoch(&self) -> Option<u64> {
        (!self.chained.is_empty()).then_some(self.epoch)
    }

    /// A stripe this guard chains on (the one to wait for if its group is gone).
    pub fn chained_stripe(&self) -> Option<usize> {
        self.chained.first().copied()
    }

    /// The stripes this guard chains on, ascending.
    pub fn chained_stripes(&self) -> &[usize] {
        &self.chained
    }

    /// Marks the held stripes as belonging to commit group `epoch` (the guard has just been
    /// handed to it) and wakes a waiter of each, which may now chain. Called under the commit
    /// group's queue lock, which orders marks with the group's end.
    pub fn mark(&self, epoch: u64) {
        for &i in &self.held {
            self.locks.stripes[i].chain.store(epoch << 1, SeqCst);
        }
        fence(SeqCst);
        self.locks.wake(&self.held);
    }

    /// Gives back the chain slots (the segment's writes are in its group, visible to the next
    /// chained segment) and wakes a waiter of each.
    pub fn release_chain_slots(&mut self) {
        self.free_chain_slots();
        fence(SeqCst);
        let chained = std::mem::take(&mut self.chained);
        self.locks.wake(&chained);
    }

    fn free_chain_slots(&self) {
        let taken = self.epoch << 1 | 1;
        for &i in &self.chained {
            // Fails only if a later group marked the stripe meanwhile: the slot is no longer
            // this guard's (and this guard's group is gone).
            let _ = self.locks.stripes[i]
                .chain
                .compare_exchange(taken, taken & !1, SeqCst, SeqCst);
        }
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
                    chain: AtomicU64::new(0),
                    waiters: AtomicUsize::new(0),
                    notify: Notify::new(),
                })
                .collect(),
        }
    }

    /// The stripe of `key`.
    pub fn index(&self, key: &[u8]) -> usize {
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
            chained: Vec::new(),
            epoch: 0,
        }
    }

    /// [`KeyLocks::lock_keys`] without waiting: `Err(stripe)` naming a held stripe if any is
    /// held (none is then kept). For callers that must not block (inline execution on the
    /// event loop), which may then await [`KeyLocks::wait_unlocked`] for that stripe.
    pub fn try_lock_keys<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        keys: &[K],
    ) -> Result<MultiGuard, usize> {
        self.try_lock_keys_or_chain(keys, 0)
    }

    /// [`KeyLocks::try_lock_keys`], except that a held stripe marked with commit group `epoch`
    /// (the group being formed; 0 chains nothing) whose chain slot is free is chained on: the
    /// guard takes the slot instead of the lock (see the module note). `Err(stripe)` as
    /// `try_lock_keys`.
    pub fn try_lock_keys_or_chain<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        keys: &[K],
        epoch: u64,
    ) -> Result<MultiGuard, usize> {
        let idx = self.stripes_of(keys);
        let mut g = MultiGuard {
            locks: self.clone(),
            held: Vec::with_capacity(idx.len()),
            chained: Vec::new(),
            epoch,
        };
        for i in idx {
            let s = &self.stripes[i];
            if s.lock.try_lock() {
                g.held.push(i);
            } else if epoch != 0
                && s.chain
                    .compare_exchange(epoch << 1, epoch << 1 | 1, SeqCst, SeqCst)
                    .is_ok()
            {
                g.chained.push(i);
            } else {
                return Err(i); // `g` releases what it took
            }
        }
        Ok(g)
    }

    /// Wakes one waiter of each of `stripes` that has any (after the caller's release and a
    /// SeqCst fence).
    fn wake(&self, stripes: &[usize]) {
        for &i in stripes {
            let s = &self.stripes[i];
            if s.waiters.load(SeqCst) > 0 {
                s.notify.notify_one();
            }
        }
    }

    /// Returns once `stripe` was released (or found free) after the call, or its chain slot
    /// for commit group `epoch` became free (0: only a release counts) — or at once if a
    /// wake-up is still pending from a waiter that left: the caller tries the stripe again
    /// either way, and it may have been taken again meanwhile.
    pub async fn wait_unlocked(&self, stripe: usize, epoch: u64) {
        let s = &self.stripes[stripe];
        let notified = s.notify.notified();
        tokio::pin!(notified);
        // Registered before it is counted: a releaser that sees the count finds this waiter.
        notified.as_mut().enable();
        s.waiters.fetch_add(1, SeqCst);
        let _counted = Waiting(&s.waiters);
        // Pairs with the fence in `MultiGuard::drop`.
        fence(SeqCst);
        // A free slot of this group or a later one (the caller's epoch may be out of date).
        let slot = s.chain.load(SeqCst);
        let chainable = epoch != 0 && slot & 1 == 0 && slot >> 1 >= epoch;
        if s.lock.is_locked() && !chainable {
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
            chained: Vec::new(),
            epoch: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    #[test]
    fn a_waiter_is_counted_while_it_waits() {
        let l = Arc::new(KeyLocks::new(64));
        let held = l.lock_keys(&[b"k"]);
        assert_eq!(l.stripes[l.index(b"k")].waiters.load(SeqCst), 0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let stripe = l.index(b"k");
            let wait = l.wait_unlocked(stripe, 0);
            tokio::pin!(wait);
            // Polled once: registered and counted, then pending on the held stripe.
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            assert_eq!(l.stripes[stripe].waiters.load(SeqCst), 1);
        });
        assert_eq!(
            l.stripes[l.index(b"k")].waiters.load(SeqCst),
            0,
            "a dropped wait uncounts itself"
        );
        drop(held);
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
                l.wait_unlocked(stripe, 0),
            )
            .await;
            assert!(r.is_err(), "the stripe is held: the wait must not end");
            assert_eq!(l.stripes[stripe].waiters.load(SeqCst), 0);
            let wait = l.wait_unlocked(stripe, 0);
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
                                Some(stripe) => l.wait_unlocked(stripe, 0).await,
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
            let wait = l2.wait_unlocked(stripe, 0);
            tokio::pin!(wait);
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            std::thread::spawn(move || drop(g)).join().unwrap();
            tokio::time::timeout(std::time::Duration::from_secs(10), wait)
                .await
                .expect("woken by the release on the other thread");
        });
        assert!(l.try_lock_keys(&[b"a", b"b"]).is_ok());
    }

    /// A stripe marked with a group's epoch lets one segment at a time chain on it (the slot),
    /// only for that epoch; a discarded chained guard gives its slot back, and the raw lock is
    /// untouched by all of it.
    #[test]
    fn a_marked_stripe_chains_one_segment_at_a_time() {
        let l = Arc::new(KeyLocks::new(64));
        let holder = l.lock_keys(&[b"k"]);
        assert!(
            l.try_lock_keys_or_chain(&[b"k"], 5).is_err(),
            "not marked yet: its holder is still running"
        );
        holder.mark(5);
        let mut first = l
            .try_lock_keys_or_chain(&[&b"k"[..], b"other"], 5)
            .expect("chains");
        assert_eq!(first.chained_epoch(), Some(5));
        assert_eq!(first.chained_stripe(), Some(l.index(b"k")));
        assert!(l.try_lock_keys_or_chain(&[b"k"], 5).is_err(), "slot taken");
        assert!(
            l.try_lock_keys_or_chain(&[b"k"], 6).is_err(),
            "another group"
        );
        assert!(
            l.try_lock_keys(&[b"other"]).is_err(),
            "the free stripe is locked"
        );
        first.release_chain_slots();
        assert_eq!(first.chained_epoch(), None);
        let second = l
            .try_lock_keys_or_chain(&[b"k"], 5)
            .expect("the slot is free again");
        drop(second); // discarded
        assert!(l.try_lock_keys_or_chain(&[b"k"], 5).is_ok());
        assert!(
            l.try_lock_keys(&[b"k"]).is_err(),
            "still held by its holder"
        );
        drop(holder);
        drop(first);
        assert!(l.try_lock_keys(&[&b"k"[..], b"other"]).is_ok());
    }

    /// A chained guard of an old group dropped after a later group marked the stripe does not
    /// free the later group's slot.
    #[test]
    fn a_stale_chain_slot_frees_nothing_of_a_later_group() {
        let l = Arc::new(KeyLocks::new(64));
        let holder = l.lock_keys(&[b"k"]);
        holder.mark(5);
        let stale = l.try_lock_keys_or_chain(&[b"k"], 5).unwrap();
        drop(holder); // group 5 written
        let next = l.try_lock_keys(&[b"k"]).unwrap();
        next.mark(6);
        let _chained = l.try_lock_keys_or_chain(&[b"k"], 6).unwrap();
        drop(stale);
        assert!(
            l.try_lock_keys_or_chain(&[b"k"], 6).is_err(),
            "group 6's slot stays taken"
        );
    }

    /// A waiter given the current epoch is woken when a chain slot of the stripe frees up
    /// (not only by the stripe's release), and does not wait at all when it can chain.
    #[test]
    fn a_waiter_is_woken_when_it_may_chain() {
        let l = Arc::new(KeyLocks::new(64));
        let holder = l.lock_keys(&[b"k"]);
        let stripe = l.index(b"k");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let wait = l.wait_unlocked(stripe, 5);
            tokio::pin!(wait);
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            holder.mark(5);
            tokio::time::timeout(std::time::Duration::from_secs(10), wait)
                .await
                .expect("woken by the mark");
            let mut chained = l.try_lock_keys_or_chain(&[b"k"], 5).unwrap();
            let wait = l.wait_unlocked(stripe, 5);
            tokio::pin!(wait);
            assert!(futures_poll_once(wait.as_mut()).await.is_none());
            chained.release_chain_slots();
            tokio::time::timeout(std::time::Duration::from_secs(10), wait)
                .await
                .expect("woken by the slot's release");
            // Free slot of the current epoch: no wait.
            assert!(futures_poll_once(Box::pin(l.wait_unlocked(stripe, 5)))
                .await
                .is_some());
        });
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
