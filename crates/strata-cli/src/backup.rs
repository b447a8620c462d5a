//! `strata backup create|list|verify|restore|purge|delete`: independent, incremental copies of
//! both tiers of a database under any object-store URL or directory. See `strata::backup` for
//! the layout and guarantees and docs/operating/checkpoints.md for the user's guide. Depends on
//! the `strata` crate only.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};
use strata::backup::{BackupEngine, BackupOptions, Progress};
use strata::storage::object::{CapacityOptions, Emulation};

/// Examples shown at the end of `strata backup --help`.
pub const EXAMPLES: &str = "\
Examples:
  strata backup create --db /var/lib/strata --capacity s3://bucket/db1 --to s3://backups/db1
  strata backup create --db /var/lib/strata --to /mnt/backups/db1 --rate-limit 50MiB --json
  strata backup list --from s3://backups/db1
  strata backup verify --from s3://backups/db1 --id 3
  strata backup restore --from s3://backups/db1 --db /data/db1-restored --capacity s3://bucket/db1-restored
  strata backup purge --from s3://backups/db1 --keep 7
  strata backup delete --from s3://backups/db1 --id 2";

#[derive(Args, Debug)]
pub struct BackupArgs {
    #[command(subcommand)]
    pub command: BackupCommand,
}

/// Transfer settings every subcommand that moves files takes.
#[derive(Args, Debug, Clone)]
pub struct Transfer {
    /// Files moved at once
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Bytes per second moved at most (`50MiB`); default unlimited
    #[arg(long, value_parser = strata_bench::args::parse_bytes)]
    pub rate_limit: Option<u64>,
    /// Emulate a link of this many MB/s (10^6 bytes) to each object store (the backup URL
    /// and the database's capacity tier), as `strata bench --capacity-mbps` does
    #[arg(long)]
    pub capacity_mbps: Option<f64>,
    /// Emulate this many milliseconds of latency on each object-store request
    #[arg(long, default_value_t = 0.0)]
    pub capacity_latency_ms: f64,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

impl Transfer {
    /// The options of the store at `url`, with the emulated link if one is asked for.
    fn store(&self, url: &str) -> CapacityOptions {
        let mut c = CapacityOptions::new(url);
        if self.capacity_mbps.is_some() || self.capacity_latency_ms > 0.0 {
            c.emulation = Some(Emulation {
                latency: Duration::from_secs_f64(self.capacity_latency_ms / 1000.0),
                bandwidth: self.capacity_mbps.map(|m| (m * 1e6) as u64),
                ..Default::default()
            });
        }
        c
    }
}

#[derive(Subcommand, Debug)]
pub enum BackupCommand {
    /// Back up a database (open in another process or not) to a URL or directory
    Create {
        /// The database's directory
        #[arg(long)]
        db: PathBuf,
        /// The database's capacity tier, if it has one
        #[arg(long)]
        capacity: Option<String>,
        /// Where backups go: an object-store URL (`s3://`, `file://`) or a directory
        #[arg(long)]
        to: String,
        /// A note stored with the backup
        #[arg(long, default_value = "")]
        app_metadata: String,
        #[command(flatten)]
        transfer: Transfer,
    },
    /// List the backups at a URL
    List {
        #[arg(long)]
        from: String,
        /// Print the result as JSON
        #[arg(long)]
        json: bool,
    },
    /// Re-read every file of a backup (all backups without --id) against its checksum; exit
    /// status 1 when anything is damaged
    Verify {
        #[arg(long)]
        from: String,
        #[arg(long)]
        id: Option<u64>,
        #[command(flatten)]
        transfer: Transfer,
    },
    /// Restore a backup (the newest without --id) into a new directory and capacity prefix
    Restore {
        #[arg(long)]
        from: String,
        #[arg(long)]
        id: Option<u64>,
        /// The restored database's new directory (must not exist)
        #[arg(long)]
        db: PathBuf,
        /// The restored database's capacity tier (an empty prefix); needed when the backup
        /// holds capacity-tier tables
        #[arg(long)]
        capacity: Option<String>,
        #[command(flatten)]
        transfer: Transfer,
    },
    /// Delete all backups but the newest N, and the files no remaining backup names
    Purge {
        #[arg(long)]
        from: String,
        #[arg(long)]
        keep: usize,
        /// Print the result as JSON
        #[arg(long)]
        json: bool,
    },
    /// Delete one backup, and the files no remaining backup names
    Delete {
        #[arg(long)]
        from: String,
        #[arg(long)]
        id: u64,
        /// Print the result as JSON
        #[arg(long)]
        json: bool,
    },
}

/// An object-store URL as given, or a directory (created if missing) as a `file://` URL.
pub fn backup_url(s: &str) -> Result<String> {
    if s.contains("://") {
        return Ok(s.to_string());
    }
    std::fs::create_dir_all(s).with_context(|| format!("creating {s}"))?;
    let abs = std::fs::canonicalize(s).with_context(|| format!("resolving {s}"))?;
    Ok(format!("file://{}", abs.display()))
}

fn engine(url: &str, transfer: Option<&Transfer>) -> Result<BackupEngine> {
    let url = backup_url(url)?;
    let o = match transfer {
        Some(t) => t.store(&url),
        None => CapacityOptions::new(&url),
    };
    BackupEngine::open(&o).with_context(|| format!("opening {url}"))
}

/// A result with how long it took, as JSON.
#[derive(serde::Serialize)]
struct Timed<'a, T: serde::Serialize> {
    #[serde(flatten)]
    result: &'a T,
    seconds: f64,
}

/// A progress bar on stderr when it is a terminal and the output is not JSON.
fn progress(what: &str, json: bool) -> (Option<ProgressBar>, Option<Progress>) {
    if json || !std::io::stderr().is_terminal() {
        return (None, None);
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{what} [{{bar:40}}] {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}"
        ))
        .expect("a valid template"),
    );
    let b = bar.clone();
    let report: Progress = Arc::new(move |done, total| {
        b.set_length(total);
        b.set_position(done);
    });
    (Some(bar), Some(report))
}

fn options(t: &Transfer, what: &str) -> (Option<ProgressBar>, BackupOptions) {
    let (bar, report) = progress(what, t.json);
    (
        bar,
        BackupOptions {
            concurrency: t.concurrency.max(1),
            rate_limit: t.rate_limit,
            progress: report,
            ..Default::default()
        },
    )
}

/// Runs `f` with `bar` on screen, clears it, and says how long `f` took.
fn with_bar<T>(bar: Option<ProgressBar>, f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let started = Instant::now();
    let out = f();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok((out?, started.elapsed().as_secs_f64()))
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

pub fn run(args: BackupArgs) -> Result<()> {
    match args.command {
        BackupCommand::Create {
            db,
            capacity,
            to,
            app_metadata,
            transfer,
        } => {
            let e = engine(&to, Some(&transfer))?;
            let (bar, mut o) = options(&transfer, "backup");
            o.app_metadata = app_metadata;
            let capacity = capacity.map(|c| transfer.store(&c));
            let (info, seconds) = with_bar(bar, || {
                e.create_from_dir(&db, capacity.as_ref(), &o)
                    .with_context(|| format!("backup of {} to {to}", db.display()))
            })?;
            if transfer.json {
                return print_json(&Timed {
                    result: &info,
                    seconds,
                });
            }
            println!("backup {} written to {to} in {seconds:.1} s", info.id);
            println!("  sequence   {}", info.sequence);
            println!("  files      {} ({} bytes)", info.files, info.bytes);
            println!(
                "  uploaded   {} files, {} bytes (the rest shared with earlier backups)",
                info.new_files, info.new_bytes
            );
            Ok(())
        }
        BackupCommand::List { from, json } => {
            let list = engine(&from, None)?.list()?;
            if json {
                return print_json(&list);
            }
            if list.is_empty() {
                println!("no backups at {from}");
            }
            for b in list {
                match (&b.info, &b.damaged) {
                    (Some(i), _) => println!(
                        "{}  {}  sequence {}  {} files  {} bytes ({} new)  {}",
                        i.id,
                        i.created_unix_ms,
                        i.sequence,
                        i.files,
                        i.bytes,
                        i.new_bytes,
                        i.app_metadata
                    ),
                    (None, Some(d)) => println!("{}  DAMAGED  {d}", b.id),
                    (None, None) => println!("{}", b.id),
                }
            }
            Ok(())
        }
        BackupCommand::Verify { from, id, transfer } => {
            let e = engine(&from, Some(&transfer))?;
            let (bar, o) = options(&transfer, "verify");
            let (reports, _) = with_bar(bar, || Ok(e.verify(id, &o)?))?;
            if transfer.json {
                print_json(&reports)?;
            } else {
                for r in &reports {
                    if r.damaged.is_empty() {
                        println!("backup {}: ok ({} files, {} bytes)", r.id, r.files, r.bytes);
                    } else {
                        println!("backup {}: {} damaged files", r.id, r.damaged.len());
                        for d in &r.damaged {
                            println!("  {}: {}", d.object, d.error);
                        }
                    }
                }
            }
            if reports.iter().any(|r| !r.damaged.is_empty()) {
                bail!("damage found");
            }
            if reports.is_empty() {
                bail!("no backups at {from}");
            }
            Ok(())
        }
        BackupCommand::Restore {
            from,
            id,
            db,
            capacity,
            transfer,
        } => {
            let e = engine(&from, Some(&transfer))?;
            let (bar, o) = options(&transfer, "restore");
            let capacity = capacity.map(|c| transfer.store(&c));
            let (info, seconds) = with_bar(bar, || {
                e.restore(id, &db, capacity.as_ref(), &o)
                    .with_context(|| format!("restore from {from} into {}", db.display()))
            })?;
            if transfer.json {
                return print_json(&Timed {
                    result: &info,
                    seconds,
                });
            }
            println!(
                "backup {} restored into {} in {seconds:.1} s",
                info.id, info.path
            );
            println!("  sequence   {}", info.sequence);
            println!(
                "  files      {} in the directory, {} capacity-tier tables{}, {} bytes",
                info.dir_files,
                info.capacity_tables,
                info.capacity
                    .as_deref()
                    .map(|c| format!(" in {c}"))
                    .unwrap_or_default(),
                info.bytes
            );
            Ok(())
        }
        BackupCommand::Purge { from, keep, json } => {
            let p = engine(&from, None)?.purge(keep)?;
            if json {
                return print_json(&p);
            }
            println!(
                "deleted backups {:?}; {} files ({} bytes) no remaining backup named",
                p.deleted_backups, p.deleted_files, p.deleted_bytes
            );
            Ok(())
        }
        BackupCommand::Delete { from, id, json } => {
            let p = engine(&from, None)?.delete(id)?;
            if json {
                return print_json(&p);
            }
            println!(
                "deleted backup {id}; {} files ({} bytes) no remaining backup named",
                p.deleted_files, p.deleted_bytes
            );
            Ok(())
        }
    }
}
