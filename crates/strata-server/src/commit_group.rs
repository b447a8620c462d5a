//! Group commit across connections: the write batches that segments running inline on the event
//! loop produce in one scheduler tick are committed with one engine write.
//!
//! redis-server appends every write of one event-loop iteration to its AOF buffer and writes the
//! buffer once before it sleeps. A connection task here is a future, not a loop iteration, so the
//! same effect is had this way: the first segment to [`CommitGroups::commit`] into an empty queue
//! becomes the group's leader and yields once (`tokio::task::yield_now`, which the runtime
//! resumes only after every task that was ready has run and the I/O driver has been polled);
//! segments of other connections that commit meanwhile queue behind it. The leader then takes
//! the queue, appends the batches in queue order into one (up to [`MAX_GROUP_BYTES`]) and writes
//! it with `no_slowdown`; each member learns its outcome through a one-shot channel. One WAL
//! record and one grouped memtable insert (whose skiplist searches overlap) replace one per
//! client: under 50 unpipelined clients that is the WAL `write(2)` and most of the cache misses
//! of each SET.
//!
//! Invariants:
//! - A member holds its segment's stripes until it has its outcome (the `locks` invariant), so no
//!   two members of a group write the same key and their order within the group is immaterial;
//!   readers see a member's writes only once the group's engine write returned.
//! - A member is told [`Outcome::Committed`] only after the engine acknowledged the write that
//!   contains its batch. Every member's batch is atomic (it is inside one atomic engine batch).
//! - A member told [`Outcome::Retry`] was not written at all: it discards its segment and reruns
//!   it on the engine pool. That is the answer when the write would stall
//!   (`ErrorKind::Incomplete`), when a combined write of several members failed (each then meets
//!   its own error alone), and when the leader was dropped before it committed (runtime shutdown).
//! - No member waits forever: the leader takes every queued member, and a leader dropped while
//!   it yields drops its members' senders (see [`LeaderGuard`]).
//!
//! Used only inline (the engine pool's threads block in the engine's own group commit).
//! Depends on `store`.

use parking_lot::Mutex;
use strata::WriteBatch;
use tokio::sync::oneshot;

use crate::store::{Store, StoreError};

/// Encoded bytes after which a leader starts another engine write for the rest of its queue;
/// a batch this large commits alone, without a group.
pub const MAX_GROUP_BYTES: usize = 1 << 20;

/// What became of a member's batch.
#[derive(Debug)]
pub enum Outcome {
    /// In the engine (acknowledged under the sync policy).
    Committed,
    /// The engine refused it (the batch was written alone).
    Failed(StoreError),
    /// Not written: rerun the segment where it may wait (the engine pool).
    Retry,
}

struct Member {
    batch: WriteBatch,
    done: oneshot::Sender<Outcome>,
}

/// The queue of the group being formed, shared by every connection of a server.
#[derive(Default)]
pub struct CommitGroups {
    queue: Mutex<Vec<Member>>,
}

/// What a call of [`CommitGroups::commit`] wrote, for INFO.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GroupCount {
    /// Engine writes that committed.
    pub writes: u64,
    /// Batches they carried.
    pub batches: u64,
}

/// A leader's claim on the queue: if the leader is dropped before it takes the queue (its task
/// cancelled while it yields), the queued members are dropped with their senders, and each of
/// them sees [`Outcome::Retry`].
struct LeaderGuard<'a> {
    groups: &'a CommitGroups,
    armed: bool,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.groups.queue.lock().clear();
        }
    }
}

impl CommitGroups {
    /// Commits `batch` together with whatever other connections commit in the same scheduler
    /// tick; returns its outcome and what this call wrote (zero unless it led a group).
    pub async fn commit(&self, store: &Store, batch: WriteBatch) -> (Outcome, GroupCount) {
        if batch.size_in_bytes() >= MAX_GROUP_BYTES {
            let mut count = GroupCount::default();
            return (write_alone(store, batch, &mut count), count);
        }
        let (tx, rx) = oneshot::channel();
        let lead = {
            let mut q = self.queue.lock();
            q.push(Member { batch, done: tx });
            q.len() == 1
        };
        let mut count = GroupCount::default();
        if lead {
            let mut guard = LeaderGuard {
                groups: self,
                armed: true,
            };
            tokio::task::yield_now().await;
            let members = std::mem::take(&mut *self.queue.lock());
            guard.armed = false;
            count = commit_members(store, members);
        }
        // A sender dropped unanswered means its leader was dropped (runtime shutdown).
        (rx.await.unwrap_or(Outcome::Retry), count)
    }
}

/// Writes `members` in queue order, as few engine writes as [`MAX_GROUP_BYTES`] allows, and
/// answers each.
fn commit_members(store: &Store, members: Vec<Member>) -> GroupCount {
    let mut count = GroupCount::default();
    let mut members = members.into_iter().peekable();
    while let Some(first) = members.next() {
        let mut group = vec![first.done];
        let mut merged = first.batch;
        while let Some(next) = members.peek() {
            if merged.size_in_bytes() + next.batch.size_in_bytes() > MAX_GROUP_BYTES {
                break;
            }
            let Some(m) = members.next() else { break };
            merged.append(&m.batch);
            group.push(m.done);
        }
        if group.len() == 1 {
            let outcome = write_alone(store, merged, &mut count);
            let _ = group.pop().map(|tx| tx.send(outcome));
            continue;
        }
        let n = group.len() as u64;
        let ok = store.write_no_slowdown(merged).is_ok();
        if ok {
            count.writes += 1;
            count.batches += n;
        }
        for tx in group {
            // A member whose task is gone no longer needs its answer.
            let _ = tx.send(if ok {
                Outcome::Committed
            } else {
                Outcome::Retry
            });
        }
    }
    count
}

/// One member's batch as its own engine write.
fn write_alone(store: &Store, batch: WriteBatch, count: &mut GroupCount) -> Outcome {
    match store.write_no_slowdown(batch) {
        Ok(()) => {
            count.writes += 1;
            count.batches += 1;
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

    fn store(dir: &std::path::Path) -> Store {
        let config = ServerConfig {
            dir: dir.to_path_buf(),
            ..Default::default()
        };
        Store::open(&config, Arc::new(AtomicU64::new(0))).unwrap()
    }

    fn put(key: &str, value: &str) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(key, value);
        b
    }

    fn read(store: &Store, key: &str) -> Option<Vec<u8>> {
        store.db().get(key.as_bytes()).unwrap().map(|v| v.to_vec())
    }

    #[test]
    fn one_tick_of_commits_is_one_engine_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(store(dir.path()));
        let groups = Arc::new(CommitGroups::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let counts = rt.block_on(async {
            // Spawned together, all ten run before the first (the leader) resumes.
            let tasks: Vec<_> = (0..10)
                .map(|i| {
                    let (store, groups) = (store.clone(), groups.clone());
                    tokio::spawn(async move {
                        groups
                            .commit(&store, put(&format!("k{i}"), &format!("v{i}")))
                            .await
                    })
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
        let writes: u64 = counts.iter().map(|c| c.writes).sum();
        let batches: u64 = counts.iter().map(|c| c.batches).sum();
        assert_eq!((writes, batches), (1, 10), "{counts:?}");
        assert_eq!(
            counts[0],
            GroupCount {
                writes: 1,
                batches: 10
            }
        );
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
        let store = Arc::new(store(dir.path()));
        let groups = Arc::new(CommitGroups::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let value = "x".repeat(MAX_GROUP_BYTES / 3);
        let big = "y".repeat(MAX_GROUP_BYTES);
        let (writes, batches) = rt.block_on(async {
            let mut tasks: Vec<_> = (0..5)
                .map(|i| {
                    let (store, groups, value) = (store.clone(), groups.clone(), value.clone());
                    tokio::spawn(async move {
                        groups.commit(&store, put(&format!("k{i}"), &value)).await
                    })
                })
                .collect();
            let (s, g) = (store.clone(), groups.clone());
            let big = big.clone();
            tasks.push(tokio::spawn(
                async move { g.commit(&s, put("big", &big)).await },
            ));
            let (mut writes, mut batches) = (0, 0);
            for t in tasks {
                let (outcome, count) = t.await.unwrap();
                assert!(matches!(outcome, Outcome::Committed), "{outcome:?}");
                writes += count.writes;
                batches += count.batches;
            }
            (writes, batches)
        });
        // Two groups of the five third-of-the-limit batches (2 fit under the limit, then 2, then
        // 1: three writes), and the big one alone.
        assert_eq!((writes, batches), (4, 6));
        assert_eq!(read(&store, "big"), Some(big.into_bytes()));
        for i in 0..5 {
            assert_eq!(
                read(&store, &format!("k{i}")),
                Some(value.clone().into_bytes())
            );
        }
    }

    #[test]
    fn a_dropped_leader_sends_its_members_to_retry_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let groups = CommitGroups::default();
        let mut cx = Context::from_waker(Waker::noop());
        let mut leader = Box::pin(groups.commit(&store, put("a", "1")));
        assert!(leader.as_mut().poll(&mut cx).is_pending()); // queued first, yields
        let mut member = pin!(groups.commit(&store, put("b", "2")));
        assert!(member.as_mut().poll(&mut cx).is_pending()); // queued behind it
        drop(leader);
        match member.as_mut().poll(&mut cx) {
            Poll::Ready((Outcome::Retry, count)) => assert_eq!(count, GroupCount::default()),
            other => panic!("{other:?}"),
        }
        assert_eq!(read(&store, "a"), None);
        assert_eq!(read(&store, "b"), None);
        // The queue is empty again: the next commit leads its own group.
        let mut next = pin!(groups.commit(&store, put("c", "3")));
        assert!(next.as_mut().poll(&mut cx).is_pending());
        assert!(matches!(
            next.as_mut().poll(&mut cx),
            Poll::Ready((
                Outcome::Committed,
                GroupCount {
                    writes: 1,
                    batches: 1
                }
            ))
        ));
        assert_eq!(read(&store, "c"), Some(b"3".to_vec()));
    }
}
