//! Tests of the skiplist (`skiplist.rs`); also run under Miri by `scripts/miri-skiplist.sh`.

use std::collections::BTreeSet;
use std::sync::Arc;

use strata_test_support::{seed, Rng};

use super::super::arena::{MAX_CHUNK, MIN_CHUNK};
use super::*;

fn ikey(user: &[u8], seq: u64) -> Vec<u8> {
    types::internal_key(user, seq, 1)
}

fn insert(list: &SkipList, ikey: &[u8], value: &[u8]) -> bool {
    list.insert(types::user_key(ikey), types::trailer(ikey), value)
}

/// Test sizes: smaller under Miri (`bash scripts/miri-skiplist.sh`), which runs ~1000x
/// slower.
fn scale(normal: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        normal
    }
}

/// Inserts `keys` as one group (values from `value_of`) and checks each insert's answer
/// against the oracle, which it updates.
fn insert_checked(
    list: &SkipList,
    keys: &[Vec<u8>],
    value_of: impl Fn(&[u8]) -> &[u8],
    oracle: &mut BTreeSet<Ord>,
    s: u64,
    round: usize,
) {
    let entries: Vec<(&[u8], u64, &[u8])> = keys
        .iter()
        .map(|k| (types::user_key(k), types::trailer(k), value_of(k)))
        .collect();
    let mut inserted = [false; INSERT_GROUP];
    list.insert_group(&entries, &mut inserted);
    for (i, k) in keys.iter().enumerate() {
        let fresh = oracle.insert(Ord(k.clone()));
        assert_eq!(inserted[i], fresh, "seed {s} round {round} entry {i}");
    }
}

fn cursor(list: &Arc<SkipList>) -> Cursor<SkipList> {
    Cursor::new(list.clone(), |l| l)
}

fn walk(list: &Arc<SkipList>) -> Vec<Vec<u8>> {
    let mut c = cursor(list);
    c.seek_to_first();
    let mut out = Vec::new();
    while let Some((k, _)) = c.entry() {
        out.push(k.to_vec());
        c.next();
    }
    out
}

#[test]
#[cfg_attr(miri, ignore)]
fn heights_follow_the_branching_factor() {
    let n = 100_000;
    let mut counts = [0usize; MAX_HEIGHT + 1];
    for _ in 0..n {
        counts[random_height()] += 1;
    }
    // About 3/4 at height 1, 3/16 at 2, 3/64 at 3.
    assert!((72_000..78_000).contains(&counts[1]), "{counts:?}");
    assert!((17_000..20_500).contains(&counts[2]), "{counts:?}");
    assert!((4_000..5_400).contains(&counts[3]), "{counts:?}");
    assert_eq!(counts[0], 0);
}

/// Random keys (shared heads, short and empty user keys, several versions) against a
/// `BTreeSet` ordered by `compare_internal`: order, seeks both ways, duplicates refused.
#[test]
fn matches_a_sorted_oracle() {
    let s = seed("skiplist_matches_a_sorted_oracle");
    let mut rng = Rng::new(s);
    for round in 0..scale(40, 3) {
        let list = Arc::new(SkipList::new());
        let mut oracle = BTreeSet::new();
        let gen = |rng: &mut Rng| {
            let len = rng.index(12);
            let user: Vec<u8> = (0..len)
                .map(|i| if i < 7 { 7 } else { rng.below(3) as u8 })
                .collect();
            ikey(&user, rng.below(5))
        };
        for _ in 0..rng.index(scale(400, 80)) {
            let k = gen(&mut rng);
            let v = k.iter().rev().copied().collect::<Vec<u8>>();
            let fresh = oracle.insert(Ord(k.clone()));
            assert_eq!(insert(&list, &k, &v), fresh, "seed {s} round {round}");
        }
        assert_eq!(list.len(), oracle.len());
        let want: Vec<Vec<u8>> = oracle.iter().map(|k| k.0.clone()).collect();
        assert_eq!(walk(&list), want, "seed {s} round {round}");
        for _ in 0..scale(100, 20) {
            let t = gen(&mut rng);
            let target = Target::internal(&t);
            let mut c = cursor(&list);
            c.seek(&target);
            let ge = oracle.range(Ord(t.clone())..).next().map(|k| k.0.clone());
            assert_eq!(c.entry().map(|e| e.0.to_vec()), ge, "seed {s}");
            if let Some((k, v)) = c.entry() {
                assert_eq!(v, k.iter().rev().copied().collect::<Vec<u8>>());
            }
            c.seek_for_prev(&target);
            let le = oracle
                .range(..=Ord(t.clone()))
                .next_back()
                .map(|k| k.0.clone());
            assert_eq!(c.entry().map(|e| e.0.to_vec()), le, "seed {s}");
            if c.valid() {
                c.prev();
                let before = oracle.range(..Ord(le.unwrap())).next_back();
                assert_eq!(c.entry().map(|e| e.0.to_vec()), before.map(|k| k.0.clone()));
            }
        }
        let mut c = cursor(&list);
        c.seek_to_last();
        assert_eq!(c.entry().map(|e| e.0.to_vec()), want.last().cloned());
    }
}

/// Keys with long version chains, their versions inserted in random order (newer and older
/// than the chain's newest, one by one and in groups, with point indexes roomy, overflowing
/// and none): a cursor driven by a random mix of seeks, `next` and `prev` stays where a
/// cursor over the oracle would be, and point lookups find the newest version at or below
/// the snapshot.
#[test]
fn version_chains_walk_both_ways_like_an_oracle() {
    let s = seed("skiplist_version_chains_walk_both_ways");
    let mut rng = Rng::new(s);
    for round in 0..scale(24, 3) {
        let slots = [0, 64, 4096][round % 3];
        let list = Arc::new(SkipList::with_index(slots));
        let mut oracle = BTreeSet::new();
        let keys = 1 + rng.index(scale(40, 6));
        let gen = |rng: &mut Rng| {
            let user = format!("k{:03}", rng.index(keys)).into_bytes();
            ikey(&user, rng.below(scale(60, 12) as u64))
        };
        for _ in 0..rng.index(scale(900, 90)) {
            let most = if rng.below(2) == 0 { 1 } else { 8 };
            let group: Vec<Vec<u8>> = (0..1 + rng.index(most)).map(|_| gen(&mut rng)).collect();
            insert_checked(&list, &group, |k| &k[k.len() - 8..], &mut oracle, s, round);
        }
        assert_eq!(list.len(), oracle.len(), "seed {s} round {round}");
        let users: BTreeSet<&[u8]> = oracle.iter().map(|k| types::user_key(&k.0)).collect();
        assert_eq!(list.keys(), users.len(), "seed {s} round {round}");
        let all: Vec<Vec<u8>> = oracle.iter().map(|k| k.0.clone()).collect();
        assert_eq!(walk(&list), all, "seed {s} round {round}");
        // The oracle's position: an index into `all` (`all.len()`: invalid).
        let mut c = cursor(&list);
        let mut at = all.len();
        for step in 0..scale(600, 60) {
            match rng.below(6) {
                0 => {
                    let t = gen(&mut rng);
                    c.seek(&Target::internal(&t));
                    at = all.partition_point(|k| types::compare_internal(k, &t).is_lt());
                }
                1 => {
                    let t = gen(&mut rng);
                    c.seek_for_prev(&Target::internal(&t));
                    at = all
                        .partition_point(|k| types::compare_internal(k, &t).is_le())
                        .checked_sub(1)
                        .unwrap_or(all.len());
                }
                2 if rng.below(4) == 0 => {
                    c.seek_to_first();
                    at = 0;
                }
                2 => {
                    c.seek_to_last();
                    at = all.len().saturating_sub(1);
                }
                3 | 4 => {
                    c.next();
                    at = if at < all.len() { at + 1 } else { at };
                }
                _ => {
                    c.prev();
                    at = if at < all.len() {
                        at.checked_sub(1).unwrap_or(all.len())
                    } else {
                        at
                    };
                }
            }
            let want = all.get(at).cloned();
            assert_eq!(
                c.entry().map(|e| e.0.to_vec()),
                want,
                "seed {s} round {round} step {step}"
            );
            if let Some((k, v)) = c.entry() {
                assert_eq!(v, &k[k.len() - 8..], "seed {s}");
            }
        }
        for _ in 0..scale(200, 20) {
            let t = gen(&mut rng);
            let target = Target::internal(&t);
            let want = oracle
                .range(Ord(t.clone())..)
                .next()
                .filter(|k| types::user_key(&k.0) == types::user_key(&t))
                .map(|k| k.0.clone());
            let got = list.get_point(&target, || true).map(|(k, _)| k.to_vec());
            assert_eq!(got, want, "seed {s} round {round}");
        }
    }
}

/// Groups of up to `INSERT_GROUP` entries, with keys repeated within a group and against
/// the list, land exactly as one-by-one inserts would: each new key once, each repeat
/// refused, the list the oracle's order.
#[test]
fn groups_match_a_sorted_oracle() {
    let s = seed("skiplist_groups_match_a_sorted_oracle");
    let mut rng = Rng::new(s);
    for round in 0..scale(40, 3) {
        let list = Arc::new(SkipList::new());
        let mut oracle = BTreeSet::new();
        for _ in 0..rng.index(scale(60, 10)) {
            let keys: Vec<Vec<u8>> = (0..1 + rng.index(INSERT_GROUP))
                .map(|_| {
                    let user: Vec<u8> = (0..rng.index(10))
                        .map(|i| if i < 6 { 7 } else { rng.below(4) as u8 })
                        .collect();
                    ikey(&user, rng.below(3))
                })
                .collect();
            insert_checked(&list, &keys, |k| &k[..1], &mut oracle, s, round);
        }
        assert_eq!(list.len(), oracle.len(), "seed {s} round {round}");
        let want: Vec<Vec<u8>> = oracle.iter().map(|k| k.0.clone()).collect();
        assert_eq!(walk(&list), want, "seed {s} round {round}");
    }
}

/// Threads inserting groups and single entries over colliding keys at once: the union,
/// each key once, in order.
#[test]
fn concurrent_groups() {
    let s = seed("skiplist_concurrent_groups");
    for slots in [0, 64, 8192] {
        concurrent_groups_with_index(s, slots);
    }
}

fn concurrent_groups_with_index(s: u64, slots: usize) {
    let list = Arc::new(SkipList::with_index(slots));
    let keys_of = |w: u64| -> Vec<Vec<u8>> {
        let mut rng = Rng::new(s ^ w);
        (0..scale(8_000, 160))
            .map(|_| {
                ikey(
                    &rng.below(scale(3_000, 100) as u64).to_be_bytes(),
                    rng.below(3),
                )
            })
            .collect()
    };
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (list, keys) = (list.clone(), keys_of(w));
            std::thread::spawn(move || {
                let mut added = 0;
                for chunk in keys.chunks(if w % 2 == 0 { INSERT_GROUP } else { 1 }) {
                    let entries: Vec<(&[u8], u64, &[u8])> = chunk
                        .iter()
                        .map(|k| (types::user_key(k), types::trailer(k), &b"v"[..]))
                        .collect();
                    let mut inserted = [false; INSERT_GROUP];
                    list.insert_group(&entries, &mut inserted);
                    added += inserted.iter().filter(|&&b| b).count();
                }
                added
            })
        })
        .collect();
    let added: usize = writers.into_iter().map(|h| h.join().unwrap()).sum();
    let oracle: BTreeSet<Ord> = (0..4u64).flat_map(keys_of).map(Ord).collect();
    let want: Vec<Vec<u8>> = oracle.into_iter().map(|k| k.0).collect();
    assert_eq!(added, want.len(), "seed {s} slots {slots}");
    assert_eq!(walk(&list), want, "seed {s} slots {slots}");
}

/// `get_point` through point indexes roomy and overflowing (and none) answers what a
/// search answers: the newest version at or below the snapshot, versions inserted out of
/// order, concurrently from two threads, with prefetch hints beside them.
#[test]
fn point_lookups_match_a_search() {
    let s = seed("skiplist_point_lookups_match_a_search");
    for slots in [0, 64, 4096] {
        let list = Arc::new(SkipList::with_index(slots));
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let list = list.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng::new(s ^ w);
                    let keys: Vec<Vec<u8>> = (0..scale(3000, 150))
                        .map(|_| {
                            let user = rng.below(scale(400, 40) as u64).to_be_bytes();
                            ikey(&user, 1 + rng.below(1000))
                        })
                        .collect();
                    // One writer one entry at a time, the other in groups.
                    for chunk in keys.chunks(if w == 0 { 1 } else { INSERT_GROUP }) {
                        let entries: Vec<(&[u8], u64, &[u8])> = chunk
                            .iter()
                            .map(|k| (types::user_key(k), types::trailer(k), types::user_key(k)))
                            .collect();
                        let mut inserted = [false; INSERT_GROUP];
                        list.insert_group(&entries, &mut inserted);
                    }
                })
            })
            .collect();
        // Prefetch hints while the writers publish (they read slots being written).
        let prefetcher = {
            let list = list.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(s ^ 7);
                for _ in 0..scale(3000, 100) {
                    let hashes: Vec<u64> = (0..4)
                        .map(|_| point_hash(&rng.below(scale(400, 40) as u64).to_be_bytes()))
                        .collect();
                    list.prefetch_points(&hashes);
                }
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        prefetcher.join().unwrap();
        let mut rng = Rng::new(s ^ 99);
        for _ in 0..scale(2000, 100) {
            let user = rng.below(scale(420, 44) as u64).to_be_bytes();
            list.prefetch_points(&[point_hash(&user)]); // changes nothing
            let t = Target::new(&user, types::pack_trailer(rng.below(1100), 1));
            let want = {
                let mut c = cursor(&list);
                c.seek(&t);
                c.entry()
                    .filter(|(k, _)| types::user_key(k) == user)
                    .map(|(k, v)| (k.to_vec(), v.to_vec()))
            };
            let got = list
                .get_point(&t, || true)
                .map(|(k, v)| (k.to_vec(), v.to_vec()));
            assert_eq!(got, want, "seed {s} slots {slots}");
        }
    }
}

/// A key with many versions newer than the snapshot: the lookup steps over a few, then
/// searches, and finds the right version either way.
#[test]
fn point_lookups_past_many_newer_versions() {
    let list = SkipList::with_index(1024);
    for seq in 1..=scale(200, 30) as u64 {
        insert(&list, &ikey(b"hot", seq), &seq.to_be_bytes());
        insert(&list, &ikey(format!("k{seq}").as_bytes(), seq), b"x");
    }
    for snap in [1u64, 2, 5, 9, 10, 11, 25, 29, 30, 31, 199, 200, 1000] {
        let t = Target::new(b"hot", types::pack_trailer(snap, 1));
        let got = list
            .get_point(&t, || true)
            .map(|(k, _)| types::trailer(k) >> 8);
        let newest = scale(200, 30) as u64;
        assert_eq!(got, Some(snap.min(newest)), "snapshot {snap}");
    }
    let t = Target::new(b"hot", types::pack_trailer(0, 1));
    assert!(
        list.get_point(&t, || true).is_none(),
        "nothing at snapshot 0"
    );
}

/// `compare_internal` order for the oracle.
#[derive(Clone, PartialEq, Eq)]
struct Ord(Vec<u8>);
impl PartialOrd for Ord {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(std::cmp::Ord::cmp(self, o))
    }
}
impl std::cmp::Ord for Ord {
    fn cmp(&self, o: &Self) -> Ordering {
        types::compare_internal(&self.0, &o.0)
    }
}

/// Writers insert overlapping key sets while readers walk and seek: every insert lands
/// exactly once, readers always see sorted lists, and the final list is the union.
#[test]
fn concurrent_inserts_and_reads() {
    let s = seed("skiplist_concurrent_inserts_and_reads");
    let list = Arc::new(SkipList::new());
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let list = list.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(s ^ w);
                let mut added = 0;
                for _ in 0..scale(20_000, 300) {
                    // Keys collide across writers; each (key, seq) is inserted once.
                    let user = rng.below(scale(5_000, 200) as u64).to_be_bytes();
                    let k = ikey(&user, rng.below(4));
                    added += insert(&list, &k, &user) as usize;
                }
                added
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let list = list.clone();
            std::thread::spawn(move || {
                for _ in 0..scale(20, 2) {
                    let keys = walk(&list);
                    assert!(keys
                        .windows(2)
                        .all(|w| types::compare_internal(&w[0], &w[1]).is_lt()));
                }
            })
        })
        .collect();
    let added: usize = writers.into_iter().map(|h| h.join().unwrap()).sum();
    for r in readers {
        r.join().unwrap();
    }
    let keys = walk(&list);
    assert_eq!(keys.len(), added, "seed {s}");
    assert_eq!(list.len(), added);
    let mut oracle = BTreeSet::new();
    let mut rng_all: Vec<Rng> = (0..4u64).map(|w| Rng::new(s ^ w)).collect();
    for rng in rng_all.iter_mut() {
        for _ in 0..scale(20_000, 300) {
            let user = rng.below(scale(5_000, 200) as u64).to_be_bytes();
            oracle.insert(Ord(ikey(&user, rng.below(4))));
        }
    }
    assert_eq!(keys.len(), oracle.len(), "seed {s}");
}

/// Entries of every size class, each first in a fresh list (whose chunks start small) and
/// then mixed: all read back intact (a medium entry once overran a first, small chunk).
#[test]
fn entries_of_every_size_fit_their_chunks() {
    let sizes = [
        0,
        1,
        MIN_CHUNK - 100,
        MIN_CHUNK + 1,
        65_544,
        MAX_CHUNK / 4 - 64,
        MAX_CHUNK / 4 + 1,
    ];
    for &n in &sizes {
        let list = Arc::new(SkipList::new());
        let v = vec![n as u8 | 1; n];
        assert!(insert(&list, &ikey(b"k", 1), &v));
        assert!(insert(&list, &ikey(b"after", 2), b"tail"));
        let mut c = cursor(&list);
        c.seek_to_first();
        assert_eq!(c.entry().unwrap().1, &b"tail"[..]);
        c.next();
        assert_eq!(c.entry().unwrap().1, &v[..], "size {n}");
    }
    let list = Arc::new(SkipList::new());
    for (i, &n) in sizes.iter().cycle().take(3 * sizes.len()).enumerate() {
        assert!(insert(
            &list,
            &ikey(&(i as u32).to_be_bytes(), 1),
            &vec![i as u8; n]
        ));
    }
    let mut c = cursor(&list);
    c.seek_to_first();
    for (i, &n) in sizes.iter().cycle().take(3 * sizes.len()).enumerate() {
        assert_eq!(c.entry().unwrap().1, &vec![i as u8; n][..]);
        c.next();
    }
}

#[test]
fn large_entries_get_chunks_of_their_own() {
    let list = Arc::new(SkipList::new());
    let big = vec![9u8; scale(3 * MAX_CHUNK, MAX_CHUNK + 100)];
    assert!(insert(&list, &ikey(b"big", 1), &big));
    assert!(insert(&list, &ikey(b"small", 2), b"v"));
    let mut c = cursor(&list);
    c.seek_to_first();
    assert_eq!(c.entry().unwrap().1.len(), big.len());
    assert!(list.memory_used() > big.len());
}
