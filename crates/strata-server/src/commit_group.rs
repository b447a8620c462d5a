//! Group commit across connections: the write batches that segments running inline on the event
//! loop produce in one scheduler tick are committed with one engine write.
//!
//! redis-server appends every write of one event-loop iteration to its AOF buffer and writes the
//! buffer once before it sleeps. A connection task here is a future, not a loop iteration, so the
//! same effect is had this way: the first segment to [`CommitGroups::commit`] into an empty queue
//! becomes the group's leader and yields once (`tokio::task::yield_now`, which the runtime
//! resumes only once its worker has run out of ready tasks, or at its periodic maintenance, and
//! has polled the I/O driver); segments of other connections that commit meanwhile queue behind
//! it. The leader then takes the queue, appends the batches in queue order into one (up to
//! [`MAX_GROUP_BYTES`]) and writes it with `no_slowdown`; each member learns its outcome through
//! a one-shot channel. One WAL record and one grouped memtable insert (whose skiplist searches
//! overlap) replace one per client: under 50 unpipelined clients that is the WAL `write(2)` and
//! most of the cache misses of each SET.
//!
//! Invariants:
//! - A member hands its segment's stripe guard to the group with its batch; the leader releases
//!   it only after the engine write carrying the batch returned (or once it is certain the batch
//!   will not be written). So the `locks` invariant holds even when a member's task is cancelled
//!   while it waits, no two members of a group write the same key, and their order within the
//!   group is immaterial.
//! - A member is told [`Outcome::Committed`] only after the engine acknowledged the write that
//!   contains its batch; the engine publishes it (to readers) before that. Every member's batch
//!   is atomic (it is inside one atomic engine batch).
//! - [`Outcome::Retry`] means the batch did not reach the memtable and will not: the member
//!   discards its segment and reruns it on the engine pool. It is the answer when the write
//!   would stall (`ErrorKind::Incomplete`: nothing done), when a combined write of several
//!   members was refused as invalid (limits are checked before anything is done; each member
//!   then meets its own verdict alone), and when the leader was dropped before it wrote
//!   (runtime shutdown). Any other engine error is every member's [`Outcome::Failed`]: such an
//!   error stops the engine's writes for good (`set_bg_error`), so a rerun could not apply a
//!   batch twice, only fail again.
//! - No member waits forever: the leader takes every queued member, and a leader dropped while
//!   it yields drops its members, senders and guards with them (see [`LeaderGuard`]).
//!
//! Used only inline (the engine pool's threads block in the engine's own group commit).
//! Depends on `store`, `locks`.

use parking_lot::Mutex;
use strata::WriteBatch;
use tokio::sync::oneshot;

use crate::locks::MultiGuard;
use crate::store::{Store, StoreError};

/// Encoded bytes after which a leader starts another engine write for the rest of its queue;
/// a batch this large commits alone, without a group (as does one whose stripes are contended).
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
}

struct Member {
    batch: WriteBatch,
    /// Released once the batch is written (or certain not to be), before the answer.
    _guard: Option<MultiGuard>,
    done: oneshot::Sender<Outcome>,
}

/// The queue of the group being formed, shared by every connection of a server.
#[derive(Default)]
pub struct CommitGroups {
    queue: Mutex<Vec<Member>>,
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
            let members = std::mem::take(&mut *self.groups.queue.lock());
            drop(members); // outside the queue lock
        }
    }
}

impl CommitGroups {
    /// Commits `batch` together with whatever other connections commit in the same scheduler
    /// tick, and releases `guard` (the segment's stripes) once the batch is written or certain
    /// not to be. Returns the batch's outcome and what this call wrote.
    pub async fn commit(
        &self,
        store: &Store,
        batch: WriteBatch,
        guard: Option<MultiGuard>,
    ) -> (Outcome, GroupCount) {
        let mut count = GroupCount::default();
        // A large batch, or one whose stripes others wait for (a hot key: they could not join
        // this group anyway, and committing now lets them run in this tick rather than one per
        // tick), is written at once.
        if batch.size_in_bytes() >= MAX_GROUP_BYTES || guard.as_ref().is_some_and(|g| g.contended())
        {
            let outcome = write_alone(store, batch, &mut count);
            drop(guard);
            return (outcome, count);
        }
        let (tx, rx) = oneshot::channel();
        let lead = {
            let mut q = self.queue.lock();
            q.push(Member {
                batch,
                _guard: guard,
                done: tx,
            });
            q.len() == 1
        };
        if lead {
            let mut claim = LeaderGuard {
                groups: self,
                armed: true,
            };
            tokio::task::yield_now().await;
            let members = std::mem::take(&mut *self.queue.lock());
            claim.armed = false;
            count = commit_members(store, members);
        }
        // A sender dropped unanswered means its leader was dropped before it wrote.
        (rx.await.unwrap_or(Outcome::Retry), count)
    }
}

/// Writes `members` in queue order, as few engine writes as [`MAX_GROUP_BYTES`] allows, and
/// answers each (then releases its stripes).
fn commit_members(store: &Store, members: Vec<Member>) -> GroupCount {
    let mut count = GroupCount::default();
    let mut members = members.into_iter().peekable();
    while let Some(mut first) = members.next() {
        let mut merged = std::mem::take(&mut first.batch);
        let mut group = vec![first];
        while let Some(next) = members.peek() {
            if merged.size_in_bytes() + next.batch.size_in_bytes() > MAX_GROUP_BYTES {
                break;
            }
            let Some(m) = members.next() else { break };
            merged.append(&m.batch);
            group.push(m);
        }
        let several = group.len() > 1;
        let outcome = |r: &Result<(), strata::Error>| match r {
            Ok(()) => Outcome::Committed,
            Err(e) if e.kind() == strata::ErrorKind::Incomplete => Outcome::Retry,
            // One member's limit violation refuses the combined batch: each alone instead.
            Err(e) if e.kind() == strata::ErrorKind::InvalidArgument && several => Outcome::Retry,
            Err(e) => Outcome::Failed(StoreError::from(e.clone())),
        };
        let result = store.write_no_slowdown(merged);
        if result.is_ok() {
            count.writes += 1;
            count.segments += group.len() as u64;
        }
        for m in group {
            // Its batch is written (or certain not to be): release its stripes first, so the
            // member, once answered, never finds its own stripe still held; a member whose task
            // is gone no longer needs the answer.
            let Member { _guard, done, .. } = m;
            drop(_guard);
            let _ = done.send(outcome(&result));
        }
    }
    count
}

/// A batch as its own engine write.
fn write_alone(store: &Store, batch: WriteBatch, count: &mut GroupCount) -> Outcome {
    match store.write_no_slowdown(batch) {
        Ok(()) => {
            count.writes += 1;
            count.segments += 1;
            Outcome::Committed
        }
        Err(e) if e.kind() == strata::ErrorKind::Incomplete => Outcome::Retry,
        Err(e) => Outcome::Failed(StoreError::from(e)),
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    use super::*;
    use crate::config::ServerConfig;

    fn store(dir: &std::path::Path) -> Arc<Store> {
        let config = ServerConfig {
            dir: dir.to_path_buf(),
            ..Default::default()
        };
        Arc::new(Store::open(&config, Arc::new(AtomicU64::new(0))).unwrap())
    }

    fn put(key: &str, value: &str) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(key, value);
        b
    }

    fn read(store: &Store, key: &str) -> Option<Vec<u8>> {
        store.db().get(key.as_bytes()).unwrap().map(|v| v.to_vec())
    }

    /// Engine write groups so far (each engine write of a lone writer is one).
    fn engine_writes(store: &Store) -> u64 {
        store.db().stats().write_groups
    }

    /// Runs `n` commits spawned together on a one-thread runtime (so all of them run before
    /// the first, the leader, resumes); returns each outcome's count.
    fn commit_together(store: &Arc<Store>, batches: Vec<WriteBatch>) -> Vec<GroupCount> {
        let groups = Arc::new(CommitGroups::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let counts = rt.block_on(async {
            let tasks: Vec<_> = batches
                .into_iter()
                .enumerate()
                .map(|(i, b)| {
                    let (store, groups) = (store.clone(), groups.clone());
                    // Each member holds its key's stripe until the group writes.
                    let guard = store.locks().try_lock_keys(&[format!("k{i}")]).ok();
                    tokio::spawn(async move { groups.commit(&store, b, guard).await })
                })
                .collect();
            let mut counts = Vec::new();
            for t in tasks {
                let (outcome, count) = t.await.unwrap();
                assert!(matches!(outcome, Outcome::Committed), "{outcome:?}");
                counts.push(count);
            }
            counts
        });
        let n = counts.len();
        let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
        assert!(
            store.locks().try_lock_keys(&keys).is_ok(),
            "every member's stripe released"
        );
        counts
    }

    #[test]
    fn one_tick_of_commits_is_one_engine_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let before = engine_writes(&store);
        let batches = (0..10)
            .map(|i| put(&format!("k{i}"), &format!("v{i}")))
            .collect();
        let counts = commit_together(&store, batches);
        assert_eq!(
            engine_writes(&store) - before,
            1,
            "one engine write for ten segments"
        );
        assert_eq!(
            counts[0],
            GroupCount {
                writes: 1,
                segments: 10
            }
        );
        assert!(counts[1..].iter().all(|c| *c == GroupCount::default()));
        for i in 0..10 {
            assert_eq!(
                read(&store, &format!("k{i}")),
                Some(format!("v{i}").into_bytes())
            );
        }
    }

    #[test]
    fn groups_are_cut_at_the_byte_limit_and_big_batches_go_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let before = engine_writes(&store);
        let value = "x".repeat(MAX_GROUP_BYTES / 3);
        let big = "y".repeat(MAX_GROUP_BYTES);
        let mut batches: Vec<_> = (0..5).map(|i| put(&format!("k{i}"), &value)).collect();
        batches.push(put("big", &big));
        let counts = commit_together(&store, batches);
        // The big one alone; the five third-of-the-limit batches two by two: 2 + 2 + 1.
        assert_eq!(engine_writes(&store) - before, 4);
        let segments: u64 = counts.iter().map(|c| c.segments).sum();
        assert_eq!(segments, 6);
        assert_eq!(read(&store, "big"), Some(big.into_bytes()));
        for i in 0..5 {
            assert_eq!(
                read(&store, &format!("k{i}")),
                Some(value.clone().into_bytes())
            );
        }
    }

    #[test]
    fn an_invalid_member_sends_its_group_to_retry_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let groups = CommitGroups::default();
        let mut cx = Context::from_waker(Waker::noop());
        let mut bad = WriteBatch::new();
        bad.put(vec![b'k'; strata::MAX_KEY_SIZE + 1], "v");
        let mut leader = pin!(groups.commit(&store, put("a", "1"), None));
        assert!(leader.as_mut().poll(&mut cx).is_pending());
        let mut member = pin!(groups.commit(&store, bad, None));
        assert!(member.as_mut().poll(&mut cx).is_pending());
        assert!(matches!(
            leader.as_mut().poll(&mut cx),
            Poll::Ready((Outcome::Retry, GroupCount { writes: 0, .. }))
        ));
        assert!(matches!(
            member.as_mut().poll(&mut cx),
            Poll::Ready((Outcome::Retry, _))
        ));
        assert_eq!(read(&store, "a"), None, "a refused group writes nothing");
    }

    #[test]
    fn a_dropped_leader_sends_its_members_to_retry_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let groups = CommitGroups::default();
        let mut cx = Context::from_waker(Waker::noop());
        let guard_b = store.locks().try_lock_keys(&[b"b"]).unwrap();
        let mut leader = Box::pin(groups.commit(&store, put("a", "1"), None));
        assert!(leader.as_mut().poll(&mut cx).is_pending()); // queued first, yields
        let mut member = pin!(groups.commit(&store, put("b", "2"), Some(guard_b)));
        assert!(member.as_mut().poll(&mut cx).is_pending()); // queued behind it
        assert!(
            store.locks().try_lock_keys(&[b"b"]).is_err(),
            "held while queued"
        );
        drop(leader);
        match member.as_mut().poll(&mut cx) {
            Poll::Ready((Outcome::Retry, count)) => assert_eq!(count, GroupCount::default()),
            other => panic!("{other:?}"),
        }
        assert!(
            store.locks().try_lock_keys(&[b"b"]).is_ok(),
            "released with the group"
        );
        assert_eq!(read(&store, "a"), None);
        assert_eq!(read(&store, "b"), None);
        // The queue is empty again: the next commit leads its own group.
        let mut next = pin!(groups.commit(&store, put("c", "3"), None));
        assert!(next.as_mut().poll(&mut cx).is_pending());
        assert!(matches!(
            next.as_mut().poll(&mut cx),
            Poll::Ready((
                Outcome::Committed,
                GroupCount {
                    writes: 1,
                    segments: 1
                }
            ))
        ));
        assert_eq!(read(&store, "c"), Some(b"3".to_vec()));
    }

    /// A member whose task is cancelled while it waits keeps its stripes held until its batch
    /// is written: no other writer of its keys can read the state from before that write.
    #[test]
    fn a_cancelled_member_keeps_its_stripes_until_its_batch_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let groups = CommitGroups::default();
        let mut cx = Context::from_waker(Waker::noop());
        let guard_b = store.locks().try_lock_keys(&[b"b"]).unwrap();
        let mut leader = pin!(groups.commit(&store, put("a", "1"), None));
        assert!(leader.as_mut().poll(&mut cx).is_pending());
        let mut member = Box::pin(groups.commit(&store, put("b", "2"), Some(guard_b)));
        assert!(member.as_mut().poll(&mut cx).is_pending());
        drop(member);
        assert!(
            store.locks().try_lock_keys(&[b"b"]).is_err(),
            "its stripe stays held while its batch is queued"
        );
        assert!(matches!(
            leader.as_mut().poll(&mut cx),
            Poll::Ready((
                Outcome::Committed,
                GroupCount {
                    writes: 1,
                    segments: 2
                }
            ))
        ));
        assert_eq!(read(&store, "b"), Some(b"2".to_vec()));
        assert!(store.locks().try_lock_keys(&[b"b"]).is_ok());
    }
}
