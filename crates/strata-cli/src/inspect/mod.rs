//! `strata inspect`: read-only views of a database's files, like RocksDB's `ldb` and
//! `sst_dump` — the manifest as levels → runs → tables, one table, the WALs, every version of a
//! key, and a checksum pass over both tiers (`verify`).
//!
//! Invariant: nothing here opens the database, takes its lock or writes a file in it, so it
//! works beside a process that has it open and on a database that will not open. All decoding
//! goes through `strata::inspect`; this module only parses flags and prints. Depends on the
//! `strata` crate only.

mod print;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use strata::inspect::{self, TableOpener};
use strata::tier::Tier;

/// Examples shown at the end of `strata inspect --help`.
pub const EXAMPLES: &str = "\
Examples:
  strata inspect --db /data/db --capacity file:///data/capacity
  strata inspect table 12 --entries --limit 20 --db /data/db
  strata inspect get user42 --db /data/db --capacity file:///data/capacity
  strata inspect verify --db /data/db --capacity file:///data/capacity --wal-location /mnt/wal";

// Examples at the end of each mode's `--help`.
const MANIFEST_EXAMPLE: &str = "Example:\n  strata inspect manifest --edits --db /data/db";
const TABLE_EXAMPLE: &str = "\
Examples:
  strata inspect table 12 --entries --limit 20 --db /data/db --capacity file:///data/capacity
  strata inspect table /data/db/000012.sst --db /data/db";
const WAL_EXAMPLE: &str = "Example:\n  strata inspect wal 12 --limit 0 --db /data/db";
const GET_EXAMPLE: &str = "\
Examples:
  strata inspect get user42 --db /data/db --capacity file:///data/capacity
  strata inspect get 0x00ff10 --db /data/db --wal-location /mnt/wal";
const VERIFY_EXAMPLE: &str =
    "Example:\n  strata inspect verify --db /data/db --capacity file:///data/capacity";

/// Options of `strata inspect`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = false)]
pub struct InspectArgs {
    /// Database directory (the fast tier); required
    #[arg(long, global = true, value_name = "DIR", help_heading = "Database")]
    pub db: Option<PathBuf>,
    /// Capacity tier URL (file://DIR, s3://BUCKET/PREFIX, memory://NAME), when the database
    /// has one; without it capacity-tier tables cannot be read
    #[arg(long, global = true, value_name = "URL", help_heading = "Database")]
    pub capacity: Option<String>,
    /// The database's WAL directory, when its write-ahead logs live apart from it
    ///
    /// `wal`, `get` and `verify` then read the logs in both places.
    #[arg(long, global = true, value_name = "DIR", help_heading = "Database")]
    pub wal_location: Option<PathBuf>,
    #[command(subcommand)]
    pub mode: Option<Mode>,
}

#[derive(Subcommand, Debug)]
pub enum Mode {
    /// The manifest as levels, sorted runs and tables (the default): sizes, key ranges, tiers
    #[command(after_help = MANIFEST_EXAMPLE)]
    Manifest {
        /// Also print every manifest record (the edits)
        #[arg(long)]
        edits: bool,
    },
    /// One table: properties, range tombstones, index and (with --entries) its entries
    #[command(after_help = TABLE_EXAMPLE)]
    Table {
        /// Table id (looked up in the manifest, else on either tier) or a path to a .sst file
        table: String,
        /// Print the entries too (at most --limit)
        #[arg(long)]
        entries: bool,
        /// Most entries to print with --entries; 0 prints all
        #[arg(long, default_value_t = 100)]
        limit: u64,
    },
    /// The write-ahead logs' records (every log in the directory, or the one given)
    #[command(after_help = WAL_EXAMPLE)]
    Wal {
        /// A WAL file number or path; all logs when omitted
        file: Option<String>,
        /// Most operations to print per record; 0 prints all
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Where each version of KEY lives: WAL records and tables, level by level, with tiers
    #[command(after_help = GET_EXAMPLE)]
    Get {
        /// The user key (as text; `0x…` for hex)
        key: String,
    },
    /// Check every checksum: every table, WAL and manifest record on both tiers
    ///
    /// Prints one line per file checked, then a summary; exit status 1 names each corrupt
    /// file.
    #[command(after_help = VERIFY_EXAMPLE)]
    Verify,
}

/// Runs `strata inspect`; the exit code is 1 when `verify` finds damage.
pub fn run(args: InspectArgs) -> Result<ExitCode> {
    let dir = args
        .db
        .clone()
        .context("--db DIR is required (the database directory)")?;
    if !dir.is_dir() {
        bail!("{}: not a directory", dir.display());
    }
    let log_dir = args.wal_location.as_deref();
    if let Some(l) = log_dir {
        if strata::storage::object::is_object_store_location(l) {
            bail!(
                "--wal-location {}: inspect reads logs in a directory; a log on an object store \
                 is replayed by `strata recover` (its unsynced tail is staged in DB/wal-stage)",
                l.display()
            );
        }
        if !l.is_dir() {
            bail!("--wal-location {}: not a directory", l.display());
        }
    }
    // The modes that read logs read the manifest once, for its live log number too.
    let reads_logs = !matches!(
        args.mode,
        None | Some(Mode::Manifest { .. }) | Some(Mode::Table { .. })
    );
    let mut manifest = reads_logs.then(|| inspect::read_manifest(&dir));
    let live = manifest
        .as_ref()
        .and_then(|m| m.as_ref().ok())
        .and_then(|m| m.log_number());
    if reads_logs {
        warn_if_live_log_missing(&dir, log_dir, live);
    }
    let opener = TableOpener::new(&dir, args.capacity.as_deref())
        .with_context(|| format!("opening capacity tier {:?}", args.capacity))?;
    let mut out = std::io::stdout().lock();
    match args.mode.unwrap_or(Mode::Manifest { edits: false }) {
        Mode::Manifest { edits } => {
            let m = inspect::read_manifest(&dir)
                .with_context(|| format!("reading the manifest of {}", dir.display()))?;
            let temps = match inspect::read_temperatures(&dir) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("warning: {e}; temperatures not shown");
                    None
                }
            };
            print::manifest(&mut out, &m, edits, temps.as_ref())?;
        }
        Mode::Table {
            table,
            entries,
            limit,
        } => {
            let (t, location) = open_table(&dir, &opener, &table)?;
            print::table(&mut out, &t, &location, entries.then_some(limit))?;
        }
        Mode::Wal { file, limit } => {
            let wals = inspect::list_wals(&dir, log_dir)?;
            let chosen: Vec<PathBuf> = match file {
                None => wals.iter().map(|(_, p)| p.clone()).collect(),
                Some(f) => match f.parse::<u64>() {
                    Ok(n) => match wals.iter().find(|(m, _)| *m == n) {
                        Some((_, p)) => vec![p.clone()],
                        None => vec![dir.join(format!("{n:06}.log"))],
                    },
                    Err(_) => vec![PathBuf::from(f)],
                },
            };
            if chosen.is_empty() {
                match log_dir {
                    Some(l) => println!(
                        "no write-ahead logs in {} or {}",
                        dir.display(),
                        l.display()
                    ),
                    None => println!(
                        "no write-ahead logs in {} (pass --wal-location DIR if they live apart)",
                        dir.display()
                    ),
                }
            }
            let newest = wals.last().map(|(n, _)| *n);
            let mut failed = false;
            for p in chosen {
                let number = wals.iter().find(|(_, q)| *q == p).map(|(n, _)| *n);
                let torn_ok = number.is_some_and(|n| inspect::torn_tail_allowed(n, newest, live));
                match inspect::read_wal(&p, torn_ok) {
                    Ok(w) => print::wal(&mut out, &p, &w, limit)?,
                    Err(e) => {
                        // One damaged log does not hide the others.
                        eprintln!("error: reading {}: {e}", p.display());
                        failed = true;
                    }
                }
            }
            if failed {
                return Ok(ExitCode::FAILURE);
            }
        }
        Mode::Get { key } => {
            let key = print::parse_key(&key)?;
            let manifest = match manifest
                .take()
                .unwrap_or_else(|| inspect::read_manifest(&dir))
            {
                Ok(m) => Some(m),
                Err(e) => {
                    eprintln!("warning: the manifest cannot be read ({e}); WALs only");
                    None
                }
            };
            let found = inspect::locate_key(&dir, log_dir, manifest.as_ref(), &opener, &key)?;
            print::versions(&mut out, &key, &found.versions, &opener)?;
            for (loc, e) in &found.problems {
                eprintln!("warning: {loc}: {e}");
            }
            if !found.problems.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
        }
        Mode::Verify => {
            let report = inspect::verify(&dir, log_dir, &opener)?;
            print::verify(&mut out, &report)?;
            if !report.is_clean() {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Warns when the manifest's live log (the oldest holding unflushed writes) is in neither
/// place this run reads logs from: its writes would be missing from `wal`, `get` and `verify`.
fn warn_if_live_log_missing(dir: &Path, log_dir: Option<&Path>, live: Option<u64>) {
    let Some(live) = live else {
        return;
    };
    let Ok(wals) = inspect::list_wals(dir, log_dir) else {
        return;
    };
    if live > 0 && !wals.iter().any(|(n, _)| *n == live) {
        let hint = match log_dir {
            Some(l) => format!("nor in {}", l.display()),
            None => "(pass --wal-location DIR if the database keeps its logs apart)".into(),
        };
        eprintln!(
            "warning: the live write-ahead log {live:06}.log is not in {} {hint}; its unflushed \
             writes are not shown",
            dir.display()
        );
    }
}

/// Opens a table named by id (manifest first, then either tier) or by path.
fn open_table(
    dir: &Path,
    opener: &TableOpener,
    name: &str,
) -> Result<(std::sync::Arc<strata::sst::Table>, String)> {
    let Ok(id) = name.trim_end_matches(".sst").parse::<u64>() else {
        let p = Path::new(name);
        let t = TableOpener::open_path(p).with_context(|| format!("opening {name}"))?;
        return Ok((t, p.display().to_string()));
    };
    let listed = inspect::read_manifest(dir).ok().and_then(|m| {
        m.version
            .all_files()
            .find(|f| f.meta.id == id)
            .map(|f| (f.meta.tier, f.meta.size))
    });
    let (tier, size) = match listed {
        Some((tier, size)) => (tier, Some(size)),
        None if dir.join(format!("{id:06}.sst")).exists() => (Tier::Fast, None),
        None if opener.has_capacity() => (Tier::Capacity, None),
        None => bail!(
            "table {id} is not in the manifest or the database directory (pass --capacity URL \
             if it is on the capacity tier)"
        ),
    };
    let location = opener.location(id, tier);
    let t = opener
        .open(id, tier, size)
        .with_context(|| format!("opening {location}"))?;
    Ok((t, location))
}
