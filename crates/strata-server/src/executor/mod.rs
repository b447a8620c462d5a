//! Executing a batch of pipelined requests: segments, locks, one engine write per segment (or
//! one shared by several connections' segments, inline).
//!
//! A batch is split into *segments*: maximal runs of ordinary commands, and each *barrier*
//! command (KEYS, SCAN, DBSIZE, INFO, FLUSHDB, FLUSHALL — commands that see the whole key
//! range) and each command that reads collection elements (the hash, list, set and sorted-set
//! families, RENAME, OBJECT; see `CommandSpec::alone`) alone. A segment runs as follows:
//!
//! 1. lock the stripes of every key that a write command of the segment names (per the command
//!    table), all at once in ascending order — or every stripe if a command needs them all;
//!    inline, a stripe held by a member of the forming commit group may be chained on instead
//!    (`locks`);
//! 2. run the commands in order; they read through the segment's pending writes (and, chained,
//!    through those of its group) and add their writes to one `WriteBatch`, which ends up with
//!    each key once (`Pending::take_batch`); with several commands, the keys of its GETs and
//!    MGETs are first read together with one engine `multi_get`, where that cannot answer a
//!    GET from an older state than an earlier command saw (`read_ahead`: `prefetch_keys`, `read_ahead_safe`:
//!    whole commands up to 64 keys; from the first GET or MGET left out, no command answers
//!    from the read-ahead);
//! 3. commit that batch with one engine write (under the sync policy) — inline, through a
//!    commit group (`commit_group`), which writes the batches of every connection's segments
//!    of one scheduler tick as one engine write and then releases their stripes;
//! 4. release the stripes, then encode the replies.
//!
//! Invariants: (a) atomicity — between a write command's read of a key and the commit of its
//! write, the key's stripe is held, so no other client's write to that key interleaves (the
//! `locks` invariant); (b) a segment's writes become visible together, in one engine write;
//! (c) replies are produced only after the commit returned, so an acknowledged write is in the
//! WAL (and fsynced under `sync = always`); if the commit fails, every reply from the first
//! write of the segment on becomes the error (a chained segment, whose earlier replies may
//! have read the failed writes, reruns instead: `commit_group`); (d) commands after QUIT or SHUTDOWN in the same
//! batch are not run; SHUTDOWN itself gets no reply; (e) once the replies of a batch pass
//! [`OUTPUT_SOFT_LIMIT`], the batch stops after the current segment's commands so far (at least
//! one request always runs) and the caller keeps the rest for later, so the output buffer stays
//! bounded even for pipelines of large GETs. Runs inline on the event loop
//! ([`run_batch_inline`]) or on the engine pool ([`run_batch_mode`]); see `connection`. (f) A
//! blocking command that found its keys empty (see `blocking`) ends the batch unanswered: it
//! stays first in the connection's queue and reruns when woken; a segment that wrote keys
//! while clients are blocked signals them after its commit.
//! Depends on `commands`, `commit_group`, `store`, `locks`, `resp`, `session`, `stats`.

use bytes::{Bytes, BytesMut};

use strata::WriteBatch;

use crate::commands::{self, Ctx, LockScope, Pending, Request};
use crate::commit_group::{Outcome, Written};
use crate::locks::MultiGuard;
use crate::multi::{self, Multi};
use crate::resp::{encode, Reply};
use crate::server::Shared;
use crate::session::{Close, Session};
use crate::stats::ServerStats;
use crate::store::StoreResult;
use crate::watch::Watching;

mod exec;
mod read_ahead;

use exec::prepare_exec;
use read_ahead::{prefetch_keys, PREFETCH_MIN};

/// Replies (in bytes, estimated) after which a batch stops early.
pub const OUTPUT_SOFT_LIMIT: usize = 8 << 20;

/// Runs the requests of `batch` in order, appending the replies to `out`, and returns how many
/// requests it consumed: all of them, or fewer if the replies passed [`OUTPUT_SOFT_LIMIT`] or
/// the session is closing (QUIT, SHUTDOWN; then the rest must be dropped).
pub fn run_batch(
    shared: &Shared,
    session: &mut Session,
    batch: &[Request],
    out: &mut BytesMut,
) -> usize {
    let base = out.len();
    run_batch_mode(shared, session, batch, out, base)
}

/// Why an inline segment was discarded (see [`run_batch_mode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferred {
    /// A stripe it needs (this one) is held by another segment, or it chained on the stripe
    /// in a commit group that was written before it could join (`Outcome::Stale`): it can run
    /// inline once the stripe is released or can be chained on (`KeyLocks::wait_unlocked`).
    Busy(usize),
    /// It needs the engine to read from storage, stall the write or take every stripe, or its
    /// commit group could not write it (`commit_group::Outcome::Retry`): only the engine pool
    /// may wait for that.
    Blocking,
}

/// [`run_batch`] with the replies counted from `out_base` in `out` (so a batch resumed after
/// an inline start keeps one output budget), on the engine pool (or, for a batch with no engine
/// command, anywhere): stripes are waited for, engine reads may do I/O, and writes may stall.
/// Returns the requests run.
pub fn run_batch_mode(
    shared: &Shared,
    session: &mut Session,
    batch: &[Request],
    out: &mut BytesMut,
    out_base: usize,
) -> usize {
    let mut at = Progress::new(out, out_base);
    loop {
        at.queue(shared, session, batch, out);
        let Some((end, room)) = at.next_segment(batch, session, out) else {
            break;
        };
        let i = at.done;
        // Not inline, nothing defers: stripes are waited for and reads may do I/O.
        let Ok(mut seg) = prepare_segment(shared, session, &batch[i..end], at.now, room, false)
        else {
            return i;
        };
        let writes = std::mem::take(&mut seg.batch);
        let committed = if writes.is_empty() {
            Ok(())
        } else {
            shared.store.write(writes)
        };
        at.done += finish_segment(shared, session, seg, committed, out, false);
        // A blocking command waits (first of what is left): the batch stops here.
        if session.blocked.is_some() {
            break;
        }
    }
    at.done
}

/// [`run_batch_mode`] inline on the event loop (see `connection`): engine reads are
/// `cache_only`, stripes are only tried, and commits refuse to stall; the segments' writes are
/// committed through the server's commit groups (`commit_group`): one engine write for the
/// segments of every connection that commits in the same scheduler tick. A segment that would
/// have to wait is discarded whole — its writes were never committed and its replies never
/// encoded — and the batch stops before it: returns `(requests run, Some(why))`, and the
/// caller retries the rest later or runs it on the engine pool. A discarded segment's only
/// effects were on its own pending batch (and idempotent session settings such as HELLO or
/// CLIENT SETNAME, which rerun; a QUIT's closing is undone with it).
pub async fn run_batch_inline(
    shared: &Shared,
    session: &mut Session,
    batch: &[Request],
    out: &mut BytesMut,
    out_base: usize,
) -> (usize, Option<Deferred>) {
    let mut at = Progress::new(out, out_base);
    loop {
        at.queue(shared, session, batch, out);
        let Some((end, room)) = at.next_segment(batch, session, out) else {
            break;
        };
        let i = at.done;
        let close = session.close;
        let mut seg = match prepare_segment(shared, session, &batch[i..end], at.now, room, true) {
            Ok(seg) => seg,
            Err(why) => return (i, Some(why)),
        };
        let writes = std::mem::take(&mut seg.batch);
        // A chained segment commits with its group even if it wrote nothing: its replies may
        // rest on the group's writes.
        let chained = seg.guard.as_ref().and_then(MultiGuard::chained_stripe);
        let committed = if writes.is_empty() && chained.is_none() {
            Ok(())
        } else {
            let guard = seg.guard.take();
            let written = std::mem::take(&mut seg.written);
            let (outcome, count) = shared
                .commit_groups
                .commit(&shared.store, writes, written, guard)
                .await;
            ServerStats::add(&shared.stats.inline_group_writes, count.writes);
            ServerStats::add(&shared.stats.inline_group_segments, count.segments);
            match outcome {
                Outcome::Committed => {
                    if chained.is_some() {
                        ServerStats::add(&shared.stats.inline_chained_segments, 1);
                    }
                    Ok(())
                }
                Outcome::Failed(e) => Err(e),
                Outcome::Retry => {
                    session.close = close;
                    seg.give_back(session);
                    return (i, Some(Deferred::Blocking));
                }
                Outcome::Stale => {
                    session.close = close;
                    seg.give_back(session);
                    return (i, Some(chained.map_or(Deferred::Blocking, Deferred::Busy)));
                }
            }
        };
        at.done += finish_segment(shared, session, seg, committed, out, true);
        if session.blocked.is_some() {
            break;
        }
    }
    (at.done, None)
}

/// How far a batch's run got.
struct Progress {
    /// Command time of the whole batch (Unix milliseconds).
    now: u64,
    /// Where the batch's replies start in the output buffer.
    start_len: usize,
    /// Requests consumed.
    done: usize,
}

impl Progress {
    fn new(out: &BytesMut, out_base: usize) -> Self {
        Progress {
            now: crate::expiry::now_ms(),
            start_len: out_base.min(out.len()),
            done: 0,
        }
    }

    /// While the session is in MULTI, queues the requests from `done` on that MULTI does not
    /// run at once (`multi::runs_in_multi`), answering each (`QUEUED` or the error that
    /// aborts the transaction).
    fn queue(
        &mut self,
        shared: &Shared,
        session: &mut Session,
        batch: &[Request],
        out: &mut BytesMut,
    ) {
        while let Some(req) = batch.get(self.done) {
            if session.close != Close::Open || multi::runs_in_multi(req) {
                return;
            }
            let authenticated = session.authenticated || !shared.limits.auth_required();
            let Some(m) = session.multi.as_mut() else {
                return;
            };
            let reply = multi::queue(m, req, authenticated);
            if reply.is_error() {
                ServerStats::add(&shared.stats.error_replies, 1);
            }
            encode(out, &reply, session.protocol);
            self.done += 1;
        }
    }

    /// The next segment — its end in `batch` (a barrier alone, or the run of ordinary commands
    /// up to the next barrier) and the reply bytes it may produce — or `None` once the batch is
    /// done, the session is closing or the replies passed [`OUTPUT_SOFT_LIMIT`].
    fn next_segment(
        &self,
        batch: &[Request],
        session: &Session,
        out: &BytesMut,
    ) -> Option<(usize, usize)> {
        let used = out.len() - self.start_len;
        let i = self.done;
        if i >= batch.len() || session.close != Close::Open || used >= OUTPUT_SOFT_LIMIT {
            return None;
        }
        let end = if batch[i].alone() {
            i + 1
        } else {
            i + batch[i..].iter().take_while(|r| !r.alone()).count()
        };
        Some((end, OUTPUT_SOFT_LIMIT - used))
    }
}

/// A segment whose commands ran, holding its stripes, with its writes not yet committed.
struct Prepared {
    /// The segment's stripes (handed to its commit group, if it commits through one).
    guard: Option<MultiGuard>,
    /// The segment's writes (empty if it wrote nothing).
    batch: WriteBatch,
    /// The same writes by key, for segments chained behind this one in its commit group.
    written: Written,
    replies: Vec<Reply>,
    /// The reply of the segment's first write command (from which a failed commit's error is
    /// the reply).
    first_write: Option<usize>,
    /// Requests consumed (replies plus a request that closed the session without one).
    ran: usize,
    hits: u64,
    misses: u64,
    /// Per-command latencies, recorded only if the segment is not discarded.
    timings: Vec<(&'static str, std::time::Duration)>,
    /// The commands run, for INFO `commandstats` (likewise).
    calls: Vec<crate::stats::Call>,
    /// The function registry after the segment's FUNCTION changes (installed if it commits).
    functions: Option<crate::scripting::functions::Registry>,
    /// An EXEC's transaction and watches, taken from the session: given back if the segment
    /// is discarded after running (its commit retried), dropped with it otherwise.
    exec: Option<(Multi, Option<Watching>)>,
    /// Keys written that blocked clients may wait for (see `blocking`).
    touched: Vec<Bytes>,
    /// Messages published by its commands (delivered once it is finished).
    publishes: Vec<crate::pubsub::Publish>,
    /// The keys of a blocked command served in it (see `Pending::released`).
    released: Vec<Bytes>,
}

/// Steps 1 and 2 of a segment (or its prefix, if its replies outgrow `room`): lock, run. Returns
/// why running inline it would have to wait (nothing committed, nothing encoded, the session's
/// closing state as it was). An EXEC of a queued transaction is a segment of its own
/// ([`prepare_exec`]).
fn prepare_segment(
    shared: &Shared,
    session: &mut Session,
    cmds: &[Request],
    now: u64,
    room: usize,
    inline: bool,
) -> Result<Prepared, Deferred> {
    if shared.busy.is_busy() {
        return busy_segment(shared, session, cmds, now, room, inline);
    }
    if let [req] = cmds {
        if session.multi.is_some() && req.spec().is_some_and(|c| c.name == "exec") {
            return prepare_exec(shared, session, now, inline);
        }
    }
    // 1. The stripes the segment's write commands name.
    let mut keys: Vec<&Bytes> = Vec::new();
    let mut all = false;
    for req in cmds {
        match req.lock_scope() {
            LockScope::None => {}
            LockScope::Keys(k) => keys.extend(k),
            LockScope::All => all = true,
        }
    }
    prepare_locked(
        shared,
        session,
        cmds,
        now,
        room,
        inline,
        (!all).then_some(keys),
    )
}

/// A segment while a script runs past `lua-time-limit` (`scripting::busy`): nothing is locked
/// (a client must not wait on the busy script's stripes, nor fill the engine pool so that
/// FUNCTION KILL cannot run) and every command but the few redis allows then is answered
/// `BUSY` by `commands::dispatch` — for the whole segment, even if the script ends meanwhile
/// (`Pending::refuse_busy`): an EXEC is refused whole, never half run.
fn busy_segment(
    shared: &Shared,
    session: &mut Session,
    cmds: &[Request],
    now: u64,
    room: usize,
    inline: bool,
) -> Result<Prepared, Deferred> {
    let mut pending = Pending::new(inline);
    pending.refuse_busy = true;
    let ran = run_commands(shared, session, cmds, now, room, &mut pending, None, None)?;
    Ok(Prepared::new(None, pending, ran))
}

/// [`prepare_segment`] with its stripes named: `keys`, or every stripe for `None`. A script
/// that calls a command on a key it did not declare (`Pending::needs_every_stripe`) reruns
/// holding every stripe.
fn prepare_locked(
    shared: &Shared,
    session: &mut Session,
    cmds: &[Request],
    now: u64,
    room: usize,
    inline: bool,
    keys: Option<Vec<&Bytes>>,
) -> Result<Prepared, Deferred> {
    let every = keys.is_none();
    let writes = cmds.iter().filter(|r| r.writes()).count();
    let (guard, mut pending) = lock_segment(shared, keys, inline)?;
    pending.every_stripe = every;
    // Sized once for the keys the segment's writes name (mostly one each), not grown.
    pending.overlay.reserve(writes);
    // 2. Run — after reading the keys of the segment's GETs and MGETs together, and hinting
    // the engine at the other commands' keys, when several commands read keys, so their
    // lookups' cache misses overlap (a pipeline of GETs or INCRs).
    // (A pipeline of plain SETs reads nothing: no keys to read or hint.) From `close_reads`
    // on, no command answers from the read-ahead: the GETs there read the engine when they
    // run, and a later GET of a key read ahead must not answer from before their reads.
    let mut close_reads = None;
    if cmds.len() >= PREFETCH_MIN && !cmds.iter().all(Request::blind_write) {
        close_reads = prefetch_keys(shared, cmds, &mut pending);
    }
    let close = session.close;
    let ran = run_commands(
        shared,
        session,
        cmds,
        now,
        room,
        &mut pending,
        close_reads,
        guard.as_ref(),
    )?;
    if pending.needs_every_stripe.get() && !every {
        session.close = close;
        drop(guard);
        if inline {
            return Err(Deferred::Blocking);
        }
        return prepare_locked(shared, session, cmds, now, room, inline, None);
    }
    Ok(Prepared::new(guard, pending, ran))
}

/// Step 1 of a segment: locks the stripes of `keys` (every stripe for `None`) — inline, only
/// tries them, chaining on a stripe held by a member of the forming commit group (`locks`) —
/// and returns the guard with the segment's empty pending writes (chained, if it chains).
fn lock_segment(
    shared: &Shared,
    keys: Option<Vec<&Bytes>>,
    inline: bool,
) -> Result<(Option<MultiGuard>, Pending), Deferred> {
    let locks = shared.store.locks();
    let guard = match keys {
        None if inline => return Err(Deferred::Blocking),
        None => Some(locks.lock_all()),
        Some(keys) if keys.is_empty() => None,
        Some(keys) if inline => {
            // A stripe held by a member of the forming commit group may be chained on.
            let epoch = shared.commit_groups.epoch();
            Some(
                locks
                    .try_lock_keys_or_chain(&keys, epoch)
                    .map_err(Deferred::Busy)?,
            )
        }
        Some(keys) => Some(locks.lock_keys(&keys)),
    };
    let mut pending = Pending::new(inline);
    if let Some(g) = &guard {
        if let (Some(epoch), Some(stripe)) = (g.chained_epoch(), g.chained_stripe()) {
            // Its group already taken: no use running the commands.
            if shared.commit_groups.epoch() != epoch {
                return Err(Deferred::Busy(stripe));
            }
            pending.chain = Some((epoch, g.chained_stripes().to_vec()));
        }
    }
    Ok((guard, pending))
}

/// What running a segment's commands produced.
struct Ran {
    replies: Vec<Reply>,
    first_write: Option<usize>,
    ran: usize,
    timings: Vec<(&'static str, std::time::Duration)>,
}

/// Step 2 of a segment: runs `cmds` in order into `pending` until the replies outgrow `room`
/// or the session closes. Returns why running inline it would have to wait (the session's
/// closing state restored).
#[allow(clippy::too_many_arguments)]
fn run_commands(
    shared: &Shared,
    session: &mut Session,
    cmds: &[Request],
    now: u64,
    room: usize,
    pending: &mut Pending,
    close_reads: Option<usize>,
    guard: Option<&MultiGuard>,
) -> Result<Ran, Deferred> {
    let close = session.close;
    let mut replies: Vec<Reply> = Vec::with_capacity(cmds.len());
    let mut first_write: Option<usize> = None;
    let mut reply_bytes = 0usize;
    let mut ran = 0;
    let mut timings = Vec::new();
    pending.calls.reserve(cmds.len());
    for (i, req) in cmds.iter().enumerate() {
        if close_reads == Some(i) {
            pending.reads.close();
        }
        ran += 1;
        let before = pending.batch.len();
        let reply = {
            let mut ctx = Ctx {
                shared,
                session,
                now,
                pending,
            };
            match &shared.metrics {
                None => commands::dispatch(&mut ctx, req),
                Some(_) => {
                    let start = std::time::Instant::now();
                    let r = commands::dispatch(&mut ctx, req);
                    let name = req.spec().map_or("unknown", |c| c.name);
                    timings.push((name, start.elapsed()));
                    r
                }
            }
        };
        if pending.would_block.get() {
            session.close = close;
            return Err(Deferred::Blocking);
        }
        if pending.stale.get() {
            session.close = close;
            let stripe = guard.and_then(MultiGuard::chained_stripe);
            return Err(stripe.map_or(Deferred::Blocking, Deferred::Busy));
        }
        // A blocking command that found its keys empty: the client waits (see `blocking`),
        // the command stays queued (not run, not counted, its reply discarded) and the batch
        // stops here. One served on a rerun leaves the blocked state.
        let newly_blocked = match pending.block.take() {
            Some(b) => {
                session.blocked = Some(b);
                true
            }
            None => false,
        };
        if std::mem::take(&mut pending.blocks_again) {
            // Woken and waiting again: a group reader hands the wake on (see `blocking`).
            if let Some(b) = session.blocked.as_ref() {
                shared.blocking.pass_on(&b.registration.waiter);
            }
            pending.calls.pop();
            ran -= 1;
            break;
        }
        if newly_blocked {
            pending.calls.pop();
            ran -= 1;
            break;
        }
        // A blocked command rerun after a wake got its answer (an element, or an error).
        if let Some(b) = session.blocked.take() {
            pending
                .released
                .extend(b.registration.waiter.keys().iter().cloned());
        }
        if first_write.is_none() && pending.batch.len() > before {
            first_write = Some(replies.len());
        }
        if session.close == Close::Now {
            break;
        }
        reply_bytes += reply.approx_len();
        replies.push(reply);
        if session.close == Close::AfterReply || reply_bytes >= room {
            break;
        }
    }
    // Clients wait for keys: the ones this segment wrote are signalled once it commits.
    if shared.blocking.active() {
        pending.touched = pending
            .overlay
            .keys()
            .map(|k| Bytes::copy_from_slice(k))
            .collect();
    }
    Ok(Ran {
        replies,
        first_write,
        ran,
        timings,
    })
}

impl Prepared {
    fn new(guard: Option<MultiGuard>, mut pending: Pending, ran: Ran) -> Prepared {
        Prepared {
            guard,
            hits: pending.hits.get(),
            misses: pending.misses.get(),
            batch: {
                // Chained readers see a segment's writes through the maps, which hold no range
                // deletion; a segment with one (a barrier) never runs inline, so none chains
                // on it.
                debug_assert!(!(pending.inline && pending.has_ranges()));
                pending.take_batch()
            },
            written: Written {
                records: pending.overlay,
                elems: pending.elems,
            },
            calls: std::mem::take(&mut pending.calls),
            functions: pending.functions.take(),
            touched: std::mem::take(&mut pending.touched),
            publishes: std::mem::take(&mut pending.publishes),
            released: std::mem::take(&mut pending.released),
            replies: ran.replies,
            first_write: ran.first_write,
            ran: ran.ran,
            timings: ran.timings,
            exec: None,
        }
    }

    /// Gives a discarded EXEC's transaction and watches back to the session, for the rerun.
    fn give_back(&mut self, session: &mut Session) {
        if let Some((multi, watching)) = self.exec.take() {
            session.multi = Some(multi);
            session.watching = watching;
        }
    }

    /// A segment of one request answered `reply` with nothing written.
    fn answered(guard: Option<MultiGuard>, reply: Reply) -> Prepared {
        let ran = Ran {
            replies: vec![reply],
            first_write: None,
            ran: 1,
            timings: Vec::new(),
        };
        Prepared::new(guard, Pending::new(false), ran)
    }
}

/// Steps 3 and 4 once the segment's writes were committed (`committed` is the outcome): release
/// the stripes, count, encode the replies. Returns the requests the segment consumed.
fn finish_segment(
    shared: &Shared,
    session: &Session,
    seg: Prepared,
    committed: StoreResult<()>,
    out: &mut BytesMut,
    inline: bool,
) -> usize {
    let Prepared {
        guard,
        mut replies,
        first_write,
        ran,
        hits,
        misses,
        timings,
        calls,
        functions,
        touched,
        publishes,
        released,
        ..
    } = seg;
    shared.command_stats.record(&calls);
    // The segment's FUNCTION changes take effect once their write is durable, while its
    // stripes (the functions' lock among them) are still held.
    if let (Some(reg), Ok(())) = (functions, &committed) {
        shared.functions.install(reg);
    }
    if committed.is_ok() && !touched.is_empty() {
        shared.blocking.signal(touched.iter().map(|k| &k[..]));
    }
    // A served blocked command's other keys: it may have been woken by a push to one of them
    // and taken from another (or failed, or its write failed), leaving that element for the
    // next waiter there. Keys it wrote were signalled above (once: signalling them again
    // would wake a second waiter to race the first).
    if !released.is_empty() {
        let written = |k: &Bytes| committed.is_ok() && touched.contains(k);
        shared
            .blocking
            .signal(released.iter().filter(|k| !written(k)).map(|k| &k[..]));
    }
    // Messages go out once the segment is final (with its writes, if it has any).
    if committed.is_ok() && !publishes.is_empty() {
        let limit = shared.limits.pubsub_output_limit();
        shared.pubsub.deliver(publishes, limit);
    }
    if let Err(e) = committed {
        tracing::error!("write failed: {e}");
        let r = Reply::from(e);
        for rep in &mut replies[first_write.unwrap_or(0)..] {
            *rep = r.clone();
        }
    }
    drop(guard);
    if inline {
        ServerStats::add(&shared.stats.inline_segments, 1);
    }
    ServerStats::add(&shared.stats.keyspace_hits, hits);
    ServerStats::add(&shared.stats.keyspace_misses, misses);
    if let Some(m) = &shared.metrics {
        for (name, d) in timings {
            m.observe(name, d);
        }
    }

    // 4. Reply.
    for r in &replies {
        if r.is_error() {
            ServerStats::add(&shared.stats.error_replies, 1);
        }
        encode(out, r, session.protocol);
    }
    ran
}
