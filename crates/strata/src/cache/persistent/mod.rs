//! Persistent caches on the fast tier for capacity-tier tables (RocksMash §3.2, "LAP"):
//!
//! - [`MetaCache`]: for every capacity table, its metadata (index, filter, range tombstones,
//!   properties, meta-index, footer: the table's tail) is kept in one local sidecar file,
//!   located through an in-memory hash table, for exactly as long as the table lives. Opening a
//!   capacity table costs one local read and no capacity-tier request.
//! - Data caches for capacity-tier data blocks behind the [`PersistentCache`] trait:
//!   [`LapCache`] (fixed-size buckets chosen by hashing the table id, variable-size
//!   entries, per-bucket LRU and validity (owner) table, compaction-aware invalidation, checksummed entries that survive a
//!   restart) and [`NaiveCache`] (RocksDB's old persistent cache: append-only files evicted
//!   whole in LRU order, unaware of compaction), the baseline LAP is measured against.
//!
//! Depends on `storage` and `stats`; never on the engine above.

#[cfg(feature = "foyer")]
mod foyer;
mod lap;
mod meta;
mod naive;

#[cfg(feature = "foyer")]
pub use foyer::FoyerCache;
pub use lap::LapCache;
pub use meta::{MetaCache, MetaKinds, MetaTotals};
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
    /// Bytes of fast-tier space the cache may fill (the configured capacity, as rounded).
    fn capacity(&self) -> u64;
    /// The cache's short name: `"lap"`, `"naive"` or `"foyer"`.
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
    /// foyer's hybrid cache (feature `foyer`): the peer SlateDB uses.
    #[cfg(feature = "foyer")]
    Foyer,
}

/// Persistent data cache options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistentCacheOptions {
    /// Which data cache to run ([`PersistentCacheKind::None`] by default: none).
    pub kind: PersistentCacheKind,
    /// Bytes of fast-tier space for cached blocks.
    pub capacity: u64,
    /// LAP bucket size (blocks of one table share a bucket). Default 8 MiB.
    pub bucket_size: u64,
    /// LAP allocation unit: an entry (a 32-byte header and the block, stored as the table holds
    /// it) takes whole units. Default 256 bytes; at least 64.
    pub unit_size: u64,
    /// Naive cache file size. Default 4 MiB.
    pub file_size: u64,
}

impl Default for PersistentCacheOptions {
    fn default() -> Self {
        PersistentCacheOptions {
            kind: PersistentCacheKind::None,
            capacity: 0,
            bucket_size: 8 << 20,
            unit_size: 256,
            file_size: 4 << 20,
        }
    }
}

pub(crate) fn table_hash(table: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64(&table.to_le_bytes())
}
