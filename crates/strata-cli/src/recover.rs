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

#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// The log location the database was run with (`--wal-location`): a directory or an
    /// object-store URL (`s3://bucket/prefix`, `file:///abs`).
    #[arg(long)]
    pub wal_location: PathBuf,
    /// Emulated latency per request of an object-store log location, in milliseconds.
    #[arg(long, default_value_t = 0.0)]
    pub wal_latency_ms: f64,
    /// The capacity tier's URL (`file://`, `s3://`, `memory://`), if the database had one.
    #[arg(long)]
    pub capacity: Option<String>,
    /// The new fast directory to rebuild into (empty or absent).
    #[arg(long)]
    pub db: PathBuf,
    /// `parallel` (one worker per lost table, RocksMash §3.4) or `replay` (chronological
    /// replay through memtables, the baseline).
    #[arg(long, default_value = "parallel")]
    pub recovery: RecoveryMode,
    /// Levels of the tree (must match the database).
    #[arg(long, default_value_t = 7)]
    pub num_levels: usize,
    /// Levels counted from the bottom on the capacity tier (must match the database).
    #[arg(long, default_value_t = 1)]
    pub capacity_levels: usize,
    /// Memtable size for the replay baseline and the tail replay, in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    pub write_buffer_size: usize,
    /// Seconds the log location's previous holder must have been silent before its lease is
    /// taken over (an object-store log location; recovery after a node loss waits this long
    /// unless that node closed its database).
    #[arg(long, default_value_t = strata::Options::default().wal_lease_ttl.as_secs_f64())]
    pub wal_lease_ttl_secs: f64,
    /// Print the report as JSON.
    #[arg(long)]
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
