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
//! stripes of the keys they read, like writers (see `commands::CommandSpec::lock_scope`). Locks are held on engine (blocking-pool) threads only, never
//! across an `.await`.
//! Depends on nothing else in the crate.

use parking_lot::{Mutex, MutexGuard};
use xxhash_rust::xxh3::xxh3_64;

/// A fixed array of mutexes; a key maps to one stripe by hash.
pub struct KeyLocks {
    stripes: Box<[Mutex<()>]>,
}

/// Guards held for a multi-key operation, released on drop.
pub struct MultiGuard<'a> {
    _guards: Vec<MutexGuard<'a, ()>>,
}

impl KeyLocks {
    /// `n` stripes, rounded up to a power of two (at least 1).
    pub fn new(n: usize) -> Self {
        let n = n.max(1).next_power_of_two();
        KeyLocks {
            stripes: (0..n).map(|_| Mutex::new(())).collect(),
        }
    }

    fn index(&self, key: &[u8]) -> usize {
        (xxh3_64(key) as usize) & (self.stripes.len() - 1)
    }

    /// Locks the stripe of one key.
    pub fn lock(&self, key: &[u8]) -> MutexGuard<'_, ()> {
        self.stripes[self.index(key)].lock()
    }

    /// Locks the stripes of several keys, each distinct stripe once, in ascending order.
    pub fn lock_keys<K: AsRef<[u8]>>(&self, keys: &[K]) -> MultiGuard<'_> {
        let mut idx: Vec<usize> = keys.iter().map(|k| self.index(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        MultiGuard {
            _guards: idx.into_iter().map(|i| self.stripes[i].lock()).collect(),
        }
    }

    /// [`KeyLocks::lock_keys`] without waiting: `None` if any stripe is held (none is then
    /// kept). For callers that must not block (inline execution on the event loop).
    pub fn try_lock_keys<K: AsRef<[u8]>>(&self, keys: &[K]) -> Option<MultiGuard<'_>> {
        let mut idx: Vec<usize> = keys.iter().map(|k| self.index(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        let mut guards = Vec::with_capacity(idx.len());
        for i in idx {
            guards.push(self.stripes[i].try_lock()?);
        }
        Some(MultiGuard { _guards: guards })
    }

    /// Locks every stripe, in ascending order.
    pub fn lock_all(&self) -> MultiGuard<'_> {
        MultiGuard {
            _guards: self.stripes.iter().map(|m| m.lock()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn try_lock_keys_fails_on_a_held_stripe_and_keeps_nothing() {
        let l = KeyLocks::new(64);
        let held = l.lock_keys(&[b"b"]);
        assert!(l.try_lock_keys(&[b"a", b"b"]).is_none());
        drop(held);
        let g = l.try_lock_keys(&[b"a", b"b", b"a"]).expect("free stripes");
        assert!(l.try_lock_keys(&[b"a"]).is_none());
        drop(g);
        assert!(l.try_lock_keys(&[b"a"]).is_some());
    }

    #[test]
    fn duplicate_keys_do_not_self_deadlock() {
        let l = KeyLocks::new(4);
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
