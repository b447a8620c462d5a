//! An allocation guard for the fuzz driver and tests: a global allocator wrapper that records
//! the largest single allocation request since the last [`reset`], so a decoder that sizes a
//! buffer from an untrusted length field (even one the OS would grant lazily) is caught.
//!
//! Install it with `#[global_allocator] static A: strata_fuzz::alloc::Guard =
//! strata_fuzz::alloc::Guard;` in a binary or test crate. Invariant: it forwards every call to
//! the system allocator unchanged; it only observes sizes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The largest allocation one execution may make. Inputs are at most a few hundred KiB; every
/// legitimate buffer is bounded by a small multiple of the input (or by a format constant far
/// below this).
pub const LIMIT: usize = 256 << 20;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

/// The observing allocator.
pub struct Guard;

unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Forgets the largest allocation seen so far.
pub fn reset() {
    LARGEST.store(0, Relaxed);
}

/// The largest allocation request since the last [`reset`] (0 if the guard is not installed).
pub fn largest() -> usize {
    LARGEST.load(Relaxed)
}
