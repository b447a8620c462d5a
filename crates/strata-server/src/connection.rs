//! One client connection: read → parse → execute a batch → write, until the client leaves,
//! misbehaves, idles out or the server shuts down.
//!
//! Pipelining: every complete request already in the read buffer (up to [`MAX_BATCH`] requests or
//! [`MAX_BATCH_BYTES`] of arguments) is executed as one batch (see `executor`), with one hop to the
//! engine pool for the whole batch (none if no command in it touches the engine), and all replies
//! are written with one `write_all`. Nothing more is read until the replies are written, which
//! bounds the output buffer and pushes back on clients that do not read; if a batch's replies
//! pass the executor's soft limit, the rest of the batch stays queued and runs after they are
//! written.
//!
//! Pub/Sub: a subscribed client's messages wait in its mailbox (`pubsub`) and are written
//! between batches: before each batch's replies (those published before it ran) and whenever
//! the client is waiting for input. Their bytes count against the mailbox until written, so a
//! subscriber that does not read is disconnected at `client-output-buffer-limit pubsub`. A
//! subscribed client is exempt from the idle `timeout`, as in redis.
//!
//! Blocking commands: a client whose command waits for keys (see `blocking`) parks here, with
//! no buffers, no thread and no lock, until a wake (the command reruns), its timeout or CLIENT
//! UNBLOCK (its timeout reply), CLIENT KILL or a disconnect.
//!
//! Memory: a connection allocates its read and reply buffers when bytes arrive and releases both
//! when it has nothing received and nothing owed, so an idle client costs its task, socket and
//! registry entry only (about 2-3 KiB; redis-server's is 8-11 KiB). A large request or reply
//! grows its buffer; reply buffers over [`KEEP_OUT_CAPACITY`] are released right after use.
//!
//! Invariants: replies go out in request order; a reply is sent only after the engine acknowledged
//! the command's write (so an acknowledged write is durable under the sync policy); input held for
//! one client (read buffer + partial request) never exceeds the query-buffer limit; a protocol
//! error is answered with `-ERR Protocol error: ...` and the connection is closed; the client is
//! unregistered when the task ends, however it ends. Depends on `resp`, `executor`, `commands`,
//! `session`, `server` (for `Shared`), `clients`, `stats`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tracing::{debug, warn};

use crate::clients::ClientHandle;
use crate::commands::Request;
use crate::executor::{run_batch, run_batch_inline, run_batch_mode, Deferred};
use crate::resp::{encode, Parser, Reply};
use crate::server::Shared;
use crate::session::{Close, Session};
use crate::stats::ServerStats;

/// Most requests executed as one batch.
pub const MAX_BATCH: usize = 1024;
/// Argument bytes after which a batch is cut (a single larger request is still one batch).
pub const MAX_BATCH_BYTES: usize = 4 << 20;
/// Read buffer of a client that was idle (grown on demand).
const FIRST_READ: usize = 1024;
/// Read buffer growth step.
const READ_CHUNK: usize = 16 * 1024;
/// Times a batch that found a stripe busy (or chained on a group written before it joined)
/// waits for the stripe's release or chain slot and tries inline again before it goes to the
/// engine pool (which then blocks on the stripe).
const INLINE_BUSY_RETRIES: u32 = 64;
/// Output buffers larger than this are released after use instead of kept.
const KEEP_OUT_CAPACITY: usize = 1 << 20;

struct Unregister<'a>(&'a Shared, u64);

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.0.clients.unregister(self.1);
    }
}

/// Serves one client until it disconnects.
pub async fn serve(shared: Arc<Shared>, mut sock: TcpStream, client: Arc<ClientHandle>) {
    let _unregister = Unregister(&shared, client.id);
    let _ = sock.set_nodelay(true);
    let mut session = Session::new(client.clone(), !shared.limits.auth_required());
    let mut parser = Parser::new();
    // Both buffers are allocated on first use (see step 4).
    let mut inbuf = BytesMut::new();
    let mut out = BytesMut::new();
    // Parsed requests not yet executed, and a protocol error found after them.
    let mut queued: Vec<Request> = Vec::new();
    let mut protocol_error = None;
    // Pub/Sub message bytes in `out`, released from the mailbox's count once written.
    let mut owed: u64 = 0;
    // A blocked command was woken: it reruns at step 2.
    let mut rerun_blocked = false;
    // Made once for the connection, not per read: each would register with its notifier (a
    // lock taken and released) whenever it is polled anew. Either ends the connection once it
    // fires, so neither is polled after it completed.
    let killed = client.killed();
    tokio::pin!(killed);
    let shutdown = shared.shutdown.wait();
    tokio::pin!(shutdown);
    loop {
        if client.is_killed() {
            debug!("client {} killed (CLIENT KILL)", client.id);
            let _ = sock.shutdown().await;
            return;
        }
        // 0. Messages published to this client so far go before the next replies.
        if let Some(subs) = &session.pubsub {
            if subs.mailbox.killed() {
                warn!(
                    "client {} closed: its unread Pub/Sub messages passed \
                     client-output-buffer-limit pubsub",
                    client.id
                );
                return;
            }
            let (msgs, bytes) = subs.mailbox.take();
            for m in &msgs {
                encode(&mut out, &m.reply(), session.protocol);
            }
            owed += bytes;
        }

        // 1. Parse what has arrived (after what is left of the previous batch).
        let limits = shared.limits.parse_limits();
        let mut batch_bytes: usize = queued.iter().flat_map(|r| r.args()).map(Bytes::len).sum();
        let mut full = false;
        while protocol_error.is_none() {
            if queued.len() >= MAX_BATCH || batch_bytes >= MAX_BATCH_BYTES {
                full = true;
                break;
            }
            match parser.next(&mut inbuf, &limits) {
                Ok(Some(args)) => {
                    batch_bytes += args.iter().map(Bytes::len).sum::<usize>();
                    let req = Request::new_after(args, queued.last());
                    queued.push(req);
                }
                Ok(None) => break,
                Err(e) => protocol_error = Some(e),
            }
        }

        // 2. Execute (only a prefix if the replies grow large; the rest stays queued). A
        // blocked command (first in the queue) reruns only when woken.
        if !queued.is_empty() && (session.blocked.is_none() || std::mem::take(&mut rerun_blocked)) {
            client.touch();
            let batch = std::mem::take(&mut queued);
            match execute(&shared, session, batch, out).await {
                Ok((s, o, mut rest, ran)) => {
                    ServerStats::add(&shared.stats.commands_processed, ran as u64);
                    session = s;
                    out = o;
                    if session.close == Close::Open {
                        queued = rest.split_off(ran);
                    }
                }
                Err(e) => {
                    warn!("client {}: {e}; closing the connection", client.id);
                    return;
                }
            }
        }
        // A protocol error is answered once every request before it has been answered.
        if queued.is_empty() && session.close == Close::Open {
            if let Some(e) = protocol_error.take() {
                ServerStats::add(&shared.stats.protocol_errors, 1);
                debug!("client {}: {e}", client.id);
                encode(
                    &mut out,
                    &Reply::error(format!("ERR {e}")),
                    session.protocol,
                );
                session.close = Close::AfterReply;
            }
        }

        // 3. Reply.
        if !out.is_empty() {
            // A client that does not read blocks this write; CLIENT KILL, or its mailbox
            // passing the Pub/Sub output limit, still closes it (a shutdown lets it finish:
            // these replies acknowledge writes).
            let mailbox = session.pubsub.as_ref().map(|s| s.mailbox.clone());
            // `biased`: a write that completes at once (the usual case) never polls the other
            // arms, which would register with their notifiers on every batch.
            let wrote = tokio::select! {
                biased;
                r = sock.write_all(&out) => r.is_ok(),
                _ = &mut killed => false,
                _ = async {
                    match &mailbox {
                        Some(m) => {
                            while !m.killed() {
                                m.notified().await;
                            }
                        }
                        None => std::future::pending().await,
                    }
                } => {
                    warn!(
                        "client {} closed: its unread Pub/Sub messages passed \
                         client-output-buffer-limit pubsub",
                        client.id
                    );
                    false
                }
            };
            if !wrote {
                return;
            }
            ServerStats::add(&shared.stats.net_output_bytes, out.len() as u64);
            out.clear();
            if owed > 0 {
                if let Some(subs) = &session.pubsub {
                    subs.mailbox.written(owed);
                }
                owed = 0;
            }
            if out.capacity() > KEEP_OUT_CAPACITY {
                out = BytesMut::with_capacity(READ_CHUNK);
            }
        }
        // Every request executed so far has its reply; on shutdown, stop before the next batch
        // (requests still queued were never acknowledged).
        if session.close != Close::Open || shared.shutdown.is_triggered() {
            let _ = sock.shutdown().await;
            return;
        }
        // A blocked command (first in `queued`) waits here, holding no thread and no lock.
        if session.blocked.is_some() {
            // Like an idle client, a blocked one holds no buffers while it waits (its request,
            // copied out, no longer pins the read buffer).
            if inbuf.is_empty() && !parser.in_request() {
                queued[0] = queued[0].detached();
                inbuf = BytesMut::new();
            }
            out = BytesMut::new();
            let held = (inbuf.len() + parser.pending_bytes()) as u64;
            if held > shared.limits.query_buffer_limit() {
                warn!(
                    "client {} closed: query buffer of {held} bytes (pipelined behind a blocked \
                     command) exceeds client-query-buffer-limit",
                    client.id
                );
                return;
            }
            match wait_blocked(&shared, &sock, &client, &mut session, &mut inbuf).await {
                BlockedWait::Rerun => rerun_blocked = true,
                BlockedWait::Answer(reply) => {
                    encode(&mut out, &reply, session.protocol);
                    queued.remove(0);
                }
                BlockedWait::Other => {}
                BlockedWait::Close => {
                    let _ = sock.shutdown().await;
                    return;
                }
            }
            continue;
        }
        if full || !queued.is_empty() {
            continue;
        }

        // 4. Bound what this client makes us hold, then read more.
        let held = (inbuf.len() + parser.pending_bytes()) as u64;
        client.qbuf.store(inbuf.len() as u64, Relaxed);
        if held > shared.limits.query_buffer_limit() {
            warn!(
                "client {} closed: query buffer of {held} bytes exceeds client-query-buffer-limit",
                client.id
            );
            let mut msg = BytesMut::new();
            encode(
                &mut msg,
                &Reply::error("ERR Protocol error: client query buffer limit exceeded"),
                session.protocol,
            );
            let _ = sock.write_all(&msg).await;
            let _ = sock.shutdown().await;
            return;
        }
        // An idle client holds no buffers: with nothing received and nothing owed, both are
        // released before waiting, and the read buffer is allocated once bytes arrive.
        if inbuf.is_empty() && !parser.in_request() {
            if inbuf.capacity() > 0 {
                inbuf = BytesMut::new();
            }
            if out.capacity() > 0 {
                out = BytesMut::new();
            }
        }
        let want = parser.wanted().map_or(READ_CHUNK, |w| {
            w.saturating_sub(inbuf.len()).max(READ_CHUNK)
        });
        let idle = match session.subscribed() {
            true => None,
            false => shared.limits.idle_timeout(),
        };
        let mailbox = session.pubsub.as_ref().map(|s| s.mailbox.clone());
        let n = tokio::select! {
            _ = &mut killed => continue,
            // A message for a subscriber: back to the top, which writes it.
            _ = async {
                match &mailbox {
                    Some(m) => m.notified().await,
                    None => std::future::pending().await,
                }
            } => continue,
            r = async {
                let read = read_when_ready(&sock, &mut inbuf, want);
                match idle {
                    Some(t) => tokio::time::timeout(t, read).await.ok(),
                    None => Some(read.await),
                }
            } => match r {
                None => {
                    debug!("client {} idle for too long; closing", client.id);
                    return;
                }
                Some(Ok(0)) | Some(Err(_)) => return,
                Some(Ok(n)) => n,
            },
            _ = &mut shutdown => {
                let _ = sock.shutdown().await;
                return;
            }
        };
        ServerStats::add(&shared.stats.net_input_bytes, n as u64);
    }
}

/// How a blocked command's wait ended (see [`wait_blocked`]).
enum BlockedWait {
    /// Woken by a write to one of its keys: the command reruns.
    Rerun,
    /// Its timeout passed, or CLIENT UNBLOCK: its final reply (the session is no longer
    /// blocked).
    Answer(Reply),
    /// More input, a Pub/Sub message or CLIENT KILL: the caller's loop reads, writes the
    /// message or closes, and the command waits on without rerunning (a rerun could take an
    /// element meant for a client woken before it).
    Other,
    /// The client left or the server is shutting down.
    Close,
}

/// Waits for what ends or advances a blocked command's wait (see `blocking`).
async fn wait_blocked(
    shared: &Shared,
    sock: &TcpStream,
    client: &ClientHandle,
    session: &mut Session,
    inbuf: &mut BytesMut,
) -> BlockedWait {
    let Some(b) = session.blocked.as_ref() else {
        return BlockedWait::Other;
    };
    let waiter = b.registration.waiter.clone();
    let deadline = b.deadline;
    let mailbox = session.pubsub.as_ref().map(|s| s.mailbox.clone());
    let timed_out = tokio::select! {
        _ = waiter.notified() => false,
        _ = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        } => true,
        _ = client.killed() => return BlockedWait::Other,
        _ = async {
            match &mailbox {
                Some(m) => m.notified().await,
                None => std::future::pending().await,
            }
        } => return BlockedWait::Other,
        _ = shared.shutdown.wait() => return BlockedWait::Close,
        r = read_when_ready(sock, inbuf, READ_CHUNK) => match r {
            Ok(0) | Err(_) => return BlockedWait::Close,
            Ok(n) => {
                // Requests pipelined behind the blocked one: parsed and queued behind it.
                ServerStats::add(&shared.stats.net_input_bytes, n as u64);
                return BlockedWait::Other;
            }
        },
    };
    let end = if timed_out {
        b.timed_out.clone()
    } else {
        match waiter.unblocked() {
            Some(crate::blocking::Unblock::Timeout) => b.timed_out.clone(),
            Some(crate::blocking::Unblock::Error) => {
                Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
            }
            None => {
                waiter.take_wake();
                return BlockedWait::Rerun;
            }
        }
    };
    session.blocked = None;
    BlockedWait::Answer(end)
}

/// Waits until the socket is readable, then reads into `inbuf`, first giving it room for at
/// least `want` more bytes if it has less than [`READ_CHUNK`] free. Allocating only after the
/// wait is what keeps idle connections free of buffers.
async fn read_when_ready(
    sock: &TcpStream,
    inbuf: &mut BytesMut,
    want: usize,
) -> std::io::Result<usize> {
    loop {
        sock.readable().await?;
        if inbuf.capacity() == 0 {
            // Most requests are small: start small, grow by `READ_CHUNK` when a read fills it.
            inbuf.reserve(if want > READ_CHUNK { want } else { FIRST_READ });
        } else if inbuf.capacity() - inbuf.len() < READ_CHUNK {
            inbuf.reserve(want);
        }
        match sock.try_read_buf(inbuf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// Runs a batch (or a prefix of it) and returns it back with the number of requests that ran.
///
/// Where it runs: inline on this task if no command needs the engine; inline too if every
/// engine command is one of the point-lookup kinds (`CommandSpec::inline_ok`) and no write
/// would wait for an fsync (`sync = always`) — engine reads then answer from memory or report
/// that they need I/O, and the commit refuses to stall (see `executor::run_batch_inline`), so
/// the event loop does not wait for storage; the writes of segments that commit in the same
/// scheduler tick, from any connection, go in one engine write (`commit_group`). Whatever could
/// not finish inline, and every other batch, runs as one task on the engine pool. A batch that
/// found a key's stripe held by another segment first awaits its release and tries inline
/// again. A hop to the pool costs two thread wake-ups per batch, most of the time of an
/// unpipelined GET or SET served from memory.
async fn execute(
    shared: &Arc<Shared>,
    mut session: Session,
    batch: Vec<Request>,
    mut out: BytesMut,
) -> Result<(Session, BytesMut, Vec<Request>, usize), crate::pool::PoolError> {
    let mut done = 0;
    if !batch.iter().any(Request::needs_engine) {
        let ran = run_batch(shared, &mut session, &batch, &mut out);
        return Ok((session, out, batch, ran));
    }
    // One output budget for the whole batch, however many tries it takes.
    let base = out.len();
    if inline_ok(shared, &batch) {
        let mut busy = 0;
        loop {
            let (ran, deferred) =
                run_batch_inline(shared, &mut session, &batch[done..], &mut out, base).await;
            done += ran;
            match deferred {
                None => return Ok((session, out, batch, done)),
                // Another segment holds a stripe: one on another worker (microseconds) or on
                // the pool (longer if it waits for I/O). Waiting for its release without
                // blocking the worker and then trying inline again is far cheaper than the
                // pool's two thread wake-ups; and once many clients of one hot key went to the
                // pool, pool threads held its stripe almost all the time, so later batches
                // found it busy too and followed them there.
                Some(Deferred::Busy(stripe)) if busy < INLINE_BUSY_RETRIES => {
                    busy += 1;
                    ServerStats::add(&shared.stats.inline_busy_waits, 1);
                    let epoch = shared.commit_groups.epoch();
                    shared.store.locks().wait_unlocked(stripe, epoch).await;
                }
                Some(_) => break,
            }
        }
        ServerStats::add(&shared.stats.inline_fallbacks, 1);
    }
    let sh = shared.clone();
    shared
        .pool
        .run(move || {
            let ran = run_batch_mode(&sh, &mut session, &batch[done..], &mut out, base);
            (session, out, batch, done + ran)
        })
        .await
}

/// Whether `batch` may start inline (see [`execute`]).
fn inline_ok(shared: &Shared, batch: &[Request]) -> bool {
    let fsync = shared.store.sync_policy() == crate::config::SyncPolicy::Always;
    batch
        .iter()
        .all(|r| !r.needs_engine() || (r.inline_ok() && !(fsync && r.may_write())))
}
