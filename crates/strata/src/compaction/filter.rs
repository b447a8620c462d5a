//! The compaction-filter hook: a user function that keeps, removes or rewrites each record as
//! compaction rewrites it (RocksDB's `CompactionFilter`), e.g. to drop expired entries.
//!
//! Contract: the filter sees only the newest version of a key that no live snapshot can see
//! (records snapshots still need are passed through untouched), and only puts. `Remove` turns
//! the record into a deletion (dropped outright at the bottommost level); `ChangeValue`
//! replaces the value and keeps the sequence number. Filters run on compaction threads and
//! must be fast, deterministic for a given input, and `Send + Sync`. Flushes do not filter.

/// What to do with a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterDecision {
    Keep,
    Remove,
    ChangeValue(Vec<u8>),
}

/// A user-supplied compaction filter; see the module docs for the contract.
pub trait CompactionFilter: Send + Sync {
    /// A stable name, for logs.
    fn name(&self) -> &str;
    /// Decides the fate of `key`'s current value during a compaction into `level`.
    fn filter(&self, level: usize, key: &[u8], value: &[u8]) -> FilterDecision;
}
