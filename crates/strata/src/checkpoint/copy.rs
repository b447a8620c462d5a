//! Writing a copy's directory from a [`CopyPlan`]: tables linked, WAL prefixes copied, a fresh
//! manifest, the `PARENT` link; all under a temporary name, renamed into place last.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::ParentLink;
use crate::error::{Error, ErrorRepr, Result};
use crate::storage::{copy_prefix, Storage};
use crate::tier::{local_path, Tier};
use crate::version::{write_manifest_copy, FileMeta, VersionEdit};

/// What a copy is made of, decided while the source stood still (or read from its manifest).
pub struct CopyPlan {
    /// The copy's manifest: one snapshot record of the tree and its counters.
    pub snapshot: VersionEdit,
    /// Live WAL files: number, path in the source, and how many of their bytes to copy.
    pub wals: Vec<(u64, PathBuf, u64)>,
    /// The copy holds every write up to this sequence number.
    pub sequence: u64,
}

/// What [`write_copy`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Fast-tier tables linked or copied.
    pub fast_tables: usize,
    /// Their bytes.
    pub fast_bytes: u64,
    /// Capacity-tier tables referenced.
    pub capacity_tables: usize,
    /// Their bytes.
    pub capacity_bytes: u64,
    /// WAL bytes copied.
    pub wal_bytes: u64,
}

impl CopyPlan {
    /// Every table of the snapshot, of every column family.
    pub fn tables(&self) -> impl Iterator<Item = &FileMeta> {
        std::iter::once(&self.snapshot)
            .chain(self.snapshot.family_edits.iter().map(|(_, e)| e))
            .flat_map(|e| {
                e.added
                    .iter()
                    .map(|(_, f)| f)
                    .chain(e.added_to_run.iter().map(|(_, _, f)| f))
            })
    }

    /// The capacity-tier tables the copy refers to.
    pub fn capacity_tables(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .tables()
            .filter(|f| f.tier == Tier::Capacity)
            .map(|f| f.id)
            .collect();
        ids.sort_unstable();
        ids
    }
}

/// Refuses a target that exists (a copy never overwrites anything).
pub(crate) fn check_target(storage: &dyn Storage, to: &Path) -> Result<()> {
    if storage.exists(to)? {
        return Err(ErrorRepr::AlreadyExists(format!(
            "{}: a checkpoint is written to a new directory",
            to.display()
        ))
        .into());
    }
    Ok(())
}

/// Writes the copy `plan` describes into the new directory `to`, linking tables from
/// `src_dir`. A missing source file (deleted by the source meanwhile) is an error whose
/// `is_not_found()` is true: the caller plans again. Nothing is left at `to` on failure.
pub fn write_copy(
    storage: &Arc<dyn Storage>,
    src_dir: &Path,
    plan: &CopyPlan,
    to: &Path,
    link: Option<&ParentLink>,
) -> Result<CopyStats> {
    check_target(storage.as_ref(), to)?;
    let name = to
        .file_name()
        .ok_or_else(|| Error::invalid(format!("{}: not a directory name", to.display())))?;
    let tmp = to.with_file_name(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        super::new_id()
    ));
    let out = fill(storage, src_dir, plan, &tmp, link).and_then(|stats| {
        storage.rename(&tmp, to)?;
        if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
            storage.sync_dir(parent)?;
        }
        Ok(stats)
    });
    if out.is_err() {
        let _ = storage.remove_dir_all(&tmp);
    }
    out
}

fn fill(
    storage: &Arc<dyn Storage>,
    src_dir: &Path,
    plan: &CopyPlan,
    tmp: &Path,
    link: Option<&ParentLink>,
) -> Result<CopyStats> {
    storage.create_dir_all(tmp)?;
    let mut stats = CopyStats::default();
    for f in plan.tables() {
        match f.tier {
            Tier::Fast => {
                storage.link_or_copy(&local_path(src_dir, f.id), &local_path(tmp, f.id))?;
                stats.fast_tables += 1;
                stats.fast_bytes += f.size;
            }
            Tier::Capacity => {
                stats.capacity_tables += 1;
                stats.capacity_bytes += f.size;
            }
        }
    }
    for (number, path, len) in &plan.wals {
        stats.wal_bytes += copy_prefix(
            storage.as_ref(),
            path,
            &tmp.join(format!("{number:06}.log")),
            *len,
        )?;
    }
    // The manifest takes the next free number (above every copied file); the counter moves
    // past it.
    let number = plan
        .snapshot
        .next_file_number
        .unwrap_or(1)
        .max(plan.wals.iter().map(|w| w.0 + 1).max().unwrap_or(1));
    let mut snap = plan.snapshot.clone();
    snap.next_file_number = Some(number + 1);
    write_manifest_copy(storage.as_ref(), tmp, number, &snap)?;
    // Written even with no shared table: it names the source's prefix, which the copy must
    // never be opened on (its sweep would take the source's tables for orphans).
    if let Some(l) = link {
        let mut f = storage.create(&tmp.join(crate::tier::shared::PARENT_FILE))?;
        f.append(&l.encode())?;
        f.sync()?;
    }
    storage.sync_dir(tmp)?;
    Ok(stats)
}

/// Deletes a copy already renamed into place at `to` (its record could not be completed): it
/// is first renamed away, so a crash while deleting never leaves a part of it at the target
/// (where its first open would take it for whole).
pub(crate) fn discard_copy(storage: &dyn Storage, to: &Path) {
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let away = to.with_file_name(format!(".{name}.discard-{}", super::new_id()));
    let gone = storage
        .rename(to, &away)
        .and_then(|()| storage.remove_dir_all(&away));
    if let Err(e) = gone {
        tracing::warn!(dir = %to.display(), error = %e, "could not delete a copy whose record was not completed");
    }
}
