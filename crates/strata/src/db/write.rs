//! The write path: group commit of concurrent writers, write stalls, memtable switches.
//!
//! A writer enqueues itself; the writer at the front of the queue is the leader. It makes room
//! (stalling if flushes or L0 fall behind), takes the queued batches behind it into one group,
//! releases the queue lock, appends the group as one WAL record (fsync if any member asked),
//! inserts it into the memtable, publishes the new last sequence number, and wakes the group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::{DbInner, DbState};
use crate::batch::{BatchOp, WriteBatch};
use crate::error::{ErrorRepr, Result};
use crate::memtable::MemTable;
use crate::types::ValueKind;
use crate::wal::LogWriter;

/// Largest group a leader assembles, in encoded bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;

pub(crate) struct Writer {
    batch: Mutex<Option<WriteBatch>>,
    /// A barrier holds no batch: it waits for every earlier write group to finish and keeps
    /// later ones queued while its owner works (memtable switches by `flush`, shutdown).
    barrier: bool,
    sync: bool,
    done: AtomicBool,
    result: Mutex<Option<Result<()>>>,
    /// Set by the leader once the group's WAL record is written: insert your own batch.
    assignment: Mutex<Option<Assignment>>,
    cv: Condvar,
}

/// A follower's share of a committed group: its memtable and first sequence number.
struct Assignment {
    mem: Arc<MemTable>,
    seq: u64,
    group: Arc<GroupInserts>,
}

/// Counts the members of a group still inserting into the memtable.
struct GroupInserts {
    pending: Mutex<usize>,
    cv: Condvar,
}

impl GroupInserts {
    fn finished_one(&self) {
        let mut p = self.pending.lock();
        *p -= 1;
        if *p == 0 {
            self.cv.notify_all();
        }
    }
}

pub(crate) fn wal_path(dir: &std::path::Path, number: u64) -> std::path::PathBuf {
    dir.join(format!("{number:06}.log"))
}

fn new_writer(batch: Option<WriteBatch>, barrier: bool, sync: bool) -> Arc<Writer> {
    Arc::new(Writer {
        batch: Mutex::new(batch),
        barrier,
        sync,
        done: AtomicBool::new(false),
        result: Mutex::new(None),
        assignment: Mutex::new(None),
        cv: Condvar::new(),
    })
}

/// Commits a batch. Concurrent writers form groups: the queue's front writer (the leader)
/// writes the whole group as one WAL record, then every member inserts its own batch into the
/// memtable in parallel, and the leader publishes the group's last sequence number once all
/// are in (so no reader sees part of a batch, and a writer sees its own write on return).
pub(crate) fn write(inner: &Arc<DbInner>, batch: WriteBatch, sync: bool) -> Result<()> {
    batch.validate()?;
    if batch.is_empty() {
        return Ok(());
    }
    let w = new_writer(Some(batch), false, sync);
    let mut q = inner.writers.lock();
    q.push_back(w.clone());
    loop {
        if w.done.load(Ordering::Acquire) {
            return w.result.lock().take().unwrap_or(Ok(()));
        }
        let assigned = w.assignment.lock().take();
        if let Some(a) = assigned {
            // Follower of a committed group: insert our batch, then wait for the leader.
            drop(q);
            if let Some(b) = w.batch.lock().as_ref() {
                apply_to_memtable(&a.mem, b, a.seq);
            }
            a.group.finished_one();
            q = inner.writers.lock();
            while !w.done.load(Ordering::Acquire) {
                w.cv.wait(&mut q);
            }
            return w.result.lock().take().unwrap_or(Ok(()));
        }
        if Arc::ptr_eq(q.front().expect("queued"), &w) {
            break;
        }
        w.cv.wait(&mut q);
    }

    // Leader.
    let room = make_room_for_write(inner, &mut q);
    let mut group: Vec<Arc<Writer>> = Vec::new();
    let mut merged = WriteBatch::new();
    let mut want_sync = false;
    if room.is_ok() {
        let mut bytes = 0;
        for m in q.iter() {
            if m.barrier || (m.sync && !w.sync && !group.is_empty()) {
                break;
            }
            let b = m.batch.lock();
            let size = b.as_ref().map_or(0, |b| b.size_in_bytes());
            if !group.is_empty() && bytes + size > MAX_GROUP_BYTES {
                break;
            }
            bytes += size;
            if let Some(b) = b.as_ref() {
                merged.append(b);
            }
            want_sync |= m.sync;
            drop(b);
            group.push(m.clone());
        }
    } else {
        group.push(w.clone());
    }
    let mem = inner.state.lock().mem.clone();
    drop(q);

    let result = match room {
        Err(e) => Err(e),
        Ok(()) => commit(inner, &mem, &mut merged, want_sync, &group, &w),
    };

    let mut q = inner.writers.lock();
    for m in &group {
        let front = q.pop_front().expect("group members are queued");
        debug_assert!(Arc::ptr_eq(&front, m));
        if !Arc::ptr_eq(m, &w) {
            *m.result.lock() = Some(result.clone());
            m.done.store(true, Ordering::Release);
            m.cv.notify_one();
        }
    }
    if let Some(next) = q.front() {
        next.cv.notify_one();
    }
    result
}

/// Runs `f` while no write group is in flight and no new one can start: `f` waits its turn at the
/// front of the writer queue like a writer, and writers queued behind it wait until it is done.
pub(crate) fn exclusive<T>(inner: &Arc<DbInner>, f: impl FnOnce() -> T) -> T {
    let w = new_writer(None, true, false);
    let mut q = inner.writers.lock();
    q.push_back(w.clone());
    while !Arc::ptr_eq(q.front().expect("queued"), &w) {
        w.cv.wait(&mut q);
    }
    drop(q);
    let out = f();
    let mut q = inner.writers.lock();
    let front = q.pop_front().expect("barrier is queued");
    debug_assert!(Arc::ptr_eq(&front, &w));
    if let Some(next) = q.front() {
        next.cv.notify_one();
    }
    out
}

/// Appends the group to the WAL, has every member insert its batch, and publishes the group.
fn commit(
    inner: &Arc<DbInner>,
    mem: &Arc<MemTable>,
    merged: &mut WriteBatch,
    sync: bool,
    group: &[Arc<Writer>],
    leader: &Arc<Writer>,
) -> Result<()> {
    let first = inner.last_seq.load(Ordering::Acquire) + 1;
    let count = merged.len() as u64;
    let appended = {
        let mut wal = inner.wal.lock();
        let before = wal.len();
        let rec = merged.encode_with_seq(first);
        let res = wal
            .add_record(rec)
            .and_then(|_| if sync { wal.sync() } else { Ok(()) });
        res.map(|_| wal.len() - before)
    };
    let st = &inner.stats;
    match appended {
        Ok(bytes) => {
            st.wal_bytes.fetch_add(bytes, Ordering::Relaxed);
            if sync {
                st.wal_syncs.fetch_add(1, Ordering::Relaxed);
            }
        }
        Err(e) => {
            // The log may now end in a partial record: no later write may follow it. (The WAL
            // lock is released first: `set_bg_error` takes `state`, and lock order is state
            // before wal.)
            set_bg_error(inner, e.clone());
            return Err(e);
        }
    }
    if !inner.opts.concurrent_memtable_writes {
        // The leader inserts every member's batch itself: no wake-ups, best on few cores.
        let mut seq = first;
        for m in group {
            if let Some(b) = m.batch.lock().as_ref() {
                apply_to_memtable(mem, b, seq);
                seq += b.len() as u64;
            }
        }
        st.user_bytes_written
            .fetch_add(merged.size_in_bytes() as u64, Ordering::Relaxed);
        st.keys_written.fetch_add(count, Ordering::Relaxed);
        st.write_groups.fetch_add(1, Ordering::Relaxed);
        inner.last_seq.store(first + count - 1, Ordering::Release);
        return Ok(());
    }
    // Hand each follower its sequence range; insert our own batch meanwhile.
    let inserts = Arc::new(GroupInserts {
        pending: Mutex::new(group.len() - 1),
        cv: Condvar::new(),
    });
    let mut seq = first;
    let mut own = first;
    {
        let _q = inner.writers.lock();
        for m in group {
            let n = m.batch.lock().as_ref().map_or(0, |b| b.len()) as u64;
            if Arc::ptr_eq(m, leader) {
                own = seq;
            } else {
                *m.assignment.lock() = Some(Assignment {
                    mem: mem.clone(),
                    seq,
                    group: inserts.clone(),
                });
                m.cv.notify_one();
            }
            seq += n;
        }
    }
    if let Some(b) = leader.batch.lock().as_ref() {
        apply_to_memtable(mem, b, own);
    }
    {
        let mut p = inserts.pending.lock();
        while *p > 0 {
            inserts.cv.wait(&mut p);
        }
    }
    st.user_bytes_written
        .fetch_add(merged.size_in_bytes() as u64, Ordering::Relaxed);
    st.keys_written.fetch_add(count, Ordering::Relaxed);
    st.write_groups.fetch_add(1, Ordering::Relaxed);
    inner.last_seq.store(first + count - 1, Ordering::Release);
    Ok(())
}

/// Inserts a batch's operations with consecutive sequence numbers starting at `first`.
pub(crate) fn apply_to_memtable(mem: &MemTable, batch: &WriteBatch, first: u64) {
    for (i, op) in batch.iter().enumerate() {
        let seq = first + i as u64;
        match op {
            BatchOp::Put(k, v) => mem.add(seq, ValueKind::Put, k, v),
            BatchOp::Delete(k) => mem.add(seq, ValueKind::Delete, k, &[]),
            BatchOp::DeleteRange(s, e) => {
                if s < e {
                    mem.add_range_delete(seq, s, e)
                }
            }
        }
    }
}

pub(crate) fn set_bg_error(inner: &DbInner, e: crate::Error) {
    let mut st = inner.state.lock();
    set_bg_error_locked(inner, &mut st, e);
}

/// Ensures the memtable has room, stalling or switching memtables as needed. Called by the
/// leader with the writer queue locked (which holds every other writer back).
fn make_room_for_write(
    inner: &Arc<DbInner>,
    q: &mut MutexGuard<'_, std::collections::VecDeque<Arc<Writer>>>,
) -> Result<()> {
    let o = &inner.opts;
    let mut delayed = false;
    let mut stopped = false;
    loop {
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(ErrorRepr::Closed.into());
        }
        let mut st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        let l0 = st.versions.current().levels[0].num_files();
        if !delayed && l0 >= o.level0_slowdown_writes_trigger {
            drop(st);
            let t = Instant::now();
            MutexGuard::unlocked(q, || std::thread::sleep(o.slowdown_delay));
            inner.stats.slowdowns.fetch_add(1, Ordering::Relaxed);
            inner
                .stats
                .stall_micros
                .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
            delayed = true;
            continue;
        }
        if st.mem.approximate_size() < o.write_buffer_size {
            return Ok(());
        }
        if st.imms.len() + 1 >= o.max_write_buffer_number || l0 >= o.level0_stop_writes_trigger {
            let t = Instant::now();
            // One stop per stall, however many waits it takes.
            if !stopped {
                inner.stats.stops.fetch_add(1, Ordering::Relaxed);
                stopped = true;
            }
            inner.bg_cv.notify_all();
            inner
                .bg_cv
                .wait_for(&mut st, std::time::Duration::from_millis(10));
            inner
                .stats
                .stall_micros
                .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
            continue;
        }
        return switch_memtable(inner, &mut st);
    }
}

/// Seals the active memtable and starts a new one with a new WAL file. The caller holds `state`
/// and runs either as the write leader or inside `exclusive`, so no write group is in flight.
pub(crate) fn switch_memtable(inner: &DbInner, st: &mut DbState) -> Result<()> {
    let number = st.versions.new_file_number();
    let file = inner.storage.create(&wal_path(&inner.dir, number))?;
    let synced = {
        let mut wal = inner.wal.lock();
        // The sealed log must be complete on disk before writes go to the next one.
        wal.sync().map(|_| *wal = LogWriter::new(file, number))
    };
    if let Err(e) = synced.and_then(|_| inner.storage.sync_dir(&inner.dir)) {
        // A failed fsync may have dropped data (Linux clears the error): writes must stop.
        set_bg_error_locked(inner, st, e.clone());
        return Err(e);
    }
    let bloom = inner.opts.memtable_bloom_bytes();
    let old = std::mem::replace(&mut st.mem, Arc::new(MemTable::with_bloom(number, bloom)));
    st.imms.push(old);
    inner.install_super_version(st);
    inner.bg_cv.notify_all();
    Ok(())
}

/// `set_bg_error` for callers that already hold `state`.
pub(crate) fn set_bg_error_locked(inner: &DbInner, st: &mut DbState, e: crate::Error) {
    if st.bg_error.is_none() {
        tracing::error!(error = %e, "background error: the database is now read-only");
        st.bg_error = Some(ErrorRepr::Background(e).into());
        inner
            .stats
            .background_errors
            .fetch_add(1, Ordering::Relaxed);
    }
    inner.bg_cv.notify_all();
}
