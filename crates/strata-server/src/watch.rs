//! WATCH: which keys connections watch, and the flag that tells a connection's EXEC that one of
//! them was written after it watched it (optimistic check-and-set, redis' `touchWatchedKey`).
//!
//! [`Watches`] maps each watched user key to the flags of the connections that watch it. Every
//! engine write of the server goes through `store::Store`, which looks up the watchers of its
//! keys before the write ([`Watches::watchers_of`]) and sets their flags once it is applied
//! ([`mark`]) — every flag, for a range deletion (FLUSHDB, FLUSHALL). A write that fails marks
//! nobody, so an EXEC whose commit is retried does not abort itself.
//! A key that expires is not a write; EXEC checks expiry itself (`multi::Exec`, as redis'
//! `isWatchedKeyExpired`).
//!
//! Cost for clients that do not watch: one atomic load per engine write while no connection
//! watches anything (`watching == 0`); while some connection watches, a shared lock of one of
//! 64 shards and a hash lookup per key written.
//!
//! Invariants: (a) a connection registers a key only while it holds the key's stripe (WATCH
//! locks its keys like a write, see `commands::CommandSpec::lock_scope`), and a writer marks
//! while it holds the stripes of the keys it writes — so a write is either applied before the
//! registration (it happened before WATCH) or marks the flag after it; (b) `watching` counts
//! registrations in the map, and a [`Watching`] removes its own when dropped (UNWATCH, EXEC,
//! DISCARD, or the connection closing), so the map never holds a departed connection.
//! Depends on `keyspace` only.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use strata::batch::BatchOp;
use strata::WriteBatch;
use xxhash_rust::xxh3::xxh3_64;

use crate::fasthash::FastHash;
use crate::keyspace;

/// Shards of the watched-key map: writers of different keys rarely meet on one lock.
const SHARDS: usize = 64;

type Shard = RwLock<HashMap<Bytes, Vec<Arc<AtomicBool>>, FastHash>>;

/// The server's watched keys.
pub struct Watches {
    /// Registrations in the map (0: no write looks at it).
    watching: AtomicUsize,
    /// Watched key → the flags of the connections watching it, sharded by key hash; writers
    /// take read locks only.
    shards: Box<[Shard]>,
}

impl Default for Watches {
    fn default() -> Self {
        Watches {
            watching: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
        }
    }
}

impl Watches {
    fn shard(&self, key: &[u8]) -> &Shard {
        &self.shards[(xxh3_64(key) % SHARDS as u64) as usize]
    }

    /// The flags of the connections watching a key that `batch` writes (every flag, for a
    /// range deletion): the caller sets them with [`mark`] once the batch is applied — not
    /// before, so a write that fails (or a commit that is retried) marks nobody. Call
    /// holding the stripes of the batch's keys, and keep holding them until the marks are set
    /// (invariant (a)).
    pub fn watchers_of(&self, batch: &WriteBatch) -> Vec<Arc<AtomicBool>> {
        if self.watching.load(SeqCst) == 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for op in batch.iter() {
            match op {
                BatchOp::Put(k, _) | BatchOp::Delete(k) | BatchOp::Merge(k, _) => {
                    // Element writes of a collection always come with a write of its
                    // metadata record (`collections::access`), which names the key.
                    if let Some(user) = keyspace::user_key(k) {
                        if let Some(flags) = self.shard(user).read().get(user) {
                            out.extend(flags.iter().cloned());
                        }
                    }
                }
                BatchOp::DeleteRange(..) => {
                    return self
                        .shards
                        .iter()
                        .flat_map(|s| s.read().values().flatten().cloned().collect::<Vec<_>>())
                        .collect();
                }
            }
        }
        out
    }

    /// How many (connection, key) registrations there are (INFO `watching_clients` is the
    /// number of connections; this is for tests and statistics).
    pub fn registrations(&self) -> usize {
        self.watching.load(SeqCst)
    }

    fn register(&self, key: &Bytes, flag: &Arc<AtomicBool>) {
        let mut keys = self.shard(key).write();
        keys.entry(key.clone()).or_default().push(flag.clone());
        self.watching.fetch_add(1, SeqCst);
    }

    fn unregister(&self, key: &[u8], flag: &Arc<AtomicBool>) {
        let mut keys = self.shard(key).write();
        if let Some(flags) = keys.get_mut(key) {
            if let Some(i) = flags.iter().position(|f| Arc::ptr_eq(f, flag)) {
                flags.swap_remove(i);
                self.watching.fetch_sub(1, SeqCst);
            }
            if flags.is_empty() {
                keys.remove(key);
            }
        }
    }
}

/// One connection's watched keys (held by its `session::Session` between WATCH and the end
/// of its next EXEC or DISCARD, or UNWATCH).
pub struct Watching {
    watches: Arc<Watches>,
    dirty: Arc<AtomicBool>,
    /// Each watched key and the command time (Unix ms) at which it was watched.
    keys: Vec<(Bytes, u64)>,
}

/// Marks the connections [`Watches::watchers_of`] returned: their next EXEC aborts.
pub fn mark(watchers: Vec<Arc<AtomicBool>>) {
    for f in watchers {
        f.store(true, SeqCst);
    }
}

impl Watching {
    pub fn new(watches: Arc<Watches>) -> Self {
        Watching {
            watches,
            dirty: Arc::new(AtomicBool::new(false)),
            keys: Vec::new(),
        }
    }

    /// Watches `key` from `now` on (a key watched twice keeps its first time, as redis does).
    /// The caller holds the key's stripe (invariant (a)).
    pub fn watch(&mut self, key: &Bytes, now: u64) {
        if self.keys.iter().any(|(k, _)| k == key) {
            return;
        }
        self.watches.register(key, &self.dirty);
        self.keys.push((key.clone(), now));
    }

    /// Whether a watched key was written since it was watched.
    pub fn touched(&self) -> bool {
        self.dirty.load(SeqCst)
    }

    /// The watched keys with the time each was watched.
    pub fn keys(&self) -> &[(Bytes, u64)] {
        &self.keys
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        for (k, _) in &self.keys {
            self.watches.unregister(k, &self.dirty);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn put(keys: &[&str]) -> WriteBatch {
        let mut w = WriteBatch::new();
        for k in keys {
            w.put(keyspace::data_key(k.as_bytes()), "v");
        }
        w
    }

    #[test]
    fn a_write_marks_only_the_connections_watching_its_keys() {
        let reg = Arc::new(Watches::default());
        let mut a = Watching::new(reg.clone());
        let mut c = Watching::new(reg.clone());
        a.watch(&b("x"), 1);
        a.watch(&b("x"), 2);
        c.watch(&b("y"), 1);
        assert_eq!(reg.registrations(), 2, "a key watched twice counts once");
        assert_eq!(a.keys(), &[(b("x"), 1)]);
        mark(reg.watchers_of(&put(&["z", "x"])));
        assert!(a.touched() && !c.touched());
        let mut del = WriteBatch::new();
        del.delete(keyspace::data_key(b"y"));
        mark(reg.watchers_of(&del));
        assert!(c.touched());
        drop(a);
        drop(c);
        assert_eq!(reg.registrations(), 0);
        assert!(
            reg.shards.iter().all(|s| s.read().is_empty()),
            "nothing left of departed connections"
        );
    }

    #[test]
    fn a_range_deletion_marks_everyone_and_nothing_is_marked_when_nobody_watches() {
        let reg = Arc::new(Watches::default());
        assert!(reg.watchers_of(&put(&["x"])).is_empty());
        let mut a = Watching::new(reg.clone());
        a.watch(&b("x"), 1);
        let mut w = WriteBatch::new();
        w.delete_range(keyspace::DB0_START, keyspace::DB0_END);
        mark(reg.watchers_of(&w));
        assert!(a.touched());
        let mut fresh = Watching::new(reg.clone());
        fresh.watch(&b("x"), 3);
        assert!(!fresh.touched(), "marks are per connection and per watch");
    }
}
