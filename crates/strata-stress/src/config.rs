//! The options a stress round runs with, drawn at random from every combination the engine
//! supports today. [`draw_options`] is the one place that knows them: a feature that adds an
//! engine switch (HotRAP on/off, remote compaction, extended WAL, split-forest compaction, ...)
//! adds its field to [`StressConfig`], its draw to `draw_options` and its mapping to
//! [`StressConfig::to_options`] — nothing else in the harness needs to change.
//!
//! Fields are split in two: *database* fields (key count, number of levels, capacity tier kind,
//! persistent cache kind) are drawn when the harness starts a new database and kept for all of
//! its rounds ([`StressConfig::keep_database`]); every other field is redrawn each round, so one
//! database is reopened under many option sets.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata::cache::persistent::{PersistentCacheKind, PersistentCacheOptions};
use strata::storage::object::{CapacityOptions, Emulation};
use strata::tier::hot::ralt::RaltOptions;
use strata::tier::hot::HotRapOptions;
use strata::{Compression, Options};
use strata_test_support::Rng;

/// Where levels below the fast ones go. `memory://` is not drawn: it lives only as long as the
/// process, and every round kills its process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CapacityKind {
    /// One tier: every table in the database directory.
    None,
    /// `file://DIR/cap`, with the round's emulation (latency, injected errors and timeouts).
    File,
}

/// How a round that ends in a node loss rebuilds the fast tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeLossRecovery {
    /// Opening the database (a parallel rebuild).
    #[default]
    Open,
    /// `recovery::recover` in parallel mode, then the open.
    Parallel,
    /// `recovery::recover` with the chronological replay (the baseline), then the open.
    Replay,
}

impl NodeLossRecovery {
    /// The mode `recovery::recover` runs in, if it runs before the open.
    pub fn mode(self) -> Option<strata::recovery::RecoveryMode> {
        match self {
            NodeLossRecovery::Open => None,
            NodeLossRecovery::Parallel => Some(strata::recovery::RecoveryMode::Parallel),
            NodeLossRecovery::Replay => Some(strata::recovery::RecoveryMode::Replay),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheKind {
    None,
    Lap,
    Naive,
}

/// One round's configuration (database fields + round fields). Serialized as JSON for the child.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StressConfig {
    // ---- database fields (kept for the database's lifetime) ----
    /// Keys `0..num_keys`; writer threads own contiguous slices of them.
    pub num_keys: u64,
    pub num_levels: usize,
    pub capacity: CapacityKind,
    pub persistent_cache: CacheKind,

    // ---- round fields ----
    /// Seed of the child's workload threads.
    pub workload_seed: u64,
    pub writer_threads: u64,
    pub reader_threads: u64,
    /// Operations per write batch: 1..=max_batch_ops.
    pub max_batch_ops: u64,
    /// Per-mille of write-batch operations that are deletes / range deletes.
    pub delete_permille: u64,
    pub range_delete_permille: u64,
    /// Per-mille of write-batch operations that are merges (`merge::NewestWrite`). Configurations
    /// saved before merges replay without them.
    #[serde(default)]
    pub merge_permille: u64,
    /// Per-mille of writer iterations that also call `flush` / `compact_range`.
    pub flush_permille: u64,
    pub compact_permille: u64,
    /// Percent of writes made with `WriteOptions::sync`.
    pub sync_percent: u64,
    /// Percent of batches without range deletes committed as optimistic transactions (each op
    /// through the transaction, one key read with `get_for_update` first; a refused commit is
    /// retried with the same writes).
    #[serde(default)]
    pub txn_percent: u64,
    pub wal_sync_interval_ms: Option<u64>,
    pub write_buffer_size: usize,
    pub max_write_buffer_number: usize,
    pub memtable_bloom_ratio: f64,
    /// 0.001 gives the smallest index, which overflows (lookups then search). Configurations
    /// saved before it existed replay with the engine's default.
    #[serde(default = "default_point_index_ratio")]
    pub memtable_point_index_ratio: f64,
    pub concurrent_memtable_writes: bool,
    #[serde(default)]
    pub pipelined_write: bool,
    pub level0_file_num_compaction_trigger: usize,
    pub level0_slowdown_writes_trigger: usize,
    pub level0_stop_writes_trigger: usize,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
    pub level_compaction_dynamic_level_bytes: bool,
    pub target_file_size_base: u64,
    pub block_size: usize,
    pub block_restart_interval: usize,
    pub max_open_files: usize,
    pub compaction_rate_limit: u64,
    pub bloom_bits_per_key: f64,
    #[serde(default)]
    pub data_block_hash_ratio: f64,
    pub compression_per_level: Vec<Compression>,
    pub block_cache_capacity: usize,
    #[serde(default)]
    pub row_cache_capacity: usize,
    pub max_background_compactions: usize,
    /// Absolute placement (levels `0..=k` fast) or, `None`, relative to the bottom with
    /// `capacity_levels`.
    pub fast_levels: Option<usize>,
    pub capacity_levels: usize,
    pub fast_tier_budget: Option<u64>,
    /// HotRAP (promotion cache, retention, promotion by compaction and by flush), with a
    /// small RALT buffer and promotion cache so every pathway runs within a round.
    pub hotrap: bool,
    /// Split-forest compaction (SifrDB) instead of leveled, with its trees per level, early
    /// cleaning threshold (checkpoints make kills land in journaled merges) and search threads.
    pub split_forest: bool,
    pub trees_per_level: usize,
    pub cleaning_threshold: usize,
    pub search_threads: usize,
    pub ralt_buffer_bytes: usize,
    pub promotion_cache_bytes: usize,
    /// Capacity-tier emulation (only with `CapacityKind::File`).
    pub capacity_latency_ms: u64,
    pub capacity_error_rate: f64,
    pub capacity_timeout_rate: f64,
    pub capacity_timeout_ms: u64,
    pub persistent_cache_bytes: u64,
    /// Index of capacity-tier tables (MashMeta trie, block index + bloom, or per table).
    #[serde(default)]
    pub capacity_index: strata::sst::index::IndexKind,
    /// The extended WAL with the log location in `dir/wal` (a database field), and whether
    /// this round ends in a node loss: the parent deletes `dir/db` before reopening, which
    /// rebuilds the fast tier from the log location.
    #[serde(default)]
    pub extended_wal: bool,
    #[serde(default)]
    pub node_loss: bool,
    /// How the node loss is recovered. Configurations saved before it existed open.
    #[serde(default)]
    pub node_loss_recovery: NodeLossRecovery,
    /// Open keeps the replayed WAL tail in memtables (else writes it to L0). Configurations
    /// saved before it existed replay with the engine's default.
    #[serde(default = "default_avoid_flush_during_recovery")]
    pub avoid_flush_during_recovery: bool,
    /// Table files ask for writeback every this many bytes (0: only at their sync); small
    /// values ask after nearly every block. Configurations saved before it existed use the
    /// engine's default.
    #[serde(default = "default_bytes_per_sync")]
    pub bytes_per_sync: u64,
    /// With the extended WAL, the log location is the object store `file://dir/wal` (segments
    /// uploaded at each sync, a lease, a replica following by requests) instead of the
    /// directory `dir/wal` (a database field). Configurations saved before it existed use the
    /// directory.
    #[serde(default)]
    pub wal_object_store: bool,
    /// Column families besides the default (a database field; see `families`): keys are
    /// dealt to them by block. Not with the extended WAL, which refuses families.
    /// Configurations saved before it existed have none.
    #[serde(default)]
    pub families: u64,
}

fn pick<T: Clone>(rng: &mut Rng, xs: &[T]) -> T {
    xs[rng.below(xs.len() as u64) as usize].clone()
}

fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Draws a complete configuration. New engine features add their switch here (and to
/// [`StressConfig::to_options`]); e.g. the HotRAP engineer adds `hotrap: bool` after merging.
pub fn draw_options(rng: &mut Rng) -> StressConfig {
    let num_levels = 3 + rng.below(5) as usize; // 3..=7
    let capacity = if rng.chance(60) {
        CapacityKind::File
    } else {
        CapacityKind::None
    };
    let persistent_cache = match capacity {
        CapacityKind::None => CacheKind::None,
        CapacityKind::File => pick(rng, &[CacheKind::None, CacheKind::Lap, CacheKind::Naive]),
    };
    let compression_choices = [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd(1),
        Compression::Zstd(3),
    ];
    let compression_per_level = (0..1 + rng.below(3))
        .map(|_| pick(rng, &compression_choices))
        .collect();
    let faults = capacity == CapacityKind::File && rng.chance(50);
    let level0 = 2 + rng.below(4) as usize;
    StressConfig {
        num_keys: pick(rng, &[200, 1000, 4000, 10_000]),
        num_levels,
        capacity,
        persistent_cache,
        workload_seed: rng.next_u64(),
        writer_threads: 1 + rng.below(4),
        reader_threads: 1 + rng.below(3),
        max_batch_ops: pick(rng, &[1, 4, 16]),
        delete_permille: pick(rng, &[0, 50, 150, 300]),
        range_delete_permille: pick(rng, &[0, 5, 20, 60]),
        flush_permille: pick(rng, &[0, 1, 5]),
        compact_permille: pick(rng, &[0, 1, 3]),
        sync_percent: pick(rng, &[0, 10, 50, 100]),
        txn_percent: pick(rng, &[0, 0, 20, 100]),
        wal_sync_interval_ms: if rng.chance(30) {
            Some(pick(rng, &[1, 20, 200]))
        } else {
            None
        },
        write_buffer_size: pick(rng, &[8 << 10, 32 << 10, 256 << 10, 4 << 20]),
        max_write_buffer_number: 2 + rng.below(3) as usize,
        memtable_bloom_ratio: pick(rng, &[0.0, 0.02, 0.1]),
        memtable_point_index_ratio: pick(rng, &[0.0, 0.001, 0.25]),
        concurrent_memtable_writes: rng.chance(50),
        pipelined_write: rng.chance(50),
        level0_file_num_compaction_trigger: level0,
        // Low triggers make writes slow down and stop behind L0 compactions.
        level0_slowdown_writes_trigger: level0 + pick(rng, &[2, 8, 20]),
        level0_stop_writes_trigger: level0 + pick(rng, &[20, 40]),
        max_bytes_for_level_base: pick(rng, &[32 << 10, 128 << 10, 1 << 20, 8 << 20]),
        max_bytes_for_level_multiplier: pick(rng, &[2.0, 4.0, 10.0]),
        level_compaction_dynamic_level_bytes: rng.chance(70),
        target_file_size_base: pick(rng, &[8 << 10, 32 << 10, 256 << 10, 2 << 20]),
        block_size: pick(rng, &[256, 1024, 4096, 16384]),
        block_restart_interval: pick(rng, &[1, 4, 16]),
        max_open_files: pick(rng, &[8, 64, 1000]),
        compaction_rate_limit: pick(rng, &[0, 0, 0, 1 << 20]),
        bloom_bits_per_key: pick(rng, &[0.0, 3.0, 10.0]),
        data_block_hash_ratio: pick(rng, &[0.0, 0.25, 0.75, 1.0]),
        compression_per_level,
        block_cache_capacity: pick(rng, &[0, 64 << 10, 8 << 20]),
        row_cache_capacity: pick(rng, &[0, 0, 32 << 10, 4 << 20]),
        max_background_compactions: 1 + rng.below(3) as usize,
        fast_levels: rng
            .chance(30)
            .then(|| rng.below(num_levels as u64 - 1) as usize),
        capacity_levels: 1 + rng.below(2) as usize,
        hotrap: rng.chance(70),
        split_forest: rng.chance(40),
        trees_per_level: 2 + rng.below(4) as usize,
        cleaning_threshold: pick(rng, &[0, 1, 2, 10]),
        search_threads: pick(rng, &[0, 2, 16]),
        ralt_buffer_bytes: pick(rng, &[4 << 10, 64 << 10, 1 << 20]),
        promotion_cache_bytes: pick(rng, &[4 << 10, 64 << 10, 1 << 20]),
        fast_tier_budget: if capacity == CapacityKind::File && rng.chance(25) {
            Some(pick(rng, &[64 << 10, 512 << 10, 4 << 20]))
        } else {
            None
        },
        capacity_latency_ms: if capacity == CapacityKind::File {
            pick(rng, &[0, 0, 1, 5])
        } else {
            0
        },
        capacity_error_rate: if faults {
            pick(rng, &[0.01, 0.05, 0.1])
        } else {
            0.0
        },
        capacity_timeout_rate: if faults && rng.chance(50) {
            0.01 + unit(rng) * 0.04
        } else {
            0.0
        },
        capacity_timeout_ms: pick(rng, &[5, 50]),
        persistent_cache_bytes: pick(rng, &[256 << 10, 1 << 20, 8 << 20]),
        capacity_index: pick(
            rng,
            &[
                strata::sst::index::IndexKind::Auto,
                strata::sst::index::IndexKind::MashMeta,
                strata::sst::index::IndexKind::Block,
            ],
        ),
        extended_wal: rng.chance(25),
        node_loss: rng.chance(30),
        avoid_flush_during_recovery: rng.chance(75),
        bytes_per_sync: pick(rng, &[0, 4 << 10, 64 << 10, 1 << 20]),
        // Drawn last (in this order), so a round's earlier options are drawn as before they
        // existed (a run's later rounds still differ: they come from the same generator).
        node_loss_recovery: pick(
            rng,
            &[
                NodeLossRecovery::Open,
                NodeLossRecovery::Parallel,
                NodeLossRecovery::Replay,
            ],
        ),
        merge_permille: pick(rng, &[0, 0, 50, 250]),
        wal_object_store: rng.chance(50),
        families: if rng.chance(30) { 1 + rng.below(2) } else { 0 },
    }
    .without_families_on_extended_wal()
}

impl StressConfig {
    /// Keeps the database fields of `db` (the configuration the database was created with).
    pub fn keep_database(&mut self, db: &StressConfig) {
        self.num_keys = db.num_keys;
        self.num_levels = db.num_levels;
        self.capacity = db.capacity;
        self.persistent_cache = db.persistent_cache;
        self.extended_wal = db.extended_wal;
        self.wal_object_store = db.wal_object_store;
        self.families = db.families;
        if let Some(k) = self.fast_levels {
            self.fast_levels = Some(k.min(self.num_levels - 1));
        }
        self.capacity_levels = self.capacity_levels.min(self.num_levels - 1);
        if self.capacity == CapacityKind::None {
            self.fast_tier_budget = None;
            self.capacity_latency_ms = 0;
            self.capacity_error_rate = 0.0;
            self.capacity_timeout_rate = 0.0;
        }
    }

    /// No column families with the extended WAL (it refuses them).
    pub fn without_families_on_extended_wal(mut self) -> Self {
        if self.extended_wal {
            self.families = 0;
        }
        self
    }

    /// Engine options for the database in `dir` (`dir/db`, capacity tier in `dir/cap`).
    /// `faults: false` leaves out latency and injected errors (the parent's verification opens).
    pub fn to_options(&self, dir: &Path, faults: bool) -> Options {
        let mut o = Options {
            // Always: operands written in one round are read in every later one.
            merge_operator: Some(std::sync::Arc::new(crate::merge::NewestWrite)),
            write_buffer_size: self.write_buffer_size,
            max_write_buffer_number: self.max_write_buffer_number,
            avoid_flush_during_recovery: self.avoid_flush_during_recovery,
            memtable_bloom_ratio: self.memtable_bloom_ratio,
            memtable_point_index_ratio: self.memtable_point_index_ratio,
            concurrent_memtable_writes: self.concurrent_memtable_writes,
            pipelined_write: self.pipelined_write,
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger: self.level0_slowdown_writes_trigger,
            level0_stop_writes_trigger: self.level0_stop_writes_trigger,
            num_levels: self.num_levels,
            max_bytes_for_level_base: self.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.max_bytes_for_level_multiplier,
            level_compaction_dynamic_level_bytes: self.level_compaction_dynamic_level_bytes,
            target_file_size_base: self.target_file_size_base,
            block_size: self.block_size,
            bytes_per_sync: self.bytes_per_sync,
            block_restart_interval: self.block_restart_interval,
            max_open_files: self.max_open_files,
            compaction_rate_limit: self.compaction_rate_limit,
            bloom_bits_per_key: self.bloom_bits_per_key,
            data_block_hash_ratio: self.data_block_hash_ratio,
            compression_per_level: self.compression_per_level.clone(),
            block_cache_capacity: self.block_cache_capacity,
            row_cache_capacity: self.row_cache_capacity,
            max_background_compactions: self.max_background_compactions,
            wal_sync_interval: self.wal_sync_interval_ms.map(Duration::from_millis),
            fast_levels: self.fast_levels,
            capacity_levels: self.capacity_levels,
            capacity_index: self.capacity_index,
            ..Options::default()
        };
        if self.extended_wal {
            o.wal_location = Some(if self.wal_object_store {
                format!("file://{}", dir.join("wal").display()).into()
            } else {
                dir.join("wal")
            });
            o.extended_wal = true;
            // Short, so TTL push-downs run within a round.
            o.extended_wal_ttl = Some(Duration::from_millis(500));
        }
        if self.split_forest {
            o.compaction_style = strata::CompactionStyle::SplitForest;
            o.forest = strata::compaction::ForestOptions {
                trees_per_level: self.trees_per_level,
                cleaning_threshold: self.cleaning_threshold,
                search_threads: self.search_threads,
            };
        }
        let mut ralt =
            RaltOptions::for_fast_tier(dir.join("unused"), 4 * self.max_bytes_for_level_base);
        ralt.buffer_bytes = self.ralt_buffer_bytes;
        o.hotrap = HotRapOptions {
            enabled: self.hotrap,
            promotion_cache_bytes: Some(self.promotion_cache_bytes),
            ralt: Some(ralt),
            ..Default::default()
        };
        if self.capacity == CapacityKind::File {
            let mut c = CapacityOptions::new(format!("file://{}", dir.join("cap").display()));
            let emulation = Emulation {
                latency: Duration::from_millis(self.capacity_latency_ms),
                error_rate: self.capacity_error_rate,
                timeout_rate: self.capacity_timeout_rate,
                timeout_delay: Duration::from_millis(self.capacity_timeout_ms),
                seed: self.workload_seed | 1,
                ..Default::default()
            };
            if faults
                && emulation
                    != (Emulation {
                        seed: emulation.seed,
                        ..Default::default()
                    })
            {
                c.emulation = Some(emulation);
            }
            o.capacity = Some(c);
            o.fast_tier_budget = self.fast_tier_budget;
            let kind = match self.persistent_cache {
                CacheKind::None => PersistentCacheKind::None,
                CacheKind::Lap => PersistentCacheKind::Lap,
                CacheKind::Naive => PersistentCacheKind::Naive,
            };
            if kind != PersistentCacheKind::None {
                o.persistent_cache = PersistentCacheOptions {
                    kind,
                    capacity: self.persistent_cache_bytes,
                    bucket_size: 256 << 10,
                    unit_size: 256,
                    file_size: 64 << 10,
                };
            }
        }
        o
    }

    /// One line for reports.
    /// An object-store log location holds only what a sync uploaded: a write acknowledged
    /// without one is on the node's staging disk, lost with the node and invisible to a
    /// replica. The checks hold every acknowledged write to be durable and visible, so on such
    /// a location every write syncs (the "sync-always workload").
    pub fn sync_on_object_store(&mut self) {
        if self.extended_wal && self.wal_object_store {
            self.sync_percent = 100;
        }
    }

    pub fn describe(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn default_bytes_per_sync() -> u64 {
    Options::default().bytes_per_sync
}

fn default_avoid_flush_during_recovery() -> bool {
    Options::default().avoid_flush_during_recovery
}

fn default_point_index_ratio() -> f64 {
    Options::default().memtable_point_index_ratio
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_draw_validates_and_round_trips() {
        let mut rng = Rng::new(42);
        let first = draw_options(&mut rng);
        for _ in 0..2000 {
            let mut c = draw_options(&mut rng);
            for db in [&first, &c.clone()] {
                c.keep_database(db);
                c.to_options(Path::new("/tmp/x"), true).validate().unwrap();
                let back: StressConfig = serde_json::from_str(&c.describe()).unwrap();
                assert_eq!(back, c);
            }
        }
    }
}
