//! `Db::checkpoint` and the registry of checkpoints a running database keeps (see
//! `crate::checkpoint` for the design and `tier::gc` for the rule that honours them).
//!
//! The checkpoint's moment is taken with writes stopped (`write::exclusive`, the same barrier
//! a flush uses): the WAL is synced, every column family's version pinned, the live WAL
//! files' lengths and the last sequence number read. Writes resume while the copy is written;
//! the pinned versions keep every table they name (its files are deleted only when its last holder drops it), and
//! the registry record written before the pin is dropped keeps the capacity-tier ones after.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Db, DbInner};
use crate::checkpoint::{
    now_unix_ms, write_copy, CheckpointInfo, CheckpointOptions, CheckpointRecord, CopyPlan,
    ParentLink, CHECKPOINT_FORMAT,
};
use crate::error::{Error, Result};

impl Db {
    /// Takes a checkpoint into the new directory `to` with default options: a consistent
    /// point-in-time copy that opens as a database (its capacity-tier tables are shared with
    /// this database, which keeps them until the checkpoint is released).
    pub fn checkpoint(&self, to: impl AsRef<Path>) -> Result<CheckpointInfo> {
        self.checkpoint_with(to, &CheckpointOptions::default())
    }

    /// [`Db::checkpoint`] with options (flush first, expiry, clone).
    pub fn checkpoint_with(
        &self,
        to: impl AsRef<Path>,
        o: &CheckpointOptions,
    ) -> Result<CheckpointInfo> {
        create(self.inner(), to.as_ref(), o)
    }

    /// The complete, unexpired checkpoints and clones of this database, oldest first.
    pub fn checkpoints(&self) -> Result<Vec<CheckpointRecord>> {
        let now = now_unix_ms();
        Ok(self
            .inner()
            .registry
            .list()?
            .into_iter()
            .filter(|r| r.complete && !r.expired(now))
            .collect())
    }

    /// Releases checkpoint `id`: the capacity-tier tables only it kept are deleted once
    /// garbage collection's minimum age has passed since the release. `false` if there was no such checkpoint.
    /// A copy still open as a database must not be released (its shared tables would go).
    pub fn release_checkpoint(&self, id: u64) -> Result<bool> {
        let inner = self.inner();
        let released = inner.registry.remove(id)?;
        // Tables a record kept are looked at again now: their minimum age starts.
        let now = std::time::Instant::now();
        for d in inner
            .deferred
            .lock()
            .iter_mut()
            .filter(|d| d.unreferenced_since.is_none())
        {
            d.due = now;
        }
        super::gc::collect_capacity(inner);
        Ok(released)
    }
}

fn create(inner: &Arc<DbInner>, to: &Path, o: &CheckpointOptions) -> Result<CheckpointInfo> {
    if inner.log_dir != inner.dir {
        return Err(Error::invalid(
            "checkpoints of a database whose WAL is in a separate wal_location are not \
             supported yet",
        ));
    }
    if inner.tables.store().shared().is_some_and(|s| !s.is_empty()) {
        return Err(Error::invalid(
            "this database shares capacity-tier tables with the one it was copied from: take \
             the checkpoint of that one instead (chains of shared tables are not supported)",
        ));
    }
    crate::checkpoint::copy::check_target(inner.storage.as_ref(), to)?;
    if o.log_size_for_flush != u64::MAX {
        let wal_bytes: u64 = live_wals(inner)?.iter().map(|w| w.2).sum();
        if wal_bytes >= o.log_size_for_flush {
            super::background::flush(inner, &inner.all_families())?;
        }
    }
    // The live WAL files are hard-linked into a hold directory at the checkpoint's moment (a
    // flush may delete them before they are copied); their lengths then bound the copies.
    let hold = inner.dir.join(format!(
        "{}{}",
        crate::checkpoint::offline::HOLD_PREFIX,
        crate::checkpoint::new_id()
    ));
    let taken = super::write::exclusive(inner, || -> Result<_> {
        super::wal_sync::sync_wal(inner)?;
        let st = inner.state.lock();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        let sequence = inner.last_seq.load(Ordering::Acquire);
        inner.storage.create_dir_all(&hold)?;
        let mut wals = live_wals_locked(inner, &st)?;
        for (n, path, _) in &mut wals {
            let held = hold.join(format!("{n:06}.log"));
            inner.log_storage.link_or_copy(path, &held)?;
            *path = held;
        }
        let plan = CopyPlan {
            snapshot: st.versions.copy_edit(sequence),
            wals,
            sequence,
        };
        // Every family's tree: their tables stay until the copy is written.
        let trees: Vec<_> = std::iter::once(st.versions.current())
            .chain(
                st.versions
                    .families()
                    .iter()
                    .map(|(_, t)| t.version.clone()),
            )
            .collect();
        Ok((trees, plan))
    });
    let (trees, plan) = match taken {
        Ok(t) => t,
        Err(e) => {
            let _ = inner.storage.remove_dir_all(&hold);
            return Err(e);
        }
    };
    let capacity = inner.tables.store().capacity().cloned();
    let rec = crate::checkpoint::register_pending(
        &inner.registry,
        o,
        plan.sequence,
        to,
        plan.capacity_tables(),
    )?;
    let link = match (&capacity, &inner.opts.capacity) {
        (Some(_), Some(c)) => Some(ParentLink {
            format: CHECKPOINT_FORMAT,
            capacity_url: c.url.clone(),
            checkpoint_id: rec.id,
            tables: rec.tables.clone(),
        }),
        _ => None,
    };
    let written = write_copy(&inner.storage, &inner.dir, &plan, to, link.as_ref());
    drop(trees);
    if let Err(e) = inner.storage.remove_dir_all(&hold) {
        tracing::warn!(dir = %hold.display(), error = %e, "could not remove a checkpoint's WAL hold");
    }
    let stats = match written {
        Ok(s) => s,
        Err(e) => {
            let _ = inner.registry.remove(rec.id);
            return Err(e);
        }
    };
    crate::checkpoint::finish(&inner.registry, rec, stats, to, &inner.storage)
}

/// Live WAL files (number, path, current length).
fn live_wals(inner: &DbInner) -> Result<Vec<(u64, std::path::PathBuf, u64)>> {
    let st = inner.state.lock();
    live_wals_locked(inner, &st)
}

fn live_wals_locked(
    inner: &DbInner,
    st: &super::DbState,
) -> Result<Vec<(u64, std::path::PathBuf, u64)>> {
    // Every WAL the copy's manifest names as live — all from its oldest log number on, as the
    // source's own reopen would replay. (With column families a memtable also receives writes
    // in logs after the one it started in, and a family's log number may trail the others'.)
    let floor = st.versions.min_log_number();
    let mut numbers: Vec<u64> = inner
        .log_storage
        .list(&inner.log_dir)?
        .iter()
        .filter_map(|n| crate::inspect::parse_numbered(n, ".log"))
        .filter(|n| *n >= floor)
        .collect();
    numbers.sort_unstable();
    numbers
        .into_iter()
        .map(|n| {
            let path = super::write::wal_path(&inner.log_dir, n);
            let len = inner.log_storage.open(&path)?.size();
            Ok((n, path, len))
        })
        .collect()
}
