//! Open table readers by file id, bounded by `max_open_files`. Opening a table reads its footer,
//! index, filter, range tombstones and properties once (for capacity tables, from the local
//! MetaCache sidecar); later lookups reuse them.

use std::sync::Arc;

use quick_cache::sync::Cache;

use super::persistent::MetaKinds;
use super::BlockCache;
use crate::error::Result;
use crate::sst::Table;
use crate::stats::EngineStats;
use crate::tier::TableStore;
use crate::version::FileMeta;

/// Caches open [`Table`]s.
pub struct TableCache {
    store: Arc<TableStore>,
    tables: Cache<u64, Arc<Table>>,
    block_cache: Option<Arc<BlockCache>>,
    stats: Arc<EngineStats>,
}

impl TableCache {
    pub fn new(
        store: Arc<TableStore>,
        capacity: usize,
        block_cache: Option<Arc<BlockCache>>,
        stats: Arc<EngineStats>,
    ) -> Self {
        TableCache {
            store,
            tables: Cache::new(capacity.max(16)),
            block_cache,
            stats,
        }
    }

    /// The reader of table `f`, opening it if needed.
    pub fn get(&self, f: &FileMeta) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(&f.id) {
            return Ok(t);
        }
        let file = self.store.open(f.id, f.tier, f.size)?;
        let t = Arc::new(Table::open(
            f.id,
            file,
            self.block_cache.clone(),
            self.stats.clone(),
        )?);
        if f.tier == crate::tier::Tier::Capacity {
            self.store
                .note_meta_kinds(f.id, MetaKinds::of(t.properties()));
        }
        self.tables.insert(f.id, t.clone());
        Ok(t)
    }

    /// The reader of table `f` if it is open; never opens it (no I/O).
    pub fn get_cached(&self, f: &FileMeta) -> Option<Arc<Table>> {
        self.tables.get(&f.id)
    }

    /// Forgets table `id` (after its file is deleted).
    pub fn evict(&self, id: u64) {
        self.tables.remove(&id);
    }

    /// The table files behind the cache.
    pub fn store(&self) -> &Arc<TableStore> {
        &self.store
    }
}
