//! Open table readers by file id, bounded by `max_open_files`. Opening a table reads its footer,
//! index, filter, range tombstones and properties once (for capacity tables, from the local
//! MetaCache sidecar); later lookups reuse them. It also remembers, for every live fast-tier
//! table opened since the database opened, its index and filter bytes (`fast_meta`), and holds
//! the database's [`RowCache`], if it has one.

use std::sync::Arc;

use quick_cache::sync::Cache;

use super::persistent::MetaKinds;
use super::{BlockCache, RowCache};
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
    rows: Option<RowCache>,
    stats: Arc<EngineStats>,
    /// Index, filter and trie bytes of the fast-tier tables opened so far (until deleted).
    fast_meta: parking_lot::Mutex<std::collections::HashMap<u64, MetaKinds>>,
}

impl TableCache {
    /// A cache of at most `capacity` open tables (at least 16), reading blocks through
    /// `block_cache` if given, without a row cache (see [`TableCache::with_row_cache`]).
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
            rows: None,
            stats,
            fast_meta: Default::default(),
        }
    }

    /// With a row cache of `capacity_bytes` (none if 0).
    pub fn with_row_cache(mut self, capacity_bytes: usize) -> Self {
        self.rows = (capacity_bytes > 0).then(|| RowCache::new(capacity_bytes));
        self
    }

    /// The block cache, if the database has one.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }

    /// The row cache, if the database has one.
    pub fn rows(&self) -> Option<&RowCache> {
        self.rows.as_ref()
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
        let kinds = MetaKinds::of(t.properties());
        match f.tier {
            crate::tier::Tier::Capacity => self.store.note_meta_kinds(f.id, kinds),
            crate::tier::Tier::Fast => {
                self.fast_meta.lock().insert(f.id, kinds);
            }
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
        self.fast_meta.lock().remove(&id);
    }

    /// Of the fast-tier tables opened since the database opened and not deleted: how many, and
    /// their index, filter and trie bytes.
    pub fn fast_meta(&self) -> (u64, MetaKinds) {
        let m = self.fast_meta.lock();
        let mut sum = MetaKinds::default();
        for k in m.values() {
            sum.index += k.index;
            sum.filter += k.filter;
            sum.trie += k.trie;
        }
        (m.len() as u64, sum)
    }

    /// The table files behind the cache.
    pub fn store(&self) -> &Arc<TableStore> {
        &self.store
    }
}
