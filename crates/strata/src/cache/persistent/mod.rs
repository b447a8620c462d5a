//! Persistent caches on the fast tier for capacity-tier tables (RocksMash §3.2, "LAP"):
//!
//! - [`MetaCache`]: for every capacity table, its metadata (index, filter, range tombstones,
//!   properties, meta-index, footer: the table's tail) is kept in one local sidecar file,
//!   located through an in-memory hash table, for exactly as long as the table lives. Opening a
//!   capacity table costs one local read and no capacity-tier request.
//! - Data caches for capacity-tier data blocks behind the [`PersistentCache`] trait:
//!   [`LapCache`] (fixed-size buckets chosen by hashing the table id, per-bucket LRU and
//!   validity bitmap, compaction-aware invalidation, checksummed entries that survive a
//!   restart) and [`NaiveCache`] (RocksDB's old persistent cache: append-only files evicted
//!   whole in LRU order, unaware of compaction), the baseline LAP is measured against.
//!
//! Depends on `storage` and `stats`; never on the engine above.

mod lap;
mod meta;
mod naive;

pub use lap::LapCache;
pub use meta::MetaCache;
pub use naive::NaiveCache;

use bytes::Bytes;

/// A cache of capacity-tier data blocks, keyed by `(table id, block offset)`.
pub trait PersistentCache: Send + Sync {
    /// The cached block, if present and intact, exactly `len` bytes long.
    fn get(&self, table: u64, offset: u64, len: usize) -> Option<Bytes>;
    /// Offers a block read from the capacity tier.
    fn insert(&self, table: u64, offset: u64, data: &[u8]);
    /// The table was deleted by compaction: its blocks are garbage.
    fn invalidate_table(&self, table: u64);
    /// Bytes of valid cached blocks.
    fn usage(&self) -> u64;
    fn capacity(&self) -> u64;
    fn name(&self) -> &'static str;
}

/// Which data cache to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PersistentCacheKind {
    /// No persistent data cache: every block miss in memory goes to the capacity tier.
    #[default]
    None,
    /// RocksMash's LSM-aware DataCache.
    Lap,
    /// File-granularity LRU, append-only (the baseline).
    Naive,
}

/// Persistent data cache options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistentCacheOptions {
    pub kind: PersistentCacheKind,
    /// Bytes of fast-tier space for cached blocks.
    pub capacity: u64,
    /// LAP bucket size (blocks of one table share a bucket). Default 8 MiB.
    pub bucket_size: u64,
    /// LAP slot size: the largest cacheable block plus a 32-byte header. 0 (the default) derives
    /// it from the table block size: `block_size * 9/8 + 32`, rounded up to 64 bytes (a block
    /// closes once it reaches `block_size`, so it overshoots by at most one entry; blocks that
    /// do not fit are not cached and are counted as rejected).
    pub slot_size: u64,
    /// Naive cache file size. Default 4 MiB.
    pub file_size: u64,
}

impl Default for PersistentCacheOptions {
    fn default() -> Self {
        PersistentCacheOptions {
            kind: PersistentCacheKind::None,
            capacity: 0,
            bucket_size: 8 << 20,
            slot_size: 0,
            file_size: 4 << 20,
        }
    }
}

/// The LAP slot size for tables of `block_size`, when not set explicitly.
pub fn default_slot_size(block_size: usize) -> u64 {
    ((block_size as u64 * 9 / 8 + 32).div_ceil(64) * 64).max(1024)
}

pub(crate) fn table_hash(table: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64(&table.to_le_bytes())
}
