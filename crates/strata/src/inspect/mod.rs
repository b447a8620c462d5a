//! Read-only access to a database's files for tools (`strata inspect`), without opening the
//! database.
//!
//! Owns the decoders' public, read-only entry points: the manifest as a list of edits and the
//! version they build ([`read_manifest`]), one table's properties, index and entries
//! ([`TableOpener`], [`TableDump`]), a WAL's records ([`read_wal`]), where each version of a key
//! lives ([`locate_key`]), a full checksum pass over both tiers ([`verify`]) and LogStore's
//! table temperatures ([`read_temperatures`]).
//!
//! Invariants: nothing here takes the directory lock, writes, renames or deletes a database
//! file, so it works beside a process that has the database open and on a database that will
//! not open; every decode error is returned (or reported by [`verify`]), never unwrapped.
//! Depends on `version` (edits, versions), `sst` (the table reader), `wal` (the log reader),
//! `batch`, `storage`, `tier` (table names) — only through their public APIs; never on `db` or
//! `compaction`, and the engine never depends on this module.

mod locate;
mod manifest;
mod tables;
mod verify;
mod wal;

pub use locate::{locate_key, KeyVersion, KeyVersionSource, Located};
pub use manifest::{
    current_manifest, list_manifests, read_manifest, read_manifest_file, ManifestDump,
};
pub use tables::{for_each_entry, index_of, TableDump, TableEntry, TableOpener};
pub use verify::{verify, VerifyFinding, VerifyReport};
pub use wal::{list_wals, read_wal, torn_tail_allowed, WalDump, WalRecord};

/// LogStore's table temperatures (`TEMPERATURE`): `(decayed reads, own reads)` by table id;
/// `None` when the database has none (static placement).
pub fn read_temperatures(
    dir: &std::path::Path,
) -> crate::Result<Option<std::collections::HashMap<u64, (f64, f64)>>> {
    let storage = crate::storage::default_storage();
    crate::tier::temperature::file::read(storage.as_ref(), dir)
}

/// Parses `<digits><suffix>` (e.g. `000012.log`) into its number.
pub(crate) fn parse_numbered(name: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_suffix(suffix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
