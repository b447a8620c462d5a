//! `strata-bench`: the benchmark tool on its own (the `strata` binary runs the same code as
//! `strata bench`). See `strata-bench --help` and the README's "Benchmarks" section.

use clap::Parser;

/// The allocator the `strata` binary ships with (see `strata-cli`), so both binaries measure the
/// same thing. It serves Rust allocations only: RocksDB's C++ code keeps glibc's malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "strata-bench",
    version,
    about = "db_bench- and YCSB-style benchmarks for Strata and its peers"
)]
struct Cli {
    #[command(flatten)]
    args: strata_bench::BenchArgs,
}

fn main() -> anyhow::Result<()> {
    strata_bench::run(Cli::parse().args)
}
