//! `Db::clone_from`: a writable fork of a database, opened — from a checkpoint's directory or a
//! database's (sharing its capacity-tier tables by reference, as `strata clone` does), or from
//! a backup (restored, so independent). Composes `checkpoint::offline` and `backup`; owns no
//! state.

use std::path::Path;

use super::Db;
use crate::backup::{BackupEngine, BackupOptions};
use crate::checkpoint::{offline, CheckpointKind, CheckpointOptions};
use crate::error::Result;
use crate::storage::object::CapacityOptions;
use crate::Options;

/// What a clone is made from.
pub enum CloneSource<'a> {
    /// A checkpoint's directory, or a database's (open in another process or not) with its
    /// capacity tier. The clone shares the source's capacity-tier tables, which the source
    /// keeps until the clone's compactions have rewritten them all.
    Dir {
        /// The checkpoint's or database's directory.
        path: &'a Path,
        /// The source's capacity tier (a checkpoint's `PARENT` file names it; a database
        /// with capacity-tier tables needs it).
        capacity: Option<&'a CapacityOptions>,
    },
    /// A backup (the newest when `id` is `None`): restored, so the clone shares nothing.
    Backup {
        /// The backups' URL.
        engine: &'a BackupEngine,
        /// Which backup.
        id: Option<u64>,
    },
}

impl Db {
    /// Makes a clone of `source` in the new directory `dir` and opens it with `opts`, whose
    /// `capacity` is the clone's own capacity prefix (another one than the source's; for a
    /// backup, an empty one).
    pub fn clone_from(source: CloneSource<'_>, dir: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let dir = dir.as_ref();
        match source {
            CloneSource::Dir { path, capacity } => {
                let o = CheckpointOptions {
                    kind: CheckpointKind::Clone,
                    ..Default::default()
                };
                offline::checkpoint_dir(path, capacity, dir, &o)?;
            }
            CloneSource::Backup { engine, id } => {
                engine.restore(id, dir, opts.capacity.as_ref(), &BackupOptions::default())?;
            }
        }
        Db::open(dir, opts)
    }
}
