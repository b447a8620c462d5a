//! The `strata` command line. Each subcommand is its own module with its own clap `Args`
//! struct and `run` function; `main` only parses and dispatches, so new subcommands (`bench`,
//! `inspect`, the compaction service) are added as a module plus one enum variant.
//!
//! Invariant: a subcommand returns an error instead of exiting, and `main` turns it into a
//! message on stderr and exit status 1. Depends on the `strata`, `strata-server` and
//! `strata-bench` crates; no
//! library depends on this crate.

mod backup;
mod checkpoint;
mod compaction;
mod inspect;
mod logging;
mod recover;
mod serve;
mod stress;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: the engine and the server allocate many small, short-lived buffers from many
/// threads, where glibc's allocator spends a measurable share of the time consolidating. Built
/// with `no_thp`: it does not ask for transparent huge pages, whose first touch (the kernel
/// zeroing 2 MiB in the page fault) stalled `strata serve` requests — p99 of pipelined SET and
/// INCR 7–9 ms with them, 3–5 ms without (bench/results/serve-thp-1); Redis's documentation
/// asks for THP off for the same reason. (Where the system's THP mode is `always` rather than
/// `madvise`, the kernel still uses huge pages: `MIMALLOC_ALLOW_THP=0` turns them off for the
/// process.)
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Strata: an LSM-tree key-value store for tiered storage (a fast local disk in front of an
/// object store).
///
/// Run a Redis-protocol server over a database (serve), benchmark it (bench), look at its files
/// (inspect), crash-test it (stress), rebuild it after losing its data disk (recover), or run
/// compactions on other machines (compaction-service, compaction-worker). Each command's
/// `--help` ends with examples.
// No bare `about`: it would take Cargo.toml's description instead of the doc comment above.
#[derive(Parser, Debug)]
#[command(name = "strata", version, propagate_version = true, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Shown at the end of `strata --help`.
const EXAMPLES: &str = "\
Examples:
  strata serve --port 6380 --dir /var/lib/strata
  strata bench --workload c --capacity file:///tmp/strata-cap --json run.json
  strata inspect verify --db /var/lib/strata --capacity file:///var/lib/strata/capacity
  strata recover --wal-location s3://bucket/db1-log --capacity s3://bucket/db1 --db /mnt/db1";

/// Shown at the end of `strata bench --help` (the flags live in `strata_bench::BenchArgs`).
const BENCH_EXAMPLES: &str = "\
Examples:
  strata bench --benchmarks fillrandom,readrandom --num 1000000 --threads 2
  strata bench --workload c --distribution zipfian --capacity file:///tmp/strata-cap \\
      --capacity-latency-ms 5 --json run.json --plot run.png
  strata bench --workload rw --duration 2m --capacity file:///tmp/strata-cap \\
      --golden /tmp/strata-golden --hotspot-schedule hotrap
  strata bench --engine rocksdb --benchmarks fillrandom,readrandom --csv rocksdb.csv";

// Parsed once per run: the size of the serve variant's flags does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Run a Redis-protocol (RESP2/RESP3) server over a Strata database.
    ///
    /// Settings come from built-in defaults, then a TOML file (--config), then --set KEY=VALUE,
    /// then the dedicated flags below. Sizes accept Redis units (64mb, 1gb, 512kb).
    #[command(after_help = serve::EXAMPLES)]
    Serve(serve::ServeArgs),
    /// Benchmark Strata with db_bench and YCSB workloads: tier-aware reports, JSON, CSV, plots.
    ///
    /// With the `rocksdb` and `slatedb` build features it runs the same workloads on RocksDB
    /// and SlateDB. Operation counts (--num, --reads, --ops) are totals shared by all threads
    /// (db_bench counts per thread).
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(strata_bench::BenchArgs),
    /// Show a database's files (manifest, tables, WALs, a key's versions) or verify checksums.
    ///
    /// Read-only: it never opens the database or takes its lock, so it works while a server
    /// has the database open and on a database that will not open. --db, --capacity and
    /// --wal-location go before or after the subcommand.
    #[command(after_help = inspect::EXAMPLES)]
    Inspect(inspect::InspectArgs),
    /// Take a consistent copy of a database that opens as a database (fast-tier files linked,
    /// capacity-tier tables shared and protected), list or release copies.
    ///
    /// Works while another process (strata serve) has the database open. Prints the result
    /// on stdout (--json: as JSON).
    #[command(after_help = checkpoint::CHECKPOINT_EXAMPLES)]
    Checkpoint(checkpoint::CheckpointArgs),
    /// Fork a database from a checkpoint (or a database): a writable copy that shares the
    /// source's capacity-tier tables until its own compactions rewrite them, and writes only
    /// to its own capacity prefix.
    #[command(after_help = checkpoint::CLONE_EXAMPLES)]
    Clone(checkpoint::CloneArgs),
    /// Back up a database to any object-store URL or directory, and list, verify, restore,
    /// purge or delete backups.
    ///
    /// A backup is an independent copy of both tiers; tables are named by their content and
    /// uploaded once, shared by every backup that holds them. Works while another process
    /// (strata serve) has the database open.
    #[command(after_help = backup::EXAMPLES)]
    Backup(backup::BackupArgs),
    /// Crash-test the engine: kill a random workload at random moments and check every reopen.
    ///
    /// Each round a child process runs a random workload under random options and is SIGKILLed
    /// at a random moment; the database is then reopened and checked against every
    /// acknowledged write. Exit status 0 only when every round verified.
    #[command(after_help = stress::EXAMPLES)]
    Stress(stress::StressArgs),
    /// Rebuild a database whose data directory was lost, from its WAL location and capacity
    /// tier.
    ///
    /// The database must have run with --wal-location (and --extended-wal true for the fast
    /// tier's tables to be rebuilt). The rebuilt database goes into a new directory (--db),
    /// which is then opened once, replaying the unflushed log tail, and closed.
    // Node-loss recovery follows RocksMash §3.4.
    #[command(after_help = recover::EXAMPLES)]
    Recover(recover::RecoverArgs),
    /// Run the compaction service that databases send compaction jobs to, or query one.
    ///
    /// Workers (`strata compaction-worker`) register with it; databases (`strata serve
    /// --compaction-service`, `strata bench --compaction-service`) submit jobs to it, and it
    /// hands each job to a worker. `status` prints a running service's state; `bench`
    /// measures its throughput.
    // The control plane of CaaS-LSM's compaction-as-a-service design.
    #[command(after_help = compaction::SERVICE_EXAMPLES)]
    CompactionService(compaction::ServiceArgs),
    /// Run a compaction worker: it takes jobs from a compaction service and runs them.
    ///
    /// It reads and writes tables under its roots (--root), which must include the databases'
    /// directories (a shared mount) and capacity tiers.
    // A Compaction Service Agent, in CaaS-LSM's terms.
    #[command(after_help = compaction::WORKER_EXAMPLES)]
    CompactionWorker(compaction::WorkerArgs),
    /// The child process of `strata stress` (internal).
    #[command(hide = true)]
    StressChild(stress::ChildArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Bench(args) => strata_bench::run(args),
        Command::Inspect(args) => match inspect::run(args) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Command::Stress(args) => return stress::run(args),
        Command::Checkpoint(args) => checkpoint::run_checkpoint(args),
        Command::Clone(args) => checkpoint::run_clone(args),
        Command::Backup(args) => backup::run(args),
        Command::Recover(args) => recover::run(args),
        Command::StressChild(args) => stress::run_child(args),
        Command::CompactionService(args) => compaction::run_service(args),
        Command::CompactionWorker(args) => return compaction::run_worker(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata: {e:#}");
            ExitCode::FAILURE
        }
    }
}
