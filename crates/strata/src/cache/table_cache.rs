//! Open table readers by file id, bounded by `max_open_files`. Opening a table reads its footer,
//! index, filter, range tombstones and properties once; later lookups reuse them.

use std::path::PathBuf;
use std::sync::Arc;

use quick_cache::sync::Cache;

use super::BlockCache;
use crate::error::Result;
use crate::sst::Table;
use crate::stats::EngineStats;
use crate::storage::Storage;

/// The path of table `id` in `dir`.
pub fn table_path(dir: &std::path::Path, id: u64) -> PathBuf {
    dir.join(format!("{id:06}.sst"))
}

/// Caches open [`Table`]s.
pub struct TableCache {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    tables: Cache<u64, Arc<Table>>,
    block_cache: Option<Arc<BlockCache>>,
    stats: Arc<EngineStats>,
}

impl TableCache {
    pub fn new(
        dir: PathBuf,
        storage: Arc<dyn Storage>,
        capacity: usize,
        block_cache: Option<Arc<BlockCache>>,
        stats: Arc<EngineStats>,
    ) -> Self {
        TableCache {
            dir,
            storage,
            tables: Cache::new(capacity.max(16)),
            block_cache,
            stats,
        }
    }

    /// The reader of table `id`, opening it if needed.
    pub fn get(&self, id: u64) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(&id) {
            return Ok(t);
        }
        let file = self.storage.open(&table_path(&self.dir, id))?;
        let t = Arc::new(Table::open(
            id,
            file,
            self.block_cache.clone(),
            self.stats.clone(),
        )?);
        self.tables.insert(id, t.clone());
        Ok(t)
    }

    /// Forgets table `id` (after its file is deleted).
    pub fn evict(&self, id: u64) {
        self.tables.remove(&id);
    }

    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}
