//! `strata checkpoint` and `strata clone`: consistent copies of a database, taken from outside
//! the process that has it open (a running `strata serve`) or of a closed one. See
//! `strata::checkpoint` for how a copy stays consistent while the source runs, and
//! docs/operating/checkpoints.md for the user's guide. Depends on the `strata` crate only.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use strata::checkpoint::{
    now_unix_ms, offline, CheckpointInfo, CheckpointKind, CheckpointOptions, Registry,
};
use strata::storage::object::{CapacityOptions, CapacityTier};

/// Examples shown at the end of `strata checkpoint --help`.
pub const CHECKPOINT_EXAMPLES: &str = "\
Examples:
  strata checkpoint --db /var/lib/strata --capacity s3://bucket/db1 --to /backups/ck-monday
  strata checkpoint --db /var/lib/strata --capacity s3://bucket/db1 --to /tmp/ck --expires 6h --json
  strata checkpoint --db /var/lib/strata --capacity s3://bucket/db1 --list
  strata checkpoint --db /var/lib/strata --capacity s3://bucket/db1 --release 1795902562717935512";

/// Examples shown at the end of `strata clone --help`.
pub const CLONE_EXAMPLES: &str = "\
Examples:
  strata clone --from /backups/ck-monday --db /data/db1-fork --capacity s3://bucket/db1-fork
  strata clone --from /var/lib/strata --source-capacity s3://bucket/db1 \\
      --db /data/db1-fork --capacity s3://bucket/db1-fork --json";

#[derive(Args, Debug)]
pub struct CheckpointArgs {
    /// The database's directory (it may be open in another process, e.g. `strata serve`)
    #[arg(long)]
    pub db: PathBuf,
    /// The database's capacity tier (`s3://`, `file://`), if it has one
    #[arg(long)]
    pub capacity: Option<String>,
    /// The new directory to write the checkpoint to (must not exist)
    #[arg(long, required_unless_present_any = ["list", "release"])]
    pub to: Option<PathBuf>,
    /// Release the checkpoint's protection of the source's tables after this long (`90s`,
    /// `6h`); default: until released
    #[arg(long, value_parser = strata_bench::args::parse_secs)]
    pub expires: Option<f64>,
    /// List the database's checkpoints and clones instead
    #[arg(long, conflicts_with_all = ["to", "release"])]
    pub list: bool,
    /// Release checkpoint ID (its tables are collected once nothing else needs them)
    #[arg(long, value_name = "ID", conflicts_with = "to")]
    pub release: Option<u64>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CloneArgs {
    /// A checkpoint's directory, or a database's (open elsewhere or not)
    #[arg(long)]
    pub from: PathBuf,
    /// The source's capacity tier, when --from is a database rather than a checkpoint (a
    /// checkpoint names it in its PARENT file)
    #[arg(long)]
    pub source_capacity: Option<String>,
    /// The clone's new directory (must not exist)
    #[arg(long)]
    pub db: PathBuf,
    /// The clone's own capacity tier: its new tables go there (a prefix apart from the
    /// source's); open the clone with it
    #[arg(long)]
    pub capacity: String,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

fn print_info(what: &str, info: &CheckpointInfo, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(info)?);
        return Ok(());
    }
    println!("{what} {} written to {}", info.id, info.path);
    println!("  sequence        {}", info.sequence);
    println!(
        "  fast tier       {} tables, {} bytes (hard-linked or copied)",
        info.fast_tables, info.fast_bytes
    );
    println!(
        "  capacity tier   {} tables, {} bytes (shared with the source, not copied)",
        info.capacity_tables, info.capacity_bytes
    );
    println!("  WAL             {} bytes copied", info.wal_bytes);
    match info.expires_unix_ms {
        Some(ms) => println!(
            "  expires         in {:.0} s",
            ms.saturating_sub(now_unix_ms()) as f64 / 1000.0
        ),
        None => println!(
            "  expires         never (release it with --release {})",
            info.id
        ),
    }
    Ok(())
}

pub fn run_checkpoint(args: CheckpointArgs) -> Result<()> {
    let capacity = args.capacity.as_deref().map(CapacityOptions::new);
    if args.list || args.release.is_some() {
        let tier = capacity
            .as_ref()
            .map(|c| CapacityTier::open(c, None, Default::default()))
            .transpose()
            .context("opening the capacity tier")?;
        let registry = Registry::new(&args.db, strata::storage::default_storage(), tier);
        if let Some(id) = args.release {
            let released = registry.remove(id).context("releasing the checkpoint")?;
            if !released {
                bail!("no checkpoint {id} in {}", registry.location());
            }
            if args.json {
                println!("{}", serde_json::json!({ "released": id }));
            } else {
                println!("released checkpoint {id}");
            }
            return Ok(());
        }
        let records = registry.list().context("reading the checkpoint registry")?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&records)?);
            return Ok(());
        }
        if records.is_empty() {
            println!("no checkpoints in {}", registry.location());
        }
        let now = now_unix_ms();
        for r in records {
            let state = if !r.complete {
                "incomplete"
            } else if r.expired(now) {
                "expired"
            } else {
                "ok"
            };
            println!(
                "{}  {:?}  {state}  sequence {}  {} capacity tables  {}",
                r.id,
                r.kind,
                r.sequence,
                r.tables.len(),
                r.path
            );
        }
        return Ok(());
    }
    let to = args.to.expect("clap requires --to");
    let o = CheckpointOptions {
        expires_after: args.expires.map(Duration::from_secs_f64),
        ..Default::default()
    };
    let info = offline::checkpoint_dir(&args.db, capacity.as_ref(), &to, &o)
        .with_context(|| format!("checkpoint of {} into {}", args.db.display(), to.display()))?;
    print_info("checkpoint", &info, args.json)
}

pub fn run_clone(args: CloneArgs) -> Result<()> {
    let own = CapacityOptions::new(args.capacity.clone());
    let source = args.source_capacity.as_deref().map(CapacityOptions::new);
    // The source's tier: a checkpoint's PARENT names it, else --source-capacity does.
    let parent = args.from.join(strata::tier::shared::PARENT_FILE);
    let source_url = match std::fs::read(&parent) {
        Ok(b) => Some(
            strata::checkpoint::ParentLink::decode(&b, &parent.display().to_string())?.capacity_url,
        ),
        Err(_) => source.as_ref().map(|s| s.url.clone()),
    };
    if source_url
        .as_deref()
        .is_some_and(|s| s.trim_end_matches('/') == own.url.trim_end_matches('/'))
    {
        bail!(
            "--capacity {} is the source's capacity tier: give the clone a prefix of its own \
             (its new tables would collide with the source's)",
            own.url
        );
    }
    let o = CheckpointOptions {
        kind: CheckpointKind::Clone,
        ..Default::default()
    };
    let info =
        offline::checkpoint_dir(&args.from, source.as_ref(), &args.db, &o).with_context(|| {
            format!(
                "clone of {} into {}",
                args.from.display(),
                args.db.display()
            )
        })?;
    print_info("clone", &info, args.json)?;
    if !args.json {
        println!(
            "  open it with    --db {} --capacity {}",
            args.db.display(),
            args.capacity
        );
    }
    Ok(())
}
