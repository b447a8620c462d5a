//! The command line of `strata bench` ([`BenchArgs`], a clap `Args` struct the `strata` binary
//! flattens into its `bench` subcommand) and the parsers of its values (byte sizes, durations,
//! db_bench-style booleans).
//!
//! Invariants: flag names follow db_bench where db_bench has the flag, spelled with dashes, and
//! every multi-word flag also accepts db_bench's underscore spelling (`--key_size=16`); booleans
//! accept db_bench's `--flag=1`/`--flag=0` as well as a bare `--flag`; parsing never touches the
//! file system (that is `plan`'s and `engine`'s job). Depends on `keys`, `distributions`,
//! `workloads` and `engine` for value types only.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::distributions::DistSpec;
use crate::engine::{
    CapacityIndexArg, CompressionKind, EngineKind, PcacheKind, PlacementArg, StyleArg,
};
use crate::keys::{KeyOrder, ValueSize};
use crate::workloads::Workload;

// Help headings: clap's derive ignores `next_help_heading` on plain fields, so each field names
// its heading (`help_heading`); the headings appear in the order their first field does.
const WORKLOAD: &str = "Workload";
const ENGINE: &str = "Database and engine";
const TIERS: &str = "Tiers and emulation";
const MECHANISMS: &str = "Mechanisms (HotRAP, LogStore, split forest, remote compaction)";
const OUTPUT: &str = "Output";
const COST: &str = "Cost estimate (cloud prices)";

/// db_bench- and YCSB-style benchmarks with tier-aware reports.
///
/// Operation counts (`--num`, `--reads`, `--ops`) are totals shared by all threads (db_bench
/// counts per thread).
#[derive(Args, Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BenchArgs {
    // ---- What to run -------------------------------------------------------------------
    /// Benchmarks to run in order on one database (db_bench names); ignored with --workload
    ///
    /// fillseq, fillrandom, filluniquerandom, overwrite, readrandom, readmissing, readseq,
    /// seekrandom, readwhilewriting, deleterandom, multireadrandom (--batch-size keys per batched
    /// lookup).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fillrandom,readrandom",
        help_heading = WORKLOAD
    )]
    pub benchmarks: Vec<String>,

    /// A YCSB core workload (a..f) or a HotRAP mix (ro, rw, wh, uh): loads --num records, then
    /// runs --ops operations (or --duration)
    #[arg(long, help_heading = WORKLOAD)]
    pub workload: Option<Workload>,

    /// Key distribution of the run phase: uniform, zipfian[:θ], latest[:θ] or
    /// hotspot:DATA[:OPS][@OFFSET]
    ///
    /// zipfian is scrambled, θ = 0.99 by default. hotspot:0.05 (or hotspot-5%): 5% of the records
    /// get 95% of the operations. Default: the workload's own (zipfian for YCSB, hotspot-5% for
    /// the HotRAP mixes, uniform for db_bench benchmarks).
    #[arg(long, help_heading = WORKLOAD)]
    pub distribution: Option<DistSpec>,

    /// Change the distribution during the run phase: `0=uniform,60=hotspot:0.01` (seconds into
    /// the run), or `hotrap`
    ///
    /// `hotrap` runs HotRAP's dynamic workload in seven equal stages over --duration: uniform,
    /// then a hotspot that grows, moves to the other half of the records and shrinks.
    // `hotrap` is HotRAP §4.6's dynamic workload (`Schedule::hotrap`).
    #[arg(long, alias = "hotspot_schedule", help_heading = WORKLOAD)]
    pub hotspot_schedule: Option<String>,

    /// Engine to measure (rocksdb and slatedb need a build with the cargo features of the same
    /// names)
    #[arg(long, value_enum, default_value_t = EngineKind::Strata, help_heading = ENGINE)]
    pub engine: EngineKind,

    // ---- Sizes and counts ----------------------------------------------------------------
    /// Number of records (keys) to load.
    #[arg(long, default_value_t = 1_000_000, help_heading = WORKLOAD)]
    pub num: u64,

    /// Read operations of read benchmarks (negative: --num).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true, help_heading = WORKLOAD)]
    pub reads: i64,

    /// Operations of a workload's run phase and of overwrite/deleterandom (default: --reads if
    /// set, else --num).
    #[arg(long, alias = "operations", help_heading = WORKLOAD)]
    pub ops: Option<u64>,

    /// Worker threads (readwhilewriting adds one writer).
    #[arg(long, default_value_t = 1, help_heading = WORKLOAD)]
    pub threads: usize,

    /// Run each measured benchmark (and the run phase) for this long instead of a count of
    /// operations: seconds, or `500ms`, `30s`, `2m`; 0 uses the counts
    #[arg(long, value_parser = parse_secs, default_value = "0", help_heading = WORKLOAD)]
    pub duration: f64,

    /// Unmeasured warm-up before each read or mixed benchmark and the run phase (same
    /// operations as the measured part): seconds, or `30s`, `2m`.
    #[arg(long, value_parser = parse_secs, default_value = "0", help_heading = WORKLOAD)]
    pub warmup: f64,

    /// Seed of every random choice (keys, values, operations).
    #[arg(long, default_value_t = 42, help_heading = WORKLOAD)]
    pub seed: u64,

    /// Key size in bytes (at least 8).
    #[arg(long, alias = "key_size", default_value_t = 16, help_heading = WORKLOAD)]
    pub key_size: usize,

    /// Value size in bytes: fixed (`100`) or uniform in a range (`100..1000`).
    #[arg(long, alias = "value_size", default_value = "100", help_heading = WORKLOAD)]
    pub value_size: ValueSize,

    /// Values compress to about this fraction of their size (db_bench's default 0.5).
    #[arg(long, alias = "compression_ratio", default_value_t = 0.5, help_heading = WORKLOAD)]
    pub compression_ratio: f64,

    /// Order of record indices in the key space: sequential (db_bench) or hashed (YCSB's
    /// insertorder=hashed). Default: hashed for --workload, sequential otherwise.
    #[arg(long, alias = "key_order", value_enum, help_heading = WORKLOAD)]
    pub key_order: Option<KeyOrder>,

    /// Records per write batch in fill benchmarks and the load phase; keys per batched lookup
    /// in multireadrandom.
    #[arg(long, alias = "batch_size", default_value_t = 1, help_heading = WORKLOAD)]
    pub batch_size: usize,

    /// Entries read after each seek by seekrandom.
    #[arg(long, alias = "seek_nexts", default_value_t = 10, help_heading = WORKLOAD)]
    pub seek_nexts: usize,

    /// Longest scan of YCSB-E (lengths are uniform in 1..=this).
    #[arg(long, alias = "max_scan_length", default_value_t = 100, help_heading = WORKLOAD)]
    pub max_scan_length: usize,

    /// Fsync the WAL on every write.
    #[arg(
        long,
        num_args = 0..=1,
        default_missing_value = "true",
        default_value = "false",
        value_parser = parse_bool,
        help_heading = ENGINE
    )]
    pub sync: bool,

    // ---- Database and reuse -------------------------------------------------------------
    /// Database directory (default `./strata-bench-data/<engine>`). It is wiped first unless
    /// --use-existing-db is given.
    #[arg(long, help_heading = ENGINE)]
    pub db: Option<PathBuf>,

    /// Open the database in --db as it is: fill benchmarks and the load phase are skipped.
    #[arg(
        long,
        alias = "use_existing_db",
        num_args = 0..=1,
        default_missing_value = "true",
        default_value = "false",
        value_parser = parse_bool,
        help_heading = ENGINE
    )]
    pub use_existing_db: bool,

    /// Keep a copy of the loaded database in DIR and start every run from it
    ///
    /// If DIR holds a copy made with the same load settings, it is copied into --db instead of
    /// loading; otherwise the load phase runs and its result is copied to DIR.
    #[arg(long, value_name = "DIR", help_heading = ENGINE)]
    pub golden: Option<PathBuf>,

    // ---- Tiers ---------------------------------------------------------------------------
    /// Directory of the fast tier (default: --db). Strata's database lives there; RocksDB's
    /// first db_path.
    #[arg(long, alias = "fast_dir", help_heading = TIERS)]
    pub fast_dir: Option<PathBuf>,

    /// The capacity tier: `file:///abs/dir` (or a relative `file://dir`), `memory://name`,
    /// `s3://bucket/prefix`. Without it everything stays on the fast tier.
    #[arg(long, value_name = "URL", help_heading = TIERS)]
    pub capacity: Option<String>,

    /// Levels, counted from the bottom, that live on the capacity tier
    ///
    /// With this placement the fast tier holds about a tenth of the data whatever its size.
    #[arg(long, alias = "capacity_levels", default_value_t = 1, help_heading = TIERS)]
    pub capacity_levels: usize,

    /// Instead of --capacity-levels: levels 0..=N stay on the fast tier
    #[arg(long, alias = "fast_levels", help_heading = TIERS)]
    pub fast_levels: Option<usize>,

    /// HotRAP: move hot records from the capacity tier back to the fast tier and keep them
    /// there
    #[arg(
        long,
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL",
        help_heading = MECHANISMS
    )]
    pub hotrap: bool,

    /// Table placement: `static` (by level alone) or `logstore` (tables also move between tiers
    /// by how often they are read)
    ///
    /// LogStore uses informed, reverse, deferred and staging compactions by table temperature.
    /// Composes with --hotrap.
    #[arg(
        long,
        alias = "placement_policy",
        value_enum,
        default_value_t = PlacementArg::Static,
        help_heading = MECHANISMS
    )]
    pub placement_policy: PlacementArg,

    /// Index format of capacity-tier tables: `auto`, `mashmeta` or `block`
    ///
    /// `mashmeta`: a compact trie that is index and exact filter in one; `block`: block index and
    /// bloom filter, as fast-tier tables; `auto`: per table, the trie when it is no larger than
    /// index + filter.
    // MashMeta is RocksMash's metadata format.
    #[arg(
        long,
        alias = "capacity_index",
        value_enum,
        default_value_t = CapacityIndexArg::Auto,
        help_heading = TIERS
    )]
    pub capacity_index: CapacityIndexArg,

    /// Directory for Strata's WAL and a mirror of its manifest, apart from the database (e.g. a
    /// network volume), so losing the fast tier loses nothing
    // Node-loss recovery as in RocksMash §3.4.
    #[arg(long, alias = "wal_location", help_heading = TIERS)]
    pub wal_location: Option<std::path::PathBuf>,

    /// Emulated latency per request of an object-store --wal-location (`file://`, `s3://`), in
    /// milliseconds.
    #[arg(long, alias = "wal_latency_ms", default_value_t = 0.0, help_heading = TIERS)]
    pub wal_latency_ms: f64,

    /// Strata: keep in the WAL what `strata recover` needs to rebuild a lost fast tier; needs
    /// --wal-location
    ///
    /// The WAL keeps the fast tier's records and logs each new fast-tier table's key list.
    #[arg(
        long,
        alias = "extended_wal",
        default_value_t = false,
        action = clap::ArgAction::Set,
        value_name = "BOOL",
        help_heading = MECHANISMS
    )]
    pub extended_wal: bool,

    /// Strata: at open keep the WAL tail in memtables, flushed in the background, instead of
    /// writing it to L0 first (`--use-existing-db` runs after an unflushed load).
    #[arg(
        long,
        alias = "avoid_flush_during_recovery",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL",
        help_heading = ENGINE
    )]
    pub avoid_flush_during_recovery: bool,

    /// Strata: run compactions on this compaction service (`strata compaction-service`, at
    /// `http://host:port`)
    // The CaaS-LSM control plane.
    #[arg(long, alias = "compaction_service", help_heading = MECHANISMS)]
    pub compaction_service: Option<String>,

    /// The compaction service's token (or `STRATA_COMPACTION_TOKEN`).
    #[arg(
        long,
        alias = "compaction_token",
        env = "STRATA_COMPACTION_TOKEN",
        hide_env_values = true,
        help_heading = MECHANISMS
    )]
    pub compaction_token: Option<String>,

    /// With --compaction-service: `remote` (every eligible job), `hybrid` (per job, by
    /// estimated time and local load) or `local` (ignore the service).
    #[arg(long, alias = "compaction_mode", default_value = "hybrid", help_heading = MECHANISMS)]
    pub compaction_mode: String,

    /// LogStore: bytes the fast tier may fill while compaction is deferred (reads are rare);
    /// default twice --fast-tier-budget, else 1 GiB.
    #[arg(long, alias = "defer_fast_bytes", value_parser = parse_bytes, help_heading = MECHANISMS)]
    pub defer_fast_bytes: Option<u64>,

    /// Compaction style: `leveled` or `split-forest` (several trees per level; only overlapping
    /// tables are rewritten)
    ///
    /// RocksDB runs universal compaction for split-forest.
    // The split forest is SifrDB's.
    #[arg(
        long,
        alias = "compaction_style",
        value_enum,
        default_value_t = StyleArg::Leveled,
        help_heading = MECHANISMS
    )]
    pub compaction_style: StyleArg,

    /// Split forest: trees a level collects before they merge into the next (default 4).
    #[arg(long, alias = "trees_per_level", help_heading = MECHANISMS)]
    pub trees_per_level: Option<usize>,

    /// Split forest: output tables between early-cleaning checkpoints, which free a merge's
    /// consumed inputs (default 10; 0: off)
    #[arg(long, alias = "cleaning_threshold", help_heading = MECHANISMS)]
    pub cleaning_threshold: Option<usize>,

    /// Threads searching capacity-tier candidates of a lookup in parallel (default 16; 0 or
    /// 1: sequential).
    #[arg(long, alias = "search_threads", help_heading = MECHANISMS)]
    pub search_threads: Option<usize>,

    /// Bytes of tables the fast tier may hold (beyond it the deepest fast level spills).
    #[arg(long, alias = "fast_tier_budget", value_parser = parse_bytes, help_heading = TIERS)]
    pub fast_tier_budget: Option<u64>,

    /// Bound Strata's capacity-tier requests: `50/s`, `$20/month` or both, comma-separated;
    /// compactions wait to stay within it (Strata only).
    #[arg(long, value_name = "BUDGET", value_parser = parse_request_budget, help_heading = TIERS)]
    pub capacity_request_budget: Option<String>,

    /// Emulated latency per capacity-tier request, in milliseconds.
    #[arg(long, alias = "capacity_latency_ms", default_value_t = 0.0, help_heading = TIERS)]
    pub capacity_latency_ms: f64,

    /// Emulated capacity-tier bandwidth, in MB/s (shared by all requests).
    #[arg(long, alias = "capacity_mbps", help_heading = TIERS)]
    pub capacity_mbps: Option<f64>,

    // ---- Memory and tables ---------------------------------------------------------------
    /// Block cache bytes (`64MiB`, `1G`, ...; 0 disables it).
    #[arg(
        long,
        alias = "cache_size",
        value_parser = parse_bytes,
        default_value = "64MiB",
        help_heading = ENGINE
    )]
    pub cache_size: u64,

    /// Row cache bytes (point-lookup answers by table and key; RocksDB's `row_cache`, an LRU
    /// cache of this size there); 0 disables it.
    #[arg(
        long,
        alias = "row_cache_size",
        value_parser = parse_bytes,
        default_value = "0",
        help_heading = ENGINE
    )]
    pub row_cache_size: u64,

    /// Memtable bytes.
    #[arg(
        long,
        alias = "write_buffer_size",
        value_parser = parse_bytes,
        default_value = "64MiB",
        help_heading = ENGINE
    )]
    pub write_buffer_size: u64,

    /// Memtables (active plus immutable) before writes stop.
    #[arg(long, alias = "max_write_buffer_number", default_value_t = 2, help_heading = ENGINE)]
    pub max_write_buffer_number: usize,

    /// Bytes of the persistent (fast-tier) cache of capacity-tier blocks; 0 disables it.
    #[arg(
        long,
        alias = "persistent_cache_size",
        value_parser = parse_bytes,
        default_value = "0",
        help_heading = TIERS
    )]
    pub persistent_cache_size: u64,

    /// Kind of persistent cache: lap (LSM-aware), naive or none
    #[arg(
        long,
        alias = "persistent_cache_kind",
        value_enum,
        default_value_t = PcacheKind::Lap,
        help_heading = TIERS
    )]
    pub persistent_cache_kind: PcacheKind,

    /// Bloom filter bits per key (0: none).
    #[arg(long, alias = "bloom_bits", default_value_t = 10.0, help_heading = ENGINE)]
    pub bloom_bits: f64,

    /// The merge operator, by name (`strata.u64add`, `strata.max`, `strata.append`); db_bench's
    /// `uint64add` is accepted for `strata.u64add`. `mergerandom` needs `strata.u64add`.
    #[arg(long, alias = "merge_operator", help_heading = ENGINE)]
    pub merge_operator: Option<String>,

    /// Keys per bucket of the data blocks' hash indexes, in 0..=1; 0 writes none
    ///
    /// The same for RocksDB (`data_block_index_type = kDataBlockBinaryAndHash` with this
    /// `data_block_hash_table_util_ratio`; 0: `kDataBlockBinarySearch`).
    #[arg(long, alias = "data_block_hash_ratio", default_value_t = 0.75, help_heading = ENGINE)]
    pub data_block_hash_ratio: f64,

    /// Uncompressed data block size.
    #[arg(
        long,
        alias = "block_size",
        value_parser = parse_bytes,
        default_value = "4KiB",
        help_heading = ENGINE
    )]
    pub block_size: u64,

    /// Bytes written to a table file between requests that the OS write it back (0: only at the
    /// final sync)
    ///
    /// Strata's and RocksDB's `bytes_per_sync`.
    #[arg(
        long,
        alias = "bytes_per_sync",
        value_parser = parse_bytes,
        default_value = "1MiB",
        help_heading = ENGINE
    )]
    pub bytes_per_sync: u64,

    /// Block compression.
    #[arg(
        long,
        alias = "compression_type",
        value_enum,
        default_value_t = CompressionKind::Lz4,
        help_heading = ENGINE
    )]
    pub compression_type: CompressionKind,

    /// Levels below this one are not compressed (Strata's default: L0 and L1 uncompressed).
    #[arg(long, alias = "min_level_to_compress", default_value_t = 2, help_heading = ENGINE)]
    pub min_level_to_compress: usize,

    /// Background compaction threads (one more thread flushes).
    #[arg(long, alias = "max_background_compactions", default_value_t = 2, help_heading = ENGINE)]
    pub max_background_compactions: usize,

    /// Target size of the base level (default: the engine's, 256 MiB).
    #[arg(
        long,
        alias = "max_bytes_for_level_base",
        value_parser = parse_bytes,
        help_heading = ENGINE
    )]
    pub max_bytes_for_level_base: Option<u64>,

    /// Target table size (default: the engine's, 64 MiB).
    #[arg(long, alias = "target_file_size_base", value_parser = parse_bytes, help_heading = ENGINE)]
    pub target_file_size_base: Option<u64>,

    /// Table readers kept open (index and filter in memory)
    ///
    /// RocksDB's default is unlimited, Strata's and LevelDB's 1000. Scale it with the table
    /// count when --target-file-size-base is small.
    #[arg(long, alias = "max_open_files", default_value_t = 1000, help_heading = ENGINE)]
    pub max_open_files: usize,

    /// Turn on the engine's own statistics (RocksDB's have a cost; Strata always counts)
    #[arg(
        long,
        num_args = 0..=1,
        default_missing_value = "true",
        default_value = "false",
        value_parser = parse_bool,
        help_heading = ENGINE
    )]
    pub statistics: bool,

    // ---- Output --------------------------------------------------------------------------
    /// Write the results as JSON (schema: docs/bench-json.md).
    #[arg(long, value_name = "PATH", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,

    /// Write a per-second time series as CSV.
    #[arg(long, value_name = "PATH", help_heading = OUTPUT)]
    pub csv: Option<PathBuf>,

    /// Draw ops/s, p99 latency and fast-tier hit rate over time into a PNG.
    #[arg(long, value_name = "PATH.png", help_heading = OUTPUT)]
    pub plot: Option<PathBuf>,

    /// After the last benchmark, let the engine settle (flush, finish compactions), count the
    /// live records with a full scan and report the engine's table bytes over their logical
    /// size (space amplification; not timed).
    #[arg(long, help_heading = OUTPUT)]
    pub space_amp: bool,

    /// No live progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long, alias = "no_progress", help_heading = OUTPUT)]
    pub no_progress: bool,

    // ---- Cloud prices for the cost estimate ----------------------------------------------
    /// Price of 1000 capacity-tier GET requests, in dollars (S3 Standard: 0.0004).
    #[arg(long, alias = "price_get_per_1k", default_value_t = 0.0004, help_heading = COST)]
    pub price_get_per_1k: f64,

    /// Price of 1000 capacity-tier PUT/LIST requests, in dollars (S3 Standard: 0.005).
    #[arg(long, alias = "price_put_per_1k", default_value_t = 0.005, help_heading = COST)]
    pub price_put_per_1k: f64,

    /// Price of a GB-month on the capacity tier, in dollars (S3 Standard: 0.023).
    #[arg(long, alias = "price_capacity_gb_month", default_value_t = 0.023, help_heading = COST)]
    pub price_capacity_gb_month: f64,

    /// Price of a GB-month on the fast tier, in dollars (EBS gp3: 0.08).
    #[arg(long, alias = "price_fast_gb_month", default_value_t = 0.08, help_heading = COST)]
    pub price_fast_gb_month: f64,

    /// A price table overriding the flags above: `put=0.005,get=0.0004,delete=0,storage=0.023,fast=0.08`
    /// (dollars per 1,000 requests of the class; per GB-month for `storage`, the capacity tier,
    /// and `fast`). Keys left out keep their flag's value. `list`/`head` price as `put`/`get`.
    #[arg(long, value_name = "TABLE", help_heading = COST)]
    pub price: Option<String>,
}

impl BenchArgs {
    /// The arguments as parsed from `argv` (element 0 is the program name), for tests and for
    /// callers without their own clap command.
    pub fn parse_from<I, T>(argv: I) -> Result<BenchArgs, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{FromArgMatches, Parser};
        #[derive(Parser)]
        #[command(name = "strata-bench")]
        struct Cli {
            #[command(flatten)]
            args: BenchArgs,
        }
        let m = <Cli as clap::CommandFactory>::command().try_get_matches_from(argv)?;
        Ok(Cli::from_arg_matches(&m)?.args)
    }

    /// Read operations of read benchmarks.
    pub fn read_count(&self) -> u64 {
        if self.reads < 0 {
            self.num
        } else {
            self.reads as u64
        }
    }

    /// Operations of a run phase and of overwrite/deleterandom.
    pub fn op_count(&self) -> u64 {
        self.ops.unwrap_or_else(|| self.read_count())
    }

    /// The database directory.
    pub fn db_dir(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| PathBuf::from("strata-bench-data").join(self.engine.name()))
    }
}

/// A byte count: `4096`, `4k`/`4K`/`4KiB` (binary), `4KB` (decimal), likewise M, G, T;
/// fractions allowed (`1.5GiB`).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 4096, 64MiB, 1G)"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "kb" => 1e3,
        "m" | "mib" => 1024.0 * 1024.0,
        "mb" => 1e6,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "gb" => 1e9,
        "t" | "tib" => 1024f64.powi(4),
        "tb" => 1e12,
        u => return Err(format!("unknown size unit {u:?} in {s:?}")),
    };
    Ok((v * mult).round() as u64)
}

/// A duration in seconds: `30`, `1.5`, `500ms`, `30s`, `2m`, `1h`.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let bad = || format!("{s:?} is not a duration (e.g. 30, 500ms, 30s, 2m)");
    let (num, mult) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1.0)
    } else if let Some(v) = t.strip_suffix('m') {
        (v, 60.0)
    } else if let Some(v) = t.strip_suffix('h') {
        (v, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(bad());
    }
    Ok(v * mult)
}

/// db_bench's booleans: `1`/`0`, `true`/`false`, `yes`/`no`.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("{s:?} is not a boolean (1, 0, true, false)")),
    }
}

/// Checks a `--capacity-request-budget` value (kept as written, for the report).
fn parse_request_budget(s: &str) -> Result<String, String> {
    s.parse::<strata::stats::cost::RequestBudget>()?;
    Ok(s.to_string())
}

#[cfg(test)]
mod tests;
