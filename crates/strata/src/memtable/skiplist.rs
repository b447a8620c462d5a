//! The memtable's index: a concurrent, insert-only skiplist of user keys whose nodes live in an
//! arena (the shape of RocksDB's `InlineSkipList`), each key node holding the chain of that
//! key's versions (entries), newest first.
//!
//! A *key node* is one per user key and sits in the towers; an *entry* is one internal key (user
//! key, sequence number and kind) with its value. The entry that creates a key node is stored
//! inside it: `[KeyNode][Entry header][tower][internal key][value]`; a later version of the key is
//! an entry of its own, `[Entry header][internal key][value]`, linked into the key node's chain.
//! So a new version of a key the memtable already holds — a counter's INCR, an overwrite — costs
//! a point-index slot and a compare-and-swap instead of a search through every version of every
//! key (a dozen or more dependent cache misses in a memtable larger than the caches), and the
//! towers index distinct keys rather than versions. Compared with a skiplist of heap nodes this
//! saves allocations on the write path, and dropping a flushed memtable frees a few hundred
//! chunks instead of a million objects.
//!
//! Order: key nodes by user key; a chain by trailer, descending (newest first), which together
//! is [`types::compare_internal`]'s order of the entries. A cursor walks that order; `prev`
//! within a chain (singly linked) replays the chain from its head once and then steps back
//! through what it saw.
//!
//! Invariants: key nodes and entries are never unlinked, moved or changed after they are
//! published, except for the atomic links (tower pointers, a key node's chain head, an entry's
//! `older` link); the arena frees its chunks only when the list is dropped, so a pointer read
//! from the list stays valid for as long as the list lives. Each user key has at most one
//! linked key node (level 0 decides membership; an insert that loses that race adds its entry to
//! the winner's chain). Internal keys are unique: inserting one that is present leaves the list
//! unchanged. Any number of threads may insert and read at once: links are set with
//! compare-and-swap, an entry is fully written before the release that publishes it, and readers
//! never block. A key node's chain head is set before the node is linked, so a reachable key
//! node always has at least one entry.
//!
//! An optional [`PointIndex`] maps each user key to its key node, for point lookups and inserts
//! that skip the search; a key node is published there once it is linked on all its levels, and
//! an insert that joined another thread's key node publishes it too, before `insert` returns
//! (so before the engine publishes its sequence number). A point lookup walks the chain from the
//! newest entry: a read at an old snapshot of a key with many newer versions in this memtable
//! steps over each of them.
//!
//! All `unsafe` of the memtable's structure is in this file and its cursor (`skiplist_cursor`;
//! the others: the arena's chunks, the `prefetch` hint and the point index's zeroed
//! allocation). Depends on `types`, `arena`, `point_index` and `prefetch` only.

use std::cell::Cell;
use std::cmp::Ordering;
use std::mem::size_of;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtOrd};

use super::arena::Arena;
use super::point_index::{Found, PointIndex};
use crate::types;

/// Highest tower; with branching 4 it indexes 4^12 = 16M keys in O(log n).
const MAX_HEIGHT: usize = 12;
/// One node in `BRANCHING` at a level also appears on the level above.
const BRANCHING: u64 = 4;
/// Most entries [`SkipList::insert_group_hashed`] takes at once: enough searches in flight to keep
/// the memory system busy, little enough state to stay in L1.
pub const INSERT_GROUP: usize = 32;

/// A key node's fixed part. Its first entry's header follows, then the tower of `height`
/// next pointers (the height is kept in that header), then the entry's bytes.
#[repr(C)]
struct KeyNode {
    head: u64,
    /// The key's newest entry; each entry links to the next older one.
    chain: AtomicPtr<Entry>,
}

/// An entry's fixed part; its internal key and then its value follow (after the tower when the
/// entry is a key node's first).
#[repr(C)]
struct Entry {
    older: AtomicPtr<Entry>,
    /// The internal key's length in the low 24 bits; in the high 8, the height of the tower
    /// between this header and the key (0 for an entry that is not a key node's first).
    len_height: u32,
    value_len: u32,
}

const KEY_NODE: usize = size_of::<KeyNode>();
const ENTRY: usize = size_of::<Entry>();
const LEN_BITS: u32 = 24;
const LEN_MASK: u32 = (1 << LEN_BITS) - 1;

/// The first entry of key node `n` (stored inside it).
///
/// SAFETY (callers): `n` is a key node of this list (or its head).
#[inline]
unsafe fn first(n: *const KeyNode) -> *mut Entry {
    n.cast::<u8>().add(KEY_NODE).cast_mut().cast()
}

/// The tower slot of `n` at `level` (`level < height`).
///
/// SAFETY (callers): `n` is a key node of this list (or its head) and `level` is below its
/// height.
#[inline]
unsafe fn tower(n: *const KeyNode, level: usize) -> *const AtomicPtr<KeyNode> {
    n.cast::<u8>()
        .add(KEY_NODE + ENTRY + level * size_of::<AtomicPtr<KeyNode>>())
        .cast()
}

#[inline]
unsafe fn next(n: *const KeyNode, level: usize) -> *mut KeyNode {
    (*tower(n, level)).load(AtOrd::Acquire)
}

/// Starts loading the cache line of `n` (which may be null): the search asks for the node it
/// would descend to while it waits for the one it compares, so two cache misses overlap.
#[inline(always)]
fn prefetch<T>(n: *const T) {
    super::prefetch::prefetch(n);
}

/// Where the entry's key (then its value) starts: after its header and its tower, if any.
/// Derived from the entry pointer, whose provenance is the arena chunk's.
#[inline]
unsafe fn data(e: *const Entry) -> *const u8 {
    let height = ((*e).len_height >> LEN_BITS) as usize;
    e.cast::<u8>()
        .add(ENTRY + height * size_of::<AtomicPtr<KeyNode>>())
}

/// The entry's internal key and value.
///
/// SAFETY (callers): `e` is a published entry of a list that outlives `'a`.
#[inline]
unsafe fn key<'a>(e: *const Entry) -> &'a [u8] {
    std::slice::from_raw_parts(data(e), ((*e).len_height & LEN_MASK) as usize)
}

#[inline]
unsafe fn value<'a>(e: *const Entry) -> &'a [u8] {
    std::slice::from_raw_parts(
        data(e).add(((*e).len_height & LEN_MASK) as usize),
        (*e).value_len as usize,
    )
}

#[inline]
unsafe fn trailer(e: *const Entry) -> u64 {
    types::trailer(key(e))
}

/// The user key of key node `n`.
#[inline]
unsafe fn user_key<'a>(n: *const KeyNode) -> &'a [u8] {
    types::user_key(key(first(n)))
}

#[inline]
unsafe fn older(e: *const Entry) -> *mut Entry {
    (*e).older.load(AtOrd::Acquire)
}

/// The point index's hash of a user key.
#[inline]
pub(crate) fn point_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// A key node from the address the point index holds (`expose_provenance` of a node pointer).
#[inline]
fn node_at(addr: usize) -> *mut KeyNode {
    ptr::with_exposed_provenance_mut(addr)
}

/// A search key: an internal key split the way nodes compare.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    head: u64,
    user_key: &'a [u8],
    trailer: u64,
}

impl<'a> Target<'a> {
    pub fn new(user_key: &'a [u8], trailer: u64) -> Self {
        Target {
            head: types::key_head(user_key),
            user_key,
            trailer,
        }
    }

    /// An encoded internal key.
    pub fn internal(ikey: &'a [u8]) -> Self {
        Target::new(types::user_key(ikey), types::trailer(ikey))
    }
}

/// Order of key node `n`'s user key against `t`'s (the trailer plays no part).
#[inline]
unsafe fn compare(n: *const KeyNode, t: &Target) -> Ordering {
    match (*n).head.cmp(&t.head) {
        Ordering::Equal => user_key(n).cmp(t.user_key),
        o => o,
    }
}

/// Whether entry `e` sorts at or after `t` (same user key): its trailer is not larger.
#[inline]
unsafe fn at_or_after(e: *const Entry, t: &Target) -> bool {
    trailer(e) <= t.trailer
}

fn random_height() -> usize {
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            // Any odd, per-thread seed will do: heights need independence, not secrecy.
            let x = Cell::new(0u8);
            (&x as *const Cell<u8> as usize as u64) | 1
        });
    }
    STATE.with(|s| {
        let mut h = 1;
        let mut x = s.get();
        while h < MAX_HEIGHT {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            if (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % BRANCHING != 0 {
                break;
            }
            h += 1;
        }
        s.set(x);
        h
    })
}

/// The skiplist. See the module comment for its invariants.
pub struct SkipList {
    arena: Arena,
    head: *mut KeyNode,
    max_height: AtomicUsize,
    /// Entries (internal keys) in the list.
    len: AtomicUsize,
    /// Key nodes (distinct user keys) in the list.
    keys: AtomicUsize,
    index: Option<PointIndex>,
}

// SAFETY: nodes and entries are immutable once published except for their links, which are
// atomics; the arena's state is behind a mutex. Sharing the list is sharing those.
unsafe impl Send for SkipList {}
unsafe impl Sync for SkipList {}

impl SkipList {
    pub fn new() -> SkipList {
        SkipList::with_index(0)
    }

    /// A list with a [`PointIndex`] of about `index_slots` slots (none when 0).
    pub fn with_index(index_slots: usize) -> SkipList {
        let arena = Arena::new();
        // The head: a full tower of null pointers (the arena's memory is zeroed), an empty
        // chain and an empty first entry that nothing reads.
        let head = arena
            .alloc(KEY_NODE + ENTRY + MAX_HEIGHT * size_of::<AtomicPtr<KeyNode>>())
            .cast::<KeyNode>();
        // SAFETY: freshly allocated, 8-aligned, large enough for both headers.
        unsafe {
            head.write(KeyNode {
                head: 0,
                chain: AtomicPtr::new(ptr::null_mut()),
            });
            first(head).write(Entry {
                older: AtomicPtr::new(ptr::null_mut()),
                len_height: (MAX_HEIGHT as u32) << LEN_BITS,
                value_len: 0,
            });
        }
        SkipList {
            arena,
            head,
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            keys: AtomicUsize::new(0),
            index: (index_slots > 0).then(|| PointIndex::new(index_slots)),
        }
    }

    /// Bytes of the point index (0 without one).
    pub fn index_bytes(&self) -> usize {
        self.index.as_ref().map_or(0, PointIndex::bytes)
    }

    /// Whether every key is in the point index (see [`SkipList::get_point_hashed`]).
    #[cfg(test)]
    pub fn index_is_complete(&self) -> bool {
        self.index.as_ref().is_some_and(PointIndex::is_complete)
    }

    pub fn len(&self) -> usize {
        self.len.load(AtOrd::Relaxed)
    }

    /// Distinct user keys.
    pub fn keys(&self) -> usize {
        self.keys.load(AtOrd::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Arena bytes taken by nodes and entries (keys, values, towers, headers).
    pub fn memory_used(&self) -> usize {
        self.arena.used.load(AtOrd::Relaxed)
    }

    /// What the point index knows of `t`'s user key (whose [`point_hash`] is `hash`);
    /// `Unknown` without an index.
    fn find(&self, t: &Target, hash: u64) -> Found {
        match &self.index {
            // SAFETY: the index holds only key nodes of this list, published and alive.
            Some(ix) => ix.find(hash, |o| unsafe { user_key(node_at(o)) == t.user_key }),
            None => Found::Unknown,
        }
    }

    /// The key node of `t`'s user key if the point index has it.
    fn indexed(&self, t: &Target, hash: u64) -> Option<*mut KeyNode> {
        match self.find(t, hash) {
            Found::Item(o) => Some(node_at(o)),
            Found::Absent | Found::Unknown => None,
        }
    }

    /// Inserts the internal key `user_key | trailer` (as [`types::append_internal_key`] lays
    /// it out) with `value`; false (and nothing changes) if that key is already present.
    pub fn insert(&self, user_key: &[u8], trailer: u64, value: &[u8]) -> bool {
        let t = Target::new(user_key, trailer);
        let hash = if self.index.is_some() {
            point_hash(user_key)
        } else {
            0
        };
        if let Some(n) = self.indexed(&t, hash) {
            let e = self.new_entry(&t, value);
            // SAFETY: `n` is a linked key node of `t`'s user key; `e` is unpublished.
            return unsafe { self.add_version(n, e) };
        }
        let (n, height) = self.new_key_node(&t, value);
        self.max_height.fetch_max(height, AtOrd::Relaxed);
        // SAFETY: `n` is a new, unpublished key node of `t`, `height` tall.
        unsafe { self.search_and_link(n, height, &t, hash) }
    }

    /// Finds where key node `n` goes, level by level from the top, and links it there (see
    /// [`SkipList::link`] for what it returns).
    ///
    /// SAFETY (callers): `n` is an unpublished key node of `t`, `height` tall, and `max_height`
    /// was raised to at least `height`.
    unsafe fn search_and_link(
        &self,
        n: *mut KeyNode,
        height: usize,
        t: &Target,
        hash: u64,
    ) -> bool {
        let top = self.max_height.load(AtOrd::Relaxed);
        let mut prev = [self.head; MAX_HEIGHT];
        let mut succ = [ptr::null_mut(); MAX_HEIGHT];
        let mut x = self.head;
        for level in (0..top).rev() {
            // SAFETY: `x` is the head or a key node of the list whose key is < t.
            let (p, s) = unsafe { self.splice(x, level, t) };
            prev[level] = p;
            succ[level] = s;
            x = p;
        }
        // SAFETY: `n` is unpublished and `height` tall; prev/succ are a splice of `t`.
        unsafe { self.link(n, height, t, hash, &mut prev, &mut succ) }
    }

    /// [`SkipList::insert_group_hashed`], hashing the keys (for tests).
    #[cfg(test)]
    pub fn insert_group(&self, entries: &[(&[u8], u64, &[u8])], inserted: &mut [bool]) {
        let mut hashes = [0u64; INSERT_GROUP];
        for (h, e) in hashes.iter_mut().zip(entries) {
            *h = point_hash(e.0);
        }
        self.insert_group_hashed(entries, &hashes[..entries.len()], inserted);
    }

    /// Inserts several entries (`(user_key, trailer, value)`, at most [`INSERT_GROUP`], with
    /// `hashes[i]` the [`point_hash`] of `entries[i]`'s user key, which the memtable computes once
    /// for its filter too) as [`SkipList::insert`] does one, and says for each whether it was
    /// new. An entry whose key the point index knows joins its chain at once; the searches of
    /// the others advance in lock step, one node each per round, and each round first
    /// prefetches every node it is about to compare: a search is a chain of dependent cache
    /// misses, and this way the misses of different entries overlap instead of queueing.
    pub fn insert_group_hashed(
        &self,
        entries: &[(&[u8], u64, &[u8])],
        hashes: &[u64],
        inserted: &mut [bool],
    ) {
        let k = entries.len();
        assert!(k <= INSERT_GROUP && inserted.len() >= k && hashes.len() == k);
        let mut t = [Target::new(&[], 0); INSERT_GROUP];
        let mut nodes = [(ptr::null_mut(), 0usize); INSERT_GROUP];
        // The level each search is at, plus one (0 when it is done or not needed).
        let mut at = [0usize; INSERT_GROUP];
        let mut active = 0;
        let top = self.max_height.load(AtOrd::Relaxed);
        for (i, &(user_key, trailer, value)) in entries.iter().enumerate() {
            t[i] = Target::new(user_key, trailer);
            if let Some(n) = self.indexed(&t[i], hashes[i]) {
                let e = self.new_entry(&t[i], value);
                // SAFETY: as in `insert`.
                inserted[i] = unsafe { self.add_version(n, e) };
                continue;
            }
            nodes[i] = self.new_key_node(&t[i], value);
            self.max_height.fetch_max(nodes[i].1, AtOrd::Relaxed);
            at[i] = top.max(nodes[i].1);
            active += 1;
        }
        // Nothing to search (every key was in the index: versions of keys the memtable
        // holds), or one search, which has nothing to overlap with: the lock-step search's
        // per-entry arrays (kilobytes to initialize) are not needed.
        if active <= 1 {
            if let Some(i) = (0..k).find(|&i| at[i] > 0) {
                let (node, height) = nodes[i];
                // SAFETY: `node` is new and unpublished, `height` tall, and `max_height` was
                // raised to it above.
                inserted[i] = unsafe { self.search_and_link(node, height, &t[i], hashes[i]) };
            }
            return;
        }
        let mut prev = [[self.head; MAX_HEIGHT]; INSERT_GROUP];
        let mut succ = [[ptr::null_mut(); MAX_HEIGHT]; INSERT_GROUP];
        let mut x = [self.head; INSERT_GROUP];
        let mut n = [ptr::null_mut::<KeyNode>(); INSERT_GROUP];
        while active > 0 {
            for i in 0..k {
                if at[i] > 0 {
                    let level = at[i] - 1;
                    // SAFETY: `x[i]` is the head or a published key node < t[i], tall enough
                    // for `level` (it was reached on that level or above; the head is full
                    // height).
                    unsafe {
                        n[i] = next(x[i], level);
                        prefetch(n[i]);
                        if level > 0 {
                            prefetch(next(x[i], level - 1));
                        }
                    }
                }
            }
            for i in 0..k {
                if at[i] == 0 {
                    continue;
                }
                let level = at[i] - 1;
                // SAFETY: `n[i]` is null or a published key node.
                if !n[i].is_null() && unsafe { compare(n[i], &t[i]) } == Ordering::Less {
                    x[i] = n[i];
                } else {
                    prev[i][level] = x[i];
                    succ[i][level] = n[i];
                    at[i] -= 1;
                    if at[i] == 0 {
                        active -= 1;
                    }
                }
            }
        }
        for i in 0..k {
            let (node, height) = nodes[i];
            if node.is_null() {
                continue;
            }
            // SAFETY: as in `insert`. An earlier entry of the group linked between prev and
            // succ makes the compare-and-swap fail, and `link` then splices again.
            inserted[i] =
                unsafe { self.link(node, height, &t[i], hashes[i], &mut prev[i], &mut succ[i]) };
        }
    }

    /// An entry for `t` and `value`, not yet linked.
    fn new_entry(&self, t: &Target, value: &[u8]) -> *mut Entry {
        let key_len = t.user_key.len() + 8;
        let e = self
            .arena
            .alloc(ENTRY + key_len + value.len())
            .cast::<Entry>();
        // SAFETY: the allocation holds the header and the bytes; nobody else can see it
        // before it is linked.
        unsafe {
            e.write(Entry {
                older: AtomicPtr::new(ptr::null_mut()),
                len_height: len_height(key_len, 0),
                value_len: value.len() as u32,
            });
            write_bytes(e.cast::<u8>().add(ENTRY), t, value);
        }
        e
    }

    /// A key node for `t` holding its entry of `t` and `value` (not yet linked), and its
    /// height.
    fn new_key_node(&self, t: &Target, value: &[u8]) -> (*mut KeyNode, usize) {
        let height = random_height();
        let tower_bytes = height * size_of::<AtomicPtr<KeyNode>>();
        let key_len = t.user_key.len() + 8;
        let n = self
            .arena
            .alloc(KEY_NODE + ENTRY + tower_bytes + key_len + value.len())
            .cast::<KeyNode>();
        // SAFETY: the allocation holds both headers, the tower (zeroed: null pointers) and
        // the bytes; nobody else can see the node before it is linked.
        unsafe {
            let e = first(n);
            e.write(Entry {
                older: AtomicPtr::new(ptr::null_mut()),
                len_height: len_height(key_len, height),
                value_len: value.len() as u32,
            });
            n.write(KeyNode {
                head: t.head,
                chain: AtomicPtr::new(e),
            });
            write_bytes(n.cast::<u8>().add(KEY_NODE + ENTRY + tower_bytes), t, value);
        }
        (n, height)
    }

    /// Links key node `n` (of key `t`, `height` tall, user key [`point_hash`] `hash`) level by
    /// level, level 0 first, then publishes it in the point index. If level 0 already holds a
    /// key node of the same user key, `n`'s entry joins that node's chain instead (and `n`
    /// stays unlinked). False (and nothing changes) if `t` is already present.
    ///
    /// SAFETY (callers): `n` is an unpublished key node of this list; for every level below
    /// `height`, `prev[level]` is the head or a published key node < t, tall enough for the
    /// level, and `succ[level]` is null or a published key node that was its successor there.
    unsafe fn link(
        &self,
        n: *mut KeyNode,
        height: usize,
        t: &Target,
        hash: u64,
        prev: &mut [*mut KeyNode; MAX_HEIGHT],
        succ: &mut [*mut KeyNode; MAX_HEIGHT],
    ) -> bool {
        for level in 0..height {
            loop {
                if level == 0 && !succ[0].is_null() && compare(succ[0], t) == Ordering::Equal {
                    let owner = succ[0];
                    let added = self.add_version(owner, first(n));
                    // The owner's inserter may not have published it yet; this insert must
                    // be findable before it returns.
                    self.publish(owner, t, hash);
                    return added;
                }
                (*tower(n, level)).store(succ[level], AtOrd::Relaxed);
                if (*tower(prev[level], level))
                    .compare_exchange(succ[level], n, AtOrd::Release, AtOrd::Acquire)
                    .is_ok()
                {
                    break;
                }
                // Someone linked a node between prev and succ: find the splice again from
                // prev, still < t.
                let (p, s) = self.splice(prev[level], level, t);
                prev[level] = p;
                succ[level] = s;
            }
        }
        self.len.fetch_add(1, AtOrd::Relaxed);
        self.keys.fetch_add(1, AtOrd::Relaxed);
        self.publish(n, t, hash);
        true
    }

    /// Records key node `n` (of `t`'s user key) in the point index, if there is one.
    ///
    /// SAFETY (callers): `n` is a linked key node of this list.
    unsafe fn publish(&self, n: *mut KeyNode, t: &Target, hash: u64) {
        if let Some(ix) = &self.index {
            debug_assert_eq!(hash, point_hash(t.user_key));
            ix.publish(
                hash,
                n.expose_provenance(),
                // SAFETY: the index holds only key nodes of this list, published and alive.
                |o| unsafe { user_key(node_at(o)) == t.user_key },
                // A user key has one key node: whoever published first is right.
                |_| false,
            );
        }
    }

    /// Links entry `e` into key node `n`'s chain at its place (newer entries first); false (and
    /// `e` stays unlinked) if the chain holds its internal key already.
    ///
    /// SAFETY (callers): `n` is a published key node of this list with `e`'s user key; `e` is an
    /// unpublished entry of this list.
    unsafe fn add_version(&self, n: *mut KeyNode, e: *mut Entry) -> bool {
        let tr = trailer(e);
        let mut slot: *const AtomicPtr<Entry> = &(*n).chain;
        let mut cur = (*slot).load(AtOrd::Acquire);
        loop {
            if !cur.is_null() {
                let c = trailer(cur);
                if c == tr {
                    return false;
                }
                if c > tr {
                    // `cur` is newer: `e` goes after it.
                    slot = &(*cur).older;
                    cur = (*slot).load(AtOrd::Acquire);
                    continue;
                }
            }
            (*e).older.store(cur, AtOrd::Relaxed);
            match (*slot).compare_exchange(cur, e, AtOrd::Release, AtOrd::Acquire) {
                Ok(_) => break,
                // Another entry went in here; it may be newer or older than `e`.
                Err(now) => cur = now,
            }
        }
        self.len.fetch_add(1, AtOrd::Relaxed);
        true
    }

    /// From `x` (< t) along `level`: the last key node < t and its successor (null at the end).
    unsafe fn splice(
        &self,
        mut x: *mut KeyNode,
        level: usize,
        t: &Target,
    ) -> (*mut KeyNode, *mut KeyNode) {
        loop {
            let n = next(x, level);
            if level > 0 {
                prefetch(next(x, level - 1));
                if level > 1 {
                    prefetch(next(x, level - 2));
                }
            }
            if n.is_null() || compare(n, t) != Ordering::Less {
                return (x, n);
            }
            x = n;
        }
    }

    /// The first key node whose user key is `>= t`'s, or null.
    fn seek_ge(&self, t: &Target) -> *mut KeyNode {
        let mut x = self.head;
        let mut level = self.max_height.load(AtOrd::Relaxed) - 1;
        loop {
            // SAFETY: `x` is the head or a published key node, tall enough for `level`.
            let n = unsafe { next(x, level) };
            if level > 0 {
                // SAFETY: as above.
                prefetch(unsafe { next(x, level - 1) });
                if level > 1 {
                    prefetch(unsafe { next(x, level - 2) });
                }
            }
            if !n.is_null() && unsafe { compare(n, t) } == Ordering::Less {
                x = n;
            } else if level == 0 {
                return n;
            } else {
                level -= 1;
            }
        }
    }

    /// The last key node whose user key is `< t`'s (the last of all with `t = None`), or null.
    fn seek_lt(&self, t: Option<&Target>) -> *mut KeyNode {
        let mut x = self.head;
        let mut level = self.max_height.load(AtOrd::Relaxed) - 1;
        loop {
            // SAFETY: as in `seek_ge`.
            let n = unsafe { next(x, level) };
            if !n.is_null() && t.is_none_or(|t| unsafe { compare(n, t) } == Ordering::Less) {
                x = n;
            } else if level == 0 {
                return if x == self.head { ptr::null_mut() } else { x };
            } else {
                level -= 1;
            }
        }
    }

    /// Starts loading the point-index home slots of keys with these point hashes, which
    /// inserting them will look up (a hint).
    pub fn prefetch_slots(&self, hashes: &[u64]) {
        if let Some(ix) = &self.index {
            for &h in hashes {
                ix.prefetch_home(h);
            }
        }
    }

    /// Starts loading into the CPU caches what [`SkipList::get_point_hashed`] of keys with these
    /// point hashes will touch first: their point-index home slots (all at once), then the
    /// key nodes those slots name. A hint: no effect on any result.
    pub fn prefetch_points(&self, hashes: &[u64]) {
        let Some(ix) = &self.index else { return };
        for &h in hashes {
            ix.prefetch_home(h);
        }
        for &h in hashes {
            if let Some(o) = ix.home_item(h) {
                prefetch(node_at(o));
            }
        }
    }

    /// [`SkipList::get_point_hashed`], hashing the key (for tests).
    #[cfg(test)]
    pub fn get_point(
        &self,
        t: &Target,
        may_contain: impl FnOnce() -> bool,
    ) -> Option<(&[u8], &[u8])> {
        self.get_point_hashed(t, point_hash(t.user_key), may_contain)
    }

    /// The first entry `>= t` if it is an entry of `t`'s user key (whose [`point_hash`] is
    /// `hash`): the newest version visible at `t`'s sequence number. The key node comes from
    /// the point index when it knows the key, else from a search (unless `may_contain()`, a
    /// filter's answer, says no); then its chain is walked from the newest entry.
    pub fn get_point_hashed(
        &self,
        t: &Target,
        hash: u64,
        may_contain: impl FnOnce() -> bool,
    ) -> Option<(&[u8], &[u8])> {
        debug_assert_eq!(hash, point_hash(t.user_key));
        let n = match self.find(t, hash) {
            Found::Absent => return None,
            Found::Unknown if !may_contain() => return None,
            Found::Unknown => {
                let n = self.seek_ge(t);
                // SAFETY: a published key node.
                if n.is_null() || unsafe { user_key(n) } != t.user_key {
                    return None;
                }
                n
            }
            Found::Item(o) => node_at(o),
        };
        // SAFETY: a published key node and its entries, alive as long as `self`.
        unsafe {
            let mut e = (*n).chain.load(AtOrd::Acquire);
            while !e.is_null() && !at_or_after(e, t) {
                e = older(e);
            }
            (!e.is_null()).then(|| (key(e), value(e)))
        }
    }
}

/// The packed key length and tower height of an [`Entry`].
fn len_height(key_len: usize, height: usize) -> u32 {
    // The engine caps keys at 64 KiB and values at 64 MiB (`batch`), but a replayed log is
    // not checked against that cap: a longer key would spill into the height and make the
    // entry's bytes be read out of place, so this holds in release builds too.
    assert!(
        key_len <= LEN_MASK as usize && height <= MAX_HEIGHT,
        "memtable key of {key_len} bytes is past the 16 MiB entry limit"
    );
    key_len as u32 | (height as u32) << LEN_BITS
}

/// Writes `t`'s internal key and then `value` at `dst`.
///
/// SAFETY (callers): `dst` has room for the key (user key and 8 trailer bytes) and the value,
/// and nobody else can see it.
unsafe fn write_bytes(dst: *mut u8, t: &Target, value: &[u8]) {
    ptr::copy_nonoverlapping(t.user_key.as_ptr(), dst, t.user_key.len());
    let tr = t.trailer.to_le_bytes();
    ptr::copy_nonoverlapping(tr.as_ptr(), dst.add(t.user_key.len()), 8);
    ptr::copy_nonoverlapping(value.as_ptr(), dst.add(t.user_key.len() + 8), value.len());
}

impl Default for SkipList {
    fn default() -> Self {
        SkipList::new()
    }
}

#[path = "skiplist_cursor.rs"]
mod cursor;
pub use cursor::Cursor;

#[cfg(test)]
#[path = "skiplist_tests.rs"]
mod tests;
