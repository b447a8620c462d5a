//! [`PointIndex`]: a lock-free hash table from a memtable's user keys to the newest entry of
//! each, so a point lookup of a key the memtable holds costs a slot and a node instead of a
//! skiplist search (a dozen or more dependent cache misses in a memtable larger than the
//! caches), and one of a key it does not hold costs a slot.
//!
//! Open addressing with linear probing over `u64` slots, each empty (0) or an item's address
//! (below 2^48) with 16 bits of the key's hash above it, so most probes of other keys are
//! refused without touching their entries. A slot, once it holds a key, holds that key for
//! good: publishing a newer entry of the key replaces the item by compare-and-swap, and only
//! if it is newer (so the slot ends at the newest entry whatever order publishers run in).
//! Nothing is removed. Hence every publisher and reader of a key walks the same probe sequence
//! and stops at the same slot.
//!
//! Completeness: a key that finds no free slot within [`MAX_PROBES`] is not indexed; it marks
//! its home slot's group of [`GROUP`] slots as overflowed, and the index says
//! [`Found::Unknown`] for keys of that group it cannot find (the caller searches the skiplist
//! instead). Linear probing at half load makes such runs rare but, over a million keys, not
//! absent. An item that does not fit in 48 bits makes the whole index unknown. A reader that
//! sees an entry through the engine's published sequence number (an acquire/release pair) sees
//! its publication here too, or the overflow mark: so `Absent` is exact for every entry it can
//! see, and `Item` is the newest of them or newer.
//!
//! Items are opaque addresses; the caller says how to compare them (`same_key`, `newer`). The
//! only `unsafe` is the zeroed allocation of the slots. Depends on nothing in the engine but
//! the memtable's `prefetch` hint.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Slots a lookup or publication probes before giving up.
pub const MAX_PROBES: usize = 32;
/// Home slots that share one overflow mark.
pub const GROUP: usize = 64;
const ADDR_BITS: u32 = 48;
const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;

/// What [`PointIndex::find`] knows about a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// No entry of the key was published.
    Absent,
    /// The newest published entry of the key.
    Item(usize),
    /// The index is incomplete: search elsewhere.
    Unknown,
}

pub struct PointIndex {
    slots: Box<[AtomicU64]>,
    mask: usize,
    /// Per group of home slots: some key homed there found no slot.
    overflow: Box<[AtomicBool]>,
    complete: AtomicBool,
}

impl PointIndex {
    /// An index of `slots` slots, rounded up to a power of two (at least 64).
    pub fn new(slots: usize) -> PointIndex {
        let n = slots.max(64).next_power_of_two();
        // SAFETY: all-zero bytes are a valid `AtomicU64` (0: an empty slot). Zeroed memory
        // from the allocator comes as untouched pages for large sizes, so a new memtable (made
        // while the engine holds its state lock) does not write megabytes of zeros.
        let slots = unsafe { Box::<[AtomicU64]>::new_zeroed_slice(n).assume_init() };
        PointIndex {
            slots,
            mask: n - 1,
            overflow: (0..n / GROUP).map(|_| AtomicBool::new(false)).collect(),
            complete: AtomicBool::new(true),
        }
    }

    /// Memory taken by the slots and marks.
    pub fn bytes(&self) -> usize {
        self.slots.len() * 8 + self.overflow.len()
    }

    /// Whether every published key is indexed (a scan of the overflow marks: for tests, not
    /// lookups).
    #[cfg(test)]
    pub fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
            && !self.overflow.iter().any(|o| o.load(Ordering::Acquire))
    }

    fn tag(hash: u64) -> u64 {
        // The high bits: the low ones chose the slot.
        (hash >> ADDR_BITS) << ADDR_BITS
    }

    /// Records `item` (nonzero) as the entry of its key (whose hash is `hash`) unless a newer
    /// one is there. `same_key(other)`: whether `other` is an entry of the same key;
    /// `newer(other)`: whether `item` is newer than `other`, an entry of the same key.
    pub fn publish(
        &self,
        hash: u64,
        item: usize,
        same_key: impl Fn(usize) -> bool,
        newer: impl Fn(usize) -> bool,
    ) {
        let addr = item as u64;
        if addr == 0 || addr > ADDR_MASK {
            self.complete.store(false, Ordering::Release);
            return;
        }
        let tag = Self::tag(hash);
        let want = tag | addr;
        let mut i = hash as usize & self.mask;
        for _ in 0..MAX_PROBES {
            let slot = &self.slots[i];
            let mut cur = slot.load(Ordering::Acquire);
            loop {
                let mine = if cur == 0 {
                    true
                } else if cur & !ADDR_MASK == tag && same_key((cur & ADDR_MASK) as usize) {
                    if !newer((cur & ADDR_MASK) as usize) {
                        return;
                    }
                    true
                } else {
                    false
                };
                if !mine {
                    break;
                }
                match slot.compare_exchange(cur, want, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return,
                    // Taken or replaced meanwhile: judge the slot again.
                    Err(now) => cur = now,
                }
            }
            i = (i + 1) & self.mask;
        }
        self.overflow[(hash as usize & self.mask) / GROUP].store(true, Ordering::Release);
    }

    /// Starts loading the home slot of the key whose hash is `hash` into the CPU caches (a
    /// hint; [`PointIndex::home_item`] or [`PointIndex::find`] follows).
    pub fn prefetch_home(&self, hash: u64) {
        super::prefetch::prefetch(std::ptr::from_ref(&self.slots[hash as usize & self.mask]));
    }

    /// The item in the home slot of the key whose hash is `hash`, if that slot's tag matches
    /// the hash (most likely an entry of the key, not certainly): for prefetching entries.
    pub fn home_item(&self, hash: u64) -> Option<usize> {
        let cur = self.slots[hash as usize & self.mask].load(Ordering::Relaxed);
        (cur != 0 && cur & !ADDR_MASK == Self::tag(hash)).then_some((cur & ADDR_MASK) as usize)
    }

    /// The newest published entry of the key whose hash is `hash` (see [`Found`]).
    pub fn find(&self, hash: u64, same_key: impl Fn(usize) -> bool) -> Found {
        if !self.complete.load(Ordering::Acquire) {
            return Found::Unknown;
        }
        let tag = Self::tag(hash);
        let mut i = hash as usize & self.mask;
        for _ in 0..MAX_PROBES {
            let cur = self.slots[i].load(Ordering::Acquire);
            if cur == 0 {
                return Found::Absent;
            }
            if cur & !ADDR_MASK == tag && same_key((cur & ADDR_MASK) as usize) {
                return Found::Item((cur & ADDR_MASK) as usize);
            }
            i = (i + 1) & self.mask;
        }
        // A published key is never placed beyond the probe limit: it marks its group.
        if self.overflow[(hash as usize & self.mask) / GROUP].load(Ordering::Acquire) {
            Found::Unknown
        } else {
            Found::Absent
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use strata_test_support::{seed, Rng};

    use super::*;

    /// Items stand for entries: item = key * 1000 + version + 1 (nonzero), and the hash of a
    /// key is chosen by the test (colliding on purpose).
    fn key_of(item: usize) -> usize {
        (item - 1) / 1000
    }

    fn publish(ix: &PointIndex, hash: u64, item: usize) {
        ix.publish(
            hash,
            item,
            |o| key_of(o) == key_of(item),
            |o| item > o, // a higher version is newer
        );
    }

    fn find(ix: &PointIndex, hash: u64, key: usize) -> Found {
        ix.find(hash, |o| key_of(o) == key)
    }

    /// Test sizes: smaller under Miri (`bash scripts/miri-skiplist.sh`).
    fn scale(normal: usize, miri: usize) -> usize {
        if cfg!(miri) {
            miri
        } else {
            normal
        }
    }

    /// `home_item` names what sits in a key's home slot when the tag matches, and nothing
    /// for an empty slot or another tag; prefetching changes nothing.
    #[test]
    fn home_items_for_prefetching() {
        let ix = PointIndex::new(64);
        let (a, b) = ((1u64 << 48) | 5, (2u64 << 48) | 5); // one home slot, two tags
        assert_eq!(ix.home_item(a), None);
        publish(&ix, a, 1001);
        publish(&ix, b, 2001); // probes on to slot 6
        ix.prefetch_home(a);
        ix.prefetch_home(b);
        assert_eq!(ix.home_item(a), Some(1001));
        assert_eq!(ix.home_item(b), None, "slot 5 holds another tag");
        assert_eq!(find(&ix, b, 2), Found::Item(2001));
    }

    /// Against a map of the newest version per key, with hashes that share slots and tags:
    /// every key found at its newest version and absent keys absent, except that once probe
    /// runs overflow, keys of the overflowed group that are not found are unknown.
    #[test]
    fn finds_the_newest_version_of_each_key() {
        let s = seed("point_index_finds_the_newest_version_of_each_key");
        let mut rng = Rng::new(s);
        let ix = PointIndex::new(256);
        let hash = |k: usize| -> u64 {
            // 16 slot choices and 4 tags for 200 keys: long probe runs and tag collisions.
            ((k as u64 % 4) << 48) | (k as u64 * 7 % 16)
        };
        let mut newest: HashMap<usize, usize> = HashMap::new();
        for _ in 0..scale(2000, 300) {
            let k = rng.index(200);
            let item = k * 1000 + rng.index(999) + 1;
            publish(&ix, hash(k), item);
            let e = newest.entry(k).or_insert(item);
            *e = (*e).max(item);
            for k in 0..200 {
                let got = find(&ix, hash(k), k);
                match newest.get(&k) {
                    // Indexed, or lost to an overflow, which the index admits.
                    Some(&i) => assert!(
                        got == Found::Item(i) || (got == Found::Unknown && !ix.is_complete()),
                        "seed {s} key {k}: {got:?}, newest {i}"
                    ),
                    None => assert!(
                        got == Found::Absent || (got == Found::Unknown && !ix.is_complete()),
                        "seed {s} key {k}: {got:?}"
                    ),
                }
            }
        }
        assert!(
            !ix.is_complete(),
            "seed {s}: 200 keys on 16 home slots overflow"
        );
        // Keys homed in another group are still answered exactly.
        let far = |k: usize| hash(k) | 128;
        publish(&ix, far(7), 7 * 1000 + 5);
        assert_eq!(find(&ix, far(7), 7), Found::Item(7 * 1000 + 5));
        assert_eq!(find(&ix, far(8), 8), Found::Absent);
    }

    #[test]
    fn items_beyond_48_bits_make_it_incomplete() {
        let ix = PointIndex::new(64);
        publish(&ix, 5, 1 << 48);
        assert_eq!(find(&ix, 5, key_of(1 << 48)), Found::Unknown);
    }

    /// Threads publish versions of overlapping keys in shuffled orders: each slot ends at the
    /// newest version of its key.
    #[test]
    fn concurrent_publishers_leave_the_newest() {
        let s = seed("point_index_concurrent_publishers_leave_the_newest");
        let ix = Arc::new(PointIndex::new(4096));
        let hash = |k: usize| (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let ix = ix.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng::new(s ^ t);
                    for _ in 0..scale(20_000, 300) {
                        let k = rng.index(500);
                        publish(&ix, hash(k), k * 1000 + rng.index(999) + 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut newest: HashMap<usize, usize> = HashMap::new();
        for t in 0..4u64 {
            let mut rng = Rng::new(s ^ t);
            for _ in 0..scale(20_000, 300) {
                let k = rng.index(500);
                let item = k * 1000 + rng.index(999) + 1;
                let e = newest.entry(k).or_insert(item);
                *e = (*e).max(item);
            }
        }
        assert!(ix.is_complete());
        for k in 0..500 {
            let want = newest.get(&k).map_or(Found::Absent, |&i| Found::Item(i));
            assert_eq!(find(&ix, hash(k), k), want, "seed {s} key {k}");
        }
    }
}
