//! [`FoyerCache`]: foyer's hybrid (memory + disk) cache as a data cache, the peer LAP is
//! measured against (SlateDB adopted foyer for its block cache). Feature `foyer`, off by
//! default.
//!
//! Blocks are keyed by `(table, offset)` packed into a `u128`. foyer knows nothing of the LSM:
//! when compaction deletes a table its blocks stay until foyer's eviction ages them out
//! (`invalidate_table` is a no-op; that is the difference LAP's invalidation is measured by).
//! foyer's own memory tier is kept small (1/64 of the disk capacity, at least 256 KiB) so that
//! the comparison with LAP, which has none, is at nearly equal bytes. Its I/O runs on a private
//! tokio runtime; lookups block on it. The cache starts empty after a restart (it is dropped
//! without `close`, which waits for its flushers, at shutdown).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use foyer::{
    BlockEngineConfig, DeviceBuilder, FsDeviceBuilder, HybridCache, HybridCacheBuilder,
    HybridCachePolicy,
};

use super::{PersistentCache, PersistentCacheOptions};
use crate::error::{Error, Result};
use crate::stats::TierStats;

/// See the module docs.
pub struct FoyerCache {
    cache: HybridCache<u128, Vec<u8>>,
    runtime: tokio::runtime::Runtime,
    capacity: u64,
    stats: Arc<TierStats>,
}

fn key(table: u64, offset: u64) -> u128 {
    (table as u128) << 64 | offset as u128
}

impl FoyerCache {
    /// Opens an empty cache of `o.capacity` disk bytes in `dir` (whatever was there is removed).
    pub fn open(dir: &Path, o: &PersistentCacheOptions, stats: Arc<TierStats>) -> Result<Self> {
        let fail = |e: &dyn std::fmt::Display| Error::invalid(format!("foyer cache: {e}"));
        // foyer does its own file I/O on its device directory (not through `Storage`).
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .worker_threads(2)
            .thread_name("strata-foyer")
            .build()
            .map_err(|e| fail(&e))?;
        let capacity = o.capacity.max(1 << 20);
        // The disk is used in blocks: small enough that the capacity holds 16 of them (a block
        // larger than the capacity would not be honoured), 4 KiB-aligned.
        let block = ((capacity / 16).clamp(64 << 10, 16 << 20) & !4095) as usize;
        let memory = (capacity / 64).max(256 << 10) as usize;
        let cache = runtime.block_on(async {
            let device = FsDeviceBuilder::new(dir)
                .with_capacity(capacity as usize)
                .build()
                .map_err(|e| fail(&e))?;
            HybridCacheBuilder::new()
                .with_name("strata-foyer")
                .with_policy(HybridCachePolicy::WriteOnInsertion)
                .memory(memory)
                .with_weighter(|_k: &u128, v: &Vec<u8>| v.len())
                .storage()
                .with_engine_config(BlockEngineConfig::new(device).with_block_size(block))
                .build()
                .await
                .map_err(|e| fail(&e))
        })?;
        Ok(FoyerCache {
            cache,
            runtime,
            capacity,
            stats,
        })
    }
}

impl PersistentCache for FoyerCache {
    fn get(&self, table: u64, offset: u64, len: usize) -> Option<Bytes> {
        // The hybrid lookup answers from foyer's memory tier first, then its disk.
        let entry = futures::executor::block_on(self.cache.get(&key(table, offset)))
            .ok()
            .flatten()
            .map(|e| e.value().clone())?;
        if entry.len() != len {
            return None;
        }
        self.stats
            .pcache_read_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
        Some(Bytes::from(entry))
    }

    fn insert(&self, table: u64, offset: u64, data: &[u8]) {
        let _guard = self.runtime.enter();
        self.cache.insert(key(table, offset), data.to_vec());
        self.stats.pcache_inserts.fetch_add(1, Ordering::Relaxed);
        self.stats
            .pcache_write_bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
    }

    fn invalidate_table(&self, _table: u64) {
        // foyer cannot enumerate a table's blocks: they age out.
    }

    /// The memory tier's bytes only: foyer does not report what its disk holds.
    fn usage(&self) -> u64 {
        self.cache.memory().usage() as u64
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn name(&self) -> &'static str {
        "foyer"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_what_it_was_given() {
        let dir = tempfile::tempdir().unwrap();
        let o = PersistentCacheOptions {
            capacity: 16 << 20,
            ..Default::default()
        };
        let c = FoyerCache::open(dir.path(), &o, Arc::default()).unwrap();
        for i in 0..100u64 {
            c.insert(7, i * 4096, &vec![i as u8; 4000]);
        }
        let hits = (0..100u64)
            .filter(|&i| c.get(7, i * 4096, 4000).is_some_and(|b| b[0] == i as u8))
            .count();
        assert!(hits > 50, "{hits} of 100");
        assert!(c.get(7, 0, 3999).is_none(), "a length mismatch is a miss");
        assert!(c.get(8, 0, 4000).is_none());
    }
}
