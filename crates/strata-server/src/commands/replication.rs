//! Replication commands: ROLE, REPLICAOF / SLAVEOF, and the `READONLY` answer a replica gives
//! to writes.
//!
//! A Strata replica (`replicaof`, `strata serve --replica-of`) follows the writer's log
//! location, not a connection to it, so `REPLICAOF host port` cannot start replication: it is
//! refused with an error saying how. `REPLICAOF NO ONE` promotes the replica into the writer
//! (`Store::promote`: it takes the log location's lease, so it fails while the old writer
//! still holds it). Invariants: a replica never applies a write (the dispatcher answers every
//! `write` command `READONLY` before it runs, and the store refuses any write that gets past).
//! Depends on `store`, `resp`.

use bytes::Bytes;

use super::{is, CmdResult, Ctx};
use crate::resp::Reply;

/// redis' answer to a write on a read-only replica.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

/// `ROLE`: `[master, offset, []]` for a writer; `[slave, <log location>, 0, state, applied
/// sequence]` for a replica (state `connected` while its refreshes succeed, else `connect`).
pub fn role(ctx: &mut Ctx<'_>, _a: &[Bytes]) -> CmdResult {
    let store = &ctx.shared.store;
    Ok(match store.replica_status() {
        Some((of, st)) => {
            let up = st.last_error.is_none() && st.replica_lag_ms.is_some();
            Reply::Array(vec![
                Reply::bulk_str("slave"),
                Reply::bulk_str(&of),
                Reply::Int(0),
                Reply::bulk_str(if up { "connected" } else { "connect" }),
                Reply::Int(st.applied_sequence as i64),
            ])
        }
        None => Reply::Array(vec![
            Reply::bulk_str("master"),
            Reply::Int(store.latest_sequence() as i64),
            Reply::Array(vec![]),
        ]),
    })
}

/// `REPLICAOF NO ONE` (and `SLAVEOF NO ONE`): promotes a replica; `OK` on a writer too.
/// `REPLICAOF host port` is refused: see the module docs.
pub fn replicaof(ctx: &mut Ctx<'_>, a: &[Bytes]) -> CmdResult {
    if !(is(&a[1], "NO") && is(&a[2], "ONE")) {
        return Err(Reply::error(
            "ERR Strata replicas follow the writer's log location, not a connection: start \
             strata serve with --replica-of <wal-location> --capacity <url> (config \
             replicaof); REPLICAOF NO ONE promotes a replica",
        ));
    }
    match ctx.shared.store.promote() {
        Ok(promoted) => {
            if promoted {
                tracing::warn!(
                    "REPLICAOF NO ONE from client {}: this server is now the writer",
                    ctx.session.client.id
                );
            }
            Ok(Reply::Ok)
        }
        Err(e) => Err(Reply::error(format!("ERR promotion failed: {e}"))),
    }
}
