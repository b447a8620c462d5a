//! Copies of a verified database checked against the oracle: a checkpoint, a clone or a backup
//! restored, each opened as a database with a capacity prefix of its own, verified to hold
//! exactly the expected state, and written to (the source's next verification shows the
//! copy's writes never reached it). Depends on `strata` and the oracle.

use std::path::Path;

use anyhow::Context;
use strata::backup::BackupEngine;
use strata::checkpoint::{CheckpointKind, CheckpointOptions};
use strata::storage::object::CapacityOptions;
use strata::Db;
use strata_test_support::Rng;

use crate::config::StressConfig;
use crate::oracle::{verify, Expected};
use crate::runner::remove;

/// Which kind of copy a round checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    Checkpoint,
    Clone,
    Backup,
}

impl CopyKind {
    /// One of the three, evenly.
    pub fn draw(rng: &mut Rng) -> Self {
        [CopyKind::Checkpoint, CopyKind::Clone, CopyKind::Backup][rng.below(3) as usize]
    }
}

/// Makes a copy of `db` (just verified against `expected`) of `kind` and checks it. Backups
/// accumulate in `<dir>/backups` across rounds (incremental), purged to the newest two.
pub fn check_copy(
    kind: CopyKind,
    db: &Db,
    dir: &Path,
    cfg: &StressConfig,
    round: u64,
    expected: &Expected,
) -> anyhow::Result<()> {
    let (to, cap) = (dir.join("copy"), dir.join("copy-cap"));
    remove(&to)?;
    remove(&cap)?;
    let mut o = cfg.to_options(dir, false);
    if let Some(c) = &mut o.capacity {
        c.url = format!("file://{}", cap.display());
    }
    let (sequence, release) = match kind {
        CopyKind::Checkpoint | CopyKind::Clone => {
            let co = CheckpointOptions {
                kind: if kind == CopyKind::Clone {
                    CheckpointKind::Clone
                } else {
                    CheckpointKind::Checkpoint
                },
                ..Default::default()
            };
            let info = db
                .checkpoint_with(&to, &co)
                .context("taking the checkpoint")?;
            (info.sequence, Some(info.id))
        }
        CopyKind::Backup => {
            let backups = dir.join("backups");
            std::fs::create_dir_all(&backups)?;
            let e = BackupEngine::open(&CapacityOptions::new(format!(
                "file://{}",
                backups.display()
            )))?;
            let info = e.create(db, &Default::default()).context("backing up")?;
            if db
                .checkpoints()?
                .iter()
                .any(|r| r.sequence == info.sequence)
            {
                anyhow::bail!("the backup's checkpoint was not released");
            }
            let report = e.verify(Some(info.id), &Default::default())?;
            if let Some(d) = report.first().and_then(|r| r.damaged.first()) {
                anyhow::bail!("a fresh backup verifies damaged: {}: {}", d.object, d.error);
            }
            std::fs::create_dir_all(&cap)?;
            e.restore(Some(info.id), &to, o.capacity.as_ref(), &Default::default())
                .context("restoring the backup")?;
            e.purge(2).context("purging old backups")?;
            (info.sequence, None)
        }
    };
    let copy = Db::open(&to, o).with_context(|| format!("opening the {kind:?}"))?;
    let mut exp = expected.clone();
    // The copy has the source's column families.
    let fams = crate::families::Families::existing(&copy, cfg.families)
        .with_context(|| format!("the {kind:?}"))?;
    let v = verify(&copy, &fams, round, &mut exp, &[])?;
    if let Some(first) = v.first {
        anyhow::bail!(
            "the {kind:?} (sequence {sequence}) differs from the database: {} lost, {} phantoms; \
             first wrong key: {first}",
            v.lost,
            v.phantoms
        );
    }
    // A key outside the oracle's range: the source must never see it. A clone also compacts,
    // rewriting (and so releasing) the tables it shares.
    copy.put(b"checkpoint-only", b"1")?;
    if kind == CopyKind::Clone {
        fams.compact_all(&copy)?;
        copy.wait_for_compactions()?;
    }
    copy.close()?;
    if db.get(b"checkpoint-only")?.is_some() {
        anyhow::bail!("a write to the {kind:?} reached the database");
    }
    if let Some(id) = release {
        // A clone that detached has released its record already.
        let released = db.release_checkpoint(id)?;
        if !released && kind == CopyKind::Checkpoint {
            anyhow::bail!("the checkpoint's record was gone before its release");
        }
    }
    remove(&to)?;
    remove(&cap)?;
    Ok(())
}
