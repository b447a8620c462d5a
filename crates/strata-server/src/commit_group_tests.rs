//! Tests of `commit_group`: grouping, byte limits, failures, cancellation, and the hot-key
//! chaining protocol (single steps polled by hand, and races on a two-worker runtime).

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
    store
        .db()
        .unwrap()
        .get(key.as_bytes())
        .unwrap()
        .map(|v| v.to_vec())
}

/// Engine write groups so far (each engine write of a lone writer is one).
fn engine_writes(store: &Store) -> u64 {
    store.db().unwrap().stats().write_groups
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
                tokio::spawn(
                    async move { groups.commit(&store, b, Written::default(), guard).await },
                )
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
    let mut leader = pin!(groups.commit(&store, put("a", "1"), Written::default(), None));
    assert!(leader.as_mut().poll(&mut cx).is_pending());
    let mut member = pin!(groups.commit(&store, bad, Written::default(), None));
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
    let mut leader = Box::pin(groups.commit(&store, put("a", "1"), Written::default(), None));
    assert!(leader.as_mut().poll(&mut cx).is_pending()); // queued first, yields
    let mut member = pin!(groups.commit(&store, put("b", "2"), Written::default(), Some(guard_b)));
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
    let mut next = pin!(groups.commit(&store, put("c", "3"), Written::default(), None));
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
    let mut leader = pin!(groups.commit(&store, put("a", "1"), Written::default(), None));
    assert!(leader.as_mut().poll(&mut cx).is_pending());
    let mut member =
        Box::pin(groups.commit(&store, put("b", "2"), Written::default(), Some(guard_b)));
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

fn written(key: &str, value: &str) -> Written {
    let mut w = Written::default();
    w.records
        .insert(key.as_bytes().to_vec(), Some(Bytes::from(value.to_owned())));
    w
}

/// A segment that finds its stripe held by a member of the forming group chains on it:
/// it reads that member's pending write and is written in the same engine write, after it.
#[test]
fn a_chained_member_reads_its_group_and_is_written_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let groups = CommitGroups::default();
    let mut cx = Context::from_waker(Waker::noop());
    let before = engine_writes(&store);
    let epoch = groups.epoch();
    let first_guard = store.locks().try_lock_keys(&[b"k"]).unwrap();
    let mut first =
        pin!(groups.commit(&store, put("k", "1"), written("k", "1"), Some(first_guard)));
    assert!(first.as_mut().poll(&mut cx).is_pending());
    assert!(store.locks().try_lock_keys(&[b"k"]).is_err(), "held");
    let second_guard = store
        .locks()
        .try_lock_keys_or_chain(&[b"k"], groups.epoch())
        .expect("chains on the forming group");
    assert_eq!(
        groups.lookup(epoch, Kind::Record, b"k"),
        Lookup::Found(Some(Bytes::from("1")))
    );
    assert_eq!(groups.lookup(epoch, Kind::Elem, b"k"), Lookup::Miss);
    let mut second =
        pin!(groups.commit(&store, put("k", "2"), written("k", "2"), Some(second_guard)));
    assert!(second.as_mut().poll(&mut cx).is_pending());
    // The next chained segment reads the newest member's write.
    let third_guard = store
        .locks()
        .try_lock_keys_or_chain(&[b"k"], epoch)
        .expect("the slot was given back");
    assert_eq!(
        groups.lookup(epoch, Kind::Record, b"k"),
        Lookup::Found(Some(Bytes::from("2")))
    );
    // Reads only: it still joins, and is answered with the group.
    let mut third = pin!(groups.commit(
        &store,
        WriteBatch::new(),
        Written::default(),
        Some(third_guard)
    ));
    assert!(third.as_mut().poll(&mut cx).is_pending());
    assert!(matches!(
        first.as_mut().poll(&mut cx),
        Poll::Ready((
            Outcome::Committed,
            GroupCount {
                writes: 1,
                segments: 3
            }
        ))
    ));
    for m in [second.as_mut().poll(&mut cx), third.as_mut().poll(&mut cx)] {
        assert!(matches!(m, Poll::Ready((Outcome::Committed, _))), "{m:?}");
    }
    assert_eq!(engine_writes(&store) - before, 1);
    assert_eq!(read(&store, "k"), Some(b"2".to_vec()));
    assert_eq!(groups.lookup(epoch, Kind::Record, b"k"), Lookup::Stale);
    assert!(store.locks().try_lock_keys(&[b"k"]).is_ok(), "released");
}

/// A segment that chained on a group its leader took meanwhile is not written: it is told
/// `Stale`, and its chain slot and stripes are given back.
#[test]
fn a_member_chained_on_a_taken_group_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let groups = CommitGroups::default();
    let mut cx = Context::from_waker(Waker::noop());
    let guard = store.locks().try_lock_keys(&[b"k"]).unwrap();
    let mut first = pin!(groups.commit(&store, put("k", "1"), written("k", "1"), Some(guard)));
    assert!(first.as_mut().poll(&mut cx).is_pending());
    let late = store
        .locks()
        .try_lock_keys_or_chain(&[&b"k"[..], b"free"], groups.epoch())
        .unwrap();
    assert!(matches!(
        first.as_mut().poll(&mut cx),
        Poll::Ready((Outcome::Committed, _))
    ));
    let mut second = pin!(groups.commit(&store, put("k", "2"), written("k", "2"), Some(late)));
    assert!(matches!(
        second.as_mut().poll(&mut cx),
        Poll::Ready((Outcome::Stale, GroupCount { writes: 0, .. }))
    ));
    assert_eq!(read(&store, "k"), Some(b"1".to_vec()));
    assert!(store.locks().try_lock_keys(&[&b"k"[..], b"free"]).is_ok());
}

/// An ordered scan of a chained segment sees the group's element writes under its prefix, in
/// key order, the newest member's write of each (a deletion too), and nothing once the group
/// was taken.
#[test]
fn a_chained_scan_sees_the_groups_element_writes_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let groups = CommitGroups::default();
    let mut cx = Context::from_waker(Waker::noop());
    let epoch = groups.epoch();
    let elems = |pairs: &[(&str, Option<&str>)]| {
        let mut w = Written::default();
        for (k, v) in pairs {
            w.elems
                .insert(k.as_bytes().to_vec(), v.map(|v| Bytes::from(v.to_owned())));
        }
        w
    };
    let guard = store.locks().try_lock_keys(&[b"s"]).unwrap();
    let first = elems(&[("s/3", Some("a")), ("s/1", Some("b")), ("t/2", Some("c"))]);
    let mut first = pin!(groups.commit(&store, put("x", "1"), first, Some(guard)));
    assert!(first.as_mut().poll(&mut cx).is_pending());
    let chained = store
        .locks()
        .try_lock_keys_or_chain(&[b"s"], epoch)
        .expect("chains");
    let second = elems(&[("s/1", None), ("s/2", Some("d"))]);
    let mut second = pin!(groups.commit(&store, put("y", "2"), second, Some(chained)));
    assert!(second.as_mut().poll(&mut cx).is_pending());
    let b = |s: &str| Some(Bytes::from(s.to_owned()));
    assert_eq!(
        groups.elems_under(epoch, b"s/"),
        Some(vec![
            (b"s/1".to_vec(), None),
            (b"s/2".to_vec(), b("d")),
            (b"s/3".to_vec(), b("a")),
        ])
    );
    assert_eq!(groups.elems_under(epoch, b"u/"), Some(vec![]));
    assert!(matches!(
        first.as_mut().poll(&mut cx),
        Poll::Ready((Outcome::Committed, _))
    ));
    assert_eq!(groups.elems_under(epoch, b"s/"), None, "taken");
}

/// A failed write's answer: the error for a member that read nothing of others' writes,
/// a rerun for a chained one (it may have read what was never written), a rerun for all on
/// a stall or when several members' combined batch was refused.
#[test]
fn answers_after_a_write() {
    let io = Err(strata::Error::external("disk", "full"));
    let invalid = Err(strata::Error::invalid_argument("too big"));
    let stall = Err(strata::Error::from(strata::error::ErrorRepr::Incomplete(
        "stall",
    )));
    let cases = [
        (&Ok(()), false, false, "Committed"),
        (&Ok(()), true, true, "Committed"),
        (&io, false, false, "Failed"),
        (&io, true, false, "Failed"),
        (&io, false, true, "Retry"),
        (&invalid, false, false, "Failed"),
        (&invalid, true, false, "Retry"),
        (&invalid, false, true, "Retry"),
        (&stall, false, false, "Retry"),
    ];
    for (result, several, chained, want) in cases {
        let got = format!("{:?}", answer(result, several, chained));
        assert!(
            got.starts_with(want),
            "{result:?} several {several} chained {chained}: {got}"
        );
    }
}

/// After a part was refused as invalid, members that chained (and may have read the
/// refused writes) are held back, to rerun; the others are still written. After any other
/// failure nothing more is written.
#[test]
fn after_a_refused_part_only_chained_members_are_held_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let groups = CommitGroups::default();
    let mut cx = Context::from_waker(Waker::noop());
    // Half the group limit each: the refused batch and the chained one need two parts.
    let half = "x".repeat(MAX_GROUP_BYTES / 2);
    let mut bad = WriteBatch::new();
    bad.put(vec![b'k'; strata::MAX_KEY_SIZE + 1], "v");
    bad.put("a", &half);
    let guard_a = store.locks().try_lock_keys(&[b"a"]).unwrap();
    let mut refused = pin!(groups.commit(&store, bad, Written::default(), Some(guard_a)));
    assert!(refused.as_mut().poll(&mut cx).is_pending());
    let chained_guard = store
        .locks()
        .try_lock_keys_or_chain(&[b"a"], groups.epoch())
        .expect("chains on the refused member's stripe");
    let mut chained = pin!(groups.commit(
        &store,
        put("a", &half),
        written("a", "half"),
        Some(chained_guard)
    ));
    assert!(chained.as_mut().poll(&mut cx).is_pending());
    let mut plain = pin!(groups.commit(&store, put("c", "3"), Written::default(), None));
    assert!(plain.as_mut().poll(&mut cx).is_pending());
    assert!(matches!(
        refused.as_mut().poll(&mut cx),
        Poll::Ready((
            Outcome::Failed(_),
            GroupCount {
                writes: 1,
                segments: 1
            }
        ))
    ));
    assert!(matches!(
        chained.as_mut().poll(&mut cx),
        Poll::Ready((Outcome::Retry, _))
    ));
    assert!(matches!(
        plain.as_mut().poll(&mut cx),
        Poll::Ready((Outcome::Committed, _))
    ));
    assert_eq!(read(&store, "a"), None);
    assert_eq!(read(&store, "c"), Some(b"3".to_vec()));
    assert!(store.locks().try_lock_keys(&[b"a", b"c"]).is_ok());
}

/// The chaining protocol under real races: tasks on two worker threads increment one
/// counter as the executor runs a segment — lock or chain, read through the group when
/// chained, write, commit; rerun on `Stale`/`Retry` — while leaders take groups on either
/// thread. Every increment must see the one before it: the values handed out are exactly
/// 1..=N and the stored counter is N.
#[test]
fn racing_increments_through_chains_lose_nothing() {
    const TASKS: usize = 8;
    const ROUNDS: usize = 1000;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let groups = Arc::new(CommitGroups::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let chained = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (store, groups, chained) = (store.clone(), groups.clone(), chained.clone());
            rt.spawn(async move {
                let mut got = Vec::with_capacity(ROUNDS);
                for _ in 0..ROUNDS {
                    loop {
                        let epoch = groups.epoch();
                        let guard = match store.locks().try_lock_keys_or_chain(&[b"ctr"], epoch) {
                            Ok(g) => g,
                            Err(stripe) => {
                                store.locks().wait_unlocked(stripe, epoch).await;
                                continue;
                            }
                        };
                        let chain = guard.chained_epoch();
                        let cur = match chain.map(|e| groups.lookup(e, Kind::Record, b"ctr")) {
                            Some(Lookup::Stale) => continue, // drops the guard
                            Some(Lookup::Found(v)) => v.map(|v| v.to_vec()),
                            Some(Lookup::Miss) | None => read(&store, "ctr"),
                        };
                        let n: u64 = cur
                            .map_or(0, |v| std::str::from_utf8(&v).unwrap().parse().unwrap())
                            + 1;
                        let v = n.to_string();
                        let outcome = groups
                            .commit(&store, put("ctr", &v), written("ctr", &v), Some(guard))
                            .await
                            .0;
                        match outcome {
                            Outcome::Committed => {
                                if chain.is_some() {
                                    chained.fetch_add(1, SeqCst);
                                }
                                got.push(n);
                                break;
                            }
                            Outcome::Stale | Outcome::Retry => continue,
                            Outcome::Failed(e) => panic!("{e}"),
                        }
                    }
                }
                got
            })
        })
        .collect();
    let mut all: Vec<u64> = rt.block_on(async {
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    all.sort_unstable();
    let n = (TASKS * ROUNDS) as u64;
    assert_eq!(
        all,
        (1..=n).collect::<Vec<_>>(),
        "an increment lost or repeated"
    );
    assert_eq!(read(&store, "ctr"), Some(n.to_string().into_bytes()));
    eprintln!("{} of {n} increments chained", chained.load(SeqCst));
}

/// A leader waits for company unless the last groups were all solitary; then it still waits
/// on every probe, and a group that had company restarts the count.
#[test]
fn leaders_wait_for_company_unless_alone_lately() {
    let cases = [
        (0, true),
        (1, true),
        (3, true),
        (4, false),
        (5, false),
        (15, false),
        (16, true),
        (17, false),
        (32, true),
    ];
    for (alone, waits) in cases {
        assert_eq!(lead_waits(alone), waits, "after {alone} solitary groups");
    }
}
