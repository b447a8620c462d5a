//! A cache-line prefetch hint, for the memtable's structures whose accesses are cache misses
//! (skiplist nodes, point-index slots, Bloom filter blocks), and shared with the batched table
//! lookups (`sst::filter`, `sst::block`: filter lines, hash buckets, restart intervals) and
//! recovery's walk through the WAL index: issuing the loads of several independent lookups
//! before using any of them overlaps their misses. A hint only: it never faults and changes no result. Depends on
//! nothing.

/// Starts loading the cache line at `p` (which may be null or dangling).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}
