//! Options: how a database is opened and tuned ([`Options`]), how a write is made durable
//! ([`WriteOptions`]) and what a read sees ([`ReadOptions`]). Defaults follow RocksDB's where
//! RocksDB has the same knob, so its tuning guides apply. `Options::validate` rejects
//! inconsistent settings with `InvalidArgument` before anything touches disk.
//! Depends on `error`, `storage` (for the pluggable storage handle) and `db::snapshot`.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::storage::Storage;

/// Largest user key accepted, in bytes.
pub const MAX_KEY_SIZE: usize = 64 * 1024;
/// Largest value accepted, in bytes.
pub const MAX_VALUE_SIZE: usize = 64 * 1024 * 1024;
/// Largest write batch accepted, in bytes of encoded records.
pub const MAX_BATCH_SIZE: usize = 512 * 1024 * 1024;

/// Block compression. Chosen per level by [`Options::compression_per_level`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Compression {
    /// Blocks are stored uncompressed.
    None,
    /// LZ4 (`lz4_flex`, the uncompressed size prepended).
    Lz4,
    /// Zstandard at the given level (1..=22; 3 is a good default).
    Zstd(i32),
}

impl Compression {
    /// The byte stored in a block trailer.
    pub fn type_byte(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
            Compression::Zstd(_) => 2,
        }
    }

    /// The algorithm's name, without a level: `"none"`, `"lz4"` or `"zstd"`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd(_) => "zstd",
        }
    }
}

/// Options that shape a database. Build with `Options::default()` and adjust fields.
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none. Default `true`.
    pub create_if_missing: bool,
    /// Fail if a database already exists. Default `false`.
    pub error_if_exists: bool,
    /// Bytes a memtable may hold before it is sealed and flushed: the arena bytes its entries
    /// take (keys and values, 16 bytes of header per entry and about 27 more per distinct key
    /// for its skiplist node) plus its range tombstones.
    /// Default 64 MiB.
    pub write_buffer_size: usize,
    /// Memtables (active plus immutable) allowed before writes stop. Default 2.
    pub max_write_buffer_number: usize,
    /// Keep the memtables rebuilt from the WAL at open as immutable memtables, flushed in the
    /// background like any other, instead of writing them to L0 tables before `open` returns
    /// (RocksDB's `avoid_flush_during_recovery`, on by default here). Their WAL files stay
    /// live (made durable at open) until their flush. At most `max_write_buffer_number - 1`
    /// are kept: those of the newest WAL files, back to the first (from the newest) whose
    /// records fill more than one memtable or that lies outside the log location (the database
    /// moved to a `wal_location`); open writes the others to L0, and everything when a log
    /// ends in a torn write. Default true.
    pub avoid_flush_during_recovery: bool,
    /// Size of each memtable's whole-key Bloom filter as a fraction of `write_buffer_size`
    /// (RocksDB's `memtable_prefix_bloom_size_ratio` with whole-key filtering): point lookups of
    /// keys a memtable does not hold skip its skiplist. Default 0.02 (1.3 MiB, about 25 bits per
    /// 100-byte entry, for a 64 MiB memtable); 0 turns it off. At most 0.25.
    pub memtable_bloom_ratio: f64,
    /// Largest size of each memtable's point index (a hash table from user key to its skiplist
    /// node, which holds the chain of the key's versions; 8 bytes per slot) as a fraction of
    /// `write_buffer_size`, not counted in it: point lookups of keys in the memtable, and
    /// writes of new versions of them, skip the skiplist search (a slot and a node instead of
    /// a dozen or more cache misses), and lookups of absent keys cost a slot. Each memtable's
    /// index has twice as many slots as the memtable before it held distinct keys (a power of
    /// two; the first one assumes 64-byte entries), up to this cap; keys the index cannot place
    /// (linear-probe runs past 32 slots) are looked up by filter and search. Default 0.25
    /// (at most 16 MiB for a 64 MiB memtable; 8 MiB for entries of 64 to 128 bytes); 0 turns
    /// it off. At most 0.5.
    pub memtable_point_index_ratio: f64,
    /// L0 table count that triggers an L0 compaction. Default 4.
    pub level0_file_num_compaction_trigger: usize,
    /// L0 table count at which each write is delayed. Default 20. (While LogStore defers
    /// compaction and the fast tier is under its deferral limits, L0's tables count toward
    /// neither this nor the stop trigger: see `LogStoreOptions::defer_fast_bytes`.)
    pub level0_slowdown_writes_trigger: usize,
    /// L0 table count at which writes wait for compaction. Default 36. (See the slowdown
    /// trigger for LogStore's deferral.)
    pub level0_stop_writes_trigger: usize,
    /// Delay applied to a write while the slowdown trigger is reached. Default 1 ms.
    pub slowdown_delay: Duration,
    /// Number of levels, L0 included. Default 7.
    pub num_levels: usize,
    /// Target size of the base level (the level L0 compacts into). Default 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels. Default 10.
    pub max_bytes_for_level_multiplier: f64,
    /// RocksDB's `level_compaction_dynamic_level_bytes`: level targets derive from the size of the
    /// last level, and L0 compacts into the highest level that needs data. Default `true`.
    pub level_compaction_dynamic_level_bytes: bool,
    /// Target size of a table written by compaction. Default 64 MiB.
    pub target_file_size_base: u64,
    /// Bytes a table file is written between requests to the OS to start writing it back
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`, RocksDB's `bytes_per_sync`): the device
    /// writes go on while the table is built, and the sync that ends the table waits for the
    /// last stretch only, instead of the whole file at once. Local files only; 0 turns it
    /// off. Default 1 MiB.
    pub bytes_per_sync: u64,
    /// Uncompressed size of a data block. Default 4 KiB.
    pub block_size: usize,
    /// Keys between restart points in a data block. Default 16.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters. Default 10 (about 1% false positives).
    pub bloom_bits_per_key: f64,
    /// Data blocks carry a hash index of their user keys, this many keys per bucket byte
    /// (RocksDB's `data_block_index_type = kDataBlockBinaryAndHash` with
    /// `data_block_hash_table_util_ratio`): a point lookup reads the key's bucket and scans one
    /// restart interval instead of binary-searching the block's restart keys, and learns that
    /// an absent key is not in the block from the bucket alone. Costs about `1 / ratio` bytes
    /// per distinct key in a block (~4% of 4 KiB blocks of 30-byte entries at 0.75). 0 writes
    /// no hash index (`kDataBlockBinarySearch`); in (0, 1] otherwise. Tables record it per data
    /// block, so changing it affects only tables written afterwards. Default 0.75.
    pub data_block_hash_ratio: f64,
    /// How capacity-tier tables find their data blocks: `MashMeta` (RocksMash's succinct trie,
    /// an index and an exact filter in one: no capacity-tier request for an absent key),
    /// `Block` (a block index and a bloom filter, as fast-tier tables always have), or `Auto`
    /// (per table, MashMeta when its trie is no larger than the index and filter: keys with
    /// shared prefixes, as most tables of a level have; block + bloom for high-entropy keys,
    /// where an exact structure costs more than a filter). Each table records its kind, so
    /// changing this affects only tables written afterwards. Default `Auto`.
    pub capacity_index: crate::sst::index::IndexKind,
    /// Compression by output level; the last entry applies to all deeper levels.
    /// Default: none for L0 and L1, LZ4 below.
    pub compression_per_level: Vec<Compression>,
    /// Bytes of the shared in-memory block cache; 0 disables it. Default 64 MiB.
    pub block_cache_capacity: usize,
    /// Put each data block a memtable flush writes into the block cache as it is written
    /// (RocksDB's `prepopulate_block_cache = kFlushOnly`): reads of what was just written
    /// (a queue's consumers, a session read back) find it cached instead of reading the new
    /// L0 table. The cache admits new blocks on probation, so a flush does not push out a hot
    /// set that is read again. The new table is opened too (its index and filter in memory).
    /// Compactions and WAL replay at open do not prepopulate.
    /// Default false.
    pub prepopulate_block_cache: bool,
    /// Bytes of the row cache (RocksDB's `row_cache`): a table's answer to a point lookup, by
    /// table and key, so a repeated lookup of a key that lives in a table costs one hash lookup
    /// instead of a filter probe, an index search, a block-cache lookup and a block seek.
    /// Charged by key and value bytes plus ~96 bytes per entry; values are copied in. Worth it
    /// for point-lookup-heavy workloads whose hot rows are small next to their blocks; scans do
    /// not use it. 0 disables it. Default 0.
    pub row_cache_capacity: usize,
    /// Table readers kept open, each holding its table's index and filter in memory (about
    /// 1.5% of the table's bytes with 4 KiB blocks and 10-bit filters). A lookup that meets a
    /// closed table reopens it — footer, index and filter reads, from the fast tier or the
    /// MetaCache — so keep it above the number of tables (data / `target_file_size_base`)
    /// where memory allows: with more tables than this, point lookups slow down by up to half
    /// (README, split forest at 8 GB). RocksDB's default is unlimited. Default 1000.
    pub max_open_files: usize,
    /// Background compaction threads (one more thread flushes). Default 2.
    pub max_background_compactions: usize,
    /// Compaction write rate limit in bytes per second; 0 is unlimited. Default 0.
    pub compaction_rate_limit: u64,
    /// When set, a background thread syncs the WAL this often, bounding what an OS crash can lose
    /// for writes made without `WriteOptions::sync`. Default none.
    pub wal_sync_interval: Option<Duration>,
    /// Manifest size that triggers rewriting it as one snapshot record. Default 64 MiB.
    pub max_manifest_file_size: u64,
    /// Where the write-ahead log lives and the manifest is mirrored (RocksMash §3.4): a
    /// directory apart from the database directory — a network volume in the cloud — or an
    /// object-store URL (`s3://bucket/prefix`, `file:///abs`, `memory://name`: files are staged
    /// in `<db>/wal-stage` and each sync uploads what it covers as one object), so that losing
    /// the fast tier's disk loses nothing that reached the log (that was synced, for a URL).
    /// `None` (the default) keeps the WAL in the database directory.
    pub wal_location: Option<std::path::PathBuf>,
    /// Latency and bandwidth emulation of an object-store `wal_location` (benchmarks, tests).
    pub wal_emulation: Option<crate::storage::object::Emulation>,
    /// An object-store `wal_location` is leased to one database at a time across nodes: a
    /// holder renews every quarter of this, and one silent for all of it is taken over (an
    /// open of a location whose holder died waits this long). Default 20 s.
    pub wal_lease_ttl: Duration,
    /// Whether a writer renews an object-store `wal_location`'s lease while it writes nothing
    /// (default true). False: after a whole `wal_lease_ttl` without a write to an object store
    /// (counted from the first after open) it stops, so an idle writer sends no request at
    /// all — nor does a long compaction of fast-tier tables alone, during which it can be
    /// taken over; its next write renews the
    /// lease first (a few requests' latency), and fails with `Fenced` if another database
    /// took the lease over meanwhile — an idle writer then looks dead to a replica's
    /// promotion or a second writer, which may take over without waiting for it to fail.
    pub wal_lease_renew_while_idle: bool,
    /// An object-store `wal_location` keeps a WAL file's objects this long after the database
    /// that wrote it deleted it, so that a replica can tell
    /// an idle log from a deleted one with one request per refresh. A replica of the location
    /// must be given no larger a value than its writer's; zero turns the rule off (the replica
    /// then probes the manifest too, two requests per idle refresh). Default 60 s.
    pub wal_log_min_age: Duration,
    /// The extended WAL (RocksMash §3.4; needs `wal_location`): the WAL is kept while fast-tier
    /// tables still hold its records, and each new fast-tier table's key list is logged when
    /// it is installed, so the fast tier can be rebuilt from the log location and the capacity
    /// tier after a node loss (`strata recover`). Default false.
    pub extended_wal: bool,
    /// With the extended WAL: fast-tier tables pinning a WAL file older than this are pushed
    /// to the next level (RocksMash's TTL flush), which bounds the WAL. `None` never pushes.
    /// Default 10 minutes.
    pub extended_wal_ttl: Option<Duration>,
    /// The capacity tier (RocksMash §3.1): the last `capacity_levels` levels are written there.
    /// `None` keeps every table on the fast tier (the database directory).
    pub capacity: Option<crate::storage::object::CapacityOptions>,
    /// An object store to use for the capacity tier instead of opening `capacity.url` (tests
    /// share one in-memory store across reopenings this way).
    pub capacity_store: Option<Arc<dyn object_store::ObjectStore>>,
    /// A bound on the capacity tier's requests: requests per second and/or dollars per month
    /// (`"50/s"`, `"$20/month"`, both comma-separated; S3 Standard prices). Compactions
    /// wait to stay within it; foreground reads never wait but spend from it.
    /// Default `None` (unbounded).
    pub capacity_request_budget: Option<crate::storage::object::RequestBudget>,
    /// Garbage collection's minimum age: a capacity-tier table that left the last version is
    /// deleted no sooner than this (and only when no checkpoint or clone refers to it), so a
    /// process that read an older manifest — `strata checkpoint` beside a running server —
    /// has this long to record what it refers to. Default 60 s.
    pub capacity_gc_min_age: std::time::Duration,
    /// How many levels, counted from the bottom, live on the capacity tier (RocksDB's
    /// `last_level_temperature`, generalized); every level above them is fast, so the fast
    /// tier holds about 1/`max_bytes_for_level_multiplier` of the data. Default 1.
    pub capacity_levels: usize,
    /// Absolute placement instead: levels `0..=k` live on the fast tier. Default `None`.
    /// With dynamic level sizing L0 compacts into the shallowest level in use, which for a
    /// tree that does not yet reach level `k` from the bottom is a capacity level: the fast
    /// tier then holds L0 alone. `capacity_levels` has no such gap.
    pub fast_levels: Option<usize>,
    /// Bytes of tables the fast tier may hold; beyond it the deepest fast level spills to the
    /// capacity tier. Default unbounded.
    pub fast_tier_budget: Option<u64>,
    /// HotRAP: hot records read from the capacity tier are promoted to the fast tier, and hot
    /// records are retained there by compactions. On by default (acts only with a capacity
    /// tier).
    pub hotrap: crate::tier::hot::HotRapOptions,
    /// Where tables go: by level alone (`Static`, default) or also by temperature
    /// (`LogStore`: informed, reverse, deferred and staging compactions; needs leveled
    /// compaction). With HotRAP also on, LogStore moves whole tables and HotRAP moves records.
    pub placement_policy: crate::tier::PlacementPolicy,
    /// LogStore tuning (half-life of temperatures, deferral thresholds).
    pub logstore: crate::tier::LogStoreOptions,
    /// The persistent cache of capacity-tier data blocks on the fast tier (LAP, naive, none).
    pub persistent_cache: crate::cache::persistent::PersistentCacheOptions,
    /// Keeps, removes or rewrites records as compaction rewrites them (e.g. TTL expiry).
    pub compaction_filter: Option<Arc<dyn crate::compaction::CompactionFilter>>,
    /// Folds merge operands (`Db::merge`, `WriteBatch::merge`) into values on read and in
    /// compaction (RocksDB's `merge_operator`); `None` (default): merges are refused. Keep the
    /// same operator for the life of the database. See [`crate::merge`].
    pub merge_operator: Option<Arc<dyn crate::merge::MergeOperator>>,
    /// Members of a write group insert their own batches into the memtable in parallel
    /// (RocksDB's `allow_concurrent_memtable_write`); otherwise the group's leader inserts them
    /// all. Parallel inserts pay off with many cores; default `false` (measured faster on 2).
    pub concurrent_memtable_writes: bool,
    /// A write group leaves the front of the writer queue as soon as its WAL record is written,
    /// so the next group appends while it inserts into the memtable (RocksDB's
    /// `enable_pipelined_write`); groups still become visible in order. Default `false`: on 2
    /// cores it made groups smaller and 4 writers ran at 0.56x the unpipelined path.
    pub pipelined_write: bool,
    /// How the database compacts: leveled (default) or SifrDB's split forest, chosen when the
    /// database is created. An existing database keeps the style it was created with (the
    /// manifest records it); this field is then ignored.
    pub compaction_style: crate::version::CompactionStyle,
    /// Split-forest tuning (trees per level, early-cleaning threshold, parallel search).
    pub forest: crate::compaction::ForestOptions,
    /// Runs compaction jobs on a compaction service (CaaS-LSM): `strata_compaction`'s gRPC
    /// client, or any implementation. `None` (default): every job runs locally.
    pub compaction_service: Option<Arc<dyn crate::compaction::remote::CompactionService>>,
    /// With a service: every eligible job remote (`Remote`), or per job by estimated time and
    /// local load (`Hybrid`, default). `Local` ignores the service.
    pub compaction_mode: crate::compaction::remote::CompactionMode,
    /// How much of a remote result is read back before it is installed.
    pub remote_verify: crate::compaction::remote::VerifyLevel,
    /// This database's name on the compaction service; default: its directory.
    pub compaction_instance: Option<String>,
    /// The storage the database lives on. `None` means the local file system; tests pass
    /// fault-injecting wrappers here.
    pub storage: Option<Arc<dyn Storage>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            avoid_flush_during_recovery: true,
            memtable_bloom_ratio: 0.02,
            memtable_point_index_ratio: 0.25,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            slowdown_delay: Duration::from_millis(1),
            num_levels: 7,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            level_compaction_dynamic_level_bytes: true,
            target_file_size_base: 64 << 20,
            block_size: 4096,
            bytes_per_sync: 1 << 20,
            block_restart_interval: 16,
            bloom_bits_per_key: 10.0,
            data_block_hash_ratio: 0.75,
            capacity_index: crate::sst::index::IndexKind::Auto,
            compression_per_level: vec![Compression::None, Compression::None, Compression::Lz4],
            block_cache_capacity: 64 << 20,
            prepopulate_block_cache: false,
            row_cache_capacity: 0,
            max_open_files: 1000,
            max_background_compactions: 2,
            compaction_rate_limit: 0,
            wal_sync_interval: None,
            max_manifest_file_size: 64 << 20,
            wal_location: None,
            wal_emulation: None,
            wal_lease_ttl: crate::storage::object::DEFAULT_LEASE_TTL,
            wal_lease_renew_while_idle: true,
            wal_log_min_age: crate::storage::object::SEALED_LOG_MIN_AGE,
            extended_wal: false,
            extended_wal_ttl: Some(Duration::from_secs(600)),
            compaction_filter: None,
            merge_operator: None,
            concurrent_memtable_writes: false,
            pipelined_write: false,
            capacity: None,
            capacity_store: None,
            capacity_levels: 1,
            fast_levels: None,
            fast_tier_budget: None,
            capacity_gc_min_age: std::time::Duration::from_secs(60),
            capacity_request_budget: None,
            hotrap: Default::default(),
            placement_policy: Default::default(),
            logstore: Default::default(),
            persistent_cache: Default::default(),
            compaction_style: Default::default(),
            forest: Default::default(),
            compaction_service: None,
            compaction_mode: crate::compaction::remote::CompactionMode::Hybrid,
            remote_verify: Default::default(),
            compaction_instance: None,
            storage: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field(
                "avoid_flush_during_recovery",
                &self.avoid_flush_during_recovery,
            )
            .field("memtable_bloom_ratio", &self.memtable_bloom_ratio)
            .field(
                "memtable_point_index_ratio",
                &self.memtable_point_index_ratio,
            )
            .field("num_levels", &self.num_levels)
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field("target_file_size_base", &self.target_file_size_base)
            .field("block_size", &self.block_size)
            .field("bytes_per_sync", &self.bytes_per_sync)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("data_block_hash_ratio", &self.data_block_hash_ratio)
            .field("capacity_index", &self.capacity_index)
            .field("compression_per_level", &self.compression_per_level)
            .field("block_cache_capacity", &self.block_cache_capacity)
            .field("prepopulate_block_cache", &self.prepopulate_block_cache)
            .field("row_cache_capacity", &self.row_cache_capacity)
            .field("capacity", &self.capacity)
            .field("capacity_levels", &self.capacity_levels)
            .field("fast_levels", &self.fast_levels)
            .field("hotrap", &self.hotrap)
            .field("fast_tier_budget", &self.fast_tier_budget)
            .field("capacity_request_budget", &self.capacity_request_budget)
            .field("persistent_cache", &self.persistent_cache)
            .field("compaction_style", &self.compaction_style)
            .field("forest", &self.forest)
            .field("wal_location", &self.wal_location)
            .field("wal_lease_ttl", &self.wal_lease_ttl)
            .field(
                "wal_lease_renew_while_idle",
                &self.wal_lease_renew_while_idle,
            )
            .field("wal_log_min_age", &self.wal_log_min_age)
            .field("extended_wal", &self.extended_wal)
            .field("extended_wal_ttl", &self.extended_wal_ttl)
            .field(
                "compaction_service",
                &self
                    .compaction_service
                    .as_ref()
                    .map(|s| s.name().to_string()),
            )
            .field("compaction_mode", &self.compaction_mode)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Whether flushes and compactions may write a record whose value differs from what the
    /// WAL holds at its sequence number (a compaction filter's change, a merge result): the
    /// extended WAL then logs such tables' records inline.
    pub(crate) fn rewrites_values(&self) -> bool {
        self.compaction_filter.is_some() || self.merge_operator.is_some()
    }

    /// Compression for tables written into `level`.
    pub fn compression_for_level(&self, level: usize) -> Compression {
        self.compression_per_level
            .get(level)
            .or(self.compression_per_level.last())
            .copied()
            .unwrap_or(Compression::None)
    }

    /// Bytes of each memtable's Bloom filter (0: none).
    pub fn memtable_bloom_bytes(&self) -> usize {
        (self.write_buffer_size as f64 * self.memtable_bloom_ratio) as usize
    }

    /// Slots of a memtable's point index (0: none): twice `expected_keys` (by default one per
    /// 64 bytes of `write_buffer_size`), rounded up to a power of two, at most
    /// `memtable_point_index_ratio` of `write_buffer_size` in bytes.
    pub fn memtable_point_index_slots(&self, expected_keys: Option<u64>) -> usize {
        let cap = (self.write_buffer_size as f64 * self.memtable_point_index_ratio / 8.0) as usize;
        if cap == 0 {
            return 0;
        }
        let keys = expected_keys.map_or(self.write_buffer_size / 64, |e| e as usize);
        (keys.max(32) * 2).next_power_of_two().min(cap)
    }

    /// Checks that the options are consistent.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::invalid(m.to_string()));
        if self.num_levels < 2 || self.num_levels > 16 {
            return bad("num_levels must be in 2..=16");
        }
        if self.extended_wal && self.wal_location.is_none() {
            return bad(
                "extended_wal needs wal_location: a WAL beside the fast tier is lost with it",
            );
        }
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size must be at least 4096");
        }
        if !(2..=64).contains(&self.forest.trees_per_level) {
            return bad("forest.trees_per_level must be in 2..=64");
        }
        if self.forest.search_threads > 256 {
            return bad("forest.search_threads must be at most 256");
        }
        if !(0.0..=0.25).contains(&self.memtable_bloom_ratio) {
            return bad("memtable_bloom_ratio must be in 0.0..=0.25");
        }
        if !(0.0..=0.5).contains(&self.memtable_point_index_ratio) {
            return bad("memtable_point_index_ratio must be in 0.0..=0.5");
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be at least 2");
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger must be positive");
        }
        if self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger
            || self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger
        {
            return bad("L0 triggers must satisfy compaction <= slowdown <= stop");
        }
        if self.max_bytes_for_level_multiplier < 2.0 {
            return bad("max_bytes_for_level_multiplier must be at least 2");
        }
        if self.block_size < 64 || self.block_size > (64 << 20) {
            return bad("block_size must be in 64 bytes ..= 64 MiB");
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be positive");
        }
        if !(0.0..=64.0).contains(&self.bloom_bits_per_key) {
            return bad("bloom_bits_per_key must be in 0..=64");
        }
        if !valid_hash_ratio(self.data_block_hash_ratio) {
            return bad("data_block_hash_ratio must be 0 (no hash index) or in 0.05..=1");
        }
        if self.target_file_size_base < 4096 {
            return bad("target_file_size_base must be at least 4096");
        }
        if self.max_background_compactions == 0 {
            return bad("max_background_compactions must be at least 1");
        }
        if self.placement_policy == crate::tier::PlacementPolicy::LogStore {
            let l = &self.logstore;
            if self.compaction_style != crate::version::CompactionStyle::Leveled {
                return bad("placement_policy = logstore needs leveled compaction");
            }
            if !(0.0..=1.0).contains(&l.cold_fraction)
                || !(0.0..=1.0).contains(&l.defer_read_fraction)
            {
                return bad("logstore cold_fraction and defer_read_fraction must be in 0..=1");
            }
            if l.tick.is_zero() || l.half_life.is_zero() {
                return bad("logstore tick and half_life must be positive");
            }
        }
        if self.fast_levels.is_some_and(|k| k >= self.num_levels) {
            return bad("fast_levels must be below num_levels");
        }
        if self.capacity_levels == 0 || self.capacity_levels >= self.num_levels {
            return bad("capacity_levels must be at least 1 and below num_levels");
        }
        if self.persistent_cache.kind != crate::cache::persistent::PersistentCacheKind::None
            && self.persistent_cache.capacity == 0
        {
            return bad("a persistent cache needs a capacity in bytes");
        }
        for c in &self.compression_per_level {
            if let Compression::Zstd(l) = c {
                if !(1..=22).contains(l) {
                    return bad("zstd level must be in 1..=22");
                }
            }
        }
        Ok(())
    }
}

/// Per-write options.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Fsync the WAL before acknowledging. Without it an acknowledged write survives a process
    /// crash (it is in the OS) but not an OS crash or power loss.
    pub sync: bool,
    /// Fail with `ErrorKind::Incomplete` (writing nothing) instead of waiting when the write
    /// would be slowed down or stopped (L0 at its slowdown trigger, the memtable full, a
    /// background error) — for callers that must not block, such as an event loop that falls
    /// back to a thread pool. RocksDB's `no_slowdown`. Default false.
    pub no_slowdown: bool,
}

/// Per-read options.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Read as of this snapshot; `None` reads the latest state.
    pub snapshot: Option<crate::db::Snapshot>,
    /// Iterators only: inclusive lower bound on user keys.
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators only: exclusive upper bound on user keys.
    pub upper_bound: Option<Vec<u8>>,
    /// Do not insert blocks read for this operation into the block cache (for scans).
    pub skip_cache_fill: bool,
    /// Answer from memory — memtables, the filters and indexes of open tables, the block cache,
    /// HotRAP's promotion cache, and fast-tier blocks the operating system holds in its page
    /// cache (read with `preadv2(RWF_NOWAIT)` on Linux, then cached) — and fail with
    /// `ErrorKind::Incomplete` where a device would have to be waited for (a data block in no
    /// cache, a table not open), having read nothing. RocksDB's `read_tier = kBlockCacheTier`,
    /// plus the page cache. An iterator fails at creation if a table it needs is not open, and
    /// stops with `Incomplete` in `status()` at a block in no cache (what it showed before that
    /// is exact). Default false.
    pub cache_only: bool,
}

/// Whether `r` is a usable `data_block_hash_ratio`: 0 (no hash index) or in
/// [`crate::sst::block_hash::MIN_UTIL_RATIO`]`..=1`.
pub fn valid_hash_ratio(r: f64) -> bool {
    r == 0.0 || (crate::sst::block_hash::MIN_UTIL_RATIO..=1.0).contains(&r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_ratios_are_zero_or_a_usable_fraction() {
        for (r, ok) in [
            (0.0, true),
            (0.05, true),
            (0.75, true),
            (1.0, true),
            (0.01, false),
            (-0.5, false),
            (1.5, false),
            (f64::NAN, false),
        ] {
            assert_eq!(valid_hash_ratio(r), ok, "{r}");
            let o = Options {
                data_block_hash_ratio: r,
                ..Options::default()
            };
            assert_eq!(o.validate().is_ok(), ok, "{r}");
        }
    }
}
