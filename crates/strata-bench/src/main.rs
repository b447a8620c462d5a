//! `strata-bench`: the benchmark tool on its own (the `strata` binary runs the same code as
//! `strata bench`). See `strata-bench --help` and the README's "Benchmarks" section.

use clap::Parser;

/// The allocator the `strata` binary ships with (see `strata-cli`), so both binaries measure the
/// same thing. It serves Rust allocations only: RocksDB's C++ code keeps glibc's malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Shown at the end of `strata-bench --help` (`strata bench` has its own, in `strata-cli`).
const EXAMPLES: &str = "\
Examples:
  strata-bench --benchmarks fillrandom,readrandom --num 1000000 --threads 2
  strata-bench --workload c --distribution zipfian --capacity file:///tmp/strata-cap \\
      --capacity-latency-ms 5 --json run.json --plot run.png
  strata-bench --engine rocksdb --benchmarks fillrandom,readrandom --csv rocksdb.csv";

#[derive(Parser)]
#[command(
    name = "strata-bench",
    version,
    about = "db_bench- and YCSB-style benchmarks for Strata and its peers",
    after_help = EXAMPLES
)]
struct Cli {
    #[command(flatten)]
    args: strata_bench::BenchArgs,
}

fn main() -> anyhow::Result<()> {
    strata_bench::run(Cli::parse().args)
}
