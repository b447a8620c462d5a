//! Creating a backup: a checkpoint of the source in a hold directory, its files uploaded
//! (tables by content name, skipping those already there), a final listing, the document.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::meta::{meta_name, shared_name, BackupFile, BackupMeta, Place, BACKUP_FORMAT};
use super::throttle::Throttle;
use super::{parallel, BackupEngine, BackupInfo, BackupOptions, Done, BACKUP_PROTECTION};
use crate::checkpoint::offline::{self, Hold};
use crate::checkpoint::{
    new_id, now_unix_ms, CheckpointInfo, CheckpointOptions, ParentLink, Registry,
};
use crate::error::{Error, Result};
use crate::storage::object::{CapacityOptions, CapacityTier};
use crate::storage::{default_storage, Storage};
use crate::tier::{local_path, object_name, Tier};
use crate::version::FileMeta;
use crate::Db;

fn checkpoint_options() -> CheckpointOptions {
    CheckpointOptions {
        expires_after: Some(BACKUP_PROTECTION),
        ..Default::default()
    }
}

pub(super) fn from_db(e: &BackupEngine, db: &Db, o: &BackupOptions) -> Result<BackupInfo> {
    let storage = default_storage();
    // In the source's directory (one file system: the checkpoint hard-links its fast tables).
    let hold = Hold::in_source(&storage, db.path())?;
    let copy = hold.dir.join("copy");
    let ck = db.checkpoint_with(&copy, &checkpoint_options())?;
    let out = upload(
        e,
        &storage,
        db.path(),
        &copy,
        &ck,
        db.options().capacity.as_ref(),
        o,
    );
    if let Err(err) = db.release_checkpoint(ck.id) {
        tracing::warn!(checkpoint = ck.id, error = %err, "could not release a backup's checkpoint (it lapses by itself)");
    }
    out
}

pub(super) fn from_dir(
    e: &BackupEngine,
    src: &Path,
    capacity: Option<&CapacityOptions>,
    o: &BackupOptions,
) -> Result<BackupInfo> {
    let storage = default_storage();
    let hold = Hold::in_source(&storage, src)?;
    let copy = hold.dir.join("copy");
    let ck = offline::checkpoint_dir(src, capacity, &copy, &checkpoint_options())?;
    let out = upload(e, &storage, src, &copy, &ck, capacity, o);
    // The record lives where the checkpoint's PARENT says (a copy's source's registry).
    let release = || -> Result<()> {
        let link = read_parent(&storage, &copy)?;
        let registry = match &link {
            Some(l) => {
                let mut c = capacity
                    .cloned()
                    .unwrap_or_else(|| CapacityOptions::new(""));
                c.url = l.capacity_url.clone();
                Registry::new(
                    src,
                    storage.clone(),
                    Some(CapacityTier::open(&c, None, Default::default())?),
                )
            }
            None => Registry::new(src, storage.clone(), None),
        };
        registry.remove(ck.id).map(|_| ())
    };
    if let Err(err) = release() {
        tracing::warn!(checkpoint = ck.id, error = %err, "could not release a backup's checkpoint (it lapses by itself)");
    }
    out
}

fn read_parent(storage: &Arc<dyn Storage>, copy: &Path) -> Result<Option<ParentLink>> {
    let p = copy.join(crate::tier::shared::PARENT_FILE);
    match storage.read_all(&p) {
        Ok(b) => ParentLink::decode(&b, &p.display().to_string()).map(Some),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// What identifies a table in its source without reading it.
fn fingerprint(f: &FileMeta) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for n in [
        f.id,
        f.size,
        f.smallest_seq,
        f.largest_seq,
        f.num_entries,
        f.num_deletions,
    ] {
        h.update(&n.to_le_bytes());
    }
    for k in [&f.smallest, &f.largest] {
        h.update(&(k.len() as u64).to_le_bytes());
        h.update(k);
    }
    format!("{:032x}", h.digest128())
}

enum Job {
    Table(FileMeta),
    Private(String),
}

/// Uploads the checkpoint at `copy` and writes the document.
fn upload(
    e: &BackupEngine,
    storage: &Arc<dyn Storage>,
    src: &Path,
    copy: &Path,
    ck: &CheckpointInfo,
    capacity: Option<&CapacityOptions>,
    o: &BackupOptions,
) -> Result<BackupInfo> {
    let dump = crate::inspect::read_manifest(copy)?;
    // Every column family's tables (the copy's manifest names them all).
    let tables: Vec<FileMeta> = dump
        .version
        .all_files()
        .chain(dump.families.all_files())
        .map(|f| f.meta.clone())
        .collect();
    // Where the capacity-tier tables are read: the source's tier, and for a copy that still
    // shares tables with its own source, that source's tier for those.
    let link = read_parent(storage, copy)?;
    let needs_capacity = tables.iter().any(|f| f.tier == Tier::Capacity);
    let own_tier = match capacity {
        Some(c) if needs_capacity => Some(CapacityTier::open(c, None, Default::default())?),
        _ => None,
    };
    let parent_tier = match &link {
        Some(l) if !l.tables.is_empty() => {
            let mut c = capacity
                .cloned()
                .unwrap_or_else(|| CapacityOptions::new(""));
            c.url = l.capacity_url.clone();
            Some(CapacityTier::open(&c, None, Default::default())?)
        }
        _ => None,
    };
    let shared_ids: HashSet<u64> = link.iter().flat_map(|l| l.tables.iter().copied()).collect();
    let tier_of = |id: u64| -> Result<&Arc<CapacityTier>> {
        let t = if shared_ids.contains(&id) {
            parent_tier.as_ref()
        } else {
            own_tier.as_ref()
        };
        t.ok_or_else(|| {
            Error::invalid_argument(
                "the database has capacity-tier tables: give its capacity tier (--capacity URL)",
            )
        })
    };

    // What is there already: content names, and tables earlier backups of this very
    // database fingerprinted (a clone or restored copy numbers its tables as its source did:
    // only the identity tells them apart).
    let identity = crate::db::identity::read_identity(storage.as_ref(), src)?;
    let present: HashSet<String> = e.tier.list("shared")?.into_iter().map(|(n, _)| n).collect();
    let documents = e.documents()?;
    let newest = documents.last().map_or(0, |(id, _)| *id);
    let mut known: HashMap<String, BackupFile> = HashMap::new();
    for (_, m) in documents {
        let Ok(m) = m else { continue };
        if identity.is_none() || m.source_identity != identity {
            continue;
        }
        for f in m.files {
            if f.fingerprint.is_some() && present.contains(&f.object) {
                known.insert(f.fingerprint.clone().unwrap_or_default(), f);
            }
        }
    }

    let mut jobs: Vec<Job> = tables.into_iter().map(Job::Table).collect();
    let mut private_bytes = 0;
    for name in storage.list(copy)? {
        // The copy's manifest, CURRENT and WAL files; its tables are jobs already, and its
        // PARENT belongs to the checkpoint (a restored database is independent).
        if !(name == "CURRENT" || name.starts_with("MANIFEST-") || name.ends_with(".log")) {
            continue;
        }
        private_bytes += storage.open(&copy.join(&name))?.size();
        jobs.push(Job::Private(name));
    }
    let total = jobs
        .iter()
        .map(|j| match j {
            Job::Table(f) => f.size,
            Job::Private(_) => 0,
        })
        .sum::<u64>()
        + private_bytes;
    let done = Done::new(total, o.progress.clone());
    let throttle = Throttle::new(o.rate_limit);
    let token = format!("private/{}", new_id());
    let put = |name: &str, bytes: Bytes| -> Result<()> {
        throttle.take(bytes.len() as u64);
        e.tier.put(&e.tier.path(name), bytes)
    };
    let results = parallel(&jobs, o.concurrency, |job| -> Result<(BackupFile, bool)> {
        match job {
            Job::Table(f) => {
                let name = format!("{:06}.sst", f.id);
                let place = match f.tier {
                    Tier::Fast => Place::Dir,
                    Tier::Capacity => Place::Capacity,
                };
                let fp = fingerprint(f);
                if let Some(k) = known.get(&fp).filter(|k| k.size == f.size) {
                    done.add(f.size);
                    return Ok((
                        BackupFile {
                            restore_as: name,
                            place,
                            ..k.clone()
                        },
                        false,
                    ));
                }
                let bytes = match f.tier {
                    Tier::Fast => Bytes::from(storage.read_all(&local_path(copy, f.id))?),
                    Tier::Capacity => {
                        let t = tier_of(f.id)?;
                        t.get_whole(&t.path(&object_name(f.id)), None)?
                            .ok_or_else(|| {
                                Error::corruption(format!(
                                    "capacity table {} the checkpoint names is missing from its \
                                     tier",
                                    f.id
                                ))
                            })?
                    }
                };
                if bytes.len() as u64 != f.size {
                    return Err(Error::corruption(format!(
                        "table {} is {} bytes, its manifest says {}",
                        f.id,
                        bytes.len(),
                        f.size
                    )));
                }
                let crc = crc32c::crc32c(&bytes);
                let object = shared_name(crc, f.size);
                let new = !present.contains(&object);
                if new {
                    put(&object, bytes)?;
                }
                done.add(f.size);
                Ok((
                    BackupFile {
                        object,
                        restore_as: name,
                        place,
                        size: f.size,
                        crc32c: crc,
                        fingerprint: Some(fp),
                    },
                    new,
                ))
            }
            Job::Private(name) => {
                let bytes = Bytes::from(storage.read_all(&copy.join(name))?);
                let size = bytes.len() as u64;
                let crc = crc32c::crc32c(&bytes);
                let object = format!("{token}/{name}");
                put(&object, bytes)?;
                done.add(size);
                Ok((
                    BackupFile {
                        object,
                        restore_as: name.clone(),
                        place: Place::Dir,
                        size,
                        crc32c: crc,
                        fingerprint: None,
                    },
                    true,
                ))
            }
        }
    })?;

    // Everything the document will name must be there now (a purge running beside this
    // backup, against the rule of one writer, could have deleted a table it found).
    let mut listed: HashSet<String> = e.tier.list("shared")?.into_iter().map(|(n, _)| n).collect();
    listed.extend(e.tier.list(&token)?.into_iter().map(|(n, _)| n));
    if let Some((f, _)) = results.iter().find(|(f, _)| !listed.contains(&f.object)) {
        return Err(Error::invalid(format!(
            "{} disappeared from the backup URL while the backup was made (was a purge or \
             delete running?): the backup is abandoned",
            f.object
        )));
    }
    let (new_files, new_bytes) = results
        .iter()
        .filter(|(_, new)| *new)
        .fold((0, 0), |(n, b), (f, _)| (n + 1, b + f.size));
    let mut meta = BackupMeta {
        format: BACKUP_FORMAT,
        id: (newest + 1).max(e.next_id()?),
        created_unix_ms: now_unix_ms(),
        sequence: ck.sequence,
        source_dir: src.display().to_string(),
        source_capacity: capacity.map(|c| c.url.clone()),
        source_identity: identity,
        app_metadata: o.app_metadata.clone(),
        files: results.into_iter().map(|(f, _)| f).collect(),
        new_files,
        new_bytes,
    };
    // The document makes the backup; an id taken meanwhile (another writer, against the rule)
    // makes this one take the next.
    loop {
        let name = meta_name(meta.id);
        let path = e.tier.path(&name);
        let doc = Bytes::from(meta.encode());
        if e.tier.put_if_absent(&path, doc.clone(), None)? {
            break;
        }
        // An earlier attempt of this very request may have created it.
        if e.tier.get_whole(&path, None)?.as_ref() == Some(&doc) {
            break;
        }
        meta.id += 1;
    }
    if let Err(err) = e.tier.put(
        &e.tier.path(super::meta::NEXT_ID),
        Bytes::from((meta.id + 1).to_string()),
    ) {
        tracing::warn!(error = %err, "could not record the next backup id (the next backup takes the newest's plus one)");
    }
    tracing::info!(
        backup = meta.id,
        sequence = meta.sequence,
        files = meta.files.len(),
        new_bytes = meta.new_bytes,
        "backup created"
    );
    Ok(BackupInfo::from(&meta))
}
