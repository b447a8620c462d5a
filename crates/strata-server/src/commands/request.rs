//! A request as the executor runs it: the client's arguments and the command-table entry they
//! name, looked up once when the request is queued. A pipelined GET consults its entry about
//! seven times between arrival and reply (engine or not, inline or not, barrier, lock scope,
//! read-ahead, dispatch); each lookup lowercases and hashes the name, which cost 6% of the
//! server's time under `redis-benchmark -t get -P 16` before the entry was kept.
//!
//! The entry's traits that the executor asks about for every request and that are not plain
//! fields of the entry (`CommandSpec::alone`,
//! `inline_ok`, `writes`, `may_lock`, and whether it is a GET/MGET, a SET or a blind write —
//! tests that compare names and flags as strings) are likewise computed once per command, in a
//! table built on first use.
//!
//! Invariants: `cmd` is `lookup(&args[0])` (`None` for an unknown command, and for an empty
//! request, which the parser never yields) and `traits` that command's row of the traits table
//! (all false for an unknown command), fixed at construction (the command table is static).
//! Depends on the command table only.

use std::ops::Deref;
use std::sync::OnceLock;

use bytes::Bytes;

use super::{all_commands, lookup, CommandSpec, LockScope};

/// What the executor asks of a command, computed once per command from its table entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Traits {
    alone: bool,
    inline_ok: bool,
    writes: bool,
    /// [`CommandSpec::may_write`].
    may_write: bool,
    /// `lock_scope` can name stripes (it writes or reads collection elements).
    locks: bool,
    /// It writes its keys without reading them (MSET, SETEX, PSETEX; SET without options is
    /// decided per request).
    blind: bool,
    /// SET.
    set: bool,
    /// GET or MGET: its keys may be read ahead for the segment (`executor::prefetch_keys`).
    read_ahead: bool,
}

fn traits_of(i: usize) -> Traits {
    static TABLE: OnceLock<Vec<Traits>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        all_commands()
            .map(|c| Traits {
                alone: c.alone(),
                inline_ok: c.inline_ok(),
                writes: c.writes(),
                may_write: c.may_write(),
                locks: c.may_lock(),
                blind: matches!(c.name, "mset" | "setex" | "psetex"),
                set: c.name == "set",
                read_ahead: matches!(c.name, "get" | "mget"),
            })
            .collect()
    });
    table.get(i).copied().unwrap_or_default()
}

/// A parsed request with its command resolved.
#[derive(Debug, Clone)]
pub struct Request {
    args: Vec<Bytes>,
    cmd: Option<(usize, &'static CommandSpec)>,
    traits: Traits,
}

impl Request {
    /// Resolves `args[0]` (an empty request, which the parser never yields, is an unknown
    /// command).
    pub fn new(args: Vec<Bytes>) -> Self {
        let cmd = args.first().and_then(|name| lookup(name));
        let traits = cmd.map_or_else(Traits::default, |(i, _)| traits_of(i));
        Request { args, cmd, traits }
    }

    /// [`Request::new`], reusing `prev`'s resolution when it names its command with the same
    /// bytes (a pipeline of one command resolves it once).
    pub fn new_after(args: Vec<Bytes>, prev: Option<&Request>) -> Self {
        match (prev, args.first()) {
            (Some(p), Some(name)) if p.args.first() == Some(name) => Request {
                args,
                cmd: p.cmd,
                traits: p.traits,
            },
            _ => Request::new(args),
        }
    }

    /// The same request with its arguments copied out of the read buffer they were parsed
    /// from (which they would otherwise keep allocated): for a request that waits (a blocked
    /// command).
    pub fn detached(&self) -> Request {
        Request {
            args: self
                .args
                .iter()
                .map(|a| Bytes::copy_from_slice(a))
                .collect(),
            cmd: self.cmd,
            traits: self.traits,
        }
    }

    /// [`CommandSpec::alone`] (false for an unknown command).
    pub fn alone(&self) -> bool {
        self.traits.alone
    }

    /// [`CommandSpec::inline_ok`] (false for an unknown command).
    pub fn inline_ok(&self) -> bool {
        self.traits.inline_ok
    }

    /// [`CommandSpec::writes`] (false for an unknown command).
    pub fn writes(&self) -> bool {
        self.traits.writes
    }

    /// [`CommandSpec::may_write`] (false for an unknown command).
    pub fn may_write(&self) -> bool {
        self.traits.may_write
    }

    /// Whether it writes its keys without reading them first (SET with no option, MSET,
    /// SETEX, PSETEX), so hinting the engine at them before it runs would be wasted work. Only
    /// hints may depend on this, never locks or read-ahead safety.
    pub fn blind_write(&self) -> bool {
        self.traits.blind || (self.traits.set && self.args.len() == 3)
    }

    /// GET or MGET, whose keys a segment may read ahead (see `executor::prefetch_keys`).
    pub fn reads_ahead(&self) -> bool {
        self.traits.read_ahead
    }

    /// [`CommandSpec::lock_scope`] of the request (none for an unknown command).
    pub fn lock_scope(&self) -> LockScope<'_> {
        match self.cmd {
            Some((_, spec)) if self.traits.locks => spec.lock_scope(&self.args),
            _ => LockScope::None,
        }
    }

    /// The command's table index and entry (`None`: an unknown command).
    pub fn command(&self) -> Option<(usize, &'static CommandSpec)> {
        self.cmd
    }

    /// The command's entry (`None`: an unknown command).
    pub fn spec(&self) -> Option<&'static CommandSpec> {
        self.cmd.map(|(_, c)| c)
    }

    /// Whether running it calls the engine.
    pub fn needs_engine(&self) -> bool {
        self.spec().is_some_and(|c| c.engine)
    }

    /// The arguments, the command name first.
    pub fn args(&self) -> &[Bytes] {
        &self.args
    }
}

#[cfg(test)]
impl Request {
    /// A request of string arguments (tests).
    pub(crate) fn of(v: &[&str]) -> Request {
        Request::new(test_args(v))
    }
}

#[cfg(test)]
fn test_args(v: &[&str]) -> Vec<Bytes> {
    v.iter()
        .map(|a| Bytes::copy_from_slice(a.as_bytes()))
        .collect()
}

impl Deref for Request {
    type Target = [Bytes];

    fn deref(&self) -> &[Bytes] {
        &self.args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: &[&str]) -> Request {
        Request::of(v)
    }

    /// What a lock scope names (`None`: every stripe).
    fn names(s: LockScope<'_>) -> Option<Vec<Vec<u8>>> {
        match s {
            LockScope::None => Some(vec![]),
            LockScope::Keys(k) => Some(k.into_iter().map(|b| b.to_vec()).collect()),
            LockScope::All => None,
        }
    }

    #[test]
    fn resolves_the_name_once_case_insensitively() {
        let r = req(&["gEt", "k"]);
        let (i, spec) = r.command().expect("GET is known");
        assert_eq!(spec.name, "get");
        assert_eq!(lookup(b"GET").map(|(j, _)| j), Some(i));
        assert!(r.needs_engine());
        assert_eq!(&r[1][..], b"k");
        assert_eq!(r.args().len(), 2);
        let ping = req(&["PING"]);
        assert!(!ping.needs_engine());
        let unknown = req(&["NOSUCHCOMMAND", "x"]);
        assert!(unknown.command().is_none());
        assert!(!unknown.needs_engine());
        assert!(matches!(unknown.lock_scope(), LockScope::None));
        assert!(req(&["set", "k", "v"]).blind_write());
        assert!(
            !req(&["SET", "k", "v", "NX"]).blind_write(),
            "reads the key"
        );
        assert!(!req(&["SET", "k", "v", "GET"]).blind_write());
        assert!(req(&["MSET", "a", "1", "b", "2"]).blind_write());
        assert!(req(&["SETEX", "k", "10", "v"]).blind_write());
        assert!(!req(&["MSETNX", "a", "1"]).blind_write());
        assert!(!req(&["INCR", "k"]).blind_write());
        assert!(!req(&["GET", "k"]).blind_write());
        assert!(req(&["PSETEX", "k", "10", "v"]).blind_write());
        for opt in [&["EX", "10"][..], &["KEEPTTL"], &["XX"]] {
            let mut v = vec!["SET", "k", "v"];
            v.extend_from_slice(opt);
            assert!(!req(&v).blind_write(), "{v:?} reads the key");
        }
        assert!(req(&["GET", "k"]).reads_ahead() && req(&["mget", "a", "b"]).reads_ahead());
        assert!(!req(&["GETSET", "k", "v"]).reads_ahead());
        assert!(
            Request::new(Vec::new()).command().is_none(),
            "empty: unknown, no panic"
        );
    }

    /// A request after one that names its command with the same bytes takes its resolution;
    /// any other resolves its own.
    #[test]
    fn new_after_reuses_only_the_same_name() {
        let args = test_args;
        let get = req(&["GET", "a"]);
        let again = Request::new_after(args(&["GET", "b"]), Some(&get));
        assert_eq!(
            again.command().map(|(i, _)| i),
            get.command().map(|(i, _)| i)
        );
        assert_eq!(&again[1][..], b"b");
        let set = Request::new_after(args(&["SET", "k", "v"]), Some(&get));
        assert_eq!(set.spec().map(|c| c.name), Some("set"));
        assert!(set.blind_write() && !set.reads_ahead());
        let lower = Request::new_after(args(&["get", "c"]), Some(&get));
        assert_eq!(lower.spec().map(|c| c.name), Some("get"));
        let unknown = Request::new_after(args(&["NOPE"]), Some(&get));
        assert!(unknown.command().is_none());
        let after_unknown = Request::new_after(args(&["NOPE", "x"]), Some(&unknown));
        assert!(after_unknown.command().is_none());
        assert!(Request::new_after(Vec::new(), Some(&get))
            .command()
            .is_none());
    }

    /// The cached traits are the entry's own, for every command in the table.
    #[test]
    fn traits_match_the_command_table() {
        for (i, c) in all_commands().enumerate() {
            let r = req(&[c.name]);
            assert_eq!(r.command().map(|(j, _)| j), Some(i), "{}", c.name);
            assert_eq!(r.needs_engine(), c.engine, "{}", c.name);
            assert_eq!(r.alone(), c.alone(), "{}", c.name);
            assert_eq!(r.inline_ok(), c.inline_ok(), "{}", c.name);
            assert_eq!(r.writes(), c.writes(), "{}", c.name);
        }
        // The cached `locks` trait never hides a stripe: for every command, with arguments
        // of an arity it accepts, the request names what the entry names.
        for c in all_commands() {
            let n = c.arity.unsigned_abs() as usize;
            let mut v = vec![c.name.to_string()];
            v.extend((1..n.max(4)).map(|i| {
                if i == 1 || i == 2 {
                    "2".to_string()
                } else {
                    format!("k{i}")
                }
            }));
            v.truncate(if c.arity > 0 { n } else { v.len().max(n) });
            let v: Vec<&str> = v.iter().map(String::as_str).collect();
            let r = req(&v);
            assert_eq!(names(r.lock_scope()), names(c.lock_scope(&r)), "{}", c.name);
        }
        let scope = |v: &[&str]| names(req(v).lock_scope());
        assert_eq!(scope(&["GET", "a"]), Some(vec![]));
        assert_eq!(scope(&["SET", "a", "1"]), Some(vec![b"a".to_vec()]));
        assert_eq!(scope(&["HGETALL", "h"]), Some(vec![b"h".to_vec()]));
        assert_eq!(scope(&["FLUSHALL"]), None);
    }
}
