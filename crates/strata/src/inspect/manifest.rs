//! Reads a manifest (`MANIFEST-<n>`) as the list of edits it logs and the version they build.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::storage::{LocalFs, Storage};
use crate::version::{current_path, Families, Reaper, Version, VersionEdit};
use crate::wal::{LogReader, ReadOutcome};

/// A manifest's decoded contents.
pub struct ManifestDump {
    /// File name, e.g. `MANIFEST-000007`.
    pub name: String,
    /// Every record, in log order (the first is a full snapshot).
    pub edits: Vec<VersionEdit>,
    /// The version the edits build (the default column family's tree).
    pub version: Version,
    /// The column families besides the default one, with their trees.
    pub families: Families,
    /// `(offset, bytes dropped)` when the log ended in a torn tail (only tolerated when asked).
    pub torn_tail: Option<(u64, u64)>,
}

impl ManifestDump {
    /// The oldest log still holding unflushed writes (the last edit that names one); logs
    /// below it were replayed or flushed already.
    pub fn log_number(&self) -> Option<u64> {
        self.edits.iter().filter_map(|e| e.log_number).next_back()
    }
}

/// The manifest `CURRENT` names, read as recovery reads it (a torn tail is tolerated).
pub fn read_manifest(dir: &Path) -> Result<ManifestDump> {
    read_manifest_file(&dir.join(current_manifest(dir)?), true)
}

/// The file name of the manifest `CURRENT` names.
pub fn current_manifest(dir: &Path) -> Result<String> {
    let cur = LocalFs.read_all(&current_path(dir))?;
    std::str::from_utf8(&cur)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| s.starts_with("MANIFEST-") && !s.contains('/'))
        .map(str::to_string)
        .ok_or_else(|| Error::corruption("CURRENT does not name a manifest"))
}

/// Reads one manifest file. With `tolerate_tail` false any damage, even at the end, is an error.
pub fn read_manifest_file(path: &Path, tolerate_tail: bool) -> Result<ManifestDump> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let data = LocalFs.read_all(path)?;
    let mut reader = LogReader::new(&data, name.clone(), tolerate_tail);
    let mut edits = Vec::new();
    while let Some(rec) = reader.next_record()? {
        let edit = VersionEdit::decode(&rec)
            .map_err(|e| Error::corruption(format!("{name}: record {}: {e}", edits.len())))?;
        edits.push(edit);
    }
    let first = edits
        .first()
        .ok_or_else(|| Error::corruption(format!("{name} holds no records")))?;
    if first.format.is_none() {
        return Err(Error::corruption(format!("{name}: missing format record")));
    }
    let num_levels = first.num_levels.unwrap_or(7);
    if num_levels == 0 || num_levels > crate::stats::MAX_LEVELS as u64 {
        return Err(Error::corruption(format!(
            "{name}: {num_levels} levels is out of range"
        )));
    }
    if first.format.as_deref() != Some(crate::version::MANIFEST_FORMAT_V3)
        && edits.iter().any(VersionEdit::has_family_fields)
    {
        return Err(Error::corruption(format!(
            "{name}: column-family fields in a manifest older than v3"
        )));
    }
    let reaper: Arc<Reaper> = Arc::default();
    let mut version = Version::new(num_levels as usize);
    let mut families = Families::default();
    for (i, edit) in edits.iter().enumerate() {
        let at = |e: Error| Error::corruption(format!("{name}: record {i}: {e}"));
        version = version.apply(edit, &reaper).map_err(at)?.0;
        families = families.apply(edit, &reaper).map_err(at)?.0;
    }
    let torn_tail = match reader.outcome() {
        ReadOutcome::Clean => None,
        ReadOutcome::TornTail { offset, dropped } => Some((*offset, *dropped)),
    };
    Ok(ManifestDump {
        name,
        edits,
        version,
        families,
        torn_tail,
    })
}

/// Every `MANIFEST-<n>` file in `dir`, oldest first.
pub fn list_manifests(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out: Vec<(u64, PathBuf)> = LocalFs
        .list(dir)?
        .into_iter()
        .filter_map(|n| {
            let num = n
                .strip_prefix("MANIFEST-")
                .and_then(|d| super::parse_numbered(d, ""))?;
            Some((num, dir.join(n)))
        })
        .collect();
    out.sort();
    Ok(out)
}
