//! `strata recover`: rebuilds a database whose fast directory was lost (RocksMash §3.4) from
//! its log location (the mirrored manifest and the extended WAL) and its capacity tier, into
//! a new directory, then opens it once (replaying the unflushed WAL tail) and closes it.
//!
//! The options that shape tables (levels, block size) must match the database's: the flags
//! below cover those `strata bench` and `strata serve` set. Depends on the `strata` crate only.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use strata::recovery::RecoveryMode;

/// Examples shown at the end of `strata recover --help`.
pub const EXAMPLES: &str = "\
Examples:
  strata recover --wal-location s3://bucket/db1-log --capacity s3://bucket/db1 --db /mnt/nvme/db1
  strata recover --wal-location /mnt/ebs/wal --capacity file:///mnt/cap --db /data/db --json
  strata recover --wal-location /mnt/ebs/wal --db /data/db --recovery replay --num-levels 5";

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// Where the database kept its log (its --wal-location): a directory or an s3:// or
    /// file:/// URL
    #[arg(long, help_heading = "Lost database")]
    pub wal_location: PathBuf,
    /// Emulated latency per request of an object-store log location, in milliseconds (testing)
    #[arg(long, default_value_t = 0.0, help_heading = "Lost database")]
    pub wal_latency_ms: f64,
    /// The capacity tier's URL (`file://`, `s3://`, `memory://`), if the database had one
    #[arg(long, help_heading = "Lost database")]
    pub capacity: Option<String>,
    /// The new data directory to rebuild into (empty or absent)
    #[arg(long, help_heading = "Rebuild")]
    pub db: PathBuf,
    /// How to rebuild: `parallel` (one worker per lost table) or `replay` (replay the log in
    /// order through memtables; slower, the baseline)
    // `parallel` is RocksMash §3.4's recovery.
    #[arg(long, default_value = "parallel", help_heading = "Rebuild")]
    pub recovery: RecoveryMode,
    /// Levels of the tree (must match the database)
    #[arg(
        long,
        default_value_t = 7,
        help_heading = "Database options (must match)"
    )]
    pub num_levels: usize,
    /// Levels counted from the bottom on the capacity tier (must match the database)
    #[arg(
        long,
        default_value_t = 1,
        help_heading = "Database options (must match)"
    )]
    pub capacity_levels: usize,
    /// Memtable size for the replay baseline and the tail replay, in bytes
    #[arg(long, default_value_t = 64 << 20, help_heading = "Rebuild")]
    pub write_buffer_size: usize,
    /// Seconds the log's previous holder must have been silent before its lease is taken
    /// over (object-store log locations)
    ///
    /// After a node loss recovery waits this long, unless that node closed its database.
    #[arg(
        long,
        default_value_t = strata::Options::default().wal_lease_ttl.as_secs_f64(),
        help_heading = "Lost database"
    )]
    pub wal_lease_ttl_secs: f64,
    /// Print the report as JSON
    #[arg(long, help_heading = "Rebuild")]
    pub json: bool,
}

pub fn run(args: RecoverArgs) -> Result<()> {
    let mut o = strata::Options {
        num_levels: args.num_levels,
        capacity_levels: args.capacity_levels,
        write_buffer_size: args.write_buffer_size,
        wal_location: Some(args.wal_location.clone()),
        extended_wal: true,
        wal_lease_ttl: strata_server::config::positive_secs(args.wal_lease_ttl_secs)
            .context("--wal-lease-ttl-secs must be a positive number of seconds")?,
        ..Default::default()
    };
    if args.wal_latency_ms > 0.0 {
        o.wal_emulation = Some(strata::storage::object::Emulation {
            latency: std::time::Duration::from_secs_f64(args.wal_latency_ms / 1000.0),
            ..Default::default()
        });
    }
    if let Some(url) = &args.capacity {
        o.capacity = Some(strata::storage::object::CapacityOptions::new(url.clone()));
    }
    let r = strata::recovery::recover(&args.db, o, args.recovery).with_context(|| {
        format!(
            "recovering {} from {}",
            args.db.display(),
            args.wal_location.display()
        )
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "recovered {} ({} mode, {} threads): {} lost fast-tier tables, {} tables written \
             ({} entries, {:.1} MiB) from {} WAL files ({:.1} MiB)\n  prepare {:.3}s  read \
             {:.3}s  index {:.3}s  build {:.3}s  open {:.3}s{}  total {:.3}s",
            args.db.display(),
            r.mode,
            r.threads,
            r.lost_tables,
            r.tables_written,
            r.entries,
            r.bytes_written as f64 / (1 << 20) as f64,
            r.wal_files,
            r.wal_bytes as f64 / (1 << 20) as f64,
            r.prepare_secs,
            r.read_secs,
            r.index_secs,
            r.build_secs,
            r.open_secs,
            if r.mode == "replay" {
                " (with the compactions it leaves)"
            } else {
                ""
            },
            r.total_secs,
        );
    }
    Ok(())
}
