//! # Strata
//!
//! An embedded LSM-tree key-value store for tiered storage. This crate is the engine: open a
//! [`Db`] on a directory and use `put`, `get`, `delete`, `delete_range`, atomic
//! [`WriteBatch`]es, [`Snapshot`]s and bidirectional [`DbIterator`]s.
//!
//! Module map (see the team's design document, `shared/DESIGN.md` beside this repository, and
//! `docs/`): `wal` (log format), `memtable`, `sst` (table format), `cache`
//! (block and table caches), `version` (levels, sorted runs, manifest), `compaction` (pickers,
//! job description, executor), `iter` (merging and user iterators), `storage` (all file I/O,
//! fault injection), `db` (the handle, write and read paths, background work).

#![warn(missing_docs)]

pub mod backup;
pub mod batch;
pub mod cache;
pub mod checkpoint;
mod coding;
pub mod compaction;
pub mod db;
pub mod error;
pub mod inspect;
pub mod iter;
pub mod memtable;
pub mod merge;
pub mod metrics;
pub mod options;
pub mod range_del;
pub mod recovery;
pub mod replica;
pub mod sst;
pub mod stats;
pub mod storage;
pub mod tier;
pub mod txn;
pub mod types;
pub mod version;
pub mod wal;

pub use batch::WriteBatch;
pub use compaction::{CompactionFilter, FilterDecision};
pub use db::{CfOptions, CloneSource, ColumnFamily, Db, RunInfo, Snapshot};
pub use error::{Error, ErrorKind, Result};
pub use iter::DbIterator;
pub use merge::MergeOperator;
pub use options::{Compression, Options, ReadOptions, WriteOptions, MAX_KEY_SIZE, MAX_VALUE_SIZE};
pub use stats::{DbStats, ExtendedWalStats, ForestStats, LevelStats};
pub use txn::{
    OptimisticTransactionOptions, PessimisticTransaction, Transaction, TransactionDb,
    TransactionDbOptions, TransactionIterator, TransactionOptions,
};
pub use version::CompactionStyle;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The user's guide (`docs/`, an mdBook): every page with Rust code, compiled and run as
/// doctests, so the guide's examples keep compiling (scripts/check-book.py checks the list).
#[cfg(doctest)]
mod book {
    #[doc = include_str!("../../../docs/getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../../../docs/library.md")]
    pub struct Library;
    #[doc = include_str!("../../../docs/mechanisms/hotrap.md")]
    pub struct Hotrap;
    #[doc = include_str!("../../../docs/mechanisms/lap-cache.md")]
    pub struct LapCache;
    #[doc = include_str!("../../../docs/mechanisms/logstore.md")]
    pub struct Logstore;
    #[doc = include_str!("../../../docs/mechanisms/mashmeta.md")]
    pub struct Mashmeta;
    #[doc = include_str!("../../../docs/mechanisms/node-loss-recovery.md")]
    pub struct NodeLossRecovery;
    #[doc = include_str!("../../../docs/mechanisms/remote-compaction.md")]
    pub struct RemoteCompaction;
    #[doc = include_str!("../../../docs/mechanisms/replicas.md")]
    pub struct Replicas;
    #[doc = include_str!("../../../docs/mechanisms/split-forest.md")]
    pub struct SplitForest;
    #[doc = include_str!("../../../docs/operating/checkpoints.md")]
    pub struct Checkpoints;
    #[doc = include_str!("../../../docs/operating/configuration.md")]
    pub struct Configuration;
    #[doc = include_str!("../../../docs/operating/failures.md")]
    pub struct Failures;
    #[doc = include_str!("../../../docs/operating/metrics.md")]
    pub struct Metrics;
    #[doc = include_str!("../../../docs/operating/tuning.md")]
    pub struct Tuning;
}
