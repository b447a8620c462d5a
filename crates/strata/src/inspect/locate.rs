//! Finds every stored version of one user key: in the WALs, in the tables the manifest lists
//! (point entries and covering range tombstones), level by level.

use std::path::Path;

use super::manifest::ManifestDump;
use super::tables::{for_each_entry, TableOpener};
use super::wal::{list_wals, read_wal, torn_tail_allowed};
use crate::batch::BatchOp;
use crate::error::Result;
use crate::tier::Tier;
use crate::types::{SeqNo, ValueKind};

/// Where a version was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyVersionSource {
    /// Record `record` of WAL file `file` (not yet flushed, or flushed but not yet deleted).
    Wal {
        /// The WAL's file name (e.g. `000012.log`).
        file: String,
        /// The record's position in the WAL, from 0.
        record: usize,
    },
    /// A table the manifest lists.
    Table {
        /// The level the table is in.
        level: usize,
        /// The sorted run's position in the level, 0 the newest.
        run: usize,
        /// The table's file number.
        id: u64,
        /// The tier the table is on.
        tier: Tier,
    },
}

/// One version of the key.
#[derive(Clone, Debug)]
pub struct KeyVersion {
    /// Where the version was found.
    pub source: KeyVersionSource,
    /// The version's sequence number (a range tombstone's own, for a covering tombstone).
    pub seq: SeqNo,
    /// `Put`, `Delete`, `Merge` (an operand), or `RangeDelete` (a tombstone `[start, end)`
    /// covering the key).
    pub kind: ValueKind,
    /// The value of a put; the operand of a merge; the tombstone's end key of a range delete.
    pub value: Vec<u8>,
}

/// What [`locate_key`] found.
#[derive(Default)]
pub struct Located {
    /// Every version found, newest source first.
    pub versions: Vec<KeyVersion>,
    /// Sources that could not be read: `(location, error)`.
    pub problems: Vec<(String, crate::Error)>,
}

/// Every version of `key`, newest source first (WALs, then levels top to bottom). Sources that
/// cannot be read are returned as `(location, error)` beside the versions found elsewhere.
pub fn locate_key(
    dir: &Path,
    log_dir: Option<&Path>,
    manifest: Option<&ManifestDump>,
    opener: &TableOpener,
    key: &[u8],
) -> Result<Located> {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let wals = list_wals(dir, log_dir)?;
    let newest = wals.last().map(|(n, _)| *n);
    let live = manifest.and_then(|m| m.log_number());
    for (n, path) in wals.iter().rev() {
        let dump = match read_wal(path, torn_tail_allowed(*n, newest, live)) {
            Ok(d) => d,
            Err(e) => {
                problems.push((path.display().to_string(), e));
                continue;
            }
        };
        for (r, rec) in dump.records.iter().enumerate().rev() {
            let mut hits = Vec::new();
            // The default family's key: other families' operations are other key spaces.
            for (seq, (family, op)) in (rec.seq..).zip(rec.batch.iter_cf()) {
                if family != crate::version::DEFAULT_FAMILY {
                    continue;
                }
                let hit = match op {
                    BatchOp::Put(k, v) if k == key => Some((ValueKind::Put, v.to_vec())),
                    BatchOp::Delete(k) if k == key => Some((ValueKind::Delete, Vec::new())),
                    BatchOp::Merge(k, v) if k == key => Some((ValueKind::Merge, v.to_vec())),
                    BatchOp::DeleteRange(s, e) if s <= key && key < e => {
                        Some((ValueKind::RangeDelete, e.to_vec()))
                    }
                    _ => None,
                };
                if let Some((kind, value)) = hit {
                    hits.push(KeyVersion {
                        source: KeyVersionSource::Wal {
                            file: dump.name.clone(),
                            record: r,
                        },
                        seq,
                        kind,
                        value,
                    });
                }
            }
            found.extend(hits.into_iter().rev());
        }
    }
    let Some(manifest) = manifest else {
        return Ok(Located {
            versions: found,
            problems,
        });
    };
    for (level, l) in manifest.version.levels.iter().enumerate() {
        for (run, r) in l.runs.iter().enumerate() {
            for f in &r.files {
                let m = &f.meta;
                if !m.contains(key) {
                    continue;
                }
                let source = KeyVersionSource::Table {
                    level,
                    run,
                    id: m.id,
                    tier: m.tier,
                };
                let table = match opener.open(m.id, m.tier, Some(m.size)) {
                    Ok(t) => t,
                    Err(e) => {
                        problems.push((opener.location(m.id, m.tier), e));
                        continue;
                    }
                };
                for t in table.range_tombstones() {
                    if t.covers(key) {
                        found.push(KeyVersion {
                            source: source.clone(),
                            seq: t.seq,
                            kind: ValueKind::RangeDelete,
                            value: t.end.clone(),
                        });
                    }
                }
                let r = for_each_entry(&table, Some(key), |e| {
                    if e.user_key != key {
                        return false;
                    }
                    found.push(KeyVersion {
                        source: source.clone(),
                        seq: e.seq,
                        kind: e.kind,
                        value: e.value,
                    });
                    true
                });
                if let Err(e) = r {
                    problems.push((opener.location(m.id, m.tier), e));
                }
            }
        }
    }
    Ok(Located {
        versions: found,
        problems,
    })
}
