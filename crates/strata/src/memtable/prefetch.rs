//! A cache-line prefetch hint, for the memtable's structures whose accesses are cache misses
//! (skiplist nodes, point-index slots, Bloom filter blocks), and shared with the batched table
//! lookups (`sst::filter`, `sst::block`: filter lines, hash buckets, restart intervals), the
//! index's key-head search (`sst::index`), point lookups over several tables (`db::read`) and
//! recovery's walk through the WAL index: issuing the loads of several independent lookups
//! before using any of them overlaps their misses. A hint only: it never faults and changes no
//! result. Depends on nothing.

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

/// Starts loading every cache line of the `len` bytes at `p` (at least the first line, even
/// for `len` 0).
#[inline]
pub(crate) fn prefetch_range<T>(p: *const T, len: usize) {
    const LINE: usize = 64;
    let start = p as usize;
    let end = start.saturating_add(len.max(1));
    for line in (start & !(LINE - 1)..end).step_by(LINE) {
        prefetch(line as *const u8);
    }
}
