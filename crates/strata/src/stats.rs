//! Engine-wide counters (lock-free atomics) and the [`DbStats`] snapshot returned by
//! `Db::stats()`. Counters are bumped on hot paths with `Relaxed` ordering; a snapshot is
//! approximately consistent. Depends on nothing else in the crate.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Levels tracked by per-level counters.
pub const MAX_LEVELS: usize = 16;

#[derive(Default)]
pub struct LevelCounters {
    pub compactions: AtomicU64,
    /// Bytes read (from both input levels) by compactions whose output is this level.
    pub read_bytes: AtomicU64,
    /// Bytes written into this level (by flush for L0, by compaction otherwise).
    pub write_bytes: AtomicU64,
    pub trivial_moves: AtomicU64,
    pub micros: AtomicU64,
}

/// Live counters shared by the engine's components.
#[derive(Default)]
pub struct EngineStats {
    pub levels: [LevelCounters; MAX_LEVELS],
    pub user_bytes_written: AtomicU64,
    pub keys_written: AtomicU64,
    pub write_groups: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub gets: AtomicU64,
    pub get_found: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub bloom_checked: AtomicU64,
    pub bloom_useful: AtomicU64,
    pub bloom_false_positive: AtomicU64,
    pub block_cache_hits: AtomicU64,
    pub block_cache_misses: AtomicU64,
    pub block_reads: AtomicU64,
    pub block_read_bytes: AtomicU64,
    pub stall_micros: AtomicU64,
    pub slowdowns: AtomicU64,
    pub stops: AtomicU64,
    pub background_errors: AtomicU64,
}

impl EngineStats {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }
}

/// Figures for one level in a [`DbStats`] snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelStats {
    pub level: usize,
    pub files: usize,
    pub sorted_runs: usize,
    pub bytes: u64,
    /// Target size under the current level sizing (0 when the level is unused).
    pub target_bytes: u64,
    pub compactions: u64,
    pub trivial_moves: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Bytes written into this level per byte read by the compactions into it (from both input
    /// levels), RocksDB's per-level `W-Amp`.
    pub write_amp: f64,
    pub compaction_secs: f64,
}

/// A snapshot of the engine's statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DbStats {
    pub levels: Vec<LevelStats>,
    pub user_bytes_written: u64,
    pub keys_written: u64,
    pub write_groups: u64,
    pub wal_bytes: u64,
    pub wal_syncs: u64,
    pub gets: u64,
    pub get_found: u64,
    pub flushes: u64,
    pub flush_bytes: u64,
    pub compaction_read_bytes: u64,
    pub compaction_write_bytes: u64,
    /// (flush + compaction bytes written) / user bytes written.
    pub write_amp: f64,
    pub bloom_checked: u64,
    pub bloom_useful: u64,
    pub bloom_false_positive: u64,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_usage: u64,
    pub block_cache_capacity: u64,
    pub block_reads: u64,
    pub block_read_bytes: u64,
    pub stall_micros: u64,
    pub slowdowns: u64,
    pub stops: u64,
    pub background_errors: u64,
    pub memtable_bytes: u64,
    pub immutable_memtables: usize,
    pub live_snapshots: usize,
    pub total_sst_bytes: u64,
}

impl EngineStats {
    /// Copies the counters into a snapshot; level shapes are filled in by the caller.
    pub fn snapshot(&self) -> DbStats {
        let g = |c: &AtomicU64| c.load(Relaxed);
        let mut s = DbStats {
            user_bytes_written: g(&self.user_bytes_written),
            keys_written: g(&self.keys_written),
            write_groups: g(&self.write_groups),
            wal_bytes: g(&self.wal_bytes),
            wal_syncs: g(&self.wal_syncs),
            gets: g(&self.gets),
            get_found: g(&self.get_found),
            flushes: g(&self.flushes),
            flush_bytes: g(&self.flush_bytes),
            bloom_checked: g(&self.bloom_checked),
            bloom_useful: g(&self.bloom_useful),
            bloom_false_positive: g(&self.bloom_false_positive),
            block_cache_hits: g(&self.block_cache_hits),
            block_cache_misses: g(&self.block_cache_misses),
            block_reads: g(&self.block_reads),
            block_read_bytes: g(&self.block_read_bytes),
            stall_micros: g(&self.stall_micros),
            slowdowns: g(&self.slowdowns),
            stops: g(&self.stops),
            background_errors: g(&self.background_errors),
            ..Default::default()
        };
        for (i, l) in self.levels.iter().enumerate() {
            let ls = LevelStats {
                level: i,
                compactions: g(&l.compactions),
                trivial_moves: g(&l.trivial_moves),
                read_bytes: g(&l.read_bytes),
                write_bytes: g(&l.write_bytes),
                compaction_secs: g(&l.micros) as f64 / 1e6,
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

fn human(b: u64) -> String {
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
            "gets {} (found {})  bloom checked {} useful {} false-positive {}  block cache hit {} miss {} ({} / {})",
            self.gets,
            self.get_found,
            self.bloom_checked,
            self.bloom_useful,
            self.bloom_false_positive,
            self.block_cache_hits,
            self.block_cache_misses,
            human(self.block_cache_usage),
            human(self.block_cache_capacity)
        )?;
        write!(
            f,
            "stalls {:.3}s (slowdowns {}, stops {})  memtable {} + {} immutable  snapshots {}  sst total {}",
            self.stall_micros as f64 / 1e6,
            self.slowdowns,
            self.stops,
            human(self.memtable_bytes),
            self.immutable_memtables,
            self.live_snapshots,
            human(self.total_sst_bytes)
        )
    }
}
