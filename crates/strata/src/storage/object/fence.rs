//! The write fence of a database whose log location holds a lease (`lease.rs`): what every
//! request that makes data durable checks first — the log location's writes (WAL segments,
//! the mirrored manifest) and the capacity tier's (table uploads, their multipart
//! completions, deletions by garbage collection and compaction).
//!
//! A [`WriteFence`] answers with the instant a write's requests must end by (the lease's
//! validity) or refuses the write once another database took the lease over. [`fenced`] runs
//! one write under it, sending it again (same bytes, same object: idempotent) if its requests
//! ran into that instant while the lease could still be renewed. Since a taker waits a whole
//! lease ttl after the holder's last renewal, a writer that was paused (a stopped process, a
//! starved thread) for longer than any garbage-collection minimum age cannot write an object
//! after its successor started: neither recreate a table the successor deleted nor overwrite
//! one under a number the successor handed out. Depends on `lease` alone.

use std::time::Instant;

use super::lease::LeaseGuard;
use crate::error::{ErrorRepr, Result};

/// What a durable write checks before its requests go out.
pub(crate) trait WriteFence: Send + Sync {
    /// What the write holds while its requests run (`None`: no deadline applies), or the
    /// error that refuses it.
    fn check(&self) -> Result<Option<LeaseGuard>>;
}

/// Runs one fenced write: `op` gets the instant its requests must end by (`None` without a
/// deadline). A request that found that instant passed while it waited or retried (a slow
/// store, a renewal due) may or may not have been applied: the fence is checked again, which
/// renews the lease if it can, and the request is sent again. The fence's error once the
/// lease is lost or cannot be renewed.
pub(crate) fn fenced<T>(
    fence: &dyn WriteFence,
    op: impl Fn(Option<Instant>) -> Result<T>,
) -> Result<T> {
    const ATTEMPTS: u32 = 3;
    let mut attempt = 1;
    loop {
        let guard = fence.check()?;
        match op(guard.as_ref().map(|g| g.until)) {
            Err(e) if attempt < ATTEMPTS && matches!(e.repr(), ErrorRepr::LeaseDeadline(_)) => {
                tracing::debug!(error = %e, attempt, "fenced request ran past the lease; renewing and resending");
                attempt += 1;
            }
            r => return r,
        }
    }
}
