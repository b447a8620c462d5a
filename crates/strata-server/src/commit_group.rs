//! Group commit across connections: the write batches that segments running inline on the event
//! loop produce in one scheduler tick are committed with one engine write.
//!
//! redis-server appends every write of one event-loop iteration to its AOF buffer and writes the
//! buffer once before it sleeps. A connection task here is a future, not a loop iteration, so the
//! same effect is had this way: the first segment to [`CommitGroups::commit`] into an empty queue
//! becomes the group's leader and yields once (`tokio::task::yield_now`, which the runtime
//! resumes only once its worker has run out of ready tasks, or at its periodic maintenance, and
//! has polled the I/O driver); segments of other connections that commit meanwhile queue behind
//! it. (When the last groups were written by their leaders alone, a leader mostly does not wait:
//! see [`lead_waits`].) The leader then takes the queue, appends the batches in queue order into one (up to
//! [`MAX_GROUP_BYTES`]) and writes it with `no_slowdown`; each member learns its outcome through
//! a one-shot channel. One WAL record and one grouped memtable insert (whose skiplist searches
//! overlap) replace one per client: under 50 unpipelined clients that is the WAL `write(2)` and
//! most of the cache misses of each SET.
//!
//! Invariants:
//! - A member hands its segment's stripe guard to the group with its batch; the leader releases
//!   every member's stripes only after the group's last engine write returned (or once it is
//!   certain the rest will not be written). So the `locks` invariant holds even when a member's
//!   task is cancelled while it waits. Two members write the same key only if the later one
//!   chained on the earlier one's stripe (below): the group is written in queue order.
//! - A member is told [`Outcome::Committed`] only after the engine acknowledged the write that
//!   contains its batch; the engine publishes it (to readers) before that. Every member's batch
//!   is atomic (it is inside one atomic engine batch).
//! - [`Outcome::Retry`] means the batch did not reach the memtable and will not: the member
//!   discards its segment and reruns it on the engine pool. It is the answer when the write
//!   would stall (`ErrorKind::Incomplete`: nothing done), when a combined write of several
//!   members was refused as invalid (limits are checked before anything is done; each member
//!   then meets its own verdict alone), when an earlier part of the group failed (below), when
//!   a chained member's part failed (its replies may rest on writes that were not made), and
//!   when the leader was dropped before it wrote (runtime shutdown). Any other engine error is
//!   [`Outcome::Failed`] for the other members of the part: such an error stops the engine's
//!   writes for good (`set_bg_error`), so a rerun could not apply a batch twice, only fail
//!   again.
//! - No member waits forever: the leader takes every queued member, and a leader dropped while
//!   it yields drops its members, senders and guards with them (see [`LeaderGuard`]).
//! - Hot keys chain (see `locks`): a joining member marks its stripes with the group's
//!   *epoch*, and until the leader takes the group (which ends the epoch) a segment of another
//!   connection may chain on such a stripe, read through the members' pending writes
//!   ([`CommitGroups::lookup`]) and join behind them — so one engine write carries many
//!   segments of one hot key instead of one. A chained member joins only the group it read
//!   ([`Outcome::Stale`] otherwise: it reruns). Because a chained member's writes depend on
//!   earlier members' writes, the group is written in queue order, nothing after a failed
//!   engine write is written (those members retry), and every member's stripes are released
//!   only after the last write of the group returned.
//!
//! Used only inline (the engine pool's threads block in the engine's own group commit).
//! Depends on `store`, `locks`, `fasthash`.

use std::collections::HashMap;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Relaxed, SeqCst},
};

use bytes::Bytes;
use parking_lot::Mutex;
use strata::WriteBatch;
use tokio::sync::oneshot;

use crate::fasthash::FastHash;
use crate::locks::MultiGuard;
use crate::store::{Store, StoreError};

/// Encoded bytes after which a leader starts another engine write for the rest of its queue;
/// a batch this large commits alone, without a group (unless it chains on one).
pub const MAX_GROUP_BYTES: usize = 1 << 20;

/// What became of a member's batch.
#[derive(Debug)]
pub enum Outcome {
    /// In the engine (acknowledged under the sync policy).
    Committed,
    /// The engine refused the write that carried it.
    Failed(StoreError),
    /// Not written, and never will be: rerun the segment where it may wait (the engine pool).
    Retry,
    /// Not written: the segment chained on a group that its leader took before the segment
    /// could join it. Rerun it once the chained stripe is released (by that group's write).
    Stale,
}

/// A segment's pending writes, by what they write: what segments chained behind it read.
#[derive(Default)]
pub struct Written {
    /// Records by user key (`None`: deleted).
    pub records: HashMap<Vec<u8>, Option<Bytes>, FastHash>,
    /// Collection elements by engine sub-key (`None`: deleted).
    pub elems: HashMap<Vec<u8>, Option<Bytes>, FastHash>,
}

/// Which map of [`Written`] a lookup reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Record,
    Elem,
}

/// What a chained segment's lookup found in its group (see [`CommitGroups::lookup`]).
#[derive(Debug, PartialEq)]
pub enum Lookup {
    /// A member wrote it (`None`: deleted).
    Found(Option<Bytes>),
    /// No member wrote it: read the engine.
    Miss,
    /// The group was taken by its leader: the segment will be discarded.
    Stale,
}

struct Member {
    batch: WriteBatch,
    written: Written,
    /// It chained on the group (its replies may rest on earlier members' writes).
    chained: bool,
    /// Released once the group is written (or certain not to be), before the answer.
    _guard: Option<MultiGuard>,
    done: oneshot::Sender<Outcome>,
}

/// The group being formed: its members in queue order, and its epoch.
struct Forming {
    members: Vec<Member>,
    epoch: u64,
}

/// The queue of the group being formed, shared by every connection of a server.
pub struct CommitGroups {
    queue: Mutex<Forming>,
    /// The forming group's epoch, readable without the queue lock (a hint: it is checked again
    /// under the lock before anything depends on it). Starts at 1; 0 means none.
    epoch: AtomicU64,
    /// Groups in a row that their leader wrote alone (see [`lead_waits`]).
    alone: AtomicU64,
}

/// Groups written by their leader alone, in a row, after which a leader stops yielding for
/// company (only every [`PROBE_EVERY`]th still does, to notice when others arrive).
const ALONE_STREAK: u64 = 4;
/// See [`ALONE_STREAK`].
const PROBE_EVERY: u64 = 16;

/// Whether a group's leader yields once for other connections' segments to join it, given how
/// many groups in a row were written by their leader alone. Waiting for company that does not
/// come costs a trip through the scheduler (about 7 µs here, a quarter of a BLPOP/RPUSH round
/// trip between two clients); under many clients it is what makes groups at all. So a leader
/// waits unless the last [`ALONE_STREAK`] groups were solitary, and then every
/// [`PROBE_EVERY`]th one waits anyway; a group that gains a member restarts the count.
pub fn lead_waits(alone_in_a_row: u64) -> bool {
    alone_in_a_row < ALONE_STREAK || alone_in_a_row.is_multiple_of(PROBE_EVERY)
}

impl Default for CommitGroups {
    fn default() -> Self {
        CommitGroups {
            queue: Mutex::new(Forming {
                members: Vec::new(),
                epoch: 1,
            }),
            epoch: AtomicU64::new(1),
            alone: AtomicU64::new(0),
        }
    }
}

/// What a call of [`CommitGroups::commit`] wrote, for INFO: zero unless it led a group or
/// wrote a large batch alone.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GroupCount {
    /// Engine writes that committed.
    pub writes: u64,
    /// Segments' batches they carried.
    pub segments: u64,
}

/// A leader's claim on the queue: if the leader is dropped before it takes the queue (its task
/// cancelled while it yields), the queued members are dropped with their senders and guards,
/// and each of them sees [`Outcome::Retry`].
struct LeaderGuard<'a> {
    groups: &'a CommitGroups,
    armed: bool,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let members = self.groups.take();
            drop(members); // outside the queue lock
        }
    }
}

impl CommitGroups {
    /// The epoch of the group being formed (a hint for [`crate::locks::KeyLocks::try_lock_keys_or_chain`]).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(SeqCst)
    }

    /// What the members of group `epoch` wrote to `key` (the newest member's write), for a
    /// segment chained on that group.
    pub fn lookup(&self, epoch: u64, kind: Kind, key: &[u8]) -> Lookup {
        let q = self.queue.lock();
        if q.epoch != epoch {
            return Lookup::Stale;
        }
        for m in q.members.iter().rev() {
            let map = match kind {
                Kind::Record => &m.written.records,
                Kind::Elem => &m.written.elems,
            };
            if let Some(v) = map.get(key) {
                return Lookup::Found(v.clone());
            }
        }
        Lookup::Miss
    }

    /// Every element write the members of group `epoch` made under `prefix` (engine sub-keys,
    /// the newest member's write of each), in key order: what a chained segment's ordered scan
    /// merges over the engine's elements. `None`: the group was taken (the segment is stale).
    pub fn elems_under(&self, epoch: u64, prefix: &[u8]) -> Option<Vec<(Vec<u8>, Option<Bytes>)>> {
        let q = self.queue.lock();
        if q.epoch != epoch {
            return None;
        }
        let mut found: std::collections::BTreeMap<&[u8], &Option<Bytes>> = Default::default();
        for m in &q.members {
            for (k, v) in &m.written.elems {
                if k.starts_with(prefix) {
                    found.insert(k, v); // later members overwrite earlier ones
                }
            }
        }
        Some(
            found
                .into_iter()
                .map(|(k, v)| (k.to_vec(), v.clone()))
                .collect(),
        )
    }

    /// Takes the forming group's members and ends its epoch.
    fn take(&self) -> Vec<Member> {
        let mut q = self.queue.lock();
        q.epoch += 1;
        self.epoch.store(q.epoch, SeqCst);
        std::mem::take(&mut q.members)
    }

    /// Commits `batch` together with whatever other connections commit in the same scheduler
    /// tick, and releases `guard` (the segment's stripes) once the group is written or certain
    /// not to be. `written` is what the batch writes, read by segments chained behind it. A
    /// guard that chains (see `locks`) joins only the group it chained on, even with an empty
    /// batch (its replies may rest on the group's writes). Returns the batch's outcome and
    /// what this call wrote.
    pub async fn commit(
        &self,
        store: &Store,
        batch: WriteBatch,
        written: Written,
        guard: Option<MultiGuard>,
    ) -> (Outcome, GroupCount) {
        let mut count = GroupCount::default();
        let chained = guard.as_ref().and_then(MultiGuard::chained_epoch);
        // A large batch is written at once, alone (unless it depends on its group's writes).
        if chained.is_none() && batch.size_in_bytes() >= MAX_GROUP_BYTES {
            let outcome = write_alone(store, batch, &mut count);
            drop(guard);
            return (outcome, count);
        }
        let (tx, rx) = oneshot::channel();
        let lead = {
            let mut q = self.queue.lock();
            if chained.is_some_and(|e| e != q.epoch) {
                drop(q);
                drop(guard); // gives the chain slots back
                return (Outcome::Stale, count);
            }
            let mut guard = guard;
            if let Some(g) = guard.as_mut() {
                // Under the queue lock: a segment that chains next reads this member's writes.
                g.mark(q.epoch);
                g.release_chain_slots();
            }
            q.members.push(Member {
                batch,
                written,
                chained: chained.is_some(),
                _guard: guard,
                done: tx,
            });
            q.members.len() == 1
        };
        if lead {
            let mut claim = LeaderGuard {
                groups: self,
                armed: true,
            };
            if lead_waits(self.alone.load(Relaxed)) {
                tokio::task::yield_now().await;
            }
            let members = self.take();
            if members.len() == 1 {
                self.alone.fetch_add(1, Relaxed);
            } else {
                self.alone.store(0, Relaxed);
            }
            claim.armed = false;
            count = commit_members(store, members);
        }
        // A sender dropped unanswered means its leader was dropped before it wrote.
        (rx.await.unwrap_or(Outcome::Retry), count)
    }
}

/// What happened to the group's writes so far, for the members after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Past {
    /// Every part was written.
    Written,
    /// A part was refused as invalid (a client's limit violation; the engine goes on):
    /// chained members, which may have read the refused writes, are not written.
    Refused,
    /// A part failed otherwise (a stall, or an error that stops the engine's writes): nothing
    /// more is written.
    Failed,
}

/// A member's answer once its part's write returned `result`. `several`: the part carried
/// more than one member. `chained`: the member chained (see `locks`) — its replies may rest on
/// other members' writes, so a failed write sends it to rerun rather than report the error
/// beside replies that read what was never written.
fn answer(result: &Result<(), strata::Error>, several: bool, chained: bool) -> Outcome {
    match result {
        Ok(()) => Outcome::Committed,
        Err(e) if e.kind() == strata::ErrorKind::Incomplete => Outcome::Retry,
        // One member's limit violation refuses the combined batch: each alone instead.
        Err(e) if e.kind() == strata::ErrorKind::InvalidArgument && several => Outcome::Retry,
        Err(_) if chained => Outcome::Retry,
        Err(e) => Outcome::Failed(StoreError::from(e.clone())),
    }
}

/// Writes `members` in queue order, as few engine writes as [`MAX_GROUP_BYTES`] allows; after
/// a write that failed, writes nothing more, or, if it was only refused as invalid, no chained
/// member (later members may have read the failed ones' writes). Then releases every
/// member's stripes and answers each.
fn commit_members(store: &Store, members: Vec<Member>) -> GroupCount {
    let mut count = GroupCount::default();
    let mut guards = Vec::with_capacity(members.len());
    let mut answers = Vec::with_capacity(members.len());
    let mut past = Past::Written;
    let skipped = |m: &Member, past: Past| match past {
        Past::Written => false,
        Past::Refused => m.chained,
        Past::Failed => true,
    };
    // What the members hold, for one allocation per part instead of doubling as they append.
    let mut left: usize = members.iter().map(|m| m.batch.size_in_bytes()).sum();
    let mut members = members.into_iter().peekable();
    while let Some(mut first) = members.next() {
        if skipped(&first, past) {
            guards.push(first._guard);
            answers.push((first.done, Outcome::Retry));
            continue;
        }
        let mut merged = std::mem::take(&mut first.batch);
        left = left.saturating_sub(merged.size_in_bytes());
        merged.reserve(left.min(MAX_GROUP_BYTES.saturating_sub(merged.size_in_bytes())));
        let mut part = vec![first];
        while let Some(next) = members.peek() {
            if skipped(next, past)
                || merged.size_in_bytes() + next.batch.size_in_bytes() > MAX_GROUP_BYTES
            {
                break;
            }
            let Some(m) = members.next() else { break };
            left = left.saturating_sub(m.batch.size_in_bytes());
            merged.append(&m.batch);
            part.push(m);
        }
        let several = part.len() > 1;
        // Members that only chained (reads) may make a part with nothing to write.
        let writes = !merged.is_empty();
        let result = if writes {
            store.write_no_slowdown(merged)
        } else {
            Ok(())
        };
        match &result {
            Ok(()) => {
                count.writes += u64::from(writes);
                count.segments += part.len() as u64;
            }
            Err(e) if e.kind() == strata::ErrorKind::InvalidArgument => {
                if past == Past::Written {
                    past = Past::Refused;
                }
            }
            Err(_) => past = Past::Failed,
        }
        for m in part {
            guards.push(m._guard);
            answers.push((m.done, answer(&result, several, m.chained)));
        }
    }
    // Every write is done (or certain not to be): release the stripes first, so a member, once
    // answered, never finds its own stripe still held; a member whose task is gone no longer
    // needs the answer.
    drop(guards);
    for (done, outcome) in answers {
        let _ = done.send(outcome);
    }
    count
}

/// A batch as its own engine write.
fn write_alone(store: &Store, batch: WriteBatch, count: &mut GroupCount) -> Outcome {
    let r = store.write_no_slowdown(batch);
    if r.is_ok() {
        count.writes += 1;
        count.segments += 1;
    }
    answer(&r, false, false)
}

#[cfg(test)]
#[path = "commit_group_tests.rs"]
mod tests;
