//! The row cache: a table's answer to a point lookup, by `(table id, user key)` (RocksDB's
//! `row_cache`). A hit answers a table probe with one hash lookup, where the table path costs a
//! filter probe, an index search, a block-cache lookup and a block seek (each about one cache
//! miss for a random key) and opening the table reader.
//!
//! Invariants: tables are immutable and table ids are never reused, so an entry never goes
//! stale. It holds the table's answer for a lookup that sees every entry of the table (the
//! caller checks `snapshot >= largest_seq`): the newest version of the key there, already
//! resolved against the table's range tombstones (a value, or "deleted"). Only keys the table
//! holds a version of are cached; absent keys are the filter's job. Values are copied in, so an
//! entry never pins a data block. Entries of deleted tables are not removed; they age out.
//! Depends on `types`; never on `db`.

use std::hash::{Hash, Hasher};

use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};

use crate::types::SeqNo;

/// An entry's key: the table and the user key.
#[derive(PartialEq, Eq)]
struct RowKey {
    table: u64,
    key: Box<[u8]>,
}

impl Hash for RowKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        RowKeyRef(self.table, &self.key).hash(state)
    }
}

/// A borrowed [`RowKey`] for lookups (no allocation).
struct RowKeyRef<'a>(u64, &'a [u8]);

impl Hash for RowKeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0);
        state.write(self.1);
    }
}

impl Equivalent<RowKey> for RowKeyRef<'_> {
    fn equivalent(&self, k: &RowKey) -> bool {
        self.0 == k.table && self.1 == &k.key[..]
    }
}

/// The table's answer: the value and its sequence number, or `None` for a deletion (a
/// tombstone, or a version covered by one of the table's range tombstones).
#[derive(Clone)]
struct Row(Option<(Bytes, SeqNo)>);

#[derive(Clone)]
struct RowWeighter;

/// Bytes an entry costs beyond its key and value: the cache's slot and the two allocations.
const ENTRY_OVERHEAD: u64 = 96;

impl Weighter<RowKey, Row> for RowWeighter {
    fn weight(&self, k: &RowKey, v: &Row) -> u64 {
        k.key.len() as u64 + v.0.as_ref().map_or(0, |(v, _)| v.len() as u64) + ENTRY_OVERHEAD
    }
}

/// Point-lookup results by table and user key, charged by key and value bytes.
pub struct RowCache {
    cache: Cache<RowKey, Row, RowWeighter>,
    capacity: u64,
}

impl RowCache {
    /// A cache charging at most `capacity_bytes` (key and value bytes plus 96 bytes per entry).
    pub fn new(capacity_bytes: usize) -> Self {
        let est_items = (capacity_bytes / 128).max(16);
        RowCache {
            cache: Cache::with_weighter(est_items, capacity_bytes as u64, RowWeighter),
            capacity: capacity_bytes as u64,
        }
    }

    /// Table `table`'s answer for `key`, if cached: `Some(Some((value, seq)))`, or `Some(None)`
    /// when the key is deleted there.
    #[allow(clippy::option_option)]
    pub fn get(&self, table: u64, key: &[u8]) -> Option<Option<(Bytes, SeqNo)>> {
        self.cache.get(&RowKeyRef(table, key)).map(|r| r.0)
    }

    /// Remembers table `table`'s answer for `key`: its value and sequence number, or `None` for
    /// a deletion.
    pub fn insert(&self, table: u64, key: &[u8], answer: Option<(&[u8], SeqNo)>) {
        let row = Row(answer.map(|(v, seq)| (Bytes::copy_from_slice(v), seq)));
        self.cache.insert(
            RowKey {
                table,
                key: key.into(),
            },
            row,
        );
    }

    /// Bytes currently charged.
    pub fn usage(&self) -> u64 {
        self.cache.weight()
    }

    /// The capacity in bytes, as given to [`RowCache::new`].
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_per_table_and_key() {
        let c = RowCache::new(1 << 20);
        c.insert(7, b"k", Some((b"v7", 5)));
        c.insert(8, b"k", None);
        let (v, seq) = c.get(7, b"k").unwrap().unwrap();
        assert_eq!((&v[..], seq), (&b"v7"[..], 5));
        assert!(c.get(8, b"k").unwrap().is_none());
        assert!(c.get(7, b"k2").is_none());
        assert!(c.get(9, b"k").is_none());
        assert!(c.usage() > 0 && c.usage() <= c.capacity());
    }

    #[test]
    fn the_capacity_bounds_the_charged_bytes() {
        let c = RowCache::new(64 << 10);
        for i in 0..10_000u32 {
            c.insert(1, &i.to_be_bytes(), Some((&[0; 100], 1)));
        }
        assert!(c.usage() <= 64 << 10, "{}", c.usage());
        let kept = (0..10_000u32)
            .filter(|i| c.get(1, &i.to_be_bytes()).is_some())
            .count();
        assert!(kept > 100 && kept < 10_000, "{kept}");
    }
}
