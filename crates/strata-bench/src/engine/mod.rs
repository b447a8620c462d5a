//! The engines under test behind one small trait, [`KvEngine`]: Strata always; RocksDB and
//! SlateDB behind the cargo features `rocksdb` and `slatedb` (off by default, so the default
//! build stays fast). [`EngineConfig`] is the one set of settings every engine is configured
//! from (memory budget, bloom bits, block size, compression, tiers), so comparisons are equal
//! by construction; `docs/bench-peers.md` lists how each engine maps it.
//!
//! Invariants: an engine is opened on a directory the caller prepared (wiped or restored);
//! every method may be called from many threads at once; [`KvEngine::counters`] returns
//! cumulative counters (the caller takes differences). Must not depend on the runner, the
//! reports or the command line beyond [`EngineConfig`].

mod strata_engine;
pub use strata_engine::StrataEngine;

#[cfg(feature = "rocksdb")]
mod rocksdb_engine;
#[cfg(feature = "rocksdb")]
pub use rocksdb_engine::RocksDbEngine;

#[cfg(feature = "slatedb")]
mod slatedb_engine;
#[cfg(feature = "slatedb")]
pub use slatedb_engine::SlateDbEngine;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which engine to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Strata,
    Rocksdb,
    Slatedb,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Strata => "strata",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Slatedb => "slatedb",
        }
    }
}

/// Block compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CompressionKind {
    None,
    Lz4,
    Zstd,
}

/// How the engine compacts: leveled, or SifrDB's split forest (RocksDB runs universal
/// compaction, its size-tiered style, for `split-forest`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum StyleArg {
    #[default]
    Leveled,
    SplitForest,
}

/// Table placement policy (`--placement-policy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PlacementArg {
    #[default]
    Static,
    Logstore,
}

/// Index of capacity-tier tables (`--capacity-index`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CapacityIndexArg {
    #[default]
    Auto,
    Mashmeta,
    Block,
}

/// Persistent (fast-tier) cache of capacity-tier blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PcacheKind {
    Lap,
    Naive,
    None,
    /// foyer's hybrid cache (build with `--features foyer`).
    #[cfg(feature = "foyer")]
    Foyer,
}

/// Capacity-tier emulation (applied to object stores; see each engine for local directories).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmulationConfig {
    pub latency: Duration,
    /// Bytes per second.
    pub bandwidth: Option<u64>,
}

/// Settings every engine is configured from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineConfig {
    /// The database directory (WAL, manifest; the fast tier unless `fast_dir` differs).
    pub db_dir: PathBuf,
    pub fast_dir: PathBuf,
    /// Capacity-tier URL.
    pub capacity: Option<String>,
    pub emulation: Option<EmulationConfig>,
    pub capacity_levels: usize,
    pub fast_levels: Option<usize>,
    pub hotrap: bool,
    #[serde(default)]
    pub placement_policy: PlacementArg,
    #[serde(default)]
    pub defer_fast_bytes: Option<u64>,
    #[serde(default)]
    pub capacity_index: CapacityIndexArg,
    /// Strata's log location and extended WAL (`--wal-location`, `--extended-wal`).
    #[serde(default)]
    pub wal_location: Option<PathBuf>,
    #[serde(default)]
    pub extended_wal: bool,
    /// Strata: keep the WAL tail in memtables at open (`avoid_flush_during_recovery`);
    /// reports written before it existed ran with the option's default.
    #[serde(default = "engine_default_avoid_flush")]
    pub avoid_flush_during_recovery: bool,
    #[serde(default)]
    pub wal_emulation: Option<EmulationConfig>,
    /// Strata's compaction service (`--compaction-service`) and mode; the token is never
    /// written into reports.
    #[serde(default)]
    pub compaction_service: Option<String>,
    #[serde(skip)]
    pub compaction_token: Option<String>,
    #[serde(default)]
    pub compaction_mode: String,
    #[serde(default)]
    pub compaction_style: StyleArg,
    /// Split forest: trees per level, early-cleaning threshold, search threads (engine
    /// defaults when absent).
    #[serde(default)]
    pub trees_per_level: Option<usize>,
    #[serde(default)]
    pub cleaning_threshold: Option<usize>,
    #[serde(default)]
    pub search_threads: Option<usize>,
    pub fast_tier_budget: Option<u64>,
    /// Strata's capacity-tier request budget (`50/s`, `$20/month`).
    #[serde(default)]
    pub capacity_request_budget: Option<String>,
    pub block_cache_bytes: u64,
    pub row_cache_bytes: u64,
    pub write_buffer_bytes: u64,
    pub max_write_buffers: usize,
    pub persistent_cache_bytes: u64,
    pub persistent_cache_kind: PcacheKind,
    pub bloom_bits: f64,
    /// The merge operator's name (`strata::merge::from_name`); `None`: merges are refused.
    #[serde(default)]
    pub merge_operator: Option<String>,
    /// Keys per bucket of the data blocks' hash indexes (0: binary search only); RocksDB's
    /// `kDataBlockBinaryAndHash` with this `data_block_hash_table_util_ratio`.
    pub data_block_hash_ratio: f64,
    pub block_size: u64,
    /// Bytes a table file is written between writeback requests (Strata's and RocksDB's
    /// `bytes_per_sync`); 0 asks only at the final sync.
    pub bytes_per_sync: u64,
    pub compression: CompressionKind,
    pub min_level_to_compress: usize,
    pub max_background_compactions: usize,
    pub max_bytes_for_level_base: Option<u64>,
    pub target_file_size_base: Option<u64>,
    pub max_open_files: usize,
    pub sync: bool,
    pub statistics: bool,
    /// The run has optimistic transactions (`randomtransaction`): RocksDB opens as an
    /// `OptimisticTransactionDB` (Strata's transactions need no other handle).
    #[serde(default)]
    pub transactions: bool,
}

fn engine_default_avoid_flush() -> bool {
    strata::Options::default().avoid_flush_during_recovery
}

impl EngineConfig {
    /// The capacity tier as a local directory, for engines that can only place files
    /// (`file://` URLs).
    pub fn capacity_dir(&self) -> Option<PathBuf> {
        let url = self.capacity.as_deref()?;
        url.strip_prefix("file://").map(PathBuf::from)
    }
}

/// Cumulative counters an engine reports; `None` where the engine does not count it.
/// Byte and request counts are totals since open.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineCounters {
    pub user_bytes_written: Option<u64>,
    /// Bytes written by flushes and compactions (write amplification = this / user bytes).
    pub flush_bytes: Option<u64>,
    pub compaction_write_bytes: Option<u64>,
    pub compaction_read_bytes: Option<u64>,
    pub block_cache_hits: Option<u64>,
    pub block_cache_misses: Option<u64>,
    /// Table block reads served by the fast tier's files.
    pub fast_block_reads: Option<u64>,
    pub pcache_hits: Option<u64>,
    pub pcache_misses: Option<u64>,
    /// Point reads answered by HotRAP's in-memory promotion cache (each saves the capacity
    /// block read it would have needed).
    #[serde(default)]
    pub promotion_hits: Option<u64>,
    pub capacity_gets: Option<u64>,
    pub capacity_get_bytes: Option<u64>,
    pub capacity_puts: Option<u64>,
    pub capacity_put_bytes: Option<u64>,
    pub capacity_deletes: Option<u64>,
    pub capacity_lists: Option<u64>,
    /// Every object-store request (capacity tier and log location) by the kind S3 bills
    /// (`strata::stats::RequestKind` names), retries included.
    #[serde(default)]
    pub capacity_requests: Option<std::collections::BTreeMap<String, u64>>,
    /// Gauges (not differences): bytes of tables on each tier, now.
    pub fast_table_bytes: Option<u64>,
    pub capacity_table_bytes: Option<u64>,
    pub stall_micros: Option<u64>,
}

/// An engine under test.
pub trait KvEngine: Send + Sync {
    fn kind(&self) -> EngineKind;
    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()>;
    /// Writes all pairs atomically.
    fn put_batch(&self, pairs: &[(&[u8], &[u8])]) -> anyhow::Result<()>;
    fn delete(&self, key: &[u8]) -> anyhow::Result<()>;
    /// Whether `key` exists (the value is read in full, then dropped).
    fn get(&self, key: &[u8]) -> anyhow::Result<bool>;
    /// How many of `keys` exist, looked up together (the engine's MultiGet where it has one;
    /// one `get` per key otherwise).
    fn multi_get(&self, keys: &[&[u8]]) -> anyhow::Result<usize> {
        let mut found = 0;
        for k in keys {
            found += usize::from(self.get(k)?);
        }
        Ok(found)
    }
    /// Read-modify-write of `key` (db_bench's `updaterandom`): reads it, then writes `value`.
    /// With `txn`, inside an optimistic transaction (the read a `get_for_update`); returns
    /// `false` when the commit was refused as a conflict (nothing written). Engines without
    /// transactions refuse `txn`.
    fn update(&self, key: &[u8], value: &[u8], txn: bool) -> anyhow::Result<bool> {
        anyhow::ensure!(
            !txn,
            "{} does not run transactions in strata bench",
            self.kind().name()
        );
        self.get_then_put(key, value)
    }
    /// [`KvEngine::update`] without a transaction: `get`, then `put` (always `true`).
    fn get_then_put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<bool> {
        self.get(key)?;
        self.put(key, value)?;
        Ok(true)
    }
    /// Merges `operand` into `key` with the configured merge operator (db_bench's
    /// `mergerandom`). Engines without merges refuse it.
    fn merge(&self, _key: &[u8], _operand: &[u8]) -> anyhow::Result<()> {
        anyhow::bail!("{} does not run merges in strata bench", self.kind().name())
    }
    /// Seeks to the first key `>= start` and reads up to `n` entries (keys and values); returns
    /// how many. When all `n` were read, `last` holds the key of the last one.
    fn scan(&self, start: &[u8], n: usize, last: &mut Vec<u8>) -> anyhow::Result<usize>;
    /// Flushes memtables and waits until background compactions are idle (after a load).
    fn settle(&self) -> anyhow::Result<()>;
    fn counters(&self) -> EngineCounters;
    /// The engine's own statistics text, for the report.
    fn stats_text(&self) -> String;
    /// The engine's own statistics as named numbers (the report's `engine_stats` beside
    /// `text`); empty for engines that only have text.
    fn stats_map(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
    /// HotRAP's figures (RALT sizes and limits, promotions per pathway, aborts, retained
    /// bytes, fast-tier hit rate of point reads), cumulative since open; `None` for engines
    /// without it or with it off.
    fn hotrap(&self) -> Option<serde_json::Value> {
        None
    }
    /// LogStore's figures (see `PhaseReport::logstore`); `None` with static placement.
    fn logstore(&self) -> Option<serde_json::Value> {
        None
    }
    /// Compaction-structure figures (see `PhaseReport::compaction`).
    fn compaction(&self) -> Option<serde_json::Value> {
        None
    }
    /// The engine's effective settings, `(name, value)`, for the report and docs.
    fn settings(&self) -> Vec<(String, String)>;
    fn close(&self) -> anyhow::Result<()>;
}

/// Opens `kind` on `cfg`.
pub fn open(kind: EngineKind, cfg: &EngineConfig) -> anyhow::Result<Box<dyn KvEngine>> {
    match kind {
        EngineKind::Strata => Ok(Box::new(StrataEngine::open(cfg)?)),
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Ok(Box::new(RocksDbEngine::open(cfg)?)),
        #[cfg(feature = "slatedb")]
        EngineKind::Slatedb => Ok(Box::new(SlateDbEngine::open(cfg)?)),
        #[allow(unreachable_patterns)]
        k => anyhow::bail!(
            "this build has no {} engine: rebuild with `--features {}`",
            k.name(),
            k.name()
        ),
    }
}

/// Whether this build includes `kind`.
pub fn available(kind: EngineKind) -> bool {
    match kind {
        EngineKind::Strata => true,
        EngineKind::Rocksdb => cfg!(feature = "rocksdb"),
        EngineKind::Slatedb => cfg!(feature = "slatedb"),
    }
}
