//! The memtable's index: a concurrent, insert-only skiplist of internal keys whose nodes live in
//! an arena (the shape of RocksDB's `InlineSkipList`).
//!
//! A node is one arena allocation: a header (the key's [`types::key_head`], the key and value
//! lengths, the height), a tower of `height` next pointers, then the internal key and the
//! value bytes. Compared with a skiplist of heap nodes holding reference-counted buffers this
//! saves two allocations per entry on the write path, keeps a search to about one cache miss
//! per step (the head decides most comparisons), and makes dropping a flushed memtable free a
//! few hundred chunks instead of a million objects on the flush thread.
//!
//! Invariants: nodes are never unlinked, moved or changed after they are published, and the
//! arena frees its chunks only when the list is dropped, so a node pointer read from the list
//! stays valid for as long as the list lives. Internal keys are unique: inserting a key that is
//! already present leaves the list unchanged. Any number of threads may insert and read at
//! once: an insert links its node level by level with compare-and-swap (level 0 first, which
//! decides membership), and readers never block.
//!
//! An optional [`PointIndex`] maps each user key to its newest node, for point lookups that
//! skip the search; a node is published there once it is linked on all its levels, before
//! `insert` returns (so before the engine publishes its sequence number).
//!
//! All `unsafe` of the memtable's structure is in this file (the others: the `prefetch` hint and
//! the point index's zeroed allocation). Depends on `types`, `point_index` and `prefetch` only.

use std::cell::Cell;
use std::cmp::Ordering;
use std::mem::size_of;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtOrd};
use std::sync::Arc;

use parking_lot::Mutex;

use super::point_index::{Found, PointIndex};
use crate::types;

/// Highest tower; with branching 4 it indexes 4^12 = 16M entries in O(log n).
const MAX_HEIGHT: usize = 12;
/// One node in `BRANCHING` at a level also appears on the level above.
const BRANCHING: u64 = 4;
/// Most entries [`SkipList::insert_group_hashed`] takes at once: enough searches in flight to keep
/// the memory system busy, little enough state to stay in L1.
pub const INSERT_GROUP: usize = 32;
/// Versions newer than the snapshot a point lookup steps over from the indexed newest one
/// before it searches instead.
const MAX_VERSION_STEPS: usize = 8;
/// The first chunk; each further one is as large as all before it (so a small memtable wastes
/// little), up to [`MAX_CHUNK`].
const MIN_CHUNK: usize = 4 << 10;
const MAX_CHUNK: usize = 1 << 20;

/// Bump allocation of 8-aligned blocks from chunks that live until the arena is dropped.
struct Arena {
    state: Mutex<ArenaState>,
    /// Bytes handed out (not counting chunk tails left unused).
    used: AtomicUsize,
}

struct ArenaState {
    /// Chunks as raw parts of a `Box<[u64]>` (freed by `Drop`): raw, so that handing out
    /// pointers into them never conflicts with a `Box`'s claim to unique access.
    chunks: Vec<(*mut u64, usize)>,
    /// The unused rest of the last chunk, in bytes from `next`.
    next: *mut u8,
    left: usize,
    allocated: usize,
}

// SAFETY: `next` points into a chunk owned by `chunks`; the state is only touched under the
// mutex, and the memory it hands out is owned by the arena.
unsafe impl Send for ArenaState {}

impl Arena {
    fn new() -> Arena {
        Arena {
            state: Mutex::new(ArenaState {
                chunks: Vec::new(),
                next: ptr::null_mut(),
                left: 0,
                allocated: 0,
            }),
            used: AtomicUsize::new(0),
        }
    }

    /// `size` bytes (rounded up to 8), 8-aligned and zeroed, valid until the arena is dropped.
    fn alloc(&self, size: usize) -> *mut u8 {
        let size = size.div_ceil(8) * 8;
        let mut s = self.state.lock();
        if size > MAX_CHUNK / 4 {
            // A large entry gets a chunk of its own, and the current chunk's rest stays in
            // use (RocksDB's arena does the same), so big values waste no chunk tails.
            let words = size / 8;
            let chunk = Box::into_raw(vec![0u64; words].into_boxed_slice()).cast::<u64>();
            s.chunks.push((chunk, words));
            s.allocated += size;
            drop(s);
            self.used.fetch_add(size, AtOrd::Relaxed);
            return chunk.cast();
        }
        if s.left < size {
            // At least the entry: one below the large-entry cut can still outgrow the first,
            // small chunks.
            let words = s.allocated.clamp(MIN_CHUNK, MAX_CHUNK).max(size) / 8;
            let chunk = Box::into_raw(vec![0u64; words].into_boxed_slice()).cast::<u64>();
            s.chunks.push((chunk, words));
            s.next = chunk.cast::<u8>();
            s.left = words * 8;
            s.allocated += words * 8;
        }
        // Checked in release builds too: everything the skiplist writes relies on it.
        assert!(size <= s.left, "arena chunk too small for its allocation");
        let p = s.next;
        // SAFETY: `size <= left`, so `p + size` stays within (or one past) the current chunk.
        s.next = unsafe { p.add(size) };
        s.left -= size;
        drop(s);
        self.used.fetch_add(size, AtOrd::Relaxed);
        p
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for &(p, words) in &self.state.get_mut().chunks {
            // SAFETY: made by `Box::into_raw` of a `[u64]` of `words` in `alloc`, freed once.
            drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(p, words)) });
        }
    }
}

/// A node's fixed part; the tower and then the key and value bytes follow it in the arena.
#[repr(C)]
struct Node {
    head: u64,
    key_len: u32,
    value_len: u32,
    height: usize,
}

const HEADER: usize = size_of::<Node>();

/// The tower slot of `n` at `level` (`level < height`).
///
/// SAFETY (callers): `n` is a node of this list (or its head) and `level` is below its height.
#[inline]
unsafe fn tower(n: *const Node, level: usize) -> *const AtomicPtr<Node> {
    n.cast::<u8>()
        .add(HEADER + level * size_of::<AtomicPtr<Node>>())
        .cast()
}

#[inline]
unsafe fn next(n: *const Node, level: usize) -> *mut Node {
    (*tower(n, level)).load(AtOrd::Acquire)
}

/// Starts loading the cache line of `n` (which may be null): the search asks for the node it
/// would descend to while it waits for the one it compares, so two cache misses overlap.
#[inline(always)]
fn prefetch(n: *const Node) {
    super::prefetch::prefetch(n);
}

/// The node's internal key and value.
///
/// SAFETY (callers): `n` is a published node of a list that outlives `'a`.
#[inline]
unsafe fn key<'a>(n: *const Node) -> &'a [u8] {
    std::slice::from_raw_parts(data(n), (*n).key_len as usize)
}

#[inline]
unsafe fn value<'a>(n: *const Node) -> &'a [u8] {
    std::slice::from_raw_parts(data(n).add((*n).key_len as usize), (*n).value_len as usize)
}

/// Where the node's key (then its value) starts: after the tower. Derived from the node
/// pointer, whose provenance is the arena chunk's.
#[inline]
unsafe fn data(n: *const Node) -> *const u8 {
    n.cast::<u8>()
        .add(HEADER + (*n).height * size_of::<AtomicPtr<Node>>())
}

/// The point index's hash of a user key.
#[inline]
pub(crate) fn point_hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// A node from the address the point index holds (`expose_provenance` of a node pointer).
#[inline]
fn node_at(addr: usize) -> *mut Node {
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

/// Order of node `n` against `t`, as [`types::compare_internal`] orders their keys.
#[inline]
unsafe fn compare(n: *const Node, t: &Target) -> Ordering {
    match (*n).head.cmp(&t.head) {
        Ordering::Equal => {
            let k = key(n);
            match types::user_key(k).cmp(t.user_key) {
                Ordering::Equal => t.trailer.cmp(&types::trailer(k)),
                o => o,
            }
        }
        o => o,
    }
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
    head: *mut Node,
    max_height: AtomicUsize,
    len: AtomicUsize,
    index: Option<PointIndex>,
}

// SAFETY: nodes are immutable once published except for their tower pointers, which are
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
        // The head: a full tower of null pointers (the arena's memory is zeroed) and no key.
        let head = arena
            .alloc(HEADER + MAX_HEIGHT * size_of::<AtomicPtr<Node>>())
            .cast::<Node>();
        // SAFETY: freshly allocated, 8-aligned, large enough for the header.
        unsafe {
            head.write(Node {
                head: 0,
                key_len: 0,
                value_len: 0,
                height: MAX_HEIGHT,
            })
        };
        SkipList {
            arena,
            head,
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
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

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Arena bytes taken by nodes (keys, values, towers, headers).
    pub fn memory_used(&self) -> usize {
        self.arena.used.load(AtOrd::Relaxed)
    }

    /// Inserts the internal key `user_key | trailer` (as [`types::append_internal_key`] lays
    /// it out) with `value`; false (and nothing changes) if that key is already present.
    pub fn insert(&self, user_key: &[u8], trailer: u64, value: &[u8]) -> bool {
        let t = Target::new(user_key, trailer);
        let (n, height) = self.new_node(&t, value);
        self.max_height.fetch_max(height, AtOrd::Relaxed);
        let top = self.max_height.load(AtOrd::Relaxed);
        let mut prev = [self.head; MAX_HEIGHT];
        let mut succ = [ptr::null_mut(); MAX_HEIGHT];
        let mut x = self.head;
        for level in (0..top).rev() {
            // SAFETY: `x` is the head or a node of the list whose key is < t.
            let (p, s) = unsafe { self.splice(x, level, &t) };
            prev[level] = p;
            succ[level] = s;
            x = p;
        }
        let hash = if self.index.is_some() {
            point_hash(user_key)
        } else {
            0
        };
        // SAFETY: `n` is unpublished and `height` tall; prev/succ are a splice of `t`.
        unsafe { self.link(n, height, &t, hash, &mut prev, &mut succ) }
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
    /// for its filter too) as
    /// [`SkipList::insert`] does one, and says for each whether it was new. The searches for
    /// their positions advance in lock step, one node each per round, and each round first
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
        for (i, &(user_key, trailer, value)) in entries.iter().enumerate() {
            t[i] = Target::new(user_key, trailer);
            nodes[i] = self.new_node(&t[i], value);
            self.max_height.fetch_max(nodes[i].1, AtOrd::Relaxed);
        }
        let top = self.max_height.load(AtOrd::Relaxed);
        let mut prev = [[self.head; MAX_HEIGHT]; INSERT_GROUP];
        let mut succ = [[ptr::null_mut(); MAX_HEIGHT]; INSERT_GROUP];
        let mut x = [self.head; INSERT_GROUP];
        // The level each search is at, plus one (0 when it is done).
        let mut at = [top; INSERT_GROUP];
        let mut n = [ptr::null_mut::<Node>(); INSERT_GROUP];
        let mut active = k;
        while active > 0 {
            for i in 0..k {
                if at[i] > 0 {
                    let level = at[i] - 1;
                    // SAFETY: `x[i]` is the head or a published node < t[i], tall enough for
                    // `level` (it was reached on that level or above).
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
                // SAFETY: `n[i]` is null or a published node.
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
            // SAFETY: as in `insert`. An earlier entry of the group linked between prev and
            // succ makes the compare-and-swap fail, and `link` then splices again.
            inserted[i] =
                unsafe { self.link(node, height, &t[i], hashes[i], &mut prev[i], &mut succ[i]) };
        }
    }

    /// A node for `t` and `value` (not yet linked) and its height.
    fn new_node(&self, t: &Target, value: &[u8]) -> (*mut Node, usize) {
        let height = random_height();
        let tower_bytes = height * size_of::<AtomicPtr<Node>>();
        let key_len = t.user_key.len() + 8;
        // The engine caps keys at 64 KiB and values at 64 MiB (`batch`).
        debug_assert!(u32::try_from(key_len).is_ok() && u32::try_from(value.len()).is_ok());
        let n = self
            .arena
            .alloc(HEADER + tower_bytes + key_len + value.len())
            .cast::<Node>();
        // SAFETY: the allocation holds the header, the tower (zeroed: null pointers) and the
        // bytes; nobody else can see the node before it is linked.
        unsafe {
            n.write(Node {
                head: t.head,
                key_len: key_len as u32,
                value_len: value.len() as u32,
                height,
            });
            let data = n.cast::<u8>().add(HEADER + tower_bytes);
            ptr::copy_nonoverlapping(t.user_key.as_ptr(), data, t.user_key.len());
            let tr = t.trailer.to_le_bytes();
            ptr::copy_nonoverlapping(tr.as_ptr(), data.add(t.user_key.len()), 8);
            ptr::copy_nonoverlapping(value.as_ptr(), data.add(key_len), value.len());
        }
        (n, height)
    }

    /// Links node `n` (of key `t`, `height` tall, user key [`point_hash`] `hash`) level by
    /// level, level 0 first, then publishes it in the point index; false (and `n` stays
    /// unlinked, its arena bytes unused) if `t` is already present.
    ///
    /// SAFETY (callers): `n` is an unpublished node of this list; for every level below
    /// `height`, `prev[level]` is the head or a published node < t, tall enough for the level,
    /// and `succ[level]` is null or a published node that was its successor there.
    unsafe fn link(
        &self,
        n: *mut Node,
        height: usize,
        t: &Target,
        hash: u64,
        prev: &mut [*mut Node; MAX_HEIGHT],
        succ: &mut [*mut Node; MAX_HEIGHT],
    ) -> bool {
        for level in 0..height {
            loop {
                if level == 0 && !succ[0].is_null() && compare(succ[0], t) == Ordering::Equal {
                    return false;
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
        if let Some(ix) = &self.index {
            debug_assert_eq!(hash, point_hash(t.user_key));
            ix.publish(
                hash,
                n.expose_provenance(),
                // SAFETY: the index holds only nodes of this list, published and alive.
                |o| unsafe { types::user_key(key(node_at(o))) == t.user_key },
                |o| unsafe { t.trailer > types::trailer(key(node_at(o))) },
            );
        }
        true
    }

    /// From `x` (< t) along `level`: the last node < t and its successor (null at the end).
    unsafe fn splice(&self, mut x: *mut Node, level: usize, t: &Target) -> (*mut Node, *mut Node) {
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

    /// The first node `>= t`, or null.
    fn seek_ge(&self, t: &Target) -> *mut Node {
        let mut x = self.head;
        let mut level = self.max_height.load(AtOrd::Relaxed) - 1;
        loop {
            // SAFETY: `x` is the head or a published node, tall enough for `level`.
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

    /// The last node `< t` (all of them with `t = None`), or null.
    fn seek_lt(&self, t: Option<&Target>) -> *mut Node {
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
    /// inserting them will publish to (a hint).
    pub fn prefetch_slots(&self, hashes: &[u64]) {
        if let Some(ix) = &self.index {
            for &h in hashes {
                ix.prefetch_home(h);
            }
        }
    }

    /// Starts loading into the CPU caches what [`SkipList::get_point_hashed`] of keys with these
    /// point hashes will touch first: their point-index home slots (all at once), then the
    /// nodes those slots name. A hint: no effect on any result.
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
    /// `hash`): the newest version visible
    /// at `t`'s sequence number. Through the point index when it knows the key: its newest node
    /// of the key, then along level 0 past versions newer than `t` (they sit right after it).
    /// Otherwise by a search, unless `may_contain()` (a filter's answer) says no.
    pub fn get_point_hashed(
        &self,
        t: &Target,
        hash: u64,
        may_contain: impl FnOnce() -> bool,
    ) -> Option<(&[u8], &[u8])> {
        debug_assert_eq!(hash, point_hash(t.user_key));
        let found = match &self.index {
            // SAFETY: the index holds only nodes of this list, published and alive.
            Some(ix) => ix.find(hash, |o| unsafe {
                types::user_key(key(node_at(o))) == t.user_key
            }),
            None => Found::Unknown,
        };
        let n = match found {
            Found::Absent => return None,
            Found::Unknown if !may_contain() => return None,
            Found::Unknown => self.seek_ge(t),
            Found::Item(o) => {
                let mut x = node_at(o);
                let mut steps = 0;
                // SAFETY: `x` is a published node, then its level-0 successors (or null).
                while !x.is_null() && unsafe { compare(x, t) } == Ordering::Less {
                    steps += 1;
                    if steps > MAX_VERSION_STEPS {
                        // Many versions newer than the snapshot (a hot key read at an old
                        // snapshot): a search costs O(log n), the walk O(versions).
                        x = self.seek_ge(t);
                        break;
                    }
                    x = unsafe { next(x, 0) };
                }
                x
            }
        };
        if n.is_null() {
            return None;
        }
        // SAFETY: a published node, alive as long as `self`.
        let (k, v) = unsafe { (key(n), value(n)) };
        (types::user_key(k) == t.user_key).then_some((k, v))
    }
}

impl Default for SkipList {
    fn default() -> Self {
        SkipList::new()
    }
}

/// A position in a [`SkipList`] that keeps the list alive: it owns an `Arc` of the list's
/// owner (the memtable) and the list's address, which cannot change while that `Arc` lives.
pub struct Cursor<T> {
    _owner: Arc<T>,
    list: *const SkipList,
    node: *mut Node,
}

// SAFETY: the cursor reads immutable published nodes of a list (`Sync`) that its `Arc` keeps
// alive; it is `Send`/`Sync` when the owner is.
unsafe impl<T: Send + Sync> Send for Cursor<T> {}
unsafe impl<T: Send + Sync> Sync for Cursor<T> {}

impl<T> Cursor<T> {
    /// An unpositioned cursor over `list(&owner)`.
    pub fn new(owner: Arc<T>, list: fn(&T) -> &SkipList) -> Cursor<T> {
        let list: *const SkipList = list(&owner);
        Cursor {
            _owner: owner,
            list,
            node: ptr::null_mut(),
        }
    }

    fn list(&self) -> &SkipList {
        // SAFETY: the list lives inside the owner's allocation, kept alive by `_owner`.
        unsafe { &*self.list }
    }

    pub fn valid(&self) -> bool {
        !self.node.is_null()
    }

    /// The entry under the cursor (key, value).
    pub fn entry(&self) -> Option<(&[u8], &[u8])> {
        // SAFETY: a published node of the list, which lives as long as `self`.
        self.valid()
            .then(|| unsafe { (key(self.node), value(self.node)) })
    }

    pub fn seek_to_first(&mut self) {
        // SAFETY: the head is tall enough for level 0.
        self.node = unsafe { next(self.list().head, 0) };
    }

    pub fn seek_to_last(&mut self) {
        self.node = self.list().seek_lt(None);
    }

    pub fn seek(&mut self, t: &Target) {
        self.node = self.list().seek_ge(t);
    }

    /// The last entry `<= t`.
    pub fn seek_for_prev(&mut self, t: &Target) {
        let list = self.list();
        let n = list.seek_ge(t);
        // SAFETY: a published node of the list.
        self.node = if !n.is_null() && unsafe { compare(n, t) } == Ordering::Equal {
            n
        } else {
            list.seek_lt(Some(t))
        };
    }

    pub fn next(&mut self) {
        if self.valid() {
            // SAFETY: a published node of the list; every node has level 0.
            self.node = unsafe { next(self.node, 0) };
        }
    }

    /// The previous entry: a search for the last one below this one (the list is singly
    /// linked), as LevelDB's and RocksDB's memtables do.
    pub fn prev(&mut self) {
        if self.valid() {
            // SAFETY: a published node of the list.
            let t = Target::internal(unsafe { key(self.node) });
            self.node = self.list().seek_lt(Some(&t));
        }
    }
}

#[cfg(test)]
#[path = "skiplist_tests.rs"]
mod tests;
