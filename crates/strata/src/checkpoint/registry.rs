//! [`Registry`]: where a database records its live checkpoints and clones.
//!
//! With a capacity tier the records are objects `checkpoints/<id>.json` under its prefix: they
//! sit beside the tables they protect, survive the loss of the fast disk, and can be read and
//! updated by any process that can reach the store (the CLI taking a checkpoint of a database
//! a server has open, a clone on another machine releasing tables). Without one they are files
//! in `<dir>/checkpoints/` (fast-tier tables need no protection: a copy holds hard links).
//!
//! Each record is written whole (a PUT or a file renamed into place), so a reader sees an old
//! or a new record, never a mix. Garbage collection reads the registry afresh before each
//! batch of capacity-tier deletions (`protected`). Depends on `storage` and `record`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::record::CheckpointRecord;
use crate::error::{Error, ErrorRepr, Result};
use crate::storage::object::CapacityTier;
use crate::storage::Storage;

/// The directory (or object prefix) records live under.
pub const REGISTRY_DIR: &str = "checkpoints";

enum Backend {
    Capacity(Arc<CapacityTier>),
    Local {
        storage: Arc<dyn Storage>,
        dir: PathBuf,
    },
}

/// A database's checkpoint registry.
pub struct Registry {
    backend: Backend,
}

fn record_name(id: u64) -> String {
    format!("{REGISTRY_DIR}/{id:020}.json")
}

fn parse_name(name: &str) -> Option<u64> {
    let stem = name.rsplit('/').next()?.strip_suffix(".json")?;
    (!stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

impl Registry {
    /// The registry of the database in `dir` with capacity tier `capacity`.
    pub fn new(dir: &Path, storage: Arc<dyn Storage>, capacity: Option<Arc<CapacityTier>>) -> Self {
        let backend = match capacity {
            Some(c) => Backend::Capacity(c),
            None => Backend::Local {
                storage,
                dir: dir.join(REGISTRY_DIR),
            },
        };
        Registry { backend }
    }

    /// Where the records live, for messages.
    pub fn location(&self) -> String {
        match &self.backend {
            Backend::Capacity(c) => c.path(REGISTRY_DIR).to_string(),
            Backend::Local { dir, .. } => dir.display().to_string(),
        }
    }

    /// Adds a new record; `AlreadyExists` if its id is taken.
    pub fn register(&self, rec: &CheckpointRecord) -> Result<()> {
        let name = record_name(rec.id);
        let created = match &self.backend {
            Backend::Capacity(c) => {
                c.put_if_absent(&c.path(&name), Bytes::from(rec.encode()), None)?
            }
            Backend::Local { storage, dir } => {
                storage.create_dir_all(dir)?;
                let path = dir.join(format!("{:020}.json", rec.id));
                if storage.exists(&path)? {
                    false
                } else {
                    write_local(storage.as_ref(), dir, &path, &rec.encode())?;
                    true
                }
            }
        };
        if !created {
            return Err(ErrorRepr::AlreadyExists(format!("checkpoint {}", rec.id)).into());
        }
        Ok(())
    }

    /// Replaces an existing record (a checkpoint completed, a clone that refers to fewer
    /// tables).
    pub fn update(&self, rec: &CheckpointRecord) -> Result<()> {
        let name = record_name(rec.id);
        match &self.backend {
            Backend::Capacity(c) => c.put(&c.path(&name), Bytes::from(rec.encode())),
            Backend::Local { storage, dir } => write_local(
                storage.as_ref(),
                dir,
                &dir.join(format!("{:020}.json", rec.id)),
                &rec.encode(),
            ),
        }
    }

    /// Deletes record `id` (without decoding it: a damaged record can be released); `true` if
    /// there was one.
    pub fn remove(&self, id: u64) -> Result<bool> {
        let existed = match &self.backend {
            Backend::Capacity(c) => c.get_whole(&c.path(&record_name(id)), None)?.is_some(),
            Backend::Local { storage, dir } => {
                storage.exists(&dir.join(format!("{id:020}.json")))?
            }
        };
        match &self.backend {
            Backend::Capacity(c) => c.delete(&c.path(&record_name(id)))?,
            Backend::Local { storage, dir } => {
                storage.remove(&dir.join(format!("{id:020}.json")))?;
                storage.sync_dir(dir)?;
            }
        }
        Ok(existed)
    }

    /// Record `id`, if there is one.
    pub fn get(&self, id: u64) -> Result<Option<CheckpointRecord>> {
        self.get_until(id, None)
    }

    /// [`Registry::get`], with no object-store request sent or left running past `deadline`.
    pub fn get_until(
        &self,
        id: u64,
        deadline: Option<Instant>,
    ) -> Result<Option<CheckpointRecord>> {
        let name = record_name(id);
        let bytes = match &self.backend {
            Backend::Capacity(c) => c.get_whole(&c.path(&name), deadline)?.map(|b| b.to_vec()),
            Backend::Local { storage, dir } => {
                let p = dir.join(format!("{id:020}.json"));
                match storage.read_all(&p) {
                    Ok(b) => Some(b),
                    Err(e) if e.is_not_found() => None,
                    Err(e) => return Err(e),
                }
            }
        };
        bytes
            .map(|b| CheckpointRecord::decode(&b, &name))
            .transpose()
    }

    /// Every record, complete or not, expired or not, oldest first. A record that does not
    /// decode is an error: garbage collection must not guess what it protected.
    pub fn list(&self) -> Result<Vec<CheckpointRecord>> {
        self.list_until(None)
    }

    /// [`Registry::list`], with no object-store request sent or left running past `deadline`.
    pub fn list_until(&self, deadline: Option<Instant>) -> Result<Vec<CheckpointRecord>> {
        let ids: Vec<u64> = match &self.backend {
            Backend::Capacity(c) => c
                .list_until(REGISTRY_DIR, deadline)?
                .into_iter()
                .filter_map(|(n, _)| parse_name(&n))
                .collect(),
            Backend::Local { storage, dir } => {
                if !storage.exists(dir)? {
                    return Ok(Vec::new());
                }
                storage
                    .list(dir)?
                    .iter()
                    .filter_map(|n| parse_name(n))
                    .collect()
            }
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            // Released between the listing and the read: nothing to protect.
            if let Some(r) = self.get_until(id, deadline)? {
                if r.id != id {
                    return Err(Error::corruption(format!(
                        "{} holds the record of checkpoint {}",
                        record_name(id),
                        r.id
                    )));
                }
                out.push(r);
            }
        }
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    /// The capacity-tier tables unexpired records protect at `now_ms`, after deleting the
    /// records that expired; reads end by `deadline` (an error then: nothing is known).
    pub fn protected(&self, now_ms: u64, deadline: Option<Instant>) -> Result<HashSet<u64>> {
        let mut set = HashSet::new();
        for r in self.list_until(deadline)? {
            if r.expired(now_ms) {
                tracing::info!(
                    checkpoint = r.id,
                    "checkpoint expired: releasing its tables"
                );
                self.remove(r.id)?;
            } else {
                set.extend(r.tables.iter().copied());
            }
        }
        Ok(set)
    }
}

fn write_local(storage: &dyn Storage, dir: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    storage.create_dir_all(dir)?;
    let tmp = path.with_extension("json.tmp");
    let mut f = storage.create(&tmp)?;
    f.append(bytes)?;
    f.sync()?;
    drop(f);
    storage.rename(&tmp, path)?;
    storage.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::super::record::{CheckpointKind, CHECKPOINT_FORMAT};
    use super::*;

    fn rec(id: u64, tables: Vec<u64>, expires: Option<u64>) -> CheckpointRecord {
        CheckpointRecord {
            format: CHECKPOINT_FORMAT,
            id,
            kind: CheckpointKind::Checkpoint,
            complete: true,
            created_unix_ms: 0,
            expires_unix_ms: expires,
            sequence: 0,
            path: String::new(),
            tables,
            expires_after_ms: None,
        }
    }

    fn registries(dir: &Path) -> Vec<Registry> {
        let storage = crate::storage::default_storage();
        let url = format!("memory://registry-{}", dir.display());
        let tier = CapacityTier::open(
            &crate::storage::object::CapacityOptions::new(url),
            None,
            Default::default(),
        )
        .unwrap();
        vec![
            Registry::new(dir, storage.clone(), None),
            Registry::new(dir, storage, Some(tier)),
        ]
    }

    #[test]
    fn register_update_release_and_expire() {
        let d = tempfile::tempdir().unwrap();
        for reg in registries(d.path()) {
            assert!(reg.list().unwrap().is_empty(), "{}", reg.location());
            reg.register(&rec(2, vec![10, 11], None)).unwrap();
            reg.register(&rec(1, vec![12], Some(50))).unwrap();
            let e = reg.register(&rec(2, vec![], None)).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::AlreadyExists);
            let ids: Vec<u64> = reg.list().unwrap().iter().map(|r| r.id).collect();
            assert_eq!(ids, vec![1, 2]);
            reg.update(&rec(2, vec![11], None)).unwrap();
            assert_eq!(reg.get(2).unwrap().unwrap().tables, vec![11]);
            let p = reg.protected(49, None).unwrap();
            assert_eq!(p, [11, 12].into_iter().collect());
            // Record 1 expires at 50: it is deleted and protects nothing.
            assert_eq!(reg.protected(50, None).unwrap(), [11].into_iter().collect());
            assert!(reg.get(1).unwrap().is_none());
            assert!(reg.remove(2).unwrap());
            assert!(!reg.remove(2).unwrap());
            assert!(reg.protected(0, None).unwrap().is_empty());
        }
    }

    #[test]
    fn a_damaged_record_is_an_error_not_an_empty_set() {
        let d = tempfile::tempdir().unwrap();
        let reg = &registries(d.path())[0];
        reg.register(&rec(3, vec![1], None)).unwrap();
        std::fs::write(
            d.path().join("checkpoints").join(format!("{:020}.json", 3)),
            b"{",
        )
        .unwrap();
        assert!(reg.protected(0, None).unwrap_err().is_corruption());
    }
}
