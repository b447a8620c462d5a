//! [`SharedTables`]: the capacity-tier tables a checkpoint or clone shares with the database it
//! was taken from. They are read from the source's capacity tier, never written or deleted
//! there; the copy's own tables go to its own capacity prefix.
//!
//! The `PARENT` file in the copy's directory lists the shared tables, the source's record in
//! the source's registry protects them. When the copy's compactions rewrite a shared table it
//! drops it from both (`release`): first from `PARENT` (so a crash never leaves the copy
//! naming a table the source may delete), then from the record; the last release deletes the
//! record, and the copy is independent. `PARENT` itself stays: it names the source's prefix,
//! which the copy is never opened on (its orphan sweep would take the source's tables for its
//! own orphans). A copy whose record is gone is refused at open; one whose record is incomplete
//! (its writer stopped after renaming the copy into place) completes the record. Depends on
//! `checkpoint` (the documents and the registry) and `storage`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::checkpoint::{ParentLink, Registry};
use crate::error::{Error, Result};
use crate::stats::TierStats;
use crate::storage::object::{CapacityOptions, CapacityTier};
use crate::storage::Storage;

/// The name of the file that links a copy to its source.
pub const PARENT_FILE: &str = "PARENT";

/// An incomplete record is completed at its copy's open only with at least this long left
/// before it lapses, incomplete and completed (room for clock skew between the copy's host
/// and the source's).
const ROLL_FORWARD_MARGIN_MS: u64 = 10 * 60 * 1000;

/// Whether the incomplete record `r` may be completed at `now_ms`: its protection, as it is
/// and as completing it would make it, lasts at least [`ROLL_FORWARD_MARGIN_MS`] more.
fn can_complete(r: &crate::checkpoint::CheckpointRecord, now_ms: u64) -> bool {
    let lasts =
        |e: Option<u64>| e.is_none_or(|e| e > now_ms.saturating_add(ROLL_FORWARD_MARGIN_MS));
    lasts(r.expires_unix_ms) && lasts(r.clone().completed().expires_unix_ms)
}

/// Tables a copy shares with its source.
pub struct SharedTables {
    tier: Arc<CapacityTier>,
    registry: Registry,
    link: Mutex<ParentLink>,
    dir: PathBuf,
    storage: Arc<dyn Storage>,
}

impl SharedTables {
    /// Reads `dir`'s `PARENT` file, if any, and opens the source's capacity tier with `own`'s
    /// settings (emulation, retries) but the source's URL. `own` is the copy's own capacity
    /// tier: it must exist and differ from the source's, since the copy's new tables must not
    /// land among the source's (both number tables from the same point on).
    pub fn open(
        dir: &Path,
        storage: &Arc<dyn Storage>,
        own: Option<&CapacityOptions>,
        stats: Arc<TierStats>,
    ) -> Result<Option<Arc<SharedTables>>> {
        let path = dir.join(PARENT_FILE);
        let bytes = match storage.read_all(&path) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        let link = ParentLink::decode(&bytes, &path.display().to_string())?;
        match own {
            None => {
                return Err(Error::invalid(format!(
                    "{} shares capacity-tier tables with the database it was taken from ({}): \
                     open it with a capacity tier of its own (`Options::capacity`, --capacity)",
                    dir.display(),
                    link.capacity_url
                )))
            }
            Some(o) if o.url.trim_end_matches('/') == link.capacity_url.trim_end_matches('/') => {
                return Err(Error::invalid(format!(
                    "{} shares tables with {}: its own capacity tier must be another prefix \
                     (new tables would collide with the source's)",
                    dir.display(),
                    link.capacity_url
                )))
            }
            Some(_) => {}
        }
        let mut src = own.cloned().unwrap_or_else(|| CapacityOptions::new(""));
        src.url = link.capacity_url.clone();
        let tier = CapacityTier::open(&src, None, stats)?;
        let registry = Registry::new(dir, storage.clone(), Some(tier.clone()));
        if !link.tables.is_empty() {
            match registry.get(link.checkpoint_id)? {
                Some(r) if r.complete => {}
                // The copy is in place (renamed there as its writer's last step but one), so
                // its writer stopped between the rename and completing the record: complete
                // it now, while the incomplete record still protects the tables with time to
                // spare.
                Some(r) if can_complete(&r, crate::checkpoint::now_unix_ms()) => {
                    tracing::info!(
                        checkpoint = r.id,
                        dir = %dir.display(),
                        "completing a checkpoint whose writer stopped after the copy was in place"
                    );
                    registry.update(&r.completed())?;
                }
                Some(_) => {
                    return Err(Error::invalid(format!(
                        "{} is a checkpoint that was never completed (its writer stopped) and \
                         whose protection has lapsed or is about to: delete it",
                        dir.display()
                    )))
                }
                None => {
                    return Err(Error::invalid(format!(
                        "{}'s checkpoint {} was released or expired at its source ({}): the \
                         tables it shares may be gone",
                        dir.display(),
                        link.checkpoint_id,
                        link.capacity_url
                    )))
                }
            }
        }
        Ok(Some(Arc::new(SharedTables {
            registry,
            tier,
            link: Mutex::new(link),
            dir: dir.to_path_buf(),
            storage: storage.clone(),
        })))
    }

    /// Whether table `id` is the source's.
    pub fn contains(&self, id: u64) -> bool {
        self.link.lock().tables.contains(&id)
    }

    /// The source's capacity tier, where shared tables are read.
    pub fn tier(&self) -> &Arc<CapacityTier> {
        &self.tier
    }

    /// The source's capacity URL.
    pub fn source_url(&self) -> String {
        self.link.lock().capacity_url.clone()
    }

    /// How many tables are still shared.
    pub fn len(&self) -> usize {
        self.link.lock().tables.len()
    }

    /// Whether no table is shared any more.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops referring to every shared table not in `keep` (open: tables a crash left released
    /// in the version but not yet here).
    pub fn retain(&self, keep: &HashSet<u64>) -> Result<()> {
        let gone: Vec<u64> = {
            let l = self.link.lock();
            l.tables
                .iter()
                .copied()
                .filter(|t| !keep.contains(t))
                .collect()
        };
        self.release(&gone)
    }

    /// Stops referring to `ids` (the copy's compactions rewrote them): `PARENT` first, then
    /// the source's record. `PARENT` stays when no table is left (it names the prefix the copy
    /// must never be opened on); the record goes.
    pub fn release(&self, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut l = self.link.lock();
        l.tables.retain(|t| !ids.contains(t));
        let tmp = self.dir.join("PARENT.tmp");
        let mut f = self.storage.create(&tmp)?;
        f.append(&l.encode())?;
        f.sync()?;
        drop(f);
        self.storage.rename(&tmp, &self.dir.join(PARENT_FILE))?;
        self.storage.sync_dir(&self.dir)?;
        match self.registry.get(l.checkpoint_id)? {
            Some(mut rec) if !l.tables.is_empty() => {
                rec.tables.retain(|t| l.tables.contains(t));
                self.registry.update(&rec)?;
            }
            Some(_) => {
                self.registry.remove(l.checkpoint_id)?;
                tracing::info!(
                    source = %l.capacity_url,
                    "the copy shares no table with its source any more: detached"
                );
            }
            None if !l.tables.is_empty() => tracing::warn!(
                source = %l.capacity_url,
                checkpoint = l.checkpoint_id,
                tables = l.tables.len(),
                "the source released this copy's checkpoint: the tables it still shares may be \
                 deleted by the source's garbage collection"
            ),
            None => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{CheckpointKind, CheckpointRecord, CHECKPOINT_FORMAT};

    #[test]
    fn an_incomplete_record_completes_only_if_both_protections_last() {
        let min = 60 * 1000;
        let rec = |expires: u64, after: Option<u64>| CheckpointRecord {
            format: CHECKPOINT_FORMAT,
            id: 1,
            kind: CheckpointKind::Checkpoint,
            complete: false,
            created_unix_ms: 0,
            expires_unix_ms: Some(expires),
            sequence: 0,
            path: String::new(),
            tables: vec![],
            expires_after_ms: after,
        };
        // (incomplete expiry, asked lifetime, now, completes?)
        let cases = [
            (360 * min, None, 60 * min, true),
            (360 * min, Some(120 * min), 60 * min, true),
            // The asked lifetime ended (or nearly) before this open: completing would lapse.
            (360 * min, Some(30 * min), 60 * min, false),
            (360 * min, Some(65 * min), 60 * min, false),
            // The incomplete protection itself is about to lapse.
            (65 * min, None, 60 * min, false),
            (360 * min, None, 400 * min, false),
        ];
        for (expires, after, now, want) in cases {
            assert_eq!(
                can_complete(&rec(expires, after), now),
                want,
                "{expires} {after:?} {now}"
            );
        }
    }
}
