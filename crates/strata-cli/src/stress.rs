//! `strata stress`: the randomized SIGKILL stress harness of `crates/strata-stress`, and its
//! hidden child subcommand `stress-child` (this same binary, re-invoked by the parent).
//!
//! Exit status 0 only when every round verified (nothing lost, no phantoms, no failed round);
//! the last line printed is always `N rounds, K kills, L lost, P phantoms`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Examples shown at the end of `strata stress --help`.
pub const EXAMPLES: &str = "\
Examples:
  strata stress --dir /tmp/stress --rounds 300 --seconds-per-round 2
  strata stress --dir /tmp/stress --rounds 1000 --seconds-per-round 5 --seed 42 --no-progress
  strata stress --dir /tmp/stress --rounds 100 --replica-rounds
  strata stress --dir /tmp/stress --rounds 100 --column-families";

#[derive(Args, Debug)]
pub struct StressArgs {
    /// Working directory; failed rounds are copied to `failed-SEED-ROUND` inside it
    ///
    /// It holds the database (`db`), its capacity tier (`cap`) and the child's event log.
    #[arg(long, default_value = "./strata-stress", help_heading = "Run")]
    pub dir: PathBuf,
    /// Rounds (each one child process, killed or closed, then verified)
    #[arg(long, default_value_t = 20, help_heading = "Run")]
    pub rounds: u64,
    /// Longest life of a child in seconds (kills land at random moments within it)
    #[arg(long, default_value_t = 3.0, help_heading = "Run")]
    pub seconds_per_round: f64,
    /// Seed of every random choice (printed at start; pass it to replay a run)
    #[arg(long, help_heading = "Run")]
    pub seed: Option<u64>,
    /// Every database uses the extended WAL and every round after a database's first runs a
    /// read replica beside the child, checked for bounded staleness; every other one loses the
    /// node and fails over to it (otherwise: half of the extended-WAL rounds, a quarter of
    /// databases, fail over when they lose the node and would rebuild it by opening)
    #[arg(long, help_heading = "Run")]
    pub replica_rounds: bool,
    /// Half of the extended-WAL databases keep their log location on a `file://` object store
    /// (segments uploaded at each sync, a lease, replicas following by requests) instead of a
    /// directory; their writes all sync. Off by default until longer runs back it (its first
    /// runs found replay-mode recovery serving records a split-forest merge had superseded,
    /// seed 5151 with --replica-rounds, since fixed).
    #[arg(long, help_heading = "Run")]
    pub object_store_logs: bool,
    /// Every database has one or two column families besides the default (keys dealt to
    /// them by block, batches across them), and no extended WAL, which refuses families
    /// (otherwise: 30% of the databases without the extended WAL)
    #[arg(long, help_heading = "Run", conflicts_with = "replica_rounds")]
    pub column_families: bool,
    /// No progress bar
    #[arg(long, help_heading = "Output")]
    pub no_progress: bool,
}

#[derive(Args, Debug)]
pub struct ChildArgs {
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub round: u64,
    /// Close cleanly after this many seconds (default: run until killed).
    #[arg(long)]
    pub seconds: Option<f64>,
}

pub fn run(args: StressArgs) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("strata stress: cannot find this executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = strata_stress::run(strata_stress::RunArgs {
        dir: args.dir,
        rounds: args.rounds,
        seconds_per_round: args.seconds_per_round,
        seed: args.seed,
        progress: !args.no_progress,
        replica_rounds: args.replica_rounds,
        object_store_logs: args.object_store_logs,
        column_families: args.column_families,
        child_exe: exe,
        child_args: vec!["stress-child".into()],
    });
    match result {
        Ok(sum) => {
            println!("{}", sum.details());
            println!("{}", sum.line());
            if sum.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("strata stress: {e:#}");
            ExitCode::FAILURE
        }
    }
}

pub fn run_child(args: ChildArgs) -> anyhow::Result<()> {
    strata_stress::child_main(&args.dir, args.round, args.seconds)
}
