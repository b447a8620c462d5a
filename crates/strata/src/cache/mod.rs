//! Caches. Owns the in-memory [`BlockCache`] shared by every table of a database (sized in bytes,
//! keyed by table id and block offset), the [`RowCache`] of point-lookup answers (keyed by table
//! id and user key) and the [`TableCache`] of open table readers, which holds the row cache.
//! Persistent (fast-tier) caches for capacity-tier data will live in `cache/persistent`.
//! Depends on `sst` (block and table types), `storage`, `stats`.

mod block_cache;
pub mod persistent;
mod row_cache;
pub mod table_cache;

pub use block_cache::BlockCache;
pub use row_cache::RowCache;
pub use table_cache::TableCache;
