//! Garbage collection of table files (the mechanism of `tier::gc`'s rule): [`reap`] deletes
//! fast-tier tables no version holds and queues capacity-tier ones; [`collect_capacity`], on
//! the `strata-gc` thread ([`gc_loop`]) and in waits for idleness, deletes the queued ones that
//! are past their minimum age and kept by no checkpoint record, and releases a copy's shared
//! tables to their source. Capacity-tier work never runs on the flush or compaction threads:
//! it waits on the object store.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::DbInner;
use crate::tier::Tier;

/// The garbage-collection thread: capacity-tier deletions (and a copy's releases of shared
/// tables) run here, never on the flush or compaction threads, because they wait on the object
/// store (the registry is read before each batch) and an unreachable store must not stall
/// flushes.
pub(super) fn gc_loop(inner: &Arc<DbInner>) {
    while !inner.shutting_down.load(Ordering::Acquire) {
        collect_capacity(inner);
        let mut st = inner.state.lock();
        if inner.shutting_down.load(Ordering::Acquire) {
            return;
        }
        inner.bg_cv.wait_for(&mut st, Duration::from_secs(1));
    }
}

/// How long a capacity-tier table a checkpoint keeps (or one met while the registry was
/// unreadable) waits before garbage collection looks at it again.
const GC_RECHECK: Duration = Duration::from_secs(10);

/// Deletes files of tables no live version references, and WAL files no table needs.
/// Capacity-tier tables go through the garbage-collection rule of `tier::gc`: queued here and
/// deleted by [`collect_capacity`] once past the minimum age and not kept by a checkpoint
/// record; a copy's shared tables are queued for release to their source instead.
pub(crate) fn reap(inner: &DbInner) {
    // Under the state lock: never wait for the request budget (deletions are not billed).
    let _budget = crate::storage::object::budget_scope(false);
    let store = inner.tables.store();
    // Fast-tier deletions happen under `state`, so that a concurrent reaper (one waiting for
    // idleness) returns only once the files are gone.
    let (any, released) = {
        let st = inner.state.lock();
        let doomed = st.versions.reaper().take();
        let (now, min_age) = (Instant::now(), inner.opts.capacity_gc_min_age);
        let mut released = Vec::new();
        let mut deferred = inner.deferred.lock();
        for &(id, tier) in &doomed {
            inner.tables.evict(id);
            let shared = tier == Tier::Capacity && store.shared().is_some_and(|s| s.contains(id));
            if tier == Tier::Capacity && !shared {
                // No reader can reach it any more: its cached parts go now, the object later.
                store.forget_cached(id);
                deferred.push(crate::tier::gc::Deferred::new(id, now, min_age));
                continue;
            }
            // A fast-tier table goes now; a shared one only drops its caches here.
            if let Err(e) = store.remove(id, tier) {
                tracing::warn!(table = id, error = %e, "could not delete obsolete table");
            }
            if shared {
                released.push(id);
            }
        }
        (!doomed.is_empty(), released)
    };
    inner.to_release.lock().extend(released);
    if any {
        super::extended::purge_wals(inner);
    }
}

/// Deletes the deferred capacity-tier tables that are due and that no checkpoint keeps (the
/// registry is read afresh for each batch). Outside the state lock: the registry is on the
/// object store.
pub(crate) fn collect_capacity(inner: &DbInner) {
    let _one = inner.collecting.lock();
    let _budget = crate::storage::object::budget_scope(false);
    let store = inner.tables.store();
    let released = std::mem::take(&mut *inner.to_release.lock());
    if let Some(shared) = store.shared() {
        if let Err(e) = shared.release(&released) {
            tracing::warn!(error = %e, "could not release tables shared with the source");
            inner.to_release.lock().extend(released);
        }
    }
    let now = Instant::now();
    let batch = {
        let mut d = inner.deferred.lock();
        if !crate::tier::gc::any_due(&d, now) {
            return;
        }
        std::mem::take(&mut *d)
    };
    let deadline = Some(now + GC_RECHECK);
    let protected = match inner
        .registry
        .protected(crate::checkpoint::now_unix_ms(), deadline)
    {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(registry = %inner.registry.location(), error = %e,
                "could not read the checkpoint registry: capacity-tier deletions wait");
            None
        }
    };
    let plan = crate::tier::gc::plan_deferred(
        batch,
        now,
        protected.as_ref(),
        inner.opts.capacity_gc_min_age,
        GC_RECHECK,
    );
    for id in plan.delete {
        if let Err(e) = inner.tables.store().remove(id, Tier::Capacity) {
            tracing::warn!(table = id, error = %e, "could not delete obsolete table");
        }
    }
    inner.deferred.lock().extend(plan.keep);
}
