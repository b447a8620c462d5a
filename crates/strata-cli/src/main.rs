//! The `strata` command line. Each subcommand is its own module with its own clap `Args`
//! struct and `run` function; `main` only parses and dispatches, so new subcommands (`bench`,
//! `inspect`, the compaction service) are added as a module plus one enum variant.
//!
//! Invariant: a subcommand returns an error instead of exiting, and `main` turns it into a
//! message on stderr and exit status 1. Depends on the `strata`, `strata-server` and
//! `strata-bench` crates; no
//! library depends on this crate.

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

/// Strata: an LSM-tree key-value store for tiered storage.
#[derive(Parser, Debug)]
#[command(name = "strata", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a Redis-protocol (RESP2/RESP3) server over a Strata database.
    Serve(serve::ServeArgs),
    /// Benchmark Strata (and, with the `rocksdb`/`slatedb` features, its peers): db_bench and
    /// YCSB workloads with tier-aware reports, JSON, CSV and plots.
    Bench(strata_bench::BenchArgs),
    /// Read-only views of a database's files (manifest, tables, WALs, a key's versions) and a
    /// checksum pass over both tiers (`verify`); works while another process has it open.
    Inspect(inspect::InspectArgs),
    /// Randomized crash stress test: a child runs a random workload under random options and
    /// is SIGKILLed at random moments; every reopen is checked against acknowledged writes.
    Stress(stress::StressArgs),
    /// Rebuild a database whose fast directory was lost, from its log location (extended WAL,
    /// mirrored manifest) and capacity tier (RocksMash §3.4).
    Recover(recover::RecoverArgs),
    /// The compaction service's control plane (CaaS-LSM): workers register with it, databases
    /// submit compaction jobs to it. `compaction-service status` prints a running one's state.
    CompactionService(compaction::ServiceArgs),
    /// A compaction worker: runs jobs the control plane assigns, reading and writing tables
    /// under its roots.
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
