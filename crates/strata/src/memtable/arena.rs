//! The memtable's arena: bump allocation of 8-aligned, zeroed blocks from chunks that live
//! until the arena is dropped, so the skiplist's nodes never move and a pointer into them stays
//! valid for the arena's life.
//!
//! Invariants: a block handed out is never reused or freed before the arena is dropped; chunks
//! grow geometrically from [`MIN_CHUNK`] to [`MAX_CHUNK`], and a block larger than a quarter
//! chunk gets a chunk of its own. `used` counts the bytes handed out. Depends on nothing in
//! the engine.

use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering as AtOrd};

use parking_lot::Mutex;

/// The first chunk; each further one is as large as all before it (so a small memtable wastes
/// little), up to [`MAX_CHUNK`].
pub(super) const MIN_CHUNK: usize = 4 << 10;
pub(super) const MAX_CHUNK: usize = 1 << 20;

/// Bump allocation of 8-aligned blocks from chunks that live until the arena is dropped.
pub struct Arena {
    state: Mutex<ArenaState>,
    /// Bytes handed out (not counting chunk tails left unused).
    pub used: AtomicUsize,
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
    pub fn new() -> Arena {
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
    pub fn alloc(&self, size: usize) -> *mut u8 {
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
