//! Taking a checkpoint of a database from outside the process that has it open (`strata
//! checkpoint`, `strata clone` beside a running server), without its lock.
//!
//! The source keeps changing while the copy is made, so each attempt is checked and retried:
//! 1. read the manifest `CURRENT` names (a manifest rotated away meanwhile: try again);
//! 2. record the capacity-tier tables it names in the source's registry;
//! 3. check that took less than [`REGISTER_WITHIN`]: the source deletes a capacity-tier table
//!    no sooner than its minimum GC age (`Options::capacity_gc_min_age`, 60 s by default)
//!    after it left the version, and reads the registry afresh before deleting, so a table
//!    live in the manifest read in (1) and recorded within that time is kept; the tables are
//!    also listed once to be sure they are there;
//! 4. hard-link the fast-tier tables and copy the WAL files from the manifest's log number on
//!    (a table or WAL the source deleted meanwhile fails the link: try again). The last WAL
//!    may end in a torn record the source was appending; opening the copy drops it, as
//!    recovery after a crash does, so the copy holds a prefix of the source's writes.
//!
//! Databases with a separate `wal_location` are refused for now.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::copy::{check_target, write_copy, CopyPlan};
use super::record::{ParentLink, CHECKPOINT_FORMAT};
use super::registry::Registry;
use super::{new_id, CheckpointInfo, CheckpointOptions};
use crate::error::{Error, Result};
use crate::storage::object::{CapacityOptions, CapacityTier};
use crate::storage::{default_storage, Storage};
use crate::tier::local_path;
use crate::version::{snapshot_of, CompactionStyle, SnapshotCounters};

/// How long an attempt may take from reading the manifest to recording its tables. Sources
/// must keep `capacity_gc_min_age` above it.
pub const REGISTER_WITHIN: Duration = Duration::from_secs(10);

/// Attempts before giving up on a source that changes faster than a copy can be made.
const ATTEMPTS: usize = 8;

/// Takes a checkpoint of the database in `src` (open in another process or not) into the new
/// directory `to`. `capacity` is the source's capacity tier; it is needed when the source has
/// tables there. `o.log_size_for_flush` is ignored (only the source's process can flush).
///
/// `src` may itself be a checkpoint or clone (it has a `PARENT` file) whose capacity-tier
/// tables are all still shared: the new copy then shares them with the same source, under a
/// record of its own, so it outlives the copy it was taken from. (A copy that wrote tables of
/// its own to its own prefix is refused: one copy names one source.) `capacity` then only
/// lends its settings (retries, emulation); the URL is the `PARENT`'s.
pub fn checkpoint_dir(
    src: &Path,
    capacity: Option<&CapacityOptions>,
    to: &Path,
    o: &CheckpointOptions,
) -> Result<CheckpointInfo> {
    let storage = default_storage();
    check_target(storage.as_ref(), to)?;
    let parent_path = src.join(crate::tier::shared::PARENT_FILE);
    let parent = match storage.read_all(&parent_path) {
        Ok(b) => Some(ParentLink::decode(&b, &parent_path.display().to_string())?),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e),
    };
    // A copy that shares no table any more (detached) is a database of its own.
    let parent = parent.filter(|l| !l.tables.is_empty());
    let source_capacity = match &parent {
        Some(l) => {
            let mut c = capacity
                .cloned()
                .unwrap_or_else(|| CapacityOptions::new(""));
            c.url = l.capacity_url.clone();
            Some(c)
        }
        None => capacity.cloned(),
    };
    let capacity = source_capacity.as_ref();
    let tier = capacity
        .map(|c| CapacityTier::open(c, None, Default::default()))
        .transpose()?;
    let registry = Registry::new(src, storage.clone(), tier.clone());
    let shared: Option<HashSet<u64>> = parent.map(|l| l.tables.into_iter().collect());
    let source = Source {
        dir: src,
        storage: &storage,
        tier: tier.as_ref(),
        capacity,
        registry: &registry,
        shared: shared.as_ref(),
    };
    let mut last = None;
    for attempt in 0..ATTEMPTS {
        match attempt_once(&source, to, o) {
            Ok(info) => return Ok(info),
            Err(Retry(e)) => {
                tracing::info!(attempt, error = %e, "the source changed under the checkpoint: again");
                last = Some(e);
            }
            Err(Fail(e)) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| Error::invalid("no attempt made")))
}

enum Outcome {
    Retry(Error),
    Fail(Error),
}
use Outcome::{Fail, Retry};

/// Not-found errors mean the source moved on: try again; anything else fails.
fn classify(e: Error) -> Outcome {
    if e.is_not_found() {
        Retry(e)
    } else {
        Fail(e)
    }
}

/// The source of an offline checkpoint, as one attempt needs it.
struct Source<'a> {
    dir: &'a Path,
    storage: &'a Arc<dyn Storage>,
    /// The capacity tier the shared tables live on and the registry that protects them.
    tier: Option<&'a Arc<CapacityTier>>,
    capacity: Option<&'a CapacityOptions>,
    registry: &'a Registry,
    /// When the source is itself a copy: the tables it shares (all of its capacity tables
    /// must be among them).
    shared: Option<&'a HashSet<u64>>,
}

fn attempt_once(
    s: &Source<'_>,
    to: &Path,
    o: &CheckpointOptions,
) -> std::result::Result<CheckpointInfo, Outcome> {
    let Source {
        dir: src,
        storage,
        tier,
        capacity,
        registry,
        shared,
    } = *s;
    let started = Instant::now();
    let dump = crate::inspect::read_manifest(src).map_err(classify)?;
    let edits = &dump.edits;
    if edits.iter().any(|e| !e.wal_pins.is_empty())
        || edits.first().and_then(|e| e.format.as_deref())
            == Some(crate::version::MANIFEST_FORMAT_V2)
    {
        return Err(Fail(Error::invalid(
            "the database uses the extended WAL in a separate wal_location: checkpoints of such \
             databases are not supported yet",
        )));
    }
    let log_number = dump.log_number().unwrap_or(0);
    // The oldest WAL a column family still needs: every WAL from it is copied.
    let oldest_log = dump
        .families
        .iter()
        .map(|(_, t)| t.log_number)
        .fold(log_number, u64::min);
    let counters = SnapshotCounters {
        log_number,
        next_file_number: edits
            .iter()
            .filter_map(|e| e.next_file_number)
            .max()
            .unwrap_or(1),
        last_sequence: edits
            .iter()
            .filter_map(|e| e.last_sequence)
            .max()
            .unwrap_or(0),
        style: edits
            .first()
            .and_then(|e| e.style)
            .unwrap_or(CompactionStyle::Leveled),
        extended: false,
    };
    let mut wals: Vec<(u64, std::path::PathBuf, u64)> = storage
        .list(src)
        .map_err(Fail)?
        .iter()
        .filter_map(|n| crate::inspect::parse_numbered(n, ".log"))
        .filter(|n| *n >= oldest_log)
        .map(|n| (n, src.join(format!("{n:06}.log")), u64::MAX))
        .collect();
    wals.sort_unstable_by_key(|w| w.0);
    if wals.is_empty() {
        return Err(Fail(Error::invalid(format!(
            "{} holds no live WAL file: a database with a separate wal_location cannot be \
             checkpointed from outside yet",
            src.display()
        ))));
    }
    if wals[0].0 != oldest_log {
        // The manifest's oldest live WAL is gone: a flush moved on since it was read.
        return Err(Retry(Error::invalid(format!(
            "WAL {oldest_log:06}.log the manifest names was deleted meanwhile"
        ))));
    }
    let mut snapshot = snapshot_of(&dump.version, counters, Vec::new());
    if dump.families.in_use() {
        snapshot.format = Some(crate::version::MANIFEST_FORMAT_V3.into());
        dump.families.snapshot_into(&mut snapshot);
    }
    let mut plan = CopyPlan {
        snapshot,
        wals,
        sequence: 0,
    };
    // Hold what the manifest names at once, before the slower steps: hard links in a
    // directory beside them (same file system), so a flush or compaction that deletes them
    // meanwhile does not matter. Only the newest WAL can still grow; its length now bounds
    // its copy (a later WAL is not listed, so the copy is a prefix of the writes).
    let hold = Hold::in_source(storage, src).map_err(Fail)?;
    let fast: Vec<u64> = plan
        .tables()
        .filter(|f| f.tier == crate::tier::Tier::Fast)
        .map(|f| f.id)
        .collect();
    for id in fast {
        storage
            .link_or_copy(&local_path(src, id), &local_path(&hold.dir, id))
            .map_err(classify)?;
    }
    for (n, path, len) in &mut plan.wals {
        let held = hold.dir.join(format!("{n:06}.log"));
        storage.link_or_copy(path, &held).map_err(classify)?;
        *len = storage.open(&held).map_err(Fail)?.size();
        *path = held;
    }
    let tables = plan.capacity_tables();
    if let Some(own) = shared.and_then(|s| tables.iter().find(|t| !s.contains(t))) {
        return Err(Fail(Error::invalid(format!(
            "{} is a copy that wrote capacity-tier tables of its own (table {own}): take the \
             checkpoint of its source instead (a copy names one source)",
            src.display()
        ))));
    }
    if !tables.is_empty() && tier.is_none() {
        return Err(Fail(Error::invalid(
            "the database has capacity-tier tables: give its capacity tier (--capacity URL, or \
             --source-capacity URL for strata clone)",
        )));
    }
    let rec = super::register_pending(registry, o, counters_sequence(&plan), to, tables.clone())
        .map_err(Fail)?;
    let undo = |e: Outcome| {
        let _ = registry.remove(rec.id);
        e
    };
    if started.elapsed() >= REGISTER_WITHIN {
        return Err(undo(Retry(Error::invalid(format!(
            "recording the checkpoint took over {REGISTER_WITHIN:?}"
        )))));
    }
    if let Some(tier) = tier.filter(|_| !tables.is_empty()) {
        let present: HashSet<String> = tier
            .list("tables")
            .map_err(|e| undo(Fail(e)))?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        if let Some(gone) = tables
            .iter()
            .find(|t| !present.contains(&crate::tier::object_name(**t)))
        {
            return Err(undo(Retry(Error::invalid(format!(
                "capacity table {gone} was deleted before the checkpoint recorded it"
            )))));
        }
    }
    let link = capacity.map(|c| ParentLink {
        format: CHECKPOINT_FORMAT,
        capacity_url: c.url.clone(),
        checkpoint_id: rec.id,
        tables: tables.clone(),
    });
    let stats =
        write_copy(storage, &hold.dir, &plan, to, link.as_ref()).map_err(|e| undo(classify(e)))?;
    drop(hold);
    plan.sequence = match copied_sequence(to, &plan) {
        Ok(s) => s,
        Err(e) => {
            super::copy::discard_copy(storage.as_ref(), to);
            return Err(undo(Fail(e)));
        }
    };
    // A column family created or dropped since the manifest was read may have records in the
    // copied WALs the copy's manifest does not know (it would not open): plan again.
    match crate::inspect::read_manifest(src) {
        Ok(now) if same_families(&now.families, &dump.families) => {}
        Ok(_) => {
            super::copy::discard_copy(storage.as_ref(), to);
            return Err(undo(Retry(Error::invalid(
                "a column family was created or dropped while the checkpoint was written",
            ))));
        }
        Err(e) => {
            super::copy::discard_copy(storage.as_ref(), to);
            return Err(undo(classify(e)));
        }
    }
    let mut rec = rec;
    rec.sequence = plan.sequence;
    super::finish(registry, rec, stats, to, storage).map_err(Fail)
}

/// Where a checkpoint holds links to the source's files while it is written; a crash's
/// leftovers are removed when the source opens next.
pub(crate) const HOLD_PREFIX: &str = "checkpoint-hold-";

/// A hold directory, created and removed when dropped (a crash's is removed by the source's
/// next open, see `HOLD_PREFIX`).
pub(crate) struct Hold {
    storage: Arc<dyn Storage>,
    pub(crate) dir: std::path::PathBuf,
}

impl Hold {
    /// Creates the directory `dir`.
    pub(crate) fn create(storage: &Arc<dyn Storage>, dir: std::path::PathBuf) -> Result<Self> {
        storage.create_dir_all(&dir)?;
        Ok(Hold {
            storage: storage.clone(),
            dir,
        })
    }

    /// A new hold directory in the source directory `src`.
    pub(crate) fn in_source(storage: &Arc<dyn Storage>, src: &Path) -> Result<Self> {
        Self::create(storage, src.join(format!("{HOLD_PREFIX}{}", new_id())))
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Err(e) = self.storage.remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "could not remove a checkpoint's hold");
        }
    }
}

fn counters_sequence(plan: &CopyPlan) -> u64 {
    plan.snapshot.last_sequence.unwrap_or(0)
}

/// The last sequence number the copy holds: the manifest's, or the last write in its WAL
/// files (read as opening the copy will read them, a torn tail dropped).
/// Whether two manifests' families are the same ones (ids handed out, live ids).
fn same_families(a: &crate::version::Families, b: &crate::version::Families) -> bool {
    a.next_id() == b.next_id() && a.iter().map(|(id, _)| id).eq(b.iter().map(|(id, _)| id))
}

fn copied_sequence(to: &Path, plan: &CopyPlan) -> Result<u64> {
    let mut seq = counters_sequence(plan);
    for (n, _, _) in &plan.wals {
        let dump = crate::inspect::read_wal(&to.join(format!("{n:06}.log")), true)?;
        for r in &dump.records {
            if !r.batch.is_empty() {
                seq = seq.max(r.seq + r.batch.len() as u64 - 1);
            }
        }
    }
    Ok(seq)
}
