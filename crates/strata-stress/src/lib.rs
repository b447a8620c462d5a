//! `strata stress`: Strata's db_stress. A parent process runs rounds over one database
//! directory; in each round a child process (the `strata` binary re-invoked as the hidden
//! `stress-child` subcommand) opens the database with options drawn at random
//! ([`config::draw_options`]) and runs a randomized workload (puts, deletes, range deletes,
//! merges, batches, gets, snapshot reads and scans in both directions) until the parent SIGKILLs
//! it at a random moment (or, in some rounds, it closes cleanly). The parent then reopens the
//! database and checks it against its record of acknowledged writes ([`oracle`]).
//!
//! Modules: `config` (option drawing, the only place new features add a switch), `keys` (keys and
//! self-describing values), `families` (column families: keys dealt to families by block), `merge` (the merge operator the workload writes with), `history`
//! (per-key version histories the child checks reads against),
//! `child` (the workload), `copies` (checkpoints, clones and backups of a verified database
//! checked against the oracle), `oracle` (the parent's expected state, the child's event log and the
//! after-kill verification), `replica` (a read replica checked beside the child, and promoted
//! in failover rounds), `runner` (rounds, kills, progress, summary, failure copies).
//! Depends on `strata` and `strata-test-support` (its seeded PRNG); the CLI depends on this crate.

pub mod child;
pub mod config;
pub mod copies;
pub mod families;
pub mod history;
pub mod keys;
pub mod merge;
pub mod oracle;
pub mod replica;
pub mod runner;

pub use child::child_main;
pub use config::{draw_options, StressConfig};
pub use runner::{run, RunArgs, Summary};
