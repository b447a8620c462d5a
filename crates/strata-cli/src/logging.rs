//! Log setup for every subcommand: `tracing` events to stderr through `tracing-subscriber`,
//! filtered by a level (`info`) or a target list (`strata_server=debug,info`).
//!
//! Invariant: installed at most once per process, before any subcommand work starts.
//! Depends only on `tracing-subscriber`; must not depend on the engine or the server.

use std::io::IsTerminal;

use anyhow::{Context, Result};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// Installs the global subscriber.
pub fn init(level: &str) -> Result<()> {
    let filter: Targets = level
        .parse()
        .with_context(|| format!("invalid log level '{level}'"))?;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .try_init()
        .context("installing the log subscriber")?;
    Ok(())
}
