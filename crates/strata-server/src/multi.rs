//! MULTI/EXEC: a connection's queued transaction, what may be queued, and what an EXEC must
//! lock to run isolated.
//!
//! A connection is in one of these modes (its `session::Session`): *normal*; *in MULTI*
//! (`Session::multi` is set: commands are queued, not run, and answered `QUEUED`); later,
//! *subscribed* (Pub/Sub) and *parked* (a blocking command waiting for a key) — the messaging
//! commands extend the same session state. WATCH state (`watch::Watching`) is separate: it
//! lives from WATCH to the end of the next EXEC or DISCARD, in or out of MULTI.
//!
//! Queuing follows redis 7's `processCommand`: in MULTI, every command but EXEC, DISCARD,
//! MULTI, WATCH, QUIT and RESET is queued; one that is unknown, has the wrong arity, is refused
//! for lack of authentication or is not allowed in a transaction is answered with its error
//! and *aborts* the transaction (EXEC then answers EXECABORT and runs nothing).
//!
//! EXEC itself runs in the executor (`executor`) as one segment: it locks the stripes of every
//! key a queued command names — reads included — and of every watched key (or every stripe,
//! when a queued command sees the whole key space: [`isolation_scope`]), checks the watches,
//! runs the queued commands in order through one pending batch (each reads the writes of the
//! ones before it), and commits that batch with one engine write. Holding the stripes of every
//! key it reads makes it isolated: every writer holds the stripe of each key it writes from
//! its read to its commit (`locks`), and single-record readers see either all of a batch or
//! none of it. Depends on `commands` (the table), `resp`; never on the network layer.

use bytes::Bytes;

use crate::commands::{errors, LockScope, Request};
use crate::resp::Reply;

/// The most commands one transaction may queue (a bound on a connection's memory besides the
/// query-buffer limit; redis has none, Kvrocks none either).
pub const MAX_QUEUED: usize = 1 << 20;

/// The reply EXEC gives a transaction aborted while queuing.
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A transaction being queued (between MULTI and EXEC or DISCARD).
#[derive(Default, Debug)]
pub struct Multi {
    pub queued: Vec<Request>,
    /// A command was refused while queuing: EXEC answers [`EXECABORT`].
    pub aborted: bool,
}

/// Commands that run at once in MULTI instead of being queued (redis 7).
pub fn runs_in_multi(req: &Request) -> bool {
    req.spec().is_some_and(|c| {
        matches!(
            c.name,
            "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
        )
    })
}

/// Queues `req` into `multi` (which is not one of [`runs_in_multi`]'s commands) and returns
/// the reply: `QUEUED`, or the error that also aborts the transaction. `authenticated` is
/// false when the connection must still AUTH.
pub fn queue(multi: &mut Multi, req: &Request, authenticated: bool) -> Reply {
    let refused = match req.command() {
        None => Some(errors::unknown_command(req.args())),
        Some((_, spec)) if !spec.arity_accepts(req.args().len()) => {
            Some(errors::wrong_args(spec.name))
        }
        Some((_, spec)) if !authenticated && !spec.no_auth() => Some(errors::err(errors::NOAUTH)),
        // SUBSCRIBE and its kin answer once per channel, which an EXEC's one-reply-per-command
        // array cannot carry (redis lets them in and breaks the reply's framing).
        Some((_, spec))
            if spec.flags.contains(&"no_multi")
                || (spec.group == "pubsub" && spec.name.ends_with("subscribe")) =>
        {
            Some(Reply::error("ERR Command not allowed inside a transaction"))
        }
        Some(_) if multi.queued.len() >= MAX_QUEUED => Some(Reply::error(format!(
            "ERR a transaction may queue at most {MAX_QUEUED} commands"
        ))),
        Some(_) => None,
    };
    match refused {
        Some(e) => {
            multi.aborted = true;
            e
        }
        None => {
            multi.queued.push(req.clone());
            Reply::simple("QUEUED")
        }
    }
}

/// The stripes an EXEC of `queued` holds while it runs: the keys every command names (read or
/// written) and the `watched` keys, or `None` for every stripe — when a command reaches the
/// engine without naming its keys (KEYS, SCAN, DBSIZE, RANDOMKEY, FLUSHDB, FLUSHALL).
pub fn isolation_scope<'a>(
    queued: &'a [Request],
    watched: impl Iterator<Item = &'a Bytes>,
) -> Option<Vec<&'a Bytes>> {
    let mut keys: Vec<&Bytes> = watched.collect();
    for req in queued {
        let Some(spec) = req.spec() else { continue };
        if !spec.engine {
            continue;
        }
        match spec.key_scope(req.args()) {
            LockScope::None => {}
            LockScope::Keys(k) => keys.extend(k),
            LockScope::All => return None,
        }
    }
    Some(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: &[&str]) -> Request {
        Request::new(
            v.iter()
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect(),
        )
    }

    fn names(keys: Option<Vec<&Bytes>>) -> Option<Vec<String>> {
        keys.map(|k| {
            k.iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect()
        })
    }

    /// Redis' order of refusals while queuing, each aborting; anything else queues.
    #[test]
    fn queuing_answers_queued_or_the_error_that_aborts() {
        let cases: &[(&[&str], bool, &str)] = &[
            (&["SET", "a", "1"], true, "QUEUED"),
            (
                &["GET"],
                true,
                "ERR wrong number of arguments for 'get' command",
            ),
            (&["NOSUCH", "x"], true, "ERR unknown command 'NOSUCH'"),
            (&["GET", "a"], false, "NOAUTH"),
            (
                &["SHUTDOWN"],
                true,
                "ERR Command not allowed inside a transaction",
            ),
            (&["PING"], true, "QUEUED"),
        ];
        for (args, auth, want) in cases {
            let mut m = Multi::default();
            let r = queue(&mut m, &req(args), *auth);
            let got = match &r {
                Reply::Simple(s) | Reply::Error(s) => s.to_string(),
                other => format!("{other:?}"),
            };
            assert!(got.starts_with(want), "{args:?}: {got}");
            assert_eq!(m.aborted, *want != "QUEUED", "{args:?}");
            assert_eq!(m.queued.len(), usize::from(*want == "QUEUED"), "{args:?}");
        }
        for run in [
            &["EXEC"][..],
            &["discard"],
            &["MULTI"],
            &["WATCH", "k"],
            &["QUIT"],
        ] {
            assert!(runs_in_multi(&req(run)), "{run:?}");
        }
        assert!(!runs_in_multi(&req(&["UNWATCH"])) && !runs_in_multi(&req(&["SET", "a", "b"])));
    }

    /// Reads lock too; commands that see the whole key space lock everything; commands that
    /// never reach the engine lock nothing.
    #[test]
    fn an_exec_locks_every_key_it_reads_or_writes() {
        let w = Bytes::from_static(b"w");
        let q = vec![
            req(&["GET", "a"]),
            req(&["MSET", "b", "1", "c", "2"]),
            req(&["PING"]),
            req(&["HGETALL", "h"]),
            req(&["ZUNIONSTORE", "d", "2", "z1", "z2"]),
        ];
        assert_eq!(
            names(isolation_scope(&q, [&w].into_iter())),
            Some(
                ["w", "a", "b", "c", "h", "z1", "z2", "d"]
                    .map(String::from)
                    .to_vec()
            )
        );
        for all in [
            &["KEYS", "*"][..],
            &["DBSIZE"],
            &["FLUSHDB"],
            &["SCAN", "0"],
            &["RANDOMKEY"],
        ] {
            let q = vec![req(&["GET", "a"]), req(all)];
            assert_eq!(isolation_scope(&q, std::iter::empty()), None, "{all:?}");
        }
    }
}
