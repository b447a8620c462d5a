//! The write path: a commit pipeline of write groups, write stalls, memtable switches.
//!
//! A writer enqueues itself; the writer at the front of the queue is the leader. The leader
//! makes room (stalling if flushes or L0 fall behind, switching memtables when full), takes the
//! queued batches behind it into one group, appends the group as one WAL record (one fsync if a
//! member asked). With `Options::pipelined_write` it then leaves the front: the next leader
//! writes its group's WAL record while this group is still inserting into the memtable
//! (RocksDB's `enable_pipelined_write`, Pebble's commit pipeline); by default it leaves the front
//! once its group is published. The leader inserts every member's batch (or, with
//! `concurrent_memtable_writes`, each member inserts its own in parallel), waits until every
//! earlier group is published, publishes its group's last sequence number and wakes its members.
//!
//! Transactions ([`write_checked`]) queue and group like any write; the leader runs each one's
//! conflict check before the group's WAL record, in group order, once every earlier group is
//! published, against the memtables and the group's earlier members, and leaves a failing one
//! out of the group.
//!
//! Invariants:
//! - WAL records are appended in sequence order: only the front of the queue allocates sequence
//!   numbers (`allocated`) and appends to the WAL.
//! - `last_seq` (what reads see) only grows, group by group in sequence order, and only past
//!   sequence numbers whose batches are wholly in the memtable (linked and in its point
//!   index): no reader sees part of a batch, and a writer sees its own write on return.
//!   `MemTable::get` is exact only at snapshots read from `last_seq` (an acquire): unlike a
//!   search, the point index does not show entries linked but not yet indexed.
//! - A group is the front of the queue, taken whole: its leader pops exactly the writers it
//!   took (members and refused transactions) and finishes each only after popping it, so a
//!   finished writer is never left in the queue.
//! - Whoever seals the memtable (a leader in `make_room_for_write`, `exclusive`, shutdown) first
//!   waits until every allocated sequence number is published ([`quiesce`]), so no group is still
//!   inserting into a memtable that flush may pick up.
//! - Waiting spins, then blocks (`db::wait`: like RocksDB's `AwaitState`, without its yield
//!   phase): a short spin always, a long one while long spins pay ([`SpinPolicy`]), so a
//!   hand-off between two running writer threads costs no futex sleep and wake-up; a notify
//!   costs no lock unless someone sleeps ([`Gate`]).
//!
//! Lock order: writer queue, then `state`, then `wal`. Depends on `wal`, `memtable`, `batch`, and
//! `room` (stalls, memtable switches and the families a group writes).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::room::{make_room, ActiveMem, Targets};
use super::wait::{Gate, SpinPolicy};
use super::{DbInner, DbState};
use crate::batch::WriteBatch;
use crate::error::{ErrorRepr, Result};
use crate::memtable::{InsertGroup, MemTable};

/// Largest group a leader assembles, in encoded bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// Writer states.
const QUEUED: u8 = 0;
/// At the front of the queue: lead a group.
const LEADER: u8 = 1;
/// The group's WAL record is written: insert your own batch (`assignment`).
const ASSIGNED: u8 = 2;
/// Committed (or failed): `result` holds the outcome.
const DONE: u8 = 3;

/// The writer queue and the ordering state of the pipeline, owned by `DbInner`.
pub(crate) struct CommitPipeline {
    queue: Mutex<VecDeque<Arc<Writer>>>,
    /// The last sequence number handed to a group whose WAL record is written. Changed only by
    /// the front of the queue; `last_seq` trails it while groups insert.
    allocated: AtomicU64,
    /// Wakes groups waiting for earlier groups to publish (see [`Gate`]).
    published: Gate,
    /// Mirrors `DbState::bg_error.is_some()`, so a leader needs no `state` lock to see it.
    pub(super) failed: AtomicBool,
    /// How waiters spin.
    pub(super) spin: SpinPolicy,
}

impl CommitPipeline {
    pub fn new(last_seq: u64) -> Self {
        CommitPipeline {
            queue: Mutex::new(VecDeque::new()),
            allocated: AtomicU64::new(last_seq),
            published: Gate::default(),
            failed: AtomicBool::new(false),
            spin: SpinPolicy::default(),
        }
    }

    /// Whether no writer is queued (shutdown polls this).
    pub fn is_idle(&self) -> bool {
        self.queue.lock().is_empty()
    }
}

pub(crate) struct Writer {
    batch: Option<WriteBatch>,
    /// A barrier holds no batch: it waits for every earlier write group to finish and keeps
    /// later ones queued while its owner works (memtable switches by `flush`, shutdown).
    barrier: bool,
    sync: bool,
    /// A transaction's conflict check, run by the leader of the group that takes the writer.
    check: Option<CommitCheck>,
    state: AtomicU8,
    result: Mutex<Option<Result<()>>>,
    /// Set by the leader (with state `ASSIGNED`) in concurrent-insert mode.
    assignment: Mutex<Option<Assignment>>,
    wake: Gate,
}

/// A follower's share of a committed group: its memtable and first sequence number.
struct Assignment {
    mem: Arc<MemTable>,
    seq: u64,
    group: Arc<GroupInserts>,
}

/// Counts the members of a group still inserting into the memtable.
struct GroupInserts {
    pending: AtomicU64,
    gate: Gate,
}

impl GroupInserts {
    fn finished_one(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.gate.notify();
        }
    }
}

impl Writer {
    fn new(
        batch: Option<WriteBatch>,
        barrier: bool,
        sync: bool,
        check: Option<CommitCheck>,
    ) -> Arc<Writer> {
        Arc::new(Writer {
            batch,
            barrier,
            sync,
            check,
            state: AtomicU8::new(QUEUED),
            result: Mutex::new(None),
            assignment: Mutex::new(None),
            wake: Gate::default(),
        })
    }

    fn set_state(&self, s: u8) {
        self.state.store(s, Ordering::Release);
        self.wake.notify();
    }

    /// Waits until the state leaves `from`, and returns the new state.
    fn await_change(&self, from: u8, spin: &SpinPolicy) -> u8 {
        self.wake
            .wait(|| self.state.load(Ordering::Acquire) != from, spin);
        self.state.load(Ordering::Acquire)
    }

    fn finish(&self, result: Result<()>) {
        *self.result.lock() = Some(result);
        self.set_state(DONE);
    }

    fn take_result(&self) -> Result<()> {
        self.result.lock().take().unwrap_or(Ok(()))
    }
}

pub(crate) fn wal_path(dir: &std::path::Path, number: u64) -> std::path::PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// Queues `w` and returns once it is the front of the queue (its group's leader), or, for a
/// writer that was taken into another leader's group, with its group done.
/// `Ok(true)`: lead. `Ok(false)`: done as a follower (result in `w`).
fn join(inner: &DbInner, w: &Arc<Writer>) -> bool {
    {
        let mut q = inner.commit.queue.lock();
        q.push_back(w.clone());
        if q.len() == 1 {
            return true;
        }
    }
    match w.await_change(QUEUED, &inner.commit.spin) {
        LEADER => true,
        ASSIGNED => {
            // Concurrent insert: our batch, at the sequence numbers the leader gave us.
            let a = w
                .assignment
                .lock()
                .take()
                .expect("assigned writers have an assignment");
            if let Some(b) = w.batch.as_ref() {
                apply_to_memtable(&a.mem, b, a.seq);
            }
            a.group.finished_one();
            w.await_change(ASSIGNED, &inner.commit.spin);
            false
        }
        _ => false,
    }
}

/// Pops `n` writers (the finished front) and makes the next front the leader.
fn leave_front(inner: &DbInner, n: usize) {
    let mut q = inner.commit.queue.lock();
    for _ in 0..n {
        q.pop_front();
    }
    if let Some(next) = q.front() {
        next.set_state(LEADER);
    }
}

/// Waits until every allocated sequence number is published: no group is still inserting.
/// Called by the front of the queue, so nothing new is allocated meanwhile.
pub(crate) fn quiesce(inner: &DbInner) {
    let target = inner.commit.allocated.load(Ordering::Acquire);
    inner.commit.published.wait(
        || inner.last_seq.load(Ordering::Acquire) >= target,
        &inner.commit.spin,
    );
}

/// Refuses a batch with merge operands when no merge operator is configured, or with an
/// operand the operator's `check_operand` rejects: nothing of the batch is written.
fn check_merges(inner: &DbInner, batch: &WriteBatch) -> Result<()> {
    if !batch.has_merge() {
        return Ok(());
    }
    let Some(op) = inner.opts.merge_operator.as_deref() else {
        return Err(crate::Error::invalid(
            "a merge needs a merge operator (Options::merge_operator)",
        ));
    };
    for o in batch.iter() {
        if let crate::batch::BatchOp::Merge(_, operand) = o {
            op.check_operand(operand).map_err(|e| {
                crate::Error::invalid(format!("merge operand refused by {}: {e}", op.name()))
            })?;
        }
    }
    Ok(())
}

/// Commits a batch; see the module docs.
pub(crate) fn write(inner: &Arc<DbInner>, batch: WriteBatch, sync: bool) -> Result<()> {
    batch.validate()?;
    check_merges(inner, &batch)?;
    if batch.is_empty() {
        return Ok(());
    }
    commit(inner, Writer::new(Some(batch), false, sync, None))
}

/// A transaction's commit check (see `txn`): the batch is committed only if no key in `keys`
/// (sorted) was written after sequence number `snapshot`.
pub(crate) struct CommitCheck {
    pub snapshot: u64,
    pub keys: Vec<Vec<u8>>,
    /// Key ranges read (serializable transactions).
    pub ranges: Vec<crate::txn::conflict::ReadRange>,
}

/// Commits `batch` if `check` passes at the commit moment. The batch queues like any write
/// and the leader of the group that takes it runs the check: after every earlier group is
/// published and before the group's WAL record is written, against the memtables and the
/// writes of the group's earlier members — so nothing is written between the check and the
/// commit. A batch that fails its check is left out of the group (the others commit) and
/// fails with the check's error (`Busy`, `TryAgain`), writing nothing.
pub(crate) fn write_checked(
    inner: &Arc<DbInner>,
    batch: WriteBatch,
    sync: bool,
    check: CommitCheck,
) -> Result<()> {
    batch.validate()?;
    check_merges(inner, &batch)?;
    if batch.is_empty() {
        return Ok(());
    }
    if batch.has_column_families() {
        return Err(crate::Error::invalid(
            "transactions over column families other than the default are not supported yet",
        ));
    }
    commit(inner, Writer::new(Some(batch), false, sync, Some(check)))
}

/// Queues writer `w` and commits its batch, as a follower or as its group's leader.
fn commit(inner: &Arc<DbInner>, w: Arc<Writer>) -> Result<()> {
    if !join(inner, &w) {
        return w.take_result();
    }

    // Leader: make room and gather the group while at the front of the queue. The group is
    // the front `taken` writers of the queue.
    let mut room = make_room(inner, w.batch.as_ref().expect("a writer holds a batch"));
    let mut taken: Vec<Arc<Writer>> = Vec::new();
    if let Ok(targets) = &mut room {
        let q = inner.commit.queue.lock();
        let mut bytes = 0;
        for m in q.iter() {
            if m.barrier || (m.sync && !w.sync && !taken.is_empty()) {
                break;
            }
            // A member joins only if every family it writes has room: the leader's, or one
            // with room now without waiting (a member that would wait leads its own group).
            if !taken.is_empty()
                && !m
                    .batch
                    .as_ref()
                    .is_some_and(|b| targets.covers(b) || targets.extend(inner, b))
            {
                break;
            }
            let size = m.batch.as_ref().map_or(0, |b| b.size_in_bytes());
            if !taken.is_empty() && bytes + size > MAX_GROUP_BYTES {
                break;
            }
            bytes += size;
            taken.push(m.clone());
        }
    } else {
        taken.push(w.clone());
    }
    let targets = match room {
        Err(e) => {
            leave_front(inner, 1);
            return Err(e);
        }
        Ok(t) => t,
    };
    let first = inner.commit.allocated.load(Ordering::Acquire) + 1;
    // Transactions' checks, in group order; a member that fails one is refused.
    let (group, refused) = check_members(inner, &taken, first);
    let mut merged = WriteBatch::new();
    let mut want_sync = false;
    for m in &group {
        if let Some(b) = m.batch.as_ref() {
            merged.append(b);
        }
        want_sync |= m.sync;
    }
    let own = refused
        .iter()
        .find(|(m, _)| Arc::ptr_eq(m, &w))
        .map(|(_, e)| e.clone());
    let done = |result: &Result<()>| {
        for m in group.iter().filter(|m| !Arc::ptr_eq(m, &w)) {
            m.finish(result.clone());
        }
        for (m, e) in refused.iter().filter(|(m, _)| !Arc::ptr_eq(m, &w)) {
            m.finish(Err(e.clone()));
        }
    };
    if merged.is_empty() {
        // Every member was refused.
        leave_front(inner, taken.len());
        done(&Ok(()));
        return own.map_or(Ok(()), Err);
    }

    let result = append_to_wal(inner, &mut merged, first, want_sync);
    let count = merged.len() as u64;
    if result.is_ok() {
        inner
            .commit
            .allocated
            .store(first + count - 1, Ordering::Release);
    }
    // With `pipelined_write`, the next group may start once the WAL record is out, while this
    // one inserts. Without it (the default) the group holds the front until it is published:
    // on few cores the overlap gains little, and the next group, formed later, is larger.
    let pipelined = inner.opts.pipelined_write;
    if pipelined || result.is_err() {
        leave_front(inner, taken.len());
    }
    if let Err(e) = result {
        done(&Err(e.clone()));
        return Err(own.unwrap_or(e));
    }

    match &targets {
        Targets::Default(mem) => {
            let leader = own.is_none().then_some(&w);
            insert_group(inner, mem, &group, &merged, leader, first)
        }
        // A group across families is inserted by its leader alone.
        Targets::Families(mems) => apply_to_families(mems, &merged, first),
    }
    // Publish in sequence order, after every earlier group.
    let c = &inner.commit;
    c.published.wait(
        || inner.last_seq.load(Ordering::Acquire) >= first - 1,
        &c.spin,
    );
    inner.last_seq.store(first + count - 1, Ordering::Release);
    c.published.notify();
    if !pipelined {
        leave_front(inner, taken.len());
    }

    let st = &inner.stats;
    st.user_bytes_written
        .fetch_add(merged.size_in_bytes() as u64, Ordering::Relaxed);
    st.keys_written.fetch_add(count, Ordering::Relaxed);
    st.write_groups.fetch_add(1, Ordering::Relaxed);
    done(&Ok(()));
    own.map_or(Ok(()), Err)
}

/// A transaction left out of its group, with its check's error.
type Refused = (Arc<Writer>, crate::Error);

/// Runs the checks of the transactions among `taken` (a group at the front of the queue,
/// whose first operation takes sequence number `first`), in group order, and splits the group
/// into the members to commit and the refused ones with their errors. Each check sees the
/// memtables — every earlier group published — and the writes of the members kept before it.
fn check_members(
    inner: &DbInner,
    taken: &[Arc<Writer>],
    first: u64,
) -> (Vec<Arc<Writer>>, Vec<Refused>) {
    let Some(last_checked) = taken.iter().rposition(|m| m.check.is_some()) else {
        return (taken.to_vec(), Vec::new());
    };
    // With `pipelined_write` an earlier group may still be inserting.
    quiesce(inner);
    let mut group = Vec::with_capacity(taken.len());
    let mut refused = Vec::new();
    let mut earlier = crate::txn::conflict::GroupWrites::default();
    let mut seq = first;
    for (i, m) in taken.iter().enumerate() {
        if let Some(c) = &m.check {
            if let Err(e) = run_check(inner, c, &earlier) {
                refused.push((m.clone(), e));
                continue;
            }
        }
        let b = m.batch.as_ref().expect("a writer in a group holds a batch");
        // Writes only a later member's check reads.
        if i < last_checked {
            earlier.add(b, seq);
        }
        seq += b.len() as u64;
        group.push(m.clone());
    }
    (group, refused)
}

/// Runs a transaction's check with no group in flight: against the memtables, then against
/// the writes of its group's earlier members (`earlier`).
fn run_check(
    inner: &DbInner,
    c: &CommitCheck,
    earlier: &crate::txn::conflict::GroupWrites,
) -> Result<()> {
    use crate::txn::conflict::{check, into_result, Verdict};
    let sv = inner.super_version_guard();
    let mut mems: Vec<&Arc<MemTable>> = vec![&sv.mem];
    mems.extend(sv.imms.iter());
    let now = inner.last_seq.load(Ordering::Acquire);
    let keys = || c.keys.iter().map(Vec::as_slice);
    let verdict = match check(&mems, c.snapshot, now, keys(), &c.ranges) {
        Verdict::Clear => match earlier.conflict(keys(), &c.ranges) {
            Some((key, seq)) => Verdict::Conflict(key, seq),
            None => Verdict::Clear,
        },
        v => v,
    };
    into_result(verdict, c.snapshot)
}

/// Runs `f` while no write group is in flight and no new one can start: `f` waits its turn at the
/// front of the writer queue like a writer, and writers queued behind it wait until it is done.
pub(crate) fn exclusive<T>(inner: &Arc<DbInner>, f: impl FnOnce() -> T) -> T {
    let w = Writer::new(None, true, false, None);
    let led = join(inner, &w);
    debug_assert!(led, "a barrier is never taken into a group");
    quiesce(inner);
    let out = {
        let _slow = inner.commit.spin.slow();
        f()
    };
    leave_front(inner, 1);
    out
}

/// Appends the group's record (sequence numbers from `first`) to the WAL, fsyncing if asked.
fn append_to_wal(inner: &DbInner, merged: &mut WriteBatch, first: u64, sync: bool) -> Result<()> {
    let appended = {
        let mut wal = inner.wal.lock();
        let before = wal.current().len();
        let rec = merged.encode_with_seq(first);
        let res = wal.current().add_record(rec).and_then(|_| {
            if sync {
                let _slow = inner.commit.spin.slow();
                wal.sync()
            } else {
                Ok(())
            }
        });
        res.map(|_| wal.current().len() - before)
    };
    match appended {
        Ok(bytes) => {
            let st = &inner.stats;
            st.wal_bytes.fetch_add(bytes, Ordering::Relaxed);
            if sync {
                st.wal_syncs.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }
        Err(e) => {
            // The log may now end in a partial record: no later write may follow it. (The WAL
            // lock is released first: `set_bg_error` takes `state`, and lock order is state
            // before wal.)
            set_bg_error(inner, e.clone());
            Err(e)
        }
    }
}

/// Inserts every member's batch into `mem`, consecutive from `first` in group order: by the
/// leader alone, or by each member in parallel with `concurrent_memtable_writes`. `leader` is
/// the leader if it is a member (a leader whose transaction was refused leads without one).
///
/// `merged` is the members' batches concatenated in group order (the WAL record): the leader
/// alone inserts it as one batch, so the skiplist searches of many one-operation members overlap
/// in grouped inserts just as those of one large batch do.
fn insert_group(
    inner: &DbInner,
    mem: &Arc<MemTable>,
    group: &[Arc<Writer>],
    merged: &WriteBatch,
    leader: Option<&Arc<Writer>>,
    first: u64,
) {
    if !inner.opts.concurrent_memtable_writes || group.len() == 1 {
        // No wake-ups: best on few cores and for small batches.
        apply_to_memtable(mem, merged, first);
        return;
    }
    let is_leader = |m: &Arc<Writer>| leader.is_some_and(|l| Arc::ptr_eq(m, l));
    let helpers = group.iter().filter(|m| !is_leader(m)).count();
    let inserts = Arc::new(GroupInserts {
        pending: AtomicU64::new(helpers as u64),
        gate: Gate::default(),
    });
    let mut seq = first;
    let mut own = None;
    for m in group {
        let n = m.batch.as_ref().map_or(0, |b| b.len()) as u64;
        if is_leader(m) {
            own = Some(seq);
        } else {
            *m.assignment.lock() = Some(Assignment {
                mem: mem.clone(),
                seq,
                group: inserts.clone(),
            });
            m.set_state(ASSIGNED);
        }
        seq += n;
    }
    if let (Some(b), Some(own)) = (leader.and_then(|l| l.batch.as_ref()), own) {
        apply_to_memtable(mem, b, own);
    }
    inserts.gate.wait(
        || inserts.pending.load(Ordering::Acquire) == 0,
        &inner.commit.spin,
    );
}

/// Inserts a batch across families: each operation, with consecutive sequence numbers from
/// `first`, into its family's memtable in `mems`.
fn apply_to_families(mems: &[(u32, ActiveMem)], batch: &WriteBatch, first: u64) {
    for (i, (family, op)) in batch.iter_cf().enumerate() {
        let mem = mems
            .iter()
            .find(|(id, _)| *id == family)
            .map(|(_, m)| m)
            .expect("the leader made room in every family of its group");
        mem.add_op(first + i as u64, op);
    }
}

/// Inserts a batch's operations with consecutive sequence numbers starting at `first`, point
/// operations in groups ([`InsertGroup`]); a batch of one (every single put) skips setting up
/// the group.
pub(crate) fn apply_to_memtable(mem: &MemTable, batch: &WriteBatch, first: u64) {
    if batch.len() == 1 {
        batch.iter().for_each(|op| mem.add_op(first, op));
        return;
    }
    let mut group = InsertGroup::default();
    for (i, op) in batch.iter().enumerate() {
        group.add(mem, first + i as u64, op);
    }
    group.insert(mem);
}

pub(crate) fn set_bg_error(inner: &DbInner, e: crate::Error) {
    let mut st = inner.state.lock();
    set_bg_error_locked(inner, &mut st, e);
}

/// `set_bg_error` for callers that already hold `state`.
pub(crate) fn set_bg_error_locked(inner: &DbInner, st: &mut DbState, e: crate::Error) {
    if st.bg_error.is_none() {
        tracing::error!(error = %e, "background error: the database is now read-only");
        st.bg_error = Some(ErrorRepr::Background(e).into());
        inner.commit.failed.store(true, Ordering::Release);
        inner
            .stats
            .background_errors
            .fetch_add(1, Ordering::Relaxed);
    }
    inner.bg_cv.notify_all();
}

/// Like [`exclusive`] for shutdown, which holds only `&DbInner`: waits until no writer is queued
/// and no group is inserting, then runs `f`. Writers that see `shutting_down` fail before
/// committing; a leader already past that check finishes its group.
pub(crate) fn after_writers<T>(inner: &DbInner, f: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let mut warned = 0;
    while !inner.commit.is_idle() {
        std::thread::sleep(Duration::from_millis(1));
        // A writer that never leaves the queue (its thread panicked while at the front) would
        // hold shutdown here for ever: say so rather than hang silently.
        let waited = start.elapsed().as_secs() / 10;
        if waited > warned {
            warned = waited;
            tracing::warn!(
                queued = inner.commit.queue.lock().len(),
                seconds = waited * 10,
                "close is waiting for queued writers to finish"
            );
        }
    }
    quiesce(inner);
    f()
}
