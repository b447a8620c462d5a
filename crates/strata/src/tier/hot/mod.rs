//! HotRAP (hot record retention and promotion, `papers/hotrap.txt`): hot records read from the
//! capacity tier come back to the fast tier, and hot records about to be compacted down stay.
//!
//! Owns the [`HotTracker`] seam (record-level hotness: RALT in `ralt`, or a test double), the
//! [`PromotionCache`] between the last fast level and the first capacity level, and the
//! counters of every pathway ([`HotRapStats`]). The engine (`db`) drives them: the read path
//! inserts into the cache and reports accesses, compaction set-up takes cached records and hot
//! keys into the job (retention and promotion by compaction), and a background Checker turns
//! sealed caches into L0 tables (promotion by flush). Depends on `version`, `types`, `storage`;
//! never on `db`.

pub mod promotion;
pub mod ralt;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use promotion::{CachedRecord, InsertOutcome, PromotionCache, SealedPromotion};

use crate::error::Result;

/// Record-level hotness tracking, as HotRAP's RALT provides it. Implementations are internally
/// synchronized; `record_access`, `is_hot` and `hot_bytes_in_range` never do I/O.
pub trait HotTracker: Send + Sync {
    /// Logs one access to a record of `value_size` bytes.
    fn record_access(&self, key: &[u8], value_size: u32);
    /// Whether `key` is hot now.
    fn is_hot(&self, key: &[u8]) -> bool;
    /// Estimated bytes (key + value) of hot records in the inclusive range `[lo, hi]`.
    fn hot_bytes_in_range(&self, lo: &[u8], hi: &[u8]) -> u64;
    /// The hot keys in `[lo, hi]`, sorted and deduplicated (may read the tracker's files).
    fn hot_keys_in_range(&self, lo: &[u8], hi: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// Whether `maintain` has work (a full buffer, an eviction due).
    fn needs_maintenance(&self) -> bool;
    /// Background upkeep: flushing, merging, eviction, limit tuning.
    fn maintain(&self) -> Result<()>;
    /// The tracker's figures.
    fn stats(&self) -> TrackerStats;
    /// The fast tier now holds (or may hold) `bytes`: scale size-derived limits to it. A
    /// tracker with fixed limits ignores it.
    fn set_fast_tier_bytes(&self, _bytes: u64) {}
}

/// What a tracker reports: RALT's sizes, limits and counters.
pub type TrackerStats = ralt::RaltStats;

impl HotTracker for ralt::Ralt {
    fn record_access(&self, key: &[u8], value_size: u32) {
        ralt::Ralt::record_access(self, key, value_size)
    }
    fn is_hot(&self, key: &[u8]) -> bool {
        ralt::Ralt::is_hot(self, key)
    }
    fn hot_bytes_in_range(&self, lo: &[u8], hi: &[u8]) -> u64 {
        ralt::Ralt::hot_bytes_in_range(self, lo, hi)
    }
    fn hot_keys_in_range(&self, lo: &[u8], hi: &[u8]) -> Result<Vec<Vec<u8>>> {
        ralt::Ralt::hot_keys_in_range(self, lo, hi)
    }
    fn needs_maintenance(&self) -> bool {
        ralt::Ralt::needs_maintenance(self)
    }
    fn maintain(&self) -> Result<()> {
        ralt::Ralt::maintain(self)
    }
    fn stats(&self) -> TrackerStats {
        ralt::Ralt::stats(self)
    }
    fn set_fast_tier_bytes(&self, bytes: u64) {
        ralt::Ralt::set_fast_tier_bytes(self, bytes)
    }
}

/// What a tree's fast tier may hold now, when no size is configured (relative placement, no
/// budget): L0's bytes, plus each level `1..=last_fast`'s target or bytes, whichever is more.
/// `sizes` and `targets` are per level, L0 first (`targets` from the picker's level sizing).
/// RALT's limits scale with it, since the fast levels grow with the data.
pub fn fast_levels_bytes(sizes: &[u64], targets: &[u64], last_fast: usize) -> u64 {
    let l0 = sizes.first().copied().unwrap_or(0);
    (1..=last_fast.min(sizes.len().saturating_sub(1)))
        .map(|l| sizes[l].max(targets.get(l).copied().unwrap_or(0)))
        .fold(l0, u64::saturating_add)
}

/// Whether a fast-tier size moved enough from `applied` to rescale to `now` (a tenth either
/// way; always from 0): RALT's bounds need not follow every flush.
pub fn fast_tier_moved(applied: u64, now: u64) -> bool {
    applied == 0 || now.abs_diff(applied).saturating_mul(10) > applied
}

/// HotRAP's switches (`Options::hotrap`).
#[derive(Clone)]
pub struct HotRapOptions {
    /// On by default; it acts only when a capacity tier is configured.
    pub enabled: bool,
    /// Size at which the mutable promotion cache is sealed and handed to the Checker (HotRAP:
    /// the target table size). `None`: `Options::target_file_size_base`.
    pub promotion_cache_bytes: Option<usize>,
    /// The fast tier's size, from which RALT's limits derive. `None`: the fast-tier budget if
    /// set, else `Options::max_bytes_for_level_base` for RALT's decay period and tick, and
    /// what the tree's fast levels may hold (L0's room plus each fast level's target, at least
    /// `max_bytes_for_level_base`) for its hot-set bounds, which follow it as the data grows.
    pub fast_tier_bytes: Option<u64>,
    /// RALT's options (`None`: derived from the fast-tier size with
    /// [`ralt::RaltOptions::for_fast_tier`]); `dir` is always the database's `ralt/`.
    pub ralt: Option<ralt::RaltOptions>,
    /// Replaces RALT (tests inject a known hot set this way).
    pub tracker: Option<Arc<dyn HotTracker>>,
}

impl Default for HotRapOptions {
    fn default() -> Self {
        HotRapOptions {
            enabled: true,
            promotion_cache_bytes: None,
            fast_tier_bytes: None,
            ralt: None,
            tracker: None,
        }
    }
}

impl std::fmt::Debug for HotRapOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotRapOptions")
            .field("enabled", &self.enabled)
            .field("promotion_cache_bytes", &self.promotion_cache_bytes)
            .field("fast_tier_bytes", &self.fast_tier_bytes)
            .field("ralt", &self.ralt)
            .field("tracker", &self.tracker.as_ref().map(|_| "custom"))
            .finish()
    }
}

/// Counters of HotRAP's pathways.
#[derive(Default)]
pub struct HotCounters {
    /// Records read from the capacity tier and inserted into the promotion cache.
    pub cache_inserts: AtomicU64,
    /// Inserts aborted by the §3.3 check.
    pub cache_aborts: AtomicU64,
    /// Point reads the promotion cache answered.
    pub cache_hits: AtomicU64,
    /// Records taken from the cache by compactions into the capacity tier, and how many of
    /// them were hot (written to the fast tier: promotion by compaction).
    pub compaction_taken: AtomicU64,
    /// Taken records that were hot, written to the fast tier.
    pub promoted_by_compaction: AtomicU64,
    /// Records and bytes routed to fast-tier outputs by compactions into the capacity tier
    /// (retention plus promotion by compaction).
    pub retained_records: AtomicU64,
    /// Bytes (internal key + value) of those routed records.
    pub retained_bytes: AtomicU64,
    /// Promotion by flush: tables and records written to L0, records folded back into the
    /// mutable cache, and records dropped (cold, newer version found, or taken meanwhile).
    pub flush_tables: AtomicU64,
    /// Records written to L0 tables by promotion by flush.
    pub promoted_by_flush: AtomicU64,
    /// Records the Checker folded back into the mutable cache (too few for a table).
    pub flush_reinserted: AtomicU64,
    /// Records the Checker dropped: cold, shadowed by a newer version, or given up.
    pub flush_dropped: AtomicU64,
    /// Point reads answered by the memtables or the fast tier (promotion cache included), and
    /// by the capacity tier.
    pub reads_fast: AtomicU64,
    /// Point reads the capacity tier decided (a value or a deletion found there).
    pub reads_capacity: AtomicU64,
}

/// HotRAP's state in an open database.
pub struct HotRap {
    /// The record-hotness tracker: RALT, unless `HotRapOptions::tracker` replaces it.
    pub tracker: Arc<dyn HotTracker>,
    /// The promotion cache between the last fast level and the first capacity level.
    pub cache: PromotionCache,
    /// Counters of every pathway.
    pub counters: HotCounters,
}

impl HotRap {
    /// HotRAP's state with `tracker` and an empty promotion cache sealed at `cache_bytes` bytes.
    pub fn new(tracker: Arc<dyn HotTracker>, cache_bytes: usize) -> Self {
        HotRap {
            tracker,
            cache: PromotionCache::new(cache_bytes),
            counters: HotCounters::default(),
        }
    }

    /// A snapshot of every figure.
    pub fn stats(&self) -> HotRapStats {
        let c = &self.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (mutable, sealed) = self.cache.bytes();
        let (fast, cap) = (g(&c.reads_fast), g(&c.reads_capacity));
        HotRapStats {
            tracker: self.tracker.stats(),
            promotion_cache_bytes: mutable as u64,
            sealed_cache_bytes: sealed as u64,
            cache_inserts: g(&c.cache_inserts),
            cache_aborts: g(&c.cache_aborts),
            cache_hits: g(&c.cache_hits),
            compaction_taken: g(&c.compaction_taken),
            promoted_by_compaction: g(&c.promoted_by_compaction),
            retained_records: g(&c.retained_records),
            retained_bytes: g(&c.retained_bytes),
            flush_tables: g(&c.flush_tables),
            promoted_by_flush: g(&c.promoted_by_flush),
            flush_reinserted: g(&c.flush_reinserted),
            flush_dropped: g(&c.flush_dropped),
            reads_fast: fast,
            reads_capacity: cap,
            fast_hit_rate: if fast + cap == 0 {
                0.0
            } else {
                fast as f64 / (fast + cap) as f64
            },
        }
    }
}

/// HotRAP's figures, in `DbStats::hotrap`.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct HotRapStats {
    /// The tracker's figures (RALT's sizes, limits and counters).
    pub tracker: TrackerStats,
    /// Bytes in the mutable promotion cache now (key + value + 8 per record).
    pub promotion_cache_bytes: u64,
    /// Bytes in the sealed promotion caches awaiting the Checker now.
    pub sealed_cache_bytes: u64,
    /// Records inserted into the promotion cache since open.
    pub cache_inserts: u64,
    /// Promotion-cache inserts aborted by the §3.3 check since open.
    pub cache_aborts: u64,
    /// Point reads the promotion cache answered since open.
    pub cache_hits: u64,
    /// Records taken from the promotion cache by compactions into the capacity tier, since open.
    pub compaction_taken: u64,
    /// Taken records that were hot, written to the fast tier (promotion by compaction).
    pub promoted_by_compaction: u64,
    /// Records routed to fast-tier outputs by compactions into the capacity tier (retention plus
    /// promotion by compaction), since open.
    pub retained_records: u64,
    /// Bytes (internal key + value) of those routed records.
    pub retained_bytes: u64,
    /// L0 tables written by promotion by flush since open.
    pub flush_tables: u64,
    /// Records written to those L0 tables.
    pub promoted_by_flush: u64,
    /// Records the Checker folded back into the mutable cache since open.
    pub flush_reinserted: u64,
    /// Records the Checker dropped (cold, shadowed by a newer version, or given up) since open.
    pub flush_dropped: u64,
    /// Point reads decided by a fast-tier table or the promotion cache since open (reads the
    /// memtables answer are not counted).
    pub reads_fast: u64,
    /// Point reads the capacity tier decided, since open.
    pub reads_capacity: u64,
    /// Share of point reads that found their record without the capacity tier.
    pub fast_hit_rate: f64,
}

impl std::fmt::Display for HotRapStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.tracker;
        writeln!(
            f,
            "hotrap: fast hit rate {:.1}% ({} fast, {} capacity reads)",
            self.fast_hit_rate * 100.0,
            self.reads_fast,
            self.reads_capacity
        )?;
        writeln!(
            f,
            "  ralt: {} B on disk (limit {}), hot set {} B (limit {}), {} accesses, {} evictions",
            t.physical_bytes,
            t.physical_limit,
            t.hot_set_bytes,
            t.hot_set_limit,
            t.accesses,
            t.evictions
        )?;
        writeln!(
            f,
            "  promotion cache: {} B mutable, {} B sealed; {} inserts, {} aborted, {} hits",
            self.promotion_cache_bytes,
            self.sealed_cache_bytes,
            self.cache_inserts,
            self.cache_aborts,
            self.cache_hits
        )?;
        write!(
            f,
            "  retained {} records ({} B); promoted {} by compaction (of {} taken), {} by flush \
             ({} tables), {} folded back, {} dropped",
            self.retained_records,
            self.retained_bytes,
            self.promoted_by_compaction,
            self.compaction_taken,
            self.promoted_by_flush,
            self.flush_tables,
            self.flush_reinserted,
            self.flush_dropped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_levels_bytes_table() {
        // (sizes, targets, last fast level, want)
        let cases: [(&[u64], &[u64], usize, u64); 6] = [
            // A new tree: L0 only, L5 sized at the base level's target.
            (&[3, 0, 0, 0, 0, 0, 0], &[0, 0, 0, 0, 0, 8, 8], 5, 3 + 8),
            // A grown tree: L5's target a tenth of L6's; L6 (capacity) not counted.
            (
                &[4, 0, 0, 0, 0, 7, 100],
                &[0, 0, 0, 0, 0, 10, 100],
                5,
                4 + 10,
            ),
            // A level past its target counts its bytes.
            (&[0, 0, 0, 0, 0, 12, 100], &[0, 0, 0, 0, 0, 10, 100], 5, 12),
            // Absolute placement: L0 and L1 fast.
            (&[2, 5, 9, 0], &[0, 6, 60, 0], 1, 2 + 6),
            // Only L0 is fast.
            (&[2, 5, 9], &[0, 6, 60], 0, 2),
            // Static targets near u64::MAX saturate instead of overflowing.
            (&[2, 0, 0], &[0, u64::MAX - 1, u64::MAX], 2, u64::MAX),
        ];
        for (sizes, targets, last, want) in cases {
            assert_eq!(fast_levels_bytes(sizes, targets, last), want, "{sizes:?}");
        }
    }

    #[test]
    fn fast_tier_moved_table() {
        for (applied, now, want) in [
            (0, 5, true),
            (100, 100, false),
            (100, 110, false),
            (100, 111, true),
            (100, 90, false),
            (100, 89, true),
            (1, u64::MAX, true),
        ] {
            assert_eq!(fast_tier_moved(applied, now), want, "{applied} → {now}");
        }
    }
}
