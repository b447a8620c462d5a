//! Verifying and restoring a backup: every file re-read and checked against the document's
//! size and CRC32C; a restore writes the database directory under a temporary name, uploads
//! capacity-tier tables to an empty prefix, and renames the directory into place last.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;
use parking_lot::Mutex;
use serde::Serialize;

use super::meta::{BackupFile, BackupMeta, Place};
use super::throttle::Throttle;
use super::{parallel, BackupEngine, BackupOptions, Done};
use crate::checkpoint::new_id;
use crate::error::{Error, Result};
use crate::storage::default_storage;
use crate::storage::object::{CapacityOptions, CapacityTier};

/// What verifying one backup found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    /// The backup.
    pub id: u64,
    /// Files checked.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files that are missing or differ from the document (or the document itself).
    pub damaged: Vec<Damage>,
}

/// One damaged file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// Its object name under the backup URL.
    pub object: String,
    /// What is wrong.
    pub error: String,
}

/// What a restore wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RestoreInfo {
    /// The backup restored.
    pub id: u64,
    /// The restored database holds every write of its source up to this sequence number.
    pub sequence: u64,
    /// Its directory.
    pub path: String,
    /// Its capacity tier, when it has tables there.
    pub capacity: Option<String>,
    /// Files written to the directory.
    pub dir_files: usize,
    /// Tables written to the capacity tier.
    pub capacity_tables: usize,
    /// Bytes written in all.
    pub bytes: u64,
}

/// A file of the backup, downloaded and checked against the document.
fn fetch(e: &BackupEngine, f: &BackupFile, throttle: &Throttle) -> Result<Bytes> {
    throttle.take(f.size);
    let bytes = e
        .tier
        .get_whole(&e.tier.path(&f.object), None)?
        .ok_or_else(|| Error::corruption(format!("{}: missing", f.object)))?;
    check(f, &bytes)?;
    Ok(bytes)
}

fn check(f: &BackupFile, bytes: &[u8]) -> Result<()> {
    if bytes.len() as u64 != f.size {
        return Err(Error::corruption(format!(
            "{}: {} bytes, the backup's document says {}",
            f.object,
            bytes.len(),
            f.size
        )));
    }
    let crc = crc32c::crc32c(bytes);
    if crc != f.crc32c {
        return Err(Error::corruption(format!(
            "{}: checksum mismatch (document {:08x}, file {crc:08x})",
            f.object, f.crc32c
        )));
    }
    Ok(())
}

pub(super) fn verify(
    e: &BackupEngine,
    id: Option<u64>,
    o: &BackupOptions,
) -> Result<Vec<VerifyReport>> {
    let docs = match id {
        Some(id) => match e.chosen(Some(id)) {
            Err(err) if !err.is_corruption() => return Err(err),
            doc => vec![(id, doc)],
        },
        None => e.documents()?,
    };
    let throttle = Throttle::new(o.rate_limit);
    // A file several backups share is read once.
    let seen: Mutex<HashMap<String, Option<String>>> = Mutex::new(HashMap::new());
    let mut reports = Vec::new();
    for (id, doc) in docs {
        let m = match doc {
            Ok(m) => m,
            Err(err) => {
                reports.push(VerifyReport {
                    id,
                    files: 1,
                    bytes: 0,
                    damaged: vec![Damage {
                        object: super::meta::meta_name(id),
                        error: err.to_string(),
                    }],
                });
                continue;
            }
        };
        let done = Done::new(m.bytes(), o.progress.clone());
        let outcomes = parallel(&m.files, o.concurrency, |f| -> Result<Option<String>> {
            if let Some(r) = seen.lock().get(&f.object) {
                done.add(f.size);
                return Ok(r.clone());
            }
            let r = match fetch(e, f, &throttle) {
                Ok(_) => None,
                Err(err) if err.is_corruption() => Some(err.to_string()),
                Err(err) => return Err(err),
            };
            seen.lock().insert(f.object.clone(), r.clone());
            done.add(f.size);
            Ok(r)
        })?;
        let report = VerifyReport {
            id,
            files: m.files.len(),
            bytes: m.bytes(),
            damaged: m
                .files
                .iter()
                .zip(outcomes)
                .filter_map(|(f, r)| {
                    r.map(|error| Damage {
                        object: f.object.clone(),
                        error,
                    })
                })
                .collect(),
        };
        // Files missing because a purge or delete removed the backup meanwhile are not damage.
        if !report.damaged.is_empty() && e.document(id)?.is_none() {
            continue;
        }
        reports.push(report);
    }
    Ok(reports)
}

pub(super) fn restore(
    e: &BackupEngine,
    id: Option<u64>,
    to: &Path,
    capacity: Option<&CapacityOptions>,
    o: &BackupOptions,
) -> Result<RestoreInfo> {
    let storage = default_storage();
    crate::checkpoint::copy::check_target(storage.as_ref(), to)?;
    let m: BackupMeta = e.chosen(id)?;
    let mut names = std::collections::HashSet::new();
    for f in &m.files {
        if !super::meta::valid_restore_name(f.place, &f.restore_as)
            || !names.insert((f.place, f.restore_as.as_str()))
        {
            return Err(Error::corruption(format!(
                "backup {}'s document names {:?} ({:?}) to restore, which is not a database \
                 file or is named twice",
                m.id, f.restore_as, f.place
            )));
        }
    }
    let capacity_tables = m
        .files
        .iter()
        .filter(|f| f.place == Place::Capacity)
        .count();
    let tier = match capacity {
        Some(c) if capacity_tables > 0 => {
            let t = CapacityTier::open(c, None, Default::default())?;
            if !t.list("tables")?.is_empty() {
                return Err(Error::invalid_argument(format!(
                    "{} already holds tables: restore into an empty capacity prefix",
                    c.url
                )));
            }
            Some(t)
        }
        None if capacity_tables > 0 => {
            return Err(Error::invalid_argument(format!(
                "backup {} has {capacity_tables} capacity-tier tables: give the restored \
                 database a capacity tier (--capacity URL, an empty prefix)",
                m.id
            )))
        }
        _ => None,
    };
    let name = to.file_name().ok_or_else(|| {
        Error::invalid_argument(format!("{}: not a directory name", to.display()))
    })?;
    let tmp = to.with_file_name(format!(".{}.partial-{}", name.to_string_lossy(), new_id()));
    storage.create_dir_all(&tmp)?;
    let throttle = Throttle::new(o.rate_limit);
    let done = Done::new(m.bytes(), o.progress.clone());
    let uploaded: Mutex<Vec<object_store::path::Path>> = Mutex::new(Vec::new());
    let written = parallel(&m.files, o.concurrency, |f| -> Result<()> {
        let bytes = fetch(e, f, &throttle)?;
        match f.place {
            Place::Dir => {
                let mut out = storage.create(&tmp.join(&f.restore_as))?;
                out.append(&bytes)?;
                out.sync()?;
            }
            Place::Capacity => {
                let t = tier
                    .as_ref()
                    .ok_or_else(|| Error::invalid("no capacity tier"))?;
                let id = f
                    .restore_as
                    .strip_suffix(".sst")
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| {
                        Error::corruption(format!(
                            "the backup's document names a capacity table {:?}",
                            f.restore_as
                        ))
                    })?;
                let path = t.path(&crate::tier::object_name(id));
                uploaded.lock().push(path.clone());
                t.put(&path, bytes)?;
            }
        }
        done.add(f.size);
        Ok(())
    })
    .and_then(|_| {
        storage.sync_dir(&tmp)?;
        storage.rename(&tmp, to)?;
        if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
            storage.sync_dir(parent)?;
        }
        Ok(())
    });
    if let Err(err) = written {
        // Leave the capacity prefix empty again, so the restore can be run again on it.
        let _ = storage.remove_dir_all(&tmp);
        if let Some(t) = &tier {
            for path in uploaded.into_inner() {
                if let Err(e) = t.delete(&path) {
                    tracing::warn!(object = %path, error = %e, "could not delete a table a failed restore uploaded");
                }
            }
        }
        return Err(err);
    }
    tracing::info!(backup = m.id, path = %to.display(), "backup restored");
    Ok(RestoreInfo {
        id: m.id,
        sequence: m.sequence,
        path: to.display().to_string(),
        capacity: capacity
            .filter(|_| capacity_tables > 0)
            .map(|c| c.url.clone()),
        dir_files: m.files.len() - capacity_tables,
        capacity_tables,
        bytes: m.bytes(),
    })
}
