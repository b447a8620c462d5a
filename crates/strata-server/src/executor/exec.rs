//! EXEC in the executor: a transaction runs as one segment (see the parent module) whose lock
//! scope is every key its queued commands name, reads included, plus the watched keys
//! (`multi::isolation_scope`) — or every stripe when a queued script touches a key it did not
//! declare. Holding them, it checks the watches (a write or an expiry since WATCH answers a
//! null array), runs the queue into one pending batch and answers one array; the caller
//! commits the batch as one engine write.
//! Invariant: a watching EXEC never chains on a commit group (its watch check would miss the
//! group's unapplied writes); a transaction that must wait keeps the session's queue and
//! watches for the rerun. Depends on the parent's segment machinery, `multi`, `watch`.

use bytes::Bytes;

use super::{lock_segment, run_commands, Deferred, Prepared};
use crate::commands::Request;
use crate::multi::{self, Multi};
use crate::resp::Reply;
use crate::server::Shared;
use crate::session::Session;
use crate::watch::Watching;

/// EXEC of the session's queued transaction (see `multi`): EXECABORT if queuing refused a
/// command; else, holding the stripes of every key the transaction names and every watched
/// key, a null array if a watched key was written (or expired) since WATCH, or the queued
/// commands run in order into one pending batch — committed by the caller as one engine
/// write — with their replies as one array. The transaction and the watches end with it,
/// unless it must wait (`Deferred`: both are kept for the rerun).
pub(super) fn prepare_exec(
    shared: &Shared,
    session: &mut Session,
    now: u64,
    inline: bool,
) -> Result<Prepared, Deferred> {
    let Some(multi) = session.multi.take() else {
        return Ok(Prepared::answered(
            None,
            Reply::error("ERR EXEC without MULTI"),
        ));
    };
    let watching = session.watching.take();
    match exec_transaction(shared, session, &multi, watching.as_ref(), now, inline) {
        Ok(mut seg) => {
            seg.exec = Some((multi, watching));
            Ok(seg)
        }
        Err(why) => {
            session.multi = Some(multi);
            session.watching = watching;
            Err(why)
        }
    }
}

fn exec_transaction(
    shared: &Shared,
    session: &mut Session,
    multi: &Multi,
    watching: Option<&Watching>,
    now: u64,
    inline: bool,
) -> Result<Prepared, Deferred> {
    if multi.aborted {
        return Ok(Prepared::answered(None, Reply::error(multi::EXECABORT)));
    }
    // Inline, only a queue that could have run inline (point lookups, no fsync to wait for):
    // anything else reruns on the engine pool.
    if inline {
        let fsync = shared.store.sync_policy() == crate::config::SyncPolicy::Always;
        let pool_only =
            |r: &Request| r.needs_engine() && (!r.inline_ok() || (fsync && r.may_write()));
        if multi.queued.iter().any(pool_only) {
            return Err(Deferred::Blocking);
        }
    }
    let watched = watching.map_or(&[][..], Watching::keys);
    let scope = multi::isolation_scope(&multi.queued, watched.iter().map(|(k, _)| k));
    exec_locked(shared, session, multi, watching, now, inline, scope)
}

/// [`exec_transaction`] holding the stripes of `scope` (every stripe for `None`; a queued
/// script that touches an undeclared key reruns the transaction so).
fn exec_locked(
    shared: &Shared,
    session: &mut Session,
    multi: &Multi,
    watching: Option<&Watching>,
    now: u64,
    inline: bool,
    scope: Option<Vec<&Bytes>>,
) -> Result<Prepared, Deferred> {
    let started = std::time::Instant::now();
    let every = scope.is_none();
    let (guard, mut pending) = lock_segment(shared, scope, inline)?;
    pending.every_stripe = every;
    pending.in_exec = true;
    // A chained segment runs before the writes of the group it chains on are applied, and
    // those writes mark their watchers only once applied: the check below could pass on a
    // key a member of that group is about to change. A watching EXEC never chains.
    if watching.is_some() && pending.chain.is_some() {
        return Err(Deferred::Blocking);
    }
    if let Some(w) = watching {
        if w.touched() || watched_key_expired(shared, w, now, inline)? {
            return Ok(Prepared::answered(guard, Reply::NullArray));
        }
    }
    let mut ran = run_commands(
        shared,
        session,
        &multi.queued,
        now,
        usize::MAX,
        &mut pending,
        None,
        guard.as_ref(),
    )?;
    if pending.needs_every_stripe.get() && !every {
        drop(guard);
        if inline {
            return Err(Deferred::Blocking);
        }
        return exec_locked(shared, session, multi, watching, now, inline, None);
    }
    ran.replies = vec![Reply::Array(std::mem::take(&mut ran.replies))];
    ran.first_write = ran.first_write.map(|_| 0);
    ran.ran = 1;
    // EXEC itself is not dispatched: count it here (its queued commands counted themselves).
    if let Some((i, _)) = crate::commands::lookup(b"exec") {
        pending.calls.push(crate::stats::Call {
            command: i as u32,
            usec: u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX),
            outcome: crate::stats::Outcome::Ok,
        });
    }
    Ok(Prepared::new(guard, pending, ran))
}

/// Whether a watched key that was live when it was watched has expired since (redis'
/// `isWatchedKeyExpired`: an expiry is a change the watcher must see, though nothing wrote).
fn watched_key_expired(
    shared: &Shared,
    w: &Watching,
    now: u64,
    inline: bool,
) -> Result<bool, Deferred> {
    let opts = strata::ReadOptions {
        cache_only: inline,
        ..Default::default()
    };
    for (key, since) in w.keys() {
        let raw = crate::keyspace::with_data_key(key, |k| shared.store.get_opt(&opts, k));
        let expire_at = match raw {
            // A record that does not decode: not a state to run the transaction on.
            Ok(Some(raw)) => match crate::value::peek(&raw) {
                Ok((_, at)) => at,
                Err(_) => return Ok(true),
            },
            Ok(None) => None,
            Err(e) if e.kind() == strata::ErrorKind::Incomplete => return Err(Deferred::Blocking),
            // An engine error while checking: the transaction must not run on an unknown
            // state; the watcher retries (a null array is what it handles).
            Err(_) => return Ok(true),
        };
        if expire_at.is_some_and(|at| at > *since && at <= now) {
            return Ok(true);
        }
    }
    Ok(false)
}
