//! Engine-wide counters (lock-free atomics) and the [`DbStats`] snapshot returned by
//! `Db::stats()`. Counters are bumped on hot paths with `Relaxed` ordering; a snapshot is
//! approximately consistent. The counters bumped by every read and write are [`Counter`]s,
//! striped over cache lines so that threads do not fight over them. Depends on `metrics` (its
//! histograms and stripe assignment) only.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering, Ordering::Relaxed};

use crate::metrics::{stripe, STRIPES};

pub mod cost;
pub mod health;
pub mod requests;
mod tier;
pub use cost::{Cost, PriceTable};
pub use health::{HealthSnapshot, StoreHealth};
pub use requests::{RequestCounters, RequestCounts, RequestKind};
pub use tier::{TierSnapshot, TierStats};

/// One stripe on a cache-line pair of its own (adjacent-line prefetch pairs lines up).
#[repr(align(128))]
#[derive(Default)]
struct Stripe(AtomicU64);

/// A counter striped over cache lines: each thread bumps the stripe assigned to it (threads
/// take stripes round-robin), so reader and writer threads counting at once do not bounce one
/// cache line between cores (RocksDB keeps per-core statistics for the same reason). Reading
/// sums the stripes. `fetch_add`/`load` mirror `AtomicU64`'s, without `fetch_add`'s result.
#[derive(Default)]
pub struct Counter {
    stripes: [Stripe; STRIPES],
}

impl Counter {
    /// Adds `v` to the calling thread's stripe (`_order` is ignored: the add is `Relaxed`).
    #[inline]
    pub fn fetch_add(&self, v: u64, _order: Ordering) {
        self.stripes[stripe()].0.fetch_add(v, Relaxed);
    }

    /// The sum of the stripes (`_order` is ignored: the loads are `Relaxed`).
    pub fn load(&self, _order: Ordering) -> u64 {
        self.stripes
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(s.0.load(Relaxed)))
    }
}

/// Levels tracked by per-level counters.
pub const MAX_LEVELS: usize = 16;

/// Live compaction counters of one level, counted against the output level.
#[derive(Default)]
pub struct LevelCounters {
    /// Compactions installed whose output is this level.
    pub compactions: AtomicU64,
    /// Bytes read (from both input levels) by compactions whose output is this level.
    pub read_bytes: AtomicU64,
    /// Bytes written into this level (by flush for L0, by compaction otherwise).
    pub write_bytes: AtomicU64,
    /// Tables moved into this level by metadata alone: one per leveled trivial move, and every
    /// table a split-forest merge moved.
    pub trivial_moves: AtomicU64,
    /// Time spent by the compactions into this level (by flushes for L0), from start to install,
    /// in microseconds.
    pub micros: AtomicU64,
}

/// Live counters shared by the engine's components.
#[derive(Default)]
pub struct EngineStats {
    /// Per-level counters, indexed by level.
    pub levels: [LevelCounters; MAX_LEVELS],
    /// Encoded bytes of the write batches committed (one batch header per write group).
    pub user_bytes_written: Counter,
    /// Operations committed: puts, deletes and range deletes.
    pub keys_written: Counter,
    /// Write groups committed (group commit: one WAL record each).
    pub write_groups: Counter,
    /// Bytes appended to the WAL by write groups, record framing included.
    pub wal_bytes: Counter,
    /// WAL fsyncs that succeeded: synced write groups, `Db::sync_wal` and the periodic sync.
    pub wal_syncs: Counter,
    /// Point lookups: `Db::get` and `Db::get_opt` calls, and the keys of `Db::multi_get` calls.
    pub gets: Counter,
    /// Point lookups that found a value.
    pub get_found: Counter,
    /// Point lookups whose newest version was a merge operand (folded on read).
    pub merge_lookups: Counter,
    /// Memtable flushes installed.
    pub flushes: Counter,
    /// Bytes of the L0 tables written by flushes.
    pub flush_bytes: Counter,
    /// Table lookups that consulted a bloom filter.
    pub bloom_checked: Counter,
    /// Table lookups the bloom filter answered "absent" (no block read).
    pub bloom_useful: Counter,
    /// Table lookups the bloom filter passed that found no entry for the key.
    pub bloom_false_positive: Counter,
    /// Lookups in capacity tables through their MashMeta trie, and those it answered "absent"
    /// without reading a block.
    pub trie_checked: Counter,
    /// Trie lookups that answered "absent" without reading a block (see `trie_checked`).
    pub trie_rejected: Counter,
    /// Data-block lookups the block cache answered.
    pub block_cache_hits: Counter,
    /// Data-block lookups the block cache missed, which then read the table file.
    pub block_cache_misses: Counter,
    /// Table probes the row cache answered, and those it did not (reads at an older snapshot
    /// do not count).
    pub row_cache_hits: Counter,
    /// Table probes the row cache did not answer (see `row_cache_hits`).
    pub row_cache_misses: Counter,
    /// Data blocks read from table files (block-cache misses, or every read without a cache).
    pub block_reads: Counter,
    /// Bytes of those data-block reads, each block's 5-byte trailer included.
    pub block_read_bytes: Counter,
    /// Time writers spent stalled (slowdown sleeps and stop waits), in microseconds.
    pub stall_micros: Counter,
    /// Write groups delayed by one `slowdown_delay` sleep (L0 at the slowdown trigger).
    pub slowdowns: Counter,
    /// Write stalls that stopped a write group until a flush or compaction made room (too many
    /// memtables, or L0 at the stop trigger); one per stall, however long.
    pub stops: Counter,
    /// Background failures: every failed compaction, and the error that made the database
    /// read-only.
    pub background_errors: Counter,
    /// Tables probed by point lookups (split forest: trees probed per lookup = this / gets).
    pub table_probes: Counter,
    /// The most bytes one compaction had written and not yet offset by deleted inputs (the
    /// operational space it held beyond the live data: all its outputs under leveled
    /// compaction, which deletes inputs at the end; bounded by early cleaning in a forest).
    pub compaction_peak_extra_bytes: AtomicU64,
    /// Split-forest compaction counters.
    pub forest: ForestCounters,
    /// Counters of the tiers and their caches, shared with the table store and the capacity tier.
    pub tier: std::sync::Arc<TierStats>,
    /// The counters of an object-store log location (its requests and health; unused for a
    /// directory).
    pub log_tier: std::sync::Arc<TierStats>,
}

/// Split-forest compaction counters (SifrDB).
#[derive(Default)]
pub struct ForestCounters {
    /// Split-forest merges installed.
    pub merges: AtomicU64,
    /// Tables moved into a merge's output tree by metadata alone, and their bytes.
    pub moved_tables: AtomicU64,
    /// Bytes of the tables counted in `moved_tables`.
    pub moved_bytes: AtomicU64,
    /// Checkpoints installed (compaction journal records).
    pub checkpoints: AtomicU64,
    /// Input bytes deleted by early cleaning while their merge ran.
    pub early_cleaned_bytes: AtomicU64,
    /// Merges resumed from the journal after a restart.
    pub resumes: AtomicU64,
    /// Point lookups that probed candidate tables in parallel.
    pub parallel_searches: AtomicU64,
    /// Iterator seeks that prefetched the capacity-tier trees' blocks in parallel.
    pub scan_prefetches: AtomicU64,
}

/// A snapshot of [`ForestCounters`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForestStats {
    /// Split-forest merges installed since open.
    pub merges: u64,
    /// Tables moved into a merge's output tree by metadata alone, since open.
    pub moved_tables: u64,
    /// Bytes of the tables counted in `moved_tables`.
    pub moved_bytes: u64,
    /// Checkpoints installed (compaction journal records) since open.
    pub checkpoints: u64,
    /// Input bytes deleted by early cleaning while their merge ran, since open.
    pub early_cleaned_bytes: u64,
    /// Merges resumed from the journal after a restart.
    pub resumes: u64,
    /// Point lookups that probed candidate tables in parallel, since open.
    pub parallel_searches: u64,
    /// Iterator seeks that prefetched the capacity-tier trees' blocks in parallel, since open.
    pub scan_prefetches: u64,
}

/// Figures for one level in a [`DbStats`] snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelStats {
    /// The level number (0 for L0).
    pub level: usize,
    /// Tables in the level now.
    pub files: usize,
    /// Non-empty sorted runs in the level now.
    pub sorted_runs: usize,
    /// Bytes of the level's tables now.
    pub bytes: u64,
    /// Target size under the current level sizing (0 when the level is unused).
    pub target_bytes: u64,
    /// Compactions installed into this level since open.
    pub compactions: u64,
    /// Tables moved into this level by metadata alone since open (see
    /// [`LevelCounters::trivial_moves`]).
    pub trivial_moves: u64,
    /// Bytes read (from both input levels) by compactions into this level since open.
    pub read_bytes: u64,
    /// Bytes written into this level since open (by flushes for L0, by compactions otherwise).
    pub write_bytes: u64,
    /// Bytes written into this level per byte read by the compactions into it (from both input
    /// levels), RocksDB's per-level `W-Amp`.
    pub write_amp: f64,
    /// Time spent by compactions into this level (by flushes for L0) since open, in seconds.
    pub compaction_secs: f64,
    /// Tables by temperature (decayed reads answered): `[<1, 1–9, 10–99, 100–999, 1k–9.9k,
    /// ≥10k]` (LogStore's per-level histogram; counted only with `placement_policy =
    /// logstore`).
    pub temperature_histogram: [u64; crate::tier::temperature::TEMPERATURE_BUCKETS],
    /// The level's tables' temperatures summed.
    pub temperature: f64,
}

/// A snapshot of the engine's statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DbStats {
    /// Per-level figures, one per configured level.
    pub levels: Vec<LevelStats>,
    /// Encoded bytes of the write batches committed since open (one batch header per group).
    pub user_bytes_written: u64,
    /// Operations committed since open: puts, deletes and range deletes.
    pub keys_written: u64,
    /// Write groups committed since open (one WAL record each).
    pub write_groups: u64,
    /// Bytes appended to the WAL since open, record framing included.
    pub wal_bytes: u64,
    /// WAL fsyncs that succeeded since open.
    pub wal_syncs: u64,
    /// Point lookups since open (`get` calls and `multi_get` keys).
    pub gets: u64,
    /// Point lookups that found a value, since open.
    pub get_found: u64,
    /// Point lookups since open whose newest version was a merge operand (folded on read).
    pub merge_lookups: u64,
    /// Memtable flushes installed since open.
    pub flushes: u64,
    /// Bytes of the L0 tables written by flushes since open.
    pub flush_bytes: u64,
    /// Bytes read by compactions into L1 and below since open (their levels' `read_bytes`).
    pub compaction_read_bytes: u64,
    /// Bytes written by compactions into L1 and below since open (their levels' `write_bytes`).
    pub compaction_write_bytes: u64,
    /// (flush + compaction bytes written) / user bytes written.
    pub write_amp: f64,
    /// Table lookups that consulted a bloom filter, since open.
    pub bloom_checked: u64,
    /// Table lookups the bloom filter answered "absent" (no block read), since open.
    pub bloom_useful: u64,
    /// Table lookups the bloom filter passed that found no entry for the key, since open.
    pub bloom_false_positive: u64,
    /// Capacity-table lookups through a MashMeta trie, since open.
    pub trie_checked: u64,
    /// Trie lookups answered "absent" without reading a block, since open.
    pub trie_rejected: u64,
    /// Data-block lookups the block cache answered, since open.
    pub block_cache_hits: u64,
    /// Data-block lookups the block cache missed, since open.
    pub block_cache_misses: u64,
    /// Bytes held by the block cache now (0 without one).
    pub block_cache_usage: u64,
    /// The block cache's capacity in bytes (0 without one).
    pub block_cache_capacity: u64,
    /// Table probes the row cache answered, since open.
    pub row_cache_hits: u64,
    /// Table probes the row cache did not answer, since open.
    pub row_cache_misses: u64,
    /// Bytes held by the row cache now (0 without one).
    pub row_cache_usage: u64,
    /// The row cache's capacity in bytes (0 without one).
    pub row_cache_capacity: u64,
    /// Data blocks read from table files since open.
    pub block_reads: u64,
    /// Bytes of those data-block reads, each block's 5-byte trailer included.
    pub block_read_bytes: u64,
    /// Time writers spent stalled since open, in microseconds.
    pub stall_micros: u64,
    /// Write groups delayed by a `slowdown_delay` sleep since open.
    pub slowdowns: u64,
    /// Write stalls that stopped writes until there was room, since open.
    pub stops: u64,
    /// Background failures since open (failed compactions, and the error that made the database
    /// read-only).
    pub background_errors: u64,
    /// Approximate bytes of the active and immutable memtables now.
    pub memtable_bytes: u64,
    /// Memtables' point indexes (beside `memtable_bytes`, not counted in it).
    pub memtable_index_bytes: u64,
    /// Immutable memtables waiting to be flushed now.
    pub immutable_memtables: usize,
    /// Snapshots held open now.
    pub live_snapshots: usize,
    /// Bytes of every live table now, on both tiers.
    pub total_sst_bytes: u64,
    /// Figures of the tiers and their caches.
    pub tier: TierSnapshot,
    /// Tables probed by point lookups (per lookup: `table_probes / gets`).
    pub table_probes: u64,
    /// See [`EngineStats::compaction_peak_extra_bytes`].
    pub compaction_peak_extra_bytes: u64,
    /// Split-forest figures (zero under leveled compaction).
    pub forest: ForestStats,
    /// HotRAP's figures, when it is on.
    pub hotrap: Option<crate::tier::hot::HotRapStats>,
    /// LogStore's figures, with `placement_policy = logstore`.
    pub logstore: Option<LogStoreStats>,
    /// The extended WAL's figures, when it is on.
    pub extended_wal: Option<ExtendedWalStats>,
    /// Remote compaction's figures, when a compaction service is configured.
    pub remote_compaction: Option<crate::compaction::remote::runner::RemoteCompactionStats>,
}

/// The extended WAL's figures (RocksMash §3.4), in `DbStats::extended_wal`.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ExtendedWalStats {
    /// WAL files kept in the log location, and the bytes they hold.
    pub live_wal_files: usize,
    /// Bytes of those WAL files.
    pub live_wal_bytes: u64,
    /// Key-list records logged (one per install) and their bytes.
    pub key_lists: u64,
    /// Bytes of those key-list records.
    pub key_list_bytes: u64,
    /// Entries logged inline (records the live WAL no longer held).
    pub inlined_entries: u64,
    /// WAL files deleted once no table needed them.
    pub wal_files_deleted: u64,
}

/// LogStore's figures, in `DbStats::logstore`.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LogStoreStats {
    /// Compactions from the fast tier into the capacity tier that evicted the coldest table.
    pub informed_compactions: u64,
    /// Hot capacity-tier tables merged up into the fast tier, and their input bytes.
    pub reverse_compactions: u64,
    /// Input bytes of the reverse compactions.
    pub reverse_bytes: u64,
    /// Hot overlapping L0 tables merged on the fast tier, and their input bytes.
    pub staging_compactions: u64,
    /// Input bytes of the staging compactions.
    pub staging_bytes: u64,
    /// Compaction is deferred now (reads are rare), and the ticks it was deferred so far.
    pub deferring: bool,
    /// Ticks at which compaction was deferred, since open.
    pub deferred_ticks: u64,
    /// LogStore ticks since open (each decays temperatures and samples the read rate).
    pub ticks: u64,
    /// Writes of the `TEMPERATURE` side file that failed (temperatures are then lost at a
    /// crash, never data).
    pub side_file_errors: u64,
    /// The cost model's measured inputs: seek (µs) and bandwidth (MB/s) of each tier.
    pub fast_seek_us: f64,
    /// Capacity-tier seek time: the mean capacity-tier GET latency, in microseconds.
    pub capacity_seek_us: f64,
    /// Fast-tier write bandwidth, in MB/s (10^6 bytes per second).
    pub fast_mb_per_s: f64,
    /// Capacity-tier write bandwidth (PUTs and upload parts), in MB/s (10^6 bytes per second).
    pub capacity_mb_per_s: f64,
}

impl fmt::Display for LogStoreStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "logstore: informed {}  reverse {} ({})  staging {} ({})  deferring {} ({}/{} ticks)  cost model: fast {:.0} us {:.0} MB/s, capacity {:.0} us {:.0} MB/s",
            self.informed_compactions,
            self.reverse_compactions,
            human(self.reverse_bytes),
            self.staging_compactions,
            human(self.staging_bytes),
            self.deferring,
            self.deferred_ticks,
            self.ticks,
            self.fast_seek_us,
            self.fast_mb_per_s,
            self.capacity_seek_us,
            self.capacity_mb_per_s
        )
    }
}

impl EngineStats {
    /// Copies the counters into a snapshot; level shapes are filled in by the caller.
    pub fn snapshot(&self) -> DbStats {
        let g = |c: &Counter| c.load(Relaxed);
        let mut s = DbStats {
            user_bytes_written: g(&self.user_bytes_written),
            keys_written: g(&self.keys_written),
            write_groups: g(&self.write_groups),
            wal_bytes: g(&self.wal_bytes),
            wal_syncs: g(&self.wal_syncs),
            gets: g(&self.gets),
            get_found: g(&self.get_found),
            merge_lookups: g(&self.merge_lookups),
            flushes: g(&self.flushes),
            flush_bytes: g(&self.flush_bytes),
            bloom_checked: g(&self.bloom_checked),
            bloom_useful: g(&self.bloom_useful),
            bloom_false_positive: g(&self.bloom_false_positive),
            trie_checked: g(&self.trie_checked),
            trie_rejected: g(&self.trie_rejected),
            block_cache_hits: g(&self.block_cache_hits),
            block_cache_misses: g(&self.block_cache_misses),
            row_cache_hits: g(&self.row_cache_hits),
            row_cache_misses: g(&self.row_cache_misses),
            block_reads: g(&self.block_reads),
            block_read_bytes: g(&self.block_read_bytes),
            stall_micros: g(&self.stall_micros),
            slowdowns: g(&self.slowdowns),
            stops: g(&self.stops),
            background_errors: g(&self.background_errors),
            table_probes: g(&self.table_probes),
            compaction_peak_extra_bytes: self.compaction_peak_extra_bytes.load(Relaxed),
            forest: {
                let f = &self.forest;
                ForestStats {
                    merges: f.merges.load(Relaxed),
                    moved_tables: f.moved_tables.load(Relaxed),
                    moved_bytes: f.moved_bytes.load(Relaxed),
                    checkpoints: f.checkpoints.load(Relaxed),
                    early_cleaned_bytes: f.early_cleaned_bytes.load(Relaxed),
                    resumes: f.resumes.load(Relaxed),
                    parallel_searches: f.parallel_searches.load(Relaxed),
                    scan_prefetches: f.scan_prefetches.load(Relaxed),
                }
            },
            tier: TierSnapshot {
                log_requests: self.log_tier.requests.snapshot(),
                log_health: self.log_tier.health.snapshot(),
                ..self.tier.snapshot()
            },
            ..Default::default()
        };
        for (i, l) in self.levels.iter().enumerate() {
            let ls = LevelStats {
                level: i,
                compactions: l.compactions.load(Relaxed),
                trivial_moves: l.trivial_moves.load(Relaxed),
                read_bytes: l.read_bytes.load(Relaxed),
                write_bytes: l.write_bytes.load(Relaxed),
                compaction_secs: l.micros.load(Relaxed) as f64 / 1e6,
                ..Default::default()
            };
            if i > 0 {
                s.compaction_read_bytes += ls.read_bytes;
                s.compaction_write_bytes += ls.write_bytes;
            }
            s.levels.push(ls);
        }
        let written = s.flush_bytes + s.compaction_write_bytes;
        s.write_amp = if s.user_bytes_written > 0 {
            written as f64 / s.user_bytes_written as f64
        } else {
            0.0
        };
        s
    }
}

pub(crate) fn human(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1}{}", U[i])
}

impl fmt::Display for DbStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Level  Files  Runs      Size    Target  Comp  Moves      Read   Written  W-Amp  Comp(s)"
        )?;
        for l in &self.levels {
            if l.files == 0 && l.compactions == 0 && l.write_bytes == 0 {
                continue;
            }
            writeln!(
                f,
                "L{:<4} {:>6} {:>5} {:>9} {:>9} {:>5} {:>6} {:>9} {:>9} {:>6.2} {:>8.2}",
                l.level,
                l.files,
                l.sorted_runs,
                human(l.bytes),
                human(l.target_bytes),
                l.compactions,
                l.trivial_moves,
                human(l.read_bytes),
                human(l.write_bytes),
                l.write_amp,
                l.compaction_secs
            )?;
        }
        writeln!(
            f,
            "user written {}  wal {} ({} syncs, {} groups)  flushed {} ({} flushes)  compacted read {} written {}  write-amp {:.2}",
            human(self.user_bytes_written),
            human(self.wal_bytes),
            self.wal_syncs,
            self.write_groups,
            human(self.flush_bytes),
            self.flushes,
            human(self.compaction_read_bytes),
            human(self.compaction_write_bytes),
            self.write_amp
        )?;
        writeln!(
            f,
            "gets {} (found {})  bloom checked {} useful {} false-positive {}  trie checked {} rejected {}  block cache hit {} miss {} ({} / {})",
            self.gets,
            self.get_found,
            self.bloom_checked,
            self.bloom_useful,
            self.bloom_false_positive,
            self.trie_checked,
            self.trie_rejected,
            self.block_cache_hits,
            self.block_cache_misses,
            human(self.block_cache_usage),
            human(self.block_cache_capacity)
        )?;
        if self.row_cache_capacity > 0 {
            writeln!(
                f,
                "row cache hit {} miss {} ({} / {})",
                self.row_cache_hits,
                self.row_cache_misses,
                human(self.row_cache_usage),
                human(self.row_cache_capacity)
            )?;
        }
        write!(
            f,
            "stalls {:.3}s (slowdowns {}, stops {})  memtable {} (point index {}) + {} immutable  snapshots {}  sst total {}",
            self.stall_micros as f64 / 1e6,
            self.slowdowns,
            self.stops,
            human(self.memtable_bytes),
            human(self.memtable_index_bytes),
            self.immutable_memtables,
            self.live_snapshots,
            human(self.total_sst_bytes)
        )?;
        write!(f, "\n{}", self.tier)?;
        let fo = &self.forest;
        if fo.merges > 0 || fo.checkpoints > 0 || fo.resumes > 0 {
            write!(
                f,
                "\nsplit forest: merges {} moved {} tables ({})  checkpoints {} early-cleaned {}  resumed {}  peak extra {}  tables probed per get {:.2}  parallel searches {}",
                fo.merges,
                fo.moved_tables,
                human(fo.moved_bytes),
                fo.checkpoints,
                human(fo.early_cleaned_bytes),
                fo.resumes,
                human(self.compaction_peak_extra_bytes),
                self.table_probes as f64 / self.gets.max(1) as f64,
                fo.parallel_searches
            )?;
        }
        if let Some(h) = &self.hotrap {
            write!(f, "\n{h}")?;
        }
        if let Some(e) = &self.extended_wal {
            write!(
                f,
                "\nextended wal: {} files ({})  key lists {} ({})  inlined entries {}  files deleted {}",
                e.live_wal_files,
                human(e.live_wal_bytes),
                e.key_lists,
                human(e.key_list_bytes),
                e.inlined_entries,
                e.wal_files_deleted
            )?;
        }
        if let Some(r) = &self.remote_compaction {
            write!(
                f,
                "\nremote compaction ({}, {}): {} remote {} local ({} by estimate, {} ineligible)  queue wait {:.1}s  workers read {} wrote {}  failures: retriable {} solvable {} fatal {} workers lost {} no resources {} unreachable {} timeouts {} unverified {}",
                r.mode,
                r.service,
                r.remote_jobs,
                r.local_jobs,
                r.local_by_estimate,
                r.ineligible_jobs,
                r.queue_wait_micros as f64 / 1e6,
                human(r.transfer_read_bytes),
                human(r.transfer_write_bytes),
                r.failures_retriable,
                r.failures_solvable,
                r.failures_fatal,
                r.workers_lost,
                r.lack_of_resources,
                r.service_unreachable,
                r.wait_timeouts,
                r.verify_failures
            )?;
        }
        if let Some(l) = &self.logstore {
            write!(
                f,
                "\n{l}\ntemperature (tables by reads: <1 1-9 10-99 100-999 1k-9.9k >=10k):"
            )?;
            for lv in self.levels.iter().filter(|lv| lv.files > 0) {
                write!(
                    f,
                    "  L{} {:?} ({:.0})",
                    lv.level, lv.temperature_histogram, lv.temperature
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod counter_tests {
    use super::*;

    #[test]
    fn striped_counter_sums_every_threads_adds() {
        let c = std::sync::Arc::new(Counter::default());
        let threads: Vec<_> = (0..12u64)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.fetch_add(t + 1, Relaxed);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(c.load(Relaxed), 1000 * (1..=12).sum::<u64>());
    }
}
