//! Sorted string tables: the immutable on-disk files of the LSM tree.
//!
//! Owns the table format (documented byte by byte in `docs/format.md`, "Table files"): data
//! blocks with prefix compression and restart points, a checksum and compression byte per block,
//! an index block and a whole-table bloom filter or a MashMeta trie (`index`), a range-deletion block, a properties block, a
//! meta-index and a fixed 48-byte footer with magic number and format version.
//!
//! Invariants: every block read is checksum-verified before it is decoded; a mismatch is
//! `Corruption`, never data. Keys inside a table are strictly increasing internal keys.
//! Depends on `storage`, `cache`, `types`, `coding`, `range_del`, `stats`; never on `db`.

pub mod block;
pub mod block_hash;
pub mod builder;
pub mod filter;
pub mod format;
pub mod index;
pub mod properties;
pub mod reader;

pub use builder::{TableBuilder, TableBuilderOptions, TableSummary};
pub use properties::TableProperties;
pub use reader::{Table, TableIter};
