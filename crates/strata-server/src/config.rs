//! Server configuration: [`ServerConfig`] (what `strata serve` reads from flags and a TOML
//! file) and engine options; the values settings are written in (sync policy, byte sizes
//! written the Redis way, `64mb`) are `config_values`'.
//!
//! Invariants: `ServerConfig::default()` is what `strata serve` runs with no arguments;
//! [`ServerConfig::validate`] rejects inconsistent settings before anything is opened;
//! [`ServerConfig::engine_options`] is the only place server settings become engine `Options`.
//! TOML keys are kebab-case, like Redis's configuration names; engine options live in an
//! `[engine]` table. Must not depend on the network layer or the command table.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata::{Compression, Options};

use crate::value::HEADER_LEN_EXPIRY;

/// Largest value a client may store: the engine's limit less the value header.
pub const MAX_STRING_LEN: u64 = (strata::MAX_VALUE_SIZE - HEADER_LEN_EXPIRY) as u64;

/// A configuration error, with the offending setting in the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

pub use crate::config_values::{ByteSize, EngineStorage, OutputLimit, SyncPolicy};

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
        }
    }
}

fn usize_of(v: ByteSize, name: &str) -> Result<usize, ConfigError> {
    usize::try_from(v.0).map_err(|_| ConfigError(format!("{name} is too large")))
}

impl EngineConfig {
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
                b => Some(b.parse().map_err(|e: String| {
                    ConfigError(format!("engine.capacity-request-budget: {e}"))
                })?),
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

/// Everything `strata serve` is configured with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerConfig {
    /// Address to listen on. Default `127.0.0.1`.
    pub bind: String,
    /// TCP port; 0 picks a free one (logged at start). Default 6380.
    pub port: u16,
    /// Data directory. Default `./strata-data`.
    pub dir: PathBuf,
    /// Password of the `default` user; `None` disables authentication.
    pub requirepass: Option<String>,
    /// Most simultaneous clients. Default 10000.
    pub maxclients: usize,
    /// Length of the listen queue of connections the kernel completed but the server has not
    /// accepted yet (Redis's `tcp-backlog`); the kernel caps it at
    /// `/proc/sys/net/core/somaxconn`. Default 511.
    pub tcp_backlog: u32,
    /// Seconds a client may stay idle before it is disconnected; 0 never. Default 0.
    pub timeout: u64,
    /// Milliseconds a script (EVAL, FCALL) may run before other clients are answered `BUSY`
    /// and `SCRIPT KILL` may stop it (redis' `lua-time-limit`, also `busy-reply-threshold`).
    /// Default 5000.
    pub lua_time_limit: u64,
    /// redis' `client-output-buffer-limit pubsub`: `<hard> <soft> <soft seconds>`. A Pub/Sub
    /// subscriber whose undelivered messages pass the hard size, or stay over the soft size
    /// for the seconds given, is disconnected (0 disables a limit). Default `32mb 8mb 60`.
    pub client_output_buffer_limit_pubsub: OutputLimit,
    /// redis' `notify-keyspace-events`: the keyspace event classes published over Pub/Sub
    /// (`K`, `E`, `g$lshzxetdmn`, `A`). Default `""` (none).
    pub notify_keyspace_events: String,
    /// When the log is fsynced. Default `everysec`.
    pub sync: SyncPolicy,
    /// `error`, `warn`, `info`, `debug` or `trace` (or a `tracing` target list). Default `info`.
    pub log_level: String,
    /// Largest bulk string in a request. Default (and maximum): the engine's value limit less
    /// the value header.
    pub proto_max_bulk_len: ByteSize,
    /// Most arguments in one request. Default 1048576.
    pub max_multibulk_len: usize,
    /// Most bytes of unprocessed input one client may make the server hold. Default 128mb.
    pub client_query_buffer_limit: ByteSize,
    /// Engine calls running at once (the bounded blocking pool). Default 32.
    pub engine_threads: usize,
    /// Event-loop threads serving connections (reading, parsing, running the commands that can
    /// run inline, replying). 0 (the default) picks half the CPU cores, at least one: the rest is
    /// left to the engine's flushes and compactions and to the engine pool. See
    /// [`ServerConfig::io_thread_count`]. Applied by whoever builds the async runtime (`strata
    /// serve` does; an embedder of [`crate::Server`] runs it on its own runtime). Unlike Redis's
    /// `io-threads` (extra threads for socket I/O beside one main thread), every one of these
    /// threads runs commands too.
    pub io_threads: usize,
    /// Stripes of the key lock table. Default 65536 (at most 64 bytes each): 50 clients pipelining 16
    /// writes each hold some 800 stripes at once, and with 4096 stripes most of their segments
    /// found one of theirs held.
    pub key_lock_stripes: usize,
    /// Port of the Prometheus metrics endpoint (`/metrics`, on `bind`); 0 picks a free one;
    /// `None` (the default) serves no metrics and records none.
    pub metrics_port: Option<u16>,
    /// Where `SAVE` and `BGSAVE` write checkpoints (a directory `checkpoint-<unix ms>` each);
    /// `None` (the default): `<dir>-checkpoints` beside the data directory.
    pub backup_dir: Option<PathBuf>,
    /// Where `SAVE` and `BGSAVE` write backups instead of checkpoints: an object-store URL
    /// (`s3://…`, `file://…`); `None` (the default): checkpoints in `backup_dir`.
    pub backup_url: Option<String>,
    /// How many saves `BGSAVE` keeps in `backup_dir` (or at `backup_url`); older ones are
    /// released (their shared capacity-tier tables collected) and deleted. Default 2.
    pub backup_keep: usize,
    /// Run as a read replica of the writer whose log location (`engine.wal-location`) this is:
    /// an object-store URL or a shared directory; the writer must run with
    /// `engine.extended-wal`. `engine.capacity` must name the writer's capacity tier. The
    /// replica keeps its state in `<dir>/replica`, serves reads, answers writes `READONLY`,
    /// and `REPLICAOF NO ONE` promotes it into a writer in `dir`. `None` (the default): a
    /// writer.
    pub replicaof: Option<String>,
    /// How often a replica polls the writer's log location, in milliseconds. Default 1000.
    pub replica_refresh_ms: u64,
    /// Engine options.
    pub engine: EngineConfig,
    /// The storage the engine's local files live on (`Options::storage`), for embedders and
    /// tests (a fault-injecting wrapper); not in the TOML file. Default: the local file system.
    #[serde(skip)]
    pub storage: EngineStorage,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: "127.0.0.1".to_string(),
            port: 6380,
            dir: PathBuf::from("./strata-data"),
            requirepass: None,
            maxclients: 10_000,
            tcp_backlog: 511,
            timeout: 0,
            lua_time_limit: 5000,
            client_output_buffer_limit_pubsub: OutputLimit::DEFAULT,
            notify_keyspace_events: String::new(),
            sync: SyncPolicy::Everysec,
            log_level: "info".to_string(),
            proto_max_bulk_len: ByteSize(MAX_STRING_LEN),
            max_multibulk_len: 1024 * 1024,
            client_query_buffer_limit: ByteSize(128 << 20),
            engine_threads: 32,
            io_threads: 0,
            key_lock_stripes: 65536,
            metrics_port: None,
            backup_dir: None,
            backup_url: None,
            backup_keep: 2,
            replicaof: None,
            replica_refresh_ms: 1000,
            engine: EngineConfig::default(),
            storage: EngineStorage::default(),
        }
    }
}

/// Most event-loop threads `io-threads` may ask for.
pub const MAX_IO_THREADS: usize = 128;

impl ServerConfig {
    /// The event-loop threads to run: `io_threads`, or for 0 half of `cores` (at least 1, at
    /// most [`MAX_IO_THREADS`]).
    pub fn io_thread_count(&self, cores: usize) -> usize {
        if self.io_threads > 0 {
            self.io_threads
        } else {
            (cores / 2).clamp(1, MAX_IO_THREADS)
        }
    }

    /// Parses a TOML configuration file's text. Unknown keys are errors; absent keys take
    /// their defaults.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError(e.to_string()))
    }

    /// Checks the settings; the engine options are checked by `engine_options`.
    /// Where `SAVE` and `BGSAVE` write: `backup_dir`, or `<dir>-checkpoints`.
    pub fn backup_dir(&self) -> PathBuf {
        self.backup_dir.clone().unwrap_or_else(|| {
            let mut name = self.dir.file_name().unwrap_or_default().to_os_string();
            name.push("-checkpoints");
            self.dir.with_file_name(name)
        })
    }

    /// Where `SAVE` and `BGSAVE` write: backups to `backup_url`, or checkpoints in
    /// [`ServerConfig::backup_dir`].
    pub fn save_target(&self) -> crate::saves::SaveTarget {
        match &self.backup_url {
            Some(u) => crate::saves::SaveTarget::Backups(u.clone()),
            None => crate::saves::SaveTarget::Checkpoints(self.backup_dir()),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError(m));
        if self.maxclients == 0 {
            return bad("maxclients must be at least 1".into());
        }
        if self.tcp_backlog == 0 || self.tcp_backlog > i32::MAX as u32 {
            return bad("tcp-backlog must be in 1..=2147483647".into());
        }
        if self.engine_threads == 0 {
            return bad("engine-threads must be at least 1".into());
        }
        if crate::notify::parse(&self.notify_keyspace_events).is_none() {
            return bad(format!(
                "notify-keyspace-events: unknown class in '{}' (use K, E, g, $, l, s, h, z, x, e, t, m, d, n, A)",
                self.notify_keyspace_events
            ));
        }
        if self.backup_keep == 0 {
            return bad("backup-keep must be at least 1".into());
        }
        if let Some(u) = &self.backup_url {
            if let Err(e) = strata::storage::object::store_from_url(u) {
                return bad(format!("backup-url: {e}"));
            }
        }
        if self.io_threads > MAX_IO_THREADS {
            return bad(format!("io-threads must be in 0..={MAX_IO_THREADS}"));
        }
        if self.proto_max_bulk_len.0 < 1024 || self.proto_max_bulk_len.0 > MAX_STRING_LEN {
            return bad(format!(
                "proto-max-bulk-len must be in 1024..={MAX_STRING_LEN} (the engine's value limit)"
            ));
        }
        if self.max_multibulk_len == 0 {
            return bad("max-multibulk-len must be at least 1".into());
        }
        if let Some(of) = &self.replicaof {
            if of.is_empty() {
                return bad("replicaof: the writer's log location is empty".into());
            }
            if !self.engine.wal_location.is_empty() && self.engine.wal_location != *of {
                return bad(format!(
                    "replicaof {of} and wal-location {} disagree: a replica's log location is \
                     the writer's",
                    self.engine.wal_location
                ));
            }
            if self.replica_refresh_ms == 0 {
                return bad("replica-refresh-ms must be at least 1".into());
            }
        }
        if self.client_query_buffer_limit.0 < self.proto_max_bulk_len.0 + 64 * 1024 {
            return bad(
                "client-query-buffer-limit must exceed proto-max-bulk-len by at least 64kb".into(),
            );
        }
        self.engine_options().map(|_| ())
    }

    /// The engine options for this configuration, without the compaction filter (the server
    /// adds it when it opens the database).
    pub fn engine_options(&self) -> Result<Options, ConfigError> {
        let mut o = self.engine.to_options()?;
        o.storage = self.storage.0.clone();
        self.engine.tier_options(&self.dir, &mut o)?;
        let e = &self.engine;
        o.compaction_mode = e
            .compaction_mode
            .parse()
            .map_err(|m: String| ConfigError(format!("compaction-mode: {m}")))?;
        if !e.compaction_service.is_empty() {
            if e.compaction_token.is_empty() {
                return Err(ConfigError(
                    "compaction-service needs compaction-token".into(),
                ));
            }
            o.compaction_service = Some(
                strata_compaction::RemoteService::connect(
                    &e.compaction_service,
                    &e.compaction_token,
                    None,
                )
                .map_err(|err| ConfigError(format!("compaction-service: {err}")))?,
            );
        }
        o.wal_sync_interval = match self.sync {
            SyncPolicy::Everysec => Some(Duration::from_secs(1)),
            SyncPolicy::Always | SyncPolicy::No => None,
        };
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_the_redis_way() {
        assert_eq!("100".parse::<ByteSize>().unwrap().0, 100);
        assert_eq!("1k".parse::<ByteSize>().unwrap().0, 1000);
        assert_eq!("1kb".parse::<ByteSize>().unwrap().0, 1024);
        assert_eq!("64MB".parse::<ByteSize>().unwrap().0, 64 << 20);
        assert_eq!("2gib".parse::<ByteSize>().unwrap().0, 2 << 30);
        assert!("x".parse::<ByteSize>().is_err());
        assert!("-1".parse::<ByteSize>().is_err());
        assert!("99999999999999999999gb".parse::<ByteSize>().is_err());
    }

    #[test]
    fn defaults_are_valid_and_map_to_engine_options() {
        let c = ServerConfig::default();
        c.validate().unwrap();
        let o = c.engine_options().unwrap();
        assert_eq!(o.wal_sync_interval, Some(Duration::from_secs(1)));
        assert_eq!(
            o.compression_per_level,
            Options::default().compression_per_level
        );
        let mut c = ServerConfig::default();
        c.engine.compression = vec!["zstd:99".into()];
        assert!(c.validate().is_err());
        c.engine.compression = vec!["bogus".into()];
        assert!(c.validate().is_err());
    }

    #[test]
    fn toml_files() {
        let c = ServerConfig::from_toml(
            "port = 7000\nsync = \"always\"\n[engine]\nwrite-buffer-size = \"8mb\"\ncompression = [\"none\", \"zstd:3\"]\n",
        )
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.sync, SyncPolicy::Always);
        assert_eq!(c.engine.write_buffer_size.0, 8 << 20);
        assert_eq!(c.bind, "127.0.0.1");
        assert!(c.engine_options().unwrap().avoid_flush_during_recovery);
        assert!(c.engine_options().unwrap().prepopulate_block_cache);
        assert!(!Options::default().prepopulate_block_cache);
        let c = ServerConfig::from_toml("[engine]\navoid-flush-during-recovery = false\n").unwrap();
        assert!(!c.engine_options().unwrap().avoid_flush_during_recovery);
        assert!(ServerConfig::from_toml("nope = 1").is_err());
        assert!(ServerConfig::from_toml("[engine]\nnope = 1").is_err());
    }

    #[test]
    fn io_threads_default_to_half_the_cores() {
        let mut c = ServerConfig::default();
        for (cores, want) in [
            (1, 1),
            (2, 1),
            (3, 1),
            (8, 4),
            (64, 32),
            (1024, MAX_IO_THREADS),
        ] {
            assert_eq!(c.io_thread_count(cores), want, "{cores} cores");
        }
        c = ServerConfig::from_toml("io-threads = 3").unwrap();
        c.validate().unwrap();
        assert_eq!(c.io_thread_count(2), 3);
        c.io_threads = MAX_IO_THREADS + 1;
        assert!(c.validate().is_err());
    }

    #[test]
    fn compression_names() {
        assert_eq!(parse_compression("zstd:5").unwrap(), Compression::Zstd(5));
        assert_eq!(parse_compression("LZ4").unwrap(), Compression::Lz4);
        assert_eq!(compression_name(Compression::Zstd(3)), "zstd:3");
    }
}
