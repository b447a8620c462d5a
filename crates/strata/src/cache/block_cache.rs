//! A sharded, weighted in-memory cache of decoded blocks (quick_cache's CLOCK-Pro variant, which
//! resists scans better than plain LRU), charged by block size.

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::sst::block::Block;

#[derive(Clone)]
struct BlockWeighter;

impl Weighter<(u64, u64), Block> for BlockWeighter {
    fn weight(&self, _k: &(u64, u64), v: &Block) -> u64 {
        // Block bytes plus the entry's own bookkeeping.
        (v.size() + 64) as u64
    }
}

/// Decoded blocks by `(table id, block offset)`.
pub struct BlockCache {
    cache: Cache<(u64, u64), Block, BlockWeighter>,
    capacity: u64,
}

impl BlockCache {
    /// A cache charging at most `capacity_bytes` (block bytes plus 64 bytes of bookkeeping each).
    pub fn new(capacity_bytes: usize) -> Self {
        let est_items = (capacity_bytes / 4096).max(16);
        BlockCache {
            cache: Cache::with_weighter(est_items, capacity_bytes as u64, BlockWeighter),
            capacity: capacity_bytes as u64,
        }
    }

    /// The cached block at `offset` in table `table`, if present.
    pub fn get(&self, table: u64, offset: u64) -> Option<Block> {
        self.cache.get(&(table, offset))
    }

    /// Caches `block` as the block at `offset` in table `table`, evicting others if over capacity.
    pub fn insert(&self, table: u64, offset: u64, block: Block) {
        self.cache.insert((table, offset), block);
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> u64 {
        self.cache.weight()
    }

    /// The capacity in bytes, as given to [`BlockCache::new`].
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
}
