//! The shape of the LSM tree and its durable history.
//!
//! Owns [`FileMeta`] (what a table holds), [`SortedRun`] and [`Version`] (for each level, a list
//! of sorted runs: L0 holds one run per flushed table, newest first; deeper levels hold one run
//! under leveled compaction), [`VersionEdit`] (a delta, logged to the manifest) and
//! [`VersionSet`] (the current version, the manifest writer and `CURRENT`), and [`Families`]
//! (the column families besides the default one, each with its own tree).
//!
//! Invariants: versions are immutable and reference-counted, so readers never wait on
//! compaction; a table file is deleted only after no live version references it (see
//! [`TableFile`]); within a run files are sorted and disjoint. Depends on `storage`, `wal`
//! (log format), `types`, `coding`; never on `db`.

mod edit;
mod family;
mod file_meta;
mod set;
#[allow(clippy::module_inception)]
mod version;

pub use edit::{
    CompactionStyle, FamilyDescriptor, VersionEdit, MANIFEST_FORMAT, MANIFEST_FORMAT_V2,
    MANIFEST_FORMAT_V3,
};
pub use family::{Families, FamilyTree, DEFAULT_FAMILY, DEFAULT_FAMILY_NAME};
pub use file_meta::{FileMeta, Reaper, TableFile};
pub use set::{
    current_path, manifest_path, snapshot_of, write_manifest_copy, SnapshotCounters, VersionSet,
};
pub use version::{Level, SortedRun, Version};
