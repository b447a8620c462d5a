//! The tiers' counters ([`TierStats`], shared with the capacity tier and the caches) and
//! their snapshot in [`DbStats`](super::DbStats) ([`TierSnapshot`]): requests, bytes, latency
//! and hit rates of the fast tier, the capacity tier, the block, row and persistent caches.
//! Depends on `metrics` (latency histograms) and the parent module's formatting helper only.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{human, Counter};

/// Counters of the tiers and their caches (shared with the capacity tier and the caches).
#[derive(Default)]
pub struct TierStats {
    /// Capacity-tier requests and bytes.
    pub gets: AtomicU64,
    /// Bytes returned by capacity-tier GETs.
    pub get_bytes: AtomicU64,
    /// Capacity-tier PUTs, multipart upload parts and multipart completions.
    pub puts: AtomicU64,
    /// Bytes sent by capacity-tier PUTs and upload parts.
    pub put_bytes: AtomicU64,
    /// Capacity-tier DELETE requests, whether or not they succeeded.
    pub deletes: AtomicU64,
    /// Capacity-tier LIST requests, whether or not they succeeded.
    pub lists: AtomicU64,
    /// Capacity-tier attempts retried after a transient failure or a timeout.
    pub retries: AtomicU64,
    /// Capacity-tier requests that failed for good (a permanent error, or attempts exhausted).
    pub errors: AtomicU64,
    /// Capacity-tier read latency: bucket `i` counts reads taking `[2^i, 2^(i+1))` µs.
    pub get_latency: [AtomicU64; 32],
    /// Fast-tier table block reads and bytes.
    pub fast_reads: Counter,
    /// Bytes of those fast-tier reads.
    pub fast_read_bytes: Counter,
    /// Bytes appended to fast-tier table files (with `fast_write_latency`: the write bandwidth).
    pub fast_write_bytes: AtomicU64,
    /// MetaCache: capacity-table metadata served from the fast tier, and sidecars written.
    pub meta_local_reads: AtomicU64,
    /// MetaCache sidecars written (a capacity table's metadata copied to the fast tier).
    pub meta_builds: AtomicU64,
    /// DataCache (persistent cache of capacity-tier blocks).
    pub pcache_hits: Counter,
    /// DataCache lookups that missed (the block then comes from the capacity tier).
    pub pcache_misses: Counter,
    /// Blocks written into the DataCache.
    pub pcache_inserts: AtomicU64,
    /// Blocks the DataCache refused (larger than a LAP bucket or a naive-cache file).
    pub pcache_rejected: AtomicU64,
    /// DataCache entries evicted to make room.
    pub pcache_evictions: AtomicU64,
    /// DataCache entries dropped because their table was deleted (LAP only).
    pub pcache_invalidations: AtomicU64,
    /// Bytes served from the DataCache.
    pub pcache_read_bytes: AtomicU64,
    /// Bytes written into the DataCache.
    pub pcache_write_bytes: AtomicU64,
    /// Latency of table block reads from the fast tier's files.
    pub fast_read_latency: crate::metrics::LatencyHistogram,
    /// Latency of capacity-tier range GETs (the same reads as `get_latency`, with a sum).
    pub capacity_read_latency: crate::metrics::LatencyHistogram,
    /// Latency of flushing and syncing table files written to the fast tier.
    pub fast_write_latency: crate::metrics::LatencyHistogram,
    /// Latency of capacity-tier write requests (PUT, upload part, upload completion).
    pub capacity_write_latency: crate::metrics::LatencyHistogram,
    /// Every request the capacity tier sent its store, by kind, retries included (the
    /// request bill; counted by `storage/object/counting.rs`).
    pub requests: std::sync::Arc<super::RequestCounters>,
    /// Whether the store answers (`stats/health.rs`): fed by every request's outcome.
    pub health: super::StoreHealth,
}

impl TierStats {
    /// Counts one capacity-tier GET that returned `bytes` and took `took` (count, bytes and both
    /// latency histograms).
    pub fn record_get(&self, bytes: u64, took: std::time::Duration) {
        self.gets.fetch_add(1, Relaxed);
        self.get_bytes.fetch_add(bytes, Relaxed);
        let us = took.as_micros().max(1) as u64;
        let b = (63 - us.leading_zeros() as usize).min(31);
        self.get_latency[b].fetch_add(1, Relaxed);
        self.capacity_read_latency.record(took);
    }

    /// Counts one capacity-tier PUT or upload part of `bytes`.
    pub fn record_put(&self, bytes: u64) {
        self.puts.fetch_add(1, Relaxed);
        self.put_bytes.fetch_add(bytes, Relaxed);
    }

    /// Copies the counters into a [`TierSnapshot`]; table, metadata and cache sizes are filled in
    /// by the caller.
    pub fn snapshot(&self) -> TierSnapshot {
        let g = |c: &AtomicU64| c.load(Relaxed);
        let hist: Vec<u64> = self.get_latency.iter().map(g).collect();
        let pct = |p: f64| -> f64 {
            let total: u64 = hist.iter().sum();
            if total == 0 {
                return 0.0;
            }
            let want = (total as f64 * p).ceil() as u64;
            let mut seen = 0;
            for (i, &c) in hist.iter().enumerate() {
                seen += c;
                if seen >= want {
                    // Upper edge of the bucket, in milliseconds.
                    return (1u64 << (i + 1)) as f64 / 1000.0;
                }
            }
            0.0
        };
        let hits = self.pcache_hits.load(Relaxed);
        let misses = self.pcache_misses.load(Relaxed);
        TierSnapshot {
            capacity_gets: g(&self.gets),
            capacity_get_bytes: g(&self.get_bytes),
            capacity_puts: g(&self.puts),
            capacity_put_bytes: g(&self.put_bytes),
            capacity_deletes: g(&self.deletes),
            capacity_lists: g(&self.lists),
            capacity_retries: g(&self.retries),
            capacity_errors: g(&self.errors),
            capacity_get_p50_ms: pct(0.5),
            capacity_get_p99_ms: pct(0.99),
            capacity_get_latency_hist: hist,
            fast_reads: self.fast_reads.load(Relaxed),
            fast_read_bytes: self.fast_read_bytes.load(Relaxed),
            meta_local_reads: g(&self.meta_local_reads),
            meta_builds: g(&self.meta_builds),
            pcache_hits: hits,
            pcache_misses: misses,
            fast_hit_rate: {
                let local = self.fast_reads.load(Relaxed) + hits;
                let all = local + g(&self.gets);
                if all > 0 {
                    local as f64 / all as f64
                } else {
                    0.0
                }
            },
            pcache_hit_rate: if hits + misses > 0 {
                hits as f64 / (hits + misses) as f64
            } else {
                0.0
            },
            pcache_inserts: g(&self.pcache_inserts),
            pcache_rejected: g(&self.pcache_rejected),
            pcache_evictions: g(&self.pcache_evictions),
            pcache_invalidations: g(&self.pcache_invalidations),
            pcache_read_bytes: g(&self.pcache_read_bytes),
            pcache_write_bytes: g(&self.pcache_write_bytes),
            fast_read_latency: self.fast_read_latency.snapshot(),
            capacity_read_latency: self.capacity_read_latency.snapshot(),
            fast_write_latency: self.fast_write_latency.snapshot(),
            capacity_write_latency: self.capacity_write_latency.snapshot(),
            capacity_requests: self.requests.snapshot(),
            capacity_health: self.health.snapshot(),
            ..Default::default()
        }
    }
}

/// Per-tier figures in a [`DbStats`] snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TierSnapshot {
    /// Capacity-tier GETs since open.
    pub capacity_gets: u64,
    /// Bytes returned by capacity-tier GETs since open.
    pub capacity_get_bytes: u64,
    /// Capacity-tier PUTs, upload parts and multipart completions since open.
    pub capacity_puts: u64,
    /// Bytes sent by capacity-tier PUTs and upload parts since open.
    pub capacity_put_bytes: u64,
    /// Capacity-tier DELETE requests since open.
    pub capacity_deletes: u64,
    /// Capacity-tier LIST requests since open.
    pub capacity_lists: u64,
    /// Capacity-tier attempts retried after a transient failure or a timeout, since open.
    pub capacity_retries: u64,
    /// Capacity-tier requests that failed for good, since open.
    pub capacity_errors: u64,
    /// Upper bucket edges of the capacity read latency percentiles, in milliseconds.
    pub capacity_get_p50_ms: f64,
    /// Upper bucket edge of the 99th-percentile capacity GET latency, in milliseconds (0 before
    /// any GET).
    pub capacity_get_p99_ms: f64,
    /// Bucket `i`: capacity reads that took `[2^i, 2^(i+1))` microseconds.
    pub capacity_get_latency_hist: Vec<u64>,
    /// Fast-tier table file reads since open.
    pub fast_reads: u64,
    /// Bytes of those fast-tier reads.
    pub fast_read_bytes: u64,
    /// Share of table reads (below the memory block cache) served by the fast tier: fast-tier
    /// table reads plus persistent-cache hits, over those plus capacity-tier GETs.
    pub fast_hit_rate: f64,
    /// Capacity tables opened from a MetaCache sidecar (one local read, no capacity-tier request).
    pub meta_local_reads: u64,
    /// MetaCache sidecars written since open.
    pub meta_builds: u64,
    /// Capacity tables' metadata kept on the fast tier (MetaCache sidecars): tables and bytes,
    /// and of the tables whose make-up is known, block-index, bloom-filter and trie bytes.
    pub capacity_meta_tables: u64,
    /// Bytes of the MetaCache sidecars on the fast tier, headers included.
    pub capacity_meta_bytes: u64,
    /// Capacity tables whose metadata make-up is known (written or opened since open).
    pub capacity_meta_known_tables: u64,
    /// Block-index bytes of the known capacity tables.
    pub capacity_index_bytes: u64,
    /// Bloom-filter bytes of the known capacity tables.
    pub capacity_filter_bytes: u64,
    /// MashMeta trie bytes of the known capacity tables.
    pub capacity_trie_bytes: u64,
    /// Of the fast-tier tables opened since the database opened: how many, and their
    /// block-index and bloom-filter bytes (they never have a trie).
    pub fast_meta_known_tables: u64,
    /// Block-index bytes of the fast-tier tables opened since open.
    pub fast_index_bytes: u64,
    /// Bloom-filter bytes of the fast-tier tables opened since open.
    pub fast_filter_bytes: u64,
    /// DataCache lookups that hit, since open.
    pub pcache_hits: u64,
    /// DataCache lookups that missed, since open.
    pub pcache_misses: u64,
    /// `pcache_hits / (pcache_hits + pcache_misses)`, 0 before any lookup.
    pub pcache_hit_rate: f64,
    /// Blocks written into the DataCache since open.
    pub pcache_inserts: u64,
    /// Blocks the DataCache refused as too large, since open.
    pub pcache_rejected: u64,
    /// DataCache entries evicted to make room, since open.
    pub pcache_evictions: u64,
    /// DataCache entries dropped because their table was deleted, since open.
    pub pcache_invalidations: u64,
    /// Bytes served from the DataCache since open.
    pub pcache_read_bytes: u64,
    /// Bytes written into the DataCache since open.
    pub pcache_write_bytes: u64,
    /// Bytes of tables on each tier.
    pub fast_table_bytes: u64,
    /// Bytes of the live tables on the capacity tier.
    pub capacity_table_bytes: u64,
    /// Bytes of valid blocks in the DataCache now (0 without one).
    pub pcache_usage: u64,
    /// Fast-tier bytes the DataCache may fill (0 without one).
    pub pcache_capacity: u64,
    /// Latency histograms per tier (see `TierStats`).
    pub fast_read_latency: crate::metrics::HistogramSnapshot,
    /// Latency of capacity-tier GETs.
    pub capacity_read_latency: crate::metrics::HistogramSnapshot,
    /// Latency of flushing and syncing fast-tier table files.
    pub fast_write_latency: crate::metrics::HistogramSnapshot,
    /// Latency of capacity-tier write requests (PUT, upload part, upload completion).
    pub capacity_write_latency: crate::metrics::HistogramSnapshot,
    /// Requests the capacity tier sent its store since open, by kind (retries included).
    pub capacity_requests: super::RequestCounts,
    /// Requests an object-store log location (`wal_location` as a URL) was sent since open,
    /// by kind: WAL segments, the manifest mirror, key lists, the lease.
    pub log_requests: super::RequestCounts,
    /// Whether the capacity tier's store answers, and since when it does not.
    pub capacity_health: super::HealthSnapshot,
    /// Whether an object-store log location answers (always up for a directory).
    pub log_health: super::HealthSnapshot,
    /// The capacity tier's request budget, and how long background work waited for it.
    pub capacity_budget: super::cost::BudgetStats,
    /// Bytes waiting to move to the capacity tier: what the fast level that feeds the first
    /// capacity level holds beyond its target (it grows while uploads fail).
    pub capacity_pending_upload_bytes: u64,
    /// Capacity-tier tables out of the tree that garbage collection has not deleted yet:
    /// younger than `capacity_gc_min_age`, or kept by a checkpoint (`tier::gc`).
    pub capacity_gc_pending_tables: u64,
}

impl TierSnapshot {
    /// Every object-store request since open: the capacity tier's and the log location's.
    pub fn object_store_requests(&self) -> super::RequestCounts {
        self.capacity_requests.plus(&self.log_requests)
    }
}

impl fmt::Display for TierSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tiers: fast {} in tables ({} reads, {}; {:.1}% of table reads local)  capacity {} in tables: {} GETs ({}, p50 {:.1}ms p99 {:.1}ms) {} PUTs ({}) {} DELETEs, {} retries, {} errors\n\
             capacity meta bytes {} in {} tables (of {} known: index {} filter {} trie {})  fast meta (of {} tables opened: index {} filter {})\n\
             caches: meta local reads {} built {}  data cache hit {} miss {} ({:.1}% hits) inserts {} rejected {} evictions {} invalidated {} ({} / {})",
            human(self.fast_table_bytes),
            self.fast_reads,
            human(self.fast_read_bytes),
            self.fast_hit_rate * 100.0,
            human(self.capacity_table_bytes),
            self.capacity_gets,
            human(self.capacity_get_bytes),
            self.capacity_get_p50_ms,
            self.capacity_get_p99_ms,
            self.capacity_puts,
            human(self.capacity_put_bytes),
            self.capacity_deletes,
            self.capacity_retries,
            self.capacity_errors,
            human(self.capacity_meta_bytes),
            self.capacity_meta_tables,
            self.capacity_meta_known_tables,
            human(self.capacity_index_bytes),
            human(self.capacity_filter_bytes),
            human(self.capacity_trie_bytes),
            self.fast_meta_known_tables,
            human(self.fast_index_bytes),
            human(self.fast_filter_bytes),
            self.meta_local_reads,
            self.meta_builds,
            self.pcache_hits,
            self.pcache_misses,
            self.pcache_hit_rate * 100.0,
            self.pcache_inserts,
            self.pcache_rejected,
            self.pcache_evictions,
            self.pcache_invalidations,
            human(self.pcache_usage),
            human(self.pcache_capacity),
        )
    }
}
