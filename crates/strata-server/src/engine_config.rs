//! The `[engine]` table of `strata serve`'s configuration: [`EngineConfig`] (every tunable of
//! `strata::Options`, with the engine's defaults) and how it becomes engine `Options`
//! (`to_options`, `tier_options`), plus the compression names it is written in.
//!
//! Invariants: every field is a kebab-case TOML key (`scripts/options-reference.py` parses this
//! file with `config.rs` and checks the configuration reference against it); defaults are the
//! engine's. Depends on `config` (`ConfigError`, `config_values`) and the engine only.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata::{Compression, Options};

use crate::config::{ByteSize, ConfigError};

/// Parses a compression name: `none`, `lz4`, `zstd` (level 3) or `zstd:<level>`.
pub fn parse_compression(s: &str) -> Result<Compression, ConfigError> {
    let t = s.trim().to_ascii_lowercase();
    match t.as_str() {
        "none" => Ok(Compression::None),
        "lz4" => Ok(Compression::Lz4),
        "zstd" => Ok(Compression::Zstd(3)),
        _ => match t.strip_prefix("zstd:").map(str::parse::<i32>) {
            Some(Ok(l)) => Ok(Compression::Zstd(l)),
            _ => Err(ConfigError(format!(
                "invalid compression '{s}' (expected none, lz4, zstd or zstd:<level>)"
            ))),
        },
    }
}

/// The name of a compression as `parse_compression` reads it.
pub fn compression_name(c: Compression) -> String {
    match c {
        Compression::Zstd(l) => format!("zstd:{l}"),
        other => other.name().to_string(),
    }
}

/// Engine options (every tunable of `strata::Options`). Defaults are the engine's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct EngineConfig {
    pub write_buffer_size: ByteSize,
    pub max_write_buffer_number: usize,
    pub level0_file_num_compaction_trigger: usize,
    pub level0_slowdown_writes_trigger: usize,
    pub level0_stop_writes_trigger: usize,
    pub slowdown_delay_ms: u64,
    pub num_levels: usize,
    pub max_bytes_for_level_base: ByteSize,
    pub max_bytes_for_level_multiplier: f64,
    pub level_compaction_dynamic_level_bytes: bool,
    pub target_file_size_base: ByteSize,
    pub block_size: ByteSize,
    /// Bytes a table file is written between writeback requests; 0 asks only at its sync.
    pub bytes_per_sync: ByteSize,
    pub block_restart_interval: usize,
    pub bloom_bits_per_key: f64,
    /// Keys per bucket of the data blocks' hash indexes; 0 writes none.
    pub data_block_hash_ratio: f64,
    /// Compression by output level; the last entry applies to deeper levels.
    pub compression: Vec<String>,
    pub block_cache_size: ByteSize,
    /// Row cache bytes (point-lookup answers by table and key); 0 disables it.
    pub row_cache_size: ByteSize,
    /// A memtable flush puts the blocks it writes into the block cache
    /// (`prepopulate_block_cache`). Default true here (false in the engine): what a Redis
    /// application wrote it mostly reads soon (a queue's consumers, a session), and a read
    /// that finds its block cached runs on the event loop instead of the engine pool.
    pub prepopulate_block_cache: bool,
    pub max_open_files: usize,
    pub max_background_compactions: usize,
    /// Compaction write rate limit in bytes per second; 0 is unlimited.
    pub compaction_rate_limit: ByteSize,
    pub max_manifest_file_size: ByteSize,
    /// Capacity tier URL (`file://`, `s3://`, `memory://`); `auto` (the default) is
    /// `file://<dir>/capacity`; `none` keeps every table in the data directory.
    pub capacity: String,
    /// How many levels, counted from the bottom, live on the capacity tier (the rest, about
    /// a tenth of the data, stays in the data directory).
    pub capacity_levels: usize,
    /// Absolute placement instead: levels `0..=fast-levels` stay in the data directory.
    pub fast_levels: Option<usize>,
    /// HotRAP: promote hot records read from the capacity tier back to the fast tier and keep
    /// hot records there during compactions.
    pub hotrap: bool,
    /// `static` (placement by level alone) or `logstore` (LogStore: tables also move by
    /// temperature — informed, reverse, deferred and staging compactions; leveled only).
    pub placement_policy: String,
    /// Index of capacity-tier tables: `mashmeta` (a succinct trie: index and exact filter in
    /// one; absent keys cost no capacity request), `block` (block index + bloom filter) or
    /// `auto` (per table, the trie when it is no larger than index + filter).
    pub capacity_index: String,
    /// `leveled`, or `split-forest` (SifrDB: several trees per level, less rewriting for
    /// write-heavy data). Used when the database is created; an existing one keeps its style.
    pub compaction_style: String,
    /// Bytes of tables the fast tier may hold (0: unbounded).
    pub fast_tier_budget: ByteSize,
    /// A bound on capacity-tier requests that compactions stay under:
    /// `50/s`, `$20/month` (S3 Standard prices) or both; empty: unbounded.
    pub capacity_request_budget: String,
    /// The object store's prices, for INFO's and Prometheus' monthly cost and a `$/month`
    /// request budget: `put=…,get=…,delete=…,storage=…` in dollars per 1,000 requests and per
    /// GB-month; keys left out keep S3 Standard's (empty: S3 Standard).
    pub capacity_price: String,
    /// Seconds a capacity-tier table that left the tree stays before it is deleted (and only
    /// if no checkpoint keeps it); lets `strata checkpoint` beside the server record what it
    /// read.
    pub capacity_gc_min_age_secs: f64,
    /// Persistent cache of capacity-tier blocks: `lap`, `naive` or `none`.
    pub persistent_cache: String,
    pub persistent_cache_size: ByteSize,
    /// Capacity-tier emulation (benchmarks, fault drills): latency per request in ms,
    /// bandwidth in MB/s (0: unlimited), probability of an injected transient error.
    pub capacity_latency_ms: f64,
    pub capacity_mbps: f64,
    pub capacity_error_rate: f64,
    /// Run compactions on this compaction service (`http://host:port`); empty: locally.
    pub compaction_service: String,
    /// The compaction service's token.
    pub compaction_token: String,
    /// `remote`, `hybrid` (per job, by estimated time and local load) or `local`.
    pub compaction_mode: String,
    /// Where the write-ahead log lives and the manifest is mirrored (RocksMash §3.4): a
    /// directory apart from the data directory (another disk, a network volume; a relative
    /// path resolves against the server's working directory) or an object-store URL (`s3://`,
    /// `file://`, `memory://`; only synced writes reach it), so the log and the manifest
    /// survive the loss of the data directory's disk — and, with `extended-wal`, everything
    /// the fast tier held. Empty (the default): the log lives in the data directory. Opening a
    /// database whose live log is not where this says (nor in the data directory) is refused
    /// with an error naming both places, never started without that log.
    pub wal_location: String,
    /// The extended WAL (RocksMash §3.4): the log keeps every record still only in fast-tier
    /// tables, and each new fast-tier table's key list is logged, so `strata recover` can
    /// rebuild the lost fast tier in parallel. Needs `wal-location`.
    pub extended_wal: bool,
    /// At startup, keep the WAL tail in memtables flushed in the background instead of writing
    /// it to L0 before serving (`avoid_flush_during_recovery`). Default true.
    pub avoid_flush_during_recovery: bool,
    /// An object-store `wal-location` is leased to one server at a time across nodes; a
    /// holder silent this many seconds is taken over (a server starting on a location whose
    /// previous holder died waits this long). Default 20.
    pub wal_lease_ttl_secs: f64,
    /// Whether the lease of an object-store `wal-location` is renewed while the server writes
    /// nothing (true, the default). False: an idle server sends no request to the location;
    /// its next write renews the lease first and fails with `FENCED` if another server took
    /// it over meanwhile (an idle server looks dead to a replica's `REPLICAOF NO ONE`).
    pub wal_lease_renew_while_idle: bool,
}

/// A positive number of seconds as a `Duration` (`None` for zero, negative, NaN or too large):
/// `engine.wal-lease-ttl-secs` here and `strata recover --wal-lease-ttl-secs`.
pub fn positive_secs(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
}

impl Default for EngineConfig {
    fn default() -> Self {
        let o = Options::default();
        EngineConfig {
            write_buffer_size: ByteSize(o.write_buffer_size as u64),
            max_write_buffer_number: o.max_write_buffer_number,
            level0_file_num_compaction_trigger: o.level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger: o.level0_slowdown_writes_trigger,
            level0_stop_writes_trigger: o.level0_stop_writes_trigger,
            slowdown_delay_ms: o.slowdown_delay.as_millis() as u64,
            num_levels: o.num_levels,
            max_bytes_for_level_base: ByteSize(o.max_bytes_for_level_base),
            max_bytes_for_level_multiplier: o.max_bytes_for_level_multiplier,
            level_compaction_dynamic_level_bytes: o.level_compaction_dynamic_level_bytes,
            target_file_size_base: ByteSize(o.target_file_size_base),
            block_size: ByteSize(o.block_size as u64),
            bytes_per_sync: ByteSize(o.bytes_per_sync),
            block_restart_interval: o.block_restart_interval,
            bloom_bits_per_key: o.bloom_bits_per_key,
            data_block_hash_ratio: o.data_block_hash_ratio,
            compression: o
                .compression_per_level
                .iter()
                .map(|c| compression_name(*c))
                .collect(),
            block_cache_size: ByteSize(o.block_cache_capacity as u64),
            row_cache_size: ByteSize(o.row_cache_capacity as u64),
            prepopulate_block_cache: true,
            max_open_files: o.max_open_files,
            max_background_compactions: o.max_background_compactions,
            compaction_rate_limit: ByteSize(o.compaction_rate_limit),
            max_manifest_file_size: ByteSize(o.max_manifest_file_size),
            capacity: "auto".into(),
            capacity_levels: o.capacity_levels,
            fast_levels: o.fast_levels,
            hotrap: o.hotrap.enabled,
            placement_policy: o.placement_policy.name().into(),
            capacity_index: o.capacity_index.name().into(),
            compaction_style: o.compaction_style.name().into(),
            fast_tier_budget: ByteSize(0),
            capacity_request_budget: String::new(),
            capacity_price: String::new(),
            capacity_gc_min_age_secs: o.capacity_gc_min_age.as_secs_f64(),
            persistent_cache: "lap".into(),
            persistent_cache_size: ByteSize(256 << 20),
            capacity_latency_ms: 0.0,
            capacity_mbps: 0.0,
            capacity_error_rate: 0.0,
            compaction_service: String::new(),
            compaction_token: String::new(),
            compaction_mode: "hybrid".into(),
            wal_location: String::new(),
            extended_wal: o.extended_wal,
            avoid_flush_during_recovery: o.avoid_flush_during_recovery,
            wal_lease_ttl_secs: o.wal_lease_ttl.as_secs_f64(),
            wal_lease_renew_while_idle: o.wal_lease_renew_while_idle,
        }
    }
}

fn usize_of(v: ByteSize, name: &str) -> Result<usize, ConfigError> {
    usize::try_from(v.0).map_err(|_| ConfigError(format!("{name} is too large")))
}

impl EngineConfig {
    /// The object store's prices (`capacity-price` over S3 Standard's).
    pub fn prices(&self) -> Result<strata::stats::PriceTable, ConfigError> {
        strata::stats::PriceTable::default()
            .with(&self.capacity_price)
            .map_err(|e| ConfigError(format!("engine.capacity-price: {e}")))
    }

    /// The engine options these settings describe (without the server's own hooks).
    pub fn to_options(&self) -> Result<Options, ConfigError> {
        let compression = self
            .compression
            .iter()
            .map(|s| parse_compression(s))
            .collect::<Result<Vec<_>, _>>()?;
        if compression.is_empty() {
            return Err(ConfigError(
                "compression needs at least one entry".to_string(),
            ));
        }
        let o = Options {
            write_buffer_size: usize_of(self.write_buffer_size, "write-buffer-size")?,
            max_write_buffer_number: self.max_write_buffer_number,
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger: self.level0_slowdown_writes_trigger,
            level0_stop_writes_trigger: self.level0_stop_writes_trigger,
            slowdown_delay: Duration::from_millis(self.slowdown_delay_ms),
            num_levels: self.num_levels,
            max_bytes_for_level_base: self.max_bytes_for_level_base.0,
            max_bytes_for_level_multiplier: self.max_bytes_for_level_multiplier,
            level_compaction_dynamic_level_bytes: self.level_compaction_dynamic_level_bytes,
            target_file_size_base: self.target_file_size_base.0,
            block_size: usize_of(self.block_size, "block-size")?,
            bytes_per_sync: self.bytes_per_sync.0,
            block_restart_interval: self.block_restart_interval,
            bloom_bits_per_key: self.bloom_bits_per_key,
            data_block_hash_ratio: self.data_block_hash_ratio,
            compression_per_level: compression,
            block_cache_capacity: usize_of(self.block_cache_size, "block-cache-size")?,
            row_cache_capacity: usize_of(self.row_cache_size, "row-cache-size")?,
            prepopulate_block_cache: self.prepopulate_block_cache,
            max_open_files: self.max_open_files,
            max_background_compactions: self.max_background_compactions,
            compaction_rate_limit: self.compaction_rate_limit.0,
            max_manifest_file_size: self.max_manifest_file_size.0,
            capacity_levels: self.capacity_levels,
            fast_levels: self.fast_levels,
            hotrap: strata::tier::hot::HotRapOptions {
                enabled: self.hotrap,
                ..Default::default()
            },
            fast_tier_budget: (self.fast_tier_budget.0 > 0).then_some(self.fast_tier_budget.0),
            capacity_request_budget: match self.capacity_request_budget.trim() {
                "" => None,
                b => Some(strata::storage::object::RequestBudget {
                    prices: self.prices()?,
                    ..b.parse().map_err(|e: String| {
                        ConfigError(format!("engine.capacity-request-budget: {e}"))
                    })?
                }),
            },
            capacity_gc_min_age: Duration::try_from_secs_f64(self.capacity_gc_min_age_secs)
                .map_err(|_| {
                    ConfigError(
                        "engine.capacity-gc-min-age-secs must be a non-negative number".into(),
                    )
                })?,
            compaction_style: self
                .compaction_style
                .parse()
                .map_err(|e: String| ConfigError(format!("engine.compaction-style: {e}")))?,
            placement_policy: self
                .placement_policy
                .parse()
                .map_err(|e: String| ConfigError(format!("engine.placement-policy: {e}")))?,
            capacity_index: strata::sst::index::IndexKind::parse(&self.capacity_index).ok_or_else(
                || {
                    ConfigError(format!(
                        "engine.capacity-index: unknown index {:?} (auto, mashmeta or block)",
                        self.capacity_index
                    ))
                },
            )?,
            wal_location: (!self.wal_location.is_empty())
                .then(|| std::path::PathBuf::from(&self.wal_location)),
            extended_wal: self.extended_wal,
            avoid_flush_during_recovery: self.avoid_flush_during_recovery,
            wal_lease_ttl: positive_secs(self.wal_lease_ttl_secs).ok_or_else(|| {
                ConfigError(format!(
                    "engine.wal-lease-ttl-secs: {} is not a positive number of seconds",
                    self.wal_lease_ttl_secs
                ))
            })?,
            wal_lease_renew_while_idle: self.wal_lease_renew_while_idle,
            ..Options::default()
        };
        o.validate()
            .map_err(|e| ConfigError(format!("engine options: {e}")))?;
        Ok(o)
    }

    /// The tier options for a database in `dir` (resolving `capacity = "auto"`).
    pub fn tier_options(&self, dir: &std::path::Path, o: &mut Options) -> Result<(), ConfigError> {
        use strata::cache::persistent::{PersistentCacheKind, PersistentCacheOptions};
        use strata::storage::object::{CapacityOptions, Emulation};
        let url = match self.capacity.as_str() {
            "none" | "" => return Ok(()),
            "auto" => {
                let abs = std::path::absolute(dir)
                    .map_err(|e| ConfigError(format!("data directory: {e}")))?;
                format!("file://{}", abs.join("capacity").display())
            }
            u => u.to_string(),
        };
        let mut c = CapacityOptions::new(url);
        if self.capacity_latency_ms > 0.0
            || self.capacity_mbps > 0.0
            || self.capacity_error_rate > 0.0
        {
            c.emulation = Some(Emulation {
                latency: Duration::from_secs_f64(self.capacity_latency_ms / 1000.0),
                bandwidth: (self.capacity_mbps > 0.0).then_some((self.capacity_mbps * 1e6) as u64),
                error_rate: self.capacity_error_rate,
                ..Default::default()
            });
        }
        o.capacity = Some(c);
        let kind = match self.persistent_cache.as_str() {
            "lap" => PersistentCacheKind::Lap,
            "naive" => PersistentCacheKind::Naive,
            "none" => PersistentCacheKind::None,
            k => {
                return Err(ConfigError(format!(
                    "persistent-cache must be lap, naive or none, not {k:?}"
                )))
            }
        };
        o.persistent_cache = PersistentCacheOptions {
            kind,
            capacity: self.persistent_cache_size.0,
            ..Default::default()
        };
        o.validate()
            .map_err(|e| ConfigError(format!("engine options: {e}")))
    }

    /// `(name, value)` for every engine setting, names as in the TOML `[engine]` table.
    pub fn entries(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        let mut p = |k: &str, val: String| v.push((k.to_string(), val));
        p("write-buffer-size", self.write_buffer_size.to_string());
        p(
            "max-write-buffer-number",
            self.max_write_buffer_number.to_string(),
        );
        p(
            "level0-file-num-compaction-trigger",
            self.level0_file_num_compaction_trigger.to_string(),
        );
        p(
            "level0-slowdown-writes-trigger",
            self.level0_slowdown_writes_trigger.to_string(),
        );
        p(
            "level0-stop-writes-trigger",
            self.level0_stop_writes_trigger.to_string(),
        );
        p("slowdown-delay-ms", self.slowdown_delay_ms.to_string());
        p("num-levels", self.num_levels.to_string());
        p(
            "max-bytes-for-level-base",
            self.max_bytes_for_level_base.to_string(),
        );
        p(
            "max-bytes-for-level-multiplier",
            self.max_bytes_for_level_multiplier.to_string(),
        );
        p(
            "level-compaction-dynamic-level-bytes",
            if self.level_compaction_dynamic_level_bytes {
                "yes"
            } else {
                "no"
            }
            .to_string(),
        );
        p(
            "target-file-size-base",
            self.target_file_size_base.to_string(),
        );
        p("block-size", self.block_size.to_string());
        p("bytes-per-sync", self.bytes_per_sync.to_string());
        p(
            "block-restart-interval",
            self.block_restart_interval.to_string(),
        );
        p("bloom-bits-per-key", self.bloom_bits_per_key.to_string());
        p(
            "data-block-hash-ratio",
            self.data_block_hash_ratio.to_string(),
        );
        p("compression", self.compression.join(","));
        p("block-cache-size", self.block_cache_size.to_string());
        p("row-cache-size", self.row_cache_size.to_string());
        p(
            "prepopulate-block-cache",
            self.prepopulate_block_cache.to_string(),
        );
        p("max-open-files", self.max_open_files.to_string());
        p(
            "max-background-compactions",
            self.max_background_compactions.to_string(),
        );
        p(
            "compaction-rate-limit",
            self.compaction_rate_limit.to_string(),
        );
        p(
            "max-manifest-file-size",
            self.max_manifest_file_size.to_string(),
        );
        p("capacity", self.capacity.clone());
        p("capacity-levels", self.capacity_levels.to_string());
        p(
            "fast-levels",
            self.fast_levels
                .map_or("relative".into(), |k| k.to_string()),
        );
        p("hotrap", self.hotrap.to_string());
        p("placement-policy", self.placement_policy.clone());
        p("capacity-index", self.capacity_index.clone());
        p("compaction-style", self.compaction_style.clone());
        p("fast-tier-budget", self.fast_tier_budget.to_string());
        p(
            "capacity-request-budget",
            self.capacity_request_budget.clone(),
        );
        p("capacity-price", self.capacity_price.clone());
        p(
            "capacity-gc-min-age-secs",
            self.capacity_gc_min_age_secs.to_string(),
        );
        p("persistent-cache", self.persistent_cache.clone());
        p(
            "persistent-cache-size",
            self.persistent_cache_size.to_string(),
        );
        p("capacity-latency-ms", self.capacity_latency_ms.to_string());
        p("capacity-mbps", self.capacity_mbps.to_string());
        p("capacity-error-rate", self.capacity_error_rate.to_string());
        p("wal-location", self.wal_location.clone());
        p("extended-wal", self.extended_wal.to_string());
        p(
            "avoid-flush-during-recovery",
            self.avoid_flush_during_recovery.to_string(),
        );
        p("wal-lease-ttl-secs", self.wal_lease_ttl_secs.to_string());
        p(
            "wal-lease-renew-while-idle",
            self.wal_lease_renew_while_idle.to_string(),
        );
        p("compaction-service", self.compaction_service.clone());
        // The token is a secret: shown as set or not.
        p(
            "compaction-token",
            if self.compaction_token.is_empty() {
                ""
            } else {
                "(set)"
            }
            .into(),
        );
        p("compaction-mode", self.compaction_mode.clone());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_names() {
        assert_eq!(parse_compression("zstd:5").unwrap(), Compression::Zstd(5));
        assert_eq!(parse_compression("LZ4").unwrap(), Compression::Lz4);
        assert_eq!(compression_name(Compression::Zstd(3)), "zstd:3");
    }

    #[test]
    fn capacity_prices_override_s3_standard_and_reach_the_budget() {
        let mut e = EngineConfig::default();
        assert_eq!(e.prices().unwrap(), strata::stats::PriceTable::default());
        e.capacity_price = "get=0.001, storage=0.01".into();
        let p = e.prices().unwrap();
        assert_eq!((p.read_per_1k, p.storage_per_gb_month), (0.001, 0.01));
        assert_eq!(
            p.write_per_1k,
            strata::stats::PriceTable::default().write_per_1k
        );
        e.capacity_request_budget = "$20/month".into();
        let budget = e.to_options().unwrap().capacity_request_budget.unwrap();
        assert_eq!(budget.prices, p, "a dollar budget is priced the same way");
        e.capacity_price = "get=-1".into();
        let err = e.prices().unwrap_err().to_string();
        assert!(err.contains("engine.capacity-price"), "{err}");
    }
}
