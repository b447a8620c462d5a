//! Making room for a write group: the stall check of the fast path (`room_without_waiting`),
//! the slow path that sleeps for a slowdown, waits for flushes or switches memtables
//! (`make_room_for_write`), memtable switches (`switch_memtable`), and the families a group
//! may write ([`Targets`]: the default family's memtable alone, or one per family with room).
//!
//! Invariants: only the front of the writer queue switches a memtable, after every allocated
//! sequence number is published (`write::quiesce`), so a memtable a leader holds is never
//! sealed under it; a family joins a group only with room now, so a member never waits on a
//! family the leader did not stall for. Lock order as in `write`: writer queue, `state`, `wal`.
//! Depends on `db::family`, `memtable`, `wal`; the group-commit pipeline (`write`) calls it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::Guard;

use super::family::Family;
use super::write::{quiesce, set_bg_error_locked, wal_path};
use super::{DbInner, DbState};
use crate::batch::WriteBatch;
use crate::error::{ErrorRepr, Result};
use crate::memtable::MemTable;
use crate::wal::LogWriter;

/// The active memtable as a leader holds it while its group inserts.
pub(super) type ActiveMem = Guard<Arc<MemTable>>;

/// The fast path of [`make_room_for_write`], without `state` and without touching what readers
/// share (the super-version): the active memtable, if it has room, L0 is below the slowdown
/// trigger and no background error or shutdown is pending. `None`: the write would sleep for a
/// slowdown, wait for a flush, switch memtables (a file creation) or fail — which
/// `WriteOptions::no_slowdown` refuses (a racy hint there: the state may change right after).
fn room_without_waiting(inner: &DbInner, fam: &Family) -> Option<ActiveMem> {
    let c = &inner.commit;
    if c.failed.load(Ordering::Acquire) || inner.shutting_down.load(Ordering::Acquire) {
        return None;
    }
    let mem = fam.active.load();
    let l0 = fam.l0_files.load(Ordering::Acquire);
    (stalling_l0(fam, l0, fam.l0_busy.load(Ordering::Acquire), || {
        fam.fast_bytes.load(Ordering::Acquire)
    }) < fam.opts.level0_slowdown_writes_trigger
        && mem.approximate_size() < fam.opts.write_buffer_size)
        .then_some(mem)
}

/// The L0 tables that count toward write stalls, of `l0` in L0 (`busy` of them taken by a
/// running compaction; `fast_bytes` asked only when it matters). Without LogStore: all. With
/// it: none while deferral (§V-C) has the fast tier buffer the burst's tables, since they are
/// not compacted either; otherwise those no compaction takes yet — after a deferral one
/// compaction takes the whole buffered L0, and counting it would stop writes for its length.
fn stalling_l0(fam: &Family, l0: usize, busy: usize, fast_bytes: impl FnOnce() -> u64) -> usize {
    if l0 < fam.opts.level0_slowdown_writes_trigger {
        return l0;
    }
    match &fam.logstore {
        None => l0,
        Some(ls) if ls.buffers_l0(&fam.opts, l0, fast_bytes()) => 0,
        // The fast path reads `l0` and `busy` without a lock, and a compaction taking L0
        // may have published its count after the flush count read: never below zero.
        Some(_) => l0.saturating_sub(busy),
    }
}

/// The memtables a write group inserts into: the default family's alone (every batch without
/// operations on another family), or one per family the leader's batch writes.
pub(super) enum Targets {
    Default(ActiveMem),
    Families(Vec<(u32, ActiveMem)>),
}

impl Targets {
    /// Adds the families of `batch` not covered yet, if each has room without waiting
    /// ([`room_without_waiting`]); `false` (and nothing added) otherwise. Called by the leader
    /// with the writer queue locked; takes no other lock.
    pub(super) fn extend(&mut self, inner: &DbInner, batch: &WriteBatch) -> bool {
        let missing: Vec<u32> = batch.families().filter(|f| !self.has(*f)).collect();
        let mut added = Vec::with_capacity(missing.len());
        for id in missing {
            let Some(fam) = inner.family(id) else {
                return false;
            };
            match room_without_waiting(inner, &fam) {
                Some(mem) => added.push((id, mem)),
                None => return false,
            }
        }
        let mems = match std::mem::replace(self, Targets::Families(Vec::new())) {
            Targets::Default(mem) => vec![(crate::version::DEFAULT_FAMILY, mem)],
            Targets::Families(mems) => mems,
        };
        let mut mems = mems;
        mems.extend(added);
        *self = Targets::Families(mems);
        true
    }

    fn has(&self, family: u32) -> bool {
        match self {
            Targets::Default(_) => family == crate::version::DEFAULT_FAMILY,
            Targets::Families(mems) => mems.iter().any(|(id, _)| *id == family),
        }
    }

    /// Whether `batch` writes only families these targets have room in.
    pub(super) fn covers(&self, batch: &WriteBatch) -> bool {
        match self {
            Targets::Default(_) => !batch.has_column_families(),
            Targets::Families(_) => batch.families().all(|f| self.has(f)),
        }
    }
}

/// Makes room in every family `batch` writes ([`make_room_for_write`] for each, in id
/// order). A family that does not exist (dropped, or never created) fails the write.
pub(super) fn make_room(inner: &Arc<DbInner>, batch: &WriteBatch) -> Result<Targets> {
    if !batch.has_column_families() {
        return make_room_for_write(inner, &inner.default).map(Targets::Default);
    }
    let families: Vec<Arc<Family>> = batch
        .families()
        .map(|id| {
            inner.family(id).ok_or_else(|| {
                crate::Error::invalid(format!(
                    "column family {id} does not exist (dropped, or of another database)"
                ))
            })
        })
        .collect::<Result<_>>()?;
    let mut mems = Vec::with_capacity(families.len());
    for fam in &families {
        mems.push((fam.id, make_room_for_write(inner, fam)?));
    }
    Ok(Targets::Families(mems))
}

/// Whether a write now would leave the fast path (see [`room_without_waiting`]).
pub(crate) fn would_slow_down(inner: &DbInner) -> bool {
    room_without_waiting(inner, &inner.default).is_none()
}

/// [`would_slow_down`] for `batch`: in any family it writes.
pub(crate) fn batch_would_slow_down(inner: &DbInner, batch: &WriteBatch) -> bool {
    if !batch.has_column_families() {
        return would_slow_down(inner);
    }
    // A family that does not exist fails the write itself.
    batch
        .families()
        .filter_map(|id| inner.family(id))
        .any(|fam| room_without_waiting(inner, &fam).is_none())
}

/// Ensures the memtable has room, stalling or switching memtables as needed, and returns the
/// memtable the group goes to. Called by the leader at the front of the queue (which holds every
/// other writer back), without the queue lock: writers keep joining the queue meanwhile.
pub(super) fn make_room_for_write(inner: &Arc<DbInner>, fam: &Family) -> Result<ActiveMem> {
    let o = &fam.opts;
    if let Some(mem) = room_without_waiting(inner, fam) {
        return Ok(mem);
    }
    let mut slow = Some(inner.commit.spin.slow());
    let mut delayed = false;
    let mut stopped = false;
    loop {
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(ErrorRepr::Closed.into());
        }
        if fam.dropped.load(Ordering::Acquire) {
            return Err(crate::Error::invalid(format!(
                "column family {:?} was dropped",
                fam.name
            )));
        }
        let mut st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        // Published under the lock held here (`Family::publish_l0`): the fast path's state.
        let l0 = stalling_l0(
            fam,
            fam.l0_files.load(Ordering::Acquire),
            fam.l0_busy.load(Ordering::Acquire),
            || fam.fast_bytes.load(Ordering::Acquire),
        );
        if !delayed && l0 >= o.level0_slowdown_writes_trigger {
            drop(st);
            let t = Instant::now();
            std::thread::sleep(o.slowdown_delay);
            inner.stats.slowdowns.fetch_add(1, Ordering::Relaxed);
            inner
                .stats
                .stall_micros
                .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
            delayed = true;
            continue;
        }
        let fs = st.fam(fam.id);
        if fs.mem.approximate_size() < o.write_buffer_size {
            return Ok(Guard::from_inner(fs.mem.clone()));
        }
        if fs.imms.len() + 1 >= o.max_write_buffer_number || l0 >= o.level0_stop_writes_trigger {
            let t = Instant::now();
            // One stop per stall, however many waits it takes.
            if !stopped {
                inner.stats.stops.fetch_add(1, Ordering::Relaxed);
                stopped = true;
            }
            inner.bg_cv.notify_all();
            inner.bg_cv.wait_for(&mut st, Duration::from_millis(10));
            inner
                .stats
                .stall_micros
                .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
            continue;
        }
        // Earlier groups may still be inserting into the memtable about to be sealed: a short
        // wait, not a slow phase (their inserts, not an fsync), so the flag is down meanwhile.
        drop(st);
        drop(slow.take());
        quiesce(inner);
        let _slow = inner.commit.spin.slow();
        let mut st = inner.state.lock();
        switch_memtable(inner, fam, &mut st)?;
        return Ok(Guard::from_inner(st.fam(fam.id).mem.clone()));
    }
}

/// Seals the active memtable and starts a new one with a new WAL file. The caller holds `state`
/// and is the front of the writer queue (a leader or inside `exclusive`) after [`quiesce`], so
/// no write group is in flight. The sealed log is not fsynced here (see `wal::LogSet`).
pub(crate) fn switch_memtable(inner: &DbInner, fam: &Family, st: &mut DbState) -> Result<()> {
    let number = st.versions.new_file_number();
    let file = inner
        .log_storage
        .create(&wal_path(&inner.log_dir, number))?;
    // The sealed log names its successor, for readers following the log location (replicas).
    // A failed append may leave a partial record, which nothing may follow: writes stop, as
    // after any failed WAL append (the log stays the last, so a reopen drops it as a tail).
    let linked = inner
        .wal
        .lock()
        .current()
        .add_record(&crate::wal::link::encode(number));
    if let Err(e) = linked {
        set_bg_error_locked(inner, st, e.clone());
        return Err(e);
    }
    if let Some(ext) = &inner.extended {
        // No group is in flight: every later write gets a sequence number above this.
        ext.wal_created(number, inner.last_seq.load(Ordering::Acquire) + 1);
    }
    inner.wal.lock().rotate(LogWriter::new(file, number));
    st.live_logs.insert(number);
    // The point index is sized for as many distinct keys as the memtable it follows held.
    let fs = st.fam_mut(fam.id);
    let mem = Arc::new(MemTable::for_options(
        number,
        &fam.opts,
        Some(fs.mem.num_keys()),
    ));
    // No group is in flight: every later write goes to this memtable (or a newer one).
    mem.set_base_seq(inner.last_seq.load(Ordering::Acquire));
    fam.active.store(mem.clone());
    let old = std::mem::replace(&mut fs.mem, mem);
    fs.imms.push(old);
    inner.install_super_version(fam, st);
    inner.bg_cv.notify_all();
    Ok(())
}
