//! Caches. Owns the in-memory [`BlockCache`] shared by every table of a database (sized in bytes,
//! keyed by table id and block offset) and the [`TableCache`] of open table readers.
//! Persistent (fast-tier) caches for capacity-tier data will live in `cache/persistent`.
//! Depends on `sst` (block and table types), `storage`, `stats`.

mod block_cache;
pub mod persistent;
pub mod table_cache;

pub use block_cache::BlockCache;
pub use table_cache::TableCache;
