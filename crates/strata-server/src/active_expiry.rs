//! The active expiry cycle: while `expired` keyspace events are on (`notify-keyspace-events`
//! with `x` and `K` or `E`), keys are deleted soon after their expiry passes and an `expired`
//! event announces each one, as redis' expire cycle does.
//!
//! Without it strata never deletes an expired key on its own: reads treat it as absent and
//! compaction drops it (`expiry::ExpiryFilter`), which needs no index but tells nobody when.
//! The cycle keeps an in-memory index of (expiry, key) — filled by a scan of the keyspace when
//! the events are turned on (at start or by CONFIG SET) and by every write that sets an expiry
//! meanwhile (`Ctx::put_raw`) — and every [`TICK`] deletes the keys whose time has come: on the
//! engine pool, holding each key's stripe (see `locks`), it re-reads the key and deletes it only
//! if its stored expiry is still due (a key rewritten or given a new TTL since stays), then
//! publishes `expired` once the delete is written. The index holds each key once, at its
//! latest expiry, and is dropped when the events are turned off, so it costs memory (about
//! twice the key's length plus 80 bytes per key with a TTL) only while someone asked for them.
//! A key that expired and was overwritten or deleted before the cycle reached it is not
//! announced (redis announces it when the command finds it expired).
//!
//! Invariants: an `expired` event is published only after the key's deletion was written; a
//! key is deleted only if its stored expiry is due when re-read under its stripe; an index
//! entry that no longer matches the key's expiry is dropped harmlessly. Depends on `store`,
//! `keyspace`, `value`, `notify`, `pubsub`, `server::Shared`; never on commands or the network
//! layer.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use strata::WriteBatch;

use crate::expiry::now_ms;
use crate::notify::{self, Event, EXPIRED};
use crate::server::Shared;
use crate::{keyspace, value};

/// How often the cycle looks for due keys (redis' `hz` 10).
pub const TICK: Duration = Duration::from_millis(100);
/// Most keys one tick deletes (the rest wait for the next tick).
const PER_TICK: usize = 10_000;
/// Keys one step of the initial scan examines.
const SCAN_STEP: usize = 10_000;

/// The keys with an expiry, by expiry, while `expired` events are on: each key once, at the
/// expiry it was last given (a key whose TTL is pushed back again and again — a sliding
/// session — keeps one entry).
#[derive(Default)]
pub struct ExpiryIndex {
    due: Mutex<Due>,
    /// The index is kept (the events are on): writes add to it.
    tracking: AtomicBool,
}

impl ExpiryIndex {
    /// Whether writes should add their expiries.
    pub fn tracking(&self) -> bool {
        self.tracking.load(Relaxed)
    }

    /// Records that `key` expires at `at` (a write set it).
    pub fn add(&self, at: u64, key: &[u8]) {
        if self.tracking() {
            self.due.lock().insert(at, Bytes::copy_from_slice(key));
        }
    }

    /// Keys with an expiry in the index.
    pub fn len(&self) -> usize {
        self.due.lock().by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take_due(&self, now: u64, max: usize) -> Vec<(u64, Bytes)> {
        let mut due = self.due.lock();
        let mut out = Vec::new();
        while out.len() < max {
            match due.by_time.first() {
                Some((at, _)) if *at <= now => {
                    if let Some((at, key)) = due.by_time.pop_first() {
                        due.by_key.remove(&key);
                        out.push((at, key));
                    }
                }
                _ => break,
            }
        }
        out
    }
}

#[derive(Default)]
struct Due {
    by_time: BTreeSet<(u64, Bytes)>,
    by_key: HashMap<Bytes, u64>,
}

impl Due {
    fn insert(&mut self, at: u64, key: Bytes) {
        if let Some(old) = self.by_key.insert(key.clone(), at) {
            self.by_time.remove(&(old, key.clone()));
        }
        self.by_time.insert((at, key));
    }

    fn clear(&mut self) {
        self.by_time.clear();
        self.by_key.clear();
    }
}

/// Whether `flags` ask for `expired` events.
fn wanted(flags: u32) -> bool {
    notify::active(flags) && flags & EXPIRED != 0
}

/// Runs the cycle until the task is aborted (at shutdown).
pub async fn run(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let index = &shared.expiry_index;
        if !wanted(shared.notify.flags()) {
            if index.tracking.swap(false, Relaxed) {
                index.due.lock().clear();
            }
            continue;
        }
        if !index.tracking.swap(true, Relaxed) {
            // Turned on: index what already has an expiry (writes from now on add theirs).
            let s = shared.clone();
            match shared.pool.run(move || scan(&s)).await {
                Ok(Ok(found)) => {
                    let mut due = index.due.lock();
                    for (at, key) in found {
                        // A write since the scan started knows the newer expiry.
                        if !due.by_key.contains_key(&key) {
                            due.insert(at, key);
                        }
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!("active expiry: scanning the keyspace failed: {e}");
                    index.tracking.store(false, Relaxed);
                    continue;
                }
                Err(_) => return,
            }
        }
        // A replica deletes nothing: the writer's expiry deletes reach it through the log.
        if shared.store.is_replica() {
            continue;
        }
        let due = index.take_due(now_ms(), PER_TICK);
        if due.is_empty() {
            continue;
        }
        let s = shared.clone();
        let expired = match shared.pool.run(move || expire(&s, due)).await {
            Ok(e) => e,
            Err(_) => return,
        };
        let flags = shared.notify.flags();
        let events: Vec<Event> = expired
            .into_iter()
            .map(|key| Event {
                class: EXPIRED,
                name: "expired",
                key,
            })
            .collect();
        shared.pubsub.deliver(
            notify::publishes(flags, &events),
            shared.limits.pubsub_output_limit(),
        );
    }
}

/// Every key with an expiry, expired or not (the engine keeps expired keys until compaction).
fn scan(shared: &Shared) -> Result<Vec<(u64, Bytes)>, crate::store::StoreError> {
    let mut found = Vec::new();
    let mut from: Option<Vec<u8>> = None;
    loop {
        // `now` 0: nothing counts as expired, so already-expired keys are found too.
        let next = shared
            .store
            .scan(from.as_deref(), SCAN_STEP, 0, |k, _, at| {
                if let Some(at) = at {
                    found.push((at, Bytes::copy_from_slice(k)));
                }
            })?;
        match next {
            Some(n) => from = Some(n),
            None => return Ok(found),
        }
    }
}

/// Deletes the keys of `due` whose stored expiry is still due; returns them.
fn expire(shared: &Shared, due: Vec<(u64, Bytes)>) -> Vec<Bytes> {
    let mut out = Vec::new();
    let locks = shared.store.locks();
    for (_, key) in due {
        let _guard = locks.lock_keys(&[&key]);
        let now = now_ms();
        let dk = keyspace::data_key(&key);
        let raw = match shared.store.get_opt(&Default::default(), &dk) {
            Ok(Some(raw)) => raw,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!("active expiry: reading a key failed: {e}");
                continue;
            }
        };
        if !matches!(value::expiry_of(&raw), Ok(Some(at)) if at <= now) {
            continue;
        }
        let mut batch = WriteBatch::default();
        batch.delete(&dk);
        match shared.store.write(batch) {
            Ok(()) => {
                shared
                    .expired_removed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                out.push(key);
            }
            Err(e) => tracing::warn!("active expiry: deleting an expired key failed: {e}"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_yields_due_keys_in_expiry_order_only_while_tracking() {
        let ix = ExpiryIndex::default();
        ix.add(5, b"ignored");
        assert!(ix.is_empty(), "not tracking");
        ix.tracking.store(true, Relaxed);
        ix.add(30, b"c");
        ix.add(10, b"a");
        ix.add(5, b"b");
        ix.add(20, b"b"); // its TTL moved: one entry, the latest
        assert_eq!(ix.len(), 3);
        let keys = |v: Vec<(u64, Bytes)>| v.into_iter().map(|(_, k)| k).collect::<Vec<_>>();
        assert_eq!(keys(ix.take_due(20, 10)), [&b"a"[..], b"b"]);
        assert_eq!(keys(ix.take_due(100, 0)), Vec::<Bytes>::new(), "max 0");
        assert_eq!(keys(ix.take_due(100, 10)), [&b"c"[..]]);
        assert!(ix.is_empty());
    }
}
