//! A full checksum pass over a database: every manifest record, every WAL record and every
//! block of every table, on both tiers.

use std::collections::HashSet;
use std::path::Path;

use super::manifest::{current_manifest, list_manifests, read_manifest, read_manifest_file};
use super::tables::{for_each_entry, TableOpener};
use super::wal::{list_wals, read_wal, torn_tail_allowed};
use crate::tier::Tier;
use crate::version::FileMeta;

/// One file's result.
#[derive(Clone, Debug)]
pub struct VerifyFinding {
    /// A local path, or `capacity:tables/<id>.sst`.
    pub file: String,
    /// What was checked (`"12 records"`, `"4096 entries in 3 blocks"`) or what is wrong.
    pub detail: String,
}

/// What [`verify`] found.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Files whose every record or block checked out.
    pub ok: Vec<VerifyFinding>,
    /// Files that failed a checksum, would not decode, or are missing.
    pub corrupt: Vec<VerifyFinding>,
    /// Things worth knowing that are not damage (a torn WAL tail recovery will drop, tables
    /// the manifest does not list).
    pub notes: Vec<String>,
    /// Files that could not be checked (capacity tables without a capacity URL).
    pub unchecked: Vec<VerifyFinding>,
}

impl VerifyReport {
    /// Whether everything that could be checked is intact and nothing was left unchecked.
    pub fn is_clean(&self) -> bool {
        self.corrupt.is_empty() && self.unchecked.is_empty()
    }
}

/// Reads and checks every manifest, WAL and table of the database in `dir` (capacity-tier
/// tables through `opener`, logs also in `log_dir`, its `wal_location` directory). Never stops
/// at the first problem: each bad file is reported.
pub fn verify(
    dir: &Path,
    log_dir: Option<&Path>,
    opener: &TableOpener,
) -> crate::Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let path_of = |p: &Path| p.display().to_string();

    // Manifests: every one strictly; the live one may end in a torn tail, which recovery drops.
    // CURRENT is reported only for its own faults; a damaged manifest it names is reported
    // under the manifest's name below.
    let live_name = match current_manifest(dir) {
        Ok(name) if dir.join(&name).exists() => Some(name),
        Ok(name) => {
            report.corrupt.push(VerifyFinding {
                file: path_of(&dir.join("CURRENT")),
                detail: format!("names {name}, which is missing"),
            });
            None
        }
        Err(e) => {
            report.corrupt.push(VerifyFinding {
                file: path_of(&dir.join("CURRENT")),
                detail: e.to_string(),
            });
            None
        }
    };
    let live = read_manifest(dir);
    for (_, path) in list_manifests(dir)? {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match read_manifest_file(&path, false) {
            Ok(m) => report.ok.push(VerifyFinding {
                file: path_of(&path),
                detail: format!("{} records", m.edits.len()),
            }),
            Err(strict) => {
                let torn = (live_name.as_deref() == Some(name.as_str()))
                    .then(|| read_manifest_file(&path, true).ok())
                    .flatten()
                    .and_then(|m| m.torn_tail.map(|t| (m.edits.len(), t)));
                match torn {
                    Some((n, (offset, dropped))) => {
                        report.ok.push(VerifyFinding {
                            file: path_of(&path),
                            detail: format!("{n} records"),
                        });
                        report.notes.push(format!(
                            "{}: torn tail of {dropped} bytes at offset {offset} (recovery drops it)",
                            path_of(&path)
                        ));
                    }
                    None => report.corrupt.push(VerifyFinding {
                        file: path_of(&path),
                        detail: strict.to_string(),
                    }),
                }
            }
        }
    }

    // WALs: the newest may end in a torn tail (it may be being written right now), and so may
    // the replayed logs the extended WAL keeps (see `torn_tail_allowed`).
    let wals = list_wals(dir, log_dir)?;
    let newest = wals.last().map(|(n, _)| *n);
    let live_log = live.as_ref().ok().and_then(|m| m.log_number());
    for (n, path) in wals.iter() {
        match read_wal(path, false) {
            Ok(w) => report.ok.push(VerifyFinding {
                file: path_of(path),
                detail: format!("{} records", w.records.len()),
            }),
            Err(strict) => {
                let torn = torn_tail_allowed(*n, newest, live_log)
                    .then(|| read_wal(path, true).ok())
                    .flatten()
                    .and_then(|w| w.torn_tail.map(|t| (w.records.len(), t)));
                match torn {
                    Some((n, (offset, dropped))) => {
                        report.ok.push(VerifyFinding {
                            file: path_of(path),
                            detail: format!("{n} records"),
                        });
                        report.notes.push(format!(
                            "{}: torn tail of {dropped} bytes at offset {offset} (the live log may be mid-write, \
                             or a crash tore it and recovery replayed it; recovery drops it)",
                            path_of(path)
                        ));
                    }
                    None => report.corrupt.push(VerifyFinding {
                        file: path_of(path),
                        detail: strict.to_string(),
                    }),
                }
            }
        }
    }

    // Tables: those the manifest lists, then any other table file on either tier.
    let listed: Vec<FileMeta> = match &live {
        Ok(m) => m
            .version
            .all_files()
            .chain(m.families.all_files())
            .map(|f| f.meta.clone())
            .collect(),
        Err(_) => Vec::new(),
    };
    let mut seen: HashSet<(u64, Tier)> = HashSet::new();
    for m in &listed {
        seen.insert((m.id, m.tier));
        if m.tier == Tier::Capacity && !opener.has_capacity() {
            report.unchecked.push(VerifyFinding {
                file: opener.location(m.id, m.tier),
                detail: "on the capacity tier: pass --capacity URL to check it".into(),
            });
            continue;
        }
        check_table(opener, &mut report, m.id, m.tier, Some(m));
    }
    let unlisted_note = |report: &mut VerifyReport, loc: String| {
        let why = if live.is_ok() {
            "not in the manifest (left by a crash or being written; checked anyway)"
        } else {
            "checked without a manifest"
        };
        report.notes.push(format!("{loc}: {why}"));
    };
    for id in opener.local_tables()? {
        if seen.insert((id, Tier::Fast)) {
            unlisted_note(&mut report, opener.location(id, Tier::Fast));
            check_table(opener, &mut report, id, Tier::Fast, None);
        }
    }
    for (id, _) in opener.capacity_tables()? {
        if seen.insert((id, Tier::Capacity)) {
            unlisted_note(&mut report, opener.location(id, Tier::Capacity));
            check_table(opener, &mut report, id, Tier::Capacity, None);
        }
    }
    Ok(report)
}

fn check_table(
    opener: &TableOpener,
    report: &mut VerifyReport,
    id: u64,
    tier: Tier,
    meta: Option<&FileMeta>,
) {
    let file = opener.location(id, tier);
    let result = (|| -> crate::Result<String> {
        let table = opener.open(id, tier, meta.map(|m| m.size))?;
        let dump = for_each_entry(&table, None, |_| true)?;
        let props = table.properties();
        if dump.entries != props.num_entries {
            return Err(crate::Error::corruption(format!(
                "{} entries, but the properties say {}",
                dump.entries, props.num_entries
            )));
        }
        if let Some(m) = meta {
            if m.num_entries != dump.entries {
                return Err(crate::Error::corruption(format!(
                    "{} entries, but the manifest says {}",
                    dump.entries, m.num_entries
                )));
            }
        }
        Ok(format!(
            "{} entries in {} blocks",
            dump.entries, dump.data_blocks
        ))
    })();
    match result {
        Ok(detail) => report.ok.push(VerifyFinding { file, detail }),
        Err(e) => report.corrupt.push(VerifyFinding {
            file,
            detail: e.to_string(),
        }),
    }
}
