//! Blocked clients (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
//! XREAD BLOCK, XREADGROUP BLOCK): who
//! waits for which keys, in what order, and waking them when a write makes a key ready.
//!
//! A blocking command that finds every key empty registers a [`Waiter`] on its keys (from its
//! handler, while its segment holds the keys' stripes) and its connection parks without a
//! thread or a lock (`connection`). A segment that wrote keys with waiters signals them once its
//! write committed (`executor::finish_segment`): each signal wakes the longest-blocked waiter of
//! the key that is not already woken, which reruns its command. Served, its pop commits and
//! signals the key again, waking the next waiter; finding the key empty again (another client
//! took the element first), it parks again in its place. So clients are served in the order
//! they blocked, as in redis, and a push of n elements serves up to n of them.
//!
//! Invariants: no wake is lost — a waiter registers while holding its keys' stripes, so a write
//! to one of them either committed before (the command saw it and did not block) or signals
//! after it; a waiter leaves every queue when its guard ([`Registration`]) drops (served,
//! timed out, unblocked, disconnected), and a wake it received but did not use passes to the
//! next waiter of its keys. Depends on `resp` only; never on the engine or the network layer.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parking_lot::RwLock;

use crate::fasthash::FastHash;
use crate::resp::Reply;

/// How CLIENT UNBLOCK ends a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unblock {
    /// As if the timeout passed.
    Timeout,
    /// With `-UNBLOCKED client unblocked via CLIENT UNBLOCK`.
    Error,
}

/// What a blocked client waits to do, which decides how writes wake it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitKind {
    /// Take an element (the list and sorted-set pops): each write wakes the first waiter in
    /// line not yet woken; served, its own write wakes the next.
    Pop,
    /// Read a stream without taking anything (XREAD): every write to its keys wakes it.
    Read,
    /// Read a stream for a consumer group (XREADGROUP `>`): woken in line like a pop; one that
    /// finds nothing for its group (the entry went to a consumer of the same group, or the
    /// write was for another group) passes the wake to the next waiter behind it
    /// ([`Blocking::pass_on`]), so a reader of another group behind it is not starved.
    GroupRead,
}

/// One blocked client.
pub struct Waiter {
    pub client_id: u64,
    keys: Vec<Bytes>,
    kind: WaitKind,
    /// Woken by a signal and not yet rerun.
    woken: AtomicBool,
    /// 0: none; 1: timeout; 2: error (CLIENT UNBLOCK).
    unblock: AtomicU8,
    notify: tokio::sync::Notify,
}

impl Waiter {
    /// The keys it waits for.
    pub fn keys(&self) -> &[Bytes] {
        &self.keys
    }

    /// Waits for a signal or CLIENT UNBLOCK (at once if one came since the last wait).
    pub async fn notified(&self) {
        self.notify.notified().await
    }

    /// Takes the wake: the command reruns now (see [`Registration`]'s drop).
    pub fn take_wake(&self) -> bool {
        self.woken.swap(false, Relaxed)
    }

    /// Whether CLIENT UNBLOCK asked the wait to end, and how.
    pub fn unblocked(&self) -> Option<Unblock> {
        match self.unblock.load(Relaxed) {
            1 => Some(Unblock::Timeout),
            2 => Some(Unblock::Error),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Queues {
    by_key: HashMap<Bytes, VecDeque<Arc<Waiter>>, FastHash>,
    by_client: HashMap<u64, Arc<Waiter>, FastHash>,
}

/// The server's blocked clients.
#[derive(Default)]
pub struct Blocking {
    /// Written by registrations and removals; read by signals (which mark a waiter woken with
    /// an atomic), so commits that signal do not serialize on it.
    queues: RwLock<Queues>,
    /// Blocked clients (INFO `blocked_clients`); checked before collecting a segment's keys.
    count: AtomicUsize,
    /// Wakes sent (for tests and INFO).
    pub wakes: AtomicU64,
}

impl Blocking {
    /// Whether any client is blocked (a segment's written keys are collected only then).
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    pub fn blocked_clients(&self) -> usize {
        self.count.load(Relaxed)
    }

    /// Registers `client_id` as waiting to pop from `keys` (behind every earlier waiter of
    /// each).
    pub fn register(self: &Arc<Self>, client_id: u64, keys: &[Bytes]) -> Registration {
        self.register_as(client_id, keys, WaitKind::Pop)
    }

    /// [`Blocking::register`] for a waiter of kind `kind`.
    pub fn register_as(
        self: &Arc<Self>,
        client_id: u64,
        keys: &[Bytes],
        kind: WaitKind,
    ) -> Registration {
        let mut keys = keys.to_vec();
        keys.sort();
        keys.dedup();
        let w = Arc::new(Waiter {
            client_id,
            keys,
            kind,
            woken: AtomicBool::new(false),
            unblock: AtomicU8::new(0),
            notify: tokio::sync::Notify::new(),
        });
        let mut q = self.queues.write();
        for k in &w.keys {
            q.by_key.entry(k.clone()).or_default().push_back(w.clone());
        }
        if q.by_client.insert(client_id, w.clone()).is_none() {
            self.count.fetch_add(1, Relaxed);
        }
        Registration {
            hub: self.clone(),
            waiter: w,
        }
    }

    /// `keys` were written (and committed): wakes, for each, its longest-blocked waiter not
    /// already woken (a pop or a group read), and every XREAD waiting for it.
    pub fn signal<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>) {
        let q = self.queues.read();
        for k in keys {
            let Some(waiters) = q.by_key.get(k) else {
                continue;
            };
            self.wake_first(waiters.iter(), true);
        }
    }

    /// Wakes the first of `waiters` not yet woken that takes (a pop or a group read), and
    /// with `readers` every XREAD among them too. Concurrent signals of one key each claim a
    /// different taker.
    fn wake_first<'a>(&self, waiters: impl Iterator<Item = &'a Arc<Waiter>>, readers: bool) {
        let mut claimed = false;
        for w in waiters {
            let reader = w.kind == WaitKind::Read;
            if (reader && !readers) || (!reader && claimed) {
                continue;
            }
            if w.woken
                .compare_exchange(false, true, Relaxed, Relaxed)
                .is_ok()
            {
                w.notify.notify_one();
                self.wakes.fetch_add(1, Relaxed);
                claimed |= !reader;
            }
            if claimed && !readers {
                return;
            }
        }
    }

    /// A group reader woken found nothing for its group and waits again: the wake goes on to
    /// the first taker behind it in line on each of its keys (never to one before it, so a
    /// wake travels the line once).
    pub fn pass_on(&self, w: &Arc<Waiter>) {
        if w.kind != WaitKind::GroupRead {
            return;
        }
        let q = self.queues.read();
        for k in &w.keys {
            let Some(waiters) = q.by_key.get(k) else {
                continue;
            };
            let behind = waiters.iter().skip_while(|x| !Arc::ptr_eq(x, w)).skip(1);
            self.wake_first(behind, false);
        }
    }

    /// CLIENT UNBLOCK: ends `client_id`'s wait; false if it is not blocked.
    pub fn unblock(&self, client_id: u64, how: Unblock) -> bool {
        let q = self.queues.read();
        let Some(w) = q.by_client.get(&client_id) else {
            return false;
        };
        let v = match how {
            Unblock::Timeout => 1,
            Unblock::Error => 2,
        };
        w.unblock.store(v, Relaxed);
        w.notify.notify_one();
        true
    }

    /// Whether `client_id` is blocked (CLIENT LIST `flags=b`).
    pub fn is_blocked(&self, client_id: u64) -> bool {
        self.queues.read().by_client.contains_key(&client_id)
    }

    fn remove(&self, w: &Arc<Waiter>) {
        let mut q = self.queues.write();
        for k in &w.keys {
            if let Some(waiters) = q.by_key.get_mut(k) {
                waiters.retain(|x| !Arc::ptr_eq(x, w));
                if waiters.is_empty() {
                    q.by_key.remove(k);
                }
            }
        }
        if q.by_client
            .get(&w.client_id)
            .is_some_and(|x| Arc::ptr_eq(x, w))
        {
            q.by_client.remove(&w.client_id);
            self.count.fetch_sub(1, Relaxed);
        }
    }
}

/// A waiter's place in the queues; dropping it leaves them (and passes on an unused wake).
pub struct Registration {
    hub: Arc<Blocking>,
    pub waiter: Arc<Waiter>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.hub.remove(&self.waiter);
        // A wake it did not use goes to the next waiters of its keys. (A wake it used and
        // was served by: the executor signals the keys its command did not write, see
        // `executor::finish_segment`.)
        if self.waiter.take_wake() {
            let keys: Vec<&[u8]> = self.waiter.keys.iter().map(|k| &k[..]).collect();
            self.hub.signal(keys);
        }
    }
}

/// What a blocked command leaves in its session: its place in the queues, when its wait ends,
/// and what it answers then.
pub struct Blocked {
    pub registration: Registration,
    /// `None`: wait forever (a timeout of 0).
    pub deadline: Option<Instant>,
    pub timed_out: Reply,
    /// What the command resolved when it blocked and must use again when it reruns (XREAD's
    /// `$`: the last ID then, not at the rerun).
    pub memo: Vec<Bytes>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn signals_wake_waiters_in_the_order_they_blocked() {
        let hub = Arc::new(Blocking::default());
        let first = hub.register(1, &[b("q")]);
        let second = hub.register(2, &[b("other"), b("q")]);
        assert_eq!(hub.blocked_clients(), 2);
        hub.signal([&b"q"[..]]);
        assert!(first.waiter.woken.load(Relaxed));
        assert!(!second.waiter.woken.load(Relaxed));
        // A second push before the first waiter reran wakes the next one.
        hub.signal([&b"q"[..]]);
        assert!(second.waiter.woken.load(Relaxed));
        // Nobody left to wake: nothing happens.
        hub.signal([&b"q"[..], &b"none"[..]]);
        assert_eq!(hub.wakes.load(Relaxed), 2);
        drop(first);
        drop(second);
        assert_eq!(hub.blocked_clients(), 0);
        assert!(!hub.active());
    }

    #[test]
    fn every_xread_is_woken_and_group_readers_in_line() {
        let hub = Arc::new(Blocking::default());
        let a = hub.register_as(1, &[b("s")], WaitKind::Read);
        let g1 = hub.register_as(2, &[b("s")], WaitKind::GroupRead);
        let c = hub.register_as(3, &[b("s")], WaitKind::Read);
        let g2 = hub.register_as(4, &[b("s")], WaitKind::GroupRead);
        let g3 = hub.register_as(5, &[b("s")], WaitKind::GroupRead);
        hub.signal([&b"s"[..]]);
        assert!(a.waiter.woken.load(Relaxed) && c.waiter.woken.load(Relaxed));
        assert!(g1.waiter.woken.load(Relaxed), "the first group reader");
        assert!(
            !g2.waiter.woken.load(Relaxed),
            "one group reader per signal"
        );
        // The first found nothing for its group: the wake goes to the next one behind it.
        assert!(g1.waiter.take_wake());
        hub.pass_on(&g1.waiter);
        assert!(g2.waiter.woken.load(Relaxed));
        assert!(!g3.waiter.woken.load(Relaxed));
        assert!(!g1.waiter.woken.load(Relaxed), "never back to itself");
        // The last one in line passes to nobody.
        assert!(g2.waiter.take_wake());
        hub.pass_on(&g2.waiter);
        assert!(g3.waiter.take_wake());
        hub.pass_on(&g3.waiter);
        assert!(!g1.waiter.woken.load(Relaxed) && !g2.waiter.woken.load(Relaxed));
        // A pop never passes its wake on this way.
        let p = hub.register(6, &[b("s")]);
        hub.pass_on(&p.waiter);
        assert!(!p.waiter.woken.load(Relaxed));
    }

    #[test]
    fn an_unused_wake_passes_to_the_next_waiter() {
        let hub = Arc::new(Blocking::default());
        let gone = hub.register(1, &[b("q")]);
        let next = hub.register(2, &[b("q")]);
        hub.signal([&b"q"[..]]);
        assert!(gone.waiter.woken.load(Relaxed));
        drop(gone); // disconnected before it reran
        assert!(next.waiter.woken.load(Relaxed), "the wake moved on");
        assert!(next.waiter.take_wake());
        assert!(!next.waiter.take_wake(), "taken once");
        drop(next);
        assert!(hub.queues.read().by_key.is_empty());
    }

    #[test]
    fn a_used_wake_is_not_passed_on() {
        // The next waiter is woken by the served waiter's own write, after it: were leaving
        // to signal too, the third waiter would race the second.
        let hub = Arc::new(Blocking::default());
        let first = hub.register(1, &[b("q")]);
        let second = hub.register(2, &[b("q")]);
        hub.signal([&b"q"[..]]);
        assert!(first.waiter.take_wake()); // it reruns and is served
        drop(first);
        assert!(!second.waiter.woken.load(Relaxed));
    }

    #[test]
    fn client_unblock_reaches_only_blocked_clients() {
        let hub = Arc::new(Blocking::default());
        let r = hub.register(5, &[b("k")]);
        assert!(hub.is_blocked(5));
        assert!(!hub.unblock(6, Unblock::Error));
        assert!(hub.unblock(5, Unblock::Error));
        assert_eq!(r.waiter.unblocked(), Some(Unblock::Error));
        drop(r);
        assert!(!hub.is_blocked(5));
        assert!(!hub.unblock(5, Unblock::Timeout));
    }
}
